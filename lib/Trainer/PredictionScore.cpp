//===- PredictionScore.cpp - argmax hits and NLL of logits rows -----------===//
#include "ls2c/Trainer/PredictionScore.h"

#include <algorithm>
#include <cmath>

namespace ls2c {

void PredictionScore::add(const double *x, int64_t classes, int64_t label) {
  int64_t best = std::max_element(x, x + classes) - x;
  hits += best == label;
  ++rows;
  // log-sum-exp from the maximum, so large logits do not overflow.
  double top = x[best], sum = 0;
  for (int64_t c = 0; c < classes; ++c)
    sum += std::exp(x[c] - top);
  nll += top + std::log(sum) - x[label];
}

} // namespace ls2c
