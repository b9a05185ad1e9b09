//===- KernelsOptimizer.cpp - the Adam / AdamW update ---------------------===//
//
// torch.optim.AdamW / Adam (single-tensor, non-fused form) in double:
//   g = grad * grad_scale
//   decoupled: p = p - lr * wd * p        l2: g = g + wd * p
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p = p - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

#include <cmath>

namespace ls2c::reference::detail {

using namespace mlir;

void evalAdamW(ls2::AdamWOp op, Frame &frame) {
  HostTensor param = frame.get(op, op.getParam());
  const HostTensor &grad = frame.get(op, op.getGrad());
  HostTensor m = frame.get(op, op.getExpAvg());
  HostTensor v = frame.get(op, op.getExpAvgSq());
  if (param.rank() != 1)
    fail(op, "param must be a flat [N] buffer, got " + param.describe());
  expectShape(op, grad, param.shape, "grad");
  expectShape(op, m, param.shape, "exp_avg");
  expectShape(op, v, param.shape, "exp_avg_sq");
  int64_t step = scalarInt(op, frame.get(op, op.getStep()), "step");
  if (step < 1)
    fail(op, "step is " + std::to_string(step) + "; steps count from 1");
  double lr = scalarFloat(op, frame.get(op, op.getLr()), "lr");
  double gradScale =
      scalarFloat(op, frame.get(op, op.getGradScale()), "grad_scale");
  double beta1 = op.getBeta1().convertToDouble();
  double beta2 = op.getBeta2().convertToDouble();
  double eps = op.getEpsilon().convertToDouble();
  double wd = op.getWeightDecay().convertToDouble();
  bool decoupled = op.getMode() == ls2::WeightDecayMode::Decoupled;
  double t = static_cast<double>(step);
  double correction1 = 1.0 - std::pow(beta1, t);
  double correction2 = 1.0 - std::pow(beta2, t);
  for (size_t i = 0; i < param.floats.size(); ++i) {
    double p = param.floats[i];
    double g = grad.floats[i] * gradScale;
    if (decoupled)
      p -= lr * wd * p;
    else
      g += wd * p;
    double mi = beta1 * m.floats[i] + (1.0 - beta1) * g;
    double vi = beta2 * v.floats[i] + (1.0 - beta2) * g * g;
    p -= lr * (mi / correction1) / (std::sqrt(vi / correction2) + eps);
    param.floats[i] = p;
    m.floats[i] = mi;
    v.floats[i] = vi;
  }
  frame.bind(op, op.getNewParam(), std::move(param));
  frame.bind(op, op.getNewExpAvg(), std::move(m));
  frame.bind(op, op.getNewExpAvgSq(), std::move(v));
}

} // namespace ls2c::reference::detail
