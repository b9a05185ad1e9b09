//===- FlashAttentionParts.cpp - what the tensor-core attention kernels share -===//
//
// Definitions of FlashAttentionParts.h: the device helper sources and the
// source pieces the forward, dq and dk/dv generators assemble.
//
//===----------------------------------------------------------------------===//

#include "FlashAttentionParts.h"

#include "Prelude.h"

#include <set>

using namespace mlir;

namespace ls2c::codegen::attention {

/// Device helpers of the tensor-core kernels (after attentionHelpers).
static const char *const kFlashHelpers = R"cuda(
// Hopper's warpgroup MMA where the target has it (sm_90a; sm_90 is compiled
// as sm_90a, KernelCompiler.cpp) and the head dim is a multiple of 64: the
// same launch, tiles in wgmma's 128-byte swizzled layout and wgmma in place
// of ldmatrix + mma.sync. Other head dims keep mma.sync: wgmma on unswizzled
// tiles ran the forward slower than mma.sync (H200, head dim 128, 1.83-1.93
// against 1.71 ms; bench/RESULTS.md).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) && ${D} % 64 == 0
#define LS2_WGMMA 1
#else
#define LS2_WGMMA 0
#endif
typedef ${T} ls2_t;
// C += A B on a 16x8x16 tile, f32 accumulators (PTX ISA, mma.m16n8k16):
// lane (g = lane / 4, t = lane % 4) holds A rows g, g + 8 and columns
// 2t, 2t + 1, 2t + 8, 2t + 9; B rows (k) 2t, 2t + 1, 2t + 8, 2t + 9 of
// column g; C rows g, g + 8 and columns 2t, 2t + 1.
__device__ __forceinline__ void ls2_mma(float (&c)[4], const unsigned (&a)[4], unsigned b0,
                                        unsigned b1) {
  // Not volatile: a pure register operation, so the compiler may
  // interleave independent accumulator chains (ldmatrix stays volatile: it
  // reads shared memory written before a barrier).
  asm("mma.sync.aligned.m16n8k16.row.col.f32.${MMA}.${MMA}.f32 {%0,%1,%2,%3}, "
               "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Two floats rounded to the storage type, the first in the low half.
__device__ __forceinline__ unsigned ls2_pack(float lo, float hi) {
  ${T2} v = ${PACK}(lo, hi);
  return *reinterpret_cast<unsigned *>(&v);
}
// Elements i and i + 1 of p, one 4-byte store when aligned (a thread's
// accumulator column pairs), else two 2-byte ones; the same rounding.
__device__ __forceinline__ void ls2_store_pair(ls2_t *p, long long i, float x, float y) {
  if ((reinterpret_cast<unsigned long long>(p + i) & 3) == 0) {
    *reinterpret_cast<unsigned *>(p + i) = ls2_pack(x, y);
  } else {
    ls2_store(p, i, x);
    ls2_store(p, i + 1, y);
  }
}
// Four 8x8 matrices of a shared tile; lane l gives the address of row l % 8
// of matrix l / 8 and receives, of each, row g and columns 2t, 2t + 1.
__device__ __forceinline__ void ls2_ldsm(unsigned (&r)[4], const ls2_t *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"((unsigned)__cvta_generic_to_shared(p)));
}
// The A fragment of rows r .. r + 15 and columns c .. c + 15 of a shared
// tile with `lds` elements per row.
__device__ __forceinline__ void ls2_a_fragment(unsigned (&a)[4], const ls2_t *tile, int lds,
                                               int r, int c) {
  const int lane = threadIdx.x % 32;
  ls2_ldsm(a, tile + (r + (lane & 7) + ((lane >> 3) & 1) * 8) * lds + c + (lane >> 4) * 8);
}
// B fragments of the 8-column tiles n and n + 8 of B = T^T, T a row-major
// [n][k] shared tile, for k = c .. c + 15: b[0], b[1] of tile n, b[2], b[3]
// of tile n + 8.
__device__ __forceinline__ void ls2_b_fragments(unsigned (&b)[4], const ls2_t *tile, int lds,
                                                int n, int c) {
  const int lane = threadIdx.x % 32;
  ls2_ldsm(b, tile + (n + (lane & 7) + (lane >> 4) * 8) * lds + c + ((lane >> 3) & 1) * 8);
}
// The A fragment of rows r .. r + 15 and columns c .. c + 15 of T^T, T a
// row-major shared tile with `lds` elements per row (ldmatrix .trans: row
// c + i of T holds column c + i of the fragment's block).
__device__ __forceinline__ void ls2_a_fragment_t(unsigned (&a)[4], const ls2_t *tile, int lds,
                                                 int r, int c) {
  const int lane = threadIdx.x % 32;
  const ls2_t *p = tile + (c + (lane & 7) + ((lane >> 4) & 1) * 8) * lds + r + ((lane >> 3) & 1) * 8;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"((unsigned)__cvta_generic_to_shared(p)));
}
// The A fragment of a 16x16 block from accumulators of two 8-column tiles.
__device__ __forceinline__ void ls2_a_from_c(unsigned (&a)[4], const float (&lo)[4],
                                             const float (&hi)[4]) {
  a[0] = ls2_pack(lo[0], lo[1]);
  a[1] = ls2_pack(lo[2], lo[3]);
  a[2] = ls2_pack(hi[0], hi[1]);
  a[3] = ls2_pack(hi[2], hi[3]);
}
// B fragments of two adjacent 8-column tiles (columns c .. c + 15) of rows
// k .. k + 15 of a row-major [k][n] shared tile: ldmatrix .trans hands each
// lane rows 2t, 2t + 1 (and + 8) of column g.
__device__ __forceinline__ void ls2_b_fragments_t(unsigned (&b)[4], const ls2_t *tile, int lds,
                                                  int k, int c) {
  const int lane = threadIdx.x % 32;
  const ls2_t *p = tile + (k + (lane & 7) + ((lane >> 3) & 1) * 8) * lds + c + (lane >> 4) * 8;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
               : "r"((unsigned)__cvta_generic_to_shared(p)));
}
// One 16-byte chunk of a tile row: a cp.async (zero-filled past `valid`)
// or, unaligned, element copies.
__device__ __forceinline__ void ls2_load_chunk(ls2_t *to, const ls2_t *from, bool in,
                                               bool vectors) {
  if (vectors) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"((unsigned)__cvta_generic_to_shared(to)), "l"(from), "r"(in ? 16 : 0)
                 : "memory");
  } else if (in) {
#pragma unroll
    for (int e = 0; e < 8; ++e) to[e] = from[e];
  } else {
    *reinterpret_cast<uint4 *>(to) = make_uint4(0u, 0u, 0u, 0u);
  }
}
// One float, zero-filled when !in (cp.async, in the current group).
__device__ __forceinline__ void ls2_load_f32(float *to, const float *from, bool in) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
               :: "r"((unsigned)__cvta_generic_to_shared(to)), "l"(from), "r"(in ? 4 : 0)
               : "memory");
}
// The key a dk/dv tile's row r holds when its keys are permuted (attention
// dropout): rows 16w + g + 8h (warp w, g < 8, h < 2) hold keys 32 (w / 2) +
// 8 (g % 4) + 4 (w % 2) + 2 (g / 4) + h, so the 4 lanes with the same g / 4
// hold the 8 keys of one dropout call (ls2_attention_philox), a thread the
// bytes of one word. A permutation of each 32 rows.
__device__ __forceinline__ int ls2_tile_key(int r) {
  return (r & ~31) | (r & 3) << 3 | (r >> 4 & 1) << 2 | (r >> 2 & 1) << 1 | (r >> 3 & 1);
}
#if LS2_WGMMA
// Hopper (sm_90a): tiles in the layout wgmma reads (PTX ISA, "Shared Memory
// Matrix Layout"), the 128-byte swizzle: [D / 64][ROWS][64] with 16-byte
// chunk j of row r at chunk j ^ (r % 8), so a row's 8 chunks spread over all
// banks for every 8 rows. The tile must start 1024-byte aligned. LDS is
// ignored. PERMUTE: row r holds source row ls2_tile_key(r).
template <int ROWS, int D, int LDS, bool PERMUTE = false>
__device__ __forceinline__ void ls2_load_tile(ls2_t *tile, const ls2_t *src, long long r0,
                                              long long valid, long long stride, long long c0,
                                              bool vectors) {
  static_assert(D % 64 == 0 && ROWS % 8 == 0, "128-byte swizzled tiles");
  static_assert(!PERMUTE || ROWS % 32 == 0, "permuted rows come in 32s");
  const int rows = (int)(valid < ROWS ? (valid > 0 ? valid : 0) : ROWS);
  // A thread keeps chunk j of rows first, first + RSTEP, ... of each
  // 64-column block: its swizzled column is the same in all of them.
  constexpr int RSTEP = ${THREADS} / 8;
  const int j = threadIdx.x % 8, first = threadIdx.x / 8;
  ls2_t *to = tile + first * 64 + ((j ^ (first % 8)) * 8);
  const long long step = RSTEP * stride;
  if (vectors) {
    const unsigned at = (unsigned)__cvta_generic_to_shared(to);
#pragma unroll
    for (int half = 0; half < D / 64; ++half) {
      const ls2_t *from = src + (r0 + first) * stride + c0 + half * 64 + j * 8;
#pragma unroll
      for (int pass = 0; pass < (ROWS + RSTEP - 1) / RSTEP; ++pass, from += step) {
        const int r = first + pass * RSTEP;
        if (ROWS % RSTEP != 0 && r >= ROWS) break;
        const int key = PERMUTE ? ls2_tile_key(r) : r;
        const ls2_t *row = PERMUTE ? src + (r0 + key) * stride + c0 + half * 64 + j * 8 : from;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                     :: "r"(at + (half * ROWS + pass * RSTEP) * 128), "l"(key < rows ? row : src),
                        "r"(key < rows ? 16 : 0)
                     : "memory");
      }
    }
  } else {
#pragma unroll 1
    for (int half = 0; half < D / 64; ++half)
#pragma unroll 1
      for (int r = first; r < ROWS; r += RSTEP) {
        const int key = PERMUTE ? ls2_tile_key(r) : r;
        ls2_load_chunk(to + (half * ROWS + r - first) * 64,
                       key < rows ? src + (r0 + key) * stride + c0 + half * 64 + j * 8 : src,
                       key < rows, false);
      }
  }
}
#else
// Rows r0 .. r0 + ROWS - 1 of a [tokens, stride] tensor, columns c0 ..
// c0 + D - 1, into a shared tile of LDS elements per row; rows from `valid`
// on are zeros (a masked probability times garbage could be NaN). With
// 16-byte aligned rows every chunk is a cp.async (src-size 0 zero-fills),
// so all of a tile's loads are in flight at once instead of one latency per
// chunk; ls2_sync() waits for them. A thread keeps one column chunk and
// steps its row by ${THREADS} / chunks-per-row: the loop unrolls and the
// addresses are increments, not a 64-bit product per chunk (these loads
// were 40% of the forward kernel's instructions). PERMUTE: row r holds
// source row ls2_tile_key(r).
template <int ROWS, int D, int LDS, bool PERMUTE = false>
__device__ __forceinline__ void ls2_load_tile(ls2_t *tile, const ls2_t *src, long long r0,
                                              long long valid, long long stride, long long c0,
                                              bool vectors) {
  constexpr int CHUNKS = D / 8;
  // One test of `vectors` a tile, not a chunk, and 32-bit row tests: with
  // a branch and 64-bit compares per chunk the forward's key-tile loop spent
  // about 15 instructions a chunk, 16 chunks a tile, beside its 256 mma
  // (its SASS; H200, 4x16x4096x128 forward 1.82 -> 1.71 ms).
  static_assert(!PERMUTE || ROWS % 32 == 0, "permuted rows come in 32s");
  const int rows = (int)(valid < ROWS ? (valid > 0 ? valid : 0) : ROWS);
  if (vectors) {
    if constexpr (${THREADS} % CHUNKS == 0) {
      constexpr int STEP = ${THREADS} / CHUNKS;
      const int col = (threadIdx.x % CHUNKS) * 8, first = threadIdx.x / CHUNKS;
      const ls2_t *from = src + (r0 + first) * stride + c0 + col;
      const long long step = STEP * stride;
      const unsigned to = (unsigned)__cvta_generic_to_shared(tile + first * LDS + col);
#pragma unroll
      for (int pass = 0; pass < (ROWS + STEP - 1) / STEP; ++pass, from += step) {
        const int r = first + pass * STEP;
        if (ROWS % STEP != 0 && r >= ROWS) break;
        const int key = PERMUTE ? ls2_tile_key(r) : r;
        const ls2_t *row = PERMUTE ? src + (r0 + key) * stride + c0 + col : from;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                     :: "r"(to + pass * STEP * LDS * 2), "l"(key < rows ? row : src),
                        "r"(key < rows ? 16 : 0)
                     : "memory");
      }
    } else { // head dims 80, 96: rows of 10 or 12 chunks
#pragma unroll
      for (int c = threadIdx.x; c < ROWS * CHUNKS; c += ${THREADS}) {
        const int r = c / CHUNKS, col = (c % CHUNKS) * 8, key = PERMUTE ? ls2_tile_key(r) : r;
        ls2_load_chunk(tile + r * LDS + col,
                       key < rows ? src + (r0 + key) * stride + c0 + col : src, key < rows, true);
      }
    }
  } else {
#pragma unroll 1
    for (int c = threadIdx.x; c < ROWS * CHUNKS; c += ${THREADS}) {
      const int r = c / CHUNKS, col = (c % CHUNKS) * 8, key = PERMUTE ? ls2_tile_key(r) : r;
      ls2_load_chunk(tile + r * LDS + col,
                     key < rows ? src + (r0 + key) * stride + c0 + col : src, key < rows, false);
    }
  }
}
#endif
// Shared memory written by this thread (cp.async, stores) is made visible
// to the async proxy that wgmma reads through, before the barrier.
__device__ __forceinline__ void ls2_proxy_fence() {
#if LS2_WGMMA
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
// The block's barrier after its cp.async tile loads have landed.
__device__ __forceinline__ void ls2_sync() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  ls2_proxy_fence();
  __syncthreads();
}
// Double buffering: the loads issued so far form one group (the next
// tile's prefetch); ls2_sync_but_one() waits for all groups but that newest
// one, then the block's barrier, so the current tile has landed while the
// next one is still in flight.
__device__ __forceinline__ void ls2_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
__device__ __forceinline__ void ls2_sync_but_one() {
  asm volatile("cp.async.wait_group 1;\n" ::: "memory");
  ls2_proxy_fence();
  __syncthreads();
}
// dout . out over 8 elements at 16-byte aligned addresses.
__device__ __forceinline__ float ls2_dot8(const ls2_t *a, const ls2_t *b) {
  const uint4 x = *reinterpret_cast<const uint4 *>(a), y = *reinterpret_cast<const uint4 *>(b);
  const ${T2} *x2 = reinterpret_cast<const ${T2} *>(&x), *y2 = reinterpret_cast<const ${T2} *>(&y);
  float d = 0.0f;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const float2 u = ${TO_FLOAT2}(x2[e]), w = ${TO_FLOAT2}(y2[e]);
    d += u.x * w.x + u.y * w.y;
  }
  return d;
}
// Whether 16-byte loads of rows of a tensor are aligned.
__device__ __forceinline__ bool ls2_vectors(const void *p, long long stride) {
  return ((unsigned long long)p % 16 == 0) && stride % 8 == 0;
}
// The sequence of tile slot `slot`: the last b with cu[b] / TILE + b <= slot.
__device__ __forceinline__ int ls2_tile_sequence(const int *cu, long long entries,
                                                 long long slot, int tile) {
  int lo = 0, hi = (int)entries - 2;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (cu[mid] / tile + mid <= slot) lo = mid; else hi = mid - 1;
  }
  return lo;
}
// 2^x on the SFU with subnormal results flushed to 0 (ex2.approx.ftz, what
// FlashAttention's exp2f compiles to under --use_fast_math): exp2f without
// fast math adds a scaling around the same approximation to keep
// subnormals, three more instructions per probability. A probability below
// 2^-126 of its row's maximum adds nothing to a sum that holds 1.
__device__ __forceinline__ float ls2_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float ls2_quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float ls2_quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}
)cuda";

/// Dropout helpers of the tensor-core kernels.
static const char *const kFlashDropoutHelpers = R"cuda(
// A 4 x 4 transpose over the lanes with the same t4 and g / 4 (lane bits 2
// and 3 are c = g % 4): lane c's x[m] becomes lane m's x[c]. Two butterfly
// stages: in each, a lane trades the two words whose index bit differs
// from its own lane bit.
__device__ __forceinline__ void ls2_transpose_quad(unsigned (&x)[4]) {
  const int c = (threadIdx.x >> 2) & 3;
#pragma unroll
  for (int bit = 0; bit < 2; ++bit) {
    const bool b = (c >> bit) & 1;
#pragma unroll
    for (int a = 0; a < 4; ++a) {
      if (a & (1 << bit)) continue;
      const int a2 = a | (1 << bit);
      const unsigned got = __shfl_xor_sync(0xffffffffu, b ? x[a] : x[a2], 4 << bit);
      if (b) x[a] = got; else x[a2] = got;
    }
  }
}
)cuda";

/// wgmma helpers (sm_90a): descriptors of swizzled tiles and, for each
/// N in `widths`, ls2_wg_ss (A and B in shared memory) and ls2_wg_rs (A in
/// registers) on a float[N / 8][4] accumulator, whose element [n][e] is
/// mma.sync's C element e of columns 8n .. 8n + 7 (PTX ISA, "wgmma
/// register fragments": warp w of the warpgroup holds rows 16w + g and 16w
/// + g + 8).
static std::string wgmmaHelpers(const std::set<int> &widths) {
  std::string src = R"cuda(#if LS2_WGMMA
// A shared operand in the 128-byte swizzle: start address and the byte
// distances lbo and sbo (PTX ISA, "Matrix Descriptor Format"; mode 1 in
// bits 62-63).
__device__ __forceinline__ unsigned long long ls2_wg_desc(const ls2_t *p, unsigned lbo,
                                                          unsigned sbo) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(p);
  return (unsigned long long)((a >> 4) & 0x3fff) |
         ((unsigned long long)((lbo >> 4) & 0x3fff) << 16) |
         ((unsigned long long)((sbo >> 4) & 0x3fff) << 32) | (1ull << 62);
}
// Rows r .. (M or N) by columns c .. c + 15 (K) of a [R][D] tile in
// ls2_load_tile's layout: K-major. The K step moves the start within the
// 128-byte row (the hardware swizzles the address); 8-row groups are 1024
// bytes apart (sbo; lbo is unused).
template <int R>
__device__ __forceinline__ unsigned long long ls2_wg_k(const ls2_t *tile, int r, int c) {
  return ls2_wg_desc(tile + (c / 64) * R * 64 + r * 64 + c % 64, 16, 1024);
}
// Rows r .. r + 15 (K) by the columns (N) from c0 (a multiple of 64) of
// such a tile: MN-major, for wgmma's transposed B. lbo steps along N
// (64-column blocks, R * 128 bytes apart) and sbo along K (8-row groups,
// 1024 bytes apart); the other assignment gave wrong products on the H200.
template <int R>
__device__ __forceinline__ unsigned long long ls2_wg_t(const ls2_t *tile, int r, int c0 = 0) {
  return ls2_wg_desc(tile + (c0 / 64) * R * 64 + r * 64, R * 128, 1024);
}
__device__ __forceinline__ void ls2_wg_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
// Closes the group of wgmma issued since the last commit.
__device__ __forceinline__ void ls2_wg_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most N committed groups are pending (they end in order).
template <int N>
__device__ __forceinline__ void ls2_wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void ls2_wg_commit_wait() {
  ls2_wg_commit();
  ls2_wg_wait<0>();
}
// After a wait: the compiler must not move reads of the accumulators above
// it (it sees wgmma as writing them at issue).
template <int N>
__device__ __forceinline__ void ls2_wg_acc_fence(float (&d)[N][4]) {
#pragma unroll
  for (int n = 0; n < N; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[n][e])::"memory");
}
)cuda";
  for (int n : widths) {
    std::string regs, outs;
    for (int i = 0; i < n / 2; ++i) {
      regs += (i ? ",%" : "%") + std::to_string(i);
      outs += std::string(i ? ", " : "") + "\"+f\"(d[" + std::to_string(i / 4) + "][" +
              std::to_string(i % 4) + "])";
    }
    const std::string shape = "m64n" + std::to_string(n) + "k16";
    const int k = n / 2;
    auto at = [&](int i) { return "%" + std::to_string(k + i); };
    // D's old value is read only when `accumulate`: the first k step needs
    // no zeroed registers (zeroing them made ptxas wait between wgmma).
    src += "// D (64 x " + std::to_string(n) + ") = A B (+ D if accumulate), A and B in shared "
           "memory; TB: B transposed.\n"
           "template <int TB>\n__device__ __forceinline__ void ls2_wg_ss(float (&d)[" +
           std::to_string(n / 8) + "][4], unsigned long long a, unsigned long long b, "
           "bool accumulate) {\n"
           "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, " + at(2) +
           ", 0;\\nwgmma.mma_async.sync.aligned." + shape + ".f32.${MMA}.${MMA} {" + regs +
           "}, " + at(0) + ", " + at(1) + ", p, 1, 1, 0, " + at(3) + ";\\n}\\n\"\n               : " +
           outs + "\n               : \"l\"(a), \"l\"(b), \"r\"((int)accumulate), \"n\"(TB));\n}\n";
    src += "// D (64 x " + std::to_string(n) + ") += A B, A in registers (mma.sync's A layout).\n"
           "template <int TB>\n__device__ __forceinline__ void ls2_wg_rs(float (&d)[" +
           std::to_string(n / 8) + "][4], const unsigned (&a)[4], unsigned long long b) {\n"
           "  asm volatile(\"wgmma.mma_async.sync.aligned." + shape + ".f32.${MMA}.${MMA} {" + regs +
           "}, {" + at(0) + "," + at(1) + "," + at(2) + "," + at(3) + "}, " + at(4) +
           ", 1, 1, 1, " + at(5) + ";\\n\"\n               : " + outs +
           "\n               : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(b), "
           "\"n\"(TB));\n}\n";
  }
  return src + "#endif\n";
}

/// Constants every kernel body starts with.
static const char *const kFlashConstants = R"cuda(  constexpr int D = ${D}, HQ = ${HQ}, HKV = ${HKV}, GROUP = ${GROUP};
  // Padded rows for mma.sync's ldmatrix (fragment loads hit distinct
  // banks); wgmma's layouts are unpadded, which keeps tiles 1024-byte aligned.
  constexpr int LDS = LS2_WGMMA ? D : D + 8;
  constexpr float SCALE = ${SCALE}, SCALE_LOG2 = ${SCALE} * 1.4426950408889634f;
  constexpr float LOG2E = 1.4426950408889634f;
  const float NEG_INF = __int_as_float(0xff800000);
  extern __shared__ __align__(1024) uint4 ls2_smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
  const int wr = warp * 16; // the warp's first row in the tile
  if (entries < 2) return;
)cuda";

static const char *const kFlashDropoutConstants =
    R"cuda(  constexpr unsigned KEEP_MIN = ${KEEP_MIN};
  constexpr float KEEP_SCALE = ${KEEP_SCALE};
  const long long seed_value = *seed, offset_value = *offset;
)cuda";

std::string dropoutDraw(const AttentionSpec &s) {
  std::string src = "      constexpr int DW = " + std::string(s.dropout ? "NT / 4" : "1") + ";\n" +
                    "      auto draw = [&](int rb, uint4 (&w)[DW]) {\n";
  if (!s.dropout)
    return src + "        (void)rb, (void)w;\n      };\n";
  return src + R"cuda(        static_assert(NT % 4 == 0, "key tiles of whole dropout calls");
        // Rows rowOf(rb, 0) and rowOf(rb, 1) = rowOf(rb, 0) + 8: one pair.
#pragma unroll
        for (int sp = 0; sp < DW; ++sp)
          w[sp] = ls2_attention_philox(seed_value, offset_value, (unsigned)stream,
                                       (unsigned)(ls2_attention_pair_row(q0, rowOf(rb, 0)) * HQ + h),
                                       n0 + 32 * sp + 2 * t4);
      };
)cuda";
}

std::map<std::string, std::string> flashValues(const AttentionSpec &s, const std::string &name) {
  bool bf16 = isa<BFloat16Type>(s.element);
  std::map<std::string, std::string> values = {{"NAME", name},
          {"T", s.storage},
          {"T2", bf16 ? "__nv_bfloat162" : "__half2"},
          {"PACK", bf16 ? "__floats2bfloat162_rn" : "__floats2half2_rn"},
          {"TO_FLOAT2", bf16 ? "__bfloat1622float2" : "__half22float2"},
          {"MMA", bf16 ? "bf16" : "f16"},
          {"D", std::to_string(s.headDim)},
          {"HQ", std::to_string(s.heads)},
          {"HKV", std::to_string(s.kvHeads)},
          {"GROUP", std::to_string(s.heads / s.kvHeads)},
          {"SCALE", floatLiteral(s.scale)},
          // Whether query i sees key j beyond j < lk: bottom-right causal.
          {"CAUSAL_OK", s.causal ? " && j <= i + lk - lq" : ""},
          // Whether a whole tile is visible (the last key to the first query).
          {"CAUSAL_FULL", s.causal ? " && n0 + BN - 1 <= first + lk - lq" : ""},
          {"CAUSAL_FULL_KV", s.causal ? " && first + BN - 1 <= qFirst + lk - lq" : ""},
          {"TILE", std::to_string(kTile)},
          {"THREADS", std::to_string(kThreads)}};
  addDropoutValues(values, s);
  return values;
}

/// One block per unit: a [tokens, heads] work space at `perBlock` rows a
/// block (the kernel loops when units outnumber blocks).
runtime::LaunchConfig tileLaunch(const runtime::Dim &tokens, unsigned tokensParam, int64_t heads,
                                 uint32_t sharedBytes, int tile, int threads) {
  runtime::LaunchConfig l;
  l.blockThreads = threads;
  // Half a tile per block: slots outnumber tokens / tile by up to batch.
  l.workPerBlock = tile / 2;
  l.maxBlocks = kMaxBlocks;
  l.dynamicSharedBytes = sharedBytes;
  runtime::Dim t = tokens;
  if (!t.isStatic())
    t = runtime::Dim{0, static_cast<int32_t>(tokensParam), 0};
  l.work = {t, runtime::Dim{heads, -1, 0}};
  return l;
}

std::string kernelStart(Operation *op, const AttentionSpec &s, const std::string &what,
                        const Params &p, int threads) {
  return header(op, s, "tensor-core " + what) + kernelPrelude() +
         attentionHelpers(s.dropout) + kFlashHelpers +
         wgmmaHelpers({32, 64, 128, static_cast<int>(s.headDim),
                       static_cast<int>(s.headDim) / dkDvSplits(s)}) +
         (s.dropout ? kFlashDropoutHelpers : "") + "\nextern \"C\" __global__ void " +
         "__launch_bounds__(" + std::to_string(threads) + ")\n${NAME}(" + p.declarations() +
         ") {\n" + kFlashConstants + (s.dropout ? kFlashDropoutConstants : "");
}

/// The unit loop's head: slot, head, sequence and the tile's first row
/// `first` (queries when `queries`, else keys); skips empty slots.
std::string unitLoop(bool queries, int splits, bool lastSlotsFirst) {
  std::string cu = queries ? "cu_seqlens_q" : "cu_seqlens_k";
  std::string heads = splits > 1 ? std::string("(") + (queries ? "HQ" : "HKV") + " * " +
                                       std::to_string(splits) + ")"
                                 : std::string(queries ? "HQ" : "HKV");
  std::string tokens = queries ? "tokens_q" : "tokens_k";
  std::string slot = lastSlotsFirst ? "units / " + heads + " - 1 - unit / " + heads
                                    : "unit / " + heads;
  return "  const long long units = (" + tokens + " / ${TILE} + entries) * " + heads + ";\n" +
         "  for (long long unit = blockIdx.x; unit < units; unit += gridDim.x) {\n" +
         "    const long long slot = " + slot + ";\n" +
         "    const int head = (int)(unit % " + heads + ");\n" +
         "    const int b = ls2_tile_sequence(" + cu + ", entries, slot, ${TILE});\n" +
         R"cuda(    const long long q0 = cu_seqlens_q[b], k0 = cu_seqlens_k[b];
    const long long lq = cu_seqlens_q[b + 1] - q0, lk = cu_seqlens_k[b + 1] - k0;
)cuda" + "    const long long first = (slot - (" +
         (queries ? "q0" : "k0") + " / ${TILE} + b)) * ${TILE};\n" + "    if (first >= " +
         (queries ? "lq" : "lk") + ") continue;\n" +
         "    ls2_sync(); // the previous unit is done with shared memory\n";
}

/// The keys a query tile sees: [0, kEnd).
std::string keyEnd(const AttentionSpec &s) {
  return s.causal ? "    const long long kEnd = min(lk, max(0LL, min(first + ${TILE}, lq) + lk - lq));\n"
                  : "    const long long kEnd = lk;\n";
}

/// The first key tile's loads into stage 0 of sKV (forward and dq), in the
/// group the first wait covers.
std::string firstKeyTileLoads() {
  return R"cuda(    if (kEnd > 0) {
      ls2_load_tile<BN, D, LDS>(sKV, k, k0, lk, stride_k, (long long)kvh * D, vk);
      ls2_load_tile<BN, D, LDS>(sKV + BN * LDS, v, k0, lk, stride_v, (long long)kvh * D, vv);
    }
)cuda";
}

/// The head of the loop over key tiles (forward and dq): two stages of K
/// and V in sKV, the next tile's cp.async loads in flight while this one is
/// computed; sK and sV are the current stage.
std::string keyTileLoopHead() {
  return R"cuda(    for (long long n0 = 0, stage = 0; n0 < kEnd; n0 += BN, stage ^= 1) {
      const ls2_t *sK = sKV + stage * 2 * BN * LDS, *sV = sK + BN * LDS;
      __syncthreads(); // every warp is done with the other stage
      if (n0 + BN < kEnd) {
        ls2_t *nK = sKV + (stage ^ 1) * 2 * BN * LDS;
        ls2_load_tile<BN, D, LDS>(nK, k, k0 + n0 + BN, lk - n0 - BN, stride_k, (long long)kvh * D, vk);
        ls2_load_tile<BN, D, LDS>(nK + BN * LDS, v, k0 + n0 + BN, lk - n0 - BN, stride_v,
                                  (long long)kvh * D, vv);
      }
      ls2_commit();
      ls2_sync_but_one();
)cuda";
}

std::string queryTileMask() {
  return R"cuda(      // Only tiles that cross the sequence end or the causal diagonal mask.
      const bool full = n0 + BN <= lk${CAUSAL_FULL};
      auto maskScores = [&](int rb) {
        if (full) return;
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const long long i = rowOf(rb, e / 2), j = n0 + nt * 8 + 2 * t4 + (e & 1);
            if (!(j < lk${CAUSAL_OK})) s[rb][nt][e] = NEG_INF;
          }
      };
)cuda";
}

std::string queryTileLoopHead(const AttentionSpec &s) {
  std::string src;
  // With dropout a query tile starts at a multiple of 16, so that a
  // thread's columns hold whole dropout row pairs (ls2_attention_philox);
  // the rows before the first that sees a key are masked (P = 0).
  if (!s.causal)
    src += "    const long long firstQuery = 0;\n";
  else if (s.dropout)
    src += "    const long long firstQuery = max(0LL, first - (lk - lq)) & ~15LL;\n";
  else
    src += "    const long long firstQuery = max(0LL, first - (lk - lq));\n";
  src += R"cuda(    const long long tiles = lq > firstQuery ? (lq - firstQuery + BM - 1) / BM : 0;
    if (tiles > 0) {
      ls2_load_tile<BM, D, LDS>(sQD, q, q0 + firstQuery, lq - firstQuery, stride_q,
                                (long long)(kvh * GROUP) * D, vq);
      ls2_load_tile<BM, D, LDS>(sQD + BM * LDS, dout, q0 + firstQuery, lq - firstQuery,
                                stride_dout, (long long)(kvh * GROUP) * D, vdo);
)cuda" + statsLoads("firstQuery", "kvh * GROUP", "0") + R"cuda(    }
    ls2_commit();
    for (long long it = 0; it < tiles * GROUP; ++it) {
      const int h = kvh * GROUP + (int)(it / tiles);
      const long long qFirst = firstQuery + (it % tiles) * BM;
      const ls2_t *sQ = sQD + (it & 1) * 2 * BM * LDS, *sDO = sQ + BM * LDS;
      const float *tD = sD + (it & 1) * BM, *tL = sL + (it & 1) * BM;
      __syncthreads(); // every warp is done with the other stage (and P and dS)
      if (it + 1 < tiles * GROUP) {
        const int hn = kvh * GROUP + (int)((it + 1) / tiles);
        const long long qn = firstQuery + ((it + 1) % tiles) * BM;
        ls2_t *nQ = sQD + ((it + 1) & 1) * 2 * BM * LDS;
        ls2_load_tile<BM, D, LDS>(nQ, q, q0 + qn, lq - qn, stride_q, (long long)hn * D, vq);
        ls2_load_tile<BM, D, LDS>(nQ + BM * LDS, dout, q0 + qn, lq - qn, stride_dout,
                                  (long long)hn * D, vdo);
)cuda" + statsLoads("qn", "hn", "(it + 1) & 1") + R"cuda(      }
      ls2_commit();
      ls2_sync_but_one();
)cuda";
  return src;
}

uint64_t backwardScratchBytes(const AttentionSpec &s, int64_t maxTokensQ) {
  return kScratchCounterBytes + 2 * static_cast<uint64_t>(maxTokensQ) * s.heads * 4;
}

std::string backwardScratchDeclarations(const AttentionSpec &s, int64_t maxTokensQ) {
  const uint64_t statElements = static_cast<uint64_t>(maxTokensQ) * s.heads;
  return "  float *scratch_d = reinterpret_cast<float *>(scratch + " +
         std::to_string(kScratchCounterBytes) + "), *scratch_bias = scratch_d + " +
         std::to_string(statElements) + ";\n";
}

std::string statsLoads(const std::string &rows0, const std::string &head,
                       const std::string &stage) {
  return "        if (threadIdx.x < BM) {\n"
         "          const long long i = " + rows0 + " + threadIdx.x;\n"
         "          const long long at = i < lq ? (q0 + i) * HQ + " + head + " : 0;\n"
         "          ls2_load_f32(sD + (" + stage + ") * BM + threadIdx.x, scratch_d + at, i < lq);\n"
         "          ls2_load_f32(sL + (" + stage + ") * BM + threadIdx.x, scratch_bias + at, i < lq);\n"
         "        }\n";
}

} // namespace ls2c::codegen::attention
