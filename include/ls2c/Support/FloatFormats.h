//===- FloatFormats.h - rounding doubles to f32, f16 and bf16 -------------===//
//
// Exact round-to-nearest-even from double to the storage formats of the ls2
// dialect, done once (never double → f32 → f16). Results are doubles that
// the target format represents exactly; overflow gives ±inf, NaN stays NaN.
// Shared by the CPU reference backend (lib/Reference/FloatFormats.h adds the
// rounding per element type) and the runtime's host encodings of device
// tensors (ls2c/Runtime/DeviceTensors.h).
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_SUPPORT_FLOATFORMATS_H
#define LS2C_SUPPORT_FLOATFORMATS_H

#include <cstdint>

namespace ls2c {

/// IEEE binary32, as `(double)(float)x`.
double roundToF32(double x);
/// IEEE binary16: 10 fraction bits, normal exponents [-14, 15], max 65504.
double roundToF16(double x);
/// bfloat16: 7 fraction bits, binary32's exponent range.
double roundToBF16(double x);

/// The encodings, for tests and for writing tensors out (round first).
uint16_t toF16Bits(double x);
double fromF16Bits(uint16_t bits);
uint16_t toBF16Bits(double x);
double fromBF16Bits(uint16_t bits);

/// The same encodings of a float, by integer arithmetic on its bits (about
/// twenty times faster than through double; equal to toF16Bits and
/// toBF16Bits of (double)x for every float, NaN as their quiet NaN): for
/// casting whole fp32 weight vectors.
uint16_t floatToF16Bits(float x);
uint16_t floatToBF16Bits(float x);

} // namespace ls2c

#endif // LS2C_SUPPORT_FLOATFORMATS_H
