//===- GradientBucketsTest.cpp - all-reduce buckets on synthetic programs -===//
//
// runtime/include/ls2c/Runtime/GradientBuckets.h: ready points read from
// @accumulate_gradients' writes into the gradient workspace, the fallback
// when a program does not say, and the partition's invariants (every
// workspace element in exactly one bucket, aligned contiguous buckets under
// the limit unless one parameter alone exceeds it, ready points
// non-decreasing in launch order, bf16 buckets holding twice the elements)
// on hand-made and random slot layouts. No GPU, no MLIR.
//
//===----------------------------------------------------------------------===//
#include "GradientBucketsTestUtil.h"

#include "ls2c/Runtime/GradientBuckets.h"

#include <gtest/gtest.h>

#include <random>

namespace {

using namespace ls2c::runtime;
using ls2c::testing::checkBucketPlan;

/// Slots of `sizes` elements (1-D), laid out back to back at multiples of
/// `align` elements; `total` gets the (aligned) workspace size.
std::vector<ParameterSlot> layout(const std::vector<int64_t> &sizes, uint64_t &total,
                                  uint64_t align = 16) {
  std::vector<ParameterSlot> slots;
  uint64_t at = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    ParameterSlot s;
    s.name = "p" + std::to_string(i);
    s.shape = {sizes[i]};
    s.offset = at;
    at += (uint64_t(sizes[i]) + align - 1) / align * align;
    slots.push_back(s);
  }
  total = at;
  return slots;
}

GradientReadiness readyAt(std::vector<int64_t> steps) {
  GradientReadiness r;
  r.readyStep = std::move(steps);
  r.fromProgram = true;
  return r;
}

GradientReadiness sameStep(size_t n, int64_t step = 0) {
  return readyAt(std::vector<int64_t>(n, step));
}

BufferRef resultRange(uint32_t result, uint64_t offset, uint64_t bytes) {
  BufferRef b;
  b.space = BufferRef::Space::Result;
  b.index = result;
  b.byteOffset = offset;
  b.maxBytes = bytes;
  return b;
}

/// A program whose @accumulate_gradients has results (loss, gradients) and
/// no steps; tests add steps.
Program programWith(const std::vector<ParameterSlot> &slots, uint64_t total) {
  Program p;
  p.modelName = "synthetic";
  p.parameters = slots;
  p.workspaceElements = total;
  Function f;
  f.name = "accumulate_gradients";
  TensorSpec loss;
  loss.name = "loss";
  loss.kind = ArgumentKind::Output;
  TensorSpec grads;
  grads.name = "gradients";
  grads.kind = ArgumentKind::Workspace;
  grads.shape = {ls2c::testing::staticDim(int64_t(total))};
  grads.maxShape = {int64_t(total)};
  f.results = {loss, grads};
  p.functions.push_back(f);
  return p;
}

Step copyInto(uint64_t byteOffset, uint64_t bytes, uint32_t result = 1) {
  Step s;
  s.kind = Step::Kind::Copy;
  s.copySource.space = BufferRef::Space::Arena;
  s.copySource.maxBytes = bytes;
  s.copyDestination = resultRange(result, byteOffset, bytes);
  return s;
}

TEST(GradientBuckets, Fp32AndBf16Sizes) {
  uint64_t total;
  auto slots = layout(std::vector<int64_t>(10, 1024), total);
  BucketOptions o;
  o.maxBucketBytes = 8192; // 2048 fp32 or 4096 bf16 elements
  GradientBucketPlan f32 = planGradientBuckets(slots, total, sameStep(10), o);
  checkBucketPlan(f32, slots);
  ASSERT_EQ(f32.buckets.size(), 5u);
  for (const GradientBucket &b : f32.buckets) {
    EXPECT_EQ(b.elements(), 2048u);
    EXPECT_EQ(b.reduceBytes, 8192u);
    EXPECT_EQ(b.workspaceBytes(), 8192u);
  }
  // Launch order from the top of the workspace down (ties in ready step).
  EXPECT_EQ(f32.buckets[0].beginElement, 8192u);
  EXPECT_EQ(f32.buckets[0].parameters, (std::vector<uint32_t>{8, 9}));
  EXPECT_EQ(f32.buckets[4].beginElement, 0u);

  o.reduceDType = DType::BF16;
  GradientBucketPlan bf16 = planGradientBuckets(slots, total, sameStep(10), o);
  checkBucketPlan(bf16, slots);
  ASSERT_EQ(bf16.buckets.size(), 3u);
  EXPECT_EQ(bf16.buckets[0].elements(), 4096u); // p6..p9
  EXPECT_EQ(bf16.buckets[0].reduceBytes, 8192u);
  EXPECT_EQ(bf16.buckets[0].workspaceBytes(), 16384u);
  EXPECT_EQ(bf16.buckets[1].elements(), 4096u); // p2..p5
  EXPECT_EQ(bf16.buckets[2].elements(), 2048u); // p0, p1
  EXPECT_EQ(bf16.buckets[2].reduceBytes, 4096u);
}

TEST(GradientBuckets, DefaultLimitIsDdp25MiB) {
  EXPECT_EQ(BucketOptions().maxBucketBytes, 25ull * 1024 * 1024);
  EXPECT_EQ(BucketOptions().reduceDType, DType::F32);
  uint64_t total;
  // 3 x 5 Mi elements (20 MiB fp32 each): one per bucket in fp32; in bf16
  // (10 MiB each) the top two share one, the third would make 30 MiB.
  auto slots = layout({5 << 20, 5 << 20, 5 << 20}, total);
  GradientBucketPlan p = planGradientBuckets(slots, total, sameStep(3));
  checkBucketPlan(p, slots);
  EXPECT_EQ(p.buckets.size(), 3u);
  BucketOptions o;
  o.reduceDType = DType::BF16;
  p = planGradientBuckets(slots, total, sameStep(3), o);
  checkBucketPlan(p, slots);
  ASSERT_EQ(p.buckets.size(), 2u);
  EXPECT_EQ(p.buckets[0].parameters, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(p.buckets[0].reduceBytes, 20ull << 20);
}

TEST(GradientBuckets, OversizedParameterAlone) {
  uint64_t total;
  auto slots = layout({100, 5000, 100, 100}, total);
  BucketOptions o;
  o.maxBucketBytes = 4096; // 1024 fp32 elements
  GradientBucketPlan p = planGradientBuckets(slots, total, sameStep(4), o);
  checkBucketPlan(p, slots);
  ASSERT_EQ(p.buckets.size(), 3u);
  // Top down: p2 + p3, p1 alone (over the limit), p0.
  EXPECT_EQ(p.buckets[0].parameters, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(p.buckets[1].parameters, (std::vector<uint32_t>{1}));
  EXPECT_GT(p.buckets[1].reduceBytes, o.maxBucketBytes);
  EXPECT_EQ(p.buckets[2].parameters, (std::vector<uint32_t>{0}));
}

TEST(GradientBuckets, LaunchOrderFollowsReadySteps) {
  uint64_t total;
  auto slots = layout(std::vector<int64_t>(6, 256), total);
  BucketOptions o;
  o.maxBucketBytes = 2048; // 512 fp32 elements: two slots a bucket
  // Backward finishes the low slots first here (the opposite of the
  // top-down tie order), and p2/p3 last of all; pairs share a ready step.
  GradientBucketPlan p =
      planGradientBuckets(slots, total, readyAt({5, 5, 40, 40, 12, 12}), o);
  checkBucketPlan(p, slots);
  ASSERT_EQ(p.buckets.size(), 3u);
  EXPECT_EQ(p.buckets[0].readyStep, 5);  // p0, p1
  EXPECT_EQ(p.buckets[0].beginElement, 0u);
  EXPECT_EQ(p.buckets[1].readyStep, 12); // p4, p5
  EXPECT_EQ(p.buckets[2].readyStep, 40); // p2, p3
  EXPECT_EQ(p.buckets[2].parameters, (std::vector<uint32_t>{2, 3}));

  // Slots ready at different steps never share a bucket, though two would
  // fit: joined, the earlier would wait for the later.
  p = planGradientBuckets(slots, total, readyAt({3, 5, 40, 7, 11, 12}), o);
  checkBucketPlan(p, slots);
  ASSERT_EQ(p.buckets.size(), 6u);
  const int64_t order[] = {3, 5, 7, 11, 12, 40};
  const uint32_t owner[] = {0, 1, 3, 4, 5, 2};
  for (size_t b = 0; b < 6; ++b) {
    EXPECT_EQ(p.buckets[b].readyStep, order[b]) << b;
    EXPECT_EQ(p.buckets[b].parameters, (std::vector<uint32_t>{owner[b]})) << b;
  }
}

TEST(GradientBuckets, UnalignedSlotsStillPartition) {
  // Slots at odd offsets: cuts are aligned down, so a bucket may hold the
  // tail of the slot below it; every element is still in one bucket.
  std::vector<ParameterSlot> slots;
  uint64_t offsets[] = {0, 7, 30, 31, 100, 333};
  int64_t sizes[] = {7, 20, 1, 60, 200, 3};
  for (int i = 0; i < 6; ++i) {
    ParameterSlot s;
    s.name = "u" + std::to_string(i);
    s.shape = {sizes[i]};
    s.offset = offsets[i];
    slots.push_back(s);
  }
  for (uint64_t limit : {64u, 128u, 400u, 4096u})
    for (DType t : {DType::F32, DType::BF16}) {
      BucketOptions o;
      o.maxBucketBytes = limit;
      o.reduceDType = t;
      GradientBucketPlan p =
          planGradientBuckets(slots, 340, readyAt({9, 8, 7, 6, 5, 4}), o);
      checkBucketPlan(p, slots, /*alignedSlots=*/false);
    }
}

TEST(GradientBuckets, RandomLayouts) {
  std::mt19937_64 rng(20240901);
  for (int trial = 0; trial < 400; ++trial) {
    size_t n = 1 + rng() % 40;
    std::vector<int64_t> sizes;
    for (size_t i = 0; i < n; ++i) {
      uint64_t kind = rng() % 10;
      sizes.push_back(kind == 0 ? 0 : kind < 7 ? int64_t(1 + rng() % 300)
                                               : int64_t(1 + rng() % 20000));
    }
    uint64_t align = uint64_t(1) << (rng() % 6); // 1..32
    uint64_t total;
    auto slots = layout(sizes, total, std::max<uint64_t>(align, 16));
    total += (rng() % 3) * 16; // tail padding
    std::vector<int64_t> ready;
    for (size_t i = 0; i < n; ++i)
      ready.push_back(int64_t(rng() % 50));
    BucketOptions o;
    o.alignElements = align;
    o.reduceDType = rng() % 2 ? DType::F32 : DType::BF16;
    o.maxBucketBytes = 128 * (1 + rng() % 400);
    if (o.maxBucketBytes / dtypeBytes(o.reduceDType) < align)
      continue;
    SCOPED_TRACE("trial " + std::to_string(trial));
    GradientBucketPlan p = planGradientBuckets(slots, total, readyAt(ready), o);
    checkBucketPlan(p, slots);
  }
}

TEST(GradientReadiness, LastWriterOfEachSlot) {
  uint64_t total;
  auto slots = layout({64, 32, 16, 48}, total); // offsets 0, 64, 96, 112
  Program p = programWith(slots, total);
  Function &f = p.functions[0];
  Step launch; // writes the loss and p3's gradient
  launch.kind = Step::Kind::Launch;
  KernelArg a;
  a.buffer = resultRange(0, 0, 4);
  launch.args.push_back(a);
  a.buffer = resultRange(1, 112 * 4, 48 * 4);
  launch.args.push_back(a);
  KernelArg size; // an int64 argument is not a write
  size.kind = ParamKind::Int64;
  launch.args.push_back(size);
  f.steps.push_back(launch);               // 0: p3
  f.steps.push_back(copyInto(0, 64 * 4)); // 1: p0
  Step gemm;                               // 2: c into p1, bias gradient into p2
  gemm.kind = Step::Kind::Gemm;
  gemm.gemm.c = resultRange(1, 64 * 4, 32 * 4);
  gemm.gemm.biasGrad = resultRange(1, 96 * 4, 16 * 4);
  gemm.gemm.epilogue = GemmEpilogue::BiasGradA;
  gemm.gemm.a = resultRange(1, 0, 64 * 4); // operands are read, not written
  f.steps.push_back(gemm);
  f.steps.push_back(copyInto(10 * 4, 4)); // 3: p0 again (one element)
  Step other;                             // 4: the loss only
  other.kind = Step::Kind::Copy;
  other.copyDestination = resultRange(0, 0, 4);
  f.steps.push_back(other);

  GradientReadiness r = gradientReadiness(p);
  EXPECT_TRUE(r.fromProgram);
  EXPECT_EQ(r.stepCount, 5u);
  EXPECT_EQ(r.readyStep, (std::vector<int64_t>{3, 2, 2, 0}));
  EXPECT_TRUE(r.note.empty()) << r.note;

  BucketOptions o;
  o.maxBucketBytes = 256; // 64 fp32 elements
  GradientBucketPlan plan = planGradientBuckets(p, o);
  checkBucketPlan(plan, slots);
  // A bucket holds slots of one ready step: p3 (ready at step 0) goes
  // alone and first, though p2 would fit beside it; p2 and p1 (both step 2)
  // share one.
  ASSERT_EQ(plan.buckets.size(), 3u);
  EXPECT_EQ(plan.buckets[0].parameters, (std::vector<uint32_t>{3}));
  EXPECT_EQ(plan.buckets[0].readyStep, 0);
  EXPECT_EQ(plan.buckets[1].parameters, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(plan.buckets[1].readyStep, 2);
  EXPECT_EQ(plan.buckets[2].parameters, (std::vector<uint32_t>{0}));
  EXPECT_EQ(plan.buckets[2].readyStep, 3);
  std::string text = formatGradientBucketPlan(plan, p.parameters);
  EXPECT_NE(text.find("gradient buckets: 3 of at most 256 bytes in f32, workspace 160 "
                      "fp32 elements (640 bytes), 16-element alignment"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  1      2  [64, 112)                          192       2  p1 .. p2"),
            std::string::npos)
      << text;
}

TEST(GradientReadiness, OneStepWritingEverythingIsNoted) {
  uint64_t total;
  auto slots = layout({64, 32, 16}, total);
  Program p = programWith(slots, total);
  p.functions[0].steps.push_back(copyInto(0, 4, /*result=*/0)); // the loss
  p.functions[0].steps.push_back(copyInto(0, total * 4));       // every slot
  GradientReadiness r = gradientReadiness(p);
  EXPECT_TRUE(r.fromProgram);
  EXPECT_EQ(r.readyStep, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_NE(r.note.find("every gradient is written by one step (1 of 2"),
            std::string::npos)
      << r.note;
}

TEST(GradientReadiness, Fallbacks) {
  uint64_t total;
  auto slots = layout({64, 32}, total);
  Program p = programWith(slots, total);
  p.functions[0].name = "train";
  GradientReadiness r = gradientReadiness(p);
  EXPECT_FALSE(r.fromProgram);
  EXPECT_EQ(r.readyStep, (std::vector<int64_t>{-1, -1}));
  EXPECT_NE(r.note.find("no @accumulate_gradients"), std::string::npos) << r.note;
  EXPECT_NE(r.note.find("fallback: reverse parameter order"), std::string::npos);
  // The plan still covers everything, top down.
  GradientBucketPlan plan = planGradientBuckets(p);
  checkBucketPlan(plan, slots);
  EXPECT_NE(formatGradientBucketPlan(plan, p.parameters).find("ready points: fallback"),
            std::string::npos);

  p = programWith(slots, total);
  p.functions[0].results[1].name = "grads";
  p.functions[0].steps.push_back(copyInto(0, total * 4));
  r = gradientReadiness(p);
  EXPECT_FALSE(r.fromProgram);
  EXPECT_EQ(r.readyStep, (std::vector<int64_t>{0, 0}));
  EXPECT_NE(r.note.find("no result of kind workspace named 'gradients'"),
            std::string::npos)
      << r.note;

  p = programWith(slots, total);
  p.functions[0].steps.push_back(copyInto(0, 64 * 4)); // p1 never written
  r = gradientReadiness(p);
  EXPECT_FALSE(r.fromProgram);
  EXPECT_NE(r.note.find("writes the gradient of 'p1'"), std::string::npos) << r.note;
}

TEST(GradientBuckets, Refusals) {
  uint64_t total;
  auto slots = layout({64, 32}, total);
  auto refuses = [&](std::vector<ParameterSlot> s, uint64_t t, BucketOptions o,
                     const std::string &needle) {
    try {
      planGradientBuckets(s, t, sameStep(s.size()), o);
      ADD_FAILURE() << "accepted; expected: " << needle;
    } catch (const BucketPlanError &e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  BucketOptions o;
  o.reduceDType = DType::F16;
  refuses(slots, total, o, "reduction dtype f16: must be f32 or bf16");
  o = {};
  o.alignElements = 0;
  refuses(slots, total, o, "alignElements: must be at least 1");
  o = {};
  o.maxBucketBytes = 60;
  refuses(slots, total, o, "maxBucketBytes 60: must hold at least alignElements (16)");
  refuses({}, 0, {}, "no parameters");
  refuses(slots, 90, {}, "parameter 'p1': elements [64, 96) outside the workspace of 90");
  auto overlapping = slots;
  overlapping[1].offset = 60;
  refuses(overlapping, total, {}, "parameters 'p0' and 'p1' overlap at element 60");
  auto negative = slots;
  negative[0].shape = {4, -1};
  refuses(negative, total, {}, "parameter 'p0': negative dim -1");
}

} // namespace
