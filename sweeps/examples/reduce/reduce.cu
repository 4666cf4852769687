// A float32 sum reduction with CUB's block-wide primitive (cub::BlockReduce): each block sums
// THREADS * ITEMS consecutive elements (ITEMS loads per thread, striped so that every load is
// coalesced) and writes one partial sum per block. The knobs are template parameters, so the
// sweep names the instantiation: "entry": "block_sum<{threads}, {items}>".
#include <cub/block/block_reduce.cuh>

template <int THREADS, int ITEMS>
__global__ void __launch_bounds__(THREADS)
    block_sum(const float *__restrict__ x, float *__restrict__ partial, int n)
{
    typedef cub::BlockReduce<float, THREADS> Reduce;
    __shared__ typename Reduce::TempStorage tmp;
    const long long base = (long long)blockIdx.x * THREADS * ITEMS + threadIdx.x;
    float v = 0.0f;
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const long long j = base + (long long)i * THREADS;
        if (j < n)
            v += x[j];
    }
    const float sum = Reduce(tmp).Sum(v);
    if (threadIdx.x == 0)
        partial[blockIdx.x] = sum;
}

// The reference: the same partial sums, one thread per partial, summed in double. It reads the
// tile (THREADS * ITEMS, an argument) instead of its own block size, so its launch geometry
// depends on n only: one thread per element is at least one thread per partial.
extern "C" __global__ void block_sum_ref(const float *__restrict__ x, float *__restrict__ partial,
                                         int n, int tile)
{
    const long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long parts = (n + (long long)tile - 1) / tile;
    if (p >= parts)
        return;
    double s = 0.0;
    for (long long j = p * tile; j < (p + 1) * tile && j < n; j++)
        s += x[j];
    partial[p] = (float)s;
}
