// For the declared-kernel GPU tests: y = 2 x, right (FAULT 0), with an out-of-bounds write far
// beyond y (FAULT 1: a crashed row), or wrong (FAULT 2: an invalid row).
extern "C" __global__ void twice(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
#if FAULT == 1
    y[i + (1 << 30)] = 2.0f * x[i];
#elif FAULT == 2
    y[i] = 2.0f * x[i] + (i == n / 2 ? 1.0f : 0.0f);
#else
    y[i] = 2.0f * x[i];
#endif
}

extern "C" __global__ void twice_ref(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = 2.0f * x[i];
}
