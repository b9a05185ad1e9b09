//===- Bleu.h - corpus BLEU as sacreBLEU computes it by default ------------===//
//
// BLEU (Papineni et al. 2002, "BLEU: a Method for Automatic Evaluation of
// Machine Translation", section 2): the geometric mean of the clipped n-gram
// precisions p_1..p_4, each summed over the whole corpus, times the brevity
// penalty BP = exp(1 - r / c) when the hypotheses' length c is below the
// references' length r (else 1). A hypothesis n-gram counts as matched at
// most as often as it occurs in one reference (the maximum over the
// references of that sentence); r sums, per sentence, the length of the
// reference closest to the hypothesis's (the shorter one on ties).
//
// With sacreBLEU's defaults (Post 2018, "A Call for Clarity in Reporting
// BLEU Scores": BLEU-4, tokenizer 13a, smoothing "exp", case kept), so that
// scores are comparable with published ones:
//   - Each line is stripped of trailing whitespace and tokenized with
//     tokenize13a; tokens are the space-separated pieces of its result.
//   - "exp" smoothing (mteval-v13a's): the k-th order in 1..4 without any
//     match gets precision 1 / (2^k * total_n) instead of 0, k counting only
//     such orders.
//   - No match of any order gives 0 (and precisions reported as 0); an order
//     with no hypothesis n-gram at all (every hypothesis shorter than n)
//     makes the score 0 as well.
//   - An empty reference line is a reference of no tokens (sacreBLEU 2.x
//     keeps it; it can still be the closest length).
// Units: score and precisions in percent (0..100); lengths in tokens.
// Inputs are UTF-8 strings without their line ends. No MLIR dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_EVAL_BLEU_H
#define LS2C_EVAL_BLEU_H

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ls2c::eval {

constexpr int kBleuMaxOrder = 4;

/// sacreBLEU's tokenizer "13a", the tokenization of WMT's mteval-v13a.pl,
/// applied in this order:
///   1. the normalization of mteval-v13a: "<skipped>" removed; "-\n" removed
///      (a word hyphenated across lines is joined); other "\n" become
///      spaces; the entities &quot; &amp; &lt; &gt; become " & < > (each
///      replaced over the whole line before the next, so "&amp;lt;" is "<").
///   2. every ASCII punctuation character but ' , - . (that is,
///      !"#$%&()*+/:;<=>?@[\]^_`{|}~) is set apart by spaces;
///   3. a period or comma is set apart from a preceding non-digit, then from
///      a following non-digit (so "3.5" and "1,000" stay one token, "end."
///      splits); each rule is one left-to-right pass over non-overlapping
///      character pairs, as a regular-expression substitution;
///   4. a hyphen after a digit is set apart ("5-year" -> "5 - year");
///   5. whitespace (Python's str.split set: ASCII \t\n\v\f\r, \x1c-\x1f,
///      space, and U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029,
///      U+202F, U+205F, U+3000) separates tokens, joined by one space.
/// `line` should be UTF-8; an ill-formed byte is kept as a non-space byte.
std::string tokenize13a(std::string_view line);

/// A corpus BLEU score and the statistics sacreBLEU reports with it.
struct BleuScore {
  double score = 0;                                 ///< percent
  std::array<double, kBleuMaxOrder> precisions{};   ///< percent, smoothed
  std::array<uint64_t, kBleuMaxOrder> matches{};    ///< clipped n-gram matches
  std::array<uint64_t, kBleuMaxOrder> totals{};     ///< hypothesis n-grams
  double brevityPenalty = 0;                        ///< BP, 0..1
  double ratio = 0;     ///< hypLen / refLen (0 when refLen is 0)
  uint64_t hypLen = 0;  ///< tokens of all hypotheses
  uint64_t refLen = 0;  ///< tokens of the closest references
  uint64_t numRefs = 0; ///< references per hypothesis

  /// sacreBLEU's score line, e.g. "BLEU = 34.12 65.3/40.1/27.0/18.9 (BP =
  /// 1.000 ratio = 1.012 hyp_len = 1234 ref_len = 1219)".
  std::string format() const;
};

/// Corpus BLEU of `hypotheses` against reference streams: line i of every
/// stream is a reference for hypotheses[i] (sacreBLEU's layout).
/// Throws std::invalid_argument when there are no streams, when a stream's
/// line count differs from the hypotheses' (both counts named), or when a
/// line is not valid UTF-8 (the stream, line and byte named, from 1).
BleuScore corpusBleu(const std::vector<std::string> &hypotheses,
                     const std::vector<std::vector<std::string>> &referenceStreams);

/// One reference per hypothesis.
BleuScore corpusBleu(const std::vector<std::string> &hypotheses,
                     const std::vector<std::string> &references);

} // namespace ls2c::eval

#endif // LS2C_EVAL_BLEU_H
