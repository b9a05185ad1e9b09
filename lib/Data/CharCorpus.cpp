//===- CharCorpus.cpp - character-level text corpora ----------------------===//
#include "ls2c/Data/CharCorpus.h"

#include "ls2c/Data/ParallelCorpus.h"
#include "ls2c/Support/Utf8.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdio>

namespace ls2c {

std::string CharCorpus::decode(const std::vector<int32_t> &ids) const {
  std::string text;
  text.reserve(ids.size());
  for (int32_t id : ids)
    text.push_back(id >= 0 && id < vocabSize()
                       ? static_cast<char>(symbols[static_cast<size_t>(id)])
                       : '?');
  return text;
}

CharCorpus loadCharCorpus(const std::string &path, double trainFraction,
                          int64_t minTokens) {
  if (!(trainFraction > 0.0 && trainFraction < 1.0))
    throw DataError(path + ": train fraction " + std::to_string(trainFraction) +
                    " must be in (0, 1)");
  // Plain or gzip (as every corpus reader), and well-formed UTF-8 as
  // `ls2c tokenize --train char` requires: ids are bytes, but a corpus of
  // broken text is refused rather than learned.
  std::string text = readFileBytes(path);
  if (size_t bad = findInvalidUtf8(text); bad != std::string::npos) {
    size_t newline = bad == 0 ? std::string::npos : text.rfind('\n', bad - 1);
    size_t column = bad - (newline == std::string::npos ? 0 : newline + 1) + 1;
    auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n');
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02x",
                  static_cast<unsigned>(static_cast<unsigned char>(text[bad])));
    throw DataError(path + ":" + std::to_string(line) + ":" + std::to_string(column) +
                    ": invalid UTF-8 (byte " + byte + ")");
  }

  std::array<int32_t, 256> idOf;
  idOf.fill(-1);
  for (unsigned char c : text)
    idOf[c] = 0;
  CharCorpus corpus;
  for (int b = 0; b < 256; ++b)
    if (idOf[b] == 0) {
      idOf[b] = static_cast<int32_t>(corpus.symbols.size());
      corpus.symbols.push_back(static_cast<uint8_t>(b));
    }
  auto split = static_cast<size_t>(static_cast<double>(text.size()) * trainFraction);
  int64_t trainTokens = static_cast<int64_t>(split);
  int64_t validTokens = static_cast<int64_t>(text.size() - split);
  if (trainTokens < minTokens || validTokens < minTokens)
    throw DataError(path + ": " + std::to_string(text.size()) +
                    " characters split into " + std::to_string(trainTokens) +
                    " training and " + std::to_string(validTokens) +
                    " validation ids; each part needs at least " +
                    std::to_string(minTokens));
  corpus.train.reserve(split);
  corpus.valid.reserve(text.size() - split);
  for (size_t i = 0; i < text.size(); ++i)
    (i < split ? corpus.train : corpus.valid)
        .push_back(idOf[static_cast<unsigned char>(text[i])]);
  return corpus;
}

} // namespace ls2c
