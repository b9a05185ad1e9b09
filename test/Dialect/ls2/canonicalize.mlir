// RUN: ls2c-opt %s --canonicalize -split-input-file | FileCheck %s

// reshape(reshape(x)) skips the middle reshape only when x -> result is
// itself a valid reshape (the pass manager verifies the folded IR).

// ?x2 -> ?x3 breaks the divisibility rule (2 and 3 divide neither way):
// both reshapes stay.
// CHECK-LABEL: func.func @reshape_chain_kept
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x2xf32>)
// CHECK-NEXT: %[[A:[^ ]+]] = ls2.reshape %[[X]] : tensor<?x2xf32> -> tensor<?x6xf32>
// CHECK-NEXT: %[[B:[^ ]+]] = ls2.reshape %[[A]] : tensor<?x6xf32> -> tensor<?x3xf32>
// CHECK-NEXT: return %[[B]]
func.func @reshape_chain_kept(%x: tensor<?x2xf32>) -> tensor<?x3xf32> {
  %0 = ls2.reshape %x : tensor<?x2xf32> -> tensor<?x6xf32>
  %1 = ls2.reshape %0 : tensor<?x6xf32> -> tensor<?x3xf32>
  return %1 : tensor<?x3xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_chain_folded
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x2xf32>)
// CHECK-NEXT: %[[A:[^ ]+]] = ls2.reshape %[[X]] : tensor<?x2xf32> -> tensor<?x3x4xf32>
// CHECK-NEXT: return %[[A]]
func.func @reshape_chain_folded(%x: tensor<?x2xf32>) -> tensor<?x3x4xf32> {
  %0 = ls2.reshape %x : tensor<?x2xf32> -> tensor<?x6xf32>
  %1 = ls2.reshape %0 : tensor<?x6xf32> -> tensor<?x3x4xf32>
  return %1 : tensor<?x3x4xf32>
}

// -----

// Back to the source type: no reshape at all.
// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x4xf16>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_round_trip(%x: tensor<?x4xf16>) -> tensor<?x4xf16> {
  %0 = ls2.reshape %x : tensor<?x4xf16> -> tensor<?x2x2xf16>
  %1 = ls2.reshape %0 : tensor<?x2x2xf16> -> tensor<?x4xf16>
  return %1 : tensor<?x4xf16>
}

// -----

// Three reshapes: ?x2 -> ?x3 cannot skip ?x6, but the last reshape skips
// ?x3 (?x6 -> ?x12) and then ?x6 (?x2 -> ?x12 is valid).
// CHECK-LABEL: func.func @reshape_chain_partial
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x2xf32>)
// CHECK-NEXT: %[[A:[^ ]+]] = ls2.reshape %[[X]] : tensor<?x2xf32> -> tensor<?x12xf32>
// CHECK-NEXT: return %[[A]]
func.func @reshape_chain_partial(%x: tensor<?x2xf32>) -> tensor<?x12xf32> {
  %0 = ls2.reshape %x : tensor<?x2xf32> -> tensor<?x6xf32>
  %1 = ls2.reshape %0 : tensor<?x6xf32> -> tensor<?x3xf32>
  %2 = ls2.reshape %1 : tensor<?x3xf32> -> tensor<?x12xf32>
  return %2 : tensor<?x12xf32>
}

// -----

// Zero-sized and static chains fold to one reshape.
// CHECK-LABEL: func.func @reshape_chain_static
// CHECK-SAME: (%[[X:[^:]+]]: tensor<0x4xi32>, %[[Y:[^:]+]]: tensor<2x3xf32>)
// CHECK-NEXT: %[[A:[^ ]+]] = ls2.reshape %[[X]] : tensor<0x4xi32> -> tensor<0xi32>
// CHECK-NEXT: %[[B:[^ ]+]] = ls2.reshape %[[Y]] : tensor<2x3xf32> -> tensor<6xf32>
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @reshape_chain_static(%x: tensor<0x4xi32>, %y: tensor<2x3xf32>) -> (tensor<0xi32>, tensor<6xf32>) {
  %0 = ls2.reshape %x : tensor<0x4xi32> -> tensor<2x0xi32>
  %1 = ls2.reshape %0 : tensor<2x0xi32> -> tensor<0xi32>
  %2 = ls2.reshape %y : tensor<2x3xf32> -> tensor<3x2xf32>
  %3 = ls2.reshape %2 : tensor<3x2xf32> -> tensor<6xf32>
  return %1, %3 : tensor<0xi32>, tensor<6xf32>
}
