//===- Workspace.cpp - flat parameter workspaces --------------------------===//
#include "ls2c/Training/Workspace.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>

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

std::vector<AccumulationGroup>
planAccumulationGroups(const WorkspaceLayout &workspace, int64_t maxGroupElements,
                       size_t maxGroupSlots) {
  if (maxGroupElements < 1)
    throw std::invalid_argument("accumulation groups: the largest group must hold at "
                                "least 1 element, not " +
                                std::to_string(maxGroupElements));
  if (maxGroupSlots < 1)
    throw std::invalid_argument("accumulation groups: a group must take at least 1 "
                                "parameter, not 0");
  std::vector<AccumulationGroup> groups; // from the top down
  int64_t held = 0;
  bool decayOfGroup = false;
  for (size_t i = workspace.slots.size(); i-- > 0;) {
    const WorkspaceSlot &slot = workspace.slots[i];
    bool decay = slot.offset < workspace.decayElements;
    if (groups.empty() || decay != decayOfGroup || held + slot.numel > maxGroupElements ||
        groups.back().slots.size() == maxGroupSlots) {
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

namespace {

// SplitMix64's finalizer (Steele, Lea and Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014): a bijective mix of 64 bits,
// so hashing (seed, index) gives element-wise independent draws in any order.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// A uniform double in [0, 1) from 53 bits of SplitMix64's draw `n` of
/// stream `key` (its state after n steps is key + n * golden gamma).
double uniformDraw(uint64_t key, uint64_t n) {
  return static_cast<double>(mix64(key + n * 0x9e3779b97f4a7c15ULL) >> 11) * 0x1.0p-53;
}

/// Fills master[begin, end) (workspace offsets, all inside `slot`). A
/// uniform (Xavier) element g takes draw 2g; a normal one shares with g ^ 1
/// the Box-Muller pair of draws 2(g & ~1) and 2(g & ~1) + 1, the even
/// element taking r cos and the odd one r sin.
void fillSlot(const WorkspaceSlot &slot, int64_t begin, int64_t end, uint64_t key,
              float *master) {
  const ParameterSpec &p = *slot.spec;
  switch (p.init) {
  case ParameterInit::Zeros:
  case ParameterInit::Sinusoidal: // buffers are never in the workspace
    return;
  case ParameterInit::Ones:
    std::fill(master + begin, master + end, 1.0f);
    return;
  case ParameterInit::Normal:
    for (int64_t g = begin; g < end;) {
      const uint64_t pair = static_cast<uint64_t>(g) & ~uint64_t{1};
      // Box-Muller; 1 - u1 keeps the log's argument in (0, 1].
      const double r = p.init_std * std::sqrt(-2.0 * std::log(1.0 - uniformDraw(key, 2 * pair)));
      const double angle = 2.0 * M_PI * uniformDraw(key, 2 * pair + 1);
      if (g % 2 == 0) {
        master[g++] = static_cast<float>(r * std::cos(angle));
        if (g < end)
          master[g++] = static_cast<float>(r * std::sin(angle));
      } else {
        master[g++] = static_cast<float>(r * std::sin(angle));
      }
    }
    return;
  case ParameterInit::XavierUniform: {
    const int64_t fanOut = p.shape.empty() ? 1 : p.shape[0];
    const int64_t fanIn = fanOut ? slot.numel / fanOut : 0;
    const double a = std::sqrt(6.0 / static_cast<double>(fanIn + fanOut));
    for (int64_t g = begin; g < end; ++g)
      master[g] = static_cast<float>((2.0 * uniformDraw(key, 2 * static_cast<uint64_t>(g)) - 1.0) * a);
    return;
  }
  }
}

} // namespace

std::vector<float> initializeWorkspace(const WorkspaceLayout &workspace,
                                       uint64_t seed) {
  std::vector<float> master(static_cast<size_t>(workspace.totalElements), 0.0f);
  const uint64_t key = mix64(seed ^ 0x6c73326320696e69ULL); // "ls2c ini"
  // Work items of at most kBlock elements of one slot; every element's
  // value depends only on (seed, its offset), so the threads' split of the
  // items changes no bit. A 1.3B-parameter GPT takes minutes on one core.
  constexpr int64_t kBlock = 1 << 20;
  struct Item {
    const WorkspaceSlot *slot;
    int64_t begin, end;
  };
  std::vector<Item> items;
  for (const WorkspaceSlot &slot : workspace.slots)
    for (int64_t b = 0; b < slot.numel; b += kBlock)
      items.push_back({&slot, b, std::min(slot.numel, b + kBlock)});
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < items.size(); i = next++) {
      const Item &it = items[i];
      fillSlot(*it.slot, it.slot->offset + it.begin, it.slot->offset + it.end, key,
               master.data());
    }
  };
  const size_t threads =
      std::min<size_t>({items.size(), std::max(1u, std::thread::hardware_concurrency()), 64});
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
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
