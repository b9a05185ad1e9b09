//===- CompileProgram.cpp - a model to a runnable program, in process -----===//

#include "ls2c/JIT.h"

#include "ls2c/Codegen/ProgramBuilder.h"
#include "ls2c/Frontend/Frontend.h"
#include "ls2c/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <fstream>
#include <sstream>

namespace ls2c {

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

runtime::Program compileModule(mlir::ModuleOp module, const ModelDescription &desc,
                               const std::string &descriptionText,
                               const ProgramOptions &options, CompileReport *stats) {
  auto start = std::chrono::steady_clock::now();
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(module.getContext(), [&](mlir::Diagnostic &d) {
    llvm::raw_string_ostream os(diagnostics);
    os << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  auto fail = [&](const std::string &what) -> ProgramError {
    return ProgramError(what + (diagnostics.empty() ? "" : ":\n" + diagnostics));
  };

  mlir::PassManager pm(module.getContext());
  addCompilePipeline(pm, moduleStage(module), CompileStage::Planned);
  if (mlir::failed(pm.run(module)))
    throw fail("compiling model '" + desc.name + "' failed");
  mlir::FailureOr<runtime::Program> program = codegen::buildProgram(
      module, desc, descriptionText,
      options.functions.empty() ? codegen::trainingFunctions() : options.functions);
  if (mlir::failed(program))
    throw fail("building the program of model '" + desc.name + "' failed");
  if (stats) {
    stats->pipelineSeconds = secondsSince(start);
    stats->kernels = program->kernels.size();
  }

  start = std::chrono::steady_clock::now();
  std::vector<std::string> archs = options.archs;
  if (archs.empty())
    archs.push_back(jit::currentDeviceArch());
  std::vector<jit::KernelSource> sources;
  for (const runtime::Kernel &k : program->kernels)
    sources.push_back({k.name, k.source});
  for (const std::string &arch : archs) {
    jit::CompileOptions compile = options.compile;
    compile.arch = arch;
    std::vector<jit::CompiledKernel> cubins = jit::compileKernels(sources, compile);
    for (size_t i = 0; i < cubins.size(); ++i) {
      program->kernels[i].cubins[arch] = std::move(cubins[i].cubin);
      if (stats && cubins[i].fromCache)
        ++stats->fromCache;
    }
  }
  if (stats)
    stats->nvrtcSeconds = secondsSince(start);
  return std::move(*program);
}

runtime::Program compileProgram(const std::string &path, const ProgramOptions &options,
                                CompileReport *stats) {
  ModelDescription desc = loadModelDescription(path);
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  auto start = std::chrono::steady_clock::now();
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module = buildForwardModule(context, desc);
  if (!module)
    throw ProgramError("the forward module of '" + path + "' does not verify");
  double frontend = secondsSince(start);
  runtime::Program program = compileModule(*module, desc, text.str(), options, stats);
  if (stats)
    stats->pipelineSeconds += frontend;
  return program;
}

} // namespace ls2c
