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
    fail(path, "header length " + std::to_string(n) +
                   " exceeds the file or the 100 MB limit");

  json header;
  try {
    header = json::parse(bytes.begin() + 8, bytes.begin() + 8 + n);
  } catch (const json::exception &e) {
    fail(path, std::string("header is not valid JSON: ") + e.what());
  }
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
      fail(path, "tensor '" + name + "' has unknown dtype '" + t.dtype + "'");
    for (const json &d : entry["shape"]) {
      if (!d.is_number_integer())
        fail(path, "tensor '" + name + "' has a non-integer dim");
      t.shape.push_back(d.get<int64_t>());
    }
    const json &offsets = entry["data_offsets"];
    if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
      fail(path, "tensor '" + name + "' has non-integer data_offsets");
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
