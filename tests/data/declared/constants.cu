// For the declared-kernel GPU tests of "constants": y = x * coef[i % 4], where tune fills the
// __constant__ coef from the sweep (all threes). The reference multiplies by the literal 3, so a
// coef left unfilled (zeros) fails the check; the baseline (its own module: -DBASELINE) reads its
// own coef, which tune fills too.
__constant__ float coef[4];

extern "C" __global__ void const_scale(const float *x, float *y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef BASELINE
    if (i < n)
        y[i] = coef[i % 4] * x[i];
#else
    if (i < n)
        y[i] = x[i] * coef[i % 4];
#endif
}

extern "C" __global__ void const_ref(const float *x, float *y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[i] * 3.0f;
}
