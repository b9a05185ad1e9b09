//===- EvaluationModule.h - the dropout-free @forward that evaluation runs -===//
//
// Validation scores predictions, not just the loss: the accuracy `ls2c train`
// reports for encoder, encoder_decoder and vit models needs the logits the
// loss is computed from. The CPU trainer (lib/Trainer/Programs.cpp) and
// `ls2c compile --program=eval` (the evaluation bundle of ls2c-gpu-train)
// build the same module, so both evaluate the same function:
//
//   func.func @forward(parameters..., inputs...) -> (tensor<f32> loss,
//       tensor<?xVxdt> {ls2.name = "logits", ls2.kind = "output"})
//
// of the description with every dropout rate 0 and no max_predictions (the
// masked-LM head on every token: scoring and `ls2c step --logits` read a
// row per token, and the loss is the same). The logits are the
// cross_entropy's input: [T, vocab] for token models, [B, num_classes] for
// vit. The module carries ls2.differentiated: it is complete (there is no
// backward to derive), so the compile pipeline fuses and plans it as it is.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_FRONTEND_EVALUATIONMODULE_H
#define LS2C_FRONTEND_EVALUATIONMODULE_H

#include "ls2c/Model/ModelDescription.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

namespace ls2c {

/// `desc` with every dropout rate 0 and the head on every token: what
/// evaluation runs.
ModelDescription evaluationDescription(ModelDescription desc);

/// The evaluation module above. A null result (with mlir diagnostics) is a
/// bug in ls2c, as for buildForwardModule.
mlir::OwningOpRef<mlir::ModuleOp> buildEvaluationModule(mlir::MLIRContext &context,
                                                        const ModelDescription &desc);

} // namespace ls2c

#endif // LS2C_FRONTEND_EVALUATIONMODULE_H
