//===- LS2VJPComposites.cpp - vector-Jacobian products of the composites --===//
//
// Composites differentiate through their backward composites (LS2Ops.td),
// which read what the forward saved and never re-run it:
//   dropout       -> dropout of the gradient (same seed, offset, stream, rate)
//   gelu          -> gelu_grad(dy, x)
//   layer_norm    -> layer_norm_grad(dy, x, gamma, mean, rstd)
//   softmax       -> softmax_grad(dy, y)
//   attention     -> attention_grad(dout, q, k, v, out, lse, ...)
//   cross_entropy -> cross_entropy_grad(dloss, logits, targets)
//
//===----------------------------------------------------------------------===//
#include "ls2/IR/LS2Dialect.h"
#include "ls2/IR/LS2VJPUtils.h"

using namespace mlir;
using namespace ls2c::ls2;
using namespace ls2c::ls2::vjp;

// y = keep ? x / (1 - rate) : 0, so dx = keep ? dy / (1 - rate) : 0: the
// same dropout applied to dy regenerates the same mask (dy has x's shape).
LogicalResult DropoutOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads))
    return success();
  operandGrads[0] =
      b.create<DropoutOp>(getLoc(), resultGrads[0], getSeed(), getOffset(),
                          getRateAttr(), getStreamAttr());
  return success();
}

LogicalResult GeluOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads))
    return success();
  operandGrads[0] = b.create<GeluGradOp>(getLoc(), resultGrads[0], getInput(),
                                         getApproximateAttr());
  return success();
}

// (dx, dgamma, dbeta) from layer_norm_grad. When a program also uses the
// mean or rstd results, their gradients add, in f32, over the last dim of
// size H (sum(x - mean) = 0 removes the mean's dependence from rstd's):
//   d mean / dx_j = 1 / H
//   d rstd / dx_j = -rstd^3 * (x_j - mean) / H
LogicalResult LayerNormOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads))
    return success();
  Location loc = getLoc();
  Value dy = resultGrads[0], dMean = resultGrads[1], dRstd = resultGrads[2];
  Value dx;
  if (dy) {
    auto grad = b.create<LayerNormGradOp>(loc, dy, getInput(), getGamma(),
                                          getMean(), getRstd());
    dx = grad.getDx();
    operandGrads[1] = grad.getDgamma();
    operandGrads[2] = grad.getDbeta();
  }
  if (dMean || dRstd) {
    auto type = getInput().getType();
    int64_t last = type.getRank() - 1;
    Type f32 = b.getF32Type();
    SmallVector<Value> sizes = dynamicDims(b, loc, getInput());
    SmallVector<int64_t> rowDims = iotaDims(last);
    auto toRows = [&](Value stat) -> Value {
      return b.create<BroadcastOp>(loc, type.clone(f32), stat, sizes,
                                   b.getDenseI64ArrayAttr(rowDims));
    };
    Value invH = scalar(b, loc, f32, 1.0 / static_cast<double>(
                                              type.getDimSize(last)));
    Value extra;
    if (dMean)
      extra = toRows(b.create<MulOp>(loc, dMean, invH));
    if (dRstd) {
      Value r = getRstd();
      Value r3 = b.create<MulOp>(loc, b.create<MulOp>(loc, r, r), r);
      Value coef = b.create<NegOp>(
          loc, b.create<MulOp>(loc, b.create<MulOp>(loc, dRstd, r3), invH));
      Value x = toF32(b, loc, getInput());
      Value centered = b.create<SubOp>(loc, x, toRows(getMean()));
      Value term = b.create<MulOp>(loc, toRows(coef), centered);
      extra = extra ? Value(b.create<AddOp>(loc, extra, term)) : term;
    }
    if (dx)
      extra = b.create<AddOp>(loc, toF32(b, loc, dx), extra);
    dx = castTo(b, loc, extra, type);
  }
  operandGrads[0] = dx;
  return success();
}

// dx = softmax_grad(dy, y) with the forward's scale. An additive (float)
// mask gets the same with scale 1, summed over the dims it is broadcast
// along; an i1 mask has no gradient.
LogicalResult SoftmaxOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads))
    return success();
  Location loc = getLoc();
  Value dy = resultGrads[0];
  operandGrads[0] = castTo(
      b, loc,
      b.create<SoftmaxGradOp>(loc, dy, getResult(), getScaleAttr()).getResult(),
      getInput().getType());
  Value mask = getMask();
  if (mask && isFloatTensor(mask)) {
    Value g = b.create<SoftmaxGradOp>(loc, dy, getResult(),
                                      b.getF32FloatAttr(1.0f));
    auto maskType = tensorType(mask), inputType = getInput().getType();
    SmallVector<int64_t> axes;
    for (int64_t d = 0; d < maskType.getRank(); ++d)
      if (maskType.getDimSize(d) == 1 && inputType.getDimSize(d) != 1)
        axes.push_back(d);
    if (!axes.empty())
      g = b.create<ReduceSumOp>(loc, g, axes, /*keep_dims=*/true);
    g = castTo(b, loc, g, tensorType(g).clone(maskType.getElementType()));
    if (g.getType() != maskType)
      return emitOpError("cannot build the gradient of the mask ")
             << maskType << ": the reduced gradient is " << g.getType();
    operandGrads[1] = g;
  }
  return success();
}

// (dq, dk, dv) from attention_grad, which reads out and lse (FlashAttention-2
// backward); the lse result itself has no gradient rule.
LogicalResult AttentionOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads))
    return success();
  if (resultGrads[1])
    return emitOpError("cannot be differentiated through its lse result: only "
                       "the output's gradient is supported");
  if (getKeyLengths())
    return emitOpError("with key_lengths (a KV cache's keys) has no gradient: "
                       "it serves incremental decoding only");
  auto grad = b.create<AttentionGradOp>(
      getLoc(), resultGrads[0], getQuery(), getKey(), getValue(), getResult(),
      getLse(), getCuSeqlensQ(), getCuSeqlensK(), getSeed(), getOffset(),
      getScaleAttr(), getCausalAttr(), getDropoutRateAttr(), getStreamAttr());
  operandGrads[0] = grad.getDq();
  operandGrads[1] = grad.getDk();
  operandGrads[2] = grad.getDv();
  return success();
}

LogicalResult CrossEntropyOp::buildVJP(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads))
    return success();
  operandGrads[0] = b.create<CrossEntropyGradOp>(
      getLoc(), resultGrads[0], getLogits(), getTargets(),
      getLabelSmoothingAttr(), getIgnoreIndexAttr(), getReductionAttr());
  return success();
}
