//===- PaddedRows.cpp - rows padded to 16 bytes for cuBLASLt ---------------===//
//
// See include/ls2c/Transforms/PaddedRows.h. Which users take a row stride is
// what the runtime's GEMM (lda/ldb/ldc) and the row-reduction kernel
// generator (RowReductionKernel.cpp: loads at r * stride + j, stores too)
// accept; anything else (a view, a loop group, a column reduction, a
// gather, the function's return) keeps the rows contiguous.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Transforms/PaddedRows.h"

#include "FusionRules.h"

#include "ls2/IR/LS2Dialect.h"

#include "mlir/IR/BuiltinTypes.h"

namespace ls2c {

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kRowStrides = "ls2.row_strides";

/// Whether `shape` is the rows a reduction of `body` reduces: the
/// reduction reduces exactly its last axis, so the kernel's row r is the
/// matrix's row r (RowReductionKernel.cpp stores padded rows at
/// r * stride + j; a reduction over all of [R, N] has one row of R x N).
bool reducesRowsOf(Block &body, ArrayRef<int64_t> shape) {
  return llvm::any_of(body, [&](Operation &op) {
    if (!isa<ls2::ReduceSumOp, ls2::ReduceMaxOp>(op) ||
        cast<RankedTensorType>(op.getOperand(0).getType()).getShape() != shape)
      return false;
    ArrayRef<int64_t> axes = isa<ls2::ReduceSumOp>(op) ? cast<ls2::ReduceSumOp>(op).getAxes()
                                                       : cast<ls2::ReduceMaxOp>(op).getAxes();
    return axes.size() == 1 && axes[0] == static_cast<int64_t>(shape.size()) - 1;
  });
}

/// A user that reads `v` through a row stride.
bool readsStrided(OpOperand &use) {
  Operation *user = use.getOwner();
  if (auto m = dyn_cast<ls2::MatmulOp>(user))
    return (use.get() == m.getA() || use.get() == m.getB()) &&
           cast<RankedTensorType>(m.getA().getType()).getRank() == 2 &&
           cast<RankedTensorType>(m.getB().getType()).getRank() == 2;
  auto f = dyn_cast<ls2::FusionOp>(user);
  if (!f || f.getKind() != ls2::FusionKind::RowReduction)
    return false;
  Block &body = f.getBody().front();
  BlockArgument arg = body.getArgument(use.getOperandNumber());
  ArrayRef<int64_t> shape = cast<RankedTensorType>(arg.getType()).getShape();
  if (!reducesRowsOf(body, shape))
    return false;
  return llvm::all_of(arg.getUsers(), [&](Operation *u) {
    return isa<ls2::ReduceSumOp, ls2::ReduceMaxOp>(u) || fusion::isElementwiseOfShape(u, shape);
  });
}

/// A producer that writes result `r` through a row stride.
bool writesStrided(Value r) {
  Operation *def = r.getDefiningOp();
  // A GEMM whose epilogue writes an aux (the GELU input, a ReLU mask) keeps
  // its rows contiguous: aux has its own leading dimension (auxLd).
  if (auto m = dyn_cast<ls2::MatmulOp>(def))
    return r == m.getResult() && !m.getActivation();
  auto f = dyn_cast<ls2::FusionOp>(def);
  if (!f || f.getKind() != ls2::FusionKind::RowReduction)
    return false;
  return reducesRowsOf(f.getBody().front(), cast<RankedTensorType>(r.getType()).getShape());
}

/// The padded stride of `r`, 0 when its rows stay contiguous.
int64_t strideFor(Value r) {
  auto type = dyn_cast<RankedTensorType>(r.getType());
  if (!type || type.getRank() != 2 || type.isDynamicDim(1) ||
      !isa<FloatType>(type.getElementType()))
    return 0;
  int64_t bytes = type.getElementType().getIntOrFloatBitWidth() / 8;
  int64_t n = type.getDimSize(1);
  if (bytes == 0 || 16 % bytes != 0 || (n * bytes) % 16 == 0 || r.use_empty())
    return 0;
  if (!writesStrided(r) || !llvm::all_of(r.getUses(), readsStrided))
    return 0;
  int64_t perRow = 16 / bytes;
  return (n + perRow - 1) / perRow * perRow;
}

} // namespace

int64_t paddedRowStride(Value v) {
  auto r = dyn_cast<OpResult>(v);
  if (!r)
    return 0;
  auto strides = r.getOwner()->getAttrOfType<DenseI64ArrayAttr>(kRowStrides);
  if (!strides || r.getResultNumber() >= strides.size())
    return 0;
  return strides[r.getResultNumber()];
}

void markPaddedRows(func::FuncOp f) {
  if (f.isExternal())
    return;
  for (Operation &op : f.getBody().front()) {
    op.removeAttr(kRowStrides);
    SmallVector<int64_t> strides;
    bool any = false;
    for (Value r : op.getResults()) {
      strides.push_back(strideFor(r));
      any |= strides.back() != 0;
    }
    if (any)
      op.setAttr(kRowStrides, DenseI64ArrayAttr::get(f.getContext(), strides));
  }
}

} // namespace ls2c
