//===- InPlaceResults.cpp - results that may overwrite their argument -----===//
#include "InPlaceResults.h"

#include "FusionRules.h"

#include "ls2/IR/LS2Dialect.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <optional>
#include <vector>

using namespace mlir;

namespace ls2c {
namespace {

/// An op writing elements [lo, hi) of the result: its result `output` is
/// the yield operand computing them.
struct Writer {
  ls2::FusionOp op;
  unsigned output = 0;
  int64_t lo = 0, hi = 0;
};

/// A read of the argument: operand `operand` of `op` holds argument
/// elements [lo, hi) (its element j is argument element lo + j).
struct Read {
  Operation *op = nullptr;
  unsigned operand = 0;
  int64_t lo = 0, hi = 0;
};

int64_t numel(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.hasStaticShape() ? t.getNumElements() : -1;
}

bool isElementwise(Operation *op) {
  return isa<ls2::AddOp, ls2::SubOp, ls2::MulOp, ls2::DivOp, ls2::MaxOp, ls2::MinOp, ls2::NegOp,
             ls2::ExpOp, ls2::LogOp, ls2::TanhOp, ls2::ErfOp, ls2::SqrtOp, ls2::RsqrtOp,
             ls2::SelectOp, ls2::CompareOp, ls2::CastOp>(op);
}

/// Inside a loop fusion's body: does every use of `v` (rank 1, its element
/// j = argument element j + shift) end in a yield at loop element j with
/// shift = lo, i.e. only in the iteration that writes result element
/// j + shift - lo of output `output`? A yield of another output is such a
/// use too: the loop writes all its outputs' element j in the iteration
/// that reads it (an optimizer's parameter, moment and variance updates in
/// one kernel, each reading the moments), since a loop kernel computes all
/// outputs of an element before it stores the first (LoopKernel.cpp).
bool readsOwnIndex(Value v, int64_t shift, int64_t lo, int depth = 0,
                   bool concats = true) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getRank() != 1 || depth > 64)
    return false;
  for (OpOperand &use : v.getUses()) {
    Operation *u = use.getOwner();
    if (isa<ls2::YieldOp>(u)) {
      if (shift != lo)
        return false;
      continue;
    }
    if (isElementwise(u)) {
      for (Value r : u->getResults())
        if (!readsOwnIndex(r, shift, lo, depth + 1, concats))
          return false;
      continue;
    }
    if (auto concat = dyn_cast<ls2::ConcatOp>(u); concats && concat && concat.getAxis() == 0) {
      int64_t position = 0;
      for (unsigned k = 0; k < use.getOperandNumber(); ++k)
        position += numel(concat.getInputs()[k]);
      if (!readsOwnIndex(concat.getResult(), shift - position, lo, depth + 1))
        return false;
      continue;
    }
    return false;
  }
  return true;
}

/// Every read of `v` (argument elements [base, base + numel(v))) through
/// contiguous views; false when some use cannot be placed.
bool collectReads(Value v, int64_t base, std::vector<Read> &reads) {
  for (OpOperand &use : v.getUses()) {
    Operation *u = use.getOwner();
    if (isa<ls2::DimOp>(u))
      continue; // reads the shape only
    if (fusion::isView(u)) {
      if (fusion::isStridedView(u))
        return false;
      auto type = cast<RankedTensorType>(v.getType());
      int64_t eb = std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
      if (!collectReads(u->getResult(0), base + fusion::viewByteOffset(u) / eb, reads))
        return false;
      continue;
    }
    int64_t n = numel(v);
    if (n < 0)
      return false;
    reads.push_back({u, use.getOperandNumber(), base, base + n});
  }
  return true;
}

std::optional<std::vector<Writer>> writersOf(Value v) {
  auto loopOutput = [](Value x) -> std::optional<Writer> {
    auto f = x.getDefiningOp<ls2::FusionOp>();
    if (!f || f.getKind() != ls2::FusionKind::Loop)
      return std::nullopt;
    Writer w;
    w.op = f;
    w.output = cast<OpResult>(x).getResultNumber();
    return w;
  };
  std::vector<Writer> out;
  if (std::optional<Writer> w = loopOutput(v)) {
    w->hi = numel(v);
    out.push_back(*w);
    return out;
  }
  auto concat = v.getDefiningOp<ls2::ConcatOp>();
  if (!concat || !concat->hasAttr("ls2.in_place") || concat.getAxis() != 0)
    return std::nullopt;
  int64_t at = 0;
  for (Value piece : concat.getInputs()) {
    std::optional<Writer> w = loopOutput(piece);
    if (!w)
      return std::nullopt;
    w->lo = at;
    w->hi = at + numel(piece);
    at = w->hi;
    out.push_back(*w);
  }
  return out;
}

/// A result of dynamic length: only when one loop fusion writes all of it
/// and is the argument's only reader, reading each element for its own
/// index through elementwise ops alone (sequence parallelism's gradient
/// accumulators): no concat, whose offsets would be unknown, so the result
/// has the argument's length.
bool mayOverwriteDynamic(BlockArgument arg, Value result) {
  auto writer = result.getDefiningOp<ls2::FusionOp>();
  if (!writer || writer.getKind() != ls2::FusionKind::Loop)
    return false;
  for (OpOperand &use : arg.getUses()) {
    if (isa<ls2::DimOp>(use.getOwner()))
      continue;
    if (use.getOwner() != writer.getOperation() ||
        !readsOwnIndex(writer.getBody().front().getArgument(use.getOperandNumber()), 0, 0,
                       0, /*concats=*/false))
      return false;
  }
  return true;
}

bool mayOverwrite(BlockArgument arg, Value result) {
  if (numel(result) < 0)
    return mayOverwriteDynamic(arg, result);
  std::optional<std::vector<Writer>> writers = writersOf(result);
  if (!writers || numel(result) < 0)
    return false;
  std::vector<Read> reads;
  if (!collectReads(arg, 0, reads))
    return false;
  for (const Read &r : reads) {
    if (isa<func::ReturnOp>(r.op))
      return false; // returned as well: it must keep its old value
    for (Writer w : *writers) {
      Operation *writer = w.op.getOperation();
      if (r.op == writer) {
        BlockArgument inner = w.op.getBody().front().getArgument(r.operand);
        if (!readsOwnIndex(inner, r.lo, w.lo))
          return false;
        continue;
      }
      if (r.op->getBlock() != writer->getBlock())
        return false;
      if (writer->isBeforeInBlock(r.op) && r.lo < w.hi && w.lo < r.hi)
        return false; // read after its elements are overwritten
    }
  }
  return true;
}

} // namespace

void markInPlaceResults(func::FuncOp f) {
  if (f.isExternal())
    return;
  Operation *ret = f.getBody().front().getTerminator();
  llvm::DenseMap<Attribute, unsigned> argumentByName;
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    if (auto name = f.getArgAttrOfType<StringAttr>(i, "ls2.name"))
      argumentByName.try_emplace(name, i);
  for (unsigned r = 0; r < ret->getNumOperands(); ++r) {
    auto name = f.getResultAttrOfType<StringAttr>(r, "ls2.name");
    Value v = ret->getOperand(r);
    auto it = name ? argumentByName.find(name) : argumentByName.end();
    if (it == argumentByName.end() || isa<BlockArgument>(v))
      continue;
    BlockArgument arg = f.getArgument(it->second);
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (arg.getType() != v.getType() || !type || type.getRank() != 1)
      continue;
    if (mayOverwrite(arg, v))
      f.setResultAttr(r, "ls2.in_place_of",
                      IntegerAttr::get(IntegerType::get(f.getContext(), 64), it->second));
  }
}

} // namespace ls2c
