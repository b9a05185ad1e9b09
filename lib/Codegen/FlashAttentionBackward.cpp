//===- FlashAttentionBackward.cpp - tensor-core attention backward ---------===//
//
// ls2.attention_grad's tensor-core kernels (FlashAttentionKernel.h): dq per
// query tile (64 or 128 queries) and query head (S and dP recomputed
// against each key tile, dS K accumulated; D_i and the exponent bias left
// in scratch), then dk/dv
// per key tile and kv head: FlashAttention-2's layout at head dims 96 and
// 128 (FlashAttentionDkDv.cpp; on Hopper the warp-per-16-keys body at 8
// warps), else a warp per 16 of 64 keys (here). No atomics: every sum is in
// a fixed order, so runs give the same bits.
//
//===----------------------------------------------------------------------===//

#include "FlashAttentionKernel.h"

#include "FlashAttentionParts.h"
#include "Prelude.h"

using namespace mlir;

namespace ls2c::codegen::attention {

/// The warp-per-16-keys dk/dv body (FlashAttentionParts.h). On sm_90a each
/// warpgroup runs its 64 keys through wgmma, P and dS staying in registers
/// as wgmma's A; the wide kernel (FlashAttentionDkDv.cpp) takes this body
/// there at 8 warps.
std::string keyWarpDkDvBody(const AttentionSpec &s, int64_t maxTokensQ, int inner) {
  std::string src;
  src += "  constexpr int BN = ${TILE}, BM = " + std::to_string(inner) +
         ", SPLIT = " + std::to_string(dkDvSplits(s)) + ";\n";
  // A unit's DS columns of dk and dv (SPLIT units a key tile: the
  // accumulators of head dim 256 fit in registers as two halves, each
  // unit computing S^T and dP^T over all of D).
  src += R"cuda(  constexpr int DS = D / SPLIT, KS = D / 16, NT = BM / 8, DT = DS / 8;
  static_assert((2 * BN + 4 * BM) * LDS * 2 + 4 * BM * 4 <= ${SHARED},
                "the tiles fit the launch's shared memory");
  static_assert(!LS2_WGMMA || (BM * LDS * 2) % 1024 == 0 && (BN * LDS * 2) % 1024 == 0,
                "swizzled tiles start 1024-byte aligned");
  // Stage s of Q and dO: sQD + s * 2 * BM * LDS, dO after Q.
  ls2_t *sK = reinterpret_cast<ls2_t *>(ls2_smem), *sV = sK + BN * LDS, *sQD = sV + BN * LDS;
  // Stage s of D and the bias: sD + s * BM, sL + s * BM.
  float *sD = reinterpret_cast<float *>(sQD + 4 * BM * LDS), *sL = sD + 2 * BM;
  const bool vq = ls2_vectors(q, stride_q), vk = ls2_vectors(k, stride_k),
             vv = ls2_vectors(v, stride_v), vdo = ls2_vectors(dout, stride_dout);
)cuda";
  src += backwardScratchDeclarations(s, maxTokensQ);
  src += unitLoop(false, dkDvSplits(s));
  // With dropout, tile row r holds key ls2_tile_key(r) (FlashAttentionParts):
  // a thread's two keys and those of the 3 lanes beside it with the same
  // t4 and g / 4 are the 8 of one dropout call.
  const char *permuted = s.dropout ? "true" : "false";
  src += std::string("    const int kvh = head / SPLIT, c0 = (head % SPLIT) * DS;\n") +
         "    ls2_load_tile<BN, D, LDS, " + permuted +
         ">(sK, k, k0 + first, lk - first, stride_k, (long long)kvh * D, vk);\n" +
         "    ls2_load_tile<BN, D, LDS, " + permuted +
         ">(sV, v, k0 + first, lk - first, stride_v, (long long)kvh * D, vv);\n";
  src += s.dropout ? "    const long long keys[2] = {first + ls2_tile_key(wr + g), "
                     "first + ls2_tile_key(wr + g + 8)};\n"
                   : "    const long long keys[2] = {first + wr + g, first + wr + g + 8};\n";
  src += R"cuda(
    float dkAcc[DT][4], dvAcc[DT][4];
#pragma unroll
    for (int dt = 0; dt < DT; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) dkAcc[dt][e] = dvAcc[dt][e] = 0.0f;
)cuda";
  src += queryTileLoopHead(s);
  src += R"cuda(        // S^T = K Q^T and dP^T = V dO^T: rows the warp's keys, columns queries.
        float st[NT][4], dpt[NT][4];
        // Tiles with a query past the sequence or a pair past the causal
        // diagonal mask scores to -inf (P = 0): sums over queries must not
        // take a padding row's bias of 0.
        const bool full = qFirst + BM <= lq${CAUSAL_FULL_KV};
        // P (before dropout) into st.
        auto probabilities = [&] {
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
          for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e)
              st[nt][e] = ls2_exp2(fmaf(st[nt][e], SCALE_LOG2, -tL[nt * 8 + 2 * t4 + (e & 1)]));
        };
        // dS = P (dP mask - D) into dpt and P mask into st.
        auto gradScores = [&] {
)cuda";
  // Per four column tiles (two query pairs: queries 8 nt + 2 t4 + p and 8
  // more, a call's rows), lane c = g % 4 draws the call of query pair c / 2
  // and column parity c % 2 (its first column tile nt + 2 (c / 2)); a
  // transpose over the 4 lanes leaves word c, this thread's two keys (bytes
  // 2 r + p for the pair's query r), of all four calls in x. (Drawn here
  // rather than while S^T and dP^T are on the tensor cores: holding them
  // that long cost registers and time, H200, 8x16x2048x64 backward 1.89 ->
  // 2.01 ms.)
  if (s.dropout)
    src += R"cuda(          static_assert(NT % 4 == 0, "query tiles of whole dropout call pairs");
          unsigned x[4];
)cuda";
  src += R"cuda(#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
)cuda";
  if (s.dropout)
    src += R"cuda(            if (nt % 4 == 0) {
              const int c = g & 3;
              const uint4 mine = ls2_attention_philox(
                  seed_value, offset_value, (unsigned)stream,
                  (unsigned)(ls2_attention_pair_row(
                                 q0, qFirst + (nt + 2 * (c >> 1)) * 8 + 2 * t4 + (c & 1)) *
                                 HQ + h),
                  keys[0]);
              x[0] = mine.x, x[1] = mine.y, x[2] = mine.z, x[3] = mine.w;
              ls2_transpose_quad(x);
            }
)cuda";
  src += R"cuda(#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const float p = st[nt][e];
)cuda";
  src += s.dropout ? "              const float mask =\n"
                     "                  ls2_keep_byte(x[2 * (nt / 2 % 2) + (e & 1)], 2 * (nt % 2) + e / 2,\n"
                     "                                KEEP_MIN)\n"
                     "                      ? KEEP_SCALE : 0.0f;\n"
                   : "              const float mask = 1.0f;\n";
  src += R"cuda(              st[nt][e] = p * mask;
              dpt[nt][e] = p * (dpt[nt][e] * mask - tD[nt * 8 + 2 * t4 + (e & 1)]);
            }
          }
        };
#if LS2_WGMMA
        // The warpgroup's 64 keys (warp w's 16 are rows wr .. wr + 15). S^T
        // and dP^T in two groups: P's exponentials run while dP^T is on the
        // tensor cores.
        const int wg = wr - 16 * (warp % 4);
        ls2_wg_fence();
#pragma unroll
        for (int kk = 0; kk < KS; ++kk)
          ls2_wg_ss<0>(st, ls2_wg_k<BN>(sK, wg, kk * 16), ls2_wg_k<BM>(sQ, 0, kk * 16), kk > 0);
        ls2_wg_commit();
#pragma unroll
        for (int kk = 0; kk < KS; ++kk)
          ls2_wg_ss<0>(dpt, ls2_wg_k<BN>(sV, wg, kk * 16), ls2_wg_k<BM>(sDO, 0, kk * 16), kk > 0);
        ls2_wg_commit();
        ls2_wg_wait<1>();
        ls2_wg_acc_fence(st);
        probabilities();
        ls2_wg_wait<0>();
        ls2_wg_acc_fence(dpt);
        gradScores();
        // dV += (P mask)^T dO and dK += dS^T Q, the query tile as k: a
        // wgmma.fence after each k step's P and dS are packed (as in dq).
#pragma unroll
        for (int ks = 0; ks < BM / 16; ++ks) {
          unsigned pa[4], sa[4];
          ls2_a_from_c(pa, st[2 * ks], st[2 * ks + 1]);
          ls2_a_from_c(sa, dpt[2 * ks], dpt[2 * ks + 1]);
          ls2_wg_fence();
          ls2_wg_rs<1>(dvAcc, pa, ls2_wg_t<BM>(sDO, ks * 16, c0));
          ls2_wg_rs<1>(dkAcc, sa, ls2_wg_t<BM>(sQ, ks * 16, c0));
        }
        ls2_wg_commit_wait(); // before the barrier that frees this stage's Q and dO
        ls2_wg_acc_fence(dvAcc);
        ls2_wg_acc_fence(dkAcc);
#else
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
        probabilities();
        gradScores();
        // dV += (P mask)^T dO and dK += dS^T Q, the query tile as k.
#pragma unroll
        for (int ks = 0; ks < BM / 16; ++ks) {
          unsigned pa[4], sa[4];
          ls2_a_from_c(pa, st[2 * ks], st[2 * ks + 1]);
          ls2_a_from_c(sa, dpt[2 * ks], dpt[2 * ks + 1]);
#pragma unroll
          for (int dp2 = 0; dp2 < DS / 16; ++dp2) {
            unsigned ob[4], qb[4];
            ls2_b_fragments_t(ob, sDO, LDS, ks * 16, c0 + dp2 * 16);
            ls2_b_fragments_t(qb, sQ, LDS, ks * 16, c0 + dp2 * 16);
            ls2_mma(dvAcc[2 * dp2], pa, ob[0], ob[1]);
            ls2_mma(dvAcc[2 * dp2 + 1], pa, ob[2], ob[3]);
            ls2_mma(dkAcc[2 * dp2], sa, qb[0], qb[1]);
            ls2_mma(dkAcc[2 * dp2 + 1], sa, qb[2], qb[3]);
          }
        }
#endif
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const long long j = keys[r];
      if (j >= lk) continue;
#pragma unroll
      for (int dt = 0; dt < DT; ++dt) {
        const long long atK = (k0 + j) * stride_dk + (long long)kvh * D + c0 + dt * 8 + 2 * t4;
        const long long atV = (k0 + j) * stride_dv + (long long)kvh * D + c0 + dt * 8 + 2 * t4;
        ls2_store_pair(dk, atK, SCALE * dkAcc[dt][2 * r], SCALE * dkAcc[dt][2 * r + 1]);
        ls2_store_pair(dv, atV, dvAcc[dt][2 * r], dvAcc[dt][2 * r + 1]);
      }
    }
  }
)cuda";
  return src;
}

std::vector<GeneratedKernel> generateFlashBackward(Operation *op, const AttentionSpec &s,
                                                   const GradOperands &go, int64_t maxTokensQ,
                                                   const std::string &kernelName) {
  // Query tiles of the warp-per-16-keys dk/dv: 64 rows up to head dim 64,
  // 32 beyond, so accumulators, fragments and scores fit in registers.
  int inner = s.headDim <= 64 ? 64 : 32;
  uint32_t rowBytes = static_cast<uint32_t>((s.headDim + 8) * 2);
  std::vector<GeneratedKernel> kernels(2);
  const uint64_t scratchBytes = backwardScratchBytes(s, maxTokensQ);
  const std::string scratchD = backwardScratchDeclarations(s, maxTokensQ);
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

  // dq per query tile: S and dP against each key tile, dS K accumulated.
  // Above head dim 64 up to 128, tiles of kQueryRows = 128 queries (RB = 2
  // row blocks of 16 a warp), so K and V fragments and each key tile's barriers
  // and loads serve twice the rows of 64-query tiles; at 256, 64 queries.
  // Up to head dim 64, 64 queries against key tiles of 64: two row blocks'
  // S and dP of 64 keys do not fit in registers with dropout, and 128
  // queries against 32 keys took a barrier and a K/V stage per 32 keys
  // (H200, dq ms a step, 128 x 32 -> 64 x 64: GPT-2 medium 7.77 -> 6.57,
  // BERT-base 2.35 -> 2.01, both with dropout; without, ViT-B/16 0.97 ->
  // 0.93 where 128 x 64 ran).
  {
    GeneratedKernel &dq = kernels[0];
    dq.kernel.name = kernelName + "_dq";
    Params p(dq);
    unsigned tokens = addDqParams(p, s, go);
    p.pointer("unsigned char *scratch", ParamBinding::Kind::Scratch, 0);
    dq.kernel.scratchBytes = scratchBytes;
    const int rows = s.headDim <= 64 ? 64 : queryRows(s), keys = s.headDim <= 64 ? 64 : 32;
    // Q and dO tiles, two stages of K and V tiles, D and lse of the rows.
    uint32_t shared = (2 * rows + 4 * keys) * rowBytes + 2 * rows * 4;
    dq.kernel.launch = tileLaunch(s.tokensQ, tokens, s.heads, shared, rows);
    std::string src = kernelStart(op, s, "dq", p);
    src += "  constexpr int RB = " + std::to_string(rows / 64) + ", BM = ${TILE}, BN = " +
           std::to_string(keys) + ";\n";
    src += R"cuda(  constexpr int KS = D / 16, NT = BN / 8, DT = D / 8;
  static_assert(BM == 64 * RB, "4 warps of RB row blocks");
  static_assert((2 * BM + 4 * BN) * LDS * 2 + 2 * BM * 4 <= ${SHARED},
                "the tiles fit the launch's shared memory");
  static_assert(!LS2_WGMMA || (BM * LDS * 2) % 1024 == 0 && (BN * LDS * 2) % 1024 == 0,
                "swizzled tiles start 1024-byte aligned");
  // Stage s of K and V: sKV + s * 2 * BN * LDS, V after K.
  ls2_t *sQ = reinterpret_cast<ls2_t *>(ls2_smem), *sDO = sQ + BM * LDS, *sKV = sDO + BM * LDS;
  float *sD = reinterpret_cast<float *>(sKV + 4 * BN * LDS), *sL = sD + BM;
  const bool vq = ls2_vectors(q, stride_q), vk = ls2_vectors(k, stride_k),
             vv = ls2_vectors(v, stride_v), vdo = ls2_vectors(dout, stride_dout),
             vout = ls2_vectors(out, stride_out);
  const int wrb = warp * 16 * RB; // the warp's first row: row block rb is wrb + 16 rb
)cuda";
    src += scratchD;
    src += unitLoop(true, 1, s.causal);
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
    float rowL[RB][2], rowD[RB][2], acc[RB][DT][4];
#if LS2_WGMMA
    // Row block rb is the warpgroup's wgmma tile rb: rows 64 rb .. 64 rb + 63.
    auto rowIn = [&](int rb, int r) { return 64 * rb + wr + g + 8 * r; };
#else
    auto rowIn = [&](int rb, int r) { return wrb + 16 * rb + g + 8 * r; };
#endif
    auto rowOf = [&](int rb, int r) -> long long { return first + rowIn(rb, r); };
#pragma unroll
    for (int rb = 0; rb < RB; ++rb) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = rowIn(rb, r);
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
)cuda";
    src += queryTileMask();
    // Row block rb's dropout numbers: a call per row pair and 32 keys, as in
    // the forward (drawn where used: drawn before S and dP are awaited, while
    // they are on the tensor cores, they made the backward slower, H200,
    // 8x16x2048x64 1.89 -> 2.01 ms).
    src += dropoutDraw(s);
    src += R"cuda(      // dS = P (dP mask - D) of row block rb into s[rb], P rebuilt from lse.
      auto gradScores = [&](int rb, const uint4 (&w)[DW]) {
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
)cuda";
    src += R"cuda(#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float p = ls2_exp2(fmaf(s[rb][nt][e], SCALE_LOG2, -rowL[rb][e / 2]));
)cuda";
    src += s.dropout ? "            const float mask =\n"
                       "                ls2_keep_byte(ls2_word(w[nt / 4], nt % 4), e, KEEP_MIN)\n"
                       "                    ? KEEP_SCALE : 0.0f;\n"
                     : "            (void)w;\n            const float mask = 1.0f;\n";
    src += R"cuda(            s[rb][nt][e] = p * (dp[rb][nt][e] * mask - rowD[rb][e / 2]);
          }
        }
      };
#if LS2_WGMMA
      // A wgmma group per row block's S and dP; then per row block: wait for
      // them (later row blocks' products and earlier ones' dS K in flight),
      // dS, issue dQ += dS K (A from registers, K transposed).
      ls2_wg_fence();
#pragma unroll
      for (int rb = 0; rb < RB; ++rb) {
#pragma unroll
        for (int kk = 0; kk < KS; ++kk) {
          ls2_wg_ss<0>(s[rb], ls2_wg_k<BM>(sQ, 64 * rb, kk * 16), ls2_wg_k<BN>(sK, 0, kk * 16), kk > 0);
          ls2_wg_ss<0>(dp[rb], ls2_wg_k<BM>(sDO, 64 * rb, kk * 16), ls2_wg_k<BN>(sV, 0, kk * 16), kk > 0);
        }
        ls2_wg_commit();
      }
#pragma unroll
      for (int rb = 0; rb < RB; ++rb) {
        ls2_wg_wait<RB - 1>();
        ls2_wg_acc_fence(s[rb]);
        ls2_wg_acc_fence(dp[rb]);
        maskScores(rb);
        uint4 words[DW];
        draw(rb, words);
        gradScores(rb, words);
        // A wgmma.fence after each k step's dS is packed (it must follow the
        // last write of registers a wgmma reads): packing them all first
        // holds more registers (H200: the backward 2-10% slower).
#pragma unroll
        for (int ks = 0; ks < BN / 16; ++ks) {
          unsigned sa[4];
          ls2_a_from_c(sa, s[rb][2 * ks], s[rb][2 * ks + 1]);
          ls2_wg_fence();
          ls2_wg_rs<1>(acc[rb], sa, ls2_wg_t<BN>(sK, ks * 16));
        }
        ls2_wg_commit();
      }
      ls2_wg_wait<0>(); // before the barrier that frees this stage's K
#pragma unroll
      for (int rb = 0; rb < RB; ++rb) ls2_wg_acc_fence(acc[rb]);
#else
#pragma unroll
      for (int rb = 0; rb < RB; ++rb)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[rb][nt][e] = dp[rb][nt][e] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < KS; ++kk) {
        // Q and dO fragments from shared memory: registers hold acc, S and dP.
        unsigned qf[RB][4], df[RB][4];
#pragma unroll
        for (int rb = 0; rb < RB; ++rb) {
          ls2_a_fragment(qf[rb], sQ, LDS, wrb + 16 * rb, kk * 16);
          ls2_a_fragment(df[rb], sDO, LDS, wrb + 16 * rb, kk * 16);
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
#pragma unroll
      for (int rb = 0; rb < RB; ++rb) maskScores(rb);
#pragma unroll
      for (int rb = 0; rb < RB; ++rb) {
        uint4 words[DW];
        draw(rb, words);
        gradScores(rb, words);
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
#endif
    }
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const long long i = rowOf(rb, r);
        if (i >= lq) continue;
#pragma unroll
        for (int dt = 0; dt < DT; ++dt) {
          const long long at = (q0 + i) * stride_dq + (long long)h * D + dt * 8 + 2 * t4;
          ls2_store_pair(dq, at, SCALE * acc[rb][dt][2 * r], SCALE * acc[rb][dt][2 * r + 1]);
        }
      }
  }
}
)cuda";
    std::map<std::string, std::string> values = flashValues(s, dq.kernel.name);
    values["TILE"] = std::to_string(rows);
    values["SHARED"] = std::to_string(shared);
    dq.kernel.source = substitute(src, values);
  }

  if (s.headDim % 32 == 0 && s.headDim > 64 && s.headDim <= 128) {
    kernels[1] = generateWideDkDv(op, s, go, maxTokensQ, kernelName + "_dkdv");
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
    dkv.kernel.launch = tileLaunch(s.tokensK, tokens, s.kvHeads * dkDvSplits(s), shared);
    std::string src = kernelStart(op, s, "dk and dv", p);
    src += keyWarpDkDvBody(s, maxTokensQ, inner) + "}\n";
    std::map<std::string, std::string> values = flashValues(s, dkv.kernel.name);
    values["SHARED"] = std::to_string(shared);
    dkv.kernel.source = substitute(src, values);
  }
  return kernels;
}

} // namespace ls2c::codegen::attention
