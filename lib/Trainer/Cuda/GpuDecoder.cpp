//===- GpuDecoder.cpp - @encode / @decode through the runtime -------------===//
#include "GpuDecoder.h"

#include "ls2c/Model/ParameterLayout.h"

#include <algorithm>

namespace ls2c::tools {

using runtime::DeviceBuffer;
using runtime::DeviceTensor;
using runtime::Executor;
using runtime::Function;
using runtime::RuntimeError;
using runtime::TensorSpec;

namespace {

void check(cudaError_t e, const std::string &what) {
  if (e != cudaSuccess)
    throw RuntimeError(what + ": " + cudaGetErrorString(e));
}

const Function *findFunction(const runtime::Program &p, const std::string &name) {
  for (const Function &f : p.functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

const TensorSpec &argumentSpec(const Function &f, const std::string &name) {
  for (const TensorSpec &s : f.arguments)
    if (s.name == name)
      return s;
  throw RuntimeError("@" + f.name + " has no argument '" + name + "'");
}

std::string layerName(const char *what, int64_t layer, const char *part) {
  return std::string(what) + "." + std::to_string(layer) + "." + part;
}

/// `program`, once it holds the decoding functions of `d` (checked before
/// the executor loads anything on the device).
runtime::Program decodingProgram(runtime::Program program, const ModelDescription &d) {
  if (!findFunction(program, "decode"))
    throw generation::GenerationError(
        "the bundle has no @decode: compile one with ls2c compile MODEL.json --program=decode");
  if ((d.architecture == Architecture::EncoderDecoder) != (findFunction(program, "encode") != nullptr))
    throw generation::GenerationError("the bundle's functions do not fit a " +
                                      std::string(toString(d.architecture)) + " model");
  return program;
}

} // namespace

GpuDecoder::GpuDecoder(runtime::Program program, const ModelDescription &d,
                       const std::map<std::string, reference::HostTensor> &weights, bool graphs)
    : desc(d), executor(decodingProgram(std::move(program), d)),
      book(d, d.architecture == Architecture::EncoderDecoder) {
  decodeFn = findFunction(executor.program(), "decode");
  encodeFn = findFunction(executor.program(), "encode");
  executor.setGraphs(graphs);
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  const TensorSpec &past = argumentSpec(*decodeFn, "past.0.key");
  rowBytes = static_cast<size_t>(d.kv_heads * d.headDim()) * runtime::dtypeBytes(past.dtype);
  for (const Function *f : {encodeFn, decodeFn}) {
    if (!f)
      continue;
    for (const TensorSpec &s : f->arguments) {
      if (s.kind == runtime::ArgumentKind::Input || parameters.count(s.name))
        continue;
      auto it = weights.find(s.name);
      if (it == weights.end())
        throw RuntimeError("no value for parameter '" + s.name + "'");
      std::vector<int64_t> shape(s.maxShape.begin(), s.maxShape.end());
      if (it->second.shape != shape)
        throw RuntimeError("parameter '" + s.name + "' is " + it->second.describe() +
                           ", the bundle's differs");
      parameters[s.name] = uploadTensor(it->second.floats, shape, s.dtype, 0, s.name);
    }
  }
}

GpuDecoder::~GpuDecoder() {
  if (stream)
    cudaStreamDestroy(stream);
}

void GpuDecoder::setInput(const Function &f, const std::string &name,
                          const std::vector<int32_t> &values) {
  const TensorSpec &s = argumentSpec(f, name);
  DeviceTensor &t = inputs[f.name + "/" + name];
  if (t.buffer.size() < std::max<size_t>(specBytes(s), 1))
    t.buffer = DeviceBuffer(specBytes(s), "input " + name);
  t.shape = {static_cast<int64_t>(values.size())};
  t.dtype = s.dtype;
  if (static_cast<int64_t>(values.size()) > s.maxShape[0])
    throw generation::GenerationError(name + ": " + std::to_string(values.size()) +
                                      " entries, past the bound " +
                                      std::to_string(s.maxShape[0]));
  std::vector<uint8_t> bytes = encodeValues(std::vector<double>(values.begin(), values.end()),
                                            s.dtype);
  if (!bytes.empty())
    t.buffer.upload(bytes.data(), bytes.size());
}

/// The call of `f`: parameters, then the tensors of `byName`, then the
/// inputs set for `f`; results into this decoder's result buffers.
static Executor::Call makeCall(const Function &f,
                               const std::map<std::string, DeviceTensor> &parameters,
                               const std::map<std::string, DeviceTensor> &inputs,
                               const std::map<std::string, const DeviceTensor *> &byName,
                               std::map<std::string, DeviceTensor> &results) {
  Executor::Call c;
  for (const TensorSpec &s : f.arguments) {
    const DeviceTensor *t = nullptr;
    if (auto it = parameters.find(s.name); it != parameters.end())
      t = &it->second;
    else if (auto jt = byName.find(s.name); jt != byName.end())
      t = jt->second;
    else if (auto kt = inputs.find(f.name + "/" + s.name); kt != inputs.end())
      t = &kt->second;
    if (!t)
      throw RuntimeError("no value for @" + f.name + " argument '" + s.name + "'");
    c.arguments.push_back(t->buffer.data());
    c.argumentShapes.push_back(t->shape);
  }
  for (const TensorSpec &s : f.results) {
    DeviceTensor &t = results[f.name + "/" + s.name];
    if (t.buffer.size() < std::max<size_t>(specBytes(s), 1))
      t.buffer = DeviceBuffer(specBytes(s), "result " + s.name);
    t.shape = resultShape(s, c);
    t.dtype = s.dtype;
    c.results.push_back(t.buffer.data());
  }
  return c;
}

void GpuDecoder::encode(const std::vector<std::vector<int32_t>> &sources) {
  generation::DecodingState::Sources in = book.encode(sources);
  setInput(*encodeFn, "src_ids", in.ids);
  setInput(*encodeFn, "src_position_ids", in.positions);
  setInput(*encodeFn, "src_cu_seqlens", in.cuSeqlens);
  // The memory stays in @encode's result buffers until the next encode().
  Executor::Call call = makeCall(*encodeFn, parameters, inputs, {}, results);
  executor.run("encode", call, stream);
}

void GpuDecoder::reserve(int set, size_t hypotheses) {
  if (slots[set] >= hypotheses)
    return;
  cache[set].clear();
  size_t bytes = hypotheses * static_cast<size_t>(desc.max_seq_len) * rowBytes;
  for (int64_t i = 0; i < 2 * desc.decoder_layers; ++i)
    cache[set].emplace_back(bytes, "the KV cache (" + std::to_string(hypotheses) +
                                       " hypotheses of " + std::to_string(desc.max_seq_len) +
                                       " tokens)");
  slots[set] = hypotheses;
}

void GpuDecoder::start(const std::vector<int32_t> &sources) {
  book.start(sources);
  reserve(current, sources.size());
}

void GpuDecoder::copies(const std::vector<void *> &dst, const std::vector<const void *> &src,
                        const std::vector<size_t> &bytes) {
  if (dst.empty())
    return;
  cudaMemcpyAttributes attr{};
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  size_t index = 0;
  cudaError_t e = cudaMemcpyBatchAsync(const_cast<void *const *>(dst.data()),
                                       const_cast<const void *const *>(src.data()), bytes.data(),
                                       dst.size(), &attr, &index, 1, stream);
  if (e == cudaErrorNotSupported || e == cudaErrorInvalidValue) {
    // Older drivers: one copy each.
    (void)cudaGetLastError();
    for (size_t i = 0; i < dst.size(); ++i)
      check(cudaMemcpyAsync(dst[i], src[i], bytes[i], cudaMemcpyDeviceToDevice, stream),
            "copying cache rows");
    return;
  }
  check(e, "copying cache rows (cudaMemcpyBatchAsync)");
}

std::vector<float> GpuDecoder::step(const std::vector<std::vector<int32_t>> &tokens) {
  const generation::DecodingState::Step in = book.step(tokens);
  const size_t n = book.hypotheses();
  const auto capacity = static_cast<size_t>(book.capacity());
  const bool source = encodeFn != nullptr;
  const Function &f = *decodeFn;
  setInput(f, source ? "tgt_ids" : "input_ids", in.ids);
  setInput(f, source ? "tgt_position_ids" : "position_ids", in.positions);
  setInput(f, source ? "tgt_cu_seqlens" : "cu_seqlens", in.cuSeqlens);
  setInput(f, "cache_starts", in.cacheStarts);
  setInput(f, "cache_lengths", in.cacheLengths);
  std::map<std::string, const DeviceTensor *> byName;
  if (source) {
    setInput(f, "memory_starts", in.memoryStarts);
    setInput(f, "memory_lengths", in.memoryLengths);
    for (const TensorSpec &s : encodeFn->results)
      byName[s.name] = &results.at("encode/" + s.name);
  }
  // The caches bind as [hypotheses x max_seq_len, kv_heads, head_dim].
  std::vector<int64_t> pastShape = {static_cast<int64_t>(n * capacity), desc.kv_heads,
                                    desc.headDim()};
  for (int64_t i = 0; i < desc.decoder_layers; ++i)
    for (const char *part : {"key", "value"})
      byName[layerName("past", i, part)] = &placeholder;
  Executor::Call call = makeCall(f, parameters, inputs, byName, results);
  for (size_t a = 0; a < f.arguments.size(); ++a) {
    const std::string &name = f.arguments[a].name;
    if (name.rfind("past.", 0) != 0)
      continue;
    int64_t layer = std::stoll(name.substr(5));
    int part = name.size() > 4 && name.compare(name.size() - 5, 5, "value") == 0 ? 1 : 0;
    call.arguments[a] = cache[current][static_cast<size_t>(2 * layer + part)].data();
    call.argumentShapes[a] = pastShape;
  }
  executor.run("decode", call, stream);

  // Append the present keys and values to each hypothesis' cache slot.
  for (int64_t i = 0; i < desc.decoder_layers; ++i)
    for (int part = 0; part < 2; ++part) {
      const DeviceTensor &present =
          results.at("decode/" + layerName("present", i, part ? "value" : "key"));
      auto *base = static_cast<char *>(cache[current][static_cast<size_t>(2 * i + part)].data());
      const auto *from = static_cast<const char *>(present.buffer.data());
      if (in.lockstep) {
        check(cudaMemcpy2DAsync(base + static_cast<size_t>(book.cached(0)) * rowBytes,
                                capacity * rowBytes, from, rowBytes,
                                rowBytes, n, cudaMemcpyDeviceToDevice, stream),
              "appending to the KV cache");
        continue;
      }
      std::vector<void *> dst;
      std::vector<const void *> src;
      std::vector<size_t> bytes;
      for (size_t h = 0; h < n; ++h) {
        dst.push_back(base + (h * capacity + static_cast<size_t>(book.cached(h))) * rowBytes);
        src.push_back(from + static_cast<size_t>(in.cuSeqlens[h]) * rowBytes);
        bytes.push_back(tokens[h].size() * rowBytes);
      }
      copies(dst, src, bytes);
    }
  book.advance(tokens);
  check(cudaStreamSynchronize(stream), "decode step");
  const DeviceTensor &logits = results.at("decode/logits");
  std::vector<double> all = downloadTensor(logits);
  const auto vocab = static_cast<size_t>(desc.vocab);
  std::vector<float> out(n * vocab);
  for (size_t h = 0; h < n; ++h) {
    size_t row = static_cast<size_t>(in.cuSeqlens[h + 1] - 1);
    for (size_t j = 0; j < vocab; ++j)
      out[h * vocab + j] = static_cast<float>(all[row * vocab + j]);
  }
  return out;
}

void GpuDecoder::select(const std::vector<int32_t> &parent) {
  book.select(parent); // checks the parents; hypothesis i now holds parent[i]'s length
  const int next = 1 - current;
  reserve(next, parent.size());
  const size_t slot = static_cast<size_t>(desc.max_seq_len) * rowBytes;
  std::vector<void *> dst;
  std::vector<const void *> src;
  std::vector<size_t> bytes;
  for (size_t t = 0; t < cache[current].size(); ++t)
    for (size_t i = 0; i < parent.size(); ++i) {
      size_t used = static_cast<size_t>(book.cached(i)) * rowBytes;
      if (used == 0)
        continue;
      dst.push_back(static_cast<char *>(cache[next][t].data()) + i * slot);
      src.push_back(static_cast<const char *>(cache[current][t].data()) +
                    static_cast<size_t>(parent[i]) * slot);
      bytes.push_back(used);
    }
  copies(dst, src, bytes);
  current = next;
}

} // namespace ls2c::tools
