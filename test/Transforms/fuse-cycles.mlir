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

// -----

// A size read from a row group's result is no path out of the group: the
// residual add and its mean (one row reduction) and the centering and
// variance after them (ViT's pre-LN residual and layer norm: its token count
// is images x patches, a size no argument has) share one kernel, the size
// taken from the earliest value that has it (the view of %p).
// CHECK-LABEL: fusion of @size_of_group_result: 1 groups
// CHECK-NEXT: row_reduction: 3 inputs, 2 outputs
// CHECK-NOT: another kernel on a path
// CHECK: %[[X:.*]] = ls2.reshape
// CHECK-NEXT: %[[T:.*]] = ls2.dim %[[X]][0] : tensor<?x8xf32>
// CHECK: ls2.fusion "{{.*}}" row_reduction({{.*}}%[[T]]
func.func @size_of_group_result(%p: tensor<?x4x8xf32> {ls2.kind = "input", ls2.name = "p", ls2.max_shape = array<i64: 16, 4, 8>},
                                %w: tensor<8x8xf32> {ls2.kind = "parameter", ls2.name = "w"})
    -> (tensor<?x8xf32> {ls2.kind = "output", ls2.name = "residual"},
        tensor<?xf32> {ls2.kind = "output", ls2.name = "var"}) {
  %x = ls2.reshape %p : tensor<?x4x8xf32> -> tensor<?x8xf32>
  %m = ls2.matmul %x, %w : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
  %r = ls2.add %x, %m : tensor<?x8xf32>
  %s = ls2.reduce_sum %r [1] : tensor<?x8xf32> -> tensor<?xf32>
  %n = ls2.constant dense<8.0> : tensor<f32>
  %mean = ls2.div %s, %n : tensor<?xf32>, tensor<f32>
  %t = ls2.dim %r[0] : tensor<?x8xf32>
  %bm = ls2.broadcast %mean[%t] {dims = array<i64: 0>} : tensor<?xf32> -> tensor<?x8xf32>
  %c = ls2.sub %r, %bm : tensor<?x8xf32>
  %sq = ls2.mul %c, %c : tensor<?x8xf32>
  %v = ls2.reduce_sum %sq [1] : tensor<?x8xf32> -> tensor<?xf32>
  return %r, %v : tensor<?x8xf32>, tensor<?xf32>
}
