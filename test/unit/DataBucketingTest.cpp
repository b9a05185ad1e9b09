//===- DataBucketingTest.cpp - length-bucketed batches on WikiText-2 ------===//
//
// The invariants of Bucketing.h on real text (WikiText-2's validation lines,
// split on spaces, one id per distinct word): no batch over max tokens,
// every sequence in exactly one batch, greedy (maximal) batches, epoch orders
// that are permutations, identical for one seed and different between
// epochs; packed and padded tensors consistent with each other.
//
//===----------------------------------------------------------------------===//
#include "SharedDataDir.h"
#include "ls2c/Data/Bucketing.h"
#include "ls2c/Data/ParallelCorpus.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <unordered_map>

namespace {

using namespace ls2c;

std::string sharedData(const std::string &rel) {
  return ls2c::testing::sharedDataDir() + "/" + rel;
}
bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// WikiText-2 validation lines as word ids (empty lines dropped), ids from 4
// up in order of first appearance.
const std::vector<std::vector<int32_t>> &wikiLines() {
  static std::vector<std::vector<int32_t>> lines = [] {
    std::vector<std::vector<int32_t>> out;
    std::unordered_map<std::string, int32_t> ids;
    for (const std::string &line : readTextLines(sharedData("wikitext-2/valid.txt"))) {
      std::istringstream words(line);
      std::vector<int32_t> seq;
      for (std::string w; words >> w;)
        seq.push_back(ids.emplace(w, 4 + static_cast<int32_t>(ids.size())).first->second);
      if (!seq.empty())
        out.push_back(std::move(seq));
    }
    return out;
  }();
  return lines;
}

#define REQUIRE_WIKITEXT()                                                     \
  if (!exists(sharedData("wikitext-2/valid.txt")))                             \
  GTEST_SKIP() << "no " << sharedData("wikitext-2/valid.txt")

BucketingOptions packedOptions(int64_t maxTokens, int64_t maxLen) {
  BucketingOptions o;
  o.maxBatchTokens = maxTokens;
  o.maxSeqLen = maxLen;
  return o;
}

TEST(SplitMix64, MatchesTheReferenceStream) {
  // Vigna's splitmix64.c with x = 0: the first outputs.
  SplitMix64 g(0);
  EXPECT_EQ(g.next(), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(g.next(), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(g.next(), 0x06C45D188009454Full);
}

TEST(SplitMix64, BoundedDrawsAreUniform) {
  SplitMix64 g(42);
  const int k = 7, n = 70000;
  std::vector<int> counts(k);
  for (int i = 0; i < n; ++i) {
    uint64_t v = g.below(k);
    ASSERT_LT(v, static_cast<uint64_t>(k));
    ++counts[v];
  }
  // Chi-square with 6 degrees of freedom: P(> 22.5) < 0.001.
  double chi = 0, e = static_cast<double>(n) / k;
  for (int c : counts)
    chi += (c - e) * (c - e) / e;
  EXPECT_LT(chi, 22.5);
  for (int i = 0; i < 1000; ++i) {
    double u = g.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
  EXPECT_THROW(g.below(0), std::invalid_argument);
}

TEST(SeededPermutation, IsAPermutationFixedBySeed) {
  std::vector<int64_t> a = seededPermutation(1000, 5), b = seededPermutation(1000, 5),
                       c = seededPermutation(1000, 6);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i)
    ASSERT_EQ(sorted[static_cast<size_t>(i)], i);
  EXPECT_TRUE(seededPermutation(0, 1).empty());
  EXPECT_NE(mixSeed(1, 0), mixSeed(1, 1));
  EXPECT_NE(mixSeed(1, 0), mixSeed(2, 0));
}

TEST(SequenceList, StoresSequencesBackToBack) {
  SequenceList list;
  list.add({1, 2, 3});
  list.add({});
  list.add({7});
  ASSERT_EQ(list.size(), 3);
  EXPECT_EQ(list.offsets, (std::vector<int64_t>{0, 3, 3, 4}));
  std::vector<TokenSpan> spans = list.spans();
  EXPECT_EQ(lengthsOf(spans), (std::vector<int64_t>{3, 0, 1}));
  EXPECT_EQ(spans[2][0], 7);
  EXPECT_EQ(std::vector<int32_t>(spans[0].begin(), spans[0].end()),
            (std::vector<int32_t>{1, 2, 3}));
  EXPECT_THROW(list[3], std::out_of_range);
}

// Every invariant of a plan of single sequences.
void checkPlan(const BatchPlan &p, const std::vector<int64_t> &raw) {
  const BucketingOptions &o = p.options;
  std::vector<int> seen(raw.size(), 0);
  int64_t previous = 0;
  for (int64_t b = 0; b < p.numBatches(); ++b) {
    const auto &batch = p.batches[static_cast<size_t>(b)];
    ASSERT_FALSE(batch.empty());
    int64_t sum = 0, longest = 0;
    for (int64_t i : batch) {
      ++seen[static_cast<size_t>(i)];
      int64_t n = p.lengths[static_cast<size_t>(i)];
      ASSERT_EQ(n, std::min(raw[static_cast<size_t>(i)], o.maxSeqLen));
      ASSERT_GE(n, previous) << "plan order is by ascending length";
      previous = n;
      sum += n;
      longest = std::max(longest, n);
    }
    int64_t width = (longest + o.padMultiple - 1) / o.padMultiple * o.padMultiple;
    int64_t cost = o.count == TokenCount::Packed
                       ? sum
                       : static_cast<int64_t>(batch.size()) * width;
    ASSERT_EQ(p.tokens(b), cost);
    ASSERT_LE(cost, o.maxBatchTokens) << "batch " << b;
    if (o.maxSequences > 0) {
      ASSERT_LE(static_cast<int64_t>(batch.size()), o.maxSequences);
    }
    // Greedy: the next batch's first sequence did not fit in this one.
    if (b + 1 < p.numBatches()) {
      int64_t next = p.lengths[static_cast<size_t>(p.batches[static_cast<size_t>(b) + 1][0])];
      int64_t w = (std::max(longest, next) + o.padMultiple - 1) / o.padMultiple *
                  o.padMultiple;
      int64_t grown = o.count == TokenCount::Packed
                          ? sum + next
                          : (static_cast<int64_t>(batch.size()) + 1) * w;
      bool full = grown > o.maxBatchTokens ||
                  (o.maxSequences > 0 &&
                   static_cast<int64_t>(batch.size()) == o.maxSequences);
      ASSERT_TRUE(full) << "batch " << b << " could have taken one more";
    }
  }
  std::set<int64_t> tooLong(p.skippedTooLong.begin(), p.skippedTooLong.end()),
      tooShort(p.skippedTooShort.begin(), p.skippedTooShort.end());
  int64_t truncated = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    auto idx = static_cast<int64_t>(i);
    bool shortSeq = raw[i] < o.minSeqLen;
    bool longSeq = !shortSeq && raw[i] > o.maxSeqLen;
    ASSERT_EQ(tooShort.count(idx), shortSeq ? 1u : 0u) << i;
    bool skipped = shortSeq || (longSeq && o.overLength == OverLength::Skip);
    ASSERT_EQ(tooLong.count(idx), !shortSeq && longSeq && o.overLength == OverLength::Skip ? 1u : 0u);
    ASSERT_EQ(seen[i], skipped ? 0 : 1) << "sequence " << i;
    ASSERT_EQ(p.lengths[i] < 0, skipped);
    truncated += (longSeq && o.overLength == OverLength::Truncate) ? 1 : 0;
  }
  EXPECT_EQ(p.truncated, truncated);
  EXPECT_EQ(p.numSequences() + static_cast<int64_t>(tooLong.size() + tooShort.size()),
            static_cast<int64_t>(raw.size()));
}

TEST(Bucketing, WikiTextPackedBatchesRespectMaxTokensAndCoverEverything) {
  REQUIRE_WIKITEXT();
  std::vector<TokenSpan> spans = spansOf(wikiLines());
  std::vector<int64_t> lengths = lengthsOf(spans);
  ASSERT_GT(lengths.size(), 2000u);
  BucketingOptions o = packedOptions(1024, 128);
  BatchPlan p = planBatches(lengths, o, 1);
  checkPlan(p, lengths);
  EXPECT_GT(p.truncated, 100) << "WikiText has paragraphs longer than 128 words";
  // Packing wastes nothing but the tail of each batch.
  int64_t total = 0;
  for (int64_t b = 0; b < p.numBatches(); ++b)
    total += p.tokens(b);
  EXPECT_GT(static_cast<double>(total) / (1024.0 * p.numBatches()), 0.9);
  EXPECT_NE(p.summary().find(std::to_string(p.truncated) + " truncated to 128"),
            std::string::npos)
      << p.summary();
}

TEST(Bucketing, EpochOrdersArePermutationsFixedBySeed) {
  REQUIRE_WIKITEXT();
  std::vector<int64_t> lengths = lengthsOf(spansOf(wikiLines()));
  BucketingOptions o = packedOptions(2048, 256);
  BatchPlan p = planBatches(lengths, o, 1234), q = planBatches(lengths, o, 1234),
            r = planBatches(lengths, o, 99);
  EXPECT_EQ(p.batches, q.batches) << "same seed, same batches";
  EXPECT_NE(p.batches, r.batches) << "ties are broken by the seed";
  std::set<std::vector<int64_t>> orders;
  for (int64_t epoch = 0; epoch < 5; ++epoch) {
    std::vector<int64_t> order = p.epochOrder(epoch);
    EXPECT_EQ(order, q.epochOrder(epoch));
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> all(static_cast<size_t>(p.numBatches()));
    std::iota(all.begin(), all.end(), int64_t{0});
    ASSERT_EQ(sorted, all) << "epoch " << epoch << " visits every batch once";
    orders.insert(order);
    // Every sequence exactly once per epoch, through the order.
    std::vector<int> seen(lengths.size(), 0);
    for (int64_t b : order)
      for (int64_t i : p.batches[static_cast<size_t>(b)])
        ++seen[static_cast<size_t>(i)];
    for (size_t i = 0; i < lengths.size(); ++i)
      ASSERT_EQ(seen[i], 1);
  }
  EXPECT_EQ(orders.size(), 5u) << "each epoch has its own order";
  EXPECT_NE(p.epochOrder(0), r.epochOrder(0));
}

TEST(Bucketing, SkipDropsAndCountsLongSequences) {
  REQUIRE_WIKITEXT();
  std::vector<int64_t> lengths = lengthsOf(spansOf(wikiLines()));
  BucketingOptions o = packedOptions(1000, 100);
  o.overLength = OverLength::Skip;
  o.minSeqLen = 5;
  BatchPlan p = planBatches(lengths, o, 3);
  checkPlan(p, lengths);
  EXPECT_EQ(p.truncated, 0);
  auto longer = std::count_if(lengths.begin(), lengths.end(),
                              [](int64_t n) { return n > 100; });
  auto shorter = std::count_if(lengths.begin(), lengths.end(),
                               [](int64_t n) { return n < 5; });
  EXPECT_GT(longer, 0);
  EXPECT_GT(shorter, 0) << "WikiText has heading lines of few words";
  EXPECT_EQ(static_cast<int64_t>(p.skippedTooLong.size()), longer);
  EXPECT_EQ(static_cast<int64_t>(p.skippedTooShort.size()), shorter);
  EXPECT_NE(p.summary().find(std::to_string(longer) + " skipped (longer than 100)"),
            std::string::npos)
      << p.summary();
}

TEST(Bucketing, PaddedCountingAndSentenceLimit) {
  REQUIRE_WIKITEXT();
  std::vector<int64_t> lengths = lengthsOf(spansOf(wikiLines()));
  BucketingOptions o = packedOptions(4096, 512);
  o.count = TokenCount::Padded;
  o.padMultiple = 8;
  BatchPlan p = planBatches(lengths, o, 7);
  checkPlan(p, lengths);
  o.maxSequences = 16;
  BatchPlan limited = planBatches(lengths, o, 7);
  checkPlan(limited, lengths);
  EXPECT_GT(limited.numBatches(), p.numBatches());
}

TEST(Bucketing, RefusesInconsistentOptions) {
  std::vector<int64_t> lengths{3, 4, 5};
  auto message = [&](BucketingOptions o) -> std::string {
    try {
      planBatches(lengths, o, 0);
    } catch (const std::invalid_argument &e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message(packedOptions(64, 65)).find("maxSeqLen 65"), std::string::npos);
  EXPECT_NE(message(packedOptions(0, 1)).find("maxBatchTokens 0"), std::string::npos);
  EXPECT_NE(message(packedOptions(64, 0)).find("maxSeqLen 0"), std::string::npos);
  BucketingOptions padded = packedOptions(64, 60);
  padded.count = TokenCount::Padded;
  padded.padMultiple = 16; // 60 pads to 64: fits
  EXPECT_EQ(message(padded), "");
  padded.padMultiple = 48; // 60 pads to 96: does not
  EXPECT_NE(message(padded).find("padded to a multiple of 48"), std::string::npos);
  EXPECT_THROW(planBatches({-1}, packedOptions(8, 8), 0), std::invalid_argument);
  EXPECT_THROW(planPairBatches({1, 2}, {1}, packedOptions(8, 8), 0),
               std::invalid_argument);
}

TEST(PackCausalLM, WikiTextBatchesAreConsistent) {
  REQUIRE_WIKITEXT();
  const auto &lines = wikiLines();
  std::vector<TokenSpan> spans = spansOf(lines);
  BucketingOptions o = packedOptions(1024, 128);
  BatchPlan p = planBatches(lengthsOf(spans), o, 11);
  for (int64_t k : p.epochOrder(2)) {
    const auto &indices = p.batches[static_cast<size_t>(k)];
    TokenBatch b = packCausalLM(spans, indices, o.maxSeqLen);
    ASSERT_EQ(b.cu_seqlens.size(), indices.size() + 1);
    ASSERT_EQ(b.cu_seqlens.front(), 0);
    ASSERT_EQ(b.numTokens(), p.tokens(k));
    ASSERT_LE(b.numTokens(), o.maxBatchTokens);
    ASSERT_EQ(b.position_ids.size(), b.input_ids.size());
    ASSERT_EQ(b.labels.size(), b.input_ids.size());
    for (size_t s = 0; s < indices.size(); ++s) {
      const auto &line = lines[static_cast<size_t>(indices[s])];
      int32_t begin = b.cu_seqlens[s], end = b.cu_seqlens[s + 1];
      ASSERT_EQ(end - begin, p.lengths[static_cast<size_t>(indices[s])]);
      for (int32_t t = begin; t < end; ++t) {
        size_t u = static_cast<size_t>(t);
        ASSERT_EQ(b.position_ids[u], t - begin);
        ASSERT_EQ(b.input_ids[u], line[static_cast<size_t>(t - begin)]);
        ASSERT_EQ(b.labels[u], t + 1 < end ? b.input_ids[u + 1] : -100);
      }
    }
  }
}

TEST(ToPadded, MatchesThePackedBatch) {
  REQUIRE_WIKITEXT();
  std::vector<TokenSpan> spans = spansOf(wikiLines());
  BatchPlan p = planBatches(lengthsOf(spans), packedOptions(1024, 128), 5);
  for (int64_t k = 0; k < p.numBatches(); k += 7) {
    TokenBatch b = packCausalLM(spans, p.batches[static_cast<size_t>(k)], 128);
    std::vector<int32_t> types(b.input_ids.size(), 1);
    PaddedBatch d = toPadded(b, /*padId=*/1, /*labelPad=*/-100, /*padMultiple=*/8, &types);
    ASSERT_EQ(d.batchSize, static_cast<int64_t>(b.cu_seqlens.size()) - 1);
    ASSERT_EQ(d.width % 8, 0);
    const auto cells = static_cast<size_t>(d.batchSize * d.width);
    ASSERT_EQ(d.input_ids.size(), cells);
    ASSERT_EQ(d.padding_mask.size(), cells);
    int64_t real = 0;
    for (int64_t r = 0; r < d.batchSize; ++r) {
      ASSERT_LE(d.lengths[static_cast<size_t>(r)], d.width);
      for (int64_t j = 0; j < d.width; ++j) {
        auto cell = static_cast<size_t>(r * d.width + j);
        bool pad = j >= d.lengths[static_cast<size_t>(r)];
        ASSERT_EQ(d.padding_mask[cell], pad ? 1 : 0);
        if (pad) {
          ASSERT_EQ(d.input_ids[cell], 1);
          ASSERT_EQ(d.labels[cell], -100);
          ASSERT_EQ(d.token_type_ids[cell], 0);
          continue;
        }
        ++real;
        auto from = static_cast<size_t>(b.cu_seqlens[static_cast<size_t>(r)] + j);
        ASSERT_EQ(d.input_ids[cell], b.input_ids[from]);
        ASSERT_EQ(d.labels[cell], b.labels[from]);
        ASSERT_EQ(d.position_ids[cell], j);
        ASSERT_EQ(d.token_type_ids[cell], 1);
      }
    }
    ASSERT_EQ(real, b.numTokens());
  }
  TokenBatch broken;
  broken.input_ids = {1, 2};
  broken.position_ids = {0, 1};
  broken.cu_seqlens = {0, 3};
  EXPECT_THROW(toPadded(broken, 0), std::invalid_argument);
  broken.cu_seqlens = {0, 2};
  EXPECT_NO_THROW(toPadded(broken, 0));
  EXPECT_THROW(toPadded(broken, 0, -100, 0), std::invalid_argument);
}

} // namespace
