//===- PhiloxTest.cpp - Philox-4x32-10 and the ls2 counter layouts --------===//
#include "Philox.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace ls2c::reference;

// Random123's tests/kat_vectors, the three "philox4x32 10" lines
// (counter[4] key[2] -> result[4]).
TEST(Philox, KnownAnswerVectors) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                          {0xffffffff, 0xffffffff}),
            (PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                          {0xa4093822, 0x299f31d0}),
            (PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, UniformFromHalfSpansZeroToOne) {
  EXPECT_EQ(uniformFromHalf(0xffff0000u, false), 0.0f);
  EXPECT_EQ(uniformFromHalf(0x0000ffffu, true), 0.0f);
  EXPECT_EQ(uniformFromHalf(0x80000000u, true), 0.5f);
  EXPECT_EQ(uniformFromHalf(0x00008000u, false), 0.5f);
  EXPECT_EQ(uniformFromHalf(0xffffffffu, false), 1.0f - 1.0f / 65536.0f);
}

TEST(Philox, KeyIsSeedLowThenHigh) {
  EXPECT_EQ(philoxKey(0x0123456789abcdefLL),
            (PhiloxKey{0x89abcdefu, 0x01234567u}));
  EXPECT_EQ(philoxKey(-1), (PhiloxKey{0xffffffffu, 0xffffffffu}));
}

TEST(Philox, RandomUniformCounterLayout) {
  const int64_t seed = 0x1234abcd5678ef01LL, offset = 0x700000005LL;
  const uint32_t stream = 9;
  // Element indices whose e / 8 needs both counter words; even and odd.
  for (uint64_t e : {uint64_t{0}, uint64_t{3}, uint64_t{5}, uint64_t{7},
                     uint64_t{8}, (uint64_t{1} << 36) + 6,
                     (uint64_t{7} << 40) + 1}) {
    uint64_t block = e / 8;
    PhiloxCounter words = philox4x32_10(
        {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
         stream, 5u},
        {0x5678ef01u, 0x1234abcdu});
    uint32_t word = words[(e / 2) % 4];
    uint32_t half = e % 2 ? word >> 16 : word & 0xffffu;
    EXPECT_EQ(randomUniformAt(seed, offset, stream, e),
              static_cast<float>(half) / 65536.0f)
        << "element " << e;
  }
  // Only the offset's low 32 bits enter the counter.
  EXPECT_EQ(randomUniformAt(seed, 5, stream, 11),
            randomUniformAt(seed, offset, stream, 11));
}

TEST(Philox, FillMatchesElementwiseAndIsUniform) {
  const uint64_t n = 100003; // not a multiple of 8
  std::vector<float> values(n);
  randomUniformFill(42, 3, 1, values.data(), n);
  double sum = 0;
  uint64_t dropped = 0;
  for (uint64_t e = 0; e < n; ++e) {
    dropped += values[e] < 0.1f;
    if (e % 997 == 0 || e + 7 >= n) {
      ASSERT_EQ(values[e], randomUniformAt(42, 3, 1, e)) << e;
    }
    ASSERT_GE(values[e], 0.0f);
    ASSERT_LT(values[e], 1.0f);
    sum += values[e];
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);
  EXPECT_NEAR(static_cast<double>(dropped) / n, 0.1, 0.005);
  std::vector<float> other(n);
  randomUniformFill(42, 3, 2, other.data(), n);
  EXPECT_NE(values, other); // another stream, other numbers
}

TEST(Philox, AttentionCounterLayout) {
  const int64_t seed = 77, offset = 0x100000003LL;
  const uint64_t heads = 12;
  for (uint64_t start : {0u, 5u, 1000u})
    for (uint64_t query : {0u, 7u, 8u, 9u, 15u, 16u, 27u, 100u})
      for (uint64_t head : {0u, 11u})
        for (uint64_t key : {0u, 1u, 6u, 9u, 30u, 33u, 70u, 1000001u}) {
          // Queries 16a + b + 8r share the call of row 16a + b; keys 32s +
          // 8m + 2t + p: counter 4s + t, word m, byte 2r + p.
          uint64_t s = key / 32, m = key % 32 / 8, t = key % 8 / 2, p = key % 2;
          uint64_t r = query / 8 % 2, pairRow = start + query - 8 * r;
          PhiloxCounter words = philox4x32_10(
              {static_cast<uint32_t>(4 * s + t),
               static_cast<uint32_t>(pairRow * heads + head), 4u, 3u},
              {77u, 0u});
          uint32_t byte = words[m] >> (8 * (2 * r + p)) & 0xff;
          EXPECT_EQ(attentionUniformAt(seed, offset, 4, start, query, head, heads, key),
                    static_cast<float>(byte) / 256.0f)
              << query << ' ' << key;
        }
}

TEST(Philox, AttentionCallsAreSharedByRowPairsOnly) {
  // Rows 8 apart in one 16 take different bytes of one call; a row pair
  // of another 16 (or another sequence start) takes another call.
  auto numbers = [](uint64_t start, uint64_t query) {
    std::vector<float> u;
    for (uint64_t key = 0; key < 64; ++key)
      u.push_back(attentionUniformAt(3, 0, 1, start, query, 0, 1, key));
    return u;
  };
  EXPECT_NE(numbers(0, 2), numbers(0, 10));
  EXPECT_NE(numbers(0, 2), numbers(0, 18));
  EXPECT_EQ(numbers(16, 2), numbers(0, 18)); // the same pair row, 18
  EXPECT_NE(numbers(8, 2), numbers(0, 10));  // pair rows 10 and 2 differ
}

TEST(Philox, AttentionAppliedRate) {
  EXPECT_EQ(attentionKeepMin(0.0f), 0u);
  EXPECT_EQ(attentionKeepMin(0.1f), 26u); // 25.6 rounded up
  EXPECT_EQ(attentionKeepMin(0.5f), 128u);
  EXPECT_EQ(attentionKeepMin(0.25f), 64u);
  EXPECT_EQ(attentionKeepMin(0.999f), 255u); // at most 255: 1 in 256 kept
  EXPECT_DOUBLE_EQ(attentionAppliedRate(0.1f), 26.0 / 256.0);
  // Kept exactly when the number reaches the rate, up to 255/256.
  for (float rate : {0.05f, 0.1f, 0.2f, 0.3f, 0.5f, 0.9f, 0.99f})
    for (uint32_t byte = 0; byte < 256; ++byte)
      EXPECT_EQ(static_cast<float>(byte) / 256.0f >= rate, byte >= attentionKeepMin(rate))
          << rate << ' ' << byte;
  // Above 255/256 the largest number, 255/256, is still kept.
  EXPECT_DOUBLE_EQ(attentionAppliedRate(0.999f), 255.0 / 256.0);
  EXPECT_DOUBLE_EQ(attentionAppliedRate(0.99609375f), 255.0 / 256.0);
}

TEST(Philox, AttentionNumbersAreUniform) {
  // Every byte of a call is used once: over many queries and keys the
  // numbers cover [0, 1) evenly and a rate of 0.1 drops 26 in 256.
  const uint64_t keys = 1 << 20;
  double sum = 0;
  uint64_t dropped = 0;
  std::vector<uint32_t> histogram(16);
  for (uint64_t key = 0; key < keys; ++key) {
    float u = attentionUniformAt(9, 2, 1, 3, key / 1024, 0, 1, key % 1024);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    dropped += u < 0.1f;
    ++histogram[static_cast<size_t>(u * 16)];
  }
  EXPECT_NEAR(sum / keys, 0.5, 0.002);
  // 4 standard deviations (3e-4 each): tells 26/256 from 0.1.
  EXPECT_NEAR(static_cast<double>(dropped) / keys, 26.0 / 256, 0.0012);
  for (uint32_t count : histogram)
    EXPECT_NEAR(count, keys / 16.0, 6 * std::sqrt(keys / 16.0));
}
