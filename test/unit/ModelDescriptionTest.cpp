//===- ModelDescriptionTest.cpp - model.json parsing and validation -------===//

#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Model/ParameterLayout.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cfloat>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <string>
#include <thread>

#ifndef LS2C_SOURCE_DIR
#error "LS2C_SOURCE_DIR must name the ls2c source tree"
#endif

using ls2c::DescriptionError;
using ls2c::ModelDescription;
using json = nlohmann::json;

namespace {

const std::string kSourceDir = LS2C_SOURCE_DIR;

std::string example(const std::string &name) {
  return kSourceDir + "/examples/" + name + ".json";
}
std::string badFixture(const std::string &name) {
  return kSourceDir + "/test/model/bad/" + name + ".json";
}

// Smallest valid description of each architecture.
json tinyEncoder() {
  return {{"architecture", "encoder"},
          {"encoder_layers", 2},
          {"hidden", 64},
          {"heads", 4},
          {"ffn", 128},
          {"vocab", 100},
          {"max_seq_len", 32},
          {"max_batch_tokens", 256}};
}
json tinyDecoder() {
  json j = tinyEncoder();
  j.erase("encoder_layers");
  j["architecture"] = "decoder";
  j["decoder_layers"] = 2;
  return j;
}
json tinyEncoderDecoder() {
  json j = tinyEncoder();
  j["architecture"] = "encoder_decoder";
  j["decoder_layers"] = 2;
  return j;
}
json tinyVit() {
  return {{"architecture", "vit"},
          {"encoder_layers", 2},
          {"hidden", 64},
          {"heads", 4},
          {"ffn", 128},
          {"image_size", 28},
          {"patch_size", 7},
          {"channels", 1},
          {"num_classes", 10},
          {"max_batch_tokens", 272}};
}

json tinyLlama() {
  json j = tinyDecoder();
  j["architecture"] = "llama";
  j["kv_heads"] = 2;
  return j;
}

ModelDescription parse(const json &j) {
  return ls2c::parseModelDescription(j.dump(), "t.json");
}

// `base` with `patch` merged in (RFC 7396: null removes a key).
json patched(json base, const json &patch) {
  base.merge_patch(patch);
  return base;
}

// The message parsing `j` fails with, or "" when it parses.
std::string errorOf(const json &j, std::string *path = nullptr) {
  try {
    parse(j);
  } catch (const DescriptionError &e) {
    if (path)
      *path = e.path();
    return e.what();
  }
  return "";
}

// Strictly well-formed UTF-8 (no overlongs, surrogates or code points above
// U+10FFFF).
bool isValidUtf8(const std::string &s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80                 ? 1
               : c >= 0xC2 && c <= 0xDF ? 2
               : c >= 0xE0 && c <= 0xEF ? 3
               : c >= 0xF0 && c <= 0xF4 ? 4
                                        : 0;
    if (n == 0 || i + n > s.size())
      return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80)
        return false;
    const auto c1 = static_cast<unsigned char>(n > 1 ? s[i + 1] : 0);
    if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) ||
        (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F))
      return false;
    i += n;
  }
  return true;
}

// A message fit for one terminal line: at most 300 bytes of valid UTF-8 with
// no control characters (C0, DEL, C1) and no line or paragraph separators.
void expectShortPrintableLine(const std::string &msg) {
  EXPECT_LE(msg.size(), 300u) << msg.substr(0, 400);
  EXPECT_TRUE(isValidUtf8(msg)) << msg.substr(0, 400);
  for (size_t i = 0; i < msg.size(); ++i) {
    const auto c = static_cast<unsigned char>(msg[i]);
    const auto next = static_cast<unsigned char>(msg[i + 1]); // '\0' at end
    EXPECT_TRUE(c >= 0x20 && c != 0x7F) << "control byte " << int(c);
    EXPECT_FALSE(c == 0xC2 && next >= 0x80 && next <= 0x9F) << "C1 control";
    EXPECT_FALSE(c == 0xE2 && msg.compare(i, 3, "\u2028") == 0);
    EXPECT_FALSE(c == 0xE2 && msg.compare(i, 3, "\u2029") == 0);
  }
}

// The message parsing `text` (named `source`) fails with, or "".
std::string textError(const std::string &text,
                      const std::string &source = "t.json",
                      std::string *path = nullptr) {
  try {
    ls2c::parseModelDescription(text, source);
  } catch (const DescriptionError &e) {
    if (path)
      *path = e.path();
    return e.what();
  }
  return "";
}

// tinyEncoder() as text with `member` ("\"key\": value") added at the end.
std::string withMember(const std::string &member) {
  std::string text = tinyEncoder().dump();
  text.pop_back();
  return text + ", " + member + "}";
}

// Loads test/model/bad/<fixture>.json and checks the one-line message.
void expectBad(const std::string &fixture, const std::string &path,
               const std::string &detail) {
  const std::string file = badFixture(fixture);
  ASSERT_TRUE(std::filesystem::exists(file)) << file;
  try {
    ls2c::loadModelDescription(file);
    ADD_FAILURE() << file << " was accepted";
  } catch (const DescriptionError &e) {
    EXPECT_EQ(e.source(), file);
    EXPECT_EQ(e.path(), path);
    EXPECT_EQ(e.detail(), detail);
    EXPECT_EQ(e.what(),
              file + ": " + (path.empty() ? "" : path + ": ") + detail);
    expectShortPrintableLine(e.what());
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Accepted descriptions and defaults
//===----------------------------------------------------------------------===//

TEST(ModelDescriptionTest, EncoderDefaultsFollowBert) {
  ModelDescription d = parse(tinyEncoder());
  EXPECT_EQ(d.name, "t");
  EXPECT_EQ(d.architecture, ls2c::Architecture::Encoder);
  EXPECT_EQ(d.kv_heads, 4);
  EXPECT_EQ(d.type_vocab_size, 2);
  EXPECT_EQ(d.src_vocab, 0);
  EXPECT_EQ(d.decoder_layers, 0);
  EXPECT_EQ(d.norm, ls2c::NormPlacement::Post);
  EXPECT_EQ(d.activation, ls2c::Activation::GELU);
  EXPECT_DOUBLE_EQ(d.hidden_dropout, 0.1);
  EXPECT_DOUBLE_EQ(d.attention_dropout, 0.1);
  EXPECT_DOUBLE_EQ(d.activation_dropout, 0.0);
  EXPECT_DOUBLE_EQ(d.layer_norm_eps, 1e-12);
  EXPECT_TRUE(d.tie_embeddings);
  EXPECT_FALSE(d.share_embeddings);
  EXPECT_FALSE(d.activation_checkpointing);
  EXPECT_TRUE(parse(patched(tinyEncoder(), {{"activation_checkpointing", true}}))
                  .activation_checkpointing);
  EXPECT_EQ(d.dtype, ls2c::DType::F32);
  EXPECT_EQ(d.padding_idx, 0);
  EXPECT_EQ(d.image_size, 0);
  EXPECT_EQ(d.optimizer.type, ls2c::OptimizerType::AdamW);
  EXPECT_DOUBLE_EQ(d.optimizer.lr, 1e-4);
  EXPECT_DOUBLE_EQ(d.optimizer.beta1, 0.9);
  EXPECT_DOUBLE_EQ(d.optimizer.beta2, 0.999);
  EXPECT_DOUBLE_EQ(d.optimizer.eps, 1e-8);
  EXPECT_DOUBLE_EQ(d.optimizer.weight_decay, 0.01);
  EXPECT_DOUBLE_EQ(d.optimizer.clip_norm, 0.0);
  EXPECT_DOUBLE_EQ(d.optimizer.bucket_cap_mb, 25.0);
  EXPECT_EQ(d.optimizer.schedule.type, ls2c::ScheduleType::Constant);
  EXPECT_EQ(d.headDim(), 16);
  EXPECT_EQ(d.numPatches(), 0);
}

TEST(ModelDescriptionTest, DecoderDefaultsFollowGpt2) {
  ModelDescription d = parse(tinyDecoder());
  EXPECT_EQ(d.norm, ls2c::NormPlacement::Pre);
  EXPECT_EQ(d.activation, ls2c::Activation::GELUTanh);
  EXPECT_DOUBLE_EQ(d.layer_norm_eps, 1e-5);
  EXPECT_TRUE(d.tie_embeddings);
  EXPECT_EQ(d.padding_idx, -1);
  EXPECT_EQ(d.type_vocab_size, 0);
  EXPECT_EQ(d.encoder_layers, 0);
}

TEST(ModelDescriptionTest, EncoderDecoderDefaultsFollowFairseq) {
  ModelDescription d = parse(tinyEncoderDecoder());
  EXPECT_EQ(d.src_vocab, 100);
  EXPECT_EQ(d.norm, ls2c::NormPlacement::Post);
  EXPECT_EQ(d.activation, ls2c::Activation::ReLU);
  EXPECT_DOUBLE_EQ(d.attention_dropout, 0.0);
  EXPECT_FALSE(d.tie_embeddings);
  EXPECT_EQ(d.padding_idx, 1);
}

TEST(ModelDescriptionTest, VitDerivesSequenceLength) {
  ModelDescription d = parse(tinyVit());
  EXPECT_EQ(d.numPatches(), 16);
  EXPECT_EQ(d.max_seq_len, 17);
  EXPECT_EQ(d.vocab, 0);
  EXPECT_EQ(d.padding_idx, -1);
  EXPECT_FALSE(d.tie_embeddings);
  EXPECT_EQ(d.norm, ls2c::NormPlacement::Pre);
  EXPECT_DOUBLE_EQ(d.layer_norm_eps, 1e-6);
  EXPECT_EQ(parse(patched(tinyVit(), {{"channels", nullptr}})).channels, 3);
  EXPECT_EQ(parse(patched(tinyVit(), {{"max_seq_len", 17}})).max_seq_len, 17);
}

TEST(ModelDescriptionTest, NonApplicableFieldsMayHoldTheirOffValue) {
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"decoder_layers", 0},
                                            {"image_size", 0},
                                            {"share_embeddings", false}})),
            "");
  EXPECT_EQ(errorOf(patched(tinyVit(), {{"vocab", 0},
                                        {"padding_idx", -1},
                                        {"tie_embeddings", false}})),
            "");
}

TEST(ModelDescriptionTest, Spellings) {
  EXPECT_EQ(ls2c::toString(ls2c::Architecture::EncoderDecoder),
            "encoder_decoder");
  EXPECT_EQ(ls2c::toString(ls2c::Architecture::ViT), "vit");
  EXPECT_EQ(ls2c::toString(ls2c::NormPlacement::Pre), "pre");
  EXPECT_EQ(ls2c::toString(ls2c::Activation::GELUTanh), "gelu_tanh");
  EXPECT_EQ(ls2c::toString(ls2c::DType::BF16), "bf16");
  EXPECT_EQ(ls2c::toString(ls2c::OptimizerType::Adam), "adam");
  EXPECT_EQ(ls2c::toString(ls2c::ScheduleType::InverseSqrt), "inverse_sqrt");
  EXPECT_EQ(ls2c::dtypeBytes(ls2c::DType::F32), 4u);
  EXPECT_EQ(ls2c::dtypeBytes(ls2c::DType::F16), 2u);
  EXPECT_EQ(ls2c::dtypeBytes(ls2c::DType::BF16), 2u);
}

TEST(ModelDescriptionTest, ToJsonRoundTripsEveryPreset) {
  for (const auto &entry :
       std::filesystem::directory_iterator(kSourceDir + "/examples")) {
    if (entry.path().extension() != ".json")
      continue;
    SCOPED_TRACE(entry.path().string());
    ModelDescription d = ls2c::loadModelDescription(entry.path().string());
    json once = ls2c::toJson(d);
    ModelDescription again = ls2c::parseModelDescription(once.dump(2), "rt");
    EXPECT_EQ(ls2c::toJson(again), once);
  }
}

TEST(ModelDescriptionTest, ToJsonRoundTripsDefaults) {
  for (const json &j :
       {tinyEncoder(), tinyDecoder(), tinyEncoderDecoder(), tinyVit()}) {
    json once = ls2c::toJson(parse(j));
    EXPECT_EQ(ls2c::toJson(parse(once)), once) << once.dump();
  }
}

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

TEST(ModelPresets, EveryPresetLoads) {
  int count = 0;
  for (const auto &entry :
       std::filesystem::directory_iterator(kSourceDir + "/examples")) {
    if (entry.path().extension() != ".json")
      continue;
    ++count;
    EXPECT_NO_THROW({
      ModelDescription d = ls2c::loadModelDescription(entry.path().string());
      EXPECT_EQ(d.name, entry.path().stem().string());
    }) << entry.path();
  }
  EXPECT_GE(count, 11);
}

namespace {
int64_t presetParameters(const std::string &name) {
  return ls2c::buildParameterLayout(ls2c::loadModelDescription(example(name)))
      .numParameters();
}
} // namespace

// Hugging Face BertForMaskedLM (bert-base-uncased), decoder tied: 109,514,298.
TEST(ModelPresets, BertBaseMatchesHuggingFace) {
  EXPECT_EQ(presetParameters("bert-base"), 109514298);
  ModelDescription d = ls2c::loadModelDescription(example("bert-base"));
  EXPECT_EQ(d.dtype, ls2c::DType::F16);
  EXPECT_EQ(d.norm, ls2c::NormPlacement::Post);
  EXPECT_EQ(d.max_batch_tokens, 16384);
}

// BertForMaskedLM bert-large-uncased: BertModel without pooler + MLM head.
TEST(ModelPresets, BertLargeMatchesHuggingFace) {
  EXPECT_EQ(presetParameters("bert-large"), 335174458);
}

// Hugging Face GPT2LMHeadModel (gpt2), lm_head tied: 124,439,808.
TEST(ModelPresets, Gpt2SmallMatchesHuggingFace) {
  EXPECT_EQ(presetParameters("gpt2-small"), 124439808);
  ModelDescription d = ls2c::loadModelDescription(example("gpt2-small"));
  EXPECT_EQ(d.dtype, ls2c::DType::BF16);
  EXPECT_EQ(d.norm, ls2c::NormPlacement::Pre);
  EXPECT_EQ(d.activation, ls2c::Activation::GELUTanh);
  EXPECT_TRUE(d.tie_embeddings);
}

TEST(ModelPresets, Gpt2MediumMatchesHuggingFace) {
  EXPECT_EQ(presetParameters("gpt2-medium"), 354823168);
}

// fairseq transformer_wmt_en_de with --share-all-embeddings, 32k vocabulary:
// 32000*512 embeddings + 6 * 3,152,384 (encoder) + 6 * 4,204,032 (decoder).
TEST(ModelPresets, TransformerBaseCount) {
  EXPECT_EQ(presetParameters("transformer-base"), 60522496);
  ModelDescription d = ls2c::loadModelDescription(example("transformer-base"));
  EXPECT_TRUE(d.share_embeddings);
  EXPECT_EQ(d.optimizer.type, ls2c::OptimizerType::Adam);
  EXPECT_DOUBLE_EQ(d.optimizer.beta2, 0.98);
  EXPECT_DOUBLE_EQ(d.optimizer.lr, 7e-4);
  EXPECT_EQ(d.optimizer.schedule.type, ls2c::ScheduleType::InverseSqrt);
  EXPECT_EQ(d.optimizer.schedule.warmup_steps, 4000);
  EXPECT_DOUBLE_EQ(d.label_smoothing, 0.1);
  EXPECT_EQ(d.max_batch_tokens, 4096);
}

// 32000*1024 + 6 * 12,596,224 (encoder) + 6 * 16,797,696 (decoder).
TEST(ModelPresets, TransformerBigCount) {
  EXPECT_EQ(presetParameters("transformer-big"), 209125376);
  EXPECT_DOUBLE_EQ(
      ls2c::loadModelDescription(example("transformer-big")).hidden_dropout,
      0.3);
}

// timm vit_base_patch16_224: 86,567,656.
TEST(ModelPresets, VitB16MatchesTimm) {
  EXPECT_EQ(presetParameters("vit-b16"), 86567656);
  ModelDescription d = ls2c::loadModelDescription(example("vit-b16"));
  EXPECT_EQ(d.numPatches(), 196);
  EXPECT_EQ(d.max_seq_len, 197);
}

// Hugging Face's Llama-2-7b and TinyLlama-1.1B counts.
TEST(ModelPresets, LlamaPresetsMatchHuggingFace) {
  EXPECT_EQ(presetParameters("llama-7b"), 6738415616);
  EXPECT_EQ(presetParameters("tinyllama-1.1b"), 1100048384);
  EXPECT_EQ(presetParameters("llama-125m"), 124668672);
}

TEST(Llama, DefaultsFollowLlamaConfig) {
  ModelDescription d = parse(tinyLlama());
  EXPECT_EQ(d.norm, ls2c::NormPlacement::Pre);
  EXPECT_EQ(d.activation, ls2c::Activation::SiLU);
  EXPECT_EQ(d.rms_norm_eps, 1e-6);
  EXPECT_EQ(d.rope_theta, 10000.0);
  EXPECT_EQ(d.layer_norm_eps, 0.0);
  EXPECT_EQ(d.hidden_dropout, 0.0);
  EXPECT_EQ(d.attention_dropout, 0.0);
  EXPECT_FALSE(d.tie_embeddings);
  EXPECT_EQ(d.padding_idx, -1);
  EXPECT_EQ(d.kv_heads, 2);
  // toJson writes rms_norm_eps and rope_theta, not layer_norm_eps, and reads back.
  json j = ls2c::toJson(d);
  EXPECT_FALSE(j.contains("layer_norm_eps"));
  EXPECT_EQ(j.at("rope_theta"), 10000.0);
  ModelDescription again = parse(j);
  EXPECT_EQ(again.rms_norm_eps, d.rms_norm_eps);
  EXPECT_EQ(again.rope_theta, d.rope_theta);
}

TEST(Llama, RefusesWhatLlamaForCausalLMLacks) {
  std::string path;
  EXPECT_NE(errorOf(patched(tinyLlama(), {{"norm", "post"}}), &path).find("must be 'pre'"),
            std::string::npos);
  EXPECT_EQ(path, "$.norm");
  EXPECT_NE(errorOf(patched(tinyLlama(), {{"hidden_dropout", 0.1}}), &path)
                .find("only attention_dropout"),
            std::string::npos);
  EXPECT_EQ(path, "$.hidden_dropout");
  EXPECT_NE(errorOf(patched(tinyLlama(), {{"activation_dropout", 0.1}}), &path)
                .find("only attention_dropout"),
            std::string::npos);
  EXPECT_NE(errorOf(patched(tinyLlama(), {{"layer_norm_eps", 1e-5}}), &path)
                .find("rms_norm_eps"),
            std::string::npos);
  EXPECT_EQ(path, "$.layer_norm_eps");
  for (double theta : {1.0, 0.5, -3.0, 1.00000001}) {
    EXPECT_NE(errorOf(patched(tinyLlama(), {{"rope_theta", theta}}), &path)
                  .find("greater than 1"),
              std::string::npos)
        << theta;
    EXPECT_EQ(path, "$.rope_theta");
  }
  EXPECT_EQ(errorOf(patched(tinyLlama(), {{"rope_theta", 3.402e38}})), "");
  EXPECT_NE(errorOf(patched(tinyLlama(), {{"rope_theta", 1e39}})).find("overflows 32-bit float"),
            std::string::npos);
  EXPECT_NE(errorOf(patched(tinyLlama(), {{"hidden", 36}, {"heads", 4}, {"kv_heads", 4}}), &path)
                .find("must be even"),
            std::string::npos);
  EXPECT_EQ(path, "$.heads");
  EXPECT_NE(errorOf(patched(tinyLlama(), {{"rms_norm_eps", 0.0}}), &path), "");
  EXPECT_EQ(path, "$.rms_norm_eps");
  // Sequence parallelism applies as to GPT's decoder.
  EXPECT_EQ(parse(patched(tinyLlama(), {{"max_seq_len", 512},
                                        {"max_batch_tokens", 256},
                                        {"sequence_parallel_size", 2}}))
                .sequence_parallel_size,
            2);
  EXPECT_NE(errorOf(patched(tinyLlama(), {{"max_seq_len", 1024},
                                          {"max_batch_tokens", 256},
                                          {"sequence_parallel_size", 2}}),
                    &path)
                .find("a rank's share"),
            std::string::npos);
  EXPECT_EQ(path, "$.max_seq_len");
  // Llama's own fields on other architectures.
  for (const char *key : {"rms_norm_eps", "rope_theta"}) {
    EXPECT_NE(errorOf(patched(tinyDecoder(), {{key, 1e-5}}), &path).find("does not apply"),
              std::string::npos)
        << key;
    EXPECT_EQ(path, std::string("$.") + key);
  }
  // Attention dropout and the gated activations are LlamaConfig's.
  EXPECT_EQ(errorOf(patched(tinyLlama(), {{"attention_dropout", 0.1},
                                          {"activation", "gelu_tanh"}})),
            "");
}

TEST(ModelPresets, TinyVariantsAreSmallAndFp32) {
  for (const char *name :
       {"tiny-bert", "tiny-gpt", "tiny-transformer", "tiny-vit", "llama-tiny"}) {
    SCOPED_TRACE(name);
    ModelDescription d = ls2c::loadModelDescription(example(name));
    EXPECT_EQ(d.dtype, ls2c::DType::F32);
    EXPECT_EQ(d.hidden, 64);
    EXPECT_LE(d.max_seq_len, 32);
  }
  EXPECT_EQ(ls2c::loadModelDescription(example("tiny-gpt")).vocab, 65);
  ModelDescription vit = ls2c::loadModelDescription(example("tiny-vit"));
  EXPECT_EQ(vit.channels, 1);
  EXPECT_EQ(vit.num_classes, 10);
  EXPECT_EQ(vit.max_seq_len, 17);
}

//===----------------------------------------------------------------------===//
// Rejected descriptions: one test and one fixture per rule
//===----------------------------------------------------------------------===//

TEST(ModelDescriptionBadInput, EmptyFile) {
  expectBad("empty", "", "file is empty");
  EXPECT_THROW(ls2c::parseModelDescription(" \n\t", "w.json"),
               DescriptionError);
}

TEST(ModelDescriptionBadInput, NotJson) {
  expectBad("not-json", "",
            "not valid JSON (byte 48): parse error at line 4, column 1: syntax "
            "error while parsing object key - unexpected '}'; expected string "
            "literal");
}

TEST(ModelDescriptionBadInput, TopLevelNotObject) {
  expectBad(
      "top-level-not-object", "$",
      "[{\"architecture\":\"encoder\"}]: top level must be a JSON object");
}

TEST(ModelDescriptionBadInput, StringForInteger) {
  expectBad("string-for-integer", "$.hidden", "\"64\": must be an integer");
}

TEST(ModelDescriptionBadInput, FloatForInteger) {
  expectBad("float-for-integer", "$.heads", "12.5: must be an integer");
  // Integral floats are rejected too: integer fields take integer literals.
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"hidden", 64.0}})),
            "t.json: $.hidden: 64.0: must be an integer");
}

TEST(ModelDescriptionBadInput, BoolForNumber) {
  expectBad("bool-for-number", "$.hidden_dropout", "true: must be a number");
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"ffn", true}})),
            "t.json: $.ffn: true: must be an integer");
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"tie_embeddings", 1}})),
            "t.json: $.tie_embeddings: 1: must be a boolean (true or false)");
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"norm", 1}})),
            "t.json: $.norm: 1: must be a string");
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"activation_checkpointing", 1}})),
            "t.json: $.activation_checkpointing: 1: must be a boolean (true or false)");
  // The longest shared prefix names the field meant.
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"activation_checkpoint", true}})),
            "t.json: $.activation_checkpoint: unknown key (did you mean "
            "\"activation_checkpointing\"?)");
}

TEST(ModelDescriptionBadInput, BetasWrongLength) {
  expectBad("betas-wrong-length", "$.optimizer.betas",
            "[0.9]: must be an array of 2 numbers");
  EXPECT_EQ(errorOf(patched(tinyEncoder(),
                            {{"optimizer", {{"betas", {0.9, 0.99, 0.999}}}}})),
            "t.json: $.optimizer.betas: [0.9,0.99,0.999]: must be an array of "
            "2 numbers");
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"optimizer", {{"betas", 0.9}}}})),
            "t.json: $.optimizer.betas: 0.9: must be an array of 2 numbers");
  EXPECT_EQ(
      errorOf(patched(tinyEncoder(), {{"optimizer", {{"betas", {0.9, "x"}}}}})),
      "t.json: $.optimizer.betas[1]: \"x\": must be a number");
}

TEST(ModelDescriptionBadInput, IntegerOutOfRange) {
  expectBad("integer-out-of-range", "$.max_batch_tokens",
            "1e+30: must be an integer that fits in 64 bits (signed)");
  json huge = tinyEncoder();
  huge["hidden"] = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(errorOf(huge),
            "t.json: $.hidden: 18446744073709551615: must be an integer that "
            "fits in 64 bits (signed)");
}

TEST(ModelDescriptionBadInput, UnknownKey) {
  expectBad("unknown-key", "$.hidn", "unknown key (did you mean \"hidden\"?)");
  // A prefix match suggests too (Hugging Face spelling).
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"hidden_size", 64}})),
            "t.json: $.hidden_size: unknown key (did you mean \"hidden\"?)");
  // Nothing close: no suggestion.
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"zzzzzz", 1}})),
            "t.json: $.zzzzzz: unknown key");
  // Keys that are not identifiers are quoted in the path.
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"a b", 1}})),
            "t.json: $[\"a b\"]: unknown key");
}

// A layer norm over one element outputs its bias alone, whatever the input.
TEST(ModelDescriptionBadInput, HiddenBelow2) {
  expectBad("hidden-below-2", "$.hidden",
            "1: must be at least 2 (a layer norm over one element outputs only its bias)");
}

// ls2c train's masked-LM sequences need [CLS], a token and [SEP]; a decoder
// of one position is fine.
TEST(ModelDescriptionBadInput, EncoderMaxSeqLenBelow3) {
  expectBad("encoder-max-seq-len-below-3", "$.max_seq_len",
            "2: must be at least 3 for an encoder ([CLS], a token and [SEP])");
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"max_seq_len", 1}})),
            "t.json: $.max_seq_len: 1: must be at least 3 for an encoder ([CLS], a token and "
            "[SEP])");
}

// Hugging Face, fairseq and PyTorch names of our keys get ours, not an
// edit-distance guess; in the object where ours is known only.
TEST(ModelDescriptionBadInput, ForeignKeyNames) {
  expectBad("hugging-face-key", "$.n_layer",
            "unknown key (ls2c's name for it: \"encoder_layers\" or \"decoder_layers\")");
  expectBad("hugging-face-key-heads", "$.num_attention_heads",
            "unknown key (ls2c's name for it: \"heads\")");
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"intermediate_size", 128}})),
            "t.json: $.intermediate_size: unknown key (ls2c's name for it: \"ffn\")");
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"n_embd", 64}})),
            "t.json: $.n_embd: unknown key (ls2c's name for it: \"hidden\")");
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"optimizer", {{"max_grad_norm", 1.0}}}})),
            "t.json: $.optimizer.max_grad_norm: unknown key (ls2c's name for it: \"clip_norm\")");
  // "betas" is an optimizer key: at the top level there is no such suggestion.
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"adam_beta1", 0.9}})),
            "t.json: $.adam_beta1: unknown key");
}

TEST(ModelDescriptionBadInput, UnknownKeyInOptimizer) {
  expectBad("unknown-key-optimizer", "$.optimizer.learning_rate",
            "unknown key (ls2c's name for it: \"lr\")");
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"optimizer", {{"beta", 1}}}})),
            "t.json: $.optimizer.beta: unknown key (did you mean \"betas\"?)");
}

TEST(ModelDescriptionBadInput, UnknownKeyInSchedule) {
  expectBad("unknown-key-schedule", "$.optimizer.schedule.warmup",
            "unknown key (did you mean \"warmup_steps\"?)");
}

TEST(ModelDescriptionBadInput, DuplicateKey) {
  expectBad("duplicate-key", "$.hidden",
            "duplicate key (each key may appear once per object)");
  std::string text = R"({"architecture": "encoder",
    "optimizer": {"betas": [0.9, {"a": 1, "a": 2}]}})";
  try {
    ls2c::parseModelDescription(text, "d.json");
    ADD_FAILURE() << "accepted";
  } catch (const DescriptionError &e) {
    EXPECT_EQ(e.path(), "$.optimizer.betas[1].a");
  }
}

TEST(ModelDescriptionBadInput, MissingRequiredField) {
  expectBad("missing-required-field", "$.ffn",
            "missing required field for architecture 'encoder'");
  struct Case {
    json base;
    const char *key;
  };
  for (const Case &c :
       {Case{tinyEncoder(), "architecture"}, Case{tinyEncoder(), "hidden"},
        Case{tinyEncoder(), "heads"}, Case{tinyEncoder(), "encoder_layers"},
        Case{tinyEncoder(), "vocab"}, Case{tinyEncoder(), "max_seq_len"},
        Case{tinyEncoder(), "max_batch_tokens"},
        Case{tinyDecoder(), "decoder_layers"},
        Case{tinyEncoderDecoder(), "encoder_layers"},
        Case{tinyEncoderDecoder(), "decoder_layers"},
        Case{tinyVit(), "image_size"}, Case{tinyVit(), "patch_size"},
        Case{tinyVit(), "num_classes"}, Case{tinyVit(), "encoder_layers"}}) {
    std::string path;
    std::string msg = errorOf(patched(c.base, {{c.key, nullptr}}), &path);
    EXPECT_EQ(path, std::string("$.") + c.key) << msg;
    EXPECT_NE(msg.find("missing required field"), std::string::npos) << msg;
  }
}

TEST(ModelDescriptionBadInput, NonPositiveSize) {
  expectBad("non-positive-size", "$.heads", "0: must be a positive integer");
  struct Case {
    json base;
    const char *key;
  };
  for (const Case &c :
       {Case{tinyEncoder(), "encoder_layers"},
        Case{tinyDecoder(), "decoder_layers"}, Case{tinyEncoder(), "hidden"},
        Case{tinyEncoder(), "heads"}, Case{tinyEncoder(), "kv_heads"},
        Case{tinyEncoder(), "ffn"}, Case{tinyEncoder(), "vocab"},
        Case{tinyEncoderDecoder(), "src_vocab"},
        Case{tinyEncoder(), "type_vocab_size"},
        Case{tinyEncoder(), "max_seq_len"},
        Case{tinyEncoder(), "max_batch_tokens"}, Case{tinyVit(), "image_size"},
        Case{tinyVit(), "patch_size"}, Case{tinyVit(), "channels"},
        Case{tinyVit(), "num_classes"}, Case{tinyVit(), "max_seq_len"}}) {
    for (int v : {0, -3}) {
      EXPECT_EQ(errorOf(patched(c.base, {{c.key, v}})),
                fmt::format("t.json: $.{}: {}: must be a positive integer",
                            c.key, v));
    }
  }
}

TEST(ModelDescriptionBadInput, HeadsNotDividingHidden) {
  expectBad("heads-not-dividing-hidden", "$.hidden",
            "770: must be divisible by heads (12)");
}

TEST(ModelDescriptionBadInput, KvHeadsNotDividingHeads) {
  expectBad("kv-heads-not-dividing-heads", "$.kv_heads",
            "3: must divide heads (4)");
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"kv_heads", 8}})),
            "t.json: $.kv_heads: 8: must divide heads (4)");
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"kv_heads", 2}})), "");
}

TEST(ModelDescriptionBadInput, HeadDimOver256) {
  expectBad("head-dim-over-256", "$.heads",
            "2: head dim hidden / heads = 1024 / 2 = 512 must be at most 256 "
            "(use more heads)");
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"hidden", 512}, {"heads", 2}})),
            "");
}

TEST(ModelDescriptionBadInput, ByteCountOverflow) {
  // The embedding's element count (2^64) overflows.
  expectBad("byte-count-overflow", "$.hidden",
            "8589934592: element count of "
            "'bert.embeddings.word_embeddings.weight' [2147483648, "
            "8589934592] overflows 64-bit integers");
  // About 3.1 * 2^60 elements fit in int64; their fp32 bytes do not.
  std::string path;
  std::string msg = errorOf(patched(tinyEncoder(), {{"vocab", int64_t(1) << 31},
                                                    {"hidden", 1 << 29},
                                                    {"heads", 1 << 21}}),
                            &path);
  EXPECT_EQ(path, "$.vocab");
  EXPECT_NE(msg.find("bytes overflows 64-bit integers"), std::string::npos)
      << msg;
  // About 0.81 * 2^60 elements: every count fits, their sum (20 bytes per
  // element in fp32) does not.
  msg = errorOf(patched(tinyEncoder(), {{"encoder_layers", 1},
                                        {"vocab", int64_t(1) << 31},
                                        {"hidden", 1 << 28},
                                        {"heads", 1 << 20}}),
                &path);
  EXPECT_EQ(path, "$.vocab");
  EXPECT_NE(msg.find("training-state bytes"), std::string::npos) << msg;
}

TEST(ModelDescriptionBadInput, MaxBatchTokensAboveInt32) {
  expectBad("max-batch-tokens-above-int32", "$.max_batch_tokens",
            "4611686018427387904: must be at most 2147483647 (token ids, "
            "positions and cu_seqlens are int32)");
}

TEST(ModelDescriptionBadInput, MaxSeqLenAboveMaxBatchTokens) {
  expectBad("max-seq-len-above-max-batch-tokens", "$.max_seq_len",
            "512: must not exceed max_batch_tokens (256)");
  EXPECT_EQ(errorOf(patched(tinyVit(), {{"max_batch_tokens", 16}})),
            "t.json: $.max_batch_tokens: 16: must be at least max_seq_len (17 "
            "= num_patches + 1, one image)");
}

// recompute_attention says what activation checkpointing keeps: refused
// without it, and with sequence parallelism (whose attention exchanges
// keys and values between ranks); written back only when set.
TEST(ModelDescriptionTest, RecomputeAttentionNeedsCheckpointingAndOneRank) {
  EXPECT_FALSE(parse(tinyDecoder()).recompute_attention);
  ls2c::ModelDescription d = parse(patched(
      tinyDecoder(), {{"activation_checkpointing", true}, {"recompute_attention", true}}));
  EXPECT_TRUE(d.recompute_attention);
  EXPECT_TRUE(parse(ls2c::toJson(d)).recompute_attention);
  EXPECT_FALSE(ls2c::toJson(parse(tinyDecoder())).contains("recompute_attention"));
  EXPECT_EQ(errorOf(patched(tinyDecoder(), {{"recompute_attention", true}})),
            "t.json: $.recompute_attention: true: needs \"activation_checkpointing\": true "
            "(without checkpointing every attention result is kept anyway)");
  EXPECT_EQ(errorOf(patched(tinyDecoder(), {{"activation_checkpointing", true},
                                            {"recompute_attention", true},
                                            {"max_seq_len", 256},
                                            {"max_batch_tokens", 128},
                                            {"sequence_parallel_size", 2}})),
            "t.json: $.recompute_attention: true: is not supported with "
            "sequence_parallel_size > 1");
  EXPECT_EQ(errorOf(patched(tinyDecoder(), {{"recompute_attention", "yes"}})),
            "t.json: $.recompute_attention: \"yes\": must be a boolean (true or false)");
}

TEST(ModelDescriptionTest, SequenceParallelSizeBoundsOneRanksTokens) {
  // 1 by default; a decoder split over P ranks may hold max_seq_len up to
  // max_batch_tokens x P (the 1.3B-shaped GPT of issue 10: 262,144 tokens
  // over 2 ranks of 131,072).
  EXPECT_EQ(parse(tinyDecoder()).sequence_parallel_size, 1);
  ls2c::ModelDescription d = parse(patched(
      tinyDecoder(),
      {{"max_seq_len", 262144}, {"max_batch_tokens", 131072}, {"sequence_parallel_size", 2}}));
  EXPECT_EQ(d.sequence_parallel_size, 2);
  EXPECT_EQ(d.max_seq_len, 262144);
  EXPECT_EQ(parse(ls2c::toJson(d)).sequence_parallel_size, 2);
  EXPECT_EQ(errorOf(patched(tinyDecoder(), {{"max_seq_len", 262145},
                                            {"max_batch_tokens", 131072},
                                            {"sequence_parallel_size", 2}})),
            "t.json: $.max_seq_len: 262145: a rank's share, 2 x ceil(max_seq_len / "
            "(2 x sequence_parallel_size 2)) = 131074 tokens, must not exceed "
            "max_batch_tokens (131072)");
  // Zigzag's two chunks of ceil(510 / 4) = 128 tokens exceed an odd bound.
  EXPECT_EQ(errorOf(patched(tinyDecoder(), {{"max_seq_len", 510},
                                            {"max_batch_tokens", 255},
                                            {"sequence_parallel_size", 2}})),
            "t.json: $.max_seq_len: 510: a rank's share, 2 x ceil(max_seq_len / "
            "(2 x sequence_parallel_size 2)) = 256 tokens, must not exceed "
            "max_batch_tokens (255)");
  EXPECT_EQ(parse(patched(tinyDecoder(), {{"max_seq_len", 508},
                                          {"max_batch_tokens", 255},
                                          {"sequence_parallel_size", 2}}))
                .max_seq_len,
            508);
  EXPECT_EQ(errorOf(patched(tinyDecoder(), {{"sequence_parallel_size", 0}})),
            "t.json: $.sequence_parallel_size: 0: must be a positive integer");
  EXPECT_EQ(errorOf(patched(tinyDecoder(), {{"sequence_parallel_size", 4097}})),
            "t.json: $.sequence_parallel_size: 4097: must be at most 4096");
  EXPECT_EQ(errorOf(patched(tinyDecoder(), {{"max_seq_len", 3000000000LL},
                                            {"max_batch_tokens", 1000000000},
                                            {"sequence_parallel_size", 4}})),
            "t.json: $.max_seq_len: 3000000000: must be at most 2147483647 "
            "(positions are 32-bit integers)");
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"sequence_parallel_size", 2}})),
            "t.json: $.sequence_parallel_size: 2: does not apply to architecture "
            "'encoder'");
  // 1 is what every architecture has.
  EXPECT_EQ(parse(patched(tinyVit(), {{"sequence_parallel_size", 1}})).sequence_parallel_size,
            1);
}

TEST(ModelDescriptionTest, MaxPredictionsBoundsAnEncodersLabels) {
  // Absent by default (the head over every token), and not written out then.
  EXPECT_EQ(parse(tinyEncoder()).max_predictions, 0);
  EXPECT_FALSE(ls2c::toJson(parse(tinyEncoder())).contains("max_predictions"));
  ls2c::ModelDescription d = parse(patched(tinyEncoder(), {{"max_predictions", 48}}));
  EXPECT_EQ(d.max_predictions, 48);
  EXPECT_EQ(parse(ls2c::toJson(d)).max_predictions, 48);
  // Up to every token of a batch.
  EXPECT_EQ(parse(patched(tinyEncoder(), {{"max_predictions", 256}})).max_predictions, 256);
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"max_predictions", 257}})),
            "t.json: $.max_predictions: 257: must not exceed max_batch_tokens (256): "
            "a batch has at most that many labelled tokens");
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"max_predictions", 0}})),
            "t.json: $.max_predictions: 0: must be a positive integer");
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"max_predictions", -3}})),
            "t.json: $.max_predictions: -3: must be a positive integer");
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"max_predictions", 1.5}})),
            "t.json: $.max_predictions: 1.5: must be an integer");
  EXPECT_EQ(errorOf(patched(tinyDecoder(), {{"max_predictions", 16}})),
            "t.json: $.max_predictions: 16: does not apply to architecture "
            "'decoder'");
  EXPECT_EQ(errorOf(patched(tinyVit(), {{"max_predictions", 1}})),
            "t.json: $.max_predictions: 1: does not apply to architecture 'vit'");
}

// Ids and labels are i32: a table has at most 2^31 rows.
TEST(ModelDescriptionBadInput, TableAbove2To31Rows) {
  const std::string rule = ": must be at most 2147483648 (token ids and labels are int32)";
  EXPECT_EQ(errorOf(patched(tinyDecoder(), {{"vocab", (int64_t(1) << 31) + 1}})),
            "t.json: $.vocab: 2147483649" + rule);
  EXPECT_EQ(errorOf(patched(tinyEncoderDecoder(), {{"src_vocab", int64_t(1) << 32}})),
            "t.json: $.src_vocab: 4294967296" + rule);
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"type_vocab_size", int64_t(1) << 40}})),
            "t.json: $.type_vocab_size: 1099511627776" + rule);
  EXPECT_EQ(errorOf(patched(tinyVit(), {{"num_classes", (int64_t(1) << 31) + 1}})),
            "t.json: $.num_classes: 2147483649" + rule);
  EXPECT_EQ(parse(patched(tinyDecoder(), {{"vocab", int64_t(1) << 31}})).vocab,
            int64_t(1) << 31);
}

// The planner sizes activations at max_batch_tokens rows: each in float64
// must have an int64 byte count; the larger of the two fields is named.
TEST(ModelDescriptionBadInput, ActivationBytesOverflow) {
  EXPECT_EQ(errorOf(patched(tinyDecoder(), {{"vocab", int64_t(1) << 30},
                                            {"max_batch_tokens", 2147483647}})),
            "t.json: $.max_batch_tokens: 2147483647: a [max_batch_tokens, "
            "vocab] activation (2147483647 x 1073741824 elements) in float64 "
            "overflows 64-bit byte counts; lower max_batch_tokens or vocab");
  std::string path;
  std::string msg = errorOf(patched(tinyDecoder(), {{"ffn", int64_t(1) << 33},
                                                    {"max_batch_tokens", 2147483647}}),
                            &path);
  EXPECT_EQ(path, "$.ffn");
  EXPECT_NE(msg.find("[max_batch_tokens, ffn] activation (2147483647 x 8589934592"),
            std::string::npos)
      << msg;
  // A ViT's class logits have a row per image: at 2 tokens an image (one
  // patch and the class token), 2^31 classes overflow at 2^30 - 1 images
  // and fit at 2^29 - 1.
  auto vit = [](int64_t images) {
    return patched(tinyVit(), {{"image_size", 7},
                               {"num_classes", int64_t(1) << 31},
                               {"max_batch_tokens", 2 * images}});
  };
  EXPECT_EQ(errorOf(vit((int64_t(1) << 30) - 1)),
            "t.json: $.num_classes: 2147483648: a [images (max_batch_tokens / "
            "(num_patches + 1)), num_classes] activation (1073741823 x 2147483648 "
            "elements) in float64 overflows 64-bit byte counts; lower "
            "max_batch_tokens or num_classes");
  EXPECT_EQ(errorOf(vit((int64_t(1) << 29) - 1)), "");
  // A ViT's patches: [max_batch_tokens, channels x patch_size^2].
  EXPECT_EQ(errorOf(patched(tinyVit(), {{"image_size", 2},
                                        {"patch_size", 1},
                                        {"channels", int64_t(1) << 36},
                                        {"max_batch_tokens", 1073741820}})),
            "t.json: $.channels: 68719476736: a [max_batch_tokens, channels x patch_size^2] "
            "activation (1073741820 x 68719476736 elements) in float64 overflows 64-bit byte "
            "counts; lower max_batch_tokens or channels");
  // The source vocabulary sizes an embedding table, not an activation.
  EXPECT_EQ(errorOf(patched(tinyEncoderDecoder(), {{"src_vocab", int64_t(1) << 30},
                                                   {"max_batch_tokens", int64_t(1) << 30}})),
            "");
  // 2^27 rows of 2^27 float64 values (2^57 bytes) fit.
  EXPECT_EQ(errorOf(patched(tinyDecoder(), {{"vocab", int64_t(1) << 27},
                                            {"max_batch_tokens", int64_t(1) << 27},
                                            {"max_seq_len", 64}})),
            "");
}

TEST(ModelDescriptionBadInput, VocabBelow2) {
  expectBad("vocab-below-2", "$.vocab", "1: must be at least 2");
  EXPECT_EQ(errorOf(patched(tinyEncoderDecoder(), {{"src_vocab", 1}})),
            "t.json: $.src_vocab: 1: must be at least 2");
  EXPECT_EQ(errorOf(patched(tinyVit(), {{"num_classes", 1}})),
            "t.json: $.num_classes: 1: must be at least 2");
}

TEST(ModelDescriptionBadInput, HiddenDropoutOutOfRange) {
  expectBad("hidden-dropout-out-of-range", "$.hidden_dropout",
            "1.0: must be in [0, 1)");
}

TEST(ModelDescriptionBadInput, AttentionDropoutOutOfRange) {
  expectBad("attention-dropout-out-of-range", "$.attention_dropout",
            "-0.1: must be in [0, 1)");
}

TEST(ModelDescriptionBadInput, ActivationDropoutOutOfRange) {
  expectBad("activation-dropout-out-of-range", "$.activation_dropout",
            "1.5: must be in [0, 1)");
}

TEST(ModelDescriptionBadInput, UnknownArchitecture) {
  expectBad("unknown-architecture", "$.architecture",
            "\"gpt\": unknown architecture (allowed: \"encoder\", "
            "\"decoder\", \"encoder_decoder\", \"vit\", \"llama\")");
}

TEST(ModelDescriptionBadInput, UnknownEnumValue) {
  expectBad("unknown-enum-value", "$.dtype",
            "\"fp8\": unknown dtype (allowed: \"fp32\", \"fp16\", \"bf16\")");
}

TEST(ModelDescriptionBadInput, PathIsDirectory) {
  const std::string dir = kSourceDir + "/test/model/bad";
  try {
    ls2c::loadModelDescription(dir);
    ADD_FAILURE() << "accepted a directory";
  } catch (const DescriptionError &e) {
    EXPECT_EQ(e.path(), "");
    EXPECT_EQ(std::string(e.what()), dir + ": is a directory");
  }
}

TEST(ModelDescriptionBadInput, FileNotFound) {
  const std::string file = kSourceDir + "/test/model/bad/no-such-file.json";
  try {
    ls2c::loadModelDescription(file);
    ADD_FAILURE() << "accepted a missing file";
  } catch (const DescriptionError &e) {
    EXPECT_EQ(e.path(), "");
    EXPECT_EQ(std::string(e.what()),
              file + ": cannot open: No such file or directory");
  }
}

TEST(ModelDescriptionBadInput, FieldNotApplicable) {
  expectBad("field-not-applicable", "$.decoder_layers",
            "2: does not apply to architecture 'encoder'");
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"image_size", 224}})),
            "t.json: $.image_size: 224: does not apply to architecture "
            "'encoder'");
  EXPECT_EQ(errorOf(patched(tinyDecoder(), {{"share_embeddings", true}})),
            "t.json: $.share_embeddings: true: does not apply to architecture "
            "'decoder'");
  EXPECT_EQ(errorOf(patched(tinyDecoder(), {{"type_vocab_size", 2}})),
            "t.json: $.type_vocab_size: 2: does not apply to architecture "
            "'decoder'");
  EXPECT_EQ(errorOf(patched(tinyVit(), {{"vocab", 100}})),
            "t.json: $.vocab: 100: does not apply to architecture 'vit'");
  EXPECT_EQ(errorOf(patched(tinyVit(), {{"tie_embeddings", true}})),
            "t.json: $.tie_embeddings: true: does not apply to architecture "
            "'vit'");
}

TEST(ModelDescriptionBadInput, LayerNormEpsNotPositive) {
  expectBad("layer-norm-eps-not-positive", "$.layer_norm_eps",
            "0: must be positive");
}

TEST(ModelDescriptionBadInput, NonFiniteNumber) {
  expectBad("non-finite-number", "",
            "not valid JSON: number overflow parsing '1e999' (numbers must be "
            "finite)");
  // JSON has no NaN/Infinity literals; nlohmann rejects them as syntax.
  EXPECT_THROW(ls2c::parseModelDescription(R"({"lr": NaN})", "n.json"),
               DescriptionError);
}

TEST(ModelDescriptionBadInput, LabelSmoothingOutOfRange) {
  expectBad("label-smoothing-out-of-range", "$.label_smoothing",
            "1.0: must be in [0, 1)");
}

TEST(ModelDescriptionBadInput, LrNotPositive) {
  expectBad("lr-not-positive", "$.optimizer.lr", "0: must be positive");
}

TEST(ModelDescriptionBadInput, BetaOutOfRange) {
  expectBad("beta-out-of-range", "$.optimizer.betas[1]",
            "1.0: must be in [0, 1)");
}

TEST(ModelDescriptionBadInput, EpsNotPositive) {
  expectBad("eps-not-positive", "$.optimizer.eps", "-1e-08: must be positive");
}

TEST(ModelDescriptionBadInput, WeightDecayNegative) {
  expectBad("weight-decay-negative", "$.optimizer.weight_decay",
            "-0.01: must be non-negative");
}

TEST(ModelDescriptionBadInput, ClipNormNegative) {
  expectBad("clip-norm-negative", "$.optimizer.clip_norm",
            "-1.0: must be non-negative");
}

TEST(ModelDescriptionBadInput, BucketCapZero) {
  expectBad("bucket-cap-zero", "$.optimizer.bucket_cap_mb",
            "0: must be in [1e-4, 1048576] (MiB)");
}

TEST(ModelDescriptionBadInput, PaddingIdxOutOfRange) {
  expectBad("padding-idx-out-of-range", "$.padding_idx",
            "100: must be -1 (none) or in [0, 100) (the vocabulary)");
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"padding_idx", -2}})),
            "t.json: $.padding_idx: -2: must be -1 (none) or in [0, 100) (the "
            "vocabulary)");
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"padding_idx", -1}})), "");
  EXPECT_EQ(errorOf(patched(tinyEncoderDecoder(),
                            {{"src_vocab", 50}, {"padding_idx", 60}})),
            "t.json: $.padding_idx: 60: must be -1 (none) or in [0, 50) (the "
            "smaller vocabulary)");
}

TEST(ModelDescriptionBadInput, ImageSizeNotDivisibleByPatch) {
  expectBad("image-size-not-divisible-by-patch", "$.image_size",
            "30: must be divisible by patch_size (7)");
}

TEST(ModelDescriptionBadInput, VitMaxSeqLenMismatch) {
  expectBad("vit-max-seq-len-mismatch", "$.max_seq_len",
            "16: must equal num_patches + 1 = (28 / 7)^2 + 1 = 17");
}

TEST(ModelDescriptionBadInput, ShareEmbeddingsVocabMismatch) {
  expectBad("share-embeddings-vocab-mismatch", "$.share_embeddings",
            "true: needs src_vocab (120) == vocab (100)");
}

TEST(ModelDescriptionBadInput, WarmupStepsNegative) {
  expectBad("warmup-steps-negative", "$.optimizer.schedule.warmup_steps",
            "-1: must be non-negative");
}

TEST(ModelDescriptionBadInput, TotalStepsBelowWarmup) {
  expectBad("total-steps-below-warmup", "$.optimizer.schedule.total_steps",
            "50: must be at least warmup_steps (100)");
}

TEST(ModelDescriptionBadInput, TotalStepsRequired) {
  expectBad("total-steps-required", "$.optimizer.schedule.total_steps",
            "missing required field for schedule 'cosine'");
  EXPECT_EQ(errorOf(patched(
                tinyEncoder(),
                {{"optimizer",
                  {{"schedule", {{"type", "linear"}, {"total_steps", 0}}}}}})),
            "t.json: $.optimizer.schedule.total_steps: 0: must be positive for "
            "schedule 'linear'");
}

TEST(ModelDescriptionBadInput, InverseSqrtNeedsWarmup) {
  expectBad("inverse-sqrt-needs-warmup", "$.optimizer.schedule.warmup_steps",
            "0: must be positive for schedule 'inverse_sqrt'");
}

TEST(ModelDescriptionBadInput, MinLrRatioOutOfRange) {
  expectBad("min-lr-ratio-out-of-range", "$.optimizer.schedule.min_lr_ratio",
            "1.5: must be in [0, 1]");
  EXPECT_EQ(errorOf(patched(
                tinyEncoder(),
                {{"optimizer", {{"schedule", {{"min_lr_ratio", 0.1}}}}}})),
            "t.json: $.optimizer.schedule.min_lr_ratio: 0.1: does not apply to "
            "schedule 'constant'");
}

TEST(ModelDescriptionBadInput, TooManyLayers) {
  expectBad("too-many-layers", "$.encoder_layers",
            "5000: must be at most 1024");
}

TEST(ModelDescriptionBadInput, InvalidName) {
  expectBad("invalid-name", "$.name",
            "\"my model\": must be 1 to 128 characters from [A-Za-z0-9._-]");
}

TEST(ModelDescriptionBadInput, OptimizerNotObject) {
  expectBad("optimizer-not-object", "$.optimizer",
            "\"adamw\": must be a JSON object");
}

//===----------------------------------------------------------------------===//
// Hostile input: structure, size, file kinds, bytes, f32 rounding, names
//===----------------------------------------------------------------------===//

TEST(ModelDescriptionBadInput, NestingTooDeep) {
  // The 33rd level opens at offset 217 (the 31st '[' of "betas").
  expectBad("nesting-too-deep", "",
            "arrays and objects nested deeper than 32 levels at offset 217 (a "
            "description needs 3)");
  // Rejected by a scan before parsing: deep enough to overflow the stack of
  // a recursive parser or printer, or to need gigabytes for per-level paths.
  for (size_t depth : {60000u, 100000u}) {
    std::string text =
        "{\"x\": " + std::string(depth, '[') + std::string(depth, ']') + "}";
    EXPECT_EQ(textError(text),
              "t.json: arrays and objects nested deeper than 32 levels at "
              "offset 37 (a description needs 3)");
    // Unbalanced and unterminated: still the depth that is reported.
    EXPECT_EQ(textError(std::string(depth, '{')),
              "t.json: arrays and objects nested deeper than 32 levels at "
              "offset 32 (a description needs 3)");
  }
  // Exactly kMaxJsonDepth levels parse (and the unknown key is reported).
  const int inner = ls2c::kMaxJsonDepth - 1;
  EXPECT_EQ(textError(withMember("\"x\": " + std::string(inner, '[') +
                                 std::string(inner, ']'))),
            "t.json: $.x: unknown key");
  // Brackets inside strings, escaped quotes included, do not nest.
  EXPECT_EQ(
      textError(withMember("\"x\": \"\\\"" + std::string(100, '[') + "\"")),
      "t.json: $.x: unknown key");
}

TEST(ModelDescriptionBadInput, ManyValuesLoadInLinearTime) {
  // nlohmann's parser callback took quadratic time on arrays of objects
  // (2^18 objects, 786 kB: 18 s). Files of many small values (~5 MB here) now
  // stop at kMaxJsonValues, after ~200 kB: milliseconds in a release build,
  // a fraction of a second each under ASan at -O0.
  const std::string tooMany = "t.json: holds more than 65536 JSON values (a "
                              "description needs fewer than 100)";
  // {"x": [e,e,...,e]} with n elements (built by doubling: cheap at -O0).
  auto array = [](size_t n, const std::string &element) {
    const std::string one = "," + element;
    std::string items = one;
    while (items.size() < n * one.size())
      items += items;
    items.resize(n * one.size()); // whole copies of `one`: n of them
    return "{\"x\": [" + items.substr(1) + "]}";
  };
  std::string objects = array(1700000, "{}");
  ASSERT_GT(objects.size(), 5000000u);
  EXPECT_EQ(textError(objects), tooMany);
  EXPECT_EQ(textError(array(100000, "{\"a\":[{}]}")), tooMany);
  EXPECT_EQ(textError(array(2500000, "1")), tooMany);
  std::string keys = tinyEncoder().dump();
  keys.pop_back();
  for (size_t i = 0; i < 100000; ++i)
    keys += fmt::format(",\"k{}\":0", i);
  keys += "}";
  ASSERT_GT(keys.size(), 1000000u);
  EXPECT_EQ(textError(keys), tooMany);
  // Up to the limit, the DOM is built (in linear time) and checked: an
  // array of 65534 objects is 65536 values with the root and the array.
  EXPECT_EQ(textError(array(65534, "{}")), "t.json: $.x: unknown key");
  EXPECT_EQ(textError(array(65535, "{}")), tooMany);
}

TEST(ModelDescriptionBadInput, DuplicateKeyPathInsideArrays) {
  std::string path;
  textError(R"({"x": [{}, {"a": [0, {"b": 1, "b": 2}]}]})", "t.json", &path);
  EXPECT_EQ(path, "$.x[1].a[1].b");
  textError(R"({"x": {"y": 1, "z": [], "y": 2}})", "t.json", &path);
  EXPECT_EQ(path, "$.x.y");
}

namespace {
// A fresh, empty directory under the system temp directory.
std::filesystem::path scratchDir(const std::string &test) {
  auto dir = std::filesystem::temp_directory_path() /
             fmt::format("ls2c-{}-{}", test, ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string loadError(const std::string &file) {
  try {
    ls2c::loadModelDescription(file);
  } catch (const DescriptionError &e) {
    EXPECT_EQ(e.path(), "");
    return e.what();
  }
  return "";
}
} // namespace

TEST(ModelDescriptionBadInput, NotARegularFile) {
  const auto dir = scratchDir("not-regular");
  // A FIFO without a writer: opening it for reading would block forever.
  const std::string fifo = (dir / "model.json").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  // Should the loader block after all, a writer that comes and goes after
  // 5 s releases it, and the test fails instead of hanging.
  std::atomic<bool> done{false};
  std::thread rescue([&] {
    for (int i = 0; i < 100 && !done; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    while (!done) {
      int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0)
        ::close(fd);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  const auto start = std::chrono::steady_clock::now();
  std::string fifoError = loadError(fifo);
  done = true;
  rescue.join();
  EXPECT_EQ(fifoError, fifo + ": is not a regular file");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));

  // A character device and a socket.
  EXPECT_EQ(loadError("/dev/null"), "/dev/null: is not a regular file");
  const std::string sock = (dir / "s.json").string();
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock.size(), sizeof addr.sun_path);
  std::strcpy(addr.sun_path, sock.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr), 0)
      << std::strerror(errno);
  EXPECT_EQ(loadError(sock), sock + ": is not a regular file");
  ::close(fd);
  // A symlink to a regular file is followed; one to a FIFO is not opened.
  const std::string link = (dir / "link.json").string();
  std::filesystem::create_symlink(fifo, link);
  EXPECT_EQ(loadError(link), link + ": is not a regular file");
  std::filesystem::remove_all(dir);
}

TEST(ModelDescriptionBadInput, NulByte) {
  // nlohmann ends a document at NUL: without this rule, everything after it
  // would be ignored.
  expectBad("nul-byte", "", "contains a NUL byte at offset 163");
  EXPECT_EQ(textError(std::string("{\"a\0b\": 1}", 11)),
            "t.json: contains a NUL byte at offset 3");
  EXPECT_EQ(textError(std::string("\0", 1)),
            "t.json: contains a NUL byte at offset 0");
  // An escaped NUL is a character like any other: the key is unknown.
  EXPECT_EQ(textError(withMember(R"("a\u0000b": 1)")),
            "t.json: $[\"a\\u0000b\"]: unknown key");
}

TEST(ModelDescriptionBadInput, TrailingGarbage) {
  expectBad("trailing-garbage", "",
            "not valid JSON (byte 164): parse error at line 11, column 1: "
            "syntax error while parsing value - unexpected '}'; expected end "
            "of input");
  std::string msg = textError(tinyEncoder().dump() + " {}");
  EXPECT_NE(msg.find("expected end of input"), std::string::npos) << msg;
  msg = textError(tinyEncoder().dump() + " x");
  EXPECT_NE(msg.find("not valid JSON"), std::string::npos) << msg;
  // Trailing whitespace is fine.
  EXPECT_EQ(textError(tinyEncoder().dump() + " \n\t\r\n"), "");
}

TEST(ModelDescriptionBadInput, LayerNormEpsOverflowsF32) {
  expectBad("layer-norm-eps-overflows-f32", "$.layer_norm_eps",
            "1e+39: overflows 32-bit float (must be at most 3.4028235e+38)");
}

TEST(ModelDescriptionBadInput, LayerNormEpsUnderflowsF32) {
  expectBad("layer-norm-eps-underflows-f32", "$.layer_norm_eps",
            "1e-46: rounds to zero or a subnormal in 32-bit float (must be at "
            "least 1.1754944e-38)");
  // f32 subnormals (flushed to zero on GPUs) are rejected too.
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"layer_norm_eps", 1e-40}})),
            "t.json: $.layer_norm_eps: 1e-40: rounds to zero or a subnormal in "
            "32-bit float (must be at least 1.1754944e-38)");
  // The extremes of the normal f32 range are accepted.
  for (double eps : {double(FLT_MIN), double(FLT_MAX), 1e-12})
    EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"layer_norm_eps", eps}})), "")
        << eps;
  // FLT_MAX plus less than half an ulp rounds to FLT_MAX; half an ulp more
  // rounds to infinity.
  EXPECT_EQ(errorOf(patched(tinyEncoder(),
                            {{"layer_norm_eps", 0x1.fffffefffffffp127}})),
            "");
  EXPECT_NE(
      errorOf(patched(tinyEncoder(), {{"layer_norm_eps", 0x1.ffffffp127}})),
      "");
}

TEST(ModelDescriptionBadInput, DropoutRoundsToOneInF32) {
  expectBad("dropout-rounds-to-one-in-f32", "$.hidden_dropout",
            "0.99999999: rounds to 1 in 32-bit float (must be in [0, 1))");
  for (const char *key : {"hidden_dropout", "attention_dropout",
                          "activation_dropout", "label_smoothing"}) {
    EXPECT_EQ(errorOf(patched(tinyEncoder(), {{key, 0.99999999}})),
              fmt::format("t.json: $.{}: 0.99999999: rounds to 1 in 32-bit "
                          "float (must be in [0, 1))",
                          key));
    // The largest f32 below 1 is fine.
    EXPECT_EQ(errorOf(patched(tinyEncoder(), {{key, 0.9999999}})), "") << key;
  }
}

TEST(ModelDescriptionBadInput, BetaRoundsToOneInF32) {
  expectBad("beta-rounds-to-one-in-f32", "$.optimizer.betas[1]",
            "0.99999999: rounds to 1 in 32-bit float (must be in [0, 1))");
  EXPECT_EQ(errorOf(patched(tinyEncoder(),
                            {{"optimizer", {{"betas", {0.999999999, 0.9}}}}})),
            "t.json: $.optimizer.betas[0]: 0.999999999: rounds to 1 in 32-bit "
            "float (must be in [0, 1))");
}

TEST(ModelDescriptionBadInput, OptimizerValuesNotF32) {
  auto opt = [](const char *key, double v) {
    return errorOf(patched(tinyEncoder(), {{"optimizer", {{key, v}}}}));
  };
  const std::string over =
      ": 1e+39: overflows 32-bit float (must be at most 3.4028235e+38)";
  const std::string under = ": rounds to zero or a subnormal in 32-bit "
                            "float (must be at least 1.1754944e-38)";
  for (const char *key : {"lr", "eps", "weight_decay", "clip_norm"})
    EXPECT_EQ(opt(key, 1e39),
              fmt::format("t.json: $.optimizer.{}{}", key, over));
  EXPECT_EQ(opt("lr", 1e-46), "t.json: $.optimizer.lr: 1e-46" + under);
  EXPECT_EQ(opt("eps", 1e-40), "t.json: $.optimizer.eps: 1e-40" + under);
  // Decay and clipping may round to 0: that only turns them off.
  EXPECT_EQ(opt("weight_decay", 1e-50), "");
  EXPECT_EQ(opt("clip_norm", 1e-50), "");
  EXPECT_EQ(opt("lr", 3e38), "");
}

TEST(ModelDescriptionBadInput, LongUnknownKey) {
  // A 2000-byte key: the path is cut to 64 bytes.
  expectBad("long-unknown-key", "$." + std::string(59, 'a') + "...",
            "unknown key");
  // A megabyte-long key costs no more than reading it, and the message
  // stays short.
  std::string msg =
      textError(withMember("\"hidden" + std::string(1 << 20, 'x') + "\": 1"));
  EXPECT_EQ(msg, "t.json: $.hidden" + std::string(53, 'x') +
                     "...: unknown key (did you mean \"hidden\"?)");
  expectShortPrintableLine(msg);
}

TEST(ModelDescriptionBadInput, InvalidUtf8) {
  // nlohmann quotes the bytes it read; broken UTF-8 among them is escaped.
  expectBad("invalid-utf8", "",
            "not valid JSON (byte 177): parse error at line 10, column 15: "
            "syntax error while parsing value - invalid string: ill-formed "
            "UTF-8 byte; last read: '\"caf\\xFF'");
}

TEST(ModelDescriptionBadInput, LongUtf8Value) {
  // The value is cut at 64 bytes on a character boundary: "x + 29 'é' (61
  // bytes) and "...".
  std::string e29;
  for (int i = 0; i < 29; ++i)
    e29 += "\xC3\xA9";
  expectBad("long-utf8-value", "$.norm",
            "\"x" + e29 + "...: unknown norm (allowed: \"post\", \"pre\")");
}

TEST(ModelDescriptionBadInput, MessagesStayShortAndPrintable) {
  const std::string mb(1 << 18, 'v');
  std::vector<std::pair<std::string, std::string>> cases = {
      // {source, text}
      {"t.json", withMember("\"name\": \"" + mb + "\"")},
      {"t.json", withMember("\"a\\u0001\\n\\u0085\\u2028" + mb + "\": 1")},
      {"t.json", withMember("\"optimizer\": {\"" + mb + "\": 1}")},
      {"t.json", withMember("\"norm\": \"\\u0085\\u2028\\u2029\\u007f\"")},
      // A 100 kB token before a raw control character: nlohmann quotes it.
      {"t.json", "{\"a\": \"" + std::string(100000, 'q') + "\x01\"}"},
      {"t.json", "{\"a\": \"" + std::string(100000, 'q') + "\xC3\"}"},
      {"t.json", "{\"a\": " + std::string(100000, '7') + "e999}"},
      // Sources with control characters, broken UTF-8, or just very long.
      {"a\nb\r\x1b[31m.json", "{"},
      {"caf\xC3.json\xE2\x80\xA8", withMember("\"x\": 1")},
      {std::string(4096, 'd') + "/m.json",
       withMember("\"" + std::string(1000, 'k') + "\": 1")},
      {std::string(4096, 'd') + "/m.json",
       withMember("\"norm\": \"" + mb + "\"")},
      {std::string(1000, '\xE9'), withMember("\"x\": 1")},
  };
  for (const auto &[source, text] : cases) {
    std::string msg = textError(text, source);
    SCOPED_TRACE(msg.substr(0, 200));
    ASSERT_NE(msg, "");
    expectShortPrintableLine(msg);
  }
  // The end of a long source is kept.
  std::string msg =
      textError(withMember("\"x\": 1"), std::string(4096, 'd') + "/m.json");
  EXPECT_EQ(msg.substr(0, 3), "...");
  EXPECT_NE(msg.find("d/m.json: $.x: unknown key"), std::string::npos);
  // Control characters in a source are escaped, not dropped.
  EXPECT_EQ(textError("{", "a\nb.json").substr(0, 12), "a\\x0Ab.json:");
}

TEST(ModelDescriptionBadInput, NameDotDot) {
  expectBad("name-dot-dot", "$.name",
            "\"..\": must not start with '.' (names become file names)");
  for (const char *name : {".", ".hidden"})
    EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"name", name}})),
              fmt::format("t.json: $.name: \"{}\": must not start with '.' "
                          "(names become file names)",
                          name));
  const std::string rule = "must be 1 to 128 characters from [A-Za-z0-9._-]";
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"name", ""}})),
            "t.json: $.name: \"\": " + rule);
  EXPECT_EQ(errorOf(patched(tinyEncoder(), {{"name", std::string(129, 'n')}})),
            "t.json: $.name: \"" + std::string(60, 'n') + "...: " + rule);
  for (const std::string &name :
       {std::string(128, 'n'), std::string("a.b"), std::string("x..")})
    EXPECT_EQ(parse(patched(tinyEncoder(), {{"name", name}})).name, name);
}

TEST(ModelDescriptionTest, DefaultNameFollowsNameRules) {
  auto nameFor = [](const std::string &source) {
    return ls2c::parseModelDescription(tinyEncoder().dump(), source).name;
  };
  EXPECT_EQ(nameFor("examples/bert-base.json"), "bert-base");
  EXPECT_EQ(nameFor("dir.v2/m.v1.json"), "m.v1");
  EXPECT_EQ(nameFor("a/" + std::string(200, 'x') + ".json"),
            std::string(128, 'x'));
  EXPECT_EQ(nameFor(".json"), "model");
  EXPECT_EQ(nameFor("..json"), "model");
  EXPECT_EQ(nameFor("d/...json"), "model");
  EXPECT_EQ(nameFor(".hidden.json"), "hidden");
  EXPECT_EQ(nameFor("my model (2).json"), "my_model__2_");
  EXPECT_EQ(nameFor("mod\xC3\xA8le.json"), "mod_le"); // one '_' per character
  EXPECT_EQ(nameFor("dir/"), "model");
  EXPECT_EQ(nameFor(""), "model");
  EXPECT_EQ(nameFor("model.JSON"), "model.JSON");
  // Every derived name passes the rule it would face in "name".
  for (const std::string &source :
       {std::string(300, '.') + "x.json", std::string("\xFF\xFE.json"),
        std::string(".") + std::string(140, '.')}) {
    ModelDescription d =
        ls2c::parseModelDescription(tinyEncoder().dump(), source);
    EXPECT_EQ(errorOf(ls2c::toJson(d)), "") << d.name;
  }
}

// Every fixture has a test above, and every fixture is rejected with one line.
TEST(ModelDescriptionBadInput, FixturesMatchTests) {
  const std::set<std::string> tested = {"activation-dropout-out-of-range",
                                        "attention-dropout-out-of-range",
                                        "beta-out-of-range",
                                        "beta-rounds-to-one-in-f32",
                                        "betas-wrong-length",
                                        "bool-for-number",
                                        "byte-count-overflow",
                                        "dropout-rounds-to-one-in-f32",
                                        "clip-norm-negative", "bucket-cap-zero",
                                        "duplicate-key",
                                        "empty",
                                        "eps-not-positive",
                                        "field-not-applicable",
                                        "float-for-integer",
                                        "head-dim-over-256",
                                        "heads-not-dividing-hidden",
                                        "encoder-max-seq-len-below-3",
                                        "hidden-below-2",
                                        "hidden-dropout-out-of-range",
                                        "hugging-face-key",
                                        "hugging-face-key-heads",
                                        "image-size-not-divisible-by-patch",
                                        "integer-out-of-range",
                                        "invalid-utf8",
                                        "invalid-name",
                                        "inverse-sqrt-needs-warmup",
                                        "kv-heads-not-dividing-heads",
                                        "label-smoothing-out-of-range",
                                        "layer-norm-eps-not-positive",
                                        "layer-norm-eps-overflows-f32",
                                        "layer-norm-eps-underflows-f32",
                                        "long-unknown-key",
                                        "long-utf8-value",
                                        "lr-not-positive",
                                        "max-seq-len-above-max-batch-tokens",
                                        "max-batch-tokens-above-int32",
                                        "min-lr-ratio-out-of-range",
                                        "missing-required-field",
                                        "name-dot-dot",
                                        "nesting-too-deep",
                                        "non-finite-number",
                                        "non-positive-size",
                                        "not-json",
                                        "nul-byte",
                                        "optimizer-not-object",
                                        "padding-idx-out-of-range",
                                        "share-embeddings-vocab-mismatch",
                                        "string-for-integer",
                                        "too-many-layers",
                                        "top-level-not-object",
                                        "total-steps-below-warmup",
                                        "total-steps-required",
                                        "trailing-garbage",
                                        "unknown-architecture",
                                        "unknown-enum-value",
                                        "unknown-key",
                                        "unknown-key-optimizer",
                                        "unknown-key-schedule",
                                        "vit-max-seq-len-mismatch",
                                        "vocab-below-2",
                                        "warmup-steps-negative",
                                        "weight-decay-negative"};
  std::set<std::string> present;
  for (const auto &entry :
       std::filesystem::directory_iterator(kSourceDir + "/test/model/bad")) {
    present.insert(entry.path().stem().string());
    try {
      ls2c::loadModelDescription(entry.path().string());
      ADD_FAILURE() << entry.path() << " was accepted";
    } catch (const DescriptionError &e) {
      expectShortPrintableLine(e.what());
    }
  }
  EXPECT_EQ(present, tested);
}
