//===- ArenaPlannerTest.cpp - static arena offset assignment --------------===//
#include "ls2c/Analysis/ArenaPlanner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <random>
#include <stdexcept>

namespace {

using ls2c::ArenaPlan;
using ls2c::ArenaPlanOptions;
using ls2c::ArenaStrategy;
using ls2c::PlannedBuffer;

PlannedBuffer buf(int64_t id, int64_t size, int64_t first, int64_t last,
                  std::string name = "") {
  PlannedBuffer b;
  b.id = id;
  b.sizeBytes = size;
  b.firstStep = first;
  b.lastStep = last;
  b.name = std::move(name);
  return b;
}

PlannedBuffer inPlace(PlannedBuffer b, int64_t of) {
  b.inPlaceOf = of;
  return b;
}

ArenaPlanOptions bytes(ArenaStrategy s = ArenaStrategy::Best) {
  ArenaPlanOptions o;
  o.alignment = 1; // hand-made cases read better in plain bytes
  o.strategy = s;
  return o;
}

/// The message planArena throws, or "" when it does not throw.
std::string errorOf(const std::vector<PlannedBuffer> &buffers,
                    ArenaPlanOptions options = {}) {
  try {
    ls2c::planArena(buffers, options);
  } catch (const std::invalid_argument &e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

// A chain of ops, each reading the previous op's result: greedy by size
// reaches the lower bound (the peak at step 5: 8 + 64 bytes).
TEST(ArenaPlanner, ChainReachesTheLowerBound) {
  std::vector<PlannedBuffer> b = {buf(0, 32, 0, 1), buf(1, 28, 1, 2),
                                  buf(2, 36, 2, 3), buf(3, 16, 3, 4),
                                  buf(4, 8, 4, 5),  buf(5, 64, 5, 6)};
  ArenaPlan plan = ls2c::planArena(b, bytes());
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 36, 0, 36, 64, 0}));
  EXPECT_EQ(plan.arenaBytes, 72);
  EXPECT_EQ(plan.lowerBoundBytes, 72);
  // All ranges are one step long, so both orders agree; the tie keeps size.
  EXPECT_EQ(plan.strategy, "greedy-by-size");
  EXPECT_EQ(ls2c::verifyArenaPlan(b, plan), "");
}

// The chain above peaks at step 5 (buffers 4 and 5, 8 + 64 bytes); step 1
// holds only 60 and step 2 64.
TEST(ArenaPlanner, ReportsWhatIsLiveAtThePeak) {
  std::vector<PlannedBuffer> b = {buf(0, 32, 0, 1), buf(1, 28, 1, 2),
                                  buf(2, 36, 2, 3), buf(3, 16, 3, 4),
                                  buf(4, 8, 4, 5),  buf(5, 64, 5, 6)};
  ArenaPlan plan = ls2c::planArena(b, bytes());
  EXPECT_EQ(plan.peakStep, 5);
  ASSERT_EQ(plan.liveAtPeak.size(), 2u);
  EXPECT_EQ(plan.liveAtPeak[0].buffer, 4u);
  EXPECT_EQ(plan.liveAtPeak[0].bytes, 8);
  EXPECT_EQ(plan.liveAtPeak[1].buffer, 5u);
  EXPECT_EQ(plan.liveAtPeak[1].bytes, 64);
  // An in-place pair counts once, at its larger member's size, and names
  // the member live at the peak: B (40 bytes, in place of A's 50) with C.
  std::vector<PlannedBuffer> pair = {buf(0, 50, 0, 2, "A"), inPlace(buf(1, 40, 2, 5, "B"), 0),
                                     buf(2, 30, 4, 5, "C"), buf(3, 10, 0, 0, "D")};
  ArenaPlan p = ls2c::planArena(pair, bytes());
  EXPECT_EQ(p.lowerBoundBytes, 80);
  EXPECT_EQ(p.peakStep, 4);
  ASSERT_EQ(p.liveAtPeak.size(), 2u);
  EXPECT_EQ(p.liveAtPeak[0].buffer, 1u);
  EXPECT_EQ(p.liveAtPeak[0].bytes, 50);
  EXPECT_EQ(p.liveAtPeak[1].buffer, 2u);
  int64_t sum = 0;
  for (const ArenaPlan::PeakBuffer &x : p.liveAtPeak)
    sum += x.bytes;
  EXPECT_EQ(sum, p.lowerBoundBytes);
  ArenaPlan none = ls2c::planArena({buf(0, 0, 0, 3)}, bytes());
  EXPECT_EQ(none.peakStep, -1);
  EXPECT_TRUE(none.liveAtPeak.empty());
}

// T fits both below Q (a 101-byte gap) and between Q and S (60 bytes): best
// fit takes the smaller gap, where first fit would take offset 0.
TEST(ArenaPlanner, BestFitTakesTheSmallestGapThatFits) {
  std::vector<PlannedBuffer> b = {buf(0, 101, 0, 1, "P"), buf(1, 100, 0, 9, "Q"),
                                  buf(2, 60, 0, 1, "R"),  buf(3, 40, 0, 9, "S"),
                                  buf(4, 30, 5, 9, "T")};
  ArenaPlan plan = ls2c::planArena(b, bytes(ArenaStrategy::GreedyBySize));
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 101, 201, 261, 201}));
  EXPECT_EQ(plan.arenaBytes, 301);
  EXPECT_EQ(plan.lowerBoundBytes, 301);
  EXPECT_EQ(plan.strategy, "greedy-by-size");
  EXPECT_EQ(ls2c::verifyArenaPlan(b, plan), "");
}

// Greedy by size puts the 5-byte buffer first and strands a 1-byte gap that
// the last buffer cannot use; by duration reaches the lower bound.
TEST(ArenaPlanner, KeepsTheSmallerOfTheTwoOrders) {
  std::vector<PlannedBuffer> b = {buf(0, 4, 0, 3), buf(1, 4, 4, 4),
                                  buf(2, 5, 0, 2), buf(3, 2, 3, 4)};
  ArenaPlan bySize = ls2c::planArena(b, bytes(ArenaStrategy::GreedyBySize));
  EXPECT_EQ(bySize.offsets, (std::vector<int64_t>{5, 0, 0, 9}));
  EXPECT_EQ(bySize.arenaBytes, 11);
  ArenaPlan byDuration =
      ls2c::planArena(b, bytes(ArenaStrategy::GreedyByDuration));
  EXPECT_EQ(byDuration.offsets, (std::vector<int64_t>{0, 0, 4, 4}));
  EXPECT_EQ(byDuration.arenaBytes, 9);
  EXPECT_EQ(byDuration.strategy, "greedy-by-duration");
  ArenaPlan best = ls2c::planArena(b, bytes());
  EXPECT_EQ(best.offsets, byDuration.offsets);
  EXPECT_EQ(best.arenaBytes, 9);
  EXPECT_EQ(best.lowerBoundBytes, 9);
  EXPECT_EQ(best.strategy, "greedy-by-duration");
  EXPECT_EQ(ls2c::verifyArenaPlan(b, bySize), "");
  EXPECT_EQ(ls2c::verifyArenaPlan(b, best), "");
}

TEST(ArenaPlanner, DisjointLifetimesReuseOffsetZero) {
  std::vector<PlannedBuffer> b = {buf(0, 1000, 0, 0), buf(1, 5000, 1, 1),
                                  buf(2, 300, 2, 4)};
  ArenaPlan plan = ls2c::planArena(b);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(plan.arenaBytes, 5120); // 5000 rounded up to 256
  EXPECT_EQ(plan.lowerBoundBytes, 5120);
  EXPECT_EQ(ls2c::verifyArenaPlan(b, plan), "");
}

TEST(ArenaPlanner, SizesRoundUpToTheAlignment) {
  std::vector<PlannedBuffer> b = {buf(0, 1, 0, 0), buf(1, 300, 0, 0),
                                  buf(2, 256, 0, 0)};
  // 256: aligned sizes 256, 512, 256; the tie between 0 and 2 goes by id.
  ArenaPlan plan = ls2c::planArena(b);
  EXPECT_EQ(plan.alignment, 256);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{512, 0, 768}));
  EXPECT_EQ(plan.arenaBytes, 1024);
  EXPECT_EQ(plan.lowerBoundBytes, 1024);
  EXPECT_EQ(ls2c::verifyArenaPlan(b, plan), "");
  // 64: aligned sizes 64, 320, 256.
  ArenaPlanOptions o;
  o.alignment = 64;
  plan = ls2c::planArena(b, o);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{576, 0, 320}));
  EXPECT_EQ(plan.arenaBytes, 640);
  EXPECT_EQ(plan.lowerBoundBytes, 640);
  EXPECT_EQ(ls2c::verifyArenaPlan(b, plan), "");
}

TEST(ArenaPlanner, ZeroSizeBuffersTakeNoSpace) {
  std::vector<PlannedBuffer> b = {buf(0, 512, 0, 2), buf(1, 0, 0, 2),
                                  buf(2, 256, 1, 1), buf(3, 0, 5, 5)};
  ArenaPlan plan = ls2c::planArena(b);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 0, 512, 0}));
  EXPECT_EQ(plan.arenaBytes, 768);
  EXPECT_EQ(plan.lowerBoundBytes, 768);
  EXPECT_EQ(ls2c::verifyArenaPlan(b, plan), "");

  std::vector<PlannedBuffer> onlyEmpty = {buf(0, 0, 0, 3), buf(1, 0, 1, 2)};
  plan = ls2c::planArena(onlyEmpty);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(plan.arenaBytes, 0);
  EXPECT_EQ(plan.lowerBoundBytes, 0);
}

TEST(ArenaPlanner, EmptyInput) {
  ArenaPlan plan = ls2c::planArena({});
  EXPECT_TRUE(plan.offsets.empty());
  EXPECT_TRUE(plan.inPlaceHonored.empty());
  EXPECT_EQ(plan.arenaBytes, 0);
  EXPECT_EQ(plan.lowerBoundBytes, 0);
  EXPECT_EQ(plan.strategy, "greedy-by-size");
  EXPECT_EQ(ls2c::verifyArenaPlan({}, plan), "");
}

//===--- in-place reuse ---------------------------------------------------===//

TEST(ArenaPlanner, InPlaceSharesTheSourceOffset) {
  // B = gelu(A) at step 2, A's last use; C lives across both.
  std::vector<PlannedBuffer> b = {buf(0, 1024, 0, 2, "A"),
                                  inPlace(buf(1, 1024, 2, 4, "B"), 0),
                                  buf(2, 512, 1, 3, "C")};
  ArenaPlan plan = ls2c::planArena(b);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 0, 1024}));
  EXPECT_EQ(plan.inPlaceHonored, (std::vector<bool>{false, true, false}));
  EXPECT_EQ(plan.arenaBytes, 1536);
  EXPECT_EQ(plan.lowerBoundBytes, 1536); // A and B count once at step 2
  EXPECT_EQ(ls2c::verifyArenaPlan(b, plan), "");

  // Without the hint A and B are live together at step 2.
  b[1].inPlaceOf.reset();
  plan = ls2c::planArena(b);
  EXPECT_EQ(plan.lowerBoundBytes, 2560);
  EXPECT_EQ(plan.arenaBytes, 2560);
  EXPECT_NE(plan.offsets[0], plan.offsets[1]);
}

TEST(ArenaPlanner, InPlaceChainsMergeTransitively) {
  // A -> B -> C (each elementwise, smaller or equal), D beside them.
  std::vector<PlannedBuffer> b = {buf(0, 2048, 0, 1, "A"),
                                  inPlace(buf(1, 2048, 1, 2, "B"), 0),
                                  inPlace(buf(2, 1000, 2, 3, "C"), 1),
                                  buf(3, 256, 0, 3, "D")};
  ArenaPlan plan = ls2c::planArena(b);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 0, 0, 2048}));
  EXPECT_EQ(plan.inPlaceHonored,
            (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(plan.arenaBytes, 2304);
  EXPECT_EQ(plan.lowerBoundBytes, 2304);
  EXPECT_EQ(ls2c::verifyArenaPlan(b, plan), "");

  // Hints listed before their sources are honored the same way.
  std::vector<PlannedBuffer> reversed(b.rbegin(), b.rend());
  ArenaPlan r = ls2c::planArena(reversed);
  EXPECT_EQ(r.inPlaceHonored, (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(r.offsets[1], r.offsets[2]);
  EXPECT_EQ(r.offsets[2], r.offsets[3]);
  EXPECT_EQ(r.arenaBytes, 2304);
  EXPECT_EQ(ls2c::verifyArenaPlan(reversed, r), "");
}

TEST(ArenaPlanner, InPlaceHintsThatDoNotQualifyAreIgnored) {
  std::vector<PlannedBuffer> b = {
      buf(0, 512, 0, 2, "A"),
      inPlace(buf(1, 768, 2, 3, "larger"), 0), // B.size > A.size
      inPlace(buf(2, 256, 3, 4, "late"), 0),   // A ended at step 2, not 3
      inPlace(buf(3, 256, 1, 4, "early"), 0)}; // starts before A's end
  ArenaPlan plan = ls2c::planArena(b);
  EXPECT_EQ(plan.inPlaceHonored,
            (std::vector<bool>{false, false, false, false}));
  EXPECT_EQ(ls2c::verifyArenaPlan(b, plan), "");
  EXPECT_EQ(plan.lowerBoundBytes, 512 + 768 + 256);
}

TEST(ArenaPlanner, OnlyOneBufferOverwritesASource) {
  std::vector<PlannedBuffer> b = {buf(0, 512, 0, 2, "A"),
                                  inPlace(buf(1, 512, 2, 3, "B1"), 0),
                                  inPlace(buf(2, 512, 2, 4, "B2"), 0)};
  ArenaPlan plan = ls2c::planArena(b);
  EXPECT_EQ(plan.inPlaceHonored, (std::vector<bool>{false, true, false}));
  EXPECT_EQ(plan.offsets[0], plan.offsets[1]);
  EXPECT_NE(plan.offsets[0], plan.offsets[2]);
  EXPECT_EQ(plan.arenaBytes, 1024);
  EXPECT_EQ(ls2c::verifyArenaPlan(b, plan), "");
}

TEST(ArenaPlanner, DegenerateSingleStepHintsStayCorrect) {
  // Mutual hints at one step would be a cycle: one is honored.
  std::vector<PlannedBuffer> cycle = {inPlace(buf(0, 256, 3, 3), 1),
                                      inPlace(buf(1, 256, 3, 3), 0)};
  ArenaPlan plan = ls2c::planArena(cycle);
  EXPECT_EQ(plan.inPlaceHonored, (std::vector<bool>{true, false}));
  EXPECT_EQ(plan.arenaBytes, 256);
  EXPECT_EQ(ls2c::verifyArenaPlan(cycle, plan), "");

  // A -> B -> C through a one-step B would put A and C (both live at step
  // 3) at one offset without an in-place relation between them: C is
  // refused.
  std::vector<PlannedBuffer> chain = {buf(0, 256, 0, 3, "A"),
                                      inPlace(buf(1, 256, 3, 3, "B"), 0),
                                      inPlace(buf(2, 256, 3, 5, "C"), 1)};
  plan = ls2c::planArena(chain);
  EXPECT_EQ(plan.inPlaceHonored, (std::vector<bool>{false, true, false}));
  EXPECT_NE(plan.offsets[0], plan.offsets[2]);
  EXPECT_EQ(ls2c::verifyArenaPlan(chain, plan), "");
}

//===--- verifier ---------------------------------------------------------===//

TEST(ArenaPlanner, VerifierNamesTheOverlappingPair) {
  std::vector<PlannedBuffer> b = {buf(7, 300, 0, 3, "q"), buf(9, 256, 2, 5, "k")};
  ArenaPlan plan = ls2c::planArena(b);
  ASSERT_EQ(ls2c::verifyArenaPlan(b, plan), "");
  plan.offsets = {0, 256};
  std::string msg = ls2c::verifyArenaPlan(b, plan);
  EXPECT_TRUE(contains(msg, "buffer 7 'q' (steps [0, 3], bytes [0, 300))"))
      << msg;
  EXPECT_TRUE(contains(msg, "buffer 9 'k' (steps [2, 5], bytes [256, 512))"))
      << msg;
  EXPECT_TRUE(contains(msg, "live together at step 2")) << msg;

  plan.offsets = {0, 100};
  EXPECT_TRUE(contains(ls2c::verifyArenaPlan(b, plan), "not a non-negative multiple of 256"));
  plan.offsets = {0, plan.arenaBytes};
  EXPECT_TRUE(contains(ls2c::verifyArenaPlan(b, plan), "does not fit in the arena"));
  plan.offsets = {0};
  EXPECT_TRUE(contains(ls2c::verifyArenaPlan(b, plan), "1 offsets"));

  // An in-place flag the buffers do not justify is caught too.
  std::vector<PlannedBuffer> c = {buf(1, 256, 0, 2), inPlace(buf(2, 256, 3, 4), 1)};
  plan = ls2c::planArena(c);
  ASSERT_EQ(plan.inPlaceHonored, (std::vector<bool>{false, false}));
  plan.inPlaceHonored[1] = true;
  EXPECT_TRUE(contains(ls2c::verifyArenaPlan(c, plan), "marked in place of"));
}

//===--- bad input --------------------------------------------------------===//

TEST(ArenaPlanner, BadInputIsRefusedWithTheBufferAndTheRule) {
  std::string e = errorOf({buf(0, 10, 0, 1), buf(4, -1, 0, 1, "x")});
  EXPECT_TRUE(contains(e, "buffer 4 'x'") && contains(e, "negative")) << e;
  e = errorOf({buf(5, 10, 3, 2)});
  EXPECT_TRUE(contains(e, "buffer 5") && contains(e, "firstStep > lastStep") &&
              contains(e, "[3, 2]"))
      << e;
  e = errorOf({buf(2, 10, 0, 1), buf(2, 10, 0, 1)});
  EXPECT_TRUE(contains(e, "buffer 2") && contains(e, "unique")) << e;
  e = errorOf({inPlace(buf(3, 10, 0, 1), 3)});
  EXPECT_TRUE(contains(e, "buffer 3") && contains(e, "itself")) << e;
  e = errorOf({inPlace(buf(3, 10, 0, 1), 8)});
  EXPECT_TRUE(contains(e, "buffer 3") && contains(e, "names buffer 8")) << e;
  // Two of these fit in int64 once aligned, three do not.
  const int64_t huge = std::numeric_limits<int64_t>::max() / 3;
  e = errorOf({buf(0, huge, 0, 1), buf(1, huge, 0, 1), buf(6, huge, 0, 1)});
  EXPECT_TRUE(contains(e, "buffer 6") && contains(e, "overflow")) << e;
  for (int64_t alignment : {0, -256, 3, 100}) {
    ArenaPlanOptions o;
    o.alignment = alignment;
    e = errorOf({buf(0, 10, 0, 1)}, o);
    EXPECT_TRUE(contains(e, "alignment " + std::to_string(alignment)) &&
                contains(e, "power of two"))
        << e;
  }
  ArenaPlanOptions one;
  one.alignment = 1; // 2^0 is fine
  EXPECT_EQ(errorOf({buf(0, 10, 0, 1)}, one), "");
}

//===--- randomized -------------------------------------------------------===//

/// A random program of 1..200 ops; op i writes buffer i (0..1 MiB) and has
/// up to three consumers among later ops, mostly near it (as in a layer)
/// and sometimes far (a residual, or an activation saved for backward).
/// With `hints`, an op may write in place of an input it reads last.
std::vector<PlannedBuffer> randomProgram(std::mt19937_64 &rng, bool hints) {
  int n = std::uniform_int_distribution<int>(1, 200)(rng);
  std::uniform_int_distribution<int64_t> size(0, int64_t(1) << 20);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  std::vector<PlannedBuffer> b(n);
  std::vector<std::vector<int>> inputs(n);
  for (int i = 0; i < n; ++i) {
    b[i] = buf(i, size(rng), i, i, "t" + std::to_string(i));
    int consumers = i + 1 < n ? std::uniform_int_distribution<int>(0, 3)(rng) : 0;
    for (int c = 0; c < consumers; ++c) {
      int far = n - 1, near = std::min(n - 1, i + 4);
      int hi = coin(rng) < 0.75 ? near : far;
      int j = std::uniform_int_distribution<int>(i + 1, hi)(rng);
      b[i].lastStep = std::max<int64_t>(b[i].lastStep, j);
      inputs[j].push_back(i);
    }
  }
  if (hints) {
    for (int j = 0; j < n; ++j) {
      for (int i : inputs[j]) {
        if (b[i].lastStep != j || coin(rng) < 0.5)
          continue;
        b[j].inPlaceOf = i;
        if (coin(rng) < 0.5)
          b[j].sizeBytes = b[i].sizeBytes; // elementwise: same shape
        break;
      }
    }
  }
  return b;
}

/// Max over steps of the aligned sizes live at that step, by brute force.
int64_t bruteLowerBound(const std::vector<PlannedBuffer> &b, int64_t alignment) {
  int64_t steps = 0, peak = 0;
  for (const PlannedBuffer &x : b)
    steps = std::max(steps, x.lastStep + 1);
  for (int64_t t = 0; t < steps; ++t) {
    int64_t live = 0;
    for (const PlannedBuffer &x : b)
      if (x.firstStep <= t && t <= x.lastStep)
        live += (x.sizeBytes + alignment - 1) / alignment * alignment;
    peak = std::max(peak, live);
  }
  return peak;
}

TEST(ArenaPlanner, RandomProgramsPlanValidArenas) {
  std::mt19937_64 rng(0x1c2a'5eed'2024ULL);
  const int kPrograms = 2000;
  double worst = 0, sum = 0;
  int counted = 0, byDurationWins = 0, byAreaWins = 0;
  for (int p = 0; p < kPrograms; ++p) {
    std::vector<PlannedBuffer> b = randomProgram(rng, /*hints=*/false);
    ArenaPlan plan = ls2c::planArena(b);
    ASSERT_EQ(ls2c::verifyArenaPlan(b, plan), "") << "program " << p;
    ASSERT_EQ(plan.lowerBoundBytes, bruteLowerBound(b, plan.alignment))
        << "program " << p;
    ASSERT_GE(plan.arenaBytes, plan.lowerBoundBytes) << "program " << p;
    ArenaPlan bySize = ls2c::planArena(b, {256, ArenaStrategy::GreedyBySize});
    ArenaPlan byDuration =
        ls2c::planArena(b, {256, ArenaStrategy::GreedyByDuration});
    ArenaPlan byArea = ls2c::planArena(b, {256, ArenaStrategy::GreedyByArea});
    ASSERT_EQ(ls2c::verifyArenaPlan(b, bySize), "") << "program " << p;
    ASSERT_EQ(ls2c::verifyArenaPlan(b, byDuration), "") << "program " << p;
    ASSERT_EQ(ls2c::verifyArenaPlan(b, byArea), "") << "program " << p;
    ASSERT_EQ(plan.arenaBytes, std::min({bySize.arenaBytes, byDuration.arenaBytes,
                                         byArea.arenaBytes}));
    byDurationWins += plan.strategy == "greedy-by-duration";
    byAreaWins += plan.strategy == "greedy-by-area";
    if (plan.lowerBoundBytes > 0) {
      double ratio = double(plan.arenaBytes) / double(plan.lowerBoundBytes);
      worst = std::max(worst, ratio);
      sum += ratio;
      ++counted;
    }
  }
  std::printf("arena / lower bound over %d random programs: worst %.4f, mean "
              "%.4f; greedy-by-duration won %d, greedy-by-area %d\n",
              counted, worst, sum / counted, byDurationWins, byAreaWins);
}

TEST(ArenaPlanner, RandomProgramsWithInPlaceHints) {
  std::mt19937_64 rng(0x1d7a'ce00ULL);
  int honored = 0;
  for (int p = 0; p < 1000; ++p) {
    std::vector<PlannedBuffer> b = randomProgram(rng, /*hints=*/true);
    ArenaPlan plan = ls2c::planArena(b);
    ASSERT_EQ(ls2c::verifyArenaPlan(b, plan), "") << "program " << p;
    ASSERT_GE(plan.arenaBytes, plan.lowerBoundBytes) << "program " << p;
    for (size_t i = 0; i < b.size(); ++i) {
      if (!b[i].inPlaceOf)
        continue;
      const PlannedBuffer &a = b[size_t(*b[i].inPlaceOf)];
      // Here every source is taken at most once and ranges are never
      // degenerate in a way that clashes, so exactly the qualifying hints
      // are honored.
      bool qualifies = a.lastStep == b[i].firstStep && b[i].sizeBytes <= a.sizeBytes;
      ASSERT_EQ(plan.inPlaceHonored[i], qualifies) << "program " << p << " buffer " << i;
      honored += qualifies;
    }
  }
  EXPECT_GT(honored, 1000); // the hints are exercised, not all refused
}

// A program the size of a large model's train step plans validly; its time is
// printed for information (speed is measured in benchmarks, not asserted).
TEST(ArenaPlanner, ThousandsOfBuffers) {
  std::mt19937_64 rng(42);
  const int n = 5000;
  std::vector<PlannedBuffer> b;
  for (int i = 0; i < n; ++i) {
    int64_t first = std::uniform_int_distribution<int64_t>(0, n)(rng);
    int64_t len = std::uniform_int_distribution<int64_t>(0, 60)(rng);
    int64_t size = std::uniform_int_distribution<int64_t>(1, 1 << 22)(rng);
    b.push_back(buf(i, size, first, first + len));
  }
  auto start = std::chrono::steady_clock::now();
  ArenaPlan plan = ls2c::planArena(b);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(ls2c::verifyArenaPlan(b, plan), "");
  EXPECT_GE(plan.arenaBytes, plan.lowerBoundBytes);
  std::printf("%d buffers planned in %.3f s (both orders); arena / lower "
              "bound %.4f\n",
              n, seconds, double(plan.arenaBytes) / double(plan.lowerBoundBytes));
}

} // namespace
