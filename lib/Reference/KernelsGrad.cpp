//===- KernelsGrad.cpp - layer_norm_grad, softmax_grad, gelu_grad, ... ---===//
//
// The backward composites that ls2-autodiff emits, each the formula of its
// description in LS2Ops.td, computed in double (at least the f32 the
// descriptions ask for) and rounded once when bound (F32 mode). Sums run in
// a fixed order, so results are deterministic.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ls2c::reference::detail {

using namespace mlir;

namespace {

const double kPi = 3.14159265358979323846;

} // namespace

// Per row, with xhat = (x - mean) * rstd and g = dy * gamma:
//   dx = rstd * (g - mean_H(g) - xhat * mean_H(g * xhat));
// dgamma and dbeta sum dy * xhat and dy over every row. The saved mean and
// rstd are used as they are.
void evalLayerNormGrad(ls2::LayerNormGradOp op, Frame &frame) {
  const HostTensor &dy = frame.get(op, op.getDy());
  const HostTensor &x = frame.get(op, op.getInput());
  const HostTensor &gamma = frame.get(op, op.getGamma());
  const HostTensor &mean = frame.get(op, op.getMean());
  const HostTensor &rstd = frame.get(op, op.getRstd());
  if (x.rank() < 1)
    fail(op, "input must have rank >= 1, got " + x.describe());
  expectShape(op, dy, x.shape, "dy");
  int64_t h = x.shape.back();
  expectShape(op, gamma, {h}, "gamma");
  std::vector<int64_t> statsShape(x.shape.begin(), x.shape.end() - 1);
  expectShape(op, mean, statsShape, "mean");
  expectShape(op, rstd, statsShape, "rstd");

  HostTensor dx = HostTensor::zeros(x.type, x.shape);
  HostTensor dgamma = HostTensor::zeros(gamma.type, {h});
  HostTensor dbeta = HostTensor::zeros(gamma.type, {h});
  int64_t rows = product(statsShape, 0, statsShape.size());
  std::vector<double> g(static_cast<size_t>(h)), xhat(static_cast<size_t>(h));
  for (int64_t r = 0; r < rows && h > 0; ++r) {
    const double *dyRow = dy.floats.data() + r * h;
    const double *xRow = x.floats.data() + r * h;
    double mu = mean.floats[r], inv = rstd.floats[r];
    double sumG = 0, sumGX = 0;
    for (int64_t i = 0; i < h; ++i) {
      xhat[i] = (xRow[i] - mu) * inv;
      g[i] = dyRow[i] * gamma.floats[i];
      sumG += g[i];
      sumGX += g[i] * xhat[i];
      dgamma.floats[i] += dyRow[i] * xhat[i];
      dbeta.floats[i] += dyRow[i];
    }
    double meanG = sumG / static_cast<double>(h);
    double meanGX = sumGX / static_cast<double>(h);
    double *out = dx.floats.data() + r * h;
    for (int64_t i = 0; i < h; ++i)
      out[i] = inv * (g[i] - meanG - xhat[i] * meanGX);
  }
  frame.bind(op, op.getDx(), std::move(dx));
  frame.bind(op, op.getDgamma(), std::move(dgamma));
  frame.bind(op, op.getDbeta(), std::move(dbeta));
}

// dx = scale * y * (dy - sum_last(dy * y)).
void evalSoftmaxGrad(ls2::SoftmaxGradOp op, Frame &frame) {
  const HostTensor &dy = frame.get(op, op.getDy());
  const HostTensor &y = frame.get(op, op.getOutput());
  if (y.rank() < 1)
    fail(op, "output must have rank >= 1, got " + y.describe());
  expectShape(op, dy, y.shape, "dy");
  double scale = op.getScale().convertToDouble();
  int64_t keys = y.shape.back();
  int64_t rows = keys ? y.numElements() / keys : 0;
  HostTensor dx = HostTensor::zeros(y.type, y.shape);
  for (int64_t r = 0; r < rows; ++r) {
    const double *yRow = y.floats.data() + r * keys;
    const double *dyRow = dy.floats.data() + r * keys;
    double dot = 0;
    for (int64_t j = 0; j < keys; ++j)
      dot += dyRow[j] * yRow[j];
    double *out = dx.floats.data() + r * keys;
    for (int64_t j = 0; j < keys; ++j)
      out[j] = scale * yRow[j] * (dyRow[j] - dot);
  }
  frame.bind(op, op.getDx(), std::move(dx));
}

// dx = dy * gelu'(x), the exact derivative of evalGelu's form.
void evalGeluGrad(ls2::GeluGradOp op, Frame &frame) {
  const HostTensor &dy = frame.get(op, op.getDy());
  const HostTensor &x = frame.get(op, op.getInput());
  expectShape(op, dy, x.shape, "dy");
  bool tanhForm = op.getApproximate() == ls2::GeluApproximation::Tanh;
  const double k = std::sqrt(2.0 / kPi), c = 0.044715;
  const double invSqrt2Pi = 1.0 / std::sqrt(2.0 * kPi);
  HostTensor dx = HostTensor::zeros(x.type, x.shape);
  for (size_t e = 0; e < x.floats.size(); ++e) {
    double v = x.floats[e], derivative;
    if (tanhForm) {
      double t = std::tanh(k * (v + c * v * v * v));
      derivative = 0.5 * (1.0 + t) +
                   0.5 * v * (1.0 - t * t) * k * (1.0 + 3.0 * c * v * v);
    } else {
      double cdf = 0.5 * (1.0 + std::erf(v / std::sqrt(2.0)));
      double pdf = std::exp(-0.5 * v * v) * invSqrt2Pi;
      derivative = cdf + v * pdf;
    }
    dx.floats[e] = dy.floats[e] * derivative;
  }
  frame.bind(op, op.getDx(), std::move(dx));
}

// dlogits[r, :] = w_r * (softmax(x[r, :]) - q_r), q_r = (1 - eps) onehot(t_r)
// + eps / C; w_r = 0 for ignored rows, else dloss / max(count, 1) (mean),
// dloss (sum) or dloss[r] (none).
void evalCrossEntropyGrad(ls2::CrossEntropyGradOp op, Frame &frame) {
  const HostTensor &dloss = frame.get(op, op.getDloss());
  const HostTensor &logits = frame.get(op, op.getLogits());
  const HostTensor &targets = frame.get(op, op.getTargets());
  if (logits.rank() != 2)
    fail(op, "logits must be [rows, classes], got " + logits.describe());
  int64_t n = logits.shape[0], c = logits.shape[1];
  expectShape(op, targets, {n}, "targets");
  ls2::LossReduction reduction = op.getReduction();
  if (reduction == ls2::LossReduction::None)
    expectShape(op, dloss, {n}, "dloss");
  else
    expectShape(op, dloss, {}, "dloss");
  double eps = op.getLabelSmoothing().convertToDouble();
  auto ignoreIndex = static_cast<int64_t>(op.getIgnoreIndex());

  int64_t counted = countCrossEntropyTargets(op, targets, c, ignoreIndex);

  HostTensor dx = HostTensor::zeros(logits.type, logits.shape);
  double off = c ? eps / static_cast<double>(c) : 0.0;
  for (int64_t r = 0; r < n; ++r) {
    int64_t t = targets.ints[r];
    if (t == ignoreIndex)
      continue;
    double w = 0;
    switch (reduction) {
    case ls2::LossReduction::None:
      w = dloss.floats[r];
      break;
    case ls2::LossReduction::Sum:
      w = dloss.floats[0];
      break;
    case ls2::LossReduction::Mean:
      w = dloss.floats[0] / static_cast<double>(std::max<int64_t>(counted, 1));
      break;
    }
    const double *x = logits.floats.data() + r * c;
    double best = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < c; ++j)
      best = std::max(best, x[j]);
    double sum = 0;
    for (int64_t j = 0; j < c; ++j)
      sum += std::exp(x[j] - best);
    double *out = dx.floats.data() + r * c;
    for (int64_t j = 0; j < c; ++j) {
      double p = std::exp(x[j] - best) / sum;
      double q = (j == t ? 1.0 - eps : 0.0) + off;
      out[j] = w * (p - q);
    }
  }
  frame.bind(op, op.getDlogits(), std::move(dx));
}

} // namespace ls2c::reference::detail
