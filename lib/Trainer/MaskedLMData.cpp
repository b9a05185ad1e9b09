//===- MaskedLMData.cpp - encoder data: masked segments of token files ----===//
#include "DataSources.h"

#include "ls2c/Data/MaskedLM.h"

#include <algorithm>

namespace ls2c {

namespace {

// The encoder's dictionary: these, then the tokenizer's ids + kNumSpecialIds.
constexpr int32_t kCls = 1, kSep = 2, kMask = 3;

InputBatch toInputs(const MaskedLMBatch &b) {
  InputBatch out;
  out.inputs = {{"input_ids", intTensor(b.input_ids)},
                {"token_type_ids", intTensor(b.token_type_ids)},
                {"position_ids", intTensor(b.position_ids)},
                {"cu_seqlens", intTensor(b.cu_seqlens)},
                {"labels", intTensor(b.labels)}};
  out.tokens = b.numTokens();
  out.droppedLabels = b.counts.dropped;
  return out;
}

/// Every sequence of `file` cut into segments of at most `room` tokens (the
/// last of a sequence holds the rest; empty sequences give none), ids
/// shifted past the specials.
SequenceList segments(const TokenFile &file, int64_t room) {
  SequenceList out;
  std::vector<int32_t> ids;
  for (uint64_t s = 0; s < file.numSequences(); ++s) {
    uint64_t begin = file.sequenceBegin(s), end = file.sequenceBegin(s + 1);
    for (uint64_t start = begin; start < end; start += static_cast<uint64_t>(room)) {
      ids.clear();
      for (uint64_t i = start; i < std::min(end, start + static_cast<uint64_t>(room)); ++i)
        ids.push_back(static_cast<int32_t>(file.token(i)) + kNumSpecialIds);
      out.add(ids);
    }
  }
  return out;
}

/// Segments [begin, end) of `all`.
SequenceList slice(const SequenceList &all, int64_t begin, int64_t end) {
  SequenceList out;
  for (int64_t i = begin; i < end; ++i)
    out.add(all[i].data, all[i].size);
  return out;
}

class MaskedLMData : public TrainingData {
public:
  /// Validation keeps every label: the evaluation program runs the head on
  /// every token (EvaluationModule.h), so max_predictions does not bound it.
  MaskedLMData(SequenceList trainSegments, SequenceList validSegments,
               const BucketingOptions &bucketing, const MaskedLMOptions &masking,
               uint64_t seed)
      : trainSegments(std::move(trainSegments)), validSegments(std::move(validSegments)),
        train(this->trainSegments.spans(), bucketing, masking, seed),
        valid(this->validSegments.spans(), bucketing, unbounded(masking), seed),
        maxSequences(bucketing.maxSequences), maxPredictions(masking.maxPredictions) {}

  std::string fingerprint() const override {
    return dataFingerprint(static_cast<int64_t>(trainSegments.ids.size()), "tokens",
                           {bytesOf(trainSegments.ids), bytesOf(trainSegments.offsets)});
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
    out = toInputs(valid.planBatch(/*epoch=*/0, k)); // the same masks every time
    return true;
  }
  std::string summary() const override {
    std::string s = "training: " + train.plan().summary();
    if (maxPredictions > 0)
      s += " (at most " + std::to_string(maxPredictions) +
           " labels a batch, max_predictions: labels past them are dropped and counted "
           "as dropped_labels)";
    return s + "; validation: " + valid.plan().summary();
  }

private:
  static MaskedLMOptions unbounded(MaskedLMOptions o) {
    o.maxPredictions = 0;
    return o;
  }

  SequenceList trainSegments, validSegments; // own the ids the batchers view
  MaskedLMBatcher train, valid;
  int64_t maxSequences, maxPredictions, nextIndex = 0;
};

} // namespace

std::unique_ptr<TrainingData> loadMaskedLMData(const TrainOptions &o,
                                               const ModelDescription &desc) {
  const std::string role = o.model + " (encoder)";
  TokenFile file = openTokenFile(o.data, role);
  const int64_t vocab = static_cast<int64_t>(file.vocabSize()) + kNumSpecialIds;
  if (vocab > desc.vocab)
    throw TrainError(o.data + ": vocab_size " + std::to_string(file.vocabSize()) +
                     " + 4 special ids ([PAD] [CLS] [SEP] [MASK]) exceed the model's vocab " +
                     std::to_string(desc.vocab) + " (" + o.model + ")");
  const int64_t room = desc.max_seq_len - 2; // [CLS] segment [SEP]
  if (room < 1)
    throw TrainError(o.model + ": max_seq_len " + std::to_string(desc.max_seq_len) +
                     " leaves no room for a token between [CLS] and [SEP]");

  SequenceList trainSegments = segments(file, room), validSegments;
  if (o.validData.empty()) {
    int64_t split = splitPoint(trainSegments.size(), "segments", o.data);
    validSegments = slice(trainSegments, split, trainSegments.size());
    trainSegments = slice(trainSegments, 0, split);
  } else {
    TokenFile validFile = openTokenFile(o.validData, role);
    if (validFile.vocabSize() != file.vocabSize() ||
        validFile.tokenizerFingerprint() != file.tokenizerFingerprint())
      throw TrainError(o.validData + ": made by another tokenizer than " + o.data +
                       " (vocab_size " + std::to_string(validFile.vocabSize()) +
                       " against " + std::to_string(file.vocabSize()) +
                       ", or a different fingerprint)");
    validSegments = segments(validFile, room);
    for (const auto &[part, path] : {std::pair{&trainSegments, &o.data},
                                     std::pair{&validSegments, &o.validData}})
      if (part->size() == 0)
        throw TrainError(*path + ": holds no tokens");
  }

  BucketingOptions bucketing;
  bucketing.maxBatchTokens = desc.max_batch_tokens;
  bucketing.maxSeqLen = desc.max_seq_len;
  bucketing.maxSequences = o.batchSequences;
  MaskedLMOptions masking;
  masking.masking.vocabSize = static_cast<int32_t>(vocab);
  masking.masking.maskId = kMask;
  // Random replacements are real tokens; the file's own specials (</s> line
  // ends, <unk>) are never selected, as BERT never selects its specials.
  masking.masking.randomLow = kNumSpecialIds;
  for (uint32_t id : {file.bosId(), file.eosId(), file.unkId(), file.padId()})
    if (id != kNoTokenId)
      masking.masking.specialIds.push_back(static_cast<int32_t>(id) + kNumSpecialIds);
  masking.clsId = kCls;
  masking.sepId = kSep;
  masking.maxPredictions = desc.max_predictions;
  try {
    return std::make_unique<MaskedLMData>(std::move(trainSegments), std::move(validSegments),
                                          bucketing, masking, o.seed);
  } catch (const std::invalid_argument &e) {
    throw TrainError(o.model + ": " + e.what());
  }
}

} // namespace ls2c
