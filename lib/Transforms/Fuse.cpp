//===- Fuse.cpp - partition a function into fusion groups -----------------===//
//
// Greedy producer -> consumer fusion in program order (the shape of XLA's
// instruction fusion), over the classes of FusionRules.h, after the
// forward/backward split and rematerialization (Rematerialize.h); then
// sibling and neighbouring column reductions. Every merge keeps the groups
// acyclic and their iteration spaces compatible; every refusal records why.
// Groups become ls2.fusion ops, GEMM epilogues are attached
// (FusionEpilogues.h), and the block is re-scheduled in a topological order
// close to the original one.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Transforms/Passes.h"

#include "FusionRules.h"
#include "FusionEpilogues.h"
#include "Rematerialize.h"

#include "ls2c/Analysis/ShapeBounds.h"
#include "ls2c/Analysis/SymbolicDims.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <queue>
#include <set>

namespace ls2c {
#define GEN_PASS_DEF_FUSE
#include "ls2c/Transforms/Passes.h.inc"
} // namespace ls2c

using namespace mlir;
using namespace ls2c;
using namespace ls2c::fusion;

namespace {

/// An element count as a function of the dynamic sizes: num / den times
/// the size of one argument dim (argument < 0: the static count num).
/// Counts equal at the bounds can differ at run time (a static
/// max_predictions equal to max_batch_tokens beside the dynamic token
/// count), and one kernel iterates over one count.
struct Count {
  int32_t argument = -1, axis = 0;
  int64_t num = 0, den = 1;
};

struct Group {
  ls2::FusionKind kind = ls2::FusionKind::Loop;
  SmallVector<Operation *> ops;
  /// The iteration space: loop = (elements, 1); row = (rows, row length);
  /// column = (reduced rows N, columns H).
  int64_t outer = 0, inner = 1;
  /// The same symbolically, when known: a loop's elements, a reduction's
  /// operand (its whole space) and its result (per-row or per-column values).
  std::optional<Count> space, reduced;
  int64_t savedBytes = 0;
  /// The first and last of its ops in program order (Fuser::pos).
  int minPos = std::numeric_limits<int>::max(), maxPos = -1;
  bool alive = true;
};

/// How many intervals [lo, hi) of program positions cover a position, as
/// intervals are added and removed: a Fenwick tree over the differences
/// (range add, point query), O(log n) each.
class CoverCount {
public:
  void resize(size_t n) { tree.assign(n + 1, 0); }
  void add(int lo, int hi, int delta) {
    if (lo >= hi)
      return;
    bump(lo, delta);
    bump(hi, -delta);
  }
  int at(int p) const {
    int sum = 0;
    for (size_t i = static_cast<size_t>(p) + 1; i > 0; i -= i & (~i + 1))
      sum += tree[i];
    return sum;
  }

private:
  void bump(int p, int delta) {
    for (size_t i = static_cast<size_t>(p) + 1; i < tree.size(); i += i & (~i + 1))
      tree[i] += delta;
  }
  std::vector<int> tree;
};

std::string opName(Operation *op) {
  std::string s = op->getName().getStringRef().str();
  if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
    s += " (" + loc.getName().str() + ")";
  return s;
}

class Fuser {
public:
  Fuser(func::FuncOp f, bool report, bool rematerialize, bool geluGradEpilogue,
        bool checkpointActivations, bool recomputeAttention, bool epilogues,
        bool reluMaskFromOutput)
      : func(f), report(report), rematerialize(rematerialize || checkpointActivations),
        geluGradEpilogue(geluGradEpilogue), checkpointActivations(checkpointActivations),
        recomputeAttention(recomputeAttention), attachGemmEpilogues(epilogues),
        reluMaskFromOutput(reluMaskFromOutput) {}

  LogicalResult run() {
    Block &block = func.getBody().front();
    canonicalizeDims(block);
    eraseDeadPureOps(block);
    {
      PassSplit split =
          splitPasses(func, rematerialize, checkpointActivations, recomputeAttention);
      backward = std::move(split.backward);
      recomputed = std::move(split.recomputed);
      recomputedOps = split.recomputedOps;
      rematerialized = split.duplicatedCasts;
      rematerializedValues = std::move(split.narrowedCasts);
      recomputedGemms = std::move(split.recomputedGemms);
    }
    if (checkpointActivations)
      copyBroadcastsForGradients(block);
    if (reluMaskFromOutput)
      reluMasksFromOutputs(block);
    // Bounds of the program as it will be fused (after the copies above).
    FailureOr<ShapeBounds> computed = ShapeBounds::compute(func);
    if (failed(computed))
      return failure();
    boundsStorage = std::move(*computed);
    {
      // The values' symbolic dims (SymbolicDims.h), as the kernels will see
      // them. Unknown dims only leave counts unknown and stop column merges
      // (codegen reports them), so the analysis's errors are not this
      // pass's: they are swallowed, and the pass succeeds.
      ScopedDiagnosticHandler silence(func.getContext(), [](Diagnostic &) { return success(); });
      FailureOr<SymbolicDims> symbolic = SymbolicDims::compute(func);
      if (succeeded(symbolic))
        dims.emplace(std::move(*symbolic));
    }
    for (Value v : rematerializedValues)
      rematerializedBytes +=
          bounds.bytes(v) - bounds.bytes(v.getDefiningOp()->getOperand(0));
    straddling.resize(block.getOperations().size());
    for (Operation &op : block) {
      pos[&op] = static_cast<int>(order.size());
      order.push_back(&op);
      OpClass c = classify(&op, clonable);
      cls[&op] = c;
      if (c == OpClass::Clonable)
        clonable.insert(&op);
      if (c == OpClass::Elementwise || c == OpClass::RowReduce ||
          c == OpClass::ColReduce)
        newGroup(&op, c);
    }
    for (Operation *op : order) {
      if (!groupOf.count(op))
        continue;
      for (Value w : op->getOperands()) {
        Operation *p = producer(w);
        if (!p)
          continue;
        if (!groupOf.count(p)) {
          if (cls[p] == OpClass::Opaque)
            refuse(p, op, "the producer is opaque (a library call or its own kernel)");
          continue;
        }
        if (groupOf[p] != groupOf[op])
          tryMerge(groupOf[p], groupOf[op], p, op, w);
      }
    }
    mergeColumnSiblings();
    mergeLoopSiblings();
    mergeColumnNeighbours();
    mergeColumnSumsIntoRows();
    splitMixedLoops();
    materializeAll();
    return success();
  }

private:
  /// The earliest value whose dim equals dynamic dim `d` of `v`, as far as
  /// the ops on the way say so (same-shape operands, matmul rows, gather ids,
  /// sizes read by ls2.dim, a reshape that keeps the dynamic dim): a
  /// function argument where the chain reaches one, else the value where
  /// it stops (a concat, a reshape that merges the dim with others).
  std::pair<Value, int64_t> traceDim(Value v, int64_t d) {
    for (int depth = 0; depth < 10000; ++depth) {
      if (isa<BlockArgument>(v))
        return {v, d};
      Operation *op = v.getDefiningOp();
      auto type = cast<RankedTensorType>(v.getType());
      SmallVector<Value> sizes;
      for (Value o : op->getOperands())
        if (o.getType().isIndex())
          sizes.push_back(o);
      if (!sizes.empty()) {
        // The k-th dynamic dim is the k-th size operand.
        int64_t k = 0;
        for (int64_t i = 0; i < d; ++i)
          k += type.isDynamicDim(i);
        auto dim = sizes[k].getDefiningOp<ls2::DimOp>();
        if (!dim)
          return {v, d};
        v = dim.getInput();
        d = dim.getIndex();
        continue;
      }
      if (auto r = dyn_cast<ls2::ReshapeOp>(op)) {
        auto in = cast<RankedTensorType>(r.getInput().getType());
        if (type.getNumDynamicDims() != 1 || in.getNumDynamicDims() != 1)
          return {v, d};
        int64_t staticOut = 1, staticIn = 1, dynIn = 0;
        for (int64_t x : type.getShape())
          staticOut *= ShapedType::isDynamic(x) ? 1 : x;
        for (auto [i, x] : llvm::enumerate(in.getShape())) {
          staticIn *= ShapedType::isDynamic(x) ? 1 : x;
          if (ShapedType::isDynamic(x))
            dynIn = static_cast<int64_t>(i);
        }
        if (staticIn != staticOut)
          return {v, d};
        v = r.getInput();
        d = dynIn;
        continue;
      }
      if (auto m = dyn_cast<ls2::MatmulOp>(op)) {
        auto a = cast<RankedTensorType>(m.getA().getType());
        if (d != type.getRank() - 2 && d >= a.getRank() - 2)
          return {v, d};
        if (d == type.getRank() - 2)
          d = a.getRank() - (m.getTransposeA() ? 1 : 2);
        v = m.getA();
        continue;
      }
      if (auto g = dyn_cast<ls2::GatherOp>(op)) {
        if (d >= cast<RankedTensorType>(g.getIds().getType()).getRank())
          return {v, d};
        v = g.getIds();
        continue;
      }
      if (auto ag = dyn_cast<ls2::AttentionGradOp>(op)) {
        v = v == ag.getDq() ? ag.getQuery() : v == ag.getDk() ? ag.getKey() : ag.getValue();
        continue;
      }
      if (isa<ls2::TransposeOp, ls2::ReduceSumOp, ls2::ReduceMaxOp,
              ls2::ConcatOp, ls2::ScatterAddOp>(op))
        return {v, d};
      // Elementwise ops, slices (along another axis), attention (from the
      // query): the same dim of an operand of the same rank.
      Value next;
      for (Value o : op->getOperands()) {
        auto t = dyn_cast<RankedTensorType>(o.getType());
        if (t && t.getRank() > d && t.isDynamicDim(d)) {
          next = o;
          break;
        }
      }
      if (!next)
        return {v, d};
      v = next;
    }
    return {v, d};
  }

  /// Sizes read from computed values become sizes of function arguments,
  /// so no kernel has to publish a tensor just for its shape; where no
  /// argument has the size because a reshape merges it with others (ViT's
  /// tokens: batch x patches), sizes of that reshape's result, so that a
  /// size read from a group's result does not look like a path between that
  /// group and its readers (it kept a pre-LN residual add and the layer norm
  /// after it in two kernels). A chain that stops elsewhere (a reduction, a
  /// transpose) keeps its size: read from such a value it would make a
  /// kernel write that value just for its shape.
  void canonicalizeDims(Block &block) {
    std::map<std::pair<void *, int64_t>, Value> made;
    for (Operation &op : llvm::make_early_inc_range(block)) {
      auto dim = dyn_cast<ls2::DimOp>(op);
      if (!dim || isa<BlockArgument>(dim.getInput()))
        continue;
      auto [source, index] = traceDim(dim.getInput(), dim.getIndex());
      if (source == dim.getInput() ||
          !(isa<BlockArgument>(source) || source.getDefiningOp<ls2::ReshapeOp>()))
        continue;
      Value &v = made[{source.getAsOpaquePointer(), index}];
      if (!v) {
        // Right after the source's definition, which every reader of the
        // old size follows.
        OpBuilder b(&block, block.begin());
        if (Operation *def = source.getDefiningOp())
          b.setInsertionPointAfter(def);
        v = b.create<ls2::DimOp>(dim.getLoc(), source, static_cast<uint64_t>(index));
      }
      dim.getResult().replaceAllUsesWith(v);
      dim.erase();
    }
  }

  /// Checkpointed, a layer's recomputation and its gradients are different
  /// kernels (GEMMs lie between them). A recomputed broadcast read by both
  /// (an RMSNorm's rstd over [T, H], the rotary cos/sin over the heads)
  /// would be written by the recomputing kernel in f32 for the gradient
  /// kernel to read: the gradients get a copy of their own, which joins only
  /// a kernel that reads it (pullsRecomputedForward), so the gradient kernel
  /// broadcasts the smaller value itself. Widening casts are not copied: with
  /// the erf GELU in fp16 the gradients' copy of the cast pulled the kernel
  /// apart and handed 0.5 (1 + erf) over in f32 instead (BERT-base
  /// checkpointed: +4.8% planned peak).
  void copyBroadcastsForGradients(Block &block) {
    auto isGradient = [&](Operation *op) {
      return backward.contains(op) && !recomputed.contains(op);
    };
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (!recomputed.contains(&op) || !isa<ls2::BroadcastOp>(op))
        continue;
      Value v = op.getResult(0);
      bool gradients = llvm::any_of(v.getUsers(), isGradient);
      bool others =
          llvm::any_of(v.getUsers(), [&](Operation *u) { return !isGradient(u); });
      if (!gradients || !others)
        continue;
      OpBuilder b(op.getBlock(), std::next(op.getIterator()));
      Operation *copy = b.clone(op);
      v.replaceUsesWithIf(copy->getResult(0),
                          [&](OpOperand &use) { return isGradient(use.getOwner()); });
      backward.insert(copy);
      recomputed.insert(copy);
      gradientCopies.insert(copy);
      copiedBroadcasts.insert(&op);
    }
  }

  /// A ReLU, y = select(x > 0, x, 0), whose mask x > 0 the backward reads
  /// (the gradient select(mask, dy, 0)) while it reads y anyway (the next
  /// GEMM's weight gradient): the backward compares y > 0 instead, which is
  /// the same mask (y > 0 exactly where x > 0, NaN included), so the forward
  /// stores no mask, and its GEMM takes RELU_BIAS rather than RELU_AUX_BIAS,
  /// and the gradient needs no DRELU_BGRAD (H200, Transformer-base's FFN,
  /// 4096x2048x512 fp16: 16 us plain or with BIAS, 23 with RELU_AUX_BIAS, 54
  /// with DRELU_BGRAD; bench/cuda/gemm_relu_epilogues.cu).
  void reluMasksFromOutputs(Block &block) {
    if (backward.empty())
      return;
    for (Operation &op : llvm::make_early_inc_range(block)) {
      auto relu = dyn_cast<ls2::SelectOp>(op);
      if (!relu || backward.contains(relu))
        continue;
      ls2::CompareOp mask = reluMask(relu);
      if (!mask || mask.getLhs().getType() != relu.getType())
        continue;
      Value y = relu.getResult();
      bool yReadBackward = llvm::any_of(y.getUsers(), [&](Operation *u) {
        return backward.contains(u);
      });
      if (!yReadBackward)
        continue;
      for (OpOperand &use : llvm::make_early_inc_range(mask.getResult().getUses())) {
        Operation *u = use.getOwner();
        if (!backward.contains(u) || !relu->isBeforeInBlock(u))
          continue;
        OpBuilder b(u);
        auto again = b.create<ls2::CompareOp>(mask.getLoc(), ls2::CompareDirection::GT, y,
                                              mask.getRhs());
        backward.insert(again);
        use.set(again.getResult());
      }
    }
  }

  /// Ops whose results nobody reads (sizes no longer read, slices left by
  /// ls2-merge-gemms) would otherwise become kernels without outputs.
  static void eraseDeadPureOps(Block &block) {
    for (bool changed = true; changed;) {
      changed = false;
      for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
        if (op.use_empty() && !op.hasTrait<OpTrait::IsTerminator>() &&
            isPure(&op)) {
          op.erase();
          changed = true;
        }
    }
  }

  int64_t recomputedOps = 0;
  int64_t rematerialized = 0, rematerializedBytes = 0;
  SmallVector<Value> rematerializedValues; // the forward casts now stored narrow
  llvm::DenseSet<Operation *> recomputedGemms; // and their copies: no epilogues

  llvm::DenseSet<Operation *> backward;
  llvm::DenseSet<Operation *> recomputed; ///< backward copies of forward ops
  llvm::DenseMap<Operation *, bool> rowFed; ///< feedsBackwardRowReduction
  /// Recomputed broadcasts copied for the gradients, and the originals the
  /// recomputation keeps (copyBroadcastsForGradients).
  llvm::DenseSet<Operation *> gradientCopies, copiedBroadcasts;
  func::FuncOp func;
  ShapeBounds boundsStorage;
  const ShapeBounds &bounds = boundsStorage;
  bool report;
  bool rematerialize;
  bool geluGradEpilogue;
  bool checkpointActivations;
  bool recomputeAttention; ///< checkpointing keeps no attention results
  bool attachGemmEpilogues;
  bool reluMaskFromOutput;
  std::vector<Operation *> order;
  DenseMap<Operation *, int> pos;
  DenseMap<Operation *, OpClass> cls;
  llvm::DenseSet<Operation *> clonable;
  DenseMap<Operation *, int> groupOf;
  std::vector<Group> groups;
  /// Alive groups by the span [minPos, maxPos) of their ops: those that
  /// straddle a position (pathOutside's cut).
  CoverCount straddling;
  /// pathOutside's visited marks: an entry equals `searchEpoch` when set in
  /// the current search (no clearing per search: deep models search often).
  std::vector<unsigned> seenEpoch, expandedEpoch;
  unsigned searchEpoch = 0;
  /// Why producer and consumer were not fused; a later merge (column sums
  /// into their row reduction) may put them in one group after all, and
  /// the report leaves those out.
  struct Refusal {
    Operation *producer, *consumer; ///< compared, never dereferenced, once erased
    std::string text;
  };
  std::vector<Refusal> refusals;

  int64_t numel(Value v) { return bounds.numElements(v); }

  std::optional<SymbolicDims> dims; ///< of the function, when known
  /// `v`'s element count symbolically; nullopt when unknown (no dims, or
  /// more than one dynamic dim).
  std::optional<Count> countOf(Value v) {
    if (!dims || !isa<RankedTensorType>(v.getType()))
      return std::nullopt;
    Count c;
    int64_t product = 1;
    std::optional<runtime::Dim> dynamic;
    for (const runtime::Dim &d : dims->shape(v)) {
      if (d.isStatic()) {
        product *= d.size;
        continue;
      }
      if (dynamic)
        return std::nullopt;
      dynamic = d;
    }
    if (!dynamic) {
      c.num = product;
      return c;
    }
    int64_t num = product * dynamic->multiplier, den = dynamic->divisor;
    int64_t g = std::gcd(num, den);
    c.argument = dynamic->argument;
    c.axis = dynamic->axis;
    c.num = g ? num / g : num;
    c.den = g ? den / g : den;
    return c;
  }
  /// False when the counts are known to differ at run time: a static count
  /// beside a dynamic one (or two different static ones). Two dynamic
  /// counts may be equal although their symbols differ (SymbolicDims does
  /// not unify every pair of equal sizes): the bounds decide those.
  static bool mayEqual(const std::optional<Count> &a, const std::optional<Count> &b) {
    if (!a || !b)
      return true;
    bool staticA = a->argument < 0, staticB = b->argument < 0;
    if (staticA != staticB)
      return false;
    return !staticA || a->num == b->num;
  }

  /// Counts known to be equal at run time: the same static size, or the
  /// same fraction of the same argument dim. Sibling loops have no data
  /// edge between them that would make their counts equal otherwise (the
  /// encoder's and the decoder's tokens share a bound, not a count).
  static bool surelyEqual(const std::optional<Count> &a, const std::optional<Count> &b) {
    return a && b && a->argument == b->argument && a->axis == b->axis &&
           a->num * b->den == b->num * a->den;
  }

  void newGroup(Operation *op, OpClass c) {
    Group g;
    g.ops.push_back(op);
    if (c == OpClass::Elementwise) {
      g.kind = ls2::FusionKind::Loop;
      g.outer = numel(op->getResult(0));
      g.space = countOf(op->getResult(0));
    } else {
      g.space = countOf(op->getOperand(0));
      g.reduced = countOf(op->getResult(0));
      int64_t in = numel(op->getOperand(0)), out = numel(op->getResult(0));
      if (c == OpClass::RowReduce) {
        g.kind = ls2::FusionKind::RowReduction;
        g.outer = out;
        g.inner = out ? in / out : 0;
      } else {
        g.kind = ls2::FusionKind::ColumnReduction;
        g.inner = out;
        g.outer = out ? in / out : 0;
      }
    }
    if (auto it = pos.find(op); it != pos.end())
      g.minPos = g.maxPos = it->second; // spans nothing yet: [p, p)
    groupOf[op] = static_cast<int>(groups.size());
    groups.push_back(std::move(g));
  }

  /// The op that computes `w`, looking through views; null for arguments,
  /// clonable values and ls2.dim sizes.
  Operation *producer(Value w) {
    Operation *def = definingOpThroughViews(w);
    if (!def || clonable.contains(def) || cls[def] == OpClass::Meta)
      return nullptr;
    return def;
  }

  void refuse(Operation *p, Operation *c, const std::string &why) {
    if (report)
      refusals.push_back({p, c, opName(p) + " -> " + opName(c) + ": " + why});
  }

  static const char *kindName(ls2::FusionKind k) {
    switch (k) {
    case ls2::FusionKind::Loop:
      return "loop";
    case ls2::FusionKind::RowReduction:
      return "row reduction";
    case ls2::FusionKind::ColumnReduction:
      return "column reduction";
    }
    return "?";
  }

  /// The merged iteration space of a producer group `a` and a consumer
  /// group `b`, or the reason they cannot share a kernel.
  std::optional<Group> combine(const Group &a, const Group &b, Operation *p,
                               std::string &why, Operation *c = nullptr,
                               Value edge = Value()) {
    using K = ls2::FusionKind;
    Group m;
    auto loopFits = [](const Group &loop, const Group &red, bool epilogue) {
      return (loop.outer == red.outer * red.inner && mayEqual(loop.space, red.space)) ||
             (epilogue && loop.outer == red.outer && mayEqual(loop.space, red.reduced));
    };
    if (p && a.kind == K::ColumnReduction && cls[p] == OpClass::ColReduce) {
      why = "a column reduction's result is complete only when its kernel ends";
      return std::nullopt;
    }
    if (a.kind == K::Loop && b.kind == K::Loop) {
      // A single value (a learning rate, a clipping coefficient) costs
      // nothing to compute in every thread of the loop that reads it.
      if (a.outer == 1) {
        m = b;
        return m;
      }
      // A concat reads each element of each operand once: the loop over its
      // output computes the producers of its operands too.
      if (c && isa<ls2::ConcatOp>(c) && edge && a.outer == numel(edge) &&
          b.outer >= a.outer) {
        m = b;
        return m;
      }
      // Per-row statistics recomputed for the backward (a row's mean and
      // rstd from its sums) cost a few operations: the loop over the rows'
      // elements recomputes them where it reads them.
      if (a.outer > 0 && b.outer % a.outer == 0 &&
          llvm::all_of(a.ops, [&](Operation *op) { return recomputed.contains(op); })) {
        m = b;
        return m;
      }
      if (a.outer != b.outer) {
        why = "loops over " + std::to_string(a.outer) + " and " +
              std::to_string(b.outer) + " elements";
        return std::nullopt;
      }
      if (!mayEqual(a.space, b.space)) {
        why = "loops over " + std::to_string(a.outer) +
              " elements at the bounds, but counts of different sizes";
        return std::nullopt;
      }
      m = a;
      return m;
    }
    if ((a.kind == K::RowReduction && b.kind == K::ColumnReduction) ||
        (a.kind == K::ColumnReduction && b.kind == K::RowReduction)) {
      why = "a kernel reduces either rows or columns, not both";
      return std::nullopt;
    }
    const Group &red = a.kind == K::Loop ? b : a;
    const Group &other = a.kind == K::Loop ? a : b;
    if (other.kind == K::Loop) {
      // A row group takes a prologue on its rows and an epilogue on its rows
      // or per-row values; a column group a prologue and sibling per-element
      // outputs over its [N, H].
      bool epilogue = red.kind == K::RowReduction;
      if (!loopFits(other, red, epilogue)) {
        why = std::string("a loop over ") + std::to_string(other.outer) +
              " elements does not match the " + kindName(red.kind) + " over [" +
              std::to_string(red.outer) + ", " + std::to_string(red.inner) + "]" +
              (other.outer == red.outer * red.inner || (epilogue && other.outer == red.outer)
                   ? " (equal at the bounds, different sizes at run time)"
                   : "");
        return std::nullopt;
      }
      m = red;
      return m;
    }
    if (a.outer != b.outer || a.inner != b.inner || !mayEqual(a.space, b.space)) {
      why = std::string("two ") + kindName(a.kind) + "s over [" +
            std::to_string(a.outer) + ", " + std::to_string(a.inner) +
            "] and [" + std::to_string(b.outer) + ", " +
            std::to_string(b.inner) + "]";
      return std::nullopt;
    }
    if (a.kind == K::ColumnReduction && !sameColumnShapes(a, b)) {
      why = "column sums of operands of different shapes";
      return std::nullopt;
    }
    m = a;
    return m;
  }

  /// True when an op outside groups `a` and `b` lies on a path from `a` to
  /// `b`: fusing them would make the program cyclic. (No pruning by program
  /// position: a group that holds early and late ops depends on the inputs
  /// of all of them.)
  bool pathOutside(int a, int b) {
    auto groupOfOp = [&](Operation *op) {
      auto it = groupOf.find(op);
      return it == groupOf.end() ? -1 : it->second;
    };
    // Users follow their producers in program order, so past b's last op
    // nothing leads back into b, unless through a group with ops on both
    // sides of it (a kernel that runs when its last input is ready): with
    // none, the search stops there; with one, it searches everything.
    const int last = groups[b].maxPos;
    // Groups other than a and b whose ops lie on both sides of `last`
    // (minPos <= last < maxPos; b ends at last, so it is never one).
    bool straddled = false;
    if (last >= 0) {
      const Group &ga = groups[a];
      straddled = straddling.at(last) - (ga.minPos <= last && ga.maxPos > last ? 1 : 0) > 0;
    }
    if (++searchEpoch == 0) { // wrapped: marks of 2^32 searches ago would match
      std::fill(seenEpoch.begin(), seenEpoch.end(), 0);
      std::fill(expandedEpoch.begin(), expandedEpoch.end(), 0);
      searchEpoch = 1;
    }
    seenEpoch.resize(order.size(), 0);
    // A group's users are pushed once, at the first of its ops reached.
    expandedEpoch.resize(groups.size(), 0);
    std::vector<Operation *> stack;
    auto visit = [&](Operation *u) {
      auto it = pos.find(u);
      if (it == pos.end() || seenEpoch[it->second] == searchEpoch ||
          (!straddled && it->second > last))
        return;
      seenEpoch[it->second] = searchEpoch;
      stack.push_back(u);
    };
    auto pushUsers = [&](Operation *op) {
      for (Value r : op->getResults())
        for (Operation *u : r.getUsers())
          visit(u);
    };
    // Start outside both groups: a's direct edges into b (through views,
    // which launch nothing) are what fuses.
    std::function<void(Value)> startFrom = [&](Value r) {
      for (Operation *u : r.getUsers()) {
        if (isView(u)) {
          startFrom(u->getResult(0));
          continue;
        }
        int g = groupOfOp(u);
        if (g != a && g != b)
          visit(u);
      }
    };
    for (Operation *op : groups[a].ops)
      for (Value r : op->getResults())
        startFrom(r);
    while (!stack.empty()) {
      Operation *op = stack.back();
      stack.pop_back();
      int g = groupOfOp(op);
      if (g == b)
        return true;
      if (g == a)
        continue;
      // Any other op (another group, opaque, view): follow its results, and
      // for a group everything it will compute.
      pushUsers(op);
      if (g >= 0 && expandedEpoch[g] != searchEpoch) {
        expandedEpoch[g] = searchEpoch;
        for (Operation *member : groups[g].ops)
          pushUsers(member);
      }
    }
    return false;
  }

  bool mixesPasses(int a, int b) {
    bool fwd = false, bwd = false;
    for (int g : {a, b})
      for (Operation *op : groups[g].ops)
        (backward.contains(op) ? bwd : fwd) = true;
    return fwd && bwd;
  }

  /// A value recomputed for the backward that a backward row reduction
  /// reads (through elementwise ops): a layer norm's normalized row and
  /// rstd, which its backward reduces per row. Fused into the forward
  /// kernel they would be stored until then, which is what recomputing
  /// avoids. (A softmax recomputed for cross-entropy's gradient feeds no row
  /// reduction: forward and backward stay one pass over the logits.)
  bool feedsBackwardRowReduction(Operation *op) {
    if (auto it = rowFed.find(op); it != rowFed.end())
      return it->second;
    rowFed[op] = false; // no cycles in a block; a guard all the same
    bool result = false;
    for (Operation *user : op->getUsers()) {
      if (!backward.contains(user))
        continue;
      if (isa<ls2::ReduceSumOp, ls2::ReduceMaxOp>(user)) {
        ArrayRef<int64_t> axes = isa<ls2::ReduceSumOp>(user)
                                     ? cast<ls2::ReduceSumOp>(user).getAxes()
                                     : cast<ls2::ReduceMaxOp>(user).getAxes();
        result |= !axes.empty() && axes.front() != 0;
      } else if (cls.lookup(user) == OpClass::Elementwise ||
                 cls.lookup(user) == OpClass::Clonable) {
        result |= feedsBackwardRowReduction(user);
      }
      if (result)
        break;
    }
    return rowFed[op] = result;
  }

  /// One group holds forward ops and the other such recomputed values; or
  /// one holds forward ops (and recomputed ones) only and the other a
  /// broadcast recomputed for the backward (an RMSNorm's rstd over
  /// [T, H]): that forward kernel would store the broadcast, in f32, where
  /// the backward's own kernels broadcast the [T] statistic as they read
  /// it. (A cross entropy's kernel computes its gradient too, and keeps its
  /// broadcasts inside.)
  bool pullsRecomputedForward(int a, int b) {
    auto has = [&](int g, auto pred) {
      return llvm::any_of(groups[g].ops, pred);
    };
    auto isForward = [&](Operation *op) { return !backward.contains(op); };
    auto isKeptOut = [&](Operation *op) {
      return recomputed.contains(op) && feedsBackwardRowReduction(op);
    };
    auto isRecomputedBroadcast = [&](Operation *op) {
      return recomputed.contains(op) && isa<ls2::BroadcastOp>(op);
    };
    // Forward ops, and recomputed ones (row statistics) but no gradient.
    auto forwardOnly = [&](int g) {
      return has(g, isForward) && llvm::all_of(groups[g].ops, [&](Operation *op) {
               return isForward(op) || recomputed.contains(op);
             });
    };
    // A gradients' copy (copyBroadcastsForGradients) joins only a kernel
    // that reads it, never its producer's or a sibling (a forward layer
    // norm that also computes the backward's rstd^3 would store it); the
    // original stays out of forward kernels as the gradients' reads kept it.
    auto copiesOnly = [&](int g) {
      return llvm::all_of(groups[g].ops,
                          [&](Operation *op) { return gradientCopies.contains(op); });
    };
    auto isCopied = [&](Operation *op) { return copiedBroadcasts.contains(op); };
    return (has(a, isForward) && has(b, isKeptOut)) ||
           (has(b, isForward) && has(a, isKeptOut)) ||
           (has(a, isForward) && has(b, isCopied)) ||
           (has(b, isForward) && has(a, isCopied)) ||
           (forwardOnly(a) && has(b, isRecomputedBroadcast)) ||
           (forwardOnly(b) && has(a, isRecomputedBroadcast)) ||
           (copiesOnly(a) && !readsFrom(b, a)) || (copiesOnly(b) && !readsFrom(a, b));
  }

  bool createsCycle(int a, int b) { return pathOutside(a, b) || pathOutside(b, a); }

  /// Moves group `from`'s ops into group `into`, which now also saves
  /// `bytes` more.
  void absorb(int into, int from, int64_t bytes) {
    groups[into].savedBytes += groups[from].savedBytes + bytes;
    for (int g : {into, from})
      straddling.add(groups[g].minPos, groups[g].maxPos, -1);
    groups[into].minPos = std::min(groups[into].minPos, groups[from].minPos);
    groups[into].maxPos = std::max(groups[into].maxPos, groups[from].maxPos);
    straddling.add(groups[into].minPos, groups[into].maxPos, +1);
    for (Operation *op : groups[from].ops) {
      groupOf[op] = into;
      groups[into].ops.push_back(op);
    }
    groups[from].ops.clear();
    groups[from].alive = false;
  }

  void tryMerge(int a, int b, Operation *p, Operation *c, Value edge) {
    if (a == b)
      return;
    std::string why;
    std::optional<Group> m = combine(groups[a], groups[b], p, why, c, edge);
    if (!m) {
      refuse(p, c, why);
      return;
    }
    if (rematerialize && m->kind == ls2::FusionKind::Loop && mixesPasses(a, b)) {
      refuse(p, c, "a loop would compute backward values during the forward "
                   "pass and store them until the backward; they are "
                   "recomputed there from what is saved instead");
      return;
    }
    if (rematerialize && pullsRecomputedForward(a, b)) {
      refuse(p, c, "values recomputed for the backward would be computed by a "
                   "forward kernel and stored until the backward");
      return;
    }
    if (createsCycle(a, b)) {
      refuse(p, c, "another kernel on a path between them would have to run inside the fused kernel");
      return;
    }
    Group &into = groups[a];
    into.kind = m->kind;
    into.outer = m->outer;
    into.inner = m->inner;
    into.space = m->space;
    into.reduced = m->reduced;
    // Bytes no longer read back (and, once every reader is inside, written).
    absorb(a, b, bounds.bytes(edge));
  }

  /// True when the column sums of groups `a` and `b` reduce operands of
  /// one shape, as a column kernel needs: a ViT of one patch sums its class
  /// token's gradient [B, 1, H] and its patch bias's [B, H], equal in count
  /// only. Without symbolic dims, only the element counts are known.
  bool sameColumnShapes(const Group &a, const Group &b) {
    if (!dims)
      return true;
    std::optional<ArrayRef<runtime::Dim>> first;
    for (const Group *g : {&a, &b})
      for (Operation *op : g->ops) {
        if (cls[op] != OpClass::ColReduce)
          continue;
        ArrayRef<runtime::Dim> shape = dims->shape(op->getOperand(0));
        if (!first)
          first = shape;
        else if (!sameDims(*first, shape))
          return false;
      }
    return true;
  }

  /// dgamma and dbeta (and a bias gradient) read the same [N, H] rows:
  /// one kernel computes all of them.
  void mergeColumnSiblings() {
    std::map<std::pair<void *, int64_t>, int> firstReader;
    for (Operation *op : order) {
      if (!groupOf.count(op) || cls[op] == OpClass::Meta)
        continue;
      for (Value w : op->getOperands()) {
        if (!isa<RankedTensorType>(w.getType()) || numel(w) <= 1)
          continue;
        int g = groupOf[op];
        if (groups[g].kind != ls2::FusionKind::ColumnReduction)
          continue;
        auto key = std::make_pair(w.getAsOpaquePointer(), int64_t(0));
        auto [it, inserted] = firstReader.insert({key, g});
        if (inserted || it->second == g || !groups[it->second].alive)
          continue;
        int other = it->second;
        std::string why;
        if (!combine(groups[other], groups[g], /*p=*/nullptr, why) ||
            createsCycle(other, g)) {
          refuse(op, op, "sibling column reductions not fused: " +
                             (why.empty() ? std::string("a path between them") : why));
          continue;
        }
        absorb(other, g, bounds.bytes(w));
      }
    }
  }

  /// Loops over the same elements that read one operand and run close
  /// together (an optimizer's parameter, first- and second-moment updates,
  /// each reading the gradient and the moments) share one kernel with an
  /// output each: the operands are read once (H200, GPT-2 medium's AdamW
  /// step as three kernels: 4.5 ms). Closeness (kNeighbourOps ops apart, as
  /// for column neighbours) keeps the merge from moving a loop far from its
  /// consumers and stretching what it writes or reads.
  void mergeLoopSiblings() {
    std::map<void *, int> firstReader;
    for (Operation *op : order) {
      auto found = groupOf.find(op);
      if (found == groupOf.end() || cls[op] == OpClass::Meta)
        continue;
      int g = found->second;
      if (!groups[g].alive || groups[g].kind != ls2::FusionKind::Loop || groups[g].outer <= 1)
        continue;
      for (Value w : op->getOperands()) {
        if (!isa<RankedTensorType>(w.getType()) || numel(w) <= 1)
          continue;
        auto [it, inserted] = firstReader.insert({w.getAsOpaquePointer(), g});
        if (inserted || it->second == g)
          continue;
        int other = it->second;
        const Group &a = groups[other], &b = groups[g];
        bool close = std::max(a.minPos, b.minPos) - std::min(a.maxPos, b.maxPos) <= kNeighbourOps;
        if (!a.alive || a.kind != ls2::FusionKind::Loop || a.outer != b.outer ||
            !surelyEqual(a.space, b.space) || !close || readsFrom(g, other) ||
            readsFrom(other, g) || (rematerialize && (mixesPasses(other, g) ||
                                                      pullsRecomputedForward(other, g))) ||
            createsCycle(other, g)) {
          it->second = g;
          continue;
        }
        absorb(other, g, bounds.bytes(w));
        break; // g is gone; its other operands are other's now
      }
    }
  }

  /// A lone row sum of a weight-gradient GEMM's `a`: it becomes that GEMM's
  /// bias-gradient epilogue (attachEpilogues), so it stays out of other
  /// column groups; mergeColumnSumsIntoRows still takes it into the row
  /// reduction that computes its operand.
  bool isBiasGradCandidate(const Group &g) {
    if (g.ops.size() != 1)
      return false;
    auto sum = dyn_cast<ls2::ReduceSumOp>(g.ops.front());
    if (!sum || sum.getAxes().size() != 1 || sum.getAxes()[0] != 0)
      return false;
    return llvm::any_of(sum.getInput().getUsers(), [&](Operation *u) {
      auto m = dyn_cast<ls2::MatmulOp>(u);
      return m && m.getA() == sum.getInput() && m.getTransposeA();
    });
  }

  /// True when a member of group `g` reads a value group `h` computes
  /// (directly or through views).
  bool readsFrom(int g, int h) {
    for (Operation *op : groups[g].ops)
      for (Value v : op->getOperands()) {
        Operation *def = definingOpThroughViews(v);
        auto it = def ? groupOf.find(def) : groupOf.end();
        if (it != groupOf.end() && it->second == h)
          return true;
      }
    return false;
  }

  /// Column reductions over the same [N, H] that the program computes
  /// close together (a layer norm's dgamma and dbeta, read from different
  /// tensors) share one kernel with an accumulator each, when no other
  /// kernel lies between them. Closeness (kNeighbourOps ops apart) keeps
  /// the merge from delaying a reduction and stretching its inputs' lives.
  static constexpr int kNeighbourOps = 24;
  /// What identifies the rows a column group reduces beyond their bound:
  /// their symbolic dim (static size, or argument dim x ratio), or the
  /// group itself when that is unknown (so it merges with none). Encoder
  /// and decoder tokens share a bound but are different rows.
  using RowsKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>;
  RowsKey rowsIdentity(int g) {
    for (Operation *op : groups[g].ops)
      if (cls[op] == OpClass::ColReduce && dims) {
        const runtime::Dim &d = dims->shape(op->getOperand(0))[0];
        return {d.isStatic() ? d.size : -1, d.argument, d.axis, d.multiplier, d.divisor};
      }
    return {-2 - g, -1, 0, 0, 0};
  }

  void mergeColumnNeighbours() {
    std::map<std::tuple<int64_t, int64_t, RowsKey>, int> open;
    for (Operation *op : order) {
      auto it = groupOf.find(op);
      if (it == groupOf.end())
        continue;
      int g = it->second;
      Group &group = groups[g];
      if (!group.alive || group.kind != ls2::FusionKind::ColumnReduction ||
          group.ops.front() != op || isBiasGradCandidate(group))
        continue;
      auto key = std::make_tuple(group.outer, group.inner, rowsIdentity(g));
      auto [slot, inserted] = open.insert({key, g});
      if (inserted || slot->second == g)
        continue;
      int other = slot->second;
      int otherEnd = 0;
      for (Operation *m : groups[other].ops)
        otherEnd = std::max(otherEnd, pos[m]);
      if (!groups[other].alive || pos[op] - otherEnd > kNeighbourOps ||
          !sameColumnShapes(groups[other], group) || readsFrom(g, other) ||
          readsFrom(other, g) || createsCycle(other, g)) {
        slot->second = g;
        continue;
      }
      absorb(other, g, 0);
    }
  }

  /// Rows this long at most take column sums (the row kernel's accumulators
  /// are registers, 32 per thread at most: RowReductionKernel.cpp).
  static constexpr int64_t kMaxColumnSumWidth = 8192;

  /// A column group of sums over the rows of values one row-reduction group
  /// computes (a layer norm's dgamma and dbeta from its backward's dy * xhat
  /// and dy) joins that group: its kernel adds each row into per-thread
  /// column sums, so the [N, H] f32 operands are never written (BERT-base:
  /// two 50 MB arrays written and read back per layer norm).
  void mergeColumnSumsIntoRows() {
    if (!dims)
      return;
    for (size_t c = 0; c < groups.size(); ++c) {
      Group &col = groups[c];
      // A bias gradient too: cuBLASLt's BGRADB epilogue slows the weight
      // gradient more than the sum costs in the row kernel (H200, BERT-base
      // fp16, 768 x 3072 x 16384: 106 us plain, 175 us with BGRADB).
      if (!col.alive || col.kind != ls2::FusionKind::ColumnReduction || col.ops.empty())
        continue;
      // Sums over the leading (row) dims only, [R, H...] -> [H...], of values
      // one row group computes or reads (dbeta sums the dy it reads).
      int row = -1;
      bool ok = col.inner <= kMaxColumnSumWidth;
      SmallVector<Value> external;
      for (Operation *op : col.ops) {
        auto sum = dyn_cast<ls2::ReduceSumOp>(op);
        ok &= sum && sum.reducesLeadingDims() && cls[op] == OpClass::ColReduce;
        if (!ok)
          break;
        Operation *def = definingOpThroughViews(sum.getInput());
        auto it = def ? groupOf.find(def) : groupOf.end();
        if (it == groupOf.end() || groups[it->second].kind != ls2::FusionKind::RowReduction) {
          external.push_back(sum.getInput());
          continue;
        }
        ok &= groups[it->second].alive && (row < 0 || row == it->second);
        if (!ok)
          break;
        row = it->second;
      }
      if (!ok || row < 0)
        continue;
      for (Value v : external)
        ok &= llvm::any_of(groups[row].ops, [&](Operation *m) {
          return llvm::any_of(m->getOperands(), [&](Value o) { return o == v; });
        });
      if (!ok)
        continue;
      Group &rows = groups[row];
      // The same rows: the group's row reductions reduce [R, H] values of the
      // sums' operands' dims.
      auto sameRows = [&]() {
        for (Operation *m : rows.ops) {
          if (cls[m] != OpClass::RowReduce)
            continue;
          for (Operation *op : col.ops)
            if (!sameDims(dims->shape(m->getOperand(0)), dims->shape(op->getOperand(0))))
              return false;
          return true;
        }
        return false;
      };
      if (rows.outer != col.outer || rows.inner != col.inner || !sameRows()) {
        refuse(col.ops.front(), col.ops.front(),
               "column sums not fused into the row reduction computing their operands: "
               "other rows");
        continue;
      }
      if (createsCycle(row, static_cast<int>(c))) {
        refuse(col.ops.front(), col.ops.front(),
               "column sums not fused into the row reduction computing their operands: "
               "a kernel between them");
        continue;
      }
      int64_t bytes = 0;
      for (Operation *op : col.ops)
        bytes += bounds.bytes(op->getOperand(0));
      absorb(row, static_cast<int>(c), bytes);
    }
  }

  bool canInternalize(Value v, const llvm::DenseSet<Operation *> &members) {
    Operation *def = v.getDefiningOp();
    if (!def)
      return false;
    if (members.contains(def) || clonable.contains(def))
      return true;
    return isView(def) && canInternalize(def->getOperand(0), members);
  }

  bool hasExternalUse(Value v, const llvm::DenseSet<Operation *> &members) {
    for (Operation *u : v.getUsers()) {
      if (members.contains(u))
        continue;
      if (isView(u) && !hasExternalUse(u->getResult(0), members))
        continue;
      return true;
    }
    return false;
  }

  static std::string labelOf(ls2::FusionOp f) {
    bool gather = false, rows = false, rsqrt = false, row = false, col = false, rmax = false,
         exp = false, log = false, gelu = false, dropout = false;
    f.getBody().walk([&](Operation *op) {
      // A table with a static row count is an embedding; a dynamic one is
      // rows of an activation (the masked-LM head's labelled tokens).
      if (auto g = dyn_cast<ls2::GatherOp>(op))
        (cast<RankedTensorType>(g.getTable().getType()).isDynamicDim(0) ? rows : gather) = true;
      rsqrt |= isa<ls2::RsqrtOp>(op);
      rmax |= isa<ls2::ReduceMaxOp>(op);
      exp |= isa<ls2::ExpOp>(op);
      log |= isa<ls2::LogOp>(op);
      gelu |= isa<ls2::ErfOp, ls2::TanhOp>(op);
      dropout |= isa<ls2::RandomUniformOp>(op);
    });
    row = f.getKind() == ls2::FusionKind::RowReduction;
    col = f.getKind() == ls2::FusionKind::ColumnReduction;
    std::string s;
    auto add = [&](const char *l) { s += (s.empty() ? "" : "_") + std::string(l); };
    if (gather)
      add("embedding");
    if (rows)
      add("gather");
    if (gelu)
      add("gelu");
    if (row && rsqrt)
      add("layer_norm");
    if (row && rmax && exp && log)
      add("cross_entropy");
    else if (row && rmax && exp)
      add("softmax");
    if (dropout)
      add("dropout");
    if (col)
      add("column_sum");
    if (s.empty())
      add(row ? "row_reduction" : "loop");
    return s;
  }

  ls2::FusionOp materialize(ArrayRef<Operation *> unsortedMembers, ls2::FusionKind kind,
                            int64_t savedBytes, int index) {
    SmallVector<Operation *> members(unsortedMembers);
    llvm::sort(members, [&](Operation *x, Operation *y) { return pos[x] < pos[y]; });
    llvm::DenseSet<Operation *> memberSet(members.begin(), members.end());
    Operation *last = members.back();
    OpBuilder outer(last);
    Location loc = members.front()->getLoc();
    auto fusion = outer.create<ls2::FusionOp>(loc, TypeRange{}, "pending",
                                              kind, ValueRange{});
    Block *body = new Block();
    fusion.getBody().push_back(body);
    OpBuilder b = OpBuilder::atBlockEnd(body);
    IRMapping map;
    SmallVector<Value> inputs;
    std::function<Value(Value)> internalize = [&](Value w) -> Value {
      if (Value m = map.lookupOrNull(w))
        return m;
      Operation *def = w.getDefiningOp();
      if (def && !memberSet.contains(def) && canInternalize(w, memberSet)) {
        for (Value o : def->getOperands())
          internalize(o);
        b.clone(*def, map);
        return map.lookup(w);
      }
      Value arg = body->addArgument(w.getType(), w.getLoc());
      inputs.push_back(w);
      map.map(w, arg);
      return arg;
    };
    for (Operation *op : members) {
      for (Value o : op->getOperands())
        internalize(o);
      b.clone(*op, map);
    }
    SmallVector<Value> outputs, yielded;
    for (Operation *op : members)
      for (Value r : op->getResults())
        if (hasExternalUse(r, memberSet)) {
          outputs.push_back(r);
          yielded.push_back(map.lookup(r));
        }
    b.create<ls2::YieldOp>(loc, yielded);
    // Rebuild with the real operand and result lists, at the first member's
    // place or right after the last input defined later. At the last
    // member's place, a kernel holding a forward op and a backward one (a
    // layer norm with its rstd^3) would sit in the backward, and schedule()
    // would run every op not waiting on it (recomputed broadcasts of all
    // layers) before the forward, storing them across it.
    Operation *first = members.front(), *lastInput = nullptr;
    for (Value in : inputs)
      if (Operation *def = in.getDefiningOp();
          def && def->getBlock() == first->getBlock() && first->isBeforeInBlock(def) &&
          (!lastInput || lastInput->isBeforeInBlock(def)))
        lastInput = def;
    if (lastInput)
      outer.setInsertionPointAfter(lastInput);
    else
      outer.setInsertionPoint(first);
    auto real = outer.create<ls2::FusionOp>(loc, ValueRange(yielded).getTypes(),
                                            "pending", kind, inputs);
    real.getBody().takeBody(fusion.getBody());
    fusion.erase();
    for (auto [r, n] : llvm::zip(outputs, real.getResults()))
      r.replaceUsesWithIf(n, [&](OpOperand &u) {
        return !memberSet.contains(u.getOwner());
      });
    // The originals go: first their operand uses, then the top-level views
    // only they read (now cloned inside), then the ops themselves.
    for (Operation *op : members)
      op->dropAllReferences();
    std::function<void(Value)> eraseDeadViews = [&](Value v) {
      for (Operation *u : llvm::make_early_inc_range(v.getUsers()))
        if (!memberSet.contains(u) && isView(u)) {
          eraseDeadViews(u->getResult(0));
          if (u->use_empty())
            u->erase();
        }
    };
    for (Operation *op : members)
      for (Value r : op->getResults())
        eraseDeadViews(r);
    for (Operation *op : llvm::reverse(members))
      op->erase();
    std::string name = labelOf(real) + "_" + std::to_string(index);
    real.setGroupName(name);
    real->setAttr("ls2.bytes_saved",
                  IntegerAttr::get(IntegerType::get(real.getContext(), 64), savedBytes));
    return real;
  }

  /// Whether an op outside group `g` (or the return) reads `v`, directly or
  /// through views.
  bool readOutsideGroup(Value v, int g) {
    for (Operation *u : v.getUsers()) {
      if (isView(u)) {
        if (readOutsideGroup(u->getResult(0), g))
          return true;
        continue;
      }
      auto it = groupOf.find(u);
      if (it == groupOf.end() || it->second != g)
        return true;
    }
    return false;
  }

  /// A loop kernel writes values of one element count (LoopKernel.cpp). A
  /// loop that recomputes a smaller one inside (a rotary cos/sin table over
  /// [T, D/2] in the loop over [T, heads, D/2]) cannot also write that
  /// smaller value for another kernel: the ops computing such a value move
  /// to a loop of their own. What the larger loop also reads of them it
  /// keeps computing from its own copies (keepCopies), so the new loop
  /// writes only what other kernels read. Repeated until every loop writes
  /// one count (each round moves ops out).
  void splitMixedLoops() {
    for (bool changed = true; changed;) {
      changed = false;
      const int count = static_cast<int>(groups.size());
      for (int gi = 0; gi < count; ++gi) {
        if (!groups[gi].alive || groups[gi].kind != ls2::FusionKind::Loop ||
            groups[gi].ops.empty())
          continue;
        const int64_t outer = groups[gi].outer;
        // The values of the first other count read outside, and what they
        // are computed from within the group.
        llvm::SetVector<Operation *> moved;
        std::function<void(Operation *)> pull = [&](Operation *op) {
          if (!moved.insert(op))
            return;
          for (Value o : op->getOperands())
            if (Operation *d = definingOpThroughViews(o);
                d && groupOf.count(d) && groupOf[d] == gi)
              pull(d);
        };
        Value root;
        for (Operation *op : groups[gi].ops)
          for (Value r : op->getResults())
            if (isa<RankedTensorType>(r.getType()) && numel(r) != outer &&
                (!root || numel(r) == numel(root)) && readOutsideGroup(r, gi)) {
              root = r;
              pull(op);
            }
        if (moved.empty() || moved.size() == groups[gi].ops.size())
          continue;
        Group split;
        split.kind = ls2::FusionKind::Loop;
        split.outer = numel(root);
        split.space = countOf(root);
        split.minPos = split.maxPos = pos[moved.front()];
        for (Operation *op : moved) {
          split.ops.push_back(op);
          split.minPos = std::min(split.minPos, pos[op]);
          split.maxPos = std::max(split.maxPos, pos[op]);
          groupOf[op] = static_cast<int>(groups.size());
        }
        llvm::erase_if(groups[gi].ops, [&](Operation *op) { return moved.contains(op); });
        keepCopies(gi, moved);
        groups.push_back(std::move(split));
        changed = true;
      }
    }
  }

  /// Copies into group `gi` of the moved ops its members read (directly,
  /// and what those are computed from among the moved ops), its members
  /// reading the copies: otherwise the split loop would write each such
  /// value for the larger loop to read back. A checkpointed SwiGLU's
  /// gradient loop over [T, 2F] (the concat of the gate's and the up
  /// projection's gradients) read exp(-gate), 1 + exp and silu in f32 and
  /// two bf16 values, [T, F] each, from the loop recomputing h = silu(gate)
  /// up for the down projection's weight gradient. Not what the larger loop
  /// broadcasts: it would compute it once per element of the broadcast (a
  /// rotary cos/sin table over [T, D/2] once per head), not read it once.
  void keepCopies(int gi, const llvm::SetVector<Operation *> &moved) {
    llvm::DenseSet<Operation *> group(groups[gi].ops.begin(), groups[gi].ops.end());
    llvm::DenseSet<Operation *> broadcastInput; // members a broadcast in gi reads
    std::function<void(Operation *)> feedsBroadcast = [&](Operation *op) {
      for (Value o : op->getOperands())
        if (Operation *d = o.getDefiningOp();
            d && group.contains(d) && broadcastInput.insert(d).second)
          feedsBroadcast(d);
    };
    for (Operation *op : groups[gi].ops)
      if (isa<ls2::BroadcastOp>(op))
        feedsBroadcast(op);
    llvm::SetVector<Operation *> needed;
    std::function<void(Operation *)> need = [&](Operation *op) {
      if (!op || !moved.contains(op) || !needed.insert(op))
        return;
      for (Value o : op->getOperands())
        need(o.getDefiningOp());
    };
    for (Operation *op : groups[gi].ops)
      if (!isa<ls2::BroadcastOp>(op) && !broadcastInput.contains(op))
        for (Value o : op->getOperands())
          need(o.getDefiningOp());
    if (needed.empty())
      return;
    SmallVector<Operation *> ordered(needed.begin(), needed.end());
    llvm::sort(ordered, [&](Operation *x, Operation *y) { return pos[x] < pos[y]; });
    IRMapping copies;
    SmallVector<Operation *> members(groups[gi].ops);
    for (Operation *op : ordered) {
      OpBuilder b(op->getBlock(), std::next(op->getIterator()));
      Operation *copy = b.clone(*op, copies);
      for (auto [result, copied] : llvm::zip(op->getResults(), copy->getResults()))
        boundsStorage.copyBound(result, copied);
      pos[copy] = pos[op];
      cls[copy] = cls[op];
      groupOf[copy] = gi;
      groups[gi].ops.push_back(copy);
    }
    for (Operation *op : members)
      for (OpOperand &use : op->getOpOperands())
        if (Value c = copies.lookupOrNull(use.get()))
          use.set(c);
  }

  void materializeAll() {
    int index = 0;
    SmallVector<ls2::FusionOp> made;
    for (Group &g : groups)
      if (g.alive && !g.ops.empty())
        made.push_back(materialize(g.ops, g.kind, g.savedBytes, index++));
    // Clonable values read by an opaque op or returned still need a kernel.
    Block &block = func.getBody().front();
    bool changed = true;
    while (changed) {
      changed = false;
      for (Operation &op : llvm::make_early_inc_range(block)) {
        if (!clonable.contains(&op) || isa<ls2::ConstantOp>(op))
          continue;
        if (op.use_empty()) {
          clonable.erase(&op); // its address may be reused by a new op
          op.erase();
          changed = true;
          continue;
        }
      }
    }
    // Only the clonable values such an op reads (the roots) are written to
    // memory, by one loop per element count; what they are computed from is
    // cloned into that loop.
    std::function<bool(Value)> readOutside = [&](Value v) {
      for (Operation *u : v.getUsers()) {
        if (isView(u) ? readOutside(u->getResult(0)) : !clonable.contains(u))
          return true;
      }
      return false;
    };
    std::map<int64_t, SmallVector<Operation *>> roots;
    // A constant counts too: one returned as it is (a constant schedule's
    // learning rate) has no other kernel to write it.
    for (Operation &op : block)
      if (clonable.contains(&op) && llvm::any_of(op.getResults(), readOutside))
        roots[numel(op.getResult(0))].push_back(&op);
    for (auto &[elements, ops] : roots) {
      for (Operation *op : ops)
        clonable.erase(op); // materialize erases it; its address may be reused
      made.push_back(materialize(ops, ls2::FusionKind::Loop, 0, index++));
    }
    EpilogueReport epilogues;
    if (attachGemmEpilogues)
      attachEpilogues(made, report ? &epilogues : nullptr, geluGradEpilogue, &recomputedGemms);
    // Dead views and sizes left behind.
    for (changed = true; changed;) {
      changed = false;
      for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
        if (op.use_empty() && (isView(&op) || clonable.contains(&op) ||
                               isa<ls2::DimOp, ls2::ConstantOp>(op))) {
          clonable.erase(&op);
          op.erase();
          changed = true;
        }
    }
    schedule();
    if (report) {
      // One write per function: functions fuse in parallel, and their
      // reports must not interleave line by line.
      std::string text;
      llvm::raw_string_ostream out(text);
      out << "fusion of @" << func.getSymName() << ": " << made.size()
                   << " groups\n";
      for (ls2::FusionOp f : made) {
        std::map<std::string, int> histogram;
        f.getBody().walk([&](Operation *op) {
          if (!isa<ls2::YieldOp>(op))
            histogram[op->getName().stripDialect().str()]++;
        });
        out << "  group " << f.getGroupName();
        if (auto scope = dyn_cast<NameLoc>(f.getLoc()))
          out << " [" << scope.getName().getValue() << "]";
        out << " " << ls2::stringifyFusionKind(f.getKind()) << ": "
                     << f.getInputs().size() << " inputs, "
                     << f.getNumResults() << " outputs, saves "
                     << cast<IntegerAttr>(f->getAttr("ls2.bytes_saved")).getInt()
                     << " bytes; ops:";
        for (auto &[n, k] : histogram)
          out << " " << n << "x" << k;
        out << "\n";
      }
      if (rematerialize)
        out << "  rematerialization: " << recomputedOps
                     << " forward ops recomputed in the backward, "
                     << rematerialized
                     << " widening casts recomputed in the backward, "
                     << rematerializedBytes
                     << " bytes fewer saved between the passes\n";
      for (const Refusal &r : refusals) {
        auto gp = groupOf.find(r.producer), gc = groupOf.find(r.consumer);
        if (r.producer != r.consumer && gp != groupOf.end() && gc != groupOf.end() &&
            gp->second == gc->second)
          continue;
        out << "  not fused: " << r.text << "\n";
      }
      for (const std::string &e : epilogues.attached)
        out << "  GEMM epilogue: " << e << "\n";
      for (const std::string &e : epilogues.refused)
        out << "  not a GEMM epilogue: " << e << "\n";
      static std::mutex reportMutex;
      std::lock_guard<std::mutex> lock(reportMutex);
      llvm::outs() << text;
      llvm::outs().flush();
    }
  }

  /// Topological order of the block, each op as early as its original
  /// place allows (fusion ops were created at their last member's place).
  void schedule() {
    Block &block = func.getBody().front();
    Operation *terminator = block.getTerminator();
    std::vector<Operation *> ops;
    DenseMap<Operation *, int> index, pending;
    for (Operation &op : block)
      if (&op != terminator) {
        index[&op] = static_cast<int>(ops.size());
        ops.push_back(&op);
      }
    std::vector<std::vector<int>> users(ops.size());
    for (auto [i, op] : llvm::enumerate(ops)) {
      llvm::SmallSetVector<Operation *, 4> deps;
      for (Value v : op->getOperands())
        if (Operation *d = v.getDefiningOp(); d && index.count(d))
          deps.insert(d);
      pending[op] = static_cast<int>(deps.size());
      for (Operation *d : deps)
        users[index[d]].push_back(static_cast<int>(i));
    }
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
    for (auto [i, op] : llvm::enumerate(ops))
      if (pending[op] == 0)
        ready.push(static_cast<int>(i));
    std::vector<Operation *> sorted;
    while (!ready.empty()) {
      int i = ready.top();
      ready.pop();
      sorted.push_back(ops[i]);
      for (int u : users[i])
        if (--pending[ops[u]] == 0)
          ready.push(u);
    }
    if (sorted.size() != ops.size())
      llvm::report_fatal_error("ls2-fuse made the program cyclic (a fusion "
                               "legality bug)");
    for (Operation *op : sorted)
      op->moveBefore(terminator);
  }
};

struct FusePass : ls2c::impl::FuseBase<FusePass> {
  using FuseBase::FuseBase;
  void runOnOperation() override {
    func::FuncOp f = getOperation();
    if (f.isExternal())
      return;
    auto module = f->getParentOfType<ModuleOp>();
    bool checkpoint = checkpointActivations ||
                      (module && module->hasAttr("ls2.activation_checkpointing"));
    bool attention = recomputeAttention ||
                     (module && module->hasAttr("ls2.recompute_attention"));
    if (failed(Fuser(f, report, rematerialize, geluGradEpilogue, checkpoint, attention,
                     epilogues, reluMaskFromOutput)
                   .run()))
      return signalPassFailure();
  }
};

} // namespace
