//===- Bundles.cpp - load and check ls2c-gpu-train's two bundles ----------===//
#include "Bundles.h"

#include "GpuTrainOptions.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace ls2c::gputrain {

using runtime::ArgumentKind;
using runtime::Function;
using runtime::Program;

namespace {

/// The function `name` of `program`, or an InputError naming the bundle.
const Function &requireFunction(const Program &program, const std::string &bundle,
                                const std::string &name, const char *what) {
  for (const Function &f : program.functions)
    if (f.name == name)
      return f;
  throw InputError(bundle + ": has no @" + name + " (not " + what + " of ls2c compile)");
}

/// The description with everything that must agree between the train and the
/// eval bundle: all but the name, the dropout rates, max_predictions (the
/// eval bundle scores every token) and the optimizer (which @forward does
/// not use; the eval bundle need not share the schedule).
nlohmann::json comparable(ModelDescription d) {
  d.name.clear();
  d.hidden_dropout = d.attention_dropout = d.activation_dropout = 0;
  d.optimizer = OptimizerConfig{};
  // Neither changes @forward: they shape the train step's memory only.
  d.activation_checkpointing = d.recompute_attention = false;
  d.sequence_parallel_size = 1;
  d.max_predictions = 0;
  return toJson(d);
}

std::string architectureOf(const ModelDescription &d) {
  return std::string(toString(d.architecture));
}

} // namespace

Bundles loadBundles(const std::string &trainPath, const std::string &evalPath) {
  for (const std::string *path : {&trainPath, &evalPath})
    if (!std::filesystem::is_regular_file(*path))
      throw InputError(*path + ": no such file");
  Bundles b;
  b.train = runtime::readBundle(trainPath);
  b.eval = runtime::readBundle(evalPath);
  ModelDescription evalDesc;
  try {
    b.desc = parseModelDescription(b.train.description, trainPath);
    evalDesc = parseModelDescription(b.eval.description, evalPath);
  } catch (const DescriptionError &e) {
    throw InputError(e.what());
  }
  requireFunction(b.train, trainPath, "accumulate_gradients", "a training bundle");
  requireFunction(b.train, trainPath, "optimizer_step", "a training bundle");
  if (comparable(b.desc) != comparable(evalDesc))
    throw InputError(evalPath + ": model '" + b.eval.modelName + "' (" + architectureOf(evalDesc) +
                     ") is not the description of " + trainPath + " ('" + b.train.modelName +
                     "', " + architectureOf(b.desc) + ") with other dropout rates");
  // Its kind first: a decode bundle keeps the model's dropout rates too.
  const Function &forward = requireFunction(b.eval, evalPath, "forward", "an evaluation bundle");
  if (evalDesc.hidden_dropout != 0 || evalDesc.attention_dropout != 0 ||
      evalDesc.activation_dropout != 0)
    throw InputError(evalPath + ": the evaluation bundle must be compiled with every "
                                "dropout rate 0 (ls2c compile MODEL.json --program=eval)");
  if (forward.results.empty() || !forward.results[0].maxShape.empty())
    throw InputError(evalPath + ": @forward does not return a scalar loss");
  b.evalLogits = forward.results.size() == 2 && forward.results[1].name == "logits";
  if (!isCausalLM(b.desc.architecture) && !b.evalLogits)
    throw InputError(evalPath + ": @forward returns the loss only, and the validation accuracy "
                                "of an " + architectureOf(b.desc) +
                     " model needs its logits: compile the evaluation bundle with "
                     "ls2c compile MODEL.json --program=eval --arch=sm_90 -o " + evalPath);
  return b;
}

const Function &requireDataInputs(const Program &program, const std::string &bundle,
                                  const std::string &name, const std::set<std::string> &provided,
                                  const ModelDescription &desc) {
  const Function &f = requireFunction(program, bundle, name, "a bundle");
  std::string list;
  for (const std::string &p : provided)
    list += (list.empty() ? "" : ", ") + p;
  std::set<std::string> seen;
  for (const runtime::TensorSpec &s : f.arguments) {
    if (s.kind != ArgumentKind::Input || s.name == "dropout_seed" || s.name == "dropout_offset")
      continue;
    if (!provided.count(s.name))
      throw InputError(bundle + ": @" + name + " takes the input '" + s.name + "', which " +
                       architectureOf(desc) + " data do not provide (they provide " + list +
                       ")");
    seen.insert(s.name);
  }
  for (const std::string &p : provided)
    if (!seen.count(p))
      throw InputError(bundle + ": @" + name + " lacks the input '" + p + "' of " +
                       architectureOf(desc) + " data (" + list + ")");
  return f;
}

} // namespace ls2c::gputrain
