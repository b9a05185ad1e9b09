//===- SequenceParallel.h - DistAttn's schedule, simulated in float64 -----===//
//
// Sequence-parallel attention (issue 10) as a float64 CPU reference: P ranks
// each hold a contiguous chunk of the sequence's Q, K and V (positions offset
// by the chunk start; the last chunk padded and masked), and attention runs
// as blocks (query chunk i, key chunk j) whose partial outputs, each with its
// row log-sum-exp, are merged where the queries live. Two schedules:
//
//   DistAttn (Li et al., "LightSeq: Sequence Level Parallelism for
//   Distributed Training of Long Context Transformers", 2023, section 3.2):
//   causal work balanced over P/2 + 1 steps (odd P: (P + 1) / 2). Step 0:
//   every rank its diagonal block. Then per distance d = 1 .. floor(P/2),
//   one step: ranks i >= d compute (i, i - d) with keys received from rank
//   i - d, and the d ranks h < d that would idle help with the blocks at
//   distance P - d (when P - d != d): rank h computes (h + P - d, h) with its
//   own keys and the queries it received, returning the partial output and
//   its lse to rank h + P - d. Without a causal mask every rank computes all
//   P blocks of its queries (P steps, keys passed around a ring).
//
//   Zigzag ring: the sequence in 2P chunks, rank r holding chunks r and
//   2P - 1 - r, so every rank has the same causal work; in step t it
//   computes its two query chunks against the two key chunks of rank
//   (r - t) mod P (P steps).
//
// Partial results merge in fp64 with the overflow-safe form
//   out <- out - sigmoid(lse_b - lse) (out - out_b),
//   lse <- lse - logsigmoid(lse - lse_b),
// a row without keys (lse -inf) contributing nothing. The backward runs the
// same blocks on the same ranks from the merged lse and D = dout . out of the
// query rows: dq goes back to the query owner, dk and dv to the key owner,
// each summed there in the schedule's order.
//
// Tensors are packed [tokens, heads, head dim], row major, float64; one
// sequence per call (the packed batch's sequences are independent). GQA and
// MQA: kvHeads divides heads; K and V travel with their own head count.
// Throws std::invalid_argument naming the argument and the rule.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_PARALLEL_SEQUENCEPARALLEL_H
#define LS2C_PARALLEL_SEQUENCEPARALLEL_H

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace ls2c::parallel {

struct AttentionShape {
  int64_t tokens = 0;  ///< sequence length S (queries = keys, self-attention)
  int64_t heads = 0;   ///< query heads H
  int64_t kvHeads = 0; ///< key/value heads, dividing heads
  int64_t headDim = 0; ///< D
  bool causal = false; ///< key j visible to query i when j <= i
  double scale = 0;    ///< scores = scale * q . k (usually 1 / sqrt(D))
};

/// q [S, H, D]; k, v [S, kvHeads, D]; out [S, H, D]; lse [S, H] (natural
/// log; -inf for a row that sees no key, whose out is 0).
struct AttentionForward {
  std::vector<double> out, lse;
};
/// dq [S, H, D]; dk, dv [S, kvHeads, D].
struct AttentionBackward {
  std::vector<double> dq, dk, dv;
};

/// The direct definition over the whole sequence (the reference).
AttentionForward attentionForward(const AttentionShape &s, const std::vector<double> &q,
                                  const std::vector<double> &k, const std::vector<double> &v);
AttentionBackward attentionBackward(const AttentionShape &s, const std::vector<double> &q,
                                    const std::vector<double> &k, const std::vector<double> &v,
                                    const AttentionForward &fwd,
                                    const std::vector<double> &dout);

enum class Schedule { DistAttn, ZigzagRing };

/// "distattn", "zigzag".
const char *scheduleName(Schedule s);

/// One block of work in a step: `rank` computes query chunk `queryChunk`
/// against key chunk `keyChunk` (chunk indices of the layout: P chunks for
/// DistAttn, 2P for the zigzag ring).
struct BlockTask {
  int rank = 0;
  int64_t queryChunk = 0, keyChunk = 0;
};

/// The schedule of P ranks: per step, the blocks computed (at most two per
/// rank and step, the zigzag ring's; one for DistAttn). Every visible block
/// appears exactly once.
struct SchedulePlan {
  Schedule schedule = Schedule::DistAttn;
  int ranks = 1;
  int64_t tokens = 0;    ///< S, the sequence the plan splits
  int64_t chunks = 1;    ///< P (DistAttn) or 2P (zigzag)
  int64_t chunkLen = 0;  ///< ceil(S / chunks): the last chunk padded
  std::vector<std::vector<BlockTask>> steps;
  /// The rank that holds chunk c's Q, K, V and owns its results.
  int ownerOf(int64_t chunk) const;
  /// The chunks `rank` owns, in chunk order.
  std::vector<int64_t> chunksOf(int rank) const;
  /// Chunk c's tokens [chunkBegin(c), chunkEnd(c)) of the sequence (clipped
  /// to S: the last chunks may be short or empty).
  int64_t chunkBegin(int64_t c) const { return std::min(tokens, c * chunkLen); }
  int64_t chunkEnd(int64_t c) const { return std::min(tokens, (c + 1) * chunkLen); }
};

/// Throws std::invalid_argument when ranks < 1 or tokens < 1.
SchedulePlan planSchedule(Schedule schedule, int ranks, int64_t tokens, bool causal);

/// The forward and backward of the whole sequence computed block by block as
/// `plan` says, with the merges and returns the schedule implies (simulated
/// ranks in one process: the messages are copies).
AttentionForward sequenceParallelForward(const SchedulePlan &plan, const AttentionShape &s,
                                         const std::vector<double> &q,
                                         const std::vector<double> &k,
                                         const std::vector<double> &v);
AttentionBackward sequenceParallelBackward(const SchedulePlan &plan, const AttentionShape &s,
                                           const std::vector<double> &q,
                                           const std::vector<double> &k,
                                           const std::vector<double> &v,
                                           const AttentionForward &fwd,
                                           const std::vector<double> &dout);

/// Merges the partial result (outB, lseB) of `rows` rows of `headDim` into
/// (out, lse) with the overflow-safe form above.
void mergePartial(std::vector<double> &out, std::vector<double> &lse,
                  const std::vector<double> &outB, const std::vector<double> &lseB,
                  int64_t rows, int64_t headDim);

} // namespace ls2c::parallel

#endif // LS2C_PARALLEL_SEQUENCEPARALLEL_H
