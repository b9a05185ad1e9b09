//===- TokenizerCorpus.cpp - text corpora read line by line ---------------===//
#include "ls2c/Data/TokenizerCorpus.h"

#include "ls2c/Support/Utf8.h"

#include "GzipMessage.h"
#include "OpenRegularFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

namespace ls2c {

size_t maximalIllFormedSubpart(std::string_view s) {
  if (s.empty())
    return 0;
  auto b0 = static_cast<unsigned char>(s[0]);
  // Continuation bytes the sequence this lead byte starts needs, and the
  // range of the first of them (Utf8.h's table).
  int need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF)
    need = 1;
  else if (b0 == 0xE0)
    need = 2, lo = 0xA0;
  else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF)
    need = 2;
  else if (b0 == 0xED)
    need = 2, hi = 0x9F;
  else if (b0 == 0xF0)
    need = 3, lo = 0x90;
  else if (b0 >= 0xF1 && b0 <= 0xF3)
    need = 3;
  else if (b0 == 0xF4)
    need = 3, hi = 0x8F;
  else
    return 1; // not a lead byte at all
  size_t n = 1;
  for (int k = 0; k < need && n < s.size(); ++k) {
    auto c = static_cast<unsigned char>(s[n]);
    if (c < (k == 0 ? lo : 0x80) || c > (k == 0 ? hi : 0xBF))
      break;
    ++n;
  }
  return n;
}

std::string replaceInvalidUtf8(std::string_view s, uint64_t &replaced) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      out.push_back(s[i++]);
      continue;
    }
    size_t n = utf8SequenceLength(s.substr(i));
    if (n) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out.append("\xEF\xBF\xBD");
      ++replaced;
      i += maximalIllFormedSubpart(s.substr(i));
    }
  }
  return out;
}

CorpusLineReader::CorpusLineReader(const std::string &path,
                                   InvalidUtf8Policy policy)
    : filePath(path), policy(policy) {
  // O_NONBLOCK: opening a FIFO must not hang before it is refused.
  struct stat st;
  int fd = openRegularFile(path, O_NONBLOCK, st);
  // Regular files never block; reading them is ordinary again.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  if (st.st_size == 0) {
    ::close(fd);
    throw DataError(path + ": is empty (no text to tokenize)");
  }
  gzFile f = ::gzdopen(fd, "rb");
  if (!f) {
    ::close(fd);
    throw DataError(path + ": cannot open: out of memory");
  }
  ::gzbuffer(f, 1 << 18);
  gz = f;
  try {
    if (!fill() && buffer.empty())
      throw DataError(path + ": is empty after gzip decompression (no text to "
                             "tokenize)");
    // zlib passes data without a gzip header through as it is, which
    // plain corpora rely on; a file named .gz must be gzip.
    if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0 && ::gzdirect(f))
      throw DataError(path + ": not gzip data (no gzip header), though named .gz");
  } catch (...) {
    ::gzclose(f); // the destructor does not run for a throwing constructor
    gz = nullptr;
    throw;
  }
}

CorpusLineReader::~CorpusLineReader() {
  if (gz)
    ::gzclose(static_cast<gzFile>(gz));
}

/// Appends the next chunk; false at the end of the data.
bool CorpusLineReader::fill() {
  if (eof)
    return false;
  if (pos > 0 && pos * 2 >= buffer.size()) {
    buffer.erase(0, pos);
    pos = 0;
  }
  constexpr size_t kChunk = 1 << 20;
  size_t old = buffer.size();
  buffer.resize(old + kChunk);
  int n = ::gzread(static_cast<gzFile>(gz), &buffer[old], kChunk);
  if (n < 0) {
    int code = 0;
    const char *msg = ::gzerror(static_cast<gzFile>(gz), &code);
    throw DataError(filePath + (code == Z_ERRNO
                                    ? ": read error: " + std::string(std::strerror(errno))
                                    : ": truncated or corrupt gzip data: " + gzipMessage(msg)));
  }
  buffer.resize(old + static_cast<size_t>(n));
  if (n == 0) {
    // gzread reports a truncated gzip stream as the end of the data; gzerror
    // says what happened.
    int code = 0;
    const char *msg = ::gzerror(static_cast<gzFile>(gz), &code);
    if (code != Z_OK && code != Z_STREAM_END)
      throw DataError(filePath + ": truncated or corrupt gzip data: " + gzipMessage(msg));
    eof = true;
    return false;
  }
  return true;
}

bool CorpusLineReader::next(std::string &out) {
  size_t searchFrom = pos;
  size_t nl;
  while ((nl = buffer.find('\n', searchFrom)) == std::string::npos) {
    size_t scanned = buffer.size() - pos;
    if (!fill())
      break;
    searchFrom = pos + scanned; // fill may have moved the data to offset 0
  }
  if (nl == std::string::npos && pos == buffer.size())
    return false;
  size_t end = nl == std::string::npos ? buffer.size() : nl;
  std::string_view text(buffer.data() + pos, end - pos);
  ++line;
  hadNewline = nl != std::string::npos;
  pos = hadNewline ? nl + 1 : end;
  size_t bad = findInvalidUtf8(text);
  if (bad == std::string_view::npos) {
    out.assign(text);
    return true;
  }
  if (policy == InvalidUtf8Policy::Refuse) {
    char byte[8];
    std::snprintf(byte, sizeof(byte), "0x%02x",
                  static_cast<unsigned>(static_cast<unsigned char>(text[bad])));
    throw DataError(filePath + ":" + std::to_string(line) + ":" +
                    std::to_string(bad + 1) + ": invalid UTF-8 (byte " + byte +
                    " does not start a well-formed sequence; "
                    "--invalid-utf8=replace substitutes U+FFFD)");
  }
  if (!replaced)
    firstReplaced = line;
  out = replaceInvalidUtf8(text, replaced);
  return true;
}

std::vector<std::string> readCorpusLines(const std::vector<std::string> &paths,
                                         InvalidUtf8Policy policy,
                                         uint64_t maxLines, bool *sawNewline) {
  std::vector<std::string> lines;
  if (sawNewline)
    *sawNewline = false;
  for (const std::string &path : paths) {
    CorpusLineReader reader(path, policy);
    std::string line;
    while ((maxLines == 0 || lines.size() < maxLines) && reader.next(line)) {
      if (sawNewline && reader.lineHadNewline())
        *sawNewline = true;
      lines.push_back(std::move(line));
    }
    if (maxLines && lines.size() >= maxLines)
      break;
  }
  return lines;
}

} // namespace ls2c
