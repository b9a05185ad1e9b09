//===- Philox.h - the Philox-4x32-10 counter-based generator --------------===//
//
// Philox-4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as
// easy as 1, 2, 3", SC'11), written from the paper's constants and checked
// against Random123's known-answer vectors. The ls2 counter layouts of
// random_uniform, dropout and attention dropout are here too, so the
// interpreter and its tests share one definition. No MLIR dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_REFERENCE_PHILOX_H
#define LS2C_REFERENCE_PHILOX_H

#include <array>
#include <cmath>
#include <cstdint>

namespace ls2c::reference {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

/// Ten rounds of Philox-4x32 on `counter` under `key`.
PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key);

/// The key of a 64-bit seed: (low 32 bits, high 32 bits).
PhiloxKey philoxKey(int64_t seed);

/// Element `e` of ls2.random_uniform(seed, offset) {stream}, with 16 bits:
/// counter (low(e / 8), high(e / 8), stream, low(offset)), half e % 2 (the
/// low half for even e) of output word (e / 2) % 4, as half * 2^-16. Eight
/// numbers a call: the dropout kernels' Philox was a third of their
/// instructions at four a call.
float randomUniformAt(int64_t seed, int64_t offset, uint32_t stream,
                      uint64_t e);

/// Fills `out[0 .. count)` with elements 0 .. count-1 of random_uniform
/// (eight numbers per Philox call).
void randomUniformFill(int64_t seed, int64_t offset, uint32_t stream,
                       float *out, uint64_t count);

/// Attention dropout's number for query `query` (its index within the
/// sequence, whose first packed row is `sequenceStart`), query head `head`
/// of `heads`, and key `key` (its index within the sequence), with 8 bits:
/// queries i = 16a + b + 8r (b < 8, r < 2) and keys j = 32s + 8m + 2t + p
/// (m < 4, p < 2) share the call at counter (4s + t, (sequenceStart + 16a +
/// b) * heads + head, stream, low(offset)); (i, j) takes byte 2r + p of word
/// m (byte 0 the lowest), as byte * 2^-8. Sixteen numbers a call, as
/// FlashAttention-2's 8-bit dropout: the tensor-core kernels' accumulator
/// layout gives a thread rows i and i + 8 and keys 8m + 2t + p of every 32,
/// so a thread draws exactly its own (codegen's AttentionCommon.cpp).
float attentionUniformAt(int64_t seed, int64_t offset, uint32_t stream,
                         uint64_t sequenceStart, uint64_t query, uint64_t head,
                         uint64_t heads, uint64_t key);

/// The counter's first word for key `key` in attentionUniformAt's layout.
inline uint32_t attentionKeyBlock(uint64_t key) {
  return static_cast<uint32_t>((key >> 5) << 2 | ((key >> 1) & 3));
}

/// The least 8-bit number attention dropout keeps at `rate` (in [0, 1)): a
/// probability is kept when byte >= min(ceil(rate * 256), 255), i.e. when
/// byte * 2^-8 reaches the applied rate below (a rate above 255/256 keeps 1
/// in 256).
inline uint32_t attentionKeepMin(float rate) {
  double scaled = std::ceil(static_cast<double>(rate) * 256.0);
  return scaled <= 0 ? 0u : scaled >= 255 ? 255u : static_cast<uint32_t>(scaled);
}

/// The rate attention dropout applies for `rate`: rounded up to a multiple
/// of 2^-8 (attentionKeepMin / 256; 0.1 -> 26/256 = 0.1016), as
/// FlashAttention-2's 8-bit dropout rounds it. Kept probabilities are scaled
/// by 1 / (1 - applied rate), so the expectation is exact; every backend
/// (cuDNN's too) applies this rate.
inline double attentionAppliedRate(float rate) {
  return attentionKeepMin(rate) / 256.0;
}

/// Half `odd` of a Philox output word as a float in [0, 1): half * 2^-16.
inline float uniformFromHalf(uint32_t word, bool odd) {
  return static_cast<float>(odd ? word >> 16 : word & 0xffffu) *
         (1.0f / 65536.0f);
}

} // namespace ls2c::reference

#endif // LS2C_REFERENCE_PHILOX_H
