//===- GemmTuner.cpp - time cuBLASLt's candidate algorithms ---------------===//
#include "GemmTuner.h"

#include <algorithm>
#include <cmath>

namespace ls2c::runtime {

namespace {

struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  bool ok = false;
  Events() {
    ok = cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&stop) == cudaSuccess;
  }
  ~Events() {
    if (start)
      cudaEventDestroy(start);
    if (stop)
      cudaEventDestroy(stop);
  }
};

bool enqueue(const MatmulCall &c, const cublasLtMatmulAlgo_t &algo, size_t wsBytes,
             cudaStream_t stream) {
  const float alpha = 1.0f;
  return cublasLtMatmul(c.handle, c.op, &alpha, c.a, c.la, c.b, c.lb, &c.beta, c.c, c.lc, c.c,
                        c.lc, &algo, c.workspace, wsBytes, stream) == CUBLAS_STATUS_SUCCESS;
}

} // namespace

TuneResult tuneMatmul(const MatmulCall &call, const cublasLtMatmulHeuristicResult_t *candidates,
                      int count, cudaStream_t stream, int reps, float margin) {
  TuneResult r;
  r.ms.assign(static_cast<size_t>(std::max(count, 0)), INFINITY);
  if (count <= 1)
    return r;
  Events ev;
  if (!ev.ok) {
    (void)cudaGetLastError();
    return r;
  }
  // Two rounds over all candidates, so that a clock or cache change during
  // one candidate's runs does not decide alone.
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < count; ++i) {
      const cublasLtMatmulHeuristicResult_t &h = candidates[i];
      if (h.state != CUBLAS_STATUS_SUCCESS || h.workspaceSize > call.workspaceBytes)
        continue;
      if (round == 1 && std::isinf(r.ms[static_cast<size_t>(i)]))
        continue; // failed in the first round
      bool ok = enqueue(call, h.algo, h.workspaceSize, stream) &&
                cudaEventRecord(ev.start, stream) == cudaSuccess;
      for (int k = 0; ok && k < reps; ++k)
        ok = enqueue(call, h.algo, h.workspaceSize, stream);
      float ms = 0.0f;
      ok = ok && cudaEventRecord(ev.stop, stream) == cudaSuccess &&
           cudaEventSynchronize(ev.stop) == cudaSuccess &&
           cudaEventElapsedTime(&ms, ev.start, ev.stop) == cudaSuccess;
      if (!ok) {
        (void)cudaGetLastError();
        if (cudaStreamSynchronize(stream) != cudaSuccess) {
          // The stream is broken, not this candidate: keep the first.
          (void)cudaGetLastError();
          std::fill(r.ms.begin(), r.ms.end(), INFINITY);
          return r;
        }
        r.ms[static_cast<size_t>(i)] = INFINITY;
        continue;
      }
      float mean = ms / static_cast<float>(reps);
      float &best = r.ms[static_cast<size_t>(i)];
      best = round == 0 ? mean : std::min(best, mean);
    }
  }
  int fastest = 0;
  for (int i = 1; i < count; ++i)
    if (r.ms[static_cast<size_t>(i)] < r.ms[static_cast<size_t>(fastest)])
      fastest = i;
  if (fastest != 0 && !std::isinf(r.ms[0]) &&
      r.ms[static_cast<size_t>(fastest)] > (1.0f - margin) * r.ms[0])
    fastest = 0;
  r.chosen = std::isinf(r.ms[static_cast<size_t>(fastest)]) ? 0 : fastest;
  return r;
}

} // namespace ls2c::runtime
