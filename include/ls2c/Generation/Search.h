//===- Search.h - greedy and beam search over an IncrementalDecoder -------===//
//
// Beam search as fairseq's SequenceGenerator does it (Ott et al., 2019;
// fairseq/sequence_generator.py): per input, the 2 * beam best extensions
// of the live hypotheses by cumulative log-probability; an end-of-sequence
// among the first `beam` of them finishes a hypothesis with the score
// sum(log p) / length^lengthPenalty (length counts the tokens generated,
// the end included); the first `beam` that do not end continue; an input
// is done once `beam` hypotheses have finished, and at the length limit
// every live hypothesis ends (with the end token when there is one, its
// only choice there). <pad> is never generated, nor the end token first
// (fairseq's min_len 1: no empty output) unless the limit is one token.
// Greedy search takes the most likely token each step (beam search with
// beam 1 finds the same).
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_GENERATION_SEARCH_H
#define LS2C_GENERATION_SEARCH_H

#include "ls2c/Generation/IncrementalDecoder.h"

#include <cstdint>
#include <vector>

namespace ls2c::generation {

struct SearchOptions {
  int64_t beam = 1;             ///< 1: greedy search
  int64_t maxNewTokens = 200;   ///< generated tokens per input, the end included
  double lengthPenalty = 1.0;   ///< the exponent of the length in the score
  int32_t eos = -1;             ///< the end-of-sequence id; < 0: none (run to the limit)
  int32_t pad = -1;             ///< an id never generated; < 0: none
  /// Each input's first decoder tokens: the prompt (decoders) or the
  /// decoder's start token (encoder_decoder, fairseq: </s>). Not part of the
  /// returned tokens.
};

struct Hypothesis {
  std::vector<int32_t> tokens; ///< generated, without the prompt or the end token
  double logProb = 0;          ///< the sum of the generated tokens' log-probabilities (end included)
  double score = 0;            ///< logProb / length^lengthPenalty (length: generated tokens, end included)
  bool ended = false;          ///< chose eos before the limit (else the limit stopped it)
};

/// Generates for every input: prompts[i] are its first decoder tokens
/// (non-empty); sources[i] its source ids when decoder.hasSource(), else
/// `sources` is empty. Returns, per input, up to `beam` hypotheses best
/// first. Inputs are batched so that hypotheses, tokens per step and
/// source tokens stay within decoder.maxBatchTokens(); the limit is
/// min(maxNewTokens, maxLength() - prompt length). Throws GenerationError
/// for an empty prompt, a prompt or source the model cannot hold, or bad
/// options (beam < 1, maxNewTokens < 1).
std::vector<std::vector<Hypothesis>> generate(IncrementalDecoder &decoder,
                                              const std::vector<std::vector<int32_t>> &prompts,
                                              const std::vector<std::vector<int32_t>> &sources,
                                              const SearchOptions &options);

} // namespace ls2c::generation

#endif // LS2C_GENERATION_SEARCH_H
