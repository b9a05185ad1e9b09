//===- SymbolicDims.cpp - dynamic dims as sizes of function arguments -----===//

#include "ls2c/Analysis/SymbolicDims.h"

#include "ls2/IR/LS2Dialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"

#include <map>
#include <numeric>

using namespace mlir;

namespace ls2c {

using runtime::Dim;

class SymbolicDimsBuilder {
public:
  explicit SymbolicDimsBuilder(SymbolicDims &out) : out(out) {}

  LogicalResult run(func::FuncOp function) {
    for (BlockArgument arg : function.getArguments()) {
      if (auto type = dyn_cast<RankedTensorType>(arg.getType())) {
        SmallVector<Dim, 4> dims;
        for (auto [axis, size] : llvm::enumerate(type.getShape()))
          dims.push_back(ShapedType::isDynamic(size)
                             ? Dim{0, static_cast<int32_t>(arg.getArgNumber()),
                                   static_cast<int32_t>(axis)}
                             : Dim{size, -1, 0});
        out.shapes[arg] = dims;
      }
    }
    return runBlock(function.getBody().front());
  }

  /// Dims that ops require to be equal (operands of elementwise ops, a
  /// weight gradient's shared rows) are one size: each class is named by
  /// its smallest (argument, axis), so a kernel sees one token count
  /// whichever input it came from. The runtime checks that the inputs
  /// agree before any launch.
  void canonicalize() {
    auto fix = [&](Dim &d) {
      if (d.isStatic())
        return;
      auto [a, x] = find({d.argument, d.axis});
      d.argument = a;
      d.axis = x;
    };
    for (auto &entry : out.shapes)
      for (Dim &d : entry.second)
        fix(d);
    for (auto &entry : out.indices)
      fix(entry.second);
  }

private:
  SymbolicDims &out;
  std::map<std::pair<int32_t, int32_t>, std::pair<int32_t, int32_t>> parent;

  std::pair<int32_t, int32_t> find(std::pair<int32_t, int32_t> k) {
    auto it = parent.find(k);
    if (it == parent.end() || it->second == k)
      return k;
    auto root = find(it->second);
    parent[k] = root;
    return root;
  }

  void unite(const Dim &a, const Dim &b) {
    if (a.isStatic() || b.isStatic() || a.multiplier != b.multiplier ||
        a.divisor != b.divisor)
      return;
    auto ra = find({a.argument, a.axis}), rb = find({b.argument, b.axis});
    if (ra == rb)
      return;
    if (rb < ra)
      std::swap(ra, rb);
    parent[ra] = ra;
    parent[rb] = ra;
  }

  /// Operands of one rank that an op requires to have equal shapes.
  void uniteOperands(Operation *op) {
    SmallVector<Value> tensors;
    for (Value v : op->getOperands())
      if (auto t = dyn_cast<RankedTensorType>(v.getType()); t && t.getRank() > 0)
        tensors.push_back(v);
    for (size_t i = 1; i < tensors.size(); ++i) {
      ArrayRef<Dim> a = shapeOf(tensors[0]), b = shapeOf(tensors[i]);
      if (a.size() != b.size())
        continue;
      for (size_t d = 0; d < a.size(); ++d)
        unite(a[d], b[d]);
    }
  }

  LogicalResult runBlock(Block &block) {
    for (Operation &op : block)
      if (failed(visit(&op)))
        return failure();
    return success();
  }

  static Dim staticDim(int64_t size) { return Dim{size, -1, 0}; }

  /// Valid until the next insertion into out.shapes (which may move it).
  ArrayRef<Dim> shapeOf(Value v) { return out.shapes[v]; }

  /// Fills the dynamic dims of `result` in order from `dynamic` and its
  /// static dims from the type.
  LogicalResult fromSizes(Operation *op, Value result, ValueRange sizes) {
    auto type = cast<RankedTensorType>(result.getType());
    SmallVector<Dim, 4> dims;
    unsigned next = 0;
    for (int64_t size : type.getShape()) {
      if (!ShapedType::isDynamic(size)) {
        dims.push_back(staticDim(size));
        continue;
      }
      if (next >= sizes.size())
        return op->emitError("has more dynamic dims than size operands");
      auto it = out.indices.find(sizes[next++]);
      if (it == out.indices.end())
        return op->emitError("reads a size that is not related to an argument");
      dims.push_back(it->second);
    }
    out.shapes[result] = dims;
    return success();
  }

  /// A result whose dynamic dims are those of `like` at the same axes (or of
  /// the first operand of the same rank).
  LogicalResult sameAsOperands(Operation *op, Value result) {
    auto type = cast<RankedTensorType>(result.getType());
    SmallVector<Dim, 4> dims;
    for (auto [axis, size] : llvm::enumerate(type.getShape())) {
      if (!ShapedType::isDynamic(size)) {
        dims.push_back(staticDim(size));
        continue;
      }
      bool found = false;
      for (Value operand : op->getOperands()) {
        auto ot = dyn_cast<RankedTensorType>(operand.getType());
        if (!ot || ot.getRank() != type.getRank() ||
            !ot.isDynamicDim(axis) || !out.shapes.count(operand))
          continue;
        dims.push_back(shapeOf(operand)[axis]);
        found = true;
        break;
      }
      if (!found)
        return op->emitError("has dynamic dim ")
               << axis << " that no operand of the same rank carries";
    }
    out.shapes[result] = dims;
    return success();
  }

  /// A reshape keeps the element count: with one dynamic dim on each side
  /// and equal static products the dynamic dim is the same size.
  LogicalResult reshape(Operation *op, Value input, Value result) {
    auto in = cast<RankedTensorType>(input.getType());
    auto res = cast<RankedTensorType>(result.getType());
    auto staticProduct = [](RankedTensorType t, int &dynamicAxis) {
      int64_t p = 1;
      dynamicAxis = -1;
      int count = 0;
      for (auto [axis, size] : llvm::enumerate(t.getShape())) {
        if (ShapedType::isDynamic(size)) {
          dynamicAxis = static_cast<int>(axis);
          ++count;
        } else {
          p *= size;
        }
      }
      return count > 1 ? int64_t(-1) : p;
    };
    int inAxis, resAxis;
    int64_t inP = staticProduct(in, inAxis), resP = staticProduct(res, resAxis);
    SmallVector<Dim, 4> dims;
    for (int64_t size : res.getShape())
      dims.push_back(staticDim(size));
    if (resAxis >= 0) {
      // One dynamic dim each side: out = in * inP / resP (exact, since the
      // element counts agree).
      if (inAxis < 0 || inP <= 0 || resP <= 0)
        return op->emitError("reshapes dynamic dims in a way that does not "
                             "keep one dynamic dim on each side");
      dims[resAxis] = scaleDim(shapeOf(input)[inAxis], inP, resP);
    }
    out.shapes[result] = dims;
    return success();
  }

  LogicalResult visit(Operation *op) {
    // Every case below indexes its operands' dims.
    for (OpOperand &operand : op->getOpOperands())
      if (isa<RankedTensorType>(operand.get().getType()) && !out.shapes.count(operand.get()))
        return op->emitError("reads a tensor whose symbolic dims are unknown (operand #")
               << operand.getOperandNumber() << ")";
    return llvm::TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](ls2::DimOp o) -> LogicalResult {
          out.indices[o.getResult()] =
              shapeOf(o.getInput())[o.getIndex()];
          return success();
        })
        .Case([&](ls2::BroadcastOp o) -> LogicalResult {
          return fromSizes(op, o.getResult(), o.getDynamicSizes());
        })
        .Case([&](ls2::IotaOp o) -> LogicalResult {
          return fromSizes(op, o.getResult(), o.getDynamicSizes());
        })
        .Case([&](ls2::RandomUniformOp o) -> LogicalResult {
          return fromSizes(op, o.getResult(), o.getDynamicSizes());
        })
        .Case([&](ls2::ScatterAddOp o) -> LogicalResult {
          return fromSizes(op, o.getResult(), o.getDynamicSizes());
        })
        .Case([&](ls2::ReshapeOp o) -> LogicalResult {
          return reshape(op, o.getInput(), o.getResult());
        })
        .Case([&](ls2::TransposeOp o) -> LogicalResult {
          SmallVector<Dim, 4> dims;
          for (int64_t p : o.getPermutation())
            dims.push_back(shapeOf(o.getInput())[p]);
          out.shapes[o.getResult()] = dims;
          return success();
        })
        .Case([&](ls2::SliceOp o) -> LogicalResult {
          SmallVector<Dim, 4> dims(shapeOf(o.getInput()));
          dims[o.getAxis()] = staticDim(o.getLimit() - o.getStart());
          out.shapes[o.getResult()] = dims;
          return success();
        })
        .Case([&](ls2::ConcatOp o) -> LogicalResult {
          SmallVector<Dim, 4> dims(shapeOf(o.getInputs().front()));
          auto type = cast<RankedTensorType>(o.getResult().getType());
          if (type.isDynamicDim(o.getAxis()))
            return o.emitError("concatenates along a dynamic dim");
          dims[o.getAxis()] = staticDim(type.getDimSize(o.getAxis()));
          out.shapes[o.getResult()] = dims;
          return success();
        })
        .Case<ls2::ReduceSumOp, ls2::ReduceMaxOp>([&](auto o) -> LogicalResult {
          ArrayRef<int64_t> axes = o.getAxes();
          SmallVector<Dim, 4> dims;
          for (auto [axis, d] : llvm::enumerate(shapeOf(o.getInput()))) {
            if (llvm::is_contained(axes, static_cast<int64_t>(axis))) {
              if (o.getKeepDims())
                dims.push_back(staticDim(1));
            } else {
              dims.push_back(d);
            }
          }
          out.shapes[o.getResult()] = dims;
          return success();
        })
        .Case([&](ls2::GatherOp o) -> LogicalResult {
          SmallVector<Dim, 4> dims(shapeOf(o.getIds()));
          ArrayRef<Dim> table = shapeOf(o.getTable());
          dims.append(table.begin() + 1, table.end());
          out.shapes[o.getResult()] = dims;
          return success();
        })
        .Case([&](ls2::MatmulOp o) -> LogicalResult {
          ArrayRef<Dim> a = shapeOf(o.getA()), b = shapeOf(o.getB());
          // The contracted dims agree (a weight gradient's token rows).
          unite(o.getTransposeA() ? a[a.size() - 2] : a[a.size() - 1],
                o.getTransposeB() ? b[b.size() - 1] : b[b.size() - 2]);
          SmallVector<Dim, 4> dims(a.begin(), a.end() - 2);
          dims.push_back(o.getTransposeA() ? a[a.size() - 1] : a[a.size() - 2]);
          dims.push_back(o.getTransposeB() ? b[b.size() - 2] : b[b.size() - 1]);
          out.shapes[o.getResult()] = dims;
          if (Value bg = o.getBiasGrad())
            // BGRADA sums a's rows ([M]); an activation gradient's bias
            // gradient sums the result's rows ([N]).
            out.shapes[bg] = {dims[dims.size() - (o.hasActivationGrad() ? 1 : 2)]};
          if (Value aux = o.getAuxOut()) {
            auto t = cast<RankedTensorType>(aux.getType());
            if (t.getElementType().isInteger(32)) // the ReLU bit mask
              out.shapes[aux] = {dims[dims.size() - 2], staticDim(t.getDimSize(1))};
            else
              out.shapes[aux] = dims;
          }
          if (Value aux = o.getAux()) {
            // The GELU input has the result's shape; the mask its rows.
            ArrayRef<Dim> x = shapeOf(aux);
            unite(x[0], dims[dims.size() - 2]);
          }
          return success();
        })
        .Case([&](ls2::AttentionOp o) -> LogicalResult {
          // A copy: inserting the results may move the map's storage.
          SmallVector<Dim, 4> q(shapeOf(o.getQuery()));
          out.shapes[o.getResult()] = SmallVector<Dim, 4>(q);
          out.shapes[o.getLse()] = {q[0], q[1]};
          return success();
        })
        .Case([&](ls2::AttentionGradOp o) -> LogicalResult {
          out.shapes[o.getResult(0)] = SmallVector<Dim, 4>(shapeOf(o.getQuery()));
          out.shapes[o.getResult(1)] = SmallVector<Dim, 4>(shapeOf(o.getKey()));
          out.shapes[o.getResult(2)] = SmallVector<Dim, 4>(shapeOf(o.getValue()));
          return success();
        })
        .Case([&](ls2::FusionOp o) -> LogicalResult {
          Block &body = o.getBody().front();
          for (auto [operand, arg] : llvm::zip(o.getInputs(), body.getArguments())) {
            if (isa<IndexType>(arg.getType()))
              out.indices[arg] = out.indices.lookup(operand);
            else
              out.shapes[arg] = SmallVector<Dim, 4>(shapeOf(operand));
          }
          if (failed(runBlock(body)))
            return failure();
          Operation *yield = body.getTerminator();
          for (auto [result, value] :
               llvm::zip(o.getResults(), yield->getOperands()))
            out.shapes[result] = SmallVector<Dim, 4>(shapeOf(value));
          return success();
        })
        .Default([&](Operation *other) -> LogicalResult {
          if (isa<ls2::AddOp, ls2::SubOp, ls2::MulOp, ls2::DivOp, ls2::MaxOp,
                  ls2::MinOp, ls2::CompareOp, ls2::SelectOp>(other))
            uniteOperands(other);
          for (Value result : other->getResults()) {
            if (!isa<RankedTensorType>(result.getType()))
              continue;
            if (failed(sameAsOperands(other, result)))
              return failure();
          }
          return success();
        });
  }
};

runtime::Dim scaleDim(runtime::Dim d, int64_t num, int64_t den) {
  int64_t m = d.multiplier * num, v = d.divisor * den;
  int64_t g = std::gcd(m, v);
  d.multiplier = m / g;
  d.divisor = v / g;
  return d;
}

FailureOr<SymbolicDims> SymbolicDims::compute(func::FuncOp function) {
  SymbolicDims dims;
  SymbolicDimsBuilder builder(dims);
  if (failed(builder.run(function)))
    return failure();
  builder.canonicalize();
  return dims;
}

ArrayRef<Dim> SymbolicDims::shape(Value value) const {
  auto it = shapes.find(value);
  assert(it != shapes.end() && "value without symbolic dims");
  return it->second;
}

Dim SymbolicDims::index(Value value) const {
  auto it = indices.find(value);
  assert(it != indices.end() && "index value without a symbolic size");
  return it->second;
}

} // namespace ls2c
