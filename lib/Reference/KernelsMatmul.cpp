//===- KernelsMatmul.cpp - batched matmul through OpenBLAS ----------------===//
//
// One GEMM per batch entry: cblas_dgemm in F64 mode; cblas_sgemm in F32
// mode, whose f32 accumulation is the contract's floor (acc_type f16 is
// not emulated: the reference accumulates in at least f32). A rank-2 `b`
// is shared by every batch entry.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

#include <cblas.h>

#include <algorithm>
#include <climits>

namespace ls2c::reference::detail {

using namespace mlir;

namespace {

/// The epilogues: the bias joins the unrounded product (bind rounds once);
/// the bias gradient sums `a`'s rows in row order, as ls2.reduce_sum over
/// axis 0 does.
void addBiasAndBindGradient(ls2::MatmulOp op, const HostTensor &a,
                            HostTensor &result, Frame &frame) {
  if (Value biasValue = op.getBias()) {
    const HostTensor &bias = frame.get(op, biasValue);
    int64_t n = result.shape.back();
    if (bias.numElements() != n)
      fail(op, "bias " + bias.describe() + " does not match the " +
                   std::to_string(n) + " result columns");
    for (size_t e = 0; e < result.floats.size(); ++e)
      result.floats[e] += bias.floats[e % static_cast<size_t>(n)];
  }
  frame.bind(op, op.getResult(), std::move(result));
  if (Value g = op.getBiasGrad()) {
    int64_t rows = a.shape[0], cols = a.shape[1];
    HostTensor sum = HostTensor::zeros(
        elementTypeOf(op, cast<RankedTensorType>(g.getType()).getElementType()),
        {cols});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        sum.floats[c] += a.floats[r * cols + c];
    frame.bind(op, g, std::move(sum));
  }
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
    addBiasAndBindGradient(op, a, result, frame);
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
  addBiasAndBindGradient(op, a, result, frame);
}

} // namespace ls2c::reference::detail
