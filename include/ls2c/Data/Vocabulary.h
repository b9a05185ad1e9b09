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

/// A text file's characters (CharCorpus::symbols, id order):
/// "65 characters, fnv1a64 0123456789abcdef".
std::string characterVocabulary(const std::vector<uint8_t> &symbols);

/// A tokenizer's (Tokenizer::fingerprint, as token files record it):
/// "tokenizer fingerprint 0123456789abcdef".
std::string tokenizerVocabulary(uint64_t fingerprint);

/// An encoder-decoder's two sides: the one tokenizer's when they are the
/// same, else "source tokenizer fingerprint S, target tokenizer fingerprint T".
std::string tokenizerVocabulary(uint64_t source, uint64_t target);

/// Whether two recorded vocabularies surely map text differently: both
/// known and of one kind (characters of a text, or tokenizers) but not
/// equal. A text's characters and a character tokenizer's token file give
/// the same ids (`ls2c tokenize --train char`) under different records, so
/// records of different kinds are not compared.
bool vocabulariesDiffer(const std::string &a, const std::string &b);

} // namespace ls2c

#endif // LS2C_DATA_VOCABULARY_H
