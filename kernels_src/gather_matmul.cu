// gather_matmul.cu - SparQ's gather-matmul ops (docs/gather_matmul.md), device code only.
//
// OP 0 gather_inner_bmv:             out[g,j] = sum_t A[g, I[g,t]] * B[g, I[g,t], j]
// OP 1 gather_inner_matrix_only_bmv: out[g,j] = sum_t A[g, t]      * B[g, I[g,t], j]
// OP 2 gather_outer_bmv:             out[g,j] = sum_t A[g, t]      * B[g, t, I[g,j]]
// Inner ops: A (g, kA) with kA = k_pre (OP 0) or k (OP 1), I (g, k) in [0, k_pre), B (g, k_pre, n)
// row-major or, transposed, stored (g, n, k_pre). Outer op: A (g, k), I (g, n) in [0, n_pre),
// B (g, k, n_pre) row-major or, transposed, stored (g, n_pre, k). out (g, n). fp32 accumulation.
//
// Two kernels, chosen by the host from the layout, and their cp.async variants chosen by the
// `stages` knob (gm_rows_async, gm_cols_async, and gm_dense_async for gm_dense below: described
// where they are defined), and their variants with rows of B^T in registers chosen by `reg_rows`
// (gm_cols_reg, gm_dense_reg). All give each
// block CHUNK consecutive output columns of one g (the user-facing `chunk` knob) and reduce over
// the whole of k:
//  - gm_rows: B's gathered data is contiguous along the output columns (inner ops, row-major B)
//    or not at all (outer op, row-major B). Threads split into LANES = CHUNK / VEC column lanes
//    (VEC elements each, one vector load) times ROWS = THREADS / LANES row groups over k; partial
//    sums are reduced with warp shuffles, then through shared memory. U: row loads in flight per
//    thread; MINB: blocks per SM the compiler must fit (register cap).
//  - gm_cols: B's gathered data is contiguous along k (outer op, transposed B) or scattered along
//    it (inner ops, transposed B). Groups of GS lanes take one output column at a time and split k
//    among themselves (VEC elements each); a shuffle reduction finishes each column.
// Indices and A values are staged in shared memory in tiles of KT rows.

#include "common.cuh"
#include "ptx.cuh"

#define GM_KT 1024

// Loads rows [t0, t0 + len) of the indices and A values that k-loop uses into shared memory.
// For OP 2 only A is staged (indices belong to columns).
template <typename T, int OP>
__device__ __forceinline__ void gm_stage(const T *__restrict__ Ag, const int *__restrict__ Ig, int t0,
                                         int len, int *sI, float *sA)
{
    for (int i = threadIdx.x; i < len; i += blockDim.x) {
        if (OP == 2) {
            sA[i] = to_f32(Ag[t0 + i]);
        } else {
            const int idx = Ig[t0 + i];
            sI[i] = idx;
            sA[i] = to_f32(Ag[OP == 0 ? idx : t0 + i]);
        }
    }
}

// The row kernels' epilogue: sums the partial rows of the block (warp shuffles when a warp holds
// several rows, then shared memory) and writes the block's CHUNK output columns of out_g.
template <int CHUNK, int VEC, int THREADS> struct gm_rows_shape {
    static constexpr int LANES = CHUNK / VEC;
    static constexpr int ROWS = THREADS / LANES;
    static constexpr bool SHFL = LANES < 32 && (LANES & (LANES - 1)) == 0 && THREADS % 32 == 0;
    static constexpr int PARTS = SHFL ? THREADS / 32 : ROWS;
};

template <typename T, int CHUNK, int VEC, int THREADS>
__device__ __forceinline__ void gm_rows_reduce(float (&acc)[VEC], float *red, int row, int lane,
                                               T *__restrict__ out_g, int c0, int n)
{
    typedef gm_rows_shape<CHUNK, VEC, THREADS> shape;
    int part = row;
    bool store = row < shape::ROWS;
    if (shape::SHFL) {
#pragma unroll
        for (int off = 16; off >= shape::LANES; off >>= 1)
#pragma unroll
            for (int v = 0; v < VEC; v++)
                acc[v] += __shfl_xor_sync(0xffffffffu, acc[v], off);
        part = threadIdx.x / 32;
        store = threadIdx.x % 32 < shape::LANES;
    }
    if (store) {
#pragma unroll
        for (int v = 0; v < VEC; v++)
            red[part * CHUNK + lane * VEC + v] = acc[v];
    }
    __syncthreads();
    for (int cc = threadIdx.x; cc < CHUNK && c0 + cc < n; cc += THREADS) {
        float sum = 0.f;
#pragma unroll 4
        for (int p = 0; p < shape::PARTS; p++)
            sum += red[p * CHUNK + cc];
        out_g[c0 + cc] = from_f32<T>(sum);
    }
}

template <typename T, int OP, int CHUNK, int VEC, int THREADS, int U, int MINB>
__global__ void __launch_bounds__(THREADS, MINB)
    gm_rows(const T *__restrict__ A, const T *__restrict__ B, const int *__restrict__ I,
            T *__restrict__ out, int g, int k, int kp, int n)
{
    static_assert(CHUNK % VEC == 0, "CHUNK must be a multiple of VEC");
    constexpr int LANES = gm_rows_shape<CHUNK, VEC, THREADS>::LANES;
    static_assert(LANES <= THREADS, "CHUNK / VEC must not exceed THREADS");
    constexpr int ROWS = gm_rows_shape<CHUNK, VEC, THREADS>::ROWS;
    constexpr int PARTS = gm_rows_shape<CHUNK, VEC, THREADS>::PARTS;
    static_assert(U >= 1, "U (row loads in flight per thread) must be >= 1");

    __shared__ float red[PARTS * CHUNK];

    const int nchunks = (n + CHUNK - 1) / CHUNK;
    const long long gi = blockIdx.x / nchunks;
    const int c0 = (blockIdx.x % nchunks) * CHUNK;
    const int lane = threadIdx.x % LANES;
    const int row = threadIdx.x / LANES;
    const int col = c0 + lane * VEC;
    const bool active = row < ROWS && col < n;

    const T *Ag = A + gi * (OP == 0 ? kp : k);
    const int *Ig = I + gi * (OP == 2 ? n : k);
    const T *Bg = B + gi * (long long)(OP == 2 ? k : kp) * (OP == 2 ? kp : n);

    float acc[VEC];
#pragma unroll
    for (int v = 0; v < VEC; v++)
        acc[v] = 0.f;

    // No staging and no barrier before the loads: each warp loads its own rows' indices (the
    // LANES threads of a row share one broadcast load), and the indices of the next U rows are
    // loaded while this step's rows are in flight, so a step costs one memory latency, not two.
    if (active) {
        // OP 2: this thread's column index into B's rows of length kp (= n_pre); VEC is 1.
        const int ocol = OP == 2 ? Ig[col] : 0;
        int idx[U];
        float a[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int tt = row + u * ROWS;
            idx[u] = tt < k && OP != 2 ? Ig[tt] : 0;
            a[u] = tt < k && OP != 0 ? to_f32(Ag[tt]) : 0.f;
        }
#pragma unroll 1
        for (int t = row; t < k; t += U * ROWS) {
            // raw vectors: converted only after the next indices are on their way
            raw_vec<VEC * (int)sizeof(T)> rb[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int tt = t + u * ROWS;
                const T *p = OP == 2 ? Bg + (long long)tt * kp + ocol : Bg + (long long)idx[u] * n + col;
                if (tt < k) {
                    ld_nc(rb[u], p);
                    if (OP == 0)
                        a[u] = to_f32(Ag[idx[u]]);
                } else {
                    rb[u] = raw_vec<VEC * (int)sizeof(T)>{};
                    a[u] = 0.f;
                }
            }
            int nidx[U];
            float na[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int tt = t + (U + u) * ROWS;
                nidx[u] = tt < k && OP != 2 ? Ig[tt] : 0;
                na[u] = tt < k && OP != 0 ? to_f32(Ag[tt]) : 0.f;
            }
#pragma unroll
            for (int u = 0; u < U; u++) {
                float b[VEC];
                widen_f32<T, VEC>(rb[u], b);
#pragma unroll
                for (int v = 0; v < VEC; v++)
                    acc[v] = fmaf(a[u], b[v], acc[v]);
                idx[u] = nidx[u];
                a[u] = na[u];
            }
        }
    }

    gm_rows_reduce<T, CHUNK, VEC, THREADS>(acc, red, row, lane, out + gi * n, c0, n);
}

// Inner ops, row-major B, with cp.async: each thread copies its gathered row segments straight
// into its own shared-memory slots, S stages deep, so the bytes in flight are bounded by shared
// memory rather than by registers. Indices and A values of a tile of KT rows are staged first
// (one memory latency per tile); the copies then run S - 1 rows ahead of the arithmetic. No
// barrier is needed inside the pipeline: a thread reads only the slots it filled.
template <typename T, int OP, int CHUNK, int VEC, int THREADS, int S>
__global__ void __launch_bounds__(THREADS)
    gm_rows_async(const T *__restrict__ A, const T *__restrict__ B, const int *__restrict__ I,
                  T *__restrict__ out, int g, int k, int kp, int n)
{
    static_assert(OP != 2, "gm_rows_async serves the inner ops");
    static_assert(S >= 2, "S (pipeline stages) must be >= 2");
    constexpr int BYTES = VEC * (int)sizeof(T);
    static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
    constexpr int LANES = gm_rows_shape<CHUNK, VEC, THREADS>::LANES;
    static_assert(CHUNK % VEC == 0 && LANES <= THREADS, "CHUNK / VEC must divide and fit THREADS");
    constexpr int ROWS = gm_rows_shape<CHUNK, VEC, THREADS>::ROWS;
    constexpr int PARTS = gm_rows_shape<CHUNK, VEC, THREADS>::PARTS;

    __shared__ int sI[GM_KT];
    __shared__ float sA[GM_KT];
    __shared__ float red[PARTS * CHUNK];
    __shared__ __align__(16) raw_vec<BYTES> buf[S][THREADS];

    const int nchunks = (n + CHUNK - 1) / CHUNK;
    const long long gi = blockIdx.x / nchunks;
    const int c0 = (blockIdx.x % nchunks) * CHUNK;
    const int lane = threadIdx.x % LANES;
    const int row = threadIdx.x / LANES;
    const int col = c0 + lane * VEC;
    const bool active = row < ROWS && col < n;
    const T *Ag = A + gi * (OP == 0 ? kp : k);
    const int *Ig = I + gi * k;
    const T *Bg = B + gi * (long long)kp * n + col;
    raw_vec<BYTES> *slot = &buf[0][threadIdx.x];

    float acc[VEC];
#pragma unroll
    for (int v = 0; v < VEC; v++)
        acc[v] = 0.f;

    for (int t0 = 0; t0 < k; t0 += GM_KT) {
        const int len = min(GM_KT, k - t0);
        __syncthreads();
        gm_stage<T, OP>(Ag, Ig, t0, len, sI, sA);
        __syncthreads();
        const int J = active && row < len ? (len - row + ROWS - 1) / ROWS : 0;
#pragma unroll
        for (int s = 0; s < S - 1; s++) {
            if (s < J)
                ptx_cp_async<BYTES>(slot + s * THREADS, Bg + (long long)sI[row + s * ROWS] * n);
            ptx_cp_async_commit();
        }
#pragma unroll 1
        for (int j = 0; j < J; j++) {
            const int jn = j + S - 1;
            if (jn < J)
                ptx_cp_async<BYTES>(slot + (jn % S) * THREADS,
                                    Bg + (long long)sI[row + jn * ROWS] * n);
            ptx_cp_async_commit();
            ptx_cp_async_wait<S - 1>();
            float b[VEC];
            widen_f32<T, VEC>(slot[(j % S) * THREADS], b);
            const float a = sA[row + j * ROWS];
#pragma unroll
            for (int v = 0; v < VEC; v++)
                acc[v] = fmaf(a, b[v], acc[v]);
        }
        ptx_cp_async_wait<0>();
    }

    gm_rows_reduce<T, CHUNK, VEC, THREADS>(acc, red, row, lane, out + gi * n, c0, n);
}

// The column kernels' epilogue: each group of GS lanes sums its partial dot products with
// shuffles and its first lane writes the group's columns j0, j0 + NG, ... below c1.
template <typename T, int CPG, int GS, int NG>
__device__ __forceinline__ void gm_cols_store(const float (&acc)[CPG], T *__restrict__ out_g,
                                              int j0, int c1, int lane)
{
#pragma unroll
    for (int q = 0; q < CPG; q++) {
        float s = acc[q];
#pragma unroll
        for (int off = GS / 2; off >= 1; off >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, off);
        const int j = j0 + q * NG;
        if (lane == 0 && j < c1)
            out_g[j] = from_f32<T>(s);
    }
}

template <typename T, int OP, int CHUNK, int VEC, int GS, int THREADS>
__global__ void __launch_bounds__(THREADS)
    gm_cols(const T *__restrict__ A, const T *__restrict__ B, const int *__restrict__ I,
            T *__restrict__ out, int g, int k, int kp, int n)
{
    static_assert(GS >= 1 && GS <= 32 && (GS & (GS - 1)) == 0, "GS must be a power of two <= 32");
    static_assert(THREADS % 32 == 0, "THREADS must be a multiple of 32");
    static_assert(OP == 2 || VEC == 1, "inner ops gather along k: VEC must be 1");
    constexpr int NG = THREADS / GS;

    __shared__ int sI[GM_KT];
    __shared__ float sA[GM_KT];

    const int nchunks = (n + CHUNK - 1) / CHUNK;
    const long long gi = blockIdx.x / nchunks;
    const int c0 = (blockIdx.x % nchunks) * CHUNK;
    const int c1 = min(n, c0 + CHUNK);
    const int lane = threadIdx.x % GS;
    const int grp = threadIdx.x / GS;

    const T *Ag = A + gi * (OP == 0 ? kp : k);
    const int *Ig = I + gi * (OP == 2 ? n : k);
    // Transposed B: (g, n, kp) for inner ops, (g, kp = n_pre, k) for the outer op.
    const T *Bg = B + gi * (long long)(OP == 2 ? kp : n) * (OP == 2 ? k : kp);

    // Columns of this block handled by this group: at most ceil(CHUNK / NG) of them.
    constexpr int CPG = (CHUNK + NG - 1) / NG;
    float acc[CPG];
#pragma unroll
    for (int q = 0; q < CPG; q++)
        acc[q] = 0.f;

    for (int t0 = 0; t0 < k; t0 += GM_KT) {
        const int len = min(GM_KT, k - t0);
        __syncthreads();
        gm_stage<T, OP>(Ag, Ig, t0, len, sI, sA);
        __syncthreads();
        // k outer, this group's columns inner, so that the loads of all CPG columns are in flight
        // together.
        if (OP == 2) {
            const T *rows[CPG];
#pragma unroll
            for (int q = 0; q < CPG; q++) {
                const int j = c0 + grp + q * NG;
                rows[q] = j < c1 ? Bg + (long long)Ig[j] * k + t0 : nullptr;
            }
            for (int t = lane * VEC; t < len; t += GS * VEC) {
                float b[CPG][VEC];
#pragma unroll
                for (int q = 0; q < CPG; q++) {
                    if (rows[q])
                        load_f32<T, VEC>(rows[q] + t, b[q]);
                    else
#pragma unroll
                        for (int v = 0; v < VEC; v++)
                            b[q][v] = 0.f;
                }
#pragma unroll
                for (int q = 0; q < CPG; q++)
#pragma unroll
                    for (int v = 0; v < VEC; v++)
                        acc[q] = fmaf(sA[t + v], b[q][v], acc[q]);
            }
        } else {
            for (int t = lane; t < len; t += GS) {
                const int idx = sI[t];
                const float a = sA[t];
#pragma unroll
                for (int q = 0; q < CPG; q++) {
                    const int j = c0 + grp + q * NG;
                    if (j < c1)
                        acc[q] = fmaf(a, load1_f32(Bg + (long long)j * kp + idx), acc[q]);
                }
            }
        }
    }
    gm_cols_store<T, CPG, GS, NG>(acc, out + gi * n, c0 + grp, c1, lane);
}

// Outer op, transposed B, with cp.async: each group of GS lanes copies its gathered rows of B^T
// (k contiguous elements each, VEC per lane and copy) straight into its threads' own shared-memory
// slots, S stages deep, and multiplies them with A from shared memory while the next copies are in
// flight; the bytes in flight are bounded by shared memory, not by registers, so CHUNK can span
// many columns per group. The block's column indices are staged with A (one memory latency, not
// two); a thread's copies run over its columns q (grp + q NG) and, within a column, over k in steps
// of GS VEC. Each finished column's group sum goes to red[] (several k tiles add up there). No
// barrier inside the pipeline: a thread reads only the slots it filled, and the loop bounds are the
// same for every thread, so the shuffles see whole warps.
template <typename T, int CHUNK, int VEC, int GS, int THREADS, int S>
__global__ void __launch_bounds__(THREADS)
    gm_cols_async(const T *__restrict__ A, const T *__restrict__ B, const int *__restrict__ I,
                  T *__restrict__ out, int g, int k, int kp, int n)
{
    static_assert(S >= 2, "S (pipeline stages) must be >= 2");
    static_assert(GS >= 1 && GS <= 32 && (GS & (GS - 1)) == 0, "GS must be a power of two <= 32");
    static_assert(THREADS % 32 == 0, "THREADS must be a multiple of 32");
    constexpr int BYTES = VEC * (int)sizeof(T);
    static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
    constexpr int NG = THREADS / GS;
    constexpr int CPG = (CHUNK + NG - 1) / NG;

    __shared__ float sA[GM_KT];
    __shared__ int sJ[CHUNK];
    __shared__ float red[CHUNK];
    __shared__ __align__(16) raw_vec<BYTES> buf[S][THREADS];

    const int nchunks = (n + CHUNK - 1) / CHUNK;
    const long long gi = blockIdx.x / nchunks;
    const int c0 = (blockIdx.x % nchunks) * CHUNK;
    const int c1 = min(n, c0 + CHUNK);
    const int lane = threadIdx.x % GS;
    const int grp = threadIdx.x / GS;
    const T *Ag = A + gi * k;
    const int *Ig = I + gi * n;
    const T *Bg = B + gi * (long long)kp * k + lane * VEC;
    raw_vec<BYTES> *slot = &buf[0][threadIdx.x];

    for (int cc = threadIdx.x; cc < CHUNK; cc += THREADS) {
        sJ[cc] = c0 + cc < c1 ? Ig[c0 + cc] : -1;
        red[cc] = 0.f;
    }
    for (int t0 = 0; t0 < k; t0 += GM_KT) {
        const int len = min(GM_KT, k - t0);
        if (t0 > 0)
            __syncthreads();
        gm_stage<T, 2>(Ag, nullptr, t0, len, nullptr, sA);
        __syncthreads();
        // copies per column (the same for every thread) and this tile's copies in all
        const int TS = (len + GS * VEC - 1) / (GS * VEC);
        const int J = CPG * TS;
        // copy jn: column q = jn / TS, k step ts = jn % TS, kept as counters
        int qn = 0, tsn = 0;
        auto issue = [&](int s) {
            const int e = (lane + tsn * GS) * VEC;
            const int col = grp + qn * NG;
            const int idx = col < CHUNK ? sJ[col] : -1;
            if (idx >= 0 && e < len)
                ptx_cp_async<BYTES>(slot + s * THREADS,
                                    Bg + (long long)idx * k + t0 + tsn * GS * VEC);
            ptx_cp_async_commit();
            if (++tsn == TS) {
                tsn = 0;
                qn++;
            }
        };
#pragma unroll
        for (int s = 0; s < S - 1; s++) {
            if (s < J)
                issue(s);
            else
                ptx_cp_async_commit();
        }
        int q = 0, ts = 0;
        float acc = 0.f;
#pragma unroll 1
        for (int j = 0; j < J; j++) {
            const int jn = j + S - 1;
            if (jn < J)
                issue(jn % S);
            else
                ptx_cp_async_commit();
            ptx_cp_async_wait<S - 1>();
            const int e = (lane + ts * GS) * VEC;
            const int col = grp + q * NG;
            if (col < CHUNK && sJ[col] >= 0 && e < len) {
                float b[VEC];
                widen_f32<T, VEC>(slot[(j % S) * THREADS], b);
#pragma unroll
                for (int v = 0; v < VEC; v++)
                    acc = fmaf(sA[e + v], b[v], acc);
            }
            if (++ts == TS) {
#pragma unroll
                for (int off = GS / 2; off >= 1; off >>= 1)
                    acc += __shfl_xor_sync(0xffffffffu, acc, off);
                if (lane == 0 && col < CHUNK)
                    red[col] += acc;
                acc = 0.f;
                ts = 0;
                q++;
            }
        }
        ptx_cp_async_wait<0>();
    }
    __syncthreads();
    for (int cc = threadIdx.x; c0 + cc < c1; cc += THREADS)
        out[gi * n + c0 + cc] = from_f32<T>(red[cc]);
}

// The dense kernels' weight vector: w[c] (k_pre floats of shared memory) = the sum of the gathered
// A values whose index is c (duplicate indices add up, as the sum over t counts them), complete
// for every thread on return (two barriers).
template <typename T, int OP, int THREADS>
__device__ __forceinline__ void gm_scatter_w(float *w, const T *Ag, const int *Ig, int k, int kp)
{
    for (int c = threadIdx.x; c < kp; c += THREADS)
        w[c] = 0.f;
    __syncthreads();
    for (int t = threadIdx.x; t < k; t += THREADS) {
        const int idx = Ig[t];
        atomicAdd(&w[idx], to_f32(Ag[OP == 0 ? idx : t]));
    }
    __syncthreads();
}

// Inner ops with transposed B and a short k_pre (SparQ step 1: k_pre = 128 = head dim): the hardware
// fetches whole 32-byte sectors, so a gather of k of a row's k_pre elements reads most of the row
// anyway. Scatter the gathered A values into a dense weight vector w (k_pre floats, dynamic shared
// memory; duplicates add up, as the sum over t counts them), then stream every row of B with
// 16-byte loads: out[j] = sum_c w[c] * Bt[j, c]. Groups of GS lanes per column as in gm_cols.
template <typename T, int OP, int CHUNK, int VEC, int GS, int THREADS>
__global__ void __launch_bounds__(THREADS)
    gm_dense(const T *__restrict__ A, const T *__restrict__ B, const int *__restrict__ I,
             T *__restrict__ out, int g, int k, int kp, int n)
{
    static_assert(OP != 2, "gm_dense serves the inner ops");
    static_assert(GS >= 1 && GS <= 32 && (GS & (GS - 1)) == 0, "GS must be a power of two <= 32");
    constexpr int NG = THREADS / GS;
    constexpr int CPG = (CHUNK + NG - 1) / NG;
    extern __shared__ float w[];

    const int nchunks = (n + CHUNK - 1) / CHUNK;
    const long long gi = blockIdx.x / nchunks;
    const int c0 = (blockIdx.x % nchunks) * CHUNK;
    const int c1 = min(n, c0 + CHUNK);
    const int lane = threadIdx.x % GS;
    const int grp = threadIdx.x / GS;
    const T *Ag = A + gi * (OP == 0 ? kp : k);
    const int *Ig = I + gi * k;
    const T *Bg = B + gi * (long long)n * kp;

    gm_scatter_w<T, OP, THREADS>(w, Ag, Ig, k, kp);

    float acc[CPG];
#pragma unroll
    for (int q = 0; q < CPG; q++)
        acc[q] = 0.f;
    for (int c = lane * VEC; c < kp; c += GS * VEC) {
        float b[CPG][VEC];
#pragma unroll
        for (int q = 0; q < CPG; q++) {
            const int j = c0 + grp + q * NG;
            if (j < c1)
                load_f32<T, VEC>(Bg + (long long)j * kp + c, b[q]);
            else
#pragma unroll
                for (int v = 0; v < VEC; v++)
                    b[q][v] = 0.f;
        }
#pragma unroll
        for (int q = 0; q < CPG; q++)
#pragma unroll
            for (int v = 0; v < VEC; v++)
                acc[q] = fmaf(w[c + v], b[q][v], acc[q]);
    }
    gm_cols_store<T, CPG, GS, NG>(acc, out + gi * n, c0 + grp, c1, lane);
}

// gm_dense with cp.async (`stages` S >= 2): the rows of B^T do not depend on the indices, so each
// thread starts copying its first S - 1 row pieces (VEC elements, 4-16 bytes) into its own
// shared-memory slots before the indices and A values are loaded and scattered into w, and keeps
// S - 1 copies ahead of the arithmetic afterwards. B is thus in flight during the scatter's two
// dependent round trips and its barriers, and the bytes in flight are bounded by shared memory, not
// by registers (no value per column is held). A thread's copies run over its columns q
// (grp + q NG) and, within a column, over k_pre in steps of GS VEC; each finished column's group
// sum is written straight out (the whole of k_pre is one pass). No barrier inside the pipeline: a
// thread reads only the slots it filled, and the loop bounds are the same for every thread, so the
// shuffles see whole warps.
template <typename T, int OP, int CHUNK, int VEC, int GS, int THREADS, int S>
__global__ void __launch_bounds__(THREADS)
    gm_dense_async(const T *__restrict__ A, const T *__restrict__ B, const int *__restrict__ I,
                   T *__restrict__ out, int g, int k, int kp, int n)
{
    static_assert(OP != 2, "gm_dense_async serves the inner ops");
    static_assert(S >= 2, "S (pipeline stages) must be >= 2");
    static_assert(GS >= 1 && GS <= 32 && (GS & (GS - 1)) == 0, "GS must be a power of two <= 32");
    static_assert(THREADS % 32 == 0, "THREADS must be a multiple of 32");
    constexpr int BYTES = VEC * (int)sizeof(T);
    static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
    constexpr int NG = THREADS / GS;
    constexpr int CPG = (CHUNK + NG - 1) / NG;
    extern __shared__ float w[];
    __shared__ __align__(16) raw_vec<BYTES> buf[S][THREADS];

    const int nchunks = (n + CHUNK - 1) / CHUNK;
    const long long gi = blockIdx.x / nchunks;
    const int c0 = (blockIdx.x % nchunks) * CHUNK;
    const int c1 = min(n, c0 + CHUNK);
    const int lane = threadIdx.x % GS;
    const int grp = threadIdx.x / GS;
    const T *Ag = A + gi * (OP == 0 ? kp : k);
    const int *Ig = I + gi * k;
    const T *Bg = B + gi * (long long)n * kp + lane * VEC;
    raw_vec<BYTES> *slot = &buf[0][threadIdx.x];

    // copies per column (the same for every thread) and copies in all
    const int TS = (kp + GS * VEC - 1) / (GS * VEC);
    const int J = CPG * TS;
    // copy jn: column q = jn / TS, k_pre step ts = jn % TS, kept as counters
    int qn = 0, tsn = 0;
    auto issue = [&](int s) {
        const int e = (lane + tsn * GS) * VEC;
        const int j = c0 + grp + qn * NG;
        if (j < c1 && e < kp)
            ptx_cp_async<BYTES>(slot + s * THREADS, Bg + (long long)j * kp + tsn * GS * VEC);
        ptx_cp_async_commit();
        if (++tsn == TS) {
            tsn = 0;
            qn++;
        }
    };
#pragma unroll
    for (int s = 0; s < S - 1; s++) {
        if (s < J)
            issue(s);
        else
            ptx_cp_async_commit();
    }

    gm_scatter_w<T, OP, THREADS>(w, Ag, Ig, k, kp);

    int q = 0, ts = 0;
    float acc = 0.f;
#pragma unroll 1
    for (int jj = 0; jj < J; jj++) {
        const int jn = jj + S - 1;
        if (jn < J)
            issue(jn % S);
        else
            ptx_cp_async_commit();
        ptx_cp_async_wait<S - 1>();
        const int e = (lane + ts * GS) * VEC;
        const int j = c0 + grp + q * NG;
        if (j < c1 && e < kp) {
            float b[VEC];
            widen_f32<T, VEC>(slot[(jj % S) * THREADS], b);
#pragma unroll
            for (int v = 0; v < VEC; v++)
                acc = fmaf(w[e + v], b[v], acc);
        }
        if (++ts == TS) {
#pragma unroll
            for (int off = GS / 2; off >= 1; off >>= 1)
                acc += __shfl_xor_sync(0xffffffffu, acc, off);
            if (lane == 0 && j < c1)
                out[gi * n + j] = from_f32<T>(acc);
            acc = 0.f;
            ts = 0;
            q++;
        }
    }
    ptx_cp_async_wait<0>();
}

// The transposing butterfly of gm_dense_reg: sums each of a lane's R partial row sums (R and GS
// powers of two) over the GS lanes of its group. At each of the first log2(min(R, GS)) steps a lane
// keeps half of its rows, sends the other half to its partner (lane ^ o) and adds what the partner
// sent for the half it keeps, so R rows cost R - 1 shuffles (R <= GS) instead of R log2(GS); the
// steps after those sum the one value left. Afterwards acc[i] holds the whole sum of row
// gm_butterfly_row(lane) + i for i < max(R / GS, 1); lanes that differ only in the bits below
// GS / R hold the same rows.
template <int R, int GS>
__device__ __forceinline__ void gm_butterfly_rows(float (&acc)[R], int lane)
{
#pragma unroll
    for (int o = GS / 2; o >= 1; o >>= 1) {
        const int h = R * o / GS; // rows a lane hands over at this step (0: plain reduction)
        if (h >= 1) {
            const bool up = (lane & o) != 0;
#pragma unroll
            for (int i = 0; i < h; i++) {
                const float send = up ? acc[i] : acc[i + h];
                const float keep = up ? acc[i + h] : acc[i];
                acc[i] = keep + __shfl_xor_sync(0xffffffffu, send, o);
            }
        } else {
            acc[0] += __shfl_xor_sync(0xffffffffu, acc[0], o);
        }
    }
}

// The first of the rows (0 .. R - 1) whose sums gm_butterfly_rows leaves in acc[] of this lane.
template <int R, int GS> __device__ __forceinline__ int gm_butterfly_row(int lane)
{
    int row = 0;
#pragma unroll
    for (int o = GS / 2; o >= 1; o >>= 1) {
        const int h = R * o / GS;
        if (h >= 1 && (lane & o) != 0)
            row += h;
    }
    return row;
}

// The register kernels' batch (gm_dense_reg, gm_cols_reg): acc[r] = the lane's part of row r's
// dot product, its R rows' TS loads of VEC elements against its weights, in fp32.
template <typename T, int R, int TS, int VEC, int BYTES>
__device__ __forceinline__ void gm_reg_dot(const raw_vec<BYTES> (&rb)[R][TS],
                                           const float (&wr)[TS][VEC], float (&acc)[R])
{
#pragma unroll
    for (int r = 0; r < R; r++) {
        acc[r] = 0.f;
#pragma unroll
        for (int ts = 0; ts < TS; ts++) {
            float f[VEC];
            widen_f32<T, VEC>(rb[r][ts], f);
#pragma unroll
            for (int v = 0; v < VEC; v++)
                acc[r] = fmaf(wr[ts][v], f[v], acc[r]);
        }
    }
}

// ... and its end: the group's sums by the transposing butterfly, then this lane's SUMS of them
// stored at out_l[base + i] while base + i < qend (qend: the lane's bound, 0 for a lane whose
// sums another lane of its set of copies stores).
template <typename T, int R, int GS, int SUMS>
__device__ __forceinline__ void gm_reg_store(float (&acc)[R], int lane, T *out_l, int base,
                                             int qend)
{
    gm_butterfly_rows<R, GS>(acc, lane);
#pragma unroll
    for (int i = 0; i < SUMS; i++)
        if (base + i < qend)
            out_l[base + i] = from_f32<T>(acc[i]);
}

// gm_dense with the rows of B^T loaded straight into registers (`reg_rows` R >= 1) and the weights
// in registers. gm_dense_async is bound by the SM's load/store pipe, not by DRAM: each 16 bytes of
// B cost a cp.async into shared memory, a shared load of the slot, shared loads of 8 weights and 4
// shuffles. Here a lane uses the same weights w[(lane + ts GS) VEC + v] for every row, so it reads
// them from shared memory once (TS VEC floats, TS = ceil(k_pre / (GS VEC)), a template parameter
// that the host derives from k_pre); each 16 bytes of B then cost one global load and arithmetic.
// A group of GS lanes owns CPG consecutive rows (the block's chunk split over its NG groups) and
// takes them R at a time: the R rows' loads are issued together (the first R before the scatter of
// A into w, so that B is in flight during its round trips and barriers; the next R as soon as the
// current ones are multiplied, before their reduction), and the R partial sums of a lane are
// reduced together by the transposing butterfly (R - 1 + log2(GS / R) shuffles for R rows). A row
// past the chunk's end is loaded as its last row, one past the group's CPG rows as it is (the next
// group's): finite data, never stored. A lane past k_pre loads its first element again and weighs
// it with 0.
template <typename T, int OP, int CHUNK, int VEC, int GS, int THREADS, int R, int TS>
__global__ void __launch_bounds__(THREADS)
    gm_dense_reg(const T *__restrict__ A, const T *__restrict__ B, const int *__restrict__ I,
                 T *__restrict__ out, int g, int k, int kp, int n)
{
    static_assert(OP != 2, "gm_dense_reg serves the inner ops");
    static_assert(GS >= 1 && GS <= 32 && (GS & (GS - 1)) == 0, "GS must be a power of two <= 32");
    static_assert(THREADS % 32 == 0, "THREADS must be a multiple of 32");
    static_assert(R >= 1 && (R & (R - 1)) == 0, "R (rows per batch) must be a power of two");
    static_assert(TS >= 1, "TS (steps of GS VEC elements per row) must be >= 1");
    constexpr int BYTES = VEC * (int)sizeof(T);
    constexpr int NG = THREADS / GS;
    constexpr int CPG = (CHUNK + NG - 1) / NG;
    constexpr int NB = (CPG + R - 1) / R;
    constexpr int SUMS = R > GS ? R / GS : 1;     // whole row sums per lane after the butterfly
    constexpr int COPY = R < GS ? GS / R - 1 : 0; // lane bits that only tell copies apart
    extern __shared__ float w[];

    const int nchunks = (n + CHUNK - 1) / CHUNK;
    const long long gi = blockIdx.x / nchunks;
    const int c0 = (blockIdx.x % nchunks) * CHUNK;
    const int c1 = min(n, c0 + CHUNK);
    const int lane = threadIdx.x % GS;
    const int grp = threadIdx.x / GS;
    const int r0 = c0 + grp * CPG; // the group's first row
    const T *Ag = A + gi * (OP == 0 ? kp : k);
    const int *Ig = I + gi * k;
    T *out_g = out + gi * n;

    // the lane's first element of a row (0 past k_pre); the later steps' loads are ts GS VEC
    // elements further on, or at the first element again for a lane past k_pre (weighed with 0)
    const int e0 = lane * VEC < kp ? lane * VEC : 0;
    const T *Bl = B + gi * (long long)n * kp + e0;
    // kept as a pointer: the compiler would otherwise fold it into 64-bit index arithmetic, four
    // instructions per load instead of one IMAD.WIDE (n kp < 2^31, the host's limit: element
    // offsets within one g fit an int)
    asm("" : "+l"(Bl));
    raw_vec<BYTES> rb[R][TS];
    auto issue = [&](int b) {
#pragma unroll
        for (int r = 0; r < R; r++) {
            const T *row = Bl + min(r0 + b * R + r, c1 - 1) * kp;
#pragma unroll
            for (int ts = 0; ts < TS; ts++)
                ld_nc(rb[r][ts], row + ((lane + ts * GS) * VEC < kp ? ts * GS * VEC : 0));
        }
    };
    issue(0);

    gm_scatter_w<T, OP, THREADS>(w, Ag, Ig, k, kp);
    // the lane's weights, 16 bytes per shared load where VEC allows (e is a multiple of VEC)
    float wr[TS][VEC];
#pragma unroll
    for (int ts = 0; ts < TS; ts++) {
        const int e = (lane + ts * GS) * VEC;
        if (VEC % 4 == 0) {
#pragma unroll
            for (int v = 0; v < VEC; v += 4) {
                const float4 q = e < kp ? *reinterpret_cast<const float4 *>(&w[e + v])
                                        : make_float4(0.f, 0.f, 0.f, 0.f);
                wr[ts][v] = q.x;
                wr[ts][v + 1] = q.y;
                wr[ts][v + 2] = q.z;
                wr[ts][v + 3] = q.w;
            }
        } else {
#pragma unroll
            for (int v = 0; v < VEC; v++)
                wr[ts][v] = e < kp ? w[e + v] : 0.f;
        }
    }

    // after the butterfly this lane holds rows b R + lrow + i (i < SUMS) of its group, which it
    // writes (one lane of each set of copies) while they are below qend
    const int lrow = gm_butterfly_row<R, GS>(lane);
    const int qend = (lane & COPY) == 0 ? min(CPG, c1 - r0) - lrow : 0;
    T *out_l = out_g + r0 + lrow;
#pragma unroll 1
    for (int b = 0; b < NB; b++) {
        float acc[R];
        gm_reg_dot<T, R, TS, VEC>(rb, wr, acc);
        if (b + 1 < NB)
            issue(b + 1);
        gm_reg_store<T, R, GS, SUMS>(acc, lane, out_l, b * R, qend);
    }
}

// The outer op with transposed B (SparQ step 2) in the manner of gm_dense_reg (`reg_rows` R >= 1,
// `stages` 0). gm_cols_async copies every 16 bytes of a gathered row of B^T through shared memory
// (a cp.async into a slot, a shared load back) and reduces each row with log2(GS) shuffles: on
// step 2 it moves about 64 % of what a streaming read reaches, whatever the share of rows the L2
// holds, so the kernel, not DRAM, is the limit. Here a group of GS lanes (VEC elements each, TS
// steps of GS VEC elements per row, TS a template parameter the host derives from k) owns CPG
// consecutive output columns of the block's chunk and takes them R at a time. A lane's A values
// (the same k positions for every row) are loaded once into registers. The group's column indices
// are loaded up front, each warp those of its own groups, into shared memory (one round trip, no
// block barrier), so that a batch's row loads wait for a shared load, not for an index's DRAM
// round trip; the indices of the next batch are read while the current one is multiplied. A
// batch's R rows are loaded with 16-byte loads straight into registers, the next batch issued as
// soon as the current one is multiplied, and a lane's R partial sums are reduced together by the
// transposing butterfly (gm_butterfly_rows). A slot past the chunk's end (or the group's CPG
// columns) holds the chunk's last index: a finite row, never stored. A lane past k loads its first
// element again and weighs it with 0.
template <typename T, int CHUNK, int VEC, int GS, int THREADS, int R, int TS>
__global__ void __launch_bounds__(THREADS)
    gm_cols_reg(const T *__restrict__ A, const T *__restrict__ B, const int *__restrict__ I,
                T *__restrict__ out, int g, int k, int kp, int n)
{
    static_assert(GS >= 1 && GS <= 32 && (GS & (GS - 1)) == 0, "GS must be a power of two <= 32");
    static_assert(THREADS % 32 == 0, "THREADS must be a multiple of 32");
    static_assert(R >= 1 && (R & (R - 1)) == 0, "R (rows per batch) must be a power of two");
    static_assert(TS >= 1, "TS (steps of GS VEC elements per row) must be >= 1");
    constexpr int BYTES = VEC * (int)sizeof(T);
    constexpr int NG = THREADS / GS;
    constexpr int CPG = (CHUNK + NG - 1) / NG;
    constexpr int NB = (CPG + R - 1) / R;
    constexpr int SLOTS = NB * R; // index slots per group, R-aligned for vector shared loads
    constexpr int WG = 32 / GS;   // groups per warp (a group never spans two warps)
    constexpr int SUMS = R > GS ? R / GS : 1;     // whole row sums per lane after the butterfly
    constexpr int COPY = R < GS ? GS / R - 1 : 0; // lane bits that only tell copies apart
    static_assert(NG * SLOTS * 4 <= 48 * 1024, "the chunk's indices exceed 48 KiB");
    __shared__ __align__(16) int sJ[NG * SLOTS];

    const int nchunks = (n + CHUNK - 1) / CHUNK;
    const long long gi = blockIdx.x / nchunks;
    const int c0 = (blockIdx.x % nchunks) * CHUNK;
    const int c1 = min(n, c0 + CHUNK);
    const int lane = threadIdx.x % GS;
    const int grp = threadIdx.x / GS;
    const int r0 = c0 + grp * CPG; // the group's first column

    // the lane's A values (widened once the first rows are in flight): step ts at
    // (lane + ts GS) VEC, or at the lane's first element (0 past k) when that is past k
    const int e0 = lane * VEC < k ? lane * VEC : 0;
    int off[TS]; // element offsets of the later steps from e0
#pragma unroll
    for (int ts = 0; ts < TS; ts++)
        off[ts] = (lane + ts * GS) * VEC < k ? ts * GS * VEC : 0;
    raw_vec<BYTES> ra[TS];
#pragma unroll
    for (int ts = 0; ts < TS; ts++)
        ld_nc(ra[ts], A + gi * k + e0 + off[ts]);

    // slot s of the warp's WG groups: column q = s % SLOTS of group s / SLOTS
    const int w0 = threadIdx.x / 32 * (WG * SLOTS);
    const int *Ig = I + gi * n;
#pragma unroll
    for (int s = threadIdx.x % 32; s < WG * SLOTS; s += 32) {
        const int c = c0 + (w0 + s) / SLOTS * CPG + (w0 + s) % SLOTS;
        sJ[w0 + s] = Ig[min(c, c1 - 1)];
    }
    __syncwarp();
    const int *sg = sJ + grp * SLOTS;
    auto fetch = [&](int b, int(&idx)[R]) {
        if constexpr (R % 4 == 0) {
#pragma unroll
            for (int r = 0; r < R; r += 4) {
                const int4 v = *reinterpret_cast<const int4 *>(sg + b * R + r);
                idx[r] = v.x;
                idx[r + 1] = v.y;
                idx[r + 2] = v.z;
                idx[r + 3] = v.w;
            }
        } else if constexpr (R == 2) {
            const int2 v = *reinterpret_cast<const int2 *>(sg + b * 2);
            idx[0] = v.x;
            idx[1] = v.y;
        } else {
            idx[0] = sg[b];
        }
    };

    // per step, the lane's first element in row 0 of this g, as bytes: row idx is idx kb bytes
    // further, one IMAD.WIDE per load (in elements, the compiler adds a shift and a 64-bit add)
    const char *Bl[TS];
#pragma unroll
    for (int ts = 0; ts < TS; ts++) {
        Bl[ts] = reinterpret_cast<const char *>(B + gi * (long long)kp * k + e0 + off[ts]);
        asm("" : "+l"(Bl[ts]));
    }
    const int kb = k * (int)sizeof(T);
    raw_vec<BYTES> rb[R][TS];
    auto issue = [&](const int(&idx)[R]) {
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int ts = 0; ts < TS; ts++)
                ld_nc(rb[r][ts], Bl[ts] + (long long)idx[r] * kb);
    };
    int idx[R];
    fetch(0, idx);
    issue(idx);

    float wr[TS][VEC];
#pragma unroll
    for (int ts = 0; ts < TS; ts++) {
        widen_f32<T, VEC>(ra[ts], wr[ts]);
        if ((lane + ts * GS) * VEC >= k)
#pragma unroll
            for (int v = 0; v < VEC; v++)
                wr[ts][v] = 0.f;
    }

    // after the butterfly this lane holds columns b R + lrow + i (i < SUMS) of its group, which it
    // writes (one lane of each set of copies) while they are below qend
    const int lrow = gm_butterfly_row<R, GS>(lane);
    const int qend = (lane & COPY) == 0 ? min(CPG, c1 - r0) - lrow : 0;
    T *out_l = out + gi * n + r0 + lrow;
#pragma unroll 1
    for (int b = 0; b < NB; b++) {
        if (b + 1 < NB)
            fetch(b + 1, idx);
        float acc[R];
        gm_reg_dot<T, R, TS, VEC>(rb, wr, acc);
        if (b + 1 < NB)
            issue(idx);
        gm_reg_store<T, R, GS, SUMS>(acc, lane, out_l, b * R, qend);
    }
}

// The reference's output (gi, j): its sum in fp32, in order, no staging. TRANS as in the kernels.
// Also the reference of sweeps/examples/sparq (reference.cu), which rounds it to half.
template <typename T, int OP, int TRANS>
__device__ float gm_reference_sum(const T *__restrict__ A, const T *__restrict__ B,
                                  const int *__restrict__ I, long long gi, int j, int k, int kp,
                                  int n)
{
    float s = 0.f;
    for (int t = 0; t < k; t++) {
        float a, b;
        if (OP == 2) {
            const int c = I[gi * n + j];
            a = to_f32(A[gi * k + t]);
            b = TRANS ? to_f32(B[(gi * kp + c) * (long long)k + t])
                      : to_f32(B[(gi * k + t) * (long long)kp + c]);
        } else {
            const int r = I[gi * k + t];
            a = OP == 0 ? to_f32(A[gi * kp + r]) : to_f32(A[gi * k + t]);
            b = TRANS ? to_f32(B[(gi * n + j) * (long long)kp + r])
                      : to_f32(B[(gi * kp + r) * (long long)n + j]);
        }
        s = fmaf(a, b, s);
    }
    return s;
}

// Naive reference: one thread per output element, fp32, no staging.
template <typename T, int OP, int TRANS>
__global__ void gm_reference(const T *__restrict__ A, const T *__restrict__ B,
                             const int *__restrict__ I, float *__restrict__ ref, int g, int k,
                             int kp, int n)
{
    const long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (e >= (long long)g * n)
        return;
    ref[e] = gm_reference_sum<T, OP, TRANS>(A, B, I, e / n, (int)(e % n), k, kp, n);
}

// The `gather` baseline's first step (what torch's gather does): materialises the gathered
// operand as a contiguous row-major (g, k, n) tensor Bg, and for OP 0 the gathered A (g, k).
template <typename T, int OP, int TRANS>
__global__ void gm_gather(const T *__restrict__ A, const T *__restrict__ B, const int *__restrict__ I,
                          T *__restrict__ Ag_out, T *__restrict__ Bg_out, int g, int k, int kp, int n)
{
    const long long total = (long long)g * k * n;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        const long long gi = e / ((long long)k * n);
        const int t = (int)(e / n % k);
        const int j = (int)(e % n);
        long long src;
        if (OP == 2) {
            const int c = I[gi * n + j];
            src = TRANS ? (gi * kp + c) * (long long)k + t : (gi * k + t) * (long long)kp + c;
        } else {
            const int r = I[gi * k + t];
            src = TRANS ? (gi * n + j) * (long long)kp + r : (gi * kp + r) * (long long)n + j;
            if (OP == 0 && j == 0)
                Ag_out[gi * k + t] = A[gi * kp + r];
        }
        Bg_out[e] = B[src];
    }
}
