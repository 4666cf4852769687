// mixed_gemm_util.cu - the mixed-input GEMM family's other device code: random quantized weights,
// packing into the fused kernel's layout (and back, to check it), dequantization (the reference's
// fp32 weight, the cuBLAS baselines' fp16/bf16 weight, the "dequantize then cuBLAS" path), fp8
// inputs for the cuBLASLt baseline, and the normalised-error reduction.
// Layouts: mixed_gemm.cuh. Device code only; compiles with NVRTC and with nvcc unchanged.

#include "mixed_gemm.cuh"

#define MG_GRID_LOOP(i, n)                                                                         \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (long long)(n);       \
         i += (long long)gridDim.x * blockDim.x)

__device__ __forceinline__ unsigned long long mg_mix64(unsigned long long x)
{
    x += 0x9e3779b97f4a7c15ull; // splitmix64 finaliser
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Random bytes (each two uniform nibbles 0..15).
extern "C" __global__ void mg_fill_bytes(unsigned char *p, long long n, unsigned long long seed)
{
    MG_GRID_LOOP(i, n) p[i] = (unsigned char)(mg_mix64(seed ^ mg_mix64((unsigned long long)i)) >> 32);
}

// Random zero points 0..15, one per byte.
extern "C" __global__ void mg_fill_zeros(unsigned char *p, long long n, unsigned long long seed)
{
    MG_GRID_LOOP(i, n) p[i] = (unsigned char)(mg_mix64(seed ^ mg_mix64((unsigned long long)i)) >> 60);
}

// Random positive scales in [lo, 2 lo).
template <typename T> __global__ void mg_fill_scales(T *p, long long n, unsigned long long seed, float lo)
{
    MG_GRID_LOOP(i, n)
    {
        const float u = (float)(mg_mix64(seed ^ mg_mix64((unsigned long long)i)) >> 40) * (1.0f / 16777216.0f);
        p[i] = from_f32<T>(lo * (1.0f + u));
    }
}

// Position of raw q[i][j] in the packed weight: the 32-bit word's index and the bit offset.
__device__ __forceinline__ void mg_packed_pos(long long i, long long j, long long n, long long &word,
                                              int &shift)
{
    const long long kk = i / 16, u = j / 64;
    const int r = (int)(i % 16), c = (int)(j % 64);
    const int tile = c / 8, g = c % 8;
    const int t = (r % 8) / 2, hi = r >= 8, odd = r & 1;
    const int lane = g * 4 + t;
    word = ((kk * (n / 64) + u) * 32 + lane) * 4 + tile / 2;
    shift = 8 * (tile & 1) + 4 * hi + 16 * odd;
}

// Packs raw q (k x n nibbles) into the fused kernel's layout: one thread per 32-bit word.
extern "C" __global__ void mg_pack_w(const unsigned char *__restrict__ q, unsigned *__restrict__ out,
                                     long long k, long long n)
{
    const long long words = k * n / 8;
    MG_GRID_LOOP(w, words)
    {
        const int jw = (int)(w % 4), lane = (int)((w / 4) % 32);
        const long long unit = w / 128;
        const long long kk = unit / (n / 64), u = unit % (n / 64);
        const int t = lane % 4, g = lane / 4;
        unsigned v = 0;
#pragma unroll
        for (int b = 0; b < 8; b++) {
            const int h = b >> 2, hi = (b >> 1) & 1, odd = b & 1; // tile 2jw + h, row 2t+odd+8hi
            const long long i = kk * 16 + 2 * t + odd + 8 * hi;
            const long long j = u * 64 + (2 * jw + h) * 8 + g;
            v |= mg_raw_q(q, n / 2, i, j) << (8 * h + 4 * hi + 16 * odd);
        }
        out[w] = v;
    }
}

// Unpacks the packed weight back into raw q (the packing's round-trip check): one thread per byte.
extern "C" __global__ void mg_unpack_w(const unsigned *__restrict__ packed, unsigned char *__restrict__ q,
                                       long long k, long long n)
{
    const long long bytes = k * n / 2;
    MG_GRID_LOOP(b, bytes)
    {
        const long long i = b / (n / 2), j = (b % (n / 2)) * 2;
        unsigned v = 0;
#pragma unroll
        for (int e = 0; e < 2; e++) {
            long long word;
            int shift;
            mg_packed_pos(i, j + e, n, word, shift);
            v |= ((packed[word] >> shift) & 0xfu) << (4 * e);
        }
        q[b] = (unsigned char)v;
    }
}

// Permutes scales (and turns zero points into MAGIC + z of T) for the fused kernel: within every 64
// columns, packed column 8g + t holds raw column 8t + g. z may be NULL (symmetric).
template <typename T>
__global__ void mg_pack_sz(const T *__restrict__ s, const unsigned char *__restrict__ z,
                           T *__restrict__ ps, T *__restrict__ pz, long long groups, long long n)
{
    MG_GRID_LOOP(i, groups * n)
    {
        const long long row = i / n, pc = i % n, base = pc - pc % 64;
        const int c = (int)(pc % 64), g = c / 8, t = c % 8;
        const long long src = row * n + base + 8 * t + g;
        ps[i] = s[src];
        if (z)
            pz[i] = from_f32<T>(mg_type<T>::MAGIC_F + (float)z[src]);
    }
}

// out[i][j] = (q[i][j] - z) * s[i / G][j] from the raw layouts, in fp32 (the reference) or T (the
// cuBLAS baselines' weight: rounded like the fused kernel's dequantization). z NULL: z = 8.
template <typename TS, typename TO>
__global__ void mg_dequant_raw(const unsigned char *__restrict__ q, const TS *__restrict__ s,
                               const unsigned char *__restrict__ z, TO *__restrict__ out, long long k,
                               long long n, long long group)
{
    MG_GRID_LOOP(e, k * n)
    {
        const long long i = e / n, j = e % n;
        const long long gi = (i / group) * n + j;
        const float zero = z ? (float)z[gi] : 8.0f;
        out[e] = from_f32<TO>(((float)mg_raw_q(q, n / 2, i, j) - zero) * to_f32(s[gi]));
    }
}

// The "dequantize then cuBLAS" path: the packed weight (and packed scales / zeros) to a row-major
// k x n weight of T. One warp per 16 x 64 unit: a 16-byte load per lane, the fused kernel's
// dequantization (the next unit's load in flight), a shuffle that pairs adjacent columns, 32-bit stores into a shared-memory tile,
// and 16-byte row stores (128 contiguous bytes per row).
template <typename T, int ZP>
__global__ void __launch_bounds__(256)
    mg_dequant_packed(const uint4 *__restrict__ Wp, const T *__restrict__ S, const T *__restrict__ Z,
                      T *__restrict__ out, long long k, long long n, int group)
{
    __shared__ __align__(16) unsigned tile_w[8][16][36]; // 64 columns + 8 of padding, as pairs
    const int lane = threadIdx.x & 31, wib = threadIdx.x >> 5;
    const int g = lane >> 2, tq = lane & 3;
    const long long units = (k / 16) * (n / 64);
    const long long stride = gridDim.x * 8LL;
    long long unit = blockIdx.x * 8LL + wib;
    uint4 w_next = unit < units ? Wp[unit * 32 + lane] : make_uint4(0, 0, 0, 0);
    for (; unit < units; unit += stride) {
        const long long kk = unit / (n / 64), u = unit % (n / 64);
        const uint4 w = w_next; // the next unit's weights load while this one is dequantized
        if (unit + stride < units)
            w_next = Wp[(unit + stride) * 32 + lane];
        const long long srow = (kk * 16) / group;
        const uint4 sv = *reinterpret_cast<const uint4 *>(S + srow * n + u * 64 + g * 8);
        uint4 zv = make_uint4(0, 0, 0, 0);
        if (ZP)
            zv = *reinterpret_cast<const uint4 *>(Z + srow * n + u * 64 + g * 8);
        const unsigned wv[4] = {w.x, w.y, w.z, w.w}, s4[4] = {sv.x, sv.y, sv.z, sv.w},
                       z4[4] = {zv.x, zv.y, zv.z, zv.w};
#pragma unroll
        for (int t = 0; t < 8; t++) {
            // b0: rows 2tq, 2tq + 1 of column 8t + g; b1: rows 2tq + 8, 2tq + 9
            unsigned b0, b1;
            mg_dequant_tile<T, ZP>(wv, s4, z4, t, b0, b1);
            const unsigned p0 = __shfl_xor_sync(0xffffffffu, b0, 4); // column 8t + (g ^ 1)
            const unsigned p1 = __shfl_xor_sync(0xffffffffu, b1, 4);
            const int c2 = (t * 8 + (g & ~1)) / 2; // the column pair, as a 32-bit index
            if ((g & 1) == 0) { // even column: the first row of each register pair
                tile_w[wib][2 * tq][c2] = __byte_perm(b0, p0, 0x5410);
                tile_w[wib][2 * tq + 8][c2] = __byte_perm(b1, p1, 0x5410);
            } else {            // odd column: the second row
                tile_w[wib][2 * tq + 1][c2] = __byte_perm(p0, b0, 0x7632);
                tile_w[wib][2 * tq + 9][c2] = __byte_perm(p1, b1, 0x7632);
            }
        }
        __syncwarp();
#pragma unroll
        for (int p = 0; p < 4; p++) { // 16 rows x 128 bytes: 4 x 16 bytes per lane
            const int idx = p * 32 + lane, r = idx / 8, c8 = (idx % 8) * 8;
            const uint4 v = *reinterpret_cast<const uint4 *>(&tile_w[wib][r][c8 / 2]);
            *reinterpret_cast<uint4 *>(out + (kk * 16 + r) * n + u * 64 + c8) = v;
        }
        __syncwarp();
    }
}

// XOR of n 16-byte words from p, this thread's share of a grid-stride pass with UNROLL
// independent 16-byte loads in flight per thread.
template <int UNROLL> __device__ __forceinline__ unsigned mg_stream_xor(const uint4 *__restrict__ p, long long n)
{
    const long long stride = (long long)gridDim.x * blockDim.x * UNROLL;
    unsigned acc = 0;
    for (long long i = (long long)blockIdx.x * blockDim.x * UNROLL + threadIdx.x; i < n; i += stride) {
        raw_vec<16> v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            if (i + (long long)u * blockDim.x < n)
                ld_nc(v[u], p + i + (long long)u * blockDim.x);
            else
                v[u].w[0] = v[u].w[1] = v[u].w[2] = v[u].w[3] = 0;
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            acc ^= v[u].w[0] ^ v[u].w[1] ^ v[u].w[2] ^ v[u].w[3];
    }
    return acc;
}

// The `stream` method: reads the packed weight, the permuted scales and the zero points once
// (what every W4A16 kernel must read) and folds them into one XOR word per block, out[block]
// (no atomics: thousands on one address would serialise), so no load can be skipped; the check
// compares the XOR of out[] with the host's XOR of the same bytes. Its time is the practical
// floor of a W4A16 GEMM on the shape. nz = 0 without zero points.
template <int UNROLL>
__global__ void __launch_bounds__(256)
    mg_stream(const uint4 *__restrict__ w, long long nw, const uint4 *__restrict__ s, long long ns,
              const uint4 *__restrict__ z, long long nz, unsigned *__restrict__ out)
{
    unsigned acc = mg_stream_xor<UNROLL>(w, nw) ^ mg_stream_xor<UNROLL>(s, ns);
    if (nz > 0)
        acc ^= mg_stream_xor<UNROLL>(z, nz);
    __shared__ unsigned warps[8];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0)
        warps[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < 8; w++)
            acc ^= warps[w];
        out[blockIdx.x] = acc;
    }
}

__device__ __forceinline__ unsigned short mg_to_e4m3x2(float hi, float lo)
{
    unsigned short d;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
    return d;
}

// fp8 e4m3 of the dequantized weight times inv_scale, transposed: out[j][i]
// (n x k, row-major), as cuBLASLt's fp8 "TN" GEMM wants it. One thread per pair of rows i.
template <typename TS>
__global__ void mg_weight_fp8(const unsigned char *__restrict__ q, const TS *__restrict__ s,
                              const unsigned char *__restrict__ z, unsigned short *__restrict__ out,
                              long long k, long long n, long long group, float inv_scale)
{
    MG_GRID_LOOP(e, k * n / 2)
    {
        const long long j = e / (k / 2), i = (e % (k / 2)) * 2;
        float v[2];
#pragma unroll
        for (int d = 0; d < 2; d++) {
            const long long gi = ((i + d) / group) * n + j;
            const float zero = z ? (float)z[gi] : 8.0f;
            v[d] = ((float)mg_raw_q(q, n / 2, i + d, j) - zero) * to_f32(s[gi]) * inv_scale;
        }
        out[e] = mg_to_e4m3x2(v[1], v[0]);
    }
}

// fp8 e4m3 of x * inv_scale (pairs), and fp32 of x, for the fp8 baseline and the reference.
template <typename T>
__global__ void mg_x_fp8(const T *__restrict__ x, unsigned short *__restrict__ out, long long pairs,
                         float inv_scale)
{
    MG_GRID_LOOP(e, pairs)
    out[e] = mg_to_e4m3x2(to_f32(x[2 * e + 1]) * inv_scale, to_f32(x[2 * e]) * inv_scale);
}
template <typename T> __global__ void mg_to_f32(const T *__restrict__ x, float *__restrict__ out, long long n)
{
    MG_GRID_LOOP(e, n) out[e] = to_f32(x[e]);
}

// sums[0] += sum (y - ref)^2, sums[1] += sum ref^2, sums[2] += count of non-finite y.
template <typename T>
__global__ void mg_error(const T *__restrict__ y, const float *__restrict__ ref, long long n,
                         double *__restrict__ sums)
{
    double d2 = 0, r2 = 0, bad = 0;
    MG_GRID_LOOP(e, n)
    {
        const float v = to_f32(y[e]), r = ref[e];
        if (!(fabsf(v) <= 3.402823466e38f))
            bad += 1;
        else
            d2 += (double)(v - r) * (v - r);
        r2 += (double)r * r;
    }
    for (int o = 16; o > 0; o >>= 1) {
        d2 += __shfl_down_sync(0xffffffffu, d2, o);
        r2 += __shfl_down_sync(0xffffffffu, r2, o);
        bad += __shfl_down_sync(0xffffffffu, bad, o);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(sums, d2);
        atomicAdd(sums + 1, r2);
        atomicAdd(sums + 2, bad);
    }
}
