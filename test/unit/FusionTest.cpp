//===- FusionTest.cpp - the fused, planned program computes the same bits -===//
//
// For each tiny preset with its dropout: the train step after ls2-decompose
// and CSE, and the same after ls2-fuse and ls2-plan-buffers run on its arena
// (every intermediate stored at its planned offset in an arena filled with
// NaN first), on the reference interpreter in f32 with the same weights,
// batch and dropout seed. Every result of @forward_backward (loss and
// gradients) and @optimizer_step must be bit-identical: fusion regroups ops,
// it never changes what they compute, dropout masks regenerated inside
// several kernels are the same masks, and no buffer is overwritten while
// live. GEMM epilogues are defined to compute what the groups they replace
// compute in f32 (ls2.matmul's description): tiny-gpt's tanh-GELU MLP and a
// dropout-free tiny-transformer's ReLU MLP run as cuBLASLt-style activation
// epilogues (and their gradients) with the same bits.
//
//===----------------------------------------------------------------------===//
#include "FloatFormats.h"
#include "ModelInputs.h"
#include "ReferenceTestUtil.h"

#include "ls2c/Analysis/ProgramStats.h"
#include "ls2c/Frontend/Frontend.h"
#include "ls2c/Model/ParameterLayout.h"
#include "ls2c/Training/Workspace.h"
#include "ls2c/Transforms/Passes.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <cctype>
#include <cstring>
#include <functional>
#include <optional>
#include <map>

namespace {

using namespace ls2c::reference;
using namespace ls2c::reference::testing;

bool sameBits(const HostTensor &a, const HostTensor &b) {
  if (a.type != b.type || a.shape != b.shape || a.ints != b.ints ||
      a.floats.size() != b.floats.size())
    return false;
  return a.floats.empty() ||
         std::memcmp(a.floats.data(), b.floats.data(),
                     a.floats.size() * sizeof(double)) == 0;
}

/// Runs `plain` in f32 and `fused` on its planned arena on the same
/// arguments: every result must have the same bits ("`label` i" names one).
void expectSameBitsOnArena(mlir::func::FuncOp plain, mlir::func::FuncOp fused,
                           const std::vector<HostTensor> &args, const std::string &label) {
  Interpreter f32(Precision::F32);
  Interpreter onArena(Precision::F32);
  onArena.setUseArena(true);
  std::vector<HostTensor> expected = f32.run(plain, args);
  std::vector<HostTensor> got = onArena.run(fused, args);
  ASSERT_EQ(expected.size(), got.size()) << label;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(sameBits(expected[i], got[i])) << label << " " << i;
}

int countFusions(mlir::func::FuncOp f) {
  int n = 0;
  f.walk([&](ls2c::ls2::FusionOp) { ++n; });
  return n;
}

/// A preset's train step up to ls2-decompose and CSE (the unfused program),
/// and @forward's arguments (weights, batch, dropout) plus loss_grad = 1.
struct Plain {
  mlir::MLIRContext context;
  ls2c::ModelDescription desc;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<HostTensor> args;
};

std::unique_ptr<Plain>
buildPlain(const std::string &preset,
           const std::function<void(ls2c::ModelDescription &)> &edit = {}) {
  auto p = std::make_unique<Plain>();
  p->desc = ls2c::loadModelDescription(LS2C_SOURCE_DIR "/examples/" + preset +
                                       ".json");
  if (edit)
    edit(p->desc);
  ls2c::loadFrontendDialects(p->context);
  p->module = ls2c::buildForwardModule(p->context, p->desc);
  if (!p->module)
    return nullptr;
  std::mt19937 rng = testRng();
  p->args = modelArguments(
      p->desc, p->module->lookupSymbol<mlir::func::FuncOp>("forward"), rng);
  // fp16/bf16 models take their weights in that type.
  auto forward = p->module->lookupSymbol<mlir::func::FuncOp>("forward");
  for (unsigned i = 0; i < forward.getNumArguments() && i < p->args.size(); ++i) {
    auto type = mlir::dyn_cast<mlir::RankedTensorType>(forward.getArgument(i).getType());
    HostTensor &a = p->args[i];
    if (!type || a.type != ElementType::F32 || type.getElementType().isF32())
      continue;
    a.type = type.getElementType().isBF16() ? ElementType::BF16 : ElementType::F16;
    for (double &x : a.floats)
      x = roundTo(a.type, x);
  }
  p->args.push_back(HostTensor::scalarFloat(ElementType::F32, 1.0)); // loss_grad
  mlir::PassManager pm(&p->context);
  pm.addPass(ls2c::createAutodiff());
  pm.addPass(ls2c::createTrainStep());
  pm.addPass(ls2c::createDecompose());
  pm.addPass(mlir::createCSEPass());
  if (mlir::failed(pm.run(*p->module)))
    return nullptr;
  return p;
}

/// The matmuls of `f` with activation epilogue `act`.
int countActivations(mlir::func::FuncOp f, ls2c::ls2::GemmActivation act) {
  int n = 0;
  f.walk([&](ls2c::ls2::MatmulOp m) { n += m.getActivation() == act; });
  return n;
}

/// `activation`: the FFN activation that must become GEMM epilogues (its
/// gradient too: the tanh GELU's with `geluGradEpilogue`, the ReLU's without
/// `reluMaskFromOutput`; by default ls2-fuse leaves both generated kernels).
void checkPreset(const std::string &preset,
                 const std::function<void(ls2c::ModelDescription &)> &edit = {},
                 std::optional<ls2c::ls2::GemmActivation> activation = {},
                 bool geluGradEpilogue = false, bool reluMaskFromOutput = true) {
  std::unique_ptr<Plain> base = buildPlain(preset, edit);
  ASSERT_TRUE(base);
  mlir::MLIRContext &context = base->context;
  mlir::OwningOpRef<mlir::ModuleOp> &plain = base->module;
  std::vector<HostTensor> &args = base->args;
  std::mt19937 rng(20261129); // the optimizer state below
  mlir::OwningOpRef<mlir::ModuleOp> fused = plain->clone();
  mlir::PassManager fuse(&context);
  ls2c::FuseOptions fuseOptions;
  fuseOptions.geluGradEpilogue = geluGradEpilogue;
  fuseOptions.reluMaskFromOutput = reluMaskFromOutput;
  fuse.addNestedPass<mlir::func::FuncOp>(ls2c::createFuse(fuseOptions));
  fuse.addNestedPass<mlir::func::FuncOp>(ls2c::createPlanBuffers());
  ASSERT_TRUE(mlir::succeeded(fuse.run(*fused)));
  ASSERT_TRUE(mlir::succeeded(mlir::verify(*fused)));

  auto fb = [](mlir::ModuleOp m) {
    return m.lookupSymbol<mlir::func::FuncOp>("forward_backward");
  };
  EXPECT_GT(countFusions(fb(*fused)), 0);
  auto countGemms = [](mlir::func::FuncOp f) {
    int n = 0;
    f.walk([&](ls2c::ls2::MatmulOp) { ++n; });
    return n;
  };
  // Checkpointing runs layer GEMMs again in the backward; nothing else adds
  // GEMMs (ls2-merge-gemms does not run here).
  if (base->desc.activation_checkpointing)
    EXPECT_GT(countGemms(fb(*fused)), countGemms(fb(*plain))) << preset;
  else
    EXPECT_EQ(countGemms(fb(*fused)), countGemms(fb(*plain))) << preset;
  if (activation) {
    // Every layer's FFN: the activation and its gradient became epilogues
    // (the GELU's gradient only when asked).
    using A = ls2c::ls2::GemmActivation;
    A grad = *activation == A::Relu ? A::ReluGrad : A::GeluTanhGrad;
    int layers = base->desc.encoder_layers + base->desc.decoder_layers;
    bool gradAttaches = *activation == A::Relu ? !reluMaskFromOutput : geluGradEpilogue;
    EXPECT_EQ(countActivations(fb(*fused), *activation), layers) << preset;
    EXPECT_EQ(countActivations(fb(*fused), grad), gradAttaches ? layers : 0) << preset;
  }
  expectSameBitsOnArena(fb(*plain), fb(*fused), args, preset + ": result");

  auto step = [](mlir::ModuleOp m) {
    return m.lookupSymbol<mlir::func::FuncOp>("optimizer_step");
  };
  int64_t n = mlir::cast<mlir::RankedTensorType>(
                  step(*plain).getArgument(0).getType()).getDimSize(0);
  std::vector<HostTensor> state = {
      HostTensor::fromFloats(ElementType::F32, {n}, normal(rng, n, 0.1)),
      HostTensor::fromFloats(ElementType::F32, {n}, normal(rng, n, 0.1)),
      HostTensor::fromFloats(ElementType::F32, {n}, normal(rng, n, 0.01)),
      HostTensor::fromFloats(ElementType::F32, {n}, uniform(rng, n, 0.0, 1e-4)),
      HostTensor::scalarInt(ElementType::I64, 12),
      HostTensor::scalarFloat(ElementType::F32, 1.0),
      HostTensor::scalarInt(ElementType::I64, 0),
      HostTensor::scalarFloat(ElementType::F32, 1.0)};
  for (int i = 0; i < 4; ++i)
    for (double &x : state[i].floats)
      x = static_cast<float>(x);
  expectSameBitsOnArena(step(*plain), step(*fused), state, preset + ": optimizer result");
}

TEST(FusedPlannedProgram, TinyBertComputesTheSameBits) { checkPreset("tiny-bert"); }
TEST(FusedPlannedProgram, TinyGptComputesTheSameBits) {
  checkPreset("tiny-gpt", {}, ls2c::ls2::GemmActivation::GeluTanh);
}
TEST(FusedPlannedProgram, TinyGptWithGeluGradEpilogueComputesTheSameBits) {
  checkPreset("tiny-gpt", {}, ls2c::ls2::GemmActivation::GeluTanh, /*geluGradEpilogue=*/true);
}
// The masked-LM head on the labelled rows (max_predictions): the nonzero
// kernel, the gathers and the gradient's scatter_add into [T, H].
TEST(FusedPlannedProgram, TinyBertMaxPredictionsComputesTheSameBits) {
  checkPreset("tiny-bert-max-predictions");
}
TEST(FusedPlannedProgram, TinyTransformerComputesTheSameBits) { checkPreset("tiny-transformer"); }
// Without activation dropout (which no epilogue applies) the ReLU attaches
// (RELU_BIAS) and its gradient, the mask recomputed from the ReLU's output,
// is a generated kernel; with relu-mask-from-output off the mask is stored
// and both attach: RELU_AUX_BIAS forward, DRELU_BGRAD backward.
TEST(FusedPlannedProgram, TinyTransformerReluEpiloguesComputeTheSameBits) {
  checkPreset(
      "tiny-transformer",
      [](ls2c::ModelDescription &d) { d.activation_dropout = 0.0; },
      ls2c::ls2::GemmActivation::Relu);
}
TEST(FusedPlannedProgram, TinyTransformerReluMaskEpiloguesComputeTheSameBits) {
  checkPreset(
      "tiny-transformer",
      [](ls2c::ModelDescription &d) { d.activation_dropout = 0.0; },
      ls2c::ls2::GemmActivation::Relu, /*geluGradEpilogue=*/false,
      /*reluMaskFromOutput=*/false);
}
TEST(FusedPlannedProgram, TinyVitComputesTheSameBits) { checkPreset("tiny-vit"); }

// Activation checkpointing recomputes each layer's activations in the
// backward from the layer's input, the attention's results and the row
// statistics: the same ops on the same values, so the same bits.
void checkpointing(ls2c::ModelDescription &d) { d.activation_checkpointing = true; }
TEST(FusedPlannedProgram, CheckpointedTinyBertComputesTheSameBits) {
  checkPreset("tiny-bert", checkpointing);
}
TEST(FusedPlannedProgram, CheckpointedTinyBertMaxPredictionsComputesTheSameBits) {
  checkPreset("tiny-bert-max-predictions", checkpointing);
}
TEST(FusedPlannedProgram, CheckpointedTinyGptComputesTheSameBits) {
  checkPreset("tiny-gpt", checkpointing);
}
TEST(FusedPlannedProgram, CheckpointedTinyTransformerComputesTheSameBits) {
  checkPreset("tiny-transformer", checkpointing);
}
TEST(FusedPlannedProgram, CheckpointedTinyVitComputesTheSameBits) {
  checkPreset("tiny-vit", checkpointing);
}
// RMSNorm, the rotary embedding and SwiGLU recomputed: the SwiGLU gradient's
// loop keeps its own copies of exp(-gate) and silu (Fuse.cpp keepCopies).
TEST(FusedPlannedProgram, CheckpointedLlamaTinyComputesTheSameBits) {
  checkPreset("llama-tiny", checkpointing);
}
// recompute_attention: the backward runs each attention forward again (the
// same op on the same q, k, v, seed and stream: dropout draws the same mask).
void checkpointingAll(ls2c::ModelDescription &d) {
  d.activation_checkpointing = true;
  d.recompute_attention = true;
}
TEST(FusedPlannedProgram, CheckpointedTinyBertRecomputingAttentionComputesTheSameBits) {
  checkPreset("tiny-bert", checkpointingAll);
}
TEST(FusedPlannedProgram, CheckpointedTinyTransformerRecomputingAttentionComputesTheSameBits) {
  checkPreset("tiny-transformer", checkpointingAll);
}
TEST(FusedPlannedProgram, CheckpointedLlamaTinyRecomputingAttentionComputesTheSameBits) {
  checkPreset("llama-tiny", checkpointingAll);
}

/// In fp16/bf16 a GEMM epilogue rounds differently from the loop it
/// replaces, so these compare without epilogues: the checkpointed, fused,
/// planned train step computes the unfused program's bits, recomputed
/// GEMMs and all.
void checkLowPrecisionCheckpointed(const std::string &preset, ls2c::DType dtype,
                                   bool recomputeAttention = false) {
  std::unique_ptr<Plain> base = buildPlain(preset, [&](ls2c::ModelDescription &d) {
    d.dtype = dtype;
    d.activation_checkpointing = true;
    d.recompute_attention = recomputeAttention;
  });
  ASSERT_TRUE(base);
  mlir::OwningOpRef<mlir::ModuleOp> fused = base->module->clone();
  mlir::PassManager pm(&base->context);
  ls2c::FuseOptions options;
  options.epilogues = false;
  pm.addNestedPass<mlir::func::FuncOp>(ls2c::createFuse(options));
  pm.addNestedPass<mlir::func::FuncOp>(ls2c::createPlanBuffers());
  ASSERT_TRUE(mlir::succeeded(pm.run(*fused)));
  auto fb = [](mlir::ModuleOp m) {
    return m.lookupSymbol<mlir::func::FuncOp>("forward_backward");
  };
  int plainGemms = 0, fusedGemms = 0;
  fb(*base->module).walk([&](ls2c::ls2::MatmulOp) { ++plainGemms; });
  fb(*fused).walk([&](ls2c::ls2::MatmulOp) { ++fusedGemms; });
  EXPECT_GT(fusedGemms, plainGemms) << preset;
  expectSameBitsOnArena(fb(*base->module), fb(*fused), base->args, preset + ": result");
}
TEST(FusedPlannedProgram, CheckpointedBf16TinyGptComputesTheSameBits) {
  checkLowPrecisionCheckpointed("tiny-gpt", ls2c::DType::BF16);
}
TEST(FusedPlannedProgram, CheckpointedFp16TinyVitComputesTheSameBits) {
  checkLowPrecisionCheckpointed("tiny-vit", ls2c::DType::F16);
}
TEST(FusedPlannedProgram, CheckpointedFp16TinyBertComputesTheSameBits) {
  checkLowPrecisionCheckpointed("tiny-bert", ls2c::DType::F16);
}
TEST(FusedPlannedProgram, CheckpointedBf16TinyBertMaxPredictionsComputesTheSameBits) {
  checkLowPrecisionCheckpointed("tiny-bert-max-predictions", ls2c::DType::BF16);
}
TEST(FusedPlannedProgram, CheckpointedBf16LlamaTinyComputesTheSameBits) {
  checkLowPrecisionCheckpointed("llama-tiny", ls2c::DType::BF16);
}
TEST(FusedPlannedProgram, CheckpointedBf16LlamaTinyRecomputingAttentionComputesTheSameBits) {
  checkLowPrecisionCheckpointed("llama-tiny", ls2c::DType::BF16, /*recomputeAttention=*/true);
}
TEST(FusedPlannedProgram, CheckpointedFp16TinyGptRecomputingAttentionComputesTheSameBits) {
  checkLowPrecisionCheckpointed("tiny-gpt", ls2c::DType::F16, /*recomputeAttention=*/true);
}

// With epilogues, a recomputed GEMM and its forward original get none (an
// epilogue on one of the pair only would give the backward other values
// than the forward's): tiny-gpt's first MLP GEMMs take the bias and tanh
// GELU as epilogues without checkpointing and keep them as generated
// kernels with it.
TEST(ActivationCheckpointing, RecomputedGemmsAndTheirOriginalsGetNoEpilogue) {
  auto geluEpilogues = [](bool checkpoint) {
    std::unique_ptr<Plain> base = buildPlain("tiny-gpt", [&](ls2c::ModelDescription &d) {
      d.dtype = ls2c::DType::BF16;
      d.activation_checkpointing = checkpoint;
    });
    if (!base)
      return -1;
    mlir::PassManager pm(&base->context);
    pm.addNestedPass<mlir::func::FuncOp>(ls2c::createFuse());
    if (mlir::failed(pm.run(*base->module)))
      return -1;
    return countActivations(base->module->lookupSymbol<mlir::func::FuncOp>("forward_backward"),
                            ls2c::ls2::GemmActivation::GeluTanh);
  };
  EXPECT_EQ(geluEpilogues(false), 2); // one a layer
  EXPECT_EQ(geluEpilogues(true), 0);
}

/// GPT-2 small's train step fused and planned, with or without activation
/// checkpointing: its GEMMs, attentions and arena bytes.
struct PlannedCounts {
  int gemms = 0, attentions = 0;
  int64_t arenaBytes = 0;
};
PlannedCounts planGpt2Small(bool checkpoint, bool recomputeAttention = false) {
  std::unique_ptr<Plain> p = buildPlain("gpt2-small", [&](ls2c::ModelDescription &d) {
    d.activation_checkpointing = checkpoint;
    d.recompute_attention = recomputeAttention;
  });
  PlannedCounts c;
  if (!p)
    return c;
  mlir::PassManager pm(&p->context);
  pm.addNestedPass<mlir::func::FuncOp>(ls2c::createFuse());
  pm.addNestedPass<mlir::func::FuncOp>(ls2c::createPlanBuffers());
  if (mlir::failed(pm.run(*p->module)))
    return c;
  auto f = p->module->lookupSymbol<mlir::func::FuncOp>("forward_backward");
  f.walk([&](ls2c::ls2::MatmulOp) { ++c.gemms; });
  f.walk([&](ls2c::ls2::AttentionOp) { ++c.attentions; });
  if (auto bytes = f->getAttrOfType<mlir::IntegerAttr>("ls2.arena_bytes"))
    c.arenaBytes = bytes.getInt();
  return c;
}

// Each of the 12 pre-LN layers runs its QKV, attention-output and first MLP
// GEMMs again in the backward (h = x + attention output feeds ln_2 inside
// the layer, so it is recomputed, not kept), never its attention, and the
// planned arena at max_batch_tokens shrinks (6.42 to 2.48 GiB when this
// test was written).
TEST(ActivationCheckpointing, Gpt2SmallRecomputesThreeGemmsALayerAndNoAttention) {
  PlannedCounts plain = planGpt2Small(false), checkpointed = planGpt2Small(true);
  ASSERT_GT(plain.gemms, 0);
  ASSERT_GT(plain.arenaBytes, 0);
  EXPECT_EQ(checkpointed.gemms, plain.gemms + 3 * 12);
  EXPECT_EQ(checkpointed.attentions, plain.attentions);
  EXPECT_EQ(plain.attentions, 12);
  EXPECT_LT(checkpointed.arenaBytes * 2, plain.arenaBytes);
}

// With recompute_attention each layer also runs its attention again and
// keeps neither of its results (out [T, 768] bf16 and lse [T, 12] f32): at
// 16,384 tokens the peak (in the LM head's backward) falls by 12 of each
// (2.25 -> 1.96 GiB when this test was written).
TEST(ActivationCheckpointing, Gpt2SmallRecomputingAttentionRunsItAgainAndKeepsLess) {
  PlannedCounts checkpointed = planGpt2Small(true), all = planGpt2Small(true, true);
  ASSERT_GT(checkpointed.arenaBytes, 0);
  EXPECT_EQ(all.gemms, checkpointed.gemms);
  EXPECT_EQ(all.attentions, 2 * 12);
  EXPECT_LE(all.arenaBytes,
            checkpointed.arenaBytes - 12 * (int64_t(16384) * 768 * 2 + int64_t(16384) * 12 * 4));
}

} // namespace

namespace {

// The arena check can fail: with every buffer moved to offset 0, live
// buffers overwrite each other and the gradients change.
TEST(FusedPlannedProgram, OverlappingBuffersChangeTheResults) {
  ls2c::ModelDescription desc = ls2c::loadModelDescription(
      LS2C_SOURCE_DIR "/examples/tiny-gpt.json");
  mlir::MLIRContext context;
  ls2c::loadFrontendDialects(context);
  mlir::OwningOpRef<mlir::ModuleOp> m = ls2c::buildForwardModule(context, desc);
  ASSERT_TRUE(m);
  std::mt19937 rng = testRng();
  std::vector<HostTensor> args = modelArguments(
      desc, m->lookupSymbol<mlir::func::FuncOp>("forward"), rng);
  args.push_back(HostTensor::scalarFloat(ElementType::F32, 1.0));
  mlir::PassManager pm(&context);
  pm.addPass(ls2c::createAutodiff());
  pm.addPass(ls2c::createDecompose());
  pm.addPass(mlir::createCSEPass());
  pm.addNestedPass<mlir::func::FuncOp>(ls2c::createFuse());
  pm.addNestedPass<mlir::func::FuncOp>(ls2c::createPlanBuffers());
  ASSERT_TRUE(mlir::succeeded(pm.run(*m)));
  auto fb = m->lookupSymbol<mlir::func::FuncOp>("forward_backward");
  Interpreter onArena(Precision::F32);
  onArena.setUseArena(true);
  std::vector<HostTensor> planned = onArena.run(fb, args);
  int moved = 0;
  fb.walk([&](mlir::Operation *op) {
    auto offsets = op->getAttrOfType<mlir::DenseI64ArrayAttr>("ls2.offsets");
    if (!offsets)
      return;
    llvm::SmallVector<int64_t> zeros(offsets.size(), 0);
    for (auto [z, o] : llvm::zip(zeros, offsets.asArrayRef()))
      if (o < 0)
        z = -1;
    op->setAttr("ls2.offsets", mlir::DenseI64ArrayAttr::get(&context, zeros));
    ++moved;
  });
  ASSERT_GT(moved, 10);
  std::vector<HostTensor> clobbered = onArena.run(fb, args);
  int differing = 0;
  for (size_t i = 0; i < planned.size(); ++i)
    differing += !sameBits(planned[i], clobbered[i]);
  EXPECT_GT(differing, 0);
}

} // namespace

namespace {

int countMatmuls(mlir::func::FuncOp f) {
  int n = 0;
  f.walk([&](ls2c::ls2::MatmulOp) { ++n; });
  return n;
}

// With ls2-merge-gemms the q, k and v GEMMs of a layer are one GEMM forward
// and two backward, whose sums run in another order: the train step's loss
// and gradient workspace agree with the unmerged program to fp32 rounding
// (DESIGN.md: relative L2 <= 1e-5).
void checkMerged(const std::string &preset, bool expectMerge) {
  std::unique_ptr<Plain> base = buildPlain(preset);
  ASSERT_TRUE(base);
  mlir::MLIRContext &context = base->context;
  mlir::OwningOpRef<mlir::ModuleOp> &plain = base->module;
  std::vector<HostTensor> &args = base->args;
  const ls2c::ModelDescription &desc = base->desc;
  mlir::OwningOpRef<mlir::ModuleOp> merged = plain->clone();
  mlir::PassManager rest(&context);
  rest.addNestedPass<mlir::func::FuncOp>(ls2c::createMergeGemms());
  rest.addNestedPass<mlir::func::FuncOp>(ls2c::createFuse());
  rest.addNestedPass<mlir::func::FuncOp>(ls2c::createPlanBuffers());
  ASSERT_TRUE(mlir::succeeded(rest.run(*merged)));
  ASSERT_TRUE(mlir::succeeded(mlir::verify(*merged)));
  // @accumulate_gradients: parameters are views of the flat workspace,
  // where q, k and v weights sit side by side.
  auto acc = [](mlir::ModuleOp m) {
    return m.lookupSymbol<mlir::func::FuncOp>("accumulate_gradients");
  };
  if (expectMerge) {
    EXPECT_LT(countMatmuls(acc(*merged)), countMatmuls(acc(*plain)));
  }
  mlir::func::FuncOp forward = plain->lookupSymbol<mlir::func::FuncOp>("forward");
  std::map<std::string, HostTensor> named;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    named[argName(forward, i)] = args[i];
  ls2c::ParameterLayout layout = ls2c::buildParameterLayout(desc);
  ls2c::WorkspaceLayout ws = ls2c::planWorkspace(layout); // points into layout
  std::vector<float> init = ls2c::initializeWorkspace(ws, 7);
  std::vector<HostTensor> accArgs = {
      HostTensor::fromFloats(ElementType::F32, {ws.totalElements},
                             std::vector<double>(init.begin(), init.end())),
      HostTensor::zeros(ElementType::F32, {ws.totalElements}),
      HostTensor::scalarFloat(ElementType::F32, 1.0)};
  for (unsigned i = 3; i < acc(*plain).getNumArguments(); ++i)
    accArgs.push_back(named.at(argName(acc(*plain), i)));
  Interpreter f32(Precision::F32);
  Interpreter onArena(Precision::F32);
  onArena.setUseArena(true);
  std::vector<HostTensor> expected = f32.run(acc(*plain), accArgs);
  std::vector<HostTensor> got = onArena.run(acc(*merged), accArgs);
  ASSERT_EQ(expected.size(), got.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_LE(relativeL2(got[i].floats, expected[i].floats), 1e-5)
        << preset << ": result " << i;
}

// Under activation checkpointing a bf16/fp16 train step casts each layer's
// range of the master workspace on its own (`ls2.compute_copy`, before the
// layer's first reader) and the backward recomputes it, rather than keeping
// one cast of the whole master alive through the step. The checkpointed
// @accumulate_gradients, fused and planned on its arena, computes the bits
// of the unfused step without checkpointing; every copy made in the forward
// is made again in the backward; q, k and v still merge into one GEMM (their
// weights are views of the layer's copy).
void checkLayerComputeCopies(const std::string &preset, ls2c::DType dtype) {
  std::unique_ptr<Plain> plain =
      buildPlain(preset, [&](ls2c::ModelDescription &d) { d.dtype = dtype; });
  std::unique_ptr<Plain> ckpt = buildPlain(preset, [&](ls2c::ModelDescription &d) {
    d.dtype = dtype;
    d.activation_checkpointing = true;
  });
  ASSERT_TRUE(plain && ckpt);
  auto acc = [](mlir::ModuleOp m) {
    return m.lookupSymbol<mlir::func::FuncOp>("accumulate_gradients");
  };
  auto copies = [](mlir::Operation *root) {
    int n = 0;
    root->walk([&](ls2c::ls2::CastOp c) { n += c->hasAttr("ls2.compute_copy"); });
    return n;
  };
  int layers = ckpt->desc.encoder_layers + ckpt->desc.decoder_layers;
  // A layer's weights, and its biases and norms: two ranges a layer.
  EXPECT_EQ(copies(acc(*plain->module)), 0) << preset;
  int forwardCopies = copies(acc(*ckpt->module));
  EXPECT_GE(forwardCopies, 2 * layers) << preset;

  mlir::OwningOpRef<mlir::ModuleOp> merged = ckpt->module->clone();
  mlir::PassManager mergePm(&ckpt->context);
  mergePm.addNestedPass<mlir::func::FuncOp>(ls2c::createMergeGemms());
  ASSERT_TRUE(mlir::succeeded(mergePm.run(*merged)));
  EXPECT_LT(countMatmuls(acc(*merged)), countMatmuls(acc(*ckpt->module))) << preset;

  mlir::OwningOpRef<mlir::ModuleOp> fused = ckpt->module->clone();
  mlir::PassManager pm(&ckpt->context);
  ls2c::FuseOptions options;
  options.epilogues = false; // an epilogue rounds otherwise in bf16/fp16
  pm.addNestedPass<mlir::func::FuncOp>(ls2c::createFuse(options));
  pm.addNestedPass<mlir::func::FuncOp>(ls2c::createPlanBuffers());
  ASSERT_TRUE(mlir::succeeded(pm.run(*fused)));
  ASSERT_TRUE(mlir::succeeded(mlir::verify(*fused)));
  int layerCopies = 0;
  for (mlir::Operation &op : acc(*ckpt->module).getBody().front()) {
    if (!op.hasAttr("ls2.compute_copy"))
      continue;
    std::string scope = ls2c::scopeOf(op.getLoc());
    layerCopies += !scope.empty() && std::isdigit(static_cast<unsigned char>(scope.back()));
  }
  EXPECT_GE(layerCopies, 2 * layers) << preset;
  EXPECT_EQ(copies(acc(*fused)), forwardCopies + layerCopies) << preset;

  mlir::func::FuncOp forward = plain->module->lookupSymbol<mlir::func::FuncOp>("forward");
  std::map<std::string, HostTensor> named;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    named[argName(forward, i)] = plain->args[i];
  ls2c::ParameterLayout layout = ls2c::buildParameterLayout(plain->desc);
  ls2c::WorkspaceLayout ws = ls2c::planWorkspace(layout); // points into layout
  std::vector<float> init = ls2c::initializeWorkspace(ws, 11);
  std::vector<HostTensor> accArgs = {
      HostTensor::fromFloats(ElementType::F32, {ws.totalElements},
                             std::vector<double>(init.begin(), init.end())),
      HostTensor::fromFloats(ElementType::F32, {ws.totalElements},
                             std::vector<double>(init.rbegin(), init.rend())),
      HostTensor::scalarFloat(ElementType::F32, 1.0)};
  for (unsigned i = 3; i < acc(*plain->module).getNumArguments(); ++i)
    accArgs.push_back(named.at(argName(acc(*plain->module), i)));
  expectSameBitsOnArena(acc(*plain->module), acc(*fused), accArgs, preset + ": result");
}

TEST(LayerComputeCopies, CheckpointedBf16TinyBertMatchesOneWholeCopy) {
  checkLayerComputeCopies("tiny-bert", ls2c::DType::BF16);
}
TEST(LayerComputeCopies, CheckpointedFp16TinyTransformerMatchesOneWholeCopy) {
  checkLayerComputeCopies("tiny-transformer", ls2c::DType::F16);
}

TEST(MergedGemms, TinyBertAgreesWithTheUnmergedProgram) { checkMerged("tiny-bert", true); }
TEST(MergedGemms, TinyTransformerAgreesWithTheUnmergedProgram) {
  checkMerged("tiny-transformer", true);
}
TEST(MergedGemms, TinyGptAgreesWithTheUnmergedProgram) { checkMerged("tiny-gpt", false); }
TEST(MergedGemms, TinyVitAgreesWithTheUnmergedProgram) { checkMerged("tiny-vit", false); }
// Llama's q, k, v and its gate and up projections each become one GEMM.
TEST(MergedGemms, LlamaTinyAgreesWithTheUnmergedProgram) { checkMerged("llama-tiny", true); }

} // namespace
