//===- ImagePatches.h - IDX image datasets and ViT batches ----------------===//
//
// MNIST-style IDX files (LeCun's format: big-endian magic 0x0000TTDD with
// element type TT and DD dims, DD big-endian uint32 sizes, then the data;
// ".gz" files are decompressed with zlib), as Fashion-MNIST ships them
// (Debian's dataset-fashion-mnist installs
// /usr/share/datasets/fashion-mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz),
// and batches for the `vit` architecture:
//   pixels      f32   [B, C, S, S]   (image_size S, channels C of the model)
//   cu_seqlens  int32 [B + 1]        b * (P + 1): P patches + the class token
//   labels      int32 [B]
//   patches     f32   [B, P, C*p*p]  optional: patch (r, c) at r * (S/p) + c,
//                                    each flattened in (C, p, p) order, the
//                                    layout of patch_embed.proj.weight
//                                    [H, C, p, p] (what the frontend computes
//                                    from pixels)
// Pixels are x / 255, then (x - mean[c]) / std[c]. Images of another side
// than S are resized bilinearly (torchvision's Resize without antialias,
// align_corners = false); a 1-channel image fills all C channels (as
// torchvision's Grayscale(num_output_channels = C)). The caller casts pixels
// to the model's compute dtype (f16/bf16). No MLIR dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_DATA_IMAGEPATCHES_H
#define LS2C_DATA_IMAGEPATCHES_H

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ls2c {

/// An IDX array of unsigned bytes (type 0x08, the only one image and label
/// files use): dims, then the elements row-major.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
  int64_t numElements() const;
};

/// Parses an IDX file (".gz" decompressed). Throws DataError naming the file
/// and the rule: unreadable, shorter than its header, non-zero magic bytes,
/// an element type other than 0x08 (named: 0x09 int8, 0x0B int16, 0x0C
/// int32, 0x0D float32, 0x0E float64), no dims or a zero dim, or data whose
/// size differs from the product of the dims.
IdxArray readIdx(const std::string &path);
/// The same from bytes already in memory; `name` is used in messages.
IdxArray parseIdx(const std::string &bytes, const std::string &name);

/// Images [N, H, W, C] (channels last; C = 1 for 3-dim IDX files) of uint8,
/// with one label each.
struct ImageDataset {
  int64_t count = 0, height = 0, width = 0, channels = 0;
  std::vector<uint8_t> pixels; ///< [N, H, W, C]
  std::vector<int32_t> labels; ///< [N]
  int32_t numClasses = 0;      ///< max label + 1
};

/// Reads images (IDX of 3 dims [N, H, W] or 4 dims [N, H, W, C]) and labels
/// (1 dim [N]). `limit` >= 0 keeps only the first `limit` images. Throws
/// DataError when the counts differ, the dims are not 3/4 and 1, or a file
/// is unreadable (readIdx).
ImageDataset loadIdxImages(const std::string &imagesPath,
                           const std::string &labelsPath, int64_t limit = -1);

/// The model's image geometry and normalization.
struct ImageOptions {
  int64_t imageSize = 0;     ///< S (image_size), >= 1
  int64_t patchSize = 0;     ///< p (patch_size), divides S
  int64_t channels = 0;      ///< C (channels), >= 1; the dataset has 1 or C
  int32_t numClasses = 0;    ///< labels must be in [0, numClasses)
  std::vector<float> mean{0.0f}, stddev{1.0f}; ///< one value, or one per channel
  bool emitPatches = false;  ///< also fill ImageBatch::patches
};

struct ImageBatch {
  int64_t batchSize = 0;
  std::vector<float> pixels;       ///< [B, C, S, S]
  std::vector<int32_t> cu_seqlens; ///< [B + 1]
  std::vector<int32_t> labels;     ///< [B]
  std::vector<float> patches;      ///< [B, P, C*p*p] when asked for
  std::vector<int64_t> indices;    ///< [B] images' indices in the dataset
};

/// Cuts images [B, C, S, S] into patches [B, P, C*p*p] (layout above).
/// Throws std::invalid_argument when p does not divide S or sizes mismatch.
std::vector<float> patchify(const std::vector<float> &pixels, int64_t batch,
                            int64_t channels, int64_t imageSize,
                            int64_t patchSize);

/// Fixed-size batches of images, visited in a new seeded order each epoch
/// (every image once per epoch; the last batch holds the rest unless
/// dropLast).
class ImageBatcher {
public:
  /// `dataset` must outlive the batcher. batchImages >= 1. Throws
  /// std::invalid_argument for bad options (naming the field and rule) and
  /// DataError for a label outside [0, numClasses) or a dataset whose
  /// channel count is neither 1 nor C.
  ImageBatcher(const ImageDataset &dataset, const ImageOptions &options,
               int64_t batchImages, uint64_t seed, bool dropLast = false);

  /// The most images whose tokens (P + 1 each) fit in maxBatchTokens.
  static int64_t maxImagesPerBatch(int64_t maxBatchTokens, int64_t imageSize,
                                   int64_t patchSize);

  int64_t numBatches() const;
  int64_t tokensPerImage() const { return patchesPerImage + 1; }
  /// The images of epoch `epoch` in visiting order: a permutation of
  /// 0 .. count-1 depending only on (seed, epoch).
  std::vector<int64_t> epochOrder(int64_t epoch) const;
  /// Batch k of epoch `epoch`: images epochOrder(epoch)[k * B .. (k + 1) * B).
  /// The last epoch's order is cached (under a mutex), so a loop over k
  /// shuffles once.
  ImageBatch batch(int64_t epoch, int64_t k) const;
  /// The images `indices` in that order (evaluation: sequential batches).
  ImageBatch makeBatch(const std::vector<int64_t> &indices) const;

private:
  const ImageDataset &data;
  ImageOptions options;
  int64_t batchImages, patchesPerImage;
  uint64_t seed;
  bool dropLast;
  struct OrderCache {
    std::mutex mutex;
    int64_t epoch = 0;
    std::vector<int64_t> order; // empty: nothing cached
  };
  std::unique_ptr<OrderCache> cache = std::make_unique<OrderCache>();
};

} // namespace ls2c

#endif // LS2C_DATA_IMAGEPATCHES_H
