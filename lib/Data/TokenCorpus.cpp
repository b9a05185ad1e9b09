//===- TokenCorpus.cpp - token files as a language-model corpus ----------===//
#include "ls2c/Data/TokenCorpus.h"

#include "ls2c/Data/TokenFile.h"

#include "OpenRegularFile.h"


namespace ls2c {

bool isTokenFile(const std::string &path) {
  return fileStartsWith(path, std::string_view("LS2CTOK\0", 8));
}

TokenCorpus loadTokenCorpus(const std::string &trainPath, const std::string &validPath,
                            double trainFraction, int64_t minTokens) {
  if (validPath.empty() && !(trainFraction > 0.0 && trainFraction < 1.0))
    throw DataError(trainPath + ": train fraction " + std::to_string(trainFraction) +
                    " must be in (0, 1)");
  TokenFile file(trainPath);
  TokenCorpus corpus;
  corpus.vocabSize = file.vocabSize();
  corpus.tokenizerFingerprint = file.tokenizerFingerprint();
  std::vector<int32_t> ids = file.allTokensInt32();
  auto tooShort = [&](const std::string &what, size_t n) {
    return DataError(what + ": " + std::to_string(n) + " tokens; training needs at least " +
                     std::to_string(minTokens) + " (max_seq_len + 1) in each part");
  };
  if (validPath.empty()) {
    auto split = static_cast<size_t>(static_cast<double>(ids.size()) * trainFraction);
    if (static_cast<int64_t>(split) < minTokens ||
        static_cast<int64_t>(ids.size() - split) < minTokens)
      throw DataError(trainPath + ": " + std::to_string(ids.size()) + " tokens split into " +
                      std::to_string(split) + " training and " +
                      std::to_string(ids.size() - split) +
                      " validation tokens; each part needs at least " +
                      std::to_string(minTokens) + " (max_seq_len + 1)");
    corpus.valid.assign(ids.begin() + static_cast<std::ptrdiff_t>(split), ids.end());
    ids.resize(split);
    corpus.train = std::move(ids);
    return corpus;
  }
  TokenFile valid(validPath);
  if (valid.vocabSize() != file.vocabSize() ||
      valid.tokenizerFingerprint() != file.tokenizerFingerprint())
    throw DataError(validPath + ": made by another tokenizer than " + trainPath +
                    " (vocab_size " + std::to_string(valid.vocabSize()) + " against " +
                    std::to_string(file.vocabSize()) + ", or a different fingerprint)");
  corpus.train = std::move(ids);
  corpus.valid = valid.allTokensInt32();
  if (static_cast<int64_t>(corpus.train.size()) < minTokens)
    throw tooShort(trainPath, corpus.train.size());
  if (static_cast<int64_t>(corpus.valid.size()) < minTokens)
    throw tooShort(validPath, corpus.valid.size());
  return corpus;
}

} // namespace ls2c
