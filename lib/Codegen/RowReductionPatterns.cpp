//===- RowReductionPatterns.cpp - reductions a row kernel computes faster -===//
#include "RowReductionPatterns.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace ls2c::codegen {

namespace {

int64_t rankOf(Value v) { return cast<RankedTensorType>(v.getType()).getRank(); }

/// Whether `dims` are 0 .. n-1: a per-row value broadcast along the rows.
bool leadingDims(ArrayRef<int64_t> dims) {
  for (auto [k, d] : llvm::enumerate(dims))
    if (d != static_cast<int64_t>(k))
      return false;
  return true;
}

/// `b` broadcasts a value of the rows' leading dims back to `rank` dims,
/// stretching none of them (a size-1 operand dim read at 0 for every row is
/// not one value per row).
bool broadcastsRows(ls2::BroadcastOp b, int64_t rank, size_t reducedAxes) {
  if (!b || rankOf(b.getResult()) != rank ||
      b.getDims().size() != static_cast<size_t>(rank) - reducedAxes || !leadingDims(b.getDims()))
    return false;
  ArrayRef<int64_t> in = cast<RankedTensorType>(b.getInput().getType()).getShape();
  ArrayRef<int64_t> out = cast<RankedTensorType>(b.getResult().getType()).getShape();
  for (auto [k, d] : llvm::enumerate(in))
    if (d != out[k])
      return false;
  return true;
}

bool isZero(Value v) {
  auto c = v.getDefiningOp<ls2::ConstantOp>();
  if (!c)
    return false;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!dense || !dense.isSplat() || !isa<FloatType>(dense.getElementType()))
    return false;
  return dense.getSplatValue<APFloat>().isZero();
}

/// Whether a and b are the same value or computed alike from the same
/// values (the backward's second ls2.cast of the logits, which no CSE
/// merged with the forward's): pure ops of one name, attributes and result
/// types, a few levels deep.
bool sameValue(Value a, Value b, int depth = 3) {
  if (a == b)
    return true;
  Operation *x = a.getDefiningOp(), *y = b.getDefiningOp();
  if (!x || !y || depth == 0 || x->getName() != y->getName() ||
      x->getAttrDictionary() != y->getAttrDictionary() ||
      x->getResultTypes() != y->getResultTypes() || x->getNumOperands() != y->getNumOperands() ||
      !isMemoryEffectFree(x) || x->getNumRegions() != 0 ||
      cast<OpResult>(a).getResultNumber() != cast<OpResult>(b).getResultNumber())
    return false;
  for (auto [p, q] : llvm::zip(x->getOperands(), y->getOperands()))
    if (!sameValue(p, q, depth - 1))
      return false;
  return true;
}

/// The reduce_max of y when `v` is y - broadcast(reduce_max(y)).
ls2::ReduceMaxOp rowMaxSubtracted(Value v) {
  auto sub = v.getDefiningOp<ls2::SubOp>();
  if (!sub)
    return nullptr;
  Value y = sub.getLhs();
  auto b = sub.getRhs().getDefiningOp<ls2::BroadcastOp>();
  auto max = b ? b.getInput().getDefiningOp<ls2::ReduceMaxOp>() : nullptr;
  if (!max || !sameValue(max.getOperand(), y) || rankOf(sub.getResult()) != rankOf(y) ||
      !broadcastsRows(b, rankOf(y), max.getAxes().size()))
    return nullptr;
  int64_t first = rankOf(y) - static_cast<int64_t>(max.getAxes().size());
  for (auto [k, a] : llvm::enumerate(max.getAxes()))
    if (a != first + static_cast<int64_t>(k))
      return nullptr;
  return max;
}

} // namespace

bool isBelowRowMax(Value v) { return static_cast<bool>(rowMaxSubtracted(v)); }

std::optional<OnlineSoftmax> matchOnlineSoftmax(Operation *reduction) {
  auto matchSum = [](ls2::ReduceSumOp sum) -> std::optional<OnlineSoftmax> {
    auto exp = sum.getOperand().getDefiningOp<ls2::ExpOp>();
    ls2::ReduceMaxOp max = exp ? rowMaxSubtracted(exp.getOperand()) : nullptr;
    // f16, bf16 and f32, which kernels compute in f32 (the pass is f32).
    Type et = max ? cast<RankedTensorType>(max.getOperand().getType()).getElementType() : Type();
    if (!max || max.getAxes() != sum.getAxes() || !(et.isF16() || et.isBF16() || et.isF32()))
      return std::nullopt;
    return OnlineSoftmax{max, sum, max.getOperand()};
  };
  if (auto sum = dyn_cast<ls2::ReduceSumOp>(reduction))
    return matchSum(sum);
  auto max = dyn_cast<ls2::ReduceMaxOp>(reduction);
  if (!max)
    return std::nullopt;
  // The sum, through broadcast -> sub -> exp users of the max (a user may
  // be anything, the yield too).
  for (Operation *b : max.getResult().getUsers())
    if (isa<ls2::BroadcastOp>(b))
      for (Operation *sub : b->getResult(0).getUsers())
        if (isa<ls2::SubOp>(sub))
          for (Operation *exp : sub->getResult(0).getUsers())
            if (isa<ls2::ExpOp>(exp))
              for (Operation *sum : exp->getResult(0).getUsers())
                if (auto s = dyn_cast<ls2::ReduceSumOp>(sum))
                  if (auto m = matchSum(s); m && m->max == reduction)
                    return m;
  return std::nullopt;
}

std::optional<SelectedElement> matchSelectedElement(Operation *reduction) {
  auto sum = dyn_cast<ls2::ReduceSumOp>(reduction);
  if (!sum)
    return std::nullopt;
  int64_t rank = rankOf(sum.getOperand());
  if (sum.getAxes().size() != 1 || sum.getAxes()[0] != rank - 1)
    return std::nullopt;
  auto select = sum.getOperand().getDefiningOp<ls2::SelectOp>();
  if (!select || !isZero(select.getOnFalse()) || rankOf(select.getOnTrue()) != rank)
    return std::nullopt;
  auto cmp = select.getPred().getDefiningOp<ls2::CompareOp>();
  if (!cmp || cmp.getDirection() != ls2::CompareDirection::EQ)
    return std::nullopt;
  for (auto [a, c] :
       {std::pair(cmp.getLhs(), cmp.getRhs()), std::pair(cmp.getRhs(), cmp.getLhs())}) {
    auto iota = a.getDefiningOp<ls2::IotaOp>();
    auto b = c.getDefiningOp<ls2::BroadcastOp>();
    if (iota && static_cast<int64_t>(iota.getDimension()) == rank - 1 &&
        rankOf(iota.getResult()) == rank && broadcastsRows(b, rank, 1) &&
        isa<IntegerType>(cast<RankedTensorType>(b.getInput().getType()).getElementType()))
      return SelectedElement{select.getOnTrue(), b.getInput()};
  }
  return std::nullopt;
}

} // namespace ls2c::codegen
