//===- KernelsNormalization.cpp - layer_norm, softmax, cross_entropy ------===//
//
// Row-wise composites, computed in double (at least the f32 the op
// descriptions ask for). Statistics use two passes (mean, then the mean of
// squared deviations), so rows with a large mean and a small spread keep
// their precision.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ls2c::reference::detail {

using namespace mlir;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

} // namespace

void evalLayerNorm(ls2::LayerNormOp op, Frame &frame) {
  const HostTensor &x = frame.get(op, op.getInput());
  const HostTensor &gamma = frame.get(op, op.getGamma());
  const HostTensor &beta = frame.get(op, op.getBeta());
  if (x.rank() < 1)
    fail(op, "input must have rank >= 1, got " + x.describe());
  int64_t h = x.shape.back();
  expectShape(op, gamma, {h}, "gamma");
  expectShape(op, beta, {h}, "beta");
  double epsilon = op.getEpsilon().convertToDouble();
  std::vector<int64_t> statsShape(x.shape.begin(), x.shape.end() - 1);
  HostTensor y = HostTensor::zeros(x.type, x.shape);
  HostTensor mean = HostTensor::zeros(ElementType::F32, statsShape);
  HostTensor rstd = HostTensor::zeros(ElementType::F32, statsShape);
  int64_t rows = product(statsShape, 0, statsShape.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double *in = x.floats.data() + r * h;
    double *out = y.floats.data() + r * h;
    double sum = 0;
    for (int64_t i = 0; i < h; ++i)
      sum += in[i];
    double mu = h ? sum / static_cast<double>(h) : 0.0;
    double squares = 0;
    for (int64_t i = 0; i < h; ++i)
      squares += (in[i] - mu) * (in[i] - mu);
    double var = h ? squares / static_cast<double>(h) : 0.0;
    double inv = 1.0 / std::sqrt(var + epsilon);
    for (int64_t i = 0; i < h; ++i)
      out[i] = (in[i] - mu) * inv * gamma.floats[i] + beta.floats[i];
    mean.floats[r] = mu;
    rstd.floats[r] = inv;
  }
  frame.bind(op, op.getResult(), std::move(y));
  frame.bind(op, op.getMean(), std::move(mean));
  frame.bind(op, op.getRstd(), std::move(rstd));
}

void evalSoftmax(ls2::SoftmaxOp op, Frame &frame) {
  const HostTensor &x = frame.get(op, op.getInput());
  if (x.rank() < 1)
    fail(op, "input must have rank >= 1, got " + x.describe());
  double scale = op.getScale().convertToDouble();
  bool causal = op.getCausal();
  if (causal && x.rank() < 2)
    fail(op, "causal needs rank >= 2, got " + x.describe());
  int64_t keys = x.shape.back();
  int64_t queries = causal ? x.shape[x.shape.size() - 2] : 1;

  // Per input element, the mask element it reads (size-1 dims broadcast).
  const HostTensor *mask = nullptr;
  std::vector<int64_t> maskOffsets;
  if (Value m = op.getMask()) {
    mask = &frame.get(op, m);
    if (mask->rank() != x.rank())
      fail(op, "mask " + mask->describe() + " must have the input's rank (" +
                   x.describe() + ")");
    std::vector<int64_t> maskStrides = stridesOf(mask->shape);
    for (size_t d = 0; d < x.shape.size(); ++d) {
      if (mask->shape[d] == x.shape[d])
        continue;
      if (mask->shape[d] != 1)
        fail(op, "mask " + mask->describe() + " dim " + std::to_string(d) +
                     " must be 1 or the input's " + std::to_string(x.shape[d]) +
                     " at run time");
      maskStrides[d] = 0;
    }
    maskOffsets = stridedOffsets(x.shape, maskStrides);
  }

  HostTensor y =
      HostTensor::zeros(elementTypeOf(op, op.getType().getElementType()),
                        x.shape);
  int64_t rows = keys ? x.numElements() / keys : 0;
  std::vector<double> scores(static_cast<size_t>(keys));
  std::vector<bool> visible(static_cast<size_t>(keys));
  for (int64_t r = 0; r < rows; ++r) {
    int64_t query = r % queries; // the row's index along dim -2
    double best = -kInf;
    for (int64_t j = 0; j < keys; ++j) {
      int64_t e = r * keys + j;
      double s = scale * x.floats[e];
      bool keep = !(causal && j > query + (keys - queries));
      if (mask) {
        int64_t me = maskOffsets[e];
        if (mask->type == ElementType::I1)
          keep = keep && mask->ints[me] != 0;
        else
          s += mask->floats[me];
      }
      scores[j] = s;
      visible[j] = keep;
      if (keep && (s > best || std::isnan(s)))
        best = s;
    }
    // No visible key (or only -inf scores): a zero row, not NaN.
    if (best == -kInf)
      continue;
    double sum = 0;
    for (int64_t j = 0; j < keys; ++j) {
      scores[j] = visible[j] ? std::exp(scores[j] - best) : 0.0;
      sum += scores[j];
    }
    for (int64_t j = 0; j < keys; ++j)
      y.floats[r * keys + j] = scores[j] / sum;
  }
  frame.bind(op, op.getResult(), std::move(y));
}

int64_t countCrossEntropyTargets(Operation *op, const HostTensor &targets,
                                 int64_t classes, int64_t ignoreIndex) {
  int64_t counted = 0;
  for (int64_t r = 0; r < static_cast<int64_t>(targets.ints.size()); ++r) {
    int64_t t = targets.ints[r];
    if (t == ignoreIndex)
      continue;
    if (t < 0 || t >= classes)
      fail(op, "target " + std::to_string(t) + " of row " + std::to_string(r) +
                   " is outside the classes [0, " + std::to_string(classes) +
                   ") and is not ignore_index " + std::to_string(ignoreIndex));
    ++counted;
  }
  return counted;
}

void evalCrossEntropy(ls2::CrossEntropyOp op, Frame &frame) {
  const HostTensor &logits = frame.get(op, op.getLogits());
  const HostTensor &targets = frame.get(op, op.getTargets());
  if (logits.rank() != 2)
    fail(op, "logits must be [rows, classes], got " + logits.describe());
  int64_t n = logits.shape[0], c = logits.shape[1];
  expectShape(op, targets, {n}, "targets");
  double eps = op.getLabelSmoothing().convertToDouble();
  auto ignoreIndex = static_cast<int64_t>(op.getIgnoreIndex());
  std::vector<double> losses(static_cast<size_t>(n), 0.0);
  int64_t counted = countCrossEntropyTargets(op, targets, c, ignoreIndex);
  for (int64_t r = 0; r < n; ++r) {
    int64_t t = targets.ints[r];
    if (t == ignoreIndex)
      continue;
    const double *x = logits.floats.data() + r * c;
    double best = -kInf;
    for (int64_t j = 0; j < c; ++j)
      best = std::max(best, x[j]);
    double sum = 0, total = 0;
    for (int64_t j = 0; j < c; ++j) {
      sum += std::exp(x[j] - best);
      total += x[j];
    }
    double lse = best + std::log(sum);
    double meanLogit = total / static_cast<double>(c);
    losses[r] = (1.0 - eps) * (lse - x[t]) + eps * (lse - meanLogit);
  }
  HostTensor result;
  switch (op.getReduction()) {
  case ls2::LossReduction::None:
    result = HostTensor::fromFloats(ElementType::F32, {n}, std::move(losses));
    break;
  case ls2::LossReduction::Sum:
  case ls2::LossReduction::Mean: {
    double sum = 0;
    for (double l : losses)
      sum += l;
    if (op.getReduction() == ls2::LossReduction::Mean)
      sum = counted ? sum / static_cast<double>(counted) : 0.0;
    result = HostTensor::scalarFloat(ElementType::F32, sum);
    break;
  }
  }
  frame.bind(op, op.getResult(), std::move(result));
}

} // namespace ls2c::reference::detail
