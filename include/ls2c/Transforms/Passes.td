//===- Passes.td - ls2c transformation passes ---------------*- tablegen -*-===//
#ifndef LS2C_TRANSFORMS_PASSES_TD
#define LS2C_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def Decompose : Pass<"ls2-decompose"> {
  let summary = "Lower composite ls2 ops into ls2 primitives";
  let description = [{
    Rewrites layer_norm, softmax, gelu, dropout, cross_entropy and adamw into
    elementwise ops, broadcasts, reductions, random_uniform and casts, for
    passes that work on primitives (fusion rediscovers the composites'
    kernels from them). Low-precision inputs are cast to f32 first and the
    results cast back, so the decomposed program keeps the composites'
    numerics. `ls2.attention` stays: it is opaque (a fused kernel or cuDNN).

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

#endif // LS2C_TRANSFORMS_PASSES_TD
