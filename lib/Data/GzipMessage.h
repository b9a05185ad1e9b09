//===- GzipMessage.h - zlib's error text without its file name ------------===//
#ifndef LS2C_LIB_DATA_GZIPMESSAGE_H
#define LS2C_LIB_DATA_GZIPMESSAGE_H

#include <cctype>
#include <string>

namespace ls2c {

/// gzerror's text for a stream opened with gzdopen starts with zlib's name
/// for it, "<fd:3>: "; the callers name the file themselves, so it goes.
inline std::string gzipMessage(const char *zlibText) {
  std::string text = zlibText ? zlibText : "";
  if (text.rfind("<fd:", 0) == 0) {
    size_t end = text.find(">: ");
    bool digits = end != std::string::npos && end > 4;
    for (size_t i = 4; digits && i < end; ++i)
      digits = std::isdigit(static_cast<unsigned char>(text[i])) != 0;
    if (digits)
      text.erase(0, end + 3);
  }
  return text;
}

} // namespace ls2c

#endif // LS2C_LIB_DATA_GZIPMESSAGE_H
