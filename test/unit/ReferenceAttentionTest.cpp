//===- ReferenceAttentionTest.cpp - packed varlen attention ---------------===//
#include "ReferenceTestUtil.h"

#include <algorithm>
#include <limits>

using namespace ls2c::reference;
using namespace ls2c::reference::testing;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

struct Dropout {
  double rate = 0;
  uint64_t seed = 0, offset = 0;
  uint32_t stream = 0;
};

struct AttentionResult {
  std::vector<double> out, lse;
};

/// Attention sequence by sequence, straight from the definition.
AttentionResult naiveAttention(const HostTensor &q, const HostTensor &k,
                               const HostTensor &v,
                               const std::vector<int64_t> &cuq,
                               const std::vector<int64_t> &cuk, double scale,
                               bool causal, Dropout dropout = {}) {
  int64_t hq = q.shape[1], d = q.shape[2], hkv = k.shape[1];
  AttentionResult r;
  r.out.assign(q.floats.size(), 0.0);
  r.lse.assign(static_cast<size_t>(q.shape[0] * hq), 0.0);
  for (size_t b = 0; b + 1 < cuq.size(); ++b) {
    int64_t lq = cuq[b + 1] - cuq[b], lk = cuk[b + 1] - cuk[b];
    for (int64_t i = 0; i < lq; ++i) {
      int64_t row = cuq[b] + i;
      for (int64_t h = 0; h < hq; ++h) {
        int64_t g = h / (hq / hkv);
        std::vector<double> s;
        for (int64_t j = 0; j < lk; ++j) {
          if (causal && j > i + (lk - lq))
            break;
          double dot = 0;
          for (int64_t c = 0; c < d; ++c)
            dot += q.floats[(row * hq + h) * d + c] *
                   k.floats[((cuk[b] + j) * hkv + g) * d + c];
          s.push_back(scale * dot);
        }
        if (s.empty()) {
          r.lse[row * hq + h] = -kInf;
          continue;
        }
        double m = *std::max_element(s.begin(), s.end()), sum = 0;
        for (double x : s)
          sum += std::exp(x - m);
        double lse = m + std::log(sum);
        r.lse[row * hq + h] = lse;
        for (size_t j = 0; j < s.size(); ++j) {
          double p = std::exp(s[j] - lse);
          if (dropout.rate > 0) {
            double u = naiveAttentionUniform(
                dropout.seed, dropout.offset, dropout.stream,
                static_cast<uint64_t>(cuq[b]), static_cast<uint64_t>(i),
                static_cast<uint64_t>(h), static_cast<uint64_t>(hq), j);
            double applied = naiveAttentionAppliedRate(dropout.rate);
            p = u >= applied ? p / (1 - applied) : 0.0;
          }
          for (int64_t c = 0; c < d; ++c)
            r.out[(row * hq + h) * d + c] +=
                p * v.floats[((cuk[b] + static_cast<int64_t>(j)) * hkv + g) *
                                 d + c];
        }
      }
    }
  }
  return r;
}

std::vector<int64_t> offsets(const std::vector<int64_t> &lengths) {
  std::vector<int64_t> cu = {0};
  for (int64_t l : lengths)
    cu.push_back(cu.back() + l);
  return cu;
}

HostTensor cuTensor(const std::vector<int64_t> &cu) {
  return HostTensor::fromInts(ElementType::I32,
                              {static_cast<int64_t>(cu.size())}, cu);
}

const char *kProgram = R"(
func.func @f(%q: tensor<?x4x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %cuq: tensor<?xi32>, %cuk: tensor<?xi32>, %mk: tensor<?x1x16xf32>, %mv: tensor<?x1x16xf32>) -> (tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<?x4x16xf32>, tensor<?x4xf32>) {
  %o, %lse = ls2.attention %q, %k, %v, %cuq, %cuk : tensor<?x4x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4x16xf32>, tensor<?x4xf32>
  %o1, %lse1 = ls2.attention %q, %k, %v, %cuq, %cuk {causal} : tensor<?x4x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4x16xf32>, tensor<?x4xf32>
  %o2, %lse2 = ls2.attention %q, %mk, %mv, %cuq, %cuk {causal, scale = 1.000000e-01 : f32} : tensor<?x4x16xf32>, tensor<?x1x16xf32>, tensor<?x1x16xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4x16xf32>, tensor<?x4xf32>
  return %o, %lse, %o1, %lse1, %o2, %lse2 : tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<?x4x16xf32>, tensor<?x4xf32>
})";

/// lse compared where finite; -inf must match exactly.
void expectLse(const std::vector<double> &actual,
               const std::vector<double> &expected, double tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  std::vector<double> a, e;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (expected[i] == -kInf) {
      EXPECT_EQ(actual[i], -kInf) << "row-head " << i;
      continue;
    }
    a.push_back(actual[i]);
    e.push_back(expected[i]);
  }
  EXPECT_LE(relativeL2(a, e), tolerance);
}

/// The operands of an attention with dropout: q, k, v, the sequence
/// offsets, then the Philox seed and offset as i64 scalars.
std::vector<HostTensor> dropoutArgs(const HostTensor &q, const HostTensor &k,
                                    const HostTensor &v, const std::vector<int64_t> &cuq,
                                    const std::vector<int64_t> &cuk, const Dropout &dropout) {
  return {q, k, v, cuTensor(cuq), cuTensor(cuk),
          HostTensor::scalarInt(ElementType::I64, static_cast<int64_t>(dropout.seed)),
          HostTensor::scalarInt(ElementType::I64, static_cast<int64_t>(dropout.offset))};
}

} // namespace

TEST(ReferenceAttention, VarlenGqaMqaCausalBottomRight) {
  Program p = parseProgram(kProgram);
  std::mt19937 rng = testRng();
  // Key lengths 1, 3, 7, 33, an empty sequence, queries with no keys, and
  // Lq != Lk both ways (bottom-right causal alignment).
  std::vector<int64_t> lq = {1, 0, 3, 9, 20, 2}, lk = {1, 0, 7, 3, 33, 0};
  std::vector<int64_t> cuq = offsets(lq), cuk = offsets(lk);
  int64_t tq = cuq.back(), tk = cuk.back();
  HostTensor q = randomF32(rng, {tq, 4, 16}, -1, 1);
  HostTensor k = randomF32(rng, {tk, 2, 16}, -1, 1);
  HostTensor v = randomF32(rng, {tk, 2, 16}, -1, 1);
  HostTensor mk = randomF32(rng, {tk, 1, 16}, -1, 1);
  HostTensor mv = randomF32(rng, {tk, 1, 16}, -1, 1);
  const double defaultScale = 0.25; // 1/sqrt(16)
  AttentionResult e0 = naiveAttention(q, k, v, cuq, cuk, defaultScale, false);
  AttentionResult e1 = naiveAttention(q, k, v, cuq, cuk, defaultScale, true);
  AttentionResult e2 = naiveAttention(q, mk, mv, cuq, cuk,
                                      static_cast<double>(0.1f), true);
  std::vector<HostTensor> args = {q, k, v, cuTensor(cuq), cuTensor(cuk), mk, mv};
  auto r = p.run(Precision::F64, args);
  EXPECT_LE(relativeL2(r[0].floats, e0.out), kF64Tolerance);
  expectLse(r[1].floats, e0.lse, kF64Tolerance);
  EXPECT_LE(relativeL2(r[2].floats, e1.out), kF64Tolerance);
  expectLse(r[3].floats, e1.lse, kF64Tolerance);
  EXPECT_LE(relativeL2(r[4].floats, e2.out), kF64Tolerance);
  expectLse(r[5].floats, e2.lse, kF64Tolerance);
  // Sequence 3 (9 queries, 3 keys, causal): queries 0..5 see no key.
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t h = 0; h < 4; ++h) {
      int64_t row = cuq[3] + i;
      EXPECT_EQ(r[3].floats[row * 4 + h], -kInf);
      for (int c = 0; c < 16; ++c)
        EXPECT_EQ(r[2].floats[(row * 4 + h) * 16 + c], 0.0);
    }
  // Sequence 5 has no keys at all: output 0 and lse -inf even without causal.
  for (int64_t h = 0; h < 4; ++h)
    EXPECT_EQ(r[1].floats[cuq[5] * 4 + h], -kInf);
  auto r32 = p.run(Precision::F32, args);
  EXPECT_LE(relativeL2(r32[0].floats, e0.out), kF32Tolerance);
  expectLse(r32[1].floats, e0.lse, kF32Tolerance);
  EXPECT_LE(relativeL2(r32[2].floats, e1.out), kF32Tolerance);
  EXPECT_LE(relativeL2(r32[4].floats, e2.out), kF32Tolerance);
  expectLse(r32[5].floats, e2.lse, kF32Tolerance);
}

TEST(ReferenceAttention, KeyLengthsReadACacheOfRowRanges) {
  // A cache of 3 slots of 10 rows: sequence b reads key_lengths[b] rows
  // from cu_seqlens_k[b] (out of order, overlapping, one empty), as if those
  // rows were packed; causal aligns to the end of each range.
  Program p = parseProgram(R"(
func.func @f(%q: tensor<?x4x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %cuq: tensor<?xi32>, %starts: tensor<?xi32>, %n: tensor<?xi32>) -> (tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<?x4x16xf32>, tensor<?x4xf32>) {
  %o, %lse = ls2.attention %q, %k, %v, %cuq, %starts key_lengths(%n : tensor<?xi32>) : tensor<?x4x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4x16xf32>, tensor<?x4xf32>
  %o1, %lse1 = ls2.attention %q, %k, %v, %cuq, %starts key_lengths(%n : tensor<?xi32>) {causal} : tensor<?x4x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4x16xf32>, tensor<?x4xf32>
  return %o, %lse, %o1, %lse1 : tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<?x4x16xf32>, tensor<?x4xf32>
})");
  std::mt19937 rng = testRng();
  std::vector<int64_t> lq = {1, 2, 1, 3}, starts = {20, 3, 3, 10, 0}, lengths = {7, 5, 0, 9};
  std::vector<int64_t> cuq = offsets(lq);
  HostTensor q = randomF32(rng, {cuq.back(), 4, 16}, -1, 1);
  HostTensor k = randomF32(rng, {30, 2, 16}, -1, 1);
  HostTensor v = randomF32(rng, {30, 2, 16}, -1, 1);
  // The same keys packed: sequence b's range copied out in order.
  std::vector<int64_t> packedCu = {0};
  HostTensor pk = HostTensor::zeros(ElementType::F32, {21, 2, 16});
  HostTensor pv = HostTensor::zeros(ElementType::F32, {21, 2, 16});
  for (size_t b = 0; b < lengths.size(); ++b) {
    for (int64_t j = 0; j < lengths[b]; ++j)
      for (int64_t e = 0; e < 32; ++e) {
        pk.floats[(packedCu.back() + j) * 32 + e] = k.floats[(starts[b] + j) * 32 + e];
        pv.floats[(packedCu.back() + j) * 32 + e] = v.floats[(starts[b] + j) * 32 + e];
      }
    packedCu.push_back(packedCu.back() + lengths[b]);
  }
  AttentionResult e0 = naiveAttention(q, pk, pv, cuq, packedCu, 0.25, false);
  AttentionResult e1 = naiveAttention(q, pk, pv, cuq, packedCu, 0.25, true);
  auto r = p.run(Precision::F64, {q, k, v, cuTensor(cuq), cuTensor(starts), cuTensor(lengths)});
  EXPECT_LE(relativeL2(r[0].floats, e0.out), kF64Tolerance);
  expectLse(r[1].floats, e0.lse, kF64Tolerance);
  EXPECT_LE(relativeL2(r[2].floats, e1.out), kF64Tolerance);
  expectLse(r[3].floats, e1.lse, kF64Tolerance);
  EXPECT_EQ(r[1].floats[cuq[2] * 4], -kInf); // the empty range

  // A range past the cache's rows is refused, naming the sequence.
  std::vector<int64_t> bad = {7, 5, 0, 21};
  try {
    p.run(Precision::F64, {q, k, v, cuTensor(cuq), cuTensor(starts), cuTensor(bad)});
    ADD_FAILURE() << "a range past the key rows ran";
  } catch (const InterpreterError &e) {
    EXPECT_NE(std::string(e.what()).find("sequence 3's keys, key_lengths 21 rows from "
                                         "cu_seqlens_k 10, are not within the 30 key rows"),
              std::string::npos)
        << e.what();
  }
}

TEST(ReferenceAttention, DropoutUsesTheAttentionCounterLayout) {
  Program p = parseProgram(R"(
func.func @f(%q: tensor<?x4x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %cuq: tensor<?xi32>, %cuk: tensor<?xi32>, %seed: tensor<i64>, %offset: tensor<i64>) -> (tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<?x4x16xf32>) {
  %o, %lse = ls2.attention %q, %k, %v, %cuq, %cuk dropout(%seed, %offset) {causal, dropout_rate = 2.000000e-01 : f32, stream = 5} : tensor<?x4x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4x16xf32>, tensor<?x4xf32>
  %o1, %lse1 = ls2.attention %q, %k, %v, %cuq, %cuk dropout(%seed, %offset) {causal, dropout_rate = 2.000000e-01 : f32, stream = 6} : tensor<?x4x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4x16xf32>, tensor<?x4xf32>
  return %o, %lse, %o1 : tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<?x4x16xf32>
})");
  std::mt19937 rng = testRng();
  std::vector<int64_t> cuq = offsets({5, 33, 7}), cuk = offsets({7, 33, 3});
  HostTensor q = randomF32(rng, {cuq.back(), 4, 16});
  HostTensor k = randomF32(rng, {cuk.back(), 2, 16});
  HostTensor v = randomF32(rng, {cuk.back(), 2, 16});
  const uint64_t seed = 0xfeedface12345678ULL, offset = 1234;
  Dropout dropout{static_cast<double>(0.2f), seed, offset, 5};
  AttentionResult e = naiveAttention(q, k, v, cuq, cuk, 0.25, true, dropout);
  AttentionResult plain = naiveAttention(q, k, v, cuq, cuk, 0.25, true);
  std::vector<HostTensor> args = dropoutArgs(q, k, v, cuq, cuk, dropout);
  auto r = p.run(Precision::F64, args);
  EXPECT_LE(relativeL2(r[0].floats, e.out), kF64Tolerance);
  expectLse(r[1].floats, plain.lse, kF64Tolerance); // lse is before dropout
  EXPECT_GT(relativeL2(r[0].floats, plain.out), 0.05); // dropout did act
  EXPECT_NE(r[0].floats, r[2].floats); // another stream, another mask
  EXPECT_EQ(p.run(Precision::F64, args)[0].floats, r[0].floats);
  auto r32 = p.run(Precision::F32, args);
  EXPECT_LE(relativeL2(r32[0].floats, e.out), kF32Tolerance);
}

TEST(ReferenceAttention, DropoutAbove255Over256KeepsTheLargestNumber) {
  // The applied rate is at most 255/256: at 0.999 a probability whose
  // number is 255/256 is kept (scaled by 256), as the generated kernels and
  // cuDNN (given the applied rate) do; a rate compared with 0.999 itself
  // would drop everything.
  Program p = parseProgram(R"(
func.func @f(%q: tensor<?x2x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %cuq: tensor<?xi32>, %cuk: tensor<?xi32>, %seed: tensor<i64>, %offset: tensor<i64>) -> (tensor<?x2x16xf32>, tensor<?x2xf32>) {
  %o, %lse = ls2.attention %q, %k, %v, %cuq, %cuk dropout(%seed, %offset) {dropout_rate = 9.990000e-01 : f32, stream = 3} : tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x2x16xf32>, tensor<?x2xf32>
  return %o, %lse : tensor<?x2x16xf32>, tensor<?x2xf32>
})");
  std::mt19937 rng = testRng();
  std::vector<int64_t> cu = offsets({40, 64});
  HostTensor q = randomF32(rng, {cu.back(), 2, 16});
  HostTensor k = randomF32(rng, {cu.back(), 2, 16});
  HostTensor v = randomF32(rng, {cu.back(), 2, 16});
  const uint64_t seed = 77, offset = 5;
  Dropout dropout{static_cast<double>(0.999f), seed, offset, 3};
  AttentionResult e = naiveAttention(q, k, v, cu, cu, 0.25, false, dropout);
  std::vector<HostTensor> args = dropoutArgs(q, k, v, cu, cu, dropout);
  auto r = p.run(Precision::F64, args);
  EXPECT_LE(relativeL2(r[0].floats, e.out), kF64Tolerance);
  // About 1 in 256 of the 2 x (40^2 + 64^2) probabilities survive.
  EXPECT_GT(std::count_if(r[0].floats.begin(), r[0].floats.end(),
                          [](double x) { return x != 0.0; }),
            0);
}

TEST(ReferenceAttention, HalfInputsStayWithinHalfTolerance) {
  Program p = parseProgram(R"(
func.func @f(%q: tensor<?x2x8xbf16>, %k: tensor<?x2x8xbf16>, %v: tensor<?x2x8xbf16>, %cu: tensor<3xi32>) -> (tensor<?x2x8xbf16>, tensor<?x2xf32>) {
  %o, %lse = ls2.attention %q, %k, %v, %cu, %cu {causal, scale = 5.000000e-01 : f32} : tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<3xi32>, tensor<3xi32> -> tensor<?x2x8xbf16>, tensor<?x2xf32>
  return %o, %lse : tensor<?x2x8xbf16>, tensor<?x2xf32>
})");
  std::mt19937 rng = testRng();
  std::vector<int64_t> cu = offsets({6, 11});
  auto bf16 = [&](std::vector<int64_t> shape) {
    std::vector<double> x = uniform(rng, count(shape), -2, 2);
    for (double &e : x)
      e = std::round(e * 32) / 32; // bf16 values
    return HostTensor::fromFloats(ElementType::BF16, std::move(shape), x);
  };
  HostTensor q = bf16({17, 2, 8}), k = bf16({17, 2, 8}), v = bf16({17, 2, 8});
  AttentionResult e = naiveAttention(q, k, v, cu, cu, 0.5, true);
  auto r = p.run(Precision::F32, {q, k, v, cuTensor(cu)});
  EXPECT_LE(relativeL2(r[0].floats, e.out), kBF16Tolerance);
  expectLse(r[1].floats, e.lse, kF32Tolerance);
}

TEST(ReferenceAttention, MalformedCuSeqlensAreErrors) {
  Program p = parseProgram(kProgram);
  std::mt19937 rng = testRng();
  HostTensor q = randomF32(rng, {6, 4, 16}), k = randomF32(rng, {6, 2, 16});
  HostTensor mk = randomF32(rng, {6, 1, 16});
  struct Case {
    std::vector<int64_t> cuq, cuk;
    std::string message;
  };
  std::vector<Case> cases = {
      {{1, 6}, {0, 6}, "cu_seqlens_q[0] is 1; it must be 0"},
      {{0, 4, 2, 6}, {0, 2, 4, 6}, "cu_seqlens_q decreases at entry 2 (4 then 2)"},
      {{0, 3, 6}, {0, 3, 5}, "cu_seqlens_k ends at 5 but there are 6 tokens"},
      {{0, 6}, {0, 3, 6},
       "cu_seqlens_q i32[2] and cu_seqlens_k i32[3] must have the same length"},
      {{}, {}, "cu_seqlens_q must be [batch + 1] with at least one entry"},
  };
  for (const Case &c : cases) {
    try {
      p.run(Precision::F64, {q, k, k, cuTensor(c.cuq), cuTensor(c.cuk), mk, mk});
      ADD_FAILURE() << "no error for " << c.message;
    } catch (const InterpreterError &e) {
      std::string what = e.what();
      EXPECT_NE(what.find("'ls2.attention' op " + c.message), std::string::npos)
          << what;
      EXPECT_EQ(what.rfind("test.mlir:3:", 0), 0u) << what;
    }
  }
}
