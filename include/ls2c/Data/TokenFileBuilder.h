//===- TokenFileBuilder.h - corpus files to the sequences of a token file --===//
//
// Two ways to cut a corpus into sequences:
//
// - lines (translation, classification, sentence corpora): one line is one
//   sequence. A line with more than max_seq_len tokens is truncated to its
//   first max_seq_len tokens or skipped (counted and reported, with the
//   first such file:line); a line without tokens (blank, or nothing left
//   after normalization) is skipped and counted unless kept.
// - concatenated (language-model corpora such as WikiText-2, tinyshakespeare):
//   each file becomes one token stream, every line followed by the
//   tokenizer's line end ('\n' for characters, only where the file has one,
//   so the stream is exactly the file's bytes; </s> for sentencepiece, after
//   every line, as word-level LM corpora count <eos>), cut into sequences of
//   max_seq_len tokens (the last one shorter), or one sequence per file when
//   max_seq_len is 0.
//
// A file that contributes no token at all is refused, as is an empty file
// and ill-formed UTF-8 (unless replaced; TokenizerCorpus.h). No MLIR
// dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_DATA_TOKENFILEBUILDER_H
#define LS2C_DATA_TOKENFILEBUILDER_H

#include "ls2c/Data/TokenFile.h"
#include "ls2c/Data/Tokenizer.h"
#include "ls2c/Data/TokenizerCorpus.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ls2c {

enum class LongLinePolicy { Truncate, Skip };

struct TokenizeOptions {
  bool concatenate = false;
  /// Lines: the most tokens a sequence may have (0: no limit).
  /// Concatenated: the length sequences are cut to (0: one per file).
  uint64_t maxSeqLen = 0;
  LongLinePolicy longLines = LongLinePolicy::Truncate;
  InvalidUtf8Policy invalidUtf8 = InvalidUtf8Policy::Refuse;
  bool keepEmptyLines = false;
};

struct TokenizeReport {
  uint64_t files = 0, lines = 0, sequences = 0, tokens = 0;
  uint64_t emptyLines = 0;        ///< lines without tokens (kept or skipped)
  uint64_t truncatedLines = 0;    ///< longer than maxSeqLen, cut
  uint64_t truncatedTokens = 0;   ///< tokens those cuts dropped
  uint64_t skippedLongLines = 0;  ///< longer than maxSeqLen, left out
  std::string firstLongLine;      ///< "file:line, N tokens"
  uint64_t longestLineTokens = 0; ///< before truncation
  uint64_t replacedUtf8 = 0;      ///< U+FFFD substitutions
  std::string firstReplacedLine;  ///< "file:line"
  uint64_t unknownTokens = 0;     ///< ids equal to the tokenizer's <unk>
};

/// Encodes `paths` in order with `tokenizer`. Throws DataError naming the
/// file (and line, where there is one) and the rule.
TokenFileContents tokenizeCorpus(const std::vector<std::string> &paths,
                                 const Tokenizer &tokenizer,
                                 const TokenizeOptions &options,
                                 TokenizeReport &report);

} // namespace ls2c

#endif // LS2C_DATA_TOKENFILEBUILDER_H
