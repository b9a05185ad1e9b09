//===- FloatFormats.h - rounding doubles to f32, f16 and bf16 -------------===//
//
// The float formats of ls2c/Support/FloatFormats.h under the reference
// backend's names, and the rounding for an ElementType. No MLIR dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_REFERENCE_FLOATFORMATS_H
#define LS2C_REFERENCE_FLOATFORMATS_H

#include "ls2c/Reference/HostTensor.h"
#include "ls2c/Support/FloatFormats.h"

namespace ls2c::reference {

using ls2c::fromBF16Bits;
using ls2c::fromF16Bits;
using ls2c::floatToBF16Bits;
using ls2c::floatToF16Bits;
using ls2c::roundToBF16;
using ls2c::roundToF16;
using ls2c::roundToF32;
using ls2c::toBF16Bits;
using ls2c::toF16Bits;

/// The rounding for a float element type; integer types are returned as is.
double roundTo(ElementType type, double x);

} // namespace ls2c::reference

#endif // LS2C_REFERENCE_FLOATFORMATS_H
