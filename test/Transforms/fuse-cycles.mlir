// RUN: ls2c-opt %s -split-input-file -mlir-disable-threading -ls2-fuse=report=true | FileCheck %s

// exp feeds the GEMM and the add that reads the GEMM: one kernel for exp
// and add would have to run the GEMM inside it, so they stay apart.
// CHECK-LABEL: fusion of @through_gemm: 2 groups
// CHECK: not fused: ls2.exp -> ls2.add: another kernel on a path between them would have to run inside the fused kernel
// CHECK: ls2.fusion "loop_0"
// CHECK: ls2.matmul
// CHECK: ls2.fusion "loop_1"
func.func @through_gemm(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %a = ls2.exp %x : tensor<64x64xf32>
  %m = ls2.matmul %a, %w : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %c = ls2.add %a, %m : tensor<64x64xf32>
  return %c : tensor<64x64xf32>
}

// -----

// The path runs from exp through the GEMM into the mul of a group fused
// before (neg and mul), whose neg feeds the add: the whole group runs as
// one kernel, so exp and add still stay apart, and the group takes the add.
// CHECK-LABEL: fusion of @through_group
// CHECK-DAG: group {{.*}} ops: expx1
// CHECK-DAG: group {{.*}} ops: addx1 mulx1 negx1
// CHECK-DAG: not fused: ls2.exp -> ls2.add: another kernel on a path between them would have to run inside the fused kernel
func.func @through_group(%x: tensor<64x64xf32>, %x2: tensor<64x64xf32>, %w: tensor<64x64xf32>,
                         %w1: tensor<64x64xf32>, %w2: tensor<64x64xf32>)
    -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %q = ls2.matmul %x, %w1 : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %p = ls2.matmul %x2, %w2 : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %e = ls2.neg %p : tensor<64x64xf32>
  %a = ls2.exp %q : tensor<64x64xf32>
  %m = ls2.matmul %a, %w : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %l = ls2.mul %m, %e : tensor<64x64xf32>
  %b = ls2.add %a, %e : tensor<64x64xf32>
  return %b, %l : tensor<64x64xf32>, tensor<64x64xf32>
}
