//===- IncrementalDecoder.h - one decoding step at a time over a KV cache -===//
//
// What greedy and beam search (Search.h) need from a backend: a batch of
// hypotheses, each with its own KV cache (ls2c::buildDecodingModule's
// @decode), fed new tokens step by step. The CPU reference backend
// (ReferenceDecoder.h) runs the decoding module in the interpreter.
//
// Ids are the model's (for translation, fairseq's dictionary: <s> 0, <pad>
// 1, </s> 2, <unk> 3, then the tokenizer's ids + 4).
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_GENERATION_INCREMENTALDECODER_H
#define LS2C_GENERATION_INCREMENTALDECODER_H

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace ls2c::generation {

/// A request the backend or the search cannot serve (a sequence longer than
/// the model's positions, more hypotheses than its bound, an id outside the
/// vocabulary): what was asked and the limit.
class GenerationError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class IncrementalDecoder {
public:
  virtual ~IncrementalDecoder() = default;

  /// Logits per hypothesis and step (the target vocabulary).
  virtual int64_t vocabSize() const = 0;
  /// The most tokens one hypothesis may hold (the model's max_seq_len: its
  /// positions), and the most hypotheses, tokens fed in one step, or
  /// source tokens in one batch (max_batch_tokens).
  virtual int64_t maxLength() const = 0;
  virtual int64_t maxBatchTokens() const = 0;
  /// Whether encode() must come first (encoder_decoder models).
  virtual bool hasSource() const = 0;

  /// Encodes `sources` (ids, each ending with </s> as training's sources
  /// do); the hypotheses of start() refer to them by index. Throws
  /// GenerationError for an empty batch or one past the bounds.
  virtual void encode(const std::vector<std::vector<int32_t>> &sources) = 0;
  /// Starts one hypothesis per entry with an empty cache; entry h is the
  /// index of its source (ignored without one).
  virtual void start(const std::vector<int32_t> &sourceOf) = 0;
  /// Feeds tokens[h] (one or more) to hypothesis h, at the positions after
  /// its cached ones, and returns the logits of the token after each
  /// hypothesis' last one: [hypotheses x vocabSize] row-major, f32.
  virtual std::vector<float> step(const std::vector<std::vector<int32_t>> &tokens) = 0;
  /// New hypothesis i continues old hypothesis parent[i] (its cache and its
  /// source); parents may repeat or be left out (beam search's reordering).
  virtual void select(const std::vector<int32_t> &parent) = 0;
};

} // namespace ls2c::generation

#endif // LS2C_GENERATION_INCREMENTALDECODER_H
