//===- ReferenceShapeTest.cpp - injective ops, reductions, matmul, gather -===//
#include "ReferenceTestUtil.h"

#include <limits>

using namespace ls2c::reference;
using namespace ls2c::reference::testing;

TEST(ReferenceShape, BroadcastMapsDimsAndRepeatsSizeOne) {
  Program p = parseProgram(R"(
func.func @f(%b: tensor<3xf32>, %m: tensor<?x1xi32>, %s: tensor<f32>, %like: tensor<?x2x3xf32>) -> (tensor<?x2x3xf32>, tensor<?x4xi32>, tensor<2x?xf32>) {
  %t = ls2.dim %like[0] : tensor<?x2x3xf32>
  %0 = ls2.broadcast %b [%t] {dims = array<i64: 2>} : tensor<3xf32> -> tensor<?x2x3xf32>
  %1 = ls2.broadcast %m [%t] {dims = array<i64: 0, 1>} : tensor<?x1xi32> -> tensor<?x4xi32>
  %2 = ls2.broadcast %s [%t] {dims = array<i64>} : tensor<f32> -> tensor<2x?xf32>
  return %0, %1, %2 : tensor<?x2x3xf32>, tensor<?x4xi32>, tensor<2x?xf32>
})");
  std::mt19937 rng = testRng();
  HostTensor b = randomF32(rng, {3});
  HostTensor m = HostTensor::fromInts(ElementType::I32, {5, 1}, {1, 2, 3, 4, 5});
  HostTensor s = HostTensor::scalarFloat(ElementType::F32, 0.5);
  auto r = p.run(Precision::F64,
                 {b, m, s, HostTensor::zeros(ElementType::F32, {5, 2, 3})});
  ASSERT_EQ(r[0].shape, (std::vector<int64_t>{5, 2, 3}));
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(r[0].floats[(i * 2 + j) * 3 + k], b.floats[k]);
  ASSERT_EQ(r[1].shape, (std::vector<int64_t>{5, 4}));
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(r[1].ints[i * 4 + j], i + 1);
  EXPECT_EQ(r[2].shape, (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(r[2].floats, std::vector<double>(10, 0.5));
  // An input dim that is neither 1 nor the result's is an error at run time.
  std::string e = errorOf(
      p, {b, HostTensor::zeros(ElementType::I32, {4, 1}), s,
          HostTensor::zeros(ElementType::F32, {5, 2, 3})});
  EXPECT_NE(e.find("'ls2.broadcast' op input dim 0 has size 4 at run time; it "
                   "must be 1 or 5"),
            std::string::npos)
      << e;
}

TEST(ReferenceShape, ReshapeResolvesTheDynamicDim) {
  Program p = parseProgram(R"(
func.func @f(%x: tensor<?x64xf32>) -> (tensor<?x4x16xf32>, tensor<?x128xf32>) {
  %0 = ls2.reshape %x : tensor<?x64xf32> -> tensor<?x4x16xf32>
  %1 = ls2.reshape %x : tensor<?x64xf32> -> tensor<?x128xf32>
  return %0, %1 : tensor<?x4x16xf32>, tensor<?x128xf32>
})");
  std::mt19937 rng = testRng();
  HostTensor x = randomF32(rng, {6, 64});
  auto r = p.run(Precision::F64, {x});
  EXPECT_EQ(r[0].shape, (std::vector<int64_t>{6, 4, 16}));
  EXPECT_EQ(r[0].floats, x.floats);
  EXPECT_EQ(r[1].shape, (std::vector<int64_t>{3, 128}));
  EXPECT_EQ(r[1].floats, x.floats);
  // 5 * 64 elements are not a whole number of 128-element rows.
  std::string e = errorOf(p, {randomF32(rng, {5, 64})});
  EXPECT_NE(e.find("'ls2.reshape' op input f32[5, 64] has 320 elements, not "
                   "divisible by the result's static dims' product 128"),
            std::string::npos)
      << e;
  // Zero tokens are fine.
  r = p.run(Precision::F64, {HostTensor::zeros(ElementType::F32, {0, 64})});
  EXPECT_EQ(r[0].shape, (std::vector<int64_t>{0, 4, 16}));
}

TEST(ReferenceShape, TransposeSliceConcat) {
  Program p = parseProgram(R"(
func.func @f(%x: tensor<?x3x4xf32>, %c: tensor<2x5xi64>) -> (tensor<4x?x3xf32>, tensor<?x3x2xf32>, tensor<?x3x6xf32>, tensor<4x5xi64>) {
  %0 = ls2.transpose %x [2, 0, 1] : tensor<?x3x4xf32> -> tensor<4x?x3xf32>
  %1 = ls2.slice %x {axis = 2, start = 1, limit = 3} : tensor<?x3x4xf32> -> tensor<?x3x2xf32>
  %2 = ls2.concat %1, %x {axis = 2} : (tensor<?x3x2xf32>, tensor<?x3x4xf32>) -> tensor<?x3x6xf32>
  %3 = ls2.concat %c, %c {axis = 0} : (tensor<2x5xi64>, tensor<2x5xi64>) -> tensor<4x5xi64>
  return %0, %1, %2, %3 : tensor<4x?x3xf32>, tensor<?x3x2xf32>, tensor<?x3x6xf32>, tensor<4x5xi64>
})");
  std::mt19937 rng = testRng();
  const int n = 2;
  HostTensor x = randomF32(rng, {n, 3, 4});
  std::vector<int64_t> cv(10);
  for (int i = 0; i < 10; ++i)
    cv[i] = i * 7 - 20;
  HostTensor c = HostTensor::fromInts(ElementType::I64, {2, 5}, cv);
  auto r = p.run(Precision::F64, {x, c});
  auto X = [&](int i, int j, int k) { return x.floats[(i * 3 + j) * 4 + k]; };
  ASSERT_EQ(r[0].shape, (std::vector<int64_t>{4, n, 3}));
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < 3; ++j)
        EXPECT_EQ(r[0].floats[(k * n + i) * 3 + j], X(i, j, k));
  ASSERT_EQ(r[1].shape, (std::vector<int64_t>{n, 3, 2}));
  ASSERT_EQ(r[2].shape, (std::vector<int64_t>{n, 3, 6}));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 2; ++k) {
        EXPECT_EQ(r[1].floats[(i * 3 + j) * 2 + k], X(i, j, k + 1));
        EXPECT_EQ(r[2].floats[(i * 3 + j) * 6 + k], X(i, j, k + 1));
      }
      for (int k = 0; k < 4; ++k)
        EXPECT_EQ(r[2].floats[(i * 3 + j) * 6 + 2 + k], X(i, j, k));
    }
  std::vector<int64_t> twice = cv;
  twice.insert(twice.end(), cv.begin(), cv.end());
  EXPECT_EQ(r[3].ints, twice);
}

TEST(ReferenceShape, ConcatChecksRunTimeDims) {
  Program p = parseProgram(R"(
func.func @f(%a: tensor<?x2xf32>, %b: tensor<?x2xf32>) -> tensor<?x4xf32> {
  %0 = ls2.concat %a, %b {axis = 1} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
})");
  std::string e = errorOf(p, {HostTensor::zeros(ElementType::F32, {3, 2}),
                              HostTensor::zeros(ElementType::F32, {4, 2})});
  EXPECT_NE(e.find("'ls2.concat' op input 1 is f32[4, 2] at run time"),
            std::string::npos)
      << e;
}

TEST(ReferenceShape, IotaCountsAlongItsDimension) {
  Program p = parseProgram(R"(
func.func @f(%x: tensor<?x3xf32>) -> (tensor<?x3xi32>, tensor<2x?xf32>) {
  %t = ls2.dim %x[0] : tensor<?x3xf32>
  %0 = ls2.iota [%t] {dimension = 0} : tensor<?x3xi32>
  %1 = ls2.iota [%t] {dimension = 1} : tensor<2x?xf32>
  return %0, %1 : tensor<?x3xi32>, tensor<2x?xf32>
})");
  auto r = p.run(Precision::F64, {HostTensor::zeros(ElementType::F32, {4, 3})});
  EXPECT_EQ(r[0].ints,
            (std::vector<int64_t>{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3}));
  EXPECT_EQ(r[1].floats, (std::vector<double>{0, 1, 2, 3, 0, 1, 2, 3}));
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

TEST(ReferenceReduce, SumAndMaxOverSizes1To33) {
  Program p = parseProgram(R"(
func.func @f(%x: tensor<?x?x5xf32>) -> (tensor<?x5xf32>, tensor<?x1x1xf32>, tensor<?x5xf32>, tensor<1x?x5xf32>) {
  %0 = ls2.reduce_sum %x [1] : tensor<?x?x5xf32> -> tensor<?x5xf32>
  %1 = ls2.reduce_sum %x [1, 2] {keep_dims} : tensor<?x?x5xf32> -> tensor<?x1x1xf32>
  %2 = ls2.reduce_max %x [1] : tensor<?x?x5xf32> -> tensor<?x5xf32>
  %3 = ls2.reduce_max %x [0] {keep_dims} : tensor<?x?x5xf32> -> tensor<1x?x5xf32>
  return %0, %1, %2, %3 : tensor<?x5xf32>, tensor<?x1x1xf32>, tensor<?x5xf32>, tensor<1x?x5xf32>
})");
  std::mt19937 rng = testRng();
  for (int64_t n : {1, 3, 7, 33}) {
    SCOPED_TRACE("reduced size " + std::to_string(n));
    const int64_t b = 2;
    HostTensor x = randomF32(rng, {b, n, 5}, -3, 3);
    auto X = [&](int64_t i, int64_t j, int64_t k) {
      return x.floats[(i * n + j) * 5 + k];
    };
    std::vector<double> sum1, sum12, max1, max0;
    for (int64_t i = 0; i < b; ++i) {
      double total = 0;
      for (int64_t k = 0; k < 5; ++k) {
        double s = 0, m = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < n; ++j) {
          s += X(i, j, k);
          m = std::max(m, X(i, j, k));
        }
        sum1.push_back(s);
        max1.push_back(m);
      }
      for (int64_t j = 0; j < n; ++j)
        for (int64_t k = 0; k < 5; ++k)
          total += X(i, j, k);
      sum12.push_back(total);
    }
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < 5; ++k)
        max0.push_back(std::max(X(0, j, k), X(1, j, k)));
    auto r = p.run(Precision::F64, {x});
    EXPECT_EQ(r[0].shape, (std::vector<int64_t>{b, 5}));
    EXPECT_LE(relativeL2(r[0].floats, sum1), kF64Tolerance);
    EXPECT_EQ(r[1].shape, (std::vector<int64_t>{b, 1, 1}));
    EXPECT_LE(relativeL2(r[1].floats, sum12), kF64Tolerance);
    EXPECT_EQ(r[2].floats, max1);
    EXPECT_EQ(r[3].shape, (std::vector<int64_t>{1, n, 5}));
    EXPECT_EQ(r[3].floats, max0);
    auto r32 = p.run(Precision::F32, {x});
    EXPECT_LE(relativeL2(r32[0].floats, sum1), kF32Tolerance);
    EXPECT_LE(relativeL2(r32[1].floats, sum12), kF32Tolerance);
  }
}

TEST(ReferenceReduce, EmptyReductionsAndIntegers) {
  Program p = parseProgram(R"(
func.func @f(%x: tensor<3x?xf32>, %i: tensor<3x?xi32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xi32>, tensor<3xi32>) {
  %0 = ls2.reduce_sum %x [1] : tensor<3x?xf32> -> tensor<3xf32>
  %1 = ls2.reduce_max %x [1] : tensor<3x?xf32> -> tensor<3xf32>
  %2 = ls2.reduce_sum %i [1] : tensor<3x?xi32> -> tensor<3xi32>
  %3 = ls2.reduce_max %i [1] : tensor<3x?xi32> -> tensor<3xi32>
  return %0, %1, %2, %3 : tensor<3xf32>, tensor<3xf32>, tensor<3xi32>, tensor<3xi32>
})");
  auto r = p.run(Precision::F32, {HostTensor::zeros(ElementType::F32, {3, 0}),
                                  HostTensor::zeros(ElementType::I32, {3, 0})});
  double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(r[0].floats, (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(r[1].floats, (std::vector<double>{-inf, -inf, -inf}));
  EXPECT_EQ(r[2].ints, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(r[3].ints, std::vector<int64_t>(3, -2147483648LL));
  HostTensor i = HostTensor::fromInts(ElementType::I32, {3, 2},
                                      {1, 2, -5, 3, 2147483647, 1});
  r = p.run(Precision::F32, {HostTensor::zeros(ElementType::F32, {3, 2}), i});
  EXPECT_EQ(r[2].ints, (std::vector<int64_t>{3, -2, -2147483648LL}));
  EXPECT_EQ(r[3].ints, (std::vector<int64_t>{2, 3, 2147483647}));
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

namespace {

/// C[b] = op(A[b]) op(B[b or shared]) with naive loops.
std::vector<double> naiveMatmul(const HostTensor &a, const HostTensor &b,
                                bool ta, bool tb) {
  size_t ra = a.shape.size(), rb = b.shape.size();
  int64_t m = a.shape[ta ? ra - 1 : ra - 2], k = a.shape[ta ? ra - 2 : ra - 1];
  int64_t n = b.shape[tb ? rb - 2 : rb - 1];
  int64_t batches = 1;
  for (size_t i = 0; i + 2 < ra; ++i)
    batches *= a.shape[i];
  std::vector<double> c;
  for (int64_t s = 0; s < batches; ++s) {
    const double *A = a.floats.data() + s * m * k;
    const double *B = b.floats.data() + (rb == 2 ? 0 : s * k * n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < k; ++l)
          acc += (ta ? A[l * m + i] : A[i * k + l]) *
                 (tb ? B[j * k + l] : B[l * n + j]);
        c.push_back(acc);
      }
  }
  return c;
}

} // namespace

TEST(ReferenceMatmul, TransposeFlagsBatchesAndSharedB) {
  std::mt19937 rng = testRng();
  struct Case {
    bool ta, tb;
  };
  for (Case c : {Case{false, false}, Case{true, false}, Case{false, true},
                 Case{true, true}}) {
    SCOPED_TRACE(std::string("transpose_a=") + (c.ta ? "1" : "0") +
                 " transpose_b=" + (c.tb ? "1" : "0"));
    const int64_t batch = 3, m = 5, k = 7, n = 4;
    std::string flags;
    if (c.ta || c.tb)
      flags = std::string(" {") + (c.ta ? "transpose_a" : "") +
              (c.ta && c.tb ? ", " : "") + (c.tb ? "transpose_b" : "") + "}";
    std::string aT = c.ta ? "tensor<?x7x5xf32>" : "tensor<?x5x7xf32>";
    std::string bT = c.tb ? "tensor<?x4x7xf32>" : "tensor<?x7x4xf32>";
    std::string wT = c.tb ? "tensor<4x7xf32>" : "tensor<7x4xf32>";
    Program p = parseProgram(
        "func.func @f(%a: " + aT + ", %b: " + bT + ", %w: " + wT +
        ") -> (tensor<?x5x4xf32>, tensor<?x5x4xf32>) {\n"
        "  %0 = ls2.matmul %a, %b" + flags + " : " + aT + ", " + bT +
        " -> tensor<?x5x4xf32>\n"
        "  %1 = ls2.matmul %a, %w" + flags + " : " + aT + ", " + wT +
        " -> tensor<?x5x4xf32>\n"
        "  return %0, %1 : tensor<?x5x4xf32>, tensor<?x5x4xf32>\n}\n");
    HostTensor a = randomF32(rng, c.ta ? std::vector<int64_t>{batch, k, m}
                                       : std::vector<int64_t>{batch, m, k});
    HostTensor b = randomF32(rng, c.tb ? std::vector<int64_t>{batch, n, k}
                                       : std::vector<int64_t>{batch, k, n});
    HostTensor w = randomF32(rng, c.tb ? std::vector<int64_t>{n, k}
                                       : std::vector<int64_t>{k, n});
    std::vector<double> e0 = naiveMatmul(a, b, c.ta, c.tb);
    std::vector<double> e1 = naiveMatmul(a, w, c.ta, c.tb);
    auto r = p.run(Precision::F64, {a, b, w});
    EXPECT_EQ(r[0].shape, (std::vector<int64_t>{batch, m, n}));
    EXPECT_LE(relativeL2(r[0].floats, e0), kF64Tolerance);
    EXPECT_LE(relativeL2(r[1].floats, e1), kF64Tolerance);
    r = p.run(Precision::F32, {a, b, w});
    EXPECT_LE(relativeL2(r[0].floats, e0), kF32Tolerance);
    EXPECT_LE(relativeL2(r[1].floats, e1), kF32Tolerance);
  }
}

TEST(ReferenceMatmul, LinearLayerInHalfPrecisionAndErrors) {
  Program p = parseProgram(R"(
func.func @f(%x: tensor<?x32xf16>, %w: tensor<48x32xf16>) -> tensor<?x48xf16> {
  %0 = ls2.matmul %x, %w {transpose_b} : tensor<?x32xf16>, tensor<48x32xf16> -> tensor<?x48xf16>
  return %0 : tensor<?x48xf16>
}
func.func @g(%a: tensor<?x3x4xf32>, %b: tensor<?x4x2xf32>) -> tensor<?x3x2xf32> {
  %0 = ls2.matmul %a, %b : tensor<?x3x4xf32>, tensor<?x4x2xf32> -> tensor<?x3x2xf32>
  return %0 : tensor<?x3x2xf32>
})");
  std::mt19937 rng = testRng();
  // f16 values: multiples of 2^-10 in [-1, 1).
  auto half = [&](std::vector<int64_t> shape) {
    std::vector<double> v = uniform(rng, count(shape), -1, 1);
    for (double &x : v)
      x = std::round(x * 1024) / 1024;
    return HostTensor::fromFloats(ElementType::F16, std::move(shape), v);
  };
  HostTensor x = half({9, 32}), w = half({48, 32});
  std::vector<double> expected = naiveMatmul(x, w, false, true);
  auto r = p.run(Precision::F32, {x, w}, "f");
  EXPECT_LE(relativeL2(r[0].floats, expected), kF16Tolerance);
  r = p.run(Precision::F64, {x, w}, "f");
  EXPECT_LE(relativeL2(r[0].floats, expected), kF64Tolerance);
  // Zero tokens give an empty result, not a BLAS error.
  r = p.run(Precision::F32, {HostTensor::zeros(ElementType::F16, {0, 32}), w},
            "f");
  EXPECT_EQ(r[0].shape, (std::vector<int64_t>{0, 48}));
  try {
    p.run(Precision::F64, {HostTensor::zeros(ElementType::F32, {2, 3, 4}),
                           HostTensor::zeros(ElementType::F32, {3, 4, 2})},
          "g");
    FAIL() << "batch mismatch did not throw";
  } catch (const InterpreterError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "'ls2.matmul' op batch dims differ at run time"),
              std::string::npos)
        << e.what();
  }
}

namespace {

// ls2-decompose's GELU constants are f32; the naive formulas use the same.
const double kGeluK = static_cast<float>(0.7978845608028654);
const double kGeluC = static_cast<float>(0.044715);
const double kGeluC3 = static_cast<float>(3 * 0.044715);

double naiveGelu(double x) {
  return 0.5 * x * (1 + std::tanh(kGeluK * (x + kGeluC * x * x * x)));
}
double naiveGeluDerivative(double x) {
  double t = std::tanh(kGeluK * (x + kGeluC * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * kGeluK * (1 + kGeluC3 * x * x);
}

const char *kEpilogueProgram = R"(
func.func @f(%x: tensor<?x7xf32>, %w: tensor<7x200xf32>, %b: tensor<200xf32>,
             %dy: tensor<?x5xf32>, %w2: tensor<200x5xf32>)
    -> (tensor<?x200xf32>, tensor<?x200xf32>, tensor<?x200xf32>, tensor<?x8xi32>,
        tensor<?x200xf32>, tensor<200xf32>, tensor<?x200xf32>, tensor<200xf32>,
        tensor<?x200xf32>) {
  %g, %pre = ls2.matmul %x, %w bias(%b : tensor<200xf32>) {activation = #ls2<gemm_activation gelu_tanh>} : tensor<?x7xf32>, tensor<7x200xf32> -> tensor<?x200xf32> aux tensor<?x200xf32>
  %r, %mask = ls2.matmul %x, %w bias(%b : tensor<200xf32>) {activation = #ls2<gemm_activation relu>} : tensor<?x7xf32>, tensor<7x200xf32> -> tensor<?x200xf32> aux tensor<?x8xi32>
  %dg, %dbg = ls2.matmul %dy, %w2 aux(%pre : tensor<?x200xf32>) {activation = #ls2<gemm_activation gelu_tanh_grad>, transpose_b} : tensor<?x5xf32>, tensor<200x5xf32> -> tensor<?x200xf32>, tensor<200xf32>
  %dr, %dbr = ls2.matmul %dy, %w2 aux(%mask : tensor<?x8xi32>) {activation = #ls2<gemm_activation relu_grad>, transpose_b} : tensor<?x5xf32>, tensor<200x5xf32> -> tensor<?x200xf32>, tensor<200xf32>
  %ng = ls2.matmul %x, %w {activation = #ls2<gemm_activation gelu_tanh>} : tensor<?x7xf32>, tensor<7x200xf32> -> tensor<?x200xf32>
  return %g, %pre, %r, %mask, %dg, %dbg, %dr, %dbr, %ng : tensor<?x200xf32>, tensor<?x200xf32>, tensor<?x200xf32>, tensor<?x8xi32>, tensor<?x200xf32>, tensor<200xf32>, tensor<?x200xf32>, tensor<200xf32>, tensor<?x200xf32>
})";

} // namespace

// The activation epilogues against naive loops: GELU (tanh form) and ReLU
// after the bias, their aux (the GELU input; the mask packed 32 bits a word,
// rows of ceil(200 / 128) * 4 = 8 words), the gradients reading that aux and
// their bias gradients (the result's column sums).
TEST(ReferenceMatmul, ActivationEpiloguesAgainstNaiveLoops) {
  Program p = parseProgram(kEpilogueProgram);
  std::mt19937 rng = testRng();
  const int64_t t = 9, n = 200;
  HostTensor x = randomF32(rng, {t, 7}), w = randomF32(rng, {7, n}),
             b = randomF32(rng, {n}), dy = randomF32(rng, {t, 5}),
             w2 = randomF32(rng, {n, 5});
  std::vector<double> pre = naiveMatmul(x, w, false, false);
  std::vector<double> noBias = pre;
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < n; ++j)
      pre[i * n + j] += b.floats[j];
  std::vector<double> acc = naiveMatmul(dy, w2, false, true);
  std::vector<double> gelu(pre.size()), relu(pre.size()), dgelu(pre.size()),
      drelu(pre.size()), dbGelu(n, 0.0), dbRelu(n, 0.0), geluNoBias(pre.size());
  std::vector<int64_t> mask(static_cast<size_t>(t * 8), 0);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < n; ++j) {
      size_t e = static_cast<size_t>(i * n + j);
      gelu[e] = naiveGelu(pre[e]);
      geluNoBias[e] = naiveGelu(noBias[e]);
      relu[e] = pre[e] > 0 ? pre[e] : 0.0;
      if (pre[e] > 0)
        mask[i * 8 + j / 32] = static_cast<int32_t>(
            static_cast<uint32_t>(mask[i * 8 + j / 32]) | (1u << (j % 32)));
      dgelu[e] = acc[e] * naiveGeluDerivative(pre[e]);
      drelu[e] = pre[e] > 0 ? acc[e] : 0.0;
      dbGelu[j] += dgelu[e];
      dbRelu[j] += drelu[e];
    }
  for (Precision precision : {Precision::F64, Precision::F32}) {
    SCOPED_TRACE(precision == Precision::F64 ? "f64" : "f32");
    double tol = precision == Precision::F64 ? kF64Tolerance : kF32Tolerance;
    auto r = p.run(precision, {x, w, b, dy, w2});
    EXPECT_EQ(r[0].shape, (std::vector<int64_t>{t, n}));
    EXPECT_LE(relativeL2(r[0].floats, gelu), tol);
    EXPECT_LE(relativeL2(r[1].floats, pre), tol);
    EXPECT_LE(relativeL2(r[2].floats, relu), tol);
    EXPECT_EQ(r[3].type, ElementType::I32);
    EXPECT_EQ(r[3].shape, (std::vector<int64_t>{t, 8}));
    EXPECT_EQ(r[3].ints, mask); // no pre-activation within f32 rounding of 0
    EXPECT_LE(relativeL2(r[4].floats, dgelu), tol);
    EXPECT_LE(relativeL2(r[5].floats, dbGelu), tol);
    EXPECT_LE(relativeL2(r[6].floats, drelu), tol);
    EXPECT_LE(relativeL2(r[7].floats, dbRelu), tol);
    EXPECT_LE(relativeL2(r[8].floats, geluNoBias), tol);
  }
  // No tokens: empty matrices, zero bias gradients.
  auto r = p.run(Precision::F32, {HostTensor::zeros(ElementType::F32, {0, 7}), w,
                                  b, HostTensor::zeros(ElementType::F32, {0, 5}), w2});
  EXPECT_EQ(r[3].shape, (std::vector<int64_t>{0, 8}));
  EXPECT_EQ(r[5].floats, std::vector<double>(n, 0.0));
  EXPECT_EQ(r[7].floats, std::vector<double>(n, 0.0));
}

// In bf16 the result, the GELU input and the bias gradient are rounded once
// from f32 math; ReLU's 0 for NaN follows select(p > 0, p, 0).
TEST(ReferenceMatmul, ActivationEpiloguesInBf16) {
  Program p = parseProgram(R"(
func.func @f(%x: tensor<?x16xbf16>, %w: tensor<16x64xbf16>, %b: tensor<64xbf16>, %dy: tensor<?x16xbf16>, %w2: tensor<64x16xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>) {
  %g, %pre = ls2.matmul %x, %w bias(%b : tensor<64xbf16>) {activation = #ls2<gemm_activation gelu_tanh>} : tensor<?x16xbf16>, tensor<16x64xbf16> -> tensor<?x64xbf16> aux tensor<?x64xbf16>
  %dg, %db = ls2.matmul %dy, %w2 aux(%pre : tensor<?x64xbf16>) {activation = #ls2<gemm_activation gelu_tanh_grad>, transpose_b} : tensor<?x16xbf16>, tensor<64x16xbf16> -> tensor<?x64xbf16>, tensor<64xbf16>
  return %g, %pre, %dg, %db : tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>
}
func.func @nan(%x: tensor<?x2xf32>, %w: tensor<2x3xf32>) -> (tensor<?x3xf32>, tensor<?x4xi32>) {
  %r, %m = ls2.matmul %x, %w {activation = #ls2<gemm_activation relu>} : tensor<?x2xf32>, tensor<2x3xf32> -> tensor<?x3xf32> aux tensor<?x4xi32>
  return %r, %m : tensor<?x3xf32>, tensor<?x4xi32>
})");
  std::mt19937 rng = testRng();
  auto bf16 = [&](std::vector<int64_t> shape) {
    std::vector<double> v = uniform(rng, count(shape), -1, 1);
    for (double &e : v)
      e = std::round(e * 128) / 128; // exact in bf16
    return HostTensor::fromFloats(ElementType::BF16, std::move(shape), v);
  };
  const int64_t t = 12, n = 64;
  HostTensor x = bf16({t, 16}), w = bf16({16, n}), b = bf16({n}),
             dy = bf16({t, 16}), w2 = bf16({n, 16});
  std::vector<double> pre = naiveMatmul(x, w, false, false);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < n; ++j)
      pre[i * n + j] += b.floats[j];
  std::vector<double> acc = naiveMatmul(dy, w2, false, true);
  std::vector<double> gelu(pre.size()), dgelu(pre.size()), db(n, 0.0);
  for (size_t e = 0; e < pre.size(); ++e) {
    gelu[e] = naiveGelu(pre[e]);
    dgelu[e] = acc[e] * naiveGeluDerivative(pre[e]);
    db[e % n] += dgelu[e];
  }
  auto r = p.run(Precision::F32, {x, w, b, dy, w2}, "f");
  EXPECT_EQ(r[0].type, ElementType::BF16);
  EXPECT_LE(relativeL2(r[0].floats, gelu), kBF16Tolerance);
  EXPECT_LE(relativeL2(r[1].floats, pre), kBF16Tolerance);
  EXPECT_LE(relativeL2(r[2].floats, dgelu), kBF16Tolerance);
  EXPECT_LE(relativeL2(r[3].floats, db), kBF16Tolerance);
  // 0 * inf = NaN in the product: ReLU gives 0 and a clear mask bit.
  HostTensor xn = HostTensor::fromFloats(ElementType::F32, {1, 2}, {0.0, 1.0});
  HostTensor wn = HostTensor::fromFloats(ElementType::F32, {2, 3},
                                         {INFINITY, 1.0, -1.0, 1.0, 2.0, -3.0});
  r = p.run(Precision::F32, {xn, wn}, "nan");
  EXPECT_EQ(r[0].floats, (std::vector<double>{0.0, 2.0, 0.0}));
  EXPECT_EQ(r[1].ints, (std::vector<int64_t>{2, 0, 0, 0}));
}

//===----------------------------------------------------------------------===//
// Gather and scatter_add
//===----------------------------------------------------------------------===//

TEST(ReferenceEmbedding, GatherRowsAndRejectBadIds) {
  Program p = parseProgram(R"(
func.func @f(%table: tensor<10x4xf32>, %ids: tensor<?x?xi32>) -> tensor<?x?x4xf32> {
  %0 = ls2.gather %table[%ids] : tensor<10x4xf32>, tensor<?x?xi32> -> tensor<?x?x4xf32>
  return %0 : tensor<?x?x4xf32>
})");
  std::mt19937 rng = testRng();
  HostTensor table = randomF32(rng, {10, 4});
  std::vector<int64_t> ids = {3, 0, 9, 3, 7, 1};
  auto r = p.run(Precision::F64,
                 {table, HostTensor::fromInts(ElementType::I32, {2, 3}, ids)});
  ASSERT_EQ(r[0].shape, (std::vector<int64_t>{2, 3, 4}));
  for (size_t i = 0; i < ids.size(); ++i)
    for (int c = 0; c < 4; ++c)
      EXPECT_EQ(r[0].floats[i * 4 + c], table.floats[ids[i] * 4 + c]);
  for (int64_t bad : {10, -1}) {
    ids[4] = bad;
    std::string e = errorOf(
        p, {table, HostTensor::fromInts(ElementType::I32, {2, 3}, ids)});
    EXPECT_NE(e.find("'ls2.gather' op id " + std::to_string(bad) +
                     " (element 4 of the ids) is outside the table's rows "
                     "[0, 10)"),
              std::string::npos)
        << e;
  }
}

TEST(ReferenceEmbedding, ScatterAddSumsRowsAndSkipsPadding) {
  Program p = parseProgram(R"(
func.func @f(%g: tensor<?x3xf32>, %ids: tensor<?xi64>) -> (tensor<6x3xf32>, tensor<6x3xf32>) {
  %0 = ls2.scatter_add %g, %ids : tensor<?x3xf32>, tensor<?xi64> -> tensor<6x3xf32>
  %1 = ls2.scatter_add %g, %ids {padding_idx = 2 : i64} : tensor<?x3xf32>, tensor<?xi64> -> tensor<6x3xf32>
  return %0, %1 : tensor<6x3xf32>, tensor<6x3xf32>
})");
  std::mt19937 rng = testRng();
  std::vector<int64_t> ids = {2, 5, 0, 2, 5, 5, 1};
  HostTensor g = randomF32(rng, {7, 3});
  std::vector<double> all(18, 0.0), padded(18, 0.0);
  for (size_t i = 0; i < ids.size(); ++i)
    for (int c = 0; c < 3; ++c) {
      all[ids[i] * 3 + c] += g.floats[i * 3 + c];
      if (ids[i] != 2)
        padded[ids[i] * 3 + c] += g.floats[i * 3 + c];
    }
  HostTensor idTensor = HostTensor::fromInts(ElementType::I64, {7}, ids);
  auto r = p.run(Precision::F64, {g, idTensor});
  EXPECT_LE(relativeL2(r[0].floats, all), kF64Tolerance);
  EXPECT_LE(relativeL2(r[1].floats, padded), kF64Tolerance);
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(r[1].floats[2 * 3 + c], 0.0); // the padding row gets nothing
    EXPECT_EQ(r[0].floats[3 * 3 + c], 0.0); // nor does an unused row
  }
  r = p.run(Precision::F32, {g, idTensor});
  EXPECT_LE(relativeL2(r[0].floats, all), kF32Tolerance);
  ids[6] = 6;
  std::string e =
      errorOf(p, {g, HostTensor::fromInts(ElementType::I64, {7}, ids)});
  EXPECT_NE(e.find("'ls2.scatter_add' op id 6"), std::string::npos) << e;
}

// Rows of an activation (a dynamic row count) and their gradient, sized by
// an index operand: the masked-LM head's labelled rows.
TEST(ReferenceEmbedding, GatherFromActivationRowsAndScatterBack) {
  Program p = parseProgram(R"(
func.func @f(%x: tensor<?x3xf32>, %ids: tensor<4xi32>, %g: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<?x3xf32>) {
  %0 = ls2.gather %x[%ids] : tensor<?x3xf32>, tensor<4xi32> -> tensor<4x3xf32>
  %t = ls2.dim %x[0] : tensor<?x3xf32>
  %1 = ls2.scatter_add %g, %ids[%t] : tensor<4x3xf32>, tensor<4xi32> -> tensor<?x3xf32>
  return %0, %1 : tensor<4x3xf32>, tensor<?x3xf32>
})");
  std::mt19937 rng = testRng();
  HostTensor x = randomF32(rng, {5, 3}), g = randomF32(rng, {4, 3});
  std::vector<int64_t> ids = {4, 0, 2, 0};
  auto r = p.run(Precision::F64, {x, HostTensor::fromInts(ElementType::I32, {4}, ids), g});
  ASSERT_EQ(r[1].shape, (std::vector<int64_t>{5, 3}));
  std::vector<double> back(15, 0.0);
  for (size_t i = 0; i < ids.size(); ++i)
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(r[0].floats[i * 3 + c], x.floats[ids[i] * 3 + c]);
      back[ids[i] * 3 + c] += g.floats[i * 3 + c];
    }
  EXPECT_LE(relativeL2(r[1].floats, back), kF64Tolerance);
  // The rows follow the activation: 2 rows, and id 4 is then outside.
  HostTensor small = randomF32(rng, {2, 3});
  std::string e = errorOf(p, {small, HostTensor::fromInts(ElementType::I32, {4}, ids), g});
  EXPECT_NE(e.find("'ls2.gather' op id 4 (element 0 of the ids) is outside the table's rows [0, 2)"),
            std::string::npos)
      << e;
}

// With fill_value an out-of-range id reads its fill (jnp.take's
// mode='fill'), and scatter_add's drop_out_of_range leaves its update out.
TEST(ReferenceEmbedding, FilledGatherAndDroppingScatterAdd) {
  Program p = parseProgram(R"(
func.func @f(%x: tensor<?x2xf32>, %labels: tensor<?xi32>, %ids: tensor<4xi32>, %g: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<4xi32>, tensor<?x2xf32>) {
  %0 = ls2.gather %x[%ids] {fill_value = 0.5 : f64} : tensor<?x2xf32>, tensor<4xi32> -> tensor<4x2xf32>
  %1 = ls2.gather %labels[%ids] {fill_value = -100.0 : f64} : tensor<?xi32>, tensor<4xi32> -> tensor<4xi32>
  %t = ls2.dim %x[0] : tensor<?x2xf32>
  %2 = ls2.scatter_add %g, %ids[%t] {drop_out_of_range} : tensor<4x2xf32>, tensor<4xi32> -> tensor<?x2xf32>
  return %0, %1, %2 : tensor<4x2xf32>, tensor<4xi32>, tensor<?x2xf32>
})");
  HostTensor x = HostTensor::fromFloats(ElementType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  HostTensor labels = HostTensor::fromInts(ElementType::I32, {3}, {7, 8, 9});
  HostTensor ids = HostTensor::fromInts(ElementType::I32, {4}, {2, -1, 0, 3});
  HostTensor g = HostTensor::fromFloats(ElementType::F32, {4, 2}, {1, 1, 2, 2, 3, 3, 4, 4});
  auto r = p.run(Precision::F64, {x, labels, ids, g});
  EXPECT_EQ(r[0].floats, (std::vector<double>{5, 6, 0.5, 0.5, 1, 2, 0.5, 0.5}));
  EXPECT_EQ(r[1].ints, (std::vector<int64_t>{9, -100, 7, -100}));
  EXPECT_EQ(r[2].floats, (std::vector<double>{3, 3, 0, 0, 1, 1}));
  // No row at all: every id is out of range.
  HostTensor empty = HostTensor::fromFloats(ElementType::F32, {0, 2}, {});
  r = p.run(Precision::F64, {empty, HostTensor::fromInts(ElementType::I32, {0}, {}), ids, g});
  EXPECT_EQ(r[0].floats, std::vector<double>(8, 0.5));
  EXPECT_EQ(r[1].ints, std::vector<int64_t>(4, -100));
  EXPECT_TRUE(r[2].floats.empty());
}

// jnp.nonzero(mask, size=N, fill_value=F): ascending positions of the true
// elements, F past them, true elements past the first N left out.
TEST(ReferenceNonzero, PositionsInOrderFilledAndCut) {
  Program p = parseProgram(R"(
func.func @f(%m: tensor<?xi1>) -> (tensor<4xi32>, tensor<3xi64>) {
  %0 = ls2.nonzero %m : tensor<?xi1> -> tensor<4xi32>
  %1 = ls2.nonzero %m {fill_value = 7 : i64} : tensor<?xi1> -> tensor<3xi64>
  return %0, %1 : tensor<4xi32>, tensor<3xi64>
})");
  auto mask = [](std::vector<int64_t> bits) {
    return HostTensor::fromInts(ElementType::I1, {static_cast<int64_t>(bits.size())}, bits);
  };
  auto r = p.run(Precision::F32, {mask({0, 1, 0, 0, 1, 1})});
  EXPECT_EQ(r[0].ints, (std::vector<int64_t>{1, 4, 5, -1}));
  EXPECT_EQ(r[1].ints, (std::vector<int64_t>{1, 4, 5}));
  r = p.run(Precision::F32, {mask({1, 1, 0, 1, 1, 1, 0})});
  EXPECT_EQ(r[0].ints, (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(r[1].ints, (std::vector<int64_t>{0, 1, 3}));
  r = p.run(Precision::F32, {mask({})});
  EXPECT_EQ(r[0].ints, (std::vector<int64_t>{-1, -1, -1, -1}));
  EXPECT_EQ(r[1].ints, (std::vector<int64_t>{7, 7, 7}));
}
