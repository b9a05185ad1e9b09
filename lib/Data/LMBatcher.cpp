//===- LMBatcher.cpp - packed next-token batches --------------------------===//
#include "ls2c/Data/LMBatcher.h"

#include <stdexcept>
#include <string>

namespace ls2c {

namespace {
void append(TokenBatch &batch, const std::vector<int32_t> &tokens,
            int64_t start, int64_t seqLen) {
  for (int64_t j = 0; j < seqLen; ++j) {
    batch.input_ids.push_back(tokens[static_cast<size_t>(start + j)]);
    batch.labels.push_back(tokens[static_cast<size_t>(start + j + 1)]);
    batch.position_ids.push_back(static_cast<int32_t>(j));
  }
  batch.cu_seqlens.push_back(static_cast<int32_t>(batch.input_ids.size()));
}

void checkSizes(const std::vector<int32_t> &tokens, int64_t seqLen,
                int64_t batchSequences) {
  if (seqLen < 1 || batchSequences < 1)
    throw std::invalid_argument("LMBatcher: seqLen " + std::to_string(seqLen) +
                                " and batchSequences " +
                                std::to_string(batchSequences) +
                                " must be >= 1");
  if (static_cast<int64_t>(tokens.size()) < seqLen + 1)
    throw std::invalid_argument("LMBatcher: " + std::to_string(tokens.size()) +
                                " tokens cannot hold a window of " +
                                std::to_string(seqLen + 1));
}
} // namespace

LMBatcher::LMBatcher(const std::vector<int32_t> &tokens, int64_t seqLen,
                     int64_t batchSequences, uint64_t seed)
    : tokens(tokens), seqLen(seqLen), batchSequences(batchSequences),
      rng(seed) {
  checkSizes(tokens, seqLen, batchSequences);
  start = std::uniform_int_distribution<int64_t>(
      0, static_cast<int64_t>(tokens.size()) - seqLen - 1);
}

TokenBatch LMBatcher::next() {
  TokenBatch batch;
  batch.cu_seqlens.push_back(0);
  for (int64_t b = 0; b < batchSequences; ++b)
    append(batch, tokens, start(rng), seqLen);
  return batch;
}

void LMBatcher::skip(int64_t count) {
  for (int64_t i = 0; i < count * batchSequences; ++i)
    (void)start(rng);
}

bool LMBatcher::sequentialBatch(const std::vector<int32_t> &tokens,
                                int64_t seqLen, int64_t batchSequences,
                                int64_t k, TokenBatch &out) {
  checkSizes(tokens, seqLen, batchSequences);
  int64_t windows = (static_cast<int64_t>(tokens.size()) - 1) / seqLen;
  int64_t first = k * batchSequences;
  if (k < 0 || first >= windows)
    return false;
  out = TokenBatch{};
  out.cu_seqlens.push_back(0);
  for (int64_t w = first; w < windows && w < first + batchSequences; ++w)
    append(out, tokens, w * seqLen, seqLen);
  return true;
}

} // namespace ls2c
