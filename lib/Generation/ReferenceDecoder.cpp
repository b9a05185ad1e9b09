//===- ReferenceDecoder.cpp - @encode / @decode in the interpreter --------===//
#include "ls2c/Generation/ReferenceDecoder.h"

#include "ls2c/Frontend/Decoding.h"
#include "ls2c/Model/ParameterLayout.h"
#include "ls2c/Reference/Interpreter.h"
#include "ls2c/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include <algorithm>

namespace ls2c::generation {

using reference::ElementType;
using reference::HostTensor;

namespace {

/// The reference element type of argument `i` of `f` (verified ls2 types).
ElementType argumentType(mlir::func::FuncOp f, unsigned i) {
  return reference::elementTypeFromMLIR(
             mlir::cast<mlir::RankedTensorType>(f.getArgumentTypes()[i]).getElementType())
      .value_or(ElementType::F32);
}

HostTensor intTensor(const std::vector<int32_t> &v) {
  return HostTensor::fromInts(ElementType::I32, {static_cast<int64_t>(v.size())},
                              std::vector<int64_t>(v.begin(), v.end()));
}

std::string argName(mlir::func::FuncOp f, unsigned i) {
  auto name = f.getArgAttrOfType<mlir::StringAttr>(i, "ls2.name");
  return name ? name.str() : "";
}

} // namespace

struct ReferenceDecoder::State {
  ModelDescription desc;
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp encodeFn, decodeFn;
  reference::Interpreter interpreter{reference::Precision::F32};
  std::vector<HostTensor> parameters; ///< in ParameterLayout order
  int64_t layers = 0, rowWidth = 0;   ///< kv_heads * head_dim

  // The encoded sources: per decoder layer key and value rows, and each
  // source's first row and length.
  std::vector<HostTensor> memory;
  std::vector<int32_t> memoryStart, memoryLength;

  // The hypotheses and their caches: per layer key and value.
  std::vector<int32_t> sourceOf, cached;
  std::vector<HostTensor> cache;

  int64_t capacity() const { return desc.max_seq_len; }

  ElementType cacheType = ElementType::F32; ///< the past arguments' type

  HostTensor emptyCache(size_t hypotheses) const {
    return HostTensor::zeros(cacheType,
                             {static_cast<int64_t>(hypotheses) * capacity(), desc.kv_heads,
                              desc.headDim()});
  }

  /// Runs `f` on the parameters then `inputs` by argument name.
  std::vector<HostTensor> run(mlir::func::FuncOp f, std::map<std::string, HostTensor> inputs) {
    std::vector<HostTensor> args = parameters;
    for (unsigned i = static_cast<unsigned>(parameters.size()); i < f.getNumArguments(); ++i) {
      auto it = inputs.find(argName(f, i));
      if (it == inputs.end())
        throw GenerationError("internal error: no value for @" + f.getName().str() +
                              " argument '" + argName(f, i) + "'");
      args.push_back(std::move(it->second));
    }
    try {
      return interpreter.run(f, args);
    } catch (const reference::InterpreterError &e) {
      throw GenerationError(e.what());
    }
  }
};

ReferenceDecoder::ReferenceDecoder(const ModelDescription &desc,
                                   const std::map<std::string, HostTensor> &parameters,
                                   bool compiled)
    : state(std::make_unique<State>()) {
  State &s = *state;
  s.desc = desc;
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&s.context, [&](mlir::Diagnostic &d) {
    diagnostics += d.str() + "\n";
    return mlir::success();
  });
  s.module = buildDecodingModule(s.context, desc);
  if (!s.module)
    throw GenerationError(desc.name + ": " + diagnostics);
  if (compiled) {
    mlir::PassManager pm(&s.context);
    addCompilePipeline(pm, moduleStage(*s.module), CompileStage::Planned);
    if (mlir::failed(pm.run(*s.module)))
      throw GenerationError(desc.name + ": compiling the decoding module failed: " + diagnostics);
    s.interpreter.setUseArena(true);
  }
  s.encodeFn = s.module->lookupSymbol<mlir::func::FuncOp>("encode");
  s.decodeFn = s.module->lookupSymbol<mlir::func::FuncOp>("decode");
  s.layers = desc.decoder_layers;
  s.rowWidth = desc.kv_heads * desc.headDim();
  // Parameters come first in both functions, in ParameterLayout order.
  unsigned index = 0;
  for (unsigned i = 0; i < s.decodeFn.getNumArguments(); ++i)
    if (argName(s.decodeFn, i) == "past.0.key")
      s.cacheType = argumentType(s.decodeFn, i);
  for (const ParameterSpec &p : buildParameterLayout(desc).parameters) {
    ElementType type = argumentType(s.decodeFn, index++);
    auto it = parameters.find(p.name);
    if (it == parameters.end())
      throw GenerationError(desc.name + ": no value for parameter '" + p.name + "'");
    if (it->second.shape != p.shape || !reference::isFloat(it->second.type))
      throw GenerationError(desc.name + ": parameter '" + p.name + "' is " +
                            it->second.describe() + ", not a float tensor of the model's shape");
    s.parameters.push_back(HostTensor::fromFloats(type, p.shape, it->second.floats));
  }
}

ReferenceDecoder::~ReferenceDecoder() = default;

int64_t ReferenceDecoder::vocabSize() const { return state->desc.vocab; }
int64_t ReferenceDecoder::maxLength() const { return state->desc.max_seq_len; }
int64_t ReferenceDecoder::maxBatchTokens() const { return state->desc.max_batch_tokens; }
bool ReferenceDecoder::hasSource() const { return static_cast<bool>(state->encodeFn); }

void ReferenceDecoder::encode(const std::vector<std::vector<int32_t>> &sources) {
  State &s = *state;
  if (!s.encodeFn)
    throw GenerationError(s.desc.name + ": a decoder model has no source to encode");
  std::vector<int32_t> ids, positions, cu = {0};
  s.memoryStart.clear();
  s.memoryLength.clear();
  for (const std::vector<int32_t> &src : sources) {
    s.memoryStart.push_back(static_cast<int32_t>(ids.size()));
    s.memoryLength.push_back(static_cast<int32_t>(src.size()));
    for (size_t j = 0; j < src.size(); ++j) {
      ids.push_back(src[j]);
      positions.push_back(static_cast<int32_t>(j));
    }
    cu.push_back(static_cast<int32_t>(ids.size()));
  }
  if (sources.empty() || static_cast<int64_t>(ids.size()) > s.desc.max_batch_tokens)
    throw GenerationError(s.desc.name + ": " + std::to_string(sources.size()) + " sources of " +
                          std::to_string(ids.size()) + " tokens; a batch holds 1 to " +
                          std::to_string(s.desc.max_batch_tokens) + " tokens");
  s.memory = s.run(s.encodeFn, {{"src_ids", intTensor(ids)},
                                {"src_position_ids", intTensor(positions)},
                                {"src_cu_seqlens", intTensor(cu)}});
}

void ReferenceDecoder::start(const std::vector<int32_t> &sourceOf) {
  State &s = *state;
  if (sourceOf.empty() || static_cast<int64_t>(sourceOf.size()) > s.desc.max_batch_tokens)
    throw GenerationError(s.desc.name + ": " + std::to_string(sourceOf.size()) +
                          " hypotheses; a step holds 1 to " +
                          std::to_string(s.desc.max_batch_tokens));
  if (s.encodeFn)
    for (int32_t src : sourceOf)
      if (src < 0 || static_cast<size_t>(src) >= s.memoryStart.size())
        throw GenerationError("hypothesis source " + std::to_string(src) + " was not encoded (" +
                              std::to_string(s.memoryStart.size()) + " sources)");
  s.sourceOf = sourceOf;
  s.cached.assign(sourceOf.size(), 0);
  s.cache.assign(static_cast<size_t>(2 * s.layers), s.emptyCache(sourceOf.size()));
}

std::vector<float> ReferenceDecoder::step(const std::vector<std::vector<int32_t>> &tokens) {
  State &s = *state;
  const size_t n = s.sourceOf.size();
  if (tokens.size() != n)
    throw GenerationError(std::to_string(tokens.size()) + " token lists for " +
                          std::to_string(n) + " hypotheses");
  std::vector<int32_t> ids, positions, cu = {0}, starts, lengths;
  for (size_t h = 0; h < n; ++h) {
    if (tokens[h].empty())
      throw GenerationError("hypothesis " + std::to_string(h) + " was fed no token");
    if (s.cached[h] + static_cast<int64_t>(tokens[h].size()) > s.capacity())
      throw GenerationError("hypothesis " + std::to_string(h) + " would hold " +
                            std::to_string(s.cached[h] + tokens[h].size()) +
                            " tokens, past max_seq_len " + std::to_string(s.capacity()));
    for (size_t j = 0; j < tokens[h].size(); ++j) {
      ids.push_back(tokens[h][j]);
      positions.push_back(s.cached[h] + static_cast<int32_t>(j));
    }
    cu.push_back(static_cast<int32_t>(ids.size()));
    starts.push_back(static_cast<int32_t>(static_cast<int64_t>(h) * s.capacity()));
    lengths.push_back(s.cached[h]);
  }
  if (static_cast<int64_t>(ids.size()) > s.desc.max_batch_tokens)
    throw GenerationError(std::to_string(ids.size()) + " tokens in one step, past max_batch_tokens " +
                          std::to_string(s.desc.max_batch_tokens));
  starts.push_back(static_cast<int32_t>(static_cast<int64_t>(n) * s.capacity()));
  const bool source = static_cast<bool>(s.encodeFn);
  std::map<std::string, HostTensor> in = {
      {source ? "tgt_ids" : "input_ids", intTensor(ids)},
      {source ? "tgt_position_ids" : "position_ids", intTensor(positions)},
      {source ? "tgt_cu_seqlens" : "cu_seqlens", intTensor(cu)},
      {"cache_starts", intTensor(starts)},
      {"cache_lengths", intTensor(lengths)}};
  for (int64_t i = 0; i < s.layers; ++i) {
    std::string layer = std::to_string(i);
    in["past." + layer + ".key"] = s.cache[2 * i];
    in["past." + layer + ".value"] = s.cache[2 * i + 1];
    if (source) {
      in["memory." + layer + ".key"] = s.memory[2 * i];
      in["memory." + layer + ".value"] = s.memory[2 * i + 1];
    }
  }
  if (source) {
    std::vector<int32_t> memStarts, memLengths;
    for (int32_t src : s.sourceOf) {
      memStarts.push_back(s.memoryStart[src]);
      memLengths.push_back(s.memoryLength[src]);
    }
    memStarts.push_back(0); // not read
    in["memory_starts"] = intTensor(memStarts);
    in["memory_lengths"] = intTensor(memLengths);
  }
  std::vector<HostTensor> out = s.run(s.decodeFn, std::move(in));

  // Append the new keys and values; return each hypothesis' last logits.
  const auto width = static_cast<size_t>(s.rowWidth);
  for (int64_t i = 0; i < 2 * s.layers; ++i) {
    const HostTensor &present = out[1 + i];
    HostTensor &cache = s.cache[i];
    for (size_t h = 0; h < n; ++h) {
      size_t from = static_cast<size_t>(cu[h]) * width;
      size_t to = (h * static_cast<size_t>(s.capacity()) + static_cast<size_t>(s.cached[h])) * width;
      size_t count = tokens[h].size() * width;
      std::copy_n(present.floats.begin() + static_cast<long>(from), count,
                  cache.floats.begin() + static_cast<long>(to));
    }
  }
  const HostTensor &logits = out[0];
  const auto vocab = static_cast<size_t>(s.desc.vocab);
  std::vector<float> result(n * vocab);
  for (size_t h = 0; h < n; ++h) {
    size_t row = static_cast<size_t>(cu[h + 1] - 1);
    for (size_t j = 0; j < vocab; ++j)
      result[h * vocab + j] = static_cast<float>(logits.floats[row * vocab + j]);
    s.cached[h] += static_cast<int32_t>(tokens[h].size());
  }
  return result;
}

void ReferenceDecoder::select(const std::vector<int32_t> &parent) {
  State &s = *state;
  if (parent.empty() || static_cast<int64_t>(parent.size()) > s.desc.max_batch_tokens)
    throw GenerationError(std::to_string(parent.size()) + " hypotheses; a step holds 1 to " +
                          std::to_string(s.desc.max_batch_tokens));
  for (int32_t p : parent)
    if (p < 0 || static_cast<size_t>(p) >= s.sourceOf.size())
      throw GenerationError("parent " + std::to_string(p) + " is not one of the " +
                            std::to_string(s.sourceOf.size()) + " hypotheses");
  const size_t slot = static_cast<size_t>(s.capacity()) * static_cast<size_t>(s.rowWidth);
  for (HostTensor &cache : s.cache) {
    HostTensor next = s.emptyCache(parent.size());
    for (size_t i = 0; i < parent.size(); ++i) {
      size_t used = static_cast<size_t>(s.cached[parent[i]]) * static_cast<size_t>(s.rowWidth);
      std::copy_n(cache.floats.begin() + static_cast<long>(parent[i] * slot), used,
                  next.floats.begin() + static_cast<long>(i * slot));
    }
    cache = std::move(next);
  }
  std::vector<int32_t> sourceOf, cached;
  for (int32_t p : parent) {
    sourceOf.push_back(s.sourceOf[p]);
    cached.push_back(s.cached[p]);
  }
  s.sourceOf = std::move(sourceOf);
  s.cached = std::move(cached);
}

} // namespace ls2c::generation
