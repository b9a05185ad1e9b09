//===- BundleReader.cpp - load and check bundles --------------------------===//
//
// Nothing in the file is trusted: the header, the section table and every
// section are checked (bounds, alignment, overlaps, zero padding, SHA-256)
// before the manifest is parsed, and the parsed program is validated before
// it is returned. Every byte of a valid bundle is covered by a check, so any
// single corrupted byte is refused.
//
//===----------------------------------------------------------------------===//
#include "Manifest.h"

#include "ls2c/Runtime/Bundle.h"
#include "ls2c/Runtime/ProgramValidate.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>

namespace ls2c::runtime {

BundleError::BundleError(std::string file, std::string where,
                         std::string detail)
    : std::runtime_error(file + ": " + where + ": " + detail),
      file_(std::move(file)), where_(std::move(where)),
      detail_(std::move(detail)) {}

namespace {

uint32_t getU32(std::string_view b, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | static_cast<uint8_t>(b[at + i]);
  return v;
}
uint64_t getU64(std::string_view b, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | static_cast<uint8_t>(b[at + i]);
  return v;
}

std::string escaped(std::string_view bytes) {
  static const char hex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char c : bytes) {
    auto u = static_cast<uint8_t>(c);
    if (u >= 0x20 && u < 0x7F && c != '"' && c != '\\') {
      out += c;
    } else {
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    }
  }
  return out + "\"";
}

std::string sectionPath(size_t i) {
  return "sections[" + std::to_string(i) + "]";
}

struct Entry {
  uint32_t kind, reserved;
  uint64_t offset, size;
  size_t index;
};

} // namespace

std::vector<BundleSection> splitBundle(std::string_view bytes,
                                       const std::string &name) {
  auto fail = [&](const std::string &where, const std::string &detail) {
    throw BundleError(name, where, detail);
  };
  const uint64_t size = bytes.size();
  if (size < kBundleHeaderBytes)
    fail("header", std::to_string(size) +
                       " bytes: truncated (shorter than "
                       "the " +
                       std::to_string(kBundleHeaderBytes) + "-byte header)");
  if (std::memcmp(bytes.data(), kBundleMagic, sizeof(kBundleMagic)) != 0)
    fail("header.magic", escaped(bytes.substr(0, 8)) +
                             ": not a bundle (expected \"LS2BNDL\\x00\")");
  uint32_t version = getU32(bytes, 8);
  if (version < kOldestBundleFormatVersion || version > kBundleFormatVersion)
    fail("header.version",
         std::to_string(version) +
             ": unsupported format version (this loader reads versions " +
             std::to_string(kOldestBundleFormatVersion) + " to " +
             std::to_string(kBundleFormatVersion) + ")");
  uint32_t count = getU32(bytes, 12);
  uint64_t fileSize = getU64(bytes, 16);
  if (fileSize != size)
    fail("header.fileSize",
         std::to_string(fileSize) + ": the file has " + std::to_string(size) +
             " bytes (" +
             (size < fileSize ? "truncated" : "extra bytes at the end") + ")");
  if (count == 0)
    fail("header.sectionCount",
         "0: a bundle has at least its manifest section");
  // count < 2^32, so this cannot overflow.
  uint64_t tableEnd =
      kBundleHeaderBytes + uint64_t(count) * kBundleSectionEntryBytes;
  if (tableEnd > size)
    fail("header.sectionCount",
         std::to_string(count) + ": the section table would end at byte " +
             std::to_string(tableEnd) + ", past the end of the file (" +
             std::to_string(size) + " bytes)");
  std::array<uint8_t, 32> tableHash = bundleSha256(
      bytes.substr(kBundleHeaderBytes, tableEnd - kBundleHeaderBytes));
  if (std::memcmp(tableHash.data(), bytes.data() + 24, 32) != 0)
    fail("header.tableSha256",
         "checksum mismatch: the section table is corrupt");

  std::vector<Entry> entries;
  for (size_t i = 0; i < count; ++i) {
    size_t e = kBundleHeaderBytes + i * kBundleSectionEntryBytes;
    Entry entry{getU32(bytes, e), getU32(bytes, e + 4), getU64(bytes, e + 8),
                getU64(bytes, e + 16), i};
    std::string path = sectionPath(i);
    if (entry.kind < 1 || entry.kind > 3)
      fail(path + ".kind", std::to_string(entry.kind) +
                               ": unknown section kind (1 manifest, 2 "
                               "source, 3 cubin)");
    if (entry.reserved != 0)
      fail(path + ".reserved", std::to_string(entry.reserved) + ": must be 0");
    if (entry.offset % kBundleSectionAlignment)
      fail(path + ".offset", std::to_string(entry.offset) +
                                 ": not a multiple of " +
                                 std::to_string(kBundleSectionAlignment));
    if (entry.offset < tableEnd)
      fail(path + ".offset",
           std::to_string(entry.offset) +
               ": inside the header or section table (which end at byte " +
               std::to_string(tableEnd) + ")");
    if (entry.offset > size || entry.size > size - entry.offset)
      fail(path + ".size",
           std::to_string(entry.size) + ": the section [" +
               std::to_string(entry.offset) + ", offset + size) ends past " +
               "the end of the file (" + std::to_string(size) + " bytes)");
    if (i == 0 && entry.kind != static_cast<uint32_t>(SectionKind::Manifest))
      fail(path + ".kind", std::to_string(entry.kind) +
                               ": section 0 must be the manifest (kind 1)");
    if (i != 0 && entry.kind == static_cast<uint32_t>(SectionKind::Manifest))
      fail(path + ".kind",
           "1: a second manifest (only section 0 is the manifest)");
    entries.push_back(entry);
  }

  // No overlaps, and every byte outside the header, table and sections zero.
  std::vector<Entry> byOffset = entries;
  std::sort(byOffset.begin(), byOffset.end(),
            [](const Entry &a, const Entry &b) {
              return a.offset < b.offset ||
                     (a.offset == b.offset && a.index < b.index);
            });
  uint64_t covered = tableEnd; // bytes [0, covered) are checked
  const Entry *previous = nullptr;
  auto zeroGap = [&](uint64_t from, uint64_t to) {
    for (uint64_t i = from; i < to; ++i)
      if (bytes[i] != '\0')
        fail("padding", "byte " + std::to_string(i) +
                            " is not zero (bytes outside the header, the "
                            "section table and the sections must be zero)");
  };
  for (const Entry &e : byOffset) {
    if (e.size == 0)
      continue;
    if (e.offset < covered && previous)
      fail(sectionPath(e.index) + ".offset",
           std::to_string(e.offset) + ": section [" + std::to_string(e.offset) +
               ", " + std::to_string(e.offset + e.size) + ") overlaps " +
               sectionPath(previous->index) + " [" +
               std::to_string(previous->offset) + ", " +
               std::to_string(previous->offset + previous->size) + ")");
    zeroGap(covered, e.offset);
    covered = e.offset + e.size;
    previous = &e;
  }
  zeroGap(covered, size);

  std::vector<BundleSection> sections;
  sections.reserve(entries.size());
  for (const Entry &e : entries) {
    std::string_view payload = bytes.substr(e.offset, e.size);
    std::array<uint8_t, 32> hash = bundleSha256(payload);
    size_t at = kBundleHeaderBytes + e.index * kBundleSectionEntryBytes + 24;
    if (std::memcmp(hash.data(), bytes.data() + at, 32) != 0)
      fail(sectionPath(e.index) + ".sha256",
           "checksum mismatch: the section's " + std::to_string(e.size) +
               " bytes at offset " + std::to_string(e.offset) + " are corrupt");
    sections.push_back(
        {static_cast<SectionKind>(e.kind), std::string(payload)});
  }
  return sections;
}

Program parseBundle(const std::string &bytes,
                    const std::string &nameForErrors) {
  std::vector<BundleSection> sections = splitBundle(bytes, nameForErrors);
  // splitBundle checked the header, version included.
  uint32_t version = 0;
  for (int i = 0; i < 4; ++i)
    version |= uint32_t(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  Program program =
      detail::sectionsToProgram(sections, nameForErrors, version);
  validateProgram(program, nameForErrors);
  return program;
}

Program readBundle(const std::string &path) {
  auto fail = [&](const std::string &detail) {
    throw BundleError(path, "file", detail);
  };
  // O_NONBLOCK: a FIFO without a writer would block the open itself; only
  // regular files are read.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    fail(std::string("cannot open: ") + std::strerror(errno));
  std::string bytes;
  struct stat st;
  int error = 0;
  if (::fstat(fd, &st) != 0) {
    error = errno;
  } else if (S_ISDIR(st.st_mode)) {
    error = EISDIR;
  } else if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("is not a regular file");
  } else {
    try {
      if (S_ISREG(st.st_mode) && st.st_size > 0)
        bytes.reserve(static_cast<size_t>(st.st_size));
      char buffer[1 << 16];
      for (;;) {
        ssize_t n = ::read(fd, buffer, sizeof(buffer));
        if (n < 0 && errno == EINTR)
          continue;
        if (n < 0) {
          error = errno;
          break;
        }
        if (n == 0)
          break;
        bytes.append(buffer, static_cast<size_t>(n));
      }
    } catch (const std::bad_alloc &) {
      error = ENOMEM; // a file too large to hold in memory
    } catch (const std::length_error &) {
      error = ENOMEM;
    }
  }
  ::close(fd);
  if (error)
    fail(std::string("cannot read: ") + std::strerror(error));
  return parseBundle(bytes, path);
}

} // namespace ls2c::runtime
