//===- FusionRules.cpp - how ls2-fuse sees each op -------------------------===//
#include "FusionRules.h"

#include "ls2c/Analysis/ShapeBounds.h"

#include "ls2/IR/LS2Dialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace ls2c::fusion {

namespace {

/// True when every reader of `v` is attention or its gradient taking it as
/// query, key or value (fused attention reads strided operands), directly
/// or through reshapes that only split the last dim into heads.
bool readByAttentionOnly(Value v) {
  if (v.use_empty())
    return false;
  for (OpOperand &use : v.getUses()) {
    Operation *u = use.getOwner();
    if (auto r = dyn_cast<ls2::ReshapeOp>(u)) {
      auto in = cast<RankedTensorType>(v.getType());
      auto out = cast<RankedTensorType>(r.getType());
      if (out.getRank() < in.getRank() ||
          in.getShape().drop_back() !=
              out.getShape().take_front(in.getRank() - 1) ||
          !readByAttentionOnly(r.getResult()))
        return false;
      continue;
    }
    if (auto a = dyn_cast<ls2::AttentionOp>(u)) {
      if (use.getOperandNumber() > 2) // query, key, value come first
        return false;
      continue;
    }
    if (auto g = dyn_cast<ls2::AttentionGradOp>(u)) {
      unsigned n = use.getOperandNumber(); // dout, query, key, value, ...
      if (n < 1 || n > 3)
        return false;
      continue;
    }
    return false;
  }
  return true;
}

/// The gradient workspace of @accumulate_gradients (TrainStep.cpp): a
/// returned 1-D concat of loop results, each read only by it.
bool isAccumulationConcat(ls2::ConcatOp concat,
                          const llvm::DenseSet<Operation *> *clonable) {
  Value whole = concat.getResult();
  if (concat.getAxis() != 0 || cast<RankedTensorType>(whole.getType()).getRank() != 1 ||
      !whole.hasOneUse() || !isa<func::ReturnOp>(*whole.getUsers().begin()) ||
      concat.getInputs().size() < 2)
    return false;
  for (Value v : concat.getInputs()) {
    Operation *def = v.getDefiningOp();
    if (!v.hasOneUse() || !def || (clonable && clonable->contains(def)))
      return false;
    if (auto f = dyn_cast<ls2::FusionOp>(def)) {
      if (f.getKind() != ls2::FusionKind::Loop)
        return false;
    } else if (!isa<ls2::AddOp>(def)) {
      return false;
    }
  }
  return true;
}

} // namespace

bool isInPlaceConcat(Operation *op, const llvm::DenseSet<Operation *> *clonable) {
  auto concat = dyn_cast<ls2::ConcatOp>(op);
  if (!concat)
    return false;
  if (concat.getAxis() == 0)
    return isAccumulationConcat(concat, clonable);
  for (Value v : concat.getInputs()) {
    if (!v.hasOneUse())
      return false;
    Operation *def = v.getDefiningOp();
    while (def && isa<ls2::ReshapeOp>(def)) {
      if (!def->getOperand(0).hasOneUse())
        return false;
      def = def->getOperand(0).getDefiningOp();
    }
    if (!def || !isa<ls2::AttentionGradOp>(def))
      return false;
  }
  return true;
}

bool isStridedView(Operation *op) {
  auto slice = dyn_cast<ls2::SliceOp>(op);
  if (!slice)
    return false;
  auto type = cast<RankedTensorType>(slice.getInput().getType());
  for (int64_t d = static_cast<int64_t>(slice.getAxis()) + 1; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      return false;
  bool contiguous = true;
  for (int64_t d = 0; d < static_cast<int64_t>(slice.getAxis()); ++d)
    contiguous &= type.getDimSize(d) == 1;
  return !contiguous && readByAttentionOnly(slice.getResult());
}

bool isView(Operation *op) {
  if (isa<ls2::ReshapeOp>(op))
    return true;
  auto slice = dyn_cast<ls2::SliceOp>(op);
  if (!slice)
    return false;
  if (isStridedView(op))
    return true;
  // Contiguous: every dim before the axis is 1; a static offset: every dim
  // after it is static.
  auto type = cast<RankedTensorType>(slice.getInput().getType());
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (d < static_cast<int64_t>(slice.getAxis()) && type.getDimSize(d) != 1)
      return false;
    if (d > static_cast<int64_t>(slice.getAxis()) && type.isDynamicDim(d))
      return false;
  }
  return true;
}

int64_t viewByteOffset(Operation *view) {
  auto slice = dyn_cast<ls2::SliceOp>(view);
  if (!slice)
    return 0;
  auto type = cast<RankedTensorType>(slice.getInput().getType());
  int64_t row = 1;
  for (int64_t d = slice.getAxis() + 1; d < type.getRank(); ++d)
    row *= type.getDimSize(d);
  return static_cast<int64_t>(slice.getStart()) * row *
         elementBytes(type.getElementType());
}

bool isElementwiseOfShape(Operation *u, ArrayRef<int64_t> shape) {
  if (!isa<ls2::AddOp, ls2::SubOp, ls2::MulOp, ls2::DivOp, ls2::MaxOp, ls2::MinOp, ls2::NegOp,
           ls2::ExpOp, ls2::LogOp, ls2::TanhOp, ls2::ErfOp, ls2::SqrtOp, ls2::RsqrtOp,
           ls2::SelectOp, ls2::CompareOp, ls2::CastOp>(u))
    return false;
  for (Value r : u->getResults())
    if (cast<RankedTensorType>(r.getType()).getShape() != shape)
      return false;
  return true;
}

std::optional<double> constantValue(Value v) {
  auto c = v.getDefiningOp<ls2::ConstantOp>();
  if (!c)
    return std::nullopt;
  auto dense = dyn_cast<DenseFPElementsAttr>(c.getValue());
  if (!dense || !dense.isSplat())
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

ls2::CompareOp reluMask(ls2::SelectOp select) {
  auto cmp = select.getPred().getDefiningOp<ls2::CompareOp>();
  std::optional<double> zero = constantValue(select.getOnFalse());
  std::optional<double> cmpZero = cmp ? constantValue(cmp.getRhs()) : std::nullopt;
  if (!cmp || cmp.getDirection() != ls2::CompareDirection::GT ||
      cmp.getLhs() != select.getOnTrue() || !zero || *zero != 0.0 || !cmpZero ||
      *cmpZero != 0.0)
    return {};
  return cmp;
}

Operation *definingOpThroughViews(Value v) {
  Operation *def = v.getDefiningOp();
  while (def && isView(def))
    def = def->getOperand(0).getDefiningOp();
  return def;
}

bool isArgumentConversion(Operation *op) {
  if (!isa<ls2::CastOp>(op))
    return false;
  // A layer's compute copy under activation checkpointing (TrainStep.cpp):
  // a range of the master workspace, read by the layer's GEMMs.
  if (op->hasAttr("ls2.compute_copy"))
    return true;
  auto arg = dyn_cast<BlockArgument>(op->getOperand(0));
  if (!arg)
    return false;
  // Parameters keep their one converted copy (written once, read by every
  // kernel of the layer). Another argument read once, by an op that is not
  // a view, is converted in that reader: it costs nothing and saves a copy.
  auto f = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  auto kind = f ? f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "ls2.kind") : StringAttr();
  if (kind && kind.getValue() == "parameter")
    return true;
  Value converted = op->getResult(0);
  return !converted.hasOneUse() || isView(*converted.getUsers().begin());
}

namespace {

/// Elementwise ops worth recomputing in each consumer instead of storing.
bool isCheapElementwise(Operation *op) {
  return isa<ls2::AddOp, ls2::SubOp, ls2::MulOp, ls2::DivOp, ls2::MaxOp,
             ls2::MinOp, ls2::NegOp, ls2::CompareOp, ls2::SelectOp,
             ls2::CastOp, ls2::BroadcastOp>(op);
}

bool operandsClonable(Operation *op,
                      const llvm::DenseSet<Operation *> &clonable) {
  for (Value v : op->getOperands()) {
    if (!isa<RankedTensorType>(v.getType()))
      continue; // index sizes: ls2.dim stays at top level, read as inputs
    // A view of an argument is an argument.
    Operation *def = definingOpThroughViews(v);
    if (def && isArgumentConversion(def))
      continue; // written once, then read like an argument
    if (def && !clonable.contains(def))
      return false;
  }
  return true;
}

/// One element: a learning rate, a loss, a clipping coefficient.
bool isScalarOp(Operation *op) {
  if (op->getNumResults() == 0 ||
      !isa<ls2::AddOp, ls2::SubOp, ls2::MulOp, ls2::DivOp, ls2::MaxOp,
           ls2::MinOp, ls2::NegOp, ls2::ExpOp, ls2::LogOp, ls2::TanhOp,
           ls2::ErfOp, ls2::SqrtOp, ls2::RsqrtOp, ls2::SinOp, ls2::CosOp,
           ls2::CompareOp, ls2::SelectOp, ls2::CastOp>(op))
    return false;
  for (Value r : op->getResults()) {
    auto t = dyn_cast<RankedTensorType>(r.getType());
    if (!t || !t.hasStaticShape() || t.getNumElements() != 1)
      return false;
  }
  return true;
}

bool isReduction(Operation *op) {
  return isa<ls2::ReduceSumOp, ls2::ReduceMaxOp>(op);
}

/// Reduced axes, and whether they are the trailing dims (row reduction).
bool reducesTrailingDims(Operation *op, bool &all) {
  ArrayRef<int64_t> axes = isa<ls2::ReduceSumOp>(op)
                               ? cast<ls2::ReduceSumOp>(op).getAxes()
                               : cast<ls2::ReduceMaxOp>(op).getAxes();
  int64_t rank = cast<RankedTensorType>(op->getOperand(0).getType()).getRank();
  all = static_cast<int64_t>(axes.size()) == rank;
  for (auto [i, a] : llvm::enumerate(axes))
    if (a != rank - static_cast<int64_t>(axes.size()) + static_cast<int64_t>(i))
      return false;
  return true;
}

} // namespace

OpClass classify(Operation *op, const llvm::DenseSet<Operation *> &clonable) {
  if (isa<ls2::DimOp, func::ReturnOp>(op) || isView(op) ||
      isInPlaceConcat(op, &clonable))
    return OpClass::Meta;
  if (isa<ls2::ConstantOp, ls2::IotaOp, ls2::RandomUniformOp>(op))
    return OpClass::Clonable;
  // A conversion of a whole argument (the fp16 compute copy of the master
  // workspace) is written once and read through views, not redone by every
  // kernel that reads a parameter.
  bool convertsArgument = isArgumentConversion(op);
  if ((isCheapElementwise(op) && !convertsArgument &&
       operandsClonable(op, clonable)) ||
      isScalarOp(op))
    return OpClass::Clonable;
  if (isReduction(op)) {
    bool all = false;
    bool trailing = reducesTrailingDims(op, all);
    if (all || !trailing)
      return OpClass::ColReduce;
    return OpClass::RowReduce;
  }
  if (isa<ls2::MatmulOp, ls2::AttentionOp, ls2::AttentionGradOp,
          ls2::ScatterAddOp, ls2::NonzeroOp, ls2::LayerNormOp, ls2::SoftmaxOp, ls2::GeluOp,
          ls2::DropoutOp, ls2::CrossEntropyOp, ls2::LayerNormGradOp,
          ls2::SoftmaxGradOp, ls2::GeluGradOp, ls2::CrossEntropyGradOp,
          ls2::AdamWOp, ls2::FusionOp>(op))
    return OpClass::Opaque;
  return OpClass::Elementwise;
}

const char *toString(OpClass c) {
  switch (c) {
  case OpClass::Meta:
    return "meta";
  case OpClass::Clonable:
    return "clonable";
  case OpClass::Elementwise:
    return "elementwise";
  case OpClass::RowReduce:
    return "row reduction";
  case OpClass::ColReduce:
    return "column reduction";
  case OpClass::Opaque:
    return "opaque";
  }
  return "?";
}

} // namespace ls2c::fusion
