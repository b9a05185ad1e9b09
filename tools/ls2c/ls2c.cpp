//===- ls2c.cpp - the ls2c command line -----------------------------------===//
#include "Commands.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

namespace ls2c::cli {

int usageError(const std::string &message) {
  std::fprintf(stderr, "ls2c: error: %s\n", message.c_str());
  return kExitBadInput;
}

} // namespace ls2c::cli

namespace {

constexpr const char *kUsage =
    R"(usage: ls2c <command> [options]

Compiles Transformer training steps described in a model JSON file
(docs/model-description.md) into fused GPU kernels.

commands:
  check MODEL.json             validate a description; print its parameter
                               count and training-state memory in bytes
  compile MODEL.json [--emit=mlir|cuda] [--stage=S] [--stats] [--fusion-report]
                 [-o FILE]     print the ls2 IR after a stage (forward,
                               train-step, fused, planned) or the generated
                               CUDA kernels; --stats: launches and memory;
                               --fusion-report: fusion groups
  compile MODEL.json --arch=sm_90[,sm_80] -o MODEL.ls2b
                               compile the program's kernels with NVRTC and
                               write a bundle (see ls2c compile --help)
  train MODEL.json --data DATA [options]
                               train any of the five architectures on its data
                               (text or token files, parallel text, images)
                               on the GPU when there is one, else with the
                               CPU reference backend (see ls2c train --help)
  step MODEL.json --params FILE --batch FILE -o FILE [options]
                               run train steps on given parameters and one
                               batch (GPU or CPU); write losses, gradients and
                               updated parameters (see ls2c step --help)
  tokenize CORPUS... -o TOKENS (--model MODEL | --train bpe|unigram|char)
                               train or load a tokenizer and encode text into
                               a token file (see ls2c tokenize --help)
  convert --to-hf|--from-hf MODEL.json IN -o OUT
                               convert checkpoints to and from Hugging Face
                               BertForMaskedLM / GPT2LMHeadModel /
                               LlamaForCausalLM state dicts
                               (see ls2c convert --help)
  bleu HYPOTHESES REFERENCES... [--json]
                               corpus BLEU as sacreBLEU computes it by default
                               (13a tokens, exp smoothing; see ls2c bleu --help)
  generate MODEL.json --checkpoint FILE (--tokenizer MODEL | --text CORPUS)
                 (--prompt TEXT | --input FILE) [--beam K] [--reference REF]
                               greedy or beam search with a decoder or
                               translation model over a KV cache, on the GPU
                               or the CPU (see ls2c generate --help)

options:
  -h, --help                   show this help
  --version                    print the ls2c version

train, step and generate take --device auto|cpu|cuda: auto (the default) runs
on the GPU when ls2c-cuda.so (beside ls2c, or in <prefix>/lib/ls2c;
$LS2C_CUDA_MODULE names another) loads and sees a CUDA device.

Exit status: 0 success, 1 internal error, out of host memory or a GPU failure,
2 bad input or usage (--device cuda without a usable GPU included).
)";

} // namespace

static int dispatch(const std::vector<std::string> &args) {
  using namespace ls2c::cli;
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return kExitBadInput;
  }
  const std::string command = args.front();
  std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (command == "-h" || command == "--help" || command == "help") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (command == "--version") {
      if (!rest.empty())
        return usageError("--version takes no arguments");
      std::printf("ls2c %s\n", LS2C_VERSION);
      return kExitOk;
    }
    if (command == "check")
      return runCheck(rest);
    if (command == "compile")
      return runCompile(rest);
    if (command == "train")
      return runTrain(rest);
    if (command == "step")
      return runStep(rest);
    if (command == "tokenize")
      return runTokenize(rest);
    if (command == "convert")
      return runConvert(rest);
    if (command == "bleu")
      return runBleu(rest);
    if (command == "generate")
      return runGenerate(rest);
    return usageError("unknown command '" + command +
                      "' (commands: check, compile, train, step, tokenize, convert, bleu, "
                      "generate; see ls2c --help)");
  } catch (const std::bad_alloc &) {
    // Not a bug: sizes this machine cannot hold (the description's
    // max_batch_tokens, vocab or ffn, or --batch-sequences).
    std::fprintf(stderr, "ls2c: error: out of host memory (the description's sizes, "
                         "max_batch_tokens or --batch-sequences ask for more than this "
                         "machine has)\n");
    return kExitInternal;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ls2c: internal error: %s\n", e.what());
    return kExitInternal;
  }
}

int main(int argc, char **argv) {
  using namespace ls2c::cli;
  int status = dispatch(std::vector<std::string>(argv + 1, argv + argc));
  // Output that never arrived (a full disk, a closed pipe) is a failure.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "ls2c: error: cannot write to standard output: %s\n",
                 std::strerror(errno));
    return kExitInternal;
  }
  return status;
}
