//===- Utf8.cpp - well-formed UTF-8 byte sequences ------------------------===//
#include "ls2c/Support/Utf8.h"

namespace ls2c {

size_t utf8SequenceLength(std::string_view s) {
  if (s.empty())
    return 0;
  auto at = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = at(0);
  if (c < 0x80)
    return 1;
  // The sequence length, from the lead byte, and the range of the second
  // byte (Table 3-7); bytes 3 and 4 are always 80..BF.
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0)
      lo = 0xA0; // overlong below U+0800
    else if (c == 0xED)
      hi = 0x9F; // surrogates U+D800..U+DFFF
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0)
      lo = 0x90; // overlong below U+10000
    else if (c == 0xF4)
      hi = 0x8F; // above U+10FFFF
  } else {
    return 0; // continuation byte, C0/C1 (overlong), or F5..FF
  }
  if (s.size() < n || at(1) < lo || at(1) > hi)
    return 0;
  for (size_t i = 2; i < n; ++i)
    if (at(i) < 0x80 || at(i) > 0xBF)
      return 0;
  return n;
}

bool isValidUtf8(std::string_view s) { return findInvalidUtf8(s) == std::string_view::npos; }

size_t findInvalidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) { // ASCII, the common case
      ++i;
      continue;
    }
    size_t n = utf8SequenceLength(s.substr(i));
    if (n == 0)
      return i;
    i += n;
  }
  return std::string_view::npos;
}

} // namespace ls2c
