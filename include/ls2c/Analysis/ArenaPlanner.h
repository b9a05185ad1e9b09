//===- ArenaPlanner.h - static offsets for buffers in one arena -----------===//
//
// Every intermediate tensor of a training step gets a static byte offset in
// one device arena, planned once at the maximum batch size. Buffers whose
// live ranges intersect must not overlap in memory; buffers that are never
// live together may share bytes.
//
// Units: sizes and offsets are bytes; live ranges are inclusive intervals
// [firstStep, lastStep] of program steps (positions in the scheduled
// program; one op per step is the intended reading but not required).
//
// Algorithm: the greedy best-fit offset assignment of XLA's heap simulator,
// `GlobalDecreasingSizeBestFitHeap` (xla/service/heap_simulator), which is
// also the "greedy by size" assignment of Pisarchyk & Lee, "Efficient Memory
// Management for Deep Neural Net Inference" (MLSys workshop 2020; TFLite's
// GPU delegate, greedy_by_size_assignment.cc). Buffers are taken in some
// order; each goes into the smallest gap between already placed buffers that
// conflict with it in time and that is large enough (lowest offset on ties),
// else just above the highest of them. Three orders are run, the two of
// XLA's buffer assignment (`ChooseBestHeapAlgorithm` over kSpatial and
// kTemporal) and the product of the two keys, and the smallest arena is
// kept (the first of equals):
//   - greedy by size (XLA kSpatial): size descending, then live-range length
//     descending, then id ascending;
//   - greedy by duration (XLA kTemporal): live-range length descending, then
//     size descending, then id ascending;
//   - greedy by area: size x steps live descending, then size descending,
//     then id ascending (small programs whose buffers are a few sizes of
//     similar lifetimes, where neither key alone separates them: tiny-bert's
//     train step plans at 1.049x its lower bound this way, 1.066x without).
// Placement scans the placed buffers in offset order, so planning n buffers
// is O(n^2) in the worst case with a small constant (thousands of buffers
// plan in milliseconds).
//
// No MLIR dependency: the runtime and the bundle loader may link this.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_ANALYSIS_ARENAPLANNER_H
#define LS2C_ANALYSIS_ARENAPLANNER_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ls2c {

/// Offsets are multiples of this many bytes unless the caller asks otherwise;
/// 256 bytes is what cudaMalloc guarantees, so vectorized and TMA accesses
/// see the same alignment inside the arena as outside it.
inline constexpr int64_t kDefaultArenaAlignment = 256;

/// One buffer to place. Its index in the input vector is its index in
/// ArenaPlan::offsets; `id` names it in messages and breaks ordering ties.
struct PlannedBuffer {
  int64_t id = 0;        ///< unique among the buffers of one plan
  int64_t sizeBytes = 0; ///< >= 0; rounded up to the alignment for placement
  int64_t firstStep = 0; ///< the step that writes it (inclusive)
  int64_t lastStep = 0;  ///< its last reader's step (inclusive), >= firstStep
  std::string name;      ///< optional, for messages

  /// In-place hint: the id of a buffer A this buffer may overwrite, because
  /// the op producing it (an elementwise op) reads A for the last time at
  /// that same step. Honored when A.lastStep == firstStep, sizeBytes <=
  /// A.sizeBytes, no other buffer already took A's place, and sharing adds
  /// no overlap beyond this pair (possible only with single-step ranges);
  /// otherwise ignored. An honored pair gets one offset and is planned as
  /// one buffer over the union of the two ranges; chains (A <- B <- C) merge
  /// transitively.
  std::optional<int64_t> inPlaceOf;
};

/// The order in which the greedy placement takes the buffers.
enum class ArenaStrategy {
  Best,             ///< run the orders below, keep the smallest arena
  GreedyBySize,     ///< XLA kSpatial (TFLite / Pisarchyk & Lee greedy by size)
  GreedyByDuration, ///< XLA kTemporal
  GreedyByArea,     ///< size x live-range length
};

/// "greedy-by-size", "greedy-by-duration", "greedy-by-area" or "best".
const char *arenaStrategyName(ArenaStrategy strategy);

struct ArenaPlanOptions {
  int64_t alignment = kDefaultArenaAlignment; ///< bytes, a power of two
  ArenaStrategy strategy = ArenaStrategy::Best;
};

struct ArenaPlan {
  /// Byte offset of buffers[i] in the arena; a multiple of `alignment`.
  /// Zero-size buffers are at 0 (they occupy nothing).
  std::vector<int64_t> offsets;
  /// inPlaceHonored[i]: buffers[i]'s inPlaceOf hint was applied, so it has
  /// the same offset as that buffer.
  std::vector<bool> inPlaceHonored;
  /// Bytes the arena needs: max over buffers of offset + aligned size; 0 for
  /// no buffers. A multiple of `alignment`.
  int64_t arenaBytes = 0;
  /// No placement can do better than this many bytes: the maximum over
  /// steps of the aligned sizes live at that step, counting an in-place
  /// group once (at its largest member) over its merged range.
  int64_t lowerBoundBytes = 0;
  /// The first step at which lowerBoundBytes are live (-1: no buffer has
  /// bytes).
  int64_t peakStep = -1;
  /// What is live at peakStep, by ascending buffer index: one buffer per
  /// in-place group (the member live at that step, the largest of several)
  /// with the bytes the group counts (its largest member's aligned size);
  /// the bytes sum to lowerBoundBytes.
  struct PeakBuffer {
    size_t buffer = 0; ///< index into the planned buffers
    int64_t bytes = 0;
  };
  std::vector<PeakBuffer> liveAtPeak;
  int64_t alignment = kDefaultArenaAlignment; ///< bytes
  /// The order that produced `offsets`: "greedy-by-size",
  /// "greedy-by-duration" or "greedy-by-area" (on a tie under
  /// ArenaStrategy::Best, the first).
  std::string strategy;
};

/// Plans `buffers`. Throws std::invalid_argument, naming the buffer id and
/// the rule, when a size is negative, firstStep > lastStep, an id repeats,
/// an inPlaceOf names itself or no buffer, the alignment is not a positive
/// power of two, or the aligned sizes together overflow int64.
ArenaPlan planArena(const std::vector<PlannedBuffer> &buffers,
                    const ArenaPlanOptions &options = {});

/// Checks `plan` against `buffers`: one offset per buffer, offsets aligned
/// and non-negative, every buffer inside [0, arenaBytes), and no two buffers
/// live at a common step overlapping in [offset, offset + sizeBytes) unless
/// one was placed in place of the other (an honored inPlaceOf pair). Returns
/// "" when valid, else a message naming the first violation (for overlaps:
/// both buffers' ids, names, step ranges and byte ranges). O(n^2) worst
/// case; does not throw.
std::string verifyArenaPlan(const std::vector<PlannedBuffer> &buffers,
                            const ArenaPlan &plan);

} // namespace ls2c

#endif // LS2C_ANALYSIS_ARENAPLANNER_H
