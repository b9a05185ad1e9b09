//===- SequenceParallelRunner.h - sequence-parallel attention on GPUs -----===//
//
// Runs a SchedulePlan (DistAttn or the zigzag ring, ls2c/Parallel) with the
// kernels of a `ls2c compile --program=sequence-parallel` bundle
// (SequenceParallelModule.h): per step, each rank fetches the chunks it
// lacks (SequenceTransfers.h), runs its blocks, gives back what belongs to
// other ranks, and absorbs what it was given (partial outputs merged with
// their lse in f32; dq, dk, dv partial sums accumulated in f32). No MLIR.
//
// Layout: a batch of B sequences of S tokens each; chunk c of the plan holds
// tokens [plan.chunkBegin(c), plan.chunkEnd(c)) of every sequence, packed
// [B * len_c, heads, headDim] in the compute dtype, sequence b at rows
// [b len_c, (b+1) len_c); lse is f32 [B * len_c, heads]. A chunk of length 0
// (all padding) takes part in nothing.
//
// Streams: with a Transport that overlaps (NCCL), step t + 1's fetches run
// on the communication stream while step t's blocks run on the compute
// stream (receive slots double-buffered by step parity), a step's gives go
// out when its blocks (and merges) finish and are absorbed after the next
// step's blocks; events order everything, the host never waits. Simulated ranks
// (CopyTransport) run step by step on one stream.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TOOLS_SEQPARALLEL_SEQUENCEPARALLELRUNNER_H
#define LS2C_TOOLS_SEQPARALLEL_SEQUENCEPARALLELRUNNER_H

#include "ls2c/Parallel/SequenceTransfers.h"
#include "ls2c/Runtime/Executor.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

namespace ls2c::seqpar {

struct Shape {
  int64_t batch = 1, seq = 0; ///< B sequences of S tokens
  int64_t heads = 0, kvHeads = 0, headDim = 0;
  bool causal = false;
  runtime::DType dtype = runtime::DType::BF16;
};

/// A device range one side of a message reads or writes.
struct Span {
  void *ptr = nullptr;
  size_t bytes = 0;
};

class Runner;

/// Throws runtime::RuntimeError "what: CUDA's message" when `e` is an error.
void checkCuda(cudaError_t e, const char *what);

/// Moves a step's transfers between ranks. `parts(t, sending)` gives a
/// transfer's spans on its sender (sending) or receiver, in one order.
class Transport {
public:
  virtual ~Transport() = default;
  using Parts = std::function<std::vector<Span>(const parallel::Transfer &, bool sending)>;
  /// Enqueues `list` on `stream`; only the transfers from or to this
  /// process's ranks are its business.
  virtual void exchange(const std::vector<parallel::Transfer> &list, const Parts &parts,
                        cudaStream_t stream) = 0;
  /// Whether exchanges run beside compute (a second stream is worth it).
  virtual bool overlaps() const = 0;
};

/// Simulated ranks in one process and on one device: device-to-device copies.
class CopyTransport : public Transport {
public:
  void exchange(const std::vector<parallel::Transfer> &list, const Parts &parts,
                cudaStream_t stream) override;
  bool overlaps() const override { return false; }
};

class Runner {
public:
  /// `executor` holds a sequence-parallel bundle (the caller checks that it
  /// has sequenceParallelFunctions()); its blocks are checked against the
  /// shape's heads, kv heads, head dim and dtype, @accumulate for in-place
  /// writes, a chunk against its token bound and the plan against the
  /// shape's sequence length (throws std::invalid_argument naming the
  /// mismatch).
  /// `localRanks`: the ranks this process runs (all of them when
  /// simulated, its own with NCCL). Allocates every buffer up front;
  /// throws runtime::RuntimeError when the device has too little.
  Runner(runtime::Executor &executor, parallel::SchedulePlan plan, Shape shape,
         std::vector<int> localRanks, Transport &transport);
  ~Runner();

  /// Rows of chunk c (B * len_c).
  int64_t chunkRows(int64_t c) const;

  /// Device buffers of an owned chunk (plan.chunksOf(rank)): inputs q, k,
  /// v, dout (set them before forward/backward) and results out, lse (after
  /// forward), dq, dk, dv (after backward).
  enum class Tensor { Q, K, V, DOut, Out, Lse, DQ, DK, DV };
  void *tensor(int rank, int64_t chunk, Tensor t) const;

  /// Enqueue the whole forward / backward on `compute` (with `comm` for the
  /// transfers when the transport overlaps); nothing waits on the host.
  void forward(cudaStream_t compute, cudaStream_t comm);
  void backward(cudaStream_t compute, cudaStream_t comm);

  /// Device bytes this runner allocated.
  size_t allocatedBytes() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace ls2c::seqpar

#endif // LS2C_TOOLS_SEQPARALLEL_SEQUENCEPARALLELRUNNER_H
