//===- DecodingState.h - the host's bookkeeping of incremental decoding ---===//
//
// What every IncrementalDecoder backend keeps on the host and feeds the
// decoding module (ls2c/Frontend/Decoding.h): the encoded sources' memory
// rows, each hypothesis' source and cached length, and a step's packed
// inputs. Hypothesis h's cache rows start at h x max_seq_len (the
// backend's cache layout). Every method checks its request against the
// model's bounds and throws GenerationError naming the rule. MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_GENERATION_DECODINGSTATE_H
#define LS2C_GENERATION_DECODINGSTATE_H

#include "ls2c/Generation/IncrementalDecoder.h"
#include "ls2c/Model/ModelDescription.h"

#include <cstdint>
#include <vector>

namespace ls2c::generation {

class DecodingState {
public:
  /// `hasSource`: an encoder_decoder model (encode() before start()).
  DecodingState(const ModelDescription &desc, bool hasSource);

  /// @encode's packed inputs (i32).
  struct Sources {
    std::vector<int32_t> ids, positions, cuSeqlens;
  };
  /// Packs `sources` (1 to max_batch_tokens tokens in all, ids within
  /// src_vocab) and records each one's memory rows.
  Sources encode(const std::vector<std::vector<int32_t>> &sources);
  /// One hypothesis per entry (1 to max_batch_tokens), each the index of
  /// an encoded source (ignored without sources), with an empty cache.
  void start(const std::vector<int32_t> &sourceOf);

  /// @decode's packed inputs (i32): the new tokens (ids, positions after
  /// the cached ones, cu_seqlens), the caches' rows (cache_starts [B + 1],
  /// cache_lengths [B]) and each hypothesis' source rows (memory_starts
  /// [B + 1], its last entry unread; memory_lengths [B]; empty without
  /// sources). `lockstep`: every hypothesis takes one token at the same
  /// cached length.
  struct Step {
    std::vector<int32_t> ids, positions, cuSeqlens, cacheStarts, cacheLengths, memoryStarts,
        memoryLengths;
    bool lockstep = true;
  };
  /// The inputs of feeding tokens[h] (one or more ids within vocab) to
  /// hypothesis h: each fits max_seq_len, all fit max_batch_tokens.
  Step step(const std::vector<std::vector<int32_t>> &tokens) const;
  /// After the step ran: each hypothesis holds its new tokens.
  void advance(const std::vector<std::vector<int32_t>> &tokens);
  /// New hypothesis i continues old hypothesis parent[i] (checked).
  void select(const std::vector<int32_t> &parent);

  size_t hypotheses() const { return sourceOf.size(); }
  /// Tokens hypothesis h has cached.
  int32_t cached(size_t h) const { return cachedLength[h]; }
  /// Rows of one hypothesis' cache slot (max_seq_len).
  int64_t capacity() const { return desc.max_seq_len; }

private:
  ModelDescription desc;
  bool hasSource;
  std::vector<int32_t> memoryStart, memoryLength, sourceOf, cachedLength;
};

} // namespace ls2c::generation

#endif // LS2C_GENERATION_DECODINGSTATE_H
