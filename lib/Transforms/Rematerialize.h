//===- Rematerialize.h - forward/backward split and recomputation --------===//
//
// Internal to ls2-fuse. In a function that computes a loss and its gradients
// (a result named or of kind "loss"), the backward is every op that depends
// on the backward seed (the `loss_grad` or `loss_scale` argument) and every
// op only such ops read. With rematerialization, values the passes share are
// recomputed in the backward instead of being stored across them:
//   - f32 values CSE shared (a normalized row, GELU's 1 + erf, the tanh
//     GELU's tanh and x^2) are cloned into the backward from values stored
//     anyway (arguments, fp16/bf16 values, row statistics, values the
//     backward reads and does not itself recompute);
//   - a widening cast read by both passes gets a backward copy, so the
//     forward stores the narrow value.
// With activation checkpointing, every forward value of a transformer layer
// the backward reads is recomputed there (GEMMs included) from the
// checkpoints: arguments, attention results (unless `recomputeAttention`:
// then the backward runs the attention forward again), row statistics and
// the values a layer passes to another scope (ls2-fuse's description).
// (ls2-fuse then keeps loops from mixing the passes.)
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_LIB_TRANSFORMS_REMATERIALIZE_H
#define LS2C_LIB_TRANSFORMS_REMATERIALIZE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

namespace ls2c::fusion {

struct PassSplit {
  llvm::DenseSet<mlir::Operation *> backward; ///< empty without a loss
  /// The backward copies of forward ops (recomputed there): they must not
  /// be fused back into a forward kernel, which would store their values.
  llvm::DenseSet<mlir::Operation *> recomputed;
  int64_t recomputedOps = 0;   ///< forward ops cloned into the backward
  int64_t duplicatedCasts = 0; ///< widening casts given a backward copy
  /// The forward casts whose backward copies were made (their inputs, half
  /// the bytes, are what the forward stores now).
  llvm::SmallVector<mlir::Value> narrowedCasts;
  /// The GEMMs activation checkpointing recomputes and their backward
  /// copies: they keep no bias or activation epilogue (attachEpilogues).
  llvm::DenseSet<mlir::Operation *> recomputedGemms;
};

/// Splits `function`'s block into passes and, with `rematerialize` (and
/// `checkpointActivations`, `recomputeAttention`), edits it as described
/// above.
PassSplit splitPasses(mlir::func::FuncOp function, bool rematerialize,
                      bool checkpointActivations = false, bool recomputeAttention = false);

} // namespace ls2c::fusion

#endif // LS2C_LIB_TRANSFORMS_REMATERIALIZE_H
