//===- FusionEpilogues.cpp - fusion groups that become GEMM epilogues ----===//
#include "FusionEpilogues.h"

using namespace mlir;

namespace ls2c::fusion {

/// A loop group that only adds a row-broadcast bias to a GEMM's result,
/// and a column group that only sums the rows of a weight-gradient GEMM's
/// `a`, become that GEMM's cuBLASLt epilogues (bias, BGRADA): one launch
/// fewer each.
void attachEpilogues(SmallVector<ls2::FusionOp> &made) {
  auto bodyOps = [](ls2::FusionOp f) {
    SmallVector<Operation *> ops;
    for (Operation &op : f.getBody().front().without_terminator())
      if (!isa<ls2::ConstantOp>(op))
        ops.push_back(&op);
    return ops;
  };
  auto rebuild = [&](ls2::MatmulOp m, Value bias, Type biasGrad) {
    OpBuilder b(m);
    auto n = b.create<ls2::MatmulOp>(
        m.getLoc(), m.getResult().getType(), biasGrad, m.getA(), m.getB(),
        bias ? bias : m.getBias(), m.getTransposeA(), m.getTransposeB(),
        m.getAccTypeAttr());
    m.getResult().replaceAllUsesWith(n.getResult());
    if (m.getBiasGrad())
      m.getBiasGrad().replaceAllUsesWith(n.getBiasGrad());
    m.erase();
    return n;
  };
  SmallVector<ls2::FusionOp> kept;
  for (ls2::FusionOp f : made) {
    SmallVector<Operation *> ops = bodyOps(f);
    Block &body = f.getBody().front();
    auto yield = cast<ls2::YieldOp>(body.getTerminator());
    bool attached = false;
    if (f.getKind() == ls2::FusionKind::Loop && ops.size() == 2 &&
        f.getNumResults() == 1) {
      auto bc = dyn_cast<ls2::BroadcastOp>(ops[0]);
      auto add = dyn_cast<ls2::AddOp>(ops[1]);
      if (bc && add && yield.getValues()[0] == add.getResult()) {
        Value x = add.getLhs() == bc.getResult() ? add.getRhs() : add.getLhs();
        auto xArg = dyn_cast<BlockArgument>(x);
        auto biasArg = dyn_cast<BlockArgument>(bc.getInput());
        auto xType = cast<RankedTensorType>(x.getType());
        if (xArg && biasArg && xArg.getOwner() == &body &&
            biasArg.getOwner() == &body &&
            cast<RankedTensorType>(biasArg.getType()).getRank() == 1 &&
            bc.getDims().size() == 1 && bc.getDims()[0] == xType.getRank() - 1 &&
            x.getType() == f.getResult(0).getType()) {
          Value gemm = f.getInputs()[xArg.getArgNumber()];
          auto m = gemm.getDefiningOp<ls2::MatmulOp>();
          if (m && gemm == m.getResult() && !m.getBias() && gemm.hasOneUse()) {
            ls2::MatmulOp n = rebuild(m, f.getInputs()[biasArg.getArgNumber()],
                                      m.getBiasGrad() ? m.getBiasGrad().getType()
                                                      : Type());
            f.getResult(0).replaceAllUsesWith(n.getResult());
            attached = true;
          }
        }
      }
    }
    if (f.getKind() == ls2::FusionKind::ColumnReduction && ops.size() == 1 &&
        f.getNumResults() == 1) {
      auto sum = dyn_cast<ls2::ReduceSumOp>(ops[0]);
      auto arg = sum ? dyn_cast<BlockArgument>(sum.getInput()) : BlockArgument();
      if (sum && arg && !sum.getKeepDims() && sum.getAxes().size() == 1 &&
          sum.getAxes()[0] == 0 &&
          cast<RankedTensorType>(arg.getType()).getRank() == 2 &&
          yield.getValues()[0] == sum.getResult()) {
        Value rows = f.getInputs()[arg.getArgNumber()];
        for (Operation *u : rows.getUsers()) {
          auto m = dyn_cast<ls2::MatmulOp>(u);
          if (!m || m.getA() != rows || !m.getTransposeA() || m.getBiasGrad())
            continue;
          ls2::MatmulOp n = rebuild(m, Value(), f.getResult(0).getType());
          f.getResult(0).replaceAllUsesWith(n.getBiasGrad());
          attached = true;
          break;
        }
      }
    }
    if (attached)
      f.erase();
    else
      kept.push_back(f);
  }
  made = std::move(kept);
}

} // namespace ls2c::fusion
