// RUN: ls2c-opt %s --ls2-decompose | FileCheck %s
// RUN: ls2c-opt %s --ls2-decompose | FileCheck %s --check-prefix=ONLY-ATTENTION

// ls2-decompose lowers the backward composites layer_norm_grad,
// softmax_grad, gelu_grad and cross_entropy_grad into primitives, computing
// in f32 (so the CPU reference can check them against their
// decompositions); attention_grad stays opaque. Rank-0 constants are hoisted
// and uniqued by the greedy driver, hence CHECK-DAG for them.

// ONLY-ATTENTION-NOT: ls2.{{(gelu|layer_norm|softmax|cross_entropy)_grad}}
// ONLY-ATTENTION: ls2.attention_grad
// ONLY-ATTENTION-NOT: ls2.{{(gelu|layer_norm|softmax|cross_entropy)_grad}}

// gelu_grad (erf form): dy * (Phi(x) + x phi(x)), Phi(x) = 0.5 (1 + erf(x / sqrt 2)),
// phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
// CHECK-LABEL: func.func @gelu_grad_erf(
// CHECK-SAME: %[[DY:[^ ,]+]]: tensor<?x3072xf32>, %[[X:[^ ,]+]]: tensor<?x3072xf32>)
// CHECK-DAG: %[[INV_SQRT_2PI:[^ ,]+]] = ls2.constant dense<0.398942292> : tensor<f32>
// CHECK-DAG: %[[MHALF:[^ ,]+]] = ls2.constant dense<-5.000000e-01> : tensor<f32>
// CHECK-DAG: %[[ONE:[^ ,]+]] = ls2.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[HALF:[^ ,]+]] = ls2.constant dense<5.000000e-01> : tensor<f32>
// CHECK-DAG: %[[RSQRT2:[^ ,]+]] = ls2.constant dense<0.707106769> : tensor<f32>
// CHECK: %[[A:[^ ,]+]] = ls2.mul %[[X]], %[[RSQRT2]] : tensor<?x3072xf32>, tensor<f32>
// CHECK-NEXT: %[[ERF:[^ ,]+]] = ls2.erf %[[A]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[B:[^ ,]+]] = ls2.add %[[ERF]], %[[ONE]] : tensor<?x3072xf32>, tensor<f32>
// CHECK-NEXT: %[[CDF:[^ ,]+]] = ls2.mul %[[B]], %[[HALF]] : tensor<?x3072xf32>, tensor<f32>
// CHECK-NEXT: %[[X2:[^ ,]+]] = ls2.mul %[[X]], %[[X]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[C:[^ ,]+]] = ls2.mul %[[X2]], %[[MHALF]] : tensor<?x3072xf32>, tensor<f32>
// CHECK-NEXT: %[[E:[^ ,]+]] = ls2.exp %[[C]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[PDF:[^ ,]+]] = ls2.mul %[[E]], %[[INV_SQRT_2PI]] : tensor<?x3072xf32>, tensor<f32>
// CHECK-NEXT: %[[XPDF:[^ ,]+]] = ls2.mul %[[X]], %[[PDF]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[D:[^ ,]+]] = ls2.add %[[CDF]], %[[XPDF]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[DX:[^ ,]+]] = ls2.mul %[[DY]], %[[D]] : tensor<?x3072xf32>
// CHECK-NEXT: return %[[DX]] : tensor<?x3072xf32>
func.func @gelu_grad_erf(%dy: tensor<?x3072xf32>, %x: tensor<?x3072xf32>) -> tensor<?x3072xf32> {
  %0 = ls2.gelu_grad %dy, %x : tensor<?x3072xf32>
  return %0 : tensor<?x3072xf32>
}

// gelu_grad (tanh form), in f32: with t = tanh(k (x + c x^3)),
// 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2), k = sqrt(2/pi), c = 0.044715.
// CHECK-LABEL: func.func @gelu_grad_tanh_bf16(
// CHECK-SAME: %[[DY:[^ ,]+]]: tensor<?x3072xbf16>, %[[X:[^ ,]+]]: tensor<?x3072xbf16>)
// CHECK-DAG: %[[C3:[^ ,]+]] = ls2.constant dense<1.341450e-01> : tensor<f32>
// CHECK-DAG: %[[ONE:[^ ,]+]] = ls2.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[K:[^ ,]+]] = ls2.constant dense<0.797884583> : tensor<f32>
// CHECK-DAG: %[[C:[^ ,]+]] = ls2.constant dense<4.471500e-02> : tensor<f32>
// CHECK-DAG: %[[HALF:[^ ,]+]] = ls2.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[X32:[^ ,]+]] = ls2.cast %[[X]] : tensor<?x3072xbf16> to tensor<?x3072xf32>
// CHECK-NEXT: %[[DY32:[^ ,]+]] = ls2.cast %[[DY]] : tensor<?x3072xbf16> to tensor<?x3072xf32>
// CHECK-NEXT: %[[X2:[^ ,]+]] = ls2.mul %[[X32]], %[[X32]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[X3:[^ ,]+]] = ls2.mul %[[X2]], %[[X32]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[CX3:[^ ,]+]] = ls2.mul %[[X3]], %[[C]] : tensor<?x3072xf32>, tensor<f32>
// CHECK-NEXT: %[[POLY:[^ ,]+]] = ls2.add %[[X32]], %[[CX3]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[U:[^ ,]+]] = ls2.mul %[[POLY]], %[[K]] : tensor<?x3072xf32>, tensor<f32>
// CHECK-NEXT: %[[T:[^ ,]+]] = ls2.tanh %[[U]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[T1:[^ ,]+]] = ls2.add %[[T]], %[[ONE]] : tensor<?x3072xf32>, tensor<f32>
// CHECK-NEXT: %[[LEFT:[^ ,]+]] = ls2.mul %[[T1]], %[[HALF]] : tensor<?x3072xf32>, tensor<f32>
// CHECK-NEXT: %[[T2:[^ ,]+]] = ls2.mul %[[T]], %[[T]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[SECH2:[^ ,]+]] = ls2.sub %[[ONE]], %[[T2]] : tensor<f32>, tensor<?x3072xf32>
// CHECK-NEXT: %[[Q:[^ ,]+]] = ls2.mul %[[X2]], %[[C3]] : tensor<?x3072xf32>, tensor<f32>
// CHECK-NEXT: %[[Q1:[^ ,]+]] = ls2.add %[[Q]], %[[ONE]] : tensor<?x3072xf32>, tensor<f32>
// CHECK-NEXT: %[[DU:[^ ,]+]] = ls2.mul %[[Q1]], %[[K]] : tensor<?x3072xf32>, tensor<f32>
// CHECK-NEXT: %[[HX:[^ ,]+]] = ls2.mul %[[X32]], %[[HALF]] : tensor<?x3072xf32>, tensor<f32>
// CHECK-NEXT: %[[R0:[^ ,]+]] = ls2.mul %[[HX]], %[[SECH2]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[RIGHT:[^ ,]+]] = ls2.mul %[[R0]], %[[DU]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[D:[^ ,]+]] = ls2.add %[[LEFT]], %[[RIGHT]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[DX32:[^ ,]+]] = ls2.mul %[[DY32]], %[[D]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[DX:[^ ,]+]] = ls2.cast %[[DX32]] : tensor<?x3072xf32> to tensor<?x3072xbf16>
// CHECK-NEXT: return %[[DX]] : tensor<?x3072xbf16>
func.func @gelu_grad_tanh_bf16(%dy: tensor<?x3072xbf16>, %x: tensor<?x3072xbf16>) -> tensor<?x3072xbf16> {
  %0 = ls2.gelu_grad %dy, %x {approximate = #ls2<gelu_approximation tanh>} : tensor<?x3072xbf16>
  return %0 : tensor<?x3072xbf16>
}

// layer_norm_grad in f32 from the saved statistics: xhat = (x - mean) rstd,
// g = dy gamma, dx = rstd (g - mean(g) - xhat mean(g xhat)), dgamma and
// dbeta summed over the rows; results rounded once.
// CHECK-LABEL: func.func @layer_norm_grad(
// CHECK-SAME: %[[DY:[^ ,]+]]: tensor<?x768xf16>, %[[X:[^ ,]+]]: tensor<?x768xf16>, %[[G:[^ ,]+]]: tensor<768xf16>, %[[MEAN:[^ ,]+]]: tensor<?xf32>, %[[RSTD:[^ ,]+]]: tensor<?xf32>)
// CHECK: %[[H:[^ ,]+]] = ls2.constant dense<7.680000e+02> : tensor<f32>
// CHECK-NEXT: %[[T:[^ ,]+]] = ls2.dim %[[X]][0] : tensor<?x768xf16>
// CHECK-NEXT: %[[X32:[^ ,]+]] = ls2.cast %[[X]] : tensor<?x768xf16> to tensor<?x768xf32>
// CHECK-NEXT: %[[DY32:[^ ,]+]] = ls2.cast %[[DY]] : tensor<?x768xf16> to tensor<?x768xf32>
// CHECK-NEXT: %[[BR:[^ ,]+]] = ls2.broadcast %[[RSTD]][%[[T]]] {dims = array<i64: 0>} : tensor<?xf32> -> tensor<?x768xf32>
// CHECK-NEXT: %[[BM:[^ ,]+]] = ls2.broadcast %[[MEAN]][%[[T]]] {dims = array<i64: 0>} : tensor<?xf32> -> tensor<?x768xf32>
// CHECK-NEXT: %[[XC:[^ ,]+]] = ls2.sub %[[X32]], %[[BM]] : tensor<?x768xf32>
// CHECK-NEXT: %[[XHAT:[^ ,]+]] = ls2.mul %[[XC]], %[[BR]] : tensor<?x768xf32>
// CHECK-NEXT: %[[G32:[^ ,]+]] = ls2.cast %[[G]] : tensor<768xf16> to tensor<768xf32>
// CHECK-NEXT: %[[BG:[^ ,]+]] = ls2.broadcast %[[G32]][%[[T]]] {dims = array<i64: 1>} : tensor<768xf32> -> tensor<?x768xf32>
// CHECK-NEXT: %[[GDY:[^ ,]+]] = ls2.mul %[[DY32]], %[[BG]] : tensor<?x768xf32>
// CHECK-NEXT: %[[S1:[^ ,]+]] = ls2.reduce_sum %[[GDY]] [1] : tensor<?x768xf32> -> tensor<?xf32>
// CHECK-NEXT: %[[M1:[^ ,]+]] = ls2.div %[[S1]], %[[H]] : tensor<?xf32>, tensor<f32>
// CHECK-NEXT: %[[P:[^ ,]+]] = ls2.mul %[[GDY]], %[[XHAT]] : tensor<?x768xf32>
// CHECK-NEXT: %[[S2:[^ ,]+]] = ls2.reduce_sum %[[P]] [1] : tensor<?x768xf32> -> tensor<?xf32>
// CHECK-NEXT: %[[M2:[^ ,]+]] = ls2.div %[[S2]], %[[H]] : tensor<?xf32>, tensor<f32>
// CHECK-NEXT: %[[BM1:[^ ,]+]] = ls2.broadcast %[[M1]][%[[T]]] {dims = array<i64: 0>} : tensor<?xf32> -> tensor<?x768xf32>
// CHECK-NEXT: %[[A:[^ ,]+]] = ls2.sub %[[GDY]], %[[BM1]] : tensor<?x768xf32>
// CHECK-NEXT: %[[BM2:[^ ,]+]] = ls2.broadcast %[[M2]][%[[T]]] {dims = array<i64: 0>} : tensor<?xf32> -> tensor<?x768xf32>
// CHECK-NEXT: %[[B:[^ ,]+]] = ls2.mul %[[XHAT]], %[[BM2]] : tensor<?x768xf32>
// CHECK-NEXT: %[[C:[^ ,]+]] = ls2.sub %[[A]], %[[B]] : tensor<?x768xf32>
// CHECK-NEXT: %[[DX32:[^ ,]+]] = ls2.mul %[[BR]], %[[C]] : tensor<?x768xf32>
// CHECK-NEXT: %[[DYXHAT:[^ ,]+]] = ls2.mul %[[DY32]], %[[XHAT]] : tensor<?x768xf32>
// CHECK-NEXT: %[[DG32:[^ ,]+]] = ls2.reduce_sum %[[DYXHAT]] [0] : tensor<?x768xf32> -> tensor<768xf32>
// CHECK-NEXT: %[[DB32:[^ ,]+]] = ls2.reduce_sum %[[DY32]] [0] : tensor<?x768xf32> -> tensor<768xf32>
// CHECK-NEXT: %[[DX:[^ ,]+]] = ls2.cast %[[DX32]] : tensor<?x768xf32> to tensor<?x768xf16>
// CHECK-NEXT: %[[DG:[^ ,]+]] = ls2.cast %[[DG32]] : tensor<768xf32> to tensor<768xf16>
// CHECK-NEXT: %[[DB:[^ ,]+]] = ls2.cast %[[DB32]] : tensor<768xf32> to tensor<768xf16>
// CHECK-NEXT: return %[[DX]], %[[DG]], %[[DB]] : tensor<?x768xf16>, tensor<768xf16>, tensor<768xf16>
func.func @layer_norm_grad(%dy: tensor<?x768xf16>, %x: tensor<?x768xf16>, %g: tensor<768xf16>, %m: tensor<?xf32>, %r: tensor<?xf32>) -> (tensor<?x768xf16>, tensor<768xf16>, tensor<768xf16>) {
  %dx, %dg, %db = ls2.layer_norm_grad %dy, %x, %g, %m, %r : tensor<?x768xf16>, tensor<768xf16>, tensor<?xf32>
  return %dx, %dg, %db : tensor<?x768xf16>, tensor<768xf16>, tensor<768xf16>
}

// A single row: rank-0 statistics are used as they are, and dgamma, dbeta
// need no sum over rows (dbeta is dy).
// CHECK-LABEL: func.func @layer_norm_grad_rank1(
// CHECK-SAME: %[[DY:[^ ,]+]]: tensor<64xf32>, %[[X:[^ ,]+]]: tensor<64xf32>, %[[G:[^ ,]+]]: tensor<64xf32>, %[[MEAN:[^ ,]+]]: tensor<f32>, %[[RSTD:[^ ,]+]]: tensor<f32>)
// CHECK: %[[XC:[^ ,]+]] = ls2.sub %[[X]], %[[MEAN]] : tensor<64xf32>, tensor<f32>
// CHECK-NEXT: %[[XHAT:[^ ,]+]] = ls2.mul %[[XC]], %[[RSTD]] : tensor<64xf32>, tensor<f32>
// CHECK: %[[DX:[^ ,]+]] = ls2.mul %[[RSTD]], %{{.*}} : tensor<f32>, tensor<64xf32>
// CHECK-NEXT: %[[DG:[^ ,]+]] = ls2.mul %[[DY]], %[[XHAT]] : tensor<64xf32>
// CHECK-NEXT: return %[[DX]], %[[DG]], %[[DY]] : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
func.func @layer_norm_grad_rank1(%dy: tensor<64xf32>, %x: tensor<64xf32>, %g: tensor<64xf32>, %m: tensor<f32>, %r: tensor<f32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %dx, %dg, %db = ls2.layer_norm_grad %dy, %x, %g, %m, %r : tensor<64xf32>, tensor<64xf32>, tensor<f32>
  return %dx, %dg, %db : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// softmax_grad in f32: scale * y * (dy - sum_last(dy * y)).
// CHECK-LABEL: func.func @softmax_grad(
// CHECK-SAME: %[[DY:[^ ,]+]]: tensor<?x12x128x128xf16>, %[[Y:[^ ,]+]]: tensor<?x12x128x128xf16>)
// CHECK: %[[SCALE:[^ ,]+]] = ls2.constant dense<1.250000e-01> : tensor<f32>
// CHECK-NEXT: %[[B:[^ ,]+]] = ls2.dim %[[Y]][0] : tensor<?x12x128x128xf16>
// CHECK-NEXT: %[[Y32:[^ ,]+]] = ls2.cast %[[Y]] : tensor<?x12x128x128xf16> to tensor<?x12x128x128xf32>
// CHECK-NEXT: %[[DY32:[^ ,]+]] = ls2.cast %[[DY]] : tensor<?x12x128x128xf16> to tensor<?x12x128x128xf32>
// CHECK-NEXT: %[[P:[^ ,]+]] = ls2.mul %[[DY32]], %[[Y32]] : tensor<?x12x128x128xf32>
// CHECK-NEXT: %[[S:[^ ,]+]] = ls2.reduce_sum %[[P]] [3] {keep_dims} : tensor<?x12x128x128xf32> -> tensor<?x12x128x1xf32>
// CHECK-NEXT: %[[BS:[^ ,]+]] = ls2.broadcast %[[S]][%[[B]]] {dims = array<i64: 0, 1, 2, 3>} : tensor<?x12x128x1xf32> -> tensor<?x12x128x128xf32>
// CHECK-NEXT: %[[D:[^ ,]+]] = ls2.sub %[[DY32]], %[[BS]] : tensor<?x12x128x128xf32>
// CHECK-NEXT: %[[YD:[^ ,]+]] = ls2.mul %[[Y32]], %[[D]] : tensor<?x12x128x128xf32>
// CHECK-NEXT: %[[DX32:[^ ,]+]] = ls2.mul %[[YD]], %[[SCALE]] : tensor<?x12x128x128xf32>, tensor<f32>
// CHECK-NEXT: %[[DX:[^ ,]+]] = ls2.cast %[[DX32]] : tensor<?x12x128x128xf32> to tensor<?x12x128x128xf16>
// CHECK-NEXT: return %[[DX]] : tensor<?x12x128x128xf16>
func.func @softmax_grad(%dy: tensor<?x12x128x128xf16>, %y: tensor<?x12x128x128xf16>) -> tensor<?x12x128x128xf16> {
  %0 = ls2.softmax_grad %dy, %y {scale = 0.125 : f32} : tensor<?x12x128x128xf16>
  return %0 : tensor<?x12x128x128xf16>
}

// cross_entropy_grad (mean, label smoothing 0.1, C = 100): the softmax
// recomputed from the logits, minus q = 0.9 onehot + 0.001 (0.901 on the
// target, 0.001 elsewhere), times dloss / max(count, 1) on non-ignored rows.
// CHECK-LABEL: func.func @cross_entropy_grad(
// CHECK-SAME: %[[DL:[^ ,]+]]: tensor<f32>, %[[X:[^ ,]+]]: tensor<?x100xf32>, %[[T:[^ ,]+]]: tensor<?xi32>)
// CHECK-DAG: %[[ZERO:[^ ,]+]] = ls2.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[ONE:[^ ,]+]] = ls2.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[IGNORE:[^ ,]+]] = ls2.constant dense<-100> : tensor<i32>
// CHECK-DAG: %[[OFF:[^ ,]+]] = ls2.constant dense<1.000000e-03> : tensor<f32>
// CHECK-DAG: %[[ON:[^ ,]+]] = ls2.constant dense<9.010000e-01> : tensor<f32>
// CHECK: %[[N:[^ ,]+]] = ls2.dim %[[X]][0] : tensor<?x100xf32>
// CHECK-NEXT: %[[MAX:[^ ,]+]] = ls2.reduce_max %[[X]] [1] : tensor<?x100xf32> -> tensor<?xf32>
// CHECK-NEXT: %[[BMAX:[^ ,]+]] = ls2.broadcast %[[MAX]][%[[N]]] {dims = array<i64: 0>}
// CHECK-NEXT: %[[XS:[^ ,]+]] = ls2.sub %[[X]], %[[BMAX]] : tensor<?x100xf32>
// CHECK-NEXT: %[[E:[^ ,]+]] = ls2.exp %[[XS]] : tensor<?x100xf32>
// CHECK-NEXT: %[[SUM:[^ ,]+]] = ls2.reduce_sum %[[E]] [1] : tensor<?x100xf32> -> tensor<?xf32>
// CHECK-NEXT: %[[BSUM:[^ ,]+]] = ls2.broadcast %[[SUM]][%[[N]]] {dims = array<i64: 0>}
// CHECK-NEXT: %[[P:[^ ,]+]] = ls2.div %[[E]], %[[BSUM]] : tensor<?x100xf32>
// CHECK-NEXT: %[[CLASSES:[^ ,]+]] = ls2.iota[%[[N]]] {dimension = 1 : i64} : tensor<?x100xi32>
// CHECK-NEXT: %[[BT:[^ ,]+]] = ls2.broadcast %[[T]][%[[N]]] {dims = array<i64: 0>} : tensor<?xi32> -> tensor<?x100xi32>
// CHECK-NEXT: %[[HIT:[^ ,]+]] = ls2.compare eq, %[[CLASSES]], %[[BT]] : tensor<?x100xi32>
// CHECK-NEXT: %[[Q:[^ ,]+]] = ls2.select %[[HIT]], %[[ON]], %[[OFF]] : tensor<?x100xi1>, tensor<f32>, tensor<f32>
// CHECK-NEXT: %[[D:[^ ,]+]] = ls2.sub %[[P]], %[[Q]] : tensor<?x100xf32>
// CHECK-NEXT: %[[VALID:[^ ,]+]] = ls2.compare ne, %[[T]], %[[IGNORE]] : tensor<?xi32>, tensor<i32>
// CHECK-NEXT: %[[VF:[^ ,]+]] = ls2.cast %[[VALID]] : tensor<?xi1> to tensor<?xf32>
// CHECK-NEXT: %[[COUNT:[^ ,]+]] = ls2.reduce_sum %[[VF]] [0] : tensor<?xf32> -> tensor<f32>
// CHECK-NEXT: %[[DENOM:[^ ,]+]] = ls2.max %[[COUNT]], %[[ONE]] : tensor<f32>
// CHECK-NEXT: %[[W:[^ ,]+]] = ls2.div %[[DL]], %[[DENOM]] : tensor<f32>
// CHECK-NEXT: %[[RW:[^ ,]+]] = ls2.select %[[VALID]], %[[W]], %[[ZERO]] : tensor<?xi1>, tensor<f32>, tensor<f32>
// CHECK-NEXT: %[[BRW:[^ ,]+]] = ls2.broadcast %[[RW]][%[[N]]] {dims = array<i64: 0>} : tensor<?xf32> -> tensor<?x100xf32>
// CHECK-NEXT: %[[DX:[^ ,]+]] = ls2.mul %[[D]], %[[BRW]] : tensor<?x100xf32>
// CHECK-NEXT: return %[[DX]] : tensor<?x100xf32>
func.func @cross_entropy_grad(%dl: tensor<f32>, %x: tensor<?x100xf32>, %t: tensor<?xi32>) -> tensor<?x100xf32> {
  %0 = ls2.cross_entropy_grad %dl, %x, %t {label_smoothing = 0.1 : f32} : tensor<f32>, tensor<?x100xf32>, tensor<?xi32>
  return %0 : tensor<?x100xf32>
}

// Reduction none: each row is weighted by its own dloss; bf16 logits are
// computed in f32 and the result rounded once.
// CHECK-LABEL: func.func @cross_entropy_grad_none(
// CHECK-SAME: %[[DL:[^ ,]+]]: tensor<?xf32>, %[[X:[^ ,]+]]: tensor<?x100xbf16>, %[[T:[^ ,]+]]: tensor<?xi64>)
// CHECK-DAG: %[[IGNORE:[^ ,]+]] = ls2.constant dense<0> : tensor<i64>
// CHECK-DAG: %[[ZERO:[^ ,]+]] = ls2.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[ONE:[^ ,]+]] = ls2.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[X32:[^ ,]+]] = ls2.cast %[[X]] : tensor<?x100xbf16> to tensor<?x100xf32>
// CHECK: %[[Q:[^ ,]+]] = ls2.select %{{.*}}, %[[ONE]], %[[ZERO]] : tensor<?x100xi1>, tensor<f32>, tensor<f32>
// CHECK-NEXT: %[[D:[^ ,]+]] = ls2.sub %{{.*}}, %[[Q]] : tensor<?x100xf32>
// CHECK-NEXT: %[[VALID:[^ ,]+]] = ls2.compare ne, %[[T]], %[[IGNORE]] : tensor<?xi64>, tensor<i64>
// CHECK-NEXT: %[[RW:[^ ,]+]] = ls2.select %[[VALID]], %[[DL]], %[[ZERO]] : tensor<?xi1>, tensor<?xf32>, tensor<f32>
// CHECK-NEXT: %[[BRW:[^ ,]+]] = ls2.broadcast %[[RW]][%{{.*}}] {dims = array<i64: 0>} : tensor<?xf32> -> tensor<?x100xf32>
// CHECK-NEXT: %[[DX32:[^ ,]+]] = ls2.mul %[[D]], %[[BRW]] : tensor<?x100xf32>
// CHECK-NEXT: %[[DX:[^ ,]+]] = ls2.cast %[[DX32]] : tensor<?x100xf32> to tensor<?x100xbf16>
// CHECK-NEXT: return %[[DX]] : tensor<?x100xbf16>
func.func @cross_entropy_grad_none(%dl: tensor<?xf32>, %x: tensor<?x100xbf16>, %t: tensor<?xi64>) -> tensor<?x100xbf16> {
  %0 = ls2.cross_entropy_grad %dl, %x, %t {ignore_index = 0 : i64, reduction = #ls2<loss_reduction none>} : tensor<?xf32>, tensor<?x100xbf16>, tensor<?xi64>
  return %0 : tensor<?x100xbf16>
}

// attention_grad stays opaque, as attention does.
// CHECK-LABEL: func.func @attention_grad(
// CHECK-NEXT: %[[DQ:[^ ,]+]], %{{.*}}, %{{.*}} = ls2.attention_grad
// CHECK-NEXT: return %[[DQ]]
func.func @attention_grad(%q: tensor<?x12x64xf16>, %lse: tensor<?x12xf32>, %cu: tensor<?xi32>) -> tensor<?x12x64xf16> {
  %dq, %dk, %dv = ls2.attention_grad %q, %q, %q, %q, %q, %lse, %cu, %cu : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12xf32>, tensor<?xi32>, tensor<?xi32>
  return %dq : tensor<?x12x64xf16>
}
