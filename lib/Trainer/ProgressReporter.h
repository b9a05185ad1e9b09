//===- ProgressReporter.h - progress line and metrics of a training run ---===//
#ifndef LS2C_LIB_TRAINER_PROGRESSREPORTER_H
#define LS2C_LIB_TRAINER_PROGRESSREPORTER_H

#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <string>

namespace ls2c {

/// Writes one JSON object per line to the metrics file:
///   {"step": 10, "loss": 3.91, "lr": 0.001, "grad_norm": 1.2,
///    "tokens_per_second": 5120.0, "finite": true, "elapsed_seconds": 2.5}
///   {"step": 100, "valid_loss": 2.71, "elapsed_seconds": 25.0}
/// (validation lines of encoder, encoder_decoder and vit models add
/// "valid_accuracy", and "valid_nll_loss" under label smoothing; step lines
/// of encoders with max_predictions add "dropped_labels", the labels the
/// step's batches left out to stay within it)
/// and on stderr a line per validation ("step 100: validation loss 2.7100"),
/// a line per skipped step ("step 7: skipped, gradients not finite, fp16
/// loss scale lowered to 32768") and, when enabled, a progress line (redrawn in place on a terminal, one
/// line per 5% of the run otherwise):
///   step 120/1000 [###-------] loss 2.4312 lr 9.8e-04 5230 tok/s ETA 2m51s
class ProgressReporter {
public:
  /// Starts a new metrics file, or, with resumeAfter >= 0, keeps the
  /// existing file's records up to that step (rewritten atomically) and
  /// appends after them (a run stopped after its last checkpoint repeats
  /// those steps). Throws
  /// TrainError when the metrics file cannot be written.
  ProgressReporter(const std::string &metricsPath, int64_t resumeAfter,
                   bool progress, int64_t totalSteps);
  /// `droppedLabels` < 0: not reported. `finite` false: the step changed
  /// nothing but the loss scale, which is `lossScale` after it (<= 0: the
  /// model has no loss scaling).
  void step(int64_t step, double loss, double lr, double gradNorm,
            double tokensPerSecond, bool finite, int64_t droppedLabels = -1,
            double lossScale = 0);
  /// `extra`: further metrics of the validation line, by key.
  void validation(int64_t step, double validLoss,
                  const std::map<std::string, double> &extra = {});
  void finish();

private:
  double elapsed() const;
  std::ofstream metrics;
  bool progress, terminal;
  int64_t totalSteps, firstStep = -1;
  double smoothedTokens = 0;
  std::chrono::steady_clock::time_point start;
};

} // namespace ls2c

#endif // LS2C_LIB_TRAINER_PROGRESSREPORTER_H
