//===- CudnnAttentionGraph.h - cuDNN fused attention plans -----*- C++ -*-===//
//
// One attention call (forward with softmax statistics, or backward from
// them) as a cuDNN 9 backend operation graph over packed variable-length
// sequences, finalized into an execution plan. Internal to the runtime
// (built only with cuDNN, LS2C_HAVE_CUDNN); the Executor's Attention steps
// use it through CudnnAttention.h.
//
// Layout (the ls2 dialect's, docs/dialect.md, `ls2.attention`): B sequences
// packed without padding, sequence b's tokens at rows cu[b] .. cu[b+1]-1.
// Q, O, dO, dQ are [T_q, heads, headDim] and K, V, dK, dV [T_k, kvHeads,
// headDim] in the compute dtype, element (t, h, d) at t * stride + h *
// headDim + d (stride >= heads * headDim: a view of a fused QKV projection
// has 3 * heads * headDim). The softmax statistics (log-sum-exp of each
// query row's scaled scores) are f32 [T_q, heads], element (t, h) at t *
// heads + h. cuDNN sees each as [B, H, S, D] with strides [-, headDim,
// stride, 1] and a ragged-offset tensor (element offsets, cu[b] * stride,
// B + 1 of them), S the bound of one sequence's length; the per-sequence
// lengths go in as seq_len tensors. The caller fills those device arrays
// (AttentionDeviceArrays) from cu_seqlens before executing.
//
// The graphs are FlashAttention-2 (Dao, 2023) as cuDNN implements it:
// scores Q K^T * scale, padding mask from the sequence lengths, optional
// causal mask (queries see keys at or before their own position; for self
// attention with equal lengths top-left and bottom-right alignment agree),
// softmax with statistics, optional inverted dropout from cuDNN's Philox
// generator (seed and offset as device i64 scalars), then P V. Backward
// rebuilds P from the statistics and never re-runs the forward.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_CUDNNATTENTIONGRAPH_H
#define LS2C_RUNTIME_CUDNNATTENTIONGRAPH_H

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>

namespace ls2c::runtime::cudnn {

/// What a plan is specialized to; all static once built.
struct AttentionGraphDesc {
  bool backward = false;
  bool bf16 = false;            ///< else fp16 (cuDNN has no f32 fused path)
  int64_t batch = 0;            ///< B sequences
  int64_t heads = 0, kvHeads = 0, headDim = 0; ///< kvHeads divides heads
  int64_t maxSeqQ = 0, maxSeqK = 0; ///< bound of one sequence's length (S)
  bool causal = false;
  float scale = 0;              ///< softmax scale (1/sqrt(headDim) usually)
  float dropoutRate = 0;        ///< 0: no dropout; else in (0, 1)
  /// Row strides in elements (forward uses q, k, v, o; backward all).
  int64_t strideQ = 0, strideK = 0, strideV = 0, strideO = 0;
  int64_t strideDO = 0, strideDQ = 0, strideDK = 0, strideDV = 0;
  /// Statistics packed like the tokens ([T_q, heads] through offsetStats,
  /// cuDNN >= 9.6), else padded: f32 [B, heads, S_q] with no ragged offset
  /// (the only other layout cuDNN < 9.26 accepts; a fallback to try on GPUs
  /// where the packed one finds no engine).
  bool raggedStats = true;
};

/// Why cuDNN cannot be asked for `desc` (heads not a multiple of kvHeads,
/// headDim not a multiple of 8 or above 256, a dropout rate outside [0, 1),
/// a row stride below its tensor's width, ...), or empty when it can be.
/// Needs no GPU and no cuDNN call; build() checks it first.
std::string attentionDescProblem(const AttentionGraphDesc &desc);

/// Device pointers of one execution. The i32 arrays are the caller's:
/// seqLenQ/K [B] (tokens of each sequence) and each ragged offset array
/// [B + 1] (cu[b] * that tensor's row stride; statistics: cu_q[b] * heads).
struct AttentionDeviceArrays {
  void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  float *stats = nullptr;
  void *dO = nullptr, *dQ = nullptr, *dK = nullptr, *dV = nullptr;
  int32_t *seqLenQ = nullptr, *seqLenK = nullptr;
  int32_t *offsetQ = nullptr, *offsetK = nullptr, *offsetV = nullptr, *offsetO = nullptr,
          *offsetStats = nullptr;
  int32_t *offsetDO = nullptr, *offsetDQ = nullptr, *offsetDK = nullptr, *offsetDV = nullptr;
  /// Dropout only: cuDNN's Philox seed and offset, i64 [1] each.
  int64_t *dropoutSeed = nullptr, *dropoutOffset = nullptr;
};

/// A finalized execution plan for one AttentionGraphDesc.
class AttentionPlan {
public:
  /// Builds the operation graph and finalizes the first engine
  /// configuration cuDNN's heuristics (mode A, then the fallback list)
  /// offer. Returns null and sets `whyNot` (cuDNN's status name and its
  /// last error text, naming the stage that refused) when cuDNN has no
  /// engine for it; never throws for a refusal.
  static std::unique_ptr<AttentionPlan> build(cudnnHandle_t handle, const AttentionGraphDesc &desc,
                                              std::string &whyNot);
  ~AttentionPlan();
  AttentionPlan(const AttentionPlan &) = delete;
  AttentionPlan &operator=(const AttentionPlan &) = delete;

  const AttentionGraphDesc &desc() const { return d; }
  /// Device workspace bytes execute() needs: the plan's own, and in
  /// backward the f32 scratch tensors of the graph (row sums of dO * O,
  /// [B, heads, S_q]; the dQ accumulator, [B, heads, S_q, headDim]).
  int64_t workspaceBytes() const { return workspace; }
  /// Enqueues the plan on the handle's stream (cudnnSetStream), in backward
  /// after zeroing the dQ accumulator there. Returns CUDNN_STATUS_SUCCESS or
  /// cuDNN's status (text through cudnnGetErrorString and
  /// cudnnGetLastErrorString); CUDNN_STATUS_EXECUTION_FAILED_CUDART when the
  /// zeroing failed to enqueue.
  cudnnStatus_t execute(cudnnHandle_t handle, const AttentionDeviceArrays &arrays,
                        void *workspacePointer) const;

private:
  AttentionPlan() = default;
  AttentionGraphDesc d;
  int64_t workspace = 0;
  cudnnBackendDescriptor_t plan = nullptr;
  /// Every descriptor the plan's graph was built from, destroyed with it.
  struct Descriptors;
  std::unique_ptr<Descriptors> owned;
};

} // namespace ls2c::runtime::cudnn

#endif // LS2C_RUNTIME_CUDNNATTENTIONGRAPH_H
