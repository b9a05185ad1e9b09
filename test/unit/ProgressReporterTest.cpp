//===- ProgressReporterTest.cpp - metrics lines and skipped-step messages --===//
//
// A skipped step (gradients not finite) is written as "finite": false with
// "grad_norm": -1 and said on stderr, with the fp16 loss scale it left, with
// or without the progress line; applied steps say nothing there without it.
//
//===----------------------------------------------------------------------===//
#include "ProgressReporter.h"
#include "TempDirTestUtil.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

namespace {

using ls2c::ProgressReporter;

class ProgressReporterTest : public ls2c::testing::TempDirTest {
protected:
  ProgressReporterTest() : TempDirTest("progress") {}

  std::vector<nlohmann::json> records() const {
    std::ifstream in(path("metrics.jsonl"));
    std::vector<nlohmann::json> out;
    for (std::string line; std::getline(in, line);)
      out.push_back(nlohmann::json::parse(line));
    return out;
  }
};

TEST_F(ProgressReporterTest, SkippedStepIsWrittenAndSaid) {
  ::testing::internal::CaptureStderr();
  {
    ProgressReporter report(path("metrics.jsonl"), -1, /*progress=*/false, 10);
    report.step(1, 4.17, 1e-3, 2.5, 1000.0, /*finite=*/true, -1, 65536.0);
    report.step(2, 4.20, 1e-3, std::nan(""), 1000.0, /*finite=*/false, -1, 32768.0);
    report.step(3, 4.10, 1e-3, std::nan(""), 1000.0, /*finite=*/false);
  }
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "step 2: skipped, gradients not finite, fp16 loss scale lowered to 32768\n"
                 "step 3: skipped, gradients not finite\n");
  std::vector<nlohmann::json> lines = records();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(lines[0]["finite"].get<bool>());
  EXPECT_DOUBLE_EQ(lines[0]["grad_norm"].get<double>(), 2.5);
  EXPECT_FALSE(lines[1]["finite"].get<bool>());
  EXPECT_DOUBLE_EQ(lines[1]["grad_norm"].get<double>(), -1.0);
  EXPECT_EQ(lines[1]["step"].get<int64_t>(), 2);
}

} // namespace
