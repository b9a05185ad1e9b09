//===- MessageText.cpp - Short, printable pieces of error messages --------===//
//
// Also defines DescriptionError, which applies the budgets to every message.
//
//===----------------------------------------------------------------------===//

#include "MessageText.h"

#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Support/Utf8.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace ls2c::detail {

namespace {

// Calls emit(piece) for the printable form of each character of `s`, in
// order, until emit returns false.
template <typename Emit> void forEachPiece(std::string_view s, Emit emit) {
  char buf[8];
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = utf8SequenceLength(s.substr(i));
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
