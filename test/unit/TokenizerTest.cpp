//===- TokenizerTest.cpp - ls2c tokenize's library on real corpora --------===//
//
// Real data: tinyshakespeare (bundled in examples/data) for characters, and
// WikiText-2 from the shared/ folder beside the checkout (shared/data/README.md;
// tests that need it skip, naming the path, where it is missing) for
// sentencepiece BPE and unigram models trained on a few hundred lines with
// small vocabularies (so each training takes about a second), and the
// bad-data rules of `ls2c tokenize`: empty files, lines longer than
// max_seq_len, invalid UTF-8, tokens beyond the vocabulary.
//
//===----------------------------------------------------------------------===//
#include "SharedDataDir.h"
#include "TempDirTestUtil.h"
#include "ls2c/Data/CharCorpus.h"
#include "ls2c/Data/TokenFile.h"
#include "ls2c/Data/TokenFileBuilder.h"
#include "ls2c/Data/Tokenizer.h"
#include "ls2c/Data/TokenizerCorpus.h"
#include "ls2c/Support/Utf8.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using namespace ls2c;

const std::string kData = ls2c::testing::sharedDataDir();
const std::string kShakespeare = LS2C_EXAMPLES_DIR "/data/tinyshakespeare/input.txt";
const std::string kWikiValid = kData + "/wikitext-2/valid.txt";
const std::string kWikiTest = kData + "/wikitext-2/test.txt";
const std::string kWikiTrainGz = kData + "/wikitext-2/train.txt.gz";

bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}
#define REQUIRE_WIKITEXT()                                                     \
  if (!exists(kWikiValid) || !exists(kWikiTest) || !exists(kWikiTrainGz))      \
  GTEST_SKIP() << "needs WikiText-2 from the shared data folder, "             \
               << kData << "/wikitext-2 (README.md says where it comes from)"

std::string readBytes(const std::string &p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

/// What nmt_nfkc does to ASCII text: runs of spaces become one, leading and
/// trailing ones go (NFKC leaves ASCII alone).
std::string foldAsciiWhitespace(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == ' ' || c == '\t') {
      if (!out.empty() && out.back() != ' ')
        out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  if (!out.empty() && out.back() == ' ')
    out.pop_back();
  return out;
}

bool isAscii(const std::string &s) {
  for (unsigned char c : s)
    if (c >= 0x80)
      return false;
  return true;
}

/// Checks `back` = decode(encode(line)) of an nmt_nfkc model against the
/// normalized line: ASCII lines exactly (NFKC keeps ASCII; whitespace is
/// folded); other lines must be a fixed point (normalizing twice changes
/// nothing), and NFKC changes few of them (Python's unicodedata counts 3 of
/// WikiText-2's 462 non-ASCII test lines and 34 of 428 validation lines, e.g.
/// U+2033 DOUBLE PRIME to two U+2032), so at most 10% may differ from the
/// folded line. (test/tools/ls2c-tokenize.test checks every line exactly
/// against Python's NFKC.)
struct NormalizedText {
  size_t nonAscii = 0, changed = 0;
  void check(const Tokenizer &tok, const std::string &line, const std::string &back) {
    std::string fold = foldAsciiWhitespace(line);
    if (isAscii(line)) {
      EXPECT_EQ(back, fold);
      return;
    }
    ++nonAscii;
    std::vector<uint32_t> ids;
    tok.encode(back, ids);
    EXPECT_EQ(tok.decode(ids.data(), ids.size()), back);
    changed += back != fold;
  }
  void expectFewChanged() const { EXPECT_LE(changed * 10, nonAscii) << changed; }
};

std::vector<std::string> firstLines(const std::string &path, size_t n) {
  return readCorpusLines({path}, InvalidUtf8Policy::Refuse, n);
}

class Tokenize : public ls2c::testing::TempDirTest {
protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(exists(kShakespeare)) << "the bundled corpus is missing: " << kShakespeare;
  }
  Tokenize() : TempDirTest("tokenize") {}
  std::string write(const std::string &name, const std::string &bytes) {
    std::string p = path(name);
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  /// The DataError message of `f`, or "" if it did not throw one.
  template <typename F> static std::string errorOf(F f) {
    try {
      f();
    } catch (const DataError &e) {
      return e.what();
    }
    return "";
  }

  /// A BPE model of 1000 ids trained on WikiText-2's first 1500 validation
  /// lines (shared by the tests: training is the slow part).
  static const Tokenizer &wikiBpe() {
    static std::unique_ptr<Tokenizer> tok = [] {
      SentencePieceOptions o;
      o.modelType = "bpe";
      o.vocabSize = 1000;
      return trainSentencePiece(firstLines(kWikiValid, 1500), o, kWikiValid);
    }();
    return *tok;
  }

};

// --- characters --------------------------------------------------------------

TEST_F(Tokenize, CharactersOfTinyShakespeareAreCharCorpusIds) {
  bool newline = false;
  std::vector<std::string> lines =
      readCorpusLines({kShakespeare}, InvalidUtf8Policy::Refuse, 0, &newline);
  EXPECT_EQ(lines.size(), 40000u);
  EXPECT_TRUE(newline);
  std::unique_ptr<Tokenizer> tok = trainCharTokenizer(lines, newline);
  EXPECT_EQ(tok->type(), "char");
  EXPECT_EQ(tok->vocabSize(), 65u);

  TokenizeOptions o;
  o.concatenate = true;
  TokenizeReport r;
  TokenFileContents c = tokenizeCorpus({kShakespeare}, *tok, o, r);
  EXPECT_EQ(r.lines, 40000u);
  EXPECT_EQ(c.numSequences(), 1u);
  EXPECT_EQ(c.flags, kTokenFileConcatenated);
  // The stream is the file, byte for byte, in the ids `ls2c train` uses.
  CharCorpus corpus = loadCharCorpus(kShakespeare, 0.9, 1);
  std::vector<int32_t> expected = corpus.train;
  expected.insert(expected.end(), corpus.valid.begin(), corpus.valid.end());
  ASSERT_EQ(c.tokens.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    ASSERT_EQ(c.tokens[i], static_cast<uint32_t>(expected[i])) << i;
  EXPECT_EQ(tok->decodeLines(c.tokens.data(), c.tokens.size()),
            readBytes(kShakespeare));

  // Through a token file and back, memory-mapped.
  writeTokenFile(path("s.tok"), c);
  TokenFile f(path("s.tok"));
  EXPECT_EQ(f.vocabSize(), 65u);
  EXPECT_EQ(f.tokenBytes(), 2u);
  EXPECT_EQ(f.tokenizerFingerprint(), tok->fingerprint());
  EXPECT_EQ(f.allTokensInt32(), expected);
  // Cut into sequences of 256: all full but the last.
  o.maxSeqLen = 256;
  c = tokenizeCorpus({kShakespeare}, *tok, o, r);
  ASSERT_EQ(c.numSequences(), (1115394u + 255) / 256);
  for (uint64_t s = 0; s + 1 < c.numSequences(); ++s)
    ASSERT_EQ(c.offsets[s + 1] - c.offsets[s], 256u);
  EXPECT_EQ(c.offsets.back() - c.offsets[c.numSequences() - 1], 1115394u % 256);
}

TEST_F(Tokenize, CharacterLinesAreSequencesAndEmptyLinesAreCounted) {
  std::unique_ptr<Tokenizer> tok =
      trainCharTokenizer(firstLines(kShakespeare, 0), true);
  TokenizeOptions o;
  TokenizeReport r;
  TokenFileContents c = tokenizeCorpus({kShakespeare}, *tok, o, r);
  EXPECT_EQ(r.lines, 40000u);
  EXPECT_EQ(r.emptyLines, 7223u); // grep -c '^$'
  EXPECT_EQ(c.numSequences(), 40000u - 7223u);
  EXPECT_EQ(c.tokens.size(), 1115394u - 40000u - 0u); // every byte but '\n'
  std::vector<std::string> lines = firstLines(kShakespeare, 0);
  uint64_t s = 0;
  for (const std::string &line : lines) {
    if (line.empty())
      continue;
    ASSERT_EQ(tok->decode(c.tokens.data() + c.offsets[s],
                          c.offsets[s + 1] - c.offsets[s]),
              line);
    ++s;
  }
  o.keepEmptyLines = true;
  c = tokenizeCorpus({kShakespeare}, *tok, o, r);
  EXPECT_EQ(c.numSequences(), 40000u);
  EXPECT_EQ(c.offsets[2], c.offsets[3]); // line 3 is blank
}

TEST_F(Tokenize, CharacterVocabularyFilesRoundTripAndAreValidated) {
  std::unique_ptr<Tokenizer> tok = trainCharTokenizer({"ba", "c\x7f"}, true);
  EXPECT_EQ(tok->modelBytes(), "ls2c-char-vocabulary 1\n5\n0a 61 62 63 7f\n");
  std::string p = write("v.chars", tok->modelBytes());
  std::unique_ptr<Tokenizer> back = loadTokenizer(p);
  EXPECT_EQ(back->type(), "char");
  EXPECT_EQ(back->fingerprint(), tok->fingerprint());
  std::vector<uint32_t> ids;
  back->encode("abc", ids);
  EXPECT_EQ(ids, (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(back->lineEndId(), 0u);

  // A byte outside the vocabulary is refused, naming the column.
  EXPECT_EQ(errorOf([&] { back->encode("abz", ids); }),
            "byte 0x7a at column 3 is not in the character vocabulary (5 symbols)");
  EXPECT_EQ(errorOf([&] {
              uint32_t bad[] = {5};
              back->decode(bad, 1);
            }),
            "id 5 is beyond the character vocabulary of 5 ids");
  // Broken vocabulary files.
  std::string m = errorOf([&] {
    loadTokenizer(write("a.chars", "ls2c-char-vocabulary 1\n3\n61 60 62\n"));
  });
  EXPECT_EQ(m, path("a.chars") + ": not a valid character vocabulary: symbols "
                                 "must be increasing; '60' follows '61'");
  m = errorOf([&] {
    loadTokenizer(write("b.chars", "ls2c-char-vocabulary 1\n3\n61 62\n"));
  });
  EXPECT_NE(m.find("the count says 3 symbols, the list has 2"), std::string::npos) << m;
  m = errorOf([&] {
    loadTokenizer(write("c.chars", "ls2c-char-vocabulary 1\n1\nG1\n"));
  });
  EXPECT_NE(m.find("'G1' is not two lowercase hex digits"), std::string::npos) << m;
  m = errorOf([&] { loadTokenizer(write("d.model", "this is no model")); });
  EXPECT_EQ(m.rfind(path("d.model") + ": not a sentencepiece model or character "
                                      "vocabulary",
                    0),
            0u)
      << m;
  m = errorOf([&] { loadTokenizer(write("e.model", "")); });
  EXPECT_EQ(m, path("e.model") + ": is empty (not a tokenizer model)");
}

// --- sentencepiece -----------------------------------------------------------

TEST_F(Tokenize, BpeOnWikiTextRoundTripsToTheNormalizedText) {
  REQUIRE_WIKITEXT();
  const Tokenizer &tok = wikiBpe();
  EXPECT_EQ(tok.type(), "bpe");
  EXPECT_EQ(tok.vocabSize(), 1000u);
  EXPECT_EQ(tok.unkId(), 0u);
  EXPECT_EQ(tok.bosId(), 1u);
  EXPECT_EQ(tok.eosId(), 2u);
  EXPECT_EQ(tok.padId(), kNoTokenId);
  EXPECT_EQ(tok.lineEndId(), 2u);

  // Held-out text (the test split) comes back normalized; characters the
  // model never saw included (byte fallback: no <unk>).
  size_t ascii = 0, total = 0;
  NormalizedText normalized;
  for (const std::string &line : firstLines(kWikiTest, 400)) {
    std::vector<uint32_t> ids;
    tok.encode(line, ids);
    for (uint32_t id : ids)
      ASSERT_LT(id, 1000u);
    normalized.check(tok, line, tok.decode(ids.data(), ids.size()));
    ascii += isAscii(line);
    ++total;
  }
  normalized.expectFewChanged();
  EXPECT_EQ(total, 400u);
  EXPECT_GT(total - ascii, 20u); // the test really covers non-ASCII lines
  // Compression: subword pieces, not characters.
  std::vector<uint32_t> ids;
  std::string sample = " The game 's battle system , the BliTZ system , is carried over "
                       "directly from Valkyira Chronicles . ";
  tok.encode(sample, ids);
  EXPECT_LT(ids.size(), foldAsciiWhitespace(sample).size() / 2);
}

TEST_F(Tokenize, UnigramWithIdentityNormalizationGivesBackTheExactText) {
  REQUIRE_WIKITEXT();
  SentencePieceOptions o;
  o.modelType = "unigram";
  o.vocabSize = 800;
  o.normalization = "identity";
  std::unique_ptr<Tokenizer> tok =
      trainSentencePiece(firstLines(kWikiValid, 600), o, kWikiValid);
  EXPECT_EQ(tok->type(), "unigram");
  EXPECT_EQ(tok->vocabSize(), 800u);
  for (const std::string &line : firstLines(kWikiTest, 300)) {
    std::vector<uint32_t> ids;
    tok->encode(line, ids);
    ASSERT_EQ(tok->decode(ids.data(), ids.size()), line);
  }
  // Characters never seen in training come back through byte pieces.
  std::string rare = "  Tab\there, \xE6\x97\xA5\xE6\x9C\xAC and \xF0\x9F\x98\x80 ";
  std::vector<uint32_t> ids;
  tok->encode(rare, ids);
  EXPECT_EQ(tok->decode(ids.data(), ids.size()), rare);

  // Saved and loaded: the same model, the same ids.
  std::string p = write("u.model", tok->modelBytes());
  std::unique_ptr<Tokenizer> back = loadTokenizer(p);
  EXPECT_EQ(back->type(), "unigram");
  EXPECT_EQ(back->fingerprint(), tok->fingerprint());
  std::vector<uint32_t> again;
  back->encode(rare, again);
  EXPECT_EQ(again, ids);
}

TEST_F(Tokenize, TrainingRefusalsSayWhy) {
  REQUIRE_WIKITEXT();
  SentencePieceOptions o;
  o.vocabSize = 100000; // far more than 20 lines hold
  std::string m = errorOf([&] {
    trainSentencePiece(firstLines(kWikiValid, 20), o, kWikiValid);
  });
  EXPECT_EQ(m.rfind(kWikiValid + ": training a bpe tokenizer with 100000 ids failed: ", 0),
            0u)
      << m;
  o.vocabSize = 1000;
  o.modelType = "wordpiece";
  EXPECT_EQ(errorOf([&] { trainSentencePiece({"a b"}, o, "x"); }),
            "tokenizer type 'wordpiece' is not bpe or unigram");
  o.modelType = "bpe";
  EXPECT_EQ(errorOf([&] { trainSentencePiece({"", ""}, o, "blank.txt"); }),
            "blank.txt: no text to train a tokenizer on");
}

TEST_F(Tokenize, WikiTextLinesThroughATokenFileDecodeToTheNormalizedLines) {
  REQUIRE_WIKITEXT();
  const Tokenizer &tok = wikiBpe();
  TokenizeOptions o;
  TokenizeReport r;
  TokenFileContents c = tokenizeCorpus({kWikiTest}, tok, o, r);
  EXPECT_EQ(r.lines, 4358u);
  writeTokenFile(path("t.tok"), c);
  TokenFile f(path("t.tok"));
  EXPECT_FALSE(f.concatenated());
  EXPECT_EQ(f.eosId(), 2u);
  EXPECT_EQ(f.numSequences(), r.sequences);
  EXPECT_EQ(f.numSequences() + r.emptyLines, 4358u);
  uint64_t s = 0;
  NormalizedText normalized;
  for (const std::string &line : firstLines(kWikiTest, 0)) {
    if (foldAsciiWhitespace(line).empty())
      continue;
    std::vector<uint32_t> ids = f.sequence(s++);
    normalized.check(tok, line, tok.decode(ids.data(), ids.size()));
  }
  EXPECT_EQ(s, f.numSequences());
  EXPECT_GT(normalized.nonAscii, 300u);
  normalized.expectFewChanged();
}

TEST_F(Tokenize, ConcatenatedWikiTextEndsEveryLineWithEos) {
  REQUIRE_WIKITEXT();
  const Tokenizer &tok = wikiBpe();
  TokenizeOptions o;
  o.concatenate = true;
  o.maxSeqLen = 128;
  TokenizeReport r;
  TokenFileContents c = tokenizeCorpus({kWikiValid}, tok, o, r);
  EXPECT_EQ(r.lines, 3760u);
  uint64_t eos = 0;
  for (uint32_t id : c.tokens)
    eos += id == 2;
  EXPECT_EQ(eos, 3760u); // one </s> per line, as the word-level <eos>
  EXPECT_EQ(c.tokens.back(), 2u);
  for (uint64_t s = 0; s + 1 < c.numSequences(); ++s)
    ASSERT_EQ(c.offsets[s + 1] - c.offsets[s], 128u);
  // The stream decodes to the normalized file, one line per </s>.
  std::string text = tok.decodeLines(c.tokens.data(), c.tokens.size());
  ASSERT_EQ(text.back(), '\n');
  std::vector<std::string> lines = firstLines(kWikiValid, 0);
  NormalizedText normalized;
  size_t at = 0;
  for (const std::string &line : lines) {
    size_t nl = text.find('\n', at);
    ASSERT_NE(nl, std::string::npos);
    normalized.check(tok, line, text.substr(at, nl - at));
    at = nl + 1;
  }
  EXPECT_EQ(at, text.size());
  normalized.expectFewChanged();
}

TEST_F(Tokenize, GzipCorporaAreReadTransparently) {
  REQUIRE_WIKITEXT();
  CorpusLineReader reader(kWikiTrainGz, InvalidUtf8Policy::Refuse);
  std::string line;
  ASSERT_TRUE(reader.next(line));
  EXPECT_EQ(line, " ");
  ASSERT_TRUE(reader.next(line));
  EXPECT_EQ(line, " = Valkyria Chronicles III = ");
  uint64_t n = 2, bytes = 2 + line.size() + 1;
  while (reader.next(line)) {
    ++n;
    bytes += line.size() + 1;
  }
  EXPECT_EQ(n, 36718u);        // shared/data/wikitext-2/README.md
  EXPECT_EQ(bytes, 10797148u); // the decompressed size
  EXPECT_TRUE(reader.lineHadNewline());
}

// --- bad data ----------------------------------------------------------------

TEST_F(Tokenize, EmptyFilesAreRefused) {
  std::unique_ptr<Tokenizer> tok = trainCharTokenizer({"abc"}, true);
  TokenizeOptions o;
  TokenizeReport r;
  std::string empty = write("empty.txt", "");
  std::string fine = write("fine.txt", "abc\ncab\n");
  EXPECT_NO_THROW(tokenizeCorpus({fine}, *tok, o, r));
  EXPECT_EQ(errorOf([&] { tokenizeCorpus({fine, empty}, *tok, o, r); }),
            empty + ": is empty (no text to tokenize)");
  // Compressed nothing is still nothing.
  std::string gz = path("empty.txt.gz");
  std::string cmd = "gzip -c < /dev/null > '" + gz + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(errorOf([&] { tokenizeCorpus({gz}, *tok, o, r); }),
            gz + ": is empty after gzip decompression (no text to tokenize)");
  // Only blank lines: nothing to train or tokenize.
  std::string blank = write("blank.txt", "\n\n\n");
  EXPECT_EQ(errorOf([&] { tokenizeCorpus({blank}, *tok, o, r); }),
            blank + ": no tokens in its 3 lines (all blank)");
  o.concatenate = true;
  EXPECT_EQ(errorOf([&] { tokenizeCorpus({blank}, *tok, o, r); }),
            blank + ": no tokens in its 3 lines (all blank)");
  EXPECT_EQ(errorOf([&] { tokenizeCorpus({path("none.txt")}, *tok, o, r); }),
            path("none.txt") + ": cannot open: No such file or directory");
  EXPECT_EQ(errorOf([&] { tokenizeCorpus({dir}, *tok, o, r); }),
            dir + ": is a directory");
}

TEST_F(Tokenize, LongLinesAreTruncatedOrSkippedAndCounted) {
  REQUIRE_WIKITEXT();
  const Tokenizer &tok = wikiBpe();
  // How many of WikiText-2's test lines exceed 64 tokens, counted here.
  uint64_t longLines = 0, overflow = 0, firstLong = 0, lineNo = 0, nonEmpty = 0;
  for (const std::string &line : firstLines(kWikiTest, 0)) {
    ++lineNo;
    std::vector<uint32_t> ids;
    tok.encode(line, ids);
    nonEmpty += !ids.empty();
    if (ids.size() > 64) {
      ++longLines;
      overflow += ids.size() - 64;
      if (!firstLong)
        firstLong = lineNo;
    }
  }
  ASSERT_GT(longLines, 100u);

  TokenizeOptions o;
  o.maxSeqLen = 64;
  TokenizeReport r;
  TokenFileContents c = tokenizeCorpus({kWikiTest}, tok, o, r);
  EXPECT_EQ(r.truncatedLines, longLines);
  EXPECT_EQ(r.truncatedTokens, overflow);
  EXPECT_EQ(r.skippedLongLines, 0u);
  EXPECT_EQ(r.firstLongLine.rfind(kWikiTest + ":" + std::to_string(firstLong) + ", ", 0), 0u)
      << r.firstLongLine;
  EXPECT_EQ(c.numSequences(), nonEmpty);
  for (uint64_t s = 0; s < c.numSequences(); ++s)
    ASSERT_LE(c.offsets[s + 1] - c.offsets[s], 64u);

  o.longLines = LongLinePolicy::Skip;
  c = tokenizeCorpus({kWikiTest}, tok, o, r);
  EXPECT_EQ(r.skippedLongLines, longLines);
  EXPECT_EQ(r.truncatedLines, 0u);
  EXPECT_EQ(c.numSequences(), nonEmpty - longLines);

  // A file whose every line is too long has nothing left.
  std::string wide = write("wide.txt", std::string(300, 'a') + "\n");
  std::unique_ptr<Tokenizer> chars = trainCharTokenizer({"a"}, true);
  EXPECT_EQ(errorOf([&] { tokenizeCorpus({wide}, *chars, o, r); }),
            wide + ": no tokens in its 1 lines (1 skipped as longer than 64 tokens)");
}

TEST_F(Tokenize, InvalidUtf8IsRefusedWithTheLineOrReplaced) {
  // A real corpus with one corrupted line: tinyshakespeare's first 5 lines,
  // the fourth ("All:") after a Latin-1 byte.
  std::vector<std::string> lines = firstLines(kShakespeare, 5);
  ASSERT_EQ(lines[3], "All:");
  std::string text;
  for (size_t i = 0; i < lines.size(); ++i)
    text += (i == 3 ? "Caf\xE9 " + lines[i] : lines[i]) + "\n";
  std::string bad = write("latin1.txt", text);
  const std::string refused =
      bad + ":4:4: invalid UTF-8 (byte 0xe9 does not start a well-formed "
            "sequence; --invalid-utf8=replace substitutes U+FFFD)";
  std::unique_ptr<Tokenizer> shakespeare =
      trainCharTokenizer(firstLines(kShakespeare, 0), true);
  TokenizeOptions o;
  TokenizeReport r;
  EXPECT_EQ(errorOf([&] { tokenizeCorpus({bad}, *shakespeare, o, r); }), refused);
  EXPECT_EQ(errorOf([&] { readCorpusLines({bad}, InvalidUtf8Policy::Refuse, 0); }),
            refused);

  // Replaced: U+FFFD, which tinyshakespeare's 65 characters lack...
  o.invalidUtf8 = InvalidUtf8Policy::Replace;
  EXPECT_EQ(errorOf([&] { tokenizeCorpus({bad}, *shakespeare, o, r); }),
            bad + ":4: byte 0xef at column 4 is not in the character "
                  "vocabulary (65 symbols)");
  // ... but the characters of the replaced text have.
  bool newline = false;
  std::unique_ptr<Tokenizer> chars = trainCharTokenizer(
      readCorpusLines({bad}, InvalidUtf8Policy::Replace, 0, &newline), newline);
  TokenFileContents c = tokenizeCorpus({bad}, *chars, o, r);
  EXPECT_EQ(r.replacedUtf8, 1u);
  EXPECT_EQ(r.firstReplacedLine, bad + ":4");
  ASSERT_EQ(c.numSequences(), 4u); // line 3 is blank
  EXPECT_EQ(chars->decode(c.tokens.data() + c.offsets[2], c.offsets[3] - c.offsets[2]),
            "Caf\xEF\xBF\xBD All:");
  // nmt_nfkc (sentencepiece's default normalization) drops U+FFFD, as it
  // drops control characters.
  REQUIRE_WIKITEXT();
  c = tokenizeCorpus({bad}, wikiBpe(), o, r);
  EXPECT_EQ(r.replacedUtf8, 1u);
  EXPECT_EQ(wikiBpe().decode(c.tokens.data() + c.offsets[2], c.offsets[3] - c.offsets[2]),
            "Caf All:");
}

TEST_F(Tokenize, Utf8ReplacementUsesMaximalSubparts) {
  // Unicode 15, section 3.9, Table 3-8: U+FFFD for maximal subparts.
  std::string in = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
  uint64_t n = 0;
  EXPECT_EQ(replaceInvalidUtf8(in, n),
            "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c\xEF\xBF\xBD\xEF\xBF\xBD" "d");
  EXPECT_EQ(n, 6u);
  EXPECT_EQ(findInvalidUtf8(in), 1u);
  EXPECT_EQ(findInvalidUtf8("caf\xC3\xA9 \xE2\x82\xAC"), std::string::npos);
  EXPECT_EQ(maximalIllFormedSubpart("\xE0\x80"), 1u);      // overlong: E0 needs A0..BF
  EXPECT_EQ(maximalIllFormedSubpart("\xED\xA0\x80"), 1u);  // a surrogate
  EXPECT_EQ(maximalIllFormedSubpart("\xF4\x8F\xBF"), 3u);  // cut short
  EXPECT_EQ(maximalIllFormedSubpart("\xF5"), 1u);
}

TEST_F(Tokenize, TokenIdsBeyondTheVocabularyInATokenFileAreRefused) {
  // A real token file (tinyshakespeare, characters), one id then pushed past
  // the 65-symbol vocabulary by another writer (the checksum made valid).
  std::unique_ptr<Tokenizer> tok = trainCharTokenizer(firstLines(kShakespeare, 0), true);
  TokenizeOptions o;
  TokenizeReport r;
  TokenFileContents c = tokenizeCorpus({kShakespeare}, *tok, o, r);
  std::string bytes = serializeTokenFile(c, "x");
  const uint64_t tokensAt = 80 + 8 * (c.offsets.size());
  const uint64_t victim = c.offsets[7] + 3; // sequence 7, position 3
  uint16_t id = 65;
  std::memcpy(&bytes[tokensAt + 2 * victim], &id, 2);
  uint64_t sum = tokenFileChecksum(bytes);
  std::memcpy(&bytes[64], &sum, 8);
  std::string p = write("bad.tok", bytes);
  EXPECT_EQ(errorOf([&] { TokenFile f(p); }),
            p + ": token " + std::to_string(victim) + " (sequence 7, position 3, byte offset " +
                std::to_string(tokensAt + 2 * victim) +
                ") is id 65, beyond the vocabulary of 65 ids");
  // The decoder refuses such ids too.
  uint32_t ids[] = {3, 65};
  EXPECT_EQ(errorOf([&] { tok->decode(ids, 2); }),
            "id 65 is beyond the character vocabulary of 65 ids");
  REQUIRE_WIKITEXT();
  EXPECT_EQ(errorOf([&] { wikiBpe().decode(ids, 2); }), "");
  uint32_t far[] = {1000};
  EXPECT_EQ(errorOf([&] { wikiBpe().decode(far, 1); }),
            "id 1000 is beyond the sentencepiece vocabulary of 1000 ids");
}

TEST_F(Tokenize, TruncatedGzipIsAReadError) {
  REQUIRE_WIKITEXT();
  // WikiText-2's train.txt.gz cut after 200 kB, as an interrupted download.
  std::string gz = write("cut.txt.gz", readBytes(kWikiTrainGz).substr(0, 200000));
  CorpusLineReader reader(gz, InvalidUtf8Policy::Refuse);
  std::string line;
  uint64_t n = 0;
  std::string m = errorOf([&] {
    while (reader.next(line))
      ++n;
  });
  EXPECT_GT(n, 1000u); // what arrived is read
  // The same words as every other reader of gzip corpora (ParallelCorpus).
  EXPECT_EQ(m.rfind(gz + ": truncated or corrupt gzip data: ", 0), 0u) << m;
  // The file is named once, by its path, not again by zlib's "<fd:N>".
  EXPECT_EQ(m.find("<fd:"), std::string::npos) << m;
}

} // namespace
