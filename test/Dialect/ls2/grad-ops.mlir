// RUN: ls2c-opt %s | ls2c-opt | FileCheck %s
// RUN: ls2c-opt %s --mlir-print-op-generic | ls2c-opt | FileCheck %s

// Round trip of the backward composites through their custom and generic
// syntax: each element type they accept, dynamic token dims, every
// optional operand, attribute and default.

// CHECK-LABEL: func.func @layer_norm_grad(
// CHECK-SAME: %[[DY:[^ ,]+]]: tensor<?x768xf16>, %[[X:[^ ,]+]]: tensor<?x768xf16>, %[[G:[^ ,]+]]: tensor<768xf16>, %[[M:[^ ,]+]]: tensor<?xf32>, %[[R:[^ ,]+]]: tensor<?xf32>,
// CHECK-SAME: %[[DY3:[^ ,]+]]: tensor<4x?x64xf32>, %[[X3:[^ ,]+]]: tensor<4x?x64xf32>, %[[G3:[^ ,]+]]: tensor<64xf32>, %[[S3:[^ ,]+]]: tensor<4x?xf32>)
// CHECK-NEXT: %[[DX:[^ ,]+]], %[[DG:[^ ,]+]], %[[DB:[^ ,]+]] = ls2.layer_norm_grad %[[DY]], %[[X]], %[[G]], %[[M]], %[[R]] : tensor<?x768xf16>, tensor<768xf16>, tensor<?xf32>
// CHECK-NEXT: %[[DX3:[^ ,]+]], %[[DG3:[^ ,]+]], %[[DB3:[^ ,]+]] = ls2.layer_norm_grad %[[DY3]], %[[X3]], %[[G3]], %[[S3]], %[[S3]] : tensor<4x?x64xf32>, tensor<64xf32>, tensor<4x?xf32>
// CHECK-NEXT: return %[[DX]], %[[DG]], %[[DB]], %[[DX3]], %[[DG3]], %[[DB3]] : tensor<?x768xf16>, tensor<768xf16>, tensor<768xf16>, tensor<4x?x64xf32>, tensor<64xf32>, tensor<64xf32>
func.func @layer_norm_grad(%dy: tensor<?x768xf16>, %x: tensor<?x768xf16>, %g: tensor<768xf16>, %m: tensor<?xf32>, %r: tensor<?xf32>, %dy3: tensor<4x?x64xf32>, %x3: tensor<4x?x64xf32>, %g3: tensor<64xf32>, %s3: tensor<4x?xf32>) -> (tensor<?x768xf16>, tensor<768xf16>, tensor<768xf16>, tensor<4x?x64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %dx, %dg, %db = ls2.layer_norm_grad %dy, %x, %g, %m, %r : tensor<?x768xf16>, tensor<768xf16>, tensor<?xf32>
  %dx3, %dg3, %db3 = ls2.layer_norm_grad %dy3, %x3, %g3, %s3, %s3 : tensor<4x?x64xf32>, tensor<64xf32>, tensor<4x?xf32>
  return %dx, %dg, %db, %dx3, %dg3, %db3 : tensor<?x768xf16>, tensor<768xf16>, tensor<768xf16>, tensor<4x?x64xf32>, tensor<64xf32>, tensor<64xf32>
}

// The default scale (1.0) is not printed.
// CHECK-LABEL: func.func @softmax_grad(
// CHECK-SAME: %[[DY:[^ ,]+]]: tensor<?x12x128x128xbf16>, %[[Y:[^ ,]+]]: tensor<?x12x128x128xbf16>, %[[DY2:[^ ,]+]]: tensor<?x100xf32>, %[[Y2:[^ ,]+]]: tensor<?x100xf32>)
// CHECK-NEXT: %[[A:[^ ,]+]] = ls2.softmax_grad %[[DY]], %[[Y]] {scale = 1.250000e-01 : f32} : tensor<?x12x128x128xbf16>
// CHECK-NEXT: %[[B:[^ ,]+]] = ls2.softmax_grad %[[DY2]], %[[Y2]] : tensor<?x100xf32>
// CHECK-NEXT: return %[[A]], %[[B]] : tensor<?x12x128x128xbf16>, tensor<?x100xf32>
func.func @softmax_grad(%dy: tensor<?x12x128x128xbf16>, %y: tensor<?x12x128x128xbf16>, %dy2: tensor<?x100xf32>, %y2: tensor<?x100xf32>) -> (tensor<?x12x128x128xbf16>, tensor<?x100xf32>) {
  %0 = ls2.softmax_grad %dy, %y {scale = 0.125 : f32} : tensor<?x12x128x128xbf16>
  %1 = ls2.softmax_grad %dy2, %y2 {scale = 1.0 : f32} : tensor<?x100xf32>
  return %0, %1 : tensor<?x12x128x128xbf16>, tensor<?x100xf32>
}

// CHECK-LABEL: func.func @gelu_grad(
// CHECK-SAME: %[[DY:[^ ,]+]]: tensor<?x3072xf16>, %[[X:[^ ,]+]]: tensor<?x3072xf16>)
// CHECK-NEXT: %[[A:[^ ,]+]] = ls2.gelu_grad %[[DY]], %[[X]] : tensor<?x3072xf16>
// CHECK-NEXT: %[[B:[^ ,]+]] = ls2.gelu_grad %[[DY]], %[[X]] {approximate = #ls2<gelu_approximation tanh>} : tensor<?x3072xf16>
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @gelu_grad(%dy: tensor<?x3072xf16>, %x: tensor<?x3072xf16>) -> (tensor<?x3072xf16>, tensor<?x3072xf16>) {
  %0 = ls2.gelu_grad %dy, %x {approximate = #ls2<gelu_approximation none>} : tensor<?x3072xf16>
  %1 = ls2.gelu_grad %dy, %x {approximate = #ls2<gelu_approximation tanh>} : tensor<?x3072xf16>
  return %0, %1 : tensor<?x3072xf16>, tensor<?x3072xf16>
}

// CHECK-LABEL: func.func @cross_entropy_grad(
// CHECK-SAME: %[[DL:[^ ,]+]]: tensor<f32>, %[[DN:[^ ,]+]]: tensor<?xf32>, %[[X:[^ ,]+]]: tensor<?x50257xbf16>, %[[T:[^ ,]+]]: tensor<?xi32>, %[[T64:[^ ,]+]]: tensor<?xi64>)
// CHECK-NEXT: %[[A:[^ ,]+]] = ls2.cross_entropy_grad %[[DL]], %[[X]], %[[T]] : tensor<f32>, tensor<?x50257xbf16>, tensor<?xi32>
// CHECK-NEXT: %[[B:[^ ,]+]] = ls2.cross_entropy_grad %[[DL]], %[[X]], %[[T64]] {ignore_index = 0 : i64, label_smoothing = 1.000000e-01 : f32, reduction = #ls2<loss_reduction sum>} : tensor<f32>, tensor<?x50257xbf16>, tensor<?xi64>
// CHECK-NEXT: %[[C:[^ ,]+]] = ls2.cross_entropy_grad %[[DN]], %[[X]], %[[T]] {reduction = #ls2<loss_reduction none>} : tensor<?xf32>, tensor<?x50257xbf16>, tensor<?xi32>
// CHECK-NEXT: return %[[A]], %[[B]], %[[C]]
func.func @cross_entropy_grad(%dl: tensor<f32>, %dn: tensor<?xf32>, %x: tensor<?x50257xbf16>, %t: tensor<?xi32>, %t64: tensor<?xi64>) -> (tensor<?x50257xbf16>, tensor<?x50257xbf16>, tensor<?x50257xbf16>) {
  %0 = ls2.cross_entropy_grad %dl, %x, %t {ignore_index = -100 : i64, label_smoothing = 0.0 : f32, reduction = #ls2<loss_reduction mean>} : tensor<f32>, tensor<?x50257xbf16>, tensor<?xi32>
  %1 = ls2.cross_entropy_grad %dl, %x, %t64 {ignore_index = 0 : i64, label_smoothing = 0.1 : f32, reduction = #ls2<loss_reduction sum>} : tensor<f32>, tensor<?x50257xbf16>, tensor<?xi64>
  %2 = ls2.cross_entropy_grad %dn, %x, %t {reduction = #ls2<loss_reduction none>} : tensor<?xf32>, tensor<?x50257xbf16>, tensor<?xi32>
  return %0, %1, %2 : tensor<?x50257xbf16>, tensor<?x50257xbf16>, tensor<?x50257xbf16>
}

// CHECK-LABEL: func.func @attention_grad(
// CHECK-SAME: %[[DO:[^ ,]+]]: tensor<?x12x64xf16>, %[[Q:[^ ,]+]]: tensor<?x12x64xf16>, %[[K:[^ ,]+]]: tensor<?x12x64xf16>, %[[V:[^ ,]+]]: tensor<?x12x64xf16>, %[[O:[^ ,]+]]: tensor<?x12x64xf16>, %[[LSE:[^ ,]+]]: tensor<?x12xf32>, %[[CUQ:[^ ,]+]]: tensor<?xi32>, %[[CUK:[^ ,]+]]: tensor<?xi32>, %[[SEED:[^ ,]+]]: tensor<i64>, %[[OFFSET:[^ ,]+]]: tensor<i64>)
// CHECK-NEXT: %[[DQ:[^ ,]+]], %[[DK:[^ ,]+]], %[[DV:[^ ,]+]] = ls2.attention_grad %[[DO]], %[[Q]], %[[K]], %[[V]], %[[O]], %[[LSE]], %[[CUQ]], %[[CUK]] : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12xf32>, tensor<?xi32>, tensor<?xi32>
// CHECK-NEXT: %[[DQ1:[^ ,]+]], %[[DK1:[^ ,]+]], %[[DV1:[^ ,]+]] = ls2.attention_grad %[[DO]], %[[Q]], %[[K]], %[[V]], %[[O]], %[[LSE]], %[[CUQ]], %[[CUK]] dropout(%[[SEED]], %[[OFFSET]])
// CHECK-SAME: {causal, dropout_rate = 1.000000e-01 : f32, scale = 1.250000e-01 : f32, stream = 3 : i64} : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12xf32>, tensor<?xi32>, tensor<?xi32>
// CHECK-NEXT: return %[[DQ]], %[[DK]], %[[DV]], %[[DQ1]], %[[DK1]], %[[DV1]]
func.func @attention_grad(%do: tensor<?x12x64xf16>, %q: tensor<?x12x64xf16>, %k: tensor<?x12x64xf16>, %v: tensor<?x12x64xf16>, %o: tensor<?x12x64xf16>, %lse: tensor<?x12xf32>, %cuq: tensor<?xi32>, %cuk: tensor<?xi32>, %seed: tensor<i64>, %offset: tensor<i64>) -> (tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>) {
  %dq, %dk, %dv = ls2.attention_grad %do, %q, %k, %v, %o, %lse, %cuq, %cuk : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12xf32>, tensor<?xi32>, tensor<?xi32>
  %dq1, %dk1, %dv1 = ls2.attention_grad %do, %q, %k, %v, %o, %lse, %cuq, %cuk dropout(%seed, %offset) {causal, dropout_rate = 0.1 : f32, scale = 0.125 : f32, stream = 3 : i64} : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12xf32>, tensor<?xi32>, tensor<?xi32>
  return %dq, %dk, %dv, %dq1, %dk1, %dv1 : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>
}

// Grouped-query attention: dk and dv have the kv heads' shape.
// CHECK-LABEL: func.func @attention_grad_gqa(
// CHECK-NEXT: ls2.attention_grad %{{.*}} : tensor<?x32x128xbf16>, tensor<?x8x128xbf16>, tensor<?x32xf32>, tensor<5xi32>, tensor<5xi32>
func.func @attention_grad_gqa(%do: tensor<?x32x128xbf16>, %q: tensor<?x32x128xbf16>, %k: tensor<?x8x128xbf16>, %v: tensor<?x8x128xbf16>, %o: tensor<?x32x128xbf16>, %lse: tensor<?x32xf32>, %cu: tensor<5xi32>) -> (tensor<?x32x128xbf16>, tensor<?x8x128xbf16>, tensor<?x8x128xbf16>) {
  %dq, %dk, %dv = ls2.attention_grad %do, %q, %k, %v, %o, %lse, %cu, %cu {causal} : tensor<?x32x128xbf16>, tensor<?x8x128xbf16>, tensor<?x32xf32>, tensor<5xi32>, tensor<5xi32>
  return %dq, %dk, %dv : tensor<?x32x128xbf16>, tensor<?x8x128xbf16>, tensor<?x8x128xbf16>
}
