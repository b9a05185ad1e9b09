//===- Checkpoint.cpp - write a training checkpoint as safetensors --------===//
#include "ls2c/Trainer/Checkpoint.h"

#include "ls2c/Support/Safetensors.h"
#include "ls2c/Trainer/Trainer.h"

#include <cstdio>

namespace ls2c {

namespace {

/// The loss scale as the hexadecimal float, which round-trips.
std::string hexFloat(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

} // namespace

void writeCheckpoint(const std::string &path, const ModelDescription &desc,
                     const WorkspaceLayout &ws, const double *master, const double *expAvg,
                     const double *expAvgSq, const CheckpointCounters &counters,
                     const CheckpointRunKey &key) {
  SafetensorsFile file;
  for (const WorkspaceSlot &slot : ws.slots)
    file.tensors[slot.spec->name] = floatTensor("F32", slot.spec->shape, master + slot.offset,
                                                static_cast<size_t>(slot.numel));
  const size_t total = static_cast<size_t>(ws.totalElements);
  file.tensors["ls2c.optimizer.exp_avg"] = floatTensor("F32", {ws.totalElements}, expAvg, total);
  file.tensors["ls2c.optimizer.exp_avg_sq"] =
      floatTensor("F32", {ws.totalElements}, expAvgSq, total);
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
  try {
    writeSafetensors(path, file);
  } catch (const SafetensorsError &e) {
    throw TrainError(e.what());
  }
}

} // namespace ls2c
