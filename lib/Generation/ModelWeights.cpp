//===- ModelWeights.cpp - parameters by name from safetensors -------------===//
#include "ls2c/Generation/ModelWeights.h"

#include "ls2c/Data/Vocabulary.h"
#include "ls2c/Generation/IncrementalDecoder.h"
#include "ls2c/Model/ParameterLayout.h"
#include "ls2c/Support/Safetensors.h"
#include "ls2c/Training/Workspace.h"

#include <cmath>

namespace ls2c::generation {

using reference::ElementType;
using reference::HostTensor;

namespace {

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace

std::map<std::string, HostTensor> loadModelWeights(const std::string &path,
                                                   const ModelDescription &desc,
                                                   const std::string &vocabulary,
                                                   const std::string &given) {
  SafetensorsFile file;
  try {
    file = readSafetensors(path);
  } catch (const SafetensorsError &e) {
    throw GenerationError(std::string("cannot read the checkpoint: ") + e.what());
  }
  auto model = file.metadata.find("ls2c.model");
  if (model != file.metadata.end() && model->second != desc.name)
    throw GenerationError(path + ": a checkpoint of model '" + model->second + "', not of '" +
                          desc.name + "'");
  auto trained = file.metadata.find("ls2c.vocabulary");
  if (!vocabulary.empty() && trained != file.metadata.end() && trained->second != vocabulary)
    throw GenerationError(path + ": trained with a vocabulary of " + trained->second + "; " +
                          given + " maps text with " + vocabulary +
                          ": the model's ids would decode into other text (give the text "
                          "file or tokenizer it trained with)");
  const ParameterLayout layout = buildParameterLayout(desc);
  std::map<std::string, const ParameterSpec *> trainable;
  for (const ParameterSpec &p : layout.parameters)
    if (p.trainable)
      trainable[p.name] = &p;
  for (const auto &[name, tensor] : file.tensors)
    if (!trainable.count(name) && name.rfind("ls2c.optimizer.", 0) != 0)
      throw GenerationError(path + ": tensor '" + name + "' is not a trainable parameter of " +
                            desc.name);
  std::map<std::string, HostTensor> out;
  for (const ParameterSpec &p : layout.parameters) {
    if (!p.trainable) {
      std::vector<double> table = sinusoidalTable(p.shape[0], p.shape[1]);
      for (double &v : table)
        v = static_cast<float>(v);
      out[p.name] = HostTensor::fromFloats(ElementType::F32, p.shape, std::move(table));
      continue;
    }
    auto it = file.tensors.find(p.name);
    if (it == file.tensors.end())
      throw GenerationError(path + ": missing parameter '" + p.name + "' " + shapeText(p.shape));
    if (it->second.shape != p.shape)
      throw GenerationError(path + ": parameter '" + p.name + "' has shape " +
                            shapeText(it->second.shape) + ", the model's is " +
                            shapeText(p.shape));
    const std::string what = path + ": parameter '" + p.name + "'";
    std::vector<double> values;
    try {
      values = floatValues(it->second, what);
    } catch (const SafetensorsError &e) {
      throw GenerationError(e.what());
    }
    for (double &v : values) {
      v = static_cast<float>(v);
      if (!std::isfinite(v))
        throw GenerationError(what + " holds a value that is not finite in fp32");
    }
    out[p.name] = HostTensor::fromFloats(ElementType::F32, p.shape, std::move(values));
  }
  return out;
}

} // namespace ls2c::generation
