//===- LS2OpUtils.h - helpers shared by the ls2 op implementations --------===//
#ifndef LS2_IR_LS2OPUTILS_H
#define LS2_IR_LS2OPUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"
#include "mlir/IR/ValueRange.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <string>

namespace ls2c::ls2 {

/// Emits "'ls2.<opName>' op <message>" at `loc` (when given); returns failure.
mlir::LogicalResult emitInferError(std::optional<mlir::Location> loc,
                                   llvm::StringRef opName,
                                   const llvm::Twine &message);

/// The type of `operands[index]` as a ranked tensor. Type inference runs
/// before the ODS type constraints when the parser infers result types, so
/// every operand it reads may be of any type (f32, tensor<*xf32>, index...);
/// anything else emits "'ls2.<opName>' op operand #<index> must be a ranked
/// tensor, got '<type>'" and fails.
mlir::FailureOr<mlir::RankedTensorType>
rankedOperand(std::optional<mlir::Location> loc, llvm::StringRef opName,
              mlir::ValueRange operands, unsigned index);

/// The shape of an elementwise binary op: operands share their element type
/// and either their shape, or one is rank 0 (a scalar used everywhere).
/// `lhs` and `rhs` are operands #0 and #1, of any type (see rankedOperand).
mlir::FailureOr<mlir::RankedTensorType>
inferElementwiseShape(std::optional<mlir::Location> loc, llvm::StringRef opName,
                      mlir::Type lhs, mlir::Type rhs);

/// The product of the static dims of `shape` (dynamic dims are skipped), or
/// std::nullopt when it overflows int64. A static 0 makes it 0 whatever the
/// other dims are.
std::optional<int64_t> staticElementCount(llvm::ArrayRef<int64_t> shape);

/// The rules of ls2.reshape from `input` to `result`. When they fail,
/// reports why through `emitError` if it is given (the folder asks without
/// it, to know whether a combined reshape would verify).
mlir::LogicalResult verifyReshapeTypes(
    mlir::RankedTensorType input, mlir::RankedTensorType result,
    llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

/// "[?, 768]" for diagnostics.
std::string shapeToString(llvm::ArrayRef<int64_t> shape);
std::string typeToString(mlir::Type type);

} // namespace ls2c::ls2

#endif // LS2_IR_LS2OPUTILS_H
