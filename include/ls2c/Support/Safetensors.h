//===- Safetensors.h - read and write the safetensors checkpoint format ---===//
//
// The format of Hugging Face's safetensors: an 8-byte little-endian header
// length N, N bytes of JSON mapping each tensor name to {"dtype", "shape",
// "data_offsets": [begin, end)} (offsets relative to the end of the header;
// an optional "__metadata__" object of string values), then the raw
// row-major little-endian data. Files are written atomically; reading
// validates everything before returning. No MLIR dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_SUPPORT_SAFETENSORS_H
#define LS2C_SUPPORT_SAFETENSORS_H

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace ls2c {

/// A malformed, truncated or unreadable file, or a tensor that cannot be
/// written; what() names the file and the rule broken.
class SafetensorsError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Element types, spelled as in the format: "F64", "F32", "F16", "BF16",
/// "I64", "I32", "I16", "I8", "U8", "BOOL".
/// Returns the element size in bytes, or 0 for an unknown spelling.
size_t safetensorsDtypeBytes(const std::string &dtype);

struct SafetensorsTensor {
  std::string dtype;          ///< e.g. "F32"
  std::vector<int64_t> shape; ///< row-major; {} is a scalar
  std::vector<uint8_t> data;  ///< exactly numel * dtype bytes, little-endian
};

/// A tensor's values as double: F64 exactly, F32 widened. Throws
/// SafetensorsError naming `what` for any other dtype.
std::vector<double> floatValues(const SafetensorsTensor &tensor,
                                const std::string &what);
/// A tensor's values as int64: I64, I32, I16, I8 or U8. Throws
/// SafetensorsError naming `what` for any other dtype, BOOL included (ids,
/// positions, labels and offsets are integers, not flags).
std::vector<int64_t> intValues(const SafetensorsTensor &tensor,
                               const std::string &what);
/// An "F64" or "F32" tensor (rounded to nearest) holding `values`.
SafetensorsTensor floatTensor(const std::string &dtype,
                              std::vector<int64_t> shape,
                              const double *values, size_t count);

struct SafetensorsFile {
  /// Tensors by name, in name order (the order the format's JSON implies).
  std::map<std::string, SafetensorsTensor> tensors;
  std::map<std::string, std::string> metadata;
};

/// Writes `file` to `path` atomically (temporary file + rename). Data are
/// laid out in name order, the header padded with spaces to 8 bytes.
/// Throws SafetensorsError (bad dtype, data size not matching the shape,
/// write failure).
void writeSafetensors(const std::string &path, const SafetensorsFile &file);

/// Reads and validates `path`: header length within the file and at most
/// 100 MB, valid JSON object without NUL bytes or a key given twice in any
/// object (readers disagree on which wins), known dtypes, non-negative shapes whose byte
/// size equals the data range, ranges inside the data, covering it without
/// gaps or overlap. Throws SafetensorsError.
SafetensorsFile readSafetensors(const std::string &path);

} // namespace ls2c

#endif // LS2C_SUPPORT_SAFETENSORS_H
