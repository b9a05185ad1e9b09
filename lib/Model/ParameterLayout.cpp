//===- ParameterLayout.cpp - Named parameters of a described model --------===//

#include "ls2c/Model/ParameterLayout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

namespace ls2c {

namespace {

[[noreturn]] void overflow(const std::string &what) {
  throw DescriptionError("", "$", what + " overflows 64-bit integers");
}

int64_t mulChecked(int64_t a, int64_t b, const std::string &what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    overflow(what);
  return r;
}

int64_t addChecked(int64_t a, int64_t b, const std::string &what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    overflow(what);
  return r;
}

// Appends specs with the conventions shared by all four architectures: biases
// and norm parameters start at 0/1 and are exempt from weight decay.
class Builder {
public:
  explicit Builder(ParameterLayout &layout) : layout_(layout) {}

  void add(std::string name, std::vector<int64_t> shape, ParameterInit init,
           double std, bool decay = true, bool trainable = true) {
    ParameterSpec spec;
    spec.name = std::move(name);
    spec.shape = std::move(shape);
    spec.init = init;
    spec.init_std = init == ParameterInit::Normal ? std : 0.0;
    spec.weight_decay = decay && trainable;
    spec.trainable = trainable;
    (void)spec.numel(); // reject overflowing shapes as soon as they appear
    layout_.parameters.push_back(std::move(spec));
  }
  void bias(const std::string &name, int64_t n) {
    add(name, {n}, ParameterInit::Zeros, 0.0, /*decay=*/false);
  }
  void norm(const std::string &prefix, int64_t n) {
    add(prefix + ".weight", {n}, ParameterInit::Ones, 0.0, /*decay=*/false);
    bias(prefix + ".bias", n);
  }
  /// nn.Linear: weight [out, in] and bias [out].
  void linear(const std::string &prefix, int64_t out, int64_t in,
              ParameterInit init, double std) {
    add(prefix + ".weight", {out, in}, init, std);
    bias(prefix + ".bias", out);
  }
  /// GPT-2's Conv1D: weight [in, out] and bias [out].
  void conv1d(const std::string &prefix, int64_t in, int64_t out, double std) {
    add(prefix + ".weight", {in, out}, ParameterInit::Normal, std);
    bias(prefix + ".bias", out);
  }

private:
  ParameterLayout &layout_;
};

struct Dims {
  int64_t H, F, L, kvDim, qkvDim;
};

Dims dims(const ModelDescription &d) {
  Dims r;
  r.H = d.hidden;
  r.F = d.ffn;
  r.L = d.max_seq_len;
  r.kvDim = mulChecked(d.kv_heads, d.headDim(), "kv_heads * head dim");
  r.qkvDim = addChecked(d.hidden, mulChecked(2, r.kvDim, "2 * kv dim"),
                        "fused qkv width");
  return r;
}

void buildBert(const ModelDescription &d, Builder &b) {
  const Dims x = dims(d);
  const auto normal = ParameterInit::Normal;
  b.add("bert.embeddings.word_embeddings.weight", {d.vocab, x.H}, normal, 0.02);
  b.add("bert.embeddings.position_embeddings.weight", {x.L, x.H}, normal, 0.02);
  b.add("bert.embeddings.token_type_embeddings.weight",
        {d.type_vocab_size, x.H}, normal, 0.02);
  b.norm("bert.embeddings.LayerNorm", x.H);
  for (int64_t i = 0; i < d.encoder_layers; ++i) {
    const std::string p = fmt::format("bert.encoder.layer.{}.", i);
    b.linear(p + "attention.self.query", x.H, x.H, normal, 0.02);
    b.linear(p + "attention.self.key", x.kvDim, x.H, normal, 0.02);
    b.linear(p + "attention.self.value", x.kvDim, x.H, normal, 0.02);
    b.linear(p + "attention.output.dense", x.H, x.H, normal, 0.02);
    b.norm(p + "attention.output.LayerNorm", x.H);
    b.linear(p + "intermediate.dense", x.F, x.H, normal, 0.02);
    b.linear(p + "output.dense", x.H, x.F, normal, 0.02);
    b.norm(p + "output.LayerNorm", x.H);
  }
  // Not in Hugging Face's BERT: pre-LN stacks need a norm after the last layer.
  if (d.norm == NormPlacement::Pre)
    b.norm("bert.encoder.final_layer_norm", x.H);
  // HF registers the head's own bias before its submodules.
  b.bias("cls.predictions.bias", d.vocab);
  b.linear("cls.predictions.transform.dense", x.H, x.H, normal, 0.02);
  b.norm("cls.predictions.transform.LayerNorm", x.H);
  if (!d.tie_embeddings)
    b.add("cls.predictions.decoder.weight", {d.vocab, x.H}, normal, 0.02);
}

void buildGpt2(const ModelDescription &d, Builder &b) {
  const Dims x = dims(d);
  const auto normal = ParameterInit::Normal;
  // GPT-2 scales the init of projections into the residual stream by the
  // number of residual additions.
  const double projStd =
      0.02 / std::sqrt(2.0 * static_cast<double>(d.decoder_layers));
  b.add("transformer.wte.weight", {d.vocab, x.H}, normal, 0.02);
  b.add("transformer.wpe.weight", {x.L, x.H}, normal, 0.02);
  for (int64_t i = 0; i < d.decoder_layers; ++i) {
    const std::string p = fmt::format("transformer.h.{}.", i);
    b.norm(p + "ln_1", x.H);
    b.conv1d(p + "attn.c_attn", x.H, x.qkvDim, 0.02);
    b.conv1d(p + "attn.c_proj", x.H, x.H, projStd);
    b.norm(p + "ln_2", x.H);
    b.conv1d(p + "mlp.c_fc", x.H, x.F, 0.02);
    b.conv1d(p + "mlp.c_proj", x.F, x.H, projStd);
  }
  if (d.norm == NormPlacement::Pre)
    b.norm("transformer.ln_f", x.H);
  if (!d.tie_embeddings)
    b.add("lm_head.weight", {d.vocab, x.H}, normal, 0.02);
}

void fairseqAttention(Builder &b, const std::string &p, const Dims &x) {
  const auto xavier = ParameterInit::XavierUniform;
  b.linear(p + ".q_proj", x.H, x.H, xavier, 0.0);
  b.linear(p + ".k_proj", x.kvDim, x.H, xavier, 0.0);
  b.linear(p + ".v_proj", x.kvDim, x.H, xavier, 0.0);
  b.linear(p + ".out_proj", x.H, x.H, xavier, 0.0);
}

void buildFairseq(const ModelDescription &d, Builder &b) {
  const Dims x = dims(d);
  const auto xavier = ParameterInit::XavierUniform;
  const double embStd = 1.0 / std::sqrt(static_cast<double>(x.H));
  const bool pre = d.norm == NormPlacement::Pre;
  auto positions = [&](const std::string &name) {
    b.add(name, {x.L, x.H}, ParameterInit::Sinusoidal, 0.0, /*decay=*/false,
          /*trainable=*/false);
  };
  auto ffn = [&](const std::string &p) {
    b.linear(p + "fc1", x.F, x.H, xavier, 0.0);
    b.linear(p + "fc2", x.H, x.F, xavier, 0.0);
    b.norm(p + "final_layer_norm", x.H);
  };

  b.add("encoder.embed_tokens.weight", {d.src_vocab, x.H},
        ParameterInit::Normal, embStd);
  positions("encoder.embed_positions.weights");
  for (int64_t i = 0; i < d.encoder_layers; ++i) {
    const std::string p = fmt::format("encoder.layers.{}.", i);
    fairseqAttention(b, p + "self_attn", x);
    b.norm(p + "self_attn_layer_norm", x.H);
    ffn(p);
  }
  if (pre)
    b.norm("encoder.layer_norm", x.H);

  if (!d.share_embeddings)
    b.add("decoder.embed_tokens.weight", {d.vocab, x.H}, ParameterInit::Normal,
          embStd);
  positions("decoder.embed_positions.weights");
  for (int64_t i = 0; i < d.decoder_layers; ++i) {
    const std::string p = fmt::format("decoder.layers.{}.", i);
    fairseqAttention(b, p + "self_attn", x);
    b.norm(p + "self_attn_layer_norm", x.H);
    fairseqAttention(b, p + "encoder_attn", x);
    b.norm(p + "encoder_attn_layer_norm", x.H);
    ffn(p);
  }
  if (pre)
    b.norm("decoder.layer_norm", x.H);
  if (!d.tie_embeddings)
    b.add("decoder.output_projection.weight", {d.vocab, x.H},
          ParameterInit::Normal, embStd);
}

void buildVit(const ModelDescription &d, Builder &b) {
  const Dims x = dims(d);
  const auto normal = ParameterInit::Normal;
  const int64_t tokens = addChecked(d.numPatches(), 1, "num_patches + 1");
  // timm exempts cls_token and pos_embed from weight decay (no_weight_decay()).
  b.add("cls_token", {1, 1, x.H}, normal, 0.02, /*decay=*/false);
  b.add("pos_embed", {1, tokens, x.H}, normal, 0.02, /*decay=*/false);
  b.add("patch_embed.proj.weight",
        {x.H, d.channels, d.patch_size, d.patch_size}, normal, 0.02);
  b.bias("patch_embed.proj.bias", x.H);
  for (int64_t i = 0; i < d.encoder_layers; ++i) {
    const std::string p = fmt::format("blocks.{}.", i);
    b.norm(p + "norm1", x.H);
    b.linear(p + "attn.qkv", x.qkvDim, x.H, normal, 0.02);
    b.linear(p + "attn.proj", x.H, x.H, normal, 0.02);
    b.norm(p + "norm2", x.H);
    b.linear(p + "mlp.fc1", x.F, x.H, normal, 0.02);
    b.linear(p + "mlp.fc2", x.H, x.F, normal, 0.02);
  }
  if (d.norm == NormPlacement::Pre)
    b.norm("norm", x.H);
  b.linear("head", d.num_classes, x.H, normal, 0.02);
}

// Hugging Face LlamaForCausalLM's state dict, in its order: nn.Linear
// without biases, every weight N(0, initializer_range 0.02) (its
// _init_weights), RMSNorm weights at 1 and exempt from weight decay.
void buildLlama(const ModelDescription &d, Builder &b) {
  const Dims x = dims(d);
  const auto normal = ParameterInit::Normal;
  auto rmsNorm = [&](const std::string &name) {
    b.add(name, {x.H}, ParameterInit::Ones, 0.0, /*decay=*/false);
  };
  b.add("model.embed_tokens.weight", {d.vocab, x.H}, normal, 0.02);
  for (int64_t i = 0; i < d.decoder_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    b.add(p + "self_attn.q_proj.weight", {x.H, x.H}, normal, 0.02);
    b.add(p + "self_attn.k_proj.weight", {x.kvDim, x.H}, normal, 0.02);
    b.add(p + "self_attn.v_proj.weight", {x.kvDim, x.H}, normal, 0.02);
    b.add(p + "self_attn.o_proj.weight", {x.H, x.H}, normal, 0.02);
    b.add(p + "mlp.gate_proj.weight", {x.F, x.H}, normal, 0.02);
    b.add(p + "mlp.up_proj.weight", {x.F, x.H}, normal, 0.02);
    b.add(p + "mlp.down_proj.weight", {x.H, x.F}, normal, 0.02);
    rmsNorm(p + "input_layernorm.weight");
    rmsNorm(p + "post_attention_layernorm.weight");
  }
  rmsNorm("model.norm.weight");
  if (!d.tie_embeddings)
    b.add("lm_head.weight", {d.vocab, x.H}, normal, 0.02);
}

} // namespace

std::string_view toString(ParameterInit init) {
  switch (init) {
  case ParameterInit::Zeros:
    return "zeros";
  case ParameterInit::Ones:
    return "ones";
  case ParameterInit::Normal:
    return "normal";
  case ParameterInit::XavierUniform:
    return "xavier_uniform";
  case ParameterInit::Sinusoidal:
    return "sinusoidal";
  }
  return "?";
}

int64_t ParameterSpec::numel() const {
  int64_t n = 1;
  for (int64_t dim : shape) {
    if (dim < 0)
      throw DescriptionError("", "$",
                             fmt::format("'{}' has a negative dimension [{}]",
                                         name, fmt::join(shape, ", ")));
    if (__builtin_mul_overflow(n, dim, &n))
      overflow(fmt::format("element count of '{}' [{}]", name,
                           fmt::join(shape, ", ")));
  }
  return n;
}

namespace {
int64_t sumElements(const ParameterLayout &layout, bool trainable) {
  int64_t total = 0;
  for (const ParameterSpec &p : layout.parameters)
    if (p.trainable == trainable)
      total = addChecked(total, p.numel(),
                         trainable ? "parameter count" : "buffer count");
  return total;
}
} // namespace

int64_t ParameterLayout::numParameters() const {
  return sumElements(*this, true);
}

int64_t ParameterLayout::numBufferElements() const {
  return sumElements(*this, false);
}

int64_t ParameterLayout::computeWeightBytes(DType dtype) const {
  return mulChecked(numParameters(), static_cast<int64_t>(dtypeBytes(dtype)),
                    "weight bytes");
}

int64_t ParameterLayout::masterWeightBytes() const {
  return mulChecked(numParameters(), 4, "master weight bytes");
}

int64_t ParameterLayout::gradientBytes(DType dtype) const {
  return mulChecked(numParameters(), static_cast<int64_t>(dtypeBytes(dtype)),
                    "gradient bytes");
}

int64_t ParameterLayout::optimizerStateBytes() const {
  return mulChecked(numParameters(), 8, "optimizer state bytes");
}

const ParameterSpec *ParameterLayout::find(std::string_view name) const {
  for (const ParameterSpec &p : parameters)
    if (p.name == name)
      return &p;
  return nullptr;
}

ParameterLayout buildParameterLayout(const ModelDescription &desc) {
  // Validated descriptions never trip this; it keeps a hand-built one from
  // allocating millions of specs.
  if (desc.encoder_layers > kMaxLayers || desc.decoder_layers > kMaxLayers)
    throw DescriptionError("", "$",
                           fmt::format("more than {} layers", kMaxLayers));
  ParameterLayout layout;
  Builder b(layout);
  switch (desc.architecture) {
  case Architecture::Encoder:
    buildBert(desc, b);
    break;
  case Architecture::Decoder:
    buildGpt2(desc, b);
    break;
  case Architecture::EncoderDecoder:
    buildFairseq(desc, b);
    break;
  case Architecture::ViT:
    buildVit(desc, b);
    break;
  case Architecture::Llama:
    buildLlama(desc, b);
    break;
  }
  return layout;
}

} // namespace ls2c
