// RUN: ls2c-opt %s -split-input-file -verify-diagnostics

// Adversarial inputs that used to crash ls2c-opt or slip through its
// verifiers: each must give a precise diagnostic.

//===----------------------------------------------------------------------===//
// Result type inference on operands that are not ranked tensors. The parser
// infers result types before the ODS type constraints run, so inference
// must check every operand it reads (it used to cast blindly: SIGSEGV).
//===----------------------------------------------------------------------===//

func.func @add_scalar(%a: f32) {
  // expected-error @+1 {{'ls2.add' op operand #0 must be a ranked tensor, got 'f32'}}
  %0 = ls2.add %a, %a : f32
  return
}

// -----

func.func @sub_unranked(%a: tensor<*xf32>) {
  // expected-error @+1 {{'ls2.sub' op operand #0 must be a ranked tensor, got 'tensor<*xf32>'}}
  %0 = ls2.sub %a, %a : tensor<*xf32>
  return
}

// -----

func.func @mul_index(%a: index) {
  // expected-error @+1 {{'ls2.mul' op operand #0 must be a ranked tensor, got 'index'}}
  %0 = ls2.mul %a, %a : index
  return
}

// -----

func.func @div_none(%a: none) {
  // expected-error @+1 {{'ls2.div' op operand #0 must be a ranked tensor, got 'none'}}
  %0 = ls2.div %a, %a : none
  return
}

// -----

func.func @max_complex(%a: complex<f32>) {
  // expected-error @+1 {{'ls2.max' op operand #0 must be a ranked tensor, got 'complex<f32>'}}
  %0 = ls2.max %a, %a : complex<f32>
  return
}

// -----

func.func @min_vector(%a: vector<4xf32>) {
  // expected-error @+1 {{'ls2.min' op operand #0 must be a ranked tensor, got 'vector<4xf32>'}}
  %0 = ls2.min %a, %a : vector<4xf32>
  return
}

// -----

func.func @add_mixed(%a: tensor<4xf32>, %b: f32) {
  // expected-error @+1 {{'ls2.add' op operand #1 must be a ranked tensor, got 'f32'}}
  %0 = ls2.add %a, %b : tensor<4xf32>, f32
  return
}

// -----

func.func @add_memref(%a: memref<4xf32>) {
  // expected-error @+1 {{'ls2.add' op operand #0 must be a ranked tensor, got 'memref<4xf32>'}}
  %0 = ls2.add %a, %a : memref<4xf32>
  return
}

// -----

func.func @compare_scalar(%a: f32) {
  // expected-error @+1 {{'ls2.compare' op operand #0 must be a ranked tensor, got 'f32'}}
  %0 = ls2.compare lt, %a, %a : f32
  return
}

// -----

// Used to say "operands must have the same element type, got f32 and
// tensor<*xf32>", reading an unranked type as a ranked one.
func.func @compare_unranked(%a: tensor<4xf32>, %b: tensor<*xf32>) {
  // expected-error @+1 {{'ls2.compare' op operand #1 must be a ranked tensor, got 'tensor<*xf32>'}}
  %0 = ls2.compare eq, %a, %b : tensor<4xf32>, tensor<*xf32>
  return
}

// -----

// A ranked tensor of a type ODS rejects still infers; ODS then reports it.
func.func @add_i8(%a: tensor<4xi8>) {
  // expected-error @+1 {{'ls2.add' op operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi8>'}}
  %0 = ls2.add %a, %a : tensor<4xi8>
  return
}

// -----

// Ops that write their operand types out parse them as ranked tensors.
func.func @select_scalar(%p: tensor<4xi1>, %a: f32) {
  // expected-error @+1 {{invalid kind of type specified}}
  %0 = ls2.select %p, %a, %a : tensor<4xi1>, f32, f32
  return
}

// -----

func.func @transpose_unranked(%a: tensor<*xf32>) {
  // expected-error @+1 {{invalid kind of type specified}}
  %0 = ls2.transpose %a [0] : tensor<*xf32> -> tensor<*xf32>
  return
}

// -----

func.func @gather_vector(%t: vector<4xf32>, %i: tensor<2xi32>) {
  // expected-error @+1 {{invalid kind of type specified}}
  %0 = ls2.gather %t[%i] : vector<4xf32>, tensor<2xi32> -> tensor<2xf32>
  return
}

// -----

func.func @layer_norm_none(%a: none) {
  // expected-error @+1 {{invalid kind of type specified}}
  %0:3 = ls2.layer_norm %a, %a, %a {epsilon = 1.0e-5 : f32} : none, none, none
  return
}

// -----

// layer_norm's verifier runs before its result type inference is checked
// (that is a region invariant): it used to read the last dim of a rank-0
// input.
func.func @layer_norm_rank0(%a: tensor<f32>) {
  // expected-error @+1 {{'ls2.layer_norm' op input must have rank >= 1 and a static last dim, got 'tensor<f32>'}}
  %0:3 = "ls2.layer_norm"(%a, %a, %a) <{epsilon = 1.0e-5 : f32}> : (tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>)
  return
}

//===----------------------------------------------------------------------===//
// Element counts that overflow int64
//===----------------------------------------------------------------------===//

// -----

// The static products used to wrap to INT64_MIN and -1, and INT64_MIN % -1
// trapped (SIGFPE).
func.func @reshape_overflow_trap(%x: tensor<?x4611686018427387904x2xf32>) {
  // expected-error @+1 {{'ls2.reshape' op input element count overflows int64: 'tensor<?x4611686018427387904x2xf32>'}}
  %0 = ls2.reshape %x : tensor<?x4611686018427387904x2xf32> -> tensor<?x3x5x17x257x641x65537x6700417xf32>
  return
}

// -----

func.func @reshape_overflow_result(%x: tensor<?x2xf32>) {
  // expected-error @+1 {{'ls2.reshape' op result element count overflows int64: 'tensor<?x3x5x17x257x641x65537x6700417x4611686018427387904xf32>'}}
  %0 = ls2.reshape %x : tensor<?x2xf32> -> tensor<?x3x5x17x257x641x65537x6700417x4611686018427387904xf32>
  return
}

// -----

// 2^62 * 4 wrapped to 0 and matched the result's count.
func.func @reshape_overflow_to_zero(%x: tensor<4611686018427387904x4xf32>) {
  // expected-error @+1 {{'ls2.reshape' op input element count overflows int64: 'tensor<4611686018427387904x4xf32>'}}
  %0 = ls2.reshape %x : tensor<4611686018427387904x4xf32> -> tensor<0xf32>
  return
}

// -----

// A zero-sized dim empties the tensor whatever the other dims are: no
// overflow, and both sides count 0 elements.
func.func @reshape_huge_but_empty(%x: tensor<?x4611686018427387904x4x0xf32>, %y: tensor<4611686018427387904x4x0xf32>) {
  %0 = ls2.reshape %x : tensor<?x4611686018427387904x4x0xf32> -> tensor<?x0xf32>
  %1 = ls2.reshape %y : tensor<4611686018427387904x4x0xf32> -> tensor<0xf32>
  return
}

// -----

// The sum of the concatenated sizes used to become dynamic.
func.func @concat_overflow(%x: tensor<4611686018427387904xf32>) {
  // expected-error @+2 {{'ls2.concat' op size of axis 0 overflows int64 at input 1}}
  // expected-error @+1 {{'ls2.concat' op failed to infer returned types}}
  %0 = ls2.concat %x, %x {axis = 0} : (tensor<4611686018427387904xf32>, tensor<4611686018427387904xf32>) -> tensor<?xf32>
  return
}

// -----

func.func @concat_overflow_late(%x: tensor<3x4611686018427387904xf32>, %y: tensor<3x4611686018427387903xf32>, %z: tensor<3x2xf32>) {
  // expected-error @+2 {{'ls2.concat' op size of axis 1 overflows int64 at input 2}}
  // expected-error @+1 {{'ls2.concat' op failed to infer returned types}}
  %0 = ls2.concat %x, %y, %z {axis = 1} : (tensor<3x4611686018427387904xf32>, tensor<3x4611686018427387903xf32>, tensor<3x2xf32>) -> tensor<3x?xf32>
  return
}

// -----

// INT64_MAX itself is a valid static size.
func.func @concat_max(%x: tensor<4611686018427387904xf32>, %y: tensor<4611686018427387903xf32>) -> tensor<9223372036854775807xf32> {
  %0 = ls2.concat %x, %y {axis = 0} : (tensor<4611686018427387904xf32>, tensor<4611686018427387903xf32>) -> tensor<9223372036854775807xf32>
  return %0 : tensor<9223372036854775807xf32>
}

//===----------------------------------------------------------------------===//
// softmax: rank >= 1, and mask dims that ls2.broadcast accepts
//===----------------------------------------------------------------------===//

// -----

// ls2-decompose aborted on it ("Failed to infer result type(s)").
func.func @softmax_rank0(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'ls2.softmax' op needs rank >= 1 (softmax runs over the last dim), got 'tensor<f32>'}}
  %0 = ls2.softmax %x : tensor<f32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A static mask dim against a dynamic input dim may differ at run time;
// ls2-decompose then built an invalid ls2.broadcast.
func.func @softmax_mask_static_vs_dynamic(%x: tensor<?x4xf32>, %m: tensor<5x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'ls2.softmax' op mask dim 0 ([5]) must be 1 or the input's ([?]), static and equal or both dynamic}}
  %0 = ls2.softmax %x mask %m : tensor<5x4xf32> : tensor<?x4xf32> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// The reverse: ls2-decompose used to refuse it after the verifier let it in.
func.func @softmax_mask_dynamic_vs_static(%x: tensor<?x12xf32>, %m: tensor<?x?xf32>) -> tensor<?x12xf32> {
  // expected-error @+1 {{'ls2.softmax' op mask dim 1 ([?]) must be 1 or the input's ([12]), static and equal or both dynamic}}
  %0 = ls2.softmax %x mask %m : tensor<?x?xf32> : tensor<?x12xf32> -> tensor<?x12xf32>
  return %0 : tensor<?x12xf32>
}

// -----

// Still valid: 1, the same static size, or dynamic against dynamic.
func.func @softmax_mask_valid(%x: tensor<?x12x?xf32>, %m: tensor<1x12x?xi1>, %a: tensor<?x1x1xf16>) {
  %0 = ls2.softmax %x mask %m : tensor<1x12x?xi1> : tensor<?x12x?xf32> -> tensor<?x12x?xf32>
  %1 = ls2.softmax %x mask %a : tensor<?x1x1xf16> {causal} : tensor<?x12x?xf32> -> tensor<?x12x?xf32>
  return
}

//===----------------------------------------------------------------------===//
// attention and attention_grad: heads and head_dim >= 1, batch + 1 >= 1
//===----------------------------------------------------------------------===//

// -----

// head_dim 0 made the default scale 1/sqrt(0) = inf.
func.func @attention_head_dim_zero(%q: tensor<?x4x0xf16>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention' op query heads and head_dim must be >= 1, got 'tensor<?x4x0xf16>'}}
  %o, %l = ls2.attention %q, %q, %q, %cu, %cu : tensor<?x4x0xf16>, tensor<?x4x0xf16>, tensor<?x4x0xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4x0xf16>, tensor<?x4xf32>
  return
}

// -----

// Zero query heads: zero kv heads "divided" them.
func.func @attention_heads_zero(%q: tensor<?x0x8xf16>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention' op query heads and head_dim must be >= 1, got 'tensor<?x0x8xf16>'}}
  %o, %l = ls2.attention %q, %q, %q, %cu, %cu : tensor<?x0x8xf16>, tensor<?x0x8xf16>, tensor<?x0x8xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x0x8xf16>, tensor<?x0xf32>
  return
}

// -----

func.func @attention_kv_heads_zero(%q: tensor<?x4x8xf16>, %k: tensor<?x0x8xf16>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention' op key heads and head_dim must be >= 1, got 'tensor<?x0x8xf16>'}}
  %o, %l = ls2.attention %q, %k, %k, %cu, %cu : tensor<?x4x8xf16>, tensor<?x0x8xf16>, tensor<?x0x8xf16>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @attention_cu_seqlens_empty(%q: tensor<?x4x8xf16>, %cu: tensor<0xi32>) {
  // expected-error @+1 {{'ls2.attention' op cu_seqlens_q holds batch + 1 >= 1 offsets, got 'tensor<0xi32>'}}
  %o, %l = ls2.attention %q, %q, %q, %cu, %cu : tensor<?x4x8xf16>, tensor<?x4x8xf16>, tensor<?x4x8xf16>, tensor<0xi32>, tensor<0xi32> -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @attention_cu_seqlens_k_empty(%q: tensor<?x4x8xf16>, %cu: tensor<?xi32>, %cuk: tensor<0xi32>) {
  // expected-error @+1 {{'ls2.attention' op cu_seqlens_k holds batch + 1 >= 1 offsets, got 'tensor<0xi32>'}}
  %o, %l = ls2.attention %q, %q, %q, %cu, %cuk : tensor<?x4x8xf16>, tensor<?x4x8xf16>, tensor<?x4x8xf16>, tensor<?xi32>, tensor<0xi32> -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

// One sequence (batch + 1 = 1: no sequence at all) and zero tokens are fine.
func.func @attention_minimal(%q: tensor<0x1x1xf16>, %cu: tensor<1xi32>) {
  %o, %l = ls2.attention %q, %q, %q, %cu, %cu : tensor<0x1x1xf16>, tensor<0x1x1xf16>, tensor<0x1x1xf16>, tensor<1xi32>, tensor<1xi32> -> tensor<0x1x1xf16>, tensor<0x1xf32>
  return
}

// -----

func.func @attention_grad_head_dim_zero(%q: tensor<?x4x0xf16>, %lse: tensor<?x4xf32>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention_grad' op query heads and head_dim must be >= 1, got 'tensor<?x4x0xf16>'}}
  %dq, %dk, %dv = ls2.attention_grad %q, %q, %q, %q, %q, %lse, %cu, %cu : tensor<?x4x0xf16>, tensor<?x4x0xf16>, tensor<?x4xf32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @attention_grad_heads_zero(%q: tensor<?x0x8xf16>, %lse: tensor<?x0xf32>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'ls2.attention_grad' op query heads and head_dim must be >= 1, got 'tensor<?x0x8xf16>'}}
  %dq, %dk, %dv = ls2.attention_grad %q, %q, %q, %q, %q, %lse, %cu, %cu : tensor<?x0x8xf16>, tensor<?x0x8xf16>, tensor<?x0xf32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @attention_grad_cu_seqlens_empty(%q: tensor<?x4x8xf16>, %lse: tensor<?x4xf32>, %cu: tensor<0xi32>) {
  // expected-error @+1 {{'ls2.attention_grad' op cu_seqlens_q holds batch + 1 >= 1 offsets, got 'tensor<0xi32>'}}
  %dq, %dk, %dv = ls2.attention_grad %q, %q, %q, %q, %q, %lse, %cu, %cu : tensor<?x4x8xf16>, tensor<?x4x8xf16>, tensor<?x4xf32>, tensor<0xi32>, tensor<0xi32>
  return
}
