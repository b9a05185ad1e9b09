//===- ParameterLayoutTest.cpp - Named parameters of a described model ----===//

#include "ls2c/Model/ParameterLayout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <string>

#ifndef LS2C_SOURCE_DIR
#error "LS2C_SOURCE_DIR must name the ls2c source tree"
#endif

using ls2c::DescriptionError;
using ls2c::ModelDescription;
using ls2c::ParameterInit;
using ls2c::ParameterLayout;
using ls2c::ParameterSpec;
using json = nlohmann::json;
using Shape = std::vector<int64_t>;

namespace {

const std::string kSourceDir = LS2C_SOURCE_DIR;

ModelDescription preset(const std::string &name) {
  return ls2c::loadModelDescription(kSourceDir + "/examples/" + name + ".json");
}

// A preset with fields overridden, revalidated through the parser.
ModelDescription variant(const std::string &name, const json &patch) {
  json j = ls2c::toJson(preset(name));
  j.merge_patch(patch);
  return ls2c::parseModelDescription(j.dump(), name + "+patch");
}

ParameterLayout layoutOf(const ModelDescription &d) {
  return ls2c::buildParameterLayout(d);
}

const ParameterSpec &get(const ParameterLayout &l, const std::string &name) {
  const ParameterSpec *p = l.find(name);
  if (!p)
    throw std::runtime_error("no parameter " + name);
  return *p;
}

Shape shapeOf(const ParameterLayout &l, const std::string &name) {
  return get(l, name).shape;
}

const char *const kTiny[] = {"tiny-bert", "tiny-gpt", "tiny-transformer",
                             "tiny-vit", "llama-tiny"};

} // namespace

TEST(ParameterLayoutTest, NamesAreUnique) {
  std::vector<ModelDescription> models;
  for (const auto &entry :
       std::filesystem::directory_iterator(kSourceDir + "/examples"))
    if (entry.path().extension() == ".json")
      models.push_back(ls2c::loadModelDescription(entry.path().string()));
  for (const char *name : {"tiny-bert", "tiny-gpt", "tiny-transformer"})
    models.push_back(
        variant(name, {{"tie_embeddings", false}, {"norm", "pre"}}));
  models.push_back(variant("tiny-transformer", {{"share_embeddings", false}}));
  for (const ModelDescription &d : models) {
    SCOPED_TRACE(d.name);
    ParameterLayout l = layoutOf(d);
    std::set<std::string> names;
    for (const ParameterSpec &p : l.parameters) {
      EXPECT_TRUE(names.insert(p.name).second) << "duplicate " << p.name;
      EXPECT_FALSE(p.shape.empty()) << p.name;
    }
  }
}

TEST(ParameterLayoutTest, BertNamesAndShapes) {
  ParameterLayout l = layoutOf(preset("tiny-bert"));
  EXPECT_EQ(l.parameters.front().name,
            "bert.embeddings.word_embeddings.weight");
  EXPECT_EQ(shapeOf(l, "bert.embeddings.word_embeddings.weight"),
            (Shape{100, 64}));
  EXPECT_EQ(shapeOf(l, "bert.embeddings.position_embeddings.weight"),
            (Shape{32, 64}));
  EXPECT_EQ(shapeOf(l, "bert.embeddings.token_type_embeddings.weight"),
            (Shape{2, 64}));
  EXPECT_EQ(shapeOf(l, "bert.embeddings.LayerNorm.weight"), (Shape{64}));
  EXPECT_EQ(shapeOf(l, "bert.encoder.layer.1.attention.self.query.weight"),
            (Shape{64, 64}));
  EXPECT_EQ(shapeOf(l, "bert.encoder.layer.1.attention.output.dense.bias"),
            (Shape{64}));
  EXPECT_EQ(shapeOf(l, "bert.encoder.layer.0.intermediate.dense.weight"),
            (Shape{128, 64}));
  EXPECT_EQ(shapeOf(l, "bert.encoder.layer.0.intermediate.dense.bias"),
            (Shape{128}));
  EXPECT_EQ(shapeOf(l, "bert.encoder.layer.0.output.dense.weight"),
            (Shape{64, 128}));
  EXPECT_EQ(shapeOf(l, "bert.encoder.layer.0.output.LayerNorm.bias"),
            (Shape{64}));
  EXPECT_EQ(shapeOf(l, "cls.predictions.transform.dense.weight"),
            (Shape{64, 64}));
  EXPECT_EQ(shapeOf(l, "cls.predictions.bias"), (Shape{100}));
  EXPECT_EQ(l.find("bert.encoder.layer.2.output.dense.weight"), nullptr);
  EXPECT_EQ(l.find("bert.encoder.final_layer_norm.weight"), nullptr);
  EXPECT_EQ(l.parameters.size(), 5u + 16u * 2 + 5u);
}

TEST(ParameterLayoutTest, TiedWeightsAppearOnce) {
  EXPECT_EQ(
      layoutOf(preset("tiny-bert")).find("cls.predictions.decoder.weight"),
      nullptr);
  EXPECT_EQ(layoutOf(preset("tiny-gpt")).find("lm_head.weight"), nullptr);
  ParameterLayout mt = layoutOf(preset("tiny-transformer"));
  EXPECT_EQ(mt.find("decoder.output_projection.weight"), nullptr);
  EXPECT_EQ(mt.find("decoder.embed_tokens.weight"), nullptr);
  EXPECT_NE(mt.find("encoder.embed_tokens.weight"), nullptr);

  ParameterLayout bert =
      layoutOf(variant("tiny-bert", {{"tie_embeddings", false}}));
  EXPECT_EQ(shapeOf(bert, "cls.predictions.decoder.weight"), (Shape{100, 64}));
  ParameterLayout gpt =
      layoutOf(variant("tiny-gpt", {{"tie_embeddings", false}}));
  EXPECT_EQ(shapeOf(gpt, "lm_head.weight"), (Shape{65, 64}));
  EXPECT_EQ(gpt.parameters.back().name, "lm_head.weight");
  ParameterLayout untied =
      layoutOf(variant("tiny-transformer", {{"tie_embeddings", false},
                                            {"share_embeddings", false},
                                            {"src_vocab", 90}}));
  EXPECT_EQ(shapeOf(untied, "encoder.embed_tokens.weight"), (Shape{90, 64}));
  EXPECT_EQ(shapeOf(untied, "decoder.embed_tokens.weight"), (Shape{100, 64}));
  EXPECT_EQ(shapeOf(untied, "decoder.output_projection.weight"),
            (Shape{100, 64}));
  // Untying adds exactly one V x H matrix.
  EXPECT_EQ(bert.numParameters() -
                layoutOf(preset("tiny-bert")).numParameters(),
            100 * 64);
}

TEST(ParameterLayoutTest, Gpt2UsesConv1DLayout) {
  ModelDescription d = preset("tiny-gpt");
  ParameterLayout l = layoutOf(d);
  EXPECT_EQ(l.parameters.front().name, "transformer.wte.weight");
  EXPECT_EQ(shapeOf(l, "transformer.wte.weight"), (Shape{65, 64}));
  EXPECT_EQ(shapeOf(l, "transformer.wpe.weight"), (Shape{32, 64}));
  EXPECT_EQ(shapeOf(l, "transformer.h.0.attn.c_attn.weight"), (Shape{64, 192}));
  EXPECT_EQ(shapeOf(l, "transformer.h.0.attn.c_attn.bias"), (Shape{192}));
  EXPECT_EQ(shapeOf(l, "transformer.h.0.attn.c_proj.weight"), (Shape{64, 64}));
  EXPECT_EQ(shapeOf(l, "transformer.h.1.mlp.c_fc.weight"), (Shape{64, 128}));
  EXPECT_EQ(shapeOf(l, "transformer.h.1.mlp.c_fc.bias"), (Shape{128}));
  EXPECT_EQ(shapeOf(l, "transformer.h.1.mlp.c_proj.weight"), (Shape{128, 64}));
  EXPECT_EQ(shapeOf(l, "transformer.h.1.ln_2.weight"), (Shape{64}));
  EXPECT_EQ(l.parameters.back().name, "transformer.ln_f.bias");
  // Residual projections start smaller: 0.02 / sqrt(2 * layers).
  EXPECT_DOUBLE_EQ(get(l, "transformer.h.0.attn.c_proj.weight").init_std,
                   0.02 / std::sqrt(4.0));
  EXPECT_DOUBLE_EQ(get(l, "transformer.h.0.mlp.c_proj.weight").init_std,
                   0.02 / std::sqrt(4.0));
  EXPECT_DOUBLE_EQ(get(l, "transformer.h.0.mlp.c_fc.weight").init_std, 0.02);
}

TEST(ParameterLayoutTest, NormPlacementDecidesFinalNorm) {
  EXPECT_NE(layoutOf(variant("tiny-bert", {{"norm", "pre"}}))
                .find("bert.encoder.final_layer_norm.bias"),
            nullptr);
  EXPECT_EQ(layoutOf(variant("tiny-gpt", {{"norm", "post"}}))
                .find("transformer.ln_f.weight"),
            nullptr);
  ParameterLayout pre =
      layoutOf(variant("tiny-transformer", {{"norm", "pre"}}));
  EXPECT_NE(pre.find("encoder.layer_norm.weight"), nullptr);
  EXPECT_NE(pre.find("decoder.layer_norm.weight"), nullptr);
  ParameterLayout post = layoutOf(preset("tiny-transformer"));
  EXPECT_EQ(post.find("encoder.layer_norm.weight"), nullptr);
  EXPECT_EQ(post.find("decoder.layer_norm.weight"), nullptr);
  EXPECT_NE(layoutOf(preset("tiny-vit")).find("norm.weight"), nullptr);
  EXPECT_EQ(
      layoutOf(variant("tiny-vit", {{"norm", "post"}})).find("norm.weight"),
      nullptr);
}

TEST(ParameterLayoutTest, KvHeadsShrinkKeyValue) {
  // 4 heads of 16, 2 key/value heads: k and v are 32 wide.
  const json gqa = {{"kv_heads", 2}};
  ParameterLayout bert = layoutOf(variant("tiny-bert", gqa));
  EXPECT_EQ(shapeOf(bert, "bert.encoder.layer.0.attention.self.query.weight"),
            (Shape{64, 64}));
  EXPECT_EQ(shapeOf(bert, "bert.encoder.layer.0.attention.self.key.weight"),
            (Shape{32, 64}));
  EXPECT_EQ(shapeOf(bert, "bert.encoder.layer.0.attention.self.value.bias"),
            (Shape{32}));
  EXPECT_EQ(layoutOf(preset("tiny-bert")).numParameters() -
                bert.numParameters(),
            2 * 2 * (32 * 64 + 32));

  EXPECT_EQ(shapeOf(layoutOf(variant("tiny-gpt", gqa)),
                    "transformer.h.0.attn.c_attn.weight"),
            (Shape{64, 128}));
  ParameterLayout mt = layoutOf(variant("tiny-transformer", gqa));
  EXPECT_EQ(shapeOf(mt, "decoder.layers.1.encoder_attn.k_proj.weight"),
            (Shape{32, 64}));
  EXPECT_EQ(shapeOf(mt, "encoder.layers.0.self_attn.v_proj.weight"),
            (Shape{32, 64}));
  EXPECT_EQ(shapeOf(mt, "encoder.layers.0.self_attn.q_proj.weight"),
            (Shape{64, 64}));
  EXPECT_EQ(
      shapeOf(layoutOf(variant("tiny-vit", gqa)), "blocks.0.attn.qkv.weight"),
      (Shape{128, 64}));
}

TEST(ParameterLayoutTest, FairseqNamesAndBuffers) {
  ModelDescription d = preset("tiny-transformer");
  ParameterLayout l = layoutOf(d);
  EXPECT_EQ(l.parameters.front().name, "encoder.embed_tokens.weight");
  for (const char *name :
       {"encoder.embed_positions.weights", "decoder.embed_positions.weights"}) {
    const ParameterSpec &p = get(l, name);
    EXPECT_EQ(p.shape, (Shape{32, 64}));
    EXPECT_FALSE(p.trainable);
    EXPECT_FALSE(p.weight_decay);
    EXPECT_EQ(p.init, ParameterInit::Sinusoidal);
  }
  EXPECT_EQ(l.numBufferElements(), 2 * 32 * 64);
  EXPECT_EQ(shapeOf(l, "encoder.layers.1.fc1.weight"), (Shape{128, 64}));
  EXPECT_EQ(shapeOf(l, "encoder.layers.1.fc2.weight"), (Shape{64, 128}));
  EXPECT_EQ(shapeOf(l, "decoder.layers.0.encoder_attn.out_proj.weight"),
            (Shape{64, 64}));
  EXPECT_EQ(shapeOf(l, "decoder.layers.0.encoder_attn_layer_norm.weight"),
            (Shape{64}));
  EXPECT_EQ(shapeOf(l, "decoder.layers.1.final_layer_norm.bias"), (Shape{64}));
  EXPECT_EQ(get(l, "encoder.layers.0.self_attn.q_proj.weight").init,
            ParameterInit::XavierUniform);
  EXPECT_EQ(get(l, "encoder.embed_tokens.weight").init, ParameterInit::Normal);
  EXPECT_DOUBLE_EQ(get(l, "encoder.embed_tokens.weight").init_std, 0.125);
  // Per encoder layer 16 tensors, per decoder layer 26, plus 4 embeddings.
  EXPECT_EQ(l.parameters.size(), 2u + 2 * 16 + 1 + 2 * 26);
}

TEST(ParameterLayoutTest, VitNamesAndShapes) {
  ParameterLayout l = layoutOf(preset("tiny-vit"));
  EXPECT_EQ(l.parameters.front().name, "cls_token");
  EXPECT_EQ(shapeOf(l, "cls_token"), (Shape{1, 1, 64}));
  EXPECT_EQ(shapeOf(l, "pos_embed"), (Shape{1, 17, 64}));
  EXPECT_EQ(shapeOf(l, "patch_embed.proj.weight"), (Shape{64, 1, 7, 7}));
  EXPECT_EQ(shapeOf(l, "patch_embed.proj.bias"), (Shape{64}));
  EXPECT_EQ(shapeOf(l, "blocks.1.attn.qkv.weight"), (Shape{192, 64}));
  EXPECT_EQ(shapeOf(l, "blocks.1.attn.proj.weight"), (Shape{64, 64}));
  EXPECT_EQ(shapeOf(l, "blocks.0.mlp.fc1.weight"), (Shape{128, 64}));
  EXPECT_EQ(shapeOf(l, "blocks.0.mlp.fc2.weight"), (Shape{64, 128}));
  EXPECT_EQ(shapeOf(l, "blocks.0.norm2.bias"), (Shape{64}));
  EXPECT_EQ(shapeOf(l, "head.weight"), (Shape{10, 64}));
  EXPECT_EQ(l.parameters.back().name, "head.bias");
  EXPECT_EQ(l.numBufferElements(), 0);
}

TEST(ParameterLayoutTest, WeightDecayAndInitConventions) {
  for (const char *name : kTiny) {
    SCOPED_TRACE(name);
    ParameterLayout l = layoutOf(preset(name));
    for (const ParameterSpec &p : l.parameters) {
      const bool isBias = p.name.size() > 5 &&
                          p.name.compare(p.name.size() - 5, 5, ".bias") == 0;
      if (isBias) {
        EXPECT_FALSE(p.weight_decay) << p.name;
        EXPECT_EQ(p.init, ParameterInit::Zeros) << p.name;
      }
      if (p.init == ParameterInit::Ones) {
        EXPECT_FALSE(p.weight_decay) << p.name;
      }
      if (p.init == ParameterInit::Normal) {
        EXPECT_GT(p.init_std, 0.0) << p.name;
      } else {
        EXPECT_EQ(p.init_std, 0.0) << p.name;
      }
    }
  }
  ParameterLayout bert = layoutOf(preset("tiny-bert"));
  EXPECT_TRUE(get(bert, "bert.embeddings.word_embeddings.weight").weight_decay);
  EXPECT_FALSE(get(bert, "bert.embeddings.LayerNorm.weight").weight_decay);
  EXPECT_EQ(get(bert, "bert.embeddings.LayerNorm.weight").init,
            ParameterInit::Ones);
  EXPECT_DOUBLE_EQ(
      get(bert, "bert.encoder.layer.0.attention.self.key.weight").init_std,
      0.02);
  ParameterLayout vit = layoutOf(preset("tiny-vit"));
  EXPECT_FALSE(get(vit, "cls_token").weight_decay);
  EXPECT_FALSE(get(vit, "pos_embed").weight_decay);
  EXPECT_TRUE(get(vit, "patch_embed.proj.weight").weight_decay);
}

TEST(ParameterLayoutTest, ByteCounts) {
  ModelDescription d = preset("tiny-bert");
  ParameterLayout l = layoutOf(d);
  const int64_t n = l.numParameters();
  EXPECT_EQ(n, 80036);
  EXPECT_EQ(l.computeWeightBytes(ls2c::DType::F32), 4 * n);
  EXPECT_EQ(l.computeWeightBytes(ls2c::DType::F16), 2 * n);
  EXPECT_EQ(l.computeWeightBytes(ls2c::DType::BF16), 2 * n);
  EXPECT_EQ(l.masterWeightBytes(), 4 * n);
  EXPECT_EQ(l.gradientBytes(ls2c::DType::F32), 4 * n);
  EXPECT_EQ(l.gradientBytes(ls2c::DType::BF16), 2 * n);
  EXPECT_EQ(l.optimizerStateBytes(), 8 * n);
  // Buffers are not training state.
  ParameterLayout mt = layoutOf(preset("tiny-transformer"));
  EXPECT_EQ(mt.masterWeightBytes(), 4 * mt.numParameters());
  EXPECT_GT(mt.numBufferElements(), 0);
}

TEST(ParameterLayoutTest, OverflowThrows) {
  ParameterSpec huge;
  huge.name = "huge";
  huge.shape = {int64_t(1) << 40, int64_t(1) << 30};
  try {
    (void)huge.numel();
    ADD_FAILURE() << "no overflow reported";
  } catch (const DescriptionError &e) {
    EXPECT_EQ(e.path(), "$");
    EXPECT_EQ(std::string(e.what()),
              "$: element count of 'huge' [1099511627776, 1073741824] "
              "overflows 64-bit integers");
  }
  ParameterSpec negative;
  negative.name = "neg";
  negative.shape = {4, -1};
  EXPECT_THROW((void)negative.numel(), DescriptionError);

  // 2^61 elements are countable; their optimizer state is not.
  ParameterLayout l;
  ParameterSpec big;
  big.name = "big";
  big.shape = {int64_t(1) << 31, int64_t(1) << 30};
  l.parameters.push_back(big);
  EXPECT_EQ(l.numParameters(), int64_t(1) << 61);
  EXPECT_EQ(l.computeWeightBytes(ls2c::DType::F16), int64_t(1) << 62);
  EXPECT_THROW((void)l.computeWeightBytes(ls2c::DType::F32), DescriptionError);
  EXPECT_THROW((void)l.masterWeightBytes(), DescriptionError);
  EXPECT_THROW((void)l.gradientBytes(ls2c::DType::F32), DescriptionError);
  try {
    (void)l.optimizerStateBytes();
    ADD_FAILURE() << "no overflow reported";
  } catch (const DescriptionError &e) {
    EXPECT_EQ(e.path(), "$");
  }
  // Sums overflow too.
  l.parameters.push_back(big);
  l.parameters.push_back(big);
  l.parameters.push_back(big);
  EXPECT_THROW((void)l.numParameters(), DescriptionError);

  // Unvalidated descriptions are checked where the layout needs it.
  ModelDescription d = preset("tiny-bert");
  d.vocab = int64_t(1) << 40;
  d.hidden = int64_t(1) << 30;
  d.heads = d.kv_heads = int64_t(1) << 22;
  EXPECT_THROW(ls2c::buildParameterLayout(d), DescriptionError);
  d = preset("tiny-bert");
  d.encoder_layers = int64_t(1) << 40;
  EXPECT_THROW(ls2c::buildParameterLayout(d), DescriptionError);
}

TEST(ParameterLayoutTest, FindReturnsNullForUnknownNames) {
  ParameterLayout l = layoutOf(preset("tiny-gpt"));
  EXPECT_EQ(l.find(""), nullptr);
  EXPECT_EQ(l.find("transformer.wte"), nullptr);
  EXPECT_EQ(l.find("transformer.wte.weight"), &l.parameters.front());
}

TEST(ParameterLayoutTest, InitSpellings) {
  EXPECT_EQ(ls2c::toString(ParameterInit::XavierUniform), "xavier_uniform");
  EXPECT_EQ(ls2c::toString(ParameterInit::Sinusoidal), "sinusoidal");
  EXPECT_EQ(ls2c::toString(ParameterInit::Ones), "ones");
}
