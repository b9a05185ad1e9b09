//===- Tokenizer.cpp - the tokenizer interface and character tokenizers ---===//
#include "ls2c/Data/Tokenizer.h"
#include "ls2c/Data/Vocabulary.h"

#include "OpenRegularFile.h"
#include "TokenizerInternal.h"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <sys/stat.h>

namespace ls2c {

Tokenizer::~Tokenizer() = default;

uint64_t Tokenizer::fingerprint() const { return fnv1a64(model); }

std::string Tokenizer::decodeLines(const uint32_t *ids, size_t count) const {
  const uint32_t end = lineEndId();
  std::string text;
  size_t start = 0;
  for (size_t i = 0; i <= count; ++i) {
    if (i < count && (end == kNoTokenId || ids[i] != end))
      continue;
    text += decode(ids + start, i - start);
    if (i < count)
      text.push_back('\n');
    start = i + 1;
  }
  return text;
}

namespace {

class CharTokenizer final : public Tokenizer {
public:
  explicit CharTokenizer(std::vector<uint8_t> symbols) : symbols(std::move(symbols)) {
    idOf.fill(-1);
    for (size_t i = 0; i < this->symbols.size(); ++i)
      idOf[this->symbols[i]] = static_cast<int32_t>(i);
    model = characterVocabularyModel(this->symbols);
  }

  std::string type() const override { return "char"; }
  uint32_t vocabSize() const override {
    return static_cast<uint32_t>(symbols.size());
  }

  void encode(std::string_view text, std::vector<uint32_t> &ids) const override {
    for (size_t i = 0; i < text.size(); ++i) {
      auto b = static_cast<unsigned char>(text[i]);
      if (idOf[b] < 0) {
        char buf[96];
        std::snprintf(buf, sizeof(buf),
                      "byte 0x%02x at column %zu is not in the character "
                      "vocabulary (%zu symbols)",
                      b, i + 1, symbols.size());
        throw DataError(buf);
      }
      ids.push_back(static_cast<uint32_t>(idOf[b]));
    }
  }

  std::string decode(const uint32_t *ids, size_t count) const override {
    std::string text;
    text.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      if (ids[i] >= symbols.size())
        throw DataError("id " + std::to_string(ids[i]) +
                        " is beyond the character vocabulary of " +
                        std::to_string(symbols.size()) + " ids");
      text.push_back(static_cast<char>(symbols[ids[i]]));
    }
    return text;
  }

  uint32_t lineEndId() const override {
    return idOf['\n'] < 0 ? kNoTokenId : static_cast<uint32_t>(idOf['\n']);
  }
  bool lineEndIsNewline() const override { return true; }

private:
  std::vector<uint8_t> symbols;
  std::array<int32_t, 256> idOf;
};

/// Parses a character vocabulary file's bytes (the format in Tokenizer.h).
std::unique_ptr<Tokenizer> parseCharVocabulary(const std::string &bytes,
                                               const std::string &name) {
  auto bad = [&](const std::string &rule) {
    return DataError(name + ": not a valid character vocabulary: " + rule);
  };
  std::istringstream in(bytes);
  std::string magic, version;
  in >> magic >> version;
  if (magic != kCharVocabularyMagic || version != "1")
    throw bad("the first line must be '" + std::string(kCharVocabularyMagic) + " 1'");
  long long n = -1;
  if (!(in >> n) || n < 1 || n > 256)
    throw bad("the second line must be the symbol count, 1 to 256");
  std::vector<uint8_t> symbols;
  std::string hex;
  while (in >> hex) {
    auto digit = [](char c) {
      return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    };
    if (hex.size() != 2 || digit(hex[0]) < 0 || digit(hex[1]) < 0)
      throw bad("symbol '" + hex + "' is not two lowercase hex digits");
    unsigned v = static_cast<unsigned>(digit(hex[0]) * 16 + digit(hex[1]));
    if (!symbols.empty() && v <= symbols.back()) {
      char prev[4];
      std::snprintf(prev, sizeof(prev), "%02x", symbols.back());
      throw bad("symbols must be increasing; '" + hex + "' follows '" + prev + "'");
    }
    symbols.push_back(static_cast<uint8_t>(v));
  }
  if (static_cast<long long>(symbols.size()) != n)
    throw bad("the count says " + std::to_string(n) + " symbols, the list has " +
              std::to_string(symbols.size()));
  auto tok = std::make_unique<CharTokenizer>(std::move(symbols));
  if (tok->modelBytes() != bytes)
    throw bad("it is not in canonical form (one space between symbols, one "
              "'\\n' after each line)");
  return tok;
}

} // namespace

std::unique_ptr<Tokenizer> trainCharTokenizer(const std::vector<std::string> &lines,
                                              bool newline) {
  std::array<bool, 256> seen{};
  if (newline)
    seen['\n'] = true;
  for (const std::string &line : lines)
    for (unsigned char c : line)
      seen[c] = true;
  std::vector<uint8_t> symbols;
  for (int b = 0; b < 256; ++b)
    if (seen[b])
      symbols.push_back(static_cast<uint8_t>(b));
  if (symbols.empty())
    throw DataError("no characters to build a vocabulary from");
  return std::make_unique<CharTokenizer>(std::move(symbols));
}

std::unique_ptr<Tokenizer> tokenizerFromModelBytes(std::string bytes,
                                                   const std::string &name) {
  if (bytes.empty())
    throw DataError(name + ": is empty (not a tokenizer model)");
  if (bytes.compare(0, std::strlen(kCharVocabularyMagic), kCharVocabularyMagic) == 0)
    return parseCharVocabulary(bytes, name);
  return detail::loadSentencePiece(std::move(bytes), name);
}

std::unique_ptr<Tokenizer> loadTokenizer(const std::string &path) {
  return tokenizerFromModelBytes(readRegularFile(path), path);
}

} // namespace ls2c
