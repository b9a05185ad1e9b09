//===- CodegenCompileTest.cpp - every generated kernel compiles -----------===//
//
// Every kernel of every preset (tiny and full size) compiles through NVRTC
// to an sm_90 cubin, and the tiny presets' also for sm_80; the tiny presets
// go through the whole path to bundles and back. No GPU needed.
//
//===----------------------------------------------------------------------===//

#include "ls2c/Codegen/KernelGenerator.h"
#include "ls2c/Codegen/ModuleKernels.h"
#include "ls2c/Codegen/ProgramBuilder.h"
#include "ls2c/Frontend/Frontend.h"
#include "ls2c/JIT.h"
#include "ls2c/Runtime/Bundle.h"
#include "ls2c/JIT/KernelCompiler.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Transforms/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"
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

/// The kernel launches an op of a planned module becomes: two for a row
/// reduction with column sums (their partials added by a second kernel);
/// for an embedding gradient as many as its generator gives (two, a sort
/// and the sums, for large tables), the first named "_sort" when two.
size_t launchesOf(mlir::Operation *op) {
  if (auto scatter = mlir::dyn_cast<ls2c::ls2::ScatterAddOp>(op)) {
    auto f = op->getParentOfType<mlir::func::FuncOp>();
    auto dims = ls2c::SymbolicDims::compute(f);
    auto bounds = ls2c::ShapeBounds::compute(f);
    EXPECT_TRUE(mlir::succeeded(dims) && mlir::succeeded(bounds));
    auto kernels = ls2c::codegen::generateScatterAddKernels(scatter, *dims, *bounds, "k");
    EXPECT_TRUE(mlir::succeeded(kernels));
    if (mlir::failed(kernels) || kernels->empty() || kernels->size() > 2)
      return 0;
    if (kernels->size() == 2) {
      EXPECT_EQ((*kernels)[0].kernel.name, "k_sort");
    }
    return kernels->size();
  }
  if (auto fusion = mlir::dyn_cast<ls2c::ls2::FusionOp>(op);
      fusion && fusion.getKind() == ls2c::ls2::FusionKind::RowReduction)
    return 1 + fusion.getBody()
                   .walk([](ls2c::ls2::ReduceSumOp sum) {
                     return sum.reducesLeadingDims() ? mlir::WalkResult::interrupt()
                                                     : mlir::WalkResult::advance();
                   })
                   .wasInterrupted();
  if (mlir::isa<ls2c::ls2::FusionOp, ls2c::ls2::NonzeroOp, ls2c::ls2::AttentionOp>(op))
    return 1;
  if (mlir::isa<ls2c::ls2::AttentionGradOp>(op))
    return 2;
  return 0;
}

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
  // Every fusion group, embedding gradient and attention has its kernel
  // uses: one each, two for an attention gradient (dq, then dk and dv) and
  // a large table's embedding gradient (its ids sorted, then the sums).
  size_t expectedUses = 0;
  c.module->walk([&](mlir::Operation *op) { expectedUses += launchesOf(op); });
  EXPECT_EQ(expectedUses, c.kernels.uses.size()) << preset;
  for (const ls2c::codegen::ModuleKernels::Use &use : c.kernels.uses)
    EXPECT_EQ(use.bindings.size(), c.kernels.kernels[use.kernel].params.size())
        << c.kernels.kernels[use.kernel].name;

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
  std::printf("%s: %zu kernels (%zu uses) compiled for %s in %.2f s\n",
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
                         ::testing::Values("tiny-bert", "tiny-bert-max-predictions",
                                           "tiny-gpt", "tiny-transformer",
                                           "tiny-vit", "bert-base", "bert-large",
                                           "gpt2-small", "gpt2-medium",
                                           "transformer-base", "transformer-big",
                                           "vit-b16", "llama-tiny", "llama-125m"));

TEST(TinyPresets, CompileForSm80) {
  for (const char *preset : {"tiny-bert", "tiny-bert-max-predictions", "tiny-gpt",
                             "tiny-transformer", "tiny-vit", "llama-tiny"})
    compileAll(preset, "sm_80");
}

} // namespace

namespace {

// The whole path: description -> program with cubins -> bundle bytes ->
// loader. Every fusion group, embedding gradient and attention of the three
// training functions is one launch step (an attention gradient two), every
// matmul a GEMM step, and no attention step remains (attention runs as
// generated kernels); the loader reads back the same program and its
// validator accepts it.
TEST(ProgramBundle, TinyPresetsRoundTrip) {
  for (const char *preset : {"tiny-bert", "tiny-bert-max-predictions", "tiny-gpt",
                             "tiny-transformer", "tiny-vit"}) {
    std::string path = LS2C_SOURCE_DIR "/examples/" + std::string(preset) + ".json";
    ls2c::ProgramOptions options;
    options.archs = {"sm_90"};
    options.compile.useDiskCache = false;
    ls2c::runtime::Program program = ls2c::compileProgram(path, options);

    Compiled c = generate(preset);
    size_t attentionOps = 0;
    for (const ls2c::runtime::Function &f : program.functions) {
      auto func = c.module->lookupSymbol<mlir::func::FuncOp>(f.name);
      ASSERT_TRUE(func) << f.name;
      size_t kernels = 0, gemms = 0, attention = 0;
      func.walk([&](mlir::Operation *op) {
        kernels += launchesOf(op);
        gemms += mlir::isa<ls2c::ls2::MatmulOp>(op) &&
                 !op->getParentOfType<ls2c::ls2::FusionOp>();
        attention += mlir::isa<ls2c::ls2::AttentionOp, ls2c::ls2::AttentionGradOp>(op);
      });
      attentionOps += attention;
      size_t launches = 0, gemmSteps = 0, attentionSteps = 0;
      for (const ls2c::runtime::Step &s : f.steps) {
        launches += s.kind == ls2c::runtime::Step::Kind::Launch;
        gemmSteps += s.kind == ls2c::runtime::Step::Kind::Gemm;
        attentionSteps += s.kind == ls2c::runtime::Step::Kind::Attention;
      }
      EXPECT_EQ(launches, kernels) << preset << " @" << f.name;
      EXPECT_EQ(gemmSteps, gemms) << preset << " @" << f.name;
      EXPECT_EQ(attentionSteps, 0u) << preset << " @" << f.name;
    }
    // Every tiny preset has attention, so its launches are counted above.
    EXPECT_GT(attentionOps, 0u) << preset;
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

// Attention reads q, k and v as strided views of tiny-gpt's fused [T, 3 x
// 64] projection and its gradient writes dq, dk and dv into the in-place
// concat of their gradients (the same width): each such launch argument is
// the row stride 192, while out, dout (and the forward's out) are rows of
// 64. The cross entropy reads the logits and writes their gradient with
// padded rows (PaddedRows.h): 65 f32 a row padded to 68. Launch steps pair
// with the kernel uses of their function in order.
TEST(AttentionLaunches, TinyGptBindsRowStrides) {
  Compiled c = generate("tiny-gpt");
  ls2c::ModelDescription desc =
      ls2c::loadModelDescription(LS2C_SOURCE_DIR "/examples/tiny-gpt.json");
  mlir::FailureOr<ls2c::runtime::Program> program =
      ls2c::codegen::buildProgram(*c.module, desc, "");
  ASSERT_TRUE(mlir::succeeded(program));
  size_t strides = 0, padded = 0;
  for (const ls2c::runtime::Function &f : program->functions) {
    std::vector<const ls2c::codegen::ModuleKernels::Use *> uses;
    for (const ls2c::codegen::ModuleKernels::Use &u : c.kernels.uses)
      if (u.function == f.name)
        uses.push_back(&u);
    size_t next = 0;
    for (const ls2c::runtime::Step &step : f.steps) {
      if (step.kind != ls2c::runtime::Step::Kind::Launch)
        continue;
      ASSERT_LT(next, uses.size()) << f.name;
      const ls2c::codegen::ModuleKernels::Use &use = *uses[next++];
      bool grad = mlir::isa<ls2c::ls2::AttentionGradOp>(use.op);
      for (auto [i, b] : llvm::enumerate(use.bindings)) {
        if (b.kind != ls2c::codegen::ParamBinding::Kind::RowStride)
          continue;
        ASSERT_TRUE(step.args[i].value.isStatic());
        if (mlir::isa<ls2c::ls2::FusionOp>(use.op)) {
          EXPECT_EQ(step.args[i].value.size, 68) << f.name << " binding " << i;
          ++padded;
          continue;
        }
        // q, k, v (operands 1-3 of the gradient, after dout) and the
        // gradient's results; not out or dout.
        bool fused = b.ofResult ? grad : (grad ? b.index >= 1 && b.index <= 3 : b.index <= 2);
        EXPECT_EQ(step.args[i].value.size, fused ? 192 : 64)
            << f.name << " " << use.op->getName().getStringRef().str() << " binding " << i;
        ++strides;
      }
    }
    EXPECT_EQ(next, uses.size()) << f.name;
  }
  EXPECT_GT(strides, 0u);
  // accumulate_gradients' logits and their gradient, forward's logits.
  EXPECT_EQ(padded, 3u);
}

} // namespace

namespace {

// A column reduction that also yields a boolean [64, 512] mask: the 1-byte
// yield must not make VEC 16 (a tile of 32 x 16 = 512 columns, which the
// kernel's 256 threads sum one column each: columns 256-511 of every tile
// were never stored). Every tile's columns have a summing thread.
TEST(ColumnReduction, VectorTileFitsTheBlock) {
  const char *source = R"mlir(
func.func @col(%x: tensor<64x512xf32>, %y: tensor<64x512xf32>) -> (tensor<512xf32>, tensor<64x512xi1>) {
  %b:2 = ls2.fusion "col_0" column_reduction(%x, %y) : (tensor<64x512xf32>, tensor<64x512xf32>) -> (tensor<512xf32>, tensor<64x512xi1>) {
  ^bb0(%a: tensor<64x512xf32>, %c: tensor<64x512xf32>):
    %m = ls2.compare gt, %a, %c : tensor<64x512xf32>
    %s = ls2.reduce_sum %a [0] : tensor<64x512xf32> -> tensor<512xf32>
    ls2.yield %s, %m : tensor<512xf32>, tensor<64x512xi1>
  }
  return %b#0, %b#1 : tensor<512xf32>, tensor<64x512xi1>
}
)mlir";
  mlir::DialectRegistry registry;
  registry.insert<ls2c::ls2::LS2Dialect, mlir::func::FuncDialect>();
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  ASSERT_TRUE(module);
  mlir::PassManager pm(&context);
  pm.addNestedPass<mlir::func::FuncOp>(ls2c::createPlanBuffers());
  ASSERT_TRUE(mlir::succeeded(pm.run(*module)));
  mlir::FailureOr<ls2c::codegen::ModuleKernels> kernels =
      ls2c::codegen::generateModuleKernels(*module);
  ASSERT_TRUE(mlir::succeeded(kernels));
  ASSERT_EQ(kernels->kernels.size(), 1u);
  const ls2c::runtime::Kernel &k = kernels->kernels[0];
  // __shared__ float ls2_col[1][ROWS][W]: W columns a tile, each summed by
  // one of the block's threads.
  size_t at = k.source.find("ls2_col[1][");
  ASSERT_NE(at, std::string::npos) << k.source;
  at = k.source.find("][", at + 11);
  ASSERT_NE(at, std::string::npos);
  unsigned width = std::stoul(k.source.substr(at + 2));
  EXPECT_LE(width, k.launch.blockThreads) << k.source;
}

} // namespace
