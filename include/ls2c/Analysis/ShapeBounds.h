//===- ShapeBounds.h - upper bounds of every tensor's dynamic dims --------===//
//
// Token counts are dynamic (`?`) in the IR; the buffer plan and the fusion
// cost model need each tensor's largest shape. Function arguments carry
// theirs in the `ls2.max_shape` attribute (the frontend sets it from
// max_batch_tokens); every other value's bound follows from its operands:
// sizes read by ls2.dim, the row count of a matmul, the element count kept
// by a reshape, a fusion group's body. A bound is exact when the inputs are
// at their bounds.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_ANALYSIS_SHAPEBOUNDS_H
#define LS2C_ANALYSIS_SHAPEBOUNDS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace ls2c {

class ShapeBounds {
public:
  /// Bounds every value of `function` (fusion bodies included). Fails with
  /// an error on the op (or argument) whose dynamic dim has no bound.
  static mlir::FailureOr<ShapeBounds> compute(mlir::func::FuncOp function);

  /// The bound shape of a tensor value (static dims as they are).
  llvm::ArrayRef<int64_t> shape(mlir::Value value) const;
  /// The bound of an `index` value (a size read by ls2.dim).
  int64_t index(mlir::Value value) const;
  /// Elements of the bound shape.
  int64_t numElements(mlir::Value value) const;
  /// Bytes of the bound shape (i1 takes a byte per element).
  int64_t bytes(mlir::Value value) const;

  /// Gives `copy` the bound of `original`: for a pass that clones an op after
  /// the bounds were computed. `original` must have a bound.
  void copyBound(mlir::Value original, mlir::Value copy);

private:
  llvm::DenseMap<mlir::Value, llvm::SmallVector<int64_t, 4>> shapes;
  llvm::DenseMap<mlir::Value, int64_t> indices;
  friend class ShapeBoundsBuilder;
};

/// Bytes per element of a tensor element type (i1: 1).
int64_t elementBytes(mlir::Type elementType);

} // namespace ls2c

#endif // LS2C_ANALYSIS_SHAPEBOUNDS_H
