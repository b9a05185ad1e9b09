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

TEST(Workspace, AccumulationGroupsPartitionTheWorkspaceByDecaySizeAndCount) {
  for (const char *name : {"tiny-bert", "tiny-gpt", "tiny-transformer", "tiny-vit",
                           "bert-base", "gpt2-medium"})
    for (int64_t limit : {int64_t{1}, int64_t{1000}, int64_t{1} << 16,
                          ls2c::kAccumulationGroupBytes / 4})
    for (size_t maxSlots : {size_t{1}, size_t{3}, ls2c::kAccumulationGroupSlots}) {
      ls2c::ParameterLayout layout = ls2c::buildParameterLayout(preset(name));
      ls2c::WorkspaceLayout ws = ls2c::planWorkspace(layout);
      std::vector<ls2c::AccumulationGroup> groups =
          ls2c::planAccumulationGroups(ws, limit, maxSlots);
      ASSERT_FALSE(groups.empty()) << name;
      EXPECT_EQ(groups.front().begin, 0) << name;
      EXPECT_EQ(groups.back().end, ws.totalElements) << name;
      std::vector<int> seen(ws.slots.size(), 0);
      for (size_t g = 0; g < groups.size(); ++g) {
        const ls2c::AccumulationGroup &group = groups[g];
        SCOPED_TRACE(std::string(name) + " limit " + std::to_string(limit) + " slots " +
                     std::to_string(maxSlots) + " group " + std::to_string(g));
        ASSERT_FALSE(group.slots.empty());
        EXPECT_LE(group.slots.size(), maxSlots);
        if (g > 0) {
          EXPECT_EQ(group.begin, groups[g - 1].end);
        }
        EXPECT_LT(group.begin, group.end);
        int64_t held = 0;
        bool decay = ws.slots[group.slots.front()].spec->weight_decay;
        for (size_t k = 0; k < group.slots.size(); ++k) {
          const ls2c::WorkspaceSlot &slot = ws.slots[group.slots[k]];
          ++seen[group.slots[k]];
          EXPECT_GE(slot.offset, group.begin);
          EXPECT_LE(slot.offset + slot.numel, group.end);
          EXPECT_EQ(slot.spec->weight_decay, decay) << slot.spec->name;
          if (k > 0) {
            EXPECT_EQ(group.slots[k], group.slots[k - 1] + 1) << "slots are consecutive";
          }
          held += slot.numel;
        }
        // Over the limit only as a single slot; and no group could have
        // taken the slot just above it.
        if (group.slots.size() > 1) {
          EXPECT_LE(held, limit);
        }
        if (g + 1 < groups.size()) {
          const ls2c::WorkspaceSlot &above = ws.slots[groups[g + 1].slots.front()];
          bool sameRegion = above.spec->weight_decay == decay;
          int64_t nextHeld = 0;
          for (size_t i : groups[g + 1].slots)
            nextHeld += ws.slots[i].numel;
          // Walking down, the group above closed because of the region,
          // the size or the count: this group's top slot would have broken
          // one.
          const ls2c::WorkspaceSlot &top = ws.slots[group.slots.back()];
          EXPECT_TRUE(!sameRegion || nextHeld + top.numel > limit ||
                      groups[g + 1].slots.size() == maxSlots)
              << top.spec->name;
        }
      }
      for (size_t i = 0; i < seen.size(); ++i)
        EXPECT_EQ(seen[i], 1) << ws.slots[i].spec->name;
    }
  ls2c::WorkspaceLayout empty;
  EXPECT_TRUE(ls2c::planAccumulationGroups(empty, 10).empty());
  EXPECT_THROW(ls2c::planAccumulationGroups(empty, 0), std::invalid_argument);
  EXPECT_THROW(ls2c::planAccumulationGroups(empty, 10, 0), std::invalid_argument);
}

TEST(Workspace, DeepModelsBiasesAndNormsSplitIntoGroupsOfAtMost128) {
  ls2c::ModelDescription desc = preset("tiny-gpt");
  desc.decoder_layers = 128;
  ls2c::ParameterLayout layout = ls2c::buildParameterLayout(desc);
  ls2c::WorkspaceLayout ws = ls2c::planWorkspace(layout);
  std::vector<ls2c::AccumulationGroup> groups =
      ls2c::planAccumulationGroups(ws, ls2c::kAccumulationGroupBytes / 4);
  size_t noDecaySlots = 0, noDecayGroups = 0;
  for (const ls2c::WorkspaceSlot &s : ws.slots)
    noDecaySlots += !s.spec->weight_decay;
  for (const ls2c::AccumulationGroup &g : groups)
    noDecayGroups += !ws.slots[g.slots.front()].spec->weight_decay;
  // Each layer's two norms' scale and shift and its four biases, and the
  // final norm: 128 * 8 + 2, well under 25 MiB, cut only by the count.
  EXPECT_EQ(noDecaySlots, 128u * 8 + 2);
  EXPECT_EQ(noDecayGroups, (noDecaySlots + 127) / 128);
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
