// gemm_relu_epilogues.cu: times cuBLASLt's top heuristic algorithms for Transformer-base's
// FFN GEMMs (4,096 tokens, model 512, FFN 2,048, fp16 operands and output, f32 accumulation)
// with the epilogues ls2-fuse attaches to them and without: the forward X W1^T plain, with
// BIAS and with RELU_AUX_BIAS (the ReLU's bit mask as aux), and the dgrad dY2 W2 of the next
// projection plain and with DRELU_BGRAD (the mask read back, the bias gradient summed). It
// measures what the ReLU epilogues cost the GEMMs against a generated kernel doing their work.
// Build (CUDA toolkit): nvcc -O2 -arch=sm_90 -o gemm_relu_epilogues bench/cuda/gemm_relu_epilogues.cu -lcublasLt
// Run on the GPU: ./gemm_relu_epilogues   (prints us and TFLOP/s per algorithm)
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>
#define CK(x) do { auto e = (x); if (e != 0) { std::printf("fail %s: %d line %d\n", #x, (int)e, __LINE__); return 1; } } while (0)

int main() {
  cublasLtHandle_t h;
  CK(cublasLtCreate(&h));
  size_t wsBytes = 32u << 20;
  void *ws;
  CK(cudaMalloc(&ws, wsBytes));
  const int m = 4096, n = 2048, k = 512; // tokens, FFN, model
  // Column-major views of row-major tensors: D^T [n x m] = op(A) op(B).
  // forward: A = W1 [n, k] row-major = k x n, transposed; B = X [m, k] = k x m.
  // dgrad:   A = W2 [k, n] row-major = n x k;             B = dY2 [m, k] = k x m.
  size_t big = (size_t)std::max(m, n) * std::max(n, k) * 2;
  void *A, *B, *D, *aux, *bias, *bgrad;
  CK(cudaMalloc(&A, big)); CK(cudaMalloc(&B, big)); CK(cudaMalloc(&D, (size_t)m * n * 2));
  CK(cudaMalloc(&aux, (size_t)m * n / 8)); CK(cudaMalloc(&bias, n * 2)); CK(cudaMalloc(&bgrad, n * 2));
  {
    std::vector<unsigned short> v(big / 2);
    unsigned x = 12345;
    for (auto &e : v) {
      x = x * 1664525u + 1013904223u;
      e = (0x3000 + ((x >> 16) & 0x0fff)) | ((x & 0x100) ? 0x8000 : 0);
    }
    CK(cudaMemcpy(A, v.data(), big, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(B, v.data(), big, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(bias, v.data(), n * 2, cudaMemcpyHostToDevice));
    CK(cudaMemset(aux, 0x5a, (size_t)m * n / 8));
  }
  struct Case { const char *name; bool dgrad; cublasLtEpilogue_t epi; };
  const Case cases[] = {{"forward plain", false, CUBLASLT_EPILOGUE_DEFAULT},
                        {"forward BIAS", false, CUBLASLT_EPILOGUE_BIAS},
                        {"forward RELU_AUX_BIAS", false, CUBLASLT_EPILOGUE_RELU_AUX_BIAS},
                        {"dgrad plain", true, CUBLASLT_EPILOGUE_DEFAULT},
                        {"dgrad DRELU_BGRAD", true, CUBLASLT_EPILOGUE_DRELU_BGRAD}};
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (const Case &c : cases) {
    cublasLtMatmulDesc_t op;
    CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t tA = c.dgrad ? CUBLAS_OP_N : CUBLAS_OP_T, tB = CUBLAS_OP_N;
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &tA, sizeof(tA)));
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tB, sizeof(tB)));
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &c.epi, sizeof(c.epi)));
    if (c.epi != CUBLASLT_EPILOGUE_DEFAULT) {
      void *b = c.dgrad ? bgrad : bias;
      CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof(b)));
    }
    if (c.epi == CUBLASLT_EPILOGUE_RELU_AUX_BIAS || c.epi == CUBLASLT_EPILOGUE_DRELU_BGRAD) {
      int64_t ld = n; // the bit mask's rows, in elements (a multiple of 128)
      CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux)));
      CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof(ld)));
    }
    cublasLtMatrixLayout_t la, lb, ld;
    CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, c.dgrad ? n : k, c.dgrad ? k : n, c.dgrad ? n : k));
    CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, k, m, k));
    CK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16F, n, m, n));
    cublasLtMatmulPreference_t pref;
    CK(cublasLtMatmulPreferenceCreate(&pref));
    CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsBytes, sizeof(wsBytes)));
    cublasLtMatmulHeuristicResult_t res[8];
    int found = 0;
    if (cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, ld, ld, pref, 8, res, &found) != 0)
      found = 0;
    float alpha = 1, beta = 0;
    double flop = 2.0 * m * n * k;
    std::printf("%s (%dx%dx%d): %d candidates\n", c.name, m, n, k, found);
    for (int i = 0; i < found; ++i) {
      auto once = [&]() {
        return cublasLtMatmul(h, op, &alpha, A, la, B, lb, &beta, D, ld, D, ld, &res[i].algo, ws,
                              res[i].workspaceSize, 0);
      };
      if (once() != CUBLAS_STATUS_SUCCESS) {
        std::printf("  #%d failed\n", i);
        continue;
      }
      for (int w = 0; w < 5; ++w) once();
      cudaEventRecord(e0);
      for (int r = 0; r < 50; ++r) once();
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float ms;
      cudaEventElapsedTime(&ms, e0, e1);
      ms /= 50;
      std::printf("  #%d %.1f us %.0f TFLOP/s\n", i, ms * 1e3, flop / (ms * 1e-3) / 1e12);
    }
    CK(cudaGetLastError());
  }
  return 0;
}
