//===- OpenRegularFile.h - open a data file for reading, or say why not ---===//
#ifndef LS2C_LIB_DATA_OPENREGULARFILE_H
#define LS2C_LIB_DATA_OPENREGULARFILE_H

#include "ls2c/Data/CharCorpus.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>

namespace ls2c {

/// Opens `path` read-only with `flags` added (O_CLOEXEC always) and fills
/// `st`. Returns the descriptor (the caller closes it).
/// Throws DataError naming the path when it cannot be opened or stat'ed, is
/// a directory or is not a regular file (a FIFO or device would block or
/// never end).
inline int openRegularFile(const std::string &path, int flags, struct stat &st) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer
  // before the check below could refuse it; cleared again for regular files.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | flags);
  if (fd < 0)
    throw DataError(path + ": cannot open: " + std::strerror(errno));
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw DataError(path + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw DataError(path + (S_ISDIR(st.st_mode) ? ": is a directory"
                                                : ": is not a regular file"));
  }
  if (!(flags & O_NONBLOCK))
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

/// True when `path` is a readable regular file that begins with the bytes
/// `magic`; false for anything else (the reader after it names why), never
/// throws. openRegularFile never blocks on a FIFO.
inline bool fileStartsWith(const std::string &path, std::string_view magic) {
  struct stat st;
  int fd = -1;
  try {
    fd = openRegularFile(path, 0, st);
  } catch (const DataError &) {
    return false;
  }
  std::string head(magic.size(), '\0');
  ssize_t n = ::read(fd, head.data(), head.size());
  ::close(fd);
  return n == static_cast<ssize_t>(magic.size()) && head == magic;
}

/// The whole contents of the regular file `path`. Throws DataError as
/// openRegularFile does, or naming a read error.
inline std::string readRegularFile(const std::string &path) {
  struct stat st;
  int fd = openRegularFile(path, 0, st);
  std::string bytes;
  bytes.reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      throw DataError(path + ": read error: " + std::strerror(err));
    }
    if (n == 0)
      break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return bytes;
}

} // namespace ls2c

#endif // LS2C_LIB_DATA_OPENREGULARFILE_H
