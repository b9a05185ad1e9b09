//===- ls2c.cpp - the ls2c command line -----------------------------------===//
#include "Commands.h"

#include <cstdio>
#include <exception>
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
  compile MODEL.json --emit=mlir [-o FILE]
                               print the verified forward module (ls2 IR)

options:
  -h, --help                   show this help
  --version                    print the ls2c version

Exit status: 0 success, 1 internal error, 2 bad input or usage.
)";

} // namespace

int main(int argc, char **argv) {
  using namespace ls2c::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
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
      std::printf("ls2c %s\n", LS2C_VERSION);
      return kExitOk;
    }
    if (command == "check")
      return runCheck(rest);
    if (command == "compile")
      return runCompile(rest);
    return usageError("unknown command '" + command +
                      "' (commands: check, compile; see ls2c --help)");
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ls2c: internal error: %s\n", e.what());
    return kExitInternal;
  }
}
