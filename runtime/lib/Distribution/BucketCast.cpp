//===- BucketCast.cpp - fp32 <-> bf16 copies of gradient buckets ----------===//
#include "BucketCast.h"

#include "ls2c/JIT/KernelCompiler.h"

#include <stdexcept>
#include <string>

namespace ls2c::runtime {
namespace {

// Grid-stride loops: any n with a grid capped at 65,535 x 256 threads.
const char *kSource = R"(#include <cuda_bf16.h>
extern "C" __global__ void ls2c_bucket_cast(const float *in, __nv_bfloat16 *out,
                                            unsigned long long n) {
  for (unsigned long long i = blockIdx.x * 256ull + threadIdx.x; i < n;
       i += 256ull * gridDim.x)
    out[i] = __float2bfloat16_rn(in[i]);
}
extern "C" __global__ void ls2c_bucket_widen(const __nv_bfloat16 *in, float *out,
                                             unsigned long long n) {
  for (unsigned long long i = blockIdx.x * 256ull + threadIdx.x; i < n;
       i += 256ull * gridDim.x)
    out[i] = __bfloat162float(in[i]);
}
)";

void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("bf16 gradient buckets: ") + what + ": " +
                             cudaGetErrorString(e));
}

} // namespace

BucketCast::BucketCast() {
  std::vector<jit::CompiledKernel> compiled =
      jit::compileKernels({{"ls2c_bucket_cast", kSource}}, jit::CompileOptions{});
  check(cudaLibraryLoadData(&library, compiled.front().cubin.data(), nullptr, nullptr, 0,
                            nullptr, nullptr, 0),
        "cudaLibraryLoadData");
  check(cudaLibraryGetKernel(&narrow, library, "ls2c_bucket_cast"), "cudaLibraryGetKernel");
  check(cudaLibraryGetKernel(&widen, library, "ls2c_bucket_widen"), "cudaLibraryGetKernel");
}

BucketCast::~BucketCast() {
  if (library)
    cudaLibraryUnload(library);
}

void BucketCast::launch(cudaKernel_t k, const void *in, void *out, uint64_t n,
                        cudaStream_t stream) {
  if (n == 0)
    return;
  unsigned long long count = n;
  void *args[] = {&in, &out, &count};
  uint64_t blocks = (n + 255) / 256;
  dim3 grid(static_cast<unsigned>(blocks < 65535 ? blocks : 65535));
  check(cudaLaunchKernel(reinterpret_cast<const void *>(k), grid, dim3(256), args, 0, stream),
        "cudaLaunchKernel");
}

void BucketCast::toBf16(const float *f32, void *bf16, uint64_t n, cudaStream_t stream) {
  launch(narrow, f32, bf16, n, stream);
}

void BucketCast::toF32(const void *bf16, float *f32, uint64_t n, cudaStream_t stream) {
  launch(widen, bf16, f32, n, stream);
}

} // namespace ls2c::runtime
