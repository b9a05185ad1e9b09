//===- FlashAttentionCompileTest.cpp - both instruction paths compile -----===//
//
// The tensor-core attention kernels carry two paths in one source
// (FlashAttentionKernel.cpp): mma.sync for sm_80 on, wgmma for Hopper, which
// sm_90 is compiled as (sm_90a), at head dims that are multiples of 64. For
// every attention test model (head dims 16 to 128 and 256; fp16
// and bf16; causal, cross, GQA/MQA, dropout) each kernel compiles through
// NVRTC to an sm_90 and an sm_80 cubin, and the PTX NVRTC makes for each
// target holds the instructions of its path. The kernels' numbers are
// checked on the GPU (scripts/gpu-kernel-cases.sh, bench/RESULTS.md).
//
//===----------------------------------------------------------------------===//

#include "ls2c/Codegen/ModuleKernels.h"
#include "ls2c/Frontend/Frontend.h"
#include "ls2c/JIT/KernelCompiler.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Transforms/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <nvrtc.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

/// The attention kernels (forward, dq, dk/dv) of a test model's train step.
std::vector<ls2c::jit::KernelSource> attentionKernels(const std::string &model) {
  mlir::MLIRContext context;
  ls2c::ModelDescription desc =
      ls2c::loadModelDescription(LS2C_SOURCE_DIR "/test/gpu/Inputs/" + model + ".json");
  mlir::OwningOpRef<mlir::ModuleOp> module = ls2c::buildForwardModule(context, desc);
  EXPECT_TRUE(module) << model;
  if (!module)
    return {};
  mlir::PassManager pm(&context);
  ls2c::addCompilePipeline(pm, ls2c::CompileStage::Planned, false);
  EXPECT_TRUE(mlir::succeeded(pm.run(*module))) << model;
  mlir::FailureOr<ls2c::codegen::ModuleKernels> kernels =
      ls2c::codegen::generateModuleKernels(*module);
  EXPECT_TRUE(mlir::succeeded(kernels)) << model;
  std::vector<ls2c::jit::KernelSource> out;
  if (mlir::succeeded(kernels))
    for (const ls2c::runtime::Kernel &k : kernels->kernels)
      if (k.name.find("attention") != std::string::npos)
        out.push_back({k.name, k.source});
  return out;
}

/// NVRTC's PTX of `source` for a virtual architecture, with the options of
/// the real one it stands for.
std::string ptxOf(const ls2c::jit::KernelSource &kernel, const std::string &arch,
                  const std::string &virtualArch) {
  std::vector<std::string> options = ls2c::jit::nvrtcOptionsFor(arch, {});
  for (std::string &o : options)
    if (o.rfind("--gpu-architecture=", 0) == 0)
      o = "--gpu-architecture=" + virtualArch;
  std::vector<const char *> argv;
  for (const std::string &o : options)
    argv.push_back(o.c_str());
  nvrtcProgram program;
  EXPECT_EQ(nvrtcCreateProgram(&program, kernel.source.c_str(), kernel.name.c_str(), 0, nullptr,
                               nullptr),
            NVRTC_SUCCESS);
  nvrtcResult result = nvrtcCompileProgram(program, static_cast<int>(argv.size()), argv.data());
  std::string ptx;
  if (result == NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetPTXSize(program, &size);
    ptx.resize(size);
    nvrtcGetPTX(program, ptx.data());
  } else {
    size_t size = 0;
    nvrtcGetProgramLogSize(program, &size);
    std::string log(size, '\0');
    nvrtcGetProgramLog(program, log.data());
    ADD_FAILURE() << kernel.name << " for " << virtualArch << ": " << log;
  }
  nvrtcDestroyProgram(&program);
  return ptx;
}

class AttentionModel : public ::testing::TestWithParam<const char *> {};

TEST_P(AttentionModel, CompilesForSm90AndSm80) {
  std::vector<ls2c::jit::KernelSource> sources = attentionKernels(GetParam());
  // Forward, dq, dk/dv (cross-attention models also have the encoder's).
  ASSERT_GE(sources.size(), 3u) << GetParam();
  for (const char *arch : {"sm_90", "sm_80"}) {
    ls2c::jit::CompileOptions options;
    options.arch = arch;
    options.useDiskCache = false;
    std::vector<ls2c::jit::CompiledKernel> compiled;
    try {
      compiled = ls2c::jit::compileKernels(sources, options);
    } catch (const ls2c::jit::CompileError &e) {
      FAIL() << GetParam() << " for " << arch << ": " << e.what();
    }
    ASSERT_EQ(compiled.size(), sources.size());
    for (size_t i = 0; i < compiled.size(); ++i)
      EXPECT_EQ(compiled[i].cubin.compare(0, 4, "\x7f" "ELF"), 0) << sources[i].name;
  }
}

INSTANTIATE_TEST_SUITE_P(TestInputs, AttentionModel,
                         ::testing::Values("attention-d16-fp16-mqa", "attention-d32-fp16-cross",
                                           "attention-d64-fp16-encoder",
                                           "attention-d64-fp16-cross", "attention-d64-bf16-gqa",
                                           "attention-d80-bf16",
                                           "attention-d96-bf16-encoder",
                                           "attention-d128-bf16-gqa",
                                           "attention-d256-bf16-encoder",
                                           "attention-d256-fp16-causal-dropout"));

// The JIT's sm_90 is sm_90a (whose features include wgmma); other targets
// are as named.
TEST(AttentionPaths, Sm90CompilesAsSm90a) {
  EXPECT_EQ(ls2c::jit::nvrtcOptionsFor("sm_90", {}).front(), "--gpu-architecture=sm_90a");
  EXPECT_EQ(ls2c::jit::nvrtcOptionsFor("sm_80", {}).front(), "--gpu-architecture=sm_80");
  EXPECT_EQ(ls2c::jit::nvrtcOptionsFor("sm_90a", {}).front(), "--gpu-architecture=sm_90a");
}

// Head dims 128 (the 8-warp dk/dv) and 256 (dk and dv in column halves):
// sm_90 compiles as sm_90a and takes wgmma on swizzled tiles, with its
// shared-memory fence; head dim 80 (no swizzled layout) keeps mma.sync
// there; sm_80 takes mma.sync and no wgmma.
TEST(AttentionPaths, WgmmaOnHopperMmaSyncElsewhere) {
  for (const char *model : {"attention-d128-bf16-gqa", "attention-d80-bf16",
                            "attention-d256-fp16-causal-dropout"}) {
    const bool wgmma = std::string(model) != "attention-d80-bf16";
    for (const ls2c::jit::KernelSource &k : attentionKernels(model)) {
      std::string hopper = ptxOf(k, "sm_90", "compute_90a");
      EXPECT_EQ(hopper.find("wgmma.mma_async.sync.aligned.m64n") != std::string::npos, wgmma)
          << k.name;
      EXPECT_EQ(hopper.find("fence.proxy.async.shared::cta") != std::string::npos, wgmma)
          << k.name;
      EXPECT_EQ(hopper.find("mma.sync.aligned.m16n8k16") != std::string::npos, !wgmma)
          << k.name;
      std::string ampere = ptxOf(k, "sm_80", "compute_80");
      EXPECT_NE(ampere.find("mma.sync.aligned.m16n8k16"), std::string::npos) << k.name;
      EXPECT_EQ(ampere.find("wgmma"), std::string::npos) << k.name;
    }
  }
}

} // namespace
