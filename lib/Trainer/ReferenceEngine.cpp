//===- ReferenceEngine.cpp - train steps on the CPU reference interpreter -===//
#include "ReferenceEngine.h"

#include "Programs.h"

#include "ls2c/Model/ParameterLayout.h"
#include "ls2c/Reference/Interpreter.h"
#include "ls2c/Trainer/Trainer.h"

#include <map>
#include <string>
#include <vector>

namespace ls2c {

namespace {

using reference::ElementType;
using reference::HostTensor;
using reference::Interpreter;

/// Adds the rows of `logits` [N, C] whose label is not `ignored`.
void score(const HostTensor &logits, const HostTensor &labels, int64_t ignored,
           PredictionScore &out) {
  const int64_t rows = labels.numElements(), classes = logits.shape.back();
  for (int64_t r = 0; r < rows; ++r) {
    int64_t label = labels.ints[static_cast<size_t>(r)];
    if (label != ignored)
      out.add(logits.floats.data() + r * classes, classes, label);
  }
}

class ReferenceEngine final : public TrainEngine {
public:
  ReferenceEngine(const ModelDescription &desc, const WorkspaceLayout &ws,
                  std::unique_ptr<Programs> compiled, reference::Precision precision)
      : desc(desc), ws(ws), programs(std::move(compiled)), precision(precision),
        interpreter(precision) {
    if (!programs) {
      programs = std::make_unique<Programs>();
      compilePrograms(*programs, desc);
    }
  }

  std::string device() const override {
    return std::string("cpu (reference interpreter, ") +
           (precision == reference::Precision::F64 ? "f64" : "f32") + ")";
  }

  void setState(TrainState s) override {
    state = std::move(s);
    buffers.clear();
    // The sinusoidal tables: arguments that are not workspace slots.
    for (auto &[name, t] : state.computeParameters(desc, ws, computeType(desc.dtype), precision))
      if (!ws.find(name))
        buffers[name] = std::move(t);
  }
  TrainState getState() override { return state; }

  double accumulate(const InputBatch &batch, const std::shared_ptr<const void> &,
                    bool firstMicroBatch, uint64_t seed, int64_t dropoutOffset) override {
    if (firstMicroBatch)
      grads = HostTensor::zeros(ElementType::F32, {ws.totalElements});
    std::map<std::string, HostTensor> named = batch.inputs;
    named.insert(buffers.begin(), buffers.end());
    named["dropout_seed"] = HostTensor::scalarInt(ElementType::I64, static_cast<int64_t>(seed));
    named["dropout_offset"] = HostTensor::scalarInt(ElementType::I64, dropoutOffset);
    std::vector<HostTensor> args = {state.master, grads, state.lossScale};
    appendNamed(args, programs->accumulate, 3, named);
    std::vector<HostTensor> out = interpreter.run(programs->accumulate, args);
    grads = std::move(out[1]);
    return out[0].floats[0];
  }

  std::vector<double> gradients() override { return grads.floats; }

  OptimizerStepResult optimizerStep(int64_t microBatches) override {
    std::vector<HostTensor> out = interpreter.run(
        programs->optimizerStep,
        {state.master, grads, state.expAvg, state.expAvgSq, state.stepTensor(), state.lossScale,
         state.goodSteps,
         HostTensor::scalarFloat(ElementType::F32, static_cast<double>(microBatches))});
    state.master = std::move(out[0]);
    state.expAvg = std::move(out[1]);
    state.expAvgSq = std::move(out[2]);
    state.appliedSteps = out[3].ints[0];
    state.lossScale = std::move(out[4]);
    state.goodSteps = std::move(out[5]);
    OptimizerStepResult r;
    r.gradNorm = out[6].floats[0];
    r.lr = out[7].floats[0];
    r.finite = out[8].ints[0] != 0;
    r.lossScale = state.lossScale.floats[0];
    return r;
  }

  void beginEvaluation() override {
    evalParameters = state.computeParameters(desc, ws, computeType(desc.dtype), precision);
  }

  double evaluate(const InputBatch &batch, int64_t ignoredLabel,
                  PredictionScore *predictions) override {
    std::map<std::string, HostTensor> named = evalParameters;
    for (const auto &[name, t] : batch.inputs)
      named[name] = t;
    std::vector<HostTensor> args;
    appendNamed(args, programs->forward, 0, named);
    std::vector<HostTensor> out = interpreter.run(programs->forward, args);
    if (predictions)
      score(out[1], batch.inputs.at("labels"), ignoredLabel, *predictions);
    return out[0].floats[0];
  }

private:
  const ModelDescription &desc;
  const WorkspaceLayout &ws;
  std::unique_ptr<Programs> programs;
  reference::Precision precision;
  Interpreter interpreter;
  TrainState state;
  HostTensor grads;
  std::map<std::string, HostTensor> buffers, evalParameters;
};

} // namespace

std::unique_ptr<TrainEngine> makeReferenceEngine(const ModelDescription &desc,
                                                 const WorkspaceLayout &ws,
                                                 std::unique_ptr<Programs> programs,
                                                 reference::Precision precision) {
  return std::make_unique<ReferenceEngine>(desc, ws, std::move(programs), precision);
}

} // namespace ls2c
