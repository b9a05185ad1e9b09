//===- ParameterLayout.h - Named parameters of a described model ----------===//
//
// The list of parameters (and non-trainable buffers) a ModelDescription
// implies, named as in the reference implementation (Hugging Face BERT and
// GPT-2, fairseq Transformer, timm ViT) so checkpoints map one to one. Tied
// weights appear once. The order is the order the frontend binds them as
// function arguments and the trainer lays them out in its workspace.
//
// No MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef LS2C_MODEL_PARAMETERLAYOUT_H
#define LS2C_MODEL_PARAMETERLAYOUT_H

#include "ls2c/Model/ModelDescription.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ls2c {

/// How a parameter is initialized before training.
enum class ParameterInit {
  Zeros,
  Ones,
  Normal,        ///< mean 0, std ParameterSpec::init_std
  XavierUniform, ///< U(-a, a), a = sqrt(6 / (fan_in + fan_out)), gain 1
  Sinusoidal,    ///< fixed sin/cos position table (Vaswani et al.)
};

/// JSON-style spelling: "zeros" | "ones" | "normal" | "xavier_uniform" |
/// "sinusoidal".
std::string_view toString(ParameterInit init);

struct ParameterSpec {
  std::string name;           ///< reference-implementation name
  std::vector<int64_t> shape; ///< row-major, in elements
  bool trainable = true;      ///< false for buffers (sinusoidal positions)
  bool weight_decay = true;   ///< false for biases, norms and buffers
  ParameterInit init = ParameterInit::Normal;
  double init_std = 0.0; ///< standard deviation for ParameterInit::Normal

  /// Product of the shape (1 for a scalar). Throws DescriptionError (path
  /// "$") when it overflows int64.
  int64_t numel() const;
};

struct ParameterLayout {
  std::vector<ParameterSpec> parameters;

  /// Elements of trainable parameters.
  int64_t numParameters() const;
  /// Elements of non-trainable buffers.
  int64_t numBufferElements() const;

  // Byte counts of the training state. Each throws DescriptionError with path
  // "$" when the count overflows int64.

  /// Trainable parameters stored in the compute dtype.
  int64_t computeWeightBytes(DType dtype) const;
  /// fp32 master weights (4 bytes per trainable element). When the compute
  /// dtype is fp32 the compute weights are the master weights and no separate
  /// copy is allocated; the count is still reported.
  int64_t masterWeightBytes() const;
  /// Gradients of trainable parameters in the compute dtype.
  int64_t gradientBytes(DType dtype) const;
  /// Adam/AdamW first and second moments in fp32: 8 bytes per trainable
  /// element.
  int64_t optimizerStateBytes() const;

  /// The parameter named `name`, or nullptr.
  const ParameterSpec *find(std::string_view name) const;
};

/// The parameters of `desc` (expected to be validated by
/// parseModelDescription). Throws DescriptionError when a shape's element
/// count overflows int64.
ParameterLayout buildParameterLayout(const ModelDescription &desc);

} // namespace ls2c

#endif // LS2C_MODEL_PARAMETERLAYOUT_H
