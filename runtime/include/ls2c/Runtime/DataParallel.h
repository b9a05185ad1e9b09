//===- DataParallel.h - one process per GPU, gradients summed by NCCL -----===//
//
// Data parallelism (issue 9; ls2c-gpu-step --data-parallel): one process
// per GPU, started as torchrun starts them (RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR, MASTER_PORT; Rendezvous.h). Every rank runs
// @accumulate_gradients on its own shard of the batch; the ranks' fp32
// gradient workspaces are then summed in place by one NCCL all-reduce
// (DistributedNccl.h), and @optimizer_step divides by micro_batches = world
// size, so every rank takes the same step from the mean of the ranks'
// gradients, as PyTorch's DistributedDataParallel does. That is the step of
// one GPU on the whole batch when every shard has the same number of loss
// tokens (each rank's loss is a mean over its own tokens). By default the
// sum runs bucket by bucket while backward goes on (bucketReducer with
// GradientReduceSchedule.h); sumGradients is the whole workspace at once.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_DATAPARALLEL_H
#define LS2C_RUNTIME_DATAPARALLEL_H

#include "ls2c/Runtime/GradientReduceSchedule.h"

#include <cstdint>
#include <memory>
#include <string>

namespace ls2c::runtime {

class DataParallel {
public:
  /// Reads the environment, selects CUDA device LOCAL_RANK and joins the
  /// NCCL communicator of all ranks (a collective: every rank calls it).
  /// Throws std::runtime_error naming the variable, the peer or the NCCL
  /// call; or, in a build without NCCL, saying so.
  static std::unique_ptr<DataParallel> fromEnvironment();
  virtual ~DataParallel() = default;

  virtual int rank() const = 0;
  virtual int worldSize() const = 0;
  /// Sums `elements` fp32 values at device pointer `gradients` over all
  /// ranks, in place, on the legacy default stream, and waits for it.
  /// Throws std::runtime_error (an NCCL error, a peer that died).
  virtual void sumGradients(void *gradients, uint64_t elements) = 0;
  /// A reducer that sums buckets of the fp32 gradient workspace
  /// (`workspaceElements` elements) over all ranks in place with NCCL, on a
  /// stream of its own (non-blocking, so the legacy default stream's work
  /// does not wait for it), each after an event on the caller's stream;
  /// join makes the caller's stream wait for them. Capturable in a CUDA
  /// graph. `reduceDType` F32 sums the fp32 values; BF16 rounds each bucket
  /// to bf16 in a staging buffer (2 bytes an element of the workspace),
  /// sums that and widens the sum back (runtime/lib/Distribution/
  /// BucketCast.h): half the bytes on the wire, bf16's rounding in the
  /// gradients. It must not outlive this object. Throws std::runtime_error (another dtype, allocation, NVRTC).
  virtual std::unique_ptr<BucketReducer>
  makeBucketReducer(DType reduceDType, uint64_t workspaceElements) = 0;
};

/// `pattern` with every "{rank}" replaced by `rank` (per-rank batch files).
std::string perRankPath(const std::string &pattern, int rank);

} // namespace ls2c::runtime

#endif // LS2C_RUNTIME_DATAPARALLEL_H
