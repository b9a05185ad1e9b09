//===- ImagePatches.cpp - IDX image datasets and ViT batches --------------===//
#include "ls2c/Data/ImagePatches.h"
#include "ls2c/Data/Bucketing.h"      // SplitMix64, seededPermutation
#include "ls2c/Data/CharCorpus.h"     // DataError
#include "ls2c/Data/ParallelCorpus.h" // readFileBytes

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace ls2c {

namespace {
constexpr uint64_t kImageStream = 0x696d6167652d6f72ull; // "image-or"

const char *idxTypeName(unsigned t) {
  switch (t) {
  case 0x08: return "uint8";
  case 0x09: return "int8";
  case 0x0B: return "int16";
  case 0x0C: return "int32";
  case 0x0D: return "float32";
  case 0x0E: return "float64";
  default: return "unknown";
  }
}

uint32_t bigEndian32(const std::string &b, size_t at) {
  return (static_cast<uint32_t>(static_cast<uint8_t>(b[at])) << 24) |
         (static_cast<uint32_t>(static_cast<uint8_t>(b[at + 1])) << 16) |
         (static_cast<uint32_t>(static_cast<uint8_t>(b[at + 2])) << 8) |
         static_cast<uint32_t>(static_cast<uint8_t>(b[at + 3]));
}

[[noreturn]] void badOption(const std::string &what) {
  throw std::invalid_argument("ImageBatcher: " + what);
}
} // namespace

int64_t IdxArray::numElements() const {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

IdxArray parseIdx(const std::string &bytes, const std::string &name) {
  if (bytes.size() < 4)
    throw DataError(name + ": " + std::to_string(bytes.size()) +
                    " bytes cannot hold an IDX header (4-byte magic)");
  if (bytes[0] != 0 || bytes[1] != 0)
    throw DataError(name + ": not an IDX file (the magic number's first two "
                           "bytes must be 0)");
  auto type = static_cast<unsigned>(static_cast<uint8_t>(bytes[2]));
  auto rank = static_cast<unsigned>(static_cast<uint8_t>(bytes[3]));
  if (type != 0x08) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", type);
    throw DataError(name + ": IDX element type " + hex + " (" +
                    idxTypeName(type) +
                    ") is not supported; image and label files are 0x08 (uint8)");
  }
  if (rank == 0)
    throw DataError(name + ": IDX file with no dims");
  size_t header = 4 + 4 * static_cast<size_t>(rank);
  if (bytes.size() < header)
    throw DataError(name + ": " + std::to_string(bytes.size()) +
                    " bytes cannot hold the header of " + std::to_string(rank) +
                    " dims (" + std::to_string(header) + " bytes)");
  IdxArray a;
  uint64_t elements = 1;
  for (unsigned d = 0; d < rank; ++d) {
    uint32_t size = bigEndian32(bytes, 4 + 4 * d);
    if (size == 0)
      throw DataError(name + ": dim " + std::to_string(d) + " is 0");
    elements *= size;
    if (elements > (uint64_t{1} << 40))
      throw DataError(name + ": more than 2^40 elements");
    a.dims.push_back(static_cast<int64_t>(size));
  }
  if (bytes.size() - header != elements)
    throw DataError(name + ": dims promise " + std::to_string(elements) +
                    " bytes of data but the file holds " +
                    std::to_string(bytes.size() - header));
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return a;
}

IdxArray readIdx(const std::string &path) {
  return parseIdx(readFileBytes(path), path);
}

ImageDataset loadIdxImages(const std::string &imagesPath,
                           const std::string &labelsPath, int64_t limit) {
  IdxArray images = readIdx(imagesPath);
  IdxArray labels = readIdx(labelsPath);
  if (images.dims.size() != 3 && images.dims.size() != 4)
    throw DataError(imagesPath + ": images need 3 dims [N, H, W] or 4 dims "
                                 "[N, H, W, C], not " +
                    std::to_string(images.dims.size()));
  if (labels.dims.size() != 1)
    throw DataError(labelsPath + ": labels need 1 dim [N], not " +
                    std::to_string(labels.dims.size()));
  if (images.dims[0] != labels.dims[0])
    throw DataError(imagesPath + " holds " + std::to_string(images.dims[0]) +
                    " images but " + labelsPath + " holds " +
                    std::to_string(labels.dims[0]) + " labels");
  ImageDataset d;
  d.count = images.dims[0];
  if (limit >= 0)
    d.count = std::min(d.count, limit);
  d.height = images.dims[1];
  d.width = images.dims[2];
  d.channels = images.dims.size() == 4 ? images.dims[3] : 1;
  auto perImage = static_cast<size_t>(d.height * d.width * d.channels);
  d.pixels.assign(images.data.begin(),
                  images.data.begin() +
                      static_cast<std::ptrdiff_t>(perImage * static_cast<size_t>(d.count)));
  for (int64_t i = 0; i < d.count; ++i) {
    int32_t label = labels.data[static_cast<size_t>(i)];
    d.labels.push_back(label);
    d.numClasses = std::max(d.numClasses, label + 1);
  }
  return d;
}

std::vector<float> patchify(const std::vector<float> &pixels, int64_t batch,
                            int64_t channels, int64_t imageSize,
                            int64_t patchSize) {
  if (batch < 0 || channels < 1 || imageSize < 1 || patchSize < 1 ||
      imageSize % patchSize != 0)
    throw std::invalid_argument(
        "patchify: patch size " + std::to_string(patchSize) +
        " must divide image size " + std::to_string(imageSize) +
        " (and channels >= 1, batch >= 0)");
  const int64_t S = imageSize, p = patchSize, C = channels, side = S / p;
  if (static_cast<int64_t>(pixels.size()) != batch * C * S * S)
    throw std::invalid_argument("patchify: " + std::to_string(pixels.size()) +
                                " pixels are not [" + std::to_string(batch) +
                                ", " + std::to_string(C) + ", " +
                                std::to_string(S) + ", " + std::to_string(S) + "]");
  std::vector<float> out(pixels.size());
  size_t o = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < side; ++r)
      for (int64_t c = 0; c < side; ++c)
        for (int64_t ch = 0; ch < C; ++ch)
          for (int64_t i = 0; i < p; ++i)
            for (int64_t j = 0; j < p; ++j)
              out[o++] = pixels[static_cast<size_t>(
                  ((b * C + ch) * S + r * p + i) * S + c * p + j)];
  return out;
}

int64_t ImageBatcher::maxImagesPerBatch(int64_t maxBatchTokens,
                                        int64_t imageSize, int64_t patchSize) {
  if (patchSize < 1 || imageSize < 1 || imageSize % patchSize != 0)
    badOption("patch size " + std::to_string(patchSize) +
              " must divide image size " + std::to_string(imageSize));
  int64_t side = imageSize / patchSize;
  return std::max<int64_t>(0, maxBatchTokens) / (side * side + 1);
}

ImageBatcher::ImageBatcher(const ImageDataset &dataset,
                           const ImageOptions &opts, int64_t batchImages,
                           uint64_t seed, bool dropLast)
    : data(dataset), options(opts), batchImages(batchImages), seed(seed),
      dropLast(dropLast) {
  const ImageOptions &o = options;
  if (o.imageSize < 1)
    badOption("imageSize " + std::to_string(o.imageSize) + " must be >= 1");
  if (o.patchSize < 1 || o.imageSize % o.patchSize != 0)
    badOption("patchSize " + std::to_string(o.patchSize) +
              " must be >= 1 and divide imageSize " + std::to_string(o.imageSize));
  if (o.channels < 1)
    badOption("channels " + std::to_string(o.channels) + " must be >= 1");
  if (o.numClasses < 1)
    badOption("numClasses " + std::to_string(o.numClasses) + " must be >= 1");
  if (batchImages < 1)
    badOption("batchImages " + std::to_string(batchImages) + " must be >= 1");
  for (const auto *v : {&o.mean, &o.stddev})
    if (v->size() != 1 && static_cast<int64_t>(v->size()) != o.channels)
      badOption(std::string(v == &o.mean ? "mean" : "stddev") + " has " +
                std::to_string(v->size()) + " values; give 1 or one per channel (" +
                std::to_string(o.channels) + ")");
  for (float s : o.stddev)
    if (!(s > 0.0f) || !std::isfinite(s))
      badOption("stddev " + std::to_string(s) + " must be finite and > 0");
  if (data.channels != 1 && data.channels != o.channels)
    throw DataError("ImageBatcher: images have " + std::to_string(data.channels) +
                    " channels; the model takes " + std::to_string(o.channels) +
                    " (1-channel images are replicated, others must match)");
  if (data.height < 1 || data.width < 1)
    throw DataError("ImageBatcher: images of " + std::to_string(data.height) +
                    " x " + std::to_string(data.width) + " pixels");
  if (static_cast<int64_t>(data.labels.size()) != data.count ||
      static_cast<int64_t>(data.pixels.size()) !=
          data.count * data.height * data.width * data.channels)
    throw DataError("ImageBatcher: the dataset's pixels or labels do not "
                    "match its count and sizes");
  for (int64_t i = 0; i < data.count; ++i) {
    int32_t label = data.labels[static_cast<size_t>(i)];
    if (label < 0 || label >= o.numClasses)
      throw DataError("ImageBatcher: image " + std::to_string(i) + " has label " +
                      std::to_string(label) + ", outside [0, " +
                      std::to_string(o.numClasses) + ")");
  }
  int64_t side = o.imageSize / o.patchSize;
  patchesPerImage = side * side;
}

int64_t ImageBatcher::numBatches() const {
  return dropLast ? data.count / batchImages
                  : (data.count + batchImages - 1) / batchImages;
}

std::vector<int64_t> ImageBatcher::epochOrder(int64_t epoch) const {
  return seededPermutation(
      data.count,
      mixSeed(mixSeed(seed, kImageStream), static_cast<uint64_t>(epoch)));
}

ImageBatch ImageBatcher::batch(int64_t epoch, int64_t k) const {
  if (k < 0 || k >= numBatches())
    throw std::out_of_range("ImageBatcher: batch " + std::to_string(k) +
                            " of " + std::to_string(numBatches()));
  std::vector<int64_t> indices;
  {
    std::lock_guard<std::mutex> lock(cache->mutex);
    if (cache->order.empty() || cache->epoch != epoch) {
      cache->order = epochOrder(epoch);
      cache->epoch = epoch;
    }
    int64_t begin = k * batchImages;
    int64_t end = std::min(begin + batchImages, data.count);
    indices.assign(cache->order.begin() + begin, cache->order.begin() + end);
  }
  return makeBatch(indices);
}

ImageBatch ImageBatcher::makeBatch(const std::vector<int64_t> &indices) const {
  const ImageOptions &o = options;
  const int64_t S = o.imageSize, C = o.channels, H = data.height,
                W = data.width, DC = data.channels;
  ImageBatch out;
  out.batchSize = static_cast<int64_t>(indices.size());
  out.pixels.resize(static_cast<size_t>(out.batchSize * C * S * S));
  out.cu_seqlens.push_back(0);
  // Bilinear source coordinates (PyTorch's upsample_bilinear2d with
  // align_corners = false); identity when the sizes agree.
  struct Tap {
    int64_t lo, hi;
    float w;
  };
  auto taps = [S](int64_t in) {
    std::vector<Tap> t(static_cast<size_t>(S));
    double scale = static_cast<double>(in) / static_cast<double>(S);
    for (int64_t d = 0; d < S; ++d) {
      double src = std::max(0.0, scale * (static_cast<double>(d) + 0.5) - 0.5);
      auto lo = std::min(static_cast<int64_t>(src), in - 1);
      t[static_cast<size_t>(d)] = {lo, std::min(lo + 1, in - 1),
                                   static_cast<float>(src - static_cast<double>(lo))};
    }
    return t;
  };
  std::vector<Tap> rows = taps(H), cols = taps(W);
  for (int64_t b = 0; b < out.batchSize; ++b) {
    int64_t i = indices[static_cast<size_t>(b)];
    if (i < 0 || i >= data.count)
      throw std::out_of_range("ImageBatcher: image " + std::to_string(i) +
                              " of " + std::to_string(data.count));
    const uint8_t *img = data.pixels.data() + i * H * W * DC;
    for (int64_t ch = 0; ch < C; ++ch) {
      int64_t from = DC == 1 ? 0 : ch;
      float mean = o.mean.size() == 1 ? o.mean[0] : o.mean[static_cast<size_t>(ch)];
      float sd = o.stddev.size() == 1 ? o.stddev[0] : o.stddev[static_cast<size_t>(ch)];
      auto at = [&](int64_t y, int64_t x) {
        return static_cast<float>(img[(y * W + x) * DC + from]) / 255.0f;
      };
      for (int64_t y = 0; y < S; ++y) {
        const Tap &ry = rows[static_cast<size_t>(y)];
        for (int64_t x = 0; x < S; ++x) {
          const Tap &rx = cols[static_cast<size_t>(x)];
          float top = at(ry.lo, rx.lo) * (1 - rx.w) + at(ry.lo, rx.hi) * rx.w;
          float bottom = at(ry.hi, rx.lo) * (1 - rx.w) + at(ry.hi, rx.hi) * rx.w;
          float v = top * (1 - ry.w) + bottom * ry.w;
          out.pixels[static_cast<size_t>(((b * C + ch) * S + y) * S + x)] =
              (v - mean) / sd;
        }
      }
    }
    out.labels.push_back(data.labels[static_cast<size_t>(i)]);
    out.cu_seqlens.push_back(static_cast<int32_t>((b + 1) * tokensPerImage()));
    out.indices.push_back(i);
  }
  if (o.emitPatches)
    out.patches = patchify(out.pixels, out.batchSize, C, S, o.patchSize);
  return out;
}

} // namespace ls2c
