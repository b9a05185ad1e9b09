//===- GemmChoice.h - cuBLASLt algorithms chosen by timing -----*- C++ -*-===//
//
// GEMM autotuning's bookkeeping (GemmRunner::setAutotune): per GEMM key,
// which of cuBLASLt's heuristic candidates ran fastest, and the times that
// decided it. Decisions persist in a small JSON file beside the program
// cache, so that a second process runs the algorithm the first one chose
// (same results bit for bit) without timing again. Keys name the device and
// cuBLASLt's version besides the GEMM (GemmRunner.cpp), so a new driver or
// GPU times afresh. No CUDA here: tested on machines without a GPU
// (test/unit/GemmChoiceTest.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_GEMMCHOICE_H
#define LS2C_RUNTIME_GEMMCHOICE_H

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ls2c::runtime {

/// One decision: the algorithm (cuBLASLt's cublasLtMatmulAlgo_t, 64 bytes
/// in hex: a candidate is run only while the heuristic still offers exactly
/// it), its index in the heuristic's order when timed (0 its first), how many
/// candidates there were, and each one's mean time in microseconds (infinite
/// where it failed; empty when loaded without).
struct GemmDecision {
  std::string key;
  std::string algo;
  int candidate = 0;
  int candidates = 0;
  std::vector<double> us;
};

class GemmChoices {
public:
  /// The decision for `key`, or nullopt.
  std::optional<GemmDecision> find(const std::string &key) const;
  /// Records `d`, replacing an earlier decision for its key.
  void decide(GemmDecision d);
  /// Every decision, in key order.
  std::vector<GemmDecision> decisions() const;

  /// Adds the decisions of a choices file (saveFile's JSON: version 1, then
  /// per choice its key, algo, candidate, candidates and us); keys decided
  /// here keep theirs. A missing file adds nothing. Returns how many were added;
  /// throws std::runtime_error naming the file and the field of a malformed
  /// one (nothing is added then).
  size_t loadFile(const std::string &path);
  /// Writes every decision to `path` atomically (AtomicFile.h), creating its
  /// directory; throws FileWriteError.
  void saveFile(const std::string &path) const;

private:
  std::map<std::string, GemmDecision> chosen;
};

} // namespace ls2c::runtime

#endif // LS2C_RUNTIME_GEMMCHOICE_H
