//===- TrainCommand.cpp - ls2c train MODEL.json --data FILE ---------------===//
#include "Commands.h"

#include "ls2c/Trainer/Trainer.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace ls2c::cli {

namespace {

constexpr const char *kTrainUsage =
    "usage: ls2c train MODEL.json --data DATA [data options] [--out DIR] [--steps N] "
    "[--batch-sequences N] [--micro-batches N] [--eval-interval N] "
    "[--eval-batches N] [--checkpoint-interval N] [--time-limit SECONDS] "
    "[--seed N] [--resume | --overwrite] [--no-progress] [--device auto|cpu|cuda] "
    "[--bundle TRAIN.ls2b] [--attention auto|kernels|cudnn] [--no-graphs]";

/// Parses a non-negative integer option value; "" on success.
std::string parseCount(const std::string &flag, const std::string &text,
                       int64_t &out) {
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || errno || v < 0)
    return flag + " '" + text + "' is not a non-negative integer";
  out = v;
  return "";
}

std::string parse(const std::vector<std::string> &args, TrainOptions &o, bool &overwrite) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    auto value = [&](std::string &out) -> std::string {
      if (i + 1 == args.size())
        return a + " needs a value";
      out = args[++i];
      return "";
    };
    std::string text, error;
    int64_t n = 0;
    auto count = [&](int64_t &field) -> std::string {
      if (std::string e = value(text); !e.empty())
        return e;
      if (std::string e = parseCount(a, text, n); !e.empty())
        return e;
      field = n;
      return "";
    };
    if (a == "--data")
      error = value(o.data);
    else if (a == "--valid-data")
      error = value(o.validData);
    else if (a == "--target")
      error = value(o.target);
    else if (a == "--valid-target")
      error = value(o.validTarget);
    else if (a == "--tokenizer")
      error = value(o.tokenizer);
    else if (a == "--target-tokenizer")
      error = value(o.targetTokenizer);
    else if (a == "--labels")
      error = value(o.labels);
    else if (a == "--valid-labels")
      error = value(o.validLabels);
    else if (a == "--out") {
      error = value(o.outDir);
      if (error.empty() && o.outDir.empty())
        error = "--out needs a folder, not an empty name (leave --out out for runs/<model>)";
    }
    else if (a == "--steps")
      error = count(o.steps);
    else if (a == "--batch-sequences")
      error = count(o.batchSequences);
    else if (a == "--micro-batches")
      error = count(o.microBatches);
    else if (a == "--eval-interval")
      error = count(o.evalInterval);
    else if (a == "--eval-batches")
      error = count(o.evalBatches);
    else if (a == "--checkpoint-interval")
      error = count(o.checkpointInterval);
    else if (a == "--seed") {
      if (!(error = value(text)).empty())
        return error;
      errno = 0;
      char *end = nullptr;
      unsigned long long seed = std::strtoull(text.c_str(), &end, 10);
      if (text.empty() || *end || errno || text[0] == '-')
        error = "--seed '" + text + "' is not an integer in [0, 2^64)";
      o.seed = seed;
    } else if (a == "--time-limit") {
      if (!(error = value(text)).empty())
        return error;
      char *end = nullptr;
      o.timeLimitSeconds = std::strtod(text.c_str(), &end);
      // Plain decimal only: strtod would also take " 5", "0x10", "inf".
      bool decimal = !text.empty() &&
                     text.find_first_not_of("0123456789.eE+-") == std::string::npos;
      if (!decimal || *end || !(o.timeLimitSeconds >= 0) || !std::isfinite(o.timeLimitSeconds))
        error = "--time-limit '" + text + "' is not a finite number of seconds >= 0";
    } else if (a == "--resume")
      o.resume = true;
    else if (a == "--overwrite")
      overwrite = true;
    else if (a == "--no-progress")
      o.progress = false;
    else if (a == "--device") {
      if ((error = value(o.device)).empty() && o.device != "auto" && o.device != "cpu" &&
          o.device != "cuda")
        error = "--device '" + o.device + "' is not one of auto, cpu, cuda";
    } else if (a == "--bundle") {
      if ((error = value(o.bundle)).empty() && o.bundle.empty())
        error = "--bundle needs a file, not an empty name";
    }
    else if (a == "--attention") {
      if ((error = value(o.attention)).empty() && o.attention != "auto" &&
          o.attention != "kernels" && o.attention != "cudnn")
        error = "--attention '" + o.attention + "' is not one of auto, kernels, cudnn";
    } else if (a == "--no-graphs")
      o.graphs = false;
    else if (a.rfind("-", 0) == 0)
      error = "unknown option '" + a + "' for train";
    else if (o.model.empty())
      o.model = a;
    else
      error = "train takes one MODEL.json, got '" + o.model + "' and '" + a + "'";
    if (!error.empty())
      return error;
  }
  if (o.model.empty() || o.data.empty())
    return kTrainUsage;
  return "";
}

constexpr const char *kTrainHelp = R"(
Trains a model on the data its architecture takes: on the GPU when this
machine has a CUDA GPU (the train step compiled for it in process, its
kernels kept in the program cache, $LS2C_CACHE_DIR or ~/.cache/ls2c, so a
second run starts at once), else on the CPU reference backend (an
interpreter of the compiled train step, in f32). Both see the same batches
and write the same metrics and checkpoints: a run resumes on either device.
Validation data is a second set of the same kind (--valid-data ...), or else
the last 10% of the training examples.

data by architecture:
  decoder, llama   --data TEXT|TOKENS: a text read character by character
                   (e.g. examples/data/tinyshakespeare/input.txt) or a token
                   file of `ls2c tokenize` (its vocab_size at most the model's;
                   its sequences read as one stream: tokenize with --concat);
                   random windows of max_seq_len
  encoder          --data TOKENS: a token file whose sequences are cut into
                   segments of max_seq_len - 2 tokens, [CLS] segment [SEP],
                   15% masked anew each epoch (80% [MASK], 10% random, 10%
                   kept); metrics: masked-LM loss and accuracy
  encoder_decoder  --data SOURCE --target TARGET --tokenizer MODEL: parallel
                   text (plain or .gz, line i of one translates line i of the
                   other) tokenized with a sentencepiece model or character
                   vocabulary of `ls2c tokenize` (--target-tokenizer MODEL
                   for another target one); metrics: loss, accuracy,
                   and the NLL loss under label smoothing
  vit              --data IMAGES --labels LABELS: IDX files (plain or .gz),
                   e.g. Fashion-MNIST's from /usr/share/datasets/fashion-mnist;
                   metrics: loss, accuracy
Encoder and encoder_decoder ids are the tokenizer's plus 4: [PAD] [CLS] [SEP]
[MASK] (encoder) or fairseq's <s> <pad> </s> <unk> come first, so the model's
vocab must be at least the tokenizer's + 4. Their batches are length
buckets of at most max_batch_tokens tokens (each side of a pair), visited in
a seeded order each epoch.

  --valid-data DATA        validation data of the same kind (token file,
                           source text, images)
  --valid-target TEXT      encoder_decoder: with --valid-data
  --valid-labels LABELS    vit: with --valid-data
  --out DIR                metrics.jsonl and checkpoint.safetensors go here
                           (default runs/<model name>)
  --steps N                optimizer steps to reach in total (default 1000); past a
                           linear or cosine schedule's total_steps: a warning
  --batch-sequences N      decoder: sequences of max_seq_len tokens per
                           micro-batch, vit: images (default: what
                           max_batch_tokens holds); encoder, encoder_decoder:
                           at most N sequences a batch (default 0: no limit)
  --micro-batches N        gradient accumulation steps (default 1)
  --eval-interval N        validation every N steps (default 100; 0 = never)
  --eval-batches N         validation batches per evaluation (default 16)
  --checkpoint-interval N  checkpoint every N steps (default 0: at the end)
  --time-limit SECONDS     stop, evaluate and checkpoint after this long
                           (0: no limit)
  --seed N                 initialization, batches, masks and dropout
                           (default 1234)
  --resume                 continue from DIR/checkpoint.safetensors (same
                           model, seed, data, --batch-sequences,
                           --micro-batches)
  --overwrite              replace the run already in DIR (without --resume
                           or --overwrite, a checkpoint there is refused)
  --no-progress            no progress line on stderr (validation lines
                           are still printed)
  --device auto|cpu|cuda   where the steps run (default auto: the GPU when
                           ls2c-cuda.so loads and sees a device, else the
                           CPU, saying why; cuda: refuse to run without one)
  --bundle TRAIN.ls2b      GPU: the train step from a bundle of this
                           description (ls2c compile MODEL.json --arch=sm_90
                           -o TRAIN.ls2b) instead of compiling it
  --attention auto|kernels|cudnn
                           GPU: attention on the generated kernels, cuDNN's
                           fused attention, or per shape the faster (default)
  --no-graphs              GPU: run each step's kernels one by one instead of
                           replaying CUDA graphs

fp16 models train with dynamic loss scaling, as torch.cuda.amp.GradScaler:
the loss is multiplied by a scale (first 65536) before the backward and the
gradients divided by it; a step whose gradients hold inf or NaN changes no
weights and halves the scale; stderr then says so (step 7: skipped,
gradients not finite, fp16 loss scale lowered to 32768) and metrics.jsonl
has "finite": false and "grad_norm": -1. After 2000 clean steps the scale
doubles. fp32 and bf16 models skip such steps too, with no scale.

SIGINT or SIGTERM stops after the current step and writes the checkpoint
(exit status 128 + the signal, as a shell reports it: 130 for SIGINT, 143
for SIGTERM).
)";

} // namespace

int runTrain(const std::vector<std::string> &args) {
  for (const std::string &a : args)
    if (a == "--help" || a == "-h") {
      std::printf("%s\n%s", kTrainUsage, kTrainHelp);
      return kExitOk;
    }
  TrainOptions options;
  bool overwrite = false;
  if (std::string error = parse(args, options, overwrite); !error.empty())
    return usageError(error);
  if (options.outDir.empty()) {
    std::string stem = options.model.substr(options.model.find_last_of('/') + 1);
    options.outDir = "runs/" + stem.substr(0, stem.rfind(".json"));
  }
  // A fresh run must not silently replace an earlier one's checkpoint and
  // metrics (as Hugging Face's Trainer refuses a non-empty output folder).
  if (options.resume && overwrite)
    return usageError("--resume continues the run in " + options.outDir +
                      " and --overwrite replaces it: give one");
  std::error_code exists;
  if (!options.resume && !overwrite &&
      std::filesystem::exists(options.outDir + "/checkpoint.safetensors", exists))
    return usageError(options.outDir + "/checkpoint.safetensors exists: continue that run "
                      "with --resume or replace it with --overwrite");
  try {
    TrainResult r = train(options);
    if (r.firstStep > 0)
      std::printf("trained %lld steps (resumed at step %lld, now at %lld) in %.1f s: loss %.4f",
                  static_cast<long long>(r.step - r.firstStep),
                  static_cast<long long>(r.firstStep), static_cast<long long>(r.step),
                  r.seconds, r.lastLoss);
    else
      std::printf("trained %lld steps in %.1f s: loss %.4f", static_cast<long long>(r.step),
                  r.seconds, r.lastLoss);
    if (r.lastValidLoss >= 0)
      std::printf(", validation loss %.4f", r.lastValidLoss);
    if (r.lastValidAccuracy >= 0)
      std::printf(", accuracy %.4f", r.lastValidAccuracy);
    std::printf("\nmetrics: %s/metrics.jsonl\ncheckpoint: %s/checkpoint.safetensors\n",
                options.outDir.c_str(), options.outDir.c_str());
    if (r.step < options.steps)
      std::printf("stopped at step %lld of %lld (--time-limit %g s): continue with the same "
                  "command and --resume%s\n",
                  static_cast<long long>(r.step), static_cast<long long>(options.steps),
                  options.timeLimitSeconds, overwrite ? " in place of --overwrite" : "");
    return kExitOk;
  } catch (const TrainInterrupted &e) {
    std::fprintf(stderr, "ls2c: %s\n", e.what());
    return 128 + e.signal; // the shell's status for a run a signal stopped
  } catch (const TrainError &e) {
    std::fprintf(stderr, "ls2c: error: %s\n", e.what());
    return kExitBadInput;
  } catch (const DeviceError &e) {
    std::fprintf(stderr, "ls2c: error: on the GPU: %s\n", e.what());
    return kExitInternal;
  }
}

} // namespace ls2c::cli
