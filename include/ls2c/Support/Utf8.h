//===- Utf8.h - well-formed UTF-8 byte sequences --------------------------===//
//
// The one definition of "valid UTF-8" in ls2c: the well-formed byte sequences
// of RFC 3629 section 4 and Unicode (chapter 3) Table 3-7:
//
//   code points           byte 1   byte 2   byte 3   byte 4
//   U+0000..U+007F        00..7F
//   U+0080..U+07FF        C2..DF   80..BF
//   U+0800..U+0FFF        E0       A0..BF   80..BF
//   U+1000..U+CFFF        E1..EC   80..BF   80..BF
//   U+D000..U+D7FF        ED       80..9F   80..BF
//   U+E000..U+FFFF        EE..EF   80..BF   80..BF
//   U+10000..U+3FFFF      F0       90..BF   80..BF   80..BF
//   U+40000..U+FFFFF      F1..F3   80..BF   80..BF   80..BF
//   U+100000..U+10FFFF    F4       80..8F   80..BF   80..BF
//
// So: no overlong forms (C0, C1, E0 80..9F, F0 80..8F), no UTF-16 surrogates
// (ED A0..BF), nothing above U+10FFFF (F4 90.., F5..FF), no stray
// continuation bytes (80..BF first) and no truncated sequences. This is what
// JSON text (RFC 8259) must be. No MLIR dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_SUPPORT_UTF8_H
#define LS2C_SUPPORT_UTF8_H

#include <cstddef>
#include <string_view>

namespace ls2c {

/// Length in bytes (1 to 4) of the well-formed UTF-8 sequence at the start of
/// `s`, or 0 if `s` is empty or does not start with one (an ill-formed lead
/// byte, a bad continuation byte, or a sequence cut short by the end of `s`).
/// Bytes after the first sequence are not looked at.
size_t utf8SequenceLength(std::string_view s);

/// Whether all of `s` is well-formed UTF-8 (a sequence of well-formed byte
/// sequences, see above). The empty string is valid.
bool isValidUtf8(std::string_view s);

/// Byte index of the first ill-formed sequence of `s`, or npos.
size_t findInvalidUtf8(std::string_view s);

} // namespace ls2c

#endif // LS2C_SUPPORT_UTF8_H
