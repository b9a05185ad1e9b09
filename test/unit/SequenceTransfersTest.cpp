//===- SequenceTransfersTest.cpp - the messages of a sequence-parallel plan ===//
//
// Played out on simulated holdings: after a step's fetches every block finds
// its chunks on its rank, every result a rank computes for another rank's
// chunk is given back exactly once, receive slots are distinct per rank and
// step, and DistAttn's causal forward at P = 4 sends what LightSeq's figure
// shows (section 3.2): keys down the diagonals, one query chunk to the idle
// rank and its partial back.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Parallel/SequenceTransfers.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

using namespace ls2c::parallel;

namespace {

void checkPlan(const SchedulePlan &plan, bool backward) {
  std::vector<StepTransfers> steps = planTransfers(plan, backward);
  ASSERT_EQ(steps.size(), plan.steps.size());
  std::set<std::tuple<int, int64_t, int64_t, int>> given; // (to, q chunk, k chunk, payload)
  for (size_t t = 0; t < steps.size(); ++t) {
    std::set<std::tuple<int, int64_t, int>> have; // (rank, chunk, payload)
    for (int64_t c = 0; c < plan.chunks; ++c)
      for (Payload p : {Payload::KeyValue, Payload::Query})
        have.insert({plan.ownerOf(c), c, static_cast<int>(p)});
    std::set<std::pair<int, int>> slots;
    for (const Transfer &x : steps[t].fetch) {
      ASSERT_EQ(x.from, plan.ownerOf(x.chunk)) << "fetched from its owner";
      ASSERT_NE(x.from, x.to);
      have.insert({x.to, x.chunk, static_cast<int>(x.what)});
      EXPECT_TRUE(slots.insert({x.to * 8 + static_cast<int>(x.what), receiveSlot(steps[t].fetch, x)})
                      .second);
    }
    for (const BlockTask &b : plan.steps[t]) {
      EXPECT_TRUE(have.count({b.rank, b.keyChunk, static_cast<int>(Payload::KeyValue)}))
          << "step " << t << " rank " << b.rank << " lacks keys of chunk " << b.keyChunk;
      EXPECT_TRUE(have.count({b.rank, b.queryChunk, static_cast<int>(Payload::Query)}))
          << "step " << t << " rank " << b.rank << " lacks queries of chunk " << b.queryChunk;
    }
    slots.clear();
    for (const Transfer &x : steps[t].give) {
      EXPECT_EQ(x.to, plan.ownerOf(x.chunk));
      EXPECT_TRUE(given.insert({x.to, x.queryChunk, x.keyChunk, static_cast<int>(x.what)}).second)
          << "given twice";
      EXPECT_TRUE(slots.insert({x.to * 8 + static_cast<int>(x.what), receiveSlot(steps[t].give, x)})
                      .second);
    }
  }
  // Every block computed away from an owner comes back to it.
  for (size_t t = 0; t < plan.steps.size(); ++t)
    for (const BlockTask &b : plan.steps[t]) {
      if (plan.ownerOf(b.queryChunk) != b.rank) {
        EXPECT_TRUE(given.count({plan.ownerOf(b.queryChunk), b.queryChunk, b.keyChunk,
                                 static_cast<int>(backward ? Payload::GradQuery
                                                           : Payload::Partial)}));
      }
      if (backward && plan.ownerOf(b.keyChunk) != b.rank) {
        EXPECT_TRUE(given.count({plan.ownerOf(b.keyChunk), b.queryChunk, b.keyChunk,
                                 static_cast<int>(Payload::GradKeyValue)}));
      }
    }
}

TEST(SequenceTransfers, EveryBlockFindsItsInputsAndReturnsItsResults) {
  for (Schedule s : {Schedule::DistAttn, Schedule::ZigzagRing})
    for (int P = 1; P <= 8; ++P)
      for (bool causal : {true, false})
        for (bool backward : {false, true}) {
          SCOPED_TRACE(std::string(scheduleName(s)) + " P=" + std::to_string(P) +
                       (causal ? " causal" : "") + (backward ? " backward" : ""));
          checkPlan(planSchedule(s, P, 1000 + P, causal), backward);
        }
}

TEST(SequenceTransfers, DistAttnCausalForwardAtFourRanks) {
  SchedulePlan plan = planSchedule(Schedule::DistAttn, 4, 4096, true);
  std::vector<StepTransfers> steps = planTransfers(plan, false);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_TRUE(steps[0].fetch.empty());
  EXPECT_TRUE(steps[0].give.empty());
  // Distance 1: ranks 1..3 take their left neighbour's keys; idle rank 0
  // takes chunk 3's queries (block (3, 0)) and gives the partial back.
  ASSERT_EQ(steps[1].fetch.size(), 4u);
  EXPECT_EQ(steps[1].fetch[0].to, 0);
  EXPECT_EQ(steps[1].fetch[0].from, 3);
  EXPECT_EQ(steps[1].fetch[0].what, Payload::Query);
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(steps[1].fetch[i].to, i);
    EXPECT_EQ(steps[1].fetch[i].from, i - 1);
    EXPECT_EQ(steps[1].fetch[i].what, Payload::KeyValue);
  }
  ASSERT_EQ(steps[1].give.size(), 1u);
  EXPECT_EQ(steps[1].give[0].from, 0);
  EXPECT_EQ(steps[1].give[0].to, 3);
  EXPECT_EQ(steps[1].give[0].what, Payload::Partial);
  // Distance 2 = P - 2: no helpers, ranks 2 and 3 take keys two back.
  ASSERT_EQ(steps[2].fetch.size(), 2u);
  EXPECT_EQ(steps[2].fetch[0].from, 0);
  EXPECT_EQ(steps[2].fetch[1].from, 1);
  EXPECT_TRUE(steps[2].give.empty());
  EXPECT_EQ(maxReceives(steps, Payload::KeyValue), 1);
  EXPECT_EQ(maxReceives(steps, Payload::Query), 1);
  EXPECT_EQ(maxReceives(steps, Payload::Partial), 1);
  EXPECT_EQ(maxReceives(steps, Payload::GradQuery), 0);
}

TEST(SequenceTransfers, ZigzagFetchesEachKeyChunkOnce) {
  // Rank r's two query chunks read the same two key chunks: two fetches,
  // not four, and nothing to give back (a rank owns all its queries).
  SchedulePlan plan = planSchedule(Schedule::ZigzagRing, 4, 4096, true);
  std::vector<StepTransfers> fwd = planTransfers(plan, false);
  EXPECT_EQ(maxReceives(fwd, Payload::KeyValue), 2);
  EXPECT_EQ(maxReceives(fwd, Payload::Query), 0);
  for (const StepTransfers &s : fwd)
    EXPECT_TRUE(s.give.empty());
  std::vector<StepTransfers> bwd = planTransfers(plan, true);
  // Rank r's two query chunks against rank s's two key chunks: four blocks
  // at most (three when causal hides one), each giving dk, dv back.
  EXPECT_GE(maxReceives(bwd, Payload::GradKeyValue), 2);
  EXPECT_LE(maxReceives(bwd, Payload::GradKeyValue), 4);
  for (const StepTransfers &s : bwd)
    for (const Transfer &t : s.give)
      EXPECT_EQ(t.what, Payload::GradKeyValue);
}

} // namespace

namespace {

TEST(SchedulePlanChunks, RangesTileTheSequenceAndEachRankOwnsItsChunks) {
  for (Schedule s : {Schedule::DistAttn, Schedule::ZigzagRing})
    for (int P = 1; P <= 8; ++P)
      for (int64_t S : {int64_t(5), int64_t(1000), int64_t(1001)}) {
        SchedulePlan plan = planSchedule(s, P, S, true);
        EXPECT_EQ(plan.tokens, S);
        int64_t next = 0;
        for (int64_t c = 0; c < plan.chunks; ++c) {
          EXPECT_EQ(plan.chunkBegin(c), next);
          EXPECT_GE(plan.chunkEnd(c), plan.chunkBegin(c));
          EXPECT_LE(plan.chunkEnd(c) - plan.chunkBegin(c), plan.chunkLen);
          next = plan.chunkEnd(c);
        }
        EXPECT_EQ(next, S);
        int64_t owned = 0;
        for (int r = 0; r < P; ++r)
          for (int64_t c : plan.chunksOf(r)) {
            EXPECT_EQ(plan.ownerOf(c), r);
            ++owned;
          }
        EXPECT_EQ(owned, plan.chunks);
      }
}

} // namespace
