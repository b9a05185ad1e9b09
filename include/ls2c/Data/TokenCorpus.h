//===- TokenCorpus.h - token files as a language-model corpus ------------===//
//
// `ls2c train --data FILE.tok`: a token file (TokenFile.h, written by
// `ls2c tokenize`) read as one id stream in file order, every sequence's ids
// one after another (`--concat` files hold language-model streams; line
// files concatenate their lines). Validation reads a second token file made
// with the same tokenizer, or, without one, the last 1 - trainFraction of
// the stream, the split CharCorpus makes of a text file: a character token
// file of a text (`ls2c tokenize --train char --concat`) gives the same ids
// and the same split as training on the text itself. No MLIR dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_DATA_TOKENCORPUS_H
#define LS2C_DATA_TOKENCORPUS_H

#include "ls2c/Data/CharCorpus.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ls2c {

struct TokenCorpus {
  std::vector<int32_t> train; ///< training ids in file order
  std::vector<int32_t> valid; ///< validation ids
  int64_t vocabSize = 0;      ///< the token file's vocab_size
  /// The token file's tokenizer fingerprint (0: not recorded).
  uint64_t tokenizerFingerprint = 0;
};

/// True when `path` is a regular file that starts with the token file magic
/// ("LS2CTOK\0"); false for anything else (a text corpus), never throws.
bool isTokenFile(const std::string &path);

/// Reads `trainPath` and, when given, `validPath` (else splits the first at
/// trainFraction). Throws DataError naming the file and the rule: a file
/// that is not a valid token file (TokenFile's checks), two files of
/// different tokenizers (fingerprint) or vocabularies, a part with fewer
/// than `minTokens` ids, trainFraction outside (0, 1).
TokenCorpus loadTokenCorpus(const std::string &trainPath, const std::string &validPath,
                            double trainFraction, int64_t minTokens);

} // namespace ls2c

#endif // LS2C_DATA_TOKENCORPUS_H
