// common.cu - the harness's own device code: random fills, fresh indices, the read-bandwidth,
// DRAM-latency and random-sector probes.
// Device code only; compiles with NVRTC and with nvcc unchanged.

#include "common.cuh"

__device__ __forceinline__ unsigned long long tune_mix64(unsigned long long x)
{
    // splitmix64 finaliser: a good 64-bit hash of a counter.
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// p[i] = uniform in [-1, 1), never a run of zeros.
template <typename T>
__global__ void tune_fill_uniform(T *p, unsigned long long n, unsigned long long seed)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const unsigned long long h = tune_mix64(seed ^ tune_mix64(i));
        const float u = (float)(h >> 40) * (1.0f / 16777216.0f); // [0, 1)
        p[i] = from_f32<T>(2.0f * u - 1.0f);
    }
}

// p[i] = uniform integer in [0, range), drawn with replacement (as torch.randint).
__global__ void tune_fill_indices(int *p, unsigned long long n, unsigned long long seed, int range)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const unsigned long long h = tune_mix64(seed ^ tune_mix64(i));
        p[i] = (int)((h >> 32) * (unsigned long long)range >> 32);
    }
}

// Reads n 16-byte words once and writes one word per block only if an impossible value shows up,
// so the loads cannot be optimised away and almost nothing is written.
__global__ void tune_read_probe(const uint4 *__restrict__ p, unsigned long long n, unsigned *sink)
{
    unsigned acc = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        raw_vec<16> v;
        ld_nc(v, p + i);
        acc ^= v.w[0] ^ v.w[1] ^ v.w[2] ^ v.w[3];
    }
    if (acc == 0x9e3779b9u)
        sink[blockIdx.x] = acc;
}

// One thread follows `steps` loads at pseudo-random words of p (mask + 1 words, a power of two);
// each address depends on the value loaded before it, so no two loads overlap and, with the L2
// flushed, every step costs one DRAM round trip: the chain term of the time model
// (docs/roofline.md). Writes only if an impossible value shows up.
__global__ void tune_chase_probe(const unsigned *__restrict__ p, unsigned long long mask, int steps,
                                 unsigned *sink)
{
    unsigned long long i = 0x2545f4914f6cdd1dull & mask;
    unsigned acc = 0;
    for (int s = 0; s < steps; s++) {
        raw_vec<4> v;
        ld_nc(v, p + i);
        acc += v.w;
        i = ((i ^ v.w) * 0x9e3779b97f4a7c15ull >> 20) & mask;
    }
    if (acc == 0x9e3779b9u)
        sink[0] = acc;
}

// Every thread reads 8 x iters random, independent 32-byte sectors of p (`sectors` of them, 8
// words each): a 64-bit LCG per thread, which no load feeds, gives each address from its top 32
// bits, so 8 loads are in flight per thread and each one fetches a sector of its own; one 4-byte
// word of each (the L2 and DRAM move the sector). 256 threads, 8 blocks per SM (32 registers at
// most): a grid of SMs x 8 blocks fills the GPU in one wave. The random-sector rate of the time
// model (docs/roofline.md): 32 bytes x loads / time. Writes only if an impossible value shows up.
__global__ void __launch_bounds__(256, 8)
    tune_sector_probe(const unsigned *__restrict__ p, unsigned sectors, int iters,
                      unsigned long long seed, unsigned *sink)
{
    const unsigned long long tid = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    unsigned long long x = tune_mix64(seed ^ tune_mix64(tid));
    unsigned acc = 0;
    for (int it = 0; it < iters; it++) {
        raw_vec<4> v[8];
#pragma unroll
        for (int u = 0; u < 8; u++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull; // Knuth's MMIX LCG
            ld_nc(v[u], p + 8ull * __umulhi((unsigned)(x >> 32), sectors));
        }
#pragma unroll
        for (int u = 0; u < 8; u++)
            acc ^= v[u].w;
    }
    if (acc == 0x9e3779b9u)
        sink[blockIdx.x] = acc;
}

// One 4-byte word in every `stride_words` words of p, `loads` of them, 8 independent loads in
// flight per thread over a grid-stride loop: with a stride of 32 bytes every sector of the span is
// read, with 64 one sector in two. What DRAM moves for each depends on the L2's fetch granularity
// (the sector, or 64 or 128 bytes: cudaLimitMaxL2FetchGranularity), which `tune calibrate`
// finds from the times of strides 32 to 256 (docs/roofline.md). Writes only if an impossible
// value shows up.
__global__ void tune_stride_probe(const unsigned *__restrict__ p, unsigned long long loads,
                                  int stride_words, unsigned *sink)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    unsigned acc = 0;
    for (; i + 7 * step < loads; i += 8 * step) {
        raw_vec<4> v[8];
#pragma unroll
        for (int u = 0; u < 8; u++)
            ld_nc(v[u], p + (i + u * step) * stride_words);
#pragma unroll
        for (int u = 0; u < 8; u++)
            acc ^= v[u].w;
    }
    for (; i < loads; i += step) {
        raw_vec<4> v;
        ld_nc(v, p + i * stride_words);
        acc ^= v.w;
    }
    if (acc == 0x9e3779b9u)
        sink[blockIdx.x] = acc;
}

// p[i] = i % period: the identity gather (row t of each g picks row t), which makes the gather
// ops compute what the `slice` baseline computes, so that baseline can be checked too.
__global__ void tune_fill_iota(int *p, unsigned long long n, int period)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        p[i] = (int)(i % (unsigned long long)period);
}

// Element i of a keyed permutation of 0 .. n - 1 (n <= 2^31): a four-round Feistel network over
// the smallest even number of bits that holds n, walked along its cycle until the value falls
// below n (a bijection of [0, 2^bits) restricted to [0, n) is one of [0, n); at most 4n values).
__device__ __forceinline__ unsigned long long tune_permute(unsigned long long i,
                                                           unsigned long long n,
                                                           unsigned long long seed)
{
    int half = 1;
    while ((1ull << (2 * half)) < n)
        half++;
    const unsigned long long mask = (1ull << half) - 1;
    unsigned long long x = i;
    do {
        unsigned long long l = x >> half, r = x & mask;
        for (int round = 0; round < 4; round++) {
            const unsigned long long f = tune_mix64(seed ^ tune_mix64(r + 0x100000000ull * round));
            const unsigned long long t = r;
            r = l ^ (f & mask);
            l = t;
        }
        x = (l << half) | r;
    } while (x >= n);
    return x;
}

// Random inputs of kernels declared in sweep files (families/declared.c), seeded per buffer:
// kind 0: uniform in [a, b); 1: normal with mean a and standard deviation b; 2: integers in
// [a, b], inclusive, with replacement; 3: element i of a keyed permutation of 0 .. b - 1 (the
// first n values are distinct when n <= b).
template <typename T> __device__ __forceinline__ T tune_from_double(double v) { return (T)v; }
template <> __device__ __forceinline__ half_t tune_from_double<half_t>(double v)
{
    return from_f32<half_t>((float)v);
}
template <> __device__ __forceinline__ bf16_t tune_from_double<bf16_t>(double v)
{
    return from_f32<bf16_t>((float)v);
}

template <typename T>
__global__ void tune_fill_random(T *p, unsigned long long n, unsigned long long seed, int kind,
                                 double a, double b)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const unsigned long long h = tune_mix64(seed ^ tune_mix64(i));
        const double u = (double)(h >> 11) * (1.0 / 9007199254740992.0); // [0, 1)
        double v;
        if (kind == 0) {
            v = a + (b - a) * u;
        } else if (kind == 1) { // Box-Muller
            const unsigned long long h2 = tune_mix64(h);
            const float u2 = (float)(h2 >> 40) * (1.0f / 16777216.0f);
            v = a + b * (double)(sqrtf(-2.0f * logf(1.0f - (float)u)) * cospif(2.0f * u2));
        } else if (kind == 3) {
            v = (double)tune_permute(i, (unsigned long long)b, seed);
        } else {
            const unsigned long long span = (unsigned long long)(b - a) + 1ull;
            v = a + (double)(span ? h % span : h);
        }
        p[i] = tune_from_double<T>(v);
    }
}
