//===- GraphCache.h - which runs of a function replay a CUDA graph --------===//
//
// The bookkeeping behind the Executor's CUDA graphs, with no CUDA in it so
// that it is tested on machines without a GPU (test/unit/GraphCacheTest.cpp):
//
// - GraphKey: everything a captured run bakes into its launches besides the
//   program itself: the function, every argument's shape (each dynamic dim
//   decides grid sizes, GEMM shapes and kernels' int64 parameters) and
//   every argument's and result's device pointer.
// - LruCache: a bounded map that destroys the least recently used value to
//   make room (a graph exec owns device resources, so the bound matters).
// - GraphCache: the decision per run (replay, capture, or run eagerly) and
//   the guard for lazily grown helper buffers. A GemmRunner grows a buffer
//   (the ones vector of its bias-gradient fallback, per dtype) to the
//   largest size a run has asked for, freeing the old one; a graph captured
//   before such a growth would read freed memory. So a run that may grow
//   one (it needs more than every completed run did) runs eagerly, after
//   every graph is destroyed. The sizes only grow, so that happens a few
//   times at most, at the start of training.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_GRAPHCACHE_H
#define LS2C_RUNTIME_GRAPHCACHE_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ls2c::runtime {

/// One run's identity for graph reuse: the function's index, then per
/// argument its rank and dims, then the argument and result pointers (the
/// counts included, so no two different calls flatten alike).
struct GraphKey {
  std::vector<uint64_t> words;
  bool operator==(const GraphKey &o) const { return words == o.words; }
  bool operator!=(const GraphKey &o) const { return words != o.words; }
};

struct GraphKeyHash {
  size_t operator()(const GraphKey &k) const {
    uint64_t h = 1469598103934665603ull; // FNV-1a over the words
    for (uint64_t w : k.words) {
      h ^= w;
      h *= 1099511628211ull;
    }
    return static_cast<size_t>(h ^ (h >> 32));
  }
};

inline GraphKey makeGraphKey(size_t function, const std::vector<std::vector<int64_t>> &shapes,
                             const std::vector<void *> &arguments,
                             const std::vector<void *> &results) {
  GraphKey k;
  size_t n = 3 + shapes.size() + arguments.size() + results.size();
  for (const auto &s : shapes)
    n += s.size();
  k.words.reserve(n);
  k.words.push_back(function);
  k.words.push_back(shapes.size());
  for (const auto &s : shapes) {
    k.words.push_back(s.size());
    for (int64_t d : s)
      k.words.push_back(static_cast<uint64_t>(d));
  }
  k.words.push_back(arguments.size());
  for (void *p : arguments)
    k.words.push_back(reinterpret_cast<uintptr_t>(p));
  for (void *p : results)
    k.words.push_back(reinterpret_cast<uintptr_t>(p));
  return k;
}

/// At most `capacity` (>= 1) values by key; find() makes an entry the most
/// recently used, insert() destroys the least recently used one beyond the
/// capacity. Values may be move-only; each is destroyed exactly once.
template <class Key, class Value, class Hash = std::hash<Key>>
class LruCache {
public:
  explicit LruCache(size_t capacity) : cap(capacity < 1 ? 1 : capacity) {}

  size_t size() const { return index.size(); }
  size_t capacity() const { return cap; }

  /// The value for `key` (now the most recently used), or null.
  Value *find(const Key &key) {
    auto it = index.find(key);
    if (it == index.end())
      return nullptr;
    order.splice(order.begin(), order, it->second);
    return &it->second->second;
  }

  /// Stores `value` for `key` (replacing and destroying an old one) as the
  /// most recently used; returns how many values were evicted (0 or 1).
  size_t insert(const Key &key, Value value) {
    if (Value *old = find(key)) {
      *old = std::move(value);
      return 0;
    }
    size_t evicted = 0;
    if (index.size() >= cap) {
      index.erase(order.back().first);
      order.pop_back();
      evicted = 1;
    }
    order.emplace_front(key, std::move(value));
    index.emplace(key, order.begin());
    return evicted;
  }

  void clear() {
    index.clear();
    order.clear();
  }

private:
  size_t cap;
  std::list<std::pair<Key, Value>> order; ///< most recently used first
  std::unordered_map<Key, typename std::list<std::pair<Key, Value>>::iterator, Hash> index;
};

/// What one run asks of the GEMM runner's lazily grown helper buffers: per
/// kind (a dtype's number), the elements it needs.
using HelperNeeds = std::vector<std::pair<int, int64_t>>;

/// Counts since the executor was made.
struct GraphStats {
  uint64_t captures = 0;  ///< graphs captured and instantiated
  uint64_t replays = 0;   ///< runs that launched a cached graph
  uint64_t eagerRuns = 0; ///< runs that launched step by step
  uint64_t evictions = 0; ///< graphs destroyed to stay within the capacity
  uint64_t dropped = 0;   ///< graphs destroyed before a helper buffer grew
  size_t cached = 0;      ///< graphs held now
};

/// The graphs of one executor (Exec owns a graph exec) and how each run
/// goes. Not thread-safe (neither is the executor).
template <class Exec> class GraphCache {
public:
  static constexpr size_t kDefaultCapacity = 16;

  explicit GraphCache(size_t capacity = kDefaultCapacity) : graphs(capacity) {}

  enum class Action {
    Replay,  ///< launch decide()'s exec
    Capture, ///< capture the run, then store() its exec and launch it
    Eager,   ///< run step by step, then ranEagerly()
  };
  struct Decision {
    Action action = Action::Eager;
    Exec *exec = nullptr; ///< Replay: the graph to launch
  };

  /// How a run goes. `key` null: graphs are not wanted (off, or timing).
  /// A run whose `needs` exceed what every completed run needed may grow a
  /// helper buffer: it runs eagerly and every graph is destroyed first.
  Decision decide(const GraphKey *key, const HelperNeeds &needs) {
    Decision d;
    bool grows = exceeds(needs);
    if (grows && graphs.size() > 0) {
      counts.dropped += graphs.size();
      graphs.clear();
    }
    if (!key || grows) {
      ++counts.eagerRuns;
      return d;
    }
    if (Exec *e = graphs.find(*key)) {
      ++counts.replays;
      d.action = Action::Replay;
      d.exec = e;
      return d;
    }
    d.action = Action::Capture;
    return d;
  }

  /// After a run that decide() sent Eager completed: its helper buffers
  /// are now at least `needs`.
  void ranEagerly(const HelperNeeds &needs) {
    for (const auto &[kind, elements] : needs) {
      int64_t &m = most[kind];
      if (elements > m)
        m = elements;
    }
  }

  /// Stores the graph captured for `key` (the most recently used now).
  void store(const GraphKey &key, Exec exec) {
    ++counts.captures;
    counts.evictions += graphs.insert(key, std::move(exec));
  }

  /// Destroys every graph (the helper sizes seen are kept).
  void clear() { graphs.clear(); }

  GraphStats stats() const {
    GraphStats s = counts;
    s.cached = graphs.size();
    return s;
  }
  size_t capacity() const { return graphs.capacity(); }

private:
  bool exceeds(const HelperNeeds &needs) const {
    for (const auto &[kind, elements] : needs) {
      if (elements <= 0)
        continue;
      auto it = most.find(kind);
      if (it == most.end() || elements > it->second)
        return true;
    }
    return false;
  }

  LruCache<GraphKey, Exec, GraphKeyHash> graphs;
  std::map<int, int64_t> most; ///< per helper kind, the most a run needed
  GraphStats counts;
};

} // namespace ls2c::runtime

#endif // LS2C_RUNTIME_GRAPHCACHE_H
