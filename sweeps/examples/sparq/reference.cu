// The reference of sweeps/examples/sparq/sparq.json: gm_reference<half_t, 1, 0> of
// kernels_src/gather_matmul.cu (SparQ step 3, row-major B: out[g,j] = sum_t A[g,t] B[g,I[g,t],j],
// one thread per output, fp32 accumulation) with its sum rounded to half. gm_reference writes
// fp32, but a declared reference shares the tuned kernel's arguments, so it must write the
// tuned kernel's half output buffer.
#include "../../../kernels_src/common.cuh"

extern "C" __global__ void gm_reference_half(const half_t *__restrict__ A,
                                             const half_t *__restrict__ B,
                                             const int *__restrict__ I, half_t *__restrict__ out,
                                             int g, int k, int kp, int n)
{
    const long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (e >= (long long)g * n)
        return;
    const long long gi = e / n;
    const int j = (int)(e % n);
    float s = 0.f;
    for (int t = 0; t < k; t++) {
        const int r = I[gi * k + t];
        s = fmaf(to_f32(A[gi * k + t]), to_f32(B[(gi * kp + r) * (long long)n + j]), s);
    }
    out[e] = from_f32<half_t>(s);
}
