//===- AtomicFile.h - write a file completely or not at all ---------------===//
//
// Output is written to a fresh temporary file (mkstemp) in the target's
// directory and renamed over the target only once it is complete and synced,
// so a failure or crash never leaves a half-written file behind. A symbolic
// link is written through (the file it names is replaced, the link kept); an
// existing file keeps its permission bits (not its owner, nor other hard
// links to it); devices, FIFOs and sockets (/dev/null) are written in place,
// since renaming over them would replace the device. A process killed while
// writing leaves the target as it was (and its temporary file behind); tests
// check this with the LS2C_TEST_KILL_DURING_WRITE hook (AtomicFile.cpp). No
// MLIR dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_SUPPORT_ATOMICFILE_H
#define LS2C_SUPPORT_ATOMICFILE_H

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ls2c {

/// An output file could not be written; what() names the path and errno text.
class FileWriteError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Writes `contents` to `path` atomically (temporary file, fsync, rename).
/// Throws FileWriteError naming `path` (a directory target is EISDIR); the
/// temporary file is removed on failure.
void writeFileAtomically(const std::string &path, std::string_view contents);

/// Whether two paths name one file: the same path, or one regular file
/// (same device and inode: another spelling, a symbolic or hard link).
bool sameFile(const std::string &a, const std::string &b);

/// A command's file option and its path, e.g. {"-o", "out.safetensors"}.
using FileOption = std::pair<std::string, std::string>;

/// "" unless one of `outputs` is one of `inputs` (sameFile), else the
/// refusal: "-o 'p.st' is --params 'p.st': writing it would replace an
/// input". Options with an empty path are skipped.
std::string outputReplacesInput(const std::vector<FileOption> &outputs,
                                const std::vector<FileOption> &inputs);

} // namespace ls2c

#endif // LS2C_SUPPORT_ATOMICFILE_H
