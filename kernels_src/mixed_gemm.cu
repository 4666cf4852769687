// mixed_gemm.cu - the fused mixed-input GEMM: Y[m,n] = X[m,k] . dequant(W)[k,n] with int4 W in the
// packed layout of mixed_gemm.cuh, fp16/bf16 X and Y, fp32 accumulation on tensor cores
// (mma.sync m16n8k16), a cp.async multi-stage pipeline, and split-K with a deterministic
// in-kernel reduction. Device code only; compiles with NVRTC and with nvcc unchanged.
//
// Template parameters (the tile space):
//   BM, BN, BK      block tile: rows of X / Y, columns of W / Y, reduction depth per stage
//   WM, WN, WK      warps along m, along n, and along k (WK > 1: warps split each stage's k16
//                   steps and their partial sums are added in shared memory at the end)
//   STAGES          cp.async pipeline depth (>= 2)
//   ZP              0: symmetric (z = 8); 1: per-group zero points
//   SA              0: dequantize every weight ((MAGIC + q - (MAGIC + z)) * s, two fma per pair);
//                   1: scale the accumulator once per group instead (MMA on MAGIC + q, a ninth
//                   MMA against ones for sum(X), acc += s (P - (MAGIC + z) sum X) at each group
//                   end): one lop3 per two weights, twice the accumulators
// Grid: (n / BN, ceil(m / BM), splits). With splits > 1 every block writes its fp32 partial tile
// to ws[split][m][n]; the last block to finish a tile (counted in counters[], which it resets)
// adds the partials in split order and writes Y, so results do not depend on arrival order.
// Requirements (checked on the host): n % BN == 0, k % BK == 0, BK >= 64, BN % (64 WN) == 0,
// BM % (16 WM) == 0, (BK / 16) % WK == 0, G >= 32 and G % BK == 0 or BK % G == 0, splits <= k/BK.
// gsh = log2(G) when G <= BK, else -1 (one scale row per stage).

#include "mixed_gemm.cuh"

// Calls f(a, b, c, h) for every pair of accumulators (acc[a][b][c][2h], acc[a][b][c][2h + 1]):
// row 16 a + g + 8 h of the warp tile, columns 64 b + 8 c + 2 tq and the next.
template <int MT, int NU, typename F> __device__ __forceinline__ void mg_for_pairs(F f)
{
#pragma unroll
    for (int a = 0; a < MT; a++)
#pragma unroll
        for (int b = 0; b < NU; b++)
#pragma unroll
            for (int c = 0; c < 8; c++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    f(a, b, c, h);
}

// The end of the kernel: warps wk > 0 hand their partial sums to warp wk = 0 of the same
// (wm, wn) through shared memory (free once the caller synchronised); then either Y is written, or
// (gridDim.z > 1) the fp32 partial tile goes to ws and the last block of the tile adds all of them
// in split order and writes Y. acc[a][b][c][] is the m16n8 tile at rows m0 + wm * MT * 16 + 16 a,
// columns n0 + (wn * NU + b) * 64 + 8 c.
template <typename T, int MT, int NU, int WM, int WN, int WK>
__device__ __forceinline__ void mg_epilogue(float (&acc)[MT][NU][8][4], unsigned char *smem,
                                            T *__restrict__ Y, float *__restrict__ ws,
                                            int *__restrict__ counters, int m, int n, int m0,
                                            int n0, int wm, int wn, int wk)
{
    constexpr int MW = MT * 16;
    const int lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
    const int splits = gridDim.z, z = blockIdx.z;
    auto row_of = [&](int a, int h) { return m0 + wm * MW + a * 16 + g + h * 8; };
    auto col_of = [&](int b, int c) { return n0 + (wn * NU + b) * 64 + c * 8 + tq * 2; };
    auto slot = [](int a, int b, int c, int h) { return ((a * NU + b) * 8 + c) * 4 + 2 * h; };

    if (WK > 1) { // lane-major: conflict-free
        float *red = reinterpret_cast<float *>(smem) + lane;
        const int wmn = wm * WN + wn;
        constexpr int ACC = MT * NU * 8 * 4;
        if (wk > 0) {
            float *dst = red + (long long)((wk - 1) * WM * WN + wmn) * ACC * 32;
            mg_for_pairs<MT, NU>([&](int a, int b, int c, int h) {
                dst[slot(a, b, c, h) * 32] = acc[a][b][c][2 * h];
                dst[(slot(a, b, c, h) + 1) * 32] = acc[a][b][c][2 * h + 1];
            });
        }
        __syncthreads();
        if (wk == 0)
            for (int w = 1; w < WK; w++) {
                const float *src = red + (long long)((w - 1) * WM * WN + wmn) * ACC * 32;
                mg_for_pairs<MT, NU>([&](int a, int b, int c, int h) {
                    acc[a][b][c][2 * h] += src[slot(a, b, c, h) * 32];
                    acc[a][b][c][2 * h + 1] += src[(slot(a, b, c, h) + 1) * 32];
                });
            }
    }

    if (splits > 1) {
        if (wk == 0)
            mg_for_pairs<MT, NU>([&](int a, int b, int c, int h) {
                const int row = row_of(a, h), col = col_of(b, c);
                if (row < m)
                    __stcg(reinterpret_cast<float2 *>(ws + ((long long)z * m + row) * n + col),
                           make_float2(acc[a][b][c][2 * h], acc[a][b][c][2 * h + 1]));
            });
        constexpr int BMT = WM * MW, BNT = WN * NU * 64;
        const int rows = m - m0 < BMT ? m - m0 : BMT;
        mg_splitk_finish<T, BNT, WM * WN * WK * 32>(ws, Y, counters, m, n, m0, n0, rows);
        return;
    }
    if (wk != 0)
        return;
    mg_for_pairs<MT, NU>([&](int a, int b, int c, int h) {
        const int row = row_of(a, h), col = col_of(b, c);
        if (row < m) {
            const T lo = from_f32<T>(acc[a][b][c][2 * h]), hi = from_f32<T>(acc[a][b][c][2 * h + 1]);
            *reinterpret_cast<unsigned *>(Y + (long long)row * n + col) =
                (unsigned)lo.x | ((unsigned)hi.x << 16);
        }
    });
}

template <typename T, int BM, int BN, int BK, int WM, int WN, int WK, int STAGES, int ZP, int SA>
__global__ void __launch_bounds__(WM *WN *WK * 32)
    mg_fused(const T *__restrict__ X, const uint4 *__restrict__ Wp, const T *__restrict__ S,
             const T *__restrict__ Z, T *__restrict__ Y, float *__restrict__ ws,
             int *__restrict__ counters, int m, int n, int k, int group, int gsh)
{
    constexpr int NT = WM * WN * WK * 32;
    constexpr int MW = BM / WM, MT = MW / 16; // rows per warp, m16 tiles per warp
    constexpr int NU = BN / WN / 64;          // 64-column units per warp
    constexpr int BU = BN / 64;               // 64-column units per block
    constexpr int KS = BK / 16;               // k16 steps per stage
    constexpr int SR = BK / 32 > 0 ? BK / 32 : 1; // scale rows per stage at most (G >= 32)
    constexpr int X_BYTES = BM * BK * 2, W_BYTES = BK * BN / 2, S_BYTES = SR * BN * 2;
    constexpr int STAGE_BYTES = X_BYTES + W_BYTES + S_BYTES * (1 + ZP);
    static_assert(BK >= 64 && BK % 64 == 0, "BK: a multiple of 64");
    static_assert(MW % 16 == 0 && MT >= 1, "BM / WM: a multiple of 16");
    static_assert(NU >= 1 && BN % (64 * WN) == 0, "BN / WN: a multiple of 64");
    static_assert(KS % WK == 0, "BK / 16: a multiple of WK");
    static_assert(STAGES >= 2, "STAGES >= 2");

    extern __shared__ uint4 mg_smem[];
    unsigned char *smem = reinterpret_cast<unsigned char *>(mg_smem);

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wk = warp % WK, wn = (warp / WK) % WN, wm = warp / (WK * WN);
    const int g = lane >> 2, tq = lane & 3;
    const int n0 = blockIdx.x * BN, m0 = blockIdx.y * BM;
    const int splits = gridDim.z, z = blockIdx.z;
    const int iters = k / BK;
    const int kb_begin = (int)((long long)z * iters / splits);
    const int kb_end = (int)((long long)(z + 1) * iters / splits);
    const int L = kb_end - kb_begin;
    const long long units_n = n / 64;

    auto load_stage = [&](int slot, int kb) {
        unsigned char *st = smem + slot * STAGE_BYTES;
        T *xs = reinterpret_cast<T *>(st);
        uint4 *wsm = reinterpret_cast<uint4 *>(st + X_BYTES);
        T *ss = reinterpret_cast<T *>(st + X_BYTES + W_BYTES);
        const int k0 = kb * BK;
        constexpr int XCH = BK / 8; // 16-byte chunks per X row
        for (int c = tid; c < BM * XCH; c += NT) {
            const int r = c / XCH, ch = c % XCH;
            const int row = m0 + r;
            const bool valid = row < m;
            const T *src = X + (long long)(valid ? row : 0) * k + k0 + ch * 8;
            ptx_cp_async_zfill(xs + r * BK + ((ch ^ (r & 7)) * 8), src, valid);
        }
        for (int c = tid; c < KS * BU * 32; c += NT) {
            const int kk = c / (BU * 32), rest = c % (BU * 32);
            const uint4 *src = Wp + ((long long)(k0 / 16 + kk) * units_n + n0 / 64) * 32 + rest;
            ptx_cp_async<16>(wsm + kk * BU * 32 + rest, src);
        }
        const int rows = gsh >= 0 ? BK >> gsh : 1;
        const int grow0 = k0 / group;
        for (int c = tid; c < rows * (BN / 8); c += NT) {
            const int r = c / (BN / 8), ch = c % (BN / 8);
            ptx_cp_async<16>(ss + r * BN + ch * 8, S + (long long)(grow0 + r) * n + n0 + ch * 8);
            if (ZP)
                ptx_cp_async<16>(ss + SR * BN + r * BN + ch * 8,
                                 Z + (long long)(grow0 + r) * n + n0 + ch * 8);
        }
    };

    float acc[MT][NU][8][4];
    mg_for_pairs<MT, NU>([&](int a, int b, int c, int h) { acc[a][b][c][2 * h] = acc[a][b][c][2 * h + 1] = 0.f; });

    // SA: per-group partial sums on MAGIC + q, and sum(X) per row, since the last group end
    float P[SA ? MT : 1][SA ? NU : 1][8][4], sx[SA ? MT : 1][4];
    if (SA) {
        mg_for_pairs<SA ? MT : 1, SA ? NU : 1>(
            [&](int a, int b, int c, int h) { P[a][b][c][2 * h] = P[a][b][c][2 * h + 1] = 0.f; });
#pragma unroll
        for (int a = 0; a < (SA ? MT : 1); a++)
            sx[a][0] = sx[a][1] = sx[a][2] = sx[a][3] = 0.f;
    }
    const int glog = (group & (group - 1)) == 0 ? __ffs(group) - 1 : 30; // per column: one group

#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < L)
            load_stage(s, kb_begin + s);
        ptx_cp_async_commit();
    }
    for (int it = 0; it < L; it++) {
        ptx_cp_async_wait<STAGES - 2>();
        __syncthreads();
        const int pre = it + STAGES - 1;
        if (pre < L)
            load_stage(pre % STAGES, kb_begin + pre);
        ptx_cp_async_commit();

        const unsigned char *st = smem + (it % STAGES) * STAGE_BYTES;
        const T *xs = reinterpret_cast<const T *>(st);
        const uint4 *wsm = reinterpret_cast<const uint4 *>(st + X_BYTES);
        const T *ss = reinterpret_cast<const T *>(st + X_BYTES + W_BYTES);
#pragma unroll
        for (int j = wk; j < KS; j += WK) {
            const int srow = gsh >= 0 ? (j * 16) >> gsh : 0;
            unsigned a[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                const int r = wm * MW + mt * 16 + (lane & 15);
                const int ch = j * 2 + (lane >> 4);
                mg_ldmatrix_x4(a[mt], xs + r * BK + ((ch ^ (r & 7)) * 8));
            }
#pragma unroll
            for (int u = 0; u < NU; u++) {
                const int uc = wn * NU + u;
                const uint4 w = wsm[(j * BU + uc) * 32 + lane];
                const uint4 sv = *reinterpret_cast<const uint4 *>(ss + srow * BN + uc * 64 + g * 8);
                uint4 zv = make_uint4(0, 0, 0, 0);
                if (ZP)
                    zv = *reinterpret_cast<const uint4 *>(ss + SR * BN + srow * BN + uc * 64 + g * 8);
                const unsigned wv[4] = {w.x, w.y, w.z, w.w};
                const unsigned s4[4] = {sv.x, sv.y, sv.z, sv.w};
                const unsigned z4[4] = {zv.x, zv.y, zv.z, zv.w};
#pragma unroll
                for (int t = 0; t < 8; t++) {
                    if (SA) {
                        const unsigned word = wv[t >> 1] >> ((t & 1) * 8);
                        const unsigned b0 = mg_lop3_and_or(word, 0x000f000fu, mg_type<T>::MAGIC2);
                        const unsigned b1 = mg_lop3_and_or(word >> 4, 0x000f000fu, mg_type<T>::MAGIC2);
#pragma unroll
                        for (int mt = 0; mt < MT; mt++)
                            mg_mma<T>(P[SA ? mt : 0][SA ? u : 0][t], a[mt], b0, b1);
                        continue;
                    }
                    unsigned b0, b1;
                    mg_dequant_tile<T, ZP>(wv, s4, z4, t, b0, b1);
#pragma unroll
                    for (int mt = 0; mt < MT; mt++)
                        mg_mma<T>(acc[mt][u][t], a[mt], b0, b1);
                }
            }
            if (SA) {
#pragma unroll
                for (int mt = 0; mt < MT; mt++)
                    mg_mma<T>(sx[SA ? mt : 0], a[mt], mg_type<T>::ONE2, mg_type<T>::ONE2);
                // this warp's next step is 16 WK further; apply the scale when it leaves the group
                const int kg = (kb_begin + it) * BK + j * 16;
                const bool end = (it == L - 1 && j + WK >= KS) || (kg >> glog) != ((kg + 16 * WK) >> glog);
                if (end) {
#pragma unroll
                    for (int u = 0; u < NU; u++) {
                        // accumulator columns 8 t + 2 tq + e: element t of the 8 at 16 tq + 8 e
                        const T *srw = ss + srow * BN + (wn * NU + u) * 64 + 16 * tq;
                        const uint4 sv2[2] = {*reinterpret_cast<const uint4 *>(srw),
                                              *reinterpret_cast<const uint4 *>(srw + 8)};
                        uint4 zv2[2] = {make_uint4(0, 0, 0, 0), make_uint4(0, 0, 0, 0)};
                        if (ZP) {
                            zv2[0] = *reinterpret_cast<const uint4 *>(srw + SR * BN);
                            zv2[1] = *reinterpret_cast<const uint4 *>(srw + SR * BN + 8);
                        }
#pragma unroll
                        for (int t = 0; t < 8; t++)
#pragma unroll
                            for (int d = 0; d < 4; d++) {
                                const float sc = to_f32(reinterpret_cast<const T *>(&sv2[d & 1])[t]);
                                const float mz = ZP ? to_f32(reinterpret_cast<const T *>(&zv2[d & 1])[t])
                                                    : mg_type<T>::MAGIC_F + 8.0f;
#pragma unroll
                                for (int mt = 0; mt < MT; mt++) {
                                    float &pv = P[SA ? mt : 0][SA ? u : 0][t][d];
                                    acc[mt][u][t][d] += sc * (pv - mz * sx[SA ? mt : 0][d & 2]);
                                    pv = 0.f;
                                }
                            }
                    }
#pragma unroll
                    for (int mt = 0; mt < MT; mt++)
                        sx[SA ? mt : 0][0] = sx[SA ? mt : 0][1] = sx[SA ? mt : 0][2] = sx[SA ? mt : 0][3] = 0.f;
                }
            }
        }
    }
    ptx_cp_async_wait<0>();
    __syncthreads();

    mg_epilogue<T, MT, NU, WM, WN, WK>(acc, smem, Y, ws, counters, m, n, m0, n0, wm, wn, wk);
}
