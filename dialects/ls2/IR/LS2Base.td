//===- LS2Base.td - the ls2 dialect, its types and attributes -*- tablegen -*-===//
//
// The ls2 dialect describes a Transformer's forward pass (and, after autodiff,
// its train step) as ops with tensor value semantics. See docs/dialect.md.
//
//===----------------------------------------------------------------------===//

#ifndef LS2_BASE_TD
#define LS2_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def LS2_Dialect : Dialect {
  let name = "ls2";
  let cppNamespace = "::ls2c::ls2";
  let summary = "Transformer training ops with tensor value semantics";
  let description = [{
    Values are ranked builtin tensors. Static dims (hidden size, heads, head
    dim, vocabulary) are compile-time constants; token counts are dynamic
    (`?`) and bounded by the model's max_batch_tokens. Float values are f32,
    f16 or bf16; ids are i32 or i64; masks and predicates are i1.

    Primitive ops are the vocabulary of fusion and code generation.
    Composite ops (layer_norm, softmax, gelu, dropout, attention,
    cross_entropy, adamw) keep their meaning so that passes can use
    efficient rules for them; `ls2-decompose` lowers all but attention
    into primitives. Backward composites (layer_norm_grad, softmax_grad,
    gelu_grad, cross_entropy_grad, attention_grad) are what `ls2-autodiff`
    emits for them; `ls2-decompose` lowers all but attention_grad.

    Ops with a vector-Jacobian product implement DifferentiableOpInterface
    (`buildVJP`); `ls2-autodiff` builds the backward pass from it and marks
    each forward op whose results the backward reads with the unit
    attribute `ls2.saved` (those results stay alive, or are recomputed,
    until the backward has used them). Under activation checkpointing
    `ls2-train-step` casts each layer's range of the master workspace on
    its own and marks that `ls2.cast` with the unit attribute
    `ls2.compute_copy`: one kernel writes it (ls2-fuse), and the backward
    recomputes it like the layer's other values.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def LS2_FloatElement : AnyTypeOf<[F32, F16, BF16], "f32, f16 or bf16">;
def LS2_IdElement : AnyTypeOf<[I32, I64], "i32 or i64">;

def LS2_FloatTensor : RankedTensorOf<[F32, F16, BF16]>;
def LS2_IdTensor : RankedTensorOf<[I32, I64]>;
def LS2_BoolTensor : RankedTensorOf<[I1]>;
def LS2_NumericTensor : RankedTensorOf<[F32, F16, BF16, I32, I64]>;
def LS2_AnyTensor : RankedTensorOf<[F32, F16, BF16, I32, I64, I1]>;
def LS2_F32Tensor : RankedTensorOf<[F32]>;

// Scalars are rank-0 tensors: Philox seeds and offsets, step counters.
def LS2_I64Scalar : Type<And<[TensorOf<[I64]>.predicate, HasAnyRankOfPred<[0]>]>,
    "rank-0 tensor of i64", "::mlir::RankedTensorType">,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getIntegerType(64))">;
def LS2_F32Scalar : Type<And<[TensorOf<[F32]>.predicate, HasAnyRankOfPred<[0]>]>,
    "rank-0 tensor of f32", "::mlir::RankedTensorType">,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF32Type())">;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def LS2_CompareDirection : I32EnumAttr<"CompareDirection",
    "comparison predicate", [
      I32EnumAttrCase<"EQ", 0, "eq">, I32EnumAttrCase<"NE", 1, "ne">,
      I32EnumAttrCase<"LT", 2, "lt">, I32EnumAttrCase<"LE", 3, "le">,
      I32EnumAttrCase<"GT", 4, "gt">, I32EnumAttrCase<"GE", 5, "ge">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::ls2c::ls2";
}
def LS2_CompareDirectionAttr
    : EnumAttr<LS2_Dialect, LS2_CompareDirection, "compare_direction">;

def LS2_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "GELU form (Hendrycks & Gimpel, 2016)", [
      I32EnumAttrCase<"None", 0, "none">, I32EnumAttrCase<"Tanh", 1, "tanh">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::ls2c::ls2";
}
def LS2_GeluApproximationAttr
    : EnumAttr<LS2_Dialect, LS2_GeluApproximation, "gelu_approximation">;

def LS2_GemmActivation : I32EnumAttr<"GemmActivation",
    "an activation epilogue of ls2.matmul (cuBLASLt's)", [
      I32EnumAttrCase<"Relu", 0, "relu">,
      I32EnumAttrCase<"GeluTanh", 1, "gelu_tanh">,
      I32EnumAttrCase<"ReluGrad", 2, "relu_grad">,
      I32EnumAttrCase<"GeluTanhGrad", 3, "gelu_tanh_grad">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::ls2c::ls2";
}
def LS2_GemmActivationAttr
    : EnumAttr<LS2_Dialect, LS2_GemmActivation, "gemm_activation">;

def LS2_LossReduction : I32EnumAttr<"LossReduction",
    "how per-token losses are combined (PyTorch semantics)", [
      I32EnumAttrCase<"Mean", 0, "mean">, I32EnumAttrCase<"Sum", 1, "sum">,
      I32EnumAttrCase<"None", 2, "none">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::ls2c::ls2";
}
def LS2_LossReductionAttr
    : EnumAttr<LS2_Dialect, LS2_LossReduction, "loss_reduction">;

def LS2_WeightDecayMode : I32EnumAttr<"WeightDecayMode",
    "Adam weight decay form", [
      I32EnumAttrCase<"Decoupled", 0, "decoupled">,
      I32EnumAttrCase<"L2", 1, "l2">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::ls2c::ls2";
}
def LS2_WeightDecayModeAttr
    : EnumAttr<LS2_Dialect, LS2_WeightDecayMode, "weight_decay_mode">;

def LS2_FusionKind : I32EnumAttr<"FusionKind",
    "what a fusion group's kernel iterates over", [
      I32EnumAttrCase<"Loop", 0, "loop">,
      I32EnumAttrCase<"RowReduction", 1, "row_reduction">,
      I32EnumAttrCase<"ColumnReduction", 2, "column_reduction">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::ls2c::ls2";
}
def LS2_FusionKindAttr : EnumAttr<LS2_Dialect, LS2_FusionKind, "fusion_kind">;

#endif // LS2_BASE_TD
