//===- ShapeBounds.cpp - upper bounds of every tensor's dynamic dims ------===//
#include "ls2c/Analysis/ShapeBounds.h"

#include "ls2/IR/LS2Dialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;

namespace ls2c {

int64_t elementBytes(Type t) {
  if (t.isInteger(1))
    return 1;
  return std::max<int64_t>(1, t.getIntOrFloatBitWidth() / 8);
}

class ShapeBoundsBuilder {
public:
  explicit ShapeBoundsBuilder(ShapeBounds &b) : b(b) {}

  LogicalResult block(Block &block) {
    for (Operation &op : block)
      if (failed(visit(&op)))
        return failure();
    return success();
  }

  LogicalResult argument(BlockArgument arg, ArrayRef<int64_t> maxShape) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      return success();
    SmallVector<int64_t, 4> shape(type.getShape());
    if (type.getNumDynamicDims()) {
      if (maxShape.size() != shape.size())
        return emitError(arg.getLoc())
               << "argument " << arg.getArgNumber() << " of type " << type
               << " needs an ls2.max_shape of rank " << type.getRank()
               << " bounding its dynamic dims";
      for (auto [d, m] : llvm::zip(shape, maxShape)) {
        if (!ShapedType::isDynamic(d) && d != m)
          return emitError(arg.getLoc())
                 << "argument " << arg.getArgNumber() << ": ls2.max_shape "
                 << "disagrees with static dims of " << type;
        d = m;
      }
    }
    b.shapes[arg] = shape;
    return success();
  }

private:
  ShapeBounds &b;

  int64_t numel(Value v) { return b.numElements(v); }

  /// Fills result `r`'s dynamic dims through `dim(d)`; fails naming `op`
  /// when `dim` has no answer (returns < 0).
  LogicalResult fill(Operation *op, Value r,
                     llvm::function_ref<int64_t(int64_t)> dim) {
    auto type = dyn_cast<RankedTensorType>(r.getType());
    if (!type)
      return success();
    SmallVector<int64_t, 4> shape(type.getShape());
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (!ShapedType::isDynamic(shape[d]))
        continue;
      shape[d] = dim(d);
      if (shape[d] < 0)
        return op->emitError("cannot bound dynamic dim ")
               << d << " of result " << cast<OpResult>(r).getResultNumber()
               << " (" << type << ") from the operands' bounds";
    }
    b.shapes[r] = shape;
    return success();
  }

  /// Dim d of the first tensor operand whose dim d is dynamic.
  int64_t sameDim(Operation *op, int64_t d) {
    for (Value v : op->getOperands()) {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      if (t && t.getRank() > d && t.isDynamicDim(d))
        return b.shape(v)[d];
    }
    return -1;
  }

  LogicalResult visit(Operation *op) {
    // Index values are sizes taken with ls2.dim (bounded by its tensor's
    // bound); any other (a function's index argument) has no bound.
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      if (v.getType().isIndex() && !b.indices.count(v))
        return op->emitError("operand ")
               << i << " is an index with no bound: sizes must come from ls2.dim of a "
                  "bounded tensor";
    if (auto fusion = dyn_cast<ls2::FusionOp>(op)) {
      Block &body = fusion.getBody().front();
      for (auto [input, arg] : llvm::zip(fusion.getInputs(), body.getArguments()))
        copy(input, arg);
      if (failed(block(body)))
        return failure();
      auto yield = cast<ls2::YieldOp>(body.getTerminator());
      for (auto [v, r] : llvm::zip(yield.getValues(), fusion.getResults()))
        copy(v, r);
      return success();
    }
    if (auto dim = dyn_cast<ls2::DimOp>(op)) {
      b.indices[dim.getResult()] = b.shape(dim.getInput())[dim.getIndex()];
      return success();
    }
    SmallVector<int64_t> sizes; // index operands, in order
    for (Value v : op->getOperands())
      if (v.getType().isIndex())
        sizes.push_back(b.index(v));
    for (Value r : op->getResults()) {
      auto type = dyn_cast<RankedTensorType>(r.getType());
      if (!type)
        continue;
      LogicalResult ok =
          llvm::TypeSwitch<Operation *, LogicalResult>(op)
              .Case([&](ls2::ReshapeOp o) {
                int64_t staticPart = 1;
                for (int64_t d : type.getShape())
                  if (!ShapedType::isDynamic(d))
                    staticPart *= d;
                int64_t n = numel(o.getInput());
                return fill(op, r, [&](int64_t) {
                  return staticPart ? (n + staticPart - 1) / staticPart : 0;
                });
              })
              .Case([&](ls2::MatmulOp o) {
                auto a = b.shape(o.getA()), w = b.shape(o.getB());
                int64_t rank = type.getRank();
                return fill(op, r, [&](int64_t d) -> int64_t {
                  if (d == rank - 2)
                    return a[a.size() - (o.getTransposeA() ? 1 : 2)];
                  if (d == rank - 1)
                    return w[w.size() - (o.getTransposeB() ? 2 : 1)];
                  return d < static_cast<int64_t>(a.size()) ? a[d] : -1;
                });
              })
              .Case([&](ls2::GatherOp o) {
                auto ids = b.shape(o.getIds());
                auto table = b.shape(o.getTable());
                return fill(op, r, [&](int64_t d) -> int64_t {
                  int64_t n = static_cast<int64_t>(ids.size());
                  return d < n ? ids[d] : table[d - n + 1];
                });
              })
              .Case([&](ls2::TransposeOp o) {
                auto in = b.shape(o.getInput());
                auto perm = o.getPermutation();
                return fill(op, r, [&](int64_t d) { return in[perm[d]]; });
              })
              .Case([&](ls2::ConcatOp o) {
                int64_t axis = o.getAxis();
                return fill(op, r, [&](int64_t d) -> int64_t {
                  if (d != axis)
                    return b.shape(o.getInputs().front())[d];
                  int64_t sum = 0;
                  for (Value v : o.getInputs())
                    sum += b.shape(v)[d];
                  return sum;
                });
              })
              .Case<ls2::ReduceSumOp, ls2::ReduceMaxOp>([&](auto o) {
                auto in = b.shape(o.getInput());
                SmallVector<int64_t> kept;
                auto axes = o.getAxes();
                for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d) {
                  bool reduced = llvm::is_contained(axes, d);
                  if (!reduced)
                    kept.push_back(in[d]);
                  else if (o.getKeepDims())
                    kept.push_back(1);
                }
                return fill(op, r, [&](int64_t d) { return kept[d]; });
              })
              .Case([&](ls2::AttentionGradOp o) {
                Value like = r == o.getDq()   ? o.getQuery()
                             : r == o.getDk() ? o.getKey()
                                              : o.getValue();
                return fill(op, r, [&](int64_t d) { return b.shape(like)[d]; });
              })
              .Default([&](Operation *) {
                // Sizes given as operands (broadcast, random_uniform, iota)
                // fill the dynamic dims in order; otherwise a dim matches
                // the same dim of an operand (elementwise ops, attention).
                if (!sizes.empty() &&
                    static_cast<int64_t>(sizes.size()) == type.getNumDynamicDims()) {
                  size_t next = 0;
                  return fill(op, r, [&](int64_t) { return sizes[next++]; });
                }
                return fill(op, r, [&](int64_t d) { return sameDim(op, d); });
              });
      if (failed(ok))
        return failure();
    }
    return success();
  }

  void copy(Value from, Value to) {
    if (from.getType().isIndex())
      b.indices[to] = b.index(from);
    else if (isa<RankedTensorType>(from.getType()))
      b.shapes[to] = SmallVector<int64_t, 4>(b.shape(from));
  }
};

FailureOr<ShapeBounds> ShapeBounds::compute(func::FuncOp function) {
  ShapeBounds bounds;
  ShapeBoundsBuilder builder(bounds);
  Block &entry = function.getBody().front();
  for (BlockArgument arg : entry.getArguments()) {
    auto max = function.getArgAttrOfType<DenseI64ArrayAttr>(arg.getArgNumber(),
                                                            "ls2.max_shape");
    if (failed(builder.argument(arg, max ? max.asArrayRef()
                                         : ArrayRef<int64_t>())))
      return failure();
  }
  if (failed(builder.block(entry)))
    return failure();
  return bounds;
}

ArrayRef<int64_t> ShapeBounds::shape(Value v) const {
  auto it = shapes.find(v);
  if (it == shapes.end())
    llvm::report_fatal_error("ShapeBounds: a value without a bound (the "
                             "function changed after the bounds were computed)");
  return it->second;
}

void ShapeBounds::copyBound(Value original, Value copy) {
  if (auto it = shapes.find(original); it != shapes.end()) {
    SmallVector<int64_t, 4> shape = it->second; // the insert below may rehash
    shapes[copy] = std::move(shape);
  } else if (auto at = indices.find(original); at != indices.end()) {
    int64_t bound = at->second;
    indices[copy] = bound;
  } else {
    llvm::report_fatal_error("ShapeBounds: copying the bound of a value without one");
  }
}

int64_t ShapeBounds::index(Value v) const {
  auto it = indices.find(v);
  if (it == indices.end())
    llvm::report_fatal_error("ShapeBounds: an index value without a bound");
  return it->second;
}

int64_t ShapeBounds::numElements(Value v) const {
  int64_t n = 1;
  for (int64_t d : shape(v))
    n *= d;
  return n;
}

int64_t ShapeBounds::bytes(Value v) const {
  return numElements(v) *
         elementBytes(cast<RankedTensorType>(v.getType()).getElementType());
}

} // namespace ls2c
