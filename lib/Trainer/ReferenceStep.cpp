//===- ReferenceStep.cpp - train steps on given weights and one batch -----===//
#include "ls2c/Trainer/ReferenceStep.h"

#include "Programs.h"
#include "ReferenceEngine.h"
#if LS2C_HAVE_CUDA
#include "ls2c/Trainer/CudaTrainer.h"
#endif
#include "ls2c/Trainer/TrainState.h"

#include "ls2c/Model/BatchIds.h"
#include "ls2c/Model/ParameterLayout.h"
#include "ls2c/Reference/Interpreter.h"
#include "ls2c/Support/Safetensors.h"
#include "ls2c/Trainer/Trainer.h"
#include "ls2c/Training/Workspace.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cmath>
#include <filesystem>

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

/// Throws unless every value is finite (in fp32 when `inF32`).
void checkFinite(const std::vector<double> &values, bool inF32,
                 const std::string &what) {
  for (double v : values)
    if (!std::isfinite(inF32 ? static_cast<float>(v) : v))
      throw TrainError(what + " holds a value that is not finite in " +
                       (inF32 ? "fp32" : "fp64"));
}

/// Checks that `file` (read from `path`) holds exactly the trainable
/// parameters, in the model's shapes, F32 or F64, finite, and returns them
/// as the master workspace (padding zero). In fp32 mode the values are
/// rounded to fp32, as the master workspace is.
std::vector<double> loadParameters(const SafetensorsFile &file,
                                   const std::string &path,
                                   const WorkspaceLayout &ws, bool roundToF32) {
  for (const auto &[name, tensor] : file.tensors)
    if (!ws.find(name))
      throw TrainError(path + ": tensor '" + name +
                       "' is not a trainable parameter of the model");
  std::vector<double> master(static_cast<size_t>(ws.totalElements), 0.0);
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
    const std::string what = path + ": parameter '" + name + "'";
    std::vector<double> values;
    try {
      values = floatValues(it->second, what);
    } catch (const SafetensorsError &e) {
      throw TrainError(e.what());
    }
    checkFinite(values, roundToF32, what);
    for (double &v : values)
      if (roundToF32)
        v = static_cast<float>(v);
    std::copy(values.begin(), values.end(), master.begin() + slot.offset);
  }
  return master;
}

ElementType elementTypeOf(mlir::Type type) {
  // Graph arguments have verified ls2 element types.
  return reference::elementTypeFromMLIR(
             mlir::cast<mlir::RankedTensorType>(type).getElementType())
      .value_or(ElementType::F32);
}

/// Whether argument `i` of `f` comes from the batch file: a model input
/// other than the dropout counters, which the driver sets.
bool isBatchInput(mlir::func::FuncOp f, unsigned i) {
  auto kind = f.getArgAttrOfType<mlir::StringAttr>(i, "ls2.kind");
  std::string name = argName(f, i);
  return kind && kind.getValue() == "input" && name != "dropout_seed" &&
         name != "dropout_offset";
}

/// The batch inputs of `f` (its arguments after `skip`), taken from `file`
/// (read from `path`) with `f`'s element types; float values must be finite.
std::map<std::string, HostTensor> loadBatch(const SafetensorsFile &file,
                                            const std::string &path,
                                            mlir::func::FuncOp f,
                                            unsigned skip, bool f64) {
  std::map<std::string, HostTensor> batch;
  for (unsigned i = skip; i < f.getNumArguments(); ++i) {
    if (!isBatchInput(f, i))
      continue;
    std::string name = argName(f, i);
    auto it = file.tensors.find(name);
    if (it == file.tensors.end())
      throw TrainError(path + ": missing batch input '" + name + "'");
    const SafetensorsTensor &t = it->second;
    ElementType type = elementTypeOf(f.getArgument(i).getType());
    std::string what = path + ": batch input '" + name + "'";
    try {
      if (reference::isFloat(type)) {
        std::vector<double> values = floatValues(t, what);
        checkFinite(values, !f64, what);
        batch[name] = HostTensor::fromFloats(type, t.shape, std::move(values));
      } else {
        batch[name] = HostTensor::fromInts(type, t.shape, intValues(t, what));
      }
    } catch (const SafetensorsError &e) {
      throw TrainError(e.what());
    }
  }
  for (const auto &[name, tensor] : file.tensors)
    if (!batch.count(name))
      throw TrainError(path + ": tensor '" + name +
                       "' is not an input of the model");
  return batch;
}

/// What the interpreter does not check: each input's rank and dynamic dims
/// within the bounds the model is compiled for (ls2.max_shape), for ViT one
/// sequence of num_patches + 1 tokens per image, and every sequence at most
/// max_seq_len tokens, a label per token, and ids and labels within the
/// table or classes they index.
void checkBatch(const ModelDescription &desc, mlir::func::FuncOp f,
                unsigned skip, const std::map<std::string, HostTensor> &batch,
                const std::string &path) {
  for (unsigned i = skip; i < f.getNumArguments(); ++i) {
    auto it = batch.find(argName(f, i));
    if (it == batch.end())
      continue;
    const std::string what = path + ": batch input '" + it->first + "'";
    const std::vector<int64_t> &shape = it->second.shape;
    auto type = mlir::cast<mlir::RankedTensorType>(f.getArgument(i).getType());
    if (static_cast<int64_t>(shape.size()) != type.getRank())
      throw TrainError(what + " has rank " + std::to_string(shape.size()) +
                       ", the model takes rank " +
                       std::to_string(type.getRank()));
    auto bound =
        f.getArgAttrOfType<mlir::DenseI64ArrayAttr>(i, "ls2.max_shape");
    for (int64_t d = 0; bound && d < type.getRank(); ++d)
      if (type.isDynamicDim(d) && shape[d] > bound[d])
        throw TrainError(what + " dim " + std::to_string(d) + " is " +
                         std::to_string(shape[d]) + ", more than " +
                         std::to_string(bound[d]) +
                         " (the bound set by max_batch_tokens)");
  }
  if (desc.architecture == Architecture::ViT) {
    const int64_t images = batch.at("pixels").shape[0];
    const int64_t n = desc.numPatches() + 1;
    if (batch.at("labels").shape[0] != images)
      throw TrainError(path + ": batch input 'labels' has " +
                       std::to_string(batch.at("labels").shape[0]) +
                       " entries for the " + std::to_string(images) +
                       " images in 'pixels'");
    const std::vector<int64_t> &cu = batch.at("cu_seqlens").ints;
    bool ok = static_cast<int64_t>(cu.size()) == images + 1;
    for (size_t k = 0; ok && k < cu.size(); ++k)
      ok = cu[k] == static_cast<int64_t>(k) * n;
    if (!ok)
      throw TrainError(path + ": batch input 'cu_seqlens' must be k * " +
                       std::to_string(n) + " for k = 0.." +
                       std::to_string(images) + ": each of the " +
                       std::to_string(images) +
                       " images is one sequence of num_patches + 1 = " +
                       std::to_string(n) + " tokens");
  }
  for (const char *name : {"cu_seqlens", "src_cu_seqlens", "tgt_cu_seqlens"}) {
    auto it = batch.find(name);
    if (it == batch.end())
      continue;
    // The graph rejects decreasing offsets.
    if (std::string bad = checkSequenceLengths(name, it->second.ints, desc.max_seq_len);
        !bad.empty())
      throw TrainError(path + ": " + bad);
  }
  // A label per token (of the target side for encoder-decoders).
  const char *tokens = desc.architecture == Architecture::EncoderDecoder ? "tgt_ids" : "input_ids";
  if (batch.count("labels") && batch.count(tokens) &&
      batch.at("labels").shape != batch.at(tokens).shape)
    throw TrainError(path + ": batch input 'labels' has shape " +
                     shapeText(batch.at("labels").shape) + ", '" + tokens + "' " +
                     shapeText(batch.at(tokens).shape) + ": one label per token");
  // Ids, positions and labels against the table or classes they index
  // (BatchIds.h, which the GPU tools share), named here rather than by the
  // interpreter's op.
  const std::map<std::string, BatchIdRange> ranges = batchIdRanges(desc);
  for (const auto &[name, tensor] : batch)
    if (!tensor.ints.empty())
      if (std::string bad = checkBatchIds(ranges, name, tensor.ints); !bad.empty())
        throw TrainError(path + ": " + bad);
  // The gathered masked-LM head holds max_predictions rows.
  if (auto it = batch.find("labels"); it != batch.end())
    if (std::string bad = checkLabelCount(desc, it->second.ints); !bad.empty())
      throw TrainError(path + ": " + bad);
}

} // namespace

StepResult runSteps(const StepOptions &o) {
  if (o.steps < 1)
    throw TrainError("--steps must be >= 1");
  if (o.device != "auto" && o.device != "cpu" && o.device != "cuda")
    throw TrainError("--device '" + o.device + "' is not one of auto, cpu, cuda");
  if (o.device == "cuda" && (o.f64 || !o.logits.empty()))
    throw TrainError(std::string(o.f64 ? "--precision f64" : "--logits") +
                     " is the CPU reference's: give --device cpu (or auto)");
  ModelDescription desc;
  try {
    desc = loadModelDescription(o.model);
  } catch (const DescriptionError &e) {
    throw TrainError(e.what());
  }
  // Both files are read and the parameters checked before the model is
  // compiled, the batch (its checks need the graph) before the train state
  // is allocated: seconds and gigabytes for the big presets.
  SafetensorsFile paramsFile = read(o.params, "parameters");
  const SafetensorsFile batchFile = read(o.batch, "batch");
  ParameterLayout layout = buildParameterLayout(desc);
  WorkspaceLayout ws = planWorkspace(layout);
  std::vector<double> master =
      loadParameters(paramsFile, o.params, ws, /*roundToF32=*/!o.f64);
  paramsFile = {}; // its values are in `master` now
  auto programs = std::make_unique<Programs>();
  compilePrograms(*programs, desc);
  InputBatch batch;
  batch.inputs = loadBatch(batchFile, o.batch, programs->accumulate, 3, o.f64);
  checkBatch(desc, programs->accumulate, 3, batch.inputs, o.batch);

  TrainState state = TrainState::fresh(desc, ws, /*seed=*/0);
  state.master.floats = std::move(master);
  reference::Precision precision =
      o.f64 ? reference::Precision::F64 : reference::Precision::F32;

  SafetensorsFile logits; // written after the steps' output, when they all ran
  if (!o.logits.empty()) {
    // The evaluation forward (no dropout) takes every parameter in the
    // compute dtype and returns the loss and its logits.
    std::map<std::string, HostTensor> forwardNamed =
        state.computeParameters(desc, ws, computeType(desc.dtype), precision);
    for (const auto &[name, t] : batch.inputs)
      forwardNamed[name] = t;
    std::vector<HostTensor> args;
    appendNamed(args, programs->forward, 0, forwardNamed);
    std::vector<HostTensor> out;
    try {
      out = reference::Interpreter(precision).run(programs->forward, args);
    } catch (const reference::InterpreterError &e) {
      throw TrainError(o.batch + ": the model rejects the batch: " + e.what());
    }
    logits.tensors["logits"] =
        floatTensor("F64", out[1].shape, out[1].floats.data(), out[1].floats.size());
    logits.metadata = {{"ls2c.model", desc.name}, {"ls2c.precision", o.f64 ? "f64" : "f32"}};
  }

  // The GPU when asked, or under auto when there is one and neither f64 nor
  // logits ask for the reference.
  std::unique_ptr<TrainEngine> engine;
  if (o.device == "cuda" || (o.device == "auto" && !o.f64 && o.logits.empty())) {
    std::string why;
#if LS2C_HAVE_CUDA
    TrainOptions t;
    t.model = o.model;
    t.attention = o.attention;
    std::vector<std::string> inputs;
    for (const auto &[name, tensor] : batch.inputs)
      inputs.push_back(name);
    engine = openCudaEngine(t, desc, ws, inputs, why);
#else
    why = "this ls2c was built without the CUDA toolkit";
#endif
    if (!engine && o.device == "cuda")
      throw TrainError("--device cuda: no usable CUDA GPU: " + why);
  }
  if (!engine)
    engine = makeReferenceEngine(desc, ws, std::move(programs), precision);
  const double lossScale = state.lossScale.floats[0];
  engine->setState(std::move(state));

  std::vector<double> losses, norms, rates;
  std::vector<double> gradients;
  for (int64_t k = 0; k < o.steps; ++k) {
    try {
      losses.push_back(engine->accumulate(batch, nullptr, true, o.dropoutSeed, k));
    } catch (const reference::InterpreterError &e) {
      throw TrainError(o.batch + ": the model rejects the batch: " + e.what());
    }
    if (k == 0)
      gradients = engine->gradients();
    OptimizerStepResult r = engine->optimizerStep(1);
    norms.push_back(r.gradNorm);
    rates.push_back(r.lr);
    if (o.onStep)
      o.onStep(k + 1, losses.back());
  }
  state = engine->getState();
  for (double &g : gradients)
    g /= lossScale;

  SafetensorsFile file;
  const std::vector<int64_t> perStep = {o.steps};
  const size_t n = static_cast<size_t>(o.steps);
  file.tensors["loss"] = floatTensor("F64", perStep, losses.data(), n);
  file.tensors["grad_norm"] = floatTensor("F64", perStep, norms.data(), n);
  file.tensors["lr"] = floatTensor("F64", perStep, rates.data(), n);
  for (const WorkspaceSlot &slot : ws.slots) {
    size_t count = static_cast<size_t>(slot.numel);
    file.tensors["grad/" + slot.spec->name] = floatTensor(
        "F64", slot.spec->shape, gradients.data() + slot.offset, count);
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
  if (!o.logits.empty()) {
    try {
      writeSafetensors(o.logits, logits);
    } catch (const SafetensorsError &e) {
      // A failed run leaves neither file: the output just written goes too
      // (a regular file only: -o /dev/null is written in place, AtomicFile.h).
      std::error_code ignored;
      if (std::filesystem::is_regular_file(std::filesystem::symlink_status(o.output, ignored)))
        std::filesystem::remove(o.output, ignored);
      throw TrainError(e.what());
    }
  }
  return {losses, engine->device()};
}

} // namespace ls2c
