//===- Program.h - the compiled program the runtime executes --------------===//
//
// The boundary between compiler and runtime (docs/architecture.md, "Program
// and bundles"): workspaces, the arena size, generated kernels with their
// launch configs, and per function a list of steps (kernel launches, GEMMs,
// attention calls) whose operands are byte ranges of the arena, of the
// function's arguments or of its results. The compiler fills it from the
// planned ls2 module (lib/Codegen/ProgramBuilder.cpp); bundles serialize it
// (docs/bundle-format.md); the runtime reads only this, never MLIR.
//
// Sizes are in bytes unless named otherwise; element counts say "elements".
//
//===----------------------------------------------------------------------===//
#ifndef LS2C_RUNTIME_PROGRAM_H
#define LS2C_RUNTIME_PROGRAM_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ls2c::runtime {

/// Element types of program tensors (ls2's f32, f16, bf16, f64, i32, i64, i1;
/// i1 is stored as one byte).
enum class DType : uint8_t { F32, F16, BF16, F64, I32, I64, I1 };

/// Bytes of one element of `t`.
unsigned dtypeBytes(DType t);
/// "f32", "f16", ... (the ls2 spelling); parseDType is its inverse and
/// returns false for any other string.
const char *dtypeName(DType t);
bool parseDType(const std::string &name, DType &out);

/// One dimension: a static size, or dimension `axis` of function argument
/// `argument` (a dynamic token or sequence count known only per call) times
/// multiplier / divisor, an exact quotient (ViT's tokens are images x 17; a
/// patch row count is images x 16).
struct Dim {
  int64_t size = 0;      ///< the size when argument < 0
  int32_t argument = -1; ///< index into Function::arguments, or -1 (static)
  int32_t axis = 0;      ///< the argument's dimension when dynamic
  int64_t multiplier = 1; ///< >= 1, coprime with divisor
  int64_t divisor = 1;    ///< >= 1

  bool isStatic() const { return argument < 0; }
};

/// What a function argument or result is (the ls2.kind attribute):
/// parameters, inputs (token ids, cu_seqlens, the dropout seed), flat
/// workspaces, training state (loss scale, step counters), non-trainable
/// buffers (sinusoidal positions); results are outputs, the loss or
/// gradients, or updated workspaces and state.
enum class ArgumentKind : uint8_t {
  Parameter, Input, Workspace, State, Buffer, Output, Gradient, Loss
};

/// A function argument or result: a tensor the runtime binds per call.
/// Dynamic dims are bounded by `maxShape` (the frontend's ls2.max_shape, from
/// max_batch_tokens and max_seq_len); storage is sized at the bound.
struct TensorSpec {
  std::string name; ///< ls2.name ("input_ids", "gradients", ...)
  ArgumentKind kind = ArgumentKind::Input;
  DType dtype = DType::F32;
  std::vector<Dim> shape;       ///< a result's dynamic dims name arguments
  std::vector<int64_t> maxShape; ///< every dim at its bound (elements)
  /// A result only: the index of the argument (same name, dtype and shape)
  /// whose buffer it may be written over, -1 for its own buffer. The
  /// compiler proved that no step reads an element of that argument after
  /// it is overwritten (lib/Transforms/InPlaceResults.h), so the caller may
  /// pass one buffer for both and save a copy of the state.
  int32_t inPlaceOf = -1;
};

/// A byte range the step reads or writes.
struct BufferRef {
  enum class Space : uint8_t { Arena, Argument, Result };
  Space space = Space::Arena;
  uint32_t index = 0;      ///< argument or result index (unused for Arena)
  uint64_t byteOffset = 0; ///< from the start of the arena / tensor
  uint64_t maxBytes = 0;   ///< the range's size at the shape bounds
};

/// A kernel's parameter: a device pointer, or a 64-bit integer (a dynamic
/// size), in declaration order.
enum class ParamKind : uint8_t { Pointer, Int64 };

/// The launch config the generator chose. Kernels whose dynamic shared
/// memory plus their static __shared__ arrays exceed 48 KiB need
/// cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) once. The grid is computed per launch:
///   gridDim.x = min(maxBlocks, ceil(work / workPerBlock)),
///   work = product of the `work` dims (1 when there are none);
/// a launch whose work is 0 is skipped. Kernels loop grid-stride, so any
/// grid size is correct; only gridDim.x is used.
///
/// A static work dim is its size (>= 0). Unlike every other Dim, a dynamic
/// work dim names one of the kernel's own parameters, not an argument of a
/// function (one kernel is launched from several functions, whose argument
/// numbering differs): `argument` is an index into Kernel::params and that
/// parameter is ParamKind::Int64; `axis` is 0; its value at a launch is that
/// launch's int64 argument (Step::args[argument].value, a Dim evaluated in
/// the launching function) times multiplier / divisor, an exact quotient.
struct LaunchConfig {
  uint32_t blockThreads = 0;
  uint32_t dynamicSharedBytes = 0;
  std::vector<Dim> work;     ///< units of work (rows, elements, ...)
  uint64_t workPerBlock = 1; ///< units one block takes per grid pass
  uint32_t maxBlocks = 0;    ///< cap (a fixed grid for two-stage reductions)
};

/// A generated kernel: CUDA C++ source (one __global__ function named
/// `name`, extern "C"), its parameters, launch config and compiled images.
struct Kernel {
  std::string name;   ///< the fusion group's name, a C identifier
  std::string source; ///< complete NVRTC translation unit
  std::vector<ParamKind> params;
  LaunchConfig launch;
  /// Scratch bytes the kernel needs at Program::scratchOffset (two-stage
  /// reductions' partials and their block counter); 0 when none.
  uint64_t scratchBytes = 0;
  /// Compiled images by arch ("sm_90" -> cubin bytes).
  std::map<std::string, std::string> cubins;
};

/// An argument of a kernel launch (same order as Kernel::params).
struct KernelArg {
  ParamKind kind = ParamKind::Pointer;
  BufferRef buffer; ///< for Pointer
  Dim value;        ///< for Int64 (static or a dynamic dim)
};

/// cuBLASLt epilogues (ls2.matmul's bias, bias_grad and activation), one
/// per cublasLtEpilogue_t the compiler uses, in the program's row-major
/// terms (GemmRunner.cpp maps them onto cuBLASLt's column-major view):
///   Bias           C = acc + bias[n]
///   BiasGradA      biasGrad[m] = sum_k op(a)[m, k] (with transposeA)
///   Relu*, Gelu*   C = act(acc (+ bias[n])), the tanh GELU; *Aux also
///                  writes `aux`: the ReLU bit mask (bit n % 32 of i32 word
///                  n / 32 of row m, auxLd bits a row) or the GELU input
///                  (c's dtype, auxLd elements a row)
///   DRelu, DGelu   C = acc * act'(aux) (the mask's bit, or the tanh GELU
///                  derivative at aux); *BGrad also writes
///                  biasGrad[n] = sum_m C[m, n] (c's dtype)
enum class GemmEpilogue : uint8_t {
  None, Bias, BiasGradA,
  Relu, ReluAux, ReluBias, ReluAuxBias,
  Gelu, GeluAux, GeluBias, GeluAuxBias,
  DRelu, DReluBGrad, DGelu, DGeluBGrad
};

/// What an epilogue reads and writes.
bool epilogueHasBias(GemmEpilogue e);     ///< reads `bias` [N]
bool epilogueHasBiasGrad(GemmEpilogue e); ///< writes `biasGrad`
bool epilogueWritesAux(GemmEpilogue e);   ///< Relu*Aux*, Gelu*Aux*
bool epilogueReadsAux(GemmEpilogue e);    ///< DRelu*, DGelu*
bool epilogueIsRelu(GemmEpilogue e);      ///< Relu* and DRelu* (bit-mask aux)
bool epilogueIsActivation(GemmEpilogue e); ///< any Relu/Gelu/DRelu/DGelu
/// "none", "bias", "bias_grad_a", "relu", "relu_aux", ..., "dgelu_bgrad"
/// (the bundle spelling).
const char *epilogueName(GemmEpilogue e);

/// C[M, N] = op(A) op(B) per batch, row-major, f32 accumulation. A is [M, K]
/// (or [K, M] transposed) with leading dimension lda (elements) and batch
/// stride strideA (elements, 0 = shared), likewise B and C.
struct Gemm {
  BufferRef a, b, c, bias, biasGrad;
  /// The activation epilogues' aux matrix ([M, auxLd] in its units: bits
  /// of the ReLU mask, elements of c's dtype for the GELU input); unused
  /// (auxLd 0) otherwise.
  BufferRef aux;
  int64_t auxLd = 0;
  DType aType = DType::F32, bType = DType::F32, cType = DType::F32,
        biasType = DType::F32;
  bool transposeA = false, transposeB = false;
  Dim m, n, k, batch; ///< batch is 1 (static) for a plain GEMM
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t strideA = 0, strideB = 0, strideC = 0;
  GemmEpilogue epilogue = GemmEpilogue::None;
};

/// ls2.attention (backward = false) or ls2.attention_grad (backward = true)
/// over packed variable-length sequences; tensors [T, heads, headDim] with
/// row strides in elements (a strided view of a fused QKV projection has
/// stride 3 * heads * headDim). The runtime runs it through cuDNN's fused
/// attention (CudnnAttention.h) when asked to and cuDNN accepts it;
/// otherwise it runs the `fallbackSteps` kernel launches that follow this
/// step (the generated FlashAttention kernels), which it skips after cuDNN.
struct Attention {
  bool backward = false;
  DType dtype = DType::F32;
  uint32_t heads = 0, kvHeads = 0, headDim = 0;
  bool causal = false;
  float scale = 0, dropoutRate = 0;
  uint32_t stream = 0; ///< Philox stream of the dropout
  Dim tokensQ, tokensK, batchPlusOne;
  int64_t strideQ = 0, strideK = 0, strideV = 0, strideO = 0;
  BufferRef q, k, v, out, lse, cuSeqlensQ, cuSeqlensK, seed, offset;
  // Backward only: dout in, dq/dk/dv out (with their row strides).
  BufferRef dout, dq, dk, dv;
  int64_t strideDO = 0, strideDQ = 0, strideDK = 0, strideDV = 0;
  /// The launches right after this step that compute the same call
  /// (0: none; then only cuDNN can run it).
  uint32_t fallbackSteps = 0;
  /// Bound of one sequence's tokens (the description's max_seq_len; 0 =
  /// unknown, then tokensQ / tokensK bound it): cuDNN plans their grids by
  /// it, so a call with a longer sequence is the caller's error (the tools
  /// refuse such batches before any launch; the generated kernels have no
  /// such bound).
  int64_t maxSeqLen = 0;
};

/// One step of a function, executed in order on one stream.
struct Step {
  enum class Kind : uint8_t { Launch, Gemm, Attention, Copy };
  Kind kind = Kind::Launch;
  uint32_t kernel = 0;        ///< Launch: index into Program::kernels
  std::vector<KernelArg> args; ///< Launch
  struct Gemm gemm;            ///< Gemm
  struct Attention attention;  ///< Attention
  /// Copy: copySource.maxBytes bytes (a result that is an argument
  /// unchanged, such as state the step keeps).
  BufferRef copySource, copyDestination;
};

/// A compiled function (@accumulate_gradients, @optimizer_step, @forward,
/// ...): arguments, results, its arena bytes and steps.
struct Function {
  std::string name;
  std::vector<TensorSpec> arguments;
  std::vector<TensorSpec> results;
  uint64_t arenaBytes = 0; ///< this function's plan (<= Program::arenaBytes)
  std::vector<Step> steps;
};

/// Flat workspace layout of one parameter (ParameterLayout / planWorkspace).
struct ParameterSlot {
  std::string name;           ///< reference name (Hugging Face / fairseq)
  std::vector<int64_t> shape; ///< elements
  uint64_t offset = 0;        ///< elements into the flat fp32 workspaces
  bool weightDecay = false;
};

/// Everything the runtime needs to run a model.
struct Program {
  std::string modelName;
  std::string description; ///< the model description JSON, verbatim
  std::string computeDType; ///< "f32", "f16" or "bf16"
  uint64_t workspaceElements = 0; ///< fp32 elements of each flat workspace
  std::vector<ParameterSlot> parameters;
  /// One device arena shared by all functions (they never run concurrently):
  /// the largest function plan, then kernel scratch at scratchOffset.
  uint64_t arenaBytes = 0;
  uint64_t scratchOffset = 0;
  std::vector<Kernel> kernels;
  std::vector<Function> functions;
};

/// Equality as the bundle format sees it (round-trip tests, caches). A static
/// Dim compares its size, a dynamic one its argument, axis, multiplier and
/// divisor; a KernelArg
/// compares its kind and the part that kind uses (buffer or value); a Step
/// its kind and that kind's part (kernel and args, gemm, attention, or the
/// copy's source and destination).
/// Everything else compares every field. Defined in runtime/lib/Bundle/Program.cpp.
bool operator==(const Dim &a, const Dim &b);
bool operator==(const TensorSpec &a, const TensorSpec &b);
bool operator==(const BufferRef &a, const BufferRef &b);
bool operator==(const LaunchConfig &a, const LaunchConfig &b);
bool operator==(const Kernel &a, const Kernel &b);
bool operator==(const KernelArg &a, const KernelArg &b);
bool operator==(const Gemm &a, const Gemm &b);
bool operator==(const Attention &a, const Attention &b);
bool operator==(const Step &a, const Step &b);
bool operator==(const Function &a, const Function &b);
bool operator==(const ParameterSlot &a, const ParameterSlot &b);
bool operator==(const Program &a, const Program &b);
inline bool operator!=(const Dim &a, const Dim &b) { return !(a == b); }
inline bool operator!=(const TensorSpec &a, const TensorSpec &b) {
  return !(a == b);
}
inline bool operator!=(const BufferRef &a, const BufferRef &b) {
  return !(a == b);
}
inline bool operator!=(const LaunchConfig &a, const LaunchConfig &b) {
  return !(a == b);
}
inline bool operator!=(const Kernel &a, const Kernel &b) { return !(a == b); }
inline bool operator!=(const KernelArg &a, const KernelArg &b) {
  return !(a == b);
}
inline bool operator!=(const Gemm &a, const Gemm &b) { return !(a == b); }
inline bool operator!=(const Attention &a, const Attention &b) {
  return !(a == b);
}
inline bool operator!=(const Step &a, const Step &b) { return !(a == b); }
inline bool operator!=(const Function &a, const Function &b) {
  return !(a == b);
}
inline bool operator!=(const ParameterSlot &a, const ParameterSlot &b) {
  return !(a == b);
}
inline bool operator!=(const Program &a, const Program &b) { return !(a == b); }

} // namespace ls2c::runtime

#endif // LS2C_RUNTIME_PROGRAM_H
