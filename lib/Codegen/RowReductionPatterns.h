//===- RowReductionPatterns.h - reductions a row kernel computes faster ---===//
//
// Internal to lib/Codegen: forms of a row reduction that the row kernel
// (RowReductionKernel.cpp) computes with fewer passes over the row than its
// phase-per-reduction default. Both come from a cross entropy's body:
// logsumexp (a max, then a sum of exponentials against it) and the logit
// of the label (a sum that one element alone can make nonzero).
//
//===----------------------------------------------------------------------===//

#ifndef LS2C_CODEGEN_ROWREDUCTIONPATTERNS_H
#define LS2C_CODEGEN_ROWREDUCTIONPATTERNS_H

#include "ls2/IR/LS2Dialect.h"

#include <optional>

namespace ls2c::codegen {

/// reduce_sum(exp(y - broadcast(reduce_max(y)))), both over the same
/// trailing axes of the same y: the normalizer of a softmax. Computed in one
/// pass, the sum rescaled whenever the running max grows (Milakov and
/// Gimelshein, "Online normalizer calculation for softmax", arXiv
/// 1805.02867, algorithm 3). f16, bf16 and f32 only.
struct OnlineSoftmax {
  mlir::Operation *max; ///< the ls2.reduce_max
  mlir::Operation *sum; ///< the ls2.reduce_sum
  mlir::Value y;        ///< the operand of both
};
/// The pair that `reduction` (either of its two ops) belongs to, if any.
std::optional<OnlineSoftmax> matchOnlineSoftmax(mlir::Operation *reduction);

/// Whether `v` is y - broadcast(reduce_max(y)) over trailing axes of the
/// same y: at most 0 (or NaN) everywhere, a softmax's exponent.
bool isBelowRowMax(mlir::Value v);

/// reduce_sum(select(iota == broadcast(id), x, 0)) over the last axis alone,
/// the iota counting along it and id one integer per row (either operand
/// order of the compare): x at column id of its row, 0 when id is outside
/// the row. One load instead of a pass and a block reduction.
struct SelectedElement {
  mlir::Value x;  ///< the selected operand, the rows' shape
  mlir::Value id; ///< the per-row column, the rows' leading shape
};
std::optional<SelectedElement> matchSelectedElement(mlir::Operation *reduction);

} // namespace ls2c::codegen

#endif // LS2C_CODEGEN_ROWREDUCTIONPATTERNS_H
