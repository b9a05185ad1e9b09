//===- SimulatedRanks.h - data parallelism's buckets on one GPU -----------===//
//
// ls2c-gpu-step --simulate-ranks N (issue 9, item 3): N ranks run one after
// another on one GPU, each @accumulate_gradients on its own batch, and the
// gradient buckets are "all-reduced" by the same GradientReduceSchedule as
// across GPUs: at each bucket's ready step its range of the rank's
// gradient workspace is added (cuBLAS saxpy, on the executor's stream) to a
// running sum. A bucket reduced before backward has finished its gradients
// would add partial values, one reduced twice or never would be counted
// wrong, so the parameters after K steps match one GPU on all N batches
// only when the bucket plan and its ordering are right.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_SIMULATEDRANKS_H
#define LS2C_RUNTIME_SIMULATEDRANKS_H

#include "ls2c/Runtime/GradientReduceSchedule.h"

#include <cstdint>

struct cublasContext;

namespace ls2c::runtime {

class SimulatedRankReducer : public BucketReducer {
public:
  /// A zeroed fp32 sum of `elements` elements (the gradient workspace).
  /// Throws std::runtime_error (allocation, cuBLAS).
  explicit SimulatedRankReducer(uint64_t elements);
  ~SimulatedRankReducer() override;
  SimulatedRankReducer(const SimulatedRankReducer &) = delete;
  SimulatedRankReducer &operator=(const SimulatedRankReducer &) = delete;

  /// sum[bucket] += gradients[bucket], on `stream`.
  void reduce(const GradientBucket &bucket, float *gradients, cudaStream_t stream) override;
  /// Nothing to join: the sums run on the caller's stream.
  void join(cudaStream_t) override {}
  /// Copies the sum of the ranks so far into `gradients` and zeroes the
  /// sum, on the legacy default stream.
  void takeSum(float *gradients);

private:
  void release() noexcept;
  uint64_t elements = 0;
  float *sum = nullptr;
  void *workspace = nullptr; ///< cuBLAS's, so that no call allocates in a capture
  cublasContext *blas = nullptr;
};

} // namespace ls2c::runtime

#endif // LS2C_RUNTIME_SIMULATEDRANKS_H
