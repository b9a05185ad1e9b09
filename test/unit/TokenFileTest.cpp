//===- TokenFileTest.cpp - the binary token file: round trips, every rule --===//
//
// Every validation rule of the reader (TokenFile.h) has a test below that
// breaks exactly that rule in an otherwise valid file (the checksum
// recomputed, unless the checksum is the rule) and checks that the error
// names the file and the rule.
//
//===----------------------------------------------------------------------===//
#include "TempDirTestUtil.h"
#include "ls2c/Data/TokenFile.h"
#include "ls2c/Support/AtomicFile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <unistd.h>

namespace {

using ls2c::DataError;
using ls2c::TokenFile;
using ls2c::TokenFileContents;

class TokenFileTest : public ls2c::testing::TempDirTest {
protected:
  TokenFileTest() : TempDirTest("token-file") {}

  static void writeBytes(const std::string &p, const std::string &bytes) {
    std::ofstream(p, std::ios::binary) << bytes;
  }
  static std::string readBytes(const std::string &p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)),
                       std::istreambuf_iterator<char>());
  }

  /// Three sequences (lengths 3, 0, 2) over a vocabulary of 1000.
  static TokenFileContents sample() {
    TokenFileContents c;
    c.vocabSize = 1000;
    c.bosId = 1;
    c.eosId = 2;
    c.unkId = 0;
    c.tokenizerFingerprint = 0x1234abcdull;
    c.tokens = {5, 999, 7, 0, 42};
    c.offsets = {0, 3, 3, 5};
    return c;
  }

  /// The error message of opening `bytes` written as `name` (with the
  /// checksum recomputed when `fixChecksum`); "" if it opened.
  std::string openError(const std::string &name, std::string bytes,
                        bool fixChecksum = true) {
    if (fixChecksum && bytes.size() >= ls2c::kTokenFileHeaderBytes) {
      uint64_t sum = ls2c::tokenFileChecksum(bytes);
      std::memcpy(&bytes[64], &sum, 8);
    }
    std::string p = path(name);
    writeBytes(p, bytes);
    try {
      TokenFile f(p);
      return "";
    } catch (const DataError &e) {
      std::string m = e.what();
      EXPECT_EQ(m.rfind(p + ": ", 0), 0u) << "the error must start with the file: " << m;
      return m;
    }
  }

  template <typename T> static void put(std::string &bytes, size_t at, T v) {
    std::memcpy(&bytes[at], &v, sizeof(T));
  }

};

TEST_F(TokenFileTest, RoundTripsUint16) {
  std::string p = path("a.tok");
  ls2c::writeTokenFile(p, sample());
  TokenFile f(p);
  EXPECT_EQ(f.vocabSize(), 1000u);
  EXPECT_EQ(f.tokenBytes(), 2u);
  EXPECT_FALSE(f.concatenated());
  EXPECT_EQ(f.numSequences(), 3u);
  EXPECT_EQ(f.numTokens(), 5u);
  EXPECT_EQ(f.bosId(), 1u);
  EXPECT_EQ(f.eosId(), 2u);
  EXPECT_EQ(f.unkId(), 0u);
  EXPECT_EQ(f.padId(), ls2c::kNoTokenId);
  EXPECT_EQ(f.tokenizerFingerprint(), 0x1234abcdull);
  EXPECT_EQ(f.sequence(0), (std::vector<uint32_t>{5, 999, 7}));
  EXPECT_TRUE(f.sequence(1).empty());
  EXPECT_EQ(f.sequence(2), (std::vector<uint32_t>{0, 42}));
  EXPECT_EQ(f.sequenceLength(0), 3u);
  EXPECT_EQ(f.allTokensInt32(), (std::vector<int32_t>{5, 999, 7, 0, 42}));
  // Exactly header + 4 offsets + 5 uint16 ids, little-endian.
  std::string bytes = readBytes(p);
  ASSERT_EQ(bytes.size(), 80u + 4 * 8 + 5 * 2);
  EXPECT_EQ(bytes.substr(0, 8), std::string("LS2CTOK\0", 8));
  EXPECT_EQ(static_cast<unsigned char>(bytes[80 + 32 + 2]), 999 & 0xff);
  EXPECT_EQ(static_cast<unsigned char>(bytes[80 + 32 + 3]), 999 >> 8);
}

TEST_F(TokenFileTest, LargeVocabulariesUseUint32AndSmallOnesUint16) {
  EXPECT_EQ(ls2c::tokenBytesForVocab(65536), 2u);
  EXPECT_EQ(ls2c::tokenBytesForVocab(65537), 4u);
  TokenFileContents c;
  c.vocabSize = 70000;
  c.flags = ls2c::kTokenFileConcatenated;
  std::mt19937 rng(1);
  for (int i = 0; i < 5000; ++i)
    c.tokens.push_back(rng() % 70000);
  for (uint64_t at = 1000; at < c.tokens.size(); at += 1000)
    c.offsets.push_back(at);
  c.offsets.push_back(c.tokens.size());
  std::string p = path("big.tok");
  ls2c::writeTokenFile(p, c);
  TokenFile f(p);
  EXPECT_EQ(f.tokenBytes(), 4u);
  EXPECT_TRUE(f.concatenated());
  ASSERT_EQ(f.numTokens(), 5000u);
  EXPECT_EQ(f.numSequences(), 5u);
  for (uint64_t i = 0; i < f.numTokens(); ++i)
    ASSERT_EQ(f.token(i), c.tokens[i]) << i;
  // A moved-from reader gives up its mapping; the new one keeps working.
  TokenFile g = std::move(f);
  EXPECT_EQ(g.token(4999), c.tokens[4999]);
}

TEST_F(TokenFileTest, EmptyCorpusIsAValidFile) {
  TokenFileContents c;
  c.vocabSize = 65;
  std::string p = path("none.tok");
  ls2c::writeTokenFile(p, c);
  TokenFile f(p);
  EXPECT_EQ(f.numSequences(), 0u);
  EXPECT_EQ(f.numTokens(), 0u);
}

TEST_F(TokenFileTest, WriterRefusesIdsBeyondTheVocabularyAndKeepsTheOldFile) {
  std::string p = path("keep.tok");
  ls2c::writeTokenFile(p, sample());
  TokenFileContents bad = sample();
  bad.tokens[3] = 1000;
  try {
    ls2c::writeTokenFile(p, bad);
    FAIL() << "an id of 1000 in a vocabulary of 1000 was written";
  } catch (const DataError &e) {
    EXPECT_STREQ(e.what(), (p + ": token 3 is id 1000, beyond the vocabulary "
                                "of 1000 ids").c_str());
  }
  TokenFile f(p); // the earlier file, untouched
  EXPECT_EQ(f.token(3), 0u);
  bad = sample();
  bad.offsets = {0, 4, 3, 5};
  EXPECT_THROW(ls2c::writeTokenFile(p, bad), DataError);
  bad = sample();
  bad.eosId = 1000;
  EXPECT_THROW(ls2c::writeTokenFile(p, bad), DataError);
  EXPECT_THROW(ls2c::writeTokenFile(path("no/such/dir.tok"), sample()),
               ls2c::FileWriteError);
}

TEST_F(TokenFileTest, RefusesMissingEmptyAndShortFiles) {
  try {
    TokenFile f(path("missing.tok"));
    FAIL();
  } catch (const DataError &e) {
    EXPECT_STREQ(e.what(), (path("missing.tok") +
                            ": cannot open: No such file or directory").c_str());
  }
  EXPECT_EQ(openError("empty.tok", "", false),
            path("empty.tok") + ": 0 bytes is shorter than the 80-byte token "
                                "file header (the file is empty)");
  EXPECT_EQ(openError("short.tok", std::string("LS2CTOK\0\1\0\0\0", 12), false),
            path("short.tok") + ": 12 bytes is shorter than the 80-byte token "
                                "file header");
  try {
    TokenFile f(dir);
    FAIL();
  } catch (const DataError &e) {
    EXPECT_STREQ(e.what(), (dir + ": is a directory").c_str());
  }
}

TEST_F(TokenFileTest, EveryHeaderRuleIsChecked) {
  const std::string good = ls2c::serializeTokenFile(sample(), "x");
  EXPECT_EQ(openError("good.tok", good), "");

  std::string b = good;
  b[3] = 'X';
  EXPECT_NE(openError("magic.tok", b).find("not a token file"), std::string::npos);

  b = good;
  put<uint32_t>(b, 8, 2);
  EXPECT_NE(openError("version.tok", b)
                .find("token file version 2 is not supported (this reader "
                      "knows version 1)"),
            std::string::npos);

  b = good;
  put<uint32_t>(b, 12, 3);
  EXPECT_NE(openError("bytes3.tok", b).find("token_bytes 3 must be 2 (uint16) or 4 (uint32)"),
            std::string::npos);

  b = good;
  put<uint32_t>(b, 12, 4);
  EXPECT_NE(openError("bytes4.tok", b)
                .find("token_bytes 4 does not match vocab_size 1000"),
            std::string::npos);

  b = good;
  put<uint32_t>(b, 16, 0);
  EXPECT_NE(openError("vocab0.tok", b).find("vocab_size 0"), std::string::npos);

  b = good;
  put<uint32_t>(b, 20, 6);
  EXPECT_NE(openError("flags.tok", b).find("flags 6 set unknown bits"),
            std::string::npos);

  b = good;
  b[75] = 1;
  EXPECT_NE(openError("reserved.tok", b).find("reserved header bytes 72..79 are not zero"),
            std::string::npos);

  b = good;
  put<uint32_t>(b, 44, 1000); // eos_id
  EXPECT_NE(openError("eos.tok", b).find("eos_id 1000 is not below vocab_size 1000"),
            std::string::npos);

  b = good;
  put<uint64_t>(b, 32, 6); // num_tokens one more than the file holds
  EXPECT_NE(openError("count.tok", b)
                .find("file is 122 bytes but num_sequences 3 and num_tokens 6 "
                      "need 124 (truncated?)"),
            std::string::npos);

  b = good;
  put<uint64_t>(b, 24, UINT64_MAX / 2); // num_sequences overflowing the size
  EXPECT_NE(openError("overflow.tok", b).find("need more than 2^64"),
            std::string::npos);

  b = good + "xy"; // trailing bytes
  EXPECT_NE(openError("trailing.tok", b).find("file is 124 bytes"), std::string::npos);

  b = good.substr(0, good.size() - 2); // truncated
  EXPECT_NE(openError("truncated.tok", b).find("(truncated?)"), std::string::npos);
}

TEST_F(TokenFileTest, ChecksumCatchesAnyFlippedByte) {
  const std::string good = ls2c::serializeTokenFile(sample(), "x");
  for (size_t at : {size_t(0) + 60, size_t(90), good.size() - 1}) {
    std::string b = good;
    b[at] ^= 0x10;
    std::string m = openError("flip.tok", b, /*fixChecksum=*/false);
    EXPECT_NE(m.find("checksum mismatch"), std::string::npos) << at << ": " << m;
  }
}

TEST_F(TokenFileTest, OffsetRulesAreChecked) {
  const std::string good = ls2c::serializeTokenFile(sample(), "x");
  std::string b = good;
  put<uint64_t>(b, 80, 1);
  EXPECT_NE(openError("first.tok", b).find("sequence offsets[0] is 1, not 0"),
            std::string::npos);
  b = good;
  put<uint64_t>(b, 80 + 16, 2); // offsets[2] = 2 < offsets[1] = 3
  EXPECT_NE(openError("order.tok", b)
                .find("sequence offsets[2] = 2 is smaller than offsets[1] = 3"),
            std::string::npos);
  b = good;
  put<uint64_t>(b, 80 + 8, 9);
  EXPECT_NE(openError("beyond.tok", b).find("sequence offsets[1] = 9 exceeds num_tokens 5"),
            std::string::npos);
  b = good;
  put<uint64_t>(b, 80 + 24, 4);
  EXPECT_NE(openError("last.tok", b)
                .find("the last sequence offset, offsets[3] = 4, is not num_tokens 5"),
            std::string::npos);
}

TEST_F(TokenFileTest, IdsBeyondTheVocabularyAreRefusedWithTheirPosition) {
  const std::string good = ls2c::serializeTokenFile(sample(), "x");
  std::string b = good;
  // Token 4 is sequence 2 (sequence 1 is empty), position 1; the tokens
  // start after 80 header bytes and 4 offsets.
  put<uint16_t>(b, 80 + 32 + 2 * 4, 1000);
  EXPECT_EQ(openError("id.tok", b),
            path("id.tok") + ": token 4 (sequence 2, position 1, byte offset "
                             "120) is id 1000, beyond the vocabulary of 1000 ids");
  b = good;
  put<uint16_t>(b, 80 + 32, 65535);
  EXPECT_EQ(openError("id0.tok", b),
            path("id0.tok") + ": token 0 (sequence 0, position 0, byte offset "
                              "112) is id 65535, beyond the vocabulary of 1000 ids");
}

TEST(TokenFileHash, Fnv1a64KnownValues) {
  // The FNV reference values (isthe.com/chongo/tech/comp/fnv).
  EXPECT_EQ(ls2c::fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(ls2c::fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(ls2c::fnv1a64("foobar"), 0x85944171f73967e8ull);
}

} // namespace
