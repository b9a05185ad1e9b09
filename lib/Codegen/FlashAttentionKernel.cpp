//===- FlashAttentionKernel.cpp - tensor-core attention kernels ------------===//
//
// Work partition (FlashAttention-2, section 3.2): a unit is a tile of one
// sequence and head: 64 rows in dq and dk/dv, 128 query rows (64 for causal
// head dims up to 64) in the forward. Tile slots are numbered per sequence
// from cu_seqlens[b] / tile + b, which leaves room for each sequence's
// partial tile, so a block finds its sequence by binary search and at most
// batch slots go unused. Each of the 4 warps owns 16 rows of the tile (two
// blocks of 16 in the 128-row forward); a thread holds rows g and g + 8 of
// a block (g = lane / 4) in the mma accumulator layout, so row maxima and
// sums are reductions over the 4 lanes of a quad. dq leaves D_i = dout_i .
// out_i in kernel scratch for dk/dv.
// Scores are kept pre-multiplied by log2(e) so exponentials are exp2.
// Probabilities and dS are rounded to the storage type before the second
// matmul, as FlashAttention does.
//
//===----------------------------------------------------------------------===//

#include "FlashAttentionKernel.h"

#include "Prelude.h"

using namespace mlir;

namespace ls2c::codegen::attention {

namespace {

constexpr int kThreads = 128;
constexpr int kTile = 64; ///< rows per unit (queries in dq, keys in dk/dv)
/// Query rows per forward and dq unit: 128, two 16-row blocks a warp, so
/// each K and V fragment feeds two mma (H200, 4x16x4096x128 bf16 forward:
/// 2.67 -> 1.87 ms; GPT-2 medium's causal head-dim-64 forward 9.9 ms at
/// 128 rows, 10.2 at 64 in the same code).
int forwardRows(const AttentionSpec &) { return 128; }
constexpr uint32_t kMaxBlocks = 65536;

/// Device helpers of the tensor-core kernels (after attentionHelpers).
const char *kFlashHelpers = R"cuda(
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
// Rows r0 .. r0 + ROWS - 1 of a [tokens, stride] tensor, columns c0 ..
// c0 + D - 1, into a shared tile of LDS elements per row; rows from `valid`
// on are zeros (a masked probability times garbage could be NaN). With
// 16-byte aligned rows every chunk is a cp.async (src-size 0 zero-fills),
// so all of a tile's loads are in flight at once instead of one latency per
// chunk; ls2_sync() waits for them. A thread keeps one column chunk and
// steps its row by ${THREADS} / chunks-per-row: the loop unrolls and the
// addresses are increments, not a 64-bit product per chunk (these loads
// were 40% of the forward kernel's instructions).
template <int ROWS, int D, int LDS>
__device__ __forceinline__ void ls2_load_tile(ls2_t *tile, const ls2_t *src, long long r0,
                                              long long valid, long long stride, long long c0,
                                              bool vectors) {
  constexpr int CHUNKS = D / 8;
  if constexpr (${THREADS} % CHUNKS == 0) {
    constexpr int STEP = ${THREADS} / CHUNKS;
    const int col = (threadIdx.x % CHUNKS) * 8, first = threadIdx.x / CHUNKS;
    const ls2_t *from = src + (r0 + first) * stride + c0 + col;
    ls2_t *to = tile + first * LDS + col;
#pragma unroll
    for (int r = first, pass = 0; pass < (ROWS + STEP - 1) / STEP;
         ++pass, r += STEP, from += STEP * stride, to += STEP * LDS) {
      if (ROWS % STEP != 0 && r >= ROWS) break;
      ls2_load_chunk(to, r < valid ? from : src, r < valid, vectors);
    }
  } else { // head dims 80, 96: rows of 10 or 12 chunks
#pragma unroll
    for (int c = threadIdx.x; c < ROWS * CHUNKS; c += ${THREADS}) {
      const int r = c / CHUNKS, col = (c % CHUNKS) * 8;
      const bool in = r < valid;
      ls2_load_chunk(tile + r * LDS + col, in ? src + (r0 + r) * stride + c0 + col : src, in,
                     vectors);
    }
  }
}
// The block's barrier after its cp.async tile loads have landed.
__device__ __forceinline__ void ls2_sync() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
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
__device__ __forceinline__ float ls2_quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float ls2_quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}
)cuda";

/// Dropout helpers of the tensor-core kernels: lanes that need the same
/// Philox call (the attention layout draws one per query row and 4 keys)
/// compute different ones and trade them with shuffles.
const char *kFlashDropoutHelpers = R"cuda(
__device__ __forceinline__ uint4 ls2_shfl_words(uint4 w, int lane) {
  return make_uint4(__shfl_sync(0xffffffffu, w.x, lane), __shfl_sync(0xffffffffu, w.y, lane),
                    __shfl_sync(0xffffffffu, w.z, lane), __shfl_sync(0xffffffffu, w.w, lane));
}
// Words of packed query rows `row` and `row` + 8 (a thread's two
// accumulator rows) for the key block of j: lanes t and t ^ 1 share the
// block; the odd one computes row + 8, the even one row.
__device__ __forceinline__ void ls2_row_pair_philox(uint4 (&words)[2], long long seed,
                                                    long long offset, unsigned stream,
                                                    long long row, int heads, int head,
                                                    long long j) {
  const int lane = threadIdx.x % 32, odd = lane & 1;
  const uint4 mine = ls2_attention_philox(seed, offset, stream,
                                          (unsigned)((row + 8 * odd) * heads + head),
                                          (unsigned)(j >> 2));
  const uint4 theirs = ls2_shfl_words(mine, lane ^ 1);
  words[0] = odd ? theirs : mine;
  words[1] = odd ? mine : theirs;
}
// Words of a dk/dv thread's elements (keys `key`, `key` + 8 by packed query
// rows `row`, `row` + 1, in accumulator order): the 4 lanes with the same
// t and g / 4 need the same 4 calls; lane g % 4 = c computes call c.
__device__ __forceinline__ void ls2_key_quad_philox(uint4 (&words)[4], long long seed,
                                                    long long offset, unsigned stream,
                                                    long long row, int heads, int head,
                                                    long long key) {
  const int lane = threadIdx.x % 32, c = (lane >> 2) & 3;
  const uint4 mine = ls2_attention_philox(seed, offset, stream,
                                          (unsigned)((row + (c & 1)) * heads + head),
                                          (unsigned)((key + 8 * (c >> 1)) >> 2));
#pragma unroll
  for (int q = 0; q < 4; ++q) words[q] = ls2_shfl_words(mine, (lane & ~12) | (q << 2));
}
)cuda";

/// Constants every kernel body starts with.
const char *kFlashConstants = R"cuda(  constexpr int D = ${D}, HQ = ${HQ}, HKV = ${HKV}, GROUP = ${GROUP};
  constexpr int LDS = D + 8; // padded rows: fragment loads hit distinct banks
  constexpr float SCALE = ${SCALE}, SCALE_LOG2 = ${SCALE} * 1.4426950408889634f;
  constexpr float LOG2E = 1.4426950408889634f;
  const float NEG_INF = __int_as_float(0xff800000);
  extern __shared__ uint4 ls2_smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
  const int wr = warp * 16; // the warp's first row in the tile
  if (entries < 2) return;
)cuda";

const char *kFlashDropoutConstants =
    R"cuda(  constexpr float RATE = ${RATE}, KEEP_SCALE = ${KEEP_SCALE};
  const long long seed_value = *seed, offset_value = *offset;
)cuda";

std::map<std::string, std::string> flashValues(const AttentionSpec &s, const std::string &name) {
  bool bf16 = isa<BFloat16Type>(s.element);
  return {{"NAME", name},
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
          {"RATE", floatLiteral(s.rate)},
          {"KEEP_SCALE", floatLiteral(static_cast<float>(1.0 / (1.0 - s.rate)))},
          // Whether query i sees key j beyond j < lk: bottom-right causal.
          {"CAUSAL_OK", s.causal ? " && j <= i + lk - lq" : ""},
          // Whether a whole tile is visible (the last key to the first query).
          {"CAUSAL_FULL", s.causal ? " && n0 + BN - 1 <= first + lk - lq" : ""},
          {"CAUSAL_FULL_KV", s.causal ? " && first + BN - 1 <= qFirst + lk - lq" : ""},
          {"TILE", std::to_string(kTile)},
          {"THREADS", std::to_string(kThreads)}};
}

/// One block per unit: a [tokens, heads] work space at `perBlock` rows a
/// block (the kernel loops when units outnumber blocks).
runtime::LaunchConfig tileLaunch(const runtime::Dim &tokens, unsigned tokensParam, int64_t heads,
                                 uint32_t sharedBytes, int tile = kTile, int threads = kThreads) {
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
                        const Params &p, int threads = kThreads) {
  return header(op, s, "tensor-core " + what) + kernelPrelude() +
         attentionHelpers(s.dropout) + kFlashHelpers +
         (s.dropout ? kFlashDropoutHelpers : "") + "\nextern \"C\" __global__ void " +
         "__launch_bounds__(" + std::to_string(threads) + ")\n${NAME}(" + p.declarations() +
         ") {\n" + kFlashConstants + (s.dropout ? kFlashDropoutConstants : "");
}

/// The unit loop's head: slot, head, sequence and the tile's first row
/// `first` (queries when `queries`, else keys); skips empty slots.
std::string unitLoop(bool queries) {
  std::string cu = queries ? "cu_seqlens_q" : "cu_seqlens_k";
  std::string heads = queries ? "HQ" : "HKV";
  std::string tokens = queries ? "tokens_q" : "tokens_k";
  return "  const long long units = (" + tokens + " / ${TILE} + entries) * " + heads + ";\n" +
         "  for (long long unit = blockIdx.x; unit < units; unit += gridDim.x) {\n" +
         "    const long long slot = unit / " + heads + ";\n" +
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

} // namespace

bool flashApplies(const AttentionSpec &s) {
  return isa<Float16Type, BFloat16Type>(s.element) && s.headDim % 16 == 0 && s.headDim >= 16 &&
         s.headDim <= 128;
}

GeneratedKernel generateFlashForward(Operation *op, const AttentionSpec &s,
                                     const std::string &kernelName) {
  GeneratedKernel out;
  out.kernel.name = kernelName;
  Params p(out);
  unsigned tokens = addForwardParams(p, s);
  // A Q tile of `rows` rows and two stages of K and V tiles of 64.
  const int rows = forwardRows(s);
  uint32_t shared = static_cast<uint32_t>((rows + 4 * kTile) * (s.headDim + 8) * 2);
  out.kernel.launch = tileLaunch(s.tokensQ, tokens, s.heads, shared, rows);

  std::string src = kernelStart(op, s, "forward", p);
  // RB row blocks of 16 per warp: each K or V fragment loaded from shared
  // memory feeds RB mma (FlashAttention-2's 128 x 64 tiles at 4 warps).
  src += R"cuda(  constexpr int RB = ${RB}, BM = ${TILE}, BN = 64, KS = D / 16, NT = BN / 8, DT = D / 8;
  static_assert(BM == 64 * RB, "4 warps of RB row blocks");
  // Stage s of K and V: sKV + s * 2 * BN * LDS, V after K.
  ls2_t *sQ = reinterpret_cast<ls2_t *>(ls2_smem), *sKV = sQ + BM * LDS;
  const bool vq = ls2_vectors(q, stride_q), vk = ls2_vectors(k, stride_k),
             vv = ls2_vectors(v, stride_v);
  const int wrb = warp * 16 * RB; // the warp's first row: row block rb is wrb + 16 rb
)cuda";
  src += unitLoop(true);
  src += "    const int h = head, kvh = head / GROUP;\n";
  src += keyEnd(s);
  src += "    ls2_load_tile<BM, D, LDS>(sQ, q, q0 + first, lq - first, stride_q, (long long)h * D, "
         "vq);\n";
  src += firstKeyTileLoads();
  src += R"cuda(    ls2_sync();
    // Online softmax per row (rb, r: row wrb + 16 rb + g + 8 r): m the
    // running max (log2 units) and l this lane's part of the sum of
    // exp2(s - m) before dropout.
    float m[RB][2], l[RB][2], acc[RB][DT][4];
    long long rows[RB][2];
#pragma unroll
    for (int rb = 0; rb < RB; ++rb) {
      m[rb][0] = m[rb][1] = NEG_INF;
      l[rb][0] = l[rb][1] = 0.0f;
      rows[rb][0] = first + wrb + 16 * rb + g;
      rows[rb][1] = rows[rb][0] + 8;
#pragma unroll
      for (int dt = 0; dt < DT; ++dt)
        acc[rb][dt][0] = acc[rb][dt][1] = acc[rb][dt][2] = acc[rb][dt][3] = 0.0f;
    }
)cuda";
  src += keyTileLoopHead();
  src += R"cuda(      float s[RB][NT][4];
#pragma unroll
      for (int rb = 0; rb < RB; ++rb)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) s[rb][nt][0] = s[rb][nt][1] = s[rb][nt][2] = s[rb][nt][3] = 0.0f;
      // k outer: RB * NT independent accumulator chains per step. Q
      // fragments come from shared memory (registers hold acc and s).
#pragma unroll
      for (int kk = 0; kk < KS; ++kk) {
        unsigned qa[RB][4];
#pragma unroll
        for (int rb = 0; rb < RB; ++rb) ls2_a_fragment(qa[rb], sQ, LDS, wrb + 16 * rb, kk * 16);
#pragma unroll
        for (int np = 0; np < NT / 2; ++np) {
          unsigned kb[4];
          ls2_b_fragments(kb, sK, LDS, np * 16, kk * 16);
#pragma unroll
          for (int rb = 0; rb < RB; ++rb) {
            ls2_mma(s[rb][2 * np], qa[rb], kb[0], kb[1]);
            ls2_mma(s[rb][2 * np + 1], qa[rb], kb[2], kb[3]);
          }
        }
      }
      // Only tiles that cross the sequence end or the causal diagonal mask
      // (raw scores to -inf); the max is taken on raw scores and scaled.
      const bool full = n0 + BN <= lk${CAUSAL_FULL};
      if (!full) {
#pragma unroll
        for (int rb = 0; rb < RB; ++rb)
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const long long i = rows[rb][e / 2], j = n0 + nt * 8 + 2 * t4 + (e & 1);
              if (!(j < lk${CAUSAL_OK})) s[rb][nt][e] = NEG_INF;
            }
      }
#pragma unroll
      for (int rb = 0; rb < RB; ++rb) {
        float mx[2] = {NEG_INF, NEG_INF};
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) mx[e / 2] = fmaxf(mx[e / 2], s[rb][nt][e]);
        float base[2], correction[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          mx[r] = fmaxf(m[rb][r], ls2_quad_max(mx[r]) * SCALE_LOG2);
          base[r] = mx[r] == NEG_INF ? 0.0f : mx[r]; // a row with no key yet
          correction[r] = exp2f(m[rb][r] - base[r]);
          m[rb][r] = mx[r];
          l[rb][r] *= correction[r];
        }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            s[rb][nt][e] = exp2f(fmaf(s[rb][nt][e], SCALE_LOG2, -base[e / 2]));
            l[rb][e / 2] += s[rb][nt][e];
          }
#pragma unroll
        for (int dt = 0; dt < DT; ++dt) {
          acc[rb][dt][0] *= correction[0];
          acc[rb][dt][1] *= correction[0];
          acc[rb][dt][2] *= correction[1];
          acc[rb][dt][3] *= correction[1];
        }
      }
)cuda";
  if (s.dropout)
    src += R"cuda(#pragma unroll
      for (int rb = 0; rb < RB; ++rb)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const long long j = n0 + nt * 8 + 2 * t4;
          uint4 words[2];
          ls2_row_pair_philox(words, seed_value, offset_value, (unsigned)stream, q0 + rows[rb][0],
                              HQ, h, j);
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            s[rb][nt][2 * r] *= ls2_attention_keep(words[r], j, RATE) ? KEEP_SCALE : 0.0f;
            s[rb][nt][2 * r + 1] *= ls2_attention_keep(words[r], j + 1, RATE) ? KEEP_SCALE : 0.0f;
          }
        }
)cuda";
  src += R"cuda(#pragma unroll
      for (int ks = 0; ks < BN / 16; ++ks) {
        unsigned pa[RB][4];
#pragma unroll
        for (int rb = 0; rb < RB; ++rb) ls2_a_from_c(pa[rb], s[rb][2 * ks], s[rb][2 * ks + 1]);
#pragma unroll
        for (int dp = 0; dp < D / 16; ++dp) {
          unsigned vb[4];
          ls2_b_fragments_t(vb, sV, LDS, ks * 16, dp * 16);
#pragma unroll
          for (int rb = 0; rb < RB; ++rb) {
            ls2_mma(acc[rb][2 * dp], pa[rb], vb[0], vb[1]);
            ls2_mma(acc[rb][2 * dp + 1], pa[rb], vb[2], vb[3]);
          }
        }
      }
    }
    // A row that sees no key: out 0, lse -inf.
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float sum = ls2_quad_sum(l[rb][r]);
        const long long i = rows[rb][r];
        if (i >= lq) continue;
        const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
#pragma unroll
        for (int dt = 0; dt < DT; ++dt) {
          const long long at = (q0 + i) * stride_out + (long long)h * D + dt * 8 + 2 * t4;
          ls2_store(out, at, acc[rb][dt][2 * r] * inv);
          ls2_store(out, at + 1, acc[rb][dt][2 * r + 1] * inv);
        }
        if (t4 == 0)
          lse[(q0 + i) * HQ + h] =
              sum > 0.0f ? (m[rb][r] + log2f(sum)) * 0.6931471805599453f : NEG_INF;
      }
  }
}
)cuda";
  std::map<std::string, std::string> values = flashValues(s, kernelName);
  values["TILE"] = std::to_string(rows);
  values["RB"] = std::to_string(rows / 64);
  out.kernel.source = substitute(src, values);
  return out;
}

std::vector<GeneratedKernel> generateFlashBackward(Operation *op, const AttentionSpec &s,
                                                   const GradOperands &go, int64_t maxTokensQ,
                                                   const std::string &kernelName) {
  // Key tiles in dq and query tiles in dk/dv: 64 rows up to head dim 64,
  // 32 beyond, so accumulators, fragments and scores fit in registers.
  int inner = s.headDim <= 64 ? 64 : 32;
  uint32_t rowBytes = static_cast<uint32_t>((s.headDim + 8) * 2);
  std::vector<GeneratedKernel> kernels(2);
  // Past the scratch counters, f32 [maxTokensQ, heads] each: D_i, then the
  // exponent bias of P (lse_i in log2 units, 0 for a row without keys): dq
  // writes them, dk/dv reads them.
  const uint64_t statElements = static_cast<uint64_t>(maxTokensQ) * s.heads;
  const uint64_t scratchBytes = kScratchCounterBytes + 2 * statElements * 4;
  const std::string scratchD = "  float *scratch_d = reinterpret_cast<float *>(scratch + " +
                               std::to_string(kScratchCounterBytes) +
                               "), *scratch_bias = scratch_d + " +
                               std::to_string(statElements) + ";\n";
  // D_i = dout_i . out_i (also into scratch_d) and the exponent bias of
  // the query tile's rows, into sD and sL: `parts` threads per row.
  auto rowStats = [&](const std::string &rowsName) {
    return "    {\n      constexpr int PARTS = " + std::to_string(kThreads) + " / " + rowsName +
           ";\n" + R"cuda(      constexpr int SPAN = D / PARTS;
      const int r = threadIdx.x / PARTS, part = threadIdx.x % PARTS;
      const long long i = qFirst + r;
      float d = 0.0f;
      if (i < lq) {
        const ls2_t *pd = dout + (q0 + i) * stride_dout + (long long)h * D + part * SPAN;
        const ls2_t *po = out + (q0 + i) * stride_out + (long long)h * D + part * SPAN;
        if (SPAN % 8 == 0 && vdo && vout) {
#pragma unroll
          for (int c = 0; c < SPAN; c += 8) d += ls2_dot8(pd + c, po + c);
        } else {
#pragma unroll 8
          for (int c = 0; c < SPAN; ++c) d += ls2_cvt(pd[c]) * ls2_cvt(po[c]);
        }
      }
#pragma unroll
      for (int m = 1; m < PARTS; m <<= 1) d += __shfl_xor_sync(0xffffffffu, d, m);
      if (part == 0) {
        sD[r] = d;
        if (i < lq) scratch_d[(q0 + i) * HQ + h] = d;
        // The exponent bias of P = exp2(S log2e scale - bias): lse in log2
        // units, 0 for rows past the sequence or without keys (their scores
        // are all masked to -inf, so P is 0 without a -inf - -inf NaN).
        const float bias = i < lq ? lse[(q0 + i) * HQ + h] * LOG2E : NEG_INF;
        sL[r] = bias == NEG_INF ? 0.0f : bias;
        if (i < lq) scratch_bias[(q0 + i) * HQ + h] = sL[r];
      }
    }
)cuda";
  };
  // dk/dv: D_i and the bias of query tile rows `rows0` .. of head `head`
  // into stage `stage` of sD and sL, a thread a row, cp.async in the
  // current group (so the next tile's come with its Q and dO tiles; rows
  // past the sequence get 0).
  auto statsLoads = [](const std::string &rows0, const std::string &head,
                       const std::string &stage) {
    return "        if (threadIdx.x < BM) {\n"
           "          const long long i = " + rows0 + " + threadIdx.x;\n"
           "          const long long at = i < lq ? (q0 + i) * HQ + " + head + " : 0;\n"
           "          ls2_load_f32(sD + (" + stage + ") * BM + threadIdx.x, scratch_d + at, i < lq);\n"
           "          ls2_load_f32(sL + (" + stage + ") * BM + threadIdx.x, scratch_bias + at, i < lq);\n"
           "        }\n";
  };

  // dq per query tile: S and dP against each key tile, dS K accumulated.
  // Tiles of 128 queries (two 16-row blocks a warp, key tiles of 32) where
  // the forward takes them, so K and V fragments and each key tile's
  // barriers and loads serve twice the rows; else 64 queries.
  {
    GeneratedKernel &dq = kernels[0];
    dq.kernel.name = kernelName + "_dq";
    Params p(dq);
    unsigned tokens = addDqParams(p, s, go);
    p.pointer("unsigned char *scratch", ParamBinding::Kind::Scratch, 0);
    dq.kernel.scratchBytes = scratchBytes;
    const int rows = forwardRows(s), keys = rows == 128 ? 32 : inner;
    // Q and dO tiles, two stages of K and V tiles, D and lse of the rows.
    uint32_t shared = (2 * rows + 4 * keys) * rowBytes + 2 * rows * 4;
    dq.kernel.launch = tileLaunch(s.tokensQ, tokens, s.heads, shared, rows);
    std::string src = kernelStart(op, s, "dq", p);
    src += "  constexpr int RB = " + std::to_string(rows / 64) + ", BM = ${TILE}, BN = " +
           std::to_string(keys) + ";\n";
    src += R"cuda(  constexpr int KS = D / 16, NT = BN / 8, DT = D / 8;
  static_assert(BM == 64 * RB, "4 warps of RB row blocks");
  // Stage s of K and V: sKV + s * 2 * BN * LDS, V after K.
  ls2_t *sQ = reinterpret_cast<ls2_t *>(ls2_smem), *sDO = sQ + BM * LDS, *sKV = sDO + BM * LDS;
  float *sD = reinterpret_cast<float *>(sKV + 4 * BN * LDS), *sL = sD + BM;
  const bool vq = ls2_vectors(q, stride_q), vk = ls2_vectors(k, stride_k),
             vv = ls2_vectors(v, stride_v), vdo = ls2_vectors(dout, stride_dout),
             vout = ls2_vectors(out, stride_out);
  const int wrb = warp * 16 * RB; // the warp's first row: row block rb is wrb + 16 rb
)cuda";
    src += scratchD;
    src += unitLoop(true);
    src += R"cuda(    const int h = head, kvh = head / GROUP;
    const long long qFirst = first;
    ls2_load_tile<BM, D, LDS>(sQ, q, q0 + first, lq - first, stride_q, (long long)h * D, vq);
    ls2_load_tile<BM, D, LDS>(sDO, dout, q0 + first, lq - first, stride_dout, (long long)h * D,
                              vdo);
)cuda";
    src += keyEnd(s);
    src += firstKeyTileLoads();
    src += rowStats("BM");
    src += R"cuda(    ls2_sync();
    // One row block: Q and dO fragments stay in registers; two: they come
    // from shared memory (registers hold acc, S and dP).
    unsigned qa[RB == 1 ? KS : 1][4], da[RB == 1 ? KS : 1][4];
    if (RB == 1) {
#pragma unroll
      for (int kk = 0; kk < KS; ++kk) {
        ls2_a_fragment(qa[RB == 1 ? kk : 0], sQ, LDS, wrb, kk * 16);
        ls2_a_fragment(da[RB == 1 ? kk : 0], sDO, LDS, wrb, kk * 16);
      }
    }
    long long rows[RB][2];
    float rowL[RB][2], rowD[RB][2], acc[RB][DT][4];
#pragma unroll
    for (int rb = 0; rb < RB; ++rb) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = wrb + 16 * rb + g + 8 * r;
        rows[rb][r] = first + row;
        rowL[rb][r] = sL[row];
        rowD[rb][r] = sD[row];
      }
#pragma unroll
      for (int dt = 0; dt < DT; ++dt)
        acc[rb][dt][0] = acc[rb][dt][1] = acc[rb][dt][2] = acc[rb][dt][3] = 0.0f;
    }
)cuda";
    src += keyTileLoopHead();
    src += R"cuda(      float s[RB][NT][4], dp[RB][NT][4];
#pragma unroll
      for (int rb = 0; rb < RB; ++rb)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[rb][nt][e] = dp[rb][nt][e] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < KS; ++kk) {
        unsigned qf[RB][4], df[RB][4];
#pragma unroll
        for (int rb = 0; rb < RB; ++rb) {
          if (RB == 1) {
#pragma unroll
            for (int x = 0; x < 4; ++x) qf[rb][x] = qa[RB == 1 ? kk : 0][x], df[rb][x] = da[RB == 1 ? kk : 0][x];
          } else {
            ls2_a_fragment(qf[rb], sQ, LDS, wrb + 16 * rb, kk * 16);
            ls2_a_fragment(df[rb], sDO, LDS, wrb + 16 * rb, kk * 16);
          }
        }
#pragma unroll
        for (int np = 0; np < NT / 2; ++np) {
          unsigned kb[4], vb[4];
          ls2_b_fragments(kb, sK, LDS, np * 16, kk * 16);
          ls2_b_fragments(vb, sV, LDS, np * 16, kk * 16);
#pragma unroll
          for (int rb = 0; rb < RB; ++rb) {
            ls2_mma(s[rb][2 * np], qf[rb], kb[0], kb[1]);
            ls2_mma(s[rb][2 * np + 1], qf[rb], kb[2], kb[3]);
            ls2_mma(dp[rb][2 * np], df[rb], vb[0], vb[1]);
            ls2_mma(dp[rb][2 * np + 1], df[rb], vb[2], vb[3]);
          }
        }
      }
      // dS = P (dP mask - D), P rebuilt from lse; tiles that cross the
      // sequence end or the causal diagonal mask scores to -inf (P = 0).
      const bool full = n0 + BN <= lk${CAUSAL_FULL};
      if (!full) {
#pragma unroll
        for (int rb = 0; rb < RB; ++rb)
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const long long i = rows[rb][e / 2], j = n0 + nt * 8 + 2 * t4 + (e & 1);
              if (!(j < lk${CAUSAL_OK})) s[rb][nt][e] = NEG_INF;
            }
      }
#pragma unroll
      for (int rb = 0; rb < RB; ++rb)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
)cuda";
    if (s.dropout)
      src += R"cuda(          uint4 words[2];
          ls2_row_pair_philox(words, seed_value, offset_value, (unsigned)stream, q0 + rows[rb][0],
                              HQ, h, n0 + nt * 8 + 2 * t4);
)cuda";
    src += R"cuda(#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float p = exp2f(fmaf(s[rb][nt][e], SCALE_LOG2, -rowL[rb][e / 2]));
)cuda";
    src += s.dropout ? "            const float mask = ls2_attention_keep(words[e / 2], n0 + nt * 8 + 2 * t4 + "
                       "(e & 1), RATE) ? KEEP_SCALE : 0.0f;\n"
                     : "            const float mask = 1.0f;\n";
    src += R"cuda(            s[rb][nt][e] = p * (dp[rb][nt][e] * mask - rowD[rb][e / 2]);
          }
        }
#pragma unroll
      for (int ks = 0; ks < BN / 16; ++ks) {
        unsigned sa[RB][4];
#pragma unroll
        for (int rb = 0; rb < RB; ++rb) ls2_a_from_c(sa[rb], s[rb][2 * ks], s[rb][2 * ks + 1]);
#pragma unroll
        for (int dp2 = 0; dp2 < D / 16; ++dp2) {
          unsigned kb[4];
          ls2_b_fragments_t(kb, sK, LDS, ks * 16, dp2 * 16);
#pragma unroll
          for (int rb = 0; rb < RB; ++rb) {
            ls2_mma(acc[rb][2 * dp2], sa[rb], kb[0], kb[1]);
            ls2_mma(acc[rb][2 * dp2 + 1], sa[rb], kb[2], kb[3]);
          }
        }
      }
    }
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const long long i = rows[rb][r];
        if (i >= lq) continue;
#pragma unroll
        for (int dt = 0; dt < DT; ++dt) {
          const long long at = (q0 + i) * stride_dq + (long long)h * D + dt * 8 + 2 * t4;
          ls2_store(dq, at, SCALE * acc[rb][dt][2 * r]);
          ls2_store(dq, at + 1, SCALE * acc[rb][dt][2 * r + 1]);
        }
      }
  }
}
)cuda";
    std::map<std::string, std::string> values = flashValues(s, dq.kernel.name);
    values["TILE"] = std::to_string(rows);
    dq.kernel.source = substitute(src, values);
  }

  // dk, dv per key tile of 128 and kv head, as FlashAttention-2's backward
  // lays it out (section 3.2; without its dq atomics, dq is its own kernel):
  // 8 warps; per query tile of 64 (each query head of the group in order),
  // S = Q K^T and dP = dO V^T with the warps as 2 x 4 blocks of 32 queries
  // x 32 keys, P and dS through shared memory, then dV += P^T dO and
  // dK += dS^T Q with the warps as 4 x 2 blocks of 32 keys x D/2. At head
  // dims 96 and 128 each shared fragment feeds more mma than in the
  // warp-per-16-keys layout below (H200, 4x16x4096x128 bf16: 4.65 -> 4.22
  // ms, causal 2.53 -> 2.27); at 64 it does not and the extra P and dS
  // traffic made it slower (BERT-base 4.90 -> 5.76 ms, GPT-2 medium 14.3 ->
  // 17.1), so head dims up to 64 (and those not a multiple of 32) keep the
  // layout below.
  if (s.headDim % 32 == 0 && s.headDim > 64) {
    GeneratedKernel &dkv = kernels[1];
    dkv.kernel.name = kernelName + "_dkdv";
    Params p(dkv);
    unsigned tokens = addDkDvParams(p, s, go);
    p.pointer("unsigned char *scratch", ParamBinding::Kind::Scratch, 0);
    dkv.kernel.scratchBytes = scratchBytes;
    constexpr int keysPerBlock = 128, queryTile = 64, threads = 256;
    // K and V tiles, two stages of Q and dO tiles, P and dS, two stages of
    // D and the bias.
    uint32_t shared = (2 * keysPerBlock + 4 * queryTile) * rowBytes +
                      2 * queryTile * (keysPerBlock + 8) * 2 + 4 * queryTile * 4;
    dkv.kernel.launch =
        tileLaunch(s.tokensK, tokens, s.kvHeads, shared, keysPerBlock, threads);
    std::string src = kernelStart(op, s, "dk and dv", p, threads);
    src += R"cuda(  constexpr int BN = ${TILE}, BM = 64, KS = D / 16, DH = D / 2, LDP = BN + 8;
  ls2_t *sK = reinterpret_cast<ls2_t *>(ls2_smem), *sV = sK + BN * LDS, *sQD = sV + BN * LDS;
  // Stage s of Q and dO: sQD + s * 2 * BM * LDS, dO after Q; P and dS as
  // [query][key] tiles; stage s of D and the bias: sD + s * BM, sL + s * BM.
  ls2_t *sP = sQD + 4 * BM * LDS, *sS = sP + BM * LDP;
  float *sD = reinterpret_cast<float *>(sS + BM * LDP), *sL = sD + 2 * BM;
  const bool vq = ls2_vectors(q, stride_q), vk = ls2_vectors(k, stride_k),
             vv = ls2_vectors(v, stride_v), vdo = ls2_vectors(dout, stride_dout);
  // S and dP: queries wq .. wq + 31, keys wk .. wk + 31; dV and dK: keys
  // wk2 .. wk2 + 31, head-dim columns wd .. wd + DH - 1.
  const int wq = (warp / 4) * 32, wk = (warp % 4) * 32, wk2 = (warp / 2) * 32,
            wd = (warp % 2) * DH;
)cuda";
    src += scratchD;
    src += unitLoop(false);
    src += R"cuda(    const int kvh = head;
    ls2_load_tile<BN, D, LDS>(sK, k, k0 + first, lk - first, stride_k, (long long)kvh * D, vk);
    ls2_load_tile<BN, D, LDS>(sV, v, k0 + first, lk - first, stride_v, (long long)kvh * D, vv);
    float dkAcc[2][DH / 8][4], dvAcc[2][DH / 8][4];
#pragma unroll
    for (int rb = 0; rb < 2; ++rb)
#pragma unroll
      for (int dt = 0; dt < DH / 8; ++dt)
#pragma unroll
        for (int e = 0; e < 4; ++e) dkAcc[rb][dt][e] = dvAcc[rb][dt][e] = 0.0f;
)cuda";
    src += s.causal ? "    const long long firstQuery = max(0LL, first - (lk - lq));\n"
                    : "    const long long firstQuery = 0;\n";
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
      __syncthreads(); // every warp is done with the other stage and with P and dS
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
      // S = Q K^T and dP = dO V^T for the warp's 32 x 32 block.
      float st[2][4][4], dpt[2][4][4];
#pragma unroll
      for (int rb = 0; rb < 2; ++rb)
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) st[rb][nt][e] = dpt[rb][nt][e] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < KS; ++kk) {
        unsigned qa[2][4], da[2][4];
#pragma unroll
        for (int rb = 0; rb < 2; ++rb) {
          ls2_a_fragment(qa[rb], sQ, LDS, wq + 16 * rb, kk * 16);
          ls2_a_fragment(da[rb], sDO, LDS, wq + 16 * rb, kk * 16);
        }
#pragma unroll
        for (int np = 0; np < 2; ++np) {
          unsigned kb[4], vb[4];
          ls2_b_fragments(kb, sK, LDS, wk + np * 16, kk * 16);
          ls2_b_fragments(vb, sV, LDS, wk + np * 16, kk * 16);
#pragma unroll
          for (int rb = 0; rb < 2; ++rb) {
            ls2_mma(st[rb][2 * np], qa[rb], kb[0], kb[1]);
            ls2_mma(st[rb][2 * np + 1], qa[rb], kb[2], kb[3]);
            ls2_mma(dpt[rb][2 * np], da[rb], vb[0], vb[1]);
            ls2_mma(dpt[rb][2 * np + 1], da[rb], vb[2], vb[3]);
          }
        }
      }
      // Tiles with a query past the sequence or a pair past the causal
      // diagonal mask scores to -inf (P = 0): sums over queries must not
      // take a padding row's bias of 0.
      const bool full = qFirst + BM <= lq${CAUSAL_FULL_KV};
      if (!full) {
#pragma unroll
        for (int rb = 0; rb < 2; ++rb)
#pragma unroll
          for (int nt = 0; nt < 4; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const long long i = qFirst + wq + 16 * rb + g + 8 * (e / 2),
                              j = first + wk + nt * 8 + 2 * t4 + (e & 1);
              if (!(i < lq && j < lk${CAUSAL_OK})) st[rb][nt][e] = NEG_INF;
            }
      }
      // P (with the dropout mask and scale) and dS = P (dP mask - D), rounded
      // to the storage type as FlashAttention does, into sP and sS.
#pragma unroll
      for (int rb = 0; rb < 2; ++rb)
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
)cuda";
    if (s.dropout)
      src += R"cuda(          uint4 words[2];
          ls2_row_pair_philox(words, seed_value, offset_value, (unsigned)stream,
                              q0 + qFirst + wq + 16 * rb + g, HQ, h, first + wk + nt * 8 + 2 * t4);
)cuda";
    src += R"cuda(          float pv[4], ds[4];
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int row = wq + 16 * rb + g + 8 * (e / 2);
            const float p = exp2f(fmaf(st[rb][nt][e], SCALE_LOG2, -tL[row]));
)cuda";
    src += s.dropout ? "            const float mask = ls2_attention_keep(words[e / 2], first + wk + nt * 8 + "
                       "2 * t4 + (e & 1), RATE) ? KEEP_SCALE : 0.0f;\n"
                     : "            const float mask = 1.0f;\n";
    src += R"cuda(            pv[e] = p * mask;
            ds[e] = p * (dpt[rb][nt][e] * mask - tD[row]);
          }
          const int row = wq + 16 * rb + g, col = wk + nt * 8 + 2 * t4;
          *reinterpret_cast<unsigned *>(sP + row * LDP + col) = ls2_pack(pv[0], pv[1]);
          *reinterpret_cast<unsigned *>(sP + (row + 8) * LDP + col) = ls2_pack(pv[2], pv[3]);
          *reinterpret_cast<unsigned *>(sS + row * LDP + col) = ls2_pack(ds[0], ds[1]);
          *reinterpret_cast<unsigned *>(sS + (row + 8) * LDP + col) = ls2_pack(ds[2], ds[3]);
        }
      __syncthreads(); // P and dS are whole
      // dV += P^T dO and dK += dS^T Q over the tile's queries.
#pragma unroll
      for (int ks = 0; ks < BM / 16; ++ks) {
        unsigned pa[2][4], sa[2][4];
#pragma unroll
        for (int rb = 0; rb < 2; ++rb) {
          ls2_a_fragment_t(pa[rb], sP, LDP, wk2 + 16 * rb, ks * 16);
          ls2_a_fragment_t(sa[rb], sS, LDP, wk2 + 16 * rb, ks * 16);
        }
#pragma unroll
        for (int dp2 = 0; dp2 < DH / 16; ++dp2) {
          unsigned ob[4], qb[4];
          ls2_b_fragments_t(ob, sDO, LDS, ks * 16, wd + dp2 * 16);
          ls2_b_fragments_t(qb, sQ, LDS, ks * 16, wd + dp2 * 16);
#pragma unroll
          for (int rb = 0; rb < 2; ++rb) {
            ls2_mma(dvAcc[rb][2 * dp2], pa[rb], ob[0], ob[1]);
            ls2_mma(dvAcc[rb][2 * dp2 + 1], pa[rb], ob[2], ob[3]);
            ls2_mma(dkAcc[rb][2 * dp2], sa[rb], qb[0], qb[1]);
            ls2_mma(dkAcc[rb][2 * dp2 + 1], sa[rb], qb[2], qb[3]);
          }
        }
      }
    }
#pragma unroll
    for (int rb = 0; rb < 2; ++rb)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const long long j = first + wk2 + 16 * rb + g + 8 * r;
        if (j >= lk) continue;
#pragma unroll
        for (int dt = 0; dt < DH / 8; ++dt) {
          const long long atK = (k0 + j) * stride_dk + (long long)kvh * D + wd + dt * 8 + 2 * t4;
          const long long atV = (k0 + j) * stride_dv + (long long)kvh * D + wd + dt * 8 + 2 * t4;
          ls2_store(dk, atK, SCALE * dkAcc[rb][dt][2 * r]);
          ls2_store(dk, atK + 1, SCALE * dkAcc[rb][dt][2 * r + 1]);
          ls2_store(dv, atV, dvAcc[rb][dt][2 * r]);
          ls2_store(dv, atV + 1, dvAcc[rb][dt][2 * r + 1]);
        }
      }
  }
}
)cuda";
    std::map<std::string, std::string> values = flashValues(s, dkv.kernel.name);
    values["TILE"] = std::to_string(keysPerBlock);
    values["THREADS"] = std::to_string(threads);
    dkv.kernel.source = substitute(src, values);
    return kernels;
  }

  // dk, dv per 64-key tile and kv head, a warp per 16 keys: S^T and dP^T
  // against each query tile of each query head of the group, in order.
  {
    GeneratedKernel &dkv = kernels[1];
    dkv.kernel.name = kernelName + "_dkdv";
    Params p(dkv);
    unsigned tokens = addDkDvParams(p, s, go);
    p.pointer("unsigned char *scratch", ParamBinding::Kind::Scratch, 0);
    dkv.kernel.scratchBytes = scratchBytes;
    // K and V tiles, two stages of Q and dO tiles and of D and the bias.
    uint32_t shared = (2 * kTile + 4 * inner) * rowBytes + 4 * inner * 4;
    dkv.kernel.launch = tileLaunch(s.tokensK, tokens, s.kvHeads, shared);
    std::string src = kernelStart(op, s, "dk and dv", p);
    src += "  constexpr int BN = ${TILE}, BM = " + std::to_string(inner) + ";\n";
    src += R"cuda(  constexpr int KS = D / 16, NT = BM / 8, DT = D / 8;
  // Stage s of Q and dO: sQD + s * 2 * BM * LDS, dO after Q.
  ls2_t *sK = reinterpret_cast<ls2_t *>(ls2_smem), *sV = sK + BN * LDS, *sQD = sV + BN * LDS;
  // Stage s of D and the bias: sD + s * BM, sL + s * BM.
  float *sD = reinterpret_cast<float *>(sQD + 4 * BM * LDS), *sL = sD + 2 * BM;
  const bool vq = ls2_vectors(q, stride_q), vk = ls2_vectors(k, stride_k),
             vv = ls2_vectors(v, stride_v), vdo = ls2_vectors(dout, stride_dout);
)cuda";
    src += scratchD;
    src += unitLoop(false);
    src += R"cuda(    const int kvh = head;
    ls2_load_tile<BN, D, LDS>(sK, k, k0 + first, lk - first, stride_k, (long long)kvh * D, vk);
    ls2_load_tile<BN, D, LDS>(sV, v, k0 + first, lk - first, stride_v, (long long)kvh * D, vv);
    const long long keys[2] = {first + wr + g, first + wr + g + 8};
    float dkAcc[DT][4], dvAcc[DT][4];
#pragma unroll
    for (int dt = 0; dt < DT; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) dkAcc[dt][e] = dvAcc[dt][e] = 0.0f;
)cuda";
    // Query i sees key j when j <= i + lk - lq: the tile's first key bounds
    // the first query.
    src += s.causal ? "    const long long firstQuery = max(0LL, first - (lk - lq));\n"
                    : "    const long long firstQuery = 0;\n";
    // One loop over the query tiles of each query head of the group, in
    // order: tile `it` is head kvh * GROUP + it / tiles, rows firstQuery +
    // (it % tiles) * BM; the K and V loads above and tile 0 form the first
    // group, and each iteration prefetches tile it + 1.
    src += R"cuda(    const long long tiles = lq > firstQuery ? (lq - firstQuery + BM - 1) / BM : 0;
    if (tiles > 0) {
      ls2_load_tile<BM, D, LDS>(sQD, q, q0 + firstQuery, lq - firstQuery, stride_q,
                                (long long)(kvh * GROUP) * D, vq);
      ls2_load_tile<BM, D, LDS>(sQD + BM * LDS, dout, q0 + firstQuery, lq - firstQuery,
                                stride_dout, (long long)(kvh * GROUP) * D, vdo);
)cuda" + statsLoads("firstQuery", "kvh * GROUP", "0") + R"cuda(    }
    ls2_commit();
    for (long long it = 0; it < tiles * GROUP; ++it) {
      {
        const int h = kvh * GROUP + (int)(it / tiles);
        const long long qFirst = firstQuery + (it % tiles) * BM;
        const ls2_t *sQ = sQD + (it & 1) * 2 * BM * LDS, *sDO = sQ + BM * LDS;
        const float *tD = sD + (it & 1) * BM, *tL = sL + (it & 1) * BM;
        __syncthreads(); // every warp is done with the other stage
        if (it + 1 < tiles * GROUP) {
          const int hn = kvh * GROUP + (int)((it + 1) / tiles);
          const long long qn = firstQuery + ((it + 1) % tiles) * BM;
          ls2_t *nQ = sQD + ((it + 1) & 1) * 2 * BM * LDS;
          ls2_load_tile<BM, D, LDS>(nQ, q, q0 + qn, lq - qn, stride_q, (long long)hn * D, vq);
          ls2_load_tile<BM, D, LDS>(nQ + BM * LDS, dout, q0 + qn, lq - qn, stride_dout,
                                    (long long)hn * D, vdo);
)cuda" + statsLoads("qn", "hn", "(it + 1) & 1") + R"cuda(        }
        ls2_commit();
        ls2_sync_but_one();
        // S^T = K Q^T and dP^T = V dO^T: rows the warp's keys, columns queries.
        float st[NT][4], dpt[NT][4];
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) st[nt][e] = dpt[nt][e] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < KS; ++kk) {
          unsigned ka[4], va[4];
          ls2_a_fragment(ka, sK, LDS, wr, kk * 16);
          ls2_a_fragment(va, sV, LDS, wr, kk * 16);
#pragma unroll
          for (int np = 0; np < NT / 2; ++np) {
            unsigned qb[4], ob[4];
            ls2_b_fragments(qb, sQ, LDS, np * 16, kk * 16);
            ls2_b_fragments(ob, sDO, LDS, np * 16, kk * 16);
            ls2_mma(st[2 * np], ka, qb[0], qb[1]);
            ls2_mma(st[2 * np + 1], ka, qb[2], qb[3]);
            ls2_mma(dpt[2 * np], va, ob[0], ob[1]);
            ls2_mma(dpt[2 * np + 1], va, ob[2], ob[3]);
          }
        }
        // Tiles with a query past the sequence or a pair past the causal
        // diagonal mask scores to -inf (P = 0): sums over queries must not
        // take a padding row's bias of 0.
        const bool full = qFirst + BM <= lq${CAUSAL_FULL_KV};
        if (!full) {
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const long long j = keys[e / 2], i = qFirst + nt * 8 + 2 * t4 + (e & 1);
              if (!(i < lq && j < lk${CAUSAL_OK})) st[nt][e] = NEG_INF;
            }
        }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
)cuda";
    if (s.dropout)
      src += R"cuda(          uint4 words[4];
          ls2_key_quad_philox(words, seed_value, offset_value, (unsigned)stream,
                              q0 + qFirst + nt * 8 + 2 * t4, HQ, h, keys[0]);
)cuda";
    src += R"cuda(#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int c = nt * 8 + 2 * t4 + (e & 1);
            const float p = exp2f(fmaf(st[nt][e], SCALE_LOG2, -tL[c]));
)cuda";
    src += s.dropout ? "            const float mask = ls2_attention_keep(words[e], keys[e / 2], RATE) ? "
                       "KEEP_SCALE : 0.0f;\n"
                     : "            const float mask = 1.0f;\n";
    src += R"cuda(            st[nt][e] = p * mask;
            dpt[nt][e] = p * (dpt[nt][e] * mask - tD[c]);
          }
        }
        // dV += (P mask)^T dO and dK += dS^T Q, the query tile as k.
#pragma unroll
        for (int ks = 0; ks < BM / 16; ++ks) {
          unsigned pa[4], sa[4];
          ls2_a_from_c(pa, st[2 * ks], st[2 * ks + 1]);
          ls2_a_from_c(sa, dpt[2 * ks], dpt[2 * ks + 1]);
#pragma unroll
          for (int dp2 = 0; dp2 < D / 16; ++dp2) {
            unsigned ob[4], qb[4];
            ls2_b_fragments_t(ob, sDO, LDS, ks * 16, dp2 * 16);
            ls2_b_fragments_t(qb, sQ, LDS, ks * 16, dp2 * 16);
            ls2_mma(dvAcc[2 * dp2], pa, ob[0], ob[1]);
            ls2_mma(dvAcc[2 * dp2 + 1], pa, ob[2], ob[3]);
            ls2_mma(dkAcc[2 * dp2], sa, qb[0], qb[1]);
            ls2_mma(dkAcc[2 * dp2 + 1], sa, qb[2], qb[3]);
          }
        }
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const long long j = keys[r];
      if (j >= lk) continue;
#pragma unroll
      for (int dt = 0; dt < DT; ++dt) {
        const long long atK = (k0 + j) * stride_dk + (long long)kvh * D + dt * 8 + 2 * t4;
        const long long atV = (k0 + j) * stride_dv + (long long)kvh * D + dt * 8 + 2 * t4;
        ls2_store(dk, atK, SCALE * dkAcc[dt][2 * r]);
        ls2_store(dk, atK + 1, SCALE * dkAcc[dt][2 * r + 1]);
        ls2_store(dv, atV, dvAcc[dt][2 * r]);
        ls2_store(dv, atV + 1, dvAcc[dt][2 * r + 1]);
      }
    }
  }
}
)cuda";
    dkv.kernel.source = substitute(src, flashValues(s, dkv.kernel.name));
  }
  return kernels;
}

} // namespace ls2c::codegen::attention
