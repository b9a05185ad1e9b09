//===- LMData.cpp - decoder data: windows of one id stream ----------------===//
#include "DataSources.h"

#include "ls2c/Data/LMBatcher.h"
#include "ls2c/Data/TokenCorpus.h"
#include "ls2c/Data/Vocabulary.h"

namespace ls2c {

namespace {

InputBatch toInputs(const TokenBatch &b) {
  InputBatch out;
  out.inputs = {{"input_ids", intTensor(b.input_ids)},
                {"position_ids", intTensor(b.position_ids)},
                {"cu_seqlens", intTensor(b.cu_seqlens)},
                {"labels", intTensor(b.labels)}};
  out.tokens = b.numTokens();
  return out;
}

class LMData : public TrainingData {
public:
  LMData(TokenCorpus corpus, std::string vocabulary, int64_t seqLen, int64_t sequences,
         uint64_t seed)
      : corpus(std::move(corpus)), words(std::move(vocabulary)), seqLen(seqLen),
        sequences(sequences), seed(seed) {}
  std::string vocabulary() const override { return words; }

  std::string fingerprint() const override {
    // The form checkpoints have recorded since --resume checked the data.
    return dataFingerprint(static_cast<int64_t>(corpus.train.size()), "tokens",
                           {bytesOf(corpus.train)});
  }
  int64_t batchSequences() const override { return sequences; }
  void seek(int64_t index) override {
    batcher = std::make_unique<LMBatcher>(corpus.train, seqLen, sequences, seed);
    batcher->skip(index);
  }
  InputBatch next() override { return toInputs(batcher->next()); }
  bool validBatch(int64_t k, InputBatch &out) const override {
    TokenBatch b;
    if (!LMBatcher::sequentialBatch(corpus.valid, seqLen, sequences, k, b))
      return false;
    out = toInputs(b);
    return true;
  }
  std::string summary() const override {
    // The form ls2c-gpu-train has always printed (bench/lm_side_by_side.py
    // reads the counts and the vocabulary from it).
    return std::to_string(corpus.train.size()) + " training and " +
           std::to_string(corpus.valid.size()) + " validation tokens, vocab " +
           std::to_string(corpus.vocabSize) + "; batch " + std::to_string(sequences) + " x " +
           std::to_string(seqLen) + " tokens";
  }

private:
  TokenCorpus corpus;
  std::string words; ///< vocabulary()
  int64_t seqLen, sequences;
  uint64_t seed;
  std::unique_ptr<LMBatcher> batcher;
};

} // namespace

std::unique_ptr<TrainingData> loadLMData(const TrainOptions &o, const ModelDescription &desc) {
  int64_t seqLen = desc.max_seq_len;
  if (seqLen > desc.max_batch_tokens)
    throw TrainError(o.model + ": max_seq_len " + std::to_string(seqLen) +
                     " exceeds max_batch_tokens " + std::to_string(desc.max_batch_tokens) +
                     " (sequence_parallel_size " +
                     std::to_string(desc.sequence_parallel_size) +
                     "): a sequence this long trains only split across ranks, with "
                     "ls2c-seq-parallel --train");
  int64_t sequences = o.batchSequences ? o.batchSequences : desc.max_batch_tokens / seqLen;
  int64_t batchTokens = 0;
  if (__builtin_mul_overflow(sequences, seqLen, &batchTokens) ||
      batchTokens > desc.max_batch_tokens)
    throw TrainError("--batch-sequences " + std::to_string(sequences) + " x " +
                     std::to_string(seqLen) + " tokens exceeds max_batch_tokens " +
                     std::to_string(desc.max_batch_tokens) + " of " + o.model);

  // The id stream: a token file's, or a text's characters.
  TokenCorpus corpus;
  std::string vocabulary;
  const bool tokens = isTokenFile(o.data);
  if (!tokens && !o.validData.empty())
    throw TrainError("--valid-data " + o.validData + " needs --data to be a token file (" +
                     o.data + " is text)");
  try {
    if (tokens) {
      corpus = loadTokenCorpus(o.data, o.validData, 0.9, seqLen + 1);
      if (corpus.tokenizerFingerprint)
        vocabulary = tokenizerVocabulary(corpus.tokenizerFingerprint);
    } else {
      CharCorpus text = loadCharCorpus(o.data, 0.9, seqLen + 1);
      vocabulary = characterVocabulary(text.symbols);
      corpus.vocabSize = text.vocabSize();
      corpus.train = std::move(text.train);
      corpus.valid = std::move(text.valid);
    }
  } catch (const DataError &e) {
    throw TrainError(e.what());
  }
  if (corpus.vocabSize > desc.vocab)
    throw TrainError(o.data + ": " +
                     (tokens ? "vocab_size " + std::to_string(corpus.vocabSize) + " exceeds"
                             : std::to_string(corpus.vocabSize) + " distinct characters exceed") +
                     " the model's vocab " + std::to_string(desc.vocab) + " (" + o.model + ")");
  return std::make_unique<LMData>(std::move(corpus), std::move(vocabulary), seqLen, sequences,
                                  o.seed);
}

} // namespace ls2c
