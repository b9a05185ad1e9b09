//===- DeviceTensors.cpp - host values to and from device tensors ---------===//

#include "ls2c/Runtime/DeviceTensors.h"

#include "ls2c/Support/FloatFormats.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

namespace ls2c::runtime {

size_t numel(const std::vector<int64_t> &shape) {
  size_t n = 1;
  for (int64_t d : shape)
    n *= static_cast<size_t>(d);
  return n;
}

std::vector<uint8_t> encodeFloats(const float *values, size_t n, DType dtype) {
  std::vector<uint8_t> out(n * dtypeBytes(dtype));
  switch (dtype) {
  case DType::F32:
    std::memcpy(out.data(), values, n * 4);
    return out;
  case DType::F64:
    for (size_t i = 0; i < n; ++i) {
      double x = values[i];
      std::memcpy(out.data() + 8 * i, &x, 8);
    }
    return out;
  case DType::F16:
  case DType::BF16: {
    auto encode = dtype == DType::F16 ? floatToF16Bits : floatToBF16Bits;
    for (size_t i = 0; i < n; ++i) {
      uint16_t x = encode(values[i]);
      std::memcpy(out.data() + 2 * i, &x, 2);
    }
    return out;
  }
  default:
    throw RuntimeError(std::string("encodeFloats: ") + dtypeName(dtype) + " is not a float dtype");
  }
}

std::vector<uint8_t> encodeValues(const std::vector<double> &values, DType dtype) {
  std::vector<uint8_t> out(values.size() * dtypeBytes(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    uint8_t *p = out.data() + i * dtypeBytes(dtype);
    switch (dtype) {
    case DType::F32: {
      float x = static_cast<float>(values[i]);
      std::memcpy(p, &x, 4);
      break;
    }
    case DType::F64:
      std::memcpy(p, &values[i], 8);
      break;
    case DType::F16: {
      uint16_t x = toF16Bits(values[i]);
      std::memcpy(p, &x, 2);
      break;
    }
    case DType::BF16: {
      uint16_t x = toBF16Bits(values[i]);
      std::memcpy(p, &x, 2);
      break;
    }
    case DType::I32: {
      int32_t x = static_cast<int32_t>(values[i]);
      std::memcpy(p, &x, 4);
      break;
    }
    case DType::I64: {
      int64_t x = static_cast<int64_t>(values[i]);
      std::memcpy(p, &x, 8);
      break;
    }
    case DType::I1:
      *p = values[i] != 0;
      break;
    }
  }
  return out;
}

std::vector<double> decodeValues(const std::vector<uint8_t> &bytes, DType dtype) {
  size_t n = bytes.size() / dtypeBytes(dtype);
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t *p = bytes.data() + i * dtypeBytes(dtype);
    switch (dtype) {
    case DType::F32: {
      float x;
      std::memcpy(&x, p, 4);
      out[i] = x;
      break;
    }
    case DType::F64:
      std::memcpy(&out[i], p, 8);
      break;
    case DType::F16: {
      uint16_t x;
      std::memcpy(&x, p, 2);
      out[i] = fromF16Bits(x);
      break;
    }
    case DType::BF16: {
      uint16_t x;
      std::memcpy(&x, p, 2);
      out[i] = fromBF16Bits(x);
      break;
    }
    case DType::I32: {
      int32_t x;
      std::memcpy(&x, p, 4);
      out[i] = x;
      break;
    }
    case DType::I64: {
      int64_t x;
      std::memcpy(&x, p, 8);
      out[i] = static_cast<double>(x);
      break;
    }
    case DType::I1:
      out[i] = *p != 0;
      break;
    }
  }
  return out;
}

DeviceTensor uploadTensor(const std::vector<double> &values, const std::vector<int64_t> &shape,
                          DType dtype, size_t capacityBytes, const std::string &what) {
  DeviceTensor t;
  t.shape = shape;
  t.dtype = dtype;
  std::vector<uint8_t> bytes = encodeValues(values, dtype);
  t.buffer = DeviceBuffer(std::max(capacityBytes, bytes.size()), what);
  if (!bytes.empty())
    t.buffer.upload(bytes.data(), bytes.size());
  return t;
}

DeviceTensor uploadFloats(const std::vector<float> &values, const std::vector<int64_t> &shape,
                          const std::string &what) {
  DeviceTensor t;
  t.shape = shape;
  t.dtype = DType::F32;
  const size_t bytes = values.size() * sizeof(float);
  t.buffer = DeviceBuffer(std::max<size_t>(bytes, 1), what);
  if (bytes)
    t.buffer.upload(values.data(), bytes);
  return t;
}

DeviceTensor zeroTensor(const std::vector<int64_t> &shape, DType dtype, size_t capacityBytes,
                        const std::string &what) {
  DeviceTensor t;
  t.shape = shape;
  t.dtype = dtype;
  t.buffer = DeviceBuffer(std::max(capacityBytes, numel(shape) * dtypeBytes(dtype)), what);
  t.buffer.fill(0);
  // cudaMemset may return before it is done, and the callers' streams do not
  // wait for the legacy stream: the zeros land before any use.
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
    throw RuntimeError(what + ": zeroing it: " + cudaGetErrorString(e));
  return t;
}

std::vector<double> downloadTensor(const DeviceTensor &t) {
  std::vector<uint8_t> bytes(numel(t.shape) * dtypeBytes(t.dtype));
  if (!bytes.empty())
    t.buffer.download(bytes.data(), bytes.size());
  return decodeValues(bytes, t.dtype);
}

size_t specBytes(const TensorSpec &s) {
  return numel(s.maxShape) * dtypeBytes(s.dtype);
}

/// The shape of a result: its dims, dynamic ones from the call's arguments.
std::vector<int64_t> resultShape(const TensorSpec &s, const Executor::Call &call) {
  std::vector<int64_t> shape;
  for (const Dim &d : s.shape)
    shape.push_back(d.isStatic() ? d.size
                                 : call.argumentShapes[d.argument][d.axis] * d.multiplier /
                                       d.divisor);
  return shape;
}

Executor::Call bindArguments(const Function &f, const std::map<std::string, DeviceTensor> &state,
                             const std::map<std::string, DeviceTensor> &inputs) {
  Executor::Call c;
  for (const TensorSpec &spec : f.arguments) {
    const DeviceTensor *t = nullptr;
    if (auto it = state.find(spec.name); it != state.end())
      t = &it->second;
    else if (auto jt = inputs.find(spec.name); jt != inputs.end())
      t = &jt->second;
    if (!t)
      throw RuntimeError("no value for @" + f.name + " argument '" + spec.name + "'");
    c.arguments.push_back(t->buffer.data());
    c.argumentShapes.push_back(t->shape);
  }
  return c;
}

void bindResults(const Function &f, Executor::Call &call,
                 const std::map<std::string, DeviceTensor> &state,
                 std::map<std::string, DeviceTensor> &spare,
                 std::map<std::string, DeviceTensor> &outputs) {
  for (const TensorSpec &spec : f.results) {
    if (writesStateInPlace(f, spec, state)) {
      call.results.push_back(state.at(spec.name).buffer.data());
      continue;
    }
    DeviceTensor &t = state.count(spec.name) ? spare[spec.name] : outputs[spec.name];
    if (t.buffer.size() < std::max<size_t>(specBytes(spec), 1))
      t.buffer = DeviceBuffer(specBytes(spec), "result " + spec.name);
    t.shape = resultShape(spec, call);
    t.dtype = spec.dtype;
    call.results.push_back(t.buffer.data());
  }
}

bool writesStateInPlace(const Function &f, const TensorSpec &spec,
                        const std::map<std::string, DeviceTensor> &state) {
  // The argument bound from the same state tensor (bindArguments takes
  // state first), holding the result's bytes.
  auto it = state.find(spec.name);
  return spec.inPlaceOf >= 0 && static_cast<size_t>(spec.inPlaceOf) < f.arguments.size() &&
         f.arguments[static_cast<size_t>(spec.inPlaceOf)].name == spec.name &&
         it != state.end() && it->second.buffer.size() >= specBytes(spec);
}

void adoptResults(const Function &f, std::map<std::string, DeviceTensor> &state,
                  std::map<std::string, DeviceTensor> &spare) {
  for (const TensorSpec &spec : f.results)
    if (state.count(spec.name) && !writesStateInPlace(f, spec, state))
      std::swap(state[spec.name], spare[spec.name]);
}

} // namespace ls2c::runtime
