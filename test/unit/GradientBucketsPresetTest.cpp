//===- GradientBucketsPresetTest.cpp - bucket plans of compiled presets ---===//
//
// GradientBuckets.h on the programs the compiler builds (in process, as
// `ls2c compile` does, without NVRTC): the tiny presets' ready points come
// from @accumulate_gradients' writes, each one a step that really writes
// that slot's bytes of the gradient workspace; their plans keep every
// invariant at limits from 1 KiB to DDP's 25 MiB, in fp32 and bf16. BERT-base
// and GPT-2 medium print their 25 MiB plans (the test log shows them), whose
// first bucket is ready before backward is half done.
//
//===----------------------------------------------------------------------===//
#include "GradientBucketsTestUtil.h"

#include "ls2c/Codegen/ProgramBuilder.h"
#include "ls2c/Frontend/Frontend.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Runtime/GradientBuckets.h"
#include "ls2c/Transforms/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <set>

namespace {

using namespace ls2c::runtime;

Program buildPreset(const std::string &preset, double bucketCapMb = 25.0) {
  mlir::MLIRContext context;
  ls2c::ModelDescription desc =
      ls2c::loadModelDescription(LS2C_SOURCE_DIR "/examples/" + preset + ".json");
  desc.optimizer.bucket_cap_mb = bucketCapMb;
  mlir::OwningOpRef<mlir::ModuleOp> module = ls2c::buildForwardModule(context, desc);
  EXPECT_TRUE(module) << preset;
  mlir::PassManager pm(&context);
  ls2c::addCompilePipeline(pm, ls2c::CompileStage::Planned, false);
  EXPECT_TRUE(mlir::succeeded(pm.run(*module))) << preset;
  mlir::FailureOr<Program> program = ls2c::codegen::buildProgram(*module, desc, "");
  EXPECT_TRUE(mlir::succeeded(program)) << preset;
  return mlir::succeeded(program) ? std::move(*program) : Program();
}

/// @accumulate_gradients and, in `result`, the index of its "gradients"
/// result; nullptr when either is missing.
const Function *gradientWriter(const Program &program, uint32_t &result) {
  for (const Function &f : program.functions) {
    if (f.name != "accumulate_gradients")
      continue;
    for (result = 0; result < f.results.size(); ++result)
      if (f.results[result].name == "gradients")
        return &f;
  }
  return nullptr;
}

/// Does step `s` of `f` write into bytes [begin, end) of result `result`?
bool writesRange(const Step &s, uint32_t result, uint64_t begin, uint64_t end) {
  auto hits = [&](const BufferRef &b) {
    return b.space == BufferRef::Space::Result && b.index == result &&
           b.byteOffset < end && begin < b.byteOffset + b.maxBytes;
  };
  switch (s.kind) {
  case Step::Kind::Launch:
    for (const KernelArg &a : s.args)
      if (a.kind == ParamKind::Pointer && hits(a.buffer))
        return true;
    return false;
  case Step::Kind::Gemm:
    return hits(s.gemm.c) ||
           (epilogueHasBiasGrad(s.gemm.epilogue) && hits(s.gemm.biasGrad)) ||
           (epilogueWritesAux(s.gemm.epilogue) && hits(s.gemm.aux));
  case Step::Kind::Attention:
    return s.attention.backward
               ? hits(s.attention.dq) || hits(s.attention.dk) || hits(s.attention.dv)
               : hits(s.attention.out) || hits(s.attention.lse);
  case Step::Kind::Copy:
    return hits(s.copyDestination);
  }
  return false;
}

class TinyPreset : public ::testing::TestWithParam<const char *> {};

TEST_P(TinyPreset, ReadyPointsAndPlans) {
  const std::string preset = GetParam();
  Program program = buildPreset(preset);
  ASSERT_FALSE(program.parameters.empty()) << preset;

  GradientReadiness r = gradientReadiness(program);
  ASSERT_TRUE(r.fromProgram) << preset << ": " << r.note;
  uint32_t result = 0;
  const Function *fn = gradientWriter(program, result);
  ASSERT_NE(fn, nullptr);
  EXPECT_EQ(r.stepCount, fn->steps.size());
  for (size_t i = 0; i < program.parameters.size(); ++i) {
    const ParameterSlot &slot = program.parameters[i];
    EXPECT_EQ(slot.offset % 16, 0u) << slot.name; // planWorkspace's alignment
    uint64_t begin = slot.offset * 4, end = begin + slotElements(slot) * 4;
    int64_t step = r.readyStep[i];
    ASSERT_GE(step, 0) << slot.name;
    ASSERT_LT(size_t(step), fn->steps.size()) << slot.name;
    EXPECT_TRUE(writesRange(fn->steps[size_t(step)], result, begin, end)) << slot.name;
    for (size_t later = size_t(step) + 1; later < fn->steps.size(); ++later)
      EXPECT_FALSE(writesRange(fn->steps[later], result, begin, end))
          << slot.name << " written again at step " << later;
  }

  for (DType t : {DType::F32, DType::BF16}) {
    size_t previous = SIZE_MAX;
    for (uint64_t limit : {1ull << 10, 4ull << 10, 16ull << 10, 64ull << 10, 25ull << 20}) {
      BucketOptions o;
      o.reduceDType = t;
      o.maxBucketBytes = limit;
      GradientBucketPlan plan = planGradientBuckets(program, o);
      SCOPED_TRACE(preset + " " + dtypeName(t) + " limit " + std::to_string(limit));
      ls2c::testing::checkBucketPlan(plan, program.parameters);
      EXPECT_LE(plan.buckets.size(), previous); // larger limits, fewer buckets
      previous = plan.buckets.size();
      if (limit == (4ull << 10) && preset == "tiny-gpt")
        std::printf("%s", formatGradientBucketPlan(plan, program.parameters).c_str());
    }
    // Under DDP's default every tiny preset has two buckets: the compiler's
    // two accumulation groups (the weight-decayed slots, the others), each
    // written by its own step.
    EXPECT_EQ(previous, 2u);
  }
  // bf16 halves the bytes: never more buckets than fp32 at the same limit.
  BucketOptions f32, bf16;
  f32.maxBucketBytes = bf16.maxBucketBytes = 8 << 10;
  bf16.reduceDType = DType::BF16;
  EXPECT_LE(planGradientBuckets(program, bf16).buckets.size(),
            planGradientBuckets(program, f32).buckets.size());
}

// optimizer.bucket_cap_mb sets the compiler's accumulation groups: at 16 KiB
// tiny-gpt's 73,280-element workspace becomes many groups, each written by
// its own step, and buckets of the same size are exactly those groups,
// launched in the order backward finishes them.
TEST(SmallBuckets, EachAccumulationGroupIsOneBucket) {
  const double mb = 16.0 / 1024;
  Program program = buildPreset("tiny-gpt", mb);
  BucketOptions o;
  o.maxBucketBytes = 16 << 10;
  GradientBucketPlan plan = planGradientBuckets(program, o);
  ls2c::testing::checkBucketPlan(plan, program.parameters);
  ASSERT_TRUE(plan.readiness.fromProgram) << plan.readiness.note;
  EXPECT_GE(plan.buckets.size(), 6u);
  std::set<int64_t> steps;
  for (size_t b = 0; b < plan.buckets.size(); ++b) {
    const GradientBucket &bucket = plan.buckets[b];
    EXPECT_TRUE(steps.insert(bucket.readyStep).second)
        << "bucket " << b << " shares ready step " << bucket.readyStep;
    // One step writes the whole bucket: the group's kernel.
    uint32_t result = 0;
    const Function *fn = gradientWriter(program, result);
    ASSERT_NE(fn, nullptr);
    EXPECT_TRUE(writesRange(fn->steps[size_t(bucket.readyStep)], result,
                            bucket.workspaceByteOffset(),
                            bucket.workspaceByteOffset() + bucket.workspaceBytes()))
        << "bucket " << b;
  }
  std::printf("tiny-gpt, bucket_cap_mb %g:\n%s", mb,
              formatGradientBucketPlan(plan, program.parameters).c_str());
}

INSTANTIATE_TEST_SUITE_P(Presets, TinyPreset,
                         ::testing::Values("tiny-bert", "tiny-gpt", "tiny-transformer",
                                           "tiny-vit"));

TEST(FullSizePresets, PrintDdpDefaultPlans) {
  for (const char *preset : {"bert-base", "gpt2-medium"}) {
    Program program = buildPreset(preset);
    ASSERT_FALSE(program.parameters.empty()) << preset;
    for (DType t : {DType::F32, DType::BF16}) {
      BucketOptions o;
      o.reduceDType = t;
      GradientBucketPlan plan = planGradientBuckets(program, o);
      SCOPED_TRACE(std::string(preset) + " " + dtypeName(t));
      ls2c::testing::checkBucketPlan(plan, program.parameters);
      // Overlap: the first bucket is ready before backward is half done
      // (BERT-base: step 126 of 314), and buckets come at many steps.
      ASSERT_FALSE(plan.buckets.empty());
      EXPECT_LT(plan.buckets.front().readyStep * 2, int64_t(plan.readiness.stepCount));
      std::set<int64_t> steps;
      for (const GradientBucket &b : plan.buckets)
        steps.insert(b.readyStep);
      EXPECT_GE(steps.size(), 12u);
      std::printf("%s:\n%s", preset,
                  formatGradientBucketPlan(plan, program.parameters).c_str());
    }
  }
}

} // namespace
