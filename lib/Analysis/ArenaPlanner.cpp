//===- ArenaPlanner.cpp - static offsets for buffers in one arena ---------===//
//
// See ArenaPlanner.h for the algorithm and its sources.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Analysis/ArenaPlanner.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

namespace ls2c {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

bool isPowerOfTwo(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

/// `size` rounded up to `alignment`, or -1 when that overflows int64.
int64_t alignUp(int64_t size, int64_t alignment) {
  if (size > kInt64Max - (alignment - 1))
    return -1;
  return (size + alignment - 1) & ~(alignment - 1);
}

bool liveTogether(const PlannedBuffer &a, const PlannedBuffer &b) {
  return a.firstStep <= b.lastStep && b.firstStep <= a.lastStep;
}

std::string describe(const PlannedBuffer &b) {
  std::string s = "buffer " + std::to_string(b.id);
  if (!b.name.empty())
    s += " '" + b.name + "'";
  return s;
}

std::string stepRange(const PlannedBuffer &b) {
  return "steps [" + std::to_string(b.firstStep) + ", " +
         std::to_string(b.lastStep) + "]";
}

std::string byteRange(int64_t offset, int64_t size) {
  return "bytes [" + std::to_string(offset) + ", " +
         std::to_string(offset + size) + ")";
}

[[noreturn]] void fail(const std::string &message) {
  throw std::invalid_argument("arena planner: " + message);
}

/// A set of buffers planned as one: a single buffer, or an in-place chain
/// sharing one offset over the union of its members' ranges.
struct Group {
  int64_t firstStep = 0, lastStep = 0;
  int64_t bytes = 0;  ///< the largest member's aligned size
  int64_t minId = 0;  ///< ordering tie-break, deterministic
  std::vector<size_t> members;
};

struct Placed {
  int64_t offset, end, firstStep, lastStep;
};

/// Offsets of `groups` (in bytes, one per group) placed in `order` by best
/// fit; returns the arena size in `arenaBytes`.
std::vector<int64_t> placeGreedy(const std::vector<Group> &groups,
                                 const std::vector<size_t> &order,
                                 int64_t &arenaBytes) {
  std::vector<int64_t> offsets(groups.size(), 0);
  std::vector<Placed> placed; // ascending offset: gaps appear in one scan
  placed.reserve(order.size());
  arenaBytes = 0;
  for (size_t g : order) {
    const Group &group = groups[g];
    int64_t prevEnd = 0, bestOffset = -1, bestGap = kInt64Max;
    for (const Placed &p : placed) {
      if (p.lastStep < group.firstStep || p.firstStep > group.lastStep)
        continue;
      int64_t gap = p.offset - prevEnd;
      if (gap >= group.bytes && gap < bestGap) {
        bestOffset = prevEnd;
        bestGap = gap;
        if (gap == group.bytes)
          break; // an exact fit is the best fit; later ones have higher offsets
      }
      prevEnd = std::max(prevEnd, p.end);
    }
    int64_t offset = bestOffset >= 0 ? bestOffset : prevEnd;
    offsets[g] = offset;
    Placed entry{offset, offset + group.bytes, group.firstStep, group.lastStep};
    auto at = std::upper_bound(
        placed.begin(), placed.end(), offset,
        [](int64_t value, const Placed &p) { return value < p.offset; });
    placed.insert(at, entry);
    arenaBytes = std::max(arenaBytes, entry.end);
  }
  return offsets;
}

/// Sweep over range endpoints. At one step all starts count before any end,
/// since ranges are inclusive: a range ending at t and one starting at t are
/// live together at t. Returns the peak bytes; `peakStep` is the first step
/// where they are live (-1 when nothing is).
int64_t lowerBound(const std::vector<Group> &groups, int64_t &peakStep) {
  std::vector<std::tuple<int64_t, bool, int64_t>> events; // step, isEnd, bytes
  events.reserve(2 * groups.size());
  for (const Group &g : groups) {
    if (g.bytes == 0)
      continue;
    events.emplace_back(g.firstStep, false, g.bytes);
    events.emplace_back(g.lastStep, true, g.bytes);
  }
  std::sort(events.begin(), events.end());
  int64_t live = 0, peak = 0;
  peakStep = -1;
  for (const auto &e : events) {
    live += std::get<1>(e) ? -std::get<2>(e) : std::get<2>(e);
    if (live > peak) {
      peak = live;
      peakStep = std::get<0>(e);
    }
  }
  return peak;
}

/// Union-find root with path halving.
size_t findRoot(std::vector<size_t> &parent, size_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

} // namespace

const char *arenaStrategyName(ArenaStrategy strategy) {
  switch (strategy) {
  case ArenaStrategy::Best:
    return "best";
  case ArenaStrategy::GreedyBySize:
    return "greedy-by-size";
  case ArenaStrategy::GreedyByDuration:
    return "greedy-by-duration";
  case ArenaStrategy::GreedyByArea:
    return "greedy-by-area";
  }
  return "unknown";
}

ArenaPlan planArena(const std::vector<PlannedBuffer> &buffers,
                    const ArenaPlanOptions &options) {
  const int64_t alignment = options.alignment;
  if (!isPowerOfTwo(alignment))
    fail("alignment " + std::to_string(alignment) +
         " bytes is not a positive power of two");

  const size_t n = buffers.size();
  std::unordered_map<int64_t, size_t> indexOfId;
  indexOfId.reserve(n);
  std::vector<int64_t> aligned(n);
  int64_t totalBytes = 0;
  for (size_t i = 0; i < n; ++i) {
    const PlannedBuffer &b = buffers[i];
    if (b.sizeBytes < 0)
      fail(describe(b) + ": size " + std::to_string(b.sizeBytes) +
           " bytes is negative; sizes must be >= 0");
    if (b.firstStep > b.lastStep)
      fail(describe(b) + ": live range " + stepRange(b) +
           " has firstStep > lastStep");
    if (!indexOfId.emplace(b.id, i).second)
      fail(describe(b) + ": id " + std::to_string(b.id) +
           " is used by more than one buffer; ids must be unique");
    aligned[i] = alignUp(b.sizeBytes, alignment);
    // Bounding the total bounds every offset + size the planner computes.
    if (aligned[i] < 0 || aligned[i] > kInt64Max - totalBytes)
      fail(describe(b) + ": the buffers' aligned sizes together overflow "
                         "int64 bytes");
    totalBytes += aligned[i];
  }

  // In-place hints, in input order. Each buffer is overwritten by at most
  // one other, so groups are chains.
  std::vector<size_t> parent(n);
  std::iota(parent.begin(), parent.end(), size_t(0));
  std::vector<std::vector<size_t>> members(n);
  for (size_t i = 0; i < n; ++i)
    members[i] = {i};
  std::vector<bool> taken(n, false), honored(n, false);
  for (size_t i = 0; i < n; ++i) {
    const PlannedBuffer &b = buffers[i];
    if (!b.inPlaceOf)
      continue;
    auto it = indexOfId.find(*b.inPlaceOf);
    if (it == indexOfId.end())
      fail(describe(b) + ": inPlaceOf names buffer " +
           std::to_string(*b.inPlaceOf) + ", which is not in the plan");
    size_t a = it->second;
    if (a == i)
      fail(describe(b) + ": inPlaceOf names the buffer itself");
    const PlannedBuffer &src = buffers[a];
    if (src.lastStep != b.firstStep || b.sizeBytes > src.sizeBytes || taken[a])
      continue;
    size_t ra = findRoot(parent, a), rb = findRoot(parent, i);
    if (ra == rb)
      continue; // a cycle, possible only with single-step ranges
    // Sharing one offset must not make any other pair of the two groups
    // overlap; only degenerate single-step chains can, but check them all.
    bool clash = false;
    for (size_t x : members[ra]) {
      for (size_t y : members[rb]) {
        if ((x != a || y != i) && liveTogether(buffers[x], buffers[y])) {
          clash = true;
          break;
        }
      }
      if (clash)
        break;
    }
    if (clash)
      continue;
    if (members[ra].size() < members[rb].size())
      std::swap(ra, rb);
    parent[rb] = ra;
    members[ra].insert(members[ra].end(), members[rb].begin(),
                       members[rb].end());
    members[rb].clear();
    members[rb].shrink_to_fit();
    taken[a] = true;
    honored[i] = true;
  }

  std::vector<Group> groups;
  std::vector<size_t> groupOf(n);
  for (size_t r = 0; r < n; ++r) {
    if (parent[r] != r)
      continue;
    Group g;
    g.firstStep = buffers[members[r].front()].firstStep;
    g.lastStep = buffers[members[r].front()].lastStep;
    g.minId = buffers[members[r].front()].id;
    for (size_t m : members[r]) {
      g.firstStep = std::min(g.firstStep, buffers[m].firstStep);
      g.lastStep = std::max(g.lastStep, buffers[m].lastStep);
      g.bytes = std::max(g.bytes, aligned[m]);
      g.minId = std::min(g.minId, buffers[m].id);
      groupOf[m] = groups.size();
    }
    g.members = std::move(members[r]);
    groups.push_back(std::move(g));
  }

  // Zero-size groups occupy nothing: offset 0, never in anyone's way.
  std::vector<size_t> sized;
  for (size_t g = 0; g < groups.size(); ++g)
    if (groups[g].bytes > 0)
      sized.push_back(g);
  auto key = [&](size_t g, ArenaStrategy s) {
    const Group &x = groups[g];
    int64_t duration = x.lastStep - x.firstStep;
    // Negated so that ascending tuple order is "larger first". The area
    // (bytes x steps live) cannot overflow: bytes fit int64 together, and
    // a product too large for it saturates (the order stays a total order).
    int64_t area = 0;
    if (__builtin_mul_overflow(x.bytes, duration + 1, &area))
      area = kInt64Max;
    switch (s) {
    case ArenaStrategy::GreedyBySize:
      return std::make_tuple(-x.bytes, -duration, x.minId);
    case ArenaStrategy::GreedyByArea:
      return std::make_tuple(-area, -x.bytes, x.minId);
    default:
      return std::make_tuple(-duration, -x.bytes, x.minId);
    }
  };
  auto run = [&](ArenaStrategy s, int64_t &arenaBytes) {
    std::vector<size_t> order = sized;
    std::sort(order.begin(), order.end(),
              [&](size_t x, size_t y) { return key(x, s) < key(y, s); });
    return placeGreedy(groups, order, arenaBytes);
  };

  ArenaPlan plan;
  plan.alignment = alignment;
  plan.lowerBoundBytes = lowerBound(groups, plan.peakStep);
  // One buffer per group live at the peak: the member live there (the
  // largest of several).
  for (const Group &g : groups) {
    if (g.bytes == 0 || g.firstStep > plan.peakStep || g.lastStep < plan.peakStep)
      continue;
    size_t pick = g.members.front();
    bool pickLive = false;
    for (size_t m : g.members) {
      bool live = buffers[m].firstStep <= plan.peakStep && plan.peakStep <= buffers[m].lastStep;
      if ((live && !pickLive) ||
          (live == pickLive && aligned[m] > aligned[pick]))
        pick = m, pickLive = live;
    }
    plan.liveAtPeak.push_back({pick, g.bytes});
  }
  std::sort(plan.liveAtPeak.begin(), plan.liveAtPeak.end(),
            [](const ArenaPlan::PeakBuffer &x, const ArenaPlan::PeakBuffer &y) {
              return x.buffer < y.buffer;
            });
  std::vector<int64_t> groupOffsets;
  if (options.strategy == ArenaStrategy::Best) {
    // Each order in turn; a later one is kept only when strictly smaller.
    bool first = true;
    for (ArenaStrategy s : {ArenaStrategy::GreedyBySize,
                            ArenaStrategy::GreedyByDuration,
                            ArenaStrategy::GreedyByArea}) {
      int64_t bytes = 0;
      std::vector<int64_t> offsets = run(s, bytes);
      if (first || bytes < plan.arenaBytes) {
        groupOffsets = std::move(offsets);
        plan.arenaBytes = bytes;
        plan.strategy = arenaStrategyName(s);
      }
      first = false;
    }
  } else {
    groupOffsets = run(options.strategy, plan.arenaBytes);
    plan.strategy = arenaStrategyName(options.strategy);
  }

  plan.offsets.resize(n);
  for (size_t i = 0; i < n; ++i)
    plan.offsets[i] = groupOffsets[groupOf[i]];
  plan.inPlaceHonored = std::move(honored);
  return plan;
}

std::string verifyArenaPlan(const std::vector<PlannedBuffer> &buffers,
                            const ArenaPlan &plan) {
  const size_t n = buffers.size();
  if (plan.offsets.size() != n || plan.inPlaceHonored.size() != n)
    return "the plan has " + std::to_string(plan.offsets.size()) +
           " offsets and " + std::to_string(plan.inPlaceHonored.size()) +
           " in-place flags for " + std::to_string(n) + " buffers";
  if (!isPowerOfTwo(plan.alignment))
    return "alignment " + std::to_string(plan.alignment) +
           " bytes is not a positive power of two";

  std::unordered_map<int64_t, size_t> indexOfId;
  for (size_t i = 0; i < n; ++i) {
    const PlannedBuffer &b = buffers[i];
    int64_t offset = plan.offsets[i];
    if (b.sizeBytes < 0 || b.firstStep > b.lastStep)
      return describe(b) + " is invalid (size " + std::to_string(b.sizeBytes) +
             ", " + stepRange(b) + ")";
    if (!indexOfId.emplace(b.id, i).second)
      return describe(b) + ": id used by more than one buffer";
    int64_t bytes = alignUp(b.sizeBytes, plan.alignment);
    if (offset < 0 || offset % plan.alignment != 0)
      return describe(b) + " is at offset " + std::to_string(offset) +
             ", not a non-negative multiple of " +
             std::to_string(plan.alignment);
    if (bytes < 0 || bytes > plan.arenaBytes ||
        offset > plan.arenaBytes - bytes)
      return describe(b) + " (" + byteRange(offset, b.sizeBytes) +
             ", aligned size " + std::to_string(bytes) +
             ") does not fit in the arena of " +
             std::to_string(plan.arenaBytes) + " bytes";
  }
  for (size_t i = 0; i < n; ++i) {
    if (!plan.inPlaceHonored[i])
      continue;
    const PlannedBuffer &b = buffers[i];
    auto it = b.inPlaceOf ? indexOfId.find(*b.inPlaceOf) : indexOfId.end();
    if (it == indexOfId.end() || it->second == i)
      return describe(b) + " is marked in place but names no other buffer";
    const PlannedBuffer &a = buffers[it->second];
    if (a.lastStep != b.firstStep || b.sizeBytes > a.sizeBytes ||
        plan.offsets[i] != plan.offsets[it->second])
      return describe(b) + " (" + stepRange(b) + ", " +
             byteRange(plan.offsets[i], b.sizeBytes) + ") is marked in place of " +
             describe(a) + " (" + stepRange(a) + ", " +
             byteRange(plan.offsets[it->second], a.sizeBytes) +
             "), which requires the same offset, the source's range to end "
             "where this one starts, and size <= the source's";
  }

  // Pairs live together: each buffer against those starting no later than
  // it ends, in order of first step.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return std::make_pair(buffers[x].firstStep, x) <
           std::make_pair(buffers[y].firstStep, y);
  });
  auto sharesInPlace = [&](size_t x, size_t y) {
    return plan.inPlaceHonored[x] && *buffers[x].inPlaceOf == buffers[y].id;
  };
  for (size_t k = 0; k < n; ++k) {
    size_t i = order[k];
    const PlannedBuffer &a = buffers[i];
    if (a.sizeBytes == 0)
      continue;
    for (size_t l = k + 1; l < n; ++l) {
      size_t j = order[l];
      const PlannedBuffer &b = buffers[j];
      if (b.firstStep > a.lastStep)
        break;
      if (b.sizeBytes == 0)
        continue;
      int64_t ai = plan.offsets[i], bj = plan.offsets[j];
      bool overlap = ai < bj + b.sizeBytes && bj < ai + a.sizeBytes;
      if (!overlap || sharesInPlace(i, j) || sharesInPlace(j, i))
        continue;
      return describe(a) + " (" + stepRange(a) + ", " +
             byteRange(ai, a.sizeBytes) + ") and " + describe(b) + " (" +
             stepRange(b) + ", " + byteRange(bj, b.sizeBytes) +
             ") are live together at step " + std::to_string(b.firstStep) +
             " and overlap in memory";
    }
  }
  return "";
}

} // namespace ls2c
