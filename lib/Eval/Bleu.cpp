//===- Bleu.cpp - corpus BLEU with the 13a tokenizer ----------------------===//
#include "ls2c/Eval/Bleu.h"

#include "ls2c/Support/Utf8.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <unordered_map>

namespace ls2c::eval {

namespace {

// Every non-overlapping occurrence of `from`, left to right, in one pass
// (what mteval's and Python's replace do: "&amp;quot;" becomes "&quot;").
void replaceAll(std::string &s, std::string_view from, std::string_view to) {
  size_t hit = s.find(from);
  if (hit == std::string::npos)
    return;
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (; hit != std::string::npos; hit = s.find(from, pos)) {
    out.append(s, pos, hit - pos);
    out.append(to);
    pos = hit + from.size();
  }
  out.append(s, pos, std::string::npos);
  s.swap(out);
}

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isPeriodOrComma(char c) { return c == '.' || c == ','; }

// 13a's punctuation class: ASCII 0x20-0x26, 0x28-0x2B, '/', 0x3A-0x40,
// 0x5B-0x60 and 0x7B-0x7E (everything printable but letters, digits and
// ' , - .).
bool isSplitPunctuation(char ch) {
  auto c = static_cast<unsigned char>(ch);
  return (c >= 0x20 && c <= 0x26) || (c >= 0x28 && c <= 0x2B) || c == '/' ||
         (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
         (c >= 0x7B && c <= 0x7E);
}

// One substitution pass of a two-character pattern: matches are taken left
// to right without overlapping, as a regular-expression substitution does,
// so in "x.,5" the comma stays with the 5. Matching bytes instead of
// characters gives the same result on UTF-8: one side of every pattern is
// ASCII ('.', ',', '-' or a digit) and no byte of a multibyte character is,
// so a byte pair matches exactly where the character pair does.
template <typename First, typename Second, typename Emit>
std::string substitutePairs(const std::string &s, First first, Second second,
                            Emit emit) {
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  for (size_t i = 0; i < s.size();) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      emit(out, s[i], s[i + 1]);
      i += 2;
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

// Bytes in the character at the start of `s` (1 for an ill-formed byte)
// and whether it is whitespace to Python's str.split and str.rstrip, which
// sacreBLEU uses.
size_t nextCharacter(std::string_view s, bool &isSpace) {
  auto c = static_cast<unsigned char>(s[0]);
  if (c < 0x80) {
    isSpace = c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    return 1;
  }
  size_t n = utf8SequenceLength(s);
  isSpace = false;
  if (n < 2)
    return 1;
  uint32_t cp = c & (0x7F >> n);
  for (size_t i = 1; i < n; ++i)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i]) & 0x3F);
  isSpace = cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
            (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
            cp == 0x202F || cp == 0x205F || cp == 0x3000;
  return n;
}

// `s` without trailing whitespace (Python's str.rstrip()).
std::string_view rstripWhitespace(std::string_view s) {
  size_t end = 0;
  for (size_t i = 0; i < s.size();) {
    bool space = false;
    i += nextCharacter(s.substr(i), space);
    if (!space)
      end = i;
  }
  return s.substr(0, end);
}

// The whitespace-separated pieces of `s` joined by single spaces.
std::string joinWords(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool inWord = false;
  for (size_t i = 0; i < s.size();) {
    bool space = false;
    size_t n = nextCharacter(s.substr(i), space);
    if (!space) {
      if (!inWord && !out.empty())
        out.push_back(' ');
      out.append(s.substr(i, n));
    }
    inWord = !space;
    i += n;
  }
  return out;
}

// N-gram counts of orders 1..kBleuMaxOrder, keyed by views into a
// tokenized line: tokens are separated by single spaces and hold none, so
// the view from an n-gram's first token to its last is the n-gram.
using NgramCounts = std::unordered_map<std::string_view, uint64_t>;

uint64_t countNgrams(std::string_view tokenized, NgramCounts &counts) {
  std::vector<size_t> starts, ends;
  for (size_t pos = 0; pos < tokenized.size();) {
    size_t space = tokenized.find(' ', pos);
    if (space == std::string_view::npos)
      space = tokenized.size();
    starts.push_back(pos);
    ends.push_back(space);
    pos = space + 1;
  }
  size_t tokens = starts.size();
  for (size_t n = 1; n <= kBleuMaxOrder && n <= tokens; ++n)
    for (size_t i = 0; i + n <= tokens; ++i)
      ++counts[tokenized.substr(starts[i], ends[i + n - 1] - starts[i])];
  return tokens;
}

// sacreBLEU's segment preprocessing: trailing whitespace off, then 13a.
std::string preprocess(const std::string &line) {
  return tokenize13a(rstripWhitespace(line));
}

void requireUtf8(const std::string &line, const std::string &what) {
  if (isValidUtf8(line))
    return;
  size_t pos = 0;
  while (size_t n = utf8SequenceLength(std::string_view(line).substr(pos)))
    pos += n;
  throw std::invalid_argument("corpusBleu: " + what + " is not valid UTF-8 (byte " +
                              std::to_string(pos + 1) + ")");
}

double logOrFloor(double p) {
  // sacreBLEU's my_log: log(0) is a large negative number, so a zero
  // precision makes the score 0 rather than NaN.
  return p == 0 ? -9999999999.0 : std::log(p);
}

} // namespace

std::string tokenize13a(std::string_view line) {
  std::string s(line);
  replaceAll(s, "<skipped>", "");
  replaceAll(s, "-\n", "");
  replaceAll(s, "\n", " ");
  replaceAll(s, "&quot;", "\"");
  replaceAll(s, "&amp;", "&");
  replaceAll(s, "&lt;", "<");
  replaceAll(s, "&gt;", ">");

  std::string spaced;
  spaced.reserve(s.size() + 16);
  spaced.push_back(' ');
  for (char c : s) {
    if (isSplitPunctuation(c)) {
      spaced.push_back(' ');
      spaced.push_back(c);
      spaced.push_back(' ');
    } else {
      spaced.push_back(c);
    }
  }
  spaced.push_back(' ');

  auto notDigit = [](char c) { return !isDigit(c); };
  // Period or comma after a non-digit: "a." -> "a . ".
  spaced = substitutePairs(spaced, notDigit, isPeriodOrComma,
                           [](std::string &out, char a, char b) {
                             out.push_back(a);
                             out.push_back(' ');
                             out.push_back(b);
                             out.push_back(' ');
                           });
  // Period or comma before a non-digit: ".a" -> " . a".
  spaced = substitutePairs(spaced, isPeriodOrComma, notDigit,
                           [](std::string &out, char a, char b) {
                             out.push_back(' ');
                             out.push_back(a);
                             out.push_back(' ');
                             out.push_back(b);
                           });
  // Hyphen after a digit: "5-" -> "5 - ".
  spaced = substitutePairs(
      spaced, isDigit, [](char c) { return c == '-'; },
      [](std::string &out, char a, char b) {
        out.push_back(a);
        out.push_back(' ');
        out.push_back(b);
        out.push_back(' ');
      });
  return joinWords(spaced);
}

std::string BleuScore::format() const {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "BLEU = %.2f %.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f "
                "hyp_len = %llu ref_len = %llu)",
                score, precisions[0], precisions[1], precisions[2],
                precisions[3], brevityPenalty, ratio,
                static_cast<unsigned long long>(hypLen),
                static_cast<unsigned long long>(refLen));
  return buf;
}

BleuScore corpusBleu(const std::vector<std::string> &hypotheses,
                     const std::vector<std::vector<std::string>> &referenceStreams) {
  if (referenceStreams.empty())
    throw std::invalid_argument("corpusBleu: no references");
  for (size_t s = 0; s < referenceStreams.size(); ++s)
    if (referenceStreams[s].size() != hypotheses.size())
      throw std::invalid_argument(
          "corpusBleu: " + std::to_string(hypotheses.size()) +
          " hypotheses but " + std::to_string(referenceStreams[s].size()) +
          (referenceStreams.size() == 1
               ? " references"
               : " lines in reference stream " + std::to_string(s + 1)));

  BleuScore r;
  r.numRefs = referenceStreams.size();
  std::vector<std::string> refTokens;
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    std::string line = std::to_string(i + 1);
    requireUtf8(hypotheses[i], "hypothesis " + line);
    // Reference n-grams: per n-gram, its largest count in one reference.
    refTokens.clear();
    for (size_t s = 0; s < referenceStreams.size(); ++s) {
      const std::string &ref = referenceStreams[s][i];
      requireUtf8(ref, "reference " + line +
                           (referenceStreams.size() > 1
                                ? " of stream " + std::to_string(s + 1)
                                : ""));
      refTokens.push_back(preprocess(ref));
    }
    // Keys are views into refTokens, complete from here on.
    NgramCounts refMax, oneRef;
    std::vector<uint64_t> refLens;
    for (const std::string &tokens : refTokens) {
      oneRef.clear();
      refLens.push_back(countNgrams(tokens, oneRef));
      for (const auto &[ngram, count] : oneRef) {
        uint64_t &best = refMax[ngram];
        best = std::max(best, count);
      }
    }

    std::string hypTokens = preprocess(hypotheses[i]);
    NgramCounts hyp;
    uint64_t hypLen = countNgrams(hypTokens, hyp);
    for (const auto &[ngram, count] : hyp) {
      size_t order = static_cast<size_t>(
          std::count(ngram.begin(), ngram.end(), ' '));
      r.totals[order] += count;
      auto it = refMax.find(ngram);
      if (it != refMax.end())
        r.matches[order] += std::min(count, it->second);
    }
    // The reference length closest to the hypothesis's, the shorter on ties.
    uint64_t closest = refLens.front();
    for (uint64_t len : refLens) {
      uint64_t d = len > hypLen ? len - hypLen : hypLen - len;
      uint64_t best = closest > hypLen ? closest - hypLen : hypLen - closest;
      if (d < best || (d == best && len < closest))
        closest = len;
    }
    r.hypLen += hypLen;
    r.refLen += closest;
  }

  r.brevityPenalty = 1;
  if (r.hypLen < r.refLen)
    r.brevityPenalty = r.hypLen == 0
                           ? 0.0
                           : std::exp(1 - static_cast<double>(r.refLen) /
                                              static_cast<double>(r.hypLen));
  r.ratio = r.refLen ? static_cast<double>(r.hypLen) /
                           static_cast<double>(r.refLen)
                     : 0.0;
  bool anyMatch = false;
  for (uint64_t m : r.matches)
    anyMatch = anyMatch || m != 0;
  if (!anyMatch)
    return r; // score and precisions 0, as sacreBLEU reports them

  // "exp" smoothing: the k-th order without matches gets 1 / 2^k matches.
  double smoothing = 1;
  for (int n = 0; n < kBleuMaxOrder; ++n) {
    if (r.totals[n] == 0)
      break; // this and higher orders stay 0, and so does the score
    double total = static_cast<double>(r.totals[n]);
    if (r.matches[n] == 0) {
      smoothing *= 2;
      r.precisions[n] = 100.0 / (smoothing * total);
    } else {
      r.precisions[n] = 100.0 * static_cast<double>(r.matches[n]) / total;
    }
  }
  double logSum = 0;
  for (double p : r.precisions)
    logSum += logOrFloor(p);
  r.score = r.brevityPenalty * std::exp(logSum / kBleuMaxOrder);
  return r;
}

BleuScore corpusBleu(const std::vector<std::string> &hypotheses,
                     const std::vector<std::string> &references) {
  return corpusBleu(hypotheses, std::vector<std::vector<std::string>>{references});
}

} // namespace ls2c::eval
