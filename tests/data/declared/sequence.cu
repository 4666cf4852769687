// For the declared-kernel GPU tests of "launches": a method of two launches, t = 2 x (t a
// scratch buffer), then y = t + 1 after a spin of about 100 us (200000 clock cycles). The check
// passes only when both ran in order; a timed rep (cold or in a graph) takes the spin only when
// the second launch is inside the timed region.
extern "C" __global__ void seq_twice(const float *x, float *t, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        t[i] = 2.0f * x[i];
}

extern "C" __global__ void seq_spin_plus_one(const float *t, float *y, int n)
{
    const long long t0 = clock64();
    while (clock64() - t0 < 200000)
        ;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = t[i] + 1.0f;
}

extern "C" __global__ void seq_ref(const float *x, float *y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = 2.0f * x[i] + 1.0f;
}
