//===- GradientBucketsTestUtil.h - invariants of a gradient bucket plan ---===//
//
// Shared by GradientBucketsTest.cpp (synthetic slots) and
// GradientBucketsPresetTest.cpp (the tiny presets' compiled programs).
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TEST_UNIT_GRADIENTBUCKETSTESTUTIL_H
#define LS2C_TEST_UNIT_GRADIENTBUCKETSTESTUTIL_H

#include "ls2c/Runtime/GradientBuckets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace ls2c::testing {

inline runtime::Dim staticDim(int64_t size) {
  runtime::Dim d;
  d.size = size;
  return d;
}

/// Checks every invariant GradientBuckets.h promises:
///  - the buckets, by offset, tile [0, workspaceElements) exactly (every
///    element, so every gradient byte, in exactly one bucket);
///  - every bucket starts at a multiple of alignElements and ends at one or
///    at the workspace's end;
///  - reduceBytes = elements x the reduction dtype's bytes, within
///    maxBucketBytes unless the bucket holds a single parameter (checked
///    when `alignedSlots`: every slot offset a multiple of alignElements);
///  - launch order: readyStep non-decreasing, ties from the top down;
///  - each bucket lists exactly the non-empty slots it overlaps, by offset,
///    and its readyStep is their latest (-1 when none).
inline void checkBucketPlan(const runtime::GradientBucketPlan &plan,
                            const std::vector<runtime::ParameterSlot> &slots,
                            bool alignedSlots = true) {
  using namespace runtime;
  const uint64_t W = plan.workspaceElements;
  const uint64_t align = plan.options.alignElements;
  const uint64_t eb = dtypeBytes(plan.options.reduceDType);
  if (W == 0) {
    EXPECT_TRUE(plan.buckets.empty());
    return;
  }
  ASSERT_FALSE(plan.buckets.empty());

  std::vector<const GradientBucket *> byOffset;
  for (const GradientBucket &b : plan.buckets)
    byOffset.push_back(&b);
  std::sort(byOffset.begin(), byOffset.end(),
            [](auto *a, auto *b) { return a->beginElement < b->beginElement; });
  uint64_t at = 0;
  for (const GradientBucket *b : byOffset) {
    EXPECT_EQ(b->beginElement, at) << "gap or overlap";
    EXPECT_LT(b->beginElement, b->endElement) << "empty bucket";
    EXPECT_EQ(b->beginElement % align, 0u);
    EXPECT_TRUE(b->endElement % align == 0 || b->endElement == W) << b->endElement;
    EXPECT_EQ(b->reduceBytes, b->elements() * eb);
    if (alignedSlots && b->reduceBytes > plan.options.maxBucketBytes) {
      EXPECT_EQ(b->parameters.size(), 1u)
          << "bucket [" << b->beginElement << ", " << b->endElement
          << ") over the limit with several parameters";
    }
    at = b->endElement;
  }
  EXPECT_EQ(at, W);

  for (size_t i = 1; i < plan.buckets.size(); ++i) {
    const GradientBucket &a = plan.buckets[i - 1], &b = plan.buckets[i];
    EXPECT_LE(a.readyStep, b.readyStep) << "ready points not monotone at " << i;
    if (a.readyStep == b.readyStep) {
      EXPECT_GT(a.beginElement, b.beginElement) << "tie order at " << i;
    }
  }

  std::vector<int> seen(slots.size(), 0);
  for (const GradientBucket &b : plan.buckets) {
    std::vector<uint32_t> expected;
    int64_t ready = -1;
    std::vector<uint32_t> order(slots.size());
    for (uint32_t i = 0; i < slots.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
      return slots[x].offset < slots[y].offset;
    });
    for (uint32_t i : order) {
      uint64_t n = slotElements(slots[i]);
      if (n > 0 && slots[i].offset < b.endElement && b.beginElement < slots[i].offset + n) {
        expected.push_back(i);
        ready = std::max(ready, plan.readiness.readyStep[i]);
        ++seen[i];
      }
    }
    EXPECT_EQ(b.parameters, expected);
    EXPECT_EQ(b.readyStep, ready);
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slotElements(slots[i]) == 0)
      continue;
    EXPECT_GE(seen[i], 1) << slots[i].name << " in no bucket";
    if (alignedSlots) {
      EXPECT_EQ(seen[i], 1) << slots[i].name << " split across buckets";
    }
  }
}

} // namespace ls2c::testing

#endif // LS2C_TEST_UNIT_GRADIENTBUCKETSTESTUTIL_H
