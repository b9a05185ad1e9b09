//===- LS2Ops.td - ls2 dialect operations -------------------*- tablegen -*-===//
//
// Shapes in the descriptions use T for a dynamic token count, H for hidden
// size, V for vocabulary. `?` dims are dynamic; everything else is static.
//
//===----------------------------------------------------------------------===//

#ifndef LS2_OPS_TD
#define LS2_OPS_TD

include "LS2Base.td"
include "LS2Interfaces.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

class LS2_Op<string mnemonic, list<Trait> traits = []>
    : Op<LS2_Dialect, mnemonic, traits>;

// Ops with a vector-Jacobian product (LS2VJP.cpp), used by ls2-autodiff.
defvar LS2_VJP = DeclareOpInterfaceMethods<LS2_DifferentiableOpInterface>;

//===----------------------------------------------------------------------===//
// Elementwise primitives
//===----------------------------------------------------------------------===//

class LS2_UnaryFloatOp<string mnemonic, string formula>
    : LS2_Op<mnemonic, [Pure, Elementwise, SameOperandsAndResultType, LS2_VJP]> {
  let summary = "elementwise " # formula;
  let description = "Computes `" # formula # "` element by element. Inputs "
    # "in f16/bf16 are computed in f32 and rounded once.";
  let arguments = (ins LS2_FloatTensor:$input);
  let results = (outs LS2_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def LS2_NegOp : LS2_UnaryFloatOp<"neg", "-x">;
def LS2_ExpOp : LS2_UnaryFloatOp<"exp", "exp(x)">;
def LS2_LogOp : LS2_UnaryFloatOp<"log", "log(x)">;
def LS2_TanhOp : LS2_UnaryFloatOp<"tanh", "tanh(x)">;
def LS2_ErfOp : LS2_UnaryFloatOp<"erf", "erf(x)">;
def LS2_SqrtOp : LS2_UnaryFloatOp<"sqrt", "sqrt(x)">;
def LS2_RsqrtOp : LS2_UnaryFloatOp<"rsqrt", "1/sqrt(x)">;
def LS2_SinOp : LS2_UnaryFloatOp<"sin", "sin(x)">;
def LS2_CosOp : LS2_UnaryFloatOp<"cos", "cos(x)">;

class LS2_BinaryOp<string mnemonic, string formula, list<Trait> traits = []>
    : LS2_Op<mnemonic, !listconcat([Pure,
        DeclareOpInterfaceMethods<InferTypeOpInterface>, LS2_VJP], traits)> {
  let summary = "elementwise " # formula;
  let description = "Computes `" # formula # "` element by element. Both "
    # "operands have the same element type and either the same shape, or "
    # "one of them is a rank-0 scalar that is used for every element. The "
    # "type is written once when both operands share it.";
  let arguments = (ins LS2_NumericTensor:$lhs, LS2_NumericTensor:$rhs);
  let results = (outs LS2_NumericTensor:$result);
  let assemblyFormat =
    "$lhs `,` $rhs attr-dict `:` custom<BinaryTypes>(type($lhs), type($rhs))";
}

def LS2_AddOp : LS2_BinaryOp<"add", "x + y", [Commutative]>;
def LS2_SubOp : LS2_BinaryOp<"sub", "x - y">;
def LS2_MulOp : LS2_BinaryOp<"mul", "x * y", [Commutative]>;
def LS2_DivOp : LS2_BinaryOp<"div", "x / y">;
def LS2_MaxOp : LS2_BinaryOp<"max", "max(x, y)", [Commutative]>;
def LS2_MinOp : LS2_BinaryOp<"min", "min(x, y)", [Commutative]>;

def LS2_CompareOp : LS2_Op<"compare", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "elementwise comparison producing an i1 predicate";
  let description = [{
    `%p = ls2.compare lt, %a, %b : tensor<?x768xf32>` gives true where a < b.
    Operands follow the rules of the binary ops (same shape, or one rank-0).
    Comparisons with NaN are false except `ne`.
  }];
  let arguments = (ins LS2_CompareDirectionAttr:$direction,
                       LS2_NumericTensor:$lhs, LS2_NumericTensor:$rhs);
  let results = (outs LS2_BoolTensor:$result);
  // `` drops the space before the direction: the enum attribute prints its
  // own (otherwise `ls2.compare  lt`).
  let assemblyFormat = "`` $direction `,` $lhs `,` $rhs attr-dict `:` "
                       "custom<BinaryTypes>(type($lhs), type($rhs))";
}

def LS2_SelectOp : LS2_Op<"select", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>, LS2_VJP]> {
  let summary = "elementwise choice: pred ? on_true : on_false";
  let description = [{
    The predicate has the result's shape. Each value operand has the
    result's type or is a rank-0 scalar of its element type.
  }];
  let arguments = (ins LS2_BoolTensor:$pred, LS2_AnyTensor:$on_true,
                       LS2_AnyTensor:$on_false);
  let results = (outs LS2_AnyTensor:$result);
  let assemblyFormat = "$pred `,` $on_true `,` $on_false attr-dict `:` "
                       "type($pred) `,` type($on_true) `,` type($on_false)";
}

def LS2_CastOp : LS2_Op<"cast", [Pure, Elementwise, LS2_VJP]> {
  let summary = "element type conversion";
  let description = [{
    Converts between f32, f16, bf16, i32, i64 and i1 with the same shape.
    Float narrowing rounds to nearest even; float to integer truncates
    toward zero; i1 converts to 0 or 1.
  }];
  let arguments = (ins LS2_AnyTensor:$input);
  let results = (outs LS2_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Constants, iota, dims
//===----------------------------------------------------------------------===//

def LS2_ConstantOp : LS2_Op<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "a statically shaped tensor constant";
  let description = [{
    `%c = ls2.constant dense<0.125> : tensor<f32>`. Constants must be
    statically shaped; scalars are rank-0 tensors.
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs LS2_AnyTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def LS2_DimOp : LS2_Op<"dim", [Pure]> {
  let summary = "the size of one dimension, as an index";
  let description = [{
    `%t = ls2.dim %x[0] : tensor<?x768xf16>` gives the token count of %x at
    run time (for a static dim it is that constant).
  }];
  let arguments = (ins LS2_AnyTensor:$input, I64Attr:$index);
  let results = (outs Index:$result);
  let assemblyFormat = "$input `[` $index `]` attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def LS2_IotaOp : LS2_Op<"iota", [Pure]> {
  let summary = "indices along one dimension";
  let description = [{
    `%i = ls2.iota [%t] {dimension = 1} : tensor<?x64xi32>` holds, at each
    position, its index along `dimension`. One `index` operand gives the size
    of each dynamic result dim, in order.
  }];
  let arguments = (ins Variadic<Index>:$dynamic_sizes, I64Attr:$dimension);
  let results = (outs LS2_NumericTensor:$result);
  let assemblyFormat = "`[` $dynamic_sizes `]` attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape manipulation (injective)
//===----------------------------------------------------------------------===//

def LS2_BroadcastOp : LS2_Op<"broadcast", [Pure, LS2_VJP]> {
  let summary = "broadcast into a larger shape";
  let description = [{
    Operand dim i becomes result dim `dims[i]` (strictly increasing); it must
    equal that result dim or be 1. Result dims not named in `dims` are new.
    One `index` operand gives the size of each dynamic result dim, in order:

      %b = ls2.broadcast %bias [%t] {dims = array<i64: 1>}
             : tensor<768xf32> -> tensor<?x768xf32>
  }];
  let arguments = (ins LS2_AnyTensor:$input, Variadic<Index>:$dynamic_sizes,
                       DenseI64ArrayAttr:$dims);
  let results = (outs LS2_AnyTensor:$result);
  let assemblyFormat = "$input `[` $dynamic_sizes `]` attr-dict `:` "
                       "type($input) `->` type($result)";
  let hasVerifier = 1;
}

def LS2_ReshapeOp : LS2_Op<"reshape", [Pure, LS2_VJP]> {
  let summary = "reinterpret a row-major tensor with another shape";
  let description = [{
    The element count is preserved. The result may have at most one dynamic
    dim, whose size follows from the element count; a statically shaped
    input gives a statically shaped result.
  }];
  let arguments = (ins LS2_AnyTensor:$input);
  let results = (outs LS2_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def LS2_TransposeOp : LS2_Op<"transpose", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>, LS2_VJP]> {
  let summary = "permute dimensions";
  let description = [{
    Result dim i is input dim `permutation[i]`:
    `ls2.transpose %x [1, 0, 2] : tensor<?x12x64xf16> -> tensor<12x?x64xf16>`.
  }];
  let arguments = (ins LS2_AnyTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs LS2_AnyTensor:$result);
  let assemblyFormat = "$input $permutation attr-dict `:` type($input) `->` "
                       "type($result)";
}

def LS2_SliceOp : LS2_Op<"slice", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>, LS2_VJP]> {
  let summary = "a contiguous range [start, limit) along one static axis";
  let description = [{
    `ls2.slice %qkv {axis = 1, start = 768, limit = 1536}
       : tensor<?x2304xf16> -> tensor<?x768xf16>` takes columns 768..1535.
  }];
  let arguments = (ins LS2_AnyTensor:$input, I64Attr:$axis, I64Attr:$start,
                       I64Attr:$limit);
  let results = (outs LS2_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def LS2_ConcatOp : LS2_Op<"concat", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>, LS2_VJP]> {
  let summary = "join tensors along one axis";
  let description = [{
    All operands have the same element type and rank and agree on every dim
    but `axis`.
  }];
  let arguments = (ins Variadic<LS2_AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs LS2_AnyTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` `(` type($inputs) `)` `->` "
                       "type($result)";
}

//===----------------------------------------------------------------------===//
// Reductions, matmul, embedding
//===----------------------------------------------------------------------===//

class LS2_ReduceOp<string mnemonic, string what>
    : LS2_Op<mnemonic, [Pure, DeclareOpInterfaceMethods<InferTypeOpInterface>,
                        LS2_VJP]> {
  let summary = what # " over the given axes";
  let description = "Reduces `axes` (distinct, ascending) of the input. "
    # "Float sums accumulate in f32 whatever the element type. With "
    # "`keep_dims` the reduced dims stay with size 1.";
  let arguments = (ins LS2_NumericTensor:$input, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keep_dims);
  let results = (outs LS2_NumericTensor:$result);
  let assemblyFormat = "$input $axes attr-dict `:` type($input) `->` "
                       "type($result)";
  let extraClassDeclaration = [{
    /// True when the axes are the leading dims 0 .. k-1 of the input (k
    /// less than its rank) without keep_dims: a reduction over the rows of
    /// [R, H...] into [H...] (a layer norm's dgamma), which ls2-fuse may put
    /// into the row reduction that computes its input.
    bool reducesLeadingDims() {
      auto axes = getAxes();
      int64_t rank = ::llvm::cast<::mlir::RankedTensorType>(getInput().getType()).getRank();
      if (getKeepDims() || axes.empty() || static_cast<int64_t>(axes.size()) >= rank)
        return false;
      for (auto [k, a] : ::llvm::enumerate(axes))
        if (a != static_cast<int64_t>(k))
          return false;
      return true;
    }
  }];
}

def LS2_ReduceSumOp : LS2_ReduceOp<"reduce_sum", "sum">;
def LS2_ReduceMaxOp : LS2_ReduceOp<"reduce_max", "maximum">;

def LS2_MatmulOp : LS2_Op<"matmul", [Pure, LS2_VJP, AttrSizedOperandSegments,
    AttrSizedResultSegments]> {
  let summary = "batched matrix product with transpose flags and epilogues";
  let description = [{
    `a` is [..., M, K] (or [..., K, M] with `transpose_a`), `b` is [..., K, N]
    (or [..., N, K] with `transpose_b`). Leading batch dims of a and b are
    equal, or `b` is rank 2 and shared by every batch (a linear layer).
    Products accumulate in `acc_type` (f32 unless stated); the result's
    element type is any float type.

      %y = ls2.matmul %x, %w {transpose_b}
             : tensor<?x768xf16>, tensor<3072x768xf16> -> tensor<?x3072xf16>

    Epilogues (cuBLASLt's, attached by ls2-fuse; the frontend and autodiff
    never make them). Below, acc is the f32 accumulator and "f32 steps"
    means each step of the formula is rounded to f32, in the order written
    (ls2-decompose's order, so a fused f32 program computes the same bits
    as the unfused one):
      `bias(%b : tensor<Nxf16>)` adds b[n] to every row of the f32
        accumulator before the result is rounded (CUBLASLT_EPILOGUE_BIAS);
      a second result `bias_grad` [M'] (rank-2 `a` with `transpose_a`, so
        the product is aᵀ·b over a's rows) is the sum of a over its rows,
        accumulated in f32 in row order (CUBLASLT_EPILOGUE_BGRADA): the bias
        gradient computed with the weight gradient.
    Activation epilogues (`activation`; rank-2 operands only):
      `relu`: with p = acc (+ bias), rounded to f32, the result is
        (p > 0 ? p : 0) rounded once (NaN gives 0, as select(p > 0, p, 0)
        and cuBLASLt do). An optional result `aux` is the mask p > 0 as a
        bit mask, tensor<M x W x i32> with W = ceil(N / 128) * 4: bit n % 32
        of word n / 32 in row m (cuBLASLt's ReLU bit mask, leading dimension
        ceil(N / 128) * 128 bits) (CUBLASLT_EPILOGUE_RELU[_AUX][_BIAS]).
      `gelu_tanh`: the result is the tanh GELU of p, 0.5 p (1 + tanh(
        sqrt(2/pi) (p + 0.044715 p^3))) in f32 steps, rounded once; an
        optional result `aux` (the result's type) is p rounded to the
        result's type, the GELU input the backward reads
        (CUBLASLT_EPILOGUE_GELU[_AUX][_BIAS]). cuBLASLt has no erf GELU, so
        `ls2.gelu` without `approximate = tanh` never becomes this.
      `relu_grad`: operand `aux` is a `relu` aux bit mask; the result is
        acc where its bit is set, else 0 (CUBLASLT_EPILOGUE_DRELU).
      `gelu_tanh_grad`: operand `aux` (the result's type) is the GELU input
        x; the result is acc * gelu'(x) in f32 steps, ls2.gelu_grad's tanh
        derivative, rounded once (CUBLASLT_EPILOGUE_DGELU).
      With `relu_grad` or `gelu_tanh_grad` a `bias_grad` result [N] (the
        result's element type) is the sum of the rounded result over its
        rows in row order, accumulated in f32 and rounded once
        (CUBLASLT_EPILOGUE_DRELU_BGRAD, DGELU_BGRAD): the bias gradient of
        the layer whose activation this differentiates.

      %h, %pre = ls2.matmul %x, %w1 bias(%b1 : tensor<3072xbf16>)
                   {activation = #ls2<gemm_activation gelu_tanh>}
                   : tensor<?x768xbf16>, tensor<768x3072xbf16>
                   -> tensor<?x3072xbf16> aux tensor<?x3072xbf16>
      %dp, %db1 = ls2.matmul %dh, %w2 aux(%pre : tensor<?x3072xbf16>)
                   {activation = #ls2<gemm_activation gelu_tanh_grad>, transpose_b}
                   : tensor<?x768xbf16>, tensor<3072x768xbf16>
                   -> tensor<?x3072xbf16>, tensor<3072xbf16>
  }];
  let arguments = (ins LS2_FloatTensor:$a, LS2_FloatTensor:$b,
                       Optional<LS2_FloatTensor>:$bias,
                       Optional<LS2_NumericTensor>:$aux,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b,
                       OptionalAttr<TypeAttr>:$acc_type,
                       OptionalAttr<LS2_GemmActivationAttr>:$activation);
  let results = (outs LS2_FloatTensor:$result,
                      Optional<LS2_FloatTensor>:$bias_grad,
                      Optional<LS2_NumericTensor>:$aux_out);
  let assemblyFormat = [{
    $a `,` $b (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`aux` `(` $aux^ `:` type($aux) `)`)? attr-dict `:` type($a)
    `,` type($b) `->` type($result) (`,` type($bias_grad)^)?
    (`aux` type($aux_out)^)?
  }];
  let hasVerifier = 1;
  let builders = [
    // The product with at most a bias and a BGRADA bias gradient (no
    // activation): what the frontend, autodiff and GEMM merging build.
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Type":$bias_grad,
                   "::mlir::Value":$a, "::mlir::Value":$b,
                   "::mlir::Value":$bias, "bool":$transpose_a,
                   "bool":$transpose_b, "::mlir::TypeAttr":$acc_type), [{
      build($_builder, $_state, result, bias_grad, /*aux_out=*/::mlir::Type(),
            a, b, bias, /*aux=*/::mlir::Value(), transpose_a, transpose_b,
            acc_type, /*activation=*/nullptr);
    }]>
  ];
  let extraClassDeclaration = [{
    /// The accumulation type: acc_type when given, else f32.
    ::mlir::Type getAccumulationType();
    /// relu or gelu_tanh (forward activations, which may produce `aux`).
    bool hasForwardActivation();
    /// relu_grad or gelu_tanh_grad (activation gradients, which read `aux`).
    bool hasActivationGrad();
    /// The i32 words per row of a ReLU bit mask over `n` columns:
    /// ceil(n / 128) * 4 (cuBLASLt's leading dimension, a multiple of 128
    /// bits).
    static int64_t reluMaskWords(int64_t n);
  }];
}

def LS2_GatherOp : LS2_Op<"gather", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>, LS2_VJP]> {
  let summary = "embedding lookup: rows of a table selected by ids";
  let description = [{
    table [V, H...], ids [...] -> result [ids..., H...]. Ids outside [0, V)
    are an error: the reference interpreter reports it, and the tools check
    a batch's ids before any GPU launch (ls2c/Model/BatchIds.h), since the
    generated kernel reads the row an id names.

      %e = ls2.gather %wte[%ids] : tensor<50257x768xbf16>, tensor<?xi32>
             -> tensor<?x768xbf16>

    The table's row count may be dynamic (rows of an activation, such as
    the masked-LM head's labelled tokens, selected by `ls2.nonzero`); its
    gradient is then a `scatter_add` sized by that count.

    With `fill_value` an id outside [0, V) is no error: its row holds
    fill_value in the table's element type (jax.numpy.take's
    mode='fill'), and the gradient's `scatter_add` drops it. The masked-LM
    head reads `ls2.nonzero`'s unused slots (-1) this way: rows of zeros
    and the ignore index, whatever the batch (even one of no tokens).

      %rows = ls2.gather %x[%positions] {fill_value = 0.0 : f64}
                : tensor<?x768xf16>, tensor<3072xi32> -> tensor<3072x768xf16>
  }];
  let arguments = (ins LS2_AnyTensor:$table, LS2_IdTensor:$ids,
                       OptionalAttr<F64Attr>:$fill_value);
  let results = (outs LS2_AnyTensor:$result);
  let assemblyFormat = "$table `[` $ids `]` attr-dict `:` type($table) `,` "
                       "type($ids) `->` type($result)";
  let hasVerifier = 1;
}

def LS2_ScatterAddOp : LS2_Op<"scatter_add", [Pure, LS2_VJP]> {
  let summary = "embedding gradient: rows added into a table by id";
  let description = [{
    The gradient of `gather`: updates [ids..., H...] are summed into a zeroed
    [V, H...] table (V from the result type) at the rows their ids name.
    Rows equal to `padding_idx`, when given, receive nothing (PyTorch's
    nn.Embedding padding_idx). Sums accumulate in f32 in a fixed order.
    The row count V may be dynamic (the gradient of a gather from an
    activation): one `index` operand gives it; the row shape is static.
    Other ids outside [0, V) are an error, unless `drop_out_of_range`
    (jax.numpy's scatter mode='drop', the gradient of a gather with
    fill_value) leaves their updates out.

      %dx = ls2.scatter_add %drows, %positions [%t] {drop_out_of_range}
              : tensor<3072x768xf16>, tensor<3072xi32> -> tensor<?x768xf16>
  }];
  let arguments = (ins LS2_FloatTensor:$updates, LS2_IdTensor:$ids,
                       Variadic<Index>:$dynamic_sizes,
                       OptionalAttr<I64Attr>:$padding_idx,
                       UnitAttr:$drop_out_of_range);
  let results = (outs LS2_FloatTensor:$result);
  let assemblyFormat = "$updates `,` $ids (`[` $dynamic_sizes^ `]`)? attr-dict "
                       "`:` type($updates) `,` type($ids) `->` type($result)";
  let hasVerifier = 1;
}

def LS2_NonzeroOp : LS2_Op<"nonzero", [Pure]> {
  let summary = "positions of a 1-D mask's true elements, in a static size";
  let description = [{
    jax.numpy.nonzero(mask, size=N, fill_value=...) for a 1-D mask, N the
    result's static size: element k is the position of the mask's k-th
    true element (ascending) while there are that many, `fill_value` after
    them; true elements past the first N are left out. The masked-LM head
    gathers its labelled rows with it (description field
    `max_predictions`), and the tools refuse a batch with more labels than
    N before anything runs (ls2c/Model/BatchIds.h), so nothing is dropped
    there; its gathers read the unused slots (-1) with a fill_value.

      %positions = ls2.nonzero %labelled {fill_value = -1 : i64}
                     : tensor<?xi1> -> tensor<3072xi32>

    Positions are integers without a gradient.
  }];
  let arguments = (ins LS2_BoolTensor:$mask,
                       DefaultValuedAttr<I64Attr, "-1">:$fill_value);
  let results = (outs LS2_IdTensor:$result);
  let assemblyFormat = "$mask attr-dict `:` type($mask) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Counter-based randomness (Philox-4x32-10, Salmon et al., SC'11)
//===----------------------------------------------------------------------===//

def LS2_RandomUniformOp : LS2_Op<"random_uniform", [Pure]> {
  let summary = "uniform f32 numbers in [0, 1) from Philox";
  let description = [{
    Element e of the row-major result comes from Philox-4x32-10 (Salmon et
    al., SC'11) with key (seed low 32 bits, seed high 32 bits) and counter
    (c0, c1, stream, offset low 32 bits), where c0 and c1 are the low and high
    32 bits of e / 8; it is half e % 2 (the low half for even e) of output
    word (e / 2) % 4, as `half * 2^-16`: eight numbers a call.
    Attention dropout puts its stream in the same counter word (see
    ls2.attention), so a program's random sites never share a counter. A
    function of its operands alone: same seed, offset and stream give the
    same bits, so backward regenerates masks instead of storing them. Each
    random site in a program has its own `stream`; the runtime advances
    `offset` per step. Dynamic result dims take their sizes from `index`
    operands.
  }];
  let arguments = (ins LS2_I64Scalar:$seed, LS2_I64Scalar:$offset,
                       Variadic<Index>:$dynamic_sizes, I64Attr:$stream);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = "$seed `,` $offset `[` $dynamic_sizes `]` attr-dict "
                       "`:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Composites
//===----------------------------------------------------------------------===//

def LS2_DropoutOp : LS2_Op<"dropout", [Pure, AllTypesMatch<["input", "result"]>,
    LS2_VJP]> {
  let summary = "inverted dropout with a Philox mask";
  let description = [{
    result = keep ? input / (1 - rate) : 0, where keep = u >= rate and u is
    `ls2.random_uniform` of the same seed, offset and stream over the
    input's shape. rate is in [0, 1).
  }];
  let arguments = (ins LS2_FloatTensor:$input, LS2_I64Scalar:$seed,
                       LS2_I64Scalar:$offset, F32Attr:$rate, I64Attr:$stream);
  let results = (outs LS2_FloatTensor:$result);
  let assemblyFormat = "$input `,` $seed `,` $offset attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def LS2_GeluOp : LS2_Op<"gelu", [Pure, Elementwise, SameOperandsAndResultType,
    LS2_VJP]> {
  let summary = "Gaussian error linear unit (Hendrycks & Gimpel, 2016)";
  let description = [{
    `none`: x * 0.5 * (1 + erf(x / sqrt(2))); `tanh`: x * 0.5 * (1 +
    tanh(sqrt(2/pi) * (x + 0.044715 x^3))), as torch.nn.functional.gelu.
    Computed in f32.
  }];
  let arguments = (ins LS2_FloatTensor:$input,
      DefaultValuedAttr<LS2_GeluApproximationAttr,
                        "::ls2c::ls2::GeluApproximation::None">:$approximate);
  let results = (outs LS2_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def LS2_LayerNormOp : LS2_Op<"layer_norm", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>, LS2_VJP]> {
  let summary = "layer normalization over the last dim (Ba et al., 2016)";
  let description = [{
    x [..., H], gamma [H], beta [H] (x's element type) ->
    y [..., H] = (x - mean) * rstd * gamma + beta, with mean [...] and
    rstd = 1 / sqrt(var + epsilon) [...] returned in f32 for backward.
    Statistics accumulate in f32; var is the biased variance.
  }];
  let arguments = (ins LS2_FloatTensor:$input, LS2_FloatTensor:$gamma,
                       LS2_FloatTensor:$beta, F32Attr:$epsilon);
  let results = (outs LS2_FloatTensor:$result, LS2_F32Tensor:$mean,
                      LS2_F32Tensor:$rstd);
  let assemblyFormat = "$input `,` $gamma `,` $beta attr-dict `:` type($input) "
                       "`,` type($gamma) `,` type($beta)";
  let hasVerifier = 1;
}

def LS2_SoftmaxOp : LS2_Op<"softmax", [Pure, LS2_VJP]> {
  let summary = "masked, scaled softmax over the last dim";
  let description = [{
    softmax(scale * x + mask) over the last dim (the input has rank >= 1),
    computed in f32. An f32/f16/bf16 mask is additive; an i1 mask keeps
    positions where it is true. The mask has the input's rank, and each mask
    dim is 1 or equals the input's dim exactly: the same static size, or
    dynamic where the input's is.
    `causal` masks key j > query i + (keys - queries) over the last two
    dims (bottom-right alignment). A row with no visible key is all zeros,
    never NaN or uniform.
  }];
  let arguments = (ins LS2_FloatTensor:$input,
                       Optional<LS2_AnyTensor>:$mask,
                       DefaultValuedAttr<F32Attr, "1.0">:$scale,
                       UnitAttr:$causal);
  let results = (outs LS2_FloatTensor:$result);
  let assemblyFormat = "$input (`mask` $mask^ `:` type($mask))? attr-dict `:` "
                       "type($input) `->` type($result)";
  let hasVerifier = 1;
}

def LS2_AttentionOp : LS2_Op<"attention", [Pure, AttrSizedOperandSegments,
    LS2_VJP]> {
  let summary = "scaled dot-product attention over packed variable-length sequences";
  let description = [{
    Sequences are packed without padding: q [Tq, Hq, D], k and v [Tk, Hkv, D]
    with Hq, Hkv and D static and >= 1 and Hkv dividing Hq (multi-query and
    grouped-query attention share each kv head among Hq/Hkv query heads:
    query head h uses kv head
    h / (Hq / Hkv)). cu_seqlens_q [B+1] and cu_seqlens_k
    [B+1] (i32, ascending, starting at 0 and ending at Tq and Tk) delimit
    the B sequences. Returns out [Tq, Hq, D] and the f32 log-sum-exp of each
    query row's scaled scores, lse [Tq, Hq], which backward uses (it never
    re-runs forward).

    `causal` masks key j > query i + (Lk - Lq) within each sequence
    (bottom-right alignment, as FlashAttention-2). A query that sees no key
    gets output 0 and lse -inf. `dropout_rate` > 0 applies inverted dropout
    to the probabilities with Philox-4x32-10 under the seed, with 8-bit
    numbers, sixteen a call (FlashAttention-2's resolution), in a counter
    layout of its own: the probability of query i and key j (their indices
    within the sequence, whose first packed query row is q0), head h, is
    kept when its number is at least the applied rate (below), where
    queries i = 16a + b + 8r (b < 8, r < 2) and keys j = 32s + 8m + 2t + p
    (m < 4, p < 2) take counter (4s + t, (q0 + 16a + b) * Hq + h, stream,
    offset low 32 bits) and number (byte 2r + p of word m) * 2^-8, byte 0
    the lowest. The applied rate is the rate rounded up to a multiple of
    2^-8, at most 255/256 (0.1 applies 26/256), and kept probabilities are
    scaled by 1 / (1 - applied rate). It then needs the seed and offset
    operands.
    `scale` defaults to 1/sqrt(D). Stays opaque: ls2-decompose keeps it.
    q, k and v may be strided views (slices of one fused [T, 3H] projection,
    ls2-fuse's strided views): kernels read them with their row stride.

    `key_lengths` [B] (i32, optional; FlashAttention's seqused_k) reads the
    keys of a cache instead of packed sequences: sequence b's keys are the
    key_lengths[b] rows from row cu_seqlens_k[b], within [0, Tk); the
    starts may come in any order and the ranges may overlap (beams share
    one source's keys), and cu_seqlens_k[B] is not read. Incremental
    decoding (a KV cache with room for more tokens per sequence) uses it;
    it has no gradient.
  }];
  let arguments = (ins LS2_FloatTensor:$query, LS2_FloatTensor:$key,
                       LS2_FloatTensor:$value, RankedTensorOf<[I32]>:$cu_seqlens_q,
                       RankedTensorOf<[I32]>:$cu_seqlens_k,
                       Optional<LS2_I64Scalar>:$seed, Optional<LS2_I64Scalar>:$offset,
                       Optional<RankedTensorOf<[I32]>>:$key_lengths,
                       OptionalAttr<F32Attr>:$scale, UnitAttr:$causal,
                       DefaultValuedAttr<F32Attr, "0.0">:$dropout_rate,
                       DefaultValuedAttr<I64Attr, "0">:$stream);
  let results = (outs LS2_FloatTensor:$result, LS2_F32Tensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $cu_seqlens_q `,` $cu_seqlens_k
    (`key_lengths` `(` $key_lengths^ `:` type($key_lengths) `)`)?
    (`dropout` `(` $seed^ `,` $offset `)`)? attr-dict `:` type($query) `,`
    type($key) `,` type($value) `,` type($cu_seqlens_q) `,` type($cu_seqlens_k)
    `->` type($result) `,` type($lse)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The softmax scale: the attribute, else 1/sqrt(head dim).
    float getEffectiveScale();
  }];
}

def LS2_CrossEntropyOp : LS2_Op<"cross_entropy", [Pure, LS2_VJP]> {
  let summary = "softmax cross-entropy with label smoothing and an ignore index";
  let description = [{
    logits [N, C] (any float type, computed in f32), targets [N] (i32/i64).
    Per row: (1 - eps) * (lse - x[t]) + eps * (lse - mean(x)), eps =
    `label_smoothing` (torch.nn.functional.cross_entropy semantics). Rows
    whose target is `ignore_index` contribute 0. `mean` divides the sum by
    the number of non-ignored rows and gives 0 (not NaN) when there are
    none; `sum` adds; `none` returns the f32 per-row losses [N].
    Other targets outside [0, C) are an error: the reference interpreter
    reports it, and the tools check a batch's labels before any GPU launch
    (ls2c/Model/BatchIds.h).
  }];
  let arguments = (ins LS2_FloatTensor:$logits, LS2_IdTensor:$targets,
                       DefaultValuedAttr<F32Attr, "0.0">:$label_smoothing,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       DefaultValuedAttr<LS2_LossReductionAttr,
                           "::ls2c::ls2::LossReduction::Mean">:$reduction);
  let results = (outs LS2_F32Tensor:$result);
  let assemblyFormat = "$logits `,` $targets attr-dict `:` type($logits) `,` "
                       "type($targets) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Backward composites: the vector-Jacobian products of the composites, built
// by ls2-autodiff from what the forward saved (never re-running forward)
//===----------------------------------------------------------------------===//

def LS2_LayerNormGradOp : LS2_Op<"layer_norm_grad", [Pure,
    AllTypesMatch<["dy", "input", "dx"]>,
    AllTypesMatch<["gamma", "dgamma", "dbeta"]>,
    AllTypesMatch<["mean", "rstd"]>]> {
  let summary = "backward of layer_norm from its saved statistics";
  let description = [{
    The gradients of `ls2.layer_norm` with respect to its input, gamma and
    beta. Operands: dy [..., H], the gradient of y (x's type); x [..., H];
    gamma [H] (x's element type); and the f32 mean and rstd [...] that
    layer_norm returned, which are used as they are (the statistics are not
    recomputed). Over the last dim, in f32, with
    xhat = (x - mean) * rstd and g = dy * gamma:

      dx     = rstd * (g - mean_H(g) - xhat * mean_H(g * xhat))   [..., H]
      dgamma = sum over all leading dims of dy * xhat               [H]
      dbeta  = sum over all leading dims of dy                      [H]

    where mean_H averages over the last dim. Every sum accumulates in f32;
    dx is rounded once to x's element type, dgamma and dbeta to gamma's.
    (The gradient through the mean and rstd results themselves, when a
    program uses them, is added by ls2-autodiff with primitives.)

      %dx, %dgamma, %dbeta = ls2.layer_norm_grad %dy, %x, %gamma, %mean, %rstd
        : tensor<?x768xf16>, tensor<768xf16>, tensor<?xf32>
  }];
  let arguments = (ins LS2_FloatTensor:$dy, LS2_FloatTensor:$input,
                       LS2_FloatTensor:$gamma, LS2_F32Tensor:$mean,
                       LS2_F32Tensor:$rstd);
  let results = (outs LS2_FloatTensor:$dx, LS2_FloatTensor:$dgamma,
                      LS2_FloatTensor:$dbeta);
  let assemblyFormat = "$dy `,` $input `,` $gamma `,` $mean `,` $rstd attr-dict "
                       "`:` type($input) `,` type($gamma) `,` type($mean)";
  let hasVerifier = 1;
}

def LS2_SoftmaxGradOp : LS2_Op<"softmax_grad", [Pure,
    AllTypesMatch<["dy", "output", "dx"]>]> {
  let summary = "backward of softmax from its output";
  let description = [{
    For y = `ls2.softmax`(x) with `scale` (and any mask, causal or not),
    the gradient with respect to x from dy (the gradient of y) and y itself,
    both of x's type, over the last dim:

      dx = scale * y * (dy - sum_last(dy * y))

    computed in f32 (the row sum accumulates in f32) and rounded once.
    Masked positions, and rows with no visible key, have y = 0 and so get
    dx = 0: the mask is not needed. With scale = 1 it is the gradient with
    respect to an additive mask before summing over the mask's broadcast
    dims.

      %dx = ls2.softmax_grad %dy, %y {scale = 1.250000e-01 : f32}
              : tensor<?x12x128x128xf16>
  }];
  let arguments = (ins LS2_FloatTensor:$dy, LS2_FloatTensor:$output,
                       DefaultValuedAttr<F32Attr, "1.0">:$scale);
  let results = (outs LS2_FloatTensor:$dx);
  let assemblyFormat = "$dy `,` $output attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def LS2_GeluGradOp : LS2_Op<"gelu_grad", [Pure, Elementwise,
    SameOperandsAndResultType]> {
  let summary = "backward of gelu";
  let description = [{
    dx = dy * gelu'(x) elementwise, dy and x of the same type, computed in
    f32 and rounded once. The exact derivative of each form of `ls2.gelu`:

      none: gelu'(x) = Phi(x) + x * phi(x), with
            Phi(x) = 0.5 * (1 + erf(x / sqrt(2))),
            phi(x) = exp(-x^2 / 2) / sqrt(2 pi);
      tanh: with u = sqrt(2/pi) * (x + 0.044715 x^3) and t = tanh(u),
            gelu'(x) = 0.5 * (1 + t)
                       + 0.5 * x * (1 - t^2) * sqrt(2/pi) * (1 + 3 * 0.044715 x^2).

      %dx = ls2.gelu_grad %dy, %x {approximate = #ls2<gelu_approximation tanh>}
              : tensor<?x3072xbf16>
  }];
  let arguments = (ins LS2_FloatTensor:$dy, LS2_FloatTensor:$input,
      DefaultValuedAttr<LS2_GeluApproximationAttr,
                        "::ls2c::ls2::GeluApproximation::None">:$approximate);
  let results = (outs LS2_FloatTensor:$dx);
  let assemblyFormat = "$dy `,` $input attr-dict `:` type($dx)";
}

def LS2_CrossEntropyGradOp : LS2_Op<"cross_entropy_grad", [Pure,
    AllTypesMatch<["logits", "dlogits"]>]> {
  let summary = "backward of cross_entropy from its logits";
  let description = [{
    The gradient of `ls2.cross_entropy` with respect to its logits x [N, C]
    (any float type), from dloss (the gradient of its result: f32 rank 0 for
    `mean` and `sum`, f32 [N] for `none`) and targets [N] (i32/i64). The
    softmax is recomputed row by row in f32 from the logits (probabilities
    are never stored). For row r with p = softmax(x[r, :]),
    eps = label_smoothing and q = (1 - eps) * onehot(t_r) + eps / C:

      dlogits[r, :] = w_r * (p - q)

    where w_r = 0 when t_r = ignore_index, else dloss / max(count, 1) for
    `mean` (count = the non-ignored rows), dloss for `sum` and dloss[r] for
    `none`. Rounded once to the logits' type. The attributes are the
    forward op's.

      %dx = ls2.cross_entropy_grad %dloss, %logits, %labels
              : tensor<f32>, tensor<?x50257xbf16>, tensor<?xi32>
  }];
  let arguments = (ins LS2_F32Tensor:$dloss, LS2_FloatTensor:$logits,
                       LS2_IdTensor:$targets,
                       DefaultValuedAttr<F32Attr, "0.0">:$label_smoothing,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       DefaultValuedAttr<LS2_LossReductionAttr,
                           "::ls2c::ls2::LossReduction::Mean">:$reduction);
  let results = (outs LS2_FloatTensor:$dlogits);
  let assemblyFormat = "$dloss `,` $logits `,` $targets attr-dict `:` "
                       "type($dloss) `,` type($logits) `,` type($targets)";
  let hasVerifier = 1;
}

def LS2_AttentionGradOp : LS2_Op<"attention_grad", [Pure,
    AttrSizedOperandSegments,
    AllTypesMatch<["dout", "query", "out", "dq"]>,
    AllTypesMatch<["key", "value", "dk", "dv"]>]> {
  let summary = "backward of attention from its output and log-sum-exp";
  let description = [{
    The gradients of `ls2.attention` with respect to q [Tq, Hq, D], k and
    v [Tk, Hkv, D], FlashAttention-2 style (Dao, 2023): from dout (the
    gradient of out), q, k, v, and the forward's out [Tq, Hq, D] and f32
    lse [Tq, Hq]. The forward is never re-run: probabilities are rebuilt
    tile by tile from lse. The operands cu_seqlens_q/k, dropout(seed,
    offset) and the attributes are the forward op's, with the same rules.

    Within each sequence, for query i, query head h and key j of kv head
    g = h / (Hq / Hkv), with s_ij = scale * q_i . k_j over visible keys
    (causal as forward, bottom-right aligned):

      P_ij  = exp(s_ij - lse_i)          (0 for masked keys and lse = -inf)
      M_ij  = keep_ij / (1 - applied rate)
                                         (the forward's dropout mask,
                                          regenerated; 1 without dropout)
      D_i   = sum_d dout_i[d] * out_i[d]
      dP_ij = (dout_i . v_j) * M_ij
      dS_ij = P_ij * (dP_ij - D_i)
      dq_i  = scale * sum_j dS_ij k_j
      dk_j  = scale * sum_{i, h sharing g} dS_ij q_i
      dv_j  = sum_{i, h sharing g} P_ij M_ij dout_i

    so dk and dv of kv head g are summed over the Hq / Hkv query heads that
    share it (GQA/MQA). Products accumulate in f32; each result is rounded
    once to its input's type. Rows that see no key get dq = 0 and add
    nothing to dk, dv. Stays opaque (a fused kernel or cuDNN):
    ls2-decompose keeps it.

      %dq, %dk, %dv = ls2.attention_grad %dout, %q, %k, %v, %out, %lse,
          %cu, %cu dropout(%seed, %offset) {causal, dropout_rate = 0.1 : f32,
          stream = 1 : i64} : tensor<?x12x64xf16>, tensor<?x12x64xf16>,
          tensor<?x12xf32>, tensor<?xi32>, tensor<?xi32>
  }];
  let arguments = (ins LS2_FloatTensor:$dout, LS2_FloatTensor:$query,
                       LS2_FloatTensor:$key, LS2_FloatTensor:$value,
                       LS2_FloatTensor:$out, LS2_F32Tensor:$lse,
                       RankedTensorOf<[I32]>:$cu_seqlens_q,
                       RankedTensorOf<[I32]>:$cu_seqlens_k,
                       Optional<LS2_I64Scalar>:$seed, Optional<LS2_I64Scalar>:$offset,
                       OptionalAttr<F32Attr>:$scale, UnitAttr:$causal,
                       DefaultValuedAttr<F32Attr, "0.0">:$dropout_rate,
                       DefaultValuedAttr<I64Attr, "0">:$stream);
  let results = (outs LS2_FloatTensor:$dq, LS2_FloatTensor:$dk,
                      LS2_FloatTensor:$dv);
  let assemblyFormat = [{
    $dout `,` $query `,` $key `,` $value `,` $out `,` $lse `,` $cu_seqlens_q
    `,` $cu_seqlens_k (`dropout` `(` $seed^ `,` $offset `)`)? attr-dict `:`
    type($query) `,` type($key) `,` type($lse) `,` type($cu_seqlens_q) `,`
    type($cu_seqlens_k)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The softmax scale: the attribute, else 1/sqrt(head dim).
    float getEffectiveScale();
  }];
}

def LS2_AdamWOp : LS2_Op<"adamw", [Pure, AllTypesMatch<["param", "exp_avg",
    "exp_avg_sq", "new_param", "new_exp_avg", "new_exp_avg_sq"]>]> {
  let summary = "Adam / AdamW update of a flat parameter buffer";
  let description = [{
    One step over flat f32 buffers param, m, v [N] and grad [N] (any float
    type; scaled by `grad_scale`, the product of the clipping coefficient
    and 1/loss scale). With g = grad * grad_scale, t = step (i64, from 1):
      decoupled (AdamW, Loshchilov & Hutter 2019): p -= lr * wd * p
      l2 (Adam): g += wd * p
      m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
      p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
    matching torch.optim.AdamW / Adam. Returns the new param, m and v.
  }];
  let arguments = (ins LS2_F32Tensor:$param, LS2_FloatTensor:$grad,
                       LS2_F32Tensor:$exp_avg, LS2_F32Tensor:$exp_avg_sq,
                       LS2_I64Scalar:$step, LS2_F32Scalar:$lr,
                       LS2_F32Scalar:$grad_scale,
                       F32Attr:$beta1, F32Attr:$beta2, F32Attr:$epsilon,
                       F32Attr:$weight_decay,
                       DefaultValuedAttr<LS2_WeightDecayModeAttr,
                           "::ls2c::ls2::WeightDecayMode::Decoupled">:$mode);
  let results = (outs LS2_F32Tensor:$new_param, LS2_F32Tensor:$new_exp_avg,
                      LS2_F32Tensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $step `,` $lr `,`
    $grad_scale attr-dict `:` type($param) `,` type($grad)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fusion groups (ls2-fuse)
//===----------------------------------------------------------------------===//

def LS2_FusionOp : LS2_Op<"fusion", [IsolatedFromAbove, SingleBlock,
    RecursiveMemoryEffects]> {
  let summary = "a fusion group: the primitive ops one generated kernel runs";
  let description = [{
    Made by `ls2-fuse`. The body's block arguments are the group's inputs
    (tensors and `index` sizes), its ops are primitives, and `ls2.yield`
    returns the values the rest of the program reads. `kind` says what the
    kernel iterates over:
      loop              every element of its output shape;
      row_reduction     rows [R, H] reduced over the last dim, one row per
                        warp or block, with elementwise prologue and
                        epilogue on the same rows (layer norm, softmax,
                        cross-entropy);
      column_reduction  [N, H] reduced over N into [H] (or [N] into a
                        scalar) in two fixed-order stages, with an
                        elementwise prologue (bias and layer-norm
                        gradients).
    The name is unique in its function and names the generated kernel.

      %y, %mean = ls2.fusion "layer_norm_3" row_reduction (%x, %g, %n)
          : (tensor<?x64xf32>, tensor<64xf32>, index) -> (tensor<?x64xf32>, tensor<?xf32>) {
      ^bb0(%a: tensor<?x64xf32>, %b: tensor<64xf32>, %t: index):
        ...
        ls2.yield %0, %1 : tensor<?x64xf32>, tensor<?xf32>
      }
  }];
  let arguments = (ins StrAttr:$group_name, LS2_FusionKindAttr:$kind,
                       Variadic<AnyType>:$inputs);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $group_name `` $kind `(` $inputs `)` attr-dict `:`
    functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
}

def LS2_YieldOp : LS2_Op<"yield", [Pure, Terminator, ReturnLike,
    HasParent<"FusionOp">]> {
  let summary = "the results of a fusion group";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // LS2_OPS_TD
