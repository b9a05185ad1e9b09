//===- TokenFile.cpp - binary token files that training memory-maps -------===//
#include "ls2c/Data/TokenFile.h"

#include "ls2c/Support/AtomicFile.h"
#include "ls2c/Support/Hex.h"

#include "OpenRegularFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "token files are little-endian; this reader maps them as they are"
#endif

namespace ls2c {

namespace {

constexpr char kMagic[8] = {'L', 'S', '2', 'C', 'T', 'O', 'K', '\0'};
constexpr size_t kChecksumOffset = 64;

template <typename T> T load(const unsigned char *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T> void store(std::string &out, size_t at, T v) {
  std::memcpy(&out[at], &v, sizeof(T));
}

const char *const kSpecialNames[4] = {"bos_id", "eos_id", "unk_id", "pad_id"};

} // namespace

uint64_t fnv1a64(std::string_view bytes, uint64_t hash) {
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

uint64_t tokenFileChecksum(std::string_view file) {
  uint64_t h = fnv1a64(file.substr(0, kChecksumOffset));
  return fnv1a64(file.substr(kChecksumOffset + 8), h);
}

std::string serializeTokenFile(const TokenFileContents &c,
                               const std::string &path) {
  if (c.vocabSize == 0)
    throw DataError(path + ": vocab_size must be at least 1");
  if (c.flags & ~kTokenFileConcatenated)
    throw DataError(path + ": unknown flags " + std::to_string(c.flags));
  const uint32_t special[4] = {c.bosId, c.eosId, c.unkId, c.padId};
  for (int k = 0; k < 4; ++k)
    if (special[k] != kNoTokenId && special[k] >= c.vocabSize)
      throw DataError(path + ": " + kSpecialNames[k] + " " +
                      std::to_string(special[k]) + " is not below vocab_size " +
                      std::to_string(c.vocabSize));
  if (c.offsets.empty() || c.offsets.front() != 0 ||
      c.offsets.back() != c.tokens.size())
    throw DataError(path + ": sequence offsets must start at 0 and end at the "
                           "token count " + std::to_string(c.tokens.size()));
  for (size_t s = 1; s < c.offsets.size(); ++s)
    if (c.offsets[s] < c.offsets[s - 1])
      throw DataError(path + ": sequence offsets[" + std::to_string(s) +
                      "] = " + std::to_string(c.offsets[s]) +
                      " is smaller than offsets[" + std::to_string(s - 1) +
                      "] = " + std::to_string(c.offsets[s - 1]));
  const uint32_t tokenBytes = tokenBytesForVocab(c.vocabSize);
  const size_t offsetsAt = kTokenFileHeaderBytes;
  const size_t tokensAt = offsetsAt + 8 * c.offsets.size();
  std::string out(tokensAt + tokenBytes * c.tokens.size(), '\0');
  std::memcpy(&out[0], kMagic, 8);
  store<uint32_t>(out, 8, kTokenFileVersion);
  store<uint32_t>(out, 12, tokenBytes);
  store<uint32_t>(out, 16, c.vocabSize);
  store<uint32_t>(out, 20, c.flags);
  store<uint64_t>(out, 24, c.numSequences());
  store<uint64_t>(out, 32, c.tokens.size());
  for (int k = 0; k < 4; ++k)
    store<uint32_t>(out, 40 + 4 * k, special[k]);
  store<uint64_t>(out, 56, c.tokenizerFingerprint);
  std::memcpy(&out[offsetsAt], c.offsets.data(), 8 * c.offsets.size());
  for (size_t i = 0; i < c.tokens.size(); ++i) {
    uint32_t id = c.tokens[i];
    if (id >= c.vocabSize)
      throw DataError(path + ": token " + std::to_string(i) + " is id " +
                      std::to_string(id) + ", beyond the vocabulary of " +
                      std::to_string(c.vocabSize) + " ids");
    if (tokenBytes == 2)
      store<uint16_t>(out, tokensAt + 2 * i, static_cast<uint16_t>(id));
    else
      store<uint32_t>(out, tokensAt + 4 * i, id);
  }
  store<uint64_t>(out, kChecksumOffset, tokenFileChecksum(out));
  return out;
}

void writeTokenFile(const std::string &path, const TokenFileContents &c) {
  writeFileAtomically(path, serializeTokenFile(c, path));
}

TokenFile::TokenFile(const std::string &path) : filePath(path) {
  struct stat st;
  int fd = openRegularFile(path, 0, st);
  size_t size = static_cast<size_t>(st.st_size);
  if (size < kTokenFileHeaderBytes) {
    ::close(fd);
    throw DataError(path + ": " + std::to_string(size) +
                    " bytes is shorter than the " +
                    std::to_string(kTokenFileHeaderBytes) +
                    "-byte token file header" +
                    (size == 0 ? " (the file is empty)" : ""));
  }
  void *m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);
  if (m == MAP_FAILED)
    throw DataError(path + ": cannot map: " + std::strerror(err));
  mapping = m;
  mappedBytes = size;
  base = static_cast<const unsigned char *>(m);
  try {
    validate(size);
  } catch (...) {
    unmap();
    throw;
  }
}

void TokenFile::validate(size_t size) {
  const std::string &p = filePath;
  if (std::memcmp(base, kMagic, 8) != 0)
    throw DataError(p + ": not a token file (the first 8 bytes are not the "
                        "magic \"LS2CTOK\\0\")");
  uint32_t version = load<uint32_t>(base + 8);
  if (version != kTokenFileVersion)
    throw DataError(p + ": token file version " + std::to_string(version) +
                    " is not supported (this reader knows version " +
                    std::to_string(kTokenFileVersion) + ")");
  bytesPerToken = load<uint32_t>(base + 12);
  vocab = load<uint32_t>(base + 16);
  fileFlags = load<uint32_t>(base + 20);
  sequences = load<uint64_t>(base + 24);
  tokenCount = load<uint64_t>(base + 32);
  for (int k = 0; k < 4; ++k)
    special[k] = load<uint32_t>(base + 40 + 4 * k);
  fingerprint = load<uint64_t>(base + 56);
  uint64_t reserved = load<uint64_t>(base + 72);

  if (bytesPerToken != 2 && bytesPerToken != 4)
    throw DataError(p + ": token_bytes " + std::to_string(bytesPerToken) +
                    " must be 2 (uint16) or 4 (uint32)");
  if (vocab == 0)
    throw DataError(p + ": vocab_size 0: a vocabulary has at least one id");
  if (bytesPerToken != tokenBytesForVocab(vocab))
    throw DataError(p + ": token_bytes " + std::to_string(bytesPerToken) +
                    " does not match vocab_size " + std::to_string(vocab) +
                    " (uint16 ids up to 65536 ids, uint32 above)");
  if (fileFlags & ~kTokenFileConcatenated)
    throw DataError(p + ": flags " + std::to_string(fileFlags) +
                    " set unknown bits (only bit 0, concatenated, is defined)");
  if (reserved != 0)
    throw DataError(p + ": reserved header bytes 72..79 are not zero");
  for (int k = 0; k < 4; ++k)
    if (special[k] != kNoTokenId && special[k] >= vocab)
      throw DataError(p + ": " + kSpecialNames[k] + " " +
                      std::to_string(special[k]) +
                      " is not below vocab_size " + std::to_string(vocab) +
                      " (0xFFFFFFFF means none)");

  // The exact size the counts imply, without overflow.
  const uint64_t maxU = UINT64_MAX;
  uint64_t need = kTokenFileHeaderBytes;
  bool overflow = sequences >= maxU / 16 ||
                  tokenCount > (maxU - need - 8 * (sequences + 1)) / bytesPerToken;
  if (!overflow)
    need += 8 * (sequences + 1) + bytesPerToken * tokenCount;
  if (overflow || need != size)
    throw DataError(p + ": file is " + std::to_string(size) +
                    " bytes but num_sequences " + std::to_string(sequences) +
                    " and num_tokens " + std::to_string(tokenCount) +
                    " need " +
                    (overflow ? std::string("more than 2^64")
                              : std::to_string(need)) +
                    (!overflow && need > size ? " (truncated?)" : ""));

  std::string_view whole(reinterpret_cast<const char *>(base), size);
  uint64_t stored = load<uint64_t>(base + kChecksumOffset);
  uint64_t actual = tokenFileChecksum(whole);
  if (stored != actual) {
    throw DataError(p + ": checksum mismatch: the header says 0x" + hex64(stored) +
                    ", the bytes hash to 0x" + hex64(actual) + " (the file is corrupt)");
  }

  offsetData = base + kTokenFileHeaderBytes;
  tokenData = offsetData + 8 * (sequences + 1);
  uint64_t first = load<uint64_t>(offsetData);
  if (first != 0)
    throw DataError(p + ": sequence offsets[0] is " + std::to_string(first) +
                    ", not 0");
  uint64_t prev = 0;
  for (uint64_t s = 1; s <= sequences; ++s) {
    uint64_t o = load<uint64_t>(offsetData + 8 * s);
    if (o < prev || o > tokenCount)
      throw DataError(p + ": sequence offsets[" + std::to_string(s) + "] = " +
                      std::to_string(o) +
                      (o < prev ? " is smaller than offsets[" +
                                      std::to_string(s - 1) + "] = " +
                                      std::to_string(prev)
                                : " exceeds num_tokens " +
                                      std::to_string(tokenCount)));
    prev = o;
  }
  if (prev != tokenCount)
    throw DataError(p + ": the last sequence offset, offsets[" +
                    std::to_string(sequences) + "] = " + std::to_string(prev) +
                    ", is not num_tokens " + std::to_string(tokenCount));

  // Every id below the vocabulary; the first one that is not is reported
  // with its sequence and position.
  for (uint64_t i = 0; i < tokenCount; ++i) {
    uint32_t id = token(i);
    if (id < vocab)
      continue;
    // The sequence holding token i: the last s with offsets[s] <= i.
    uint64_t lo = 0, hi = sequences; // offsets[lo] <= i < offsets[hi]
    while (hi - lo > 1) {
      uint64_t mid = lo + (hi - lo) / 2;
      (sequenceBegin(mid) <= i ? lo : hi) = mid;
    }
    throw DataError(p + ": token " + std::to_string(i) + " (sequence " +
                    std::to_string(lo) + ", position " +
                    std::to_string(i - sequenceBegin(lo)) + ", byte offset " +
                    std::to_string(tokenData - base + bytesPerToken * i) +
                    ") is id " + std::to_string(id) +
                    ", beyond the vocabulary of " + std::to_string(vocab) +
                    " ids");
  }
}

uint32_t TokenFile::token(uint64_t i) const {
  return bytesPerToken == 2 ? load<uint16_t>(tokenData + 2 * i)
                            : load<uint32_t>(tokenData + 4 * i);
}

uint64_t TokenFile::sequenceBegin(uint64_t s) const {
  return load<uint64_t>(offsetData + 8 * s);
}

std::vector<uint32_t> TokenFile::sequence(uint64_t s) const {
  std::vector<uint32_t> out;
  uint64_t b = sequenceBegin(s), e = sequenceBegin(s + 1);
  out.reserve(e - b);
  for (uint64_t i = b; i < e; ++i)
    out.push_back(token(i));
  return out;
}

std::vector<int32_t> TokenFile::allTokensInt32() const {
  if (vocab > 0x80000000u)
    throw DataError(filePath + ": vocab_size " + std::to_string(vocab) +
                    " does not fit int32 token ids");
  std::vector<int32_t> out(tokenCount);
  for (uint64_t i = 0; i < tokenCount; ++i)
    out[i] = static_cast<int32_t>(token(i));
  return out;
}

void TokenFile::unmap() {
  if (mapping)
    ::munmap(mapping, mappedBytes);
  mapping = nullptr;
  base = offsetData = tokenData = nullptr;
}

TokenFile::~TokenFile() { unmap(); }

TokenFile::TokenFile(TokenFile &&o) noexcept { *this = std::move(o); }

TokenFile &TokenFile::operator=(TokenFile &&o) noexcept {
  if (this != &o) {
    unmap();
    filePath = std::move(o.filePath);
    mapping = o.mapping;
    mappedBytes = o.mappedBytes;
    base = o.base;
    vocab = o.vocab;
    bytesPerToken = o.bytesPerToken;
    fileFlags = o.fileFlags;
    std::memcpy(special, o.special, sizeof(special));
    fingerprint = o.fingerprint;
    sequences = o.sequences;
    tokenCount = o.tokenCount;
    offsetData = o.offsetData;
    tokenData = o.tokenData;
    o.mapping = nullptr;
    o.base = o.offsetData = o.tokenData = nullptr;
  }
  return *this;
}

} // namespace ls2c
