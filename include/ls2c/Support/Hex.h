//===- Hex.h - 64-bit hashes and fingerprints as text ----------*- C++ -*-===//
//
// The one spelling of a 64-bit hash (fnv1a64 of training data, a tokenizer's
// fingerprint, a kernel source's key) in messages, keys and reports: 16
// lowercase hex digits, zero-padded. No MLIR dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_SUPPORT_HEX_H
#define LS2C_SUPPORT_HEX_H

#include <cstdint>
#include <cstdio>
#include <string>

namespace ls2c {

/// `v` as 16 lowercase hex digits ("%016llx").
inline std::string hex64(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

} // namespace ls2c

#endif // LS2C_SUPPORT_HEX_H
