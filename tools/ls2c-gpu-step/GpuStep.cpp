//===- GpuStep.cpp - K train steps of a bundle on the GPU -----------------===//
//
// ls2c-gpu-step BUNDLE (--params P.safetensors | --init-seed S)
//               --batch B.safetensors [-o OUT] [--steps K] [--dropout-seed N]
//               [--profile] [--time] [--no-graphs] [--save-params P.safetensors]
//               [--data-parallel [--no-overlap | --reduce-dtype bf16] |
//                --simulate-ranks N]
//
// The GPU twin of `ls2c step` (lib/Trainer/ReferenceStep.cpp): the same
// inputs and the same output file (per-step loss, grad_norm and lr; the
// first step's unscaled gradients and the final parameters, by reference
// name), computed by the runtime executing the bundle's @accumulate_gradients
// and @optimizer_step. Comparing the two files checks the whole compiled
// program on a GPU against the CPU reference. No MLIR: it runs on the GPU
// machine. --init-seed initializes the parameters as the description says
// (for models too big to carry a parameter file); --profile times every
// step of the last train step with CUDA events and prints them by kernel;
// --time measures every train step's device time (gradient zeroing,
// @accumulate_gradients and @optimizer_step, CUDA events on the stream, CUDA
// graphs as configured; with --data-parallel the gradient all-reduces too,
// inside @accumulate_gradients or, with --no-overlap, printed apart) and the
// device memory in use; --save-params writes the initial parameters by
// reference name (F32) so another framework can start from the same bits.
// --data-parallel runs one process per GPU as torchrun starts them
// (DataParallel.h): each rank reads its own batch (--batch's "{rank}"
// replaced by its rank), the gradients are summed over the ranks bucket by
// bucket while @accumulate_gradients runs (GradientReduceSchedule.h; with
// --no-overlap, in one all-reduce after it) and averaged by
// @optimizer_step (micro_batches = world size); the first-step gradients
// written are that mean. --simulate-ranks N runs N ranks in turn on one GPU
// (batches "{rank}" = 0 .. N-1), their buckets summed by the same schedule
// (SimulatedRanks.h): it must match --data-parallel on N GPUs and one GPU on
// all N batches. --reduce-dtype bf16 all-reduces bf16 copies of the buckets
// (BucketCast.h).
// Every call reuses its buffers (state results are written over the state
// where the compiler allows it, else swap with the state they replace),
// so the executor's CUDA graphs are captured in the first steps and
// replayed after; --no-graphs runs every step by step, and the output
// must be the same bit for bit.
//
//===----------------------------------------------------------------------===//

#include "ls2c/Runtime/Bundle.h"
#include "ls2c/Runtime/DataParallel.h"
#include "ls2c/Runtime/DeviceTensors.h"
#include "ls2c/Runtime/Executor.h"
#include "ls2c/Runtime/GradientBuckets.h"
#include "ls2c/Runtime/GradientReduceSchedule.h"
#include "ls2c/Runtime/Rendezvous.h"
#include "ls2c/Runtime/SimulatedRanks.h"
#include "ls2c/Model/BatchIds.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Model/ParameterLayout.h"
#include "ls2c/Support/AtomicFile.h"
#include "ls2c/Support/Safetensors.h"
#include "ls2c/Training/Workspace.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using ls2c::readSafetensors;
using ls2c::writeSafetensors;
using ls2c::SafetensorsFile;
using ls2c::floatTensor;
using ls2c::floatValues;
using ls2c::intValues;
using ls2c::sinusoidalTable;
using namespace ls2c::runtime;

namespace {

/// Bad input the user can fix (a batch or parameter file): exit 2, as ls2c.
class InputError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Offsets of packed sequences: from 0, never decreasing, ending at the
/// `tokens` they split (when known, >= 0); "" or the refusal.
std::string checkOffsets(const std::string &name, const std::vector<int64_t> &cu, int64_t tokens,
                         const std::string &tokensName) {
  if (cu.empty() || cu.front() != 0)
    return "batch input '" + name + "' must start at 0";
  for (size_t i = 1; i < cu.size(); ++i)
    if (cu[i] < cu[i - 1])
      return "batch input '" + name + "' decreases at element " + std::to_string(i) + " (" +
             std::to_string(cu[i - 1]) + " then " + std::to_string(cu[i]) + ")";
  if (tokens >= 0 && cu.back() != tokens)
    return "batch input '" + name + "' ends at " + std::to_string(cu.back()) + ", but '" +
           tokensName + "' holds " + std::to_string(tokens) + " tokens";
  return "";
}

struct Options {
  std::string bundle, params, batch, output;
  int64_t steps = 1;
  int64_t dropoutSeed = 0;
  int64_t initSeed = -1; ///< >= 0: initialize parameters (no --params)
  bool profile = false;  ///< time every step of the last train step
  bool time = false;     ///< device time of each train step, device memory
  std::string saveParams; ///< write the initial parameters here
  bool graphs = true;    ///< the executor's CUDA graphs (--no-graphs)
  bool dataParallel = false; ///< one process per GPU, NCCL (DataParallel.h)
  bool overlap = true;       ///< --data-parallel: buckets during backward
  DType reduceDType = DType::F32; ///< --reduce-dtype: the all-reduce's dtype
  int simulateRanks = 0;     ///< > 0: that many ranks in turn (SimulatedRanks.h)
  AttentionBackend attention = AttentionBackend::Kernels; ///< --attention
};

/// A CUDA event pair on the legacy default stream, where the executor and
/// the buffer fills run.
class StepTimer {
public:
  StepTimer() {
    for (cudaEvent_t *e : {&start, &end})
      if (cudaError_t r = cudaEventCreate(e); r != cudaSuccess)
        throw RuntimeError(std::string("cudaEventCreate: ") + cudaGetErrorString(r));
  }
  ~StepTimer() {
    cudaEventDestroy(start);
    cudaEventDestroy(end);
  }
  StepTimer(const StepTimer &) = delete;
  StepTimer &operator=(const StepTimer &) = delete;
  void begin() { cudaEventRecord(start, nullptr); }
  void finish() { cudaEventRecord(end, nullptr); }
  /// Milliseconds between begin() and finish() (waits for finish()).
  float milliseconds() const {
    float ms = 0;
    if (cudaError_t r = cudaEventSynchronize(end); r != cudaSuccess)
      throw RuntimeError(std::string("cudaEventSynchronize: ") + cudaGetErrorString(r));
    cudaEventElapsedTime(&ms, start, end);
    return ms;
  }

private:
  cudaEvent_t start = nullptr, end = nullptr;
};

/// Bytes of device memory in use (total minus free, this process and any
/// other on the device).
size_t deviceBytesInUse() {
  size_t free = 0, total = 0;
  if (cudaError_t r = cudaMemGetInfo(&free, &total); r != cudaSuccess)
    throw RuntimeError(std::string("cudaMemGetInfo: ") + cudaGetErrorString(r));
  return total - free;
}

/// A workspace tensor's fp32 values on the host (`bytes` of them).
std::vector<float> downloadFloats(const DeviceTensor &t, size_t bytes) {
  std::vector<float> v(bytes / sizeof(float));
  t.buffer.download(v.data(), bytes);
  return v;
}

/// One parameter's values of a workspace vector, widened and divided by
/// `divisor` in double: the output file's F64 rows.
std::vector<double> slotValues(const std::vector<float> &workspace, const ParameterSlot &slot,
                               double divisor) {
  auto first = workspace.begin() + static_cast<long>(slot.offset);
  std::vector<double> v(first, first + static_cast<long>(numel(slot.shape)));
  if (divisor != 1.0)
    for (double &x : v)
      x /= divisor;
  return v;
}

/// The last train step's steps by label, slowest first, as a table.
void printProfile(const std::vector<std::pair<std::string, float>> &times) {
  std::map<std::string, std::pair<double, int>> byLabel;
  double total = 0;
  for (const auto &[label, ms] : times) {
    byLabel[label].first += ms;
    byLabel[label].second += 1;
    total += ms;
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> rows(byLabel.begin(),
                                                                   byLabel.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto &a, const auto &b) { return a.second.first > b.second.first; });
  std::printf("profile of the last train step: %.3f ms in %zu steps\n", total, times.size());
  std::printf("  %10s %6s %6s  %s\n", "ms", "share", "calls", "step");
  for (const auto &[label, v] : rows)
    std::printf("  %10.3f %5.1f%% %6d  %s\n", v.first, 100.0 * v.first / total, v.second,
                label.c_str());
}


/// A rank's batch on the host: the values of @accumulate_gradients' batch
/// inputs, with their shapes.
struct HostBatch {
  std::map<std::string, std::vector<double>> values;
  std::map<std::string, std::vector<int64_t>> shapes;
};

/// The training state the tools bind by name (not read from a batch).
bool isStateName(const std::string &name) {
  static const char *const kState[] = {"master_weights", "exp_avg",       "exp_avg_sq",
                                       "loss_scale",     "step",          "good_steps",
                                       "micro_batches",  "dropout_seed",  "dropout_offset",
                                       "gradients"};
  return std::find(std::begin(kState), std::end(kState), name) != std::end(kState);
}

/// Reads and checks the batch at `path`; throws InputError naming the file,
/// the input and the rule.
HostBatch readBatch(const std::string &path, const Function &accumulate,
                    const ls2c::ModelDescription &desc) {
  SafetensorsFile batch;
  try {
    batch = readSafetensors(path);
  } catch (const ls2c::SafetensorsError &e) {
    throw InputError(e.what());
  }
  HostBatch out;
  std::map<std::string, std::vector<int64_t>> ints;
  for (const TensorSpec &spec : accumulate.arguments) {
    if (spec.kind != ArgumentKind::Input || isStateName(spec.name))
      continue;
    auto it = batch.tensors.find(spec.name);
    if (it == batch.tensors.end())
      throw InputError(path + ": missing batch input '" + spec.name + "'");
    const std::string what = path + ": " + spec.name;
    try {
      if (spec.dtype == DType::F32 || spec.dtype == DType::F16 || spec.dtype == DType::BF16) {
        out.values[spec.name] = floatValues(it->second, what);
      } else {
        ints[spec.name] = intValues(it->second, what);
        out.values[spec.name].assign(ints[spec.name].begin(), ints[spec.name].end());
      }
    } catch (const ls2c::SafetensorsError &e) {
      throw InputError(e.what());
    }
    out.shapes[spec.name] = it->second.shape;
  }
  const std::map<std::string, ls2c::BatchIdRange> idRanges = ls2c::batchIdRanges(desc);
  for (const auto &[name, values] : ints) {
    if (std::string bad = ls2c::checkBatchIds(idRanges, name, values); !bad.empty())
      throw InputError(path + ": " + bad);
    if (name.size() < 10 || name.compare(name.size() - 10, 10, "cu_seqlens") != 0)
      continue;
    // The tokens these offsets split (a ViT's: its images' patches and class tokens).
    const std::string ids = name == "cu_seqlens" ? "input_ids" : name.substr(0, 4) + "ids";
    int64_t tokens = ints.count(ids) ? static_cast<int64_t>(ints.at(ids).size()) : -1;
    std::string tokensName = ids;
    if (desc.architecture == ls2c::Architecture::ViT && out.shapes.count("pixels")) {
      tokens = out.shapes.at("pixels").at(0) * (desc.numPatches() + 1);
      tokensName = "pixels";
    }
    if (std::string bad = checkOffsets(name, values, tokens, tokensName); !bad.empty())
      throw InputError(path + ": " + bad);
    // Sequences longer than max_seq_len are refused before any launch: the
    // program's plans (cuDNN's attention grids among them) are made for at
    // most that many tokens per sequence.
    if (std::string bad = ls2c::checkSequenceLengths(name, values, desc.max_seq_len);
        !bad.empty())
      throw InputError(path + ": " + bad);
  }
  // The gathered masked-LM head holds max_predictions rows.
  if (ints.count("labels"))
    if (std::string bad = ls2c::checkLabelCount(desc, ints.at("labels")); !bad.empty())
      throw InputError(path + ": " + bad);
  return out;
}

int run(const Options &o) {
  // The bundle first (a file, no CUDA): a bad path is reported as such.
  Program program = readBundle(o.bundle);
  // Before any CUDA allocation: it selects this rank's device.
  std::unique_ptr<DataParallel> dp;
  if (o.dataParallel)
    dp = DataParallel::fromEnvironment();
  const int rank = dp ? dp->rank() : 0;
  const int worldSize = dp ? dp->worldSize() : std::max(1, o.simulateRanks);
  const std::string batchPath = perRankPath(o.batch, rank);
  const std::string prefix = dp ? "rank " + std::to_string(rank) + ": " : "";

  // The description the bundle was compiled from: the initialization and
  // the bucket size.
  const ls2c::ModelDescription desc = ls2c::parseModelDescription(program.description, o.bundle);

  // The batches of @accumulate_gradients on the host, checked before any
  // CUDA call: one per simulated rank (--simulate-ranks), else this rank's.
  // Every id, position and label against its table or classes, the
  // sequence offsets against the tokens (the generated kernels read where
  // they point).
  const Function *accumulateSpec = nullptr;
  for (const Function &f : program.functions)
    if (f.name == "accumulate_gradients")
      accumulateSpec = &f;
  if (!accumulateSpec)
    throw InputError(o.bundle + ": not a train bundle (no @accumulate_gradients; compile it "
                                "with ls2c compile MODEL.json --arch=sm_90)");
  std::vector<HostBatch> hostBatches;
  if (o.simulateRanks > 0)
    for (int r = 0; r < o.simulateRanks; ++r)
      hostBatches.push_back(readBatch(perRankPath(o.batch, r), *accumulateSpec, desc));
  else
    hostBatches.push_back(readBatch(batchPath, *accumulateSpec, desc));

  // Parameters into the fp32 master workspace, by reference name (or
  // initialized as the description says). Held as float on the host, as on
  // the device: a 1.3B model's workspace is 5.2 GB so, not 10.4.
  std::vector<float> master;
  if (o.initSeed >= 0) {
    ls2c::ParameterLayout layout = ls2c::buildParameterLayout(desc);
    ls2c::WorkspaceLayout ws = ls2c::planWorkspace(layout);
    master = ls2c::initializeWorkspace(ws, static_cast<uint64_t>(o.initSeed));
    if (master.size() != program.workspaceElements)
      throw RuntimeError(o.bundle + ": its description plans another workspace size");
  } else {
    master.assign(program.workspaceElements, 0.0f);
  }
  SafetensorsFile params;
  if (o.initSeed < 0) {
    try {
      params = readSafetensors(o.params);
    } catch (const ls2c::SafetensorsError &e) {
      throw InputError(e.what());
    }
  }
  for (const ParameterSlot &slot : program.parameters) {
    if (o.initSeed >= 0)
      break;
    auto it = params.tensors.find(slot.name);
    if (it == params.tensors.end())
      throw InputError(o.params + ": missing parameter '" + slot.name + "'");
    if (it->second.shape != slot.shape)
      throw InputError(o.params + ": parameter '" + slot.name + "' has the wrong shape");
    std::vector<double> v;
    try {
      v = floatValues(it->second, o.params + ": " + slot.name);
    } catch (const ls2c::SafetensorsError &e) {
      throw InputError(e.what());
    }
    // Rounded to fp32 here as the upload did before: the master is fp32.
    std::transform(v.begin(), v.end(), master.begin() + static_cast<long>(slot.offset),
                   [](double x) { return static_cast<float>(x); });
  }
  if (!o.saveParams.empty() && rank == 0) {
    SafetensorsFile initial;
    for (const ParameterSlot &slot : program.parameters) {
      std::vector<double> v = slotValues(master, slot, 1.0);
      initial.tensors[slot.name] = floatTensor("F32", slot.shape, v.data(), v.size());
    }
    initial.metadata = {{"ls2c.model", program.modelName}};
    writeSafetensors(o.saveParams, initial);
  }

  Executor executor(program);
  executor.setGraphs(o.graphs);
  executor.setAttentionBackend(o.attention);
  std::printf("%s: model %s on %s, %zu kernels\n", o.bundle.c_str(),
              program.modelName.c_str(), executor.arch().c_str(), program.kernels.size());

  // Each rank's batch and the buffers (sinusoidal tables) on the device.
  auto uploadInputs = [&](const HostBatch &batch) {
    std::map<std::string, DeviceTensor> inputs;
    for (const TensorSpec &spec : accumulateSpec->arguments) {
      if (spec.kind == ArgumentKind::Buffer) {
        std::vector<double> table = sinusoidalTable(spec.maxShape[0], spec.maxShape[1]);
        inputs[spec.name] =
            uploadTensor(table, spec.maxShape, spec.dtype, specBytes(spec), spec.name);
      } else if (auto it = batch.values.find(spec.name); it != batch.values.end()) {
        inputs[spec.name] = uploadTensor(it->second, batch.shapes.at(spec.name), spec.dtype,
                                         specBytes(spec), spec.name);
      }
    }
    return inputs;
  };
  std::vector<std::map<std::string, DeviceTensor>> rankInputs;
  for (const HostBatch &batch : hostBatches)
    rankInputs.push_back(uploadInputs(batch));
  hostBatches.clear();

  // The training state by name, as the functions take and return it.
  const Function &accumulate = executor.function("accumulate_gradients");
  const Function &optimizer = executor.function("optimizer_step");
  std::map<std::string, DeviceTensor> state;
  std::vector<int64_t> ws = {static_cast<int64_t>(program.workspaceElements)};
  size_t wsBytes = program.workspaceElements * 4;
  state["master_weights"] = uploadFloats(master, ws, "master weights");
  std::vector<float>().swap(master); // frees it (clear() would keep the capacity)
  state["exp_avg"] = zeroTensor(ws, DType::F32, wsBytes, "exp_avg");
  state["exp_avg_sq"] = zeroTensor(ws, DType::F32, wsBytes, "exp_avg_sq");
  state["loss_scale"] =
      uploadTensor({program.computeDType == "f16" ? 65536.0 : 1.0}, {}, DType::F32, 4, "loss scale");
  state["step"] = uploadTensor({0.0}, {}, DType::I64, 8, "step");
  state["good_steps"] = uploadTensor({0.0}, {}, DType::I64, 8, "good steps");
  // The optimizer divides the summed gradients by this: the ranks' mean.
  state["micro_batches"] =
      uploadTensor({static_cast<double>(worldSize)}, {}, DType::F32, 4, "micro batches");
  state["dropout_seed"] =
      uploadTensor({static_cast<double>(o.dropoutSeed)}, {}, DType::I64, 8, "dropout seed");
  state["dropout_offset"] = uploadTensor({0.0}, {}, DType::I64, 8, "offset");
  state["gradients"] = zeroTensor(ws, DType::F32, wsBytes, "gradients");

  // Gradient buckets reduced while backward runs (GradientReduceSchedule.h):
  // over NCCL, or into a sum over simulated ranks.
  std::unique_ptr<SimulatedRankReducer> simulated;
  std::unique_ptr<BucketReducer> ncclReducer;
  std::unique_ptr<GradientReduceSchedule> schedule;
  if ((dp && o.overlap) || o.simulateRanks > 0) {
    BucketReducer *reducer = nullptr;
    if (dp) {
      ncclReducer = dp->makeBucketReducer(o.reduceDType, program.workspaceElements);
      reducer = ncclReducer.get();
    } else {
      simulated = std::make_unique<SimulatedRankReducer>(program.workspaceElements);
      reducer = simulated.get();
    }
    // Buckets as large as the compiler's accumulation groups (the
    // description's optimizer.bucket_cap_mb), so each group is one bucket.
    BucketOptions bucketOptions;
    bucketOptions.reduceDType = o.reduceDType;
    bucketOptions.maxBucketBytes =
        static_cast<uint64_t>(desc.optimizer.bucket_cap_mb * double(1 << 20));
    schedule = std::make_unique<GradientReduceSchedule>(
        planGradientBuckets(program, bucketOptions), *reducer);
    const GradientBucketPlan &plan = schedule->plan();
    std::printf("%sgradient buckets: %zu, the first ready after step %lld of %zu of @%s%s%s\n",
                prefix.c_str(), plan.buckets.size(),
                static_cast<long long>(plan.buckets.front().readyStep),
                plan.readiness.stepCount, plan.readiness.function.c_str(),
                plan.readiness.note.empty() ? "" : "; ", plan.readiness.note.c_str());
    executor.setStepHook([&s = *schedule](const Function &f, const Executor::Call &c,
                                          size_t step, cudaStream_t stream) {
      s.afterStep(f, c, step, stream);
    });
  }

  // One call of `f`: arguments by name; results whose name is state replace
  // it, written over it in place or into a spare that then swaps with it
  // (adoptResults), the others land in outputs[f]. Buffers are reused so
  // that the calls' pointers repeat and their CUDA graphs replay.
  std::map<std::string, std::map<std::string, DeviceTensor>> outputs;
  std::map<std::string, DeviceTensor> spare;
  auto call = [&](const Function &f, StepTimer *timer,
                  const std::map<std::string, DeviceTensor> &inputs)
      -> std::map<std::string, DeviceTensor> & {
    Executor::Call c = bindArguments(f, state, inputs);
    std::map<std::string, DeviceTensor> &out = outputs[f.name];
    bindResults(f, c, state, spare, out);
    executor.run(f.name, c);
    timer->finish();
    if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
      throw RuntimeError("@" + f.name + ": " + cudaGetErrorString(e));
    adoptResults(f, state, spare);
    return out;
  };

  // Only a rank that writes -o keeps the first step's gradients (fp32, as
  // on the device; a 5.2 GB copy at 1.3B parameters).
  const bool writesOutput =
      !o.output.empty() && (rank == 0 || o.output.find("{rank}") != std::string::npos);
  std::vector<double> losses, norms, rates;
  std::vector<float> firstGradients;
  double firstGradientScale = 1.0;
  StepTimer accumulateTimer, optimizerTimer, reduceTimer;
  size_t peakBytes = 0;
  for (int64_t k = 0; k < o.steps; ++k) {
    executor.setTiming(o.profile && k + 1 == o.steps);
    int64_t offset = k;
    state.at("dropout_offset").buffer.upload(&offset, 8);
    accumulateTimer.begin();
    double loss = 0;
    for (const auto &inputs : rankInputs) {
      state.at("gradients").buffer.fill(0);
      auto &out = call(accumulate, &accumulateTimer, inputs);
      loss += downloadTensor(out.at("loss"))[0] / static_cast<double>(rankInputs.size());
      if (schedule && schedule->reducedLastRun() != schedule->plan().buckets.size())
        throw RuntimeError("@accumulate_gradients reduced " +
                           std::to_string(schedule->reducedLastRun()) + " of " +
                           std::to_string(schedule->plan().buckets.size()) +
                           " gradient buckets");
    }
    if (simulated)
      simulated->takeSum(static_cast<float *>(state.at("gradients").buffer.data()));
    if (dp && !o.overlap) {
      // On the legacy default stream, as the functions: the NCCL kernel's
      // time, waiting for the slowest rank included (as DDP's step is).
      reduceTimer.begin();
      dp->sumGradients(state.at("gradients").buffer.data(), program.workspaceElements);
      reduceTimer.finish();
    }
    losses.push_back(loss);
    if (k == 0 && writesOutput) {
      firstGradients = downloadFloats(state.at("gradients"), wsBytes);
      firstGradientScale = downloadTensor(state.at("loss_scale"))[0] * worldSize;
    }
    std::vector<std::pair<std::string, float>> times;
    if (o.profile && k + 1 == o.steps)
      times = executor.stepTimes();
    optimizerTimer.begin();
    auto &opt = call(optimizer, &optimizerTimer, rankInputs.front());
    float reduceMs = dp && !o.overlap ? reduceTimer.milliseconds() : 0.0f;
    float stepMs = accumulateTimer.milliseconds() + reduceMs + optimizerTimer.milliseconds();
    peakBytes = std::max(peakBytes, deviceBytesInUse());
    if (o.profile && k + 1 == o.steps) {
      for (const auto &t : executor.stepTimes())
        times.push_back(t);
      printProfile(times);
    }
    norms.push_back(downloadTensor(opt.at("grad_norm"))[0]);
    rates.push_back(downloadTensor(opt.at("lr"))[0]);
    std::printf("%sstep %lld: loss %.6f, grad norm %.6f, lr %.3g", prefix.c_str(),
                static_cast<long long>(k + 1), losses.back(), norms.back(), rates.back());
    if (o.time)
      std::printf(", time %.3f ms", stepMs);
    // The buckets' all-reduces run inside @accumulate_gradients' time.
    if (o.time && dp)
      std::printf(o.overlap ? " (all-reduce overlapped)" : " (all-reduce %.3f ms)", reduceMs);
    std::printf("\n");
    // A step of a long sequence takes minutes: each is reported as it ends,
    // with the memory in use so far, for a caller that stops the run.
    if (o.time)
      std::printf("%sdevice memory so far: %zu bytes\n", prefix.c_str(), peakBytes);
    std::fflush(stdout);
  }
  if (o.time)
    std::printf("device memory: peak %zu bytes (in use after a step, cudaMemGetInfo)\n",
                peakBytes);

  GraphStats g = executor.graphStats();
  std::printf("CUDA graphs %s: %llu captured, %llu replayed, %llu runs step by step\n",
              o.graphs ? "on" : "off", static_cast<unsigned long long>(g.captures),
              static_cast<unsigned long long>(g.replays),
              static_cast<unsigned long long>(g.eagerRuns));

  // With --data-parallel every rank holds the same parameters: rank 0
  // writes, or each rank when -o names "{rank}".
  if (!writesOutput)
    return 0;
  std::vector<float> finalMaster = downloadFloats(state.at("master_weights"), wsBytes);
  SafetensorsFile file;
  std::vector<int64_t> perStep = {o.steps};
  size_t n = static_cast<size_t>(o.steps);
  file.tensors["loss"] = floatTensor("F64", perStep, losses.data(), n);
  file.tensors["grad_norm"] = floatTensor("F64", perStep, norms.data(), n);
  file.tensors["lr"] = floatTensor("F64", perStep, rates.data(), n);
  for (const ParameterSlot &slot : program.parameters) {
    // The summed gradients unscaled (loss scale and ranks) in double.
    std::vector<double> g = slotValues(firstGradients, slot, firstGradientScale);
    std::vector<double> p = slotValues(finalMaster, slot, 1.0);
    file.tensors["grad/" + slot.name] = floatTensor("F64", slot.shape, g.data(), g.size());
    file.tensors["param/" + slot.name] = floatTensor("F64", slot.shape, p.data(), p.size());
  }
  file.metadata = {{"ls2c.model", program.modelName},
                   {"ls2c.device", executor.arch()},
                   {"ls2c.steps", std::to_string(o.steps)}};
  writeSafetensors(perRankPath(o.output, rank), file);
  return 0;
}

} // namespace

const char *kUsage =
    "usage: ls2c-gpu-step BUNDLE (--params P.safetensors | --init-seed S) "
    "--batch B.safetensors [-o OUT.safetensors] [--steps K] [--dropout-seed N] [--profile] "
    "[--time] [--no-graphs] [--save-params P.safetensors] [--attention kernels|cudnn|auto]\n"
    "    [--data-parallel [--no-overlap | --reduce-dtype bf16] | --simulate-ranks N]\n"
    "  --params FILE       initial parameters by reference name (F32/F64)\n"
    "  --init-seed S       or: initialize them as the description says, from seed S\n"
    "  --batch FILE        the model's inputs by name (ids, position_ids, cu_seqlens, labels)\n"
    "  -o FILE             losses, first-step gradients, final parameters (F64)\n"
    "  --steps K           train steps on the batch (default 1)\n"
    "  --dropout-seed N    Philox seed of dropout (default 0)\n"
    "  --profile           time every step of the last train step\n"
    "  --time              each train step's device time (with --data-parallel: the\n"
    "                      gradient all-reduces included; --no-overlap prints theirs\n"
    "                      apart) and the device memory in use\n"
    "  --no-graphs         run every step by step instead of replaying CUDA graphs\n"
    "  --save-params FILE  write the initial parameters (F32, by name)\n"
    "  --attention B       kernels (default): the generated attention kernels; cudnn:\n"
    "                      cuDNN's fused attention where it takes the call (fp16/bf16),\n"
    "                      the kernels elsewhere (a refused call with dropout is an\n"
    "                      error: its masks are cuDNN's own, and forward and backward\n"
    "                      must draw the same); auto: per shape the faster of the two,\n"
    "                      timed on its first call and kept in attention-choices.json\n"
    "                      beside the program cache ($LS2C_ATTENTION_CHOICES: another\n"
    "                      file, or off)\n"
    "  --data-parallel     one process per GPU, started as torchrun starts them (RANK,\n"
    "                      WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT): each rank\n"
    "                      reads --batch with \"{rank}\" replaced by its rank; gradients are\n"
    "                      averaged over the ranks by NCCL all-reduces of buckets of the\n"
    "                      description's optimizer.bucket_cap_mb (25 MiB unless set;\n"
    "                      fixed when the bundle is compiled), each as soon as backward\n"
    "                      has finished it; rank 0 writes -o\n"
    "                      (every rank when -o has \"{rank}\")\n"
    "  --no-overlap        with --data-parallel: one all-reduce after the whole backward\n"
    "  --reduce-dtype T    with --data-parallel: f32 (default) or bf16, the buckets rounded\n"
    "                      to bf16 for the all-reduce and widened back (half the bytes)\n"
    "  --simulate-ranks N  N ranks in turn on this GPU, batches \"{rank}\" = 0 .. N-1, their\n"
    "                      gradient buckets summed as --data-parallel sums them\n";

/// `text` as an integer in [lo, INT64_MAX], or exit 2 naming the option.
int64_t integerOption(const std::string &option, const std::string &text, int64_t lo) {
  size_t used = 0;
  long long x = 0;
  try {
    x = std::stoll(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (text.empty() || used != text.size() || x < lo) {
    std::fprintf(stderr, "ls2c-gpu-step: error: %s: '%s' is not an integer >= %lld\n",
                 option.c_str(), text.c_str(), static_cast<long long>(lo));
    std::exit(2);
  }
  return x;
}

int main(int argc, char **argv) {
  Options o;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ls2c-gpu-step: error: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--params")
      o.params = value();
    else if (a == "--batch")
      o.batch = value();
    else if (a == "-o")
      o.output = value();
    else if (a == "--steps")
      o.steps = integerOption(a, value(), 1);
    else if (a == "--dropout-seed")
      o.dropoutSeed = integerOption(a, value(), 0);
    else if (a == "--init-seed")
      o.initSeed = integerOption(a, value(), 0);
    else if (a == "--profile")
      o.profile = true;
    else if (a == "--no-graphs")
      o.graphs = false;
    else if (a == "--time")
      o.time = true;
    else if (a == "--save-params")
      o.saveParams = value();
    else if (a == "--data-parallel")
      o.dataParallel = true;
    else if (a == "--no-overlap")
      o.overlap = false;
    else if (a == "--reduce-dtype") {
      std::string t = value();
      if (t != "f32" && t != "bf16") {
        std::fprintf(stderr, "ls2c-gpu-step: error: --reduce-dtype: '%s' is not f32 or bf16\n",
                     t.c_str());
        return 2;
      }
      o.reduceDType = t == "bf16" ? DType::BF16 : DType::F32;
    }
    else if (a == "--attention") {
      std::string b = value();
      std::optional<AttentionBackend> backend = parseAttentionBackend(b);
      if (!backend) {
        std::fprintf(stderr,
                     "ls2c-gpu-step: error: --attention: '%s' is not kernels, cudnn or auto\n",
                     b.c_str());
        return 2;
      }
      o.attention = *backend;
    } else if (a == "--simulate-ranks")
      o.simulateRanks = static_cast<int>(integerOption(a, value(), 1));
    else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "ls2c-gpu-step: error: unknown option %s\n%s", a.c_str(), kUsage);
      return 2;
    } else
      positional.push_back(a);
  }
  auto usageError = [](const std::string &why) {
    std::fprintf(stderr, "ls2c-gpu-step: error: %s\n%s", why.c_str(), kUsage);
    return 2;
  };
  if (positional.size() != 1)
    return usageError(positional.empty() ? "no bundle given" : "more than one bundle given");
  if (!o.params.empty() && o.initSeed >= 0)
    return usageError("--params and --init-seed exclude each other");
  if (o.params.empty() && o.initSeed < 0)
    return usageError("--params or --init-seed is needed");
  if (o.batch.empty())
    return usageError("--batch is needed");
  if (o.dataParallel && o.simulateRanks > 0)
    return usageError("--data-parallel and --simulate-ranks exclude each other");
  if (!o.overlap && !o.dataParallel)
    return usageError("--no-overlap needs --data-parallel");
  if (o.reduceDType != DType::F32 && !o.dataParallel)
    return usageError("--reduce-dtype needs --data-parallel (simulated ranks sum in fp32)");
  if (o.reduceDType != DType::F32 && !o.overlap)
    return usageError("--reduce-dtype bf16 works on the bucketed all-reduce, not with "
                      "--no-overlap");
  if (o.simulateRanks > 4096)
    return usageError("--simulate-ranks: at most 4096 ranks");
  if ((o.dataParallel || o.simulateRanks > 0) && o.batch.find("{rank}") == std::string::npos)
    std::fprintf(stderr, "ls2c-gpu-step: note: --batch %s has no {rank}: every rank reads the "
                         "same batch\n",
                 o.batch.c_str());
  o.bundle = positional[0];
  if (std::string bad = ls2c::outputReplacesInput(
          {{"-o", o.output}, {"--save-params", o.saveParams}},
          {{"the bundle", o.bundle}, {"--params", o.params}, {"--batch", o.batch}});
      !bad.empty())
    return usageError(bad);
  try {
    return run(o);
  } catch (const InputError &e) {
    std::fprintf(stderr, "ls2c-gpu-step: error: %s\n", e.what());
    return 2;
  } catch (const BundleError &e) {
    // Bad input (the bundle, torchrun's variables): exit 2, as ls2c does.
    std::fprintf(stderr, "ls2c-gpu-step: error: %s\n", e.what());
    return 2;
  } catch (const DistributedError &e) {
    std::fprintf(stderr, "ls2c-gpu-step: error: %s\n", e.what());
    return 2;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ls2c-gpu-step: error: %s\n", e.what());
    return 1;
  }
}
