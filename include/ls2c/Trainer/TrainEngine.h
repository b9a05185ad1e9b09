//===- TrainEngine.h - where the steps of `ls2c train` run ----------------===//
//
// `ls2c train` runs one loop on every device (Trainer.cpp): the data, resume,
// metrics, validation, checkpoints, time limit and signals are the loop's.
// An engine holds the optimizer state where the steps run and runs the
// description's train-step functions on it (ls2-train-step in Passes.td):
// @accumulate_gradients per micro-batch, @optimizer_step per step, and the
// dropout-free @forward (EvaluationModule.h) for validation.
//
//   - the CPU reference interpreter in f32 (ReferenceEngine.cpp);
//   - the compiled program on a CUDA GPU (lib/Trainer/Cuda), built into the
//     module ls2c-cuda.so that CudaTrainer.h opens at run time, so `ls2c`
//     itself links no CUDA driver and starts on machines without one.
//
// Both see the same batches (TrainingData.h) and dropout stream (seed, and
// the micro-batch's index as the offset), so their loss curves agree within
// the step tolerances of DESIGN.md. No MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TRAINER_TRAINENGINE_H
#define LS2C_TRAINER_TRAINENGINE_H

#include "ls2c/Trainer/PredictionScore.h"
#include "ls2c/Trainer/TrainState.h"
#include "ls2c/Trainer/TrainingData.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ls2c {

/// What @optimizer_step returned.
struct OptimizerStepResult {
  double gradNorm = 0;      ///< of the unscaled gradients (inf or NaN when not finite)
  double lr = 0;            ///< the step's learning rate
  bool finite = true;       ///< false: the step changed nothing but the loss scale
  double lossScale = 1;     ///< fp16's dynamic loss scale after the step (else 1)
};

/// Runs a description's train step on one device. Methods throw TrainError
/// for input the engine cannot take (a batch input its functions lack) and
/// DeviceError (Trainer.h) when the device fails (out of memory, a kernel
/// fault), naming the function or buffer.
class TrainEngine {
public:
  virtual ~TrainEngine() = default;

  /// What runs the steps, for the log: "cpu (reference interpreter, f32)",
  /// "cuda (NVIDIA H200, sm_90)".
  virtual std::string device() const = 0;

  /// Takes `state` (its weights, moments, loss scale, good and applied
  /// steps) as the state to train from; the engine may drop the host copy.
  virtual void setState(TrainState state) = 0;
  /// A copy of the current state, for a checkpoint; its `step` (the
  /// loop's count, skipped steps included) is left as setState gave it.
  virtual TrainState getState() = 0;

  /// The host work on a training micro-batch (the CUDA engine encodes it
  /// in its function's dtypes): the loop calls it on its prefetch thread
  /// while the engine runs the micro-batch before, and hands the result to
  /// accumulate() with the batch. Thread-safe; null: nothing to prepare.
  virtual std::shared_ptr<const void> prepare(const InputBatch &batch) const {
    (void)batch;
    return nullptr;
  }
  /// @accumulate_gradients on `batch` (`prepared`: what prepare() made of
  /// it), the gradients zeroed first when `firstMicroBatch`; dropout draws
  /// from (seed, dropoutOffset). Returns the micro-batch's loss (unscaled).
  virtual double accumulate(const InputBatch &batch, const std::shared_ptr<const void> &prepared,
                            bool firstMicroBatch, uint64_t seed, int64_t dropoutOffset) = 0;
  /// The gradients accumulated since the last zeroing, flat like the
  /// workspace and multiplied by the loss scale (as @accumulate_gradients
  /// leaves them; `ls2c step` reports the first step's).
  virtual std::vector<double> gradients() = 0;
  /// @optimizer_step over the gradients of `microBatches` micro-batches.
  virtual OptimizerStepResult optimizerStep(int64_t microBatches) = 0;

  /// Makes the current weights, cast to the compute dtype, those evaluate()
  /// runs: call before each evaluation's batches.
  virtual void beginEvaluation() = 0;
  /// The dropout-free @forward on `batch`: returns the mean loss over its
  /// labels that are not `ignoredLabel`; with `predictions`, scores the
  /// logits of those rows into it.
  virtual double evaluate(const InputBatch &batch, int64_t ignoredLabel,
                          PredictionScore *predictions) = 0;
};

} // namespace ls2c

#endif // LS2C_TRAINER_TRAINENGINE_H
