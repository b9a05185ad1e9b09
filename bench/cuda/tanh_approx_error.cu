// tanh_approx_error.cu: the error of the special-function unit's tanh (PTX tanh.approx.f32),
// which the generated kernels use for a tanh of 16-bit values (lib/Codegen/Prelude.cpp,
// ls2_tanh_approx), measured over every non-negative finite float against tanh in double
// (tanh is odd). Prints the largest relative error, the largest absolute error, and the
// largest relative error of 1 - t^2 (the tanh GELU's gradient term) where 1 - t^2 >= 2^-8.
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o tanh_approx_error \
//          bench/cuda/tanh_approx_error.cu
// Run on the GPU: ./tanh_approx_error
#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include <cstring>

#define CK(x) do { auto e = (x); if (e != cudaSuccess) { std::printf("fail %s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

__device__ __forceinline__ float tanhApprox(float x) {
  float r;
  asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// Per block: the largest errors as bit patterns of non-negative doubles (atomicMax on the
// bits orders them), and the input of the largest relative error.
__global__ void measure(unsigned long long *worst, unsigned *worstInput) {
  unsigned long long rel = 0, abs = 0, sech = 0;
  unsigned relAt = 0;
  for (unsigned long long b = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
       b < 0x7f800000ull; b += (unsigned long long)gridDim.x * blockDim.x) {
    const float x = __uint_as_float((unsigned)b);
    const double t = tanh((double)x), got = (double)tanhApprox(x);
    const double e = fabs(got - t);
    if (t != 0.0) {
      const double r = e / fabs(t);
      if (__double_as_longlong(r) > (long long)rel) rel = __double_as_longlong(r), relAt = (unsigned)b;
    }
    if (__double_as_longlong(e) > (long long)abs) abs = __double_as_longlong(e);
    const double s = 1.0 - t * t, sg = 1.0 - got * got;
    if (s >= 1.0 / 256) {
      const double r = fabs(sg - s) / s;
      if (__double_as_longlong(r) > (long long)sech) sech = __double_as_longlong(r);
    }
  }
  if (atomicMax(&worst[0], rel) < rel) worstInput[0] = relAt;
  atomicMax(&worst[1], abs);
  atomicMax(&worst[2], sech);
}

int main() {
  unsigned long long *worst;
  unsigned *at;
  CK(cudaMalloc(&worst, 3 * sizeof(unsigned long long)));
  CK(cudaMalloc(&at, sizeof(unsigned)));
  CK(cudaMemset(worst, 0, 3 * sizeof(unsigned long long)));
  measure<<<132 * 16, 256>>>(worst, at);
  CK(cudaGetLastError());
  unsigned long long h[3];
  unsigned x;
  CK(cudaMemcpy(h, worst, sizeof h, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(&x, at, sizeof x, cudaMemcpyDeviceToHost));
  double v[3];
  for (int i = 0; i < 3; ++i) std::memcpy(&v[i], &h[i], sizeof(double));
  float xf;
  std::memcpy(&xf, &x, sizeof xf);
  std::printf("tanh.approx.f32 over all non-negative finite floats: max relative error %.4g "
              "(2^%.2f; x = %.9g is an input that raised it), max absolute "
              "error %.4g (2^%.2f); 1 - t^2 where >= 2^-8: max relative error %.4g (2^%.2f)\n",
              v[0], std::log2(v[0]), xf, v[1], std::log2(v[1]), v[2], std::log2(v[2]));
  return 0;
}
