//===- HostTensor.cpp - dense tensors in host memory ----------------------===//
#include "ls2c/Reference/HostTensor.h"

#include <limits>
#include <stdexcept>

namespace ls2c::reference {

bool isFloat(ElementType type) {
  return type == ElementType::F32 || type == ElementType::F16 ||
         type == ElementType::BF16;
}

const char *toString(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return "f32";
  case ElementType::F16:
    return "f16";
  case ElementType::BF16:
    return "bf16";
  case ElementType::I32:
    return "i32";
  case ElementType::I64:
    return "i64";
  case ElementType::I1:
    return "i1";
  }
  return "?";
}

namespace {

/// The element count of `shape`; throws on a negative dim or an overflow.
int64_t checkedCount(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0)
      throw std::invalid_argument("HostTensor: negative dim " +
                                  std::to_string(d));
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / d)
      throw std::invalid_argument("HostTensor: element count overflows int64");
    count *= d;
  }
  return count;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

void checkValueCount(ElementType type, const std::vector<int64_t> &shape,
                     size_t count) {
  int64_t expected = checkedCount(shape);
  if (static_cast<int64_t>(count) != expected)
    throw std::invalid_argument(std::string("HostTensor: ") + toString(type) +
                                shapeString(shape) + " needs " +
                                std::to_string(expected) + " values, got " +
                                std::to_string(count));
}

} // namespace

HostTensor HostTensor::zeros(ElementType type, std::vector<int64_t> shape) {
  auto count = static_cast<size_t>(checkedCount(shape));
  HostTensor t;
  t.type = type;
  t.shape = std::move(shape);
  if (isFloat(type))
    t.floats.assign(count, 0.0);
  else
    t.ints.assign(count, 0);
  return t;
}

HostTensor HostTensor::fromFloats(ElementType type, std::vector<int64_t> shape,
                                  std::vector<double> values) {
  if (!isFloat(type))
    throw std::invalid_argument(std::string("HostTensor::fromFloats: ") +
                                toString(type) + " is not a float type");
  checkValueCount(type, shape, values.size());
  HostTensor t;
  t.type = type;
  t.shape = std::move(shape);
  t.floats = std::move(values);
  return t;
}

HostTensor HostTensor::fromInts(ElementType type, std::vector<int64_t> shape,
                                std::vector<int64_t> values) {
  if (isFloat(type))
    throw std::invalid_argument(std::string("HostTensor::fromInts: ") +
                                toString(type) + " is not an integer type");
  checkValueCount(type, shape, values.size());
  HostTensor t;
  t.type = type;
  t.shape = std::move(shape);
  t.ints = std::move(values);
  return t;
}

HostTensor HostTensor::scalarFloat(ElementType type, double value) {
  return fromFloats(type, {}, {value});
}

HostTensor HostTensor::scalarInt(ElementType type, int64_t value) {
  return fromInts(type, {}, {value});
}

int64_t HostTensor::numElements() const { return checkedCount(shape); }

std::string HostTensor::describe() const {
  return toString(type) + shapeString(shape);
}

} // namespace ls2c::reference
