//===- AttentionKernel.cpp - ls2.attention and its gradient, simple kernels -===//
//
// Direct kernels for packed variable-length attention, correct on every
// shape; f16/bf16 with a head dim a multiple of 16 up to 128, or 256, goes to the
// tensor-core kernels of FlashAttentionKernel.cpp instead:
//   forward  one warp per (packed query row, query head): the row's sequence
//            by binary search in cu_seqlens_q, then one pass over its
//            visible keys with an online softmax (running max and sum in
//            f32); dropout scales each probability after the sum, so lse is
//            taken before dropout as the op says;
//   dq       one warp per (query row, head): D_i = dout_i . out_i, then
//            dq_i = scale * sum_j dS_ij k_j with P rebuilt from lse;
//   dk, dv   one warp per (key row, kv head): every query of the key's
//            sequence that sees it, times every query head sharing the kv
//            head (GQA), in a fixed order, so no atomics and the same bits
//            run to run.
// Each lane holds head-dim elements lane, lane + 32, ...; dot products are
// butterfly sums, so every lane has the same bits and branches alike. Dropout
// masks are regenerated from Philox at the op's attention counter layout.
// Head dim, heads, causal, scale, dropout rate and dtypes are in the source;
// token counts, row strides (views of fused projections, in-place concat
// pieces) and the Philox stream are parameters, so layers share kernels.
//
//===----------------------------------------------------------------------===//

#include "ls2c/Codegen/KernelGenerator.h"

#include "AttentionCommon.h"
#include "FlashAttentionKernel.h"
#include "Prelude.h"

#include <map>

using namespace mlir;

namespace ls2c::codegen {

using namespace attention;

namespace {

constexpr int kWarpsPerBlock = 4;
constexpr uint32_t kMaxBlocks = 65536;

/// One warp per unit of `work` ([tokens, heads]): the tokens' parameter and
/// a static head count.
runtime::LaunchConfig warpPerUnit(const runtime::Dim &tokens, unsigned tokensParam,
                                  int64_t heads) {
  runtime::LaunchConfig l;
  l.blockThreads = 32 * kWarpsPerBlock;
  l.workPerBlock = kWarpsPerBlock;
  l.maxBlocks = kMaxBlocks;
  runtime::Dim t = tokens;
  if (!t.isStatic())
    t = runtime::Dim{0, static_cast<int32_t>(tokensParam), 0};
  l.work = {t, runtime::Dim{heads, -1, 0}};
  return l;
}

/// The substitutions every kernel uses.
std::map<std::string, std::string> commonValues(const AttentionSpec &s,
                                                const std::string &kernelName) {
  int64_t perLane = (s.headDim + 31) / 32;
  std::map<std::string, std::string> values = {{"NAME", kernelName},
          {"D", std::to_string(s.headDim)},
          {"HQ", std::to_string(s.heads)},
          {"HKV", std::to_string(s.kvHeads)},
          {"GROUP", std::to_string(s.heads / s.kvHeads)},
          {"E", std::to_string(perLane)},
          {"WARPS", std::to_string(kWarpsPerBlock)},
          {"SCALE", floatLiteral(s.scale)},
          // Lanes past the head dim hold zeros (only when D % 32 != 0).
          {"IN_DIM", s.headDim % 32 == 0 ? "true" : "c < D"}};
  addDropoutValues(values, s);
  return values;
}

/// Keys query i of a sequence sees: all lk, or under causal j <= i + (lk -
/// lq) (bottom-right alignment).
std::string visibleText(const AttentionSpec &s, const std::string &i) {
  return s.causal ? "min(lk, max(0LL, " + i + " + lk - lq + 1))" : "lk";
}

/// The warp loop over (row, head) units and the row's sequence.
const char *kRowLoop = R"cuda(
  for (long long w = (long long)blockIdx.x * ${WARPS} + threadIdx.x / 32; w < tokens_q * HQ;
       w += (long long)gridDim.x * ${WARPS}) {
    const long long row = w / HQ;
    const int h = (int)(w % HQ), g = h / GROUP;
    const int b = ls2_sequence_of(cu_seqlens_q, entries, row);
    const long long q0 = cu_seqlens_q[b], k0 = cu_seqlens_k[b];
    const long long lq = cu_seqlens_q[b + 1] - q0, lk = ${KEY_LENGTH};
    const long long visible = ${VISIBLE};
)cuda";

const char *kConstants = R"cuda(  constexpr int D = ${D}, HQ = ${HQ}, GROUP = ${GROUP}, E = ${E};
  constexpr float SCALE = ${SCALE};
  const int lane = threadIdx.x % 32;
  const float NEG_INF = __int_as_float(0xff800000);
)cuda";

const char *kDropoutConstants = R"cuda(  constexpr unsigned KEEP_MIN = ${KEEP_MIN};
  constexpr float KEEP_SCALE = ${KEEP_SCALE};
  const long long seed_value = *seed, offset_value = *offset;
)cuda";

/// The source up to the kernel body: the header line naming the op, the
/// helpers, the signature.
std::string kernelStart(const std::string &head, const AttentionSpec &s, const Params &p) {
  return head + kernelPrelude() + attentionHelpers(s.dropout) +
         "\nextern \"C\" __global__ void __launch_bounds__(" +
         std::to_string(32 * kWarpsPerBlock) + ")\n${NAME}(" + p.declarations() + ") {\n";
}

} // namespace

FailureOr<GeneratedKernel> generateAttentionKernel(ls2::AttentionOp op,
                                                   const SymbolicDims &dims,
                                                   const std::string &kernelName) {
  FailureOr<AttentionSpec> spec = readSpec(op, dims, kernelName);
  if (failed(spec))
    return failure();
  const AttentionSpec &s = *spec;
  // A KV cache's attention (key_lengths) has a query or a few per
  // sequence: a warp per query row beats 128-row tensor-core tiles there.
  if (flashApplies(s) && !s.keyLengths)
    return generateFlashForward(op, s, kernelName);
  GeneratedKernel out;
  out.kernel.name = kernelName;
  Params p(out);
  unsigned tokens = addForwardParams(p, s);
  out.kernel.launch = warpPerUnit(s.tokensQ, tokens, s.heads);

  std::map<std::string, std::string> values = commonValues(s, kernelName);
  values["VISIBLE"] = visibleText(s, "(row - q0)");
  values["KEY_LENGTH"] = s.keyLengths ? "key_lengths[b]" : "cu_seqlens_k[b + 1] - k0";
  std::string src = kernelStart(header(op, s, "forward"), s, p);
  src += kConstants;
  if (s.dropout)
    src += kDropoutConstants;
  src += kRowLoop;
  src += R"cuda(    // Online softmax: m the running max, l the sum of exp(s - m) before
    // dropout (lse is taken before it), acc the dropped-out weighted values.
    float qv[E], acc[E];
#pragma unroll
    for (int t = 0; t < E; ++t) {
      const int c = lane + 32 * t;
      qv[t] = ${IN_DIM} ? ls2_load(q, row * stride_q + h * D + c) : 0.0f;
      acc[t] = 0.0f;
    }
    float m = NEG_INF, l = 0.0f;
)cuda";
  if (s.dropout)
    src += "    uint4 words = make_uint4(0u, 0u, 0u, 0u);\n";
  src += R"cuda(    for (long long j = 0; j < visible; ++j) {
      const long long kRow = (k0 + j) * stride_k + g * D, vRow = (k0 + j) * stride_v + g * D;
      float dot = 0.0f;
#pragma unroll
      for (int t = 0; t < E; ++t) {
        const int c = lane + 32 * t;
        if (${IN_DIM}) dot += qv[t] * ls2_load(k, kRow + c);
      }
      const float s = SCALE * ls2_warp_sum(dot);
      const float mNew = fmaxf(m, s);
      const float correction = expf(m - mNew); // 0 at the first key (m = -inf)
      const float p = expf(s - mNew);
      l = l * correction + p;
)cuda";
  if (s.dropout)
    src += R"cuda(      // A call a key pair (its 8 keys are not consecutive).
      if ((j & 1) == 0)
        words = ls2_attention_philox(seed_value, offset_value, (unsigned)stream,
                                     (unsigned)(ls2_attention_pair_row(q0, row - q0) * HQ + h), j);
      const float weight =
          ls2_attention_keep(words, row - q0, j, KEEP_MIN) ? p * KEEP_SCALE : 0.0f;
)cuda";
  else
    src += "      const float weight = p;\n";
  src += R"cuda(#pragma unroll
      for (int t = 0; t < E; ++t) {
        const int c = lane + 32 * t;
        acc[t] = acc[t] * correction + (${IN_DIM} ? weight * ls2_load(v, vRow + c) : 0.0f);
      }
      m = mNew;
    }
    // A row that sees no key: out 0, lse -inf.
#pragma unroll
    for (int t = 0; t < E; ++t) {
      const int c = lane + 32 * t;
      if (${IN_DIM}) ls2_store(out, row * stride_out + h * D + c, visible > 0 ? acc[t] / l : 0.0f);
    }
    if (lane == 0) lse[row * HQ + h] = visible > 0 ? m + logf(l) : NEG_INF;
  }
}
)cuda";
  out.kernel.source = substitute(src, values);
  return out;
}

FailureOr<std::vector<GeneratedKernel>>
generateAttentionGradKernels(ls2::AttentionGradOp op, const SymbolicDims &dims,
                             const ShapeBounds &bounds, const std::string &kernelName) {
  FailureOr<AttentionSpec> spec = readSpec(op, dims, kernelName);
  if (failed(spec))
    return failure();
  const AttentionSpec &s = *spec;
  auto operand = [&](unsigned odsIndex) {
    return static_cast<unsigned>(op.getODSOperandIndexAndLength(odsIndex).first);
  };
  const GradOperands go{operand(0), operand(4), operand(5)};
  if (flashApplies(s))
    return generateFlashBackward(op, s, go, bounds.shape(op.getQuery())[0], kernelName);
  std::map<std::string, std::string> values = commonValues(s, kernelName + "_dq");
  std::vector<GeneratedKernel> kernels(2);

  // dq (and D_i) per (query row, head).
  {
    GeneratedKernel &dq = kernels[0];
    dq.kernel.name = kernelName + "_dq";
    Params p(dq);
    unsigned tokens = addDqParams(p, s, go);
    dq.kernel.launch = warpPerUnit(s.tokensQ, tokens, s.heads);
    values["VISIBLE"] = visibleText(s, "(row - q0)");
  values["KEY_LENGTH"] = s.keyLengths ? "key_lengths[b]" : "cu_seqlens_k[b + 1] - k0";
    std::string src = kernelStart(header(op, s, "dq"), s, p);
    src += kConstants;
    if (s.dropout)
      src += kDropoutConstants;
    src += kRowLoop;
    src += R"cuda(    const float rowLse = lse[row * HQ + h];
    float dqv[E];
#pragma unroll
    for (int t = 0; t < E; ++t) dqv[t] = 0.0f;
    // A row that sees no key (lse -inf) has P = 0: dq stays 0.
    if (visible > 0 && rowLse != NEG_INF) {
      float qv[E], dov[E], di = 0.0f;
#pragma unroll
      for (int t = 0; t < E; ++t) {
        const int c = lane + 32 * t;
        qv[t] = ${IN_DIM} ? ls2_load(q, row * stride_q + h * D + c) : 0.0f;
        dov[t] = ${IN_DIM} ? ls2_load(dout, row * stride_dout + h * D + c) : 0.0f;
        if (${IN_DIM}) di += dov[t] * ls2_load(out, row * stride_out + h * D + c);
      }
      di = ls2_warp_sum(di);
)cuda";
    if (s.dropout)
      src += "      uint4 words = make_uint4(0u, 0u, 0u, 0u);\n";
    src += R"cuda(      for (long long j = 0; j < visible; ++j) {
        const long long kRow = (k0 + j) * stride_k + g * D, vRow = (k0 + j) * stride_v + g * D;
        float kv[E], dot = 0.0f, dp = 0.0f;
#pragma unroll
        for (int t = 0; t < E; ++t) {
          const int c = lane + 32 * t;
          kv[t] = ${IN_DIM} ? ls2_load(k, kRow + c) : 0.0f;
          dot += qv[t] * kv[t];
          if (${IN_DIM}) dp += dov[t] * ls2_load(v, vRow + c);
        }
        const float p = expf(SCALE * ls2_warp_sum(dot) - rowLse);
)cuda";
    if (s.dropout)
      src += R"cuda(        if ((j & 1) == 0)
          words = ls2_attention_philox(
              seed_value, offset_value, (unsigned)stream,
              (unsigned)(ls2_attention_pair_row(q0, row - q0) * HQ + h), j);
        const float mask = ls2_attention_keep(words, row - q0, j, KEEP_MIN) ? KEEP_SCALE : 0.0f;
)cuda";
    else
      src += "        const float mask = 1.0f;\n";
    src += R"cuda(        const float ds = p * (ls2_warp_sum(dp) * mask - di);
#pragma unroll
        for (int t = 0; t < E; ++t) dqv[t] += SCALE * ds * kv[t];
      }
    }
#pragma unroll
    for (int t = 0; t < E; ++t) {
      const int c = lane + 32 * t;
      if (${IN_DIM}) ls2_store(dq, row * stride_dq + h * D + c, dqv[t]);
    }
  }
}
)cuda";
    dq.kernel.source = substitute(src, values);
  }

  // dk and dv per (key row, kv head): the queries that see the key, for each
  // query head of the group, in order.
  {
    GeneratedKernel &dkv = kernels[1];
    dkv.kernel.name = kernelName + "_dkdv";
    Params p(dkv);
    unsigned tokens = addDkDvParams(p, s, go);
    dkv.kernel.launch = warpPerUnit(s.tokensK, tokens, s.kvHeads);
    values["NAME"] = kernelName + "_dkdv";
    // Query i sees key j when j < visible(i): under causal i >= j - (lk - lq).
    values["FIRST_QUERY"] = s.causal ? "max(0LL, j - (lk - lq))" : "0";
    std::string src = kernelStart(header(op, s, "dk and dv"), s, p);
    src += kConstants;
    src += "  constexpr int HKV = ${HKV};\n";
    if (s.dropout)
      src += kDropoutConstants;
    src += R"cuda(
  for (long long w = (long long)blockIdx.x * ${WARPS} + threadIdx.x / 32; w < tokens_k * HKV;
       w += (long long)gridDim.x * ${WARPS}) {
    const long long keyRow = w / HKV;
    const int g = (int)(w % HKV);
    const int b = ls2_sequence_of(cu_seqlens_k, entries, keyRow);
    const long long q0 = cu_seqlens_q[b], k0 = cu_seqlens_k[b];
    const long long lq = cu_seqlens_q[b + 1] - q0, lk = cu_seqlens_k[b + 1] - k0;
    const long long j = keyRow - k0;
    float kj[E], vj[E], dkj[E], dvj[E];
#pragma unroll
    for (int t = 0; t < E; ++t) {
      const int c = lane + 32 * t;
      kj[t] = ${IN_DIM} ? ls2_load(k, keyRow * stride_k + g * D + c) : 0.0f;
      vj[t] = ${IN_DIM} ? ls2_load(v, keyRow * stride_v + g * D + c) : 0.0f;
      dkj[t] = 0.0f;
      dvj[t] = 0.0f;
    }
    for (long long i = ${FIRST_QUERY}; i < lq; ++i) {
      const long long row = q0 + i;
      for (int h = g * GROUP; h < (g + 1) * GROUP; ++h) {
        const float rowLse = lse[row * HQ + h];
        if (rowLse == NEG_INF) continue; // P = 0: nothing flows back
        float qv[E], dov[E], dot = 0.0f, dp = 0.0f, di = 0.0f;
#pragma unroll
        for (int t = 0; t < E; ++t) {
          const int c = lane + 32 * t;
          qv[t] = ${IN_DIM} ? ls2_load(q, row * stride_q + h * D + c) : 0.0f;
          dov[t] = ${IN_DIM} ? ls2_load(dout, row * stride_dout + h * D + c) : 0.0f;
          dot += qv[t] * kj[t];
          dp += dov[t] * vj[t];
          if (${IN_DIM}) di += dov[t] * ls2_load(out, row * stride_out + h * D + c);
        }
        const float p = expf(SCALE * ls2_warp_sum(dot) - rowLse);
)cuda";
    if (s.dropout)
      src += R"cuda(        const uint4 words = ls2_attention_philox(
            seed_value, offset_value, (unsigned)stream,
            (unsigned)(ls2_attention_pair_row(q0, i) * HQ + h), j);
        const float mask = ls2_attention_keep(words, i, j, KEEP_MIN) ? KEEP_SCALE : 0.0f;
)cuda";
    else
      src += "        const float mask = 1.0f;\n";
    src += R"cuda(        const float ds = p * (ls2_warp_sum(dp) * mask - ls2_warp_sum(di));
#pragma unroll
        for (int t = 0; t < E; ++t) {
          dkj[t] += SCALE * ds * qv[t];
          dvj[t] += p * mask * dov[t];
        }
      }
    }
#pragma unroll
    for (int t = 0; t < E; ++t) {
      const int c = lane + 32 * t;
      if (${IN_DIM}) {
        ls2_store(dk, keyRow * stride_dk + g * D + c, dkj[t]);
        ls2_store(dv, keyRow * stride_dv + g * D + c, dvj[t]);
      }
    }
  }
}
)cuda";
    dkv.kernel.source = substitute(src, values);
  }
  return kernels;
}

} // namespace ls2c::codegen
