//===- FloatFormats.cpp - rounding doubles to an element type -------------===//
#include "FloatFormats.h"

namespace ls2c::reference {

double roundTo(ElementType type, double x) {
  switch (type) {
  case ElementType::F32:
    return roundToF32(x);
  case ElementType::F16:
    return roundToF16(x);
  case ElementType::BF16:
    return roundToBF16(x);
  default:
    return x;
  }
}

} // namespace ls2c::reference
