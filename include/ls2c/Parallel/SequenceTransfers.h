//===- SequenceTransfers.h - what a sequence-parallel step sends ----------===//
//
// The messages a SchedulePlan implies when ranks run it for real (issue 10's
// GPU path, tools/ls2c-seq-parallel): before a step's blocks, each rank
// fetches from their owners the chunks it lacks; after them, it gives back
// the results that belong to other ranks. Every rank derives the same lists
// from the plan, in the same order, so the NCCL sends and receives of a step
// pair up when each rank issues its own in list order inside one
// ncclGroupStart/End. MLIR-free, no CUDA.
//
//   forward   fetch KeyValue (k, v of a chunk) and Query (q);
//             give  Partial (out_b, lse_b of a block whose queries another
//                   rank owns; merged there);
//   backward  fetch KeyValue and Query (q, out, lse, dout: the merged
//                   forward's, so the block's gradients are its exact share);
//             give  GradQuery (dq of a block to its queries' owner) and
//                   GradKeyValue (dk, dv to its keys' owner); summed there.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_PARALLEL_SEQUENCETRANSFERS_H
#define LS2C_PARALLEL_SEQUENCETRANSFERS_H

#include "ls2c/Parallel/SequenceParallel.h"

#include <cstdint>
#include <vector>

namespace ls2c::parallel {

enum class Payload { KeyValue, Query, Partial, GradQuery, GradKeyValue };

/// "kv", "q", "partial", "dq", "dkv".
const char *payloadName(Payload p);

struct Transfer {
  int from = 0, to = 0;
  Payload what = Payload::KeyValue;
  int64_t chunk = 0;  ///< the chunk the payload belongs to (query or key chunk)
  /// Gives: the block (query chunk, key chunk) whose result it is; its slot
  /// on the receiver is its index among the step's gives `to` that rank.
  int64_t queryChunk = 0, keyChunk = 0;
};

struct StepTransfers {
  std::vector<Transfer> fetch; ///< before the step's blocks; one per (to, chunk, payload)
  std::vector<Transfer> give;  ///< after them
};

/// Per step of `plan`, the forward's (backward = false) or the backward's
/// transfers, ordered by (to, from, what, chunk) and then block.
std::vector<StepTransfers> planTransfers(const SchedulePlan &plan, bool backward);

/// The index of `t` among the transfers of `list` with the same receiver
/// and payload (its receive slot of that payload's kind); -1 when it is not
/// there.
int receiveSlot(const std::vector<Transfer> &list, const Transfer &t);

/// Over all steps, the most transfers of payload `what` one rank receives in
/// one step: the receive slots of that kind a rank needs per step.
int maxReceives(const std::vector<StepTransfers> &steps, Payload what);

} // namespace ls2c::parallel

#endif // LS2C_PARALLEL_SEQUENCETRANSFERS_H
