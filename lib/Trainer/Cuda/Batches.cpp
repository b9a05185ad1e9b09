//===- Batches.cpp - encode and upload TrainingData's batches -------------===//
#include "Batches.h"

namespace ls2c::gputrain {

using runtime::DType;
using runtime::TensorSpec;

namespace {

const TensorSpec *findArgument(const runtime::Function &f, const std::string &name) {
  for (const TensorSpec &s : f.arguments)
    if (s.name == name)
      return &s;
  return nullptr;
}

bool isFloatType(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16; }

} // namespace

EncodedBatch encodeBatch(const InputBatch &batch, const runtime::Function &f,
                         int64_t ignoredLabel) {
  EncodedBatch out;
  out.tokens = batch.tokens;
  out.droppedLabels = batch.droppedLabels;
  for (const auto &[name, t] : batch.inputs) {
    const TensorSpec *spec = findArgument(f, name);
    if (!spec)
      throw runtime::RuntimeError("@" + f.name + " takes no input '" + name + "'");
    bool floats = reference::isFloat(t.type);
    if (floats != isFloatType(spec->dtype))
      throw runtime::RuntimeError("@" + f.name + " takes '" + name + "' as " +
                                  (floats ? "integers" : "floats") + ", the data hold " +
                                  t.describe());
    EncodedInput &e = out.inputs[name];
    e.shape = t.shape;
    e.dtype = spec->dtype;
    e.bytes = runtime::encodeValues(
        floats ? t.floats : std::vector<double>(t.ints.begin(), t.ints.end()), spec->dtype);
  }
  if (auto it = batch.inputs.find("labels"); it != batch.inputs.end()) {
    out.labels = it->second.ints;
    for (int64_t label : out.labels)
      out.scored += label != ignoredLabel;
  }
  return out;
}

void uploadBatch(const EncodedBatch &batch, const runtime::Function &f,
                 std::map<std::string, runtime::DeviceTensor> &inputs) {
  for (const auto &[name, e] : batch.inputs) {
    const TensorSpec *spec = findArgument(f, name);
    if (!spec)
      throw runtime::RuntimeError("@" + f.name + " takes no input '" + name + "'");
    runtime::DeviceTensor &t = inputs[name];
    size_t capacity = std::max(runtime::specBytes(*spec), e.bytes.size());
    if (t.buffer.size() < capacity)
      t.buffer = runtime::DeviceBuffer(capacity, name);
    t.dtype = e.dtype;
    t.shape = e.shape;
    if (!e.bytes.empty())
      t.buffer.upload(e.bytes.data(), e.bytes.size());
  }
}

} // namespace ls2c::gputrain
