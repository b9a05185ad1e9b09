// RUN: ls2c-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule and type constraint of the backward composites.

//===----------------------------------------------------------------------===//
// layer_norm_grad
//===----------------------------------------------------------------------===//

func.func @layer_norm_grad_dy_type(%dy: tensor<?x64xf32>, %x: tensor<?x64xf16>, %g: tensor<64xf16>, %s: tensor<?xf32>) {
  // expected-error @+1 {{'ls2.layer_norm_grad' op failed to verify that all of {dy, input, dx} have same type}}
  %dx, %dg, %db = "ls2.layer_norm_grad"(%dy, %x, %g, %s, %s) : (tensor<?x64xf32>, tensor<?x64xf16>, tensor<64xf16>, tensor<?xf32>, tensor<?xf32>) -> (tensor<?x64xf16>, tensor<64xf16>, tensor<64xf16>)
  return
}

// -----

func.func @layer_norm_grad_dynamic_last(%x: tensor<4x?xf32>, %g: tensor<64xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'ls2.layer_norm_grad' op input must have rank >= 1 and a static last dim, got 'tensor<4x?xf32>'}}
  %dx, %dg, %db = ls2.layer_norm_grad %x, %x, %g, %s, %s : tensor<4x?xf32>, tensor<64xf32>, tensor<4xf32>
  return
}

// -----

func.func @layer_norm_grad_gamma(%x: tensor<?x768xf16>, %g: tensor<64xf16>, %s: tensor<?xf32>) {
  // expected-error @+1 {{'ls2.layer_norm_grad' op gamma must be 'tensor<768xf16>', got 'tensor<64xf16>'}}
  %dx, %dg, %db = ls2.layer_norm_grad %x, %x, %g, %s, %s : tensor<?x768xf16>, tensor<64xf16>, tensor<?xf32>
  return
}

// -----

func.func @layer_norm_grad_stats_shape(%x: tensor<?x768xf32>, %g: tensor<768xf32>, %s: tensor<?x1xf32>) {
  // expected-error @+1 {{'ls2.layer_norm_grad' op mean and rstd must be f32 [?] (the input's leading dims), got 'tensor<?x1xf32>'}}
  %dx, %dg, %db = ls2.layer_norm_grad %x, %x, %g, %s, %s : tensor<?x768xf32>, tensor<768xf32>, tensor<?x1xf32>
  return
}

// -----

func.func @layer_norm_grad_stats_f16(%x: tensor<?x768xf16>, %g: tensor<768xf16>, %s: tensor<?xf16>) {
  // expected-error @+1 {{'ls2.layer_norm_grad' op operand #3 must be ranked tensor of 32-bit float values, but got 'tensor<?xf16>'}}
  %dx, %dg, %db = ls2.layer_norm_grad %x, %x, %g, %s, %s : tensor<?x768xf16>, tensor<768xf16>, tensor<?xf16>
  return
}

// -----

func.func @layer_norm_grad_dgamma_type(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %s: tensor<?xf32>) {
  // expected-error @+1 {{'ls2.layer_norm_grad' op failed to verify that all of {gamma, dgamma, dbeta} have same type}}
  %dx, %dg, %db = "ls2.layer_norm_grad"(%x, %x, %g, %s, %s) : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<64xf32>, tensor<?xf32>, tensor<?xf32>) -> (tensor<?x64xf32>, tensor<64xf16>, tensor<64xf32>)
  return
}

//===----------------------------------------------------------------------===//
// softmax_grad
//===----------------------------------------------------------------------===//

// -----

func.func @softmax_grad_scale(%y: tensor<?x16xf32>) {
  // expected-error @+1 {{'ls2.softmax_grad' op scale = 0.000000e+00 must be finite and non-zero}}
  %0 = ls2.softmax_grad %y, %y {scale = 0.0 : f32} : tensor<?x16xf32>
  return
}

// -----

func.func @softmax_grad_rank0(%y: tensor<f32>) {
  // expected-error @+1 {{'ls2.softmax_grad' op needs rank >= 1 (softmax runs over the last dim), got 'tensor<f32>'}}
  %0 = ls2.softmax_grad %y, %y : tensor<f32>
  return
}

// -----

func.func @softmax_grad_types(%dy: tensor<?x16xf32>, %y: tensor<?x16xf16>) {
  // expected-error @+1 {{'ls2.softmax_grad' op failed to verify that all of {dy, output, dx} have same type}}
  %0 = "ls2.softmax_grad"(%dy, %y) <{scale = 1.0 : f32}> : (tensor<?x16xf32>, tensor<?x16xf16>) -> tensor<?x16xf16>
  return
}

//===----------------------------------------------------------------------===//
// gelu_grad
//===----------------------------------------------------------------------===//

// -----

func.func @gelu_grad_types(%dy: tensor<?x16xf32>, %x: tensor<?x16xbf16>) {
  // expected-error @+1 {{'ls2.gelu_grad' op requires the same type for all operands and results}}
  %0 = "ls2.gelu_grad"(%dy, %x) : (tensor<?x16xf32>, tensor<?x16xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @gelu_grad_integer(%x: tensor<?x16xi32>) {
  // expected-error @+1 {{'ls2.gelu_grad' op operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<?x16xi32>'}}
  %0 = ls2.gelu_grad %x, %x : tensor<?x16xi32>
  return
}

//===----------------------------------------------------------------------===//
// cross_entropy_grad
//===----------------------------------------------------------------------===//

// -----

func.func @cross_entropy_grad_logits_rank(%dl: tensor<f32>, %x: tensor<?x4x100xf32>, %t: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.cross_entropy_grad' op logits must be [rows, classes] with static classes, got 'tensor<?x4x100xf32>'}}
  %0 = ls2.cross_entropy_grad %dl, %x, %t : tensor<f32>, tensor<?x4x100xf32>, tensor<?xi32>
  return
}

// -----

func.func @cross_entropy_grad_targets(%dl: tensor<f32>, %x: tensor<8x100xf32>, %t: tensor<4xi32>) {
  // expected-error @+1 {{'ls2.cross_entropy_grad' op targets must be [rows] = [8], got 'tensor<4xi32>'}}
  %0 = ls2.cross_entropy_grad %dl, %x, %t : tensor<f32>, tensor<8x100xf32>, tensor<4xi32>
  return
}

// -----

func.func @cross_entropy_grad_label_smoothing(%dl: tensor<f32>, %x: tensor<?x100xf32>, %t: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.cross_entropy_grad' op label_smoothing = 1.000000e+00 must be in [0, 1)}}
  %0 = ls2.cross_entropy_grad %dl, %x, %t {label_smoothing = 1.0 : f32} : tensor<f32>, tensor<?x100xf32>, tensor<?xi32>
  return
}

// -----

func.func @cross_entropy_grad_none_dloss(%dl: tensor<f32>, %x: tensor<?x100xf32>, %t: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.cross_entropy_grad' op reduction none gives one loss per row: dloss must be [?], got 'tensor<f32>'}}
  %0 = ls2.cross_entropy_grad %dl, %x, %t {reduction = #ls2<loss_reduction none>} : tensor<f32>, tensor<?x100xf32>, tensor<?xi32>
  return
}

// -----

func.func @cross_entropy_grad_mean_dloss(%dl: tensor<?xf32>, %x: tensor<?x100xf32>, %t: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.cross_entropy_grad' op a reduced loss is rank 0: dloss must be rank 0, got 'tensor<?xf32>'}}
  %0 = ls2.cross_entropy_grad %dl, %x, %t : tensor<?xf32>, tensor<?x100xf32>, tensor<?xi32>
  return
}

// -----

func.func @cross_entropy_grad_dloss_f16(%dl: tensor<f16>, %x: tensor<?x100xf16>, %t: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.cross_entropy_grad' op operand #0 must be ranked tensor of 32-bit float values, but got 'tensor<f16>'}}
  %0 = ls2.cross_entropy_grad %dl, %x, %t : tensor<f16>, tensor<?x100xf16>, tensor<?xi32>
  return
}

// -----

func.func @cross_entropy_grad_result(%dl: tensor<f32>, %x: tensor<?x100xbf16>, %t: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.cross_entropy_grad' op failed to verify that all of {logits, dlogits} have same type}}
  %0 = "ls2.cross_entropy_grad"(%dl, %x, %t) : (tensor<f32>, tensor<?x100xbf16>, tensor<?xi32>) -> tensor<?x100xf32>
  return
}

//===----------------------------------------------------------------------===//
// attention_grad
//===----------------------------------------------------------------------===//

// -----

func.func @attention_grad_kv_heads(%q: tensor<?x12x64xf16>, %k: tensor<?x5x64xf16>, %lse: tensor<?x12xf32>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention_grad' op kv heads (5) must divide query heads (12)}}
  %dq, %dk, %dv = ls2.attention_grad %q, %q, %k, %k, %q, %lse, %cu, %cu : tensor<?x12x64xf16>, tensor<?x5x64xf16>, tensor<?x12xf32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @attention_grad_lse(%q: tensor<?x12x64xf16>, %lse: tensor<?x8xf32>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention_grad' op lse must be [tokens, heads] = [?, 12], got [?, 8]}}
  %dq, %dk, %dv = ls2.attention_grad %q, %q, %q, %q, %q, %lse, %cu, %cu : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @attention_grad_dropout_operands(%q: tensor<?x12x64xf16>, %lse: tensor<?x12xf32>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention_grad' op dropout_rate > 0 needs dropout(seed, offset) operands}}
  %dq, %dk, %dv = ls2.attention_grad %q, %q, %q, %q, %q, %lse, %cu, %cu {dropout_rate = 0.1 : f32} : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12xf32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @attention_grad_rank(%q: tensor<?x768xf16>, %k: tensor<?x12x64xf16>, %lse: tensor<?x12xf32>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention_grad' op query must be [tokens, heads, head_dim], got 'tensor<?x768xf16>'}}
  %dq, %dk, %dv = ls2.attention_grad %q, %q, %k, %k, %q, %lse, %cu, %cu : tensor<?x768xf16>, tensor<?x12x64xf16>, tensor<?x12xf32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @attention_grad_scale(%q: tensor<?x12x64xf16>, %lse: tensor<?x12xf32>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention_grad' op scale = -1.000000e+00 must be positive and finite}}
  %dq, %dk, %dv = ls2.attention_grad %q, %q, %q, %q, %q, %lse, %cu, %cu {scale = -1.0 : f32} : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12xf32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @attention_grad_out_type(%q: tensor<?x12x64xf16>, %o: tensor<?x12x64xf32>, %lse: tensor<?x12xf32>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention_grad' op failed to verify that all of {dout, query, out, dq} have same type}}
  %dq, %dk, %dv = "ls2.attention_grad"(%q, %q, %q, %q, %o, %lse, %cu, %cu) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 0, 0>}> : (tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf32>, tensor<?x12xf32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>)
  return
}

// -----

func.func @attention_grad_kv_types(%q: tensor<?x12x64xf16>, %v: tensor<?x4x64xf16>, %lse: tensor<?x12xf32>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention_grad' op failed to verify that all of {key, value, dk, dv} have same type}}
  %dq, %dk, %dv = "ls2.attention_grad"(%q, %q, %q, %v, %q, %lse, %cu, %cu) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 0, 0>}> : (tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x4x64xf16>, tensor<?x12x64xf16>, tensor<?x12xf32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x4x64xf16>)
  return
}
