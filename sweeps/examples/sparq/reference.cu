// The reference of sweeps/examples/sparq/sparq.json: gm_reference<half_t, 1, 0> of
// kernels_src/gather_matmul.cu (SparQ step 3, row-major B: out[g,j] = sum_t A[g,t] B[g,I[g,t],j],
// one thread per output, fp32 accumulation) with its sum rounded to half. gm_reference writes
// fp32, but a declared reference shares the tuned kernel's arguments, so it must write the
// tuned kernel's half output buffer; the sum itself is gm_reference's (gm_reference_sum).
#include "../../../kernels_src/gather_matmul.cu"

extern "C" __global__ void gm_reference_half(const half_t *__restrict__ A,
                                             const half_t *__restrict__ B,
                                             const int *__restrict__ I, half_t *__restrict__ out,
                                             int g, int k, int kp, int n)
{
    const long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (e >= (long long)g * n)
        return;
    const float s = gm_reference_sum<half_t, 1, 0>(A, B, I, e / n, (int)(e % n), k, kp, n);
    out[e] = from_f32<half_t>(s);
}
