//===- KernelsReduce.cpp - reductions, gather, scatter_add, nonzero -------===//
//
// Sums accumulate in double in row-major input order (a fixed order, so
// results are deterministic). The sum of nothing is 0; the maximum of
// nothing is -inf (floats) or the type's smallest value (integers). A NaN
// anywhere in a maximum's input makes it NaN.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace ls2c::reference::detail {

using namespace mlir;

namespace {

struct Reduction {
  std::vector<int64_t> shape;   ///< the result's (with keep_dims applied)
  std::vector<int64_t> offsets; ///< per input element, its result element
};

Reduction planReduction(Operation *op, const HostTensor &input,
                        ArrayRef<int64_t> axes, bool keepDims) {
  std::vector<bool> reduced(input.shape.size(), false);
  for (int64_t axis : axes) {
    if (axis < 0 || axis >= input.rank())
      fail(op, "axis " + std::to_string(axis) + " is out of range for " +
                   input.describe());
    reduced[axis] = true;
  }
  Reduction plan;
  std::vector<int64_t> kept; // input dims that survive, in order
  for (size_t d = 0; d < input.shape.size(); ++d) {
    if (!reduced[d]) {
      plan.shape.push_back(input.shape[d]);
      kept.push_back(static_cast<int64_t>(d));
    } else if (keepDims) {
      plan.shape.push_back(1);
    }
  }
  std::vector<int64_t> keptShape;
  for (int64_t d : kept)
    keptShape.push_back(input.shape[d]);
  std::vector<int64_t> keptStrides = stridesOf(keptShape);
  std::vector<int64_t> strides(input.shape.size(), 0);
  for (size_t i = 0; i < kept.size(); ++i)
    strides[kept[i]] = keptStrides[i];
  plan.offsets = stridedOffsets(input.shape, strides);
  return plan;
}

} // namespace

void evalReduceSum(ls2::ReduceSumOp op, Frame &frame) {
  const HostTensor &input = frame.get(op, op.getInput());
  Reduction plan = planReduction(op, input, op.getAxes(), op.getKeepDims());
  HostTensor result = HostTensor::zeros(input.type, plan.shape);
  if (isFloat(input.type)) {
    for (size_t e = 0; e < plan.offsets.size(); ++e)
      result.floats[plan.offsets[e]] += input.floats[e];
  } else {
    for (size_t e = 0; e < plan.offsets.size(); ++e) {
      int64_t &acc = result.ints[plan.offsets[e]];
      acc = static_cast<int64_t>(static_cast<uint64_t>(acc) +
                                 static_cast<uint64_t>(input.ints[e]));
    }
  }
  frame.bind(op, op.getResult(), std::move(result));
}

void evalReduceMax(ls2::ReduceMaxOp op, Frame &frame) {
  const HostTensor &input = frame.get(op, op.getInput());
  Reduction plan = planReduction(op, input, op.getAxes(), op.getKeepDims());
  HostTensor result = HostTensor::zeros(input.type, plan.shape);
  if (isFloat(input.type)) {
    std::fill(result.floats.begin(), result.floats.end(),
              -std::numeric_limits<double>::infinity());
    for (size_t e = 0; e < plan.offsets.size(); ++e) {
      double &acc = result.floats[plan.offsets[e]];
      double x = input.floats[e];
      if (std::isnan(x) || x > acc)
        acc = x;
    }
  } else {
    int64_t lowest = input.type == ElementType::I32
                         ? std::numeric_limits<int32_t>::min()
                         : std::numeric_limits<int64_t>::min();
    std::fill(result.ints.begin(), result.ints.end(), lowest);
    for (size_t e = 0; e < plan.offsets.size(); ++e) {
      int64_t &acc = result.ints[plan.offsets[e]];
      acc = std::max(acc, input.ints[e]);
    }
  }
  frame.bind(op, op.getResult(), std::move(result));
}

void evalGather(ls2::GatherOp op, Frame &frame) {
  const HostTensor &table = frame.get(op, op.getTable());
  const HostTensor &ids = frame.get(op, op.getIds());
  if (table.rank() < 1)
    fail(op, "table must have rank >= 1, got " + table.describe());
  int64_t rows = table.shape[0];
  int64_t rowSize = product(table.shape, 1, table.shape.size());
  std::vector<int64_t> shape = ids.shape;
  shape.insert(shape.end(), table.shape.begin() + 1, table.shape.end());
  HostTensor result = HostTensor::zeros(table.type, shape);
  std::optional<double> fill;
  if (auto attr = op.getFillValueAttr())
    fill = attr.getValueAsDouble();
  for (size_t i = 0; i < ids.ints.size(); ++i) {
    int64_t id = ids.ints[i];
    if ((id < 0 || id >= rows) && fill) {
      if (isFloat(table.type))
        std::fill_n(result.floats.begin() + static_cast<int64_t>(i) * rowSize, rowSize,
                    *fill); // bind() rounds it as the precision mode does
      else
        std::fill_n(result.ints.begin() + static_cast<int64_t>(i) * rowSize, rowSize,
                    static_cast<int64_t>(*fill));
      continue;
    }
    if (id < 0 || id >= rows)
      fail(op, "id " + std::to_string(id) + " (element " + std::to_string(i) +
                   " of the ids) is outside the table's rows [0, " +
                   std::to_string(rows) + ")");
    if (isFloat(table.type))
      std::copy_n(table.floats.begin() + id * rowSize, rowSize,
                  result.floats.begin() + static_cast<int64_t>(i) * rowSize);
    else
      std::copy_n(table.ints.begin() + id * rowSize, rowSize,
                  result.ints.begin() + static_cast<int64_t>(i) * rowSize);
  }
  frame.bind(op, op.getResult(), std::move(result));
}

void evalScatterAdd(ls2::ScatterAddOp op, Frame &frame) {
  const HostTensor &updates = frame.get(op, op.getUpdates());
  const HostTensor &ids = frame.get(op, op.getIds());
  auto type = op.getType();
  int64_t rows = frame.shapeWithSizes(op, type, op.getDynamicSizes())[0];
  // Rows have the updates' trailing dims (the ids' dims come first).
  if (updates.rank() < ids.rank() ||
      !std::equal(ids.shape.begin(), ids.shape.end(), updates.shape.begin()))
    fail(op, "updates " + updates.describe() +
                 " must start with the ids' shape " + shapeString(ids.shape));
  std::vector<int64_t> shape = {rows};
  shape.insert(shape.end(), updates.shape.begin() + ids.rank(),
               updates.shape.end());
  int64_t rowSize = product(shape, 1, shape.size());
  std::optional<int64_t> padding;
  if (auto attr = op.getPaddingIdx())
    padding = static_cast<int64_t>(*attr);
  HostTensor result =
      HostTensor::zeros(elementTypeOf(op, type.getElementType()), shape);
  for (size_t i = 0; i < ids.ints.size(); ++i) {
    int64_t id = ids.ints[i];
    if ((padding && id == *padding) || ((id < 0 || id >= rows) && op.getDropOutOfRange()))
      continue;
    if (id < 0 || id >= rows)
      fail(op, "id " + std::to_string(id) + " (element " + std::to_string(i) +
                   " of the ids) is outside the result's rows [0, " +
                   std::to_string(rows) + ")");
    const double *src = updates.floats.data() + i * rowSize;
    double *dst = result.floats.data() + id * rowSize;
    for (int64_t k = 0; k < rowSize; ++k)
      dst[k] += src[k];
  }
  frame.bind(op, op.getResult(), std::move(result));
}

void evalNonzero(ls2::NonzeroOp op, Frame &frame) {
  const HostTensor &mask = frame.get(op, op.getMask());
  if (mask.rank() != 1)
    fail(op, "mask must have rank 1, got " + mask.describe());
  auto type = op.getType();
  int64_t size = type.getDimSize(0);
  HostTensor result = HostTensor::zeros(elementTypeOf(op, type.getElementType()), {size});
  // True elements past the first `size` are left out (jnp.nonzero's size).
  int64_t k = 0;
  for (int64_t e = 0; e < mask.shape[0] && k < size; ++e)
    if (mask.ints[e])
      result.ints[k++] = e;
  std::fill(result.ints.begin() + k, result.ints.end(),
            static_cast<int64_t>(op.getFillValue()));
  frame.bind(op, op.getResult(), std::move(result));
}

} // namespace ls2c::reference::detail
