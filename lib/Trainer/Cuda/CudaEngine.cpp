//===- CudaEngine.cpp - train steps of a compiled program on a CUDA GPU ---===//
//
// The module ls2c-cuda.so (CudaModule.h): the TrainEngine of `ls2c train` on
// the GPU. The training state (fp32 master weights, gradients, both Adam
// moments, step, loss scale) stays on the device; each call binds its
// arguments and results by name (DeviceTensors.h), so the calls' pointers
// repeat and the executors replay CUDA graphs after the first steps.
// Validation casts the master weights to the compute dtype on the host, as
// the CPU engine does. No MLIR.
//
//===----------------------------------------------------------------------===//
#include "../CudaModule.h"

#include "Batches.h"
#include "GpuDecoder.h"
#include "ProgramRunner.h"

#include "ls2c/Runtime/CudnnAttention.h"
#include "ls2c/Runtime/DeviceTensors.h"
#include "ls2c/Runtime/Executor.h"
#include "ls2c/Trainer/Trainer.h"

#include <cuda_runtime.h>

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ls2c::cuda {

namespace {

using namespace ls2c::runtime;
using ls2c::gputrain::EncodedBatch;
using ls2c::gputrain::encodeBatch;
using ls2c::gputrain::ProgramRunner;
using ls2c::gputrain::scoreLogits;
using ls2c::gputrain::uploadBuffers;
using ls2c::gputrain::uploadWeights;
using ls2c::gputrain::uploadBatch;
using ls2c::reference::ElementType;
using ls2c::reference::HostTensor;
using ls2c::runtime::DeviceTensor;

/// The function `name` of `program`; TrainError when it has none.
const Function &requireFunction(const Program &program, const std::string &name) {
  for (const Function &f : program.functions)
    if (f.name == name)
      return f;
  throw TrainError("the program of model '" + program.modelName + "' has no @" + name);
}

/// Checks that `f` takes exactly the data inputs a batch holds, besides the
/// dropout seed and offset.
void requireDataInputs(const Function &f, const std::vector<std::string> &provided,
                       const ModelDescription &desc) {
  std::string list;
  for (const std::string &p : provided)
    list += (list.empty() ? "" : ", ") + p;
  std::set<std::string> seen, have(provided.begin(), provided.end());
  for (const TensorSpec &s : f.arguments) {
    if (s.kind != ArgumentKind::Input || s.name == "dropout_seed" || s.name == "dropout_offset")
      continue;
    if (!have.count(s.name))
      throw TrainError("@" + f.name + " takes the input '" + s.name + "', which " +
                       std::string(toString(desc.architecture)) + " data do not provide (they provide " +
                       list + ")");
    seen.insert(s.name);
  }
  for (const std::string &p : provided)
    if (!seen.count(p))
      throw TrainError("@" + f.name + " lacks the input '" + p + "' of " +
                       std::string(toString(desc.architecture)) + " data (" + list + ")");
}

/// Runs `f`, turning a failure of the device (runtime errors of the
/// executor, cuBLASLt, cuDNN) into DeviceError.
template <class F> auto guarded(F &&f) -> decltype(f()) {
  try {
    return f();
  } catch (const TrainError &) {
    throw;
  } catch (const DeviceError &) {
    throw;
  } catch (const std::runtime_error &e) {
    throw DeviceError(e.what());
  }
}

std::vector<float> toFloats(const HostTensor &t) {
  return std::vector<float>(t.floats.begin(), t.floats.end());
}

class CudaEngine final : public TrainEngine {
public:
  CudaEngine(Program trainProgram, Program evalProgram, const ModelDescription &desc,
             const WorkspaceLayout &ws, const std::vector<std::string> &dataInputs,
             const EngineOptions &options, std::string deviceName)
      : desc(desc), ws(ws), name(std::move(deviceName)), dataInputs(dataInputs),
        train(std::move(trainProgram)),
        eval(std::move(evalProgram)),
        accumulateSpec(requireFunction(train.executor.program(), "accumulate_gradients")),
        forwardSpec(requireFunction(eval.executor.program(), "forward")) {
    requireFunction(train.executor.program(), "optimizer_step");
    requireDataInputs(accumulateSpec, dataInputs, desc);
    const Program &program = train.executor.program();
    if (static_cast<uint64_t>(ws.totalElements) != program.workspaceElements)
      throw TrainError("the program's workspace holds " +
                       std::to_string(program.workspaceElements) +
                       " elements, but the description plans " +
                       std::to_string(ws.totalElements));
    for (const ParameterSlot &slot : program.parameters) {
      const WorkspaceSlot *w = ws.find(slot.name);
      if (!w || static_cast<uint64_t>(w->offset) != slot.offset || w->spec->shape != slot.shape)
        throw TrainError("parameter '" + slot.name +
                         "' is not where the description places it in the program");
    }
    for (ProgramRunner *r : {&train, &eval}) {
      r->executor.setGraphs(options.graphs);
      r->executor.setAttentionBackend(options.attention);
    }
    trainInputs["micro_batches"] =
        runtime::uploadTensor({1}, {}, runtime::DType::F32, 8, "micro batches");
    trainInputs["dropout_seed"] = runtime::uploadTensor({0}, {}, runtime::DType::I64, 8, "dropout seed");
    trainInputs["dropout_offset"] = runtime::uploadTensor({0}, {}, runtime::DType::I64, 8, "dropout offset");
    evalInputs["dropout_seed"] = runtime::uploadTensor({0}, {}, runtime::DType::I64, 8, "dropout seed");
    evalInputs["dropout_offset"] = runtime::uploadTensor({0}, {}, runtime::DType::I64, 8, "dropout offset");
    uploadBuffers(accumulateSpec, trainInputs);
    uploadBuffers(forwardSpec, evalInputs);
  }

  std::string device() const override {
    return "cuda (" + name + ", " + train.executor.arch() + ")";
  }

  void setState(TrainState s) override {
    return guarded([&] {
      const std::vector<int64_t> shape = {ws.totalElements};
      const size_t bytes = static_cast<size_t>(ws.totalElements) * 4;
      state["master_weights"] = runtime::uploadFloats(toFloats(s.master), shape, "master_weights");
      state["exp_avg"] = runtime::uploadFloats(toFloats(s.expAvg), shape, "exp_avg");
      state["exp_avg_sq"] = runtime::uploadFloats(toFloats(s.expAvgSq), shape, "exp_avg_sq");
      state["gradients"] = runtime::zeroTensor(shape, runtime::DType::F32, bytes, "gradients");
      state["loss_scale"] =
          runtime::uploadTensor({s.lossScale.floats.at(0)}, {}, runtime::DType::F32, 8, "loss scale");
      state["step"] =
          runtime::uploadTensor({static_cast<double>(s.appliedSteps)}, {}, runtime::DType::I64, 8, "step");
      state["good_steps"] = runtime::uploadTensor({static_cast<double>(s.goodSteps.ints.at(0))}, {},
                                                runtime::DType::I64, 8, "good steps");
      step = s.step;
    });
  }

  TrainState getState() override {
    return guarded([&] {
      TrainState s;
      auto download = [&](const char *what) {
        std::vector<float> v(static_cast<size_t>(ws.totalElements));
        state.at(what).buffer.download(v.data(), v.size() * 4);
        return HostTensor::fromFloats(ElementType::F32, {ws.totalElements},
                                      std::vector<double>(v.begin(), v.end()));
      };
      s.master = download("master_weights");
      s.expAvg = download("exp_avg");
      s.expAvgSq = download("exp_avg_sq");
      s.lossScale = HostTensor::scalarFloat(ElementType::F32,
                                            runtime::downloadTensor(state.at("loss_scale"))[0]);
      s.goodSteps = HostTensor::scalarInt(
          ElementType::I64, static_cast<int64_t>(runtime::downloadTensor(state.at("good_steps"))[0]));
      s.appliedSteps = static_cast<int64_t>(runtime::downloadTensor(state.at("step"))[0]);
      s.step = step;
      return s;
    });
  }

  std::shared_ptr<const void> prepare(const InputBatch &batch) const override {
    return std::make_shared<const EncodedBatch>(encodeBatch(batch, accumulateSpec, -100));
  }

  double accumulate(const InputBatch &batch, const std::shared_ptr<const void> &prepared,
                    bool firstMicroBatch, uint64_t seed, int64_t dropoutOffset) override {
    return guarded([&] {
      if (firstMicroBatch)
        state.at("gradients").buffer.fill(0);
      if (seed != uploadedSeed) {
        int64_t value = static_cast<int64_t>(seed);
        trainInputs.at("dropout_seed").buffer.upload(&value, 8);
        uploadedSeed = seed;
      }
      trainInputs.at("dropout_offset").buffer.upload(&dropoutOffset, 8);
      if (prepared)
        uploadBatch(*static_cast<const EncodedBatch *>(prepared.get()), accumulateSpec,
                    trainInputs);
      else
        uploadBatch(encodeBatch(batch, accumulateSpec, -100), accumulateSpec, trainInputs);
      auto &out = train.call("accumulate_gradients", state, trainInputs);
      return runtime::downloadTensor(out.at("loss"))[0];
    });
  }

  OptimizerStepResult optimizerStep(int64_t microBatches) override {
    return guarded([&] {
      if (microBatches != uploadedMicroBatches) {
        float value = static_cast<float>(microBatches);
        trainInputs.at("micro_batches").buffer.upload(&value, 4);
        uploadedMicroBatches = microBatches;
      }
      auto &out = train.call("optimizer_step", state, trainInputs);
      OptimizerStepResult r;
      r.gradNorm = runtime::downloadTensor(out.at("grad_norm"))[0];
      r.lr = runtime::downloadTensor(out.at("lr"))[0];
      r.finite = runtime::downloadTensor(out.at("finite"))[0] != 0;
      // Each download waits for the device: only fp16 has a scale to report.
      if (desc.dtype == ls2c::DType::F16)
        r.lossScale = runtime::downloadTensor(state.at("loss_scale"))[0];
      return r;
    });
  }

  std::vector<double> gradients() override {
    return guarded([&] {
      std::vector<float> g(static_cast<size_t>(ws.totalElements));
      state.at("gradients").buffer.download(g.data(), g.size() * 4);
      return std::vector<double>(g.begin(), g.end());
    });
  }

  void beginEvaluation() override {
    // Checked here, not when made: `ls2c step` never evaluates, and its
    // batches may hold inputs only the train step takes.
    if (!forwardChecked) {
      requireDataInputs(forwardSpec, dataInputs, desc);
      forwardChecked = true;
    }
    return guarded([&] {
      std::vector<float> current(static_cast<size_t>(ws.totalElements));
      state.at("master_weights").buffer.download(current.data(), current.size() * 4);
      if (std::string bad = uploadWeights(forwardSpec, ws, current, evalInputs); !bad.empty())
        throw TrainError("@forward's parameter '" + bad +
                         "' is not a parameter of the description with its shape");
    });
  }

  double evaluate(const InputBatch &batch, int64_t ignoredLabel,
                  PredictionScore *predictions) override {
    return guarded([&] {
      EncodedBatch encoded = encodeBatch(batch, forwardSpec, ignoredLabel);
      uploadBatch(encoded, forwardSpec, evalInputs);
      std::map<std::string, DeviceTensor> noState;
      auto &out = eval.call("forward", noState, evalInputs);
      if (predictions) {
        auto logits = out.find("logits");
        if (logits == out.end())
          throw TrainError("@forward returns no logits to score");
        scoreLogits(logits->second, encoded.labels, ignoredLabel, *predictions);
      }
      return runtime::downloadTensor(out.at(forwardSpec.results[0].name))[0];
    });
  }

private:
  const ModelDescription &desc;
  const WorkspaceLayout &ws;
  std::string name;
  std::vector<std::string> dataInputs;
  bool forwardChecked = false;
  ProgramRunner train, eval;
  const Function &accumulateSpec, &forwardSpec;
  std::map<std::string, DeviceTensor> state, trainInputs, evalInputs;
  int64_t step = 0; ///< as setState gave it (the loop counts steps)
  uint64_t uploadedSeed = 0;
  int64_t uploadedMicroBatches = 1;
};

class Module final : public CudaModule {
public:
  const char *abi() const override { return kModuleAbi; }

  bool probe(DeviceInfo &info, std::string &why) override {
    int count = 0;
    if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
      why = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
      return false;
    }
    if (count == 0) {
      why = "the CUDA driver sees no device";
      return false;
    }
    int device = 0;
    cudaDeviceProp p{};
    if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) {
      why = std::string("cudaGetDevice: ") + cudaGetErrorString(e);
      return false;
    }
    if (cudaError_t e = cudaGetDeviceProperties(&p, device); e != cudaSuccess) {
      why = std::string("cudaGetDeviceProperties: ") + cudaGetErrorString(e);
      return false;
    }
    info.name = p.name;
    info.arch = "sm_" + std::to_string(p.major) + std::to_string(p.minor);
    info.memoryBytes = p.totalGlobalMem;
    deviceName = info.name;
    return true;
  }

  std::unique_ptr<TrainEngine>
  createTrainEngine(Program train, Program eval, const ModelDescription &desc,
                    const WorkspaceLayout &ws, const std::vector<std::string> &dataInputs,
                    const EngineOptions &options) override {
    EngineOptions o = options;
    if (!cudnnAttentionAvailable() && o.attention != AttentionBackend::Kernels)
      o.attention = AttentionBackend::Kernels;
    return guarded([&]() -> std::unique_ptr<TrainEngine> {
      return std::make_unique<CudaEngine>(std::move(train), std::move(eval), desc, ws,
                                          dataInputs, o, deviceName);
    });
  }

  std::unique_ptr<generation::IncrementalDecoder>
  createDecoder(Program decode, const ModelDescription &desc,
                const std::map<std::string, HostTensor> &parameters, bool graphs) override {
    return guarded([&]() -> std::unique_ptr<generation::IncrementalDecoder> {
      return std::make_unique<tools::GpuDecoder>(std::move(decode), desc, parameters, graphs);
    });
  }

private:
  std::string deviceName = "CUDA device";
};

} // namespace

} // namespace ls2c::cuda

extern "C" __attribute__((visibility("default"))) ls2c::cuda::CudaModule *ls2c_cuda_module() {
  static ls2c::cuda::Module module;
  return &module;
}
