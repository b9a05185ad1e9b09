//===- ElementalEmitter.cpp - CUDA C++ for one element of a fusion body ---===//

#include "ElementalEmitter.h"
#include "RowReductionPatterns.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cctype>
#include <cmath>
#include <cstdio>

using namespace mlir;

namespace ls2c::codegen {

std::string atom(const std::string &text) {
  // Already one parenthesized group?
  if (text.size() > 1 && text.front() == '(') {
    int depth = 0;
    size_t i = 0;
    for (; i < text.size(); ++i) {
      depth += text[i] == '(' ? 1 : text[i] == ')' ? -1 : 0;
      if (depth == 0)
        break;
    }
    if (i == text.size() - 1)
      return text;
  }
  for (char c : text)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      return "(" + text + ")";
  return text;
}

namespace {

/// A splat constant, or a broadcast of one, below 0.
bool negativeConstant(Value v) {
  if (auto b = v.getDefiningOp<ls2::BroadcastOp>())
    v = b.getInput();
  auto c = v.getDefiningOp<ls2::ConstantOp>();
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
  return dense && dense.isSplat() && isa<FloatType>(dense.getElementType()) &&
         dense.getSplatValue<APFloat>().isNegative() &&
         !dense.getSplatValue<APFloat>().isNaN();
}

/// Whether `v` is <= 0 (or NaN) wherever it is defined: x - max(x) over a
/// row, -(x * x), or x * x times a negative constant.
bool provablyNonPositive(Value v) {
  if (isBelowRowMax(v))
    return true;
  auto square = [](Value x) {
    auto m = x.getDefiningOp<ls2::MulOp>();
    return m && m.getLhs() == m.getRhs();
  };
  if (auto n = v.getDefiningOp<ls2::NegOp>())
    return square(n.getOperand());
  if (auto m = v.getDefiningOp<ls2::MulOp>())
    return (square(m.getLhs()) && negativeConstant(m.getRhs())) ||
           (square(m.getRhs()) && negativeConstant(m.getLhs()));
  return false;
}

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Whether `v` is computed from values stored in 16 bits (bf16, f16) by
/// casts, broadcasts and arithmetic with constants alone (the tanh GELU
/// gradient's argument c (x + 0.044715 x^3) of a bf16 x): its precision is
/// bounded by theirs, a relative 2^-8 (bf16) or 2^-11 (f16) and more.
bool fromSixteenBitValues(Value v, int depth = 8) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t)
    return false;
  if (t.getElementType().isBF16() || t.getElementType().isF16())
    return true;
  Operation *d = v.getDefiningOp();
  if (!d || depth == 0)
    return false;
  if (isa<ls2::ConstantOp>(d))
    return true;
  if (!isa<ls2::CastOp, ls2::BroadcastOp, ls2::AddOp, ls2::SubOp, ls2::MulOp, ls2::NegOp>(d))
    return false;
  return llvm::all_of(d->getOperands(),
                      [&](Value o) { return fromSixteenBitValues(o, depth - 1); });
}

bool isFloatType(Type t) { return isa<FloatType>(t); }

} // namespace

Value storedValue(Value v) {
  auto c = v.getDefiningOp<ls2::CastOp>();
  if (!c)
    return v;
  Type to = tensorType(v).getElementType(), from = tensorType(c.getInput()).getElementType();
  return (to.isF16() || to.isBF16()) && from.isF32() ? c.getInput() : v;
}

namespace {

std::string floatLiteral(double x, bool isDouble) {
  if (std::isnan(x))
    return isDouble ? "__longlong_as_double(0x7ff8000000000000LL)"
                    : "__int_as_float(0x7fc00000)";
  if (std::isinf(x)) {
    if (isDouble)
      return x > 0 ? "__longlong_as_double(0x7ff0000000000000LL)"
                   : "__longlong_as_double((long long)0xfff0000000000000ULL)";
    return x > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  }
  char buf[64];
  if (isDouble) {
    std::snprintf(buf, sizeof buf, "%.17g", x);
  } else {
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(static_cast<float>(x)));
  }
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos)
    s += ".0";
  return isDouble ? s : s + "f";
}

/// "a * b" with the trivial cases folded so emitted indices stay readable.
std::string mulText(const std::string &a, const std::string &b) {
  if (a == "0" || b == "0")
    return "0";
  if (a == "1")
    return b;
  if (b == "1")
    return a;
  return atom(a) + " * " + atom(b);
}

std::string addText(const std::string &a, const std::string &b) {
  if (a == "0")
    return b;
  if (b == "0")
    return a;
  return a + " + " + b;
}

} // namespace

int levelOfIndex(const Index &index) {
  int level = kKernelLevel;
  for (const IndexExpr &e : index)
    level = std::max(level, e.level);
  return level;
}

std::string computeType(Type t) {
  if (t.isF16() || t.isBF16() || t.isF32())
    return "float";
  if (t.isF64())
    return "double";
  if (t.isInteger(1))
    return "bool";
  if (t.isInteger(32))
    return "int";
  if (t.isInteger(64) || t.isIndex())
    return "long long";
  return "";
}

std::string storageType(Type t) {
  if (t.isF16())
    return "__half";
  if (t.isBF16())
    return "__nv_bfloat16";
  if (t.isInteger(1))
    return "unsigned char";
  return computeType(t);
}

std::optional<runtime::DType> dtypeOf(Type t) {
  using runtime::DType;
  if (t.isF32())
    return DType::F32;
  if (t.isF16())
    return DType::F16;
  if (t.isBF16())
    return DType::BF16;
  if (t.isF64())
    return DType::F64;
  if (t.isInteger(1))
    return DType::I1;
  if (t.isInteger(32))
    return DType::I32;
  if (t.isInteger(64))
    return DType::I64;
  return std::nullopt;
}

ElementalEmitter::ElementalEmitter(
    ls2::FusionOp fusion, const SymbolicDims &dims,
    std::vector<std::string> argNames,
    std::function<std::string(const runtime::Dim &)> dimName)
    : fusion(fusion), dims(dims), argNames(std::move(argNames)),
      dimName(std::move(dimName)) {
  scopes.push_back(Scope{kKernelLevel, 1, "", {}});
}

void ElementalEmitter::pushScope(int level, int indent) {
  scopes.push_back(Scope{level, indent, "", {}});
}

std::string ElementalEmitter::popScope() {
  std::string code = std::move(scopes.back().code);
  scopes.pop_back();
  return code;
}

std::string ElementalEmitter::takeKernelScope() {
  return std::move(scopes.front().code);
}

void ElementalEmitter::line(const std::string &text) {
  Scope &s = scopes.back();
  s.code += std::string(2 * s.indent, ' ') + text + "\n";
}

void ElementalEmitter::lines(const std::string &text) {
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos)
      end = text.size();
    std::string ln = text.substr(pos, end - pos);
    // Pragmas stay at column 0, as clang-format leaves them.
    if (ln.rfind("#pragma", 0) == 0)
      scopes.back().code += ln + "\n";
    else
      line(ln);
    pos = end + 1;
  }
}

void ElementalEmitter::raw(const std::string &text) { scopes.back().code += text; }

unsigned ElementalEmitter::targetScope(int level) const {
  for (unsigned i = scopes.size(); i-- > 0;)
    if (scopes[i].level <= level)
      return i;
  return 0;
}

void ElementalEmitter::lineAt(int level, const std::string &text) {
  Scope &s = scopes[targetScope(level)];
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos)
      end = text.size();
    std::string ln = text.substr(pos, end - pos);
    s.code += (ln.rfind("#pragma", 0) == 0 ? "" : std::string(2 * s.indent, ' ')) +
              ln + "\n";
    pos = end + 1;
  }
}

std::string ElementalEmitter::fresh(const std::string &prefix) {
  return prefix + std::to_string(counter++);
}

std::vector<std::string> ElementalEmitter::dimTexts(Value value) {
  std::vector<std::string> out;
  for (const runtime::Dim &d : dims.shape(value))
    out.push_back(dimName(d));
  return out;
}

IndexExpr ElementalEmitter::flatten(Value value, const Index &index) {
  std::vector<std::string> sizes = dimTexts(value);
  IndexExpr flat{"0", levelOfIndex(index)};
  std::string stride = "1";
  for (size_t d = sizes.size(); d-- > 0;) {
    flat.text = addText(mulText(index[d].text, stride), flat.text);
    stride = mulText(stride, sizes[d]);
  }
  if (flat.text.find(' ') != std::string::npos)
    flat.text = "(" + flat.text + ")";
  return flat;
}

IndexExpr ElementalEmitter::address(BlockArgument arg, const Index &index) {
  unsigned i = arg.getArgNumber();
  if (i >= argRowStrides.size() || argRowStrides[i].empty())
    return flatten(arg, index);
  if (index.size() != 2)
    throw EmitError{fusion, "reads a strided tensor that is not a matrix"};
  return {"(" + addText(mulText(index[0].text, argRowStrides[i]), index[1].text) + ")",
          levelOfIndex(index)};
}

Index delinearizeIndex(const std::vector<std::string> &sizes, const std::string &flat,
                       int level) {
  Index out(sizes.size());
  std::string stride = "1";
  for (size_t d = sizes.size(); d-- > 0;) {
    // The stride may be a product: it divides as a whole.
    std::string q = stride == "1" ? flat : "(" + flat + " / " + atom(stride) + ")";
    // The outermost dim needs no modulo: the flat offset is in range.
    out[d].text = d == 0 ? q : "(" + q + " % " + atom(sizes[d]) + ")";
    if (sizes[d] == "1")
      out[d].text = "0";
    out[d].level = level;
    stride = mulText(stride, sizes[d]);
  }
  return out;
}

Index ElementalEmitter::delinearize(Value value, const IndexExpr &flat) {
  return delinearizeIndex(dimTexts(value), flat.text, flat.level);
}

std::string ElementalEmitter::key(Value value, const Index &index) {
  std::string k = std::to_string(reinterpret_cast<uintptr_t>(value.getAsOpaquePointer()));
  for (const IndexExpr &e : index)
    k += "|" + e.text;
  return k;
}

std::optional<SmallVector<Index, 3>>
ElementalEmitter::operandIndices(Operation *op, const Index &index) {
  SmallVector<Index, 3> out;
  auto sameOrScalar = [&](Value operand) {
    return tensorType(operand).getRank() == 0 ? Index{} : index;
  };
  if (op->hasTrait<OpTrait::OneResult>() &&
      (isa<ls2::AddOp, ls2::SubOp, ls2::MulOp, ls2::DivOp, ls2::MaxOp,
           ls2::MinOp, ls2::CompareOp, ls2::SelectOp, ls2::CastOp,
           ls2::NegOp, ls2::ExpOp, ls2::LogOp, ls2::TanhOp, ls2::ErfOp,
           ls2::SqrtOp, ls2::RsqrtOp, ls2::SinOp, ls2::CosOp>(op))) {
    for (Value operand : op->getOperands())
      out.push_back(sameOrScalar(operand));
    return out;
  }
  if (auto b = dyn_cast<ls2::BroadcastOp>(op)) {
    // Operand dim k is result dim dims[k]; a size-1 operand dim is
    // stretched, so it is read at 0.
    auto in = tensorType(b.getInput());
    auto res = tensorType(b.getResult());
    Index operand;
    for (auto [k, d] : llvm::enumerate(b.getDims())) {
      if (in.getDimSize(k) == 1 && res.getDimSize(d) != 1)
        operand.push_back(IndexExpr{"0", kKernelLevel});
      else
        operand.push_back(index[d]);
    }
    out.push_back(operand);
    return out;
  }
  if (auto t = dyn_cast<ls2::TransposeOp>(op)) {
    ArrayRef<int64_t> perm = t.getPermutation();
    Index in(perm.size());
    for (auto [d, p] : llvm::enumerate(perm))
      in[p] = index[d];
    out.push_back(in);
    return out;
  }
  if (auto s = dyn_cast<ls2::SliceOp>(op)) {
    Index in = index;
    in[s.getAxis()].text = addText(index[s.getAxis()].text,
                                   std::to_string(s.getStart()));
    if (in[s.getAxis()].text.find(' ') != std::string::npos)
      in[s.getAxis()].text = "(" + in[s.getAxis()].text + ")";
    out.push_back(in);
    return out;
  }
  if (auto r = dyn_cast<ls2::ReshapeOp>(op)) {
    out.push_back(delinearize(r.getInput(), flatten(r.getResult(), index)));
    return out;
  }
  return std::nullopt;
}

int ElementalEmitter::levelOf(Value value, const Index &index) {
  std::string k = key(value, index);
  auto it = levelMemo.find(k);
  if (it != levelMemo.end())
    return it->second;
  int level = levelOfIndex(index);
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    // A leaf: the level of its index.
  } else {
    Operation *op = value.getDefiningOp();
    if (auto indices = operandIndices(op, index)) {
      for (auto [operand, idx] : llvm::zip(op->getOperands(), *indices))
        level = std::max(level, levelOf(operand, idx));
    } else if (auto g = dyn_cast<ls2::GatherOp>(op)) {
      int64_t idsRank = tensorType(g.getIds()).getRank();
      Index ids(index.begin(), index.begin() + idsRank);
      level = std::max(level, levelOf(g.getIds(), ids));
    } else if (auto c = dyn_cast<ls2::ConcatOp>(op)) {
      (void)c; // branches read at most the levels of the index
    } else if (isa<ls2::ReduceSumOp, ls2::ReduceMaxOp>(op)) {
      level = std::max(level, static_cast<int>(kOuterLevel));
    } else if (auto ru = dyn_cast<ls2::RandomUniformOp>(op)) {
      (void)ru;
    }
  }
  levelMemo[k] = level;
  return level;
}

int ElementalEmitter::invariantLevel(Value value, const Index &index) {
  // A broadcast reads its operand at fewer index components than its own
  // (levelOf counts them all).
  if (auto b = value.getDefiningOp<ls2::BroadcastOp>())
    if (auto indices = operandIndices(b, index))
      return invariantLevel(b.getInput(), (*indices)[0]);
  return levelOf(value, index);
}

std::string ElementalEmitter::define(Value value, const std::string &expr) {
  std::string name = fresh("v");
  Type et = isa<RankedTensorType>(value.getType())
                ? tensorType(value).getElementType()
                : value.getType();
  line("const " + computeType(et) + " " + name + " = " + expr + ";");
  return name;
}

std::string ElementalEmitter::streamText(ls2::RandomUniformOp op) {
  int64_t stream = static_cast<int64_t>(op.getStream());
  return constantName ? "(unsigned)" + constantName(stream)
                      : std::to_string(stream) + "u";
}

std::string ElementalEmitter::load(BlockArgument arg, const Index &index) {
  if (isa<IndexType>(arg.getType()))
    return argNames[arg.getArgNumber()];
  IndexExpr flat = address(arg, index);
  if (leafHook)
    if (auto hooked = leafHook(arg, index, flat))
      return *hooked;
  return "ls2_load(" + argNames[arg.getArgNumber()] + ", " + flat.text + ")";
}

const std::string *ElementalEmitter::memoized(const std::string &key) const {
  for (unsigned i = scopes.size(); i-- > 0;)
    if (auto it = scopes[i].memo.find(key); it != scopes[i].memo.end())
      return &it->second;
  return nullptr;
}

std::string ElementalEmitter::emit(Value value, const Index &index) {
  if (isa<IndexType>(value.getType())) {
    if (auto arg = dyn_cast<BlockArgument>(value))
      return argNames[arg.getArgNumber()];
    return dimName(dims.index(value));
  }
  std::string k = key(value, index);
  if (const std::string *seen = memoized(k))
    return *seen;
  int level = levelOf(value, index);
  unsigned target = targetScope(level);
  if (valueHook && !isa<BlockArgument>(value))
    if (auto hooked = valueHook(value, index)) {
      scopes[target].memo[k] = *hooked;
      return *hooked;
    }
  // Emit at the target scope with the scopes above it set aside: what is
  // defined there (inside an inner loop) is not visible at the target.
  std::vector<Scope> above(std::make_move_iterator(scopes.begin() + target + 1),
                           std::make_move_iterator(scopes.end()));
  scopes.resize(target + 1);
  std::string name;
  if (auto arg = dyn_cast<BlockArgument>(value))
    name = define(value, load(arg, index));
  else
    name = emitOp(value.getDefiningOp(), value, index);
  scopes[target].memo[k] = name;
  if (emittedHook && !isa<BlockArgument>(value))
    emittedHook(value, index, name, scopes[target].level);
  for (Scope &s : above)
    scopes.push_back(std::move(s));
  return name;
}

std::string ElementalEmitter::emitOp(Operation *op, Value value,
                                     const Index &index) {
  auto operandsAt = [&](const SmallVector<Index, 3> &indices) {
    SmallVector<std::string, 3> names;
    for (auto [operand, idx] : llvm::zip(op->getOperands(), indices))
      names.push_back(emit(operand, idx));
    return names;
  };
  Type et = tensorType(value).getElementType();
  bool isDouble = et.isF64();
  auto fn = [&](const char *f) {
    return std::string(f) + (isDouble ? "" : "f");
  };

  if (auto c = dyn_cast<ls2::ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!dense || !dense.isSplat())
      throw EmitError{op, "only splat constants are generated"};
    if (isFloatType(et))
      return define(value, floatLiteral(
          dense.getSplatValue<APFloat>().convertToDouble(), isDouble));
    if (et.isInteger(1))
      return define(value, dense.getSplatValue<bool>() ? "true" : "false");
    int64_t x = dense.getSplatValue<APInt>().getSExtValue();
    return define(value, std::to_string(x) + (et.isInteger(64) ? "LL" : ""));
  }
  if (auto iota = dyn_cast<ls2::IotaOp>(op))
    return define(value, "(" + computeType(et) + ")(" +
                             index[iota.getDimension()].text + ")");
  if (auto ru = dyn_cast<ls2::RandomUniformOp>(op)) {
    IndexExpr flat = flatten(value, index);
    if (randomHook)
      if (auto hooked = randomHook(ru, index, flat))
        return *hooked;
    std::string seed = emit(ru.getSeed(), {});
    std::string offset = emit(ru.getOffset(), {});
    return define(value, "ls2_uniform(" + seed + ", " + offset + ", " +
                             streamText(ru) + ", " + flat.text + ")");
  }
  if (isa<ls2::ReduceSumOp, ls2::ReduceMaxOp>(op)) {
    if (!reduceHook)
      throw EmitError{op, "a reduction this kernel kind cannot nest"};
    return reduceHook(op, index);
  }
  if (auto g = dyn_cast<ls2::GatherOp>(op)) {
    int64_t idsRank = tensorType(g.getIds()).getRank();
    Index ids(index.begin(), index.begin() + idsRank);
    std::string id = emit(g.getIds(), ids);
    auto table = dyn_cast<BlockArgument>(g.getTable());
    if (!table)
      throw EmitError{op, "gathers from a table computed in the kernel"};
    Index at;
    at.push_back(IndexExpr{"(long long)" + id, levelOf(g.getIds(), ids)});
    at.append(index.begin() + idsRank, index.end());
    IndexExpr flat = flatten(table, at);
    std::string load = "ls2_load(" + argNames[table.getArgNumber()] + ", " + flat.text + ")";
    if (auto fill = g.getFillValueAttr()) {
      // An id outside the table reads nothing: its row holds the fill value.
      double v = fill.getValueAsDouble();
      std::string literal = isFloatType(et) ? floatLiteral(v, et.isF64())
                                            : std::to_string(static_cast<long long>(v)) + "LL";
      return define(value, "(" + id + " >= 0 && (long long)" + id + " < " +
                               dimTexts(table)[0] + ") ? " + load + " : (" +
                               computeType(et) + ")" + literal);
    }
    return define(value, load);
  }
  if (auto c = dyn_cast<ls2::ConcatOp>(op)) {
    int64_t axis = c.getAxis();
    std::string name = fresh("v");
    line(computeType(et) + " " + name + ";");
    int level = levelOf(value, index);
    auto inputs = c.getInputs();
    std::vector<int64_t> starts{0}; // input k covers [starts[k], starts[k + 1])
    for (Value input : inputs)
      starts.push_back(starts.back() + tensorType(input).getDimSize(axis));
    // A binary search over the inputs' boundaries (the op has at least one
    // input): an element tests ceil(log2(n)) of them, where a chain of
    // `else if`s had the last input's elements test all n (a gradient
    // group's concat has up to kAccumulationGroupSlots inputs, 4 elements a
    // thread). Each branch is a scope of its own, so nothing emitted in one
    // is reused in another.
    auto branch = [&](auto &self, size_t lo, size_t hi) -> void {
      if (hi - lo == 1) {
        Index shifted = index;
        if (starts[lo] != 0)
          shifted[axis].text = "(" + index[axis].text + " - " +
                               std::to_string(starts[lo]) + ")";
        line(name + " = " + emit(inputs[lo], shifted) + ";");
        return;
      }
      size_t mid = lo + (hi - lo) / 2;
      line("if (" + index[axis].text + " < " + std::to_string(starts[mid]) + ") {");
      for (auto [from, to] : {std::pair{lo, mid}, std::pair{mid, hi}}) {
        if (from != lo)
          line("} else {");
        pushScope(level, scopes.back().indent + 1);
        self(self, from, to);
        std::string body = popScope();
        scopes.back().code += body;
      }
      line("}");
    };
    pushScope(level, scopes.back().indent);
    branch(branch, 0, inputs.size());
    std::string body = popScope();
    scopes.back().code += body;
    return name;
  }

  std::optional<SmallVector<Index, 3>> indices = operandIndices(op, index);
  if (!indices)
    throw EmitError{op, "is not supported inside a generated kernel"};
  SmallVector<std::string, 3> a = operandsAt(*indices);
  Type inType = op->getNumOperands() && isa<RankedTensorType>(op->getOperand(0).getType())
                    ? tensorType(op->getOperand(0)).getElementType()
                    : et;
  bool floatOperands = isFloatType(inType);

  auto unary = [&](const char *f) { return define(value, fn(f) + "(" + a[0] + ")"); };
  return llvm::TypeSwitch<Operation *, std::string>(op)
      .Case<ls2::BroadcastOp, ls2::TransposeOp, ls2::SliceOp, ls2::ReshapeOp>(
          [&](Operation *) { return a[0]; })
      .Case([&](ls2::NegOp) { return define(value, "-" + a[0]); })
      .Case([&](ls2::ExpOp e) {
        // exp of what cannot be positive (a softmax's x - max, the erf
        // GELU gradient's -x^2 / 2): the special-function unit's 2^x
        // (Prelude.cpp gives its error).
        if (computeType(et) == "float" && provablyNonPositive(e.getOperand()))
          return define(value, "ls2_exp_nonpositive(" + a[0] + ")");
        return unary("exp");
      })
      .Case([&](ls2::LogOp) { return unary("log"); })
      .Case([&](ls2::TanhOp) {
        // A tanh of 16-bit values: the special-function unit's, whose
        // error (Prelude.cpp's ls2_tanh_approx) is far below theirs.
        if (computeType(et) == "float" && fromSixteenBitValues(op->getOperand(0)))
          return define(value, "ls2_tanh_approx(" + a[0] + ")");
        return unary("tanh");
      })
      .Case([&](ls2::ErfOp) {
        // An erf of 16-bit values (the erf GELU of a bf16 or fp16 model):
        // Prelude.cpp's ls2_erf_approx, whose error is far below theirs.
        if (computeType(et) == "float" && fromSixteenBitValues(op->getOperand(0)))
          return define(value, "ls2_erf_approx(" + a[0] + ")");
        return unary("erf");
      })
      .Case([&](ls2::SqrtOp) { return unary("sqrt"); })
      .Case([&](ls2::RsqrtOp) { return unary("rsqrt"); })
      .Case([&](ls2::SinOp) { return unary("sin"); })
      .Case([&](ls2::CosOp) { return unary("cos"); })
      .Case([&](ls2::AddOp) {
        return define(value, floatOperands ? a[0] + " + " + a[1]
                                           : "ls2_wrap_add(" + a[0] + ", " + a[1] + ")");
      })
      .Case([&](ls2::SubOp) {
        return define(value, floatOperands ? a[0] + " - " + a[1]
                                           : "ls2_wrap_sub(" + a[0] + ", " + a[1] + ")");
      })
      .Case([&](ls2::MulOp) {
        return define(value, floatOperands ? a[0] + " * " + a[1]
                                           : "ls2_wrap_mul(" + a[0] + ", " + a[1] + ")");
      })
      .Case([&](ls2::DivOp) {
        // A divisor outside the innermost loop (a row's sum): its
        // reciprocal once, a multiply per element (IEEE division is a
        // dozen instructions; x * (1 / d) is within about 2 ulp of x / d
        // for |d| in [2^-126, 2^126]). The reciprocal is memoized in the
        // divisor's scope, so it goes out of scope with it.
        int divisorLevel = invariantLevel(op->getOperand(1), (*indices)[1]);
        if (computeType(et) == "float" && divisorLevel < levelOf(value, index)) {
          std::string k = "rcp|" + a[1];
          if (const std::string *r = memoized(k))
            return define(value, a[0] + " * " + *r);
          std::string r = fresh("rcp");
          lineAt(divisorLevel, "const float " + r + " = 1.0f / " + a[1] + ";");
          scopes[targetScope(divisorLevel)].memo[k] = r;
          return define(value, a[0] + " * " + r);
        }
        return define(value, a[0] + " / " + a[1]);
      })
      .Case([&](ls2::MaxOp) {
        return define(value, "ls2_max(" + a[0] + ", " + a[1] + ")");
      })
      .Case([&](ls2::MinOp) {
        return define(value, "ls2_min(" + a[0] + ", " + a[1] + ")");
      })
      .Case([&](ls2::CompareOp c) {
        const char *o = "==";
        switch (c.getDirection()) {
        case ls2::CompareDirection::EQ: o = "=="; break;
        case ls2::CompareDirection::NE: o = "!="; break;
        case ls2::CompareDirection::LT: o = "<"; break;
        case ls2::CompareDirection::LE: o = "<="; break;
        case ls2::CompareDirection::GT: o = ">"; break;
        case ls2::CompareDirection::GE: o = ">="; break;
        }
        return define(value, a[0] + " " + o + " " + a[1]);
      })
      .Case([&](ls2::SelectOp) {
        return define(value, a[0] + " ? " + a[1] + " : " + a[2]);
      })
      .Case([&](ls2::CastOp c) {
        Type from = tensorType(c.getInput()).getElementType();
        std::string x = a[0];
        if (et.isF16())
          return define(value, "__half2float(__float2half_rn(" +
                                   (isFloatType(from) ? x : "(float)" + x) + "))");
        if (et.isBF16())
          return define(value, "__bfloat162float(__float2bfloat16_rn(" +
                                   (isFloatType(from) ? x : "(float)" + x) + "))");
        if (et.isInteger(1))
          return define(value, "(" + x + " != 0)");
        if (isFloatType(et))
          return define(value, "(" + computeType(et) + ")" + x);
        // Float to integer truncates and saturates, NaN gives 0 (cvt.rzi).
        if (isFloatType(from)) {
          std::string f = from.isF64() ? (et.isInteger(64) ? "__double2ll_rz" : "__double2int_rz")
                                       : (et.isInteger(64) ? "__float2ll_rz" : "__float2int_rz");
          return define(value, f + "(" + x + ")");
        }
        return define(value, "(" + computeType(et) + ")" + x);
      })
      .Default([&](Operation *) -> std::string {
        throw EmitError{op, "is not supported inside a generated kernel"};
      });
}

} // namespace ls2c::codegen
