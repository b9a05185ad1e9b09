//===- Trainer.cpp - the training loop of `ls2c train`, on any engine -----===//
#include "ls2c/Trainer/Trainer.h"

#include "ProgressReporter.h"
#include "ReferenceEngine.h"
#if LS2C_HAVE_CUDA
#include "ls2c/Trainer/CudaTrainer.h"
#endif

#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Model/ParameterLayout.h"
#include "ls2c/Trainer/PredictionScore.h"
#include "ls2c/Trainer/TrainEngine.h"
#include "ls2c/Trainer/TrainState.h"
#include "ls2c/Trainer/TrainingData.h"
#include "ls2c/Training/Workspace.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <tuple>

namespace ls2c {

namespace {

using Clock = std::chrono::steady_clock;

/// The signal that asked the loop to stop (0: none).
std::atomic<int> interruptRequested{0};

/// While alive, SIGINT and SIGTERM ask the loop to stop after the current
/// step (and checkpoint) instead of killing the process.
class InterruptGuard {
public:
  InterruptGuard() {
    interruptRequested = 0;
    struct sigaction action {};
    action.sa_handler = [](int signal) { interruptRequested = signal; };
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &oldInt);
    sigaction(SIGTERM, &action, &oldTerm);
  }
  ~InterruptGuard() {
    sigaction(SIGINT, &oldInt, nullptr);
    sigaction(SIGTERM, &oldTerm, nullptr);
  }
  /// The signal received, 0 when none.
  int requested() const { return interruptRequested; }

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

/// The engine `o.device` asks for: cuda, else the CPU (auto: cuda when this
/// machine has a usable GPU, else the CPU, with what stood in the way in
/// `why`).
std::unique_ptr<TrainEngine> makeEngine(const TrainOptions &o, const ModelDescription &desc,
                                        const WorkspaceLayout &ws, TrainingData &data,
                                        std::string &why) {
  if (o.device != "auto" && o.device != "cpu" && o.device != "cuda")
    throw TrainError("--device '" + o.device + "' is not one of auto, cpu, cuda");
  if (o.device == "cpu") {
    if (!o.bundle.empty())
      throw TrainError("--bundle runs on the GPU: give --device cuda or auto");
    if (o.attention != "auto" || !o.graphs)
      throw TrainError(std::string(o.graphs ? "--attention" : "--no-graphs") +
                       " is the GPU's: leave it out with --device cpu");
    return makeReferenceEngine(desc, ws);
  }
#if LS2C_HAVE_CUDA
  InputBatch first;
  if (!data.validBatch(0, first))
    throw TrainError((o.validData.empty() ? o.data : o.validData) +
                     ": no validation batch (use more validation data)");
  std::vector<std::string> inputs;
  for (const auto &[name, t] : first.inputs)
    inputs.push_back(name);
  if (std::unique_ptr<TrainEngine> engine = openCudaEngine(o, desc, ws, inputs, why))
    return engine;
#else
  (void)data;
  why = "this ls2c was built without the CUDA toolkit";
#endif
  if (o.device == "cuda" || !o.bundle.empty())
    throw TrainError(std::string(o.device == "cuda" ? "--device cuda" : "--bundle") +
                     ": no usable CUDA GPU: " + why);
  return makeReferenceEngine(desc, ws);
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
  const bool classifies = !isCausalLM(desc.architecture);

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
  }
  // The engine before the output folder: a run refused for want of a GPU
  // leaves nothing behind.
  std::string noGpu;
  std::unique_ptr<TrainEngine> engine = makeEngine(o, desc, ws, *data, noGpu);
  if (!o.resume) {
    std::error_code error;
    std::filesystem::create_directories(o.outDir, error);
    if (error || !std::filesystem::is_directory(o.outDir))
      throw TrainError("cannot create output directory '" + o.outDir + "': " +
                       (error ? error.message() : "not a directory"));
  }
  int64_t step = state.step;
  engine->setState(std::move(state));

  data->seek(step * o.microBatches);
  // Always: it reports the lines truncated or skipped (--no-progress hides
  // only the progress line).
  std::fprintf(stderr, "data: %s\n", data->summary().c_str());
  std::fprintf(stderr, "device: %s%s\n", engine->device().c_str(),
               noGpu.empty() ? "" : ("; no CUDA GPU: " + noGpu).c_str());
  ProgressReporter report(o.outDir + "/metrics.jsonl",
                          /*resumeAfter=*/o.resume ? step : -1,
                          o.progress, o.steps);
  InterruptGuard interrupt;

  // The dropout-free @forward returns the loss and the logits it scores.
  auto evaluate = [&]() {
    engine->beginEvaluation();
    double sum = 0;
    int64_t count = 0;
    PredictionScore predictions;
    InputBatch b;
    for (int64_t k = 0; k < o.evalBatches && data->validBatch(k, b); ++k) {
      int64_t scored = 0;
      for (int64_t label : b.inputs.at("labels").ints)
        scored += label != data->ignoredLabel();
      double loss = engine->evaluate(b, data->ignoredLabel(), classifies ? &predictions : nullptr);
      if (scored > 0)
        sum += loss * static_cast<double>(scored);
      count += scored;
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
  auto save = [&] {
    TrainState s = engine->getState();
    s.step = step;
    s.save(checkpoint, desc, ws, key);
  };

  TrainResult result;
  result.firstStep = step;
  result.device = engine->device();
  // Micro-batch i of the run is TrainingData's i-th, read and prepared on a
  // second thread while the engine runs the one before.
  using Prepared = std::pair<InputBatch, std::shared_ptr<const void>>;
  auto fetch = [&] {
    Prepared p;
    p.first = data->next();
    p.second = engine->prepare(p.first);
    return p;
  };
  std::future<Prepared> pending = std::async(std::launch::async, fetch);
  while (step < o.steps) {
    auto stepStart = Clock::now();
    double loss = 0;
    int64_t tokens = 0, dropped = 0;
    for (int64_t micro = 0; micro < o.microBatches; ++micro) {
      auto [batch, prepared] = pending.get();
      const bool more = micro + 1 < o.microBatches || step + 1 < o.steps;
      if (more)
        pending = std::async(std::launch::async, fetch);
      dropped += batch.droppedLabels;
      loss += engine->accumulate(batch, prepared, micro == 0, o.seed,
                                 step * o.microBatches + micro) /
              static_cast<double>(o.microBatches);
      tokens += batch.tokens;
    }
    OptimizerStepResult r = engine->optimizerStep(o.microBatches);
    // A skipped (non-finite) step still consumed its batches: count it.
    step += 1;
    double seconds =
        std::chrono::duration<double>(Clock::now() - stepStart).count();
    report.step(step, loss, r.lr, r.gradNorm, static_cast<double>(tokens) / seconds, r.finite,
                desc.max_predictions > 0 ? dropped : -1,
                desc.dtype == DType::F16 ? r.lossScale : 0.0);
    result.lastLoss = loss;

    double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
    bool outOfTime = o.timeLimitSeconds > 0 && elapsed >= o.timeLimitSeconds;
    bool last = step == o.steps || outOfTime;
    if (o.evalInterval && (step % o.evalInterval == 0 || last)) {
      Evaluation e = evaluate();
      if (e.scored == 0) {
        // A tiny validation set can leave no label with a loss (no masked
        // token): say so rather than report a loss and accuracy of 0.
        std::fprintf(stderr, "ls2c: warning: step %lld: the validation batches have no label "
                             "that carries a loss; nothing to report (use more validation data)\n",
                     static_cast<long long>(step));
      } else {
        result.lastValidLoss = e.loss;
        std::map<std::string, double> extra;
        if (classifies) {
          result.lastValidAccuracy = e.accuracy;
          extra["valid_accuracy"] = e.accuracy;
          if (desc.label_smoothing > 0)
            extra["valid_nll_loss"] = e.nllLoss;
        }
        report.validation(step, e.loss, extra);
      }
    }
    const int interrupted = interrupt.requested();
    if (last || interrupted || (o.checkpointInterval && step % o.checkpointInterval == 0))
      save();
    if (interrupted) {
      if (pending.valid())
        pending.wait();
      report.finish();
      throw TrainInterrupted("interrupted at step " + std::to_string(step) +
                                 "; checkpoint saved, continue with --resume",
                             interrupted);
    }
    if (outOfTime)
      break;
  }
  if (pending.valid())
    pending.wait();
  report.finish();
  result.step = step;
  result.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return result;
}

} // namespace ls2c
