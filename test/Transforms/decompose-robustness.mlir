// RUN: ls2c-opt %s --allow-unregistered-dialect --ls2-decompose --canonicalize --cse \
// RUN:   | ls2c-opt --allow-unregistered-dialect | FileCheck %s

// Tricky but valid IR through ls2-decompose, canonicalize and cse: zero-sized
// dims, rank-0 values, all-dynamic shapes and edge attributes. Each pass
// verifies its output and the result is parsed again, so a decomposition
// that builds invalid IR (or aborts on a failed create<>) fails this test.

// CHECK-LABEL: func.func @gelu_edges
// CHECK-NOT: ls2.gelu
func.func @gelu_edges(%a: tensor<f32>, %b: tensor<0x4xf16>, %c: tensor<?x?xbf16>)
    -> (tensor<f32>, tensor<0x4xf16>, tensor<?x?xbf16>) {
  %0 = ls2.gelu %a : tensor<f32>
  %1 = ls2.gelu %b {approximate = #ls2<gelu_approximation tanh>} : tensor<0x4xf16>
  %2 = ls2.gelu %c : tensor<?x?xbf16>
  return %0, %1, %2 : tensor<f32>, tensor<0x4xf16>, tensor<?x?xbf16>
}

// CHECK-LABEL: func.func @layer_norm_edges
// CHECK-NOT: ls2.layer_norm
func.func @layer_norm_edges(%a: tensor<8xf32>, %ga: tensor<8xf32>,
                            %b: tensor<0x8xf16>, %gb: tensor<8xf16>,
                            %c: tensor<?x?x4xbf16>, %gc: tensor<4xbf16>,
                            %d: tensor<?x0xf32>, %gd: tensor<0xf32>) {
  %0:3 = ls2.layer_norm %a, %ga, %ga {epsilon = 1.0e-5 : f32} : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  %1:3 = ls2.layer_norm %b, %gb, %gb {epsilon = 1.0e-5 : f32} : tensor<0x8xf16>, tensor<8xf16>, tensor<8xf16>
  %2:3 = ls2.layer_norm %c, %gc, %gc {epsilon = 1.0e-5 : f32} : tensor<?x?x4xbf16>, tensor<4xbf16>, tensor<4xbf16>
  %3:3 = ls2.layer_norm %d, %gd, %gd {epsilon = 1.0e-5 : f32} : tensor<?x0xf32>, tensor<0xf32>, tensor<0xf32>
  "test.use"(%0#0, %0#1, %0#2, %1#0, %1#1, %2#0, %2#2, %3#0, %3#1) : (tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<0x8xf16>, tensor<0xf32>, tensor<?x?x4xbf16>, tensor<?x?xf32>, tensor<?x0xf32>, tensor<?xf32>) -> ()
  return
}

// CHECK-LABEL: func.func @softmax_edges
// CHECK-NOT: ls2.softmax
func.func @softmax_edges(%a: tensor<1xf32>, %b: tensor<0xf32>, %c: tensor<?xf16>,
                         %d: tensor<?x?xf32>, %e: tensor<0x5xf32>, %f: tensor<5x0xbf16>,
                         %g: tensor<?x?x?x?xbf16>, %gm: tensor<?x1x1x?xi1>,
                         %h: tensor<?x?xf32>, %hm: tensor<1x1xf16>,
                         %i: tensor<?x3xf32>, %im: tensor<?x3xf32>) {
  %0 = ls2.softmax %a : tensor<1xf32> -> tensor<1xf32>
  %1 = ls2.softmax %b {scale = -2.0 : f32} : tensor<0xf32> -> tensor<0xf32>
  %2 = ls2.softmax %c : tensor<?xf16> -> tensor<?xbf16>
  %3 = ls2.softmax %d {causal} : tensor<?x?xf32> -> tensor<?x?xf32>
  %4 = ls2.softmax %e {causal} : tensor<0x5xf32> -> tensor<0x5xf32>
  %5 = ls2.softmax %f {causal} : tensor<5x0xbf16> -> tensor<5x0xbf16>
  %6 = ls2.softmax %g mask %gm : tensor<?x1x1x?xi1> {causal, scale = 0.125 : f32} : tensor<?x?x?x?xbf16> -> tensor<?x?x?x?xbf16>
  %7 = ls2.softmax %h mask %hm : tensor<1x1xf16> : tensor<?x?xf32> -> tensor<?x?xf32>
  %8 = ls2.softmax %i mask %im : tensor<?x3xf32> {causal} : tensor<?x3xf32> -> tensor<?x3xf32>
  "test.use"(%0, %1, %2, %3, %4, %5, %6, %7, %8) : (tensor<1xf32>, tensor<0xf32>, tensor<?xbf16>, tensor<?x?xf32>, tensor<0x5xf32>, tensor<5x0xbf16>, tensor<?x?x?x?xbf16>, tensor<?x?xf32>, tensor<?x3xf32>) -> ()
  return
}

// CHECK-LABEL: func.func @dropout_edges
// CHECK-NOT: ls2.dropout
func.func @dropout_edges(%a: tensor<f32>, %b: tensor<0x3xf16>, %c: tensor<?x?xbf16>,
                         %seed: tensor<i64>, %offset: tensor<i64>)
    -> (tensor<f32>, tensor<0x3xf16>, tensor<?x?xbf16>) {
  %0 = ls2.dropout %a, %seed, %offset {rate = 0.5 : f32, stream = 0 : i64} : tensor<f32>
  %1 = ls2.dropout %b, %seed, %offset {rate = 0.0 : f32, stream = 1 : i64} : tensor<0x3xf16>
  %2 = ls2.dropout %c, %seed, %offset {rate = 0.999 : f32, stream = 2 : i64} : tensor<?x?xbf16>
  return %0, %1, %2 : tensor<f32>, tensor<0x3xf16>, tensor<?x?xbf16>
}

// CHECK-LABEL: func.func @cross_entropy_edges
// CHECK-NOT: ls2.cross_entropy
func.func @cross_entropy_edges(%a: tensor<0x10xf32>, %ta: tensor<0xi32>,
                               %b: tensor<?x1xf16>, %tb: tensor<?xi64>,
                               %c: tensor<4x3xbf16>, %tc: tensor<4xi32>) {
  %0 = ls2.cross_entropy %a, %ta : tensor<0x10xf32>, tensor<0xi32> -> tensor<f32>
  %1 = ls2.cross_entropy %b, %tb {label_smoothing = 0.5 : f32, reduction = #ls2<loss_reduction sum>} : tensor<?x1xf16>, tensor<?xi64> -> tensor<f32>
  // An ignore_index that i32 targets cannot hold: no row is ignored.
  %2 = ls2.cross_entropy %c, %tc {ignore_index = 1099511627776 : i64, reduction = #ls2<loss_reduction none>} : tensor<4x3xbf16>, tensor<4xi32> -> tensor<4xf32>
  "test.use"(%0, %1, %2) : (tensor<f32>, tensor<f32>, tensor<4xf32>) -> ()
  return
}

// CHECK-LABEL: func.func @adamw_edges
// CHECK-NOT: ls2.adamw
func.func @adamw_edges(%p: tensor<0xf32>, %g: tensor<0xbf16>, %q: tensor<?xf32>,
                       %h: tensor<?xf16>, %step: tensor<i64>, %lr: tensor<f32>,
                       %gs: tensor<f32>) {
  %0:3 = ls2.adamw %p, %g, %p, %p, %step, %lr, %gs {beta1 = 0.0 : f32, beta2 = 0.0 : f32, epsilon = 1.0e-8 : f32, weight_decay = 0.0 : f32} : tensor<0xf32>, tensor<0xbf16>
  %1:3 = ls2.adamw %q, %h, %q, %q, %step, %lr, %gs {beta1 = 0.9 : f32, beta2 = 0.999 : f32, epsilon = 1.0e-8 : f32, mode = #ls2<weight_decay_mode l2>, weight_decay = 0.1 : f32} : tensor<?xf32>, tensor<?xf16>
  "test.use"(%0#0, %0#1, %0#2, %1#0, %1#1, %1#2) : (tensor<0xf32>, tensor<0xf32>, tensor<0xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) -> ()
  return
}

// CHECK-LABEL: func.func @grad_edges
// CHECK-NOT: ls2.gelu_grad
// CHECK-NOT: ls2.layer_norm_grad
// CHECK-NOT: ls2.softmax_grad
// CHECK-NOT: ls2.cross_entropy_grad
func.func @grad_edges(%a: tensor<f32>, %x: tensor<4xf16>, %gx: tensor<4xf16>,
                      %m: tensor<f32>, %z: tensor<0x4xf32>, %gz: tensor<4xf32>,
                      %mz: tensor<0xf32>, %s: tensor<0xf32>, %d: tensor<?x?xbf16>,
                      %dl: tensor<?xf32>, %l: tensor<?x4xf32>, %t: tensor<?xi32>,
                      %dm: tensor<f32>, %l0: tensor<0x4xf16>, %t0: tensor<0xi64>) {
  %0 = ls2.gelu_grad %a, %a {approximate = #ls2<gelu_approximation tanh>} : tensor<f32>
  %1:3 = ls2.layer_norm_grad %x, %x, %gx, %m, %m : tensor<4xf16>, tensor<4xf16>, tensor<f32>
  %2:3 = ls2.layer_norm_grad %z, %z, %gz, %mz, %mz : tensor<0x4xf32>, tensor<4xf32>, tensor<0xf32>
  %3 = ls2.softmax_grad %s, %s {scale = 3.0 : f32} : tensor<0xf32>
  %4 = ls2.softmax_grad %d, %d : tensor<?x?xbf16>
  %5 = ls2.cross_entropy_grad %dl, %l, %t {reduction = #ls2<loss_reduction none>} : tensor<?xf32>, tensor<?x4xf32>, tensor<?xi32>
  %6 = ls2.cross_entropy_grad %dm, %l0, %t0 {label_smoothing = 0.1 : f32} : tensor<f32>, tensor<0x4xf16>, tensor<0xi64>
  "test.use"(%0, %1#0, %1#1, %1#2, %2#0, %2#1, %3, %4, %5, %6) : (tensor<f32>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<0x4xf32>, tensor<4xf32>, tensor<0xf32>, tensor<?x?xbf16>, tensor<?x4xf32>, tensor<0x4xf16>) -> ()
  return
}

// Reshape chains: the folder skips a middle reshape only when the combined
// one verifies. ?x2 -> ?x6 -> ?x3 keeps both (?x2 -> ?x3 is invalid);
// ?x4 -> ?x2x2 -> ?x4 folds away; 0x4 -> 2x0 -> 0 folds to one reshape.
// CHECK-LABEL: func.func @reshape_chains
// CHECK: ls2.reshape %{{.*}} : tensor<?x2xf32> -> tensor<?x6xf32>
// CHECK: ls2.reshape %{{.*}} : tensor<?x6xf32> -> tensor<?x3xf32>
// CHECK: ls2.reshape %{{.*}} : tensor<0x4xi32> -> tensor<0xi32>
// CHECK-NOT: ls2.reshape
// CHECK: return %{{.*}}, %arg1, %{{.*}} :
func.func @reshape_chains(%a: tensor<?x2xf32>, %b: tensor<?x4xf16>, %c: tensor<0x4xi32>)
    -> (tensor<?x3xf32>, tensor<?x4xf16>, tensor<0xi32>) {
  %0 = ls2.reshape %a : tensor<?x2xf32> -> tensor<?x6xf32>
  %1 = ls2.reshape %0 : tensor<?x6xf32> -> tensor<?x3xf32>
  %2 = ls2.reshape %b : tensor<?x4xf16> -> tensor<?x2x2xf16>
  %3 = ls2.reshape %2 : tensor<?x2x2xf16> -> tensor<?x4xf16>
  %4 = ls2.reshape %c : tensor<0x4xi32> -> tensor<2x0xi32>
  %5 = ls2.reshape %4 : tensor<2x0xi32> -> tensor<0xi32>
  return %1, %3, %5 : tensor<?x3xf32>, tensor<?x4xf16>, tensor<0xi32>
}

// Primitives on empty, rank-0 and dynamic shapes; attention stays opaque.
// CHECK-LABEL: func.func @primitive_edges
// CHECK: ls2.attention
func.func @primitive_edges(%a: tensor<f32>, %b: tensor<0x3xf32>, %c: tensor<?x?xi64>,
                           %q: tensor<?x1x1xf16>, %cu: tensor<?xi32>, %cu1: tensor<1xi32>) {
  %0 = ls2.transpose %a [] : tensor<f32> -> tensor<f32>
  %1 = ls2.transpose %b [1, 0] : tensor<0x3xf32> -> tensor<3x0xf32>
  %2 = ls2.concat %b, %b {axis = 0} : (tensor<0x3xf32>, tensor<0x3xf32>) -> tensor<0x3xf32>
  %3 = ls2.concat %c, %c {axis = 1} : (tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<?x?xi64>
  %4 = ls2.slice %b {axis = 1, start = 2, limit = 3} : tensor<0x3xf32> -> tensor<0x1xf32>
  %5 = ls2.reduce_sum %b [0, 1] : tensor<0x3xf32> -> tensor<f32>
  %6 = ls2.reduce_max %c [1] {keep_dims} : tensor<?x?xi64> -> tensor<?x1xi64>
  %7 = ls2.add %a, %b : tensor<f32>, tensor<0x3xf32>
  %8 = ls2.compare ge, %c, %c : tensor<?x?xi64>
  %9 = ls2.select %8, %c, %c : tensor<?x?xi1>, tensor<?x?xi64>, tensor<?x?xi64>
  %10 = ls2.broadcast %a [] {dims = array<i64>} : tensor<f32> -> tensor<0x3xf32>
  %o, %lse = ls2.attention %q, %q, %q, %cu, %cu1 : tensor<?x1x1xf16>, tensor<?x1x1xf16>, tensor<?x1x1xf16>, tensor<?xi32>, tensor<1xi32> -> tensor<?x1x1xf16>, tensor<?x1xf32>
  "test.use"(%0, %1, %2, %3, %4, %5, %6, %7, %9, %10, %o, %lse) : (tensor<f32>, tensor<3x0xf32>, tensor<0x3xf32>, tensor<?x?xi64>, tensor<0x1xf32>, tensor<f32>, tensor<?x1xi64>, tensor<0x3xf32>, tensor<?x?xi64>, tensor<0x3xf32>, tensor<?x1x1xf16>, tensor<?x1xf32>) -> ()
  return
}
