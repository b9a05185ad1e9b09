//===- DeviceTensors.h - host values to and from device tensors -----------===//
//
// What the GPU tools (ls2c-gpu-step, ls2c-gpu-train) share to feed a
// runtime::Executor: device tensors with their actual shapes, host values
// (as double) encoded in a program dtype and back (fp16/bf16 round to
// nearest even), sizes of a function's tensors at their bounds and a
// result's shape in a call. No MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TOOLS_COMMON_DEVICETENSORS_H
#define LS2C_TOOLS_COMMON_DEVICETENSORS_H

#include "ls2c/Runtime/Executor.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ls2c::tools {

/// A tensor on the device: its storage (at least its bound) and actual shape.
struct DeviceTensor {
  runtime::DeviceBuffer buffer;
  std::vector<int64_t> shape;
  runtime::DType dtype = runtime::DType::F32;
};

/// Elements of `shape` (1 for a scalar).
size_t numel(const std::vector<int64_t> &shape);
/// Bytes of a function argument or result at its bound shape.
size_t specBytes(const runtime::TensorSpec &spec);
/// A result's shape in `call` (dynamic dims from the arguments' shapes).
std::vector<int64_t> resultShape(const runtime::TensorSpec &spec,
                                 const runtime::Executor::Call &call);

/// A call of `f` with its arguments bound by name, from `state` first, then
/// `inputs` (results left to the caller). Throws runtime::RuntimeError
/// naming an argument that neither holds.
runtime::Executor::Call bindArguments(const runtime::Function &f,
                                      const std::map<std::string, DeviceTensor> &state,
                                      const std::map<std::string, DeviceTensor> &inputs);

/// Binds `call`'s results: a result named like a `state` tensor is written
/// over that state's buffer when the compiler allows it (TensorSpec::
/// inPlaceOf names the argument bound to it), else goes to its buffer in
/// `spare` (the caller swaps state and spare after the run, adoptResults,
/// so the calls' pointers repeat and CUDA graphs replay); any other goes to
/// `outputs`. A buffer is reused when it holds the result's bound shape and
/// reallocated otherwise. Sets each tensor's shape and dtype.
void bindResults(const runtime::Function &f, runtime::Executor::Call &call,
                 const std::map<std::string, DeviceTensor> &state,
                 std::map<std::string, DeviceTensor> &spare,
                 std::map<std::string, DeviceTensor> &outputs);

/// True when bindResults writes result `spec` over its state's buffer.
bool writesStateInPlace(const runtime::Function &f, const runtime::TensorSpec &spec,
                        const std::map<std::string, DeviceTensor> &state);

/// After a run: each state result written to its spare becomes the state
/// (the old buffer the spare of the next call); those written in place
/// already are.
void adoptResults(const runtime::Function &f, std::map<std::string, DeviceTensor> &state,
                  std::map<std::string, DeviceTensor> &spare);

/// `values` as `dtype` bytes, little-endian (integers truncated toward zero).
std::vector<uint8_t> encodeValues(const std::vector<double> &values, runtime::DType dtype);
/// `n` floats as `dtype` bytes (float dtypes only): the fast path for fp32
/// weight vectors (fp16/bf16 by FloatFormats.h's bit-level encoders).
/// Throws runtime::RuntimeError for an integer dtype.
std::vector<uint8_t> encodeFloats(const float *values, size_t n, runtime::DType dtype);
/// The inverse of encodeValues.
std::vector<double> decodeValues(const std::vector<uint8_t> &bytes, runtime::DType dtype);

/// A new device tensor holding `values` in `dtype`, with room for at least
/// `capacityBytes`; `what` names it in an out-of-memory error.
DeviceTensor uploadTensor(const std::vector<double> &values, const std::vector<int64_t> &shape,
                          runtime::DType dtype, size_t capacityBytes, const std::string &what);
/// A new F32 device tensor holding `values` as they are (no host copy in
/// another encoding: a 1.3B-parameter workspace is 5.2 GB); `what` names it
/// in an out-of-memory error.
DeviceTensor uploadFloats(const std::vector<float> &values, const std::vector<int64_t> &shape,
                          const std::string &what);
/// A new device tensor of `shape` and `dtype` whose bytes are all 0 (0.0 in
/// every float dtype), with room for at least `capacityBytes`; filled on the
/// device, so a multi-GB optimizer state costs no host memory.
DeviceTensor zeroTensor(const std::vector<int64_t> &shape, runtime::DType dtype,
                        size_t capacityBytes, const std::string &what);
/// The tensor's values (its actual shape's elements).
std::vector<double> downloadTensor(const DeviceTensor &t);

} // namespace ls2c::tools

#endif // LS2C_TOOLS_COMMON_DEVICETENSORS_H
