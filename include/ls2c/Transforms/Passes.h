//===- Passes.h - ls2c transformation passes ------------------------------===//
//
// Pass flags are prefixed `ls2-`; Passes.td documents each with IR before
// and after.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TRANSFORMS_PASSES_H
#define LS2C_TRANSFORMS_PASSES_H

#include "ls2/IR/LS2Dialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace ls2c {

#define GEN_PASS_DECL
#include "ls2c/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ls2c/Transforms/Passes.h.inc"

/// Where `ls2c compile` stops.
enum class CompileStage {
  Forward,   ///< the frontend's @forward only
  TrainStep, ///< + ls2-autodiff and ls2-train-step
  Fused,     ///< + ls2-decompose, CSE and ls2-fuse
  Planned,   ///< + ls2-plan-buffers
};

/// Adds the passes that take a frontend module to `stage`; with
/// `fusionReport`, ls2-fuse prints its groups and refusals to stdout.
void addCompilePipeline(mlir::OpPassManager &pm, CompileStage stage,
                        bool fusionReport = false);
/// Adds the passes that take a module at stage `from` to stage `to`
/// (nothing when `to` is not later).
void addCompilePipeline(mlir::OpPassManager &pm, CompileStage from,
                        CompileStage to, bool fusionReport = false);
/// The stage a module is at: planned functions (ls2.arena_bytes), fusion
/// groups, a train step (@accumulate_gradients) or a module of complete
/// functions (ls2.differentiated), else the frontend's.
CompileStage moduleStage(mlir::ModuleOp module);

} // namespace ls2c

#endif // LS2C_TRANSFORMS_PASSES_H
