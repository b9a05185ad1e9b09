//===- ProgramBuilder.cpp - a planned ls2 module as the runtime's Program -===//

#include "ls2c/Codegen/ProgramBuilder.h"

#include "ElementalEmitter.h"
#include "FusionRules.h"
#include "Philox.h"

#include "ls2c/Analysis/ShapeBounds.h"
#include "ls2c/Analysis/SymbolicDims.h"
#include "ls2c/Codegen/ModuleKernels.h"
#include "ls2c/Model/ParameterLayout.h"
#include "ls2c/Transforms/PaddedRows.h"
#include "ls2c/Training/Workspace.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include <map>

using namespace mlir;

namespace ls2c::codegen {

namespace {

using runtime::BufferRef;

struct BuildError {
  Operation *op;
  std::string message;
};

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

runtime::DType dtypeOrThrow(Operation *op, Type t) {
  if (std::optional<runtime::DType> d = dtypeOf(t))
    return *d;
  throw BuildError{op, "has an element type the runtime does not support"};
}

runtime::ArgumentKind kindOf(Operation *op, StringRef kind) {
  using K = runtime::ArgumentKind;
  static const std::map<std::string, K> kinds = {
      {"parameter", K::Parameter}, {"input", K::Input},   {"workspace", K::Workspace},
      {"state", K::State},         {"buffer", K::Buffer}, {"output", K::Output},
      {"gradient", K::Gradient},   {"loss", K::Loss}};
  auto it = kinds.find(kind.str());
  if (it == kinds.end())
    throw BuildError{op, "has an argument or result of unknown ls2.kind '" + kind.str() + "'"};
  return it->second;
}

/// A value's storage: a byte range and, for a strided view, the row stride
/// in elements (0 when rows are contiguous).
struct Resolved {
  BufferRef ref;
  int64_t rowStride = 0;
};

class FunctionBuilder {
public:
  FunctionBuilder(func::FuncOp f, const SymbolicDims &dims, const ShapeBounds &bounds,
                  const ModuleKernels &kernels,
                  const std::map<Operation *, std::vector<const ModuleKernels::Use *>> &uses,
                  std::map<unsigned, unsigned> &kernelRemap, runtime::Program &program,
                  int64_t maxSeqLen, bool encoderDecoder)
      : f(f), dims(dims), bounds(bounds), kernels(kernels), uses(uses),
        kernelRemap(kernelRemap), program(program), maxSeqLen(maxSeqLen),
        encoderDecoder(encoderDecoder) {}

  runtime::Function build() {
    runtime::Function out;
    out.name = f.getName().str();
    for (BlockArgument arg : f.getArguments())
      out.arguments.push_back(spec(arg, f.getArgAttrDict(arg.getArgNumber())));
    Operation *ret = f.getBody().front().getTerminator();
    // A returned value and what it reshapes are written straight into the
    // result's buffer (ls2-plan-buffers gives them no arena space); one
    // whose bytes live elsewhere (an argument, a slice of an arena buffer,
    // a value returned twice) is copied there after the steps.
    std::vector<std::pair<unsigned, Value>> copies;
    for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
      out.results.push_back(spec(v, f.getResultAttrDict(i)));
      auto index = static_cast<unsigned>(i);
      Value base = v;
      while (auto r = base.getDefiningOp<ls2::ReshapeOp>())
        base = r.getInput();
      Operation *def = base.getDefiningOp();
      if (isa<BlockArgument>(base) || (def && fusion::isView(def)) || returned.count(base)) {
        copies.push_back({index, base});
        continue;
      }
      for (Value w = v;; w = w.getDefiningOp()->getOperand(0)) {
        returned.try_emplace(w, index);
        if (w == base)
          break;
      }
    }
    if (auto a = f->getAttrOfType<IntegerAttr>("ls2.arena_bytes"))
      out.arenaBytes = static_cast<uint64_t>(a.getInt());
    else
      throw BuildError{f, "is not planned (no ls2.arena_bytes; run ls2-plan-buffers)"};
    for (Operation &op : f.getBody().front())
      step(&op, out);
    // A result that is an argument unchanged (state the step keeps) is a
    // copy: results live in their own buffers.
    for (auto [index, base] : copies) {
      Resolved from = resolve(base);
      // A copy moves the bound's bytes: exact only for a static shape (or an
      // argument, whose buffer the caller sizes at the bound).
      if (from.rowStride ||
          (!isa<BlockArgument>(base) && !tensorType(base).hasStaticShape()))
        throw BuildError{ret, "returns result " + std::to_string(index) +
                                  " as a strided or dynamic-size view of another value; it "
                                  "needs a buffer of its own"};
      runtime::Step s;
      s.kind = runtime::Step::Kind::Copy;
      s.copySource = from.ref;
      s.copySource.maxBytes = static_cast<uint64_t>(bounds.bytes(base));
      s.copyDestination = {BufferRef::Space::Result, index, 0,
                           static_cast<uint64_t>(bounds.bytes(base))};
      out.steps.push_back(std::move(s));
    }
    return out;
  }

private:
  func::FuncOp f;
  const SymbolicDims &dims;
  const ShapeBounds &bounds;
  const ModuleKernels &kernels;
  const std::map<Operation *, std::vector<const ModuleKernels::Use *>> &uses;
  std::map<unsigned, unsigned> &kernelRemap;
  runtime::Program &program;
  int64_t maxSeqLen; ///< the description's bound of one sequence's tokens
  bool encoderDecoder; ///< the description's architecture is encoder_decoder
  DenseMap<Value, unsigned> returned;

  runtime::TensorSpec spec(Value v, DictionaryAttr attrs) {
    runtime::TensorSpec t;
    if (attrs) {
      if (auto name = attrs.getAs<StringAttr>("ls2.name"))
        t.name = name.str();
      if (auto kind = attrs.getAs<StringAttr>("ls2.kind"))
        t.kind = kindOf(f, kind.getValue());
      if (auto alias = attrs.getAs<IntegerAttr>("ls2.in_place_of")) // results only
        t.inPlaceOf = static_cast<int32_t>(alias.getInt());
    }
    auto type = tensorType(v);
    t.dtype = dtypeOrThrow(f, type.getElementType());
    t.shape.assign(dims.shape(v).begin(), dims.shape(v).end());
    t.maxShape.assign(bounds.shape(v).begin(), bounds.shape(v).end());
    return t;
  }

  uint64_t bytes(Value v) { return static_cast<uint64_t>(bounds.bytes(v)); }

  /// The elements of one row of `v` ([rows, ...] with static inner dims).
  int64_t rowWidth(Value v) {
    auto type = tensorType(v);
    int64_t width = 1;
    for (int64_t d = 1; d < type.getRank(); ++d)
      width *= type.getDimSize(d);
    return width;
  }

  /// The bytes a strided [rows, ...] value spans: every row but the last
  /// a full stride, the last its own width.
  uint64_t stridedExtent(Value v, int64_t rowStride) {
    auto type = tensorType(v);
    int64_t rows = bounds.shape(v)[0];
    int64_t width = rowWidth(v);
    int64_t eb = elementBytes(type.getElementType());
    return rows == 0 ? 0 : static_cast<uint64_t>(((rows - 1) * rowStride + width) * eb);
  }

  /// The place of a piece of an in-place concat: an attention gradient's
  /// columns of the concat's buffer, or a gradient group's range of the
  /// workspace (axis 0); nullopt when `v` is no such piece.
  std::optional<Resolved> inPlacePiece(Value v) {
    Value piece = v;
    for (int hops = 0; hops < 4 && piece.hasOneUse(); ++hops) {
      Operation *user = *piece.getUsers().begin();
      if (auto r = dyn_cast<ls2::ReshapeOp>(user)) {
        piece = r.getResult();
        continue;
      }
      auto concat = dyn_cast<ls2::ConcatOp>(user);
      if (!concat || !concat->hasAttr("ls2.in_place"))
        return std::nullopt;
      Resolved whole = resolve(concat.getResult());
      auto type = tensorType(concat.getResult());
      int64_t columns = 0;
      for (Value operand : concat.getInputs()) {
        if (operand == piece)
          break;
        columns += tensorType(operand).getDimSize(concat.getAxis());
      }
      int64_t row = 1;
      for (int64_t d = concat.getAxis() + 1; d < type.getRank(); ++d)
        row *= type.getDimSize(d);
      Resolved r = whole;
      r.ref.byteOffset += static_cast<uint64_t>(columns * row *
                                                elementBytes(type.getElementType()));
      if (concat.getAxis() == 0) { // a contiguous part (a gradient group)
        r.ref.maxBytes = bytes(v);
        return r;
      }
      // Rows of the piece are rows of the concat's buffer.
      r.rowStride = 1;
      for (int64_t d = 1; d < type.getRank(); ++d)
        r.rowStride *= type.getDimSize(d);
      r.ref.maxBytes = stridedExtent(v, r.rowStride);
      return r;
    }
    return std::nullopt;
  }

  Resolved resolve(Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return {{BufferRef::Space::Argument, arg.getArgNumber(), 0, bytes(v)}, 0};
    if (auto it = returned.find(v); it != returned.end())
      return {{BufferRef::Space::Result, it->second, 0, bytes(v)}, 0};
    Operation *def = v.getDefiningOp();
    if (fusion::isView(def)) {
      Resolved base = resolve(def->getOperand(0));
      if (fusion::isStridedView(def)) {
        auto slice = cast<ls2::SliceOp>(def);
        auto in = tensorType(slice.getInput());
        int64_t row = 1, inner = 1;
        for (int64_t d = 1; d < in.getRank(); ++d)
          row *= in.getDimSize(d);
        for (int64_t d = slice.getAxis() + 1; d < in.getRank(); ++d)
          inner *= in.getDimSize(d);
        if (base.rowStride == 0)
          base.rowStride = row;
        base.ref.byteOffset += static_cast<uint64_t>(
            slice.getStart() * inner * elementBytes(in.getElementType()));
        base.ref.maxBytes = stridedExtent(v, base.rowStride);
        return base;
      }
      base.ref.byteOffset += static_cast<uint64_t>(fusion::viewByteOffset(def));
      base.ref.maxBytes = base.rowStride ? stridedExtent(v, base.rowStride) : bytes(v);
      return base;
    }
    auto offsets = def->getAttrOfType<DenseI64ArrayAttr>("ls2.offsets");
    unsigned index = cast<OpResult>(v).getResultNumber();
    if (offsets && index < offsets.size() && offsets[index] >= 0) {
      Resolved r{{BufferRef::Space::Arena, 0, static_cast<uint64_t>(offsets[index]), bytes(v)},
                 paddedRowStride(v)};
      // Padded rows: the whole planned buffer, the last row's padding too
      // (row reductions read it as part of their 16-byte vectors).
      if (r.rowStride)
        r.ref.maxBytes = static_cast<uint64_t>(bounds.shape(v)[0] * r.rowStride *
                                               elementBytes(tensorType(v).getElementType()));
      return r;
    }
    if (std::optional<Resolved> piece = inPlacePiece(v))
      return *piece;
    throw BuildError{def, "produces a value with no planned buffer (result " +
                              std::to_string(index) + ")"};
  }

  BufferRef contiguous(Operation *op, Value v) {
    Resolved r = resolve(v);
    if (r.rowStride != 0)
      throw BuildError{op, "reads a strided view, but only kernels that take a row "
                           "stride (attention) accept one"};
    return r.ref;
  }

  /// One launch per kernel the op uses (attention_grad has two), in order.
  void launch(Operation *op, runtime::Function &out) {
    auto it = uses.find(op);
    if (it == uses.end())
      throw BuildError{op, "has no generated kernel"};
    for (const ModuleKernels::Use *use : it->second)
      launch(op, *use, out);
  }

  void launch(Operation *op, const ModuleKernels::Use &use, runtime::Function &out) {
    auto [remap, inserted] =
        kernelRemap.try_emplace(use.kernel, static_cast<unsigned>(program.kernels.size()));
    if (inserted)
      program.kernels.push_back(kernels.kernels[use.kernel]);
    // A tensor whose row stride the kernel takes may be a strided view.
    auto takesStride = [&](unsigned index, bool ofResult) {
      return llvm::any_of(use.bindings, [&](const ParamBinding &b) {
        return b.kind == ParamBinding::Kind::RowStride && b.index == index &&
               b.ofResult == ofResult;
      });
    };
    auto buffer = [&](Value v, unsigned index, bool ofResult) {
      return takesStride(index, ofResult) ? resolve(v).ref : contiguous(op, v);
    };
    runtime::Step s;
    s.kind = runtime::Step::Kind::Launch;
    s.kernel = remap->second;
    for (const ParamBinding &b : use.bindings) {
      runtime::KernelArg a;
      switch (b.kind) {
      case ParamBinding::Kind::Operand: {
        Value v = op->getOperand(b.index);
        if (isa<IndexType>(v.getType())) {
          a.kind = runtime::ParamKind::Int64;
          a.value = dims.index(v);
        } else {
          a.buffer = buffer(v, b.index, false);
        }
        break;
      }
      case ParamBinding::Kind::Result:
        a.buffer = buffer(op->getResult(b.index), b.index, true);
        break;
      case ParamBinding::Kind::Size:
        a.kind = runtime::ParamKind::Int64;
        a.value = b.size;
        break;
      case ParamBinding::Kind::Constant:
        a.kind = runtime::ParamKind::Int64;
        a.value = runtime::Dim{b.value, -1, 0};
        break;
      case ParamBinding::Kind::RowStride: {
        Value v = b.ofResult ? op->getResult(b.index) : op->getOperand(b.index);
        int64_t stride = resolve(v).rowStride;
        a.kind = runtime::ParamKind::Int64;
        a.value = runtime::Dim{stride ? stride : rowWidth(v), -1, 0};
        break;
      }
      case ParamBinding::Kind::Scratch:
        // Bound to Program::scratchOffset once every arena is known.
        a.buffer = {BufferRef::Space::Arena, 0, 0, kernels.kernels[use.kernel].scratchBytes};
        scratchArgs.push_back({out.steps.size(), s.args.size()});
        break;
      }
      s.args.push_back(a);
    }
    out.steps.push_back(std::move(s));
  }

  void gemm(ls2::MatmulOp op, runtime::Function &out) {
    runtime::Gemm g;
    auto a = tensorType(op.getA()), b = tensorType(op.getB()),
         c = tensorType(op.getResult());
    // Padded rows (PaddedRows.h) are a leading dimension larger than the
    // row; batched operands stay contiguous.
    auto matrix = [&](Value v, int64_t &ld) {
      Resolved r = resolve(v);
      if (r.rowStride != 0 && tensorType(v).getRank() != 2)
        throw BuildError{op, "has a batched operand or result with a row stride"};
      ld = r.rowStride;
      return r.ref;
    };
    int64_t strideA = 0, strideB = 0, strideC = 0;
    g.a = matrix(op.getA(), strideA);
    g.b = matrix(op.getB(), strideB);
    g.c = matrix(op.getResult(), strideC);
    g.aType = dtypeOrThrow(op, a.getElementType());
    g.bType = dtypeOrThrow(op, b.getElementType());
    g.cType = dtypeOrThrow(op, c.getElementType());
    g.transposeA = op.getTransposeA();
    g.transposeB = op.getTransposeB();
    ArrayRef<runtime::Dim> ad = dims.shape(op.getA()), bd = dims.shape(op.getB()),
                           cd = dims.shape(op.getResult());
    size_t ar = ad.size(), br = bd.size(), cr = cd.size();
    g.m = cd[cr - 2];
    g.n = cd[cr - 1];
    g.k = g.transposeA ? ad[ar - 2] : ad[ar - 1];
    if (!a.hasStaticShape() && a.isDynamicDim(ar - 1))
      throw BuildError{op, "has a dynamic row length in its first operand"};
    g.lda = strideA ? strideA : a.getDimSize(ar - 1);
    g.ldb = strideB ? strideB : b.getDimSize(br - 1);
    g.ldc = strideC ? strideC : c.getDimSize(cr - 1);
    if (ShapedType::isDynamic(g.ldb) || ShapedType::isDynamic(g.ldc))
      throw BuildError{op, "has a dynamic row length"};
    // Batched: leading dims of a (and of b unless it is one shared matrix).
    int64_t batch = 1;
    for (size_t d = 0; d + 2 < ar; ++d) {
      if (!ad[d].isStatic())
        throw BuildError{op, "has a dynamic batch dim"};
      batch *= ad[d].size;
    }
    g.batch = runtime::Dim{batch, -1, 0};
    if (ar > 2) {
      g.strideA = a.getDimSize(ar - 2) * a.getDimSize(ar - 1);
      g.strideB = br > 2 ? b.getDimSize(br - 2) * b.getDimSize(br - 1) : 0;
      g.strideC = c.getDimSize(cr - 2) * c.getDimSize(cr - 1);
    }
    if (Value bias = op.getBias()) {
      g.epilogue = runtime::GemmEpilogue::Bias;
      g.bias = contiguous(op, bias);
      g.biasType = dtypeOrThrow(op, tensorType(bias).getElementType());
    }
    if (Value bg = op.getBiasGrad()) {
      if (g.epilogue != runtime::GemmEpilogue::None)
        throw BuildError{op, "has both a bias and a bias gradient"};
      g.epilogue = runtime::GemmEpilogue::BiasGradA;
      g.biasGrad = contiguous(op, bg);
      g.biasType = dtypeOrThrow(op, tensorType(bg).getElementType());
    }
    if (std::optional<ls2::GemmActivation> act = op.getActivation()) {
      using E = runtime::GemmEpilogue;
      bool bias = op.getBias() != nullptr, bgrad = op.getBiasGrad() != nullptr;
      Value aux = op.hasActivationGrad() ? op.getAux() : op.getAuxOut();
      switch (*act) {
      case ls2::GemmActivation::Relu:
        g.epilogue = aux ? (bias ? E::ReluAuxBias : E::ReluAux)
                         : (bias ? E::ReluBias : E::Relu);
        break;
      case ls2::GemmActivation::GeluTanh:
        g.epilogue = aux ? (bias ? E::GeluAuxBias : E::GeluAux)
                         : (bias ? E::GeluBias : E::Gelu);
        break;
      case ls2::GemmActivation::ReluGrad:
        g.epilogue = bgrad ? E::DReluBGrad : E::DRelu;
        break;
      case ls2::GemmActivation::GeluTanhGrad:
        g.epilogue = bgrad ? E::DGeluBGrad : E::DGelu;
        break;
      }
      if (aux) {
        g.aux = contiguous(op, aux);
        // The ReLU mask's row in bits (32 per i32 word); the GELU input's
        // row in elements.
        int64_t width = tensorType(aux).getDimSize(1);
        g.auxLd = tensorType(aux).getElementType().isInteger(32) ? width * 32
                                                                 : width;
      }
    }
    runtime::Step s;
    s.kind = runtime::Step::Kind::Gemm;
    s.gemm = g;
    out.steps.push_back(std::move(s));
  }

  /// The Attention step of an attention op cuDNN's fused attention may
  /// run (the runtime decides; it falls back to the generated kernels that
  /// follow): f16 or bf16, head dim a multiple of 8 up to 256, rows and
  /// bases 16-byte aligned (cuDNN's rules), and causal only for self
  /// attention (one cu_seqlens: top-left and bottom-right alignment agree);
  /// never for a KV cache's attention (key_lengths). An encoder-decoder's
  /// cross attention stays on the generated kernels, forward too (with
  /// dropout both must draw their masks on one backend): on an H200 cuDNN's
  /// backward, as our graph calls it, gave an fp16 encoder-decoder's last
  /// cross-attention key gradients 8x off (bench/RESULTS.md, "Found and
  /// fixed: cuDNN's cross-attention gradients"; cause not found). Sequence
  /// parallelism's off-diagonal blocks, also packed apart, keep cuDNN.
  std::optional<runtime::Step> attentionStep(Operation *op) {
    auto fwd = dyn_cast<ls2::AttentionOp>(op);
    auto bwd = dyn_cast<ls2::AttentionGradOp>(op);
    // A KV cache's keys (key_lengths) are not packed sequences: kernels only.
    if ((!fwd && !bwd) || (fwd && fwd.getKeyLengths()))
      return std::nullopt;
    Value q = fwd ? fwd.getQuery() : bwd.getQuery();
    Value k = fwd ? fwd.getKey() : bwd.getKey();
    Value v = fwd ? fwd.getValue() : bwd.getValue();
    Value cuQ = fwd ? fwd.getCuSeqlensQ() : bwd.getCuSeqlensQ();
    Value cuK = fwd ? fwd.getCuSeqlensK() : bwd.getCuSeqlensK();
    auto qType = tensorType(q), kType = tensorType(k);
    runtime::Attention a;
    a.backward = static_cast<bool>(bwd);
    a.dtype = dtypeOrThrow(op, qType.getElementType());
    a.heads = static_cast<uint32_t>(qType.getDimSize(1));
    a.kvHeads = static_cast<uint32_t>(kType.getDimSize(1));
    a.headDim = static_cast<uint32_t>(qType.getDimSize(2));
    a.causal = fwd ? fwd.getCausal() : bwd.getCausal();
    a.scale = fwd ? fwd.getEffectiveScale() : bwd.getEffectiveScale();
    // cuDNN applies the rate the generated kernels apply (a multiple of
    // 2^-8), so a model is the same on both backends but for the masks.
    const float rate = (fwd ? fwd.getDropoutRate() : bwd.getDropoutRate()).convertToFloat();
    a.dropoutRate = rate > 0 ? static_cast<float>(reference::attentionAppliedRate(rate)) : 0.0f;
    a.stream = static_cast<uint32_t>(fwd ? fwd.getStream() : bwd.getStream());
    if ((a.dtype != runtime::DType::F16 && a.dtype != runtime::DType::BF16) ||
        a.headDim % 8 != 0 || a.headDim > 256 ||
        (cuQ != cuK && (a.causal || encoderDecoder)))
      return std::nullopt;
    a.tokensQ = dims.shape(q)[0];
    a.tokensK = dims.shape(k)[0];
    a.batchPlusOne = dims.shape(cuQ)[0];
    a.maxSeqLen = maxSeqLen;
    bool aligned = true;
    auto rows = [&](Value value, BufferRef &ref, int64_t &stride) {
      Resolved r = resolve(value);
      ref = r.ref;
      stride = r.rowStride ? r.rowStride : rowWidth(value);
      aligned &= stride % 8 == 0 && ref.byteOffset % 16 == 0;
    };
    rows(q, a.q, a.strideQ);
    rows(k, a.k, a.strideK);
    rows(v, a.v, a.strideV);
    rows(fwd ? fwd.getResult() : bwd.getOut(), a.out, a.strideO);
    a.lse = contiguous(op, fwd ? fwd.getLse() : bwd.getLse());
    a.cuSeqlensQ = contiguous(op, cuQ);
    a.cuSeqlensK = contiguous(op, cuK);
    if (Value seed = fwd ? fwd.getSeed() : bwd.getSeed()) {
      a.seed = contiguous(op, seed);
      a.offset = contiguous(op, fwd ? fwd.getOffset() : bwd.getOffset());
    }
    if (bwd) {
      rows(bwd.getDout(), a.dout, a.strideDO);
      rows(bwd.getDq(), a.dq, a.strideDQ);
      rows(bwd.getDk(), a.dk, a.strideDK);
      rows(bwd.getDv(), a.dv, a.strideDV);
    }
    if (!aligned)
      return std::nullopt;
    runtime::Step s;
    s.kind = runtime::Step::Kind::Attention;
    s.attention = a;
    return s;
  }

  void step(Operation *op, runtime::Function &out) {
    // Attention: a cuDNN step where cuDNN may run it, then the generated
    // kernels as its fallback.
    if (std::optional<runtime::Step> attention = attentionStep(op)) {
      size_t at = out.steps.size();
      out.steps.push_back(std::move(*attention));
      launch(op, out);
      out.steps[at].attention.fallbackSteps = static_cast<uint32_t>(out.steps.size() - at - 1);
      return;
    }
    if (isa<ls2::FusionOp, ls2::ScatterAddOp, ls2::NonzeroOp, ls2::AttentionOp,
            ls2::AttentionGradOp>(op))
      return launch(op, out);
    if (auto m = dyn_cast<ls2::MatmulOp>(op))
      return gemm(m, out);
    if (isa<ls2::DimOp, func::ReturnOp>(op) || fusion::isView(op))
      return;
    if (auto c = dyn_cast<ls2::ConcatOp>(op); c && c->hasAttr("ls2.in_place"))
      return;
    throw BuildError{op, "has no runtime step (it should be inside a fusion group)"};
  }

public:
  /// (step, arg) of every scratch binding, patched with the scratch offset.
  std::vector<std::pair<size_t, size_t>> scratchArgs;
};

} // namespace

FailureOr<runtime::Program> buildProgram(ModuleOp module, const ModelDescription &desc,
                                         const std::string &descriptionText,
                                         const std::vector<std::string> &functions) {
  FailureOr<ModuleKernels> kernels = generateModuleKernels(module);
  if (failed(kernels))
    return failure();
  std::map<Operation *, std::vector<const ModuleKernels::Use *>> uses;
  for (const ModuleKernels::Use &u : kernels->uses)
    uses[u.op].push_back(&u);

  runtime::Program program;
  program.modelName = desc.name;
  program.description = descriptionText;
  program.computeDType = desc.dtype == DType::F16    ? "f16"
                         : desc.dtype == DType::BF16 ? "bf16"
                                                     : "f32";
  ParameterLayout layout = buildParameterLayout(desc);
  WorkspaceLayout workspace = planWorkspace(layout);
  program.workspaceElements = static_cast<uint64_t>(workspace.totalElements);
  for (const WorkspaceSlot &slot : workspace.slots)
    program.parameters.push_back({slot.spec->name, slot.spec->shape,
                                  static_cast<uint64_t>(slot.offset),
                                  slot.spec->weight_decay});

  std::map<unsigned, unsigned> kernelRemap;
  std::vector<std::pair<size_t, std::vector<std::pair<size_t, size_t>>>> scratch;
  try {
    for (const std::string &name : functions) {
      auto f = module.lookupSymbol<func::FuncOp>(name);
      if (!f) {
        module.emitError("has no function @") << name << " to put in the program";
        return failure();
      }
      FailureOr<ShapeBounds> bounds = ShapeBounds::compute(f);
      FailureOr<SymbolicDims> dims = SymbolicDims::compute(f);
      if (failed(bounds) || failed(dims))
        return failure();
      FunctionBuilder builder(f, *dims, *bounds, *kernels, uses, kernelRemap, program,
                              desc.max_seq_len,
                              desc.architecture == Architecture::EncoderDecoder);
      program.functions.push_back(builder.build());
      scratch.push_back({program.functions.size() - 1, builder.scratchArgs});
    }
  } catch (const BuildError &e) {
    e.op->emitError(e.message);
    return failure();
  }
  // One arena: the largest function's plan, then the kernels' scratch.
  uint64_t arena = 0, scratchBytes = 0;
  for (const runtime::Function &fn : program.functions)
    arena = std::max(arena, fn.arenaBytes);
  for (const runtime::Kernel &k : program.kernels)
    scratchBytes = std::max(scratchBytes, k.scratchBytes);
  program.scratchOffset = (arena + 255) / 256 * 256;
  program.arenaBytes = program.scratchOffset + scratchBytes;
  for (auto &[fn, args] : scratch)
    for (auto [stepIndex, argIndex] : args)
      program.functions[fn].steps[stepIndex].args[argIndex].buffer.byteOffset =
          program.scratchOffset;
  return program;
}

} // namespace ls2c::codegen
