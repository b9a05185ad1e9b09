// erf_approx_error.cu: the error of the erf the generated kernels use for an erf of 16-bit
// values (lib/Codegen/Prelude.cpp, ls2_erf_approx: Numerical Recipes' erfc fit with the
// special-function unit's reciprocal and 2^x), beside CUDA's erff, measured over every
// non-negative finite float against erf in double (both are odd: the sign is copied).
// Prints the largest absolute error of erf, and the largest relative error of 1 - erf(x)
// (= 1 + erf(-x), the erf GELU's factor at -x) where it is at least 2^-8 and 2^-16.
// It measures the function the kernels get, taken from Prelude.cpp's text at build time.
// Build (from the repository root):
//   sed -n '/^__device__ __forceinline__ float ls2_erf_approx/,/^}/p' lib/Codegen/Prelude.cpp \
//     > /tmp/ls2_erf_approx.cuh
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -include /tmp/ls2_erf_approx.cuh \
//     -o erf_approx_error bench/cuda/erf_approx_error.cu
// Run on the GPU: ./erf_approx_error
#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include <cstring>

#define CK(x) do { auto e = (x); if (e != cudaSuccess) { std::printf("fail %s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

__device__ void atomicMaxDouble(unsigned long long *at, double v) {
  atomicMax(at, (unsigned long long)__double_as_longlong(v));
}

// worst[f * 3 + k], f: 0 ours, 1 erff; k: 0 absolute error of erf, 1 relative error of
// 1 - erf where >= 2^-8, 2 the same where >= 2^-16.
__global__ void measure(unsigned long long *worst) {
  double w[6] = {};
  for (unsigned long long b = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
       b < 0x7f800000ull; b += (unsigned long long)gridDim.x * blockDim.x) {
    const float x = __uint_as_float((unsigned)b);
    const double want = erf((double)x), tail = erfc((double)x);
    const float got[2] = {ls2_erf_approx(x), erff(x)};
    for (int f = 0; f < 2; ++f) {
      w[3 * f] = fmax(w[3 * f], fabs((double)got[f] - want));
      const double r = fabs((1.0 - (double)got[f]) - tail) / tail;
      if (tail >= 1.0 / 256) w[3 * f + 1] = fmax(w[3 * f + 1], r);
      if (tail >= 1.0 / 65536) w[3 * f + 2] = fmax(w[3 * f + 2], r);
    }
  }
  for (int k = 0; k < 6; ++k) atomicMaxDouble(&worst[k], w[k]);
}

int main() {
  unsigned long long *worst;
  CK(cudaMalloc(&worst, 6 * sizeof(unsigned long long)));
  CK(cudaMemset(worst, 0, 6 * sizeof(unsigned long long)));
  measure<<<132 * 16, 256>>>(worst);
  CK(cudaGetLastError());
  unsigned long long h[6];
  CK(cudaMemcpy(h, worst, sizeof h, cudaMemcpyDeviceToHost));
  double v[6];
  for (int i = 0; i < 6; ++i) std::memcpy(&v[i], &h[i], sizeof(double));
  const char *names[2] = {"ls2_erf_approx", "erff"};
  for (int f = 0; f < 2; ++f)
    std::printf("%s over all non-negative finite floats: max absolute error %.4g (2^%.2f); "
                "1 - erf(x) where >= 2^-8: max relative error %.4g (2^%.2f), where >= 2^-16: "
                "%.4g (2^%.2f)\n",
                names[f], v[3 * f], std::log2(v[3 * f]), v[3 * f + 1], std::log2(v[3 * f + 1]),
                v[3 * f + 2], std::log2(v[3 * f + 2]));
  return 0;
}
