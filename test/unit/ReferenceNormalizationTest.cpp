//===- ReferenceNormalizationTest.cpp - layer_norm, softmax, cross_entropy ===//
#include "ReferenceTestUtil.h"

#include <functional>
#include <limits>

using namespace ls2c::reference;
using namespace ls2c::reference::testing;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kEps = static_cast<double>(1e-5f); // the f32 attribute's value

struct LayerNormExpected {
  std::vector<double> y, mean, rstd;
};

LayerNormExpected naiveLayerNorm(const std::vector<double> &x, int64_t h,
                                 const std::vector<double> &gamma,
                                 const std::vector<double> &beta) {
  LayerNormExpected e;
  for (size_t r = 0; r * h < x.size(); ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < h; ++i)
      mean += x[r * h + i];
    mean /= h;
    for (int64_t i = 0; i < h; ++i)
      var += (x[r * h + i] - mean) * (x[r * h + i] - mean);
    var /= h;
    double rstd = 1 / std::sqrt(var + kEps);
    for (int64_t i = 0; i < h; ++i)
      e.y.push_back((x[r * h + i] - mean) * rstd * gamma[i] + beta[i]);
    e.mean.push_back(mean);
    e.rstd.push_back(rstd);
  }
  return e;
}

} // namespace

TEST(ReferenceLayerNorm, RandomRowsAndAConstantRow) {
  Program p = parseProgram(R"(
func.func @f(%x: tensor<?x24xf32>, %g: tensor<24xf32>, %b: tensor<24xf32>) -> (tensor<?x24xf32>, tensor<?xf32>, tensor<?xf32>) {
  %y, %mean, %rstd = ls2.layer_norm %x, %g, %b {epsilon = 9.99999974E-6 : f32} : tensor<?x24xf32>, tensor<24xf32>, tensor<24xf32>
  return %y, %mean, %rstd : tensor<?x24xf32>, tensor<?xf32>, tensor<?xf32>
})");
  std::mt19937 rng = testRng();
  HostTensor x = randomF32(rng, {6, 24}, -2, 3);
  for (int i = 0; i < 24; ++i)
    x.floats[3 * 24 + i] = 1.75; // var 0: the row normalizes to beta
  HostTensor g = randomF32(rng, {24}, 0.5, 1.5), b = randomF32(rng, {24});
  LayerNormExpected e = naiveLayerNorm(x.floats, 24, g.floats, b.floats);
  auto r = p.run(Precision::F64, {x, g, b});
  EXPECT_LE(relativeL2(r[0].floats, e.y), kF64Tolerance);
  EXPECT_LE(relativeL2(r[1].floats, e.mean), kF64Tolerance);
  EXPECT_LE(relativeL2(r[2].floats, e.rstd), kF64Tolerance);
  for (int i = 0; i < 24; ++i)
    EXPECT_EQ(r[0].floats[3 * 24 + i], b.floats[i]);
  EXPECT_EQ(r[2].floats[3], 1 / std::sqrt(kEps));
  auto r32 = p.run(Precision::F32, {x, g, b});
  EXPECT_LE(relativeL2(r32[0].floats, e.y), kF32Tolerance);
  EXPECT_LE(relativeL2(r32[1].floats, e.mean), kF32Tolerance);
  EXPECT_LE(relativeL2(r32[2].floats, e.rstd), kF32Tolerance);
  for (int i = 0; i < 24; ++i)
    EXPECT_EQ(r32[0].floats[3 * 24 + i], b.floats[i]);
}

TEST(ReferenceLayerNorm, HalfRowsNear3000KeepTheirSpread) {
  // f16 values near +-3000 (spacing 2) with a spread of a few units: the
  // variance (~8) is 1e-6 of the mean square, which a one-pass f32
  // E[x^2] - E[x]^2 would lose entirely.
  Program p = parseProgram(R"(
func.func @f(%x: tensor<?x64xf16>, %g: tensor<64xf16>, %b: tensor<64xf16>) -> (tensor<?x64xf16>, tensor<?xf32>, tensor<?xf32>) {
  %y, %mean, %rstd = ls2.layer_norm %x, %g, %b {epsilon = 9.99999974E-6 : f32} : tensor<?x64xf16>, tensor<64xf16>, tensor<64xf16>
  return %y, %mean, %rstd : tensor<?x64xf16>, tensor<?xf32>, tensor<?xf32>
})");
  std::mt19937 rng = testRng();
  std::uniform_int_distribution<int> step(-3, 3);
  std::vector<double> x;
  for (int r = 0; r < 4; ++r)
    for (int i = 0; i < 64; ++i)
      x.push_back((r % 2 ? -3000.0 : 3000.0) + 2.0 * step(rng));
  std::vector<double> g(64), b(64);
  for (int i = 0; i < 64; ++i) {
    g[i] = 1.0 + (i % 8) / 16.0; // f16 values
    b[i] = (i % 5 - 2) / 8.0;
  }
  LayerNormExpected e = naiveLayerNorm(x, 64, g, b);
  auto r = p.run(Precision::F32,
                 {HostTensor::fromFloats(ElementType::F16, {4, 64}, x),
                  HostTensor::fromFloats(ElementType::F16, {64}, g),
                  HostTensor::fromFloats(ElementType::F16, {64}, b)});
  EXPECT_LE(relativeL2(r[0].floats, e.y), kF16Tolerance);
  EXPECT_LE(relativeL2(r[1].floats, e.mean), kF32Tolerance);
  EXPECT_LE(relativeL2(r[2].floats, e.rstd), kF32Tolerance);
  // The normalized rows have unit spread, not zeros or garbage.
  double squares = 0;
  for (int i = 0; i < 64; ++i)
    squares += (r[0].floats[i] - b[i]) / g[i] * (r[0].floats[i] - b[i]) / g[i];
  EXPECT_NEAR(squares / 64, 1.0, 0.01);
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

namespace {

/// Softmax of `scale * x + add` over the last dim `k`, keeping `keep`
/// positions; rows with nothing kept (or only -inf) are zeros.
std::vector<double> naiveSoftmax(const std::vector<double> &x, int64_t k,
                                 double scale,
                                 const std::function<double(size_t)> &add,
                                 const std::function<bool(size_t)> &keep) {
  std::vector<double> y(x.size(), 0.0);
  for (size_t r = 0; r * k < x.size(); ++r) {
    double best = -kInf;
    for (int64_t j = 0; j < k; ++j) {
      size_t e = r * k + j;
      if (keep(e))
        best = std::max(best, scale * x[e] + add(e));
    }
    if (best == -kInf)
      continue;
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) {
      size_t e = r * k + j;
      if (keep(e))
        sum += std::exp(scale * x[e] + add(e) - best);
    }
    for (int64_t j = 0; j < k; ++j) {
      size_t e = r * k + j;
      if (keep(e))
        y[e] = std::exp(scale * x[e] + add(e) - best) / sum;
    }
  }
  return y;
}

} // namespace

TEST(ReferenceSoftmax, ScaleAndMasksWithBroadcastDims) {
  Program p = parseProgram(R"(
func.func @f(%x: tensor<?x4x9xf32>, %add: tensor<?x1x9xf32>, %keep: tensor<1x4x9xi1>) -> (tensor<?x4x9xf32>, tensor<?x4x9xf32>, tensor<?x4x9xf32>) {
  %0 = ls2.softmax %x {scale = 5.000000e-01 : f32} : tensor<?x4x9xf32> -> tensor<?x4x9xf32>
  %1 = ls2.softmax %x mask %add : tensor<?x1x9xf32> : tensor<?x4x9xf32> -> tensor<?x4x9xf32>
  %2 = ls2.softmax %x mask %keep : tensor<1x4x9xi1> {scale = 2.000000e+00 : f32} : tensor<?x4x9xf32> -> tensor<?x4x9xf32>
  return %0, %1, %2 : tensor<?x4x9xf32>, tensor<?x4x9xf32>, tensor<?x4x9xf32>
})");
  std::mt19937 rng = testRng();
  const int64_t b = 3;
  HostTensor x = randomF32(rng, {b, 4, 9}, -3, 3);
  HostTensor add = randomF32(rng, {b, 1, 9}, -2, 0);
  add.floats[4] = -kInf; // key 4 of batch 0 is masked out
  for (int j = 0; j < 9; ++j)
    add.floats[2 * 9 + j] = -kInf; // batch 2 sees no key at all
  std::vector<int64_t> keepBits(36);
  for (int i = 0; i < 36; ++i)
    keepBits[i] = (i * 7) % 3 != 0;
  for (int j = 0; j < 9; ++j)
    keepBits[9 + j] = 0; // query row 1 keeps nothing
  HostTensor keep = HostTensor::fromInts(ElementType::I1, {1, 4, 9}, keepBits);
  auto none = [](size_t) { return 0.0; };
  auto all = [](size_t) { return true; };
  auto addAt = [&](size_t e) { return add.floats[(e / 36) * 9 + e % 9]; };
  auto keepAt = [&](size_t e) { return keepBits[e % 36] != 0; };
  std::vector<double> e0 = naiveSoftmax(x.floats, 9, 0.5, none, all);
  std::vector<double> e1 = naiveSoftmax(x.floats, 9, 1.0, addAt, all);
  std::vector<double> e2 = naiveSoftmax(x.floats, 9, 2.0, none, keepAt);
  auto r = p.run(Precision::F64, {x, add, keep});
  EXPECT_LE(relativeL2(r[0].floats, e0), kF64Tolerance);
  EXPECT_LE(relativeL2(r[1].floats, e1), kF64Tolerance);
  EXPECT_LE(relativeL2(r[2].floats, e2), kF64Tolerance);
  for (int i = 0; i < 36; ++i)
    EXPECT_EQ(r[1].floats[2 * 36 + i], 0.0); // all -inf: zeros, not NaN
  for (int64_t s = 0; s < b; ++s)
    for (int j = 0; j < 9; ++j)
      EXPECT_EQ(r[2].floats[s * 36 + 9 + j], 0.0); // nothing kept: zeros
  auto r32 = p.run(Precision::F32, {x, add, keep});
  EXPECT_LE(relativeL2(r32[0].floats, e0), kF32Tolerance);
  EXPECT_LE(relativeL2(r32[1].floats, e1), kF32Tolerance);
  EXPECT_LE(relativeL2(r32[2].floats, e2), kF32Tolerance);
}

TEST(ReferenceSoftmax, CausalIsBottomRightAligned) {
  Program p = parseProgram(R"(
func.func @f(%wide: tensor<2x4x9xf32>, %tall: tensor<5x3xf32>) -> (tensor<2x4x9xf32>, tensor<5x3xf16>) {
  %0 = ls2.softmax %wide {causal} : tensor<2x4x9xf32> -> tensor<2x4x9xf32>
  %1 = ls2.softmax %tall {causal, scale = 2.500000e-01 : f32} : tensor<5x3xf32> -> tensor<5x3xf16>
  return %0, %1 : tensor<2x4x9xf32>, tensor<5x3xf16>
})");
  std::mt19937 rng = testRng();
  HostTensor wide = randomF32(rng, {2, 4, 9}, -3, 3);
  HostTensor tall = randomF32(rng, {5, 3}, -3, 3);
  auto none = [](size_t) { return 0.0; };
  // 4 queries, 9 keys: query i sees keys j <= i + 5.
  std::vector<double> e0 = naiveSoftmax(
      wide.floats, 9, 1.0, none,
      [](size_t e) { return int64_t(e % 9) <= int64_t(e / 9 % 4) + 5; });
  // 5 queries, 3 keys: query i sees keys j <= i - 2; queries 0, 1 see none.
  std::vector<double> e1 = naiveSoftmax(
      tall.floats, 3, 0.25, none,
      [](size_t e) { return int64_t(e % 3) <= int64_t(e / 3) - 2; });
  auto r = p.run(Precision::F64, {wide, tall});
  EXPECT_LE(relativeL2(r[0].floats, e0), kF64Tolerance);
  EXPECT_LE(relativeL2(r[1].floats, e1), kF64Tolerance);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(r[1].floats[i], 0.0);
  EXPECT_EQ(r[1].floats[6], 1.0); // query 2 sees key 0 only
  r = p.run(Precision::F32, {wide, tall});
  EXPECT_LE(relativeL2(r[0].floats, e0), kF32Tolerance);
  EXPECT_LE(relativeL2(r[1].floats, e1), kF16Tolerance);
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

namespace {

/// torch.nn.functional.cross_entropy's per-row loss with label smoothing.
double naiveRowLoss(const double *x, int64_t c, int64_t t, double eps) {
  double best = -kInf;
  for (int64_t j = 0; j < c; ++j)
    best = std::max(best, x[j]);
  double sum = 0;
  for (int64_t j = 0; j < c; ++j)
    sum += std::exp(x[j] - best);
  double lse = best + std::log(sum);
  double smooth = 0; // -sum_j log p_j / C
  for (int64_t j = 0; j < c; ++j)
    smooth += (lse - x[j]) / c;
  return (1 - eps) * (lse - x[t]) + eps * smooth;
}

const char *kCrossEntropyProgram = R"(
func.func @f(%logits: tensor<?x7xf32>, %t: tensor<?xi32>) -> (tensor<f32>, tensor<f32>, tensor<?xf32>) {
  %0 = ls2.cross_entropy %logits, %t {ignore_index = 1 : i64, label_smoothing = 2.000000e-01 : f32} : tensor<?x7xf32>, tensor<?xi32> -> tensor<f32>
  %1 = ls2.cross_entropy %logits, %t {ignore_index = 1 : i64, label_smoothing = 2.000000e-01 : f32, reduction = #ls2<loss_reduction sum>} : tensor<?x7xf32>, tensor<?xi32> -> tensor<f32>
  %2 = ls2.cross_entropy %logits, %t {ignore_index = 1 : i64, label_smoothing = 2.000000e-01 : f32, reduction = #ls2<loss_reduction none>} : tensor<?x7xf32>, tensor<?xi32> -> tensor<?xf32>
  return %0, %1, %2 : tensor<f32>, tensor<f32>, tensor<?xf32>
})";

} // namespace

TEST(ReferenceCrossEntropy, IgnoredRowsWithLabelSmoothingBugReport) {
  // logits 6x7, targets [2, P, 0, P, 6, 3] with ignore_index P = 1 and
  // label smoothing 0.2: the loss is the loss of the 4 real rows.
  Program p = parseProgram(kCrossEntropyProgram);
  std::mt19937 rng = testRng();
  const double eps = static_cast<double>(0.2f);
  HostTensor logits = randomF32(rng, {6, 7}, -4, 4);
  std::vector<int64_t> targets = {2, 1, 0, 1, 6, 3};
  std::vector<double> rows;
  double sum = 0;
  for (int r = 0; r < 6; ++r) {
    double loss = targets[r] == 1 ? 0.0
                                  : naiveRowLoss(logits.floats.data() + r * 7,
                                                 7, targets[r], eps);
    rows.push_back(loss);
    sum += loss;
  }
  auto r = p.run(Precision::F64,
                 {logits, HostTensor::fromInts(ElementType::I32, {6}, targets)});
  EXPECT_NEAR(r[0].floats[0], sum / 4, 1e-12 * sum);
  EXPECT_NEAR(r[1].floats[0], sum, 1e-12 * sum);
  EXPECT_LE(relativeL2(r[2].floats, rows), kF64Tolerance);
  EXPECT_EQ(r[2].floats[1], 0.0);
  EXPECT_EQ(r[2].floats[3], 0.0);
  // The same as the 4 real rows alone.
  std::vector<double> real;
  std::vector<int64_t> realTargets;
  for (int row : {0, 2, 4, 5}) {
    real.insert(real.end(), logits.floats.begin() + row * 7,
                logits.floats.begin() + row * 7 + 7);
    realTargets.push_back(targets[row]);
  }
  auto alone = p.run(
      Precision::F64,
      {HostTensor::fromFloats(ElementType::F32, {4, 7}, real),
       HostTensor::fromInts(ElementType::I32, {4}, realTargets)});
  EXPECT_NEAR(alone[0].floats[0], r[0].floats[0], 1e-14);
  auto r32 = p.run(Precision::F32, {logits, HostTensor::fromInts(
                                                ElementType::I32, {6}, targets)});
  EXPECT_NEAR(r32[0].floats[0], sum / 4, kF32Tolerance * sum / 4);
}

TEST(ReferenceCrossEntropy, AllIgnoredGivesZeroAndBadTargetsThrow) {
  Program p = parseProgram(kCrossEntropyProgram);
  std::mt19937 rng = testRng();
  HostTensor logits = randomF32(rng, {3, 7}, -4, 4);
  auto r = p.run(Precision::F32,
                 {logits, HostTensor::fromInts(ElementType::I32, {3}, {1, 1, 1})});
  EXPECT_EQ(r[0].floats[0], 0.0); // mean of nothing: 0, not NaN
  EXPECT_EQ(r[1].floats[0], 0.0);
  EXPECT_EQ(r[2].floats, (std::vector<double>{0, 0, 0}));
  // No rows at all: also 0.
  r = p.run(Precision::F32, {HostTensor::zeros(ElementType::F32, {0, 7}),
                             HostTensor::zeros(ElementType::I32, {0})});
  EXPECT_EQ(r[0].floats[0], 0.0);
  for (int64_t bad : {7, -100}) {
    try {
      p.run(Precision::F64,
            {logits, HostTensor::fromInts(ElementType::I32, {3}, {0, bad, 2})});
      FAIL() << "target " << bad << " did not throw";
    } catch (const InterpreterError &e) {
      EXPECT_NE(std::string(e.what()).find(
                    "'ls2.cross_entropy' op target " + std::to_string(bad) +
                    " of row 1 is outside the classes [0, 7)"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(ReferenceCrossEntropy, HalfLogitsComputeInWidePrecision) {
  Program p = parseProgram(R"(
func.func @f(%logits: tensor<?x50xbf16>, %t: tensor<?xi64>) -> tensor<f32> {
  %0 = ls2.cross_entropy %logits, %t : tensor<?x50xbf16>, tensor<?xi64> -> tensor<f32>
  return %0 : tensor<f32>
})");
  std::mt19937 rng = testRng();
  std::vector<double> x = uniform(rng, 8 * 50, -8, 8);
  for (double &v : x)
    v = std::round(v * 16) / 16; // bf16 values
  std::vector<int64_t> t;
  double sum = 0;
  for (int r = 0; r < 8; ++r) {
    t.push_back((r * 13) % 50);
    sum += naiveRowLoss(x.data() + r * 50, 50, t.back(), 0.0);
  }
  auto r = p.run(Precision::F32,
                 {HostTensor::fromFloats(ElementType::BF16, {8, 50}, x),
                  HostTensor::fromInts(ElementType::I64, {8}, t)});
  EXPECT_NEAR(r[0].floats[0], sum / 8, kF32Tolerance * sum / 8);
}
