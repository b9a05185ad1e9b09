//===- PaddedRows.h - rows padded to 16 bytes for cuBLASLt -----------------===//
//
// A [T, N] matrix whose rows are not a multiple of 16 bytes (a 50,257-token
// vocabulary's logits in bf16: 100,514-byte rows) makes cuBLASLt refuse its
// fast kernels, which need 16-byte aligned leading dimensions: the runtime
// then stages it through aligned copies (GemmRunner.h), and the logits GEMMs
// of GPT-2 medium ran at 38-48% of the bf16 GEMM rate on an H200
// (bench/RESULTS.md). ls2-plan-buffers instead lays such a matrix out with
// its rows N' elements apart, N' = N rounded up to 16 bytes, when every op
// that touches it takes a row stride: a GEMM (as operand a or b, rank 2, or
// as the result) or a row-reduction group that reads it element by element
// at the rows' own index or writes it as its rows-shaped output. The N' - N
// padding elements are never written; a row reduction that streams the rows
// reads them as part of its 16-byte vectors and never uses them (the buffer
// holds every row's padding, the last one's too). PyTorch's Inductor pads
// strides the same way (torch._inductor.config.comprehensive_padding).
//
// The layout is the attribute `ls2.row_strides` on the producing op: one
// stride in elements per result, 0 for contiguous rows.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_TRANSFORMS_PADDEDROWS_H
#define LS2C_TRANSFORMS_PADDEDROWS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace ls2c {

/// The row stride in elements of `v`'s buffer when ls2-plan-buffers padded
/// its rows; 0 when they are contiguous (or `v` is a block argument).
int64_t paddedRowStride(mlir::Value v);

/// Sets `ls2.row_strides` on every top-level op of `f` with a result that
/// qualifies (above). Returned values keep contiguous rows (the caller's
/// buffers are dense).
void markPaddedRows(mlir::func::FuncOp f);

} // namespace ls2c

#endif // LS2C_TRANSFORMS_PADDEDROWS_H
