//===- LS2Verify.cpp - ls2 op verifiers -----------------------------------===//
//
// Each diagnostic names the operand or attribute and the rule it breaks.
//
//===----------------------------------------------------------------------===//
#include "ls2/IR/LS2Dialect.h"
#include "ls2/IR/LS2OpUtils.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace ls2c::ls2;

namespace {

int64_t countDynamic(RankedTensorType type) {
  return llvm::count_if(type.getShape(), ShapedType::isDynamic);
}

LogicalResult verifyDynamicSizes(Operation *op, RankedTensorType result,
                                 ValueRange sizes) {
  int64_t expected = countDynamic(result);
  if (static_cast<int64_t>(sizes.size()) != expected)
    return op->emitOpError("needs one index operand per dynamic result dim: ")
           << expected << " for " << result << ", got " << sizes.size();
  return success();
}

LogicalResult verifyProbability(Operation *op, StringRef name, float value) {
  if (!(value >= 0.0f && value < 1.0f))
    return op->emitOpError() << name << " = " << value
                             << " must be in [0, 1)";
  return success();
}

bool dimsCompatible(int64_t a, int64_t b) {
  return a == b || ShapedType::isDynamic(a) || ShapedType::isDynamic(b);
}

} // namespace

LogicalResult CastOp::verify() {
  if (getInput().getType().getShape() != getType().getShape())
    return emitOpError("input shape ")
           << shapeToString(getInput().getType().getShape())
           << " and result shape " << shapeToString(getType().getShape())
           << " must match";
  return success();
}

LogicalResult ConstantOp::verify() {
  RankedTensorType type = getType();
  if (!type.hasStaticShape())
    return emitOpError("value must have a static shape, got ") << type;
  return success();
}

LogicalResult DimOp::verify() {
  int64_t rank = getInput().getType().getRank();
  auto index = static_cast<int64_t>(getIndex());
  if (index < 0 || index >= rank)
    return emitOpError("index ") << index << " is out of range for rank "
                                 << rank;
  return success();
}

LogicalResult IotaOp::verify() {
  auto type = getType();
  auto dimension = static_cast<int64_t>(getDimension());
  if (dimension < 0 || dimension >= type.getRank())
    return emitOpError("dimension ") << dimension
                                     << " is out of range for rank "
                                     << type.getRank();
  return verifyDynamicSizes(*this, type, getDynamicSizes());
}

LogicalResult BroadcastOp::verify() {
  auto input = getInput().getType();
  auto result = getType();
  ArrayRef<int64_t> dims = getDims();
  if (input.getElementType() != result.getElementType())
    return emitOpError("input and result element types differ: ")
           << input.getElementType() << " vs " << result.getElementType();
  if (static_cast<int64_t>(dims.size()) != input.getRank())
    return emitOpError("dims has ") << dims.size()
                                    << " entries but the input has rank "
                                    << input.getRank();
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (d < 0 || d >= result.getRank())
      return emitOpError("dims[") << i << "] = " << d
                                  << " is out of range for result rank "
                                  << result.getRank();
    if (i > 0 && d <= dims[i - 1])
      return emitOpError("dims ") << shapeToString(dims)
                                  << " must be strictly increasing";
    int64_t in = input.getDimSize(i), out = result.getDimSize(d);
    if (in != 1 && in != out)
      return emitOpError("input dim ")
             << i << " (size " << shapeToString({in})
             << ") must be 1 or equal result dim " << d << " (size "
             << shapeToString({out}) << ")";
  }
  return verifyDynamicSizes(*this, result, getDynamicSizes());
}

LogicalResult ls2c::ls2::verifyReshapeTypes(
    RankedTensorType input, RankedTensorType result,
    function_ref<InFlightDiagnostic()> emitError) {
  auto fail = [&]() -> std::optional<InFlightDiagnostic> {
    if (!emitError)
      return std::nullopt;
    return emitError();
  };
  if (input.getElementType() != result.getElementType()) {
    if (auto diag = fail())
      *diag << "input and result element types differ: "
            << input.getElementType() << " vs " << result.getElementType();
    return failure();
  }
  int64_t dynIn = countDynamic(input), dynOut = countDynamic(result);
  if (dynOut > 1) {
    if (auto diag = fail())
      *diag << "result " << result << " may have at most one dynamic dim";
    return failure();
  }
  // Checked products: a wrapped one could match the other side's count
  // (2^62 x 4 -> 0) or trap in the remainder below (INT64_MIN % -1).
  std::optional<int64_t> inCount = staticElementCount(input.getShape());
  std::optional<int64_t> outCount = staticElementCount(result.getShape());
  if (!inCount || !outCount) {
    if (auto diag = fail())
      *diag << (inCount ? "result" : "input") << " element count overflows "
            << "int64: " << (inCount ? result : input);
    return failure();
  }
  int64_t pin = *inCount, pout = *outCount;
  if (dynIn == 0 && dynOut == 0) {
    if (pin != pout) {
      if (auto diag = fail())
        *diag << "element count changes from " << pin << " to " << pout;
      return failure();
    }
    return success();
  }
  if (dynIn == 0) {
    if (auto diag = fail())
      *diag << "a statically shaped input needs a statically shaped result, "
               "got "
            << result;
    return failure();
  }
  if (dynOut == 0) {
    if (auto diag = fail())
      *diag << "a dynamically shaped input needs one dynamic result dim, got "
            << result;
    return failure();
  }
  // The dynamic result dim is input_dynamic * pin / pout: one static
  // product must divide the other (a zero-sized static dim on one side only
  // divides nothing; testing it first avoids a division by zero). Both
  // counts are >= 0 here, so the remainders cannot trap.
  if ((pin == 0) != (pout == 0) ||
      (pin != 0 && pin % pout != 0 && pout % pin != 0)) {
    if (auto diag = fail())
      *diag << "static element counts " << pin << " (input) and " << pout
            << " (result) must divide one another";
    return failure();
  }
  return success();
}

LogicalResult ReshapeOp::verify() {
  return verifyReshapeTypes(getInput().getType(), getType(),
                            [&] { return emitOpError(); });
}

LogicalResult MatmulOp::verify() {
  auto a = getA().getType(), b = getB().getType(), c = cast<RankedTensorType>(getResult().getType());
  if (a.getRank() < 2 || b.getRank() < 2)
    return emitOpError("operands must have rank >= 2, got ")
           << a << " and " << b;
  if (a.getElementType() != b.getElementType())
    return emitOpError("operands must have the same element type, got ")
           << a.getElementType() << " and " << b.getElementType();
  Type acc = getAccumulationType();
  if (!acc.isF32() && !acc.isF16())
    return emitOpError("acc_type must be f32 or f16, got ") << acc;
  // Half-precision accumulation exists for f16 products only (cuBLASLt's
  // CUBLAS_COMPUTE_16F); bf16 or f32 products would overflow or lose bits.
  if (acc.isF16() && !a.getElementType().isF16())
    return emitOpError("acc_type f16 needs f16 operands, got ")
           << a.getElementType();
  if (b.getRank() != 2 && b.getRank() != a.getRank())
    return emitOpError("b must have rank 2 or a's rank (")
           << a.getRank() << "), got " << b.getRank();
  ArrayRef<int64_t> batch = a.getShape().drop_back(2);
  if (b.getRank() != 2)
    for (int64_t i = 0; i < a.getRank() - 2; ++i)
      if (!dimsCompatible(a.getDimSize(i), b.getDimSize(i)))
        return emitOpError("batch dim ")
               << i << " differs: " << a.getDimSize(i) << " vs "
               << b.getDimSize(i);
  int64_t ra = a.getRank(), rb = b.getRank();
  int64_t m = a.getDimSize(getTransposeA() ? ra - 1 : ra - 2);
  int64_t ka = a.getDimSize(getTransposeA() ? ra - 2 : ra - 1);
  int64_t kb = b.getDimSize(getTransposeB() ? rb - 1 : rb - 2);
  int64_t n = b.getDimSize(getTransposeB() ? rb - 2 : rb - 1);
  if (!dimsCompatible(ka, kb))
    return emitOpError("contraction sizes differ: a gives K = ")
           << shapeToString({ka}) << ", b gives K = " << shapeToString({kb});
  SmallVector<int64_t> expected(batch);
  expected.append({m, n});
  if (c.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result shape ")
           << shapeToString(c.getShape()) << " must be "
           << shapeToString(expected);
  if (Value bias = getBias()) {
    auto t = cast<RankedTensorType>(bias.getType());
    if (t.getRank() != 1 || !dimsCompatible(t.getDimSize(0), n))
      return emitOpError("bias must be [N] = ")
             << shapeToString({n}) << ", got " << t;
  }
  std::optional<GemmActivation> act = getActivation();
  bool grad = hasActivationGrad();
  if (Value g = getBiasGrad()) {
    auto t = cast<RankedTensorType>(g.getType());
    if (grad) {
      // DRELU_BGRAD / DGELU_BGRAD: the sums of the result's columns.
      if (t.getRank() != 1 || !dimsCompatible(t.getDimSize(0), n))
        return emitOpError("bias_grad of an activation gradient must be [N] "
                           "= ")
               << shapeToString({n}) << ", got " << t;
      if (t.getElementType() != c.getElementType())
        return emitOpError("bias_grad of an activation gradient must have the "
                           "result's element type (cuBLASLt's rule), got ")
               << t.getElementType() << " and " << c.getElementType();
    } else {
      if (act)
        return emitOpError("bias_grad with activation ")
               << stringifyGemmActivation(*act)
               << ": only relu_grad and gelu_tanh_grad have a bias gradient";
      if (ra != 2 || !getTransposeA())
        return emitOpError("bias_grad needs a rank-2 a with transpose_a");
      if (t.getRank() != 1 || !dimsCompatible(t.getDimSize(0), m))
        return emitOpError("bias_grad must be [M] = ")
               << shapeToString({m}) << ", got " << t;
    }
  }
  if (!act) {
    if (getAux())
      return emitOpError("an aux operand needs activation relu_grad or "
                         "gelu_tanh_grad");
    if (getAuxOut())
      return emitOpError("an aux result needs activation relu or gelu_tanh");
    return success();
  }
  StringRef name = stringifyGemmActivation(*act);
  if (ra != 2 || rb != 2)
    return emitOpError("activation ")
           << name << " needs rank-2 operands, got " << a << " and " << b;
  if (grad && getBias())
    return emitOpError("activation ") << name << " cannot have a bias";
  // The aux tensor: the GELU input in the result's type, or the ReLU bit
  // mask, [M, ceil(N / 128) * 4] i32 words.
  auto checkAux = [&](Value aux, const char *what) -> LogicalResult {
    auto t = cast<RankedTensorType>(aux.getType());
    bool relu = *act == GemmActivation::Relu || *act == GemmActivation::ReluGrad;
    if (!relu) {
      if (t != c)
        return emitOpError(what) << " of activation " << name
                                 << " must have the result's type " << c
                                 << ", got " << t;
      return success();
    }
    int64_t words = ShapedType::isDynamic(n) ? ShapedType::kDynamic
                                             : reluMaskWords(n);
    if (t.getRank() != 2 || !t.getElementType().isInteger(32) ||
        !dimsCompatible(t.getDimSize(0), m) ||
        !dimsCompatible(t.getDimSize(1), words))
      return emitOpError(what)
             << " of activation " << name
             << " must be the ReLU bit mask [M, ceil(N / 128) * 4] = "
             << shapeToString({m, words}) << " of i32, got " << t;
    return success();
  };
  if (grad) {
    if (!getAux())
      return emitOpError("activation ") << name << " needs an aux operand";
    if (getAuxOut())
      return emitOpError("activation ") << name << " has no aux result";
    return checkAux(getAux(), "aux");
  }
  if (getAux())
    return emitOpError("activation ") << name << " has no aux operand";
  if (Value aux = getAuxOut())
    return checkAux(aux, "aux result");
  return success();
}

LogicalResult ScatterAddOp::verify() {
  auto updates = getUpdates().getType(), result = getType();
  auto ids = getIds().getType();
  if (result.getRank() < 1 ||
      llvm::any_of(result.getShape().drop_front(), ShapedType::isDynamic))
    return emitOpError("result must have rank >= 1 and a static row shape "
                       "(only its row count may be dynamic), got ")
           << result;
  if (failed(verifyDynamicSizes(*this, result, getDynamicSizes())))
    return failure();
  SmallVector<int64_t> expected(ids.getShape());
  llvm::append_range(expected, result.getShape().drop_front());
  if (updates.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("updates shape ")
           << shapeToString(updates.getShape())
           << " must be the ids' shape followed by the row shape: "
           << shapeToString(expected);
  if (auto padAttr = getPaddingIdx()) {
    auto pad = static_cast<int64_t>(*padAttr);
    if (pad < 0)
      return emitOpError("padding_idx ") << pad << " must be >= 0";
    if (!result.isDynamicDim(0) && pad >= result.getDimSize(0))
      return emitOpError("padding_idx ")
             << pad << " is out of range [0, " << result.getDimSize(0) << ")";
  }
  return success();
}

LogicalResult GatherOp::verify() {
  std::optional<APFloat> fill = getFillValueAttr()
                                    ? std::optional<APFloat>(getFillValueAttr().getValue())
                                    : std::nullopt;
  if (!fill)
    return success();
  double v = fill->convertToDouble();
  Type et = getTable().getType().getElementType();
  if (!std::isfinite(v))
    return emitOpError("fill_value ") << v << " must be finite";
  if (auto it = dyn_cast<IntegerType>(et)) {
    double lo = it.getWidth() == 1 ? 0.0 : -std::ldexp(1.0, it.getWidth() - 1);
    double hi = it.getWidth() == 1 ? 1.0 : std::ldexp(1.0, it.getWidth() - 1) - 1;
    if (v != std::trunc(v) || v < lo || v > hi)
      return emitOpError("fill_value ")
             << v << " is not a value of the table's element type " << et;
  }
  return success();
}

LogicalResult NonzeroOp::verify() {
  auto mask = getMask().getType(), result = getType();
  if (mask.getRank() != 1)
    return emitOpError("mask must have rank 1, got ") << mask;
  if (result.getRank() != 1 || result.isDynamicDim(0))
    return emitOpError("result must have rank 1 and a static size (the most "
                       "positions it holds), got ")
           << result;
  // Positions and the fill value must be representable in the result.
  unsigned bits = result.getElementType().getIntOrFloatBitWidth();
  int64_t largest = bits == 32 ? std::numeric_limits<int32_t>::max()
                               : std::numeric_limits<int64_t>::max();
  int64_t smallest = bits == 32 ? std::numeric_limits<int32_t>::min()
                                : std::numeric_limits<int64_t>::min();
  auto fill = static_cast<int64_t>(getFillValue());
  if (fill < smallest || fill > largest)
    return emitOpError("fill_value ")
           << fill << " does not fit the result's element type "
           << result.getElementType();
  if (!mask.isDynamicDim(0) && mask.getDimSize(0) - 1 > largest)
    return emitOpError("mask of ")
           << mask.getDimSize(0) << " elements has positions beyond "
           << result.getElementType() << "'s range";
  return success();
}

LogicalResult RandomUniformOp::verify() {
  if (static_cast<int64_t>(getStream()) < 0)
    return emitOpError("stream ") << static_cast<int64_t>(getStream())
                                  << " must be >= 0";
  return verifyDynamicSizes(*this, getType(), getDynamicSizes());
}

LogicalResult DropoutOp::verify() {
  if (static_cast<int64_t>(getStream()) < 0)
    return emitOpError("stream ") << static_cast<int64_t>(getStream())
                                  << " must be >= 0";
  return verifyProbability(*this, "rate", getRate().convertToFloat());
}

LogicalResult LayerNormOp::verify() {
  auto input = getInput().getType();
  // Result type inference (which says the same) is only verified after
  // this, with the region invariants: do not read a dim of a rank-0 input.
  if (input.getRank() < 1 || input.isDynamicDim(input.getRank() - 1))
    return emitOpError("input must have rank >= 1 and a static last dim, got ")
           << input;
  int64_t h = input.getDimSize(input.getRank() - 1);
  for (auto [name, type] :
       {std::pair<StringRef, RankedTensorType>{"gamma", getGamma().getType()},
        {"beta", getBeta().getType()}}) {
    if (type.getRank() != 1 || type.getDimSize(0) != h ||
        type.getElementType() != input.getElementType())
      return emitOpError() << name << " must be "
                           << RankedTensorType::get({h}, input.getElementType())
                           << ", got " << type;
  }
  float eps = getEpsilon().convertToFloat();
  if (!(eps > 0.0f) || !std::isfinite(eps))
    return emitOpError("epsilon = ") << eps << " must be positive and finite";
  return success();
}

LogicalResult SoftmaxOp::verify() {
  auto input = getInput().getType(), result = getType();
  if (input.getShape() != result.getShape())
    return emitOpError("result shape ")
           << shapeToString(result.getShape()) << " must match input shape "
           << shapeToString(input.getShape());
  if (input.getRank() < 1)
    return emitOpError("needs rank >= 1 (softmax runs over the last dim), got ")
           << input;
  if (getCausal() && input.getRank() < 2)
    return emitOpError("causal needs rank >= 2 (queries x keys), got ")
           << input;
  float scale = getScale().convertToFloat();
  if (!std::isfinite(scale) || scale == 0.0f)
    return emitOpError("scale = ") << scale << " must be finite and non-zero";
  if (Value mask = getMask()) {
    auto m = dyn_cast<RankedTensorType>(mask.getType());
    if (!m)
      return emitOpError("mask must be a ranked tensor, got ")
             << mask.getType();
    if (m.getElementType().isInteger(32) || m.getElementType().isInteger(64))
      return emitOpError("mask must be i1 (keep where true) or a float "
                         "(additive), got ")
             << m.getElementType();
    if (m.getRank() != input.getRank())
      return emitOpError("mask rank ") << m.getRank()
                                       << " must equal input rank "
                                       << input.getRank();
    // Exactly ls2.broadcast's rule, which ls2-decompose applies to the
    // mask: a static mask dim against a dynamic input dim (or the reverse)
    // may differ at run time, so only 1 or the identical dim is accepted.
    for (int64_t d = 0; d < m.getRank(); ++d)
      if (m.getDimSize(d) != 1 && m.getDimSize(d) != input.getDimSize(d))
        return emitOpError("mask dim ")
               << d << " (" << shapeToString({m.getDimSize(d)})
               << ") must be 1 or the input's ("
               << shapeToString({input.getDimSize(d)})
               << "), static and equal or both dynamic";
  }
  return success();
}

namespace {

/// The rules ls2.attention and ls2.attention_grad share: q [Tq, Hq, D],
/// k = v [Tk, Hkv, D], cu_seqlens, lse [Tq, Hq], scale, dropout.
LogicalResult verifyAttentionOperands(Operation *op, RankedTensorType q,
                                      RankedTensorType k, RankedTensorType v,
                                      RankedTensorType cuq,
                                      RankedTensorType cuk,
                                      RankedTensorType lse,
                                      std::optional<APFloat> scale,
                                      float dropoutRate, bool hasSeed,
                                      bool hasOffset, int64_t stream) {
  for (auto [name, t] : {std::pair<StringRef, RankedTensorType>{"query", q},
                         {"key", k}, {"value", v}}) {
    if (t.getRank() != 3)
      return op->emitOpError()
             << name << " must be [tokens, heads, head_dim], got " << t;
    if (t.isDynamicDim(1) || t.isDynamicDim(2))
      return op->emitOpError()
             << name << " heads and head_dim must be static, got " << t;
    // head_dim 0 would make the default scale 1/sqrt(0) = inf.
    if (t.getDimSize(1) < 1 || t.getDimSize(2) < 1)
      return op->emitOpError()
             << name << " heads and head_dim must be >= 1, got " << t;
    if (t.getElementType() != q.getElementType())
      return op->emitOpError() << name << " element type " << t.getElementType()
                               << " differs from query's " << q.getElementType();
  }
  if (k.getShape() != v.getShape())
    return op->emitOpError("key and value shapes differ: ")
           << shapeToString(k.getShape()) << " vs "
           << shapeToString(v.getShape());
  int64_t hq = q.getDimSize(1), hkv = k.getDimSize(1), d = q.getDimSize(2);
  if (k.getDimSize(2) != d)
    return op->emitOpError("key head_dim ")
           << k.getDimSize(2) << " differs from query head_dim " << d;
  if (hkv == 0 || hq % hkv != 0)
    return op->emitOpError("kv heads (")
           << hkv << ") must divide query heads (" << hq << ")";
  if (d > 256)
    return op->emitOpError("head_dim ") << d << " exceeds 256";
  if (cuq.getRank() != 1 || cuk.getRank() != 1 ||
      !dimsCompatible(cuq.getDimSize(0), cuk.getDimSize(0)))
    return op->emitOpError("cu_seqlens_q and cu_seqlens_k must both be [batch "
                           "+ 1], got ")
           << cuq << " and " << cuk;
  for (auto [name, cu] : {std::pair<StringRef, RankedTensorType>{
                              "cu_seqlens_q", cuq},
                          {"cu_seqlens_k", cuk}})
    if (cu.getDimSize(0) == 0)
      return op->emitOpError()
             << name << " holds batch + 1 >= 1 offsets, got " << cu;
  if (lse.getShape() != ArrayRef<int64_t>{q.getDimSize(0), hq})
    return op->emitOpError("lse must be [tokens, heads] = ")
           << shapeToString({q.getDimSize(0), hq}) << ", got "
           << shapeToString(lse.getShape());
  if (scale) {
    float s = scale->convertToFloat();
    if (!(s > 0.0f) || !std::isfinite(s))
      return op->emitOpError("scale = ") << s << " must be positive and finite";
  }
  if (failed(verifyProbability(op, "dropout_rate", dropoutRate)))
    return failure();
  if (hasSeed != hasOffset)
    return op->emitOpError("seed and offset must be given together");
  if (dropoutRate > 0.0f && !hasSeed)
    return op->emitOpError(
        "dropout_rate > 0 needs dropout(seed, offset) operands");
  if (stream < 0)
    return op->emitOpError("stream ") << stream << " must be >= 0";
  return success();
}

/// The rules ls2.cross_entropy and ls2.cross_entropy_grad share.
LogicalResult verifyCrossEntropyOperands(Operation *op,
                                         RankedTensorType logits,
                                         RankedTensorType targets,
                                         float labelSmoothing) {
  if (logits.getRank() != 2 || logits.isDynamicDim(1))
    return op->emitOpError("logits must be [rows, classes] with static "
                           "classes, got ")
           << logits;
  if (targets.getRank() != 1 ||
      !dimsCompatible(targets.getDimSize(0), logits.getDimSize(0)))
    return op->emitOpError("targets must be [rows] = ")
           << shapeToString({logits.getDimSize(0)}) << ", got " << targets;
  return verifyProbability(op, "label_smoothing", labelSmoothing);
}

/// A per-row loss ([rows]) for `none`, else a rank-0 one. `what` names the
/// value in the message ("" for the op's own result).
LogicalResult verifyLossShape(Operation *op, StringRef what,
                              RankedTensorType loss, RankedTensorType logits,
                              LossReduction reduction) {
  std::string rows = shapeToString({logits.getDimSize(0)});
  if (reduction == LossReduction::None) {
    if (loss.getShape() != ArrayRef<int64_t>{logits.getDimSize(0)}) {
      if (what.empty())
        return op->emitOpError("reduction none gives one loss per row: ")
               << rows << ", got " << loss;
      return op->emitOpError("reduction none gives one loss per row: ")
             << what << " must be " << rows << ", got " << loss;
    }
  } else if (loss.getRank() != 0) {
    if (what.empty())
      return op->emitOpError("a reduced loss is rank 0, got ") << loss;
    return op->emitOpError("a reduced loss is rank 0: ")
           << what << " must be rank 0, got " << loss;
  }
  return success();
}

} // namespace

LogicalResult AttentionOp::verify() {
  auto q = getQuery().getType();
  if (failed(verifyAttentionOperands(
          *this, q, getKey().getType(), getValue().getType(),
          getCuSeqlensQ().getType(), getCuSeqlensK().getType(),
          getLse().getType(), getScale(), getDropoutRate().convertToFloat(),
          getSeed() != nullptr, getOffset() != nullptr,
          static_cast<int64_t>(getStream()))))
    return failure();
  if (getResult().getType() != q)
    return emitOpError("result type ") << getResult().getType()
                                       << " must equal the query type " << q;
  if (Value lengths = getKeyLengths()) {
    auto t = cast<RankedTensorType>(lengths.getType());
    int64_t entries = getCuSeqlensK().getType().getDimSize(0);
    if (t.getRank() != 1 ||
        (!ShapedType::isDynamic(entries) && !t.isDynamicDim(0) &&
         t.getDimSize(0) != entries - 1))
      return emitOpError("key_lengths must be [batch] (one fewer than "
                         "cu_seqlens_k's entries), got ")
             << t << " beside cu_seqlens_k " << getCuSeqlensK().getType();
  }
  return success();
}

LogicalResult AttentionGradOp::verify() {
  return verifyAttentionOperands(
      *this, getQuery().getType(), getKey().getType(), getValue().getType(),
      getCuSeqlensQ().getType(), getCuSeqlensK().getType(), getLse().getType(),
      getScale(), getDropoutRate().convertToFloat(), getSeed() != nullptr,
      getOffset() != nullptr, static_cast<int64_t>(getStream()));
}

LogicalResult CrossEntropyOp::verify() {
  auto logits = getLogits().getType();
  if (failed(verifyCrossEntropyOperands(*this, logits, getTargets().getType(),
                                        getLabelSmoothing().convertToFloat())))
    return failure();
  return verifyLossShape(*this, "", getType(), logits,
                         getReduction());
}

LogicalResult CrossEntropyGradOp::verify() {
  auto logits = getLogits().getType();
  if (failed(verifyCrossEntropyOperands(*this, logits, getTargets().getType(),
                                        getLabelSmoothing().convertToFloat())))
    return failure();
  return verifyLossShape(*this, "dloss", getDloss().getType(), logits,
                         getReduction());
}

LogicalResult LayerNormGradOp::verify() {
  auto input = getInput().getType();
  if (input.getRank() < 1 || input.isDynamicDim(input.getRank() - 1))
    return emitOpError("input must have rank >= 1 and a static last dim, got ")
           << input;
  int64_t h = input.getDimSize(input.getRank() - 1);
  auto gamma = getGamma().getType();
  auto expectedGamma = RankedTensorType::get({h}, input.getElementType());
  if (gamma != expectedGamma)
    return emitOpError("gamma must be ") << expectedGamma << ", got " << gamma;
  auto stats = getMean().getType();
  if (stats.getShape() != input.getShape().drop_back())
    return emitOpError("mean and rstd must be f32 ")
           << shapeToString(input.getShape().drop_back())
           << " (the input's leading dims), got " << stats;
  return success();
}

LogicalResult SoftmaxGradOp::verify() {
  float scale = getScale().convertToFloat();
  if (!std::isfinite(scale) || scale == 0.0f)
    return emitOpError("scale = ") << scale << " must be finite and non-zero";
  if (getOutput().getType().getRank() < 1)
    return emitOpError("needs rank >= 1 (softmax runs over the last dim), got ")
           << getOutput().getType();
  return success();
}

LogicalResult AdamWOp::verify() {
  auto param = getParam().getType();
  if (param.getRank() != 1)
    return emitOpError("param must be a flat [N] buffer, got ") << param;
  if (getGrad().getType().getShape() != param.getShape())
    return emitOpError("grad shape ")
           << shapeToString(getGrad().getType().getShape())
           << " must match param shape " << shapeToString(param.getShape());
  for (auto [name, beta] :
       {std::pair<StringRef, float>{"beta1", getBeta1().convertToFloat()},
        {"beta2", getBeta2().convertToFloat()}})
    if (failed(verifyProbability(*this, name, beta)))
      return failure();
  float eps = getEpsilon().convertToFloat();
  if (!(eps > 0.0f) || !std::isfinite(eps))
    return emitOpError("epsilon = ") << eps << " must be positive and finite";
  float wd = getWeightDecay().convertToFloat();
  if (!(wd >= 0.0f) || !std::isfinite(wd))
    return emitOpError("weight_decay = ") << wd
                                          << " must be >= 0 and finite";
  return success();
}

// The body is a function of its block arguments: one per input, same types;
// the yield returns one value per result, same types.
LogicalResult FusionOp::verify() {
  if (getGroupName().empty())
    return emitOpError("needs a non-empty group name");
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("has ") << getInputs().size() << " inputs but "
                               << body.getNumArguments()
                               << " block arguments";
  for (auto [i, input, arg] : llvm::enumerate(getInputs(), body.getArguments()))
    if (input.getType() != arg.getType())
      return emitOpError("input ") << i << " has type " << input.getType()
                                   << " but its block argument has type "
                                   << arg.getType();
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end with ls2.yield");
  if (yield.getValues().size() != getNumResults())
    return emitOpError("yields ") << yield.getValues().size()
                                  << " values for " << getNumResults()
                                  << " results";
  for (auto [i, v, r] : llvm::enumerate(yield.getValues(), getResults()))
    if (v.getType() != r.getType())
      return emitOpError("result ") << i << " has type " << r.getType()
                                    << " but the body yields " << v.getType();
  return success();
}
