//===- GradientBuckets.cpp - all-reduce buckets over the gradient workspace ===//
//
// See GradientBuckets.h.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Runtime/GradientBuckets.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <numeric>
#include <set>

namespace ls2c::runtime {

namespace {

constexpr uint64_t kWorkspaceElementBytes = 4; // fp32

/// The byte ranges of result `result` that `step` writes.
void collectWrites(const Step &step, uint32_t result,
                   std::vector<std::pair<uint64_t, uint64_t>> &out) {
  auto add = [&](const BufferRef &b) {
    if (b.space == BufferRef::Space::Result && b.index == result && b.maxBytes > 0)
      out.emplace_back(b.byteOffset, b.byteOffset + b.maxBytes);
  };
  switch (step.kind) {
  case Step::Kind::Launch:
    for (const KernelArg &a : step.args)
      if (a.kind == ParamKind::Pointer)
        add(a.buffer);
    break;
  case Step::Kind::Gemm:
    add(step.gemm.c);
    if (epilogueHasBiasGrad(step.gemm.epilogue))
      add(step.gemm.biasGrad);
    if (epilogueWritesAux(step.gemm.epilogue))
      add(step.gemm.aux);
    break;
  case Step::Kind::Attention:
    if (step.attention.backward) {
      add(step.attention.dq);
      add(step.attention.dk);
      add(step.attention.dv);
    } else {
      add(step.attention.out);
      add(step.attention.lse);
    }
    break;
  case Step::Kind::Copy:
    add(step.copyDestination);
    break;
  }
}

uint64_t checkedMul(uint64_t a, uint64_t b, const std::string &what) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a)
    throw BucketPlanError(what + ": size overflows 64 bits");
  return a * b;
}

/// "640 bytes", "4.00 KiB", "25.00 MiB".
std::string humanBytes(uint64_t bytes) {
  char buf[48];
  if (bytes < 1024)
    std::snprintf(buf, sizeof buf, "%llu bytes", (unsigned long long)bytes);
  else if (bytes < (1u << 20))
    std::snprintf(buf, sizeof buf, "%.2f KiB", double(bytes) / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%.2f MiB", double(bytes) / double(1 << 20));
  return buf;
}

} // namespace

uint64_t slotElements(const ParameterSlot &slot) {
  uint64_t n = 1;
  for (int64_t d : slot.shape) {
    if (d < 0)
      throw BucketPlanError("parameter '" + slot.name + "': negative dim " +
                            std::to_string(d));
    n = checkedMul(n, uint64_t(d), "parameter '" + slot.name + "'");
  }
  return n;
}

GradientReadiness gradientReadiness(const Program &program) {
  GradientReadiness r;
  const size_t n = program.parameters.size();
  auto fallback = [&](std::string why, int64_t last) {
    r.fromProgram = false;
    r.readyStep.assign(n, last);
    r.note = std::move(why) + "; fallback: reverse parameter order, every "
                              "gradient ready after the last step";
    return r;
  };

  const Function *fn = nullptr;
  for (const Function &f : program.functions)
    if (f.name == r.function)
      fn = &f;
  if (!fn)
    return fallback("the program has no @" + r.function, -1);
  r.stepCount = fn->steps.size();
  const int64_t last = int64_t(fn->steps.size()) - 1;

  int64_t result = -1;
  for (size_t i = 0; i < fn->results.size(); ++i)
    if (fn->results[i].kind == ArgumentKind::Workspace &&
        fn->results[i].name == "gradients")
      result = int64_t(i);
  if (result < 0)
    return fallback("@" + r.function +
                        " has no result of kind workspace named 'gradients'",
                    last);

  // Slot byte ranges.
  std::vector<std::pair<uint64_t, uint64_t>> slotBytes(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t begin, end;
    try {
      const ParameterSlot &s = program.parameters[i];
      uint64_t elems = slotElements(s);
      begin = checkedMul(s.offset, kWorkspaceElementBytes, "parameter '" + s.name + "'");
      end = begin + checkedMul(elems, kWorkspaceElementBytes, "parameter '" + s.name + "'");
      if (end < begin)
        throw BucketPlanError("parameter '" + s.name + "': size overflows 64 bits");
    } catch (const BucketPlanError &e) {
      return fallback(e.what(), last);
    }
    slotBytes[i] = {begin, end};
  }

  r.readyStep.assign(n, -1);
  std::vector<std::pair<uint64_t, uint64_t>> writes;
  std::set<int64_t> writers;
  for (size_t s = 0; s < fn->steps.size(); ++s) {
    writes.clear();
    collectWrites(fn->steps[s], uint32_t(result), writes);
    for (const auto &[wb, we] : writes)
      for (size_t i = 0; i < n; ++i)
        if (slotBytes[i].first < slotBytes[i].second && wb < slotBytes[i].second &&
            slotBytes[i].first < we) {
          r.readyStep[i] = int64_t(s);
          writers.insert(int64_t(s));
        }
  }
  for (size_t i = 0; i < n; ++i)
    if (r.readyStep[i] < 0 && slotBytes[i].first < slotBytes[i].second)
      return fallback("no step of @" + r.function + " writes the gradient of '" +
                          program.parameters[i].name + "' (result " +
                          std::to_string(result) + " bytes [" +
                          std::to_string(slotBytes[i].first) + ", " +
                          std::to_string(slotBytes[i].second) + "))",
                      last);
  // Empty slots (a zero dim) are final whenever their neighbours are.
  for (size_t i = 0; i < n; ++i)
    if (r.readyStep[i] < 0)
      r.readyStep[i] = writers.empty() ? last : *writers.begin();
  r.fromProgram = true;
  if (writers.size() == 1 && n > 1)
    r.note = "every gradient is written by one step (" + std::to_string(*writers.begin()) +
             " of " + std::to_string(fn->steps.size()) + " of @" + r.function +
             "): no bucket can be reduced before backward ends";
  return r;
}

GradientBucketPlan planGradientBuckets(const std::vector<ParameterSlot> &slots,
                                       uint64_t workspaceElements,
                                       const GradientReadiness &readiness,
                                       const BucketOptions &options) {
  if (options.reduceDType != DType::F32 && options.reduceDType != DType::BF16)
    throw BucketPlanError(std::string("reduction dtype ") +
                          dtypeName(options.reduceDType) + ": must be f32 or bf16");
  if (options.alignElements == 0)
    throw BucketPlanError("alignElements: must be at least 1");
  const uint64_t eb = dtypeBytes(options.reduceDType);
  if (options.maxBucketBytes / eb < options.alignElements)
    throw BucketPlanError("maxBucketBytes " + std::to_string(options.maxBucketBytes) +
                          ": must hold at least alignElements (" +
                          std::to_string(options.alignElements) + ") elements of " +
                          dtypeName(options.reduceDType));
  if (slots.empty())
    throw BucketPlanError("no parameters: nothing to reduce");
  if (readiness.readyStep.size() != slots.size())
    throw BucketPlanError("readiness has " + std::to_string(readiness.readyStep.size()) +
                          " ready steps for " + std::to_string(slots.size()) +
                          " parameters");

  // Slots by offset, inside the workspace, disjoint.
  std::vector<uint32_t> order(slots.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return slots[a].offset < slots[b].offset;
  });
  std::vector<uint64_t> elems(slots.size());
  for (uint32_t i : order) {
    elems[i] = slotElements(slots[i]);
    if (slots[i].offset > workspaceElements ||
        elems[i] > workspaceElements - slots[i].offset)
      throw BucketPlanError("parameter '" + slots[i].name + "': elements [" +
                            std::to_string(slots[i].offset) + ", " +
                            std::to_string(slots[i].offset + elems[i]) +
                            ") outside the workspace of " +
                            std::to_string(workspaceElements) + " elements");
  }
  for (size_t k = 1; k < order.size(); ++k) {
    const ParameterSlot &a = slots[order[k - 1]], &b = slots[order[k]];
    if (a.offset + elems[order[k - 1]] > b.offset)
      throw BucketPlanError("parameters '" + a.name + "' and '" + b.name +
                            "' overlap at element " + std::to_string(b.offset));
  }

  // Cuts, from the top of the workspace down. Bucket boundaries are aligned
  // cut points (the top is workspaceElements itself).
  const uint64_t align = options.alignElements;
  const uint64_t maxElements = options.maxBucketBytes / eb;
  std::vector<std::pair<uint64_t, uint64_t>> ranges; // [begin, end), descending
  uint64_t end = workspaceElements;   // end of the bucket being filled
  uint64_t begin = workspaceElements; // its begin so far (empty when == end)
  int64_t bucketReady = 0;            // the ready step of its slots
  for (size_t k = order.size(); k-- > 0;) {
    // Non-increasing: an unaligned slot may share its aligned unit (and cut)
    // with the slot above it, whose bucket then holds all of it.
    uint64_t cut = k == 0 ? 0 : slots[order[k]].offset / align * align;
    int64_t ready = readiness.readyStep[order[k]];
    // A slot ready at another step starts a new bucket: joined, it would
    // hold back the bucket's other slots (or wait for them).
    if (end - cut <= maxElements && (begin == end || ready == bucketReady || cut == begin)) {
      bucketReady = begin == end ? ready : std::max(bucketReady, ready);
      begin = cut;
      continue;
    }
    if (begin < end) { // close what we have; the slot starts a new bucket
      ranges.emplace_back(begin, end);
      end = begin;
    }
    begin = cut;
    bucketReady = ready;
    if (end - cut > maxElements) { // the slot alone exceeds the limit
      ranges.emplace_back(begin, end);
      end = begin;
    }
  }
  if (begin < end)
    ranges.emplace_back(begin, end);

  GradientBucketPlan plan;
  plan.options = options;
  plan.workspaceElements = workspaceElements;
  plan.readiness = readiness;
  for (const auto &[b, e] : ranges) {
    GradientBucket bucket;
    bucket.beginElement = b;
    bucket.endElement = e;
    bucket.reduceBytes = (e - b) * eb;
    for (uint32_t i : order) {
      uint64_t so = slots[i].offset, se = so + elems[i];
      if (elems[i] > 0 && so < e && b < se) {
        bucket.parameters.push_back(i);
        bucket.readyStep = std::max(bucket.readyStep, readiness.readyStep[i]);
      }
    }
    plan.buckets.push_back(std::move(bucket));
  }
  // `ranges` runs from the top down; a stable sort keeps that for ties.
  std::stable_sort(plan.buckets.begin(), plan.buckets.end(),
                   [](const GradientBucket &a, const GradientBucket &b) {
                     return a.readyStep < b.readyStep;
                   });
  return plan;
}

GradientBucketPlan planGradientBuckets(const Program &program,
                                       const BucketOptions &options) {
  return planGradientBuckets(program.parameters, program.workspaceElements,
                             gradientReadiness(program), options);
}

std::string formatGradientBucketPlan(const GradientBucketPlan &plan,
                                     const std::vector<ParameterSlot> &parameters) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "gradient buckets: %zu of at most %s in %s, workspace "
                "%llu fp32 elements (%s), %llu-element alignment\n",
                plan.buckets.size(), humanBytes(plan.options.maxBucketBytes).c_str(),
                dtypeName(plan.options.reduceDType),
                (unsigned long long)plan.workspaceElements,
                humanBytes(plan.workspaceElements * 4).c_str(),
                (unsigned long long)plan.options.alignElements);
  out += line;
  const GradientReadiness &r = plan.readiness;
  out += "ready points: ";
  out += r.fromProgram ? "from the writes of @" + r.function + " (" +
                             std::to_string(r.stepCount) + " steps)"
                       : std::string("fallback");
  out += "\n";
  if (!r.note.empty())
    out += "note: " + r.note + "\n";
  out += "  #  ready  elements [begin, end)      reduce bytes  params  first .. last\n";
  for (size_t i = 0; i < plan.buckets.size(); ++i) {
    const GradientBucket &b = plan.buckets[i];
    std::string range = "[" + std::to_string(b.beginElement) + ", " +
                        std::to_string(b.endElement) + ")";
    auto name = [&](uint32_t p) {
      return p < parameters.size() ? parameters[p].name : "#" + std::to_string(p);
    };
    std::string names = b.parameters.empty()
                            ? std::string("(padding)")
                            : name(b.parameters.front()) +
                                  (b.parameters.size() > 1
                                       ? " .. " + name(b.parameters.back())
                                       : std::string());
    std::snprintf(line, sizeof line, "%3zu  %5lld  %-24s  %12llu  %6zu  %s\n", i,
                  (long long)b.readyStep, range.c_str(),
                  (unsigned long long)b.reduceBytes, b.parameters.size(),
                  names.c_str());
    out += line;
  }
  return out;
}

} // namespace ls2c::runtime
