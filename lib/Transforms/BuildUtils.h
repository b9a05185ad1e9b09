//===- BuildUtils.h - small ls2 IR builders shared by the passes ----------===//
#ifndef LS2C_LIB_TRANSFORMS_BUILDUTILS_H
#define LS2C_LIB_TRANSFORMS_BUILDUTILS_H

#include "ls2/IR/LS2Dialect.h"

#include "mlir/IR/Builders.h"

namespace ls2c {

inline mlir::RankedTensorType tensorTypeOf(mlir::Value value) {
  return mlir::cast<mlir::RankedTensorType>(value.getType());
}

/// A rank-0 constant of `elementType` holding `value` (truncated for
/// integer types).
inline mlir::Value buildScalar(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::Type elementType, double value) {
  auto type = mlir::RankedTensorType::get({}, elementType);
  mlir::Attribute attr =
      mlir::isa<mlir::FloatType>(elementType)
          ? mlir::Attribute(b.getFloatAttr(elementType, value))
          : mlir::Attribute(
                b.getIntegerAttr(elementType, static_cast<int64_t>(value)));
  return b.create<ls2::ConstantOp>(loc, mlir::DenseElementsAttr::get(type, attr));
}

/// A rank-0 integer constant (ids and counters never round-trip via double).
inline mlir::Value buildIntScalar(mlir::OpBuilder &b, mlir::Location loc,
                                  mlir::Type elementType, int64_t value) {
  auto type = mlir::RankedTensorType::get({}, elementType);
  return b.create<ls2::ConstantOp>(
      loc, mlir::DenseElementsAttr::get(type, b.getIntegerAttr(elementType, value)));
}

/// `value` converted to `elementType` (no op when it already has it).
inline mlir::Value buildCast(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::Value value, mlir::Type elementType) {
  mlir::RankedTensorType type = tensorTypeOf(value);
  if (type.getElementType() == elementType)
    return value;
  return b.create<ls2::CastOp>(loc, type.clone(elementType), value);
}

} // namespace ls2c

#endif // LS2C_LIB_TRANSFORMS_BUILDUTILS_H
