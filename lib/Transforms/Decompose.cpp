//===- Decompose.cpp - ls2-decompose: composites into primitives ----------===//
#include "BuildUtils.h"

#include "ls2c/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <string>

namespace ls2c {
#define GEN_PASS_DEF_DECOMPOSE
#include "ls2c/Transforms/Passes.h.inc"
} // namespace ls2c

using namespace mlir;
using namespace ls2c;
using namespace ls2c::ls2;

namespace {

// Short names for the shared builders (BuildUtils.h) used throughout.
Value scalar(PatternRewriter &rewriter, Location loc, Type elementType,
             double value) {
  return buildScalar(rewriter, loc, elementType, value);
}
Value intScalar(PatternRewriter &rewriter, Location loc, Type elementType,
                int64_t value) {
  return buildIntScalar(rewriter, loc, elementType, value);
}
/// Casts `value` to f32 when it is a narrower float (f16, bf16).
Value toF32(PatternRewriter &rewriter, Location loc, Value value) {
  return buildCast(rewriter, loc, value, rewriter.getF32Type());
}
/// Casts `value` back to `type`'s element type (same shape).
Value castTo(PatternRewriter &rewriter, Location loc, Value value,
             RankedTensorType type) {
  return buildCast(rewriter, loc, value, type.getElementType());
}
RankedTensorType tensorType(Value value) { return tensorTypeOf(value); }

/// Per dim of `value`: its `ls2.dim` when dynamic, null when static.
SmallVector<Value> dimValues(PatternRewriter &rewriter, Location loc,
                             Value value) {
  SmallVector<Value> dims;
  for (auto [i, size] : llvm::enumerate(tensorType(value).getShape()))
    dims.push_back(ShapedType::isDynamic(size)
                       ? rewriter.create<DimOp>(loc, value, i).getResult()
                       : Value());
  return dims;
}

/// The non-null entries of `dims`: the dynamic sizes of a broadcast, iota
/// or random_uniform of that shape.
SmallVector<Value> dynamicOnly(ArrayRef<Value> dims) {
  SmallVector<Value> sizes;
  for (Value dim : dims)
    if (dim)
      sizes.push_back(dim);
  return sizes;
}

/// One `ls2.dim` per dynamic dim of `value`, in order.
SmallVector<Value> dynamicDims(PatternRewriter &rewriter, Location loc,
                               Value value) {
  return dynamicOnly(dimValues(rewriter, loc, value));
}

/// Broadcasts `value` into `shape` (whose dynamic dims have `sizes`), its
/// dim i going to dims[i]. Values already of that shape, and rank-0 values
/// (which every elementwise op accepts), are returned as they are.
Value broadcastTo(PatternRewriter &rewriter, Location loc, Value value,
                  ArrayRef<int64_t> shape, ValueRange sizes,
                  ArrayRef<int64_t> dims) {
  auto type = tensorType(value);
  if (type.getRank() == 0 || type.getShape() == shape)
    return value;
  return rewriter.create<BroadcastOp>(loc, type.clone(shape), value, sizes,
                                      dims);
}

/// [0, 1, ..., n).
SmallVector<int64_t> iotaDims(int64_t n) {
  SmallVector<int64_t> dims(n);
  std::iota(dims.begin(), dims.end(), 0);
  return dims;
}

Value compare(PatternRewriter &rewriter, Location loc, CompareDirection dir,
              Value lhs, Value rhs) {
  return rewriter.create<CompareOp>(loc, dir, lhs, rhs);
}

/// gelu(x) = 0.5 x (1 + erf(x / sqrt 2)), or the tanh form, in f32.
struct DecomposeGelu : OpRewritePattern<GeluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GeluOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = toF32(rewriter, loc, op.getInput());
    Type f32 = rewriter.getF32Type();
    Value inner;
    if (op.getApproximate() == GeluApproximation::None) {
      Value scaled =
          rewriter.create<MulOp>(loc, x, scalar(rewriter, loc, f32, M_SQRT1_2));
      inner = rewriter.create<ErfOp>(loc, scaled);
    } else {
      // tanh(sqrt(2/pi) * (x + 0.044715 x^3))
      Value x3 =
          rewriter.create<MulOp>(loc, rewriter.create<MulOp>(loc, x, x), x);
      Value poly = rewriter.create<AddOp>(
          loc, x,
          rewriter.create<MulOp>(loc, x3,
                                 scalar(rewriter, loc, f32, 0.044715)));
      Value arg = rewriter.create<MulOp>(
          loc, poly, scalar(rewriter, loc, f32, std::sqrt(2.0 / M_PI)));
      inner = rewriter.create<TanhOp>(loc, arg);
    }
    Value onePlus =
        rewriter.create<AddOp>(loc, inner, scalar(rewriter, loc, f32, 1.0));
    Value half =
        rewriter.create<MulOp>(loc, x, scalar(rewriter, loc, f32, 0.5));
    Value y = rewriter.create<MulOp>(loc, half, onePlus);
    rewriter.replaceOp(op, castTo(rewriter, loc, y, op.getType()));
    return success();
  }
};

/// y = (x - mean) * rstd * gamma + beta over the last dim, statistics in f32.
struct DecomposeLayerNorm : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type f32 = rewriter.getF32Type();
    auto type = op.getInput().getType();
    int64_t rank = type.getRank(), last = rank - 1;
    ArrayRef<int64_t> shape = type.getShape();
    SmallVector<Value> sizes = dynamicDims(rewriter, loc, op.getInput());
    SmallVector<int64_t> rowDims = iotaDims(last);
    Value hidden = scalar(rewriter, loc, f32, static_cast<double>(shape[last]));

    Value x = toF32(rewriter, loc, op.getInput());
    Value sum = rewriter.create<ReduceSumOp>(loc, x, ArrayRef<int64_t>{last});
    Value mean = rewriter.create<DivOp>(loc, sum, hidden);
    Value xc = rewriter.create<SubOp>(
        loc, x, broadcastTo(rewriter, loc, mean, shape, sizes, rowDims));
    Value sq = rewriter.create<MulOp>(loc, xc, xc);
    Value var = rewriter.create<DivOp>(
        loc, rewriter.create<ReduceSumOp>(loc, sq, ArrayRef<int64_t>{last}),
        hidden);
    Value eps = scalar(rewriter, loc, f32, op.getEpsilon().convertToFloat());
    Value rstd =
        rewriter.create<RsqrtOp>(loc, rewriter.create<AddOp>(loc, var, eps));

    Value norm = rewriter.create<MulOp>(
        loc, xc, broadcastTo(rewriter, loc, rstd, shape, sizes, rowDims));
    Value gamma =
        broadcastTo(rewriter, loc, toF32(rewriter, loc, op.getGamma()), shape,
                    sizes, {last});
    Value beta = broadcastTo(rewriter, loc, toF32(rewriter, loc, op.getBeta()),
                             shape, sizes, {last});
    Value y = rewriter.create<AddOp>(
        loc, rewriter.create<MulOp>(loc, norm, gamma), beta);
    rewriter.replaceOp(
        op, {castTo(rewriter, loc, y, op.getResult().getType()), mean, rstd});
    return success();
  }
};

/// Why a softmax cannot be decomposed, if it cannot. The verifier already
/// rejects the rank and mask cases; checking them again keeps a builder
/// below from aborting ("Failed to infer result type(s)") or building an
/// invalid ls2.broadcast should its rules ever be loosened.
std::optional<std::string> softmaxRefusal(SoftmaxOp op) {
  auto input = op.getInput().getType();
  if (input.getRank() < 1)
    return std::string("the input must have rank >= 1");
  if (op.getCausal() && input.getRank() < 2)
    return std::string("causal needs rank >= 2");
  if (op.getCausal())
    for (int64_t size : input.getShape().take_back(2))
      // Query and key positions are i32 iotas (and Sk - Sq an i32 constant).
      if (!ShapedType::isDynamic(size) &&
          size - 1 > std::numeric_limits<int32_t>::max())
        return "causal positions are i32: the last two dims must be at most "
               "2^31, got " + std::to_string(size);
  Value mask = op.getMask();
  if (!mask)
    return std::nullopt;
  auto maskType = tensorType(mask);
  if (maskType.getRank() != input.getRank())
    return std::string("the mask must have the input's rank");
  for (int64_t d = 0; d < input.getRank(); ++d)
    if (maskType.getDimSize(d) != 1 &&
        maskType.getDimSize(d) != input.getDimSize(d))
      // ls2.broadcast takes a size-1 or identical dim only: a dynamic dim
      // against a static one may be either at run time.
      return "mask dim " + std::to_string(d) +
             " must be 1 or identical to the input's";
  return std::nullopt;
}

/// softmax(scale * x + mask) over the last dim in f32; rows with no visible
/// key give zeros.
struct DecomposeSoftmax : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    if (auto reason = softmaxRefusal(op))
      return rewriter.notifyMatchFailure(op, *reason);
    Location loc = op.getLoc();
    Type f32 = rewriter.getF32Type();
    auto type = op.getInput().getType();
    int64_t rank = type.getRank(), last = rank - 1;
    ArrayRef<int64_t> shape = type.getShape();
    SmallVector<Value> dims = dimValues(rewriter, loc, op.getInput());
    SmallVector<Value> sizes = dynamicOnly(dims);
    Value negInf =
        scalar(rewriter, loc, f32, -std::numeric_limits<double>::infinity());

    Value s = toF32(rewriter, loc, op.getInput());
    if (float scale = op.getScale().convertToFloat(); scale != 1.0f)
      s = rewriter.create<MulOp>(loc, s, scalar(rewriter, loc, f32, scale));
    if (Value mask = op.getMask()) {
      // Same rank, each mask dim equal or 1: broadcast's rule as it is.
      bool additive = !tensorType(mask).getElementType().isInteger(1);
      Value m = additive ? toF32(rewriter, loc, mask) : mask;
      m = broadcastTo(rewriter, loc, m, shape, sizes, iotaDims(rank));
      s = additive ? Value(rewriter.create<AddOp>(loc, s, m))
                   : Value(rewriter.create<SelectOp>(loc, m, s, negInf));
    }
    if (op.getCausal())
      s = rewriter.create<SelectOp>(loc, causalKeep(rewriter, loc, op, dims), s,
                                    negInf);

    // A row that is all -inf has max -inf: use 0 so exp gives 0, not NaN.
    Value zero = scalar(rewriter, loc, f32, 0.0);
    Value max = rewriter.create<ReduceMaxOp>(loc, s, ArrayRef<int64_t>{last},
                                             /*keep_dims=*/true);
    max = rewriter.create<SelectOp>(
        loc, compare(rewriter, loc, CompareDirection::EQ, max, negInf), zero,
        max);
    Value e = rewriter.create<ExpOp>(
        loc, rewriter.create<SubOp>(loc, s,
                                    broadcastTo(rewriter, loc, max, shape,
                                                sizes, iotaDims(rank))));
    // ... and its sum is 0: divide by 1 so the row stays all zeros.
    Value z = rewriter.create<ReduceSumOp>(loc, e, ArrayRef<int64_t>{last},
                                           /*keep_dims=*/true);
    Value one = scalar(rewriter, loc, f32, 1.0);
    z = rewriter.create<SelectOp>(
        loc, compare(rewriter, loc, CompareDirection::EQ, z, zero), one, z);
    Value p = rewriter.create<DivOp>(
        loc, e, broadcastTo(rewriter, loc, z, shape, sizes, iotaDims(rank)));
    rewriter.replaceOp(op, castTo(rewriter, loc, p, op.getType()));
    return success();
  }

  /// keep[..., i, j] = j <= i + (Sk - Sq), broadcast to the input's shape.
  static Value causalKeep(PatternRewriter &rewriter, Location loc, SoftmaxOp op,
                          ArrayRef<Value> dims) {
    auto type = op.getInput().getType();
    int64_t rank = type.getRank();
    Type i32 = rewriter.getI32Type();
    SmallVector<Value> qkSizes = dynamicOnly(dims.take_back(2));
    auto qkType = RankedTensorType::get(type.getShape().take_back(2), i32);
    Value query = rewriter.create<IotaOp>(loc, qkType, qkSizes, uint64_t{0});
    Value key = rewriter.create<IotaOp>(loc, qkType, qkSizes, uint64_t{1});

    // Sk - Sq as a rank-0 tensor. A dynamic length has no index -> tensor
    // op to carry it; the largest index along that dim, reduce_max(iota), is
    // length - 1, and the -1s cancel.
    auto lastIndex = [&](int64_t d) -> Value {
      if (!type.isDynamicDim(d))
        return intScalar(rewriter, loc, i32, type.getDimSize(d) - 1);
      auto lineType = RankedTensorType::get({ShapedType::kDynamic}, i32);
      Value line = rewriter.create<IotaOp>(loc, lineType, dims[d], uint64_t{0});
      return rewriter.create<ReduceMaxOp>(loc, line, ArrayRef<int64_t>{0});
    };
    Value offset;
    if (type.isDynamicDim(rank - 2) || type.isDynamicDim(rank - 1)) {
      Value lastQuery = lastIndex(rank - 2);
      Value lastKey = lastIndex(rank - 1);
      offset = rewriter.create<SubOp>(loc, lastKey, lastQuery);
    } else {
      offset = intScalar(rewriter, loc, i32,
                         type.getDimSize(rank - 1) - type.getDimSize(rank - 2));
    }
    Value limit = rewriter.create<AddOp>(loc, query, offset);
    Value keep = compare(rewriter, loc, CompareDirection::LE, key, limit);
    return broadcastTo(rewriter, loc, keep, type.getShape(), dynamicOnly(dims),
                       {rank - 2, rank - 1});
  }
};

/// keep = u >= rate; result = keep ? x * (1 / (1 - rate)) : 0.
struct DecomposeDropout : OpRewritePattern<DropoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DropoutOp op,
                                PatternRewriter &rewriter) const override {
    float rate = op.getRate().convertToFloat();
    if (rate == 0.0f) {
      rewriter.replaceOp(op, op.getInput());
      return success();
    }
    Location loc = op.getLoc();
    Type f32 = rewriter.getF32Type();
    auto type = op.getInput().getType();
    Value u = rewriter.create<RandomUniformOp>(
        loc, type.clone(f32), op.getSeed(), op.getOffset(),
        dynamicDims(rewriter, loc, op.getInput()), op.getStream());
    Value keep = compare(rewriter, loc, CompareDirection::GE, u,
                         scalar(rewriter, loc, f32, rate));
    // The reciprocal in double, rounded once to f32: x * (1 / (1 - p)).
    Value x = toF32(rewriter, loc, op.getInput());
    Value scaled = rewriter.create<MulOp>(
        loc, x,
        scalar(rewriter, loc, f32, 1.0 / (1.0 - static_cast<double>(rate))));
    Value y = rewriter.create<SelectOp>(loc, keep, scaled,
                                        scalar(rewriter, loc, f32, 0.0));
    rewriter.replaceOp(op, castTo(rewriter, loc, y, type));
    return success();
  }
};

/// Rows whose target is not ignore_index (i1 [N]). Compares in i64 when i32
/// targets cannot hold ignore_index (then no row is ignored, and the compare
/// says so without wrapping the constant).
Value validRows(PatternRewriter &rewriter, Location loc, Value targets,
                int64_t ignore) {
  Type idType = tensorType(targets).getElementType();
  Value ids = targets;
  if (idType.isInteger(32) && (ignore < std::numeric_limits<int32_t>::min() ||
                               ignore > std::numeric_limits<int32_t>::max()))
    ids = rewriter.create<CastOp>(
        loc, tensorType(targets).clone(rewriter.getI64Type()), targets);
  return compare(
      rewriter, loc, CompareDirection::NE, ids,
      intScalar(rewriter, loc, tensorType(ids).getElementType(), ignore));
}

/// max(number of valid rows, 1) in f32. Counts of 0/1 are exact in f32 up
/// to 2^24 rows; max(count, 1) makes an all-ignored batch 0 / 1 = 0, not
/// NaN.
Value validCount(PatternRewriter &rewriter, Location loc, Value valid) {
  Type f32 = rewriter.getF32Type();
  const int64_t rowAxis[] = {0};
  Value count = rewriter.create<ReduceSumOp>(
      loc, rewriter.create<CastOp>(loc, tensorType(valid).clone(f32), valid),
      rowAxis);
  return rewriter.create<MaxOp>(loc, count, scalar(rewriter, loc, f32, 1.0));
}

/// Why a cross_entropy or cross_entropy_grad cannot be decomposed, if it
/// cannot.
template <typename OpT>
std::optional<std::string> crossEntropyRefusal(OpT op) {
  auto logits = op.getLogits().getType();
  auto targets = op.getTargets().getType();
  if (logits.isDynamicDim(0) != targets.isDynamicDim(0))
    // The one-hot compare needs both [rows, classes] operands of one type.
    return std::string("logits rows and targets rows must be both static or "
                       "both dynamic");
  // Class indices are an iota of the targets' element type.
  if (targets.getElementType().isInteger(32) &&
      logits.getDimSize(1) - 1 > std::numeric_limits<int32_t>::max())
    return "class indices are i32 like the targets: " +
           std::to_string(logits.getDimSize(1)) + " classes need i64 targets";
  return std::nullopt;
}

/// Per row in f32: (1 - eps)(lse - x[t]) + eps(lse - mean(x)), 0 where the
/// target is ignore_index; then none, sum or mean over non-ignored rows.
struct DecomposeCrossEntropy : OpRewritePattern<CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyOp op,
                                PatternRewriter &rewriter) const override {
    if (auto reason = crossEntropyRefusal(op))
      return rewriter.notifyMatchFailure(op, *reason);
    Location loc = op.getLoc();
    Type f32 = rewriter.getF32Type();
    auto type = op.getLogits().getType();
    ArrayRef<int64_t> shape = type.getShape();
    Value targets = op.getTargets();
    Type idType = tensorType(targets).getElementType();
    SmallVector<Value> sizes = dynamicDims(rewriter, loc, op.getLogits());
    Value zero = scalar(rewriter, loc, f32, 0.0);
    const int64_t classAxis[] = {1};

    Value x = toF32(rewriter, loc, op.getLogits());
    Value max = rewriter.create<ReduceMaxOp>(loc, x, classAxis);
    Value e = rewriter.create<ExpOp>(
        loc, rewriter.create<SubOp>(
                 loc, x, broadcastTo(rewriter, loc, max, shape, sizes, {0})));
    Value sumE = rewriter.create<ReduceSumOp>(loc, e, classAxis);
    Value lse =
        rewriter.create<AddOp>(loc, rewriter.create<LogOp>(loc, sumE), max);

    Value classes = rewriter.create<IotaOp>(
        loc, RankedTensorType::get(shape, idType), sizes, uint64_t{1});
    Value hit = compare(rewriter, loc, CompareDirection::EQ, classes,
                        broadcastTo(rewriter, loc, targets, shape, sizes, {0}));
    Value xt = rewriter.create<ReduceSumOp>(
        loc, rewriter.create<SelectOp>(loc, hit, x, zero), classAxis);
    Value loss = rewriter.create<SubOp>(loc, lse, xt);
    if (double eps = op.getLabelSmoothing().convertToFloat(); eps != 0.0) {
      Value sumX = rewriter.create<ReduceSumOp>(loc, x, classAxis);
      Value meanX = rewriter.create<DivOp>(
          loc, sumX, scalar(rewriter, loc, f32, static_cast<double>(shape[1])));
      Value smooth = rewriter.create<SubOp>(loc, lse, meanX);
      Value hard = rewriter.create<MulOp>(
          loc, loss, scalar(rewriter, loc, f32, 1.0 - eps));
      Value soft =
          rewriter.create<MulOp>(loc, smooth, scalar(rewriter, loc, f32, eps));
      loss = rewriter.create<AddOp>(loc, hard, soft);
    }

    Value valid = validRows(rewriter, loc, targets,
                            static_cast<int64_t>(op.getIgnoreIndex()));
    loss = rewriter.create<SelectOp>(loc, valid, loss, zero);

    Value result = loss;
    if (op.getReduction() != LossReduction::None) {
      const int64_t rowAxis[] = {0};
      result = rewriter.create<ReduceSumOp>(loc, loss, rowAxis);
      if (op.getReduction() == LossReduction::Mean)
        result = rewriter.create<DivOp>(loc, result,
                                        validCount(rewriter, loc, valid));
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// One Adam / AdamW step, as the op's description writes it.
struct DecomposeAdamW : OpRewritePattern<AdamWOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AdamWOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type f32 = rewriter.getF32Type();
    auto cst = [&](double v) { return scalar(rewriter, loc, f32, v); };
    double beta1 = op.getBeta1().convertToFloat();
    double beta2 = op.getBeta2().convertToFloat();
    double wd = op.getWeightDecay().convertToFloat();
    Value lr = op.getLr();

    Value p = op.getParam();
    Value g = rewriter.create<MulOp>(loc, toF32(rewriter, loc, op.getGrad()),
                                     op.getGradScale());
    if (wd != 0.0) {
      if (op.getMode() == WeightDecayMode::Decoupled) {
        Value lrWd = rewriter.create<MulOp>(loc, lr, cst(wd));
        p = rewriter.create<SubOp>(loc, p,
                                   rewriter.create<MulOp>(loc, lrWd, p));
      } else {
        g = rewriter.create<AddOp>(loc, g,
                                   rewriter.create<MulOp>(loc, cst(wd), p));
      }
    }
    Value mOld = rewriter.create<MulOp>(loc, cst(beta1), op.getExpAvg());
    Value mNew = rewriter.create<MulOp>(loc, cst(1.0 - beta1), g);
    Value m = rewriter.create<AddOp>(loc, mOld, mNew);
    Value vOld = rewriter.create<MulOp>(loc, cst(beta2), op.getExpAvgSq());
    Value g2 = rewriter.create<MulOp>(loc, g, g);
    Value vNew = rewriter.create<MulOp>(loc, cst(1.0 - beta2), g2);
    Value v = rewriter.create<AddOp>(loc, vOld, vNew);

    // b^t = exp(t * log b), log b folded here; log 0 = -inf gives 0^t = 0.
    Value t = rewriter.create<CastOp>(loc, RankedTensorType::get({}, f32),
                                      op.getStep());
    auto correction = [&](double beta) -> Value {
      Value power = rewriter.create<ExpOp>(
          loc, rewriter.create<MulOp>(loc, t, cst(std::log(beta))));
      return rewriter.create<SubOp>(loc, cst(1.0), power);
    };
    Value mHat = rewriter.create<DivOp>(loc, m, correction(beta1));
    Value vHat = rewriter.create<DivOp>(loc, v, correction(beta2));
    Value root = rewriter.create<SqrtOp>(loc, vHat);
    Value denom = rewriter.create<AddOp>(loc, root,
                                         cst(op.getEpsilon().convertToFloat()));
    Value step = rewriter.create<DivOp>(
        loc, rewriter.create<MulOp>(loc, lr, mHat), denom);
    Value newParam = rewriter.create<SubOp>(loc, p, step);
    rewriter.replaceOp(op, {newParam, m, v});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Backward composites (attention_grad stays opaque, as attention does)
//===----------------------------------------------------------------------===//

/// dx = dy * gelu'(x) in f32, the exact derivative of each form.
struct DecomposeGeluGrad : OpRewritePattern<GeluGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GeluGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type f32 = rewriter.getF32Type();
    auto cst = [&](double v) { return scalar(rewriter, loc, f32, v); };
    Value x = toF32(rewriter, loc, op.getInput());
    Value dy = toF32(rewriter, loc, op.getDy());
    Value half = cst(0.5);
    Value derivative;
    if (op.getApproximate() == GeluApproximation::None) {
      // Phi(x) + x phi(x), Phi(x) = 0.5 (1 + erf(x / sqrt 2)),
      // phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
      Value erf = rewriter.create<ErfOp>(
          loc, rewriter.create<MulOp>(loc, x, cst(M_SQRT1_2)));
      Value cdf = rewriter.create<MulOp>(
          loc, rewriter.create<AddOp>(loc, erf, cst(1.0)), half);
      Value x2 = rewriter.create<MulOp>(loc, x, x);
      Value gauss = rewriter.create<ExpOp>(
          loc, rewriter.create<MulOp>(loc, x2, cst(-0.5)));
      Value pdf = rewriter.create<MulOp>(loc, gauss,
                                         cst(0.5 * M_2_SQRTPI * M_SQRT1_2));
      derivative = rewriter.create<AddOp>(
          loc, cdf, rewriter.create<MulOp>(loc, x, pdf));
    } else {
      // t = tanh(k (x + c x^3)), k = sqrt(2/pi), c = 0.044715:
      // 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2).
      const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
      Value x2 = rewriter.create<MulOp>(loc, x, x);
      Value x3 = rewriter.create<MulOp>(loc, x2, x);
      Value poly =
          rewriter.create<AddOp>(loc, x, rewriter.create<MulOp>(loc, x3, cst(c)));
      Value t = rewriter.create<TanhOp>(
          loc, rewriter.create<MulOp>(loc, poly, cst(k)));
      Value left = rewriter.create<MulOp>(
          loc, rewriter.create<AddOp>(loc, t, cst(1.0)), half);
      // Sequenced: argument evaluation order would make the IR
      // compiler-dependent.
      Value t2 = rewriter.create<MulOp>(loc, t, t);
      Value sech2 = rewriter.create<SubOp>(loc, cst(1.0), t2);
      Value cubic = rewriter.create<MulOp>(loc, x2, cst(3.0 * c));
      Value dpoly = rewriter.create<MulOp>(
          loc, rewriter.create<AddOp>(loc, cubic, cst(1.0)), cst(k));
      Value right = rewriter.create<MulOp>(
          loc,
          rewriter.create<MulOp>(loc, rewriter.create<MulOp>(loc, x, half),
                                 sech2),
          dpoly);
      derivative = rewriter.create<AddOp>(loc, left, right);
    }
    Value dx = rewriter.create<MulOp>(loc, dy, derivative);
    rewriter.replaceOp(op, castTo(rewriter, loc, dx, op.getType()));
    return success();
  }
};

/// In f32 over the last dim, xhat = (x - mean) rstd, g = dy gamma:
///   dx = rstd (g - mean(g) - xhat mean(g xhat))
///   dgamma = sum_rows(dy xhat), dbeta = sum_rows(dy).
struct DecomposeLayerNormGrad : OpRewritePattern<LayerNormGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type f32 = rewriter.getF32Type();
    auto type = op.getInput().getType();
    int64_t last = type.getRank() - 1;
    ArrayRef<int64_t> shape = type.getShape();
    SmallVector<Value> sizes = dynamicDims(rewriter, loc, op.getInput());
    SmallVector<int64_t> rowDims = iotaDims(last);
    const int64_t lastAxis[] = {last};
    Value hidden = scalar(rewriter, loc, f32, static_cast<double>(shape[last]));
    auto toRows = [&](Value stat) {
      return broadcastTo(rewriter, loc, stat, shape, sizes, rowDims);
    };
    auto meanOverLast = [&](Value v) -> Value {
      return rewriter.create<DivOp>(
          loc, rewriter.create<ReduceSumOp>(loc, v, lastAxis), hidden);
    };

    Value x = toF32(rewriter, loc, op.getInput());
    Value dy = toF32(rewriter, loc, op.getDy());
    Value rstd = toRows(op.getRstd());
    Value xhat = rewriter.create<MulOp>(
        loc, rewriter.create<SubOp>(loc, x, toRows(op.getMean())), rstd);
    Value gamma = broadcastTo(rewriter, loc, toF32(rewriter, loc, op.getGamma()),
                              shape, sizes, {last});
    Value g = rewriter.create<MulOp>(loc, dy, gamma);
    Value meanG = meanOverLast(g);
    Value meanGX = meanOverLast(rewriter.create<MulOp>(loc, g, xhat));
    Value shifted = rewriter.create<SubOp>(loc, g, toRows(meanG));
    Value centered = rewriter.create<SubOp>(
        loc, shifted, rewriter.create<MulOp>(loc, xhat, toRows(meanGX)));
    Value dx = rewriter.create<MulOp>(loc, rstd, centered);

    Value dyXhat = rewriter.create<MulOp>(loc, dy, xhat);
    Value dgamma = dyXhat, dbeta = dy;
    if (last > 0) {
      dgamma = rewriter.create<ReduceSumOp>(loc, dyXhat, rowDims);
      dbeta = rewriter.create<ReduceSumOp>(loc, dy, rowDims);
    }
    auto gammaType = op.getGamma().getType();
    rewriter.replaceOp(op, {castTo(rewriter, loc, dx, type),
                            castTo(rewriter, loc, dgamma, gammaType),
                            castTo(rewriter, loc, dbeta, gammaType)});
    return success();
  }
};

/// dx = scale * y * (dy - sum_last(dy * y)) in f32.
struct DecomposeSoftmaxGrad : OpRewritePattern<SoftmaxGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type f32 = rewriter.getF32Type();
    auto type = op.getOutput().getType();
    int64_t rank = type.getRank();
    SmallVector<Value> sizes = dynamicDims(rewriter, loc, op.getOutput());
    Value y = toF32(rewriter, loc, op.getOutput());
    Value dy = toF32(rewriter, loc, op.getDy());
    Value dot = rewriter.create<ReduceSumOp>(
        loc, rewriter.create<MulOp>(loc, dy, y), ArrayRef<int64_t>{rank - 1},
        /*keep_dims=*/true);
    Value diff = rewriter.create<SubOp>(
        loc, dy,
        broadcastTo(rewriter, loc, dot, type.getShape(), sizes, iotaDims(rank)));
    Value dx = rewriter.create<MulOp>(loc, y, diff);
    if (float scale = op.getScale().convertToFloat(); scale != 1.0f)
      dx = rewriter.create<MulOp>(loc, dx, scalar(rewriter, loc, f32, scale));
    rewriter.replaceOp(op, castTo(rewriter, loc, dx, op.getType()));
    return success();
  }
};

/// In f32 per row: w * (softmax(x) - q), q = (1 - eps) onehot(t) + eps / C,
/// w = 0 for ignored rows, else dloss / max(count, 1) (mean), dloss (sum)
/// or dloss[r] (none).
struct DecomposeCrossEntropyGrad : OpRewritePattern<CrossEntropyGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyGradOp op,
                                PatternRewriter &rewriter) const override {
    if (auto reason = crossEntropyRefusal(op))
      return rewriter.notifyMatchFailure(op, *reason);
    Location loc = op.getLoc();
    Type f32 = rewriter.getF32Type();
    auto type = op.getLogits().getType();
    ArrayRef<int64_t> shape = type.getShape();
    Value targets = op.getTargets();
    Type idType = tensorType(targets).getElementType();
    SmallVector<Value> sizes = dynamicDims(rewriter, loc, op.getLogits());
    const int64_t classAxis[] = {1};

    Value x = toF32(rewriter, loc, op.getLogits());
    Value max = rewriter.create<ReduceMaxOp>(loc, x, classAxis);
    Value e = rewriter.create<ExpOp>(
        loc, rewriter.create<SubOp>(
                 loc, x, broadcastTo(rewriter, loc, max, shape, sizes, {0})));
    Value sumE = rewriter.create<ReduceSumOp>(loc, e, classAxis);
    Value p = rewriter.create<DivOp>(
        loc, e, broadcastTo(rewriter, loc, sumE, shape, sizes, {0}));

    Value classes = rewriter.create<IotaOp>(
        loc, RankedTensorType::get(shape, idType), sizes, uint64_t{1});
    Value hit = compare(rewriter, loc, CompareDirection::EQ, classes,
                        broadcastTo(rewriter, loc, targets, shape, sizes, {0}));
    double eps = op.getLabelSmoothing().convertToFloat();
    double off = eps / static_cast<double>(shape[1]);
    Value onTarget = scalar(rewriter, loc, f32, 1.0 - eps + off);
    Value offTarget = scalar(rewriter, loc, f32, off);
    Value q = rewriter.create<SelectOp>(loc, hit, onTarget, offTarget);
    Value d = rewriter.create<SubOp>(loc, p, q);

    Value valid = validRows(rewriter, loc, targets,
                            static_cast<int64_t>(op.getIgnoreIndex()));
    Value weight = op.getDloss();
    if (op.getReduction() == LossReduction::Mean)
      weight = rewriter.create<DivOp>(loc, weight,
                                      validCount(rewriter, loc, valid));
    Value rowWeight = rewriter.create<SelectOp>(
        loc, valid, weight, scalar(rewriter, loc, f32, 0.0));
    Value dx = rewriter.create<MulOp>(
        loc, d, broadcastTo(rewriter, loc, rowWeight, shape, sizes, {0}));
    rewriter.replaceOp(op, castTo(rewriter, loc, dx, type));
    return success();
  }
};

struct DecomposePass : ls2c::impl::DecomposeBase<DecomposePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeGelu, DecomposeLayerNorm, DecomposeSoftmax,
                 DecomposeDropout, DecomposeCrossEntropy, DecomposeAdamW,
                 DecomposeGeluGrad, DecomposeLayerNormGrad,
                 DecomposeSoftmaxGrad, DecomposeCrossEntropyGrad>(
        &getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();

    // Patterns only refuse with a reason; say it rather than leave a
    // composite behind silently.
    bool refused = false;
    getOperation()->walk([&](Operation *op) {
      std::optional<std::string> reason;
      if (auto softmax = dyn_cast<SoftmaxOp>(op))
        reason = softmaxRefusal(softmax);
      else if (auto ce = dyn_cast<CrossEntropyOp>(op))
        reason = crossEntropyRefusal(ce);
      else if (auto ceGrad = dyn_cast<CrossEntropyGradOp>(op))
        reason = crossEntropyRefusal(ceGrad);
      else if (isa<GeluOp, LayerNormOp, DropoutOp, AdamWOp, GeluGradOp,
                   LayerNormGradOp, SoftmaxGradOp>(op))
        reason = "no decomposition applied";
      else
        return;
      op->emitOpError("cannot be decomposed: ") << reason.value_or("unknown");
      refused = true;
    });
    if (refused)
      signalPassFailure();
  }
};

} // namespace
