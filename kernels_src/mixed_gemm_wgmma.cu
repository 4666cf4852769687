// mixed_gemm_wgmma.cu - the mixed-input GEMM on Hopper's warpgroup MMA (sm_90a only):
// Y[m,n] = X[m,k] . dequant(W)[k,n] with int4 W in the packed layout of mixed_gemm.cuh.
// Device code only; compiles with NVRTC and with nvcc for sm_90a (wgmma, bulk copies, mbarriers).
//
// Operands are swapped as in mg_decode (and as Machete and TensorRT-LLM do for small batches): the
// weight is the 64-row A operand of wgmma.mma_async m64nNk16, sourced from registers, so each
// weight is dequantized once per block, by the one warp that owns its 16 columns, whatever m is;
// X is the B operand (N = BM rows of m), read by the tensor cores straight from shared memory.
// One producer warp fills a STAGES-deep ring: the packed weight and its scales (and zero points)
// with the bulk copy engine (cp.async.bulk, completion counted in bytes on the stage's mbarrier),
// X with 16-byte cp.async into the layout wgmma reads (K-major, no swizzle: 8-row x 16-byte core
// matrices, the two k halves of a k16 step 128 bytes apart, 8-row groups 256 bytes apart), rows
// past m zero-filled. WN consumer warpgroups, one per 64 columns, each dequantize a stage into
// registers (lop3 magic numbers, (q - z) s in T), issue its KS wgmma and, while they run,
// dequantize the next stage (two register buffers; the previous stage's slot is released once
// its wgmma have completed).
//
// Template parameters (the tile space):
//   BM       rows of m per block: the wgmma's N (8, 16, 32, 64, 128 or 256)
//   WN       consumer warpgroups along n (BN = 64 WN)
//   KS       k16 steps per stage (BK = 16 KS)
//   STAGES   depth of the ring
//   ZP       0: symmetric (z = 8); 1: per-group zero points (stored as MAGIC + z in T)
// Grid: (ceil(m / BM), n / BN, splits); split k as in mg_decode (fp32 partials in ws, summed in
// split order by the tile's last block). Requirements (checked on the host): n % BN == 0,
// k % BK == 0, G a power of two >= 32 with G % BK == 0 or BK % G == 0, or G = k (gsh = -1 when
// G > BK); splits <= KB; shared memory as mg_wgmma_smem computes.
#include "mixed_gemm.cuh"
#include "mixed_gemm_wgmma_ops.cuh"

__device__ __forceinline__ void mg_wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void mg_wg_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N> __device__ __forceinline__ void mg_wg_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accesses to the accumulators across the asynchronous MMAs.
template <int R> __device__ __forceinline__ void mg_wg_fence_acc(float (&d)[R])
{
#pragma unroll
    for (int i = 0; i < R; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}

// The descriptor of a K-major, unswizzled B operand at smem: LBO 128 (the k halves), SBO 256 (the
// 8-row groups).
__device__ __forceinline__ unsigned long long mg_wg_desc(const void *smem)
{
    const unsigned long long a = mg_saddr(smem);
    return ((a & 0x3ffffull) >> 4) | ((unsigned long long)(128 >> 4) << 16) |
           ((unsigned long long)(256 >> 4) << 32);
}

// The shared-memory layout; mg_wgmma_smem in mixed_gemm_space.c computes the same size, and the
// kernel traps when given less.
template <int BM, int WN, int KS, int STAGES, int ZP> struct mg_wgmma_layout {
    static constexpr int BN = 64 * WN;
    static constexpr int SR = KS / 2 > 0 ? KS / 2 : 1; // most scale rows in one stage (G >= 32)
    static constexpr int X_BYTES = KS * BM * 32;
    static constexpr int W_BYTES = KS * WN * 512;
    static constexpr int S_BYTES = SR * BN * 2;
    static constexpr int STAGE = X_BYTES + W_BYTES + S_BYTES * (1 + ZP);
    static constexpr int BAR = (2 * STAGES * 8 + 127) / 128 * 128;
    static constexpr int TOTAL = BAR + STAGES * STAGE;
};

// One stage of a consumer warp (B: its register buffer): wait for the stage, dequantize the
// warp's A fragments, issue the warpgroup's KS MMAs, and release the previous stage's slot once
// its MMAs have completed.
template <typename T, int BM, int WN, int KS, int STAGES, int ZP, int B>
__device__ __forceinline__ void mg_wgmma_stage(float (&acc)[BM / 2], unsigned (&a)[2][KS][4],
                                               const unsigned char *ring, unsigned long long *full,
                                               unsigned long long *empty, int wg, int w, int lane,
                                               int it, int gsh)
{
    using LY = mg_wgmma_layout<BM, WN, KS, STAGES, ZP>;
    constexpr int BN = LY::BN;
    const int s = it % STAGES, g = lane >> 2;
    mg_mbar_wait(full + s, (it / STAGES) & 1);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); // X came through cp.async
    const unsigned char *st = ring + s * LY::STAGE;
    const T *ss =
        reinterpret_cast<const T *>(st + LY::X_BYTES + LY::W_BYTES) + wg * 64 + g * 8 + 2 * w;
#pragma unroll
    for (int j = 0; j < KS; j++) {
        const unsigned word = *reinterpret_cast<const unsigned *>(
            st + LY::X_BYTES + (j * WN + wg) * 512 + lane * 16 + w * 4);
        const int srow = gsh >= 0 ? (j * 16) >> gsh : 0;
        const unsigned sw = *reinterpret_cast<const unsigned *>(ss + srow * BN);
        const unsigned s0 = __byte_perm(sw, 0, 0x1010), s1 = __byte_perm(sw, 0, 0x3232);
        unsigned z0 = mg_type<T>::NMZ8, z1 = mg_type<T>::NMZ8;
        if (ZP) {
            const unsigned zw = *reinterpret_cast<const unsigned *>(ss + LY::SR * BN + srow * BN);
            z0 = __byte_perm(zw, 0, 0x1010) ^ 0x80008000u;
            z1 = __byte_perm(zw, 0, 0x3232) ^ 0x80008000u;
        }
        a[B][j][0] = mg_dequant2<T>(word, z0, s0);
        a[B][j][1] = mg_dequant2<T>(word >> 8, z1, s1);
        a[B][j][2] = mg_dequant2<T>(word >> 4, z0, s0);
        a[B][j][3] = mg_dequant2<T>(word >> 12, z1, s1);
    }
    mg_wg_fence_acc(acc);
    mg_wg_fence();
#pragma unroll
    for (int j = 0; j < KS; j++)
        mg_wgmma_op<T, BM>::mma(acc, a[B][j], mg_wg_desc(st + j * (BM * 32)));
    mg_wg_commit();
    mg_wg_fence_acc(acc);
    mg_wg_wait<1>(); // the previous stage's MMAs are done: its slot is free
    if (it > 0 && lane == 0)
        mg_mbar_arrive(empty + (it - 1) % STAGES);
}

// The consumer warps' main loop: warp w of warpgroup wg owns columns 64 wg + 16 w .. + 15 of
// the block (the A rows 16 w .. 16 w + 15 of the warpgroup's m64 tile); acc gets its share of the
// block's 64 WN x BM tile of Y^T. Two stages per trip, so that each has its own A registers.
template <typename T, int BM, int WN, int KS, int STAGES, int ZP>
__device__ __forceinline__ void mg_wgmma_consume(float (&acc)[BM / 2], const unsigned char *ring,
                                                 unsigned long long *full,
                                                 unsigned long long *empty, int warp, int lane,
                                                 int L, int gsh)
{
    const int wg = warp >> 2, w = warp & 3;
    unsigned a[2][KS][4];
    for (int it = 0; it < L; it += 2) {
        mg_wgmma_stage<T, BM, WN, KS, STAGES, ZP, 0>(acc, a, ring, full, empty, wg, w, lane, it,
                                                     gsh);
        if (it + 1 < L)
            mg_wgmma_stage<T, BM, WN, KS, STAGES, ZP, 1>(acc, a, ring, full, empty, wg, w, lane,
                                                         it + 1, gsh);
    }
    mg_wg_wait<0>();
    mg_wg_fence_acc(acc);
}

template <typename T, int BM, int WN, int KS, int STAGES, int ZP>
__global__ void __launch_bounds__((4 * WN + 1) * 32)
    mg_wgmma(const T *__restrict__ X, const uint4 *__restrict__ Wp, const T *__restrict__ S,
             const T *__restrict__ Z, T *__restrict__ Y, float *__restrict__ ws,
             int *__restrict__ counters, int m, int n, int k, int group, int gsh)
{
    using LY = mg_wgmma_layout<BM, WN, KS, STAGES, ZP>;
    constexpr int NC = 4 * WN; // consumer warps; warp NC is the producer
    constexpr int BN = LY::BN, BK = 16 * KS, R = BM / 2;
    extern __shared__ uint4 mg_smem[];
    unsigned char *smem = reinterpret_cast<unsigned char *>(mg_smem);
    unsigned long long *full = reinterpret_cast<unsigned long long *>(smem);
    unsigned long long *empty = full + STAGES;
    unsigned char *ring = smem + LY::BAR;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, tq = lane & 3;
    const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
    const int splits = gridDim.z, z = blockIdx.z;
    const int KB = k / BK;
    const int kb0 = (int)((long long)z * KB / splits),
              kb1 = (int)((long long)(z + 1) * KB / splits);
    const int L = kb1 - kb0;
    const int rows = m - m0 < BM ? m - m0 : BM;
    const int srows = gsh >= 0 ? BK >> gsh : 1;
    if (tid == 0) {
        unsigned dyn;
        asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
        if (dyn < (unsigned)LY::TOTAL)
            __trap();
        for (int s = 0; s < STAGES; s++) {
            mg_mbar_init(full + s, 1 + 32); // the bulk copies' arrival, the producer's 32 lanes
            mg_mbar_init(empty + s, NC);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    const long long units_n = n / 64;
    float acc[R];
#pragma unroll
    for (int i = 0; i < R; i++)
        acc[i] = 0.f;

    if (warp == NC) { // the producer
        const unsigned sbytes = (unsigned)(srows * BN * 2);
        for (int it = 0; it < L; it++) {
            const int s = it % STAGES;
            if (it >= STAGES)
                mg_mbar_wait(empty + s, ((it / STAGES) + 1) & 1);
            unsigned char *st = ring + s * LY::STAGE;
            const int kb = kb0 + it;
            if (lane == 0) {
                mg_mbar_expect_tx(full + s, LY::W_BYTES + sbytes * (1 + ZP));
                for (int kk = 0; kk < KS; kk++)
                    mg_bulk_g2s(st + LY::X_BYTES + kk * WN * 512,
                                Wp + (((long long)kb * KS + kk) * units_n + n0 / 64) * 32, WN * 512,
                                full + s);
                const long long grow0 = (long long)kb * BK / group;
                unsigned char *sd = st + LY::X_BYTES + LY::W_BYTES;
                for (int r = 0; r < srows; r++) {
                    mg_bulk_g2s(sd + r * BN * 2, S + (grow0 + r) * n + n0, BN * 2, full + s);
                    if (ZP)
                        mg_bulk_g2s(sd + LY::S_BYTES + r * BN * 2, Z + (grow0 + r) * n + n0, BN * 2,
                                    full + s);
                }
            }
            // X: chunk c is row c / (2 KS), 16-byte column c % (2 KS) of the stage's BK
#pragma unroll 4
            for (int c = lane; c < BM * KS * 2; c += 32) {
                const int r = c / (KS * 2), c8 = c - r * (KS * 2);
                const int row = m0 + r;
                const bool valid = row < m;
                unsigned char *dst =
                    st + (c8 >> 1) * (BM * 32) + (r >> 3) * 256 + (c8 & 1) * 128 + (r & 7) * 16;
                const T *src = X + (long long)(valid ? row : 0) * k + (long long)kb * BK + c8 * 8;
                mg_cp_async16_zfill(dst, src, valid);
            }
            asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(
                             mg_saddr(full + s))
                         : "memory");
        }
    } else {
        mg_wgmma_consume<T, BM, WN, KS, STAGES, ZP>(acc, ring, full, empty, warp, lane, L, gsh);
    }

    // Epilogue. acc[4 i + e] is Y[m0 + 8 i + 2 tq + (e & 1)][n0 + 64 wg + 16 w + g + 8 (e >> 1)].
    const int col = n0 + 64 * (warp >> 2) + 16 * (warp & 3) + g;
    const bool cons = warp < NC;
    if (splits > 1) {
#pragma unroll
        for (int i = 0; i < R; i++) {
            const int row = m0 + 8 * (i >> 2) + 2 * tq + (i & 1);
            if (cons && row < m0 + rows)
                __stcg(ws + ((long long)z * m + row) * n + col + 8 * ((i >> 1) & 1), acc[i]);
        }
        mg_splitk_finish<T, BN, (NC + 1) * 32>(ws, Y, counters, m, n, m0, n0, rows);
        return;
    }
    if (!cons)
        return;
#pragma unroll
    for (int i = 0; i < R; i++) {
        const int row = m0 + 8 * (i >> 2) + 2 * tq + (i & 1);
        if (row < m0 + rows)
            Y[(long long)row * n + col + 8 * ((i >> 1) & 1)] = from_f32<T>(acc[i]);
    }
}
