//===- LS2Ops.cpp - ls2 op type inference, folders, custom syntax ---------===//
//
// Verifiers live in LS2Verify.cpp. Ops that infer their result types check
// their operands while inferring, because the inferred type is verified
// before the op's own verifier runs; those checks name the op themselves.
//
//===----------------------------------------------------------------------===//
#include "ls2/IR/LS2Dialect.h"
#include "ls2/IR/LS2OpUtils.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace ls2c::ls2;

//===----------------------------------------------------------------------===//
// Custom assembly: `: T` when both operands share a type, else `: T1, T2`.
//===----------------------------------------------------------------------===//

static ParseResult parseBinaryTypes(OpAsmParser &parser, Type &lhs, Type &rhs) {
  if (parser.parseType(lhs))
    return failure();
  rhs = lhs;
  if (succeeded(parser.parseOptionalComma()))
    return parser.parseType(rhs);
  return success();
}

static void printBinaryTypes(OpAsmPrinter &printer, Operation *, Type lhs,
                             Type rhs) {
  printer << lhs;
  if (rhs != lhs)
    printer << ", " << rhs;
}

#define GET_OP_CLASSES
#include "ls2/IR/LS2Ops.cpp.inc"

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

namespace ls2c::ls2 {

LogicalResult emitInferError(std::optional<Location> loc, StringRef opName,
                             const Twine &message) {
  return emitOptionalError(loc, "'ls2.", opName, "' op ", message);
}

/// `type` as a ranked tensor, else the error rankedOperand describes.
static FailureOr<RankedTensorType> asRanked(std::optional<Location> loc,
                                           StringRef opName, Type type,
                                           unsigned index) {
  if (auto ranked = dyn_cast_if_present<RankedTensorType>(type))
    return ranked;
  return emitInferError(loc, opName,
                        "operand #" + Twine(index) +
                            " must be a ranked tensor, got '" +
                            (type ? typeToString(type) : "<null>") + "'");
}

FailureOr<RankedTensorType> rankedOperand(std::optional<Location> loc,
                                          StringRef opName,
                                          ValueRange operands,
                                          unsigned index) {
  if (index >= operands.size())
    return emitInferError(loc, opName,
                          "expected at least " + Twine(index + 1) +
                              " operands, got " + Twine(operands.size()));
  return asRanked(loc, opName, operands[index].getType(), index);
}

FailureOr<RankedTensorType>
inferElementwiseShape(std::optional<Location> loc, StringRef opName, Type lhs,
                      Type rhs) {
  auto lhsRanked = asRanked(loc, opName, lhs, 0);
  if (failed(lhsRanked))
    return failure();
  auto rhsRanked = asRanked(loc, opName, rhs, 1);
  if (failed(rhsRanked))
    return failure();
  RankedTensorType l = *lhsRanked, r = *rhsRanked;
  if (l.getElementType() != r.getElementType())
    return emitInferError(loc, opName,
                          "operands must have the same element type, got " +
                              Twine(typeToString(l.getElementType())) +
                              " and " + typeToString(r.getElementType()));
  if (l.getRank() == 0)
    return r;
  if (r.getRank() == 0 || l.getShape() == r.getShape())
    return l;
  return emitInferError(loc, opName,
                        "operand shapes " + shapeToString(l.getShape()) +
                            " and " + shapeToString(r.getShape()) +
                            " differ; they must match or one must be rank 0");
}

std::string shapeToString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += ShapedType::isDynamic(shape[i]) ? "?" : std::to_string(shape[i]);
  }
  return s + "]";
}

std::optional<int64_t> staticElementCount(ArrayRef<int64_t> shape) {
  // A zero-sized dim empties the tensor whatever the others are (and keeps
  // a huge product of the others from counting as an overflow).
  if (llvm::is_contained(shape, 0))
    return 0;
  int64_t count = 1;
  for (int64_t d : shape)
    if (!ShapedType::isDynamic(d) && llvm::MulOverflow(count, d, count))
      return std::nullopt;
  return count;
}

std::string typeToString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return os.str();
}

} // namespace ls2c::ls2

//===----------------------------------------------------------------------===//
// Elementwise type inference
//===----------------------------------------------------------------------===//

/// Operands #0 and #1 of a binary op (or compare), which the parser may
/// hand over with any types (or, from a malformed builder call, too few).
static FailureOr<RankedTensorType>
inferBinaryShape(std::optional<Location> loc, StringRef opName,
                 ValueRange operands) {
  if (operands.size() != 2)
    return emitInferError(loc, opName,
                          "expected 2 operands, got " + Twine(operands.size()));
  return inferElementwiseShape(loc, opName, operands[0].getType(),
                               operands[1].getType());
}

#define LS2_BINARY_INFER(OP, NAME)                                             \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, ValueRange operands,         \
      DictionaryAttr, OpaqueProperties, RegionRange,                           \
      SmallVectorImpl<Type> &inferred) {                                       \
    auto shape = inferBinaryShape(loc, NAME, operands);                        \
    if (failed(shape))                                                         \
      return failure();                                                        \
    inferred.push_back(*shape);                                                \
    return success();                                                          \
  }

LS2_BINARY_INFER(AddOp, "add")
LS2_BINARY_INFER(SubOp, "sub")
LS2_BINARY_INFER(MulOp, "mul")
LS2_BINARY_INFER(DivOp, "div")
LS2_BINARY_INFER(MaxOp, "max")
LS2_BINARY_INFER(MinOp, "min")
#undef LS2_BINARY_INFER

LogicalResult CompareOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferred) {
  // `direction` is a property, not an operand: lhs and rhs are operands 0, 1.
  auto shape = inferBinaryShape(loc, "compare", operands);
  if (failed(shape))
    return failure();
  inferred.push_back(shape->clone(IntegerType::get(context, 1)));
  return success();
}

LogicalResult SelectOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferred) {
  SmallVector<RankedTensorType, 3> types;
  for (unsigned i = 0; i < 3; ++i) {
    auto type = rankedOperand(loc, "select", operands, i);
    if (failed(type))
      return failure();
    types.push_back(*type);
  }
  RankedTensorType pred = types[0], onTrue = types[1], onFalse = types[2];
  if (onTrue.getElementType() != onFalse.getElementType())
    return emitInferError(loc, "select",
                          "on_true and on_false must have the same element "
                          "type, got " +
                              Twine(typeToString(onTrue.getElementType())) +
                              " and " + typeToString(onFalse.getElementType()));
  for (RankedTensorType value : {onTrue, onFalse})
    if (value.getRank() != 0 && value.getShape() != pred.getShape())
      return emitInferError(loc, "select",
                            "value shape " + shapeToString(value.getShape()) +
                                " must match the predicate's " +
                                shapeToString(pred.getShape()) +
                                " or be rank 0");
  inferred.push_back(pred.clone(onTrue.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Shape op inference
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &inferred) {
  Adaptor adaptor(operands, attributes, properties, regions);
  auto inputType = rankedOperand(loc, "transpose", operands, 0);
  if (failed(inputType))
    return failure();
  RankedTensorType input = *inputType;
  if (!adaptor.getProperties().permutation)
    return emitInferError(loc, "transpose",
                          "requires attribute 'permutation'");
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  if (static_cast<int64_t>(perm.size()) != input.getRank())
    return emitInferError(loc, "transpose",
                          "permutation has " + Twine(perm.size()) +
                              " entries but the input has rank " +
                              Twine(input.getRank()));
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= input.getRank() || seen[p])
      return emitInferError(loc, "transpose",
                            "permutation " + shapeToString(perm) +
                                " is not a permutation of [0, " +
                                Twine(input.getRank()) + ")");
    seen[p] = true;
    shape.push_back(input.getDimSize(p));
  }
  inferred.push_back(input.clone(shape));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &inferred) {
  Adaptor adaptor(operands, attributes, properties, regions);
  auto inputType = rankedOperand(loc, "slice", operands, 0);
  if (failed(inputType))
    return failure();
  RankedTensorType input = *inputType;
  const auto &props = adaptor.getProperties();
  if (!props.axis || !props.start || !props.limit)
    return emitInferError(loc, "slice",
                          "requires attributes 'axis', 'start' and 'limit'");
  int64_t axis = adaptor.getAxis(), start = adaptor.getStart(),
          limit = adaptor.getLimit();
  if (axis < 0 || axis >= input.getRank())
    return emitInferError(loc, "slice",
                          "axis " + Twine(axis) + " is out of range for rank " +
                              Twine(input.getRank()));
  int64_t size = input.getDimSize(axis);
  if (ShapedType::isDynamic(size))
    return emitInferError(loc, "slice",
                          "axis " + Twine(axis) + " must have a static size");
  if (start < 0 || limit <= start || limit > size)
    return emitInferError(loc, "slice",
                          "range [" + Twine(start) + ", " + Twine(limit) +
                              ") must be non-empty and within [0, " +
                              Twine(size) + ")");
  SmallVector<int64_t> shape(input.getShape());
  shape[axis] = limit - start;
  inferred.push_back(input.clone(shape));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &inferred) {
  Adaptor adaptor(operands, attributes, properties, regions);
  if (operands.empty())
    return emitInferError(loc, "concat", "needs at least one input");
  if (!adaptor.getProperties().axis)
    return emitInferError(loc, "concat", "requires attribute 'axis'");
  auto firstType = rankedOperand(loc, "concat", operands, 0);
  if (failed(firstType))
    return failure();
  RankedTensorType first = *firstType;
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= first.getRank())
    return emitInferError(loc, "concat",
                          "axis " + Twine(axis) + " is out of range for rank " +
                              Twine(first.getRank()));
  SmallVector<int64_t> shape(first.getShape());
  for (unsigned i = 0; i + 1 < operands.size(); ++i) {
    auto ranked = rankedOperand(loc, "concat", operands, i + 1);
    if (failed(ranked))
      return failure();
    RankedTensorType type = *ranked;
    if (type.getElementType() != first.getElementType() ||
        type.getRank() != first.getRank())
      return emitInferError(loc, "concat",
                            "input " + Twine(i + 1) + " has type " +
                                typeToString(type) +
                                "; all inputs need the element type and rank "
                                "of input 0, " +
                                typeToString(first));
    for (int64_t d = 0; d < first.getRank(); ++d) {
      if (d == axis) {
        if (ShapedType::isDynamic(shape[d]) || type.isDynamicDim(d)) {
          shape[d] = ShapedType::kDynamic;
        } else if (llvm::AddOverflow(shape[d], type.getDimSize(d), shape[d])) {
          // A wrapped sum could even read as kDynamic (INT64_MIN).
          return emitInferError(loc, "concat",
                                "size of axis " + Twine(axis) +
                                    " overflows int64 at input " +
                                    Twine(i + 1));
        }
      } else if (type.getDimSize(d) != first.getDimSize(d)) {
        return emitInferError(loc, "concat",
                              "input " + Twine(i + 1) + " differs from input "
                              "0 in dim " + Twine(d) + " (" +
                                  shapeToString(type.getShape()) + " vs " +
                                  shapeToString(first.getShape()) + ")");
      }
    }
  }
  inferred.push_back(first.clone(shape));
  return success();
}

template <typename ReduceOpT>
static LogicalResult inferReduce(std::optional<Location> loc, StringRef name,
                                 ValueRange operands,
                                 typename ReduceOpT::Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  auto inputType = rankedOperand(loc, name, operands, 0);
  if (failed(inputType))
    return failure();
  RankedTensorType input = *inputType;
  if (!adaptor.getProperties().axes)
    return emitInferError(loc, name, "requires attribute 'axes'");
  ArrayRef<int64_t> axes = adaptor.getAxes();
  if (axes.empty())
    return emitInferError(loc, name, "needs at least one axis");
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= input.getRank())
      return emitInferError(loc, name,
                            "axis " + Twine(axes[i]) +
                                " is out of range for rank " +
                                Twine(input.getRank()));
    if (i && axes[i] <= axes[i - 1])
      return emitInferError(loc, name,
                            "axes " + shapeToString(axes) +
                                " must be distinct and ascending");
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < input.getRank(); ++d) {
    if (!llvm::is_contained(axes, d))
      shape.push_back(input.getDimSize(d));
    else if (adaptor.getKeepDims())
      shape.push_back(1);
  }
  inferred.push_back(input.clone(shape));
  return success();
}

LogicalResult ReduceSumOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &inferred) {
  return inferReduce<ReduceSumOp>(
      loc, "reduce_sum", operands,
      Adaptor(operands, attributes, properties, regions),
      inferred);
}

LogicalResult ReduceMaxOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &inferred) {
  return inferReduce<ReduceMaxOp>(
      loc, "reduce_max", operands,
      Adaptor(operands, attributes, properties, regions),
      inferred);
}

LogicalResult GatherOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferred) {
  auto tableType = rankedOperand(loc, "gather", operands, 0);
  if (failed(tableType))
    return failure();
  auto idsType = rankedOperand(loc, "gather", operands, 1);
  if (failed(idsType))
    return failure();
  RankedTensorType table = *tableType, ids = *idsType;
  // Only the row count may be dynamic: a row is what one id selects.
  bool staticRows = table.getRank() >= 1 &&
                    llvm::none_of(table.getShape().drop_front(), ShapedType::isDynamic);
  if (!staticRows)
    return emitInferError(loc, "gather",
                          "table must have rank >= 1 and a static row shape "
                          "(only its row count may be dynamic), got " +
                              typeToString(table));
  SmallVector<int64_t> shape(ids.getShape());
  llvm::append_range(shape, table.getShape().drop_front());
  inferred.push_back(table.clone(shape));
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferred) {
  auto inputType = rankedOperand(loc, "layer_norm", operands, 0);
  if (failed(inputType))
    return failure();
  RankedTensorType input = *inputType;
  if (input.getRank() < 1 || input.isDynamicDim(input.getRank() - 1))
    return emitInferError(loc, "layer_norm",
                          "input must have rank >= 1 and a static last dim, "
                          "got " + typeToString(input));
  auto stats = RankedTensorType::get(input.getShape().drop_back(),
                                     Float32Type::get(context));
  inferred.append({input, stats, stats});
  return success();
}

//===----------------------------------------------------------------------===//
// Folders
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // reshape(reshape(x)) only depends on x's elements: skip the middle one,
  // when x -> result is itself a valid reshape (?x2 -> ?x6 -> ?x3 is not:
  // ?x2 -> ?x3 breaks the divisibility rule).
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    Value source = inner.getInput();
    if (source.getType() == getType())
      return source;
    auto sourceType = dyn_cast<RankedTensorType>(source.getType());
    if (!sourceType ||
        failed(verifyReshapeTypes(sourceType, getType(), nullptr)))
      return {};
    getInputMutable().assign(source);
    return getResult();
  }
  return {};
}

Type MatmulOp::getAccumulationType() {
  if (auto acc = getAccType())
    return *acc;
  return Float32Type::get(getContext());
}

bool MatmulOp::hasForwardActivation() {
  auto act = getActivation();
  return act && (*act == GemmActivation::Relu || *act == GemmActivation::GeluTanh);
}

bool MatmulOp::hasActivationGrad() {
  auto act = getActivation();
  return act && (*act == GemmActivation::ReluGrad ||
                 *act == GemmActivation::GeluTanhGrad);
}

int64_t MatmulOp::reluMaskWords(int64_t n) { return (n + 127) / 128 * 4; }

float AttentionOp::getEffectiveScale() {
  if (auto scale = getScale())
    return scale->convertToFloat();
  int64_t headDim = getQuery().getType().getDimSize(2);
  return 1.0f / std::sqrt(static_cast<float>(headDim));
}

float AttentionGradOp::getEffectiveScale() {
  if (auto scale = getScale())
    return scale->convertToFloat();
  int64_t headDim = getQuery().getType().getDimSize(2);
  return 1.0f / std::sqrt(static_cast<float>(headDim));
}
