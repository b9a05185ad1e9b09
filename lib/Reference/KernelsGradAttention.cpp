//===- KernelsGradAttention.cpp - attention_grad (FlashAttention-2 style) -===//
//
// The backward of ls2.attention from its saved out and lse, one query row
// at a time, as the op's description writes it: probabilities rebuilt from
// lse (never a second softmax), D_i = dout_i . out_i, the forward's dropout
// mask regenerated from the attention counter layout (Philox.h), and dk/dv
// of each kv head summed over the query heads sharing it. Computed in
// double; results are rounded once when bound (F32 mode).
//
//===----------------------------------------------------------------------===//
#include "AttentionSetup.h"
#include "Kernels.h"
#include "Philox.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace ls2c::reference::detail {

using namespace mlir;

void evalAttentionGrad(ls2::AttentionGradOp op, Frame &frame) {
  AttentionSetup s = readAttentionSetup(op, frame);
  const HostTensor &q = *s.q, &k = *s.k, &v = *s.v;
  int64_t tq = s.tq, hq = s.hq, d = s.d, hkv = s.hkv;
  const std::vector<int64_t> &cuq = *s.cuq, &cuk = *s.cuk;
  double scale = s.scale, applied = s.appliedRate, keepScale = s.keepScale;
  bool causal = s.causal, dropout = s.dropout;
  int64_t seed = s.seed, offset = s.offset, stream = s.stream;
  const HostTensor &dout = frame.get(op, op.getDout());
  const HostTensor &out = frame.get(op, op.getOut());
  const HostTensor &lse = frame.get(op, op.getLse());
  expectShape(op, dout, q.shape, "dout");
  expectShape(op, out, q.shape, "out");
  expectShape(op, lse, {tq, hq}, "lse");

  HostTensor dq = HostTensor::zeros(
      elementTypeOf(op, op.getDq().getType().getElementType()), q.shape);
  HostTensor dk = HostTensor::zeros(
      elementTypeOf(op, op.getDk().getType().getElementType()), k.shape);
  HostTensor dv = HostTensor::zeros(
      elementTypeOf(op, op.getDv().getType().getElementType()), k.shape);
  int64_t group = hq / hkv;
  for (size_t b = 0; b + 1 < cuq.size(); ++b) {
    int64_t q0 = cuq[b], lq = cuq[b + 1] - cuq[b];
    int64_t k0 = cuk[b], lk = cuk[b + 1] - cuk[b];
    for (int64_t i = 0; i < lq; ++i) {
      int64_t row = q0 + i;
      // Keys j <= i + (lk - lq) are visible under causal (bottom-right).
      int64_t visible = causal ? std::min(lk, std::max<int64_t>(
                                                  0, i + (lk - lq) + 1))
                               : lk;
      for (int64_t h = 0; h < hq; ++h) {
        double rowLse = lse.floats[row * hq + h];
        // No visible key (lse = -inf): P = 0, so dq = 0 and nothing flows
        // to dk, dv.
        if (visible == 0 || rowLse == -std::numeric_limits<double>::infinity())
          continue;
        int64_t kvh = h / group;
        const double *qi = q.floats.data() + (row * hq + h) * d;
        const double *doi = dout.floats.data() + (row * hq + h) * d;
        const double *oi = out.floats.data() + (row * hq + h) * d;
        double *dqi = dq.floats.data() + (row * hq + h) * d;
        double di = 0;
        for (int64_t c = 0; c < d; ++c)
          di += doi[c] * oi[c];
        for (int64_t j = 0; j < visible; ++j) {
          int64_t kvOffset = ((k0 + j) * hkv + kvh) * d;
          const double *kj = k.floats.data() + kvOffset;
          const double *vj = v.floats.data() + kvOffset;
          double s = 0, dp = 0;
          for (int64_t c = 0; c < d; ++c) {
            s += qi[c] * kj[c];
            dp += doi[c] * vj[c];
          }
          double p = std::exp(scale * s - rowLse);
          double m = 1.0;
          if (dropout) {
            float u = attentionUniformAt(
                seed, offset, static_cast<uint32_t>(stream),
                static_cast<uint64_t>(q0), static_cast<uint64_t>(i),
                static_cast<uint64_t>(h), static_cast<uint64_t>(hq),
                static_cast<uint64_t>(j));
            m = u >= applied ? keepScale : 0.0;
          }
          double ds = p * (dp * m - di);
          double pm = p * m;
          double *dkj = dk.floats.data() + kvOffset;
          double *dvj = dv.floats.data() + kvOffset;
          for (int64_t c = 0; c < d; ++c) {
            dqi[c] += scale * ds * kj[c];
            dkj[c] += scale * ds * qi[c];
            dvj[c] += pm * doi[c];
          }
        }
      }
    }
  }
  frame.bind(op, op.getDq(), std::move(dq));
  frame.bind(op, op.getDk(), std::move(dk));
  frame.bind(op, op.getDv(), std::move(dv));
}

} // namespace ls2c::reference::detail
