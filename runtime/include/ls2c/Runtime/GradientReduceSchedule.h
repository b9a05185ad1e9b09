//===- GradientReduceSchedule.h - bucket all-reduces during backward ------===//
//
// Data parallelism's overlap (issue 9; PyTorch DDP's design, Li et al.,
// "PyTorch Distributed: Experiences on Accelerating Data Parallel
// Training", VLDB 2020, section 3.2.3): each gradient bucket of a
// GradientBucketPlan is reduced as soon as @accumulate_gradients has run
// the step after which the bucket is final (GradientBucket::readyStep), on
// a stream of the reducer's, while backward goes on. The schedule is an
// Executor step hook, so it works step by step and inside the CUDA graph of
// the call (the reductions are captured with the steps and replayed).
//
// What reduces a bucket is a BucketReducer: NCCL across GPUs
// (DataParallel.h) or simulated ranks on one GPU (SimulatedRanks.h).
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_GRADIENTREDUCESCHEDULE_H
#define LS2C_RUNTIME_GRADIENTREDUCESCHEDULE_H

#include "ls2c/Runtime/Executor.h"
#include "ls2c/Runtime/GradientBuckets.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace ls2c::runtime {

/// Reduces buckets of the fp32 gradient workspace.
class BucketReducer {
public:
  virtual ~BucketReducer() = default;
  /// Enqueues the reduction of `bucket` of the workspace at device pointer
  /// `gradients` (fp32), after the work already enqueued on `stream`.
  /// Throws RuntimeError (or the reducer's error type).
  virtual void reduce(const GradientBucket &bucket, float *gradients, cudaStream_t stream) = 0;
  /// Makes `stream` wait for every reduction enqueued so far.
  virtual void join(cudaStream_t stream) = 0;
};

class GradientReduceSchedule {
public:
  /// Reduces `plan`'s buckets in the runs of plan.readiness.function (other
  /// functions pass untouched) through `reducer`, which must outlive the
  /// schedule. The function's result named "gradients" (kind Workspace,
  /// F32) is the workspace reduced. Throws RuntimeError when a bucket's
  /// ready step is outside the function's steps.
  GradientReduceSchedule(GradientBucketPlan plan, BucketReducer &reducer);

  /// The Executor step hook (Executor::setStepHook): after step `step`,
  /// reduces the buckets ready there, in the plan's launch order; after the
  /// last step, joins the reducer to `stream`. Throws RuntimeError when the
  /// function has no fp32 "gradients" result or another step count than
  /// the plan's readiness says.
  void afterStep(const Function &function, const Executor::Call &call, size_t step,
                 cudaStream_t stream);

  const GradientBucketPlan &plan() const { return plan_; }
  /// Buckets reduced by the last run (all of them once it has ended).
  size_t reducedLastRun() const { return reduced_; }

private:
  GradientBucketPlan plan_;
  BucketReducer &reducer_;
  std::vector<std::vector<size_t>> byStep_; ///< bucket indices per ready step
  size_t reduced_ = 0;
};

} // namespace ls2c::runtime

#endif // LS2C_RUNTIME_GRADIENTREDUCESCHEDULE_H
