// RUN: ls2c-opt %s -split-input-file -verify-diagnostics

// One case per verifier and type-inference rule of the ls2 dialect, plus the
// ODS type constraints. Ops whose result types are written out check their
// operands while inferring and then report the failed inference as well.

//===----------------------------------------------------------------------===//
// ODS type constraints
//===----------------------------------------------------------------------===//

func.func @unary_integer(%x: tensor<?xi32>) -> tensor<?xi32> {
  // expected-error @+1 {{'ls2.exp' op operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<?xi32>'}}
  %0 = ls2.exp %x : tensor<?xi32>
  return %0 : tensor<?xi32>
}

// -----

func.func @unary_unranked(%x: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{'ls2.neg' op operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<*xf32>'}}
  %0 = "ls2.neg"(%x) : (tensor<*xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @unary_result_type(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{'ls2.tanh' op requires the same type for all operands and results}}
  %0 = "ls2.tanh"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

func.func @binary_bool(%p: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'ls2.add' op operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi1>'}}
  %0 = ls2.add %p, %p : tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @select_pred_not_bool(%p: tensor<4xi32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'ls2.select' op operand #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<4xi32>'}}
  %0 = ls2.select %p, %x, %x : tensor<4xi32>, tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @seed_not_scalar(%seed: tensor<1xi64>, %offset: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'ls2.random_uniform' op operand #0 must be rank-0 tensor of i64, but got 'tensor<1xi64>'}}
  %0 = "ls2.random_uniform"(%seed, %offset) {stream = 0 : i64} : (tensor<1xi64>, tensor<i64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @offset_not_i64(%seed: tensor<i64>, %offset: tensor<i32>) -> tensor<4xf32> {
  // expected-error @+1 {{'ls2.random_uniform' op operand #1 must be rank-0 tensor of i64, but got 'tensor<i32>'}}
  %0 = "ls2.random_uniform"(%seed, %offset) {stream = 0 : i64} : (tensor<i64>, tensor<i32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @random_not_f32(%seed: tensor<i64>) -> tensor<4xf16> {
  // expected-error @+1 {{'ls2.random_uniform' op result #0 must be ranked tensor of 32-bit float values, but got 'tensor<4xf16>'}}
  %0 = ls2.random_uniform %seed, %seed [] {stream = 0} : tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

func.func @constant_element_type() -> tensor<2xi8> {
  // expected-error @+1 {{'ls2.constant' op result #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 32-bit signless integer or 64-bit signless integer or 1-bit signless integer values, but got 'tensor<2xi8>'}}
  %0 = ls2.constant dense<1> : tensor<2xi8>
  return %0 : tensor<2xi8>
}

// -----

func.func @constant_type_mismatch() -> tensor<2xf16> {
  // expected-error @+1 {{'ls2.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "ls2.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf16>
  return %0 : tensor<2xf16>
}

// -----

func.func @gather_float_ids(%t: tensor<8x4xf32>, %ids: tensor<?xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'ls2.gather' op operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<?xf32>'}}
  %0 = ls2.gather %t[%ids] : tensor<8x4xf32>, tensor<?xf32> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @dropout_type_mismatch(%x: tensor<?x8xf16>, %s: tensor<i64>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'ls2.dropout' op failed to verify that all of {input, result} have same type}}
  %0 = "ls2.dropout"(%x, %s, %s) {rate = 0.1 : f32, stream = 0 : i64} : (tensor<?x8xf16>, tensor<i64>, tensor<i64>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @layer_norm_stats_not_f32(%x: tensor<?x8xf16>, %g: tensor<8xf16>) {
  // expected-error @+1 {{'ls2.layer_norm' op result #1 must be ranked tensor of 32-bit float values, but got 'tensor<?xf16>'}}
  %0:3 = "ls2.layer_norm"(%x, %g, %g) {epsilon = 1.0e-5 : f32} : (tensor<?x8xf16>, tensor<8xf16>, tensor<8xf16>) -> (tensor<?x8xf16>, tensor<?xf16>, tensor<?xf16>)
  return
}

// -----

func.func @attention_cu_seqlens_i64(%q: tensor<?x4x64xf16>, %cu: tensor<?xi64>) {
  // expected-error @+1 {{'ls2.attention' op operand #3 must be ranked tensor of 32-bit signless integer values, but got 'tensor<?xi64>'}}
  %o, %l = ls2.attention %q, %q, %q, %cu, %cu : tensor<?x4x64xf16>, tensor<?x4x64xf16>, tensor<?x4x64xf16>, tensor<?xi64>, tensor<?xi64> -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @cross_entropy_result_not_f32(%x: tensor<?x8xf32>, %t: tensor<?xi32>) -> tensor<f16> {
  // expected-error @+1 {{'ls2.cross_entropy' op result #0 must be ranked tensor of 32-bit float values, but got 'tensor<f16>'}}
  %0 = ls2.cross_entropy %x, %t : tensor<?x8xf32>, tensor<?xi32> -> tensor<f16>
  return %0 : tensor<f16>
}

// -----

func.func @adamw_state_not_f32(%p: tensor<8xf16>, %step: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'ls2.adamw' op operand #0 must be ranked tensor of 32-bit float values, but got 'tensor<8xf16>'}}
  %0:3 = ls2.adamw %p, %p, %p, %p, %step, %lr, %lr {beta1 = 0.9 : f32, beta2 = 0.999 : f32, epsilon = 1.0e-8 : f32, weight_decay = 0.0 : f32} : tensor<8xf16>, tensor<8xf16>
  return
}

// -----

func.func @adamw_lr_not_scalar(%p: tensor<8xf32>, %step: tensor<i64>, %lr: tensor<1xf32>, %gs: tensor<f32>) {
  // expected-error @+1 {{'ls2.adamw' op operand #5 must be rank-0 tensor of f32, but got 'tensor<1xf32>'}}
  %0:3 = "ls2.adamw"(%p, %p, %p, %p, %step, %lr, %gs) {beta1 = 0.9 : f32, beta2 = 0.999 : f32, epsilon = 1.0e-8 : f32, weight_decay = 0.0 : f32} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>, tensor<1xf32>, tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @adamw_state_mismatch(%p: tensor<8xf32>, %m: tensor<4xf32>, %step: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'ls2.adamw' op failed to verify that all of {param, exp_avg, exp_avg_sq, new_param, new_exp_avg, new_exp_avg_sq} have same type}}
  %0:3 = "ls2.adamw"(%p, %p, %m, %p, %step, %lr, %lr) {beta1 = 0.9 : f32, beta2 = 0.999 : f32, epsilon = 1.0e-8 : f32, weight_decay = 0.0 : f32} : (tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<i64>, tensor<f32>, tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

//===----------------------------------------------------------------------===//
// Elementwise inference
//===----------------------------------------------------------------------===//

// -----

func.func @binary_element_types(%x: tensor<4xf32>, %y: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'ls2.add' op operands must have the same element type, got f32 and f16}}
  %0 = ls2.add %x, %y : tensor<4xf32>, tensor<4xf16>
  return %0 : tensor<4xf32>
}

// -----

func.func @binary_shapes(%x: tensor<?x768xf32>, %y: tensor<768xf32>) -> tensor<?x768xf32> {
  // expected-error @+1 {{'ls2.mul' op operand shapes [?, 768] and [768] differ; they must match or one must be rank 0}}
  %0 = ls2.mul %x, %y : tensor<?x768xf32>, tensor<768xf32>
  return %0 : tensor<?x768xf32>
}

// -----

func.func @binary_result_type(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+2 {{'ls2.sub' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4xf16>'}}
  // expected-error @+1 {{'ls2.sub' op failed to infer returned types}}
  %0 = "ls2.sub"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

func.func @compare_element_types(%x: tensor<4xi32>, %y: tensor<4xi64>) -> tensor<4xi1> {
  // expected-error @+1 {{'ls2.compare' op operands must have the same element type, got i32 and i64}}
  %0 = ls2.compare eq, %x, %y : tensor<4xi32>, tensor<4xi64>
  return %0 : tensor<4xi1>
}

// -----

func.func @compare_shapes(%x: tensor<4xf32>, %y: tensor<8xf32>) -> tensor<4xi1> {
  // expected-error @+1 {{'ls2.compare' op operand shapes [4] and [8] differ; they must match or one must be rank 0}}
  %0 = ls2.compare lt, %x, %y : tensor<4xf32>, tensor<8xf32>
  return %0 : tensor<4xi1>
}

// -----

func.func @select_element_types(%p: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xbf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'ls2.select' op on_true and on_false must have the same element type, got f32 and bf16}}
  %0 = ls2.select %p, %x, %y : tensor<4xi1>, tensor<4xf32>, tensor<4xbf16>
  return %0 : tensor<4xf32>
}

// -----

func.func @select_shape(%p: tensor<?x4xi1>, %x: tensor<?x4xf32>, %y: tensor<4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'ls2.select' op value shape [4] must match the predicate's [?, 4] or be rank 0}}
  %0 = ls2.select %p, %x, %y : tensor<?x4xi1>, tensor<?x4xf32>, tensor<4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @cast_shape(%x: tensor<?x4xf16>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'ls2.cast' op all non-scalar operands/results must have the same shape and base type}}
  %0 = ls2.cast %x : tensor<?x4xf16> to tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// Compatible for the Elementwise trait, but cast keeps dims exactly.
func.func @cast_refines_shape(%x: tensor<?x4xf16>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'ls2.cast' op input shape [?, 4] and result shape [4, 4] must match}}
  %0 = ls2.cast %x : tensor<?x4xf16> to tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

//===----------------------------------------------------------------------===//
// Constants, iota, dims
//===----------------------------------------------------------------------===//

// -----

func.func @constant_dynamic() -> tensor<?xf32> {
  // expected-error @+1 {{'ls2.constant' op value must have a static shape, got 'tensor<?xf32>'}}
  %0 = "ls2.constant"() {value = dense_resource<blob> : tensor<?xf32>} : () -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @dim_out_of_range(%x: tensor<?x768xf16>) -> index {
  // expected-error @+1 {{'ls2.dim' op index 2 is out of range for rank 2}}
  %0 = ls2.dim %x[2] : tensor<?x768xf16>
  return %0 : index
}

// -----

func.func @dim_negative(%x: tensor<?x768xf16>) -> index {
  // expected-error @+1 {{'ls2.dim' op index -1 is out of range for rank 2}}
  %0 = ls2.dim %x[-1] : tensor<?x768xf16>
  return %0 : index
}

// -----

func.func @iota_dimension(%t: index) -> tensor<?x64xi32> {
  // expected-error @+1 {{'ls2.iota' op dimension 2 is out of range for rank 2}}
  %0 = ls2.iota [%t] {dimension = 2} : tensor<?x64xi32>
  return %0 : tensor<?x64xi32>
}

// -----

func.func @iota_dynamic_sizes() -> tensor<?x64xi32> {
  // expected-error @+1 {{'ls2.iota' op needs one index operand per dynamic result dim: 1 for 'tensor<?x64xi32>', got 0}}
  %0 = ls2.iota [] {dimension = 1} : tensor<?x64xi32>
  return %0 : tensor<?x64xi32>
}

// -----

func.func @iota_bool(%t: index) -> tensor<?xi1> {
  // expected-error @+1 {{'ls2.iota' op result #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<?xi1>'}}
  %0 = ls2.iota [%t] {dimension = 0} : tensor<?xi1>
  return %0 : tensor<?xi1>
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

// -----

func.func @broadcast_element_type(%b: tensor<768xf32>, %t: index) -> tensor<?x768xf16> {
  // expected-error @+1 {{'ls2.broadcast' op input and result element types differ: 'f32' vs 'f16'}}
  %0 = ls2.broadcast %b [%t] {dims = array<i64: 1>} : tensor<768xf32> -> tensor<?x768xf16>
  return %0 : tensor<?x768xf16>
}

// -----

func.func @broadcast_dims_count(%b: tensor<768xf32>, %t: index) -> tensor<?x768xf32> {
  // expected-error @+1 {{'ls2.broadcast' op dims has 2 entries but the input has rank 1}}
  %0 = ls2.broadcast %b [%t] {dims = array<i64: 0, 1>} : tensor<768xf32> -> tensor<?x768xf32>
  return %0 : tensor<?x768xf32>
}

// -----

func.func @broadcast_dims_range(%b: tensor<768xf32>, %t: index) -> tensor<?x768xf32> {
  // expected-error @+1 {{'ls2.broadcast' op dims[0] = 2 is out of range for result rank 2}}
  %0 = ls2.broadcast %b [%t] {dims = array<i64: 2>} : tensor<768xf32> -> tensor<?x768xf32>
  return %0 : tensor<?x768xf32>
}

// -----

func.func @broadcast_dims_order(%b: tensor<4x4xf32>, %t: index) -> tensor<?x4x4xf32> {
  // expected-error @+1 {{'ls2.broadcast' op dims [2, 1] must be strictly increasing}}
  %0 = ls2.broadcast %b [%t] {dims = array<i64: 2, 1>} : tensor<4x4xf32> -> tensor<?x4x4xf32>
  return %0 : tensor<?x4x4xf32>
}

// -----

func.func @broadcast_dim_size(%b: tensor<768xf32>, %t: index) -> tensor<?x1024xf32> {
  // expected-error @+1 {{'ls2.broadcast' op input dim 0 (size [768]) must be 1 or equal result dim 1 (size [1024])}}
  %0 = ls2.broadcast %b [%t] {dims = array<i64: 1>} : tensor<768xf32> -> tensor<?x1024xf32>
  return %0 : tensor<?x1024xf32>
}

// -----

func.func @broadcast_static_into_dynamic(%b: tensor<768xf32>, %t: index) -> tensor<?x?xf32> {
  // expected-error @+1 {{'ls2.broadcast' op input dim 0 (size [768]) must be 1 or equal result dim 1 (size [?])}}
  %0 = ls2.broadcast %b [%t, %t] {dims = array<i64: 1>} : tensor<768xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @broadcast_dynamic_sizes(%b: tensor<768xf32>, %t: index) -> tensor<?x768xf32> {
  // expected-error @+1 {{'ls2.broadcast' op needs one index operand per dynamic result dim: 1 for 'tensor<?x768xf32>', got 2}}
  %0 = ls2.broadcast %b [%t, %t] {dims = array<i64: 1>} : tensor<768xf32> -> tensor<?x768xf32>
  return %0 : tensor<?x768xf32>
}

// -----

func.func @reshape_element_type(%x: tensor<4x8xf32>) -> tensor<32xf16> {
  // expected-error @+1 {{'ls2.reshape' op input and result element types differ: 'f32' vs 'f16'}}
  %0 = ls2.reshape %x : tensor<4x8xf32> -> tensor<32xf16>
  return %0 : tensor<32xf16>
}

// -----

func.func @reshape_two_dynamic(%x: tensor<?x768xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{'ls2.reshape' op result 'tensor<?x?x64xf32>' may have at most one dynamic dim}}
  %0 = ls2.reshape %x : tensor<?x768xf32> -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

func.func @reshape_count(%x: tensor<4x8xf32>) -> tensor<30xf32> {
  // expected-error @+1 {{'ls2.reshape' op element count changes from 32 to 30}}
  %0 = ls2.reshape %x : tensor<4x8xf32> -> tensor<30xf32>
  return %0 : tensor<30xf32>
}

// -----

func.func @reshape_static_to_dynamic(%x: tensor<4x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'ls2.reshape' op a statically shaped input needs a statically shaped result, got 'tensor<?x8xf32>'}}
  %0 = ls2.reshape %x : tensor<4x8xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @reshape_dynamic_to_static(%x: tensor<?x8xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{'ls2.reshape' op a dynamically shaped input needs one dynamic result dim, got 'tensor<32xf32>'}}
  %0 = ls2.reshape %x : tensor<?x8xf32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

func.func @reshape_divisibility(%x: tensor<?x12xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'ls2.reshape' op static element counts 12 (input) and 8 (result) must divide one another}}
  %0 = ls2.reshape %x : tensor<?x12xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// A zero-sized static dim on one side only used to divide by zero.
func.func @reshape_zero_size(%x: tensor<?x4xf32>) -> tensor<?x0xf32> {
  // expected-error @+1 {{'ls2.reshape' op static element counts 4 (input) and 0 (result) must divide one another}}
  %0 = ls2.reshape %x : tensor<?x4xf32> -> tensor<?x0xf32>
  return %0 : tensor<?x0xf32>
}

// -----

func.func @transpose_length(%x: tensor<?x12x64xf16>) -> tensor<12x?x64xf16> {
  // expected-error @+2 {{'ls2.transpose' op permutation has 2 entries but the input has rank 3}}
  // expected-error @+1 {{'ls2.transpose' op failed to infer returned types}}
  %0 = ls2.transpose %x [1, 0] : tensor<?x12x64xf16> -> tensor<12x?x64xf16>
  return %0 : tensor<12x?x64xf16>
}

// -----

func.func @transpose_not_permutation(%x: tensor<?x12x64xf16>) -> tensor<12x12x64xf16> {
  // expected-error @+2 {{'ls2.transpose' op permutation [1, 1, 2] is not a permutation of [0, 3)}}
  // expected-error @+1 {{'ls2.transpose' op failed to infer returned types}}
  %0 = ls2.transpose %x [1, 1, 2] : tensor<?x12x64xf16> -> tensor<12x12x64xf16>
  return %0 : tensor<12x12x64xf16>
}

// -----

func.func @transpose_result(%x: tensor<?x12x64xf16>) -> tensor<?x12x64xf16> {
  // expected-error @+2 {{'ls2.transpose' op inferred type(s) 'tensor<12x?x64xf16>' are incompatible with return type(s) of operation 'tensor<?x12x64xf16>'}}
  // expected-error @+1 {{'ls2.transpose' op failed to infer returned types}}
  %0 = ls2.transpose %x [1, 0, 2] : tensor<?x12x64xf16> -> tensor<?x12x64xf16>
  return %0 : tensor<?x12x64xf16>
}

// -----

func.func @slice_axis(%x: tensor<?x2304xf16>) -> tensor<?x768xf16> {
  // expected-error @+2 {{'ls2.slice' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{'ls2.slice' op failed to infer returned types}}
  %0 = ls2.slice %x {axis = 2, start = 0, limit = 768} : tensor<?x2304xf16> -> tensor<?x768xf16>
  return %0 : tensor<?x768xf16>
}

// -----

func.func @slice_dynamic_axis(%x: tensor<?x2304xf16>) -> tensor<4x2304xf16> {
  // expected-error @+2 {{'ls2.slice' op axis 0 must have a static size}}
  // expected-error @+1 {{'ls2.slice' op failed to infer returned types}}
  %0 = ls2.slice %x {axis = 0, start = 0, limit = 4} : tensor<?x2304xf16> -> tensor<4x2304xf16>
  return %0 : tensor<4x2304xf16>
}

// -----

func.func @slice_range(%x: tensor<?x2304xf16>) -> tensor<?x768xf16> {
  // expected-error @+2 {{'ls2.slice' op range [2000, 2768) must be non-empty and within [0, 2304)}}
  // expected-error @+1 {{'ls2.slice' op failed to infer returned types}}
  %0 = ls2.slice %x {axis = 1, start = 2000, limit = 2768} : tensor<?x2304xf16> -> tensor<?x768xf16>
  return %0 : tensor<?x768xf16>
}

// -----

func.func @slice_empty(%x: tensor<?x2304xf16>) -> tensor<?x0xf16> {
  // expected-error @+2 {{'ls2.slice' op range [8, 8) must be non-empty and within [0, 2304)}}
  // expected-error @+1 {{'ls2.slice' op failed to infer returned types}}
  %0 = ls2.slice %x {axis = 1, start = 8, limit = 8} : tensor<?x2304xf16> -> tensor<?x0xf16>
  return %0 : tensor<?x0xf16>
}

// -----

func.func @concat_empty() -> tensor<2xf32> {
  // expected-error @+2 {{'ls2.concat' op needs at least one input}}
  // expected-error @+1 {{'ls2.concat' op failed to infer returned types}}
  %0 = "ls2.concat"() {axis = 0 : i64} : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @concat_axis(%x: tensor<?x64xf32>) -> tensor<?x128xf32> {
  // expected-error @+2 {{'ls2.concat' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{'ls2.concat' op failed to infer returned types}}
  %0 = ls2.concat %x, %x {axis = 2} : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}

// -----

func.func @concat_element_type(%x: tensor<?x64xf32>, %y: tensor<?x64xf16>) -> tensor<?x128xf32> {
  // expected-error @+2 {{'ls2.concat' op input 1 has type tensor<?x64xf16>; all inputs need the element type and rank of input 0, tensor<?x64xf32>}}
  // expected-error @+1 {{'ls2.concat' op failed to infer returned types}}
  %0 = ls2.concat %x, %y {axis = 1} : (tensor<?x64xf32>, tensor<?x64xf16>) -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}

// -----

func.func @concat_other_dim(%x: tensor<4x64xf32>, %y: tensor<8x64xf32>) -> tensor<4x128xf32> {
  // expected-error @+2 {{'ls2.concat' op input 1 differs from input 0 in dim 0 ([8, 64] vs [4, 64])}}
  // expected-error @+1 {{'ls2.concat' op failed to infer returned types}}
  %0 = ls2.concat %x, %y {axis = 1} : (tensor<4x64xf32>, tensor<8x64xf32>) -> tensor<4x128xf32>
  return %0 : tensor<4x128xf32>
}

//===----------------------------------------------------------------------===//
// Reductions, matmul, embedding
//===----------------------------------------------------------------------===//

// -----

func.func @reduce_no_axes(%x: tensor<?x768xf32>) -> tensor<?x768xf32> {
  // expected-error @+2 {{'ls2.reduce_sum' op needs at least one axis}}
  // expected-error @+1 {{'ls2.reduce_sum' op failed to infer returned types}}
  %0 = ls2.reduce_sum %x [] : tensor<?x768xf32> -> tensor<?x768xf32>
  return %0 : tensor<?x768xf32>
}

// -----

func.func @reduce_axis(%x: tensor<?x768xf32>) -> tensor<?xf32> {
  // expected-error @+2 {{'ls2.reduce_max' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{'ls2.reduce_max' op failed to infer returned types}}
  %0 = ls2.reduce_max %x [2] : tensor<?x768xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @reduce_axes_order(%x: tensor<?x12x64xf32>) -> tensor<?xf32> {
  // expected-error @+2 {{'ls2.reduce_sum' op axes [2, 1] must be distinct and ascending}}
  // expected-error @+1 {{'ls2.reduce_sum' op failed to infer returned types}}
  %0 = ls2.reduce_sum %x [2, 1] : tensor<?x12x64xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @reduce_keep_dims(%x: tensor<?x768xf32>) -> tensor<?xf32> {
  // expected-error @+2 {{'ls2.reduce_sum' op inferred type(s) 'tensor<?x1xf32>' are incompatible with return type(s) of operation 'tensor<?xf32>'}}
  // expected-error @+1 {{'ls2.reduce_sum' op failed to infer returned types}}
  %0 = ls2.reduce_sum %x [1] {keep_dims} : tensor<?x768xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @matmul_rank(%x: tensor<768xf16>, %w: tensor<768x64xf16>) -> tensor<64xf16> {
  // expected-error @+1 {{'ls2.matmul' op operands must have rank >= 2, got 'tensor<768xf16>' and 'tensor<768x64xf16>'}}
  %0 = ls2.matmul %x, %w : tensor<768xf16>, tensor<768x64xf16> -> tensor<64xf16>
  return %0 : tensor<64xf16>
}

// -----

func.func @matmul_element_types(%x: tensor<?x768xf16>, %w: tensor<768x64xbf16>) -> tensor<?x64xf16> {
  // expected-error @+1 {{'ls2.matmul' op operands must have the same element type, got 'f16' and 'bf16'}}
  %0 = ls2.matmul %x, %w : tensor<?x768xf16>, tensor<768x64xbf16> -> tensor<?x64xf16>
  return %0 : tensor<?x64xf16>
}

// -----

func.func @matmul_acc_type(%x: tensor<?x768xf16>, %w: tensor<768x64xf16>) -> tensor<?x64xf16> {
  // expected-error @+1 {{'ls2.matmul' op acc_type must be f32 or f16, got 'bf16'}}
  %0 = ls2.matmul %x, %w {acc_type = bf16} : tensor<?x768xf16>, tensor<768x64xf16> -> tensor<?x64xf16>
  return %0 : tensor<?x64xf16>
}

// -----

func.func @matmul_acc_f16_needs_f16(%x: tensor<?x768xbf16>, %w: tensor<768x64xbf16>) -> tensor<?x64xbf16> {
  // expected-error @+1 {{'ls2.matmul' op acc_type f16 needs f16 operands, got 'bf16'}}
  %0 = ls2.matmul %x, %w {acc_type = f16} : tensor<?x768xbf16>, tensor<768x64xbf16> -> tensor<?x64xbf16>
  return %0 : tensor<?x64xbf16>
}

// -----

func.func @matmul_b_rank(%x: tensor<?x12x?x64xf16>, %w: tensor<12x64x64xf16>) -> tensor<?x12x?x64xf16> {
  // expected-error @+1 {{'ls2.matmul' op b must have rank 2 or a's rank (4), got 3}}
  %0 = ls2.matmul %x, %w : tensor<?x12x?x64xf16>, tensor<12x64x64xf16> -> tensor<?x12x?x64xf16>
  return %0 : tensor<?x12x?x64xf16>
}

// -----

func.func @matmul_batch(%a: tensor<8x?x64xf32>, %b: tensor<4x64x?xf32>) -> tensor<8x?x?xf32> {
  // expected-error @+1 {{'ls2.matmul' op batch dim 0 differs: 8 vs 4}}
  %0 = ls2.matmul %a, %b : tensor<8x?x64xf32>, tensor<4x64x?xf32> -> tensor<8x?x?xf32>
  return %0 : tensor<8x?x?xf32>
}

// -----

func.func @matmul_contraction(%x: tensor<?x768xf16>, %w: tensor<3072x768xf16>) -> tensor<?x768xf16> {
  // expected-error @+1 {{'ls2.matmul' op contraction sizes differ: a gives K = [768], b gives K = [3072]}}
  %0 = ls2.matmul %x, %w : tensor<?x768xf16>, tensor<3072x768xf16> -> tensor<?x768xf16>
  return %0 : tensor<?x768xf16>
}

// -----

func.func @matmul_result(%x: tensor<?x768xf16>, %w: tensor<3072x768xf16>) -> tensor<?x768xf16> {
  // expected-error @+1 {{'ls2.matmul' op result shape [?, 768] must be [?, 3072]}}
  %0 = ls2.matmul %x, %w {transpose_b} : tensor<?x768xf16>, tensor<3072x768xf16> -> tensor<?x768xf16>
  return %0 : tensor<?x768xf16>
}

// -----

func.func @matmul_aux_without_activation(%x: tensor<?x64xf32>, %w: tensor<64x128xf32>) -> tensor<?x128xf32> {
  // expected-error @+1 {{'ls2.matmul' op an aux result needs activation relu or gelu_tanh}}
  %0, %1 = ls2.matmul %x, %w : tensor<?x64xf32>, tensor<64x128xf32> -> tensor<?x128xf32> aux tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}

// -----

func.func @matmul_aux_operand_without_grad(%x: tensor<?x64xf32>, %w: tensor<64x128xf32>, %p: tensor<?x128xf32>) -> tensor<?x128xf32> {
  // expected-error @+1 {{'ls2.matmul' op an aux operand needs activation relu_grad or gelu_tanh_grad}}
  %0 = ls2.matmul %x, %w aux(%p : tensor<?x128xf32>) : tensor<?x64xf32>, tensor<64x128xf32> -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}

// -----

func.func @matmul_activation_batched(%x: tensor<4x?x64xf32>, %w: tensor<64x128xf32>) -> tensor<4x?x128xf32> {
  // expected-error @+1 {{'ls2.matmul' op activation relu needs rank-2 operands, got 'tensor<4x?x64xf32>' and 'tensor<64x128xf32>'}}
  %0 = ls2.matmul %x, %w {activation = #ls2<gemm_activation relu>} : tensor<4x?x64xf32>, tensor<64x128xf32> -> tensor<4x?x128xf32>
  return %0 : tensor<4x?x128xf32>
}

// -----

func.func @matmul_gelu_aux_type(%x: tensor<?x64xbf16>, %w: tensor<64x128xbf16>) -> tensor<?x128xbf16> {
  // expected-error @+1 {{'ls2.matmul' op aux result of activation gelu_tanh must have the result's type 'tensor<?x128xbf16>', got 'tensor<?x128xf32>'}}
  %0, %1 = ls2.matmul %x, %w {activation = #ls2<gemm_activation gelu_tanh>} : tensor<?x64xbf16>, tensor<64x128xbf16> -> tensor<?x128xbf16> aux tensor<?x128xf32>
  return %0 : tensor<?x128xbf16>
}

// -----

func.func @matmul_relu_mask_shape(%x: tensor<?x64xf16>, %w: tensor<64x200xf16>) -> tensor<?x200xf16> {
  // expected-error @+1 {{'ls2.matmul' op aux result of activation relu must be the ReLU bit mask [M, ceil(N / 128) * 4] = [?, 8] of i32, got 'tensor<?x7xi32>'}}
  %0, %1 = ls2.matmul %x, %w {activation = #ls2<gemm_activation relu>} : tensor<?x64xf16>, tensor<64x200xf16> -> tensor<?x200xf16> aux tensor<?x7xi32>
  return %0 : tensor<?x200xf16>
}

// -----

func.func @matmul_grad_needs_aux(%dy: tensor<?x64xf16>, %w: tensor<200x64xf16>) -> tensor<?x200xf16> {
  // expected-error @+1 {{'ls2.matmul' op activation gelu_tanh_grad needs an aux operand}}
  %0 = ls2.matmul %dy, %w {activation = #ls2<gemm_activation gelu_tanh_grad>, transpose_b} : tensor<?x64xf16>, tensor<200x64xf16> -> tensor<?x200xf16>
  return %0 : tensor<?x200xf16>
}

// -----

func.func @matmul_grad_bias(%dy: tensor<?x64xf16>, %w: tensor<200x64xf16>, %p: tensor<?x200xf16>, %b: tensor<200xf16>) -> tensor<?x200xf16> {
  // expected-error @+1 {{'ls2.matmul' op activation gelu_tanh_grad cannot have a bias}}
  %0 = ls2.matmul %dy, %w bias(%b : tensor<200xf16>) aux(%p : tensor<?x200xf16>) {activation = #ls2<gemm_activation gelu_tanh_grad>, transpose_b} : tensor<?x64xf16>, tensor<200x64xf16> -> tensor<?x200xf16>
  return %0 : tensor<?x200xf16>
}

// -----

func.func @matmul_grad_bias_grad_shape(%dy: tensor<?x64xf16>, %w: tensor<200x64xf16>, %p: tensor<?x200xf16>) -> tensor<?x200xf16> {
  // expected-error @+1 {{'ls2.matmul' op bias_grad of an activation gradient must be [N] = [200], got 'tensor<64xf16>'}}
  %0, %1 = ls2.matmul %dy, %w aux(%p : tensor<?x200xf16>) {activation = #ls2<gemm_activation gelu_tanh_grad>, transpose_b} : tensor<?x64xf16>, tensor<200x64xf16> -> tensor<?x200xf16>, tensor<64xf16>
  return %0 : tensor<?x200xf16>
}

// -----

func.func @matmul_grad_bias_grad_dtype(%dy: tensor<?x64xf16>, %w: tensor<200x64xf16>, %p: tensor<?x8xi32>) -> tensor<?x200xf16> {
  // expected-error @+1 {{'ls2.matmul' op bias_grad of an activation gradient must have the result's element type (cuBLASLt's rule), got 'f32' and 'f16'}}
  %0, %1 = ls2.matmul %dy, %w aux(%p : tensor<?x8xi32>) {activation = #ls2<gemm_activation relu_grad>, transpose_b} : tensor<?x64xf16>, tensor<200x64xf16> -> tensor<?x200xf16>, tensor<200xf32>
  return %0 : tensor<?x200xf16>
}

// -----

func.func @matmul_forward_activation_bias_grad(%x: tensor<?x64xf16>, %g: tensor<?x200xf16>) -> tensor<64x200xf16> {
  // expected-error @+1 {{'ls2.matmul' op bias_grad with activation relu: only relu_grad and gelu_tanh_grad have a bias gradient}}
  %0, %1 = ls2.matmul %x, %g {activation = #ls2<gemm_activation relu>, transpose_a} : tensor<?x64xf16>, tensor<?x200xf16> -> tensor<64x200xf16>, tensor<64xf16>
  return %0 : tensor<64x200xf16>
}

// -----

func.func @gather_table(%t: tensor<100x?xf32>, %ids: tensor<?xi32>) -> tensor<?x?xf32> {
  // expected-error @+2 {{'ls2.gather' op table must have rank >= 1 and a static row shape (only its row count may be dynamic), got tensor<100x?xf32>}}
  // expected-error @+1 {{'ls2.gather' op failed to infer returned types}}
  %0 = ls2.gather %t[%ids] : tensor<100x?xf32>, tensor<?xi32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @gather_fill_not_an_integer(%t: tensor<?xi32>, %ids: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'ls2.gather' op fill_value 5.000000e-01 is not a value of the table's element type 'i32'}}
  %0 = ls2.gather %t[%ids] {fill_value = 0.5 : f64} : tensor<?xi32>, tensor<4xi32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @gather_fill_beyond_i32(%t: tensor<?xi32>, %ids: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'ls2.gather' op fill_value 3.000000e+09 is not a value of the table's element type 'i32'}}
  %0 = ls2.gather %t[%ids] {fill_value = 3.0e9 : f64} : tensor<?xi32>, tensor<4xi32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @gather_fill_not_finite(%t: tensor<?x8xf32>, %ids: tensor<4xi32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'ls2.gather' op fill_value INF must be finite}}
  %0 = ls2.gather %t[%ids] {fill_value = 0x7FF0000000000000 : f64} : tensor<?x8xf32>, tensor<4xi32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @gather_result(%t: tensor<100x768xf32>, %ids: tensor<?x?xi32>) -> tensor<?x768xf32> {
  // expected-error @+2 {{'ls2.gather' op inferred type(s) 'tensor<?x?x768xf32>' are incompatible with return type(s) of operation 'tensor<?x768xf32>'}}
  // expected-error @+1 {{'ls2.gather' op failed to infer returned types}}
  %0 = ls2.gather %t[%ids] : tensor<100x768xf32>, tensor<?x?xi32> -> tensor<?x768xf32>
  return %0 : tensor<?x768xf32>
}

// -----

func.func @scatter_add_result(%u: tensor<?x768xf32>, %ids: tensor<?xi32>, %n: index) -> tensor<100x?xf32> {
  // expected-error @+1 {{'ls2.scatter_add' op result must have rank >= 1 and a static row shape (only its row count may be dynamic), got 'tensor<100x?xf32>'}}
  %0 = ls2.scatter_add %u, %ids [%n] : tensor<?x768xf32>, tensor<?xi32> -> tensor<100x?xf32>
  return %0 : tensor<100x?xf32>
}

// -----

func.func @scatter_add_rows_without_size(%u: tensor<?x768xf32>, %ids: tensor<?xi32>) -> tensor<?x768xf32> {
  // expected-error @+1 {{'ls2.scatter_add' op needs one index operand per dynamic result dim: 1 for 'tensor<?x768xf32>', got 0}}
  %0 = ls2.scatter_add %u, %ids : tensor<?x768xf32>, tensor<?xi32> -> tensor<?x768xf32>
  return %0 : tensor<?x768xf32>
}

// -----

func.func @scatter_add_size_of_static_rows(%u: tensor<?x768xf32>, %ids: tensor<?xi32>, %n: index) -> tensor<100x768xf32> {
  // expected-error @+1 {{'ls2.scatter_add' op needs one index operand per dynamic result dim: 0 for 'tensor<100x768xf32>', got 1}}
  %0 = ls2.scatter_add %u, %ids [%n] : tensor<?x768xf32>, tensor<?xi32> -> tensor<100x768xf32>
  return %0 : tensor<100x768xf32>
}

// -----

func.func @scatter_add_negative_padding_idx(%u: tensor<?x768xf32>, %ids: tensor<?xi32>, %n: index) -> tensor<?x768xf32> {
  // expected-error @+1 {{'ls2.scatter_add' op padding_idx -1 must be >= 0}}
  %0 = ls2.scatter_add %u, %ids [%n] {padding_idx = -1 : i64} : tensor<?x768xf32>, tensor<?xi32> -> tensor<?x768xf32>
  return %0 : tensor<?x768xf32>
}

// -----

func.func @nonzero_mask_rank(%m: tensor<?x4xi1>) -> tensor<8xi32> {
  // expected-error @+1 {{'ls2.nonzero' op mask must have rank 1, got 'tensor<?x4xi1>'}}
  %0 = ls2.nonzero %m : tensor<?x4xi1> -> tensor<8xi32>
  return %0 : tensor<8xi32>
}

// -----

func.func @nonzero_mask_type(%m: tensor<?xi32>) -> tensor<8xi32> {
  // expected-error @+1 {{'ls2.nonzero' op operand #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<?xi32>'}}
  %0 = ls2.nonzero %m : tensor<?xi32> -> tensor<8xi32>
  return %0 : tensor<8xi32>
}

// -----

func.func @nonzero_dynamic_result(%m: tensor<?xi1>) -> tensor<?xi32> {
  // expected-error @+1 {{'ls2.nonzero' op result must have rank 1 and a static size (the most positions it holds), got 'tensor<?xi32>'}}
  %0 = ls2.nonzero %m : tensor<?xi1> -> tensor<?xi32>
  return %0 : tensor<?xi32>
}

// -----

func.func @nonzero_result_type(%m: tensor<?xi1>) -> tensor<8xf32> {
  // expected-error @+1 {{'ls2.nonzero' op result #0 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<8xf32>'}}
  %0 = ls2.nonzero %m : tensor<?xi1> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @nonzero_fill_value(%m: tensor<?xi1>) -> tensor<8xi32> {
  // expected-error @+1 {{'ls2.nonzero' op fill_value 4294967296 does not fit the result's element type 'i32'}}
  %0 = ls2.nonzero %m {fill_value = 4294967296 : i64} : tensor<?xi1> -> tensor<8xi32>
  return %0 : tensor<8xi32>
}

// -----

func.func @nonzero_positions_beyond_i32(%m: tensor<3000000000xi1>) -> tensor<8xi32> {
  // expected-error @+1 {{'ls2.nonzero' op mask of 3000000000 elements has positions beyond 'i32''s range}}
  %0 = ls2.nonzero %m : tensor<3000000000xi1> -> tensor<8xi32>
  return %0 : tensor<8xi32>
}

// -----

func.func @scatter_add_updates(%u: tensor<?x64xf32>, %ids: tensor<?xi32>) -> tensor<100x768xf32> {
  // expected-error @+1 {{'ls2.scatter_add' op updates shape [?, 64] must be the ids' shape followed by the row shape: [?, 768]}}
  %0 = ls2.scatter_add %u, %ids : tensor<?x64xf32>, tensor<?xi32> -> tensor<100x768xf32>
  return %0 : tensor<100x768xf32>
}

// -----

func.func @scatter_add_padding_idx(%u: tensor<?x768xf32>, %ids: tensor<?xi32>) -> tensor<100x768xf32> {
  // expected-error @+1 {{'ls2.scatter_add' op padding_idx 100 is out of range [0, 100)}}
  %0 = ls2.scatter_add %u, %ids {padding_idx = 100 : i64} : tensor<?x768xf32>, tensor<?xi32> -> tensor<100x768xf32>
  return %0 : tensor<100x768xf32>
}

//===----------------------------------------------------------------------===//
// Randomness
//===----------------------------------------------------------------------===//

// -----

func.func @random_stream(%s: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'ls2.random_uniform' op stream -1 must be >= 0}}
  %0 = ls2.random_uniform %s, %s [] {stream = -1} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @random_dynamic_sizes(%s: tensor<i64>) -> tensor<?x768xf32> {
  // expected-error @+1 {{'ls2.random_uniform' op needs one index operand per dynamic result dim: 1 for 'tensor<?x768xf32>', got 0}}
  %0 = ls2.random_uniform %s, %s [] {stream = 0} : tensor<?x768xf32>
  return %0 : tensor<?x768xf32>
}

//===----------------------------------------------------------------------===//
// Composites
//===----------------------------------------------------------------------===//

// -----

func.func @dropout_stream(%x: tensor<?x8xf16>, %s: tensor<i64>) -> tensor<?x8xf16> {
  // expected-error @+1 {{'ls2.dropout' op stream -3 must be >= 0}}
  %0 = ls2.dropout %x, %s, %s {rate = 0.1 : f32, stream = -3} : tensor<?x8xf16>
  return %0 : tensor<?x8xf16>
}

// -----

func.func @dropout_rate(%x: tensor<?x8xf16>, %s: tensor<i64>) -> tensor<?x8xf16> {
  // expected-error @+1 {{'ls2.dropout' op rate = 1.000000e+00 must be in [0, 1)}}
  %0 = ls2.dropout %x, %s, %s {rate = 1.0 : f32, stream = 0} : tensor<?x8xf16>
  return %0 : tensor<?x8xf16>
}

// -----

func.func @dropout_rate_negative(%x: tensor<?x8xf16>, %s: tensor<i64>) -> tensor<?x8xf16> {
  // expected-error @+1 {{'ls2.dropout' op rate = -5.000000e-01 must be in [0, 1)}}
  %0 = ls2.dropout %x, %s, %s {rate = -0.5 : f32, stream = 0} : tensor<?x8xf16>
  return %0 : tensor<?x8xf16>
}

// -----

func.func @layer_norm_rank(%x: tensor<f32>, %g: tensor<1xf32>) {
  // expected-error @+1 {{'ls2.layer_norm' op input must have rank >= 1 and a static last dim, got tensor<f32>}}
  %y, %m, %r = ls2.layer_norm %x, %g, %g {epsilon = 1.0e-5 : f32} : tensor<f32>, tensor<1xf32>, tensor<1xf32>
  return
}

// -----

func.func @layer_norm_dynamic_hidden(%x: tensor<4x?xf32>, %g: tensor<?xf32>) {
  // expected-error @+1 {{'ls2.layer_norm' op input must have rank >= 1 and a static last dim, got tensor<4x?xf32>}}
  %y, %m, %r = ls2.layer_norm %x, %g, %g {epsilon = 1.0e-5 : f32} : tensor<4x?xf32>, tensor<?xf32>, tensor<?xf32>
  return
}

// -----

func.func @layer_norm_stats_shape(%x: tensor<?x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+2 {{'ls2.layer_norm' op inferred type(s) 'tensor<?x8xf32>', 'tensor<?xf32>', 'tensor<?xf32>' are incompatible with return type(s) of operation 'tensor<?x8xf32>', 'tensor<?x1xf32>', 'tensor<?x1xf32>'}}
  // expected-error @+1 {{'ls2.layer_norm' op failed to infer returned types}}
  %0:3 = "ls2.layer_norm"(%x, %g, %g) {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<?x8xf32>, tensor<?x1xf32>, tensor<?x1xf32>)
  return
}

// -----

func.func @layer_norm_gamma(%x: tensor<?x768xf16>, %g: tensor<1024xf16>, %b: tensor<768xf16>) {
  // expected-error @+1 {{'ls2.layer_norm' op gamma must be 'tensor<768xf16>', got 'tensor<1024xf16>'}}
  %y, %m, %r = ls2.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f32} : tensor<?x768xf16>, tensor<1024xf16>, tensor<768xf16>
  return
}

// -----

func.func @layer_norm_beta(%x: tensor<?x768xf16>, %g: tensor<768xf16>, %b: tensor<768xf32>) {
  // expected-error @+1 {{'ls2.layer_norm' op beta must be 'tensor<768xf16>', got 'tensor<768xf32>'}}
  %y, %m, %r = ls2.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f32} : tensor<?x768xf16>, tensor<768xf16>, tensor<768xf32>
  return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<?x768xf32>, %g: tensor<768xf32>) {
  // expected-error @+1 {{'ls2.layer_norm' op epsilon = 0.000000e+00 must be positive and finite}}
  %y, %m, %r = ls2.layer_norm %x, %g, %g {epsilon = 0.0 : f32} : tensor<?x768xf32>, tensor<768xf32>, tensor<768xf32>
  return
}

// -----

func.func @softmax_result_shape(%x: tensor<?x128xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'ls2.softmax' op result shape [?, 64] must match input shape [?, 128]}}
  %0 = ls2.softmax %x : tensor<?x128xf32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @softmax_causal_rank(%x: tensor<128xf32>) -> tensor<128xf32> {
  // expected-error @+1 {{'ls2.softmax' op causal needs rank >= 2 (queries x keys), got 'tensor<128xf32>'}}
  %0 = ls2.softmax %x {causal} : tensor<128xf32> -> tensor<128xf32>
  return %0 : tensor<128xf32>
}

// -----

func.func @softmax_scale(%x: tensor<?x128xf32>) -> tensor<?x128xf32> {
  // expected-error @+1 {{'ls2.softmax' op scale = 0.000000e+00 must be finite and non-zero}}
  %0 = ls2.softmax %x {scale = 0.0 : f32} : tensor<?x128xf32> -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}

// -----

func.func @softmax_integer_mask(%x: tensor<?x128xf32>, %m: tensor<?x128xi32>) -> tensor<?x128xf32> {
  // expected-error @+1 {{'ls2.softmax' op mask must be i1 (keep where true) or a float (additive), got 'i32'}}
  %0 = ls2.softmax %x mask %m : tensor<?x128xi32> : tensor<?x128xf32> -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}

// -----

func.func @softmax_mask_rank(%x: tensor<?x12x?x?xf32>, %m: tensor<?x?xi1>) -> tensor<?x12x?x?xf32> {
  // expected-error @+1 {{'ls2.softmax' op mask rank 2 must equal input rank 4}}
  %0 = ls2.softmax %x mask %m : tensor<?x?xi1> : tensor<?x12x?x?xf32> -> tensor<?x12x?x?xf32>
  return %0 : tensor<?x12x?x?xf32>
}

// -----

func.func @softmax_mask_dim(%x: tensor<?x12x?x?xf32>, %m: tensor<?x4x?x?xf32>) -> tensor<?x12x?x?xf32> {
  // expected-error @+1 {{'ls2.softmax' op mask dim 1 ([4]) must be 1 or the input's ([12])}}
  %0 = ls2.softmax %x mask %m : tensor<?x4x?x?xf32> : tensor<?x12x?x?xf32> -> tensor<?x12x?x?xf32>
  return %0 : tensor<?x12x?x?xf32>
}

// -----

func.func @attention_rank(%q: tensor<?x768xf16>, %k: tensor<?x12x64xf16>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention' op query must be [tokens, heads, head_dim], got 'tensor<?x768xf16>'}}
  %o, %l = ls2.attention %q, %k, %k, %cu, %cu : tensor<?x768xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x768xf16>, tensor<?x12xf32>
  return
}

// -----

func.func @attention_key_lengths_batch(%q: tensor<?x12x64xf16>, %cu: tensor<5xi32>, %n: tensor<5xi32>) {
  // expected-error @+1 {{'ls2.attention' op key_lengths must be [batch] (one fewer than cu_seqlens_k's entries), got 'tensor<5xi32>' beside cu_seqlens_k 'tensor<5xi32>'}}
  %o, %l = ls2.attention %q, %q, %q, %cu, %cu key_lengths(%n : tensor<5xi32>) : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<5xi32>, tensor<5xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
  return
}

// -----

func.func @attention_dynamic_heads(%q: tensor<?x12x64xf16>, %k: tensor<?x?x64xf16>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention' op key heads and head_dim must be static, got 'tensor<?x?x64xf16>'}}
  %o, %l = ls2.attention %q, %k, %k, %cu, %cu : tensor<?x12x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
  return
}

// -----

func.func @attention_element_type(%q: tensor<?x12x64xf16>, %k: tensor<?x12x64xf16>, %v: tensor<?x12x64xbf16>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention' op value element type 'bf16' differs from query's 'f16'}}
  %o, %l = ls2.attention %q, %k, %v, %cu, %cu : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xbf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
  return
}

// -----

func.func @attention_kv_shapes(%q: tensor<?x12x64xf16>, %k: tensor<?x12x64xf16>, %v: tensor<?x4x64xf16>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention' op key and value shapes differ: [?, 12, 64] vs [?, 4, 64]}}
  %o, %l = ls2.attention %q, %k, %v, %cu, %cu : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x4x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
  return
}

// -----

func.func @attention_head_dim(%q: tensor<?x12x64xf16>, %k: tensor<?x12x128xf16>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention' op key head_dim 128 differs from query head_dim 64}}
  %o, %l = ls2.attention %q, %k, %k, %cu, %cu : tensor<?x12x64xf16>, tensor<?x12x128xf16>, tensor<?x12x128xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
  return
}

// -----

func.func @attention_gqa_groups(%q: tensor<?x12x64xf16>, %k: tensor<?x5x64xf16>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention' op kv heads (5) must divide query heads (12)}}
  %o, %l = ls2.attention %q, %k, %k, %cu, %cu : tensor<?x12x64xf16>, tensor<?x5x64xf16>, tensor<?x5x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
  return
}

// -----

// Zero kv heads used to divide by zero.
func.func @attention_zero_kv_heads(%q: tensor<?x12x64xf16>, %k: tensor<?x0x64xf16>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention' op key heads and head_dim must be >= 1, got 'tensor<?x0x64xf16>'}}
  %o, %l = ls2.attention %q, %k, %k, %cu, %cu : tensor<?x12x64xf16>, tensor<?x0x64xf16>, tensor<?x0x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
  return
}

// -----

func.func @attention_head_dim_limit(%q: tensor<?x2x512xf16>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention' op head_dim 512 exceeds 256}}
  %o, %l = ls2.attention %q, %q, %q, %cu, %cu : tensor<?x2x512xf16>, tensor<?x2x512xf16>, tensor<?x2x512xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x2x512xf16>, tensor<?x2xf32>
  return
}

// -----

func.func @attention_cu_seqlens(%q: tensor<?x12x64xf16>, %cuq: tensor<5xi32>, %cuk: tensor<9xi32>) {
  // expected-error @+1 {{'ls2.attention' op cu_seqlens_q and cu_seqlens_k must both be [batch + 1], got 'tensor<5xi32>' and 'tensor<9xi32>'}}
  %o, %l = ls2.attention %q, %q, %q, %cuq, %cuk : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<5xi32>, tensor<9xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
  return
}

// -----

func.func @attention_result(%q: tensor<?x12x64xf16>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention' op result type 'tensor<?x12x64xf32>' must equal the query type 'tensor<?x12x64xf16>'}}
  %o, %l = ls2.attention %q, %q, %q, %cu, %cu : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf32>, tensor<?x12xf32>
  return
}

// -----

func.func @attention_lse(%q: tensor<?x12x64xf16>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention' op lse must be [tokens, heads] = [?, 12], got [12, ?]}}
  %o, %l = ls2.attention %q, %q, %q, %cu, %cu : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<12x?xf32>
  return
}

// -----

func.func @attention_scale(%q: tensor<?x12x64xf16>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention' op scale = -1.250000e-01 must be positive and finite}}
  %o, %l = ls2.attention %q, %q, %q, %cu, %cu {scale = -0.125 : f32} : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
  return
}

// -----

func.func @attention_dropout_rate(%q: tensor<?x12x64xf16>, %cu: tensor<?xi32>, %s: tensor<i64>) {
  // expected-error @+1 {{'ls2.attention' op dropout_rate = 1.500000e+00 must be in [0, 1)}}
  %o, %l = ls2.attention %q, %q, %q, %cu, %cu dropout(%s, %s) {dropout_rate = 1.5 : f32} : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
  return
}

// -----

func.func @attention_seed_without_offset(%q: tensor<?x12x64xf16>, %cu: tensor<?xi32>, %s: tensor<i64>) {
  // expected-error @+1 {{'ls2.attention' op seed and offset must be given together}}
  %0:2 = "ls2.attention"(%q, %q, %q, %cu, %cu, %s) {dropout_rate = 0.1 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0>, stream = 0 : i64} : (tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?xi32>, tensor<?xi32>, tensor<i64>) -> (tensor<?x12x64xf16>, tensor<?x12xf32>)
  return
}

// -----

func.func @attention_dropout_needs_seed(%q: tensor<?x12x64xf16>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention' op dropout_rate > 0 needs dropout(seed, offset) operands}}
  %o, %l = ls2.attention %q, %q, %q, %cu, %cu {dropout_rate = 0.1 : f32} : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
  return
}

// -----

func.func @attention_stream(%q: tensor<?x12x64xf16>, %cu: tensor<?xi32>, %s: tensor<i64>) {
  // expected-error @+1 {{'ls2.attention' op stream -1 must be >= 0}}
  %o, %l = ls2.attention %q, %q, %q, %cu, %cu dropout(%s, %s) {dropout_rate = 0.1 : f32, stream = -1} : tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?x12x64xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x12x64xf16>, tensor<?x12xf32>
  return
}

// -----

func.func @cross_entropy_logits(%x: tensor<?x?xf32>, %t: tensor<?xi32>) -> tensor<f32> {
  // expected-error @+1 {{'ls2.cross_entropy' op logits must be [rows, classes] with static classes, got 'tensor<?x?xf32>'}}
  %0 = ls2.cross_entropy %x, %t : tensor<?x?xf32>, tensor<?xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_targets(%x: tensor<8x100xf32>, %t: tensor<4xi32>) -> tensor<f32> {
  // expected-error @+1 {{'ls2.cross_entropy' op targets must be [rows] = [8], got 'tensor<4xi32>'}}
  %0 = ls2.cross_entropy %x, %t : tensor<8x100xf32>, tensor<4xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_label_smoothing(%x: tensor<?x100xf32>, %t: tensor<?xi32>) -> tensor<f32> {
  // expected-error @+1 {{'ls2.cross_entropy' op label_smoothing = 1.000000e+00 must be in [0, 1)}}
  %0 = ls2.cross_entropy %x, %t {label_smoothing = 1.0 : f32} : tensor<?x100xf32>, tensor<?xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_none_shape(%x: tensor<?x100xf32>, %t: tensor<?xi32>) -> tensor<f32> {
  // expected-error @+1 {{'ls2.cross_entropy' op reduction none gives one loss per row: [?], got 'tensor<f32>'}}
  %0 = ls2.cross_entropy %x, %t {reduction = #ls2<loss_reduction none>} : tensor<?x100xf32>, tensor<?xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_reduced_rank(%x: tensor<?x100xf32>, %t: tensor<?xi32>) -> tensor<?xf32> {
  // expected-error @+1 {{'ls2.cross_entropy' op a reduced loss is rank 0, got 'tensor<?xf32>'}}
  %0 = ls2.cross_entropy %x, %t {reduction = #ls2<loss_reduction sum>} : tensor<?x100xf32>, tensor<?xi32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @adamw_param_rank(%p: tensor<4x8xf32>, %step: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'ls2.adamw' op param must be a flat [N] buffer, got 'tensor<4x8xf32>'}}
  %0:3 = ls2.adamw %p, %p, %p, %p, %step, %lr, %lr {beta1 = 0.9 : f32, beta2 = 0.999 : f32, epsilon = 1.0e-8 : f32, weight_decay = 0.0 : f32} : tensor<4x8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @adamw_grad_shape(%p: tensor<32xf32>, %g: tensor<16xf16>, %step: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'ls2.adamw' op grad shape [16] must match param shape [32]}}
  %0:3 = ls2.adamw %p, %g, %p, %p, %step, %lr, %lr {beta1 = 0.9 : f32, beta2 = 0.999 : f32, epsilon = 1.0e-8 : f32, weight_decay = 0.0 : f32} : tensor<32xf32>, tensor<16xf16>
  return
}

// -----

func.func @adamw_beta1(%p: tensor<32xf32>, %step: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'ls2.adamw' op beta1 = 1.000000e+00 must be in [0, 1)}}
  %0:3 = ls2.adamw %p, %p, %p, %p, %step, %lr, %lr {beta1 = 1.0 : f32, beta2 = 0.999 : f32, epsilon = 1.0e-8 : f32, weight_decay = 0.0 : f32} : tensor<32xf32>, tensor<32xf32>
  return
}

// -----

func.func @adamw_beta2(%p: tensor<32xf32>, %step: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'ls2.adamw' op beta2 = -5.000000e-01 must be in [0, 1)}}
  %0:3 = ls2.adamw %p, %p, %p, %p, %step, %lr, %lr {beta1 = 0.9 : f32, beta2 = -0.5 : f32, epsilon = 1.0e-8 : f32, weight_decay = 0.0 : f32} : tensor<32xf32>, tensor<32xf32>
  return
}

// -----

func.func @adamw_epsilon(%p: tensor<32xf32>, %step: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'ls2.adamw' op epsilon = -1.000000e-08 must be positive and finite}}
  %0:3 = ls2.adamw %p, %p, %p, %p, %step, %lr, %lr {beta1 = 0.9 : f32, beta2 = 0.999 : f32, epsilon = -1.0e-8 : f32, weight_decay = 0.0 : f32} : tensor<32xf32>, tensor<32xf32>
  return
}

// -----

func.func @adamw_weight_decay(%p: tensor<32xf32>, %step: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'ls2.adamw' op weight_decay = -1.000000e-02 must be >= 0 and finite}}
  %0:3 = ls2.adamw %p, %p, %p, %p, %step, %lr, %lr {beta1 = 0.9 : f32, beta2 = 0.999 : f32, epsilon = 1.0e-8 : f32, weight_decay = -0.01 : f32} : tensor<32xf32>, tensor<32xf32>
  return
}

// -----

func.func @fusion_block_argument_type(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'ls2.fusion' op input 0 has type 'tensor<?x64xf32>' but its block argument has type 'tensor<?x32xf32>'}}
  %0 = ls2.fusion "loop_0" loop(%x) : (tensor<?x64xf32>) -> tensor<?x64xf32> {
  ^bb0(%a: tensor<?x32xf32>):
    ls2.yield %x : tensor<?x64xf32>
  }
  return %0 : tensor<?x64xf32>
}

// -----

func.func @fusion_yield_count(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'ls2.fusion' op yields 2 values for 1 results}}
  %0 = ls2.fusion "loop_0" loop(%x) : (tensor<?x64xf32>) -> tensor<?x64xf32> {
  ^bb0(%a: tensor<?x64xf32>):
    ls2.yield %a, %a : tensor<?x64xf32>, tensor<?x64xf32>
  }
  return %0 : tensor<?x64xf32>
}

// -----

func.func @fusion_empty_name(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'ls2.fusion' op needs a non-empty group name}}
  %0 = ls2.fusion "" loop(%x) : (tensor<?x64xf32>) -> tensor<?x64xf32> {
  ^bb0(%a: tensor<?x64xf32>):
    ls2.yield %a : tensor<?x64xf32>
  }
  return %0 : tensor<?x64xf32>
}
