// RUN: ls2c-opt %s -split-input-file -ls2-plan-buffers -verify-diagnostics

// A dynamic dim without a bound (no ls2.max_shape) cannot be planned.
// expected-error @+1 {{argument 0 of type 'tensor<?x64xf32>' needs an ls2.max_shape of rank 2 bounding its dynamic dims}}
func.func @unbounded(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>) -> tensor<f32> {
  %a = ls2.matmul %x, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %s = ls2.reduce_sum %a [0, 1] : tensor<?x64xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A size that is not an ls2.dim (a function's index argument) has no bound:
// an error naming the operand, not an abort.
func.func @index_argument(%x: tensor<?x64xf32> {ls2.max_shape = array<i64: 16, 64>},
                          %n: index) -> tensor<f32> {
  // expected-error @+1 {{operand 1 is an index with no bound: sizes must come from ls2.dim of a bounded tensor}}
  %b = ls2.fusion "row_0" row_reduction(%x, %n) : (tensor<?x64xf32>, index) -> tensor<?x64xf32> {
  ^bb0(%arg: tensor<?x64xf32>, %rows: index):
    %m = ls2.reduce_max %arg [1] : tensor<?x64xf32> -> tensor<?xf32>
    %mb = ls2.broadcast %m[%rows] {dims = array<i64: 0>} : tensor<?xf32> -> tensor<?x64xf32>
    ls2.yield %mb : tensor<?x64xf32>
  }
  %s = ls2.reduce_sum %b [0, 1] : tensor<?x64xf32> -> tensor<f32>
  return %s : tensor<f32>
}
