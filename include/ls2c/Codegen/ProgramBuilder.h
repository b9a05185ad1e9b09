//===- ProgramBuilder.h - a planned ls2 module as the runtime's Program ---===//
//
// The last compiler step: the planned module (fusion groups, arena offsets)
// becomes a runtime::Program (runtime/include/ls2c/Runtime/Program.h): the
// generated kernels, and per function its arguments, results and steps —
// kernel launches bound to arena offsets, argument and result ranges;
// cuBLASLt GEMMs with their epilogues; attention calls. Views (reshapes,
// contiguous and strided slices) and in-place concatenations become offsets
// and row strides, not steps. Kernel scratch (two-stage column reductions)
// is placed after the largest function's arena.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_CODEGEN_PROGRAMBUILDER_H
#define LS2C_CODEGEN_PROGRAMBUILDER_H

#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Runtime/Program.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace ls2c::codegen {

/// The functions a training program needs: one micro-batch's forward and
/// backward, the optimizer step, and the forward (evaluation loss).
inline const std::vector<std::string> &trainingFunctions() {
  static const std::vector<std::string> names = {"accumulate_gradients",
                                                 "optimizer_step", "forward"};
  return names;
}

/// Builds the program of `functions` of a planned module compiled from
/// `desc` (whose JSON text is `descriptionText`). Kernels only those
/// functions use are included. Fails with an error on the op that has no
/// runtime form (nothing is returned then).
mlir::FailureOr<runtime::Program>
buildProgram(mlir::ModuleOp module, const ModelDescription &desc,
             const std::string &descriptionText,
             const std::vector<std::string> &functions = trainingFunctions());

} // namespace ls2c::codegen

#endif // LS2C_CODEGEN_PROGRAMBUILDER_H
