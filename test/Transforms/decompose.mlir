// RUN: ls2c-opt %s --ls2-decompose | FileCheck %s
// RUN: ls2c-opt %s --ls2-decompose | FileCheck %s --check-prefix=ONLY-ATTENTION

// ls2-decompose lowers every composite but attention into primitives,
// computing in f32: f16/bf16 operands are cast up first, results cast back.
// Rank-0 constants are hoisted and uniqued by the greedy driver, hence
// CHECK-DAG for them.

// No composite but attention survives, and attention is untouched.
// ONLY-ATTENTION-NOT: ls2.{{(gelu|layer_norm|softmax|dropout|cross_entropy|adamw)}}
// ONLY-ATTENTION: ls2.attention %{{.*}} dropout(%{{.*}}) {causal, dropout_rate = 1.000000e-01 : f32}
// ONLY-ATTENTION-NOT: ls2.{{(gelu|layer_norm|softmax|dropout|cross_entropy|adamw)}}

// CHECK-LABEL: func.func @gelu_erf(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x3072xf32>)
// CHECK-DAG: %[[HALF:[^ ,]+]] = ls2.constant dense<5.000000e-01> : tensor<f32>
// CHECK-DAG: %[[ONE:[^ ,]+]] = ls2.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[RSQRT2:[^ ,]+]] = ls2.constant dense<0.707106769> : tensor<f32>
// CHECK: %[[MUL0:[^ ,]+]] = ls2.mul %[[X]], %[[RSQRT2]] : tensor<?x3072xf32>, tensor<f32>
// CHECK-NEXT: %[[ERF0:[^ ,]+]] = ls2.erf %[[MUL0]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[ADD0:[^ ,]+]] = ls2.add %[[ERF0]], %[[ONE]] : tensor<?x3072xf32>, tensor<f32>
// CHECK-NEXT: %[[MUL1:[^ ,]+]] = ls2.mul %[[X]], %[[HALF]] : tensor<?x3072xf32>, tensor<f32>
// CHECK-NEXT: %[[MUL2:[^ ,]+]] = ls2.mul %[[MUL1]], %[[ADD0]] : tensor<?x3072xf32>
// CHECK-NEXT: return %[[MUL2]] : tensor<?x3072xf32>
func.func @gelu_erf(%x: tensor<?x3072xf32>) -> tensor<?x3072xf32> {
  %0 = ls2.gelu %x : tensor<?x3072xf32>
  return %0 : tensor<?x3072xf32>
}

// CHECK-LABEL: func.func @gelu_tanh_f16(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x3072xf16>)
// CHECK-DAG: %[[HALF:[^ ,]+]] = ls2.constant dense<5.000000e-01> : tensor<f32>
// CHECK-DAG: %[[ONE:[^ ,]+]] = ls2.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[SQRT_2_OVER_PI:[^ ,]+]] = ls2.constant dense<0.797884583> : tensor<f32>
// CHECK-DAG: %[[COEF:[^ ,]+]] = ls2.constant dense<4.471500e-02> : tensor<f32>
// CHECK: %[[X32:[^ ,]+]] = ls2.cast %[[X]] : tensor<?x3072xf16> to tensor<?x3072xf32>
// CHECK-NEXT: %[[MUL0:[^ ,]+]] = ls2.mul %[[X32]], %[[X32]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[MUL1:[^ ,]+]] = ls2.mul %[[MUL0]], %[[X32]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[MUL2:[^ ,]+]] = ls2.mul %[[MUL1]], %[[COEF]] : tensor<?x3072xf32>, tensor<f32>
// CHECK-NEXT: %[[ADD0:[^ ,]+]] = ls2.add %[[X32]], %[[MUL2]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[MUL3:[^ ,]+]] = ls2.mul %[[ADD0]], %[[SQRT_2_OVER_PI]] : tensor<?x3072xf32>, tensor<f32>
// CHECK-NEXT: %[[TANH0:[^ ,]+]] = ls2.tanh %[[MUL3]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[ADD1:[^ ,]+]] = ls2.add %[[TANH0]], %[[ONE]] : tensor<?x3072xf32>, tensor<f32>
// CHECK-NEXT: %[[MUL4:[^ ,]+]] = ls2.mul %[[X32]], %[[HALF]] : tensor<?x3072xf32>, tensor<f32>
// CHECK-NEXT: %[[MUL5:[^ ,]+]] = ls2.mul %[[MUL4]], %[[ADD1]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[Y:[^ ,]+]] = ls2.cast %[[MUL5]] : tensor<?x3072xf32> to tensor<?x3072xf16>
// CHECK-NEXT: return %[[Y]] : tensor<?x3072xf16>
func.func @gelu_tanh_f16(%x: tensor<?x3072xf16>) -> tensor<?x3072xf16> {
  %0 = ls2.gelu %x {approximate = #ls2<gelu_approximation tanh>} : tensor<?x3072xf16>
  return %0 : tensor<?x3072xf16>
}

// CHECK-LABEL: func.func @layer_norm(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x768xf32>, %[[GAMMA:[^ ,]+]]: tensor<768xf32>, %[[BETA:[^ ,]+]]: tensor<768xf32>)
// CHECK-DAG: %[[EPS:[^ ,]+]] = ls2.constant dense<9.99999974E-6> : tensor<f32>
// CHECK-DAG: %[[H:[^ ,]+]] = ls2.constant dense<7.680000e+02> : tensor<f32>
// CHECK: %[[D0:[^ ,]+]] = ls2.dim %[[X]][0] : tensor<?x768xf32>
// CHECK-NEXT: %[[SUM0:[^ ,]+]] = ls2.reduce_sum %[[X]] [1] : tensor<?x768xf32> -> tensor<?xf32>
// CHECK-NEXT: %[[MEAN:[^ ,]+]] = ls2.div %[[SUM0]], %[[H]] : tensor<?xf32>, tensor<f32>
// CHECK-NEXT: %[[B0:[^ ,]+]] = ls2.broadcast %[[MEAN]][%[[D0]]] {dims = array<i64: 0>} : tensor<?xf32> -> tensor<?x768xf32>
// CHECK-NEXT: %[[XC:[^ ,]+]] = ls2.sub %[[X]], %[[B0]] : tensor<?x768xf32>
// CHECK-NEXT: %[[MUL0:[^ ,]+]] = ls2.mul %[[XC]], %[[XC]] : tensor<?x768xf32>
// CHECK-NEXT: %[[SUM1:[^ ,]+]] = ls2.reduce_sum %[[MUL0]] [1] : tensor<?x768xf32> -> tensor<?xf32>
// CHECK-NEXT: %[[VAR:[^ ,]+]] = ls2.div %[[SUM1]], %[[H]] : tensor<?xf32>, tensor<f32>
// CHECK-NEXT: %[[ADD0:[^ ,]+]] = ls2.add %[[VAR]], %[[EPS]] : tensor<?xf32>, tensor<f32>
// CHECK-NEXT: %[[RSTD:[^ ,]+]] = ls2.rsqrt %[[ADD0]] : tensor<?xf32>
// CHECK-NEXT: %[[B1:[^ ,]+]] = ls2.broadcast %[[RSTD]][%[[D0]]] {dims = array<i64: 0>} : tensor<?xf32> -> tensor<?x768xf32>
// CHECK-NEXT: %[[MUL1:[^ ,]+]] = ls2.mul %[[XC]], %[[B1]] : tensor<?x768xf32>
// CHECK-NEXT: %[[B2:[^ ,]+]] = ls2.broadcast %[[GAMMA]][%[[D0]]] {dims = array<i64: 1>} : tensor<768xf32> -> tensor<?x768xf32>
// CHECK-NEXT: %[[B3:[^ ,]+]] = ls2.broadcast %[[BETA]][%[[D0]]] {dims = array<i64: 1>} : tensor<768xf32> -> tensor<?x768xf32>
// CHECK-NEXT: %[[MUL2:[^ ,]+]] = ls2.mul %[[MUL1]], %[[B2]] : tensor<?x768xf32>
// CHECK-NEXT: %[[Y:[^ ,]+]] = ls2.add %[[MUL2]], %[[B3]] : tensor<?x768xf32>
// CHECK-NEXT: return %[[Y]], %[[MEAN]], %[[RSTD]] : tensor<?x768xf32>, tensor<?xf32>, tensor<?xf32>
func.func @layer_norm(%x: tensor<?x768xf32>, %gamma: tensor<768xf32>, %beta: tensor<768xf32>) -> (tensor<?x768xf32>, tensor<?xf32>, tensor<?xf32>) {
  %y, %mean, %rstd = ls2.layer_norm %x, %gamma, %beta {epsilon = 1.0e-5 : f32} : tensor<?x768xf32>, tensor<768xf32>, tensor<768xf32>
  return %y, %mean, %rstd : tensor<?x768xf32>, tensor<?xf32>, tensor<?xf32>
}

// CHECK-LABEL: func.func @layer_norm_f16(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x16x64xf16>, %[[GAMMA:[^ ,]+]]: tensor<64xf16>, %[[BETA:[^ ,]+]]: tensor<64xf16>)
// CHECK-DAG: %[[EPS:[^ ,]+]] = ls2.constant dense<9.99999996E-13> : tensor<f32>
// CHECK-DAG: %[[H:[^ ,]+]] = ls2.constant dense<6.400000e+01> : tensor<f32>
// CHECK: %[[D0:[^ ,]+]] = ls2.dim %[[X]][0] : tensor<?x16x64xf16>
// CHECK-NEXT: %[[CAST0:[^ ,]+]] = ls2.cast %[[X]] : tensor<?x16x64xf16> to tensor<?x16x64xf32>
// CHECK-NEXT: %[[SUM0:[^ ,]+]] = ls2.reduce_sum %[[CAST0]] [2] : tensor<?x16x64xf32> -> tensor<?x16xf32>
// CHECK-NEXT: %[[MEAN:[^ ,]+]] = ls2.div %[[SUM0]], %[[H]] : tensor<?x16xf32>, tensor<f32>
// CHECK-NEXT: %[[B0:[^ ,]+]] = ls2.broadcast %[[MEAN]][%[[D0]]] {dims = array<i64: 0, 1>} : tensor<?x16xf32> -> tensor<?x16x64xf32>
// CHECK-NEXT: %[[XC:[^ ,]+]] = ls2.sub %[[CAST0]], %[[B0]] : tensor<?x16x64xf32>
// CHECK-NEXT: %[[MUL0:[^ ,]+]] = ls2.mul %[[XC]], %[[XC]] : tensor<?x16x64xf32>
// CHECK-NEXT: %[[SUM1:[^ ,]+]] = ls2.reduce_sum %[[MUL0]] [2] : tensor<?x16x64xf32> -> tensor<?x16xf32>
// CHECK-NEXT: %[[VAR:[^ ,]+]] = ls2.div %[[SUM1]], %[[H]] : tensor<?x16xf32>, tensor<f32>
// CHECK-NEXT: %[[ADD0:[^ ,]+]] = ls2.add %[[VAR]], %[[EPS]] : tensor<?x16xf32>, tensor<f32>
// CHECK-NEXT: %[[RSTD:[^ ,]+]] = ls2.rsqrt %[[ADD0]] : tensor<?x16xf32>
// CHECK-NEXT: %[[B1:[^ ,]+]] = ls2.broadcast %[[RSTD]][%[[D0]]] {dims = array<i64: 0, 1>} : tensor<?x16xf32> -> tensor<?x16x64xf32>
// CHECK-NEXT: %[[MUL1:[^ ,]+]] = ls2.mul %[[XC]], %[[B1]] : tensor<?x16x64xf32>
// CHECK-NEXT: %[[GAMMA32:[^ ,]+]] = ls2.cast %[[GAMMA]] : tensor<64xf16> to tensor<64xf32>
// CHECK-NEXT: %[[B2:[^ ,]+]] = ls2.broadcast %[[GAMMA32]][%[[D0]]] {dims = array<i64: 2>} : tensor<64xf32> -> tensor<?x16x64xf32>
// CHECK-NEXT: %[[BETA32:[^ ,]+]] = ls2.cast %[[BETA]] : tensor<64xf16> to tensor<64xf32>
// CHECK-NEXT: %[[B3:[^ ,]+]] = ls2.broadcast %[[BETA32]][%[[D0]]] {dims = array<i64: 2>} : tensor<64xf32> -> tensor<?x16x64xf32>
// CHECK-NEXT: %[[MUL2:[^ ,]+]] = ls2.mul %[[MUL1]], %[[B2]] : tensor<?x16x64xf32>
// CHECK-NEXT: %[[ADD1:[^ ,]+]] = ls2.add %[[MUL2]], %[[B3]] : tensor<?x16x64xf32>
// CHECK-NEXT: %[[Y:[^ ,]+]] = ls2.cast %[[ADD1]] : tensor<?x16x64xf32> to tensor<?x16x64xf16>
// CHECK-NEXT: return %[[Y]], %[[MEAN]], %[[RSTD]] : tensor<?x16x64xf16>, tensor<?x16xf32>, tensor<?x16xf32>
func.func @layer_norm_f16(%x: tensor<?x16x64xf16>, %gamma: tensor<64xf16>, %beta: tensor<64xf16>) -> (tensor<?x16x64xf16>, tensor<?x16xf32>, tensor<?x16xf32>) {
  %y, %mean, %rstd = ls2.layer_norm %x, %gamma, %beta {epsilon = 1.0e-12 : f32} : tensor<?x16x64xf16>, tensor<64xf16>, tensor<64xf16>
  return %y, %mean, %rstd : tensor<?x16x64xf16>, tensor<?x16xf32>, tensor<?x16xf32>
}

// Fully masked rows: max -inf becomes 0 and a zero sum becomes 1, so the
// row is zeros, never NaN.
// CHECK-LABEL: func.func @softmax(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x128xf32>)
// CHECK-DAG: %[[ONE:[^ ,]+]] = ls2.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[ZERO:[^ ,]+]] = ls2.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[NEG_INF:[^ ,]+]] = ls2.constant dense<0xFF800000> : tensor<f32>
// CHECK: %[[D0:[^ ,]+]] = ls2.dim %[[X]][0] : tensor<?x128xf32>
// CHECK-NEXT: %[[MAX0:[^ ,]+]] = ls2.reduce_max %[[X]] [1] {keep_dims} : tensor<?x128xf32> -> tensor<?x1xf32>
// CHECK-NEXT: %[[P0:[^ ,]+]] = ls2.compare eq, %[[MAX0]], %[[NEG_INF]] : tensor<?x1xf32>, tensor<f32>
// CHECK-NEXT: %[[ROWMAX:[^ ,]+]] = ls2.select %[[P0]], %[[ZERO]], %[[MAX0]] : tensor<?x1xi1>, tensor<f32>, tensor<?x1xf32>
// CHECK-NEXT: %[[B0:[^ ,]+]] = ls2.broadcast %[[ROWMAX]][%[[D0]]] {dims = array<i64: 0, 1>} : tensor<?x1xf32> -> tensor<?x128xf32>
// CHECK-NEXT: %[[SUB0:[^ ,]+]] = ls2.sub %[[X]], %[[B0]] : tensor<?x128xf32>
// CHECK-NEXT: %[[E:[^ ,]+]] = ls2.exp %[[SUB0]] : tensor<?x128xf32>
// CHECK-NEXT: %[[SUM0:[^ ,]+]] = ls2.reduce_sum %[[E]] [1] {keep_dims} : tensor<?x128xf32> -> tensor<?x1xf32>
// CHECK-NEXT: %[[P1:[^ ,]+]] = ls2.compare eq, %[[SUM0]], %[[ZERO]] : tensor<?x1xf32>, tensor<f32>
// CHECK-NEXT: %[[Z:[^ ,]+]] = ls2.select %[[P1]], %[[ONE]], %[[SUM0]] : tensor<?x1xi1>, tensor<f32>, tensor<?x1xf32>
// CHECK-NEXT: %[[B1:[^ ,]+]] = ls2.broadcast %[[Z]][%[[D0]]] {dims = array<i64: 0, 1>} : tensor<?x1xf32> -> tensor<?x128xf32>
// CHECK-NEXT: %[[DIV0:[^ ,]+]] = ls2.div %[[E]], %[[B1]] : tensor<?x128xf32>
// CHECK-NEXT: return %[[DIV0]] : tensor<?x128xf32>
func.func @softmax(%x: tensor<?x128xf32>) -> tensor<?x128xf32> {
  %0 = ls2.softmax %x : tensor<?x128xf32> -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}

// Mask dims of size 1 broadcast as they are (ls2.broadcast takes 1 -> any).
// CHECK-LABEL: func.func @softmax_additive_mask_f16(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x12x?x?xf16>, %[[MASK:[^ ,]+]]: tensor<?x1x1x?xf16>)
// CHECK-DAG: %[[ONE:[^ ,]+]] = ls2.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[ZERO:[^ ,]+]] = ls2.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[SCALE:[^ ,]+]] = ls2.constant dense<1.250000e-01> : tensor<f32>
// CHECK-DAG: %[[NEG_INF:[^ ,]+]] = ls2.constant dense<0xFF800000> : tensor<f32>
// CHECK: %[[D0:[^ ,]+]] = ls2.dim %[[X]][0] : tensor<?x12x?x?xf16>
// CHECK-NEXT: %[[D1:[^ ,]+]] = ls2.dim %[[X]][2] : tensor<?x12x?x?xf16>
// CHECK-NEXT: %[[D2:[^ ,]+]] = ls2.dim %[[X]][3] : tensor<?x12x?x?xf16>
// CHECK-NEXT: %[[X32:[^ ,]+]] = ls2.cast %[[X]] : tensor<?x12x?x?xf16> to tensor<?x12x?x?xf32>
// CHECK-NEXT: %[[MUL0:[^ ,]+]] = ls2.mul %[[X32]], %[[SCALE]] : tensor<?x12x?x?xf32>, tensor<f32>
// CHECK-NEXT: %[[MASK32:[^ ,]+]] = ls2.cast %[[MASK]] : tensor<?x1x1x?xf16> to tensor<?x1x1x?xf32>
// CHECK-NEXT: %[[B0:[^ ,]+]] = ls2.broadcast %[[MASK32]][%[[D0]], %[[D1]], %[[D2]]] {dims = array<i64: 0, 1, 2, 3>} : tensor<?x1x1x?xf32> -> tensor<?x12x?x?xf32>
// CHECK-NEXT: %[[S:[^ ,]+]] = ls2.add %[[MUL0]], %[[B0]] : tensor<?x12x?x?xf32>
// CHECK-NEXT: %[[MAX0:[^ ,]+]] = ls2.reduce_max %[[S]] [3] {keep_dims} : tensor<?x12x?x?xf32> -> tensor<?x12x?x1xf32>
// CHECK-NEXT: %[[P0:[^ ,]+]] = ls2.compare eq, %[[MAX0]], %[[NEG_INF]] : tensor<?x12x?x1xf32>, tensor<f32>
// CHECK-NEXT: %[[ROWMAX:[^ ,]+]] = ls2.select %[[P0]], %[[ZERO]], %[[MAX0]] : tensor<?x12x?x1xi1>, tensor<f32>, tensor<?x12x?x1xf32>
// CHECK-NEXT: %[[B1:[^ ,]+]] = ls2.broadcast %[[ROWMAX]][%[[D0]], %[[D1]], %[[D2]]] {dims = array<i64: 0, 1, 2, 3>} : tensor<?x12x?x1xf32> -> tensor<?x12x?x?xf32>
// CHECK-NEXT: %[[SUB0:[^ ,]+]] = ls2.sub %[[S]], %[[B1]] : tensor<?x12x?x?xf32>
// CHECK-NEXT: %[[E:[^ ,]+]] = ls2.exp %[[SUB0]] : tensor<?x12x?x?xf32>
// CHECK-NEXT: %[[SUM0:[^ ,]+]] = ls2.reduce_sum %[[E]] [3] {keep_dims} : tensor<?x12x?x?xf32> -> tensor<?x12x?x1xf32>
// CHECK-NEXT: %[[P1:[^ ,]+]] = ls2.compare eq, %[[SUM0]], %[[ZERO]] : tensor<?x12x?x1xf32>, tensor<f32>
// CHECK-NEXT: %[[Z:[^ ,]+]] = ls2.select %[[P1]], %[[ONE]], %[[SUM0]] : tensor<?x12x?x1xi1>, tensor<f32>, tensor<?x12x?x1xf32>
// CHECK-NEXT: %[[B2:[^ ,]+]] = ls2.broadcast %[[Z]][%[[D0]], %[[D1]], %[[D2]]] {dims = array<i64: 0, 1, 2, 3>} : tensor<?x12x?x1xf32> -> tensor<?x12x?x?xf32>
// CHECK-NEXT: %[[DIV0:[^ ,]+]] = ls2.div %[[E]], %[[B2]] : tensor<?x12x?x?xf32>
// CHECK-NEXT: %[[CAST2:[^ ,]+]] = ls2.cast %[[DIV0]] : tensor<?x12x?x?xf32> to tensor<?x12x?x?xf16>
// CHECK-NEXT: return %[[CAST2]] : tensor<?x12x?x?xf16>
func.func @softmax_additive_mask_f16(%x: tensor<?x12x?x?xf16>, %mask: tensor<?x1x1x?xf16>) -> tensor<?x12x?x?xf16> {
  %0 = ls2.softmax %x mask %mask : tensor<?x1x1x?xf16> {scale = 1.250000e-01 : f32} : tensor<?x12x?x?xf16> -> tensor<?x12x?x?xf16>
  return %0 : tensor<?x12x?x?xf16>
}

// CHECK-LABEL: func.func @softmax_bool_mask(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x12x?x?xf32>, %[[KEEP:[^ ,]+]]: tensor<?x12x?x?xi1>)
// CHECK-DAG: %[[ONE:[^ ,]+]] = ls2.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[ZERO:[^ ,]+]] = ls2.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[NEG_INF:[^ ,]+]] = ls2.constant dense<0xFF800000> : tensor<f32>
// CHECK: %[[D0:[^ ,]+]] = ls2.dim %[[X]][0] : tensor<?x12x?x?xf32>
// CHECK-NEXT: %[[D1:[^ ,]+]] = ls2.dim %[[X]][2] : tensor<?x12x?x?xf32>
// CHECK-NEXT: %[[D2:[^ ,]+]] = ls2.dim %[[X]][3] : tensor<?x12x?x?xf32>
// CHECK-NEXT: %[[S:[^ ,]+]] = ls2.select %[[KEEP]], %[[X]], %[[NEG_INF]] : tensor<?x12x?x?xi1>, tensor<?x12x?x?xf32>, tensor<f32>
// CHECK-NEXT: %[[MAX0:[^ ,]+]] = ls2.reduce_max %[[S]] [3] {keep_dims} : tensor<?x12x?x?xf32> -> tensor<?x12x?x1xf32>
// CHECK-NEXT: %[[P0:[^ ,]+]] = ls2.compare eq, %[[MAX0]], %[[NEG_INF]] : tensor<?x12x?x1xf32>, tensor<f32>
// CHECK-NEXT: %[[ROWMAX:[^ ,]+]] = ls2.select %[[P0]], %[[ZERO]], %[[MAX0]] : tensor<?x12x?x1xi1>, tensor<f32>, tensor<?x12x?x1xf32>
// CHECK-NEXT: %[[B0:[^ ,]+]] = ls2.broadcast %[[ROWMAX]][%[[D0]], %[[D1]], %[[D2]]] {dims = array<i64: 0, 1, 2, 3>} : tensor<?x12x?x1xf32> -> tensor<?x12x?x?xf32>
// CHECK-NEXT: %[[SUB0:[^ ,]+]] = ls2.sub %[[S]], %[[B0]] : tensor<?x12x?x?xf32>
// CHECK-NEXT: %[[E:[^ ,]+]] = ls2.exp %[[SUB0]] : tensor<?x12x?x?xf32>
// CHECK-NEXT: %[[SUM0:[^ ,]+]] = ls2.reduce_sum %[[E]] [3] {keep_dims} : tensor<?x12x?x?xf32> -> tensor<?x12x?x1xf32>
// CHECK-NEXT: %[[P1:[^ ,]+]] = ls2.compare eq, %[[SUM0]], %[[ZERO]] : tensor<?x12x?x1xf32>, tensor<f32>
// CHECK-NEXT: %[[Z:[^ ,]+]] = ls2.select %[[P1]], %[[ONE]], %[[SUM0]] : tensor<?x12x?x1xi1>, tensor<f32>, tensor<?x12x?x1xf32>
// CHECK-NEXT: %[[B1:[^ ,]+]] = ls2.broadcast %[[Z]][%[[D0]], %[[D1]], %[[D2]]] {dims = array<i64: 0, 1, 2, 3>} : tensor<?x12x?x1xf32> -> tensor<?x12x?x?xf32>
// CHECK-NEXT: %[[DIV0:[^ ,]+]] = ls2.div %[[E]], %[[B1]] : tensor<?x12x?x?xf32>
// CHECK-NEXT: return %[[DIV0]] : tensor<?x12x?x?xf32>
func.func @softmax_bool_mask(%x: tensor<?x12x?x?xf32>, %keep: tensor<?x12x?x?xi1>) -> tensor<?x12x?x?xf32> {
  %0 = ls2.softmax %x mask %keep : tensor<?x12x?x?xi1> : tensor<?x12x?x?xf32> -> tensor<?x12x?x?xf32>
  return %0 : tensor<?x12x?x?xf32>
}

// keep where key <= query + (Sk - Sq). With no index -> tensor op, a dynamic
// length enters as reduce_max(iota) = length - 1; the -1s cancel.
// CHECK-LABEL: func.func @softmax_causal(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<12x?x?xf32>)
// CHECK-DAG: %[[ONE:[^ ,]+]] = ls2.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[ZERO:[^ ,]+]] = ls2.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[NEG_INF:[^ ,]+]] = ls2.constant dense<0xFF800000> : tensor<f32>
// CHECK: %[[SQ:[^ ,]+]] = ls2.dim %[[X]][1] : tensor<12x?x?xf32>
// CHECK-NEXT: %[[SK:[^ ,]+]] = ls2.dim %[[X]][2] : tensor<12x?x?xf32>
// CHECK-NEXT: %[[QUERY:[^ ,]+]] = ls2.iota[%[[SQ]], %[[SK]]] {dimension = 0 : i64} : tensor<?x?xi32>
// CHECK-NEXT: %[[KEY:[^ ,]+]] = ls2.iota[%[[SQ]], %[[SK]]] {dimension = 1 : i64} : tensor<?x?xi32>
// CHECK-NEXT: %[[IOTA2:[^ ,]+]] = ls2.iota[%[[SQ]]] {dimension = 0 : i64} : tensor<?xi32>
// CHECK-NEXT: %[[LAST_Q:[^ ,]+]] = ls2.reduce_max %[[IOTA2]] [0] : tensor<?xi32> -> tensor<i32>
// CHECK-NEXT: %[[IOTA3:[^ ,]+]] = ls2.iota[%[[SK]]] {dimension = 0 : i64} : tensor<?xi32>
// CHECK-NEXT: %[[LAST_K:[^ ,]+]] = ls2.reduce_max %[[IOTA3]] [0] : tensor<?xi32> -> tensor<i32>
// CHECK-NEXT: %[[SK_MINUS_SQ:[^ ,]+]] = ls2.sub %[[LAST_K]], %[[LAST_Q]] : tensor<i32>
// CHECK-NEXT: %[[ADD0:[^ ,]+]] = ls2.add %[[QUERY]], %[[SK_MINUS_SQ]] : tensor<?x?xi32>, tensor<i32>
// CHECK-NEXT: %[[KEEP:[^ ,]+]] = ls2.compare le, %[[KEY]], %[[ADD0]] : tensor<?x?xi32>
// CHECK-NEXT: %[[B0:[^ ,]+]] = ls2.broadcast %[[KEEP]][%[[SQ]], %[[SK]]] {dims = array<i64: 1, 2>} : tensor<?x?xi1> -> tensor<12x?x?xi1>
// CHECK-NEXT: %[[S:[^ ,]+]] = ls2.select %[[B0]], %[[X]], %[[NEG_INF]] : tensor<12x?x?xi1>, tensor<12x?x?xf32>, tensor<f32>
// CHECK-NEXT: %[[MAX2:[^ ,]+]] = ls2.reduce_max %[[S]] [2] {keep_dims} : tensor<12x?x?xf32> -> tensor<12x?x1xf32>
// CHECK-NEXT: %[[P1:[^ ,]+]] = ls2.compare eq, %[[MAX2]], %[[NEG_INF]] : tensor<12x?x1xf32>, tensor<f32>
// CHECK-NEXT: %[[SELECT1:[^ ,]+]] = ls2.select %[[P1]], %[[ZERO]], %[[MAX2]] : tensor<12x?x1xi1>, tensor<f32>, tensor<12x?x1xf32>
// CHECK-NEXT: %[[B1:[^ ,]+]] = ls2.broadcast %[[SELECT1]][%[[SQ]], %[[SK]]] {dims = array<i64: 0, 1, 2>} : tensor<12x?x1xf32> -> tensor<12x?x?xf32>
// CHECK-NEXT: %[[SUB1:[^ ,]+]] = ls2.sub %[[S]], %[[B1]] : tensor<12x?x?xf32>
// CHECK-NEXT: %[[EXP0:[^ ,]+]] = ls2.exp %[[SUB1]] : tensor<12x?x?xf32>
// CHECK-NEXT: %[[SUM0:[^ ,]+]] = ls2.reduce_sum %[[EXP0]] [2] {keep_dims} : tensor<12x?x?xf32> -> tensor<12x?x1xf32>
// CHECK-NEXT: %[[P2:[^ ,]+]] = ls2.compare eq, %[[SUM0]], %[[ZERO]] : tensor<12x?x1xf32>, tensor<f32>
// CHECK-NEXT: %[[SELECT2:[^ ,]+]] = ls2.select %[[P2]], %[[ONE]], %[[SUM0]] : tensor<12x?x1xi1>, tensor<f32>, tensor<12x?x1xf32>
// CHECK-NEXT: %[[B2:[^ ,]+]] = ls2.broadcast %[[SELECT2]][%[[SQ]], %[[SK]]] {dims = array<i64: 0, 1, 2>} : tensor<12x?x1xf32> -> tensor<12x?x?xf32>
// CHECK-NEXT: %[[DIV0:[^ ,]+]] = ls2.div %[[EXP0]], %[[B2]] : tensor<12x?x?xf32>
// CHECK-NEXT: return %[[DIV0]] : tensor<12x?x?xf32>
func.func @softmax_causal(%x: tensor<12x?x?xf32>) -> tensor<12x?x?xf32> {
  %0 = ls2.softmax %x {causal} : tensor<12x?x?xf32> -> tensor<12x?x?xf32>
  return %0 : tensor<12x?x?xf32>
}

// Static Sq, Sk: the offset Sk - Sq = 8 is a constant. The result type
// (f32) may differ from the input's (bf16).
// CHECK-LABEL: func.func @softmax_causal_static(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<4x8x16xbf16>)
// CHECK-DAG: %[[ONE:[^ ,]+]] = ls2.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[ZERO:[^ ,]+]] = ls2.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[SK_MINUS_SQ:[^ ,]+]] = ls2.constant dense<8> : tensor<i32>
// CHECK-DAG: %[[NEG_INF:[^ ,]+]] = ls2.constant dense<0xFF800000> : tensor<f32>
// CHECK: %[[CAST0:[^ ,]+]] = ls2.cast %[[X]] : tensor<4x8x16xbf16> to tensor<4x8x16xf32>
// CHECK-NEXT: %[[QUERY:[^ ,]+]] = ls2.iota[] {dimension = 0 : i64} : tensor<8x16xi32>
// CHECK-NEXT: %[[KEY:[^ ,]+]] = ls2.iota[] {dimension = 1 : i64} : tensor<8x16xi32>
// CHECK-NEXT: %[[ADD0:[^ ,]+]] = ls2.add %[[QUERY]], %[[SK_MINUS_SQ]] : tensor<8x16xi32>, tensor<i32>
// CHECK-NEXT: %[[KEEP:[^ ,]+]] = ls2.compare le, %[[KEY]], %[[ADD0]] : tensor<8x16xi32>
// CHECK-NEXT: %[[B0:[^ ,]+]] = ls2.broadcast %[[KEEP]][] {dims = array<i64: 1, 2>} : tensor<8x16xi1> -> tensor<4x8x16xi1>
// CHECK-NEXT: %[[S:[^ ,]+]] = ls2.select %[[B0]], %[[CAST0]], %[[NEG_INF]] : tensor<4x8x16xi1>, tensor<4x8x16xf32>, tensor<f32>
// CHECK-NEXT: %[[MAX0:[^ ,]+]] = ls2.reduce_max %[[S]] [2] {keep_dims} : tensor<4x8x16xf32> -> tensor<4x8x1xf32>
// CHECK-NEXT: %[[P1:[^ ,]+]] = ls2.compare eq, %[[MAX0]], %[[NEG_INF]] : tensor<4x8x1xf32>, tensor<f32>
// CHECK-NEXT: %[[SELECT1:[^ ,]+]] = ls2.select %[[P1]], %[[ZERO]], %[[MAX0]] : tensor<4x8x1xi1>, tensor<f32>, tensor<4x8x1xf32>
// CHECK-NEXT: %[[B1:[^ ,]+]] = ls2.broadcast %[[SELECT1]][] {dims = array<i64: 0, 1, 2>} : tensor<4x8x1xf32> -> tensor<4x8x16xf32>
// CHECK-NEXT: %[[SUB0:[^ ,]+]] = ls2.sub %[[S]], %[[B1]] : tensor<4x8x16xf32>
// CHECK-NEXT: %[[EXP0:[^ ,]+]] = ls2.exp %[[SUB0]] : tensor<4x8x16xf32>
// CHECK-NEXT: %[[SUM0:[^ ,]+]] = ls2.reduce_sum %[[EXP0]] [2] {keep_dims} : tensor<4x8x16xf32> -> tensor<4x8x1xf32>
// CHECK-NEXT: %[[P2:[^ ,]+]] = ls2.compare eq, %[[SUM0]], %[[ZERO]] : tensor<4x8x1xf32>, tensor<f32>
// CHECK-NEXT: %[[SELECT2:[^ ,]+]] = ls2.select %[[P2]], %[[ONE]], %[[SUM0]] : tensor<4x8x1xi1>, tensor<f32>, tensor<4x8x1xf32>
// CHECK-NEXT: %[[B2:[^ ,]+]] = ls2.broadcast %[[SELECT2]][] {dims = array<i64: 0, 1, 2>} : tensor<4x8x1xf32> -> tensor<4x8x16xf32>
// CHECK-NEXT: %[[DIV0:[^ ,]+]] = ls2.div %[[EXP0]], %[[B2]] : tensor<4x8x16xf32>
// CHECK-NEXT: return %[[DIV0]] : tensor<4x8x16xf32>
func.func @softmax_causal_static(%x: tensor<4x8x16xbf16>) -> tensor<4x8x16xf32> {
  %0 = ls2.softmax %x {causal} : tensor<4x8x16xbf16> -> tensor<4x8x16xf32>
  return %0 : tensor<4x8x16xf32>
}

// CHECK-LABEL: func.func @dropout_bf16(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x768xbf16>, %[[SEED:[^ ,]+]]: tensor<i64>, %[[OFFSET:[^ ,]+]]: tensor<i64>)
// CHECK-DAG: %[[ZERO:[^ ,]+]] = ls2.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[INV_KEEP:[^ ,]+]] = ls2.constant dense<1.11111116> : tensor<f32>
// CHECK-DAG: %[[RATE:[^ ,]+]] = ls2.constant dense<1.000000e-01> : tensor<f32>
// CHECK: %[[D0:[^ ,]+]] = ls2.dim %[[X]][0] : tensor<?x768xbf16>
// CHECK-NEXT: %[[U:[^ ,]+]] = ls2.random_uniform %[[SEED]], %[[OFFSET]][%[[D0]]] {stream = 3 : i64} : tensor<?x768xf32>
// CHECK-NEXT: %[[KEEP:[^ ,]+]] = ls2.compare ge, %[[U]], %[[RATE]] : tensor<?x768xf32>, tensor<f32>
// CHECK-NEXT: %[[X32:[^ ,]+]] = ls2.cast %[[X]] : tensor<?x768xbf16> to tensor<?x768xf32>
// CHECK-NEXT: %[[MUL0:[^ ,]+]] = ls2.mul %[[X32]], %[[INV_KEEP]] : tensor<?x768xf32>, tensor<f32>
// CHECK-NEXT: %[[SELECT0:[^ ,]+]] = ls2.select %[[KEEP]], %[[MUL0]], %[[ZERO]] : tensor<?x768xi1>, tensor<?x768xf32>, tensor<f32>
// CHECK-NEXT: %[[CAST1:[^ ,]+]] = ls2.cast %[[SELECT0]] : tensor<?x768xf32> to tensor<?x768xbf16>
// CHECK-NEXT: return %[[CAST1]] : tensor<?x768xbf16>
func.func @dropout_bf16(%x: tensor<?x768xbf16>, %seed: tensor<i64>, %offset: tensor<i64>) -> tensor<?x768xbf16> {
  %0 = ls2.dropout %x, %seed, %offset {rate = 1.000000e-01 : f32, stream = 3} : tensor<?x768xbf16>
  return %0 : tensor<?x768xbf16>
}

// rate 0 is the identity.
// CHECK-LABEL: func.func @dropout_rate_zero(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x768xf32>, %[[SEED:[^ ,]+]]: tensor<i64>, %[[OFFSET:[^ ,]+]]: tensor<i64>)
// CHECK: return %[[X]] : tensor<?x768xf32>
func.func @dropout_rate_zero(%x: tensor<?x768xf32>, %seed: tensor<i64>, %offset: tensor<i64>) -> tensor<?x768xf32> {
  %0 = ls2.dropout %x, %seed, %offset {rate = 0.000000e+00 : f32, stream = 4} : tensor<?x768xf32>
  return %0 : tensor<?x768xf32>
}

// mean divides by max(count of non-ignored rows, 1): 0 when all are ignored.
// CHECK-LABEL: func.func @cross_entropy_mean_f16(
// CHECK-SAME: %[[LOGITS:[^ ,]+]]: tensor<?x1000xf16>, %[[TARGETS:[^ ,]+]]: tensor<?xi32>)
// CHECK-DAG: %[[ONE:[^ ,]+]] = ls2.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[IGNORE:[^ ,]+]] = ls2.constant dense<-100> : tensor<i32>
// CHECK-DAG: %[[EPS:[^ ,]+]] = ls2.constant dense<1.000000e-01> : tensor<f32>
// CHECK-DAG: %[[ONE_MINUS_EPS:[^ ,]+]] = ls2.constant dense<0.899999976> : tensor<f32>
// CHECK-DAG: %[[CLASSES:[^ ,]+]] = ls2.constant dense<1.000000e+03> : tensor<f32>
// CHECK-DAG: %[[ZERO:[^ ,]+]] = ls2.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[D0:[^ ,]+]] = ls2.dim %[[LOGITS]][0] : tensor<?x1000xf16>
// CHECK-NEXT: %[[CAST0:[^ ,]+]] = ls2.cast %[[LOGITS]] : tensor<?x1000xf16> to tensor<?x1000xf32>
// CHECK-NEXT: %[[MAX0:[^ ,]+]] = ls2.reduce_max %[[CAST0]] [1] : tensor<?x1000xf32> -> tensor<?xf32>
// CHECK-NEXT: %[[B0:[^ ,]+]] = ls2.broadcast %[[MAX0]][%[[D0]]] {dims = array<i64: 0>} : tensor<?xf32> -> tensor<?x1000xf32>
// CHECK-NEXT: %[[SUB0:[^ ,]+]] = ls2.sub %[[CAST0]], %[[B0]] : tensor<?x1000xf32>
// CHECK-NEXT: %[[EXP0:[^ ,]+]] = ls2.exp %[[SUB0]] : tensor<?x1000xf32>
// CHECK-NEXT: %[[SUM0:[^ ,]+]] = ls2.reduce_sum %[[EXP0]] [1] : tensor<?x1000xf32> -> tensor<?xf32>
// CHECK-NEXT: %[[LOG0:[^ ,]+]] = ls2.log %[[SUM0]] : tensor<?xf32>
// CHECK-NEXT: %[[LSE:[^ ,]+]] = ls2.add %[[LOG0]], %[[MAX0]] : tensor<?xf32>
// CHECK-NEXT: %[[IOTA0:[^ ,]+]] = ls2.iota[%[[D0]]] {dimension = 1 : i64} : tensor<?x1000xi32>
// CHECK-NEXT: %[[B1:[^ ,]+]] = ls2.broadcast %[[TARGETS]][%[[D0]]] {dims = array<i64: 0>} : tensor<?xi32> -> tensor<?x1000xi32>
// CHECK-NEXT: %[[P0:[^ ,]+]] = ls2.compare eq, %[[IOTA0]], %[[B1]] : tensor<?x1000xi32>
// CHECK-NEXT: %[[SELECT0:[^ ,]+]] = ls2.select %[[P0]], %[[CAST0]], %[[ZERO]] : tensor<?x1000xi1>, tensor<?x1000xf32>, tensor<f32>
// CHECK-NEXT: %[[XT:[^ ,]+]] = ls2.reduce_sum %[[SELECT0]] [1] : tensor<?x1000xf32> -> tensor<?xf32>
// CHECK-NEXT: %[[SUB1:[^ ,]+]] = ls2.sub %[[LSE]], %[[XT]] : tensor<?xf32>
// CHECK-NEXT: %[[SUM2:[^ ,]+]] = ls2.reduce_sum %[[CAST0]] [1] : tensor<?x1000xf32> -> tensor<?xf32>
// CHECK-NEXT: %[[MEAN_X:[^ ,]+]] = ls2.div %[[SUM2]], %[[CLASSES]] : tensor<?xf32>, tensor<f32>
// CHECK-NEXT: %[[SUB2:[^ ,]+]] = ls2.sub %[[LSE]], %[[MEAN_X]] : tensor<?xf32>
// CHECK-NEXT: %[[MUL0:[^ ,]+]] = ls2.mul %[[SUB1]], %[[ONE_MINUS_EPS]] : tensor<?xf32>, tensor<f32>
// CHECK-NEXT: %[[MUL1:[^ ,]+]] = ls2.mul %[[SUB2]], %[[EPS]] : tensor<?xf32>, tensor<f32>
// CHECK-NEXT: %[[LOSS:[^ ,]+]] = ls2.add %[[MUL0]], %[[MUL1]] : tensor<?xf32>
// CHECK-NEXT: %[[VALID:[^ ,]+]] = ls2.compare ne, %[[TARGETS]], %[[IGNORE]] : tensor<?xi32>, tensor<i32>
// CHECK-NEXT: %[[SELECT1:[^ ,]+]] = ls2.select %[[VALID]], %[[LOSS]], %[[ZERO]] : tensor<?xi1>, tensor<?xf32>, tensor<f32>
// CHECK-NEXT: %[[TOTAL:[^ ,]+]] = ls2.reduce_sum %[[SELECT1]] [0] : tensor<?xf32> -> tensor<f32>
// CHECK-NEXT: %[[CAST1:[^ ,]+]] = ls2.cast %[[VALID]] : tensor<?xi1> to tensor<?xf32>
// CHECK-NEXT: %[[COUNT:[^ ,]+]] = ls2.reduce_sum %[[CAST1]] [0] : tensor<?xf32> -> tensor<f32>
// CHECK-NEXT: %[[MAX1:[^ ,]+]] = ls2.max %[[COUNT]], %[[ONE]] : tensor<f32>
// CHECK-NEXT: %[[DIV1:[^ ,]+]] = ls2.div %[[TOTAL]], %[[MAX1]] : tensor<f32>
// CHECK-NEXT: return %[[DIV1]] : tensor<f32>
func.func @cross_entropy_mean_f16(%logits: tensor<?x1000xf16>, %targets: tensor<?xi32>) -> tensor<f32> {
  %0 = ls2.cross_entropy %logits, %targets {label_smoothing = 1.000000e-01 : f32} : tensor<?x1000xf16>, tensor<?xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// CHECK-LABEL: func.func @cross_entropy_sum(
// CHECK-SAME: %[[LOGITS:[^ ,]+]]: tensor<?x1000xf32>, %[[TARGETS:[^ ,]+]]: tensor<?xi64>)
// CHECK-DAG: %[[IGNORE:[^ ,]+]] = ls2.constant dense<0> : tensor<i64>
// CHECK-DAG: %[[ZERO:[^ ,]+]] = ls2.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[D0:[^ ,]+]] = ls2.dim %[[LOGITS]][0] : tensor<?x1000xf32>
// CHECK-NEXT: %[[MAX0:[^ ,]+]] = ls2.reduce_max %[[LOGITS]] [1] : tensor<?x1000xf32> -> tensor<?xf32>
// CHECK-NEXT: %[[B0:[^ ,]+]] = ls2.broadcast %[[MAX0]][%[[D0]]] {dims = array<i64: 0>} : tensor<?xf32> -> tensor<?x1000xf32>
// CHECK-NEXT: %[[SUB0:[^ ,]+]] = ls2.sub %[[LOGITS]], %[[B0]] : tensor<?x1000xf32>
// CHECK-NEXT: %[[EXP0:[^ ,]+]] = ls2.exp %[[SUB0]] : tensor<?x1000xf32>
// CHECK-NEXT: %[[SUM0:[^ ,]+]] = ls2.reduce_sum %[[EXP0]] [1] : tensor<?x1000xf32> -> tensor<?xf32>
// CHECK-NEXT: %[[LOG0:[^ ,]+]] = ls2.log %[[SUM0]] : tensor<?xf32>
// CHECK-NEXT: %[[LSE:[^ ,]+]] = ls2.add %[[LOG0]], %[[MAX0]] : tensor<?xf32>
// CHECK-NEXT: %[[IOTA0:[^ ,]+]] = ls2.iota[%[[D0]]] {dimension = 1 : i64} : tensor<?x1000xi64>
// CHECK-NEXT: %[[B1:[^ ,]+]] = ls2.broadcast %[[TARGETS]][%[[D0]]] {dims = array<i64: 0>} : tensor<?xi64> -> tensor<?x1000xi64>
// CHECK-NEXT: %[[P0:[^ ,]+]] = ls2.compare eq, %[[IOTA0]], %[[B1]] : tensor<?x1000xi64>
// CHECK-NEXT: %[[SELECT0:[^ ,]+]] = ls2.select %[[P0]], %[[LOGITS]], %[[ZERO]] : tensor<?x1000xi1>, tensor<?x1000xf32>, tensor<f32>
// CHECK-NEXT: %[[XT:[^ ,]+]] = ls2.reduce_sum %[[SELECT0]] [1] : tensor<?x1000xf32> -> tensor<?xf32>
// CHECK-NEXT: %[[SUB1:[^ ,]+]] = ls2.sub %[[LSE]], %[[XT]] : tensor<?xf32>
// CHECK-NEXT: %[[VALID:[^ ,]+]] = ls2.compare ne, %[[TARGETS]], %[[IGNORE]] : tensor<?xi64>, tensor<i64>
// CHECK-NEXT: %[[SELECT1:[^ ,]+]] = ls2.select %[[VALID]], %[[SUB1]], %[[ZERO]] : tensor<?xi1>, tensor<?xf32>, tensor<f32>
// CHECK-NEXT: %[[SUM2:[^ ,]+]] = ls2.reduce_sum %[[SELECT1]] [0] : tensor<?xf32> -> tensor<f32>
// CHECK-NEXT: return %[[SUM2]] : tensor<f32>
func.func @cross_entropy_sum(%logits: tensor<?x1000xf32>, %targets: tensor<?xi64>) -> tensor<f32> {
  %0 = ls2.cross_entropy %logits, %targets {ignore_index = 0 : i64, reduction = #ls2<loss_reduction sum>} : tensor<?x1000xf32>, tensor<?xi64> -> tensor<f32>
  return %0 : tensor<f32>
}

// CHECK-LABEL: func.func @cross_entropy_none(
// CHECK-SAME: %[[LOGITS:[^ ,]+]]: tensor<8x1000xf32>, %[[TARGETS:[^ ,]+]]: tensor<8xi32>)
// CHECK-DAG: %[[IGNORE:[^ ,]+]] = ls2.constant dense<-100> : tensor<i32>
// CHECK-DAG: %[[ZERO:[^ ,]+]] = ls2.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[MAX0:[^ ,]+]] = ls2.reduce_max %[[LOGITS]] [1] : tensor<8x1000xf32> -> tensor<8xf32>
// CHECK-NEXT: %[[B0:[^ ,]+]] = ls2.broadcast %[[MAX0]][] {dims = array<i64: 0>} : tensor<8xf32> -> tensor<8x1000xf32>
// CHECK-NEXT: %[[SUB0:[^ ,]+]] = ls2.sub %[[LOGITS]], %[[B0]] : tensor<8x1000xf32>
// CHECK-NEXT: %[[EXP0:[^ ,]+]] = ls2.exp %[[SUB0]] : tensor<8x1000xf32>
// CHECK-NEXT: %[[SUM0:[^ ,]+]] = ls2.reduce_sum %[[EXP0]] [1] : tensor<8x1000xf32> -> tensor<8xf32>
// CHECK-NEXT: %[[LOG0:[^ ,]+]] = ls2.log %[[SUM0]] : tensor<8xf32>
// CHECK-NEXT: %[[LSE:[^ ,]+]] = ls2.add %[[LOG0]], %[[MAX0]] : tensor<8xf32>
// CHECK-NEXT: %[[IOTA0:[^ ,]+]] = ls2.iota[] {dimension = 1 : i64} : tensor<8x1000xi32>
// CHECK-NEXT: %[[B1:[^ ,]+]] = ls2.broadcast %[[TARGETS]][] {dims = array<i64: 0>} : tensor<8xi32> -> tensor<8x1000xi32>
// CHECK-NEXT: %[[P0:[^ ,]+]] = ls2.compare eq, %[[IOTA0]], %[[B1]] : tensor<8x1000xi32>
// CHECK-NEXT: %[[SELECT0:[^ ,]+]] = ls2.select %[[P0]], %[[LOGITS]], %[[ZERO]] : tensor<8x1000xi1>, tensor<8x1000xf32>, tensor<f32>
// CHECK-NEXT: %[[XT:[^ ,]+]] = ls2.reduce_sum %[[SELECT0]] [1] : tensor<8x1000xf32> -> tensor<8xf32>
// CHECK-NEXT: %[[SUB1:[^ ,]+]] = ls2.sub %[[LSE]], %[[XT]] : tensor<8xf32>
// CHECK-NEXT: %[[VALID:[^ ,]+]] = ls2.compare ne, %[[TARGETS]], %[[IGNORE]] : tensor<8xi32>, tensor<i32>
// CHECK-NEXT: %[[SELECT1:[^ ,]+]] = ls2.select %[[VALID]], %[[SUB1]], %[[ZERO]] : tensor<8xi1>, tensor<8xf32>, tensor<f32>
// CHECK-NEXT: return %[[SELECT1]] : tensor<8xf32>
func.func @cross_entropy_none(%logits: tensor<8x1000xf32>, %targets: tensor<8xi32>) -> tensor<8xf32> {
  %0 = ls2.cross_entropy %logits, %targets {reduction = #ls2<loss_reduction none>} : tensor<8x1000xf32>, tensor<8xi32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// CHECK-LABEL: func.func @adamw(
// CHECK-SAME: %[[P:[^ ,]+]]: tensor<4096xf32>, %[[G:[^ ,]+]]: tensor<4096xbf16>, %[[M:[^ ,]+]]: tensor<4096xf32>, %[[V:[^ ,]+]]: tensor<4096xf32>, %[[STEP:[^ ,]+]]: tensor<i64>, %[[LR:[^ ,]+]]: tensor<f32>, %[[GS:[^ ,]+]]: tensor<f32>)
// CHECK-DAG: %[[EPS:[^ ,]+]] = ls2.constant dense<9.99999993E-9> : tensor<f32>
// CHECK-DAG: %[[LOG_B2:[^ ,]+]] = ls2.constant dense<-0.00100048748> : tensor<f32>
// CHECK-DAG: %[[ONE:[^ ,]+]] = ls2.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[LOG_B1:[^ ,]+]] = ls2.constant dense<-0.105360545> : tensor<f32>
// CHECK-DAG: %[[ONE_MINUS_B2:[^ ,]+]] = ls2.constant dense<9.99987125E-4> : tensor<f32>
// CHECK-DAG: %[[B2:[^ ,]+]] = ls2.constant dense<9.990000e-01> : tensor<f32>
// CHECK-DAG: %[[ONE_MINUS_B1:[^ ,]+]] = ls2.constant dense<0.100000024> : tensor<f32>
// CHECK-DAG: %[[B1:[^ ,]+]] = ls2.constant dense<0.899999976> : tensor<f32>
// CHECK-DAG: %[[WD:[^ ,]+]] = ls2.constant dense<0.00999999977> : tensor<f32>
// CHECK: %[[CAST0:[^ ,]+]] = ls2.cast %[[G]] : tensor<4096xbf16> to tensor<4096xf32>
// CHECK-NEXT: %[[GRAD:[^ ,]+]] = ls2.mul %[[CAST0]], %[[GS]] : tensor<4096xf32>, tensor<f32>
// CHECK-NEXT: %[[MUL1:[^ ,]+]] = ls2.mul %[[LR]], %[[WD]] : tensor<f32>
// CHECK-NEXT: %[[MUL2:[^ ,]+]] = ls2.mul %[[MUL1]], %[[P]] : tensor<f32>, tensor<4096xf32>
// CHECK-NEXT: %[[DECAYED:[^ ,]+]] = ls2.sub %[[P]], %[[MUL2]] : tensor<4096xf32>
// CHECK-NEXT: %[[MUL3:[^ ,]+]] = ls2.mul %[[M]], %[[B1]] : tensor<4096xf32>, tensor<f32>
// CHECK-NEXT: %[[MUL4:[^ ,]+]] = ls2.mul %[[GRAD]], %[[ONE_MINUS_B1]] : tensor<4096xf32>, tensor<f32>
// CHECK-NEXT: %[[NEW_M:[^ ,]+]] = ls2.add %[[MUL3]], %[[MUL4]] : tensor<4096xf32>
// CHECK-NEXT: %[[MUL5:[^ ,]+]] = ls2.mul %[[V]], %[[B2]] : tensor<4096xf32>, tensor<f32>
// CHECK-NEXT: %[[MUL6:[^ ,]+]] = ls2.mul %[[GRAD]], %[[GRAD]] : tensor<4096xf32>
// CHECK-NEXT: %[[MUL7:[^ ,]+]] = ls2.mul %[[MUL6]], %[[ONE_MINUS_B2]] : tensor<4096xf32>, tensor<f32>
// CHECK-NEXT: %[[NEW_V:[^ ,]+]] = ls2.add %[[MUL5]], %[[MUL7]] : tensor<4096xf32>
// CHECK-NEXT: %[[T:[^ ,]+]] = ls2.cast %[[STEP]] : tensor<i64> to tensor<f32>
// CHECK-NEXT: %[[MUL8:[^ ,]+]] = ls2.mul %[[T]], %[[LOG_B1]] : tensor<f32>
// CHECK-NEXT: %[[EXP0:[^ ,]+]] = ls2.exp %[[MUL8]] : tensor<f32>
// CHECK-NEXT: %[[BC1:[^ ,]+]] = ls2.sub %[[ONE]], %[[EXP0]] : tensor<f32>
// CHECK-NEXT: %[[DIV0:[^ ,]+]] = ls2.div %[[NEW_M]], %[[BC1]] : tensor<4096xf32>, tensor<f32>
// CHECK-NEXT: %[[MUL9:[^ ,]+]] = ls2.mul %[[T]], %[[LOG_B2]] : tensor<f32>
// CHECK-NEXT: %[[EXP1:[^ ,]+]] = ls2.exp %[[MUL9]] : tensor<f32>
// CHECK-NEXT: %[[BC2:[^ ,]+]] = ls2.sub %[[ONE]], %[[EXP1]] : tensor<f32>
// CHECK-NEXT: %[[DIV1:[^ ,]+]] = ls2.div %[[NEW_V]], %[[BC2]] : tensor<4096xf32>, tensor<f32>
// CHECK-NEXT: %[[SQRT0:[^ ,]+]] = ls2.sqrt %[[DIV1]] : tensor<4096xf32>
// CHECK-NEXT: %[[ADD2:[^ ,]+]] = ls2.add %[[SQRT0]], %[[EPS]] : tensor<4096xf32>, tensor<f32>
// CHECK-NEXT: %[[MUL10:[^ ,]+]] = ls2.mul %[[LR]], %[[DIV0]] : tensor<f32>, tensor<4096xf32>
// CHECK-NEXT: %[[DIV2:[^ ,]+]] = ls2.div %[[MUL10]], %[[ADD2]] : tensor<4096xf32>
// CHECK-NEXT: %[[NEW_P:[^ ,]+]] = ls2.sub %[[DECAYED]], %[[DIV2]] : tensor<4096xf32>
// CHECK-NEXT: return %[[NEW_P]], %[[NEW_M]], %[[NEW_V]] : tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>
func.func @adamw(%p: tensor<4096xf32>, %g: tensor<4096xbf16>, %m: tensor<4096xf32>, %v: tensor<4096xf32>, %step: tensor<i64>, %lr: tensor<f32>, %gs: tensor<f32>) -> (tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>) {
  %np, %nm, %nv = ls2.adamw %p, %g, %m, %v, %step, %lr, %gs {beta1 = 0.899999976 : f32, beta2 = 0.999000012 : f32, epsilon = 9.99999993E-9 : f32, weight_decay = 0.00999999977 : f32} : tensor<4096xf32>, tensor<4096xbf16>
  return %np, %nm, %nv : tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>
}

// CHECK-LABEL: func.func @adam_l2(
// CHECK-SAME: %[[P:[^ ,]+]]: tensor<4096xf32>, %[[G:[^ ,]+]]: tensor<4096xf32>, %[[M:[^ ,]+]]: tensor<4096xf32>, %[[V:[^ ,]+]]: tensor<4096xf32>, %[[STEP:[^ ,]+]]: tensor<i64>, %[[LR:[^ ,]+]]: tensor<f32>, %[[GS:[^ ,]+]]: tensor<f32>)
// CHECK-DAG: %[[EPS:[^ ,]+]] = ls2.constant dense<9.99999993E-9> : tensor<f32>
// CHECK-DAG: %[[LOG_B2:[^ ,]+]] = ls2.constant dense<-0.00100048748> : tensor<f32>
// CHECK-DAG: %[[ONE:[^ ,]+]] = ls2.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[LOG_B1:[^ ,]+]] = ls2.constant dense<-0.105360545> : tensor<f32>
// CHECK-DAG: %[[ONE_MINUS_B2:[^ ,]+]] = ls2.constant dense<9.99987125E-4> : tensor<f32>
// CHECK-DAG: %[[B2:[^ ,]+]] = ls2.constant dense<9.990000e-01> : tensor<f32>
// CHECK-DAG: %[[ONE_MINUS_B1:[^ ,]+]] = ls2.constant dense<0.100000024> : tensor<f32>
// CHECK-DAG: %[[B1:[^ ,]+]] = ls2.constant dense<0.899999976> : tensor<f32>
// CHECK-DAG: %[[WD:[^ ,]+]] = ls2.constant dense<0.00999999977> : tensor<f32>
// CHECK: %[[MUL0:[^ ,]+]] = ls2.mul %[[G]], %[[GS]] : tensor<4096xf32>, tensor<f32>
// CHECK-NEXT: %[[MUL1:[^ ,]+]] = ls2.mul %[[P]], %[[WD]] : tensor<4096xf32>, tensor<f32>
// CHECK-NEXT: %[[GRAD:[^ ,]+]] = ls2.add %[[MUL0]], %[[MUL1]] : tensor<4096xf32>
// CHECK-NEXT: %[[MUL2:[^ ,]+]] = ls2.mul %[[M]], %[[B1]] : tensor<4096xf32>, tensor<f32>
// CHECK-NEXT: %[[MUL3:[^ ,]+]] = ls2.mul %[[GRAD]], %[[ONE_MINUS_B1]] : tensor<4096xf32>, tensor<f32>
// CHECK-NEXT: %[[NEW_M:[^ ,]+]] = ls2.add %[[MUL2]], %[[MUL3]] : tensor<4096xf32>
// CHECK-NEXT: %[[MUL4:[^ ,]+]] = ls2.mul %[[V]], %[[B2]] : tensor<4096xf32>, tensor<f32>
// CHECK-NEXT: %[[MUL5:[^ ,]+]] = ls2.mul %[[GRAD]], %[[GRAD]] : tensor<4096xf32>
// CHECK-NEXT: %[[MUL6:[^ ,]+]] = ls2.mul %[[MUL5]], %[[ONE_MINUS_B2]] : tensor<4096xf32>, tensor<f32>
// CHECK-NEXT: %[[NEW_V:[^ ,]+]] = ls2.add %[[MUL4]], %[[MUL6]] : tensor<4096xf32>
// CHECK-NEXT: %[[T:[^ ,]+]] = ls2.cast %[[STEP]] : tensor<i64> to tensor<f32>
// CHECK-NEXT: %[[MUL7:[^ ,]+]] = ls2.mul %[[T]], %[[LOG_B1]] : tensor<f32>
// CHECK-NEXT: %[[EXP0:[^ ,]+]] = ls2.exp %[[MUL7]] : tensor<f32>
// CHECK-NEXT: %[[BC1:[^ ,]+]] = ls2.sub %[[ONE]], %[[EXP0]] : tensor<f32>
// CHECK-NEXT: %[[DIV0:[^ ,]+]] = ls2.div %[[NEW_M]], %[[BC1]] : tensor<4096xf32>, tensor<f32>
// CHECK-NEXT: %[[MUL8:[^ ,]+]] = ls2.mul %[[T]], %[[LOG_B2]] : tensor<f32>
// CHECK-NEXT: %[[EXP1:[^ ,]+]] = ls2.exp %[[MUL8]] : tensor<f32>
// CHECK-NEXT: %[[BC2:[^ ,]+]] = ls2.sub %[[ONE]], %[[EXP1]] : tensor<f32>
// CHECK-NEXT: %[[DIV1:[^ ,]+]] = ls2.div %[[NEW_V]], %[[BC2]] : tensor<4096xf32>, tensor<f32>
// CHECK-NEXT: %[[SQRT0:[^ ,]+]] = ls2.sqrt %[[DIV1]] : tensor<4096xf32>
// CHECK-NEXT: %[[ADD3:[^ ,]+]] = ls2.add %[[SQRT0]], %[[EPS]] : tensor<4096xf32>, tensor<f32>
// CHECK-NEXT: %[[MUL9:[^ ,]+]] = ls2.mul %[[LR]], %[[DIV0]] : tensor<f32>, tensor<4096xf32>
// CHECK-NEXT: %[[DIV2:[^ ,]+]] = ls2.div %[[MUL9]], %[[ADD3]] : tensor<4096xf32>
// CHECK-NEXT: %[[NEW_P:[^ ,]+]] = ls2.sub %[[P]], %[[DIV2]] : tensor<4096xf32>
// CHECK-NEXT: return %[[NEW_P]], %[[NEW_M]], %[[NEW_V]] : tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>
func.func @adam_l2(%p: tensor<4096xf32>, %g: tensor<4096xf32>, %m: tensor<4096xf32>, %v: tensor<4096xf32>, %step: tensor<i64>, %lr: tensor<f32>, %gs: tensor<f32>) -> (tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>) {
  %np, %nm, %nv = ls2.adamw %p, %g, %m, %v, %step, %lr, %gs {beta1 = 0.899999976 : f32, beta2 = 0.999000012 : f32, epsilon = 9.99999993E-9 : f32, mode = #ls2<weight_decay_mode l2>, weight_decay = 0.00999999977 : f32} : tensor<4096xf32>, tensor<4096xf32>
  return %np, %nm, %nv : tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>
}

// CHECK-LABEL: func.func @attention_stays(
// CHECK-SAME: %[[Q:[^ ,]+]]: tensor<?x12x64xf16>, %[[CU:[^ ,]+]]: tensor<?xi32>, %[[SEED:[^ ,]+]]: tensor<i64>, %[[OFFSET:[^ ,]+]]: tensor<i64>)
// CHECK: %[[ATTENTION0:[^ ,]+]], %[[ATTENTION1:[^ ,]+]] = ls2.attention %[[Q]], %[[Q]], %[[Q]], %[[CU]], %[[CU]] dropout(%[[SEED]], %[[OFFSET]]) {causal, dropout_rate = 1.000000e-01 : f32} : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
// CHECK-NEXT: return %[[ATTENTION0]], %[[ATTENTION1]] : tensor<?x12x64xf16>, tensor<?x12xf32>
func.func @attention_stays(%q: tensor<?x12x64xf16>, %cu: tensor<?xi32>, %seed: tensor<i64>, %offset: tensor<i64>) -> (tensor<?x12x64xf16>, tensor<?x12xf32>) {
  %o, %lse = ls2.attention %q, %q, %q, %cu, %cu dropout(%seed, %offset) {causal, dropout_rate = 1.000000e-01 : f32} : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
  return %o, %lse : tensor<?x12x64xf16>, tensor<?x12xf32>
}

