//===- AttentionStepsTest.cpp - the programs' cuDNN attention steps -------===//
//
// ProgramBuilder gives every self-attention op cuDNN may run an Attention step
// (Program.h) followed by its generated kernels as the fallback: the tiny
// presets compiled in bf16 and fp16 (in process, no NVRTC). The step names
// the buffers its fallback launches read and write, the description's
// sequence bound, and the op's attributes; fp32 programs and head dims
// cuDNN cannot take keep the kernels alone. The programs validate (the
// bundle rules for fallbacks, ProgramValidate.h).
//
//===----------------------------------------------------------------------===//
#include "ls2c/Codegen/ProgramBuilder.h"
#include "ls2c/Frontend/Frontend.h"
#include "ls2c/Frontend/SequenceParallelModule.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Parallel/SequenceParallelFunctions.h"
#include "ls2c/Runtime/AttentionChoice.h"
#include "ls2c/Runtime/ProgramValidate.h"
#include "ls2c/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace {

using namespace ls2c::runtime;

struct Built {
  Program program;
  size_t attentionOps = 0, attentionGradOps = 0; ///< in the program's functions
  size_t crossOps = 0; ///< of those, cross attention (queries and keys packed apart)
};

/// The train step's program of `preset` (with `sequenceParallel`, that of
/// its sequence-parallel pieces, SequenceParallelModule.h).
Built build(const std::string &preset, ls2c::DType dtype, int64_t heads = 0,
            bool sequenceParallel = false) {
  mlir::MLIRContext context;
  ls2c::ModelDescription desc =
      ls2c::loadModelDescription(LS2C_SOURCE_DIR "/examples/" + preset + ".json");
  desc.dtype = dtype;
  if (heads)
    desc.heads = heads;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      sequenceParallel ? ls2c::buildSequenceParallelModule(context, desc)
                       : ls2c::buildForwardModule(context, desc);
  Built b;
  EXPECT_TRUE(module) << preset;
  if (!module)
    return b;
  mlir::PassManager pm(&context);
  ls2c::addCompilePipeline(pm, ls2c::moduleStage(*module), ls2c::CompileStage::Planned);
  EXPECT_TRUE(mlir::succeeded(pm.run(*module))) << preset;
  const std::vector<std::string> &functions = sequenceParallel
                                                  ? ls2c::parallel::sequenceParallelFunctions()
                                                  : ls2c::codegen::trainingFunctions();
  for (const std::string &name : functions)
    if (auto f = module->lookupSymbol<mlir::func::FuncOp>(name))
      f.walk([&](mlir::Operation *op) {
        b.attentionOps += mlir::isa<ls2c::ls2::AttentionOp>(op);
        b.attentionGradOps += mlir::isa<ls2c::ls2::AttentionGradOp>(op);
        if (auto a = mlir::dyn_cast<ls2c::ls2::AttentionOp>(op))
          b.crossOps += a.getCuSeqlensQ() != a.getCuSeqlensK();
        if (auto g = mlir::dyn_cast<ls2c::ls2::AttentionGradOp>(op))
          b.crossOps += g.getCuSeqlensQ() != g.getCuSeqlensK();
      });
  mlir::FailureOr<Program> program = ls2c::codegen::buildProgram(*module, desc, "", functions);
  EXPECT_TRUE(mlir::succeeded(program)) << preset;
  if (mlir::succeeded(program))
    b.program = std::move(*program);
  return b;
}

/// Does a pointer argument of launch step `s` name exactly `ref`?
bool launchUses(const Step &s, const BufferRef &ref) {
  return std::any_of(s.args.begin(), s.args.end(), [&](const KernelArg &a) {
    return a.kind == ParamKind::Pointer && a.buffer == ref;
  });
}

class HalfPresets : public ::testing::TestWithParam<const char *> {};

TEST_P(HalfPresets, EveryAttentionHasACudnnStepBeforeItsKernels) {
  const std::string preset = GetParam();
  for (ls2c::DType dtype : {ls2c::DType::BF16, ls2c::DType::F16}) {
    Built b = build(preset, dtype);
    ASSERT_GT(b.attentionOps, 0u) << preset;
    EXPECT_NO_THROW(validateProgram(b.program, preset));
    ls2c::ModelDescription desc =
        ls2c::loadModelDescription(LS2C_SOURCE_DIR "/examples/" + preset + ".json");
    size_t forward = 0, backward = 0;
    for (const Function &f : b.program.functions)
      for (size_t i = 0; i < f.steps.size(); ++i) {
        if (f.steps[i].kind != Step::Kind::Attention)
          continue;
        const Attention &a = f.steps[i].attention;
        std::string where = preset + " @" + f.name + " step " + std::to_string(i);
        (a.backward ? backward : forward) += 1;
        EXPECT_EQ(a.dtype, dtype == ls2c::DType::BF16 ? DType::BF16 : DType::F16) << where;
        EXPECT_EQ(a.heads, static_cast<uint32_t>(desc.heads)) << where;
        EXPECT_EQ(a.headDim, static_cast<uint32_t>(desc.hidden / desc.heads)) << where;
        EXPECT_EQ(a.maxSeqLen, desc.max_seq_len) << where;
        EXPECT_NEAR(a.scale, 1.0 / std::sqrt(double(a.headDim)), 1e-6) << where;
        // Self attention only here (one cu_seqlens serves queries and
        // keys): an encoder-decoder's cross attention stays on the kernels
        // (ProgramBuilder.cpp).
        EXPECT_TRUE(a.cuSeqlensQ == a.cuSeqlensK) << where;
        // cuDNN's alignment: 8-element rows, 16-byte bases.
        for (int64_t stride : {a.strideQ, a.strideK, a.strideV, a.strideO})
          EXPECT_EQ(stride % 8, 0) << where;
        EXPECT_EQ(a.q.byteOffset % 16, 0u) << where;
        // The fallback: the op's launches, which read and write the same
        // buffers (forward: one kernel; backward: dq, then dk and dv).
        ASSERT_EQ(a.fallbackSteps, a.backward ? 2u : 1u) << where;
        ASSERT_LT(i + a.fallbackSteps, f.steps.size()) << where;
        const Step &first = f.steps[i + 1];
        ASSERT_EQ(first.kind, Step::Kind::Launch) << where;
        EXPECT_TRUE(launchUses(first, a.q)) << where;
        EXPECT_TRUE(launchUses(first, a.lse)) << where;
        EXPECT_TRUE(launchUses(first, a.cuSeqlensQ)) << where;
        if (a.backward) {
          EXPECT_TRUE(launchUses(first, a.dq)) << where;
          EXPECT_TRUE(launchUses(f.steps[i + 2], a.dk)) << where;
          EXPECT_TRUE(launchUses(f.steps[i + 2], a.dv)) << where;
        } else {
          EXPECT_TRUE(launchUses(first, a.out)) << where;
        }
      }
    // Head dim 16 (hidden 64 over 4 heads): every self-attention op is
    // cuDNN's to run, no cross-attention op (tiny-transformer has both).
    EXPECT_EQ(forward + backward + b.crossOps, b.attentionOps + b.attentionGradOps) << preset;
    EXPECT_EQ(b.crossOps > 0, preset == "tiny-transformer") << preset;
  }
}

INSTANTIATE_TEST_SUITE_P(Tiny, HalfPresets,
                         ::testing::Values("tiny-bert", "tiny-gpt", "tiny-transformer",
                                           "tiny-vit"));

// Sequence parallelism's blocks pack queries and keys apart (their own
// cu_seqlens), and keep cuDNN steps: only an encoder-decoder's cross
// attention is refused them (ProgramBuilder.cpp).
TEST(AttentionSteps, SequenceParallelBlocksKeepCudnn) {
  Built b = build("tiny-gpt", ls2c::DType::BF16, 0, true);
  ASSERT_GT(b.crossOps, 0u);
  std::map<std::string, size_t> steps;
  for (const Function &f : b.program.functions)
    for (const Step &s : f.steps)
      if (s.kind == Step::Kind::Attention) {
        ++steps[f.name];
        EXPECT_FALSE(s.attention.causal && !(s.attention.cuSeqlensQ == s.attention.cuSeqlensK))
            << f.name;
      }
  for (const char *name : {"attention_block", "attention_block_grad", "attention_block_diagonal",
                           "attention_block_grad_diagonal"})
    EXPECT_EQ(steps[name], 1u) << name;
}

size_t attentionSteps(const Program &p) {
  size_t n = 0;
  for (const Function &f : p.functions)
    for (const Step &s : f.steps)
      n += s.kind == Step::Kind::Attention;
  return n;
}

// cuDNN has no fp32 fused attention, and takes head dims that are
// multiples of 8: those programs keep the generated kernels alone.
TEST(AttentionSteps, NoneWhereCudnnCannotRunThem) {
  for (const char *preset : {"tiny-bert", "tiny-gpt"}) {
    Built f32 = build(preset, ls2c::DType::F32);
    EXPECT_GT(f32.attentionOps, 0u);
    EXPECT_EQ(attentionSteps(f32.program), 0u) << preset;
    Built odd = build(preset, ls2c::DType::BF16, 16); // head dim 64 / 16 = 4
    EXPECT_GT(odd.attentionOps, 0u);
    EXPECT_EQ(attentionSteps(odd.program), 0u) << preset;
  }
}

// The Executor pairs each dropout forward with its backward by their shared
// lse buffer (Executor.cpp, `partners`) so that Auto decides both on one
// backend (cuDNN's dropout masks are not the kernels'). A backward with no
// partner, or with two, would let them run on different backends: every
// dropout backward has exactly one forward with its lse, the same dropout
// site (seed, offset, stream, rate), and a shape key of its own.
TEST(AttentionSteps, DropoutBackwardsHaveOneForwardPartnerByLse) {
  for (const char *preset : {"tiny-bert", "tiny-gpt", "tiny-transformer", "tiny-vit"}) {
    Built b = build(preset, ls2c::DType::BF16);
    size_t paired = 0;
    for (const Function &f : b.program.functions)
      for (size_t j = 0; j < f.steps.size(); ++j) {
        if (f.steps[j].kind != Step::Kind::Attention || !f.steps[j].attention.backward ||
            f.steps[j].attention.dropoutRate <= 0)
          continue;
        const Attention &bwd = f.steps[j].attention;
        std::string where = std::string(preset) + " @" + f.name + " step " + std::to_string(j);
        std::vector<size_t> forwards;
        for (size_t i = 0; i < j; ++i)
          if (f.steps[i].kind == Step::Kind::Attention && !f.steps[i].attention.backward &&
              f.steps[i].attention.lse == bwd.lse)
            forwards.push_back(i);
        ASSERT_EQ(forwards.size(), 1u) << where;
        const Attention &fwd = f.steps[forwards[0]].attention;
        EXPECT_EQ(fwd.stream, bwd.stream) << where;
        EXPECT_TRUE(fwd.seed == bwd.seed) << where;
        EXPECT_TRUE(fwd.offset == bwd.offset) << where;
        EXPECT_EQ(fwd.dropoutRate, bwd.dropoutRate) << where;
        EXPECT_NE(attentionShapeKey(fwd), attentionShapeKey(bwd)) << where;
        ++paired;
      }
    EXPECT_GT(paired, 0u) << preset;
  }
}

} // namespace
