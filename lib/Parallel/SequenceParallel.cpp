//===- SequenceParallel.cpp - DistAttn's schedule, simulated in float64 ---===//
#include "ls2c/Parallel/SequenceParallel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace ls2c::parallel {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

void checkShape(const AttentionShape &s, const std::vector<double> &q,
                const std::vector<double> &k, const std::vector<double> &v) {
  if (s.tokens < 1 || s.heads < 1 || s.kvHeads < 1 || s.headDim < 1)
    throw std::invalid_argument("attention shape: tokens, heads, kvHeads and headDim must be >= 1");
  if (s.heads % s.kvHeads != 0)
    throw std::invalid_argument("attention shape: kvHeads " + std::to_string(s.kvHeads) +
                                " must divide heads " + std::to_string(s.heads));
  auto want = [&](const std::vector<double> &t, int64_t heads, const char *name) {
    if (static_cast<int64_t>(t.size()) != s.tokens * heads * s.headDim)
      throw std::invalid_argument(std::string(name) + " has " + std::to_string(t.size()) +
                                  " elements; [tokens, heads, headDim] needs " +
                                  std::to_string(s.tokens * heads * s.headDim));
  };
  want(q, s.heads, "q");
  want(k, s.kvHeads, "k");
  want(v, s.kvHeads, "v");
}

/// Half-open token range.
struct Range {
  int64_t begin = 0, end = 0;
  int64_t size() const { return std::max<int64_t>(0, end - begin); }
};

/// The token range of chunk c (clipped to the sequence: the last chunks
/// may be partly or wholly padding).
Range chunkRange(const SchedulePlan &p, int64_t tokens, int64_t c) {
  return {std::min(tokens, c * p.chunkLen), std::min(tokens, (c + 1) * p.chunkLen)};
}

bool visible(const AttentionShape &s, int64_t i, int64_t j) { return !s.causal || j <= i; }

double dot(const double *a, const double *b, int64_t n) {
  double d = 0;
  for (int64_t x = 0; x < n; ++x)
    d += a[x] * b[x];
  return d;
}

/// Partial attention of the queries in `qr` over the keys in `kr`: out
/// [qr.size(), H, D] and lse [qr.size(), H] relative to those keys only.
AttentionForward blockForward(const AttentionShape &s, const std::vector<double> &q,
                              const std::vector<double> &k, const std::vector<double> &v,
                              Range qr, Range kr) {
  const int64_t H = s.heads, D = s.headDim, G = s.heads / s.kvHeads;
  AttentionForward r;
  r.out.assign(static_cast<size_t>(qr.size() * H * D), 0.0);
  r.lse.assign(static_cast<size_t>(qr.size() * H), kNegInf);
  std::vector<double> scores(static_cast<size_t>(kr.size()));
  for (int64_t i = qr.begin; i < qr.end; ++i)
    for (int64_t h = 0; h < H; ++h) {
      const double *qi = &q[static_cast<size_t>((i * H + h) * D)];
      const int64_t kh = h / G;
      double m = kNegInf;
      for (int64_t j = kr.begin; j < kr.end; ++j) {
        double sc = visible(s, i, j)
                        ? s.scale * dot(qi, &k[static_cast<size_t>((j * s.kvHeads + kh) * D)], D)
                        : kNegInf;
        scores[static_cast<size_t>(j - kr.begin)] = sc;
        m = std::max(m, sc);
      }
      if (m == kNegInf)
        continue;
      double sum = 0;
      for (double &sc : scores)
        sum += (sc = std::exp(sc - m));
      double *o = &r.out[static_cast<size_t>(((i - qr.begin) * H + h) * D)];
      for (int64_t j = kr.begin; j < kr.end; ++j) {
        const double p = scores[static_cast<size_t>(j - kr.begin)] / sum;
        const double *vj = &v[static_cast<size_t>((j * s.kvHeads + kh) * D)];
        for (int64_t d = 0; d < D; ++d)
          o[d] += p * vj[d];
      }
      r.lse[static_cast<size_t>((i - qr.begin) * H + h)] = m + std::log(sum);
    }
  return r;
}

/// The backward of one block from the merged lse and D = dout . out of the
/// query rows: adds into dq (rows of qr) and dk, dv (rows of kr), all
/// indexed globally.
void blockBackward(const AttentionShape &s, const std::vector<double> &q,
                   const std::vector<double> &k, const std::vector<double> &v,
                   const std::vector<double> &lse, const std::vector<double> &rowD,
                   const std::vector<double> &dout, Range qr, Range kr,
                   std::vector<double> &dq, std::vector<double> &dk, std::vector<double> &dv) {
  const int64_t H = s.heads, D = s.headDim, G = s.heads / s.kvHeads;
  for (int64_t i = qr.begin; i < qr.end; ++i)
    for (int64_t h = 0; h < H; ++h) {
      const double L = lse[static_cast<size_t>(i * H + h)];
      if (L == kNegInf)
        continue;
      const size_t qi = static_cast<size_t>((i * H + h) * D);
      const int64_t kh = h / G;
      for (int64_t j = kr.begin; j < kr.end; ++j) {
        if (!visible(s, i, j))
          continue;
        const size_t kj = static_cast<size_t>((j * s.kvHeads + kh) * D);
        const double p = std::exp(s.scale * dot(&q[qi], &k[kj], D) - L);
        const double dp = dot(&dout[qi], &v[kj], D);
        const double ds = p * (dp - rowD[static_cast<size_t>(i * H + h)]);
        for (int64_t d = 0; d < D; ++d) {
          dv[kj + d] += p * dout[qi + d];
          dq[qi + d] += s.scale * ds * k[kj + d];
          dk[kj + d] += s.scale * ds * q[qi + d];
        }
      }
    }
}

std::vector<double> rowDots(const AttentionShape &s, const std::vector<double> &dout,
                            const std::vector<double> &out) {
  std::vector<double> d(static_cast<size_t>(s.tokens * s.heads));
  for (size_t r = 0; r < d.size(); ++r)
    d[r] = dot(&dout[r * s.headDim], &out[r * s.headDim], s.headDim);
  return d;
}

/// Checks the backward's extra inputs and returns zero gradients.
AttentionBackward zeroGradients(const AttentionShape &s, const std::vector<double> &q,
                                const std::vector<double> &k, const std::vector<double> &v,
                                const AttentionForward &fwd, const std::vector<double> &dout) {
  checkShape(s, q, k, v);
  if (dout.size() != q.size() || fwd.out.size() != q.size() ||
      fwd.lse.size() != static_cast<size_t>(s.tokens * s.heads))
    throw std::invalid_argument("attention backward: dout and out must be [tokens, heads, "
                                "headDim] and lse [tokens, heads]");
  AttentionBackward g;
  g.dq.assign(q.size(), 0.0);
  g.dk.assign(k.size(), 0.0);
  g.dv.assign(v.size(), 0.0);
  return g;
}

double logSigmoid(double x) { return x >= 0 ? -std::log1p(std::exp(-x)) : x - std::log1p(std::exp(x)); }

} // namespace

const char *scheduleName(Schedule s) { return s == Schedule::DistAttn ? "distattn" : "zigzag"; }

int SchedulePlan::ownerOf(int64_t chunk) const {
  if (schedule == Schedule::DistAttn)
    return static_cast<int>(chunk);
  return static_cast<int>(chunk < ranks ? chunk : 2 * ranks - 1 - chunk);
}

std::vector<int64_t> SchedulePlan::chunksOf(int rank) const {
  std::vector<int64_t> out;
  for (int64_t c = 0; c < chunks; ++c)
    if (ownerOf(c) == rank)
      out.push_back(c);
  return out;
}

SchedulePlan planSchedule(Schedule schedule, int ranks, int64_t tokens, bool causal) {
  if (ranks < 1)
    throw std::invalid_argument("ranks must be >= 1, got " + std::to_string(ranks));
  if (tokens < 1)
    throw std::invalid_argument("tokens must be >= 1, got " + std::to_string(tokens));
  SchedulePlan p;
  p.schedule = schedule;
  p.ranks = ranks;
  p.chunks = schedule == Schedule::DistAttn ? ranks : 2 * ranks;
  p.tokens = tokens;
  p.chunkLen = (tokens + p.chunks - 1) / p.chunks;
  const int P = ranks;
  if (schedule == Schedule::ZigzagRing) {
    for (int t = 0; t < P; ++t) {
      std::vector<BlockTask> &step = p.steps.emplace_back();
      for (int r = 0; r < P; ++r) {
        const int src = ((r - t) % P + P) % P;
        for (int64_t qc : {int64_t(r), int64_t(2 * P - 1 - r)})
          for (int64_t kc : {int64_t(src), int64_t(2 * P - 1 - src)})
            if (!causal || kc <= qc)
              step.push_back({r, qc, kc});
      }
    }
    return p;
  }
  if (!causal) {
    // Keys around a ring: step t, rank r against the keys of rank r - t.
    for (int t = 0; t < P; ++t) {
      std::vector<BlockTask> &step = p.steps.emplace_back();
      for (int r = 0; r < P; ++r)
        step.push_back({r, r, ((r - t) % P + P) % P});
    }
    return p;
  }
  // Causal DistAttn: the diagonal, then one step per distance d <= P / 2,
  // the idle ranks h < d taking the blocks at distance P - d (whose keys
  // are their own).
  std::vector<BlockTask> &diagonal = p.steps.emplace_back();
  for (int r = 0; r < P; ++r)
    diagonal.push_back({r, r, r});
  for (int d = 1; d <= P / 2; ++d) {
    std::vector<BlockTask> &step = p.steps.emplace_back();
    for (int i = d; i < P; ++i)
      step.push_back({i, i, i - d});
    if (P - d != d)
      for (int h = 0; h < d; ++h)
        step.push_back({h, h + P - d, h});
  }
  return p;
}

void mergePartial(std::vector<double> &out, std::vector<double> &lse,
                  const std::vector<double> &outB, const std::vector<double> &lseB,
                  int64_t rows, int64_t headDim) {
  for (int64_t r = 0; r < rows; ++r) {
    const double b = lseB[static_cast<size_t>(r)];
    double &a = lse[static_cast<size_t>(r)];
    if (b == kNegInf)
      continue;
    double *o = &out[static_cast<size_t>(r * headDim)];
    const double *ob = &outB[static_cast<size_t>(r * headDim)];
    if (a == kNegInf) {
      std::copy(ob, ob + headDim, o);
      a = b;
      continue;
    }
    // sigmoid(b - a) = the weight of the new part; never exp of a large
    // positive number.
    const double w = b - a >= 0 ? 1.0 / (1.0 + std::exp(a - b))
                                : std::exp(b - a) / (1.0 + std::exp(b - a));
    for (int64_t d = 0; d < headDim; ++d)
      o[d] -= w * (o[d] - ob[d]);
    a -= logSigmoid(a - b);
  }
}

AttentionForward attentionForward(const AttentionShape &s, const std::vector<double> &q,
                                  const std::vector<double> &k, const std::vector<double> &v) {
  checkShape(s, q, k, v);
  return blockForward(s, q, k, v, {0, s.tokens}, {0, s.tokens});
}

AttentionBackward attentionBackward(const AttentionShape &s, const std::vector<double> &q,
                                    const std::vector<double> &k, const std::vector<double> &v,
                                    const AttentionForward &fwd,
                                    const std::vector<double> &dout) {
  AttentionBackward g = zeroGradients(s, q, k, v, fwd, dout);
  blockBackward(s, q, k, v, fwd.lse, rowDots(s, dout, fwd.out), dout, {0, s.tokens},
                {0, s.tokens}, g.dq, g.dk, g.dv);
  return g;
}

AttentionForward sequenceParallelForward(const SchedulePlan &plan, const AttentionShape &s,
                                         const std::vector<double> &q,
                                         const std::vector<double> &k,
                                         const std::vector<double> &v) {
  checkShape(s, q, k, v);
  const int64_t H = s.heads, D = s.headDim;
  // Per query chunk, its owner's running (out, lse), merged in step order:
  // a block computed elsewhere is the partial result sent back to it.
  std::vector<AttentionForward> acc(static_cast<size_t>(plan.chunks));
  for (int64_t c = 0; c < plan.chunks; ++c) {
    Range r = chunkRange(plan, s.tokens, c);
    acc[static_cast<size_t>(c)].out.assign(static_cast<size_t>(r.size() * H * D), 0.0);
    acc[static_cast<size_t>(c)].lse.assign(static_cast<size_t>(r.size() * H), kNegInf);
  }
  for (const std::vector<BlockTask> &step : plan.steps)
    for (const BlockTask &t : step) {
      Range qr = chunkRange(plan, s.tokens, t.queryChunk);
      Range kr = chunkRange(plan, s.tokens, t.keyChunk);
      AttentionForward part = blockForward(s, q, k, v, qr, kr);
      AttentionForward &a = acc[static_cast<size_t>(t.queryChunk)];
      mergePartial(a.out, a.lse, part.out, part.lse, qr.size() * H, D);
    }
  AttentionForward out;
  out.out.reserve(q.size());
  out.lse.reserve(static_cast<size_t>(s.tokens * H));
  for (int64_t c = 0; c < plan.chunks; ++c) {
    out.out.insert(out.out.end(), acc[static_cast<size_t>(c)].out.begin(),
                   acc[static_cast<size_t>(c)].out.end());
    out.lse.insert(out.lse.end(), acc[static_cast<size_t>(c)].lse.begin(),
                   acc[static_cast<size_t>(c)].lse.end());
  }
  return out;
}

AttentionBackward sequenceParallelBackward(const SchedulePlan &plan, const AttentionShape &s,
                                           const std::vector<double> &q,
                                           const std::vector<double> &k,
                                           const std::vector<double> &v,
                                           const AttentionForward &fwd,
                                           const std::vector<double> &dout) {
  // Each block's dq goes to the query chunk's owner and its dk, dv to the
  // key chunk's owner; a rank sums what it gets in step order, which is the
  // order the blocks write into the global arrays here.
  AttentionBackward g = zeroGradients(s, q, k, v, fwd, dout);
  const std::vector<double> rowD = rowDots(s, dout, fwd.out);
  for (const std::vector<BlockTask> &step : plan.steps)
    for (const BlockTask &t : step)
      blockBackward(s, q, k, v, fwd.lse, rowD, dout, chunkRange(plan, s.tokens, t.queryChunk),
                    chunkRange(plan, s.tokens, t.keyChunk), g.dq, g.dk, g.dv);
  return g;
}

} // namespace ls2c::parallel
