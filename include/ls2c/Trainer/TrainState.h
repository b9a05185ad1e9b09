//===- TrainState.h - everything a training run carries between steps -----===//
//
// The host copy of a run's optimizer state: what a fresh run starts from,
// what a checkpoint holds (Checkpoint.h) and what a TrainEngine takes and
// gives back (TrainEngine.h). No MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TRAINER_TRAINSTATE_H
#define LS2C_TRAINER_TRAINSTATE_H

#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Reference/HostTensor.h"
#include "ls2c/Trainer/Checkpoint.h"
#include "ls2c/Training/Workspace.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ls2c {

/// The optimizer state as the train-step functions take it: flat fp32
/// workspaces [totalElements] and rank-0 counters.
struct TrainState {
  reference::HostTensor master, expAvg, expAvgSq;
  reference::HostTensor lossScale; ///< f32 rank 0
  reference::HostTensor goodSteps; ///< i64 rank 0: clean steps since the scale last changed
  int64_t step = 0;         ///< iterations run (including skipped ones)
  int64_t appliedSteps = 0; ///< optimizer updates applied (bias correction, schedule)

  /// Initialized parameters (seeded), zero moments, the initial loss scale
  /// (65536 for fp16 as GradScaler, else 1).
  static TrainState fresh(const ModelDescription &desc,
                          const WorkspaceLayout &ws, uint64_t seed);
  /// What decides the batch stream: a resumed run must use the same.
  using RunKey = CheckpointRunKey;
  /// Throws TrainError naming the first model field that differs between a
  /// checkpoint's recorded description (`written`, JSON) and `desc`;
  /// changed optimizer fields are noted on stderr.
  static void compareDescriptions(const std::string &path, const std::string &written,
                                  const ModelDescription &desc);
  /// Reads a checkpoint written by save(); throws TrainError when it does
  /// not match `desc` (model name, parameter names and shapes) or `key`, or
  /// holds malformed counters or non-finite values.
  static TrainState load(const std::string &path, const ModelDescription &desc,
                         const WorkspaceLayout &ws, const RunKey &key);
  /// Writes parameters by reference name (fp32), the moments, counters and
  /// run key as safetensors, atomically (Checkpoint.h).
  void save(const std::string &path, const ModelDescription &desc,
            const WorkspaceLayout &ws, const RunKey &key) const;

  reference::HostTensor stepTensor() const;
  /// Each trainable parameter (in `type`, shaped) and each buffer, by name.
  /// Buffers (sinusoidal tables) are rounded to fp32 unless `precision` is
  /// F64.
  std::map<std::string, reference::HostTensor>
  computeParameters(const ModelDescription &desc, const WorkspaceLayout &ws,
                    reference::ElementType type,
                    reference::Precision precision =
                        reference::Precision::F32) const;
};

} // namespace ls2c

#endif // LS2C_TRAINER_TRAINSTATE_H
