// RUN: ls2c-opt %s -split-input-file --ls2-autodiff | FileCheck %s
// RUN: ls2c-opt %s -split-input-file --ls2-autodiff | ls2c-opt -split-input-file | FileCheck %s --check-prefix=VERIFIES

// ls2-autodiff adds @forward_backward(args) -> (loss, one gradient per
// parameter): the forward ops cloned (ops whose results the backward reads
// marked ls2.saved), then each op's vector-Jacobian product in reverse
// program order. One module per op family.

// The output parses and verifies again.
// VERIFIES-COUNT-19: func.func @forward_backward(

// Binary ops with a rank-0 operand: the scalar's gradient is the sum of its
// elementwise gradient over all axes, and a value used three times (%s)
// gets its contributions added in the order of its uses (mul, div, add).
// @forward is left as it is.
// CHECK-LABEL: module @elementwise_scalar
// CHECK: func.func @forward(
// CHECK-NOT: ls2.saved
// CHECK: func.func @forward_backward(%[[W:[^:]+]]: tensor<4x8xf32> {ls2.kind = "parameter", ls2.name = "w"}, %[[S:[^:]+]]: tensor<f32> {ls2.kind = "parameter", ls2.name = "s"}, %[[X:[^:]+]]: tensor<4x8xf32> {ls2.kind = "input", ls2.name = "x"}, %[[DL:[^:]+]]: tensor<f32> {ls2.kind = "input", ls2.name = "loss_grad"})
// CHECK-SAME: -> (tensor<f32> {ls2.kind = "loss"}, tensor<4x8xf32> {ls2.kind = "gradient", ls2.name = "w"}, tensor<f32> {ls2.kind = "gradient", ls2.name = "s"})
// CHECK: %[[MUL:[^ ]+]] = ls2.mul %[[W]], %[[S]] : tensor<4x8xf32>, tensor<f32>
// CHECK-NEXT: %[[SUB:[^ ]+]] = ls2.sub %[[MUL]], %[[X]] : tensor<4x8xf32>
// CHECK-NEXT: %[[DIV:[^ ]+]] = ls2.div %[[SUB]], %[[S]] {ls2.saved} : tensor<4x8xf32>, tensor<f32>
// CHECK-NEXT: %[[ADD:[^ ]+]] = ls2.add %[[S]], %[[DIV]] : tensor<f32>, tensor<4x8xf32>
// CHECK-NEXT: %[[LOSS:[^ ]+]] = ls2.reduce_sum %[[ADD]] [0, 1] : tensor<4x8xf32> -> tensor<f32>
// CHECK-NEXT: %[[DADD:[^ ]+]] = ls2.broadcast %[[DL]][] {dims = array<i64>} : tensor<f32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[DS_ADD:[^ ]+]] = ls2.reduce_sum %[[DADD]] [0, 1] : tensor<4x8xf32> -> tensor<f32>
// CHECK-NEXT: %[[DSUB:[^ ]+]] = ls2.div %[[DADD]], %[[S]] : tensor<4x8xf32>, tensor<f32>
// CHECK-NEXT: %[[Q:[^ ]+]] = ls2.div %[[DADD]], %[[S]] : tensor<4x8xf32>, tensor<f32>
// CHECK-NEXT: %[[QZ:[^ ]+]] = ls2.mul %[[Q]], %[[DIV]] : tensor<4x8xf32>
// CHECK-NEXT: %[[NEG:[^ ]+]] = ls2.neg %[[QZ]] : tensor<4x8xf32>
// CHECK-NEXT: %[[DS_DIV:[^ ]+]] = ls2.reduce_sum %[[NEG]] [0, 1] : tensor<4x8xf32> -> tensor<f32>
// CHECK-NEXT: %[[DW:[^ ]+]] = ls2.mul %[[DSUB]], %[[S]] : tensor<4x8xf32>, tensor<f32>
// CHECK-NEXT: %[[SW:[^ ]+]] = ls2.mul %[[DSUB]], %[[W]] : tensor<4x8xf32>
// CHECK-NEXT: %[[DS_MUL:[^ ]+]] = ls2.reduce_sum %[[SW]] [0, 1] : tensor<4x8xf32> -> tensor<f32>
// CHECK-NEXT: %[[ACC:[^ ]+]] = ls2.add %[[DS_MUL]], %[[DS_DIV]] : tensor<f32>
// CHECK-NEXT: %[[DS:[^ ]+]] = ls2.add %[[ACC]], %[[DS_ADD]] : tensor<f32>
// CHECK-NEXT: return %[[LOSS]], %[[DW]], %[[DS]] : tensor<f32>, tensor<4x8xf32>, tensor<f32>
module @elementwise_scalar {
  func.func @forward(%w: tensor<4x8xf32> {ls2.kind = "parameter", ls2.name = "w"}, %s: tensor<f32> {ls2.kind = "parameter", ls2.name = "s"}, %x: tensor<4x8xf32> {ls2.kind = "input", ls2.name = "x"}) -> tensor<f32> {
    %0 = ls2.mul %w, %s : tensor<4x8xf32>, tensor<f32>
    %1 = ls2.sub %0, %x : tensor<4x8xf32>
    %2 = ls2.div %1, %s : tensor<4x8xf32>, tensor<f32>
    %3 = ls2.add %s, %2 : tensor<f32>, tensor<4x8xf32>
    %l = ls2.reduce_sum %3 [0, 1] : tensor<4x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Each unary op's rule, innermost last: exp and tanh, sqrt and rsqrt read
// their results, log and erf their inputs.
// CHECK-LABEL: module @unary
// CHECK: func.func @forward_backward(%[[W:[^:]+]]: tensor<8xf32>
// CHECK-NEXT: %[[NEG:[^ ]+]] = ls2.neg %[[W]] : tensor<8xf32>
// CHECK-NEXT: %[[EXP:[^ ]+]] = ls2.exp %[[NEG]] {ls2.saved} : tensor<8xf32>
// CHECK-NEXT: %[[LOG:[^ ]+]] = ls2.log %[[EXP]] : tensor<8xf32>
// CHECK-NEXT: %[[SQRT:[^ ]+]] = ls2.sqrt %[[LOG]] {ls2.saved} : tensor<8xf32>
// CHECK-NEXT: %[[RSQRT:[^ ]+]] = ls2.rsqrt %[[SQRT]] {ls2.saved} : tensor<8xf32>
// CHECK-NEXT: %[[ERF:[^ ]+]] = ls2.erf %[[RSQRT]] : tensor<8xf32>
// CHECK-NEXT: %[[TANH:[^ ]+]] = ls2.tanh %[[ERF]] {ls2.saved} : tensor<8xf32>
// CHECK-NEXT: %[[LOSS:[^ ]+]] = ls2.reduce_sum %[[TANH]] [0]
// CHECK: %[[DY:[^ ]+]] = ls2.broadcast
// tanh: dy * (1 - y^2)
// CHECK-NEXT: %[[Y2:[^ ]+]] = ls2.mul %[[TANH]], %[[TANH]] : tensor<8xf32>
// CHECK-NEXT: %[[C1:[^ ]+]] = ls2.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[OMY2:[^ ]+]] = ls2.sub %[[C1]], %[[Y2]] : tensor<f32>, tensor<8xf32>
// CHECK-NEXT: %[[DERF:[^ ]+]] = ls2.mul %[[DY]], %[[OMY2]] : tensor<8xf32>
// erf: dy * 2/sqrt(pi) * exp(-x^2)
// CHECK-NEXT: %[[X2:[^ ]+]] = ls2.mul %[[RSQRT]], %[[RSQRT]] : tensor<8xf32>
// CHECK-NEXT: %[[NX2:[^ ]+]] = ls2.neg %[[X2]] : tensor<8xf32>
// CHECK-NEXT: %[[E:[^ ]+]] = ls2.exp %[[NX2]] : tensor<8xf32>
// CHECK-NEXT: %[[C2:[^ ]+]] = ls2.constant dense<1.12837923> : tensor<f32>
// CHECK-NEXT: %[[S:[^ ]+]] = ls2.mul %[[DERF]], %[[C2]] : tensor<8xf32>, tensor<f32>
// CHECK-NEXT: %[[DRSQRT:[^ ]+]] = ls2.mul %[[S]], %[[E]] : tensor<8xf32>
// rsqrt: dy * -0.5 * y^3
// CHECK-NEXT: %[[R2:[^ ]+]] = ls2.mul %[[RSQRT]], %[[RSQRT]] : tensor<8xf32>
// CHECK-NEXT: %[[R3:[^ ]+]] = ls2.mul %[[R2]], %[[RSQRT]] : tensor<8xf32>
// CHECK-NEXT: %[[CH:[^ ]+]] = ls2.constant dense<-5.000000e-01> : tensor<f32>
// CHECK-NEXT: %[[T:[^ ]+]] = ls2.mul %[[DRSQRT]], %[[CH]] : tensor<8xf32>, tensor<f32>
// CHECK-NEXT: %[[DSQRT:[^ ]+]] = ls2.mul %[[T]], %[[R3]] : tensor<8xf32>
// sqrt: dy * 0.5 / y
// CHECK-NEXT: %[[HALF:[^ ]+]] = ls2.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT: %[[H:[^ ]+]] = ls2.mul %[[DSQRT]], %[[HALF]] : tensor<8xf32>, tensor<f32>
// CHECK-NEXT: %[[DLOG:[^ ]+]] = ls2.div %[[H]], %[[SQRT]] : tensor<8xf32>
// log: dy / x; exp: dy * y; neg: -dy
// CHECK-NEXT: %[[DEXP:[^ ]+]] = ls2.div %[[DLOG]], %[[EXP]] : tensor<8xf32>
// CHECK-NEXT: %[[DNEG:[^ ]+]] = ls2.mul %[[DEXP]], %[[EXP]] : tensor<8xf32>
// CHECK-NEXT: %[[DW:[^ ]+]] = ls2.neg %[[DNEG]] : tensor<8xf32>
// CHECK-NEXT: return %[[LOSS]], %[[DW]]
module @unary {
  func.func @forward(%w: tensor<8xf32> {ls2.kind = "parameter", ls2.name = "w"}) -> tensor<f32> {
    %0 = ls2.neg %w : tensor<8xf32>
    %1 = ls2.exp %0 : tensor<8xf32>
    %2 = ls2.log %1 : tensor<8xf32>
    %3 = ls2.sqrt %2 : tensor<8xf32>
    %4 = ls2.rsqrt %3 : tensor<8xf32>
    %5 = ls2.erf %4 : tensor<8xf32>
    %6 = ls2.tanh %5 : tensor<8xf32>
    %l = ls2.reduce_sum %6 [0] : tensor<8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// On f16, a rule of several ops computes in f32 and rounds once; a float
// cast's gradient is cast back.
// CHECK-LABEL: module @unary_f16
// CHECK: func.func @forward_backward(
// CHECK: %[[Y:[^ ]+]] = ls2.tanh %{{.*}} {ls2.saved} : tensor<8xf16>
// CHECK: %[[D32:[^ ]+]] = ls2.broadcast %{{.*}} : tensor<f32> -> tensor<8xf32>
// CHECK-NEXT: %[[DY:[^ ]+]] = ls2.cast %[[D32]] : tensor<8xf32> to tensor<8xf16>
// CHECK-NEXT: %[[DYW:[^ ]+]] = ls2.cast %[[DY]] : tensor<8xf16> to tensor<8xf32>
// CHECK-NEXT: %[[YW:[^ ]+]] = ls2.cast %[[Y]] : tensor<8xf16> to tensor<8xf32>
// CHECK-NEXT: %[[Y2:[^ ]+]] = ls2.mul %[[YW]], %[[YW]] : tensor<8xf32>
// CHECK-NEXT: ls2.constant dense<1.000000e+00>
// CHECK-NEXT: %[[OM:[^ ]+]] = ls2.sub %{{.*}}, %[[Y2]] : tensor<f32>, tensor<8xf32>
// CHECK-NEXT: %[[DX:[^ ]+]] = ls2.mul %[[DYW]], %[[OM]] : tensor<8xf32>
// CHECK-NEXT: %[[DW:[^ ]+]] = ls2.cast %[[DX]] : tensor<8xf32> to tensor<8xf16>
// CHECK-NEXT: return %{{.*}}, %[[DW]] : tensor<f32>, tensor<8xf16>
module @unary_f16 {
  func.func @forward(%w: tensor<8xf16> {ls2.kind = "parameter", ls2.name = "w"}) -> tensor<f32> {
    %0 = ls2.tanh %w : tensor<8xf16>
    %1 = ls2.cast %0 : tensor<8xf16> to tensor<8xf32>
    %l = ls2.reduce_sum %1 [0] : tensor<8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// max and min: the chosen operand gets the gradient, ties split it in half;
// select routes it by the predicate; the i1 compare and the constant get
// none.
// CHECK-LABEL: module @choose
// CHECK: func.func @forward_backward(%[[W:[^:]+]]: tensor<?x8xf32> {{.*}}, %[[V:[^:]+]]: tensor<?x8xf32>
// CHECK: %[[ZERO:[^ ]+]] = ls2.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[RELU:[^ ]+]] = ls2.max %[[W]], %[[ZERO]] {ls2.saved} : tensor<?x8xf32>, tensor<f32>
// CHECK-NEXT: %[[MIN:[^ ]+]] = ls2.min %[[RELU]], %[[V]] : tensor<?x8xf32>
// CHECK-NEXT: %[[P:[^ ]+]] = ls2.compare  gt, %[[W]], %[[V]] {ls2.saved} : tensor<?x8xf32>
// CHECK-NEXT: %[[SEL:[^ ]+]] = ls2.select %[[P]], %[[MIN]], %[[ZERO]]
// CHECK-NEXT: %[[T:[^ ]+]] = ls2.dim %[[SEL]][0] : tensor<?x8xf32>
// CHECK: %[[DSEL:[^ ]+]] = ls2.broadcast %{{.*}}[%[[T]]] {dims = array<i64>} : tensor<f32> -> tensor<?x8xf32>
// CHECK: %[[DMIN:[^ ]+]] = ls2.select %[[P]], %[[DSEL]], %{{.*}} : tensor<?x8xi1>, tensor<?x8xf32>, tensor<f32>
// CHECK: %[[HALF:[^ ]+]] = ls2.mul %[[DMIN]], %{{.*}} : tensor<?x8xf32>, tensor<f32>
// CHECK-NEXT: %[[TIE:[^ ]+]] = ls2.compare  eq, %[[RELU]], %[[V]] : tensor<?x8xf32>
// CHECK-NEXT: %[[TIEG:[^ ]+]] = ls2.select %[[TIE]], %[[HALF]], %{{.*}}
// CHECK-NEXT: %[[LT:[^ ]+]] = ls2.compare  lt, %[[RELU]], %[[V]] : tensor<?x8xf32>
// CHECK-NEXT: %[[DRELU:[^ ]+]] = ls2.select %[[LT]], %[[DMIN]], %[[TIEG]] : tensor<?x8xi1>, tensor<?x8xf32>, tensor<?x8xf32>
// CHECK-NEXT: %[[GT:[^ ]+]] = ls2.compare  gt, %[[RELU]], %[[V]] : tensor<?x8xf32>
// CHECK-NEXT: %[[DV:[^ ]+]] = ls2.select %[[GT]], %[[DMIN]], %[[TIEG]]
// CHECK: ls2.compare  eq, %[[W]], %[[ZERO]] : tensor<?x8xf32>, tensor<f32>
// CHECK: %[[WGT:[^ ]+]] = ls2.compare  gt, %[[W]], %[[ZERO]] : tensor<?x8xf32>, tensor<f32>
// CHECK-NEXT: %[[DW:[^ ]+]] = ls2.select %[[WGT]], %[[DRELU]], %{{.*}}
// CHECK-NEXT: return %{{.*}}, %[[DW]], %[[DV]] :
module @choose {
  func.func @forward(%w: tensor<?x8xf32> {ls2.kind = "parameter", ls2.name = "w"}, %v: tensor<?x8xf32> {ls2.kind = "parameter", ls2.name = "v"}) -> tensor<f32> {
    %zero = ls2.constant dense<0.0> : tensor<f32>
    %0 = ls2.max %w, %zero : tensor<?x8xf32>, tensor<f32>
    %1 = ls2.min %0, %v : tensor<?x8xf32>
    %p = ls2.compare gt, %w, %v : tensor<?x8xf32>
    %2 = ls2.select %p, %1, %zero : tensor<?x8xi1>, tensor<?x8xf32>, tensor<f32>
    %l = ls2.reduce_sum %2 [0, 1] : tensor<?x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// broadcast -> reduce_sum over new dims, then over dims expanded from 1
// (kept); reshape and transpose -> inverse; slice -> zero padding by
// concat; concat -> slices.
// CHECK-LABEL: module @shapes
// CHECK: func.func @forward_backward(
// CHECK: %[[CAT:[^ ]+]] = ls2.concat
// CHECK: %[[DCAT:[^ ]+]] = ls2.broadcast %{{.*}} : tensor<f32> -> tensor<?x8x4xf32>
// CHECK-NEXT: %[[D0:[^ ]+]] = ls2.slice %[[DCAT]] {axis = 2 : i64, limit = 1 : i64, start = 0 : i64} : tensor<?x8x4xf32> -> tensor<?x8x1xf32>
// CHECK-NEXT: %[[D1:[^ ]+]] = ls2.slice %[[DCAT]] {axis = 2 : i64, limit = 4 : i64, start = 1 : i64} : tensor<?x8x4xf32> -> tensor<?x8x3xf32>
// CHECK-NEXT: %[[DADD:[^ ]+]] = ls2.reshape %[[D0]] : tensor<?x8x1xf32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[DT:[^ ]+]] = ls2.reduce_sum %[[D1]] [0] : tensor<?x8x3xf32> -> tensor<8x3xf32>
// CHECK-NEXT: %[[DSL:[^ ]+]] = ls2.transpose %[[DT]] [1, 0] : tensor<8x3xf32> -> tensor<3x8xf32>
// CHECK-NEXT: %[[Z0:[^ ]+]] = ls2.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[B0:[^ ]+]] = ls2.broadcast %[[Z0]][] {dims = array<i64>} : tensor<f32> -> tensor<2x8xf32>
// CHECK-NEXT: %[[Z1:[^ ]+]] = ls2.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[B1:[^ ]+]] = ls2.broadcast %[[Z1]][] {dims = array<i64>} : tensor<f32> -> tensor<3x8xf32>
// CHECK-NEXT: %[[PAD:[^ ]+]] = ls2.concat %[[B0]], %[[DSL]], %[[B1]] {axis = 0 : i64} : (tensor<2x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT: %[[DTR:[^ ]+]] = ls2.transpose %[[PAD]] [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[DW:[^ ]+]] = ls2.reshape %[[DTR]] : tensor<8x8xf32> -> tensor<4x2x8xf32>
// CHECK-NEXT: %[[DROW:[^ ]+]] = ls2.reduce_sum %[[DADD]] [0] {keep_dims} : tensor<?x8xf32> -> tensor<1x8xf32>
// CHECK-NEXT: %[[DBIAS:[^ ]+]] = ls2.reduce_sum %[[DADD]] [0] : tensor<?x8xf32> -> tensor<8xf32>
// CHECK-NEXT: return %{{.*}}, %[[DBIAS]], %[[DROW]], %[[DW]] : tensor<f32>, tensor<8xf32>, tensor<1x8xf32>, tensor<4x2x8xf32>
module @shapes {
  func.func @forward(%b: tensor<8xf32> {ls2.kind = "parameter", ls2.name = "bias"}, %c: tensor<1x8xf32> {ls2.kind = "parameter", ls2.name = "row"}, %w: tensor<4x2x8xf32> {ls2.kind = "parameter", ls2.name = "w"}, %x: tensor<?x8xf32> {ls2.kind = "input", ls2.name = "x"}) -> tensor<f32> {
    %t = ls2.dim %x[0] : tensor<?x8xf32>
    %0 = ls2.broadcast %b[%t] {dims = array<i64: 1>} : tensor<8xf32> -> tensor<?x8xf32>
    %1 = ls2.broadcast %c[%t] {dims = array<i64: 0, 1>} : tensor<1x8xf32> -> tensor<?x8xf32>
    %2 = ls2.add %0, %1 : tensor<?x8xf32>
    %3 = ls2.reshape %w : tensor<4x2x8xf32> -> tensor<8x8xf32>
    %4 = ls2.transpose %3 [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
    %5 = ls2.slice %4 {axis = 0 : i64, start = 2 : i64, limit = 5 : i64} : tensor<8x8xf32> -> tensor<3x8xf32>
    %6 = ls2.transpose %5 [1, 0] : tensor<3x8xf32> -> tensor<8x3xf32>
    %7 = ls2.broadcast %6[%t] {dims = array<i64: 1, 2>} : tensor<8x3xf32> -> tensor<?x8x3xf32>
    %8 = ls2.reshape %2 : tensor<?x8xf32> -> tensor<?x8x1xf32>
    %9 = ls2.concat %8, %7 {axis = 2 : i64} : (tensor<?x8x1xf32>, tensor<?x8x3xf32>) -> tensor<?x8x4xf32>
    %l = ls2.reduce_sum %9 [0, 1, 2] : tensor<?x8x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Slices that tile a value (a fused q/k/v projection) join their gradients
// with one concat, zeros in the gap [16, 20), instead of padding and adding.
// CHECK-LABEL: module @slices
// CHECK: func.func @forward_backward(%[[W:[^:]+]]: tensor<8x24xf32> {{.*}}, %[[X:[^:]+]]: tensor<?x8xf32>
// CHECK: %[[Q:[^ ]+]] = ls2.slice %{{.*}} {axis = 1 : i64, limit = 8 : i64, ls2.saved, start = 0 : i64}
// CHECK-NEXT: %[[K:[^ ]+]] = ls2.slice %{{.*}} {axis = 1 : i64, limit = 16 : i64, ls2.saved, start = 8 : i64}
// CHECK-NEXT: ls2.slice %{{.*}} {axis = 1 : i64, limit = 24 : i64, start = 20 : i64}
// CHECK: %[[DV:[^ ]+]] = ls2.broadcast %{{.*}} -> tensor<?x4xf32>
// CHECK-NEXT: %[[DQK:[^ ]+]] = ls2.broadcast %{{.*}} -> tensor<?x8xf32>
// CHECK-NEXT: %[[DQ:[^ ]+]] = ls2.mul %[[DQK]], %[[K]] : tensor<?x8xf32>
// CHECK-NEXT: %[[DK:[^ ]+]] = ls2.mul %[[DQK]], %[[Q]] : tensor<?x8xf32>
// CHECK-NEXT: %[[T:[^ ]+]] = ls2.dim %[[DQ]][0] : tensor<?x8xf32>
// CHECK-NEXT: %[[Z:[^ ]+]] = ls2.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[GAP:[^ ]+]] = ls2.broadcast %[[Z]][%[[T]]] {dims = array<i64>} : tensor<f32> -> tensor<?x4xf32>
// CHECK-NEXT: %[[DQKV:[^ ]+]] = ls2.concat %[[DQ]], %[[DK]], %[[GAP]], %[[DV]] {axis = 1 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x24xf32>
// CHECK-NEXT: %[[DW:[^ ]+]] = ls2.matmul %[[X]], %[[DQKV]] {transpose_a} : tensor<?x8xf32>, tensor<?x24xf32> -> tensor<8x24xf32>
// CHECK-NEXT: return %{{.*}}, %[[DW]] :
module @slices {
  func.func @forward(%w: tensor<8x24xf32> {ls2.kind = "parameter", ls2.name = "w"}, %x: tensor<?x8xf32> {ls2.kind = "input", ls2.name = "x"}) -> tensor<f32> {
    %qkv = ls2.matmul %x, %w : tensor<?x8xf32>, tensor<8x24xf32> -> tensor<?x24xf32>
    %q = ls2.slice %qkv {axis = 1 : i64, start = 0 : i64, limit = 8 : i64} : tensor<?x24xf32> -> tensor<?x8xf32>
    %k = ls2.slice %qkv {axis = 1 : i64, start = 8 : i64, limit = 16 : i64} : tensor<?x24xf32> -> tensor<?x8xf32>
    %v = ls2.slice %qkv {axis = 1 : i64, start = 20 : i64, limit = 24 : i64} : tensor<?x24xf32> -> tensor<?x4xf32>
    %0 = ls2.mul %q, %k : tensor<?x8xf32>
    %1 = ls2.reduce_sum %0 [0, 1] : tensor<?x8xf32> -> tensor<f32>
    %2 = ls2.reduce_sum %v [0, 1] : tensor<?x4xf32> -> tensor<f32>
    %l = ls2.add %1, %2 : tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Overlapping slices: each gradient is padded, then they are added in use
// order.
// CHECK-LABEL: module @overlapping_slices
// CHECK: func.func @forward_backward(
// CHECK-NEXT: %[[A:[^ ]+]] = ls2.slice %{{.*}} {axis = 1 : i64, limit = 6 : i64, ls2.saved, start = 0 : i64}
// CHECK-NEXT: %[[B:[^ ]+]] = ls2.slice %{{.*}} {axis = 1 : i64, limit = 8 : i64, ls2.saved, start = 2 : i64}
// CHECK: %[[D:[^ ]+]] = ls2.broadcast %{{.*}} -> tensor<4x6xf32>
// CHECK-NEXT: %[[DA:[^ ]+]] = ls2.mul %[[D]], %[[B]] : tensor<4x6xf32>
// CHECK-NEXT: %[[DB:[^ ]+]] = ls2.mul %[[D]], %[[A]] : tensor<4x6xf32>
// CHECK: %[[PA:[^ ]+]] = ls2.concat %[[DA]], %{{.*}} {axis = 1 : i64} : (tensor<4x6xf32>, tensor<4x2xf32>) -> tensor<4x8xf32>
// CHECK: %[[PB:[^ ]+]] = ls2.concat %{{.*}}, %[[DB]] {axis = 1 : i64} : (tensor<4x2xf32>, tensor<4x6xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[DW:[^ ]+]] = ls2.add %[[PA]], %[[PB]] : tensor<4x8xf32>
// CHECK-NEXT: return %{{.*}}, %[[DW]]
module @overlapping_slices {
  func.func @forward(%w: tensor<4x8xf32> {ls2.kind = "parameter", ls2.name = "w"}) -> tensor<f32> {
    %a = ls2.slice %w {axis = 1 : i64, start = 0 : i64, limit = 6 : i64} : tensor<4x8xf32> -> tensor<4x6xf32>
    %b = ls2.slice %w {axis = 1 : i64, start = 2 : i64, limit = 8 : i64} : tensor<4x8xf32> -> tensor<4x6xf32>
    %0 = ls2.mul %a, %b : tensor<4x6xf32>
    %l = ls2.reduce_sum %0 [0, 1] : tensor<4x6xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// reduce_sum -> broadcast back; reduce_max -> the gradient shared evenly
// among the elements equal to the maximum. Dims of forward values move into
// the forward part.
// CHECK-LABEL: module @reductions
// CHECK: func.func @forward_backward(%[[W:[^:]+]]: tensor<?x4x8xf32>
// CHECK-NEXT: %[[T:[^ ]+]] = ls2.dim %[[W]][0] : tensor<?x4x8xf32>
// CHECK-NEXT: %[[M:[^ ]+]] = ls2.reduce_max %[[W]] [2] {keep_dims, ls2.saved} : tensor<?x4x8xf32> -> tensor<?x4x1xf32>
// CHECK: %[[S:[^ ]+]] = ls2.reduce_sum %[[W]] [1] {ls2.saved} : tensor<?x4x8xf32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[T2:[^ ]+]] = ls2.dim %[[S]][0] : tensor<?x8xf32>
// CHECK-NEXT: %[[MAX:[^ ]+]] = ls2.reduce_max %[[S]] [0, 1] {ls2.saved} : tensor<?x8xf32> -> tensor<f32>
// CHECK: %[[BMAX:[^ ]+]] = ls2.broadcast %[[MAX]][%[[T2]]] {dims = array<i64>} : tensor<f32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[HIT:[^ ]+]] = ls2.compare  eq, %[[S]], %[[BMAX]] : tensor<?x8xf32>
// CHECK-NEXT: %[[MASK:[^ ]+]] = ls2.cast %[[HIT]] : tensor<?x8xi1> to tensor<?x8xf32>
// CHECK-NEXT: %[[COUNT:[^ ]+]] = ls2.reduce_sum %[[MASK]] [0, 1] : tensor<?x8xf32> -> tensor<f32>
// CHECK-NEXT: %[[SHARE:[^ ]+]] = ls2.div %{{.*}}, %[[COUNT]] : tensor<f32>
// CHECK-NEXT: %[[BS:[^ ]+]] = ls2.broadcast %[[SHARE]][%[[T2]]] {dims = array<i64>} : tensor<f32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[DS:[^ ]+]] = ls2.mul %[[BS]], %[[MASK]] : tensor<?x8xf32>
// CHECK-NEXT: %[[DW1:[^ ]+]] = ls2.broadcast %[[DS]][%[[T]]] {dims = array<i64: 0, 2>} : tensor<?x8xf32> -> tensor<?x4x8xf32>
// CHECK: %[[BM:[^ ]+]] = ls2.broadcast %[[M]][%[[T]]] {dims = array<i64: 0, 1, 2>} : tensor<?x4x1xf32> -> tensor<?x4x8xf32>
// CHECK-NEXT: %[[HIT2:[^ ]+]] = ls2.compare  eq, %[[W]], %[[BM]] : tensor<?x4x8xf32>
// CHECK-NEXT: %[[MASK2:[^ ]+]] = ls2.cast %[[HIT2]] : tensor<?x4x8xi1> to tensor<?x4x8xf32>
// CHECK-NEXT: %[[COUNT2:[^ ]+]] = ls2.reduce_sum %[[MASK2]] [2] {keep_dims} : tensor<?x4x8xf32> -> tensor<?x4x1xf32>
// CHECK-NEXT: %[[SHARE2:[^ ]+]] = ls2.div %{{.*}}, %[[COUNT2]] : tensor<?x4x1xf32>
// CHECK-NEXT: %[[BS2:[^ ]+]] = ls2.broadcast %[[SHARE2]][%[[T]]] {dims = array<i64: 0, 1, 2>} : tensor<?x4x1xf32> -> tensor<?x4x8xf32>
// CHECK-NEXT: %[[DW0:[^ ]+]] = ls2.mul %[[BS2]], %[[MASK2]] : tensor<?x4x8xf32>
// CHECK-NEXT: %[[DW:[^ ]+]] = ls2.add %[[DW0]], %[[DW1]] : tensor<?x4x8xf32>
// CHECK-NEXT: return %{{.*}}, %[[DW]]
module @reductions {
  func.func @forward(%w: tensor<?x4x8xf32> {ls2.kind = "parameter", ls2.name = "w"}) -> tensor<f32> {
    %0 = ls2.reduce_max %w [2] {keep_dims} : tensor<?x4x8xf32> -> tensor<?x4x1xf32>
    %1 = ls2.reduce_sum %0 [0, 1, 2] : tensor<?x4x1xf32> -> tensor<f32>
    %2 = ls2.reduce_sum %w [1] : tensor<?x4x8xf32> -> tensor<?x8xf32>
    %3 = ls2.reduce_max %2 [0, 1] : tensor<?x8xf32> -> tensor<f32>
    %l = ls2.add %1, %3 : tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Every transpose-flag combination: dA = dC op(B)^T (transposed back under
// transpose_a), dB = op(A)^T dC (transposed back under transpose_b). The
// input x gets no gradient, so its product is never built.
// CHECK-LABEL: module @matmul
// CHECK: func.func @forward_backward(%[[W:[^:]+]]: tensor<16x8xf32> {{.*}}, %[[U:[^:]+]]: tensor<8x16xf32> {{.*}}, %[[X:[^:]+]]: tensor<?x16xf32>
// CHECK-NEXT: %[[M0:[^ ]+]] = ls2.matmul %[[X]], %[[W]] {ls2.saved}
// CHECK-NEXT: %[[M1:[^ ]+]] = ls2.matmul %[[M0]], %[[U]] {ls2.saved}
// CHECK-NEXT: %[[M2:[^ ]+]] = ls2.matmul %[[M1]], %[[M0]] {ls2.saved, transpose_a}
// CHECK-NEXT: %[[M3:[^ ]+]] = ls2.matmul %[[U]], %[[M2]] {ls2.saved, transpose_a, transpose_b}
// CHECK-NEXT: %[[M4:[^ ]+]] = ls2.matmul %[[M3]], %[[U]] {transpose_b}
// CHECK: %[[D4:[^ ]+]] = ls2.broadcast %{{.*}} -> tensor<16x8xf32>
// M4 = M3 U^T
// CHECK-NEXT: %[[D3:[^ ]+]] = ls2.matmul %[[D4]], %[[U]] : tensor<16x8xf32>, tensor<8x16xf32> -> tensor<16x16xf32>
// CHECK-NEXT: %[[DU4:[^ ]+]] = ls2.matmul %[[D4]], %[[M3]] {transpose_a} : tensor<16x8xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
// M3 = U^T M2^T
// CHECK-NEXT: %[[T3:[^ ]+]] = ls2.matmul %[[D3]], %[[M2]] : tensor<16x16xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
// CHECK-NEXT: %[[DU3:[^ ]+]] = ls2.transpose %[[T3]] [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[D2:[^ ]+]] = ls2.matmul %[[D3]], %[[U]] {transpose_a, transpose_b} : tensor<16x16xf32>, tensor<8x16xf32> -> tensor<16x8xf32>
// M2 = M1^T M0
// CHECK-NEXT: %[[T2:[^ ]+]] = ls2.matmul %[[D2]], %[[M0]] {transpose_b} : tensor<16x8xf32>, tensor<?x8xf32> -> tensor<16x?xf32>
// CHECK-NEXT: %[[D1:[^ ]+]] = ls2.transpose %[[T2]] [1, 0] : tensor<16x?xf32> -> tensor<?x16xf32>
// CHECK-NEXT: %[[D0B:[^ ]+]] = ls2.matmul %[[M1]], %[[D2]] : tensor<?x16xf32>, tensor<16x8xf32> -> tensor<?x8xf32>
// M1 = M0 U
// CHECK-NEXT: %[[D0A:[^ ]+]] = ls2.matmul %[[D1]], %[[U]] {transpose_b} : tensor<?x16xf32>, tensor<8x16xf32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[DU1:[^ ]+]] = ls2.matmul %[[M0]], %[[D1]] {transpose_a} : tensor<?x8xf32>, tensor<?x16xf32> -> tensor<8x16xf32>
// M0 = X W: only W's gradient.
// CHECK-NEXT: %[[D0:[^ ]+]] = ls2.add %[[D0A]], %[[D0B]] : tensor<?x8xf32>
// CHECK-NEXT: %[[DW:[^ ]+]] = ls2.matmul %[[X]], %[[D0]] {transpose_a} : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<16x8xf32>
// CHECK-NEXT: %[[DU01:[^ ]+]] = ls2.add %[[DU1]], %[[DU3]] : tensor<8x16xf32>
// CHECK-NEXT: %[[DU:[^ ]+]] = ls2.add %[[DU01]], %[[DU4]] : tensor<8x16xf32>
// CHECK-NEXT: return %{{.*}}, %[[DW]], %[[DU]] :
module @matmul {
  func.func @forward(%w: tensor<16x8xf32> {ls2.kind = "parameter", ls2.name = "w"}, %u: tensor<8x16xf32> {ls2.kind = "parameter", ls2.name = "u"}, %x: tensor<?x16xf32> {ls2.kind = "input", ls2.name = "x"}) -> tensor<f32> {
    %0 = ls2.matmul %x, %w : tensor<?x16xf32>, tensor<16x8xf32> -> tensor<?x8xf32>
    %1 = ls2.matmul %0, %u : tensor<?x8xf32>, tensor<8x16xf32> -> tensor<?x16xf32>
    %2 = ls2.matmul %1, %0 {transpose_a} : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<16x8xf32>
    %3 = ls2.matmul %u, %2 {transpose_a, transpose_b} : tensor<8x16xf32>, tensor<16x8xf32> -> tensor<16x16xf32>
    %4 = ls2.matmul %3, %u {transpose_b} : tensor<16x16xf32>, tensor<8x16xf32> -> tensor<16x8xf32>
    %l = ls2.reduce_sum %4 [0, 1] : tensor<16x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Batched products, and a rank-2 weight shared by every batch: its gradient
// sums over the batch, as one GEMM over flattened rows (w) or, when a is
// transposed, per-batch f32 products summed and rounded once (u). An f32
// result's gradient is cast to the bf16 operands' type first.
// CHECK-LABEL: module @matmul_batched
// CHECK: func.func @forward_backward(%[[W:[^:]+]]: tensor<8x16xbf16> {{.*}}, %[[U:[^:]+]]: tensor<4x8xbf16> {{.*}}, %[[Q:[^:]+]]: tensor<?x4x16xbf16> {{.*}}, %[[K:[^:]+]]: tensor<?x4x16xbf16>
// CHECK: %[[DS:[^ ]+]] = ls2.cast %{{.*}} : tensor<?x4x4xf32> to tensor<?x4x4xbf16>
// CHECK: %[[DKU:[^ ]+]] = ls2.cast %{{.*}} : tensor<?x16x8xf32> to tensor<?x16x8xbf16>
// CHECK: %[[DY32:[^ ]+]] = ls2.broadcast %{{.*}} -> tensor<?x4x8xf32>
// S = Q K^T
// CHECK-NEXT: %[[DQS:[^ ]+]] = ls2.matmul %[[DS]], %[[K]] : tensor<?x4x4xbf16>, tensor<?x4x16xbf16> -> tensor<?x4x16xbf16>
// CHECK-NEXT: %[[DKS:[^ ]+]] = ls2.matmul %[[DS]], %[[Q]] {transpose_a} : tensor<?x4x4xbf16>, tensor<?x4x16xbf16> -> tensor<?x4x16xbf16>
// K^T U, U shared, a transposed: per-batch f32 products summed
// CHECK-NEXT: %[[T:[^ ]+]] = ls2.matmul %[[DKU]], %[[U]] {transpose_b} : tensor<?x16x8xbf16>, tensor<4x8xbf16> -> tensor<?x16x4xbf16>
// CHECK-NEXT: %[[DKU2:[^ ]+]] = ls2.transpose %[[T]] [0, 2, 1] : tensor<?x16x4xbf16> -> tensor<?x4x16xbf16>
// CHECK-NEXT: %[[PB:[^ ]+]] = ls2.matmul %[[K]], %[[DKU]] : tensor<?x4x16xbf16>, tensor<?x16x8xbf16> -> tensor<?x4x8xf32>
// CHECK-NEXT: %[[SUM:[^ ]+]] = ls2.reduce_sum %[[PB]] [0] : tensor<?x4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[DU:[^ ]+]] = ls2.cast %[[SUM]] : tensor<4x8xf32> to tensor<4x8xbf16>
// Q W^T, W shared: one GEMM over the flattened rows
// CHECK-NEXT: %[[DY:[^ ]+]] = ls2.cast %[[DY32]] : tensor<?x4x8xf32> to tensor<?x4x8xbf16>
// CHECK-NEXT: %[[DQW:[^ ]+]] = ls2.matmul %[[DY]], %[[W]] : tensor<?x4x8xbf16>, tensor<8x16xbf16> -> tensor<?x4x16xbf16>
// CHECK-NEXT: %[[Q2:[^ ]+]] = ls2.reshape %[[Q]] : tensor<?x4x16xbf16> -> tensor<?x16xbf16>
// CHECK-NEXT: %[[DY2:[^ ]+]] = ls2.reshape %[[DY]] : tensor<?x4x8xbf16> -> tensor<?x8xbf16>
// CHECK-NEXT: %[[DW:[^ ]+]] = ls2.matmul %[[DY2]], %[[Q2]] {transpose_a} : tensor<?x8xbf16>, tensor<?x16xbf16> -> tensor<8x16xbf16>
// CHECK-NEXT: %[[DQ:[^ ]+]] = ls2.add %[[DQW]], %[[DQS]] : tensor<?x4x16xbf16>
// CHECK-NEXT: %[[DK:[^ ]+]] = ls2.add %[[DKU2]], %[[DKS]] : tensor<?x4x16xbf16>
// CHECK-NEXT: return %{{.*}}, %[[DW]], %[[DU]], %[[DQ]], %[[DK]] :
module @matmul_batched {
  func.func @forward(%w: tensor<8x16xbf16> {ls2.kind = "parameter", ls2.name = "w"}, %u: tensor<4x8xbf16> {ls2.kind = "parameter", ls2.name = "u"}, %q: tensor<?x4x16xbf16> {ls2.kind = "parameter", ls2.name = "q"}, %k: tensor<?x4x16xbf16> {ls2.kind = "parameter", ls2.name = "k"}) -> tensor<f32> {
    %0 = ls2.matmul %q, %w {transpose_b} : tensor<?x4x16xbf16>, tensor<8x16xbf16> -> tensor<?x4x8xf32>
    %1 = ls2.matmul %k, %u {transpose_a} : tensor<?x4x16xbf16>, tensor<4x8xbf16> -> tensor<?x16x8xbf16>
    %2 = ls2.matmul %q, %k {transpose_b} : tensor<?x4x16xbf16>, tensor<?x4x16xbf16> -> tensor<?x4x4xbf16>
    %3 = ls2.reduce_sum %0 [0, 1, 2] : tensor<?x4x8xf32> -> tensor<f32>
    %4 = ls2.cast %1 : tensor<?x16x8xbf16> to tensor<?x16x8xf32>
    %5 = ls2.reduce_sum %4 [0, 1, 2] : tensor<?x16x8xf32> -> tensor<f32>
    %6 = ls2.cast %2 : tensor<?x4x4xbf16> to tensor<?x4x4xf32>
    %7 = ls2.reduce_sum %6 [0, 1, 2] : tensor<?x4x4xf32> -> tensor<f32>
    %8 = ls2.add %3, %5 : tensor<f32>
    %l = ls2.add %8, %7 : tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A tied embedding: the table gets gather's scatter_add plus the output
// projection's gradient, in the order of its uses.
// CHECK-LABEL: module @embedding
// CHECK: func.func @forward_backward(%[[WTE:[^:]+]]: tensor<100x8xf32> {{.*}}, %[[IDS:[^:]+]]: tensor<?xi32> {{.*}}, %[[LABELS:[^:]+]]: tensor<?xi32> {{.*}}, %[[ONE:[^:]+]]: tensor<f32> {ls2.kind = "input", ls2.name = "loss_grad"})
// CHECK-NEXT: %[[X:[^ ]+]] = ls2.gather %[[WTE]][%[[IDS]]] {ls2.saved}
// CHECK-NEXT: %[[LOGITS:[^ ]+]] = ls2.matmul %[[X]], %[[WTE]] {ls2.saved, transpose_b}
// CHECK-NEXT: %[[LOSS:[^ ]+]] = ls2.cross_entropy %[[LOGITS]], %[[LABELS]] : tensor<?x100xf32>, tensor<?xi32> -> tensor<f32>
// CHECK-NEXT: %[[DLOGITS:[^ ]+]] = ls2.cross_entropy_grad %[[ONE]], %[[LOGITS]], %[[LABELS]] : tensor<f32>, tensor<?x100xf32>, tensor<?xi32>
// CHECK-NEXT: %[[DX:[^ ]+]] = ls2.matmul %[[DLOGITS]], %[[WTE]] : tensor<?x100xf32>, tensor<100x8xf32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[DHEAD:[^ ]+]] = ls2.matmul %[[DLOGITS]], %[[X]] {transpose_a} : tensor<?x100xf32>, tensor<?x8xf32> -> tensor<100x8xf32>
// CHECK-NEXT: %[[DEMB:[^ ]+]] = ls2.scatter_add %[[DX]], %[[IDS]] : tensor<?x8xf32>, tensor<?xi32> -> tensor<100x8xf32>
// CHECK-NEXT: %[[DWTE:[^ ]+]] = ls2.add %[[DEMB]], %[[DHEAD]] : tensor<100x8xf32>
// CHECK-NEXT: return %[[LOSS]], %[[DWTE]] : tensor<f32>, tensor<100x8xf32>
module @embedding {
  func.func @forward(%wte: tensor<100x8xf32> {ls2.kind = "parameter", ls2.name = "wte"}, %ids: tensor<?xi32> {ls2.kind = "input", ls2.name = "ids"}, %labels: tensor<?xi32> {ls2.kind = "input", ls2.name = "labels"}) -> tensor<f32> {
    %x = ls2.gather %wte[%ids] : tensor<100x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %logits = ls2.matmul %x, %wte {transpose_b} : tensor<?x8xf32>, tensor<100x8xf32> -> tensor<?x100xf32>
    %l = ls2.cross_entropy %logits, %labels : tensor<?x100xf32>, tensor<?xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Rows of an activation gathered at ls2.nonzero's positions (the masked-LM
// head of max_predictions): the gradient is a scatter_add into the
// activation's dynamic row count, read by an ls2.dim in the forward part;
// the positions (integers) get none.
// CHECK-LABEL: module @labelled_rows
// CHECK: func.func @forward_backward(%[[W1:[^:]+]]: tensor<8x8xf32> {{.*}}, %[[W2:[^:]+]]: tensor<8x5xf32> {{.*}}, %[[X:[^:]+]]: tensor<?x8xf32> {{.*}}, %[[LABELS:[^:]+]]: tensor<?xi32> {{.*}}, %{{.*}}: tensor<f32> {ls2.kind = "input", ls2.name = "loss_grad"})
// CHECK-NEXT: %[[H:[^ ]+]] = ls2.matmul %[[X]], %[[W1]] : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[T:[^ ]+]] = ls2.dim %[[H]][0] : tensor<?x8xf32>
// CHECK: %[[P:[^ ]+]] = ls2.nonzero %{{.*}} {fill_value = 0 : i64, ls2.saved} : tensor<?xi1> -> tensor<4xi32>
// CHECK-NEXT: %[[ROWS:[^ ]+]] = ls2.gather %[[H]][%[[P]]] {ls2.saved} : tensor<?x8xf32>, tensor<4xi32> -> tensor<4x8xf32>
// CHECK: ls2.cross_entropy_grad
// CHECK-NEXT: %[[DROWS:[^ ]+]] = ls2.matmul %{{.*}}, %[[W2]] {transpose_b} : tensor<4x5xf32>, tensor<8x5xf32> -> tensor<4x8xf32>
// CHECK-NEXT: ls2.matmul %[[ROWS]], %{{.*}} {transpose_a} : tensor<4x8xf32>, tensor<4x5xf32> -> tensor<8x5xf32>
// CHECK-NEXT: %[[DH:[^ ]+]] = ls2.scatter_add %[[DROWS]], %[[P]][%[[T]]] : tensor<4x8xf32>, tensor<4xi32> -> tensor<?x8xf32>
// CHECK-NEXT: ls2.matmul %[[X]], %[[DH]] {transpose_a} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<8x8xf32>
module @labelled_rows {
  func.func @forward(%w1: tensor<8x8xf32> {ls2.kind = "parameter", ls2.name = "w1"}, %w2: tensor<8x5xf32> {ls2.kind = "parameter", ls2.name = "w2"}, %x: tensor<?x8xf32> {ls2.kind = "input", ls2.name = "x"}, %labels: tensor<?xi32> {ls2.kind = "input", ls2.name = "labels"}) -> tensor<f32> {
    %h = ls2.matmul %x, %w1 : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
    %ignore = ls2.constant dense<-100> : tensor<i32>
    %mask = ls2.compare ne, %labels, %ignore : tensor<?xi32>, tensor<i32>
    %p = ls2.nonzero %mask {fill_value = 0 : i64} : tensor<?xi1> -> tensor<4xi32>
    %rows = ls2.gather %h[%p] : tensor<?x8xf32>, tensor<4xi32> -> tensor<4x8xf32>
    %lab = ls2.gather %labels[%p] : tensor<?xi32>, tensor<4xi32> -> tensor<4xi32>
    %logits = ls2.matmul %rows, %w2 : tensor<4x8xf32>, tensor<8x5xf32> -> tensor<4x5xf32>
    %l = ls2.cross_entropy %logits, %lab : tensor<4x5xf32>, tensor<4xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Fan-out sums in use order (mul lhs, mul rhs, add); a buffer gets no
// gradient; a parameter with no path to the loss gets zeros.
// CHECK-LABEL: module @fan_out
// CHECK: func.func @forward_backward(%[[W:[^:]+]]: tensor<8xf32> {{.*}}, %[[UNUSED:[^:]+]]: tensor<3x8xf32> {{.*}}, %[[TABLE:[^:]+]]: tensor<4x8xf32> {ls2.kind = "buffer", ls2.name = "table"}, %{{.*}}: tensor<f32> {ls2.kind = "input", ls2.name = "loss_grad"})
// CHECK-SAME: -> (tensor<f32> {ls2.kind = "loss"}, tensor<8xf32> {ls2.kind = "gradient", ls2.name = "w"}, tensor<3x8xf32> {ls2.kind = "gradient", ls2.name = "unused"})
// CHECK-NEXT: %[[E:[^ ]+]] = ls2.exp %[[W]] {ls2.saved}
// CHECK-NEXT: %[[SQ:[^ ]+]] = ls2.mul %[[E]], %[[E]] : tensor<8xf32>
// CHECK-NEXT: %[[SUM:[^ ]+]] = ls2.add %[[SQ]], %[[E]] : tensor<8xf32>
// CHECK-NEXT: %[[T:[^ ]+]] = ls2.reduce_sum %[[TABLE]] [0] {ls2.saved}
// CHECK: %[[D4:[^ ]+]] = ls2.broadcast
// CHECK-NEXT: %[[D2:[^ ]+]] = ls2.mul %[[D4]], %[[T]] : tensor<8xf32>
// CHECK-NEXT: %[[DL:[^ ]+]] = ls2.mul %[[D2]], %[[E]] : tensor<8xf32>
// CHECK-NEXT: %[[DR:[^ ]+]] = ls2.mul %[[D2]], %[[E]] : tensor<8xf32>
// CHECK-NEXT: %[[A0:[^ ]+]] = ls2.add %[[DL]], %[[DR]] : tensor<8xf32>
// CHECK-NEXT: %[[DE:[^ ]+]] = ls2.add %[[A0]], %[[D2]] : tensor<8xf32>
// CHECK-NEXT: %[[DW:[^ ]+]] = ls2.mul %[[DE]], %[[E]] : tensor<8xf32>
// CHECK-NEXT: %[[Z:[^ ]+]] = ls2.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[DU:[^ ]+]] = ls2.broadcast %[[Z]][] {dims = array<i64>} : tensor<f32> -> tensor<3x8xf32>
// CHECK-NEXT: return %{{.*}}, %[[DW]], %[[DU]] : tensor<f32>, tensor<8xf32>, tensor<3x8xf32>
module @fan_out {
  func.func @forward(%w: tensor<8xf32> {ls2.kind = "parameter", ls2.name = "w"}, %unused: tensor<3x8xf32> {ls2.kind = "parameter", ls2.name = "unused"}, %table: tensor<4x8xf32> {ls2.kind = "buffer", ls2.name = "table"}) -> tensor<f32> {
    %0 = ls2.exp %w : tensor<8xf32>
    %1 = ls2.mul %0, %0 : tensor<8xf32>
    %2 = ls2.add %1, %0 : tensor<8xf32>
    %3 = ls2.reduce_sum %table [0] : tensor<4x8xf32> -> tensor<8xf32>
    %4 = ls2.mul %2, %3 : tensor<8xf32>
    %5 = ls2.reduce_sum %unused [0] : tensor<3x8xf32> -> tensor<8xf32>
    %l = ls2.reduce_sum %4 [0] : tensor<8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// dropout's gradient is dropout of the gradient with the same seed, offset,
// stream and rate: the mask regenerates, nothing is saved.
// CHECK-LABEL: module @dropout
// CHECK: func.func @forward_backward(%[[W:[^:]+]]: tensor<?x8xf16> {{.*}}, %[[SEED:[^:]+]]: tensor<i64> {{.*}}, %[[OFFSET:[^:]+]]: tensor<i64>
// CHECK-NEXT: ls2.dropout %[[W]], %[[SEED]], %[[OFFSET]] {rate = 1.000000e-01 : f32, stream = 3 : i64} : tensor<?x8xf16>
// CHECK: %[[DY:[^ ]+]] = ls2.cast %{{.*}} : tensor<?x8xf32> to tensor<?x8xf16>
// CHECK-NEXT: %[[DW:[^ ]+]] = ls2.dropout %[[DY]], %[[SEED]], %[[OFFSET]] {rate = 1.000000e-01 : f32, stream = 3 : i64} : tensor<?x8xf16>
// CHECK-NEXT: return %{{.*}}, %[[DW]]
module @dropout {
  func.func @forward(%w: tensor<?x8xf16> {ls2.kind = "parameter", ls2.name = "w"}, %seed: tensor<i64> {ls2.kind = "input", ls2.name = "dropout_seed"}, %offset: tensor<i64> {ls2.kind = "input", ls2.name = "dropout_offset"}) -> tensor<f32> {
    %0 = ls2.dropout %w, %seed, %offset {rate = 0.1 : f32, stream = 3 : i64} : tensor<?x8xf16>
    %1 = ls2.cast %0 : tensor<?x8xf16> to tensor<?x8xf32>
    %l = ls2.reduce_sum %1 [0, 1] : tensor<?x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// layer_norm -> layer_norm_grad from the saved mean and rstd; gradients
// through the mean and rstd results themselves add in f32 (H = 8):
// dmean / 8 and -drstd * rstd^3 / 8 * (x - mean).
// CHECK-LABEL: module @layer_norm
// CHECK: func.func @forward_backward(%[[X:[^:]+]]: tensor<?x8xf16> {{.*}}, %[[G:[^:]+]]: tensor<8xf16> {{.*}}, %[[B:[^:]+]]: tensor<8xf16>
// CHECK-SAME: -> (tensor<f32> {ls2.kind = "loss"}, tensor<?x8xf16> {ls2.kind = "gradient", ls2.name = "x"}, tensor<8xf16> {ls2.kind = "gradient", ls2.name = "ln.weight"}, tensor<8xf16> {ls2.kind = "gradient", ls2.name = "ln.bias"})
// CHECK-NEXT: %[[T:[^ ]+]] = ls2.dim %[[X]][0] : tensor<?x8xf16>
// CHECK-NEXT: %[[Y:[^ ]+]], %[[MEAN:[^ ]+]], %[[RSTD:[^ ]+]] = ls2.layer_norm %[[X]], %[[G]], %[[B]] {epsilon = 9.99999974E-6 : f32, ls2.saved}
// CHECK: %[[DMEAN:[^ ]+]] = ls2.broadcast %{{.*}} -> tensor<?xf32>
// CHECK-NEXT: %[[DRSTD:[^ ]+]] = ls2.broadcast %{{.*}} -> tensor<?xf32>
// CHECK: %[[DY:[^ ]+]] = ls2.cast %{{.*}} : tensor<?x8xf32> to tensor<?x8xf16>
// CHECK-NEXT: %[[DX0:[^ ]+]], %[[DG:[^ ]+]], %[[DB:[^ ]+]] = ls2.layer_norm_grad %[[DY]], %[[X]], %[[G]], %[[MEAN]], %[[RSTD]] : tensor<?x8xf16>, tensor<8xf16>, tensor<?xf32>
// CHECK-NEXT: %[[INVH:[^ ]+]] = ls2.constant dense<1.250000e-01> : tensor<f32>
// CHECK-NEXT: %[[M1:[^ ]+]] = ls2.mul %[[DMEAN]], %[[INVH]] : tensor<?xf32>, tensor<f32>
// CHECK-NEXT: %[[FROM_MEAN:[^ ]+]] = ls2.broadcast %[[M1]][%[[T]]] {dims = array<i64: 0>} : tensor<?xf32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[R2:[^ ]+]] = ls2.mul %[[RSTD]], %[[RSTD]] : tensor<?xf32>
// CHECK-NEXT: %[[R3:[^ ]+]] = ls2.mul %[[R2]], %[[RSTD]] : tensor<?xf32>
// CHECK-NEXT: %[[C0:[^ ]+]] = ls2.mul %[[DRSTD]], %[[R3]] : tensor<?xf32>
// CHECK-NEXT: %[[C1:[^ ]+]] = ls2.mul %[[C0]], %[[INVH]] : tensor<?xf32>, tensor<f32>
// CHECK-NEXT: %[[COEF:[^ ]+]] = ls2.neg %[[C1]] : tensor<?xf32>
// CHECK-NEXT: %[[X32:[^ ]+]] = ls2.cast %[[X]] : tensor<?x8xf16> to tensor<?x8xf32>
// CHECK-NEXT: %[[BMEAN:[^ ]+]] = ls2.broadcast %[[MEAN]][%[[T]]] {dims = array<i64: 0>} : tensor<?xf32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[XC:[^ ]+]] = ls2.sub %[[X32]], %[[BMEAN]] : tensor<?x8xf32>
// CHECK-NEXT: %[[BCOEF:[^ ]+]] = ls2.broadcast %[[COEF]][%[[T]]] {dims = array<i64: 0>} : tensor<?xf32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[FROM_RSTD:[^ ]+]] = ls2.mul %[[BCOEF]], %[[XC]] : tensor<?x8xf32>
// CHECK-NEXT: %[[STATS:[^ ]+]] = ls2.add %[[FROM_MEAN]], %[[FROM_RSTD]] : tensor<?x8xf32>
// CHECK-NEXT: %[[DX32:[^ ]+]] = ls2.cast %[[DX0]] : tensor<?x8xf16> to tensor<?x8xf32>
// CHECK-NEXT: %[[SUM:[^ ]+]] = ls2.add %[[DX32]], %[[STATS]] : tensor<?x8xf32>
// CHECK-NEXT: %[[DX:[^ ]+]] = ls2.cast %[[SUM]] : tensor<?x8xf32> to tensor<?x8xf16>
// CHECK-NEXT: return %{{.*}}, %[[DX]], %[[DG]], %[[DB]] :
module @layer_norm {
  func.func @forward(%x: tensor<?x8xf16> {ls2.kind = "parameter", ls2.name = "x"}, %g: tensor<8xf16> {ls2.kind = "parameter", ls2.name = "ln.weight"}, %b: tensor<8xf16> {ls2.kind = "parameter", ls2.name = "ln.bias"}) -> tensor<f32> {
    %y, %mean, %rstd = ls2.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f32} : tensor<?x8xf16>, tensor<8xf16>, tensor<8xf16>
    %0 = ls2.cast %y : tensor<?x8xf16> to tensor<?x8xf32>
    %1 = ls2.reduce_sum %0 [0, 1] : tensor<?x8xf32> -> tensor<f32>
    %2 = ls2.reduce_sum %rstd [0] : tensor<?xf32> -> tensor<f32>
    %3 = ls2.reduce_sum %mean [0] : tensor<?xf32> -> tensor<f32>
    %4 = ls2.add %1, %2 : tensor<f32>
    %l = ls2.add %4, %3 : tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// softmax -> softmax_grad from the output with the forward's scale (cast to
// the input type when the output type differs); an additive mask gets
// softmax_grad with scale 1 summed over its broadcast dim; an i1 mask none.
// CHECK-LABEL: module @softmax
// CHECK: func.func @forward_backward(%[[X:[^:]+]]: tensor<?x4x16x16xf16> {{.*}}, %[[BIAS:[^:]+]]: tensor<1x4x16x16xf16> {{.*}}, %[[KEEP:[^:]+]]: tensor<?x1x1x16xi1>
// CHECK-SAME: -> (tensor<f32> {ls2.kind = "loss"}, tensor<?x4x16x16xf16> {ls2.kind = "gradient", ls2.name = "x"}, tensor<1x4x16x16xf16> {ls2.kind = "gradient", ls2.name = "bias"})
// CHECK-NEXT: %[[P0:[^ ]+]] = ls2.softmax %[[X]] mask %[[BIAS]] : tensor<1x4x16x16xf16> {ls2.saved, scale = 2.500000e-01 : f32}
// CHECK-NEXT: %[[P1:[^ ]+]] = ls2.softmax %[[P0]] mask %[[KEEP]] : tensor<?x1x1x16xi1> {causal, ls2.saved}
// CHECK: %[[D1:[^ ]+]] = ls2.broadcast %{{.*}} -> tensor<?x4x16x16xf32>
// CHECK-NEXT: %[[G1:[^ ]+]] = ls2.softmax_grad %[[D1]], %[[P1]] : tensor<?x4x16x16xf32>
// CHECK-NEXT: %[[D0:[^ ]+]] = ls2.cast %[[G1]] : tensor<?x4x16x16xf32> to tensor<?x4x16x16xf16>
// CHECK-NEXT: %[[DX:[^ ]+]] = ls2.softmax_grad %[[D0]], %[[P0]] {scale = 2.500000e-01 : f32} : tensor<?x4x16x16xf16>
// CHECK-NEXT: %[[GM:[^ ]+]] = ls2.softmax_grad %[[D0]], %[[P0]] : tensor<?x4x16x16xf16>
// CHECK-NEXT: %[[DBIAS:[^ ]+]] = ls2.reduce_sum %[[GM]] [0] {keep_dims} : tensor<?x4x16x16xf16> -> tensor<1x4x16x16xf16>
// CHECK-NEXT: return %{{.*}}, %[[DX]], %[[DBIAS]] :
module @softmax {
  func.func @forward(%x: tensor<?x4x16x16xf16> {ls2.kind = "parameter", ls2.name = "x"}, %bias: tensor<1x4x16x16xf16> {ls2.kind = "parameter", ls2.name = "bias"}, %keep: tensor<?x1x1x16xi1> {ls2.kind = "input", ls2.name = "keep"}) -> tensor<f32> {
    %0 = ls2.softmax %x mask %bias : tensor<1x4x16x16xf16> {scale = 0.25 : f32} : tensor<?x4x16x16xf16> -> tensor<?x4x16x16xf16>
    %1 = ls2.softmax %0 mask %keep : tensor<?x1x1x16xi1> {causal} : tensor<?x4x16x16xf16> -> tensor<?x4x16x16xf32>
    %l = ls2.reduce_sum %1 [0, 1, 2, 3] : tensor<?x4x16x16xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// gelu -> gelu_grad from the input, with the same approximation.
// CHECK-LABEL: module @gelu
// CHECK: func.func @forward_backward(%[[X:[^:]+]]: tensor<?x8xbf16>
// CHECK-NEXT: %[[G0:[^ ]+]] = ls2.gelu %[[X]] {ls2.saved} : tensor<?x8xbf16>
// CHECK-NEXT: ls2.gelu %[[G0]] {approximate = #ls2<gelu_approximation tanh>} : tensor<?x8xbf16>
// CHECK: %[[DY:[^ ]+]] = ls2.cast %{{.*}} : tensor<?x8xf32> to tensor<?x8xbf16>
// CHECK-NEXT: %[[D0:[^ ]+]] = ls2.gelu_grad %[[DY]], %[[G0]] {approximate = #ls2<gelu_approximation tanh>} : tensor<?x8xbf16>
// CHECK-NEXT: %[[DX:[^ ]+]] = ls2.gelu_grad %[[D0]], %[[X]] : tensor<?x8xbf16>
// CHECK-NEXT: return %{{.*}}, %[[DX]]
module @gelu {
  func.func @forward(%x: tensor<?x8xbf16> {ls2.kind = "parameter", ls2.name = "x"}) -> tensor<f32> {
    %0 = ls2.gelu %x : tensor<?x8xbf16>
    %1 = ls2.gelu %0 {approximate = #ls2<gelu_approximation tanh>} : tensor<?x8xbf16>
    %2 = ls2.cast %1 : tensor<?x8xbf16> to tensor<?x8xf32>
    %l = ls2.reduce_sum %2 [0, 1] : tensor<?x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// attention -> attention_grad from out and lse with the forward's operands
// and attributes (GQA: k and v have 2 kv heads for 4 query heads).
// CHECK-LABEL: module @attention
// CHECK: func.func @forward_backward(%[[Q:[^:]+]]: tensor<?x4x16xf16> {{.*}}, %[[K:[^:]+]]: tensor<?x2x16xf16> {{.*}}, %[[V:[^:]+]]: tensor<?x2x16xf16> {{.*}}, %[[CU:[^:]+]]: tensor<?xi32> {{.*}}, %[[SEED:[^:]+]]: tensor<i64> {{.*}}, %[[OFFSET:[^:]+]]: tensor<i64>
// CHECK-NEXT: %[[O:[^ ]+]], %[[LSE:[^ ]+]] = ls2.attention %[[Q]], %[[K]], %[[V]], %[[CU]], %[[CU]] dropout(%[[SEED]], %[[OFFSET]]) {causal, dropout_rate = 1.000000e-01 : f32, ls2.saved, scale = 5.000000e-01 : f32, stream = 2 : i64}
// CHECK: %[[DO:[^ ]+]] = ls2.cast %{{.*}} : tensor<?x4x16xf32> to tensor<?x4x16xf16>
// CHECK-NEXT: %[[DQ:[^ ]+]], %[[DK:[^ ]+]], %[[DV:[^ ]+]] = ls2.attention_grad %[[DO]], %[[Q]], %[[K]], %[[V]], %[[O]], %[[LSE]], %[[CU]], %[[CU]] dropout(%[[SEED]], %[[OFFSET]]) {causal, dropout_rate = 1.000000e-01 : f32, scale = 5.000000e-01 : f32, stream = 2 : i64} : tensor<?x4x16xf16>, tensor<?x2x16xf16>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>
// CHECK-NEXT: return %{{.*}}, %[[DQ]], %[[DK]], %[[DV]] :
module @attention {
  func.func @forward(%q: tensor<?x4x16xf16> {ls2.kind = "parameter", ls2.name = "q"}, %k: tensor<?x2x16xf16> {ls2.kind = "parameter", ls2.name = "k"}, %v: tensor<?x2x16xf16> {ls2.kind = "parameter", ls2.name = "v"}, %cu: tensor<?xi32> {ls2.kind = "input", ls2.name = "cu_seqlens"}, %seed: tensor<i64> {ls2.kind = "input", ls2.name = "dropout_seed"}, %offset: tensor<i64> {ls2.kind = "input", ls2.name = "dropout_offset"}) -> tensor<f32> {
    %o, %lse = ls2.attention %q, %k, %v, %cu, %cu dropout(%seed, %offset) {causal, dropout_rate = 0.1 : f32, scale = 0.5 : f32, stream = 2 : i64} : tensor<?x4x16xf16>, tensor<?x2x16xf16>, tensor<?x2x16xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4x16xf16>, tensor<?x4xf32>
    %0 = ls2.cast %o : tensor<?x4x16xf16> to tensor<?x4x16xf32>
    %l = ls2.reduce_sum %0 [0, 1, 2] : tensor<?x4x16xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// cross_entropy -> cross_entropy_grad from the logits with the forward's
// attributes; with reduction none dloss is per row.
// CHECK-LABEL: module @cross_entropy
// CHECK: func.func @forward_backward(%[[X:[^:]+]]: tensor<?x10xbf16> {{.*}}, %[[T:[^:]+]]: tensor<?xi64>
// CHECK: %[[DL:[^ ]+]] = ls2.broadcast %{{.*}} -> tensor<?xf32>
// CHECK-NEXT: %[[DX:[^ ]+]] = ls2.cross_entropy_grad %[[DL]], %[[X]], %[[T]] {ignore_index = 0 : i64, label_smoothing = 1.000000e-01 : f32, reduction = #ls2<loss_reduction none>} : tensor<?xf32>, tensor<?x10xbf16>, tensor<?xi64>
// CHECK-NEXT: return %{{.*}}, %[[DX]]
module @cross_entropy {
  func.func @forward(%x: tensor<?x10xbf16> {ls2.kind = "parameter", ls2.name = "x"}, %t: tensor<?xi64> {ls2.kind = "input", ls2.name = "labels"}) -> tensor<f32> {
    %0 = ls2.cross_entropy %x, %t {label_smoothing = 0.1 : f32, ignore_index = 0 : i64, reduction = #ls2<loss_reduction none>} : tensor<?x10xbf16>, tensor<?xi64> -> tensor<?xf32>
    %l = ls2.reduce_sum %0 [0] : tensor<?xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
