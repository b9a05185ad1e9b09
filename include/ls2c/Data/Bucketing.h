//===- Bucketing.h - length-bucketed batches of variable-length sequences -===//
//
// Batching as fairseq does it (`data_utils.batch_by_size` over indices from
// `ordered_indices`, then `EpochBatchIterator` shuffling the batch list each
// epoch), written for ls2c's packed layout:
//
//   1. every sequence's length (in tokens, as it will be packed: special
//      tokens included) is clipped to `maxSeqLen` (Truncate) or the sequence
//      is dropped (Skip); either is counted;
//   2. sequences are sorted by length (pairs: source length, then target
//      length), ties broken by a permutation drawn from the seed, so equal
//      lengths do not always meet in file order;
//   3. consecutive sequences of that order fill a batch greedily until one
//      more would exceed `maxBatchTokens` (on each side, for pairs) or
//      `maxSequences`; the batches are fixed for the whole run;
//   4. each epoch visits every batch once, in an order that is a seeded
//      permutation of the batch list: a function of (seed, epoch) only.
//
// Token counting: ls2c packs sequences back to back without padding
// (`cu_seqlens`), so a batch costs the sum of its lengths (Packed). For a
// padded layout (Padded) a batch costs batch size x its longest length,
// rounded up to `padMultiple`, which is what fairseq counts.
//
// Randomness is SplitMix64 with our own unbiased bounded draws and our own
// Fisher-Yates shuffle (std::shuffle and std::uniform_int_distribution are
// implementation-defined), so the same seed gives the same batches with any
// standard library. No MLIR dependency.
//
// Sequences are passed as TokenSpan views (a pointer and a length of int32
// token ids), so any storage plugs in: std::vector<std::vector<int32_t>>
// (spansOf), a SequenceList, or a memory-mapped token file.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_DATA_BUCKETING_H
#define LS2C_DATA_BUCKETING_H

#include "ls2c/Data/LMBatcher.h" // TokenBatch

#include <cstdint>
#include <string>
#include <vector>

namespace ls2c {

//===----------------------------------------------------------------------===//
// Deterministic randomness
//===----------------------------------------------------------------------===//

/// SplitMix64 (Steele, Lea, Flood 2014): a 64-bit generator whose stream is
/// fully specified, used wherever batches must be reproducible from a seed.
class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state(seed) {}
  uint64_t next();
  /// Uniform in [0, 1) with 53 random bits.
  double uniform();
  /// Uniform in [0, n) without modulo bias (rejection); n >= 1.
  uint64_t below(uint64_t n);

private:
  uint64_t state;
};

/// Combines a seed with a stream key (epoch, sequence index, ...) into a new
/// well-mixed seed; mixSeed(s, a) != mixSeed(s, b) for a != b in practice.
uint64_t mixSeed(uint64_t seed, uint64_t key);

/// A uniformly random permutation of 0 .. n-1 (Fisher-Yates over SplitMix64).
std::vector<int64_t> seededPermutation(int64_t n, uint64_t seed);

//===----------------------------------------------------------------------===//
// Sequences
//===----------------------------------------------------------------------===//

/// A read-only view of one sequence of token ids; it owns nothing.
struct TokenSpan {
  const int32_t *data = nullptr;
  int64_t size = 0;
  int32_t operator[](int64_t i) const { return data[i]; }
  const int32_t *begin() const { return data; }
  const int32_t *end() const { return data + size; }
};

/// Views of every sequence of `sequences` (which must outlive them).
std::vector<TokenSpan>
spansOf(const std::vector<std::vector<int32_t>> &sequences);

/// Many sequences in one flat id array with offsets (CSR): sequence i is
/// ids[offsets[i] .. offsets[i + 1]). Owns its ids; spans() views them (the
/// views stay valid until the next add()).
struct SequenceList {
  std::vector<int32_t> ids;
  std::vector<int64_t> offsets{0};

  void add(const int32_t *data, int64_t size);
  void add(const std::vector<int32_t> &sequence) {
    add(sequence.data(), static_cast<int64_t>(sequence.size()));
  }
  int64_t size() const { return static_cast<int64_t>(offsets.size()) - 1; }
  TokenSpan operator[](int64_t i) const;
  std::vector<TokenSpan> spans() const;
};

/// The lengths of `sequences`, in tokens.
std::vector<int64_t> lengthsOf(const std::vector<TokenSpan> &sequences);

//===----------------------------------------------------------------------===//
// Batch plans
//===----------------------------------------------------------------------===//

/// What happens to a sequence longer than maxSeqLen.
enum class OverLength {
  Truncate, ///< keep its first maxSeqLen tokens (batchers put specials back)
  Skip,     ///< leave it out of every batch
};

/// How a batch's size is measured against maxBatchTokens.
enum class TokenCount {
  Packed, ///< sum of the sequence lengths (ls2c's layout: no padding)
  Padded, ///< sequences x round_up(longest length, padMultiple)
};

struct BucketingOptions {
  /// Upper bound on a batch's tokens (see TokenCount); the model's
  /// max_batch_tokens. For pairs, the bound on the source side. >= 1.
  int64_t maxBatchTokens = 0;
  /// Longest sequence, in tokens as packed (specials included); the model's
  /// max_seq_len. For pairs, the source side. 1 <= maxSeqLen <= maxBatchTokens.
  int64_t maxSeqLen = 0;
  /// Pairs only: the target side's bounds; 0 means "same as the source's".
  int64_t maxTargetBatchTokens = 0;
  int64_t maxTargetSeqLen = 0;
  /// Sequences shorter than this (either side) are skipped and counted:
  /// a causal LM sequence needs 2 tokens to have one label. >= 0.
  int64_t minSeqLen = 1;
  /// At most this many sequences per batch; 0 = no limit.
  int64_t maxSequences = 0;
  OverLength overLength = OverLength::Truncate;
  TokenCount count = TokenCount::Packed;
  /// Padded counting only: padded width is a multiple of this. >= 1.
  int64_t padMultiple = 1;
};

/// The fixed batches of a run and the statistics of what was dropped.
struct BatchPlan {
  /// Sequence indices per batch, each batch in ascending (source) length.
  /// Every kept sequence is in exactly one batch.
  std::vector<std::vector<int64_t>> batches;
  /// Per input sequence: its length as batched (clipped to maxSeqLen when
  /// truncated), or -1 when skipped. For pairs, the source side.
  std::vector<int64_t> lengths;
  /// Pairs only: the target side, as `lengths`. Empty for single sequences.
  std::vector<int64_t> targetLengths;
  std::vector<int64_t> skippedTooLong;  ///< indices, ascending
  std::vector<int64_t> skippedTooShort; ///< indices, ascending
  int64_t truncated = 0; ///< sequences (pairs: pairs) clipped to maxSeqLen
  uint64_t seed = 0;
  BucketingOptions options;

  int64_t numBatches() const { return static_cast<int64_t>(batches.size()); }
  /// Sequences in some batch.
  int64_t numSequences() const;
  /// Tokens of batch b as the options count them (source side for pairs;
  /// targetTokens for the other).
  int64_t tokens(int64_t b) const;
  int64_t targetTokens(int64_t b) const;
  /// The order in which epoch `epoch` visits the batches: a permutation of
  /// 0 .. numBatches()-1 that depends only on (seed, epoch).
  std::vector<int64_t> epochOrder(int64_t epoch) const;
  /// One line: "N sequences in B batches; T truncated to L tokens; S skipped
  /// (longer than L); E skipped (shorter than M)".
  std::string summary() const;
};

/// Plans batches of single sequences of the given lengths (tokens as packed).
/// Throws std::invalid_argument for inconsistent options (naming the field
/// and the rule) and for a negative length.
BatchPlan planBatches(const std::vector<int64_t> &lengths,
                      const BucketingOptions &options, uint64_t seed);

/// Plans batches of (source, target) pairs: both sides bounded, each by its
/// own maxBatchTokens and maxSeqLen; sorted by source length, then target
/// length. A pair is skipped when either side is (too long under Skip, or
/// too short); truncation clips each side separately and counts the pair
/// once. Throws std::invalid_argument as planBatches, and when the two
/// length lists differ in size.
BatchPlan planPairBatches(const std::vector<int64_t> &sourceLengths,
                          const std::vector<int64_t> &targetLengths,
                          const BucketingOptions &options, uint64_t seed);

//===----------------------------------------------------------------------===//
// Packed and padded tensors
//===----------------------------------------------------------------------===//

/// The causal-LM batch of `indices` (a plan's batch) packed back to back:
///   input_ids     int32 [T]      the sequence's first min(n, maxSeqLen) ids
///   position_ids  int32 [T]      0 .. n-1 within each sequence
///   cu_seqlens    int32 [B + 1]  0, n_0, n_0 + n_1, ..., T
///   labels        int32 [T]      the next id in the same sequence; -100 at
///                                each sequence's last token (no loss)
/// T = sum of the (clipped) lengths, B = indices.size(). This is the
/// `decoder` architecture's input set. Throws std::out_of_range for an index
/// outside `sequences`, std::invalid_argument for maxSeqLen < 1.
TokenBatch packCausalLM(const std::vector<TokenSpan> &sequences,
                        const std::vector<int64_t> &indices, int64_t maxSeqLen);

/// A padded [B, W] layout of a packed batch, row-major (sequence b's token
/// j at b * W + j). W = round_up(longest sequence, padMultiple).
struct PaddedBatch {
  int64_t batchSize = 0; ///< B
  int64_t width = 0;     ///< W
  std::vector<int32_t> input_ids;      ///< [B, W]; padId at padding
  std::vector<int32_t> position_ids;   ///< [B, W]; 0 at padding
  std::vector<int32_t> labels;         ///< [B, W]; labelPad at padding; empty if the packed batch had none
  std::vector<int32_t> token_type_ids; ///< [B, W]; 0 at padding; empty if none given
  /// uint8 [B, W]: 1 where the position is padding, 0 at a real token (the
  /// sense of fairseq's / PyTorch's key_padding_mask; Hugging Face's
  /// attention_mask is 1 - padding_mask).
  std::vector<uint8_t> padding_mask;
  std::vector<int32_t> lengths; ///< [B] real tokens per row
};

/// Unpacks `packed` (cu_seqlens must start at 0, be non-decreasing and end at
/// input_ids.size(); position_ids and labels, when present, as long as
/// input_ids) into rows of width W. `tokenTypes` (optional, as long as
/// input_ids) become token_type_ids. labelPad is -100 for BERT/GPT, the
/// padding id for encoder-decoder labels. Throws std::invalid_argument for
/// an inconsistent packed batch or padMultiple < 1.
PaddedBatch toPadded(const TokenBatch &packed, int32_t padId,
                     int32_t labelPad = -100, int64_t padMultiple = 1,
                     const std::vector<int32_t> *tokenTypes = nullptr);

} // namespace ls2c

#endif // LS2C_DATA_BUCKETING_H
