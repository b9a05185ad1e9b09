//===- SequenceParallelRunner.cpp - sequence-parallel attention on GPUs ---===//
#include "SequenceParallelRunner.h"

#include <cuda.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

namespace ls2c::seqpar {

using parallel::BlockTask;
using parallel::Payload;
using parallel::Transfer;
using runtime::DeviceBuffer;
using runtime::Executor;
using runtime::RuntimeError;

void checkCuda(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw RuntimeError(std::string(what) + ": " + cudaGetErrorString(e));
}

namespace {

/// A buffer of `bytes` (at least 1), its name in an out-of-memory error.
DeviceBuffer alloc(size_t bytes, const std::string &what, size_t &total) {
  total += std::max<size_t>(bytes, 1);
  return DeviceBuffer(std::max<size_t>(bytes, 1), what);
}

} // namespace

void CopyTransport::exchange(const std::vector<Transfer> &list, const Parts &parts,
                             cudaStream_t stream) {
  for (const Transfer &t : list) {
    std::vector<Span> from = parts(t, true), to = parts(t, false);
    for (size_t i = 0; i < from.size(); ++i)
      if (from[i].bytes)
        checkCuda(cudaMemcpyAsync(to[i].ptr, from[i].ptr, from[i].bytes, cudaMemcpyDeviceToDevice,
                              stream),
              "cudaMemcpyAsync (a simulated rank's transfer)");
  }
}

/// Buffers of one chunk: a rank's own, a fetch slot, a block's outputs or a
/// give slot (each allocates the parts it needs; a pointer left null is not
/// needed there). A block's and a give's out (forward) and dq (backward)
/// share one buffer: the two passes never overlap.
struct ChunkBuffers {
  DeviceBuffer q, k, v, dout, out, lse;
  void *dq = nullptr, *dk = nullptr, *dv = nullptr;
  DeviceBuffer dqOwn, dkOwn, dvOwn;
  /// Own chunks: f32 state, the forward's ping-pong merge (out, lse) x 2
  /// and the backward's gradient sums (dq, dk, dv) in one pool.
  DeviceBuffer pool, lseAcc[2];
  void *outAcc[2] = {nullptr, nullptr};
  int acc = 0; ///< which of the two holds the merge state
  void *dqAcc = nullptr, *dkAcc = nullptr, *dvAcc = nullptr;
};

struct Runner::Impl {
  Executor &ex;
  parallel::SchedulePlan plan;
  Shape s;
  std::vector<int> local;
  Transport &transport;
  std::vector<parallel::StepTransfers> fwd, bwd;
  size_t total = 0;
  size_t eb = 2;     ///< bytes of one compute-dtype element
  int64_t maxRows = 0; ///< rows of the longest chunk

  std::map<std::pair<int, int64_t>, ChunkBuffers> own; ///< (rank, chunk)
  /// Per local rank and step parity: receive slots per payload (numbered as
  /// parallel::receiveSlot numbers them) and the blocks' outputs.
  std::map<int, std::vector<ChunkBuffers>> slots[2][5], blockSlots[2];
  DeviceBuffer cuSeqlens; ///< i32 [chunks][B + 1]
  cudaEvent_t fetched[2]{}, computed[2]{}, given[2]{};

  Impl(Executor &e, parallel::SchedulePlan p, Shape shape, std::vector<int> ranks, Transport &t)
      : ex(e), plan(std::move(p)), s(shape), local(std::move(ranks)), transport(t) {}

  int64_t rows(int64_t c) const { return s.batch * (plan.chunkEnd(c) - plan.chunkBegin(c)); }
  size_t qBytes(int64_t r) const { return static_cast<size_t>(r * s.heads * s.headDim) * eb; }
  size_t kvBytes(int64_t r) const { return static_cast<size_t>(r * s.kvHeads * s.headDim) * eb; }
  size_t lseBytes(int64_t r) const { return static_cast<size_t>(r * s.heads) * 4; }
  size_t q32Bytes(int64_t r) const { return static_cast<size_t>(r * s.heads * s.headDim) * 4; }
  size_t kv32Bytes(int64_t r) const { return static_cast<size_t>(r * s.kvHeads * s.headDim) * 4; }
  void *cu(int64_t c) const {
    return static_cast<char *>(cuSeqlens.data()) + static_cast<size_t>(c * (s.batch + 1)) * 4;
  }

  /// The tasks of `rank` in step t, in plan order (their block slots).
  std::vector<BlockTask> tasks(size_t t, int rank) const {
    std::vector<BlockTask> out;
    for (const BlockTask &b : plan.steps[t])
      if (b.rank == rank && rows(b.queryChunk) > 0 && rows(b.keyChunk) > 0)
        out.push_back(b);
    return out;
  }
  int taskSlot(size_t t, int rank, int64_t qc, int64_t kc) const {
    std::vector<BlockTask> ts = tasks(t, rank);
    for (size_t i = 0; i < ts.size(); ++i)
      if (ts[i].queryChunk == qc && ts[i].keyChunk == kc)
        return static_cast<int>(i);
    throw RuntimeError("sequence parallelism: no block (" + std::to_string(qc) + ", " +
                       std::to_string(kc) + ") on rank " + std::to_string(rank));
  }

  /// Drops transfers of empty chunks (nothing to move, nothing computed).
  std::vector<Transfer> live(const std::vector<Transfer> &list) const {
    std::vector<Transfer> out;
    for (const Transfer &t : list) {
      bool fetch = t.what == Payload::KeyValue || t.what == Payload::Query;
      if (fetch ? rows(t.chunk) > 0 : rows(t.queryChunk) > 0 && rows(t.keyChunk) > 0)
        out.push_back(t);
    }
    return out;
  }

  std::vector<ChunkBuffers> &slotsOf(size_t t, int r, Payload what) {
    return slots[t % 2][static_cast<int>(what)][r];
  }

  void allocate() {
    for (int64_t c = 0; c < plan.chunks; ++c)
      maxRows = std::max(maxRows, rows(c));
    const int64_t R = maxRows;
    for (int r : local) {
      for (int64_t c : plan.chunksOf(r)) {
        ChunkBuffers &b = own[{r, c}];
        const int64_t n = rows(c);
        const std::string what = "rank " + std::to_string(r) + " chunk " + std::to_string(c);
        b.q = alloc(qBytes(n), what + " q", total);
        b.k = alloc(kvBytes(n), what + " k", total);
        b.v = alloc(kvBytes(n), what + " v", total);
        b.dout = alloc(qBytes(n), what + " dout", total);
        b.out = alloc(qBytes(n), what + " out", total);
        b.lse = alloc(lseBytes(n), what + " lse", total);
        b.dqOwn = alloc(qBytes(n), what + " dq", total);
        b.dkOwn = alloc(kvBytes(n), what + " dk", total);
        b.dvOwn = alloc(kvBytes(n), what + " dv", total);
        b.dq = b.dqOwn.data();
        b.dk = b.dkOwn.data();
        b.dv = b.dvOwn.data();
        // Forward: out x 2 (q32 each); backward: dq, dk, dv sums.
        const size_t q32 = q32Bytes(n), kv32 = kv32Bytes(n);
        b.pool = alloc(std::max(2 * q32, q32 + 2 * kv32), what + " f32 sums", total);
        char *pool = static_cast<char *>(b.pool.data());
        b.outAcc[0] = pool;
        b.outAcc[1] = pool + q32;
        b.dqAcc = pool;
        b.dkAcc = pool + q32;
        b.dvAcc = pool + q32 + kv32;
        for (int i = 0; i < 2; ++i)
          b.lseAcc[i] = alloc(lseBytes(n), what + " lse sum", total);
      }
      auto most = [&](Payload p) {
        return std::max(parallel::maxReceives(fwd, p), parallel::maxReceives(bwd, p));
      };
      size_t tasksPerStep = 0;
      for (const auto &step : plan.steps)
        tasksPerStep = std::max(tasksPerStep, static_cast<size_t>(std::count_if(
                                                  step.begin(), step.end(),
                                                  [&](const BlockTask &b) { return b.rank == r; })));
      for (int half = 0; half < 2; ++half) {
        const std::string what = "rank " + std::to_string(r) + " slot";
        for (int i = 0; i < most(Payload::KeyValue); ++i) {
          ChunkBuffers &b = slots[half][static_cast<int>(Payload::KeyValue)][r].emplace_back();
          b.k = alloc(kvBytes(R), what + " k", total);
          b.v = alloc(kvBytes(R), what + " v", total);
        }
        for (int i = 0; i < most(Payload::Query); ++i) {
          ChunkBuffers &b = slots[half][static_cast<int>(Payload::Query)][r].emplace_back();
          b.q = alloc(qBytes(R), what + " q", total);
          b.dout = alloc(qBytes(R), what + " dout", total);
          b.out = alloc(qBytes(R), what + " out", total);
          b.lse = alloc(lseBytes(R), what + " lse", total);
        }
        auto outputs = [&](ChunkBuffers &b, bool query, bool keys) {
          if (query) {
            b.out = alloc(qBytes(R), what + " out / dq", total);
            b.dq = b.out.data();
            b.lse = alloc(lseBytes(R), what + " lse", total);
          }
          if (keys) {
            b.dkOwn = alloc(kvBytes(R), what + " dk", total);
            b.dvOwn = alloc(kvBytes(R), what + " dv", total);
            b.dk = b.dkOwn.data();
            b.dv = b.dvOwn.data();
          }
        };
        for (size_t i = 0; i < tasksPerStep; ++i)
          outputs(blockSlots[half][r].emplace_back(), true, true);
        for (Payload p : {Payload::Partial, Payload::GradQuery, Payload::GradKeyValue})
          for (int i = 0; i < most(p); ++i)
            outputs(slots[half][static_cast<int>(p)][r].emplace_back(),
                    p != Payload::GradKeyValue, p == Payload::GradKeyValue);
      }
    }
    std::vector<int32_t> cuHost;
    for (int64_t c = 0; c < plan.chunks; ++c) {
      const int64_t len = s.batch ? rows(c) / s.batch : 0;
      for (int64_t b = 0; b <= s.batch; ++b)
        cuHost.push_back(static_cast<int32_t>(b * len));
    }
    cuSeqlens = alloc(cuHost.size() * 4, "cu_seqlens", total);
    cuSeqlens.upload(cuHost.data(), cuHost.size() * 4);
    for (int i = 0; i < 2; ++i) {
      checkCuda(cudaEventCreateWithFlags(&fetched[i], cudaEventDisableTiming), "cudaEventCreate");
      checkCuda(cudaEventCreateWithFlags(&computed[i], cudaEventDisableTiming), "cudaEventCreate");
      checkCuda(cudaEventCreateWithFlags(&given[i], cudaEventDisableTiming), "cudaEventCreate");
    }
  }

  // --- the functions of the bundle ---------------------------------------

  std::vector<int64_t> qShape(int64_t n) const { return {n, s.heads, s.headDim}; }
  std::vector<int64_t> kvShape(int64_t n) const { return {n, s.kvHeads, s.headDim}; }
  std::vector<int64_t> cuShape() const { return {s.batch + 1}; }

  void blockForward(int64_t qc, int64_t kc, void *q, void *k, void *v, void *out, void *lse,
                    cudaStream_t st) {
    Executor::Call call;
    const int64_t nq = rows(qc), nk = rows(kc);
    if (qc == kc) {
      call.arguments = {q, k, v, cu(qc)};
      call.argumentShapes = {qShape(nq), kvShape(nk), kvShape(nk), cuShape()};
      call.results = {out, lse};
      ex.run("attention_block_diagonal", call, st);
      return;
    }
    call.arguments = {q, k, v, cu(qc), cu(kc)};
    call.argumentShapes = {qShape(nq), kvShape(nk), kvShape(nk), cuShape(), cuShape()};
    call.results = {out, lse};
    ex.run("attention_block", call, st);
  }

  void blockBackward(int64_t qc, int64_t kc, void *dout, void *q, void *k, void *v, void *out,
                     void *lse, void *dq, void *dk, void *dv, cudaStream_t st) {
    Executor::Call call;
    const int64_t nq = rows(qc), nk = rows(kc);
    call.arguments = {dout, q, k, v, out, lse, cu(qc)};
    call.argumentShapes = {qShape(nq), qShape(nq), kvShape(nk), kvShape(nk),
                           qShape(nq), {nq, s.heads},  cuShape()};
    if (qc != kc) {
      call.arguments.push_back(cu(kc));
      call.argumentShapes.push_back(cuShape());
    }
    call.results = {dq, dk, dv};
    ex.run(qc == kc ? "attention_block_grad_diagonal" : "attention_block_grad", call, st);
  }

  void merge(ChunkBuffers &own, int64_t n, void *outB, void *lseB, cudaStream_t st) {
    Executor::Call call;
    call.arguments = {own.outAcc[own.acc], own.lseAcc[own.acc].data(), outB, lseB};
    call.argumentShapes = {qShape(n), {n, s.heads}, qShape(n), {n, s.heads}};
    call.results = {own.outAcc[1 - own.acc], own.lseAcc[1 - own.acc].data()};
    ex.run("merge_attention", call, st);
    own.acc = 1 - own.acc;
  }

  void accumulate(void *acc, void *part, int64_t elements, cudaStream_t st) {
    Executor::Call call;
    call.arguments = {acc, part};
    call.argumentShapes = {{elements}, {elements}};
    call.results = {acc}; // in place: the compiler's in_place_of (checked at load)
    ex.run("accumulate", call, st);
  }

  void round(void *acc, void *out, int64_t elements, cudaStream_t st) {
    Executor::Call call;
    call.arguments = {acc};
    call.argumentShapes = {{elements}};
    call.results = {out};
    ex.run("round", call, st);
  }

  // --- the message parts -------------------------------------------------

  /// A fetched chunk's buffers on rank r in step t (its own, or a slot).
  ChunkBuffers &holder(size_t t, int r, Payload what, int64_t chunk, bool backward) {
    if (plan.ownerOf(chunk) == r)
      return own.at({r, chunk});
    const auto &list = (backward ? bwd : fwd)[t].fetch;
    int slot = parallel::receiveSlot(list, {plan.ownerOf(chunk), r, what, chunk, 0, 0});
    if (slot < 0)
      throw RuntimeError("sequence parallelism: chunk " + std::to_string(chunk) +
                         " was not fetched to rank " + std::to_string(r));
    return slotsOf(t, r, what)[static_cast<size_t>(slot)];
  }

  std::vector<Span> parts(size_t t, const Transfer &x, bool sending, bool backward) {
    const int r = sending ? x.from : x.to;
    const int64_t n = x.what == Payload::GradKeyValue ? rows(x.keyChunk) : rows(x.chunk);
    ChunkBuffers *b = nullptr;
    const bool fetch = x.what == Payload::KeyValue || x.what == Payload::Query;
    if (fetch && sending)
      b = &own.at({r, x.chunk});
    else if (sending)
      b = &blockSlots[t % 2].at(r)[static_cast<size_t>(taskSlot(t, r, x.queryChunk, x.keyChunk))];
    else
      b = &slotsOf(t, r, x.what)[static_cast<size_t>(parallel::receiveSlot(
          fetch ? (backward ? bwd : fwd)[t].fetch : (backward ? bwd : fwd)[t].give, x))];
    switch (x.what) {
    case Payload::KeyValue:
      return {{b->k.data(), kvBytes(n)}, {b->v.data(), kvBytes(n)}};
    case Payload::Query:
      if (!backward)
        return {{b->q.data(), qBytes(n)}};
      return {{b->q.data(), qBytes(n)},
              {b->out.data(), qBytes(n)},
              {b->dout.data(), qBytes(n)},
              {b->lse.data(), lseBytes(n)}};
    case Payload::Partial:
      return {{b->out.data(), qBytes(n)}, {b->lse.data(), lseBytes(n)}};
    case Payload::GradQuery:
      return {{b->dq, qBytes(n)}};
    case Payload::GradKeyValue:
      return {{b->dk, kvBytes(n)}, {b->dv, kvBytes(n)}};
    }
    return {};
  }

  void exchange(size_t t, const std::vector<Transfer> &list, bool backward, cudaStream_t st) {
    transport.exchange(
        live(list),
        [&](const Transfer &x, bool sending) { return parts(t, x, sending, backward); }, st);
  }

  // --- one step's blocks and what they were given --------------------------

  void compute(size_t t, bool backward, cudaStream_t st) {
    for (int r : local) {
      std::vector<BlockTask> ts = tasks(t, r);
      for (size_t i = 0; i < ts.size(); ++i) {
        const BlockTask &b = ts[i];
        ChunkBuffers &qb = holder(t, r, Payload::Query, b.queryChunk, backward);
        ChunkBuffers &kb = holder(t, r, Payload::KeyValue, b.keyChunk, backward);
        ChunkBuffers &o = blockSlots[t % 2].at(r)[i];
        const bool ownQ = plan.ownerOf(b.queryChunk) == r, ownK = plan.ownerOf(b.keyChunk) == r;
        if (!backward) {
          blockForward(b.queryChunk, b.keyChunk, qb.q.data(), kb.k.data(), kb.v.data(),
                       o.out.data(), o.lse.data(), st);
          if (ownQ)
            merge(own.at({r, b.queryChunk}), rows(b.queryChunk), o.out.data(), o.lse.data(), st);
          continue;
        }
        blockBackward(b.queryChunk, b.keyChunk, qb.dout.data(), qb.q.data(), kb.k.data(),
                      kb.v.data(), qb.out.data(), qb.lse.data(), o.dq, o.dk, o.dv, st);
        if (ownQ)
          accumulate(own.at({r, b.queryChunk}).dqAcc, o.dq, rows(b.queryChunk) * s.heads * s.headDim,
                     st);
        if (ownK) {
          ChunkBuffers &k = own.at({r, b.keyChunk});
          const int64_t n = rows(b.keyChunk) * s.kvHeads * s.headDim;
          accumulate(k.dkAcc, o.dk, n, st);
          accumulate(k.dvAcc, o.dv, n, st);
        }
      }
    }
  }

  void absorb(size_t t, bool backward, cudaStream_t st) {
    const std::vector<Transfer> &all = (backward ? bwd : fwd)[t].give;
    for (const Transfer &x : live(all)) {
      if (std::find(local.begin(), local.end(), x.to) == local.end())
        continue;
      // Slots are numbered over the whole list, as parts() numbers them.
      ChunkBuffers &g = slotsOf(t, x.to, x.what)[static_cast<size_t>(parallel::receiveSlot(all, x))];
      ChunkBuffers &o = own.at({x.to, x.chunk});
      const int64_t n = rows(x.chunk);
      switch (x.what) {
      case Payload::Partial:
        merge(o, n, g.out.data(), g.lse.data(), st);
        break;
      case Payload::GradQuery:
        accumulate(o.dqAcc, g.dq, n * s.heads * s.headDim, st);
        break;
      case Payload::GradKeyValue:
        accumulate(o.dkAcc, g.dk, n * s.kvHeads * s.headDim, st);
        accumulate(o.dvAcc, g.dv, n * s.kvHeads * s.headDim, st);
        break;
      default:
        break;
      }
    }
  }

  void start(bool backward, cudaStream_t st) {
    for (auto &[key, b] : own) {
      const int64_t n = rows(key.second);
      if (!backward) {
        b.acc = 0;
        checkCuda(cudaMemsetAsync(b.outAcc[0], 0, q32Bytes(n), st), "cudaMemsetAsync");
        // -inf: a row that has seen no key yet.
        if (CUresult e = cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(b.lseAcc[0].data()),
                                          0xFF800000u, static_cast<size_t>(n * s.heads), st);
            e != CUDA_SUCCESS)
          throw RuntimeError("cuMemsetD32Async (lse = -inf) failed");
      } else {
        checkCuda(cudaMemsetAsync(b.dqAcc, 0, q32Bytes(n), st), "cudaMemsetAsync");
        checkCuda(cudaMemsetAsync(b.dkAcc, 0, kv32Bytes(n), st), "cudaMemsetAsync");
        checkCuda(cudaMemsetAsync(b.dvAcc, 0, kv32Bytes(n), st), "cudaMemsetAsync");
      }
    }
  }

  void finish(bool backward, cudaStream_t st) {
    for (auto &[key, b] : own) {
      const int64_t n = rows(key.second);
      if (n == 0)
        continue;
      if (!backward) {
        round(b.outAcc[b.acc], b.out.data(), n * s.heads * s.headDim, st);
        checkCuda(cudaMemcpyAsync(b.lse.data(), b.lseAcc[b.acc].data(), lseBytes(n),
                              cudaMemcpyDeviceToDevice, st),
              "cudaMemcpyAsync (lse)");
        continue;
      }
      round(b.dqAcc, b.dq, n * s.heads * s.headDim, st);
      round(b.dkAcc, b.dk, n * s.kvHeads * s.headDim, st);
      round(b.dvAcc, b.dv, n * s.kvHeads * s.headDim, st);
    }
  }

  void run(bool backward, cudaStream_t compute, cudaStream_t comm) {
    const auto &steps = backward ? bwd : fwd;
    const size_t T = steps.size();
    start(backward, compute);
    if (!transport.overlaps() || !comm) {
      for (size_t t = 0; t < T; ++t) {
        exchange(t, steps[t].fetch, backward, compute);
        this->compute(t, backward, compute);
        exchange(t, steps[t].give, backward, compute);
        absorb(t, backward, compute);
      }
      finish(backward, compute);
      return;
    }
    // The communication stream may fetch only after the inputs are set
    // (backward: after the forward's results) on the compute stream.
    checkCuda(cudaEventRecord(computed[1], compute), "cudaEventRecord");
    checkCuda(cudaStreamWaitEvent(comm, computed[1]), "cudaStreamWaitEvent");
    exchange(0, steps[0].fetch, backward, comm);
    checkCuda(cudaEventRecord(fetched[0], comm), "cudaEventRecord");
    for (size_t t = 0; t < T; ++t) {
      if (t + 1 < T) {
        // Slots of parity t + 1 were read by step t - 1's blocks, done
        // before computed[(t - 1) % 2] (recorded just below, last round).
        exchange(t + 1, steps[t + 1].fetch, backward, comm);
        checkCuda(cudaEventRecord(fetched[(t + 1) % 2], comm), "cudaEventRecord");
      }
      checkCuda(cudaStreamWaitEvent(compute, fetched[t % 2]), "cudaStreamWaitEvent");
      this->compute(t, backward, compute);
      checkCuda(cudaEventRecord(computed[t % 2], compute), "cudaEventRecord");
      if (t > 0) {
        checkCuda(cudaStreamWaitEvent(compute, given[(t - 1) % 2]), "cudaStreamWaitEvent");
        absorb(t - 1, backward, compute);
      }
      checkCuda(cudaStreamWaitEvent(comm, computed[t % 2]), "cudaStreamWaitEvent");
      exchange(t, steps[t].give, backward, comm);
      checkCuda(cudaEventRecord(given[t % 2], comm), "cudaEventRecord");
    }
    checkCuda(cudaStreamWaitEvent(compute, given[(T - 1) % 2]), "cudaStreamWaitEvent");
    absorb(T - 1, backward, compute);
    finish(backward, compute);
  }
};

Runner::Runner(Executor &executor, parallel::SchedulePlan plan, Shape shape,
               std::vector<int> localRanks, Transport &transport)
    : impl(std::make_unique<Impl>(executor, std::move(plan), shape, std::move(localRanks),
                                  transport)) {
  Impl &m = *impl;
  m.eb = runtime::dtypeBytes(shape.dtype);
  if (m.plan.tokens != shape.seq)
    throw std::invalid_argument("the plan splits " + std::to_string(m.plan.tokens) +
                                " tokens, the shape has sequences of " +
                                std::to_string(shape.seq));
  auto want = [&](const std::string &fn, size_t arg, const std::vector<int64_t> &inner,
                  runtime::DType dtype) {
    const runtime::Function &f = executor.function(fn);
    if (arg >= f.arguments.size())
      throw RuntimeError("the bundle's @" + fn + " has no argument " + std::to_string(arg));
    const runtime::TensorSpec &a = f.arguments[arg];
    std::vector<int64_t> have(a.maxShape.begin() + 1, a.maxShape.end());
    if (have != inner || a.dtype != dtype)
      throw std::invalid_argument("the bundle's @" + fn + " argument " + a.name +
                         " does not take this shape or dtype (compiled for another model: "
                         "heads, kv_heads, head dim or dtype differ)");
  };
  want("attention_block", 0, {shape.heads, shape.headDim}, shape.dtype);
  want("attention_block", 1, {shape.kvHeads, shape.headDim}, shape.dtype);
  const runtime::Function &acc = executor.function("accumulate");
  if (acc.results.size() != 1 || acc.results[0].inPlaceOf != 0)
    throw std::invalid_argument("the bundle's @accumulate is not written in place (recompile it with this "
                       "ls2c: --program=sequence-parallel)");
  const int64_t bound = executor.function("attention_block").arguments[0].maxShape[0];
  m.fwd = parallel::planTransfers(m.plan, false);
  m.bwd = parallel::planTransfers(m.plan, true);
  // A full-sequence reference call needs batch x seq rows; the blocks need a
  // chunk's.
  if (shape.batch * m.plan.chunkLen > bound)
    throw std::invalid_argument("a chunk of " + std::to_string(shape.batch * m.plan.chunkLen) +
                       " tokens exceeds the bundle's bound of " + std::to_string(bound) +
                       " (max_batch_tokens): compile a model with a larger bound");
  m.allocate();
}

Runner::~Runner() {
  for (int i = 0; i < 2; ++i) {
    if (impl->fetched[i])
      cudaEventDestroy(impl->fetched[i]);
    if (impl->computed[i])
      cudaEventDestroy(impl->computed[i]);
    if (impl->given[i])
      cudaEventDestroy(impl->given[i]);
  }
}

int64_t Runner::chunkRows(int64_t c) const { return impl->rows(c); }

void *Runner::tensor(int rank, int64_t chunk, Tensor t) const {
  ChunkBuffers &b = impl->own.at({rank, chunk});
  switch (t) {
  case Tensor::Q:
    return b.q.data();
  case Tensor::K:
    return b.k.data();
  case Tensor::V:
    return b.v.data();
  case Tensor::DOut:
    return b.dout.data();
  case Tensor::Out:
    return b.out.data();
  case Tensor::Lse:
    return b.lse.data();
  case Tensor::DQ:
    return b.dq;
  case Tensor::DK:
    return b.dk;
  case Tensor::DV:
    return b.dv;
  }
  return nullptr;
}

void Runner::forward(cudaStream_t compute, cudaStream_t comm) { impl->run(false, compute, comm); }
void Runner::backward(cudaStream_t compute, cudaStream_t comm) { impl->run(true, compute, comm); }
size_t Runner::allocatedBytes() const { return impl->total; }

} // namespace ls2c::seqpar
