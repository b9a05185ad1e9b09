//===- DataParallel.cpp - one process per GPU, gradients summed by NCCL ---===//
#include "ls2c/Runtime/DataParallel.h"

#include "ls2c/Runtime/Rendezvous.h"

#include <cuda_runtime.h>

#include <stdexcept>

#ifdef LS2C_HAVE_NCCL
#include "BucketCast.h"
#include "ls2c/Runtime/DistributedNccl.h"
#endif

namespace ls2c::runtime {

std::string perRankPath(const std::string &pattern, int rank) {
  std::string out = pattern;
  const std::string key = "{rank}";
  for (size_t at = out.find(key); at != std::string::npos; at = out.find(key, at))
    out.replace(at, key.size(), std::to_string(rank));
  return out;
}

#ifdef LS2C_HAVE_NCCL
namespace {

void checkCuda(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

class NcclBucketReducer : public BucketReducer {
public:
  NcclBucketReducer(NcclCommunicator &comm, DType dtype, uint64_t workspaceElements)
      : comm(comm), dtype(dtype) {
    if (dtype != DType::F32 && dtype != DType::BF16)
      throw std::runtime_error(std::string("gradient reduction in ") + dtypeName(dtype) +
                               ": must be f32 or bf16");
    checkCuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    checkCuda(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreate");
    checkCuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
    if (dtype == DType::BF16) {
      cast = std::make_unique<BucketCast>();
      checkCuda(cudaMalloc(&staging, workspaceElements * 2), "cudaMalloc (bf16 buckets)");
    }
  }
  ~NcclBucketReducer() override {
    cudaStreamSynchronize(stream);
    cudaFree(staging);
    cudaEventDestroy(ready);
    cudaEventDestroy(done);
    cudaStreamDestroy(stream);
  }
  NcclBucketReducer(const NcclBucketReducer &) = delete;
  NcclBucketReducer &operator=(const NcclBucketReducer &) = delete;

  void reduce(const GradientBucket &bucket, float *gradients, cudaStream_t after) override {
    // A wait takes the event's latest record, so one event serves all.
    checkCuda(cudaEventRecord(ready, after), "bucket all-reduce: cudaEventRecord");
    checkCuda(cudaStreamWaitEvent(stream, ready, 0), "bucket all-reduce: cudaStreamWaitEvent");
    float *range = gradients + bucket.beginElement;
    if (!cast) {
      comm.allReduce(range, bucket.elements(), DType::F32, Reduction::Sum, stream);
      return;
    }
    // The bucket's own part of the staging buffer: no two buckets share
    // bytes, whatever the order their reductions run in.
    char *half = static_cast<char *>(staging) + bucket.beginElement * 2;
    cast->toBf16(range, half, bucket.elements(), stream);
    comm.allReduce(half, bucket.elements(), DType::BF16, Reduction::Sum, stream);
    cast->toF32(half, range, bucket.elements(), stream);
  }
  void join(cudaStream_t waiting) override {
    checkCuda(cudaEventRecord(done, stream), "bucket all-reduce: cudaEventRecord");
    checkCuda(cudaStreamWaitEvent(waiting, done, 0), "bucket all-reduce: cudaStreamWaitEvent");
  }

private:
  NcclCommunicator &comm;
  DType dtype;
  cudaStream_t stream = nullptr;
  cudaEvent_t ready = nullptr, done = nullptr;
  std::unique_ptr<BucketCast> cast;
  void *staging = nullptr;
};

class NcclDataParallel : public DataParallel {
public:
  explicit NcclDataParallel(NcclCommunicator c) : comm(std::move(c)) {}
  std::unique_ptr<BucketReducer>
  makeBucketReducer(DType reduceDType, uint64_t workspaceElements) override {
    return std::make_unique<NcclBucketReducer>(comm, reduceDType, workspaceElements);
  }
  int rank() const override { return comm.rank(); }
  int worldSize() const override { return comm.worldSize(); }
  void sumGradients(void *gradients, uint64_t elements) override {
    comm.allReduce(gradients, elements, DType::F32, Reduction::Sum, nullptr);
    if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
      throw std::runtime_error(std::string("gradient all-reduce: ") + cudaGetErrorString(e));
    comm.checkAsyncError();
  }

private:
  NcclCommunicator comm;
};

} // namespace

std::unique_ptr<DataParallel> DataParallel::fromEnvironment() {
  DistributedEnv env = parseDistributedEnv();
  int devices = 0;
  if (cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess)
    throw std::runtime_error(std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e));
  if (env.localRank >= devices)
    throw std::runtime_error("LOCAL_RANK=" + std::to_string(env.localRank) +
                             ": this node has " + std::to_string(devices) + " GPUs");
  if (cudaError_t e = cudaSetDevice(env.localRank); e != cudaSuccess)
    throw std::runtime_error(std::string("cudaSetDevice: ") + cudaGetErrorString(e));
  return std::make_unique<NcclDataParallel>(NcclCommunicator::fromEnvironment(env));
}
#else
std::unique_ptr<DataParallel> DataParallel::fromEnvironment() {
  throw std::runtime_error("--data-parallel needs NCCL, and this build found none "
                           "(cmake/LS2CCUDA.cmake: LS2C_HAVE_NCCL)");
}
#endif

} // namespace ls2c::runtime
