//===- KernelsRandom.cpp - random_uniform and dropout ---------------------===//
//
// Both draw element e of their (row-major) shape from Philox-4x32-10 with
// the layout of ls2.random_uniform (Philox.h), so dropout's mask is exactly
// `random_uniform(seed, offset) {stream} >= rate`.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"
#include "Philox.h"

#include <algorithm>
#include <cstdint>

namespace ls2c::reference::detail {

using namespace mlir;

namespace {

uint32_t checkedStream(Operation *op, int64_t stream) {
  if (stream < 0 || stream > UINT32_MAX)
    fail(op, "stream " + std::to_string(stream) +
                 " must fit in the counter's 32 bits");
  return static_cast<uint32_t>(stream);
}

std::vector<float> uniforms(int64_t seed, int64_t offset, uint32_t stream,
                            int64_t count) {
  std::vector<float> u(static_cast<size_t>(count));
  randomUniformFill(seed, offset, stream, u.data(),
                    static_cast<uint64_t>(count));
  return u;
}

} // namespace

void evalRandomUniform(ls2::RandomUniformOp op, Frame &frame) {
  int64_t seed = scalarInt(op, frame.get(op, op.getSeed()), "seed");
  int64_t offset = scalarInt(op, frame.get(op, op.getOffset()), "offset");
  uint32_t stream = checkedStream(op, static_cast<int64_t>(op.getStream()));
  std::vector<int64_t> shape =
      frame.shapeWithSizes(op, op.getType(), op.getDynamicSizes());
  HostTensor result = HostTensor::zeros(ElementType::F32, shape);
  std::vector<float> u =
      uniforms(seed, offset, stream, result.numElements());
  std::copy(u.begin(), u.end(), result.floats.begin());
  frame.bind(op, op.getResult(), std::move(result));
}

void evalDropout(ls2::DropoutOp op, Frame &frame) {
  HostTensor result = frame.get(op, op.getInput());
  int64_t seed = scalarInt(op, frame.get(op, op.getSeed()), "seed");
  int64_t offset = scalarInt(op, frame.get(op, op.getOffset()), "offset");
  uint32_t stream = checkedStream(op, static_cast<int64_t>(op.getStream()));
  float rate = op.getRate().convertToFloat();
  if (!(rate >= 0.0f && rate < 1.0f))
    fail(op, "rate " + std::to_string(rate) + " must be in [0, 1)");
  double keepScale = 1.0 / (1.0 - static_cast<double>(rate));
  std::vector<float> u =
      uniforms(seed, offset, stream, result.numElements());
  for (size_t e = 0; e < u.size(); ++e)
    result.floats[e] = u[e] >= rate ? result.floats[e] * keepScale : 0.0;
  frame.bind(op, op.getResult(), std::move(result));
}

} // namespace ls2c::reference::detail
