//===- KernelGenerator.h - one CUDA kernel per fusion group ---------------===//
//
// Each ls2.fusion op becomes one CUDA C++ kernel specialized to its static
// dims and dtypes (dynamic token counts are kernel parameters):
//   loop              grid-stride over the output elements, VEC elements per
//                     thread with 16-byte vector loads and stores when the
//                     pointers are aligned, a scalar tail for any size;
//   row_reduction     one row per warp (rows up to 256 elements per lane
//                     group) or per block, the row kept in registers when it
//                     fits (up to 32 elements per thread), else re-read per
//                     reduction; warp-shuffle and block reductions in f32;
//                     a group with column sums (sums over its rows) adds
//                     each row into per-thread sums and leaves per-block
//                     partials for a second kernel to add in block order;
//   column_reduction  two stages in one launch with a fixed order: each
//                     block sums a chunk of rows for a tile of columns into
//                     kernel scratch, the last block of a tile (a counter in
//                     scratch) sums the chunks in order, so results are the
//                     same bits run to run.
// Elementwise math runs in f32 for f16/bf16/f32 tensors (f64 for f64),
// rounding only where a value is stored or cast.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_CODEGEN_KERNELGENERATOR_H
#define LS2C_CODEGEN_KERNELGENERATOR_H

#include "ls2c/Analysis/ShapeBounds.h"
#include "ls2c/Analysis/SymbolicDims.h"
#include "ls2c/Runtime/Program.h"

#include "ls2/IR/LS2Dialect.h"

#include <string>
#include <vector>

namespace ls2c::codegen {

/// What binds to each kernel parameter, in order.
struct ParamBinding {
  /// RowStride: the row stride in elements of operand or result `index` (a
  /// strided view or an in-place concat piece; its row width when the rows
  /// are contiguous). A kernel that takes a tensor's row stride reads it
  /// through that stride, so the tensor's pointer may be to such a view.
  enum class Kind { Operand, Result, Size, Constant, Scratch, RowStride };
  Kind kind = Kind::Operand;
  unsigned index = 0; ///< operand or result index
  runtime::Dim size;  ///< Kind::Size: the dynamic dim passed
  int64_t value = 0;  ///< Kind::Constant: the integer passed (a Philox stream)
  bool ofResult = false; ///< Kind::RowStride: of result `index`, else operand
};

/// Every kernel's scratch is one region of the arena. Its front holds the
/// u32 counters that blocks use to find the last one of a group: they start
/// at zero (the executor clears the arena once) and every kernel leaves them
/// at zero. Data a kernel leaves behind (partial sums) goes past this fixed
/// region, never over another kernel's counters. 16,384 counters, 64 KiB.
constexpr uint64_t kScratchCounterBytes = 64 * 1024;

struct GeneratedKernel {
  runtime::Kernel kernel; ///< source, params, launch config, scratch bytes
  std::vector<ParamBinding> bindings;
};

/// Generates the kernels of `fusion`, named `kernelName` (a C identifier),
/// in launch order: one, or for a row reduction with column sums (ls2-fuse
/// puts a layer norm's dgamma and dbeta into its backward) that kernel and
/// "<kernelName>_columns", which adds the blocks' partial column sums the
/// first leaves in scratch (same parameters). `dims` and `bounds` are those
/// of the enclosing function. Fails with an error on the fusion (or the
/// body op) when the body has a form the generator does not handle;
/// nothing is generated then.
mlir::FailureOr<std::vector<GeneratedKernel>>
generateFusionKernels(ls2::FusionOp fusion, const SymbolicDims &dims,
                      const ShapeBounds &bounds, const std::string &kernelName);

/// Generates the kernels of an embedding gradient (ls2.scatter_add), in
/// launch order, without atomics and with every sum in an order fixed by
/// the ids, so results are the same bits run to run: for tables of at least
/// a tile per multiprocessor, "<kernelName>_sort" (the ids sorted per chunk
/// into scratch) and "<kernelName>" (a block per tile of rows); otherwise
/// one kernel scanning all ids per tile. Operands bind as (updates, ids,
/// result, number of ids[, scratch]), then the row count when it is dynamic
/// (tiles sized for its bound in `bounds`).
mlir::FailureOr<std::vector<GeneratedKernel>>
generateScatterAddKernels(ls2::ScatterAddOp op, const SymbolicDims &dims,
                          const ShapeBounds &bounds, const std::string &kernelName);

/// Generates the kernel of ls2.nonzero: one block scans the mask in order
/// (a block-wide prefix sum per pass of blockDim x items) and writes the
/// positions of its true elements, then the fill value to the end. Binds
/// (mask, result, mask length).
mlir::FailureOr<GeneratedKernel>
generateNonzeroKernel(ls2::NonzeroOp op, const SymbolicDims &dims,
                      const std::string &kernelName);

/// Generates the forward kernel of ls2.attention. f16/bf16 with a head dim
/// a multiple of 16 up to 128, or 256: FlashAttention-2 style tensor-core
/// tiles of 128 queries, 64 at head dim 256
/// (lib/Codegen/FlashAttentionKernel.h); otherwise one warp per
/// (packed query row, query head). Both take an online softmax over the
/// row's visible keys and regenerate dropout from Philox. Binds q, k, v, cu_seqlens_q/k, (seed, offset),
/// out, lse, the query token count, batch + 1, the row strides of q, k, v
/// and out, and (with dropout) the Philox stream.
mlir::FailureOr<GeneratedKernel>
generateAttentionKernel(ls2::AttentionOp op, const SymbolicDims &dims,
                        const std::string &kernelName);

/// Generates the two kernels of ls2.attention_grad, launched in this order:
/// "<kernelName>_dq" (D_i and dq per query row and head) and
/// "<kernelName>_dkdv" (dk and dv per key row and kv head, summed over the
/// queries and the query heads that share it in a fixed order, no atomics);
/// tensor-core tiles where the forward has them, else a warp per row.
/// Results may be strided (in-place concat pieces). The tensor-core dq
/// kernel leaves D_i in scratch for the dk/dv kernel (f32 [tokens, heads]
/// past kScratchCounterBytes, sized by the query tokens' bound in `bounds`).
mlir::FailureOr<std::vector<GeneratedKernel>>
generateAttentionGradKernels(ls2::AttentionGradOp op, const SymbolicDims &dims,
                             const ShapeBounds &bounds, const std::string &kernelName);

} // namespace ls2c::codegen

#endif // LS2C_CODEGEN_KERNELGENERATOR_H
