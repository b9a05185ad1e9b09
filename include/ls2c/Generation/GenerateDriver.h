//===- GenerateDriver.h - the generate command, on any backend ------------===//
//
// `ls2c generate` (the CPU reference backend) and `ls2c-gpu-generate` (the
// GPU runtime) take the same options and write the same outputs; only the
// IncrementalDecoder differs. This is that shared command: options, inputs
// through training's tokenization (GenerationText.h), search (Search.h),
// text or JSON-lines output written atomically, and corpus BLEU against
// references (include/ls2c/Eval/Bleu.h). MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_GENERATION_GENERATEDRIVER_H
#define LS2C_GENERATION_GENERATEDRIVER_H

#include "ls2c/Generation/IncrementalDecoder.h"
#include "ls2c/Generation/Search.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Reference/HostTensor.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ls2c::generation {

struct GenerateOptions {
  std::string model; ///< the positional argument: a description or a bundle
  std::string checkpoint, tokenizer, targetTokenizer, text, input, output;
  std::optional<std::string> prompt;
  std::vector<std::string> references;
  SearchOptions search;
  int64_t nbest = 1;
  bool json = false;
  bool graphs = true; ///< --no-graphs (GPU only)
  /// `ls2c generate --device`: auto (the GPU when one is usable), cpu, cuda.
  std::string device = "auto";
};

/// The options after the command name (`modelWhat` names the positional
/// argument in the usage line, e.g. "MODEL.json"). Returns "" or the usage
/// error; --help and -h are the caller's.
std::string parseGenerateOptions(const std::vector<std::string> &args, GenerateOptions &o,
                                 bool gpu);
/// The usage line and the help text of the command.
std::string generateUsage(const std::string &command, const std::string &modelWhat, bool gpu);
std::string generateHelp(bool gpu);

/// Makes the backend's decoder from the description and the checkpoint's
/// parameters (loadModelWeights).
using DecoderFactory = std::function<std::unique_ptr<IncrementalDecoder>(
    const ModelDescription &, const std::map<std::string, reference::HostTensor> &)>;

/// Runs the command for `desc`: returns 0, or 2 after printing
/// "<tool>: error: <message>" for bad input; the summary line on stderr
/// starts with `command` (a file, an option, a model
/// that does not generate, a checkpoint of another model, text the
/// vocabulary cannot express). Other exceptions propagate.
int runGeneration(const GenerateOptions &o, const ModelDescription &desc,
                  const DecoderFactory &makeDecoder, const std::string &tool,
                  const std::string &command);

} // namespace ls2c::generation

#endif // LS2C_GENERATION_GENERATEDRIVER_H
