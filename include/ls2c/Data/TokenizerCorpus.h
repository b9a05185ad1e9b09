//===- TokenizerCorpus.h - text corpora read line by line for tokenizing --===//
//
// What `ls2c tokenize` reads: UTF-8 text files, plain or gzip-compressed
// (detected from the bytes, as WikiText-2's train.txt.gz and Multi30k's
// files are stored), one sentence or paragraph per line, '\n' ending lines
// (a '\r' before it stays part of the line). An empty file is refused, and
// so is ill-formed UTF-8 (ls2c/Support/Utf8.h), naming the file, the line
// and the byte column, unless the caller asks for each maximal ill-formed
// subpart to become U+FFFD (Unicode's "substitution of maximal subparts"),
// which is counted. No MLIR dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_DATA_TOKENIZERCORPUS_H
#define LS2C_DATA_TOKENIZERCORPUS_H

#include "ls2c/Data/CharCorpus.h" // DataError

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ls2c {

/// What to do with ill-formed UTF-8 in a corpus.
enum class InvalidUtf8Policy { Refuse, Replace };

/// Length of the maximal ill-formed subpart at the start of `s` (1 to 3
/// bytes): the bytes one U+FFFD replaces. `s` must not start with a
/// well-formed sequence.
size_t maximalIllFormedSubpart(std::string_view s);

/// `s` with each maximal ill-formed subpart replaced by U+FFFD (EF BF BD);
/// adds the number of replacements to `replaced`.
std::string replaceInvalidUtf8(std::string_view s, uint64_t &replaced);


/// Reads one corpus file line by line (streaming; gzip transparently).
class CorpusLineReader {
public:
  /// Opens `path`. Throws DataError if it cannot be opened, is not a
  /// regular file, or holds no bytes at all (after decompression).
  CorpusLineReader(const std::string &path, InvalidUtf8Policy policy);
  ~CorpusLineReader();
  CorpusLineReader(const CorpusLineReader &) = delete;
  CorpusLineReader &operator=(const CorpusLineReader &) = delete;

  /// The next line without its '\n'; false past the last line. A final
  /// line without '\n' is a line; a final '\n' does not start another.
  /// Throws DataError "<file>:<line>:<column>: invalid UTF-8 ..." (Refuse)
  /// or on a read error (a corrupt gzip stream).
  bool next(std::string &line);

  const std::string &path() const { return filePath; }
  /// 1-based number of the line `next` returned last.
  uint64_t lineNumber() const { return line; }
  /// Whether that line ended with '\n' (only the last line may not).
  bool lineHadNewline() const { return hadNewline; }
  /// U+FFFD substitutions so far (Replace), and the first line that had one.
  uint64_t replacements() const { return replaced; }
  uint64_t firstReplacedLine() const { return firstReplaced; }

private:
  bool fill();

  std::string filePath;
  InvalidUtf8Policy policy;
  void *gz = nullptr; // gzFile
  std::string buffer;
  size_t pos = 0;
  bool eof = false;
  uint64_t line = 0, replaced = 0, firstReplaced = 0;
  bool hadNewline = false;
};

/// The lines of `paths` in order, at most `maxLines` of them (0: all), for
/// training a tokenizer. `sawNewline` (optional) is set when any line read
/// ended with '\n'.
std::vector<std::string> readCorpusLines(const std::vector<std::string> &paths,
                                         InvalidUtf8Policy policy,
                                         uint64_t maxLines,
                                         bool *sawNewline = nullptr);

} // namespace ls2c

#endif // LS2C_DATA_TOKENIZERCORPUS_H
