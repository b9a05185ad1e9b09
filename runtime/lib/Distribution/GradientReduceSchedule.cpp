//===- GradientReduceSchedule.cpp - bucket all-reduces during backward ----===//
#include "ls2c/Runtime/GradientReduceSchedule.h"

#include <string>

namespace ls2c::runtime {

GradientReduceSchedule::GradientReduceSchedule(GradientBucketPlan plan, BucketReducer &reducer)
    : plan_(std::move(plan)), reducer_(reducer) {
  const size_t steps = plan_.readiness.stepCount;
  byStep_.resize(steps);
  for (size_t b = 0; b < plan_.buckets.size(); ++b) {
    int64_t at = plan_.buckets[b].readyStep;
    if (at < 0 || static_cast<size_t>(at) >= steps)
      throw RuntimeError("gradient bucket " + std::to_string(b) + ": ready step " +
                         std::to_string(at) + " is outside @" + plan_.readiness.function +
                         "'s " + std::to_string(steps) + " steps");
    byStep_[static_cast<size_t>(at)].push_back(b);
  }
}

void GradientReduceSchedule::afterStep(const Function &function, const Executor::Call &call,
                                       size_t step, cudaStream_t stream) {
  if (function.name != plan_.readiness.function)
    return;
  if (function.steps.size() != byStep_.size())
    throw RuntimeError("@" + function.name + " has " + std::to_string(function.steps.size()) +
                       " steps; its gradient bucket plan was made for " +
                       std::to_string(byStep_.size()));
  if (step == 0)
    reduced_ = 0;
  size_t result = 0;
  while (result < function.results.size() && function.results[result].name != "gradients")
    ++result;
  if (result == function.results.size() || function.results[result].dtype != DType::F32 ||
      result >= call.results.size())
    throw RuntimeError("@" + function.name + " has no fp32 result named 'gradients' to reduce");
  auto *gradients = static_cast<float *>(call.results[result]);
  for (size_t b : byStep_[step]) {
    reducer_.reduce(plan_.buckets[b], gradients, stream);
    ++reduced_;
  }
  if (step + 1 == byStep_.size())
    reducer_.join(stream);
}

} // namespace ls2c::runtime
