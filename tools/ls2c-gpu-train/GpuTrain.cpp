//===- GpuTrain.cpp - train a described model on the GPU from its bundles -===//
//
// ls2c-gpu-train TRAIN.ls2b --eval EVAL.ls2b --data DATA --steps N [...]
// (GpuTrainOptions.h lists the options)
//
// The GPU twin of `ls2c train` (lib/Trainer/Trainer.cpp) for every
// architecture, with the compiled program instead of the reference
// interpreter. TRAIN.ls2b is the model's bundle (`ls2c compile MODEL.json
// --arch=sm_90 -o TRAIN.ls2b`); its @accumulate_gradients (per micro-batch)
// and @optimizer_step run every step, the training state (fp32 master
// weights, gradients, both Adam moments, step, loss scale) staying on the
// device. EVAL.ls2b is the dropout-free @forward (`ls2c compile MODEL.json
// --program=eval`): it computes the validation loss, and the logits that the
// accuracy of encoder, encoder_decoder and vit models is scored from, from
// the master weights cast to the compute dtype on the host (as the CPU
// trainer evaluates with its dropout-free module; Bundles.h).
//
// The data are exactly `ls2c train`'s (TrainingData.h, loadTrainingData with
// the same options and seed): the micro-batches in the same order, the same
// validation batches; the dropout seed is --seed and the dropout offset the
// micro-batch index. Batches are encoded on a second thread while the GPU
// runs the previous step. Metrics are JSON lines as `ls2c train` writes them
// (a step line per step, a valid_loss line per evaluation, with
// valid_accuracy for the three classifying architectures) and a final
// summary line; train tokens/s counts the wall clock of the training steps
// only (each synchronized), not evaluation or startup. --save writes the
// final checkpoint in `ls2c train`'s format (Checkpoint.h). Both executors
// replay CUDA graphs (the calls' buffers repeat every other step; the first
// steps capture them) unless --no-graphs. fp16/bf16 attention runs where
// --attention says (auto by default with cuDNN: per shape the faster of
// cuDNN and the generated kernels; Executor.h). No MLIR: it runs on the GPU
// machine.
//
//===----------------------------------------------------------------------===//

#include "Batches.h"
#include "Bundles.h"
#include "GpuTrainOptions.h"
#include "ProgramRunner.h"

#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Model/ParameterLayout.h"
#include "ls2c/Runtime/Bundle.h"
#include "ls2c/Runtime/DeviceTensors.h"
#include "ls2c/Runtime/Executor.h"
#include "ls2c/Trainer/Checkpoint.h"
#include "ls2c/Trainer/PredictionScore.h"
#include "ls2c/Trainer/TrainingData.h"
#include "ls2c/Training/Workspace.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

using namespace ls2c::runtime;
using namespace ls2c::gputrain;
using Clock = std::chrono::steady_clock;

namespace {

class Metrics {
public:
  explicit Metrics(const std::string &path) {
    if (path.empty())
      return;
    file.open(path, std::ios::trunc);
    if (!file)
      throw InputError("cannot write metrics file '" + path + "'");
  }
  void write(const nlohmann::json &line) {
    if (file.is_open())
      file << line.dump() << '\n' << std::flush;
  }

private:
  std::ofstream file;
};

/// What one evaluation measured (as the CPU trainer's Evaluation).
struct Evaluation {
  int64_t scored = 0; ///< labels that carry a loss (0: nothing to report)
  double loss = 0;    ///< mean over them
  ls2c::PredictionScore predictions;
};

int run(const Options &o) {
  auto started = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };

  // The bundles, then the data their description trains on, all before the
  // GPU is touched.
  Bundles bundles = loadBundles(o.bundle, o.evalBundle);
  const ls2c::ModelDescription desc = bundles.desc;
  const bool classifies = !ls2c::isCausalLM(desc.architecture);
  if (!std::filesystem::exists(o.data.data))
    throw InputError(o.data.data + ": no such file");
  std::unique_ptr<ls2c::TrainingData> data;
  ls2c::InputBatch first;
  try {
    data = ls2c::loadTrainingData(o.data, desc);
    if (!data->validBatch(0, first))
      throw InputError(o.data.validData.empty() ? o.data.data : o.data.validData +
                       ": no validation batch (use more validation data)");
  } catch (const ls2c::TrainError &e) {
    throw InputError(e.what());
  }
  std::set<std::string> provided;
  for (const auto &[name, t] : first.inputs)
    provided.insert(name);
  const Function &accumulateSpec =
      requireDataInputs(bundles.train, o.bundle, "accumulate_gradients", provided, desc);
  requireDataInputs(bundles.eval, o.evalBundle, "forward", provided, desc);
  const int64_t ignored = data->ignoredLabel();
  const int64_t micro = o.data.microBatches;

  // The seeded master weights, laid out as the bundle says.
  ls2c::ParameterLayout layout = ls2c::buildParameterLayout(desc);
  ls2c::WorkspaceLayout ws = ls2c::planWorkspace(layout);
  if (static_cast<uint64_t>(ws.totalElements) != bundles.train.workspaceElements)
    throw InputError(o.bundle + ": workspace of " +
                     std::to_string(bundles.train.workspaceElements) +
                     " elements, but its description plans " +
                     std::to_string(ws.totalElements));
  for (const ParameterSlot &slot : bundles.train.parameters) {
    const ls2c::WorkspaceSlot *w = ws.find(slot.name);
    if (!w || static_cast<uint64_t>(w->offset) != slot.offset || w->spec->shape != slot.shape)
      throw InputError(o.bundle + ": parameter '" + slot.name +
                       "' is not where its description places it");
  }
  std::vector<float> master = ls2c::initializeWorkspace(ws, o.data.seed);

  ProgramRunner train(std::move(bundles.train));
  ProgramRunner eval(std::move(bundles.eval));
  train.executor.setGraphs(o.graphs);
  eval.executor.setGraphs(o.graphs);
  train.executor.setAttentionBackend(o.attention);
  eval.executor.setAttentionBackend(o.attention);
  const Program &program = train.executor.program();
  std::printf("%s: model %s (%s), %zu parameters, %zu kernels on %s; eval %s\n",
              o.bundle.c_str(), program.modelName.c_str(), program.computeDType.c_str(),
              static_cast<size_t>(ws.totalElements), program.kernels.size(),
              train.executor.arch().c_str(), o.evalBundle.c_str());
  std::printf("%s: %s\n", o.data.data.c_str(), data->summary().c_str());
  std::fflush(stdout);

  // The training state on the device.
  std::map<std::string, DeviceTensor> state;
  std::vector<int64_t> wsShape = {static_cast<int64_t>(program.workspaceElements)};
  size_t wsBytes = program.workspaceElements * 4;
  state["master_weights"] = uploadFloats(master, wsShape, "master_weights");
  std::vector<float>().swap(master); // on the device now: free the host copy
  for (const char *name : {"gradients", "exp_avg", "exp_avg_sq"})
    state[name] = zeroTensor(wsShape, DType::F32, wsBytes, name);
  state["loss_scale"] =
      uploadTensor({program.computeDType == "f16" ? 65536.0 : 1.0}, {}, DType::F32, 8, "loss scale");
  state["step"] = uploadTensor({0}, {}, DType::I64, 8, "step");
  state["good_steps"] = uploadTensor({0}, {}, DType::I64, 8, "good steps");

  std::map<std::string, DeviceTensor> trainInputs, evalInputs;
  trainInputs["micro_batches"] =
      uploadTensor({static_cast<double>(micro)}, {}, DType::F32, 8, "micro batches");
  trainInputs["dropout_seed"] =
      uploadTensor({static_cast<double>(o.data.seed)}, {}, DType::I64, 8, "dropout seed");
  trainInputs["dropout_offset"] = uploadTensor({0}, {}, DType::I64, 8, "dropout offset");
  evalInputs["dropout_seed"] = uploadTensor({0}, {}, DType::I64, 8, "dropout seed");
  evalInputs["dropout_offset"] = uploadTensor({0}, {}, DType::I64, 8, "dropout offset");
  uploadBuffers(accumulateSpec, trainInputs);
  const Function &forward = eval.executor.function("forward");
  uploadBuffers(forward, evalInputs);
  std::map<std::string, DeviceTensor> noState;

  // Validation: the master weights cast to the compute dtype on the host,
  // @forward over the validation batches, the mean loss per scored label.
  auto evaluate = [&]() {
    std::vector<float> current(program.workspaceElements);
    state.at("master_weights").buffer.download(current.data(), wsBytes);
    if (std::string bad = uploadWeights(forward, ws, current, evalInputs); !bad.empty())
      throw InputError(o.evalBundle + ": @forward parameter '" + bad +
                       "' is not a parameter of " + o.bundle + " with its shape");
    Evaluation e;
    double sum = 0;
    ls2c::InputBatch b;
    for (int64_t k = 0; (o.evalBatches == 0 || k < o.evalBatches) && data->validBatch(k, b);
         ++k) {
      EncodedBatch batch = encodeBatch(b, forward, ignored);
      uploadBatch(batch, forward, evalInputs);
      auto &out = eval.call("forward", noState, evalInputs);
      sum += downloadTensor(out.at(forward.results[0].name))[0] *
             static_cast<double>(batch.scored);
      e.scored += batch.scored;
      if (classifies)
        scoreLogits(out.at("logits"), batch.labels, ignored, e.predictions);
    }
    if (e.scored > 0)
      e.loss = sum / static_cast<double>(e.scored);
    return e;
  };

  Metrics metrics(o.metrics);
  double validLoss = NAN, validAccuracy = NAN;
  auto validation = [&](int64_t step) {
    auto t0 = Clock::now();
    Evaluation e = evaluate();
    double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (e.scored == 0) {
      // A tiny validation set can leave no label with a loss (no masked
      // token): say so rather than report a loss of 0, as ls2c train does.
      std::fprintf(stderr, "ls2c-gpu-train: warning: step %lld: the validation batches have no "
                           "label that carries a loss; nothing to report (use more validation "
                           "data)\n",
                   static_cast<long long>(step));
      return;
    }
    validLoss = e.loss;
    nlohmann::json line = {{"step", step},
                           {"valid_loss", e.loss},
                           {"eval_seconds", seconds},
                           {"elapsed_seconds", elapsed()}};
    if (classifies) {
      validAccuracy = e.predictions.accuracy();
      line["valid_accuracy"] = validAccuracy;
      if (desc.label_smoothing > 0)
        line["valid_nll_loss"] = e.predictions.nll / static_cast<double>(e.scored);
      std::printf("step %lld: validation loss %.4f, accuracy %.4f (%.2f s)\n",
                  static_cast<long long>(step), e.loss, validAccuracy, seconds);
    } else {
      std::printf("step %lld: validation loss %.4f (%.2f s)\n", static_cast<long long>(step),
                  e.loss, seconds);
    }
    metrics.write(line);
    std::fflush(stdout);
  };

  validation(0);
  // Micro-batch i of the run is TrainingData's i-th: encoded on a second
  // thread while the GPU runs the one before.
  data->seek(0);
  auto fetch = [&] { return encodeBatch(data->next(), accumulateSpec, ignored); };
  std::future<EncodedBatch> pending = std::async(std::launch::async, fetch);
  double trainSeconds = 0, steadySeconds = 0;
  int64_t trainTokens = 0, steadyTokens = 0, step = 0, skipped = 0;
  const int64_t warmupSteps = std::min<int64_t>(10, o.steps / 10);
  double smoothed = 0;
  while (step < o.steps) {
    auto t0 = Clock::now();
    state.at("gradients").buffer.fill(0);
    double loss = 0;
    int64_t tokens = 0, dropped = 0;
    for (int64_t m = 0; m < micro; ++m) {
      EncodedBatch batch = pending.get();
      dropped += batch.droppedLabels;
      pending = std::async(std::launch::async, fetch);
      uploadBatch(batch, accumulateSpec, trainInputs);
      int64_t offset = step * micro + m;
      trainInputs.at("dropout_offset").buffer.upload(&offset, 8);
      auto &acc = train.call("accumulate_gradients", state, trainInputs);
      loss += downloadTensor(acc.at("loss"))[0] / static_cast<double>(micro);
      tokens += batch.tokens;
    }
    auto &opt = train.call("optimizer_step", state, trainInputs);
    double gradNorm = downloadTensor(opt.at("grad_norm"))[0];
    double lr = downloadTensor(opt.at("lr"))[0];
    bool finite = downloadTensor(opt.at("finite"))[0] != 0;
    double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    ++step;
    skipped += !finite;
    trainSeconds += seconds;
    trainTokens += tokens;
    if (step > warmupSteps) {
      steadySeconds += seconds;
      steadyTokens += tokens;
    }
    double tokensPerSecond = static_cast<double>(tokens) / seconds;
    nlohmann::json stepLine = {{"step", step},
                               {"loss", loss},
                               {"lr", lr},
                               {"grad_norm", std::isfinite(gradNorm) ? gradNorm : -1.0},
                               {"tokens_per_second", tokensPerSecond},
                               {"step_seconds", seconds},
                               {"finite", finite},
                               {"elapsed_seconds", elapsed()}};
    // Labels the masked-LM data left out to stay within max_predictions.
    if (desc.max_predictions > 0)
      stepLine["dropped_labels"] = dropped;
    metrics.write(stepLine);
    smoothed = 0.9 * smoothed + 0.1 * loss;
    if (step == 1)
      smoothed = loss;
    bool outOfTime = o.timeLimit > 0 && trainSeconds >= o.timeLimit;
    bool last = step == o.steps || outOfTime;
    if (step % o.logInterval == 0 || step == 1 || last) {
      std::printf("step %lld/%lld: loss %.4f (smoothed %.4f), lr %.3g, grad norm %.3f, "
                  "%.1f ms/step, %.0f tok/s\n",
                  static_cast<long long>(step), static_cast<long long>(o.steps), loss, smoothed,
                  lr, gradNorm, seconds * 1e3, tokensPerSecond);
      std::fflush(stdout);
    }
    if ((o.evalInterval && step % o.evalInterval == 0) || last)
      validation(step);
    if (outOfTime) {
      std::printf("stopping after step %lld: --time-limit %.0f s of training reached\n",
                  static_cast<long long>(step), o.timeLimit);
      break;
    }
  }

  if (!o.save.empty()) {
    // The final state in `ls2c train`'s checkpoint format (Checkpoint.h).
    auto download = [&](const char *name) {
      std::vector<float> v(program.workspaceElements);
      state.at(name).buffer.download(v.data(), wsBytes);
      return v;
    };
    std::vector<float> weights = download("master_weights"), expAvg = download("exp_avg"),
                       expAvgSq = download("exp_avg_sq");
    ls2c::CheckpointCounters counters;
    counters.step = step;
    counters.appliedSteps = static_cast<int64_t>(downloadTensor(state.at("step"))[0]);
    counters.goodSteps = static_cast<int64_t>(downloadTensor(state.at("good_steps"))[0]);
    counters.lossScale = downloadTensor(state.at("loss_scale"))[0];
    try {
      ls2c::writeCheckpoint(o.save, desc, ws, weights.data(), expAvg.data(), expAvgSq.data(),
                            counters,
                            {o.data.seed, data->batchSequences(), micro, data->fingerprint(),
                             data->vocabulary()});
    } catch (const ls2c::TrainError &e) {
      throw InputError(std::string("--save: ") + e.what());
    }
    std::printf("checkpoint: %s (step %lld)\n", o.save.c_str(), static_cast<long long>(step));
  }

  double tokensPerSecond = static_cast<double>(trainTokens) / trainSeconds;
  double steadyTokensPerSecond =
      steadySeconds > 0 ? static_cast<double>(steadyTokens) / steadySeconds : tokensPerSecond;
  double total = elapsed();
  GraphStats graphs = train.executor.graphStats();
  nlohmann::json summary = {{"final", true},
                            {"steps", step},
                            {"skipped_steps", skipped},
                            {"valid_loss", validLoss},
                            {"valid_perplexity", std::exp(validLoss)},
                            {"train_tokens", trainTokens},
                            {"train_seconds", trainSeconds},
                            {"train_tokens_per_second", tokensPerSecond},
                            {"steady_tokens_per_second", steadyTokensPerSecond},
                            {"mean_step_ms", trainSeconds / static_cast<double>(step) * 1e3},
                            {"total_seconds", total},
                            {"device", train.executor.arch()},
                            {"model", program.modelName},
                            {"architecture", std::string(ls2c::toString(desc.architecture))},
                            {"graphs", o.graphs},
                            {"graph_captures", graphs.captures},
                            {"graph_replays", graphs.replays},
                            {"step_by_step_runs", graphs.eagerRuns}};
  if (ls2c::isCausalLM(desc.architecture))
    summary["batch_tokens"] = data->batchSequences() * desc.max_seq_len;
  if (classifies)
    summary["valid_accuracy"] = validAccuracy;
  metrics.write(summary);
  std::printf("final: %lld steps, validation loss %.4f (perplexity %.2f), train %.1f s, %.0f "
              "train tokens/s (%.0f after %lld warm-up steps), %.1f ms/step, total %.1f s",
              static_cast<long long>(step), validLoss, std::exp(validLoss), trainSeconds,
              tokensPerSecond, steadyTokensPerSecond, static_cast<long long>(warmupSteps),
              trainSeconds / static_cast<double>(step) * 1e3, total);
  if (classifies)
    std::printf(", validation accuracy %.4f", validAccuracy);
  std::printf("\nCUDA graphs %s (train program): %llu captured, %llu replayed, %llu runs step "
              "by step\n",
              o.graphs ? "on" : "off", static_cast<unsigned long long>(graphs.captures),
              static_cast<unsigned long long>(graphs.replays),
              static_cast<unsigned long long>(graphs.eagerRuns));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  try {
    if (!parseOptions(argc, argv, o)) {
      std::fputs(kUsage, stdout);
      return 0;
    }
  } catch (const InputError &e) {
    std::fprintf(stderr, "ls2c-gpu-train: error: %s\n%s", e.what(), kUsage);
    return 2;
  }
  try {
    return run(o);
  } catch (const InputError &e) {
    std::fprintf(stderr, "ls2c-gpu-train: error: %s\n", e.what());
    return 2;
  } catch (const BundleError &e) {
    std::fprintf(stderr, "ls2c-gpu-train: error: %s\n", e.what());
    return 2;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ls2c-gpu-train: error: %s\n", e.what());
    return 1;
  }
}
