//===- TrainingDataTest.cpp - what `ls2c train` feeds each architecture ---===//
//
// TrainingData.h on small files written here: encoder segments ([CLS] s
// [SEP], ids + 4, masks new each epoch, fixed for validation), translation
// pairs (EOS, START, shifted labels, truncation) and ViT images (pixels in
// [-1, 1], tokens per image); every training example once per epoch, within
// max_batch_tokens; micro-batch i the same after seek(i) as in a run from 0;
// the fingerprint form --resume has always checked; refusals naming files.
//
//===----------------------------------------------------------------------===//
#include "TempDirTestUtil.h"
#include "ls2c/Trainer/TrainingData.h"

#include "ls2c/Data/TokenFile.h"
#include "ls2c/Data/Tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <unistd.h>

namespace {

using namespace ls2c;
using reference::HostTensor;

class TrainingDataTest : public ls2c::testing::TempDirTest {
protected:
  TrainingDataTest() : TempDirTest("training-data") {}
  static void write(const std::string &p, const std::string &bytes) {
    std::ofstream(p, std::ios::binary) << bytes;
  }
  static ModelDescription model(const char *preset) {
    return loadModelDescription(std::string(LS2C_SOURCE_DIR) + "/examples/" + preset);
  }

  /// A token file of vocabulary 10 whose sequences have these lengths; token
  /// j of sequence s is (s + j) % 10.
  std::string tokenFile(const std::string &name, const std::vector<int> &lengths,
                        uint32_t vocab = 10) {
    TokenFileContents c;
    c.vocabSize = vocab;
    c.tokenizerFingerprint = 42;
    for (size_t s = 0; s < lengths.size(); ++s) {
      for (int j = 0; j < lengths[s]; ++j)
        c.tokens.push_back(static_cast<uint32_t>((s + static_cast<size_t>(j)) % 10));
      c.offsets.push_back(c.tokens.size());
    }
    writeTokenFile(path(name), c);
    return path(name);
  }
};

std::vector<int64_t> ints(const InputBatch &b, const char *name) {
  return b.inputs.at(name).ints;
}

/// The sequences of a packed batch: [cu[i], cu[i + 1]) of `values`.
std::vector<std::vector<int64_t>> split(const std::vector<int64_t> &values,
                                        const std::vector<int64_t> &cu) {
  std::vector<std::vector<int64_t>> out;
  for (size_t i = 0; i + 1 < cu.size(); ++i)
    out.emplace_back(values.begin() + cu[i], values.begin() + cu[i + 1]);
  return out;
}

TEST(DataFingerprint, IsTheFormCheckpointsRecord) {
  std::vector<int32_t> ids = {5, 6, 7};
  std::string_view bytes(reinterpret_cast<const char *>(ids.data()), 12);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(fnv1a64(bytes)));
  EXPECT_EQ(dataFingerprint(3, "tokens", {bytes}), std::string("3 tokens, fnv1a64 ") + hex);
  // Parts hash as their concatenation.
  EXPECT_EQ(dataFingerprint(3, "tokens", {bytes.substr(0, 5), bytes.substr(5)}),
            dataFingerprint(3, "tokens", {bytes}));
}

TEST_F(TrainingDataTest, EncoderSegmentsMaskedAnewEachEpoch) {
  ModelDescription d = model("tiny-bert.json");
  d.max_seq_len = 8; // segments of 6 tokens
  d.max_batch_tokens = 24;
  TrainOptions o;
  o.model = "tiny-bert.json";
  o.data = tokenFile("train.tok", {5, 0, 20, 3});
  o.validData = tokenFile("valid.tok", {9});
  std::unique_ptr<TrainingData> data = loadTrainingData(o, d);
  EXPECT_EQ(data->ignoredLabel(), -100);

  // Segments (sequence, start, length): 5 | none | 6 6 6 2 | 3.
  std::multiset<std::vector<int64_t>> expected;
  for (auto [s, start, n] : std::vector<std::array<int, 3>>{
           {0, 0, 5}, {2, 0, 6}, {2, 6, 6}, {2, 12, 6}, {2, 18, 2}, {3, 0, 3}}) {
    std::vector<int64_t> seg = {1};
    for (int j = start; j < start + n; ++j)
      seg.push_back((s + j) % 10 + kNumSpecialIds);
    seg.push_back(2);
    expected.insert(seg);
  }
  data->seek(0);
  std::vector<InputBatch> run;
  std::vector<std::vector<int64_t>> labelsByEpoch(2);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::multiset<std::vector<int64_t>> seen;
    int64_t tokens = 0, epochTokens = 0;
    for (const auto &seg : expected)
      epochTokens += static_cast<int64_t>(seg.size());
    while (tokens < epochTokens) {
      InputBatch b = data->next();
      run.push_back(b);
      std::vector<int64_t> ids = ints(b, "input_ids"), labels = ints(b, "labels"),
                           cu = ints(b, "cu_seqlens");
      ASSERT_LE(cu.back(), 24);
      EXPECT_EQ(b.tokens, cu.back());
      EXPECT_EQ(ints(b, "token_type_ids"), std::vector<int64_t>(ids.size(), 0));
      for (size_t j = 0; j < ids.size(); ++j) {
        if (labels[j] != -100) {
          EXPECT_GE(labels[j], kNumSpecialIds); // specials are never selected
          ids[j] = labels[j];                   // undo the masking
        }
        labelsByEpoch[epoch].push_back(labels[j]);
      }
      for (auto &seq : split(ids, cu)) {
        tokens += static_cast<int64_t>(seq.size());
        seen.insert(seq);
      }
      std::vector<int64_t> positions = ints(b, "position_ids");
      for (auto &seq : split(positions, cu))
        for (size_t j = 0; j < seq.size(); ++j)
          EXPECT_EQ(seq[j], static_cast<int64_t>(j));
    }
    EXPECT_EQ(seen, expected) << "epoch " << epoch << " is not every segment once";
  }
  EXPECT_NE(labelsByEpoch[0], labelsByEpoch[1]) << "masks repeat across epochs";

  // Micro-batch i after seek(i) is the run's.
  for (size_t i : {size_t{0}, size_t{3}, run.size() - 1}) {
    std::unique_ptr<TrainingData> again = loadTrainingData(o, d);
    again->seek(static_cast<int64_t>(i));
    EXPECT_EQ(ints(again->next(), "input_ids"), ints(run[i], "input_ids")) << i;
  }
  // Validation: the same masks at every evaluation, then the end.
  InputBatch v1, v2;
  ASSERT_TRUE(data->validBatch(0, v1));
  ASSERT_TRUE(data->validBatch(0, v2));
  EXPECT_EQ(ints(v1, "input_ids"), ints(v2, "input_ids"));
  EXPECT_EQ(ints(v1, "labels"), ints(v2, "labels"));
  EXPECT_EQ(ints(v1, "cu_seqlens"), (std::vector<int64_t>{0, 5, 13})); // 3 + 6 tokens
  EXPECT_FALSE(data->validBatch(1, v1));
}

TEST_F(TrainingDataTest, EncoderSplitsAndRefuses) {
  ModelDescription d = model("tiny-bert.json");
  TrainOptions o;
  o.model = "tiny-bert.json";
  o.data = tokenFile("ten.tok", {1, 1, 1, 1, 1, 1, 1, 1, 1, 1});
  InputBatch b;
  std::unique_ptr<TrainingData> data = loadTrainingData(o, d);
  ASSERT_TRUE(data->validBatch(0, b)); // the last segment validates
  EXPECT_EQ(ints(b, "cu_seqlens"), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(data->fingerprint().rfind("9 tokens, fnv1a64 ", 0), 0u) << data->fingerprint();

  auto refused = [&](const TrainOptions &bad, const std::string &message) {
    try {
      loadTrainingData(bad, d);
      ADD_FAILURE() << "accepted; expected: " << message;
    } catch (const TrainError &e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  TrainOptions one = o;
  one.data = tokenFile("one.tok", {3});
  refused(one, "one.tok: 1 segments cannot be split 90% / 10%");
  TrainOptions wide = o;
  wide.data = tokenFile("wide.tok", {3}, 97);
  refused(wide, "wide.tok: vocab_size 97 + 4 special ids");
  TrainOptions text = o;
  text.data = path("text.txt");
  write(text.data, "plain text\n");
  refused(text, "text.txt: not a token file; tiny-bert.json (encoder)");
  TrainOptions labels = o;
  labels.labels = "labels.idx";
  refused(labels, "--labels is for vit models; tiny-bert.json's architecture is 'encoder'");
}

TEST_F(TrainingDataTest, TranslationPairs) {
  ModelDescription d = model("tiny-transformer.json");
  d.max_seq_len = 5; // 4 characters + EOS
  d.max_batch_tokens = 12;
  const std::vector<std::string> src = {"ab", "abcdefg", "", "ba", "c"};
  const std::vector<std::string> tgt = {"xy", "y", "xyz", "zz", "yyyyyy"};
  std::string srcText, tgtText;
  for (size_t i = 0; i < src.size(); ++i) {
    srcText += src[i] + "\n";
    tgtText += tgt[i] + "\n";
  }
  TrainOptions o;
  o.model = "tiny-transformer.json";
  o.data = path("train.src");
  o.target = path("train.tgt");
  o.validData = path("valid.src");
  o.validTarget = path("valid.tgt");
  write(o.data, srcText);
  write(o.target, tgtText);
  write(o.validData, "cab\n");
  write(o.validTarget, "zyx\n");
  std::unique_ptr<Tokenizer> chars =
      trainCharTokenizer({"abcdefg", "xyz"}, /*newline=*/false); // ids: a..g 0..6, x 7, y 8, z 9
  o.tokenizer = path("chars.model");
  write(o.tokenizer, chars->modelBytes());
  std::unique_ptr<TrainingData> data = loadTrainingData(o, d);
  EXPECT_EQ(data->ignoredLabel(), 1); // tiny-transformer's padding_idx
  EXPECT_EQ(data->fingerprint().rfind("5 pairs, fnv1a64 ", 0), 0u) << data->fingerprint();

  auto ids = [&](const std::string &text) {
    std::vector<int64_t> out;
    for (char c : text)
      out.push_back((c <= 'g' ? c - 'a' : c - 'x' + 7) + kNumSpecialIds);
    return out;
  };
  // Expected (source, decoder input, labels), truncated to 4 tokens + special.
  std::set<std::vector<std::vector<int64_t>>> expected;
  for (size_t i = 0; i < src.size(); ++i) {
    std::vector<int64_t> s = ids(src[i].substr(0, 4)), t = ids(tgt[i].substr(0, 4));
    s.push_back(2);
    std::vector<int64_t> in = {2}, labels = t;
    in.insert(in.end(), t.begin(), t.end());
    labels.push_back(2);
    expected.insert({s, in, labels});
  }
  std::set<std::vector<std::vector<int64_t>>> seen;
  data->seek(0);
  while (seen.size() < expected.size()) {
    InputBatch b = data->next();
    std::vector<int64_t> scu = ints(b, "src_cu_seqlens"), tcu = ints(b, "tgt_cu_seqlens");
    ASSERT_LE(scu.back(), 12);
    ASSERT_LE(tcu.back(), 12);
    EXPECT_EQ(b.tokens, scu.back() + tcu.back());
    auto s = split(ints(b, "src_ids"), scu), t = split(ints(b, "tgt_ids"), tcu),
         l = split(ints(b, "labels"), tcu);
    for (size_t i = 0; i < s.size(); ++i)
      EXPECT_TRUE(seen.insert({s[i], t[i], l[i]}).second) << "a pair twice in an epoch";
  }
  EXPECT_EQ(seen, expected);
  InputBatch v;
  ASSERT_TRUE(data->validBatch(0, v));
  EXPECT_EQ(ints(v, "src_ids"), (std::vector<int64_t>{6, 4, 5, 2}));
  EXPECT_EQ(ints(v, "tgt_ids"), (std::vector<int64_t>{2, 13, 12, 11}));
  EXPECT_EQ(ints(v, "labels"), (std::vector<int64_t>{13, 12, 11, 2}));
  EXPECT_EQ(ints(v, "tgt_position_ids"), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_FALSE(data->validBatch(1, v));

  TrainOptions unaligned = o;
  unaligned.target = path("short.tgt");
  write(unaligned.target, "xy\n");
  EXPECT_THROW(loadTrainingData(unaligned, d), TrainError);
}

/// IDX bytes: magic 0 0 8 <dims>, big-endian uint32 sizes, then `data`.
std::string idx(const std::vector<uint32_t> &dims, const std::vector<uint8_t> &data) {
  std::string out = {0, 0, 8, static_cast<char>(dims.size())};
  for (uint32_t v : dims)
    for (int shift : {24, 16, 8, 0})
      out.push_back(static_cast<char>((v >> shift) & 0xFF));
  out.append(data.begin(), data.end());
  return out;
}

TEST_F(TrainingDataTest, VitImages) {
  ModelDescription d = model("tiny-vit.json"); // 28 x 28, patches of 7: 17 tokens
  const int n = 20;
  std::vector<uint8_t> pixels, labels;
  for (int i = 0; i < n; ++i) {
    for (int p = 0; p < 28 * 28; ++p)
      pixels.push_back(p % 2 ? 255 : 0);
    labels.push_back(static_cast<uint8_t>(i % 10));
  }
  TrainOptions o;
  o.model = "tiny-vit.json";
  o.data = path("images.idx");
  o.labels = path("labels.idx");
  write(o.data, idx({n, 28, 28}, pixels));
  write(o.labels, idx({n}, labels));
  o.batchSequences = 4;
  std::unique_ptr<TrainingData> data = loadTrainingData(o, d);
  EXPECT_EQ(data->batchSequences(), 4);
  EXPECT_EQ(data->fingerprint().rfind("18 images, fnv1a64 ", 0), 0u) << data->fingerprint();
  data->seek(0);
  std::multiset<int64_t> seen;
  for (int k = 0; k < 5; ++k) { // 18 training images: 4 4 4 4 2
    InputBatch b = data->next();
    const HostTensor &px = b.inputs.at("pixels");
    int64_t images = k < 4 ? 4 : 2;
    EXPECT_EQ(px.shape, (std::vector<int64_t>{images, 1, 28, 28}));
    EXPECT_EQ(px.floats[0], -1.0);
    EXPECT_EQ(px.floats[1], 1.0);
    EXPECT_EQ(ints(b, "cu_seqlens").back(), images * 17);
    EXPECT_EQ(b.tokens, images * 17);
    for (int64_t label : ints(b, "labels"))
      seen.insert(label);
  }
  EXPECT_EQ(seen, (std::multiset<int64_t>{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 9}));
  InputBatch v;
  ASSERT_TRUE(data->validBatch(0, v)); // images 18 and 19
  EXPECT_EQ(ints(v, "labels"), (std::vector<int64_t>{8, 9}));
  EXPECT_FALSE(data->validBatch(1, v));

  d.num_classes = 9;
  try {
    loadTrainingData(o, d);
    ADD_FAILURE() << "label 9 accepted with num_classes 9";
  } catch (const TrainError &e) {
    EXPECT_NE(std::string(e.what()).find("labels.idx: label 9 of image 9 is not below the "
                                         "model's num_classes 9"),
              std::string::npos)
        << e.what();
  }
}

} // namespace
