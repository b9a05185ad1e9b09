//===- ModelDescription.h - The model.json description of a training job --===//
//
// A ModelDescription is everything ls2c needs to know about a Transformer
// training job before compiling it: architecture, static sizes, numerics and
// the optimizer. It is parsed from a flat JSON file (docs/model-description.md
// lists every field) and fully validated on load, so later stages may assume
// every size is positive, every divisibility rule holds and every byte count of
// the parameter layout fits in int64.
//
// This header has no MLIR dependency: the runtime and bundle loader use it too.
//
//===----------------------------------------------------------------------===//

#ifndef LS2C_MODEL_MODELDESCRIPTION_H
#define LS2C_MODEL_MODELDESCRIPTION_H

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ls2c {

/// Limits enforced on load. Layers are capped so that building the layout of
/// a mistyped description cannot exhaust memory; head dim is what the fused
/// attention kernels support.
inline constexpr int64_t kMaxLayers = 1024;
/// Token ids, positions and cu_seqlens are i32 in the graph.
inline constexpr int64_t kMaxBatchTokens = 2147483647;
inline constexpr int64_t kMaxHeadDim = 256;
/// Largest vocab, src_vocab, type_vocab_size and num_classes: ids and
/// labels are i32, so a table has at most 2^31 rows.
inline constexpr int64_t kMaxClasses = int64_t{1} << 31;
/// Most ranks one sequence may be split over (sequence_parallel_size).
inline constexpr int64_t kMaxSequenceParallelSize = 4096;
/// Deepest nesting of JSON arrays and objects accepted (a description needs
/// 3: $.optimizer.schedule, $.optimizer.betas). Checked before the JSON is
/// parsed, so no stage ever walks a deeper document.
inline constexpr int kMaxJsonDepth = 32;
/// Most JSON values (scalars, arrays and objects, at any depth) in one
/// description; one has fewer than 100. Parsing stops at the first value
/// past it, so a large file of many small values costs neither the time nor
/// the memory of its DOM (which would be ~30 times the file's size).
inline constexpr size_t kMaxJsonValues = 65536;
/// Longest `name` (and default name derived from the file name).
inline constexpr size_t kMaxNameLength = 128;
/// Largest description file read.
inline constexpr size_t kMaxDescriptionBytes = size_t(16) << 20;

/// Which reference model the parameter names and the graph follow.
/// JSON: "encoder" (BERT) | "decoder" (GPT-2) | "encoder_decoder" (fairseq
/// Transformer) | "vit" (timm VisionTransformer) | "llama" (Hugging Face
/// LlamaForCausalLM: RMSNorm, rotary positions, gated feed-forward, no biases).
enum class Architecture { Encoder, Decoder, EncoderDecoder, ViT, Llama };

/// Decoder-only causal language models (next-token labels, one token
/// stream): "decoder" and "llama".
inline bool isCausalLM(Architecture a) {
  return a == Architecture::Decoder || a == Architecture::Llama;
}

/// Where layer norm sits relative to each residual branch. JSON: "post" |
/// "pre".
enum class NormPlacement { Post, Pre };

/// FFN activation. JSON: "relu" | "gelu" (erf) | "gelu_tanh" (GPT-2's
/// gelu_new) | "silu" (x sigmoid(x)). Llama gates with it: act(gate) * up.
enum class Activation { ReLU, GELU, GELUTanh, SiLU };

/// Compute dtype of weights, activations and gradients. JSON: "fp32" | "fp16" |
/// "bf16". Master weights and optimizer states are always fp32.
enum class DType { F32, F16, BF16 };

/// JSON: "adamw" (decoupled weight decay) | "adam" (L2 penalty added to the
/// gradient).
enum class OptimizerType { AdamW, Adam };

/// Learning-rate schedule. JSON: "constant" | "linear" | "cosine" |
/// "inverse_sqrt".
enum class ScheduleType { Constant, Linear, Cosine, InverseSqrt };

struct ScheduleConfig {
  ScheduleType type = ScheduleType::Constant;
  int64_t warmup_steps = 0;  ///< optimizer steps of linear warmup from 0
  int64_t total_steps = 0;   ///< steps until the decay ends (linear, cosine)
  double min_lr_ratio = 0.0; ///< final lr / peak lr (linear, cosine)
};

struct OptimizerConfig {
  OptimizerType type = OptimizerType::AdamW;
  double lr = 1e-4; ///< peak learning rate
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;
  double clip_norm = 0.0; ///< global gradient-norm clip; 0 = off
  /// MiB of fp32 gradient per accumulation group and data-parallel
  /// all-reduce bucket (PyTorch DDP's bucket_cap_mb).
  double bucket_cap_mb = 25.0;
  ScheduleConfig schedule;
};

/// A validated model description. Field meanings, units, defaults and ranges
/// are documented in docs/model-description.md. Fields that do not apply to
/// the architecture hold their "off" value (0, false, or -1 for padding_idx).
struct ModelDescription {
  std::string name;
  Architecture architecture = Architecture::Encoder;
  int64_t encoder_layers = 0, decoder_layers = 0; ///< ViT: encoder_layers; llama: decoder_layers
  int64_t hidden = 0, heads = 0;
  int64_t kv_heads = 0; ///< key/value heads; divides heads (== heads: MHA)
  int64_t ffn = 0;
  int64_t vocab = 0;            ///< target/only vocabulary; 0 for ViT
  int64_t src_vocab = 0;        ///< encoder_decoder source vocabulary; else 0
  int64_t type_vocab_size = 0;  ///< encoder token types; else 0
  int64_t max_seq_len = 0;      ///< tokens per sequence (ViT: patches + 1)
  int64_t max_batch_tokens = 0; ///< tokens per step (per side for enc-dec)
  NormPlacement norm = NormPlacement::Post;
  Activation activation = Activation::GELU;
  double hidden_dropout = 0.0, attention_dropout = 0.0,
         activation_dropout = 0.0;
  double layer_norm_eps = 1e-5; ///< LayerNorm's; 0 for llama
  double rms_norm_eps = 0.0;    ///< llama's RMSNorm (default 1e-6); else 0
  /// llama: base of the rotary frequencies theta^(-2i / head_dim) (default
  /// 10000, Su et al. 2021, arXiv 2104.09864 section 3.2.2); else 0.
  double rope_theta = 0.0;
  bool tie_embeddings = false;   ///< output projection is the input embedding
  bool share_embeddings = false; ///< encoder_decoder: one table for both sides
  DType dtype = DType::F32;
  double label_smoothing = 0.0;
  int64_t padding_idx = -1; ///< -1 = no padding token
  int64_t image_size = 0, patch_size = 0, channels = 0,
          num_classes = 0; ///< ViT only; 0 elsewhere
  /// Train step: recompute each layer's activations in the backward except
  /// the attention's results (ls2-fuse's checkpoint-activations).
  bool activation_checkpointing = false;
  /// With activation_checkpointing: keep no attention results either, the
  /// backward runs each attention forward again (ls2-fuse's
  /// recompute-attention). Not with sequence_parallel_size > 1.
  bool recompute_attention = false;
  /// Decoder: ranks P one sequence is split over by sequence parallelism
  /// (ls2c-seq-parallel --train). max_batch_tokens then bounds one rank's
  /// tokens (a rank's share, 2 x ceil(max_seq_len / 2P), must fit it), so
  /// max_seq_len may reach about max_batch_tokens x P; 1 elsewhere.
  int64_t sequence_parallel_size = 1;
  /// Encoder: most labelled tokens (labels != -100) one batch may hold. The
  /// masked-LM head and its loss then run on the labelled rows only,
  /// gathered into a [max_predictions, hidden] matrix (BERT's
  /// max_predictions_per_seq, for a whole batch). 0 = absent: the head runs
  /// on every token.
  int64_t max_predictions = 0;
  OptimizerConfig optimizer;

  /// hidden / heads (elements per attention head).
  int64_t headDim() const;
  /// (image_size / patch_size)^2 for ViT; 0 for text models. Throws
  /// DescriptionError if it overflows (never for a validated description).
  int64_t numPatches() const;
};

/// A rejected description or an unreadable file. what() is one line,
/// "<source>: <json path>: <value>: <rule>" (value and path left out where they
/// do not apply, e.g. "<source>: file is empty"), of at most 300 bytes of
/// valid UTF-8 without control characters: whatever the input holds, quoted
/// parts are escaped (\xNN, \uNNNN) and cut on a character boundary with
/// "..." (path and value at 64 bytes, detail at 200; a long source keeps
/// its end).
class DescriptionError : public std::runtime_error {
public:
  DescriptionError(std::string source, std::string path, std::string detail);
  ~DescriptionError() override;

  /// The file (or caller-chosen name) the description came from, as given;
  /// may be "".
  const std::string &source() const { return source_; }
  /// JSON path such as "$.optimizer.betas[1]", "$" for whole-description
  /// rules, "" for file-level errors (unreadable, empty, not JSON). Escaped
  /// and cut as in what().
  const std::string &path() const { return path_; }
  /// The message without "<source>: <path>: ", escaped and cut as in what().
  const std::string &detail() const { return detail_; }

private:
  std::string source_, path_, detail_;
};

/// Parses and validates a description. `source` names the input in messages,
/// and its file name without ".json" is the default `name` (made to follow
/// the name rules: characters outside [A-Za-z0-9._-] become '_', leading dots
/// are dropped, at most kMaxNameLength characters, "model" if nothing is
/// left).
/// Also builds the parameter layout so that sizes whose element or byte counts
/// overflow int64 are rejected here. Throws DescriptionError.
ModelDescription parseModelDescription(std::string_view jsonText,
                                       const std::string &source);

/// Reads `path` and parses it (the path is the message source). Missing and
/// unreadable files, directories, anything else that is not a regular file
/// (FIFOs, devices, sockets: never opened, so never waited on) and files over
/// kMaxDescriptionBytes throw DescriptionError.
ModelDescription loadModelDescription(const std::string &path);

/// The description as JSON, with every field that applies to its architecture
/// written out (defaults included); parseModelDescription reads it back to an
/// identical description.
nlohmann::json toJson(const ModelDescription &desc);

/// JSON spellings of the enums.
std::string_view toString(Architecture a);
std::string_view toString(NormPlacement n);
std::string_view toString(Activation a);
std::string_view toString(DType d);
std::string_view toString(OptimizerType o);
std::string_view toString(ScheduleType s);

/// Bytes per element: 4 for fp32, 2 for fp16 and bf16.
size_t dtypeBytes(DType d);

} // namespace ls2c

#endif // LS2C_MODEL_MODELDESCRIPTION_H
