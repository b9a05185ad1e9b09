//===- FusionEpilogues.h - fusion groups that become GEMM epilogues ------===//
//
// Internal to ls2-fuse. After grouping, a loop group that only adds a
// row-broadcast bias to a GEMM's result, and a column group that only sums
// the rows of a weight-gradient GEMM's `a`, become that GEMM's cuBLASLt
// epilogues (ls2.matmul's `bias` operand, CUBLASLT_EPILOGUE_BIAS, and its
// `bias_grad` result, BGRADA): one launch fewer each.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_LIB_TRANSFORMS_FUSIONEPILOGUES_H
#define LS2C_LIB_TRANSFORMS_FUSIONEPILOGUES_H

#include "ls2/IR/LS2Dialect.h"

#include "llvm/ADT/SmallVector.h"

namespace ls2c::fusion {

/// Attaches what it can and erases those groups; `made` keeps the others.
void attachEpilogues(llvm::SmallVector<ls2::FusionOp> &made);

} // namespace ls2c::fusion

#endif // LS2C_LIB_TRANSFORMS_FUSIONEPILOGUES_H
