// Which DRAM traffic does a read of one 32-byte sector in every `stride` bytes cause?
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)
__global__ void strided(const int *__restrict__ p, long long loads, int stride_words, int *sink)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long step = (long long)gridDim.x * blockDim.x;
    int acc = 0;
    for (; i + 7 * step < loads; i += 8 * step) {
        int v[8];
#pragma unroll
        for (int u = 0; u < 8; u++) v[u] = __ldcs(p + (i + u * step) * stride_words);
#pragma unroll
        for (int u = 0; u < 8; u++) acc ^= v[u];
    }
    for (; i < loads; i += step) acc ^= __ldcs(p + i * stride_words);
    if (acc == 0x12345678) *sink = acc;
}
int main(int argc, char **argv)
{
    size_t bytes = 1ull << 30;
    int *p, *sink;
    CK(cudaMalloc(&p, bytes)); CK(cudaMalloc(&sink, 4)); CK(cudaMemset(p, 1, bytes));
    int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    size_t lim = 0; CK(cudaDeviceGetLimit(&lim, cudaLimitMaxL2FetchGranularity));
    printf("cudaLimitMaxL2FetchGranularity default: %zu\n", lim);
    int grans[] = {0, 32, 64, 128};
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    for (int gi = 0; gi < 4; gi++) {
        if (grans[gi]) { CK(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, grans[gi])); }
        CK(cudaDeviceGetLimit(&lim, cudaLimitMaxL2FetchGranularity));
        for (int stride = 32; stride <= 256; stride *= 2) {
            long long loads = bytes / stride;
            float best = 1e9;
            for (int r = 0; r < 5; r++) {
                CK(cudaEventRecord(a));
                strided<<<sms * 8, 256>>>(p, loads, stride / 4, sink);
                CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
                float ms; CK(cudaEventElapsedTime(&ms, a, b)); if (ms < best) best = ms;
            }
            printf("set %3d got %3zu stride %3d B: %8.1f us, %7.1f GB/s of sectors read, %7.1f GB/s of the span\n",
                   grans[gi], lim, stride, best * 1e3, loads * 32.0 / best / 1e6, bytes / (double)best / 1e6);
        }
    }
    return 0;
}
