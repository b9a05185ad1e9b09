//===- GpuGenerate.cpp - ls2c generate on the GPU runtime -----------------===//
//
// ls2c-gpu-generate DECODE.ls2b --checkpoint FILE (--tokenizer MODEL |
//                   --text CORPUS) (--prompt TEXT | --input FILE) [options]
//
// `ls2c generate` (the same options, outputs and BLEU line;
// include/ls2c/Generation/GenerateDriver.h) with the decoding bundle
// (`ls2c compile MODEL.json --program=decode --arch=sm_90 -o DECODE.ls2b`)
// run by the runtime (GpuDecoder.h). The description comes from the bundle.
// No MLIR: it runs on the GPU machine.
//
//===----------------------------------------------------------------------===//
#include "GpuDecoder.h"

#include "ls2c/Generation/GenerateDriver.h"
#include "ls2c/Runtime/Bundle.h"

#include <cstdio>

using namespace ls2c;
using namespace ls2c::generation;

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const char *tool = "ls2c-gpu-generate";
  for (const std::string &a : args)
    if (a == "--help" || a == "-h") {
      std::printf("%s\n%s", generateUsage(tool, "DECODE.ls2b", true).c_str(),
                  generateHelp(true).c_str());
      return 0;
    }
  GenerateOptions o;
  if (std::string e = parseGenerateOptions(args, o, /*gpu=*/true); !e.empty()) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.c_str());
    return 2;
  }
  try {
    runtime::Program program = runtime::readBundle(o.model);
    ModelDescription desc = parseModelDescription(program.description, o.model);
    return runGeneration(
        o, desc,
        [&](const ModelDescription &d, const std::map<std::string, reference::HostTensor> &w) {
          return std::make_unique<tools::GpuDecoder>(std::move(program), d, w, o.graphs);
        },
        tool, tool);
  } catch (const runtime::BundleError &e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    return 2;
  } catch (const DescriptionError &e) {
    std::fprintf(stderr, "%s: error: %s: the bundle's description: %s\n", tool,
                 o.model.c_str(), e.what());
    return 2;
  } catch (const runtime::RuntimeError &e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    return 1;
  }
}
