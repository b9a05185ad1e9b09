//===- AtomicFile.h - write a file completely or not at all ---------------===//
//
// Output is written to "<path>.tmp.<pid>" in the same directory and renamed
// over `path` only once it is complete, so a failure or crash never leaves a
// half-written file behind. No MLIR dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_SUPPORT_ATOMICFILE_H
#define LS2C_SUPPORT_ATOMICFILE_H

#include <stdexcept>
#include <string>
#include <string_view>

namespace ls2c {

/// An output file could not be written; what() names the path and errno text.
class FileWriteError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Writes `contents` to `path` atomically (temporary file, fsync, rename).
/// Throws FileWriteError; the temporary file is removed on failure.
void writeFileAtomically(const std::string &path, std::string_view contents);

} // namespace ls2c

#endif // LS2C_SUPPORT_ATOMICFILE_H
