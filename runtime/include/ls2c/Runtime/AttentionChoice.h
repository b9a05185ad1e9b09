//===- AttentionChoice.h - which backend runs each attention shape -*- C++ -*-===//
//
// Issue 7's choice per shape: the runtime times cuDNN's fused attention and
// the generated kernels once for each attention shape of a program (in the
// first run that meets it, Executor.cpp) and keeps the faster. This is the
// bookkeeping, with no CUDA in it so that it is tested on machines without
// a GPU (test/unit/AttentionChoiceTest.cpp).
//
// A shape is everything but the batch (attentionShapeKey): batches of
// different sizes share their choice. With dropout the forward and the
// backward of one attention draw the same mask only on one backend, so
// they are decided together (the smaller sum of their times), and a shape
// decided earlier imposes its backend on its partner. Decisions persist in
// a small JSON file beside the program cache (attentionChoiceKey names the
// device, cuDNN's version, the decision rule and the generated kernels, so
// a change of any of them times the shape again).
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_ATTENTIONCHOICE_H
#define LS2C_RUNTIME_ATTENTIONCHOICE_H

#include "ls2c/Runtime/Program.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ls2c::runtime {

/// Which implementation runs a Program's Attention steps.
enum class AttentionBackend : uint8_t {
  Kernels, ///< the generated FlashAttention kernels (the steps' fallbacks)
  Cudnn,   ///< cuDNN where it accepts the call, else the kernels
  Auto,    ///< per shape, the faster of the two (timed once), else the kernels
};

/// Per step of `f`: the Attention step that must run on the same backend
/// when dropout is on (both draw the mask), else -1. A backward's partner is
/// the forward that last wrote its lse before it (the arena may give later
/// forwards the same buffer, as recomputed attentions of other layers
/// under activation checkpointing); that forward's partner is the
/// backward. A forward no backward reads (its lse dead: the original of an
/// attention the backward recomputes) takes the partner of the next
/// forward of the same dropout stream that has one.
std::vector<int64_t> attentionPartners(const Function &f);

/// "kernels", "cudnn" or "auto".
const char *attentionBackendName(AttentionBackend b);
/// The backend named `name`; nullopt for any other text.
std::optional<AttentionBackend> parseAttentionBackend(const std::string &name);

/// An attention step's shape without its batch: direction, dtype, heads,
/// head dim, causal, dropout, row strides and the sequence bound.
std::string attentionShapeKey(const Attention &a);

/// Device milliseconds of one call on each backend (medians).
struct AttentionTiming {
  double cudnnMs = 0, kernelsMs = 0;
};

/// The generated kernels' timed milliseconds are multiplied by this before
/// a comparison: timed alone, even after the L2 is flushed, they ran faster
/// than they do inside a train step, and cuDNN's fused attention did not
/// (H200, BERT-base's backward with dropout: kernels 0.403 ms alone against
/// 0.441 in the step, +9%; cuDNN 0.354 against 0.357, +1%). So the
/// kernels must win alone by more than that to win in the step.
constexpr double kKernelsInStepFactor = 1.08;

/// The key a decision is kept under: the device (with cuDNN's version),
/// the shape (attentionShapeKey), the decision rule (kKernelsInStepFactor)
/// and a hash of the generated kernels' sources, so that a change of any
/// of them, a new rule too, times the shape again instead of reusing a
/// saved decision.
std::string attentionChoiceKey(const std::string &device, const Attention &a,
                               uint64_t kernelsHash);

/// One decision, for reports.
struct AttentionDecision {
  std::string key;
  /// Both 0 when imposed by a partner (cuDNN's infinite when the partner
  /// was a refusal: neither is saved).
  AttentionTiming timing;
  AttentionBackend backend = AttentionBackend::Kernels;
  bool imposed = false; ///< taken from its dropout partner, not timed
  bool loaded = false;  ///< read from a choices file (loadFile)
};

class AttentionChoices {
public:
  /// The backend decided for `key`, or nullopt.
  std::optional<AttentionBackend> find(const std::string &key) const;

  /// Decides `key` alone: the faster, the kernels' time counted with
  /// kKernelsInStepFactor (cuDNN on a tie). Returns it; a key decided
  /// before keeps its backend.
  AttentionBackend decide(const std::string &key, AttentionTiming t);

  /// Decides a forward and its backward (dropout partners) together: the
  /// backend with the smaller sum (the kernels' with kKernelsInStepFactor),
  /// unless either is decided already, whose
  /// backend both then take. Returns it.
  AttentionBackend decidePair(const std::string &forwardKey, AttentionTiming forward,
                              const std::string &backwardKey, AttentionTiming backward);

  /// Gives `key` the backend of its decided partner `partnerKey` (which
  /// must be decided) without timing it. Returns it.
  AttentionBackend impose(const std::string &key, const std::string &partnerKey);

  /// Every decision in the order made (loaded ones included).
  const std::vector<AttentionDecision> &decisions() const { return made; }

  /// Adds the decisions a choices file holds (saveFile's JSON: version 1,
  /// then per choice its key, backend ("kernels" or "cudnn") and the two
  /// times in ms); keys decided here keep their backend. A missing file
  /// adds nothing. Returns how many were added; throws std::runtime_error
  /// naming the file and the field of a malformed one.
  size_t loadFile(const std::string &path);
  /// Writes every decision, loaded ones included, to `path` atomically
  /// (AtomicFile.h), creating its directory; throws FileWriteError. Shapes
  /// cuDNN refused are left out (it may take them at another batch).
  void saveFile(const std::string &path) const;

private:
  AttentionBackend record(const std::string &key, AttentionTiming t, AttentionBackend b,
                          bool imposed, bool loaded = false);
  std::map<std::string, AttentionBackend> chosen;
  std::vector<AttentionDecision> made;
};

} // namespace ls2c::runtime

#endif // LS2C_RUNTIME_ATTENTIONCHOICE_H
