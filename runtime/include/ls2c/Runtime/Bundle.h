//===- Bundle.h - one file holding a compiled program ---------------------===//
//
// A bundle is a Program (Program.h) in one file: a fixed header, a section
// table, then 64-byte aligned sections: the manifest (JSON: every field of
// the Program except the kernels' sources and cubins), one CUDA source per
// kernel and one cubin per kernel and arch. Every section and the section
// table carry SHA-256 checksums. docs/bundle-format.md specifies the layout
// byte by byte and every rule the loader checks.
//
// Loading never trusts the file: every offset, size, checksum, cross
// reference, JSON type and program invariant (validateProgram) is checked,
// and any violation is a BundleError naming the file, the place (a JSON
// path such as "functions[1].steps[7].args[2].buffer.byteOffset", or
// "header.fileSize", "sections[3].sha256") and the rule broken. No input
// crashes the loader. No MLIR or CUDA dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_BUNDLE_H
#define LS2C_RUNTIME_BUNDLE_H

#include "ls2c/Runtime/Program.h"

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ls2c::runtime {

/// A bundle or program that breaks a rule of docs/bundle-format.md.
/// what() is "<file>: <where>: <detail>"; the parts are kept apart too.
class BundleError : public std::runtime_error {
public:
  BundleError(std::string file, std::string where, std::string detail);

  /// The file (or the name given for an in-memory bundle or program).
  const std::string &file() const { return file_; }
  /// The section, header field or JSON path of the offending field.
  const std::string &where() const { return where_; }
  /// The rule broken, with the offending value.
  const std::string &detail() const { return detail_; }

private:
  std::string file_, where_, detail_;
};

/// Layout constants (docs/bundle-format.md). All integers little-endian.
inline constexpr char kBundleMagic[8] = {'L', 'S', '2', 'B',
                                         'N', 'D', 'L', '\0'};
/// The version written; the loader also reads every version from
/// kOldestBundleFormatVersion on (version 1 has no GEMM activation
/// epilogues: no `aux` and `auxLd` keys; versions 1 and 2 have no
/// attention `fallbackSteps` and `maxSeqLen`).
inline constexpr uint32_t kBundleFormatVersion = 3;
inline constexpr uint32_t kOldestBundleFormatVersion = 1;
inline constexpr uint64_t kBundleHeaderBytes = 56;
inline constexpr uint64_t kBundleSectionEntryBytes = 56;
inline constexpr uint64_t kBundleSectionAlignment = 64;

/// What a section holds.
enum class SectionKind : uint32_t {
  Manifest = 1, ///< the manifest JSON (always section 0, exactly one)
  Source = 2,   ///< a kernel's CUDA C++ source
  Cubin = 3,    ///< a kernel's compiled image for one arch (an ELF file)
};

/// Writes `program` to `path` atomically (temporary file + rename; see
/// ls2c/Support/AtomicFile.h). Validates first: an invalid program throws
/// BundleError (named after `path`) and nothing is written. A file that
/// cannot be written throws ls2c::FileWriteError; no temporary is left.
void writeBundle(const Program &program, const std::string &path);

/// Reads and fully validates the bundle at `path`. Throws BundleError for an
/// unreadable file or any violated rule; never crashes on any input.
Program readBundle(const std::string &path);

/// The bundle's bytes for `program` (validated first; throws BundleError
/// named "program"). Deterministic: equal programs give equal bytes.
std::string serializeBundle(const Program &program);

/// Parses and validates an in-memory bundle; errors name `nameForErrors`.
Program parseBundle(const std::string &bytes, const std::string &nameForErrors);

//===----------------------------------------------------------------------===//
// The container below the manifest: sections and checksums only, no
// knowledge of programs. For tools that inspect bundles, and for tests that
// need to build well-formed containers around arbitrary payloads.
//===----------------------------------------------------------------------===//

struct BundleSection {
  SectionKind kind = SectionKind::Manifest;
  std::string payload;
};

/// Header, section table (with all checksums) and 64-byte aligned payloads,
/// in the given order. Checks nothing about the payloads.
std::string assembleBundle(const std::vector<BundleSection> &sections);

/// Checks the container (magic, version, file size, section table bounds,
/// alignment, overlaps, zero padding, checksums, section 0 the only
/// manifest) and returns its sections in table order. Throws BundleError.
std::vector<BundleSection> splitBundle(std::string_view bytes,
                                       const std::string &nameForErrors);

/// SHA-256 of `bytes` (the checksum the format uses).
std::array<uint8_t, 32> bundleSha256(std::string_view bytes);

} // namespace ls2c::runtime

#endif // LS2C_RUNTIME_BUNDLE_H
