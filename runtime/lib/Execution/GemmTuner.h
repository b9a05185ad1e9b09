//===- GemmTuner.h - time cuBLASLt's candidate algorithms ------*- C++ -*-===//
//
// cuBLASLt's heuristic ranks algorithms by a model, not by a clock: on an
// H200 its first choice for some training shapes runs at 590 TFLOP/s where
// another candidate for the same shape reaches 750 (bench/RESULTS.md,
// "GEMM autotuning"). The tuner runs each candidate on the call's own
// operands and keeps the fastest, as cuBLAS's own benchmarks and PyTorch's
// `torch.backends.cuda.matmul` tunable ops do.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_LIB_GEMMTUNER_H
#define LS2C_RUNTIME_LIB_GEMMTUNER_H

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>
#include <vector>

namespace ls2c::runtime {

/// One cuBLASLt matmul, D = C = alpha op(A) op(B) + beta C, with its
/// descriptors and device pointers (cuBLASLt's operand names).
struct MatmulCall {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  const void *a = nullptr, *b = nullptr;
  void *c = nullptr;
  float beta = 0.0f;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
};

/// What the tuner measured: per candidate the mean milliseconds of one
/// matmul (infinity when it failed or needs more workspace than the call
/// has), and the index it chose.
struct TuneResult {
  std::vector<float> ms;
  int chosen = 0;
};

/// Times candidates[0 .. count) on `stream` (not capturing: it waits for
/// its events) and returns the fastest. The heuristic's first stays unless
/// another is at least `margin` (a fraction) faster, so that timing noise
/// does not swap between near-equal algorithms from run to run. Each
/// candidate runs once to warm up, then `reps` times between two events, in
/// two rounds; its time is the lower round's mean. The call overwrites C:
/// only for beta 0 and a C that no operand reads (GemmRunner checks).
/// Throws nothing: a CUDA error while timing ends the timing with the
/// heuristic's first (the error is cleared).
TuneResult tuneMatmul(const MatmulCall &call,
                      const cublasLtMatmulHeuristicResult_t *candidates,
                      int count, cudaStream_t stream, int reps = 4,
                      float margin = 0.02f);

} // namespace ls2c::runtime

#endif // LS2C_RUNTIME_LIB_GEMMTUNER_H
