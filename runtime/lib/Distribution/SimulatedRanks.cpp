//===- SimulatedRanks.cpp - data parallelism's buckets on one GPU ---------===//
#include "ls2c/Runtime/SimulatedRanks.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ls2c::runtime {
namespace {

constexpr size_t kBlasWorkspaceBytes = 4 << 20;

void checkCuda(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("simulated ranks: ") + what + ": " +
                             cudaGetErrorString(e));
}

void checkBlas(cublasStatus_t s, const char *what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("simulated ranks: ") + what + ": " +
                             cublasGetStatusString(s));
}

} // namespace

SimulatedRankReducer::SimulatedRankReducer(uint64_t n) : elements(n) {
  try {
    checkCuda(cudaMalloc(&sum, elements * sizeof(float)), "cudaMalloc (the ranks' sum)");
    checkCuda(cudaMemset(sum, 0, elements * sizeof(float)), "cudaMemset");
    checkCuda(cudaMalloc(&workspace, kBlasWorkspaceBytes), "cudaMalloc (cuBLAS workspace)");
    checkBlas(cublasCreate(&blas), "cublasCreate");
    checkBlas(cublasSetWorkspace(blas, workspace, kBlasWorkspaceBytes), "cublasSetWorkspace");
  } catch (...) {
    release();
    throw;
  }
}

SimulatedRankReducer::~SimulatedRankReducer() { release(); }

void SimulatedRankReducer::release() noexcept {
  if (blas)
    cublasDestroy(blas);
  cudaFree(workspace);
  cudaFree(sum);
  blas = nullptr;
  workspace = nullptr;
  sum = nullptr;
}

void SimulatedRankReducer::reduce(const GradientBucket &bucket, float *gradients,
                                  cudaStream_t stream) {
  if (bucket.endElement > elements)
    throw std::runtime_error("simulated ranks: bucket [" + std::to_string(bucket.beginElement) +
                             ", " + std::to_string(bucket.endElement) +
                             ") beyond the workspace of " + std::to_string(elements));
  if (bucket.elements() > static_cast<uint64_t>(INT32_MAX))
    throw std::runtime_error("simulated ranks: a bucket of " + std::to_string(bucket.elements()) +
                             " elements: cublasSaxpy counts in int");
  const float one = 1.0f;
  checkBlas(cublasSetStream(blas, stream), "cublasSetStream");
  checkBlas(cublasSaxpy(blas, static_cast<int>(bucket.elements()), &one,
                        gradients + bucket.beginElement, 1, sum + bucket.beginElement, 1),
            "cublasSaxpy");
}

void SimulatedRankReducer::takeSum(float *gradients) {
  checkCuda(cudaMemcpy(gradients, sum, elements * sizeof(float), cudaMemcpyDeviceToDevice),
            "copying the ranks' sum");
  checkCuda(cudaMemset(sum, 0, elements * sizeof(float)), "cudaMemset");
}

} // namespace ls2c::runtime
