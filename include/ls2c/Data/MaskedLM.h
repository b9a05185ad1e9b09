//===- MaskedLM.h - BERT masked-language-model batches --------------------===//
//
// BERT's masking (Devlin et al. 2019, as Hugging Face's
// DataCollatorForLanguageModeling does it): every token that is not special
// is selected independently with probability maskProb (15%); a selected
// token's label is its original id and its input becomes
//   [MASK]                      with probability replaceWithMask   (80%)
//   a uniformly random id in    with probability replaceWithRandom (10%)
//     [randomLow, vocabSize)      (it may equal the original, as in BERT)
//   itself                      otherwise                          (10%).
// Every other label is ignoreIndex (-100, no loss).
//
// Masks are a function of (seed, epoch, sequence index) only, through
// SplitMix64: the same seed gives the same batches whatever the batch
// composition, and with dynamicMasking (RoBERTa's) each epoch draws new masks.
//
// maxPredictions (the description's max_predictions: the rows of the
// gathered masked-LM head) bounds a batch's labels: past the first
// maxPredictions selected tokens in batch order, each selected token is
// given back, its input restored to its id and its label to ignoreIndex,
// and counted as dropped. BERT's max_predictions_per_seq caps what it
// selects per sequence the same way; at 15% of a 16,384-token batch the
// labels are 2458 +- 46, so a bound of 3072 never drops one in practice.
//
// Sequences are laid out as BERT's pre-training input:
//   single sentence   [CLS] a_1 .. a_n [SEP]               token types 0 ... 0
//   sentence pair     [CLS] a_1 .. a_n [SEP] b_1 .. b_m [SEP]
//                                          types 0 for [CLS] a [SEP], 1 for b [SEP]
// and packed (Bucketing.h) into the `encoder` architecture's inputs. Too long
// inputs are truncated (OverLength::Truncate: single sentences keep their
// first tokens, pairs drop the last token of the longer side until they fit,
// BERT's truncate_seq_pair) or skipped (OverLength::Skip). No MLIR
// dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_DATA_MASKEDLM_H
#define LS2C_DATA_MASKEDLM_H

#include "ls2c/Data/Bucketing.h"

#include <cstdint>
#include <vector>

namespace ls2c {

struct MaskingOptions {
  double maskProb = 0.15;          ///< fraction of eligible tokens selected
  double replaceWithMask = 0.8;    ///< of the selected: become [MASK]
  double replaceWithRandom = 0.1;  ///< of the selected: become a random id
  int32_t vocabSize = 0;           ///< ids are in [0, vocabSize); >= 1
  int32_t maskId = 0;              ///< [MASK]
  int32_t randomLow = 0;           ///< random ids are drawn from [randomLow, vocabSize)
  std::vector<int32_t> specialIds; ///< never selected ([CLS], [SEP], [PAD], [MASK], ...)
  int32_t ignoreIndex = -100;      ///< label of tokens not selected
};

/// What one masking pass did (tokens counted).
struct MaskingCounts {
  int64_t tokens = 0;    ///< all tokens
  int64_t eligible = 0;  ///< tokens not special
  int64_t selected = 0;  ///< tokens with a label
  int64_t masked = 0;    ///< of the selected: replaced by [MASK]
  int64_t random = 0;    ///< of the selected: replaced by a random id
  int64_t unchanged = 0; ///< of the selected: kept
  /// Of the selected: given back to stay within maxPredictions (the batch's
  /// labels are selected - dropped).
  int64_t dropped = 0;
  MaskingCounts &operator+=(const MaskingCounts &o);
};

/// Masks ids[0 .. n) in place and writes labels[0 .. n), drawing from
/// SplitMix64(key). Throws std::invalid_argument for inconsistent options
/// (probabilities outside [0, 1], replaceWithMask + replaceWithRandom > 1,
/// vocabSize < 1, randomLow outside [0, vocabSize), maskId outside the
/// vocabulary).
MaskingCounts maskTokens(int32_t *ids, int32_t *labels, int64_t n,
                         const MaskingOptions &options, uint64_t key);

struct MaskedLMOptions {
  MaskingOptions masking;
  int32_t clsId = 0; ///< [CLS], first token of every sequence
  int32_t sepId = 0; ///< [SEP], after each sentence
  /// true: each epoch draws new masks (RoBERTa); false: the masks of a
  /// sequence are the same in every epoch (BERT's static masking).
  bool dynamicMasking = true;
  /// Most labels a batch keeps (the later selected tokens are dropped, see
  /// above); 0: no bound.
  int64_t maxPredictions = 0;
};

/// A packed masked-LM batch: the `encoder` architecture's inputs, int32.
///   input_ids       [T]      masked ids
///   token_type_ids  [T]      0 for the first sentence (with [CLS] and its
///                            [SEP]), 1 for the second (with its [SEP])
///   position_ids    [T]      0 .. n-1 within each sequence
///   cu_seqlens      [B + 1]
///   labels          [T]      original id where selected, else ignoreIndex
struct MaskedLMBatch : TokenBatch {
  std::vector<int32_t> token_type_ids;
  std::vector<int64_t> indices; ///< [B] the sequences' indices
  MaskingCounts counts;
};

/// Bucketed masked-LM batches of tokenized sentences (ids without specials).
class MaskedLMBatcher {
public:
  /// Single sentences. Lengths for bucketing are n + 2. The spans are
  /// copied; the ids they view must outlive the batcher. Every id must be in
  /// [0, vocabSize): otherwise DataError names the sequence and position.
  /// Throws std::invalid_argument for bad options, and when maxSeqLen < 3
  /// (pairs) or < 2 (single) since the specials must fit.
  MaskedLMBatcher(const std::vector<TokenSpan> &sentences,
                  const BucketingOptions &bucketing,
                  const MaskedLMOptions &options, uint64_t seed);
  /// Sentence pairs (first[i], second[i]); lengths n + m + 3.
  MaskedLMBatcher(const std::vector<TokenSpan> &first,
                  const std::vector<TokenSpan> &second,
                  const BucketingOptions &bucketing,
                  const MaskedLMOptions &options, uint64_t seed);

  const BatchPlan &plan() const { return batchPlan; }
  int64_t numBatches() const { return batchPlan.numBatches(); }
  /// Batch k of epoch `epoch`'s order (masks drawn for that epoch).
  MaskedLMBatch batch(int64_t epoch, int64_t k) const;
  /// Plan batch b with the masks of epoch `epoch` (evaluation in plan order).
  MaskedLMBatch planBatch(int64_t epoch, int64_t b) const;

  /// The unmasked layout of sequence i (specials, truncation applied):
  /// ids and token types, as the batch holds them before masking.
  void sequence(int64_t i, std::vector<int32_t> &ids,
                std::vector<int32_t> &tokenTypes) const;

private:
  void init(const BucketingOptions &bucketing);
  /// Gives back the selected tokens of `b` past its first `keep` labels.
  static void dropLabelsPast(MaskedLMBatch &b, int64_t keep, int32_t ignoreIndex);
  std::vector<TokenSpan> first, second; // second empty: single sentences
  bool pairs = false;
  MaskedLMOptions options;
  uint64_t seed;
  BatchPlan batchPlan;
};

} // namespace ls2c

#endif // LS2C_DATA_MASKEDLM_H
