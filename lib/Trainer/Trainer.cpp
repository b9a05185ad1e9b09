//===- Trainer.cpp - train on the CPU reference backend -------------------===//
#include "ls2c/Trainer/Trainer.h"

#include "ProgressReporter.h"
#include "Programs.h"
#include "TrainState.h"

#include "ls2c/Data/CharCorpus.h"
#include "ls2c/Data/LMBatcher.h"
#include "ls2c/Data/TokenCorpus.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Model/ParameterLayout.h"
#include "ls2c/Reference/Interpreter.h"
#include "ls2c/Training/Workspace.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cmath>
#include <filesystem>
#include <map>

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

HostTensor ids(const std::vector<int32_t> &values) {
  return HostTensor::fromInts(ElementType::I32, {static_cast<int64_t>(values.size())},
                              std::vector<int64_t>(values.begin(), values.end()));
}

std::map<std::string, HostTensor> batchInputs(const TokenBatch &b) {
  return {{"input_ids", ids(b.input_ids)},
          {"position_ids", ids(b.position_ids)},
          {"cu_seqlens", ids(b.cu_seqlens)},
          {"labels", ids(b.labels)}};
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
  if (desc.architecture != Architecture::Decoder)
    throw TrainError(o.model + ": ls2c train supports decoder models on text "
                     "corpora so far; this model's architecture is '" +
                     std::string(toString(desc.architecture)) + "'");
  if (o.steps < 1 || o.microBatches < 1 || o.batchSequences < 0 ||
      o.evalInterval < 0 || o.evalBatches < 1 || o.checkpointInterval < 0)
    throw TrainError("--steps, --micro-batches and --eval-batches must be >= 1; "
                     "--batch-sequences, --eval-interval and "
                     "--checkpoint-interval >= 0");
  int64_t seqLen = desc.max_seq_len;
  int64_t sequences =
      o.batchSequences ? o.batchSequences : desc.max_batch_tokens / seqLen;
  int64_t batchTokens = 0;
  if (__builtin_mul_overflow(sequences, seqLen, &batchTokens) ||
      batchTokens > desc.max_batch_tokens)
    throw TrainError("--batch-sequences " + std::to_string(sequences) + " x " +
                     std::to_string(seqLen) + " tokens exceeds max_batch_tokens " +
                     std::to_string(desc.max_batch_tokens) + " of " + o.model);

  // The id streams: a token file's, or a text's characters.
  TokenCorpus corpus;
  const bool tokens = isTokenFile(o.data);
  if (!tokens && !o.validData.empty())
    throw TrainError("--valid-data " + o.validData + " needs --data to be a token file (" +
                     o.data + " is text)");
  try {
    if (tokens) {
      corpus = loadTokenCorpus(o.data, o.validData, 0.9, seqLen + 1);
    } else {
      CharCorpus text = loadCharCorpus(o.data, 0.9, seqLen + 1);
      corpus.vocabSize = text.vocabSize();
      corpus.train = std::move(text.train);
      corpus.valid = std::move(text.valid);
    }
  } catch (const DataError &e) {
    throw TrainError(e.what());
  }
  if (corpus.vocabSize > desc.vocab)
    throw TrainError(o.data + ": " +
                     (tokens ? "vocab_size " + std::to_string(corpus.vocabSize) + " exceeds"
                             : std::to_string(corpus.vocabSize) + " distinct characters exceed") +
                     " the model's vocab " + std::to_string(desc.vocab) + " (" + o.model + ")");

  Programs programs;
  compilePrograms(programs, desc);
  ParameterLayout layout = buildParameterLayout(desc);
  WorkspaceLayout ws = planWorkspace(layout);
  TrainState state = TrainState::fresh(desc, ws, o.seed);
  const TrainState::RunKey key{o.seed, sequences, o.microBatches,
                               TrainState::dataFingerprint(corpus.train)};
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

  LMBatcher batcher(corpus.train, seqLen, sequences, o.seed);
  batcher.skip(state.step * o.microBatches);
  Interpreter interpreter(reference::Precision::F32);
  ProgressReporter report(o.outDir + "/metrics.jsonl",
                          /*resumeAfter=*/o.resume ? state.step : -1,
                          o.progress, o.steps);
  InterruptGuard interrupt;

  auto evaluate = [&]() {
    std::map<std::string, HostTensor> params = state.computeParameters(
        desc, ws, computeType(desc.dtype));
    double sum = 0;
    int64_t count = 0;
    TokenBatch b;
    for (int64_t k = 0; k < o.evalBatches &&
                        LMBatcher::sequentialBatch(corpus.valid, seqLen,
                                                   sequences, k, b);
         ++k) {
      std::map<std::string, HostTensor> named = params;
      for (auto &[name, t] : batchInputs(b))
        named[name] = t;
      std::vector<HostTensor> args;
      appendNamed(args, programs.forward, 0, named);
      sum += interpreter.run(programs.forward, args)[0].floats[0] * b.numTokens();
      count += b.numTokens();
    }
    return sum / static_cast<double>(count);
  };

  TrainResult result;
  while (state.step < o.steps) {
    auto stepStart = Clock::now();
    HostTensor grads = HostTensor::zeros(ElementType::F32, {ws.totalElements});
    double loss = 0;
    int64_t tokens = 0;
    for (int64_t micro = 0; micro < o.microBatches; ++micro) {
      TokenBatch batch = batcher.next();
      std::map<std::string, HostTensor> named = batchInputs(batch);
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
      tokens += batch.numTokens();
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
                static_cast<double>(tokens) / seconds, finite);
    result.lastLoss = loss;

    double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
    bool outOfTime = o.timeLimitSeconds > 0 && elapsed >= o.timeLimitSeconds;
    bool last = state.step == o.steps || outOfTime;
    if (o.evalInterval && (state.step % o.evalInterval == 0 || last)) {
      result.lastValidLoss = evaluate();
      report.validation(state.step, result.lastValidLoss);
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
