//===- AttentionCommon.h - what the attention kernel generators share -----===//
//
// The attention op's specialization (heads, head dim, causal, dropout, the
// operand indices of either op), kernel parameter lists with their
// bindings, ${KEY} substitution and the device helpers every attention
// kernel includes. Used by AttentionKernel.cpp (simple kernels for every
// shape) and FlashAttention*.cpp (tensor-core kernels).
//
//===----------------------------------------------------------------------===//

#ifndef LS2C_CODEGEN_ATTENTIONCOMMON_H
#define LS2C_CODEGEN_ATTENTIONCOMMON_H

#include "ls2c/Codegen/KernelGenerator.h"

#include "ElementalEmitter.h"
#include "Prelude.h"

#include "mlir/IR/BuiltinTypes.h"

#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace ls2c::codegen::attention {

// The spec reader below names MLIR types and casts unqualified.
using namespace mlir;

/// `x` as a C float literal that reads back to the same float.
std::string floatLiteral(float x);

/// Device helpers the attention kernels share (after the prelude): the
/// sequence of a packed row and, with dropout, the attention Philox layout.
std::string attentionHelpers(bool dropout);

/// What the three kernels are specialized to, read from either op.
struct AttentionSpec {
  int64_t heads = 0, kvHeads = 0, headDim = 0;
  bool causal = false, dropout = false;
  float scale = 0, rate = 0;
  int64_t stream = 0;
  std::string storage; ///< C storage type of q, k, v, out and the gradients
  mlir::Type element;  ///< element type of q, k, v, out and the gradients
  runtime::Dim tokensQ, tokensK, entriesQ, entriesK;
  // Operand indices (the ops' ODS segments resolved).
  unsigned query = 0, key = 0, value = 0, cuQ = 0, cuK = 0, seed = 0, offset = 0;
  /// With key_lengths (forward only): its operand index; sequence b's keys
  /// are then key_lengths[b] rows from cu_seqlens_k[b].
  std::optional<unsigned> keyLengths;
};

/// The dropout constants' substitutions: KEEP_MIN, the least 8-bit number
/// a kept probability has (Reference/Philox.h's attentionKeepMin), and
/// KEEP_SCALE = 1 / (1 - the applied rate, KEEP_MIN / 256).
void addDropoutValues(std::map<std::string, std::string> &values, const AttentionSpec &s);

template <typename AttentionLike>
mlir::FailureOr<AttentionSpec> readSpec(AttentionLike op, const SymbolicDims &dims,
                                  const std::string &kernelName) {
  AttentionSpec s;
  auto q = cast<RankedTensorType>(op.getQuery().getType());
  auto k = cast<RankedTensorType>(op.getKey().getType());
  s.heads = q.getDimSize(1);
  s.kvHeads = k.getDimSize(1);
  s.headDim = q.getDimSize(2);
  s.causal = op.getCausal();
  s.scale = op.getEffectiveScale();
  s.rate = op.getDropoutRate().convertToFloat();
  s.dropout = s.rate > 0.0f;
  s.stream = static_cast<int64_t>(op.getStream());
  s.storage = storageType(q.getElementType());
  s.element = q.getElementType();
  // Math is in f32; f64 would need a double variant.
  if (!isa<Float32Type, Float16Type, BFloat16Type>(q.getElementType()))
    return op.emitError("attention kernels take f32, f16 or bf16, not ")
           << q.getElementType() << " (generating kernel " << kernelName << ")";
  if (s.dropout && !op.getSeed())
    return op.emitError("dropout_rate > 0 needs the seed and offset operands (generating kernel ")
           << kernelName << ")";
  s.tokensQ = dims.shape(op.getQuery())[0];
  s.tokensK = dims.shape(op.getKey())[0];
  s.entriesQ = dims.shape(op.getCuSeqlensQ())[0];
  s.entriesK = dims.shape(op.getCuSeqlensK())[0];
  auto index = [&](unsigned odsIndex) {
    return static_cast<unsigned>(op.getODSOperandIndexAndLength(odsIndex).first);
  };
  // ODS operand order differs between the ops by the leading dout of the
  // gradient; the names are the same.
  unsigned first = std::is_same_v<AttentionLike, ls2::AttentionGradOp> ? 1 : 0;
  s.query = index(first);
  s.key = index(first + 1);
  s.value = index(first + 2);
  unsigned cu = std::is_same_v<AttentionLike, ls2::AttentionGradOp> ? 6 : 3;
  s.cuQ = index(cu);
  s.cuK = index(cu + 1);
  s.seed = index(cu + 2);
  s.offset = index(cu + 3);
  if constexpr (std::is_same_v<AttentionLike, ls2::AttentionOp>)
    if (op.getKeyLengths())
      s.keyLengths = index(7);
  return s;
}

/// A kernel's parameters as they are declared: C text, runtime kind and
/// what binds to each.
class Params {
public:
  explicit Params(GeneratedKernel &out) : out(out) {}

  void pointer(const std::string &decl, ParamBinding::Kind kind, unsigned index) {
    add(decl, runtime::ParamKind::Pointer, {kind, index, {}});
  }
  /// An int64 size; returns its parameter index.
  unsigned size(const std::string &name, const runtime::Dim &d) {
    return add("const long long " + name, runtime::ParamKind::Int64,
               {ParamBinding::Kind::Size, 0, d});
  }
  void rowStride(const std::string &name, unsigned index, bool ofResult) {
    ParamBinding b{ParamBinding::Kind::RowStride, index, {}};
    b.ofResult = ofResult;
    add("const long long " + name, runtime::ParamKind::Int64, b);
  }
  void constant(const std::string &name, int64_t value) {
    ParamBinding b{ParamBinding::Kind::Constant, 0, {}};
    b.value = value;
    add("const long long " + name, runtime::ParamKind::Int64, b);
  }
  std::string declarations() const {
    std::string s;
    for (size_t i = 0; i < decls.size(); ++i)
      s += (i ? ",\n    " : "") + decls[i];
    return s;
  }

private:
  unsigned add(const std::string &decl, runtime::ParamKind kind, const ParamBinding &b) {
    decls.push_back(decl);
    out.kernel.params.push_back(kind);
    out.bindings.push_back(b);
    return static_cast<unsigned>(decls.size() - 1);
  }
  GeneratedKernel &out;
  std::vector<std::string> decls;
};

/// Operand indices of ls2.attention_grad beyond the spec's.
struct GradOperands {
  unsigned dout = 0, out = 0, lse = 0;
};

/// The forward kernels' parameters, in binding order: q, k, v, cu_seqlens_q
/// and _k, (seed, offset), out, lse, the query token count, batch + 1, the
/// row strides of q, k, v and out, (the Philox stream). Returns the index
/// of the token count parameter.
unsigned addForwardParams(Params &p, const AttentionSpec &s);

/// The dq kernels' parameters, in binding order: dout, q, k, v, out, lse,
/// cu_seqlens_q and _k, (seed, offset), dq, the query token count, batch + 1,
/// the row strides of dout, q, k, v, out and dq, (the Philox stream).
/// Returns the index of the token count parameter.
unsigned addDqParams(Params &p, const AttentionSpec &s, const GradOperands &g);

/// The dk/dv kernels' parameters: as addDqParams's, with dk and dv for dq,
/// the key token count and the kv batch + 1, and the strides of dk and dv
/// for dq's. Returns the index of the token count parameter.
unsigned addDkDvParams(Params &p, const AttentionSpec &s, const GradOperands &g);

/// The generated source's first line: which op, function and specialization.
std::string header(mlir::Operation *op, const AttentionSpec &s, const std::string &what);

/// The seed and offset pointers when the op drops out.
void addDropoutParams(Params &p, const AttentionSpec &s);

} // namespace ls2c::codegen::attention

#endif // LS2C_CODEGEN_ATTENTIONCOMMON_H
