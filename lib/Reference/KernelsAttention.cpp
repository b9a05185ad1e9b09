//===- KernelsAttention.cpp - packed variable-length attention -----------===//
//
// The direct definition, one query row at a time: scores = scale * q . k
// over the keys the row may see, lse = log(sum(exp(scores))), p =
// exp(scores - lse), optional inverted dropout of p with the attention
// counter layout (Philox.h), out = p . v. lse is taken before dropout.
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

const std::vector<int64_t> &checkCuSeqlens(Operation *op,
                                           const HostTensor &cu,
                                           const char *name, int64_t tokens) {
  std::string what = name;
  if (cu.rank() != 1 || cu.shape[0] < 1)
    fail(op, what + " must be [batch + 1] with at least one entry, got " +
                 cu.describe());
  const std::vector<int64_t> &v = cu.ints;
  if (v.front() != 0)
    fail(op, what + "[0] is " + std::to_string(v.front()) + "; it must be 0");
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] < v[i - 1])
      fail(op, what + " decreases at entry " + std::to_string(i) + " (" +
                   std::to_string(v[i - 1]) + " then " + std::to_string(v[i]) +
                   ")");
  if (v.back() != tokens)
    fail(op, what + " ends at " + std::to_string(v.back()) +
                 " but there are " + std::to_string(tokens) + " tokens");
  return v;
}

const std::vector<int64_t> &checkKeyStarts(Operation *op, const HostTensor &cu,
                                           const HostTensor &lengths,
                                           int64_t tokens) {
  if (cu.rank() != 1 || cu.shape[0] < 1)
    fail(op, "cu_seqlens_k must be [batch + 1] with at least one entry, got " +
                 cu.describe());
  if (lengths.rank() != 1 || lengths.shape[0] != cu.shape[0] - 1)
    fail(op, "key_lengths " + lengths.describe() + " must be [batch] beside "
                 "cu_seqlens_k " + cu.describe());
  const std::vector<int64_t> &v = cu.ints;
  for (size_t i = 0; i + 1 < v.size(); ++i) {
    int64_t n = lengths.ints[i];
    if (v[i] < 0 || n < 0 || v[i] + n > tokens)
      fail(op, "sequence " + std::to_string(i) + "'s keys, key_lengths " + std::to_string(n) +
                   " rows from cu_seqlens_k " + std::to_string(v[i]) + ", are not within the " +
                   std::to_string(tokens) + " key rows");
  }
  return v;
}

void evalAttention(ls2::AttentionOp op, Frame &frame) {
  AttentionSetup s = readAttentionSetup(op, frame);
  const HostTensor &q = *s.q, &k = *s.k, &v = *s.v;
  int64_t tq = s.tq, hq = s.hq, d = s.d, hkv = s.hkv;
  const std::vector<int64_t> &cuq = *s.cuq;
  double scale = s.scale, applied = s.appliedRate, keepScale = s.keepScale;
  bool causal = s.causal, dropout = s.dropout;
  int64_t seed = s.seed, offset = s.offset, stream = s.stream;

  HostTensor out = HostTensor::zeros(
      elementTypeOf(op, op.getResult().getType().getElementType()), q.shape);
  HostTensor lse = HostTensor::zeros(ElementType::F32, {tq, hq});
  int64_t group = hq / hkv;
  std::vector<double> p;
  for (size_t b = 0; b + 1 < cuq.size(); ++b) {
    int64_t q0 = cuq[b], lq = cuq[b + 1] - cuq[b];
    int64_t k0 = s.keyStart[b], lk = s.keyLength[b];
    p.assign(static_cast<size_t>(lk), 0.0);
    for (int64_t i = 0; i < lq; ++i) {
      int64_t row = q0 + i;
      // Keys j <= i + (lk - lq) are visible under causal (bottom-right).
      int64_t visible = causal ? std::min(lk, std::max<int64_t>(
                                                  0, i + (lk - lq) + 1))
                               : lk;
      for (int64_t h = 0; h < hq; ++h) {
        int64_t kvh = h / group;
        double *o = out.floats.data() + (row * hq + h) * d;
        if (visible == 0) {
          lse.floats[row * hq + h] = -std::numeric_limits<double>::infinity();
          continue; // output stays 0
        }
        const double *qv = q.floats.data() + (row * hq + h) * d;
        double best = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < visible; ++j) {
          const double *kv = k.floats.data() + ((k0 + j) * hkv + kvh) * d;
          double dot = 0;
          for (int64_t c = 0; c < d; ++c)
            dot += qv[c] * kv[c];
          p[j] = scale * dot;
          best = std::max(best, p[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < visible; ++j)
          sum += std::exp(p[j] - best);
        double logSumExp = best + std::log(sum);
        lse.floats[row * hq + h] = logSumExp;
        for (int64_t j = 0; j < visible; ++j) {
          double prob = std::exp(p[j] - logSumExp);
          if (dropout) {
            float u = attentionUniformAt(
                seed, offset, static_cast<uint32_t>(stream),
                static_cast<uint64_t>(q0), static_cast<uint64_t>(i),
                static_cast<uint64_t>(h), static_cast<uint64_t>(hq),
                static_cast<uint64_t>(j));
            prob = u >= applied ? prob * keepScale : 0.0;
          }
          const double *vv = v.floats.data() + ((k0 + j) * hkv + kvh) * d;
          for (int64_t c = 0; c < d; ++c)
            o[c] += prob * vv[c];
        }
      }
    }
  }
  frame.bind(op, op.getResult(), std::move(out));
  frame.bind(op, op.getLse(), std::move(lse));
}

} // namespace ls2c::reference::detail
