//===- Passes.td - ls2c transformation passes ---------------*- tablegen -*-===//
#ifndef LS2C_TRANSFORMS_PASSES_TD
#define LS2C_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def Decompose : Pass<"ls2-decompose"> {
  let summary = "Lower composite ls2 ops into ls2 primitives";
  let description = [{
    Rewrites layer_norm, softmax, gelu, dropout, cross_entropy and adamw,
    and the backward composites layer_norm_grad, softmax_grad, gelu_grad
    and cross_entropy_grad, into elementwise ops, broadcasts, reductions,
    random_uniform and casts, for passes that work on primitives (fusion
    rediscovers the composites' kernels from them) and for checking the
    composites against their decompositions. Low-precision inputs are cast
    to f32 first and the results cast back, so the decomposed program keeps
    the composites' numerics. `ls2.attention` and `ls2.attention_grad`
    stay: they are opaque (a fused kernel or cuDNN).

    Before:
      %y = ls2.gelu %x : tensor<?x64xf32>
    After:
      %c = ls2.constant dense<0.707106769> : tensor<f32>
      %0 = ls2.mul %x, %c : tensor<?x64xf32>, tensor<f32>
      %1 = ls2.erf %0 : tensor<?x64xf32>
      ...
  }];
  let dependentDialects = ["::ls2c::ls2::LS2Dialect"];
}

def Autodiff : Pass<"ls2-autodiff", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode autodiff: add @forward_backward to a module with @forward";
  let description = [{
    Differentiates `func.func @forward(...) -> tensor<f32>` (the scalar
    loss) and adds `func.func @forward_backward` with the same arguments and
    argument attributes. It returns the loss, then one gradient per
    argument whose `ls2.kind` is "parameter", in argument order, each typed
    like its parameter, with result attributes `ls2.name` (the parameter's
    name) and `ls2.kind = "gradient"` (the loss has `ls2.kind = "loss"`).
    @forward is left as it is.

    The body is @forward's ops, cloned, then the backward ops in reverse
    program order, built by each op's DifferentiableOpInterface::buildVJP
    (composites through their backward composites: layer_norm_grad,
    softmax_grad, gelu_grad, cross_entropy_grad, attention_grad; dropout
    through dropout of the gradient with the same seed, offset and stream;
    gather through scatter_add). Rules:

      * Only float values that depend on a parameter and reach the loss get
        gradients; integer and i1 values, inputs and buffers never do.
        Values produced by ops without the interface (compare, iota, dim,
        constant, random_uniform) are constants; such an op on the path
        from a parameter to the loss is an error naming it.
      * A value used several times gets the sum of its gradients with
        ls2.add, in the order of its uses in the forward program (so a tied
        embedding gets gather's scatter_add plus the LM head's matmul
        gradient). Slices that tile a value along one axis (fused q/k/v
        projections) get their gradients joined by one ls2.concat, with
        zeros in any gap, instead of padded and added.
      * A parameter that does not reach the loss gets zeros (a broadcast of
        a 0 constant).
      * `ls2.dim` ops the backward needs on forward values are placed in
        the forward part, so the backward reads only their index.
      * Each forward op whose results the backward reads gets the unit
        attribute `ls2.saved`: its results must be kept (or
        rematerialized) until the backward has used them. Arguments are
        always available and are not marked.

    Before:
      func.func @forward(%w: tensor<64x64xf32> {ls2.kind = "parameter",
                         ls2.name = "w"}, %x: tensor<?x64xf32> {...},
                         %t: tensor<?xi32> {...}) -> tensor<f32> {
        %y = ls2.matmul %x, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
        %l = ls2.cross_entropy %y, %t : tensor<?x64xf32>, tensor<?xi32> -> tensor<f32>
        return %l : tensor<f32>
      }
    After (besides @forward):
      func.func @forward_backward(%w: ..., %x: ..., %t: ...,
                                  %dl: tensor<f32> {ls2.kind = "input", ls2.name = "loss_grad"})
          -> (tensor<f32> {ls2.kind = "loss"},
              tensor<64x64xf32> {ls2.kind = "gradient", ls2.name = "w"}) {
        %y = ls2.matmul %x, %w {ls2.saved} : ...
        %l = ls2.cross_entropy %y, %t : ...
        %dy = ls2.cross_entropy_grad %dl, %y, %t : ...
        %dw = ls2.matmul %x, %dy {transpose_a} : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<64x64xf32>
        return %l, %dw : tensor<f32>, tensor<64x64xf32>
      }
  }];
  let dependentDialects = ["::ls2c::ls2::LS2Dialect",
                           "::mlir::func::FuncDialect"];
}

def TrainStep : Pass<"ls2-train-step", "::mlir::ModuleOp"> {
  let summary = "Build the train step: flat workspaces, optimizer, loss scaling";
  let description = [{
    From @forward_backward (ls2-autodiff) and the module attribute
    `ls2.optimizer` (set by the frontend from the description), adds the two
    functions a trainer runs per optimizer step:

      @accumulate_gradients(%master: tensor<Pxf32>, %gradients: tensor<Pxf32>,
                            %loss_scale: tensor<f32>, buffers..., inputs...)
          -> (%loss: tensor<f32>, %gradients': tensor<Pxf32>)
        Parameters are slices of the fp32 master workspace cast to the
        compute dtype; backward is seeded with loss_scale; the flattened
        gradients (workspace order, zero padding) are added to %gradients.
        Run once per micro-batch.

      @optimizer_step(%master, %gradients, %exp_avg, %exp_avg_sq: tensor<Pxf32>,
                      %step: tensor<i64>, %loss_scale: tensor<f32>,
                      %good_steps: tensor<i64>, %micro_batches: tensor<f32>)
          -> (master', exp_avg', exp_avg_sq', step', loss_scale', good_steps',
              grad_norm: tensor<f32>, lr: tensor<f32>, finite: tensor<i1>)
        Unscales by loss_scale * micro_batches, clips to the global norm
        clip_norm (torch.nn.utils.clip_grad_norm_), computes the learning
        rate after `step` earlier updates (linear warmup from 0, then
        constant, linear, cosine or inverse-square-root decay; PyTorch's
        LambdaLR convention), and applies one ls2.adamw over the
        weight-decayed workspace region and one over the rest. If the
        gradients hold inf or NaN, nothing but the loss scale changes: it
        halves (fp16), and doubles after loss_scale_growth_interval clean
        steps (torch.cuda.amp.GradScaler's rule).

    The workspace layout is ls2c/Training/Workspace.h's planWorkspace over
    the parameters in argument order, so the trainer and the program agree.
  }];
  let dependentDialects = ["::ls2c::ls2::LS2Dialect",
                           "::mlir::func::FuncDialect"];
}

def Fuse : Pass<"ls2-fuse", "::mlir::func::FuncOp"> {
  let summary = "Partition a function into fusion groups, one generated kernel each";
  let description = [{
    Runs after ls2-decompose (and CSE). Classifies each op (FusionRules.h):
    elementwise, broadcast and injective ops form loops; a reduction over
    trailing dims is a row reduction, over leading dims a column reduction;
    matmul, attention, its gradient and scatter_add are opaque. Constants,
    random numbers and cheap elementwise ops on arguments are cloned into
    every group that reads them (dropout masks are regenerated, never
    stored); views (reshape, contiguous slice) stay outside as aliases.

    Producer -> consumer pairs merge in program order when the merged group
    has one iteration space (a row reduction takes an elementwise prologue
    and epilogue on its rows; a column reduction a prologue on its [N, H])
    and no other kernel lies on a path between them; column reductions
    reading the same tensor merge as siblings (dgamma, dbeta, bias
    gradients). Each group becomes an `ls2.fusion` op named after what it
    computes (e.g. `embedding_layer_norm_dropout_0`) with the attribute
    `ls2.bytes_saved`: the device-memory bytes (at the shape bounds) that
    its intermediate values no longer move. Groups that only finish a
    GEMM's result as cuBLASLt's epilogues can (a bias; a weight gradient's
    bias gradient; a bias with ReLU or the tanh GELU, saving the
    activation's input as the GEMM's `aux` result when the backward reads
    it; the activation's gradient from that aux with the bias gradient)
    become the GEMM's epilogue attributes instead (FusionEpilogues.h). With
    `report`, prints every group, every refused pair with its reason, and
    every epilogue attached or refused with its reason.

    Rematerialization (`rematerialize`, on by default): in a function with
    a loss, ops that depend on the backward seed (`loss_grad`,
    `loss_scale`) or are read only by such ops are the backward; a loop
    group never mixes forward and backward ops (it would compute backward
    values early and store them across the passes, e.g. GELU's derivative
    in f32 instead of its fp16 input), and a widening cast read by both
    passes is duplicated so the forward stores the narrow value. The
    report says how many bytes fewer are saved.

    Activation checkpointing (`checkpoint-activations`, or a module with
    the unit attribute `ls2.activation_checkpointing`): every forward value
    of a transformer layer (ops whose location is a layer scope such as
    `transformer.h.3`) that the backward reads is recomputed there, GEMMs
    included, from the checkpoints: arguments, the attention's out and lse
    (so the backward never runs an attention forward again; Megatron's
    selective recomputation, Korthikanti et al., "Reducing Activation
    Recomputation in Large Transformer Models", 2022, recomputes the
    attention core instead), row statistics and
    the values a layer passes to another scope (the residual stream). The
    forward then stores per layer its input, the attention's out and lse
    and the row statistics; the backward recomputes the rest of the layer's
    forward (for a GPT: ln_1, the QKV, output and first MLP GEMMs, ln_2 and
    the GELU) just before it needs them. A recomputed GEMM and its forward
    original take no bias or activation epilogue, so both compute the same
    bits in fp16/bf16 too (an epilogue skips rounding the product).

    With `recompute-attention` (or a module marked
    `ls2.recompute_attention`) the attention's out and lse are not
    checkpoints either: the backward runs each layer's attention forward
    again, as `torch.utils.checkpoint` around a whole layer and Megatron's
    full recomputation do, and a layer stores only what it passes on (its
    input) and its row statistics. One more attention forward a layer for
    one [tokens, hidden] value fewer a layer: what bounds the longest
    sequence one GPU trains (bench/RESULTS.md, issue 28).

    Before:
      %s = ls2.reduce_sum %x [1] : tensor<?x64xf32> -> tensor<?xf32>
      %m = ls2.div %s, %c64 : tensor<?xf32>, tensor<f32>
    After:
      %m = ls2.fusion "row_reduction_0" row_reduction (%x)
          : (tensor<?x64xf32>) -> tensor<?xf32> { ... }
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "print each fusion group and each refusal with its reason">,
    Option<"rematerialize", "rematerialize", "bool", /*default=*/"true",
           "recompute cheap values in the backward instead of storing them "
           "from the forward: loops do not mix the passes, and widening "
           "casts read by both are duplicated">,
    Option<"geluGradEpilogue", "gelu-grad-epilogue", "bool", /*default=*/"false",
           "attach the tanh GELU's gradient to its dgrad GEMM as cuBLASLt's "
           "DGELU(_BGRAD); off by default: on an H200 it ran the FFN's dgrad "
           "at 170 TFLOP/s against 620 for the plain GEMM">,
    Option<"reluMaskFromOutput", "relu-mask-from-output", "bool", /*default=*/"true",
           "a ReLU whose output the backward reads anyway has its mask "
           "recomputed there from that output rather than stored: its GEMM "
           "takes RELU_BIAS, not RELU_AUX_BIAS, and its gradient is a "
           "generated kernel, not DRELU_BGRAD (on an H200 54 us against 16 "
           "for Transformer-base's plain dgrad)">,
    Option<"epilogues", "epilogues", "bool", /*default=*/"true",
           "attach groups that only finish a GEMM as its cuBLASLt epilogues; "
           "off, every such group stays a generated kernel (an epilogue skips "
           "rounding the product before the bias, so in fp16/bf16 the two "
           "differ in the last bits)">,
    Option<"checkpointActivations", "checkpoint-activations", "bool", /*default=*/"false",
           "activation checkpointing: recompute in the backward every value a "
           "transformer layer computes and the backward reads, GEMMs "
           "included, except the attention's results (out and lse) and the "
           "values a layer passes on; on by itself in a module marked "
           "ls2.activation_checkpointing (the description's field)">,
    Option<"recomputeAttention", "recompute-attention", "bool", /*default=*/"false",
           "with activation checkpointing, keep no attention results either: "
           "the backward runs each attention forward again; on by itself in a "
           "module marked ls2.recompute_attention (the description's field)">
  ];
  let dependentDialects = ["::ls2c::ls2::LS2Dialect"];
}

def MergeGemms : Pass<"ls2-merge-gemms", "::mlir::func::FuncOp"> {
  let summary = "One GEMM for projections whose weights are adjacent in the workspace";
  let description = [{
    The query, key and value projections of BERT, the fairseq Transformer
    and ViT-style models read one input with weights that are adjacent
    slots of the flat parameter workspace. Forward, their GEMMs become one
    over the joined weight (a view) and their bias adds one add, whose
    column slices q, k and v are (strided views for attention); backward,
    the dgrad GEMMs whose results are only summed become one over the
    concatenated gradients, the weight-gradient GEMMs one whose row slices
    are the weight gradients, and the bias gradients one column sum. A
    projection whose ops do not match exactly is left alone. Runs after
    ls2-decompose and CSE, before ls2-fuse.

    Before:
      %q = ls2.matmul %x, %wq {transpose_b} : ... -> tensor<?x768xf16>
      %k = ls2.matmul %x, %wk {transpose_b} : ... -> tensor<?x768xf16>
    After:
      %w = ls2.reshape (ls2.slice %copy {start = sq, limit = ek}) : -> tensor<1536x768xf16>
      %y = ls2.matmul %x, %w {transpose_b} : ... -> tensor<?x1536xf16>
      %q = ls2.slice %y {axis = 1, start = 0, limit = 768}
      %k = ls2.slice %y {axis = 1, start = 768, limit = 1536}
  }];
  let dependentDialects = ["::ls2c::ls2::LS2Dialect"];
}

def PlanBuffers : Pass<"ls2-plan-buffers", "::mlir::func::FuncOp"> {
  let summary = "Static arena offsets for every intermediate tensor";
  let description = [{
    Runs on a scheduled function (after ls2-fuse: program order is
    execution order). Each tensor a top-level op produces is a buffer of its
    largest size (ShapeBounds, from the inputs' ls2.max_shape), live from its
    op to its last reader, readers through views (reshape, contiguous slice)
    included; activations the backward reads stay live until then. Function
    arguments and returned values live outside the arena. A loop group's
    output may take the place of an input read element by element for the
    last time. Offsets (256-byte aligned) come from the arena planner, the
    smaller of greedy by size and greedy by duration
    (include/ls2c/Analysis/ArenaPlanner.h).

    A [T, N] GEMM result whose rows are not a multiple of 16 bytes gets
    padded rows when only GEMMs and row reductions touch it (PaddedRows.h;
    `ls2.row_strides`, one stride in elements per result, 0 for dense rows).

    Adds `ls2.offsets` to each op (one byte offset per result; -1 outside
    the arena) and `ls2.arena_bytes` and `ls2.arena_lower_bound_bytes` (the
    maximum over steps of the bytes live at once) to the function, and
    `ls2.arena_peak`, a dictionary of the peak `step`, the `steps` and
    `live`, an array of dictionaries (`name`, `type`, `scope`, `count`,
    `bytes`): what is live at the first step that reaches the lower bound,
    grouped by buffer name without the fusion group's number, by type at
    the shape bounds and by scope with layer numbers as `*`, largest first (`ls2c compile --stats` prints it). With
    `print`, lists every buffer: offset, size and live range in steps.
  }];
  let options = [
    Option<"print", "print", "bool", /*default=*/"false",
           "print the plan: each buffer's offset, size and live range">
  ];
  let dependentDialects = ["::ls2c::ls2::LS2Dialect"];
}

#endif // LS2C_TRANSFORMS_PASSES_TD
