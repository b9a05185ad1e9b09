//===- Decoding.h - description -> incremental decoding functions ---------===//
//
// Generation (greedy and beam search, include/ls2c/Generation) runs the
// model one step at a time over a KV cache: each step feeds the new tokens
// of every hypothesis and reads the keys and values of the earlier ones
// from the cache instead of recomputing them. The module holds, with every
// parameter first (ParameterLayout order, compute dtype) and dropout off:
//
//   decoder (GPT-2):
//     @decode(params..., input_ids [T], position_ids [T], cu_seqlens [B+1],
//             cache_starts [B+1], cache_lengths [B],
//             past.{i}.key, past.{i}.value [C, kv_heads, head_dim] per layer)
//       -> (logits [T, vocab], present.{i}.key, present.{i}.value
//           [T, kv_heads, head_dim] per layer)
//   encoder_decoder (fairseq Transformer):
//     @encode(params..., src_ids [S], src_position_ids [S], src_cu_seqlens [N+1])
//       -> (memory.{i}.key, memory.{i}.value [S, kv_heads, head_dim] per
//           decoder layer: the cross attention's projected encoder output)
//     @decode(params..., tgt_ids, tgt_position_ids, tgt_cu_seqlens,
//             cache_starts, cache_lengths, past.{i}.key/value...,
//             memory_starts [B+1], memory_lengths [B],
//             memory.{i}.key/value...)
//       -> (logits [T, vocab], present.{i}.key/value...)
//
// All ids, offsets and lengths are i32. The T new tokens are packed per
// hypothesis (cu_seqlens; several on the first step, the prompt, then one);
// hypothesis b's cached rows are cache_lengths[b] rows of each past tensor
// from cache_starts[b] (ls2.attention's key_lengths), its memory the
// memory_lengths[b] rows from memory_starts[b] (beams share their source's
// rows). Self attention is the cached keys (none of them masked: they all
// precede) and the new tokens (causal among themselves), merged with each
// part's log-sum-exp in f32 (out = o_new - sigmoid(lse_past - lse_new) *
// (o_new - o_past), Li et al. 2023, LightSeq, section 3), so an empty cache
// (lse -inf) gives the new tokens' attention alone. The caller appends the
// present keys and values to its cache after the step.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_FRONTEND_DECODING_H
#define LS2C_FRONTEND_DECODING_H

#include "ls2c/Model/ModelDescription.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

namespace ls2c {

/// True for the architectures that generate text (decoder, encoder_decoder).
bool canGenerate(const ModelDescription &desc);

/// The decoding module of `desc` (above). The result verifies; a failure to
/// verify is a bug in ls2c, reported as mlir diagnostics plus a null
/// result. `desc` must be a decoder or encoder_decoder (canGenerate); other
/// architectures also give a null result with an error diagnostic.
mlir::OwningOpRef<mlir::ModuleOp> buildDecodingModule(mlir::MLIRContext &context,
                                                      const ModelDescription &desc);

} // namespace ls2c

#endif // LS2C_FRONTEND_DECODING_H
