//===- MessageText.cpp - Short, printable pieces of error messages --------===//
//
// Also defines DescriptionError, which applies the budgets to every message.
//
//===----------------------------------------------------------------------===//

#include "MessageText.h"

#include "ls2c/Model/ModelDescription.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace ls2c::detail {

namespace {

// Length of the well-formed UTF-8 sequence at the start of `s` (Unicode
// Table 3-7: no overlongs, no surrogates, nothing above U+10FFFF), or 0.
size_t sequenceLength(std::string_view s) {
  auto at = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = at(0);
  if (c < 0x80)
    return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF; // range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0)
      lo = 0xA0;
    else if (c == 0xED)
      hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0)
      lo = 0x90;
    else if (c == 0xF4)
      hi = 0x8F;
  } else {
    return 0;
  }
  if (s.size() < n || at(1) < lo || at(1) > hi)
    return 0;
  for (size_t i = 2; i < n; ++i)
    if (at(i) < 0x80 || at(i) > 0xBF)
      return 0;
  return n;
}

// Calls emit(piece) for the printable form of each character of `s`, in
// order, until emit returns false.
template <typename Emit> void forEachPiece(std::string_view s, Emit emit) {
  char buf[8];
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = sequenceLength(s.substr(i));
    const auto c = static_cast<unsigned char>(s[i]);
    std::string_view piece;
    if (n == 0 || (n == 1 && (c < 0x20 || c == 0x7F))) {
      auto r = fmt::format_to_n(buf, sizeof buf, "\\x{:02X}", c);
      piece = std::string_view(buf, r.size);
      i += 1;
    } else {
      // C1 controls (U+0080-U+009F: C2 80-9F) and the line/paragraph
      // separators (U+2028, U+2029: E2 80 A8-A9) end lines in some viewers.
      const auto c1 = n > 1 ? static_cast<unsigned char>(s[i + 1]) : 0;
      const auto c2 = n > 2 ? static_cast<unsigned char>(s[i + 2]) : 0;
      uint32_t escaped = 0;
      if (c == 0xC2 && c1 <= 0x9F)
        escaped = c1;
      else if (c == 0xE2 && c1 == 0x80 && (c2 == 0xA8 || c2 == 0xA9))
        escaped = 0x2000u | (c2 - 0x80u);
      if (escaped) {
        auto r = fmt::format_to_n(buf, sizeof buf, "\\u{:04X}", escaped);
        piece = std::string_view(buf, r.size);
      } else {
        piece = s.substr(i, n);
      }
      i += n;
    }
    if (!emit(piece))
      return;
  }
}

} // namespace

std::string printable(std::string_view s, size_t maxBytes) {
  std::string out;
  size_t cut = 0; // end of the last piece that leaves room for "..."
  bool tooLong = false;
  forEachPiece(s, [&](std::string_view piece) {
    if (out.size() + piece.size() > maxBytes) {
      tooLong = true;
      return false;
    }
    out += piece;
    if (out.size() + 3 <= maxBytes)
      cut = out.size();
    return true;
  });
  if (tooLong) {
    out.resize(cut);
    out += "...";
  }
  return out;
}

std::string printableTail(std::string_view s, size_t maxBytes) {
  std::string out;
  std::vector<size_t> starts;
  forEachPiece(s, [&](std::string_view piece) {
    starts.push_back(out.size());
    out += piece;
    return true;
  });
  if (out.size() <= maxBytes)
    return out;
  for (size_t start : starts)
    if (out.size() - start + 3 <= maxBytes)
      return "..." + out.substr(start);
  return "...";
}

} // namespace ls2c::detail

//===----------------------------------------------------------------------===//
// DescriptionError
//===----------------------------------------------------------------------===//

namespace ls2c {

using detail::kMaxDetailBytes;
using detail::kMaxMessageBytes;
using detail::kMaxPathBytes;
using detail::kMinSourceBytes;
using detail::printable;
using detail::printableTail;

namespace {

// "<source>: <path>: <detail>" without the empty parts. `path` and `detail`
// are already printable and within their budgets; the source gets the rest
// (at least kMinSourceBytes, keeping its end), so the line stays within
// kMaxMessageBytes.
std::string joinMessage(const std::string &source, const std::string &path,
                        const std::string &text) {
  std::string msg;
  for (const std::string *part : {&path, &text}) {
    if (part->empty())
      continue;
    if (!msg.empty())
      msg += ": ";
    msg += *part;
  }
  if (source.empty())
    return msg;
  const size_t rest = msg.empty() ? 0 : msg.size() + 2;
  const size_t budget =
      std::max(kMinSourceBytes,
               rest < kMaxMessageBytes ? kMaxMessageBytes - rest : size_t(0));
  std::string src = printableTail(source, budget);
  return msg.empty() ? src : src + ": " + msg;
}

} // namespace

DescriptionError::DescriptionError(std::string source, std::string path,
                                   std::string text)
    : std::runtime_error(joinMessage(source, printable(path, kMaxPathBytes),
                                     printable(text, kMaxDetailBytes))),
      source_(std::move(source)), path_(printable(path, kMaxPathBytes)),
      detail_(printable(text, kMaxDetailBytes)) {}

DescriptionError::~DescriptionError() = default;

} // namespace ls2c
