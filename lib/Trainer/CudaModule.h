//===- CudaModule.h - what ls2c-cuda.so gives the ls2c that opens it -------===//
//
// The GPU half of `ls2c train`, `step` and `generate` lives in a module, ls2c-cuda.so (lib/Trainer/
// Cuda), linked against the CUDA driver, runtime, cuBLASLt and cuDNN. `ls2c`
// links none of them and opens the module with dlopen only when a run asks
// for the GPU (CudaTrainer.h), so it starts, and trains on the CPU, on a
// machine without the NVIDIA driver. The module exports one C symbol,
// kModuleEntry, returning the CudaModule below; both sides are built from
// one tree, and kModuleAbi (checked first) refuses a module of another build.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_LIB_TRAINER_CUDAMODULE_H
#define LS2C_LIB_TRAINER_CUDAMODULE_H

#include "ls2c/Generation/IncrementalDecoder.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Reference/HostTensor.h"
#include "ls2c/Runtime/AttentionChoice.h"
#include "ls2c/Runtime/Program.h"
#include "ls2c/Trainer/TrainEngine.h"
#include "ls2c/Training/Workspace.h"

#include <map>
#include <memory>
#include <string>

namespace ls2c::cuda {

/// The module's file name, looked for beside the ls2c executable, then in
/// <prefix>/lib/ls2c (installed); $LS2C_CUDA_MODULE overrides.
inline constexpr const char *kModuleFile = "ls2c-cuda.so";
/// The exported entry: `CudaModule *ls2c_cuda_module()`.
inline constexpr const char *kModuleEntry = "ls2c_cuda_module";
/// The interface's version and the build's id (a configure's random
/// LS2C_BUILD_ID, cached: ls2c and the module of one build tree share it),
/// compared with the module's before anything else is called.
inline constexpr const char *kModuleAbi = "ls2c-cuda 2, build " LS2C_BUILD_ID;

/// The GPU a run would use.
struct DeviceInfo {
  std::string name; ///< "NVIDIA H200"
  std::string arch; ///< "sm_90", what its programs are compiled for
  uint64_t memoryBytes = 0;
};

/// How the engine runs its programs.
struct EngineOptions {
  runtime::AttentionBackend attention = runtime::AttentionBackend::Auto;
  bool graphs = true; ///< replay CUDA graphs of the functions' calls
};

class CudaModule {
public:
  virtual const char *abi() const = 0;
  /// The current CUDA device; false and why not (no driver, no device, a
  /// driver older than the runtime) in `why`.
  virtual bool probe(DeviceInfo &info, std::string &why) = 0;
  /// An engine running `train`'s @accumulate_gradients and @optimizer_step
  /// and `eval`'s dropout-free @forward (both compiled from `desc` for the
  /// probed device) on parameters laid out as `ws`; `desc` and `ws` must
  /// outlive it. Throws TrainError when the programs do not take what the
  /// description's data provide (`dataInputs`, the input names of a batch)
  /// and std::runtime_error when the device fails.
  virtual std::unique_ptr<TrainEngine>
  createTrainEngine(runtime::Program train, runtime::Program eval, const ModelDescription &desc,
                    const WorkspaceLayout &ws, const std::vector<std::string> &dataInputs,
                    const EngineOptions &options) = 0;
  /// `ls2c generate`'s decoder: `decode`'s @decode (and @encode for
  /// encoder_decoder), compiled from `desc` for the probed device, on
  /// `parameters` by reference name (generation::loadModelWeights). Throws
  /// DeviceError when the device fails.
  virtual std::unique_ptr<generation::IncrementalDecoder>
  createDecoder(runtime::Program decode, const ModelDescription &desc,
                const std::map<std::string, reference::HostTensor> &parameters,
                bool graphs) = 0;

protected:
  ~CudaModule() = default;
};

} // namespace ls2c::cuda

extern "C" {
/// The module's CudaModule (a static object, never freed).
using Ls2cCudaModuleEntry = ls2c::cuda::CudaModule *(*)();
}

#endif // LS2C_LIB_TRAINER_CUDAMODULE_H
