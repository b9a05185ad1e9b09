//===- PredictionScore.h - validation accuracy from logits ----------------===//
//
// What `ls2c train` and ls2c-gpu-train report beside the validation loss of
// encoder, encoder_decoder and vit models: the share of scored labels (those
// not ignored: -100, or padding_idx) that the logits' argmax predicts, and
// the negative log-likelihood without label smoothing (valid_nll_loss).
// No MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TRAINER_PREDICTIONSCORE_H
#define LS2C_TRAINER_PREDICTIONSCORE_H

#include <cstdint>

namespace ls2c {

struct PredictionScore {
  int64_t rows = 0;  ///< rows scored
  int64_t hits = 0;  ///< of them, rows whose argmax is the label
  double nll = 0;    ///< summed -log softmax(row)[label]

  /// Scores one row of `classes` logits against `label` (in [0, classes)).
  void add(const double *row, int64_t classes, int64_t label);
  double accuracy() const { return rows ? static_cast<double>(hits) / static_cast<double>(rows) : 0; }
};

} // namespace ls2c

#endif // LS2C_TRAINER_PREDICTIONSCORE_H
