//===- MessageText.h - Short, printable pieces of error messages -*- C++
//-*-===//
//
// Private to lib/Model. Every DescriptionError is one line of valid UTF-8 of
// at most kMaxMessageBytes bytes, whatever the input held: 1 MB keys, broken
// UTF-8, control characters, file names with newlines. These helpers make any
// byte string safe to quote and cut it on a character boundary.
//
//===----------------------------------------------------------------------===//

#ifndef LS2C_LIB_MODEL_MESSAGETEXT_H
#define LS2C_LIB_MODEL_MESSAGETEXT_H

#include <cstddef>
#include <string>
#include <string_view>

namespace ls2c::detail {

/// Budgets, in bytes, of the parts of a message. The path and the detail
/// together leave at least kMinSourceBytes of kMaxMessageBytes for the source.
inline constexpr size_t kMaxPathBytes = 64;
inline constexpr size_t kMaxValueBytes = 64;
inline constexpr size_t kMaxDetailBytes = 200;
inline constexpr size_t kMinSourceBytes = 32;
inline constexpr size_t kMaxMessageBytes = 300;
static_assert(kMinSourceBytes + 2 + kMaxPathBytes + 2 + kMaxDetailBytes <=
                  kMaxMessageBytes,
              "\"<source>: <path>: <detail>\" must fit");

/// `s` as printable, valid UTF-8 of at most `maxBytes` bytes (maxBytes >= 3).
/// Bytes that are not part of a well-formed UTF-8 sequence, C0 controls and
/// DEL become `\xNN`; C1 controls, U+2028 and U+2029 become `\uNNNN`; other
/// characters are kept. When the result would be longer than `maxBytes`, it
/// is cut after a whole character and ends with "...". Reads only as much of
/// `s` as the result needs.
std::string printable(std::string_view s, size_t maxBytes);

/// Like printable(), but keeps the end: a cut result starts with "...".
/// (File names: the last component is the informative one.)
std::string printableTail(std::string_view s, size_t maxBytes);

} // namespace ls2c::detail

#endif // LS2C_LIB_MODEL_MESSAGETEXT_H
