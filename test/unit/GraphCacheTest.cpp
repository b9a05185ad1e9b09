//===- GraphCacheTest.cpp - the executor's CUDA graph bookkeeping ---------===//
//
// runtime/include/ls2c/Runtime/GraphCache.h without a GPU: what a key
// distinguishes, LRU eviction destroying each graph exactly once, and the
// decision per run (replay, capture, eager) with the helper-buffer guard.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Runtime/GraphCache.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

using namespace ls2c::runtime;

namespace {

/// Stands in for a graph exec: counts its destructions (moved-from husks
/// own nothing and count nothing).
class FakeExec {
public:
  FakeExec(int id, std::shared_ptr<std::multiset<int>> destroyed)
      : id(id), destroyed(std::move(destroyed)) {}
  FakeExec(FakeExec &&o) noexcept : id(o.id), destroyed(std::move(o.destroyed)) {}
  FakeExec &operator=(FakeExec &&o) noexcept {
    release();
    id = o.id;
    destroyed = std::move(o.destroyed);
    return *this;
  }
  FakeExec(const FakeExec &) = delete;
  FakeExec &operator=(const FakeExec &) = delete;
  ~FakeExec() { release(); }
  int id;

private:
  void release() {
    if (destroyed)
      destroyed->insert(id);
    destroyed.reset();
  }
  std::shared_ptr<std::multiset<int>> destroyed;
};

int buffers[8]; ///< addresses standing in for device pointers

GraphKey keyOf(size_t function, std::vector<std::vector<int64_t>> shapes,
               std::vector<void *> args, std::vector<void *> results) {
  return makeGraphKey(function, shapes, args, results);
}

GraphKey base() { return keyOf(0, {{128}, {128, 64}}, {&buffers[0], &buffers[1]}, {&buffers[2]}); }

TEST(GraphKeyTest, EqualCallsGiveEqualKeysAndHashes) {
  GraphKey a = base(), b = base();
  EXPECT_EQ(a, b);
  EXPECT_EQ(GraphKeyHash()(a), GraphKeyHash()(b));
}

TEST(GraphKeyTest, EverythingBakedIntoLaunchesDistinguishesKeys) {
  GraphKey a = base();
  std::vector<GraphKey> others = {
      // another function
      keyOf(1, {{128}, {128, 64}}, {&buffers[0], &buffers[1]}, {&buffers[2]}),
      // another token count (a dynamic dim), in either argument
      keyOf(0, {{96}, {128, 64}}, {&buffers[0], &buffers[1]}, {&buffers[2]}),
      keyOf(0, {{128}, {128, 63}}, {&buffers[0], &buffers[1]}, {&buffers[2]}),
      // another argument buffer, or the same buffers in other roles
      keyOf(0, {{128}, {128, 64}}, {&buffers[3], &buffers[1]}, {&buffers[2]}),
      keyOf(0, {{128}, {128, 64}}, {&buffers[1], &buffers[0]}, {&buffers[2]}),
      // another result buffer
      keyOf(0, {{128}, {128, 64}}, {&buffers[0], &buffers[1]}, {&buffers[4]}),
      // a buffer moved from the arguments to the results
      keyOf(0, {{128}, {128, 64}}, {&buffers[0]}, {&buffers[1], &buffers[2]}),
      // the same dims split between arguments differently
      keyOf(0, {{128, 128}, {64}}, {&buffers[0], &buffers[1]}, {&buffers[2]}),
  };
  std::set<std::vector<uint64_t>> distinct = {a.words};
  for (const GraphKey &o : others) {
    EXPECT_NE(a, o);
    distinct.insert(o.words);
  }
  EXPECT_EQ(distinct.size(), others.size() + 1);
}

TEST(LruCacheTest, EvictsTheLeastRecentlyUsedAndDestroysEachValueOnce) {
  auto destroyed = std::make_shared<std::multiset<int>>();
  {
    LruCache<std::string, FakeExec> cache(2);
    EXPECT_EQ(cache.insert("a", FakeExec(1, destroyed)), 0u);
    EXPECT_EQ(cache.insert("b", FakeExec(2, destroyed)), 0u);
    EXPECT_TRUE(destroyed->empty());
    // Using "a" makes "b" the least recently used.
    ASSERT_NE(cache.find("a"), nullptr);
    EXPECT_EQ(cache.find("a")->id, 1);
    EXPECT_EQ(cache.insert("c", FakeExec(3, destroyed)), 1u);
    EXPECT_EQ(*destroyed, std::multiset<int>({2}));
    EXPECT_EQ(cache.find("b"), nullptr);
    ASSERT_NE(cache.find("c"), nullptr);
    EXPECT_EQ(cache.size(), 2u);
    // Replacing a key destroys the old value, evicts nothing.
    EXPECT_EQ(cache.insert("c", FakeExec(4, destroyed)), 0u);
    EXPECT_EQ(*destroyed, std::multiset<int>({2, 3}));
    EXPECT_EQ(cache.find("c")->id, 4);
    cache.clear();
    EXPECT_EQ(*destroyed, std::multiset<int>({1, 2, 3, 4}));
    EXPECT_EQ(cache.size(), 0u);
    cache.insert("d", FakeExec(5, destroyed));
  }
  // The cache's destruction destroys what it holds.
  EXPECT_EQ(*destroyed, std::multiset<int>({1, 2, 3, 4, 5}));
}

TEST(LruCacheTest, CapacityIsAtLeastOne) {
  auto destroyed = std::make_shared<std::multiset<int>>();
  LruCache<int, FakeExec> cache(0);
  EXPECT_EQ(cache.capacity(), 1u);
  cache.insert(1, FakeExec(1, destroyed));
  EXPECT_EQ(cache.insert(2, FakeExec(2, destroyed)), 1u);
  EXPECT_EQ(cache.find(1), nullptr);
  EXPECT_NE(cache.find(2), nullptr);
}

using Cache = GraphCache<FakeExec>;
using Action = Cache::Action;

TEST(GraphCacheTest, CapturesOnceThenReplays) {
  auto destroyed = std::make_shared<std::multiset<int>>();
  Cache cache;
  EXPECT_EQ(cache.capacity(), Cache::kDefaultCapacity);
  GraphKey k = base();
  Cache::Decision d = cache.decide(&k, {});
  EXPECT_EQ(d.action, Action::Capture);
  cache.store(k, FakeExec(1, destroyed));
  for (int i = 0; i < 3; ++i) {
    d = cache.decide(&k, {});
    ASSERT_EQ(d.action, Action::Replay);
    ASSERT_NE(d.exec, nullptr);
    EXPECT_EQ(d.exec->id, 1);
  }
  // Another token count is another graph.
  GraphKey other = keyOf(0, {{64}, {64, 64}}, {&buffers[0], &buffers[1]}, {&buffers[2]});
  EXPECT_EQ(cache.decide(&other, {}).action, Action::Capture);
  GraphStats s = cache.stats();
  EXPECT_EQ(s.captures, 1u);
  EXPECT_EQ(s.replays, 3u);
  EXPECT_EQ(s.eagerRuns, 0u);
  EXPECT_EQ(s.cached, 1u);
}

TEST(GraphCacheTest, RunsWithoutAKeyAreEagerAndKeepTheGraphs) {
  auto destroyed = std::make_shared<std::multiset<int>>();
  Cache cache;
  GraphKey k = base();
  cache.store(k, FakeExec(1, destroyed));
  EXPECT_EQ(cache.decide(nullptr, {}).action, Action::Eager); // timing, or graphs off
  EXPECT_EQ(cache.decide(&k, {}).action, Action::Replay);
  EXPECT_TRUE(destroyed->empty());
  EXPECT_EQ(cache.stats().eagerRuns, 1u);
}

TEST(GraphCacheTest, AHelperBufferThatMayGrowDropsEveryGraphAndRunsEagerly) {
  auto destroyed = std::make_shared<std::multiset<int>>();
  Cache cache;
  const int f16 = 1, f32 = 0;
  GraphKey k = base();
  // The first run with a bias gradient is eager: the runner has no ones yet.
  EXPECT_EQ(cache.decide(&k, {{f16, 512}}).action, Action::Eager);
  cache.ranEagerly({{f16, 512}});
  EXPECT_EQ(cache.decide(&k, {{f16, 512}}).action, Action::Capture);
  cache.store(k, FakeExec(1, destroyed));
  // Needing less (or nothing) keeps the graph.
  EXPECT_EQ(cache.decide(&k, {{f16, 256}, {f32, 0}}).action, Action::Replay);
  EXPECT_TRUE(destroyed->empty());
  // More than any completed run needed: the graph (which may point at the
  // buffer about to be freed) goes before the run, which is eager.
  GraphKey bigger = keyOf(0, {{1024}, {1024, 64}}, {&buffers[0], &buffers[1]}, {&buffers[2]});
  EXPECT_EQ(cache.decide(&bigger, {{f16, 1024}}).action, Action::Eager);
  EXPECT_EQ(*destroyed, std::multiset<int>({1}));
  EXPECT_EQ(cache.stats().cached, 0u);
  EXPECT_EQ(cache.stats().dropped, 1u);
  // Another dtype has its own buffer: a high f16 mark does not cover f32.
  cache.ranEagerly({{f16, 1024}});
  EXPECT_EQ(cache.decide(&k, {{f16, 512}}).action, Action::Capture);
  cache.store(k, FakeExec(2, destroyed));
  EXPECT_EQ(cache.decide(&k, {{f32, 16}}).action, Action::Eager);
  EXPECT_EQ(*destroyed, std::multiset<int>({1, 2}));
}

TEST(GraphCacheTest, AFailedEagerRunDoesNotRaiseTheMark) {
  Cache cache;
  GraphKey k = base();
  EXPECT_EQ(cache.decide(&k, {{1, 100}}).action, Action::Eager);
  // No ranEagerly (the run threw): the same needs are still a possible growth.
  EXPECT_EQ(cache.decide(&k, {{1, 100}}).action, Action::Eager);
}

TEST(GraphCacheTest, EagerRunsWithoutAKeyStillGuardTheGraphs) {
  // Timing runs go step by step but share the GEMM runner: one that grows
  // its buffer must not leave graphs pointing at the old one.
  auto destroyed = std::make_shared<std::multiset<int>>();
  Cache cache;
  GraphKey k = base();
  cache.ranEagerly({{1, 100}});
  cache.store(k, FakeExec(1, destroyed));
  EXPECT_EQ(cache.decide(nullptr, {{1, 200}}).action, Action::Eager);
  EXPECT_EQ(*destroyed, std::multiset<int>({1}));
}

TEST(GraphCacheTest, KeepsAtMostItsCapacityEvictingTheLeastRecentlyUsed) {
  auto destroyed = std::make_shared<std::multiset<int>>();
  Cache cache(3);
  std::vector<GraphKey> keys;
  for (int i = 0; i < 4; ++i)
    keys.push_back(keyOf(0, {{int64_t(8 * (i + 1))}}, {&buffers[0]}, {}));
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(cache.decide(&keys[i], {}).action, Action::Capture);
    cache.store(keys[i], FakeExec(i, destroyed));
  }
  // Replaying key 0 makes key 1 the least recently used.
  EXPECT_EQ(cache.decide(&keys[0], {}).action, Action::Replay);
  ASSERT_EQ(cache.decide(&keys[3], {}).action, Action::Capture);
  cache.store(keys[3], FakeExec(3, destroyed));
  EXPECT_EQ(*destroyed, std::multiset<int>({1}));
  EXPECT_EQ(cache.decide(&keys[1], {}).action, Action::Capture);
  EXPECT_EQ(cache.decide(&keys[0], {}).action, Action::Replay);
  EXPECT_EQ(cache.decide(&keys[2], {}).action, Action::Replay);
  EXPECT_EQ(cache.decide(&keys[3], {}).action, Action::Replay);
  GraphStats s = cache.stats();
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.captures, 4u);
  EXPECT_EQ(s.cached, 3u);
  cache.clear();
  EXPECT_EQ(*destroyed, std::multiset<int>({0, 1, 2, 3}));
}

} // namespace
