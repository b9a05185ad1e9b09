//===- DataTest.cpp - character corpora and LM batches --------------------===//
#include "ls2c/Data/CharCorpus.h"
#include "ls2c/Data/LMBatcher.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <unistd.h>

namespace {

std::string writeTemp(const std::string &name, const std::string &text) {
  std::string path = "/tmp/ls2c-data-" + std::to_string(::getpid()) + "-" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(CharCorpus, TinyShakespeareHas65SymbolsAndRoundTrips) {
  ls2c::CharCorpus c = ls2c::loadCharCorpus(
      LS2C_SOURCE_DIR "/examples/data/tinyshakespeare/input.txt", 0.9, 33);
  EXPECT_EQ(c.vocabSize(), 65);
  EXPECT_EQ(c.train.size() + c.valid.size(), 1115394u);
  EXPECT_EQ(c.train.size(), 1003854u); // floor(0.9 * 1115394)
  EXPECT_EQ(c.decode({c.train.begin(), c.train.begin() + 14}), "First Citizen:");
  for (size_t i = 1; i < c.symbols.size(); ++i)
    EXPECT_LT(c.symbols[i - 1], c.symbols[i]);
}

TEST(CharCorpus, RandomTextMapsEachByteToItsRank) {
  // Random well-formed UTF-8: ASCII and characters of 2, 3 and 4 bytes, so
  // ids cover high bytes too.
  const std::vector<std::string> pieces = {"\xc3\xa9", "\xc3\x9f", "\xe2\x82\xac",
                                           "\xe4\xb8\xad", "\xf0\x9f\x98\x80", "\n"};
  std::mt19937 rng(7);
  std::string text;
  for (int i = 0; i < 5000; ++i) {
    unsigned r = rng() % 128;
    if (r < 95)
      text.push_back(static_cast<char>(32 + r));
    else
      text += pieces[r % pieces.size()];
  }
  std::string path = writeTemp("random.txt", text);
  ls2c::CharCorpus c = ls2c::loadCharCorpus(path, 0.5, 10);
  std::set<unsigned char> distinct(text.begin(), text.end());
  EXPECT_EQ(c.vocabSize(), static_cast<int64_t>(distinct.size()));
  std::vector<int32_t> all = c.train;
  all.insert(all.end(), c.valid.begin(), c.valid.end());
  EXPECT_EQ(c.decode(all), text);
  std::remove(path.c_str());
}

TEST(CharCorpus, RejectsInvalidUtf8NamingLineAndColumn) {
  std::string path = writeTemp("bad.txt", std::string("ok\nab\xc3(", 6));
  try {
    ls2c::loadCharCorpus(path, 0.5, 1);
    FAIL();
  } catch (const ls2c::DataError &e) {
    EXPECT_NE(std::string(e.what()).find("bad.txt:2:3: invalid UTF-8 (byte 0xc3)"),
              std::string::npos)
        << e.what();
  }
  std::remove(path.c_str());
}

TEST(CharCorpus, ReadsGzipByItsMagicWhateverItsName) {
  // As `ls2c tokenize` does: gzip bytes under a name without .gz are
  // decompressed, not refused as invalid UTF-8.
  std::string text = "First Citizen:\nBefore we proceed any further, hear me speak.\n";
  std::string plain = writeTemp("plain.txt", text);
  std::string packed = plain + ".data";
  ASSERT_EQ(std::system(("gzip -c < '" + plain + "' > '" + packed + "'").c_str()), 0);
  ls2c::CharCorpus a = ls2c::loadCharCorpus(plain, 0.5, 4);
  ls2c::CharCorpus b = ls2c::loadCharCorpus(packed, 0.5, 4);
  EXPECT_EQ(a.symbols, b.symbols);
  EXPECT_EQ(a.train, b.train);
  EXPECT_EQ(a.valid, b.valid);
  std::remove(plain.c_str());
  std::remove(packed.c_str());
}

TEST(CharCorpus, RejectsUnusableInput) {
  std::string empty = writeTemp("empty.txt", "");
  EXPECT_THROW(ls2c::loadCharCorpus(empty, 0.9, 2), ls2c::DataError);
  std::string tiny = writeTemp("tiny.txt", "abcdefghij");
  try {
    ls2c::loadCharCorpus(tiny, 0.9, 5);
    FAIL();
  } catch (const ls2c::DataError &e) {
    EXPECT_NE(std::string(e.what()).find("each part needs at least 5"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ls2c::loadCharCorpus(tiny, 1.0, 1), ls2c::DataError);
  EXPECT_THROW(ls2c::loadCharCorpus("/nonexistent/x.txt", 0.9, 1),
               ls2c::DataError);
  EXPECT_THROW(ls2c::loadCharCorpus("/tmp", 0.9, 1), ls2c::DataError);
  std::remove(empty.c_str());
  std::remove(tiny.c_str());
}

TEST(LMBatcher, WindowsArePackedNextTokenPairs) {
  std::vector<int32_t> tokens(1000);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<int32_t>(i); // the label of id t is t + 1
  ls2c::LMBatcher batcher(tokens, 32, 8, 1234);
  for (int step = 0; step < 20; ++step) {
    ls2c::TokenBatch b = batcher.next();
    ASSERT_EQ(b.numTokens(), 8 * 32);
    ASSERT_EQ(b.cu_seqlens.size(), 9u);
    for (int s = 0; s <= 8; ++s)
      EXPECT_EQ(b.cu_seqlens[s], 32 * s);
    for (int64_t i = 0; i < b.numTokens(); ++i) {
      EXPECT_EQ(b.labels[i], b.input_ids[i] + 1);
      EXPECT_EQ(b.position_ids[i], i % 32);
      if (i % 32) {
        EXPECT_EQ(b.input_ids[i], b.input_ids[i - 1] + 1);
      }
      EXPECT_LT(b.labels[i], 1000);
    }
  }
}

TEST(LMBatcher, SameSeedSameBatchesAndSkipResumes) {
  std::vector<int32_t> tokens(5000);
  std::mt19937 rng(3);
  for (int32_t &t : tokens)
    t = static_cast<int32_t>(rng() % 65);
  ls2c::LMBatcher a(tokens, 16, 4, 99), b(tokens, 16, 4, 99), c(tokens, 16, 4, 100);
  ls2c::TokenBatch a0 = a.next();
  EXPECT_EQ(a0.input_ids, b.next().input_ids);
  EXPECT_NE(a0.input_ids, c.next().input_ids);
  ls2c::LMBatcher resumed(tokens, 16, 4, 99);
  resumed.skip(5);
  for (int i = 0; i < 4; ++i)
    a.next();
  EXPECT_EQ(a.next().input_ids, resumed.next().input_ids);
}

TEST(LMBatcher, SequentialBatchesCoverEveryWindowOnce) {
  std::vector<int32_t> tokens(101);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<int32_t>(i);
  ls2c::TokenBatch b;
  std::vector<int32_t> seen;
  int64_t k = 0;
  while (ls2c::LMBatcher::sequentialBatch(tokens, 10, 3, k++, b))
    seen.insert(seen.end(), b.input_ids.begin(), b.input_ids.end());
  ASSERT_EQ(seen.size(), 100u); // 10 windows of 10
  for (size_t i = 0; i < seen.size(); ++i)
    EXPECT_EQ(seen[i], static_cast<int32_t>(i));
  EXPECT_EQ(k, 5); // 3 + 3 + 3 + 1 windows, then false
}

TEST(LMBatcher, RejectsStreamsShorterThanAWindow) {
  std::vector<int32_t> tokens(10);
  EXPECT_THROW(ls2c::LMBatcher(tokens, 10, 1, 0), std::invalid_argument);
  EXPECT_THROW(ls2c::LMBatcher(tokens, 0, 1, 0), std::invalid_argument);
  EXPECT_NO_THROW(ls2c::LMBatcher(tokens, 9, 1, 0));
}

} // namespace
