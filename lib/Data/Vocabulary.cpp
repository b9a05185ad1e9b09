//===- Vocabulary.cpp - what maps text to a model's token ids -------------===//
#include "ls2c/Data/Vocabulary.h"

#include "ls2c/Data/TokenFile.h"

#include <cstdio>
#include <string_view>

namespace ls2c {

namespace {

std::string hex(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

} // namespace

std::string characterVocabulary(const std::vector<uint8_t> &symbols) {
  std::string_view bytes(reinterpret_cast<const char *>(symbols.data()), symbols.size());
  return std::to_string(symbols.size()) + " characters, fnv1a64 " + hex(fnv1a64(bytes));
}

std::string tokenizerVocabulary(uint64_t fingerprint) {
  return "tokenizer fingerprint " + hex(fingerprint);
}

bool vocabulariesDiffer(const std::string &a, const std::string &b) {
  auto characters = [](const std::string &v) {
    return v.find(" characters, fnv1a64 ") != std::string::npos;
  };
  return !a.empty() && !b.empty() && characters(a) == characters(b) && a != b;
}

std::string tokenizerVocabulary(uint64_t source, uint64_t target) {
  if (source == target)
    return tokenizerVocabulary(source);
  return "source " + tokenizerVocabulary(source) + ", target " + tokenizerVocabulary(target);
}

} // namespace ls2c
