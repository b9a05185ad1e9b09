//===- ConvertCommand.cpp - ls2c convert --to-hf / --from-hf / --list -----===//
#include "Commands.h"

#include "ls2c/Model/HuggingFaceNames.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Model/ParameterLayout.h"
#include "ls2c/Support/AtomicFile.h"
#include "ls2c/Support/Safetensors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>

namespace ls2c::cli {

namespace {

constexpr const char *kConvertUsage =
    "usage: ls2c convert --to-hf MODEL.json OURS.safetensors -o HF.safetensors "
    "[--hf-config config.json]\n"
    "       ls2c convert --from-hf MODEL.json HF.safetensors -o OURS.safetensors\n"
    "       ls2c convert --list MODEL.json [--hf-config config.json]";

constexpr const char *kConvertHelp = R"(
Converts checkpoints between ls2c's parameters and the state dicts of Hugging
Face transformers' BertForMaskedLM ("encoder" descriptions),
GPT2LMHeadModel ("decoder" descriptions, pre-LN) and LlamaForCausalLM ("llama"
descriptions). The tensors are the same bytes under the same names (ls2c's
layout uses transformers' names and orientations: nn.Linear [out, in] for
BERT and Llama, Conv1D [in, out] with q|k|v fused in c_attn for GPT-2); what
changes is which names exist.

  --to-hf MODEL.json OURS   OURS is a `ls2c step --params` file or a
                            `ls2c train` checkpoint (its optimizer state is
                            dropped). Writes the model's whole state_dict(),
                            tied names (cls.predictions.decoder.*, lm_head)
                            as copies, metadata format "pt".
  --from-hf MODEL.json HF   HF is a transformers checkpoint (model.safetensors)
                            of the model the description is. Writes the
                            trainable parameters (a `ls2c step --params`
                            file). F16/BF16 are widened to F32; base-model
                            prefixes and gamma/beta names are renamed and
                            buffers and heads transformers ignores are
                            dropped, each reported on stderr.
  --list MODEL.json         print the state dict's names and shapes (for a
                            description without a transformers equivalent,
                            ls2c's own parameter names, with the reason)
  -o FILE                   output (written atomically)
  --hf-config FILE          also write the equivalent config.json

Missing, extra, misshaped or non-float tensors, tied copies that differ and
descriptions without a transformers equivalent are refused (exit status 2)
with one line naming the tensor and the rule.
)";

struct Options {
  std::string mode; ///< "--to-hf", "--from-hf" or "--list"
  std::string model, input, output, hfConfig;
};

std::string parse(const std::vector<std::string> &args, Options &o) {
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    if (a == "--to-hf" || a == "--from-hf" || a == "--list") {
      if (!o.mode.empty() && o.mode != a)
        return "convert takes one of --to-hf, --from-hf and --list, got " +
               o.mode + " and " + a;
      o.mode = a;
    } else if (a == "-o" || a == "--hf-config") {
      if (i + 1 == args.size())
        return a + " needs a value";
      (a == "-o" ? o.output : o.hfConfig) = args[++i];
    } else if (a.size() > 1 && a[0] == '-') {
      return "unknown option '" + a + "' for convert";
    } else {
      positional.push_back(a);
    }
  }
  if (o.mode.empty())
    return kConvertUsage;
  const bool list = o.mode == "--list";
  if (positional.size() != (list ? 1u : 2u))
    return fmt::format("convert {} takes {}, got {} argument(s)", o.mode,
                       list ? "MODEL.json" : "MODEL.json and an input file",
                       positional.size());
  o.model = positional[0];
  if (!list) {
    o.input = positional[1];
    if (o.output.empty())
      return "convert " + o.mode + " needs -o FILE";
  } else if (!o.output.empty()) {
    return "convert --list writes no tensors: -o does not apply";
  }
  if (o.mode == "--from-hf" && !o.hfConfig.empty())
    return "--hf-config applies to --to-hf and --list";
  if (o.output == o.hfConfig && !o.output.empty())
    return "-o and --hf-config name the same file '" + o.output + "'";
  return ls2c::outputReplacesInput({{"-o", o.output}, {"--hf-config", o.hfConfig}},
                                   {{"MODEL.json", o.model}, {"the input file", o.input}});
}

/// On stderr, before anything reaches stdout (which is flushed first).
void printNotes(const std::vector<std::string> &notes) {
  std::fflush(stdout);
  for (const std::string &n : notes)
    std::fprintf(stderr, "ls2c: note: %s\n", n.c_str());
}

void writeConfig(const HuggingFaceMapping &m, const std::string &path) {
  writeFileAtomically(path, m.config.dump(2) + "\n");
}

} // namespace

int runConvert(const std::vector<std::string> &args) {
  for (const std::string &a : args)
    if (a == "--help" || a == "-h") {
      std::printf("%s\n%s", kConvertUsage, kConvertHelp);
      return kExitOk;
    }
  Options o;
  if (std::string error = parse(args, o); !error.empty())
    return usageError(error);
  try {
    ModelDescription desc = loadModelDescription(o.model);
    if (o.mode == "--list" && o.hfConfig.empty()) {
      // A valid description without a transformers equivalent (grouped-query
      // attention, a post-LN decoder, a ViT) still has names: ls2c's own.
      try {
        (void)huggingFaceMapping(desc, o.model);
      } catch (const HuggingFaceError &e) {
        for (const ParameterSpec &p : buildParameterLayout(desc).parameters)
          std::printf("%s [%s]%s\n", p.name.c_str(),
                      fmt::format("{}", fmt::join(p.shape, ", ")).c_str(),
                      p.trainable ? "" : " (buffer)");
        printNotes({std::string(e.what()) + "; listed are ls2c's own parameter names"});
        return kExitOk;
      }
    }
    HuggingFaceMapping mapping = huggingFaceMapping(desc, o.model);
    std::vector<std::string> notes = mapping.notes;
    if (o.mode == "--list" && !o.hfConfig.empty()) {
      // Before the listing, so that a config that cannot be written stops
      // the command before it prints anything; said on stderr, beside the
      // notes, so that stdout holds the listing alone.
      writeConfig(mapping, o.hfConfig);
      std::fflush(stdout);
      std::fprintf(stderr, "wrote %s\n", o.hfConfig.c_str());
    }
    if (o.mode == "--list") {
      for (const HuggingFaceTensor &t : mapping.tensors)
        std::printf("%s [%s] %s%s\n", t.name.c_str(),
                    fmt::format("{}", fmt::join(t.shape, ", ")).c_str(),
                    t.shapeRule.c_str(),
                    t.tied ? (" tied to " + t.source).c_str() : "");
    } else {
      SafetensorsFile in = readSafetensors(o.input);
      SafetensorsFile out = o.mode == "--to-hf"
                                ? toHuggingFace(mapping, in, o.input)
                                : fromHuggingFace(mapping, in, o.input, &notes);
      writeSafetensors(o.output, out);
      printNotes(notes);
      std::printf("wrote %s: %zu tensors (%s%s)\n", o.output.c_str(),
                  out.tensors.size(),
                  o.mode == "--to-hf" ? "Hugging Face " : "ls2c parameters of ",
                  mapping.modelClass.c_str());
    }
    if (!o.hfConfig.empty() && o.mode != "--list") {
      writeConfig(mapping, o.hfConfig);
      std::printf("wrote %s\n", o.hfConfig.c_str());
    }
    if (o.mode == "--list")
      printNotes(notes);
    return kExitOk;
  } catch (const DescriptionError &e) {
    return usageError(e.what());
  } catch (const HuggingFaceError &e) {
    return usageError(e.what());
  } catch (const SafetensorsError &e) {
    return usageError(e.what());
  } catch (const FileWriteError &e) {
    return usageError(e.what());
  }
}

} // namespace ls2c::cli
