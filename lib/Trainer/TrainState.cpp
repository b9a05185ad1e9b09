//===- TrainState.cpp - training state and its checkpoints ----------------===//
#include "ls2c/Trainer/TrainState.h"

#include "ls2c/Data/Vocabulary.h"
#include "ls2c/Support/Safetensors.h"
#include "ls2c/Trainer/Trainer.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>

namespace ls2c {

using reference::ElementType;
using reference::HostTensor;

TrainState TrainState::fresh(const ModelDescription &desc,
                             const WorkspaceLayout &ws, uint64_t seed) {
  TrainState s;
  std::vector<float> init = initializeWorkspace(ws, seed);
  s.master = HostTensor::fromFloats(ElementType::F32, {ws.totalElements},
                                    std::vector<double>(init.begin(), init.end()));
  s.expAvg = HostTensor::zeros(ElementType::F32, {ws.totalElements});
  s.expAvgSq = HostTensor::zeros(ElementType::F32, {ws.totalElements});
  s.lossScale = HostTensor::scalarFloat(ElementType::F32,
                                        desc.dtype == DType::F16 ? 65536.0 : 1.0);
  s.goodSteps = HostTensor::scalarInt(ElementType::I64, 0);
  return s;
}

HostTensor TrainState::stepTensor() const {
  return HostTensor::scalarInt(ElementType::I64, appliedSteps);
}

std::map<std::string, HostTensor>
TrainState::computeParameters(const ModelDescription &desc,
                              const WorkspaceLayout &ws, ElementType type,
                              reference::Precision precision) const {
  std::map<std::string, HostTensor> out;
  for (const WorkspaceSlot &slot : ws.slots)
    out[slot.spec->name] = HostTensor::fromFloats(
        type, slot.spec->shape,
        std::vector<double>(master.floats.begin() + slot.offset,
                            master.floats.begin() + slot.offset + slot.numel));
  for (const ParameterSpec &p : buildParameterLayout(desc).parameters)
    if (!p.trainable) {
      std::vector<double> table = sinusoidalTable(p.shape[0], p.shape[1]);
      if (precision == reference::Precision::F32)
        for (double &v : table)
          v = static_cast<float>(v);
      out[p.name] = HostTensor::fromFloats(type, p.shape, std::move(table));
    }
  return out;
}

void TrainState::save(const std::string &path, const ModelDescription &desc,
                      const WorkspaceLayout &ws, const RunKey &key) const {
  writeCheckpoint(path, desc, ws, master.floats.data(), expAvg.floats.data(),
                  expAvgSq.floats.data(),
                  {step, appliedSteps, goodSteps.ints[0], lossScale.floats[0]}, key);
}

namespace {

/// The fields of two descriptions' JSON that differ, as "a.b.c" paths with
/// both values, in document order.
void differences(const nlohmann::json &was, const nlohmann::json &now, const std::string &at,
                 std::vector<std::string> &out) {
  if (was.is_object() && now.is_object()) {
    for (auto it = was.begin(); it != was.end(); ++it) {
      std::string path = at.empty() ? it.key() : at + "." + it.key();
      if (!now.contains(it.key()))
        out.push_back(path + " " + it.value().dump() + " (now absent)");
      else
        differences(it.value(), now[it.key()], path, out);
    }
    for (auto it = now.begin(); it != now.end(); ++it)
      if (!was.contains(it.key()))
        out.push_back((at.empty() ? it.key() : at + "." + it.key()) + " absent (now " +
                      it.value().dump() + ")");
    return;
  }
  if (was != now)
    out.push_back(at + " " + was.dump() + " (now " + now.dump() + ")");
}

} // namespace

void TrainState::compareDescriptions(const std::string &path, const std::string &written,
                                     const ModelDescription &desc) {
  nlohmann::json was;
  try {
    was = nlohmann::json::parse(written);
  } catch (const nlohmann::json::exception &) {
    throw TrainError(path + ": its ls2c.description is not JSON");
  }
  std::vector<std::string> all, model, noted;
  differences(was, toJson(desc), "", all);
  // Activation checkpointing changes what the step stores, not what it
  // computes: a run out of memory resumes with it (as PyTorch's would).
  auto memoryOnly = [](const std::string &d) {
    return d.rfind("activation_checkpointing ", 0) == 0 ||
           d.rfind("recompute_attention ", 0) == 0;
  };
  for (std::string &d : all)
    (d.rfind("optimizer.", 0) == 0 || memoryOnly(d) ? noted : model).push_back(std::move(d));
  // The model (sizes, dtype, dropout, ...) must be the one trained; the
  // optimizer's settings may change, as fairseq's and Megatron's resumes
  // allow, and are said.
  if (!model.empty())
    throw TrainError(path + ": written with " + model.front() +
                     (model.size() > 1 ? " and " + std::to_string(model.size() - 1) +
                                             " more field(s) changed"
                                       : std::string()) +
                     ": --resume continues the model it wrote, from the description it "
                     "trained");
  for (const std::string &d : noted)
    std::fprintf(stderr, "ls2c: note: resuming with a changed %s\n", d.c_str());
}

TrainState TrainState::load(const std::string &path, const ModelDescription &desc,
                            const WorkspaceLayout &ws, const RunKey &key) {
  uint64_t seed = key.seed;
  SafetensorsFile file;
  try {
    file = readSafetensors(path);
  } catch (const SafetensorsError &e) {
    throw TrainError(std::string("cannot resume: ") + e.what());
  }
  auto meta = [&](const char *key) -> const std::string & {
    auto it = file.metadata.find(key);
    if (it == file.metadata.end())
      throw TrainError(path + ": not an ls2c checkpoint (no " + key + ")");
    return it->second;
  };
  auto same = [&](const char *field, const std::string &now, const char *what) {
    if (meta(field) != now)
      throw TrainError(path + ": written with " + what + " " + meta(field) +
                       ", resumed with " + now +
                       " (the run would not continue as it started)");
  };
  same("ls2c.model", desc.name, "model");
  if (auto written = file.metadata.find("ls2c.description"); written != file.metadata.end())
    compareDescriptions(path, written->second, desc);
  same("ls2c.seed", std::to_string(seed), "seed");
  same("ls2c.batch_sequences", std::to_string(key.batchSequences),
       "--batch-sequences");
  same("ls2c.micro_batches", std::to_string(key.microBatches),
       "--micro-batches");
  // The vocabulary before the data: another tokenizer changes both, and
  // names the cause.
  if (file.metadata.count("ls2c.vocabulary") && !key.vocabulary.empty())
    same("ls2c.vocabulary", key.vocabulary, "vocabulary");
  if (file.metadata.count("ls2c.data"))
    same("ls2c.data", key.data, "training data");
  TrainState s = fresh(desc, ws, seed);
  auto tensor = [&](const std::string &name,
                    const std::vector<int64_t> &shape) -> const SafetensorsTensor & {
    auto it = file.tensors.find(name);
    if (it == file.tensors.end())
      throw TrainError(path + ": missing tensor '" + name + "'");
    if (it->second.dtype != "F32" || it->second.shape != shape)
      throw TrainError(path + ": tensor '" + name +
                       "' has another dtype or shape than the model's");
    return it->second;
  };
  auto copyInto = [&](const std::string &name, const std::vector<int64_t> &shape,
                      double *out) {
    std::vector<double> v = floatValues(tensor(name, shape), path + ": " + name);
    std::copy(v.begin(), v.end(), out);
  };
  for (const WorkspaceSlot &slot : ws.slots)
    copyInto(slot.spec->name, slot.spec->shape,
             s.master.floats.data() + slot.offset);
  copyInto("ls2c.optimizer.exp_avg", {ws.totalElements}, s.expAvg.floats.data());
  copyInto("ls2c.optimizer.exp_avg_sq", {ws.totalElements},
           s.expAvgSq.floats.data());
  auto count = [&](const char *field) {
    const std::string &text = meta(field);
    char *end = nullptr;
    errno = 0;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end || errno || v < 0)
      throw TrainError(path + ": malformed counter " + field + " = '" + text +
                       "' (must be a non-negative integer)");
    return static_cast<int64_t>(v);
  };
  s.step = count("ls2c.step");
  s.appliedSteps = count("ls2c.applied_steps");
  s.goodSteps.ints[0] = count("ls2c.good_steps");
  if (s.appliedSteps > s.step)
    throw TrainError(path + ": applied steps exceed steps in the metadata");
  const std::string &scale = meta("ls2c.loss_scale");
  char *end = nullptr;
  s.lossScale.floats[0] = std::strtod(scale.c_str(), &end);
  if (scale.empty() || *end || !std::isfinite(s.lossScale.floats[0]) ||
      !(s.lossScale.floats[0] > 0))
    throw TrainError(path + ": malformed ls2c.loss_scale '" + scale +
                     "' (must be a positive finite number)");
  for (const HostTensor *t : {&s.master, &s.expAvg, &s.expAvgSq})
    for (double x : t->floats)
      if (!std::isfinite(x))
        throw TrainError(path + ": holds non-finite parameters or optimizer "
                         "state (a corrupted checkpoint)");
  // Adam's second moment is a running mean of squares: a negative one would
  // make sqrt(v) NaN in the first step.
  for (size_t i = 0; i < s.expAvgSq.floats.size(); ++i)
    if (s.expAvgSq.floats[i] < 0)
      throw TrainError(path + ": tensor 'ls2c.optimizer.exp_avg_sq' element " +
                       std::to_string(i) +
                       " is negative (a second moment is >= 0: a corrupted checkpoint)");
  // Every tensor was read: the workspace's parameters and the two moments.
  if (file.tensors.size() != ws.slots.size() + 2)
    for (const auto &entry : file.tensors)
      if (entry.first != "ls2c.optimizer.exp_avg" &&
          entry.first != "ls2c.optimizer.exp_avg_sq" && !ws.find(entry.first))
        throw TrainError(path + ": tensor '" + entry.first +
                         "' is not a parameter of " + desc.name +
                         " nor optimizer state (a checkpoint of another model?)");
  return s;
}

} // namespace ls2c
