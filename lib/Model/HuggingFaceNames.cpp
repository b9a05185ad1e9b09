//===- HuggingFaceNames.cpp - transformers state dicts of BERT, GPT-2, Llama ===//
//
// The state dicts are written module by module as transformers registers
// them (modeling_bert.py: BertEmbeddings, BertLayer, BertLMPredictionHead;
// modeling_gpt2.py: GPT2Model, GPT2Block, Conv1D; modeling_llama.py:
// LlamaModel, LlamaDecoderLayer), independently of
// ParameterLayout, then checked against it: a difference is an ls2c bug.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Model/HuggingFaceNames.h"

#include "ls2c/Model/ParameterLayout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

namespace ls2c {

namespace {

class StateDict {
public:
  explicit StateDict(std::vector<HuggingFaceTensor> &out) : out_(out) {}

  void add(const std::string &name, std::vector<int64_t> shape,
           std::string rule) {
    out_.push_back({name, std::move(shape), std::move(rule), name, false});
  }
  void tied(const std::string &name, const std::string &source) {
    for (const HuggingFaceTensor &t : out_)
      if (t.name == source) {
        out_.push_back({name, t.shape, t.shapeRule, source, true});
        return;
      }
    throw std::logic_error("tied tensor '" + name + "' before its source '" +
                           source + "'");
  }
  /// nn.LayerNorm(hidden).
  void layerNorm(const std::string &prefix, int64_t h) {
    add(prefix + ".weight", {h}, "[hidden]");
    add(prefix + ".bias", {h}, "[hidden]");
  }
  /// nn.Linear(in, out): weight [out, in], bias [out].
  void linear(const std::string &prefix, int64_t out, const std::string &outRule,
              int64_t in, const std::string &inRule) {
    add(prefix + ".weight", {out, in}, "[" + outRule + ", " + inRule + "]");
    add(prefix + ".bias", {out}, "[" + outRule + "]");
  }
  /// transformers' Conv1D(nf=out, nx=in): weight [in, out], bias [out].
  void conv1d(const std::string &prefix, int64_t in, const std::string &inRule,
              int64_t out, const std::string &outRule) {
    add(prefix + ".weight", {in, out}, "[" + inRule + ", " + outRule + "]");
    add(prefix + ".bias", {out}, "[" + outRule + "]");
  }

private:
  std::vector<HuggingFaceTensor> &out_;
};

std::string_view hfActivation(Activation a) {
  switch (a) {
  case Activation::ReLU:
    return "relu";
  case Activation::GELU:
    return "gelu"; // erf, ACT2FN["gelu"]
  case Activation::GELUTanh:
    return "gelu_new"; // tanh approximation, GPT-2's NewGELUActivation
  case Activation::SiLU:
    return "silu";
  }
  return "?";
}

[[noreturn]] void refuse(const std::string &source, const std::string &path,
                         const std::string &value, const std::string &rule) {
  throw HuggingFaceError(source + ": " + path + ": " + value + ": " + rule);
}

void bert(const ModelDescription &d, HuggingFaceMapping &m) {
  const int64_t H = d.hidden, F = d.ffn, V = d.vocab;
  m.modelClass = "BertForMaskedLM";
  m.modelType = "bert";
  m.basePrefix = "bert.";
  m.layerPrefix = "bert.encoder.layer.";
  StateDict s(m.tensors);
  // BertEmbeddings (position_ids and token_type_ids: non-persistent buffers).
  s.add("bert.embeddings.word_embeddings.weight", {V, H}, "[vocab, hidden]");
  s.add("bert.embeddings.position_embeddings.weight", {d.max_seq_len, H},
        "[max_seq_len, hidden]");
  s.add("bert.embeddings.token_type_embeddings.weight", {d.type_vocab_size, H},
        "[type_vocab_size, hidden]");
  s.layerNorm("bert.embeddings.LayerNorm", H);
  // BertEncoder: BertLayer = attention (self, output), intermediate, output.
  for (int64_t i = 0; i < d.encoder_layers; ++i) {
    const std::string p = fmt::format("bert.encoder.layer.{}.", i);
    s.linear(p + "attention.self.query", H, "hidden", H, "hidden");
    s.linear(p + "attention.self.key", H, "hidden", H, "hidden");
    s.linear(p + "attention.self.value", H, "hidden", H, "hidden");
    s.linear(p + "attention.output.dense", H, "hidden", H, "hidden");
    s.layerNorm(p + "attention.output.LayerNorm", H);
    s.linear(p + "intermediate.dense", F, "ffn", H, "hidden");
    s.linear(p + "output.dense", H, "hidden", F, "ffn");
    s.layerNorm(p + "output.LayerNorm", H);
  }
  // BertForMaskedLM: BertModel(add_pooling_layer=False), then
  // cls = BertOnlyMLMHead. BertLMPredictionHead's own `bias` parameter comes
  // before its submodules in state_dict(); decoder = Linear(H, V, bias=False)
  // whose bias is then set to that parameter.
  s.add("cls.predictions.bias", {V}, "[vocab]");
  s.linear("cls.predictions.transform.dense", H, "hidden", H, "hidden");
  s.layerNorm("cls.predictions.transform.LayerNorm", H);
  if (d.tie_embeddings)
    s.tied("cls.predictions.decoder.weight",
           "bert.embeddings.word_embeddings.weight");
  else
    s.add("cls.predictions.decoder.weight", {V, H}, "[vocab, hidden]");
  s.tied("cls.predictions.decoder.bias", "cls.predictions.bias");

  m.config = {
      {"architectures", {"BertForMaskedLM"}},
      {"model_type", "bert"},
      {"vocab_size", V},
      {"hidden_size", H},
      {"num_hidden_layers", d.encoder_layers},
      {"num_attention_heads", d.heads},
      {"intermediate_size", F},
      {"hidden_act", std::string(hfActivation(d.activation))},
      {"hidden_dropout_prob", d.hidden_dropout},
      {"attention_probs_dropout_prob", d.attention_dropout},
      {"max_position_embeddings", d.max_seq_len},
      {"type_vocab_size", d.type_vocab_size},
      {"initializer_range", 0.02},
      {"layer_norm_eps", d.layer_norm_eps},
      {"pad_token_id", d.padding_idx >= 0 ? nlohmann::json(d.padding_idx)
                                          : nlohmann::json(nullptr)},
      {"position_embedding_type", "absolute"},
      {"is_decoder", false},
      {"tie_word_embeddings", d.tie_embeddings},
      {"torch_dtype", "float32"},
  };
}

void gpt2(const ModelDescription &d, HuggingFaceMapping &m) {
  const int64_t H = d.hidden, F = d.ffn, V = d.vocab;
  m.modelClass = "GPT2LMHeadModel";
  m.modelType = "gpt2";
  m.basePrefix = "transformer.";
  m.layerPrefix = "transformer.h.";
  StateDict s(m.tensors);
  // GPT2Model: wte, wpe, h (GPT2Block), ln_f.
  s.add("transformer.wte.weight", {V, H}, "[vocab, hidden]");
  s.add("transformer.wpe.weight", {d.max_seq_len, H}, "[max_seq_len, hidden]");
  for (int64_t i = 0; i < d.decoder_layers; ++i) {
    const std::string p = fmt::format("transformer.h.{}.", i);
    s.layerNorm(p + "ln_1", H);
    // GPT2Attention: c_attn = Conv1D(3 * n_embd, n_embd), c_proj.
    s.conv1d(p + "attn.c_attn", H, "hidden", 3 * H, "3 * hidden");
    s.conv1d(p + "attn.c_proj", H, "hidden", H, "hidden");
    s.layerNorm(p + "ln_2", H);
    // GPT2MLP(n_inner): c_fc = Conv1D(n_inner, n_embd), c_proj.
    s.conv1d(p + "mlp.c_fc", H, "hidden", F, "ffn");
    s.conv1d(p + "mlp.c_proj", F, "ffn", H, "hidden");
  }
  s.layerNorm("transformer.ln_f", H);
  // lm_head = Linear(n_embd, vocab, bias=False).
  if (d.tie_embeddings)
    s.tied("lm_head.weight", "transformer.wte.weight");
  else
    s.add("lm_head.weight", {V, H}, "[vocab, hidden]");

  m.config = {
      {"architectures", {"GPT2LMHeadModel"}},
      {"model_type", "gpt2"},
      {"vocab_size", V},
      {"n_positions", d.max_seq_len},
      {"n_embd", H},
      {"n_layer", d.decoder_layers},
      {"n_head", d.heads},
      {"n_inner", F},
      {"activation_function", std::string(hfActivation(d.activation))},
      {"resid_pdrop", d.hidden_dropout},
      {"embd_pdrop", d.hidden_dropout},
      {"attn_pdrop", d.attention_dropout},
      {"layer_norm_epsilon", d.layer_norm_eps},
      {"initializer_range", 0.02},
      {"scale_attn_weights", true},
      {"scale_attn_by_inverse_layer_idx", false},
      {"reorder_and_upcast_attn", false},
      {"add_cross_attention", false},
      {"tie_word_embeddings", d.tie_embeddings},
      // GPT2Config's defaults (50256) lie outside a smaller vocabulary.
      {"bos_token_id", V - 1},
      {"eos_token_id", V - 1},
      {"torch_dtype", "float32"},
  };
}

void llama(const ModelDescription &d, HuggingFaceMapping &m) {
  const int64_t H = d.hidden, F = d.ffn, V = d.vocab, KV = d.kv_heads * d.headDim();
  m.modelClass = "LlamaForCausalLM";
  m.modelType = "llama";
  m.basePrefix = "model.";
  m.layerPrefix = "model.layers.";
  StateDict s(m.tensors);
  auto linear = [&](const std::string &name, int64_t out, const std::string &outRule,
                    int64_t in, const std::string &inRule) {
    s.add(name, {out, in}, "[" + outRule + ", " + inRule + "]"); // bias=False
  };
  // LlamaModel: embed_tokens, layers (LlamaDecoderLayer), norm; the rotary
  // embedding's inv_freq is a non-persistent buffer.
  s.add("model.embed_tokens.weight", {V, H}, "[vocab, hidden]");
  for (int64_t i = 0; i < d.decoder_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    // LlamaAttention: q, k, v, o projections; LlamaMLP: gate, up, down.
    linear(p + "self_attn.q_proj.weight", H, "hidden", H, "hidden");
    linear(p + "self_attn.k_proj.weight", KV, "kv_heads * head_dim", H, "hidden");
    linear(p + "self_attn.v_proj.weight", KV, "kv_heads * head_dim", H, "hidden");
    linear(p + "self_attn.o_proj.weight", H, "hidden", H, "hidden");
    linear(p + "mlp.gate_proj.weight", F, "ffn", H, "hidden");
    linear(p + "mlp.up_proj.weight", F, "ffn", H, "hidden");
    linear(p + "mlp.down_proj.weight", H, "hidden", F, "ffn");
    s.add(p + "input_layernorm.weight", {H}, "[hidden]");
    s.add(p + "post_attention_layernorm.weight", {H}, "[hidden]");
  }
  s.add("model.norm.weight", {H}, "[hidden]");
  if (d.tie_embeddings)
    s.tied("lm_head.weight", "model.embed_tokens.weight");
  else
    s.add("lm_head.weight", {V, H}, "[vocab, hidden]");

  // LlamaConfig's defaults put bos at 1 and eos at 2: ids only a vocabulary
  // of at least 3 holds.
  const nlohmann::json bos = V > 2 ? nlohmann::json(1) : nlohmann::json(nullptr),
                       eos = V > 2 ? nlohmann::json(2) : nlohmann::json(nullptr);
  m.config = {
      {"architectures", {"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"vocab_size", V},
      {"hidden_size", H},
      {"intermediate_size", F},
      {"num_hidden_layers", d.decoder_layers},
      {"num_attention_heads", d.heads},
      {"num_key_value_heads", d.kv_heads},
      {"head_dim", d.headDim()},
      {"hidden_act", std::string(hfActivation(d.activation))},
      {"max_position_embeddings", d.max_seq_len},
      {"initializer_range", 0.02},
      {"rms_norm_eps", d.rms_norm_eps},
      {"rope_theta", d.rope_theta},
      {"rope_scaling", nullptr},
      {"attention_bias", false},
      {"attention_dropout", d.attention_dropout},
      {"mlp_bias", false},
      {"pretraining_tp", 1},
      {"use_cache", true},
      {"bos_token_id", bos},
      {"eos_token_id", eos},
      {"pad_token_id", d.padding_idx >= 0 ? nlohmann::json(d.padding_idx)
                                          : nlohmann::json(nullptr)},
      {"tie_word_embeddings", d.tie_embeddings},
      {"torch_dtype", "float32"},
  };
}

std::string shapeText(const std::vector<int64_t> &shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

/// Every trainable parameter of the layout is the source of exactly one
/// untied tensor of the same name and shape, and nothing else is.
void checkAgainstLayout(const ModelDescription &d, const HuggingFaceMapping &m) {
  ParameterLayout layout = buildParameterLayout(d);
  std::map<std::string, int> seen;
  for (const HuggingFaceTensor &t : m.tensors) {
    const ParameterSpec *p = layout.find(t.source);
    if (!p || !p->trainable || p->shape != t.shape)
      throw std::logic_error("ls2c bug: Hugging Face tensor '" + t.name +
                             "' " + shapeText(t.shape) +
                             " has no ls2c parameter of that shape");
    if (!t.tied)
      ++seen[t.source];
  }
  for (const ParameterSpec &p : layout.parameters)
    if (seen[p.name] != 1)
      throw std::logic_error("ls2c bug: ls2c parameter '" + p.name +
                             "' is not one Hugging Face tensor");
}

/// BertForMaskedLM or GPT2LMHeadModel, after the rules only they have.
void bertOrGpt2(const ModelDescription &d, const std::string &source, HuggingFaceMapping &m) {
  if (d.architecture != Architecture::Encoder &&
      d.architecture != Architecture::Decoder)
    refuse(source, "$.architecture",
           fmt::format("'{}'", toString(d.architecture)),
           "Hugging Face checkpoints are defined for 'encoder' "
           "(BertForMaskedLM), 'decoder' (GPT2LMHeadModel) and 'llama' "
           "(LlamaForCausalLM) models only");
  const bool encoder = d.architecture == Architecture::Encoder;
  if (encoder && d.norm != NormPlacement::Post)
    refuse(source, "$.norm", "'pre'",
           "BertForMaskedLM is post-LN; a pre-LN encoder has "
           "bert.encoder.final_layer_norm, which it lacks");
  if (!encoder && d.norm != NormPlacement::Pre)
    refuse(source, "$.norm", "'post'",
           "GPT2LMHeadModel is pre-LN with a final ln_f; a post-LN decoder "
           "computes something else from the same names");
  if (d.kv_heads != d.heads)
    refuse(source, "$.kv_heads", std::to_string(d.kv_heads),
           fmt::format("{} has no grouped-query attention: kv_heads must "
                       "equal heads ({})",
                       encoder ? "BERT" : "GPT-2", d.heads));
  if (encoder)
    bert(d, m);
  else
    gpt2(d, m);
}

} // namespace

const HuggingFaceTensor *HuggingFaceMapping::find(const std::string &name) const {
  for (const HuggingFaceTensor &t : tensors)
    if (t.name == name)
      return &t;
  return nullptr;
}

HuggingFaceMapping huggingFaceMapping(const ModelDescription &d,
                                      const std::string &source) {
  HuggingFaceMapping m;
  m.source = source;
  m.modelName = d.name;
  m.layers = d.architecture == Architecture::Encoder ? d.encoder_layers
                                                     : d.decoder_layers;
  // Llama's pre-norm, kv heads and lack of residual dropout are
  // description rules; BERT's and GPT-2's are checked by bertOrGpt2.
  if (d.architecture == Architecture::Llama)
    llama(d, m);
  else
    bertOrGpt2(d, source, m);
  if (d.activation_dropout != 0)
    m.notes.push_back(fmt::format(
        "activation_dropout {} has no {} equivalent (it only changes training)",
        d.activation_dropout, m.modelClass));
  if (d.label_smoothing != 0)
    m.notes.push_back(fmt::format(
        "label_smoothing {} is a loss setting, not part of {}'s config",
        d.label_smoothing, m.modelClass));
  checkAgainstLayout(d, m);
  return m;
}

} // namespace ls2c
