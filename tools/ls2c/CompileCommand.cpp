//===- CompileCommand.cpp - ls2c compile MODEL.json -----------------------===//
#include "Commands.h"

#include "ls2c/Frontend/Frontend.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Support/AtomicFile.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <optional>

namespace ls2c::cli {

namespace {

struct CompileOptions {
  std::string model;
  std::string emit;
  std::optional<std::string> output;
};

/// Parses `MODEL.json --emit=KIND [-o FILE]`; returns an error message or "".
std::string parse(const std::vector<std::string> &args, CompileOptions &o) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    if (a.rfind("--emit=", 0) == 0) {
      o.emit = a.substr(7);
    } else if (a == "--emit" || a == "-o") {
      if (i + 1 == args.size())
        return a + " needs a value";
      (a == "-o" ? o.output.emplace() : o.emit) = args[++i];
    } else if (a.rfind("-", 0) == 0) {
      return "unknown option '" + a + "' for compile";
    } else if (o.model.empty()) {
      o.model = a;
    } else {
      return "compile takes one MODEL.json, got '" + o.model + "' and '" + a +
             "'";
    }
  }
  if (o.model.empty())
    return "usage: ls2c compile MODEL.json --emit=mlir [-o FILE]";
  if (o.emit.empty())
    return "compile needs --emit=mlir (the only output so far)";
  if (o.emit != "mlir")
    return "--emit=" + o.emit + " is not supported (allowed: mlir)";
  return "";
}

} // namespace

int runCompile(const std::vector<std::string> &args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::puts("usage: ls2c compile MODEL.json --emit=mlir [-o FILE]\n\n"
              "Prints the verified forward module of a model description in "
              "the ls2 dialect\n(to FILE, written atomically, with -o; -o - is "
              "standard output).");
    return kExitOk;
  }
  CompileOptions options;
  if (std::string error = parse(args, options); !error.empty())
    return usageError(error);
  ModelDescription desc;
  try {
    desc = loadModelDescription(options.model);
  } catch (const DescriptionError &e) {
    std::fprintf(stderr, "ls2c: error: %s\n", e.what());
    return kExitBadInput;
  }

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module = buildForwardModule(context, desc);
  if (!module) {
    std::fprintf(stderr, "ls2c: internal error: the forward module of '%s' "
                         "does not verify (diagnostics above)\n",
                 options.model.c_str());
    return kExitInternal;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, mlir::OpPrintingFlags().enableDebugInfo(false));
  os.flush();
  try {
    if (options.output && *options.output != "-")
      writeFileAtomically(*options.output, text);
    else
      std::fwrite(text.data(), 1, text.size(), stdout);
  } catch (const FileWriteError &e) {
    std::fprintf(stderr, "ls2c: error: %s\n", e.what());
    return kExitBadInput;
  }
  return kExitOk;
}

} // namespace ls2c::cli
