//===- AtomicFile.cpp - write a file completely or not at all -------------===//
#include "ls2c/Support/AtomicFile.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <vector>

namespace ls2c {

namespace {

[[noreturn]] void fail(const std::string &path, const char *what, int err) {
  throw FileWriteError("cannot write '" + path + "': " + what + ": " +
                       std::strerror(err));
}

/// Writes all of `contents` to `fd`; returns 0 or the errno.
int writeAll(int fd, std::string_view contents) {
  const char *data = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return n < 0 ? errno : EIO;
    data += n;
    left -= static_cast<size_t>(n);
  }
  return 0;
}

/// The process's umask, read once. Linux gives it in /proc/self/status
/// without changing it; umask(2) can only be read by setting it, and the
/// umask is the whole process's: two threads reading it that way at once
/// (the kernel cache is written from several) could leave it 0, and every
/// later file world-writable. The fallback runs once, under the static's
/// initialization lock.
mode_t processUmask() {
  static const mode_t mask = [] {
    if (FILE *f = std::fopen("/proc/self/status", "re")) {
      char line[256];
      unsigned long value = 0;
      bool found = false;
      while (!found && std::fgets(line, sizeof line, f))
        found = std::sscanf(line, "Umask: %lo", &value) == 1;
      std::fclose(f);
      if (found)
        return static_cast<mode_t>(value & 0777);
    }
    mode_t m = ::umask(0);
    ::umask(m);
    return m;
  }();
  return mask;
}

/// Devices, FIFOs and sockets cannot be replaced by a rename: they are
/// written in place, as `cp` and shells do.
void writeInPlace(const std::string &path, std::string_view contents) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    fail(path, "open", errno);
  int err = writeAll(fd, contents);
  if (::close(fd) != 0 && !err)
    err = errno;
  if (err)
    fail(path, "write", err);
}

/// Test hook: with LS2C_TEST_KILL_DURING_WRITE=N in the environment, the
/// N-th atomic write of the process while it is set (counting from 1)
/// writes half of its temporary file and then kills the process with
/// SIGKILL, as a crash or `kill -9` in the middle of a checkpoint would
/// (test/tools/ls2c-train-kill.test).
bool killDuringThisWrite() {
  const char *n = std::getenv("LS2C_TEST_KILL_DURING_WRITE");
  if (!n || !*n)
    return false;
  static std::atomic<long> writes{0};
  return std::strtol(n, nullptr, 10) == ++writes;
}

} // namespace

void writeFileAtomically(const std::string &requested, std::string_view contents) {
  // Write through symbolic links to the file they name, never replacing the
  // link itself.
  std::string path = requested;
  struct stat st;
  bool exists = ::lstat(path.c_str(), &st) == 0;
  if (exists && S_ISLNK(st.st_mode)) {
    char *resolved = ::realpath(requested.c_str(), nullptr);
    if (resolved) {
      path = resolved;
      std::free(resolved);
    } // A dangling link: the rename below replaces it, as `cp` would create.
    exists = ::stat(path.c_str(), &st) == 0;
  }
  if (exists && S_ISDIR(st.st_mode))
    fail(requested, "open", EISDIR);
  if (exists && !S_ISREG(st.st_mode))
    return writeInPlace(requested, contents);

  // A fresh, unpredictable temporary name beside the target (mkstemp opens
  // with O_EXCL, so no existing file or link is ever followed).
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  if (dir.empty())
    dir = "/";
  std::string tmp = (slash == std::string::npos ? "" : dir) + ".ls2c-tmp-XXXXXX";
  std::vector<char> name(tmp.begin(), tmp.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  if (fd < 0)
    fail(requested, "open", errno);
  tmp = name.data();
  // Keep an existing file's permissions; new files get 0666 & ~umask as
  // open(2) would give them.
  mode_t mode = exists ? st.st_mode & 07777 : 0666 & ~processUmask();
  int err = ::fchmod(fd, mode) != 0 ? errno : 0;
  if (!err && killDuringThisWrite()) {
    (void)writeAll(fd, contents.substr(0, contents.size() / 2));
    ::fsync(fd);
    ::raise(SIGKILL);
  }
  if (!err)
    err = writeAll(fd, contents);
  if (!err && ::fsync(fd) != 0)
    err = errno;
  if (::close(fd) != 0 && !err)
    err = errno;
  if (!err && ::rename(tmp.c_str(), path.c_str()) != 0)
    err = errno;
  if (err) {
    ::unlink(tmp.c_str());
    fail(requested, "write", err);
  }
}

bool sameFile(const std::string &a, const std::string &b) {
  if (a == b)
    return true;
  // Devices and pipes (/dev/stdin and /dev/stdout on one terminal) are
  // written in place, never replaced: only regular files can be.
  struct stat sa, sb;
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && S_ISREG(sa.st_mode) &&
         S_ISREG(sb.st_mode) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

std::string outputReplacesInput(const std::vector<FileOption> &outputs,
                                const std::vector<FileOption> &inputs) {
  for (const auto &[outFlag, outPath] : outputs)
    for (const auto &[inFlag, inPath] : inputs)
      if (!outPath.empty() && !inPath.empty() && sameFile(outPath, inPath))
        return outFlag + " '" + outPath + "' is " + inFlag + " '" + inPath +
               "': writing it would replace an input";
  return "";
}

} // namespace ls2c
