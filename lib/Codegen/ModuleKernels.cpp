//===- ModuleKernels.cpp - the kernels of every fusion group of a module --===//

#include "ls2c/Codegen/ModuleKernels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>

using namespace mlir;

namespace ls2c::codegen {

namespace {

/// The source without its first line (the comment naming the group) and
/// with the kernel's name blanked: equal keys mean the same machine code.
std::string dedupKey(const runtime::Kernel &k) {
  std::string s = k.source.substr(k.source.find('\n') + 1);
  for (size_t pos = 0; (pos = s.find(k.name, pos)) != std::string::npos;)
    s.replace(pos, k.name.size(), "@");
  return s;
}

/// One kernel as an op's list of kernels.
FailureOr<std::vector<GeneratedKernel>> one(FailureOr<GeneratedKernel> kernel) {
  if (failed(kernel))
    return failure();
  std::vector<GeneratedKernel> kernels;
  kernels.push_back(std::move(*kernel));
  return kernels;
}

} // namespace

FailureOr<ModuleKernels> generateModuleKernels(ModuleOp module) {
  ModuleKernels out;
  std::map<std::string, unsigned> seen;
  bool failed = false;
  for (auto function : module.getOps<func::FuncOp>()) {
    FailureOr<ShapeBounds> bounds = ShapeBounds::compute(function);
    FailureOr<SymbolicDims> dims = SymbolicDims::compute(function);
    if (mlir::failed(bounds) || mlir::failed(dims)) {
      failed = true;
      continue;
    }
    int scatters = 0, nonzeros = 0, attentions = 0, attentionGrads = 0;
    for (Operation &op : function.getBody().front()) {
      // The kernels of one op, in launch order (attention_grad has two, a row
      // reduction with column sums two).
      FailureOr<std::vector<GeneratedKernel>> generated = failure();
      std::string prefix = function.getName().str() + "_";
      if (auto fusion = dyn_cast<ls2::FusionOp>(op)) {
        generated = generateFusionKernels(fusion, *dims, *bounds,
                                          prefix + fusion.getGroupName().str());
      } else if (auto scatter = dyn_cast<ls2::ScatterAddOp>(op)) {
        generated = generateScatterAddKernels(scatter, *dims, *bounds,
                                              prefix + "scatter_add_" + std::to_string(scatters++));
      } else if (auto nonzero = dyn_cast<ls2::NonzeroOp>(op)) {
        generated = one(generateNonzeroKernel(
            nonzero, *dims, prefix + "nonzero_" + std::to_string(nonzeros++)));
      } else if (auto attention = dyn_cast<ls2::AttentionOp>(op)) {
        generated = one(generateAttentionKernel(
            attention, *dims, prefix + "attention_" + std::to_string(attentions++)));
      } else if (auto grad = dyn_cast<ls2::AttentionGradOp>(op)) {
        generated = generateAttentionGradKernels(
            grad, *dims, *bounds, prefix + "attention_grad_" + std::to_string(attentionGrads++));
      } else {
        continue;
      }
      if (mlir::failed(generated)) {
        failed = true;
        continue;
      }
      for (GeneratedKernel &kernel : *generated) {
        auto [it, inserted] = seen.try_emplace(dedupKey(kernel.kernel),
                                               static_cast<unsigned>(out.kernels.size()));
        if (inserted)
          out.kernels.push_back(std::move(kernel.kernel));
        out.uses.push_back({function.getName().str(), &op, it->second,
                            std::move(kernel.bindings)});
      }
    }
  }
  if (failed)
    return failure();
  return out;
}

} // namespace ls2c::codegen
