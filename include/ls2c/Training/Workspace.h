//===- Workspace.h - flat parameter workspaces and their initialization ---===//
//
// LightSeq2's "symbolic tensor linking" (Wang et al., "LightSeq2: Accelerated
// Training for Transformer-based Models on GPUs", SC'22, section 4.2): all
// trainable parameters live in one contiguous fp32 master workspace, and
// gradients and the two Adam moments in workspaces of the same layout, so the
// optimizer updates everything in one or two kernels. Parameters with weight
// decay come first ([0, decayElements)), those without (biases, norms,
// ViT's cls_token/pos_embed) after; within each region they keep
// ParameterLayout order. Every slot starts at a multiple of kSlotAlignment
// elements so vectorized kernels can load any slot with 16-byte (and wider)
// accesses; the padding between slots is zero and stays zero (its gradient
// is zero). Non-trainable buffers are not in the workspace. No MLIR
// dependency.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TRAINING_WORKSPACE_H
#define LS2C_TRAINING_WORKSPACE_H

#include "ls2c/Model/ParameterLayout.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ls2c {

/// Slot starts are multiples of this many elements (64 bytes of fp32).
inline constexpr int64_t kSlotAlignment = 16;

struct WorkspaceSlot {
  const ParameterSpec *spec = nullptr; ///< the parameter (owned by the layout)
  int64_t offset = 0;                  ///< first element in the workspace
  int64_t numel = 0;                   ///< elements of the parameter
};

struct WorkspaceLayout {
  std::vector<WorkspaceSlot> slots; ///< trainable parameters, workspace order
  int64_t decayElements = 0;        ///< [0, decayElements) is weight-decayed
  int64_t totalElements = 0;        ///< workspace size, a multiple of kSlotAlignment

  /// The slot of parameter `name`, or nullptr.
  const WorkspaceSlot *find(const std::string &name) const;
};

/// Plans the workspace of `layout`'s trainable parameters. The returned
/// slots point into `layout`, which must outlive them.
WorkspaceLayout planWorkspace(const ParameterLayout &layout);
/// A temporary layout would leave the slots dangling.
WorkspaceLayout planWorkspace(const ParameterLayout &&layout) = delete;

/// PyTorch DDP's default bucket size (bucket_cap_mb = 25), in bytes of fp32
/// gradient: the most one accumulation group adds at once.
inline constexpr int64_t kAccumulationGroupBytes = 25ll << 20;

/// The most parameters one accumulation group adds. Its kernel reads each
/// through a pointer argument of its own, and the CUDA compiler's time for
/// it grows faster than their count (nvcc -ptx, sm_90, a 2-core VM: 66
/// parameters 0.55 s, 130 0.83 s, 258 1.84 s, 1,026 31 s). A 128-layer tiny
/// GPT (1,026 biases and norms, 514 weights): in 2 groups, NVRTC 41.9 s for
/// its sm_90 bundle; in 14 (the repeated ones one kernel), 2.2 s, for 12
/// more launches a step.
inline constexpr size_t kAccumulationGroupSlots = 128;

/// A contiguous range [begin, end) of the gradient workspace (fp32
/// elements) that @accumulate_gradients adds to in one kernel, as soon as
/// backward has finished every gradient in it, so that a data-parallel
/// all-reduce of the range can overlap the rest of backward (issue 9;
/// runtime/include/ls2c/Runtime/GradientBuckets.h).
struct AccumulationGroup {
  int64_t begin = 0;
  int64_t end = 0;
  std::vector<size_t> slots; ///< indices into WorkspaceLayout::slots, by offset
};

/// Cuts [0, totalElements) into groups, in increasing offset. Walking the
/// slots from the top of the workspace down (reverse parameter order, the
/// order backward finishes them), a group takes slots while it holds at most
/// maxGroupElements elements (a larger slot is a group by itself) and at
/// most maxGroupSlots slots, and closes at the boundary between the
/// weight-decayed and the other slots: the latter hold every layer's biases
/// and norms, the last of them ready only when backward ends, and mixed in
/// they would hold back the top layers' weights. Each group runs from its lowest slot's offset (0 for the first)
/// to the next group's begin (totalElements for the last), so the zero
/// padding between slots belongs to the slot below it. No slots: no groups.
/// Throws std::invalid_argument when maxGroupElements < 1 or
/// maxGroupSlots < 1.
std::vector<AccumulationGroup>
planAccumulationGroups(const WorkspaceLayout &workspace, int64_t maxGroupElements,
                       size_t maxGroupSlots = kAccumulationGroupSlots);

/// Initializes a master workspace (size totalElements, fp32) as each
/// parameter's ParameterInit says: Normal(0, std) (Box-Muller),
/// Xavier-uniform U(-a, a) with a = sqrt(6 / (fan_in + fan_out)) over the
/// weight's first two dims (fan_out = dim 0, fan_in = the product of the
/// rest, as torch.nn.init does for [out, in] weights), ones, zeros. Padding
/// stays zero. Element e's uniform draws are SplitMix64 hashes of (`seed`,
/// 2e) and (`seed`, 2e + 1), so it runs on all cores and the same seed
/// gives the same bits on any machine and thread count.
std::vector<float> initializeWorkspace(const WorkspaceLayout &workspace,
                                       uint64_t seed);

/// fairseq's sinusoidal position table [rows, dim] (Vaswani et al. 2017,
/// section 3.5, in fairseq's layout: the first dim/2 columns are sin, the
/// rest cos, frequency 10000^(-i / (dim/2 - 1)); an odd dim's last column is
/// zero). Row r is position r. Computed in double; fp32 programs round it.
std::vector<double> sinusoidalTable(int64_t rows, int64_t dim);

} // namespace ls2c

#endif // LS2C_TRAINING_WORKSPACE_H
