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

Value GraphBuilder::loss(Value logits, Value labels, int64_t ignoreIndex) {
  return b.create<CrossEntropyOp>(
      location, RankedTensorType::get({}, b.getF32Type()), logits, labels,
      b.getF32FloatAttr(static_cast<float>(d.label_smoothing)),
      b.getI64IntegerAttr(ignoreIndex),
      LossReductionAttr::get(b.getContext(), LossReduction::Mean));
}

} // namespace ls2c
