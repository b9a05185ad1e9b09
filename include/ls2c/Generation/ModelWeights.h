//===- ModelWeights.h - a model's parameters from a checkpoint ------------===//
//
// What generation runs on: every parameter of a description by reference
// name (ParameterLayout), read from a checkpoint of `ls2c train` or
// `ls2c-gpu-train` (its optimizer tensors, ls2c.optimizer.*, are skipped)
// or from a file holding exactly the trainable parameters (as `ls2c step
// --params` takes them), plus the fixed sinusoidal position tables the
// description implies (buffers). MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_GENERATION_MODELWEIGHTS_H
#define LS2C_GENERATION_MODELWEIGHTS_H

#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Reference/HostTensor.h"

#include <map>
#include <string>

namespace ls2c::generation {

/// The parameters of `desc` in `path` (safetensors, F32 or F64 tensors) as
/// F32 host tensors in the model's shapes, buffers included. Throws
/// GenerationError naming the file and the tensor: an unreadable file, a
/// checkpoint of another model (metadata ls2c.model), a missing, misshapen,
/// unknown or non-finite tensor; a checkpoint whose recorded vocabulary
/// (metadata ls2c.vocabulary, Vocabulary.h) is not `vocabulary` when that is
/// given (`given` names the option it came from).
std::map<std::string, reference::HostTensor>
loadModelWeights(const std::string &path, const ModelDescription &desc,
                 const std::string &vocabulary = {}, const std::string &given = {});

} // namespace ls2c::generation

#endif // LS2C_GENERATION_MODELWEIGHTS_H
