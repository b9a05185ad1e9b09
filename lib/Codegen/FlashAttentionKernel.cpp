//===- FlashAttentionKernel.cpp - tensor-core attention kernels ------------===//
//
// Work partition (FlashAttention-2, section 3.2): a unit is a tile of one
// sequence and head: 128 query rows in the forward and dq, 64 or 128 keys in
// dk/dv. Tile slots are numbered per sequence from cu_seqlens[b] / tile + b,
// which leaves room for each sequence's partial tile, so a block finds its
// sequence by binary search and at most batch slots go unused. A warp owns
// blocks of 16 rows; a thread holds rows g and g + 8 of a block (g = lane /
// 4) in the mma accumulator layout, so row maxima and sums are reductions
// over the 4 lanes of a quad. Scores are kept pre-multiplied by log2(e) so
// exponentials are exp2. Probabilities and dS are rounded to the storage
// type before the second matmul, as FlashAttention does.
//
// Two instruction paths in each kernel's source, one launch: mma.sync
// m16n8k16 with ldmatrix from padded tiles (sm_80 on), and on Hopper (sm_90a,
// what sm_90 compiles as) at head dims that are multiples of 64 warpgroup
// MMA (wgmma, PTX ISA 8) reading swizzled tiles from shared memory, P and
// dS as its register A operand. The 4 warps of a forward or dq block are
// one warpgroup with two 64-row wgmma tiles, each row block's products in
// their own wgmma group, so one row block's softmax runs while the other's
// products are on the tensor cores (FlashAttention-3, Shah et al. 2024,
// section 3.2, within a warpgroup). This file: which
// specs take these kernels, and the forward; FlashAttentionBackward.cpp and
// FlashAttentionDkDv.cpp the backward; FlashAttentionParts.* what they share.
//
//===----------------------------------------------------------------------===//

#include "FlashAttentionKernel.h"

#include "FlashAttentionParts.h"
#include "Prelude.h"

using namespace mlir;

namespace ls2c::codegen::attention {

bool flashApplies(const AttentionSpec &s) {
  return isa<Float16Type, BFloat16Type>(s.element) && s.headDim % 16 == 0 && s.headDim >= 16 &&
         (s.headDim <= 128 || s.headDim == 256);
}

GeneratedKernel generateFlashForward(Operation *op, const AttentionSpec &s,
                                     const std::string &kernelName) {
  GeneratedKernel out;
  out.kernel.name = kernelName;
  Params p(out);
  unsigned tokens = addForwardParams(p, s);
  // A Q tile of `rows` rows and two stages of K and V tiles of `keys`:
  // at head dim 256, 64 x 32 tiles keep O and S in registers and the
  // shared memory within an A100's 163 KiB; up to head dim 64 without
  // dropout 128 keys fit the registers (H200, 8x16x2048x64 causal forward
  // 0.24 -> 0.23 ms); with dropout they would spill.
  const int rows = queryRows(s);
  const int keys = s.headDim > 128 ? 32 : (s.headDim <= 64 && !s.dropout ? 128 : 64);
  uint32_t shared = static_cast<uint32_t>((rows + 4 * keys) * (s.headDim + 8) * 2);
  out.kernel.launch = tileLaunch(s.tokensQ, tokens, s.heads, shared, rows);

  std::string src = kernelStart(op, s, "forward", p);
  // RB row blocks of 16 per warp: each K or V fragment loaded from shared
  // memory feeds RB mma (FlashAttention-2's 128 x 64 tiles at 4 warps).
  src += R"cuda(  constexpr int RB = ${RB}, BM = ${TILE}, BN = ${BN}, KS = D / 16, NT = BN / 8, DT = D / 8;
  static_assert(BM == 64 * RB, "4 warps of RB row blocks");
  static_assert((BM + 4 * BN) * LDS * 2 <= ${SHARED}, "the tiles fit the launch's shared memory");
  static_assert(!LS2_WGMMA || (BM * LDS * 2) % 1024 == 0 && (BN * LDS * 2) % 1024 == 0,
                "swizzled tiles start 1024-byte aligned");
  // Stage s of K and V: sKV + s * 2 * BN * LDS, V after K.
  ls2_t *sQ = reinterpret_cast<ls2_t *>(ls2_smem), *sKV = sQ + BM * LDS;
  const bool vq = ls2_vectors(q, stride_q), vk = ls2_vectors(k, stride_k),
             vv = ls2_vectors(v, stride_v);
  const int wrb = warp * 16 * RB; // the warp's first row: row block rb is wrb + 16 rb
)cuda";
  src += unitLoop(true, 1, s.causal);
  src += "    const int h = head, kvh = head / GROUP;\n";
  src += keyEnd(s);
  src += "    ls2_load_tile<BM, D, LDS>(sQ, q, q0 + first, lq - first, stride_q, (long long)h * D, "
         "vq);\n";
  src += firstKeyTileLoads();
  src += R"cuda(    ls2_sync();
    // Online softmax per row (rb, r: row rowOf(rb, r)): m the
    // running max (log2 units) and l this lane's part of the sum of
    // exp2(s - m) before dropout.
    float m[RB][2], l[RB][2], acc[RB][DT][4];
    // The sequence row of (rb, r), recomputed where used rather than held in
    // eight registers: the forward runs at the 255-register limit.
#if LS2_WGMMA
    // Row block rb is the warpgroup's wgmma tile rb: rows 64 rb .. 64 rb + 63.
    auto rowOf = [&](int rb, int r) -> long long { return first + (64 * rb + wr + g + 8 * r); };
#else
    auto rowOf = [&](int rb, int r) -> long long { return first + (wrb + 16 * rb + g + 8 * r); };
#endif
#pragma unroll
    for (int rb = 0; rb < RB; ++rb) {
      m[rb][0] = m[rb][1] = NEG_INF;
      l[rb][0] = l[rb][1] = 0.0f;
#pragma unroll
      for (int dt = 0; dt < DT; ++dt)
        acc[rb][dt][0] = acc[rb][dt][1] = acc[rb][dt][2] = acc[rb][dt][3] = 0.0f;
    }
)cuda";
  src += keyTileLoopHead();
  src += R"cuda(      float s[RB][NT][4];
)cuda";
  // The max is taken on raw scores and scaled.
  src += queryTileMask();
  src += R"cuda(      // Online softmax of row block rb: P = exp2(S scale log2e - running max)
      // into s[rb], the old acc and l rescaled.
      auto softmax = [&](int rb) {
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
          correction[r] = ls2_exp2(m[rb][r] - base[r]);
          m[rb][r] = mx[r];
          l[rb][r] *= correction[r];
        }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            s[rb][nt][e] = ls2_exp2(fmaf(s[rb][nt][e], SCALE_LOG2, -base[e / 2]));
            l[rb][e / 2] += s[rb][nt][e];
          }
#pragma unroll
        for (int dt = 0; dt < DT; ++dt) {
          acc[rb][dt][0] *= correction[0];
          acc[rb][dt][1] *= correction[0];
          acc[rb][dt][2] *= correction[1];
          acc[rb][dt][3] *= correction[1];
        }
      };
      // Row block rb's dropout numbers and its mask on P (after the sums;
      // KEEP_SCALE is applied to the output): a Philox call per 32 keys
      // gives this thread's 16 of its rows g and g + 8
      // (ls2_attention_philox), word nt % 4 those of column tile nt, byte
      // e its element e. Drawn where used: drawn before S is awaited, while
      // the products run, they cost registers and time (H200, 8x16x2048x64
      // forward 0.64 -> 0.67 ms; with 8-bit numbers, GPT-2 medium's dq 5.9
      // -> 6.2 ms a step).
)cuda";
  src += dropoutDraw(s);
  src += R"cuda(      auto dropout = [&](int rb, const uint4 (&w)[DW]) {
)cuda";
  if (!s.dropout)
    src += "        (void)rb, (void)w;\n";
  else
    src += R"cuda(#pragma unroll
        for (int sp = 0; sp < DW; ++sp)
#pragma unroll
          for (int m = 0; m < 4; ++m)
#pragma unroll
            for (int e = 0; e < 4; ++e)
              if (!ls2_keep_byte(ls2_word(w[sp], m), e, KEEP_MIN))
                s[rb][4 * sp + m][e] = 0.0f;
)cuda";
  src += R"cuda(      };
#if LS2_WGMMA
      // One wgmma group per row block's S, then per row block: wait for its
      // S (the later row blocks' S and the earlier ones' P V stay in
      // flight on the tensor cores while this one's softmax runs), softmax,
      // issue its P V (A from registers, V transposed; the registers are
      // packed before wgmma.fence, which must follow their last write).
      ls2_wg_fence();
#pragma unroll
      for (int rb = 0; rb < RB; ++rb) {
#pragma unroll
        for (int kk = 0; kk < KS; ++kk)
          ls2_wg_ss<0>(s[rb], ls2_wg_k<BM>(sQ, 64 * rb, kk * 16), ls2_wg_k<BN>(sK, 0, kk * 16), kk > 0);
        ls2_wg_commit();
      }
#pragma unroll
      for (int rb = 0; rb < RB; ++rb) {
        ls2_wg_wait<RB - 1>();
        ls2_wg_acc_fence(s[rb]);
        maskScores(rb);
        softmax(rb);
        uint4 words[DW];
        draw(rb, words);
        dropout(rb, words);
        unsigned pa[BN / 16][4];
#pragma unroll
        for (int ks = 0; ks < BN / 16; ++ks) ls2_a_from_c(pa[ks], s[rb][2 * ks], s[rb][2 * ks + 1]);
        ls2_wg_fence();
#pragma unroll
        for (int ks = 0; ks < BN / 16; ++ks) ls2_wg_rs<1>(acc[rb], pa[ks], ls2_wg_t<BN>(sV, ks * 16));
        ls2_wg_commit();
      }
      // P V must be done before the barrier that lets this stage's V be
      // overwritten, and before acc is read.
      ls2_wg_wait<0>();
#pragma unroll
      for (int rb = 0; rb < RB; ++rb) ls2_wg_acc_fence(acc[rb]);
#else
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
      // Each step over all row blocks in turn (fewer live registers than
      // row block by row block).
#pragma unroll
      for (int rb = 0; rb < RB; ++rb) maskScores(rb);
#pragma unroll
      for (int rb = 0; rb < RB; ++rb) softmax(rb);
#pragma unroll
      for (int rb = 0; rb < RB; ++rb) {
        uint4 words[DW];
        draw(rb, words);
        dropout(rb, words);
      }
      // ks outer: each V fragment feeds RB mma.
#pragma unroll
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
#endif
    }
    // A row that sees no key: out 0, lse -inf.
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float sum = ls2_quad_sum(l[rb][r]);
        const long long i = rowOf(rb, r);
        if (i >= lq) continue;
        const float inv = sum > 0.0f ? ${OUT_SCALE} / sum : 0.0f;
#pragma unroll
        for (int dt = 0; dt < DT; ++dt) {
          const long long at = (q0 + i) * stride_out + (long long)h * D + dt * 8 + 2 * t4;
          ls2_store_pair(out, at, acc[rb][dt][2 * r] * inv, acc[rb][dt][2 * r + 1] * inv);
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
  values["BN"] = std::to_string(keys);
  values["SHARED"] = std::to_string(shared);
  values["OUT_SCALE"] = s.dropout ? "KEEP_SCALE" : "1.0f";
  out.kernel.source = substitute(src, values);
  return out;
}

} // namespace ls2c::codegen::attention
