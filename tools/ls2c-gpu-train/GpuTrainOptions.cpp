//===- GpuTrainOptions.cpp - parse ls2c-gpu-train's command line ----------===//
#include "GpuTrainOptions.h"

#include <map>
#include <optional>
#include <vector>

namespace ls2c::gputrain {

const char *const kUsage =
    "usage: ls2c-gpu-train TRAIN.ls2b --eval EVAL.ls2b --data DATA --steps N\n"
    "         [--valid-data V] [--target T --tokenizer M [--target-tokenizer M2]\n"
    "          [--valid-target VT]] [--labels L [--valid-labels VL]]\n"
    "         [--batch-sequences B] [--micro-batches K] [--eval-interval K]\n"
    "         [--eval-batches E] [--seed S] [--metrics metrics.jsonl] [--save CKPT]\n"
    "         [--log-interval M] [--time-limit SECONDS] [--no-graphs]\n"
    "         [--attention kernels|cudnn|auto]\n"
    "  TRAIN.ls2b    ls2c compile MODEL.json --arch=sm_90 -o TRAIN.ls2b\n"
    "  --eval        ls2c compile MODEL.json --program=eval --arch=sm_90 -o EVAL.ls2b\n"
    "                (@forward without dropout, returning the loss and the logits that\n"
    "                the accuracy needs; a decoder may also use a train bundle of the\n"
    "                description with every dropout 0)\n"
    "  --data ...    what `ls2c train` takes for the bundle's architecture, with the\n"
    "                same batches: decoder: a text read character by character (its\n"
    "                last 10% validates) or a token file of ls2c tokenize; encoder:\n"
    "                token files; encoder_decoder: parallel text --data SOURCE --target\n"
    "                TARGET with --tokenizer; vit: IDX images --data with --labels\n"
    "  --valid-data  validation data of the same kind (default: the last 10% of --data)\n"
    "  --batch-sequences, --micro-batches, --seed: as ls2c train's (--seed 1 by default)\n"
    "  --eval-batches  validation batches per evaluation (default 0: all of them)\n"
    "  --save        write the final checkpoint there (ls2c train's format: fp32\n"
    "                parameters by reference name and the optimizer state)\n"
    "  --no-graphs   run every step by step instead of replaying CUDA graphs\n"
    "  --attention   fp16/bf16 attention: the generated kernels, cuDNN's fused attention,\n"
    "                or auto (default with cuDNN): per shape the faster, timed once\n"
    "                and kept in attention-choices.json beside the program cache\n"
    "                ($LS2C_ATTENTION_CHOICES: another file, or off);\n"
    "                cuDNN draws its own dropout masks, so runs that use it repeat\n"
    "                bit for bit only with --attention kernels\n";

bool parseOptions(int argc, char **argv, Options &o) {
  // Options that take a file name or a string, by flag.
  const std::map<std::string, std::string *> strings = {
      {"--eval", &o.evalBundle},
      {"--metrics", &o.metrics},
      {"--save", &o.save},
      {"--data", &o.data.data},
      {"--valid-data", &o.data.validData},
      {"--target", &o.data.target},
      {"--valid-target", &o.data.validTarget},
      {"--tokenizer", &o.data.tokenizer},
      {"--target-tokenizer", &o.data.targetTokenizer},
      {"--labels", &o.data.labels},
      {"--valid-labels", &o.data.validLabels}};
  o.data.seed = 1;
  std::vector<std::string> positional;
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
    if (a == "--help" || a == "-h")
      return false;
    if (auto it = strings.find(a); it != strings.end()) {
      std::string v = value();
      if (v.empty())
        throw InputError(a + " needs a non-empty value");
      *it->second = v;
    } else if (a == "--steps")
      o.steps = integer();
    else if (a == "--batch-sequences")
      o.data.batchSequences = integer();
    else if (a == "--micro-batches")
      o.data.microBatches = integer();
    else if (a == "--eval-interval")
      o.evalInterval = integer();
    else if (a == "--eval-batches")
      o.evalBatches = integer();
    else if (a == "--log-interval")
      o.logInterval = integer();
    else if (a == "--seed")
      o.data.seed = static_cast<uint64_t>(integer());
    else if (a == "--time-limit")
      o.timeLimit = static_cast<double>(integer());
    else if (a == "--no-graphs")
      o.graphs = false;
    else if (a == "--attention") {
      std::string b = value();
      std::optional<runtime::AttentionBackend> backend = runtime::parseAttentionBackend(b);
      if (!backend)
        throw InputError("--attention: '" + b + "' is not kernels, cudnn or auto");
      o.attention = *backend;
    } else if (a.size() > 1 && a[0] == '-')
      throw InputError("unknown option " + a);
    else
      positional.push_back(a);
  }
  if (positional.size() != 1 || o.evalBundle.empty() || o.data.data.empty() || o.steps < 1)
    throw InputError("a bundle, --eval, --data and --steps >= 1 are required");
  if (o.logInterval < 1 || o.data.microBatches < 1)
    throw InputError("--log-interval and --micro-batches must be >= 1");
  o.bundle = positional[0];
  o.data.model = o.bundle;
  return true;
}

} // namespace ls2c::gputrain
