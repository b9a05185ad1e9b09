//===- Autodiff.cpp - ls2-autodiff: reverse-mode differentiation ----------===//
//
// Adds func.func @forward_backward to a module with @forward: the forward
// ops cloned, then their vector-Jacobian products (DifferentiableOpInterface)
// in reverse program order. Passes.td describes the rules; in short:
//
//   1. activity: a value is active when it is a float tensor that depends
//      on a parameter and that the loss depends on; only active values get
//      gradients.
//   2. reverse sweep: each forward op with a gradient reaching an active
//      result gets its VJP built; operand gradients are recorded per value
//      as contributions keyed by (use position, operand number) and summed
//      in that order when the value's producer is reached (all its users
//      come later in program order, so all contributions are in by then).
//   3. clean-up: backward ops whose results nothing uses are erased (a VJP
//      builds every operand's gradient; inactive ones are dropped), dims of
//      forward values move into the forward part, and forward ops the
//      backward reads are marked `ls2.saved`.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <tuple>

namespace ls2c {
#define GEN_PASS_DEF_AUTODIFF
#include "ls2c/Transforms/Passes.h.inc"
} // namespace ls2c

using namespace mlir;
using namespace ls2c;
using namespace ls2c::ls2;

namespace {

constexpr llvm::StringLiteral kKind = "ls2.kind";
constexpr llvm::StringLiteral kName = "ls2.name";
constexpr llvm::StringLiteral kSaved = "ls2.saved";

bool isFloatTensor(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && isa<Float32Type, Float16Type, BFloat16Type>(
                     type.getElementType());
}

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// One gradient flowing into a value from one of its uses.
struct Contribution {
  unsigned user;    ///< the using op's position in the forward program
  unsigned operand; ///< the operand number within that op
  Value grad;       ///< typed like the value; for a slice, like its result
  SliceOp slice;    ///< set when `grad` is a slice result's gradient that
                    ///< is not yet padded to the value's shape

  int64_t axis() const { return SliceOp(slice).getAxis(); }
  int64_t start() const { return SliceOp(slice).getStart(); }
  int64_t limit() const { return SliceOp(slice).getLimit(); }
};

class Differentiator {
public:
  explicit Differentiator(func::FuncOp func) : func(func) {}

  /// Rewrites `func` (a clone of @forward) into @forward_backward.
  LogicalResult run();

private:
  LogicalResult collectForward();
  void analyzeActivity(ArrayRef<BlockArgument> parameters);
  bool isActive(Value value) const { return active.contains(value); }
  /// The summed gradient of `value`, or null when none reached it.
  FailureOr<Value> takeGradient(OpBuilder &b, Value value);
  /// Joins slice gradients that tile `value` along one axis; null when
  /// they do not.
  Value joinSlices(OpBuilder &b, Value value, ArrayRef<Contribution> pieces);
  LogicalResult differentiate(OpBuilder &b, Operation *op);
  void eraseDeadBackward(Operation *returnOp);
  void hoistDims();
  void markSaved();

  func::FuncOp func;
  SmallVector<Operation *> forwardOps;
  llvm::DenseMap<Operation *, unsigned> position;
  llvm::DenseSet<Value> active;
  llvm::DenseMap<Value, SmallVector<Contribution>> contributions;
};

LogicalResult Differentiator::collectForward() {
  if (!func.getBody().hasOneBlock())
    return func.emitOpError("ls2-autodiff handles a single-block @forward");
  for (Operation &op : func.getBody().front().without_terminator()) {
    if (op.getNumRegions() != 0)
      return op.emitOpError("cannot be differentiated by ls2-autodiff: ops "
                            "with regions are not supported");
    position[&op] = forwardOps.size();
    forwardOps.push_back(&op);
  }
  return success();
}

void Differentiator::analyzeActivity(ArrayRef<BlockArgument> parameters) {
  // Varied: depends on a parameter through float values.
  llvm::DenseSet<Value> varied(parameters.begin(), parameters.end());
  for (Operation *op : forwardOps)
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return varied.contains(v); }))
      for (Value result : op->getResults())
        if (isFloatTensor(result))
          varied.insert(result);
  // Useful: the loss depends on it.
  Operation *ret = func.getBody().front().getTerminator();
  llvm::DenseSet<Value> useful(ret->operand_begin(), ret->operand_end());
  for (Operation *op : llvm::reverse(forwardOps))
    if (llvm::any_of(op->getResults(),
                     [&](Value v) { return useful.contains(v); }))
      for (Value operand : op->getOperands())
        if (isFloatTensor(operand))
          useful.insert(operand);
  for (Value value : varied)
    if (useful.contains(value) && isFloatTensor(value))
      active.insert(value);
}

Value Differentiator::joinSlices(OpBuilder &b, Value value,
                                 ArrayRef<Contribution> pieces) {
  int64_t axis = pieces.front().axis();
  for (const Contribution &c : pieces)
    if (!c.slice || c.axis() != axis)
      return nullptr;
  SmallVector<Contribution> sorted(pieces);
  llvm::stable_sort(sorted, [](const Contribution &l, const Contribution &r) {
    return l.start() < r.start();
  });
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i].start() < sorted[i - 1].limit())
      return nullptr; // overlapping slices: pad and add instead
  Location loc = value.getLoc();
  auto type = tensorType(value);
  Value first = sorted.front().grad;
  SmallVector<Value> sizes;
  for (auto [d, size] : llvm::enumerate(tensorType(first).getShape()))
    if (ShapedType::isDynamic(size))
      sizes.push_back(b.create<DimOp>(loc, first, d));
  auto zeros = [&](int64_t extent) -> Value {
    SmallVector<int64_t> shape(tensorType(first).getShape());
    shape[axis] = extent;
    auto zeroType = RankedTensorType::get({}, type.getElementType());
    Value zero = b.create<ConstantOp>(
        loc, DenseElementsAttr::get(
                 zeroType, b.getFloatAttr(type.getElementType(), 0.0)));
    return b.create<BroadcastOp>(loc, type.clone(shape), zero, sizes,
                                 b.getDenseI64ArrayAttr({}));
  };
  SmallVector<Value> parts;
  int64_t at = 0;
  for (const Contribution &c : sorted) {
    int64_t start = c.start(), limit = c.limit();
    if (start > at)
      parts.push_back(zeros(start - at));
    parts.push_back(c.grad);
    at = limit;
  }
  if (at < type.getDimSize(axis))
    parts.push_back(zeros(type.getDimSize(axis) - at));
  if (parts.size() == 1)
    return parts.front();
  return b.create<ConcatOp>(loc, parts, axis);
}

FailureOr<Value> Differentiator::takeGradient(OpBuilder &b, Value value) {
  auto it = contributions.find(value);
  if (it == contributions.end() || it->second.empty())
    return Value();
  SmallVector<Contribution> list = std::move(it->second);
  contributions.erase(it);
  llvm::stable_sort(list, [](const Contribution &l, const Contribution &r) {
    return std::tie(l.user, l.operand) < std::tie(r.user, r.operand);
  });
  auto checked = [&](Value grad) -> FailureOr<Value> {
    if (grad.getType() == value.getType())
      return grad;
    return emitError(value.getLoc(), "ls2-autodiff internal error: the "
                                     "gradient of a ")
           << value.getType() << " value is " << grad.getType();
  };
  if (list.front().slice)
    if (Value joined = joinSlices(b, value, list))
      return checked(joined);
  Value sum;
  for (Contribution &c : list) {
    Value grad = c.grad;
    if (c.slice) {
      SmallVector<Value> padded;
      auto vjp = cast<DifferentiableOpInterface>(c.slice.getOperation());
      if (failed(vjp.buildVJP(b, {grad}, padded)))
        return failure();
      grad = padded[0];
    }
    sum = sum ? Value(b.create<AddOp>(value.getLoc(), sum, grad)) : grad;
  }
  return checked(sum);
}

LogicalResult Differentiator::differentiate(OpBuilder &b, Operation *op) {
  if (llvm::none_of(op->getResults(),
                    [&](Value v) { return isActive(v); }))
    return success();
  SmallVector<Value> resultGrads;
  for (Value result : op->getResults()) {
    Value grad;
    if (isActive(result)) {
      FailureOr<Value> taken = takeGradient(b, result);
      if (failed(taken))
        return failure();
      grad = *taken;
    }
    resultGrads.push_back(grad);
  }
  if (llvm::all_of(resultGrads, [](Value g) { return !g; }))
    return success();

  // A slice's gradient waits for its input's other uses: slices that tile
  // the input are joined with one concat (takeGradient).
  if (auto slice = dyn_cast<SliceOp>(op)) {
    if (isActive(slice.getInput()))
      contributions[slice.getInput()].push_back(
          {position.lookup(op), 0, resultGrads[0], slice});
    return success();
  }

  auto vjp = dyn_cast<DifferentiableOpInterface>(op);
  if (!vjp)
    return op->emitOpError("cannot be differentiated by ls2-autodiff: it has "
                           "no vector-Jacobian product "
                           "(DifferentiableOpInterface) and lies on the path "
                           "from a parameter to the loss");
  SmallVector<Value> operandGrads;
  if (failed(vjp.buildVJP(b, resultGrads, operandGrads)))
    return failure();
  if (operandGrads.size() != op->getNumOperands())
    return op->emitOpError("ls2-autodiff internal error: buildVJP gave ")
           << operandGrads.size() << " gradients for " << op->getNumOperands()
           << " operands";
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    Value grad = operandGrads[i];
    if (!grad || !isActive(operand))
      continue;
    if (grad.getType() != operand.getType())
      return op->emitOpError("ls2-autodiff internal error: the gradient of "
                             "operand ")
             << i << " is " << grad.getType() << ", not "
             << operand.getType();
    contributions[operand].push_back(
        {position.lookup(op), static_cast<unsigned>(i), grad, nullptr});
  }
  return success();
}

void Differentiator::eraseDeadBackward(Operation *returnOp) {
  SmallVector<Operation *> backward;
  for (Operation *op = forwardOps.empty()
                           ? &func.getBody().front().front()
                           : forwardOps.back()->getNextNode();
       op && op != returnOp; op = op->getNextNode())
    backward.push_back(op);
  for (Operation *op : llvm::reverse(backward))
    if (op->use_empty() && isMemoryEffectFree(op))
      op->erase();
}

void Differentiator::hoistDims() {
  llvm::DenseSet<Operation *> forward(forwardOps.begin(), forwardOps.end());
  Block &body = func.getBody().front();
  auto isForwardValue = [&](Value v) {
    Operation *def = v.getDefiningOp();
    return !def || forward.contains(def);
  };
  // The forward dim of (value, index), if @forward has one.
  llvm::DenseMap<std::pair<Value, int64_t>, Value> existing;
  for (Operation *op : forwardOps)
    if (auto dim = dyn_cast<DimOp>(op))
      existing.try_emplace(std::make_pair(dim.getInput(), int64_t(dim.getIndex())),
                           dim.getResult());
  // Where the last dim hoisted after each producer (null: block args) went.
  llvm::DenseMap<Operation *, Operation *> lastHoisted;
  SmallVector<DimOp> dims;
  for (Operation *op = forwardOps.empty() ? &body.front()
                                          : forwardOps.back()->getNextNode();
       op; op = op->getNextNode())
    if (auto dim = dyn_cast<DimOp>(op))
      if (isForwardValue(dim.getInput()))
        dims.push_back(dim);
  for (DimOp dim : dims) {
    auto key = std::make_pair(dim.getInput(), int64_t(dim.getIndex()));
    if (Value known = existing.lookup(key)) {
      dim.getResult().replaceAllUsesWith(known);
      dim.erase();
      continue;
    }
    Operation *producer = dim.getInput().getDefiningOp();
    Operation *&last = lastHoisted[producer];
    if (last)
      dim->moveAfter(last);
    else if (producer)
      dim->moveAfter(producer);
    else
      dim->moveBefore(&body, body.begin());
    last = dim;
    existing[key] = dim.getResult();
    forward.insert(dim);
    forwardOps.push_back(dim); // order no longer matters past this point
  }
}

void Differentiator::markSaved() {
  llvm::DenseSet<Operation *> forward(forwardOps.begin(), forwardOps.end());
  // Constants and dims hold no buffer: they are not marked.
  auto holdsBuffer = [](Operation *op) {
    return !op->hasTrait<OpTrait::ConstantLike>() &&
           llvm::any_of(op->getResultTypes(), llvm::IsaPred<TensorType>);
  };
  for (Operation &op : func.getBody().front().without_terminator()) {
    if (forward.contains(&op))
      continue;
    for (Value operand : op.getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (forward.contains(def) && holdsBuffer(def))
          def->setAttr(kSaved, UnitAttr::get(func.getContext()));
  }
}

LogicalResult Differentiator::run() {
  if (failed(collectForward()))
    return failure();
  Block &body = func.getBody().front();
  Operation *ret = body.getTerminator();
  MLIRContext *context = func.getContext();

  SmallVector<BlockArgument> parameters;
  for (BlockArgument arg : body.getArguments()) {
    auto kind = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kKind);
    if (!kind || kind.getValue() != "parameter")
      continue;
    if (!isFloatTensor(arg))
      return func.emitOpError("parameter #")
             << arg.getArgNumber() << " has type " << arg.getType()
             << "; parameters must be f32, f16 or bf16 tensors";
    parameters.push_back(arg);
  }
  analyzeActivity(parameters);

  OpBuilder b(ret);
  Value loss = ret->getOperand(0);
  // Backward starts from dL = loss_grad, an argument, so callers can scale
  // it (fp16 loss scaling) without a second differentiation.
  func.insertArgument(
      body.getNumArguments(), loss.getType(),
      b.getDictionaryAttr({b.getNamedAttr(kKind, b.getStringAttr("input")),
                           b.getNamedAttr(kName, b.getStringAttr("loss_grad"))}),
      ret->getLoc());
  Value seed = body.getArguments().back();
  if (isActive(loss))
    contributions[loss].push_back(
        {static_cast<unsigned>(forwardOps.size()), 0, seed, nullptr});
  for (Operation *op : llvm::reverse(forwardOps))
    if (failed(differentiate(b, op)))
      return failure();

  SmallVector<Value> results{loss};
  SmallVector<Type> resultTypes{loss.getType()};
  SmallVector<DictionaryAttr> resultAttrs{DictionaryAttr::get(
      context, {b.getNamedAttr(kKind, b.getStringAttr("loss"))})};
  for (BlockArgument param : parameters) {
    FailureOr<Value> grad = takeGradient(b, param);
    if (failed(grad))
      return failure();
    Value g = *grad;
    if (!g) {
      // No path to the loss: zeros.
      auto type = tensorType(param);
      Location loc = param.getLoc();
      Value zero = b.create<ConstantOp>(
          loc, DenseElementsAttr::get(
                   RankedTensorType::get({}, type.getElementType()),
                   b.getFloatAttr(type.getElementType(), 0.0)));
      SmallVector<Value> sizes;
      for (auto [d, size] : llvm::enumerate(type.getShape()))
        if (ShapedType::isDynamic(size))
          sizes.push_back(b.create<DimOp>(loc, param, d));
      g = b.create<BroadcastOp>(loc, type, zero, sizes,
                                b.getDenseI64ArrayAttr({}));
    }
    results.push_back(g);
    resultTypes.push_back(g.getType());
    NamedAttribute attrs[] = {
        b.getNamedAttr(kKind, b.getStringAttr("gradient")),
        b.getNamedAttr(kName, func.getArgAttr(param.getArgNumber(), kName)
                                  ? func.getArgAttr(param.getArgNumber(), kName)
                                  : b.getStringAttr(""))};
    resultAttrs.push_back(DictionaryAttr::get(context, attrs));
  }
  auto newRet = b.create<func::ReturnOp>(ret->getLoc(), results);
  ret->erase();
  func.setFunctionType(
      FunctionType::get(context, body.getArgumentTypes(), resultTypes));
  func.setAllResultAttrs(resultAttrs);

  eraseDeadBackward(newRet);
  hoistDims();
  markSaved();
  return success();
}

struct AutodiffPass : ls2c::impl::AutodiffBase<AutodiffPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      module.emitError("ls2-autodiff: the module has no func.func @forward to "
                       "differentiate");
      return signalPassFailure();
    }
    ArrayRef<Type> results = forward.getFunctionType().getResults();
    auto scalarF32 = RankedTensorType::get({}, Float32Type::get(&getContext()));
    if (results.size() != 1 || results[0] != scalarF32) {
      forward.emitOpError("must return one scalar loss, tensor<f32>, for "
                          "ls2-autodiff; got ")
          << forward.getFunctionType();
      return signalPassFailure();
    }
    if (module.lookupSymbol("forward_backward")) {
      module.emitError("ls2-autodiff: the module already has "
                       "@forward_backward");
      return signalPassFailure();
    }
    if (forward.isExternal()) {
      forward.emitOpError("has no body to differentiate");
      return signalPassFailure();
    }

    auto fb = cast<func::FuncOp>(forward->clone());
    fb.setName("forward_backward");
    module.getBody()->getOperations().insertAfter(Block::iterator(forward),
                                                  fb);
    if (failed(Differentiator(fb).run())) {
      fb.erase();
      return signalPassFailure();
    }
  }
};

} // namespace
