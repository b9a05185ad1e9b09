//===- Trainer.cpp - train on the CPU reference backend -------------------===//
#include "ls2c/Trainer/Trainer.h"

#include "ProgressReporter.h"
#include "Programs.h"
#include "TrainState.h"

#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Model/ParameterLayout.h"
#include "ls2c/Reference/Interpreter.h"
#include "ls2c/Trainer/PredictionScore.h"
#include "ls2c/Trainer/TrainingData.h"
#include "ls2c/Training/Workspace.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <tuple>

namespace ls2c {

namespace {

using reference::ElementType;
using reference::HostTensor;
using reference::Interpreter;
using Clock = std::chrono::steady_clock;

std::atomic<bool> interruptRequested{false};

/// While alive, SIGINT and SIGTERM ask the loop to stop after the current
/// step (and checkpoint) instead of killing the process.
class InterruptGuard {
public:
  InterruptGuard() {
    interruptRequested = false;
    struct sigaction action {};
    action.sa_handler = [](int) { interruptRequested = true; };
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &oldInt);
    sigaction(SIGTERM, &action, &oldTerm);
  }
  ~InterruptGuard() {
    sigaction(SIGINT, &oldInt, nullptr);
    sigaction(SIGTERM, &oldTerm, nullptr);
  }
  bool requested() const { return interruptRequested; }

private:
  struct sigaction oldInt {}, oldTerm {};
};

/// What one evaluation measured.
struct Evaluation {
  int64_t scored = 0;   ///< labels that carry a loss (0: nothing to report)
  double loss = 0;      ///< mean over the labels that carry a loss
  double nllLoss = 0;   ///< the same without label smoothing
  double accuracy = 0;  ///< share of those labels the logits' argmax predicts
};

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

} // namespace

TrainResult train(const TrainOptions &o) {
  auto started = Clock::now();
  ModelDescription desc;
  try {
    desc = loadModelDescription(o.model);
  } catch (const DescriptionError &e) {
    throw TrainError(e.what());
  }
  // The first option out of range, by name.
  for (const auto &[name, value, least] :
       {std::tuple<const char *, int64_t, int64_t>{"--steps", o.steps, 1},
        {"--micro-batches", o.microBatches, 1},
        {"--eval-batches", o.evalBatches, 1},
        {"--batch-sequences", o.batchSequences, 0},
        {"--eval-interval", o.evalInterval, 0},
        {"--checkpoint-interval", o.checkpointInterval, 0}})
    if (value < least)
      throw TrainError(std::string(name) + " is " + std::to_string(value) + "; it must be >= " +
                       std::to_string(least));
  // A linear or cosine decay ends at total_steps; later steps keep its last
  // learning rate, which is 0 unless min_lr_ratio says otherwise.
  const ScheduleConfig &schedule = desc.optimizer.schedule;
  if ((schedule.type == ScheduleType::Linear || schedule.type == ScheduleType::Cosine) &&
      o.steps > schedule.total_steps) {
    const int64_t first = schedule.total_steps + 1;
    std::string which = o.steps == first
                            ? "step " + std::to_string(first) + " trains"
                            : "steps " + std::to_string(first) + " to " +
                                  std::to_string(o.steps) + " train";
    std::fprintf(stderr,
                 "ls2c: warning: --steps %lld runs past the schedule's total_steps (%lld): %s "
                 "at learning rate %g (lr x min_lr_ratio)\n",
                 static_cast<long long>(o.steps), static_cast<long long>(schedule.total_steps),
                 which.c_str(), desc.optimizer.lr * schedule.min_lr_ratio);
  }
  std::unique_ptr<TrainingData> data = loadTrainingData(o, desc);
  const bool classifies = desc.architecture != Architecture::Decoder;

  Programs programs;
  compilePrograms(programs, desc);
  ParameterLayout layout = buildParameterLayout(desc);
  WorkspaceLayout ws = planWorkspace(layout);
  TrainState state = TrainState::fresh(desc, ws, o.seed);
  const TrainState::RunKey key{o.seed, data->batchSequences(), o.microBatches,
                               data->fingerprint(), data->vocabulary()};
  std::string checkpoint = o.outDir + "/checkpoint.safetensors";
  if (o.resume) {
    state = TrainState::load(checkpoint, desc, ws, key);
    if (state.step >= o.steps)
      throw TrainError(checkpoint + ": already at step " +
                       std::to_string(state.step) + "; --steps " +
                       std::to_string(o.steps) + " leaves nothing to train");
  } else {
    std::error_code error;
    std::filesystem::create_directories(o.outDir, error);
    if (error || !std::filesystem::is_directory(o.outDir))
      throw TrainError("cannot create output directory '" + o.outDir + "': " +
                       (error ? error.message() : "not a directory"));
  }

  std::map<std::string, HostTensor> buffers;
  for (auto &[name, t] : state.computeParameters(desc, ws, computeType(desc.dtype)))
    if (!ws.find(name))
      buffers[name] = t;

  data->seek(state.step * o.microBatches);
  // Always: it reports the lines truncated or skipped (--no-progress hides
  // only the progress line).
  std::fprintf(stderr, "data: %s\n", data->summary().c_str());
  Interpreter interpreter(reference::Precision::F32);
  ProgressReporter report(o.outDir + "/metrics.jsonl",
                          /*resumeAfter=*/o.resume ? state.step : -1,
                          o.progress, o.steps);
  InterruptGuard interrupt;

  // The dropout-free @forward returns the loss and the logits it scores.
  auto evaluate = [&]() {
    std::map<std::string, HostTensor> params = state.computeParameters(
        desc, ws, computeType(desc.dtype));
    double sum = 0;
    int64_t count = 0;
    PredictionScore predictions;
    InputBatch b;
    for (int64_t k = 0; k < o.evalBatches && data->validBatch(k, b); ++k) {
      std::map<std::string, HostTensor> named = params;
      for (auto &[name, t] : b.inputs)
        named[name] = t;
      std::vector<HostTensor> args;
      appendNamed(args, programs.forward, 0, named);
      std::vector<HostTensor> out = interpreter.run(programs.forward, args);
      const HostTensor &labels = b.inputs.at("labels");
      int64_t scored = 0;
      for (int64_t label : labels.ints)
        scored += label != data->ignoredLabel();
      sum += out[0].floats[0] * static_cast<double>(scored);
      count += scored;
      if (classifies)
        score(out[1], labels, data->ignoredLabel(), predictions);
    }
    Evaluation e;
    e.scored = count;
    if (count > 0) {
      e.loss = sum / static_cast<double>(count);
      e.nllLoss = predictions.nll / static_cast<double>(count);
      e.accuracy = static_cast<double>(predictions.hits) / static_cast<double>(count);
    }
    return e;
  };

  TrainResult result;
  result.firstStep = state.step;
  while (state.step < o.steps) {
    auto stepStart = Clock::now();
    HostTensor grads = HostTensor::zeros(ElementType::F32, {ws.totalElements});
    double loss = 0;
    int64_t tokens = 0, dropped = 0;
    for (int64_t micro = 0; micro < o.microBatches; ++micro) {
      InputBatch batch = data->next();
      dropped += batch.droppedLabels;
      std::map<std::string, HostTensor> named = std::move(batch.inputs);
      named.insert(buffers.begin(), buffers.end());
      named["dropout_seed"] = HostTensor::scalarInt(ElementType::I64,
                                                    static_cast<int64_t>(o.seed));
      named["dropout_offset"] = HostTensor::scalarInt(
          ElementType::I64, state.step * o.microBatches + micro);
      std::vector<HostTensor> args = {state.master, grads, state.lossScale};
      appendNamed(args, programs.accumulate, 3, named);
      std::vector<HostTensor> out = interpreter.run(programs.accumulate, args);
      loss += out[0].floats[0] / static_cast<double>(o.microBatches);
      grads = std::move(out[1]);
      tokens += batch.tokens;
    }
    std::vector<HostTensor> out = interpreter.run(
        programs.optimizerStep,
        {state.master, grads, state.expAvg, state.expAvgSq, state.stepTensor(),
         state.lossScale, state.goodSteps,
         HostTensor::scalarFloat(ElementType::F32,
                                 static_cast<double>(o.microBatches))});
    bool finite = out[8].ints[0] != 0;
    state.master = std::move(out[0]);
    state.expAvg = std::move(out[1]);
    state.expAvgSq = std::move(out[2]);
    int64_t applied = out[3].ints[0];
    state.lossScale = std::move(out[4]);
    state.goodSteps = std::move(out[5]);
    // A skipped (non-finite) step still consumed its batches: count it.
    state.step += 1;
    state.appliedSteps = applied;
    double seconds =
        std::chrono::duration<double>(Clock::now() - stepStart).count();
    report.step(state.step, loss, out[7].floats[0], out[6].floats[0],
                static_cast<double>(tokens) / seconds, finite,
                desc.max_predictions > 0 ? dropped : -1,
                desc.dtype == DType::F16 ? state.lossScale.floats[0] : 0.0);
    result.lastLoss = loss;

    double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
    bool outOfTime = o.timeLimitSeconds > 0 && elapsed >= o.timeLimitSeconds;
    bool last = state.step == o.steps || outOfTime;
    if (o.evalInterval && (state.step % o.evalInterval == 0 || last)) {
      Evaluation e = evaluate();
      if (e.scored == 0) {
        // A tiny validation set can leave no label with a loss (no masked
        // token): say so rather than report a loss and accuracy of 0.
        std::fprintf(stderr, "ls2c: warning: step %lld: the validation batches have no label "
                             "that carries a loss; nothing to report (use more validation data)\n",
                     static_cast<long long>(state.step));
      } else {
        result.lastValidLoss = e.loss;
        std::map<std::string, double> extra;
        if (classifies) {
          result.lastValidAccuracy = e.accuracy;
          extra["valid_accuracy"] = e.accuracy;
          if (desc.label_smoothing > 0)
            extra["valid_nll_loss"] = e.nllLoss;
        }
        report.validation(state.step, e.loss, extra);
      }
    }
    bool interrupted = interrupt.requested();
    if (last || interrupted ||
        (o.checkpointInterval && state.step % o.checkpointInterval == 0))
      state.save(checkpoint, desc, ws, key);
    if (interrupted) {
      report.finish();
      throw TrainInterrupted("interrupted at step " + std::to_string(state.step) +
                             "; checkpoint saved, continue with --resume");
    }
    if (outOfTime)
      break;
  }
  report.finish();
  result.step = state.step;
  result.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return result;
}

} // namespace ls2c
