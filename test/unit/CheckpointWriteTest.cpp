//===- CheckpointWriteTest.cpp - checkpoints from fp64 and fp32 state -----===//
//
// writeCheckpoint takes the CPU trainer's double state and the GPU trainer's
// fp32 state as downloaded: from the same values both write the same bytes,
// and the file holds each parameter at its workspace offset.
//
//===----------------------------------------------------------------------===//
#include "TempDirTestUtil.h"
#include "ls2c/Model/ModelDescription.h"
#include "ls2c/Model/ParameterLayout.h"
#include "ls2c/Support/Safetensors.h"
#include "ls2c/Trainer/Checkpoint.h"
#include "ls2c/Training/Workspace.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

namespace {

class CheckpointWrite : public ls2c::testing::TempDirTest {
protected:
  CheckpointWrite() : TempDirTest("checkpoint") {}
};

std::string bytesOf(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_F(CheckpointWrite, Fp32StateWritesTheBytesOfItsWidenedCopy) {
  ls2c::ModelDescription desc =
      ls2c::loadModelDescription(std::string(LS2C_SOURCE_DIR) + "/examples/tiny-bert.json");
  const ls2c::ParameterLayout layout = ls2c::buildParameterLayout(desc);
  ls2c::WorkspaceLayout ws = ls2c::planWorkspace(layout); // points into layout
  const size_t n = static_cast<size_t>(ws.totalElements);
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> f[3];
  std::vector<double> d[3];
  for (int k = 0; k < 3; ++k) {
    for (size_t i = 0; i < n; ++i)
      f[k].push_back(k == 2 ? normal(rng) * normal(rng) : normal(rng));
    d[k].assign(f[k].begin(), f[k].end());
  }
  ls2c::CheckpointCounters counters;
  counters.step = 7;
  counters.appliedSteps = 6;
  counters.goodSteps = 3;
  counters.lossScale = 32768.0;
  ls2c::CheckpointRunKey key{5, 8, 1, "data-hash"};
  ls2c::writeCheckpoint(path("f64.safetensors"), desc, ws, d[0].data(), d[1].data(),
                        d[2].data(), counters, key);
  ls2c::writeCheckpoint(path("f32.safetensors"), desc, ws, f[0].data(), f[1].data(),
                        f[2].data(), counters, key);
  const std::string a = bytesOf(path("f64.safetensors")), b = bytesOf(path("f32.safetensors"));
  ASSERT_GT(a.size(), n * 12);
  EXPECT_EQ(a, b);

  ls2c::SafetensorsFile file = ls2c::readSafetensors(path("f32.safetensors"));
  EXPECT_EQ(file.tensors.size(), ws.slots.size() + 2);
  for (const ls2c::WorkspaceSlot &slot : ws.slots) {
    const ls2c::SafetensorsTensor &t = file.tensors.at(slot.spec->name);
    ASSERT_EQ(t.dtype, "F32");
    ASSERT_EQ(t.shape, slot.spec->shape);
    EXPECT_EQ(std::memcmp(t.data.data(), f[0].data() + slot.offset, t.data.size()), 0)
        << slot.spec->name;
  }
  EXPECT_EQ(std::memcmp(file.tensors.at("ls2c.optimizer.exp_avg_sq").data.data(), f[2].data(),
                        n * 4),
            0);
  EXPECT_EQ(file.metadata.at("ls2c.step"), "7");
}

} // namespace
