//===- CudnnAttentionGraphTest.cpp - cuDNN attention plan descriptions ----===//
//
// runtime/lib/Execution/CudnnAttentionGraph.h without a GPU: the checks of an
// AttentionGraphDesc that run before any cuDNN call (cudnnCreate needs a
// device, so build() gets a null handle). A valid description gets as far as
// the handle and is refused there; plans themselves are tested on a GPU.
//
//===----------------------------------------------------------------------===//
#include "CudnnAttentionGraph.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

using namespace ls2c::runtime::cudnn;

// GPT-2 small's attention over a fused QKV projection.
AttentionGraphDesc validDesc(bool backward) {
  AttentionGraphDesc d;
  d.backward = backward;
  d.batch = 4;
  d.heads = 12;
  d.kvHeads = 4;
  d.headDim = 64;
  d.maxSeqQ = d.maxSeqK = 1024;
  d.causal = true;
  d.scale = 0.125f;
  d.dropoutRate = 0.1f;
  d.strideQ = d.strideK = d.strideV = 3 * 12 * 64;
  d.strideO = d.strideDO = d.strideDQ = 12 * 64;
  d.strideDK = d.strideDV = 4 * 64;
  return d;
}

// build()'s refusal, which must not reach cuDNN.
std::string refusal(const AttentionGraphDesc &d) {
  std::string why;
  EXPECT_EQ(AttentionPlan::build(nullptr, d, why), nullptr);
  EXPECT_EQ(why, attentionDescProblem(d));
  return why;
}

TEST(CudnnAttentionDesc, ValidGetsToTheHandle) {
  for (bool backward : {false, true}) {
    AttentionGraphDesc d = validDesc(backward);
    EXPECT_EQ(attentionDescProblem(d), "");
    std::string why;
    EXPECT_EQ(AttentionPlan::build(nullptr, d, why), nullptr);
    EXPECT_EQ(why, "no cuDNN handle");
  }
}

TEST(CudnnAttentionDesc, KvHeadsMustDivideHeads) {
  AttentionGraphDesc d = validDesc(false);
  d.kvHeads = 5;
  EXPECT_NE(refusal(d).find("kvHeads (5) must divide heads (12)"), std::string::npos);
  d.kvHeads = 0;
  EXPECT_NE(refusal(d).find("must divide"), std::string::npos);
}

TEST(CudnnAttentionDesc, HeadDim) {
  AttentionGraphDesc d = validDesc(true);
  for (int64_t bad : {0, 60, 264}) {
    d.headDim = bad;
    d.strideQ = d.strideK = d.strideV = d.strideO = d.strideDO = d.strideDQ = d.strideDK =
        d.strideDV = 12 * 264;
    EXPECT_NE(refusal(d).find("headDim " + std::to_string(bad) + " is not a multiple of 8"),
              std::string::npos);
  }
}

TEST(CudnnAttentionDesc, DropoutRate) {
  AttentionGraphDesc d = validDesc(false);
  for (float bad : {1.0f, 1.5f, -0.1f, NAN}) {
    d.dropoutRate = bad;
    EXPECT_NE(refusal(d).find("dropout rate must be in [0, 1)"), std::string::npos) << bad;
  }
  d.dropoutRate = 0;
  EXPECT_EQ(attentionDescProblem(d), "");
}

TEST(CudnnAttentionDesc, ShapesAndScale) {
  AttentionGraphDesc d = validDesc(false);
  d.batch = 0;
  EXPECT_NE(refusal(d).find("must be positive"), std::string::npos);
  d = validDesc(false);
  d.scale = INFINITY;
  EXPECT_NE(refusal(d).find("scale"), std::string::npos);
}

TEST(CudnnAttentionDesc, RowStrides) {
  AttentionGraphDesc d = validDesc(false);
  d.strideO = 12 * 64 - 8;
  EXPECT_EQ(refusal(d), "the row stride of O (760) is below its width (768)");
  // Backward strides matter only in backward.
  d = validDesc(false);
  d.strideDV = 0;
  EXPECT_EQ(attentionDescProblem(d), "");
  d.backward = true;
  EXPECT_EQ(refusal(d), "the row stride of dV (0) is below its width (256)");
}

TEST(CudnnAttentionDesc, OffsetsFitInt32) {
  AttentionGraphDesc d = validDesc(false);
  d.batch = 1 << 20; // 2^20 sequences of 1024 rows of 2304 elements
  EXPECT_EQ(refusal(d), "the element offsets of Q can pass 2^31 - 1");
}

} // namespace
