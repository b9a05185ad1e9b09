//===- Pipeline.cpp - the pass pipeline of ls2c compile --------------------===//
#include "ls2c/Transforms/Passes.h"

#include "ls2/IR/LS2Dialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace ls2c {

void addCompilePipeline(mlir::OpPassManager &pm, CompileStage stage,
                        bool fusionReport) {
  addCompilePipeline(pm, CompileStage::Forward, stage, fusionReport);
}

void addCompilePipeline(mlir::OpPassManager &pm, CompileStage from,
                        CompileStage to, bool fusionReport) {
  auto runs = [&](CompileStage s) { return from < s && s <= to; };
  if (runs(CompileStage::TrainStep)) {
    pm.addPass(createAutodiff());
    pm.addPass(createTrainStep());
  }
  if (runs(CompileStage::Fused)) {
    pm.addPass(createDecompose());
    // Forward and backward recompute the same statistics (layer norm's mean,
    // softmax's max); one copy lets one kernel produce them.
    pm.addPass(mlir::createCSEPass());
    pm.addNestedPass<mlir::func::FuncOp>(createMergeGemms());
    FuseOptions fuse;
    fuse.report = fusionReport;
    pm.addNestedPass<mlir::func::FuncOp>(createFuse(fuse));
  }
  if (runs(CompileStage::Planned))
    pm.addNestedPass<mlir::func::FuncOp>(createPlanBuffers());
}

CompileStage moduleStage(mlir::ModuleOp module) {
  bool planned = false, fused = false;
  // A module of complete functions (no @forward to differentiate).
  bool trainStep = module->hasAttr("ls2.differentiated");
  for (auto f : module.getOps<mlir::func::FuncOp>()) {
    planned |= f->hasAttr("ls2.arena_bytes");
    trainStep |= f.getName() == "accumulate_gradients";
    f.walk([&](ls2::FusionOp) { fused = true; });
  }
  return planned     ? CompileStage::Planned
         : fused     ? CompileStage::Fused
         : trainStep ? CompileStage::TrainStep
                     : CompileStage::Forward;
}

} // namespace ls2c
