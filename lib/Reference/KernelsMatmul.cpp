//===- KernelsMatmul.cpp - batched matmul through OpenBLAS ----------------===//
//
// One GEMM per batch entry: cblas_dgemm in F64 mode; cblas_sgemm in F32
// mode, whose f32 accumulation is the contract's floor (acc_type f16 is
// not emulated: the reference accumulates in at least f32). A rank-2 `b`
// is shared by every batch entry.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"
#include "FloatFormats.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <optional>

namespace ls2c::reference::detail {

using namespace mlir;

namespace {

/// Rounds each step of an epilogue's formula to f32 in F32 mode (the
/// decomposed program's f32 tensors), not at all in F64 mode; constants are
/// the f32 constants ls2-decompose makes in both.
struct Steps {
  bool f32;
  double operator()(double x) const { return f32 ? roundToF32(x) : x; }
  static double constant(double x) { return roundToF32(x); }
};

/// ls2-decompose's tanh GELU, op by op: 0.5 x (1 + tanh(k (x + c x^3))).
double geluTanh(const Steps &r, double x) {
  const double c = Steps::constant(0.044715),
               k = Steps::constant(std::sqrt(2.0 / 3.14159265358979323846));
  double x3 = r(r(x * x) * x);
  double poly = r(x + r(x3 * c));
  double inner = r(std::tanh(r(poly * k)));
  double onePlus = r(inner + 1.0);
  double half = r(x * 0.5);
  return r(half * onePlus);
}

/// ls2-decompose's tanh GELU derivative (ls2.gelu_grad), op by op:
/// 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2), t = tanh(k (x + c x^3)).
double geluTanhDerivative(const Steps &r, double x) {
  const double c = Steps::constant(0.044715),
               k = Steps::constant(std::sqrt(2.0 / 3.14159265358979323846)),
               c3 = Steps::constant(3.0 * 0.044715);
  double x2 = r(x * x);
  double x3 = r(x2 * x);
  double poly = r(x + r(x3 * c));
  double t = r(std::tanh(r(poly * k)));
  double left = r(r(t + 1.0) * 0.5);
  double t2 = r(t * t);
  double sech2 = r(1.0 - t2);
  double cubic = r(x2 * c3);
  double dpoly = r(r(cubic + 1.0) * k);
  double right = r(r(r(x * 0.5) * sech2) * dpoly);
  return r(left + right);
}

/// Bit n of row m of a ReLU bit mask (ls2.matmul's aux layout).
bool maskBit(const HostTensor &mask, int64_t words, int64_t m, int64_t n) {
  auto word = static_cast<uint32_t>(mask.ints[m * words + n / 32]);
  return (word >> (n % 32)) & 1u;
}

/// The epilogues (ls2.matmul's description): the bias joins the unrounded
/// product, activations and their gradients run in ls2-decompose's f32
/// steps, bind rounds the result once; the bias gradients sum rows in row
/// order, as ls2.reduce_sum over axis 0 does.
void applyEpilogues(ls2::MatmulOp op, const HostTensor &a, HostTensor &result,
                    Frame &frame) {
  Steps r{frame.getPrecision() == Precision::F32};
  if (Value biasValue = op.getBias()) {
    const HostTensor &bias = frame.get(op, biasValue);
    int64_t n = result.shape.back();
    if (bias.numElements() != n)
      fail(op, "bias " + bias.describe() + " does not match the " +
                   std::to_string(n) + " result columns");
    for (size_t e = 0; e < result.floats.size(); ++e)
      result.floats[e] += bias.floats[e % static_cast<size_t>(n)];
  }
  std::optional<ls2::GemmActivation> act = op.getActivation();
  int64_t rows = result.shape.size() == 2 ? result.shape[0] : 0;
  int64_t cols = result.shape.back();
  ElementType resultType = result.type;
  HostTensor auxOut;
  if (op.hasForwardActivation()) {
    bool relu = *act == ls2::GemmActivation::Relu;
    int64_t words = ls2::MatmulOp::reluMaskWords(cols);
    HostTensor aux =
        relu ? HostTensor::zeros(ElementType::I32, {rows, words})
             : HostTensor::zeros(resultType, result.shape);
    std::vector<uint32_t> bits(relu ? rows * words : 0, 0);
    for (int64_t m = 0; m < rows; ++m)
      for (int64_t n = 0; n < cols; ++n) {
        double &v = result.floats[m * cols + n];
        double p = r(v); // acc (+ bias) in f32, cuBLASLt's epilogue input
        if (relu) {
          bool positive = p > 0;
          v = positive ? p : 0.0;
          if (positive)
            bits[m * words + n / 32] |= 1u << (n % 32);
        } else {
          aux.floats[m * cols + n] = p;
          v = geluTanh(r, p);
        }
      }
    if (relu)
      for (size_t w = 0; w < bits.size(); ++w)
        aux.ints[w] = static_cast<int32_t>(bits[w]);
    auxOut = std::move(aux);
  } else if (op.hasActivationGrad()) {
    const HostTensor &aux = frame.get(op, op.getAux());
    bool relu = *act == ls2::GemmActivation::ReluGrad;
    int64_t words = ls2::MatmulOp::reluMaskWords(cols);
    std::vector<int64_t> expected =
        relu ? std::vector<int64_t>{rows, words} : result.shape;
    expectShape(op, aux, expected, "aux");
    for (int64_t m = 0; m < rows; ++m)
      for (int64_t n = 0; n < cols; ++n) {
        double &v = result.floats[m * cols + n];
        if (relu)
          v = maskBit(aux, words, m, n) ? v : 0.0;
        else
          v = r(r(v) * geluTanhDerivative(r, aux.floats[m * cols + n]));
      }
  }
  // Every tensor is computed before the first bind (binding may move the
  // frame's tensors, `a` among them).
  HostTensor biasGrad;
  if (Value g = op.getBiasGrad()) {
    ElementType gType =
        elementTypeOf(op, cast<RankedTensorType>(g.getType()).getElementType());
    if (op.hasActivationGrad()) {
      // The sums of the result's columns as bind rounds it.
      biasGrad = HostTensor::zeros(gType, {cols});
      for (int64_t m = 0; m < rows; ++m)
        for (int64_t n = 0; n < cols; ++n) {
          double v = result.floats[m * cols + n];
          biasGrad.floats[n] += r.f32 ? roundTo(resultType, v) : v;
        }
    } else {
      int64_t aRows = a.shape[0], aCols = a.shape[1];
      biasGrad = HostTensor::zeros(gType, {aCols});
      for (int64_t row = 0; row < aRows; ++row)
        for (int64_t c = 0; c < aCols; ++c)
          biasGrad.floats[c] += a.floats[row * aCols + c];
    }
  }
  frame.bind(op, op.getResult(), std::move(result));
  if (Value g = op.getBiasGrad())
    frame.bind(op, g, std::move(biasGrad));
  if (Value out = op.getAuxOut())
    frame.bind(op, out, std::move(auxOut));
}

} // namespace

void evalMatmul(ls2::MatmulOp op, Frame &frame) {
  const HostTensor &a = frame.get(op, op.getA());
  const HostTensor &b = frame.get(op, op.getB());
  size_t ra = a.shape.size(), rb = b.shape.size();
  if (ra < 2 || rb < 2 || (rb != 2 && rb != ra))
    fail(op, "operands " + a.describe() + " and " + b.describe() +
                 " do not have matmul ranks");
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  int64_t m = a.shape[ta ? ra - 1 : ra - 2];
  int64_t ka = a.shape[ta ? ra - 2 : ra - 1];
  int64_t kb = b.shape[tb ? rb - 1 : rb - 2];
  int64_t n = b.shape[tb ? rb - 2 : rb - 1];
  if (ka != kb)
    fail(op, "contraction sizes differ at run time: a " + a.describe() +
                 " gives K = " + std::to_string(ka) + ", b " + b.describe() +
                 " gives K = " + std::to_string(kb));
  std::vector<int64_t> batch(a.shape.begin(), a.shape.end() - 2);
  if (rb != 2 &&
      !std::equal(batch.begin(), batch.end(), b.shape.begin()))
    fail(op, "batch dims differ at run time: a " + a.describe() + ", b " +
                 b.describe());
  int64_t k = ka;
  for (int64_t size : {m, n, k})
    if (size > INT_MAX)
      fail(op, "dim " + std::to_string(size) + " exceeds BLAS's int range");

  std::vector<int64_t> shape = batch;
  shape.push_back(m);
  shape.push_back(n);
  HostTensor result =
      HostTensor::zeros(elementTypeOf(op, op.getResult().getType().getElementType()), shape);
  int64_t batches = product(batch, 0, batch.size());
  if (m == 0 || n == 0 || k == 0 || batches == 0) {
    applyEpilogues(op, a, result, frame);
    return;
  }
  int64_t aStride = m * k, bStride = rb == 2 ? 0 : k * n, cStride = m * n;
  auto transA = ta ? CblasTrans : CblasNoTrans;
  auto transB = tb ? CblasTrans : CblasNoTrans;
  int lda = static_cast<int>(ta ? m : k), ldb = static_cast<int>(tb ? k : n);
  int im = static_cast<int>(m), in = static_cast<int>(n),
      ik = static_cast<int>(k);
  if (frame.getPrecision() == Precision::F64) {
    for (int64_t i = 0; i < batches; ++i)
      cblas_dgemm(CblasRowMajor, transA, transB, im, in, ik, 1.0,
                  a.floats.data() + i * aStride, lda,
                  b.floats.data() + i * bStride, ldb, 0.0,
                  result.floats.data() + i * cStride, in);
  } else {
    // Operands are already rounded to their (at most f32) element types.
    std::vector<float> fa(a.floats.begin(), a.floats.end());
    std::vector<float> fb(b.floats.begin(), b.floats.end());
    std::vector<float> fc(result.floats.size());
    for (int64_t i = 0; i < batches; ++i)
      cblas_sgemm(CblasRowMajor, transA, transB, im, in, ik, 1.0f,
                  fa.data() + i * aStride, lda, fb.data() + i * bStride, ldb,
                  0.0f, fc.data() + i * cStride, in);
    std::copy(fc.begin(), fc.end(), result.floats.begin());
  }
  applyEpilogues(op, a, result, frame);
}

} // namespace ls2c::reference::detail
