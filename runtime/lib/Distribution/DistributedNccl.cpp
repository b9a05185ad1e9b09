//===- DistributedNccl.cpp - an NCCL communicator for gradient all-reduce -===//
//
// See DistributedNccl.h.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Runtime/DistributedNccl.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstring>
#include <utility>

static_assert(ls2c::runtime::kNcclUniqueIdBytes == NCCL_UNIQUE_ID_BYTES,
              "ncclUniqueId changed size");

namespace ls2c::runtime {

namespace {

thread_local int groupDepth = 0;

std::string ncclFailure(const char *call, ncclResult_t r, ncclComm_t comm, int rank) {
  std::string msg = std::string(call) + " failed";
  if (rank >= 0)
    msg += " on rank " + std::to_string(rank);
  msg += ": " + std::string(ncclGetErrorString(r));
  const char *last = ncclGetLastError(comm);
  if (last && *last)
    msg += " (" + std::string(last) + ")";
  return msg;
}

void checkNccl(const char *call, ncclResult_t r, ncclComm_t comm = nullptr, int rank = -1) {
  if (r != ncclSuccess)
    throw NcclError(ncclFailure(call, r, comm, rank));
}

void checkCuda(const char *call, cudaError_t e) {
  if (e != cudaSuccess)
    throw NcclError(std::string(call) + " failed: " + cudaGetErrorName(e) + ": " +
                    cudaGetErrorString(e));
}

void checkBlas(const char *call, cublasStatus_t s) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw NcclError(std::string(call) + " failed: " + cublasGetStatusName(s) + ": " +
                    cublasGetStatusString(s));
}

ncclDataType_t ncclTypeOf(DType t) {
  switch (t) {
  case DType::F32:
    return ncclFloat32;
  case DType::BF16:
    return ncclBfloat16;
  default:
    throw NcclError(std::string("all-reduce in ") + dtypeName(t) +
                    ": gradients reduce in f32 or bf16 only");
  }
}

} // namespace

const char *reductionName(Reduction r) {
  switch (r) {
  case Reduction::Sum:
    return "sum";
  case Reduction::SumThenScale:
    return "sum_then_scale";
  case Reduction::Average:
    return "average";
  }
  return "?";
}

std::string ncclLibraryVersion() {
  int v = 0;
  checkNccl("ncclGetVersion", ncclGetVersion(&v));
  // NCCL_VERSION(X, Y, Z) = X * 10000 + Y * 100 + Z since 2.9.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

std::string ncclResultText(int result) {
  return ncclGetErrorString(static_cast<ncclResult_t>(result));
}

std::string ncclMakeUniqueId() {
  ncclUniqueId id;
  checkNccl("ncclGetUniqueId", ncclGetUniqueId(&id));
  return std::string(id.internal, sizeof id.internal);
}

NcclCommunicator NcclCommunicator::fromEnvironment(const DistributedEnv &env,
                                                   const RendezvousOptions &options) {
  std::string id = env.rank == 0 ? ncclMakeUniqueId() : std::string();
  id = rendezvous(env, id, kNcclUniqueIdBytes, options);
  return NcclCommunicator(id, env.rank, env.worldSize);
}

NcclCommunicator::NcclCommunicator(const std::string &uniqueId, int rank, int worldSize)
    : rank_(rank), worldSize_(worldSize) {
  if (uniqueId.size() != kNcclUniqueIdBytes)
    throw NcclError("ncclUniqueId of " + std::to_string(uniqueId.size()) +
                    " bytes: must be " + std::to_string(kNcclUniqueIdBytes));
  if (worldSize < 1 || rank < 0 || rank >= worldSize)
    throw NcclError("rank " + std::to_string(rank) + " of world size " +
                    std::to_string(worldSize) + ": must be in [0, world size)");
  checkCuda("cudaGetDevice", cudaGetDevice(&device_));
  ncclUniqueId id;
  std::memcpy(id.internal, uniqueId.data(), sizeof id.internal);
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRank(&comm, worldSize, id, rank);
  if (r != ncclSuccess) {
    std::string msg = ncclFailure("ncclCommInitRank", r, comm, rank);
    if (comm)
      ncclCommAbort(comm);
    throw NcclError(msg);
  }
  comm_ = comm;
}

NcclCommunicator::~NcclCommunicator() { release(); }

NcclCommunicator::NcclCommunicator(NcclCommunicator &&o) noexcept
    : comm_(std::exchange(o.comm_, nullptr)), blas_(std::exchange(o.blas_, nullptr)),
      rank_(o.rank_), worldSize_(o.worldSize_), device_(o.device_) {}

NcclCommunicator &NcclCommunicator::operator=(NcclCommunicator &&o) noexcept {
  if (this != &o) {
    release();
    comm_ = std::exchange(o.comm_, nullptr);
    blas_ = std::exchange(o.blas_, nullptr);
    rank_ = o.rank_;
    worldSize_ = o.worldSize_;
    device_ = o.device_;
  }
  return *this;
}

void NcclCommunicator::release() noexcept {
  if (blas_) {
    int previous = -1;
    bool switched = cudaGetDevice(&previous) == cudaSuccess && previous != device_ &&
                    cudaSetDevice(device_) == cudaSuccess;
    cublasDestroy(blas_);
    if (switched)
      cudaSetDevice(previous);
    blas_ = nullptr;
  }
  if (comm_)
    ncclCommDestroy(comm_);
  comm_ = nullptr;
}

void NcclCommunicator::abort() noexcept {
  if (comm_)
    ncclCommAbort(comm_);
  comm_ = nullptr;
  release();
}

void NcclCommunicator::checkAsyncError() const {
  if (!comm_)
    throw NcclError("rank " + std::to_string(rank_) + ": the communicator was aborted");
  ncclResult_t async = ncclSuccess;
  checkNccl("ncclCommGetAsyncError", ncclCommGetAsyncError(comm_, &async), comm_, rank_);
  if (async != ncclSuccess && async != ncclInProgress)
    throw NcclError(ncclFailure("an earlier NCCL operation", async, comm_, rank_));
}

void NcclCommunicator::allReduce(void *data, uint64_t elements, DType dtype,
                                 Reduction reduction, CUstream_st *stream) {
  if (!comm_)
    throw NcclError("rank " + std::to_string(rank_) + ": the communicator was aborted");
  ncclDataType_t type = ncclTypeOf(dtype);
  if (reduction == Reduction::SumThenScale && groupDepth > 0)
    throw NcclError("sum_then_scale inside an NcclGroup: NCCL enqueues grouped "
                    "collectives at ncclGroupEnd, so the scale would run before the "
                    "sum; use sum or average, or scale after the group");
  if (elements == 0)
    return;
  ncclRedOp_t op = reduction == Reduction::Average ? ncclAvg : ncclSum;
  checkNccl("ncclAllReduce", ncclAllReduce(data, data, size_t(elements), type, op, comm_, stream),
            comm_, rank_);
  if (reduction != Reduction::SumThenScale || worldSize_ == 1)
    return;
  if (!blas_) {
    cublasHandle_t h = nullptr;
    checkBlas("cublasCreate", cublasCreate(&h));
    blas_ = h;
  }
  checkBlas("cublasSetStream", cublasSetStream(blas_, stream));
  float alpha = 1.0f / float(worldSize_);
  checkBlas("cublasScalEx_64",
            cublasScalEx_64(blas_, int64_t(elements), &alpha, CUDA_R_32F, data,
                            dtype == DType::F32 ? CUDA_R_32F : CUDA_R_16BF, 1,
                            CUDA_R_32F));
}

void NcclCommunicator::send(const void *data, uint64_t bytes, int peer, CUstream_st *stream) {
  if (!comm_)
    throw NcclError("rank " + std::to_string(rank_) + ": the communicator was aborted");
  if (peer < 0 || peer >= worldSize_ || peer == rank_)
    throw NcclError("rank " + std::to_string(rank_) + ": send to rank " + std::to_string(peer) +
                    " (must be another rank of " + std::to_string(worldSize_) + ")");
  if (bytes == 0)
    return;
  checkNccl("ncclSend", ncclSend(data, size_t(bytes), ncclUint8, peer, comm_, stream), comm_,
            rank_);
}

void NcclCommunicator::recv(void *data, uint64_t bytes, int peer, CUstream_st *stream) {
  if (!comm_)
    throw NcclError("rank " + std::to_string(rank_) + ": the communicator was aborted");
  if (peer < 0 || peer >= worldSize_ || peer == rank_)
    throw NcclError("rank " + std::to_string(rank_) + ": receive from rank " +
                    std::to_string(peer) + " (must be another rank of " +
                    std::to_string(worldSize_) + ")");
  if (bytes == 0)
    return;
  checkNccl("ncclRecv", ncclRecv(data, size_t(bytes), ncclUint8, peer, comm_, stream), comm_,
            rank_);
}

NcclGroup::NcclGroup() {
  checkNccl("ncclGroupStart", ncclGroupStart());
  ++groupDepth;
}

NcclGroup::~NcclGroup() {
  if (open_) {
    --groupDepth;
    ncclGroupEnd();
  }
}

void NcclGroup::end() {
  if (!open_)
    return;
  open_ = false;
  --groupDepth;
  checkNccl("ncclGroupEnd", ncclGroupEnd());
}

int NcclGroup::depth() { return groupDepth; }

} // namespace ls2c::runtime
