//===- Search.cpp - fairseq-style beam search (greedy = beam 1) -----------===//
#include "ls2c/Generation/Search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace ls2c::generation {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct Live {
  size_t input;                ///< index into the batch's inputs
  std::vector<int32_t> tokens; ///< generated so far
  double logProb = 0;
};

struct Candidate {
  size_t live; ///< index into the live hypotheses
  int32_t token;
  double logProb; ///< the hypothesis' sum with this token
};

/// log_softmax of one row of logits, in double.
void logSoftmax(const float *logits, int64_t n, std::vector<double> &out) {
  out.resize(static_cast<size_t>(n));
  double m = kNegInf;
  for (int64_t j = 0; j < n; ++j)
    m = std::max(m, static_cast<double>(logits[j]));
  double sum = 0;
  for (int64_t j = 0; j < n; ++j)
    sum += std::exp(static_cast<double>(logits[j]) - m);
  double lse = m + std::log(sum);
  for (int64_t j = 0; j < n; ++j)
    out[static_cast<size_t>(j)] = static_cast<double>(logits[j]) - lse;
}

/// A finished hypothesis: `h` then `token`, which is left out when it is
/// the end token; `ended` when the end came before the limit forced it.
Hypothesis finish(const Live &h, int32_t token, double logProb, bool ended,
                  const SearchOptions &o) {
  Hypothesis out;
  out.tokens = h.tokens;
  if (token != o.eos || o.eos < 0)
    out.tokens.push_back(token);
  out.logProb = logProb;
  out.ended = ended;
  double length = static_cast<double>(h.tokens.size() + 1);
  out.score = logProb / std::pow(length, o.lengthPenalty);
  return out;
}

/// Beam search over inputs [begin, end) of one batch.
void searchBatch(IncrementalDecoder &decoder, const std::vector<std::vector<int32_t>> &prompts,
                 const std::vector<std::vector<int32_t>> &sources, size_t begin, size_t end,
                 const SearchOptions &o, std::vector<std::vector<Hypothesis>> &results) {
  const size_t n = end - begin, beam = static_cast<size_t>(o.beam);
  const int64_t vocab = decoder.vocabSize();
  if (decoder.hasSource())
    decoder.encode(std::vector<std::vector<int32_t>>(sources.begin() + static_cast<long>(begin),
                                                     sources.begin() + static_cast<long>(end)));
  std::vector<Live> live;
  std::vector<int32_t> sourceOf;
  std::vector<std::vector<int32_t>> feed;
  std::vector<size_t> limit(n);
  for (size_t i = 0; i < n; ++i) {
    live.push_back({i, {}, 0.0});
    sourceOf.push_back(static_cast<int32_t>(i));
    feed.push_back(prompts[begin + i]);
    limit[i] = static_cast<size_t>(std::min<int64_t>(
        o.maxNewTokens,
        decoder.maxLength() - static_cast<int64_t>(prompts[begin + i].size())));
  }
  decoder.start(sourceOf);
  std::vector<std::vector<Hypothesis>> finished(n);
  std::vector<double> lp;
  std::vector<Candidate> cands;
  while (!live.empty()) {
    std::vector<float> logits = decoder.step(feed);
    std::vector<Live> next;
    std::vector<int32_t> parents;
    for (size_t first = 0; first < live.size();) {
      size_t input = live[first].input, last = first;
      while (last < live.size() && live[last].input == input)
        ++last;
      // The token chosen now is generated token number `length`.
      const size_t length = live[first].tokens.size() + 1;
      const bool atLimit = length >= limit[input];
      cands.clear();
      for (size_t h = first; h < last; ++h) {
        logSoftmax(logits.data() + h * static_cast<size_t>(vocab), vocab, lp);
        for (int64_t t = 0; t < vocab; ++t) {
          auto tok = static_cast<int32_t>(t);
          // fairseq's min_len 1: no end as the first token, unless the
          // limit forces it; at the limit only the end.
          if (tok == o.pad || (atLimit && o.eos >= 0 && tok != o.eos) ||
              (!atLimit && length == 1 && tok == o.eos))
            continue;
          double s = live[h].logProb + lp[static_cast<size_t>(t)];
          if (s > kNegInf)
            cands.push_back({h, tok, s});
        }
      }
      size_t take = std::min(cands.size(), 2 * beam);
      auto better = [](const Candidate &a, const Candidate &b) {
        if (a.logProb != b.logProb)
          return a.logProb > b.logProb;
        return a.live != b.live ? a.live < b.live : a.token < b.token;
      };
      std::partial_sort(cands.begin(), cands.begin() + static_cast<long>(take), cands.end(),
                        better);
      std::vector<Hypothesis> &done = finished[input];
      size_t kept = 0;
      std::vector<Candidate> continuing;
      for (size_t r = 0; r < take; ++r) {
        const Candidate &c = cands[r];
        if (o.eos >= 0 && c.token == o.eos) {
          // fairseq counts an end only among the first `beam` candidates.
          if (r < beam && done.size() < beam)
            done.push_back(finish(live[c.live], c.token, c.logProb, !atLimit, o));
          continue;
        }
        if (kept < beam) {
          continuing.push_back(c);
          ++kept;
        }
      }
      if (done.size() < beam) {
        for (const Candidate &c : continuing) {
          if (atLimit) {
            done.push_back(finish(live[c.live], c.token, c.logProb, false, o));
            continue;
          }
          Live h = live[c.live];
          h.tokens.push_back(c.token);
          h.logProb = c.logProb;
          next.push_back(std::move(h));
          parents.push_back(static_cast<int32_t>(c.live));
        }
      }
      first = last;
    }
    live = std::move(next);
    if (live.empty())
      break;
    decoder.select(parents);
    feed.assign(live.size(), {});
    for (size_t h = 0; h < live.size(); ++h)
      feed[h] = {live[h].tokens.back()};
  }
  for (size_t i = 0; i < n; ++i) {
    std::vector<Hypothesis> &done = finished[i];
    std::stable_sort(done.begin(), done.end(),
                     [](const Hypothesis &a, const Hypothesis &b) { return a.score > b.score; });
    if (done.size() > beam)
      done.resize(beam);
    results[begin + i] = std::move(done);
  }
}

} // namespace

std::vector<std::vector<Hypothesis>> generate(IncrementalDecoder &decoder,
                                              const std::vector<std::vector<int32_t>> &prompts,
                                              const std::vector<std::vector<int32_t>> &sources,
                                              const SearchOptions &o) {
  if (o.beam < 1)
    throw GenerationError("beam " + std::to_string(o.beam) + " must be >= 1");
  if (o.maxNewTokens < 1)
    throw GenerationError("max new tokens " + std::to_string(o.maxNewTokens) + " must be >= 1");
  if (!(o.lengthPenalty >= 0.0) || !std::isfinite(o.lengthPenalty))
    throw GenerationError("length penalty " + std::to_string(o.lengthPenalty) +
                          " must be finite and >= 0");
  if (decoder.hasSource() != !sources.empty() ||
      (decoder.hasSource() && sources.size() != prompts.size()))
    throw GenerationError(decoder.hasSource()
                              ? "an encoder_decoder model needs one source per input: " +
                                    std::to_string(sources.size()) + " sources for " +
                                    std::to_string(prompts.size()) + " inputs"
                              : "a decoder model takes no sources");
  const int64_t bound = decoder.maxBatchTokens(), maxLength = decoder.maxLength();
  const auto beam = o.beam;
  if (beam > bound)
    throw GenerationError("beam " + std::to_string(beam) + " exceeds the " +
                          std::to_string(bound) + " hypotheses a step holds (max_batch_tokens)");
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto len = static_cast<int64_t>(prompts[i].size());
    const std::string what = "input " + std::to_string(i + 1);
    if (len == 0)
      throw GenerationError(what + ": an empty prompt (it needs at least the start token)");
    if (len >= maxLength || len > bound)
      throw GenerationError(what + ": a prompt of " + std::to_string(len) +
                            " tokens leaves no room to generate within max_seq_len " +
                            std::to_string(maxLength) + " and max_batch_tokens " +
                            std::to_string(bound));
    for (int32_t id : prompts[i])
      if (id < 0 || id >= decoder.vocabSize())
        throw GenerationError(what + ": prompt id " + std::to_string(id) +
                              " is outside the vocabulary [0, " +
                              std::to_string(decoder.vocabSize()) + ")");
    if (decoder.hasSource()) {
      auto s = static_cast<int64_t>(sources[i].size());
      if (s == 0 || s > maxLength || s > bound)
        throw GenerationError(what + ": a source of " + std::to_string(s) +
                              " tokens; it must hold 1 to min(max_seq_len " +
                              std::to_string(maxLength) + ", max_batch_tokens " +
                              std::to_string(bound) + ")");
    }
  }
  std::vector<std::vector<Hypothesis>> results(prompts.size());
  for (size_t begin = 0; begin < prompts.size();) {
    size_t end = begin;
    int64_t promptTokens = 0, sourceTokens = 0;
    while (end < prompts.size()) {
      int64_t p = promptTokens + static_cast<int64_t>(prompts[end].size());
      int64_t s = sourceTokens + (sources.empty() ? 0 : static_cast<int64_t>(sources[end].size()));
      int64_t h = static_cast<int64_t>(end - begin + 1) * beam;
      if (end > begin && (p > bound || s > bound || h > bound))
        break;
      promptTokens = p;
      sourceTokens = s;
      ++end;
    }
    searchBatch(decoder, prompts, sources, begin, end, o, results);
    begin = end;
  }
  return results;
}

} // namespace ls2c::generation
