//===- MergeGemms.cpp - one GEMM for projections of adjacent weights ------===//
//
// BERT's, the fairseq Transformer's query, key and value projections read
// the same input with weights that sit next to each other in the flat
// parameter workspace. Their three GEMMs become one over the joined weight
// (a view: no copy), forward and backward, as LightSeq2 and Megatron fuse
// QKV by hand:
//   forward   y_i = x·W_iᵀ (+ b_i)      -> Y = x·[W_0;W_1;W_2]ᵀ (+ [b_0 b_1 b_2]),
//             y_i = Y[:, o_i : o_i+N_i] (strided views for attention)
//   backward  Σ_i g_i·W_i               -> G·[W_0;W_1;W_2], G = [g_0 g_1 g_2]
//             g_iᵀ·x                    -> rows of Gᵀ·x
//             Σ_rows g_i (bias grads)   -> columns of Σ_rows G
// A weight is a view reshape(slice(w, s, e)) of a rank-1 tensor w (the
// master workspace or its compute copy); runs are maximal sequences with
// e_i = s_{i+1}. Anything that does not match exactly is left as it is.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dominance.h"

#include <map>

namespace ls2c {
#define GEN_PASS_DEF_MERGEGEMMS
#include "ls2c/Transforms/Passes.h.inc"
} // namespace ls2c

using namespace mlir;
using namespace ls2c;
using namespace ls2c::ls2;

namespace {

/// A weight view: rows [start, limit) of a rank-1 base, shaped [N, K].
struct WeightView {
  Value base;
  int64_t start = 0, limit = 0, rows = 0, cols = 0;
};

std::optional<WeightView> weightView(Value w) {
  auto reshape = w.getDefiningOp<ReshapeOp>();
  if (!reshape)
    return std::nullopt;
  auto slice = reshape.getInput().getDefiningOp<SliceOp>();
  auto type = cast<RankedTensorType>(w.getType());
  if (!slice || slice.getAxis() != 0 || type.getRank() != 2 ||
      !type.hasStaticShape() ||
      cast<RankedTensorType>(slice.getInput().getType()).getRank() != 1)
    return std::nullopt;
  return WeightView{slice.getInput(), static_cast<int64_t>(slice.getStart()),
                    static_cast<int64_t>(slice.getLimit()), type.getDimSize(0),
                    type.getDimSize(1)};
}

/// A bias view: elements [start, limit) of a rank-1 base.
std::optional<WeightView> biasView(Value b) {
  auto slice = b.getDefiningOp<SliceOp>();
  if (!slice || slice.getAxis() != 0 ||
      cast<RankedTensorType>(slice.getInput().getType()).getRank() != 1)
    return std::nullopt;
  int64_t n = static_cast<int64_t>(slice.getLimit() - slice.getStart());
  return WeightView{slice.getInput(), static_cast<int64_t>(slice.getStart()),
                    static_cast<int64_t>(slice.getLimit()), n, 1};
}

/// Splits `ops` (sorted by weight start) into runs of adjacent weights.
template <typename T>
SmallVector<SmallVector<T>> adjacentRuns(SmallVector<std::pair<WeightView, T>> ops) {
  llvm::sort(ops, [](auto &x, auto &y) { return x.first.start < y.first.start; });
  SmallVector<SmallVector<T>> runs;
  int64_t end = -1;
  for (auto &[view, op] : ops) {
    if (runs.empty() || view.start != end)
      runs.emplace_back();
    runs.back().push_back(op);
    end = view.limit;
  }
  llvm::erase_if(runs, [](auto &r) { return r.size() < 2; });
  return runs;
}

Value joinedWeight(OpBuilder &b, Location loc, const WeightView &first,
                   const WeightView &last, int64_t rows) {
  Value s = b.create<SliceOp>(loc, first.base, /*axis=*/0, first.start,
                              last.limit);
  auto type = cast<RankedTensorType>(s.getType()).clone({rows, first.cols});
  return b.create<ReshapeOp>(loc, type, s);
}

Value columns(OpBuilder &b, Location loc, Value y, int64_t start, int64_t n) {
  return b.create<SliceOp>(loc, y, /*axis=*/1, start, start + n);
}

struct MergeGemmsPass : ls2c::impl::MergeGemmsBase<MergeGemmsPass> {
  void runOnOperation() override {
    func::FuncOp f = getOperation();
    if (f.isExternal())
      return;
    Block &block = f.getBody().front();
    mergeForward(block);
    mergeBackward(block);
  }

  /// y_i = x·W_iᵀ for adjacent W_i -> one GEMM and column views; bias adds
  /// of adjacent biases on all of them -> one add.
  void mergeForward(Block &block) {
    std::map<std::tuple<void *, void *, int64_t>, SmallVector<std::pair<WeightView, MatmulOp>>>
        candidates;
    for (auto m : block.getOps<MatmulOp>()) {
      auto v = weightView(m.getB());
      if (!v || m.getTransposeA() || !m.getTransposeB() || m.getBias() ||
          m.getBiasGrad() || cast<RankedTensorType>(m.getA().getType()).getRank() != 2)
        continue;
      candidates[{m.getA().getAsOpaquePointer(), v->base.getAsOpaquePointer(),
                  v->cols}]
          .push_back({*v, m});
    }
    for (auto &[key, ops] : candidates)
      for (SmallVector<MatmulOp> &run : adjacentRuns(ops)) {
        MatmulOp first = run.front();
        for (MatmulOp m : run)
          if (m->isBeforeInBlock(first))
            first = m;
        SmallVector<WeightView> views;
        int64_t rows = 0;
        for (MatmulOp m : run) {
          views.push_back(*weightView(m.getB()));
          rows += views.back().rows;
        }
        OpBuilder b(first);
        Location loc = first.getLoc();
        Value w = joinedWeight(b, loc, views.front(), views.back(), rows);
        auto yType = cast<RankedTensorType>(first.getResult().getType())
                         .clone({ShapedType::kDynamic, rows});
        if (!cast<RankedTensorType>(first.getResult().getType()).isDynamicDim(0))
          yType = yType.clone({cast<RankedTensorType>(first.getResult().getType())
                                   .getDimSize(0),
                               rows});
        Value y = b.create<MatmulOp>(loc, yType, Type(), first.getA(), w, Value(),
                                     false, true, first.getAccTypeAttr())
                      .getResult();
        SmallVector<Value> parts;
        int64_t at = 0;
        for (auto [m, v] : llvm::zip(run, views)) {
          Value part = columns(b, loc, y, at, v.rows);
          at += v.rows;
          m.getResult().replaceAllUsesWith(part);
          parts.push_back(part);
        }
        for (MatmulOp m : run)
          m.erase();
        mergeBiasAdds(parts, y);
      }
  }

  /// add(y_i, broadcast(b_i)) for every part, with adjacent b_i in the same
  /// order -> one add over Y and column views of it.
  void mergeBiasAdds(ArrayRef<Value> parts, Value y) {
    SmallVector<AddOp> adds;
    SmallVector<WeightView> biases;
    Value size;
    for (Value p : parts) {
      // One add reads the part; ls2.dim may read its size.
      AddOp add;
      for (Operation *u : p.getUsers()) {
        if (isa<DimOp>(u))
          continue;
        if (add || !isa<AddOp>(u))
          return;
        add = cast<AddOp>(u);
      }
      if (!add)
        return;
      Value other = add.getLhs() == p ? add.getRhs() : add.getLhs();
      auto bc = other.getDefiningOp<BroadcastOp>();
      if (!bc || bc.getDims().size() != 1 || bc.getDims()[0] != 1 ||
          bc.getDynamicSizes().size() != 1)
        return;
      auto v = biasView(bc.getInput());
      if (!v || (!biases.empty() && (v->base != biases.back().base ||
                                     v->start != biases.back().limit)))
        return;
      adds.push_back(add);
      biases.push_back(*v);
      size = bc.getDynamicSizes()[0];
    }
    if (adds.empty())
      return;
    // The joined add goes after the last of them; every reader of any of
    // them must come later.
    AddOp last = adds[0];
    for (AddOp a : adds)
      if (last->isBeforeInBlock(a))
        last = a;
    for (AddOp a : adds)
      for (Operation *u : a->getUsers())
        if (u->getBlock() != last->getBlock() || !last->isBeforeInBlock(u))
          return;
    if (auto d = size.getDefiningOp(); d && last->isBeforeInBlock(d))
      return;
    OpBuilder b(last->getBlock(), std::next(last->getIterator()));
    Location loc = last.getLoc();
    Value bias = b.create<SliceOp>(loc, biases.front().base, 0,
                                   biases.front().start, biases.back().limit);
    auto yType = cast<RankedTensorType>(y.getType());
    Value wide = b.create<BroadcastOp>(loc, yType, bias, ValueRange{size},
                                       b.getDenseI64ArrayAttr({1}));
    auto sum = b.create<AddOp>(loc, y, wide);
    if (adds.front()->hasAttr("ls2.saved"))
      sum->setAttr("ls2.saved", b.getUnitAttr());
    int64_t at = 0;
    for (auto [a, v] : llvm::zip(adds, biases)) {
      a.getResult().replaceAllUsesWith(columns(b, loc, sum, at, v.rows));
      at += v.rows;
    }
    for (AddOp a : adds) {
      Operation *bc = a.getLhs().getDefiningOp<BroadcastOp>()
                          ? a.getLhs().getDefiningOp()
                          : a.getRhs().getDefiningOp();
      a.erase();
      if (bc && bc->use_empty())
        bc->erase();
    }
  }

  /// The backward of a merged projection: dgrad GEMMs of adjacent weights
  /// whose results are only summed, the weight-gradient GEMMs of the same
  /// gradients, and their bias gradients.
  void mergeBackward(Block &block) {
    // Keyed by the weight's base and the x of the weight-gradient GEMM of
    // the same gradient, so only projections of one input join.
    std::map<std::tuple<void *, int64_t, void *>,
             SmallVector<std::pair<WeightView, MatmulOp>>>
        candidates;
    for (auto m : block.getOps<MatmulOp>()) {
      auto v = weightView(m.getB());
      if (!v || m.getTransposeA() || m.getTransposeB() || m.getBias() ||
          m.getBiasGrad() || cast<RankedTensorType>(m.getA().getType()).getRank() != 2)
        continue;
      Value x;
      for (Operation *u : m.getA().getUsers())
        if (auto w = dyn_cast<MatmulOp>(u);
            w && w != m && w.getA() == m.getA() && w.getTransposeA())
          x = w.getB();
      if (!x)
        continue;
      candidates[{v->base.getAsOpaquePointer(), v->cols, x.getAsOpaquePointer()}]
          .push_back({*v, m});
    }
    for (auto &[key, ops] : candidates)
      for (SmallVector<MatmulOp> &run : adjacentRuns(ops))
        mergeBackwardRun(run);
  }

  void mergeBackwardRun(SmallVector<MatmulOp> run) {
    // The dgrad results must be summed by a chain of adds that reads
    // nothing else until all of them are in.
    llvm::DenseSet<Value> terms;
    for (MatmulOp m : run) {
      if (!m.getResult().hasOneUse())
        return;
      terms.insert(m.getResult());
    }
    AddOp top;
    llvm::DenseSet<Operation *> chain;
    // Walk up from any term: each add combines two summed values.
    Value cur = run.front().getResult();
    size_t covered = 1;
    while (covered < run.size()) {
      auto add = dyn_cast<AddOp>(*cur.getUsers().begin());
      if (!add || !cur.hasOneUse())
        return;
      Value other = add.getLhs() == cur ? add.getRhs() : add.getLhs();
      if (!terms.contains(other))
        return;
      chain.insert(add);
      ++covered;
      cur = add.getResult();
      top = add;
    }
    if (!top)
      return;
    // The gradients g_i and their other readers: one weight-gradient GEMM
    // with the same x each, and optionally a row sum (the bias gradient).
    SmallVector<Value> grads;
    SmallVector<WeightView> views;
    SmallVector<MatmulOp> wgrads;
    SmallVector<ReduceSumOp> sums;
    Value x;
    int64_t rows = 0;
    for (MatmulOp m : run) {
      Value g = m.getA();
      grads.push_back(g);
      views.push_back(*weightView(m.getB()));
      rows += views.back().rows;
      MatmulOp wgrad;
      ReduceSumOp sum;
      for (Operation *u : g.getUsers()) {
        if (u == m.getOperation())
          continue;
        if (auto w = dyn_cast<MatmulOp>(u); w && w.getA() == g &&
                                           w.getTransposeA() &&
                                           !w.getTransposeB() && !wgrad)
          wgrad = w;
        else if (auto r = dyn_cast<ReduceSumOp>(u);
                 r && !sum && r.getAxes().size() == 1 && r.getAxes()[0] == 0 &&
                 !r.getKeepDims())
          sum = r;
        else
          return; // another reader: leave this projection alone
      }
      if (!wgrad || (x && wgrad.getB() != x))
        return;
      x = wgrad.getB();
      wgrads.push_back(wgrad);
      sums.push_back(sum);
    }
    bool allSums = llvm::all_of(sums, [](ReduceSumOp s) { return bool(s); });
    bool noSums = llvm::none_of(sums, [](ReduceSumOp s) { return bool(s); });
    if (!allSums && !noSums)
      return;
    // Everything goes where the earliest of the readers was; all g_i and x
    // must be defined before it.
    Operation *at = run.front();
    auto consider = [&](Operation *op) {
      if (op && op->isBeforeInBlock(at))
        at = op;
    };
    for (MatmulOp m : run)
      consider(m);
    for (MatmulOp w : wgrads)
      consider(w);
    for (ReduceSumOp s : sums)
      consider(s);
    for (Value v : grads)
      if (Operation *d = v.getDefiningOp(); d && !d->isBeforeInBlock(at))
        return;
    if (Operation *d = x.getDefiningOp(); d && !d->isBeforeInBlock(at))
      return;
    OpBuilder b(at);
    Location loc = run.front().getLoc();
    Value joined = b.create<ConcatOp>(loc, grads, /*axis=*/1);
    Value w = joinedWeight(b, loc, views.front(), views.back(), rows);
    auto dxType = cast<RankedTensorType>(top.getResult().getType());
    Value dx = b.create<MatmulOp>(loc, dxType, Type(), joined, w, Value(), false,
                                  false, run.front().getAccTypeAttr())
                   .getResult();
    auto dwType = cast<RankedTensorType>(wgrads.front().getResult().getType())
                      .clone({rows, views.front().cols});
    Value dw = b.create<MatmulOp>(loc, dwType, Type(), joined, x, Value(), true,
                                  false, wgrads.front().getAccTypeAttr())
                   .getResult();
    Value db;
    if (allSums)
      db = b.create<ReduceSumOp>(loc, joined, ArrayRef<int64_t>{0});
    // The sum chain's result is dx; the old GEMMs and adds go.
    top.getResult().replaceAllUsesWith(dx);
    int64_t rowAt = 0;
    for (auto [i, v] : llvm::enumerate(views)) {
      wgrads[i].getResult().replaceAllUsesWith(
          b.create<SliceOp>(loc, dw, 0, rowAt, rowAt + v.rows));
      if (db)
        sums[i].getResult().replaceAllUsesWith(
            b.create<SliceOp>(loc, db, 0, rowAt, rowAt + v.rows));
      rowAt += v.rows;
    }
    SmallVector<Operation *> dead(chain.begin(), chain.end());
    llvm::sort(dead, [](Operation *p, Operation *q) { return q->isBeforeInBlock(p); });
    for (Operation *op : dead)
      op->erase();
    for (MatmulOp m : run)
      m.erase();
    for (MatmulOp m : wgrads)
      m.erase();
    for (ReduceSumOp s : sums)
      if (s)
        s.erase();
  }
};

} // namespace
