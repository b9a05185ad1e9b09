//===- ReferenceGradTest.cpp - the backward composites of the interpreter -===//
//
// layer_norm_grad, softmax_grad, gelu_grad, cross_entropy_grad and
// attention_grad against naive computations written here (explicit
// Jacobians, explicit per-sequence probability matrices), in F64 (1e-12)
// and F32 mode (1e-5; f16/bf16 storage within their tolerances), and the
// first four against their ls2-decompose lowering run through the same
// interpreter.
//
//===----------------------------------------------------------------------===//
#include "ReferenceTestUtil.h"

#include "ls2c/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>

using namespace ls2c::reference;
using namespace ls2c::reference::testing;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kPi = 3.14159265358979323846;

HostTensor f32(std::vector<int64_t> shape, std::vector<double> values) {
  return HostTensor::fromFloats(ElementType::F32, std::move(shape),
                                std::move(values));
}

/// Values k / 64 with |k| <= 128: exact in f16 and bf16.
HostTensor halfExact(std::mt19937 &rng, ElementType type,
                     std::vector<int64_t> shape, double range = 2.0) {
  std::vector<double> v = uniform(rng, count(shape), -range, range);
  for (double &x : v)
    x = std::round(x * 64) / 64;
  return HostTensor::fromFloats(type, std::move(shape), v);
}

/// Runs ls2-decompose on a clone of `p`'s module; fails the test on errors.
Program decomposed(const Program &p) {
  Program d;
  d.context = std::make_unique<mlir::MLIRContext>();
  d.context->loadDialect<ls2c::ls2::LS2Dialect, mlir::func::FuncDialect>();
  std::string text;
  llvm::raw_string_ostream os(text);
  mlir::ModuleOp(p.module.get()).print(os);
  d.module = mlir::parseSourceString<mlir::ModuleOp>(
      os.str(), mlir::ParserConfig(d.context.get()), "decomposed.mlir");
  EXPECT_TRUE(d.module);
  mlir::PassManager pm(d.context.get());
  pm.addPass(ls2c::createDecompose());
  EXPECT_TRUE(mlir::succeeded(pm.run(d.module.get())));
  return d;
}

/// Whether an op named `name` is in `p`.
bool contains(const Program &p, llvm::StringRef name) {
  bool found = false;
  mlir::ModuleOp(p.module.get()).walk([&](mlir::Operation *op) {
    found |= op->getName().getStringRef() == name;
  });
  return found;
}

//===----------------------------------------------------------------------===//
// layer_norm_grad
//===----------------------------------------------------------------------===//

struct LayerNormGrads {
  std::vector<double> dx, dgamma, dbeta, mean, rstd;
};

/// The statistics two-pass, then the gradients through the explicit
/// Jacobian d xhat_i / d x_j = rstd (delta_ij - 1/H - xhat_i xhat_j / H).
LayerNormGrads naiveLayerNormGrad(const HostTensor &dy, const HostTensor &x,
                                  const HostTensor &gamma, double epsilon) {
  int64_t h = x.shape.back(), rows = x.numElements() / h;
  LayerNormGrads r;
  r.dx.assign(x.floats.size(), 0.0);
  r.dgamma.assign(h, 0.0);
  r.dbeta.assign(h, 0.0);
  for (int64_t row = 0; row < rows; ++row) {
    const double *xr = &x.floats[row * h], *dyr = &dy.floats[row * h];
    double mu = 0, var = 0;
    for (int64_t i = 0; i < h; ++i)
      mu += xr[i] / static_cast<double>(h);
    for (int64_t i = 0; i < h; ++i)
      var += (xr[i] - mu) * (xr[i] - mu) / static_cast<double>(h);
    double rstd = 1 / std::sqrt(var + epsilon);
    r.mean.push_back(mu);
    r.rstd.push_back(rstd);
    std::vector<double> xhat(h);
    for (int64_t i = 0; i < h; ++i)
      xhat[i] = (xr[i] - mu) * rstd;
    for (int64_t j = 0; j < h; ++j) {
      double sum = 0;
      for (int64_t i = 0; i < h; ++i)
        sum += dyr[i] * gamma.floats[i] * rstd *
               ((i == j ? 1.0 : 0.0) - 1.0 / static_cast<double>(h) -
                xhat[i] * xhat[j] / static_cast<double>(h));
      r.dx[row * h + j] = sum;
      r.dgamma[j] += dyr[j] * xhat[j];
      r.dbeta[j] += dyr[j];
    }
  }
  return r;
}

std::string layerNormGradProgram(const std::string &x, const std::string &g,
                                 const std::string &stats) {
  return "func.func @f(%dy: " + x + ", %x: " + x + ", %g: " + g + ", %m: " +
         stats + ", %r: " + stats + ") -> (" + x + ", " + g + ", " + g +
         ") {\n  %dx, %dg, %db = ls2.layer_norm_grad %dy, %x, %g, %m, %r : " +
         x + ", " + g + ", " + stats + "\n  return %dx, %dg, %db : " + x +
         ", " + g + ", " + g + "\n}\n";
}

TEST(ReferenceLayerNormGrad, MatchesTheExplicitJacobian) {
  std::mt19937 rng = testRng();
  struct Case {
    std::vector<int64_t> shape;
    std::string x, g, stats;
  };
  // Rows 1, 3, 7 and 21 (two leading dims), hidden 33, 7, 1 and a rank-1
  // input whose statistics are rank 0.
  std::vector<Case> cases = {
      {{7, 33}, "tensor<?x33xf32>", "tensor<33xf32>", "tensor<?xf32>"},
      {{1, 7}, "tensor<1x7xf32>", "tensor<7xf32>", "tensor<1xf32>"},
      {{3, 7, 33}, "tensor<3x?x33xf32>", "tensor<33xf32>", "tensor<3x?xf32>"},
      {{3, 1}, "tensor<3x1xf32>", "tensor<1xf32>", "tensor<3xf32>"},
      {{33}, "tensor<33xf32>", "tensor<33xf32>", "tensor<f32>"},
  };
  const double epsilon = 1e-5;
  for (const Case &c : cases) {
    SCOPED_TRACE(c.x);
    Program p = parseProgram(layerNormGradProgram(c.x, c.g, c.stats));
    int64_t h = c.shape.back();
    HostTensor x = randomF32(rng, c.shape, -2, 3);
    HostTensor dy = randomF32(rng, c.shape);
    HostTensor gamma = randomF32(rng, {h}, 0.5, 1.5);
    LayerNormGrads e = naiveLayerNormGrad(dy, x, gamma, epsilon);
    std::vector<int64_t> statsShape(c.shape.begin(), c.shape.end() - 1);
    std::vector<HostTensor> args = {dy, x, gamma, f32(statsShape, e.mean),
                                    f32(statsShape, e.rstd)};
    auto r = p.run(Precision::F64, args);
    EXPECT_LE(relativeL2(r[0].floats, e.dx), kF64Tolerance);
    EXPECT_LE(relativeL2(r[1].floats, e.dgamma), kF64Tolerance);
    EXPECT_LE(relativeL2(r[2].floats, e.dbeta), kF64Tolerance);
    auto r32 = p.run(Precision::F32, args);
    // Hidden 1 has dx = 0 up to rounding: compare absolutely there.
    EXPECT_LE(relativeL2(r32[0].floats, e.dx), h == 1 ? 1e-3 : kF32Tolerance);
    EXPECT_LE(relativeL2(r32[1].floats, e.dgamma), kF32Tolerance);
    EXPECT_LE(relativeL2(r32[2].floats, e.dbeta), kF32Tolerance);
    // Decomposed into primitives, the same numbers.
    Program d = decomposed(p);
    EXPECT_FALSE(contains(d, "ls2.layer_norm_grad"));
    auto rd = d.run(Precision::F64, args);
    for (int i = 0; i < 3; ++i)
      EXPECT_LE(relativeL2(rd[i].floats, r[i].floats), kF64Tolerance) << i;
  }
}

TEST(ReferenceLayerNormGrad, UsesTheSavedStatisticsAsTheyAre) {
  // Statistics that are not x's (the op must not recompute them): the
  // formula with the given mean and rstd.
  Program p = parseProgram(layerNormGradProgram(
      "tensor<3x7xf32>", "tensor<7xf32>", "tensor<3xf32>"));
  std::mt19937 rng = testRng();
  HostTensor x = randomF32(rng, {3, 7}), dy = randomF32(rng, {3, 7});
  HostTensor gamma = randomF32(rng, {7});
  std::vector<double> mean = {0.25, -0.5, 2.0}, rstd = {3.0, 0.5, 1.25};
  auto r = p.run(Precision::F64,
                 {dy, x, gamma, f32({3}, mean), f32({3}, rstd)});
  for (int64_t row = 0; row < 3; ++row) {
    double sumG = 0, sumGX = 0;
    for (int64_t i = 0; i < 7; ++i) {
      double g = dy.floats[row * 7 + i] * gamma.floats[i];
      sumG += g;
      sumGX += g * (x.floats[row * 7 + i] - mean[row]) * rstd[row];
    }
    for (int64_t i = 0; i < 7; ++i) {
      double g = dy.floats[row * 7 + i] * gamma.floats[i];
      double xhat = (x.floats[row * 7 + i] - mean[row]) * rstd[row];
      EXPECT_NEAR(r[0].floats[row * 7 + i],
                  rstd[row] * (g - sumG / 7 - xhat * sumGX / 7), 1e-13);
    }
  }
}

TEST(ReferenceLayerNormGrad, HalfStorageRoundsOnce) {
  std::mt19937 rng = testRng();
  for (ElementType type : {ElementType::BF16, ElementType::F16}) {
    std::string t = type == ElementType::BF16 ? "bf16" : "f16";
    SCOPED_TRACE(t);
    Program p = parseProgram(layerNormGradProgram(
        "tensor<?x33x" + t + ">", "tensor<33x" + t + ">", "tensor<?xf32>"));
    HostTensor x = halfExact(rng, type, {7, 33});
    HostTensor dy = halfExact(rng, type, {7, 33});
    HostTensor gamma = halfExact(rng, type, {33});
    LayerNormGrads e = naiveLayerNormGrad(dy, x, gamma, 1e-5);
    std::vector<HostTensor> args = {dy, x, gamma, f32({7}, e.mean),
                                    f32({7}, e.rstd)};
    for (double &s : args[3].floats)
      s = static_cast<float>(s);
    for (double &s : args[4].floats)
      s = static_cast<float>(s);
    auto r = p.run(Precision::F32, args);
    double tolerance = type == ElementType::BF16 ? kBF16Tolerance : kF16Tolerance;
    EXPECT_LE(relativeL2(r[0].floats, e.dx), tolerance);
    EXPECT_LE(relativeL2(r[1].floats, e.dgamma), tolerance);
    EXPECT_LE(relativeL2(r[2].floats, e.dbeta), tolerance);
    EXPECT_EQ(r[0].type, type);
    EXPECT_EQ(r[1].type, type);
  }
}

//===----------------------------------------------------------------------===//
// softmax_grad
//===----------------------------------------------------------------------===//

/// y: softmax rows of random scores with some positions masked (0), and
/// whole rows of zeros (no visible key).
HostTensor maskedSoftmaxRows(std::mt19937 &rng, std::vector<int64_t> shape) {
  int64_t keys = shape.back(), rows = static_cast<int64_t>(count(shape)) / keys;
  std::vector<double> y(count(shape), 0.0);
  std::bernoulli_distribution masked(0.25);
  for (int64_t r = 0; r < rows; ++r) {
    if (r % 5 == 4)
      continue; // a fully masked row
    std::vector<double> s = uniform(rng, keys, -3, 3);
    std::vector<bool> keep(keys);
    double sum = 0;
    for (int64_t j = 0; j < keys; ++j) {
      keep[j] = j == 0 || !masked(rng);
      sum += keep[j] ? std::exp(s[j]) : 0.0;
    }
    for (int64_t j = 0; j < keys; ++j)
      y[r * keys + j] = keep[j] ? std::exp(s[j]) / sum : 0.0;
  }
  return f32(shape, y);
}

/// dx_j = scale * sum_i dy_i * dy_i/dx_j with the softmax Jacobian
/// y_i (delta_ij - y_j).
std::vector<double> naiveSoftmaxGrad(const HostTensor &dy, const HostTensor &y,
                                     double scale) {
  int64_t keys = y.shape.back(), rows = y.numElements() / keys;
  std::vector<double> dx(y.floats.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < keys; ++j) {
      double sum = 0;
      for (int64_t i = 0; i < keys; ++i)
        sum += dy.floats[r * keys + i] * y.floats[r * keys + i] *
               ((i == j ? 1.0 : 0.0) - y.floats[r * keys + j]);
      dx[r * keys + j] = scale * sum;
    }
  return dx;
}

TEST(ReferenceSoftmaxGrad, MatchesTheJacobianAndZeroesMaskedRows) {
  std::mt19937 rng = testRng();
  struct Case {
    std::vector<int64_t> shape;
    std::string type, scale;
    double scaleValue;
  };
  std::vector<Case> cases = {
      {{3, 7, 33}, "tensor<3x?x33xf32>", "1.250000e-01 : f32", 0.125},
      {{7, 1}, "tensor<?x1xf32>", "1.000000e+00 : f32", 1.0},
      {{1, 7}, "tensor<1x7xf32>", "-2.500000e+00 : f32", -2.5},
      {{33}, "tensor<33xf32>", "3.000000e+00 : f32", 3.0},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.type);
    Program p = parseProgram(
        "func.func @f(%dy: " + c.type + ", %y: " + c.type + ") -> " + c.type +
        " {\n  %dx = ls2.softmax_grad %dy, %y {scale = " + c.scale + "} : " +
        c.type + "\n  return %dx : " + c.type + "\n}\n");
    HostTensor y = maskedSoftmaxRows(rng, c.shape);
    HostTensor dy = randomF32(rng, c.shape, -2, 2);
    std::vector<double> e = naiveSoftmaxGrad(dy, y, c.scaleValue);
    auto r = p.run(Precision::F64, {dy, y});
    EXPECT_LE(relativeL2(r[0].floats, e), kF64Tolerance);
    // Masked positions and rows with no visible key: exactly 0.
    for (size_t i = 0; i < y.floats.size(); ++i) {
      if (y.floats[i] == 0.0) {
        EXPECT_EQ(r[0].floats[i], 0.0) << i;
      }
    }
    auto r32 = p.run(Precision::F32, {dy, y});
    EXPECT_LE(relativeL2(r32[0].floats, e), kF32Tolerance);
    Program d = decomposed(p);
    EXPECT_FALSE(contains(d, "ls2.softmax_grad"));
    EXPECT_LE(relativeL2(d.run(Precision::F64, {dy, y})[0].floats, r[0].floats),
              kF64Tolerance);
  }
}

TEST(ReferenceSoftmaxGrad, HalfStorageRoundsOnce) {
  Program p = parseProgram(R"(
func.func @f(%dy: tensor<?x33xbf16>, %y: tensor<?x33xbf16>) -> tensor<?x33xbf16> {
  %dx = ls2.softmax_grad %dy, %y {scale = 5.000000e-01 : f32} : tensor<?x33xbf16>
  return %dx : tensor<?x33xbf16>
})");
  std::mt19937 rng = testRng();
  // bf16-exact operands (softmax_grad does not need y to sum to 1).
  HostTensor y = halfExact(rng, ElementType::BF16, {7, 33}, 1.0);
  for (double &v : y.floats)
    v = std::fabs(v);
  HostTensor dy = halfExact(rng, ElementType::BF16, {7, 33});
  std::vector<double> e = naiveSoftmaxGrad(dy, y, 0.5);
  auto r = p.run(Precision::F32, {dy, y});
  EXPECT_EQ(r[0].type, ElementType::BF16);
  EXPECT_LE(relativeL2(r[0].floats, e), kBF16Tolerance);
  EXPECT_LE(relativeL2(p.run(Precision::F64, {dy, y})[0].floats, e),
            kF64Tolerance);
}

//===----------------------------------------------------------------------===//
// gelu_grad
//===----------------------------------------------------------------------===//

/// gelu'(x), written with erfc and sech^2 rather than the op's forms.
double naiveGeluDerivative(double x, bool tanhForm, double k, double c,
                           double invSqrt2, double invSqrt2Pi) {
  if (!tanhForm)
    return 0.5 * std::erfc(-x * invSqrt2) + x * std::exp(-x * x / 2) * invSqrt2Pi;
  double u = k * (x + c * x * x * x);
  double sech = 1 / std::cosh(u);
  return 0.5 + 0.5 * std::tanh(u) +
         0.5 * x * sech * sech * k * (1 + 3 * c * x * x);
}

const char *kGeluGradProgram = R"(
func.func @f(%dy: tensor<?x33xf32>, %x: tensor<?x33xf32>) -> (tensor<?x33xf32>, tensor<?x33xf32>) {
  %a = ls2.gelu_grad %dy, %x : tensor<?x33xf32>
  %b = ls2.gelu_grad %dy, %x {approximate = #ls2<gelu_approximation tanh>} : tensor<?x33xf32>
  return %a, %b : tensor<?x33xf32>, tensor<?x33xf32>
})";

TEST(ReferenceGeluGrad, ExactDerivativeOfBothForms) {
  Program p = parseProgram(kGeluGradProgram);
  std::mt19937 rng = testRng();
  for (int64_t rows : {1, 3, 7}) {
    HostTensor x = randomF32(rng, {rows, 33}, -5, 5);
    HostTensor dy = randomF32(rng, {rows, 33}, -2, 2);
    x.floats[0] = 0.0;
    std::vector<double> e0, e1;
    for (size_t i = 0; i < x.floats.size(); ++i) {
      double xi = x.floats[i];
      e0.push_back(dy.floats[i] *
                   naiveGeluDerivative(xi, false, 0, 0, std::sqrt(0.5),
                                       1 / std::sqrt(2 * kPi)));
      e1.push_back(dy.floats[i] * naiveGeluDerivative(xi, true,
                                                      std::sqrt(2 / kPi),
                                                      0.044715, 0, 0));
    }
    auto r = p.run(Precision::F64, {dy, x});
    EXPECT_LE(relativeL2(r[0].floats, e0), kF64Tolerance);
    EXPECT_LE(relativeL2(r[1].floats, e1), kF64Tolerance);
    auto r32 = p.run(Precision::F32, {dy, x});
    EXPECT_LE(relativeL2(r32[0].floats, e0), kF32Tolerance);
    EXPECT_LE(relativeL2(r32[1].floats, e1), kF32Tolerance);
  }
}

TEST(ReferenceGeluGrad, MatchesItsDecomposition) {
  // ls2-decompose bakes its irrational constants (sqrt(1/2), 1/sqrt(2 pi),
  // sqrt(2/pi), 0.044715, 3 * 0.044715) into f32 constants, which the
  // interpreter reads exactly; the kernel uses the double constants of the
  // forward gelu kernel. So: the decomposition equals the naive derivative
  // with those f32 constants to 1e-12, and the kernel within the
  // constants' f32 rounding (~1e-7).
  Program p = parseProgram(kGeluGradProgram);
  Program d = decomposed(p);
  EXPECT_FALSE(contains(d, "ls2.gelu_grad"));
  std::mt19937 rng = testRng();
  HostTensor x = randomF32(rng, {7, 33}, -5, 5);
  HostTensor dy = randomF32(rng, {7, 33}, -2, 2);
  auto r = p.run(Precision::F64, {dy, x});
  auto rd = d.run(Precision::F64, {dy, x});
  auto f = [](double v) { return static_cast<double>(static_cast<float>(v)); };
  std::vector<double> e0, e1;
  for (size_t i = 0; i < x.floats.size(); ++i) {
    double xi = x.floats[i];
    // The decomposition's exact arithmetic: erf(x * f(sqrt 1/2)) and
    // exp(-x^2/2) * f(1/sqrt(2 pi)); tanh(f(k) * (x + f(c) x^3)) with
    // (1 + f(3c) x^2) * f(k).
    double cdf = (std::erf(xi * f(std::sqrt(0.5))) + 1) * 0.5;
    double pdf = std::exp(xi * xi * -0.5) * f(1 / std::sqrt(2 * kPi));
    e0.push_back(dy.floats[i] * (cdf + xi * pdf));
    double k = f(std::sqrt(2 / kPi)), c = f(0.044715), c3 = f(3 * 0.044715);
    double t = std::tanh((xi + xi * xi * xi * c) * k);
    e1.push_back(dy.floats[i] * ((t + 1) * 0.5 + xi * 0.5 * (1 - t * t) *
                                                     ((xi * xi * c3 + 1) * k)));
  }
  EXPECT_LE(relativeL2(rd[0].floats, e0), kF64Tolerance);
  EXPECT_LE(relativeL2(rd[1].floats, e1), kF64Tolerance);
  EXPECT_LE(relativeL2(rd[0].floats, r[0].floats), 1e-6);
  EXPECT_LE(relativeL2(rd[1].floats, r[1].floats), 1e-6);
  if (std::getenv("LS2C_GRADCHECK_VERBOSE"))
    std::printf("  gelu_grad kernel vs decomposition: %.2e (erf), %.2e (tanh)\n",
                relativeL2(rd[0].floats, r[0].floats),
                relativeL2(rd[1].floats, r[1].floats));
}

//===----------------------------------------------------------------------===//
// cross_entropy_grad
//===----------------------------------------------------------------------===//

enum class Reduction { None, Sum, Mean };

/// d/dx_j of (1 - eps)(lse - x_t) + eps(lse - mean(x)), weighted.
std::vector<double> naiveCrossEntropyGrad(const HostTensor &logits,
                                          const std::vector<int64_t> &targets,
                                          const std::vector<double> &dloss,
                                          double eps, int64_t ignoreIndex,
                                          Reduction reduction) {
  int64_t n = logits.shape[0], c = logits.shape[1];
  int64_t counted = std::count_if(targets.begin(), targets.end(),
                                  [&](int64_t t) { return t != ignoreIndex; });
  std::vector<double> dx(logits.floats.size(), 0.0);
  for (int64_t r = 0; r < n; ++r) {
    if (targets[r] == ignoreIndex)
      continue;
    double w = reduction == Reduction::None ? dloss[r] : dloss[0];
    if (reduction == Reduction::Mean)
      w /= static_cast<double>(counted);
    double z = 0;
    for (int64_t j = 0; j < c; ++j)
      z += std::exp(logits.floats[r * c + j]);
    for (int64_t j = 0; j < c; ++j) {
      double dLse = std::exp(logits.floats[r * c + j]) / z;
      double dTarget = j == targets[r] ? 1.0 : 0.0;
      double dMean = 1.0 / static_cast<double>(c);
      dx[r * c + j] = w * ((1 - eps) * (dLse - dTarget) + eps * (dLse - dMean));
    }
  }
  return dx;
}

std::string crossEntropyGradProgram(const std::string &logits,
                                    const std::string &targets,
                                    const std::string &dloss,
                                    const std::string &attrs) {
  return "func.func @f(%dl: " + dloss + ", %x: " + logits + ", %t: " +
         targets + ") -> " + logits +
         " {\n  %dx = ls2.cross_entropy_grad %dl, %x, %t {" + attrs + "} : " +
         dloss + ", " + logits + ", " + targets + "\n  return %dx : " +
         logits + "\n}\n";
}

TEST(ReferenceCrossEntropyGrad, SmoothingIgnoreIndexAndReductions) {
  std::mt19937 rng = testRng();
  struct Case {
    Reduction reduction;
    std::string name;
    int64_t n, c;
    double eps;
    std::string epsText;
    bool exactConstants; // eps / C and 1 - eps + eps / C exact in f32
  };
  std::vector<Case> cases = {
      {Reduction::Mean, "mean", 7, 33, 0.1, "1.000000e-01", false},
      {Reduction::Sum, "sum", 3, 7, 0.25, "2.500000e-01", false},
      {Reduction::None, "none", 7, 33, 0.0, "0.000000e+00", true},
      {Reduction::Mean, "mean", 7, 32, 0.25, "2.500000e-01", true},
      {Reduction::None, "none", 3, 8, 0.5, "5.000000e-01", true},
      {Reduction::Sum, "sum", 1, 33, 0.0, "0.000000e+00", true},
  };
  for (const Case &c : cases) {
    for (std::string idType : {"i32", "i64"}) {
      SCOPED_TRACE(c.name + " " + std::to_string(c.n) + "x" +
                   std::to_string(c.c) + " eps " + c.epsText + " " + idType);
      std::string logits = "tensor<?x" + std::to_string(c.c) + "xf32>";
      std::string targets = "tensor<?x" + idType + ">";
      std::string dloss =
          c.reduction == Reduction::None ? "tensor<?xf32>" : "tensor<f32>";
      Program p = parseProgram(crossEntropyGradProgram(
          logits, targets, dloss,
          "label_smoothing = " + c.epsText + " : f32, ignore_index = 2 : "
          "i64, reduction = #ls2<loss_reduction " + c.name + ">"));
      HostTensor x = randomF32(rng, {c.n, c.c}, -4, 4);
      std::uniform_int_distribution<int64_t> cls(0, c.c - 1);
      std::vector<int64_t> t(c.n);
      for (int64_t r = 0; r < c.n; ++r)
        t[r] = r % 3 == 1 ? 2 : cls(rng); // rows 1, 4: ignored
      std::vector<double> dl =
          c.reduction == Reduction::None ? uniform(rng, c.n, -2, 2)
                                         : std::vector<double>{0.75};
      for (double &v : dl)
        v = static_cast<float>(v);
      HostTensor dlT =
          c.reduction == Reduction::None ? f32({c.n}, dl) : f32({}, dl);
      HostTensor tT = HostTensor::fromInts(
          idType == "i32" ? ElementType::I32 : ElementType::I64, {c.n}, t);
      std::vector<double> e = naiveCrossEntropyGrad(
          x, t, dl, static_cast<double>(static_cast<float>(c.eps)), 2,
          c.reduction);
      auto r = p.run(Precision::F64, {dlT, x, tT});
      EXPECT_LE(relativeL2(r[0].floats, e), kF64Tolerance);
      for (int64_t row = 0; row < c.n; ++row) {
        if (t[row] != 2)
          continue;
        for (int64_t j = 0; j < c.c; ++j)
          EXPECT_EQ(r[0].floats[row * c.c + j], 0.0);
      }
      auto r32 = p.run(Precision::F32, {dlT, x, tT});
      EXPECT_LE(relativeL2(r32[0].floats, e), kF32Tolerance);
      Program d = decomposed(p);
      EXPECT_FALSE(contains(d, "ls2.cross_entropy_grad"));
      auto rd = d.run(Precision::F64, {dlT, x, tT});
      // The decomposition holds 1 - eps + eps / C and eps / C as f32
      // constants: exact agreement where those are exact in f32.
      EXPECT_LE(relativeL2(rd[0].floats, r[0].floats),
                c.exactConstants ? kF64Tolerance : 1e-7);
      if (std::getenv("LS2C_GRADCHECK_VERBOSE"))
        std::printf("  cross_entropy_grad %s eps %s C %lld kernel vs "
                    "decomposition: %.2e\n",
                    c.name.c_str(), c.epsText.c_str(),
                    static_cast<long long>(c.c),
                    relativeL2(rd[0].floats, r[0].floats));
    }
  }
}

TEST(ReferenceCrossEntropyGrad, AllIgnoredGivesZerosAndBadTargetsThrow) {
  Program p = parseProgram(crossEntropyGradProgram(
      "tensor<3x7xf32>", "tensor<3xi32>", "tensor<f32>",
      "reduction = #ls2<loss_reduction mean>"));
  std::mt19937 rng = testRng();
  HostTensor x = randomF32(rng, {3, 7});
  HostTensor dl = f32({}, {1.0});
  auto r = p.run(Precision::F64,
                 {dl, x, HostTensor::fromInts(ElementType::I32, {3},
                                              {-100, -100, -100})});
  for (double v : r[0].floats)
    EXPECT_EQ(v, 0.0);
  try {
    p.run(Precision::F64,
          {dl, x, HostTensor::fromInts(ElementType::I32, {3}, {0, 7, 1})});
    ADD_FAILURE() << "target 7 of 7 classes did not throw";
  } catch (const InterpreterError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "'ls2.cross_entropy_grad' op target 7 of row 1 is outside "
                  "the classes [0, 7)"),
              std::string::npos)
        << e.what();
  }
}

TEST(ReferenceCrossEntropyGrad, HalfLogitsRoundOnce) {
  Program p = parseProgram(crossEntropyGradProgram(
      "tensor<?x33xbf16>", "tensor<?xi32>", "tensor<f32>",
      "label_smoothing = 1.000000e-01 : f32, reduction = "
      "#ls2<loss_reduction sum>"));
  std::mt19937 rng = testRng();
  HostTensor x = halfExact(rng, ElementType::BF16, {7, 33}, 4);
  std::vector<int64_t> t = {0, 32, 5, -100, 7, 7, 1};
  auto r = p.run(Precision::F32,
                 {f32({}, {1.0}), x,
                  HostTensor::fromInts(ElementType::I32, {7}, t)});
  std::vector<double> e = naiveCrossEntropyGrad(
      x, t, {1.0}, static_cast<double>(0.1f), -100, Reduction::Sum);
  EXPECT_EQ(r[0].type, ElementType::BF16);
  EXPECT_LE(relativeL2(r[0].floats, e), kBF16Tolerance);
}

//===----------------------------------------------------------------------===//
// attention_grad
//===----------------------------------------------------------------------===//

struct AttentionDropout {
  double rate = 0;
  uint64_t seed = 0, offset = 0;
  uint32_t stream = 0;
};

struct NaiveAttention {
  std::vector<double> out, lse, dq, dk, dv;
};

/// Per sequence and query head: the score matrix S = scale Q K^T with the
/// causal (bottom-right) mask, P = softmax(S) by rows (a row with no
/// visible key is 0), the keep matrix M (dropout, scaled by 1 / (1 - rate)),
/// O = (P o M) V, then dV = (P o M)^T dO, dP = (dO V^T) o M,
/// dS = P o (dP - rowsum(dO o O)), dQ = scale dS K, dK = scale dS^T Q,
/// with dK and dV summed over the query heads of each kv head.
NaiveAttention naiveAttentionGrad(const HostTensor &q, const HostTensor &k,
                                  const HostTensor &v, const HostTensor &dout,
                                  const std::vector<int64_t> &cuq,
                                  const std::vector<int64_t> &cuk,
                                  double scale, bool causal,
                                  AttentionDropout dropout = {}) {
  int64_t hq = q.shape[1], d = q.shape[2], hkv = k.shape[1];
  NaiveAttention r;
  r.out.assign(q.floats.size(), 0.0);
  r.dq.assign(q.floats.size(), 0.0);
  r.dk.assign(k.floats.size(), 0.0);
  r.dv.assign(k.floats.size(), 0.0);
  r.lse.assign(static_cast<size_t>(q.shape[0] * hq), -kInf);
  auto qAt = [&](int64_t row, int64_t h, int64_t c) {
    return (row * hq + h) * d + c;
  };
  auto kAt = [&](int64_t row, int64_t g, int64_t c) {
    return (row * hkv + g) * d + c;
  };
  for (size_t b = 0; b + 1 < cuq.size(); ++b) {
    int64_t lq = cuq[b + 1] - cuq[b], lk = cuk[b + 1] - cuk[b];
    for (int64_t h = 0; h < hq; ++h) {
      int64_t g = h / (hq / hkv);
      std::vector<std::vector<double>> P(lq, std::vector<double>(lk, 0.0));
      std::vector<std::vector<double>> M(lq, std::vector<double>(lk, 1.0));
      for (int64_t i = 0; i < lq; ++i) {
        int64_t row = cuq[b] + i;
        std::vector<double> s(lk);
        double best = -kInf;
        for (int64_t j = 0; j < lk; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < d; ++c)
            dot += q.floats[qAt(row, h, c)] * k.floats[kAt(cuk[b] + j, g, c)];
          s[j] = (causal && j > i + (lk - lq)) ? -kInf : scale * dot;
          best = std::max(best, s[j]);
        }
        if (best == -kInf)
          continue; // no visible key: P row stays 0
        double z = 0;
        for (int64_t j = 0; j < lk; ++j)
          z += std::exp(s[j] - best);
        r.lse[row * hq + h] = best + std::log(z);
        for (int64_t j = 0; j < lk; ++j) {
          P[i][j] = std::exp(s[j] - best) / z;
          if (dropout.rate > 0) {
            M[i][j] = naiveAttentionUniform(
                          dropout.seed, dropout.offset, dropout.stream,
                          static_cast<uint64_t>(cuq[b]),
                          static_cast<uint64_t>(i), static_cast<uint64_t>(h),
                          static_cast<uint64_t>(hq),
                          static_cast<uint64_t>(j)) >=
                              naiveAttentionAppliedRate(dropout.rate)
                          ? 1 / (1 - naiveAttentionAppliedRate(dropout.rate))
                          : 0.0;
          }
        }
      }
      // O = (P o M) V
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t c = 0; c < d; ++c)
          for (int64_t j = 0; j < lk; ++j)
            r.out[qAt(cuq[b] + i, h, c)] +=
                P[i][j] * M[i][j] * v.floats[kAt(cuk[b] + j, g, c)];
      // D_i = rowsum(dO o O), dP = (dO V^T) o M, dS = P o (dP - D)
      std::vector<std::vector<double>> dS(lq, std::vector<double>(lk, 0.0));
      for (int64_t i = 0; i < lq; ++i) {
        double D = 0;
        for (int64_t c = 0; c < d; ++c)
          D += dout.floats[qAt(cuq[b] + i, h, c)] *
               r.out[qAt(cuq[b] + i, h, c)];
        for (int64_t j = 0; j < lk; ++j) {
          double dP = 0;
          for (int64_t c = 0; c < d; ++c)
            dP += dout.floats[qAt(cuq[b] + i, h, c)] *
                  v.floats[kAt(cuk[b] + j, g, c)];
          dS[i][j] = P[i][j] * (dP * M[i][j] - D);
        }
      }
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t j = 0; j < lk; ++j)
          for (int64_t c = 0; c < d; ++c) {
            r.dq[qAt(cuq[b] + i, h, c)] +=
                scale * dS[i][j] * k.floats[kAt(cuk[b] + j, g, c)];
            r.dk[kAt(cuk[b] + j, g, c)] +=
                scale * dS[i][j] * q.floats[qAt(cuq[b] + i, h, c)];
            r.dv[kAt(cuk[b] + j, g, c)] +=
                P[i][j] * M[i][j] * dout.floats[qAt(cuq[b] + i, h, c)];
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

/// attention_grad alone (fed the naive out and lse), and attention chained
/// into attention_grad (fed the interpreter's).
std::string attentionGradProgram(int64_t hq, int64_t hkv, int64_t d,
                                 const std::string &attrs, bool dropout) {
  std::string q = "tensor<?x" + std::to_string(hq) + "x" + std::to_string(d) +
                  "xf32>";
  std::string k = "tensor<?x" + std::to_string(hkv) + "x" +
                  std::to_string(d) + "xf32>";
  std::string lse = "tensor<?x" + std::to_string(hq) + "xf32>";
  std::string cu = "tensor<?xi32>";
  std::string drop = dropout ? " dropout(%seed, %offset)" : "";
  std::string seedArgs = dropout ? ", %seed: tensor<i64>, %offset: tensor<i64>" : "";
  std::string grad = "ls2.attention_grad %dout, %q, %k, %v, %o, %lse, %cuq, "
                     "%cuk" + drop + " {" + attrs + "} : " + q + ", " + k +
                     ", " + lse + ", " + cu + ", " + cu;
  return "func.func @alone(%dout: " + q + ", %q: " + q + ", %k: " + k +
         ", %v: " + k + ", %o: " + q + ", %lse: " + lse + ", %cuq: " + cu +
         ", %cuk: " + cu + seedArgs + ") -> (" + q + ", " + k + ", " + k +
         ") {\n  %dq, %dk, %dv = " + grad + "\n  return %dq, %dk, %dv : " +
         q + ", " + k + ", " + k + "\n}\n" +
         "func.func @chained(%dout: " + q + ", %q: " + q + ", %k: " + k +
         ", %v: " + k + ", %cuq: " + cu + ", %cuk: " + cu + seedArgs +
         ") -> (" + q + ", " + lse + ", " + q + ", " + k + ", " + k +
         ") {\n  %o, %lse = ls2.attention %q, %k, %v, %cuq, %cuk" + drop +
         " {" + attrs + "} : " + q + ", " + k + ", " + k + ", " + cu + ", " +
         cu + " -> " + q + ", " + lse + "\n  %dq, %dk, %dv = " + grad +
         "\n  return %o, %lse, %dq, %dk, %dv : " + q + ", " + lse + ", " + q +
         ", " + k + ", " + k + "\n}\n";
}

struct AttentionCase {
  std::string name;
  int64_t hq, hkv, d;
  std::vector<int64_t> lq, lk;
  bool causal;
  double scale; ///< 0: the default 1/sqrt(D)
  AttentionDropout dropout;
};

void checkAttentionGrad(const AttentionCase &c, std::mt19937 &rng) {
  SCOPED_TRACE(c.name);
  std::string attrs;
  auto add = [&](const std::string &a) {
    attrs += (attrs.empty() ? "" : ", ") + a;
  };
  if (c.causal)
    add("causal");
  if (c.scale != 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "scale = %.9e : f32", c.scale);
    add(buf);
  }
  bool dropout = c.dropout.rate > 0;
  if (dropout) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "dropout_rate = %.9e : f32, stream = %u",
                  c.dropout.rate, c.dropout.stream);
    add(buf);
  }
  Program p = parseProgram(attentionGradProgram(c.hq, c.hkv, c.d, attrs, dropout));
  std::vector<int64_t> cuq = offsets(c.lq), cuk = offsets(c.lk);
  int64_t tq = cuq.back(), tk = cuk.back();
  HostTensor q = randomF32(rng, {tq, c.hq, c.d}, -1, 1);
  HostTensor k = randomF32(rng, {tk, c.hkv, c.d}, -1, 1);
  HostTensor v = randomF32(rng, {tk, c.hkv, c.d}, -1, 1);
  HostTensor dout = randomF32(rng, {tq, c.hq, c.d}, -1, 1);
  double scale = c.scale != 0
                     ? static_cast<double>(static_cast<float>(c.scale))
                     : static_cast<double>(
                           1.0f / std::sqrt(static_cast<float>(c.d)));
  AttentionDropout drop = c.dropout;
  drop.rate = static_cast<double>(static_cast<float>(drop.rate));
  NaiveAttention e =
      naiveAttentionGrad(q, k, v, dout, cuq, cuk, scale, c.causal, drop);
  std::vector<HostTensor> seedArgs;
  if (dropout)
    seedArgs = {HostTensor::scalarInt(ElementType::I64,
                                      static_cast<int64_t>(drop.seed)),
                HostTensor::scalarInt(ElementType::I64,
                                      static_cast<int64_t>(drop.offset))};

  std::vector<HostTensor> alone = {
      dout, q, k, v, f32(q.shape, e.out), f32({tq, c.hq}, e.lse),
      cuTensor(cuq), cuTensor(cuk)};
  alone.insert(alone.end(), seedArgs.begin(), seedArgs.end());
  auto r = p.run(Precision::F64, alone, "alone");
  EXPECT_LE(relativeL2(r[0].floats, e.dq), kF64Tolerance);
  EXPECT_LE(relativeL2(r[1].floats, e.dk), kF64Tolerance);
  EXPECT_LE(relativeL2(r[2].floats, e.dv), kF64Tolerance);

  std::vector<HostTensor> chained = {dout, q, k, v, cuTensor(cuq), cuTensor(cuk)};
  chained.insert(chained.end(), seedArgs.begin(), seedArgs.end());
  for (Precision precision : {Precision::F64, Precision::F32}) {
    SCOPED_TRACE(precision == Precision::F64 ? "chained F64" : "chained F32");
    double tolerance =
        precision == Precision::F64 ? kF64Tolerance : kF32Tolerance;
    auto rc = p.run(precision, chained, "chained");
    EXPECT_LE(relativeL2(rc[0].floats, e.out), tolerance);
    EXPECT_LE(relativeL2(rc[2].floats, e.dq), tolerance);
    EXPECT_LE(relativeL2(rc[3].floats, e.dk), tolerance);
    EXPECT_LE(relativeL2(rc[4].floats, e.dv), tolerance);
  }

  // Rows that see no key: dq exactly 0.
  for (size_t b = 0; b + 1 < cuq.size(); ++b) {
    int64_t lq = c.lq[b], lk = c.lk[b];
    for (int64_t i = 0; i < lq; ++i) {
      bool none = lk == 0 || (c.causal && i + (lk - lq) < 0);
      if (!none)
        continue;
      int64_t row = cuq[b] + i;
      for (int64_t x = 0; x < c.hq * c.d; ++x)
        EXPECT_EQ(r[0].floats[row * c.hq * c.d + x], 0.0) << "row " << row;
    }
  }
}

TEST(ReferenceAttentionGrad, VarlenGqaCausalMatchesTheNaiveMatrices) {
  std::mt19937 rng = testRng();
  // Sequences of length 1, 3, 7 and 33; Lq != Lk both ways (causal rows
  // with no visible key when Lq > Lk); an empty key sequence.
  std::vector<AttentionCase> cases = {
      {"mha", 2, 2, 8, {1, 3, 7}, {1, 3, 7}, false, 0, {}},
      {"gqa causal", 4, 2, 8, {1, 3, 7, 33}, {1, 7, 3, 33}, true, 0, {}},
      {"mqa causal lq>lk scale", 3, 1, 7, {7, 1, 3, 2}, {3, 1, 3, 0}, true,
       0.3, {}},
      {"gqa noncausal lq!=lk", 4, 1, 3, {3, 7, 1}, {7, 1, 33}, false, 0, {}},
  };
  for (const AttentionCase &c : cases)
    checkAttentionGrad(c, rng);
}

TEST(ReferenceAttentionGrad, DropoutRegeneratesTheForwardMask) {
  std::mt19937 rng = testRng();
  std::vector<AttentionCase> cases = {
      {"causal gqa dropout", 4, 2, 8, {5, 1, 7}, {7, 1, 3}, true, 0,
       {0.25, 0xfeedface12345678ULL, 77, 3}},
      {"dropout 0.5", 2, 1, 3, {33, 3}, {33, 7}, false, 0.5,
       {0.5, 42, 0x100000007ULL, 9}},
  };
  for (const AttentionCase &c : cases)
    checkAttentionGrad(c, rng);
  // Another stream gives another mask, so other gradients.
  AttentionCase c = cases[0];
  std::vector<int64_t> cuq = offsets(c.lq), cuk = offsets(c.lk);
  HostTensor q = randomF32(rng, {cuq.back(), 4, 8});
  HostTensor k = randomF32(rng, {cuk.back(), 2, 8});
  HostTensor dout = randomF32(rng, {cuq.back(), 4, 8});
  auto grads = [&](uint32_t stream) {
    AttentionDropout drop = c.dropout;
    drop.rate = static_cast<double>(0.25f);
    drop.stream = stream;
    return naiveAttentionGrad(q, k, k, dout, cuq, cuk,
                              static_cast<double>(1.0f / std::sqrt(8.0f)),
                              true, drop)
        .dv;
  };
  EXPECT_GT(relativeL2(grads(3), grads(4)), 0.05);
}

TEST(ReferenceAttentionGrad, MalformedOperandsAreErrors) {
  Program p = parseProgram(attentionGradProgram(2, 1, 4, "", false));
  std::mt19937 rng = testRng();
  HostTensor q = randomF32(rng, {5, 2, 4}), k = randomF32(rng, {5, 1, 4});
  HostTensor lse = randomF32(rng, {5, 2});
  auto errorOf = [&](std::vector<HostTensor> args) -> std::string {
    try {
      p.run(Precision::F64, args, "alone");
    } catch (const InterpreterError &e) {
      return e.what();
    }
    return "no error";
  };
  std::string e1 = errorOf({q, q, k, k, q, lse, cuTensor({0, 2, 5}),
                            cuTensor({0, 3, 4})});
  EXPECT_NE(e1.find("'ls2.attention_grad' op cu_seqlens_k ends at 4 but there "
                    "are 5 tokens"),
            std::string::npos)
      << e1;
  HostTensor shortLse = randomF32(rng, {4, 2});
  std::string e2 = errorOf({q, q, k, k, q, shortLse, cuTensor({0, 5}),
                            cuTensor({0, 5})});
  EXPECT_NE(e2.find("'ls2.attention_grad' op lse has shape [4, 2] at run time; "
                    "expected [5, 2]"),
            std::string::npos)
      << e2;
}

} // namespace
