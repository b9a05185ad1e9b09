//===- Checkpoint.h - the safetensors checkpoint of a training run --------===//
//
// What `ls2c train` (TrainState::save) and ls2c-gpu-train (--save) write, so
// that either's checkpoint loads wherever the other's does (`ls2c train
// --resume`, `ls2c convert --to-hf`, generation): every trainable parameter
// by its reference name (ParameterLayout) in F32, shaped; the Adam moments
// as flat F32 workspaces "ls2c.optimizer.exp_avg" and
// "ls2c.optimizer.exp_avg_sq"; and in the metadata the model's name, the
// counters and the run key (decimal strings; the loss scale as a hexadecimal
// float, which round-trips). Written atomically. No MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TRAINER_CHECKPOINT_H
#define LS2C_TRAINER_CHECKPOINT_H

#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Training/Workspace.h"

#include <cstdint>
#include <string>

namespace ls2c {

/// What decides the batch stream: a resumed run must use the same.
struct CheckpointRunKey {
  uint64_t seed;
  int64_t batchSequences, microBatches;
  /// The training examples: "N tokens, fnv1a64 H" (TrainingData.h's
  /// dataFingerprint). A checkpoint without one (written before it existed)
  /// resumes on any.
  std::string data;
  /// What maps text to ids (TrainingData::vocabulary, Vocabulary.h), written
  /// as metadata "ls2c.vocabulary" when known: `ls2c generate` refuses
  /// another mapping, --resume another vocabulary.
  std::string vocabulary = {};
};

/// The optimizer's counters at the checkpoint.
struct CheckpointCounters {
  int64_t step = 0;         ///< iterations run (including skipped ones)
  int64_t appliedSteps = 0; ///< optimizer updates applied
  int64_t goodSteps = 0;    ///< clean steps since the loss scale last changed
  double lossScale = 1;
};

/// Writes the checkpoint of `desc` to `path`: `master`, `expAvg` and
/// `expAvgSq` each hold ws.totalElements values. Throws TrainError when the
/// file cannot be written.
void writeCheckpoint(const std::string &path, const ModelDescription &desc,
                     const WorkspaceLayout &ws, const double *master, const double *expAvg,
                     const double *expAvgSq, const CheckpointCounters &counters,
                     const CheckpointRunKey &key);
/// The same from fp32 state (the GPU trainer's, as downloaded): written as
/// it is, with no widened host copy (3 x 10.4 GB at 1.3B parameters).
void writeCheckpoint(const std::string &path, const ModelDescription &desc,
                     const WorkspaceLayout &ws, const float *master, const float *expAvg,
                     const float *expAvgSq, const CheckpointCounters &counters,
                     const CheckpointRunKey &key);

} // namespace ls2c

#endif // LS2C_TRAINER_CHECKPOINT_H
