//===- GenerateCommand.cpp - ls2c generate on the CPU reference backend ---===//
#include "Commands.h"

#include "ls2c/Generation/GenerateDriver.h"
#include "ls2c/Generation/ReferenceDecoder.h"

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
  return runGeneration(
      o, desc,
      [](const ModelDescription &d, const std::map<std::string, reference::HostTensor> &w) {
        return std::make_unique<ReferenceDecoder>(d, w);
      },
      "ls2c", "ls2c generate");
}

} // namespace ls2c::cli
