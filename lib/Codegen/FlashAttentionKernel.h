//===- FlashAttentionKernel.h - tensor-core attention kernels --------------===//
//
// FlashAttention-2 style kernels (Dao, "FlashAttention-2: Faster Attention
// with Better Parallelism and Work Partitioning", 2023, sections 3.1-3.2)
// for ls2.attention and ls2.attention_grad on f16/bf16 with a head dim that
// is a multiple of 16 up to 128, or 256: tiles of queries and keys in shared
// memory, mma.sync m16n8k16 (wgmma on Hopper) with f32 accumulators, an online softmax in
// registers, no S x S matrix in device memory. Backward is split as the
// simple kernels are (dq per query tile, dk/dv per key tile, no atomics),
// so results are the same bits run to run. Same operands, results, Philox
// dropout layout and lse convention as the simple kernels in
// AttentionKernel.cpp, which handle every other shape.
//
//===----------------------------------------------------------------------===//

#ifndef LS2C_CODEGEN_FLASHATTENTIONKERNEL_H
#define LS2C_CODEGEN_FLASHATTENTIONKERNEL_H

#include "AttentionCommon.h"

namespace ls2c::codegen::attention {

/// Whether the tensor-core kernels take an attention of this spec: f16 or
/// bf16 with the head dim a multiple of 16 in [16, 128], or 256.
bool flashApplies(const AttentionSpec &s);

/// The forward kernel: one block of 4 warps per 128-query tile (64 at head
/// dim 256) of a sequence and query head. Binds as generateAttentionKernel's
/// kernel does.
GeneratedKernel generateFlashForward(mlir::Operation *op, const AttentionSpec &s,
                                     const std::string &kernelName);

/// The two backward kernels, "<kernelName>_dq" (per 128-query tile at head
/// dims above 64 up to 128, else per 64-query tile, and query head) and
/// "<kernelName>_dkdv" (per 128-key tile
/// and kv head with 8 warps at head dims 96 and 128, else per 64-key tile
/// with 4, and at head dim 256 per half of dk's and dv's columns; the group's
/// query heads summed in order), launched in that order. dq leaves D_i =
/// dout_i . out_i and the exponent bias of P in scratch (f32 [tokens_q,
/// heads] each after the kScratchCounterBytes counters; `maxTokensQ` bounds
/// tokens_q) and dk/dv reads them there, so no key tile recomputes them.
std::vector<GeneratedKernel> generateFlashBackward(mlir::Operation *op, const AttentionSpec &s,
                                                   const GradOperands &g, int64_t maxTokensQ,
                                                   const std::string &kernelName);

} // namespace ls2c::codegen::attention

#endif // LS2C_CODEGEN_FLASHATTENTIONKERNEL_H
