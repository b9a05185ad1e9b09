//===- Trainer.h - train a described model on the GPU or the CPU ----------===//
//
// `ls2c train`: compiles the description's train step (frontend,
// ls2-autodiff, ls2-train-step), then runs it step by step on a TrainEngine
// (TrainEngine.h): the compiled kernels on a CUDA GPU when there is one
// (device "auto"), else the CPU reference interpreter in f32:
// @accumulate_gradients per micro-batch, then @optimizer_step. Reports
// progress on stderr, writes metrics as JSON lines and checkpoints as
// safetensors (the same on both devices: a run resumes on either), and
// resumes from a checkpoint with exactly the loss trajectory of an
// uninterrupted run.
//
// Every architecture: decoder (GPT) models on character-level text or a
// token file, encoder (BERT) masked-LM on token files, encoder_decoder
// translation on parallel text, ViT on IDX images (TrainingData.h).
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TRAINER_TRAINER_H
#define LS2C_TRAINER_TRAINER_H

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ls2c {

struct TrainOptions {
  std::string model;           ///< model description (JSON)
  std::string data;            ///< text or token file; source text; IDX images
  std::string validData;       ///< validation data of the same kind ("": split --data)
  std::string target;          ///< encoder_decoder: target text, line by line with --data
  std::string validTarget;     ///< encoder_decoder: with validData
  std::string tokenizer;       ///< encoder_decoder: tokenizer model (source, and target unless:)
  std::string targetTokenizer; ///< encoder_decoder: the target's, when not shared
  std::string labels;          ///< vit: IDX labels of --data
  std::string validLabels;     ///< vit: with validData
  std::string outDir;          ///< metrics.jsonl and checkpoint.safetensors
  int64_t steps = 1000;        ///< optimizer steps to reach (in total)
  /// decoder, vit: sequences (images) per micro-batch, 0: as many as
  /// max_batch_tokens holds; encoder, encoder_decoder: at most this many
  /// per length bucket, 0: no limit but max_batch_tokens.
  int64_t batchSequences = 0;
  int64_t microBatches = 1;    ///< gradient accumulation steps per optimizer step
  int64_t evalInterval = 100;  ///< steps between validation evaluations (0: never)
  int64_t evalBatches = 16;    ///< validation batches per evaluation
  int64_t checkpointInterval = 0; ///< steps between checkpoints (0: only at the end)
  double timeLimitSeconds = 0; ///< stop (and checkpoint) after this wall time; 0: none
  uint64_t seed = 1234;        ///< initialization, batches and dropout
  bool resume = false;         ///< continue from outDir/checkpoint.safetensors
  bool progress = true;        ///< progress line on stderr
  /// "auto" (a CUDA GPU when one is usable, else the CPU), "cpu" or "cuda".
  std::string device = "auto";
  /// cuda: a train bundle of this description (`ls2c compile --arch`)
  /// instead of compiling in process ("" = compile).
  std::string bundle;
  std::string attention = "auto"; ///< cuda: kernels, cudnn or auto (Executor.h)
  bool graphs = true;             ///< cuda: replay CUDA graphs of the steps
};

/// What a run ended with, for callers and tests.
struct TrainResult {
  int64_t step = 0;          ///< optimizer steps completed
  int64_t firstStep = 0;     ///< the step this run started from (--resume: the checkpoint's)
  double lastLoss = 0;       ///< training loss of the last step
  double lastValidLoss = -1; ///< last validation loss (-1: none evaluated)
  double lastValidAccuracy = -1; ///< its accuracy (-1: none, or a decoder)
  double seconds = 0;        ///< wall time of this run
  std::string device;        ///< what ran the steps (TrainEngine::device)
};

/// A bad option, unusable data or checkpoint; what() is one line naming it.
class TrainError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The GPU failed (out of device memory, a kernel fault, a lost device);
/// what() names the function or buffer.
class DeviceError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// SIGINT or SIGTERM stopped the run after a step; its checkpoint is saved.
class TrainInterrupted : public std::runtime_error {
public:
  TrainInterrupted(const std::string &what, int signal)
      : std::runtime_error(what), signal(signal) {}
  /// The signal that stopped the run (SIGINT or SIGTERM).
  int signal;
};

/// Runs training. Throws TrainError for bad input (ModelDescription, data
/// and checkpoint errors included; --device cuda without a usable GPU) and
/// TrainInterrupted when a signal stopped it; DeviceError when the GPU
/// fails.
TrainResult train(const TrainOptions &options);

} // namespace ls2c

#endif // LS2C_TRAINER_TRAINER_H
