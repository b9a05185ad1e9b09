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
/// numbers a call, as attention dropout's: the dropout kernels' Philox was a
/// third of their instructions at four a call.
float randomUniformAt(int64_t seed, int64_t offset, uint32_t stream,
                      uint64_t e);

/// Fills `out[0 .. count)` with elements 0 .. count-1 of random_uniform
/// (eight numbers per Philox call).
void randomUniformFill(int64_t seed, int64_t offset, uint32_t stream,
                       float *out, uint64_t count);

/// Attention dropout's number for packed query row `row`, query head `head`
/// of `heads`, and key `key` (its index within the sequence), with 16 bits:
/// the 8 keys 32s + 8m + 2t + p (m < 4, p < 2) of a row and head share the
/// call at counter (4s + t, row * heads + head, stream, low(offset)); key j
/// takes word m = (j / 8) % 4, its low half for even j and its high half for
/// odd j, as half * 2^-16. Eight numbers a call, each thread of the
/// tensor-core kernels' accumulator layout drawing its own (codegen's
/// AttentionCommon.cpp).
float attentionUniformAt(int64_t seed, int64_t offset, uint32_t stream,
                         uint64_t row, uint64_t head, uint64_t heads,
                         uint64_t key);

/// The counter's first word for key `key` in attentionUniformAt's layout.
inline uint32_t attentionKeyBlock(uint64_t key) {
  return static_cast<uint32_t>((key >> 5) << 2 | ((key >> 1) & 3));
}

/// Half `odd` of a Philox output word as a float in [0, 1): half * 2^-16.
inline float uniformFromHalf(uint32_t word, bool odd) {
  return static_cast<float>(odd ? word >> 16 : word & 0xffffu) *
         (1.0f / 65536.0f);
}

} // namespace ls2c::reference

#endif // LS2C_REFERENCE_PHILOX_H
