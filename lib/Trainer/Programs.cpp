//===- Programs.cpp - the compiled train step the CPU drivers interpret ---===//
#include "Programs.h"

#include "ls2c/Frontend/EvaluationModule.h"
#include "ls2c/Frontend/Frontend.h"
#include "ls2c/Trainer/Trainer.h"
#include "ls2c/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

namespace ls2c {

using reference::ElementType;
using reference::HostTensor;

std::string argName(mlir::func::FuncOp f, unsigned i) {
  auto name = f.getArgAttrOfType<mlir::StringAttr>(i, "ls2.name");
  return name ? name.str() : "";
}

ElementType computeType(DType d) {
  switch (d) {
  case DType::F32:
    return ElementType::F32;
  case DType::F16:
    return ElementType::F16;
  case DType::BF16:
    return ElementType::BF16;
  }
  return ElementType::F32;
}

void compilePrograms(Programs &p, const ModelDescription &desc) {
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&p.context, [&](mlir::Diagnostic &d) {
    diagnostics += d.str() + "\n";
    return mlir::success();
  });
  p.train = buildForwardModule(p.context, desc);
  // The dropout-free @forward returning the loss and the logits it scores
  // (the same function as the GPU's evaluation bundle, --program=eval).
  p.eval = buildEvaluationModule(p.context, desc);
  if (!p.train || !p.eval)
    throw TrainError("internal error: the forward module does not verify: " +
                     diagnostics);
  mlir::PassManager pm(&p.context);
  pm.addPass(createAutodiff());
  pm.addPass(createTrainStep());
  if (mlir::failed(pm.run(*p.train)))
    throw TrainError("internal error: building the train step failed: " +
                     diagnostics);
  p.accumulate = p.train->lookupSymbol<mlir::func::FuncOp>("accumulate_gradients");
  p.optimizerStep = p.train->lookupSymbol<mlir::func::FuncOp>("optimizer_step");
  p.forward = p.eval->lookupSymbol<mlir::func::FuncOp>("forward");
}

void appendNamed(std::vector<HostTensor> &args, mlir::func::FuncOp f,
                 unsigned skip, const std::map<std::string, HostTensor> &named) {
  for (unsigned i = skip; i < f.getNumArguments(); ++i) {
    auto it = named.find(argName(f, i));
    if (it == named.end())
      throw TrainError("internal error: no value for argument '" +
                       argName(f, i) + "' of @" + f.getName().str());
    args.push_back(it->second);
  }
}

} // namespace ls2c
