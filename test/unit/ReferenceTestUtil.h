//===- ReferenceTestUtil.h - helpers for the reference interpreter tests -===//
//
// Parsing small ls2 programs, random inputs seeded from the test's name,
// relative L2 errors, and an independent Philox-4x32-10 for checking
// random numbers. Expected values in these tests come from naive loops
// written in the tests, never from the code under test.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TEST_UNIT_REFERENCETESTUTIL_H
#define LS2C_TEST_UNIT_REFERENCETESTUTIL_H

#include "ls2c/Reference/Interpreter.h"

#include "ls2/IR/LS2Dialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace ls2c::reference::testing {

/// A parsed module and its context.
struct Program {
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;

  /// The function named `name`, or the module's first function.
  mlir::func::FuncOp function(const std::string &name = "") const {
    mlir::ModuleOp m = module.get();
    if (!name.empty())
      return m.lookupSymbol<mlir::func::FuncOp>(name);
    for (auto f : m.getOps<mlir::func::FuncOp>())
      return f;
    return nullptr;
  }

  std::vector<HostTensor> run(Precision precision,
                              const std::vector<HostTensor> &arguments,
                              const std::string &name = "") const {
    return Interpreter(precision).run(function(name), arguments);
  }
};

/// Parses `source` (ls2 + func) as "test.mlir"; fails the test on errors.
inline Program parseProgram(const std::string &source) {
  Program p;
  p.context = std::make_unique<mlir::MLIRContext>();
  p.context->loadDialect<ls2c::ls2::LS2Dialect, mlir::func::FuncDialect>();
  p.module = mlir::parseSourceString<mlir::ModuleOp>(
      source, mlir::ParserConfig(p.context.get()), "test.mlir");
  EXPECT_TRUE(p.module) << "could not parse:\n" << source;
  return p;
}

/// A generator seeded from the running test's full name: different inputs
/// per test, the same on every run.
inline std::mt19937 testRng() {
  const ::testing::TestInfo *info =
      ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  std::seed_seq seq(name.begin(), name.end());
  return std::mt19937(seq);
}

inline std::vector<double> uniform(std::mt19937 &rng, size_t n, double lo,
                                   double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double &x : v)
    x = dist(rng);
  return v;
}

inline std::vector<double> normal(std::mt19937 &rng, size_t n, double stddev) {
  std::normal_distribution<double> dist(0.0, stddev);
  std::vector<double> v(n);
  for (double &x : v)
    x = dist(rng);
  return v;
}

inline size_t count(const std::vector<int64_t> &shape) {
  size_t n = 1;
  for (int64_t d : shape)
    n *= static_cast<size_t>(d);
  return n;
}

/// f32 values (doubles that are exact floats) in [lo, hi).
inline HostTensor randomF32(std::mt19937 &rng, std::vector<int64_t> shape,
                            double lo = -1.0, double hi = 1.0) {
  std::vector<double> v = uniform(rng, count(shape), lo, hi);
  for (double &x : v)
    x = static_cast<float>(x);
  return HostTensor::fromFloats(ElementType::F32, std::move(shape), v);
}

/// ||actual - expected|| / ||expected|| (or the absolute norm when the
/// expected values are all zero).
inline double relativeL2(const std::vector<double> &actual,
                         const std::vector<double> &expected) {
  EXPECT_EQ(actual.size(), expected.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < actual.size() && i < expected.size(); ++i) {
    diff += (actual[i] - expected[i]) * (actual[i] - expected[i]);
    norm += expected[i] * expected[i];
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

/// Tolerances of DESIGN.md: fp64 reference ~1e-12; f32 <= 1e-5 relative L2.
constexpr double kF64Tolerance = 1e-12;
constexpr double kF32Tolerance = 1e-5;
constexpr double kF16Tolerance = 5e-3;
constexpr double kBF16Tolerance = 2e-2;

/// Philox-4x32-10 written independently of lib/Reference (checked against
/// Random123's vectors in ReferenceInterpreterTest).
inline std::array<uint32_t, 4> naivePhilox(std::array<uint32_t, 4> c,
                                           std::array<uint32_t, 2> k) {
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = uint64_t{0xD2511F53} * c[0];
    uint64_t p1 = uint64_t{0xCD9E8D57} * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0],
         static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1],
         static_cast<uint32_t>(p0)};
    k[0] += 0x9E3779B9;
    k[1] += 0xBB67AE85;
  }
  return c;
}

/// ls2.random_uniform's element e: the 16-bit half e % 2 of word (e / 2) % 4
/// of the call at counter (e / 8, stream, offset), times 2^-16.
inline double naiveRandomUniform(uint64_t seed, uint64_t offset,
                                 uint32_t stream, uint64_t e) {
  uint64_t block = e / 8;
  auto words = naivePhilox(
      {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
       stream, static_cast<uint32_t>(offset)},
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  uint32_t word = words[(e / 2) % 4];
  return std::ldexp(static_cast<double>(e % 2 ? word >> 16 : word & 0xffff),
                    -16);
}

/// ls2.attention's dropout number of query i and key j (their indices
/// within the sequence, whose first packed query row is q0), head h of hq:
/// queries 16a + b and 16a + b + 8 and keys 32s + 8m + 2t + p share counter
/// (4s + t, (q0 + 16a + b) * hq + h, stream, offset); (i, j) is byte
/// 2 ((i / 8) % 2) + j % 2 of word (j / 8) % 4, times 2^-8.
inline double naiveAttentionUniform(uint64_t seed, uint64_t offset,
                                    uint32_t stream, uint64_t q0, uint64_t i,
                                    uint64_t h, uint64_t hq, uint64_t j) {
  uint64_t pairRow = q0 + 16 * (i / 16) + i % 8;
  auto words = naivePhilox(
      {static_cast<uint32_t>(4 * (j / 32) + (j / 2) % 4),
       static_cast<uint32_t>(pairRow * hq + h), stream,
       static_cast<uint32_t>(offset)},
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  uint32_t word = words[(j / 8) % 4];
  uint32_t byte = 2 * ((i / 8) % 2) + j % 2;
  return std::ldexp(static_cast<double>((word >> (8 * byte)) & 0xff), -8);
}

/// The rate ls2.attention's dropout applies: `rate` rounded up to a multiple
/// of 2^-8 (at most 255/256), as an 8-bit number is compared with it.
inline double naiveAttentionAppliedRate(double rate) {
  return std::min(std::ceil(static_cast<double>(static_cast<float>(rate)) * 256), 255.0) /
         256;
}

/// Runs `p` in f64 and returns the InterpreterError's message ("" when none).
inline std::string errorOf(const Program &p, const std::vector<HostTensor> &args) {
  try {
    p.run(Precision::F64, args);
  } catch (const InterpreterError &e) {
    return e.what();
  }
  return "";
}

} // namespace ls2c::reference::testing

#endif // LS2C_TEST_UNIT_REFERENCETESTUTIL_H
