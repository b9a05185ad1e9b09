//===- SymbolicDims.h - dynamic dims as sizes of function arguments -------===//
//
// Generated kernels and the runtime need each dynamic (`?`) dim as something
// known per call: a dimension of one of the function's arguments (the token
// count is input_ids' dim 0, the sequence count + 1 is cu_seqlens' dim 0).
// This analysis names every dynamic dim of every value (fusion bodies
// included) and every `index` value that way, following the ops that carry
// sizes: ls2.dim, broadcast/iota/random_uniform size operands, elementwise
// ops, reshapes that keep one dynamic dim, matmul rows, gathers, attention.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_ANALYSIS_SYMBOLICDIMS_H
#define LS2C_ANALYSIS_SYMBOLICDIMS_H

#include "ls2c/Runtime/Program.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace ls2c {

class SymbolicDims {
public:
  /// Names the dims of every value in `function`. Fails with an error on the
  /// first op whose dynamic dim cannot be related to an argument's size.
  static mlir::FailureOr<SymbolicDims> compute(mlir::func::FuncOp function);

  /// The dims of a tensor value: static sizes as they are, dynamic ones as
  /// (argument, axis).
  llvm::ArrayRef<runtime::Dim> shape(mlir::Value value) const;
  /// The size an `index` value holds.
  runtime::Dim index(mlir::Value value) const;

private:
  llvm::DenseMap<mlir::Value, llvm::SmallVector<runtime::Dim, 4>> shapes;
  llvm::DenseMap<mlir::Value, runtime::Dim> indices;
  friend class SymbolicDimsBuilder;
};

/// `d` times num / den, normalized (a dynamic dim; num, den >= 1).
runtime::Dim scaleDim(runtime::Dim d, int64_t num, int64_t den);

/// True when both dims are the same static size or the same argument dim.
inline bool sameDim(const runtime::Dim &a, const runtime::Dim &b) {
  return a.isStatic() ? b.isStatic() && a.size == b.size
                      : a.argument == b.argument && a.axis == b.axis &&
                            a.multiplier == b.multiplier && a.divisor == b.divisor;
}

/// True when both shapes have the same rank and the same dims.
inline bool sameDims(llvm::ArrayRef<runtime::Dim> a, llvm::ArrayRef<runtime::Dim> b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!sameDim(a[i], b[i]))
      return false;
  return true;
}

} // namespace ls2c

#endif // LS2C_ANALYSIS_SYMBOLICDIMS_H
