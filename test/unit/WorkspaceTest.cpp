//===- WorkspaceTest.cpp - flat workspaces and initialization -------------===//
#include "ls2c/Training/Workspace.h"

#include "ls2c/Model/ModelDescription.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace {

ls2c::ModelDescription preset(const std::string &name) {
  return ls2c::loadModelDescription(LS2C_SOURCE_DIR "/examples/" + name + ".json");
}

TEST(Workspace, SlotsAreAlignedDisjointAndDecayFirst) {
  for (const char *name : {"tiny-bert", "tiny-gpt", "tiny-transformer",
                           "tiny-vit", "bert-base", "gpt2-medium"}) {
    ls2c::ParameterLayout layout = ls2c::buildParameterLayout(preset(name));
    ls2c::WorkspaceLayout ws = ls2c::planWorkspace(layout);
    int64_t trainable = std::count_if(
        layout.parameters.begin(), layout.parameters.end(),
        [](const ls2c::ParameterSpec &p) { return p.trainable; });
    ASSERT_EQ(static_cast<int64_t>(ws.slots.size()), trainable) << name;
    int64_t end = 0, numel = 0;
    bool inDecay = true;
    for (const ls2c::WorkspaceSlot &s : ws.slots) {
      EXPECT_EQ(s.offset % ls2c::kSlotAlignment, 0) << s.spec->name;
      EXPECT_GE(s.offset, end) << s.spec->name << " overlaps its predecessor";
      EXPECT_LT(s.offset - end, ls2c::kSlotAlignment) << "gap too large";
      if (!s.spec->weight_decay)
        inDecay = false;
      EXPECT_EQ(s.spec->weight_decay, inDecay) << s.spec->name;
      EXPECT_EQ(s.spec->weight_decay, s.offset < ws.decayElements) << s.spec->name;
      end = s.offset + s.numel;
      numel += s.numel;
    }
    EXPECT_EQ(numel, layout.numParameters()) << name;
    EXPECT_GE(ws.totalElements, end);
    EXPECT_EQ(ws.totalElements % ls2c::kSlotAlignment, 0);
  }
}

TEST(Workspace, InitializationFollowsEachParametersRule) {
  ls2c::ParameterLayout layout =
      ls2c::buildParameterLayout(preset("tiny-transformer"));
  ls2c::WorkspaceLayout ws = ls2c::planWorkspace(layout);
  std::vector<float> a = ls2c::initializeWorkspace(ws, 42);
  std::vector<float> b = ls2c::initializeWorkspace(ws, 42);
  std::vector<float> c = ls2c::initializeWorkspace(ws, 43);
  EXPECT_EQ(a, b) << "same seed, same bits";
  EXPECT_NE(a, c);
  std::vector<bool> covered(a.size(), false);
  for (const ls2c::WorkspaceSlot &s : ws.slots) {
    const float *p = a.data() + s.offset;
    for (int64_t i = 0; i < s.numel; ++i)
      covered[s.offset + i] = true;
    double mean = 0, sq = 0, maxAbs = 0;
    for (int64_t i = 0; i < s.numel; ++i) {
      mean += p[i];
      sq += double(p[i]) * p[i];
      maxAbs = std::max(maxAbs, std::fabs(double(p[i])));
    }
    mean /= s.numel;
    double stddev = std::sqrt(sq / s.numel - mean * mean);
    switch (s.spec->init) {
    case ls2c::ParameterInit::Ones:
      EXPECT_EQ(maxAbs, 1.0) << s.spec->name;
      EXPECT_EQ(mean, 1.0) << s.spec->name;
      break;
    case ls2c::ParameterInit::Zeros:
      EXPECT_EQ(maxAbs, 0.0) << s.spec->name;
      break;
    case ls2c::ParameterInit::Normal:
      EXPECT_NEAR(stddev, s.spec->init_std, 0.1 * s.spec->init_std) << s.spec->name;
      break;
    case ls2c::ParameterInit::XavierUniform: {
      double bound = std::sqrt(6.0 / (s.spec->shape[0] + s.spec->shape[1]));
      EXPECT_LE(maxAbs, bound) << s.spec->name;
      EXPECT_GT(maxAbs, 0.9 * bound) << s.spec->name;
      EXPECT_NEAR(stddev, bound / std::sqrt(3.0), 0.1 * bound) << s.spec->name;
      break;
    }
    case ls2c::ParameterInit::Sinusoidal:
      ADD_FAILURE() << "buffers are not in the workspace: " << s.spec->name;
    }
  }
  for (size_t i = 0; i < a.size(); ++i)
    if (!covered[i]) {
      ASSERT_EQ(a[i], 0.0f) << "padding element " << i;
    }
}

TEST(Workspace, SinusoidalTableMatchesFairseqFormula) {
  const int64_t rows = 7, dim = 10, half = 5;
  std::vector<double> t = ls2c::sinusoidalTable(rows, dim);
  double step = std::log(10000.0) / (half - 1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < half; ++i) {
      double angle = r * std::exp(-step * i);
      EXPECT_DOUBLE_EQ(t[r * dim + i], std::sin(angle));
      EXPECT_DOUBLE_EQ(t[r * dim + half + i], std::cos(angle));
    }
  EXPECT_EQ(ls2c::sinusoidalTable(3, 5)[4], 0.0) << "odd dim: last column zero";
}

} // namespace
