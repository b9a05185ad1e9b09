//===- Frontend.h - model description -> ls2 IR ---------------------------===//
//
// Builds `func.func @forward(parameters..., inputs...) -> tensor<f32>` (the
// mean training loss) from a validated ModelDescription. Arguments carry
//   ls2.name: the parameter's reference name (ParameterLayout) or the input's
//   ls2.kind: "parameter" | "buffer" (not trained) | "input"
// Parameters come first, in ParameterLayout order, typed in the compute
// dtype; then the inputs (docs/architecture.md, "Frontend", lists them per
// architecture). Token dims are dynamic: sequences are packed without padding
// and delimited by cu_seqlens (int32 [batch + 1] offsets).
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_FRONTEND_FRONTEND_H
#define LS2C_FRONTEND_FRONTEND_H

#include "ls2c/Model/ModelDescription.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

namespace ls2c {

/// Registers and loads the dialects the frontend emits (ls2, func).
void loadFrontendDialects(mlir::MLIRContext &context);

/// The forward module of `desc`. The result verifies; a failure to verify
/// is a bug in ls2c and is reported as mlir diagnostics plus a null result.
mlir::OwningOpRef<mlir::ModuleOp> buildForwardModule(mlir::MLIRContext &context,
                                                     const ModelDescription &desc);

} // namespace ls2c

#endif // LS2C_FRONTEND_FRONTEND_H
