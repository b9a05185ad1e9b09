//===- LS2VJPShapes.cpp - VJPs of shape ops, reductions, matmul, gather --===//
//
// DifferentiableOpInterface for broadcast, reshape, transpose, slice,
// concat, reduce_sum, reduce_max, matmul, gather and scatter_add, under the
// interface's rules (LS2Interfaces.td).
//
//===----------------------------------------------------------------------===//
#include "ls2/IR/LS2Dialect.h"
#include "ls2/IR/LS2VJPUtils.h"

#include <utility>

using namespace mlir;
using namespace ls2c::ls2;
using namespace ls2c::ls2::vjp;

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

// The sum over the broadcast's new dims, then (keeping them) over the dims
// it expanded from 1.
LogicalResult BroadcastOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads) ||
      !isFloatTensor(getResult()))
    return noGradients(*this, operandGrads);
  Location loc = getLoc();
  auto input = getInput().getType();
  auto result = getType();
  ArrayRef<int64_t> dims = getDims();
  Value g = resultGrads[0];
  SmallVector<int64_t> added;
  for (int64_t d = 0; d < result.getRank(); ++d)
    if (!llvm::is_contained(dims, d))
      added.push_back(d);
  if (!added.empty())
    g = b.create<ReduceSumOp>(loc, g, added);
  // g's dims are now the input's, in order; sum those expanded from 1.
  SmallVector<int64_t> expanded;
  for (int64_t i = 0; i < input.getRank(); ++i)
    if (input.getDimSize(i) == 1 && result.getDimSize(dims[i]) != 1)
      expanded.push_back(i);
  if (!expanded.empty())
    g = b.create<ReduceSumOp>(loc, g, expanded, /*keep_dims=*/true);
  if (g.getType() != input)
    return emitOpError("cannot build the gradient of its input: the reduced "
                       "gradient is ")
           << g.getType() << ", not " << input;
  operandGrads[0] = g;
  return success();
}

// The gradient reshaped back.
LogicalResult ReshapeOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads) ||
      !isFloatTensor(getResult()))
    return noGradients(*this, operandGrads);
  auto input = getInput().getType();
  if (llvm::count_if(input.getShape(), ShapedType::isDynamic) > 1)
    return emitOpError("cannot reshape the gradient back to ")
           << input << ": a reshape result has at most one dynamic dim";
  operandGrads[0] = b.create<ReshapeOp>(getLoc(), input, resultGrads[0]);
  return success();
}

// The gradient transposed by the inverse permutation.
LogicalResult TransposeOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads) ||
      !isFloatTensor(getResult()))
    return noGradients(*this, operandGrads);
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = static_cast<int64_t>(i);
  operandGrads[0] = b.create<TransposeOp>(getLoc(), resultGrads[0],
                                          b.getDenseI64ArrayAttr(inverse));
  return success();
}

// The gradient padded with zeros to the input's extent along the axis.
// (ls2-autodiff joins the gradients of slices that tile a value with one
// concat instead; this is the general rule.)
LogicalResult SliceOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads) ||
      !isFloatTensor(getResult()))
    return noGradients(*this, operandGrads);
  Location loc = getLoc();
  Value g = resultGrads[0];
  int64_t axis = getAxis(), start = getStart(), limit = getLimit();
  int64_t size = getInput().getType().getDimSize(axis);
  SmallVector<Value> sizes = dynamicDims(b, loc, g);
  auto gapType = [&](int64_t extent) {
    SmallVector<int64_t> shape(tensorType(g).getShape());
    shape[axis] = extent;
    return tensorType(g).clone(shape);
  };
  SmallVector<Value> pieces;
  if (start > 0)
    pieces.push_back(zeros(b, loc, gapType(start), sizes));
  pieces.push_back(g);
  if (limit < size)
    pieces.push_back(zeros(b, loc, gapType(size - limit), sizes));
  operandGrads[0] = pieces.size() == 1
                        ? g
                        : b.create<ConcatOp>(loc, pieces, axis).getResult();
  return success();
}

// Each input gets its slice of the gradient.
LogicalResult ConcatOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads) ||
      !isFloatTensor(getResult()))
    return noGradients(*this, operandGrads);
  if (getInputs().size() == 1) {
    operandGrads[0] = resultGrads[0];
    return success();
  }
  int64_t axis = getAxis(), offset = 0;
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    int64_t size = tensorType(input).getDimSize(axis);
    if (ShapedType::isDynamic(size))
      return emitOpError("cannot slice the gradient of input ")
             << i << ": its size along axis " << axis << " is dynamic";
    operandGrads[i] = b.create<SliceOp>(getLoc(), resultGrads[0], axis,
                                        offset, offset + size);
    offset += size;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

namespace {

/// Broadcasts `value` (a reduce result of `op`) back to the reduce input's
/// shape.
template <typename ReduceOpT>
Value unreduce(OpBuilder &b, ReduceOpT op, Value value) {
  Location loc = op.getLoc();
  auto input = op.getInput().getType();
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < input.getRank(); ++d)
    if (op.getKeepDims() || !llvm::is_contained(op.getAxes(), d))
      dims.push_back(d);
  return b.create<BroadcastOp>(loc, input.clone(tensorType(value).getElementType()),
                               value, dynamicDims(b, loc, op.getInput()),
                               b.getDenseI64ArrayAttr(dims));
}

} // namespace

// Every input element gets its row's gradient.
LogicalResult ReduceSumOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads) ||
      !isFloatTensor(getResult()))
    return noGradients(*this, operandGrads);
  operandGrads[0] = unreduce(b, *this, resultGrads[0]);
  return success();
}

// The elements equal to the maximum share the gradient evenly (as
// torch.amax and jax.numpy.max).
LogicalResult ReduceMaxOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads) ||
      !isFloatTensor(getResult()))
    return noGradients(*this, operandGrads);
  Location loc = getLoc();
  auto input = getInput().getType();
  Value hit = b.create<CompareOp>(loc, CompareDirection::EQ, getInput(),
                                  unreduce(b, *this, getResult()));
  Value mask = b.create<CastOp>(loc, input, hit);
  Value count = b.create<ReduceSumOp>(loc, mask, getAxes(), getKeepDims());
  Value share = b.create<DivOp>(loc, resultGrads[0], count);
  operandGrads[0] = b.create<MulOp>(loc, unreduce(b, *this, share), mask);
  return success();
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

namespace {

/// The result type of `ls2.matmul x, y` with the flags: x's batch dims,
/// then [M, N], in `element`.
RankedTensorType matmulType(Value x, Value y, bool ta, bool tb) {
  auto xt = tensorType(x), yt = tensorType(y);
  int64_t rx = xt.getRank(), ry = yt.getRank();
  SmallVector<int64_t> shape(xt.getShape().drop_back(2));
  shape.push_back(xt.getDimSize(ta ? rx - 1 : rx - 2));
  shape.push_back(yt.getDimSize(tb ? ry - 2 : ry - 1));
  return xt.clone(shape);
}

} // namespace

// C = op(A) op(B) with op = transpose under the flags. With dC cast to the
// operands' element type:
//   dA = dC op(B)^T  (transposed back when transpose_a)
//   dB = op(A)^T dC  (transposed back when transpose_b); a rank-2 b shared
//        by every batch gets the sum over the batch: one GEMM over the
//        flattened rows when a is not transposed.
LogicalResult MatmulOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  if (getBias() || getBiasGrad() || getActivation())
    return emitOpError("has a cuBLASLt epilogue; differentiate before ls2-fuse "
                       "attaches epilogues");
  if (noResultGrads(*this, resultGrads, operandGrads))
    return success();
  Location loc = getLoc();
  Value a = getA(), bv = getB();
  auto aType = getA().getType(), bType = getB().getType();
  bool ta = getTransposeA(), tb = getTransposeB();
  TypeAttr acc = getAccTypeAttr();
  int64_t ra = aType.getRank(), rb = bType.getRank();
  Value g = castTo(b, loc, resultGrads[0],
                   cast<RankedTensorType>(getResult().getType()).clone(aType.getElementType()));
  auto matmul = [&](Value x, Value y, bool tx, bool ty) -> Value {
    return b.create<MatmulOp>(loc, matmulType(x, y, tx, ty), Type(), x, y,
                              Value(), tx, ty, acc)
        .getResult();
  };
  auto swapLastTwo = [&](Value value) -> Value {
    int64_t rank = tensorType(value).getRank();
    SmallVector<int64_t> perm = iotaDims(rank);
    std::swap(perm[rank - 1], perm[rank - 2]);
    return b.create<TransposeOp>(loc, value, b.getDenseI64ArrayAttr(perm));
  };

  // [..., M, K] -> [rows, K]: possible when that leaves one dynamic dim.
  auto canFlatten = [](Value value) {
    auto type = tensorType(value);
    return !type.isDynamicDim(type.getRank() - 1) ||
           llvm::none_of(type.getShape().drop_back(), ShapedType::isDynamic);
  };
  auto flatten = [&](Value value) -> Value {
    auto type = tensorType(value);
    int64_t rows = 1;
    for (int64_t d : type.getShape().drop_back())
      rows = ShapedType::isDynamic(d) || ShapedType::isDynamic(rows)
                 ? ShapedType::kDynamic
                 : rows * d;
    return b.create<ReshapeOp>(
        loc, type.clone({rows, type.getDimSize(type.getRank() - 1)}), value);
  };

  // dA: [..., M, K] = dC [..., M, N] x op(B)^T.
  Value da = matmul(g, bv, false, !tb);
  if (ta)
    da = swapLastTwo(da);

  // dB.
  Value db;
  if (rb == ra) {
    db = tb ? matmul(g, a, true, ta) : matmul(a, g, !ta, false);
  } else if (!ta && canFlatten(a) && canFlatten(g)) {
    // b is [K, N] (or [N, K]) shared over a's batch: flatten a [..., M, K]
    // and dC [..., M, N] to rows and contract over all of them at once.
    Value a2 = flatten(a), g2 = flatten(g);
    db = tb ? matmul(g2, a2, true, false) : matmul(a2, g2, true, false);
  } else {
    // Per-batch products in f32, summed over the batch, rounded once.
    Value x = tb ? g : a, y = tb ? a : g;
    bool tx = tb ? true : !ta, ty = tb ? ta : false;
    Type f32 = b.getF32Type();
    Value perBatch =
        b.create<MatmulOp>(loc, matmulType(x, y, tx, ty).clone(f32), Type(), x,
                           y, Value(), tx, ty, acc)
            .getResult();
    db = castTo(b, loc,
                b.create<ReduceSumOp>(loc, perBatch, iotaDims(ra - 2)),
                bType);
  }

  if (da.getType() != aType || db.getType() != bType)
    return emitOpError("cannot build the operand gradients with the "
                       "operands' types: got ")
           << da.getType() << " and " << db.getType() << " for " << aType
           << " and " << bType;
  operandGrads[0] = da;
  operandGrads[1] = db;
  return success();
}

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

// d gather(table, ids) = scatter_add(dy, ids) into the table's shape (a
// dynamic row count read from the table); filled rows (ids out of range)
// are dropped.
LogicalResult GatherOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads) ||
      !isFloatTensor(getResult()))
    return noGradients(*this, operandGrads);
  operandGrads[0] = b.create<ScatterAddOp>(
      getLoc(), getTable().getType(), resultGrads[0], getIds(),
      dynamicDims(b, getLoc(), getTable()), /*padding_idx=*/nullptr,
      /*drop_out_of_range=*/getFillValueAttr() != nullptr);
  return success();
}

// d scatter_add(updates, ids) = gather(dy, ids), zero at padding_idx rows
// (and, when out-of-range ids are dropped, at theirs).
LogicalResult ScatterAddOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads))
    return success();
  Location loc = getLoc();
  Value g = b.create<GatherOp>(loc, resultGrads[0], getIds(),
                               getDropOutOfRange() ? b.getF64FloatAttr(0.0) : nullptr);
  if (auto pad = getPaddingIdx()) {
    auto ids = getIds().getType();
    Value padId = b.create<ConstantOp>(
        loc, DenseElementsAttr::get(
                 RankedTensorType::get({}, ids.getElementType()),
                 b.getIntegerAttr(ids.getElementType(),
                                  static_cast<int64_t>(*pad))));
    Value padded = b.create<CompareOp>(loc, CompareDirection::EQ, getIds(),
                                       padId);
    auto type = tensorType(g);
    if (type.getRank() != ids.getRank())
      padded = b.create<BroadcastOp>(
          loc, type.clone(b.getI1Type()), padded, dynamicDims(b, loc, g),
          b.getDenseI64ArrayAttr(iotaDims(ids.getRank())));
    g = b.create<SelectOp>(loc, padded,
                           scalar(b, loc, type.getElementType(), 0.0), g);
  }
  operandGrads[0] = g;
  return success();
}
