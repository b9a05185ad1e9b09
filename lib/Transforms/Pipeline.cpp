//===- Pipeline.cpp - the pass pipeline of ls2c compile --------------------===//
#include "ls2c/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace ls2c {

void addCompilePipeline(mlir::OpPassManager &pm, CompileStage stage,
                        bool fusionReport) {
  if (stage == CompileStage::Forward)
    return;
  pm.addPass(createAutodiff());
  pm.addPass(createTrainStep());
  if (stage == CompileStage::TrainStep)
    return;
  pm.addPass(createDecompose());
  // Forward and backward recompute the same statistics (layer norm's mean,
  // softmax's max); one copy lets one kernel produce them.
  pm.addPass(mlir::createCSEPass());
  pm.addNestedPass<mlir::func::FuncOp>(createMergeGemms());
  FuseOptions fuse;
  fuse.report = fusionReport;
  pm.addNestedPass<mlir::func::FuncOp>(createFuse(fuse));
  if (stage == CompileStage::Fused)
    return;
  pm.addNestedPass<mlir::func::FuncOp>(createPlanBuffers());
}

} // namespace ls2c
