//===- CharCorpus.h - character-level text corpora for language models ----===//
//
// A text file read byte by byte: its distinct bytes, sorted, are the
// vocabulary (tinyshakespeare has 65), and the text becomes one id per byte.
// The split is the usual one for unsplit corpora: the first
// `trainFraction` of the ids train, the rest validate. No MLIR dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_DATA_CHARCORPUS_H
#define LS2C_DATA_CHARCORPUS_H

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ls2c {

/// An unreadable or unusable corpus; what() names the file and the rule.
class DataError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct CharCorpus {
  std::vector<uint8_t> symbols; ///< the vocabulary: id i is byte symbols[i]
  std::vector<int32_t> train;   ///< ids of the training part, in text order
  std::vector<int32_t> valid;   ///< ids of the validation part

  int64_t vocabSize() const { return static_cast<int64_t>(symbols.size()); }
  /// Decodes ids back to text (ids outside the vocabulary become '?').
  std::string decode(const std::vector<int32_t> &ids) const;
};

/// Reads `path` and splits it. Throws DataError when the file cannot be read,
/// when either part would hold fewer than `minTokens` ids (so that windows
/// of that length exist), or when trainFraction is outside (0, 1).
CharCorpus loadCharCorpus(const std::string &path, double trainFraction,
                          int64_t minTokens);

} // namespace ls2c

#endif // LS2C_DATA_CHARCORPUS_H
