//===- StepCommand.cpp - ls2c step MODEL.json --params --batch -o ---------===//
#include "Commands.h"
#include "ls2c/Support/AtomicFile.h"

#include "ls2c/Trainer/ReferenceStep.h"
#include "ls2c/Trainer/Trainer.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace ls2c::cli {

namespace {

constexpr const char *kStepUsage =
    "usage: ls2c step MODEL.json --params FILE --batch FILE -o FILE "
    "[--steps N] [--precision f32|f64] [--dropout-seed N] [--logits FILE] "
    "[--device auto|cpu|cuda] [--attention auto|kernels|cudnn]";

constexpr const char *kStepHelp = R"(
Runs N train steps (forward, backward, optimizer update with the model's
optimizer, schedule and clipping), every step on the same batch, from the
given parameters: on the GPU when there is one (the program compiled for it
in process), else on the CPU reference backend. For checking ls2c against
another framework on identical inputs (test/oracle runs JAX in float64 this
way), and the GPU against the CPU (--device cpu, then cuda).

  --params FILE      safetensors: every trainable parameter by name (F32/F64)
  --batch FILE       safetensors: every model input by name (token ids,
                     position_ids, cu_seqlens, labels, ...; ViT: pixels)
  -o FILE            safetensors written: loss, grad_norm and lr per step,
                     grad/<name> (first step, before clipping) and
                     param/<name> (after the last step), all F64
  --steps N          train steps (default 1)
  --precision P      f32: as the IR's types (default); f64: every float op in
                     double, for comparisons with float64 references
  --dropout-seed N   Philox seed of dropout (step k uses offset k; default 0)
  --logits FILE      safetensors written: "logits" (F64 [tokens, vocab]; ViT
                     [images, classes]) of the dropout-free forward at the
                     given parameters, rows in the batch's packed order
  --device D         auto (default): the GPU when ls2c-cuda.so loads and sees
                     a device, unless --precision f64 or --logits ask for
                     the CPU reference; cpu; cuda (refused with those two)
  --attention A      GPU: the generated kernels, cuDNN or per shape the
                     faster (auto, default)
)";

std::string parse(const std::vector<std::string> &args, StepOptions &o) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    std::string text;
    auto value = [&](std::string &out) -> bool {
      if (i + 1 == args.size())
        return false;
      out = args[++i];
      return true;
    };
    if (a == "--params" || a == "--batch" || a == "-o" || a == "--steps" ||
        a == "--precision" || a == "--dropout-seed" || a == "--logits" || a == "--device" ||
        a == "--attention") {
      if (!value(text))
        return a + " needs a value";
    }
    if (a == "--params")
      o.params = text;
    else if (a == "--batch")
      o.batch = text;
    else if (a == "-o")
      o.output = text;
    else if (a == "--logits")
      o.logits = text;
    else if (a == "--device") {
      if (text != "auto" && text != "cpu" && text != "cuda")
        return "--device '" + text + "' is not one of auto, cpu, cuda";
      o.device = text;
    } else if (a == "--attention") {
      if (text != "auto" && text != "kernels" && text != "cudnn")
        return "--attention '" + text + "' is not one of auto, kernels, cudnn";
      o.attention = text;
    }
    else if (a == "--steps" || a == "--dropout-seed") {
      errno = 0;
      char *end = nullptr;
      unsigned long long v = std::strtoull(text.c_str(), &end, 10);
      if (text.empty() || *end || errno || text[0] == '-' ||
          (a == "--steps" && (v < 1 || v > 1000000)))
        return a + " '" + text + "' is not " +
               (a == "--steps" ? "an integer in [1, 1000000]"
                               : "an integer in [0, 2^64)");
      if (a == "--steps")
        o.steps = static_cast<int64_t>(v);
      else
        o.dropoutSeed = v;
    } else if (a == "--precision") {
      if (text != "f32" && text != "f64")
        return "--precision '" + text + "' is not f32 or f64";
      o.f64 = text == "f64";
    } else if (a.rfind("-", 0) == 0)
      return "unknown option '" + a + "' for step";
    else if (o.model.empty())
      o.model = a;
    else
      return "step takes one MODEL.json, got '" + o.model + "' and '" + a + "'";
  }
  if (o.model.empty() || o.params.empty() || o.batch.empty() ||
      o.output.empty())
    return kStepUsage;
  if (o.logits == o.output)
    return "--logits and -o name the same file '" + o.output + "'";
  return ls2c::outputReplacesInput(
      {{"-o", o.output}, {"--logits", o.logits}},
      {{"MODEL.json", o.model}, {"--params", o.params}, {"--batch", o.batch}});
}

} // namespace

int runStep(const std::vector<std::string> &args) {
  for (const std::string &a : args)
    if (a == "--help" || a == "-h") {
      std::printf("%s\n%s", kStepUsage, kStepHelp);
      return kExitOk;
    }
  StepOptions options;
  if (std::string error = parse(args, options); !error.empty())
    return usageError(error);
  options.onStep = [](int64_t step, double loss) {
    std::printf("step %lld loss %.17g\n", static_cast<long long>(step), loss);
    std::fflush(stdout);
  };
  try {
    StepResult r = runSteps(options);
    std::fprintf(stderr, "device: %s\n", r.device.c_str());
    std::printf("wrote %s\n", options.output.c_str());
    if (!options.logits.empty())
      std::printf("wrote %s\n", options.logits.c_str());
    return kExitOk;
  } catch (const TrainError &e) {
    std::fprintf(stderr, "ls2c: error: %s\n", e.what());
    return kExitBadInput;
  } catch (const DeviceError &e) {
    std::fprintf(stderr, "ls2c: error: on the GPU: %s\n", e.what());
    return kExitInternal;
  }
}

} // namespace ls2c::cli
