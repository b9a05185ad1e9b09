//===- Safetensors.cpp - read and write the safetensors format ------------===//
#include "ls2c/Support/Safetensors.h"

#include "ls2c/Support/AtomicFile.h"

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

namespace ls2c {

namespace {

using json = nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100u << 20;

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw SafetensorsError(path + ": " + what);
}

/// numel * elementBytes, or fail on overflow or a negative dim.
uint64_t byteSize(const std::string &path, const std::string &name,
                  const std::vector<int64_t> &shape, size_t elementBytes) {
  uint64_t bytes = elementBytes;
  for (int64_t d : shape) {
    if (d < 0)
      fail(path, "tensor '" + name + "' has a negative dim " +
                     std::to_string(d));
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
      fail(path, "tensor '" + name + "' is too large");
  }
  return bytes;
}

} // namespace

size_t safetensorsDtypeBytes(const std::string &dtype) {
  static const std::map<std::string, size_t> sizes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
      {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U8", 1},   {"BOOL", 1}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

namespace {

template <typename T>
void widen(const std::vector<uint8_t> &bytes, std::vector<double> &out) {
  for (size_t i = 0; i < out.size(); ++i) {
    T v;
    std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(v);
  }
}

template <typename T>
void widenInts(const std::vector<uint8_t> &bytes, std::vector<int64_t> &out) {
  for (size_t i = 0; i < out.size(); ++i) {
    T v;
    std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<int64_t>(v);
  }
}

} // namespace

std::vector<double> floatValues(const SafetensorsTensor &t,
                                const std::string &what) {
  size_t bytes = safetensorsDtypeBytes(t.dtype);
  std::vector<double> out(bytes ? t.data.size() / bytes : 0);
  if (t.dtype == "F64")
    widen<double>(t.data, out);
  else if (t.dtype == "F32")
    widen<float>(t.data, out);
  else
    throw SafetensorsError(what + ": dtype " + t.dtype +
                           " where F32 or F64 is required");
  return out;
}

std::vector<int64_t> intValues(const SafetensorsTensor &t,
                               const std::string &what) {
  size_t bytes = safetensorsDtypeBytes(t.dtype);
  std::vector<int64_t> out(bytes ? t.data.size() / bytes : 0);
  if (t.dtype == "I64")
    widenInts<int64_t>(t.data, out);
  else if (t.dtype == "I32")
    widenInts<int32_t>(t.data, out);
  else if (t.dtype == "I16")
    widenInts<int16_t>(t.data, out);
  else if (t.dtype == "I8")
    widenInts<int8_t>(t.data, out);
  else if (t.dtype == "U8")
    widenInts<uint8_t>(t.data, out);
  else
    throw SafetensorsError(what + ": dtype " + t.dtype +
                           " where an integer dtype is required");
  return out;
}

SafetensorsTensor floatTensor(const std::string &dtype,
                              std::vector<int64_t> shape, const double *values,
                              size_t count) {
  SafetensorsTensor t{dtype, std::move(shape), {}};
  if (dtype == "F64") {
    t.data.resize(count * 8);
    std::memcpy(t.data.data(), values, count * 8);
  } else if (dtype == "F32") {
    t.data.resize(count * 4);
    for (size_t i = 0; i < count; ++i) {
      float f = static_cast<float>(values[i]);
      std::memcpy(t.data.data() + 4 * i, &f, 4);
    }
  } else {
    throw SafetensorsError("floatTensor: dtype " + dtype +
                           " is not F32 or F64");
  }
  return t;
}

void writeSafetensors(const std::string &path, const SafetensorsFile &file) {
  json header = json::object();
  uint64_t offset = 0;
  for (const auto &[name, t] : file.tensors) {
    if (name == "__metadata__" || name.empty())
      fail(path, "invalid tensor name '" + name + "'");
    size_t elementBytes = safetensorsDtypeBytes(t.dtype);
    if (!elementBytes)
      fail(path, "tensor '" + name + "' has unknown dtype '" + t.dtype + "'");
    uint64_t bytes = byteSize(path, name, t.shape, elementBytes);
    if (bytes != t.data.size())
      fail(path, "tensor '" + name + "' holds " + std::to_string(t.data.size()) +
                     " bytes but its shape needs " + std::to_string(bytes));
    header[name] = {{"dtype", t.dtype},
                    {"shape", t.shape},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  if (!file.metadata.empty())
    header["__metadata__"] = file.metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');

  std::string out;
  out.reserve(8 + text.size() + offset);
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += text;
  for (const auto &entry : file.tensors)
    out.append(reinterpret_cast<const char *>(entry.second.data.data()),
               entry.second.data.size());
  try {
    writeFileAtomically(path, out);
  } catch (const FileWriteError &e) {
    throw SafetensorsError(e.what());
  }
}

SafetensorsFile readSafetensors(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    fail(path, S_ISDIR(st.st_mode) ? "is a directory" : "is not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  if (in.bad())
    fail(path, "read error");
  if (bytes.size() < 8)
    fail(path, "too short for a safetensors header (" +
                   std::to_string(bytes.size()) + " bytes)");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i])) << (8 * i);
  if (n > kMaxHeaderBytes || n > bytes.size() - 8)
    fail(path, "header length " + std::to_string(n) + " exceeds the file (" +
                   std::to_string(bytes.size()) +
                   " bytes) or the 100 MB limit: not a safetensors file, or a truncated one");

  // nlohmann ends the document at a NUL: what follows would go unread.
  if (const void *nul = std::memchr(bytes.data() + 8, 0, n))
    fail(path, "header holds a NUL byte at file offset " +
                   std::to_string(static_cast<const char *>(nul) - bytes.data()) +
                   " (headers are JSON, padded with spaces)");
  // Readers disagree on which of two equal keys wins: refused, at any depth.
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  auto noDuplicates = [&](int, json::parse_event_t event, json &parsed) {
    if (event == json::parse_event_t::object_start)
      keys.emplace_back();
    else if (event == json::parse_event_t::object_end)
      keys.pop_back();
    else if (event == json::parse_event_t::key) {
      std::string key = parsed.get<std::string>();
      if (!keys.back().insert(key).second && duplicate.empty())
        duplicate = std::move(key);
    }
    return true;
  };
  json header;
  try {
    header = json::parse(bytes.begin() + 8, bytes.begin() + 8 + n, noDuplicates);
  } catch (const json::exception &e) {
    fail(path, std::string("header is not valid JSON: ") + e.what());
  }
  if (!duplicate.empty())
    fail(path, "header names '" + duplicate + "' twice");
  if (!header.is_object())
    fail(path, "header is not a JSON object");

  SafetensorsFile file;
  const uint64_t dataBytes = bytes.size() - 8 - n;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto &[name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object())
        fail(path, "__metadata__ is not an object");
      for (auto &[key, value] : entry.items()) {
        if (!value.is_string())
          fail(path, "__metadata__." + key + " is not a string");
        file.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    if (!entry.is_object() || !entry.contains("dtype") ||
        !entry.contains("shape") || !entry.contains("data_offsets") ||
        !entry["dtype"].is_string() || !entry["shape"].is_array() ||
        !entry["data_offsets"].is_array() || entry["data_offsets"].size() != 2)
      fail(path, "tensor '" + name +
                     "' needs dtype (string), shape (array) and "
                     "data_offsets ([begin, end])");
    SafetensorsTensor t;
    t.dtype = entry["dtype"].get<std::string>();
    size_t elementBytes = safetensorsDtypeBytes(t.dtype);
    if (!elementBytes)
      fail(path, "tensor '" + name + "' has dtype '" + t.dtype +
                     "', which ls2c does not read (F64, F32, F16, BF16, I64, I32, I16, I8, U8, "
                     "BOOL)");
    for (const json &d : entry["shape"]) {
      if (!d.is_number_integer())
        fail(path, "tensor '" + name + "' has a non-integer dim");
      t.shape.push_back(d.get<int64_t>());
    }
    const json &offsets = entry["data_offsets"];
    if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
      fail(path, "tensor '" + name + "' has data_offsets that are not non-negative integers");
    uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    if (begin > end || end > dataBytes)
      fail(path, "tensor '" + name + "' data_offsets [" +
                     std::to_string(begin) + ", " + std::to_string(end) +
                     ") lie outside the " + std::to_string(dataBytes) +
                     " data bytes");
    uint64_t expected = byteSize(path, name, t.shape, elementBytes);
    if (end - begin != expected)
      fail(path, "tensor '" + name + "' spans " + std::to_string(end - begin) +
                     " bytes but its shape needs " + std::to_string(expected));
    t.data.assign(bytes.begin() + 8 + n + begin, bytes.begin() + 8 + n + end);
    ranges.push_back({begin, end});
    file.tensors.emplace(name, std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t covered = 0;
  for (auto [begin, end] : ranges) {
    if (begin != covered)
      fail(path, begin < covered ? "tensor data ranges overlap"
                                 : "tensor data ranges leave a gap");
    covered = end;
  }
  if (covered != dataBytes)
    fail(path, std::to_string(dataBytes - covered) +
                   " trailing bytes follow the last tensor");
  return file;
}

} // namespace ls2c
