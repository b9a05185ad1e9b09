//===- KernelsElementwise.cpp - unary, binary, compare, select, cast ... --===//
//
// Elementwise ops compute in double; the Frame rounds results to their
// element type in F32 mode. Integer arithmetic wraps (i32 modulo 2^32 when
// bound, i64 through unsigned arithmetic), integer division truncates
// toward zero and division by zero is an error.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ls2c::reference::detail {

using namespace mlir;

namespace {

const double kPi = 3.14159265358979323846;

/// The result shape of a binary op: equal shapes, or one operand rank 0.
std::vector<int64_t> binaryShape(Operation *op, const HostTensor &lhs,
                                 const HostTensor &rhs, const char *lhsName,
                                 const char *rhsName) {
  if (lhs.rank() == 0)
    return rhs.shape;
  if (rhs.rank() == 0 || lhs.shape == rhs.shape)
    return lhs.shape;
  fail(op, std::string(lhsName) + " shape " + shapeString(lhs.shape) +
               " and " + rhsName + " shape " + shapeString(rhs.shape) +
               " differ at run time");
}

/// Element e of `t` where rank-0 tensors stand for every element.
inline size_t at(const HostTensor &t, size_t e) { return t.rank() == 0 ? 0 : e; }

double maxPropagatingNaN(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b) // +0 beats -0
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

double minPropagatingNaN(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b) // -0 beats +0
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

int64_t wrappingAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) +
                              static_cast<uint64_t>(b));
}
int64_t wrappingSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) -
                              static_cast<uint64_t>(b));
}
int64_t wrappingMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) *
                              static_cast<uint64_t>(b));
}

bool compareFloats(ls2::CompareDirection direction, double a, double b) {
  switch (direction) {
  case ls2::CompareDirection::EQ:
    return a == b;
  case ls2::CompareDirection::NE:
    return a != b; // true for NaN, as the op says
  case ls2::CompareDirection::LT:
    return a < b;
  case ls2::CompareDirection::LE:
    return a <= b;
  case ls2::CompareDirection::GT:
    return a > b;
  case ls2::CompareDirection::GE:
    return a >= b;
  }
  return false;
}

bool compareInts(ls2::CompareDirection direction, int64_t a, int64_t b) {
  switch (direction) {
  case ls2::CompareDirection::EQ:
    return a == b;
  case ls2::CompareDirection::NE:
    return a != b;
  case ls2::CompareDirection::LT:
    return a < b;
  case ls2::CompareDirection::LE:
    return a <= b;
  case ls2::CompareDirection::GT:
    return a > b;
  case ls2::CompareDirection::GE:
    return a >= b;
  }
  return false;
}

/// Float to integer: truncation toward zero, saturating at the type's
/// range; NaN gives 0.
int64_t floatToInt(double x, ElementType type) {
  if (std::isnan(x))
    return 0;
  double t = std::trunc(x);
  if (type == ElementType::I32) {
    if (t <= -2147483648.0)
      return std::numeric_limits<int32_t>::min();
    if (t >= 2147483647.0)
      return std::numeric_limits<int32_t>::max();
    return static_cast<int64_t>(t);
  }
  if (t < -9223372036854775808.0)
    return std::numeric_limits<int64_t>::min();
  if (t >= 9223372036854775808.0)
    return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(t);
}

} // namespace

void evalUnary(Operation *op, Frame &frame) {
  HostTensor result = frame.get(op, op->getOperand(0));
  double (*fn)(double) = nullptr;
  if (isa<ls2::NegOp>(op))
    fn = [](double x) { return -x; };
  else if (isa<ls2::ExpOp>(op))
    fn = [](double x) { return std::exp(x); };
  else if (isa<ls2::LogOp>(op))
    fn = [](double x) { return std::log(x); };
  else if (isa<ls2::TanhOp>(op))
    fn = [](double x) { return std::tanh(x); };
  else if (isa<ls2::ErfOp>(op))
    fn = [](double x) { return std::erf(x); };
  else if (isa<ls2::SqrtOp>(op))
    fn = [](double x) { return std::sqrt(x); };
  else if (isa<ls2::RsqrtOp>(op))
    fn = [](double x) { return 1.0 / std::sqrt(x); };
  else if (isa<ls2::SinOp>(op))
    fn = [](double x) { return std::sin(x); };
  else if (isa<ls2::CosOp>(op))
    fn = [](double x) { return std::cos(x); };
  else
    fail(op, "is not a unary op (a reference backend bug)");
  for (double &x : result.floats)
    x = fn(x);
  frame.bind(op, op->getResult(0), std::move(result));
}

void evalBinary(Operation *op, Frame &frame) {
  const HostTensor &lhs = frame.get(op, op->getOperand(0));
  const HostTensor &rhs = frame.get(op, op->getOperand(1));
  HostTensor result =
      HostTensor::zeros(lhs.type, binaryShape(op, lhs, rhs, "lhs", "rhs"));
  size_t n = static_cast<size_t>(result.numElements());
  if (isFloat(lhs.type)) {
    double (*fn)(double, double) = nullptr;
    if (isa<ls2::AddOp>(op))
      fn = [](double a, double b) { return a + b; };
    else if (isa<ls2::SubOp>(op))
      fn = [](double a, double b) { return a - b; };
    else if (isa<ls2::MulOp>(op))
      fn = [](double a, double b) { return a * b; };
    else if (isa<ls2::DivOp>(op))
      fn = [](double a, double b) { return a / b; };
    else if (isa<ls2::MaxOp>(op))
      fn = maxPropagatingNaN;
    else
      fn = minPropagatingNaN;
    for (size_t e = 0; e < n; ++e)
      result.floats[e] = fn(lhs.floats[at(lhs, e)], rhs.floats[at(rhs, e)]);
  } else {
    for (size_t e = 0; e < n; ++e) {
      int64_t a = lhs.ints[at(lhs, e)], b = rhs.ints[at(rhs, e)];
      int64_t r;
      if (isa<ls2::AddOp>(op)) {
        r = wrappingAdd(a, b);
      } else if (isa<ls2::SubOp>(op)) {
        r = wrappingSub(a, b);
      } else if (isa<ls2::MulOp>(op)) {
        r = wrappingMul(a, b);
      } else if (isa<ls2::DivOp>(op)) {
        if (b == 0)
          fail(op, "divides by zero at element " + std::to_string(e));
        r = (b == -1) ? wrappingSub(0, a) : a / b;
      } else if (isa<ls2::MaxOp>(op)) {
        r = std::max(a, b);
      } else {
        r = std::min(a, b);
      }
      result.ints[e] = r;
    }
  }
  frame.bind(op, op->getResult(0), std::move(result));
}

void evalCompare(ls2::CompareOp op, Frame &frame) {
  const HostTensor &lhs = frame.get(op, op.getLhs());
  const HostTensor &rhs = frame.get(op, op.getRhs());
  HostTensor result = HostTensor::zeros(
      ElementType::I1, binaryShape(op, lhs, rhs, "lhs", "rhs"));
  ls2::CompareDirection direction = op.getDirection();
  for (size_t e = 0; e < result.ints.size(); ++e)
    result.ints[e] =
        isFloat(lhs.type)
            ? compareFloats(direction, lhs.floats[at(lhs, e)],
                            rhs.floats[at(rhs, e)])
            : compareInts(direction, lhs.ints[at(lhs, e)], rhs.ints[at(rhs, e)]);
  frame.bind(op, op.getResult(), std::move(result));
}

void evalSelect(ls2::SelectOp op, Frame &frame) {
  const HostTensor &pred = frame.get(op, op.getPred());
  const HostTensor &onTrue = frame.get(op, op.getOnTrue());
  const HostTensor &onFalse = frame.get(op, op.getOnFalse());
  for (const HostTensor *value : {&onTrue, &onFalse})
    if (value->rank() != 0)
      expectShape(op, *value, pred.shape,
                  value == &onTrue ? "on_true" : "on_false");
  HostTensor result = HostTensor::zeros(onTrue.type, pred.shape);
  for (size_t e = 0; e < pred.ints.size(); ++e) {
    const HostTensor &from = pred.ints[e] ? onTrue : onFalse;
    if (isFloat(result.type))
      result.floats[e] = from.floats[at(from, e)];
    else
      result.ints[e] = from.ints[at(from, e)];
  }
  frame.bind(op, op.getResult(), std::move(result));
}

void evalCast(ls2::CastOp op, Frame &frame) {
  const HostTensor &input = frame.get(op, op.getInput());
  ElementType to = elementTypeOf(op, op.getType().getElementType());
  HostTensor result = HostTensor::zeros(to, input.shape);
  size_t n = static_cast<size_t>(input.numElements());
  for (size_t e = 0; e < n; ++e) {
    if (isFloat(input.type)) {
      double x = input.floats[e];
      if (isFloat(to))
        result.floats[e] = x; // rounded to `to` when bound (F32 mode)
      else if (to == ElementType::I1)
        result.ints[e] = x != 0.0; // NaN is true
      else
        result.ints[e] = floatToInt(x, to);
    } else {
      int64_t x = input.ints[e];
      if (isFloat(to))
        result.floats[e] = static_cast<double>(x);
      else
        result.ints[e] = x; // i32 wraps, i1 becomes x != 0 when bound
    }
  }
  frame.bind(op, op.getResult(), std::move(result));
}

void evalConstant(ls2::ConstantOp op, Frame &frame) {
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!dense)
    fail(op, "value must be a dense elements attribute");
  auto type = cast<RankedTensorType>(op.getType());
  ElementType elementType = elementTypeOf(op, type.getElementType());
  HostTensor result = HostTensor::zeros(
      elementType, std::vector<int64_t>(type.getShape().begin(),
                                        type.getShape().end()));
  size_t e = 0;
  if (isFloat(elementType)) {
    for (llvm::APFloat value : dense.getValues<llvm::APFloat>()) {
      bool losesInfo = false;
      value.convert(llvm::APFloat::IEEEdouble(),
                    llvm::APFloat::rmNearestTiesToEven, &losesInfo);
      result.floats[e++] = value.convertToDouble();
    }
  } else {
    for (const llvm::APInt &value : dense.getValues<llvm::APInt>())
      result.ints[e++] = value.getBitWidth() == 1
                             ? static_cast<int64_t>(value.getZExtValue())
                             : value.getSExtValue();
  }
  frame.bind(op, op.getResult(), std::move(result));
}

void evalGelu(ls2::GeluOp op, Frame &frame) {
  HostTensor result = frame.get(op, op.getInput());
  bool tanhForm = op.getApproximate() == ls2::GeluApproximation::Tanh;
  const double sqrt2OverPi = std::sqrt(2.0 / kPi);
  for (double &x : result.floats) {
    if (tanhForm)
      x = x * 0.5 *
          (1.0 + std::tanh(sqrt2OverPi * (x + 0.044715 * x * x * x)));
    else
      x = x * 0.5 * (1.0 + std::erf(x / std::sqrt(2.0)));
  }
  frame.bind(op, op.getResult(), std::move(result));
}

} // namespace ls2c::reference::detail
