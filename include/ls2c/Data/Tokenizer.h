//===- Tokenizer.h - text to token ids: sentencepiece or characters -------===//
//
// Two kinds of tokenizer, one interface:
//
// - SentencePiece (BPE or unigram, trained through libsentencepiece's C++
//   API, or any existing `.model` file). Trained models use byte fallback by
//   default (characters outside the vocabulary become UTF-8 byte pieces, so
//   no text is lost), ids 0/1/2 are <unk>/<s>/</s>, and decode(encode(text))
//   is the text as the model's normalizer leaves it: "nmt_nfkc" (NFKC,
//   whitespace runs folded to one space, leading and trailing whitespace
//   dropped, control characters and U+FFFD removed) by default, or exactly
//   the text with "identity".
// - Characters, as ls2c train's character corpora (CharCorpus.h): the
//   distinct bytes of the training text, sorted, are the vocabulary, so the
//   ids of a corpus are exactly loadCharCorpus's. Its model file is text:
//
//     ls2c-char-vocabulary 1
//     <N>
//     <N two-digit lowercase hex bytes, increasing, separated by spaces>
//
//   A byte outside the vocabulary cannot be encoded (refused).
//
// No MLIR dependency; links libsentencepiece.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_DATA_TOKENIZER_H
#define LS2C_DATA_TOKENIZER_H

#include "ls2c/Data/CharCorpus.h" // DataError
#include "ls2c/Data/TokenFile.h"  // kNoTokenId

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ls2c {

class Tokenizer {
public:
  virtual ~Tokenizer();

  /// "char", or the sentencepiece model type: "bpe", "unigram", "word" or
  /// "char-sentencepiece" ("sentencepiece" when the model does not say).
  virtual std::string type() const = 0;
  virtual uint32_t vocabSize() const = 0;
  /// Appends the ids of one line of text (no '\n') to `ids`. Throws
  /// DataError (without a file name: the caller adds it) if the text holds
  /// what the vocabulary cannot express.
  virtual void encode(std::string_view text, std::vector<uint32_t> &ids) const = 0;
  /// The text of `ids`. Throws DataError on an id >= vocabSize().
  virtual std::string decode(const uint32_t *ids, size_t count) const = 0;

  /// The id that ends each line in a concatenated stream ('\n' for
  /// characters, </s> for sentencepiece), or kNoTokenId.
  virtual uint32_t lineEndId() const = 0;
  /// True if the line end is the newline byte itself (characters): then it
  /// follows only lines that ended with '\n', as in the file.
  virtual bool lineEndIsNewline() const = 0;
  virtual uint32_t bosId() const { return kNoTokenId; }
  virtual uint32_t eosId() const { return kNoTokenId; }
  virtual uint32_t unkId() const { return kNoTokenId; }
  virtual uint32_t padId() const { return kNoTokenId; }

  /// Decodes a stream whose lines end with lineEndId(): each line decoded
  /// on its own, joined by '\n'.
  std::string decodeLines(const uint32_t *ids, size_t count) const;

  /// The model file's bytes: written to a file and loaded again
  /// (loadTokenizer), they give this tokenizer back.
  const std::string &modelBytes() const { return model; }
  /// FNV-1a 64 of modelBytes(), recorded in token files.
  uint64_t fingerprint() const;

protected:
  std::string model;
};

/// Loads a tokenizer model file: a character vocabulary (recognized by its
/// first line) or a sentencepiece model. Throws DataError naming `path`.
std::unique_ptr<Tokenizer> loadTokenizer(const std::string &path);
/// The same from the file's bytes; `name` is used in errors.
std::unique_ptr<Tokenizer> tokenizerFromModelBytes(std::string bytes,
                                                   const std::string &name);

/// The character tokenizer of `lines` (plus '\n' if `newline`): their
/// distinct bytes, sorted. Throws DataError if there are none.
std::unique_ptr<Tokenizer> trainCharTokenizer(const std::vector<std::string> &lines,
                                              bool newline);

struct SentencePieceOptions {
  std::string modelType = "bpe"; ///< "bpe" or "unigram"
  uint32_t vocabSize = 8000;
  double characterCoverage = 0.9995;
  bool byteFallback = true;
  /// A sentencepiece normalization rule (nmt_nfkc, nfkc, nmt_nfkc_cf,
  /// nfkc_cf) or "identity": no normalization and whitespace kept as is.
  std::string normalization = "nmt_nfkc";
  uint32_t seed = 1234;
  int threads = 0; ///< trainer threads; 0: the hardware's
};

/// Trains a sentencepiece model on `lines` through libsentencepiece. Throws
/// DataError with the trainer's reason (e.g. a vocabulary too large for the
/// text), prefixed by `corpusName`.
std::unique_ptr<Tokenizer> trainSentencePiece(const std::vector<std::string> &lines,
                                              const SentencePieceOptions &options,
                                              const std::string &corpusName);

} // namespace ls2c

#endif // LS2C_DATA_TOKENIZER_H
