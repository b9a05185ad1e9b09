//===- TrainingData.cpp - the data of `ls2c train`, by architecture -------===//
#include "DataSources.h"

#include "ls2c/Data/TokenCorpus.h"
#include "ls2c/Support/Hex.h"

#include <cstdio>
#include <filesystem>

namespace ls2c {

TrainingData::~TrainingData() = default;

std::string dataFingerprint(int64_t count, const char *unit,
                            std::initializer_list<std::string_view> parts) {
  uint64_t hash = fnv1a64({});
  for (std::string_view part : parts)
    hash = fnv1a64(part, hash);
  return std::to_string(count) + " " + unit + ", fnv1a64 " + hex64(hash);
}

reference::HostTensor intTensor(const std::vector<int32_t> &values) {
  return reference::HostTensor::fromInts(reference::ElementType::I32,
                                         {static_cast<int64_t>(values.size())},
                                         std::vector<int64_t>(values.begin(), values.end()));
}

TokenFile openTokenFile(const std::string &path, const std::string &who) {
  std::error_code error;
  // A missing file, a FIFO or a directory: TokenFile names what it is.
  if (!isTokenFile(path) && std::filesystem::is_regular_file(path, error))
    throw TrainError(path + ": not a token file; " + who +
                     " trains on token files of `ls2c tokenize`");
  try {
    return TokenFile(path);
  } catch (const DataError &e) {
    throw TrainError(e.what());
  }
}

int64_t splitPoint(int64_t count, const char *unit, const std::string &path) {
  auto split = static_cast<int64_t>(static_cast<double>(count) * 0.9);
  if (split < 1 || split >= count)
    throw TrainError(path + ": " + std::to_string(count) + " " + unit +
                     " cannot be split 90% / 10% into training and validation "
                     "parts that both hold one (give validation data)");
  return split;
}

namespace {

/// Options that name data of one architecture only.
struct ArchitectureOption {
  const char *flag;
  std::string TrainOptions::*field;
  Architecture architecture;
};

const ArchitectureOption kArchitectureOptions[] = {
    {"--target", &TrainOptions::target, Architecture::EncoderDecoder},
    {"--valid-target", &TrainOptions::validTarget, Architecture::EncoderDecoder},
    {"--tokenizer", &TrainOptions::tokenizer, Architecture::EncoderDecoder},
    {"--target-tokenizer", &TrainOptions::targetTokenizer, Architecture::EncoderDecoder},
    {"--labels", &TrainOptions::labels, Architecture::ViT},
    {"--valid-labels", &TrainOptions::validLabels, Architecture::ViT},
};

} // namespace

std::unique_ptr<TrainingData> loadTrainingData(const TrainOptions &o,
                                               const ModelDescription &desc) {
  for (const ArchitectureOption &option : kArchitectureOptions)
    if (!(o.*option.field).empty() && desc.architecture != option.architecture)
      throw TrainError(std::string(option.flag) + " is for " +
                       std::string(toString(option.architecture)) + " models; " +
                       o.model + "'s architecture is '" +
                       std::string(toString(desc.architecture)) + "'");
  switch (desc.architecture) {
  case Architecture::Decoder:
  case Architecture::Llama:
    return loadLMData(o, desc);
  case Architecture::Encoder:
    return loadMaskedLMData(o, desc);
  case Architecture::EncoderDecoder:
    return loadTranslationData(o, desc);
  case Architecture::ViT:
    return loadImageData(o, desc);
  }
  throw TrainError(o.model + ": unknown architecture");
}

} // namespace ls2c
