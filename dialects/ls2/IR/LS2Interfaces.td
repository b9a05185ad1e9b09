//===- LS2Interfaces.td - ls2 op interfaces -----------------*- tablegen -*-===//
//
// DifferentiableOpInterface: the vector-Jacobian product of an op, which
// `ls2-autodiff` uses to build the backward pass.
//
//===----------------------------------------------------------------------===//

#ifndef LS2_INTERFACES_TD
#define LS2_INTERFACES_TD

include "mlir/IR/OpBase.td"

def LS2_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::ls2c::ls2";
  let description = [{
    An op whose float results can be differentiated with respect to its
    float operands. `buildVJP` emits, at the builder's insertion point, the
    ops computing the vector-Jacobian product: given the gradient of a
    scalar loss with respect to each result, the gradient with respect to
    each operand.

    Rules every implementation follows (`ls2-autodiff` relies on them):
      * `resultGrads` has one entry per result, typed like that result, or
        null when no gradient reaches it (it is then zero).
      * `operandGrads` receives exactly one entry per operand, typed like
        that operand, or null when the operand is not differentiable (ids,
        targets, seeds, offsets, cu_seqlens, `index` sizes, i1 predicates,
        integer values) or gets a zero gradient.
      * The ops built read forward values only through the op's operands
        and results; they never re-run the op's forward computation
        (composites use their backward composites, e.g. `ls2.attention`
        -> `ls2.attention_grad`).
      * Formulas are exact (no approximations). Chains of several
        elementwise ops on f16/bf16 values compute in f32 and round once.
      * On failure the implementation emits an error on the op saying why.

    Ops that are not differentiable (compare, iota, dim, constant,
    random_uniform, adamw) do not implement the interface; `ls2-autodiff`
    treats the values they produce as constants.
  }];
  let methods = [
    InterfaceMethod<[{
        Emits the vector-Jacobian product at `b`'s insertion point: one
        gradient per operand into `operandGrads` (null where none) from the
        result gradients `resultGrads` (null where none reaches a result).
      }],
      "::mlir::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$b,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // LS2_INTERFACES_TD
