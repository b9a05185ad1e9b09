//===- Vocabulary.cpp - what maps text to a model's token ids -------------===//
#include "ls2c/Data/Vocabulary.h"

#include "ls2c/Data/TokenFile.h"
#include "ls2c/Support/Hex.h"

#include <cstdio>

namespace ls2c {

std::string characterVocabularyModel(const std::vector<uint8_t> &symbols) {
  std::string text = std::string(kCharVocabularyMagic) + " 1\n" +
                     std::to_string(symbols.size()) + "\n";
  for (size_t i = 0; i < symbols.size(); ++i) {
    char two[4];
    std::snprintf(two, sizeof(two), "%02x", symbols[i]);
    if (i)
      text.push_back(' ');
    text += two;
  }
  text.push_back('\n');
  return text;
}

std::string tokenizerVocabulary(uint64_t fingerprint) {
  return "tokenizer fingerprint " + hex64(fingerprint);
}

std::string characterVocabulary(const std::vector<uint8_t> &symbols) {
  return tokenizerVocabulary(fnv1a64(characterVocabularyModel(symbols)));
}

std::string tokenizerVocabulary(uint64_t source, uint64_t target) {
  if (source == target)
    return tokenizerVocabulary(source);
  return "source " + tokenizerVocabulary(source) + ", target " + tokenizerVocabulary(target);
}

} // namespace ls2c
