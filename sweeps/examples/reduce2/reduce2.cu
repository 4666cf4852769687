// A float32 sum in two launches, as in Kernel Tuner's reduction example
// (https://github.com/KernelTuner/kernel_tuner, examples/cuda/reduction.py): the first launch
// writes one partial sum per block (BLOCKS blocks stride over the input, so the number of
// partials is a parameter), the second sums the partials in one block. The knobs are template
// arguments: THREADS of the first launch, FINAL of the second; the number of blocks is a
// launch dimension and a scalar argument.

// The sum of a block's values, in shared memory (THREADS a power of two).
template <int THREADS> __device__ float block_total(float v)
{
    __shared__ float s[THREADS];
    s[threadIdx.x] = v;
    __syncthreads();
#pragma unroll
    for (int w = THREADS / 2; w > 0; w /= 2) {
        if (threadIdx.x < w)
            s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    return s[0];
}

template <int THREADS>
__global__ void __launch_bounds__(THREADS)
    partial_sums(const float *__restrict__ x, float *__restrict__ partial, int n)
{
    float v = 0.0f;
    for (long long i = (long long)blockIdx.x * THREADS + threadIdx.x; i < n;
         i += (long long)gridDim.x * THREADS)
        v += x[i];
    const float sum = block_total<THREADS>(v);
    if (threadIdx.x == 0)
        partial[blockIdx.x] = sum;
}

template <int FINAL>
__global__ void __launch_bounds__(FINAL)
    final_sum(const float *__restrict__ partial, float *__restrict__ total, int parts)
{
    float v = 0.0f;
    for (int i = threadIdx.x; i < parts; i += FINAL)
        v += partial[i];
    const float sum = block_total<FINAL>(v);
    if (threadIdx.x == 0)
        total[0] = sum;
}

// The reference of the whole sum: one block, each thread's share summed in double.
extern "C" __global__ void sum_ref(const float *__restrict__ x, float *__restrict__ total, int n)
{
    __shared__ double s[1024];
    double v = 0.0;
    for (long long i = threadIdx.x; i < n; i += blockDim.x)
        v += x[i];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w)
            s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        total[0] = (float)s[0];
}

// The reference of the partial sums (partials.json): block b's partial, the same elements the
// tuned kernel's block b sums (REF_THREADS, the macro, and the grid are the configuration's), in
// double.
#ifdef REF_THREADS
extern "C" __global__ void partial_sums_ref(const float *__restrict__ x, float *__restrict__ partial,
                                            int n)
{
    if (threadIdx.x != 0)
        return;
    double v = 0.0;
    for (long long base = (long long)blockIdx.x * REF_THREADS; base < n;
         base += (long long)gridDim.x * REF_THREADS)
        for (long long i = base; i < base + REF_THREADS && i < n; i++)
            v += x[i];
    partial[blockIdx.x] = (float)v;
}
#endif
