//===- GemmRunner.cpp - a Program's GEMM steps through cuBLASLt -----------===//
//
// Row-major to column-major. cuBLASLt is column-major; a row-major [R, C]
// matrix with row length ld is, read column-major, its transpose [C, R] with
// leading dimension ld. So the program's row-major C = op(A) op(B) is
// computed as the column-major Cᵀ = op(B)ᵀ op(A)ᵀ: cuBLASLt's "A" operand is
// the program's b (transa = transposeB), its "B" operand the program's a
// (transb = transposeA), and its D is N x M with leading dimension ldc:
//
//   cuBLASLt m = N, n = M, k = K
//   layout A (program b): !transposeB: N x K, ld ldb;  transposeB: K x N
//   layout B (program a): !transposeA: K x M, ld lda;  transposeA: M x K
//   layout C = D:         N x M, ld ldc
//
// Epilogues after that swap:
//   Bias      -> CUBLASLT_EPILOGUE_BIAS: a vector of length "rows of D" = N,
//                added to every column of D, i.e. bias[n] to every row of the
//                program's C.
//   BiasGradA -> CUBLASLT_EPILOGUE_BGRADB: the reduction over k of cuBLASLt's
//                op(B) = the program's op(a)ᵀ, of length "columns of D" = M:
//                biasGrad[m] = sum_k op(a)[m, k]; with transposeA (a stored
//                [K, M], the weight-gradient dW = dYᵀ X) that is the column
//                sums of the stored a (db = the sums of dY over tokens).
//   Relu*, Gelu* -> CUBLASLT_EPILOGUE_RELU[_AUX][_BIAS], GELU[_AUX][_BIAS]:
//                pointwise on D (any layout); the bias as for Bias. The aux
//                matrix has D's shape, N x M column-major with leading
//                dimension auxLd: the program's row-major [M, auxLd] (bits
//                of the ReLU mask, elements of c's dtype for the GELU
//                input). cuBLASLt needs auxLd a multiple of 128 (ReLU) or 8
//                (GELU) and >= N ("rows of D").
//   DRelu*, DGelu* -> CUBLASLT_EPILOGUE_DRELU[_BGRAD], DGELU[_BGRAD]: D =
//                acc * act'(aux), aux read as above; BGRAD's bias gradient
//                has length "rows of D" = N and sums D over its columns,
//                i.e. biasGrad[n] = sum_m C[m, n], in c's dtype.
//
// The bias has c's dtype (cuBLASLt's rule; other combinations are refused).
// Where cuBLASLt has no algorithm for BGRADB (seen on sm_90 with CUDA 13.0:
// an f32 bias gradient with an f16 or bf16 c, and a without transposeA),
// the bias gradient is computed as a second GEMM,
// biasGrad[M, 1] = op(a)[M, K] ones[K, 1], after the plain product; the ones
// live in a small device buffer the runner owns. k = 0 writes zeros with
// memsets, and with a bias runs a K = 1 GEMM over zeros in the workspace so
// C is the bias broadcast, rounded once, by the same epilogue.
//
// Activation epilogues run on one matrix (batch 1) and have no fallback:
// cuBLASLt without an algorithm for one is a GemmError naming it.
//
// Autotuning (GemmRunner.h: setAutotune): a new plan takes the candidate of
// cuBLASLt's first kCandidates that an earlier decision names (GemmChoice.h),
// else the fastest, timed on the call's own operands (GemmTuner.h) where the
// call allows it: not while its stream is capturing a graph, beta 0, and C
// overlapping no operand it reads. Other plans keep the heuristic's first.
//
// LS2C_GEMM_TRACE=1 in the environment prints each new plan (shape, the
// epilogue used, the algorithm's workspace, tuning times) to stderr.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Runtime/GemmRunner.h"

#include "GemmTuner.h"
#include "ls2c/JIT/KernelCompiler.h"
#include "ls2c/JIT/ProgramCache.h"
#include "ls2c/Runtime/GemmChoice.h"

#include <cublasLt.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

namespace ls2c::runtime {

namespace {

/// One GEMM with every size resolved and its device pointers.
struct Desc {
  DType aType = DType::F32, bType = DType::F32, cType = DType::F32,
        biasType = DType::F32;
  bool transposeA = false, transposeB = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t strideA = 0, strideB = 0, strideC = 0;
  GemmEpilogue epilogue = GemmEpilogue::None;
  int64_t auxLd = 0;
  const void *a = nullptr, *b = nullptr, *bias = nullptr;
  void *c = nullptr, *biasGrad = nullptr, *aux = nullptr;
  /// C = op(a) op(b) + beta C (beta 1: the k-slices after the first).
  float beta = 0.0f;
};

bool usesAux(GemmEpilogue e) {
  return epilogueWritesAux(e) || epilogueReadsAux(e);
}

/// The cuBLASLt epilogue of `e` (after the row-major swap, see above).
cublasLtEpilogue_t cublasEpilogue(GemmEpilogue e) {
  switch (e) {
  case GemmEpilogue::None:
    return CUBLASLT_EPILOGUE_DEFAULT;
  case GemmEpilogue::Bias:
    return CUBLASLT_EPILOGUE_BIAS;
  case GemmEpilogue::BiasGradA:
    return CUBLASLT_EPILOGUE_BGRADB;
  case GemmEpilogue::Relu:
    return CUBLASLT_EPILOGUE_RELU;
  case GemmEpilogue::ReluAux:
    return CUBLASLT_EPILOGUE_RELU_AUX;
  case GemmEpilogue::ReluBias:
    return CUBLASLT_EPILOGUE_RELU_BIAS;
  case GemmEpilogue::ReluAuxBias:
    return CUBLASLT_EPILOGUE_RELU_AUX_BIAS;
  case GemmEpilogue::Gelu:
    return CUBLASLT_EPILOGUE_GELU;
  case GemmEpilogue::GeluAux:
    return CUBLASLT_EPILOGUE_GELU_AUX;
  case GemmEpilogue::GeluBias:
    return CUBLASLT_EPILOGUE_GELU_BIAS;
  case GemmEpilogue::GeluAuxBias:
    return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  case GemmEpilogue::DRelu:
    return CUBLASLT_EPILOGUE_DRELU;
  case GemmEpilogue::DReluBGrad:
    return CUBLASLT_EPILOGUE_DRELU_BGRAD;
  case GemmEpilogue::DGelu:
    return CUBLASLT_EPILOGUE_DGELU;
  case GemmEpilogue::DGeluBGrad:
    return CUBLASLT_EPILOGUE_DGELU_BGRAD;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

/// The pointer cuBLASLt's BIAS_POINTER takes: the bias, or the bias
/// gradient it writes; null when the epilogue has neither.
const void *biasPointerOf(const Desc &d) {
  if (epilogueHasBias(d.epilogue))
    return d.bias;
  if (epilogueHasBiasGrad(d.epilogue))
    return d.biasGrad;
  return nullptr;
}

/// "gemm m=37 n=65 k=19 batch=1 a=f16[T] lda=37 b=f16 ldb=65 c=f32 ldc=65
/// epilogue=bias(f32)" for error messages.
std::string describe(const Desc &d) {
  std::ostringstream s;
  s << "gemm m=" << d.m << " n=" << d.n << " k=" << d.k
    << " batch=" << d.batch << " a=" << dtypeName(d.aType)
    << (d.transposeA ? "[T]" : "") << " lda=" << d.lda
    << " b=" << dtypeName(d.bType) << (d.transposeB ? "[T]" : "")
    << " ldb=" << d.ldb << " c=" << dtypeName(d.cType) << " ldc=" << d.ldc;
  if (d.batch != 1)
    s << " strides=" << d.strideA << "/" << d.strideB << "/" << d.strideC;
  s << " epilogue=" << epilogueName(d.epilogue);
  if (epilogueHasBias(d.epilogue) || epilogueHasBiasGrad(d.epilogue))
    s << "(" << dtypeName(d.biasType) << ")";
  if (usesAux(d.epilogue))
    s << " auxLd=" << d.auxLd;
  return s.str();
}

[[noreturn]] void fail(const std::string &what, const Desc &d) {
  throw GemmError("GemmRunner: " + what + " (" + describe(d) + ")");
}

std::string statusText(cublasStatus_t st) {
  return std::string(cublasLtGetStatusName(st)) + " (" +
         cublasLtGetStatusString(st) + ")";
}

void checkLt(cublasStatus_t st, const char *call, const Desc &d) {
  if (st != CUBLAS_STATUS_SUCCESS)
    fail(std::string(call) + " failed: " + statusText(st), d);
}

void checkCuda(cudaError_t st, const char *call, const Desc &d) {
  if (st != cudaSuccess)
    fail(std::string(call) + " failed: " + cudaGetErrorName(st) + " (" +
             cudaGetErrorString(st) + ")",
         d);
}

bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

cudaDataType_t cudaType(DType t) {
  switch (t) {
  case DType::F16:
    return CUDA_R_16F;
  case DType::BF16:
    return CUDA_R_16BF;
  default:
    return CUDA_R_32F;
  }
}

/// The largest power of two (at most 256) dividing the address.
uint32_t alignmentOf(const void *p) {
  auto v = reinterpret_cast<uintptr_t>(p);
  if (v == 0)
    return 256;
  return static_cast<uint32_t>(std::min<uintptr_t>(256, v & (~v + 1)));
}

char *bytePtr(void *p) { return static_cast<char *>(p); }

/// An algorithm's bytes in hex (GemmChoice.h's algo).
std::string algoHex(const cublasLtMatmulAlgo_t &a) {
  static_assert(sizeof(a.data) == 64, "cublasLtMatmulAlgo_t holds 64 bytes");
  const auto *bytes = reinterpret_cast<const unsigned char *>(a.data);
  std::string out;
  char two[3];
  for (size_t i = 0; i < sizeof(a.data); ++i) {
    std::snprintf(two, sizeof two, "%02x", bytes[i]);
    out += two;
  }
  return out;
}

/// A cached plan: descriptors and the algorithm for one key.
struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspaceBytes = 0;
  /// False when cuBLASLt has no algorithm (only cached for BiasGradA, which
  /// then takes the two-GEMM route).
  bool supported = true;

  Plan() = default;
  Plan(const Plan &) = delete;
  Plan &operator=(const Plan &) = delete;
  ~Plan() {
    if (la)
      cublasLtMatrixLayoutDestroy(la);
    if (lb)
      cublasLtMatrixLayoutDestroy(lb);
    if (lc)
      cublasLtMatrixLayoutDestroy(lc);
    if (op)
      cublasLtMatmulDescDestroy(op);
  }
};

using Key = std::array<int64_t, 24>;

Key keyOf(const Desc &d, size_t workspaceBytes) {
  return {static_cast<int64_t>(d.aType),
          static_cast<int64_t>(d.bType),
          static_cast<int64_t>(d.cType),
          static_cast<int64_t>(d.biasType),
          static_cast<int64_t>(d.epilogue),
          d.transposeA,
          d.transposeB,
          d.m,
          d.n,
          d.k,
          d.batch,
          d.lda,
          d.ldb,
          d.ldc,
          d.strideA,
          d.strideB,
          d.strideC,
          alignmentOf(d.a),
          alignmentOf(d.b),
          alignmentOf(d.c),
          alignmentOf(biasPointerOf(d)),
          static_cast<int64_t>(workspaceBytes),
          d.auxLd,
          usesAux(d.epilogue) ? alignmentOf(d.aux) : 0};
}

struct Preference {
  cublasLtMatmulPreference_t p = nullptr;
  ~Preference() {
    if (p)
      cublasLtMatmulPreferenceDestroy(p);
  }
};

/// One past the last byte an operand of `rows` x `cols` (row pitch `ld`,
/// `batch` matrices `stride` apart, elements of `elt` bytes) touches.
const char *endOf(const void *p, int64_t rows, int64_t cols, int64_t ld,
                  int64_t batch, int64_t stride, size_t elt) {
  int64_t last = (batch - 1) * stride + (rows - 1) * ld + cols;
  return static_cast<const char *>(p) + static_cast<size_t>(last) * elt;
}

bool overlaps(const void *p, const char *pEnd, const void *q,
              const char *qEnd) {
  return p && q && static_cast<const char *>(p) < qEnd &&
         static_cast<const char *>(q) < pEnd;
}

/// Whether timing `d`'s candidates on its own operands leaves the result
/// as one run would: beta 0 (C is only written), C overlapping nothing the
/// call reads, and `stream` not capturing (the timing waits for events).
bool tunable(const Desc &d, cudaStream_t stream) {
  if (d.beta != 0.0f || d.k == 0)
    return false;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {
    (void)cudaGetLastError(); // e.g. the legacy stream beside a capture
    return false;
  }
  if (capture != cudaStreamCaptureStatusNone)
    return false;
  size_t ce = dtypeBytes(d.cType), ae = dtypeBytes(d.aType);
  const char *cEnd = endOf(d.c, d.m, d.n, d.ldc, d.batch, d.strideC, ce);
  const char *aEnd =
      d.transposeA ? endOf(d.a, d.k, d.m, d.lda, d.batch, d.strideA, ae)
                   : endOf(d.a, d.m, d.k, d.lda, d.batch, d.strideA, ae);
  const char *bEnd =
      d.transposeB ? endOf(d.b, d.n, d.k, d.ldb, d.batch, d.strideB, ae)
                   : endOf(d.b, d.k, d.n, d.ldb, d.batch, d.strideB, ae);
  if (overlaps(d.c, cEnd, d.a, aEnd) || overlaps(d.c, cEnd, d.b, bEnd))
    return false;
  if (epilogueHasBias(d.epilogue) &&
      overlaps(d.c, cEnd, d.bias,
               endOf(d.bias, 1, d.n, d.n, 1, 0, dtypeBytes(d.biasType))))
    return false;
  if (epilogueReadsAux(d.epilogue) &&
      overlaps(d.c, cEnd, d.aux, endOf(d.aux, d.m, d.auxLd, d.auxLd, 1, 0, ce)))
    return false;
  return true;
}

} // namespace

struct GemmRunner::Impl {
  /// Algorithms an autotuned plan times (cuBLASLt's first ones).
  static constexpr int kCandidates = 8;
  cublasLtHandle_t handle = nullptr;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  bool trace = false;
  bool autotune = false;
  /// Autotuning's decisions (GemmChoice.h), read from and written to
  /// choicesPath (empty: kept in memory only) when the first is needed.
  GemmChoices choices;
  std::string choicesPath;
  bool choicesLoaded = false, choicesWriteFailed = false;
  /// Shapes timed by this runner: at most kMaxTimedDecisions (a run of many
  /// shapes, each bucket timed once, stops timing and forcing step-by-step
  /// runs there).
  static constexpr int kMaxTimedDecisions = 64;
  int timedDecisions = 0;
  /// The device's part of every decision key ("" until read; "-" when it
  /// cannot be read).
  std::string deviceKey;
  /// The decision key of `d` (GemmChoice.h): the device, cuBLASLt's version
  /// and everything the heuristic sees, with m, n and k each rounded up to a
  /// power of two; "" when the device cannot be read.
  std::string choiceKey(const Desc &d, size_t wsBytes);
  std::map<Key, std::unique_ptr<Plan>> plans;
  /// Device vectors of ones per dtype (the bias-gradient fallback).
  struct Ones {
    void *ptr = nullptr;
    int64_t count = 0;
  };
  std::map<DType, Ones> ones;
  /// The caller's staging memory (GemmRunner.h: stagesRows).
  void *staging = nullptr;
  size_t stagingBytes = 0;
  /// f32 -> f16/bf16 rows (k-slices' accumulator into c), compiled by NVRTC
  /// when the runner gets staging memory.
  cudaLibrary_t library = nullptr;
  cudaKernel_t narrowF16 = nullptr, narrowBF16 = nullptr;

  ~Impl() {
    plans.clear();
    if (library)
      cudaLibraryUnload(library);
    for (auto &[t, o] : ones)
      if (o.ptr)
        cudaFree(o.ptr);
    if (handle)
      cublasLtDestroy(handle);
  }

  /// The plan for `d` with `wsBytes` of workspace; nullptr when cuBLASLt has
  /// no algorithm and `allowUnsupported` (else GemmError). With autotuning,
  /// a new plan's candidates are timed on `ws` and `stream` when tunable(d).
  Plan *plan(const Desc &d, void *ws, size_t wsBytes, cudaStream_t stream,
             bool allowUnsupported);
  /// Autotuning: the index of the candidate `d` runs, of cuBLASLt's `found`
  /// (a decision of this or an earlier process, or timed now when
  /// tunable(d, stream); else 0, the heuristic's first).
  int tunedCandidate(const Desc &d, const Plan &p,
                     const cublasLtMatmulHeuristicResult_t *results, int found, void *ws,
                     size_t wsBytes, cudaStream_t stream);
  /// Enqueues one cuBLASLt matmul for `d`; false when unsupported and
  /// `allowUnsupported`.
  bool matmul(const Desc &d, void *ws, size_t wsBytes, cudaStream_t stream,
              bool allowUnsupported = false);
  /// Writes zeros over C (every batch, respecting ldc and strideC).
  void zeroC(const Desc &d, cudaStream_t stream);
  /// A device vector of at least `count` ones of type `t`.
  const void *onesOf(DType t, int64_t count, const Desc &d);
  /// Enqueues a validated GEMM with k > 0: cuBLASLt, and for a bias
  /// gradient it has no fused algorithm for, the product then op(a) ones.
  void product(const Desc &d, cudaStream_t stream);
  /// Runs `d` a block of m at a time through 16-byte-aligned copies of its
  /// a and/or c when their row pitch is not aligned (GemmRunner.h:
  /// stagesRows); false (nothing enqueued) when it does not apply.
  bool staged(const Desc &d, cudaStream_t stream);
  /// Runs `d` as an aligned main part and its odd tail when a size that is
  /// a row length (n; m or k of a transposed or not a) is not a multiple of
  /// 16 bytes while every row is 16-byte aligned (GemmRunner.h: run());
  /// false (nothing enqueued) when it does not apply.
  bool splitOddSize(const Desc &d, cudaStream_t stream);
  /// product(), or the split of an odd size.
  void productOrSplit(const Desc &d, cudaStream_t stream) {
    if (!splitOddSize(d, stream))
      product(d, stream);
  }
  /// The two ways of staging: blocks of columns of a transposed a (stored
  /// [K, M]) or of c; false when the staging cannot hold 8 columns.
  bool stageColumnsOfA(const Desc &d, cudaStream_t stream);
  bool stageColumnsOfC(const Desc &d, cudaStream_t stream);
  /// An unaligned a that is not transposed: slices of its k columns,
  /// accumulated in f32, then rounded once into c.
  bool stageSlicesOfK(const Desc &d, cudaStream_t stream);
};

Plan *GemmRunner::Impl::plan(const Desc &d, void *ws, size_t wsBytes,
                             cudaStream_t stream, bool allowUnsupported) {
  Key key = keyOf(d, wsBytes);
  auto it = plans.find(key);
  if (it != plans.end()) {
    if (!it->second->supported) {
      if (allowUnsupported)
        return nullptr;
      fail("no cuBLASLt algorithm (cached)", d);
    }
    return it->second.get();
  }

  auto p = std::make_unique<Plan>();
  checkLt(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
          "cublasLtMatmulDescCreate", d);
  // cuBLASLt's A is the program's b and its B the program's a (see above).
  cublasOperation_t ta = d.transposeB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t tb = d.transposeA ? CUBLAS_OP_T : CUBLAS_OP_N;
  checkLt(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA,
                                         &ta, sizeof(ta)),
          "cublasLtMatmulDescSetAttribute(TRANSA)", d);
  checkLt(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB,
                                         &tb, sizeof(tb)),
          "cublasLtMatmulDescSetAttribute(TRANSB)", d);
  cublasLtEpilogue_t epilogue = cublasEpilogue(d.epilogue);
  const void *biasPtr = biasPointerOf(d);
  checkLt(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                         &epilogue, sizeof(epilogue)),
          "cublasLtMatmulDescSetAttribute(EPILOGUE)", d);
  if (usesAux(d.epilogue)) {
    // The heuristic reads the pointer's alignment (part of the key).
    checkLt(cublasLtMatmulDescSetAttribute(
                p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &d.aux,
                sizeof(d.aux)),
            "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_POINTER)", d);
    int64_t ld = d.auxLd;
    checkLt(cublasLtMatmulDescSetAttribute(
                p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof(ld)),
            "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_LD)", d);
  }
  if (biasPtr) {
    cudaDataType_t bt = cudaType(d.biasType);
    checkLt(cublasLtMatmulDescSetAttribute(
                p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof(bt)),
            "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)", d);
    // The heuristic reads the pointer's alignment (part of the key).
    checkLt(cublasLtMatmulDescSetAttribute(
                p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &biasPtr,
                sizeof(biasPtr)),
            "cublasLtMatmulDescSetAttribute(BIAS_POINTER)", d);
  }

  auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  // Program b: row-major [K, N] (or [N, K] transposed) = column-major N x K
  // (or K x N).
  checkLt(cublasLtMatrixLayoutCreate(&p->la, cudaType(d.bType),
                                     d.transposeB ? u(d.k) : u(d.n),
                                     d.transposeB ? u(d.n) : u(d.k), d.ldb),
          "cublasLtMatrixLayoutCreate(b)", d);
  // Program a: row-major [M, K] (or [K, M]) = column-major K x M (or M x K).
  checkLt(cublasLtMatrixLayoutCreate(&p->lb, cudaType(d.aType),
                                     d.transposeA ? u(d.m) : u(d.k),
                                     d.transposeA ? u(d.k) : u(d.m), d.lda),
          "cublasLtMatrixLayoutCreate(a)", d);
  checkLt(cublasLtMatrixLayoutCreate(&p->lc, cudaType(d.cType), u(d.n),
                                     u(d.m), d.ldc),
          "cublasLtMatrixLayoutCreate(c)", d);
  if (d.batch != 1) {
    int32_t count = static_cast<int32_t>(d.batch);
    struct {
      cublasLtMatrixLayout_t layout;
      int64_t stride;
    } batched[] = {{p->la, d.strideB}, {p->lb, d.strideA}, {p->lc, d.strideC}};
    for (auto &b : batched) {
      checkLt(cublasLtMatrixLayoutSetAttribute(
                  b.layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                  sizeof(count)),
              "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)", d);
      checkLt(cublasLtMatrixLayoutSetAttribute(
                  b.layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                  &b.stride, sizeof(b.stride)),
              "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)", d);
    }
  }

  Preference pref;
  checkLt(cublasLtMatmulPreferenceCreate(&pref.p),
          "cublasLtMatmulPreferenceCreate", d);
  uint64_t maxWs = wsBytes;
  checkLt(cublasLtMatmulPreferenceSetAttribute(
              pref.p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &maxWs,
              sizeof(maxWs)),
          "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)", d);
  struct {
    cublasLtMatmulPreferenceAttributes_t attr;
    uint32_t align;
  } aligns[] = {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignmentOf(d.b)},
                {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignmentOf(d.a)},
                {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignmentOf(d.c)},
                {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignmentOf(d.c)}};
  for (auto &a : aligns)
    checkLt(cublasLtMatmulPreferenceSetAttribute(pref.p, a.attr, &a.align,
                                                 sizeof(a.align)),
            "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)", d);

  std::array<cublasLtMatmulHeuristicResult_t, kCandidates> results{};
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
      handle, p->op, p->la, p->lb, p->lc, p->lc, pref.p, autotune ? kCandidates : 1,
      results.data(), &found);
  bool ok = st == CUBLAS_STATUS_SUCCESS && found > 0 &&
            results[0].state == CUBLAS_STATUS_SUCCESS;
  cublasLtMatmulHeuristicResult_t result = results[0];
  if (!ok) {
    cublasStatus_t why = st != CUBLAS_STATUS_SUCCESS ? st
                         : found > 0 ? result.state
                                     : CUBLAS_STATUS_NOT_SUPPORTED;
    if (trace)
      std::fprintf(stderr, "ls2c gemm: %s: no cuBLASLt algorithm: %s\n",
                   describe(d).c_str(), statusText(why).c_str());
    if (!allowUnsupported)
      fail("cublasLtMatmulAlgoGetHeuristic found no algorithm: " +
               statusText(why),
           d);
    p->supported = false;
    plans.emplace(key, std::move(p));
    return nullptr;
  }
  if (autotune && found > 1)
    result = results[static_cast<size_t>(tunedCandidate(d, *p, results.data(), found, ws,
                                                        wsBytes, stream))];
  p->algo = result.algo;
  p->workspaceBytes = result.workspaceSize;
  if (trace)
    std::fprintf(stderr,
                 "ls2c gemm: %s: cuBLASLt epilogue %d, workspace %zu bytes, "
                 "waves %.2f\n",
                 describe(d).c_str(), static_cast<int>(epilogue),
                 result.workspaceSize, static_cast<double>(result.wavesCount));
  Plan *raw = p.get();
  plans.emplace(key, std::move(p));
  return raw;
}

std::string GemmRunner::Impl::choiceKey(const Desc &d, size_t wsBytes) {
  if (deviceKey.empty()) {
    int device = 0;
    cudaDeviceProp props{};
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaGetDeviceProperties(&props, device) != cudaSuccess) {
      (void)cudaGetLastError();
      deviceKey = "-";
    } else {
      std::ostringstream k;
      k << props.name << " sm_" << props.major << props.minor << " x"
        << props.multiProcessorCount << " cuBLASLt " << cublasLtGetVersion();
      deviceKey = k.str();
    }
  }
  if (deviceKey == "-")
    return "";
  auto bucket = [](int64_t v) {
    int64_t b = 1;
    while (b < v)
      b <<= 1;
    return b;
  };
  Desc sized = d;
  sized.m = bucket(d.m);
  sized.n = bucket(d.n);
  sized.k = bucket(d.k);
  Key shape = keyOf(d, wsBytes);
  std::ostringstream key;
  key << deviceKey << " | " << describe(sized) << " | align";
  for (size_t i = 17; i <= 21; ++i)
    key << ' ' << shape[i];
  key << ' ' << shape[23];
  return key.str();
}

int GemmRunner::Impl::tunedCandidate(const Desc &d, const Plan &p,
                                     const cublasLtMatmulHeuristicResult_t *results,
                                     int found, void *ws, size_t wsBytes,
                                     cudaStream_t stream) {
  if (!choicesLoaded) {
    choicesLoaded = true;
    if (!choicesPath.empty()) {
      try {
        choices.loadFile(choicesPath);
      } catch (const std::exception &e) { // timed again, and the file rewritten
        std::fprintf(stderr, "ls2c gemm: %s; its GEMMs are timed again\n", e.what());
      }
    }
  }
  std::string key = choiceKey(d, wsBytes);
  if (key.empty())
    return 0;
  if (std::optional<GemmDecision> prior = choices.find(key)) {
    // Only the very algorithm decided; if cuBLASLt no longer offers it for
    // this size of the bucket, its first (a decision is not re-timed per size).
    for (int i = 0; i < found; ++i)
      if (results[i].state == CUBLAS_STATUS_SUCCESS && algoHex(results[i].algo) == prior->algo)
        return i;
    return 0;
  }
  if (timedDecisions >= kMaxTimedDecisions)
    return 0;
  if (!tunable(d, stream))
    return 0;
  MatmulCall call;
  call.handle = handle;
  call.op = p.op;
  call.la = p.la;
  call.lb = p.lb;
  call.lc = p.lc;
  call.a = d.b; // cuBLASLt's A is the program's b (see above)
  call.b = d.a;
  call.c = d.c;
  call.beta = d.beta;
  call.workspace = ws;
  call.workspaceBytes = wsBytes;
  TuneResult t = tuneMatmul(call, results, found, stream);
  ++timedDecisions;
  if (std::all_of(t.ms.begin(), t.ms.end(), [](float ms) { return std::isinf(ms); }))
    return 0; // nothing ran: no decision to keep
  GemmDecision decision{key, algoHex(results[t.chosen].algo), t.chosen, found, {}};
  for (float ms : t.ms)
    decision.us.push_back(static_cast<double>(ms) * 1000.0);
  choices.decide(decision);
  if (trace) {
    std::string times;
    for (size_t i = 0; i < t.ms.size(); ++i)
      times += (i ? " " : "") + std::to_string(t.ms[i] * 1000.0f).substr(0, 7);
    std::fprintf(stderr, "ls2c gemm: %s: tuned, candidate %d of %d (us: %s)\n",
                 describe(d).c_str(), t.chosen, found, times.c_str());
  }
  if (!choicesPath.empty() && !choicesWriteFailed) {
    try {
      choices.saveFile(choicesPath);
    } catch (const std::exception &e) {
      choicesWriteFailed = true; // said once; the run goes on
      std::fprintf(stderr, "ls2c gemm: GEMM choices not kept: %s\n", e.what());
    }
  }
  return t.chosen;
}

bool GemmRunner::Impl::matmul(const Desc &d, void *ws, size_t wsBytes,
                              cudaStream_t stream, bool allowUnsupported) {
  Plan *p = plan(d, ws, wsBytes, stream, allowUnsupported);
  if (!p)
    return false;
  if (const void *biasPtr = biasPointerOf(d))
    checkLt(cublasLtMatmulDescSetAttribute(
                p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &biasPtr,
                sizeof(biasPtr)),
            "cublasLtMatmulDescSetAttribute(BIAS_POINTER)", d);
  if (usesAux(d.epilogue))
    checkLt(cublasLtMatmulDescSetAttribute(
                p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &d.aux,
                sizeof(d.aux)),
            "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_POINTER)", d);
  const float alpha = 1.0f, beta = d.beta;
  checkLt(cublasLtMatmul(handle, p->op, &alpha, d.b, p->la, d.a, p->lb, &beta,
                         d.c, p->lc, d.c, p->lc, &p->algo, ws, p->workspaceBytes,
                         stream),
          "cublasLtMatmul", d);
  return true;
}

void GemmRunner::Impl::zeroC(const Desc &d, cudaStream_t stream) {
  size_t elt = dtypeBytes(d.cType);
  size_t rowBytes = static_cast<size_t>(d.n) * elt;
  size_t pitch = static_cast<size_t>(d.ldc) * elt;
  if (d.batch == 1 || d.strideC == d.m * d.ldc) {
    size_t rows = static_cast<size_t>(d.m * d.batch);
    if (d.ldc == d.n)
      checkCuda(cudaMemsetAsync(d.c, 0, rows * rowBytes, stream),
                "cudaMemsetAsync(c)", d);
    else
      checkCuda(cudaMemset2DAsync(d.c, pitch, 0, rowBytes, rows, stream),
                "cudaMemset2DAsync(c)", d);
    return;
  }
  for (int64_t b = 0; b < d.batch; ++b)
    checkCuda(cudaMemset2DAsync(bytePtr(d.c) + static_cast<size_t>(b * d.strideC) * elt,
                                pitch, 0, rowBytes, static_cast<size_t>(d.m),
                                stream),
              "cudaMemset2DAsync(c)", d);
}

const void *GemmRunner::Impl::onesOf(DType t, int64_t count, const Desc &d) {
  Ones &o = ones[t];
  if (o.count >= count)
    return o.ptr;
  int64_t n = std::max<int64_t>(1024, o.count);
  while (n < count)
    n *= 2;
  if (o.ptr) {
    checkCuda(cudaFree(o.ptr), "cudaFree(ones)", d);
    o = Ones{};
  }
  size_t elt = dtypeBytes(t);
  std::vector<unsigned char> host(static_cast<size_t>(n) * elt);
  for (int64_t i = 0; i < n; ++i) {
    unsigned char *e = host.data() + static_cast<size_t>(i) * elt;
    if (t == DType::F32) {
      float one = 1.0f;
      std::memcpy(e, &one, 4);
    } else {
      uint16_t one = t == DType::F16 ? 0x3C00 : 0x3F80;
      std::memcpy(e, &one, 2);
    }
  }
  void *ptr = nullptr;
  checkCuda(cudaMalloc(&ptr, host.size()), "cudaMalloc(ones)", d);
  cudaError_t st = cudaMemcpy(ptr, host.data(), host.size(),
                              cudaMemcpyHostToDevice);
  if (st != cudaSuccess) {
    cudaFree(ptr);
    checkCuda(st, "cudaMemcpy(ones)", d);
  }
  o.ptr = ptr;
  o.count = n;
  return ptr;
}

GemmRunner::GemmRunner(void *workspace, size_t workspaceBytes, void *staging,
                       size_t stagingBytes)
    : impl(std::make_unique<Impl>()) {
  impl->workspace = workspace;
  impl->workspaceBytes = workspace ? workspaceBytes : 0;
  impl->staging = staging;
  impl->stagingBytes = staging ? stagingBytes : 0;
  const char *trace = std::getenv("LS2C_GEMM_TRACE");
  impl->trace = trace && *trace && std::strcmp(trace, "0") != 0;
  impl->autotune = true;
  if (const char *tune = std::getenv("LS2C_GEMM_TUNE"))
    impl->autotune = *tune && std::strcmp(tune, "0") != 0;
  if (const char *path = std::getenv("LS2C_GEMM_CHOICES"))
    impl->choicesPath = std::string(path) == "off" ? "" : path;
  else if (std::string dir = jit::defaultProgramCacheDir(); !dir.empty())
    impl->choicesPath = dir + "/gemm-choices.json";
  cublasStatus_t st = cublasLtCreate(&impl->handle);
  if (st != CUBLAS_STATUS_SUCCESS) {
    impl->handle = nullptr;
    throw GemmError("GemmRunner: cublasLtCreate failed: " + statusText(st));
  }
  if (impl->staging) {
    // Rounds the k-slices' f32 accumulator into c (grid-stride rows).
    static const char *kNarrow = R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>
template <class T, class F>
__device__ void narrow(const float *in, T *out, long long rows, long long cols, long long ldc,
                       F round) {
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < rows * cols; i += 256ll * gridDim.x)
    out[(i / cols) * ldc + i % cols] = round(in[i]);
}
extern "C" __global__ void ls2c_gemm_narrow_f16(const float *in, __half *out, long long rows,
                                                long long cols, long long ldc) {
  narrow(in, out, rows, cols, ldc, [](float x) { return __float2half_rn(x); });
}
extern "C" __global__ void ls2c_gemm_narrow_bf16(const float *in, __nv_bfloat16 *out,
                                                 long long rows, long long cols, long long ldc) {
  narrow(in, out, rows, cols, ldc, [](float x) { return __float2bfloat16_rn(x); });
}
)";
    // Only the k-slices need these kernels: without them (no NVRTC or no
    // CUDA headers at run time, a failed load) the dgrad runs unstaged, as
    // before, and the other staging (no kernels) still works.
    try {
      std::vector<jit::CompiledKernel> compiled =
          jit::compileKernels({{"ls2c_gemm_narrow", kNarrow}}, jit::CompileOptions{});
      auto check = [](cudaError_t e, const char *what) {
        if (e != cudaSuccess)
          throw GemmError(std::string(what) + ": " + cudaGetErrorString(e));
      };
      check(cudaLibraryLoadData(&impl->library, compiled.front().cubin.data(), nullptr, nullptr,
                                0, nullptr, nullptr, 0),
            "cudaLibraryLoadData");
      check(cudaLibraryGetKernel(&impl->narrowF16, impl->library, "ls2c_gemm_narrow_f16"),
            "cudaLibraryGetKernel");
      check(cudaLibraryGetKernel(&impl->narrowBF16, impl->library, "ls2c_gemm_narrow_bf16"),
            "cudaLibraryGetKernel");
    } catch (const std::exception &e) {
      impl->narrowF16 = impl->narrowBF16 = nullptr; // stageSlicesOfK then declines
      (void)cudaGetLastError(); // not left for a later check to find
      std::fprintf(stderr,
                   "ls2c gemm: the k-slice rounding kernels are unavailable (%s); unaligned "
                   "dgrads run unstaged\n",
                   e.what());
    }
  }
}

GemmRunner::~GemmRunner() = default;

void GemmRunner::setAutotune(bool on) { impl->autotune = on; }

bool GemmRunner::autotune() const { return impl->autotune; }

bool GemmRunner::tuningOpen() const {
  return impl->autotune && impl->timedDecisions < Impl::kMaxTimedDecisions;
}

void GemmRunner::run(const Gemm &gemm, const GemmShape &shape,
                     const GemmPointers &p, cudaStream_t stream) {
  Desc d;
  d.aType = gemm.aType;
  d.bType = gemm.bType;
  d.cType = gemm.cType;
  d.biasType = gemm.biasType;
  d.transposeA = gemm.transposeA;
  d.transposeB = gemm.transposeB;
  d.m = shape.m;
  d.n = shape.n;
  d.k = shape.k;
  d.batch = shape.batch;
  d.lda = gemm.lda;
  d.ldb = gemm.ldb;
  d.ldc = gemm.ldc;
  d.strideA = gemm.strideA;
  d.strideB = gemm.strideB;
  d.strideC = gemm.strideC;
  d.epilogue = gemm.epilogue;
  d.a = p.a;
  d.b = p.b;
  d.c = p.c;
  d.bias = p.bias;
  d.biasGrad = p.biasGrad;
  d.aux = p.aux;
  d.auxLd = gemm.auxLd;

  if (d.m < 0 || d.n < 0 || d.k < 0 || d.batch < 0)
    fail("negative size", d);
  if (d.m == 0 || d.n == 0 || d.batch == 0)
    return;
  if (!isFloat(d.aType) || !isFloat(d.bType) || !isFloat(d.cType) ||
      ((epilogueHasBias(d.epilogue) || epilogueHasBiasGrad(d.epilogue)) &&
       !isFloat(d.biasType)))
    fail("operands must be f32, f16 or bf16", d);
  if (d.aType != d.bType)
    fail("a and b must have one dtype", d);
  if (d.cType != d.aType && d.cType != DType::F32)
    fail("c must be f32 or a's dtype", d);
  if (d.batch > INT32_MAX)
    fail("batch exceeds cuBLASLt's int32 batch count", d);
  if (!d.c)
    fail("c is null", d);
  if (d.k > 0 && (!d.a || !d.b))
    fail("a or b is null", d);
  if (d.epilogue == GemmEpilogue::Bias) {
    if (!d.bias)
      fail("bias epilogue without a bias pointer", d);
    // cuBLASLt's rule (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE): the bias has
    // D's dtype; on sm_90 with CUDA 13.0 an f32 bias with an f16 or bf16 c
    // gets CUBLAS_STATUS_INVALID_VALUE. ls2.add's operands share a dtype,
    // so the compiler's bias epilogues always satisfy it.
    if (d.biasType != d.cType)
      fail("the bias epilogue needs the bias in c's dtype (cuBLASLt's "
           "CUBLASLT_EPILOGUE_BIAS rule)",
           d);
  }
  if (d.epilogue == GemmEpilogue::BiasGradA) {
    if (!d.biasGrad)
      fail("bias-gradient epilogue without a bias-gradient pointer", d);
    if (d.batch != 1)
      fail("the bias-gradient epilogue needs batch 1", d);
  }
  if (epilogueIsActivation(d.epilogue)) {
    if (d.batch != 1)
      fail("activation epilogues need batch 1", d);
    if (epilogueHasBias(d.epilogue) && !d.bias)
      fail("a bias epilogue without a bias pointer", d);
    if (epilogueHasBiasGrad(d.epilogue) && !d.biasGrad)
      fail("a bias-gradient epilogue without a bias-gradient pointer", d);
    // cuBLASLt's rules: the bias and the bias gradient have D's dtype
    // (CUBLASLT_MATMUL_DESC_BIAS_POINTER).
    if ((epilogueHasBias(d.epilogue) || epilogueHasBiasGrad(d.epilogue)) &&
        d.biasType != d.cType)
      fail("activation epilogues need the bias (gradient) in c's dtype "
           "(cuBLASLt's rule)",
           d);
    if (usesAux(d.epilogue)) {
      if (!d.aux)
        fail("an aux epilogue without an aux pointer", d);
      // CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: ReLU bit-mask rows in bits, a
      // multiple of 128; GELU input rows in elements, a multiple of 8; both
      // >= "rows of D" = N.
      int64_t unit = epilogueIsRelu(d.epilogue) ? 128 : 8;
      if (d.auxLd < d.n || d.auxLd % unit != 0)
        fail("auxLd must be a multiple of " + std::to_string(unit) +
                 " and >= n (cuBLASLt's EPILOGUE_AUX_LD rule)",
             d);
    }
  }
  if (d.ldc < d.n)
    fail("ldc is less than n", d);
  if (d.k > 0) {
    if (d.lda < (d.transposeA ? d.m : d.k))
      fail("lda is less than a's stored row length", d);
    if (d.ldb < (d.transposeB ? d.k : d.n))
      fail("ldb is less than b's stored row length", d);
  }

  if (d.k == 0) {
    // The empty sum: zeros, plus the bias when there is one.
    if (d.epilogue == GemmEpilogue::BiasGradA)
      checkCuda(cudaMemsetAsync(d.biasGrad, 0,
                                static_cast<size_t>(d.m) *
                                    dtypeBytes(d.biasType),
                                stream),
                "cudaMemsetAsync(biasGrad)", d);
    if (d.epilogue == GemmEpilogue::None ||
        d.epilogue == GemmEpilogue::BiasGradA) {
      impl->zeroC(d, stream);
      return;
    }
    // C = epilogue(0 * 0 (+ bias)): a K = 1 GEMM over a zero vector at the
    // front of the workspace (both a [M, 1] and b [1, N] read it; shared by
    // the batches), with the same epilogue (the activations, their aux and
    // bias gradients of an all-zero product).
    size_t zeroBytes =
        (static_cast<size_t>(std::max(d.m, d.n)) * dtypeBytes(d.aType) + 255) &
        ~size_t(255);
    if (zeroBytes > impl->workspaceBytes)
      fail("k == 0 with a bias needs " + std::to_string(zeroBytes) +
               " bytes of workspace, the runner has " +
               std::to_string(impl->workspaceBytes),
           d);
    checkCuda(cudaMemsetAsync(impl->workspace, 0, zeroBytes, stream),
              "cudaMemsetAsync(workspace zeros)", d);
    Desc z = d;
    z.k = 1;
    z.transposeA = z.transposeB = false;
    z.lda = 1;
    z.ldb = d.n;
    z.strideA = z.strideB = 0;
    z.a = z.b = impl->workspace;
    impl->matmul(z, bytePtr(impl->workspace) + zeroBytes,
                 impl->workspaceBytes - zeroBytes, stream);
    return;
  }

  // A batch over one shared b whose a and c batches are consecutive rows is
  // one GEMM with batch * m rows (a linear layer on [batch, m, K] input).
  if (d.batch > 1 && d.strideB == 0 && !d.transposeA &&
      d.strideA == d.m * d.lda && d.strideC == d.m * d.ldc &&
      d.epilogue != GemmEpilogue::BiasGradA && d.m * d.batch <= INT32_MAX) {
    d.m *= d.batch;
    d.batch = 1;
    d.strideA = d.strideB = d.strideC = 0;
  }

  if (impl->staged(d, stream))
    return;
  impl->productOrSplit(d, stream);
}

namespace {

/// Whether rows of `ld` elements of `t` start on 16-byte boundaries.
bool alignedRows(int64_t ld, DType t) {
  return (ld * static_cast<int64_t>(dtypeBytes(t))) % 16 == 0;
}

/// Which operand a one-matrix GEMM stages, shapes aside. Copies run fast
/// as [all rows x a slice of columns] blocks (an H200: the weight gradient
/// 50257x1024x16384 in bf16 went from 11.1 to 4.3 ms) and slowly as [some
/// rows x whole rows] ones (the same logits as m-row blocks: 12.0 -> 14.8
/// ms: blocks of 1,280 rows fill too few multiprocessors), so only column
/// slices are staged: the columns of a transposed a (stored [K, M]; any
/// staging epilogue), the columns of c (no epilogue or the bias), and the
/// k columns of an a that is not transposed (the logits' dgrad; no
/// epilogue, b's rows aligned), whose partial products add up in an f32
/// accumulator in the staging memory, rounded once into c.
enum class Staging { None, ColumnsOfA, ColumnsOfC, SlicesOfK };

Staging stagingOf(GemmEpilogue e, DType aType, int64_t lda, bool transposeA, DType bType,
                  int64_t ldb, DType cType, int64_t ldc) {
  const bool misA = !alignedRows(lda, aType), misC = !alignedRows(ldc, cType);
  const bool bias = e == GemmEpilogue::None || e == GemmEpilogue::Bias;
  if (misA && transposeA && !misC && (bias || e == GemmEpilogue::BiasGradA))
    return Staging::ColumnsOfA;
  if (misC && !misA && bias)
    return Staging::ColumnsOfC;
  if (misA && !transposeA && !misC && e == GemmEpilogue::None && alignedRows(ldb, bType))
    return Staging::SlicesOfK;
  return Staging::None;
}

int64_t roundUp(int64_t v, int64_t unit) { return (v + unit - 1) / unit * unit; }

/// The operand's other dimension below which staging costs more than the
/// aligned kernels save.
constexpr int64_t kStageMinOtherDim = 64;

/// The aligned main part below which splitting off an odd size's tail costs
/// more than the aligned kernels save.
constexpr int64_t kSplitMinMain = 256;

} // namespace

bool GemmRunner::stagesRows(const Gemm &g) {
  return g.batch.isStatic() && g.batch.size == 1 &&
         stagingOf(g.epilogue, g.aType, g.lda, g.transposeA, g.bType, g.ldb, g.cType, g.ldc) !=
             Staging::None;
}

bool GemmRunner::Impl::staged(const Desc &d, cudaStream_t stream) {
  if (!staging || d.batch != 1 || d.k == 0)
    return false;
  switch (stagingOf(d.epilogue, d.aType, d.lda, d.transposeA, d.bType, d.ldb, d.cType, d.ldc)) {
  case Staging::ColumnsOfA:
    return d.n >= kStageMinOtherDim && stageColumnsOfA(d, stream);
  case Staging::ColumnsOfC:
    return d.k >= kStageMinOtherDim && stageColumnsOfC(d, stream);
  case Staging::SlicesOfK:
    return d.n >= kStageMinOtherDim && stageSlicesOfK(d, stream);
  case Staging::None:
    break;
  }
  return false;
}

bool GemmRunner::Impl::splitOddSize(const Desc &d, cudaStream_t stream) {
  // Only one matrix with every row aligned: an unaligned row is staged
  // (above), and the activation epilogues' aux has its own layout.
  const bool plain = d.epilogue == GemmEpilogue::None || d.epilogue == GemmEpilogue::Bias ||
                     d.epilogue == GemmEpilogue::BiasGradA;
  if (d.batch != 1 || !plain || !alignedRows(d.lda, d.aType) || !alignedRows(d.ldb, d.bType) ||
      !alignedRows(d.ldc, d.cType))
    return false;
  const size_t ea = dtypeBytes(d.aType), eb = dtypeBytes(d.bType), ec = dtypeBytes(d.cType),
               ebias = dtypeBytes(d.biasType);
  // Sizes in multiples of 16 bytes of every operand: 8 elements, or 4
  // when all are f32.
  const int64_t unit = ea == 4 && eb == 4 && ec == 4 ? 4 : 8;
  auto at = [](const void *p, int64_t elements, size_t bytes) {
    return static_cast<const char *>(p) + static_cast<size_t>(elements) * bytes;
  };
  auto atMut = [](void *p, int64_t elements, size_t bytes) {
    return static_cast<char *>(p) + static_cast<size_t>(elements) * bytes;
  };
  // n: the row length of c. The tail's columns start 16-byte aligned
  // (a multiple of 16 bytes in).
  if (d.n % unit != 0 && d.n >= kSplitMinMain) {
    const int64_t n1 = d.n / unit * unit;
    Desc main = d, tail = d;
    main.n = n1;
    tail.n = d.n - n1;
    tail.b = at(d.b, d.transposeB ? n1 * d.ldb : n1, eb);
    tail.c = atMut(d.c, n1, ec);
    if (d.epilogue == GemmEpilogue::Bias)
      tail.bias = at(d.bias, n1, ebias);
    if (d.epilogue == GemmEpilogue::BiasGradA)
      tail.epilogue = GemmEpilogue::None; // the main part writes all of it
    productOrSplit(main, stream);
    productOrSplit(tail, stream);
    return true;
  }
  // m: the row length of a transposed a (stored [K, M]).
  if (d.transposeA && d.m % unit != 0 && d.m >= kSplitMinMain) {
    const int64_t m1 = d.m / unit * unit;
    Desc main = d, tail = d;
    main.m = m1;
    tail.m = d.m - m1;
    tail.a = at(d.a, m1, ea);
    tail.c = atMut(d.c, m1 * d.ldc, ec);
    if (d.epilogue == GemmEpilogue::BiasGradA)
      tail.biasGrad = atMut(d.biasGrad, m1, ebias);
    productOrSplit(main, stream);
    productOrSplit(tail, stream);
    return true;
  }
  // k: the row length of an a that is not transposed (or of a transposed
  // b). The tail's few products go first; the main part adds them with
  // beta 1, so c is rounded from their sum once more (not an f32 sum as
  // the staged k-slices keep: the tail is under 8 of the terms).
  if ((!d.transposeA || d.transposeB) && d.k % unit != 0 && d.k >= kSplitMinMain &&
      d.epilogue == GemmEpilogue::None) {
    const int64_t k1 = d.k / unit * unit;
    Desc main = d, tail = d;
    tail.k = d.k - k1;
    tail.a = at(d.a, d.transposeA ? k1 * d.lda : k1, ea);
    tail.b = at(d.b, d.transposeB ? k1 : k1 * d.ldb, eb);
    main.k = k1;
    main.beta = 1.0f;
    productOrSplit(tail, stream);
    productOrSplit(main, stream);
    return true;
  }
  return false;
}

bool GemmRunner::Impl::stageColumnsOfA(const Desc &d, cudaStream_t stream) {
  const size_t ea = dtypeBytes(d.aType), eb = dtypeBytes(d.biasType);
  // Blocks of mb columns of a's K rows, each row padded to a multiple of 8.
  const size_t perColumn = static_cast<size_t>(d.k) * ea;
  if (stagingBytes < 8 * perColumn)
    return false;
  int64_t mb = static_cast<int64_t>(stagingBytes / perColumn) / 8 * 8;
  const size_t rowA = static_cast<size_t>(d.lda) * ea;
  for (int64_t m0 = 0; m0 < d.m; m0 += mb) {
    Desc s = d;
    s.m = std::min(mb, d.m - m0);
    s.lda = roundUp(s.m, 8);
    checkCuda(cudaMemcpy2DAsync(staging, s.lda * ea, static_cast<const char *>(d.a) + m0 * ea,
                                rowA, s.m * ea, d.k, cudaMemcpyDeviceToDevice, stream),
              "cudaMemcpy2DAsync(staged a)", d);
    s.a = staging;
    s.c = bytePtr(d.c) + static_cast<size_t>(m0 * d.ldc) * dtypeBytes(d.cType);
    if (d.biasGrad)
      s.biasGrad = bytePtr(d.biasGrad) + static_cast<size_t>(m0) * eb;
    product(s, stream);
  }
  return true;
}

bool GemmRunner::Impl::stageColumnsOfC(const Desc &d, cudaStream_t stream) {
  const size_t ec = dtypeBytes(d.cType), eb = dtypeBytes(d.bType),
               eBias = dtypeBytes(d.biasType);
  // Blocks of nb columns of c's M rows, each row a multiple of 8 elements.
  const size_t perColumn = static_cast<size_t>(d.m) * ec;
  if (stagingBytes < 8 * perColumn)
    return false;
  int64_t nb = static_cast<int64_t>(stagingBytes / perColumn) / 8 * 8;
  for (int64_t n0 = 0; n0 < d.n; n0 += nb) {
    Desc s = d;
    s.n = std::min(nb, d.n - n0);
    s.ldc = roundUp(s.n, 8);
    s.c = staging;
    // op(b)'s columns n0..: rows of a transposed b [N, K], else columns.
    s.b = static_cast<const char *>(d.b) +
          static_cast<size_t>(d.transposeB ? n0 * d.ldb : n0) * eb;
    if (d.bias)
      s.bias = static_cast<const char *>(d.bias) + static_cast<size_t>(n0) * eBias;
    product(s, stream);
    checkCuda(cudaMemcpy2DAsync(bytePtr(d.c) + static_cast<size_t>(n0) * ec, d.ldc * ec,
                                staging, s.ldc * ec, s.n * ec, d.m, cudaMemcpyDeviceToDevice,
                                stream),
              "cudaMemcpy2DAsync(staged c)", d);
  }
  return true;
}

bool GemmRunner::Impl::stageSlicesOfK(const Desc &d, cudaStream_t stream) {
  const size_t ea = dtypeBytes(d.aType), eb = dtypeBytes(d.bType);
  // An f32 c takes the sums itself; f16/bf16 ones go through an f32
  // accumulator at the front of the staging memory.
  const bool accumulate = d.cType != DType::F32;
  if (accumulate && !(d.cType == DType::BF16 ? narrowBF16 : narrowF16))
    return false;
  const size_t accBytes =
      accumulate ? (static_cast<size_t>(d.m * d.n) * 4 + 255) / 256 * 256 : 0;
  const size_t perColumn = static_cast<size_t>(d.m) * ea;
  // Slices of at least 512 columns, or the copies and c's passes dominate.
  if (stagingBytes < accBytes + 512 * perColumn)
    return false;
  const int64_t kb = static_cast<int64_t>((stagingBytes - accBytes) / perColumn) / 8 * 8;
  char *slice = bytePtr(staging) + accBytes;
  for (int64_t k0 = 0; k0 < d.k; k0 += kb) {
    Desc s = d;
    s.k = std::min(kb, d.k - k0);
    s.lda = roundUp(s.k, 8);
    checkCuda(cudaMemcpy2DAsync(slice, s.lda * ea, static_cast<const char *>(d.a) + k0 * ea,
                                static_cast<size_t>(d.lda) * ea, s.k * ea, d.m,
                                cudaMemcpyDeviceToDevice, stream),
              "cudaMemcpy2DAsync(k-slice of a)", d);
    s.a = slice;
    // op(b)'s rows k0..: columns of a transposed b [N, K], else rows.
    s.b = static_cast<const char *>(d.b) +
          static_cast<size_t>(d.transposeB ? k0 : k0 * d.ldb) * eb;
    if (accumulate) {
      s.c = staging;
      s.cType = DType::F32;
      s.ldc = d.n;
    }
    s.beta = k0 > 0 ? 1.0f : 0.0f;
    matmul(s, workspace, workspaceBytes, stream);
  }
  if (accumulate) {
    const float *in = static_cast<const float *>(staging);
    void *out = d.c;
    long long rows = d.m, cols = d.n, ldc = d.ldc;
    void *args[] = {&in, &out, &rows, &cols, &ldc};
    long long blocks = std::min<long long>((rows * cols + 255) / 256, 65535);
    checkCuda(cudaLaunchKernel(reinterpret_cast<const void *>(
                                   d.cType == DType::BF16 ? narrowBF16 : narrowF16),
                               dim3(static_cast<unsigned>(blocks)), dim3(256), args, 0, stream),
              "launching the f32 -> c rounding of the k-slices", d);
  }
  return true;
}

void GemmRunner::Impl::product(const Desc &d, cudaStream_t stream) {
  if (d.epilogue != GemmEpilogue::BiasGradA) {
    matmul(d, workspace, workspaceBytes, stream);
    return;
  }
  if (matmul(d, workspace, workspaceBytes, stream, /*allowUnsupported=*/true))
    return;

  // No fused BGRADB here: the product, then biasGrad[M, 1] = op(a) ones[K, 1].
  if (d.biasType != DType::F32 && d.biasType != d.aType)
    fail("cuBLASLt has no fused bias gradient here and the fallback needs a "
         "bias-gradient dtype of f32 or a's dtype",
         d);
  Desc plain = d;
  plain.epilogue = GemmEpilogue::None;
  plain.biasGrad = nullptr;
  matmul(plain, workspace, workspaceBytes, stream);
  Desc sum = d;
  sum.epilogue = GemmEpilogue::None;
  sum.n = 1;
  sum.b = onesOf(d.aType, d.k, d);
  sum.ldb = 1;
  sum.transposeB = false;
  sum.c = d.biasGrad;
  sum.cType = d.biasType;
  sum.ldc = 1;
  sum.biasGrad = nullptr;
  matmul(sum, workspace, workspaceBytes, stream);
}

} // namespace ls2c::runtime
