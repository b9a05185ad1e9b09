// attention_dropout_mask.cu: what attention dropout's random numbers cost when drawn apart from
// the attention kernels: one kernel writes the keep bits of every (query row, head, key) in
// ls2.attention's layout (lib/Reference/Philox.h, attentionUniformAt: the keys 32s + 8m + 2t + p
// of a row and head share Philox-4x32-10 at counter (4s + t, row * heads + head, stream,
// lo(offset)); key j keeps when its 16-bit number half * 2^-16 >= rate), a 32-bit word per row,
// head and 32 keys of the row's sequence, causal blocks above the diagonal skipped. A thread
// makes one word from four calls. The bits are checked against the reference on sampled words.
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -std=c++17 -Ilib
//          -o attention_dropout_mask bench/cuda/attention_dropout_mask.cu lib/Reference/Philox.cpp
// Run on the GPU: ./attention_dropout_mask   (prints us a layer and the bits' bytes)
#include "Reference/Philox.h"

#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#define CK(x) do { auto e = (x); if (e != cudaSuccess) { std::printf("fail %s: %s line %d\n", #x, cudaGetErrorString(e), __LINE__); return 1; } } while (0)

__device__ __forceinline__ uint4 philox(uint4 c, unsigned long long seed) {
  unsigned x0 = c.x, x1 = c.y, x2 = c.z, x3 = c.w;
  unsigned k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);
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

// Word w of the bits: row r = w / (heads * blocks), head, 32-key block s of
// the row's sequence (uniform sequences of `len` tokens).
__global__ void keepBits(unsigned *bits, long long words, int heads, int len, int blocks,
                         bool causal, unsigned long long seed, unsigned offset, unsigned stream,
                         unsigned keepMin) {
  for (long long w = blockIdx.x * (long long)blockDim.x + threadIdx.x; w < words;
       w += (long long)gridDim.x * blockDim.x) {
    const int s = (int)(w % blocks);
    const long long rowHead = w / blocks;
    const long long row = rowHead / heads;
    if (causal && 32LL * s > row % len) { bits[w] = 0u; continue; }
    unsigned word = 0;
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      uint4 x = philox(make_uint4(4u * s + t, (unsigned)rowHead, stream, offset), seed);
      const unsigned m[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
      for (int q = 0; q < 4; ++q)
#pragma unroll
        for (int p = 0; p < 2; ++p)
          word |= (unsigned)(((p ? m[q] >> 16 : m[q] & 0xffffu) >= keepMin)) << (8 * q + 2 * t + p);
    }
    bits[w] = word;
  }
}

int main() {
  struct Shape { const char *name; int batch, heads, len; bool causal; };
  const Shape shapes[] = {{"32x12x512x64 (BERT-base)", 32, 12, 512, false},
                          {"16x16x1024x64 causal (GPT-2 medium)", 16, 16, 1024, true},
                          {"8x16x2048x64", 8, 16, 2048, false},
                          {"64x12x197x64 (ViT-B/16 shape)", 64, 12, 197, false}};
  const float rate = 0.1f;
  const unsigned keepMin = (unsigned)std::ceil(rate * 65536.0);
  const unsigned long long seed = 0x1234567890abcdefULL;
  const unsigned offset = 7, stream = 3;
  for (const Shape &sh : shapes) {
    const int blocks = (sh.len + 31) / 32;
    const long long rows = (long long)sh.batch * sh.len;
    const long long words = rows * sh.heads * blocks;
    unsigned *bits;
    CK(cudaMalloc(&bits, words * 4));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    const int threads = 256, grid = 132 * 16;
    for (int i = 0; i < 3; ++i)
      keepBits<<<grid, threads>>>(bits, words, sh.heads, sh.len, blocks, sh.causal, seed, offset, stream, keepMin);
    CK(cudaGetLastError());
    std::vector<float> ms;
    for (int i = 0; i < 20; ++i) {
      CK(cudaEventRecord(a));
      keepBits<<<grid, threads>>>(bits, words, sh.heads, sh.len, blocks, sh.causal, seed, offset, stream, keepMin);
      CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
      float t; CK(cudaEventElapsedTime(&t, a, b)); ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    // Check sampled words against the reference's numbers.
    std::vector<unsigned> host(words);
    CK(cudaMemcpy(host.data(), bits, words * 4, cudaMemcpyDeviceToHost));
    long long bad = 0, checked = 0;
    for (long long w = 0; w < words; w += 997) {
      const int s = (int)(w % blocks);
      const long long rowHead = w / blocks, row = rowHead / sh.heads, head = rowHead % sh.heads;
      for (int k = 0; k < 32; ++k) {
        const long long key = 32LL * s + k;
        bool expect = false;
        if (!(sh.causal && 32LL * s > row % sh.len))
          expect = ls2c::reference::attentionUniformAt((int64_t)seed, offset, stream, row, head,
                                                       sh.heads, key) >= rate;
        bad += ((host[w] >> k & 1u) != 0) != expect;
        ++checked;
      }
    }
    std::printf("%-40s %9.1f us a layer (median of 20), %7.1f MB of bits, %lld of %lld sampled bits wrong\n",
                sh.name, 1000.0 * ms[ms.size() / 2], words * 4 / 1e6, bad, checked);
    CK(cudaFree(bits));
  }
  return 0;
}
