// RUN: ls2c-opt %s -ls2-plan-buffers -verify-diagnostics

// A dynamic dim without a bound (no ls2.max_shape) cannot be planned.
// expected-error @+1 {{argument 0 of type 'tensor<?x64xf32>' needs an ls2.max_shape of rank 2 bounding its dynamic dims}}
func.func @unbounded(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>) -> tensor<f32> {
  %a = ls2.matmul %x, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %s = ls2.reduce_sum %a [0, 1] : tensor<?x64xf32> -> tensor<f32>
  return %s : tensor<f32>
}
