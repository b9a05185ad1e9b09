//===- LS2VJP.cpp - vector-Jacobian products of the elementwise ops -------===//
//
// The shared helpers (LS2VJPUtils.h) and DifferentiableOpInterface for the
// elementwise ops; shape ops, reductions, matmul and embedding are in
// LS2VJPShapes.cpp, the composites in LS2VJPComposites.cpp. Each
// buildVJP follows the interface's rules (LS2Interfaces.td): one gradient
// per operand, typed like it, null where none; exact formulas; chains of
// elementwise ops on f16/bf16 values computed in f32 and rounded once.
//
//===----------------------------------------------------------------------===//
#include "ls2/IR/LS2Dialect.h"
#include "ls2/IR/LS2VJPUtils.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace ls2c::ls2;
using namespace ls2c::ls2::vjp;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace ls2c::ls2::vjp {

bool isFloatTensor(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && isa<Float32Type, Float16Type, BFloat16Type>(
                     type.getElementType());
}

Value scalar(OpBuilder &b, Location loc, Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute attr = isa<FloatType>(elementType)
                       ? Attribute(b.getFloatAttr(elementType, value))
                       : Attribute(b.getIntegerAttr(
                             elementType, static_cast<int64_t>(value)));
  return b.create<ConstantOp>(loc, DenseElementsAttr::get(type, attr));
}

SmallVector<Value> dynamicDims(OpBuilder &b, Location loc, Value value) {
  SmallVector<Value> dims;
  for (auto [i, size] : llvm::enumerate(tensorType(value).getShape()))
    if (ShapedType::isDynamic(size))
      dims.push_back(b.create<DimOp>(loc, value, i));
  return dims;
}

Value zeros(OpBuilder &b, Location loc, RankedTensorType type,
            ValueRange sizes) {
  Value zero = scalar(b, loc, type.getElementType(), 0.0);
  if (type.getRank() == 0)
    return zero;
  return b.create<BroadcastOp>(loc, type, zero, sizes,
                               b.getDenseI64ArrayAttr({}));
}

Value toF32(OpBuilder &b, Location loc, Value value) {
  auto type = tensorType(value);
  if (type.getElementType().isF32())
    return value;
  return b.create<CastOp>(loc, type.clone(b.getF32Type()), value);
}

Value castTo(OpBuilder &b, Location loc, Value value, RankedTensorType type) {
  if (value.getType() == type)
    return value;
  return b.create<CastOp>(loc, type, value);
}

Value inF32(OpBuilder &b, Location loc, RankedTensorType type,
            ArrayRef<Value> inputs,
            function_ref<Value(ArrayRef<Value>)> body) {
  SmallVector<Value> wide;
  for (Value input : inputs)
    wide.push_back(toF32(b, loc, input));
  Value result = body(wide);
  return castTo(b, loc, result, type.clone(tensorType(result).getShape(),
                                           type.getElementType()));
}

Value sumToOperand(OpBuilder &b, Location loc, Value grad, Value operand) {
  auto type = tensorType(operand);
  if (type.getRank() != 0 || tensorType(grad).getRank() == 0)
    return grad;
  return b.create<ReduceSumOp>(loc, grad,
                               iotaDims(tensorType(grad).getRank()));
}

SmallVector<int64_t> iotaDims(int64_t n) {
  SmallVector<int64_t> dims(n);
  std::iota(dims.begin(), dims.end(), 0);
  return dims;
}

bool noResultGrads(Operation *op, ArrayRef<Value> resultGrads,
                   SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(op->getNumOperands(), Value());
  return llvm::all_of(resultGrads, [](Value g) { return !g; });
}

LogicalResult noGradients(Operation *op, SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(op->getNumOperands(), Value());
  return success();
}

} // namespace ls2c::ls2::vjp


//===----------------------------------------------------------------------===//
// Unary elementwise: the result type is the operand type.
//===----------------------------------------------------------------------===//

// d(-x) = -dy
LogicalResult NegOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads))
    return success();
  operandGrads[0] = b.create<NegOp>(getLoc(), resultGrads[0]);
  return success();
}

// d exp(x) = dy * exp(x), from the result.
LogicalResult ExpOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads))
    return success();
  operandGrads[0] = b.create<MulOp>(getLoc(), resultGrads[0], getResult());
  return success();
}

// d log(x) = dy / x
LogicalResult LogOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads))
    return success();
  operandGrads[0] = b.create<DivOp>(getLoc(), resultGrads[0], getInput());
  return success();
}

// d tanh(x) = dy * (1 - y^2), from the result y.
LogicalResult TanhOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads))
    return success();
  Location loc = getLoc();
  operandGrads[0] = inF32(
      b, loc, getType(), {resultGrads[0], getResult()}, [&](ArrayRef<Value> v) {
        Value y2 = b.create<MulOp>(loc, v[1], v[1]);
        Value one = scalar(b, loc, b.getF32Type(), 1.0);
        return b.create<MulOp>(loc, v[0], b.create<SubOp>(loc, one, y2));
      });
  return success();
}

// d erf(x) = dy * 2/sqrt(pi) * exp(-x^2)
LogicalResult ErfOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads))
    return success();
  Location loc = getLoc();
  operandGrads[0] = inF32(
      b, loc, getType(), {resultGrads[0], getInput()}, [&](ArrayRef<Value> v) {
        Type f32 = b.getF32Type();
        Value x2 = b.create<MulOp>(loc, v[1], v[1]);
        Value e = b.create<ExpOp>(loc, b.create<NegOp>(loc, x2));
        Value scaled =
            b.create<MulOp>(loc, v[0], scalar(b, loc, f32, M_2_SQRTPI));
        return b.create<MulOp>(loc, scaled, e);
      });
  return success();
}

// d sqrt(x) = dy * 0.5 / y, from the result y.
LogicalResult SqrtOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads))
    return success();
  Location loc = getLoc();
  operandGrads[0] = inF32(
      b, loc, getType(), {resultGrads[0], getResult()}, [&](ArrayRef<Value> v) {
        Value half =
            b.create<MulOp>(loc, v[0], scalar(b, loc, b.getF32Type(), 0.5));
        return b.create<DivOp>(loc, half, v[1]);
      });
  return success();
}

// d sin(x) = dy * cos(x).
LogicalResult SinOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads))
    return success();
  Location loc = getLoc();
  operandGrads[0] = inF32(
      b, loc, getType(), {resultGrads[0], getInput()}, [&](ArrayRef<Value> v) {
        return b.create<MulOp>(loc, v[0], b.create<CosOp>(loc, v[1]));
      });
  return success();
}

// d cos(x) = -dy * sin(x).
LogicalResult CosOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads))
    return success();
  Location loc = getLoc();
  operandGrads[0] = inF32(
      b, loc, getType(), {resultGrads[0], getInput()}, [&](ArrayRef<Value> v) {
        Value s = b.create<SinOp>(loc, v[1]);
        return b.create<NegOp>(loc, b.create<MulOp>(loc, v[0], s));
      });
  return success();
}

// d x^(-1/2) = dy * (-0.5) * y^3, from the result y.
LogicalResult RsqrtOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads))
    return success();
  Location loc = getLoc();
  operandGrads[0] = inF32(
      b, loc, getType(), {resultGrads[0], getResult()}, [&](ArrayRef<Value> v) {
        Value y3 =
            b.create<MulOp>(loc, b.create<MulOp>(loc, v[1], v[1]), v[1]);
        Value scaled =
            b.create<MulOp>(loc, v[0], scalar(b, loc, b.getF32Type(), -0.5));
        return b.create<MulOp>(loc, scaled, y3);
      });
  return success();
}

//===----------------------------------------------------------------------===//
// Binary elementwise: a rank-0 operand gets the sum of its gradient.
//===----------------------------------------------------------------------===//

namespace {

/// Sets both operand gradients of a binary op from full-shaped ones.
void setBinaryGrads(OpBuilder &b, Location loc, Value lhs, Value rhs,
                    Value lhsGrad, Value rhsGrad,
                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads[0] = lhsGrad ? sumToOperand(b, loc, lhsGrad, lhs) : Value();
  operandGrads[1] = rhsGrad ? sumToOperand(b, loc, rhsGrad, rhs) : Value();
}

} // namespace

// d(x + y) = (dz, dz)
LogicalResult AddOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads) ||
      !isFloatTensor(getResult()))
    return noGradients(*this, operandGrads);
  Value dz = resultGrads[0];
  setBinaryGrads(b, getLoc(), getLhs(), getRhs(), dz, dz, operandGrads);
  return success();
}

// d(x - y) = (dz, -dz)
LogicalResult SubOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads) ||
      !isFloatTensor(getResult()))
    return noGradients(*this, operandGrads);
  Value dz = resultGrads[0];
  setBinaryGrads(b, getLoc(), getLhs(), getRhs(), dz,
                 b.create<NegOp>(getLoc(), dz), operandGrads);
  return success();
}

// d(x * y) = (dz * y, dz * x)
LogicalResult MulOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads) ||
      !isFloatTensor(getResult()))
    return noGradients(*this, operandGrads);
  Location loc = getLoc();
  Value dz = resultGrads[0];
  // Sequenced: argument evaluation order would make the IR compiler-dependent.
  Value dx = b.create<MulOp>(loc, dz, getRhs());
  Value dy = b.create<MulOp>(loc, dz, getLhs());
  setBinaryGrads(b, loc, getLhs(), getRhs(), dx, dy, operandGrads);
  return success();
}

// d(x / y) = (dz / y, -(dz / y) * z), z = x / y the result.
LogicalResult DivOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads) ||
      !isFloatTensor(getResult()))
    return noGradients(*this, operandGrads);
  Location loc = getLoc();
  Value dz = resultGrads[0];
  Value dx = b.create<DivOp>(loc, dz, getRhs());
  Value dy = inF32(b, loc, getType(), {dz, getRhs(), getResult()},
                   [&](ArrayRef<Value> v) {
                     Value q = b.create<DivOp>(loc, v[0], v[1]);
                     return b.create<NegOp>(loc, b.create<MulOp>(loc, q, v[2]));
                   });
  setBinaryGrads(b, loc, getLhs(), getRhs(), dx, dy, operandGrads);
  return success();
}

namespace {

/// max/min: the chosen operand gets dz; at ties each gets dz / 2 (the
/// symmetric subgradient, as torch.maximum and jax.numpy.maximum).
template <typename OpT>
LogicalResult chooserVJP(OpT op, OpBuilder &b, ArrayRef<Value> resultGrads,
                         SmallVectorImpl<Value> &operandGrads,
                         CompareDirection lhsWins) {
  if (noResultGrads(op, resultGrads, operandGrads) ||
      !isFloatTensor(op.getResult()))
    return noGradients(op, operandGrads);
  Location loc = op.getLoc();
  Value dz = resultGrads[0];
  Value lhs = op.getLhs(), rhs = op.getRhs();
  Type element = tensorType(dz).getElementType();
  Value zero = scalar(b, loc, element, 0.0);
  Value half = b.create<MulOp>(loc, dz, scalar(b, loc, element, 0.5));
  Value tie = b.create<CompareOp>(loc, CompareDirection::EQ, lhs, rhs);
  Value tieGrad = b.create<SelectOp>(loc, tie, half, zero);
  CompareDirection rhsWins = lhsWins == CompareDirection::GT
                                 ? CompareDirection::LT
                                 : CompareDirection::GT;
  Value lhsPick = b.create<CompareOp>(loc, lhsWins, lhs, rhs);
  Value lhsGrad = b.create<SelectOp>(loc, lhsPick, dz, tieGrad);
  Value rhsPick = b.create<CompareOp>(loc, rhsWins, lhs, rhs);
  Value rhsGrad = b.create<SelectOp>(loc, rhsPick, dz, tieGrad);
  setBinaryGrads(b, loc, lhs, rhs, lhsGrad, rhsGrad, operandGrads);
  return success();
}

} // namespace

LogicalResult MaxOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  return chooserVJP(*this, b, resultGrads, operandGrads, CompareDirection::GT);
}

LogicalResult MinOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  return chooserVJP(*this, b, resultGrads, operandGrads, CompareDirection::LT);
}

// d select(p, a, b) = (none, select(p, dz, 0), select(p, 0, dz))
LogicalResult SelectOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads) ||
      !isFloatTensor(getResult()))
    return noGradients(*this, operandGrads);
  Location loc = getLoc();
  Value dz = resultGrads[0];
  Value zero = scalar(b, loc, tensorType(dz).getElementType(), 0.0);
  Value onTrue = b.create<SelectOp>(loc, getPred(), dz, zero);
  Value onFalse = b.create<SelectOp>(loc, getPred(), zero, dz);
  operandGrads[1] = sumToOperand(b, loc, onTrue, getOnTrue());
  operandGrads[2] = sumToOperand(b, loc, onFalse, getOnFalse());
  return success();
}

// Float to float: the gradient cast back. Anything to or from an integer or
// i1 has none.
LogicalResult CastOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  if (noResultGrads(*this, resultGrads, operandGrads) ||
      !isFloatTensor(getResult()) || !isFloatTensor(getInput()))
    return noGradients(*this, operandGrads);
  operandGrads[0] =
      castTo(b, getLoc(), resultGrads[0], getInput().getType());
  return success();
}
