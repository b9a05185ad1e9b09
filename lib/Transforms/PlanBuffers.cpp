//===- PlanBuffers.cpp - static arena offsets for a scheduled function ----===//
//
// Every tensor a top-level op produces (a fusion group's outputs, a GEMM's or
// attention's results) is a buffer of its bound size (ShapeBounds), live
// from its op to its last reader, readers through views included; values
// the backward reads (ls2.saved) simply have late readers. Function
// arguments (workspaces, inputs) and returned values live outside the
// arena, in the persistent workspaces and output buffers the runtime owns.
// Offsets come from the arena planner (ArenaPlanner.h).
//
//===----------------------------------------------------------------------===//
#include "ls2c/Transforms/Passes.h"

#include "FusionRules.h"
#include "InPlaceResults.h"

#include "ls2c/Analysis/ArenaPlanner.h"
#include "ls2c/Analysis/ProgramStats.h"
#include "ls2c/Analysis/ShapeBounds.h"
#include "ls2c/Transforms/PaddedRows.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

namespace ls2c {
#define GEN_PASS_DEF_PLANBUFFERS
#include "ls2c/Transforms/Passes.h.inc"
} // namespace ls2c

using namespace mlir;
using namespace ls2c;

namespace {

/// Where a value's bytes are: buffer index and byte offset in it.
struct Place {
  int buffer = -1;
  int64_t offset = 0;
  bool strided = false; ///< a strided view of the buffer: no offset of its own
};

/// A loop group may write output `r` over input `a` when `a` is read only
/// element by element at the output's own index.
bool elementwiseInPlace(ls2::FusionOp f, unsigned input, Value result) {
  if (f.getKind() != ls2::FusionKind::Loop)
    return false;
  BlockArgument arg = f.getBody().front().getArgument(input);
  if (arg.getType() != result.getType())
    return false;
  ArrayRef<int64_t> shape = cast<RankedTensorType>(arg.getType()).getShape();
  return llvm::all_of(arg.getUsers(), [&](Operation *u) { return fusion::isElementwiseOfShape(u, shape); });
}

/// A row-reduction group may write its one rows-shaped output `r` over
/// input `a` (the cross-entropy gradient over the logits: 1 GiB of BERT-
/// base's fp16 peak) when `a` is read element by element at the output's
/// index and by the row reductions: every reduction finishes (a warp or
/// block reduction) before the output phase, where each thread reads
/// element j and then stores element j (RowReductionKernel.cpp). A second
/// rows-shaped output could re-read an element the first overwrote, so
/// there must be one.
bool rowReductionInPlace(ls2::FusionOp f, unsigned input, Value result) {
  if (f.getKind() != ls2::FusionKind::RowReduction)
    return false;
  BlockArgument arg = f.getBody().front().getArgument(input);
  if (arg.getType() != result.getType())
    return false;
  ArrayRef<int64_t> shape = cast<RankedTensorType>(arg.getType()).getShape();
  // Only the rows themselves (what the reductions reduce): a per-row input
  // is read by every thread of its row after the last reduction, while lane
  // 0 stores the per-row outputs, so a per-row output may not replace it.
  if (llvm::none_of(f.getBody().front(), [&](Operation &op) {
        return isa<ls2::ReduceSumOp, ls2::ReduceMaxOp>(op) &&
               cast<RankedTensorType>(op.getOperand(0).getType()).getShape() == shape;
      }))
    return false;
  if (llvm::count_if(f.getResults(), [&](Value r) {
        return cast<RankedTensorType>(r.getType()).getShape() == shape;
      }) != 1)
    return false;
  return llvm::all_of(arg.getUsers(), [&](Operation *u) {
    return isa<ls2::ReduceSumOp, ls2::ReduceMaxOp>(u) || fusion::isElementwiseOfShape(u, shape);
  });
}

/// What is live at the arena's peak, grouped by buffer name without its
/// fusion group's number ("layer_norm_8#0" -> "layer_norm#0"), its type
/// at the shape bounds ("[32768 x 2048] bf16") and the owner's frontend
/// scope with layer numbers as '*' ("transformer.h.*"; the model's name,
/// `modelName`, kept as it is), largest first: {step, steps, live = [{name,
/// type, scope, count, bytes}]}. `ls2c compile --stats` prints it.
DictionaryAttr peakAttr(MLIRContext *ctx, const ArenaPlan &plan,
                        const std::vector<PlannedBuffer> &buffers,
                        const std::vector<Value> &owner, const ShapeBounds &bounds,
                        int64_t steps, StringRef modelName) {
  struct Row {
    int64_t count = 0, bytes = 0;
  };
  std::map<std::tuple<std::string, std::string, std::string>, Row> rows; // name, type, scope
  for (const ArenaPlan::PeakBuffer &p : plan.liveAtPeak) {
    StringRef full(buffers[p.buffer].name);
    auto [base, result] = full.split('#');
    StringRef stem = base.rtrim("0123456789");
    if (stem.size() < base.size() && stem.ends_with("_"))
      base = stem.drop_back();
    // The model's own name (the top scope, "gpt.1.3b" say) is kept as it is.
    std::string ownerScope = scopeOf(owner[p.buffer].getLoc()), scope;
    StringRef rest = ownerScope;
    if (!modelName.empty() && rest.starts_with(modelName) &&
        (rest.size() == modelName.size() || rest[modelName.size()] == '.')) {
      scope = modelName.str();
      rest = rest.drop_front(modelName.size()).ltrim('.');
    }
    while (!rest.empty()) {
      auto [part, tail] = rest.split('.');
      bool number = llvm::all_of(part, [](char c) { return c >= '0' && c <= '9'; });
      scope += (scope.empty() ? "" : ".") + (number && !part.empty() ? std::string("*") : part.str());
      rest = tail;
    }
    // The shape at max_batch_tokens and the dtype: "[32768 x 2048] bf16".
    std::string type = "[";
    llvm::raw_string_ostream os(type);
    llvm::interleave(bounds.shape(owner[p.buffer]), os, " x ");
    os << "] " << cast<RankedTensorType>(owner[p.buffer].getType()).getElementType();
    Row &row = rows[{(base + "#" + result).str(), os.str(), scope}];
    ++row.count;
    row.bytes += p.bytes;
  }
  std::vector<std::pair<std::tuple<std::string, std::string, std::string>, Row>> sorted(
      rows.begin(), rows.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto &x, const auto &y) {
    return x.second.bytes > y.second.bytes;
  });
  Builder b(ctx);
  SmallVector<Attribute> live;
  for (const auto &[key, row] : sorted)
    live.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("name", b.getStringAttr(std::get<0>(key))),
         b.getNamedAttr("type", b.getStringAttr(std::get<1>(key))),
         b.getNamedAttr("scope", b.getStringAttr(std::get<2>(key))),
         b.getNamedAttr("count", b.getI64IntegerAttr(row.count)),
         b.getNamedAttr("bytes", b.getI64IntegerAttr(row.bytes))}));
  return b.getDictionaryAttr({b.getNamedAttr("step", b.getI64IntegerAttr(plan.peakStep)),
                              b.getNamedAttr("steps", b.getI64IntegerAttr(steps)),
                              b.getNamedAttr("live", b.getArrayAttr(live))});
}

struct PlanBuffersPass : ls2c::impl::PlanBuffersBase<PlanBuffersPass> {
  using PlanBuffersBase::PlanBuffersBase;

  void runOnOperation() override {
    func::FuncOp f = getOperation();
    if (f.isExternal())
      return;
    FailureOr<ShapeBounds> bounds = ShapeBounds::compute(f);
    if (failed(bounds))
      return signalPassFailure();
    Block &block = f.getBody().front();
    Operation *terminator = block.getTerminator();
    markPaddedRows(f);

    // Written straight into the caller's output buffer: a returned value
    // and what it reshapes (the same bytes). A returned slice keeps its base
    // in the arena (the program copies the slice out), as does a value
    // returned twice (ProgramBuilder.cpp).
    llvm::DenseSet<Value> returned;
    for (Value v : terminator->getOperands()) {
      Value base = v;
      while (auto r = base.getDefiningOp<ls2::ReshapeOp>())
        base = r.getInput();
      Operation *d = base.getDefiningOp();
      if (!d || fusion::isView(d) || returned.contains(base))
        continue;
      for (Value w = v;; w = w.getDefiningOp()->getOperand(0)) {
        returned.insert(w);
        if (w == base)
          break;
      }
    }

    std::vector<PlannedBuffer> buffers;
    std::vector<Value> owner;
    DenseMap<Value, Place> place;
    // Pieces of an in-place concat: the op that writes a piece allocates
    // the concat's buffer, and writes into it with strides.
    DenseMap<Value, Value> pieceOf;
    for (Operation &op : block)
      if (fusion::isInPlaceConcat(&op)) {
        op.setAttr("ls2.in_place", UnitAttr::get(f.getContext()));
        for (Value v : op.getOperands()) {
          while (auto r = v.getDefiningOp<ls2::ReshapeOp>())
            v = r.getInput();
          pieceOf[v] = op.getResult(0); // an attention gradient or a group's sum
        }
      }
    auto newBuffer = [&](Value r, Operation &op, int64_t first) {
      PlannedBuffer b;
      b.id = static_cast<int64_t>(buffers.size());
      b.sizeBytes = bounds->bytes(r);
      if (int64_t stride = paddedRowStride(r)) {
        auto type = cast<RankedTensorType>(r.getType());
        b.sizeBytes = bounds->shape(r)[0] * stride *
                      (type.getElementType().getIntOrFloatBitWidth() / 8);
      }
      b.firstStep = b.lastStep = first;
      std::string name;
      llvm::raw_string_ostream os(name);
      if (auto fusion = dyn_cast<ls2::FusionOp>(op))
        os << fusion.getGroupName();
      else
        os << op.getName().stripDialect();
      os << "#" << cast<OpResult>(r).getResultNumber();
      b.name = os.str();
      place[r] = {static_cast<int>(buffers.size()), 0, false};
      buffers.push_back(b);
      owner.push_back(r);
      return static_cast<int>(buffers.size()) - 1;
    };
    int64_t step = 0;
    for (Operation &op : block) {
      if (&op == terminator)
        break;
      for (Value v : op.getOperands())
        if (auto it = place.find(v); it != place.end() && it->second.buffer >= 0)
          buffers[it->second.buffer].lastStep = step;
      for (Value r : op.getResults()) {
        if (!isa<RankedTensorType>(r.getType()))
          continue;
        if (fusion::isView(&op)) {
          auto it = place.find(op.getOperand(0));
          if (it != place.end()) {
            // Copied first: inserting into the map may move its entries.
            Place base = it->second;
            // A strided view (and what reshapes it) has no bytes of its
            // own to place: readers read the base through strides.
            bool strided = base.strided || fusion::isStridedView(&op);
            place[r] = {base.buffer,
                        strided ? 0
                                : base.offset + fusion::viewByteOffset(&op),
                        strided};
          }
          continue; // a view of an argument: not in the arena
        }
        if (Value whole = pieceOf.lookup(r)) {
          // Written straight into the in-place concat's buffer: the
          // caller's output buffer when the concat is returned.
          if (returned.contains(whole))
            continue;
          int buffer = place.count(whole)
                           ? place[whole].buffer
                           : newBuffer(whole, *whole.getDefiningOp(), step);
          place[r] = {buffer, 0, true};
          continue;
        }
        if (place.count(r))
          continue; // an in-place concat whose pieces made its buffer
        if (returned.contains(r))
          continue; // written to the caller's output buffer
        int index = newBuffer(r, op, step);
        if (auto fusion = dyn_cast<ls2::FusionOp>(op))
          for (auto [i, input] : llvm::enumerate(fusion.getInputs())) {
            auto it = place.find(input);
            if (it == place.end() || it->second.offset != 0 || it->second.strided ||
                buffers[it->second.buffer].sizeBytes != buffers[index].sizeBytes ||
                paddedRowStride(input) != paddedRowStride(r) ||
                !(elementwiseInPlace(fusion, i, r) || rowReductionInPlace(fusion, i, r)))
              continue;
            buffers[index].inPlaceOf = buffers[it->second.buffer].id;
            break;
          }
      }
      ++step;
    }
    for (Value v : terminator->getOperands())
      if (auto it = place.find(v); it != place.end() && it->second.buffer >= 0)
        buffers[it->second.buffer].lastStep = step;

    ArenaPlan plan;
    try {
      plan = planArena(buffers);
    } catch (const std::invalid_argument &e) {
      f.emitError("buffer planning failed: ") << std::string(e.what());
      return signalPassFailure();
    }
    if (std::string bad = verifyArenaPlan(buffers, plan); !bad.empty()) {
      f.emitError("the buffer plan overlaps live buffers: ") << bad;
      return signalPassFailure();
    }

    // Per op: each result's byte offset in the arena, -1 outside it.
    MLIRContext *ctx = f.getContext();
    for (Operation &op : block) {
      if (&op == terminator || op.getNumResults() == 0)
        continue;
      SmallVector<int64_t> offsets;
      bool any = false;
      for (Value r : op.getResults()) {
        auto it = place.find(r);
        int64_t o = it == place.end() || it->second.strided
                        ? -1
                        : plan.offsets[it->second.buffer] + it->second.offset;
        any |= o >= 0;
        offsets.push_back(o);
      }
      if (any)
        op.setAttr("ls2.offsets", DenseI64ArrayAttr::get(ctx, offsets));
    }
    auto i64 = IntegerType::get(ctx, 64);
    f->setAttr("ls2.arena_bytes", IntegerAttr::get(i64, plan.arenaBytes));
    f->setAttr("ls2.arena_lower_bound_bytes",
               IntegerAttr::get(i64, plan.lowerBoundBytes));
    auto module = f->getParentOfType<ModuleOp>();
    std::optional<StringRef> modelName = module ? module.getName() : std::nullopt;
    f->setAttr("ls2.arena_peak",
               peakAttr(ctx, plan, buffers, owner, *bounds, step, modelName.value_or("")));
    markInPlaceResults(f);

    if (print) {
      auto &os = llvm::outs();
      os << "buffer plan of @" << f.getSymName() << ": " << buffers.size()
         << " buffers, arena " << plan.arenaBytes << " bytes, lower bound "
         << plan.lowerBoundBytes << " bytes, "
         << llvm::format("%.3f", plan.lowerBoundBytes
                                     ? double(plan.arenaBytes) /
                                           double(plan.lowerBoundBytes)
                                     : 1.0)
         << "x, " << plan.strategy << "\n";
      for (size_t i = 0; i < buffers.size(); ++i) {
        const PlannedBuffer &b = buffers[i];
        os << "  " << b.name << ": offset " << plan.offsets[i] << ", size "
           << b.sizeBytes << ", live [" << b.firstStep << ", " << b.lastStep
           << "]";
        if (plan.inPlaceHonored[i])
          os << ", in place of " << buffers[*b.inPlaceOf].name;
        os << "\n";
      }
    }
  }
};

} // namespace
