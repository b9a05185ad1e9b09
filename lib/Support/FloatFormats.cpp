//===- FloatFormats.cpp - rounding doubles to f32, f16 and bf16 -----------===//
#include "ls2c/Support/FloatFormats.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

namespace ls2c {

namespace {

/// y rounded to an integer, ties to even, whatever the FP environment's mode.
/// |y| < 2^53, so y - floor(y) is exact.
double roundHalfEven(double y) {
  double lower = std::floor(y);
  double frac = y - lower;
  if (frac > 0.5)
    return lower + 1.0;
  if (frac < 0.5)
    return lower;
  return std::fmod(lower, 2.0) == 0.0 ? lower : lower + 1.0;
}

/// Rounds x to a binary format with `fractionBits` explicit fraction bits,
/// smallest normal exponent `minExponent` (subnormals below it, with the
/// same spacing as the smallest normals) and largest finite value
/// `maxFinite`; beyond it, ±inf.
double roundToFormat(double x, int fractionBits, int minExponent,
                     double maxFinite) {
  if (!std::isfinite(x) || x == 0.0)
    return x;
  int e = 0;
  std::frexp(x, &e); // |x| = m * 2^e with m in [0.5, 1): floor(log2|x|) = e-1
  int exponent = std::max(e - 1, minExponent);
  // The spacing of representable numbers around x; x / quantum is exact
  // (a power-of-two scaling that moves x away from double's subnormals).
  double quantum = std::ldexp(1.0, exponent - fractionBits);
  double rounded = roundHalfEven(x / quantum) * quantum;
  if (rounded == 0.0)
    return std::copysign(0.0, x);
  if (std::fabs(rounded) > maxFinite)
    return std::copysign(std::numeric_limits<double>::infinity(), x);
  return rounded;
}

} // namespace

double roundToF32(double x) { return roundToFormat(x, 23, -126, FLT_MAX); }

double roundToF16(double x) { return roundToFormat(x, 10, -14, 65504.0); }

double roundToBF16(double x) {
  // (2 - 2^-7) * 2^127
  return roundToFormat(x, 7, -126, std::ldexp(255.0, 120));
}

uint16_t toF16Bits(double x) {
  double r = roundToF16(x);
  uint16_t sign = std::signbit(r) ? 0x8000 : 0;
  if (std::isnan(r))
    return sign | 0x7E00;
  if (std::isinf(r))
    return sign | 0x7C00;
  double a = std::fabs(r);
  if (a == 0.0)
    return sign;
  if (a < std::ldexp(1.0, -14)) // subnormal: a multiple of 2^-24
    return sign | static_cast<uint16_t>(std::ldexp(a, 24));
  int e = 0;
  std::frexp(a, &e);
  int exponent = e - 1; // a in [2^exponent, 2^(exponent+1))
  auto fraction =
      static_cast<uint16_t>(std::ldexp(a, 10 - exponent) - 1024.0);
  return sign | static_cast<uint16_t>((exponent + 15) << 10) | fraction;
}

double fromF16Bits(uint16_t bits) {
  double sign = (bits & 0x8000) ? -1.0 : 1.0;
  int exponent = (bits >> 10) & 0x1F;
  int fraction = bits & 0x3FF;
  if (exponent == 0x1F)
    return fraction ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  if (exponent == 0)
    return sign * std::ldexp(fraction, -24);
  return sign * std::ldexp(1024 + fraction, exponent - 25);
}

uint16_t toBF16Bits(double x) {
  double r = roundToBF16(x);
  if (std::isnan(r))
    return std::signbit(r) ? 0xFFC0 : 0x7FC0;
  // r is exactly a float (and within its range, or ±inf).
  auto f = static_cast<float>(r);
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  return static_cast<uint16_t>(bits >> 16);
}

double fromBF16Bits(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f = 0.0f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

uint16_t floatToF16Bits(float x) {
  uint32_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t a = bits & 0x7FFFFFFFu;
  if (a > 0x7F800000u)
    return sign | 0x7E00;
  // 65520 = 65504 + half an ulp: from there on even rounding gives inf.
  if (a >= 0x477FF000u)
    return sign | 0x7C00;
  if (a < 0x38800000u) { // below 2^-14: a multiple of 2^-24 (or 1024 of them)
    float magnitude = 0.0f;
    std::memcpy(&magnitude, &a, sizeof magnitude);
    return sign | static_cast<uint16_t>(std::nearbyint(magnitude * 16777216.0f));
  }
  // Rebias the exponent (127 -> 15), then round the 13 dropped bits to
  // nearest even; a carry moves into the exponent as it should.
  a -= (127u - 15u) << 23;
  a += 0x0FFFu + ((a >> 13) & 1u);
  return sign | static_cast<uint16_t>(a >> 13);
}

uint16_t floatToBF16Bits(float x) {
  uint32_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u)
    return (bits & 0x80000000u) ? 0xFFC0 : 0x7FC0;
  // Round the 16 dropped bits to nearest even; overflow carries into inf.
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

} // namespace ls2c
