// For the declared-kernel GPU tests of "redraw": y = 2 x + p, where the probe also tells apart the
// inputs it is given. Its first launch in the process (the check) records a hash of x and p;
// a later launch that sees the same inputs, or a p that is not a permutation of 0 .. n - 1,
// spins for about 100 us. With x and p redrawn before every rep, a timed rep is fast; without,
// slow. The reference has no such state.
__device__ unsigned long long probe_first;

extern "C" __global__ void redraw_probe(const float *x, const int *p, float *y, int n)
{
    __shared__ unsigned seen[32]; // n <= 1024
    __shared__ unsigned long long hash;
    __shared__ int valid, slow;
    for (int w = threadIdx.x; w < 32; w += blockDim.x)
        seen[w] = 0;
    if (threadIdx.x == 0) {
        hash = 0;
        valid = n <= 1024;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < n && i < 1024; i += blockDim.x) {
        const int v = p[i];
        unsigned long long m =
            ((unsigned long long)__float_as_uint(x[i]) << 32 | (unsigned)v) * 0x9e3779b97f4a7c15ull +
            (unsigned long long)i;
        m ^= m >> 29;
        m *= 0xbf58476d1ce4e5b9ull;
        m ^= m >> 32;
        atomicAdd(&hash, m);
        if (v < 0 || v >= n || ((atomicOr(&seen[v >> 5], 1u << (v & 31)) >> (v & 31)) & 1u))
            valid = 0;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned long long h = hash | 1ull, first = atomicCAS(&probe_first, 0ull, h);
        slow = !valid || first == 0ull || first == h;
    }
    __syncthreads();
    if (slow) {
        const long long t0 = clock64();
        while (clock64() - t0 < 200000)
            ;
    }
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        y[i] = 2.0f * x[i] + (float)p[i];
}

extern "C" __global__ void redraw_ref(const float *x, const int *p, float *y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = 2.0f * x[i] + (float)p[i];
}
