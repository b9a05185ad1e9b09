//===- ProgramCache.cpp - compiled kernels cached in memory and on disk ---===//
#include "ls2c/JIT/ProgramCache.h"

#include "Sha256.h"
#include "ls2c/Support/AtomicFile.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace ls2c::jit {

namespace {

constexpr char kMagic[8] = {'L', 'S', '2', 'C', 'C', 'U', 'B', 'N'};
constexpr size_t kKeyHexDigits = 64;

void putLE(std::string &out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t getLE(std::string_view in, size_t offset, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i)
    value |= static_cast<uint64_t>(static_cast<uint8_t>(in[offset + i])) << (8 * i);
  return value;
}

/// Each field is length-prefixed, so ("ab", "c") and ("a", "bc") differ.
void hashField(Sha256 &hash, std::string_view field) {
  std::string length;
  putLE(length, field.size(), 8);
  hash.update(length);
  hash.update(field);
}

bool isKey(std::string_view key) {
  if (key.size() != kKeyHexDigits)
    return false;
  for (char c : key)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

std::string getenvString(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

} // namespace

std::string programCacheKey(std::string_view name, std::string_view source,
                            const std::vector<std::string> &options,
                            std::string_view arch, std::string_view nvrtcVersion) {
  Sha256 hash;
  hashField(hash, "ls2c program cache");
  hashField(hash, std::to_string(kProgramCacheFormatVersion));
  hashField(hash, nvrtcVersion);
  hashField(hash, arch);
  hashField(hash, name);
  hashField(hash, std::to_string(options.size()));
  for (const std::string &option : options)
    hashField(hash, option);
  hashField(hash, source);
  return toHex(hash.finish());
}

std::string defaultProgramCacheDir() {
  std::string dir = getenvString("LS2C_CACHE_DIR");
  if (!dir.empty())
    return dir;
  std::string xdg = getenvString("XDG_CACHE_HOME");
  // The XDG spec says to ignore a relative XDG_CACHE_HOME.
  if (!xdg.empty() && xdg[0] == '/')
    return xdg + "/ls2c";
  std::string home = getenvString("HOME");
  if (home.empty()) {
    if (const passwd *pw = ::getpwuid(::getuid()); pw && pw->pw_dir)
      home = pw->pw_dir;
  }
  return home.empty() ? "" : home + "/.cache/ls2c";
}

MemoryProgramCache &MemoryProgramCache::global() {
  static MemoryProgramCache cache;
  return cache;
}

std::shared_ptr<const std::string>
MemoryProgramCache::lookup(const std::string &key) const {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = entries.find(key);
  return it == entries.end() ? nullptr : it->second;
}

void MemoryProgramCache::insert(const std::string &key, std::string cubin) {
  auto value = std::make_shared<const std::string>(std::move(cubin));
  std::lock_guard<std::mutex> lock(mutex);
  entries[key] = std::move(value);
}

void MemoryProgramCache::clear() {
  std::lock_guard<std::mutex> lock(mutex);
  entries.clear();
}

size_t MemoryProgramCache::size() const {
  std::lock_guard<std::mutex> lock(mutex);
  return entries.size();
}

std::string encodeProgramCacheEntry(std::string_view key, std::string_view payload) {
  if (!isKey(key))
    throw std::invalid_argument("program cache key '" + std::string(key) +
                                "' is not 64 lowercase hex digits");
  std::string out;
  out.reserve(kProgramCacheHeaderBytes + payload.size());
  out.append(kMagic, sizeof(kMagic));
  putLE(out, kProgramCacheFormatVersion, 4);
  putLE(out, kProgramCacheHeaderBytes, 4);
  putLE(out, payload.size(), 8);
  out.append(key);
  Sha256Digest digest = sha256(payload);
  out.append(reinterpret_cast<const char *>(digest.data()), digest.size());
  out.append(payload);
  return out;
}

std::string decodeProgramCacheEntry(std::string_view bytes, std::string_view key,
                                    std::string &payload) {
  if (bytes.size() < sizeof(kMagic) ||
      bytes.substr(0, sizeof(kMagic)) != std::string_view(kMagic, sizeof(kMagic)))
    return "bad magic (not an ls2c program cache entry)";
  if (bytes.size() < kProgramCacheHeaderBytes)
    return "truncated: " + std::to_string(bytes.size()) +
           " bytes, shorter than the " + std::to_string(kProgramCacheHeaderBytes) +
           "-byte header";
  uint64_t version = getLE(bytes, 8, 4);
  if (version != kProgramCacheFormatVersion)
    return "format version " + std::to_string(version) + ", expected " +
           std::to_string(kProgramCacheFormatVersion);
  uint64_t headerBytes = getLE(bytes, 12, 4);
  if (headerBytes != kProgramCacheHeaderBytes)
    return "header size " + std::to_string(headerBytes) + ", expected " +
           std::to_string(kProgramCacheHeaderBytes);
  uint64_t payloadBytes = getLE(bytes, 16, 8);
  uint64_t actual = bytes.size() - kProgramCacheHeaderBytes;
  if (payloadBytes != actual)
    return std::string(actual < payloadBytes ? "truncated" : "size mismatch") +
           ": the header gives a " + std::to_string(payloadBytes) +
           "-byte payload, the file holds " + std::to_string(actual) + " bytes";
  if (bytes.substr(24, kKeyHexDigits) != key)
    return "entry for another key (" + std::string(bytes.substr(24, kKeyHexDigits)) +
           ")";
  std::string_view body = bytes.substr(kProgramCacheHeaderBytes);
  Sha256Digest digest = sha256(body);
  if (bytes.substr(88, digest.size()) !=
      std::string_view(reinterpret_cast<const char *>(digest.data()), digest.size()))
    return "payload checksum mismatch";
  payload.assign(body);
  return "";
}

std::string DiskProgramCache::entryPath(const std::string &key) const {
  if (!isKey(key))
    throw std::invalid_argument("program cache key '" + key +
                                "' is not 64 lowercase hex digits");
  return root + "/" + key.substr(0, 2) + "/" + key + ".cubin";
}

DiskProgramCache::Lookup DiskProgramCache::lookup(const std::string &key) const {
  Lookup result;
  std::string path = entryPath(key);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    // A missing entry, or a cache directory that does not exist (or is a
    // file), is an ordinary miss.
    if (errno == ENOENT || errno == ENOTDIR)
      return result;
    result.status = Lookup::Unreadable;
    result.problem = std::strerror(errno);
    return result;
  }
  std::string bytes;
  char buffer[1 << 16];
  int err = 0;
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      err = errno;
    if (n <= 0)
      break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  if (err) {
    result.status = Lookup::Unreadable;
    result.problem = std::strerror(err);
    return result;
  }
  std::string problem = decodeProgramCacheEntry(bytes, key, result.payload);
  if (!problem.empty()) {
    result.status = Lookup::Corrupt;
    result.problem = std::move(problem);
    result.payload.clear();
    return result;
  }
  result.status = Lookup::Hit;
  return result;
}

void DiskProgramCache::store(const std::string &key, std::string_view payload) const {
  std::string path = entryPath(key);
  std::string dir = path.substr(0, path.rfind('/'));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw FileWriteError("cannot write '" + path + "': cannot create directory '" +
                         dir + "': " + ec.message());
  writeFileAtomically(path, encodeProgramCacheEntry(key, payload));
}

} // namespace ls2c::jit
