// mixed_gemm.cuh - what the fused kernel and the helper kernels of the mixed-input GEMM share:
// the packed weight layout, fast int4 -> fp16/bf16 conversion, and the tensor-core wrappers.
// Device code only; compiles with NVRTC and with nvcc unchanged.
//
// Semantics (docs/mixed_gemm.md): Y[m,n] = X[m,k] . dequant(W)[k,n], dequant(W)[i,j] = (q[i,j] - z) *
// s[i/G, j], q in 0..15, z = 8 (symmetric) or a per-group zero point z[i/G, j] in 0..15.
//
// Raw (user) layouts: q is row-major k x n nibbles, two per byte along n (low nibble = even
// column); s is row-major (k/G) x n of T; z is row-major (k/G) x n bytes.
//
// Packed layout (what mg_pack writes, what mg_fused reads): the weight is cut into units of 16 rows
// x 64 columns; unit (kk, u) holds 512 bytes at ((kk * n/64) + u) * 512, and lane L of a warp
// (t = L % 4, g = L / 4) owns the 16 bytes at L * 16: four 32-bit words, word j holding the
// m16n8k16 B fragments of the unit's n8 tiles 2j and 2j+1 for that lane:
//   bits  0..3  q[2t  ][c0]   bits 16..19 q[2t+1][c0]    (tile 2j,   fragment register b0)
//   bits  4..7  q[2t+8][c0]   bits 20..23 q[2t+9][c0]    (tile 2j,   register b1)
//   bits  8..11 q[2t  ][c1]   bits 24..27 q[2t+1][c1]    (tile 2j+1, register b0)
//   bits 12..15 q[2t+8][c1]   bits 28..31 q[2t+9][c1]    (tile 2j+1, register b1)
// with rows relative to the unit, c0 = 16j + g, c1 = 16j + 8 + g. So a lane loads its B fragments
// for 8 MMAs with one 16-byte load, and (w >> 4p) & 0x000f000f puts two values in the two halves.
// Scales (and the zero points, stored as T holding MAGIC + z) are permuted within each 64 columns
// so that a lane's 8 values (columns 8t + g, t = 0..7) are 16 contiguous bytes: packed column
// 8g + t holds raw column 8t + g.
#pragma once

#include "common.cuh"
#include "ptx.cuh"

// Element traits: the magic exponent that turns a nibble into MAGIC + q exactly, and the MMA.
template <typename T> struct mg_type;
template <> struct mg_type<half_t> {
    static constexpr unsigned MAGIC2 = 0x64006400u; // 1024.0 in both halves: 1024 + q exact
    static constexpr unsigned short MAGIC = 0x6400u;
    static constexpr float MAGIC_F = 1024.0f;
    static constexpr unsigned ONE2 = 0x3c003c00u;
    static constexpr unsigned NMZ8 = 0xe408e408u; // -(MAGIC + 8) in both halves: z = 8
};
template <> struct mg_type<bf16_t> {
    static constexpr unsigned MAGIC2 = 0x43004300u; // 128.0 in both halves: 128 + q exact
    static constexpr unsigned short MAGIC = 0x4300u;
    static constexpr float MAGIC_F = 128.0f;
    static constexpr unsigned ONE2 = 0x3f803f80u;
    static constexpr unsigned NMZ8 = 0xc308c308u; // -(MAGIC + 8) in both halves: z = 8
};

__device__ __forceinline__ unsigned mg_lop3_and_or(unsigned a, unsigned b, unsigned c)
{
    unsigned d; // (a & b) | c
    asm("lop3.b32 %0, %1, %2, %3, 0xea;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

// d = a * b + c on two packed 16-bit values.
template <typename T>
__device__ __forceinline__ unsigned mg_fma2(unsigned a, unsigned b, unsigned c);
template <> __device__ __forceinline__ unsigned mg_fma2<half_t>(unsigned a, unsigned b, unsigned c)
{
    unsigned d;
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
template <> __device__ __forceinline__ unsigned mg_fma2<bf16_t>(unsigned a, unsigned b, unsigned c)
{
    unsigned d;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

// Two dequantized values from the pair at bit offset 4p of w: ((MAGIC + q) - (MAGIC + z)) * s,
// exact up to the final product's rounding. nmz2 = -(MAGIC + z) in both halves, s2 = s in both.
template <typename T>
__device__ __forceinline__ unsigned mg_dequant2(unsigned w, unsigned nmz2, unsigned s2)
{
    const unsigned v = mg_lop3_and_or(w, 0x000f000fu, mg_type<T>::MAGIC2);
    const unsigned d = mg_fma2<T>(v, mg_type<T>::ONE2, nmz2); // q - z, exact
    return mg_fma2<T>(d, s2, 0x80008000u);                    // (q - z) * s
}

// Registers b0, b1 of tile t (0..7) of a lane's 16 packed bytes wv, dequantized: (q - z) * s with
// the lane's 8 scales s4 (and, with ZP, its 8 zero points z4 stored as MAGIC + z) of the same
// columns; z = 8 without ZP (z4 unused).
template <typename T, int ZP>
__device__ __forceinline__ void mg_dequant_tile(const unsigned (&wv)[4], const unsigned (&s4)[4],
                                                const unsigned (&z4)[4], int t, unsigned &b0,
                                                unsigned &b1)
{
    const unsigned sel = (t & 1) ? 0x3232 : 0x1010; // 16-bit element t of the 8, in both halves
    const unsigned s2 = __byte_perm(s4[t >> 1], 0, sel);
    const unsigned nmz2 = ZP ? __byte_perm(z4[t >> 1], 0, sel) ^ 0x80008000u : mg_type<T>::NMZ8;
    const unsigned word = wv[t >> 1] >> ((t & 1) * 8);
    b0 = mg_dequant2<T>(word, nmz2, s2);
    b1 = mg_dequant2<T>(word >> 4, nmz2, s2);
}

// Tensor-core MMA m16n8k16, fp32 accumulation: c += a (16x16, row) . b (16x8, col).
template <typename T>
__device__ __forceinline__ void mg_mma(float (&c)[4], const unsigned (&a)[4], unsigned b0,
                                       unsigned b1);
template <>
__device__ __forceinline__ void mg_mma<half_t>(float (&c)[4], const unsigned (&a)[4], unsigned b0,
                                               unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mg_mma<bf16_t>(float (&c)[4], const unsigned (&a)[4], unsigned b0,
                                               unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mg_ldmatrix_x4(unsigned (&a)[4], const void *smem)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                 : "r"(ptx_smem_addr(smem)));
}

__device__ __forceinline__ void mg_ldmatrix_x2(unsigned (&a)[2], const void *smem)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                 : "=r"(a[0]), "=r"(a[1])
                 : "r"(ptx_smem_addr(smem)));
}

// A CUtensorMap, opaque: 128 bytes, 64-byte aligned, passed by value as a __grid_constant__.
struct __align__(64) mg_tmap {
    unsigned long long v[16];
};

// Nibble of raw q at (row i, column j); ldq = n / 2 bytes per row.
__device__ __forceinline__ unsigned mg_raw_q(const unsigned char *q, long long ldq, long long i,
                                             long long j)
{
    return (q[i * ldq + (j >> 1)] >> ((j & 1) * 4)) & 0xfu;
}

// Stores four fp32 values as T at dst (8-byte aligned).
template <typename T> __device__ __forceinline__ void mg_store4(T *dst, float4 v)
{
    const T y0 = from_f32<T>(v.x), y1 = from_f32<T>(v.y), y2 = from_f32<T>(v.z),
            y3 = from_f32<T>(v.w);
    *reinterpret_cast<uint2 *>(dst) = make_uint2((unsigned)y0.x | ((unsigned)y1.x << 16),
                                                 (unsigned)y2.x | ((unsigned)y3.x << 16));
}

// The k blocks [kb0, kb0 + L) of split blockIdx.z of gridDim.z over KB blocks: the splits differ
// by at most one block.
__device__ __forceinline__ void mg_split_range(int KB, int &kb0, int &L)
{
    const int splits = gridDim.z, z = blockIdx.z;
    kb0 = (int)((long long)z * KB / splits);
    L = (int)((long long)(z + 1) * KB / splits) - kb0;
}

// Traps when the block was given less dynamic shared memory than its layout needs: the host's
// sizing (the family's formulas) is checked on every GPU run.
__device__ __forceinline__ void mg_require_smem(unsigned bytes)
{
    unsigned dyn;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
    if (dyn < bytes)
        __trap();
}

// The end of a split-K tile, run by every thread of the last block to finish it:
// Y[m0 + r][n0 + c] = sum over p = 0 .. splits - 1 (in that order) of ws[p][m0 + r][n0 + c], for
// r < rows, c < BN, by threads tid = 0 .. NT - 1; each thread takes 4-column chunks and keeps several loads in flight (one
// chain of dependent loads per element would make the last blocks the kernel's tail).
template <typename T, int BN, int NT>
__device__ __forceinline__ void mg_splitk_sum(const float *__restrict__ ws, T *__restrict__ Y,
                                              int m, int n, int m0, int n0, int rows, int splits,
                                              int tid)
{
    constexpr int CH = BN / 4;
    for (int c = tid; c < rows * CH; c += NT) {
        const int r = c / CH, col = (c - r * CH) * 4;
        const float *src = ws + (long long)(m0 + r) * n + n0 + col;
        float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 8
        for (int p = 0; p < splits; p++) {
            const float4 v = __ldcg(reinterpret_cast<const float4 *>(src + (long long)p * m * n));
            sum.x += v.x;
            sum.y += v.y;
            sum.z += v.z;
            sum.w += v.w;
        }
        mg_store4(Y + (long long)(m0 + r) * n + n0 + col, sum);
    }
}

// A barrier of the NT threads from FIRST on: the whole block (FIRST = 0, NT = its size) or the
// consumer warpgroups of a warp-specialized block (named barrier 1; the producer never joins).
template <int NT, int FIRST> __device__ __forceinline__ void mg_bar_sync()
{
    if (FIRST == 0)
        __syncthreads();
    else
        asm volatile("bar.sync 1, %0;" ::"n"(NT) : "memory");
}

// The end of a split-K tile, called by threads FIRST .. FIRST + NT - 1 of the block once each
// has stored its share of the block's fp32 partial tile to ws: the last block of the tile to
// arrive (counted in counters[tile], which it resets for the next launch) adds the partials with
// mg_splitk_sum and writes Y; the other blocks return having done nothing more.
template <typename T, int BN, int NT, int FIRST = 0>
__device__ __forceinline__ void mg_splitk_finish(const float *__restrict__ ws, T *__restrict__ Y,
                                                 int *__restrict__ counters, int m, int n, int m0,
                                                 int n0, int rows)
{
    __shared__ int last;
    const int splits = gridDim.z, tile = blockIdx.y * gridDim.x + blockIdx.x;
    const int tid = (int)threadIdx.x - FIRST;
    __threadfence();
    mg_bar_sync<NT, FIRST>();
    if (tid == 0)
        last = atomicAdd(counters + tile, 1) == splits - 1;
    mg_bar_sync<NT, FIRST>();
    if (!last)
        return;
    __threadfence();
    mg_splitk_sum<T, BN, NT>(ws, Y, m, n, m0, n0, rows, splits, tid);
    if (tid == 0)
        counters[tile] = 0;
}
