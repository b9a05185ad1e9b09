//===- DataParallel.cpp - ls2c-gpu-step across GPUs with NCCL -------------===//
#include "DataParallel.h"

#include "ls2c/Runtime/Rendezvous.h"

#include <cuda_runtime.h>

#include <stdexcept>

#ifdef LS2C_HAVE_NCCL
#include "ls2c/Runtime/DistributedNccl.h"
#endif

namespace ls2c::tools {

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

class NcclBucketReducer : public runtime::BucketReducer {
public:
  explicit NcclBucketReducer(runtime::NcclCommunicator &comm) : comm(comm) {
    checkCuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    checkCuda(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreate");
    checkCuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
  }
  ~NcclBucketReducer() override {
    cudaStreamSynchronize(stream);
    cudaEventDestroy(ready);
    cudaEventDestroy(done);
    cudaStreamDestroy(stream);
  }
  NcclBucketReducer(const NcclBucketReducer &) = delete;
  NcclBucketReducer &operator=(const NcclBucketReducer &) = delete;

  void reduce(const runtime::GradientBucket &bucket, float *gradients,
              cudaStream_t after) override {
    // A wait takes the event's latest record, so one event serves all.
    checkCuda(cudaEventRecord(ready, after), "bucket all-reduce: cudaEventRecord");
    checkCuda(cudaStreamWaitEvent(stream, ready, 0), "bucket all-reduce: cudaStreamWaitEvent");
    comm.allReduce(gradients + bucket.beginElement, bucket.elements(), runtime::DType::F32,
                   runtime::Reduction::Sum, stream);
  }
  void join(cudaStream_t waiting) override {
    checkCuda(cudaEventRecord(done, stream), "bucket all-reduce: cudaEventRecord");
    checkCuda(cudaStreamWaitEvent(waiting, done, 0), "bucket all-reduce: cudaStreamWaitEvent");
  }

private:
  runtime::NcclCommunicator &comm;
  cudaStream_t stream = nullptr;
  cudaEvent_t ready = nullptr, done = nullptr;
};

class NcclDataParallel : public DataParallel {
public:
  explicit NcclDataParallel(runtime::NcclCommunicator c)
      : comm(std::move(c)), reducer(std::make_unique<NcclBucketReducer>(comm)) {}
  ~NcclDataParallel() override { reducer.reset(); } // before the communicator
  runtime::BucketReducer &bucketReducer() override { return *reducer; }
  int rank() const override { return comm.rank(); }
  int worldSize() const override { return comm.worldSize(); }
  void sumGradients(void *gradients, uint64_t elements) override {
    comm.allReduce(gradients, elements, runtime::DType::F32, runtime::Reduction::Sum, nullptr);
    if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
      throw std::runtime_error(std::string("gradient all-reduce: ") + cudaGetErrorString(e));
    comm.checkAsyncError();
  }

private:
  runtime::NcclCommunicator comm;
  std::unique_ptr<NcclBucketReducer> reducer;
};

} // namespace

std::unique_ptr<DataParallel> DataParallel::fromEnvironment() {
  runtime::DistributedEnv env = runtime::parseDistributedEnv();
  int devices = 0;
  if (cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess)
    throw std::runtime_error(std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e));
  if (env.localRank >= devices)
    throw std::runtime_error("LOCAL_RANK=" + std::to_string(env.localRank) +
                             ": this node has " + std::to_string(devices) + " GPUs");
  if (cudaError_t e = cudaSetDevice(env.localRank); e != cudaSuccess)
    throw std::runtime_error(std::string("cudaSetDevice: ") + cudaGetErrorString(e));
  return std::make_unique<NcclDataParallel>(runtime::NcclCommunicator::fromEnvironment(env));
}
#else
std::unique_ptr<DataParallel> DataParallel::fromEnvironment() {
  throw std::runtime_error("--data-parallel needs NCCL, and this build found none "
                           "(cmake/LS2CCUDA.cmake: LS2C_HAVE_NCCL)");
}
#endif

} // namespace ls2c::tools
