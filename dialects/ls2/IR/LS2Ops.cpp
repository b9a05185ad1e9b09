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

FailureOr<RankedTensorType>
inferElementwiseShape(std::optional<Location> loc, StringRef opName, Type lhs,
                      Type rhs) {
  auto l = cast<RankedTensorType>(lhs);
  auto r = cast<RankedTensorType>(rhs);
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

#define LS2_BINARY_INFER(OP, NAME)                                             \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, ValueRange operands,         \
      DictionaryAttr, OpaqueProperties, RegionRange,                           \
      SmallVectorImpl<Type> &inferred) {                                       \
    auto shape = inferElementwiseShape(loc, NAME, operands[0].getType(),       \
                                       operands[1].getType());                 \
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
  auto shape = inferElementwiseShape(loc, "compare", operands[0].getType(),
                                     operands[1].getType());
  if (failed(shape))
    return failure();
  inferred.push_back(shape->clone(IntegerType::get(context, 1)));
  return success();
}

LogicalResult SelectOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferred) {
  auto pred = cast<RankedTensorType>(operands[0].getType());
  auto onTrue = cast<RankedTensorType>(operands[1].getType());
  auto onFalse = cast<RankedTensorType>(operands[2].getType());
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
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
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
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
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
  if (adaptor.getInputs().empty())
    return emitInferError(loc, "concat", "needs at least one input");
  auto first = cast<RankedTensorType>(adaptor.getInputs()[0].getType());
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= first.getRank())
    return emitInferError(loc, "concat",
                          "axis " + Twine(axis) + " is out of range for rank " +
                              Twine(first.getRank()));
  SmallVector<int64_t> shape(first.getShape());
  for (auto [i, value] : llvm::enumerate(adaptor.getInputs().drop_front())) {
    auto type = cast<RankedTensorType>(value.getType());
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
        shape[d] = ShapedType::isDynamic(shape[d]) || type.isDynamicDim(d)
                       ? ShapedType::kDynamic
                       : shape[d] + type.getDimSize(d);
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
                                 typename ReduceOpT::Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
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
      loc, "reduce_sum", Adaptor(operands, attributes, properties, regions),
      inferred);
}

LogicalResult ReduceMaxOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &inferred) {
  return inferReduce<ReduceMaxOp>(
      loc, "reduce_max", Adaptor(operands, attributes, properties, regions),
      inferred);
}

LogicalResult GatherOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferred) {
  auto table = cast<RankedTensorType>(operands[0].getType());
  auto ids = cast<RankedTensorType>(operands[1].getType());
  if (table.getRank() < 1 || table.isDynamicDim(0))
    return emitInferError(loc, "gather",
                          "table must have rank >= 1 and a static row count, "
                          "got " + typeToString(table));
  SmallVector<int64_t> shape(ids.getShape());
  llvm::append_range(shape, table.getShape().drop_front());
  inferred.push_back(table.clone(shape));
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(operands[0].getType());
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
  // reshape(reshape(x)) only depends on x's elements: skip the middle one.
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

Type MatmulOp::getAccumulationType() {
  if (auto acc = getAccType())
    return *acc;
  return Float32Type::get(getContext());
}

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
