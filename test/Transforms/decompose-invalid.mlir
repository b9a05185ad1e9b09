// RUN: ls2c-opt %s --ls2-decompose -split-input-file -verify-diagnostics

// Composites that ls2-decompose refuses say why instead of staying silently.

// ls2.broadcast takes a mask dim only when it is 1 or equals the input's;
// a dynamic mask dim against a static input dim may be either at run time.
func.func @softmax_dynamic_mask_dim(%x: tensor<?x12xf32>, %m: tensor<?x?xf32>) -> tensor<?x12xf32> {
  // expected-error @+1 {{'ls2.softmax' op cannot be decomposed: mask dim 1 is dynamic where the input's is static (12); give the mask that dim statically}}
  %0 = ls2.softmax %x mask %m : tensor<?x?xf32> : tensor<?x12xf32> -> tensor<?x12xf32>
  return %0 : tensor<?x12xf32>
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
