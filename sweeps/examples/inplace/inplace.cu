// An in-place elementwise update y = a * y + b on float32: the buffer is both read and written
// ("role": "inout"), so every timed rep must start from the same y; tune restores it before
// each rep, outside the timed region. Knobs: VEC (elements per vector load: 1, 2 or 4 floats)
// and ITEMS (vectors per thread), as -D macros; the block size is the launch's own.
#ifndef VEC
#define VEC 4
#endif
#ifndef ITEMS
#define ITEMS 1
#endif

template <int N> struct vec_of;
template <> struct vec_of<1> { typedef float type; };
template <> struct vec_of<2> { typedef float2 type; };
template <> struct vec_of<4> { typedef float4 type; };

__device__ __forceinline__ float fma1(float y, float a, float b) { return a * y + b; }

extern "C" __global__ void scale_inplace(float *__restrict__ y, float a, float b, int n)
{
    typedef typename vec_of<VEC>::type V;
    V *yv = reinterpret_cast<V *>(y); // n is a multiple of VEC (the sweep's sizes)
    const long long nv = n / VEC;
    const long long base = (long long)blockIdx.x * blockDim.x * ITEMS + threadIdx.x;
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const long long j = base + (long long)i * blockDim.x;
        if (j < nv) {
            V v = yv[j];
            float *f = reinterpret_cast<float *>(&v);
#pragma unroll
            for (int e = 0; e < VEC; e++)
                f[e] = fma1(f[e], a, b);
            yv[j] = v;
        }
    }
}

// The reference: one element per thread.
extern "C" __global__ void scale_ref(float *__restrict__ y, float a, float b, int n)
{
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * y[i] + b;
}
