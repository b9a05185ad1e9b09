//===- FusionRules.h - how ls2-fuse sees each op ---------------------------===//
//
// Internal to ls2-fuse. Each op gets a class that decides what it can join:
//   Meta        ls2.dim, func.return, and views (reshape, contiguous
//               slice): at top level a view is an alias of its input (no
//               launch, no buffer); a group reading one through a view of
//               its own value clones the view;
//   Clonable    constants, iota, random_uniform, cheap elementwise ops
//               whose tensor operands are function arguments (or views of
//               them) or other clonable values, and elementwise ops on
//               single elements (a loss, a learning rate): copied into every
//               group that reads them (so dropout masks are regenerated,
//               never stored, and no scalar ties unrelated kernels
//               together);
//   Elementwise elementwise, broadcast and injective ops (transpose,
//               strided slice, concat, gather): the loop part of a kernel;
//   RowReduce   a reduction over trailing dims [R, H] -> [R];
//   ColReduce   a reduction over leading dims [N, H] -> [H] (or all dims);
//   Opaque      matmul, attention and its gradient, scatter_add, nonzero
//               (a scan over the whole mask), and any composite left
//               undecomposed: a library call or its own kernel.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_LIB_TRANSFORMS_FUSIONRULES_H
#define LS2C_LIB_TRANSFORMS_FUSIONRULES_H

#include "ls2/IR/LS2Dialect.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>

namespace ls2c::fusion {

enum class OpClass { Meta, Clonable, Elementwise, RowReduce, ColReduce, Opaque };

/// True for reshape, for a slice whose result is one contiguous range of
/// its input at a static byte offset (every dim before the axis is 1, every
/// dim after it static), and for a strided view: ops that only reinterpret
/// memory.
bool isView(mlir::Operation *op);

/// A slice along an inner axis (q, k and v of a fused [T, 3H] projection)
/// read only by attention and its gradient as query, key or value, which
/// take strided operands: no copy, and no buffer of its own.
bool isStridedView(mlir::Operation *op);

/// A concat whose operands are written straight into their part of its
/// buffer, so it copies nothing (ls2-plan-buffers places them;
/// `ls2.in_place`): along an inner axis, attention gradients (dq, dk, dv of
/// a merged q/k/v projection) each read only by it; along axis 0, the
/// returned gradient workspace of @accumulate_gradients, a 1-D concat of
/// two or more loops (ls2.add before fusion, loop fusions after) each read
/// only by it and none in `clonable` (when given), so that each
/// accumulation group is its own kernel where backward finishes it.
bool isInPlaceConcat(mlir::Operation *op,
                     const llvm::DenseSet<mlir::Operation *> *clonable = nullptr);

/// A cast of a whole function argument that is a parameter, or that
/// several ops or views read (the fp16/bf16 compute copy of the master
/// workspace), or marked `ls2.compute_copy` (a layer's range of the master
/// under activation checkpointing, TrainStep.cpp): one kernel writes it,
/// and the ops that read it treat it like an argument. A cast of any other
/// argument with one reader that is not a view is fused into that reader
/// instead.
bool isArgumentConversion(mlir::Operation *op);

/// Whether `u` maps its operands element by element to results of `shape`
/// (each output element's index is its inputs'): the arithmetic, select,
/// compare and cast ops.
bool isElementwiseOfShape(mlir::Operation *u, llvm::ArrayRef<int64_t> shape);

/// A splat float constant's value, if `v` is one.
std::optional<double> constantValue(mlir::Value v);

/// The mask of a ReLU as the frontend writes it, select(x > 0, x, 0)
/// (GraphBuilder::activation): the compare x > 0; null for another select.
ls2::CompareOp reluMask(ls2::SelectOp select);

/// The op that computes `v`, looking through views; null for a function
/// argument (or a view of one).
mlir::Operation *definingOpThroughViews(mlir::Value v);

/// The byte offset of a view's result in its input (0 for a reshape).
int64_t viewByteOffset(mlir::Operation *view);

/// The class of `op`, given the ops already found clonable (operands are
/// classified before their users, in program order).
OpClass classify(mlir::Operation *op,
                 const llvm::DenseSet<mlir::Operation *> &clonable);

const char *toString(OpClass c);

} // namespace ls2c::fusion

#endif // LS2C_LIB_TRANSFORMS_FUSIONRULES_H
