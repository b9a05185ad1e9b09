// RUN: ls2c-opt %s -split-input-file -ls2-plan-buffers=print=true -o /dev/null | FileCheck %s
// RUN: ls2c-opt %s -split-input-file -ls2-plan-buffers | FileCheck %s --check-prefix=IR

// A chain of GEMMs at the bound of 16 tokens: each [16, 64] f32 result is
// 4096 bytes, live from its op to its last reader. %a dies when %b is made,
// so %c reuses its bytes; the arena is the lower bound, two buffers.
// CHECK-LABEL: buffer plan of @chain: 3 buffers, arena 8192 bytes, lower bound 8192 bytes, 1.000x
// CHECK-NEXT: matmul#0: offset [[A:[0-9]+]], size 4096, live [0, 1]
// CHECK-NEXT: matmul#0: offset [[B:[0-9]+]], size 4096, live [1, 2]
// CHECK-NEXT: matmul#0: offset [[A]], size 4096, live [2, 3]
// IR-LABEL: func.func @chain
// IR-SAME: ls2.arena_bytes = 8192 : i64, ls2.arena_lower_bound_bytes = 8192 : i64
// IR: ls2.matmul {{.*}}ls2.offsets = array<i64: [[OA:[0-9]+]]>
// IR: ls2.matmul {{.*}}ls2.offsets = array<i64: [[OB:[0-9]+]]>
// IR: ls2.matmul {{.*}}ls2.offsets = array<i64: [[OA]]>
// The returned sum lives in the caller's output buffer, not the arena.
// IR: ls2.reduce_sum
// IR-NOT: ls2.offsets
// IR: return
func.func @chain(%x: tensor<?x64xf32> {ls2.max_shape = array<i64: 16, 64>},
                 %w: tensor<64x64xf32>) -> tensor<f32> {
  %a = ls2.matmul %x, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %b = ls2.matmul %a, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %c = ls2.matmul %b, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %s = ls2.reduce_sum %c [0, 1] : tensor<?x64xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A view extends its base's live range: %a is read through two reshapes by
// the add at step 5, so it is still live when %c is made and cannot share
// with it. (Views count as steps; they launch nothing.)
// CHECK-LABEL: buffer plan of @view: 4 buffers, arena 12288 bytes, lower bound 12288 bytes
// CHECK-NEXT: matmul#0: offset [[VA:[0-9]+]], size 4096, live [0, 5]
// CHECK-NEXT: matmul#0: offset [[VB:[0-9]+]], size 4096, live [1, 3]
// CHECK-NEXT: matmul#0: offset {{[0-9]+}}, size 4096, live [3, 5]
// CHECK-NEXT: add#0: offset [[VB]], size 4096, live [5, 6]
func.func @view(%x: tensor<?x64xf32> {ls2.max_shape = array<i64: 16, 64>},
                %w: tensor<64x64xf32>) -> tensor<f32> {
  %a = ls2.matmul %x, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %b = ls2.matmul %a, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %v = ls2.reshape %a : tensor<?x64xf32> -> tensor<?x4x16xf32>
  %c = ls2.matmul %b, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %d = ls2.reshape %v : tensor<?x4x16xf32> -> tensor<?x64xf32>
  %e = ls2.add %c, %d : tensor<?x64xf32>
  %s = ls2.reduce_sum %e [0, 1] : tensor<?x64xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A loop group's output takes the place of the input it reads element by
// element for the last time.
// CHECK-LABEL: buffer plan of @in_place: 3 buffers
// CHECK-NEXT: matmul#0: offset [[M:[0-9]+]], size 4096, live [0, 1]
// CHECK-NEXT: loop_0#0: offset [[M]], size 4096, live [1, 2], in place of matmul#0
func.func @in_place(%x: tensor<?x64xf32> {ls2.max_shape = array<i64: 16, 64>},
                    %w: tensor<64x64xf32>) -> tensor<f32> {
  %a = ls2.matmul %x, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %b = ls2.fusion "loop_0" loop(%a) : (tensor<?x64xf32>) -> tensor<?x64xf32> {
  ^bb0(%arg: tensor<?x64xf32>):
    %t = ls2.tanh %arg : tensor<?x64xf32>
    ls2.yield %t : tensor<?x64xf32>
  }
  %c = ls2.matmul %b, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %s = ls2.reduce_sum %c [0, 1] : tensor<?x64xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A row-reduction group's one rows-shaped output takes the place of the
// input its reductions and its output phase read element by element (the
// cross-entropy gradient over the logits): every reduction of a row ends
// before the row's outputs are stored.
// CHECK-LABEL: buffer plan of @row_in_place: 3 buffers
// CHECK-NEXT: matmul#0: offset [[R:[0-9]+]], size 4096, live [1, 2]
// CHECK-NEXT: row_0#0: offset [[R]], size 4096, live [2, 3], in place of matmul#0
func.func @row_in_place(%x: tensor<?x64xf32> {ls2.max_shape = array<i64: 16, 64>},
                        %w: tensor<64x64xf32>) -> tensor<f32> {
  %n = ls2.dim %x[0] : tensor<?x64xf32>
  %a = ls2.matmul %x, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %b = ls2.fusion "row_0" row_reduction(%a, %n) : (tensor<?x64xf32>, index) -> tensor<?x64xf32> {
  ^bb0(%arg: tensor<?x64xf32>, %rows: index):
    %m = ls2.reduce_max %arg [1] : tensor<?x64xf32> -> tensor<?xf32>
    %mb = ls2.broadcast %m[%rows] {dims = array<i64: 0>} : tensor<?xf32> -> tensor<?x64xf32>
    %d = ls2.sub %arg, %mb : tensor<?x64xf32>
    %e = ls2.exp %d : tensor<?x64xf32>
    ls2.yield %e : tensor<?x64xf32>
  }
  %c = ls2.matmul %b, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %s = ls2.reduce_sum %c [0, 1] : tensor<?x64xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// With two rows-shaped outputs, the second could re-read an element the
// first overwrote: neither takes the input's place.
// CHECK-LABEL: buffer plan of @row_two_outputs: 5 buffers
// CHECK-NEXT: matmul#0: offset {{[0-9]+}}, size 4096, live [1, 2]
// CHECK-NEXT: row_0#0: offset {{[0-9]+}}, size 4096, live [2, 3]{{$}}
// CHECK-NEXT: row_0#1: offset {{[0-9]+}}, size 4096, live [2, 4]{{$}}
func.func @row_two_outputs(%x: tensor<?x64xf32> {ls2.max_shape = array<i64: 16, 64>},
                           %w: tensor<64x64xf32>) -> tensor<f32> {
  %n = ls2.dim %x[0] : tensor<?x64xf32>
  %a = ls2.matmul %x, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %b:2 = ls2.fusion "row_0" row_reduction(%a, %n) : (tensor<?x64xf32>, index) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  ^bb0(%arg: tensor<?x64xf32>, %rows: index):
    %m = ls2.reduce_max %arg [1] : tensor<?x64xf32> -> tensor<?xf32>
    %mb = ls2.broadcast %m[%rows] {dims = array<i64: 0>} : tensor<?xf32> -> tensor<?x64xf32>
    %d = ls2.sub %arg, %mb : tensor<?x64xf32>
    %e = ls2.exp %d : tensor<?x64xf32>
    ls2.yield %d, %e : tensor<?x64xf32>, tensor<?x64xf32>
  }
  %c = ls2.matmul %b#0, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %g = ls2.add %c, %b#1 : tensor<?x64xf32>
  %s = ls2.reduce_sum %g [0, 1] : tensor<?x64xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Logits-like rows of 65 f32 (260 bytes, not a multiple of 16) that only a
// GEMM writes, a row reduction reads element by element and GEMMs read are
// padded to 68 elements (PaddedRows.h): 16 rows x 68 x 4 = 4352 bytes. The
// row group's rows-shaped output (the logits' gradient) is padded too and
// still takes the logits' place; its per-row output is not.
// CHECK-LABEL: buffer plan of @padded_rows: 6 buffers
// CHECK-NEXT: matmul#0: offset [[L:[0-9]+]], size 4352, live [1, 2]
// CHECK-NEXT: row_0#0: offset {{[0-9]+}}, size 64, live [2, 5]
// CHECK-NEXT: row_0#1: offset [[L]], size 4352, live [2, 3], in place of matmul#0
// IR-LABEL: func.func @padded_rows
// IR: ls2.matmul {{.*}}ls2.row_strides = array<i64: 68>
// IR: ls2.fusion "row_0"{{.*}}ls2.row_strides = array<i64: 0, 68>
// IR: ls2.matmul %{{[0-9a-z#_]+}}, %arg1 {
// IR-NOT: ls2.row_strides
// IR-SAME: -> tensor<?x64xf32>
func.func @padded_rows(%x: tensor<?x64xf32> {ls2.max_shape = array<i64: 16, 64>},
                       %w: tensor<65x64xf32>) -> tensor<f32> {
  %n = ls2.dim %x[0] : tensor<?x64xf32>
  %a = ls2.matmul %x, %w {transpose_b} : tensor<?x64xf32>, tensor<65x64xf32> -> tensor<?x65xf32>
  %b:2 = ls2.fusion "row_0" row_reduction(%a, %n) : (tensor<?x65xf32>, index) -> (tensor<?xf32>, tensor<?x65xf32>) {
  ^bb0(%arg: tensor<?x65xf32>, %rows: index):
    %m = ls2.reduce_max %arg [1] : tensor<?x65xf32> -> tensor<?xf32>
    %mb = ls2.broadcast %m[%rows] {dims = array<i64: 0>} : tensor<?xf32> -> tensor<?x65xf32>
    %d = ls2.sub %arg, %mb : tensor<?x65xf32>
    %e = ls2.exp %d : tensor<?x65xf32>
    ls2.yield %m, %e : tensor<?xf32>, tensor<?x65xf32>
  }
  %c = ls2.matmul %b#1, %w : tensor<?x65xf32>, tensor<65x64xf32> -> tensor<?x64xf32>
  %s = ls2.reduce_sum %c [0, 1] : tensor<?x64xf32> -> tensor<f32>
  %t = ls2.reduce_sum %b#0 [0] : tensor<?xf32> -> tensor<f32>
  %u = ls2.add %s, %t : tensor<f32>
  return %u : tensor<f32>
}

// -----

// The same rows read by a loop group as well (or returned): contiguous,
// 16 x 65 x 4 = 4160 bytes.
// CHECK-LABEL: buffer plan of @unpadded_rows:
// CHECK-NEXT: matmul#0: offset {{[0-9]+}}, size 4160, live [1, 3]
// IR-LABEL: func.func @unpadded_rows
// IR-NOT: ls2.row_strides
// IR: return
func.func @unpadded_rows(%x: tensor<?x64xf32> {ls2.max_shape = array<i64: 16, 64>},
                         %w: tensor<65x64xf32>) -> (tensor<?xf32>, tensor<?x65xf32>) {
  %n = ls2.dim %x[0] : tensor<?x64xf32>
  %a = ls2.matmul %x, %w {transpose_b} : tensor<?x64xf32>, tensor<65x64xf32> -> tensor<?x65xf32>
  %b = ls2.fusion "row_0" row_reduction(%a, %n) : (tensor<?x65xf32>, index) -> tensor<?xf32> {
  ^bb0(%arg: tensor<?x65xf32>, %rows: index):
    %m = ls2.reduce_max %arg [1] : tensor<?x65xf32> -> tensor<?xf32>
    ls2.yield %m : tensor<?xf32>
  }
  %c = ls2.fusion "loop_0" loop(%a) : (tensor<?x65xf32>) -> tensor<?x65xf32> {
  ^bb0(%arg: tensor<?x65xf32>):
    %t = ls2.tanh %arg : tensor<?x65xf32>
    ls2.yield %t : tensor<?x65xf32>
  }
  return %b, %c : tensor<?xf32>, tensor<?x65xf32>
}

// -----

// A row group whose reduction takes all of [16, 65] has one row of 1040
// elements: the kernel's rows are not the matrix's, so neither the GEMM's
// result it reads nor its rows-shaped output is padded.
// IR-LABEL: func.func @total_reduction_rows
// IR-NOT: ls2.row_strides
// IR: return
func.func @total_reduction_rows(%x: tensor<16x64xf32>, %w: tensor<65x64xf32>) -> tensor<16x64xf32> {
  %a = ls2.matmul %x, %w {transpose_b} : tensor<16x64xf32>, tensor<65x64xf32> -> tensor<16x65xf32>
  %b:2 = ls2.fusion "row_0" row_reduction(%a) : (tensor<16x65xf32>) -> (tensor<f32>, tensor<16x65xf32>) {
  ^bb0(%arg: tensor<16x65xf32>):
    %m = ls2.reduce_max %arg [0, 1] : tensor<16x65xf32> -> tensor<f32>
    %mb = ls2.broadcast %m[] {dims = array<i64>} : tensor<f32> -> tensor<16x65xf32>
    %d = ls2.sub %arg, %mb : tensor<16x65xf32>
    %e = ls2.exp %d : tensor<16x65xf32>
    ls2.yield %m, %e : tensor<f32>, tensor<16x65xf32>
  }
  %c = ls2.matmul %b#1, %w : tensor<16x65xf32>, tensor<65x64xf32> -> tensor<16x64xf32>
  return %c : tensor<16x64xf32>
}

// -----

// q, k and v as strided slices of one [T, 3 x 64] projection, read only by
// attention: they take no buffer of their own (no ls2.offsets) and keep the
// projection alive until attention has read it.
// CHECK-LABEL: buffer plan of @strided: 5 buffers
// CHECK-NEXT: matmul#0: offset {{[0-9]+}}, size 12288, live [0, 7]
// CHECK-NEXT: attention#0: offset {{[0-9]+}}, size 4096, live [7, 8]
// CHECK-NEXT: attention#1: offset {{[0-9]+}}, size 256, live [7, 9]
// IR-LABEL: func.func @strided
// IR: ls2.matmul {{.*}}ls2.offsets = array<i64: {{[0-9]+}}>
// IR: ls2.slice %{{[a-z_0-9]+}} {axis = 1 : i64, limit = 64 : i64, start = 0 : i64} : tensor<?x192xf32>
// IR: ls2.reshape %{{[0-9]+}} : tensor<?x64xf32> -> tensor<?x4x16xf32>
func.func @strided(%x: tensor<?x64xf32> {ls2.max_shape = array<i64: 16, 64>},
                   %w: tensor<192x64xf32>,
                   %cu: tensor<?xi32> {ls2.max_shape = array<i64: 17>}) -> tensor<f32> {
  %qkv = ls2.matmul %x, %w {transpose_b} : tensor<?x64xf32>, tensor<192x64xf32> -> tensor<?x192xf32>
  %q = ls2.slice %qkv {axis = 1 : i64, start = 0 : i64, limit = 64 : i64} : tensor<?x192xf32> -> tensor<?x64xf32>
  %k = ls2.slice %qkv {axis = 1 : i64, start = 64 : i64, limit = 128 : i64} : tensor<?x192xf32> -> tensor<?x64xf32>
  %v = ls2.slice %qkv {axis = 1 : i64, start = 128 : i64, limit = 192 : i64} : tensor<?x192xf32> -> tensor<?x64xf32>
  %q3 = ls2.reshape %q : tensor<?x64xf32> -> tensor<?x4x16xf32>
  %k3 = ls2.reshape %k : tensor<?x64xf32> -> tensor<?x4x16xf32>
  %v3 = ls2.reshape %v : tensor<?x64xf32> -> tensor<?x4x16xf32>
  %o, %lse = ls2.attention %q3, %k3, %v3, %cu, %cu : tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4x16xf32>, tensor<?x4xf32>
  %s = ls2.reduce_sum %o [0, 1, 2] : tensor<?x4x16xf32> -> tensor<f32>
  %l = ls2.reduce_sum %lse [0, 1] : tensor<?x4xf32> -> tensor<f32>
  %t = ls2.add %s, %l : tensor<f32>
  return %t : tensor<f32>
}

// -----

// dq, dk and dv, read only by a concat along their columns (a merged q/k/v
// projection's backward), are written by attention's backward straight into
// the concat's buffer: the concat (ls2.in_place) copies nothing, and its
// buffer lives from the attention gradient on.
// CHECK-LABEL: buffer plan of @in_place_concat: 2 buffers
// CHECK-NEXT: concat#0: offset {{[0-9]+}}, size 12288, live [0, 5]
// CHECK-NEXT: matmul#0: offset {{[0-9]+}}, size 4096, live [5, 6]
// IR-LABEL: func.func @in_place_concat
// IR: ls2.attention_grad
// IR-NOT: ls2.offsets
// IR: ls2.concat {{.*}}ls2.in_place, ls2.offsets = array<i64: {{[0-9]+}}>
func.func @in_place_concat(%do: tensor<?x4x16xf32> {ls2.max_shape = array<i64: 16, 4, 16>},
                           %q: tensor<?x4x16xf32> {ls2.max_shape = array<i64: 16, 4, 16>},
                           %o: tensor<?x4x16xf32> {ls2.max_shape = array<i64: 16, 4, 16>},
                           %lse: tensor<?x4xf32> {ls2.max_shape = array<i64: 16, 4>},
                           %cu: tensor<?xi32> {ls2.max_shape = array<i64: 17>},
                           %w: tensor<192x64xf32>) -> tensor<f32> {
  %dq, %dk, %dv = ls2.attention_grad %do, %q, %q, %q, %o, %lse, %cu, %cu : tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>
  %a = ls2.reshape %dq : tensor<?x4x16xf32> -> tensor<?x64xf32>
  %b = ls2.reshape %dk : tensor<?x4x16xf32> -> tensor<?x64xf32>
  %c = ls2.reshape %dv : tensor<?x4x16xf32> -> tensor<?x64xf32>
  %g = ls2.concat %a, %b, %c {axis = 1 : i64} : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x192xf32>
  %dx = ls2.matmul %g, %w : tensor<?x192xf32>, tensor<192x64xf32> -> tensor<?x64xf32>
  %s = ls2.reduce_sum %dx [0, 1] : tensor<?x64xf32> -> tensor<f32>
  return %s : tensor<f32>
}
