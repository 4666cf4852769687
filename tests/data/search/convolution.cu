// A 2-D convolution (valid region) in the shape of Kernel Tuner's convolution example: each
// block stages its tile of the input, plus the filter's border, in shared memory; each thread
// computes tile_size_x x tile_size_y outputs. Knobs are macros (the sweep's defines).
// Device code only: compiled by NVRTC through tune, and by nvcc unchanged.

#ifndef FILTER_W
#define FILTER_W 3
#endif
#ifndef FILTER_H
#define FILTER_H 3
#endif
#ifndef BLOCK_X
#define BLOCK_X 16
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 16
#endif
#ifndef TILE_X
#define TILE_X 1
#endif
#ifndef TILE_Y
#define TILE_Y 1
#endif
#ifndef USE_PADDING
#define USE_PADDING 0
#endif
#ifndef READ_ONLY
#define READ_ONLY 0
#endif

#define SH_W (BLOCK_X * TILE_X + FILTER_W - 1)
#define SH_H (BLOCK_Y * TILE_Y + FILTER_H - 1)
#define SH_PITCH (SH_W + USE_PADDING)

#if READ_ONLY
#define LOAD(p) __ldg(p)
#else
#define LOAD(p) (*(p))
#endif

extern "C" __global__ void convolution_kernel(float *out, const float *__restrict__ in,
                                              const float *__restrict__ filter, int width,
                                              int height)
{
    __shared__ float sh[SH_H * SH_PITCH];
    const int in_w = width + FILTER_W - 1, in_h = height + FILTER_H - 1;
    const int x0 = blockIdx.x * BLOCK_X * TILE_X, y0 = blockIdx.y * BLOCK_Y * TILE_Y;
    for (int j = threadIdx.y; j < SH_H; j += BLOCK_Y)
        for (int i = threadIdx.x; i < SH_W; i += BLOCK_X) {
            int x = x0 + i, y = y0 + j;
            sh[j * SH_PITCH + i] = x < in_w && y < in_h ? LOAD(in + (size_t)y * in_w + x) : 0.0f;
        }
    __syncthreads();
    float acc[TILE_Y][TILE_X];
#pragma unroll
    for (int ty = 0; ty < TILE_Y; ty++)
#pragma unroll
        for (int tx = 0; tx < TILE_X; tx++)
            acc[ty][tx] = 0.0f;
    for (int fy = 0; fy < FILTER_H; fy++)
        for (int fx = 0; fx < FILTER_W; fx++) {
            float w = LOAD(filter + fy * FILTER_W + fx);
#pragma unroll
            for (int ty = 0; ty < TILE_Y; ty++)
#pragma unroll
                for (int tx = 0; tx < TILE_X; tx++)
                    acc[ty][tx] += w * sh[(threadIdx.y + ty * BLOCK_Y + fy) * SH_PITCH +
                                          threadIdx.x + tx * BLOCK_X + fx];
        }
#pragma unroll
    for (int ty = 0; ty < TILE_Y; ty++)
#pragma unroll
        for (int tx = 0; tx < TILE_X; tx++) {
            int x = x0 + threadIdx.x + tx * BLOCK_X, y = y0 + threadIdx.y + ty * BLOCK_Y;
            if (x < width && y < height)
                out[(size_t)y * width + x] = acc[ty][tx];
        }
}

// The reference: one output per thread, straight from global memory.
extern "C" __global__ void convolution_naive(float *out, const float *in, const float *filter,
                                             int width, int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x >= width || y >= height)
        return;
    int in_w = width + FILTER_W - 1;
    float acc = 0.0f;
    for (int fy = 0; fy < FILTER_H; fy++)
        for (int fx = 0; fx < FILTER_W; fx++)
            acc += filter[fy * FILTER_W + fx] * in[(size_t)(y + fy) * in_w + x + fx];
    out[(size_t)y * width + x] = acc;
}
