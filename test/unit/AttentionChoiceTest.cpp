//===- AttentionChoiceTest.cpp - the attention backend per shape ----------===//
//
// AttentionChoice.h's bookkeeping (no GPU): shape keys ignore the batch and
// tell everything else apart; a shape takes the faster backend; dropout
// partners take one backend by the sum of their times, or the backend of
// whichever was decided first; decisions are kept and listed in order.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Runtime/AttentionChoice.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

using namespace ls2c::runtime;

Attention attention() {
  Attention a;
  a.dtype = DType::BF16;
  a.heads = 12;
  a.kvHeads = 12;
  a.headDim = 64;
  a.scale = 0.125f;
  a.tokensQ = a.tokensK = Dim{-1, 0, 0};
  a.batchPlusOne = Dim{-1, 3, 0};
  a.strideQ = a.strideK = a.strideV = 3 * 768;
  a.strideO = 768;
  a.maxSeqLen = 512;
  return a;
}

TEST(AttentionChoice, BackendNamesRoundTrip) {
  for (AttentionBackend b :
       {AttentionBackend::Kernels, AttentionBackend::Cudnn, AttentionBackend::Auto})
    EXPECT_EQ(parseAttentionBackend(attentionBackendName(b)), b);
  EXPECT_FALSE(parseAttentionBackend("flash"));
  EXPECT_FALSE(parseAttentionBackend(""));
  EXPECT_FALSE(parseAttentionBackend("CUDNN"));
}

TEST(AttentionChoice, ShapeKeysIgnoreTheBatchOnly) {
  Attention a = attention();
  std::string key = attentionShapeKey(a);
  Attention other = a;
  other.batchPlusOne = Dim{33, -1, 0};
  other.tokensQ = other.tokensK = Dim{16384, -1, 0};
  EXPECT_EQ(attentionShapeKey(other), key);
  auto differs = [&](auto change) {
    Attention b = a;
    change(b);
    return attentionShapeKey(b) != key;
  };
  EXPECT_TRUE(differs([](Attention &b) { b.backward = true; }));
  EXPECT_TRUE(differs([](Attention &b) { b.dtype = DType::F16; }));
  EXPECT_TRUE(differs([](Attention &b) { b.heads = 16; }));
  EXPECT_TRUE(differs([](Attention &b) { b.kvHeads = 4; }));
  EXPECT_TRUE(differs([](Attention &b) { b.headDim = 128; }));
  EXPECT_TRUE(differs([](Attention &b) { b.causal = true; }));
  EXPECT_TRUE(differs([](Attention &b) { b.dropoutRate = 0.1f; }));
  EXPECT_TRUE(differs([](Attention &b) { b.maxSeqLen = 1024; }));
  EXPECT_TRUE(differs([](Attention &b) { b.strideQ = 768; }));
  Attention backward = a;
  backward.backward = true;
  std::string backwardKey = attentionShapeKey(backward);
  backward.strideDQ = 2304;
  EXPECT_NE(attentionShapeKey(backward), backwardKey);
}

TEST(AttentionChoice, TheFasterBackendWinsAndStays) {
  AttentionChoices c;
  EXPECT_FALSE(c.find("a"));
  EXPECT_EQ(c.decide("a", {0.9, 1.9}), AttentionBackend::Cudnn);
  EXPECT_EQ(c.decide("b", {2.0, 1.5}), AttentionBackend::Kernels);
  EXPECT_EQ(c.decide("tie", {1.0, 1.0}), AttentionBackend::Cudnn);
  // A refusal is timed as infinitely slow.
  EXPECT_EQ(c.decide("refused", {INFINITY, 0}), AttentionBackend::Kernels);
  // Decided once: later timings do not change it.
  EXPECT_EQ(c.decide("a", {5.0, 1.0}), AttentionBackend::Cudnn);
  EXPECT_EQ(c.find("a"), AttentionBackend::Cudnn);
  ASSERT_EQ(c.decisions().size(), 4u);
  EXPECT_EQ(c.decisions()[1].key, "b");
  EXPECT_DOUBLE_EQ(c.decisions()[1].timing.kernelsMs, 1.5);
  EXPECT_FALSE(c.decisions()[1].imposed);
}

TEST(AttentionChoice, DropoutPartnersTakeOneBackendBySum) {
  AttentionChoices c;
  // cuDNN's forward is faster, its backward much slower: the sum decides.
  EXPECT_EQ(c.decidePair("fwd", {0.5, 1.0}, "bwd", {3.0, 2.0}), AttentionBackend::Kernels);
  EXPECT_EQ(c.find("fwd"), AttentionBackend::Kernels);
  EXPECT_EQ(c.find("bwd"), AttentionBackend::Kernels);
  EXPECT_EQ(c.decidePair("fwd2", {0.5, 1.0}, "bwd2", {2.0, 2.0}), AttentionBackend::Cudnn);
  EXPECT_EQ(c.find("bwd2"), AttentionBackend::Cudnn);
}

TEST(AttentionChoice, ADecidedPartnerImposesItsBackend) {
  AttentionChoices c;
  c.decide("fwd", {0.5, 1.0}); // cuDNN, e.g. from an evaluation forward
  // The pair's backward is faster on the kernels, yet takes cuDNN.
  EXPECT_EQ(c.decidePair("fwd", {9.0, 1.0}, "bwd", {3.0, 1.0}), AttentionBackend::Cudnn);
  EXPECT_EQ(c.find("bwd"), AttentionBackend::Cudnn);
  c.decide("bwd3", {2.0, 1.0}); // kernels
  EXPECT_EQ(c.decidePair("fwd3", {0.1, 1.0}, "bwd3", {0.1, 1.0}), AttentionBackend::Kernels);
  EXPECT_EQ(c.find("fwd3"), AttentionBackend::Kernels);
  // Without timing: the partner's backend, marked as imposed.
  EXPECT_EQ(c.impose("bwd4", "fwd"), AttentionBackend::Cudnn);
  EXPECT_TRUE(c.decisions().back().imposed);
  EXPECT_EQ(c.decisions().back().key, "bwd4");
}

} // namespace
