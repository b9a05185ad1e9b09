//===- ReferenceStep.cpp - train steps on given weights and one batch -----===//
#include "ls2c/Trainer/ReferenceStep.h"

#include "Programs.h"
#include "TrainState.h"

#include "ls2c/Model/ParameterLayout.h"
#include "ls2c/Reference/Interpreter.h"
#include "ls2c/Support/Safetensors.h"
#include "ls2c/Trainer/Trainer.h"
#include "ls2c/Training/Workspace.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cmath>
#include <set>

namespace ls2c {

namespace {

using reference::ElementType;
using reference::HostTensor;

SafetensorsFile read(const std::string &path, const char *role) {
  try {
    return readSafetensors(path);
  } catch (const SafetensorsError &e) {
    throw TrainError(std::string("cannot read the ") + role + ": " + e.what());
  }
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Copies every trainable parameter from `path` into the master workspace.
/// In fp32 mode the values are rounded to fp32, as the master workspace is.
void loadParameters(const std::string &path, const WorkspaceLayout &ws,
                    bool roundToF32, HostTensor &master) {
  SafetensorsFile file = read(path, "parameters");
  for (const auto &[name, tensor] : file.tensors)
    if (!ws.find(name))
      throw TrainError(path + ": tensor '" + name +
                       "' is not a trainable parameter of the model");
  for (const WorkspaceSlot &slot : ws.slots) {
    const std::string &name = slot.spec->name;
    auto it = file.tensors.find(name);
    if (it == file.tensors.end())
      throw TrainError(path + ": missing parameter '" + name + "' " +
                       shapeText(slot.spec->shape));
    if (it->second.shape != slot.spec->shape)
      throw TrainError(path + ": parameter '" + name + "' has shape " +
                       shapeText(it->second.shape) + ", the model's is " +
                       shapeText(slot.spec->shape));
    std::vector<double> values;
    try {
      values = floatValues(it->second, path + ": parameter '" + name + "'");
    } catch (const SafetensorsError &e) {
      throw TrainError(e.what());
    }
    for (double &v : values) {
      if (roundToF32)
        v = static_cast<float>(v);
      if (!std::isfinite(v))
        throw TrainError(path + ": parameter '" + name +
                         "' holds a value that is not finite in " +
                         (roundToF32 ? "fp32" : "fp64"));
    }
    std::copy(values.begin(), values.end(), master.floats.begin() + slot.offset);
  }
}

ElementType elementTypeOf(mlir::Type type) {
  mlir::Type e = mlir::cast<mlir::RankedTensorType>(type).getElementType();
  if (e.isF16())
    return ElementType::F16;
  if (e.isBF16())
    return ElementType::BF16;
  if (e.isInteger(1))
    return ElementType::I1;
  if (e.isInteger(32))
    return ElementType::I32;
  if (e.isInteger(64))
    return ElementType::I64;
  return ElementType::F32;
}

/// The batch inputs of `f` (its arguments after `skip` that are not
/// buffers or dropout counters), read from `path` with `f`'s element types.
std::map<std::string, HostTensor>
loadBatch(const std::string &path, mlir::func::FuncOp f, unsigned skip,
          const std::map<std::string, HostTensor> &provided) {
  SafetensorsFile file = read(path, "batch");
  std::map<std::string, HostTensor> batch;
  std::set<std::string> wanted;
  for (unsigned i = skip; i < f.getNumArguments(); ++i) {
    std::string name = argName(f, i);
    if (provided.count(name))
      continue;
    wanted.insert(name);
    auto it = file.tensors.find(name);
    if (it == file.tensors.end())
      throw TrainError(path + ": missing batch input '" + name + "'");
    ElementType type = elementTypeOf(f.getArgument(i).getType());
    try {
      std::string what = path + ": batch input '" + name + "'";
      batch[name] =
          reference::isFloat(type)
              ? HostTensor::fromFloats(type, it->second.shape,
                                       floatValues(it->second, what))
              : HostTensor::fromInts(type, it->second.shape,
                                     intValues(it->second, what));
    } catch (const SafetensorsError &e) {
      throw TrainError(e.what());
    }
  }
  for (const auto &[name, tensor] : file.tensors)
    if (!wanted.count(name))
      throw TrainError(path + ": tensor '" + name +
                       "' is not an input of the model");
  return batch;
}

} // namespace

StepResult runReferenceSteps(const StepOptions &o) {
  if (o.steps < 1)
    throw TrainError("--steps must be >= 1");
  ModelDescription desc;
  try {
    desc = loadModelDescription(o.model);
  } catch (const DescriptionError &e) {
    throw TrainError(e.what());
  }
  Programs programs;
  compilePrograms(programs, desc);
  ParameterLayout layout = buildParameterLayout(desc);
  WorkspaceLayout ws = planWorkspace(layout);
  TrainState state = TrainState::fresh(desc, ws, /*seed=*/0);
  loadParameters(o.params, ws, /*roundToF32=*/!o.f64, state.master);
  reference::Precision precision =
      o.f64 ? reference::Precision::F64 : reference::Precision::F32;

  std::map<std::string, HostTensor> fixed;
  for (auto &[name, t] :
       state.computeParameters(desc, ws, computeType(desc.dtype), precision))
    if (!ws.find(name))
      fixed[name] = t;
  fixed["dropout_seed"] =
      HostTensor::scalarInt(ElementType::I64, static_cast<int64_t>(o.dropoutSeed));
  fixed["dropout_offset"] = HostTensor::scalarInt(ElementType::I64, 0);
  std::map<std::string, HostTensor> named =
      loadBatch(o.batch, programs.accumulate, 3, fixed);
  named.insert(fixed.begin(), fixed.end());

  reference::Interpreter interpreter(precision);
  std::vector<double> losses, norms, rates;
  HostTensor firstGradients;
  for (int64_t k = 0; k < o.steps; ++k) {
    named["dropout_offset"].ints[0] = k;
    std::vector<HostTensor> args = {
        state.master, HostTensor::zeros(ElementType::F32, {ws.totalElements}),
        state.lossScale};
    appendNamed(args, programs.accumulate, 3, named);
    std::vector<HostTensor> out;
    try {
      out = interpreter.run(programs.accumulate, args);
    } catch (const reference::InterpreterError &e) {
      throw TrainError(o.batch + ": the model rejects the batch: " + e.what());
    }
    losses.push_back(out[0].floats[0]);
    HostTensor gradients = std::move(out[1]);
    if (k == 0) {
      firstGradients = gradients;
      for (double &g : firstGradients.floats)
        g /= state.lossScale.floats[0];
    }
    out = interpreter.run(
        programs.optimizerStep,
        {state.master, gradients, state.expAvg, state.expAvgSq,
         state.stepTensor(), state.lossScale, state.goodSteps,
         HostTensor::scalarFloat(ElementType::F32, 1.0)});
    state.master = std::move(out[0]);
    state.expAvg = std::move(out[1]);
    state.expAvgSq = std::move(out[2]);
    state.appliedSteps = out[3].ints[0];
    state.lossScale = std::move(out[4]);
    state.goodSteps = std::move(out[5]);
    norms.push_back(out[6].floats[0]);
    rates.push_back(out[7].floats[0]);
    state.step += 1;
  }

  SafetensorsFile file;
  const std::vector<int64_t> perStep = {o.steps};
  const size_t n = static_cast<size_t>(o.steps);
  file.tensors["loss"] = floatTensor("F64", perStep, losses.data(), n);
  file.tensors["grad_norm"] = floatTensor("F64", perStep, norms.data(), n);
  file.tensors["lr"] = floatTensor("F64", perStep, rates.data(), n);
  for (const WorkspaceSlot &slot : ws.slots) {
    size_t count = static_cast<size_t>(slot.numel);
    file.tensors["grad/" + slot.spec->name] = floatTensor(
        "F64", slot.spec->shape, firstGradients.floats.data() + slot.offset, count);
    file.tensors["param/" + slot.spec->name] = floatTensor(
        "F64", slot.spec->shape, state.master.floats.data() + slot.offset, count);
  }
  file.metadata = {{"ls2c.model", desc.name},
                   {"ls2c.precision", o.f64 ? "f64" : "f32"},
                   {"ls2c.steps", std::to_string(o.steps)}};
  try {
    writeSafetensors(o.output, file);
  } catch (const SafetensorsError &e) {
    throw TrainError(e.what());
  }
  return {losses};
}

} // namespace ls2c
