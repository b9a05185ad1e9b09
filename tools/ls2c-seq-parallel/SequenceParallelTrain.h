//===- SequenceParallelTrain.h - a decoder's train step, sequence-parallel ===//
//
// ls2c-seq-parallel SP.ls2b --train MODEL.ls2b (issue 10, item 1): every
// rank holds its chunks of the B sequences (DistAttn: chunk r; zigzag:
// chunks r and 2P - 1 - r) for all activations, runs the model's
// @accumulate_gradients on them (positions are the tokens' own, so offset
// by the chunk start; next-token labels of the whole sequence, the last
// token ignored), and every Attention step of it goes to a Runner
// (SequenceParallelRunner.h) through Executor::setAttentionOverride: q, k,
// v (and out, lse, dout backward) are copied into the runner's chunk
// buffers with their row strides, the schedule runs, out and lse (dq, dk,
// dv) are copied back. Rank r's loss is weighted by its share of the
// label tokens (its loss_scale), so the ranks' gradient workspaces sum to
// the gradient of the mean loss over all tokens; they are summed with an
// NCCL all-reduce (real ranks) or on the host (simulated ranks, which run
// one host thread each and meet at every attention).
//
// --check compares the loss and the summed gradients with one executor
// running the whole sequences (the same bundle, attention by its own
// kernels) on the same GPU. Needs a decoder bundle without attention
// dropout whose every attention has an Attention step (f16/bf16, head dim
// a multiple of 8); throws runtime::RuntimeError otherwise.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TOOLS_SEQPARALLEL_SEQUENCEPARALLELTRAIN_H
#define LS2C_TOOLS_SEQPARALLEL_SEQUENCEPARALLELTRAIN_H

#include "SequenceParallelRunner.h"

#include <functional>
#include <string>
#include <vector>

namespace ls2c::seqpar {

struct TrainOptions {
  std::string bundle;  ///< the training bundle's path (for messages)
  int64_t batch = 1, seq = 0;
  uint64_t seed = 1;   ///< parameters (the description's initialization) and token ids
  int ranks = 1;       ///< P
  int rank = -1;       ///< this process's rank with real ranks; -1: simulate all P
  bool check = false;
  int time = 0, warmup = 0;
};

/// What the ranks computed, and with --check the comparison.
struct TrainReport {
  double loss = 0;                 ///< mean over all label tokens
  double fullLoss = 0;             ///< --check: one executor on the whole sequences
  double gradientError = 0;        ///< relative L2 of the summed gradients
  double stepMs = 0;               ///< --time: slowest rank's median step
  size_t attentionCalls = 0;       ///< Attention steps routed, per rank and step
  double maxMemoryGiB = 0;         ///< device memory in use (cudaMemGetInfo)
};

/// The ranks' element-wise sum of a host vector (NCCL all-reduce with real
/// ranks; identity when simulated).
using RankSum = std::function<std::vector<double>(std::vector<double>)>;
/// An all-reduce (sum) of `elements` f32 at a device pointer on a stream
/// (real ranks), or null (simulated).
using GradientSum = std::function<void(float *data, size_t elements, cudaStream_t stream)>;

/// `program`: the model's training bundle (ls2c compile --arch), read from
/// o.bundle.
TrainReport runSequenceParallelTraining(const TrainOptions &o, runtime::Program program,
                                        runtime::Executor &spExecutor,
                                        const parallel::SchedulePlan &plan, const Shape &shape,
                                        Transport &transport, const RankSum &rankSum,
                                        const GradientSum &gradientSum);

} // namespace ls2c::seqpar

#endif // LS2C_TOOLS_SEQPARALLEL_SEQUENCEPARALLELTRAIN_H
