//===- DeviceTensors.h - host values to and from device tensors -----------===//
//
// What callers of a Executor share (ls2c-gpu-step,
// ls2c-seq-parallel, ls2c-gpu-train and the GPU engine of `ls2c train`):
// device tensors with their actual shapes, host values (as double) encoded
// in a program dtype and back (fp16/bf16 round to nearest even,
// ls2c/Support/FloatFormats.h), sizes of a function's tensors at their
// bounds and a result's shape in a call, and a call's arguments and results
// bound by name. No MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_DEVICETENSORS_H
#define LS2C_RUNTIME_DEVICETENSORS_H

#include "ls2c/Runtime/Executor.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ls2c::runtime {

/// A tensor on the device: its storage (at least its bound) and actual shape.
struct DeviceTensor {
  DeviceBuffer buffer;
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
};

/// Elements of `shape` (1 for a scalar).
size_t numel(const std::vector<int64_t> &shape);
/// Bytes of a function argument or result at its bound shape.
size_t specBytes(const TensorSpec &spec);
/// A result's shape in `call` (dynamic dims from the arguments' shapes).
std::vector<int64_t> resultShape(const TensorSpec &spec, const Executor::Call &call);

/// A call of `f` with its arguments bound by name, from `state` first, then
/// `inputs` (results left to the caller). Throws RuntimeError naming an
/// argument that neither holds.
Executor::Call bindArguments(const Function &f,
                             const std::map<std::string, DeviceTensor> &state,
                             const std::map<std::string, DeviceTensor> &inputs);

/// Binds `call`'s results: a result named like a `state` tensor is written
/// over that state's buffer when the compiler allows it (TensorSpec::
/// inPlaceOf names the argument bound to it), else goes to its buffer in
/// `spare` (the caller swaps state and spare after the run, adoptResults,
/// so the calls' pointers repeat and CUDA graphs replay); any other goes to
/// `outputs`. A buffer is reused when it holds the result's bound shape and
/// reallocated otherwise. Sets each tensor's shape and dtype.
void bindResults(const Function &f, Executor::Call &call,
                 const std::map<std::string, DeviceTensor> &state,
                 std::map<std::string, DeviceTensor> &spare,
                 std::map<std::string, DeviceTensor> &outputs);

/// True when bindResults writes result `spec` over its state's buffer.
bool writesStateInPlace(const Function &f, const TensorSpec &spec,
                        const std::map<std::string, DeviceTensor> &state);

/// After a run: each state result written to its spare becomes the state
/// (the old buffer the spare of the next call); those written in place
/// already are.
void adoptResults(const Function &f, std::map<std::string, DeviceTensor> &state,
                  std::map<std::string, DeviceTensor> &spare);

/// `values` as `dtype` bytes, little-endian (integers truncated toward zero).
std::vector<uint8_t> encodeValues(const std::vector<double> &values, DType dtype);
/// `n` floats as `dtype` bytes (float dtypes only): the fast path for fp32
/// weight vectors (fp16/bf16 by FloatFormats.h's bit-level encoders).
/// Throws RuntimeError for an integer dtype.
std::vector<uint8_t> encodeFloats(const float *values, size_t n, DType dtype);
/// The inverse of encodeValues.
std::vector<double> decodeValues(const std::vector<uint8_t> &bytes, DType dtype);

/// A new device tensor holding `values` in `dtype`, with room for at least
/// `capacityBytes`; `what` names it in an out-of-memory error.
DeviceTensor uploadTensor(const std::vector<double> &values, const std::vector<int64_t> &shape,
                          DType dtype, size_t capacityBytes, const std::string &what);
/// A new F32 device tensor holding `values` as they are (no host copy in
/// another encoding: a 1.3B-parameter workspace is 5.2 GB); `what` names it
/// in an out-of-memory error.
DeviceTensor uploadFloats(const std::vector<float> &values, const std::vector<int64_t> &shape,
                          const std::string &what);
/// A new device tensor of `shape` and `dtype` whose bytes are all 0 (0.0 in
/// every float dtype), with room for at least `capacityBytes`; filled on the
/// device, so a multi-GB optimizer state costs no host memory.
DeviceTensor zeroTensor(const std::vector<int64_t> &shape, DType dtype,
                        size_t capacityBytes, const std::string &what);
/// The tensor's values (its actual shape's elements).
std::vector<double> downloadTensor(const DeviceTensor &t);

} // namespace ls2c::runtime

#endif // LS2C_RUNTIME_DEVICETENSORS_H
