//===- SequenceTransfers.cpp - what a sequence-parallel step sends --------===//
#include "ls2c/Parallel/SequenceTransfers.h"

#include <algorithm>
#include <tuple>

namespace ls2c::parallel {

const char *payloadName(Payload p) {
  switch (p) {
  case Payload::KeyValue:
    return "kv";
  case Payload::Query:
    return "q";
  case Payload::Partial:
    return "partial";
  case Payload::GradQuery:
    return "dq";
  case Payload::GradKeyValue:
    return "dkv";
  }
  return "?";
}

namespace {

auto key(const Transfer &t) {
  return std::make_tuple(t.to, t.from, static_cast<int>(t.what), t.chunk, t.queryChunk,
                         t.keyChunk);
}

void sortUnique(std::vector<Transfer> &list) {
  std::sort(list.begin(), list.end(),
            [](const Transfer &a, const Transfer &b) { return key(a) < key(b); });
  list.erase(std::unique(list.begin(), list.end(),
                         [](const Transfer &a, const Transfer &b) { return key(a) == key(b); }),
             list.end());
}

} // namespace

std::vector<StepTransfers> planTransfers(const SchedulePlan &plan, bool backward) {
  std::vector<StepTransfers> out;
  for (const std::vector<BlockTask> &step : plan.steps) {
    StepTransfers &s = out.emplace_back();
    for (const BlockTask &b : step) {
      const int qOwner = plan.ownerOf(b.queryChunk), kOwner = plan.ownerOf(b.keyChunk);
      // Fetches name the chunk only (one copy serves every block reading it).
      if (kOwner != b.rank)
        s.fetch.push_back({kOwner, b.rank, Payload::KeyValue, b.keyChunk, 0, 0});
      if (qOwner != b.rank)
        s.fetch.push_back({qOwner, b.rank, Payload::Query, b.queryChunk, 0, 0});
      if (!backward) {
        if (qOwner != b.rank)
          s.give.push_back(
              {b.rank, qOwner, Payload::Partial, b.queryChunk, b.queryChunk, b.keyChunk});
        continue;
      }
      if (qOwner != b.rank)
        s.give.push_back(
            {b.rank, qOwner, Payload::GradQuery, b.queryChunk, b.queryChunk, b.keyChunk});
      if (kOwner != b.rank)
        s.give.push_back(
            {b.rank, kOwner, Payload::GradKeyValue, b.keyChunk, b.queryChunk, b.keyChunk});
    }
    sortUnique(s.fetch);
    sortUnique(s.give);
  }
  return out;
}

int receiveSlot(const std::vector<Transfer> &list, const Transfer &t) {
  int slot = 0;
  for (const Transfer &x : list) {
    if (key(x) == key(t))
      return slot;
    slot += x.to == t.to && x.what == t.what;
  }
  return -1;
}

int maxReceives(const std::vector<StepTransfers> &steps, Payload what) {
  int most = 0;
  for (const StepTransfers &s : steps)
    for (const std::vector<Transfer> *list : {&s.fetch, &s.give})
      for (const Transfer &t : *list)
        if (t.what == what)
          most = std::max(most, static_cast<int>(std::count_if(
                                    list->begin(), list->end(), [&](const Transfer &x) {
                                      return x.to == t.to && x.what == what;
                                    })));
  return most;
}

} // namespace ls2c::parallel
