//===- ReferenceDecoder.cpp - @encode / @decode in the interpreter --------===//
#include "ls2c/Generation/ReferenceDecoder.h"

#include "ls2c/Frontend/Decoding.h"
#include "ls2c/Generation/DecodingState.h"
#include "ls2c/Model/ParameterLayout.h"
#include "ls2c/Reference/Interpreter.h"
#include "ls2c/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include <algorithm>
#include <optional>

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

  // The encoded sources' key and value rows per decoder layer, and the
  // hypotheses' caches per layer key and value; their bookkeeping.
  std::vector<HostTensor> memory, cache;
  std::optional<DecodingState> book;

  ElementType cacheType = ElementType::F32; ///< the past arguments' type

  HostTensor emptyCache(size_t hypotheses) const {
    return HostTensor::zeros(cacheType,
                             {static_cast<int64_t>(hypotheses) * desc.max_seq_len, desc.kv_heads,
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
  s.book.emplace(desc, static_cast<bool>(s.encodeFn));
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
  DecodingState::Sources in = s.book->encode(sources);
  s.memory = s.run(s.encodeFn, {{"src_ids", intTensor(in.ids)},
                                {"src_position_ids", intTensor(in.positions)},
                                {"src_cu_seqlens", intTensor(in.cuSeqlens)}});
}

void ReferenceDecoder::start(const std::vector<int32_t> &sourceOf) {
  State &s = *state;
  s.book->start(sourceOf);
  s.cache.assign(static_cast<size_t>(2 * s.layers), s.emptyCache(sourceOf.size()));
}

std::vector<float> ReferenceDecoder::step(const std::vector<std::vector<int32_t>> &tokens) {
  State &s = *state;
  const DecodingState::Step in = s.book->step(tokens);
  const size_t n = s.book->hypotheses();
  const bool source = static_cast<bool>(s.encodeFn);
  std::map<std::string, HostTensor> args = {
      {source ? "tgt_ids" : "input_ids", intTensor(in.ids)},
      {source ? "tgt_position_ids" : "position_ids", intTensor(in.positions)},
      {source ? "tgt_cu_seqlens" : "cu_seqlens", intTensor(in.cuSeqlens)},
      {"cache_starts", intTensor(in.cacheStarts)},
      {"cache_lengths", intTensor(in.cacheLengths)}};
  for (int64_t i = 0; i < s.layers; ++i) {
    std::string layer = std::to_string(i);
    args["past." + layer + ".key"] = s.cache[2 * i];
    args["past." + layer + ".value"] = s.cache[2 * i + 1];
    if (source) {
      args["memory." + layer + ".key"] = s.memory[2 * i];
      args["memory." + layer + ".value"] = s.memory[2 * i + 1];
    }
  }
  if (source) {
    args["memory_starts"] = intTensor(in.memoryStarts);
    args["memory_lengths"] = intTensor(in.memoryLengths);
  }
  std::vector<HostTensor> out = s.run(s.decodeFn, std::move(args));

  // Append the new keys and values; return each hypothesis' last logits.
  const auto width = static_cast<size_t>(s.rowWidth);
  const auto slot = static_cast<size_t>(s.book->capacity());
  for (int64_t i = 0; i < 2 * s.layers; ++i) {
    const HostTensor &present = out[1 + i];
    HostTensor &cache = s.cache[i];
    for (size_t h = 0; h < n; ++h) {
      size_t from = static_cast<size_t>(in.cuSeqlens[h]) * width;
      size_t to = (h * slot + static_cast<size_t>(s.book->cached(h))) * width;
      std::copy_n(present.floats.begin() + static_cast<long>(from), tokens[h].size() * width,
                  cache.floats.begin() + static_cast<long>(to));
    }
  }
  s.book->advance(tokens);
  const HostTensor &logits = out[0];
  const auto vocab = static_cast<size_t>(s.desc.vocab);
  std::vector<float> result(n * vocab);
  for (size_t h = 0; h < n; ++h) {
    size_t row = static_cast<size_t>(in.cuSeqlens[h + 1] - 1);
    for (size_t j = 0; j < vocab; ++j)
      result[h * vocab + j] = static_cast<float>(logits.floats[row * vocab + j]);
  }
  return result;
}

void ReferenceDecoder::select(const std::vector<int32_t> &parent) {
  State &s = *state;
  s.book->select(parent); // checks the parents; hypothesis i now holds parent[i]'s length
  const size_t slot = static_cast<size_t>(s.book->capacity()) * static_cast<size_t>(s.rowWidth);
  for (HostTensor &cache : s.cache) {
    HostTensor next = s.emptyCache(parent.size());
    for (size_t i = 0; i < parent.size(); ++i)
      std::copy_n(cache.floats.begin() + static_cast<long>(static_cast<size_t>(parent[i]) * slot),
                  static_cast<size_t>(s.book->cached(i)) * static_cast<size_t>(s.rowWidth),
                  next.floats.begin() + static_cast<long>(i * slot));
    cache = std::move(next);
  }
}

} // namespace ls2c::generation
