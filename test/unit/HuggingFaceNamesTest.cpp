//===- HuggingFaceNamesTest.cpp - transformers state dicts of BERT, GPT-2 -===//
//
// The expected state dicts are written here from transformers' sources
// (src/transformers/models/bert/modeling_bert.py: BertEmbeddings, BertLayer,
// BertLMPredictionHead with decoder = Linear(H, V, bias=False) whose bias is
// the head's own `bias`; src/transformers/models/gpt2/modeling_gpt2.py:
// GPT2Model, GPT2Block, Conv1D(nf, nx) with weight [nx, nf]), from the
// config.json the mapping emits, the way those modules allocate their
// tensors; they do not use ParameterLayout or the mapping's own shapes.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Model/HuggingFaceNames.h"
#include "ls2c/Model/ParameterLayout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#ifndef LS2C_SOURCE_DIR
#error "LS2C_SOURCE_DIR must name the ls2c source tree"
#endif

using ls2c::HuggingFaceError;
using ls2c::HuggingFaceMapping;
using ls2c::ModelDescription;
using ls2c::SafetensorsFile;
using ls2c::SafetensorsTensor;
using json = nlohmann::json;
using Shape = std::vector<int64_t>;
using StateDict = std::vector<std::pair<std::string, Shape>>;

namespace {

const std::string kSourceDir = LS2C_SOURCE_DIR;

ModelDescription preset(const std::string &name) {
  return ls2c::loadModelDescription(kSourceDir + "/examples/" + name + ".json");
}

ModelDescription variant(const std::string &name, const json &patch) {
  json j = ls2c::toJson(preset(name));
  j.merge_patch(patch);
  return ls2c::parseModelDescription(j.dump(), name + "+patch");
}

HuggingFaceMapping mappingOf(const ModelDescription &d) {
  return ls2c::huggingFaceMapping(d, d.name + ".json");
}

/// BertForMaskedLM(config).state_dict(): names and shapes.
StateDict transformersBert(const json &c) {
  const int64_t V = c["vocab_size"], H = c["hidden_size"],
                I = c["intermediate_size"], P = c["max_position_embeddings"],
                T = c["type_vocab_size"], heads = c["num_attention_heads"];
  const int64_t allHead = heads * (H / heads); // BertSelfAttention.all_head_size
  StateDict s;
  auto linear = [&](const std::string &p, int64_t in, int64_t out) {
    s.push_back({p + ".weight", {out, in}}); // nn.Linear(in, out)
    s.push_back({p + ".bias", {out}});
  };
  auto layerNorm = [&](const std::string &p) {
    s.push_back({p + ".weight", {H}});
    s.push_back({p + ".bias", {H}});
  };
  s.push_back({"bert.embeddings.word_embeddings.weight", {V, H}});
  s.push_back({"bert.embeddings.position_embeddings.weight", {P, H}});
  s.push_back({"bert.embeddings.token_type_embeddings.weight", {T, H}});
  layerNorm("bert.embeddings.LayerNorm");
  for (int64_t i = 0; i < c["num_hidden_layers"].get<int64_t>(); ++i) {
    std::string p = "bert.encoder.layer." + std::to_string(i) + ".";
    linear(p + "attention.self.query", H, allHead);
    linear(p + "attention.self.key", H, allHead);
    linear(p + "attention.self.value", H, allHead);
    linear(p + "attention.output.dense", H, H);
    layerNorm(p + "attention.output.LayerNorm");
    linear(p + "intermediate.dense", H, I);
    linear(p + "output.dense", I, H);
    layerNorm(p + "output.LayerNorm");
  }
  s.push_back({"cls.predictions.bias", {V}});
  linear("cls.predictions.transform.dense", H, H);
  layerNorm("cls.predictions.transform.LayerNorm");
  s.push_back({"cls.predictions.decoder.weight", {V, H}});
  s.push_back({"cls.predictions.decoder.bias", {V}});
  return s;
}

/// GPT2LMHeadModel(config).state_dict(): names and shapes.
StateDict transformersGpt2(const json &c) {
  const int64_t V = c["vocab_size"], E = c["n_embd"], P = c["n_positions"];
  const int64_t inner = c["n_inner"].is_null() ? 4 * E : c["n_inner"].get<int64_t>();
  StateDict s;
  auto conv1d = [&](const std::string &p, int64_t nf, int64_t nx) {
    s.push_back({p + ".weight", {nx, nf}}); // Conv1D(nf, nx)
    s.push_back({p + ".bias", {nf}});
  };
  auto layerNorm = [&](const std::string &p) {
    s.push_back({p + ".weight", {E}});
    s.push_back({p + ".bias", {E}});
  };
  s.push_back({"transformer.wte.weight", {V, E}});
  s.push_back({"transformer.wpe.weight", {P, E}});
  for (int64_t i = 0; i < c["n_layer"].get<int64_t>(); ++i) {
    std::string p = "transformer.h." + std::to_string(i) + ".";
    layerNorm(p + "ln_1");
    conv1d(p + "attn.c_attn", 3 * E, E);
    conv1d(p + "attn.c_proj", E, E);
    layerNorm(p + "ln_2");
    conv1d(p + "mlp.c_fc", inner, E);
    conv1d(p + "mlp.c_proj", E, inner);
  }
  layerNorm("transformer.ln_f");
  s.push_back({"lm_head.weight", {V, E}}); // Linear(n_embd, vocab, bias=False)
  return s;
}

StateDict namesAndShapes(const HuggingFaceMapping &m) {
  StateDict s;
  for (const auto &t : m.tensors)
    s.push_back({t.name, t.shape});
  return s;
}

std::string shapeOf(const HuggingFaceMapping &m, const std::string &name) {
  const auto *t = m.find(name);
  if (!t)
    return "missing";
  std::string s;
  for (int64_t d : t->shape)
    s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

/// Random F32 parameters of `d` by ls2c name.
SafetensorsFile randomParameters(const ModelDescription &d, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  SafetensorsFile f;
  for (const auto &p : ls2c::buildParameterLayout(d).parameters) {
    SafetensorsTensor t;
    t.dtype = "F32";
    t.shape = p.shape;
    t.data.resize(static_cast<size_t>(p.numel()) * 4);
    for (size_t i = 0; i < t.data.size(); i += 4) {
      float v = normal(rng);
      std::memcpy(t.data.data() + i, &v, 4);
    }
    f.tensors[p.name] = std::move(t);
  }
  return f;
}

std::string refusal(const std::function<void()> &f) {
  try {
    f();
  } catch (const HuggingFaceError &e) {
    return e.what();
  }
  return "(not refused)";
}

const char *const kModels[] = {"tiny-bert", "tiny-gpt", "bert-base",
                               "bert-large", "gpt2-small", "gpt2-medium"};

} // namespace

TEST(HuggingFaceNamesTest, StateDictsAreWhatTransformersAllocates) {
  for (const char *name : kModels) {
    for (bool tie : {true, false}) {
      SCOPED_TRACE(std::string(name) + (tie ? " tied" : " untied"));
      HuggingFaceMapping m =
          mappingOf(variant(name, {{"tie_embeddings", tie}}));
      StateDict expected = m.modelType == "bert" ? transformersBert(m.config)
                                                 : transformersGpt2(m.config);
      EXPECT_EQ(namesAndShapes(m), expected);
    }
  }
}

TEST(HuggingFaceNamesTest, PublicCheckpointShapes) {
  // google-bert/bert-base-uncased and openai-community/gpt2.
  HuggingFaceMapping bert = mappingOf(preset("bert-base"));
  EXPECT_EQ(bert.modelClass, "BertForMaskedLM");
  EXPECT_EQ(bert.tensors.size(), 5u + 12 * 16 + 7);
  EXPECT_EQ(shapeOf(bert, "bert.embeddings.word_embeddings.weight"), "30522x768");
  EXPECT_EQ(shapeOf(bert, "bert.embeddings.position_embeddings.weight"), "512x768");
  EXPECT_EQ(shapeOf(bert, "bert.embeddings.token_type_embeddings.weight"), "2x768");
  EXPECT_EQ(shapeOf(bert, "bert.encoder.layer.11.intermediate.dense.weight"), "3072x768");
  EXPECT_EQ(shapeOf(bert, "bert.encoder.layer.11.output.dense.weight"), "768x3072");
  EXPECT_EQ(shapeOf(bert, "cls.predictions.bias"), "30522");
  EXPECT_EQ(shapeOf(bert, "cls.predictions.decoder.weight"), "30522x768");
  EXPECT_EQ(shapeOf(bert, "bert.pooler.dense.weight"), "missing");

  HuggingFaceMapping gpt = mappingOf(preset("gpt2-small"));
  EXPECT_EQ(gpt.modelClass, "GPT2LMHeadModel");
  EXPECT_EQ(gpt.tensors.size(), 2u + 12 * 12 + 2 + 1);
  EXPECT_EQ(shapeOf(gpt, "transformer.wte.weight"), "50257x768");
  EXPECT_EQ(shapeOf(gpt, "transformer.wpe.weight"), "1024x768");
  EXPECT_EQ(shapeOf(gpt, "transformer.h.0.attn.c_attn.weight"), "768x2304");
  EXPECT_EQ(shapeOf(gpt, "transformer.h.0.attn.c_attn.bias"), "2304");
  EXPECT_EQ(shapeOf(gpt, "transformer.h.11.mlp.c_fc.weight"), "768x3072");
  EXPECT_EQ(shapeOf(gpt, "transformer.h.11.mlp.c_proj.weight"), "3072x768");
  EXPECT_EQ(shapeOf(gpt, "lm_head.weight"), "50257x768");
  EXPECT_EQ(shapeOf(gpt, "transformer.h.0.attn.bias"), "missing");
}

TEST(HuggingFaceNamesTest, TiedNames) {
  HuggingFaceMapping bert = mappingOf(preset("tiny-bert"));
  const auto *decoder = bert.find("cls.predictions.decoder.weight");
  ASSERT_TRUE(decoder);
  EXPECT_TRUE(decoder->tied);
  EXPECT_EQ(decoder->source, "bert.embeddings.word_embeddings.weight");
  const auto *bias = bert.find("cls.predictions.decoder.bias");
  ASSERT_TRUE(bias);
  EXPECT_TRUE(bias->tied);
  EXPECT_EQ(bias->source, "cls.predictions.bias");
  HuggingFaceMapping untied =
      mappingOf(variant("tiny-bert", {{"tie_embeddings", false}}));
  EXPECT_FALSE(untied.find("cls.predictions.decoder.weight")->tied);
  EXPECT_TRUE(untied.find("cls.predictions.decoder.bias")->tied);

  HuggingFaceMapping gpt = mappingOf(preset("tiny-gpt"));
  EXPECT_TRUE(gpt.find("lm_head.weight")->tied);
  EXPECT_EQ(gpt.find("lm_head.weight")->source, "transformer.wte.weight");
  EXPECT_FALSE(mappingOf(variant("tiny-gpt", {{"tie_embeddings", false}}))
                   .find("lm_head.weight")
                   ->tied);
}

TEST(HuggingFaceNamesTest, Configs) {
  json bert = mappingOf(preset("tiny-bert")).config;
  EXPECT_EQ(bert["architectures"], json::array({"BertForMaskedLM"}));
  EXPECT_EQ(bert["model_type"], "bert");
  EXPECT_EQ(bert["vocab_size"], 100);
  EXPECT_EQ(bert["hidden_size"], 64);
  EXPECT_EQ(bert["num_hidden_layers"], 2);
  EXPECT_EQ(bert["num_attention_heads"], 4);
  EXPECT_EQ(bert["intermediate_size"], 128);
  EXPECT_EQ(bert["hidden_act"], "gelu");
  EXPECT_EQ(bert["max_position_embeddings"], 32);
  EXPECT_EQ(bert["type_vocab_size"], 2);
  EXPECT_EQ(bert["layer_norm_eps"], 1e-12);
  EXPECT_EQ(bert["pad_token_id"], 0);
  EXPECT_EQ(bert["tie_word_embeddings"], true);
  EXPECT_DOUBLE_EQ(bert["hidden_dropout_prob"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(bert["attention_probs_dropout_prob"].get<double>(), 0.1);

  json gpt = mappingOf(preset("tiny-gpt")).config;
  EXPECT_EQ(gpt["architectures"], json::array({"GPT2LMHeadModel"}));
  EXPECT_EQ(gpt["model_type"], "gpt2");
  EXPECT_EQ(gpt["vocab_size"], 65);
  EXPECT_EQ(gpt["n_embd"], 64);
  EXPECT_EQ(gpt["n_layer"], 2);
  EXPECT_EQ(gpt["n_head"], 4);
  EXPECT_EQ(gpt["n_inner"], 128);
  EXPECT_EQ(gpt["n_positions"], 32);
  EXPECT_EQ(gpt["activation_function"], "gelu_new");
  EXPECT_EQ(gpt["layer_norm_epsilon"], 1e-5);
  EXPECT_EQ(gpt["scale_attn_weights"], true);
  EXPECT_EQ(gpt["scale_attn_by_inverse_layer_idx"], false);
  EXPECT_EQ(gpt["tie_word_embeddings"], true);

  EXPECT_EQ(mappingOf(variant("tiny-gpt", {{"activation", "relu"}}))
                .config["activation_function"],
            "relu");
  EXPECT_EQ(mappingOf(variant("tiny-bert", {{"activation", "gelu_tanh"}}))
                .config["hidden_act"],
            "gelu_new");
  EXPECT_TRUE(mappingOf(variant("tiny-bert", {{"padding_idx", -1}}))
                  .config["pad_token_id"]
                  .is_null());
  auto notes = mappingOf(variant("tiny-gpt", {{"activation_dropout", 0.1}})).notes;
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("activation_dropout 0.1 has no GPT2LMHeadModel "
                          "equivalent"),
            std::string::npos);
}

TEST(HuggingFaceNamesTest, DescriptionsWithoutEquivalentAreRefused) {
  EXPECT_EQ(refusal([] { mappingOf(preset("tiny-vit")); }),
            "tiny-vit.json: $.architecture: 'vit': Hugging Face checkpoints "
            "are defined for 'encoder' (BertForMaskedLM), 'decoder' "
            "(GPT2LMHeadModel) and 'llama' (LlamaForCausalLM) models only");
  EXPECT_NE(refusal([] { mappingOf(preset("tiny-transformer")); })
                .find("$.architecture: 'encoder_decoder'"),
            std::string::npos);
  EXPECT_NE(refusal([] { mappingOf(variant("tiny-bert", {{"norm", "pre"}})); })
                .find("$.norm: 'pre': BertForMaskedLM is post-LN; a pre-LN "
                      "encoder has bert.encoder.final_layer_norm"),
            std::string::npos);
  EXPECT_NE(refusal([] { mappingOf(variant("tiny-gpt", {{"norm", "post"}})); })
                .find("$.norm: 'post': GPT2LMHeadModel is pre-LN"),
            std::string::npos);
  EXPECT_NE(refusal([] { mappingOf(variant("tiny-gpt", {{"kv_heads", 2}})); })
                .find("$.kv_heads: 2: GPT-2 has no grouped-query attention: "
                      "kv_heads must equal heads (4)"),
            std::string::npos);
}

TEST(HuggingFaceNamesTest, RoundTripIsBitIdentical) {
  for (const char *name : {"tiny-bert", "tiny-gpt"}) {
    for (bool tie : {true, false}) {
      SCOPED_TRACE(std::string(name) + (tie ? " tied" : " untied"));
      ModelDescription d = variant(name, {{"tie_embeddings", tie}});
      HuggingFaceMapping m = mappingOf(d);
      SafetensorsFile ours = randomParameters(d, 7);
      SafetensorsFile hf = ls2c::toHuggingFace(m, ours, "ours");
      EXPECT_EQ(hf.tensors.size(), m.tensors.size());
      EXPECT_EQ(hf.metadata.at("format"), "pt");
      for (const auto &t : m.tensors)
        EXPECT_EQ(hf.tensors.at(t.name).data, ours.tensors.at(t.source).data)
            << t.name;
      std::vector<std::string> notes;
      SafetensorsFile back = ls2c::fromHuggingFace(m, hf, "hf", &notes);
      EXPECT_TRUE(notes.empty());
      ASSERT_EQ(back.tensors.size(), ours.tensors.size());
      for (const auto &[n, t] : ours.tensors) {
        EXPECT_EQ(back.tensors.at(n).dtype, t.dtype) << n;
        EXPECT_EQ(back.tensors.at(n).shape, t.shape) << n;
        EXPECT_EQ(back.tensors.at(n).data, t.data) << n;
      }
    }
  }
}

TEST(HuggingFaceNamesTest, ToHuggingFaceRefusals) {
  ModelDescription d = preset("tiny-gpt");
  HuggingFaceMapping m = mappingOf(d);
  SafetensorsFile ours = randomParameters(d, 1);

  SafetensorsFile checkpoint = ours; // a train checkpoint: moments dropped
  checkpoint.tensors["ls2c.optimizer.exp_avg"] = ours.tensors.begin()->second;
  checkpoint.tensors["ls2c.optimizer.exp_avg_sq"] = ours.tensors.begin()->second;
  EXPECT_EQ(ls2c::toHuggingFace(m, checkpoint, "ck").tensors.size(),
            m.tensors.size());

  SafetensorsFile extra = ours;
  extra.tensors["transformer.h.2.ln_1.weight"] = ours.tensors["transformer.ln_f.weight"];
  EXPECT_EQ(refusal([&] { ls2c::toHuggingFace(m, extra, "p.safetensors"); }),
            "p.safetensors: tensor 'transformer.h.2.ln_1.weight' is not a "
            "parameter of tiny-gpt.json (GPT2LMHeadModel layout; `ls2c convert "
            "--list` lists them)");

  SafetensorsFile hfNamed = ours;
  hfNamed.tensors["lm_head.weight"] = ours.tensors["transformer.wte.weight"];
  EXPECT_NE(refusal([&] { ls2c::toHuggingFace(m, hfNamed, "p"); })
                .find("tensor 'lm_head.weight' is not an ls2c parameter: it is "
                      "the Hugging Face name tied to 'transformer.wte.weight'"),
            std::string::npos);

  SafetensorsFile missing = ours;
  missing.tensors.erase("transformer.h.1.mlp.c_fc.bias");
  EXPECT_EQ(refusal([&] { ls2c::toHuggingFace(m, missing, "p"); }),
            "p: missing parameter 'transformer.h.1.mlp.c_fc.bias' [128] = [ffn]");

  SafetensorsFile transposed = ours;
  transposed.tensors["transformer.h.0.attn.c_attn.weight"].shape = {192, 64};
  EXPECT_EQ(refusal([&] { ls2c::toHuggingFace(m, transposed, "p"); }),
            "p: parameter 'transformer.h.0.attn.c_attn.weight' has shape "
            "[192, 64]; GPT2LMHeadModel expects [64, 192] = [hidden, 3 * hidden]");

  SafetensorsFile ints = ours;
  ints.tensors["transformer.ln_f.bias"].dtype = "I32";
  EXPECT_NE(refusal([&] { ls2c::toHuggingFace(m, ints, "p"); })
                .find("parameter 'transformer.ln_f.bias' has dtype I32; "
                      "parameters are floating point"),
            std::string::npos);
}

TEST(HuggingFaceNamesTest, FromHuggingFaceRefusals) {
  ModelDescription d = preset("tiny-bert");
  HuggingFaceMapping m = mappingOf(d);
  SafetensorsFile hf = ls2c::toHuggingFace(m, randomParameters(d, 3), "ours");

  SafetensorsFile missing = hf;
  missing.tensors.erase("bert.encoder.layer.1.attention.self.key.bias");
  EXPECT_EQ(refusal([&] { ls2c::fromHuggingFace(m, missing, "hf"); }),
            "hf: missing tensor 'bert.encoder.layer.1.attention.self.key.bias' "
            "[64] = [hidden] (BertForMaskedLM for tiny-bert.json)");

  SafetensorsFile deeper = hf;
  deeper.tensors["bert.encoder.layer.2.output.dense.weight"] =
      hf.tensors["bert.encoder.layer.1.output.dense.weight"];
  EXPECT_EQ(refusal([&] { ls2c::fromHuggingFace(m, deeper, "hf"); }),
            "hf: tensor 'bert.encoder.layer.2.output.dense.weight' is not part "
            "of BertForMaskedLM for tiny-bert.json: layer 2 is beyond its 2 "
            "layers (encoder_layers)");

  SafetensorsFile unknown = hf;
  unknown.tensors["bert.embeddings.rotary.inv_freq"] = hf.tensors["cls.predictions.bias"];
  EXPECT_NE(refusal([&] { ls2c::fromHuggingFace(m, unknown, "hf"); })
                .find("tensor 'bert.embeddings.rotary.inv_freq' is not part of "
                      "BertForMaskedLM for tiny-bert.json"),
            std::string::npos);

  // bert-base-uncased's 512 positions into a model of max_seq_len 32.
  SafetensorsFile longer = hf;
  auto &pos = longer.tensors["bert.embeddings.position_embeddings.weight"];
  pos.shape = {512, 64};
  pos.data.resize(512 * 64 * 4);
  EXPECT_EQ(refusal([&] { ls2c::fromHuggingFace(m, longer, "hf"); }),
            "hf: tensor 'bert.embeddings.position_embeddings.weight' has shape "
            "[512, 64]; BertForMaskedLM for tiny-bert.json expects [32, 64] = "
            "[max_seq_len, hidden]");

  SafetensorsFile untied = hf;
  untied.tensors["cls.predictions.decoder.weight"].data[5] ^= 1;
  EXPECT_EQ(refusal([&] { ls2c::fromHuggingFace(m, untied, "hf"); }),
            "hf: tensor 'cls.predictions.decoder.weight' differs from "
            "'bert.embeddings.word_embeddings.weight', but BertForMaskedLM ties "
            "them (tie_embeddings is true in tiny-bert.json; set it to false to "
            "keep both)");
  SafetensorsFile badBias = hf;
  badBias.tensors["cls.predictions.decoder.bias"].data[0] ^= 1;
  EXPECT_NE(refusal([&] { ls2c::fromHuggingFace(m, badBias, "hf"); })
                .find("ties them (always)"),
            std::string::npos);

  SafetensorsFile ints = hf;
  ints.tensors["bert.embeddings.LayerNorm.bias"].dtype = "I32";
  EXPECT_NE(refusal([&] { ls2c::fromHuggingFace(m, ints, "hf"); })
                .find("tensor 'bert.embeddings.LayerNorm.bias' has dtype I32"),
            std::string::npos);
}

// A value that is not finite in fp32 (NaN, an infinity, an F64 past fp32's
// range) is refused both ways, naming the tensor and element.
TEST(HuggingFaceNamesTest, NonFiniteValuesAreRefused) {
  ModelDescription d = preset("tiny-gpt");
  HuggingFaceMapping m = mappingOf(d);
  SafetensorsFile ours = randomParameters(d, 5);
  auto withValue = [](SafetensorsFile f, const std::string &name, size_t i, float v) {
    std::memcpy(f.tensors.at(name).data.data() + 4 * i, &v, 4);
    return f;
  };
  EXPECT_EQ(refusal([&] {
              ls2c::toHuggingFace(m, withValue(ours, "transformer.h.1.ln_2.bias", 7, NAN), "p");
            }),
            "p: tensor 'transformer.h.1.ln_2.bias' element 7 is nan, not finite in fp32");
  SafetensorsFile hf = ls2c::toHuggingFace(m, ours, "ours");
  EXPECT_EQ(refusal([&] {
              ls2c::fromHuggingFace(m, withValue(hf, "transformer.wpe.weight", 2, -INFINITY),
                                    "hf");
            }),
            "hf: tensor 'transformer.wpe.weight' element 2 is -inf, not finite in fp32");
  // F64 1e300 fits in fp64, not in the models' fp32; BF16 NaN widens to NaN.
  SafetensorsFile wide = hf;
  SafetensorsTensor &bias = wide.tensors.at("transformer.ln_f.bias");
  bias.dtype = "F64";
  bias.data.assign(64 * 8, 0);
  const double huge = 1e300;
  std::memcpy(bias.data.data() + 8 * 3, &huge, 8);
  EXPECT_EQ(refusal([&] { ls2c::fromHuggingFace(m, wide, "hf"); }),
            "hf: tensor 'transformer.ln_f.bias' element 3 is 1e+300, not finite in fp32");
  SafetensorsFile half = hf;
  SafetensorsTensor &gain = half.tensors.at("transformer.ln_f.weight");
  gain.dtype = "BF16";
  gain.data.assign(64 * 2, 0);
  gain.data[2 * 9 + 1] = 0x7f;
  gain.data[2 * 9] = 0xc0;
  EXPECT_EQ(refusal([&] { ls2c::fromHuggingFace(m, half, "hf"); }),
            "hf: tensor 'transformer.ln_f.weight' element 9 is nan, not finite in fp32");
}

TEST(HuggingFaceNamesTest, FromHuggingFaceAcceptsWhatTransformersLoads) {
  ModelDescription d = preset("tiny-bert");
  HuggingFaceMapping m = mappingOf(d);
  SafetensorsFile ours = randomParameters(d, 5);
  SafetensorsFile hf = ls2c::toHuggingFace(m, ours, "ours");

  // save_pretrained leaves tied names out; a BertForPreTraining checkpoint
  // has the pooler, the NSP head and (older transformers) position_ids; old
  // BERT checkpoints call layer-norm parameters gamma and beta.
  SafetensorsFile pretraining = hf;
  pretraining.tensors.erase("cls.predictions.decoder.weight");
  pretraining.tensors.erase("cls.predictions.decoder.bias");
  SafetensorsTensor positions{"I64", {1, 32}, std::vector<uint8_t>(32 * 8)};
  pretraining.tensors["bert.embeddings.position_ids"] = positions;
  pretraining.tensors["bert.pooler.dense.weight"] = hf.tensors["cls.predictions.transform.dense.weight"];
  pretraining.tensors["bert.pooler.dense.bias"] = hf.tensors["cls.predictions.transform.dense.bias"];
  pretraining.tensors["cls.seq_relationship.weight"] = SafetensorsTensor{"F32", {2, 64}, std::vector<uint8_t>(2 * 64 * 4)};
  pretraining.tensors["cls.seq_relationship.bias"] = SafetensorsTensor{"F32", {2}, std::vector<uint8_t>(8)};
  for (const char *ln : {"bert.embeddings.LayerNorm", "bert.encoder.layer.0.output.LayerNorm"}) {
    auto node = pretraining.tensors.extract(std::string(ln) + ".weight");
    node.key() = std::string(ln) + ".gamma";
    pretraining.tensors.insert(std::move(node));
    node = pretraining.tensors.extract(std::string(ln) + ".bias");
    node.key() = std::string(ln) + ".beta";
    pretraining.tensors.insert(std::move(node));
  }
  std::vector<std::string> notes;
  SafetensorsFile back = ls2c::fromHuggingFace(m, pretraining, "hf", &notes);
  for (const auto &[n, t] : ours.tensors)
    EXPECT_EQ(back.tensors.at(n).data, t.data) << n;
  EXPECT_EQ(back.tensors.size(), ours.tensors.size());
  std::string all;
  for (const auto &n : notes)
    all += n + "\n";
  EXPECT_NE(all.find("renamed 4 layer-norm tensor(s) from gamma / beta"), std::string::npos) << all;
  EXPECT_NE(all.find("ignored 2 tensor(s) that BertForMaskedLM does not load (the pooler"), std::string::npos) << all;
  EXPECT_NE(all.find("ignored 2 tensor(s) that BertForMaskedLM does not load (the next-sentence head"), std::string::npos) << all;
  EXPECT_NE(all.find("ignored 1 tensor(s) that BertForMaskedLM does not load (index buffers"), std::string::npos) << all;

  // A GPT2Model checkpoint (openai-community/gpt2's layout): no
  // "transformer." prefix, no lm_head, old attn.bias buffers; F16 widened.
  ModelDescription g = preset("tiny-gpt");
  HuggingFaceMapping gm = mappingOf(g);
  SafetensorsFile gpt = ls2c::toHuggingFace(gm, randomParameters(g, 9), "ours");
  SafetensorsFile base;
  for (auto &[n, t] : gpt.tensors)
    if (n != "lm_head.weight")
      base.tensors[n.substr(std::strlen("transformer."))] = t;
  for (int i = 0; i < 2; ++i)
    base.tensors["h." + std::to_string(i) + ".attn.bias"] =
        SafetensorsTensor{"F32", {1, 1, 32, 32}, std::vector<uint8_t>(32 * 32 * 4)};
  // F16 1.0, -2.0, 65504, smallest subnormal; BF16 1.0 and -0.5.
  SafetensorsTensor half{"F16", {64}, std::vector<uint8_t>(128)};
  const uint16_t halves[] = {0x3c00, 0xc000, 0x7bff, 0x0001};
  std::memcpy(half.data.data(), halves, sizeof halves);
  base.tensors["ln_f.weight"] = half;
  SafetensorsTensor bf{"BF16", {64}, std::vector<uint8_t>(128)};
  const uint16_t bfs[] = {0x3f80, 0xbf00};
  std::memcpy(bf.data.data(), bfs, sizeof bfs);
  base.tensors["ln_f.bias"] = bf;
  notes.clear();
  SafetensorsFile params = ls2c::fromHuggingFace(gm, base, "gpt2", &notes);
  EXPECT_EQ(params.tensors.size(), gm.tensors.size() - 1);
  const auto &w = params.tensors.at("transformer.ln_f.weight");
  ASSERT_EQ(w.dtype, "F32");
  float f[4];
  std::memcpy(f, w.data.data(), sizeof f);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], -2.0f);
  EXPECT_EQ(f[2], 65504.0f);
  EXPECT_EQ(f[3], 5.9604644775390625e-08f);
  std::memcpy(f, params.tensors.at("transformer.ln_f.bias").data.data(), 8);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], -0.5f);
  all.clear();
  for (const auto &n : notes)
    all += n + "\n";
  EXPECT_NE(all.find("added the prefix 'transformer.' to"), std::string::npos) << all;
  EXPECT_NE(all.find("ignored 2 tensor(s) that GPT2LMHeadModel does not load (causal-mask buffers"), std::string::npos) << all;
  EXPECT_NE(all.find("widened 2 F16/BF16 tensor(s) to F32"), std::string::npos) << all;
}
