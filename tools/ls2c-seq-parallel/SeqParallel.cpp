//===- SeqParallel.cpp - sequence-parallel attention on one or more GPUs --===//
//
// ls2c-seq-parallel BUNDLE --seq S [options]
//
// Runs the forward and backward of one attention layer over B sequences of
// S tokens split across P ranks (DistAttn or the zigzag ring; issue 10) with
// the kernels of a `ls2c compile --program=sequence-parallel` bundle:
//   - P processes, one per GPU, launched torchrun style (RANK, WORLD_SIZE,
//     LOCAL_RANK, MASTER_ADDR, MASTER_PORT): chunks move with NCCL
//     point-to-point calls on a communication stream beside the compute;
//   - or --simulate-ranks P in one process on one GPU, chunks moved by
//     device copies.
// --check compares every rank's out, lse, dq, dk and dv with full attention
// over the whole sequences computed by the same bundle on the same GPU
// (relative L2; bf16 2.5e-2, fp16 5e-3, fp32 1e-5); --fp64-reference also
// with the float64 definition (ls2c/Parallel/SequenceParallel.h; small
// shapes only: it runs on the CPU). --time N times N forward+backward runs
// after --warmup W (CUDA events; the slowest rank's median). Rank 0 prints
// the results; --json-line adds one line `SP_RESULT {json}`. A device too
// small for the buffers prints `SP_RESULT {"oom": true, ...}` (with
// --json-line) and exits 3.
//
// Exit status: 0 success, 1 a check failed or an internal error, 2 bad
// input, 3 out of memory. No MLIR.
//
//===----------------------------------------------------------------------===//
#include "SequenceParallelRunner.h"
#include "SequenceParallelTrain.h"

#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Parallel/SequenceParallel.h"
#include "ls2c/Parallel/SequenceParallelFunctions.h"
#include "ls2c/Runtime/Bundle.h"
#include "ls2c/Runtime/DeviceTensors.h"
#include "ls2c/Runtime/Rendezvous.h"
#if LS2C_HAVE_NCCL
#include "ls2c/Runtime/DistributedNccl.h"
#endif

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace ls2c;
using runtime::RuntimeError;
using seqpar::Runner;

namespace {

constexpr int kExitCheck = 1, kExitUsage = 2, kExitOom = 3;

const char *kUsage =
    "usage: ls2c-seq-parallel BUNDLE --seq S [--batch B] [--schedule distattn|zigzag]\n"
    "         [--simulate-ranks P] [--check] [--fp64-reference] [--time N] [--warmup W]\n"
    "         [--attention kernels|cudnn|auto] [--seed N] [--json-line]\n"
    "       ls2c-seq-parallel BUNDLE --train MODEL.ls2b --seq S [--batch B] [--schedule ...]\n"
    "         [--simulate-ranks P] [--check] [--time N] [--warmup W] [--seed N] [--json-line]";

struct Options {
  std::string bundle;
  std::string train; ///< --train: a decoder's training bundle (SequenceParallelTrain.h)
  int64_t seq = 0, batch = 1;
  parallel::Schedule schedule = parallel::Schedule::DistAttn;
  int simulate = 0;
  bool check = false, fp64 = false, jsonLine = false;
  int time = 0, warmup = 3;
  uint64_t seed = 1;
  runtime::AttentionBackend attention = runtime::AttentionBackend::Kernels;
};

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// An integer in [low, high], else a UsageError naming the flag and the rule.
int64_t integer(const std::string &flag, const std::string &value, int64_t low, int64_t high) {
  try {
    size_t used = 0;
    long long v = std::stoll(value, &used);
    if (used == value.size() && v >= low && v <= high)
      return v;
  } catch (const std::exception &) {
  }
  throw UsageError(flag + " " + value + ": must be an integer from " + std::to_string(low) +
                   " to " + std::to_string(high));
}

// Token counts travel as int32 (cu_seqlens); counts of ranks, runs and
// seeds have their own sane limits.
constexpr int64_t kMaxTokens = 2147483647, kMaxCount = 1 << 20;

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        throw UsageError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--seq")
      o.seq = integer(a, value(), 1, kMaxTokens);
    else if (a == "--batch")
      o.batch = integer(a, value(), 1, kMaxTokens);
    else if (a == "--simulate-ranks")
      o.simulate = static_cast<int>(integer(a, value(), 1, 4096));
    else if (a == "--time")
      o.time = static_cast<int>(integer(a, value(), 1, kMaxCount));
    else if (a == "--warmup")
      o.warmup = static_cast<int>(integer(a, value(), 0, kMaxCount));
    else if (a == "--seed")
      o.seed = static_cast<uint64_t>(integer(a, value(), 0, INT64_MAX));
    else if (a == "--train")
      o.train = value();
    else if (a == "--check")
      o.check = true;
    else if (a == "--fp64-reference")
      o.check = o.fp64 = true;
    else if (a == "--json-line")
      o.jsonLine = true;
    else if (a == "--schedule") {
      std::string v = value();
      if (v == "distattn")
        o.schedule = parallel::Schedule::DistAttn;
      else if (v == "zigzag")
        o.schedule = parallel::Schedule::ZigzagRing;
      else
        throw UsageError("--schedule " + v + ": allowed: distattn, zigzag");
    } else if (a == "--attention") {
      std::string v = value();
      if (v == "kernels")
        o.attention = runtime::AttentionBackend::Kernels;
      else if (v == "cudnn")
        o.attention = runtime::AttentionBackend::Cudnn;
      else if (v == "auto")
        o.attention = runtime::AttentionBackend::Auto;
      else
        throw UsageError("--attention " + v + ": allowed: kernels, cudnn, auto");
    } else if (a == "--help" || a == "-h") {
      std::printf("%s\n", kUsage);
      std::exit(0);
    } else if (!a.empty() && a[0] == '-')
      throw UsageError("unknown option " + a);
    else if (o.bundle.empty())
      o.bundle = a;
    else
      throw UsageError("more than one bundle given ('" + o.bundle + "' and '" + a + "')");
  }
  if (o.bundle.empty())
    throw UsageError("no bundle given");
  if (o.seq == 0)
    throw UsageError("--seq is required");
  if (o.batch > kMaxTokens / o.seq)
    throw UsageError("--batch " + std::to_string(o.batch) + " x --seq " + std::to_string(o.seq) +
                     ": more than " + std::to_string(kMaxTokens) +
                     " tokens (cu_seqlens are int32)");
  if (!o.train.empty() && o.seq < 2)
    throw UsageError("--train needs --seq >= 2 (next-token labels)");
  if (!o.train.empty() && o.fp64)
    throw UsageError("--fp64-reference checks one attention; --train checks against the "
                     "whole-sequence step (--check)");
  return o;
}

/// The communicator of this process's rank, or none (simulated ranks).
struct World {
  int rank = 0, size = 1;
#if LS2C_HAVE_NCCL
  std::unique_ptr<runtime::NcclCommunicator> comm;
#endif
  /// Element-wise sum over ranks of `values` (a host vector, via the GPU).
  std::vector<double> sum(std::vector<double> values) {
#if LS2C_HAVE_NCCL
    if (comm) {
      std::vector<float> f(values.begin(), values.end());
      runtime::DeviceBuffer d(f.size() * 4, "all-reduce");
      d.upload(f.data(), f.size() * 4);
      comm->allReduce(d.data(), f.size(), runtime::DType::F32, runtime::Reduction::Sum, nullptr);
      seqpar::checkCuda(cudaDeviceSynchronize(), "all-reduce");
      d.download(f.data(), f.size() * 4);
      values.assign(f.begin(), f.end());
    }
#endif
    return values;
  }
  void barrier() { sum({0.0}); }
};

#if LS2C_HAVE_NCCL
class NcclTransport : public seqpar::Transport {
public:
  explicit NcclTransport(runtime::NcclCommunicator &c) : comm(c) {}
  void exchange(const std::vector<parallel::Transfer> &list, const Parts &parts,
                cudaStream_t stream) override {
    runtime::NcclGroup group;
    for (const parallel::Transfer &t : list) {
      if (t.from == comm.rank())
        for (const seqpar::Span &s : parts(t, true))
          comm.send(s.ptr, s.bytes, t.to, stream);
      if (t.to == comm.rank())
        for (const seqpar::Span &s : parts(t, false))
          comm.recv(s.ptr, s.bytes, t.from, stream);
    }
    group.end();
  }
  bool overlaps() const override { return true; }

private:
  runtime::NcclCommunicator &comm;
};
#endif

/// Rows [b S + lo, b S + hi) of every sequence b of a packed [B S, heads, D]
/// host tensor: chunk c's packed layout.
std::vector<double> chunkOf(const std::vector<double> &full, int64_t batch, int64_t seq,
                            int64_t lo, int64_t hi, int64_t width) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(batch * std::max<int64_t>(0, hi - lo) * width));
  for (int64_t b = 0; b < batch; ++b)
    out.insert(out.end(), full.begin() + (b * seq + lo) * width,
               full.begin() + (b * seq + hi) * width);
  return out;
}

std::vector<double> randomValues(size_t n, std::mt19937_64 &rng) {
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<double> v(n);
  for (double &x : v)
    x = dist(rng);
  return v;
}

/// Timing inputs: a random block of at most 1 Mi values, repeated to fill
/// `elements` (drawing every value of a 128K-token chunk takes minutes).
void uploadRepeating(void *dst, size_t elements, runtime::DType dtype, std::mt19937_64 &rng) {
  const size_t eb = runtime::dtypeBytes(dtype), bytes = elements * eb;
  std::vector<uint8_t> block =
      runtime::encodeValues(randomValues(std::min<size_t>(elements, size_t(1) << 20), rng), dtype);
  seqpar::checkCuda(cudaMemcpy(dst, block.data(), block.size(), cudaMemcpyHostToDevice), "upload");
  for (size_t filled = block.size(); filled < bytes; filled *= 2)
    seqpar::checkCuda(cudaMemcpy(static_cast<char *>(dst) + filled, dst, std::min(filled, bytes - filled),
                         cudaMemcpyDeviceToDevice),
              "fill");
}

void upload(void *dst, const std::vector<double> &values, runtime::DType dtype) {
  std::vector<uint8_t> bytes = runtime::encodeValues(values, dtype);
  seqpar::checkCuda(cudaMemcpy(dst, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), "upload");
}

std::vector<double> download(const void *src, size_t elements, runtime::DType dtype) {
  std::vector<uint8_t> bytes(elements * runtime::dtypeBytes(dtype));
  seqpar::checkCuda(cudaMemcpy(bytes.data(), src, bytes.size(), cudaMemcpyDeviceToHost), "download");
  return runtime::decodeValues(bytes, dtype);
}

/// Sums of squared differences and of squared references, per tensor.
struct ErrorSums {
  std::vector<double> diff, ref;
  void add(size_t i, const std::vector<double> &got, const std::vector<double> &want) {
    for (size_t j = 0; j < got.size(); ++j) {
      double d = got[j] - want[j];
      // -inf lse (rows without keys) on both sides is a match.
      if (std::isinf(want[j]) && got[j] == want[j])
        continue;
      diff[i] += d * d;
      ref[i] += want[j] * want[j];
    }
  }
};

const char *kTensorNames[] = {"out", "lse", "dq", "dk", "dv"};


struct Timing {
  double forwardMs = 0, backwardMs = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// --train: one decoder train step with its attentions sequence-parallel.
int runTrain(const Options &o, runtime::Program train, World &world, runtime::Executor &spExecutor,
             const parallel::SchedulePlan &plan, const seqpar::Shape &shape,
             seqpar::Transport &transport, const std::string &described) {
  seqpar::TrainOptions t;
  t.bundle = o.train;
  t.batch = o.batch;
  t.seq = o.seq;
  t.seed = o.seed;
  t.ranks = plan.ranks;
  t.rank = world.size > 1 ? world.rank : -1;
  t.check = o.check;
  t.time = o.time;
  t.warmup = o.warmup;
  seqpar::GradientSum gradientSum;
#if LS2C_HAVE_NCCL
  if (world.comm)
    gradientSum = [&](float *data, size_t elements, cudaStream_t stream) {
      world.comm->allReduce(data, elements, runtime::DType::F32, runtime::Reduction::Sum, stream);
    };
#endif
  seqpar::TrainReport r = seqpar::runSequenceParallelTraining(
      t, std::move(train), spExecutor, plan, shape, transport,
      [&](std::vector<double> v) { return world.sum(std::move(v)); }, gradientSum);
  const bool lead = world.rank == 0;
  int status = 0;
  std::string js = ", \"train\": \"" + o.train + "\", \"loss\": " + std::to_string(r.loss) +
                   ", \"attention_steps\": " + std::to_string(r.attentionCalls);
  if (lead)
    std::printf("%s: train step of %lld x %lld tokens over %d rank(s) (%s): loss %.6f; %zu "
                "attention steps through the runner per rank\n",
                o.train.c_str(), (long long)o.batch, (long long)o.seq, plan.ranks,
                parallel::scheduleName(o.schedule), r.loss, r.attentionCalls);
  if (o.check) {
    const double tol = shape.dtype == runtime::DType::BF16  ? 2.5e-2
                       : shape.dtype == runtime::DType::F16 ? 5e-3
                                                            : 1e-5;
    const double lossError = std::fabs(r.loss - r.fullLoss) / std::max(1e-30, std::fabs(r.fullLoss));
    const bool ok = lossError <= tol && r.gradientError <= tol;
    if (lead)
      std::printf("  %s loss %.6f against the whole-sequence step's %.6f (relative %.3g); "
                  "gradients relative L2 %.3g (tolerance %.3g)\ncheck: %s\n",
                  ok ? "ok  " : "FAIL", r.loss, r.fullLoss, lossError, r.gradientError, tol,
                  ok ? "passed" : "FAILED");
    char b[200];
    std::snprintf(b, sizeof b,
                  ", \"check\": {\"full_loss\": %.6f, \"loss_error\": %.3g, "
                  "\"gradient_error\": %.3g, \"pass\": %s}",
                  r.fullLoss, lossError, r.gradientError, ok ? "true" : "false");
    js += b;
    status = ok ? 0 : kExitCheck;
  }
  if (o.time > 0) {
    const double tokens = double(o.batch) * double(o.seq);
    if (lead)
      std::printf("time: train step (@accumulate_gradients + gradient all-reduce) %.3f ms "
                  "(median of %d, slowest rank); %.0f tokens/s; %.2f GiB in use\n",
                  r.stepMs, o.time, tokens / (r.stepMs * 1e-3), r.maxMemoryGiB);
    char b[200];
    std::snprintf(b, sizeof b, ", \"step_ms\": %.4f, \"tokens_per_s\": %.1f, \"max_memory_gib\": %.3f",
                  r.stepMs, tokens / (r.stepMs * 1e-3), r.maxMemoryGiB);
    js += b;
  }
  if (lead && o.jsonLine)
    std::printf("SP_RESULT {%s%s}\n", described.c_str(), js.c_str());
  std::fflush(stdout);
  return status;
}

int run(const Options &o) {
  World world;
  const char *ws = std::getenv("WORLD_SIZE");
  const bool distributed = ws && std::string(ws) != "1";
  if (distributed && o.simulate)
    throw UsageError("--simulate-ranks runs all ranks in one process; under torchrun "
                     "(WORLD_SIZE " + std::string(ws) + ") leave it out");
  runtime::Program program = runtime::readBundle(o.bundle);
  for (const std::string &fn : parallel::sequenceParallelFunctions())
    if (std::none_of(program.functions.begin(), program.functions.end(),
                     [&](const runtime::Function &f) { return f.name == fn; }))
      throw UsageError(o.bundle + ": not a sequence-parallel bundle (no @" + fn +
                       "); compile one with ls2c compile MODEL.json --program=sequence-parallel "
                       "--arch=sm_90 -o MODEL-sp.ls2b");
  const ModelDescription desc = parseModelDescription(program.description, o.bundle);
  runtime::Program train;
  if (!o.train.empty()) {
    // Before any GPU call: positions run to seq - 1 on the last rank, and
    // past the learned table they would gather outside it.
    train = runtime::readBundle(o.train);
    const ModelDescription trainDesc = parseModelDescription(train.description, o.train);
    if (o.seq > trainDesc.max_seq_len)
      throw std::invalid_argument(o.train + ": --seq " + std::to_string(o.seq) +
                                  " exceeds its max_seq_len " +
                                  std::to_string(trainDesc.max_seq_len) +
                                  " (the position table's rows)");
  }
  if (o.fp64) {
    // Float64 attention on the CPU costs about 4 B S^2 H D multiply-adds;
    // 2^34 is minutes on one core.
    const double work = 4.0 * double(o.batch) * double(o.seq) * double(o.seq) *
                        double(desc.heads) * double(desc.headDim());
    if (work > 17179869184.0)
      throw UsageError("--fp64-reference: " + std::to_string(o.batch) + " x " +
                       std::to_string(o.seq) + " tokens would take about " +
                       std::to_string(static_cast<long long>(work)) +
                       " float64 multiply-adds on the CPU, over the 2^34 allowed; use --check "
                       "(full attention on the GPU) for long sequences");
  }
  seqpar::Shape shape;
  shape.batch = o.batch;
  shape.seq = o.seq;
  shape.heads = desc.heads;
  shape.kvHeads = desc.kv_heads;
  shape.headDim = desc.headDim();
  shape.causal = isCausalLM(desc.architecture);
  shape.dtype = desc.dtype == DType::F16    ? runtime::DType::F16
                : desc.dtype == DType::BF16 ? runtime::DType::BF16
                                            : runtime::DType::F32;
  if (distributed) {
#if LS2C_HAVE_NCCL
    runtime::DistributedEnv env = runtime::parseDistributedEnv();
    seqpar::checkCuda(cudaSetDevice(env.localRank), "cudaSetDevice (LOCAL_RANK)");
    world.comm = std::make_unique<runtime::NcclCommunicator>(
        runtime::NcclCommunicator::fromEnvironment(env));
    world.rank = env.rank;
    world.size = env.worldSize;
#else
    throw UsageError("WORLD_SIZE > 1 needs NCCL, and this build found none");
#endif
  }
  const int P = distributed ? world.size : std::max(1, o.simulate);
  std::vector<int> local;
  if (distributed)
    local = {world.rank};
  else
    for (int r = 0; r < P; ++r)
      local.push_back(r);
  const bool lead = world.rank == 0;

  runtime::Executor executor(std::move(program));
  executor.setGraphs(false); // every call binds other chunk buffers
  executor.setAttentionBackend(o.attention);
  parallel::SchedulePlan plan = parallel::planSchedule(o.schedule, P, o.seq, shape.causal);

  std::unique_ptr<seqpar::Transport> transport;
#if LS2C_HAVE_NCCL
  if (world.comm)
    transport = std::make_unique<NcclTransport>(*world.comm);
#endif
  if (!transport)
    transport = std::make_unique<seqpar::CopyTransport>();

  auto describe = [&]() {
    char text[512];
    std::snprintf(text, sizeof text,
                  "\"system\": \"ls2c\", \"schedule\": \"%s\", \"ranks\": %d, \"simulated\": %s, "
                  "\"batch\": %lld, \"seq\": %lld, \"heads\": %lld, \"kv_heads\": %lld, "
                  "\"head_dim\": %lld, \"causal\": %s, \"dtype\": \"%s\"",
                  parallel::scheduleName(o.schedule), P, distributed ? "false" : "true",
                  (long long)o.batch, (long long)o.seq, (long long)shape.heads,
                  (long long)shape.kvHeads, (long long)shape.headDim,
                  shape.causal ? "true" : "false", runtime::dtypeName(shape.dtype));
    return std::string(text);
  };

  if (!o.train.empty())
    return runTrain(o, std::move(train), world, executor, plan, shape, *transport, describe());

  // Buffers first; a rank that cannot have them tells the others, so none
  // waits in NCCL for it.
  std::unique_ptr<Runner> runner;
  std::string oom;
  try {
    runner = std::make_unique<Runner>(executor, plan, shape, local, *transport);
  } catch (const RuntimeError &e) {
    if (std::strstr(e.what(), "free") == nullptr && std::strstr(e.what(), "memory") == nullptr)
      throw;
    oom = e.what();
  }
  if (world.sum({oom.empty() ? 0.0 : 1.0})[0] > 0) {
    if (!oom.empty())
      std::fprintf(stderr, "ls2c-seq-parallel: rank %d: %s\n", world.rank, oom.c_str());
    if (lead && o.jsonLine)
      std::printf("SP_RESULT {%s, \"oom\": true}\n", describe().c_str());
    std::fflush(stdout);
    return kExitOom;
  }
  if (lead)
    std::printf("%s: %s, %d rank(s)%s, %lld x %lld tokens, %lld heads (%lld kv) x %lld, %s%s; "
                "%.2f GiB of buffers per process\n",
                o.bundle.c_str(), parallel::scheduleName(o.schedule), P,
                distributed ? "" : " simulated on one GPU", (long long)o.batch,
                (long long)o.seq, (long long)shape.heads, (long long)shape.kvHeads,
                (long long)shape.headDim, runtime::dtypeName(shape.dtype),
                shape.causal ? ", causal" : "", runner->allocatedBytes() / 1073741824.0);

  // Inputs: with a check, the whole sequences (every rank draws the same);
  // otherwise each rank its own chunks.
  const int64_t qw = shape.heads * shape.headDim, kvw = shape.kvHeads * shape.headDim;
  const int64_t tokens = o.batch * o.seq;
  std::vector<double> q, k, v, dout;
  if (o.check) {
    std::mt19937_64 rng(o.seed);
    q = randomValues(static_cast<size_t>(tokens * qw), rng);
    k = randomValues(static_cast<size_t>(tokens * kvw), rng);
    v = randomValues(static_cast<size_t>(tokens * kvw), rng);
    dout = randomValues(static_cast<size_t>(tokens * qw), rng);
  }
  for (int r : local)
    for (int64_t c : plan.chunksOf(r)) {
      const int64_t lo = plan.chunkBegin(c), hi = plan.chunkEnd(c);
      const int64_t rows = runner->chunkRows(c);
      if (rows == 0)
        continue;
      std::mt19937_64 rng(o.seed * 1000003u + static_cast<uint64_t>(c));
      auto put = [&](Runner::Tensor t, const std::vector<double> &full, int64_t width) {
        if (o.check)
          upload(runner->tensor(r, c, t), chunkOf(full, o.batch, o.seq, lo, hi, width),
                 shape.dtype);
        else
          uploadRepeating(runner->tensor(r, c, t), static_cast<size_t>(rows * width), shape.dtype,
                          rng);
      };
      put(Runner::Tensor::Q, q, qw);
      put(Runner::Tensor::K, k, kvw);
      put(Runner::Tensor::V, v, kvw);
      put(Runner::Tensor::DOut, dout, qw);
    }
  // The uploads and fills ran on the legacy stream, which the non-blocking
  // streams below do not wait for.
  seqpar::checkCuda(cudaDeviceSynchronize(), "uploading the inputs");

  cudaStream_t compute = nullptr, comm = nullptr;
  seqpar::checkCuda(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), "cudaStreamCreate");
  seqpar::checkCuda(cudaStreamCreateWithFlags(&comm, cudaStreamNonBlocking), "cudaStreamCreate");
  auto once = [&]() {
    runner->forward(compute, comm);
    runner->backward(compute, comm);
  };

  int status = 0;
  std::string checkJson;
  if (o.check) {
    once();
    seqpar::checkCuda(cudaStreamSynchronize(compute), "sequence-parallel attention");
    // Full attention over the whole sequences, same bundle, this GPU.
    const int64_t bound = executor.function("attention_block_diagonal").arguments[0].maxShape[0];
    if (tokens > bound)
      throw UsageError("--check runs full attention over " + std::to_string(tokens) +
                       " tokens; the bundle is bounded at " + std::to_string(bound));
    auto dev = [&](const std::vector<double> &values, const char *what) {
      auto t = std::make_unique<runtime::DeviceBuffer>(
          std::max<size_t>(1, values.size() * runtime::dtypeBytes(shape.dtype)), what);
      upload(t->data(), values, shape.dtype);
      return t;
    };
    auto dq = dev(q, "q"), dk = dev(k, "k"), dv = dev(v, "v"), ddo = dev(dout, "dout");
    runtime::DeviceBuffer out(static_cast<size_t>(tokens * qw) * runtime::dtypeBytes(shape.dtype),
                              "full out"),
        lse(static_cast<size_t>(tokens * shape.heads) * 4, "full lse"),
        gq(static_cast<size_t>(tokens * qw) * runtime::dtypeBytes(shape.dtype), "full dq"),
        gk(static_cast<size_t>(tokens * kvw) * runtime::dtypeBytes(shape.dtype), "full dk"),
        gv(static_cast<size_t>(tokens * kvw) * runtime::dtypeBytes(shape.dtype), "full dv");
    std::vector<int32_t> cuHost;
    for (int64_t b = 0; b <= o.batch; ++b)
      cuHost.push_back(static_cast<int32_t>(b * o.seq));
    runtime::DeviceBuffer cu(cuHost.size() * 4, "cu_seqlens");
    cu.upload(cuHost.data(), cuHost.size() * 4);
    runtime::Executor::Call f;
    f.arguments = {dq->data(), dk->data(), dv->data(), cu.data()};
    f.argumentShapes = {{tokens, shape.heads, shape.headDim},
                        {tokens, shape.kvHeads, shape.headDim},
                        {tokens, shape.kvHeads, shape.headDim},
                        {o.batch + 1}};
    f.results = {out.data(), lse.data()};
    executor.run("attention_block_diagonal", f, compute);
    runtime::Executor::Call g;
    g.arguments = {ddo->data(), dq->data(), dk->data(), dv->data(), out.data(), lse.data(),
                   cu.data()};
    g.argumentShapes = {f.argumentShapes[0], f.argumentShapes[0], f.argumentShapes[1],
                        f.argumentShapes[1], f.argumentShapes[0], {tokens, shape.heads},
                        {o.batch + 1}};
    g.results = {gq.data(), gk.data(), gv.data()};
    executor.run("attention_block_grad_diagonal", g, compute);
    seqpar::checkCuda(cudaStreamSynchronize(compute), "full attention");
    std::vector<double> full[5] = {
        download(out.data(), static_cast<size_t>(tokens * qw), shape.dtype),
        download(lse.data(), static_cast<size_t>(tokens * shape.heads), runtime::DType::F32),
        download(gq.data(), static_cast<size_t>(tokens * qw), shape.dtype),
        download(gk.data(), static_cast<size_t>(tokens * kvw), shape.dtype),
        download(gv.data(), static_cast<size_t>(tokens * kvw), shape.dtype)};
    // The float64 definition, sequence by sequence.
    std::vector<double> exact[5];
    if (o.fp64) {
      parallel::AttentionShape as;
      as.tokens = o.seq;
      as.heads = shape.heads;
      as.kvHeads = shape.kvHeads;
      as.headDim = shape.headDim;
      as.causal = shape.causal;
      as.scale = 1.0 / std::sqrt(static_cast<double>(shape.headDim));
      // The inputs as the GPU sees them: rounded to the compute dtype.
      auto rounded = [&](const std::vector<double> &x) {
        return runtime::decodeValues(runtime::encodeValues(x, shape.dtype), shape.dtype);
      };
      std::vector<double> rq = rounded(q), rk = rounded(k), rv = rounded(v), rd = rounded(dout);
      for (int64_t b = 0; b < o.batch; ++b) {
        auto seqOf = [&](const std::vector<double> &x, int64_t w) {
          return std::vector<double>(x.begin() + b * o.seq * w, x.begin() + (b + 1) * o.seq * w);
        };
        parallel::AttentionForward fw =
            parallel::attentionForward(as, seqOf(rq, qw), seqOf(rk, kvw), seqOf(rv, kvw));
        parallel::AttentionBackward bw = parallel::attentionBackward(
            as, seqOf(rq, qw), seqOf(rk, kvw), seqOf(rv, kvw), fw, seqOf(rd, qw));
        exact[0].insert(exact[0].end(), fw.out.begin(), fw.out.end());
        exact[1].insert(exact[1].end(), fw.lse.begin(), fw.lse.end());
        exact[2].insert(exact[2].end(), bw.dq.begin(), bw.dq.end());
        exact[3].insert(exact[3].end(), bw.dk.begin(), bw.dk.end());
        exact[4].insert(exact[4].end(), bw.dv.begin(), bw.dv.end());
      }
    }
    ErrorSums vsFull{std::vector<double>(5), std::vector<double>(5)};
    ErrorSums vsExact{std::vector<double>(5), std::vector<double>(5)};
    ErrorSums fullVsExact{std::vector<double>(5), std::vector<double>(5)};
    const Runner::Tensor which[5] = {Runner::Tensor::Out, Runner::Tensor::Lse, Runner::Tensor::DQ,
                                     Runner::Tensor::DK, Runner::Tensor::DV};
    const int64_t widths[5] = {qw, shape.heads, qw, kvw, kvw};
    for (int r : local)
      for (int64_t c : plan.chunksOf(r)) {
        const int64_t rows = runner->chunkRows(c);
        if (rows == 0)
          continue;
        const int64_t lo = plan.chunkBegin(c), hi = plan.chunkEnd(c);
        for (size_t i = 0; i < 5; ++i) {
          runtime::DType dt = i == 1 ? runtime::DType::F32 : shape.dtype;
          std::vector<double> got =
              download(runner->tensor(r, c, which[i]), static_cast<size_t>(rows * widths[i]), dt);
          std::vector<double> want = chunkOf(full[i], o.batch, o.seq, lo, hi, widths[i]);
          vsFull.add(i, got, want);
          if (o.fp64) {
            std::vector<double> ex = chunkOf(exact[i], o.batch, o.seq, lo, hi, widths[i]);
            vsExact.add(i, got, ex);
            fullVsExact.add(i, want, ex);
          }
        }
      }
    std::vector<double> sums;
    for (ErrorSums *e : {&vsFull, &vsExact, &fullVsExact}) {
      sums.insert(sums.end(), e->diff.begin(), e->diff.end());
      sums.insert(sums.end(), e->ref.begin(), e->ref.end());
    }
    sums = world.sum(sums);
    const double tolFull = shape.dtype == runtime::DType::BF16  ? 2.5e-2
                           : shape.dtype == runtime::DType::F16 ? 5e-3
                                                                : 1e-5;
    const double tolExact = shape.dtype == runtime::DType::BF16  ? 2e-2
                            : shape.dtype == runtime::DType::F16 ? 5e-3
                                                                 : 1e-5;
    checkJson = ", \"check\": {";
    for (size_t i = 0; i < 5; ++i) {
      auto rel = [&](size_t block) {
        double d = sums[block * 10 + i], r = sums[block * 10 + 5 + i];
        return r > 0 ? std::sqrt(d / r) : std::sqrt(d);
      };
      const double e = rel(0);
      bool ok = e <= tolFull;
      auto g3 = [](double x) {
        char b[32];
        std::snprintf(b, sizeof b, "%.3g", x);
        return std::string(b);
      };
      std::string line = std::string(kTensorNames[i]) + ": against full attention " + g3(e) +
                         " (tolerance " + g3(tolFull) + ")";
      char js[200];
      std::snprintf(js, sizeof js, "%s\"%s\": {\"vs_full\": %.3g", i ? ", " : "",
                    kTensorNames[i], e);
      checkJson += js;
      if (o.fp64) {
        const double x = rel(1), fx = rel(2);
        ok = ok && x <= tolExact;
        line += "; against float64 " + g3(x) + " (full attention's own " + g3(fx) +
                "; tolerance " + g3(tolExact) + ")";
        std::snprintf(js, sizeof js, ", \"vs_fp64\": %.3g, \"full_vs_fp64\": %.3g", x, fx);
        checkJson += js;
      }
      checkJson += std::string(", \"pass\": ") + (ok ? "true" : "false") + "}";
      if (lead)
        std::printf("  %s %s\n", ok ? "ok  " : "FAIL", line.c_str());
      if (!ok)
        status = kExitCheck;
    }
    checkJson += "}";
    if (lead)
      std::printf("check: %s\n", status ? "FAILED" : "passed");
  }

  std::string timeJson;
  if (o.time > 0) {
    cudaEvent_t ev[3];
    for (cudaEvent_t &e : ev)
      seqpar::checkCuda(cudaEventCreate(&e), "cudaEventCreate");
    std::vector<double> fwd, bwd;
    for (int i = 0; i < o.warmup + o.time; ++i) {
      world.barrier();
      seqpar::checkCuda(cudaEventRecord(ev[0], compute), "cudaEventRecord");
      runner->forward(compute, comm);
      seqpar::checkCuda(cudaEventRecord(ev[1], compute), "cudaEventRecord");
      runner->backward(compute, comm);
      seqpar::checkCuda(cudaEventRecord(ev[2], compute), "cudaEventRecord");
      seqpar::checkCuda(cudaEventSynchronize(ev[2]), "sequence-parallel attention");
      float a = 0, b = 0;
      seqpar::checkCuda(cudaEventElapsedTime(&a, ev[0], ev[1]), "cudaEventElapsedTime");
      seqpar::checkCuda(cudaEventElapsedTime(&b, ev[1], ev[2]), "cudaEventElapsedTime");
      if (i >= o.warmup) {
        fwd.push_back(a);
        bwd.push_back(b);
      }
    }
    for (cudaEvent_t e : ev)
      cudaEventDestroy(e);
    // The slowest rank's medians.
    std::vector<double> mine(2 * static_cast<size_t>(world.size), 0.0);
    mine[2 * static_cast<size_t>(world.rank)] = median(fwd);
    mine[2 * static_cast<size_t>(world.rank) + 1] = median(bwd);
    std::vector<double> all = world.sum(mine);
    Timing t;
    for (int r = 0; r < world.size; ++r) {
      t.forwardMs = std::max(t.forwardMs, all[2 * static_cast<size_t>(r)]);
      t.backwardMs = std::max(t.backwardMs, all[2 * static_cast<size_t>(r) + 1]);
    }
    const double step = t.forwardMs + t.backwardMs;
    // Attention FLOPs: forward 4 B S^2 H D (half when causal), backward 2.5x.
    const double fwdFlops = 4.0 * o.batch * double(o.seq) * double(o.seq) * shape.heads *
                            shape.headDim * (shape.causal ? 0.5 : 1.0);
    // Per GPU: simulated ranks all run on one.
    const double tflops = fwdFlops * 3.5 / (step * 1e-3) / world.size / 1e12;
    size_t freeB = 0, totalB = 0;
    seqpar::checkCuda(cudaMemGetInfo(&freeB, &totalB), "cudaMemGetInfo");
    const double usedGiB = double(totalB - freeB) / 1073741824.0;
    std::vector<double> used(static_cast<size_t>(world.size), 0.0);
    used[static_cast<size_t>(world.rank)] = usedGiB;
    used = world.sum(used);
    const double maxUsed = *std::max_element(used.begin(), used.end());
    if (lead)
      std::printf("time: forward %.3f ms, backward %.3f ms, step %.3f ms (median of %d, slowest "
                  "rank); %.0f tokens/s; %.1f attention TFLOP/s per GPU; %.2f GiB in use\n",
                  t.forwardMs, t.backwardMs, step, o.time, tokens / (step * 1e-3), tflops,
                  maxUsed);
    char js[400];
    std::snprintf(js, sizeof js,
                  ", \"forward_ms\": %.4f, \"backward_ms\": %.4f, \"step_ms\": %.4f, "
                  "\"tokens_per_s\": %.1f, \"tflops_per_gpu\": %.2f, \"max_memory_gib\": %.3f, "
                  "\"iters\": %d",
                  t.forwardMs, t.backwardMs, step, tokens / (step * 1e-3), tflops, maxUsed,
                  o.time);
    timeJson = js;
  }
  if (lead && o.jsonLine)
    std::printf("SP_RESULT {%s%s%s}\n", describe().c_str(), timeJson.c_str(), checkJson.c_str());
  std::fflush(stdout);
  cudaStreamDestroy(compute);
  cudaStreamDestroy(comm);
  return status;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(parse(argc, argv));
  } catch (const UsageError &e) {
    std::fprintf(stderr, "ls2c-seq-parallel: error: %s\n%s\n", e.what(), kUsage);
    return kExitUsage;
  } catch (const runtime::BundleError &e) {
    std::fprintf(stderr, "ls2c-seq-parallel: error: %s\n", e.what());
    return kExitUsage;
  } catch (const DescriptionError &e) {
    std::fprintf(stderr, "ls2c-seq-parallel: error: %s\n", e.what());
    return kExitUsage;
  } catch (const std::invalid_argument &e) {
    std::fprintf(stderr, "ls2c-seq-parallel: error: %s\n", e.what());
    return kExitUsage;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ls2c-seq-parallel: error: %s\n", e.what());
    return 1;
  }
}
