// The `slice` baseline's batched GEMV (out[g] = op(M[g]) x[g], fp16 in and out, fp32 compute) by
// three cuBLAS calls: (a) cublasGemmStridedBatchedEx with n = 1 (what tune calls), (b) the same
// product as a 1 x n row (m = 1, operands swapped), (c) cublasHSHgemvStridedBatched. Median of 30
// event-timed reps, the L2 flushed before each (a 256 MiB memset).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#define CK(x) do { auto e = (x); if ((int)e != 0) { printf("%s: error %d\n", #x, (int)e); exit(1); } } while (0)
struct S { const char *op; int trans; long long g, n, k, kp; };
int main()
{
    std::vector<S> v;
    for (int g : {256, 1024, 4096}) for (int k : {64, 128, 256, 512}) v.push_back({"step3", 0, g, 128, k, 1024});
    for (int g : {32, 256, 1024}) for (int k : {16, 64}) for (int n : {1024, 16384}) v.push_back({"step1", 1, g, n, k, 128});
    for (int g : {32, 1024}) for (int kp : {1024, 16384}) for (int n : {64, 512}) v.push_back({"step2", 2, g, n, 128, kp});
    cublasHandle_t h; CK(cublasCreate(&h));
    void *flush; CK(cudaMalloc(&flush, 256 << 20));
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    printf("%-6s %5s %6s %4s %6s | %9s %9s %9s (us)\n", "op", "g", "n", "k", "k_pre", "gemmEx", "swapped", "gemvHSH");
    for (auto &s : v) {
        // M per g: step3 row-major B (k_pre x n): col-major n x k_pre, lda n, op N (first k columns);
        // step1 B^T (n x k_pre) row-major: col-major k_pre x n, lda k_pre, op T (first k rows);
        // step2 B^T (n_pre x k) row-major: col-major k x n_pre, lda k, op T (first n columns)
        long long lda, sm, K = s.k, rows = s.n; int t;
        if (s.trans == 0) { lda = s.n; sm = s.kp * s.n; t = 0; }
        else if (s.trans == 1) { lda = s.kp; sm = s.n * s.kp; t = 1; }
        else { lda = s.k; sm = s.kp * s.k; t = 1; }
        long long sx = s.trans == 2 ? s.k : s.kp;
        half *M, *x, *y;
        CK(cudaMalloc(&M, (size_t)(s.g * sm) * 2)); CK(cudaMalloc(&x, (size_t)(s.g * sx) * 2));
        CK(cudaMalloc(&y, (size_t)(s.g * rows) * 2));
        CK(cudaMemset(M, 0x3c, (size_t)(s.g * sm) * 2)); CK(cudaMemset(x, 0x3c, (size_t)(s.g * sx) * 2));
        float r[3];
        for (int var = 0; var < 3; var++) {
            std::vector<float> ts;
            for (int rep = 0; rep < 33; rep++) {
                CK(cudaMemsetAsync(flush, rep, 256 << 20));
                CK(cudaEventRecord(a));
                const float al = 1.f, be = 0.f;
                if (var == 0)
                    CK(cublasGemmStridedBatchedEx(h, t ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, (int)rows, 1, (int)K, &al, M, CUDA_R_16F, (int)lda, sm, x, CUDA_R_16F, (int)K, sx, &be, y, CUDA_R_16F, (int)rows, rows, (int)s.g, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
                else if (var == 1)
                    CK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, t ? CUBLAS_OP_N : CUBLAS_OP_T, 1, (int)rows, (int)K, &al, x, CUDA_R_16F, 1, sx, M, CUDA_R_16F, (int)lda, sm, &be, y, CUDA_R_16F, 1, rows, (int)s.g, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
                else
                    CK(cublasHSHgemvStridedBatched(h, t ? CUBLAS_OP_T : CUBLAS_OP_N, t ? (int)K : (int)rows, t ? (int)rows : (int)K, &al, M, (int)lda, sm, x, 1, sx, &be, y, 1, rows, (int)s.g));
                CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
                float ms; CK(cudaEventElapsedTime(&ms, a, b));
                if (rep >= 3) ts.push_back(ms * 1e3f);
            }
            std::sort(ts.begin(), ts.end()); r[var] = ts[ts.size() / 2];
        }
        printf("%-6s %5lld %6lld %4lld %6lld | %9.1f %9.1f %9.1f\n", s.op, s.g, s.n, s.k, s.kp, r[0], r[1], r[2]);
        cudaFree(M); cudaFree(x); cudaFree(y);
    }
    return 0;
}
