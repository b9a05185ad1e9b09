//===- TokenFile.h - binary token files that training memory-maps ---------===//
//
// A token file holds a tokenized corpus as sequences of token ids, written
// by `ls2c tokenize` and memory-mapped by training. Layout, all integers
// little-endian, every offset 8-byte aligned:
//
//   offset  size  field
//   0       8     magic "LS2CTOK\0"
//   8       4     version: 1
//   12      4     token_bytes: 2 (uint16 ids) when vocab_size <= 65536,
//                 else 4 (uint32 ids); nothing else is accepted
//   16      4     vocab_size: >= 1; every token id is < vocab_size
//   20      4     flags: bit 0 = concatenated (sequences are consecutive
//                 chunks of one token stream per input file, lines ended by
//                 the tokenizer's line-end id); other bits are zero
//   24      8     num_sequences
//   32      8     num_tokens
//   40      4     bos_id   } the tokenizer's special ids, each < vocab_size
//   44      4     eos_id   } or 0xFFFFFFFF when it has none
//   48      4     unk_id   }
//   52      4     pad_id   }
//   56      8     tokenizer_fingerprint: FNV-1a 64 of the tokenizer model
//                 file's bytes (0: unknown)
//   64      8     checksum: FNV-1a 64 of every byte of the file except
//                 these eight (header bytes 0..63, then 72..end)
//   72      8     reserved, zero
//   80      8 * (num_sequences + 1)
//                 sequence offsets (uint64, in tokens): offsets[0] = 0,
//                 non-decreasing, offsets[num_sequences] = num_tokens;
//                 sequence s is tokens [offsets[s], offsets[s + 1])
//   80 + 8 * (num_sequences + 1)
//           token_bytes * num_tokens
//                 the token ids; the file ends here (no trailing bytes)
//
// The reader trusts nothing: every field, the exact file size, the checksum,
// the offsets and every token id are checked on open, and a violation is a
// DataError naming the file and the rule (and, for a token, its index, its
// sequence and its position in that sequence). No MLIR dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_DATA_TOKENFILE_H
#define LS2C_DATA_TOKENFILE_H

#include "ls2c/Data/CharCorpus.h" // DataError

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ls2c {

constexpr uint32_t kTokenFileVersion = 1;
constexpr size_t kTokenFileHeaderBytes = 80;
constexpr uint32_t kTokenFileConcatenated = 1u; ///< flags bit 0
/// A special id the tokenizer does not have.
constexpr uint32_t kNoTokenId = 0xFFFFFFFFu;

/// FNV-1a 64 (offset basis 14695981039346656037, prime 1099511628211).
uint64_t fnv1a64(std::string_view bytes,
                 uint64_t hash = 14695981039346656037ull);

/// The checksum field's value for a whole file's bytes (its own 8 bytes at
/// offset 64 are skipped). `file` holds at least the header.
uint64_t tokenFileChecksum(std::string_view file);

/// 2 for vocabularies of at most 65536 ids, else 4.
inline uint32_t tokenBytesForVocab(uint64_t vocabSize) {
  return vocabSize <= 65536 ? 2 : 4;
}

/// What a token file holds, in memory (for writing).
struct TokenFileContents {
  uint32_t vocabSize = 0;
  uint32_t flags = 0;
  uint32_t bosId = kNoTokenId, eosId = kNoTokenId, unkId = kNoTokenId,
           padId = kNoTokenId;
  uint64_t tokenizerFingerprint = 0;
  std::vector<uint64_t> offsets{0}; ///< num_sequences + 1 entries
  std::vector<uint32_t> tokens;

  uint64_t numSequences() const { return offsets.size() - 1; }
};

/// The file's bytes. Throws DataError (naming `path`) if the contents break
/// a rule of the format (an id >= vocab_size, bad offsets, ...).
std::string serializeTokenFile(const TokenFileContents &contents,
                               const std::string &path);

/// Serializes and writes atomically (ls2c/Support/AtomicFile.h): a failure
/// leaves any previous file untouched. Throws DataError or FileWriteError.
void writeTokenFile(const std::string &path, const TokenFileContents &contents);

/// A validated, read-only, memory-mapped token file.
class TokenFile {
public:
  /// Maps and validates `path`. Throws DataError naming the file and the
  /// rule broken.
  explicit TokenFile(const std::string &path);
  ~TokenFile();
  TokenFile(TokenFile &&other) noexcept;
  TokenFile &operator=(TokenFile &&other) noexcept;
  TokenFile(const TokenFile &) = delete;
  TokenFile &operator=(const TokenFile &) = delete;

  const std::string &path() const { return filePath; }
  uint32_t vocabSize() const { return vocab; }
  uint32_t tokenBytes() const { return bytesPerToken; }
  uint32_t flags() const { return fileFlags; }
  bool concatenated() const { return fileFlags & kTokenFileConcatenated; }
  uint32_t bosId() const { return special[0]; }
  uint32_t eosId() const { return special[1]; }
  uint32_t unkId() const { return special[2]; }
  uint32_t padId() const { return special[3]; }
  uint64_t tokenizerFingerprint() const { return fingerprint; }
  uint64_t numSequences() const { return sequences; }
  uint64_t numTokens() const { return tokenCount; }

  /// Token `i` of the whole file (i < numTokens()).
  uint32_t token(uint64_t i) const;
  /// Sequence `s` spans tokens [sequenceBegin(s), sequenceBegin(s + 1)).
  uint64_t sequenceBegin(uint64_t s) const;
  uint64_t sequenceLength(uint64_t s) const {
    return sequenceBegin(s + 1) - sequenceBegin(s);
  }
  std::vector<uint32_t> sequence(uint64_t s) const;
  /// Every token in file order as int32 (what LMBatcher takes). Throws
  /// DataError if vocab_size exceeds 2^31.
  std::vector<int32_t> allTokensInt32() const;

private:
  void validate(size_t size);
  void unmap();

  std::string filePath;
  void *mapping = nullptr;
  size_t mappedBytes = 0;
  const unsigned char *base = nullptr;
  uint32_t vocab = 0, bytesPerToken = 0, fileFlags = 0;
  uint32_t special[4] = {kNoTokenId, kNoTokenId, kNoTokenId, kNoTokenId};
  uint64_t fingerprint = 0, sequences = 0, tokenCount = 0;
  const unsigned char *offsetData = nullptr, *tokenData = nullptr;
};

} // namespace ls2c

#endif // LS2C_DATA_TOKENFILE_H
