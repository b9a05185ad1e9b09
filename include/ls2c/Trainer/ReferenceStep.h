//===- ReferenceStep.h - train steps on given weights and one batch -------===//
//
// `ls2c step`: runs K train steps of a described model from parameters and
// one batch given as safetensors, on the CPU reference backend or on a CUDA
// GPU (the TrainEngines of TrainEngine.h), and writes the losses, the first
// step's gradients and the updated parameters. It is how another framework
// (the JAX float64 oracle in test/oracle, PyTorch on the GPU machine) checks
// ls2c's numbers on identical inputs, and the GPU's against the CPU's.
//
// Files (names as docs/model-description.md lists them):
//   params  every trainable parameter by name, F32 or F64, the model's shape;
//           nothing else (buffers such as sinusoidal tables are computed).
//   batch   every input of @forward by name except dropout_seed and
//           dropout_offset: token ids, positions, cu_seqlens, labels as
//           integer dtypes (I64, I32, I16, I8, U8), ViT pixels as F32 or
//           F64; shapes as the graph takes them (packed sequences,
//           docs/dialect.md; ViT: cu_seqlens [0, n, 2n, ...], one sequence
//           of n = num_patches + 1 tokens per image).
//   output  F64 tensors: "loss" [K] (each step's loss, before its update),
//           "grad_norm" [K] (global norm of the unscaled gradients, before
//           clipping), "lr" [K] (the learning rate each update used),
//           "grad/<name>" (the first step's gradient of each trainable
//           parameter, before clipping) and "param/<name>" (each trainable
//           parameter after the K updates). Written atomically.
//   logits  (optional) F64 "logits" [T, vocab] (vit: [images, classes]):
//           what the dropout-free @forward scores at the given parameters,
//           rows in the batch's packed order, for comparisons with another
//           framework's logits (bench/hf_logits.py). Written atomically.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TRAINER_REFERENCESTEP_H
#define LS2C_TRAINER_REFERENCESTEP_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ls2c {

struct StepOptions {
  std::string model;        ///< model description (JSON)
  std::string params;       ///< initial trainable parameters (safetensors)
  std::string batch;        ///< the batch every step trains on (safetensors)
  std::string output;       ///< where the results go (safetensors)
  std::string logits;       ///< if set: the logits at the given parameters go here
  int64_t steps = 1;        ///< train steps, >= 1
  bool f64 = false;         ///< every float op in double (else as the IR's types)
  uint64_t dropoutSeed = 0; ///< Philox seed; step k uses dropout offset k
  /// "cpu", "cuda", or "auto": the GPU when one is usable, unless f64 or
  /// logits ask for the reference (which only the CPU computes).
  std::string device = "auto";
  std::string attention = "auto"; ///< cuda: kernels, cudnn or auto
  /// Called after each step with its number (1-based) and loss, if set.
  std::function<void(int64_t step, double loss)> onStep;
};

struct StepResult {
  std::vector<double> losses; ///< one per step
  std::string device;         ///< what ran them (TrainEngine::device)
};

/// Runs the steps and writes `output`. Both files are read and checked
/// before the train state is allocated, the parameters before the model is
/// compiled. Throws TrainError (declared
/// in Trainer.h) naming the file and tensor for a bad description, a
/// missing, extra, misshapen, mistyped or non-finite parameter, a missing,
/// unknown, mistyped or non-finite batch input, one over the bounds the
/// model is compiled for (ls2.max_shape from max_batch_tokens; sequences of
/// at most max_seq_len), ViT cu_seqlens other than one sequence of
/// num_patches + 1 tokens per image, or a batch the graph rejects; for
/// --device cuda without a usable GPU, or with f64 or logits. DeviceError
/// when the GPU fails.
StepResult runSteps(const StepOptions &options);

} // namespace ls2c

#endif // LS2C_TRAINER_REFERENCESTEP_H
