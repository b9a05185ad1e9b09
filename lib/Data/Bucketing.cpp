//===- Bucketing.cpp - length-bucketed batches ----------------------------===//
#include "ls2c/Data/Bucketing.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace ls2c {

//===----------------------------------------------------------------------===//
// Randomness
//===----------------------------------------------------------------------===//

namespace {
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

uint64_t finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Streams drawn from one seed, so that the tie-breaking order and the epoch
// orders never share random numbers.
constexpr uint64_t kTieStream = 0x7469652d6f726472ull;   // "tie-ordr"
constexpr uint64_t kEpochStream = 0x65706f63682d6f72ull; // "epoch-or"
} // namespace

uint64_t SplitMix64::next() {
  state += kGolden;
  return finalize(state);
}

double SplitMix64::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

uint64_t SplitMix64::below(uint64_t n) {
  if (n == 0)
    throw std::invalid_argument("SplitMix64::below: n must be >= 1");
  // Values below 2^64 mod n would make small results more likely.
  uint64_t threshold = (0 - n) % n;
  for (;;) {
    uint64_t r = next();
    if (r >= threshold)
      return r % n;
  }
}

uint64_t mixSeed(uint64_t seed, uint64_t key) {
  return finalize(seed ^ finalize(key + kGolden));
}

std::vector<int64_t> seededPermutation(int64_t n, uint64_t seed) {
  if (n < 0)
    throw std::invalid_argument("seededPermutation: n " + std::to_string(n) +
                                " must be >= 0");
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), int64_t{0});
  SplitMix64 rng(seed);
  for (int64_t i = n - 1; i > 0; --i) {
    auto j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(i) + 1));
    std::swap(p[static_cast<size_t>(i)], p[static_cast<size_t>(j)]);
  }
  return p;
}

//===----------------------------------------------------------------------===//
// Sequences
//===----------------------------------------------------------------------===//

std::vector<TokenSpan>
spansOf(const std::vector<std::vector<int32_t>> &sequences) {
  std::vector<TokenSpan> spans;
  spans.reserve(sequences.size());
  for (const auto &s : sequences)
    spans.push_back({s.data(), static_cast<int64_t>(s.size())});
  return spans;
}

void SequenceList::add(const int32_t *data, int64_t size) {
  if (size < 0)
    throw std::invalid_argument("SequenceList::add: negative size");
  ids.insert(ids.end(), data, data + size);
  offsets.push_back(static_cast<int64_t>(ids.size()));
}

TokenSpan SequenceList::operator[](int64_t i) const {
  if (i < 0 || i >= size())
    throw std::out_of_range("SequenceList: sequence " + std::to_string(i) +
                            " of " + std::to_string(size()));
  auto b = static_cast<size_t>(offsets[static_cast<size_t>(i)]);
  return {ids.data() + b,
          offsets[static_cast<size_t>(i) + 1] - offsets[static_cast<size_t>(i)]};
}

std::vector<TokenSpan> SequenceList::spans() const {
  std::vector<TokenSpan> out;
  out.reserve(static_cast<size_t>(size()));
  for (int64_t i = 0; i < size(); ++i)
    out.push_back((*this)[i]);
  return out;
}

std::vector<int64_t> lengthsOf(const std::vector<TokenSpan> &sequences) {
  std::vector<int64_t> lengths;
  lengths.reserve(sequences.size());
  for (const TokenSpan &s : sequences)
    lengths.push_back(s.size);
  return lengths;
}

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

namespace {

int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

[[noreturn]] void badOption(const std::string &field, int64_t value,
                            const std::string &rule) {
  throw std::invalid_argument("bucketing: " + field + " " +
                              std::to_string(value) + ": " + rule);
}

// Fills in the target side's defaults and checks every rule.
BucketingOptions validated(BucketingOptions o, bool pairs) {
  if (o.maxTargetBatchTokens == 0)
    o.maxTargetBatchTokens = o.maxBatchTokens;
  if (o.maxTargetSeqLen == 0)
    o.maxTargetSeqLen = o.maxSeqLen;
  if (o.padMultiple < 1)
    badOption("padMultiple", o.padMultiple, "must be >= 1");
  if (o.minSeqLen < 0)
    badOption("minSeqLen", o.minSeqLen, "must be >= 0");
  if (o.maxSequences < 0)
    badOption("maxSequences", o.maxSequences, "must be >= 0 (0 = no limit)");
  auto side = [&](const char *tokensName, int64_t tokens, const char *lenName,
                  int64_t len) {
    if (tokens < 1)
      badOption(tokensName, tokens, "must be >= 1");
    if (len < 1)
      badOption(lenName, len, "must be >= 1");
    int64_t widest = o.count == TokenCount::Padded ? roundUp(len, o.padMultiple)
                                                   : len;
    if (widest > tokens)
      badOption(lenName, len,
                std::string("one sequence of it") +
                    (o.count == TokenCount::Padded ? " (padded to a multiple of " +
                                                         std::to_string(o.padMultiple) + ")"
                                                   : "") +
                    " must fit in " + tokensName + " " + std::to_string(tokens));
    if (tokens > std::numeric_limits<int32_t>::max())
      badOption(tokensName, tokens, "must fit in int32 (cu_seqlens)");
  };
  side("maxBatchTokens", o.maxBatchTokens, "maxSeqLen", o.maxSeqLen);
  if (pairs)
    side("maxTargetBatchTokens", o.maxTargetBatchTokens, "maxTargetSeqLen",
         o.maxTargetSeqLen);
  return o;
}

// Lengths after the over-length policy: -1 = skipped.
struct Clipped {
  int64_t length;
  bool truncated, tooLong, tooShort;
};
Clipped clip(int64_t n, int64_t maxLen, const BucketingOptions &o) {
  if (n < 0)
    throw std::invalid_argument("bucketing: negative sequence length " +
                                std::to_string(n));
  if (n < o.minSeqLen)
    return {-1, false, false, true};
  if (n <= maxLen)
    return {n, false, false, false};
  if (o.overLength == OverLength::Skip)
    return {-1, false, true, false};
  return {maxLen, true, false, false};
}

BatchPlan plan(const std::vector<int64_t> &src, const std::vector<int64_t> *tgt,
               const BucketingOptions &options, uint64_t seed) {
  BatchPlan p;
  p.options = validated(options, tgt != nullptr);
  p.seed = seed;
  const BucketingOptions &o = p.options;
  const size_t n = src.size();
  p.lengths.assign(n, -1);
  if (tgt)
    p.targetLengths.assign(n, -1);
  std::vector<int64_t> kept;
  for (size_t i = 0; i < n; ++i) {
    Clipped s = clip(src[i], o.maxSeqLen, o);
    Clipped t = tgt ? clip((*tgt)[i], o.maxTargetSeqLen, o)
                    : Clipped{0, false, false, false};
    auto idx = static_cast<int64_t>(i);
    if (s.tooShort || t.tooShort) {
      p.skippedTooShort.push_back(idx);
      continue;
    }
    if (s.tooLong || t.tooLong) {
      p.skippedTooLong.push_back(idx);
      continue;
    }
    p.truncated += (s.truncated || t.truncated) ? 1 : 0;
    p.lengths[i] = s.length;
    if (tgt)
      p.targetLengths[i] = t.length;
    kept.push_back(idx);
  }

  // Sort by length (pairs: source, then target) from a random order, so
  // ties are in a seeded random order (fairseq's ordered_indices).
  std::vector<int64_t> perm =
      seededPermutation(static_cast<int64_t>(kept.size()), mixSeed(seed, kTieStream));
  std::vector<int64_t> order(kept.size());
  for (size_t i = 0; i < kept.size(); ++i)
    order[i] = kept[static_cast<size_t>(perm[i])];
  auto key = [&](int64_t i) {
    auto u = static_cast<size_t>(i);
    return std::make_pair(p.lengths[u], tgt ? p.targetLengths[u] : int64_t{0});
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return key(a) < key(b); });

  // Greedy fill in that order (fairseq's batch_by_size).
  std::vector<int64_t> batch;
  int64_t srcSum = 0, tgtSum = 0, srcMax = 0, tgtMax = 0;
  auto cost = [&](int64_t count, int64_t sum, int64_t longest) {
    return o.count == TokenCount::Packed ? sum
                                         : count * roundUp(longest, o.padMultiple);
  };
  for (int64_t i : order) {
    auto u = static_cast<size_t>(i);
    int64_t s = p.lengths[u], t = tgt ? p.targetLengths[u] : 0;
    if (!batch.empty()) {
      auto count = static_cast<int64_t>(batch.size()) + 1;
      bool full =
          (o.maxSequences > 0 && count > o.maxSequences) ||
          cost(count, srcSum + s, std::max(srcMax, s)) > o.maxBatchTokens ||
          (tgt && cost(count, tgtSum + t, std::max(tgtMax, t)) >
                      o.maxTargetBatchTokens);
      if (full) {
        p.batches.push_back(std::move(batch));
        batch.clear();
        srcSum = tgtSum = srcMax = tgtMax = 0;
      }
    }
    batch.push_back(i);
    srcSum += s;
    tgtSum += t;
    srcMax = std::max(srcMax, s);
    tgtMax = std::max(tgtMax, t);
  }
  if (!batch.empty())
    p.batches.push_back(std::move(batch));
  return p;
}

} // namespace

BatchPlan planBatches(const std::vector<int64_t> &lengths,
                      const BucketingOptions &options, uint64_t seed) {
  return plan(lengths, nullptr, options, seed);
}

BatchPlan planPairBatches(const std::vector<int64_t> &sourceLengths,
                          const std::vector<int64_t> &targetLengths,
                          const BucketingOptions &options, uint64_t seed) {
  if (sourceLengths.size() != targetLengths.size())
    throw std::invalid_argument(
        "bucketing: " + std::to_string(sourceLengths.size()) +
        " source lengths but " + std::to_string(targetLengths.size()) +
        " target lengths");
  return plan(sourceLengths, &targetLengths, options, seed);
}

int64_t BatchPlan::numSequences() const {
  int64_t total = 0;
  for (const auto &b : batches)
    total += static_cast<int64_t>(b.size());
  return total;
}

namespace {
int64_t batchCost(const BatchPlan &p, const std::vector<int64_t> &lengths,
                  int64_t b) {
  if (b < 0 || b >= p.numBatches())
    throw std::out_of_range("BatchPlan: batch " + std::to_string(b) + " of " +
                            std::to_string(p.numBatches()));
  int64_t sum = 0, longest = 0;
  const auto &batch = p.batches[static_cast<size_t>(b)];
  for (int64_t i : batch) {
    int64_t n = lengths[static_cast<size_t>(i)];
    sum += n;
    longest = std::max(longest, n);
  }
  if (p.options.count == TokenCount::Packed)
    return sum;
  return static_cast<int64_t>(batch.size()) *
         roundUp(longest, p.options.padMultiple);
}
} // namespace

int64_t BatchPlan::tokens(int64_t b) const { return batchCost(*this, lengths, b); }

int64_t BatchPlan::targetTokens(int64_t b) const {
  if (targetLengths.empty())
    throw std::logic_error("BatchPlan::targetTokens: not a plan of pairs");
  return batchCost(*this, targetLengths, b);
}

std::vector<int64_t> BatchPlan::epochOrder(int64_t epoch) const {
  return seededPermutation(
      numBatches(),
      mixSeed(mixSeed(seed, kEpochStream), static_cast<uint64_t>(epoch)));
}

std::string BatchPlan::summary() const {
  std::string s = std::to_string(numSequences()) + " sequences in " +
                  std::to_string(numBatches()) + " batches; " +
                  std::to_string(truncated) + " truncated to " +
                  std::to_string(options.maxSeqLen) + " tokens; " +
                  std::to_string(skippedTooLong.size()) +
                  " skipped (longer than " + std::to_string(options.maxSeqLen);
  if (!targetLengths.empty())
    s += " / " + std::to_string(options.maxTargetSeqLen);
  s += "); " + std::to_string(skippedTooShort.size()) +
       " skipped (shorter than " + std::to_string(options.minSeqLen) + ")";
  return s;
}

//===----------------------------------------------------------------------===//
// Packing
//===----------------------------------------------------------------------===//

TokenBatch packCausalLM(const std::vector<TokenSpan> &sequences,
                        const std::vector<int64_t> &indices, int64_t maxSeqLen) {
  if (maxSeqLen < 1)
    throw std::invalid_argument("packCausalLM: maxSeqLen " +
                                std::to_string(maxSeqLen) + " must be >= 1");
  TokenBatch b;
  b.cu_seqlens.push_back(0);
  for (int64_t i : indices) {
    if (i < 0 || i >= static_cast<int64_t>(sequences.size()))
      throw std::out_of_range("packCausalLM: sequence " + std::to_string(i) +
                              " of " + std::to_string(sequences.size()));
    const TokenSpan &s = sequences[static_cast<size_t>(i)];
    int64_t n = std::min(s.size, maxSeqLen);
    for (int64_t j = 0; j < n; ++j) {
      b.input_ids.push_back(s[j]);
      b.position_ids.push_back(static_cast<int32_t>(j));
      b.labels.push_back(j + 1 < n ? s[j + 1] : -100);
    }
    if (b.input_ids.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
      throw std::invalid_argument("packCausalLM: more than 2^31 - 1 tokens");
    b.cu_seqlens.push_back(static_cast<int32_t>(b.input_ids.size()));
  }
  return b;
}

PaddedBatch toPadded(const TokenBatch &packed, int32_t padId, int32_t labelPad,
                     int64_t padMultiple, const std::vector<int32_t> *tokenTypes) {
  auto fail = [](const std::string &why) {
    throw std::invalid_argument("toPadded: " + why);
  };
  if (padMultiple < 1)
    fail("padMultiple " + std::to_string(padMultiple) + " must be >= 1");
  const auto &cu = packed.cu_seqlens;
  const size_t T = packed.input_ids.size();
  if (cu.empty() || cu.front() != 0 || static_cast<size_t>(cu.back()) != T)
    fail("cu_seqlens must start at 0 and end at the " + std::to_string(T) +
         " input ids");
  if (packed.position_ids.size() != T)
    fail("position_ids must have one id per input id");
  if (!packed.labels.empty() && packed.labels.size() != T)
    fail("labels must be empty or one per input id");
  if (tokenTypes && tokenTypes->size() != T)
    fail("token types must have one id per input id");
  PaddedBatch p;
  p.batchSize = static_cast<int64_t>(cu.size()) - 1;
  int64_t longest = 0;
  for (int64_t b = 0; b < p.batchSize; ++b) {
    int64_t n = cu[static_cast<size_t>(b) + 1] - cu[static_cast<size_t>(b)];
    if (n < 0)
      fail("cu_seqlens must be non-decreasing (entry " + std::to_string(b + 1) +
           ")");
    longest = std::max(longest, n);
    p.lengths.push_back(static_cast<int32_t>(n));
  }
  p.width = roundUp(longest, padMultiple);
  auto cells = static_cast<size_t>(p.batchSize * p.width);
  p.input_ids.assign(cells, padId);
  p.position_ids.assign(cells, 0);
  p.padding_mask.assign(cells, 1);
  if (!packed.labels.empty())
    p.labels.assign(cells, labelPad);
  if (tokenTypes)
    p.token_type_ids.assign(cells, 0);
  for (int64_t b = 0; b < p.batchSize; ++b) {
    auto start = static_cast<size_t>(cu[static_cast<size_t>(b)]);
    for (int64_t j = 0; j < p.lengths[static_cast<size_t>(b)]; ++j) {
      size_t from = start + static_cast<size_t>(j);
      auto to = static_cast<size_t>(b * p.width + j);
      p.input_ids[to] = packed.input_ids[from];
      p.position_ids[to] = packed.position_ids[from];
      p.padding_mask[to] = 0;
      if (!packed.labels.empty())
        p.labels[to] = packed.labels[from];
      if (tokenTypes)
        p.token_type_ids[to] = (*tokenTypes)[from];
    }
  }
  return p;
}

} // namespace ls2c
