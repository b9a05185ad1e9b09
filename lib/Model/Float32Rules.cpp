//===- Float32Rules.cpp - Range rules for values the compiler keeps as f32 ===//

#include "Float32Rules.h"

#include <cfloat>
#include <cmath>

namespace ls2c::detail {

namespace {

// Doubles from FLT_MAX + half an ulp (2^128 - 2^103) up round to infinity
// under round-to-nearest-even (FLT_MAX's last mantissa bit is odd). Checked
// before any cast: converting an out-of-range double to float is undefined.
bool roundsToInfinity(double v) { return std::fabs(v) >= 0x1.ffffffp127; }

const char *kTooLarge =
    "overflows 32-bit float (must be at most 3.4028235e+38)";

} // namespace

std::string probabilityRule(double v) {
  if (v < 0.0 || v >= 1.0)
    return "must be in [0, 1)";
  if (static_cast<float>(v) >= 1.0f)
    return "rounds to 1 in 32-bit float (must be in [0, 1))";
  return "";
}

std::string positiveF32Rule(double v) {
  if (v <= 0.0)
    return "must be positive";
  if (roundsToInfinity(v))
    return kTooLarge;
  if (static_cast<float>(v) < FLT_MIN)
    return "rounds to zero or a subnormal in 32-bit float (must be at least "
           "1.1754944e-38)";
  return "";
}

std::string nonNegativeF32Rule(double v) {
  if (v < 0.0)
    return "must be non-negative";
  if (roundsToInfinity(v))
    return kTooLarge;
  return "";
}

} // namespace ls2c::detail
