//===- TranslationData.cpp - encoder_decoder data: tokenized parallel text ===//
#include "DataSources.h"

#include "ls2c/Data/ParallelCorpus.h"
#include "ls2c/Data/TokenCorpus.h"
#include "ls2c/Data/Vocabulary.h"
#include "ls2c/Data/Tokenizer.h"
#include "ls2c/Data/TokenizerCorpus.h"
#include "ls2c/Support/Utf8.h"

namespace ls2c {

namespace {

// fairseq's Dictionary: <s> 0, <pad> 1, </s> 2, <unk> 3, then the tokens.
constexpr int32_t kEos = 2;

InputBatch toInputs(const TranslationBatch &b) {
  InputBatch out;
  out.inputs = {{"src_ids", intTensor(b.src_ids)},
                {"src_position_ids", intTensor(b.src_position_ids)},
                {"src_cu_seqlens", intTensor(b.src_cu_seqlens)},
                {"tgt_ids", intTensor(b.tgt_ids)},
                {"tgt_position_ids", intTensor(b.tgt_position_ids)},
                {"tgt_cu_seqlens", intTensor(b.tgt_cu_seqlens)},
                {"labels", intTensor(b.labels)}};
  out.tokens = b.sourceTokens() + b.targetTokens();
  return out;
}

/// Lines [begin, end) of `lines` (from `path`) encoded, ids shifted past the
/// specials. Throws TrainError naming the file and line.
SequenceList encodeLines(const Tokenizer &tokenizer, const std::vector<std::string> &lines,
                         size_t begin, size_t end, const std::string &path) {
  SequenceList out;
  std::vector<uint32_t> ids;
  std::vector<int32_t> shifted;
  for (size_t i = begin; i < end; ++i) {
    const std::string where = path + ":" + std::to_string(i + 1);
    if (size_t bad = findInvalidUtf8(lines[i]); bad != std::string::npos)
      throw TrainError(where + ":" + std::to_string(bad + 1) + ": invalid UTF-8");
    ids.clear();
    try {
      tokenizer.encode(lines[i], ids);
    } catch (const DataError &e) {
      throw TrainError(where + ": " + e.what());
    }
    shifted.assign(ids.size(), 0);
    for (size_t j = 0; j < ids.size(); ++j)
      shifted[j] = static_cast<int32_t>(ids[j]) + kNumSpecialIds;
    out.add(shifted);
  }
  return out;
}

std::unique_ptr<Tokenizer> openTokenizer(const std::string &path) {
  try {
    return loadTokenizer(path);
  } catch (const DataError &e) {
    throw TrainError(e.what());
  }
}

ParallelText openParallelText(const std::string &source, const std::string &target) {
  try {
    return loadParallelText(source, target);
  } catch (const DataError &e) {
    throw TrainError(e.what());
  }
}

class TranslationData : public TrainingData {
public:
  TranslationData(SequenceList src, SequenceList tgt, SequenceList validSrc,
                  SequenceList validTgt, const BucketingOptions &bucketing,
                  uint64_t seed, int64_t ignored, std::string vocabulary)
      : words(std::move(vocabulary)), src(std::move(src)), tgt(std::move(tgt)),
        validSrc(std::move(validSrc)),
        validTgt(std::move(validTgt)),
        train(this->src.spans(), this->tgt.spans(), bucketing, TranslationSpecials{}, seed),
        valid(this->validSrc.spans(), this->validTgt.spans(), bucketing,
              TranslationSpecials{}, seed),
        maxSequences(bucketing.maxSequences), ignored(ignored) {}

  std::string vocabulary() const override { return words; }
  std::string fingerprint() const override {
    return dataFingerprint(src.size(), "pairs",
                           {bytesOf(src.ids), bytesOf(src.offsets), bytesOf(tgt.ids),
                            bytesOf(tgt.offsets)});
  }
  int64_t batchSequences() const override { return maxSequences; }
  void seek(int64_t index) override { nextIndex = index; }
  InputBatch next() override {
    int64_t n = train.numBatches(), i = nextIndex++;
    return toInputs(train.batch(i / n, i % n));
  }
  bool validBatch(int64_t k, InputBatch &out) const override {
    if (k < 0 || k >= valid.numBatches())
      return false;
    out = toInputs(valid.planBatch(k));
    return true;
  }
  std::string summary() const override {
    return "training: " + train.plan().summary() + "; validation: " + valid.plan().summary();
  }
  int64_t ignoredLabel() const override { return ignored; }

private:
  std::string words; ///< vocabulary()
  SequenceList src, tgt, validSrc, validTgt; // own the ids the batchers view
  TranslationBatcher train, valid;
  int64_t maxSequences, ignored, nextIndex = 0;
};

} // namespace

std::unique_ptr<TrainingData> loadTranslationData(const TrainOptions &o,
                                                  const ModelDescription &desc) {
  const std::string usage = " (an encoder_decoder model trains on parallel text: --data "
                            "SOURCE --target TARGET --tokenizer MODEL)";
  if (o.target.empty())
    throw TrainError(o.model + ": no --target" + usage);
  if (o.tokenizer.empty())
    throw TrainError(o.model + ": no --tokenizer" + usage);
  if (o.validData.empty() != o.validTarget.empty())
    throw TrainError(std::string(o.validData.empty() ? "--valid-target" : "--valid-data") +
                     " needs " + (o.validData.empty() ? "--valid-data" : "--valid-target") +
                     ": validation pairs are a source and a target file");
  if (desc.padding_idx == kEos || desc.padding_idx >= kNumSpecialIds)
    throw TrainError(o.model + ": padding_idx " + std::to_string(desc.padding_idx) +
                     " is a token of the translation dictionary (<s> 0, <pad> 1, </s> 2, "
                     "<unk> 3, tokens from 4), whose labels would carry no loss; use 1");

  std::unique_ptr<Tokenizer> srcTok = openTokenizer(o.tokenizer);
  std::unique_ptr<Tokenizer> tgtTok =
      o.targetTokenizer.empty() ? nullptr : openTokenizer(o.targetTokenizer);
  const Tokenizer &tgtTokenizer = tgtTok ? *tgtTok : *srcTok;
  if (desc.share_embeddings && tgtTok && tgtTok->fingerprint() != srcTok->fingerprint())
    throw TrainError(o.targetTokenizer + ": another tokenizer than " + o.tokenizer + ", but " +
                     o.model + " shares one embedding (share_embeddings) between the sides");
  auto checkVocab = [&](const Tokenizer &t, const std::string &path, int64_t limit,
                        const char *field) {
    if (static_cast<int64_t>(t.vocabSize()) + kNumSpecialIds > limit)
      throw TrainError(path + ": " + std::to_string(t.vocabSize()) +
                       " ids + 4 special ids (<s> <pad> </s> <unk>) exceed the model's " + field +
                       " " + std::to_string(limit) + " (" + o.model + ")");
  };
  checkVocab(*srcTok, o.tokenizer, desc.src_vocab, "src_vocab");
  checkVocab(tgtTokenizer, tgtTok ? o.targetTokenizer : o.tokenizer, desc.vocab, "vocab");

  // Aligned token files cannot be: tokenize skips empty and long lines.
  for (const std::string *path : {&o.data, &o.target, &o.validData, &o.validTarget})
    if (isTokenFile(*path))
      throw TrainError(*path + ": a token file; " + o.model +
                       " (encoder_decoder) trains on parallel text, tokenized with --tokenizer");
  ParallelText text = openParallelText(o.data, o.target);
  size_t n = static_cast<size_t>(text.size()), split = n;
  ParallelText validText;
  if (o.validData.empty())
    split = static_cast<size_t>(splitPoint(text.size(), "pairs", o.data));
  else
    validText = openParallelText(o.validData, o.validTarget);
  if (split == 0)
    throw TrainError(o.data + ": holds no lines");
  if (!o.validData.empty() && validText.size() == 0)
    throw TrainError(o.validData + ": holds no lines");
  const ParallelText &v = o.validData.empty() ? text : validText;
  size_t vBegin = o.validData.empty() ? split : 0;
  const std::string &vSrc = o.validData.empty() ? o.data : o.validData;
  const std::string &vTgt = o.validData.empty() ? o.target : o.validTarget;

  BucketingOptions bucketing;
  bucketing.maxBatchTokens = desc.max_batch_tokens;
  bucketing.maxSeqLen = desc.max_seq_len;
  bucketing.maxSequences = o.batchSequences;
  try {
    return std::make_unique<TranslationData>(
        encodeLines(*srcTok, text.source, 0, split, o.data),
        encodeLines(tgtTokenizer, text.target, 0, split, o.target),
        encodeLines(*srcTok, v.source, vBegin, v.source.size(), vSrc),
        encodeLines(tgtTokenizer, v.target, vBegin, v.target.size(), vTgt), bucketing, o.seed,
        desc.padding_idx >= 0 ? desc.padding_idx : -100,
        tokenizerVocabulary(srcTok->fingerprint(), tgtTokenizer.fingerprint()));
  } catch (const std::invalid_argument &e) {
    throw TrainError(o.model + ": " + e.what());
  }
}

} // namespace ls2c
