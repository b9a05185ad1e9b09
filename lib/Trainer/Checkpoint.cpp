//===- Checkpoint.cpp - write a training checkpoint as safetensors --------===//
#include "ls2c/Trainer/Checkpoint.h"

#include "ls2c/Support/Safetensors.h"
#include "ls2c/Trainer/Trainer.h"

#include <cstdio>
#include <cstring>
#include <vector>

namespace ls2c {

namespace {

/// The loss scale as the hexadecimal float, which round-trips.
std::string hexFloat(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

/// An F32 tensor of `count` values: doubles rounded to nearest, floats as
/// they are.
SafetensorsTensor f32Tensor(std::vector<int64_t> shape, const double *values, size_t count) {
  return floatTensor("F32", std::move(shape), values, count);
}
SafetensorsTensor f32Tensor(std::vector<int64_t> shape, const float *values, size_t count) {
  SafetensorsTensor t;
  t.dtype = "F32";
  t.shape = std::move(shape);
  t.data.resize(count * sizeof(float));
  if (count)
    std::memcpy(t.data.data(), values, count * sizeof(float));
  return t;
}

template <typename T>
void writeCheckpointOf(const std::string &path, const ModelDescription &desc,
                       const WorkspaceLayout &ws, const T *master, const T *expAvg,
                       const T *expAvgSq, const CheckpointCounters &counters,
                       const CheckpointRunKey &key) {
  SafetensorsFile file;
  for (const WorkspaceSlot &slot : ws.slots)
    file.tensors[slot.spec->name] =
        f32Tensor(slot.spec->shape, master + slot.offset, static_cast<size_t>(slot.numel));
  const size_t total = static_cast<size_t>(ws.totalElements);
  file.tensors["ls2c.optimizer.exp_avg"] = f32Tensor({ws.totalElements}, expAvg, total);
  file.tensors["ls2c.optimizer.exp_avg_sq"] = f32Tensor({ws.totalElements}, expAvgSq, total);
  file.metadata = {{"format", "pt"},
                   {"ls2c.model", desc.name},
                   {"ls2c.step", std::to_string(counters.step)},
                   {"ls2c.applied_steps", std::to_string(counters.appliedSteps)},
                   {"ls2c.loss_scale", hexFloat(counters.lossScale)},
                   {"ls2c.good_steps", std::to_string(counters.goodSteps)},
                   {"ls2c.seed", std::to_string(key.seed)},
                   {"ls2c.batch_sequences", std::to_string(key.batchSequences)},
                   {"ls2c.micro_batches", std::to_string(key.microBatches)},
                   {"ls2c.data", key.data}};
  if (!key.vocabulary.empty())
    file.metadata["ls2c.vocabulary"] = key.vocabulary;
  // The whole description, so that --resume names each field that changed.
  file.metadata["ls2c.description"] = toJson(desc).dump();
  try {
    writeSafetensors(path, file);
  } catch (const SafetensorsError &e) {
    throw TrainError(e.what());
  }
}

} // namespace

void writeCheckpoint(const std::string &path, const ModelDescription &desc,
                     const WorkspaceLayout &ws, const double *master, const double *expAvg,
                     const double *expAvgSq, const CheckpointCounters &counters,
                     const CheckpointRunKey &key) {
  writeCheckpointOf(path, desc, ws, master, expAvg, expAvgSq, counters, key);
}

void writeCheckpoint(const std::string &path, const ModelDescription &desc,
                     const WorkspaceLayout &ws, const float *master, const float *expAvg,
                     const float *expAvgSq, const CheckpointCounters &counters,
                     const CheckpointRunKey &key) {
  writeCheckpointOf(path, desc, ws, master, expAvg, expAvgSq, counters, key);
}

} // namespace ls2c
