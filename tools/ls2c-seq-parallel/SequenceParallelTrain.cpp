//===- SequenceParallelTrain.cpp - a decoder's train step, sequence-parallel ===//
#include "SequenceParallelTrain.h"

#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Model/ParameterLayout.h"
#include "ls2c/Runtime/Bundle.h"
#include "ls2c/Runtime/DeviceTensors.h"
#include "ls2c/Training/Workspace.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

namespace ls2c::seqpar {

using runtime::Attention;
using runtime::AttentionCallPointers;
using runtime::AttentionCallShape;
using runtime::DType;
using runtime::Executor;
using runtime::RuntimeError;
using runtime::DeviceTensor;

namespace {

/// `rows` rows of `width` elements of `eb` bytes from a strided source to
/// a strided destination (strides in elements).
void copyRows(void *dst, int64_t dstStride, const void *src, int64_t srcStride, int64_t rows,
              int64_t width, size_t eb, cudaStream_t st) {
  if (rows == 0)
    return;
  checkCuda(cudaMemcpy2DAsync(dst, static_cast<size_t>(dstStride) * eb, src,
                          static_cast<size_t>(srcStride) * eb, static_cast<size_t>(width) * eb,
                          static_cast<size_t>(rows), cudaMemcpyDeviceToDevice, st),
        "cudaMemcpy2DAsync (attention operands)");
}

char *at(const void *base, int64_t row, int64_t stride, size_t eb) {
  return static_cast<char *>(const_cast<void *>(base)) + static_cast<size_t>(row * stride) * eb;
}

/// The whole batch: token ids, next-token labels (the last token of each
/// sequence ignored, -100) and positions, [B * S] row major.
struct Tokens {
  std::vector<double> ids, labels, positions;
};

Tokens makeTokens(int64_t batch, int64_t seq, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x5eed5eedULL);
  std::uniform_int_distribution<int64_t> id(0, vocab - 1);
  Tokens t;
  for (int64_t i = 0; i < batch * seq; ++i)
    t.ids.push_back(static_cast<double>(id(rng)));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < seq; ++s) {
      t.labels.push_back(s + 1 < seq ? t.ids[static_cast<size_t>(b * seq + s + 1)] : -100.0);
      t.positions.push_back(static_cast<double>(s));
    }
  return t;
}

/// One rank's (or the whole batch's) executor and training state.
struct Member {
  int rank = -1; ///< -1: the whole-sequence reference
  std::unique_ptr<Executor> ex;
  std::map<std::string, DeviceTensor> state, inputs, spare, outputs;
  cudaStream_t stream = nullptr;
  cudaEvent_t ready = nullptr;
  double weight = 1;     ///< share of the label tokens
  int64_t rows = 0;      ///< packed tokens
  /// Owned chunks with their first row in the packed tokens.
  std::vector<std::pair<int64_t, int64_t>> chunks;
  size_t attentionCalls = 0;
  double loss = 0;

  ~Member() {
    if (ready)
      cudaEventDestroy(ready);
    if (stream)
      cudaStreamDestroy(stream);
  }
};

/// Simulated ranks' meeting point at every attention: the last to arrive
/// runs all ranks' attention (leader) and the others wait for it.
class Meeting {
public:
  explicit Meeting(int n) : n(n), slots(static_cast<size_t>(n)) {}
  struct Arrival {
    const Attention *step = nullptr;
    AttentionCallPointers pointers;
  };
  void arrive(int r, Arrival a, const std::function<void(std::vector<Arrival> &)> &leader) {
    std::unique_lock<std::mutex> lock(m);
    if (failed)
      throw RuntimeError("another simulated rank failed");
    slots[static_cast<size_t>(r)] = a;
    const uint64_t g = generation;
    if (++arrived == n) {
      try {
        leader(slots);
      } catch (...) {
        error = std::current_exception();
      }
      arrived = 0;
      ++generation;
      cv.notify_all();
    } else {
      cv.wait(lock, [&] { return generation != g || failed; });
    }
    if (error)
      std::rethrow_exception(error);
    if (failed)
      throw RuntimeError("another simulated rank failed");
  }
  void fail() {
    std::lock_guard<std::mutex> lock(m);
    failed = true;
    cv.notify_all();
  }

private:
  int n;
  std::vector<Arrival> slots;
  std::mutex m;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t generation = 0;
  bool failed = false;
  std::exception_ptr error;
};

} // namespace

TrainReport runSequenceParallelTraining(const TrainOptions &o, runtime::Program program,
                                        Executor &spExecutor,
                                        const parallel::SchedulePlan &plan, const Shape &shape,
                                        Transport &transport, const RankSum &rankSum,
                                        const GradientSum &gradientSum) {
  const ModelDescription desc = parseModelDescription(program.description, o.bundle);
  if (!isCausalLM(desc.architecture))
    throw std::invalid_argument(o.bundle + ": --train takes a decoder (GPT or Llama) bundle");
  if (desc.attention_dropout > 0)
    throw std::invalid_argument(o.bundle + ": attention_dropout " +
                                std::to_string(desc.attention_dropout) +
                                " > 0: the blocks of a sequence-parallel attention would draw "
                                "another mask than one attention does; train with "
                                "attention_dropout 0");
  const ls2c::DType dtype = shape.dtype == runtime::DType::F16    ? ls2c::DType::F16
                            : shape.dtype == runtime::DType::BF16 ? ls2c::DType::BF16
                                                                  : ls2c::DType::F32;
  if (desc.heads != shape.heads || desc.kv_heads != shape.kvHeads ||
      desc.headDim() != shape.headDim || desc.dtype != dtype || !shape.causal)
    throw std::invalid_argument(o.bundle + ": its attention (heads, kv_heads, head dim, dtype, "
                                "causal mask) is not the sequence-parallel bundle's: compile both "
                                "from one description");
  const runtime::Function *found = nullptr;
  for (const runtime::Function &f : program.functions)
    if (f.name == "accumulate_gradients")
      found = &f;
  if (!found)
    throw std::invalid_argument(o.bundle +
                                ": no @accumulate_gradients (compile the model with --arch)");
  const runtime::Function &acc = *found;
  size_t forwardSteps = 0;
  for (const runtime::Step &s : acc.steps)
    forwardSteps += s.kind == runtime::Step::Kind::Attention && !s.attention.backward;
  if (forwardSteps != static_cast<size_t>(desc.decoder_layers))
    throw std::invalid_argument(o.bundle + ": " + std::to_string(forwardSteps) + " of its " +
                                std::to_string(desc.decoder_layers) +
                                " attentions have an Attention step (fp16/bf16, head dim a "
                                "multiple of 8): the others could not be routed across ranks");
  int64_t bound = 0;
  for (const runtime::TensorSpec &a : acc.arguments)
    if (a.name == "input_ids")
      bound = a.maxShape[0];

  if (o.batch * o.seq > bound && o.check)
    throw std::invalid_argument(o.bundle + ": --check runs the whole " +
                                std::to_string(o.batch * o.seq) +
                                " tokens on one GPU, over its max_batch_tokens " +
                                std::to_string(bound));
  if (o.batch * plan.chunkLen * (plan.chunks / plan.ranks) > bound)
    throw std::invalid_argument(o.bundle + ": a rank's " +
                                std::to_string(o.batch * plan.chunkLen * (plan.chunks / plan.ranks)) +
                                " tokens exceed its max_batch_tokens " + std::to_string(bound));

  // Parameters (the description's initialization), tokens, each member's share.
  const ParameterLayout layout = buildParameterLayout(desc);
  WorkspaceLayout ws = planWorkspace(layout);
  // fp32 on the host as on the device (5.2 GB at 1.3B parameters, not 10.4).
  const std::vector<float> master = initializeWorkspace(ws, o.seed);
  const Tokens tokens = makeTokens(o.batch, o.seq, desc.vocab, o.seed);
  const double baseScale = program.computeDType == "f16" ? 65536.0 : 1.0;
  const int64_t labelTokens = o.batch * (o.seq - 1);
  Runner *runner = nullptr; // set below, used by the hooks

  auto makeMember = [&](int rank) {
    auto m = std::make_unique<Member>();
    m->rank = rank;
    m->ex = std::make_unique<Executor>(program);
    checkCuda(cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    checkCuda(cudaEventCreateWithFlags(&m->ready, cudaEventDisableTiming), "cudaEventCreate");
    std::vector<double> ids, labels, positions, cu = {0.0};
    int64_t valid = 0;
    auto take = [&](int64_t lo, int64_t hi) {
      for (int64_t b = 0; b < o.batch; ++b) {
        for (int64_t s = lo; s < hi; ++s) {
          size_t i = static_cast<size_t>(b * o.seq + s);
          ids.push_back(tokens.ids[i]);
          labels.push_back(tokens.labels[i]);
          positions.push_back(tokens.positions[i]);
          valid += tokens.labels[i] >= 0;
        }
        cu.push_back(cu.back() + static_cast<double>(hi - lo));
      }
    };
    if (rank < 0) {
      take(0, o.seq);
    } else {
      for (int64_t c : plan.chunksOf(rank)) {
        m->chunks.push_back({c, static_cast<int64_t>(ids.size())});
        take(plan.chunkBegin(c), plan.chunkEnd(c));
      }
    }
    m->rows = static_cast<int64_t>(ids.size());
    if (m->rows > bound)
      throw std::invalid_argument(
          o.bundle + ": " + std::to_string(m->rows) + " tokens on " +
          (rank < 0 ? std::string("the reference") : "rank " + std::to_string(rank)) +
          " exceed its max_batch_tokens " + std::to_string(bound));
    m->weight = rank < 0 ? 1.0 : static_cast<double>(valid) / static_cast<double>(labelTokens);
    const int64_t n = m->rows;
    m->inputs["input_ids"] = runtime::uploadTensor(ids, {n}, DType::I32, ids.size() * 4 + 4, "ids");
    m->inputs["labels"] = runtime::uploadTensor(labels, {n}, DType::I32, ids.size() * 4 + 4, "labels");
    m->inputs["position_ids"] =
        runtime::uploadTensor(positions, {n}, DType::I32, ids.size() * 4 + 4, "positions");
    m->inputs["cu_seqlens"] = runtime::uploadTensor(
        cu, {static_cast<int64_t>(cu.size())}, DType::I32, cu.size() * 4, "cu_seqlens");
    const std::vector<int64_t> w = {static_cast<int64_t>(master.size())};
    m->state["master_weights"] = runtime::uploadFloats(master, w, "master");
    m->state["gradients"] = runtime::zeroTensor(w, DType::F32, master.size() * 4, "gradients");
    m->state["loss_scale"] =
        runtime::uploadTensor({baseScale * m->weight}, {}, DType::F32, 4, "loss scale");
    m->state["dropout_seed"] =
        runtime::uploadTensor({static_cast<double>(o.seed)}, {}, DType::I64, 8, "seed");
    m->state["dropout_offset"] = runtime::uploadTensor({0.0}, {}, DType::I64, 8, "offset");
    return m;
  };

  // --- attention through the runner --------------------------------------
  const size_t eb = runtime::dtypeBytes(shape.dtype);
  const int64_t qw = shape.heads * shape.headDim, kvw = shape.kvHeads * shape.headDim;
  auto validate = [&](const Member &m, const Attention &a, const AttentionCallShape &cs) {
    if (static_cast<int64_t>(a.heads) != shape.heads ||
        static_cast<int64_t>(a.kvHeads) != shape.kvHeads ||
        static_cast<int64_t>(a.headDim) != shape.headDim || a.causal != shape.causal ||
        a.dtype != shape.dtype || a.dropoutRate > 0 || cs.tokensQ != m.rows ||
        cs.tokensK != m.rows)
      throw RuntimeError("rank " + std::to_string(m.rank) +
                         ": an Attention step that is not this model's self-attention over "
                         "the rank's tokens");
  };
  auto copyIn = [&](Member &m, const Attention &a, const AttentionCallPointers &p,
                    cudaStream_t st) {
    for (auto [c, off] : m.chunks) {
      const int64_t n = runner->chunkRows(c);
      copyRows(runner->tensor(m.rank, c, Runner::Tensor::Q), qw, at(p.q, off, a.strideQ, eb),
               a.strideQ, n, qw, eb, st);
      copyRows(runner->tensor(m.rank, c, Runner::Tensor::K), kvw, at(p.k, off, a.strideK, eb),
               a.strideK, n, kvw, eb, st);
      copyRows(runner->tensor(m.rank, c, Runner::Tensor::V), kvw, at(p.v, off, a.strideV, eb),
               a.strideV, n, kvw, eb, st);
      if (!a.backward)
        continue;
      copyRows(runner->tensor(m.rank, c, Runner::Tensor::Out), qw, at(p.out, off, a.strideO, eb),
               a.strideO, n, qw, eb, st);
      copyRows(runner->tensor(m.rank, c, Runner::Tensor::DOut), qw,
               at(p.dout, off, a.strideDO, eb), a.strideDO, n, qw, eb, st);
      copyRows(runner->tensor(m.rank, c, Runner::Tensor::Lse), shape.heads,
               at(p.lse, off, shape.heads, 4), shape.heads, n, shape.heads, 4, st);
    }
  };
  auto copyOut = [&](Member &m, const Attention &a, const AttentionCallPointers &p,
                     cudaStream_t st) {
    for (auto [c, off] : m.chunks) {
      const int64_t n = runner->chunkRows(c);
      if (!a.backward) {
        copyRows(at(p.out, off, a.strideO, eb), a.strideO,
                 runner->tensor(m.rank, c, Runner::Tensor::Out), qw, n, qw, eb, st);
        copyRows(at(p.lse, off, shape.heads, 4), shape.heads,
                 runner->tensor(m.rank, c, Runner::Tensor::Lse), shape.heads, n, shape.heads, 4,
                 st);
        continue;
      }
      copyRows(at(p.dq, off, a.strideDQ, eb), a.strideDQ,
               runner->tensor(m.rank, c, Runner::Tensor::DQ), qw, n, qw, eb, st);
      copyRows(at(p.dk, off, a.strideDK, eb), a.strideDK,
               runner->tensor(m.rank, c, Runner::Tensor::DK), kvw, n, kvw, eb, st);
      copyRows(at(p.dv, off, a.strideDV, eb), a.strideDV,
               runner->tensor(m.rank, c, Runner::Tensor::DV), kvw, n, kvw, eb, st);
    }
  };

  std::vector<std::unique_ptr<Member>> members;
  std::vector<int> local;
  if (o.rank >= 0)
    local = {o.rank};
  else
    for (int r = 0; r < o.ranks; ++r)
      local.push_back(r);
  for (int r : local)
    members.push_back(makeMember(r));
  // The uploads ran on the legacy stream; the members' streams do not wait for it.
  checkCuda(cudaDeviceSynchronize(), "uploading the inputs");
  Runner theRunner(spExecutor, plan, shape, local, transport);
  runner = &theRunner;

  Meeting meeting(static_cast<int>(members.size()));
  cudaStream_t spStream = nullptr, comm = nullptr;
  cudaEvent_t done = nullptr;
  checkCuda(cudaStreamCreateWithFlags(&spStream, cudaStreamNonBlocking), "cudaStreamCreate");
  checkCuda(cudaStreamCreateWithFlags(&comm, cudaStreamNonBlocking), "cudaStreamCreate");
  checkCuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
  for (auto &mp : members) {
    Member *m = mp.get();
    m->ex->setAttentionOverride([&, m](const Attention &a, const AttentionCallShape &cs,
                                       const AttentionCallPointers &p, cudaStream_t st) {
      validate(*m, a, cs);
      ++m->attentionCalls;
      if (o.rank >= 0) {
        // A real rank: this process's runner, on the step's stream.
        copyIn(*m, a, p, st);
        a.backward ? runner->backward(st, comm) : runner->forward(st, comm);
        copyOut(*m, a, p, st);
        return;
      }
      checkCuda(cudaEventRecord(m->ready, st), "cudaEventRecord");
      meeting.arrive(m->rank, {&a, p}, [&](std::vector<Meeting::Arrival> &all) {
        for (size_t i = 0; i < members.size(); ++i) {
          checkCuda(cudaStreamWaitEvent(spStream, members[i]->ready), "cudaStreamWaitEvent");
          copyIn(*members[i], *all[i].step, all[i].pointers, spStream);
        }
        a.backward ? runner->backward(spStream, nullptr) : runner->forward(spStream, nullptr);
        for (size_t i = 0; i < members.size(); ++i)
          copyOut(*members[i], *all[i].step, all[i].pointers, spStream);
        checkCuda(cudaEventRecord(done, spStream), "cudaEventRecord");
      });
      checkCuda(cudaStreamWaitEvent(st, done), "cudaStreamWaitEvent");
    });
  }

  // One step of every member: gradients zeroed, @accumulate_gradients.
  auto step = [&](Member &m) {
    checkCuda(cudaMemsetAsync(m.state.at("gradients").buffer.data(), 0, master.size() * 4, m.stream),
          "cudaMemsetAsync");
    Executor::Call call = runtime::bindArguments(acc, m.state, m.inputs);
    runtime::bindResults(acc, call, m.state, m.spare, m.outputs);
    m.ex->run("accumulate_gradients", call, m.stream);
    runtime::adoptResults(acc, m.state, m.spare);
  };
  auto stepAll = [&]() {
    if (members.size() == 1) {
      step(*members[0]);
    } else {
      std::vector<std::thread> threads;
      std::vector<std::exception_ptr> errors(members.size());
      for (size_t i = 0; i < members.size(); ++i)
        threads.emplace_back([&, i] {
          try {
            step(*members[i]);
          } catch (...) {
            errors[i] = std::current_exception();
            meeting.fail();
          }
        });
      for (std::thread &t : threads)
        t.join();
      for (std::exception_ptr &e : errors)
        if (e)
          std::rethrow_exception(e);
    }
    for (auto &m : members) {
      if (gradientSum)
        gradientSum(static_cast<float *>(m->state.at("gradients").buffer.data()), master.size(),
                    m->stream);
      checkCuda(cudaStreamSynchronize(m->stream), "train step");
    }
  };

  TrainReport report;
  stepAll();
  double loss = 0;
  for (auto &m : members)
    loss += m->weight * runtime::downloadTensor(m->outputs.at("loss"))[0];
  report.loss = rankSum({loss})[0];
  report.attentionCalls = members[0]->attentionCalls;

  if (o.check) {
    std::vector<double> sum(master.size(), 0.0);
    for (auto &m : members) {
      std::vector<double> g = runtime::downloadTensor(m->state.at("gradients"));
      for (size_t i = 0; i < g.size(); ++i)
        sum[i] += g[i] / baseScale;
    }
    // Real ranks: the all-reduce summed them already; every rank holds the sum.
    std::unique_ptr<Member> full = makeMember(-1);
    checkCuda(cudaDeviceSynchronize(), "uploading the inputs");
    step(*full);
    checkCuda(cudaStreamSynchronize(full->stream), "reference step");
    report.fullLoss = runtime::downloadTensor(full->outputs.at("loss"))[0];
    std::vector<double> ref = runtime::downloadTensor(full->state.at("gradients"));
    double d = 0, r = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      double want = ref[i] / baseScale;
      d += (sum[i] - want) * (sum[i] - want);
      r += want * want;
    }
    report.gradientError = r > 0 ? std::sqrt(d / r) : std::sqrt(d);
  }

  if (o.time > 0) {
    cudaEvent_t start, stop;
    checkCuda(cudaEventCreate(&start), "cudaEventCreate");
    checkCuda(cudaEventCreate(&stop), "cudaEventCreate");
    std::vector<double> ms;
    for (int i = 0; i < o.warmup + o.time; ++i) {
      rankSum({0.0}); // every rank starts together
      checkCuda(cudaEventRecord(start, members[0]->stream), "cudaEventRecord");
      stepAll();
      checkCuda(cudaEventRecord(stop, members[0]->stream), "cudaEventRecord");
      checkCuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
      float t = 0;
      checkCuda(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
      if (i >= o.warmup)
        ms.push_back(t);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    std::sort(ms.begin(), ms.end());
    std::vector<double> mine(static_cast<size_t>(o.ranks), 0.0);
    mine[static_cast<size_t>(std::max(0, o.rank))] = ms[ms.size() / 2];
    std::vector<double> all = rankSum(mine);
    report.stepMs = *std::max_element(all.begin(), all.end());
  }
  size_t freeB = 0, totalB = 0;
  checkCuda(cudaMemGetInfo(&freeB, &totalB), "cudaMemGetInfo");
  report.maxMemoryGiB = double(totalB - freeB) / 1073741824.0;
  for (auto &m : members)
    m->ex->setAttentionOverride({});
  cudaEventDestroy(done);
  cudaStreamDestroy(spStream);
  cudaStreamDestroy(comm);
  return report;
}

} // namespace ls2c::seqpar
