//===- BleuTest.cpp - corpus BLEU and the 13a tokenizer, by hand ----------===//
//
// Every expected score is derived in the comment above its check from
// BLEU = BP * exp(mean over n = 1..4 of log p_n), in percent. The
// comparison with sacreBLEU itself on Multi30k is
// test/tools/ls2c-bleu-sacrebleu.test.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Eval/Bleu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using ls2c::eval::BleuScore;
using ls2c::eval::corpusBleu;
using ls2c::eval::tokenize13a;
using Lines = std::vector<std::string>;

TEST(Tokenize13aTest, SplitsPunctuationButNotApostrophesOrHyphens) {
  EXPECT_EQ(tokenize13a("Hello, world!"), "Hello , world !");
  EXPECT_EQ(tokenize13a("(a) [b] {c} \"d\" e? f; g: h/i"),
            "( a ) [ b ] { c } \" d \" e ? f ; g : h / i");
  EXPECT_EQ(tokenize13a("don't stop well-known"), "don't stop well-known");
  EXPECT_EQ(tokenize13a("a#b$c%d&e*f+g<h=i>j@k\\l^m_n`o|p~q"),
            "a # b $ c % d & e * f + g < h = i > j @ k \\ l ^ m _ n ` o | p ~ q");
}

TEST(Tokenize13aTest, NumbersKeepTheirPeriodsAndCommas) {
  EXPECT_EQ(tokenize13a("It costs $3.50, or 1,000 yen."),
            "It costs $ 3.50 , or 1,000 yen .");
  EXPECT_EQ(tokenize13a("3.5"), "3.5");
  EXPECT_EQ(tokenize13a("1,000,000"), "1,000,000");
  // A period after a non-digit is split even before a digit.
  EXPECT_EQ(tokenize13a("v.2 .5"), "v . 2 . 5");
  EXPECT_EQ(tokenize13a("U.S.A."), "U . S . A .");
  // Only a hyphen after a digit is split.
  EXPECT_EQ(tokenize13a("a 5-year-old"), "a 5 - year-old");
  // Each rule is one pass over non-overlapping pairs: "x." is the first
  // rule's match, so the comma (after the period, not after a non-digit
  // in a fresh pair) stays with the 5.
  EXPECT_EQ(tokenize13a("x.,5"), "x . ,5");
}

TEST(Tokenize13aTest, MtevalNormalization) {
  EXPECT_EQ(tokenize13a("&quot;Hi&quot; &amp; &lt;b&gt;"), "\" Hi \" & < b >");
  // Entities are replaced one kind after another: &amp;lt; becomes &lt; and
  // then <.
  EXPECT_EQ(tokenize13a("&amp;lt;"), "<");
  EXPECT_EQ(tokenize13a("&apos;x"), "& apos ; x"); // not one of mteval's four
  EXPECT_EQ(tokenize13a("a <skipped> b"), "a b");
  EXPECT_EQ(tokenize13a("self-\ncontained\nline"), "selfcontained line");
}

TEST(Tokenize13aTest, UnicodeWhitespaceAndLetters) {
  // U+00A0 no-break space and U+3000 ideographic space separate tokens.
  EXPECT_EQ(tokenize13a("a\u00a0b\u3000c \t d"), "a b c d");
  // U+200B zero-width space is not whitespace to Python.
  EXPECT_EQ(tokenize13a("a\u200bb"), "a\u200bb");
  EXPECT_EQ(tokenize13a("Café. Ünïcödé, 東京."), "Café . Ünïcödé , 東京 .");
  EXPECT_EQ(tokenize13a("   "), "");
}

// hyp = ref, 6 tokens: p_n = (7 - n) / (7 - n) = 100% for n = 1..4, BP = 1,
// so BLEU = 100.
TEST(BleuTest, IdenticalIsOneHundred) {
  Lines hyp{"the cat sat on the mat"};
  BleuScore s = corpusBleu(hyp, hyp);
  EXPECT_NEAR(s.score, 100.0, 1e-9);
  for (int n = 0; n < 4; ++n) {
    EXPECT_EQ(s.matches[n], 6u - n);
    EXPECT_EQ(s.totals[n], 6u - n);
  }
  EXPECT_EQ(s.brevityPenalty, 1.0);
  EXPECT_EQ(s.hypLen, 6u);
  EXPECT_EQ(s.refLen, 6u);
  EXPECT_EQ(s.numRefs, 1u);
  EXPECT_EQ(s.format(), "BLEU = 100.00 100.0/100.0/100.0/100.0 (BP = 1.000 "
                        "ratio = 1.000 hyp_len = 6 ref_len = 6)");
}

// hyp "a b c d e", ref "a b c e d" (5 tokens each, BP = 1):
//   1-grams a b c d e: 5/5
//   2-grams ab bc cd de vs ab bc ce ed: 2/4
//   3-grams abc bcd cde vs abc bce ced: 1/3
//   4-grams abcd bcde vs abce bced: 0/2 -> exp smoothing, first order
//     without matches: 1 / (2 * 2) = 25%
// BLEU = 100 * (1 * 1/2 * 1/3 * 1/4)^(1/4) = 100 / 24^(1/4) = 45.180...
TEST(BleuTest, NoFourGramMatchIsSmoothed) {
  BleuScore s = corpusBleu(Lines{"a b c d e"}, Lines{"a b c e d"});
  EXPECT_EQ(s.matches[3], 0u);
  EXPECT_EQ(s.totals[3], 2u);
  EXPECT_DOUBLE_EQ(s.precisions[0], 100.0);
  EXPECT_DOUBLE_EQ(s.precisions[1], 50.0);
  EXPECT_DOUBLE_EQ(s.precisions[2], 100.0 / 3);
  EXPECT_DOUBLE_EQ(s.precisions[3], 25.0);
  EXPECT_NEAR(s.score, 100.0 / std::pow(24.0, 0.25), 1e-9);
  EXPECT_EQ(s.format(), "BLEU = 45.18 100.0/50.0/33.3/25.0 (BP = 1.000 "
                        "ratio = 1.000 hyp_len = 5 ref_len = 5)");
}

// hyp "a b c d", ref "a b d c": p1 = 4/4; 2-grams ab bc cd vs ab bd dc:
// 1/3; 3-grams 0/2 -> first unmatched order, 1 / (2 * 2) = 25%; 4-grams
// 0/1 -> second, 1 / (4 * 1) = 25%. BLEU = 100 * (1/3 * 1/4 * 1/4)^(1/4)
// = 100 / 48^(1/4) = 37.99
TEST(BleuTest, SmoothingDoublesPerUnmatchedOrder) {
  BleuScore s = corpusBleu(Lines{"a b c d"}, Lines{"a b d c"});
  EXPECT_DOUBLE_EQ(s.precisions[2], 25.0);
  EXPECT_DOUBLE_EQ(s.precisions[3], 25.0);
  EXPECT_NEAR(s.score, 100.0 / std::pow(48.0, 0.25), 1e-9);
}

// hyp: 4 tokens, all n-grams matched (p_n = 1); ref: 8 tokens.
// BP = exp(1 - 8/4) = e^-1, BLEU = 100 / e = 36.79, ratio 0.5.
TEST(BleuTest, BrevityPenalty) {
  BleuScore s = corpusBleu(Lines{"the cat sat on"},
                           Lines{"the cat sat on the red mat today"});
  EXPECT_NEAR(s.brevityPenalty, std::exp(-1.0), 1e-15);
  EXPECT_NEAR(s.score, 100.0 * std::exp(-1.0), 1e-9);
  EXPECT_EQ(s.format(), "BLEU = 36.79 100.0/100.0/100.0/100.0 (BP = 0.368 "
                        "ratio = 0.500 hyp_len = 4 ref_len = 8)");
  // A longer hypothesis is not penalized: p1 = 4/5, p2 = 3/4, p3 = 2/3,
  // p4 = 1/2, product 1/5, BLEU = 100 * 5^(-1/4) = 66.87.
  BleuScore longer = corpusBleu(Lines{"the cat sat on it"}, Lines{"the cat sat on"});
  EXPECT_EQ(longer.brevityPenalty, 1.0);
  EXPECT_NEAR(longer.score, 100.0 * std::pow(5.0, -0.25), 1e-9);
}

// Papineni et al.'s modified precision: "the" x7 against two references
// that hold it at most twice: 2/7.
TEST(BleuTest, MatchesAreClippedToTheMostInOneReference) {
  Lines hyp{"the the the the the the the"};
  std::vector<Lines> refs{Lines{"the cat is on the mat"},
                          Lines{"there is a cat on the mat"}};
  BleuScore s = corpusBleu(hyp, refs);
  EXPECT_EQ(s.matches[0], 2u);
  EXPECT_EQ(s.totals[0], 7u);
  EXPECT_EQ(s.numRefs, 2u);
  // The closest reference length is 7 (|7 - 7| = 0 beats |7 - 6|).
  EXPECT_EQ(s.refLen, 7u);
}

// Hypothesis of 4 tokens, references of 3 and 5: equally close, the
// shorter counts, so there is no brevity penalty.
TEST(BleuTest, ClosestReferenceLengthPrefersTheShorter) {
  std::vector<Lines> refs{Lines{"a b c d e"}, Lines{"a b c"}};
  BleuScore s = corpusBleu(Lines{"a b c d"}, refs);
  EXPECT_EQ(s.refLen, 3u);
  EXPECT_EQ(s.brevityPenalty, 1.0);
  // An empty line is a reference of no tokens, as in sacreBLEU 2.x: 2
  // tokens are closer to 0 than to 5, so ref_len and the ratio are 0.
  std::vector<Lines> withEmpty{Lines{"a b c d e"}, Lines{""}};
  BleuScore t = corpusBleu(Lines{"a b"}, withEmpty);
  EXPECT_EQ(t.refLen, 0u);
  EXPECT_EQ(t.ratio, 0.0);
  EXPECT_EQ(t.brevityPenalty, 1.0);
  EXPECT_EQ(t.matches[0], 2u);
}

// Statistics add up over sentences before the precisions are taken:
// "a b c d" (exact) and "x y" vs "p q": p1 = 4/6, p2 = 3/4, p3 = 2/2,
// p4 = 1/1, BLEU = 100 * (2/3 * 3/4)^(1/4) = 100 * 2^(-1/4) = 84.09.
TEST(BleuTest, CorpusStatisticsArePooled) {
  BleuScore s = corpusBleu(Lines{"a b c d", "x y"}, Lines{"a b c d", "p q"});
  EXPECT_EQ(s.totals[1], 4u);
  EXPECT_NEAR(s.score, 100.0 * std::pow(2.0, -0.25), 1e-9);
}

TEST(BleuTest, NoMatchOrNoFourGramsIsZero) {
  BleuScore none = corpusBleu(Lines{"a b c d"}, Lines{"w x y z"});
  EXPECT_EQ(none.score, 0.0);
  EXPECT_EQ(none.precisions[0], 0.0);
  // Three tokens have no 4-gram: that order's precision is 0, so is BLEU.
  BleuScore short3 = corpusBleu(Lines{"a b c"}, Lines{"a b c"});
  EXPECT_EQ(short3.totals[3], 0u);
  EXPECT_EQ(short3.score, 0.0);
  EXPECT_DOUBLE_EQ(short3.precisions[0], 100.0);
}

// Tokenization happens before counting: "end." and "end ." are the same
// tokens; trailing whitespace is stripped first, so "x-\n" keeps its
// hyphen instead of joining.
TEST(BleuTest, LinesAreTokenizedWith13a) {
  BleuScore s = corpusBleu(Lines{"It ended, at 3.5 km."}, Lines{"It ended , at 3.5 km ."});
  EXPECT_NEAR(s.score, 100.0, 1e-9);
  BleuScore t = corpusBleu(Lines{"a b c well-\n"}, Lines{"a b c well-"});
  EXPECT_NEAR(t.score, 100.0, 1e-9);
}

TEST(BleuTest, Errors) {
  try {
    corpusBleu(Lines{"a", "b", "c"}, Lines{"a", "b"});
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "corpusBleu: 3 hypotheses but 2 references");
  }
  try {
    corpusBleu(Lines{"a"}, std::vector<Lines>{Lines{"a"}, Lines{"a", "b"}});
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "corpusBleu: 1 hypotheses but 2 lines in reference stream 2");
  }
  EXPECT_THROW(corpusBleu(Lines{"a"}, std::vector<Lines>{}), std::invalid_argument);
  try {
    corpusBleu(Lines{"ok", "caf\xe9"}, Lines{"ok", "cafe"});
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "corpusBleu: hypothesis 2 is not valid UTF-8 (byte 4)");
  }
}

} // namespace
