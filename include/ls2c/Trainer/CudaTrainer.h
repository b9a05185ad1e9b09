//===- CudaTrainer.h - `ls2c train` on a CUDA GPU, opened at run time ------===//
//
// Opens the module ls2c-cuda.so (CudaModule.h) with dlopen, asks it for the
// device, compiles the description's train step and dropout-free @forward
// for that device in process (JIT.h; the kernels come from the program
// cache after a first run) or takes a train bundle the user compiled, and
// returns the module's TrainEngine.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TRAINER_CUDATRAINER_H
#define LS2C_TRAINER_CUDATRAINER_H

#include "ls2c/Generation/IncrementalDecoder.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Reference/HostTensor.h"
#include "ls2c/Trainer/TrainEngine.h"
#include "ls2c/Trainer/Trainer.h"
#include "ls2c/Training/Workspace.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ls2c {

/// The CUDA engine for `desc`, or null with `why` set when this machine has
/// no usable GPU (no module beside ls2c, no driver, no device). Throws
/// TrainError for a bad --bundle or --attention, std::runtime_error when
/// compiling or the device fails.
std::unique_ptr<TrainEngine> openCudaEngine(const TrainOptions &o, const ModelDescription &desc,
                                            const WorkspaceLayout &ws,
                                            const std::vector<std::string> &dataInputs,
                                            std::string &why);

/// `ls2c generate`'s decoder for `desc` on the GPU (its decoding program
/// compiled for the device in process) over `parameters`, or null with `why`
/// set when this machine has no usable GPU.
std::unique_ptr<generation::IncrementalDecoder>
openCudaDecoder(const ModelDescription &desc,
                const std::map<std::string, reference::HostTensor> &parameters, bool graphs,
                std::string &why);

} // namespace ls2c

#endif // LS2C_TRAINER_CUDATRAINER_H
