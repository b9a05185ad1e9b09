//===- GpuTrainOptions.h - ls2c-gpu-train's command line ------------------===//
//
// The options of ls2c-gpu-train: the bundles, the data options of `ls2c
// train` (TrainOptions, the same names and meaning, so both feed the same
// batches through loadTrainingData), and the GPU trainer's own. Defaults
// that differ from `ls2c train` are the ones ls2c-gpu-train has always had
// (--seed 1, --eval-batches 0 = the whole validation set, no evaluation
// but before and after training unless --eval-interval). No MLIR, no CUDA
// call: parsed before the GPU is touched.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TOOLS_GPUTRAIN_GPUTRAINOPTIONS_H
#define LS2C_TOOLS_GPUTRAIN_GPUTRAINOPTIONS_H

#include "ls2c/Runtime/Executor.h"
#include "ls2c/Trainer/Trainer.h"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ls2c::gputrain {

struct Options {
  std::string bundle, evalBundle, metrics;
  /// --save: the final checkpoint (Checkpoint.h); "" writes none.
  std::string save;
  /// The data options as `ls2c train` takes them (model: the bundle's path,
  /// for messages); data.seed, data.batchSequences and data.microBatches too.
  TrainOptions data;
  int64_t steps = 0;
  int64_t evalInterval = 0; ///< 0: evaluate only before and after training
  int64_t evalBatches = 0;  ///< 0: the whole validation set
  int64_t logInterval = 50;
  double timeLimit = 0; ///< seconds of training; 0 = none
  bool graphs = true;   ///< the executors' CUDA graphs (--no-graphs)
  /// --attention; auto when this build has cuDNN.
  runtime::AttentionBackend attention = runtime::cudnnAttentionAvailable()
                                            ? runtime::AttentionBackend::Auto
                                            : runtime::AttentionBackend::Kernels;
};

/// A usage or input problem (exit status 2); what() names the option or file
/// and the rule.
class InputError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

extern const char *const kUsage;

/// Parses argv into `o`. Returns false for --help (print kUsage, exit 0).
/// Throws InputError.
bool parseOptions(int argc, char **argv, Options &o);

} // namespace ls2c::gputrain

#endif // LS2C_TOOLS_GPUTRAIN_GPUTRAINOPTIONS_H
