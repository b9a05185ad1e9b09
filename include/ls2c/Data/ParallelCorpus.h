//===- ParallelCorpus.h - source/target pairs for translation -------------===//
//
// Sentence-aligned text (Multi30k: line i of train.en is the translation of
// line i of train.de; gzip files are read through zlib), and packed
// encoder-decoder batches of tokenized pairs, bucketed by length on both
// sides (Bucketing.h: at most maxBatchTokens source tokens and at most
// maxTargetBatchTokens target tokens per batch).
//
// Special-token conventions (fairseq's, which the encoder_decoder
// architecture follows; ids from fairseq's Dictionary by default):
//   source  src_ids = x_1 .. x_n EOS                (no BOS)
//   target  tgt_ids = START y_1 .. y_m              (decoder input; START is
//                     EOS in fairseq, `prev_output_tokens`)
//           labels  = y_1 .. y_m EOS                (tgt_ids shifted left)
// so label j is the token the decoder must produce after reading tgt_ids
// 0..j. Every label is a real token: packed batches have nothing to ignore.
// In a padded layout, labels at padding are `pad` (the encoder_decoder loss
// ignores padding_idx, not -100).
// Truncation (OverLength::Truncate) keeps the first maxSeqLen - 1 tokens of
// a side and then appends EOS (source) or ends the labels with EOS (target).
// No MLIR dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_DATA_PARALLELCORPUS_H
#define LS2C_DATA_PARALLELCORPUS_H

#include "ls2c/Data/Bucketing.h"
#include "ls2c/Data/CharCorpus.h" // DataError

#include <cstdint>
#include <string>
#include <vector>

namespace ls2c {

/// The whole content of a file, as bytes; a name ending in ".gz" is
/// decompressed with zlib (concatenated gzip members included). Throws
/// DataError naming the file: missing, a directory or not a regular file,
/// corrupt or truncated gzip data, or ".gz" in a build without zlib.
std::string readFileBytes(const std::string &path);

/// Every line of a text file, without its "\n" (and without a "\r" before
/// it), read with readFileBytes. A last line without "\n" still counts; an
/// empty file has no lines. `maxLines` >= 0 stops after that many lines.
/// Throws DataError as readFileBytes does.
std::vector<std::string> readTextLines(const std::string &path,
                                       int64_t maxLines = -1);

/// Aligned sentences: source[i] translates to target[i].
struct ParallelText {
  std::vector<std::string> source, target;
  int64_t size() const { return static_cast<int64_t>(source.size()); }
};

/// Reads both files (readTextLines). Throws DataError when their line counts
/// differ (naming both files and counts), or when either is unreadable.
/// `maxLines` >= 0 reads only the first maxLines pairs.
ParallelText loadParallelText(const std::string &sourcePath,
                              const std::string &targetPath,
                              int64_t maxLines = -1);

/// Special ids of the translation dictionaries (fairseq's defaults:
/// <s> = 0, <pad> = 1, </s> = 2; the tiny-transformer preset's padding_idx
/// is 1).
struct TranslationSpecials {
  int32_t bos = 0; ///< not used by the fairseq convention; kept for decoders
  int32_t pad = 1;
  int32_t eos = 2;
  /// The decoder's first input token. fairseq starts with EOS; set to bos for
  /// the (Hugging Face MarianMT/T5-like) "decoder_start_token_id" variant.
  int32_t decoderStart = 2;
};

/// One packed encoder-decoder batch: the encoder_decoder architecture's
/// inputs, all int32.
///   src_ids, src_position_ids  [S]      S = sum of source lengths (EOS incl.)
///   src_cu_seqlens             [B + 1]
///   tgt_ids, tgt_position_ids  [T]      T = sum of target lengths (START incl.)
///   tgt_cu_seqlens             [B + 1]
///   labels                     [T]      tgt_ids shifted left, EOS last
/// Sequence b of the source pairs with sequence b of the target.
struct TranslationBatch {
  std::vector<int32_t> src_ids, src_position_ids, src_cu_seqlens;
  std::vector<int32_t> tgt_ids, tgt_position_ids, tgt_cu_seqlens, labels;
  std::vector<int64_t> indices; ///< [B] the pairs' indices in the corpus

  int64_t batchSize() const { return static_cast<int64_t>(indices.size()); }
  int64_t sourceTokens() const { return static_cast<int64_t>(src_ids.size()); }
  int64_t targetTokens() const { return static_cast<int64_t>(tgt_ids.size()); }
  /// The source side as a TokenBatch (no labels) and the target side with
  /// its labels, e.g. for toPadded(source(), pad) and
  /// toPadded(target(), pad, /*labelPad=*/pad).
  TokenBatch source() const;
  TokenBatch target() const;
};

/// Bucketed translation batches of tokenized pairs (ids without specials:
/// the batcher adds EOS / START). Both span lists must have the same size;
/// the spans are copied, the ids they view must outlive the batcher. Lengths for bucketing are n + 1 on each side.
class TranslationBatcher {
public:
  /// `options` bound both sides (maxTarget* default to the source's; the
  /// encoder_decoder model's max_batch_tokens and max_seq_len apply to each
  /// side). minSeqLen counts specials too (an empty sentence has length 1).
  /// Throws std::invalid_argument for mismatched sizes or bad options.
  TranslationBatcher(const std::vector<TokenSpan> &source,
                     const std::vector<TokenSpan> &target,
                     const BucketingOptions &options,
                     const TranslationSpecials &specials, uint64_t seed);

  const BatchPlan &plan() const { return batchPlan; }
  int64_t numBatches() const { return batchPlan.numBatches(); }
  /// Batch k (0 <= k < numBatches()) of epoch `epoch`'s order.
  TranslationBatch batch(int64_t epoch, int64_t k) const;
  /// Plan batch b (not permuted), e.g. for evaluation in length order.
  TranslationBatch planBatch(int64_t b) const;

private:
  std::vector<TokenSpan> source, target;
  TranslationSpecials specials;
  BatchPlan batchPlan;
};

} // namespace ls2c

#endif // LS2C_DATA_PARALLELCORPUS_H
