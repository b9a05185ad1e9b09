//===- GenerationText.h - text to a model's ids and back, for generation --===//
//
// The ids generation feeds and returns are those training used:
//   decoder: the tokenizer's ids as they are (token files, or a character
//     corpus' vocabulary: its distinct bytes, sorted, as `ls2c train` builds
//     it from a text file); a prompt is its text's ids; no end token.
//   encoder_decoder: fairseq's dictionary, the tokenizer's ids + 4 after
//     <s> 0, <pad> 1, </s> 2, <unk> 3 (lib/Trainer/TranslationData.cpp); a
//     source is its ids cut to max_seq_len - 1 then </s>, as training's
//     batches clip them; the decoder starts from </s> and ends with it; <pad>
//     is never generated.
// MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_GENERATION_GENERATIONTEXT_H
#define LS2C_GENERATION_GENERATIONTEXT_H

#include "ls2c/Data/Tokenizer.h"
#include "ls2c/Generation/Search.h"
#include "ls2c/Model/ModelDescription.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ls2c::generation {

class GenerationText {
public:
  /// `tokenizer` (ls2c tokenize's model file: sentencepiece or characters)
  /// encodes prompts or sources; `target` decodes the translation side when
  /// it differs (null: the same). Throws GenerationError when a vocabulary
  /// does not fit the model's (tokenizer ids + 4 > src_vocab or vocab for
  /// encoder_decoder, ids > vocab for decoders) or the architecture does not
  /// generate.
  GenerationText(const ModelDescription &desc, std::unique_ptr<Tokenizer> tokenizer,
                 std::unique_ptr<Tokenizer> target = nullptr);
  /// A decoder trained on a raw text file: the file's distinct bytes, sorted.
  /// Throws GenerationError naming the file.
  static GenerationText fromCharCorpus(const ModelDescription &desc, const std::string &path);

  GenerationText(GenerationText &&) noexcept;
  ~GenerationText();

  bool hasSource() const;
  /// The decoder's first tokens for an input line: the prompt's ids
  /// (decoders) or </s> (encoder_decoder). Throws GenerationError (without
  /// a file name: the caller adds it) when the text holds what the
  /// vocabulary cannot express.
  std::vector<int32_t> prompt(std::string_view line) const;
  /// The source ids of a line (encoder_decoder only); `cut`, when given, is
  /// set to whether the line held more than max_seq_len - 1 tokens.
  std::vector<int32_t> source(std::string_view line, bool *cut = nullptr) const;
  /// The text of generated ids (specials below 4 left out for encoder_decoder).
  std::string text(const std::vector<int32_t> &ids) const;
  /// eos and pad for SearchOptions.
  void setSpecials(SearchOptions &options) const;

  /// What maps text to ids (Vocabulary.h), as a checkpoint of a model
  /// trained on this text or with these tokenizers records it.
  std::string vocabulary() const;

private:
  GenerationText() = default;
  ModelDescription desc;
  std::unique_ptr<Tokenizer> encoder, decoder; ///< decoder may equal encoder's use
  std::vector<uint8_t> charSymbols;            ///< fromCharCorpus: id i is this byte
};

} // namespace ls2c::generation

#endif // LS2C_GENERATION_GENERATIONTEXT_H
