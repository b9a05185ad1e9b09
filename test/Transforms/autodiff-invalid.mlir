// RUN: ls2c-opt %s -split-input-file --ls2-autodiff -verify-diagnostics

// ls2-autodiff refuses with the op, its location and the rule; the module is
// left without @forward_backward.

// expected-error @+1 {{ls2-autodiff: the module has no func.func @forward to differentiate}}
module {
  func.func @loss(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{'func.func' op must return one scalar loss, tensor<f32>, for ls2-autodiff; got '(tensor<4xf32>) -> tensor<4xf32>'}}
  func.func @forward(%x: tensor<4xf32> {ls2.kind = "parameter", ls2.name = "x"}) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{ls2-autodiff: the module already has @forward_backward}}
module {
  func.func @forward(%x: tensor<f32> {ls2.kind = "parameter", ls2.name = "x"}) -> tensor<f32> {
    return %x : tensor<f32>
  }
  func.func @forward_backward(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
}

// -----

module {
  // expected-error @+1 {{'func.func' op parameter #0 has type 'tensor<?xi32>'; parameters must be f32, f16 or bf16 tensors}}
  func.func @forward(%ids: tensor<?xi32> {ls2.kind = "parameter", ls2.name = "ids"}) -> tensor<f32> {
    %c = ls2.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// An op without a vector-Jacobian product on the path from a parameter to
// the loss.
module {
  func.func @forward(%p: tensor<16xf32> {ls2.kind = "parameter", ls2.name = "p"}, %g: tensor<16xf32> {ls2.kind = "input", ls2.name = "g"}, %m: tensor<16xf32> {ls2.kind = "input", ls2.name = "m"}, %v: tensor<16xf32> {ls2.kind = "input", ls2.name = "v"}, %step: tensor<i64> {ls2.kind = "input", ls2.name = "step"}, %lr: tensor<f32> {ls2.kind = "input", ls2.name = "lr"}) -> tensor<f32> {
    // expected-error @+1 {{'ls2.adamw' op cannot be differentiated by ls2-autodiff: it has no vector-Jacobian product (DifferentiableOpInterface) and lies on the path from a parameter to the loss}}
    %np, %nm, %nv = ls2.adamw %p, %g, %m, %v, %step, %lr, %lr {beta1 = 0.9 : f32, beta2 = 0.999 : f32, epsilon = 1.0e-8 : f32, weight_decay = 0.0 : f32} : tensor<16xf32>, tensor<16xf32>
    %l = ls2.reduce_sum %np [0] : tensor<16xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

module {
  func.func private @opaque(tensor<4xf32>) -> tensor<f32>
  func.func @forward(%x: tensor<4xf32> {ls2.kind = "parameter", ls2.name = "x"}) -> tensor<f32> {
    // expected-error @+1 {{'func.call' op cannot be differentiated by ls2-autodiff: it has no vector-Jacobian product (DifferentiableOpInterface) and lies on the path from a parameter to the loss}}
    %l = func.call @opaque(%x) : (tensor<4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// The lse result of attention has no gradient rule.
module {
  func.func @forward(%q: tensor<?x4x16xf32> {ls2.kind = "parameter", ls2.name = "q"}, %cu: tensor<?xi32> {ls2.kind = "input", ls2.name = "cu_seqlens"}) -> tensor<f32> {
    // expected-error @+1 {{'ls2.attention' op cannot be differentiated through its lse result: only the output's gradient is supported}}
    %o, %lse = ls2.attention %q, %q, %q, %cu, %cu : tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4x16xf32>, tensor<?x4xf32>
    %l = ls2.reduce_sum %lse [0, 1] : tensor<?x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Attention over a KV cache (key_lengths) serves decoding only: no gradient.
module {
  func.func @forward(%q: tensor<?x4x16xf32> {ls2.kind = "parameter", ls2.name = "q"}, %cu: tensor<?xi32> {ls2.kind = "input", ls2.name = "cu_seqlens"}, %n: tensor<?xi32> {ls2.kind = "input", ls2.name = "cache_lengths"}) -> tensor<f32> {
    // expected-error @+1 {{'ls2.attention' op with key_lengths (a KV cache's keys) has no gradient: it serves incremental decoding only}}
    %o, %lse = ls2.attention %q, %q, %q, %cu, %cu key_lengths(%n : tensor<?xi32>) : tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4x16xf32>, tensor<?x4xf32>
    %l = ls2.reduce_sum %o [0, 1, 2] : tensor<?x4x16xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// concat's gradient slices it: each input needs a static size on the axis.
module {
  func.func @forward(%x: tensor<?x8xf32> {ls2.kind = "parameter", ls2.name = "x"}, %y: tensor<2x8xf32> {ls2.kind = "parameter", ls2.name = "y"}) -> tensor<f32> {
    // expected-error @+1 {{'ls2.concat' op cannot slice the gradient of input 0: its size along axis 0 is dynamic}}
    %0 = ls2.concat %x, %y {axis = 0 : i64} : (tensor<?x8xf32>, tensor<2x8xf32>) -> tensor<?x8xf32>
    %l = ls2.reduce_sum %0 [0, 1] : tensor<?x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A reshape result has at most one dynamic dim, so a gradient cannot be
// reshaped back to two.
module {
  func.func @forward(%x: tensor<?x?x8xf32> {ls2.kind = "parameter", ls2.name = "x"}) -> tensor<f32> {
    // expected-error @+1 {{'ls2.reshape' op cannot reshape the gradient back to 'tensor<?x?x8xf32>': a reshape result has at most one dynamic dim}}
    %0 = ls2.reshape %x : tensor<?x?x8xf32> -> tensor<?x8xf32>
    %l = ls2.reduce_sum %0 [0, 1] : tensor<?x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
