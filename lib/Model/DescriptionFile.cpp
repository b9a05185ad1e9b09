//===- DescriptionFile.cpp - Read a description file safely ---------------===//

#include "DescriptionFile.h"

#include "ls2c/Model/ModelDescription.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ls2c::detail {

namespace {

[[noreturn]] void fail(const std::string &path, const std::string &rule) {
  throw DescriptionError(path, "", rule);
}

[[noreturn]] void failErrno(const std::string &path, const char *what) {
  fail(path, fmt::format("{}: {}", what, std::strerror(errno)));
}

void checkRegular(const std::string &path, const struct stat &st) {
  if (S_ISDIR(st.st_mode))
    fail(path, "is a directory");
  if (!S_ISREG(st.st_mode))
    fail(path, "is not a regular file");
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

} // namespace

std::string readDescriptionFile(const std::string &path) {
  // stat first: opening a FIFO blocks until a writer comes, and opening a
  // device can have effects of its own.
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    failErrno(path, "cannot open");
  checkRegular(path, st);
  // O_NONBLOCK: should the path have become a FIFO since the stat, open
  // returns at once and the fstat below rejects it. No effect on regular
  // files.
  Fd file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)};
  if (file.fd < 0)
    failErrno(path, "cannot open");
  if (::fstat(file.fd, &st) != 0)
    failErrno(path, "cannot read");
  checkRegular(path, st);
  const std::string tooLarge =
      fmt::format("file is larger than {} MiB", kMaxDescriptionBytes >> 20);
  if (static_cast<unsigned long long>(st.st_size) > kMaxDescriptionBytes)
    fail(path, tooLarge);

  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(file.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      failErrno(path, "cannot read");
    if (n == 0)
      break;
    text.append(buf, static_cast<size_t>(n));
    // The file may grow while it is read.
    if (text.size() > kMaxDescriptionBytes)
      fail(path, tooLarge);
  }
  return text;
}

} // namespace ls2c::detail
