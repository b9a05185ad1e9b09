//===- GpuTrain.cpp - train a decoder LM on a text corpus on the GPU ------===//
//
// ls2c-gpu-train TRAIN.ls2b --eval EVAL.ls2b --data (input.txt | TRAIN.tok
//                [--valid-data VALID.tok]) --steps N
//                [--batch-sequences B] [--eval-interval K] [--eval-batches E]
//                [--seed S] [--metrics metrics.jsonl] [--log-interval M]
//                [--time-limit SECONDS] [--no-graphs] [--attention B]
//
// The GPU twin of `ls2c train` (lib/Trainer/Trainer.cpp) for decoder models
// on character corpora or token files (ls2c tokenize; TokenCorpus.h), with
// the compiled program instead of the reference interpreter. TRAIN.ls2b is the model's bundle (`ls2c compile MODEL.json
// --arch=sm_90 -o TRAIN.ls2b`); its @accumulate_gradients and
// @optimizer_step run every step, the training state (fp32 master weights,
// gradients, both Adam moments, step, loss scale) staying on the device.
// EVAL.ls2b is the same description compiled with every dropout rate 0: its
// @forward computes the validation loss from the master weights cast to the
// compute dtype on the host (as the CPU trainer evaluates with its dropout-
// free module). The data are those of `ls2c train`: the corpus's first 90%
// trains with random windows of max_seq_len (LMBatcher seeded with --seed),
// the rest validates in sequential windows; the dropout seed is --seed and
// the dropout offset the step index. Metrics are JSON lines as `ls2c train`
// writes them (a step line per step, a valid_loss line per evaluation) and a
// final summary line; train tokens/s counts the wall clock of the training
// steps only (each synchronized), not evaluation or startup. Both executors
// replay CUDA graphs (the calls' buffers repeat every other step; the first
// steps capture them) unless --no-graphs. fp16/bf16 attention runs where
// --attention says (auto by default with cuDNN: per shape the faster of
// cuDNN and the generated kernels; Executor.h). No MLIR: it runs on the GPU
// machine.
//
//===----------------------------------------------------------------------===//

#include "DeviceTensors.h"

#include "ls2c/Data/CharCorpus.h"
#include "ls2c/Data/LMBatcher.h"
#include "ls2c/Data/TokenCorpus.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Model/ParameterLayout.h"
#include "ls2c/Runtime/Bundle.h"
#include "ls2c/Runtime/Executor.h"
#include "ls2c/Training/Workspace.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

using namespace ls2c::runtime;
using namespace ls2c::tools;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string bundle, evalBundle, data, validData, metrics;
  int64_t steps = 0;
  int64_t batchSequences = 0; ///< 0: max_batch_tokens / max_seq_len
  int64_t evalInterval = 0;   ///< 0: evaluate only before and after training
  int64_t evalBatches = 0;    ///< 0: the whole validation split
  int64_t logInterval = 50;
  uint64_t seed = 1;
  double timeLimit = 0; ///< seconds of training; 0 = none
  bool graphs = true;   ///< the executors' CUDA graphs (--no-graphs)
  /// --attention; auto when this build has cuDNN.
  AttentionBackend attention =
      cudnnAttentionAvailable() ? AttentionBackend::Auto : AttentionBackend::Kernels;
};

/// A usage or input problem (exit status 2).
class InputError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

const char *kBatchInputs[] = {"input_ids", "position_ids", "cu_seqlens", "labels"};

/// The function `name` of `program`, or an InputError naming the bundle.
const Function &requireFunction(const Program &program, const std::string &bundle,
                                const std::string &name) {
  for (const Function &f : program.functions)
    if (f.name == name)
      return f;
  throw InputError(bundle + ": has no @" + name + " (not a training bundle of ls2c compile)");
}

/// Checks that `f` takes the packed batch inputs as int32 and no other input
/// than `allowed`.
void requireBatchInputs(const Function &f, const std::string &bundle,
                        const std::set<std::string> &allowed) {
  std::set<std::string> seen;
  for (const TensorSpec &s : f.arguments) {
    if (s.kind != ArgumentKind::Input)
      continue;
    bool batch = std::find(std::begin(kBatchInputs), std::end(kBatchInputs), s.name) !=
                 std::end(kBatchInputs);
    if (batch) {
      if (s.dtype != DType::I32 || s.maxShape.size() != 1)
        throw InputError(bundle + ": @" + f.name + " input '" + s.name +
                         "' is not a 1-d int32 tensor");
      seen.insert(s.name);
    } else if (!allowed.count(s.name)) {
      throw InputError(bundle + ": @" + f.name + " takes input '" + s.name +
                       "', which a causal language model on packed text does not have");
    }
  }
  for (const char *name : kBatchInputs)
    if (!seen.count(name))
      throw InputError(bundle + ": @" + f.name + " lacks the input '" + name +
                       "' of a causal language model");
}

/// The description with everything that must agree between the train and the
/// eval bundle: all but the name, the dropout rates and the optimizer (which
/// @forward does not use; the eval bundle need not share the schedule).
nlohmann::json comparable(ls2c::ModelDescription d) {
  d.name.clear();
  d.hidden_dropout = d.attention_dropout = d.activation_dropout = 0;
  d.optimizer = ls2c::OptimizerConfig{};
  return ls2c::toJson(d);
}

/// Runs the functions of one program, binding arguments and results by name.
struct Runner {
  Executor executor;
  /// Per function, persistent buffers for results that are not state.
  std::map<std::string, std::map<std::string, DeviceTensor>> outputs;
  /// Spare buffers for state results (swapped with the state after a call).
  std::map<std::string, DeviceTensor> spare;

  explicit Runner(Program p) : executor(std::move(p)) {}

  /// Calls `name`: arguments from `state` then `inputs`; results named like
  /// state replace it (in place, or their old buffers become the spares:
  /// adoptResults); other results
  /// land in outputs[name]. Synchronizes.
  std::map<std::string, DeviceTensor> &call(const std::string &name,
                                            std::map<std::string, DeviceTensor> &state,
                                            std::map<std::string, DeviceTensor> &inputs) {
    const Function &f = executor.function(name);
    Executor::Call c = bindArguments(f, state, inputs);
    std::map<std::string, DeviceTensor> &out = outputs[name];
    bindResults(f, c, state, spare, out);
    executor.run(f.name, c);
    if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
      throw RuntimeError("@" + f.name + ": " + cudaGetErrorString(e));
    adoptResults(f, state, spare);
    return out;
  }
};

/// Uploads a packed batch into `inputs` (buffers sized for max shapes).
void uploadBatch(const ls2c::TokenBatch &b, const Function &f,
                 std::map<std::string, DeviceTensor> &inputs) {
  const std::map<std::string, const std::vector<int32_t> *> values = {
      {"input_ids", &b.input_ids},
      {"position_ids", &b.position_ids},
      {"cu_seqlens", &b.cu_seqlens},
      {"labels", &b.labels}};
  for (const TensorSpec &spec : f.arguments) {
    auto it = values.find(spec.name);
    if (it == values.end())
      continue;
    DeviceTensor &t = inputs[spec.name];
    if (t.buffer.size() < specBytes(spec))
      t.buffer = DeviceBuffer(specBytes(spec), spec.name);
    t.dtype = DType::I32;
    t.shape = {static_cast<int64_t>(it->second->size())};
    t.buffer.upload(it->second->data(), it->second->size() * 4);
  }
}

/// Sinusoidal tables for Buffer arguments (none for GPT-2's learned
/// positions, kept for generality).
void uploadBuffers(const Function &f, std::map<std::string, DeviceTensor> &inputs) {
  for (const TensorSpec &spec : f.arguments) {
    if (spec.kind != ArgumentKind::Buffer || inputs.count(spec.name))
      continue;
    if (spec.maxShape.size() != 2)
      throw RuntimeError("buffer '" + spec.name + "' is not a 2-d table");
    // Rounded to fp32 first, as the CPU reference does.
    std::vector<double> table = ls2c::sinusoidalTable(spec.maxShape[0], spec.maxShape[1]);
    for (double &x : table)
      x = static_cast<float>(x);
    inputs[spec.name] = uploadTensor(table, spec.maxShape, spec.dtype, 0, spec.name);
  }
}

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

int run(const Options &o) {
  auto started = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };
  for (const std::string *path : {&o.bundle, &o.evalBundle, &o.data})
    if (!std::filesystem::is_regular_file(*path))
      throw InputError(*path + ": no such file");

  // The bundles: a decoder LM's train step and its dropout-free forward.
  Program trainProgram = readBundle(o.bundle);
  Program evalProgram = readBundle(o.evalBundle);
  ls2c::ModelDescription desc, evalDesc;
  try {
    desc = ls2c::parseModelDescription(trainProgram.description, o.bundle);
    evalDesc = ls2c::parseModelDescription(evalProgram.description, o.evalBundle);
  } catch (const ls2c::DescriptionError &e) {
    throw InputError(e.what());
  }
  if (desc.architecture != ls2c::Architecture::Decoder)
    throw InputError(o.bundle + ": model '" + trainProgram.modelName + "' is a '" +
                     std::string(ls2c::toString(desc.architecture)) +
                     "' model; ls2c-gpu-train trains decoder language models");
  if (comparable(desc) != comparable(evalDesc))
    throw InputError(o.evalBundle + ": model '" + evalProgram.modelName +
                     "' is not the description of " + o.bundle +
                     " with other dropout rates");
  if (evalDesc.hidden_dropout != 0 || evalDesc.attention_dropout != 0 ||
      evalDesc.activation_dropout != 0)
    throw InputError(o.evalBundle + ": the evaluation bundle must be compiled with every "
                                    "dropout rate 0");
  const Function &accumulateSpec = requireFunction(trainProgram, o.bundle, "accumulate_gradients");
  requireFunction(trainProgram, o.bundle, "optimizer_step");
  const Function &forwardSpec = requireFunction(evalProgram, o.evalBundle, "forward");
  requireBatchInputs(accumulateSpec, o.bundle, {"dropout_seed", "dropout_offset"});
  requireBatchInputs(forwardSpec, o.evalBundle, {"dropout_seed", "dropout_offset"});
  if (forwardSpec.results.empty() || !forwardSpec.results[0].maxShape.empty())
    throw InputError(o.evalBundle + ": @forward does not return a scalar loss");

  int64_t seqLen = desc.max_seq_len;
  int64_t sequences = o.batchSequences ? o.batchSequences : desc.max_batch_tokens / seqLen;
  int64_t batchTokens = 0;
  if (sequences < 1 || __builtin_mul_overflow(sequences, seqLen, &batchTokens) ||
      batchTokens > desc.max_batch_tokens)
    throw InputError("--batch-sequences " + std::to_string(sequences) + " x " +
                     std::to_string(seqLen) + " tokens exceeds max_batch_tokens " +
                     std::to_string(desc.max_batch_tokens) + " of " + o.bundle);

  // A token file (ls2c tokenize) with its own validation file or split as a
  // text is, or a text read character by character.
  struct {
    std::vector<int32_t> train, valid;
    int64_t vocabSize = 0;
  } corpus;
  try {
    if (ls2c::isTokenFile(o.data)) {
      ls2c::TokenCorpus tokens = ls2c::loadTokenCorpus(o.data, o.validData, 0.9, seqLen + 1);
      corpus.train = std::move(tokens.train);
      corpus.valid = std::move(tokens.valid);
      corpus.vocabSize = tokens.vocabSize;
    } else {
      if (!o.validData.empty())
        throw InputError("--valid-data " + o.validData + ": needs --data to be a token file "
                         "(ls2c tokenize); a text corpus validates on its last 10%");
      ls2c::CharCorpus chars = ls2c::loadCharCorpus(o.data, 0.9, seqLen + 1);
      corpus.train = std::move(chars.train);
      corpus.valid = std::move(chars.valid);
      corpus.vocabSize = chars.vocabSize();
    }
  } catch (const ls2c::DataError &e) {
    throw InputError(e.what());
  }
  if (corpus.vocabSize > desc.vocab)
    throw InputError(o.data + ": a vocabulary of " + std::to_string(corpus.vocabSize) +
                     " ids exceeds the model's vocab " + std::to_string(desc.vocab) + " (" +
                     o.bundle + ")");

  // The seeded master weights, laid out as the bundle says.
  ls2c::ParameterLayout layout = ls2c::buildParameterLayout(desc);
  ls2c::WorkspaceLayout ws = ls2c::planWorkspace(layout);
  if (static_cast<uint64_t>(ws.totalElements) != trainProgram.workspaceElements)
    throw InputError(o.bundle + ": workspace of " +
                     std::to_string(trainProgram.workspaceElements) +
                     " elements, but its description plans " +
                     std::to_string(ws.totalElements));
  for (const ParameterSlot &slot : trainProgram.parameters) {
    const ls2c::WorkspaceSlot *w = ws.find(slot.name);
    if (!w || static_cast<uint64_t>(w->offset) != slot.offset || w->spec->shape != slot.shape)
      throw InputError(o.bundle + ": parameter '" + slot.name +
                       "' is not where its description places it");
  }
  std::vector<float> master = ls2c::initializeWorkspace(ws, o.seed);

  Runner train(std::move(trainProgram));
  Runner eval(std::move(evalProgram));
  train.executor.setGraphs(o.graphs);
  eval.executor.setGraphs(o.graphs);
  train.executor.setAttentionBackend(o.attention);
  eval.executor.setAttentionBackend(o.attention);
  const Program &program = train.executor.program();
  std::printf("%s: model %s (%s), %zu parameters, %zu kernels on %s; eval %s\n",
              o.bundle.c_str(), program.modelName.c_str(), program.computeDType.c_str(),
              static_cast<size_t>(ws.totalElements), program.kernels.size(),
              train.executor.arch().c_str(), o.evalBundle.c_str());
  std::printf("%s: %lld training and %lld validation tokens, vocab %lld; batch %lld x %lld "
              "tokens\n",
              o.data.c_str(), static_cast<long long>(corpus.train.size()),
              static_cast<long long>(corpus.valid.size()),
              static_cast<long long>(corpus.vocabSize), static_cast<long long>(sequences),
              static_cast<long long>(seqLen));
  std::fflush(stdout);

  // The training state on the device.
  std::map<std::string, DeviceTensor> state;
  std::vector<int64_t> wsShape = {static_cast<int64_t>(program.workspaceElements)};
  size_t wsBytes = program.workspaceElements * 4;
  auto workspace = [&](const std::string &name, const float *init) {
    DeviceTensor &t = state[name];
    t.buffer = DeviceBuffer(wsBytes, name);
    t.shape = wsShape;
    t.dtype = DType::F32;
    if (init)
      t.buffer.upload(init, wsBytes);
    else
      t.buffer.fill(0);
  };
  workspace("master_weights", master.data());
  workspace("gradients", nullptr);
  workspace("exp_avg", nullptr);
  workspace("exp_avg_sq", nullptr);
  state["loss_scale"] =
      uploadTensor({program.computeDType == "f16" ? 65536.0 : 1.0}, {}, DType::F32, 8, "loss scale");
  state["step"] = uploadTensor({0}, {}, DType::I64, 8, "step");
  state["good_steps"] = uploadTensor({0}, {}, DType::I64, 8, "good steps");

  std::map<std::string, DeviceTensor> trainInputs, evalInputs;
  trainInputs["micro_batches"] = uploadTensor({1}, {}, DType::F32, 8, "micro batches");
  trainInputs["dropout_seed"] = uploadTensor({static_cast<double>(o.seed)}, {}, DType::I64, 8, "dropout seed");
  trainInputs["dropout_offset"] = uploadTensor({0}, {}, DType::I64, 8, "dropout offset");
  evalInputs["dropout_seed"] = uploadTensor({0}, {}, DType::I64, 8, "dropout seed");
  evalInputs["dropout_offset"] = uploadTensor({0}, {}, DType::I64, 8, "dropout offset");
  uploadBuffers(accumulateSpec, trainInputs);
  const Function &forward = eval.executor.function("forward");
  uploadBuffers(forward, evalInputs);
  std::map<std::string, DeviceTensor> noState;

  // Validation: the master weights cast to the compute dtype on the host,
  // @forward over sequential windows, the mean loss per token.
  std::vector<uint8_t> bytes;
  auto evaluate = [&]() {
    std::vector<float> current(program.workspaceElements);
    state.at("master_weights").buffer.download(current.data(), wsBytes);
    for (const TensorSpec &spec : forward.arguments) {
      if (spec.kind != ArgumentKind::Parameter)
        continue;
      const ls2c::WorkspaceSlot *slot = ws.find(spec.name);
      if (!slot || slot->spec->shape != spec.maxShape)
        throw InputError(o.evalBundle + ": @forward parameter '" + spec.name +
                         "' is not a parameter of " + o.bundle + " with its shape");
      bytes = encodeValues(std::vector<double>(current.begin() + slot->offset,
                                               current.begin() + slot->offset + slot->numel),
                           spec.dtype);
      DeviceTensor &t = evalInputs[spec.name];
      if (t.buffer.size() < bytes.size())
        t.buffer = DeviceBuffer(bytes.size(), spec.name);
      t.buffer.upload(bytes.data(), bytes.size());
      t.shape = spec.maxShape;
      t.dtype = spec.dtype;
    }
    double sum = 0;
    int64_t count = 0;
    ls2c::TokenBatch b;
    for (int64_t k = 0;
         (o.evalBatches == 0 || k < o.evalBatches) &&
         ls2c::LMBatcher::sequentialBatch(corpus.valid, seqLen, sequences, k, b);
         ++k) {
      uploadBatch(b, forward, evalInputs);
      auto &out = eval.call("forward", noState, evalInputs);
      sum += downloadTensor(out.at(forward.results[0].name))[0] * static_cast<double>(b.numTokens());
      count += b.numTokens();
    }
    return sum / static_cast<double>(count);
  };

  Metrics metrics(o.metrics);
  auto validation = [&](int64_t step) {
    auto t0 = Clock::now();
    double loss = evaluate();
    double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    metrics.write({{"step", step},
                   {"valid_loss", loss},
                   {"eval_seconds", seconds},
                   {"elapsed_seconds", elapsed()}});
    std::printf("step %lld: validation loss %.4f (%.2f s)\n", static_cast<long long>(step), loss,
                seconds);
    std::fflush(stdout);
    return loss;
  };

  double validLoss = validation(0);
  ls2c::LMBatcher batcher(corpus.train, seqLen, sequences, o.seed);
  double trainSeconds = 0, steadySeconds = 0;
  int64_t trainTokens = 0, steadyTokens = 0, step = 0, skipped = 0;
  const int64_t warmupSteps = std::min<int64_t>(10, o.steps / 10);
  double smoothed = 0;
  while (step < o.steps) {
    auto t0 = Clock::now();
    ls2c::TokenBatch batch = batcher.next();
    uploadBatch(batch, accumulateSpec, trainInputs);
    int64_t offset = step;
    trainInputs.at("dropout_offset").buffer.upload(&offset, 8);
    state.at("gradients").buffer.fill(0);
    auto &acc = train.call("accumulate_gradients", state, trainInputs);
    double loss = downloadTensor(acc.at("loss"))[0];
    auto &opt = train.call("optimizer_step", state, trainInputs);
    double gradNorm = downloadTensor(opt.at("grad_norm"))[0];
    double lr = downloadTensor(opt.at("lr"))[0];
    bool finite = downloadTensor(opt.at("finite"))[0] != 0;
    double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    ++step;
    skipped += !finite;
    trainSeconds += seconds;
    trainTokens += batch.numTokens();
    if (step > warmupSteps) {
      steadySeconds += seconds;
      steadyTokens += batch.numTokens();
    }
    double tokensPerSecond = static_cast<double>(batch.numTokens()) / seconds;
    metrics.write({{"step", step},
                   {"loss", loss},
                   {"lr", lr},
                   {"grad_norm", std::isfinite(gradNorm) ? gradNorm : -1.0},
                   {"tokens_per_second", tokensPerSecond},
                   {"step_seconds", seconds},
                   {"finite", finite},
                   {"elapsed_seconds", elapsed()}});
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
      validLoss = validation(step);
    if (outOfTime) {
      std::printf("stopping after step %lld: --time-limit %.0f s of training reached\n",
                  static_cast<long long>(step), o.timeLimit);
      break;
    }
  }

  double tokensPerSecond = static_cast<double>(trainTokens) / trainSeconds;
  double steadyTokensPerSecond =
      steadySeconds > 0 ? static_cast<double>(steadyTokens) / steadySeconds : tokensPerSecond;
  double total = elapsed();
  GraphStats graphs = train.executor.graphStats();
  metrics.write({{"final", true},
                 {"steps", step},
                 {"skipped_steps", skipped},
                 {"valid_loss", validLoss},
                 {"valid_perplexity", std::exp(validLoss)},
                 {"batch_tokens", batchTokens},
                 {"train_tokens", trainTokens},
                 {"train_seconds", trainSeconds},
                 {"train_tokens_per_second", tokensPerSecond},
                 {"steady_tokens_per_second", steadyTokensPerSecond},
                 {"mean_step_ms", trainSeconds / static_cast<double>(step) * 1e3},
                 {"total_seconds", total},
                 {"device", train.executor.arch()},
                 {"model", program.modelName},
                 {"graphs", o.graphs},
                 {"graph_captures", graphs.captures},
                 {"graph_replays", graphs.replays},
                 {"step_by_step_runs", graphs.eagerRuns}});
  std::printf("final: %lld steps, validation loss %.4f (perplexity %.2f), train %.1f s, %.0f "
              "train tokens/s (%.0f after %lld warm-up steps), %.1f ms/step, total %.1f s\n",
              static_cast<long long>(step), validLoss, std::exp(validLoss), trainSeconds,
              tokensPerSecond,
              steadyTokensPerSecond, static_cast<long long>(warmupSteps),
              trainSeconds / static_cast<double>(step) * 1e3, total);
  std::printf("CUDA graphs %s (train program): %llu captured, %llu replayed, %llu runs step "
              "by step\n",
              o.graphs ? "on" : "off", static_cast<unsigned long long>(graphs.captures),
              static_cast<unsigned long long>(graphs.replays),
              static_cast<unsigned long long>(graphs.eagerRuns));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  std::vector<std::string> positional;
  const char *usage =
      "usage: ls2c-gpu-train TRAIN.ls2b --eval EVAL.ls2b --data (input.txt | TRAIN.tok\n"
      "         [--valid-data VALID.tok]) --steps N\n"
      "         [--batch-sequences B] [--eval-interval K] [--eval-batches E] [--seed S]\n"
      "         [--metrics metrics.jsonl] [--log-interval M] [--time-limit SECONDS]\n"
      "         [--no-graphs] [--attention kernels|cudnn|auto]\n"
      "  --data        a text read character by character (its last 10% validates), or a\n"
      "                token file of ls2c tokenize (ids as they are)\n"
      "  --valid-data  the token file that validates (default: the last 10% of --data)\n"
      "  --no-graphs   run every step by step instead of replaying CUDA graphs\n"
      "  --attention   fp16/bf16 attention: the generated kernels, cuDNN's fused attention,\n"
      "                or auto (default with cuDNN): per shape the faster, timed once\n"
      "                and kept in attention-choices.json beside the program cache\n"
      "                ($LS2C_ATTENTION_CHOICES: another file, or off);\n"
      "                cuDNN draws its own dropout masks, so runs that use it repeat\n"
      "                bit for bit only with --attention kernels\n";
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc)
          throw InputError(a + " needs a value");
        return argv[++i];
      };
      auto integer = [&]() -> int64_t {
        std::string v = value();
        size_t used = 0;
        int64_t x = 0;
        try {
          x = std::stoll(v, &used);
        } catch (const std::exception &) {
          used = 0;
        }
        if (used != v.size() || v.empty() || x < 0)
          throw InputError(a + ": '" + v + "' is not a non-negative integer");
        return x;
      };
      if (a == "--help" || a == "-h") {
        std::fputs(usage, stdout);
        return 0;
      }
      if (a == "--eval")
        o.evalBundle = value();
      else if (a == "--data")
        o.data = value();
      else if (a == "--valid-data")
        o.validData = value();
      else if (a == "--steps")
        o.steps = integer();
      else if (a == "--batch-sequences")
        o.batchSequences = integer();
      else if (a == "--eval-interval")
        o.evalInterval = integer();
      else if (a == "--eval-batches")
        o.evalBatches = integer();
      else if (a == "--log-interval")
        o.logInterval = integer();
      else if (a == "--seed")
        o.seed = static_cast<uint64_t>(integer());
      else if (a == "--metrics")
        o.metrics = value();
      else if (a == "--time-limit")
        o.timeLimit = static_cast<double>(integer());
      else if (a == "--no-graphs")
        o.graphs = false;
      else if (a == "--attention") {
        std::string b = value();
        std::optional<AttentionBackend> backend = parseAttentionBackend(b);
        if (!backend)
          throw InputError("--attention: '" + b + "' is not kernels, cudnn or auto");
        o.attention = *backend;
      }
      else if (a.size() > 1 && a[0] == '-')
        throw InputError("unknown option " + a);
      else
        positional.push_back(a);
    }
    if (positional.size() != 1 || o.evalBundle.empty() || o.data.empty() || o.steps < 1 ||
        o.logInterval < 1)
      throw InputError("a bundle, --eval, --data and --steps >= 1 are required");
    o.bundle = positional[0];
  } catch (const InputError &e) {
    std::fprintf(stderr, "ls2c-gpu-train: error: %s\n%s", e.what(), usage);
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
