//===- AtomicFile.cpp - write a file completely or not at all -------------===//
#include "ls2c/Support/AtomicFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace ls2c {

namespace {
[[noreturn]] void fail(const std::string &path, const char *what, int err) {
  throw FileWriteError("cannot write '" + path + "': " + what + ": " +
                       std::strerror(err));
}
} // namespace

void writeFileAtomically(const std::string &path, std::string_view contents) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    fail(path, "open", errno);
  const char *data = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail(path, "write", err);
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail(path, "sync", err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail(path, "rename", err);
  }
}

} // namespace ls2c
