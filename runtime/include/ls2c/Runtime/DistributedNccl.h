//===- DistributedNccl.h - an NCCL communicator for gradient all-reduce ---===//
//
// One communicator per process (one process per GPU, torchrun style;
// Rendezvous.h): rank 0 makes the ncclUniqueId (ncclGetUniqueId), the TCP
// rendezvous hands its 128 bytes to every rank, and every rank joins with
// ncclCommInitRank on its current CUDA device. Buckets of the gradient
// workspace (GradientBuckets.h) are then all-reduced in place on a stream
// the caller picks, in fp32 or bf16:
//
//   Sum           ncclSum only. For data parallelism the mean is the sum
//                 divided by world size; fold that into the optimizer step's
//                 unscaling instead (pass micro_batches x world size to
//                 @optimizer_step), which costs nothing.
//   SumThenScale  ncclSum, then x *= 1 / worldSize on the same stream
//                 (cublasScalEx_64, fp32 arithmetic; bf16 rounds once more).
//   Average       ncclAvg (NCCL >= 2.10). For floating types NCCL computes
//                 it as a pre-multiplied sum (each rank's input times
//                 1 / worldSize, then summed).
//
// Grouping (NcclGroup) batches several all-reduces into one launch, as
// ncclGroupStart/End do. NCCL enqueues grouped collectives at
// ncclGroupEnd, so SumThenScale (whose scale would run first) is refused
// inside a group: use Sum or Average there.
//
// Errors are NcclError: the call, the rank and ncclGetErrorString's text
// (with ncclGetLastError's detail when NCCL gives one). Needs libnccl and
// libcudart (never the driver stub at link time); built only when CMake
// finds NCCL (LS2C_HAVE_NCCL). Not thread-safe: one thread drives one
// communicator.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_DISTRIBUTEDNCCL_H
#define LS2C_RUNTIME_DISTRIBUTEDNCCL_H

#include "ls2c/Runtime/Program.h"
#include "ls2c/Runtime/Rendezvous.h"

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

// NCCL's and CUDA's handle types, without their headers.
struct ncclComm;
struct CUstream_st;
struct cublasContext;

namespace ls2c::runtime {

/// An NCCL, CUDA or cuBLAS failure, or a refused request.
class NcclError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// How an all-reduce combines the ranks' buckets (see the file comment).
enum class Reduction : uint8_t { Sum, SumThenScale, Average };

/// "sum", "sum_then_scale", "average".
const char *reductionName(Reduction r);

/// The ncclUniqueId's bytes (NCCL_UNIQUE_ID_BYTES).
inline constexpr size_t kNcclUniqueIdBytes = 128;

/// "2.28.9": the version of the NCCL library loaded (ncclGetVersion; no GPU
/// needed). Throws NcclError.
std::string ncclLibraryVersion();

/// ncclGetErrorString of the ncclResult_t value `result`.
std::string ncclResultText(int result);

/// A fresh ncclUniqueId (ncclGetUniqueId; rank 0 only). Throws NcclError.
std::string ncclMakeUniqueId();

class NcclCommunicator {
public:
  /// Collective over every rank of `env`: rank 0 makes the unique id, the
  /// rendezvous (Rendezvous.h) sends it to the others, then all call
  /// ncclCommInitRank on the current CUDA device (set it first, usually to
  /// env.localRank). Throws DistributedError (rendezvous) or NcclError.
  static NcclCommunicator fromEnvironment(const DistributedEnv &env,
                                          const RendezvousOptions &options = {});

  /// Joins the communicator of `uniqueId` (kNcclUniqueIdBytes bytes) as
  /// `rank` of `worldSize` on the current CUDA device; blocks until all
  /// ranks have joined (threads of one process may each drive one device).
  /// Throws NcclError.
  NcclCommunicator(const std::string &uniqueId, int rank, int worldSize);
  /// ncclCommDestroy (after the work enqueued on it completes); never
  /// throws.
  ~NcclCommunicator();
  NcclCommunicator(NcclCommunicator &&other) noexcept;
  NcclCommunicator &operator=(NcclCommunicator &&other) noexcept;
  NcclCommunicator(const NcclCommunicator &) = delete;
  NcclCommunicator &operator=(const NcclCommunicator &) = delete;

  int rank() const { return rank_; }
  int worldSize() const { return worldSize_; }
  int device() const { return device_; } ///< the CUDA device it was made on
  ncclComm *handle() const { return comm_; }

  /// All-reduces `elements` elements of `dtype` (F32 or BF16) at device
  /// pointer `data`, in place, enqueued on `stream` (nullptr: the legacy
  /// default stream); asynchronous like any NCCL call. Every rank must
  /// make the same calls in the same order with the same sizes. Throws
  /// NcclError (another dtype, SumThenScale inside an NcclGroup, an NCCL
  /// or cuBLAS failure).
  void allReduce(void *data, uint64_t elements, DType dtype, Reduction reduction,
                 CUstream_st *stream);

  /// Point-to-point (sequence parallelism's chunk transfers): `bytes` bytes
  /// at device pointer `data` to / from rank `peer`, enqueued on `stream`.
  /// Between two ranks, sends and receives pair up in the order issued;
  /// issue a step's inside one NcclGroup so that none waits for another.
  /// Throws NcclError (a peer out of range, an NCCL failure).
  void send(const void *data, uint64_t bytes, int peer, CUstream_st *stream);
  void recv(void *data, uint64_t bytes, int peer, CUstream_st *stream);

  /// Throws NcclError when an asynchronous error has hit the communicator
  /// (ncclCommGetAsyncError), e.g. a peer that died.
  void checkAsyncError() const;

  /// ncclCommAbort: frees the communicator without waiting for pending
  /// work (after an error, or to unblock a hung collective). Never throws.
  void abort() noexcept;

private:
  void release() noexcept;

  ncclComm *comm_ = nullptr;
  cublasContext *blas_ = nullptr; ///< made on first SumThenScale
  int rank_ = 0, worldSize_ = 0, device_ = -1;
};

/// ncclGroupStart in the constructor, ncclGroupEnd in end() (which throws
/// NcclError) or, when end() was not called, in the destructor (errors
/// ignored there). Groups nest as NCCL's do.
class NcclGroup {
public:
  NcclGroup();
  ~NcclGroup();
  NcclGroup(const NcclGroup &) = delete;
  NcclGroup &operator=(const NcclGroup &) = delete;
  void end();

  /// Groups open on this thread.
  static int depth();

private:
  bool open_ = true;
};

} // namespace ls2c::runtime

#endif // LS2C_RUNTIME_DISTRIBUTEDNCCL_H
