// RUN: ls2c-opt %s --ls2-decompose -split-input-file -verify-diagnostics

// Composites that ls2-decompose refuses say why instead of staying silently.

// A softmax mask dim that is dynamic where the input's is static (or the
// reverse) used to be refused here; the verifier rejects it now
// (test/Dialect/ls2/robustness.mlir).

// Causal query and key positions are i32.
func.func @softmax_causal_positions(%x: tensor<1x2147483649xf32>) -> tensor<1x2147483649xf32> {
  // expected-error @+1 {{'ls2.softmax' op cannot be decomposed: causal positions are i32: the last two dims must be at most 2^31, got 2147483649}}
  %0 = ls2.softmax %x {causal} : tensor<1x2147483649xf32> -> tensor<1x2147483649xf32>
  return %0 : tensor<1x2147483649xf32>
}

// -----

// Class indices are an iota of the targets' element type.
func.func @cross_entropy_classes(%l: tensor<?x2147483649xf32>, %t: tensor<?xi32>) -> tensor<f32> {
  // expected-error @+1 {{'ls2.cross_entropy' op cannot be decomposed: class indices are i32 like the targets: 2147483649 classes need i64 targets}}
  %0 = ls2.cross_entropy %l, %t : tensor<?x2147483649xf32>, tensor<?xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_rows(%l: tensor<?x10xf32>, %t: tensor<8xi32>) -> tensor<f32> {
  // expected-error @+1 {{'ls2.cross_entropy' op cannot be decomposed: logits rows and targets rows must be both static or both dynamic}}
  %0 = ls2.cross_entropy %l, %t : tensor<?x10xf32>, tensor<8xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_grad_rows(%dl: tensor<f32>, %l: tensor<?x10xf32>, %t: tensor<8xi32>) -> tensor<?x10xf32> {
  // expected-error @+1 {{'ls2.cross_entropy_grad' op cannot be decomposed: logits rows and targets rows must be both static or both dynamic}}
  %0 = ls2.cross_entropy_grad %dl, %l, %t : tensor<f32>, tensor<?x10xf32>, tensor<8xi32>
  return %0 : tensor<?x10xf32>
}
