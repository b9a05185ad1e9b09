//===- ModuleKernels.h - the kernels of every fusion group of a module ----===//
#ifndef LS2C_CODEGEN_MODULEKERNELS_H
#define LS2C_CODEGEN_MODULEKERNELS_H

#include "ls2c/Codegen/KernelGenerator.h"

#include "mlir/IR/BuiltinOps.h"

namespace ls2c::codegen {

/// The kernels of a module: each distinct kernel once (the layers of a
/// model share theirs), and where each fusion group uses one.
struct ModuleKernels {
  std::vector<runtime::Kernel> kernels;
  struct Use {
    std::string function; ///< the enclosing func.func
    mlir::Operation *op; ///< an ls2.fusion or ls2.scatter_add
    unsigned kernel; ///< index into kernels
    std::vector<ParamBinding> bindings;
  };
  std::vector<Use> uses; ///< in program order
};

/// Generates the kernel of every ls2.fusion and ls2.scatter_add of every
/// function of a fused (usually planned) module. A kernel is named
/// "<function>_<group>" ("<function>_scatter_add_<n>") after the first op
/// that needs it; ops whose kernels differ only in name share it. Fails with the errors of every group it cannot generate.
mlir::FailureOr<ModuleKernels> generateModuleKernels(mlir::ModuleOp module);

} // namespace ls2c::codegen

#endif // LS2C_CODEGEN_MODULEKERNELS_H
