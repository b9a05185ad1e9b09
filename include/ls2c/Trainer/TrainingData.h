//===- TrainingData.h - what `ls2c train` feeds each architecture ---------===//
//
// The training and validation batches of `ls2c train`, one source per
// architecture, as the inputs of the model's @forward by argument name
// (ls2.name; int32 unless noted; T tokens, B sequences or images):
//
//   decoder          input_ids, position_ids, labels [T], cu_seqlens [B + 1]
//                    random windows of max_seq_len + 1 ids of one stream:
//                    a text's characters or a token file (LMBatcher.h)
//   encoder          input_ids, token_type_ids, position_ids, labels [T]
//                    (-100: no loss), cu_seqlens [B + 1]: a token file's
//                    sequences cut into segments of at most max_seq_len - 2
//                    tokens, laid out [CLS] s [SEP] and masked anew each
//                    epoch (MaskedLM.h), bucketed by length (Bucketing.h)
//   encoder_decoder  src_ids, src_position_ids [S], src_cu_seqlens [B + 1],
//                    tgt_ids, tgt_position_ids, labels [T],
//                    tgt_cu_seqlens [B + 1]: parallel text tokenized with a
//                    tokenizer model (Tokenizer.h), pairs bucketed by length
//                    on both sides (ParallelCorpus.h)
//   vit              pixels [B, C, S, S] (compute dtype), cu_seqlens [B + 1],
//                    labels [B]: IDX images and labels (ImagePatches.h),
//                    normalized as timm's ViT (mean 0.5, std 0.5)
//
// Token ids of encoder and encoder_decoder data are the tokenizer's ids
// shifted by kNumSpecialIds, making room for the special tokens before them:
//   encoder          [PAD] 0, [CLS] 1, [SEP] 2, [MASK] 3
//   encoder_decoder  <s> 0, <pad> 1, </s> 2, <unk> 3 (fairseq's Dictionary)
// so the model's vocab must be at least the tokenizer's vocab_size + 4.
//
// Validation: a second data set of the same kind (--valid-data ...), or the
// last 10% of the training examples (stream ids, segments, pairs, images).
// Micro-batch i of a run depends only on the data, the options, the seed and
// i, so a resumed run repeats the batches of an uninterrupted one; validation
// batches are the same at every evaluation (fixed masks). No MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TRAINER_TRAININGDATA_H
#define LS2C_TRAINER_TRAININGDATA_H

#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Reference/HostTensor.h"
#include "ls2c/Trainer/Trainer.h"

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace ls2c {

/// Special ids before the tokenizer's ids in encoder and encoder_decoder data.
constexpr int32_t kNumSpecialIds = 4;

/// One micro-batch: @forward's data inputs by name (shapes above).
struct InputBatch {
  std::map<std::string, reference::HostTensor> inputs;
  int64_t tokens = 0; ///< tokens the model runs (vit: images x (patches + 1))
  /// Labels the data left out to keep the batch within the description's
  /// max_predictions (masked LM only; MaskedLM.h).
  int64_t droppedLabels = 0;
};

class TrainingData {
public:
  virtual ~TrainingData();
  /// Identifies the training examples for --resume's check (RunKey::data),
  /// e.g. "1003854 tokens, fnv1a64 0123456789abcdef".
  virtual std::string fingerprint() const = 0;
  /// What maps text to the model's ids (Vocabulary.h), recorded in
  /// checkpoints for `ls2c generate` to check; empty when none is known
  /// (images, token files without a tokenizer fingerprint).
  virtual std::string vocabulary() const { return {}; }
  /// Sequences (images) a micro-batch holds at most, as checkpoints record
  /// it (RunKey::batchSequences); 0: bounded by max_batch_tokens only.
  virtual int64_t batchSequences() const = 0;
  /// Makes the next next() return micro-batch `index` of the run (0-based:
  /// step x micro-batches + micro-batch). Call once, before next().
  virtual void seek(int64_t index) = 0;
  virtual InputBatch next() = 0;
  /// Validation batch k (0, 1, ...) in a fixed order; false past the last.
  virtual bool validBatch(int64_t k, InputBatch &out) const = 0;
  /// One line for the progress output: examples, batches, what was cut.
  virtual std::string summary() const = 0;
  /// The label value that carries no loss: -100, or padding_idx for
  /// encoder_decoder.
  virtual int64_t ignoredLabel() const { return -100; }
};

/// Loads the data `options` names for `desc`'s architecture (the decoder:
/// --data; encoder: --data, --valid-data token files; encoder_decoder:
/// --data, --target, --tokenizer and optionally --target-tokenizer,
/// --valid-data, --valid-target; vit: --data, --labels and optionally
/// --valid-data, --valid-labels). `options.model` names the description in
/// messages. Throws TrainError naming the file or option and the rule: a
/// missing or malformed file, data of another kind than the architecture
/// trains on, an option the architecture does not take, ids beyond the
/// model's vocabulary, labels beyond num_classes, too few examples to split.
std::unique_ptr<TrainingData> loadTrainingData(const TrainOptions &options,
                                               const ModelDescription &desc);

/// "N <unit>, fnv1a64 H", H over the concatenated `parts`: the form
/// RunKey::data takes.
std::string dataFingerprint(int64_t count, const char *unit,
                            std::initializer_list<std::string_view> parts);

} // namespace ls2c

#endif // LS2C_TRAINER_TRAININGDATA_H
