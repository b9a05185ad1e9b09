//===- JIT.h - compile a model to a runnable program, in process ----------===//
//
// The C++ way into ls2c (beside the `ls2c` command line and bundles): a
// model description, or an ls2 module built in memory, goes through the
// whole pipeline (autodiff, train step, fusion, buffer planning, code
// generation) and NVRTC, and comes back as a runtime::Program with a cubin
// per kernel for each requested GPU architecture — what a bundle holds
// (runtime/include/ls2c/Runtime/Bundle.h writes and reads it) and what the
// runtime executes. Kernels come from the program cache when they can
// (lib/JIT: $LS2C_CACHE_DIR, else the XDG cache directory).
//
//   ls2c::ProgramOptions options;
//   options.archs = {"sm_90"};
//   ls2c::runtime::Program program =
//       ls2c::compileProgram("examples/tiny-gpt.json", options);
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_JIT_H
#define LS2C_JIT_H

#include "ls2c/JIT/KernelCompiler.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Runtime/Program.h"

#include "mlir/IR/BuiltinOps.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace ls2c {

struct ProgramOptions {
  /// GPU architectures to compile for ("sm_80", "sm_90"); empty: the
  /// current device's (jit::currentDeviceArch(), which throws without one).
  std::vector<std::string> archs;
  /// Functions to put in the program; empty: the training functions
  /// (accumulate_gradients, optimizer_step, forward).
  std::vector<std::string> functions;
  /// NVRTC settings: parallel jobs, the disk cache (its arch is ignored).
  jit::CompileOptions compile;
};

/// Where the time went (seconds) and what the cache served.
struct CompileReport {
  double pipelineSeconds = 0; ///< frontend + passes + code generation
  double nvrtcSeconds = 0;    ///< compiling (or loading) every kernel
  size_t kernels = 0;         ///< distinct kernels, per architecture
  size_t fromCache = 0;       ///< of kernels x archs, served by the cache
};

/// A compile that failed inside the compiler: the diagnostics, one per line.
class ProgramError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Compiles the model description file at `path`. Throws DescriptionError
/// (bad description), jit::CompileError (NVRTC), ProgramError (anything
/// else the compiler refuses).
runtime::Program compileProgram(const std::string &path, const ProgramOptions &options,
                                CompileReport *stats = nullptr);

/// Compiles `module`, an ls2 module of `desc` at any stage (the frontend's
/// @forward, or later: stages already run are skipped). `descriptionText`
/// is stored in the program. The module is transformed in place.
runtime::Program compileModule(mlir::ModuleOp module, const ModelDescription &desc,
                               const std::string &descriptionText,
                               const ProgramOptions &options,
                               CompileReport *stats = nullptr);

} // namespace ls2c

#endif // LS2C_JIT_H
