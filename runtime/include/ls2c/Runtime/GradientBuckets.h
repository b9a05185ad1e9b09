//===- GradientBuckets.h - all-reduce buckets over the gradient workspace -===//
//
// Data-parallel training (issue 9) all-reduces the flat fp32 gradient
// workspace (Program::workspaceElements elements, every parameter's slot at
// ParameterSlot::offset) across ranks. As PyTorch DDP does, the workspace is
// cut into buckets, each all-reduced as soon as backward has finished every
// gradient in it, so communication overlaps the rest of backward.
//
// Two steps, both pure functions of the Program (no CUDA, no MLIR):
//
//  1. gradientReadiness: for each parameter, the step of
//     @accumulate_gradients after which its gradient is final: the last step
//     that writes into its byte range of the "gradients" workspace result.
//     When the program does not say (no such function or result, or a slot
//     no step writes), the fallback is reverse parameter order: every slot
//     ready after the function's last step, buckets launched from the end of
//     the workspace to its start (what DDP assumes of model.parameters()).
//
//  2. planGradientBuckets: contiguous, aligned element ranges of the
//     workspace, at most maxBucketBytes each (counted in the reduction
//     dtype), covering [0, workspaceElements) exactly once, in launch order
//     (non-decreasing ready step).
//
// What the compiled programs say: @accumulate_gradients adds the gradients
// to the workspace in groups of at most 25 MiB (ls2c/Training/Workspace.h,
// planAccumulationGroups), each group one kernel placed where backward
// finishes its last gradient, so buckets become ready while backward goes
// on (BERT-base: the first at step 138 of 314). A program that writes every
// gradient in one step still plans, and the note says nothing can overlap.
//
// Units: element offsets and counts are fp32 workspace elements; bytes say
// so in their names. Errors throw BucketPlanError naming the parameter or
// the option and the rule.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_GRADIENTBUCKETS_H
#define LS2C_RUNTIME_GRADIENTBUCKETS_H

#include "ls2c/Runtime/Program.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ls2c::runtime {

/// A plan that cannot be made: the option, parameter or slot and the rule.
class BucketPlanError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// When each parameter's gradient is final.
struct GradientReadiness {
  /// Per Program::parameters[i]: the index of the step of `function` after
  /// which gradient i is final; in the fallback, the function's last step
  /// (-1 when the program has no such function).
  std::vector<int64_t> readyStep;
  /// True: readyStep comes from the steps' writes; false: the fallback.
  bool fromProgram = false;
  std::string function = "accumulate_gradients";
  size_t stepCount = 0; ///< steps of `function` (0 when it is missing)
  /// One line: why the fallback was taken, or what limits overlap (every
  /// gradient written by one step). Empty when neither applies.
  std::string note;
};

/// Reads the program's @accumulate_gradients: its result of kind Workspace
/// named "gradients" is the gradient workspace (fp32, workspaceElements
/// elements). A step writes a byte range of it through: a launch's pointer
/// argument in that result (the Program does not mark kernel parameters as
/// read or written, and generated kernels never read a result before
/// writing it, so every one counts as a write); a GEMM's c, its biasGrad
/// (bias-gradient epilogues) and aux (epilogues that write it); an
/// attention step's out and lse, or dq, dk, dv (backward); a copy's
/// destination. Ranges are taken at their shape bounds (maxBytes). Slot i
/// covers bytes [4 * offset, 4 * (offset + elements)). Never throws for a
/// program that lacks what it needs: it falls back and says why in `note`.
GradientReadiness gradientReadiness(const Program &program);

struct BucketOptions {
  /// The most bytes one bucket may hold in the reduction dtype (PyTorch
  /// DDP's bucket_cap_mb default, 25 MiB). A bucket holding a single
  /// parameter may exceed it when that parameter alone does.
  uint64_t maxBucketBytes = 25ull << 20;
  /// The dtype the all-reduce runs in: F32 (in place on the workspace) or
  /// BF16 (a bf16 copy of the bucket; 2 bytes an element, so a bucket holds
  /// twice the elements of an fp32 one under the same limit). Anything else
  /// is refused.
  DType reduceDType = DType::F32;
  /// Every bucket starts at a multiple of this many elements (and all but
  /// the last end at one): 16, the workspace's slot alignment, puts fp32
  /// buckets on 64-byte and bf16 ones on 32-byte boundaries of a
  /// 256-byte-aligned buffer, above the 16 bytes NCCL's vectorized path
  /// needs. Must be >= 1.
  uint64_t alignElements = 16;
};

/// One all-reduce: elements [beginElement, endElement) of the workspace.
struct GradientBucket {
  uint64_t beginElement = 0;
  uint64_t endElement = 0;
  /// Bytes reduced: elements * dtypeBytes(reduceDType).
  uint64_t reduceBytes = 0;
  /// Indices into Program::parameters of the slots with at least one
  /// element in the bucket, by offset. Padding between slots belongs to the
  /// bucket of the slot before it (it is zero and stays zero).
  std::vector<uint32_t> parameters;
  /// The latest readyStep of its parameters: the step after which the
  /// bucket may be reduced.
  int64_t readyStep = -1;

  uint64_t elements() const { return endElement - beginElement; }
  /// Byte offset and size in the fp32 workspace.
  uint64_t workspaceByteOffset() const { return beginElement * 4; }
  uint64_t workspaceBytes() const { return elements() * 4; }
};

struct GradientBucketPlan {
  BucketOptions options;
  uint64_t workspaceElements = 0;
  GradientReadiness readiness;
  /// Launch order: readyStep non-decreasing; ties from the end of the
  /// workspace to its start (reverse parameter order).
  std::vector<GradientBucket> buckets;
};

/// The plan for `program`: gradientReadiness, then planGradientBuckets
/// below. Throws BucketPlanError.
GradientBucketPlan planGradientBuckets(const Program &program,
                                       const BucketOptions &options = {});

/// The plan for explicit slots and ready steps (readyStep[i] for slot i).
/// Slots must lie inside [0, workspaceElements) and not overlap; there must
/// be at least one. Cuts: walking the slots from the highest offset down,
/// each slot owns [alignDown(offset), next slot's cut or workspaceElements)
/// (the lowest one from 0), and slots join the current bucket while it stays
/// within maxBucketBytes and they have its ready step (so a bucket is
/// reduced as soon as its gradients are final: the compiler's accumulation
/// groups, each one step, become buckets of their own); a slot that alone
/// exceeds the limit is a bucket by itself. Throws BucketPlanError naming the slot or option.
GradientBucketPlan planGradientBuckets(const std::vector<ParameterSlot> &slots,
                                       uint64_t workspaceElements,
                                       const GradientReadiness &readiness,
                                       const BucketOptions &options = {});

/// Elements of a slot: the product of its shape (1 for a scalar); throws
/// BucketPlanError on a negative dim or overflow.
uint64_t slotElements(const ParameterSlot &slot);

/// A table for people: options, readiness and its note, then one line per
/// bucket (launch position, ready step, element range, bytes reduced,
/// parameter count, first and last parameter name). `parameters` names the
/// slots (Program::parameters).
std::string formatGradientBucketPlan(const GradientBucketPlan &plan,
                                     const std::vector<ParameterSlot> &parameters);

} // namespace ls2c::runtime

#endif // LS2C_RUNTIME_GRADIENTBUCKETS_H
