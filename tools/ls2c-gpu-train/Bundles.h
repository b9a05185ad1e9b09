//===- Bundles.h - the train and evaluation bundles, checked --------------===//
//
// ls2c-gpu-train runs two programs of one description: the train bundle's
// @accumulate_gradients and @optimizer_step, and the evaluation bundle's
// dropout-free @forward (ls2c compile --program=eval: loss and logits; or,
// for a decoder, the loss of a train bundle compiled with every dropout 0).
// Everything is checked before the GPU is touched, each refusal naming the
// bundle and the rule. No MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TOOLS_GPUTRAIN_BUNDLES_H
#define LS2C_TOOLS_GPUTRAIN_BUNDLES_H

#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Runtime/Bundle.h"

#include <set>
#include <string>

namespace ls2c::gputrain {

struct Bundles {
  runtime::Program train, eval;
  ModelDescription desc; ///< the train bundle's
  /// @forward returns the logits (ls2.name "logits") beside the loss.
  bool evalLogits = false;
};

/// Reads `trainPath` and `evalPath` and checks that they hold a train step
/// and a dropout-free @forward of the same description (all but the name,
/// the dropout rates and the optimizer agree), and for encoder,
/// encoder_decoder and vit models that @forward returns the logits the
/// accuracy needs. Throws InputError.
Bundles loadBundles(const std::string &trainPath, const std::string &evalPath);

/// Checks that @`name` of `program` takes as inputs exactly the data inputs
/// `provided` (the names of TrainingData's batches) besides the dropout seed
/// and offset. Throws InputError naming `bundle`, the input and what the
/// data of `desc`'s architecture provides.
const runtime::Function &requireDataInputs(const runtime::Program &program,
                                           const std::string &bundle, const std::string &name,
                                           const std::set<std::string> &provided,
                                           const ModelDescription &desc);

} // namespace ls2c::gputrain

#endif // LS2C_TOOLS_GPUTRAIN_BUNDLES_H
