//===- LS2OpUtils.h - helpers shared by the ls2 op implementations --------===//
#ifndef LS2_IR_LS2OPUTILS_H
#define LS2_IR_LS2OPUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/Support/LogicalResult.h"

#include <optional>
#include <string>

namespace ls2c::ls2 {

/// Emits "'ls2.<opName>' op <message>" at `loc` (when given); returns failure.
mlir::LogicalResult emitInferError(std::optional<mlir::Location> loc,
                                   llvm::StringRef opName,
                                   const llvm::Twine &message);

/// The shape of an elementwise binary op: operands share their element type
/// and either their shape, or one is rank 0 (a scalar used everywhere).
mlir::FailureOr<mlir::RankedTensorType>
inferElementwiseShape(std::optional<mlir::Location> loc, llvm::StringRef opName,
                      mlir::Type lhs, mlir::Type rhs);

/// "[?, 768]" for diagnostics.
std::string shapeToString(llvm::ArrayRef<int64_t> shape);
std::string typeToString(mlir::Type type);

} // namespace ls2c::ls2

#endif // LS2_IR_LS2OPUTILS_H
