//===- Kernels.h - the ls2 op evaluators of the reference backend ---------===//
//
// Internal to lib/Reference. Each function evaluates one op (or one family
// of ops) on the tensors in `frame` and binds its results there, with the
// semantics of the op's description in LS2Ops.td. Interpreter.cpp
// dispatches to them.
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_LIB_REFERENCE_KERNELS_H
#define LS2C_LIB_REFERENCE_KERNELS_H

#include "Frame.h"

#include "ls2/IR/LS2Dialect.h"

namespace ls2c::reference::detail {

// KernelsElementwise.cpp
void evalUnary(mlir::Operation *op, Frame &frame); ///< neg .. rsqrt
void evalBinary(mlir::Operation *op, Frame &frame); ///< add .. min
void evalCompare(ls2::CompareOp op, Frame &frame);
void evalSelect(ls2::SelectOp op, Frame &frame);
void evalCast(ls2::CastOp op, Frame &frame);
void evalConstant(ls2::ConstantOp op, Frame &frame);
void evalGelu(ls2::GeluOp op, Frame &frame);

// KernelsShape.cpp
void evalDim(ls2::DimOp op, Frame &frame);
void evalIota(ls2::IotaOp op, Frame &frame);
void evalBroadcast(ls2::BroadcastOp op, Frame &frame);
void evalReshape(ls2::ReshapeOp op, Frame &frame);
void evalTranspose(ls2::TransposeOp op, Frame &frame);
void evalSlice(ls2::SliceOp op, Frame &frame);
void evalConcat(ls2::ConcatOp op, Frame &frame);

// KernelsReduce.cpp
void evalReduceSum(ls2::ReduceSumOp op, Frame &frame);
void evalReduceMax(ls2::ReduceMaxOp op, Frame &frame);
void evalGather(ls2::GatherOp op, Frame &frame);
void evalScatterAdd(ls2::ScatterAddOp op, Frame &frame);
void evalNonzero(ls2::NonzeroOp op, Frame &frame);

// KernelsMatmul.cpp
void evalMatmul(ls2::MatmulOp op, Frame &frame);

// KernelsNormalization.cpp
void evalLayerNorm(ls2::LayerNormOp op, Frame &frame);
void evalSoftmax(ls2::SoftmaxOp op, Frame &frame);
void evalCrossEntropy(ls2::CrossEntropyOp op, Frame &frame);
/// Checks that every target of a cross-entropy (forward or backward) is a
/// class in [0, classes) or ignoreIndex; returns how many are not ignored.
int64_t countCrossEntropyTargets(mlir::Operation *op, const HostTensor &targets,
                                 int64_t classes, int64_t ignoreIndex);

// KernelsAttention.cpp
void evalAttention(ls2::AttentionOp op, Frame &frame);
/// Validates cu_seqlens (i32 [B + 1]: starts at 0, non-decreasing, ends at
/// `tokens`) and returns its values; `name` is the operand's, for messages.
const std::vector<int64_t> &checkCuSeqlens(mlir::Operation *op,
                                           const HostTensor &cu,
                                           const char *name, int64_t tokens);
/// Validates cu_seqlens_k as the key starts of an attention with
/// key_lengths (every range within `tokens` rows) and returns its values.
const std::vector<int64_t> &checkKeyStarts(mlir::Operation *op, const HostTensor &cu,
                                           const HostTensor &lengths, int64_t tokens);

// KernelsGrad.cpp: the backward composites
void evalLayerNormGrad(ls2::LayerNormGradOp op, Frame &frame);
void evalSoftmaxGrad(ls2::SoftmaxGradOp op, Frame &frame);
void evalGeluGrad(ls2::GeluGradOp op, Frame &frame);
void evalCrossEntropyGrad(ls2::CrossEntropyGradOp op, Frame &frame);

// KernelsGradAttention.cpp
void evalAttentionGrad(ls2::AttentionGradOp op, Frame &frame);

// KernelsRandom.cpp
void evalRandomUniform(ls2::RandomUniformOp op, Frame &frame);
void evalDropout(ls2::DropoutOp op, Frame &frame);

// KernelsOptimizer.cpp
void evalAdamW(ls2::AdamWOp op, Frame &frame);

} // namespace ls2c::reference::detail

#endif // LS2C_LIB_REFERENCE_KERNELS_H
