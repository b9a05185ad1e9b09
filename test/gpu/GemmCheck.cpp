//===- GemmCheck.cpp - GemmRunner against a double-precision reference ----===//
//
// ls2c-gemm-check runs a table of GEMMs through runtime::GemmRunner on the
// GPU (every dtype combination, every transpose, odd sizes, padded leading
// dimensions, batches with shared and per-batch b, the bias and bias-
// gradient epilogues, empty sizes, misaligned operands and refused calls:
// a bias not in c's dtype, mixed a/b dtypes, a batched bias gradient)
// and compares each with a float64 CPU reference on random inputs (fixed
// seed). Rows not aligned to 16 bytes go through the runner's staging
// (a small buffer here, so in several blocks). The activation epilogues (ReLU and the tanh GELU with bias and aux
// output, DReLU and DGELU reading an aux with the bias gradient of the
// result) are checked the same way: C, the GELU input written as aux, the
// ReLU bit mask bit by bit in ls2.matmul's layout (bit n % 32 of i32 word
// n / 32 of row m, auxLd bits a row; only where the reference's
// pre-activation is clearly away from 0), and the bias gradient. Tolerances (relative L2 error) are those of the narrowest float
// involved: f32 1e-5 (no TF32), f16 5e-3, bf16 2e-2. Elements of C outside
// the product (ld and batch padding) must be left untouched. Prints one line
// per case and a summary; exits 1 on any failure. Large cases also print the
// time of one GEMM (information only).
//
//===----------------------------------------------------------------------===//
#include "ls2c/Runtime/GemmRunner.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace ls2c::runtime;

namespace {

//===----------------------------------------------------------------------===//
// Host dtype conversions (round to nearest even)
//===----------------------------------------------------------------------===//

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t ax = x & 0x7FFFFFFF;
  if (ax >= 0x7F800000)
    return static_cast<uint16_t>(sign | (ax > 0x7F800000 ? 0x7E00 : 0x7C00));
  if (ax >= 0x477FF000) // rounds to infinity
    return static_cast<uint16_t>(sign | 0x7C00);
  if (ax < 0x38800000) { // below 2^-14: a subnormal half
    float v;
    std::memcpy(&v, &ax, 4);
    return static_cast<uint16_t>(sign |
                                 static_cast<uint32_t>(std::nearbyint(v * 16777216.0f)));
  }
  uint32_t mant = ax & 0x7FFFFF;
  uint32_t exp = (ax >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
    ++h;
  return static_cast<uint16_t>(sign | h);
}

float halfToFloat(uint16_t h) {
  uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  float r;
  if (exp == 0)
    r = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31)
    r = mant ? NAN : INFINITY;
  else
    r = std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  return (h & 0x8000) ? -r : r;
}

uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7FFFFFFF) > 0x7F800000)
    return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7FFF + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

float bf16ToFloat(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

/// Stores `v` as `t` at element `i` of `bytes`; returns the stored value.
double store(std::vector<unsigned char> &bytes, DType t, size_t i, double v) {
  if (t == DType::F32) {
    float f = static_cast<float>(v);
    std::memcpy(bytes.data() + 4 * i, &f, 4);
    return f;
  }
  uint16_t h = t == DType::F16 ? floatToHalf(static_cast<float>(v))
                               : floatToBf16(static_cast<float>(v));
  std::memcpy(bytes.data() + 2 * i, &h, 2);
  return t == DType::F16 ? halfToFloat(h) : bf16ToFloat(h);
}

double load(const std::vector<unsigned char> &bytes, DType t, size_t i) {
  if (t == DType::F32) {
    float f;
    std::memcpy(&f, bytes.data() + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, bytes.data() + 2 * i, 2);
  return t == DType::F16 ? halfToFloat(h) : bf16ToFloat(h);
}

double tolerance(DType t) {
  switch (t) {
  case DType::F16:
    return 5e-3;
  case DType::BF16:
    return 2e-2;
  default:
    return 1e-5;
  }
}

/// The wider tolerance of two dtypes.
double tolerance(DType a, DType b) {
  return std::max(tolerance(a), tolerance(b));
}

//===----------------------------------------------------------------------===//
// Cases
//===----------------------------------------------------------------------===//

struct Case {
  std::string name;
  DType ab = DType::F32, c = DType::F32, bias = DType::F32;
  bool tA = false, tB = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  GemmEpilogue epilogue = GemmEpilogue::None;
  int64_t padA = 0, padB = 0, padC = 0; ///< extra elements per row
  int64_t padBatch = 0;                 ///< extra elements between batches
  bool sharedB = false;                 ///< strideB 0
  int64_t offsetA = 0;                  ///< elements (misaligns a)
  bool timed = false;
  /// Expect a GemmError (and print it) instead of a result.
  bool expectError = false;
  DType bOverride = DType::F64; ///< b's dtype when not F64 (error cases)
  int64_t auxPad = 0; ///< auxLd beyond the smallest legal one (units of auxLd)
  int64_t auxLdOverride = 0; ///< when > 0, auxLd itself (refused cases)
  /// Run by a runner without staging memory (timed beside a staged twin).
  bool unstaged = false;
};

bool isActivationCase(const Case &c) { return epilogueIsActivation(c.epilogue); }

/// ls2c's tanh GELU and its derivative, in double.
double geluTanh(double x) {
  const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
  return 0.5 * x * (1.0 + std::tanh(k * (x + c * x * x * x)));
}
double geluTanhDerivative(double x) {
  const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
  double t = std::tanh(k * (x + c * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * c * x * x);
}

struct Buffer {
  void *ptr = nullptr;
  size_t bytes = 0;
  Buffer() = default;
  explicit Buffer(size_t n) : bytes(std::max<size_t>(n, 256)) {
    if (cudaMalloc(&ptr, bytes) != cudaSuccess) {
      std::fprintf(stderr, "cudaMalloc(%zu) failed\n", bytes);
      std::exit(2);
    }
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  ~Buffer() {
    if (ptr)
      cudaFree(ptr);
  }
};

void checkCuda(cudaError_t st, const char *what) {
  if (st != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(st));
    std::exit(2);
  }
}

/// Runs fn(begin, end) over [0, n) on the host's cores.
template <typename F> void parallelFor(int64_t n, F fn) {
  int64_t threads = std::max<int64_t>(
      1, std::min<int64_t>(n, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  int64_t chunk = (n + threads - 1) / threads;
  for (int64_t t = 0; t < threads; ++t) {
    int64_t b = t * chunk, e = std::min(n, b + chunk);
    if (b < e)
      pool.emplace_back(fn, b, e);
  }
  for (auto &t : pool)
    t.join();
}

struct Result {
  bool pass = true;
  double errC = 0, errBias = -1;
  double ms = -1;
  std::string note;
};

Result runCase(const Case &cs, GemmRunner &runner, cudaStream_t stream,
               std::mt19937_64 &rng) {
  Result r;
  DType bt = cs.bOverride == DType::F64 ? cs.ab : cs.bOverride;
  int64_t m = cs.m, n = cs.n, k = cs.k, batch = cs.batch;
  // Stored shapes: a [rA, cA], b [rB, cB], c [m, n].
  int64_t rA = cs.tA ? k : m, cA = cs.tA ? m : k;
  int64_t rB = cs.tB ? n : k, cB = cs.tB ? k : n;
  int64_t lda = std::max<int64_t>(1, cA + cs.padA);
  int64_t ldb = std::max<int64_t>(1, cB + cs.padB);
  int64_t ldc = std::max<int64_t>(1, n + cs.padC);
  int64_t strideA = batch > 1 ? rA * lda + cs.padBatch : 0;
  int64_t strideB = batch > 1 && !cs.sharedB ? rB * ldb + cs.padBatch : 0;
  int64_t strideC = batch > 1 ? m * ldc + cs.padBatch : 0;
  int64_t nb = std::max<int64_t>(batch, 1);
  size_t elemsA = static_cast<size_t>((nb - 1) * strideA + rA * lda + cs.offsetA);
  size_t elemsB = static_cast<size_t>((nb - 1) * strideB + rB * ldb);
  size_t elemsC = static_cast<size_t>((nb - 1) * strideC + m * ldc);

  size_t eA = dtypeBytes(cs.ab), eB = dtypeBytes(bt), eC = dtypeBytes(cs.c),
         eBias = dtypeBytes(cs.bias);
  std::vector<unsigned char> hA(elemsA * eA), hB(elemsB * eB),
      hBias(static_cast<size_t>(std::max<int64_t>(n, 1)) * eBias);
  std::vector<double> A(elemsA), B(elemsB), bias(static_cast<size_t>(n));
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  for (size_t i = 0; i < elemsA; ++i)
    A[i] = store(hA, cs.ab, i, uni(rng));
  for (size_t i = 0; i < elemsB; ++i)
    B[i] = store(hB, bt, i, uni(rng));
  bool hasBias = cs.epilogue == GemmEpilogue::Bias;
  bool hasBiasGrad = cs.epilogue == GemmEpilogue::BiasGradA;
  if (hasBias)
    for (int64_t i = 0; i < n; ++i)
      bias[static_cast<size_t>(i)] =
          store(hBias, cs.bias, static_cast<size_t>(i), uni(rng));

  Buffer dA(hA.size()), dB(hB.size()), dC(elemsC * eC), dBias(hBias.size()),
      dBiasGrad(static_cast<size_t>(std::max<int64_t>(m, 1)) * eBias);
  checkCuda(cudaMemcpy(dA.ptr, hA.data(), hA.size(), cudaMemcpyHostToDevice),
            "copy a");
  checkCuda(cudaMemcpy(dB.ptr, hB.data(), hB.size(), cudaMemcpyHostToDevice),
            "copy b");
  checkCuda(cudaMemcpy(dBias.ptr, hBias.data(), hBias.size(),
                       cudaMemcpyHostToDevice),
            "copy bias");
  // 0xFF bytes: NaN in every float type; what is not written stays so.
  checkCuda(cudaMemset(dC.ptr, 0xFF, dC.bytes), "memset c");
  checkCuda(cudaMemset(dBiasGrad.ptr, 0xFF, dBiasGrad.bytes), "memset bg");

  Gemm g;
  g.aType = cs.ab;
  g.bType = bt;
  g.cType = cs.c;
  g.biasType = cs.bias;
  g.transposeA = cs.tA;
  g.transposeB = cs.tB;
  g.m = Dim{m};
  g.n = Dim{n};
  g.k = Dim{k};
  g.batch = Dim{batch};
  g.lda = lda;
  g.ldb = ldb;
  g.ldc = ldc;
  g.strideA = strideA;
  g.strideB = strideB;
  g.strideC = strideC;
  g.epilogue = cs.epilogue;
  GemmShape shape{m, n, k, batch};
  GemmPointers p;
  p.a = static_cast<char *>(dA.ptr) + cs.offsetA * static_cast<int64_t>(eA);
  p.b = dB.ptr;
  p.c = dC.ptr;
  p.bias = hasBias ? dBias.ptr : nullptr;
  p.biasGrad = hasBiasGrad ? dBiasGrad.ptr : nullptr;

  try {
    runner.run(g, shape, p, stream);
    checkCuda(cudaStreamSynchronize(stream), "sync");
    checkCuda(cudaGetLastError(), "last error");
  } catch (const GemmError &e) {
    r.note = e.what();
    r.pass = cs.expectError;
    return r;
  }
  if (cs.expectError) {
    r.pass = false;
    r.note = "expected a GemmError";
    return r;
  }

  std::vector<unsigned char> hC(dC.bytes), hBG(dBiasGrad.bytes);
  checkCuda(cudaMemcpy(hC.data(), dC.ptr, hC.size(), cudaMemcpyDeviceToHost),
            "copy c back");
  checkCuda(cudaMemcpy(hBG.data(), dBiasGrad.ptr, hBG.size(),
                       cudaMemcpyDeviceToHost),
            "copy bias grad back");

  // Which elements of C the product covers.
  bool runs = m > 0 && n > 0 && batch > 0;
  std::vector<char> covered(elemsC, 0);
  if (runs)
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          covered[static_cast<size_t>(b * strideC + i * ldc + j)] = 1;
  for (size_t i = 0; i < hC.size(); ++i) {
    bool inProduct = i / eC < elemsC && covered[i / eC];
    if (!inProduct && hC[i] != 0xFF) {
      r.pass = false;
      r.note = "wrote outside the product (byte " + std::to_string(i) + ")";
      break;
    }
  }

  if (runs) {
    // Reference: op(a) as [m][k] and op(b) as [n][k] per batch, in double.
    std::vector<double> ref(static_cast<size_t>(batch * m * n));
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<double> opA(static_cast<size_t>(m * k)),
          opB(static_cast<size_t>(n * k));
      for (int64_t i = 0; i < m; ++i)
        for (int64_t kk = 0; kk < k; ++kk)
          opA[static_cast<size_t>(i * k + kk)] =
              A[static_cast<size_t>(b * strideA + cs.offsetA +
                                    (cs.tA ? kk * lda + i : i * lda + kk))];
      for (int64_t j = 0; j < n; ++j)
        for (int64_t kk = 0; kk < k; ++kk)
          opB[static_cast<size_t>(j * k + kk)] =
              B[static_cast<size_t>(b * strideB +
                                    (cs.tB ? j * ldb + kk : kk * ldb + j))];
      double *out = ref.data() + b * m * n;
      parallelFor(m, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = 0; j < n; ++j) {
            const double *x = opA.data() + i * k, *y = opB.data() + j * k;
            double s = 0;
            for (int64_t kk = 0; kk < k; ++kk)
              s += x[kk] * y[kk];
            out[i * n + j] = s + (hasBias ? bias[static_cast<size_t>(j)] : 0.0);
          }
      });
      if (hasBiasGrad) {
        double num = 0, den = 0;
        for (int64_t i = 0; i < m; ++i) {
          double s = 0;
          for (int64_t kk = 0; kk < k; ++kk)
            s += opA[static_cast<size_t>(i * k + kk)];
          double got = load(hBG, cs.bias, static_cast<size_t>(i));
          num += (got - s) * (got - s);
          den += s * s;
          if (std::isnan(got))
            num = INFINITY;
        }
        r.errBias = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
      }
    }
    double num = 0, den = 0;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double want = ref[static_cast<size_t>((b * m + i) * n + j)];
          double got =
              load(hC, cs.c, static_cast<size_t>(b * strideC + i * ldc + j));
          if (std::isnan(got))
            num = INFINITY;
          num += (got - want) * (got - want);
          den += want * want;
        }
    r.errC = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    double tol = tolerance(cs.ab, cs.c);
    if (hasBias)
      tol = std::max(tol, tolerance(cs.bias));
    if (!(r.errC <= tol))
      r.pass = false;
    if (hasBiasGrad && !(r.errBias <= tolerance(cs.ab, cs.bias)))
      r.pass = false;
  } else if (hasBiasGrad) {
    // m, n or batch 0: nothing is written, the bias gradient included.
    for (unsigned char byte : hBG)
      if (byte != 0xFF)
        r.pass = false;
  }

  if (cs.timed && r.pass) {
    cudaEvent_t start, stop;
    checkCuda(cudaEventCreate(&start), "event");
    checkCuda(cudaEventCreate(&stop), "event");
    for (int i = 0; i < 3; ++i)
      runner.run(g, shape, p, stream);
    const int iters = 20;
    checkCuda(cudaEventRecord(start, stream), "record");
    for (int i = 0; i < iters; ++i)
      runner.run(g, shape, p, stream);
    checkCuda(cudaEventRecord(stop, stream), "record");
    checkCuda(cudaEventSynchronize(stop), "sync");
    float ms = 0;
    checkCuda(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    r.ms = ms / iters;
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  return r;
}

/// Relative L2 error of `got` against `want` (NaN in got: infinity).
double relL2(const std::vector<double> &got, const std::vector<double> &want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]))
      return INFINITY;
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

/// The activation epilogues: one [m, n] product (batch 1), C with ldc,
/// the aux [m, auxLd] (bits for ReLU), the bias and bias gradient in c's
/// dtype.
Result runActivationCase(const Case &cs, GemmRunner &runner,
                         cudaStream_t stream, std::mt19937_64 &rng) {
  Result r;
  const GemmEpilogue e = cs.epilogue;
  const bool relu = epilogueIsRelu(e), readsAux = epilogueReadsAux(e),
             writesAux = epilogueWritesAux(e), hasBias = epilogueHasBias(e),
             hasBiasGrad = epilogueHasBiasGrad(e);
  int64_t m = cs.m, n = cs.n, k = cs.k, batch = cs.batch;
  int64_t rA = cs.tA ? k : m, cA = cs.tA ? m : k;
  int64_t rB = cs.tB ? n : k, cB = cs.tB ? k : n;
  int64_t lda = std::max<int64_t>(1, cA + cs.padA);
  int64_t ldb = std::max<int64_t>(1, cB + cs.padB);
  int64_t ldc = std::max<int64_t>(1, n + cs.padC);
  int64_t unit = relu ? 128 : 8;
  int64_t auxLd = cs.auxLdOverride > 0
                      ? cs.auxLdOverride
                      : ((std::max<int64_t>(n, 1) + unit - 1) / unit + cs.auxPad) * unit;
  int64_t nb = std::max<int64_t>(batch, 1);
  size_t elemsA = static_cast<size_t>(nb * rA * lda + cs.offsetA);
  size_t elemsB = static_cast<size_t>(nb * rB * ldb);
  size_t elemsC = static_cast<size_t>(nb * m * ldc);
  size_t eA = dtypeBytes(cs.ab), eC = dtypeBytes(cs.c), eBias = dtypeBytes(cs.bias);
  // The aux: words of 32 bits (ReLU) or elements of c's dtype (GELU).
  size_t auxWordsPerRow = static_cast<size_t>(auxLd / 32);
  size_t auxBytes = relu ? static_cast<size_t>(m) * auxWordsPerRow * 4
                         : static_cast<size_t>(m * auxLd) * eC;

  std::vector<unsigned char> hA(elemsA * eA), hB(elemsB * eA),
      hBias(static_cast<size_t>(std::max<int64_t>(n, 1)) * eBias),
      hAux(std::max<size_t>(auxBytes, 1), 0xFF);
  std::vector<double> A(elemsA), B(elemsB), bias(static_cast<size_t>(n), 0.0);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  for (size_t i = 0; i < elemsA; ++i)
    A[i] = store(hA, cs.ab, i, uni(rng));
  for (size_t i = 0; i < elemsB; ++i)
    B[i] = store(hB, cs.ab, i, uni(rng));
  if (hasBias)
    for (int64_t i = 0; i < n; ++i)
      bias[static_cast<size_t>(i)] =
          store(hBias, cs.bias, static_cast<size_t>(i), uni(rng));
  // The gradients' aux input: a random mask (half the bits), or GELU
  // inputs over [-3, 3] where its derivative varies most.
  std::vector<char> maskIn;
  std::vector<double> geluIn;
  if (readsAux) {
    if (relu) {
      maskIn.assign(static_cast<size_t>(m * n), 0);
      std::vector<uint32_t> words(static_cast<size_t>(m) * auxWordsPerRow, 0);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          if (rng() & 1) {
            maskIn[static_cast<size_t>(i * n + j)] = 1;
            words[static_cast<size_t>(i) * auxWordsPerRow + j / 32] |= 1u << (j % 32);
          }
      if (!words.empty())
        std::memcpy(hAux.data(), words.data(), words.size() * 4);
    } else {
      geluIn.assign(static_cast<size_t>(m * n), 0.0);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          geluIn[static_cast<size_t>(i * n + j)] =
              store(hAux, cs.c, static_cast<size_t>(i * auxLd + j), 3.0 * uni(rng));
    }
  }

  Buffer dA(hA.size()), dB(hB.size()), dC(elemsC * eC), dBias(hBias.size()),
      dBiasGrad(static_cast<size_t>(std::max<int64_t>(n, 1)) * eBias),
      dAux(hAux.size());
  checkCuda(cudaMemcpy(dA.ptr, hA.data(), hA.size(), cudaMemcpyHostToDevice), "copy a");
  checkCuda(cudaMemcpy(dB.ptr, hB.data(), hB.size(), cudaMemcpyHostToDevice), "copy b");
  checkCuda(cudaMemcpy(dBias.ptr, hBias.data(), hBias.size(), cudaMemcpyHostToDevice),
            "copy bias");
  checkCuda(cudaMemcpy(dAux.ptr, hAux.data(), hAux.size(), cudaMemcpyHostToDevice),
            "copy aux");
  checkCuda(cudaMemset(dC.ptr, 0xFF, dC.bytes), "memset c");
  checkCuda(cudaMemset(dBiasGrad.ptr, 0xFF, dBiasGrad.bytes), "memset bg");

  Gemm g;
  g.aType = g.bType = cs.ab;
  g.cType = cs.c;
  g.biasType = cs.bias;
  g.transposeA = cs.tA;
  g.transposeB = cs.tB;
  g.m = Dim{m};
  g.n = Dim{n};
  g.k = Dim{k};
  g.batch = Dim{batch};
  g.lda = lda;
  g.ldb = ldb;
  g.ldc = ldc;
  if (batch > 1) {
    g.strideA = rA * lda;
    g.strideB = rB * ldb;
    g.strideC = m * ldc;
  }
  g.epilogue = e;
  g.auxLd = auxLd;
  GemmShape shape{m, n, k, batch};
  GemmPointers p;
  p.a = static_cast<char *>(dA.ptr) + cs.offsetA * static_cast<int64_t>(eA);
  p.b = dB.ptr;
  p.c = dC.ptr;
  p.bias = hasBias ? dBias.ptr : nullptr;
  p.biasGrad = hasBiasGrad ? dBiasGrad.ptr : nullptr;
  p.aux = (readsAux || writesAux) ? dAux.ptr : nullptr;
  try {
    runner.run(g, shape, p, stream);
    checkCuda(cudaStreamSynchronize(stream), "sync");
    checkCuda(cudaGetLastError(), "last error");
  } catch (const GemmError &err) {
    r.note = err.what();
    r.pass = cs.expectError;
    return r;
  }
  if (cs.expectError) {
    r.pass = false;
    r.note = "expected a GemmError";
    return r;
  }
  std::vector<unsigned char> hC(dC.bytes), hBG(dBiasGrad.bytes), hAuxOut(dAux.bytes);
  checkCuda(cudaMemcpy(hC.data(), dC.ptr, hC.size(), cudaMemcpyDeviceToHost), "copy c back");
  checkCuda(cudaMemcpy(hBG.data(), dBiasGrad.ptr, hBG.size(), cudaMemcpyDeviceToHost),
            "copy bias grad back");
  checkCuda(cudaMemcpy(hAuxOut.data(), dAux.ptr, hAuxOut.size(), cudaMemcpyDeviceToHost),
            "copy aux back");
  // C's padding stays untouched.
  for (int64_t i = 0; i < m && r.pass; ++i)
    for (int64_t j = n; j < ldc; ++j)
      for (size_t byte = 0; byte < eC; ++byte)
        if (hC[static_cast<size_t>(i * ldc + j) * eC + byte] != 0xFF) {
          r.pass = false;
          r.note = "wrote C's row padding";
        }
  if (m == 0 || n == 0)
    return r;

  // Reference in double: p = op(a) op(b) (+ bias); C = act(p) or
  // p * act'(aux); bias gradient = column sums of C.
  std::vector<double> pre(static_cast<size_t>(m * n));
  parallelFor(m, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t kk = 0; kk < k; ++kk)
          sum += A[static_cast<size_t>(cs.offsetA + (cs.tA ? kk * lda + i : i * lda + kk))] *
                 B[static_cast<size_t>(cs.tB ? j * ldb + kk : kk * ldb + j)];
        pre[static_cast<size_t>(i * n + j)] = sum + bias[static_cast<size_t>(j)];
      }
  });
  std::vector<double> want(pre.size()), got(pre.size());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      size_t ij = static_cast<size_t>(i * n + j);
      double x = pre[ij];
      switch (e) {
      case GemmEpilogue::Relu:
      case GemmEpilogue::ReluAux:
      case GemmEpilogue::ReluBias:
      case GemmEpilogue::ReluAuxBias:
        want[ij] = x > 0 ? x : 0.0;
        break;
      case GemmEpilogue::Gelu:
      case GemmEpilogue::GeluAux:
      case GemmEpilogue::GeluBias:
      case GemmEpilogue::GeluAuxBias:
        want[ij] = geluTanh(x);
        break;
      case GemmEpilogue::DRelu:
      case GemmEpilogue::DReluBGrad:
        want[ij] = maskIn[ij] ? x : 0.0;
        break;
      default:
        want[ij] = x * geluTanhDerivative(geluIn[ij]);
        break;
      }
      got[ij] = load(hC, cs.c, static_cast<size_t>(i * ldc + j));
    }
  double tol = tolerance(cs.ab, cs.c);
  r.errC = relL2(got, want);
  if (!(r.errC <= tol)) {
    r.pass = false;
    r.note = "C differs";
  }
  if (hasBiasGrad) {
    std::vector<double> sums(static_cast<size_t>(n), 0.0), gotSums(sums.size());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        sums[static_cast<size_t>(j)] += want[static_cast<size_t>(i * n + j)];
    for (int64_t j = 0; j < n; ++j)
      gotSums[static_cast<size_t>(j)] = load(hBG, cs.bias, static_cast<size_t>(j));
    r.errBias = relL2(gotSums, sums);
    if (!(r.errBias <= tol)) {
      r.pass = false;
      r.note += r.note.empty() ? "bias gradient differs" : "; bias gradient differs";
    }
  }
  if (writesAux && relu) {
    // Bit n % 32 of word n / 32 of row m is p > 0, wherever the reference's
    // p is clearly away from 0 (f32 accumulation may flip the sign of a p
    // within rounding of 0).
    double rms = 0;
    for (double x : pre)
      rms += x * x;
    rms = std::sqrt(rms / static_cast<double>(pre.size()));
    int64_t wrong = 0, checked = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double x = pre[static_cast<size_t>(i * n + j)];
        if (std::fabs(x) <= 1e-2 * rms)
          continue;
        uint32_t word;
        std::memcpy(&word,
                    hAuxOut.data() + (static_cast<size_t>(i) * auxWordsPerRow +
                                      static_cast<size_t>(j / 32)) * 4,
                    4);
        bool bit = (word >> (j % 32)) & 1u;
        ++checked;
        wrong += bit != (x > 0);
      }
    if (wrong) {
      r.pass = false;
      r.note += (r.note.empty() ? "" : "; ") + std::to_string(wrong) + " of " +
                std::to_string(checked) +
                " ReLU mask bits differ from ls2.matmul's layout";
    }
  }
  if (writesAux && !relu) {
    std::vector<double> gotPre(pre.size());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        gotPre[static_cast<size_t>(i * n + j)] =
            load(hAuxOut, cs.c, static_cast<size_t>(i * auxLd + j));
    double err = relL2(gotPre, pre);
    if (!(err <= tol)) {
      r.pass = false;
      r.note += (r.note.empty() ? "" : "; ") + std::string("GELU aux relL2 ") +
                std::to_string(err);
    }
  }

  if (cs.timed && r.pass) {
    cudaEvent_t start, stop;
    checkCuda(cudaEventCreate(&start), "event");
    checkCuda(cudaEventCreate(&stop), "event");
    for (int i = 0; i < 3; ++i)
      runner.run(g, shape, p, stream);
    const int iters = 20;
    checkCuda(cudaEventRecord(start, stream), "record");
    for (int i = 0; i < iters; ++i)
      runner.run(g, shape, p, stream);
    checkCuda(cudaEventRecord(stop, stream), "record");
    checkCuda(cudaEventSynchronize(stop), "sync");
    float ms = 0;
    checkCuda(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    r.ms = ms / iters;
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  return r;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  const DType F32 = DType::F32, F16 = DType::F16, BF16 = DType::BF16;
  struct Combo {
    DType ab, c;
  } combos[] = {{F32, F32}, {F16, F16}, {F16, F32}, {BF16, BF16}, {BF16, F32}};
  auto tname = [](bool tA, bool tB) {
    return std::string(tA ? "T" : "N") + (tB ? "T" : "N");
  };
  auto ty = [](DType ab, DType c) {
    return std::string(dtypeName(ab)) + "->" + dtypeName(c);
  };

  // Every dtype combination and transpose, odd sizes.
  for (const Combo &co : combos)
    for (int t = 0; t < 4; ++t) {
      Case c;
      c.ab = co.ab;
      c.c = co.c;
      c.tA = t & 1;
      c.tB = t & 2;
      c.m = 37, c.n = 65, c.k = 19;
      c.name = "small " + ty(co.ab, co.c) + " " + tname(c.tA, c.tB);
      out.push_back(c);
    }
  // Large, odd K (768 x 3072 x 513), timed.
  for (const Combo &co : combos)
    for (int t : {0, 2, 1}) {
      Case c;
      c.ab = co.ab;
      c.c = co.c;
      c.tA = t & 1;
      c.tB = t & 2;
      c.m = 768, c.n = 3072, c.k = 513;
      c.timed = true;
      c.name = "large " + ty(co.ab, co.c) + " " + tname(c.tA, c.tB);
      out.push_back(c);
    }
  // A BERT-base sized FFN GEMM, for the time (f16, bf16).
  for (DType t : {F16, BF16}) {
    Case c;
    c.ab = t, c.c = t, c.tB = true;
    c.m = 4096, c.n = 3072, c.k = 768;
    c.timed = true;
    c.name = "ffn1 " + ty(t, t) + " NT 4096x3072x768";
    out.push_back(c);
  }
  // Padded leading dimensions (odd ones for 2-byte types), misaligned a.
  for (const Combo &co : combos)
    for (int t : {0, 3}) {
      Case c;
      c.ab = co.ab, c.c = co.c, c.tA = t & 1, c.tB = t & 2;
      c.m = 33, c.n = 40, c.k = 24;
      c.padA = 8, c.padB = 3, c.padC = 5;
      c.name = "padded ld " + ty(co.ab, co.c) + " " + tname(c.tA, c.tB);
      out.push_back(c);
    }
  {
    Case c;
    c.ab = F16, c.c = F16, c.tB = true;
    c.m = 64, c.n = 96, c.k = 80, c.offsetA = 1;
    c.name = "misaligned a (+2 bytes) f16->f16 NT";
    out.push_back(c);
  }
  // Batched: per-batch b, shared b (strideB 0; folded when a is NN), padded
  // batch strides.
  for (const Combo &co : combos)
    for (int t : {0, 3}) {
      Case c;
      c.ab = co.ab, c.c = co.c, c.tA = t & 1, c.tB = t & 2;
      c.m = 37, c.n = 65, c.k = 19, c.batch = 3;
      c.name = "batch 3 " + ty(co.ab, co.c) + " " + tname(c.tA, c.tB);
      out.push_back(c);
    }
  for (const Combo &co : {Combo{F32, F32}, Combo{F16, F16}, Combo{BF16, F32}})
    for (int t : {2, 1}) {
      Case c;
      c.ab = co.ab, c.c = co.c, c.tA = t & 1, c.tB = t & 2;
      c.m = 37, c.n = 65, c.k = 19, c.batch = 4, c.sharedB = true;
      c.name = "batch 4 shared b " + ty(co.ab, co.c) + " " + tname(c.tA, c.tB);
      out.push_back(c);
    }
  {
    Case c;
    c.ab = BF16, c.c = BF16, c.tB = true;
    c.m = 29, c.n = 48, c.k = 40, c.batch = 5, c.padBatch = 7, c.padC = 2;
    c.name = "batch 5 padded strides bf16->bf16 NT";
    out.push_back(c);
  }
  {
    Case c;
    c.ab = F16, c.c = F16, c.tB = true;
    c.m = 512, c.n = 768, c.k = 768, c.batch = 8, c.sharedB = true;
    c.timed = true;
    c.name = "batch 8 shared b f16->f16 NT 512x768x768";
    out.push_back(c);
  }
  // Bias epilogue.
  struct BiasCombo {
    DType ab, c, bias;
  } biasCombos[] = {{F32, F32, F32},   {F16, F16, F16}, {F16, F32, F32},
                    {BF16, BF16, BF16}, {BF16, F32, F32}};
  for (const BiasCombo &bc : biasCombos)
    for (int t : {2, 0, 3}) {
      Case c;
      c.ab = bc.ab, c.c = bc.c, c.bias = bc.bias, c.tA = t & 1, c.tB = t & 2;
      c.m = 37, c.n = 65, c.k = 19;
      c.epilogue = GemmEpilogue::Bias;
      c.name = "bias(" + std::string(dtypeName(bc.bias)) + ") " +
               ty(bc.ab, bc.c) + " " + tname(c.tA, c.tB);
      out.push_back(c);
    }
  {
    Case c; // fp32 bias with ldc != n (a cuBLASLt bug on older GPUs)
    c.ab = F32, c.c = F32, c.bias = F32;
    c.m = 1, c.n = 4, c.k = 768, c.padC = 60;
    c.epilogue = GemmEpilogue::Bias;
    c.name = "bias(f32) f32->f32 NN 1x4x768 ldc 64";
    out.push_back(c);
  }
  {
    Case c;
    c.ab = F16, c.c = F16, c.bias = F16, c.tB = true;
    c.m = 37, c.n = 65, c.k = 19, c.batch = 2;
    c.epilogue = GemmEpilogue::Bias;
    c.name = "bias(f16) batch 2 f16->f16 NT";
    out.push_back(c);
  }
  {
    Case c;
    c.ab = F16, c.c = F16, c.bias = F16, c.tB = true;
    c.m = 37, c.n = 65, c.k = 19, c.batch = 3, c.sharedB = true;
    c.epilogue = GemmEpilogue::Bias;
    c.name = "bias(f16) batch 3 shared b f16->f16 NT";
    out.push_back(c);
  }
  for (DType t : {F32, F16, BF16}) {
    Case c;
    c.ab = t, c.c = t, c.bias = t, c.tB = true;
    c.m = 768, c.n = 3072, c.k = 513;
    c.epilogue = GemmEpilogue::Bias;
    c.timed = true;
    c.name = "large bias(" + std::string(dtypeName(t)) + ") " + ty(t, t) + " NT";
    out.push_back(c);
  }
  // Bias gradient of a: the weight-gradient shape dW[M, N] = dYᵀ X with dY
  // stored [K = tokens, M], X [K, N]; biasGrad[m] = sum over tokens of dY.
  struct BgCombo {
    DType ab, c, bias;
  } bgCombos[] = {{F32, F32, F32},   {F16, F16, F16}, {F16, F32, F32},
                  {F16, F16, F32},   {BF16, BF16, BF16},
                  {BF16, F32, F32},  {BF16, BF16, F32}};
  for (const BgCombo &bc : bgCombos) {
    Case c;
    c.ab = bc.ab, c.c = bc.c, c.bias = bc.bias, c.tA = true;
    c.m = 37, c.n = 65, c.k = 19;
    c.epilogue = GemmEpilogue::BiasGradA;
    c.name = "bias_grad(" + std::string(dtypeName(bc.bias)) + ") " +
             ty(bc.ab, bc.c) + " TN small";
    out.push_back(c);
    c.m = 768, c.n = 1024, c.k = 1031;
    c.timed = true;
    c.name = "bias_grad(" + std::string(dtypeName(bc.bias)) + ") " +
             ty(bc.ab, bc.c) + " TN 768x1024x1031";
    out.push_back(c);
    // Train-step token counts (BERT-base's 16,384 and a ragged 3,274): the
    // fp32 bias gradients of full-size models were 1e4x off on the H200
    // while K = 1031 passed; a narrow n keeps the host reference quick.
    c.timed = false;
    for (int64_t k : {int64_t{3274}, int64_t{16384}}) {
      c.m = 3072, c.n = 24, c.k = k;
      c.name = "bias_grad(" + std::string(dtypeName(bc.bias)) + ") " + ty(bc.ab, bc.c) +
               " TN 3072x24x" + std::to_string(k);
      out.push_back(c);
    }
  }
  {
    Case c;
    c.ab = F16, c.c = F16, c.bias = F16, c.tA = true, c.tB = true;
    c.m = 40, c.n = 24, c.k = 56;
    c.epilogue = GemmEpilogue::BiasGradA;
    c.name = "bias_grad(f16) f16->f16 TT";
    out.push_back(c);
  }
  {
    Case c;
    c.ab = F32, c.c = F32, c.bias = F32;
    c.m = 40, c.n = 24, c.k = 56;
    c.epilogue = GemmEpilogue::BiasGradA;
    c.name = "bias_grad(f32) f32->f32 NN (row sums)";
    out.push_back(c);
  }
  {
    Case c;
    c.ab = F16, c.c = F16, c.bias = F16, c.tA = true;
    c.m = 33, c.n = 40, c.k = 27, c.padA = 5, c.padB = 3, c.padC = 1;
    c.epilogue = GemmEpilogue::BiasGradA;
    c.name = "bias_grad(f16) f16->f16 TN padded ld";
    out.push_back(c);
  }
  // Rows whose pitch is not a multiple of 16 bytes (the logits of an odd
  // vocabulary). A transposed a and c are staged through aligned copies a
  // block of columns at a time (the check's runner has 4 MiB of staging:
  // several blocks of 4,096 columns, the last one partial, as at 16,384
  // tokens with the executor's 128 MiB), timed beside the same GEMM on a
  // runner without staging.
  for (bool unstaged : {false, true}) {
    std::string how = unstaged ? " unstaged" : " staged";
    Case c;
    c.ab = F16, c.c = F16, c.bias = F16, c.tB = true;
    c.m = 512, c.n = 30522, c.k = 768;
    c.epilogue = GemmEpilogue::Bias;
    c.timed = true;
    c.unstaged = unstaged;
    c.name = "logits+bias f16 NT 512x30522x768 ldc odd" + how;
    out.push_back(c);
    c = Case{};
    c.ab = BF16, c.c = BF16, c.tB = true;
    c.m = 512, c.n = 50257, c.k = 1024;
    c.timed = true;
    c.unstaged = unstaged;
    c.name = "logits bf16 NT 512x50257x1024 ldc odd" + how;
    out.push_back(c);
    c = Case{};
    c.ab = F16, c.c = F16, c.bias = F16, c.tA = true;
    c.m = 30522, c.n = 768, c.k = 512;
    c.epilogue = GemmEpilogue::BiasGradA;
    c.timed = true;
    c.unstaged = unstaged;
    c.name = "wgrad+bgrad f16 TN 30522x768x512 lda odd" + how;
    out.push_back(c);
  }
  // The same three GEMMs on logits whose rows are padded to 16 bytes
  // (PaddedRows.h: ld 50,264 for n or k = 50,257; 30,528 for 30,522): no
  // staging applies; the runner splits off the odd size's tail (an H200 ran
  // the whole odd sizes at 95-350 TFLOP/s, the rounded ones at 610-690).
  {
    Case c;
    c.ab = BF16, c.c = BF16, c.tB = true;
    c.m = 512, c.n = 50257, c.k = 1024, c.padC = 7;
    c.timed = true;
    c.name = "logits bf16 NT 512x50257x1024 ldc padded";
    out.push_back(c);
    c = Case{};
    c.ab = BF16, c.c = BF16;
    c.m = 512, c.n = 1024, c.k = 50257, c.padA = 7;
    c.timed = true;
    c.name = "dgrad bf16 NN 512x1024x50257 lda padded";
    out.push_back(c);
    c = Case{};
    c.ab = BF16, c.c = BF16, c.tA = true;
    c.m = 50257, c.n = 1024, c.k = 512, c.padA = 7;
    c.timed = true;
    c.name = "wgrad bf16 TN 50257x1024x512 lda padded";
    out.push_back(c);
    c = Case{};
    c.ab = F16, c.c = F16, c.bias = F16, c.tA = true;
    c.m = 30522, c.n = 768, c.k = 512, c.padA = 6;
    c.epilogue = GemmEpilogue::BiasGradA;
    c.timed = true;
    c.name = "wgrad+bgrad f16 TN 30522x768x512 lda padded";
    out.push_back(c);
    c = Case{};
    c.ab = F16, c.c = F16, c.bias = F16, c.tB = true;
    c.m = 512, c.n = 30522, c.k = 768, c.padC = 6;
    c.epilogue = GemmEpilogue::Bias;
    c.timed = true;
    c.name = "logits+bias f16 NT 512x30522x768 ldc padded";
    out.push_back(c);
    c = Case{};
    c.ab = F16, c.c = F16;
    c.m = 512, c.n = 768, c.k = 30522, c.padA = 6;
    c.timed = true;
    c.name = "dgrad f16 NN 512x768x30522 lda padded";
    out.push_back(c);
    // Odd n with the bias gradient (only the main part writes it), and
    // odd n, m and k together (each part split again).
    c = Case{};
    c.ab = F16, c.c = F16, c.bias = F16, c.tA = true;
    c.m = 300, c.n = 1031, c.k = 512, c.padA = 4, c.padC = 1;
    c.epilogue = GemmEpilogue::BiasGradA;
    c.name = "bias_grad(f16) f16->f16 TN 300x1031x512 odd n, m padded";
    out.push_back(c);
    c = Case{};
    c.ab = BF16, c.c = F32, c.tB = true;
    c.m = 301, c.n = 1029, c.k = 1027, c.padA = 5, c.padB = 5, c.padC = 3;
    c.name = "bf16->f32 NT 301x1029x1027 odd n and k padded";
    out.push_back(c);
    c = Case{};
    c.ab = F16, c.c = F16, c.tA = true, c.tB = true;
    c.m = 1029, c.n = 263, c.k = 517, c.padA = 3, c.padB = 3, c.padC = 1;
    c.name = "f16 TT 1029x263x517 odd m, n and k padded";
    out.push_back(c);
    // The same sizes rounded to a multiple of 8: what an aligned n or k gets.
    c = Case{};
    c.ab = BF16, c.c = BF16, c.tB = true;
    c.m = 512, c.n = 50264, c.k = 1024;
    c.timed = true;
    c.name = "logits bf16 NT 512x50264x1024 (n rounded)";
    out.push_back(c);
    c = Case{};
    c.ab = BF16, c.c = BF16;
    c.m = 512, c.n = 1024, c.k = 50264;
    c.timed = true;
    c.name = "dgrad bf16 NN 512x1024x50264 (k rounded)";
    out.push_back(c);
    c = Case{};
    c.ab = BF16, c.c = BF16, c.tA = true;
    c.m = 50264, c.n = 1024, c.k = 512;
    c.timed = true;
    c.name = "wgrad bf16 TN 50264x1024x512 (m rounded)";
    out.push_back(c);
  }
  // The dgrad's unaligned a [M, K] (not transposed): slices of k summed in
  // an f32 accumulator (the check's 4 MiB: 2 MiB of it for 512x1024, slices
  // of 2,048 columns), then rounded once into c; timed beside no staging.
  for (bool unstaged : {false, true}) {
    Case c;
    c.ab = BF16, c.c = BF16;
    c.m = 512, c.n = 1024, c.k = 50257;
    c.timed = true;
    c.unstaged = unstaged;
    c.name = std::string("dgrad bf16 NN 512x1024x50257 lda odd") +
             (unstaged ? " unstaged" : " staged");
    out.push_back(c);
    // b stored [N, K] with rows padded to 16 bytes (k-slicing needs b's
    // rows aligned; unpadded, ldb = 30,522 halves is not, and the case would
    // run unstaged under its "staged" name).
    c.ab = F16, c.c = F16, c.tB = true, c.padB = 6;
    c.m = 640, c.n = 768, c.k = 30522;
    c.name = std::string("dgrad f16 NT 640x768x30522 lda odd") +
             (unstaged ? " unstaged" : " staged");
    out.push_back(c);
    // An f32 c takes the slices' sums itself (beta 1, no rounding kernel).
    c.ab = BF16, c.c = F32, c.tB = false, c.padB = 0;
    c.m = 512, c.n = 1024, c.k = 50257;
    c.name = std::string("dgrad bf16->f32 NN 512x1024x50257 lda odd") +
             (unstaged ? " unstaged" : " staged");
    out.push_back(c);
  }
  for (DType ab : {F32, BF16}) {
    // c rows of 131 f32 (a aligned); a transposed, stored [301, 515].
    Case c;
    c.ab = ab, c.c = F32;
    c.m = 515, c.n = 131, c.k = 304;
    c.name = std::string(dtypeName(ab)) + "->f32 NN ldc 131 staged";
    out.push_back(c);
    c.tA = true;
    c.n = 132, c.k = 301;
    c.epilogue = GemmEpilogue::BiasGradA;
    c.bias = F32;
    c.name = std::string(dtypeName(ab)) + "->f32 TN+bgrad lda 515 staged";
    out.push_back(c);
  }

  // Empty sizes.
  {
    Case c;
    c.m = 0, c.n = 65, c.k = 19;
    c.name = "m=0 f32 (no-op)";
    out.push_back(c);
    c.m = 37, c.n = 0;
    c.name = "n=0 f32 (no-op)";
    out.push_back(c);
    c.n = 65, c.batch = 0;
    c.name = "batch=0 f32 (no-op)";
    out.push_back(c);
    c.m = 0, c.batch = 1, c.epilogue = GemmEpilogue::BiasGradA, c.tA = true;
    c.name = "m=0 bias_grad f32 (no-op)";
    out.push_back(c);
  }
  for (const Combo &co : {Combo{F32, F32}, Combo{F16, F16}, Combo{BF16, F32}}) {
    Case c;
    c.ab = co.ab, c.c = co.c;
    c.m = 37, c.n = 65, c.k = 0, c.padC = 3;
    c.name = "k=0 " + ty(co.ab, co.c) + " (zeros)";
    out.push_back(c);
  }
  {
    Case c;
    c.ab = F16, c.c = F16, c.m = 37, c.n = 65, c.k = 0, c.batch = 3,
    c.padBatch = 5, c.padC = 2;
    c.name = "k=0 batch 3 padded f16->f16 (zeros)";
    out.push_back(c);
  }
  for (const BiasCombo &bc : {BiasCombo{F32, F32, F32}, BiasCombo{F16, F16, F16},
                              BiasCombo{BF16, BF16, BF16},
                              BiasCombo{BF16, F32, F32}}) {
    Case c;
    c.ab = bc.ab, c.c = bc.c, c.bias = bc.bias, c.tB = true;
    c.m = 37, c.n = 65, c.k = 0, c.padC = 3;
    c.epilogue = GemmEpilogue::Bias;
    c.name = "k=0 bias(" + std::string(dtypeName(bc.bias)) + ") " +
             ty(bc.ab, bc.c) + " (bias broadcast)";
    out.push_back(c);
  }
  {
    Case c;
    c.ab = F16, c.c = F16, c.bias = F16, c.m = 37, c.n = 65, c.k = 0,
    c.batch = 2;
    c.epilogue = GemmEpilogue::Bias;
    c.name = "k=0 bias(f16) batch 2 (bias broadcast)";
    out.push_back(c);
  }
  for (DType t : {F32, F16}) {
    Case c;
    c.ab = t, c.c = t, c.bias = t, c.tA = true;
    c.m = 37, c.n = 65, c.k = 0;
    c.epilogue = GemmEpilogue::BiasGradA;
    c.name = "k=0 bias_grad(" + std::string(dtypeName(t)) + ") (zeros)";
    out.push_back(c);
  }
  // Refused calls.
  {
    Case c;
    c.ab = F16, c.c = F16, c.bias = F16, c.tA = true;
    c.m = 8, c.n = 8, c.k = 8, c.batch = 2;
    c.epilogue = GemmEpilogue::BiasGradA;
    c.expectError = true;
    c.name = "refused: bias_grad with batch 2";
    out.push_back(c);
  }
  {
    Case c;
    c.ab = F16, c.bOverride = F32, c.c = F32;
    c.m = 8, c.n = 8, c.k = 8;
    c.expectError = true;
    c.name = "refused: a f16, b f32";
    out.push_back(c);
  }
  {
    Case c;
    c.ab = F32, c.c = F16;
    c.m = 8, c.n = 8, c.k = 8;
    c.expectError = true;
    c.name = "refused: a f32, c f16";
    out.push_back(c);
  }
  // cuBLASLt's bias has D's dtype (an f32 bias with f16 or bf16 c gets
  // CUBLAS_STATUS_INVALID_VALUE from its heuristic): refused up front.
  for (const BiasCombo &bc : {BiasCombo{F16, F16, F32}, BiasCombo{BF16, BF16, F32},
                              BiasCombo{F16, F32, F16}}) {
    Case c;
    c.ab = bc.ab, c.c = bc.c, c.bias = bc.bias, c.tB = true;
    c.m = 37, c.n = 65, c.k = 19;
    c.epilogue = GemmEpilogue::Bias;
    c.expectError = true;
    c.name = "refused: bias(" + std::string(dtypeName(bc.bias)) + ") " +
             ty(bc.ab, bc.c);
    out.push_back(c);
    c.k = 0;
    c.name += " k=0";
    out.push_back(c);
  }

  // Activation epilogues: every kind, every dtype, NN and NT (the FFN's
  // forward and dgrad GEMMs with either weight layout), odd m and n (the
  // ReLU mask's rows padded to 128 bits, the GELU input's to 8 elements).
  using E = GemmEpilogue;
  const E kinds[] = {E::Relu,        E::ReluAux,   E::ReluBias,   E::ReluAuxBias,
                     E::Gelu,        E::GeluAux,   E::GeluBias,   E::GeluAuxBias,
                     E::DRelu,       E::DReluBGrad, E::DGelu,     E::DGeluBGrad};
  for (E kind : kinds)
    for (DType t : {F32, F16, BF16})
      for (int tr : {0, 2}) {
        Case c;
        c.ab = t, c.c = t, c.bias = t, c.tB = tr & 2;
        c.m = 37, c.n = epilogueIsRelu(kind) ? 65 : 72, c.k = 19;
        c.epilogue = kind;
        c.name = std::string(epilogueName(kind)) + " " + ty(t, t) + " " +
                 tname(false, c.tB);
        out.push_back(c);
      }
  // The FFN of BERT-base / GPT-2 small (4096 tokens x 3072 x 768): GELU
  // forward with bias and aux, its gradient with the bias gradient; ReLU
  // likewise (the Transformer's FFN), timed.
  for (E kind : {E::GeluAuxBias, E::DGeluBGrad, E::ReluAuxBias, E::DReluBGrad})
    for (DType t : {F16, BF16}) {
      Case c;
      c.ab = t, c.c = t, c.bias = t, c.tB = kind == E::DGeluBGrad || kind == E::DReluBGrad;
      c.m = 4096, c.n = 3072, c.k = 768;
      c.epilogue = kind;
      c.timed = true;
      c.name = std::string("ffn ") + epilogueName(kind) + " " + ty(t, t) +
               (c.tB ? " NT" : " NN") + " 4096x3072x768";
      out.push_back(c);
    }
  // Odd n with the GELU input's rows padded (n 65, auxLd 72), a padded
  // ReLU mask row (auxLd 256 for n 65), a padded C, an f32 DGELU with odd k.
  {
    Case c;
    c.ab = BF16, c.c = BF16, c.bias = BF16, c.tB = true;
    c.m = 41, c.n = 65, c.k = 33, c.padC = 3;
    c.epilogue = E::GeluAuxBias;
    c.name = "gelu_aux_bias bf16 n 65 auxLd 72 ldc 68";
    out.push_back(c);
    c.epilogue = E::DGeluBGrad;
    c.name = "dgelu_bgrad bf16 n 65 auxLd 72 ldc 68";
    out.push_back(c);
    c.ab = c.c = c.bias = F16;
    c.auxPad = 1;
    c.epilogue = E::ReluAuxBias;
    c.name = "relu_aux_bias f16 n 65 auxLd 256 ldc 68";
    out.push_back(c);
    c.epilogue = E::DReluBGrad;
    c.name = "drelu_bgrad f16 n 65 auxLd 256 ldc 68";
    out.push_back(c);
  }
  // k = 0: the epilogue of a zero product.
  for (E kind : {E::ReluAuxBias, E::GeluAuxBias, E::DReluBGrad, E::DGeluBGrad}) {
    Case c;
    c.ab = F16, c.c = F16, c.bias = F16, c.tB = true;
    c.m = 37, c.n = 72, c.k = 0;
    c.epilogue = kind;
    c.name = std::string("k=0 ") + epilogueName(kind) + " f16";
    out.push_back(c);
  }
  // Refused: an auxLd that breaks cuBLASLt's rule, a bias in another dtype,
  // a batch.
  {
    Case c;
    c.ab = F16, c.c = F16, c.bias = F16;
    c.m = 16, c.n = 20, c.k = 8;
    c.epilogue = E::GeluAuxBias;
    c.auxLdOverride = 20;
    c.expectError = true;
    c.name = "refused: gelu_aux_bias auxLd 20 (not a multiple of 8)";
    out.push_back(c);
    c.epilogue = E::DReluBGrad;
    c.auxLdOverride = 64;
    c.name = "refused: drelu_bgrad auxLd 64 bits (not a multiple of 128)";
    out.push_back(c);
    c.auxLdOverride = 0;
    c.epilogue = E::GeluBias;
    c.bias = F32;
    c.name = "refused: gelu_bias(f32) f16->f16";
    out.push_back(c);
    c.bias = F16;
    c.batch = 2;
    c.epilogue = E::ReluBias;
    c.name = "refused: relu_bias with batch 2";
    out.push_back(c);
  }
  return out;
}

} // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "ls2c-gemm-check: no CUDA device\n");
    return 2;
  }
  cudaDeviceProp prop{};
  checkCuda(cudaGetDeviceProperties(&prop, 0), "device properties");
  std::printf("device: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);

  Buffer workspace(GemmRunner::kRecommendedWorkspaceBytes);
  cudaStream_t stream;
  checkCuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
            "stream");
  int failures = 0, total = 0;
  {
    // Little staging, so that staged GEMMs take several blocks.
    Buffer staging(4u << 20);
    GemmRunner runner(workspace.ptr, workspace.bytes, staging.ptr, staging.bytes);
    GemmRunner unstagedRunner(workspace.ptr, workspace.bytes);
    std::mt19937_64 rng(20240611);
    for (const Case &cs : cases()) {
      ++total;
      GemmRunner &use = cs.unstaged ? unstagedRunner : runner;
      Result r = isActivationCase(cs) ? runActivationCase(cs, use, stream, rng)
                                      : runCase(cs, use, stream, rng);
      if (!r.pass)
        ++failures;
      std::printf("%s  %-50s", r.pass ? "PASS" : "FAIL", cs.name.c_str());
      if (!cs.expectError) {
        std::printf(" relL2 %.3e", r.errC);
        if (r.errBias >= 0)
          std::printf(" biasGrad relL2 %.3e", r.errBias);
      }
      if (r.ms >= 0) {
        double flops = 2.0 * static_cast<double>(cs.m) * static_cast<double>(cs.n) *
                       static_cast<double>(cs.k) *
                       static_cast<double>(std::max<int64_t>(cs.batch, 1));
        std::printf("  %.4f ms (%.1f TFLOP/s)", r.ms, flops / (r.ms * 1e9));
      }
      if (!r.note.empty())
        std::printf("\n      %s", r.note.c_str());
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  cudaStreamDestroy(stream);
  std::printf("%d of %d cases passed%s\n", total - failures, total,
              failures ? "" : " (all)");
  return failures ? 1 : 0;
}
