//===- FloatFormatsTest.cpp - double -> f32 / f16 / bf16 rounding ---------===//
//
// Every finite f16 and bf16 value must round to itself, and every midpoint
// between neighbours must go to the one with an even last bit. The decoders
// here are independent of the code under test.
//
//===----------------------------------------------------------------------===//
#include "FloatFormats.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace ls2c::reference;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

// IEEE binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits.
double decodeHalf(uint16_t bits) {
  int sign = bits >> 15, exponent = (bits >> 10) & 31, fraction = bits & 1023;
  double magnitude;
  if (exponent == 31)
    magnitude = fraction ? std::nan("") : kInf;
  else if (exponent == 0)
    magnitude = fraction * std::pow(2.0, -24);
  else
    magnitude = (1.0 + fraction / 1024.0) * std::pow(2.0, exponent - 15);
  return sign ? -magnitude : magnitude;
}

// bfloat16: 1 sign, 8 exponent (bias 127), 7 fraction bits.
double decodeBFloat(uint16_t bits) {
  int sign = bits >> 15, exponent = (bits >> 7) & 255, fraction = bits & 127;
  double magnitude;
  if (exponent == 255)
    magnitude = fraction ? std::nan("") : kInf;
  else if (exponent == 0)
    magnitude = fraction * std::pow(2.0, -133);
  else
    magnitude = (1.0 + fraction / 128.0) * std::pow(2.0, exponent - 127);
  return sign ? -magnitude : magnitude;
}

// Checks round-to-self for all positive finite encodings below `maxBits`,
// and the midpoint rule between neighbours (the one after maxBits is the
// overflow threshold, `overflowNext`).
template <typename Decode, typename Round>
void checkFormat(Decode decode, Round round, uint16_t maxBits,
                 double overflowNext) {
  for (uint32_t b = 0; b <= maxBits; ++b) {
    double v = decode(static_cast<uint16_t>(b));
    ASSERT_EQ(round(v), v) << "bits " << b;
    ASSERT_EQ(round(-v), -v) << "bits " << b;
    double next = b == maxBits ? overflowNext
                               : decode(static_cast<uint16_t>(b + 1));
    double mid = (v + next) / 2; // exact in double
    double expectedMid = (b % 2 == 0) ? v : next;
    if (b == maxBits)
      expectedMid = kInf; // the tie goes to the (even) overflow
    ASSERT_EQ(round(mid), expectedMid) << "midpoint above bits " << b;
    ASSERT_EQ(round(-mid), -expectedMid) << "midpoint above bits " << b;
    ASSERT_EQ(round(std::nextafter(mid, 0.0)), v) << "below mid " << b;
    double above = std::nextafter(mid, kInf);
    ASSERT_EQ(round(above), b == maxBits ? kInf : next) << "above mid " << b;
  }
}

} // namespace

TEST(FloatFormats, F16EveryValueAndMidpoint) {
  checkFormat(decodeHalf, roundToF16, 0x7BFF, 65536.0);
}

TEST(FloatFormats, BF16EveryValueAndMidpoint) {
  checkFormat(decodeBFloat, roundToBF16, 0x7F7F, std::pow(2.0, 128));
}

TEST(FloatFormats, F16EdgeCases) {
  EXPECT_EQ(roundToF16(65504.0), 65504.0);
  EXPECT_EQ(roundToF16(65519.0), 65504.0);
  EXPECT_EQ(roundToF16(65520.0), kInf);
  EXPECT_EQ(roundToF16(-65520.0), -kInf);
  EXPECT_EQ(roundToF16(1e10), kInf);
  EXPECT_EQ(roundToF16(kInf), kInf);
  EXPECT_TRUE(std::isnan(roundToF16(std::nan(""))));
  // Subnormals: 2^-24 is the smallest; half of it ties to 0 (even).
  EXPECT_EQ(roundToF16(std::ldexp(1.0, -24)), std::ldexp(1.0, -24));
  EXPECT_EQ(roundToF16(std::ldexp(1.0, -25)), 0.0);
  EXPECT_EQ(roundToF16(std::ldexp(1.0, -25) * 1.0000001), std::ldexp(1.0, -24));
  EXPECT_EQ(roundToF16(3 * std::ldexp(1.0, -25)), std::ldexp(1.0, -23));
  EXPECT_EQ(roundToF16(1e-30), 0.0);
  EXPECT_TRUE(std::signbit(roundToF16(-1e-30)));
  // The largest subnormal's upper midpoint ties up to the smallest normal.
  EXPECT_EQ(roundToF16(std::ldexp(1.0, -14) - std::ldexp(1.0, -25)),
            std::ldexp(1.0, -14));
  // Ties between normals.
  EXPECT_EQ(roundToF16(1.0 + std::ldexp(1.0, -11)), 1.0);
  EXPECT_EQ(roundToF16(1.0 + 3 * std::ldexp(1.0, -11)),
            1.0 + std::ldexp(1.0, -9));
  EXPECT_EQ(roundToF16(2049.0), 2048.0);
  EXPECT_EQ(roundToF16(2051.0), 2052.0);
}

TEST(FloatFormats, BF16EdgeCases) {
  EXPECT_EQ(roundToBF16(1.0 + std::ldexp(1.0, -8)), 1.0);
  EXPECT_EQ(roundToBF16(1.0 + 3 * std::ldexp(1.0, -8)),
            1.0 + std::ldexp(1.0, -6));
  EXPECT_EQ(roundToBF16(1.0 + std::ldexp(1.0, -8) + 1e-12),
            1.0 + std::ldexp(1.0, -7));
  EXPECT_EQ(roundToBF16(3.0e38), decodeBFloat(0x7F62));
  EXPECT_EQ(roundToBF16(3.4e38), kInf); // above (2 - 2^-8) * 2^127
  EXPECT_EQ(roundToBF16(std::ldexp(1.0, -133)), std::ldexp(1.0, -133));
  EXPECT_EQ(roundToBF16(std::ldexp(1.0, -134)), 0.0);
  EXPECT_TRUE(std::isnan(roundToBF16(-std::nan(""))));
}

TEST(FloatFormats, F32MatchesTheFloatCast) {
  std::mt19937_64 rng(20240601);
  std::uniform_real_distribution<double> mantissa(-2.0, 2.0);
  std::uniform_int_distribution<int> exponent(-160, 120);
  for (int i = 0; i < 200000; ++i) {
    double x = std::ldexp(mantissa(rng), exponent(rng));
    ASSERT_EQ(roundToF32(x), static_cast<double>(static_cast<float>(x))) << x;
  }
  EXPECT_EQ(roundToF32(FLT_MAX), FLT_MAX);
  double halfUlp = std::ldexp(1.0, 127 - 24);
  EXPECT_EQ(roundToF32(FLT_MAX + halfUlp), kInf);
  EXPECT_EQ(roundToF32(std::nextafter(FLT_MAX + halfUlp, 0.0)), FLT_MAX);
  EXPECT_EQ(roundToF32(std::ldexp(1.0, -150)), 0.0);
  EXPECT_EQ(roundToF32(std::ldexp(3.0, -150)), std::ldexp(1.0, -148));
  EXPECT_EQ(roundTo(ElementType::F32, 0.1), static_cast<double>(0.1f));
  EXPECT_EQ(roundTo(ElementType::I32, 0.1), 0.1);
}

TEST(FloatFormats, Encodings) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    auto bits = static_cast<uint16_t>(b);
    double h = decodeHalf(bits), f = decodeBFloat(bits);
    if (!std::isnan(h)) {
      ASSERT_EQ(toF16Bits(h), bits);
      ASSERT_EQ(fromF16Bits(bits), h);
    }
    if (!std::isnan(f)) {
      ASSERT_EQ(toBF16Bits(f), bits);
      ASSERT_EQ(fromBF16Bits(bits), f);
    }
  }
  EXPECT_EQ(toF16Bits(65520.0), 0x7C00);
  EXPECT_EQ(toF16Bits(std::nan("")) & 0x7C00, 0x7C00);
  EXPECT_TRUE(std::isnan(fromF16Bits(0x7E00)));
  EXPECT_TRUE(std::isnan(fromBF16Bits(toBF16Bits(std::nan("")))));
}

namespace {

float floatOfBits(uint32_t bits) {
  float f = 0.0f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// The bit-level float encoders against the double ones: a spread of floats
// over every exponent (a stride through all 2^32 bit patterns, offset by a
// fresh random start), and each float on and next to every midpoint between
// neighbouring f16 (or bf16) values, where the ties are decided.
TEST(FloatFormats, FloatEncodersMatchTheDoubleOnes) {
  std::mt19937 rng(std::random_device{}());
  const uint32_t start = rng() % 4099;
  int64_t checked = 0;
  for (uint64_t b = start; b <= 0xFFFFFFFFull; b += 4099, ++checked) {
    const float f = floatOfBits(static_cast<uint32_t>(b));
    ASSERT_EQ(floatToF16Bits(f), toF16Bits(f)) << "f16 of bits " << std::hex << b;
    ASSERT_EQ(floatToBF16Bits(f), toBF16Bits(f)) << "bf16 of bits " << std::hex << b;
  }
  EXPECT_GT(checked, 1000000);
  for (uint32_t h = 0; h < 0x7C00; ++h) {
    // Midpoint between f16 h and h + 1 (h + 1 = 0x7C00 is inf: the
    // overflow threshold), exact in float, and the floats beside it.
    const double lo = decodeHalf(static_cast<uint16_t>(h));
    const double hi = h + 1 < 0x7C00 ? decodeHalf(static_cast<uint16_t>(h + 1)) : 65536.0;
    for (float sign : {1.0f, -1.0f}) {
      const float mid = sign * static_cast<float>((lo + hi) / 2);
      for (float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, sign * INFINITY)})
        ASSERT_EQ(floatToF16Bits(f), toF16Bits(f)) << "f16 near the midpoint above " << lo;
    }
  }
  for (uint32_t h = 0; h < 0x7F80; ++h) {
    const float lo = floatOfBits(h << 16), hi = floatOfBits((h + 1) << 16);
    const float mid = floatOfBits((h << 16) | 0x8000);
    for (float f : {mid, std::nextafter(mid, lo), std::nextafter(mid, hi), -mid})
      ASSERT_EQ(floatToBF16Bits(f), toBF16Bits(f)) << "bf16 near the midpoint above " << lo;
  }
  for (float f : {INFINITY, -INFINITY, NAN, -NAN, 0.0f, -0.0f, FLT_MAX, -FLT_MAX, FLT_MIN,
                  FLT_TRUE_MIN}) {
    EXPECT_EQ(floatToF16Bits(f), toF16Bits(f)) << f;
    EXPECT_EQ(floatToBF16Bits(f), toBF16Bits(f)) << f;
  }
}

} // namespace
