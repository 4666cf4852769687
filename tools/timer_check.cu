// timer_check.cu - an independent timing of tune's `slice` baseline for the timer
// agreement: the same cuBLAS call (cublasGemmStridedBatchedEx, fp16 in, fp32 compute, one
// vector per batch) timed with nothing but CUDA events around each call, the L2 flushed before
// each call by this program's own kernels (write 2 x L2, then read another 2 x L2). It shares no
// code with tune. Build: nvcc -O2 -arch=sm_90 -o timer_check timer_check.cu -lcublas
// Usage: timer_check g k_pre k n   -> prints "g k_pre k n median_us p10_us p90_us"
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        auto rc_ = (x);                                                                            \
        if ((int)rc_ != 0) {                                                                       \
            std::fprintf(stderr, "%s failed (%d) at line %d\n", #x, (int)rc_, __LINE__);          \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

__global__ void write_kernel(uint4 *p, size_t n, unsigned v)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = make_uint4(v, v, v, v);
}

__global__ void read_kernel(const uint4 *p, size_t n, unsigned *sink)
{
    unsigned acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x12345678u)
        *sink = acc;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        std::fprintf(stderr, "usage: %s g k_pre k n\n", argv[0]);
        return 2;
    }
    const int g = std::atoi(argv[1]), kp = std::atoi(argv[2]), k = std::atoi(argv[3]), n = std::atoi(argv[4]);
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    const size_t flush = 2 * (size_t)prop.l2CacheSize;
    __half *A, *B, *C;
    uint4 *fw, *fr;
    unsigned *sink;
    CHECK(cudaMalloc(&A, sizeof(__half) * (size_t)g * k));
    CHECK(cudaMalloc(&B, sizeof(__half) * (size_t)g * kp * n));
    CHECK(cudaMalloc(&C, sizeof(__half) * (size_t)g * n));
    CHECK(cudaMalloc(&fw, flush));
    CHECK(cudaMalloc(&fr, flush));
    CHECK(cudaMalloc(&sink, 4));
    CHECK(cudaMemset(A, 0x3c, sizeof(__half) * (size_t)g * k)); // 0x3c3c: 1.06 in fp16, not zero
    CHECK(cudaMemset(B, 0x3a, sizeof(__half) * (size_t)g * kp * n));
    CHECK(cudaMemset(fr, 0x11, flush));
    cublasHandle_t h;
    CHECK(cublasCreate(&h));
    const float alpha = 1.f, beta = 0.f;
    const int warmup = 10, reps = 100;
    std::vector<cudaEvent_t> ev(2 * reps);
    for (auto &e : ev)
        CHECK(cudaEventCreate(&e));
    for (int i = 0; i < warmup + reps; i++) {
        write_kernel<<<1024, 512>>>(fw, flush / 16, (unsigned)i);
        read_kernel<<<1024, 512>>>(fr, flush / 16, sink);
        if (i >= warmup)
            CHECK(cudaEventRecord(ev[2 * (i - warmup)]));
        // out (n x 1) = B_slice (n x k, column-major view of the first k rows) . A (k x 1)
        CHECK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, 1, k, &alpha, B, CUDA_R_16F, n,
                                         (long long)kp * n, A, CUDA_R_16F, k, k, &beta, C, CUDA_R_16F, n,
                                         n, g, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        if (i >= warmup)
            CHECK(cudaEventRecord(ev[2 * (i - warmup) + 1]));
    }
    CHECK(cudaDeviceSynchronize());
    std::vector<double> t(reps);
    for (int i = 0; i < reps; i++) {
        float ms;
        CHECK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
        t[i] = ms * 1e3;
    }
    std::sort(t.begin(), t.end());
    std::printf("%d %d %d %d %.3f %.3f %.3f\n", g, kp, k, n, (t[49] + t[50]) / 2, t[10], t[89]);
    return 0;
}
