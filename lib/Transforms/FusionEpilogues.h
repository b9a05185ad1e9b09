//===- FusionEpilogues.h - fusion groups that become GEMM epilogues ------===//
//
// Internal to ls2-fuse. After grouping, groups that only finish a GEMM's
// result in a way cuBLASLt's epilogues can (ls2.matmul's description)
// become that GEMM's epilogue, one launch fewer each:
//   - a loop that only adds a row-broadcast bias: the `bias` operand
//     (CUBLASLT_EPILOGUE_BIAS);
//   - a column group that only sums the rows of a weight-gradient GEMM's
//     `a`: its `bias_grad` result (BGRADA);
//   - a loop that adds a bias (or none) and applies ReLU or the tanh GELU,
//     as ls2-decompose writes them: `activation` relu / gelu_tanh, with an
//     `aux` result when the backward reads the activation's input (RELU_AUX
//     / GELU_AUX, with BIAS); the erf GELU is refused (cuBLASLt has none);
//   - a loop or column group that multiplies a GEMM's result by the ReLU
//     mask or the tanh GELU derivative of a saved input (and sums the
//     product's rows): `activation` relu_grad / gelu_tanh_grad reading that
//     input as `aux` (DRELU / DGELU, with BGRAD); the GELU's only when
//     asked (geluGradEpilogue: on an H200 cuBLASLt's DGELU_BGRAD ran the
//     FFN's dgrad at 170 TFLOP/s, the plain GEMM at 620, so the GEMM plus a
//     generated kernel is faster).
//   - the bias alone of a group that adds it to a GEMM's result and does
//     more (the erf GELU), when the group wrote the biased product for the
//     backward: that write is the GEMM's now.
// A ReLU's mask becomes cuBLASLt's bit mask, which only the gradient
// epilogue reads, so a ReLU attaches only together with every reader of
// its mask (ls2-fuse recomputes the mask from the ReLU's output where the
// backward reads that anyway, and then no mask is stored). Each refusal of
// a group that looks like an epilogue says why.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_LIB_TRANSFORMS_FUSIONEPILOGUES_H
#define LS2C_LIB_TRANSFORMS_FUSIONEPILOGUES_H

#include "ls2/IR/LS2Dialect.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace ls2c::fusion {

/// What attachEpilogues did, for ls2-fuse's report.
struct EpilogueReport {
  std::vector<std::string> attached; ///< "group gelu_3 -> ls2.matmul (...): ..."
  std::vector<std::string> refused;  ///< "group gelu_3 -> ls2.matmul (...): why"
};

/// Attaches what it can and erases those groups; `made` keeps the others.
/// `geluGradEpilogue`: also the tanh GELU's gradient (DGELU_BGRAD); off,
/// such a group is refused with the reason (ls2-fuse's option of that
/// name) and stays a generated kernel reading the forward's aux.
/// `keepPlain`: GEMMs that get no bias or activation epilogue (those
/// activation checkpointing recomputes, and their copies), so a forward
/// GEMM and its recomputed copy compute the same bits.
void attachEpilogues(llvm::SmallVector<ls2::FusionOp> &made,
                     EpilogueReport *report = nullptr, bool geluGradEpilogue = false,
                     const llvm::DenseSet<mlir::Operation *> *keepPlain = nullptr);

} // namespace ls2c::fusion

#endif // LS2C_LIB_TRANSFORMS_FUSIONEPILOGUES_H
