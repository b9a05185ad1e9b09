//===- BundleTestUtil.h - helpers shared by the bundle tests --------------===//
//
// Used by BundleTest.cpp and BundleFuzzTest.cpp: Dim constructors for
// hand-built programs, and byte-level access to a serialized bundle
// (little-endian header and section-table fields; docs/bundle-format.md).
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TEST_UNIT_BUNDLETESTUTIL_H
#define LS2C_TEST_UNIT_BUNDLETESTUTIL_H

#include "ls2c/Runtime/Bundle.h"
#include "ls2c/Runtime/Program.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace ls2c::testing {

//===----------------------------------------------------------------------===//
// Dims
//===----------------------------------------------------------------------===//

/// A static dim of `size`.
inline runtime::Dim stat(int64_t size) {
  runtime::Dim d;
  d.size = size;
  return d;
}

/// A dynamic dim: axis `axis` of argument `argument`, times
/// multiplier / divisor.
inline runtime::Dim dyn(int32_t argument, int32_t axis, int64_t multiplier = 1,
                        int64_t divisor = 1) {
  runtime::Dim d;
  d.argument = argument;
  d.axis = axis;
  d.multiplier = multiplier;
  d.divisor = divisor;
  return d;
}

//===----------------------------------------------------------------------===//
// Bundle bytes
//===----------------------------------------------------------------------===//

/// The little-endian u32 at byte `at` of `b`.
inline uint32_t getU32(const std::string &b, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | static_cast<uint8_t>(b[at + i]);
  return v;
}
/// The little-endian u64 at byte `at` of `b`.
inline uint64_t getU64(const std::string &b, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | static_cast<uint8_t>(b[at + i]);
  return v;
}
/// Stores `v` little-endian at byte `at` of `b` (which must be long enough).
inline void putU32(std::string &b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    b[at + i] = static_cast<char>(v >> (8 * i));
}
/// Stores `v` little-endian at byte `at` of `b` (which must be long enough).
inline void putU64(std::string &b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    b[at + i] = static_cast<char>(v >> (8 * i));
}

/// Recomputes the section table's checksum (header bytes 24-55) after an
/// edit of the table; does nothing when the header or the table (as long as
/// the header's section count says) is not within `b`.
inline void resealTable(std::string &b) {
  if (b.size() < 56)
    return;
  uint64_t end = 56 + uint64_t(getU32(b, 12)) * 56;
  if (end > b.size())
    return;
  auto h = runtime::bundleSha256(std::string_view(b).substr(56, end - 56));
  std::memcpy(&b[24], h.data(), 32);
}

} // namespace ls2c::testing

#endif // LS2C_TEST_UNIT_BUNDLETESTUTIL_H
