//===- Commands.h - the ls2c subcommands ----------------------------------===//
//
// Each command takes its arguments after the command name and returns the
// process exit code: 0 success, 1 internal error or out of host memory, 2 bad input or usage
// (one line on stderr naming what is wrong).
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TOOLS_LS2C_COMMANDS_H
#define LS2C_TOOLS_LS2C_COMMANDS_H

#include <string>
#include <vector>

namespace ls2c::cli {

constexpr int kExitOk = 0;
constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;

/// Prints "ls2c: error: <message>" and returns kExitBadInput.
int usageError(const std::string &message);

int runCheck(const std::vector<std::string> &args);
int runCompile(const std::vector<std::string> &args);
int runTrain(const std::vector<std::string> &args);
int runStep(const std::vector<std::string> &args);
int runTokenize(const std::vector<std::string> &args);
int runConvert(const std::vector<std::string> &args);
int runBleu(const std::vector<std::string> &args);
int runGenerate(const std::vector<std::string> &args);

} // namespace ls2c::cli

#endif // LS2C_TOOLS_LS2C_COMMANDS_H
