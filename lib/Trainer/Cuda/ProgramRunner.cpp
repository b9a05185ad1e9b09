//===- ProgramRunner.cpp - a training program's functions called by name --===//
#include "ProgramRunner.h"

#include "ls2c/Training/Workspace.h"

#include <cuda_runtime.h>

#include <cstring>

namespace ls2c::gputrain {

using namespace ls2c::runtime;
using ls2c::runtime::DeviceTensor;

std::map<std::string, DeviceTensor> &
ProgramRunner::call(const std::string &name, std::map<std::string, DeviceTensor> &state,
                    std::map<std::string, DeviceTensor> &inputs) {
  const Function &f = executor.function(name);
  Executor::Call c = runtime::bindArguments(f, state, inputs);
  std::map<std::string, DeviceTensor> &out = outputs[name];
  runtime::bindResults(f, c, state, spare, out);
  executor.run(f.name, c);
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
    throw RuntimeError("@" + f.name + ": " + cudaGetErrorString(e));
  runtime::adoptResults(f, state, spare);
  return out;
}

void uploadBuffers(const Function &f, std::map<std::string, DeviceTensor> &inputs) {
  for (const TensorSpec &spec : f.arguments) {
    if (spec.kind != ArgumentKind::Buffer || inputs.count(spec.name))
      continue;
    if (spec.maxShape.size() != 2)
      throw RuntimeError("buffer '" + spec.name + "' is not a 2-d table");
    std::vector<double> table = sinusoidalTable(spec.maxShape[0], spec.maxShape[1]);
    for (double &x : table)
      x = static_cast<float>(x);
    inputs[spec.name] = runtime::uploadTensor(table, spec.maxShape, spec.dtype, 0, spec.name);
  }
}

std::string uploadWeights(const Function &forward, const WorkspaceLayout &ws,
                          const std::vector<float> &master,
                          std::map<std::string, DeviceTensor> &inputs) {
  for (const TensorSpec &spec : forward.arguments) {
    if (spec.kind != ArgumentKind::Parameter)
      continue;
    const WorkspaceSlot *slot = ws.find(spec.name);
    if (!slot || slot->spec->shape != spec.maxShape)
      return spec.name;
    std::vector<uint8_t> bytes = runtime::encodeFloats(
        master.data() + slot->offset, static_cast<size_t>(slot->numel), spec.dtype);
    DeviceTensor &t = inputs[spec.name];
    if (t.buffer.size() < bytes.size())
      t.buffer = DeviceBuffer(bytes.size(), spec.name);
    t.buffer.upload(bytes.data(), bytes.size());
    t.shape = spec.maxShape;
    t.dtype = spec.dtype;
  }
  return "";
}

void scoreLogits(const DeviceTensor &logits, const std::vector<int64_t> &labels, int64_t ignored,
                 PredictionScore &out) {
  if (logits.shape.size() != 2 || logits.shape[0] != static_cast<int64_t>(labels.size()))
    throw RuntimeError("@forward's logits are not one row per label");
  const int64_t classes = logits.shape[1];
  const size_t rowBytes = static_cast<size_t>(classes) * dtypeBytes(logits.dtype);
  std::vector<uint8_t> all(rowBytes * labels.size());
  logits.buffer.download(all.data(), all.size());
  std::vector<uint8_t> row(rowBytes);
  for (size_t r = 0; r < labels.size(); ++r) {
    if (labels[r] == ignored)
      continue;
    if (labels[r] < 0 || labels[r] >= classes)
      throw RuntimeError("label " + std::to_string(labels[r]) + " is not one of the " +
                         std::to_string(classes) + " classes of the logits");
    std::memcpy(row.data(), all.data() + r * rowBytes, rowBytes);
    std::vector<double> values = runtime::decodeValues(row, logits.dtype);
    out.add(values.data(), classes, labels[r]);
  }
}

} // namespace ls2c::gputrain
