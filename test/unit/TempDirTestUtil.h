//===- TempDirTestUtil.h - a fresh temporary folder per test ---------------===//
//
// The fixture the file-writing tests share (token files, tokenizers, the
// trainer's data sources): SetUp makes /tmp/ls2c-<prefix>-XXXXXX, TearDown
// removes it with everything in it.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TEST_UNIT_TEMPDIRTESTUTIL_H
#define LS2C_TEST_UNIT_TEMPDIRTESTUTIL_H

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace ls2c::testing {

class TempDirTest : public ::testing::Test {
protected:
  explicit TempDirTest(std::string prefix) : prefix(std::move(prefix)) {}
  void SetUp() override {
    std::string tmpl = "/tmp/ls2c-" + prefix + "-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  /// `name` inside the test's folder.
  std::string path(const std::string &name) const { return dir + "/" + name; }

  std::string prefix;
  std::string dir; ///< the test's folder
};

} // namespace ls2c::testing

#endif // LS2C_TEST_UNIT_TEMPDIRTESTUTIL_H
