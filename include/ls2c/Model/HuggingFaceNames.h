//===- HuggingFaceNames.h - checkpoints in Hugging Face transformers' names ===//
//
// The state dict that Hugging Face transformers' BertForMaskedLM (for an
// "encoder" description), GPT2LMHeadModel (for a "decoder" description) and
// LlamaForCausalLM (for a "llama" description) hold for the equivalent
// configuration, and conversions between it and ls2c's parameters.
//
// ls2c's ParameterLayout already uses these modules' names and weight
// orientations (checked against transformers' modeling_bert.py,
// modeling_gpt2.py and modeling_llama.py and against lib/Frontend, which
// reads them):
//   - BERT's nn.Linear weights are [out, in] and the frontend multiplies
//     x @ W^T; query, key and value are separate tensors.
//   - GPT-2's Conv1D weights are [in, out] and the frontend multiplies x @ W
//     (no transpose anywhere); c_attn is [H, 3H] with q, k, v side by side
//     along the output columns, split in that order (transformers'
//     c_attn(x).split(n_embd, dim=2)), each head's dims contiguous.
//   - Llama's nn.Linear weights (no biases) are [out, in] like BERT's;
//     q_proj and k_proj rows are in transformers' rotate-half order (the
//     frontend's rotary embedding pairs dim j with dim j + head_dim / 2), so
//     Hugging Face Llama checkpoints need no permutation either.
// So every tensor converts as a byte copy under the same name. What differs
// is which names exist:
//   - transformers ties cls.predictions.decoder.bias to cls.predictions.bias
//     (always) and, with tie_word_embeddings, cls.predictions.decoder.weight
//     to bert.embeddings.word_embeddings.weight and lm_head.weight to
//     transformer.wte.weight (GPT-2) or model.embed_tokens.weight (Llama);
//     its state_dict() holds both names, ls2c one.
//   - bert.embeddings.position_ids / token_type_ids and GPT-2's attn.bias /
//     attn.masked_bias are non-persistent buffers in current transformers
//     (older versions saved position_ids and attn.bias), and so is Llama's
//     rotary inv_freq (the first Llama releases saved it, as
//     model.layers.N.self_attn.rotary_emb.inv_freq); BertForPreTraining
//     checkpoints also carry bert.pooler.* and cls.seq_relationship.*, which
//     BertForMaskedLM drops on load.
//   - Checkpoints saved from the base model (BertModel, GPT2Model,
//     LlamaModel) lack the "bert." / "transformer." / "model." prefix, and
//     old BERT checkpoints name layer norms' parameters gamma / beta:
//     transformers renames both on load.
//
// No MLIR dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_MODEL_HUGGINGFACENAMES_H
#define LS2C_MODEL_HUGGINGFACENAMES_H

#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Support/Safetensors.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ls2c {

/// A description without a transformers equivalent, or a checkpoint that
/// does not fit the model; what() is one line naming the file, the tensor or
/// field, and the rule.
class HuggingFaceError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One entry of the transformers model's state_dict().
struct HuggingFaceTensor {
  std::string name;           ///< e.g. "transformer.h.0.attn.c_attn.weight"
  std::vector<int64_t> shape; ///< as transformers allocates it
  std::string shapeRule;      ///< the shape in description fields, "[hidden, 3 * hidden]"
  std::string source;         ///< the ls2c parameter with the same values and layout
  bool tied = false;          ///< a second name of `source` (tied in transformers)
};

struct HuggingFaceMapping {
  std::string source;     ///< the description's file, for messages
  std::string modelName;  ///< the description's name
  int64_t layers = 0;     ///< encoder_layers (BERT) or decoder_layers (GPT-2, Llama)
  std::string modelClass; ///< "BertForMaskedLM" | "GPT2LMHeadModel" | "LlamaForCausalLM"
  std::string modelType;  ///< config.json's model_type: "bert" | "gpt2" | "llama"
  std::string basePrefix; ///< "bert." | "transformer." | "model."
  /// The names of layer N start with layerPrefix + "N.":
  /// "bert.encoder.layer." | "transformer.h." | "model.layers."
  std::string layerPrefix;
  /// In state_dict() order (module registration order), tied names included,
  /// non-persistent buffers excluded.
  std::vector<HuggingFaceTensor> tensors;
  /// config.json of the equivalent configuration (BertConfig / GPT2Config /
  /// LlamaConfig fields).
  nlohmann::json config;
  /// Description settings the config cannot express; they only change
  /// training (activation_dropout, label_smoothing), not what the weights
  /// compute.
  std::vector<std::string> notes;

  const HuggingFaceTensor *find(const std::string &name) const;
};

/// The transformers model equivalent to `desc` (validated). `source` names
/// the description in messages. Throws HuggingFaceError when there is none:
/// an architecture other than encoder / decoder / llama, a pre-LN encoder
/// (BERT is post-LN; ours would have bert.encoder.final_layer_norm), a
/// post-LN decoder (GPT-2 is pre-LN with ln_f), or grouped-query attention
/// in BERT / GPT-2 (Llama has it: num_key_value_heads).
HuggingFaceMapping huggingFaceMapping(const ModelDescription &desc,
                                      const std::string &source);

/// ls2c parameters (`ls2c step --params` files, or `ls2c train` checkpoints,
/// whose optimizer state ls2c.optimizer.* is dropped) -> the transformers
/// state dict: every trainable parameter, present once, in the model's
/// shape, of a float dtype (F32, F64, F16, BF16; kept as is), and nothing
/// else. Tied names are written as copies, so the result loads with
/// load_state_dict(strict=True) as well as from_pretrained. Metadata:
/// format "pt" (required by from_pretrained). `path` names the input in
/// messages. Throws HuggingFaceError.
SafetensorsFile toHuggingFace(const HuggingFaceMapping &mapping,
                              const SafetensorsFile &ours,
                              const std::string &path);

/// A transformers state dict -> ls2c parameters (a `ls2c step --params`
/// file): every parameter required, in the model's shape; F32 and F64 kept,
/// F16 and BF16 widened to F32 (exactly). Tied names are optional and must
/// hold the same values as the tensor they are tied to. Base-model
/// checkpoints (no "bert." / "transformer." / "model." prefix) and gamma /
/// beta layer norm names are renamed as transformers renames them; the
/// buffers and heads BertForMaskedLM / GPT2LMHeadModel / LlamaForCausalLM
/// ignore (see above) are dropped.
/// Each rename and drop is appended to `notes` (if given). Any other tensor,
/// a missing or misshaped one, a non-float dtype, or a tied copy that
/// differs is refused with HuggingFaceError naming the tensor and the rule.
SafetensorsFile fromHuggingFace(const HuggingFaceMapping &mapping,
                                const SafetensorsFile &hf,
                                const std::string &path,
                                std::vector<std::string> *notes = nullptr);

} // namespace ls2c

#endif // LS2C_MODEL_HUGGINGFACENAMES_H
