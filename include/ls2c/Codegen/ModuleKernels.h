//===- ModuleKernels.h - the kernels of every fusion group of a module ----===//
#ifndef LS2C_CODEGEN_MODULEKERNELS_H
#define LS2C_CODEGEN_MODULEKERNELS_H

#include "ls2c/Codegen/KernelGenerator.h"

#include "mlir/IR/BuiltinOps.h"

namespace ls2c::codegen {

/// The kernels of a module: each distinct kernel once (the layers of a
/// model share theirs), and where each op launches one.
struct ModuleKernels {
  std::vector<runtime::Kernel> kernels;
  struct Use {
    std::string function; ///< the enclosing func.func
    /// An ls2.fusion, ls2.scatter_add, ls2.attention or ls2.attention_grad.
    mlir::Operation *op;
    unsigned kernel; ///< index into kernels
    std::vector<ParamBinding> bindings;
  };
  /// In program order, one per launch: an op with several kernels
  /// (attention_grad: dq, then dk and dv) has consecutive uses in launch
  /// order.
  std::vector<Use> uses;
};

/// Generates the kernels of every ls2.fusion, ls2.scatter_add, ls2.attention
/// and ls2.attention_grad of every function of a fused (usually planned)
/// module. A kernel is named "<function>_<group>" ("<function>_scatter_add_<n>",
/// "<function>_attention_<n>", "<function>_attention_grad_<n>_dq" / "_dkdv")
/// after the first op that needs it; ops whose kernels differ only in name
/// share it. Fails with the errors of every op it cannot generate.
mlir::FailureOr<ModuleKernels> generateModuleKernels(mlir::ModuleOp module);

} // namespace ls2c::codegen

#endif // LS2C_CODEGEN_MODULEKERNELS_H
