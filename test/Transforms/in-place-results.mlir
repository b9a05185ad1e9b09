// RUN: ls2c-opt %s -split-input-file -ls2-fuse -ls2-plan-buffers | FileCheck %s

// A state result computed element by element from its argument (an Adam
// moment's update) overwrites it: ls2.in_place_of names the argument.
// CHECK-LABEL: func.func @update
// CHECK-SAME: -> (tensor<64xf32> {ls2.in_place_of = 0 : i64, ls2.kind = "state", ls2.name = "m"})
func.func @update(%m: tensor<64xf32> {ls2.kind = "state", ls2.name = "m"},
                  %g: tensor<64xf32> {ls2.kind = "workspace", ls2.name = "g"})
    -> (tensor<64xf32> {ls2.kind = "state", ls2.name = "m"}) {
  %c = ls2.constant dense<0.9> : tensor<f32>
  %a = ls2.mul %m, %c : tensor<64xf32>, tensor<f32>
  %b = ls2.add %a, %g : tensor<64xf32>
  return %b : tensor<64xf32>
}

// -----

// Two segments updated apart and concatenated back at their own offsets
// (the optimizer's weight-decayed and other slots): still element by
// element, so in place.
// CHECK-LABEL: func.func @segments
// CHECK-SAME: ls2.in_place_of = 0 : i64
func.func @segments(%m: tensor<64xf32> {ls2.kind = "state", ls2.name = "m"})
    -> (tensor<64xf32> {ls2.kind = "state", ls2.name = "m"}) {
  %lo = ls2.slice %m {axis = 0 : i64, start = 0 : i64, limit = 48 : i64} : tensor<64xf32> -> tensor<48xf32>
  %hi = ls2.slice %m {axis = 0 : i64, start = 48 : i64, limit = 64 : i64} : tensor<64xf32> -> tensor<16xf32>
  %a = ls2.mul %lo, %lo : tensor<48xf32>
  %b = ls2.neg %hi : tensor<16xf32>
  %r = ls2.concat %a, %b {axis = 0 : i64} : (tensor<48xf32>, tensor<16xf32>) -> tensor<64xf32>
  return %r : tensor<64xf32>
}

// -----

// The segments swapped: element i of the result reads another element of
// the argument, which may already be overwritten. A fresh buffer.
// CHECK-LABEL: func.func @rotated
// CHECK-NOT: in_place_of
// CHECK: return
func.func @rotated(%m: tensor<64xf32> {ls2.kind = "state", ls2.name = "m"})
    -> (tensor<64xf32> {ls2.kind = "state", ls2.name = "m"}) {
  %lo = ls2.slice %m {axis = 0 : i64, start = 0 : i64, limit = 48 : i64} : tensor<64xf32> -> tensor<48xf32>
  %hi = ls2.slice %m {axis = 0 : i64, start = 48 : i64, limit = 64 : i64} : tensor<64xf32> -> tensor<16xf32>
  %r = ls2.concat %hi, %lo {axis = 0 : i64} : (tensor<16xf32>, tensor<48xf32>) -> tensor<64xf32>
  return %r : tensor<64xf32>
}

// -----

// The argument is read again by a kernel after the result's: the sum would
// see the new values. A fresh buffer.
// CHECK-LABEL: func.func @read_after
// CHECK-NOT: in_place_of
// CHECK: return
func.func @read_after(%m: tensor<64xf32> {ls2.kind = "state", ls2.name = "m"},
                      %x: tensor<64x64xf32> {ls2.kind = "input", ls2.name = "x"})
    -> (tensor<64xf32> {ls2.kind = "state", ls2.name = "m"},
        tensor<64xf32> {ls2.kind = "output", ls2.name = "y"}) {
  %a = ls2.mul %m, %m : tensor<64xf32>
  %m2 = ls2.reshape %m : tensor<64xf32> -> tensor<64x1xf32>
  %y2 = ls2.matmul %x, %m2 : tensor<64x64xf32>, tensor<64x1xf32> -> tensor<64x1xf32>
  %y = ls2.reshape %y2 : tensor<64x1xf32> -> tensor<64xf32>
  return %a, %y : tensor<64xf32>, tensor<64xf32>
}

// -----

// A result named like no argument, or of another type, is never in place.
// CHECK-LABEL: func.func @other
// CHECK-NOT: in_place_of
// CHECK: return
func.func @other(%m: tensor<64xf32> {ls2.kind = "state", ls2.name = "m"})
    -> (tensor<64xf32> {ls2.kind = "output", ls2.name = "n"}) {
  %a = ls2.mul %m, %m : tensor<64xf32>
  return %a : tensor<64xf32>
}

// -----

// A dynamic-length accumulator (sequence parallelism's gradient sums): one
// loop fusion writes all of it, reading each element for its own index.
// CHECK-LABEL: func.func @accumulate_dynamic
// CHECK-SAME: -> (tensor<?xf32> {ls2.in_place_of = 0 : i64, ls2.kind = "output", ls2.name = "acc"})
func.func @accumulate_dynamic(%acc: tensor<?xf32> {ls2.kind = "input", ls2.name = "acc", ls2.max_shape = array<i64: 64>},
                              %part: tensor<?xbf16> {ls2.kind = "input", ls2.name = "part", ls2.max_shape = array<i64: 64>})
    -> (tensor<?xf32> {ls2.kind = "output", ls2.name = "acc"}) {
  %p = ls2.cast %part : tensor<?xbf16> to tensor<?xf32>
  %s = ls2.add %acc, %p : tensor<?xf32>
  return %s : tensor<?xf32>
}

// -----

// The same accumulator also read by a reduction that runs after the sum:
// it must keep its old value, so a fresh buffer.
// CHECK-LABEL: func.func @accumulate_dynamic_read_later
// CHECK-NOT: in_place_of
// CHECK: return
func.func @accumulate_dynamic_read_later(%acc: tensor<?xf32> {ls2.kind = "input", ls2.name = "acc", ls2.max_shape = array<i64: 64>},
                                         %part: tensor<?xf32> {ls2.kind = "input", ls2.name = "part", ls2.max_shape = array<i64: 64>})
    -> (tensor<?xf32> {ls2.kind = "output", ls2.name = "acc"}, tensor<f32> {ls2.kind = "output", ls2.name = "total"}) {
  %s = ls2.add %acc, %part : tensor<?xf32>
  %t = ls2.reduce_sum %acc [0] : tensor<?xf32> -> tensor<f32>
  return %s, %t : tensor<?xf32>, tensor<f32>
}

// -----

// A dynamic accumulator concatenated with more elements: the result is
// longer than the argument, so never in place.
// CHECK-LABEL: func.func @accumulate_dynamic_concat
// CHECK-NOT: in_place_of
// CHECK: return
func.func @accumulate_dynamic_concat(%acc: tensor<?xf32> {ls2.kind = "input", ls2.name = "acc", ls2.max_shape = array<i64: 64>},
                                     %x: tensor<?xf32> {ls2.kind = "input", ls2.name = "x", ls2.max_shape = array<i64: 64>})
    -> (tensor<?xf32> {ls2.kind = "output", ls2.name = "acc"}) {
  %n = ls2.neg %acc : tensor<?xf32>
  %c = ls2.concat %n, %x {axis = 0 : i64} : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %c : tensor<?xf32>
}

// -----

// Three loops over the same elements that all read the gradient (an Adam
// step's parameter, moment and variance updates) become one kernel with an
// output each, and each state result still overwrites its argument: the
// kernel reads element i of an argument only in the iteration that writes
// element i of every output.
// CHECK-LABEL: func.func @siblings
// CHECK-SAME: {ls2.in_place_of = 0 : i64, ls2.kind = "state", ls2.name = "p"}
// CHECK-SAME: {ls2.in_place_of = 1 : i64, ls2.kind = "state", ls2.name = "m"}
// CHECK-SAME: {ls2.in_place_of = 2 : i64, ls2.kind = "state", ls2.name = "v"}
// CHECK: ls2.fusion {{.*}} -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
// CHECK-NOT: ls2.fusion
// CHECK: return
func.func @siblings(%p: tensor<64xf32> {ls2.kind = "state", ls2.name = "p"},
                    %m: tensor<64xf32> {ls2.kind = "state", ls2.name = "m"},
                    %v: tensor<64xf32> {ls2.kind = "state", ls2.name = "v"},
                    %g: tensor<64xf32> {ls2.kind = "workspace", ls2.name = "g"})
    -> (tensor<64xf32> {ls2.kind = "state", ls2.name = "p"},
        tensor<64xf32> {ls2.kind = "state", ls2.name = "m"},
        tensor<64xf32> {ls2.kind = "state", ls2.name = "v"}) {
  %e = ls2.exp %m : tensor<64xf32>
  %m2 = ls2.add %e, %g : tensor<64xf32>
  %s = ls2.sqrt %v : tensor<64xf32>
  %v2 = ls2.add %s, %g : tensor<64xf32>
  %t = ls2.tanh %p : tensor<64xf32>
  %p2 = ls2.add %t, %g : tensor<64xf32>
  return %p2, %m2, %v2 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

// A sibling merged into the same kernel reads the argument rotated by one:
// its iteration i reads element i + 1, which iteration i + 1 may already
// have overwritten. A fresh buffer.
// CHECK-LABEL: func.func @shifted_sibling
// CHECK-NOT: in_place_of
// CHECK: ls2.fusion {{.*}} -> (tensor<64xf32>, tensor<64xf32>)
// CHECK: return
func.func @shifted_sibling(%m: tensor<64xf32> {ls2.kind = "state", ls2.name = "m"},
                           %g: tensor<64xf32> {ls2.kind = "workspace", ls2.name = "g"})
    -> (tensor<64xf32> {ls2.kind = "state", ls2.name = "m"},
        tensor<64xf32> {ls2.kind = "workspace", ls2.name = "r"}) {
  %e = ls2.exp %m : tensor<64xf32>
  %m2 = ls2.add %e, %g : tensor<64xf32>
  %lo = ls2.slice %m {axis = 0 : i64, start = 0 : i64, limit = 1 : i64} : tensor<64xf32> -> tensor<1xf32>
  %hi = ls2.slice %m {axis = 0 : i64, start = 1 : i64, limit = 64 : i64} : tensor<64xf32> -> tensor<63xf32>
  %rot = ls2.concat %hi, %lo {axis = 0 : i64} : (tensor<63xf32>, tensor<1xf32>) -> tensor<64xf32>
  %x = ls2.tanh %rot : tensor<64xf32>
  %r = ls2.add %x, %g : tensor<64xf32>
  return %m2, %r : tensor<64xf32>, tensor<64xf32>
}
