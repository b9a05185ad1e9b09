//===- BucketCast.h - fp32 <-> bf16 copies of gradient buckets ------------===//
//
// A bf16 all-reduce of the fp32 gradient workspace (--reduce-dtype bf16,
// PyTorch DDP's bf16_compress_hook): each bucket is rounded to bf16 into a
// staging buffer, summed over the ranks in bf16 and widened back. The two
// element-wise copies are kernels of the runtime's own, compiled by NVRTC for
// the current device when first needed (ls2c/JIT/KernelCompiler.h, cached)
// and loaded through the runtime API's library management, so that they
// can be captured in a CUDA graph like the generated kernels.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_LIB_DISTRIBUTION_BUCKETCAST_H
#define LS2C_RUNTIME_LIB_DISTRIBUTION_BUCKETCAST_H

#include <cuda_runtime.h>

#include <cstdint>

namespace ls2c::runtime {

class BucketCast {
public:
  /// Compiles (or takes from the program cache) and loads both kernels for
  /// the current device. Throws std::runtime_error (NVRTC, loading).
  BucketCast();
  ~BucketCast();
  BucketCast(const BucketCast &) = delete;
  BucketCast &operator=(const BucketCast &) = delete;

  /// bf16[i] = round-to-nearest-even(f32[i]) for i < n, on `stream`.
  void toBf16(const float *f32, void *bf16, uint64_t n, cudaStream_t stream);
  /// f32[i] = bf16[i] (exact), on `stream`.
  void toF32(const void *bf16, float *f32, uint64_t n, cudaStream_t stream);

private:
  void launch(cudaKernel_t k, const void *in, void *out, uint64_t n, cudaStream_t stream);
  cudaLibrary_t library = nullptr;
  cudaKernel_t narrow = nullptr, widen = nullptr;
};

} // namespace ls2c::runtime

#endif // LS2C_RUNTIME_LIB_DISTRIBUTION_BUCKETCAST_H
