//===- Vocabulary.h - what maps text to a model's token ids ----*- C++ -*-===//
//
// A checkpoint records the mapping its model trained with (safetensors
// metadata "ls2c.vocabulary", Checkpoint.h), so that `ls2c generate` refuses
// a --text corpus or --tokenizer that maps text otherwise: another corpus of
// the same size gives its characters other ids, and the model's output is
// then decoded into the wrong text without any error.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_DATA_VOCABULARY_H
#define LS2C_DATA_VOCABULARY_H

#include <cstdint>
#include <string>
#include <vector>

namespace ls2c {

/// The first word of a character tokenizer's model file.
inline constexpr const char *kCharVocabularyMagic = "ls2c-char-vocabulary";

/// The model file of the character tokenizer whose id i is byte
/// symbols[i] (`ls2c tokenize --train char`): "ls2c-char-vocabulary 1", the
/// count, then the bytes in hex.
std::string characterVocabularyModel(const std::vector<uint8_t> &symbols);

/// A tokenizer's (Tokenizer::fingerprint, the FNV-1a 64 of its model file,
/// as token files record it): "tokenizer fingerprint 0123456789abcdef".
std::string tokenizerVocabulary(uint64_t fingerprint);

/// A text file's characters (CharCorpus::symbols, id order), as the
/// character tokenizer of the same bytes records them: a text and the
/// character token file made from it give the same ids and the same record.
std::string characterVocabulary(const std::vector<uint8_t> &symbols);

/// An encoder-decoder's two sides: the one tokenizer's when they are the
/// same, else "source tokenizer fingerprint S, target tokenizer fingerprint T".
std::string tokenizerVocabulary(uint64_t source, uint64_t target);

} // namespace ls2c

#endif // LS2C_DATA_VOCABULARY_H
