//===- DataMaskedLMTest.cpp - BERT masking on WikiText-2 ------------------===//
//
// MaskedLMBatcher on WikiText-2's validation lines (word ids): 15% of the
// non-special tokens selected, 80/10/10 within statistical bounds over
// ~200k tokens, checked against the unmasked text independently of the
// batcher's own counts; determinism from the seed; sentence pairs with token
// types and BERT's longest-first truncation.
//
//===----------------------------------------------------------------------===//
#include "SharedDataDir.h"
#include "ls2c/Data/MaskedLM.h"
#include "ls2c/Data/ParallelCorpus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>
#include <sys/stat.h>
#include <unordered_map>

namespace {

using namespace ls2c;

constexpr int32_t kPad = 0, kCls = 1, kSep = 2, kMask = 3, kFirstWord = 5;

std::string sharedData(const std::string &rel) {
  return ls2c::testing::sharedDataDir() + "/" + rel;
}
bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

struct WikiWords {
  std::vector<std::vector<int32_t>> lines;
  int32_t vocabSize = kFirstWord;
};
const WikiWords &wiki() {
  static WikiWords w = [] {
    WikiWords out;
    std::unordered_map<std::string, int32_t> ids;
    for (const std::string &line : readTextLines(sharedData("wikitext-2/valid.txt"))) {
      std::istringstream words(line);
      std::vector<int32_t> seq;
      for (std::string s; words >> s;)
        seq.push_back(ids.emplace(s, kFirstWord + static_cast<int32_t>(ids.size())).first->second);
      if (!seq.empty())
        out.lines.push_back(std::move(seq));
    }
    out.vocabSize = kFirstWord + static_cast<int32_t>(ids.size());
    return out;
  }();
  return w;
}

#define REQUIRE_WIKITEXT()                                                     \
  if (!exists(sharedData("wikitext-2/valid.txt")))                             \
  GTEST_SKIP() << "no " << sharedData("wikitext-2/valid.txt")

MaskedLMOptions bertOptions(int32_t vocabSize) {
  MaskedLMOptions o;
  o.masking.vocabSize = vocabSize;
  o.masking.maskId = kMask;
  o.masking.randomLow = kFirstWord;
  o.masking.specialIds = {kPad, 4};
  o.clsId = kCls;
  o.sepId = kSep;
  return o;
}

BucketingOptions bucketing(int64_t maxTokens, int64_t maxLen) {
  BucketingOptions b;
  b.maxBatchTokens = maxTokens;
  b.maxSeqLen = maxLen;
  return b;
}

// |observed - p| within `sigmas` binomial standard deviations over n draws.
void expectFraction(int64_t hits, int64_t n, double p, const char *what,
                    double sigmas = 5.0) {
  ASSERT_GT(n, 0);
  double f = static_cast<double>(hits) / static_cast<double>(n);
  double sd = std::sqrt(p * (1 - p) / static_cast<double>(n));
  EXPECT_LE(std::abs(f - p), sigmas * sd)
      << what << ": " << hits << " / " << n << " = " << f << ", expected " << p
      << " +- " << sigmas * sd;
}

TEST(MaskedLM, WikiTextMaskingFractionsAndLabels) {
  REQUIRE_WIKITEXT();
  const WikiWords &w = wiki();
  std::vector<TokenSpan> spans = spansOf(w.lines);
  MaskedLMOptions o = bertOptions(w.vocabSize);
  BucketingOptions b = bucketing(2048, 128);
  MaskedLMBatcher batcher(spans, b, o, 2024);
  int64_t eligible = 0, selected = 0, masked = 0, kept = 0, random = 0;
  MaskingCounts reported;
  std::vector<int> seen(spans.size(), 0);
  for (int64_t k = 0; k < batcher.numBatches(); ++k) {
    MaskedLMBatch batch = batcher.batch(1, k);
    reported += batch.counts;
    ASSERT_LE(batch.numTokens(), 2048);
    ASSERT_EQ(batch.labels.size(), batch.input_ids.size());
    ASSERT_EQ(batch.token_type_ids.size(), batch.input_ids.size());
    ASSERT_EQ(batch.cu_seqlens.back(), batch.numTokens());
    for (size_t s = 0; s < batch.indices.size(); ++s) {
      const auto &line = w.lines[static_cast<size_t>(batch.indices[s])];
      ++seen[static_cast<size_t>(batch.indices[s])];
      int32_t begin = batch.cu_seqlens[s], end = batch.cu_seqlens[s + 1];
      int32_t n = end - begin;
      ASSERT_EQ(n, std::min<int32_t>(static_cast<int32_t>(line.size()) + 2, 128));
      // The unmasked sequence: [CLS] line[0 .. n-2) [SEP].
      for (int32_t j = 0; j < n; ++j) {
        auto t = static_cast<size_t>(begin + j);
        int32_t original = j == 0 ? kCls
                           : j == n - 1 ? kSep
                                        : line[static_cast<size_t>(j - 1)];
        ASSERT_EQ(batch.position_ids[t], j);
        ASSERT_EQ(batch.token_type_ids[t], 0);
        int32_t in = batch.input_ids[t], label = batch.labels[t];
        ASSERT_GE(in, 0);
        ASSERT_LT(in, w.vocabSize);
        if (original == kCls || original == kSep) {
          ASSERT_EQ(label, -100) << "specials are never selected";
          ASSERT_EQ(in, original);
          continue;
        }
        ++eligible;
        if (label == -100) {
          ASSERT_EQ(in, original) << "unselected tokens are unchanged";
          continue;
        }
        ASSERT_EQ(label, original) << "a selected token's label is its id";
        ++selected;
        if (in == kMask)
          ++masked;
        else if (in == original)
          ++kept;
        else {
          ASSERT_GE(in, kFirstWord) << "random ids come from [randomLow, V)";
          ++random;
        }
      }
    }
  }
  for (size_t i = 0; i < seen.size(); ++i)
    ASSERT_EQ(seen[i], 1) << "sequence " << i;
  ASSERT_GT(eligible, 150000);
  expectFraction(selected, eligible, 0.15, "selected");
  expectFraction(masked, selected, 0.8, "[MASK] among selected");
  // A random id equals the original with probability 1 / (V - 5).
  double same = 1.0 / (w.vocabSize - kFirstWord);
  expectFraction(kept, selected, 0.1 + 0.1 * same, "unchanged among selected");
  expectFraction(random, selected, 0.1 * (1 - same), "random among selected");
  // The batcher's own counts agree with what the tensors show.
  EXPECT_EQ(reported.eligible, eligible);
  EXPECT_EQ(reported.selected, selected);
  EXPECT_EQ(reported.masked, masked);
  EXPECT_EQ(reported.random + reported.unchanged, kept + random);
  EXPECT_EQ(reported.tokens, eligible + 2 * static_cast<int64_t>(spans.size()));
}

TEST(MaskedLM, MasksAreDeterministicFromTheSeed) {
  REQUIRE_WIKITEXT();
  const WikiWords &w = wiki();
  std::vector<TokenSpan> spans = spansOf(w.lines);
  MaskedLMOptions o = bertOptions(w.vocabSize);
  BucketingOptions b = bucketing(1024, 64);
  MaskedLMBatcher one(spans, b, o, 5), again(spans, b, o, 5), other(spans, b, o, 6);
  for (int64_t k = 0; k < one.numBatches(); k += 17) {
    MaskedLMBatch x = one.batch(0, k), y = again.batch(0, k);
    EXPECT_EQ(x.input_ids, y.input_ids);
    EXPECT_EQ(x.labels, y.labels);
    EXPECT_EQ(x.indices, y.indices);
  }
  // The same plan batch in two epochs: dynamic masking draws new masks.
  MaskedLMBatch e0 = one.planBatch(0, 3), e1 = one.planBatch(1, 3);
  EXPECT_EQ(e0.indices, e1.indices);
  EXPECT_NE(e0.labels, e1.labels);
  EXPECT_NE(one.plan().epochOrder(0), one.plan().epochOrder(1));
  EXPECT_NE(one.planBatch(0, 3).labels, other.planBatch(0, 3).labels);
  // Static masking: one mask per sequence for the whole run.
  o.dynamicMasking = false;
  MaskedLMBatcher fixed(spans, b, o, 5);
  EXPECT_EQ(fixed.planBatch(0, 3).labels, fixed.planBatch(7, 3).labels);
  EXPECT_EQ(fixed.planBatch(0, 3).input_ids, fixed.planBatch(7, 3).input_ids);
}

TEST(MaskedLM, SentencePairsHaveTokenTypesAndLongestFirstTruncation) {
  REQUIRE_WIKITEXT();
  const WikiWords &w = wiki();
  std::vector<TokenSpan> a, bs;
  for (size_t i = 0; i + 1 < w.lines.size() && a.size() < 1500; i += 2) {
    a.push_back({w.lines[i].data(), static_cast<int64_t>(w.lines[i].size())});
    bs.push_back({w.lines[i + 1].data(), static_cast<int64_t>(w.lines[i + 1].size())});
  }
  MaskedLMOptions o = bertOptions(w.vocabSize);
  o.masking.maskProb = 0.0; // check the layout unmasked
  MaskedLMBatcher batcher(a, bs, bucketing(1024, 64), o, 9);
  int64_t truncated = 0;
  for (int64_t k = 0; k < batcher.numBatches(); ++k) {
    MaskedLMBatch batch = batcher.batch(0, k);
    ASSERT_LE(batch.numTokens(), 1024);
    for (size_t s = 0; s < batch.indices.size(); ++s) {
      auto i = static_cast<size_t>(batch.indices[s]);
      int64_t na0 = a[i].size, nb0 = bs[i].size;
      int32_t begin = batch.cu_seqlens[s], end = batch.cu_seqlens[s + 1];
      ASSERT_EQ(end - begin, std::min<int64_t>(na0 + nb0 + 3, 64));
      auto at = [&](int64_t j) { return batch.input_ids[static_cast<size_t>(begin + j)]; };
      auto type = [&](int64_t j) { return batch.token_type_ids[static_cast<size_t>(begin + j)]; };
      ASSERT_EQ(at(0), kCls);
      ASSERT_EQ(at(end - begin - 1), kSep);
      // Find the middle [SEP]: na tokens of a, then nb of b.
      int64_t na = 0;
      while (at(1 + na) != kSep)
        ++na;
      int64_t nb = end - begin - 3 - na;
      ASSERT_LE(na, na0);
      ASSERT_LE(nb, nb0);
      for (int64_t j = 0; j < na; ++j)
        ASSERT_EQ(at(1 + j), a[i][j]);
      for (int64_t j = 0; j < nb; ++j)
        ASSERT_EQ(at(2 + na + j), bs[i][j]);
      for (int64_t j = 0; j < end - begin; ++j)
        ASSERT_EQ(type(j), j <= na + 1 ? 0 : 1) << "position " << j;
      // truncate_seq_pair cut the longer side: a cut side ends no shorter
      // than the other (b, cut on ties, at most one shorter).
      if (na < na0) {
        ASSERT_GE(na, nb);
      }
      if (nb < nb0) {
        ASSERT_GE(nb, na - 1);
      }
      truncated += (na < na0 || nb < nb0) ? 1 : 0;
      for (int64_t j = 0; j < end - begin; ++j)
        ASSERT_EQ(batch.labels[static_cast<size_t>(begin + j)], -100);
    }
  }
  EXPECT_EQ(truncated, batcher.plan().truncated);
  EXPECT_GT(truncated, 0);
}

TEST(MaskedLM, RefusesIdsOutsideTheVocabularyAndBadOptions) {
  std::vector<std::vector<int32_t>> seqs{{5, 6, 7}, {5, 99, 6}};
  MaskedLMOptions o = bertOptions(50);
  try {
    MaskedLMBatcher(spansOf(seqs), bucketing(64, 16), o, 0);
    FAIL();
  } catch (const DataError &e) {
    EXPECT_NE(std::string(e.what()).find("sequence 1, token 1: id 99 is outside "
                                         "the vocabulary [0, 50)"),
              std::string::npos)
        << e.what();
  }
  seqs[1][1] = 8;
  EXPECT_NO_THROW(MaskedLMBatcher(spansOf(seqs), bucketing(64, 16), o, 0));
  auto refused = [&](MaskedLMOptions bad) {
    EXPECT_THROW(MaskedLMBatcher(spansOf(seqs), bucketing(64, 16), bad, 0),
                 std::invalid_argument);
  };
  MaskedLMOptions bad = o;
  bad.masking.maskProb = 1.5;
  refused(bad);
  bad = o;
  bad.masking.replaceWithMask = 0.95; // + 0.1 random > 1
  refused(bad);
  bad = o;
  bad.masking.randomLow = 50;
  refused(bad);
  bad = o;
  bad.masking.maskId = -1;
  refused(bad);
  bad = o;
  bad.sepId = 77;
  refused(bad);
  EXPECT_THROW(MaskedLMBatcher(spansOf(seqs), bucketing(64, 1), o, 0),
               std::invalid_argument);
}

TEST(MaskTokens, EveryTokenSelectedOrNoneAtTheExtremes) {
  std::vector<int32_t> ids(1000), labels(1000);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = 10 + static_cast<int32_t>(i % 20);
  MaskingOptions o;
  o.vocabSize = 40;
  o.maskId = 3;
  o.randomLow = 10;
  o.maskProb = 1.0;
  o.replaceWithMask = 1.0;
  o.replaceWithRandom = 0.0;
  std::vector<int32_t> all = ids;
  MaskingCounts c = maskTokens(all.data(), labels.data(), 1000, o, 1);
  EXPECT_EQ(c.selected, 1000);
  EXPECT_EQ(c.masked, 1000);
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(all[i], 3);
    EXPECT_EQ(labels[i], ids[i]);
  }
  o.maskProb = 0.0;
  std::vector<int32_t> none = ids;
  c = maskTokens(none.data(), labels.data(), 1000, o, 1);
  EXPECT_EQ(c.selected, 0);
  EXPECT_EQ(none, ids);
  for (int32_t l : labels)
    EXPECT_EQ(l, -100);
}

// maxPredictions (the model's max_predictions) bounds a batch's labels: the
// first that many selected tokens in batch order keep theirs, every later
// one is given back (its input restored, its label -100) and counted.
TEST(MaskedLM, MaxPredictionsKeepsTheFirstLabelsOfABatch) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> word(kFirstWord, 59);
  std::vector<std::vector<int32_t>> seqs(40);
  for (size_t i = 0; i < seqs.size(); ++i)
    seqs[i].resize(3 + i % 13);
  for (auto &s : seqs)
    for (int32_t &t : s)
      t = word(rng);
  MaskedLMOptions o = bertOptions(60);
  o.masking.maskProb = 0.5; // many labels: most batches go past the bound
  std::vector<TokenSpan> spans = spansOf(seqs);
  MaskedLMBatcher unbounded(spans, bucketing(64, 16), o, 5);
  o.maxPredictions = 9;
  MaskedLMBatcher bounded(spans, bucketing(64, 16), o, 5);
  ASSERT_EQ(bounded.numBatches(), unbounded.numBatches());
  int64_t dropped = 0;
  for (int64_t epoch : {0, 3})
    for (int64_t k = 0; k < bounded.numBatches(); ++k) {
      MaskedLMBatch got = bounded.batch(epoch, k), all = unbounded.batch(epoch, k);
      ASSERT_EQ(got.input_ids.size(), all.input_ids.size());
      int64_t seen = 0, kept = 0;
      for (size_t j = 0; j < all.labels.size(); ++j) {
        if (all.labels[j] == -100) {
          EXPECT_EQ(got.labels[j], -100);
          EXPECT_EQ(got.input_ids[j], all.input_ids[j]);
          continue;
        }
        if (++seen <= 9) {
          ++kept;
          EXPECT_EQ(got.labels[j], all.labels[j]);
          EXPECT_EQ(got.input_ids[j], all.input_ids[j]);
        } else { // given back: the original token, no label
          EXPECT_EQ(got.labels[j], -100);
          EXPECT_EQ(got.input_ids[j], all.labels[j]);
        }
      }
      EXPECT_EQ(got.counts.dropped, seen - kept);
      EXPECT_EQ(got.counts.selected, all.counts.selected);
      EXPECT_EQ(all.counts.dropped, 0);
      dropped += got.counts.dropped;
      // Deterministic: the same batch again.
      EXPECT_EQ(bounded.batch(epoch, k).labels, got.labels);
    }
  EXPECT_GT(dropped, 0);
  o.maxPredictions = -1;
  EXPECT_THROW(MaskedLMBatcher(spans, bucketing(64, 16), o, 5), std::invalid_argument);
}

} // namespace
