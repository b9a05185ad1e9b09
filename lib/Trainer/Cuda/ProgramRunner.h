//===- ProgramRunner.h - a training program's functions called by name ----===//
//
// What the GPU trainers (CudaEngine.cpp in ls2c-cuda.so, ls2c-gpu-train)
// share around runtime::Executor: calls bound by argument and result name
// (DeviceTensors.h) so that state results replace the state and the calls'
// pointers repeat (CUDA graphs replay), the sinusoidal tables a program
// takes as buffers, and validation accuracy scored from device logits.
// No MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_LIB_TRAINER_CUDA_PROGRAMRUNNER_H
#define LS2C_LIB_TRAINER_CUDA_PROGRAMRUNNER_H

#include "ls2c/Runtime/DeviceTensors.h"
#include "ls2c/Runtime/Executor.h"
#include "ls2c/Trainer/PredictionScore.h"
#include "ls2c/Training/Workspace.h"

#include <map>
#include <string>
#include <vector>

namespace ls2c::gputrain {

/// Runs the functions of one program, binding arguments and results by name.
struct ProgramRunner {
  runtime::Executor executor;
  /// Per function, persistent buffers for results that are not state.
  std::map<std::string, std::map<std::string, runtime::DeviceTensor>> outputs;
  /// Spare buffers for state results (swapped with the state after a call).
  std::map<std::string, runtime::DeviceTensor> spare;

  explicit ProgramRunner(runtime::Program p) : executor(std::move(p)) {}

  /// Calls `name`: arguments from `state` then `inputs`; results named like
  /// state replace it (in place, or their old buffers become the spares);
  /// other results land in outputs[name]. Synchronizes. Throws
  /// runtime::RuntimeError naming the function when the device fails.
  std::map<std::string, runtime::DeviceTensor> &
  call(const std::string &name, std::map<std::string, runtime::DeviceTensor> &state,
       std::map<std::string, runtime::DeviceTensor> &inputs);
};

/// Uploads the sinusoidal tables `f` takes as Buffer arguments (rounded to
/// fp32 first, as the CPU reference does) into `inputs`, unless there.
void uploadBuffers(const runtime::Function &f, std::map<std::string, runtime::DeviceTensor> &inputs);

/// Casts the fp32 master workspace `master` (laid out as `ws`) to each
/// Parameter argument of `forward` in its dtype and uploads it into
/// `inputs` (buffers reused). Returns "" or the first parameter that is not
/// a workspace slot of its shape (nothing uploaded past it).
std::string uploadWeights(const runtime::Function &forward, const WorkspaceLayout &ws,
                          const std::vector<float> &master,
                          std::map<std::string, runtime::DeviceTensor> &inputs);

/// Scores the rows of `logits` [N, C] whose label is not `ignored`,
/// decoding only those rows (most of a masked LM's are not scored).
void scoreLogits(const runtime::DeviceTensor &logits, const std::vector<int64_t> &labels,
                 int64_t ignored, PredictionScore &out);

} // namespace ls2c::gputrain

#endif // LS2C_LIB_TRAINER_CUDA_PROGRAMRUNNER_H
