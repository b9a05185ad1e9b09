// RUN: ls2c-opt %s -split-input-file -mlir-disable-threading -ls2-fuse=report=true | FileCheck %s

// Loops over the same static elements that read one operand share a kernel.
// CHECK-LABEL: fusion of @same_count: 1 groups
// CHECK: loop: 2 inputs, 2 outputs
func.func @same_count(%x: tensor<64xf32> {ls2.kind = "input", ls2.name = "x"},
                      %g: tensor<64xf32> {ls2.kind = "input", ls2.name = "g"})
    -> (tensor<64xf32> {ls2.kind = "output", ls2.name = "a"},
        tensor<64xf32> {ls2.kind = "output", ls2.name = "b"}) {
  %e = ls2.exp %x : tensor<64xf32>
  %a = ls2.add %e, %g : tensor<64xf32>
  %t = ls2.tanh %g : tensor<64xf32>
  %b = ls2.mul %t, %g : tensor<64xf32>
  return %a, %b : tensor<64xf32>, tensor<64xf32>
}

// -----

// Loops over two dynamic counts with one bound (the encoder's and the
// decoder's tokens) stay apart, though both read exp(b): one kernel iterates
// over one count.
// CHECK-LABEL: fusion of @two_counts: 3 groups
// CHECK: loop: 1 inputs, 1 outputs, saves 0 bytes; ops: expx1
// CHECK: loop: 3 inputs, 1 outputs, saves 512 bytes; ops: addx1 broadcastx1
// CHECK: loop: 3 inputs, 1 outputs, saves 512 bytes; ops: addx1 broadcastx1
func.func @two_counts(%x: tensor<?x8xf32> {ls2.kind = "input", ls2.name = "x", ls2.max_shape = array<i64: 16, 8>},
                      %y: tensor<?x8xf32> {ls2.kind = "input", ls2.name = "y", ls2.max_shape = array<i64: 16, 8>},
                      %b: tensor<8xf32> {ls2.kind = "parameter", ls2.name = "b"})
    -> (tensor<?x8xf32> {ls2.kind = "output", ls2.name = "rx"},
        tensor<?x8xf32> {ls2.kind = "output", ls2.name = "ry"}) {
  %c = ls2.exp %b : tensor<8xf32>
  %tx = ls2.dim %x[0] : tensor<?x8xf32>
  %bx = ls2.broadcast %c[%tx] {dims = array<i64: 1>} : tensor<8xf32> -> tensor<?x8xf32>
  %rx = ls2.add %x, %bx : tensor<?x8xf32>
  %ty = ls2.dim %y[0] : tensor<?x8xf32>
  %by = ls2.broadcast %c[%ty] {dims = array<i64: 1>} : tensor<8xf32> -> tensor<?x8xf32>
  %ry = ls2.add %y, %by : tensor<?x8xf32>
  return %rx, %ry : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// A loop over [16, 16] (the concat of two gradients, as a checkpointed
// SwiGLU's) that also computes [16, 8] values, one of which (h) a matmul
// reads: h's ops move to a loop that writes h alone; the concat's loop keeps
// its own exp and mul instead of reading them back from it.
// CHECK-LABEL: fusion of @mixed_counts: 2 groups
// CHECK: loop: 2 inputs, 1 outputs, saves 2560 bytes; ops: concatx1 expx1 mulx3
// CHECK: loop: 2 inputs, 1 outputs, saves 0 bytes; ops: expx1 mulx2
func.func @mixed_counts(%x: tensor<16x8xf32> {ls2.kind = "input", ls2.name = "x"},
                        %y: tensor<16x8xf32> {ls2.kind = "input", ls2.name = "y"},
                        %g: tensor<16x8xf32> {ls2.kind = "input", ls2.name = "g"},
                        %w: tensor<8x8xf32> {ls2.kind = "parameter", ls2.name = "w"})
    -> (tensor<16x16xf32> {ls2.kind = "output", ls2.name = "d"},
        tensor<16x8xf32> {ls2.kind = "output", ls2.name = "p"}) {
  %e = ls2.exp %x : tensor<16x8xf32>
  %s = ls2.mul %e, %x : tensor<16x8xf32>
  %h = ls2.mul %s, %y : tensor<16x8xf32>
  %p = ls2.matmul %h, %w : tensor<16x8xf32>, tensor<8x8xf32> -> tensor<16x8xf32>
  %a = ls2.mul %s, %g : tensor<16x8xf32>
  %b = ls2.mul %e, %g : tensor<16x8xf32>
  %d = ls2.concat %a, %b {axis = 1 : i64} : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x16xf32>
  return %d, %p : tensor<16x16xf32>, tensor<16x8xf32>
}

// -----

// A table that a loop over a larger count broadcasts (rotary cos over
// [T, D/2] read per head) is written once by a loop of its own and read,
// not computed again for every head.
// CHECK-LABEL: fusion of @broadcast_table: 2 groups
// CHECK: loop: 2 inputs, 2 outputs, saves 512 bytes; ops: cosx1 mulx1
// CHECK: loop: 2 inputs, 1 outputs, saves 1024 bytes; ops: broadcastx1 mulx1
func.func @broadcast_table(%x: tensor<16x8xf32> {ls2.kind = "input", ls2.name = "x"},
                           %y: tensor<16x8xf32> {ls2.kind = "input", ls2.name = "y"},
                           %q: tensor<16x2x8xf32> {ls2.kind = "input", ls2.name = "q"},
                           %w: tensor<8x8xf32> {ls2.kind = "parameter", ls2.name = "w"})
    -> (tensor<16x2x8xf32> {ls2.kind = "output", ls2.name = "r"},
        tensor<16x8xf32> {ls2.kind = "output", ls2.name = "p"}) {
  %c = ls2.cos %x : tensor<16x8xf32>
  %h = ls2.mul %c, %y : tensor<16x8xf32>
  %p = ls2.matmul %h, %w : tensor<16x8xf32>, tensor<8x8xf32> -> tensor<16x8xf32>
  %bc = ls2.broadcast %c[] {dims = array<i64: 0, 2>} : tensor<16x8xf32> -> tensor<16x2x8xf32>
  %r = ls2.mul %q, %bc : tensor<16x2x8xf32>
  return %r, %p : tensor<16x2x8xf32>, tensor<16x8xf32>
}
