//===- Philox.cpp - the Philox-4x32-10 counter-based generator ------------===//
#include "Philox.h"

namespace ls2c::reference {

namespace {

// The paper's round multipliers and Weyl-sequence key increments (the
// golden ratio and sqrt(3) - 1 in 0.32 fixed point).
constexpr uint32_t kMultiplier0 = 0xD2511F53u;
constexpr uint32_t kMultiplier1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;
constexpr uint32_t kWeyl1 = 0xBB67AE85u;

inline void mulHiLo(uint32_t a, uint32_t b, uint32_t &hi, uint32_t &lo) {
  uint64_t product = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(product >> 32);
  lo = static_cast<uint32_t>(product);
}

inline uint32_t low32(uint64_t x) { return static_cast<uint32_t>(x); }
inline uint32_t high32(uint64_t x) { return static_cast<uint32_t>(x >> 32); }

} // namespace

PhiloxCounter philox4x32_10(PhiloxCounter x, PhiloxKey key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) { // the key advances between rounds
      key[0] += kWeyl0;
      key[1] += kWeyl1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    mulHiLo(kMultiplier0, x[0], hi0, lo0);
    mulHiLo(kMultiplier1, x[2], hi1, lo1);
    x = {hi1 ^ x[1] ^ key[0], lo1, hi0 ^ x[3] ^ key[1], lo0};
  }
  return x;
}

PhiloxKey philoxKey(int64_t seed) {
  auto bits = static_cast<uint64_t>(seed);
  return {low32(bits), high32(bits)};
}

float randomUniformAt(int64_t seed, int64_t offset, uint32_t stream,
                      uint64_t e) {
  uint64_t block = e / 8;
  PhiloxCounter words =
      philox4x32_10({low32(block), high32(block), stream,
                     low32(static_cast<uint64_t>(offset))},
                    philoxKey(seed));
  return uniformFromHalf(words[(e / 2) % 4], (e & 1) != 0);
}

void randomUniformFill(int64_t seed, int64_t offset, uint32_t stream,
                       float *out, uint64_t count) {
  PhiloxKey key = philoxKey(seed);
  uint32_t offsetLow = low32(static_cast<uint64_t>(offset));
  for (uint64_t block = 0; block * 8 < count; ++block) {
    PhiloxCounter words = philox4x32_10(
        {low32(block), high32(block), stream, offsetLow}, key);
    for (uint64_t h = 0; h < 8 && block * 8 + h < count; ++h)
      out[block * 8 + h] = uniformFromHalf(words[h / 2], (h & 1) != 0);
  }
}

float attentionUniformAt(int64_t seed, int64_t offset, uint32_t stream,
                         uint64_t sequenceStart, uint64_t query, uint64_t head,
                         uint64_t heads, uint64_t key) {
  uint64_t pairRow = sequenceStart + (query & ~uint64_t{8});
  PhiloxCounter words = philox4x32_10(
      {attentionKeyBlock(key), low32(pairRow * heads + head), stream,
       low32(static_cast<uint64_t>(offset))},
      philoxKey(seed));
  uint32_t byte = 2 * ((query >> 3) & 1) + (key & 1);
  return static_cast<float>((words[(key >> 3) & 3] >> (8 * byte)) & 0xffu) *
         (1.0f / 256.0f);
}

} // namespace ls2c::reference
