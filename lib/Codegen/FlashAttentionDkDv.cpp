//===- FlashAttentionDkDv.cpp - dk and dv in FlashAttention-2's layout ------===//
//
// generateWideDkDv (FlashAttentionParts.h).
//
//===----------------------------------------------------------------------===//

#include "FlashAttentionParts.h"

#include "Prelude.h"

using namespace mlir;

namespace ls2c::codegen::attention {

// dk, dv per key tile of 128 and kv head, as FlashAttention-2's backward
// lays it out (section 3.2; without its dq atomics, dq is its own kernel):
// 8 warps; per query tile of 64 (each query head of the group in order),
// S = Q K^T and dP = dO V^T with the warps as 2 x 4 blocks of 32 queries
// x 32 keys, P and dS through shared memory, then dV += P^T dO and
// dK += dS^T Q with the warps as 4 x 2 blocks of 32 keys x D/2. At head
// dims 96 and 128 each shared fragment feeds more mma than in the
// warp-per-16-keys layout (FlashAttentionBackward.cpp; H200, 4x16x4096x128 bf16: 4.65 -> 4.22
// ms, causal 2.53 -> 2.27); at 64 it does not and the extra P and dS
// traffic made it slower (BERT-base 4.90 -> 5.76 ms, GPT-2 medium 14.3 ->
// 17.1), so head dims up to 64 (and those not a multiple of 32) keep that
// layout.
GeneratedKernel generateWideDkDv(Operation *op, const AttentionSpec &s, const GradOperands &go,
                                 int64_t maxTokensQ, const std::string &name) {
  GeneratedKernel dkv;
  dkv.kernel.name = name;
  Params p(dkv);
  unsigned tokens = addDkDvParams(p, s, go);
  p.pointer("unsigned char *scratch", ParamBinding::Kind::Scratch, 0);
  dkv.kernel.scratchBytes = backwardScratchBytes(s, maxTokensQ);
  constexpr int keysPerBlock = 128, queryTile = 64, threads = 256;
  // K and V tiles, two stages of Q and dO tiles, P and dS, two stages of
  // D and the bias.
  const uint32_t rowBytes = static_cast<uint32_t>((s.headDim + 8) * 2);
  uint32_t shared = (2 * keysPerBlock + 4 * queryTile) * rowBytes +
                    2 * queryTile * (keysPerBlock + 8) * 2 + 4 * queryTile * 4;
  dkv.kernel.launch =
      tileLaunch(s.tokensK, tokens, s.kvHeads, shared, keysPerBlock, threads);
  std::string src = kernelStart(op, s, "dk and dv", p, threads);
  // On Hopper the warp-per-16-keys body at 8 warps (two warpgroups of 64
  // keys) with wgmma: there P and dS stay in registers as wgmma's A. Query
  // tiles of 64 (241 registers; with dropout 254 and 8 bytes of spills):
  // H200, 4x16x4096x128 bf16 dk/dv 3.97 ms at 32, 3.30 at 64 (unswizzled
  // tiles; the same run).
  src += "#if LS2_WGMMA\n" + keyWarpDkDvBody(s, maxTokensQ, 64) + "#else\n";
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
  src += backwardScratchDeclarations(s, maxTokensQ);
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
  src += queryTileLoopHead(s);
  src += R"cuda(      // S = Q K^T and dP = dO V^T for the warp's 32 x 32 block.
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
      // to the storage type as FlashAttention does, into sP and sS. The rows'
      // bias and D in registers first: the stores to sP and sS may alias tL
      // and tD for the compiler, which would reload them per element.
      float rowL[2][2], rowD[2][2];
#pragma unroll
      for (int rb = 0; rb < 2; ++rb)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          rowL[rb][h] = tL[wq + 16 * rb + g + 8 * h];
          rowD[rb][h] = tD[wq + 16 * rb + g + 8 * h];
        }
#pragma unroll
      for (int rb = 0; rb < 2; ++rb) {
)cuda";
  // The warp's 32 keys of rows g and g + 8: one dropout call
  // (ls2_attention_philox), byte e this thread's element e.
  if (s.dropout)
    src += R"cuda(        const uint4 words = ls2_attention_philox(
            seed_value, offset_value, (unsigned)stream,
            (unsigned)(ls2_attention_pair_row(q0, qFirst + wq + 16 * rb + g) * HQ + h),
            first + wk + 2 * t4);
)cuda";
  src += R"cuda(#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          float pv[4], ds[4];
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float p = ls2_exp2(fmaf(st[rb][nt][e], SCALE_LOG2, -rowL[rb][e / 2]));
)cuda";
  src += s.dropout ? "            const float mask =\n"
                     "                ls2_keep_byte(ls2_word(words, nt), e, KEEP_MIN)\n"
                     "                    ? KEEP_SCALE : 0.0f;\n"
                   : "            const float mask = 1.0f;\n";
  src += R"cuda(            pv[e] = p * mask;
            ds[e] = p * (dpt[rb][nt][e] * mask - rowD[rb][e / 2]);
          }
          const int row = wq + 16 * rb + g, col = wk + nt * 8 + 2 * t4;
          *reinterpret_cast<unsigned *>(sP + row * LDP + col) = ls2_pack(pv[0], pv[1]);
          *reinterpret_cast<unsigned *>(sP + (row + 8) * LDP + col) = ls2_pack(pv[2], pv[3]);
          *reinterpret_cast<unsigned *>(sS + row * LDP + col) = ls2_pack(ds[0], ds[1]);
          *reinterpret_cast<unsigned *>(sS + (row + 8) * LDP + col) = ls2_pack(ds[2], ds[3]);
        }
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
          ls2_store_pair(dk, atK, SCALE * dkAcc[rb][dt][2 * r],
                         SCALE * dkAcc[rb][dt][2 * r + 1]);
          ls2_store_pair(dv, atV, dvAcc[rb][dt][2 * r], dvAcc[rb][dt][2 * r + 1]);
        }
      }
  }
#endif
}
)cuda";
  std::map<std::string, std::string> values = flashValues(s, dkv.kernel.name);
  values["TILE"] = std::to_string(keysPerBlock);
  values["THREADS"] = std::to_string(threads);
  values["SHARED"] = std::to_string(shared);
  dkv.kernel.source = substitute(src, values);
  return dkv;
}

} // namespace ls2c::codegen::attention
