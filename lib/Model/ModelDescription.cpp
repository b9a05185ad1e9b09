//===- ModelDescription.cpp - Parse and validate model.json ---------------===//

#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Model/ParameterLayout.h"

#include "DescriptionFile.h"
#include "Float32Rules.h"
#include "JsonParse.h"
#include "JsonReader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cctype>
#include <optional>
#include <utility>
#include <vector>

namespace ls2c {

using json = nlohmann::json;
using detail::allowedList;
using detail::childPath;
using detail::Reader;
using detail::Spelling;

//===----------------------------------------------------------------------===//
// Small pieces
//===----------------------------------------------------------------------===//

namespace {

constexpr Spelling<Architecture> kArchitectures[] = {
    {Architecture::Encoder, "encoder"},
    {Architecture::Decoder, "decoder"},
    {Architecture::EncoderDecoder, "encoder_decoder"},
    {Architecture::ViT, "vit"},
    {Architecture::Llama, "llama"}};
constexpr Spelling<NormPlacement> kNorms[] = {{NormPlacement::Post, "post"},
                                              {NormPlacement::Pre, "pre"}};
constexpr Spelling<Activation> kActivations[] = {
    {Activation::ReLU, "relu"},
    {Activation::GELU, "gelu"},
    {Activation::GELUTanh, "gelu_tanh"},
    {Activation::SiLU, "silu"}};
constexpr Spelling<DType> kDTypes[] = {
    {DType::F32, "fp32"}, {DType::F16, "fp16"}, {DType::BF16, "bf16"}};
constexpr Spelling<OptimizerType> kOptimizers[] = {
    {OptimizerType::AdamW, "adamw"}, {OptimizerType::Adam, "adam"}};
constexpr Spelling<ScheduleType> kSchedules[] = {
    {ScheduleType::Constant, "constant"},
    {ScheduleType::Linear, "linear"},
    {ScheduleType::Cosine, "cosine"},
    {ScheduleType::InverseSqrt, "inverse_sqrt"}};

template <typename E, size_t N>
std::string_view spell(const Spelling<E> (&table)[N], E value) {
  for (const auto &s : table)
    if (s.value == value)
      return s.name;
  return "?";
}

} // namespace

std::string_view toString(Architecture a) { return spell(kArchitectures, a); }
std::string_view toString(NormPlacement n) { return spell(kNorms, n); }
std::string_view toString(Activation a) { return spell(kActivations, a); }
std::string_view toString(DType d) { return spell(kDTypes, d); }
std::string_view toString(OptimizerType o) { return spell(kOptimizers, o); }
std::string_view toString(ScheduleType s) { return spell(kSchedules, s); }

size_t dtypeBytes(DType d) { return d == DType::F32 ? 4 : 2; }

int64_t ModelDescription::headDim() const {
  return heads > 0 ? hidden / heads : 0;
}

int64_t ModelDescription::numPatches() const {
  if (architecture != Architecture::ViT || patch_size <= 0)
    return 0;
  const int64_t side = image_size / patch_size;
  int64_t n;
  if (__builtin_mul_overflow(side, side, &n))
    throw DescriptionError("", "$.image_size",
                           "(image_size / patch_size)^2 overflows 64-bit "
                           "integers");
  return n;
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

namespace {

using MD = ModelDescription;

enum ArchBit : unsigned { kE = 1, kD = 2, kED = 4, kV = 8, kL = 16 };
constexpr unsigned kText = kE | kD | kED | kL, kAll = kText | kV;

unsigned bit(Architecture a) {
  switch (a) {
  case Architecture::Encoder:
    return kE;
  case Architecture::Decoder:
    return kD;
  case Architecture::EncoderDecoder:
    return kED;
  case Architecture::ViT:
    return kV;
  case Architecture::Llama:
    return kL;
  }
  return 0;
}

// Integer fields: where they apply, where they are required, their "off"
// value where they do not apply, whether they are sizes (positive) and
// whether they count the rows of a table ids or labels index.
struct IntField {
  const char *key;
  int64_t MD::*member;
  unsigned applies, required;
  int64_t off;
  bool size;
  bool table = false;
};
const IntField kIntFields[] = {
    {"encoder_layers", &MD::encoder_layers, kE | kED | kV, kE | kED | kV, 0,
     true},
    {"decoder_layers", &MD::decoder_layers, kD | kED | kL, kD | kED | kL, 0,
     true},
    {"hidden", &MD::hidden, kAll, kAll, 0, true},
    {"heads", &MD::heads, kAll, kAll, 0, true},
    {"kv_heads", &MD::kv_heads, kAll, 0, 0, true},
    {"ffn", &MD::ffn, kAll, kAll, 0, true},
    {"vocab", &MD::vocab, kText, kText, 0, true, true},
    {"src_vocab", &MD::src_vocab, kED, 0, 0, true, true},
    {"type_vocab_size", &MD::type_vocab_size, kE, 0, 0, true, true},
    {"max_seq_len", &MD::max_seq_len, kAll, kText, 0, true},
    {"max_batch_tokens", &MD::max_batch_tokens, kAll, kAll, 0, true},
    {"padding_idx", &MD::padding_idx, kText, 0, -1, false},
    {"image_size", &MD::image_size, kV, kV, 0, true},
    {"patch_size", &MD::patch_size, kV, kV, 0, true},
    {"channels", &MD::channels, kV, 0, 0, true},
    {"num_classes", &MD::num_classes, kV, kV, 0, true, true},
    {"sequence_parallel_size", &MD::sequence_parallel_size, kD | kL, 0, 1, true},
    {"max_predictions", &MD::max_predictions, kE, 0, 0, true},
};

// Per-architecture defaults: those of BERT, GPT-2, fairseq's Transformer and
// timm's ViT, so a preset need not repeat its reference's settings.
struct ArchDefaults {
  NormPlacement norm;
  Activation activation;
  double hidden_dropout, attention_dropout, layer_norm_eps;
  bool tie_embeddings;
  int64_t padding_idx;
};
ArchDefaults defaultsFor(Architecture a) {
  switch (a) {
  case Architecture::Encoder:
    return {NormPlacement::Post, Activation::GELU, 0.1, 0.1, 1e-12, true, 0};
  case Architecture::Decoder:
    return {NormPlacement::Pre, Activation::GELUTanh, 0.1, 0.1, 1e-5, true, -1};
  case Architecture::EncoderDecoder:
    return {NormPlacement::Post, Activation::ReLU, 0.1, 0.0, 1e-5, false, 1};
  case Architecture::ViT:
    return {NormPlacement::Pre, Activation::GELU, 0.0, 0.0, 1e-6, false, -1};
  case Architecture::Llama: // eps: rms_norm_eps
    return {NormPlacement::Pre, Activation::SiLU, 0.0, 0.0, 1e-6, false, -1};
  }
  return {};
}

// clang-format off
const std::vector<std::string_view> kTopKeys = {
    "name", "architecture", "encoder_layers", "decoder_layers", "hidden",
    "heads", "kv_heads", "ffn", "vocab", "src_vocab", "type_vocab_size",
    "max_seq_len", "max_batch_tokens", "norm", "activation", "hidden_dropout",
    "attention_dropout", "activation_dropout", "layer_norm_eps",
    "tie_embeddings", "share_embeddings", "dtype", "label_smoothing",
    "padding_idx", "image_size", "patch_size", "channels", "num_classes",
    "activation_checkpointing", "recompute_attention", "sequence_parallel_size",
    "max_predictions", "rms_norm_eps", "rope_theta", "optimizer"};
// clang-format on
const std::vector<std::string_view> kOptimizerKeys = {
    "type", "lr", "betas", "eps", "weight_decay", "clip_norm", "bucket_cap_mb",
    "schedule"};
const std::vector<std::string_view> kScheduleKeys = {
    "type", "warmup_steps", "total_steps", "min_lr_ratio"};

bool nameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ||
         c == '.';
}

// 1 to kMaxNameLength characters of [A-Za-z0-9._-], not starting with '.'
// (which also rules out "." and "..": names become file names).
bool validName(const std::string &s) {
  return !s.empty() && s.size() <= kMaxNameLength && s[0] != '.' &&
         std::all_of(s.begin(), s.end(), nameChar);
}

// "examples/bert-base.json" -> "bert-base", made valid: each character
// outside the name alphabet becomes '_' (one '_' per UTF-8 character), leading
// dots are dropped, the result is cut to kMaxNameLength, and "model" stands in
// for nothing.
std::string nameFromSource(const std::string &source) {
  std::string_view base(source);
  base.remove_prefix(std::min(base.size(), base.find_last_of('/') + 1));
  if (base.size() >= 5 && base.substr(base.size() - 5) == ".json")
    base.remove_suffix(5);
  while (!base.empty() && base.front() == '.')
    base.remove_prefix(1);
  std::string s;
  for (char c : base) {
    if (s.size() == kMaxNameLength)
      break;
    if (nameChar(c))
      s += c;
    else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) // not a UTF-8
      s += '_';                                              // continuation
  }
  return s.empty() ? "model" : s;
}

class Validator {
public:
  Validator(const json &root, const std::string &source)
      : root_(root), source_(source), r_(source) {}

  ModelDescription run() {
    r_.checkKeys(root_, "$", kTopKeys);
    const json *opt = r_.object(root_, "$", "optimizer");
    const json *sched = nullptr;
    if (opt) {
      r_.checkKeys(*opt, "$.optimizer", kOptimizerKeys);
      sched = r_.object(*opt, "$.optimizer", "schedule");
      if (sched)
        r_.checkKeys(*sched, "$.optimizer.schedule", kScheduleKeys);
    }

    std::optional<Architecture> arch =
        r_.enumeration(root_, "$", "architecture", kArchitectures);
    if (!arch)
      r_.fail("$.architecture",
              fmt::format("missing required field (one of {})",
                          allowedList(kArchitectures)));
    d_.architecture = *arch;
    archName_ = std::string(toString(*arch));

    readName();
    readIntegers();
    readModelFlags();
    checkSizes();
    if (opt)
      readOptimizer(*opt, sched);
    checkLayoutFits();
    return d_;
  }

private:
  bool applies(unsigned archs) const { return archs & bit(d_.architecture); }
  std::string path(const char *key) const { return childPath("$", key); }
  [[noreturn]] void failAt(const char *key, const std::string &rule) const {
    auto it = root_.find(key);
    if (it == root_.end())
      r_.fail(path(key), rule);
    r_.fail(path(key), *it, rule);
  }
  std::string notApplicable() const {
    return fmt::format("does not apply to architecture '{}'", archName_);
  }

  void readName() {
    std::optional<std::string> name = r_.string(root_, "$", "name");
    if (name && !validName(*name))
      failAt("name", !name->empty() && name->front() == '.'
                         ? "must not start with '.' (names become file names)"
                         : fmt::format("must be 1 to {} characters from "
                                       "[A-Za-z0-9._-]",
                                       kMaxNameLength));
    d_.name = name ? *name : nameFromSource(source_);
  }

  void readIntegers() {
    for (const IntField &f : kIntFields) {
      std::optional<int64_t> v = r_.integer(root_, "$", f.key);
      if (!applies(f.applies)) {
        if (v && *v != f.off)
          failAt(f.key, notApplicable());
        d_.*f.member = f.off;
        continue;
      }
      if (!v) {
        if (applies(f.required))
          r_.fail(path(f.key),
                  fmt::format("missing required field for architecture '{}'",
                              archName_));
        continue;
      }
      if (f.size && *v <= 0)
        failAt(f.key, "must be a positive integer");
      d_.*f.member = *v;
    }
    // Defaults that depend on other fields.
    const ArchDefaults def = defaultsFor(d_.architecture);
    if (!root_.contains("kv_heads"))
      d_.kv_heads = d_.heads;
    if (applies(kED) && !root_.contains("src_vocab"))
      d_.src_vocab = d_.vocab;
    if (applies(kE) && !root_.contains("type_vocab_size"))
      d_.type_vocab_size = 2;
    if (applies(kText) && !root_.contains("padding_idx"))
      d_.padding_idx = def.padding_idx;
    if (applies(kV) && !root_.contains("channels"))
      d_.channels = 3;
  }

  // A top-level number, checked by `rule` (one of Float32Rules.h).
  double checked(const char *key, double def, std::string (*rule)(double)) {
    std::optional<double> v = r_.number(root_, "$", key);
    if (!v)
      return def;
    if (std::string broken = rule(*v); !broken.empty())
      failAt(key, broken);
    return *v;
  }

  void readModelFlags() {
    const ArchDefaults def = defaultsFor(d_.architecture);
    d_.norm = r_.enumeration(root_, "$", "norm", kNorms).value_or(def.norm);
    d_.activation = r_.enumeration(root_, "$", "activation", kActivations)
                        .value_or(def.activation);
    d_.dtype =
        r_.enumeration(root_, "$", "dtype", kDTypes).value_or(DType::F32);
    d_.hidden_dropout =
        checked("hidden_dropout", def.hidden_dropout, detail::probabilityRule);
    d_.attention_dropout = checked("attention_dropout", def.attention_dropout,
                                   detail::probabilityRule);
    d_.activation_dropout =
        checked("activation_dropout", 0.0, detail::probabilityRule);
    d_.label_smoothing =
        checked("label_smoothing", 0.0, detail::probabilityRule);
    if (applies(kL)) {
      readLlamaFlags(def);
    } else {
      for (const char *key : {"rms_norm_eps", "rope_theta"})
        if (root_.contains(key))
          failAt(key, notApplicable());
      d_.layer_norm_eps =
          checked("layer_norm_eps", def.layer_norm_eps, detail::positiveF32Rule);
    }

    std::optional<bool> tie = r_.boolean(root_, "$", "tie_embeddings");
    if (tie && *tie && !applies(kText))
      failAt("tie_embeddings", notApplicable());
    d_.tie_embeddings = applies(kText) && tie.value_or(def.tie_embeddings);
    std::optional<bool> share = r_.boolean(root_, "$", "share_embeddings");
    if (share && *share && !applies(kED))
      failAt("share_embeddings", notApplicable());
    d_.share_embeddings = share.value_or(false);
    d_.activation_checkpointing =
        r_.boolean(root_, "$", "activation_checkpointing").value_or(false);
    d_.recompute_attention = r_.boolean(root_, "$", "recompute_attention").value_or(false);
    if (d_.recompute_attention && !d_.activation_checkpointing)
      failAt("recompute_attention",
             "needs \"activation_checkpointing\": true (without checkpointing every "
             "attention result is kept anyway)");
  }

  // LlamaForCausalLM: pre-norm RMSNorm blocks, no residual or activation
  // dropout (only attention_dropout), rotary positions.
  void readLlamaFlags(const ArchDefaults &def) {
    if (d_.norm != NormPlacement::Pre)
      failAt("norm", "must be 'pre' for architecture 'llama' (its RMSNorms sit "
                     "before each branch and after the last layer)");
    const std::pair<const char *, double> dropouts[] = {
        {"hidden_dropout", d_.hidden_dropout},
        {"activation_dropout", d_.activation_dropout}};
    for (const auto &[key, rate] : dropouts)
      if (rate != 0.0)
        failAt(key, "must be 0 for architecture 'llama' (LlamaForCausalLM has "
                    "only attention_dropout)");
    if (root_.contains("layer_norm_eps"))
      failAt("layer_norm_eps", "does not apply to architecture 'llama' (its "
                               "norms are RMSNorm: rms_norm_eps)");
    d_.layer_norm_eps = 0.0;
    d_.rms_norm_eps =
        checked("rms_norm_eps", def.layer_norm_eps, detail::positiveF32Rule);
    d_.rope_theta = checked("rope_theta", 10000.0, [](double v) -> std::string {
      // Used as an f32. At or below 1 the frequencies theta^(-2i/d) do not
      // fall with i.
      const float f = static_cast<float>(v);
      if (!std::isfinite(f))
        return "overflows 32-bit float (must be at most 3.4028235e+38)";
      if (!(f > 1.0f))
        return "must be greater than 1 as a 32-bit float";
      return "";
    });
  }

  void checkSizes() {
    if (d_.max_batch_tokens > kMaxBatchTokens)
      failAt("max_batch_tokens",
             fmt::format("must be at most {} (token ids, positions and "
                         "cu_seqlens are int32)",
                         kMaxBatchTokens));
    if (d_.encoder_layers > kMaxLayers)
      failAt("encoder_layers", fmt::format("must be at most {}", kMaxLayers));
    if (d_.decoder_layers > kMaxLayers)
      failAt("decoder_layers", fmt::format("must be at most {}", kMaxLayers));
    if (d_.hidden % d_.heads != 0)
      failAt("hidden",
             fmt::format("must be divisible by heads ({})", d_.heads));
    if (d_.headDim() > kMaxHeadDim)
      failAt("heads",
             fmt::format("head dim hidden / heads = {} / {} = {} must "
                         "be at most {} (use more heads)",
                         d_.hidden, d_.heads, d_.headDim(), kMaxHeadDim));
    if (d_.kv_heads > d_.heads || d_.heads % d_.kv_heads != 0)
      failAt("kv_heads", fmt::format("must divide heads ({})", d_.heads));
    if (applies(kL) && d_.headDim() % 2 != 0)
      failAt("heads", fmt::format("head dim hidden / heads = {} / {} = {} must be even for "
                                  "architecture 'llama' (rotary embeddings turn pairs of dims)",
                                  d_.hidden, d_.heads, d_.headDim()));
    if (applies(kText) && d_.vocab < 2)
      failAt("vocab", "must be at least 2");
    // An absent src_vocab defaults to vocab, which passed the check above.
    if (applies(kED) && d_.src_vocab < 2)
      failAt("src_vocab", "must be at least 2");
    // Token ids, token types and labels index these tables as int32.
    for (const IntField &f : kIntFields)
      if (f.table && applies(f.applies) && d_.*f.member > kMaxClasses)
        failAt(f.key, fmt::format("must be at most {} (token ids and labels "
                                  "are int32)",
                                  kMaxClasses));
    if (applies(kV))
      checkVit();
    if (d_.sequence_parallel_size > kMaxSequenceParallelSize)
      failAt("sequence_parallel_size",
             fmt::format("must be at most {}", kMaxSequenceParallelSize));
    // A rank holds at most 2 chunks of ceil(max_seq_len / 2P) tokens of a
    // sequence (zigzag; DistAttn one of ceil(max_seq_len / P)):
    // max_batch_tokens bounds one rank's. Positions stay i32.
    if (d_.sequence_parallel_size > 1) {
      // A rank's attention exchanges keys and values with the others: run
      // again in the backward it would exchange them again.
      if (d_.recompute_attention)
        failAt("recompute_attention", "is not supported with sequence_parallel_size > 1");
      const int64_t share =
          2 * ((d_.max_seq_len + 2 * d_.sequence_parallel_size - 1) /
               (2 * d_.sequence_parallel_size));
      if (d_.max_seq_len > kMaxBatchTokens)
        failAt("max_seq_len", fmt::format("must be at most {} (positions "
                                          "are 32-bit integers)",
                                          kMaxBatchTokens));
      if (share > d_.max_batch_tokens)
        failAt("max_seq_len",
               fmt::format("a rank's share, 2 x ceil(max_seq_len / (2 x "
                           "sequence_parallel_size {})) = {} tokens, must "
                           "not exceed max_batch_tokens ({})",
                           d_.sequence_parallel_size, share,
                           d_.max_batch_tokens));
    }
    // Every architecture normalizes rows of `hidden` (layer norm): over one
    // element x - mean is 0 and the output is the bias alone.
    if (d_.hidden < 2)
      failAt("hidden", "must be at least 2 (a layer norm over one element outputs only its "
                       "bias)");
    // BERT's masked-LM sequences (ls2c train's) are [CLS] tokens [SEP].
    if (applies(kE) && d_.max_seq_len < 3)
      failAt("max_seq_len", "must be at least 3 for an encoder ([CLS], a token and [SEP])");
    if (d_.sequence_parallel_size == 1 &&
        d_.max_seq_len > d_.max_batch_tokens) {
      if (root_.contains("max_seq_len"))
        failAt("max_seq_len",
               fmt::format("must not exceed max_batch_tokens ({})",
                           d_.max_batch_tokens));
      failAt("max_batch_tokens",
             fmt::format("must be at least max_seq_len ({} = num_patches + 1, "
                         "one image)",
                         d_.max_seq_len));
    }
    if (applies(kText)) {
      const int64_t limit =
          applies(kED) ? std::min(d_.vocab, d_.src_vocab) : d_.vocab;
      if (d_.padding_idx < -1 || d_.padding_idx >= limit)
        failAt("padding_idx",
               fmt::format("must be -1 (none) or in [0, {}) (the {})", limit,
                           applies(kED) ? "smaller vocabulary" : "vocabulary"));
    }
    // The gathered head holds at most one row per token.
    if (d_.max_predictions > d_.max_batch_tokens)
      failAt("max_predictions",
             fmt::format("must not exceed max_batch_tokens ({}): a batch has at "
                         "most that many labelled tokens",
                         d_.max_batch_tokens));
    if (d_.share_embeddings && d_.src_vocab != d_.vocab)
      failAt("share_embeddings",
             fmt::format("needs src_vocab ({}) == vocab ({})", d_.src_vocab,
                         d_.vocab));
  }

  void checkVit() {
    if (d_.num_classes < 2)
      failAt("num_classes", "must be at least 2");
    if (d_.image_size % d_.patch_size != 0)
      failAt("image_size", fmt::format("must be divisible by patch_size ({})",
                                       d_.patch_size));
    int64_t tokens = 0;
    try {
      tokens = d_.numPatches();
    } catch (const DescriptionError &e) {
      failAt("image_size", e.detail());
    }
    if (__builtin_add_overflow(tokens, 1, &tokens))
      failAt("image_size", "num_patches + 1 overflows 64-bit integers");
    if (root_.contains("max_seq_len") && d_.max_seq_len != tokens)
      failAt("max_seq_len",
             fmt::format("must equal num_patches + 1 = ({} / {})^2 + 1 = {}",
                         d_.image_size, d_.patch_size, tokens));
    d_.max_seq_len = tokens;
  }

  void readOptimizer(const json &opt, const json *sched) {
    const std::string p = "$.optimizer";
    OptimizerConfig &o = d_.optimizer;
    o.type = r_.enumeration(opt, p, "type", kOptimizers).value_or(o.type);
    // The train step keeps all of these as f32.
    auto read = [&](const char *key, double &out, std::string (*rule)(double)) {
      std::optional<double> v = r_.number(opt, p, key);
      if (!v)
        return;
      if (std::string broken = rule(*v); !broken.empty())
        r_.fail(r_.lastPath(), opt.at(key), broken);
      out = *v;
    };
    read("lr", o.lr, detail::positiveF32Rule);
    read("eps", o.eps, detail::positiveF32Rule);
    read("weight_decay", o.weight_decay, detail::nonNegativeF32Rule);
    read("clip_norm", o.clip_norm, detail::nonNegativeF32Rule);
    read("bucket_cap_mb", o.bucket_cap_mb, [](double v) -> std::string {
      // 1e-4 MiB is 26 fp32 elements; 2^20 MiB (1 TiB) is more than any model.
      return v >= 1e-4 && v <= 1048576.0 ? "" : "must be in [1e-4, 1048576] (MiB)";
    });
    if (const json *betas = r_.member(opt, p, "betas")) {
      if (!betas->is_array() || betas->size() != 2)
        r_.fail(r_.lastPath(), *betas, "must be an array of 2 numbers");
      double *out[2] = {&o.beta1, &o.beta2};
      for (size_t i = 0; i < 2; ++i) {
        std::string bp = fmt::format("{}.betas[{}]", p, i);
        double b = r_.checkNumber((*betas)[i], bp);
        if (std::string broken = detail::probabilityRule(b); !broken.empty())
          r_.fail(bp, (*betas)[i], broken);
        *out[i] = b;
      }
    }
    if (sched)
      readSchedule(*sched);
  }

  void readSchedule(const json &s) {
    const std::string p = "$.optimizer.schedule";
    ScheduleConfig &c = d_.optimizer.schedule;
    c.type = r_.enumeration(s, p, "type", kSchedules).value_or(c.type);
    const std::string typeName(toString(c.type));
    const bool decays =
        c.type == ScheduleType::Linear || c.type == ScheduleType::Cosine;
    auto fail = [&](const char *key, const std::string &rule) {
      r_.fail(childPath(p, key), s.at(key), rule);
    };
    std::optional<int64_t> warmup = r_.integer(s, p, "warmup_steps");
    if (warmup && *warmup < 0)
      fail("warmup_steps", "must be non-negative");
    c.warmup_steps = warmup.value_or(0);
    if (c.type == ScheduleType::InverseSqrt && c.warmup_steps == 0) {
      if (!warmup)
        r_.fail(p + ".warmup_steps",
                "missing required field for schedule 'inverse_sqrt'");
      fail("warmup_steps", "must be positive for schedule 'inverse_sqrt'");
    }
    std::optional<int64_t> total = r_.integer(s, p, "total_steps");
    if (total && *total < 0)
      fail("total_steps", "must be non-negative");
    c.total_steps = total.value_or(0);
    if (decays && !total)
      r_.fail(
          p + ".total_steps",
          fmt::format("missing required field for schedule '{}'", typeName));
    if (decays && c.total_steps == 0)
      fail("total_steps",
           fmt::format("must be positive for schedule '{}'", typeName));
    if (total && c.total_steps > 0 && c.total_steps < c.warmup_steps)
      fail("total_steps",
           fmt::format("must be at least warmup_steps ({})", c.warmup_steps));
    std::optional<double> ratio = r_.number(s, p, "min_lr_ratio");
    if (ratio && !decays && *ratio != 0.0)
      fail("min_lr_ratio",
           fmt::format("does not apply to schedule '{}'", typeName));
    if (ratio && (*ratio < 0.0 || *ratio > 1.0))
      fail("min_lr_ratio", "must be in [0, 1]");
    c.min_lr_ratio = ratio.value_or(0.0);
  }

  // The largest size field is the one that makes the layout overflow (layer
  // counts are capped, so a product overflows only through a huge dimension).
  void checkLayoutFits() {
    try {
      ParameterLayout layout = buildParameterLayout(d_);
      // Tools add these up (plus buffers in the compute dtype); the sum must
      // fit as well.
      int64_t bufferBytes = 0, total = 0;
      bool overflow = __builtin_mul_overflow(
          layout.numBufferElements(),
          static_cast<int64_t>(dtypeBytes(d_.dtype)), &bufferBytes);
      for (int64_t part :
           {layout.computeWeightBytes(d_.dtype), layout.masterWeightBytes(),
            layout.gradientBytes(d_.dtype), layout.optimizerStateBytes(),
            bufferBytes})
        overflow |= __builtin_add_overflow(total, part, &total);
      if (overflow)
        throw DescriptionError("", "$",
                               "training-state bytes (weights, master "
                               "weights, gradients, optimizer states, "
                               "buffers) overflow 64-bit integers");
    } catch (const DescriptionError &e) {
      const IntField *driver = nullptr;
      for (const IntField &f : kIntFields)
        if (f.size && applies(f.applies) &&
            (!driver || d_.*f.member > d_.*driver->member))
          driver = &f;
      if (driver && root_.contains(driver->key))
        failAt(driver->key, e.detail());
      r_.fail("$", e.detail());
    }
    checkActivationsFit();
  }

  // The memory plan sizes every activation at its bound (max_batch_tokens
  // rows; a ViT's class logits one row an image); each in float64 (the
  // reference interpreter's precision) must have a byte count that fits
  // int64, or the planner's sizes would wrap.
  void checkActivationsFit() {
    struct Activation {
      const char *key;   ///< the field named when the width drives it
      int64_t value;     ///< that field's value
      int64_t rows, width;
      std::string label; ///< the width as the message shows it
      const char *rowsName;
    };
    const int64_t tokens = d_.max_batch_tokens;
    auto product = [](std::initializer_list<int64_t> factors) {
      int64_t p = 1;
      for (int64_t f : factors)
        if (__builtin_mul_overflow(p, f, &p))
          return INT64_MAX;
      return p;
    };
    // The merged q, k, v projection: hidden + 2 x kv_heads x head dim.
    int64_t qkv = 0;
    if (__builtin_add_overflow(d_.hidden, product({2, d_.kv_heads, d_.headDim()}), &qkv))
      qkv = INT64_MAX;
    std::vector<Activation> acts = {
        {"hidden", d_.hidden, tokens, qkv, "hidden + 2 x kv_heads x head dim",
         "max_batch_tokens"},
        {"ffn", d_.ffn, tokens, d_.ffn, "ffn", "max_batch_tokens"}};
    if (applies(kText))
      acts.push_back({"vocab", d_.vocab, tokens, d_.vocab, "vocab", "max_batch_tokens"});
    if (applies(kV)) {
      // A token's pixels (the patches; the images hold fewer).
      const int64_t pixels = product({d_.channels, d_.patch_size, d_.patch_size});
      const bool channels = d_.channels >= d_.patch_size;
      acts.push_back({channels ? "channels" : "patch_size",
                      channels ? d_.channels : d_.patch_size, tokens, pixels,
                      "channels x patch_size^2", "max_batch_tokens"});
      acts.push_back({"num_classes", d_.num_classes, tokens / d_.max_seq_len, d_.num_classes,
                      "num_classes", "images (max_batch_tokens / (num_patches + 1))"});
    }
    for (const Activation &a : acts) {
      int64_t bytes = 0;
      if (!__builtin_mul_overflow(a.rows, a.width, &bytes) &&
          !__builtin_mul_overflow(bytes, int64_t{8}, &bytes))
        continue;
      const char *field = a.rows >= a.value ? "max_batch_tokens" : a.key;
      failAt(field, fmt::format("a [{}, {}] activation ({} x {} elements) in float64 "
                                "overflows 64-bit byte counts; lower max_batch_tokens or {}",
                                a.rowsName, a.label, a.rows, a.width, a.key));
    }
  }

  const json &root_;
  const std::string &source_;
  Reader r_;
  ModelDescription d_;
  std::string archName_;
};

} // namespace

ModelDescription parseModelDescription(std::string_view jsonText,
                                       const std::string &source) {
  Reader reader(source);
  json root = detail::parseJsonObject(jsonText, reader);
  return Validator(root, source).run();
}

ModelDescription loadModelDescription(const std::string &path) {
  return parseModelDescription(detail::readDescriptionFile(path), path);
}

nlohmann::json toJson(const ModelDescription &d) {
  const unsigned a = bit(d.architecture);
  json j;
  j["name"] = d.name;
  j["architecture"] = toString(d.architecture);
  for (const IntField &f : kIntFields)
    if (f.applies & a)
      j[f.key] = d.*f.member;
  // ViT derives it; writing it is allowed (it must match) but redundant.
  if (a == kV)
    j.erase("max_seq_len");
  // Absent means the head over every token; 0 would be refused on reading.
  if (a == kE && d.max_predictions == 0)
    j.erase("max_predictions");
  j["norm"] = toString(d.norm);
  j["activation"] = toString(d.activation);
  j["hidden_dropout"] = d.hidden_dropout;
  j["attention_dropout"] = d.attention_dropout;
  j["activation_dropout"] = d.activation_dropout;
  if (a == kL) {
    j["rms_norm_eps"] = d.rms_norm_eps;
    j["rope_theta"] = d.rope_theta;
  } else {
    j["layer_norm_eps"] = d.layer_norm_eps;
  }
  if (a & kText)
    j["tie_embeddings"] = d.tie_embeddings;
  if (a == kED)
    j["share_embeddings"] = d.share_embeddings;
  j["dtype"] = toString(d.dtype);
  j["label_smoothing"] = d.label_smoothing;
  j["activation_checkpointing"] = d.activation_checkpointing;
  // Written only when set: descriptions written before the field read the same.
  if (d.recompute_attention)
    j["recompute_attention"] = true;

  const OptimizerConfig &o = d.optimizer;
  const ScheduleConfig &s = o.schedule;
  json sched = {{"type", toString(s.type)},
                {"warmup_steps", s.warmup_steps},
                {"total_steps", s.total_steps}};
  if (s.type == ScheduleType::Linear || s.type == ScheduleType::Cosine)
    sched["min_lr_ratio"] = s.min_lr_ratio;
  j["optimizer"] = {
      {"type", toString(o.type)},       {"lr", o.lr},
      {"betas", {o.beta1, o.beta2}},    {"eps", o.eps},
      {"weight_decay", o.weight_decay}, {"clip_norm", o.clip_norm},
      {"bucket_cap_mb", o.bucket_cap_mb},
      {"schedule", std::move(sched)}};
  return j;
}

} // namespace ls2c
