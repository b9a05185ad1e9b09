//===- CodegenCompileTest.cpp - every generated kernel compiles -----------===//
//
// Every kernel of every preset (tiny and full size) compiles through NVRTC
// to an sm_90 cubin, and the tiny presets' also for sm_80; the tiny presets
// go through the whole path to bundles and back. No GPU needed.
//
//===----------------------------------------------------------------------===//

#include "ls2c/Codegen/ModuleKernels.h"
#include "ls2c/Frontend/Frontend.h"
#include "ls2c/JIT.h"
#include "ls2c/Runtime/Bundle.h"
#include "ls2c/JIT/KernelCompiler.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Transforms/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

namespace {

struct Compiled {
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  ls2c::codegen::ModuleKernels kernels;
};

Compiled generate(const std::string &preset) {
  Compiled c;
  c.context = std::make_unique<mlir::MLIRContext>();
  ls2c::ModelDescription desc =
      ls2c::loadModelDescription(LS2C_SOURCE_DIR "/examples/" + preset + ".json");
  c.module = ls2c::buildForwardModule(*c.context, desc);
  EXPECT_TRUE(c.module) << preset;
  mlir::PassManager pm(c.context.get());
  ls2c::addCompilePipeline(pm, ls2c::CompileStage::Planned, false);
  EXPECT_TRUE(mlir::succeeded(pm.run(*c.module))) << preset;
  mlir::FailureOr<ls2c::codegen::ModuleKernels> kernels =
      ls2c::codegen::generateModuleKernels(*c.module);
  EXPECT_TRUE(mlir::succeeded(kernels)) << preset;
  if (mlir::succeeded(kernels))
    c.kernels = std::move(*kernels);
  return c;
}

void compileAll(const std::string &preset, const std::string &arch) {
  Compiled c = generate(preset);
  ASSERT_FALSE(c.kernels.kernels.empty()) << preset;
  // Every fusion group and embedding gradient has a kernel.
  int fusions = 0;
  c.module->walk([&](mlir::Operation *op) {
    fusions += mlir::isa<ls2c::ls2::FusionOp, ls2c::ls2::ScatterAddOp>(op);
  });
  EXPECT_EQ(static_cast<size_t>(fusions), c.kernels.uses.size()) << preset;

  std::vector<ls2c::jit::KernelSource> sources;
  for (const ls2c::runtime::Kernel &k : c.kernels.kernels)
    sources.push_back({k.name, k.source});
  ls2c::jit::CompileOptions options;
  options.arch = arch;
  options.useDiskCache = false;
  auto start = std::chrono::steady_clock::now();
  std::vector<ls2c::jit::CompiledKernel> compiled;
  try {
    compiled = ls2c::jit::compileKernels(sources, options);
  } catch (const ls2c::jit::CompileError &e) {
    FAIL() << preset << ": " << e.what();
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: %zu kernels (%zu fusion groups) compiled for %s in %.2f s\n",
              preset.c_str(), sources.size(), c.kernels.uses.size(), arch.c_str(),
              seconds);
  ASSERT_EQ(compiled.size(), sources.size());
  for (size_t i = 0; i < compiled.size(); ++i) {
    EXPECT_EQ(compiled[i].cubin.compare(0, 4, "\x7f" "ELF"), 0) << sources[i].name;
    // The kernel's symbol is in the image.
    EXPECT_NE(compiled[i].cubin.find(sources[i].name), std::string::npos)
        << sources[i].name;
  }
}

class EveryPreset : public ::testing::TestWithParam<const char *> {};

TEST_P(EveryPreset, CompilesForSm90) { compileAll(GetParam(), "sm_90"); }

INSTANTIATE_TEST_SUITE_P(Presets, EveryPreset,
                         ::testing::Values("tiny-bert", "tiny-gpt", "tiny-transformer",
                                           "tiny-vit", "bert-base", "bert-large",
                                           "gpt2-small", "gpt2-medium",
                                           "transformer-base", "transformer-big",
                                           "vit-b16"));

TEST(TinyPresets, CompileForSm80) {
  for (const char *preset : {"tiny-bert", "tiny-gpt", "tiny-transformer", "tiny-vit"})
    compileAll(preset, "sm_80");
}

} // namespace

namespace {

// The whole path: description -> program with cubins -> bundle bytes ->
// loader. Every fusion group and embedding gradient of the three training
// functions is one launch step, every matmul a GEMM step, every attention
// (and its gradient) an attention step; the loader reads back the same
// program and its validator accepts it.
TEST(ProgramBundle, TinyPresetsRoundTrip) {
  for (const char *preset : {"tiny-bert", "tiny-gpt", "tiny-transformer", "tiny-vit"}) {
    std::string path = LS2C_SOURCE_DIR "/examples/" + std::string(preset) + ".json";
    ls2c::ProgramOptions options;
    options.archs = {"sm_90"};
    options.compile.useDiskCache = false;
    ls2c::runtime::Program program = ls2c::compileProgram(path, options);

    Compiled c = generate(preset);
    for (const ls2c::runtime::Function &f : program.functions) {
      auto func = c.module->lookupSymbol<mlir::func::FuncOp>(f.name);
      ASSERT_TRUE(func) << f.name;
      size_t kernels = 0, gemms = 0, attention = 0;
      func.walk([&](mlir::Operation *op) {
        kernels += mlir::isa<ls2c::ls2::FusionOp, ls2c::ls2::ScatterAddOp>(op);
        gemms += mlir::isa<ls2c::ls2::MatmulOp>(op) &&
                 !op->getParentOfType<ls2c::ls2::FusionOp>();
        attention += mlir::isa<ls2c::ls2::AttentionOp, ls2c::ls2::AttentionGradOp>(op);
      });
      size_t launches = 0, gemmSteps = 0, attentionSteps = 0;
      for (const ls2c::runtime::Step &s : f.steps) {
        launches += s.kind == ls2c::runtime::Step::Kind::Launch;
        gemmSteps += s.kind == ls2c::runtime::Step::Kind::Gemm;
        attentionSteps += s.kind == ls2c::runtime::Step::Kind::Attention;
      }
      EXPECT_EQ(launches, kernels) << preset << " @" << f.name;
      EXPECT_EQ(gemmSteps, gemms) << preset << " @" << f.name;
      EXPECT_EQ(attentionSteps, attention) << preset << " @" << f.name;
    }
    for (const ls2c::runtime::Kernel &k : program.kernels)
      EXPECT_EQ(k.cubins.at("sm_90").compare(0, 4, "\x7f" "ELF"), 0) << k.name;

    std::string bytes;
    try {
      bytes = ls2c::runtime::serializeBundle(program);
      ls2c::runtime::Program loaded = ls2c::runtime::parseBundle(bytes, preset);
      EXPECT_TRUE(loaded == program) << preset;
    } catch (const ls2c::runtime::BundleError &e) {
      FAIL() << preset << ": " << e.what();
    }
  }
}

} // namespace
