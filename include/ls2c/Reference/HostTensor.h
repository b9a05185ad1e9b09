//===- HostTensor.h - dense tensors in host memory for the reference backend ===//
//
// A row-major tensor with a static shape. Float tensors (f32, f16, bf16 in
// the IR) hold their values as double; integer and i1 tensors as int64_t.
// No MLIR dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_REFERENCE_HOSTTENSOR_H
#define LS2C_REFERENCE_HOSTTENSOR_H

#include <cstdint>
#include <string>
#include <vector>

namespace ls2c::reference {

/// The arithmetic the interpreter computes in (HostTensor values are
/// doubles either way; F32 rounds each op's result to float).
enum class Precision { F32, F64 };

/// Element types of the ls2 dialect.
enum class ElementType { F32, F16, BF16, I32, I64, I1 };

bool isFloat(ElementType type);
/// "f32", "f16", "bf16", "i32", "i64", "i1" as in MLIR.
const char *toString(ElementType type);

struct HostTensor {
  ElementType type = ElementType::F32;
  std::vector<int64_t> shape;  ///< row-major, every dim >= 0
  std::vector<double> floats;  ///< the values when isFloat(type), else empty
  std::vector<int64_t> ints;   ///< the values otherwise, else empty

  /// A zero-filled tensor. Throws std::invalid_argument on a negative dim.
  static HostTensor zeros(ElementType type, std::vector<int64_t> shape);
  static HostTensor fromFloats(ElementType type, std::vector<int64_t> shape,
                               std::vector<double> values);
  static HostTensor fromInts(ElementType type, std::vector<int64_t> shape,
                             std::vector<int64_t> values);
  /// A rank-0 tensor.
  static HostTensor scalarFloat(ElementType type, double value);
  static HostTensor scalarInt(ElementType type, int64_t value);

  int64_t numElements() const;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  /// "tensor<3x?...>"-style description for messages, e.g. "f32[4, 64]".
  std::string describe() const;
};

} // namespace ls2c::reference

#endif // LS2C_REFERENCE_HOSTTENSOR_H
