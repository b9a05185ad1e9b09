//===- DataSources.h - the per-architecture sources of TrainingData.h -----===//
#ifndef LS2C_LIB_TRAINER_DATASOURCES_H
#define LS2C_LIB_TRAINER_DATASOURCES_H

#include "ls2c/Data/TokenFile.h"
#include "ls2c/Trainer/TrainingData.h"

#include <string_view>
#include <vector>

namespace ls2c {

std::unique_ptr<TrainingData> loadLMData(const TrainOptions &o, const ModelDescription &desc);
std::unique_ptr<TrainingData> loadMaskedLMData(const TrainOptions &o,
                                               const ModelDescription &desc);
std::unique_ptr<TrainingData> loadTranslationData(const TrainOptions &o,
                                                  const ModelDescription &desc);
std::unique_ptr<TrainingData> loadImageData(const TrainOptions &o, const ModelDescription &desc);

/// An int32 tensor of `values`, shaped [values.size()].
reference::HostTensor intTensor(const std::vector<int32_t> &values);

/// The bytes of a vector of plain values, for dataFingerprint.
template <typename T> std::string_view bytesOf(const std::vector<T> &v) {
  return {reinterpret_cast<const char *>(v.data()), v.size() * sizeof(T)};
}

/// Opens a token file that `who` (e.g. "m.json (encoder)") trains on; a
/// regular file that is not one is refused naming `who`. Throws TrainError.
TokenFile openTokenFile(const std::string &path, const std::string &who);

/// How many of `count` examples train (the first 90%; the rest validate).
/// Throws TrainError naming `path` when either part would be empty.
int64_t splitPoint(int64_t count, const char *unit, const std::string &path);

} // namespace ls2c

#endif // LS2C_LIB_TRAINER_DATASOURCES_H
