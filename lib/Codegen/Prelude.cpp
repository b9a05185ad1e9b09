//===- Prelude.cpp - device helpers every generated kernel includes -------===//
//
// Loads and stores that convert to the compute type, NaN-propagating
// max/min (the reference backend's rule), wrapping integer arithmetic,
// Philox-4x32-10 (Salmon et al., SC'11; the counter layout of
// ls2.random_uniform, lib/Reference/Philox.h) and warp/block reductions
// whose every lane ends with the same bits (a butterfly adds the same two
// values in each lane, and the block stage sums warps in a fixed order).
//
//===----------------------------------------------------------------------===//

#include "Prelude.h"

namespace ls2c::codegen {

const char *kernelPrelude() {
  return R"cuda(#include <cuda_fp16.h>
#include <cuda_bf16.h>

template <typename T, int N> struct __align__(16) ls2_vec { T v[N]; };

__device__ __forceinline__ float ls2_cvt(float x) { return x; }
__device__ __forceinline__ float ls2_cvt(__half x) { return __half2float(x); }
__device__ __forceinline__ float ls2_cvt(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ double ls2_cvt(double x) { return x; }
__device__ __forceinline__ int ls2_cvt(int x) { return x; }
__device__ __forceinline__ long long ls2_cvt(long long x) { return x; }
__device__ __forceinline__ bool ls2_cvt(unsigned char x) { return x != 0; }

template <typename T>
__device__ __forceinline__ auto ls2_load(const T *p, long long i) { return ls2_cvt(p[i]); }

__device__ __forceinline__ void ls2_put(float &d, float x) { d = x; }
__device__ __forceinline__ void ls2_put(__half &d, float x) { d = __float2half_rn(x); }
__device__ __forceinline__ void ls2_put(__nv_bfloat16 &d, float x) { d = __float2bfloat16_rn(x); }
__device__ __forceinline__ void ls2_put(double &d, double x) { d = x; }
__device__ __forceinline__ void ls2_put(int &d, int x) { d = x; }
__device__ __forceinline__ void ls2_put(long long &d, long long x) { d = x; }
__device__ __forceinline__ void ls2_put(unsigned char &d, bool x) { d = x ? 1 : 0; }

template <typename T, typename V>
__device__ __forceinline__ void ls2_store(T *p, long long i, V x) { ls2_put(p[i], x); }

// NaN when either operand is NaN, in one instruction (PTX max.NaN and
// min.NaN, sm_80 on; fmaxf drops a NaN, and a test and branch around it cost
// an early version of the online cross entropy 10-14% of its time).
__device__ __forceinline__ float ls2_max(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float ls2_min(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ double ls2_max(double a, double b) { return (a != a || b != b) ? a + b : fmax(a, b); }
__device__ __forceinline__ double ls2_min(double a, double b) { return (a != a || b != b) ? a + b : fmin(a, b); }
__device__ __forceinline__ int ls2_max(int a, int b) { return a > b ? a : b; }
__device__ __forceinline__ int ls2_min(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ long long ls2_max(long long a, long long b) { return a > b ? a : b; }
__device__ __forceinline__ long long ls2_min(long long a, long long b) { return a < b ? a : b; }

__device__ __forceinline__ int ls2_wrap_add(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
__device__ __forceinline__ int ls2_wrap_sub(int a, int b) { return (int)((unsigned)a - (unsigned)b); }
__device__ __forceinline__ int ls2_wrap_mul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }
__device__ __forceinline__ long long ls2_wrap_add(long long a, long long b) { return (long long)((unsigned long long)a + (unsigned long long)b); }
__device__ __forceinline__ long long ls2_wrap_sub(long long a, long long b) { return (long long)((unsigned long long)a - (unsigned long long)b); }
__device__ __forceinline__ long long ls2_wrap_mul(long long a, long long b) { return (long long)((unsigned long long)a * (unsigned long long)b); }

// Philox-4x32-10 (ten rounds) of `counter` under the key (lo(seed),
// hi(seed)).
__device__ __forceinline__ uint4 ls2_philox(uint4 counter, long long seed) {
  unsigned x0 = counter.x, x1 = counter.y, x2 = counter.z, x3 = counter.w;
  unsigned k0 = (unsigned)(unsigned long long)seed,
           k1 = (unsigned)((unsigned long long)seed >> 32);
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    if (round > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
    unsigned hi0 = __umulhi(0xD2511F53u, x0), lo0 = 0xD2511F53u * x0;
    unsigned hi1 = __umulhi(0xCD9E8D57u, x2), lo1 = 0xCD9E8D57u * x2;
    unsigned y0 = hi1 ^ x1 ^ k0, y2 = hi0 ^ x3 ^ k1;
    x0 = y0; x1 = lo1; x2 = y2; x3 = lo0;
  }
  return make_uint4(x0, x1, x2, x3);
}

// Half `odd` of a Philox output word as a float in [0, 1): half * 2^-16.
__device__ __forceinline__ float ls2_half_uniform(unsigned w, bool odd) {
  return (float)(odd ? w >> 16 : w & 0xffffu) * (1.0f / 65536.0f);
}

// The Philox words of ls2.random_uniform's elements 8b .. 8b + 7: counter
// (lo(b), hi(b), stream, lo(offset)); element e takes half e % 2 of word
// (e / 2) % 4 (lib/Reference/Philox.h).
__device__ __forceinline__ uint4 ls2_uniform_words(long long seed, long long offset,
                                                   unsigned stream, unsigned long long b) {
  return ls2_philox(make_uint4((unsigned)b, (unsigned)(b >> 32), stream,
                               (unsigned)(unsigned long long)offset),
                    seed);
}

// ls2.random_uniform's element e.
__device__ __forceinline__ float ls2_uniform(long long seed, long long offset,
                                             unsigned stream, long long e) {
  const uint4 words = ls2_uniform_words(seed, offset, stream, (unsigned long long)e >> 3);
  const int m = (int)((e >> 1) & 3);
  const unsigned w = m == 0 ? words.x : m == 1 ? words.y : m == 2 ? words.z : words.w;
  return ls2_half_uniform(w, e & 1);
}

// Elements e0 .. e0 + 3 (e0 % 4 == 0) of ls2.random_uniform: half of one
// Philox call, where ls2_uniform computes it for each.
__device__ __forceinline__ void ls2_uniform4(long long seed, long long offset, unsigned stream,
                                             long long e0, float *out) {
  const uint4 words = ls2_uniform_words(seed, offset, stream, (unsigned long long)e0 >> 3);
  const bool high = (e0 & 4) != 0;
  const unsigned a = high ? words.z : words.x, b = high ? words.w : words.y;
  out[0] = ls2_half_uniform(a, false);
  out[1] = ls2_half_uniform(a, true);
  out[2] = ls2_half_uniform(b, false);
  out[3] = ls2_half_uniform(b, true);
}

// Elements e0 .. e0 + 7 (e0 % 8 == 0) of ls2.random_uniform: one Philox call.
__device__ __forceinline__ void ls2_uniform8(long long seed, long long offset, unsigned stream,
                                             long long e0, float *out) {
  const uint4 words = ls2_uniform_words(seed, offset, stream, (unsigned long long)e0 >> 3);
  const unsigned w[4] = {words.x, words.y, words.z, words.w};
#pragma unroll
  for (int k = 0; k < 8; ++k) out[k] = ls2_half_uniform(w[k / 2], k & 1);
}

__device__ __forceinline__ float ls2_warp_sum(float x) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) x += __shfl_xor_sync(0xffffffffu, x, m);
  return x;
}
__device__ __forceinline__ float ls2_warp_max(float x) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) x = ls2_max(x, __shfl_xor_sync(0xffffffffu, x, m));
  return x;
}
// Every thread of the block calls these. N sums of the block at once, each
// the warps' sums added in warp order, behind one pair of barriers; `smem`
// holds N * WARPS floats. (A LayerNorm backward's two row sums are
// independent: two barrier pairs a row were its longest wait.)
template <int WARPS, int N>
__device__ __forceinline__ void ls2_block_sums(float (&x)[N], float *smem) {
#pragma unroll
  for (int i = 0; i < N; ++i) x[i] = ls2_warp_sum(x[i]);
  if ((threadIdx.x & 31) == 0) {
#pragma unroll
    for (int i = 0; i < N; ++i) smem[i * WARPS + (threadIdx.x >> 5)] = x[i];
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < N; ++i) {
    float s = 0.0f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) s += smem[i * WARPS + w];
    x[i] = s;
  }
  __syncthreads();
}
// One sum of the block; `smem` holds one float per warp.
template <int WARPS>
__device__ __forceinline__ float ls2_block_sum(float x, float *smem) {
  float s[1] = {x};
  ls2_block_sums<WARPS, 1>(s, smem);
  return s[0];
}
template <int WARPS>
__device__ __forceinline__ float ls2_block_max(float x, float *smem) {
  x = ls2_warp_max(x);
  if ((threadIdx.x & 31) == 0) smem[threadIdx.x >> 5] = x;
  __syncthreads();
  float s = smem[0];
#pragma unroll
  for (int w = 1; w < WARPS; ++w) s = ls2_max(s, smem[w]);
  __syncthreads();
  return s;
}
// e^x for x <= 0 (a softmax's x - max, -x^2 / 2): the special-function unit's 2^y of
// y = x log2(e), relative error about 2^-22 plus y's rounding (6e-8 |x|:
// 1e-6 at x = -20, where e^x < 3e-9); results below 2^-126 flush to 0.
// (expf is ten instructions, and a vocabulary's cross entropy is limited by
// instruction issue.)
__device__ __forceinline__ float ls2_exp_nonpositive(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x * 1.4426950408889634f));
  return r;
}
// tanh of values stored in 16 bits: the special-function unit's
// MUFU.TANH (sm_75 and later), one instruction against tanhf's dozen with a
// branch. Measured over every non-negative float on an H200
// (bench/cuda/tanh_approx_error.cu): relative error at most 1.11e-5
// (2^-16.5), and 1 - t^2 (the tanh GELU gradient's term) within 1.2e-4
// where it is at least 2^-8; bf16 and fp16 round to 2^-8 and 2^-11. (The
// tanh GELU's gradient kernel is limited by issue.)
__device__ __forceinline__ float ls2_tanh_approx(float x) {
  float r;
  asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
// erf of values stored in 16 bits: erfc(|x|) by the Chebyshev fit of Press
// et al., Numerical Recipes (2nd ed., section 6.2, erfcc: fractional error
// below 1.2e-7), its reciprocal and 2^x on the special-function unit, then
// erf = sign(x) (1 - erfc(|x|)). Branch free, about 17 instructions
// against erff's 28 (the erf GELU's kernels are limited by issue). Its error is
// measured over every finite float in bench/cuda/erf_approx_error.cu; bf16
// and fp16 round to 2^-8 and 2^-11.
__device__ __forceinline__ float ls2_erf_approx(float x) {
  const float z = fabsf(x);
  float t, e;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(t) : "f"(fmaf(0.5f, z, 1.0f)));
  float p = 0.17087277f;
  p = fmaf(p, t, -0.82215223f);
  p = fmaf(p, t, 1.48851587f);
  p = fmaf(p, t, -1.13520398f);
  p = fmaf(p, t, 0.27886807f);
  p = fmaf(p, t, -0.18628806f);
  p = fmaf(p, t, 0.09678418f);
  p = fmaf(p, t, 0.37409196f);
  p = fmaf(p, t, 1.00002368f);
  p = fmaf(p, t, -1.26551223f);
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(fmaf(-z, z, p) * 1.4426950408889634f));
  return copysignf(1.0f - t * e, x);
}
// exp(x - m) for x <= m, 0 where x - m is NaN (x = m = -inf): no branch.
__device__ __forceinline__ float ls2_exp_below(float x, float m) {
  return ls2_exp_nonpositive(fmaxf(x - m, __int_as_float(0xff800000)));
}
// A softmax's running max m (NaN once an element is NaN) and normalizer
// s = sum exp(x - m) over the elements seen, a group of N more added
// (Milakov and Gimelshein, arXiv 1805.02867, algorithm 3, a group at a
// time): the exponentials wait on the group's max, not on each other.
template <int N>
__device__ __forceinline__ void ls2_online_add(float &m, float &s, const float (&x)[N]) {
  float mn = m;
#pragma unroll
  for (int i = 0; i < N; ++i) mn = ls2_max(mn, x[i]);
  float t = 0.0f;
#pragma unroll
  for (int i = 0; i < N; ++i) t += ls2_exp_below(x[i], mn);
  s = s * ls2_exp_below(m, mn) + t;
  m = mn;
}
// Every lane's (m, s) merged, in every lane: the max first, then each s
// rescaled to it once and summed (one exponential a lane, where merging
// pairs takes two a step; the same bits in every lane).
__device__ __forceinline__ void ls2_warp_online(float &m, float &s) {
  const float mw = ls2_warp_max(m);
  s = ls2_warp_sum(s * ls2_exp_below(m, mw));
  m = mw;
}
// The block's (m, s) in every thread: the warps' pairs merged by each warp
// as ls2_warp_online merges lanes. `smem` holds two floats per warp (64).
template <int WARPS>
__device__ __forceinline__ void ls2_block_online(float &m, float &s, float *smem) {
  ls2_warp_online(m, s);
  const int lane = threadIdx.x & 31;
  if (lane == 0) smem[threadIdx.x >> 5] = m, smem[32 + (threadIdx.x >> 5)] = s;
  __syncthreads();
  m = lane < WARPS ? smem[lane] : __int_as_float(0xff800000);
  s = lane < WARPS ? smem[32 + lane] : 0.0f;
  ls2_warp_online(m, s);
  __syncthreads();
}
)cuda";
}

std::string substitute(std::string text, const std::map<std::string, std::string> &values) {
  for (const auto &[key, value] : values) {
    std::string pattern = "${" + key + "}";
    for (size_t pos = 0; (pos = text.find(pattern, pos)) != std::string::npos;
         pos += value.size())
      text.replace(pos, pattern.size(), value);
  }
  return text;
}

} // namespace ls2c::codegen
