// RUN: ls2c-opt %s | ls2c-opt | FileCheck %s
// RUN: ls2c-opt %s --mlir-print-op-generic | ls2c-opt | FileCheck %s

// Round trip of every ls2 op through its custom and its generic syntax:
// dynamic (`?`) token dims, each element type an op accepts, and every
// optional operand, attribute and default.

// CHECK-LABEL: func.func @unary(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x768xf32>, %[[H:[^ ,]+]]: tensor<?x768xf16>, %[[B:[^ ,]+]]: tensor<?x12x64xbf16>)
// CHECK-NEXT: %[[R0:[^ ,]+]] = ls2.neg %[[X]] : tensor<?x768xf32>
// CHECK-NEXT: %[[R1:[^ ,]+]] = ls2.exp %[[R0]] : tensor<?x768xf32>
// CHECK-NEXT: %[[R2:[^ ,]+]] = ls2.log %[[R1]] : tensor<?x768xf32>
// CHECK-NEXT: %[[R3:[^ ,]+]] = ls2.tanh %[[R2]] : tensor<?x768xf32>
// CHECK-NEXT: %[[R4:[^ ,]+]] = ls2.erf %[[R3]] : tensor<?x768xf32>
// CHECK-NEXT: %[[R5:[^ ,]+]] = ls2.sqrt %[[R4]] : tensor<?x768xf32>
// CHECK-NEXT: %[[R6:[^ ,]+]] = ls2.rsqrt %[[R5]] : tensor<?x768xf32>
// CHECK-NEXT: %[[R7:[^ ,]+]] = ls2.exp %[[H]] : tensor<?x768xf16>
// CHECK-NEXT: %[[R8:[^ ,]+]] = ls2.tanh %[[B]] : tensor<?x12x64xbf16>
// CHECK-NEXT: return %[[R6]], %[[R7]], %[[R8]] : tensor<?x768xf32>, tensor<?x768xf16>, tensor<?x12x64xbf16>
func.func @unary(%x: tensor<?x768xf32>, %h: tensor<?x768xf16>, %b: tensor<?x12x64xbf16>) -> (tensor<?x768xf32>, tensor<?x768xf16>, tensor<?x12x64xbf16>) {
  %0 = ls2.neg %x : tensor<?x768xf32>
  %1 = ls2.exp %0 : tensor<?x768xf32>
  %2 = ls2.log %1 : tensor<?x768xf32>
  %3 = ls2.tanh %2 : tensor<?x768xf32>
  %4 = ls2.erf %3 : tensor<?x768xf32>
  %5 = ls2.sqrt %4 : tensor<?x768xf32>
  %6 = ls2.rsqrt %5 : tensor<?x768xf32>
  %7 = ls2.exp %h : tensor<?x768xf16>
  %8 = ls2.tanh %b : tensor<?x12x64xbf16>
  return %6, %7, %8 : tensor<?x768xf32>, tensor<?x768xf16>, tensor<?x12x64xbf16>
}

// CHECK-LABEL: func.func @binary(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x768xf32>, %[[Y:[^ ,]+]]: tensor<?x768xf32>, %[[H:[^ ,]+]]: tensor<?x768xf16>, %[[S:[^ ,]+]]: tensor<f16>, %[[B:[^ ,]+]]: tensor<4x8xbf16>, %[[SB:[^ ,]+]]: tensor<bf16>, %[[I:[^ ,]+]]: tensor<?xi32>, %[[L:[^ ,]+]]: tensor<?x2xi64>, %[[C:[^ ,]+]]: tensor<f32>)
// CHECK-NEXT: %[[R0:[^ ,]+]] = ls2.add %[[X]], %[[Y]] : tensor<?x768xf32>
// CHECK-NEXT: %[[R1:[^ ,]+]] = ls2.sub %[[R0]], %[[Y]] : tensor<?x768xf32>
// CHECK-NEXT: %[[R2:[^ ,]+]] = ls2.mul %[[R1]], %[[Y]] : tensor<?x768xf32>
// CHECK-NEXT: %[[R3:[^ ,]+]] = ls2.div %[[R2]], %[[Y]] : tensor<?x768xf32>
// CHECK-NEXT: %[[R4:[^ ,]+]] = ls2.max %[[R3]], %[[Y]] : tensor<?x768xf32>
// CHECK-NEXT: %[[R5:[^ ,]+]] = ls2.min %[[R4]], %[[Y]] : tensor<?x768xf32>
// CHECK-NEXT: %[[R6:[^ ,]+]] = ls2.mul %[[H]], %[[S]] : tensor<?x768xf16>, tensor<f16>
// CHECK-NEXT: %[[R7:[^ ,]+]] = ls2.sub %[[SB]], %[[B]] : tensor<bf16>, tensor<4x8xbf16>
// CHECK-NEXT: %[[R8:[^ ,]+]] = ls2.add %[[I]], %[[I]] : tensor<?xi32>
// CHECK-NEXT: %[[R9:[^ ,]+]] = ls2.min %[[L]], %[[L]] : tensor<?x2xi64>
// CHECK-NEXT: %[[R10:[^ ,]+]] = ls2.div %[[C]], %[[C]] : tensor<f32>
// CHECK-NEXT: return %[[R5]], %[[R6]], %[[R7]], %[[R8]], %[[R9]], %[[R10]] : tensor<?x768xf32>, tensor<?x768xf16>, tensor<4x8xbf16>, tensor<?xi32>, tensor<?x2xi64>, tensor<f32>
func.func @binary(%x: tensor<?x768xf32>, %y: tensor<?x768xf32>, %h: tensor<?x768xf16>, %s: tensor<f16>, %b: tensor<4x8xbf16>, %sb: tensor<bf16>, %i: tensor<?xi32>, %l: tensor<?x2xi64>, %c: tensor<f32>) -> (tensor<?x768xf32>, tensor<?x768xf16>, tensor<4x8xbf16>, tensor<?xi32>, tensor<?x2xi64>, tensor<f32>) {
  %0 = ls2.add %x, %y : tensor<?x768xf32>
  %1 = ls2.sub %0, %y : tensor<?x768xf32>
  %2 = ls2.mul %1, %y : tensor<?x768xf32>
  %3 = ls2.div %2, %y : tensor<?x768xf32>
  %4 = ls2.max %3, %y : tensor<?x768xf32>
  %5 = ls2.min %4, %y : tensor<?x768xf32>
  %6 = ls2.mul %h, %s : tensor<?x768xf16>, tensor<f16>
  %7 = ls2.sub %sb, %b : tensor<bf16>, tensor<4x8xbf16>
  %8 = ls2.add %i, %i : tensor<?xi32>
  %9 = ls2.min %l, %l : tensor<?x2xi64>
  %10 = ls2.div %c, %c : tensor<f32>
  return %5, %6, %7, %8, %9, %10 : tensor<?x768xf32>, tensor<?x768xf16>, tensor<4x8xbf16>, tensor<?xi32>, tensor<?x2xi64>, tensor<f32>
}

// CHECK-LABEL: func.func @compare(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x768xf32>, %[[Y:[^ ,]+]]: tensor<?x768xf32>, %[[I:[^ ,]+]]: tensor<?xi64>, %[[Z:[^ ,]+]]: tensor<i64>, %[[H:[^ ,]+]]: tensor<2x3xf16>)
// CHECK-NEXT: %[[R0:[^ ,]+]] = ls2.compare eq, %[[X]], %[[Y]] : tensor<?x768xf32>
// CHECK-NEXT: %[[R1:[^ ,]+]] = ls2.compare ne, %[[X]], %[[Y]] : tensor<?x768xf32>
// CHECK-NEXT: %[[R2:[^ ,]+]] = ls2.compare lt, %[[X]], %[[Y]] : tensor<?x768xf32>
// CHECK-NEXT: %[[R3:[^ ,]+]] = ls2.compare le, %[[X]], %[[Y]] : tensor<?x768xf32>
// CHECK-NEXT: %[[R4:[^ ,]+]] = ls2.compare gt, %[[I]], %[[Z]] : tensor<?xi64>, tensor<i64>
// CHECK-NEXT: %[[R5:[^ ,]+]] = ls2.compare ge, %[[Z]], %[[I]] : tensor<i64>, tensor<?xi64>
// CHECK-NEXT: %[[R6:[^ ,]+]] = ls2.compare lt, %[[H]], %[[H]] : tensor<2x3xf16>
// CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]], %[[R5]], %[[R6]] : tensor<?x768xi1>, tensor<?x768xi1>, tensor<?x768xi1>, tensor<?x768xi1>, tensor<?xi1>, tensor<?xi1>, tensor<2x3xi1>
func.func @compare(%x: tensor<?x768xf32>, %y: tensor<?x768xf32>, %i: tensor<?xi64>, %z: tensor<i64>, %h: tensor<2x3xf16>) -> (tensor<?x768xi1>, tensor<?x768xi1>, tensor<?x768xi1>, tensor<?x768xi1>, tensor<?xi1>, tensor<?xi1>, tensor<2x3xi1>) {
  %0 = ls2.compare eq, %x, %y : tensor<?x768xf32>
  %1 = ls2.compare ne, %x, %y : tensor<?x768xf32>
  %2 = ls2.compare lt, %x, %y : tensor<?x768xf32>
  %3 = ls2.compare le, %x, %y : tensor<?x768xf32>
  %4 = ls2.compare gt, %i, %z : tensor<?xi64>, tensor<i64>
  %5 = ls2.compare ge, %z, %i : tensor<i64>, tensor<?xi64>
  %6 = ls2.compare lt, %h, %h : tensor<2x3xf16>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<?x768xi1>, tensor<?x768xi1>, tensor<?x768xi1>, tensor<?x768xi1>, tensor<?xi1>, tensor<?xi1>, tensor<2x3xi1>
}

// CHECK-LABEL: func.func @select(
// CHECK-SAME: %[[P:[^ ,]+]]: tensor<?x768xi1>, %[[X:[^ ,]+]]: tensor<?x768xbf16>, %[[Y:[^ ,]+]]: tensor<?x768xbf16>, %[[S:[^ ,]+]]: tensor<bf16>, %[[Q:[^ ,]+]]: tensor<?xi1>, %[[I:[^ ,]+]]: tensor<?xi32>, %[[J:[^ ,]+]]: tensor<i32>, %[[K:[^ ,]+]]: tensor<?xi1>)
// CHECK-NEXT: %[[R0:[^ ,]+]] = ls2.select %[[P]], %[[X]], %[[Y]] : tensor<?x768xi1>, tensor<?x768xbf16>, tensor<?x768xbf16>
// CHECK-NEXT: %[[R1:[^ ,]+]] = ls2.select %[[P]], %[[S]], %[[X]] : tensor<?x768xi1>, tensor<bf16>, tensor<?x768xbf16>
// CHECK-NEXT: %[[R2:[^ ,]+]] = ls2.select %[[Q]], %[[I]], %[[J]] : tensor<?xi1>, tensor<?xi32>, tensor<i32>
// CHECK-NEXT: %[[R3:[^ ,]+]] = ls2.select %[[Q]], %[[K]], %[[Q]] : tensor<?xi1>, tensor<?xi1>, tensor<?xi1>
// CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]], %[[R3]] : tensor<?x768xbf16>, tensor<?x768xbf16>, tensor<?xi32>, tensor<?xi1>
func.func @select(%p: tensor<?x768xi1>, %x: tensor<?x768xbf16>, %y: tensor<?x768xbf16>, %s: tensor<bf16>, %q: tensor<?xi1>, %i: tensor<?xi32>, %j: tensor<i32>, %k: tensor<?xi1>) -> (tensor<?x768xbf16>, tensor<?x768xbf16>, tensor<?xi32>, tensor<?xi1>) {
  %0 = ls2.select %p, %x, %y : tensor<?x768xi1>, tensor<?x768xbf16>, tensor<?x768xbf16>
  %1 = ls2.select %p, %s, %x : tensor<?x768xi1>, tensor<bf16>, tensor<?x768xbf16>
  %2 = ls2.select %q, %i, %j : tensor<?xi1>, tensor<?xi32>, tensor<i32>
  %3 = ls2.select %q, %k, %q : tensor<?xi1>, tensor<?xi1>, tensor<?xi1>
  return %0, %1, %2, %3 : tensor<?x768xbf16>, tensor<?x768xbf16>, tensor<?xi32>, tensor<?xi1>
}

// CHECK-LABEL: func.func @cast(
// CHECK-SAME: %[[H:[^ ,]+]]: tensor<?x768xf16>, %[[B:[^ ,]+]]: tensor<?x768xbf16>, %[[I:[^ ,]+]]: tensor<?xi64>, %[[P:[^ ,]+]]: tensor<?xi1>)
// CHECK-NEXT: %[[R0:[^ ,]+]] = ls2.cast %[[H]] : tensor<?x768xf16> to tensor<?x768xf32>
// CHECK-NEXT: %[[R1:[^ ,]+]] = ls2.cast %[[R0]] : tensor<?x768xf32> to tensor<?x768xbf16>
// CHECK-NEXT: %[[R2:[^ ,]+]] = ls2.cast %[[B]] : tensor<?x768xbf16> to tensor<?x768xi32>
// CHECK-NEXT: %[[R3:[^ ,]+]] = ls2.cast %[[I]] : tensor<?xi64> to tensor<?xi32>
// CHECK-NEXT: %[[R4:[^ ,]+]] = ls2.cast %[[P]] : tensor<?xi1> to tensor<?xf32>
// CHECK-NEXT: %[[R5:[^ ,]+]] = ls2.cast %[[R3]] : tensor<?xi32> to tensor<?xi1>
// CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]], %[[R5]] : tensor<?x768xf32>, tensor<?x768xbf16>, tensor<?x768xi32>, tensor<?xi32>, tensor<?xf32>, tensor<?xi1>
func.func @cast(%h: tensor<?x768xf16>, %b: tensor<?x768xbf16>, %i: tensor<?xi64>, %p: tensor<?xi1>) -> (tensor<?x768xf32>, tensor<?x768xbf16>, tensor<?x768xi32>, tensor<?xi32>, tensor<?xf32>, tensor<?xi1>) {
  %0 = ls2.cast %h : tensor<?x768xf16> to tensor<?x768xf32>
  %1 = ls2.cast %0 : tensor<?x768xf32> to tensor<?x768xbf16>
  %2 = ls2.cast %b : tensor<?x768xbf16> to tensor<?x768xi32>
  %3 = ls2.cast %i : tensor<?xi64> to tensor<?xi32>
  %4 = ls2.cast %p : tensor<?xi1> to tensor<?xf32>
  %5 = ls2.cast %3 : tensor<?xi32> to tensor<?xi1>
  return %0, %1, %2, %3, %4, %5 : tensor<?x768xf32>, tensor<?x768xbf16>, tensor<?x768xi32>, tensor<?xi32>, tensor<?xf32>, tensor<?xi1>
}

// CHECK-LABEL: func.func @constant(
// CHECK-NEXT: %[[R0:[^ ,]+]] = ls2.constant dense<1.250000e-01> : tensor<f32>
// CHECK-NEXT: %[[R1:[^ ,]+]] = ls2.constant dense<[1.000000e+00, -2.000000e+00]> : tensor<2xf16>
// CHECK-NEXT: %[[R2:[^ ,]+]] = ls2.constant dense<0.000000e+00> : tensor<2x2xbf16>
// CHECK-NEXT: %[[R3:[^ ,]+]] = ls2.constant dense<[0, 1, 2]> : tensor<3xi32>
// CHECK-NEXT: %[[R4:[^ ,]+]] = ls2.constant dense<-100> : tensor<i64>
// CHECK-NEXT: %[[R5:[^ ,]+]] = ls2.constant dense<[true, false]> : tensor<2xi1>
// CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]], %[[R5]] : tensor<f32>, tensor<2xf16>, tensor<2x2xbf16>, tensor<3xi32>, tensor<i64>, tensor<2xi1>
func.func @constant() -> (tensor<f32>, tensor<2xf16>, tensor<2x2xbf16>, tensor<3xi32>, tensor<i64>, tensor<2xi1>) {
  %0 = ls2.constant dense<1.250000e-01> : tensor<f32>
  %1 = ls2.constant dense<[1.000000e+00, -2.000000e+00]> : tensor<2xf16>
  %2 = ls2.constant dense<0.000000e+00> : tensor<2x2xbf16>
  %3 = ls2.constant dense<[0, 1, 2]> : tensor<3xi32>
  %4 = ls2.constant dense<-100> : tensor<i64>
  %5 = ls2.constant dense<[true, false]> : tensor<2xi1>
  return %0, %1, %2, %3, %4, %5 : tensor<f32>, tensor<2xf16>, tensor<2x2xbf16>, tensor<3xi32>, tensor<i64>, tensor<2xi1>
}

// CHECK-LABEL: func.func @dim_iota(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x12x?xf16>)
// CHECK-NEXT: %[[R0:[^ ,]+]] = ls2.dim %[[X]][0] : tensor<?x12x?xf16>
// CHECK-NEXT: %[[R1:[^ ,]+]] = ls2.dim %[[X]][2] : tensor<?x12x?xf16>
// CHECK-NEXT: %[[R2:[^ ,]+]] = ls2.iota[%[[R0]]]
// CHECK-SAME: {dimension = 1 : i64} : tensor<?x64xi32>
// CHECK-NEXT: %[[R3:[^ ,]+]] = ls2.iota[%[[R0]], %[[R1]]]
// CHECK-SAME: {dimension = 2 : i64} : tensor<12x?x?xi64>
// CHECK-NEXT: %[[R4:[^ ,]+]] = ls2.iota[]
// CHECK-SAME: {dimension = 0 : i64} : tensor<4x8xf32>
// CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]] : index, index, tensor<?x64xi32>, tensor<12x?x?xi64>, tensor<4x8xf32>
func.func @dim_iota(%x: tensor<?x12x?xf16>) -> (index, index, tensor<?x64xi32>, tensor<12x?x?xi64>, tensor<4x8xf32>) {
  %0 = ls2.dim %x[0] : tensor<?x12x?xf16>
  %1 = ls2.dim %x[2] : tensor<?x12x?xf16>
  %2 = ls2.iota [%0] {dimension = 1} : tensor<?x64xi32>
  %3 = ls2.iota [%0, %1] {dimension = 2} : tensor<12x?x?xi64>
  %4 = ls2.iota [] {dimension = 0} : tensor<4x8xf32>
  return %0, %1, %2, %3, %4 : index, index, tensor<?x64xi32>, tensor<12x?x?xi64>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @broadcast(
// CHECK-SAME: %[[BIAS:[^ ,]+]]: tensor<768xf32>, %[[M:[^ ,]+]]: tensor<?x1x1x?xi1>, %[[S:[^ ,]+]]: tensor<bf16>, %[[T:[^ ,]+]]: index, %[[K:[^ ,]+]]: index)
// CHECK-NEXT: %[[R0:[^ ,]+]] = ls2.broadcast %[[BIAS]][%[[T]]]
// CHECK-SAME: {dims = array<i64: 1>} : tensor<768xf32> -> tensor<?x768xf32>
// CHECK-NEXT: %[[R1:[^ ,]+]] = ls2.broadcast %[[M]][%[[T]], %[[K]], %[[K]]]
// CHECK-SAME: {dims = array<i64: 0, 1, 2, 3>} : tensor<?x1x1x?xi1> -> tensor<?x12x?x?xi1>
// CHECK-NEXT: %[[R2:[^ ,]+]] = ls2.broadcast %[[S]][%[[K]]]
// CHECK-SAME: {dims = array<i64>} : tensor<bf16> -> tensor<4x?xbf16>
// CHECK-NEXT: %[[R3:[^ ,]+]] = ls2.broadcast %[[BIAS]][]
// CHECK-SAME: {dims = array<i64: 1>} : tensor<768xf32> -> tensor<2x768xf32>
// CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]], %[[R3]] : tensor<?x768xf32>, tensor<?x12x?x?xi1>, tensor<4x?xbf16>, tensor<2x768xf32>
func.func @broadcast(%bias: tensor<768xf32>, %m: tensor<?x1x1x?xi1>, %s: tensor<bf16>, %t: index, %k: index) -> (tensor<?x768xf32>, tensor<?x12x?x?xi1>, tensor<4x?xbf16>, tensor<2x768xf32>) {
  %0 = ls2.broadcast %bias [%t] {dims = array<i64: 1>} : tensor<768xf32> -> tensor<?x768xf32>
  %1 = ls2.broadcast %m [%t, %k, %k] {dims = array<i64: 0, 1, 2, 3>} : tensor<?x1x1x?xi1> -> tensor<?x12x?x?xi1>
  %2 = ls2.broadcast %s [%k] {dims = array<i64>} : tensor<bf16> -> tensor<4x?xbf16>
  %3 = ls2.broadcast %bias [] {dims = array<i64: 1>} : tensor<768xf32> -> tensor<2x768xf32>
  return %0, %1, %2, %3 : tensor<?x768xf32>, tensor<?x12x?x?xi1>, tensor<4x?xbf16>, tensor<2x768xf32>
}

// CHECK-LABEL: func.func @shape(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x12x64xf16>, %[[QKV:[^ ,]+]]: tensor<?x2304xbf16>, %[[C:[^ ,]+]]: tensor<4x8xi64>, %[[P:[^ ,]+]]: tensor<?x?x64xi1>)
// CHECK-NEXT: %[[R0:[^ ,]+]] = ls2.reshape %[[X]] : tensor<?x12x64xf16> -> tensor<?x768xf16>
// CHECK-NEXT: %[[R1:[^ ,]+]] = ls2.reshape %[[C]] : tensor<4x8xi64> -> tensor<32xi64>
// CHECK-NEXT: %[[R2:[^ ,]+]] = ls2.reshape %[[P]] : tensor<?x?x64xi1> -> tensor<?x64xi1>
// CHECK-NEXT: %[[R3:[^ ,]+]] = ls2.transpose %[[X]] [1, 0, 2] : tensor<?x12x64xf16> -> tensor<12x?x64xf16>
// CHECK-NEXT: %[[R4:[^ ,]+]] = ls2.transpose %[[C]] [1, 0] : tensor<4x8xi64> -> tensor<8x4xi64>
// CHECK-NEXT: %[[R5:[^ ,]+]] = ls2.slice %[[QKV]]
// CHECK-SAME: {axis = 1 : i64, limit = 1536 : i64, start = 768 : i64} : tensor<?x2304xbf16> -> tensor<?x768xbf16>
// CHECK-NEXT: %[[R6:[^ ,]+]] = ls2.slice %[[C]]
// CHECK-SAME: {axis = 1 : i64, limit = 2 : i64, start = 0 : i64} : tensor<4x8xi64> -> tensor<4x2xi64>
// CHECK-NEXT: %[[R7:[^ ,]+]] = ls2.concat %[[R5]], %[[R5]], %[[R5]]
// CHECK-SAME: {axis = 1 : i64} : (tensor<?x768xbf16>, tensor<?x768xbf16>, tensor<?x768xbf16>) -> tensor<?x2304xbf16>
// CHECK-NEXT: %[[R8:[^ ,]+]] = ls2.concat %[[C]], %[[C]]
// CHECK-SAME: {axis = 0 : i64} : (tensor<4x8xi64>, tensor<4x8xi64>) -> tensor<8x8xi64>
// CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]], %[[R5]], %[[R6]], %[[R7]], %[[R8]] : tensor<?x768xf16>, tensor<32xi64>, tensor<?x64xi1>, tensor<12x?x64xf16>, tensor<8x4xi64>, tensor<?x768xbf16>, tensor<4x2xi64>, tensor<?x2304xbf16>, tensor<8x8xi64>
func.func @shape(%x: tensor<?x12x64xf16>, %qkv: tensor<?x2304xbf16>, %c: tensor<4x8xi64>, %p: tensor<?x?x64xi1>) -> (tensor<?x768xf16>, tensor<32xi64>, tensor<?x64xi1>, tensor<12x?x64xf16>, tensor<8x4xi64>, tensor<?x768xbf16>, tensor<4x2xi64>, tensor<?x2304xbf16>, tensor<8x8xi64>) {
  %0 = ls2.reshape %x : tensor<?x12x64xf16> -> tensor<?x768xf16>
  %1 = ls2.reshape %c : tensor<4x8xi64> -> tensor<32xi64>
  %2 = ls2.reshape %p : tensor<?x?x64xi1> -> tensor<?x64xi1>
  %3 = ls2.transpose %x [1, 0, 2] : tensor<?x12x64xf16> -> tensor<12x?x64xf16>
  %4 = ls2.transpose %c [1, 0] : tensor<4x8xi64> -> tensor<8x4xi64>
  %5 = ls2.slice %qkv {axis = 1, start = 768, limit = 1536} : tensor<?x2304xbf16> -> tensor<?x768xbf16>
  %6 = ls2.slice %c {axis = 1, start = 0, limit = 2} : tensor<4x8xi64> -> tensor<4x2xi64>
  %7 = ls2.concat %5, %5, %5 {axis = 1} : (tensor<?x768xbf16>, tensor<?x768xbf16>, tensor<?x768xbf16>) -> tensor<?x2304xbf16>
  %8 = ls2.concat %c, %c {axis = 0} : (tensor<4x8xi64>, tensor<4x8xi64>) -> tensor<8x8xi64>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<?x768xf16>, tensor<32xi64>, tensor<?x64xi1>, tensor<12x?x64xf16>, tensor<8x4xi64>, tensor<?x768xbf16>, tensor<4x2xi64>, tensor<?x2304xbf16>, tensor<8x8xi64>
}

// CHECK-LABEL: func.func @concat_dynamic_axis(
// CHECK-SAME: %[[A:[^ ,]+]]: tensor<?x64xf32>, %[[B:[^ ,]+]]: tensor<8x64xf32>)
// CHECK-NEXT: %[[R0:[^ ,]+]] = ls2.concat %[[A]], %[[B]]
// CHECK-SAME: {axis = 0 : i64} : (tensor<?x64xf32>, tensor<8x64xf32>) -> tensor<?x64xf32>
// CHECK-NEXT: return %[[R0]] : tensor<?x64xf32>
func.func @concat_dynamic_axis(%a: tensor<?x64xf32>, %b: tensor<8x64xf32>) -> tensor<?x64xf32> {
  %0 = ls2.concat %a, %b {axis = 0} : (tensor<?x64xf32>, tensor<8x64xf32>) -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// CHECK-LABEL: func.func @reduce(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x768xf32>, %[[H:[^ ,]+]]: tensor<?x12x64xf16>, %[[I:[^ ,]+]]: tensor<?x4xi32>, %[[B:[^ ,]+]]: tensor<?x8xbf16>, %[[L:[^ ,]+]]: tensor<3x?xi64>)
// CHECK-NEXT: %[[R0:[^ ,]+]] = ls2.reduce_sum %[[X]] [1] : tensor<?x768xf32> -> tensor<?xf32>
// CHECK-NEXT: %[[R1:[^ ,]+]] = ls2.reduce_sum %[[H]] [1, 2]
// CHECK-SAME: {keep_dims} : tensor<?x12x64xf16> -> tensor<?x1x1xf16>
// CHECK-NEXT: %[[R2:[^ ,]+]] = ls2.reduce_sum %[[I]] [0] : tensor<?x4xi32> -> tensor<4xi32>
// CHECK-NEXT: %[[R3:[^ ,]+]] = ls2.reduce_max %[[B]] [1]
// CHECK-SAME: {keep_dims} : tensor<?x8xbf16> -> tensor<?x1xbf16>
// CHECK-NEXT: %[[R4:[^ ,]+]] = ls2.reduce_max %[[X]] [0] : tensor<?x768xf32> -> tensor<768xf32>
// CHECK-NEXT: %[[R5:[^ ,]+]] = ls2.reduce_max %[[L]] [0, 1]
// CHECK-SAME: {keep_dims} : tensor<3x?xi64> -> tensor<1x1xi64>
// CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]], %[[R5]] : tensor<?xf32>, tensor<?x1x1xf16>, tensor<4xi32>, tensor<?x1xbf16>, tensor<768xf32>, tensor<1x1xi64>
func.func @reduce(%x: tensor<?x768xf32>, %h: tensor<?x12x64xf16>, %i: tensor<?x4xi32>, %b: tensor<?x8xbf16>, %l: tensor<3x?xi64>) -> (tensor<?xf32>, tensor<?x1x1xf16>, tensor<4xi32>, tensor<?x1xbf16>, tensor<768xf32>, tensor<1x1xi64>) {
  %0 = ls2.reduce_sum %x [1] : tensor<?x768xf32> -> tensor<?xf32>
  %1 = ls2.reduce_sum %h [1, 2] {keep_dims} : tensor<?x12x64xf16> -> tensor<?x1x1xf16>
  %2 = ls2.reduce_sum %i [0] : tensor<?x4xi32> -> tensor<4xi32>
  %3 = ls2.reduce_max %b [1] {keep_dims} : tensor<?x8xbf16> -> tensor<?x1xbf16>
  %4 = ls2.reduce_max %x [0] : tensor<?x768xf32> -> tensor<768xf32>
  %5 = ls2.reduce_max %l [0, 1] {keep_dims} : tensor<3x?xi64> -> tensor<1x1xi64>
  return %0, %1, %2, %3, %4, %5 : tensor<?xf32>, tensor<?x1x1xf16>, tensor<4xi32>, tensor<?x1xbf16>, tensor<768xf32>, tensor<1x1xi64>
}

// CHECK-LABEL: func.func @matmul(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x768xf16>, %[[W:[^ ,]+]]: tensor<3072x768xf16>, %[[WT:[^ ,]+]]: tensor<768x3072xf16>, %[[Q:[^ ,]+]]: tensor<?x12x?x64xbf16>, %[[K:[^ ,]+]]: tensor<?x12x?x64xbf16>, %[[A:[^ ,]+]]: tensor<8x?x64xf32>, %[[G:[^ ,]+]]: tensor<?x3072xf16>)
// CHECK-NEXT: %[[R0:[^ ,]+]] = ls2.matmul %[[X]], %[[W]]
// CHECK-SAME: {transpose_b} : tensor<?x768xf16>, tensor<3072x768xf16> -> tensor<?x3072xf16>
// CHECK-NEXT: %[[R1:[^ ,]+]] = ls2.matmul %[[X]], %[[WT]]
// CHECK-SAME: {acc_type = f16} : tensor<?x768xf16>, tensor<768x3072xf16> -> tensor<?x3072xf32>
// CHECK-NEXT: %[[R2:[^ ,]+]] = ls2.matmul %[[X]], %[[G]]
// CHECK-SAME: {acc_type = f32, transpose_a} : tensor<?x768xf16>, tensor<?x3072xf16> -> tensor<768x3072xf32>
// CHECK-NEXT: %[[R3:[^ ,]+]] = ls2.matmul %[[Q]], %[[K]]
// CHECK-SAME: {transpose_b} : tensor<?x12x?x64xbf16>, tensor<?x12x?x64xbf16> -> tensor<?x12x?x?xf32>
// CHECK-NEXT: %[[R4:[^ ,]+]] = ls2.matmul %[[A]], %[[A]]
// CHECK-SAME: {transpose_b} : tensor<8x?x64xf32>, tensor<8x?x64xf32> -> tensor<8x?x?xf32>
// CHECK-NEXT: %[[R5:[^ ,]+]] = ls2.matmul %[[WT]], %[[X]]
// CHECK-SAME: {transpose_a, transpose_b} : tensor<768x3072xf16>, tensor<?x768xf16> -> tensor<3072x?xf16>
// CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]], %[[R5]] : tensor<?x3072xf16>, tensor<?x3072xf32>, tensor<768x3072xf32>, tensor<?x12x?x?xf32>, tensor<8x?x?xf32>, tensor<3072x?xf16>
func.func @matmul(%x: tensor<?x768xf16>, %w: tensor<3072x768xf16>, %wt: tensor<768x3072xf16>, %q: tensor<?x12x?x64xbf16>, %k: tensor<?x12x?x64xbf16>, %a: tensor<8x?x64xf32>, %g: tensor<?x3072xf16>) -> (tensor<?x3072xf16>, tensor<?x3072xf32>, tensor<768x3072xf32>, tensor<?x12x?x?xf32>, tensor<8x?x?xf32>, tensor<3072x?xf16>) {
  %0 = ls2.matmul %x, %w {transpose_b} : tensor<?x768xf16>, tensor<3072x768xf16> -> tensor<?x3072xf16>
  %1 = ls2.matmul %x, %wt {acc_type = f16} : tensor<?x768xf16>, tensor<768x3072xf16> -> tensor<?x3072xf32>
  %2 = ls2.matmul %x, %g {transpose_a, acc_type = f32} : tensor<?x768xf16>, tensor<?x3072xf16> -> tensor<768x3072xf32>
  %3 = ls2.matmul %q, %k {transpose_b} : tensor<?x12x?x64xbf16>, tensor<?x12x?x64xbf16> -> tensor<?x12x?x?xf32>
  %4 = ls2.matmul %a, %a {transpose_b} : tensor<8x?x64xf32>, tensor<8x?x64xf32> -> tensor<8x?x?xf32>
  %5 = ls2.matmul %wt, %x {transpose_a, transpose_b} : tensor<768x3072xf16>, tensor<?x768xf16> -> tensor<3072x?xf16>
  return %0, %1, %2, %3, %4, %5 : tensor<?x3072xf16>, tensor<?x3072xf32>, tensor<768x3072xf32>, tensor<?x12x?x?xf32>, tensor<8x?x?xf32>, tensor<3072x?xf16>
}

// CHECK-LABEL: func.func @matmul_shared_b(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x16x768xbf16>, %[[W:[^ ,]+]]: tensor<768x3072xbf16>)
// CHECK-NEXT: %[[R0:[^ ,]+]] = ls2.matmul %[[X]], %[[W]] : tensor<?x16x768xbf16>, tensor<768x3072xbf16> -> tensor<?x16x3072xbf16>
// CHECK-NEXT: return %[[R0]] : tensor<?x16x3072xbf16>
func.func @matmul_shared_b(%x: tensor<?x16x768xbf16>, %w: tensor<768x3072xbf16>) -> tensor<?x16x3072xbf16> {
  %0 = ls2.matmul %x, %w : tensor<?x16x768xbf16>, tensor<768x3072xbf16> -> tensor<?x16x3072xbf16>
  return %0 : tensor<?x16x3072xbf16>
}

// The cuBLASLt epilogues ls2-fuse attaches: bias, BGRADA, the activations
// with their aux (the GELU input; the ReLU bit mask, ceil(N / 128) * 4 i32
// words a row) and their gradients reading it, with the bias gradient.
// CHECK-LABEL: func.func @matmul_epilogues(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x64xbf16>, %[[W1:[^ ,]+]]: tensor<64x200xbf16>, %[[B1:[^ ,]+]]: tensor<200xbf16>, %[[DY:[^ ,]+]]: tensor<?x64xbf16>, %[[W2:[^ ,]+]]: tensor<200x64xbf16>)
// CHECK-NEXT: %[[B:[^ ,]+]] = ls2.matmul %[[X]], %[[W1]] bias(%[[B1]] : tensor<200xbf16>) : tensor<?x64xbf16>, tensor<64x200xbf16> -> tensor<?x200xbf16>
// CHECK-NEXT: %[[W:[^ ,]+]], %[[BG:[^ ,]+]] = ls2.matmul %[[X]], %[[DY]] {transpose_a} : tensor<?x64xbf16>, tensor<?x64xbf16> -> tensor<64x64xbf16>, tensor<64xbf16>
// CHECK-NEXT: %[[G:[^ ,]+]], %[[PRE:[^ ,]+]] = ls2.matmul %[[X]], %[[W1]] bias(%[[B1]] : tensor<200xbf16>)
// CHECK-SAME: {activation = #ls2<gemm_activation gelu_tanh>} : tensor<?x64xbf16>, tensor<64x200xbf16> -> tensor<?x200xbf16> aux tensor<?x200xbf16>
// CHECK-NEXT: %[[DG:[^ ,]+]], %[[DB:[^ ,]+]] = ls2.matmul %[[DY]], %[[W2]] aux(%[[PRE]] : tensor<?x200xbf16>)
// CHECK-SAME: {activation = #ls2<gemm_activation gelu_tanh_grad>, transpose_b} : tensor<?x64xbf16>, tensor<200x64xbf16> -> tensor<?x200xbf16>, tensor<200xbf16>
// CHECK-NEXT: %[[R:[^ ,]+]], %[[MASK:[^ ,]+]] = ls2.matmul %[[X]], %[[W1]] bias(%[[B1]] : tensor<200xbf16>)
// CHECK-SAME: {activation = #ls2<gemm_activation relu>} : tensor<?x64xbf16>, tensor<64x200xbf16> -> tensor<?x200xbf16> aux tensor<?x8xi32>
// CHECK-NEXT: %[[DR:[^ ,]+]] = ls2.matmul %[[DY]], %[[W2]] aux(%[[MASK]] : tensor<?x8xi32>)
// CHECK-SAME: {activation = #ls2<gemm_activation relu_grad>, transpose_b} : tensor<?x64xbf16>, tensor<200x64xbf16> -> tensor<?x200xbf16>
// CHECK-NEXT: %[[NB:[^ ,]+]] = ls2.matmul %[[X]], %[[W1]] {activation = #ls2<gemm_activation gelu_tanh>} : tensor<?x64xbf16>, tensor<64x200xbf16> -> tensor<?x200xbf16>
// CHECK-NEXT: return
func.func @matmul_epilogues(%x: tensor<?x64xbf16>, %w1: tensor<64x200xbf16>, %b1: tensor<200xbf16>, %dy: tensor<?x64xbf16>, %w2: tensor<200x64xbf16>) -> (tensor<?x200xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<?x200xbf16>, tensor<?x200xbf16>, tensor<200xbf16>, tensor<?x200xbf16>, tensor<?x200xbf16>, tensor<?x200xbf16>) {
  %0 = ls2.matmul %x, %w1 bias(%b1 : tensor<200xbf16>) : tensor<?x64xbf16>, tensor<64x200xbf16> -> tensor<?x200xbf16>
  %1, %2 = ls2.matmul %x, %dy {transpose_a} : tensor<?x64xbf16>, tensor<?x64xbf16> -> tensor<64x64xbf16>, tensor<64xbf16>
  %3, %4 = ls2.matmul %x, %w1 bias(%b1 : tensor<200xbf16>) {activation = #ls2<gemm_activation gelu_tanh>} : tensor<?x64xbf16>, tensor<64x200xbf16> -> tensor<?x200xbf16> aux tensor<?x200xbf16>
  %5, %6 = ls2.matmul %dy, %w2 aux(%4 : tensor<?x200xbf16>) {activation = #ls2<gemm_activation gelu_tanh_grad>, transpose_b} : tensor<?x64xbf16>, tensor<200x64xbf16> -> tensor<?x200xbf16>, tensor<200xbf16>
  %7, %8 = ls2.matmul %x, %w1 bias(%b1 : tensor<200xbf16>) {activation = #ls2<gemm_activation relu>} : tensor<?x64xbf16>, tensor<64x200xbf16> -> tensor<?x200xbf16> aux tensor<?x8xi32>
  %9 = ls2.matmul %dy, %w2 aux(%8 : tensor<?x8xi32>) {activation = #ls2<gemm_activation relu_grad>, transpose_b} : tensor<?x64xbf16>, tensor<200x64xbf16> -> tensor<?x200xbf16>
  %10 = ls2.matmul %x, %w1 {activation = #ls2<gemm_activation gelu_tanh>} : tensor<?x64xbf16>, tensor<64x200xbf16> -> tensor<?x200xbf16>
  return %0, %1, %2, %3, %5, %6, %7, %9, %10 : tensor<?x200xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<?x200xbf16>, tensor<?x200xbf16>, tensor<200xbf16>, tensor<?x200xbf16>, tensor<?x200xbf16>, tensor<?x200xbf16>
}

// CHECK-LABEL: func.func @embedding(
// CHECK-SAME: %[[WTE:[^ ,]+]]: tensor<50257x768xbf16>, %[[IDS:[^ ,]+]]: tensor<?xi32>, %[[IDS2:[^ ,]+]]: tensor<?x?xi64>, %[[POS:[^ ,]+]]: tensor<1024xf32>, %[[G:[^ ,]+]]: tensor<?x768xf32>)
// CHECK-NEXT: %[[R0:[^ ,]+]] = ls2.gather %[[WTE]][%[[IDS]]] : tensor<50257x768xbf16>, tensor<?xi32> -> tensor<?x768xbf16>
// CHECK-NEXT: %[[R1:[^ ,]+]] = ls2.gather %[[WTE]][%[[IDS2]]] : tensor<50257x768xbf16>, tensor<?x?xi64> -> tensor<?x?x768xbf16>
// CHECK-NEXT: %[[R2:[^ ,]+]] = ls2.gather %[[POS]][%[[IDS2]]] : tensor<1024xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
// CHECK-NEXT: %[[R3:[^ ,]+]] = ls2.scatter_add %[[G]], %[[IDS]] : tensor<?x768xf32>, tensor<?xi32> -> tensor<50257x768xf32>
// CHECK-NEXT: %[[R4:[^ ,]+]] = ls2.scatter_add %[[G]], %[[IDS]]
// CHECK-SAME: {padding_idx = 0 : i64} : tensor<?x768xf32>, tensor<?xi32> -> tensor<50257x768xf32>
// CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]] : tensor<?x768xbf16>, tensor<?x?x768xbf16>, tensor<?x?xf32>, tensor<50257x768xf32>, tensor<50257x768xf32>
func.func @embedding(%wte: tensor<50257x768xbf16>, %ids: tensor<?xi32>, %ids2: tensor<?x?xi64>, %pos: tensor<1024xf32>, %g: tensor<?x768xf32>) -> (tensor<?x768xbf16>, tensor<?x?x768xbf16>, tensor<?x?xf32>, tensor<50257x768xf32>, tensor<50257x768xf32>) {
  %0 = ls2.gather %wte[%ids] : tensor<50257x768xbf16>, tensor<?xi32> -> tensor<?x768xbf16>
  %1 = ls2.gather %wte[%ids2] : tensor<50257x768xbf16>, tensor<?x?xi64> -> tensor<?x?x768xbf16>
  %2 = ls2.gather %pos[%ids2] : tensor<1024xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  %3 = ls2.scatter_add %g, %ids : tensor<?x768xf32>, tensor<?xi32> -> tensor<50257x768xf32>
  %4 = ls2.scatter_add %g, %ids {padding_idx = 0 : i64} : tensor<?x768xf32>, tensor<?xi32> -> tensor<50257x768xf32>
  return %0, %1, %2, %3, %4 : tensor<?x768xbf16>, tensor<?x?x768xbf16>, tensor<?x?xf32>, tensor<50257x768xf32>, tensor<50257x768xf32>
}

// Rows of an activation (a dynamic row count) selected by positions, and
// the gradient's scatter_add sized by an index operand.
// CHECK-LABEL: func.func @labelled_rows(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x64xf16>, %[[MASK:[^ ,]+]]: tensor<?xi1>, %[[DY:[^ ,]+]]: tensor<12x64xf16>)
// CHECK-NEXT: %[[P:[^ ,]+]] = ls2.nonzero %[[MASK]] : tensor<?xi1> -> tensor<12xi32>
// CHECK-NEXT: %[[P2:[^ ,]+]] = ls2.nonzero %[[MASK]] {fill_value = 0 : i64} : tensor<?xi1> -> tensor<4xi64>
// CHECK-NEXT: %[[R:[^ ,]+]] = ls2.gather %[[X]][%[[P]]] : tensor<?x64xf16>, tensor<12xi32> -> tensor<12x64xf16>
// CHECK-NEXT: %[[T:[^ ,]+]] = ls2.dim %[[X]][0] : tensor<?x64xf16>
// CHECK-NEXT: %[[DX:[^ ,]+]] = ls2.scatter_add %[[DY]], %[[P]][%[[T]]] : tensor<12x64xf16>, tensor<12xi32> -> tensor<?x64xf16>
// CHECK-NEXT: %[[F:[^ ,]+]] = ls2.gather %[[X]][%[[P]]] {fill_value = 0.000000e+00 : f64} : tensor<?x64xf16>, tensor<12xi32> -> tensor<12x64xf16>
// CHECK-NEXT: %[[DF:[^ ,]+]] = ls2.scatter_add %[[DY]], %[[P]][%[[T]]] {drop_out_of_range} : tensor<12x64xf16>, tensor<12xi32> -> tensor<?x64xf16>
// CHECK-NEXT: return %[[P2]], %[[R]], %[[DX]], %[[F]], %[[DF]]
func.func @labelled_rows(%x: tensor<?x64xf16>, %mask: tensor<?xi1>, %dy: tensor<12x64xf16>) -> (tensor<4xi64>, tensor<12x64xf16>, tensor<?x64xf16>, tensor<12x64xf16>, tensor<?x64xf16>) {
  %p = ls2.nonzero %mask : tensor<?xi1> -> tensor<12xi32>
  %p2 = ls2.nonzero %mask {fill_value = 0 : i64} : tensor<?xi1> -> tensor<4xi64>
  %r = ls2.gather %x[%p] : tensor<?x64xf16>, tensor<12xi32> -> tensor<12x64xf16>
  %t = ls2.dim %x[0] : tensor<?x64xf16>
  %dx = ls2.scatter_add %dy, %p [%t] : tensor<12x64xf16>, tensor<12xi32> -> tensor<?x64xf16>
  %f = ls2.gather %x[%p] {fill_value = 0.0 : f64} : tensor<?x64xf16>, tensor<12xi32> -> tensor<12x64xf16>
  %df = ls2.scatter_add %dy, %p [%t] {drop_out_of_range} : tensor<12x64xf16>, tensor<12xi32> -> tensor<?x64xf16>
  return %p2, %r, %dx, %f, %df : tensor<4xi64>, tensor<12x64xf16>, tensor<?x64xf16>, tensor<12x64xf16>, tensor<?x64xf16>
}

// CHECK-LABEL: func.func @random(
// CHECK-SAME: %[[SEED:[^ ,]+]]: tensor<i64>, %[[OFFSET:[^ ,]+]]: tensor<i64>, %[[T:[^ ,]+]]: index)
// CHECK-NEXT: %[[R0:[^ ,]+]] = ls2.random_uniform %[[SEED]], %[[OFFSET]][%[[T]]]
// CHECK-SAME: {stream = 2 : i64} : tensor<?x768xf32>
// CHECK-NEXT: %[[R1:[^ ,]+]] = ls2.random_uniform %[[SEED]], %[[OFFSET]][]
// CHECK-SAME: {stream = 0 : i64} : tensor<4x4xf32>
// CHECK-NEXT: return %[[R0]], %[[R1]] : tensor<?x768xf32>, tensor<4x4xf32>
func.func @random(%seed: tensor<i64>, %offset: tensor<i64>, %t: index) -> (tensor<?x768xf32>, tensor<4x4xf32>) {
  %0 = ls2.random_uniform %seed, %offset [%t] {stream = 2} : tensor<?x768xf32>
  %1 = ls2.random_uniform %seed, %offset [] {stream = 0} : tensor<4x4xf32>
  return %0, %1 : tensor<?x768xf32>, tensor<4x4xf32>
}

// CHECK-LABEL: func.func @dropout_gelu(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x768xf16>, %[[B:[^ ,]+]]: tensor<?x3072xbf16>, %[[F:[^ ,]+]]: tensor<?x3072xf32>, %[[SEED:[^ ,]+]]: tensor<i64>, %[[OFFSET:[^ ,]+]]: tensor<i64>)
// CHECK-NEXT: %[[R0:[^ ,]+]] = ls2.dropout %[[X]], %[[SEED]], %[[OFFSET]]
// CHECK-SAME: {rate = 1.000000e-01 : f32, stream = 1 : i64} : tensor<?x768xf16>
// CHECK-NEXT: %[[R1:[^ ,]+]] = ls2.dropout %[[B]], %[[SEED]], %[[OFFSET]]
// CHECK-SAME: {rate = 0.000000e+00 : f32, stream = 7 : i64} : tensor<?x3072xbf16>
// CHECK-NEXT: %[[R2:[^ ,]+]] = ls2.gelu %[[F]] : tensor<?x3072xf32>
// CHECK-NEXT: %[[R3:[^ ,]+]] = ls2.gelu %[[B]]
// CHECK-SAME: {approximate = #ls2<gelu_approximation tanh>} : tensor<?x3072xbf16>
// CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]], %[[R3]] : tensor<?x768xf16>, tensor<?x3072xbf16>, tensor<?x3072xf32>, tensor<?x3072xbf16>
func.func @dropout_gelu(%x: tensor<?x768xf16>, %b: tensor<?x3072xbf16>, %f: tensor<?x3072xf32>, %seed: tensor<i64>, %offset: tensor<i64>) -> (tensor<?x768xf16>, tensor<?x3072xbf16>, tensor<?x3072xf32>, tensor<?x3072xbf16>) {
  %0 = ls2.dropout %x, %seed, %offset {rate = 1.000000e-01 : f32, stream = 1} : tensor<?x768xf16>
  %1 = ls2.dropout %b, %seed, %offset {rate = 0.000000e+00 : f32, stream = 7} : tensor<?x3072xbf16>
  %2 = ls2.gelu %f : tensor<?x3072xf32>
  %3 = ls2.gelu %b {approximate = #ls2<gelu_approximation tanh>} : tensor<?x3072xbf16>
  return %0, %1, %2, %3 : tensor<?x768xf16>, tensor<?x3072xbf16>, tensor<?x3072xf32>, tensor<?x3072xbf16>
}

// CHECK-LABEL: func.func @layer_norm(
// CHECK-SAME: %[[X:[^ ,]+]]: tensor<?x768xf32>, %[[G:[^ ,]+]]: tensor<768xf32>, %[[B:[^ ,]+]]: tensor<768xf32>, %[[H:[^ ,]+]]: tensor<?x16x1024xbf16>, %[[GH:[^ ,]+]]: tensor<1024xbf16>, %[[BH:[^ ,]+]]: tensor<1024xbf16>, %[[V:[^ ,]+]]: tensor<64xf16>)
// CHECK-NEXT: %[[Y:[^ ,]+]], %[[MEAN:[^ ,]+]], %[[RSTD:[^ ,]+]] = ls2.layer_norm %[[X]], %[[G]], %[[B]]
// CHECK-SAME: {epsilon = 9.99999974E-6 : f32} : tensor<?x768xf32>, tensor<768xf32>, tensor<768xf32>
// CHECK-NEXT: %[[Y2:[^ ,]+]], %[[MEAN2:[^ ,]+]], %[[RSTD2:[^ ,]+]] = ls2.layer_norm %[[H]], %[[GH]], %[[BH]]
// CHECK-SAME: {epsilon = 9.99999996E-13 : f32} : tensor<?x16x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>
// CHECK-NEXT: %[[Y3:[^ ,]+]], %[[MEAN3:[^ ,]+]], %[[RSTD3:[^ ,]+]] = ls2.layer_norm %[[V]], %[[V]], %[[V]]
// CHECK-SAME: {epsilon = 1.000000e-03 : f32} : tensor<64xf16>, tensor<64xf16>, tensor<64xf16>
// CHECK-NEXT: return %[[Y]], %[[MEAN]], %[[RSTD]], %[[Y2]], %[[RSTD2]], %[[Y3]], %[[MEAN3]] : tensor<?x768xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x16x1024xbf16>, tensor<?x16xf32>, tensor<64xf16>, tensor<f32>
func.func @layer_norm(%x: tensor<?x768xf32>, %g: tensor<768xf32>, %b: tensor<768xf32>, %h: tensor<?x16x1024xbf16>, %gh: tensor<1024xbf16>, %bh: tensor<1024xbf16>, %v: tensor<64xf16>) -> (tensor<?x768xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x16x1024xbf16>, tensor<?x16xf32>, tensor<64xf16>, tensor<f32>) {
  %y, %mean, %rstd = ls2.layer_norm %x, %g, %b {epsilon = 9.99999974E-6 : f32} : tensor<?x768xf32>, tensor<768xf32>, tensor<768xf32>
  %y2, %mean2, %rstd2 = ls2.layer_norm %h, %gh, %bh {epsilon = 9.99999996E-13 : f32} : tensor<?x16x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>
  %y3, %mean3, %rstd3 = ls2.layer_norm %v, %v, %v {epsilon = 1.000000e-03 : f32} : tensor<64xf16>, tensor<64xf16>, tensor<64xf16>
  return %y, %mean, %rstd, %y2, %rstd2, %y3, %mean3 : tensor<?x768xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x16x1024xbf16>, tensor<?x16xf32>, tensor<64xf16>, tensor<f32>
}

// CHECK-LABEL: func.func @softmax(
// CHECK-SAME: %[[S:[^ ,]+]]: tensor<?x12x?x?xf16>, %[[ADD:[^ ,]+]]: tensor<?x1x1x?xf32>, %[[KEEP:[^ ,]+]]: tensor<?x1x?x?xi1>, %[[X:[^ ,]+]]: tensor<?x128xf32>, %[[HM:[^ ,]+]]: tensor<1x128xf16>)
// CHECK-NEXT: %[[R0:[^ ,]+]] = ls2.softmax %[[S]] : tensor<?x12x?x?xf16> -> tensor<?x12x?x?xf16>
// CHECK-NEXT: %[[R1:[^ ,]+]] = ls2.softmax %[[S]] mask %[[ADD]] : tensor<?x1x1x?xf32>
// CHECK-SAME: {scale = 1.250000e-01 : f32} : tensor<?x12x?x?xf16> -> tensor<?x12x?x?xf16>
// CHECK-NEXT: %[[R2:[^ ,]+]] = ls2.softmax %[[S]] mask %[[KEEP]] : tensor<?x1x?x?xi1> : tensor<?x12x?x?xf16> -> tensor<?x12x?x?xf32>
// CHECK-NEXT: %[[R3:[^ ,]+]] = ls2.softmax %[[S]]
// CHECK-SAME: {causal, scale = 1.250000e-01 : f32} : tensor<?x12x?x?xf16> -> tensor<?x12x?x?xf16>
// CHECK-NEXT: %[[R4:[^ ,]+]] = ls2.softmax %[[X]] : tensor<?x128xf32> -> tensor<?x128xbf16>
// CHECK-NEXT: %[[R5:[^ ,]+]] = ls2.softmax %[[X]] mask %[[HM]] : tensor<1x128xf16>
// CHECK-SAME: {causal} : tensor<?x128xf32> -> tensor<?x128xf32>
// CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]], %[[R5]] : tensor<?x12x?x?xf16>, tensor<?x12x?x?xf16>, tensor<?x12x?x?xf32>, tensor<?x12x?x?xf16>, tensor<?x128xbf16>, tensor<?x128xf32>
func.func @softmax(%s: tensor<?x12x?x?xf16>, %add: tensor<?x1x1x?xf32>, %keep: tensor<?x1x?x?xi1>, %x: tensor<?x128xf32>, %hm: tensor<1x128xf16>) -> (tensor<?x12x?x?xf16>, tensor<?x12x?x?xf16>, tensor<?x12x?x?xf32>, tensor<?x12x?x?xf16>, tensor<?x128xbf16>, tensor<?x128xf32>) {
  %0 = ls2.softmax %s : tensor<?x12x?x?xf16> -> tensor<?x12x?x?xf16>
  %1 = ls2.softmax %s mask %add : tensor<?x1x1x?xf32> {scale = 1.250000e-01 : f32} : tensor<?x12x?x?xf16> -> tensor<?x12x?x?xf16>
  %2 = ls2.softmax %s mask %keep : tensor<?x1x?x?xi1> : tensor<?x12x?x?xf16> -> tensor<?x12x?x?xf32>
  %3 = ls2.softmax %s {causal, scale = 1.250000e-01 : f32} : tensor<?x12x?x?xf16> -> tensor<?x12x?x?xf16>
  %4 = ls2.softmax %x : tensor<?x128xf32> -> tensor<?x128xbf16>
  %5 = ls2.softmax %x mask %hm : tensor<1x128xf16> {causal} : tensor<?x128xf32> -> tensor<?x128xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<?x12x?x?xf16>, tensor<?x12x?x?xf16>, tensor<?x12x?x?xf32>, tensor<?x12x?x?xf16>, tensor<?x128xbf16>, tensor<?x128xf32>
}

// CHECK-LABEL: func.func @attention(
// CHECK-SAME: %[[Q:[^ ,]+]]: tensor<?x12x64xf16>, %[[K:[^ ,]+]]: tensor<?x12x64xf16>, %[[V:[^ ,]+]]: tensor<?x12x64xf16>, %[[CUQ:[^ ,]+]]: tensor<?xi32>, %[[CUK:[^ ,]+]]: tensor<?xi32>, %[[SEED:[^ ,]+]]: tensor<i64>, %[[OFFSET:[^ ,]+]]: tensor<i64>)
// CHECK-NEXT: %[[O:[^ ,]+]], %[[LSE:[^ ,]+]] = ls2.attention %[[Q]], %[[K]], %[[V]], %[[CUQ]], %[[CUK]] : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
// CHECK-NEXT: %[[O1:[^ ,]+]], %[[LSE1:[^ ,]+]] = ls2.attention %[[Q]], %[[K]], %[[V]], %[[CUQ]], %[[CUK]]
// CHECK-SAME: {causal, scale = 1.250000e-01 : f32} : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
// CHECK-NEXT: %[[O2:[^ ,]+]], %[[LSE2:[^ ,]+]] = ls2.attention %[[Q]], %[[K]], %[[V]], %[[CUQ]], %[[CUK]] dropout(%[[SEED]], %[[OFFSET]])
// CHECK-SAME: {causal, dropout_rate = 1.000000e-01 : f32, stream = 3 : i64} : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
// CHECK-NEXT: return %[[O]], %[[LSE]], %[[O1]], %[[LSE1]], %[[O2]], %[[LSE2]] : tensor<?x12x64xf16>, tensor<?x12xf32>, tensor<?x12x64xf16>, tensor<?x12xf32>, tensor<?x12x64xf16>, tensor<?x12xf32>
func.func @attention(%q: tensor<?x12x64xf16>, %k: tensor<?x12x64xf16>, %v: tensor<?x12x64xf16>, %cuq: tensor<?xi32>, %cuk: tensor<?xi32>, %seed: tensor<i64>, %offset: tensor<i64>) -> (tensor<?x12x64xf16>, tensor<?x12xf32>, tensor<?x12x64xf16>, tensor<?x12xf32>, tensor<?x12x64xf16>, tensor<?x12xf32>) {
  %o, %lse = ls2.attention %q, %k, %v, %cuq, %cuk : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
  %o1, %lse1 = ls2.attention %q, %k, %v, %cuq, %cuk {causal, scale = 1.250000e-01 : f32} : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
  %o2, %lse2 = ls2.attention %q, %k, %v, %cuq, %cuk dropout(%seed, %offset) {causal, dropout_rate = 1.000000e-01 : f32, stream = 3} : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
  return %o, %lse, %o1, %lse1, %o2, %lse2 : tensor<?x12x64xf16>, tensor<?x12xf32>, tensor<?x12x64xf16>, tensor<?x12xf32>, tensor<?x12x64xf16>, tensor<?x12xf32>
}

// A KV cache's keys: key_lengths rows from each start, printed before dropout.
// CHECK-LABEL: func.func @attention_cache(
// CHECK: ls2.attention %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}} key_lengths(%{{[^ ,]+}} : tensor<?xi32>) : tensor<?x12x64xf16>, tensor<?x4x64xf16>, tensor<?x4x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
func.func @attention_cache(%q: tensor<?x12x64xf16>, %k: tensor<?x4x64xf16>, %cuq: tensor<?xi32>, %starts: tensor<?xi32>, %n: tensor<?xi32>) -> tensor<?x12x64xf16> {
  %o, %lse = ls2.attention %q, %k, %k, %cuq, %starts key_lengths(%n : tensor<?xi32>) : tensor<?x12x64xf16>, tensor<?x4x64xf16>, tensor<?x4x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
  return %o : tensor<?x12x64xf16>
}

// CHECK-LABEL: func.func @attention_gqa(
// CHECK-SAME: %[[Q:[^ ,]+]]: tensor<?x32x128xbf16>, %[[K:[^ ,]+]]: tensor<?x8x128xbf16>, %[[V:[^ ,]+]]: tensor<?x8x128xbf16>, %[[MK:[^ ,]+]]: tensor<?x1x128xbf16>, %[[CUQ:[^ ,]+]]: tensor<5xi32>, %[[CUK:[^ ,]+]]: tensor<5xi32>)
// CHECK-NEXT: %[[O:[^ ,]+]], %[[LSE:[^ ,]+]] = ls2.attention %[[Q]], %[[K]], %[[V]], %[[CUQ]], %[[CUK]]
// CHECK-SAME: {causal} : tensor<?x32x128xbf16>, tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<5xi32>, tensor<5xi32> -> tensor<?x32x128xbf16>, tensor<?x32xf32>
// CHECK-NEXT: %[[O1:[^ ,]+]], %[[LSE1:[^ ,]+]] = ls2.attention %[[Q]], %[[MK]], %[[MK]], %[[CUQ]], %[[CUK]] : tensor<?x32x128xbf16>, tensor<?x1x128xbf16>, tensor<?x1x128xbf16>, tensor<5xi32>, tensor<5xi32> -> tensor<?x32x128xbf16>, tensor<?x32xf32>
// CHECK-NEXT: return %[[O]], %[[LSE]], %[[O1]], %[[LSE1]] : tensor<?x32x128xbf16>, tensor<?x32xf32>, tensor<?x32x128xbf16>, tensor<?x32xf32>
func.func @attention_gqa(%q: tensor<?x32x128xbf16>, %k: tensor<?x8x128xbf16>, %v: tensor<?x8x128xbf16>, %mk: tensor<?x1x128xbf16>, %cuq: tensor<5xi32>, %cuk: tensor<5xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>, tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %o, %lse = ls2.attention %q, %k, %v, %cuq, %cuk {causal} : tensor<?x32x128xbf16>, tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<5xi32>, tensor<5xi32> -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  %o1, %lse1 = ls2.attention %q, %mk, %mk, %cuq, %cuk : tensor<?x32x128xbf16>, tensor<?x1x128xbf16>, tensor<?x1x128xbf16>, tensor<5xi32>, tensor<5xi32> -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %lse, %o1, %lse1 : tensor<?x32x128xbf16>, tensor<?x32xf32>, tensor<?x32x128xbf16>, tensor<?x32xf32>
}

// CHECK-LABEL: func.func @cross_entropy(
// CHECK-SAME: %[[LOGITS:[^ ,]+]]: tensor<?x50257xf16>, %[[T:[^ ,]+]]: tensor<?xi32>, %[[LF:[^ ,]+]]: tensor<?x1000xf32>, %[[T64:[^ ,]+]]: tensor<?xi64>)
// CHECK-NEXT: %[[R0:[^ ,]+]] = ls2.cross_entropy %[[LOGITS]], %[[T]] : tensor<?x50257xf16>, tensor<?xi32> -> tensor<f32>
// CHECK-NEXT: %[[R1:[^ ,]+]] = ls2.cross_entropy %[[LOGITS]], %[[T]]
// CHECK-SAME: {reduction = #ls2<loss_reduction sum>} : tensor<?x50257xf16>, tensor<?xi32> -> tensor<f32>
// CHECK-NEXT: %[[R2:[^ ,]+]] = ls2.cross_entropy %[[LF]], %[[T64]]
// CHECK-SAME: {ignore_index = 0 : i64, reduction = #ls2<loss_reduction none>} : tensor<?x1000xf32>, tensor<?xi64> -> tensor<?xf32>
// CHECK-NEXT: %[[R3:[^ ,]+]] = ls2.cross_entropy %[[LF]], %[[T64]]
// CHECK-SAME: {label_smoothing = 1.000000e-01 : f32} : tensor<?x1000xf32>, tensor<?xi64> -> tensor<f32>
// CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]], %[[R3]] : tensor<f32>, tensor<f32>, tensor<?xf32>, tensor<f32>
func.func @cross_entropy(%logits: tensor<?x50257xf16>, %t: tensor<?xi32>, %lf: tensor<?x1000xf32>, %t64: tensor<?xi64>) -> (tensor<f32>, tensor<f32>, tensor<?xf32>, tensor<f32>) {
  %0 = ls2.cross_entropy %logits, %t : tensor<?x50257xf16>, tensor<?xi32> -> tensor<f32>
  %1 = ls2.cross_entropy %logits, %t {reduction = #ls2<loss_reduction sum>} : tensor<?x50257xf16>, tensor<?xi32> -> tensor<f32>
  %2 = ls2.cross_entropy %lf, %t64 {ignore_index = 0 : i64, reduction = #ls2<loss_reduction none>} : tensor<?x1000xf32>, tensor<?xi64> -> tensor<?xf32>
  %3 = ls2.cross_entropy %lf, %t64 {label_smoothing = 1.000000e-01 : f32, reduction = #ls2<loss_reduction mean>} : tensor<?x1000xf32>, tensor<?xi64> -> tensor<f32>
  return %0, %1, %2, %3 : tensor<f32>, tensor<f32>, tensor<?xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @adamw(
// CHECK-SAME: %[[P:[^ ,]+]]: tensor<4096xf32>, %[[G:[^ ,]+]]: tensor<4096xbf16>, %[[M:[^ ,]+]]: tensor<4096xf32>, %[[V:[^ ,]+]]: tensor<4096xf32>, %[[STEP:[^ ,]+]]: tensor<i64>, %[[LR:[^ ,]+]]: tensor<f32>, %[[GS:[^ ,]+]]: tensor<f32>, %[[GF:[^ ,]+]]: tensor<4096xf32>)
// CHECK-NEXT: %[[NP:[^ ,]+]], %[[NM:[^ ,]+]], %[[NV:[^ ,]+]] = ls2.adamw %[[P]], %[[G]], %[[M]], %[[V]], %[[STEP]], %[[LR]], %[[GS]]
// CHECK-SAME: {beta1 = 0.899999976 : f32, beta2 = 9.990000e-01 : f32, epsilon = 9.99999993E-9 : f32, weight_decay = 0.00999999977 : f32} : tensor<4096xf32>, tensor<4096xbf16>
// CHECK-NEXT: %[[NP2:[^ ,]+]], %[[NM2:[^ ,]+]], %[[NV2:[^ ,]+]] = ls2.adamw %[[NP]], %[[GF]], %[[NM]], %[[NV]], %[[STEP]], %[[LR]], %[[GS]]
// CHECK-SAME: {beta1 = 0.899999976 : f32, beta2 = 9.990000e-01 : f32, epsilon = 9.99999993E-9 : f32, mode = #ls2<weight_decay_mode l2>, weight_decay = 0.000000e+00 : f32} : tensor<4096xf32>, tensor<4096xf32>
// CHECK-NEXT: return %[[NP2]], %[[NM2]], %[[NV2]], %[[NV]] : tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>
func.func @adamw(%p: tensor<4096xf32>, %g: tensor<4096xbf16>, %m: tensor<4096xf32>, %v: tensor<4096xf32>, %step: tensor<i64>, %lr: tensor<f32>, %gs: tensor<f32>, %gf: tensor<4096xf32>) -> (tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>) {
  %np, %nm, %nv = ls2.adamw %p, %g, %m, %v, %step, %lr, %gs {beta1 = 0.899999976 : f32, beta2 = 0.999000012 : f32, epsilon = 9.99999993E-9 : f32, weight_decay = 0.00999999977 : f32} : tensor<4096xf32>, tensor<4096xbf16>
  %np2, %nm2, %nv2 = ls2.adamw %np, %gf, %nm, %nv, %step, %lr, %gs {beta1 = 0.899999976 : f32, beta2 = 0.999000012 : f32, epsilon = 9.99999993E-9 : f32, mode = #ls2<weight_decay_mode l2>, weight_decay = 0.000000e+00 : f32} : tensor<4096xf32>, tensor<4096xf32>
  return %np2, %nm2, %nv2, %nv : tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>
}
