//===- FusionEpilogues.cpp - fusion groups that become GEMM epilogues ----===//
#include "FusionEpilogues.h"

#include "FusionRules.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"

#include <cmath>
#include <map>
#include <optional>

using namespace mlir;

namespace ls2c::fusion {

namespace {

std::string describe(Operation *op) {
  std::string s = op->getName().getStringRef().str();
  if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
    s += " (" + loc.getName().str() + ")";
  return s;
}

std::string describe(ls2::FusionOp f) {
  std::string s = "group " + f.getGroupName().str();
  if (auto loc = dyn_cast<NameLoc>(f.getLoc()))
    s += " [" + loc.getName().str() + "]";
  return s;
}

//===----------------------------------------------------------------------===//
// Expression patterns over a fusion body (ls2-decompose's formulas)
//===----------------------------------------------------------------------===//

/// A tree of ops over leaves (values bound on first sight, the same value
/// wherever the leaf repeats) and f32 constants.
struct Pat {
  enum Kind { Leaf, Const, Op } kind = Leaf;
  std::string name;  ///< Op: "ls2.add"
  bool commutative = false;
  std::vector<Pat> operands;
  double value = 0;  ///< Const
  int leaf = 0;      ///< Leaf
};

Pat leaf(int i) {
  Pat p;
  p.kind = Pat::Leaf;
  p.leaf = i;
  return p;
}
Pat cst(double v) {
  Pat p;
  p.kind = Pat::Const;
  p.value = v;
  return p;
}
Pat node(const char *name, std::vector<Pat> operands, bool commutative) {
  Pat p;
  p.kind = Pat::Op;
  p.name = name;
  p.operands = std::move(operands);
  p.commutative = commutative;
  return p;
}
Pat add(Pat a, Pat b) { return node("ls2.add", {std::move(a), std::move(b)}, true); }
Pat mul(Pat a, Pat b) { return node("ls2.mul", {std::move(a), std::move(b)}, true); }
Pat sub(Pat a, Pat b) { return node("ls2.sub", {std::move(a), std::move(b)}, false); }
Pat tanhOf(Pat a) { return node("ls2.tanh", {std::move(a)}, false); }

/// ls2-decompose's tanh GELU of x (DecomposeGelu).
Pat geluTanhPattern(const Pat &x) {
  const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
  Pat x3 = mul(mul(x, x), x);
  Pat inner = tanhOf(mul(add(x, mul(x3, cst(c))), cst(k)));
  return mul(mul(x, cst(0.5)), add(inner, cst(1.0)));
}

/// ls2-decompose's tanh GELU derivative of x (DecomposeGeluGrad).
Pat geluTanhDerivativePattern(const Pat &x) {
  const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
  Pat x2 = mul(x, x);
  Pat t = tanhOf(mul(add(x, mul(mul(x2, x), cst(c))), cst(k)));
  Pat left = mul(add(t, cst(1.0)), cst(0.5));
  Pat sech2 = sub(cst(1.0), mul(t, t));
  Pat dpoly = mul(add(mul(x2, cst(3.0 * c)), cst(1.0)), cst(k));
  Pat right = mul(mul(mul(x, cst(0.5)), sech2), dpoly);
  return add(left, right);
}

class Matcher {
public:
  explicit Matcher(int leaves) : leaves(leaves) {}

  bool match(Value v, const Pat &p) {
    switch (p.kind) {
    case Pat::Leaf:
      if (!leaves[p.leaf]) {
        leaves[p.leaf] = v;
        return true;
      }
      return leaves[p.leaf] == v;
    case Pat::Const: {
      std::optional<double> c = constantValue(v);
      // The constants are f32 (ls2-decompose's scalars); compare as f32.
      return c && static_cast<float>(*c) == static_cast<float>(p.value);
    }
    case Pat::Op: {
      Operation *def = v.getDefiningOp();
      if (!def || def->getName().getStringRef() != p.name ||
          def->getNumOperands() != p.operands.size() || def->getNumResults() != 1)
        return false;
      SmallVector<Value> saved = leaves;
      size_t mark = ops.size();
      auto tryOrder = [&](bool swapped) {
        for (size_t i = 0; i < p.operands.size(); ++i) {
          size_t j = swapped ? p.operands.size() - 1 - i : i;
          if (!match(def->getOperand(j), p.operands[i]))
            return false;
        }
        return true;
      };
      if (tryOrder(false)) {
        ops.push_back(def);
        return true;
      }
      leaves = saved;
      ops.resize(mark);
      if (p.commutative && p.operands.size() == 2 && tryOrder(true)) {
        ops.push_back(def);
        return true;
      }
      leaves = saved;
      ops.resize(mark);
      return false;
    }
    }
    return false;
  }

  Value get(int i) const { return leaves[i]; }
  /// Every op the match went through.
  SmallVector<Operation *> ops;

private:
  SmallVector<Value> leaves;
};

//===----------------------------------------------------------------------===//
// The groups
//===----------------------------------------------------------------------===//

/// A loop that finishes a GEMM's result with a bias and an activation.
struct ForwardCandidate {
  ls2::FusionOp group;
  ls2::MatmulOp gemm;
  ls2::GemmActivation activation = ls2::GemmActivation::Relu;
  Value bias;          ///< outside value, or null (the GEMM's own, if any)
  unsigned out = 0;    ///< result index of the activation's output
  int saved = -1;      ///< result index of the pre-activation (GELU) or the mask (ReLU)
};

/// A loop or column group that multiplies a GEMM's result by the
/// activation's derivative of a saved value (and sums the rows).
struct BackwardCandidate {
  ls2::FusionOp group;
  ls2::MatmulOp gemm;
  ls2::GemmActivation activation = ls2::GemmActivation::ReluGrad;
  unsigned savedInput = 0; ///< group input: the GELU input or the ReLU mask
  Value saved() { return group.getInputs()[savedInput]; }
  unsigned out = 0;    ///< result index of the gradient
  int biasGrad = -1;   ///< result index of its row sums
  /// Result indices of the GELU of the saved input, recomputed (they move
  /// to a loop of their own).
  SmallVector<unsigned> recomputed;
};

SmallVector<Operation *> bodyOps(ls2::FusionOp f) {
  SmallVector<Operation *> ops;
  for (Operation &op : f.getBody().front().without_terminator())
    if (!isa<ls2::ConstantOp>(op))
      ops.push_back(&op);
  return ops;
}

/// `add` as x + broadcast(bias) along x's last dim, where x and the rank-1
/// bias are arguments of `add`'s block and the sum has x's type: x, the
/// bias and the broadcast; nulls when it is not.
struct BiasAdd {
  BlockArgument x, bias;
  ls2::BroadcastOp broadcast;
};
BiasAdd matchBiasAdd(ls2::AddOp add) {
  Block *body = add->getBlock();
  for (int side = 0; side < 2; ++side) {
    auto x = dyn_cast<BlockArgument>(side ? add.getRhs() : add.getLhs());
    auto bc = (side ? add.getLhs() : add.getRhs()).getDefiningOp<ls2::BroadcastOp>();
    auto bias = bc ? dyn_cast<BlockArgument>(bc.getInput()) : BlockArgument();
    if (!x || !bias || x.getOwner() != body || bias.getOwner() != body)
      continue;
    auto type = cast<RankedTensorType>(x.getType());
    if (cast<RankedTensorType>(bias.getType()).getRank() != 1 || bc.getDims().size() != 1 ||
        bc.getDims()[0] != type.getRank() - 1 || add.getType() != type)
      continue;
    return {x, bias, bc};
  }
  return {};
}

/// The outside value behind block argument `v` of `f`, or null.
Value outside(ls2::FusionOp f, Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != &f.getBody().front())
    return Value();
  return f.getInputs()[arg.getArgNumber()];
}

/// The GEMM whose whole result `v` is (read only by `reader`), or null
/// with `why` set.
ls2::MatmulOp soleGemmResult(Value v, Operation *reader, std::string &why) {
  auto m = v ? v.getDefiningOp<ls2::MatmulOp>() : ls2::MatmulOp();
  if (!m || v != m.getResult()) {
    why = "its input is not a GEMM's result";
    return {};
  }
  for (Operation *u : v.getUsers())
    if (u != reader) {
      why = "the GEMM's result is also read by " + describe(u);
      return {};
    }
  if (m.getActivation() || m.getBiasGrad()) {
    why = "the GEMM already has an epilogue";
    return {};
  }
  if (cast<RankedTensorType>(m.getA().getType()).getRank() != 2 ||
      cast<RankedTensorType>(m.getB().getType()).getRank() != 2) {
    why = "the GEMM is batched (activation epilogues take rank-2 operands)";
    return {};
  }
  return m;
}

/// Why a loop with an activation-like body is no epilogue, from what it
/// holds.
std::string bodyReason(ls2::FusionOp f) {
  bool erf = false, random = false, reluFromOutput = false;
  Block *body = &f.getBody().front();
  f.getBody().walk([&](Operation *op) {
    erf |= isa<ls2::ErfOp>(op);
    random |= isa<ls2::RandomUniformOp>(op);
    // A ReLU gradient whose mask the group computes from a value it reads.
    if (auto cmp = dyn_cast<ls2::CompareOp>(op)) {
      auto arg = dyn_cast<BlockArgument>(cmp.getLhs());
      std::optional<double> zero = constantValue(cmp.getRhs());
      // (A select of the compared value itself is a forward ReLU.)
      reluFromOutput |= cmp.getDirection() == ls2::CompareDirection::GT && zero &&
                        *zero == 0 && arg && arg.getOwner() == body &&
                        llvm::any_of(cmp->getUsers(), [&](Operation *u) {
                          auto sel = dyn_cast<ls2::SelectOp>(u);
                          return sel && sel.getOnTrue() != cmp.getLhs();
                        });
    }
  });
  if (reluFromOutput && !erf && !random)
    return "the ReLU's mask is computed here from the ReLU's output, which the backward "
           "reads anyway (no mask is stored), and DRELU_BGRAD only reads a stored mask";
  if (erf)
    return "the erf GELU (ls2.gelu without approximate = tanh) is not "
           "cuBLASLt's GELU, which is the tanh form";
  if (random)
    return "the group also applies dropout, which no cuBLASLt epilogue does";
  return "the group computes more than a bias and ReLU or the tanh GELU "
         "(ls2-decompose's formulas)";
}

/// The body's erf or dropout: why no epilogue can take the group, whatever
/// its shape; "" when it has neither.
std::string specificReason(ls2::FusionOp f) {
  bool erf = false, random = false;
  f.getBody().walk([&](Operation *op) {
    erf |= isa<ls2::ErfOp>(op);
    random |= isa<ls2::RandomUniformOp>(op);
  });
  return erf || random ? bodyReason(f) : std::string();
}

/// A group worth matching (and, when it reads a GEMM's result, worth a
/// refusal line): GELU's tanh or erf, ReLU's compare with 0, or a select by
/// a stored mask (a ReLU gradient).
bool looksLikeActivation(ls2::FusionOp f) {
  bool yes = false;
  Block *body = &f.getBody().front();
  f.getBody().walk([&](Operation *op) {
    yes |= isa<ls2::ErfOp, ls2::TanhOp>(op);
    if (auto cmp = dyn_cast<ls2::CompareOp>(op)) {
      std::optional<double> zero = constantValue(cmp.getRhs());
      yes |= cmp.getDirection() == ls2::CompareDirection::GT && zero && *zero == 0;
    }
    if (auto sel = dyn_cast<ls2::SelectOp>(op)) {
      auto arg = dyn_cast<BlockArgument>(sel.getPred());
      yes |= arg && arg.getOwner() == body;
    }
  });
  return yes;
}

/// Matches y = cast_T(gelu(x_f32)) or select(p > 0, p, 0) over p = a +
/// broadcast(bias) (or p = a), a the GEMM's result.
std::optional<ForwardCandidate> matchForward(ls2::FusionOp f, std::string &why) {
  if (std::string specific = specificReason(f); !specific.empty()) {
    why = specific;
    return std::nullopt;
  }
  if (f.getKind() != ls2::FusionKind::Loop) {
    why = "the group is a reduction";
    return std::nullopt;
  }
  Block &body = f.getBody().front();
  auto yield = cast<ls2::YieldOp>(body.getTerminator());
  for (auto [i, y] : llvm::enumerate(yield.getValues())) {
    auto yType = cast<RankedTensorType>(y.getType());
    if (yType.getRank() != 2 || !isa<FloatType>(yType.getElementType()))
      continue;
    Type elt = yType.getElementType();
    ForwardCandidate c;
    c.group = f;
    c.out = i;
    Value pre;
    Matcher m(2);
    llvm::DenseSet<Operation *> extra; // casts and the bias add
    // ReLU: select(compare gt(p, 0), p, 0).
    if (auto sel = y.getDefiningOp<ls2::SelectOp>()) {
      ls2::CompareOp cmp = reluMask(sel);
      if (!cmp)
        continue;
      pre = sel.getOnTrue();
      c.activation = ls2::GemmActivation::Relu;
      extra.insert(sel);
      extra.insert(cmp);
    } else {
      // GELU: [cast_T](gelu(x)), x = [cast_f32](p).
      Value g = y;
      if (!elt.isF32()) {
        auto castOut = y.getDefiningOp<ls2::CastOp>();
        if (!castOut)
          continue;
        g = castOut.getInput();
        extra.insert(castOut);
      }
      if (!cast<RankedTensorType>(g.getType()).getElementType().isF32() ||
          !m.match(g, geluTanhPattern(leaf(0))))
        continue;
      Value x = m.get(0);
      pre = x;
      if (!elt.isF32()) {
        auto castIn = x.getDefiningOp<ls2::CastOp>();
        if (!castIn || castIn.getInput().getType() != yType)
          continue;
        pre = castIn.getInput();
        extra.insert(castIn);
      }
      c.activation = ls2::GemmActivation::GeluTanh;
    }
    if (pre.getType() != yType)
      continue;
    // p = a + broadcast(bias) or p = a.
    Value a = pre;
    if (auto addOp = pre.getDefiningOp<ls2::AddOp>()) {
      for (int side = 0; side < 2; ++side) {
        Value x = side ? addOp.getRhs() : addOp.getLhs();
        Value other = side ? addOp.getLhs() : addOp.getRhs();
        auto bc = other.getDefiningOp<ls2::BroadcastOp>();
        if (!bc || !outside(f, x) || !outside(f, bc.getInput()) ||
            bc.getDims().size() != 1 || bc.getDims()[0] != 1 ||
            cast<RankedTensorType>(bc.getInput().getType()).getRank() != 1 ||
            bc.getInput().getType() !=
                RankedTensorType::get({yType.getDimSize(1)}, elt))
          continue;
        a = x;
        c.bias = outside(f, bc.getInput());
        extra.insert(addOp);
        extra.insert(bc);
        break;
      }
      if (!c.bias)
        continue;
    }
    Value gemmValue = outside(f, a);
    if (!gemmValue)
      continue;
    for (Operation *op : m.ops)
      extra.insert(op);
    // Every op of the body is the pattern's; the other results are the
    // pre-activation (GELU) or the mask (ReLU).
    for (Operation *op : bodyOps(f))
      if (!extra.contains(op)) {
        why = bodyReason(f);
        return std::nullopt;
      }
    Value savedInside =
        c.activation == ls2::GemmActivation::Relu
            ? y.getDefiningOp<ls2::SelectOp>().getPred()
            : pre;
    for (auto [j, other] : llvm::enumerate(yield.getValues())) {
      if (j == i)
        continue;
      if (other != savedInside || c.saved >= 0) {
        why = c.activation == ls2::GemmActivation::Relu
                  ? "the group yields more than the ReLU and its mask"
                  : "the group yields more than the GELU and its input "
                    "(values the backward reads that it does not recompute)";
        return std::nullopt;
      }
      c.saved = static_cast<int>(j);
    }
    ls2::MatmulOp gemm = soleGemmResult(gemmValue, f, why);
    if (!gemm)
      return std::nullopt;
    if (c.bias && gemm.getBias()) {
      why = "the GEMM already adds a bias";
      return std::nullopt;
    }
    c.gemm = gemm;
    return c;
  }
  why = bodyReason(f);
  return std::nullopt;
}

/// `v` without the widening cast ls2-decompose puts before f32 math.
Value beforeWidening(Value v) {
  if (auto c = v.getDefiningOp<ls2::CastOp>())
    return c.getInput();
  return v;
}

/// Matches, at the yielded value `dx`, dx = [cast_T](dy_f32 * gelu'(x_f32))
/// or dx = select(mask, dy, 0): fills c's activation, the block values of
/// dy and of the saved input, and `extra` with the ops matched.
bool matchGradientValue(Value dx, BackwardCandidate &c, Value &dyInside,
                        Value &savedInside, Value &savedF32,
                        llvm::DenseSet<Operation *> &extra) {
  auto dxType = cast<RankedTensorType>(dx.getType());
  Type elt = dxType.getElementType();
  if (auto sel = dx.getDefiningOp<ls2::SelectOp>()) {
    std::optional<double> zero = constantValue(sel.getOnFalse());
    if (!zero || *zero != 0.0)
      return false;
    c.activation = ls2::GemmActivation::ReluGrad;
    dyInside = sel.getOnTrue();
    savedInside = sel.getPred();
    extra.insert(sel);
    return true;
  }
  Value g = dx;
  llvm::DenseSet<Operation *> mine;
  if (!elt.isF32()) {
    auto castOut = dx.getDefiningOp<ls2::CastOp>();
    if (!castOut)
      return false;
    g = castOut.getInput();
    mine.insert(castOut);
  }
  Matcher m(2);
  if (!cast<RankedTensorType>(g.getType()).getElementType().isF32() ||
      !m.match(g, mul(leaf(1), geluTanhDerivativePattern(leaf(0)))))
    return false;
  for (Operation *op : m.ops)
    mine.insert(op);
  dyInside = m.get(1);
  savedF32 = savedInside = m.get(0);
  if (!elt.isF32()) {
    auto dyCast = dyInside.getDefiningOp<ls2::CastOp>();
    auto xCast = savedInside.getDefiningOp<ls2::CastOp>();
    if (!dyCast || !xCast || dyCast.getInput().getType() != dxType ||
        xCast.getInput().getType() != dxType)
      return false;
    mine.insert(dyCast);
    mine.insert(xCast);
    dyInside = dyCast.getInput();
    savedInside = xCast.getInput();
  }
  c.activation = ls2::GemmActivation::GeluTanhGrad;
  for (Operation *op : mine)
    extra.insert(op);
  return true;
}

/// Matches a gradient group: dx (matchGradientValue) with dy a GEMM's
/// result, optionally db = reduce_sum(dx, [0]); a GELU gradient's group may
/// also yield the GELU of the same input, recomputed for the backward's
/// other readers (a weight gradient), which then stays a loop of its own.
std::optional<BackwardCandidate> matchBackward(ls2::FusionOp f,
                                               std::string &why) {
  if (std::string specific = specificReason(f); !specific.empty()) {
    why = specific;
    return std::nullopt;
  }
  if (f.getKind() != ls2::FusionKind::Loop &&
      f.getKind() != ls2::FusionKind::ColumnReduction) {
    why = "the group is a row reduction";
    return std::nullopt;
  }
  Block &body = f.getBody().front();
  auto yield = cast<ls2::YieldOp>(body.getTerminator());
  auto values = yield.getValues();
  BackwardCandidate c;
  c.group = f;
  ls2::ReduceSumOp sum;
  for (auto [i, v] : llvm::enumerate(values))
    if (auto s = v.getDefiningOp<ls2::ReduceSumOp>()) {
      if (sum) {
        why = "the group yields two sums";
        return std::nullopt;
      }
      sum = s;
      c.biasGrad = static_cast<int>(i);
    }
  // The gradient: the yielded value that matches.
  Value dx, dyInside, savedInside, savedF32;
  llvm::DenseSet<Operation *> extra;
  for (auto [i, v] : llvm::enumerate(values)) {
    if (static_cast<int>(i) == c.biasGrad ||
        cast<RankedTensorType>(v.getType()).getRank() != 2)
      continue;
    llvm::DenseSet<Operation *> matched;
    if (matchGradientValue(v, c, dyInside, savedInside, savedF32, matched)) {
      dx = v;
      c.out = i;
      extra = std::move(matched);
      break;
    }
  }
  if (!dx) {
    why = bodyReason(f);
    return std::nullopt;
  }
  auto dxType = cast<RankedTensorType>(dx.getType());
  Type elt = dxType.getElementType();
  if (sum) {
    if (sum.getInput() != dx || sum.getKeepDims() || sum.getAxes().size() != 1 ||
        sum.getAxes()[0] != 0 ||
        cast<RankedTensorType>(sum.getType()).getElementType() != elt) {
      why = "the group's sum is not the gradient's row sum in its dtype";
      return std::nullopt;
    }
    extra.insert(sum);
  }
  // Other yields: the GELU of the saved input, recomputed.
  for (auto [i, v] : llvm::enumerate(values)) {
    if (i == c.out || static_cast<int>(i) == c.biasGrad)
      continue;
    bool recomputed = false;
    if (c.activation == ls2::GemmActivation::GeluTanhGrad) {
      Value g = v;
      llvm::DenseSet<Operation *> mine;
      if (auto castOut = v.getDefiningOp<ls2::CastOp>();
          castOut && !cast<RankedTensorType>(v.getType()).getElementType().isF32()) {
        g = castOut.getInput();
        mine.insert(castOut);
      }
      Matcher m(1);
      if (cast<RankedTensorType>(g.getType()).getElementType().isF32() &&
          m.match(g, geluTanhPattern(leaf(0))) &&
          (m.get(0) == savedF32 ||
           beforeWidening(m.get(0)) == beforeWidening(savedF32))) {
        if (Operation *w = m.get(0).getDefiningOp(); w && m.get(0) != savedF32)
          mine.insert(w);
        for (Operation *op : m.ops)
          mine.insert(op);
        for (Operation *op : mine)
          extra.insert(op);
        c.recomputed.push_back(i);
        recomputed = true;
      }
    }
    if (!recomputed) {
      why = "the group yields more than a gradient and its row sums";
      return std::nullopt;
    }
  }
  for (Operation *op : bodyOps(f))
    if (!extra.contains(op)) {
      why = bodyReason(f);
      return std::nullopt;
    }
  if (c.activation == ls2::GemmActivation::GeluTanhGrad &&
      savedInside.getType() != dxType) {
    why = "the GELU input and the gradient differ in type";
    return std::nullopt;
  }
  Value dy = outside(f, dyInside);
  if (!dy || !outside(f, savedInside)) {
    why = "the gradient does not come straight from a GEMM and a saved "
          "value (dropout between them?)";
    return std::nullopt;
  }
  if (dy.getType() != dxType) {
    why = "the GEMM's result and the gradient differ in type";
    return std::nullopt;
  }
  c.savedInput = cast<BlockArgument>(savedInside).getArgNumber();
  c.gemm = soleGemmResult(dy, f, why);
  if (!c.gemm)
    return std::nullopt;
  return c;
}

/// cuBLASLt's GELU aux (the GELU input, [M, N] row-major, leading dimension
/// N) needs N a multiple of 8 and a buffer of its own.
bool geluAuxAllowed(Value saved, std::string &why) {
  auto t = cast<RankedTensorType>(saved.getType());
  int64_t n = t.getDimSize(1);
  if (ShapedType::isDynamic(n) || n % 8 != 0) {
    why = "cuBLASLt's GELU aux needs a row length N that is a multiple of 8, "
          "got " + (ShapedType::isDynamic(n) ? std::string("?") : std::to_string(n));
    return false;
  }
  if (Operation *def = saved.getDefiningOp(); def && isView(def)) {
    why = "the GELU input is a view, not a buffer of its own";
    return false;
  }
  return true;
}

const char *cublasName(ls2::GemmActivation a, bool bias, bool aux, bool bgrad) {
  switch (a) {
  case ls2::GemmActivation::Relu:
    return aux ? (bias ? "RELU_AUX_BIAS" : "RELU_AUX")
               : (bias ? "RELU_BIAS" : "RELU");
  case ls2::GemmActivation::GeluTanh:
    return aux ? (bias ? "GELU_AUX_BIAS" : "GELU_AUX")
               : (bias ? "GELU_BIAS" : "GELU");
  case ls2::GemmActivation::ReluGrad:
    return bgrad ? "DRELU_BGRAD" : "DRELU";
  case ls2::GemmActivation::GeluTanhGrad:
    return bgrad ? "DGELU_BGRAD" : "DGELU";
  }
  return "?";
}

class Attacher {
public:
  Attacher(SmallVector<ls2::FusionOp> &made, EpilogueReport *report, bool geluGradEpilogue,
           const llvm::DenseSet<Operation *> *keepPlain)
      : made(made), report(report), geluGradEpilogue(geluGradEpilogue), keepPlain(keepPlain) {}

  void run() {
    attachActivations();
    attachBiasesOfKernels();
    attachBiasAndBiasGrad();
    SmallVector<ls2::FusionOp> kept;
    for (ls2::FusionOp f : made)
      if (!erased.contains(f.getOperation()))
        kept.push_back(f);
    made = std::move(kept);
  }

private:
  SmallVector<ls2::FusionOp> &made;
  EpilogueReport *report;
  bool geluGradEpilogue;
  const llvm::DenseSet<Operation *> *keepPlain;
  llvm::DenseSet<Operation *> erased;

  /// A GEMM the backward recomputes, or a backward copy of one: an
  /// epilogue skips rounding the product before the bias, so one of the
  /// pair with an epilogue and one without would give different bits.
  bool mustStayPlain(ls2::MatmulOp m, ls2::FusionOp f) {
    if (!keepPlain || !keepPlain->contains(m.getOperation()))
      return false;
    refused(f, "its GEMM is recomputed by activation checkpointing (or is such a copy); the "
               "forward and its copy must compute the same bits");
    return true;
  }

  void attached(ls2::FusionOp f, ls2::MatmulOp m, const std::string &what) {
    if (report)
      report->attached.push_back(describe(f) + " -> " + describe(m) + ": " + what);
  }
  void refused(ls2::FusionOp f, const std::string &why) {
    if (report)
      report->refused.push_back(describe(f) + ": " + why);
  }

  static ls2::MatmulOp rebuild(ls2::MatmulOp m, Type result, Type biasGrad,
                               Type auxOut, Value bias, Value aux,
                               std::optional<ls2::GemmActivation> act) {
    OpBuilder b(m);
    auto n = b.create<ls2::MatmulOp>(
        m.getLoc(), result, biasGrad, auxOut, m.getA(), m.getB(), bias, aux,
        m.getTransposeA(), m.getTransposeB(), m.getAccTypeAttr(),
        act ? ls2::GemmActivationAttr::get(m.getContext(), *act)
            : ls2::GemmActivationAttr());
    for (NamedAttribute a : m->getDiscardableAttrs())
      n->setAttr(a.getName(), a.getValue());
    return n;
  }

  void eraseGroup(ls2::FusionOp f) {
    erased.insert(f.getOperation());
    f.erase();
  }

  /// Forward activations (with the ReLU gradients that read their masks)
  /// and the GELU gradients.
  void attachActivations() {
    // ReLU gradients are attached with the ReLU whose mask they read.
    llvm::DenseMap<Operation *, BackwardCandidate> reluGrads;
    std::map<Operation *, std::string> reluGradWhy;
    SmallVector<ForwardCandidate> forwards;
    SmallVector<BackwardCandidate> geluGrads;
    for (ls2::FusionOp f : made) {
      if (!looksLikeActivation(f))
        continue;
      std::string fwhy, bwhy;
      if (auto c = matchForward(f, fwhy)) {
        forwards.push_back(*c);
        continue;
      }
      if (auto c = matchBackward(f, bwhy)) {
        if (c->activation == ls2::GemmActivation::ReluGrad)
          reluGrads[f.getOperation()] = *c;
        else
          geluGrads.push_back(*c);
        continue;
      }
      // Report the reason of the side that read a GEMM's result.
      bool readsGemm = llvm::any_of(f.getInputs(), [](Value v) {
        return v.getDefiningOp<ls2::MatmulOp>() != nullptr;
      });
      if (readsGemm)
        refused(f, f.getKind() != ls2::FusionKind::Loop || fwhy == bwhy
                       ? bwhy
                       : "as an activation: " + fwhy + "; as a gradient: " +
                             bwhy);
    }

    for (ForwardCandidate &c : forwards) {
      if (mustStayPlain(c.gemm, c.group))
        continue;
      bool relu = c.activation == ls2::GemmActivation::Relu;
      Value saved = c.saved >= 0 ? c.group.getResult(c.saved) : Value();
      SmallVector<BackwardCandidate> grads;
      std::string why;
      if (saved && relu) {
        // Every reader of the mask must be a ReLU gradient that attaches.
        for (Operation *u : saved.getUsers()) {
          auto it = reluGrads.find(u);
          if (it == reluGrads.end() || it->second.saved() != saved) {
            why = "its mask is read by " + describe(u) +
                  ", which is not a ReLU gradient of a GEMM's result (the "
                  "mask becomes cuBLASLt's bit mask)";
            break;
          }
          if (llvm::none_of(grads, [&](const BackwardCandidate &g) {
                return g.group == it->second.group;
              }))
            grads.push_back(it->second);
        }
      }
      if (saved && !relu)
        geluAuxAllowed(saved, why);
      if (!why.empty()) {
        refused(c.group, why);
        for (BackwardCandidate &g : grads)
          reluGradWhy[g.group.getOperation()] =
              "the ReLU whose mask it reads did not attach to its GEMM";
        continue;
      }
      ls2::MatmulOp m = c.gemm;
      auto outType = cast<RankedTensorType>(c.group.getResult(c.out).getType());
      Type auxType;
      if (saved)
        auxType = relu ? RankedTensorType::get(
                             {outType.getDimSize(0),
                              ls2::MatmulOp::reluMaskWords(outType.getDimSize(1))},
                             IntegerType::get(m.getContext(), 32))
                       : Type(outType);
      Value bias = c.bias ? c.bias : m.getBias();
      ls2::MatmulOp n = rebuild(m, outType, Type(), auxType, bias, Value(),
                                c.activation);
      c.group.getResult(c.out).replaceAllUsesWith(n.getResult());
      attached(c.group, n,
               std::string(cublasName(c.activation, bool(bias), bool(saved), false)));
      if (saved && !relu)
        saved.replaceAllUsesWith(n.getAuxOut());
      for (BackwardCandidate &g : grads) {
        attachGradient(g, n.getAuxOut());
        reluGrads.erase(g.group.getOperation());
      }
      eraseGroup(c.group);
      m.erase();
    }
    for (auto &[op, g] : reluGrads) {
      auto it = reluGradWhy.find(op);
      refused(g.group, it != reluGradWhy.end()
                           ? it->second
                           : "its mask does not come from a ReLU that attaches "
                             "to a GEMM (cuBLASLt's DRELU reads its bit mask)");
    }
    for (BackwardCandidate &g : geluGrads) {
      std::string why;
      if (!geluGradEpilogue) {
        refused(g.group, "cuBLASLt's DGELU_BGRAD is slower than the GEMM and a generated kernel "
                         "(170 against 620 TFLOP/s for the FFN's dgrad on an H200; ls2-fuse's "
                         "gelu-grad-epilogue option attaches it)");
        continue;
      }
      if (!geluAuxAllowed(g.saved(), why)) {
        refused(g.group, why);
        continue;
      }
      attachGradient(g, g.saved());
    }
  }

  /// The group's results `indices` (the GELU of its input `input`,
  /// recomputed) as a loop of their own, which replaces them.
  void splitRecomputed(ls2::FusionOp f, unsigned input,
                       ArrayRef<unsigned> indices) {
    Block &body = f.getBody().front();
    auto yield = cast<ls2::YieldOp>(body.getTerminator());
    // The ops the recomputed values need, in body order.
    llvm::DenseSet<Operation *> needed;
    SmallVector<Value> work;
    for (unsigned i : indices)
      work.push_back(yield.getValues()[i]);
    while (!work.empty()) {
      Value v = work.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (!def || !needed.insert(def).second)
        continue;
      for (Value o : def->getOperands())
        work.push_back(o);
    }
    OpBuilder b(f);
    SmallVector<Type> types;
    for (unsigned i : indices)
      types.push_back(f.getResult(i).getType());
    Value in = f.getInputs()[input];
    // The name keeps the group's index (unique in the function).
    StringRef name = f.getGroupName();
    std::string index = name.substr(name.find_last_not_of("0123456789") + 1).str();
    auto loop = b.create<ls2::FusionOp>(f.getLoc(), types, "gelu_" + index,
                                        ls2::FusionKind::Loop, ValueRange{in});
    Block *block = new Block();
    loop.getBody().push_back(block);
    IRMapping map;
    map.map(body.getArgument(input), block->addArgument(in.getType(), f.getLoc()));
    OpBuilder inner = OpBuilder::atBlockEnd(block);
    for (Operation &op : body.without_terminator())
      if (needed.contains(&op))
        inner.clone(op, map);
    SmallVector<Value> yielded;
    for (unsigned i : indices)
      yielded.push_back(map.lookup(yield.getValues()[i]));
    inner.create<ls2::YieldOp>(f.getLoc(), yielded);
    loop->setAttr("ls2.bytes_saved",
                  IntegerAttr::get(IntegerType::get(f.getContext(), 64), 0));
    erased.erase(loop.getOperation()); // it may take an erased group's address
    for (auto [k, i] : llvm::enumerate(indices))
      f.getResult(i).replaceAllUsesWith(loop.getResult(k));
    made.push_back(loop);
  }

  void attachGradient(BackwardCandidate &g, Value aux) {
    if (!g.recomputed.empty())
      splitRecomputed(g.group, g.savedInput, g.recomputed);
    ls2::MatmulOp m = g.gemm;
    Type dxType = g.group.getResult(g.out).getType();
    Type dbType = g.biasGrad >= 0 ? g.group.getResult(g.biasGrad).getType() : Type();
    ls2::MatmulOp n = rebuild(m, dxType, dbType, Type(), Value(), aux,
                              g.activation);
    g.group.getResult(g.out).replaceAllUsesWith(n.getResult());
    if (g.biasGrad >= 0)
      g.group.getResult(g.biasGrad).replaceAllUsesWith(n.getBiasGrad());
    attached(g.group, n,
             std::string(cublasName(g.activation, false, true, g.biasGrad >= 0)));
    eraseGroup(g.group);
    m.erase();
  }

  /// A group that adds a row-broadcast bias to a GEMM's result and then
  /// computes what no epilogue does (the erf GELU): the bias becomes the
  /// GEMM's BIAS epilogue and the group reads the biased product. The
  /// biased values the group wrote for the backward are the GEMM's result
  /// now, so the kernel writes one tensor fewer (BERT-base's and ViT-B's
  /// FFN: 3 x 100 and 3 x 77 MB a layer -> 2 x).
  void attachBiasesOfKernels() {
    for (ls2::FusionOp &f : made) {
      // A group of the bias add alone is attachBiasAndBiasGrad's.
      if (erased.contains(f.getOperation()) || bodyOps(f).size() <= 2)
        continue;
      Block &body = f.getBody().front();
      for (Operation &op : body.without_terminator()) {
        auto addOp = dyn_cast<ls2::AddOp>(op);
        if (!addOp)
          continue;
        // A [T, N] product and a bias of N of its element type (cuBLASLt's
        // BIAS rule).
        auto [x, bias, bc] = matchBiasAdd(addOp);
        if (!x)
          continue;
        auto type = cast<RankedTensorType>(x.getType());
        if (type.getRank() != 2 ||
            bias.getType() != RankedTensorType::get({type.getDimSize(1)}, type.getElementType()))
          continue;
        // The unbiased product must have no other reader, in the group or out,
        // and the group must write the biased one (for the backward): else
        // the epilogue would only move an add from the kernel into the GEMM,
        // which costs the GEMM more (H200: 12608x2304x768 bf16 62 -> 73 us).
        auto yield = cast<ls2::YieldOp>(body.getTerminator());
        if (!x.hasOneUse() || !llvm::is_contained(yield.getValues(), addOp.getResult()))
          continue;
        Value product = f.getInputs()[x.getArgNumber()];
        auto m = product.getDefiningOp<ls2::MatmulOp>();
        if (!m || product != m.getResult() || !product.hasOneUse() || m.getBias() ||
            m.getActivation() || mustStayPlain(m, f))
          continue;
        ls2::MatmulOp n = rebuild(m, m.getResult().getType(),
                                  m.getBiasGrad() ? m.getBiasGrad().getType() : Type(), Type(),
                                  f.getInputs()[bias.getArgNumber()], Value(), std::nullopt);
        m.getResult().replaceAllUsesWith(n.getResult());
        if (m.getBiasGrad())
          m.getBiasGrad().replaceAllUsesWith(n.getBiasGrad());
        m.erase();
        addOp.getResult().replaceAllUsesWith(x);
        addOp.erase();
        if (bc->use_empty())
          bc->erase();
        attached(f, n, "BIAS (the rest of the group stays a kernel)");
        f = withoutPassThrough(f);
        // A new op may take an erased one's address (run() filters by it).
        erased.erase(f.getOperation());
        break;
      }
    }
  }

  /// `f` without the results that yield an input as it is (their readers
  /// read the input) and without the inputs its body no longer reads.
  static ls2::FusionOp withoutPassThrough(ls2::FusionOp f) {
    Block &body = f.getBody().front();
    auto yield = cast<ls2::YieldOp>(body.getTerminator());
    SmallVector<Value> yielded, results;
    for (auto [i, v] : llvm::enumerate(yield.getValues())) {
      auto arg = dyn_cast<BlockArgument>(v);
      if (arg && arg.getOwner() == &body) {
        f.getResult(i).replaceAllUsesWith(f.getInputs()[arg.getArgNumber()]);
        continue;
      }
      yielded.push_back(v);
      results.push_back(f.getResult(i));
    }
    OpBuilder(yield).create<ls2::YieldOp>(yield.getLoc(), yielded);
    yield.erase();
    llvm::BitVector unused(body.getNumArguments());
    SmallVector<Value> inputs;
    for (BlockArgument arg : body.getArguments()) {
      unused[arg.getArgNumber()] = arg.use_empty();
      if (!arg.use_empty())
        inputs.push_back(f.getInputs()[arg.getArgNumber()]);
    }
    body.eraseArguments(unused);
    OpBuilder b(f);
    auto g = b.create<ls2::FusionOp>(f.getLoc(), ValueRange(yielded).getTypes(),
                                     f.getGroupName(), f.getKind(), inputs);
    for (NamedAttribute a : f->getDiscardableAttrs())
      g->setAttr(a.getName(), a.getValue());
    g.getBody().takeBody(f.getBody());
    for (auto [old, now] : llvm::zip(results, g.getResults()))
      old.replaceAllUsesWith(now);
    f.erase();
    return g;
  }

  /// A loop that only adds a row-broadcast bias to a GEMM's result, and a
  /// column group that only sums the rows of a weight-gradient GEMM's `a`,
  /// become that GEMM's cuBLASLt epilogues (bias, BGRADA).
  void attachBiasAndBiasGrad() {
    auto rebuildPlain = [&](ls2::MatmulOp m, Value bias, Type biasGrad) {
      ls2::MatmulOp n = rebuild(m, m.getResult().getType(), biasGrad, Type(),
                                bias ? bias : m.getBias(), Value(), std::nullopt);
      m.getResult().replaceAllUsesWith(n.getResult());
      if (m.getBiasGrad())
        m.getBiasGrad().replaceAllUsesWith(n.getBiasGrad());
      m.erase();
      return n;
    };
    for (ls2::FusionOp f : made) {
      if (erased.contains(f.getOperation()))
        continue;
      SmallVector<Operation *> ops = bodyOps(f);
      Block &body = f.getBody().front();
      auto yield = cast<ls2::YieldOp>(body.getTerminator());
      bool done = false;
      if (f.getKind() == ls2::FusionKind::Loop && ops.size() == 2 &&
          f.getNumResults() == 1) {
        auto addOp = dyn_cast<ls2::AddOp>(ops[1]);
        if (isa<ls2::BroadcastOp>(ops[0]) && addOp &&
            yield.getValues()[0] == addOp.getResult()) {
          auto [xArg, biasArg, bc] = matchBiasAdd(addOp);
          if (xArg && bc == ops[0]) {
            Value gemm = f.getInputs()[xArg.getArgNumber()];
            auto m = gemm.getDefiningOp<ls2::MatmulOp>();
            if (m && gemm == m.getResult() && !m.getBias() &&
                !m.getActivation() && gemm.hasOneUse() && !mustStayPlain(m, f)) {
              ls2::MatmulOp n = rebuildPlain(
                  m, f.getInputs()[biasArg.getArgNumber()],
                  m.getBiasGrad() ? m.getBiasGrad().getType() : Type());
              f.getResult(0).replaceAllUsesWith(n.getResult());
              attached(f, n, "BIAS");
              done = true;
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
            if (!m || m.getA() != rows || !m.getTransposeA() ||
                m.getBiasGrad() || m.getActivation())
              continue;
            ls2::MatmulOp n = rebuildPlain(m, Value(), f.getResult(0).getType());
            f.getResult(0).replaceAllUsesWith(n.getBiasGrad());
            attached(f, n, "BGRADA");
            done = true;
            break;
          }
        }
      }
      if (done)
        eraseGroup(f);
    }
  }
};

} // namespace

void attachEpilogues(SmallVector<ls2::FusionOp> &made, EpilogueReport *report,
                     bool geluGradEpilogue, const llvm::DenseSet<Operation *> *keepPlain) {
  Attacher(made, report, geluGradEpilogue, keepPlain).run();
}

} // namespace ls2c::fusion
