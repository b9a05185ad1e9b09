//===- ReferenceEngine.h - train steps on the CPU reference interpreter ---===//
//
// `ls2c train --device cpu`: the description's train step (frontend,
// ls2-autodiff, ls2-train-step) and its dropout-free @forward, compiled to
// ls2 IR and run by the reference interpreter in f32, the compute dtype's
// rounding applied to the parameters (Programs.h).
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_LIB_TRAINER_REFERENCEENGINE_H
#define LS2C_LIB_TRAINER_REFERENCEENGINE_H

#include "Programs.h"

#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Reference/HostTensor.h"
#include "ls2c/Trainer/TrainEngine.h"
#include "ls2c/Training/Workspace.h"

#include <memory>

namespace ls2c {

/// The CPU engine of `desc`, whose workspace is `ws`; both must outlive it.
/// `programs`: compiled already (null: compiled here); `precision`: F64
/// runs every float op in double (`ls2c step --precision f64`). Throws
/// TrainError when the description does not compile (a bug).
std::unique_ptr<TrainEngine>
makeReferenceEngine(const ModelDescription &desc, const WorkspaceLayout &ws,
                    std::unique_ptr<Programs> programs = nullptr,
                    reference::Precision precision = reference::Precision::F32);

} // namespace ls2c

#endif // LS2C_LIB_TRAINER_REFERENCEENGINE_H
