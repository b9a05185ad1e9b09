//===- KernelsShape.cpp - dim, iota, broadcast, reshape, transpose ... ----===//
//
// Injective ops move elements without arithmetic. Their dynamic dims come
// from `index` operands (broadcast, iota) or from element counts (reshape);
// each disagreement between operands found at run time is an error.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

#include <algorithm>

namespace ls2c::reference::detail {

using namespace mlir;

namespace {

std::vector<int64_t> staticShape(RankedTensorType type) {
  return std::vector<int64_t>(type.getShape().begin(), type.getShape().end());
}

} // namespace

void evalDim(ls2::DimOp op, Frame &frame) {
  const HostTensor &input = frame.get(op, op.getInput());
  auto index = static_cast<int64_t>(op.getIndex());
  if (index < 0 || index >= input.rank())
    fail(op, "index " + std::to_string(index) + " is out of range for " +
                 input.describe());
  frame.bindIndex(op.getResult(), input.shape[index]);
}

void evalIota(ls2::IotaOp op, Frame &frame) {
  auto type = op.getType();
  std::vector<int64_t> shape =
      frame.shapeWithSizes(op, type, op.getDynamicSizes());
  auto dimension = static_cast<size_t>(op.getDimension());
  int64_t stride = product(shape, dimension + 1, shape.size());
  int64_t size = shape[dimension];
  HostTensor result =
      HostTensor::zeros(elementTypeOf(op, type.getElementType()), shape);
  int64_t n = result.numElements();
  for (int64_t e = 0; e < n; ++e) {
    int64_t value = (e / stride) % size;
    if (isFloat(result.type))
      result.floats[e] = static_cast<double>(value);
    else
      result.ints[e] = value;
  }
  frame.bind(op, op.getResult(), std::move(result));
}

void evalBroadcast(ls2::BroadcastOp op, Frame &frame) {
  const HostTensor &input = frame.get(op, op.getInput());
  std::vector<int64_t> shape =
      frame.shapeWithSizes(op, op.getType(), op.getDynamicSizes());
  ArrayRef<int64_t> dims = op.getDims();
  if (static_cast<int64_t>(dims.size()) != input.rank())
    fail(op, "dims has " + std::to_string(dims.size()) +
                 " entries but the input is " + input.describe());
  std::vector<int64_t> inputStrides = stridesOf(input.shape);
  std::vector<int64_t> strides(shape.size(), 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t in = input.shape[i], out = shape[dims[i]];
    if (in != 1 && in != out)
      fail(op, "input dim " + std::to_string(i) + " has size " +
                   std::to_string(in) + " at run time; it must be 1 or " +
                   std::to_string(out) + " (result dim " +
                   std::to_string(dims[i]) + ")");
    if (in != 1)
      strides[dims[i]] = inputStrides[i];
  }
  std::vector<int64_t> offsets = stridedOffsets(shape, strides);
  frame.bind(op, op.getResult(), takeElements(input, shape, offsets));
}

void evalReshape(ls2::ReshapeOp op, Frame &frame) {
  HostTensor result = frame.get(op, op.getInput());
  auto type = op.getType();
  int64_t count = result.numElements();
  std::vector<int64_t> shape = staticShape(type);
  int64_t staticCount = 1, dynamicDim = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (ShapedType::isDynamic(shape[d])) {
      if (dynamicDim >= 0)
        fail(op, "result may have at most one dynamic dim");
      dynamicDim = static_cast<int64_t>(d);
    } else {
      staticCount *= shape[d];
    }
  }
  if (dynamicDim < 0) {
    if (staticCount != count)
      fail(op, "input " + result.describe() + " has " +
                   std::to_string(count) + " elements; the result needs " +
                   std::to_string(staticCount));
  } else if (staticCount == 0) {
    // Every size fits a zero-element product; only 0 elements can fit it.
    if (count != 0)
      fail(op, "input " + result.describe() + " has " +
                   std::to_string(count) +
                   " elements, which a result with a zero static dim cannot "
                   "hold");
    shape[dynamicDim] = 0;
  } else {
    if (count % staticCount != 0)
      fail(op, "input " + result.describe() + " has " +
                   std::to_string(count) +
                   " elements, not divisible by the result's static dims' "
                   "product " + std::to_string(staticCount));
    shape[dynamicDim] = count / staticCount;
  }
  result.shape = std::move(shape);
  frame.bind(op, op.getResult(), std::move(result));
}

void evalTranspose(ls2::TransposeOp op, Frame &frame) {
  const HostTensor &input = frame.get(op, op.getInput());
  ArrayRef<int64_t> perm = op.getPermutation();
  if (static_cast<int64_t>(perm.size()) != input.rank())
    fail(op, "permutation does not match " + input.describe());
  std::vector<int64_t> inputStrides = stridesOf(input.shape);
  std::vector<int64_t> shape, strides;
  for (int64_t p : perm) {
    shape.push_back(input.shape[p]);
    strides.push_back(inputStrides[p]);
  }
  std::vector<int64_t> offsets = stridedOffsets(shape, strides);
  frame.bind(op, op.getResult(), takeElements(input, shape, offsets));
}

void evalSlice(ls2::SliceOp op, Frame &frame) {
  const HostTensor &input = frame.get(op, op.getInput());
  auto axis = static_cast<size_t>(op.getAxis());
  int64_t start = static_cast<int64_t>(op.getStart()),
          limit = static_cast<int64_t>(op.getLimit());
  if (axis >= input.shape.size() || start < 0 || limit < start ||
      limit > input.shape[axis])
    fail(op, "range [" + std::to_string(start) + ", " + std::to_string(limit) +
                 ") along axis " + std::to_string(axis) + " does not fit " +
                 input.describe());
  std::vector<int64_t> shape = input.shape;
  shape[axis] = limit - start;
  std::vector<int64_t> strides = stridesOf(input.shape);
  std::vector<int64_t> offsets = stridedOffsets(shape, strides);
  int64_t base = start * strides[axis];
  for (int64_t &o : offsets)
    o += base;
  frame.bind(op, op.getResult(), takeElements(input, shape, offsets));
}

void evalConcat(ls2::ConcatOp op, Frame &frame) {
  auto axis = static_cast<size_t>(op.getAxis());
  std::vector<const HostTensor *> inputs;
  for (Value v : op.getInputs())
    inputs.push_back(&frame.get(op, v));
  const HostTensor &first = *inputs.front();
  std::vector<int64_t> shape = first.shape;
  if (axis >= shape.size())
    fail(op, "axis " + std::to_string(axis) + " is out of range for " +
                 first.describe());
  shape[axis] = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const HostTensor &t = *inputs[i];
    bool agrees = t.rank() == first.rank() && t.type == first.type;
    for (size_t d = 0; agrees && d < shape.size(); ++d)
      agrees = d == axis || t.shape[d] == first.shape[d];
    if (!agrees)
      fail(op, "input " + std::to_string(i) + " is " + t.describe() +
                   " at run time; it must match input 0 (" + first.describe() +
                   ") in every dim but " + std::to_string(axis));
    shape[axis] += t.shape[axis];
  }
  HostTensor result = HostTensor::zeros(first.type, shape);
  int64_t outer = product(shape, 0, axis);
  int64_t inner = product(shape, axis + 1, shape.size());
  int64_t position = 0; // along the axis
  for (const HostTensor *t : inputs) {
    int64_t chunk = t->shape[axis] * inner;
    for (int64_t o = 0; o < outer; ++o) {
      int64_t dst = (o * shape[axis] + position) * inner;
      if (isFloat(t->type))
        std::copy_n(t->floats.begin() + o * chunk, chunk,
                    result.floats.begin() + dst);
      else
        std::copy_n(t->ints.begin() + o * chunk, chunk,
                    result.ints.begin() + dst);
    }
    position += t->shape[axis];
  }
  frame.bind(op, op.getResult(), std::move(result));
}

} // namespace ls2c::reference::detail
