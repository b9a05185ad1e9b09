//===- LS2VJPUtils.h - helpers shared by the ls2 vector-Jacobian products -===//
//
// Used by LS2VJP.cpp (elementwise), LS2VJPShapes.cpp (shape ops,
// reductions, matmul, embedding) and LS2VJPComposites.cpp (composites).
// Every helper builds ls2 ops at the builder's insertion point.
//
//===----------------------------------------------------------------------===//
#ifndef LS2_IR_LS2VJPUTILS_H
#define LS2_IR_LS2VJPUTILS_H

#include "ls2/IR/LS2Dialect.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace ls2c::ls2::vjp {

inline mlir::RankedTensorType tensorType(mlir::Value value) {
  return mlir::cast<mlir::RankedTensorType>(value.getType());
}

/// A ranked tensor of f32, f16 or bf16: the only values with gradients.
bool isFloatTensor(mlir::Value value);

/// A rank-0 constant of `elementType` holding `value`.
mlir::Value scalar(mlir::OpBuilder &b, mlir::Location loc,
                   mlir::Type elementType, double value);

/// One `ls2.dim` per dynamic dim of `value`, in order.
llvm::SmallVector<mlir::Value> dynamicDims(mlir::OpBuilder &b,
                                           mlir::Location loc,
                                           mlir::Value value);

/// A tensor of `type` filled with 0: a broadcast of a rank-0 constant, its
/// dynamic dims sized by `sizes`.
mlir::Value zeros(mlir::OpBuilder &b, mlir::Location loc,
                  mlir::RankedTensorType type, mlir::ValueRange sizes);

/// Casts to f32 when the element type is a narrower float.
mlir::Value toF32(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value);

/// Casts to `type` when it differs.
mlir::Value castTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                   mlir::RankedTensorType type);

/// Computes `body` on f32 copies of `inputs` and rounds its result once to
/// `type`: a chain of elementwise ops on f16/bf16 values rounds once, as the
/// composites do.
mlir::Value
inF32(mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType type,
      llvm::ArrayRef<mlir::Value> inputs,
      llvm::function_ref<mlir::Value(llvm::ArrayRef<mlir::Value>)> body);

/// The gradient of an operand of an elementwise op: `grad` has the op's
/// shape; a rank-0 operand (used for every element) gets its sum.
mlir::Value sumToOperand(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value grad, mlir::Value operand);

/// [0, 1, ..., n).
llvm::SmallVector<int64_t> iotaDims(int64_t n);

/// Fills `operandGrads` with one null per operand of `op` and returns true
/// when every result gradient is null (nothing to propagate).
bool noResultGrads(mlir::Operation *op, llvm::ArrayRef<mlir::Value> resultGrads,
                   llvm::SmallVectorImpl<mlir::Value> &operandGrads);

/// One null gradient per operand of `op`: for ops whose result is not a
/// float (nothing to differentiate).
mlir::LogicalResult noGradients(mlir::Operation *op,
                                llvm::SmallVectorImpl<mlir::Value> &operandGrads);

} // namespace ls2c::ls2::vjp

#endif // LS2_IR_LS2VJPUTILS_H
