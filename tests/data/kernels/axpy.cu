// y = a x + y (float32), for the declared-kernel tests: axpy<THREADS> and axpy_ref.
template <int THREADS> __global__ void axpy(const float *x, float *y, float a, long long n)
{
    long long i = (long long)blockIdx.x * THREADS + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

extern "C" __global__ void axpy_ref(const float *x, float *y, float a, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
