//===- ImageData.cpp - vit data: IDX images and labels --------------------===//
#include "DataSources.h"

#include "ls2c/Data/ImagePatches.h"

#include <algorithm>

namespace ls2c {

namespace {

/// Images [begin, end) of `d`.
ImageDataset part(const ImageDataset &d, int64_t begin, int64_t end) {
  ImageDataset out = d;
  const int64_t size = d.height * d.width * d.channels;
  out.count = end - begin;
  out.pixels.assign(d.pixels.begin() + begin * size, d.pixels.begin() + end * size);
  out.labels.assign(d.labels.begin() + begin, d.labels.begin() + end);
  return out;
}

ImageDataset openImages(const std::string &images, const std::string &labels,
                        const ModelDescription &desc, const std::string &model) {
  ImageDataset d;
  try {
    d = loadIdxImages(images, labels);
  } catch (const DataError &e) {
    throw TrainError(e.what());
  }
  if (d.channels != 1 && d.channels != desc.channels)
    throw TrainError(images + ": images of " + std::to_string(d.channels) +
                     " channels; " + model + " takes " + std::to_string(desc.channels) +
                     " (1-channel images are replicated, others must match)");
  for (int64_t i = 0; i < d.count; ++i)
    if (d.labels[static_cast<size_t>(i)] >= desc.num_classes)
      throw TrainError(labels + ": label " + std::to_string(d.labels[static_cast<size_t>(i)]) +
                       " of image " + std::to_string(i) + " is not below the model's " +
                       "num_classes " + std::to_string(desc.num_classes) + " (" + model + ")");
  return d;
}

/// The model's compute dtype, in which @forward takes its pixels.
reference::ElementType pixelType(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return reference::ElementType::F16;
  case DType::BF16:
    return reference::ElementType::BF16;
  case DType::F32:
    break;
  }
  return reference::ElementType::F32;
}

class ImageData : public TrainingData {
public:
  ImageData(ImageDataset trainSet, ImageDataset validSet, const ImageOptions &options,
            int64_t images, uint64_t seed, reference::ElementType type)
      : trainSet(std::move(trainSet)), validSet(std::move(validSet)), options(options),
        images(images), type(type), train(this->trainSet, options, images, seed),
        valid(this->validSet, options, images, seed) {}

  std::string fingerprint() const override {
    return dataFingerprint(trainSet.count, "images",
                           {bytesOf(trainSet.pixels), bytesOf(trainSet.labels)});
  }
  int64_t batchSequences() const override { return images; }
  void seek(int64_t index) override { nextIndex = index; }
  InputBatch next() override {
    int64_t n = train.numBatches(), i = nextIndex++;
    return toInputs(train.batch(i / n, i % n));
  }
  bool validBatch(int64_t k, InputBatch &out) const override {
    if (k < 0 || k * images >= validSet.count)
      return false;
    std::vector<int64_t> indices;
    for (int64_t i = k * images; i < std::min(validSet.count, (k + 1) * images); ++i)
      indices.push_back(i);
    out = toInputs(valid.makeBatch(indices));
    return true;
  }
  std::string summary() const override {
    return std::to_string(trainSet.count) + " training and " +
           std::to_string(validSet.count) + " validation images of " +
           std::to_string(trainSet.height) + " x " + std::to_string(trainSet.width) +
           ", " + std::to_string(images) + " a batch";
  }

private:
  InputBatch toInputs(const ImageBatch &b) const {
    const int64_t S = options.imageSize;
    InputBatch out;
    out.inputs = {{"pixels", reference::HostTensor::fromFloats(
                                 type, {b.batchSize, options.channels, S, S},
                                 std::vector<double>(b.pixels.begin(), b.pixels.end()))},
                  {"cu_seqlens", intTensor(b.cu_seqlens)},
                  {"labels", intTensor(b.labels)}};
    out.tokens = b.cu_seqlens.back();
    return out;
  }

  ImageDataset trainSet, validSet; // the batchers view them
  ImageOptions options;
  int64_t images;
  reference::ElementType type;
  ImageBatcher train, valid;
  int64_t nextIndex = 0;
};

} // namespace

std::unique_ptr<TrainingData> loadImageData(const TrainOptions &o, const ModelDescription &desc) {
  if (o.labels.empty())
    throw TrainError(o.model + ": no --labels (a vit model trains on IDX images: --data "
                     "IMAGES --labels LABELS, e.g. Fashion-MNIST's "
                     "train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz)");
  if (o.validData.empty() != o.validLabels.empty())
    throw TrainError(std::string(o.validData.empty() ? "--valid-labels" : "--valid-data") +
                     " needs " + (o.validData.empty() ? "--valid-data" : "--valid-labels") +
                     ": validation images come with their labels");
  const int64_t tokensPerImage =
      (desc.image_size / desc.patch_size) * (desc.image_size / desc.patch_size) + 1;
  int64_t images = o.batchSequences ? o.batchSequences
                                    : ImageBatcher::maxImagesPerBatch(desc.max_batch_tokens,
                                                                      desc.image_size,
                                                                      desc.patch_size);
  int64_t batchTokens = 0;
  if (__builtin_mul_overflow(images, tokensPerImage, &batchTokens) ||
      batchTokens > desc.max_batch_tokens)
    throw TrainError("--batch-sequences " + std::to_string(images) + " images x " +
                     std::to_string(tokensPerImage) + " tokens exceeds max_batch_tokens " +
                     std::to_string(desc.max_batch_tokens) + " of " + o.model);

  ImageDataset trainSet = openImages(o.data, o.labels, desc, o.model), validSet;
  if (o.validData.empty()) {
    int64_t split = splitPoint(trainSet.count, "images", o.data);
    validSet = part(trainSet, split, trainSet.count);
    trainSet = part(trainSet, 0, split);
  } else {
    validSet = openImages(o.validData, o.validLabels, desc, o.model);
  }

  ImageOptions options;
  options.imageSize = desc.image_size;
  options.patchSize = desc.patch_size;
  options.channels = desc.channels;
  options.numClasses = static_cast<int32_t>(desc.num_classes);
  options.mean = {0.5f}; // timm's ViT normalization: [0, 1] to [-1, 1]
  options.stddev = {0.5f};
  try {
    return std::make_unique<ImageData>(std::move(trainSet), std::move(validSet), options,
                                       images, o.seed, pixelType(desc.dtype));
  } catch (const std::invalid_argument &e) {
    throw TrainError(o.model + ": " + e.what());
  } catch (const DataError &e) {
    throw TrainError(e.what());
  }
}

} // namespace ls2c
