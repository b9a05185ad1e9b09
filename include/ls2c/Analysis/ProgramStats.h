//===- ProgramStats.h - launches and memory of a compiled function --------===//
//
// What `ls2c compile --stats` prints. A launch is a top-level ls2.fusion
// (one generated kernel), a matmul (a cuBLASLt GEMM), an attention or
// attention_grad (a fused attention call) or a scatter_add; views, sizes and
// constants launch nothing. Launches are attributed to the frontend's scope
// of their first op (its NameLoc, e.g. "bert.encoder.layer.3").
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_ANALYSIS_PROGRAMSTATS_H
#define LS2C_ANALYSIS_PROGRAMSTATS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <map>
#include <string>

namespace ls2c {

struct LaunchCounts {
  int64_t kernels = 0;   ///< generated kernels (fusion groups)
  int64_t gemms = 0;     ///< matmuls
  int64_t attention = 0; ///< attention forward and backward calls
  int64_t other = 0;     ///< scatter_add and anything else that runs
  int64_t total() const { return kernels + gemms + attention + other; }
};

/// Buffers live at the arena's peak that share a name (without the fusion
/// group's number), a type and a frontend scope (layer numbers as '*').
struct PeakLive {
  std::string name;  ///< "attention#0": the op or group name, '#', the result
  std::string type;  ///< at the shape bounds: "[32768 x 2048] bf16"
  std::string scope; ///< "transformer.h.*"; "" outside every scope
  int64_t count = 0;
  int64_t bytes = 0; ///< together, aligned (an in-place pair counted once)
};

struct ProgramStats {
  LaunchCounts launches;                      ///< the whole function
  std::map<std::string, LaunchCounts> scopes; ///< by frontend scope
  int64_t arenaBytes = -1;      ///< ls2.arena_bytes; -1 when not planned
  int64_t arenaLowerBound = -1; ///< ls2.arena_lower_bound_bytes
  /// ls2.arena_peak: the step (of `steps`) where the arena's lower bound is
  /// live, and what is live there, largest first. peakStep -1: not planned,
  /// or nothing in the arena.
  int64_t peakStep = -1, steps = 0;
  std::vector<PeakLive> peak;
};

/// The frontend scope of a location: its NameLoc's name (the first one
/// inside a FusedLoc), e.g. "bert.encoder.layer.3"; "" when it has none.
std::string scopeOf(mlir::Location loc);

/// Counts `function`'s launches and reads its buffer plan attributes.
ProgramStats collectProgramStats(mlir::func::FuncOp function);

} // namespace ls2c

#endif // LS2C_ANALYSIS_PROGRAMSTATS_H
