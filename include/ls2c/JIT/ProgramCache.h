//===- ProgramCache.h - compiled kernels cached in memory and on disk -----===//
//
// A cubin is determined by the kernel source, the NVRTC options, the target
// architecture and the NVRTC version, so those (and the format version
// below) form the cache key: the SHA-256 (64 lowercase hex digits) of a
// length-prefixed encoding of each, so that no two different inputs share
// an encoding. The key does not cover the CUDA headers the source includes;
// they come with the toolkit, whose NVRTC version is in the key.
//
// The memory cache is process-wide and thread-safe. The disk cache holds one
// file per key, `<dir>/<key[0:2]>/<key>.cubin` (256 subdirectories keep
// directories small), laid out as (integers little-endian):
//
//   offset  size  field
//        0     8  magic "LS2CCUBN"
//        8     4  format version (kProgramCacheFormatVersion)
//       12     4  header size in bytes (120)
//       16     8  payload size in bytes
//       24    64  the key, as hex (detects an entry under the wrong name)
//       88    32  SHA-256 of the payload
//      120     n  payload: the cubin
//
// Entries are written to a temporary file in their directory and renamed
// (ls2c/Support/AtomicFile.h), so a reader sees a complete file or none, and
// processes sharing a directory may write the same key concurrently: each
// rename installs a complete, identical entry. Reads check every header
// field, the size and the checksum, so a truncated or corrupted entry is
// detected rather than handed to the driver.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_JIT_PROGRAMCACHE_H
#define LS2C_JIT_PROGRAMCACHE_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ls2c::jit {

/// Changes whenever the entry layout or the key's encoding changes; it is
/// hashed into every key and written into every entry's header.
inline constexpr uint32_t kProgramCacheFormatVersion = 1;
inline constexpr size_t kProgramCacheHeaderBytes = 120;

/// The cache key of one compilation. `name` is the NVRTC program name's
/// stem: it is in the key because line information (-lineinfo, -G) cites
/// "<name>.cu". `options` are the full NVRTC options, in order.
std::string programCacheKey(std::string_view name, std::string_view source,
                            const std::vector<std::string> &options,
                            std::string_view arch, std::string_view nvrtcVersion);

/// $LS2C_CACHE_DIR if set and not empty, else $XDG_CACHE_HOME/ls2c, else
/// <home>/.cache/ls2c ($HOME, else the password database); "" if none.
std::string defaultProgramCacheDir();

/// The process-wide map key -> cubin. Entries are never evicted (a
/// process compiles one model's few hundred kernels).
class MemoryProgramCache {
public:
  static MemoryProgramCache &global();

  /// The cubin for `key`, or null.
  std::shared_ptr<const std::string> lookup(const std::string &key) const;
  void insert(const std::string &key, std::string cubin);
  void clear();
  size_t size() const;

private:
  mutable std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const std::string>> entries;
};

/// The bytes of a disk entry for `key` (64 hex digits) holding `payload`.
std::string encodeProgramCacheEntry(std::string_view key, std::string_view payload);

/// Checks a disk entry's bytes against `key`: returns "" and sets `payload`,
/// or returns what is wrong ("bad magic", "truncated: ...", "payload
/// checksum mismatch", ...).
std::string decodeProgramCacheEntry(std::string_view bytes, std::string_view key,
                                    std::string &payload);

/// One on-disk cache directory (created on first store).
class DiskProgramCache {
public:
  explicit DiskProgramCache(std::string dir) : root(std::move(dir)) {}

  const std::string &dir() const { return root; }
  /// `<dir>/<key[0:2]>/<key>.cubin`; throws std::invalid_argument unless
  /// `key` is 64 lowercase hex digits.
  std::string entryPath(const std::string &key) const;

  struct Lookup {
    enum Status {
      Miss,       ///< no entry (or no directory)
      Hit,        ///< `payload` is the cubin
      Corrupt,    ///< the entry fails a check; `problem` says which
      Unreadable, ///< the entry exists but cannot be read; `problem` says why
    };
    Status status = Miss;
    std::string payload;
    std::string problem;
  };
  Lookup lookup(const std::string &key) const;

  /// Writes (or replaces) the entry for `key`, atomically, creating its
  /// directory. Throws ls2c::FileWriteError naming the path on failure.
  void store(const std::string &key, std::string_view payload) const;

private:
  std::string root;
};

} // namespace ls2c::jit

#endif // LS2C_JIT_PROGRAMCACHE_H
