//===- DataParallelCorpusTest.cpp - Multi30k translation batches ----------===//
//
// Reading the gzip files of Multi30k, the line-count rule of parallel text,
// and TranslationBatcher on En-De pairs: both sides bounded, fairseq's
// EOS/START conventions, each pair once per epoch.
//
//===----------------------------------------------------------------------===//
#include "SharedDataDir.h"
#include "ls2c/Data/ParallelCorpus.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
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
std::string writeTemp(const std::string &name, const std::string &bytes) {
  std::string path = "/tmp/ls2c-batching-" + std::to_string(::getpid()) + "-" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

#define REQUIRE_MULTI30K()                                                     \
  if (!exists(sharedData("multi30k/train.en.gz")))                             \
  GTEST_SKIP() << "no " << sharedData("multi30k")

// Whitespace words to ids >= 4 (0..3 are fairseq's <s> <pad> </s> <unk>).
struct WordVocab {
  std::unordered_map<std::string, int32_t> ids;
  std::vector<int32_t> encode(const std::string &line) {
    std::istringstream words(line);
    std::vector<int32_t> out;
    for (std::string w; words >> w;)
      out.push_back(ids.emplace(w, 4 + static_cast<int32_t>(ids.size())).first->second);
    return out;
  }
};

TEST(ReadTextLines, Multi30kGzipFiles) {
  REQUIRE_MULTI30K();
  std::vector<std::string> en = readTextLines(sharedData("multi30k/val.en.gz"));
  std::vector<std::string> de = readTextLines(sharedData("multi30k/val.de.gz"));
  ASSERT_EQ(en.size(), 1014u); // the README's line counts
  ASSERT_EQ(de.size(), 1014u);
  EXPECT_EQ(en[0], "A group of men are loading cotton onto a truck");
  EXPECT_EQ(de[0], "Eine Gruppe von Männern lädt Baumwolle auf einen Lastwagen");
  EXPECT_EQ(readTextLines(sharedData("multi30k/test_2016_flickr.de.gz")).size(), 1000u);
  EXPECT_EQ(readTextLines(sharedData("multi30k/train.en.gz"), 10).size(), 10u);
  // 1,801,238 decompressed bytes (README): 29,000 lines, each with its "\n".
  std::string bytes = readFileBytes(sharedData("multi30k/train.en.gz"));
  EXPECT_EQ(bytes.size(), 1801238u);
  EXPECT_EQ(std::count(bytes.begin(), bytes.end(), '\n'), 29000);
}

TEST(ReadTextLines, LineEndingsAndErrors) {
  std::string path = writeTemp("lines.txt", "a\r\nb\n\nlast");
  EXPECT_EQ(readTextLines(path), (std::vector<std::string>{"a", "b", "", "last"}));
  std::string empty = writeTemp("empty.txt", "");
  EXPECT_TRUE(readTextLines(empty).empty());
  EXPECT_THROW(readTextLines("/nonexistent/x.gz"), DataError);
  EXPECT_THROW(readTextLines("/tmp"), DataError);
  std::remove(path.c_str());
  std::remove(empty.c_str());
}

TEST(ReadTextLines, TruncatedGzipIsRefused) {
  REQUIRE_MULTI30K();
  std::ifstream in(sharedData("multi30k/val.en.gz"), std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string cut = writeTemp("cut.gz", gz.substr(0, gz.size() / 2));
  try {
    readTextLines(cut);
    FAIL() << "a gzip stream cut in half was read";
  } catch (const DataError &e) {
    EXPECT_NE(std::string(e.what()).find(cut), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("<fd:"), std::string::npos) << e.what();
  }
  std::string garbage = gz;
  for (size_t i = 100; i < 400; ++i)
    garbage[i] = static_cast<char>(garbage[i] ^ 0x5A);
  std::string bad = writeTemp("bad.gz", garbage);
  EXPECT_THROW(readTextLines(bad), DataError);
  std::remove(cut.c_str());
  std::remove(bad.c_str());
}

TEST(ParallelText, LineCountsMustAgree) {
  std::string a = writeTemp("a.en", "one\ntwo\nthree\n");
  std::string b = writeTemp("b.de", "eins\nzwei\n");
  try {
    loadParallelText(a, b);
    FAIL();
  } catch (const DataError &e) {
    std::string m = e.what();
    EXPECT_NE(m.find(a + " has 3 lines but " + b + " has 2"), std::string::npos) << m;
  }
  ParallelText t = loadParallelText(a, a);
  EXPECT_EQ(t.size(), 3);
  std::remove(a.c_str());
  std::remove(b.c_str());
}

struct Multi30kSubset {
  std::vector<std::vector<int32_t>> en, de;
};
const Multi30kSubset &multi30k() {
  static Multi30kSubset data = [] {
    Multi30kSubset d;
    ParallelText t = loadParallelText(sharedData("multi30k/train.en.gz"),
                                      sharedData("multi30k/train.de.gz"), 4000);
    WordVocab en, de;
    for (int64_t i = 0; i < t.size(); ++i) {
      d.en.push_back(en.encode(t.source[static_cast<size_t>(i)]));
      d.de.push_back(de.encode(t.target[static_cast<size_t>(i)]));
    }
    return d;
  }();
  return data;
}

TEST(TranslationBatcher, Multi30kBatchesBoundBothSidesAndShiftTheTarget) {
  REQUIRE_MULTI30K();
  const Multi30kSubset &d = multi30k();
  std::vector<TokenSpan> src = spansOf(d.en), tgt = spansOf(d.de);
  BucketingOptions o;
  o.maxBatchTokens = 600;       // source tokens per batch
  o.maxTargetBatchTokens = 500; // target tokens per batch
  o.maxSeqLen = 20;
  o.maxTargetSeqLen = 24;
  TranslationSpecials sp; // fairseq: <s>=0 <pad>=1 </s>=2, decoder starts with </s>
  TranslationBatcher batcher(src, tgt, o, sp, 17);
  const BatchPlan &p = batcher.plan();
  EXPECT_GT(p.truncated, 0) << "some Multi30k captions exceed 19 words";
  EXPECT_TRUE(p.skippedTooLong.empty());
  std::set<std::vector<int64_t>> orders;
  for (int64_t epoch = 1; epoch <= 2; ++epoch) {
    std::vector<int> seen(src.size(), 0);
    std::vector<int64_t> order;
    for (int64_t k = 0; k < batcher.numBatches(); ++k) {
      TranslationBatch b = batcher.batch(epoch, k);
      ASSERT_LE(b.sourceTokens(), 600);
      ASSERT_LE(b.targetTokens(), 500);
      ASSERT_EQ(b.src_cu_seqlens.size(), static_cast<size_t>(b.batchSize()) + 1);
      ASSERT_EQ(b.tgt_cu_seqlens.size(), static_cast<size_t>(b.batchSize()) + 1);
      ASSERT_EQ(b.src_cu_seqlens.back(), b.sourceTokens());
      ASSERT_EQ(b.tgt_cu_seqlens.back(), b.targetTokens());
      ASSERT_EQ(b.labels.size(), b.tgt_ids.size());
      order.push_back(b.indices.front());
      for (int64_t s = 0; s < b.batchSize(); ++s) {
        auto i = static_cast<size_t>(b.indices[static_cast<size_t>(s)]);
        ++seen[i];
        auto u = static_cast<size_t>(s);
        int32_t sb = b.src_cu_seqlens[u], se = b.src_cu_seqlens[u + 1];
        int32_t tb = b.tgt_cu_seqlens[u], te = b.tgt_cu_seqlens[u + 1];
        ASSERT_LE(se - sb, 20);
        ASSERT_LE(te - tb, 24);
        // Source: the sentence's first tokens, then </s>.
        ASSERT_EQ(se - sb, std::min<int32_t>(static_cast<int32_t>(d.en[i].size()) + 1, 20));
        for (int32_t j = sb; j < se - 1; ++j)
          ASSERT_EQ(b.src_ids[static_cast<size_t>(j)], d.en[i][static_cast<size_t>(j - sb)]);
        ASSERT_EQ(b.src_ids[static_cast<size_t>(se - 1)], sp.eos);
        // Target: </s> y..., labels y... </s>: tgt_ids shifted left.
        ASSERT_EQ(te - tb, std::min<int32_t>(static_cast<int32_t>(d.de[i].size()) + 1, 24));
        ASSERT_EQ(b.tgt_ids[static_cast<size_t>(tb)], sp.decoderStart);
        for (int32_t j = tb; j < te - 1; ++j) {
          ASSERT_EQ(b.labels[static_cast<size_t>(j)], b.tgt_ids[static_cast<size_t>(j) + 1]);
          ASSERT_EQ(b.labels[static_cast<size_t>(j)], d.de[i][static_cast<size_t>(j - tb)]);
        }
        ASSERT_EQ(b.labels[static_cast<size_t>(te - 1)], sp.eos);
        for (int32_t j = sb; j < se; ++j)
          ASSERT_EQ(b.src_position_ids[static_cast<size_t>(j)], j - sb);
        for (int32_t j = tb; j < te; ++j)
          ASSERT_EQ(b.tgt_position_ids[static_cast<size_t>(j)], j - tb);
      }
    }
    for (size_t i = 0; i < seen.size(); ++i)
      ASSERT_EQ(seen[i], 1) << "pair " << i << " in epoch " << epoch;
    orders.insert(order);
  }
  EXPECT_EQ(orders.size(), 2u) << "epochs 1 and 2 visit batches in different orders";

  // The same seed gives the same batches; another seed other ties and order.
  TranslationBatcher again(src, tgt, o, sp, 17), other(src, tgt, o, sp, 18);
  for (int64_t k = 0; k < batcher.numBatches(); k += 13) {
    EXPECT_EQ(batcher.batch(3, k).tgt_ids, again.batch(3, k).tgt_ids);
    EXPECT_EQ(batcher.batch(3, k).src_ids, again.batch(3, k).src_ids);
  }
  EXPECT_NE(batcher.plan().epochOrder(3), other.plan().epochOrder(3));
}

TEST(TranslationBatcher, PaddedTargetsUsePadForLabels) {
  REQUIRE_MULTI30K();
  const Multi30kSubset &d = multi30k();
  std::vector<TokenSpan> src = spansOf(d.en), tgt = spansOf(d.de);
  BucketingOptions o;
  o.maxBatchTokens = 512;
  o.maxSeqLen = 64;
  o.count = TokenCount::Padded;
  TranslationSpecials sp;
  sp.decoderStart = sp.bos; // the BOS-start variant
  TranslationBatcher batcher(src, tgt, o, sp, 1);
  for (int64_t k = 0; k < batcher.numBatches(); k += 11) {
    TranslationBatch b = batcher.batch(0, k);
    PaddedBatch s = toPadded(b.source(), sp.pad);
    PaddedBatch t = toPadded(b.target(), sp.pad, /*labelPad=*/sp.pad);
    ASSERT_LE(s.batchSize * s.width, 512);
    ASSERT_LE(t.batchSize * t.width, 512);
    EXPECT_TRUE(s.labels.empty());
    for (int64_t r = 0; r < t.batchSize; ++r) {
      ASSERT_EQ(t.input_ids[static_cast<size_t>(r * t.width)], sp.bos);
      for (int64_t j = 0; j < t.width; ++j) {
        auto cell = static_cast<size_t>(r * t.width + j);
        if (t.padding_mask[cell]) {
          ASSERT_EQ(t.labels[cell], sp.pad);
          ASSERT_EQ(t.input_ids[cell], sp.pad);
        } else {
          ASSERT_NE(t.labels[cell], sp.pad);
        }
      }
    }
  }
}

TEST(TranslationBatcher, SkipsPairsWithALongSide) {
  std::vector<std::vector<int32_t>> a{{5, 6}, {5, 6, 7, 8, 9, 10}, {5}},
      b{{7, 8, 9, 10, 11, 12, 13}, {7}, {7, 8}};
  BucketingOptions o;
  o.maxBatchTokens = 64;
  o.maxSeqLen = 6;
  o.overLength = OverLength::Skip;
  TranslationBatcher t(spansOf(a), spansOf(b), o, TranslationSpecials{}, 0);
  // Pair 0's target (7 + 1) and pair 1's source (6 + 1) are too long.
  EXPECT_EQ(t.plan().skippedTooLong, (std::vector<int64_t>{0, 1}));
  ASSERT_EQ(t.numBatches(), 1);
  TranslationBatch only = t.batch(0, 0);
  EXPECT_EQ(only.indices, (std::vector<int64_t>{2}));
  EXPECT_EQ(only.src_ids, (std::vector<int32_t>{5, 2}));
  EXPECT_EQ(only.tgt_ids, (std::vector<int32_t>{2, 7, 8}));
  EXPECT_EQ(only.labels, (std::vector<int32_t>{7, 8, 2}));
  std::vector<std::vector<int32_t>> one{std::vector<int32_t>{1}};
  EXPECT_THROW(TranslationBatcher(spansOf(a), spansOf(one), o, {}, 0),
               std::invalid_argument);
}

} // namespace
