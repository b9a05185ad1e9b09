//===- HuggingFaceConvert.cpp - ls2c <-> transformers state dicts ---------===//
//
// Tensors convert as byte copies (HuggingFaceNames.h says why); this file
// decides which names exist on each side and refuses everything else.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Model/HuggingFaceNames.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>

namespace ls2c {

namespace {

std::string shapeText(const std::vector<int64_t> &shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

/// The expected shape with its rule: "[32, 64] = [max_seq_len, hidden]".
std::string expected(const HuggingFaceTensor &t) {
  return shapeText(t.shape) + " = " + t.shapeRule;
}

bool isFloatDtype(const std::string &dtype) {
  return dtype == "F32" || dtype == "F64" || dtype == "F16" || dtype == "BF16";
}

/// IEEE binary16 -> binary32 bits (exact, subnormals and NaN payloads kept).
uint32_t halfToFloatBits(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f)
    return sign | 0x7f800000u | (mantissa << 13);
  if (exponent == 0) {
    if (mantissa == 0)
      return sign;
    // Subnormal: normalize.
    int e = -1;
    do {
      ++e;
      mantissa <<= 1;
    } while (!(mantissa & 0x400u));
    return sign | (static_cast<uint32_t>(127 - 15 - e) << 23) |
           ((mantissa & 0x3ffu) << 13);
  }
  return sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
}

/// F32 and F64 as they are; F16 and BF16 widened to F32, which holds every
/// value of both exactly.
SafetensorsTensor widenHalf(const SafetensorsTensor &t) {
  if (t.dtype != "F16" && t.dtype != "BF16")
    return t;
  SafetensorsTensor out;
  out.dtype = "F32";
  out.shape = t.shape;
  const size_t n = t.data.size() / 2;
  out.data.resize(n * 4);
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, t.data.data() + 2 * i, 2);
    uint32_t bits = t.dtype == "BF16" ? static_cast<uint32_t>(h) << 16
                                      : halfToFloatBits(h);
    std::memcpy(out.data.data() + 4 * i, &bits, 4);
  }
  return out;
}

/// Whether two widened tensors hold the same values (bit for bit when their
/// dtypes agree; as doubles when one is F32 and the other F64).
bool sameValues(const SafetensorsTensor &a, const SafetensorsTensor &b) {
  if (a.shape != b.shape)
    return false;
  if (a.dtype == b.dtype)
    return a.data == b.data;
  std::vector<double> x = floatValues(a, "a"), y = floatValues(b, "b");
  for (size_t i = 0; i < x.size(); ++i)
    if (!(x[i] == y[i]) && !(x[i] != x[i] && y[i] != y[i]))
      return false;
  return true;
}

/// Refuses a float tensor with a value that is not finite once rounded to
/// fp32 (both models' parameters are fp32), naming the element.
void checkFinite(const SafetensorsTensor &t, const std::string &path, const std::string &name) {
  std::vector<double> v = floatValues(widenHalf(t), path + ": " + name);
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(static_cast<float>(v[i])))
      throw HuggingFaceError(fmt::format("{}: tensor '{}' element {} is {}, not finite in fp32",
                                         path, name, i, v[i]));
}

bool startsWith(const std::string &s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}
bool endsWith(const std::string &s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The layer index of "bert.encoder.layer.N." / "transformer.h.N." /
/// "model.layers.N." names, or -1.
int64_t layerIndex(const std::string &name, const HuggingFaceMapping &m) {
  const std::string &prefix = m.layerPrefix;
  if (prefix.empty() || !startsWith(name, prefix))
    return -1;
  size_t i = prefix.size(), j = i;
  while (j < name.size() && j - i < 9 && name[j] >= '0' && name[j] <= '9')
    ++j;
  if (j == i || j >= name.size() || name[j] != '.')
    return -1;
  return std::stoll(name.substr(i, j - i));
}

/// Why transformers does not load `name` into the head model, or "" when it
/// would (or the name is unknown).
std::string ignoredBecause(const std::string &name, const HuggingFaceMapping &m) {
  if (m.modelType == "bert") {
    if (name == "bert.embeddings.position_ids" ||
        name == "bert.embeddings.token_type_ids")
      return "index buffers older transformers saved; ls2c takes positions "
             "and token types as inputs";
    if (startsWith(name, "bert.pooler."))
      return "the pooler of BertModel / BertForPreTraining; BertForMaskedLM "
             "has none";
    if (startsWith(name, "cls.seq_relationship."))
      return "the next-sentence head of BertForPreTraining";
    return "";
  }
  if (m.modelType == "llama") {
    // LlamaRotaryEmbedding's inv_freq: a persistent buffer of each layer's
    // self_attn.rotary_emb in the first Llama releases, non-persistent (and
    // one in LlamaModel, model.rotary_emb) since; transformers recomputes it
    // from the config either way.
    const int64_t layer = layerIndex(name, m);
    if (name == "model.rotary_emb.inv_freq" ||
        (layer >= 0 && layer < m.layers &&
         name == fmt::format("{}{}.self_attn.rotary_emb.inv_freq",
                             m.layerPrefix, layer)))
      return "rotary-frequency buffers older transformers saved; ls2c "
             "computes them from rope_theta";
    return "";
  }
  if (layerIndex(name, m) >= 0 &&
      (endsWith(name, ".attn.bias") || endsWith(name, ".attn.masked_bias")) &&
      !endsWith(name, ".c_attn.bias"))
    return "causal-mask buffers older transformers saved";
  return "";
}

[[noreturn]] void refuse(const std::string &path, const std::string &what) {
  throw HuggingFaceError(path + ": " + what);
}

/// "is not part of GPT2LMHeadModel for tiny-gpt.json" plus the most useful
/// hint.
std::string notPart(const std::string &name, const HuggingFaceMapping &m) {
  std::string text = fmt::format("tensor '{}' is not part of {} for {}", name,
                                 m.modelClass, m.source);
  int64_t layer = layerIndex(name, m);
  if (layer >= m.layers)
    return text + fmt::format(": layer {} is beyond its {} layers ({})", layer,
                              m.layers,
                              m.modelType == "bert" ? "encoder_layers"
                                                    : "decoder_layers");
  return text + " (`ls2c convert --list` lists the tensors it has)";
}

} // namespace

SafetensorsFile toHuggingFace(const HuggingFaceMapping &m,
                              const SafetensorsFile &ours,
                              const std::string &path) {
  std::set<std::string> parameters;
  for (const HuggingFaceTensor &t : m.tensors)
    if (!t.tied)
      parameters.insert(t.source);
  for (const auto &[name, tensor] : ours.tensors) {
    if (name == "ls2c.optimizer.exp_avg" || name == "ls2c.optimizer.exp_avg_sq")
      continue; // a train checkpoint's Adam moments: not part of a model
    if (parameters.count(name))
      continue;
    const HuggingFaceTensor *hf = m.find(name);
    if (hf && hf->tied)
      refuse(path, fmt::format("tensor '{}' is not an ls2c parameter: it is "
                               "the Hugging Face name tied to '{}' (is this "
                               "file a Hugging Face checkpoint? use --from-hf)",
                               name, hf->source));
    refuse(path, fmt::format("tensor '{}' is not a parameter of {} ({} "
                             "layout; `ls2c convert --list` lists them)",
                             name, m.source, m.modelClass));
  }
  SafetensorsFile out;
  for (const HuggingFaceTensor &t : m.tensors) {
    auto it = ours.tensors.find(t.source);
    if (it == ours.tensors.end())
      refuse(path, fmt::format("missing parameter '{}' {}", t.source,
                               expected(t)));
    const SafetensorsTensor &tensor = it->second;
    if (!t.tied) {
      if (!isFloatDtype(tensor.dtype))
        refuse(path, fmt::format("parameter '{}' has dtype {}; parameters are "
                                 "floating point (F32, F64, F16, BF16)",
                                 t.source, tensor.dtype));
      if (tensor.shape != t.shape)
        refuse(path, fmt::format("parameter '{}' has shape {}; {} expects {}",
                                 t.source, shapeText(tensor.shape),
                                 m.modelClass, expected(t)));
      checkFinite(tensor, path, t.source);
    }
    out.tensors[t.name] = tensor;
  }
  out.metadata = {{"format", "pt"}, {"ls2c.model", m.modelName}};
  return out;
}

SafetensorsFile fromHuggingFace(const HuggingFaceMapping &m,
                                const SafetensorsFile &hf,
                                const std::string &path,
                                std::vector<std::string> *notes) {
  auto note = [&](std::string text) {
    if (notes)
      notes->push_back(std::move(text));
  };

  // 1. Names as transformers would see them after its own renames.
  bool anyPrefixed = false;
  for (const auto &[name, tensor] : hf.tensors)
    anyPrefixed |= startsWith(name, m.basePrefix);
  const std::string head = m.modelType == "bert" ? "cls." : "lm_head.";
  std::map<std::string, const SafetensorsTensor *> named;
  std::map<std::string, std::string> originalName;
  int64_t prefixed = 0, renamed = 0;
  for (const auto &[original, tensor] : hf.tensors) {
    std::string name = original;
    if (!anyPrefixed && !startsWith(name, head)) {
      // A base-model (BertModel / GPT2Model / LlamaModel) checkpoint.
      name = m.basePrefix + name;
      ++prefixed;
    }
    if (endsWith(name, ".gamma")) {
      name = name.substr(0, name.size() - 6) + ".weight";
      ++renamed;
    } else if (endsWith(name, ".beta")) {
      name = name.substr(0, name.size() - 5) + ".bias";
      ++renamed;
    }
    if (named.count(name))
      refuse(path, fmt::format("tensors '{}' and '{}' are both '{}' after "
                               "transformers' renames (gamma -> weight, beta "
                               "-> bias)",
                               originalName[name], original, name));
    named[name] = &tensor;
    originalName[name] = original;
  }
  if (prefixed)
    note(fmt::format("added the prefix '{}' to {} tensor(s): a base-model "
                     "checkpoint, as transformers loads it into {}",
                     m.basePrefix, prefixed, m.modelClass));
  if (renamed)
    note(fmt::format("renamed {} layer-norm tensor(s) from gamma / beta to "
                     "weight / bias, as transformers does",
                     renamed));

  // 2. Nothing unknown.
  std::map<std::string, std::vector<std::string>> ignored; // reason -> names
  for (const auto &[name, tensor] : named) {
    if (m.find(name))
      continue;
    std::string why = ignoredBecause(name, m);
    if (why.empty())
      refuse(path, notPart(originalName[name], m));
    ignored[why].push_back(originalName[name]);
  }
  for (const auto &[why, names] : ignored)
    note(fmt::format("ignored {} tensor(s) that {} does not load ({}): {}{}",
                     names.size(), m.modelClass, why, names.front(),
                     names.size() > 1 ? ", ..." : ""));

  // 3. Every parameter, in shape; tied copies equal to their source.
  SafetensorsFile out;
  auto check = [&](const HuggingFaceTensor &t, const SafetensorsTensor &tensor) {
    const std::string &shown = originalName[t.name];
    if (!isFloatDtype(tensor.dtype))
      refuse(path, fmt::format("tensor '{}' has dtype {}; parameters are "
                               "floating point (F32, F64, F16, BF16)",
                               shown, tensor.dtype));
    if (tensor.shape != t.shape)
      refuse(path, fmt::format("tensor '{}' has shape {}; {} for {} expects {}",
                               shown, shapeText(tensor.shape), m.modelClass,
                               m.source, expected(t)));
    checkFinite(tensor, path, shown);
  };
  int64_t widened = 0;
  for (const HuggingFaceTensor &t : m.tensors) {
    if (t.tied)
      continue;
    auto it = named.find(t.name);
    if (it == named.end())
      refuse(path, fmt::format("missing tensor '{}' {} ({} for {})", t.name,
                               expected(t), m.modelClass, m.source));
    check(t, *it->second);
    widened += it->second->dtype == "F16" || it->second->dtype == "BF16";
    out.tensors[t.source] = widenHalf(*it->second);
  }
  for (const HuggingFaceTensor &t : m.tensors) {
    if (!t.tied)
      continue;
    auto it = named.find(t.name);
    if (it == named.end())
      continue; // transformers' save_pretrained leaves tied names out
    check(t, *it->second);
    if (!sameValues(widenHalf(*it->second), out.tensors.at(t.source)))
      refuse(path, fmt::format(
                       "tensor '{}' differs from '{}', but {} ties them{}",
                       originalName[t.name], originalName[t.source],
                       m.modelClass,
                       t.source == "cls.predictions.bias"
                           ? " (always)"
                           : " (tie_embeddings is true in " + m.source +
                                 "; set it to false to keep both)"));
  }
  if (widened)
    note(fmt::format("widened {} F16/BF16 tensor(s) to F32 (exactly)", widened));
  out.metadata = {{"format", "pt"}, {"ls2c.model", m.modelName}};
  return out;
}

} // namespace ls2c
