//===- EvaluationModule.cpp - @forward returning its loss and logits ------===//
#include "ls2c/Frontend/EvaluationModule.h"

#include "ls2c/Frontend/Frontend.h"
#include "ls2/IR/LS2Dialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace ls2c {

ModelDescription evaluationDescription(ModelDescription desc) {
  desc.hidden_dropout = desc.attention_dropout = desc.activation_dropout = 0.0;
  // Logits for every token, which the gathered head does not have.
  desc.max_predictions = 0;
  return desc;
}

mlir::OwningOpRef<mlir::ModuleOp> buildEvaluationModule(mlir::MLIRContext &context,
                                                        const ModelDescription &desc) {
  mlir::OwningOpRef<mlir::ModuleOp> module =
      buildForwardModule(context, evaluationDescription(desc));
  if (!module)
    return nullptr;
  auto forward = module->lookupSymbol<mlir::func::FuncOp>("forward");
  ls2::CrossEntropyOp loss;
  forward.walk([&](ls2::CrossEntropyOp op) { loss = op; });
  if (!loss) {
    mlir::emitError(forward.getLoc(), "@forward has no cross_entropy to take the logits of");
    return nullptr;
  }
  mlir::Builder b(&context);
  auto ret = llvm::cast<mlir::func::ReturnOp>(forward.getBody().back().getTerminator());
  mlir::Value logits = loss.getLogits();
  forward.insertResult(forward.getNumResults(), logits.getType(),
                       b.getDictionaryAttr({b.getNamedAttr("ls2.name", b.getStringAttr("logits")),
                                            b.getNamedAttr("ls2.kind", b.getStringAttr("output"))}));
  ret->insertOperands(ret->getNumOperands(), logits);
  (*module)->setAttr("ls2.differentiated", b.getUnitAttr());
  return module;
}

} // namespace ls2c
