//===- TrainStep.cpp - ls2-train-step: workspaces, optimizer, loss scaling ===//
//
// From @forward_backward (ls2-autodiff) builds the two functions the trainer
// runs each step (docs/architecture.md, "Train step"):
//
//   @accumulate_gradients(master, gradients, loss_scale, buffers..., inputs...)
//       -> (loss, gradients + dL/dparams * loss_scale)
//   @optimizer_step(master, gradients, exp_avg, exp_avg_sq, step, loss_scale,
//                   good_steps, micro_batches)
//       -> (master', exp_avg', exp_avg_sq', step', loss_scale', good_steps',
//           grad_norm, lr, finite)
//
// master, gradients and the moments are flat fp32 workspaces laid out by
// planWorkspace (LightSeq2's linked parameters): compute-dtype parameters are
// slices of the master copy. The optimizer step unscales, clips by global
// norm, computes the scheduled learning rate from the device-side step
// count, and runs one adamw op over the weight-decayed region and one over
// the rest. A step whose gradients hold any inf or NaN changes nothing but
// the loss scale (halved; fp16), which doubles again after
// loss_scale_growth_interval clean steps, as torch.cuda.amp.GradScaler does.
//
//===----------------------------------------------------------------------===//
#include "BuildUtils.h"

#include "ls2c/Analysis/ProgramStats.h"
#include "ls2c/Training/Workspace.h"
#include "ls2c/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace ls2c {
#define GEN_PASS_DEF_TRAINSTEP
#include "ls2c/Transforms/Passes.h.inc"
} // namespace ls2c

using namespace mlir;
using namespace ls2c;
using namespace ls2c::ls2;

namespace {

/// The `ls2.optimizer` module attribute, read once.
struct OptimizerSettings {
  std::string type, schedule;
  double lr, beta1, beta2, eps, weightDecay, clipNorm, minLrRatio;
  double bucketCapMb = kAccumulationGroupBytes / double(1 << 20); ///< optional
  int64_t warmupSteps, totalSteps;
  bool lossScaling = false;
  int64_t growthInterval = 0;
};

FailureOr<OptimizerSettings> readSettings(ModuleOp module) {
  auto dict = module->getAttrOfType<DictionaryAttr>("ls2.optimizer");
  if (!dict)
    return module.emitError("ls2-train-step needs the module attribute "
                            "ls2.optimizer (set by the frontend)");
  OptimizerSettings s;
  auto f = [&](StringRef key, double &out) -> LogicalResult {
    auto a = dict.getAs<FloatAttr>(key);
    if (!a)
      return module.emitError("ls2.optimizer lacks float field '") << key << "'";
    out = a.getValueAsDouble();
    return success();
  };
  auto i = [&](StringRef key, int64_t &out) -> LogicalResult {
    auto a = dict.getAs<IntegerAttr>(key);
    if (!a)
      return module.emitError("ls2.optimizer lacks integer field '") << key << "'";
    out = a.getInt();
    return success();
  };
  auto str = [&](StringRef key, std::string &out) -> LogicalResult {
    auto a = dict.getAs<StringAttr>(key);
    if (!a)
      return module.emitError("ls2.optimizer lacks string field '") << key << "'";
    out = a.str();
    return success();
  };
  if (failed(str("type", s.type)) || failed(str("schedule", s.schedule)) ||
      failed(f("lr", s.lr)) || failed(f("beta1", s.beta1)) ||
      failed(f("beta2", s.beta2)) || failed(f("eps", s.eps)) ||
      failed(f("weight_decay", s.weightDecay)) ||
      failed(f("clip_norm", s.clipNorm)) ||
      failed(f("min_lr_ratio", s.minLrRatio)) ||
      failed(i("warmup_steps", s.warmupSteps)) ||
      failed(i("total_steps", s.totalSteps)))
    return failure();
  if (dict.get("bucket_cap_mb") && failed(f("bucket_cap_mb", s.bucketCapMb)))
    return failure();
  if (!(s.bucketCapMb > 0))
    return module.emitError("ls2.optimizer bucket_cap_mb must be positive");
  if (s.type != "adamw" && s.type != "adam")
    return module.emitError("ls2.optimizer type '") << s.type
                                                    << "' is not adamw or adam";
  if (s.schedule != "constant" && s.schedule != "linear" &&
      s.schedule != "cosine" && s.schedule != "inverse_sqrt")
    return module.emitError("ls2.optimizer schedule '") << s.schedule
                                                        << "' is unknown";
  if (dict.get("loss_scale_init")) {
    s.lossScaling = true;
    if (failed(i("loss_scale_growth_interval", s.growthInterval)))
      return failure();
  }
  return s;
}

/// One parameter of @forward_backward: its argument and gradient result.
struct ParamInfo {
  unsigned argIndex;
  unsigned resultIndex;
  RankedTensorType type;
};

class Builder {
public:
  Builder(OpBuilder &b, Location loc) : b(b), loc(loc), f32(b.getF32Type()) {}

  Value scalar(double v) { return buildScalar(b, loc, f32, v); }
  Value add(Value x, Value y) { return b.create<AddOp>(loc, x, y); }
  Value sub(Value x, Value y) { return b.create<SubOp>(loc, x, y); }
  Value mul(Value x, Value y) { return b.create<MulOp>(loc, x, y); }
  Value div(Value x, Value y) { return b.create<DivOp>(loc, x, y); }
  Value min(Value x, Value y) { return b.create<MinOp>(loc, x, y); }
  Value max(Value x, Value y) { return b.create<MaxOp>(loc, x, y); }
  Value cmp(CompareDirection d, Value x, Value y) {
    return b.create<CompareOp>(loc, d, x, y);
  }
  /// p ? x : y, with a rank-0 predicate broadcast to x's static shape.
  Value select(Value p, Value x, Value y) {
    RankedTensorType type = tensorTypeOf(x);
    if (tensorTypeOf(p).getRank() != type.getRank())
      p = b.create<BroadcastOp>(loc, type.clone(b.getI1Type()), p, ValueRange{},
                                b.getDenseI64ArrayAttr({}));
    return b.create<SelectOp>(loc, p, x, y);
  }
  Value slice(Value x, int64_t start, int64_t limit) {
    return b.create<SliceOp>(loc, x, /*axis=*/0, start, limit);
  }
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    return b.create<ReshapeOp>(loc, tensorTypeOf(x).clone(shape), x);
  }
  Value zeros(int64_t n) {
    auto type = RankedTensorType::get({n}, f32);
    return b.create<ConstantOp>(
        loc, DenseElementsAttr::get(type, b.getFloatAttr(f32, 0.0)));
  }

  OpBuilder &b;
  Location loc;
  Type f32;
};

/// The learning rate of the update made after t earlier ones (t from 0,
/// f32 rank 0; as PyTorch's LambdaLR, so the first update of a warmup uses
/// 0, like Hugging Face's and fairseq's schedules): linear
/// warmup to `lr` over warmup_steps, then constant, linear or cosine decay
/// to min_lr_ratio * lr at total_steps, or fairseq's inverse square root.
Value scheduledLr(Builder &x, const OptimizerSettings &s, Value t) {
  Value lr = x.scalar(s.lr);
  double warmup = static_cast<double>(s.warmupSteps);
  Value afterWarmup;
  if (s.schedule == "constant") {
    afterWarmup = lr;
  } else if (s.schedule == "inverse_sqrt") {
    // lr * sqrt(warmup / t)
    afterWarmup = x.mul(lr, x.b.create<SqrtOp>(x.loc, x.div(x.scalar(warmup), t)));
  } else {
    // total_steps <= warmup_steps: the decay has no length, so every step
    // after warmup is at its end (Hugging Face's linear schedule gives 0
    // there too; without this one step ran at the peak).
    Value progress = x.scalar(1.0);
    if (s.totalSteps > s.warmupSteps) {
      double span = static_cast<double>(s.totalSteps - s.warmupSteps);
      progress = x.div(x.sub(t, x.scalar(warmup)), x.scalar(span));
      progress = x.min(x.max(progress, x.scalar(0.0)), x.scalar(1.0));
    }
    Value shape; // from 1 at the end of warmup to 0 at total_steps
    if (s.schedule == "linear") {
      shape = x.sub(x.scalar(1.0), progress);
    } else {
      Value angle = x.mul(progress, x.scalar(M_PI));
      shape = x.mul(x.scalar(0.5),
                    x.add(x.scalar(1.0), x.b.create<CosOp>(x.loc, angle)));
    }
    // 1 - r from the same f32 r, so the factor is exactly 1 at the peak.
    Value ratio = x.scalar(s.minLrRatio);
    Value factor =
        x.add(ratio, x.mul(x.sub(x.scalar(1.0), ratio), shape));
    afterWarmup = x.mul(lr, factor);
  }
  if (s.warmupSteps <= 0)
    return afterWarmup;
  Value warming = x.cmp(CompareDirection::LT, t, x.scalar(warmup));
  Value warm = x.mul(lr, x.div(t, x.scalar(warmup)));
  return x.select(warming, warm, afterWarmup);
}

struct TrainStepPass : ls2c::impl::TrainStepBase<TrainStepPass> {
  void runOnOperation() override;

private:
  LogicalResult buildAccumulate(ModuleOp module, func::FuncOp fb,
                                const WorkspaceLayout &ws, double bucketCapMb,
                                const std::map<std::string, ParamInfo> &params);
  LogicalResult buildOptimizerStep(ModuleOp module, const OptimizerSettings &s,
                                   const WorkspaceLayout &ws);
};

DictionaryAttr argAttrs(OpBuilder &b, StringRef name, StringRef kind) {
  return b.getDictionaryAttr({b.getNamedAttr("ls2.name", b.getStringAttr(name)),
                              b.getNamedAttr("ls2.kind", b.getStringAttr(kind))});
}

LogicalResult
TrainStepPass::buildAccumulate(ModuleOp module, func::FuncOp fb,
                               const WorkspaceLayout &ws, double bucketCapMb,
                               const std::map<std::string, ParamInfo> &params) {
  OpBuilder b(module.getContext());
  Location loc = fb.getLoc();
  Type f32 = b.getF32Type();
  auto flat = RankedTensorType::get({ws.totalElements}, f32);
  auto scalarF32 = RankedTensorType::get({}, f32);

  // Arguments: the workspaces and loss scale, then fb's non-parameter
  // arguments except the loss gradient seed.
  SmallVector<Type> types = {flat, flat, scalarF32};
  SmallVector<DictionaryAttr> attrs = {argAttrs(b, "master_weights", "workspace"),
                                       argAttrs(b, "gradients", "workspace"),
                                       argAttrs(b, "loss_scale", "state")};
  SmallVector<int> passThrough; // fb argument index per extra argument
  int seedIndex = -1;
  for (unsigned i = 0; i < fb.getNumArguments(); ++i) {
    auto kind = fb.getArgAttrOfType<StringAttr>(i, "ls2.kind");
    auto name = fb.getArgAttrOfType<StringAttr>(i, "ls2.name");
    if (kind && kind.getValue() == "parameter")
      continue;
    if (name && name.getValue() == "loss_grad") {
      seedIndex = static_cast<int>(i);
      continue;
    }
    types.push_back(fb.getArgument(i).getType());
    attrs.push_back(fb.getArgAttrDict(i) ? fb.getArgAttrDict(i)
                                         : b.getDictionaryAttr({}));
    passThrough.push_back(static_cast<int>(i));
  }
  if (seedIndex < 0)
    return fb.emitError("@forward_backward has no 'loss_grad' argument: run "
                        "ls2-autodiff first");

  b.setInsertionPointToEnd(module.getBody());
  auto fn = b.create<func::FuncOp>(
      loc, "accumulate_gradients",
      b.getFunctionType(types, {scalarF32, flat}));
  fn.setAllArgAttrs(attrs);
  fn.setResultAttrs(0, argAttrs(b, "loss", "output"));
  fn.setResultAttrs(1, argAttrs(b, "gradients", "workspace"));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Builder x(b, loc);
  Value master = entry->getArgument(0), gradients = entry->getArgument(1);

  IRMapping map;
  // fp16/bf16 compute copies: one cast of the whole master workspace (one
  // kernel; per layer under checkpointing, below), whose slices are views,
  // rather than a cast per parameter.
  Type computeType;
  bool oneComputeType = true;
  for (const WorkspaceSlot &slot : ws.slots) {
    Type t = params.at(slot.spec->name).type.getElementType();
    oneComputeType &= !computeType || t == computeType;
    computeType = t;
  }
  bool narrowCopy = computeType && oneComputeType && computeType != f32;
  // With activation checkpointing, each run of consecutive slots that one
  // frontend scope reads first (a layer's weights, its biases and norms) is
  // cast on its own, at that scope's location and right before its first
  // reader: a layer's compute copy is then one of the layer's values, which
  // the backward recomputes from the master (Rematerialize.cpp) rather than
  // every layer's copy living from the forward to its backward, as
  // torch.utils.checkpoint recomputes autocast's casts. Without it, one cast
  // of the whole master (one kernel) serves the step.
  bool castPerScope = narrowCopy && module->hasAttr("ls2.activation_checkpointing");
  auto firstReader = [&](const WorkspaceSlot &slot) -> Operation * {
    Value arg = fb.getArgument(params.at(slot.spec->name).argIndex);
    Operation *first = nullptr;
    for (Operation *u : arg.getUsers())
      if (u->getBlock() == &fb.getBody().front() && (!first || u->isBeforeInBlock(first)))
        first = u;
    return first;
  };
  Value computeCopy = master;
  if (narrowCopy && !castPerScope)
    computeCopy = buildCast(b, loc, master, computeType);
  // The ops of each per-scope cast and its views, moved before their first
  // reader once the body is cloned.
  struct ScopeCopy {
    Value copy; ///< the cast of the run's range of the master
    SmallVector<Operation *> ops;
    SmallVector<Value> views;
  };
  SmallVector<ScopeCopy> scopeCopies;
  int64_t runBegin = 0;
  std::string runScope;
  for (auto [k, slot] : llvm::enumerate(ws.slots)) {
    const ParamInfo &p = params.at(slot.spec->name);
    Value base = computeCopy;
    int64_t offset = slot.offset;
    Location at = loc;
    if (castPerScope) {
      Operation *reader = firstReader(slot);
      std::string scope = reader ? scopeOf(reader->getLoc()) : "";
      at = reader ? reader->getLoc() : loc;
      if (k == 0 || scope != runScope) {
        int64_t end = slot.offset;
        for (size_t j = k; j < ws.slots.size(); ++j) {
          Operation *r = firstReader(ws.slots[j]);
          if ((r ? scopeOf(r->getLoc()) : "") != scope)
            break;
          end = ws.slots[j].offset + ws.slots[j].numel;
        }
        Builder rx(b, at);
        Value range = rx.slice(master, slot.offset, end);
        Value cast = buildCast(b, at, range, computeType);
        cast.getDefiningOp()->setAttr("ls2.compute_copy", b.getUnitAttr());
        scopeCopies.push_back({cast, {range.getDefiningOp(), cast.getDefiningOp()}, {}});
        runBegin = slot.offset;
        runScope = scope;
      }
      base = scopeCopies.back().copy;
      offset = slot.offset - runBegin;
    }
    Builder vx(b, at);
    Value v = vx.reshape(vx.slice(base, offset, offset + slot.numel), p.type.getShape());
    Value mapped = buildCast(b, at, v, p.type.getElementType());
    if (castPerScope) {
      for (Value w = mapped; w != base; w = w.getDefiningOp()->getOperand(0))
        scopeCopies.back().ops.insert(scopeCopies.back().ops.begin() + 2, w.getDefiningOp());
      scopeCopies.back().views.push_back(mapped);
    }
    map.map(fb.getArgument(p.argIndex), mapped);
  }
  map.map(fb.getArgument(seedIndex), entry->getArgument(2));
  for (auto [k, i] : llvm::enumerate(passThrough))
    map.map(fb.getArgument(i), entry->getArgument(3 + k));

  auto ret = cast<func::ReturnOp>(fb.getBody().front().getTerminator());
  for (Operation &op : fb.getBody().front().without_terminator())
    b.clone(op, map);
  for (ScopeCopy &copy : scopeCopies) {
    Operation *first = nullptr;
    for (Value v : copy.views)
      for (Operation *u : v.getUsers())
        if (!first || u->isBeforeInBlock(first))
          first = u;
    if (first)
      for (Operation *op : copy.ops)
        op->moveBefore(first);
  }

  // The gradients are added to the workspace group by group
  // (planAccumulationGroups), each group right after the op that finishes
  // its last gradient: ls2-fuse keeps that place, so a data-parallel
  // all-reduce of the group's range can start while backward goes on, and
  // the gradients' arena buffers die early. The result is the groups'
  // concat, which each group's kernel writes in place (FusionRules.h).
  std::vector<AccumulationGroup> groups =
      planAccumulationGroups(ws, std::max<int64_t>(1, static_cast<int64_t>(
                                     bucketCapMb * double(1 << 20) / 4)));
  Block *body = entry;
  auto lastWriter = [&](const AccumulationGroup &g) -> Operation * {
    Operation *last = nullptr;
    for (size_t i : g.slots) {
      Value grad = map.lookup(ret.getOperand(params.at(ws.slots[i].spec->name).resultIndex));
      Operation *def = grad.getDefiningOp();
      if (def && def->getBlock() == body && (!last || last->isBeforeInBlock(def)))
        last = def;
    }
    return last;
  };
  // A group whose gradients no op computes (constant or argument) joins
  // its neighbour: a kernel must write every group.
  for (size_t g = 0; g < groups.size() && groups.size() > 1;) {
    if (lastWriter(groups[g])) {
      ++g;
      continue;
    }
    size_t into = g > 0 ? g - 1 : 1;
    AccumulationGroup &keep = groups[into];
    keep.begin = std::min(keep.begin, groups[g].begin);
    keep.end = std::max(keep.end, groups[g].end);
    keep.slots.insert(keep.slots.end(), groups[g].slots.begin(), groups[g].slots.end());
    llvm::sort(keep.slots);
    groups.erase(groups.begin() + static_cast<long>(g));
    g = 0;
  }
  Value loss = map.lookup(ret.getOperand(0));
  SmallVector<Value> updated;
  for (const AccumulationGroup &g : groups) {
    if (Operation *last = lastWriter(g))
      b.setInsertionPointAfter(last);
    else
      b.setInsertionPointToEnd(body);
    SmallVector<Value> pieces;
    int64_t at = g.begin;
    for (size_t i : g.slots) {
      const WorkspaceSlot &slot = ws.slots[i];
      if (slot.offset > at)
        pieces.push_back(x.zeros(slot.offset - at));
      Value grad = map.lookup(ret.getOperand(params.at(slot.spec->name).resultIndex));
      pieces.push_back(x.reshape(buildCast(b, loc, grad, f32), {slot.numel}));
      at = slot.offset + slot.numel;
    }
    if (g.end > at)
      pieces.push_back(x.zeros(g.end - at));
    Value sum = pieces.size() == 1 ? pieces.front()
                                   : b.create<ConcatOp>(loc, pieces, /*axis=*/0).getResult();
    updated.push_back(x.add(x.slice(gradients, g.begin, g.end), sum));
  }
  b.setInsertionPointToEnd(body);
  if (updated.empty()) // no trainable parameter: the workspace is padding
    updated.push_back(x.add(gradients, x.zeros(ws.totalElements)));
  Value result = updated.size() == 1
                     ? updated.front()
                     : b.create<ConcatOp>(loc, updated, /*axis=*/0).getResult();
  b.create<func::ReturnOp>(loc, ValueRange{loss, result});
  return success();
}

LogicalResult TrainStepPass::buildOptimizerStep(ModuleOp module,
                                                const OptimizerSettings &s,
                                                const WorkspaceLayout &ws) {
  OpBuilder b(module.getContext());
  Location loc = module.getLoc();
  Type f32 = b.getF32Type(), i64 = b.getI64Type(), i1 = b.getI1Type();
  auto flat = RankedTensorType::get({ws.totalElements}, f32);
  auto sF32 = RankedTensorType::get({}, f32);
  auto sI64 = RankedTensorType::get({}, i64);
  auto sI1 = RankedTensorType::get({}, i1);

  b.setInsertionPointToEnd(module.getBody());
  auto fn = b.create<func::FuncOp>(
      loc, "optimizer_step",
      b.getFunctionType({flat, flat, flat, flat, sI64, sF32, sI64, sF32},
                        {flat, flat, flat, sI64, sF32, sI64, sF32, sF32, sI1}));
  const char *argNames[] = {"master_weights", "gradients", "exp_avg",
                            "exp_avg_sq", "step", "loss_scale", "good_steps",
                            "micro_batches"};
  const char *argKinds[] = {"workspace", "workspace", "workspace", "workspace",
                            "state", "state", "state", "input"};
  for (unsigned i = 0; i < 8; ++i)
    fn.setArgAttrs(i, argAttrs(b, argNames[i], argKinds[i]));
  const char *resultNames[] = {"master_weights", "exp_avg", "exp_avg_sq",
                               "step", "loss_scale", "good_steps",
                               "grad_norm", "lr", "finite"};
  for (unsigned i = 0; i < 9; ++i)
    fn.setResultAttrs(i, argAttrs(b, resultNames[i], i < 6 ? "state" : "output"));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Builder x(b, loc);
  Value master = entry->getArgument(0), grads = entry->getArgument(1),
        m = entry->getArgument(2), v = entry->getArgument(3),
        step = entry->getArgument(4), scale = entry->getArgument(5),
        good = entry->getArgument(6), micro = entry->getArgument(7);

  // Global norm of the unscaled, micro-batch-averaged gradient; inf or NaN
  // anywhere makes the sum of squares non-finite.
  Value sumsq = b.create<ReduceSumOp>(loc, x.mul(grads, grads),
                                      b.getDenseI64ArrayAttr({0}), false);
  Value finite = x.cmp(CompareDirection::LT, sumsq,
                       x.scalar(std::numeric_limits<double>::infinity()));
  Value denom = x.mul(scale, micro);
  Value norm = x.div(b.create<SqrtOp>(loc, sumsq), denom);
  Value gradScale = x.div(x.scalar(1.0), denom);
  if (s.clipNorm > 0) {
    // torch.nn.utils.clip_grad_norm_: coefficient max_norm / (norm + 1e-6),
    // capped at 1.
    Value coef = x.min(x.scalar(1.0),
                       x.div(x.scalar(s.clipNorm), x.add(norm, x.scalar(1e-6))));
    gradScale = x.mul(gradScale, coef);
  }

  Value lr = scheduledLr(x, s, buildCast(b, loc, step, f32));
  Value newStep = x.add(step, buildIntScalar(b, loc, i64, 1));

  auto mode = s.type == "adamw" ? WeightDecayMode::Decoupled : WeightDecayMode::L2;
  SmallVector<Value> newP, newM, newV;
  auto update = [&](int64_t begin, int64_t end, double wd) {
    if (begin == end)
      return;
    // Sequenced: argument evaluation order would make the IR compiler-dependent.
    Value p = x.slice(master, begin, end);
    Value g = x.slice(grads, begin, end);
    Value m1 = x.slice(m, begin, end);
    Value v1 = x.slice(v, begin, end);
    auto op = b.create<AdamWOp>(
        loc, p, g, m1, v1, newStep, lr, gradScale,
        b.getF32FloatAttr(static_cast<float>(s.beta1)),
        b.getF32FloatAttr(static_cast<float>(s.beta2)),
        b.getF32FloatAttr(static_cast<float>(s.eps)),
        b.getF32FloatAttr(static_cast<float>(wd)),
        WeightDecayModeAttr::get(b.getContext(), mode));
    newP.push_back(op.getNewParam());
    newM.push_back(op.getNewExpAvg());
    newV.push_back(op.getNewExpAvgSq());
  };
  update(0, ws.decayElements, s.weightDecay);
  update(ws.decayElements, ws.totalElements, 0.0);
  auto joined = [&](SmallVector<Value> &parts) -> Value {
    return parts.size() == 1 ? parts.front()
                             : b.create<ConcatOp>(loc, parts, 0).getResult();
  };
  // A non-finite step changes no parameter, moment or step count.
  Value outP = x.select(finite, joined(newP), master);
  Value outM = x.select(finite, joined(newM), m);
  Value outV = x.select(finite, joined(newV), v);
  Value outStep = x.select(finite, newStep, step);

  Value outScale = scale, outGood = good;
  if (s.lossScaling) {
    Value grown = x.add(good, buildIntScalar(b, loc, i64, 1));
    Value grow = x.cmp(CompareDirection::GE, grown,
                       buildIntScalar(b, loc, i64, s.growthInterval));
    Value zero = buildIntScalar(b, loc, i64, 0);
    outScale = x.select(finite,
                        x.select(grow, x.mul(scale, x.scalar(2.0)), scale),
                        x.mul(scale, x.scalar(0.5)));
    outGood = x.select(finite, x.select(grow, zero, grown), zero);
  }
  b.create<func::ReturnOp>(loc, ValueRange{outP, outM, outV, outStep, outScale,
                                           outGood, norm, lr, finite});
  return success();
}

void TrainStepPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto fb = module.lookupSymbol<func::FuncOp>("forward_backward");
  if (!fb) {
    module.emitError("ls2-train-step needs @forward_backward: run "
                     "ls2-autodiff first");
    return signalPassFailure();
  }
  FailureOr<OptimizerSettings> settings = readSettings(module);
  if (failed(settings))
    return signalPassFailure();

  // Rebuild the parameter list from the arguments and plan the workspace
  // exactly as the trainer does.
  ParameterLayout layout;
  std::map<std::string, ParamInfo> params;
  std::map<std::string, unsigned> results;
  for (unsigned r = 1; r < fb.getNumResults(); ++r)
    if (auto name = fb.getResultAttrOfType<StringAttr>(r, "ls2.name"))
      results[name.str()] = r;
  for (unsigned i = 0; i < fb.getNumArguments(); ++i) {
    auto kind = fb.getArgAttrOfType<StringAttr>(i, "ls2.kind");
    if (!kind || kind.getValue() != "parameter")
      continue;
    auto name = fb.getArgAttrOfType<StringAttr>(i, "ls2.name");
    auto decay = fb.getArgAttrOfType<BoolAttr>(i, "ls2.weight_decay");
    if (!name || !decay || !results.count(name.str())) {
      fb.emitError("parameter argument ")
          << i << " needs ls2.name, ls2.weight_decay and a gradient result";
      return signalPassFailure();
    }
    auto type = cast<RankedTensorType>(fb.getArgument(i).getType());
    ParameterSpec spec;
    spec.name = name.str();
    spec.shape.assign(type.getShape().begin(), type.getShape().end());
    spec.weight_decay = decay.getValue();
    layout.parameters.push_back(spec);
    params[spec.name] = {i, results[spec.name], type};
  }
  WorkspaceLayout ws = planWorkspace(layout);
  if (failed(buildAccumulate(module, fb, ws, settings->bucketCapMb, params)) ||
      failed(buildOptimizerStep(module, *settings, ws)))
    return signalPassFailure();
}

} // namespace
