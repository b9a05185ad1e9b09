//===- GraphBuilder.cpp - Transformer building blocks in ls2 IR -----------===//
#include "GraphBuilder.h"

#include "llvm/Support/ErrorHandling.h"

#include <cmath>

using namespace mlir;
using namespace ls2c::ls2;

namespace ls2c {

namespace {
Type toMlirType(Builder &b, DType dtype) {
  switch (dtype) {
  case DType::F32:
    return b.getF32Type();
  case DType::F16:
    return b.getF16Type();
  case DType::BF16:
    return b.getBF16Type();
  }
  llvm_unreachable("unknown dtype");
}

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}
} // namespace

std::string join(StringRef prefix, StringRef suffix) {
  return (prefix + "." + suffix).str();
}

GraphBuilder::GraphBuilder(OpBuilder &builder, const ModelDescription &desc)
    : b(builder), d(desc), elementType(toMlirType(builder, desc.dtype)),
      location(builder.getUnknownLoc()) {}

Value GraphBuilder::param(StringRef name) const {
  auto it = values.find(name);
  if (it == values.end())
    llvm::report_fatal_error(llvm::Twine("ls2c frontend: no parameter or input "
                                         "named '") + name + "'");
  return it->second;
}

void GraphBuilder::setRandomState(Value s, Value o) {
  seed = s;
  offset = o;
}

void GraphBuilder::setScope(StringRef scope) {
  location = NameLoc::get(b.getStringAttr(scope));
}

Value GraphBuilder::scalar(double value, Type type) {
  auto tensor = RankedTensorType::get({}, type);
  Attribute attr = isa<FloatType>(type)
                       ? Attribute(b.getFloatAttr(type, value))
                       : Attribute(b.getIntegerAttr(type, (int64_t)value));
  return b.create<ConstantOp>(location, DenseElementsAttr::get(tensor, attr));
}

Value GraphBuilder::dim(Value value, int64_t i) {
  return b.create<DimOp>(location, value, i);
}

Value GraphBuilder::broadcastLike(Value value, Value like,
                                  ArrayRef<int64_t> dims) {
  RankedTensorType target = tensorType(like).clone(
      tensorType(value).getElementType());
  SmallVector<Value> sizes;
  for (int64_t i = 0; i < target.getRank(); ++i)
    if (target.isDynamicDim(i))
      sizes.push_back(dim(like, i));
  return b.create<BroadcastOp>(location, target, value, sizes,
                               b.getDenseI64ArrayAttr(dims));
}

Value GraphBuilder::reshape(Value value, ArrayRef<int64_t> shape) {
  return b.create<ReshapeOp>(location, tensorType(value).clone(shape), value);
}

Value GraphBuilder::add(Value a, Value c) {
  return b.create<AddOp>(location, a, c);
}

Value GraphBuilder::linear(Value x, StringRef weight, StringRef bias,
                           WeightLayout layout) {
  Value w = param(weight);
  RankedTensorType wt = tensorType(w);
  bool outIn = layout == WeightLayout::OutIn;
  int64_t out = outIn ? wt.getDimSize(0) : wt.getDimSize(1);
  auto resultType = tensorType(x).clone(
      {tensorType(x).getDimSize(0), out});
  Value y = b.create<MatmulOp>(location, resultType, /*bias_grad=*/Type(), x,
                               w, /*bias=*/Value(), /*transpose_a=*/false,
                               /*transpose_b=*/outIn, /*acc_type=*/nullptr)
                .getResult();
  if (bias.empty())
    return y;
  return add(y, broadcastLike(param(bias), y, {1}));
}

Value GraphBuilder::projectToVocab(Value x, StringRef table) {
  return linear(x, table, "", WeightLayout::OutIn);
}

Value GraphBuilder::layerNorm(Value x, StringRef prefix) {
  auto op = b.create<LayerNormOp>(
      location, x, param(join(prefix, "weight")), param(join(prefix, "bias")),
      b.getF32FloatAttr(static_cast<float>(d.layer_norm_eps)));
  return op.getResult();
}

Value GraphBuilder::rmsNorm(Value x, StringRef weight) {
  Type f32 = b.getF32Type();
  RankedTensorType type = tensorType(x);
  const int64_t last = type.getRank() - 1;
  Value xf = castTo(x, f32);
  Value sum = b.create<ReduceSumOp>(location, b.create<MulOp>(location, xf, xf),
                                    ArrayRef<int64_t>{last});
  Value meanSquare = b.create<DivOp>(
      location, sum, scalar(static_cast<double>(type.getDimSize(last)), f32));
  Value inverse = b.create<RsqrtOp>(
      location, b.create<AddOp>(location, meanSquare, scalar(d.rms_norm_eps, f32)));
  SmallVector<int64_t> rows;
  for (int64_t i = 0; i < last; ++i)
    rows.push_back(i);
  Value normed = castTo(
      b.create<MulOp>(location, xf, broadcastLike(inverse, xf, rows)), elementType);
  return b.create<MulOp>(location, normed, broadcastLike(param(weight), normed, {last}));
}

Value GraphBuilder::rotary(Value x3, Value positions) {
  Type f32 = b.getF32Type();
  RankedTensorType type = tensorType(x3);
  const int64_t heads = type.getDimSize(1), headDim = type.getDimSize(2),
                half = headDim / 2;
  // theta^(-2j / head_dim) = exp(j * (-2 ln theta) / head_dim), j < half,
  // from constants exact in f32 (theta, -2, head_dim): a product folded on
  // the host would be rounded to f32 even where ls2c computes in f64.
  Value j = b.create<IotaOp>(location, RankedTensorType::get({half}, f32),
                             ValueRange{}, /*dimension=*/0);
  Value exponent = b.create<DivOp>(
      location,
      b.create<MulOp>(location, b.create<LogOp>(location, scalar(d.rope_theta, f32)),
                      scalar(-2.0, f32)),
      scalar(static_cast<double>(headDim), f32));
  Value inverseFrequency =
      b.create<ExpOp>(location, b.create<MulOp>(location, j, exponent));
  // Angles, cos and sin per token and frequency [T, half], sized by the
  // positions: after CSE one table for q and k of every layer (HF's
  // position_embeddings). Each rotary spreads it over its heads sized by its
  // own input, so no layer's kernel writes the spread table for another.
  auto spread = [&](Value v, RankedTensorType type, Value tokens,
                    ArrayRef<int64_t> dims) -> Value {
    return b.create<BroadcastOp>(location, type, v, ValueRange{tokens},
                                 b.getDenseI64ArrayAttr(dims));
  };
  auto tableType = RankedTensorType::get({ShapedType::kDynamic, half}, f32);
  auto halfType = RankedTensorType::get({ShapedType::kDynamic, heads, half}, f32);
  Value positionCount = dim(positions, 0), tokens = dim(x3, 0);
  Value angle = b.create<MulOp>(
      location, spread(castTo(positions, f32), tableType, positionCount, {0}),
      spread(inverseFrequency, tableType, positionCount, {1}));
  Value cos = spread(b.create<CosOp>(location, angle), halfType, tokens, {0, 2});
  Value sin = spread(b.create<SinOp>(location, angle), halfType, tokens, {0, 2});
  auto part = [&](int64_t start) {
    return castTo(b.create<SliceOp>(location, x3, /*axis=*/2, start, start + half)
                      .getResult(),
                  f32);
  };
  Value x1 = part(0), x2 = part(half);
  Value first = b.create<SubOp>(location, b.create<MulOp>(location, x1, cos),
                                b.create<MulOp>(location, x2, sin));
  Value second = b.create<AddOp>(location, b.create<MulOp>(location, x2, cos),
                                 b.create<MulOp>(location, x1, sin));
  Value joined = b.create<ConcatOp>(location, ValueRange{first, second}, /*axis=*/2);
  return castTo(joined, elementType);
}

Value GraphBuilder::castTo(Value x, Type element) {
  RankedTensorType type = tensorType(x);
  if (type.getElementType() == element)
    return x;
  return b.create<CastOp>(location, type.clone(element), x);
}

Value GraphBuilder::dropout(Value x, double rate) {
  if (rate == 0.0)
    return x;
  return b.create<DropoutOp>(location, x, seed, offset,
                             b.getF32FloatAttr(static_cast<float>(rate)),
                             b.getI64IntegerAttr(nextStream++));
}

Value GraphBuilder::activation(Value x) {
  switch (d.activation) {
  case Activation::ReLU: {
    // select(x > 0, x, 0) rather than max(x, 0): its gradient at 0 is 0, as
    // torch.relu's, where max's tie rule would give half.
    Value zero = scalar(0.0);
    Value positive = b.create<CompareOp>(location, CompareDirection::GT, x, zero);
    return b.create<SelectOp>(location, positive, x, zero);
  }
  case Activation::GELU:
    return b.create<GeluOp>(location, x, GeluApproximation::None);
  case Activation::GELUTanh:
    return b.create<GeluOp>(location, x, GeluApproximation::Tanh);
  case Activation::SiLU: {
    // x sigmoid(x) = x / (1 + exp(-x)) in f32, rounded once as torch's
    // silu: exp(-x) overflows to inf for very negative x, giving -0, the
    // limit.
    Type f32 = b.getF32Type();
    Value xf = castTo(x, f32);
    Value denominator = b.create<AddOp>(
        location, scalar(1.0, f32), b.create<ExpOp>(location, b.create<NegOp>(location, xf)));
    return castTo(b.create<DivOp>(location, xf, denominator), elementType);
  }
  }
  llvm_unreachable("unknown activation");
}

Value GraphBuilder::embed(StringRef table, Value ids) {
  return b.create<GatherOp>(location, param(table), ids, /*fill_value=*/nullptr);
}

Value GraphBuilder::attention(Value q, Value k, Value v, Sequences queries,
                              Sequences keys, bool causal) {
  int64_t headDim = d.headDim();
  Value q3 = reshape(q, {ShapedType::kDynamic, d.heads, headDim});
  Value k3 = reshape(k, {ShapedType::kDynamic, d.kv_heads, headDim});
  Value v3 = reshape(v, {ShapedType::kDynamic, d.kv_heads, headDim});
  Value out = attentionHeads(q3, k3, v3, queries.cuSeqlens, keys.cuSeqlens,
                             /*keyLengths=*/Value(), causal)
                  .first;
  return reshape(out, {ShapedType::kDynamic, d.hidden});
}

std::pair<Value, Value> GraphBuilder::attentionHeads(Value q3, Value k3, Value v3,
                                                     Value cuQ, Value cuK,
                                                     Value keyLengths, bool causal) {
  auto lseType = RankedTensorType::get({ShapedType::kDynamic, d.heads},
                                       b.getF32Type());
  float rate = static_cast<float>(d.attention_dropout);
  bool dropoutOn = rate > 0.0f;
  auto op = b.create<AttentionOp>(
      location, tensorType(q3), lseType, q3, k3, v3, cuQ, cuK,
      dropoutOn ? seed : Value(), dropoutOn ? offset : Value(), keyLengths,
      /*scale=*/nullptr, causal ? b.getUnitAttr() : nullptr,
      b.getF32FloatAttr(rate),
      b.getI64IntegerAttr(dropoutOn ? nextStream++ : 0));
  return {op.getResult(), op.getLse()};
}

Value GraphBuilder::feedForward(Value x, StringRef fc1, StringRef fc2,
                                WeightLayout layout) {
  Value h = linear(x, join(fc1, "weight"), join(fc1, "bias"), layout);
  h = dropout(activation(h), d.activation_dropout);
  return linear(h, join(fc2, "weight"), join(fc2, "bias"), layout);
}

Value GraphBuilder::gatedFeedForward(Value x, StringRef prefix) {
  // Gate before up: their weights sit next to each other in that order, so
  // ls2-merge-gemms makes the two projections one GEMM.
  Value gate = linear(x, join(prefix, "gate_proj.weight"), "", WeightLayout::OutIn);
  Value up = linear(x, join(prefix, "up_proj.weight"), "", WeightLayout::OutIn);
  Value h = b.create<MulOp>(location, activation(gate), up);
  return linear(h, join(prefix, "down_proj.weight"), "", WeightLayout::OutIn);
}

Value GraphBuilder::loss(Value logits, Value labels, int64_t ignoreIndex) {
  return b.create<CrossEntropyOp>(
      location, RankedTensorType::get({}, b.getF32Type()), logits, labels,
      b.getF32FloatAttr(static_cast<float>(d.label_smoothing)),
      b.getI64IntegerAttr(ignoreIndex),
      LossReductionAttr::get(b.getContext(), LossReduction::Mean));
}

} // namespace ls2c
