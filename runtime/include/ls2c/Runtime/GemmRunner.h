//===- GemmRunner.h - a Program's GEMM steps through cuBLASLt -------------===//
//
// Runs runtime::Gemm steps (Program.h) with cuBLASLt: row-major operands,
// f32 accumulation (CUBLAS_COMPUTE_32F, no TF32, for every dtype), the bias
// epilogue (CUBLASLT_EPILOGUE_BIAS; the bias has c's dtype, cuBLASLt's rule)
// and the bias gradient of `a` (biasGrad[m] = sum_k op(a)[m, k]: BGRADA in
// the program's row-major terms, cuBLASLt's BGRADB once the operands are
// swapped for its column-major view; GemmRunner.cpp explains the mapping),
// the activation epilogues (ReLU, the tanh GELU, with a bias and an aux
// output; their gradients reading that aux, with the bias gradient of the
// result: Program.h's GemmEpilogue), batched with strides. The algorithm
// cuBLASLt's heuristic picks is cached per shape, dtypes, epilogue and
// operand alignment; the workspace is the caller's (a slice of the arena). No MLIR; needs the CUDA runtime and
// cuBLASLt. A runner is not thread-safe.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_GEMMRUNNER_H
#define LS2C_RUNTIME_GEMMRUNNER_H

#include "ls2c/Runtime/Program.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>

namespace ls2c::runtime {

/// A cuBLASLt failure: the call, its status and the GEMM's shape.
class GemmError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Device pointers of one GEMM step's operands (null when unused).
struct GemmPointers {
  const void *a = nullptr, *b = nullptr, *bias = nullptr;
  void *c = nullptr, *biasGrad = nullptr;
  /// The activation epilogues' aux matrix: written by Relu/Gelu *Aux*, read
  /// by DRelu/DGelu.
  void *aux = nullptr;
};

/// The sizes of one call: m, n, k and batch with dynamic dims resolved.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0, batch = 1;
};

class GemmRunner {
public:
  /// `workspace` (device memory of `workspaceBytes`, 256-byte aligned)
  /// lives as long as the runner. `staging` (optional, `stagingBytes`,
  /// 256-byte aligned, also the caller's) holds 16-byte-aligned copies of
  /// operands whose row pitch is not (see stagesRows).
  GemmRunner(void *workspace, size_t workspaceBytes, void *staging = nullptr,
             size_t stagingBytes = 0);
  ~GemmRunner();
  GemmRunner(const GemmRunner &) = delete;
  GemmRunner &operator=(const GemmRunner &) = delete;

  /// Enqueues C = op(A) op(B) with its epilogue on `stream`. A shape with m,
  /// n or batch 0 does nothing; k 0 gives the epilogue of a zero product
  /// (zeros, the bias broadcast, its activation and aux, zero bias
  /// gradients). The bias-gradient and activation epilogues need batch 1.
  /// Throws GemmError (the call, cuBLASLt's status and the shape).
  ///
  /// A single GEMM whose rows are all aligned but whose n, or m of a
  /// transposed a, or k of an a that is not transposed, is not a multiple
  /// of 8 (4 when a, b and c are f32: 16 bytes) runs as an aligned main
  /// part and its tail (logits with rows padded to 16 bytes, PaddedRows.h;
  /// an H200 ran 512 x 50,257 x 1,024 bf16 logits at 95 TFLOP/s, the n =
  /// 50,264 GEMM at 654): columns of c (the bias gradient written by the
  /// main part only), rows of c and of the bias gradient, or k's last terms
  /// (first, the main part adding them with beta 1; no epilogue). Only for
  /// no epilogue, the bias and the bias gradient; main parts under 256 are
  /// not split.
  void run(const Gemm &gemm, const GemmShape &shape, const GemmPointers &p,
           cudaStream_t stream);

  /// Autotuning (on by default; LS2C_GEMM_TUNE=0 in the environment when
  /// the runner is made turns it off): a shape's first run times cuBLASLt's
  /// first 8 candidate algorithms on its own operands and keeps the fastest
  /// (GemmTuner.h); the heuristic's first stays unless another is 2%
  /// faster. Decisions hold for m, n and k rounded up to a power of two,
  /// and name the algorithm itself: a size whose candidates lack it takes
  /// the heuristic's first. Decisions persist (GemmChoice.h) in
  /// $LS2C_GEMM_CHOICES, else gemm-choices.json in the program cache
  /// directory ("off": kept in memory only), so later processes run the
  /// same algorithms, bit for bit, without timing. A run that cannot be timed and has no decision (a
  /// capturing stream, beta 1, C overlapping an operand) takes the
  /// heuristic's first, as every run does with autotuning off. Plans made
  /// before a change keep their algorithm.
  void setAutotune(bool on);
  bool autotune() const;
  /// Whether a new shape would still be timed: autotuning on and fewer than
  /// 64 shapes timed by this runner (decisions are per power-of-two bucket
  /// of m, n and k, so a run of many token counts times a GEMM once per
  /// bucket; past the cap new buckets take the heuristic's first).
  bool tuningOpen() const;

  /// Bytes of workspace a runner should get (cuBLASLt's recommendation for
  /// Hopper: 32 MiB).
  static constexpr size_t kRecommendedWorkspaceBytes = 32u << 20;

  /// True when `gemm` is one the runner stages: an operand whose row pitch
  /// (in bytes) is not a multiple of 16, as the logits [tokens, vocab] of an
  /// odd vocabulary (30,522, 50,257) have, on one matrix: a transposed a
  /// (the weight gradient dW = dlogitsᵀ h, with or without the bias
  /// gradient), c (the logits, with or without a bias), or an a that is
  /// not transposed (the dgrad dh = dlogits W, no epilogue). cuBLASLt's
  /// tensor-core kernels need 16-byte aligned rows; without them it falls
  /// back to kernels 3-7x slower on an H200. With staging memory the runner
  /// copies blocks of that operand's columns into rows padded to 16 bytes
  /// (cudaMemcpy2DAsync), runs the GEMM on each block and copies a staged c
  /// back; the dgrad's blocks are slices of k whose products add up in an
  /// f32 accumulator in the staging memory (cuBLASLt's beta = 1), rounded
  /// once into c by a small NVRTC kernel the runner compiles when it gets
  /// staging memory.
  static bool stagesRows(const Gemm &gemm);
  /// Bytes of staging a runner should get when some GEMM stagesRows: blocks
  /// of 128 MiB keep every block large (e.g. 1,280 rows of 50,264 bf16
  /// logits).
  static constexpr size_t kRecommendedStagingBytes = 128u << 20;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace ls2c::runtime

#endif // LS2C_RUNTIME_GEMMRUNNER_H
