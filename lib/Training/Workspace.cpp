//===- Workspace.cpp - flat parameter workspaces --------------------------===//
#include "ls2c/Training/Workspace.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

namespace ls2c {

const WorkspaceSlot *WorkspaceLayout::find(const std::string &name) const {
  for (const WorkspaceSlot &slot : slots)
    if (slot.spec->name == name)
      return &slot;
  return nullptr;
}

WorkspaceLayout planWorkspace(const ParameterLayout &layout) {
  WorkspaceLayout ws;
  int64_t offset = 0;
  auto place = [&](bool decay) {
    for (const ParameterSpec &p : layout.parameters) {
      if (!p.trainable || p.weight_decay != decay)
        continue;
      int64_t numel = p.numel();
      ws.slots.push_back({&p, offset, numel});
      int64_t padded = (numel + kSlotAlignment - 1) / kSlotAlignment * kSlotAlignment;
      if (__builtin_add_overflow(offset, padded, &offset))
        throw std::overflow_error("workspace size overflows int64");
    }
  };
  place(true);
  ws.decayElements = offset;
  place(false);
  ws.totalElements = offset;
  return ws;
}

std::vector<AccumulationGroup> planAccumulationGroups(const WorkspaceLayout &workspace,
                                                      int64_t maxGroupElements) {
  if (maxGroupElements < 1)
    throw std::invalid_argument("accumulation groups: the largest group must hold at "
                                "least 1 element, not " +
                                std::to_string(maxGroupElements));
  std::vector<AccumulationGroup> groups; // from the top down
  int64_t held = 0;
  bool decayOfGroup = false;
  for (size_t i = workspace.slots.size(); i-- > 0;) {
    const WorkspaceSlot &slot = workspace.slots[i];
    bool decay = slot.offset < workspace.decayElements;
    if (groups.empty() || decay != decayOfGroup || held + slot.numel > maxGroupElements) {
      groups.emplace_back();
      held = 0;
      decayOfGroup = decay;
    }
    groups.back().slots.insert(groups.back().slots.begin(), i);
    held += slot.numel;
  }
  std::reverse(groups.begin(), groups.end());
  for (size_t g = 0; g < groups.size(); ++g) {
    groups[g].begin = g == 0 ? 0 : workspace.slots[groups[g].slots.front()].offset;
    if (g > 0)
      groups[g - 1].end = groups[g].begin;
  }
  if (!groups.empty())
    groups.back().end = workspace.totalElements;
  return groups;
}

std::vector<float> initializeWorkspace(const WorkspaceLayout &workspace,
                                       uint64_t seed) {
  std::vector<float> master(static_cast<size_t>(workspace.totalElements), 0.0f);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (const WorkspaceSlot &slot : workspace.slots) {
    const ParameterSpec &p = *slot.spec;
    float *out = master.data() + slot.offset;
    switch (p.init) {
    case ParameterInit::Zeros:
    case ParameterInit::Sinusoidal: // buffers are never in the workspace
      break;
    case ParameterInit::Ones:
      std::fill(out, out + slot.numel, 1.0f);
      break;
    case ParameterInit::Normal:
      for (int64_t i = 0; i < slot.numel; ++i) {
        // Box-Muller; 1 - u keeps the log's argument in (0, 1].
        double u1 = 1.0 - unit(rng), u2 = unit(rng);
        out[i] = static_cast<float>(p.init_std * std::sqrt(-2.0 * std::log(u1)) *
                                    std::cos(2.0 * M_PI * u2));
      }
      break;
    case ParameterInit::XavierUniform: {
      int64_t fanOut = p.shape.empty() ? 1 : p.shape[0];
      int64_t fanIn = fanOut ? slot.numel / fanOut : 0;
      double a = std::sqrt(6.0 / static_cast<double>(fanIn + fanOut));
      for (int64_t i = 0; i < slot.numel; ++i)
        out[i] = static_cast<float>((2.0 * unit(rng) - 1.0) * a);
      break;
    }
    }
  }
  return master;
}

std::vector<double> sinusoidalTable(int64_t rows, int64_t dim) {
  std::vector<double> table(static_cast<size_t>(rows * dim), 0.0);
  int64_t half = dim / 2;
  double step = half > 1 ? std::log(10000.0) / static_cast<double>(half - 1) : 0.0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < half; ++i) {
      double angle = static_cast<double>(r) * std::exp(-step * static_cast<double>(i));
      table[r * dim + i] = std::sin(angle);
      table[r * dim + half + i] = std::cos(angle);
    }
  return table;
}

} // namespace ls2c
