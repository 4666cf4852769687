// A 2-D convolution whose filter lives in constant memory, as in Kernel Tuner's convolution
// example (van Werkhoven, https://github.com/KernelTuner/kernel_tuner): the host fills d_filter
// (the sweep's "constants"; Kernel Tuner's cmem_args), every thread of a warp reads the same
// filter element at once, which the constant cache broadcasts. The input is padded: an n x n
// output reads (n + FW - 1) x (n + FW - 1) inputs. Knobs (macros): the block's shape BLOCK_X x
// BLOCK_Y and TILE_Y, the output rows each thread computes; FW, the filter's width, is a problem
// axis.
#ifndef FW
#define FW 7
#endif
#ifndef BLOCK_X
#define BLOCK_X 32
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 4
#endif
#ifndef TILE_Y
#define TILE_Y 1
#endif

__constant__ float d_filter[FW * FW];

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
    convolution(float *__restrict__ out, const float *__restrict__ in, int n)
{
    const int x = blockIdx.x * BLOCK_X + threadIdx.x;
    const int iw = n + FW - 1;
    if (x >= n)
        return;
#pragma unroll
    for (int t = 0; t < TILE_Y; t++) {
        const int y = (blockIdx.y * TILE_Y + t) * BLOCK_Y + threadIdx.y;
        if (y >= n)
            return;
        float s = 0.0f;
        for (int i = 0; i < FW; i++)
#pragma unroll
            for (int j = 0; j < FW; j++)
                s += in[(long long)(y + i) * iw + x + j] * d_filter[i * FW + j];
        out[(long long)y * n + x] = s;
    }
}

// The reference: one thread per output, summed in double. Its module has a d_filter of its own,
// which tune fills with the same values.
extern "C" __global__ void convolution_naive(float *__restrict__ out, const float *__restrict__ in,
                                             int n)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x >= n)
        return;
    double s = 0.0;
    for (int i = 0; i < FW; i++)
        for (int j = 0; j < FW; j++)
            s += (double)in[(long long)(y + i) * (n + FW - 1) + x + j] * d_filter[i * FW + j];
    out[(long long)y * n + x] = (float)s;
}
