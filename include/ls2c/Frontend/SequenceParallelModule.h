//===- SequenceParallelModule.h - the program of sequence-parallel attention ===//
//
// Issue 10: the pieces a rank runs in sequence-parallel attention (DistAttn
// and the zigzag ring, ls2c/Parallel/SequenceParallel.h), compiled from a
// model description's self-attention (heads, kv_heads, head dim, compute
// dtype E; causal for decoders, bidirectional otherwise: an encoder-decoder
// gets its encoder's self-attention, a ViT its encoder's). Token dims are
// dynamic, bounded by max_batch_tokens; cu_seqlens are i32 [batch + 1].
//
//   @attention_block_diagonal(q [Tq,H,D], k, v [Tq,Hkv,D], cu_seqlens)
//       -> (out [Tq,H,D] E, lse [Tq,H] f32)
//     a diagonal block: a chunk's queries against its own keys (causal for
//     decoders);
//   @attention_block(q [Tq,H,D], k, v [Tk,Hkv,D], cu_seqlens_q, cu_seqlens_k)
//       -> (out, lse)
//     every other visible block (no mask; Tk may differ from Tq);
//   @attention_block_grad_diagonal / @attention_block_grad(dout, q, k, v, out,
//       lse, cu_seqlens[_q, cu_seqlens_k]) -> (dq, dk, dv)
//     a block's gradients from the MERGED out and lse of its query rows
//     (so P_ij = exp(s_ij - lse_i) and D_i = dout_i . out_i are the whole
//     row's: the block's dq, dk, dv are its exact share);
//   @merge_attention(out_acc [T,H,D] f32, lse_acc [T,H] f32, out_b [T,H,D] E,
//       lse_b [T,H] f32) -> (out_acc, lse_acc)
//     the overflow-safe merge of a partial result (LightSeq, Li et al. 2023,
//     section 3.2):  out <- out - sigmoid(lse_b - lse) (out - out_b),
//     lse <- lse - logsigmoid(lse - lse_b); a partial whose lse is -inf
//     (rows that saw no key) changes nothing; out_acc starts at 0 and
//     lse_acc at -inf;
//   @accumulate(acc [N] f32, part [N] E) -> acc + part  (written in place:
//     the result's in_place_of is the argument's)
//   @round(acc [N] f32) -> [N] E   (identity copy when E is f32)
//
// (named in ls2c/Parallel/SequenceParallelFunctions.h). Every function's
// arguments are "input"s and results "output"s; the module
// carries ls2.differentiated (no autodiff or train step to derive).
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_FRONTEND_SEQUENCEPARALLELMODULE_H
#define LS2C_FRONTEND_SEQUENCEPARALLELMODULE_H

#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Parallel/SequenceParallelFunctions.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

namespace ls2c {

/// The module above for `desc` (validated). Null, with MLIR diagnostics,
/// only on an ls2c bug (the text it generates does not parse or verify).
mlir::OwningOpRef<mlir::ModuleOp> buildSequenceParallelModule(mlir::MLIRContext &context,
                                                              const ModelDescription &desc);

} // namespace ls2c

#endif // LS2C_FRONTEND_SEQUENCEPARALLELMODULE_H
