//===- Programs.h - the compiled train step the CPU drivers interpret -----===//
//
// Shared by `ls2c train` and `ls2c step`: builds a description's train step
// (frontend, ls2-autodiff, ls2-train-step) and a dropout-free @forward for
// evaluation, and binds interpreter arguments by their ls2.name.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_LIB_TRAINER_PROGRAMS_H
#define LS2C_LIB_TRAINER_PROGRAMS_H

#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Reference/HostTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <map>
#include <string>
#include <vector>

namespace ls2c {

/// @accumulate_gradients and @optimizer_step of the train step (see
/// ls2-train-step in Passes.td for their arguments) and @forward without
/// dropout, returning the loss and the logits it was computed from ([T, V];
/// vit: [B, num_classes]).
struct Programs {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> train, eval;
  mlir::func::FuncOp accumulate, optimizerStep, forward;
};

/// Compiles `desc` into `programs`. Throws TrainError (an internal error:
/// a valid description always compiles).
void compilePrograms(Programs &programs, const ModelDescription &desc);

/// The ls2.name of `f`'s argument `i` ("" when it has none).
std::string argName(mlir::func::FuncOp f, unsigned i);

/// Appends a value for each argument of `f` after its first `skip`, looked
/// up by ls2.name in `named`. Throws TrainError naming a missing one.
void appendNamed(std::vector<reference::HostTensor> &args, mlir::func::FuncOp f,
                 unsigned skip,
                 const std::map<std::string, reference::HostTensor> &named);

/// The reference element type of a description's compute dtype.
reference::ElementType computeType(DType dtype);

} // namespace ls2c

#endif // LS2C_LIB_TRAINER_PROGRAMS_H
