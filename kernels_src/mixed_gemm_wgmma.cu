// mixed_gemm_wgmma.cu - the mixed-input GEMM on Hopper's warpgroup MMA (sm_90a only):
// Y[m,n] = X[m,k] . dequant(W)[k,n] with int4 W in the packed layout of mixed_gemm.cuh.
// Device code only; compiles with NVRTC and with nvcc for sm_90a (wgmma, TMA, mbarriers).
//
// Operands are swapped as in mg_decode (and as Machete and TensorRT-LLM do for small batches): the
// weight is the 64-row A operand of wgmma.mma_async m64nNk16, sourced from registers, so each
// weight is dequantized once per block, by the one warp that owns its 16 columns, whatever m is;
// X is the B operand (N = BM rows of m), read by the tensor cores straight from shared memory.
// A STAGES-deep ring of shared-memory stages is filled by one thread: X by the tensor memory
// accelerator (cp.async.bulk.tensor through the host's tensor map: 64-column boxes, 128-byte
// swizzle, rows past m filled with zeros), the packed weight and its scales (and zero points) by
// bulk copies; completion is counted in bytes on the stage's mbarrier. WN warpgroups each own
// MT x 64 columns: they dequantize a stage into registers (lop3 magic numbers, (q - z) s in T),
// issue its MMAs and, while those run, dequantize the next stage (two register buffers); a slot
// is refilled once every warp has seen its MMAs complete. (Committing per k16 step with two
// step-sized buffers keeps ptxas from serializing the MMAs of 4-warpgroup blocks, whose threads
// have 128 registers, but was slower at every m: one step of MMAs in flight is too shallow.)
//
// Template parameters (the tile space):
//   BM       rows of m per block: the wgmma's N, a multiple of 8 up to 256 (the host spreads m
//            evenly over its row blocks, so that m = 300 takes 2 blocks of 152 rows)
//   WN       warpgroups along n
//   MT       64-column tiles per warpgroup (BN = 64 MT WN)
//   KS       k16 steps per stage (BK = 16 KS, a multiple of 64: whole swizzle atoms)
//   STAGES   depth of the ring
//   ZP       0: symmetric (z = 8); 1: per-group zero points (stored as MAGIC + z in T)
//   CL       1: splits along k (the grid's z) add up as in mg_decode (fp32 partials in ws, summed
//            in split order by the tile's last block); CL > 1: the grid's z is CL splits launched
//            as a cluster of CL blocks whose partial tiles are added through distributed shared
//            memory (the family uses it for 2 splits: clusters of 4 and 8 blocks this large were
//            slower on the H200, being harder to co-schedule)
// Grid: (ceil(m / BM), n / BN, splits). Requirements (checked on the host): n % BN == 0,
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

// The accumulators zeroed, then fenced: without the fence ptxas serializes every wgmma (C7515),
// the zeros being defined inside the MMAs' pipeline.
template <int MT, int R> __device__ __forceinline__ void mg_wg_zero_acc(float (&acc)[MT][R])
{
#pragma unroll
    for (int t = 0; t < MT; t++)
#pragma unroll
        for (int i = 0; i < R; i++)
            acc[t][i] = 0.f;
#pragma unroll
    for (int t = 0; t < MT; t++)
        mg_wg_fence_acc(acc[t]);
}

// The descriptor of a K-major B operand with the 128-byte swizzle at smem (rows of 64 elements,
// 8-row groups 1024 bytes apart; the k16 steps of an atom are 32 bytes apart).
__device__ __forceinline__ unsigned long long mg_wg_desc(const void *smem)
{
    const unsigned long long a = ptx_smem_addr(smem);
    return ((a & 0x3ffffull) >> 4) | (1ull << 16) | ((unsigned long long)(1024 >> 4) << 32) |
           (1ull << 62);
}

// The shared-memory layout (after aligning the dynamic shared memory to 1 024 bytes, which the
// swizzle needs); mg_wgmma_smem in mixed_gemm_space.c computes the same size, and the kernel
// traps when given less.
template <int BM, int WN, int MT, int KS, int STAGES, int ZP, int CL = 1> struct mg_wgmma_layout {
    static constexpr int BN = 64 * MT * WN, UNITS = MT * WN;
    static constexpr int SR = KS / 2 > 0 ? KS / 2 : 1; // most scale rows in one stage (G >= 32)
    static constexpr int X_BYTES = KS * BM * 32;       // KS / 4 atoms of BM rows x 128 bytes
    static constexpr int W_BYTES = KS * UNITS * 512;
    static constexpr int S_BYTES = SR * BN * 2;
    static constexpr int STAGE = (X_BYTES + W_BYTES + S_BYTES * (1 + ZP) + 1023) / 1024 * 1024;
    static constexpr int BAR = 1024; // 2 STAGES mbarriers
    static constexpr int RING = STAGES * STAGE;
    static constexpr int PART = CL > 1 ? BM * (BN + 4) * 4 : 0; // the split's fp32 partial tile
    static constexpr int TOTAL = 1024 + BAR + (RING > PART ? RING : PART);
};

// Fills the ring slot of iteration it (k block kb0 + it): run by one thread.
template <typename T, int BM, int WN, int MT, int KS, int STAGES, int ZP>
__device__ __forceinline__ void mg_wgmma_load(const mg_tmap *xmap, const uint4 *__restrict__ Wp,
                                              const T *__restrict__ S, const T *__restrict__ Z,
                                              unsigned char *ring, unsigned long long *full,
                                              int it, int kb0, int m0, int n0, int n, int group,
                                              int srows)
{
    using LY = mg_wgmma_layout<BM, WN, MT, KS, STAGES, ZP>;
    constexpr int BK = 16 * KS, BN = LY::BN;
    const int s = it % STAGES, kb = kb0 + it;
    unsigned char *st = ring + s * LY::STAGE;
    const unsigned sbytes = (unsigned)(srows * BN * 2);
    ptx_mbar_expect_tx(full + s, LY::X_BYTES + LY::W_BYTES + sbytes * (1 + ZP));
#pragma unroll
    for (int q = 0; q < KS / 4; q++)
        ptx_tma_2d(st + q * BM * 128, xmap, kb * BK + 64 * q, m0, full + s);
    const long long units_n = n / 64;
    for (int kk = 0; kk < KS; kk++)
        ptx_bulk_g2s(st + LY::X_BYTES + kk * LY::UNITS * 512,
                     Wp + (((long long)kb * KS + kk) * units_n + n0 / 64) * 32, LY::UNITS * 512,
                     full + s);
    const long long grow0 = (long long)kb * BK / group;
    unsigned char *sd = st + LY::X_BYTES + LY::W_BYTES;
    for (int r = 0; r < srows; r++) {
        ptx_bulk_g2s(sd + r * BN * 2, S + (grow0 + r) * n + n0, BN * 2, full + s);
        if (ZP)
            ptx_bulk_g2s(sd + LY::S_BYTES + r * BN * 2, Z + (grow0 + r) * n + n0, BN * 2, full + s);
    }
}

// Which 16 columns of the block each A fragment holds. Tile t of warpgroup wg is the 64 rows of
// A (columns of n) of one wgmma, warp w supplies 16 of them; a packed unit holds 64 columns x one
// k16 step, lane L's 16 bytes being its words for the column groups q = 0 .. 3 (columns
// 16 q .. 16 q + 15). Any assignment of (unit, q) pairs to (t, w) that gives each tile 64
// distinct columns is correct, since the epilogue places each accumulator by the same map. This
// one gives a warp adjacent words: with MT tiles, warp w takes words q0 .. q0 + V - 1 of one unit
// (V = min(MT, 4)), so that a stage's weight and scales are read with one V-word shared-memory
// load per k16 step and 4 / V tiles instead of MT single-word loads that four warps make 4-way
// bank conflicts of (all four read the same lanes' 16 bytes).
template <int MT> struct mg_wg_map {
    static constexpr int V = MT < 4 ? MT : 4; // words per load
    static constexpr int NL = MT / V;         // loads per k16 step
    // The unit (of the block's MT WN) and the word of tile t for warp w of warpgroup wg.
    static __device__ __forceinline__ int unit(int wg, int w, int t)
    {
        return MT < 4 ? MT * wg + w * MT / 4 : MT * wg + MT / 4 * w + t / 4;
    }
    static __device__ __forceinline__ int word(int w, int t)
    {
        return MT < 4 ? (w % (MT < 4 ? 4 / MT : 1)) * MT + t : t % 4;
    }
};

// V 32-bit words from shared memory at p (aligned to 4 V bytes) in one load.
template <int V> __device__ __forceinline__ void mg_lds(const unsigned char *p, unsigned *v)
{
    if constexpr (V == 4) {
        const uint4 x = *reinterpret_cast<const uint4 *>(p);
        v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
    } else if constexpr (V == 2) {
        const uint2 x = *reinterpret_cast<const uint2 *>(p);
        v[0] = x.x, v[1] = x.y;
    } else {
        v[0] = *reinterpret_cast<const unsigned *>(p);
    }
}

// The constants of the four-register dequantization of one packed word (mg_wg_dequant_word).
template <typename T> struct mg_wg_consts;
template <> struct mg_wg_consts<half_t> {
    static constexpr bool HI_IN_PLACE = true;            // bits 4..7 lie in the mantissa
    static constexpr unsigned SIXTEENTH2 = 0x2c002c00u; // 1/16
    static constexpr unsigned NMZ8_HI = 0xd480d480u;    // -(MAGIC / 16 + 8) = -72
    static constexpr unsigned HI_SHIFT2 = 0x63806380u;  // 15 MAGIC / 16 = 960
};
template <> struct mg_wg_consts<bf16_t> { // 7 mantissa bits: bit 7 is the exponent's
    static constexpr bool HI_IN_PLACE = false;
};

// The four A registers of one packed word w (register p's pair at bits 4p and 16 + 4p: p = 0, 2
// are the low nibbles of its bytes, p = 1, 3 the high ones), (q - z) s exactly up to the
// product's rounding, in 13 instructions: one shift (w >> 8 serves p = 2 and 3), and per
// register one lop3 (a low nibble gives MAGIC + q; a high nibble, left in place, MAGIC + 16 q),
// one fma (low: minus MAGIC + z; high: times 1/16 minus MAGIC / 16 + z, exact since MAGIC / 16 + q
// is) and one multiply by the scale. nz = -(MAGIC + z) and nzh = -(MAGIC / 16 + z) of the
// register's two columns (rows g and g + 8 of the fragment: registers 0, 2 and 1, 3), s their
// scales.
template <typename T>
__device__ __forceinline__ void mg_wg_dequant_word(unsigned w, const unsigned (&nz)[2],
                                                   const unsigned (&nzh)[2],
                                                   const unsigned (&s)[2], unsigned (&r)[4])
{
    using C = mg_wg_consts<T>;
    const unsigned w8 = w >> 8;
    const unsigned v0 = mg_lop3_and_or(w, 0x000f000fu, mg_type<T>::MAGIC2);
    const unsigned v1 = mg_lop3_and_or(w8, 0x000f000fu, mg_type<T>::MAGIC2);
    r[0] = mg_fma2<T>(mg_fma2<T>(v0, mg_type<T>::ONE2, nz[0]), s[0], 0x80008000u);
    r[1] = mg_fma2<T>(mg_fma2<T>(v1, mg_type<T>::ONE2, nz[1]), s[1], 0x80008000u);
    if constexpr (C::HI_IN_PLACE) {
        const unsigned v2 = mg_lop3_and_or(w, 0x00f000f0u, mg_type<T>::MAGIC2);
        const unsigned v3 = mg_lop3_and_or(w8, 0x00f000f0u, mg_type<T>::MAGIC2);
        r[2] = mg_fma2<T>(mg_fma2<T>(v2, C::SIXTEENTH2, nzh[0]), s[0], 0x80008000u);
        r[3] = mg_fma2<T>(mg_fma2<T>(v3, C::SIXTEENTH2, nzh[1]), s[1], 0x80008000u);
    } else {
        const unsigned v2 = mg_lop3_and_or(w >> 4, 0x000f000fu, mg_type<T>::MAGIC2);
        const unsigned v3 = mg_lop3_and_or(w >> 12, 0x000f000fu, mg_type<T>::MAGIC2);
        r[2] = mg_fma2<T>(mg_fma2<T>(v2, mg_type<T>::ONE2, nz[0]), s[0], 0x80008000u);
        r[3] = mg_fma2<T>(mg_fma2<T>(v3, mg_type<T>::ONE2, nz[1]), s[1], 0x80008000u);
    }
}

// A consumer warp's A fragments of one stage (tile t: the columns mg_wg_map gives), dequantized
// into a: wst is the stage's packed weight (KS steps of UNITS units), sst its scale rows (SR rows
// of BN, then as many zero-point rows with ZP; a lane's two scales of word q, rows g and g + 8,
// are adjacent at 8 g + 2 q of the unit's 64). The scales (and zero points) are read and
// broadcast only at the steps where a group starts: step j starts one when G / 16 divides j
// (G >= 32: never at odd j, known when compiling; gsh = log2 G, -1 for one group per stage).
template <typename T, int MT, int KS, int UNITS, int SR, int ZP>
__device__ __forceinline__ void mg_wg_dequant(unsigned (&a)[KS][MT][4], const unsigned char *wst,
                                              const unsigned char *sst, int wg, int w, int lane,
                                              int gsh)
{
    using MP = mg_wg_map<MT>;
    constexpr int BN = 64 * UNITS;
    const int q0 = MP::word(w, 0);
    const unsigned char *ws0 = wst + MP::unit(wg, w, 0) * 512 + lane * 16 + q0 * 4;
    const unsigned char *ss0 = sst + (MP::unit(wg, w, 0) * 64 + (lane >> 2) * 8 + 2 * q0) * 2;
    unsigned s[MT][2], nz[MT][2], nzh[MT][2];
#pragma unroll
    for (int j = 0; j < KS; j++) {
        // trailing zeros of j (KS <= 16): a group of 2^(gsh - 4) steps starts at j when
        // gsh - 4 <= tz
        const int tz = (j & 1) ? 0 : (j & 2) ? 1 : (j & 4) ? 2 : (j & 8) ? 3 : (j & 16) ? 4 : 5;
        if (j == 0 || (j % 2 == 0 && gsh >= 0 && gsh - 4 <= tz)) {
            const int srow = gsh >= 0 ? (j * 16) >> gsh : 0;
            unsigned sw[MT], zw[MT];
#pragma unroll
            for (int l = 0; l < MP::NL; l++) { // load l: unit + l (MT > 4 only)
                mg_lds<MP::V>(ss0 + (l * 64 + srow * BN) * 2, sw + l * MP::V);
                if (ZP)
                    mg_lds<MP::V>(ss0 + (l * 64 + (SR + srow) * BN) * 2, zw + l * MP::V);
            }
#pragma unroll
            for (int t = 0; t < MT; t++) {
                s[t][0] = __byte_perm(sw[t], 0, 0x1010), s[t][1] = __byte_perm(sw[t], 0, 0x3232);
                if (ZP) {
                    nz[t][0] = __byte_perm(zw[t], 0, 0x1010) ^ 0x80008000u;
                    nz[t][1] = __byte_perm(zw[t], 0, 0x3232) ^ 0x80008000u;
                } else {
                    nz[t][0] = nz[t][1] = mg_type<T>::NMZ8;
                }
                if constexpr (mg_wg_consts<T>::HI_IN_PLACE) {
                    using C = mg_wg_consts<T>;
                    for (int h = 0; h < 2; h++) // -(MAGIC / 16 + z) = -(MAGIC + z) + 15 MAGIC / 16
                        nzh[t][h] = ZP ? mg_fma2<T>(nz[t][h], mg_type<T>::ONE2, C::HI_SHIFT2)
                                       : C::NMZ8_HI;
                }
            }
        }
        unsigned word[MT];
#pragma unroll
        for (int l = 0; l < MP::NL; l++)
            mg_lds<MP::V>(ws0 + (j * UNITS + l) * 512, word + l * MP::V);
#pragma unroll
        for (int t = 0; t < MT; t++)
            mg_wg_dequant_word<T>(word[t], nz[t], nzh[t], s[t], a[j][t]);
    }
}

// The warpgroup's MT KS MMAs of one stage (X of the stage at xst), committed as one group.
template <typename T, int BM, int MT, int KS>
__device__ __forceinline__ void mg_wg_mmas(float (&acc)[MT][BM / 2], const unsigned (&a)[KS][MT][4],
                                           const unsigned char *xst)
{
#pragma unroll
    for (int t = 0; t < MT; t++)
        mg_wg_fence_acc(acc[t]);
    mg_wg_fence();
    // one descriptor, offset per step (16-byte units; the address field cannot carry over: the
    // shared memory is under 256 KiB)
    const unsigned long long d0 = mg_wg_desc(xst);
#pragma unroll
    for (int j = 0; j < KS; j++)
#pragma unroll
        for (int t = 0; t < MT; t++)
            mg_wgmma_op<T, BM>::mma(acc[t], a[j][t], d0 + (j >> 2) * (BM * 8) + (j & 3) * 2);
    mg_wg_commit();
#pragma unroll
    for (int t = 0; t < MT; t++)
        mg_wg_fence_acc(acc[t]);
}

// One stage of a consumer warp (B: its register buffer): wait for the stage, dequantize the
// warp's A fragments, issue the warpgroup's MT KS MMAs, and release the previous stage's slot
// once its MMAs have completed.
template <typename T, int BM, int WN, int MT, int KS, int STAGES, int ZP, int B>
__device__ __forceinline__ void mg_wgmma_stage(float (&acc)[MT][BM / 2],
                                               unsigned (&a)[2][KS][MT][4],
                                               const unsigned char *ring, unsigned long long *full,
                                               unsigned long long *empty, int wg, int w, int lane,
                                               int it, int gsh)
{
    using LY = mg_wgmma_layout<BM, WN, MT, KS, STAGES, ZP>;
    const int s = it % STAGES;
    ptx_mbar_wait(full + s, (it / STAGES) & 1);
    const unsigned char *st = ring + s * LY::STAGE;
    mg_wg_dequant<T, MT, KS, LY::UNITS, LY::SR, ZP>(a[B], st + LY::X_BYTES,
                                                    st + LY::X_BYTES + LY::W_BYTES, wg, w, lane,
                                                    gsh);
    mg_wg_mmas<T, BM, MT, KS>(acc, a[B], st);
    mg_wg_wait<1>(); // the previous stage's MMAs are done: its slot may be refilled
    if (it > 0 && lane == 0)
        ptx_mbar_arrive(empty + (it - 1) % STAGES);
}

// Calls f(t, i, row, col) for every accumulator acc[t][i] of a consumer thread (warp w of
// warpgroup wg), with its row of m and column of n in the block's tile: acc[t][4 j + e] is row
// 8 j + 2 tq + (e & 1), column 64 unit + 16 word + g + 8 (e >> 1) (mg_wg_map: unit and word of
// tile t for warp w).
template <int MT, int R, typename F>
__device__ __forceinline__ void mg_wg_for_acc(int wg, int w, int lane, F f)
{
    using MP = mg_wg_map<MT>;
    const int tq = lane & 3, g = lane >> 2;
#pragma unroll
    for (int t = 0; t < MT; t++)
#pragma unroll
        for (int i = 0; i < R; i++)
            f(t, i, 8 * (i >> 2) + 2 * tq + (i & 1),
              64 * MP::unit(wg, w, t) + 16 * MP::word(w, t) + g + 8 * ((i >> 1) & 1));
}

__device__ __forceinline__ void mg_cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::
                     : "memory");
}

// The split-K finish of a cluster of CL blocks (the splits of one tile, ranks 0 .. CL - 1 along
// z), in three steps between cluster barriers: each block puts its fp32 partial tile in its own
// shared memory (the ring is free: mg_wg_part), then block r adds slice r of the tile over the
// CL blocks' shared memory (distributed shared memory, in rank order: the sum does not depend on
// timing) and writes it to Y (mg_cluster_sum, by threads t = 0 .. nt - 1). Nothing goes through
// global memory, and the CL blocks finish their slices in parallel instead of one block reading
// every partial. Every thread of every block joins the three barriers. The partial tile's rows are
// BN + 4 floats apart: with BN, the four lanes of a quad (rows 2 tq apart) stored to one bank.
template <int BM, int BN, int MT>
__device__ __forceinline__ void mg_wg_part(const float (&acc)[MT][BM / 2], float *part, int wg,
                                           int w, int lane)
{
    mg_wg_for_acc<MT, BM / 2>(wg, w, lane, [&](int t, int i, int row, int col) {
        part[row * (BN + 4) + col] = acc[t][i];
    });
}

template <typename T, int BM, int BN, int CL>
__device__ __forceinline__ void mg_cluster_sum(const float *part, T *__restrict__ Y, int n, int m0,
                                               int n0, int rows, int t, int nt)
{
    constexpr int CH = BM * BN / 4 / CL; // float4 chunks per block's slice
    unsigned rank;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const unsigned base = ptx_smem_addr(part);
    for (int c = t; c < CH; c += nt) {
        const int e = (int)(rank * CH + c) * 4, row = e / BN, col = e - row * BN;
        if (row >= rows)
            continue;
        float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int q = 0; q < CL; q++) {
            unsigned peer;
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
                         : "=r"(peer)
                         : "r"(base + (unsigned)(row * (BN + 4) + col) * 4), "r"(q));
            float4 v;
            asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
                         : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                         : "r"(peer)
                         : "memory");
            sum.x += v.x;
            sum.y += v.y;
            sum.z += v.z;
            sum.w += v.w;
        }
        mg_store4(Y + (long long)(m0 + row) * n + n0 + col, sum);
    }
}

template <typename T, int BM, int BN, int MT, int CL>
__device__ __forceinline__ void mg_wgmma_cluster_finish(const float (&acc)[MT][BM / 2],
                                                        float *part, T *__restrict__ Y, int n,
                                                        int m0, int n0, int rows, int wg, int w,
                                                        int lane)
{
    mg_cluster_sync(); // every block of the cluster is done with its ring
    mg_wg_part<BM, BN, MT>(acc, part, wg, w, lane);
    mg_cluster_sync(); // every partial tile is in place
    mg_cluster_sum<T, BM, BN, CL>(part, Y, n, m0, n0, rows, threadIdx.x, blockDim.x);
    mg_cluster_sync(); // no block leaves while another reads its shared memory
}

// The kernel. About 110 lines: set-up, the loads' prologue, the consumer loop with its refill and
// the three ends (cluster, split through global memory, direct store), which share the
// accumulators' layout and the block's coordinates; apart, each would take a dozen arguments.
template <typename T, int BM, int WN, int MT, int KS, int STAGES, int ZP, int CL>
__global__ void __launch_bounds__(128 * WN) __cluster_dims__(1, 1, CL)
    mg_wgmma(const __grid_constant__ mg_tmap xmap, const uint4 *__restrict__ Wp,
             const T *__restrict__ S, const T *__restrict__ Z, T *__restrict__ Y,
             float *__restrict__ ws, int *__restrict__ counters, int m, int n, int k, int group,
             int gsh)
{
    using LY = mg_wgmma_layout<BM, WN, MT, KS, STAGES, ZP, CL>;
    constexpr int NC = 4 * WN; // warps
    constexpr int BN = LY::BN, BK = 16 * KS, R = BM / 2;
    static_assert(KS % 4 == 0, "BK: whole 64-column swizzle atoms");
    static_assert(BM % 8 == 0 && BM <= 256, "BM: wgmma's N, 8-row core matrices");
    extern __shared__ uint4 mg_smem[];
    unsigned char *smem = reinterpret_cast<unsigned char *>(mg_smem);
    smem += (1024 - (ptx_smem_addr(smem) & 1023)) & 1023;
    unsigned long long *full = reinterpret_cast<unsigned long long *>(smem);
    unsigned long long *empty = full + STAGES;
    unsigned char *ring = smem + LY::BAR;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
    const int splits = gridDim.z, z = blockIdx.z;
    int kb0, L;
    mg_split_range(k / BK, kb0, L);
    const int rows = m - m0 < BM ? m - m0 : BM;
    const int srows = gsh >= 0 ? BK >> gsh : 1;
    if (tid == 0) {
        mg_require_smem(LY::TOTAL);
        for (int s = 0; s < STAGES; s++) {
            ptx_mbar_init(full + s, 1);
            ptx_mbar_init(empty + s, NC);
        }
        ptx_fence_mbar_init();
        ptx_prefetch_tmap(&xmap);
    }
    __syncthreads();
    if (tid == 0)
        for (int it = 0; it < STAGES && it < L; it++)
            mg_wgmma_load<T, BM, WN, MT, KS, STAGES, ZP>(&xmap, Wp, S, Z, ring, full, it, kb0, m0,
                                                         n0, n, group, srows);

    float acc[MT][R];
    mg_wg_zero_acc(acc);
    unsigned a[2][KS][MT][4];
    const int wg = warp >> 2, w = warp & 3;
    // thread 0 refills the slot of iteration it - 1 once every warp has released it
    auto refill = [&](int it) {
        const int done = it - 1;
        if (tid == 0 && done >= 0 && done + STAGES < L) {
            ptx_mbar_wait(empty + done % STAGES, (done / STAGES) & 1);
            mg_wgmma_load<T, BM, WN, MT, KS, STAGES, ZP>(&xmap, Wp, S, Z, ring, full,
                                                         done + STAGES, kb0, m0, n0, n, group,
                                                         srows);
        }
    };
    for (int it = 0; it < L; it += 2) { // two stages per trip: each has its own A registers
        mg_wgmma_stage<T, BM, WN, MT, KS, STAGES, ZP, 0>(acc, a, ring, full, empty, wg, w, lane, it,
                                                         gsh);
        refill(it);
        if (it + 1 < L) {
            mg_wgmma_stage<T, BM, WN, MT, KS, STAGES, ZP, 1>(acc, a, ring, full, empty, wg, w, lane,
                                                             it + 1, gsh);
            refill(it + 1);
        }
    }
    mg_wg_wait<0>();
#pragma unroll
    for (int t = 0; t < MT; t++)
        mg_wg_fence_acc(acc[t]);

    // Epilogue (mg_wg_for_acc gives each accumulator's place in the tile).
    if (CL > 1) {
        mg_wgmma_cluster_finish<T, BM, BN, MT, CL>(acc, reinterpret_cast<float *>(ring), Y, n, m0,
                                                   n0, rows, wg, w, lane);
        return;
    }
    if (splits > 1) { // the family's split-K finish through global memory
        mg_wg_for_acc<MT, R>(wg, w, lane, [&](int t, int i, int row, int col) {
            if (row < rows)
                __stcg(ws + ((long long)z * m + m0 + row) * n + n0 + col, acc[t][i]);
        });
        mg_splitk_finish<T, BN, NC * 32>(ws, Y, counters, m, n, m0, n0, rows);
        return;
    }
    mg_wg_for_acc<MT, R>(wg, w, lane, [&](int t, int i, int row, int col) {
        if (row < rows)
            Y[(long long)(m0 + row) * n + n0 + col] = from_f32<T>(acc[t][i]);
    });
}

// ---- The warp-specialized variant (method wgmma_ws) ----
//
// mg_wgmma_ws<T, BM, WN, MT, KS, SX, SW, ZP, CL, SK>: mg_wgmma's tiles, MMAs and ends, with one
// more warpgroup, the producer, in front of the WN consumer warpgroups, and two rings instead of
// one: SX stages of X, and SW stages of packed weight with its scales (and zero points). Thread 0
// of the producer streams X by TMA, thread 32 the weight by TMA too (one box per stage of the
// weight's tensor map; the scales as boxes from 4 rows per stage, else bulk copies), each
// waiting only on its ring's "empty" mbarriers, so no consumer warp issues a load or waits for
// another warpgroup's release (in mg_wgmma thread 0 does both, and its warpgroup waits for it at
// every warpgroup-collective wgmma op). A weight slot is released as soon as the consumers have
// dequantized it into registers, an X slot once the MMAs that read it have completed; the
// weight ring (from DRAM) is therefore deeper than the X ring (mostly L2 hits): SW is what the
// shared memory left by the X ring holds (the host picks it). With WN = 2 the producer gives its
// registers back (setmaxnreg.dec to 40) and the consumers take them (setmaxnreg.inc to 232), so
// that two stages of A fragments fit beside the accumulators without ptxas serializing the MMAs.
// The consumers dequantize stage it into one register buffer while the MMAs of stage it - 1 run
// from the other.
// MG_WS_WTMA 1: the producer streams each weight stage as one box of the weight's 3-D tensor map
// (the host's wmap); 0: as KS bulk copies of one k16 row of the block's units each (the kernel
// before the tensor map, kept for A/B measurements: define it to 0 before this file).
#ifndef MG_WS_WTMA
#define MG_WS_WTMA 1
#endif
// MG_WS_STMA 1: a stage of MG_WS_STMA_ROWS (4) or more scale rows (and its zero-point rows) is one
// box each of the host's smap (zmap), 3-D tensor maps of the scales (zero points); fewer rows, or
// 0: one bulk copy per row (the kernel before, for A/B measurements).
#ifndef MG_WS_STMA
#define MG_WS_STMA 1
#endif
#ifndef MG_WS_STMA_ROWS
#define MG_WS_STMA_ROWS 4
#endif

// The block's work, in segments: k iterations it0 .. it1 - 1 of a tile's L. Tile t = (row block
// t % MB, column block t / MB), MB = ceil(m / BM), so that the row blocks that share a weight
// slice run together. Without SK, whole tiles: a grid of (MB, n / BN, splits) gives every block one
// tile, (blockIdx.x, blockIdx.y); a persistent grid of fewer blocks (x only, one split, no cluster:
// the host's choice) gives block b the tiles b, b + gridDim.x, ... in turn, so that its producer
// loads the next tile while its consumers store the last one; a cluster's blocks (CL > 1) take one
// tile each. With SK (stream-K: Osama et al., "Stream-K: Work-centric Parallel Decomposition for
// Dense Matrix-Matrix Multiplication on the GPU", PPoPP 2023), the persistent grid's blocks share
// the k iterations of all tiles in equal ranges, so that no block idles in a last partial wave:
// block b works on row block r = b % MB, as group q = b / MB of the G = gridDim.x / MB groups
// (the blocks past MB G idle), and takes iterations begin(q) .. begin(q + 1) - 1 of that row's
// (n / BN) L, column block by column block. The MB blocks of a group take the same weight
// slices at the same k, as the row blocks of a grid without SK do, so the weight is read from
// DRAM once (in plain tile order each row block read it again, at another k, on other blocks). A
// range starts and ends inside tiles: a block takes at most a partial tile at each end, which
// mg_ws_streamk adds up.
template <int BM, int BN, int CL, int SK> struct mg_ws_tiles {
    int mb, count, L, tile, groups;
    long long pos, end; // SK: the next iteration of the block's range in its row, and its end
    __device__ __forceinline__ mg_ws_tiles(int m, int n, int iters)
        : mb((m + BM - 1) / BM), count(CL > 1 ? first() + 1 : mb * (n / BN)), L(iters),
          tile(first()), groups((int)gridDim.x / mb),
          pos(SK && group() < groups ? begin(group()) : 0),
          end(SK && group() < groups ? begin(group() + 1) : 0)
    {
    }
    __device__ __forceinline__ int first() const { return blockIdx.x + blockIdx.y * gridDim.x; }
    __device__ __forceinline__ int stride() const { return CL > 1 ? 1 : gridDim.x * gridDim.y; }
    __device__ __forceinline__ int group() const { return (int)blockIdx.x / mb; }
    // SK: the first iteration of group q's range in each row (count / mb column blocks of L)
    __device__ __forceinline__ long long begin(int q) const
    {
        return (long long)(count / mb) * L * q / groups;
    }
    __device__ __forceinline__ int m0(int t) const { return t % mb * BM; }
    __device__ __forceinline__ int n0(int t) const { return t / mb * BN; }
    // The next segment (tile t, iterations it0 .. it1 - 1); false when the block is done.
    __device__ __forceinline__ bool next(int &t, int &it0, int &it1)
    {
        if (SK) {
            if (pos >= end)
                return false;
            t = (int)(pos / L) * mb + (int)blockIdx.x % mb, it0 = (int)(pos % L);
            it1 = end - pos < L - it0 ? it0 + (int)(end - pos) : L;
            pos += it1 - it0;
            return true;
        }
        if (tile >= count)
            return false;
        t = tile, it0 = 0, it1 = L;
        tile += stride();
        return true;
    }
};

template <int WN> struct mg_ws_regs {
    static constexpr int THREADS = 128 * (WN + 1);
    static constexpr int ENTRY = 65536 / THREADS / 8 * 8 > 248 ? 248 : 65536 / THREADS / 8 * 8;
    static constexpr int PRODUCER = 40;
    static constexpr int CONSUMER_RAW = (ENTRY * THREADS - PRODUCER * 128) / (128 * WN) / 8 * 8;
    static constexpr int CONSUMER = CONSUMER_RAW > 240 ? 240 : CONSUMER_RAW;
};

// The shared-memory layout (after aligning to 1 024 bytes): barriers (full and empty of each
// ring), the X ring, the weight ring; or with CL > 1 the fp32 partial tile if larger.
// mg_wgmma_smem in mixed_gemm_space.c computes the same size.
template <int BM, int WN, int MT, int KS, int SX, int SW, int ZP, int CL> struct mg_ws_layout {
    static constexpr int BN = 64 * MT * WN, UNITS = MT * WN;
    static constexpr int SR = KS / 2 > 0 ? KS / 2 : 1; // most scale rows in one stage (G >= 32)
    static constexpr int X_BYTES = KS * BM * 32;       // KS / 4 atoms of BM rows x 128 bytes
    static constexpr int W_BYTES = KS * UNITS * 512;
    static constexpr int S_BYTES = SR * BN * 2;
    static constexpr int WSTAGE = (W_BYTES + S_BYTES * (1 + ZP) + 127) / 128 * 128;
    static constexpr int BAR = 1024;
    static constexpr int RING = SX * X_BYTES + SW * WSTAGE;
    static constexpr int PART = CL > 1 ? BM *(BN + 4) * 4 : 0; // rows padded: mg_wg_part
    static constexpr int TOTAL = 1024 + BAR + (RING > PART ? RING : PART);
    static_assert((2 * SX + 2 * SW) * 8 <= BAR, "barriers");
};

template <int N> __device__ __forceinline__ void mg_setmaxnreg_dec()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N> __device__ __forceinline__ void mg_setmaxnreg_inc()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}

// The producer warpgroup: thread 0 fills the X ring, thread 32 the weight ring, for every
// iteration it of the block's segments (mg_ws_tiles) once the consumers have released the slot's
// previous use; then the warpgroup joins the cluster finish's three barriers (CL > 1) and leaves.
template <typename T, int BM, int WN, int MT, int KS, int SX, int SW, int ZP, int CL, int SK>
__device__ __forceinline__ void
mg_ws_produce(const mg_tmap *xmap, const mg_tmap *wmap, const mg_tmap *smap, const mg_tmap *zmap,
              const uint4 *__restrict__ Wp, const T *__restrict__ S, const T *__restrict__ Z,
              unsigned char *xring, unsigned char *wring, unsigned long long *bars, int L, int kb0,
              int m, int n, int group, int srows)
{
    using LY = mg_ws_layout<BM, WN, MT, KS, SX, SW, ZP, CL>;
    constexpr int BK = 16 * KS, BN = LY::BN;
    unsigned long long *fullx = bars, *emptyx = bars + SX, *fullw = bars + 2 * SX,
                       *emptyw = bars + 2 * SX + SW;
    if (WN > 1)
        mg_setmaxnreg_dec<mg_ws_regs<WN>::PRODUCER>();
    mg_ws_tiles<BM, BN, CL, SK> tl(m, n, L);
    int tile, it0, it1;
    if (threadIdx.x == 0)
        for (int g = 0; tl.next(tile, it0, it1);)
            for (int it = it0, m0 = tl.m0(tile); it < it1; it++, g++) {
                const int s = g % SX, kb = kb0 + it;
                if (g >= SX)
                    ptx_mbar_wait(emptyx + s, (g / SX - 1) & 1);
                ptx_mbar_expect_tx(fullx + s, LY::X_BYTES);
#pragma unroll
                for (int q = 0; q < KS / 4; q++)
                    ptx_tma_2d(xring + s * LY::X_BYTES + q * BM * 128, xmap, kb * BK + 64 * q, m0,
                               fullx + s);
            }
    else if (threadIdx.x == 32)
        for (int g = 0; tl.next(tile, it0, it1);)
            for (int it = it0, n0 = tl.n0(tile); it < it1; it++, g++) {
                const int s = g % SW, kb = kb0 + it;
                if (g >= SW)
                    ptx_mbar_wait(emptyw + s, (g / SW - 1) & 1);
                unsigned char *st = wring + s * LY::WSTAGE;
                const unsigned sbytes = (unsigned)(srows * BN * 2);
                ptx_mbar_expect_tx(fullw + s, LY::W_BYTES + sbytes * (1 + ZP));
#if MG_WS_WTMA
                // the stage's KS x UNITS packed units in one box of the weight's tensor map (64
                // 8-byte words per unit, n / 64 units per k16 row, k / 16 rows): the same
                // [kk][unit] order in shared memory as KS row copies, in one request to the copy
                // engine
                ptx_tma_3d(st, wmap, 0, n0 / 64, kb * KS, fullw + s);
#else
                const long long units_n = n / 64;
                for (int kk = 0; kk < KS; kk++)
                    ptx_bulk_g2s(st + kk * LY::UNITS * 512,
                                 Wp + (((long long)kb * KS + kk) * units_n + n0 / 64) * 32,
                                 LY::UNITS * 512, fullw + s);
#endif
                const long long grow0 = (long long)kb * BK / group;
                unsigned char *sd = st + LY::W_BYTES;
                if (MG_WS_STMA && srows >= MG_WS_STMA_ROWS) {
                    // the stage's srows scale rows (and zero-point rows) of the block's BN columns
                    // in one box each (64-column chunks, n / 64 of them per row, k / G rows): rows
                    // of BN in shared memory, as srows row copies would leave them. Only from 4
                    // rows: with 2 rows per stage (bk = 256, G = 128) the box was 7-11 % slower on
                    // the H200 than two row copies at m = 16-32, and 3-7 % faster from 4 rows (G =
                    // 32 and 64).
                    ptx_tma_3d(sd, smap, 0, n0 / 64, (int)grow0, fullw + s);
                    if (ZP)
                        ptx_tma_3d(sd + LY::S_BYTES, zmap, 0, n0 / 64, (int)grow0, fullw + s);
                } else {
                    for (int r = 0; r < srows; r++) {
                        ptx_bulk_g2s(sd + r * BN * 2, S + (grow0 + r) * n + n0, BN * 2, fullw + s);
                        if (ZP)
                            ptx_bulk_g2s(sd + LY::S_BYTES + r * BN * 2, Z + (grow0 + r) * n + n0,
                                         BN * 2, fullw + s);
                    }
                }
            }
    __syncwarp();
    if (CL > 1) {
        mg_cluster_sync();
        mg_cluster_sync();
        mg_cluster_sync();
    }
}

// One stage of a consumer warp (B: its register buffer): dequantize the stage's weight into
// registers and release its weight slot, then issue the MMAs on the stage's X and release the
// previous stage's X slot once its MMAs have completed.
template <typename T, int BM, int WN, int MT, int KS, int SX, int SW, int ZP, int B>
__device__ __forceinline__ void mg_ws_stage(float (&acc)[MT][BM / 2], unsigned (&a)[2][KS][MT][4],
                                            const unsigned char *xring, const unsigned char *wring,
                                            unsigned long long *bars, int wg, int w, int lane,
                                            int it, bool first, int gsh)
{
    using LY = mg_ws_layout<BM, WN, MT, KS, SX, SW, ZP, 1>;
    unsigned long long *fullx = bars, *emptyx = bars + SX, *fullw = bars + 2 * SX,
                       *emptyw = bars + 2 * SX + SW;
    const int sw = it % SW, sx = it % SX;
    ptx_mbar_wait(fullw + sw, (it / SW) & 1);
    const unsigned char *wst = wring + sw * LY::WSTAGE;
    mg_wg_dequant<T, MT, KS, LY::UNITS, LY::SR, ZP>(a[B], wst, wst + LY::W_BYTES, wg, w, lane, gsh);
    __syncwarp(); // every lane's reads of the slot are done
    if (lane == 0)
        ptx_mbar_arrive(emptyw + sw);
    ptx_mbar_wait(fullx + sx, (it / SX) & 1);
    mg_wg_mmas<T, BM, MT, KS>(acc, a[B], xring + sx * LY::X_BYTES);
    mg_wg_wait<1>(); // the previous stage's MMAs are done: its X slot may be refilled
    if (!first && lane == 0)
        ptx_mbar_arrive(emptyx + (it - 1) % SX);
}

// The consumers' end (cw: consumer warp 0 .. 4 WN - 1): the cluster finish, the split-K finish
// through global memory among the consumer threads (named barrier), or the direct store.
template <typename T, int BM, int BN, int MT, int CL>
__device__ __forceinline__ void mg_ws_epilogue(const float (&acc)[MT][BM / 2], float *part,
                                               T *__restrict__ Y, float *__restrict__ ws,
                                               int *__restrict__ counters, int m, int n, int m0,
                                               int n0, int rows, int cw, int lane)
{
    constexpr int NT = 32 * 4 * (BN / 64 / MT), R = BM / 2; // consumer threads
    const int wg = cw >> 2, w = cw & 3;
    if (CL > 1) {
        mg_cluster_sync();
        mg_wg_part<BM, BN, MT>(acc, part, wg, w, lane);
        mg_cluster_sync();
        mg_cluster_sum<T, BM, BN, CL>(part, Y, n, m0, n0, rows, cw * 32 + lane, NT);
        mg_cluster_sync();
        return;
    }
    if (gridDim.z > 1) {
        mg_wg_for_acc<MT, R>(wg, w, lane, [&](int t, int i, int row, int col) {
            if (row < rows)
                __stcg(ws + ((long long)blockIdx.z * m + m0 + row) * n + n0 + col, acc[t][i]);
        });
        mg_splitk_finish<T, BN, NT, 128>(ws, Y, counters, m, n, m0, n0, rows);
        return;
    }
    mg_wg_for_acc<MT, R>(wg, w, lane, [&](int t, int i, int row, int col) {
        if (row < rows)
            Y[(long long)(m0 + row) * n + n0 + col] = from_f32<T>(acc[t][i]);
    });
}

// The stream-K fix-up of a segment (iterations it0 .. it1 - 1 of tile's tl.L), run by the NT
// consumer threads (from thread 128). A segment that does not start its tile (the first of its
// block's range) stores its fp32 partial in the block's slot of ws (BM x BN floats, in the
// accumulators' register order: each thread's values NT apart, so every store is coalesced) and
// raises the block's flag in counters. The segment that starts the tile (the last of its block's
// range, so the blocks after it, which took the rest of the tile first, are mostly done) waits for
// the flags of those blocks, the ones of its row whose range starts inside the tile
// (mg_ws_tiles), and adds their partials in block order (the sum does not depend on timing), then
// resets the flags for the next launch. The blocks of a persistent grid are all resident, and a
// flag's block never waits before raising it, so every wait ends. Returns whether the block stores
// the tile (to Y, as without SK).
template <int BM, int MT, int NT, typename TL>
__device__ __forceinline__ bool mg_ws_streamk(float (&acc)[MT][BM / 2], float *__restrict__ ws,
                                              int *__restrict__ flags, const TL &tl, int tile,
                                              int it0, int it1)
{
    constexpr int R = BM / 2, SLOT = MT * R * NT;
    const int tid = (int)threadIdx.x - 128;
    if (it0 > 0) {
        float *slot = ws + (long long)blockIdx.x * SLOT + tid;
#pragma unroll
        for (int t = 0; t < MT; t++)
#pragma unroll
            for (int i = 0; i < R; i++)
                __stcg(slot + (t * R + i) * NT, acc[t][i]);
        __threadfence();
        mg_bar_sync<NT, 128>();
        if (tid == 0)
            atomicExch(flags + blockIdx.x, 1);
        return false;
    }
    if (it1 == tl.L)
        return true;
    // the groups after this block's whose range (in the same row) starts inside the tile; block
    // q mb + r of group q
    const long long tile_end = (long long)(tile / tl.mb + 1) * tl.L;
    const int r = (int)blockIdx.x % tl.mb;
    int q = tl.group() + 1;
    for (; q < tl.groups && tl.begin(q) < tile_end; q++) {
        if (tl.begin(q + 1) == tl.begin(q))
            continue; // an empty range (fewer iterations than groups): no partial, no flag
        const int c = q * tl.mb + r;
        if (tid == 0)
            while (atomicAdd(flags + c, 0) == 0)
                ;
        mg_bar_sync<NT, 128>();
        __threadfence();
        const float *slot = ws + (long long)c * SLOT + tid;
#pragma unroll
        for (int t = 0; t < MT; t++)
#pragma unroll
            for (int i = 0; i < R; i++)
                acc[t][i] += __ldcg(slot + (t * R + i) * NT);
    }
    mg_bar_sync<NT, 128>(); // every partial is read: the flags may fall
    if (tid == 0)
        for (int p = tl.group() + 1; p < q; p++)
            if (tl.begin(p + 1) != tl.begin(p))
                flags[p * tl.mb + r] = 0;
    return true;
}

template <typename T, int BM, int WN, int MT, int KS, int SX, int SW, int ZP, int CL, int SK>
__global__ void __launch_bounds__(128 * (WN + 1), 1) __cluster_dims__(1, 1, CL)
    mg_wgmma_ws(const __grid_constant__ mg_tmap xmap, const __grid_constant__ mg_tmap wmap,
                const __grid_constant__ mg_tmap smap, const __grid_constant__ mg_tmap zmap,
                const uint4 *__restrict__ Wp, const T *__restrict__ S, const T *__restrict__ Z,
                T *__restrict__ Y, float *__restrict__ ws, int *__restrict__ counters, int m, int n,
                int k, int group, int gsh)
{
    using LY = mg_ws_layout<BM, WN, MT, KS, SX, SW, ZP, CL>;
    constexpr int BN = LY::BN, BK = 16 * KS, R = BM / 2;
    static_assert(KS % 4 == 0, "BK: whole 64-column swizzle atoms");
    static_assert(BM % 8 == 0 && BM <= 256, "BM: wgmma's N, 8-row core matrices");
    static_assert(WN == 1 || WN == 2, "1 or 2 consumer warpgroups");
    extern __shared__ uint4 mg_smem[];
    unsigned char *smem = reinterpret_cast<unsigned char *>(mg_smem);
    smem += (1024 - (ptx_smem_addr(smem) & 1023)) & 1023;
    unsigned long long *bars = reinterpret_cast<unsigned long long *>(smem);
    unsigned char *xring = smem + LY::BAR, *wring = xring + SX * LY::X_BYTES;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    int kb0, L;
    mg_split_range(k / BK, kb0, L);
    static_assert(!SK || CL == 1, "stream-K: no cluster");
    if (tid == 0) {
        mg_require_smem(LY::TOTAL);
        for (int s = 0; s < 2 * SX + 2 * SW; s++) // full X, empty X, full W, empty W
            ptx_mbar_init(bars + s, s < SX || (s >= 2 * SX && s < 2 * SX + SW) ? 1 : 4 * WN);
        ptx_fence_mbar_init();
        ptx_prefetch_tmap(&xmap);
        if (MG_WS_WTMA)
            ptx_prefetch_tmap(&wmap);
        if (MG_WS_STMA && (gsh >= 0 ? BK >> gsh : 1) >= MG_WS_STMA_ROWS) {
            ptx_prefetch_tmap(&smap);
            if (ZP)
                ptx_prefetch_tmap(&zmap);
        }
    }
    __syncthreads();
    if (warp < 4) {
        mg_ws_produce<T, BM, WN, MT, KS, SX, SW, ZP, CL, SK>(&xmap, &wmap, &smap, &zmap, Wp, S, Z,
                                                             xring, wring, bars, L, kb0, m, n,
                                                             group, gsh >= 0 ? BK >> gsh : 1);
        return;
    }
    if (WN > 1)
        mg_setmaxnreg_inc<mg_ws_regs<WN>::CONSUMER>();
    const int cw = warp - 4, wg = cw >> 2, w = cw & 3;
    float acc[MT][R];
    unsigned a[2][KS][MT][4];
    mg_ws_tiles<BM, BN, CL, SK> tl(m, n, L);
    for (int g = 0, tile, it0, it1; tl.next(tile, it0, it1); g += it1 - it0) {
        const int m0 = tl.m0(tile), n0 = tl.n0(tile), rows = m - m0 < BM ? m - m0 : BM;
        const int len = it1 - it0;
        mg_wg_zero_acc(acc);
        for (int it = 0; it < len; it += 2) {
            mg_ws_stage<T, BM, WN, MT, KS, SX, SW, ZP, 0>(acc, a, xring, wring, bars, wg, w, lane,
                                                          g + it, it == 0, gsh);
            if (it + 1 < len)
                mg_ws_stage<T, BM, WN, MT, KS, SX, SW, ZP, 1>(acc, a, xring, wring, bars, wg, w,
                                                              lane, g + it + 1, false, gsh);
        }
        mg_wg_wait<0>();
#pragma unroll
        for (int t = 0; t < MT; t++)
            mg_wg_fence_acc(acc[t]);
        if (lane == 0) // the segment's last X slot (the next one's first stage does not release it)
            ptx_mbar_arrive(bars + SX + (g + len - 1) % SX);
        if (SK && !mg_ws_streamk<BM, MT, 128 * WN>(acc, ws, counters, tl, tile, it0, it1))
            continue;
        mg_ws_epilogue<T, BM, BN, MT, CL>(acc, reinterpret_cast<float *>(xring), Y, ws, counters,
                                          m, n, m0, n0, rows, cw, lane);
    }
}
