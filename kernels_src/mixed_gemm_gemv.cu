// mixed_gemm_gemv.cu - the warp-streaming mixed-input GEMM for small m, "gemv" (mg_gemv, at the
// end of the file): Y[m,n] = X[m,k] . dequant(W)[k,n] with int4 W in the packed layout of
// mixed_gemm.cuh. Its parts: the k16 step (mg_gemv_step), the X fragments (mg_x_frags), the
// block's end (mg_gemv_end), and the weight stream (in registers, or a per-warp cp.async ring).
// Device code only; compiles with NVRTC and with nvcc unchanged.
//
// Operands are swapped: the weight is the MMA's A operand (each 32-bit word of a lane's 16 packed
// bytes is exactly its A fragment of 16 columns x 16 k), X is B (8 rows per n8 tile), so m <= 8
// pays 4 mma.sync per 1 024 weights. SA chooses where the scale is applied:
//   0: every weight dequantized to (q - z) s in T before the MMA;
//   1: the MMA multiplies q - z (exact in T), the scale is applied to the fp32 accumulator once
//      per group (acc += s P);
//   2: the MMA multiplies MAGIC + q as the lop3 leaves it (one instruction per two weights), an
//      MMA of ones sums X, and at each group end acc += s (P - (MAGIC + z) sum X): the fewest
//      instructions per weight
// Grid: (ceil(m / BM), n / BN, splits): row blocks that share a weight slice are neighbours, so
// they run together and the second reads it from L2. Split k: block z takes batches
// [z KB / splits, (z + 1) KB / splits) of the KB = k / BK; with splits > 1 every block writes its
// fp32 partial tile to ws[z][m][n] and the last block of a tile (counted in counters[], which it
// resets) adds the partials in split order, so results do not depend on arrival order.
#include "mixed_gemm.cuh"

// Calls f(t, j4, d) for every accumulator acc[t][j4][d] of an XT-tile warp.
template <int XT, typename F> __device__ __forceinline__ void mg_for_acc(F f)
{
#pragma unroll
    for (int t = 0; t < XT; t++)
#pragma unroll
        for (int j4 = 0; j4 < 4; j4++)
#pragma unroll
            for (int d = 0; d < 4; d++)
                f(t, j4, d);
}

// The B fragments of X for one k16 step at column kx of the X slice xs (rows of xstride halves,
// `rows` of them valid; invalid rows read the last valid one, and their results are not stored):
// tiles t and t + 1 in one ldmatrix.x4, a last odd tile in .x2.
template <int XT, typename T>
__device__ __forceinline__ void mg_x_frags(unsigned (&xb)[XT][2], const T *xs, int xstride,
                                           int rows, int kx, int lane)
{
#pragma unroll
    for (int t = 0; t < XT; t += 2) {
        const int mat = lane >> 3;
        if (t + 1 < XT) {
            int r = 8 * (t + (mat >> 1)) + (lane & 7);
            r = r < rows ? r : rows - 1;
            unsigned f[4];
            mg_ldmatrix_x4(f, xs + (long long)r * xstride + kx + 8 * (mat & 1));
            xb[t][0] = f[0];
            xb[t][1] = f[1];
            xb[t + 1 < XT ? t + 1 : t][0] = f[2];
            xb[t + 1 < XT ? t + 1 : t][1] = f[3];
        } else {
            int r = 8 * t + (lane & 7);
            r = r < rows ? r : rows - 1;
            unsigned f[2];
            mg_ldmatrix_x2(f, xs + (long long)r * xstride + kx + 8 * (mat & 1));
            xb[t][0] = f[0];
            xb[t][1] = f[1];
        }
    }
}

// One k16 step of a warp: the lane's 16 packed bytes w (64 columns x 16 k: word j4 is the A
// fragment of columns 16 j4 ..) times the B fragments xb of XT tiles of X, as SA says (the top of
// the file). sload() and zload() return the lane's 8 scales and zero points of the step's group
// (columns 8 g ..), called only when SA and ZP need them; group_end: the group ends after this step
// (or this warp's run of steps does), so SA >= 1 applies the scale to acc and resets P (and sx).
template <typename T, int XT, int ZP, int SA, typename FS, typename FZ>
__device__ __forceinline__ void mg_gemv_step(float (&acc)[XT][4][4], float (&P)[SA ? XT : 1][4][4],
                                             float (&sx)[SA == 2 ? XT : 1][4], const uint4 w,
                                             const unsigned (&xb)[XT][2], FS sload, FZ zload,
                                             bool group_end)
{
    const unsigned ones4[4] = {mg_type<T>::ONE2, mg_type<T>::ONE2, mg_type<T>::ONE2,
                               mg_type<T>::ONE2};
    const unsigned wv[4] = {w.x, w.y, w.z, w.w};
    // this lane's columns 16 j4 + g + 8 h are element 2 j4 + h of the 8 at 8 g
    uint4 zv = make_uint4(0, 0, 0, 0);
    if (ZP && SA < 2)
        zv = zload();
    const unsigned z4[4] = {zv.x, zv.y, zv.z, zv.w};
    if (SA == 0) {
        const uint4 sv = sload();
        const unsigned s4[4] = {sv.x, sv.y, sv.z, sv.w};
#pragma unroll
        for (int j4 = 0; j4 < 4; j4++) {
            const unsigned s0 = __byte_perm(s4[j4], 0, 0x1010),
                           s1 = __byte_perm(s4[j4], 0, 0x3232);
            const unsigned z0 =
                ZP ? __byte_perm(z4[j4], 0, 0x1010) ^ 0x80008000u : mg_type<T>::NMZ8;
            const unsigned z1 =
                ZP ? __byte_perm(z4[j4], 0, 0x3232) ^ 0x80008000u : mg_type<T>::NMZ8;
            const unsigned af[4] = {mg_dequant2<T>(wv[j4], z0, s0),
                                    mg_dequant2<T>(wv[j4] >> 8, z1, s1),
                                    mg_dequant2<T>(wv[j4] >> 4, z0, s0),
                                    mg_dequant2<T>(wv[j4] >> 12, z1, s1)};
#pragma unroll
            for (int t = 0; t < XT; t++)
                mg_mma<T>(acc[t][j4], af, xb[t][0], xb[t][1]);
        }
    } else {
#pragma unroll
        for (int j4 = 0; j4 < 4; j4++) {
            const unsigned z0 =
                ZP ? __byte_perm(z4[j4], 0, 0x1010) ^ 0x80008000u : mg_type<T>::NMZ8;
            const unsigned z1 =
                ZP ? __byte_perm(z4[j4], 0, 0x3232) ^ 0x80008000u : mg_type<T>::NMZ8;
            auto qz = [&](unsigned word, unsigned nmz) {
                const unsigned v =
                    mg_lop3_and_or(word, 0x000f000fu, mg_type<T>::MAGIC2);
                // SA == 1: q - z, exact in T; SA == 2: MAGIC + q as it is
                return SA == 1 ? mg_fma2<T>(v, mg_type<T>::ONE2, nmz) : v;
            };
            const unsigned af[4] = {qz(wv[j4], z0), qz(wv[j4] >> 8, z1),
                                    qz(wv[j4] >> 4, z0), qz(wv[j4] >> 12, z1)};
#pragma unroll
            for (int t = 0; t < XT; t++)
                mg_mma<T>(P[SA ? t : 0][j4], af, xb[t][0], xb[t][1]);
        }
        if (SA == 2)
#pragma unroll
            for (int t = 0; t < XT; t++)
                mg_mma<T>(sx[SA == 2 ? t : 0], ones4, xb[t][0], xb[t][1]);
        if (group_end) {
            const uint4 sv = sload();
            const T *s8 = reinterpret_cast<const T *>(&sv);
            uint4 zv2 = make_uint4(0, 0, 0, 0);
            if (ZP && SA == 2)
                zv2 = zload();
            const T *z8 = reinterpret_cast<const T *>(&zv2);
#pragma unroll
            for (int j4 = 0; j4 < 4; j4++)
#pragma unroll
                for (int d = 0; d < 4; d++) {
                    const float sc = to_f32(s8[2 * j4 + (d >> 1)]);
                    const float mz =
                        ZP ? to_f32(z8[2 * j4 + (d >> 1)]) : mg_type<T>::MAGIC_F + 8.0f;
#pragma unroll
                    for (int t = 0; t < XT; t++) {
                        float &pv = P[SA ? t : 0][j4][d];
                        acc[t][j4][d] +=
                            sc * (SA == 2 ? pv - mz * sx[SA == 2 ? t : 0][d & 1] : pv);
                        pv = 0.f;
                    }
                }
            if (SA == 2)
#pragma unroll
                for (int t = 0; t < XT; t++)
                    sx[SA == 2 ? t : 0][0] = sx[SA == 2 ? t : 0][1] =
                        sx[SA == 2 ? t : 0][2] = sx[SA == 2 ? t : 0][3] = 0.f;
        }
    }
}

// The end of a block of NT threads, WN x WK warps, each of which holds acc for rows
// m0 + 8 t + 2 tq + (d & 1) and columns n0 + 64 wn + 16 j4 + g + 8 (d >> 1): the k warps' sums
// added through `red` (shared memory no longer in use, (WK - 1) WN XT 16 32 floats), then Y
// written, or with splits the fp32 partial tile and the split-K finish.
template <typename T, int XT, int WN, int WK, int NT>
__device__ __forceinline__ void mg_gemv_end(float (&acc)[XT][4][4], float *red, int wn, int wk,
                                            T *__restrict__ Y, float *__restrict__ ws,
                                            int *__restrict__ counters, int m, int n, int m0,
                                            int n0, int rows)
{
    constexpr int BN = 64 * WN;
    const int lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
    auto row_of = [&](int t, int d) { return m0 + 8 * t + 2 * tq + (d & 1); };
    auto col_of = [&](int j4, int d) { return n0 + 64 * wn + 16 * j4 + g + 8 * (d >> 1); };
    if (WK > 1) {
        __syncthreads();
        red += lane;
        constexpr int ACC = XT * 16;
        if (wk > 0) {
            float *dst = red + (long long)((wk - 1) * WN + wn) * ACC * 32;
            mg_for_acc<XT>(
                [&](int t, int j4, int d) { dst[((t * 4 + j4) * 4 + d) * 32] = acc[t][j4][d]; });
        }
        __syncthreads();
        if (wk == 0)
            for (int w = 1; w < WK; w++) {
                const float *src = red + (long long)((w - 1) * WN + wn) * ACC * 32;
                mg_for_acc<XT>([&](int t, int j4, int d) {
                    acc[t][j4][d] += src[((t * 4 + j4) * 4 + d) * 32];
                });
            }
    }
    if (gridDim.z > 1) {
        if (wk == 0)
            mg_for_acc<XT>([&](int t, int j4, int d) {
                if (row_of(t, d) < m0 + rows)
                    __stcg(ws + ((long long)blockIdx.z * m + row_of(t, d)) * n + col_of(j4, d),
                           acc[t][j4][d]);
            });
        mg_splitk_finish<T, BN, NT>(ws, Y, counters, m, n, m0, n0, rows);
        return;
    }
    if (wk != 0)
        return;
    mg_for_acc<XT>([&](int t, int j4, int d) {
        if (row_of(t, d) < m0 + rows)
            Y[(long long)row_of(t, d) * n + col_of(j4, d)] = from_f32<T>(acc[t][j4][d]);
    });
}

// A 16-byte load of streamed data that is read once: no L1 allocation.
__device__ __forceinline__ uint4 mg_ld_stream(const uint4 *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

// Where mg_gemv's warp finds its batches: U units of 16 rows along k of its 64 columns (lane's 16
// bytes of unit (0, its column unit) at wcol, unit_stride apart along k) and the SRW scale (and
// zero-point) rows of the batch (the lane's 8 values of row 0 at s8, z8; the warp's 128 bytes at
// s64, z64).
template <typename T, int U, int SRW, int ZP> struct mg_gemv_src {
    const uint4 *wcol;
    long long unit_stride;
    const T *s8, *z8, *s64, *z64;
    int group, n;

    __device__ __forceinline__ long long grow(int kb) const
    {
        return (long long)kb * (16 * U) / group; // the batch's first group row
    }
};

// A batch in registers (ST = 1 or 2): U 16-byte loads per lane, all in flight before the first
// use.
template <typename T, int U, int SRW, int ZP> struct mg_gemv_regs {
    uint4 w[U], s[SRW], z[ZP ? SRW : 1];

    __device__ __forceinline__ void load(const mg_gemv_src<T, U, SRW, ZP> &src, int kb)
    {
#pragma unroll
        for (int j = 0; j < U; j++)
            w[j] = mg_ld_stream(src.wcol + ((long long)kb * U + j) * src.unit_stride);
        const long long g0 = src.grow(kb);
#pragma unroll
        for (int r = 0; r < SRW; r++) {
            s[r] = __ldg(reinterpret_cast<const uint4 *>(src.s8 + (g0 + r) * src.n));
            if (ZP)
                z[ZP ? r : 0] = __ldg(reinterpret_cast<const uint4 *>(src.z8 + (g0 + r) * src.n));
        }
    }
};

// A batch slot of a warp's shared-memory ring (ST >= 3): the U units (512 bytes each, lane L's 16
// bytes at L * 16), then SRW rows of the warp's 64 scales (128 bytes each), then the zero points.
template <int U, int SRW, int ZP> struct mg_gemv_slot {
    static constexpr int BYTES = U * 512 + SRW * 128 * (1 + ZP);
};

// Fills a ring slot with batch kb by cp.async (16 bytes per lane and instruction, no registers)
// and commits the group.
template <typename T, int U, int SRW, int ZP>
__device__ __forceinline__ void mg_gemv_fill(unsigned char *slot,
                                             const mg_gemv_src<T, U, SRW, ZP> &src, int kb,
                                             int lane)
{
#pragma unroll
    for (int j = 0; j < U; j++)
        ptx_cp_async<16>(slot + j * 512 + lane * 16,
                         src.wcol + ((long long)kb * U + j) * src.unit_stride);
    const long long g0 = src.grow(kb);
    for (int i = lane; i < SRW * 8 * (1 + ZP); i += 32) {
        const int zr = i / (8 * SRW), r = (i / 8) % SRW, c = i % 8;
        ptx_cp_async<16>(slot + U * 512 + (zr * SRW + r) * 128 + c * 16,
                         (zr ? src.z64 : src.s64) + (g0 + r) * src.n + c * 8);
    }
    ptx_cp_async_commit();
}

// The warp-streaming mixed-input GEMM for small m ("gemv"): no producer and no block-wide ring:
// every warp streams its own batches of U packed units, so the multiprocessor's warps keep the
// bytes in flight, and a warp waits for nobody but itself. ST = 1 or 2: batches loaded straight
// into registers (U 16-byte loads per lane before the first use; with 2 the next batch's loads are
// issued before the current one is multiplied). ST >= 3: a private ring of ST batch slots in shared memory per warp,
// filled by cp.async (no registers held by the bytes in flight), ST - 1 batches ahead. X for the
// block's k range is staged once in shared memory (rows padded by 16 bytes for conflict-free
// ldmatrix) while the first batches are on their way.
//   XT   n8 tiles of X rows per block (BM = 8 XT)
//   WN   warps along n, one 64-column unit each (BN = 64 WN)
//   WK   warps along k: warp wk takes batches wk, wk + WK, ... of the block's k range; their
//        partial sums are added in shared memory at the end (mg_gemv_end)
//   U    k16 steps (units) per batch: BK = 16 U
//   ST   batches in flight per warp: 1, 2 (registers) or 3.. (shared-memory ring)
//   SRW  group rows per batch: BK / G when G <= BK, else 1 (the scale applied once per batch)
//   ZP   0: symmetric (z = 8); 1: per-group zero points (stored as MAGIC + z in T)
//   SA   as at the top of the file (0 holds 16 XT fewer registers than 1 and 20 XT fewer than 2)
// Grid and split-K as at the top of the file. Requirements (checked on the host): n % BN == 0,
// k % BK == 0, G a power of two >= 32 nesting with BK (or G = k), splits <= k / BK; shared memory:
// max(X + ring, (WK - 1) WN XT 16 32 4) bytes, X = rows (ceil(KB / splits) BK + 8) 2 rounded up
// to 16, ring = WN WK ST slot bytes when ST >= 3.
template <typename T, int XT, int WN, int WK, int U, int ST, int SRW, int ZP, int SA>
__global__ void __launch_bounds__(WN *WK * 32)
    mg_gemv(const T *__restrict__ X, const uint4 *__restrict__ Wp, const T *__restrict__ S,
            const T *__restrict__ Z, T *__restrict__ Y, float *__restrict__ ws,
            int *__restrict__ counters, int m, int n, int k, int group, int gsh)
{
    static_assert(ST >= 1 && ST <= 8, "ST: 1 .. 8");
    static_assert(U % SRW == 0, "SRW divides U");
    constexpr int NC = WN * WK, BN = 64 * WN, BK = 16 * U, BM = 8 * XT;
    constexpr bool RING = ST >= 3;
    using slot_t = mg_gemv_slot<U, SRW, ZP>;
    (void)gsh;
    extern __shared__ uint4 mg_smem[];
    T *xs = reinterpret_cast<T *>(mg_smem);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wn = warp / WK, wk = warp % WK;
    const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
    const int KB = k / BK;
    int kb0, L;
    mg_split_range(KB, kb0, L);
    const int xstride = (KB + (int)gridDim.z - 1) / (int)gridDim.z * BK + 8;
    const int rows = m - m0 < BM ? m - m0 : BM;
    const unsigned xbytes = ((unsigned)rows * xstride * 2 + 15) / 16 * 16;
    unsigned char *ring = reinterpret_cast<unsigned char *>(mg_smem) + xbytes +
                          (RING ? warp * ST * slot_t::BYTES : 0);
    if (tid == 0) {
        const unsigned used = xbytes + (RING ? NC * ST * slot_t::BYTES : 0),
                       rbytes = (unsigned)((WK - 1) * WN * XT * 16 * 32 * 4);
        mg_require_smem(used > rbytes ? used : rbytes);
    }
    mg_gemv_src<T, U, SRW, ZP> src;
    src.unit_stride = (long long)(n / 64) * 32;
    src.wcol = Wp + (long long)(n0 / 64 + wn) * 32 + lane;
    src.s64 = S + n0 + wn * 64;
    src.z64 = ZP ? Z + n0 + wn * 64 : S;
    src.s8 = src.s64 + (lane >> 2) * 8;
    src.z8 = src.z64 + (lane >> 2) * 8;
    src.group = group;
    src.n = n;

    // the warp's batches are it = wk + q WK, q = 0, 1, ...; the first ones are in flight while
    // the block stages X
    mg_gemv_regs<T, U, SRW, ZP> cur, nxt;
    if (RING) {
        for (int q = 0; q < ST - 1; q++)
            if (wk + q * WK < L)
                mg_gemv_fill(ring + q * slot_t::BYTES, src, kb0 + wk + q * WK, lane);
            else
                ptx_cp_async_commit();
    } else if (wk < L) {
        cur.load(src, kb0 + wk);
    }
    const int xrow = L * BK; // halves of X per row in this split
    for (int i = tid; i < rows * (xrow / 8); i += NC * 32) {
        const int r = i / (xrow / 8), c = (i - r * (xrow / 8)) * 8;
        *reinterpret_cast<uint4 *>(xs + (long long)r * xstride + c) = __ldg(
            reinterpret_cast<const uint4 *>(X + (long long)(m0 + r) * k + (long long)kb0 * BK + c));
    }
    __syncthreads();

    float acc[XT][4][4], P[SA ? XT : 1][4][4], sx[SA == 2 ? XT : 1][4];
    mg_for_acc<XT>([&](int t, int j4, int d) { acc[t][j4][d] = P[SA ? t : 0][j4][d] = 0.f; });
#pragma unroll
    for (int t = 0; t < (SA == 2 ? XT : 1); t++)
        sx[t][0] = sx[t][1] = sx[t][2] = sx[t][3] = 0.f;
    constexpr int SPG = U / SRW; // k16 steps per group row of a batch
    for (int q = 0, it = wk; it < L; q++, it += WK) {
        const unsigned char *slot = ring + (RING ? (q % ST) * slot_t::BYTES : 0);
        if (RING) {
            ptx_cp_async_wait<RING ? ST - 2 : 0>();
            __syncwarp();
            // refill the slot the previous batch used, ST - 1 batches ahead
            if (it + (ST - 1) * WK < L)
                mg_gemv_fill(ring + ((q + ST - 1) % ST) * slot_t::BYTES, src,
                             kb0 + it + (ST - 1) * WK, lane);
            else
                ptx_cp_async_commit();
        } else if (ST == 2 && it + WK < L) {
            nxt.load(src, kb0 + it + WK);
        }
#pragma unroll
        for (int j = 0; j < U; j++) {
            unsigned xb[XT][2];
            mg_x_frags<XT>(xb, xs, xstride, rows, it * BK + j * 16, lane);
            const int r = j / SPG;
            const uint4 w =
                RING ? *reinterpret_cast<const uint4 *>(slot + j * 512 + lane * 16) : cur.w[j];
            const unsigned char *srow = slot + U * 512 + r * 128 + (lane >> 2) * 16;
            mg_gemv_step<T, XT, ZP, SA>(
                acc, P, sx, w, xb,
                [&] { return RING ? *reinterpret_cast<const uint4 *>(srow) : cur.s[r]; },
                [&] {
                    return RING ? *reinterpret_cast<const uint4 *>(srow + SRW * 128)
                                : cur.z[ZP ? r : 0];
                },
                (j + 1) % SPG == 0);
        }
        if (ST == 2)
            cur = nxt;
        else if (ST == 1 && it + WK < L)
            cur.load(src, kb0 + it + WK);
    }
    if (RING)
        ptx_cp_async_wait_all();
    mg_gemv_end<T, XT, WN, WK, NC * 32>(acc, reinterpret_cast<float *>(mg_smem), wn, wk, Y, ws,
                                        counters, m, n, m0, n0, rows);
}
