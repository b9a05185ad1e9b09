//===- CudnnAttention.h - Attention steps through cuDNN --------*- C++ -*-===//
//
// Runs a Program's Attention steps (Program.h) with cuDNN's fused
// scaled-dot-product attention (FlashAttention-2, Dao 2023, as cuDNN 9's
// composite graph implements it; runtime/lib/Execution/CudnnAttentionGraph.h), forward
// with the softmax statistics and backward from them. The Executor uses it
// when asked to (Executor::setAttentionBackend); a step cuDNN refuses runs
// its fallback, the generated kernels that follow it.
//
// One plan per distinct call (dtype, heads, head dim, causal, dropout,
// strides, batch B and the sequence bound), built on the host the first
// time a run needs it. Before each call a small kernel turns cu_seqlens
// into what cuDNN reads: per-sequence lengths and per-tensor element
// offsets (cu[b] * row stride), and, with dropout, the call's Philox seed
// and offset (the step's seed mixed with its dropout stream, so sites
// differ; the offset shifted so steps differ). cuDNN's dropout masks are
// its own: they differ from the generated kernels' and the CPU reference's,
// so a call with dropout must run forward and backward on the same backend.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_CUDNNATTENTION_H
#define LS2C_RUNTIME_CUDNNATTENTION_H

#include "ls2c/Runtime/AttentionChoice.h"
#include "ls2c/Runtime/Program.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

namespace ls2c::runtime {

/// True when this runtime was built with cuDNN (LS2C_HAVE_CUDNN).
bool cudnnAttentionAvailable();

/// The sizes of one call, from the run's argument shapes.
struct AttentionCallShape {
  int64_t batch = 0;   ///< B sequences (cu_seqlens has B + 1 entries)
  int64_t tokensQ = 0; ///< T_q, T_k: packed rows
  int64_t tokensK = 0;
};

/// Device pointers of one call (the step's buffers, resolved).
struct AttentionCallPointers {
  void *q = nullptr, *k = nullptr, *v = nullptr, *out = nullptr, *lse = nullptr;
  const void *cuSeqlensQ = nullptr, *cuSeqlensK = nullptr;
  const void *seed = nullptr, *offset = nullptr; ///< i64 scalars (dropout)
  void *dout = nullptr, *dq = nullptr, *dk = nullptr, *dv = nullptr; ///< backward
};

class CudnnAttention {
public:
  /// Creates the cuDNN handle and compiles the small cu_seqlens kernel
  /// (NVRTC, for the current device). Throws RuntimeError when cuDNN is
  /// missing from this build or cannot start.
  CudnnAttention();
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention &) = delete;
  CudnnAttention &operator=(const CudnnAttention &) = delete;

  /// Builds (once) the plan of step `a` at `shape`, on the host. False,
  /// with cuDNN's reason in `whyNot`, when cuDNN refuses it (then the
  /// caller runs the fallback); a call with no tokens needs no plan.
  bool prepare(const Attention &a, const AttentionCallShape &shape, std::string &whyNot);

  /// Device bytes the prepared plans need (workspace and the per-call
  /// arrays); they only grow.
  uint64_t deviceBytesNeeded() const;
  /// Grows the device buffers to deviceBytesNeeded(), freeing the old ones:
  /// never while a CUDA graph that used them may still run (the Executor
  /// calls it only in runs it enqueues step by step, after destroying its
  /// graphs when the need grew). Throws RuntimeError when out of memory.
  void reserve();

  /// The device and library a timing holds for: the GPU's name, its
  /// architecture and cuDNN's version (AttentionChoice.h's keys).
  std::string deviceKey() const;
  /// Where the runtime keeps its attention choices: $LS2C_ATTENTION_CHOICES
  /// if set ("off": nowhere, every process times again), else
  /// attention-choices.json in the program cache's directory
  /// ($LS2C_CACHE_DIR, else the XDG cache); "" when there is none. A choice
  /// holds for every batch of its shape: delete the file (or set "off") to
  /// time again, e.g. after a run on much smaller batches.
  static std::string choicesPath();

  /// Enqueues the prepared call on `stream` (capturable: no allocation or
  /// host synchronization). Throws RuntimeError when it was not prepared or
  /// cuDNN fails.
  void run(const Attention &a, const AttentionCallShape &shape, const AttentionCallPointers &p,
           cudaStream_t stream);

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace ls2c::runtime

#endif // LS2C_RUNTIME_CUDNNATTENTION_H
