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
