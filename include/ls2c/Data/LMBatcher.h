//===- LMBatcher.h - packed next-token batches for causal language models --===//
//
// Cuts random windows of L + 1 consecutive ids from a token stream: the first
// L are the inputs, the last L the labels (next tokens). Windows are packed
// back to back (no padding), as the ls2 decoder's inputs expect:
//   input_ids, labels, position_ids  int32 [B * L]
//   cu_seqlens                       int32 [B + 1] = 0, L, 2L, ..., BL
// Window starts come from a 64-bit seeded std::mt19937_64, so a batcher
// restarted with the same seed and step count reproduces the same batches.
// No MLIR dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_DATA_LMBATCHER_H
#define LS2C_DATA_LMBATCHER_H

#include <cstdint>
#include <random>
#include <vector>

namespace ls2c {

struct TokenBatch {
  std::vector<int32_t> input_ids;
  std::vector<int32_t> position_ids;
  std::vector<int32_t> cu_seqlens;
  std::vector<int32_t> labels;
  int64_t numTokens() const { return static_cast<int64_t>(input_ids.size()); }
};

class LMBatcher {
public:
  /// `tokens` must outlive the batcher and hold at least seqLen + 1 ids;
  /// batchSequences >= 1, seqLen >= 1. Throws std::invalid_argument.
  LMBatcher(const std::vector<int32_t> &tokens, int64_t seqLen,
            int64_t batchSequences, uint64_t seed);

  /// The next random batch of batchSequences windows.
  TokenBatch next();
  /// Skips `count` batches (to resume at a step) without building them.
  void skip(int64_t count);

  /// Every window of the stream in order, non-overlapping, for evaluation:
  /// batch k covers windows [k * batchSequences, (k + 1) * batchSequences);
  /// the last batch may hold fewer. Returns false past the end.
  static bool sequentialBatch(const std::vector<int32_t> &tokens,
                              int64_t seqLen, int64_t batchSequences,
                              int64_t k, TokenBatch &out);

private:
  const std::vector<int32_t> &tokens;
  int64_t seqLen, batchSequences;
  std::mt19937_64 rng;
  std::uniform_int_distribution<int64_t> start;
};

} // namespace ls2c

#endif // LS2C_DATA_LMBATCHER_H
