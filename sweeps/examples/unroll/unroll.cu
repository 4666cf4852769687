// Column sums of a rows x (4 * n4) float32 matrix held as float4: y[c] = sum over r of x[r][c].
// col_sum4 (tuned): one thread per float4 column, the loop over rows unrolled UNROLL times
// (`#pragma unroll UNROLL`, UNROLL a -D macro: 0 leaves the choice to the compiler, 1 forbids
// unrolling). col_sum_naive (reference): one thread per float column; the sweep gives it
// UNROLL = 1, since the file is compiled whole for each kernel.
extern "C" __global__ void col_sum4(const float4 *x, float4 *y, int rows, int n4)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n4)
        return;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll UNROLL
    for (int r = 0; r < rows; r++) {
        float4 v = x[(size_t)r * n4 + c];
        acc.x += v.x;
        acc.y += v.y;
        acc.z += v.z;
        acc.w += v.w;
    }
    y[c] = acc;
}

extern "C" __global__ void col_sum_naive(const float *x, float *y, int rows, int n4)
{
    int n = 4 * n4, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n)
        return;
    float acc = 0.0f;
    for (int r = 0; r < rows; r++)
        acc += x[(size_t)r * n + c];
    y[c] = acc;
}
