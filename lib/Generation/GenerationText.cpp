//===- GenerationText.cpp - prompts, sources and outputs as training's ids -===//
#include "ls2c/Generation/GenerationText.h"

#include "ls2c/Data/CharCorpus.h"
#include "ls2c/Data/Vocabulary.h"

#include <algorithm>
#include <cstdio>

namespace ls2c::generation {

namespace {

// fairseq's dictionary (lib/Trainer/TranslationData.cpp).
constexpr int32_t kPad = 1, kEos = 2, kSpecials = 4;

} // namespace

GenerationText::GenerationText(const ModelDescription &d, std::unique_ptr<Tokenizer> tokenizer,
                               std::unique_ptr<Tokenizer> target)
    : desc(d), encoder(std::move(tokenizer)), decoder(std::move(target)) {
  if (!isCausalLM(d.architecture) && d.architecture != Architecture::EncoderDecoder)
    throw GenerationError(d.name + ": generation needs a decoder, llama or encoder_decoder model");
  const Tokenizer &out = decoder ? *decoder : *encoder;
  if (d.architecture == Architecture::EncoderDecoder) {
    if (static_cast<int64_t>(encoder->vocabSize()) + kSpecials > d.src_vocab)
      throw GenerationError("the tokenizer's " + std::to_string(encoder->vocabSize()) +
                            " ids + 4 specials exceed the model's src_vocab " +
                            std::to_string(d.src_vocab));
    if (static_cast<int64_t>(out.vocabSize()) + kSpecials > d.vocab)
      throw GenerationError("the target tokenizer's " + std::to_string(out.vocabSize()) +
                            " ids + 4 specials exceed the model's vocab " + std::to_string(d.vocab));
  } else if (static_cast<int64_t>(encoder->vocabSize()) > d.vocab) {
    throw GenerationError("the tokenizer's " + std::to_string(encoder->vocabSize()) +
                          " ids exceed the model's vocab " + std::to_string(d.vocab));
  }
}

GenerationText GenerationText::fromCharCorpus(const ModelDescription &d, const std::string &path) {
  if (!isCausalLM(d.architecture))
    throw GenerationError(path + ": a text file's characters are a decoder's vocabulary; " +
                          d.name + " is " + std::string(toString(d.architecture)));
  CharCorpus corpus;
  try {
    corpus = loadCharCorpus(path, 0.9, 1);
  } catch (const DataError &e) {
    throw GenerationError(e.what());
  }
  if (corpus.vocabSize() > d.vocab)
    throw GenerationError(path + ": " + std::to_string(corpus.vocabSize()) +
                          " distinct characters exceed the model's vocab " +
                          std::to_string(d.vocab));
  GenerationText t;
  t.desc = d;
  t.charSymbols = corpus.symbols;
  return t;
}

std::string GenerationText::vocabulary() const {
  if (!charSymbols.empty())
    return characterVocabulary(charSymbols);
  return tokenizerVocabulary(encoder->fingerprint(), (decoder ? *decoder : *encoder).fingerprint());
}

GenerationText::GenerationText(GenerationText &&) noexcept = default;
GenerationText::~GenerationText() = default;

bool GenerationText::hasSource() const {
  return desc.architecture == Architecture::EncoderDecoder;
}

std::vector<int32_t> GenerationText::prompt(std::string_view line) const {
  if (hasSource())
    return {kEos};
  std::vector<int32_t> ids;
  if (!charSymbols.empty()) {
    for (size_t i = 0; i < line.size(); ++i) {
      auto byte = static_cast<uint8_t>(line[i]);
      auto it = std::find(charSymbols.begin(), charSymbols.end(), byte);
      if (it == charSymbols.end()) {
        // Name the whole UTF-8 character the byte starts or belongs to.
        size_t start = i;
        while (start > 0 && (static_cast<uint8_t>(line[start]) & 0xC0) == 0x80)
          --start;
        size_t end = start + 1;
        while (end < line.size() && (static_cast<uint8_t>(line[end]) & 0xC0) == 0x80)
          ++end;
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", byte);
        throw GenerationError("column " + std::to_string(i + 1) + ": the character '" +
                              std::string(line.substr(start, end - start)) + "' (byte " + hex +
                              ") is not in the model's vocabulary (the training text's bytes)");
      }
      ids.push_back(static_cast<int32_t>(it - charSymbols.begin()));
    }
    return ids;
  }
  std::vector<uint32_t> raw;
  try {
    encoder->encode(line, raw);
  } catch (const DataError &e) {
    throw GenerationError(e.what());
  }
  ids.assign(raw.begin(), raw.end());
  return ids;
}

std::vector<int32_t> GenerationText::source(std::string_view line, bool *cut) const {
  if (!hasSource())
    throw GenerationError(desc.name + ": a decoder model takes no source");
  std::vector<uint32_t> raw;
  try {
    encoder->encode(line, raw);
  } catch (const DataError &e) {
    throw GenerationError(e.what());
  }
  const size_t keep = std::min(raw.size(), static_cast<size_t>(desc.max_seq_len - 1));
  if (cut)
    *cut = keep < raw.size();
  std::vector<int32_t> ids;
  for (size_t i = 0; i < keep; ++i)
    ids.push_back(static_cast<int32_t>(raw[i]) + kSpecials);
  ids.push_back(kEos);
  return ids;
}

std::string GenerationText::text(const std::vector<int32_t> &ids) const {
  if (!charSymbols.empty()) {
    std::string s;
    for (int32_t id : ids)
      s += id >= 0 && static_cast<size_t>(id) < charSymbols.size()
               ? static_cast<char>(charSymbols[static_cast<size_t>(id)])
               : '?';
    return s;
  }
  const Tokenizer &out = decoder ? *decoder : *encoder;
  std::vector<uint32_t> raw;
  for (int32_t id : ids) {
    int32_t t = hasSource() ? id - kSpecials : id;
    if (t >= 0 && static_cast<uint32_t>(t) < out.vocabSize())
      raw.push_back(static_cast<uint32_t>(t));
  }
  return out.decode(raw.data(), raw.size());
}

void GenerationText::setSpecials(SearchOptions &options) const {
  options.eos = hasSource() ? kEos : -1;
  options.pad = hasSource() ? kPad : -1;
}

} // namespace ls2c::generation
