//===- MaskedLM.cpp - BERT masked-language-model batches ------------------===//
#include "ls2c/Data/MaskedLM.h"
#include "ls2c/Data/CharCorpus.h" // DataError

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ls2c {

namespace {
constexpr uint64_t kMaskStream = 0x6d61736b2d6c6d31ull; // "mask-lm1"

[[noreturn]] void bad(const std::string &what) {
  throw std::invalid_argument("masked LM: " + what);
}

void checkProbability(const char *name, double p) {
  if (!(p >= 0.0 && p <= 1.0))
    bad(std::string(name) + " " + std::to_string(p) + " must be in [0, 1]");
}

void validate(const MaskingOptions &o) {
  checkProbability("maskProb", o.maskProb);
  checkProbability("replaceWithMask", o.replaceWithMask);
  checkProbability("replaceWithRandom", o.replaceWithRandom);
  if (o.replaceWithMask + o.replaceWithRandom > 1.0 + 1e-12)
    bad("replaceWithMask + replaceWithRandom = " +
        std::to_string(o.replaceWithMask + o.replaceWithRandom) +
        " must be at most 1");
  if (o.vocabSize < 1)
    bad("vocabSize " + std::to_string(o.vocabSize) + " must be >= 1");
  if (o.randomLow < 0 || o.randomLow >= o.vocabSize)
    bad("randomLow " + std::to_string(o.randomLow) + " must be in [0, " +
        std::to_string(o.vocabSize) + ")");
  if (o.maskId < 0 || o.maskId >= o.vocabSize)
    bad("maskId " + std::to_string(o.maskId) + " must be in [0, " +
        std::to_string(o.vocabSize) + ")");
}
} // namespace

MaskingCounts &MaskingCounts::operator+=(const MaskingCounts &o) {
  tokens += o.tokens;
  eligible += o.eligible;
  selected += o.selected;
  masked += o.masked;
  random += o.random;
  unchanged += o.unchanged;
  dropped += o.dropped;
  return *this;
}

MaskingCounts maskTokens(int32_t *ids, int32_t *labels, int64_t n,
                         const MaskingOptions &o, uint64_t key) {
  validate(o);
  std::vector<int32_t> special = o.specialIds;
  std::sort(special.begin(), special.end());
  SplitMix64 rng(key);
  MaskingCounts c;
  const auto randomRange =
      static_cast<uint64_t>(o.vocabSize) - static_cast<uint64_t>(o.randomLow);
  for (int64_t j = 0; j < n; ++j) {
    ++c.tokens;
    labels[j] = o.ignoreIndex;
    // One draw per token, special or not, so a token's fate depends only on
    // its position.
    double u = rng.uniform();
    if (std::binary_search(special.begin(), special.end(), ids[j]))
      continue;
    ++c.eligible;
    if (!(u < o.maskProb))
      continue;
    ++c.selected;
    labels[j] = ids[j];
    double v = rng.uniform();
    if (v < o.replaceWithMask) {
      ids[j] = o.maskId;
      ++c.masked;
    } else if (v < o.replaceWithMask + o.replaceWithRandom) {
      ids[j] = o.randomLow + static_cast<int32_t>(rng.below(randomRange));
      ++c.random;
    } else {
      ++c.unchanged;
    }
  }
  return c;
}

MaskedLMBatcher::MaskedLMBatcher(const std::vector<TokenSpan> &sentences,
                                 const BucketingOptions &bucketing,
                                 const MaskedLMOptions &options, uint64_t seed)
    : first(sentences), options(options), seed(seed) {
  init(bucketing);
}

MaskedLMBatcher::MaskedLMBatcher(const std::vector<TokenSpan> &first,
                                 const std::vector<TokenSpan> &second,
                                 const BucketingOptions &bucketing,
                                 const MaskedLMOptions &options, uint64_t seed)
    : first(first), second(second), pairs(true), options(options), seed(seed) {
  if (first.size() != second.size())
    bad(std::to_string(first.size()) + " first sentences but " +
        std::to_string(second.size()) + " second sentences");
  init(bucketing);
}

void MaskedLMBatcher::init(const BucketingOptions &bucketing) {
  validate(options.masking);
  MaskingOptions &m = options.masking;
  for (int32_t id : {options.clsId, options.sepId})
    if (id < 0 || id >= m.vocabSize)
      bad("special id " + std::to_string(id) + " must be in [0, " +
          std::to_string(m.vocabSize) + ")");
  // [CLS], [SEP] and [MASK] are never selected, whatever the caller listed.
  m.specialIds.push_back(options.clsId);
  m.specialIds.push_back(options.sepId);
  m.specialIds.push_back(m.maskId);
  std::sort(m.specialIds.begin(), m.specialIds.end());
  m.specialIds.erase(std::unique(m.specialIds.begin(), m.specialIds.end()),
                     m.specialIds.end());
  const int64_t specials = pairs ? 3 : 2;
  if (options.maxPredictions < 0)
    bad("maxPredictions " + std::to_string(options.maxPredictions) + " must be >= 0");
  if (bucketing.maxSeqLen < specials)
    bad("maxSeqLen " + std::to_string(bucketing.maxSeqLen) + " leaves no room for " +
        std::to_string(specials) + " special tokens");
  auto check = [&](const std::vector<TokenSpan> &list, const char *which) {
    for (size_t i = 0; i < list.size(); ++i)
      for (int64_t j = 0; j < list[i].size; ++j)
        if (list[i][j] < 0 || list[i][j] >= m.vocabSize)
          throw DataError(std::string("masked LM: ") + which + "sequence " +
                          std::to_string(i) + ", token " + std::to_string(j) +
                          ": id " + std::to_string(list[i][j]) +
                          " is outside the vocabulary [0, " +
                          std::to_string(m.vocabSize) + ")");
  };
  check(first, pairs ? "first " : "");
  check(second, "second ");
  std::vector<int64_t> lengths;
  lengths.reserve(first.size());
  for (size_t i = 0; i < first.size(); ++i)
    lengths.push_back(first[i].size + (pairs ? second[i].size : 0) + specials);
  batchPlan = planBatches(lengths, bucketing, seed);
}

void MaskedLMBatcher::sequence(int64_t i, std::vector<int32_t> &ids,
                               std::vector<int32_t> &tokenTypes) const {
  if (i < 0 || i >= static_cast<int64_t>(first.size()))
    throw std::out_of_range("MaskedLMBatcher: sequence " + std::to_string(i) +
                            " of " + std::to_string(first.size()));
  auto u = static_cast<size_t>(i);
  ids.clear();
  tokenTypes.clear();
  int64_t length = batchPlan.lengths[u];
  if (length < 0)
    return; // skipped by the plan
  int64_t na = first[u].size, nb = pairs ? second[u].size : 0;
  int64_t room = length - (pairs ? 3 : 2);
  if (!pairs) {
    na = std::min(na, room);
  } else {
    while (na + nb > room) // truncate_seq_pair: shorten the longer side
      (na > nb ? na : nb) -= 1;
  }
  ids.push_back(options.clsId);
  ids.insert(ids.end(), first[u].begin(), first[u].begin() + na);
  ids.push_back(options.sepId);
  tokenTypes.assign(ids.size(), 0);
  if (pairs) {
    ids.insert(ids.end(), second[u].begin(), second[u].begin() + nb);
    ids.push_back(options.sepId);
    tokenTypes.resize(ids.size(), 1);
  }
}

MaskedLMBatch MaskedLMBatcher::batch(int64_t epoch, int64_t k) const {
  if (k < 0 || k >= numBatches())
    throw std::out_of_range("MaskedLMBatcher: batch " + std::to_string(k) +
                            " of " + std::to_string(numBatches()));
  return planBatch(epoch, batchPlan.epochOrder(epoch)[static_cast<size_t>(k)]);
}

MaskedLMBatch MaskedLMBatcher::planBatch(int64_t epoch, int64_t b) const {
  if (b < 0 || b >= numBatches())
    throw std::out_of_range("MaskedLMBatcher: plan batch " + std::to_string(b) +
                            " of " + std::to_string(numBatches()));
  MaskedLMBatch out;
  out.cu_seqlens.push_back(0);
  const uint64_t epochKey = mixSeed(
      mixSeed(seed, kMaskStream),
      options.dynamicMasking ? static_cast<uint64_t>(epoch) : 0);
  std::vector<int32_t> ids, types, labels;
  for (int64_t i : batchPlan.batches[static_cast<size_t>(b)]) {
    sequence(i, ids, types);
    labels.resize(ids.size());
    out.counts += maskTokens(ids.data(), labels.data(),
                             static_cast<int64_t>(ids.size()), options.masking,
                             mixSeed(epochKey, static_cast<uint64_t>(i)));
    for (size_t j = 0; j < ids.size(); ++j)
      out.position_ids.push_back(static_cast<int32_t>(j));
    out.input_ids.insert(out.input_ids.end(), ids.begin(), ids.end());
    out.labels.insert(out.labels.end(), labels.begin(), labels.end());
    out.token_type_ids.insert(out.token_type_ids.end(), types.begin(), types.end());
    out.cu_seqlens.push_back(static_cast<int32_t>(out.input_ids.size()));
    out.indices.push_back(i);
  }
  if (options.maxPredictions > 0)
    dropLabelsPast(out, options.maxPredictions, options.masking.ignoreIndex);
  return out;
}

void MaskedLMBatcher::dropLabelsPast(MaskedLMBatch &b, int64_t keep, int32_t ignoreIndex) {
  int64_t labelled = 0;
  for (size_t j = 0; j < b.labels.size(); ++j) {
    if (b.labels[j] == ignoreIndex || ++labelled <= keep)
      continue;
    // A selected token's label is its id: the input goes back to it.
    b.input_ids[j] = b.labels[j];
    b.labels[j] = ignoreIndex;
    ++b.counts.dropped;
  }
}

} // namespace ls2c
