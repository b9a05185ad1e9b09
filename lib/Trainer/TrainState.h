//===- TrainState.h - everything a training run carries between steps -----===//
#ifndef LS2C_LIB_TRAINER_TRAINSTATE_H
#define LS2C_LIB_TRAINER_TRAINSTATE_H

#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Reference/HostTensor.h"
#include "ls2c/Training/Workspace.h"

#include <map>
#include <string>

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
  /// Reads a checkpoint written by save(); throws TrainError when it does
  /// not match `desc` (parameter names, shapes, workspace size) or `seed`.
  static TrainState load(const std::string &path, const ModelDescription &desc,
                         const WorkspaceLayout &ws, uint64_t seed);
  /// Writes parameters by reference name (fp32), the moments and counters
  /// as safetensors, atomically.
  void save(const std::string &path, const ModelDescription &desc,
            const WorkspaceLayout &ws, uint64_t seed) const;

  reference::HostTensor stepTensor() const;
  /// Each trainable parameter (in `type`, shaped) and each buffer, by name.
  std::map<std::string, reference::HostTensor>
  computeParameters(const ModelDescription &desc, const WorkspaceLayout &ws,
                    reference::ElementType type) const;
};

} // namespace ls2c

#endif // LS2C_LIB_TRAINER_TRAINSTATE_H
