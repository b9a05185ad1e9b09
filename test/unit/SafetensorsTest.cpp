//===- SafetensorsTest.cpp - safetensors reader and writer ----------------===//
#include "ls2c/Support/Safetensors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <unistd.h>

namespace {

using ls2c::SafetensorsError;
using ls2c::SafetensorsFile;
using ls2c::SafetensorsTensor;

std::string tempPath(const char *name) {
  return std::string("/tmp/ls2c-st-") + std::to_string(::getpid()) + "-" + name;
}

SafetensorsTensor randomTensor(std::mt19937 &rng, const std::string &dtype,
                               std::vector<int64_t> shape) {
  SafetensorsTensor t{dtype, shape, {}};
  size_t n = ls2c::safetensorsDtypeBytes(dtype);
  for (int64_t d : shape)
    n *= static_cast<size_t>(d);
  for (size_t i = 0; i < n; ++i)
    t.data.push_back(static_cast<uint8_t>(rng()));
  return t;
}

void writeRaw(const std::string &path, const std::string &header,
              const std::string &data, int64_t declaredLength = -1) {
  std::ofstream out(path, std::ios::binary);
  uint64_t n = declaredLength < 0 ? header.size() : declaredLength;
  for (int i = 0; i < 8; ++i)
    out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << header << data;
}

void expectError(const std::string &path, const std::string &needle) {
  try {
    ls2c::readSafetensors(path);
    FAIL() << "expected SafetensorsError containing '" << needle << "'";
  } catch (const SafetensorsError &e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

TEST(Safetensors, RoundTripsRandomTensorsAndMetadata) {
  std::mt19937 rng(20261129);
  SafetensorsFile file;
  file.tensors["transformer.wte.weight"] = randomTensor(rng, "F32", {65, 64});
  file.tensors["transformer.h.0.ln_1.bias"] = randomTensor(rng, "BF16", {64});
  file.tensors["step"] = randomTensor(rng, "I64", {});
  file.tensors["empty"] = randomTensor(rng, "F16", {0, 7});
  file.metadata["format"] = "pt";
  file.metadata["ls2c.step"] = "42";
  std::string path = tempPath("roundtrip.safetensors");
  ls2c::writeSafetensors(path, file);
  SafetensorsFile back = ls2c::readSafetensors(path);
  ASSERT_EQ(back.tensors.size(), file.tensors.size());
  for (const auto &[name, t] : file.tensors) {
    const SafetensorsTensor &b = back.tensors.at(name);
    EXPECT_EQ(b.dtype, t.dtype) << name;
    EXPECT_EQ(b.shape, t.shape) << name;
    EXPECT_EQ(b.data, t.data) << name;
  }
  EXPECT_EQ(back.metadata, file.metadata);
  std::remove(path.c_str());
}

TEST(Safetensors, HeaderIsPaddedToEightBytesAndDataFollows) {
  SafetensorsFile file;
  file.tensors["x"] = {"F32", {2}, {0, 0, 128, 63, 0, 0, 0, 64}}; // 1.0f, 2.0f
  std::string path = tempPath("layout.safetensors");
  ls2c::writeSafetensors(path, file);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + 8);
  EXPECT_EQ(bytes.substr(8 + n), std::string("\0\0\x80\x3f\0\0\0\x40", 8));
  std::remove(path.c_str());
}

TEST(Safetensors, WriterRejectsDataNotMatchingShape) {
  SafetensorsFile file;
  file.tensors["x"] = {"F32", {3}, std::vector<uint8_t>(8)};
  EXPECT_THROW(ls2c::writeSafetensors(tempPath("bad.safetensors"), file),
               SafetensorsError);
  file.tensors["x"] = {"F31", {2}, std::vector<uint8_t>(8)};
  EXPECT_THROW(ls2c::writeSafetensors(tempPath("bad.safetensors"), file),
               SafetensorsError);
}

TEST(Safetensors, IntValuesWidenIntegersAndRefuseBoolAndFloats) {
  SafetensorsTensor i8{"I8", {2}, {0xff, 0x05}};
  EXPECT_EQ(ls2c::intValues(i8, "x"), (std::vector<int64_t>{-1, 5}));
  SafetensorsTensor u8{"U8", {2}, {0xff, 0x05}};
  EXPECT_EQ(ls2c::intValues(u8, "x"), (std::vector<int64_t>{255, 5}));
  for (const SafetensorsTensor &t :
       {SafetensorsTensor{"BOOL", {4}, std::vector<uint8_t>(4)},
        SafetensorsTensor{"F32", {1}, std::vector<uint8_t>(4)}}) {
    try {
      ls2c::intValues(t, "ids");
      FAIL() << t.dtype << " accepted";
    } catch (const SafetensorsError &e) {
      EXPECT_EQ(std::string(e.what()),
                "ids: dtype " + t.dtype + " where an integer dtype is required");
    }
  }
}

TEST(Safetensors, RejectsMalformedFiles) {
  std::string p = tempPath("malformed.safetensors");
  std::ofstream(p, std::ios::binary) << "abc";
  expectError(p, "too short");
  writeRaw(p, "{}", "", 1000);
  expectError(p, "exceeds the file");
  writeRaw(p, "{not json", "");
  expectError(p, "not valid JSON");
  writeRaw(p, "[1, 2]", "");
  expectError(p, "not a JSON object");
  writeRaw(p, R"({"x": {"dtype": "F99", "shape": [1], "data_offsets": [0, 4]}})",
           "abcd");
  expectError(p, "has dtype 'F99', which ls2c does not read (F64, F32");
  writeRaw(p, R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})",
           "abcd");
  expectError(p, "spans 4 bytes but its shape needs 8");
  writeRaw(p, R"({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 8]}})",
           "abcd");
  expectError(p, "outside the 4 data bytes");
  writeRaw(p,
           R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
           R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [2, 6]}})",
           "abcdefgh");
  expectError(p, "overlap");
  writeRaw(p, R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
           "abcdefgh");
  expectError(p, "gap");
  writeRaw(p, R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
           "abcdefgh");
  expectError(p, "4 trailing bytes");
  writeRaw(p, R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}})",
           "");
  expectError(p, "negative dim");
  writeRaw(p, R"({"a": {"dtype": "F32", "shape": [1]}})", "");
  expectError(p, "needs dtype");
  writeRaw(p, R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})", "abcd");
  expectError(p, "tensor 'a' has data_offsets that are not non-negative integers");
  expectError(tempPath("missing.safetensors"), "cannot open");
  // Two tensors of one name (readers disagree on which wins), or two fields
  // of one entry.
  writeRaw(p,
           R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
           R"( "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
           "abcdefgh");
  expectError(p, "header names 'a' twice");
  writeRaw(p, R"({"a": {"dtype": "F32", "dtype": "I32", "shape": [1], "data_offsets": [0, 4]}})",
           "abcd");
  expectError(p, "header names 'dtype' twice");
  // A NUL ends nlohmann's document: bytes after it would go unread.
  writeRaw(p, std::string(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})") +
                  std::string("\0\0\0\0xyz", 7),
           "abcd");
  expectError(p, "header holds a NUL byte at file offset 69");
  // Space padding, as the format pads, is read.
  writeRaw(p, R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}   )", "abcd");
  EXPECT_EQ(ls2c::readSafetensors(p).tensors.at("a").shape, std::vector<int64_t>{1});
  std::remove(p.c_str());
}

} // namespace
