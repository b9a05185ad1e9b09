// gemm_bias_grad.cu: times cuBLASLt's top heuristic algorithms for BERT-base's
// weight-gradient GEMMs (dW = X^T dY, fp16 operands and output, f32 accumulation,
// [k, m] and [k, n] row-major), plain and with the BGRADB bias-gradient epilogue
// (fp16 and f32 bias), on random data. It decided ls2-fuse's choice of a row
// kernel's column sum over cuBLASLt's BGRADB (bench/RESULTS.md, 2026-12-01).
// Build (CUDA toolkit): nvcc -O2 -arch=sm_90 -o gemm_bias_grad bench/cuda/gemm_bias_grad.cu -lcublasLt
// Run on the GPU: ./gemm_bias_grad   (prints us and TFLOP/s per algorithm)
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>
#include <algorithm>
#define CK(x) do { auto e = (x); if (e != 0) { std::printf("fail %s: %d line %d\n", #x, (int)e, __LINE__); return 1; } } while (0)
int main() {
  cublasLtHandle_t h; CK(cublasLtCreate(&h));
  size_t wsBytes = 32u << 20; void *ws; CK(cudaMalloc(&ws, wsBytes));
  struct S { int m, n, k; } shapes[] = {{768, 3072, 16384}, {3072, 768, 16384}, {768, 768, 16384}, {2304, 768, 16384}};
  for (auto s : shapes) {
    // A = dY [k, m], B = X [k, n] row-major. cuBLASLt is column-major: D (n x m) =
    // op_N(B seen as n x k) * op_T(A seen as m x k), i.e. the row-major [m, n] dW;
    // BGRADB sums op(A) over k: the column sums of dY, as ls2c's runtime maps
    // its bias_grad_a (runtime/lib/Execution/GemmRunner.cpp).
    size_t ab = (size_t)s.k * s.m * 2, bb = (size_t)s.k * s.n * 2, cb = (size_t)s.m * s.n * 2;
    void *A, *B, *C; CK(cudaMalloc(&A, ab)); CK(cudaMalloc(&B, bb)); CK(cudaMalloc(&C, cb));
    { std::vector<unsigned short> h(std::max(ab, bb) / 2); unsigned x = 12345; for (auto &v : h) { x = x * 1664525u + 1013904223u; v = 0x3000 + ((x >> 16) & 0x0fff) | ((x & 0x100) ? 0x8000 : 0); } cudaMemcpy(A, h.data(), ab, cudaMemcpyHostToDevice); cudaMemcpy(B, h.data(), bb, cudaMemcpyHostToDevice); }
    cublasLtMatmulDesc_t op; CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t tA = CUBLAS_OP_N, tB = CUBLAS_OP_T;
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &tA, sizeof(tA)));
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tB, sizeof(tB)));
    cublasLtMatrixLayout_t la, lb, lc;
    CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, s.n, s.k, s.n));
    CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, s.m, s.k, s.m));
    CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16F, s.n, s.m, s.n));
    for (int ep = 0; ep < 3; ++ep) {
    void *bg = nullptr; cudaMalloc(&bg, (size_t)s.m * 4);
    if (ep > 0) {
      cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BGRADB;
      CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
      CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bg, sizeof(bg)));
      cudaDataType_t bt = ep == 1 ? CUDA_R_16F : CUDA_R_32F;
      CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof(bt)));
    }
    cublasLtMatmulPreference_t pref; CK(cublasLtMatmulPreferenceCreate(&pref));
    CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsBytes, sizeof(wsBytes)));
    cublasLtMatmulHeuristicResult_t res[32]; int found = 0;
    if (cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, lc, lc, pref, 32, res, &found) != 0) found = 0;
    float alpha = 1, beta = 0;
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    double flop = 2.0 * s.m * s.n * s.k;
    std::printf("shape %dx%dx%d epilogue %s: %d candidates\n", s.m, s.n, s.k, ep == 0 ? "none" : ep == 1 ? "BGRADB f16" : "BGRADB f32", found);
    for (int i = 0; i < std::min(found, 3); ++i) {
      if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
      auto runOnce = [&]() { return cublasLtMatmul(h, op, &alpha, B, la, A, lb, &beta, C, lc, C, lc, &res[i].algo, ws, res[i].workspaceSize, 0); };
      if (runOnce() != CUBLAS_STATUS_SUCCESS) { std::printf("  #%d failed\n", i); continue; }
      for (int w = 0; w < 3; ++w) runOnce();
      cudaEventRecord(e0);
      for (int r = 0; r < 20; ++r) runOnce();
      cudaEventRecord(e1); cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1); ms /= 20;
      std::printf("  #%d %.1f us %.0f TFLOP/s waves %.2f ws %zu\n", i, ms * 1e3, flop / (ms * 1e-3) / 1e12, res[i].wavesCount, res[i].workspaceSize);
    }
    cudaFree(bg); }
    cudaFree(A); cudaFree(B); cudaFree(C);
  }
  return 0;
}
