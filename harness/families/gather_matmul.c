/* gather_matmul.c - SparQ's gather-matmul ops (docs/gather_matmul.md): batched vector x gathered-matrix
 * products, tuned over `chunk` (columns of n per unit of work) and `threads` (block size). */
#include "model/family.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "core/half.h"
#include "device/gpu.h"
#include "model/traffic.h"

static const char *const dtypes[] = {"float16", "bfloat16", "float32", NULL};
static const char *const index_patterns[] = {"random", "identity", NULL};

#define GM_INT_AXIS(nm, lo, help) {nm, FAMILY_AXIS_INT, lo, 2147483647, NULL, NULL, help}
#define GM_COMMON_AXES                                                                             \
    {"dtype", FAMILY_AXIS_STR, 0, 0, dtypes, "\"float16\"", "element type of A, B and the output"}, \
    {"transpose_B", FAMILY_AXIS_BOOL, 0, 1, NULL, "false",                                         \
     "B stored transposed (as the SparQ benchmarks' transpose_B): (g, n, k_pre) for inner ops, (g, n_pre, k) for outer"}, \
    {"indices", FAMILY_AXIS_STR, 0, 0, index_patterns, "\"random\"",                              \
     "random: uniform in [0, k_pre) with replacement, drawn afresh before every rep; identity: "  \
     "I[t] = t, the rows `slice` reads (isolates the cost of random access)"}

static const family_axis inner_axes[] = {
    GM_INT_AXIS("g", 1, "batch x heads"),
    GM_INT_AXIS("k_pre", 1, "rows of B to gather from"),
    GM_INT_AXIS("k", 1, "gathered rows (indices per g)"),
    GM_INT_AXIS("n", 1, "columns of B and of the output"),
    GM_COMMON_AXES,
};

static const family_axis outer_axes[] = {
    GM_INT_AXIS("g", 1, "batch x heads"),
    GM_INT_AXIS("k", 1, "rows of B (reduction length)"),
    GM_INT_AXIS("n_pre", 1, "columns of B to gather from"),
    GM_INT_AXIS("n", 1, "gathered columns (indices per g) = output length"),
    GM_COMMON_AXES,
};

/* Traffic models (docs/roofline.md, "Traffic models"): DRAM bytes rounded to the L2's DRAM fetch
 * granularity (fetch_bytes: measured by tune calibrate, 64 bytes on an H200; else the 32-byte
 * sector), repeated random rows fetched once (distinct), a gathered element of a row costing its
 * fetch unit; written bytes in 32-byte sectors.
 * Chain: the dependent DRAM round trips beyond a kernel's first load (which the floor includes):
 * a gather's row load waits for its index. */
#define GM_ID "(indices == \"identity\")"
#define GM_RAND "(indices != \"identity\")"
#define GM_RM "(1 - transpose_B)"
/* distinct values among `draws` picks from `pool` (identity indices: the first `draws`) */
#define GM_DISTINCT(pool, draws)                                                                   \
    "(" GM_ID " * min(" draws ", " pool ") + " GM_RAND " * distinct(" pool ", " draws "))"
/* bytes of one row of `len` elements that `draws` picks bring from DRAM: the fetch units they
 * touch */
#define GM_FETCHED(bytes) "sectors(" bytes ", fetch_bytes)"
#define GM_PICKED(len, draws)                                                                      \
    "(" GM_ID " * " GM_FETCHED("min(" draws ", " len ") * dsize") " + " GM_RAND                    \
    " * fetch_bytes * distinct(" GM_FETCHED(len " * dsize") " / fetch_bytes, " draws "))"
/* the same in 32-byte sectors: the sectors the picks touch (the gather kernel's re-touches) */
#define GM_PICKED_SECTORS(len, draws)                                                              \
    "(" GM_ID " * sectors(min(" draws ", " len ") * dsize) + " GM_RAND                             \
    " * 32 * distinct(sectors(" len " * dsize) / 32, " draws "))"
/* B's gathered part: whole rows (row-major inner, transposed outer) or picked elements */
#define GM_INNER_B                                                                                 \
    GM_RM " * " GM_DISTINCT("k_pre", "k") " * " GM_FETCHED("n * dsize") " + transpose_B * n * "    \
          GM_PICKED("k_pre", "k")
#define GM_OUTER_B                                                                                 \
    GM_RM " * k * " GM_PICKED("n_pre", "n") " + transpose_B * " GM_DISTINCT("n_pre", "n")          \
          " * " GM_FETCHED("k * dsize")
/* A read, the output written */
#define GM_AOUT GM_FETCHED("k * dsize") " + sectors(n * dsize)"
/* the indices of a g (count of them) */
#define GM_IDX(count) GM_FETCHED("4 * " count)
/* cuBLAS reading the first `len` elements of each row of a strided matrix moves at least a
 * 128-byte line per row: in sparq_step1 its k = 16, 32 and 64 slices take the same time
 * (docs/roofline.md) */
#define GM_SEGMENT(len) "max(sectors(" len " * dsize), 128)"

#define GM_INNER_CUSTOM "g * (" GM_IDX("k") " + " GM_INNER_B " + " GM_AOUT ")"
#define GM_INNER_SLICE                                                                             \
    "g * (" GM_RM " * sectors(k * n * dsize) + transpose_B * n * " GM_SEGMENT("k") " + " GM_AOUT ")"
#define GM_CUSTOM_HELP "the row load waits for the index load: one round trip more"
/* The gather kernel (gm_gather) copies one element per thread and iteration, with three 64-bit
 * divisions to find its coordinates: bound by instructions, at the calibrated seconds per element
 * (docs/roofline.md), or by its own bytes (the indices, the sectors of B it gathers, Bg written). */
#define GM_ISSUE "g * k * n"
/* Its launch geometry: fill_grid (below), at most 65536 blocks of 256 threads; 30 registers and no
 * shared memory, so 8 blocks of 256 threads per SM (2048 threads, the SM's limit on sm_80 to
 * sm_100). The 8 blocks of an SM start together and do the same work, so each wave of blocks ends
 * with its last warps' two dependent DRAM round trips, the index and then the element, which no
 * other block's instructions overlap: 2 per wave, less the first load's, which the floor holds. */
#define GM_GATHER_BLOCKS "min(g * k * n / 256 + 1, 65536)"
#define GM_GATHER_WAVES "((" GM_GATHER_BLOCKS " + 8 * sm_count - 1) / (8 * sm_count))"
#define GM_GATHER_CHAIN "2 * " GM_GATHER_WAVES " - 1"
/* With B transposed (the inner ops), each element is a sector of another row of B^T, and a g's
 * touched rows are n x GM_PICKED bytes (4 MiB at n = 16384). The grid-stride loop keeps the g's
 * of every pass of the grid (65536 x 256 elements apart) in flight at once, those of one wave of
 * resident threads (2048 per SM) per pass: when they exceed the L2's share, a sector touched
 * again has been evicted with probability 1 - share / in flight (the L2 share of each table in
 * flight, as in the DLRM embedding predictor) and is fetched again. The share is half the L2:
 * each of its two partitions caches what the SMs wired to it read, so rows that every SM reads
 * are held twice. The L2 is write-back and allocates what is written: the g's Bg (k n dsize)
 * takes its lines too, once, in the partition that owns the address, so it counts half against
 * the share (A[I], k dsize, is 1/n of it and left out). */
#define GM_GATHER_PASSES "((g * k * n + 16777215) / 16777216)"
#define GM_INNER_T_ROWS "n * " GM_PICKED("k_pre", "k")
#define GM_INNER_T_SECTORS "n * " GM_PICKED_SECTORS("k_pre", "k")
#define GM_INNER_INFLIGHT                                                                          \
    GM_GATHER_PASSES " * max(1.0, 2048.0 * sm_count / (k * n)) * (" GM_INNER_T_ROWS                \
                     " + k * n * dsize / 2)"
#define GM_INNER_REFETCH                                                                           \
    "transpose_B * " GM_RAND " * max(0, 1 - l2_bytes / 2 / (" GM_INNER_INFLIGHT "))"               \
    " * (32 * k * n - " GM_INNER_T_SECTORS ")"
#define GM_INNER_GATHER                                                                            \
    "g * (" GM_IDX("k") " + " GM_INNER_B " + " GM_INNER_REFETCH " + 2 * k * n * dsize + " GM_AOUT ")"
#define GM_INNER_GATHER_STEP                                                                       \
    "g * (" GM_IDX("k") " + " GM_INNER_B " + " GM_INNER_REFETCH " + k * n * dsize)"

static const traffic_model gm_traffic[] = {
    {"gather_inner_bmv", "custom",
     "g * (" GM_IDX("k") " + " GM_PICKED("k_pre", "k") " + " GM_INNER_B " + sectors(n * dsize))",
     "1", "1", NULL, NULL,
     "indices, the gathered sectors of A, the distinct gathered rows (or sectors) of B, the "
     "output; " GM_CUSTOM_HELP, NULL, NULL},
    {"gather_inner_bmv", "gather",
     "g * (" GM_IDX("k") " + " GM_PICKED("k_pre", "k") " + " GM_INNER_B " + " GM_INNER_REFETCH
     " + 2 * (k * n + k) * dsize + sectors(n * dsize))",
     "2", GM_GATHER_CHAIN, NULL, NULL,
     "the gather kernel's reads, Bg and A[I] written and read again by the GEMM, the output",
     GM_ISSUE,
     "g * (" GM_IDX("k") " + " GM_PICKED("k_pre", "k") " + " GM_INNER_B " + " GM_INNER_REFETCH
     " + (k * n + k) * dsize)"},
    {"gather_inner_bmv", "slice", GM_INNER_SLICE, "1", "0", NULL, NULL,
     "the first k rows of B (transposed: the first k elements of each of n rows, a 128-byte line "
     "at least), A, the output", NULL, NULL},
    {"gather_inner_matrix_only_bmv", "custom", GM_INNER_CUSTOM, "1", "1", NULL, NULL,
     "indices, A, the distinct gathered rows (or sectors) of B, the output; " GM_CUSTOM_HELP, NULL,
     NULL},
    {"gather_inner_matrix_only_bmv", "gather", GM_INNER_GATHER, "2", GM_GATHER_CHAIN, NULL, NULL,
     "the gather kernel's reads, Bg written and read again by the GEMM, A, the output",
     GM_ISSUE, GM_INNER_GATHER_STEP},
    {"gather_inner_matrix_only_bmv", "slice", GM_INNER_SLICE, "1", "0", NULL, NULL,
     "the first k rows of B (transposed: the first k elements of each of n rows, a 128-byte line "
     "at least), A, the output", NULL, NULL},
    {"gather_outer_bmv", "custom", "g * (" GM_IDX("n") " + " GM_OUTER_B " + " GM_AOUT ")", "1", "1",
     NULL, NULL,
     "indices, A, the gathered sectors of each row of B (transposed: its distinct gathered rows), "
     "the output; " GM_CUSTOM_HELP, NULL, NULL},
    {"gather_outer_bmv", "gather",
     "g * (" GM_IDX("n") " + " GM_OUTER_B " + 2 * k * n * dsize + " GM_AOUT ")", "2",
     GM_GATHER_CHAIN, NULL,
     NULL, "the gather kernel's reads, Bg written and read again by the GEMM, A, the output",
     GM_ISSUE, "g * (" GM_IDX("n") " + " GM_OUTER_B " + k * n * dsize)"},
    {"gather_outer_bmv", "slice",
     "g * (" GM_RM " * k * " GM_SEGMENT("n") " + transpose_B * sectors(n * k * dsize) + " GM_AOUT
     ")",
     "1", "0", NULL, NULL,
     "the first n columns of B (a 128-byte line at least per row; transposed: its first n rows), "
     "A, the output", NULL, NULL},
};

/* The gather kernel's patterns (docs/roofline.md): with B transposed a warp's 32 elements lie in
 * 32 rows of B^T (inner ops) or are 32 gathered rows of B^T (outer op), which `tune calibrate`
 * measures with gm_gather<half_t, 1, 1>; the L2 re-fetches are random sectors, at the measured
 * random-sector rate. When what the step gathers from B is larger than the L2 (a physical
 * threshold, l2_bytes), the elements cost what the same probe costs over a source the L2 cannot
 * hold, whose warp loads wait for DRAM rather than find their sectors in the L2. What the step
 * gathers: the inner ops pick k of a row's k_pre elements in each of its n rows of B^T, which
 * touches nearly every sector of the row (B); the outer op reads distinct(n_pre, n) whole rows of
 * k elements of each g's n_pre. */
#define GM_SCATTERED "transpose_B * g * k * n"
#define GM_SCATTERED_DRAM(b_elems) GM_SCATTERED " * (g * " b_elems " * dsize > l2_bytes)"
static const traffic_pattern gm_patterns[] = {
    {"gather_inner_bmv", "gather", GM_SCATTERED, "g * " GM_INNER_REFETCH,
     GM_SCATTERED_DRAM("k_pre * n")},
    {"gather_inner_matrix_only_bmv", "gather", GM_SCATTERED, "g * " GM_INNER_REFETCH,
     GM_SCATTERED_DRAM("k_pre * n")},
    {"gather_outer_bmv", "gather", GM_SCATTERED, NULL,
     GM_SCATTERED_DRAM("k * distinct(n_pre, n)")},
};

static const family_op gm_ops[] = {
    {"gather_inner_bmv", inner_axes, sizeof inner_axes / sizeof inner_axes[0],
     "g * (2 * k + k * n + n) * dsize", "2 * g * k * n",
     "out[g,j] = sum_t A[g,I[g,t]] * B[g,I[g,t],j] (SparQ step 1)"},
    {"gather_inner_matrix_only_bmv", inner_axes, sizeof inner_axes / sizeof inner_axes[0],
     "g * (2 * k + k * n + n) * dsize", "2 * g * k * n",
     "out[g,j] = sum_t A[g,t] * B[g,I[g,t],j] (SparQ step 3, the SparQ benchmarks' sweep)"},
    {"gather_outer_bmv", outer_axes, sizeof outer_axes / sizeof outer_axes[0],
     "g * (k + k * n + 2 * n) * dsize", "2 * g * k * n",
     "out[g,j] = sum_t A[g,t] * B[g,t,I[g,j]] (SparQ step 2)"},
};

static const family_axis gm_params[] = {
    {"chunk", FAMILY_AXIS_INT, 1, 4096, NULL, "64", "columns of n per unit of work (block)"},
    {"threads", FAMILY_AXIS_INT, 32, 1024, NULL, "256", "threads per block"},
    {"unroll", FAMILY_AXIS_INT, 1, 16, NULL, "4", "independent row loads in flight per thread (row-major B)"},
    {"full_occupancy", FAMILY_AXIS_BOOL, 0, 1, NULL, "false",
     "row-major B: cap registers so that 2048 threads fit on an SM (__launch_bounds__)"},
    {"stages", FAMILY_AXIS_INT, 0, 16, NULL, "0",
     "cp.async pipeline depth (0: plain loads): inner ops with row-major B (gm_rows_async), outer "
     "op with transposed B (gm_cols_async), dense (gm_dense_async)"},
    {"dense", FAMILY_AXIS_BOOL, 0, 1, NULL, "false",
     "inner ops, transposed B: scatter A into a dense k_pre vector and stream whole rows of B"},
    {"reg_rows", FAMILY_AXIS_INT, 0, 8, NULL, "0",
     "stages 0, with dense (gm_dense_reg) or on the outer op with transposed B (gm_cols_reg): rows "
     "of B a lane loads into registers at once and reduces together, a power of two; 0: the "
     "kernels without it"},
};

static const family_method gm_methods[] = {
    {"custom", 1, "tune's CUDA kernel", FAMILY_ROLE_TUNED},
    {"gather", 0, "gather kernel + cuBLAS strided-batched GEMM (the torch reference's cost)",
     FAMILY_ROLE_REFERENCE},
    {"slice", 0, "cuBLAS on the first k rows (or n columns), contiguous: the no-gather ideal",
     FAMILY_ROLE_BASELINE},
};


extern const tune_family gather_matmul_family;

enum { GM_INNER = 0, GM_INNER_MATRIX_ONLY = 1, GM_OUTER = 2 };
enum { GM_CUSTOM, GM_GATHER, GM_SLICE };

/* Everything the CPU side derives from a configuration point. */
typedef struct {
    int op, trans, method;
    int identity; /* indices = 0, 1, 2, ... */
    const char *dtype;
    const char *tname; /* device type name: half_t, bf16_t, float */
    size_t ds;         /* element size */
    int64_t g, k, kp, n; /* kp: k_pre (inner ops) or n_pre (outer) */
    /* custom kernel geometry */
    int64_t chunk, threads, unroll;
    int full_occupancy;
    int64_t stages;
    int vec, gs, cols; /* cols: gm_cols (transposed B) rather than gm_rows */
    int dense;         /* gm_dense */
    int64_t reg_rows;  /* gm_dense_reg, gm_cols_reg: rows per batch (0: neither) */
    int ts;            /* gm_dense_reg, gm_cols_reg: steps of gs * vec elements per row of B */
    size_t smem;       /* dynamic shared memory */
    int64_t grid;
} gm_desc;

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Largest power-of-two vector width (elements, at most 16 bytes) dividing every value of m[]. */
static int vec_width(size_t ds, const int64_t *m, size_t n_m)
{
    int v = (int)(16 / ds);
    for (; v > 1; v /= 2) {
        int ok = 1;
        for (size_t i = 0; i < n_m; i++)
            ok &= m[i] % v == 0;
        if (ok)
            break;
    }
    return v;
}

static int gm_describe_custom(const tune_point *cfg, gm_desc *d, char *why, size_t why_size);

/* Everything the CPU side derives from a configuration, or -1 with why when it cannot run. */
static int gm_describe(const tune_point *cfg, gm_desc *d, char *why, size_t why_size)
{
    memset(d, 0, sizeof *d);
    const char *op = point_str(cfg, "op", "");
    d->op = strcmp(op, "gather_inner_bmv") == 0              ? GM_INNER
            : strcmp(op, "gather_inner_matrix_only_bmv") == 0 ? GM_INNER_MATRIX_ONLY
            : strcmp(op, "gather_outer_bmv") == 0             ? GM_OUTER
                                                              : -1;
    const char *method = point_str(cfg, "method", "");
    d->method = strcmp(method, "custom") == 0 ? GM_CUSTOM : strcmp(method, "gather") == 0 ? GM_GATHER
                : strcmp(method, "slice") == 0                                           ? GM_SLICE
                                                                                         : -1;
    if (d->op < 0 || d->method < 0)
        return family_fail(why, why_size, "unknown op '%s' or method '%s'", op, method);
    d->dtype = point_str(cfg, "dtype", "float16");
    d->ds = tune_dtype_size(d->dtype);
    d->tname = strcmp(d->dtype, "float16") == 0 ? "half_t" : strcmp(d->dtype, "bfloat16") == 0 ? "bf16_t"
               : strcmp(d->dtype, "float32") == 0 ? "float" : NULL;
    if (!d->tname)
        return family_fail(why, why_size, "unsupported dtype '%s'", d->dtype);
    d->trans = (int)point_int(cfg, "transpose_B", 0);
    d->identity = strcmp(point_str(cfg, "indices", "random"), "identity") == 0;
    d->g = point_int(cfg, "g", 0);
    d->k = point_int(cfg, "k", 0);
    d->n = point_int(cfg, "n", 0);
    d->kp = point_int(cfg, d->op == GM_OUTER ? "n_pre" : "k_pre", 0);
    if (d->g < 1 || d->k < 1 || d->n < 1 || d->kp < 1)
        return family_fail(why, why_size, "sizes must be >= 1");
    int64_t elems = d->op == GM_OUTER ? d->g * d->k * d->kp : d->g * d->kp * d->n;
    if (d->kp > INT32_MAX / 2 || elems / d->g > INT32_MAX)
        return family_fail(why, why_size, "a matrix of B exceeds 2^31 elements");
    if (d->method == GM_SLICE || d->identity) {
        int64_t want = d->op == GM_OUTER ? d->n : d->k;
        if (want > d->kp)
            return family_fail(why, why_size, "%s needs %s <= %s",
                               d->method == GM_SLICE ? "slice" : "identity indices",
                               d->op == GM_OUTER ? "n" : "k",
                               d->op == GM_OUTER ? "n_pre" : "k_pre");
    }
    return d->method == GM_CUSTOM ? gm_describe_custom(cfg, d, why, why_size) : 0;
}

/* gm_cols_async's limits: 4-, 8- or 16-byte copies, static shared memory (the S stages of every
 * thread's slots, A's staging tile of GM_KT floats, the chunk's indices and sums) within 48 KiB, and
 * enough copies per thread to fill the pipeline: fewer than `stages` is a one-shot block, what
 * gm_cols already does with fewer registers. It keeps no value per column in registers, so unlike
 * gm_cols it has no limit on the columns per group. */
static int gm_describe_cols_async(gm_desc *d, int64_t groups, char *why, size_t why_size)
{
    const int64_t kt = 1024; /* GM_KT */
    if ((int64_t)d->vec * (int64_t)d->ds < 4)
        return family_fail(why, why_size, "stages needs copies of at least 4 bytes (k a multiple of %d)",
                           (int)(4 / d->ds));
    int64_t bytes = d->stages * d->threads * d->vec * (int64_t)d->ds + kt * 4 + d->chunk * 8;
    if (bytes > 48 * 1024)
        return family_fail(why, why_size, "stages: %lld bytes of shared memory exceed 48 KiB",
                           (long long)bytes);
    int64_t per_col = ceil_div(d->k < kt ? d->k : kt, d->gs * d->vec);
    int64_t copies = ceil_div(d->chunk, groups) * per_col;
    if (copies < d->stages)
        return family_fail(why, why_size, "stages (%lld) exceeds the %lld copies per thread of a k tile: "
                           "the pipeline never fills", (long long)d->stages, (long long)copies);
    return 0;
}

/* gm_dense_async's limits: 4-, 8- or 16-byte copies, shared memory (the S stages of every thread's
 * slots and the dense k_pre-float vector) within 48 KiB, and no more stages than its copies per
 * thread need: with J copies, stages = J + 1 already issues them all before the scatter, so a
 * deeper pipeline is the same kernel with more shared memory (fewer blocks per SM). As
 * gm_cols_async, it keeps no value per column in registers: no limit on the columns per group. */
static int gm_describe_dense_async(gm_desc *d, char *why, size_t why_size)
{
    if ((int64_t)d->vec * (int64_t)d->ds < 4)
        return family_fail(why, why_size, "stages needs copies of at least 4 bytes (k_pre a multiple "
                                      "of %d)", (int)(4 / d->ds));
    int64_t bytes = d->stages * d->threads * d->vec * (int64_t)d->ds + (int64_t)d->smem;
    if (bytes > 48 * 1024)
        return family_fail(why, why_size, "stages: %lld bytes of shared memory exceed 48 KiB",
                           (long long)bytes);
    int64_t copies = ceil_div(d->chunk, d->threads / d->gs) * ceil_div(d->kp, d->gs * d->vec);
    if (d->stages - 1 > copies)
        return family_fail(why, why_size, "stages (%lld) exceeds the %lld copies per thread + 1: "
                           "stages %lld already issues them all before the scatter",
                           (long long)d->stages, (long long)copies, (long long)(copies + 1));
    return 0;
}

/* gm_dense_reg's and gm_cols_reg's limits, for rows of len elements (k_pre, or k for the outer
 * op): a lane holds its weights (the dense vector's, or A's values: ts * vec floats, ts =
 * ceil(len / (gs vec))) and a batch of reg_rows rows of B (reg_rows * ts loads) in registers, so
 * both are bounded: at most 32 weights and 128 bytes of B per thread. reg_rows must be a power of
 * two (the transposing butterfly halves it) and at most the rows each lane has (chunk over
 * threads / gs groups): a larger batch would only load rows that are never stored. The
 * parameter's bound, 8, keeps the partial sums in registers: with 16 rows and a batch loop, nvcc
 * (13.0) turns the butterfly's selects into indexing and puts them in local memory. */
static int gm_describe_reg(gm_desc *d, int64_t len, const char *len_name, char *why,
                           size_t why_size)
{
    int64_t r = d->reg_rows, groups = d->threads / d->gs;
    if (r & (r - 1))
        return family_fail(why, why_size, "reg_rows (%lld) must be a power of two", (long long)r);
    d->ts = (int)ceil_div(len, (int64_t)d->gs * d->vec);
    if ((int64_t)d->ts * d->vec > 32)
        return family_fail(why, why_size,
                           "reg_rows: %lld weights per lane (%s %lld over %d lanes of %d "
                           "elements) exceed 32 registers",
                           (long long)d->ts * d->vec, len_name, (long long)len, d->gs, d->vec);
    if (r > ceil_div(d->chunk, groups))
        return family_fail(why, why_size,
                           "reg_rows (%lld) exceeds the %lld rows per lane (chunk %lld over %lld "
                           "groups of %d lanes)",
                           (long long)r, (long long)ceil_div(d->chunk, groups), (long long)d->chunk,
                           (long long)groups, d->gs);
    int64_t bytes = r * d->ts * d->vec * (int64_t)d->ds;
    if (bytes > 128)
        return family_fail(why, why_size,
                           "reg_rows: %lld bytes of B per thread in registers exceed 128",
                           (long long)bytes);
    return 0;
}

/* The custom kernel's geometry (gm_rows, gm_rows_async, gm_cols, gm_cols_async, gm_cols_reg,
 * gm_dense, gm_dense_async or gm_dense_reg) from the parameters, or -1 with why when the
 * configuration cannot run. */
static int gm_describe_custom(const tune_point *cfg, gm_desc *d, char *why, size_t why_size)
{
    d->chunk = point_int(cfg, "chunk", 64);
    d->threads = point_int(cfg, "threads", 256);
    d->unroll = point_int(cfg, "unroll", 4);
    d->full_occupancy = (int)point_int(cfg, "full_occupancy", 0);
    d->stages = point_int(cfg, "stages", 0);
    if (d->stages == 1)
        return family_fail(why, why_size, "stages must be 0 (no pipeline) or >= 2");
    if (d->threads % 32 != 0)
        return family_fail(why, why_size, "threads (%lld) must be a multiple of 32", (long long)d->threads);
    d->cols = d->trans;
    d->dense = (int)point_int(cfg, "dense", 0);
    if (d->dense && (d->op == GM_OUTER || !d->trans))
        return family_fail(why, why_size, "dense applies only to the inner ops with transposed B");
    d->reg_rows = point_int(cfg, "reg_rows", 0);
    if (d->reg_rows && !d->dense && !(d->op == GM_OUTER && d->trans))
        return family_fail(why, why_size,
                           "reg_rows applies only to dense (gm_dense_reg) and to the "
                           "outer op with transposed B (gm_cols_reg)");
    if (d->reg_rows && d->stages)
        return family_fail(why, why_size,
                           "reg_rows loads B into registers, stages through shared memory: give "
                           "one of them");
    if (d->stages && !d->dense && (d->op == GM_OUTER) != (d->trans != 0))
        return family_fail(why, why_size, "stages applies only to the inner ops with row-major B, "
                                      "the outer op with transposed B and dense");
    if (d->dense && d->kp > 12288)
        return family_fail(why, why_size, "dense needs k_pre <= 12288 (a k_pre-float vector in 48 KiB "
                                      "of shared memory)");
    if (d->dense) {
        int64_t m[1] = {d->kp};
        d->vec = vec_width(d->ds, m, 1);
        d->smem = (size_t)d->kp * sizeof(float);
        int64_t lanes = d->kp / d->vec;
        d->gs = 1;
        while (d->gs < 32 && d->gs < lanes)
            d->gs *= 2;
        if (d->reg_rows) {
            if (gm_describe_reg(d, d->kp, "k_pre", why, why_size))
                return -1;
        } else if (d->stages) {
            if (gm_describe_dense_async(d, why, why_size))
                return -1;
        } else if (ceil_div(d->chunk, d->threads / d->gs) * d->vec > 64)
            return family_fail(why, why_size, "chunk (%lld) over %lld column groups keeps more than 64 "
                               "values in flight per thread", (long long)d->chunk,
                               (long long)(d->threads / d->gs));
    } else if (!d->cols) {
        int64_t m[2] = {d->n, d->chunk};
        d->vec = d->op == GM_OUTER ? 1 : vec_width(d->ds, m, 2);
        if (d->chunk / d->vec > d->threads)
            return family_fail(why, why_size, "chunk / vector width (%lld) exceeds threads (%lld)",
                               (long long)(d->chunk / d->vec), (long long)d->threads);
        if (d->stages) {
            int64_t lanes = d->chunk / d->vec, rows = d->threads / lanes;
            int64_t parts = lanes < 32 && (lanes & (lanes - 1)) == 0 ? d->threads / 32 : rows;
            int64_t bytes = d->stages * d->threads * d->vec * (int64_t)d->ds + 8192 +
                            parts * d->chunk * 4;
            if ((int64_t)d->vec * (int64_t)d->ds < 4)
                return family_fail(why, why_size, "stages needs copies of at least 4 bytes (chunk and n "
                                              "multiples of %d)", (int)(4 / d->ds));
            if (bytes > 48 * 1024)
                return family_fail(why, why_size, "stages: %lld bytes of shared memory exceed 48 KiB",
                                   (long long)bytes);
        }
    } else {
        int64_t m[1] = {d->k};
        d->vec = d->op == GM_OUTER ? vec_width(d->ds, m, 1) : 1;
        int64_t lanes = ceil_div(d->k, d->vec);
        d->gs = 1;
        while (d->gs < 32 && d->gs < lanes)
            d->gs *= 2;
        int64_t groups = d->threads / d->gs;
        if (d->stages) {
            if (gm_describe_cols_async(d, groups, why, why_size))
                return -1;
        } else if (d->reg_rows) {
            if (gm_describe_reg(d, d->k, "k", why, why_size))
                return -1;
        } else if (ceil_div(d->chunk, groups) > 32) {
            return family_fail(why, why_size, "chunk (%lld) over %lld column groups needs more than 32 "
                               "columns per group", (long long)d->chunk, (long long)groups);
        } else if (ceil_div(d->chunk, groups) * d->vec > 64) {
            return family_fail(why, why_size, "chunk (%lld) over %lld column groups keeps more than 64 "
                               "values in flight per thread", (long long)d->chunk, (long long)groups);
        }
    }
    d->grid = d->g * ceil_div(d->n, d->chunk);
    if (d->grid > INT32_MAX)
        return family_fail(why, why_size, "grid of %lld blocks exceeds 2^31 - 1", (long long)d->grid);
    return 0;
}

static void gm_custom_name(const gm_desc *d, char *buf, size_t size)
{
    if (d->dense && d->reg_rows)
        snprintf(buf, size, "gm_dense_reg<%s, %d, %lld, %d, %d, %lld, %lld, %d>", d->tname, d->op,
                 (long long)d->chunk, d->vec, d->gs, (long long)d->threads, (long long)d->reg_rows,
                 d->ts);
    else if (d->dense && d->stages)
        snprintf(buf, size, "gm_dense_async<%s, %d, %lld, %d, %d, %lld, %lld>", d->tname, d->op,
                 (long long)d->chunk, d->vec, d->gs, (long long)d->threads, (long long)d->stages);
    else if (d->dense)
        snprintf(buf, size, "gm_dense<%s, %d, %lld, %d, %d, %lld>", d->tname, d->op,
                 (long long)d->chunk, d->vec, d->gs, (long long)d->threads);
    else if (d->reg_rows && d->cols)
        snprintf(buf, size, "gm_cols_reg<%s, %lld, %d, %d, %lld, %lld, %d>", d->tname,
                 (long long)d->chunk, d->vec, d->gs, (long long)d->threads, (long long)d->reg_rows,
                 d->ts);
    else if (d->stages && d->cols)
        snprintf(buf, size, "gm_cols_async<%s, %lld, %d, %d, %lld, %lld>", d->tname,
                 (long long)d->chunk, d->vec, d->gs, (long long)d->threads, (long long)d->stages);
    else if (d->stages)
        snprintf(buf, size, "gm_rows_async<%s, %d, %lld, %d, %lld, %lld>", d->tname, d->op,
                 (long long)d->chunk, d->vec, (long long)d->threads, (long long)d->stages);
    else if (d->cols)
        snprintf(buf, size, "gm_cols<%s, %d, %lld, %d, %d, %lld>", d->tname, d->op,
                 (long long)d->chunk, d->vec, d->gs, (long long)d->threads);
    else
        snprintf(buf, size, "gm_rows<%s, %d, %lld, %d, %lld, %lld, %lld>", d->tname, d->op,
                 (long long)d->chunk, d->vec, (long long)d->threads, (long long)d->unroll,
                 d->full_occupancy ? 2048 / (long long)d->threads : 1LL);
}

static void gm_ref(family_kernel_ref *r, const char *source, const char *fmt, const gm_desc *d)
{
    r->source = source;
    snprintf(r->name, sizeof r->name, fmt, d->tname, d->op, d->trans);
}

/* Where gm_kernels lists each kernel: the method's own first (the custom kernel, or the gather
 * kernel; none for slice), then the shape's, which gm_shape_init takes from the list of a `gather`
 * configuration of the shape. */
enum { GM_K_MAIN = 0, GM_K_REF = 1, GM_K_FILL, GM_K_INDICES, GM_K_IOTA };

static int gm_kernels(const tune_family *fam, const tune_point *cfg, family_kernel_ref *refs,
                size_t max, char *why, size_t why_size)
{
    (void)fam;
    gm_desc d;
    if (gm_describe(cfg, &d, why, why_size) != 0)
        return -1;
    if (max < 6)
        return family_fail(why, why_size, "too few kernel slots");
    size_t n = 0;
    if (d.method == GM_CUSTOM) {
        refs[n].source = "gather_matmul.cu";
        refs[n].row = 1;
        gm_custom_name(&d, refs[n].name, sizeof refs[n].name);
        n++;
    } else if (d.method == GM_GATHER) {
        gm_ref(&refs[n++], "gather_matmul.cu", "gm_gather<%s, %d, %d>", &d);
    }
    gm_ref(&refs[n++], "gather_matmul.cu", "gm_reference<%s, %d, %d>", &d);
    refs[n].source = "common.cu";
    snprintf(refs[n++].name, sizeof refs[0].name, "tune_fill_uniform<%s>", d.tname);
    refs[n].source = "common.cu";
    snprintf(refs[n++].name, sizeof refs[0].name, "tune_fill_indices");
    refs[n].source = "common.cu";
    snprintf(refs[n++].name, sizeof refs[0].name, "tune_fill_iota");
    return (int)n;
}

/* ---- GPU side ---- */

typedef struct {
    family_env env;
    gm_desc shape; /* the shape's description (method fields unused) */
    void *A, *B, *out, *Ag, *Bg;
    int *I;
    float *ref;
    size_t n_a, n_b, n_i, n_out;
    void *k_fill, *k_idx, *k_ref, *k_iota;
    gm_desc cur;     /* the prepared configuration */
    void *k_main;    /* custom kernel, or the gather kernel of the gather baseline */
} gm_state;

static unsigned fill_grid(size_t n) { return (unsigned)(n / 256 + 1 < 65536 ? n / 256 + 1 : 65536); }

static tune_status gm_fill(gm_state *s, void *p, size_t n, uint64_t seed, tune_error *err)
{
    unsigned long long nn = n, sd = seed;
    void *args[] = {&p, &nn, &sd};
    return gpu_launch(s->k_fill, fill_grid(n), 256, 0, s->env.stream, args, err);
}

/* I[g, t] = t: the identity gather (the rows `slice` reads). */
static tune_status gm_identity_indices(gm_state *s, tune_error *err)
{
    unsigned long long nn = s->n_i;
    int period = (int)(s->shape.op == GM_OUTER ? s->shape.n : s->shape.k);
    void *args[] = {&s->I, &nn, &period};
    return gpu_launch(s->k_iota, fill_grid(s->n_i), 256, 0, s->env.stream, args, err);
}

static tune_status gm_fresh_indices(gm_state *s, uint64_t seed, tune_error *err)
{
    if (s->shape.identity)
        return gm_identity_indices(s, err);
    unsigned long long nn = s->n_i, sd = seed;
    int range = (int)s->shape.kp;
    void *args[] = {&s->I, &nn, &sd, &range};
    return gpu_launch(s->k_idx, fill_grid(s->n_i), 256, 0, s->env.stream, args, err);
}

static void gm_shape_free(void *state)
{
    gm_state *s = state;
    if (!s)
        return;
    gpu_free(s->A);
    gpu_free(s->B);
    gpu_free(s->I);
    gpu_free(s->out);
    gpu_free(s->ref);
    gpu_free(s->Ag);
    gpu_free(s->Bg);
    free(s);
}

static void *gm_shape_init(const family_env *env, const tune_point *shape, tune_error *err)
{
    gm_state *s = calloc(1, sizeof *s);
    char why[256];
    tune_point p = *shape;
    point_set_str(&p, "method", "gather");
    if (!s) {
        tune_error_set(err, TUNE_ERR_NOMEM, "gather_matmul", "out of memory");
        return NULL;
    }
    s->env = *env;
    if (gm_describe(&p, &s->shape, why, sizeof why) != 0) {
        tune_error_set(err, TUNE_ERR_UNSUPPORTED, "gather_matmul", "%s", why);
        goto fail;
    }
    const gm_desc *d = &s->shape;
    s->n_a = (size_t)(d->g * (d->op == GM_INNER ? d->kp : d->k));
    s->n_b = (size_t)(d->op == GM_OUTER ? d->g * d->k * d->kp : d->g * d->kp * d->n);
    s->n_i = (size_t)(d->g * (d->op == GM_OUTER ? d->n : d->k));
    s->n_out = (size_t)(d->g * d->n);
    const tune_family *fam = &gather_matmul_family;
    if (!(s->k_fill = family_kernel_at(fam, env, &p, GM_K_FILL, err)) ||
        !(s->k_idx = family_kernel_at(fam, env, &p, GM_K_INDICES, err)) ||
        !(s->k_iota = family_kernel_at(fam, env, &p, GM_K_IOTA, err)) ||
        !(s->k_ref = family_kernel_at(fam, env, &p, GM_K_REF, err)))
        goto fail;
    if (gpu_malloc(&s->A, s->n_a * d->ds, err) || gpu_malloc(&s->B, s->n_b * d->ds, err) ||
        gpu_malloc((void **)&s->I, s->n_i * sizeof(int), err) ||
        gpu_malloc(&s->out, s->n_out * d->ds, err) ||
        gpu_malloc((void **)&s->ref, s->n_out * sizeof(float), err))
        goto fail;
    if (gm_fill(s, s->A, s->n_a, env->seed ^ 0xa11ceull, err) ||
        gm_fill(s, s->B, s->n_b, env->seed ^ 0xb0bull, err) || gm_fresh_indices(s, env->seed, err))
        goto fail;
    return s;
fail:
    gm_shape_free(s);
    return NULL;
}

static tune_status gm_prepare(void *state, const tune_point *cfg, tune_error *err)
{
    gm_state *s = state;
    char why[256];
    if (gm_describe(cfg, &s->cur, why, sizeof why) != 0)
        return tune_error_set(err, TUNE_ERR_UNSUPPORTED, "gather_matmul", "%s", why);
    const gm_desc *d = &s->cur;
    s->k_main = NULL;
    if (d->method == GM_CUSTOM) {
        s->k_main = family_kernel_at(&gather_matmul_family, &s->env, cfg, GM_K_MAIN, err);
    } else if (d->method == GM_GATHER) {
        s->k_main = family_kernel_at(&gather_matmul_family, &s->env, cfg, GM_K_MAIN, err);
        size_t n_bg = (size_t)(d->g * d->k * d->n);
        if (s->k_main && !s->Bg && gpu_malloc(&s->Bg, n_bg * d->ds, err) != TUNE_OK)
            return err ? err->code : TUNE_ERR_OOM;
        if (s->k_main && !s->Ag && gpu_malloc(&s->Ag, (size_t)(d->g * d->k) * d->ds, err) != TUNE_OK)
            return err ? err->code : TUNE_ERR_OOM;
    } else {
        return TUNE_OK;
    }
    return s->k_main ? TUNE_OK : TUNE_ERR_CUDA;
}

static tune_status gm_before_rep(void *state, unsigned rep, tune_error *err)
{
    gm_state *s = state;
    return gm_fresh_indices(s, s->env.seed + 0x9e3779b97f4a7c15ull * (rep + 1), err);
}

static cudaDataType gm_cuda_type(const gm_desc *d)
{
    return d->ds == 4 ? CUDA_R_32F : strcmp(d->dtype, "bfloat16") == 0 ? CUDA_R_16BF : CUDA_R_16F;
}

/* out[g] (n x 1) = op(M[g]) (n x K) . x[g] (K x 1) with cuBLAS, column-major view. */
static tune_status gm_gemv_batched(gm_state *s, int trans, const void *M, int64_t lda,
                                   int64_t stride_m, const void *x, int64_t stride_x, tune_error *err)
{
    const gm_desc *d = &s->cur;
    const float alpha = 1.f, beta = 0.f;
    cudaDataType t = gm_cuda_type(d);
    int kk = (int)(d->op == GM_OUTER ? d->k : d->k);
    cublasStatus_t rc = cublasGemmStridedBatchedEx(
        (cublasHandle_t)s->env.cublas, trans ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, (int)d->n, 1,
        kk, &alpha, M, t, (int)lda, stride_m, x, t, kk, stride_x, &beta, s->out, t, (int)d->n, d->n,
        (int)d->g, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (rc != CUBLAS_STATUS_SUCCESS)
        return tune_error_set(err, TUNE_ERR_CUBLAS, "cublasGemmStridedBatchedEx", "%s (%s)",
                              cublasGetStatusString(rc), cublasGetStatusName(rc));
    return TUNE_OK;
}

static tune_status gm_launch(void *state, tune_error *err)
{
    gm_state *s = state;
    const gm_desc *d = &s->cur;
    int g = (int)d->g, k = (int)d->k, kp = (int)d->kp, n = (int)d->n;
    if (d->method == GM_CUSTOM) {
        void *args[] = {&s->A, &s->B, &s->I, &s->out, &g, &k, &kp, &n};
        return gpu_launch(s->k_main, (unsigned)d->grid, (unsigned)d->threads, d->smem, s->env.stream,
                          args, err);
    }
    if (d->method == GM_GATHER) {
        void *args[] = {&s->A, &s->B, &s->I, &s->Ag, &s->Bg, &g, &k, &kp, &n};
        tune_status st = gpu_launch(s->k_main, fill_grid((size_t)(d->g * d->k * d->n)), 256, 0,
                                    s->env.stream, args, err);
        if (st != TUNE_OK)
            return st;
        const void *x = d->op == GM_INNER ? s->Ag : s->A;
        return gm_gemv_batched(s, 0, s->Bg, d->n, d->k * d->n, x, d->k, err);
    }
    /* slice: the first k rows (inner) or n columns (outer) of B, no gather */
    int64_t stride_x = d->op == GM_INNER ? d->kp : d->k;
    if (d->op == GM_OUTER)
        return d->trans ? gm_gemv_batched(s, 1, s->B, d->k, d->kp * d->k, s->A, stride_x, err)
                        : gm_gemv_batched(s, 0, s->B, d->kp, d->k * d->kp, s->A, stride_x, err);
    return d->trans ? gm_gemv_batched(s, 1, s->B, d->kp, d->n * d->kp, s->A, stride_x, err)
                    : gm_gemv_batched(s, 0, s->B, d->n, d->kp * d->n, s->A, stride_x, err);
}

static float gm_to_float(const gm_desc *d, const void *buf, size_t i)
{
    if (d->ds == 4)
        return ((const float *)buf)[i];
    uint16_t h = ((const uint16_t *)buf)[i];
    return strcmp(d->dtype, "bfloat16") == 0 ? bf16_to_f32(h) : half_to_f32(h);
}

/* Normalised error ||out - ref|| / ||ref||; infinite when an element is not finite. */
static double gm_norm_error(const gm_desc *d, const void *out, const float *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double o = gm_to_float(d, out, i), r = ref[i];
        if (!isfinite(o))
            return INFINITY;
        num += (o - r) * (o - r);
        den += r * r;
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static tune_status gm_check(void *state, double *error, double *tolerance, tune_error *err)
{
    gm_state *s = state;
    const gm_desc *d = &s->cur;
    tune_status st = TUNE_OK;
    void *host_out = malloc(s->n_out * d->ds);
    float *host_ref = malloc(s->n_out * sizeof(float));
    int g = (int)d->g, k = (int)d->k, kp = (int)d->kp, n = (int)d->n;
    void *args[] = {&s->A, &s->B, &s->I, &s->ref, &g, &k, &kp, &n};
    *tolerance = d->ds == 4 ? 1e-5 : strcmp(d->dtype, "bfloat16") == 0 ? 1.6e-2 : 2e-3;
    *error = NAN;
    if (!host_out || !host_ref) {
        st = tune_error_set(err, TUNE_ERR_NOMEM, "gm_check", "out of host memory");
        goto done;
    }
    /* slice reads the first k rows (n columns): check it on the identity gather */
    if (d->method == GM_SLICE)
        st = gm_identity_indices(s, err);
    else
        st = gm_fresh_indices(s, s->env.seed ^ 0xc0ffeeull, err);
    if (st != TUNE_OK ||
        (st = gpu_launch(s->k_ref, (unsigned)((s->n_out + 255) / 256), 256, 0, s->env.stream, args,
                         err)) != TUNE_OK)
        goto done;
    /* poison: all-ones bits are NaN in fp16, bf16 and fp32, so an unwritten element fails */
    GPU_CHECK(cudaMemsetAsync(s->out, 0xff, s->n_out * d->ds, (cudaStream_t)s->env.stream), err, st,
              done);
    if ((st = gm_launch(s, err)) != TUNE_OK)
        goto done;
    GPU_CHECK(cudaMemcpyAsync(host_out, s->out, s->n_out * d->ds, cudaMemcpyDeviceToHost,
                              (cudaStream_t)s->env.stream),
              err, st, done);
    GPU_CHECK(cudaMemcpyAsync(host_ref, s->ref, s->n_out * sizeof(float), cudaMemcpyDeviceToHost,
                              (cudaStream_t)s->env.stream),
              err, st, done);
    GPU_CHECK(cudaStreamSynchronize((cudaStream_t)s->env.stream), err, st, done);
    *error = gm_norm_error(d, host_out, host_ref, s->n_out);
done:
    free(host_out);
    free(host_ref);
    return st;
}

const tune_family gather_matmul_family = {
    .name = "gather_matmul",
    .help = "SparQ gather-matmul: batched vector x gathered matrix (docs/gather_matmul.md)",
    .ops = gm_ops,
    .n_ops = sizeof gm_ops / sizeof gm_ops[0],
    .params = gm_params,
    .n_params = sizeof gm_params / sizeof gm_params[0],
    .methods = gm_methods,
    .n_methods = sizeof gm_methods / sizeof gm_methods[0],
    .dtype_axis = "dtype",
    .needs_cublas = 1,
    .traffic = gm_traffic,
    .n_traffic = sizeof gm_traffic / sizeof gm_traffic[0],
    .traffic_patterns = gm_patterns,
    .n_traffic_patterns = sizeof gm_patterns / sizeof gm_patterns[0],
    .kernels = gm_kernels,
    .shape_init = gm_shape_init,
    .shape_free = gm_shape_free,
    .prepare = gm_prepare,
    .before_rep = gm_before_rep,
    .launch = gm_launch,
    .check = gm_check,
};
