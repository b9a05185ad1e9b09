//===- DataImagePatchesTest.cpp - IDX files and ViT batches ---------------===//
//
// The IDX reader on files the test writes (every header rule), patches in
// the frontend's (C, p, p) order, and ImageBatcher on Fashion-MNIST's test
// set from Debian's dataset-fashion-mnist (skipped when it is not
// installed): tiny-vit's geometry, every image once per epoch, seeded orders.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Data/ImagePatches.h"
#include "ls2c/Data/CharCorpus.h" // DataError

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using namespace ls2c;

const std::string kFashion = "/usr/share/datasets/fashion-mnist/";

bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}
std::string writeTemp(const std::string &name, const std::string &bytes) {
  std::string path = "/tmp/ls2c-idx-" + std::to_string(::getpid()) + "-" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// An IDX file: magic 0 0 type rank, big-endian dims, then `data`.
std::string idx(uint8_t type, const std::vector<uint32_t> &dims,
                const std::vector<uint8_t> &data) {
  std::string s{'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8)
      s.push_back(static_cast<char>((d >> shift) & 0xFF));
  s.append(data.begin(), data.end());
  return s;
}

std::string idxError(const std::string &bytes) {
  try {
    parseIdx(bytes, "test.idx");
  } catch (const DataError &e) {
    return e.what();
  }
  return "";
}

TEST(Idx, ParsesWhatItWasGiven) {
  std::vector<uint8_t> pixels(5 * 4 * 3);
  std::iota(pixels.begin(), pixels.end(), uint8_t{0});
  IdxArray a = parseIdx(idx(0x08, {5, 4, 3}, pixels), "x");
  EXPECT_EQ(a.dims, (std::vector<int64_t>{5, 4, 3}));
  EXPECT_EQ(a.numElements(), 60);
  EXPECT_EQ(a.data, pixels);
  // 300 = 0x12C: sizes are big-endian.
  IdxArray big = parseIdx(idx(0x08, {300}, std::vector<uint8_t>(300, 7)), "x");
  EXPECT_EQ(big.dims, (std::vector<int64_t>{300}));
}

TEST(Idx, RefusesBrokenFilesWithTheRule) {
  EXPECT_NE(idxError("\0\0").find("cannot hold an IDX header"), std::string::npos);
  std::string wrongMagic = idx(0x08, {2}, {1, 2});
  wrongMagic[0] = 1;
  EXPECT_NE(idxError(wrongMagic).find("not an IDX file"), std::string::npos);
  EXPECT_NE(idxError(idx(0x0D, {1}, {0, 0, 0, 0})).find("0x0D (float32) is not supported"),
            std::string::npos)
      << idxError(idx(0x0D, {1}, {0, 0, 0, 0}));
  EXPECT_NE(idxError(idx(0x08, {}, {})).find("no dims"), std::string::npos);
  EXPECT_NE(idxError(idx(0x08, {2, 0}, {})).find("dim 1 is 0"), std::string::npos);
  EXPECT_NE(idxError(idx(0x08, {2, 3}, {1, 2, 3})).find("promise 6 bytes of data but the file holds 3"),
            std::string::npos);
  EXPECT_NE(idxError(idx(0x08, {2, 3}, std::vector<uint8_t>(7))).find("holds 7"),
            std::string::npos);
  std::string header = idx(0x08, {2, 3}, {}).substr(0, 9);
  EXPECT_NE(idxError(header).find("header of 2 dims"), std::string::npos);
}

TEST(Idx, LoadsImagesAndLabelsFromFiles) {
  std::vector<uint8_t> pixels(6 * 4 * 4);
  for (size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = static_cast<uint8_t>(i * 7);
  std::string images = writeTemp("images", idx(0x08, {6, 4, 4}, pixels));
  std::string labels = writeTemp("labels", idx(0x08, {6}, {3, 1, 4, 1, 5, 9}));
  ImageDataset d = loadIdxImages(images, labels);
  EXPECT_EQ(d.count, 6);
  EXPECT_EQ(d.height, 4);
  EXPECT_EQ(d.width, 4);
  EXPECT_EQ(d.channels, 1);
  EXPECT_EQ(d.pixels, pixels);
  EXPECT_EQ(d.labels, (std::vector<int32_t>{3, 1, 4, 1, 5, 9}));
  EXPECT_EQ(d.numClasses, 10);
  EXPECT_EQ(loadIdxImages(images, labels, 2).count, 2);
  std::string fewer = writeTemp("fewer", idx(0x08, {5}, {0, 0, 0, 0, 0}));
  try {
    loadIdxImages(images, fewer);
    FAIL();
  } catch (const DataError &e) {
    EXPECT_NE(std::string(e.what()).find("holds 6 images but " + fewer + " holds 5 labels"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(loadIdxImages(labels, labels), DataError); // 1-dim images
  EXPECT_THROW(loadIdxImages(images, "/nonexistent.idx"), DataError);
  for (const std::string &p : {images, labels, fewer})
    std::remove(p.c_str());
}

TEST(Patchify, FlattensPatchesInChannelRowColumnOrder) {
  const int64_t B = 2, C = 3, S = 8, p = 4, side = S / p;
  std::vector<float> pixels(static_cast<size_t>(B * C * S * S));
  std::iota(pixels.begin(), pixels.end(), 0.0f);
  std::vector<float> patches = patchify(pixels, B, C, S, p);
  ASSERT_EQ(patches.size(), pixels.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t r = 0; r < side; ++r)
      for (int64_t c = 0; c < side; ++c)
        for (int64_t ch = 0; ch < C; ++ch)
          for (int64_t i = 0; i < p; ++i)
            for (int64_t j = 0; j < p; ++j) {
              int64_t patch = r * side + c;
              int64_t within = (ch * p + i) * p + j;
              float expected = static_cast<float>(((b * C + ch) * S + r * p + i) * S + c * p + j);
              ASSERT_EQ(patches[static_cast<size_t>((b * side * side + patch) * C * p * p + within)],
                        expected);
            }
  EXPECT_THROW(patchify(pixels, B, C, S, 3), std::invalid_argument);
  EXPECT_THROW(patchify(pixels, B + 1, C, S, p), std::invalid_argument);
}

ImageOptions tinyVit() {
  ImageOptions o; // examples/tiny-vit.json
  o.imageSize = 28;
  o.patchSize = 7;
  o.channels = 1;
  o.numClasses = 10;
  return o;
}

TEST(ImageBatcher, ResizesAndReplicatesChannels) {
  ImageDataset d;
  d.count = 2;
  d.height = d.width = 4;
  d.channels = 1;
  d.pixels.assign(32, 0);
  std::fill(d.pixels.begin(), d.pixels.begin() + 16, uint8_t{51}); // 0.2
  for (size_t i = 16; i < 32; ++i)
    d.pixels[i] = static_cast<uint8_t>((i - 16) % 4 * 85); // columns 0, 1/3, 2/3, 1
  d.labels = {0, 1};
  d.numClasses = 2;
  ImageOptions o;
  o.imageSize = 8;
  o.patchSize = 4;
  o.channels = 3;
  o.numClasses = 2;
  o.mean = {0.5f, 0.0f, 0.1f};
  o.stddev = {0.5f};
  o.emitPatches = true;
  ImageBatcher batcher(d, o, 2, 0);
  ImageBatch b = batcher.makeBatch({0, 1});
  ASSERT_EQ(b.pixels.size(), 2u * 3 * 8 * 8);
  EXPECT_EQ(b.cu_seqlens, (std::vector<int32_t>{0, 5, 10}));
  EXPECT_EQ(b.patches, patchify(b.pixels, 2, 3, 8, 4));
  for (int64_t ch = 0; ch < 3; ++ch)
    for (int64_t y = 0; y < 8; ++y)
      for (int64_t x = 0; x < 8; ++x) {
        float v0 = b.pixels[static_cast<size_t>((ch * 8 + y) * 8 + x)];
        // A constant image stays constant through the resize.
        EXPECT_NEAR(v0, (0.2f - o.mean[static_cast<size_t>(ch)]) / 0.5f, 1e-6f);
        // A horizontal ramp: bilinear with align_corners = false.
        float src = std::max(0.0f, (static_cast<float>(x) + 0.5f) * 0.5f - 0.5f);
        float ramp = std::min(src, 3.0f) / 3.0f;
        float v1 = b.pixels[static_cast<size_t>(((3 + ch) * 8 + y) * 8 + x)];
        EXPECT_NEAR(v1, (ramp - o.mean[static_cast<size_t>(ch)]) / 0.5f, 1e-5f)
            << "x " << x;
      }
  ImageOptions bad = o;
  bad.patchSize = 3;
  EXPECT_THROW(ImageBatcher(d, bad, 2, 0), std::invalid_argument);
  bad = o;
  bad.mean = {0.f, 0.f};
  EXPECT_THROW(ImageBatcher(d, bad, 2, 0), std::invalid_argument);
  bad = o;
  bad.numClasses = 1; // label 1 is outside [0, 1)
  EXPECT_THROW(ImageBatcher(d, bad, 2, 0), DataError);
}

#define REQUIRE_FASHION_MNIST()                                                \
  if (!exists(kFashion + "t10k-images-idx3-ubyte.gz"))                         \
  GTEST_SKIP() << "no " << kFashion                                            \
               << " (apt-get install dataset-fashion-mnist)"

TEST(ImageBatcher, FashionMnistTestSetAsTinyVitBatches) {
  REQUIRE_FASHION_MNIST();
  ImageDataset d = loadIdxImages(kFashion + "t10k-images-idx3-ubyte.gz",
                                 kFashion + "t10k-labels-idx1-ubyte.gz");
  ASSERT_EQ(d.count, 10000);
  ASSERT_EQ(d.height, 28);
  ASSERT_EQ(d.width, 28);
  ASSERT_EQ(d.numClasses, 10);
  std::vector<int> perClass(10, 0);
  for (int32_t l : d.labels)
    ++perClass[static_cast<size_t>(l)];
  for (int c : perClass)
    EXPECT_EQ(c, 1000) << "Fashion-MNIST's test set has 1000 images per class";

  ImageOptions o = tinyVit();
  o.mean = {0.2860f}; // Fashion-MNIST's pixel mean and std
  o.stddev = {0.3530f};
  o.emitPatches = true;
  int64_t perBatch = ImageBatcher::maxImagesPerBatch(272, 28, 7);
  ASSERT_EQ(perBatch, 16); // tiny-vit: 272 tokens / (16 patches + 1)
  ImageBatcher batcher(d, o, perBatch, 42);
  ASSERT_EQ(batcher.numBatches(), 625);
  // A subset of the epoch keeps the test fast; coverage is checked on the
  // order itself.
  double sum = 0, sumSq = 0;
  int64_t values = 0;
  for (int64_t k = 0; k < batcher.numBatches(); k += 25) {
    ImageBatch b = batcher.batch(0, k);
    ASSERT_EQ(b.batchSize, 16);
    ASSERT_EQ(b.pixels.size(), 16u * 28 * 28);
    ASSERT_EQ(b.patches.size(), b.pixels.size());
    ASSERT_EQ(b.cu_seqlens.size(), 17u);
    for (int64_t i = 0; i <= 16; ++i)
      ASSERT_EQ(b.cu_seqlens[static_cast<size_t>(i)], 17 * i);
    ASSERT_LE(b.cu_seqlens.back(), 272);
    for (int64_t i = 0; i < b.batchSize; ++i) {
      auto img = static_cast<size_t>(b.indices[static_cast<size_t>(i)]);
      ASSERT_EQ(b.labels[static_cast<size_t>(i)], d.labels[img]);
      // Pixel (y, x) of the image is patch (y / 7) * 4 + x / 7, element
      // (y % 7) * 7 + x % 7.
      for (int64_t y = 0; y < 28; y += 5)
        for (int64_t x = 0; x < 28; x += 3) {
          float expected = (d.pixels[img * 784 + static_cast<size_t>(y * 28 + x)] / 255.0f -
                            0.2860f) / 0.3530f;
          ASSERT_NEAR(b.pixels[static_cast<size_t>(i * 784 + y * 28 + x)], expected, 1e-5f);
          size_t patch = static_cast<size_t>(i * 16 + (y / 7) * 4 + x / 7);
          ASSERT_EQ(b.patches[patch * 49 + static_cast<size_t>((y % 7) * 7 + x % 7)],
                    b.pixels[static_cast<size_t>(i * 784 + y * 28 + x)]);
        }
    }
    for (float v : b.pixels) {
      sum += v;
      sumSq += static_cast<double>(v) * v;
      ++values;
    }
  }
  // Normalized with the dataset's statistics: mean near 0, std near 1.
  double mean = sum / static_cast<double>(values);
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(std::sqrt(sumSq / static_cast<double>(values) - mean * mean), 1.0, 0.05);

  std::vector<int64_t> e0 = batcher.epochOrder(0), e1 = batcher.epochOrder(1);
  EXPECT_NE(e0, e1);
  EXPECT_EQ(e0, ImageBatcher(d, o, perBatch, 42).epochOrder(0));
  EXPECT_NE(e0, ImageBatcher(d, o, perBatch, 43).epochOrder(0));
  std::vector<int64_t> sorted = e1;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < d.count; ++i)
    ASSERT_EQ(sorted[static_cast<size_t>(i)], i) << "every image once per epoch";
  EXPECT_EQ(batcher.batch(1, 624).indices,
            std::vector<int64_t>(e1.end() - 16, e1.end()));

  ImageBatcher partial(d, o, 3000, 1), dropped(d, o, 3000, 1, /*dropLast=*/true);
  EXPECT_EQ(partial.numBatches(), 4);
  EXPECT_EQ(partial.batch(0, 3).batchSize, 1000);
  EXPECT_EQ(dropped.numBatches(), 3);
}

TEST(ImageBatcher, FashionMnistTrainSetHeader) {
  REQUIRE_FASHION_MNIST();
  IdxArray labels = readIdx(kFashion + "train-labels-idx1-ubyte.gz");
  EXPECT_EQ(labels.dims, (std::vector<int64_t>{60000}));
  EXPECT_LE(*std::max_element(labels.data.begin(), labels.data.end()), 9);
}

} // namespace
