//===- AttentionChoiceTest.cpp - the attention backend per shape ----------===//
//
// AttentionChoice.h's bookkeeping (no GPU): shape keys ignore the batch and
// tell everything else apart; a shape takes the faster backend; dropout
// partners take one backend by the sum of their times, or the backend of
// whichever was decided first; decisions are kept and listed in order, and
// survive a save and a load (a malformed file is refused whole, naming the
// field).
//
//===----------------------------------------------------------------------===//
#include "ls2c/Runtime/AttentionChoice.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <unistd.h>

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
  // The kernels must win alone by more than their in-step slowdown.
  EXPECT_EQ(c.decide("close", {1.0, 0.95}), AttentionBackend::Cudnn);
  EXPECT_EQ(c.decide("clear", {1.0, 0.9}), AttentionBackend::Kernels);
  EXPECT_EQ(c.decidePair("closeFwd", {0.19, 0.14}, "closeBwd", {0.35, 0.39}),
            AttentionBackend::Cudnn);
  // A refusal is timed as infinitely slow.
  EXPECT_EQ(c.decide("refused", {INFINITY, 0}), AttentionBackend::Kernels);
  // Decided once: later timings do not change it.
  EXPECT_EQ(c.decide("a", {5.0, 1.0}), AttentionBackend::Cudnn);
  EXPECT_EQ(c.find("a"), AttentionBackend::Cudnn);
  ASSERT_EQ(c.decisions().size(), 8u);
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

/// A fresh directory under the system's temporary one.
std::string tempDir() {
  std::string pattern = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                        std::string("/ls2c-choices-XXXXXX");
  char *made = mkdtemp(pattern.data());
  EXPECT_TRUE(made);
  return made ? made : "";
}

void writeText(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(AttentionChoice, DecisionsSurviveASaveAndALoad) {
  // The cache directory need not exist yet.
  std::string dir = tempDir(), path = dir + "/cache/attention-choices.json";
  AttentionChoices c;
  EXPECT_EQ(c.loadFile(path), 0u); // no file yet
  c.decide("a", {0.9, 1.9});
  c.decide("b", {2.0, 1.5});
  c.decide("refused", {INFINITY, 0}); // not saved: cuDNN may take another batch
  c.impose("c", "a");
  c.impose("follows-refused", "refused"); // kernels for this batch only
  c.saveFile(path);

  AttentionChoices d;
  d.decide("b", {0.1, 9.0}); // decided here: keeps its backend
  EXPECT_EQ(d.loadFile(path), 2u);
  EXPECT_EQ(d.find("a"), AttentionBackend::Cudnn);
  EXPECT_EQ(d.find("b"), AttentionBackend::Cudnn);
  EXPECT_EQ(d.find("c"), AttentionBackend::Cudnn);
  EXPECT_FALSE(d.find("refused"));
  EXPECT_FALSE(d.find("follows-refused"));
  ASSERT_EQ(d.decisions().size(), 3u);
  EXPECT_TRUE(d.decisions()[1].loaded);
  EXPECT_DOUBLE_EQ(d.decisions()[1].timing.kernelsMs, 1.9);
  std::remove(path.c_str());
  rmdir((dir + "/cache").c_str());
  rmdir(dir.c_str());
}

TEST(AttentionChoice, ChoiceKeysNameTheDeviceTheShapeTheRuleAndTheKernels) {
  Attention a = attention();
  const std::string device = "NVIDIA H200 sm_90 cudnn 91400";
  std::string key = attentionChoiceKey(device, a, 0x1234);
  EXPECT_EQ(key.rfind(device + " | " + attentionShapeKey(a) + " | ", 0), 0u) << key;
  std::ostringstream rule;
  rule << " | kernels x" << kKernelsInStepFactor << " in the step | ";
  EXPECT_NE(key.find(rule.str()), std::string::npos) << key;
  EXPECT_EQ(key.substr(key.size() - 16), "0000000000001234");
  EXPECT_NE(attentionChoiceKey(device, a, 0x1235), key);
  EXPECT_NE(attentionChoiceKey("NVIDIA H100 sm_90 cudnn 91400", a, 0x1234), key);

  // A decision saved under a key without the rule (made by an earlier rule)
  // is loaded but does not answer for the current key: the shape is timed
  // again.
  std::string dir = tempDir(), path = dir + "/attention-choices.json";
  std::string old = device + " | " + attentionShapeKey(a) + " | kernels 0000000000001234";
  writeText(path, "{\"version\": 1, \"choices\": [{\"key\": \"" + old +
                      "\", \"backend\": \"cudnn\", \"cudnn_ms\": 1.0, "
                      "\"kernels_ms\": 0.95}]}");
  AttentionChoices c;
  EXPECT_EQ(c.loadFile(path), 1u);
  EXPECT_EQ(c.find(old), AttentionBackend::Cudnn);
  EXPECT_FALSE(c.find(key));
  std::remove(path.c_str());
  rmdir(dir.c_str());
}

TEST(AttentionChoice, MalformedFilesAreRefusedWhole) {
  std::string dir = tempDir(), path = dir + "/attention-choices.json";
  auto refused = [&](const std::string &text, const std::string &what) {
    writeText(path, text);
    AttentionChoices c;
    try {
      c.loadFile(path);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const std::runtime_error &e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    EXPECT_TRUE(c.decisions().empty());
  };
  refused("{\"version\": 1, \"choices\": [", "not valid JSON");
  refused("{\"version\": 2, \"choices\": []}", "version: must be 1");
  refused("{\"version\": 1}", "choices: must be an array");
  refused("{\"version\": 1, \"choices\": [{\"key\": 3}]}", "choices[0].key");
  refused("{\"version\": 1, \"choices\": [{\"key\": \"a\", \"backend\": \"auto\", "
          "\"cudnn_ms\": 1, \"kernels_ms\": 1}]}",
          "choices[0].backend");
  // The first choice is good, the second is not: nothing is added.
  refused("{\"version\": 1, \"choices\": [{\"key\": \"a\", \"backend\": \"cudnn\", "
          "\"cudnn_ms\": 1, \"kernels_ms\": 2}, {\"key\": \"b\", \"backend\": \"kernels\", "
          "\"cudnn_ms\": -1, \"kernels_ms\": 2}]}",
          "choices[1].cudnn_ms");
  std::remove(path.c_str());
  rmdir(dir.c_str());
}

/// A function of attention steps, each {backward, lse offset, stream}, with
/// a kernel launch after each (which pairing skips).
Function attentionSteps(const std::vector<std::tuple<bool, uint64_t, uint32_t>> &steps) {
  Function f;
  for (auto [backward, lse, stream] : steps) {
    Step s;
    s.kind = Step::Kind::Attention;
    s.attention = attention();
    s.attention.backward = backward;
    s.attention.lse.byteOffset = lse;
    s.attention.lse.maxBytes = 4096;
    s.attention.stream = stream;
    s.attention.dropoutRate = 0.1f;
    f.steps.push_back(s);
    f.steps.push_back(Step{}); // a launch
  }
  return f;
}

// Each layer's forward pairs with the backward that reads its lse; with
// activation checkpointing's recomputed attentions the arena gives every
// layer's recomputed lse one offset, and a backward pairs with the forward
// that wrote it last (not, as the Executor's earlier loop did, every forward
// with that offset pairing with the last backward). The originals, whose lse no
// backward reads, take their stream's recomputed partner.
TEST(AttentionChoice, PartnersAreTheLastWriterOfTheLse) {
  // Two layers, streams 1 and 2: forwards (lse at 0 and 4096), then per
  // layer in reverse a recomputed forward (lse at 8192) and its backward.
  Function f = attentionSteps({{false, 0, 1},
                               {false, 4096, 2},
                               {false, 8192, 2},
                               {true, 8192, 2},
                               {false, 8192, 1},
                               {true, 8192, 1}});
  std::vector<int64_t> p = attentionPartners(f);
  ASSERT_EQ(p.size(), 12u);
  EXPECT_EQ(p[4], 6);  // layer 2's recomputed forward and its backward
  EXPECT_EQ(p[6], 4);
  EXPECT_EQ(p[8], 10); // layer 1's
  EXPECT_EQ(p[10], 8);
  EXPECT_EQ(p[0], 10); // the originals: their stream's backward
  EXPECT_EQ(p[2], 6);
  for (size_t i = 1; i < p.size(); i += 2)
    EXPECT_EQ(p[i], -1);
  // Without recomputation each forward pairs with its own backward.
  Function plain = attentionSteps({{false, 0, 1}, {false, 4096, 2}, {true, 4096, 2}, {true, 0, 1}});
  std::vector<int64_t> q = attentionPartners(plain);
  EXPECT_EQ(q[0], 6);
  EXPECT_EQ(q[6], 0);
  EXPECT_EQ(q[2], 4);
  EXPECT_EQ(q[4], 2);
}

} // namespace
