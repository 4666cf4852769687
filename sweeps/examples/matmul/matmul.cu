// A tiled shared-memory matmul, C = A B (row-major float32), written for any tuner: its knobs
// are macros (TILE: the block's tile edge; WORK: rows of C per thread).
#ifndef TILE
#define TILE 16
#endif
#ifndef WORK
#define WORK 1
#endif

extern "C" __global__ void matmul_tiled(const float *A, const float *B, float *C, int M, int N,
                                        int K)
{
    __shared__ float As[TILE * WORK][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int col = blockIdx.x * TILE + tx;
    int row0 = blockIdx.y * TILE * WORK + ty;
    float acc[WORK];
    for (int w = 0; w < WORK; w++)
        acc[w] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        for (int w = 0; w < WORK; w++) {
            int r = row0 + w * TILE, c = k0 + tx;
            As[ty + w * TILE][tx] = r < M && c < K ? A[(size_t)r * K + c] : 0.0f;
        }
        int r = k0 + ty;
        Bs[ty][tx] = r < K && col < N ? B[(size_t)r * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; k++) {
            float b = Bs[k][tx];
            for (int w = 0; w < WORK; w++)
                acc[w] += As[ty + w * TILE][k] * b;
        }
        __syncthreads();
    }
    for (int w = 0; w < WORK; w++) {
        int r = row0 + w * TILE;
        if (r < M && col < N)
            C[(size_t)r * N + col] = acc[w];
    }
}

// One thread per element of C: the reference.
extern "C" __global__ void matmul_naive(const float *A, const float *B, float *C, int M, int N,
                                        int K)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
    if (row >= M || col >= N)
        return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++)
        acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = acc;
}
