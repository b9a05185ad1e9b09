//===- FlashAttentionParts.h - what the tensor-core attention kernels share -===//
//
// Internal to lib/Codegen: the device helpers (mma.sync, ldmatrix, wgmma,
// cp.async tile loads in either layout, Philox words of the attention dropout layout), the
// ${KEY} values of a spec, the launch over tile slots and the source pieces
// (unit loop, key range, double-buffered key tiles) of the forward
// (FlashAttentionKernel.cpp), dq (FlashAttentionBackward.cpp) and dk/dv
// (FlashAttentionBackward.cpp, FlashAttentionDkDv.cpp) kernels.
//
//===----------------------------------------------------------------------===//

#ifndef LS2C_CODEGEN_FLASHATTENTIONPARTS_H
#define LS2C_CODEGEN_FLASHATTENTIONPARTS_H

#include "AttentionCommon.h"

#include <map>
#include <string>

namespace ls2c::codegen::attention {

constexpr int kThreads = 128; ///< threads of a block (the wide dk/dv: 256)
constexpr int kTile = 64;     ///< rows per unit of the warp-per-16-keys dk/dv
/// Query rows per forward and dq unit: 128, two 16-row blocks a warp, so
/// each K and V fragment feeds two mma (H200, 4x16x4096x128 bf16 forward:
/// 2.67 -> 1.87 ms; GPT-2 medium's causal head-dim-64 forward 9.9 ms at
/// 128 rows, 10.2 at 64 in the same code).
constexpr int kQueryRows = 128;
constexpr uint32_t kMaxBlocks = 65536;

/// Query rows per forward and dq unit: kQueryRows, 64 at head dim 256
/// (one row block of 16 a warp: O and dQ's f32 accumulators are 128
/// registers a thread).
inline int queryRows(const AttentionSpec &s) { return s.headDim > 128 ? 64 : kQueryRows; }
/// dk/dv units a key tile: 2 at head dim 256 (each sums half of dk's and
/// dv's columns), else 1.
inline int dkDvSplits(const AttentionSpec &s) { return s.headDim > 128 ? 2 : 1; }

/// ${KEY} values of the kernels of `s` named `name` (T, MMA, D, HQ, SCALE,
/// CAUSAL_OK, TILE = kTile, THREADS = kThreads, ...).
std::map<std::string, std::string> flashValues(const AttentionSpec &s, const std::string &name);

/// One block of `threads` per unit of `tile` rows: a [tokens, heads] work
/// space at tile / 2 rows a block (the kernel loops when units outnumber
/// blocks); `sharedBytes` of dynamic shared memory.
runtime::LaunchConfig tileLaunch(const runtime::Dim &tokens, unsigned tokensParam, int64_t heads,
                                 uint32_t sharedBytes, int tile = kTile,
                                 int threads = kThreads);

/// The kernel's header comment, helpers and signature through the
/// constants every body starts with (`what` names the kernel's part).
std::string kernelStart(mlir::Operation *op, const AttentionSpec &s, const std::string &what,
                        const Params &p, int threads = kThreads);

/// The unit loop's head: slot, head, sequence and the tile's first row
/// `first` (queries when `queries`, else keys); skips empty slots. `head`
/// counts heads x `splits` units a tile. `lastSlotsFirst` hands out the
/// slots from the last: causal query tiles late in a sequence see the most
/// keys, and starting them first keeps them out of the grid's last wave.
std::string unitLoop(bool queries, int splits = 1, bool lastSlotsFirst = false);
/// The keys a query tile sees: [0, kEnd).
std::string keyEnd(const AttentionSpec &s);
/// The first key tile's loads into stage 0 of sKV (forward and dq).
std::string firstKeyTileLoads();
/// The head of the double-buffered loop over key tiles (forward and dq).
std::string keyTileLoopHead();

/// Forward and dq: maskScores(rb), once S of key tile n0 is in s[rb][NT][4]
/// (row rowOf(rb, r)): tiles that cross the sequence end or the causal
/// diagonal set masked scores to -inf (P = 0); whole tiles skip the test.
std::string queryTileMask();

/// The forward's and dq's `draw(rb, w)` lambda (and DW, the calls a row):
/// row block rb's attention-dropout words, a Philox call per row pair
/// (rowOf(rb, 0), rowOf(rb, 1)) and 32 keys of the key tile at n0
/// (ls2_attention_philox), word m of call sp those of column tile 4 sp + m
/// and its byte e a thread's accumulator element e. An empty lambda without
/// dropout.
std::string dropoutDraw(const AttentionSpec &s);

/// Scratch of the backward kernels: past the counters, f32 [maxTokensQ,
/// heads] each, D_i and then the exponent bias of P (lse_i in log2 units,
/// 0 for a row without keys); dq writes them, dk/dv reads them.
uint64_t backwardScratchBytes(const AttentionSpec &s, int64_t maxTokensQ);
/// The declarations of scratch_d and scratch_bias in a backward kernel.
std::string backwardScratchDeclarations(const AttentionSpec &s, int64_t maxTokensQ);
/// dk/dv: D_i and the bias of query tile rows `rows0` .. of head `head`
/// into stage `stage` of sD and sL, a thread a row, cp.async in the current
/// group (so the next tile's come with its Q and dO tiles; rows past the
/// sequence get 0).
std::string statsLoads(const std::string &rows0, const std::string &head,
                       const std::string &stage);

/// dk/dv: the first query the causal mask lets see the key tile's first
/// key, then the loop over the query tiles of each query head of the group
/// in order (tile `it`: head kvh * GROUP + it / tiles, rows firstQuery +
/// (it % tiles) * BM) through the wait for tile it: its Q and dO (sQ, sDO),
/// D and bias (tD, tL) in shared memory, tile it + 1's loads in flight.
std::string queryTileLoopHead(const AttentionSpec &s);

/// The warp-per-16-keys dk/dv kernel's body after kernelStart, without its
/// closing brace (FlashAttentionBackward.cpp): query tiles of `inner` rows,
/// ${TILE} keys a unit, a warp per 16 of them.
std::string keyWarpDkDvBody(const AttentionSpec &s, int64_t maxTokensQ, int inner);

/// dk and dv in FlashAttention-2's backward layout (head dims 96 and 128):
/// the kernel "<name>" per 128-key tile and kv head, 8 warps.
GeneratedKernel generateWideDkDv(mlir::Operation *op, const AttentionSpec &s,
                                 const GradOperands &go, int64_t maxTokensQ,
                                 const std::string &name);

} // namespace ls2c::codegen::attention

#endif // LS2C_CODEGEN_FLASHATTENTIONPARTS_H
