//===- Rematerialize.cpp - forward/backward split and recomputation ------===//
#include "Rematerialize.h"

#include "ls2c/Analysis/ProgramStats.h"

#include "ls2/IR/LS2Dialect.h"

#include "mlir/IR/IRMapping.h"

#include <functional>

using namespace mlir;

namespace ls2c::fusion {

namespace {

class Splitter {
public:
  Splitter(func::FuncOp func, bool rematerialize, bool checkpoint, bool recomputeAttention)
      : func(func), rematerialize(rematerialize || checkpoint), checkpoint(checkpoint),
        recomputeAttention(checkpoint && recomputeAttention) {}

  PassSplit run() {
    markBackward(func.getBody().front());
    return std::move(split);
  }

private:
  func::FuncOp func;
  bool rematerialize;
  bool checkpoint; ///< activation checkpointing (Rematerialize.h)
  bool recomputeAttention; ///< ... whose attention results are not kept
  PassSplit split;

  /// In a function that computes a loss and its gradients: the ops that
  /// depend on the backward seed (the `loss_grad` or `loss_scale` argument)
  /// and the ops only they read.
  void markBackward(Block &block) {
    bool hasLoss = false;
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto name = func.getResultAttrOfType<StringAttr>(i, "ls2.name");
      auto kind = func.getResultAttrOfType<StringAttr>(i, "ls2.kind");
      hasLoss |= (name && name.getValue() == "loss") ||
                 (kind && kind.getValue() == "loss");
    }
    if (!hasLoss)
      return;
    llvm::DenseSet<Value> seeds;
    for (BlockArgument a : block.getArguments()) {
      auto name = func.getArgAttrOfType<StringAttr>(a.getArgNumber(), "ls2.name");
      if (name && (name.getValue() == "loss_grad" || name.getValue() == "loss_scale"))
        seeds.insert(a);
    }
    for (Operation &op : block.without_terminator())
      for (Value v : op.getOperands())
        if (seeds.contains(v) ||
            (v.getDefiningOp() && split.backward.contains(v.getDefiningOp()))) {
          split.backward.insert(&op);
          break;
        }
    for (Operation &op : llvm::reverse(block)) {
      if (split.backward.contains(&op) || op.use_empty() ||
          op.hasTrait<OpTrait::IsTerminator>())
        continue;
      if (llvm::all_of(op.getUsers(),
                       [&](Operation *u) { return split.backward.contains(u); }))
        split.backward.insert(&op);
    }
    if (!rematerialize)
      return;
    recomputeWideValues(block);
    // A widening cast read by both passes: the backward gets its own copy,
    // so the forward stores the narrow value (half the bytes) and the
    // backward widens it again.
    for (Operation &op : llvm::make_early_inc_range(block)) {
      auto cast = dyn_cast<ls2::CastOp>(op);
      if (!cast || split.backward.contains(&op))
        continue;
      auto from = cast.getInput().getType().getElementType();
      auto to = cast.getResult().getType().getElementType();
      if (!isa<FloatType>(from) || !isa<FloatType>(to) ||
          from.getIntOrFloatBitWidth() >= to.getIntOrFloatBitWidth())
        continue;
      bool readByBackward = llvm::any_of(
          op.getUsers(), [&](Operation *u) { return split.backward.contains(u); });
      bool readByForward = llvm::any_of(
          op.getUsers(), [&](Operation *u) { return !split.backward.contains(u); });
      if (!readByBackward || !readByForward)
        continue;
      OpBuilder b(op.getBlock(), std::next(op.getIterator()));
      Operation *copy = b.clone(op);
      op.getResult(0).replaceUsesWithIf(copy->getResult(0), [&](OpOperand &u) {
        return split.backward.contains(u.getOwner());
      });
      split.backward.insert(copy);
      ++split.duplicatedCasts;
      split.narrowedCasts.push_back(cast.getResult());
    }
  }

  static bool isCheapForRecompute(Operation *def) {
    return isa<ls2::AddOp, ls2::SubOp, ls2::MulOp, ls2::DivOp, ls2::MaxOp,
               ls2::MinOp, ls2::NegOp, ls2::ExpOp, ls2::ErfOp, ls2::TanhOp,
               ls2::RsqrtOp, ls2::SqrtOp, ls2::SinOp, ls2::CosOp, ls2::CastOp,
               ls2::BroadcastOp,
               ls2::SelectOp, ls2::CompareOp, ls2::ReshapeOp, ls2::SliceOp>(def) &&
           def->getNumResults() == 1;
  }

  /// Where a recomputation in the backward stops: values that cost nothing
  /// more to keep (arguments, constants, values the backward reads anyway,
  /// fp16/bf16 values, reduction results such as a row's mean and rstd).
  bool isStoredAnyway(Value v) {
    Operation *def = v.getDefiningOp();
    if (!def || isa<ls2::ConstantOp, ls2::IotaOp, ls2::RandomUniformOp>(def) ||
        isa<ls2::ReduceSumOp, ls2::ReduceMaxOp>(def))
      return true;
    // A broadcast is never worth storing: the backward reading it (a row's
    // rstd over [T, H]) recomputes it from its input ([T]) for free.
    if (isa<ls2::BroadcastOp>(def))
      return false;
    // What autodiff saved for the backward (a layer norm's input) is where
    // recomputation stops: the backward recomputes the normalized row from
    // it and the row statistics instead of storing that row and a
    // broadcast rstd in f32.
    // Except an exponential of a narrower stored value (SiLU's exp(-x) of
    // the bf16 gate): f32 it costs twice the bytes its input does.
    if (def->hasAttr("ls2.saved"))
      return !isa<ls2::ExpOp>(def) || !fromNarrowValue(def->getOperand(0));
    auto type = dyn_cast<RankedTensorType>(v.getType());
    // One element (a constant computed from constants: a rotary exponent)
    // costs nothing to keep.
    if (!type || (isa<FloatType>(type.getElementType()) &&
                  type.getElementType().getIntOrFloatBitWidth() < 32) ||
        isSingleElement(type))
      return true;
    return keptForBackward(v);
  }

  /// Whether `v` is an fp16/bf16 value through at most a few casts and
  /// negations.
  static bool fromNarrowValue(Value v) {
    for (int depth = 0; depth < 4; ++depth) {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (type && isa<FloatType>(type.getElementType()) &&
          type.getElementType().getIntOrFloatBitWidth() < 32)
        return true;
      Operation *def = v.getDefiningOp();
      if (!def || !isa<ls2::CastOp, ls2::NegOp>(def))
        return false;
      v = def->getOperand(0);
    }
    return false;
  }

  /// A value the backward reads is stored anyway, unless the backward
  /// recomputes it too (GELU's tanh, which CSE shares with its derivative):
  /// then chains through it go on to what it is computed from.
  bool keptForBackward(Value v) {
    return llvm::any_of(v.getUsers(),
                        [&](Operation *u) { return split.backward.contains(u); }) &&
           !willRecompute(v);
  }

  /// Whether recomputeWideValues clones `v` into the backward where the
  /// backward reads it (decided once per value).
  bool willRecompute(Value v) {
    auto it = recomputeDecisions.find(v);
    if (it != recomputeDecisions.end())
      return it->second;
    recomputeDecisions[v] = false; // no cycles in SSA; a guard all the same
    Operation *def = v.getDefiningOp();
    auto type = dyn_cast<RankedTensorType>(v.getType());
    bool yes = rematerialize && def && !split.backward.contains(def) && type &&
               isa<FloatType>(type.getElementType()) &&
               type.getElementType().getIntOrFloatBitWidth() >= 32 &&
               !isSingleElement(type) && recomputable(v, 0);
    if (checkpoint) {
      if (!isCheckpoint(v))
        yes = yes || fromCheckpoints(v);
      else if (def && !layerScope(def->getLoc()).empty())
        // What a layer passes on is kept: recomputing it (even cheaply)
        // would chain each layer's recomputation into the next one's.
        yes = false;
    }
    recomputeDecisions[v] = yes;
    return yes;
  }
  llvm::DenseMap<Value, bool> recomputeDecisions;

  /// The layer scope of an op ("transformer.h.3": a frontend scope whose
  /// last component is a number), or "" outside the layers.
  static std::string layerScope(Location loc) {
    std::string scope = scopeOf(loc);
    StringRef last = StringRef(scope).rsplit('.').second;
    bool number = !last.empty() && llvm::all_of(last, [](char c) { return c >= '0' && c <= '9'; });
    return number ? scope : "";
  }

  /// Activation checkpointing: what the forward keeps for the backward
  /// (Rematerialize.h); every other forward value of a layer is recomputed.
  bool isCheckpoint(Value v) {
    Operation *def = v.getDefiningOp();
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!def || split.backward.contains(def) || def->getNumRegions() > 0 || !type ||
        isSingleElement(type) ||
        isa<ls2::ConstantOp, ls2::IotaOp, ls2::RandomUniformOp, ls2::ReduceSumOp,
            ls2::ReduceMaxOp>(def) ||
        (isa<ls2::AttentionOp>(def) && !recomputeAttention))
      return true;
    std::string scope = layerScope(def->getLoc());
    if (scope.empty())
      return true;
    // What the layer passes on (the residual stream to the next layer).
    return llvm::any_of(v.getUsers(), [&](Operation *u) {
      return !split.backward.contains(u) && layerScope(u->getLoc()) != scope;
    });
  }

  /// Where a checkpointing recomputation stops: a checkpoint, or a value
  /// the backward reads and does not recompute.
  bool stopsRecomputation(Value v) {
    return isCheckpoint(v) || keptForBackward(v);
  }

  /// Whether `v` can be recomputed from checkpoints (through an attention
  /// only with recomputeAttention: else its results are checkpoints).
  bool fromCheckpoints(Value v) {
    auto it = fromCheckpointsMemo.find(v);
    if (it != fromCheckpointsMemo.end())
      return it->second;
    fromCheckpointsMemo[v] = false; // a guard; SSA has no cycles
    Operation *def = v.getDefiningOp();
    bool yes = def && def->getNumRegions() == 0 && !isa<ls2::AttentionGradOp>(def) &&
               (!isa<ls2::AttentionOp>(def) || recomputeAttention) &&
               llvm::all_of(def->getOperands(), [&](Value o) {
                 return stopsRecomputation(o) || fromCheckpoints(o);
               });
    fromCheckpointsMemo[v] = yes;
    return yes;
  }
  llvm::DenseMap<Value, bool> fromCheckpointsMemo;

  /// A forward value the backward can recompute within a few cheap
  /// elementwise ops from values stored anyway; a chain that would need a
  /// new wide value (a GEMM's f32 output) is not worth it.
  bool recomputable(Value v, int depth) {
    if (depth > 0 && isStoredAnyway(v))
      return true;
    Operation *def = v.getDefiningOp();
    if (!def || !isCheapForRecompute(def) || depth >= 8)
      return false;
    return llvm::all_of(def->getOperands(), [&](Value o) {
      return recomputable(o, depth + 1);
    });
  }

  /// Forward f32 values that CSE shares with the backward (a normalized row,
  /// GELU's 1 + erf) are recomputed there from what is stored anyway,
  /// instead of being stored in f32 across the passes.
  void recomputeWideValues(Block &block) {
    DenseMap<Value, Value> copies; // forward value -> its backward copy
    std::function<Value(Value, OpBuilder &, int)> copyFor =
        [&](Value v, OpBuilder &b, int depth) -> Value {
      if (Value c = copies.lookup(v))
        return c;
      Operation *def = v.getDefiningOp();
      // A checkpointing chain goes back to checkpoints and values the
      // backward reads anyway; a cheap one stops at what is stored anyway.
      bool stop = depth > 0 && (checkpoint ? !willRecompute(v) && stopsRecomputation(v)
                                           : isStoredAnyway(v));
      if (stop || !def || split.backward.contains(def))
        return v;
      IRMapping map;
      for (Value o : def->getOperands())
        map.map(o, copyFor(o, b, depth + 1));
      Operation *copy = b.clone(*def, map);
      split.backward.insert(copy);
      split.recomputed.insert(copy);
      ++split.recomputedOps;
      if (isa<ls2::MatmulOp>(def)) {
        split.recomputedGemms.insert(def);
        split.recomputedGemms.insert(copy);
      }
      for (auto [result, copied] : llvm::zip(def->getResults(), copy->getResults()))
        copies[result] = copied;
      return copy->getResult(cast<OpResult>(v).getResultNumber());
    };
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (!split.backward.contains(&op) || op.hasTrait<OpTrait::IsTerminator>())
        continue;
      for (OpOperand &use : op.getOpOperands()) {
        Value v = use.get();
        Operation *def = v.getDefiningOp();
        auto type = dyn_cast<RankedTensorType>(v.getType());
        if (!def || split.backward.contains(def) || !type ||
            !willRecompute(v))
          continue;
        OpBuilder b(&op);
        Value c = copyFor(v, b, 0);
        if (c != v)
          use.set(c);
      }
    }
  }

  static bool isSingleElement(RankedTensorType t) {
    return t.hasStaticShape() && t.getNumElements() <= 1;
  }

};

} // namespace

PassSplit splitPasses(func::FuncOp function, bool rematerialize, bool checkpointActivations,
                      bool recomputeAttention) {
  return Splitter(function, rematerialize, checkpointActivations, recomputeAttention).run();
}

} // namespace ls2c::fusion
