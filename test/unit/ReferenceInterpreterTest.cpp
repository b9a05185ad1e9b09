//===- ReferenceInterpreterTest.cpp - elementwise ops, randomness, errors -===//
#include "ReferenceTestUtil.h"

#include <functional>
#include <limits>

using namespace ls2c::reference;
using namespace ls2c::reference::testing;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

/// Whether `v` is exactly an IEEE binary16 value (finite or inf).
bool isHalf(double v) {
  if (std::isinf(v) || v == 0.0)
    return true;
  int e = 0;
  double m = std::frexp(std::fabs(v), &e);
  if (std::fabs(v) > 65504.0)
    return false;
  if (e - 1 >= -14)
    return std::ldexp(m, 11) == std::floor(std::ldexp(m, 11));
  double scaled = std::ldexp(std::fabs(v), 24);
  return scaled == std::floor(scaled);
}

std::string unaryProgram(const std::string &op, const std::string &type) {
  return "func.func @f(%x: " + type + ") -> " + type + " {\n  %0 = ls2." + op +
         " %x : " + type + "\n  return %0 : " + type + "\n}\n";
}

struct UnaryCase {
  const char *name;
  std::function<double(double)> fn;
  double lo, hi;
};

const std::vector<UnaryCase> &unaryCases() {
  static const std::vector<UnaryCase> cases = {
      {"neg", [](double x) { return -x; }, -3, 3},
      {"exp", [](double x) { return std::exp(x); }, -3, 3},
      {"log", [](double x) { return std::log(x); }, 0.01, 5},
      {"tanh", [](double x) { return std::tanh(x); }, -3, 3},
      {"erf", [](double x) { return std::erf(x); }, -3, 3},
      {"sqrt", [](double x) { return std::sqrt(x); }, 0, 5},
      {"rsqrt", [](double x) { return 1 / std::sqrt(x); }, 0.01, 5},
  };
  return cases;
}

} // namespace

TEST(ReferenceTestUtil, NaivePhiloxMatchesRandom123) {
  EXPECT_EQ(naivePhilox({0, 0, 0, 0}, {0, 0}),
            (std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c,
                                     0x9b00dbd8}));
  EXPECT_EQ(naivePhilox({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                        {0xa4093822, 0x299f31d0}),
            (std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420,
                                     0x24126ea1}));
}

TEST(ReferenceElementwise, UnaryOpsF64AndF32) {
  std::mt19937 rng = testRng();
  for (const UnaryCase &c : unaryCases()) {
    SCOPED_TRACE(c.name);
    Program p = parseProgram(unaryProgram(c.name, "tensor<?x7xf32>"));
    HostTensor x = randomF32(rng, {5, 7}, c.lo, c.hi);
    std::vector<double> expected;
    for (double v : x.floats)
      expected.push_back(c.fn(v));
    std::vector<HostTensor> r64 = p.run(Precision::F64, {x});
    ASSERT_EQ(r64.size(), 1u);
    EXPECT_EQ(r64[0].shape, (std::vector<int64_t>{5, 7}));
    EXPECT_LE(relativeL2(r64[0].floats, expected), kF64Tolerance);
    std::vector<HostTensor> r32 = p.run(Precision::F32, {x});
    EXPECT_LE(relativeL2(r32[0].floats, expected), kF32Tolerance);
    for (double v : r32[0].floats)
      EXPECT_EQ(v, static_cast<double>(static_cast<float>(v)));
  }
}

TEST(ReferenceElementwise, UnaryOpsRoundToF16OnlyInF32Mode) {
  std::mt19937 rng = testRng();
  for (const UnaryCase &c : unaryCases()) {
    SCOPED_TRACE(c.name);
    Program p = parseProgram(unaryProgram(c.name, "tensor<3x11xf16>"));
    // Inputs that are f16 values (multiples of 2^-8 in a small range).
    std::vector<double> v = uniform(rng, 33, c.lo, c.hi);
    for (double &x : v)
      x = std::max(c.lo, std::round(x * 256) / 256);
    HostTensor x = HostTensor::fromFloats(ElementType::F16, {3, 11}, v);
    std::vector<double> expected;
    for (double e : v)
      expected.push_back(c.fn(e));
    std::vector<HostTensor> r32 = p.run(Precision::F32, {x});
    EXPECT_LE(relativeL2(r32[0].floats, expected), kF16Tolerance);
    for (double y : r32[0].floats)
      EXPECT_TRUE(isHalf(y)) << y;
    std::vector<HostTensor> r64 = p.run(Precision::F64, {x});
    EXPECT_LE(relativeL2(r64[0].floats, expected), kF64Tolerance);
  }
}

TEST(ReferenceElementwise, BinaryFloatOpsWithScalarOperands) {
  std::mt19937 rng = testRng();
  struct Case {
    const char *name;
    std::function<double(double, double)> fn;
  };
  std::vector<Case> cases = {
      {"add", [](double a, double b) { return a + b; }},
      {"sub", [](double a, double b) { return a - b; }},
      {"mul", [](double a, double b) { return a * b; }},
      {"div", [](double a, double b) { return a / b; }},
      {"max", [](double a, double b) { return a > b ? a : b; }},
      {"min", [](double a, double b) { return a < b ? a : b; }},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    std::string op = c.name;
    Program p = parseProgram(
        "func.func @f(%a: tensor<?x3xf32>, %b: tensor<?x3xf32>, %s: "
        "tensor<f32>) -> (tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>) "
        "{\n"
        "  %0 = ls2." + op + " %a, %b : tensor<?x3xf32>\n"
        "  %1 = ls2." + op + " %s, %b : tensor<f32>, tensor<?x3xf32>\n"
        "  %2 = ls2." + op + " %a, %s : tensor<?x3xf32>, tensor<f32>\n"
        "  return %0, %1, %2 : tensor<?x3xf32>, tensor<?x3xf32>, "
        "tensor<?x3xf32>\n}\n");
    HostTensor a = randomF32(rng, {4, 3}, -2, 2);
    HostTensor b = randomF32(rng, {4, 3}, 0.5, 2);
    HostTensor s = HostTensor::scalarFloat(ElementType::F32, 0.75);
    std::vector<double> e0, e1, e2;
    for (size_t i = 0; i < 12; ++i) {
      e0.push_back(c.fn(a.floats[i], b.floats[i]));
      e1.push_back(c.fn(0.75, b.floats[i]));
      e2.push_back(c.fn(a.floats[i], 0.75));
    }
    std::vector<HostTensor> r = p.run(Precision::F64, {a, b, s});
    EXPECT_LE(relativeL2(r[0].floats, e0), kF64Tolerance);
    EXPECT_LE(relativeL2(r[1].floats, e1), kF64Tolerance);
    EXPECT_LE(relativeL2(r[2].floats, e2), kF64Tolerance);
    r = p.run(Precision::F32, {a, b, s});
    EXPECT_LE(relativeL2(r[0].floats, e0), kF32Tolerance);
    EXPECT_LE(relativeL2(r[1].floats, e1), kF32Tolerance);
  }
}

TEST(ReferenceElementwise, MaxMinPropagateNaN) {
  Program p = parseProgram(R"(
func.func @f(%a: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = ls2.max %a, %b : tensor<3xf32>
  %1 = ls2.min %a, %b : tensor<3xf32>
  return %0, %1 : tensor<3xf32>, tensor<3xf32>
})");
  double nan = std::nan("");
  auto r = p.run(Precision::F64,
                 {HostTensor::fromFloats(ElementType::F32, {3}, {nan, 1, 2}),
                  HostTensor::fromFloats(ElementType::F32, {3}, {1, nan, -2})});
  EXPECT_TRUE(std::isnan(r[0].floats[0]) && std::isnan(r[0].floats[1]));
  EXPECT_TRUE(std::isnan(r[1].floats[0]) && std::isnan(r[1].floats[1]));
  EXPECT_EQ(r[0].floats[2], 2);
  EXPECT_EQ(r[1].floats[2], -2);
}

TEST(ReferenceElementwise, IntegerOpsWrapAndTruncate) {
  Program p = parseProgram(R"(
func.func @f(%a: tensor<4xi32>, %b: tensor<4xi32>, %l: tensor<2xi64>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<2xi64>) {
  %0 = ls2.add %a, %b : tensor<4xi32>
  %1 = ls2.div %a, %b : tensor<4xi32>
  %2 = ls2.max %a, %b : tensor<4xi32>
  %3 = ls2.mul %a, %b : tensor<4xi32>
  %4 = ls2.sub %l, %l : tensor<2xi64>
  return %0, %1, %2, %3, %4 : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<2xi64>
})");
  HostTensor a = HostTensor::fromInts(ElementType::I32, {4},
                                      {2147483647, -7, 7, -2147483647 - 1});
  HostTensor b = HostTensor::fromInts(ElementType::I32, {4}, {1, 2, -2, -1});
  HostTensor l = HostTensor::fromInts(ElementType::I64, {2}, {5, -9});
  auto r = p.run(Precision::F32, {a, b, l});
  EXPECT_EQ(r[0].ints, (std::vector<int64_t>{-2147483647 - 1, -5, 5,
                                             2147483647}));
  EXPECT_EQ(r[1].ints, (std::vector<int64_t>{2147483647, -3, -3,
                                             -2147483647 - 1}));
  EXPECT_EQ(r[2].ints, (std::vector<int64_t>{2147483647, 2, 7, -1}));
  EXPECT_EQ(r[3].ints, (std::vector<int64_t>{2147483647, -14, -14,
                                             -2147483647 - 1}));
  EXPECT_EQ(r[4].ints, (std::vector<int64_t>{0, 0}));
  b.ints[2] = 0;
  try {
    p.run(Precision::F64, {a, b, l});
    FAIL() << "division by zero did not throw";
  } catch (const InterpreterError &e) {
    EXPECT_NE(std::string(e.what()).find("'ls2.div' op divides by zero"),
              std::string::npos)
        << e.what();
  }
}

TEST(ReferenceElementwise, CompareAndSelect) {
  Program p = parseProgram(R"(
func.func @f(%a: tensor<5xf32>, %b: tensor<5xf32>, %s: tensor<f32>) -> (tensor<5xi1>, tensor<5xi1>, tensor<5xi1>, tensor<5xi1>, tensor<5xi1>, tensor<5xi1>, tensor<5xf32>) {
  %0 = ls2.compare eq, %a, %b : tensor<5xf32>
  %1 = ls2.compare ne, %a, %b : tensor<5xf32>
  %2 = ls2.compare lt, %a, %b : tensor<5xf32>
  %3 = ls2.compare le, %a, %b : tensor<5xf32>
  %4 = ls2.compare gt, %a, %s : tensor<5xf32>, tensor<f32>
  %5 = ls2.compare ge, %a, %b : tensor<5xf32>
  %6 = ls2.select %2, %s, %b : tensor<5xi1>, tensor<f32>, tensor<5xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<5xi1>, tensor<5xi1>, tensor<5xi1>, tensor<5xi1>, tensor<5xi1>, tensor<5xi1>, tensor<5xf32>
})");
  double nan = std::nan("");
  HostTensor a = HostTensor::fromFloats(ElementType::F32, {5}, {1, 2, 3, nan, 0});
  HostTensor b = HostTensor::fromFloats(ElementType::F32, {5}, {1, 3, 2, 1, nan});
  auto r = p.run(Precision::F64,
                 {a, b, HostTensor::scalarFloat(ElementType::F32, 1.5)});
  EXPECT_EQ(r[0].ints, (std::vector<int64_t>{1, 0, 0, 0, 0}));
  EXPECT_EQ(r[1].ints, (std::vector<int64_t>{0, 1, 1, 1, 1}));
  EXPECT_EQ(r[2].ints, (std::vector<int64_t>{0, 1, 0, 0, 0}));
  EXPECT_EQ(r[3].ints, (std::vector<int64_t>{1, 1, 0, 0, 0}));
  EXPECT_EQ(r[4].ints, (std::vector<int64_t>{0, 1, 1, 0, 0}));
  EXPECT_EQ(r[5].ints, (std::vector<int64_t>{1, 0, 1, 0, 0}));
  EXPECT_EQ(r[6].type, ElementType::F32);
  EXPECT_EQ(r[6].floats[1], 1.5);
  EXPECT_EQ(r[6].floats[0], 1);
  EXPECT_TRUE(std::isnan(r[6].floats[4]));
}

TEST(ReferenceElementwise, Casts) {
  Program p = parseProgram(R"(
func.func @f(%x: tensor<6xf32>, %l: tensor<3xi64>, %p: tensor<2xi1>) -> (tensor<6xi32>, tensor<6xf16>, tensor<6xbf16>, tensor<3xi32>, tensor<2xf32>, tensor<3xi1>, tensor<6xi1>) {
  %0 = ls2.cast %x : tensor<6xf32> to tensor<6xi32>
  %1 = ls2.cast %x : tensor<6xf32> to tensor<6xf16>
  %2 = ls2.cast %x : tensor<6xf32> to tensor<6xbf16>
  %3 = ls2.cast %l : tensor<3xi64> to tensor<3xi32>
  %4 = ls2.cast %p : tensor<2xi1> to tensor<2xf32>
  %5 = ls2.cast %l : tensor<3xi64> to tensor<3xi1>
  %6 = ls2.cast %x : tensor<6xf32> to tensor<6xi1>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<6xi32>, tensor<6xf16>, tensor<6xbf16>, tensor<3xi32>, tensor<2xf32>, tensor<3xi1>, tensor<6xi1>
})");
  HostTensor x = HostTensor::fromFloats(
      ElementType::F32, {6}, {-2.75, 2.75, 65520.0, 1e10, 1.0 + 1.0 / 1024, 0});
  HostTensor l = HostTensor::fromInts(ElementType::I64, {3},
                                      {(int64_t{1} << 32) + 5, -1, 0});
  HostTensor b = HostTensor::fromInts(ElementType::I1, {2}, {1, 0});
  auto r = p.run(Precision::F32, {x, l, b});
  EXPECT_EQ(r[0].ints, (std::vector<int64_t>{-2, 2, 65520, 2147483647, 1, 0}));
  EXPECT_EQ(r[1].floats,
            (std::vector<double>{-2.75, 2.75, kInf, kInf, 1.0 + 1.0 / 1024, 0}));
  // bf16 keeps 8 significant bits: 65520 -> 65536, 1 + 2^-10 -> 1.
  EXPECT_EQ(r[2].floats[2], 65536.0);
  EXPECT_EQ(r[2].floats[4], 1.0);
  EXPECT_EQ(r[3].ints, (std::vector<int64_t>{5, -1, 0}));
  EXPECT_EQ(r[4].floats, (std::vector<double>{1, 0}));
  EXPECT_EQ(r[5].ints, (std::vector<int64_t>{1, 1, 0}));
  EXPECT_EQ(r[6].ints, (std::vector<int64_t>{1, 1, 1, 1, 1, 0}));
  // F64 mode stores doubles whatever the IR type: no rounding to f16.
  auto r64 = p.run(Precision::F64, {x, l, b});
  EXPECT_EQ(r64[1].floats[2], 65520.0);
  EXPECT_EQ(r64[2].floats[4], 1.0 + 1.0 / 1024);
}

TEST(ReferenceElementwise, ConstantsAndArgumentRounding) {
  Program p = parseProgram(R"(
func.func @f(%h: tensor<2xf16>) -> (tensor<f32>, tensor<2xf16>, tensor<2x2xbf16>, tensor<3xi32>, tensor<i64>, tensor<2xi1>, tensor<2xf16>) {
  %0 = ls2.constant dense<1.250000e-01> : tensor<f32>
  %1 = ls2.constant dense<[1.000000e+00, -2.000000e+00]> : tensor<2xf16>
  %2 = ls2.constant dense<3.000000e+00> : tensor<2x2xbf16>
  %3 = ls2.constant dense<[0, 1, -2]> : tensor<3xi32>
  %4 = ls2.constant dense<-100> : tensor<i64>
  %5 = ls2.constant dense<[true, false]> : tensor<2xi1>
  return %0, %1, %2, %3, %4, %5, %h : tensor<f32>, tensor<2xf16>, tensor<2x2xbf16>, tensor<3xi32>, tensor<i64>, tensor<2xi1>, tensor<2xf16>
})");
  HostTensor h = HostTensor::fromFloats(ElementType::F16, {2}, {0.1, 70000});
  auto r = p.run(Precision::F32, {h});
  EXPECT_EQ(r[0].floats, (std::vector<double>{0.125}));
  EXPECT_TRUE(r[0].shape.empty());
  EXPECT_EQ(r[1].floats, (std::vector<double>{1, -2}));
  EXPECT_EQ(r[2].floats, (std::vector<double>{3, 3, 3, 3}));
  EXPECT_EQ(r[3].ints, (std::vector<int64_t>{0, 1, -2}));
  EXPECT_EQ(r[4].ints, (std::vector<int64_t>{-100}));
  EXPECT_EQ(r[5].ints, (std::vector<int64_t>{1, 0}));
  // Arguments are storage: F32 mode rounds them to their type.
  EXPECT_EQ(r[6].floats[0], 0.0999755859375); // f16 nearest to 0.1
  EXPECT_EQ(r[6].floats[1], kInf);
  EXPECT_EQ(p.run(Precision::F64, {h})[6].floats[0], 0.1);
}

TEST(ReferenceElementwise, GeluBothForms) {
  std::mt19937 rng = testRng();
  Program p = parseProgram(R"(
func.func @f(%x: tensor<?x16xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %0 = ls2.gelu %x : tensor<?x16xf32>
  %1 = ls2.gelu %x {approximate = #ls2<gelu_approximation tanh>} : tensor<?x16xf32>
  return %0, %1 : tensor<?x16xf32>, tensor<?x16xf32>
})");
  HostTensor x = randomF32(rng, {9, 16}, -4, 4);
  std::vector<double> exact, approx;
  const double pi = std::acos(-1.0);
  for (double v : x.floats) {
    exact.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
    approx.push_back(0.5 * v *
                     (1 + std::tanh(std::sqrt(2 / pi) *
                                    (v + 0.044715 * v * v * v))));
  }
  auto r = p.run(Precision::F64, {x});
  EXPECT_LE(relativeL2(r[0].floats, exact), kF64Tolerance);
  EXPECT_LE(relativeL2(r[1].floats, approx), kF64Tolerance);
  // The two forms differ by ~1e-3 at most: they are different functions.
  EXPECT_GT(relativeL2(r[1].floats, exact), 1e-6);
  r = p.run(Precision::F32, {x});
  EXPECT_LE(relativeL2(r[0].floats, exact), kF32Tolerance);
  EXPECT_LE(relativeL2(r[1].floats, approx), kF32Tolerance);
}

//===----------------------------------------------------------------------===//
// Randomness
//===----------------------------------------------------------------------===//

TEST(ReferenceRandom, RandomUniformFollowsTheCounterLayout) {
  Program p = parseProgram(R"(
func.func @f(%seed: tensor<i64>, %offset: tensor<i64>, %x: tensor<?x5xf32>) -> tensor<?x5xf32> {
  %t = ls2.dim %x[0] : tensor<?x5xf32>
  %0 = ls2.random_uniform %seed, %offset [%t] {stream = 3} : tensor<?x5xf32>
  return %0 : tensor<?x5xf32>
})");
  const int64_t seed = 0x0123456789abcdefLL, offset = (int64_t{9} << 32) + 17;
  auto r = p.run(Precision::F32,
                 {HostTensor::scalarInt(ElementType::I64, seed),
                  HostTensor::scalarInt(ElementType::I64, offset),
                  HostTensor::zeros(ElementType::F32, {7, 5})});
  ASSERT_EQ(r[0].shape, (std::vector<int64_t>{7, 5}));
  for (uint64_t e = 0; e < 35; ++e)
    EXPECT_EQ(r[0].floats[e],
              naiveRandomUniform(seed, offset, 3, e)) << "element " << e;
}

TEST(ReferenceRandom, DropoutMasksAreReproducibleAndScaled) {
  Program p = parseProgram(R"(
func.func @f(%x: tensor<?xf32>, %seed: tensor<i64>, %offset: tensor<i64>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) {
  %0 = ls2.dropout %x, %seed, %offset {rate = 2.500000e-01 : f32, stream = 1} : tensor<?xf32>
  %1 = ls2.dropout %x, %seed, %offset {rate = 2.500000e-01 : f32, stream = 1} : tensor<?xf32>
  %2 = ls2.dropout %x, %seed, %offset {rate = 2.500000e-01 : f32, stream = 2} : tensor<?xf32>
  %t = ls2.dim %x[0] : tensor<?xf32>
  %3 = ls2.random_uniform %seed, %offset [%t] {stream = 1} : tensor<?xf32>
  return %0, %1, %2, %3 : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>
})");
  std::mt19937 rng = testRng();
  const int64_t n = 100000;
  HostTensor x = randomF32(rng, {n}, 0.5, 1.5); // never 0: 0 means dropped
  HostTensor seed = HostTensor::scalarInt(ElementType::I64, 1234);
  HostTensor offset = HostTensor::scalarInt(ElementType::I64, 8);
  auto r = p.run(Precision::F64, {x, seed, offset});
  EXPECT_EQ(r[0].floats, r[1].floats); // same seed, offset, stream: same bits
  auto again = p.run(Precision::F64, {x, seed, offset});
  EXPECT_EQ(again[0].floats, r[0].floats);
  int64_t kept = 0, differ = 0;
  for (int64_t e = 0; e < n; ++e) {
    bool keep = r[0].floats[e] != 0.0;
    kept += keep;
    differ += keep != (r[2].floats[e] != 0.0);
    // keep = u >= rate with u the same site's random_uniform.
    ASSERT_EQ(keep, r[3].floats[e] >= 0.25) << e;
    ASSERT_EQ(keep, naiveRandomUniform(1234, 8, 1, e) >= 0.25) << e;
    if (keep) {
      ASSERT_NEAR(r[0].floats[e], x.floats[e] / 0.75, 1e-15) << e;
    }
  }
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.75, 0.005);
  // Another stream gives an independent mask: they disagree where exactly
  // one keeps, 2 * 0.75 * 0.25 of the time.
  EXPECT_NEAR(static_cast<double>(differ) / n, 0.375, 0.01);
  // F32 mode: the same mask, values rounded to f32.
  auto r32 = p.run(Precision::F32, {x, seed, offset});
  EXPECT_LE(relativeL2(r32[0].floats, r[0].floats), kF32Tolerance);
  // Another offset (the next step): another mask.
  auto next = p.run(Precision::F64,
                    {x, seed, HostTensor::scalarInt(ElementType::I64, 9)});
  EXPECT_NE(next[0].floats, r[0].floats);
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST(ReferenceErrors, ArgumentsMustMatchTheFunctionType) {
  Program p = parseProgram(R"(
func.func @f(%x: tensor<?x4xf32>, %i: tensor<3xi32>) -> tensor<?x4xf32> {
  %0 = ls2.neg %x : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
})");
  HostTensor x = HostTensor::zeros(ElementType::F32, {2, 4});
  HostTensor i = HostTensor::zeros(ElementType::I32, {3});
  EXPECT_EQ(errorOf(p, {x, i}), "");
  std::string e = errorOf(p, {x});
  EXPECT_NE(e.find("test.mlir:2:1: 'func.func' op @f takes 2 arguments, got 1"),
            std::string::npos)
      << e;
  e = errorOf(p, {HostTensor::zeros(ElementType::F32, {2, 5}), i});
  EXPECT_NE(e.find("argument 0 of @f is f32[2, 5] but the function takes "
                   "tensor<?x4xf32>"),
            std::string::npos)
      << e;
  e = errorOf(p, {x, HostTensor::zeros(ElementType::I64, {3})});
  EXPECT_NE(e.find("argument 1 of @f is i64[3]"), std::string::npos) << e;
  e = errorOf(p, {x, HostTensor::fromInts(ElementType::I32, {3},
                                          {1, int64_t{1} << 40, 0})});
  EXPECT_NE(e.find("does not fit in i32"), std::string::npos) << e;
  HostTensor malformed = x;
  malformed.floats.pop_back();
  e = errorOf(p, {malformed, i});
  EXPECT_NE(e.find("does not hold one value per element"), std::string::npos)
      << e;
}

TEST(ReferenceErrors, RunTimeShapeDisagreementsNameTheOp) {
  Program p = parseProgram(R"(
func.func @f(%x: tensor<?x4xf32>, %y: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = ls2.add %x, %y : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
})");
  std::string e = errorOf(p, {HostTensor::zeros(ElementType::F32, {2, 4}),
                              HostTensor::zeros(ElementType::F32, {3, 4})});
  EXPECT_NE(e.find("test.mlir:3:8: 'ls2.add' op lhs shape [2, 4] and rhs "
                   "shape [3, 4] differ at run time"),
            std::string::npos)
      << e;
}

TEST(ReferenceErrors, UnsupportedOpsAreNamed) {
  Program p = parseProgram(R"(
func.func @g(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = func.call @g(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
})");
  try {
    p.run(Precision::F64, {HostTensor::zeros(ElementType::F32, {2})}, "f");
    FAIL() << "func.call did not throw";
  } catch (const InterpreterError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "test.mlir:6:8: 'func.call' op is not supported by the "
                  "reference interpreter"),
              std::string::npos)
        << e.what();
  }
}

TEST(ReferenceErrors, IndexArgumentsAndResultsAreRankZeroI64) {
  Program p = parseProgram(R"(
func.func @f(%t: index, %b: tensor<3xf32>) -> (tensor<?x3xf32>, index) {
  %0 = ls2.broadcast %b [%t] {dims = array<i64: 1>} : tensor<3xf32> -> tensor<?x3xf32>
  %1 = ls2.dim %0[0] : tensor<?x3xf32>
  return %0, %1 : tensor<?x3xf32>, index
})");
  HostTensor b = HostTensor::fromFloats(ElementType::F32, {3}, {1, 2, 3});
  auto r = p.run(Precision::F64, {HostTensor::scalarInt(ElementType::I64, 2), b});
  EXPECT_EQ(r[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(r[0].floats, (std::vector<double>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(r[1].ints, (std::vector<int64_t>{2}));
  std::string e =
      errorOf(p, {HostTensor::scalarInt(ElementType::I32, 2), b});
  EXPECT_NE(e.find("is an index; pass a rank-0 i64 tensor"), std::string::npos)
      << e;
  e = errorOf(p, {HostTensor::scalarInt(ElementType::I64, -1), b});
  EXPECT_NE(e.find("'ls2.broadcast' op dynamic size operand 0 is -1"),
            std::string::npos)
      << e;
}
