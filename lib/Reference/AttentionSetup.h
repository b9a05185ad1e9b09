//===- AttentionSetup.h - operands shared by attention and its backward ---===//
//
// ls2.attention and ls2.attention_grad take the same q, k, v, cu_seqlens
// and dropout operands; both kernels read and check them here.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_LIB_REFERENCE_ATTENTIONSETUP_H
#define LS2C_LIB_REFERENCE_ATTENTIONSETUP_H

#include "Kernels.h"
#include "Philox.h"

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace ls2c::reference::detail {

struct AttentionSetup {
  const HostTensor *q, *k, *v;
  int64_t tq, hq, d, tk, hkv;
  const std::vector<int64_t> *cuq, *cuk; ///< validated [batch + 1] offsets
  /// Sequence b's keys: rows keyStart[b] .. keyStart[b] + keyLength[b] - 1
  /// (from cu_seqlens_k, or with key_lengths a cache's used rows).
  std::vector<int64_t> keyStart, keyLength;
  double scale, rate;
  /// With dropout, a probability is kept when its 8-bit number reaches
  /// appliedRate (Philox.h's attentionAppliedRate) and then scaled by
  /// keepScale = 1 / (1 - appliedRate); without, 0 and 1.
  double appliedRate = 0, keepScale = 1;
  bool causal, dropout;
  int64_t seed = 0, offset = 0, stream = 0;
};

/// Reads and checks the operands of an attention op or its backward.
template <typename AttentionLikeOp>
AttentionSetup readAttentionSetup(AttentionLikeOp op, Frame &frame) {
  AttentionSetup s;
  s.q = &frame.get(op, op.getQuery());
  s.k = &frame.get(op, op.getKey());
  s.v = &frame.get(op, op.getValue());
  const HostTensor &q = *s.q, &k = *s.k, &v = *s.v;
  if (q.rank() != 3 || k.rank() != 3 || k.shape != v.shape)
    fail(op, "query " + q.describe() + ", key " + k.describe() + " and value " +
                 v.describe() + " must be [tokens, heads, head_dim] with "
                 "equal key and value shapes");
  s.tq = q.shape[0], s.hq = q.shape[1], s.d = q.shape[2];
  s.tk = k.shape[0], s.hkv = k.shape[1];
  if (k.shape[2] != s.d || s.hkv == 0 || s.hq % s.hkv != 0)
    fail(op, "key " + k.describe() + " does not fit query " + q.describe());
  const HostTensor &cuq = frame.get(op, op.getCuSeqlensQ());
  const HostTensor &cuk = frame.get(op, op.getCuSeqlensK());
  if (cuq.shape != cuk.shape)
    fail(op, "cu_seqlens_q " + cuq.describe() + " and cu_seqlens_k " +
                 cuk.describe() + " must have the same length");
  s.cuq = &checkCuSeqlens(op, cuq, "cu_seqlens_q", s.tq);
  const HostTensor *lengths = nullptr;
  if constexpr (std::is_same_v<AttentionLikeOp, ls2::AttentionOp>)
    if (op.getKeyLengths())
      lengths = &frame.get(op, op.getKeyLengths());
  if (lengths) {
    s.cuk = &checkKeyStarts(op, cuk, *lengths, s.tk);
    s.keyStart.assign(s.cuk->begin(), s.cuk->end() - 1);
    s.keyLength = lengths->ints;
  } else {
    s.cuk = &checkCuSeqlens(op, cuk, "cu_seqlens_k", s.tk);
    for (size_t b = 0; b + 1 < s.cuk->size(); ++b) {
      s.keyStart.push_back((*s.cuk)[b]);
      s.keyLength.push_back((*s.cuk)[b + 1] - (*s.cuk)[b]);
    }
  }

  s.scale = op.getEffectiveScale();
  s.causal = op.getCausal();
  s.rate = op.getDropoutRate().convertToDouble();
  s.dropout = s.rate > 0.0;
  if (s.dropout) {
    s.appliedRate = attentionAppliedRate(static_cast<float>(s.rate));
    s.keepScale = 1.0 / (1.0 - s.appliedRate);
  }
  s.stream = static_cast<int64_t>(op.getStream());
  if (s.dropout) {
    if (!op.getSeed() || !op.getOffset())
      fail(op, "dropout_rate > 0 needs the seed and offset operands");
    s.seed = scalarInt(op, frame.get(op, op.getSeed()), "seed");
    s.offset = scalarInt(op, frame.get(op, op.getOffset()), "offset");
    if (s.stream < 0 || s.stream > UINT32_MAX)
      fail(op, "stream " + std::to_string(s.stream) + " must fit in 32 bits");
  }
  return s;
}

} // namespace ls2c::reference::detail

#endif // LS2C_LIB_REFERENCE_ATTENTIONSETUP_H
