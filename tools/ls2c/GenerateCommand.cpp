//===- GenerateCommand.cpp - ls2c generate on the GPU or the CPU ----------===//
#include "Commands.h"

#include "ls2c/Generation/GenerateDriver.h"
#include "ls2c/Generation/ReferenceDecoder.h"
#include "ls2c/Trainer/Trainer.h"
#if LS2C_HAVE_CUDA
#include "ls2c/Trainer/CudaTrainer.h"
#endif

#include <cstdio>

namespace ls2c::cli {

int runGenerate(const std::vector<std::string> &args) {
  using namespace ls2c::generation;
  for (const std::string &a : args)
    if (a == "--help" || a == "-h") {
      std::printf("%s\n%s", generateUsage("ls2c generate", "MODEL.json", false).c_str(),
                  generateHelp(false).c_str());
      return kExitOk;
    }
  GenerateOptions o;
  if (std::string e = parseGenerateOptions(args, o, /*gpu=*/false); !e.empty())
    return usageError(e);
  ModelDescription desc;
  try {
    desc = loadModelDescription(o.model);
  } catch (const std::exception &e) {
    return usageError(e.what());
  }
  // On the GPU when asked or found (auto), else the CPU reference; the
  // device line goes to stderr with the run's summary.
  auto makeDecoder = [&](const ModelDescription &d,
                         const std::map<std::string, reference::HostTensor> &w)
      -> std::unique_ptr<IncrementalDecoder> {
    std::string why = "this ls2c was built without the CUDA toolkit";
#if LS2C_HAVE_CUDA
    if (o.device != "cpu")
      if (std::unique_ptr<IncrementalDecoder> gpu = openCudaDecoder(d, w, o.graphs, why)) {
        std::fprintf(stderr, "device: cuda\n");
        return gpu;
      }
#endif
    if (o.device == "cuda")
      throw GenerationError("--device cuda: no usable CUDA GPU: " + why);
    std::fprintf(stderr, "device: cpu (reference interpreter)%s\n",
                 o.device == "auto" ? ("; no CUDA GPU: " + why).c_str() : "");
    return std::make_unique<ReferenceDecoder>(d, w);
  };
  try {
    return runGeneration(o, desc, makeDecoder, "ls2c", "ls2c generate");
  } catch (const DeviceError &e) {
    std::fprintf(stderr, "ls2c: error: on the GPU: %s\n", e.what());
    return kExitInternal;
  }
}

} // namespace ls2c::cli
