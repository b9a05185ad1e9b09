//===- Batches.h - TrainingData's batches as device inputs ----------------===//
//
// A batch of `ls2c train`'s data (TrainingData.h: host tensors by input
// name) encoded in the dtypes of a function's arguments, so that encoding can
// run on a second thread while the GPU runs the previous step, and uploaded
// into buffers sized once at the arguments' bounds (the pointers repeat, so
// the executors' CUDA graphs replay). No MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TOOLS_GPUTRAIN_BATCHES_H
#define LS2C_TOOLS_GPUTRAIN_BATCHES_H

#include "ls2c/Runtime/DeviceTensors.h"
#include "ls2c/Trainer/TrainingData.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ls2c::gputrain {

struct EncodedInput {
  std::vector<uint8_t> bytes;
  std::vector<int64_t> shape;
  runtime::DType dtype = runtime::DType::I32;
};

struct EncodedBatch {
  std::map<std::string, EncodedInput> inputs;
  std::vector<int64_t> labels; ///< for scoring the logits
  int64_t tokens = 0;          ///< InputBatch::tokens
  int64_t scored = 0;          ///< labels that carry a loss
  int64_t droppedLabels = 0;   ///< InputBatch::droppedLabels
};

/// Encodes `batch` for `f` (every input by its argument's dtype). Throws
/// runtime::RuntimeError for an input `f` does not take or of another kind
/// (integer or float) than its argument.
EncodedBatch encodeBatch(const InputBatch &batch, const runtime::Function &f,
                         int64_t ignoredLabel);

/// Uploads `batch` into `inputs` (buffers kept at the arguments' bounds).
void uploadBatch(const EncodedBatch &batch, const runtime::Function &f,
                 std::map<std::string, runtime::DeviceTensor> &inputs);

} // namespace ls2c::gputrain

#endif // LS2C_TOOLS_GPUTRAIN_BATCHES_H
