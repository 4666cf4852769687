/* mixed_gemm_space.c - the mixed-input GEMM family's CPU side (docs/mixed_gemm.md): its ops,
 * parameters and methods, the description and pruning of a configuration (with the reason it
 * cannot run), the kernel instantiations it needs, and the CPU reference of the packing. No CUDA.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mixed_gemm.h"
#include "mixed_gemm_impl.h"

static const char *const mg_dtypes[] = {"float16", "bfloat16", NULL};

static const family_axis mg_axes[] = {
    {"m", FAMILY_AXIS_INT, 1, 1 << 20, NULL, NULL, "rows of X and Y (batch x tokens)"},
    {"n", FAMILY_AXIS_INT, 64, 1 << 20, NULL, NULL, "columns of W and Y (a multiple of 64)"},
    {"k", FAMILY_AXIS_INT, 64, 1 << 20, NULL, NULL,
     "reduction length (a multiple of 64 and of the group)"},
    {"group", FAMILY_AXIS_INT, 0, 1 << 20, NULL, "128",
     "rows of W per scale: 32, 64, 128, ... (a power of two >= 32); 0: one group per column (G = "
     "k)"},
    {"zero_point", FAMILY_AXIS_BOOL, 0, 1, NULL, "false", "per-group zero points (else z = 8)"},
    {"dtype", FAMILY_AXIS_STR, 0, 0, mg_dtypes, "\"float16\"",
     "X, Y and scales: float16 or bfloat16"},
};

/* Traffic models per method (docs/roofline.md, "Traffic models"): what each one reads and writes
 * in DRAM; the tuned kernels keep the op's byte model (the default entry). */
#define MG_W4 "k * n / 2 + k / (group + (group == 0) * k) * n * dsize * (1 + zero_point)"
#define MG_XY "m * k * dsize + m * n * dsize"
const traffic_model mg_traffic[MG_N_TRAFFIC] = {
    {"w4a16", NULL, MG_W4 " + " MG_XY, "1", "0", NULL, NULL,
     "packed weight, scales (and zero points), X and Y once", NULL, NULL},
    {"w4a16", "cublas", "k * n * dsize + " MG_XY, "1", "0", NULL, NULL,
     "the dequantized 16-bit weight, X and Y", NULL, NULL},
    {"w4a16", "fp8", "k * n + m * k + m * n * dsize", "1", "0", NULL, "fp8",
     "the fp8 weight and X, Y in 16 bits; fp8 tensor-core rate", NULL, NULL},
    {"w4a16", "dequant", MG_W4 " + 2 * k * n * dsize + " MG_XY, "2", "0", NULL, NULL,
     "the dequantization (packed weight read, 16-bit weight written), then cuBLAS on it", NULL,
     NULL},
    {"w4a16", "stream", MG_W4, "1", "0", "0", NULL, "one read of the packed weight and scales",
     NULL, NULL},
    {"w4a16", "pack", "2 * (" MG_W4 ")", "1", "0", "0", NULL,
     "the user's weight and scales read, the packed layout written", NULL, NULL},
    {"w4a16", "marlin", MG_W4 " + " MG_XY, "m / 1024 + (m % 1024 >= 64) + (m % 64 > 0)", "0", NULL,
     NULL,
     "Marlin: its packed weight and scales, X and Y once (its blocks' partial sums meet in Y, in "
     "the L2); a launch per 1024 rows of m, one for the 64-row blocks left, one for the rest",
     NULL, NULL},
};

const family_op mg_ops[MG_N_OPS] = {
    {"w4a16", mg_axes, sizeof mg_axes / sizeof mg_axes[0], MG_W4 " + " MG_XY, "2 * m * n * k",
     "Y = X . dequant(W), int4 W (two per byte), per-group scales"},
};

const family_axis mg_params[MG_N_PARAMS] = {
    {"bm", FAMILY_AXIS_INT, 8, 256, NULL, "16",
     "block tile rows (m): a multiple of 16 (fused), of 8 up to 32 (gemv); wgmma: "
     "the most rows per block, a multiple of 8 up to 256 (m spread evenly over ceil(m / bm) row "
     "blocks, rounded up to 8)"},
    {"bn", FAMILY_AXIS_INT, 64, 1024, NULL, "128", "block tile columns (n)"},
    {"bk", FAMILY_AXIS_INT, 64, 1024, NULL, "128", "block tile depth (k) per pipeline stage"},
    {"wm", FAMILY_AXIS_INT, 1, 16, NULL, "1", "warps along m"},
    {"wn", FAMILY_AXIS_INT, 1, 16, NULL, "2", "warps along n (wgmma: warpgroups)"},
    {"wk", FAMILY_AXIS_INT, 1, 16, NULL, "1",
     "warps along k (partial sums added in shared memory)"},
    {"stages", FAMILY_AXIS_INT, 1, 16, NULL, "4",
     "pipeline stages (>= 2; gemv: batches in flight per warp, 1 or 2 in registers, 3 to 8 in "
     "shared memory)"},
    {"splitk", FAMILY_AXIS_INT, 0, 64, NULL, "1",
     "blocks along k (reduced in the kernel); 0: stream-K (wgmma_ws: one block per "
     "multiprocessor, each taking an equal range of all tiles' k iterations)"},
    {"sa", FAMILY_AXIS_INT, 0, 2, NULL, "0",
     "0: every weight dequantized; 1 (staged, gemv): the scale applied to the accumulator once per "
     "group; 2 (gemv): that, and the zero point too, through a sum of X"},
};

const family_method mg_methods[MG_N_METHODS] = {
    {"fused", 1, "tune's fused kernel: int4 dequantization inside a tensor-core GEMM",
     FAMILY_ROLE_TUNED},
    {"dequant", 1, "dequantize the packed weight to fp16/bf16, then cuBLAS (no tile parameters)",
     FAMILY_ROLE_TUNED},
    {"cublas", 0, "cuBLAS fp16/bf16 GEMM on the weight dequantized beforehand",
     FAMILY_ROLE_REFERENCE},
    {"fp8", 0, "cuBLASLt fp8 e4m3 GEMM (per-tensor scales), inputs converted beforehand",
     FAMILY_ROLE_BASELINE},
    {"pack", 0, "packing of weight, scales and zero points into the fused layout (once per weight)",
     FAMILY_ROLE_AUXILIARY},
    {"stream", 0, "one read of the packed weight, scales and zero points: the floor of the shape",
     FAMILY_ROLE_AUXILIARY},
    {"wgmma", 1,
     "tune's warpgroup-MMA kernel (sm_90a): weight as the A operand from registers, dequantized "
     "once per block, X from shared memory through the tensor memory accelerator (bm: the most "
     "rows per block; the MMA's N is m spread evenly over ceil(m / bm) blocks, rounded up to 8; "
     "bn = 64 or 128 x wn warpgroups; bk = 16 x steps per stage, a multiple of 64)",
     FAMILY_ROLE_TUNED},
    {"wgmma_ws", 1,
     "the warpgroup-MMA kernel, warp-specialized (sm_90a): a producer warpgroup streams the rings "
     "(TMA boxes of X, of the packed weight and of the scales), wn consumer warpgroups (1 or 2; "
     "registers moved to them with setmaxnreg) dequantize and issue the MMAs; the wgmma kernel's "
     "tile axes",
     FAMILY_ROLE_TUNED},
    {"gemv", 1,
     "tune's warp-streaming kernel for small m: every warp streams its own batches of packed "
     "weight (bk = 16 x units per batch; stages = batches in flight: 1 or 2 in registers, 3 to 8 "
     "in a per-warp cp.async ring), weight as the MMA's A operand (bm = 8 x tiles of X rows, bn = "
     "64 wn, wk warps along k)",
     FAMILY_ROLE_TUNED},
    {"marlin", 0,
     "Marlin (IST-DASLab/marlin), the fp16 x int4 GEMM for batches of 1-32, from the library "
     "TUNE_MARLIN_LIB names (scripts/peers/marlin.sh); the weight and scales packed into its "
     "format on the host beforehand; float16, symmetric, group 128 or per column, k % 128 and "
     "n % 256",
     FAMILY_ROLE_BASELINE},
};

static int is_pow2(int64_t v)
{
    return v > 0 && (v & (v - 1)) == 0;
}

static int ilog2(int64_t v)
{
    int r = 0;
    while (v > 1) {
        v >>= 1;
        r++;
    }
    return r;
}

/* Shared memory of a fused configuration: the pipeline, or the cross-warp reduction if larger. */
static size_t mg_smem_bytes(const mg_desc *d)
{
    int64_t sr = d->bk / 32 > 0 ? d->bk / 32 : 1;
    int64_t stage = d->bm * d->bk * 2 + d->bk * d->bn / 2 + sr * d->bn * 2 * (1 + d->zp);
    int64_t mt = d->bm / d->wm / 16, nu = d->bn / d->wn / 64;
    int64_t red = (d->wk - 1) * d->wm * d->wn * mt * nu * 32 * 32 * 4;
    return (size_t)(stage * d->stages > red ? stage * d->stages : red);
}

/* What the tiled kernels require of their blocking: at most 1024 threads, tiles that divide n and
 * k, groups and stages that nest, and no more splits than k tiles. */
static int mg_check_blocking(const mg_desc *d, int64_t threads, char *why, size_t why_size)
{
    if (threads > 1024)
        return family_fail(why, why_size, "too many threads: %lld warps",
                           (long long)(threads / 32));
    if (d->n % d->bn != 0)
        return family_fail(why, why_size, "tile does not divide the problem: n = %lld, bn = %lld",
                           (long long)d->n, (long long)d->bn);
    if (d->k % d->bk != 0)
        return family_fail(why, why_size, "tile does not divide the problem: k = %lld, bk = %lld",
                           (long long)d->k, (long long)d->bk);
    if (d->g_eff <= d->bk ? d->bk % d->g_eff != 0 : d->g_eff % d->bk != 0)
        return family_fail(why, why_size, "group and bk do not nest: group %lld, bk %lld",
                           (long long)d->g_eff, (long long)d->bk);
    if (d->splitk < 0 || d->splitk > d->k / d->bk)
        return family_fail(why, why_size,
                           "split-K deeper than the k tiles: splitk %lld > k / bk = %lld",
                           (long long)d->splitk, (long long)(d->k / d->bk));
    return 0;
}

/* The registers and shared memory of a tiled configuration: acc_regs fp32 accumulators per thread
 * and about `overhead` more registers (fragments, addresses) must fit in the `avail` registers a
 * thread can have, and the shared memory in the device's per block; on success records smem, the
 * threads and gsh in d. */
static int mg_check_resources(mg_desc *d, int64_t acc_regs, int64_t overhead, int64_t avail,
                              size_t smem, int64_t threads, char *why, size_t why_size)
{
    if (acc_regs + overhead > avail)
        return family_fail(why, why_size,
                           "too many registers: %lld accumulators per thread and ~%lld more, "
                           "%lld available",
                           (long long)acc_regs, (long long)overhead, (long long)avail);
    if (smem > MG_SMEM_LIMIT - MG_SMEM_STATIC)
        return family_fail(why, why_size, "shared memory over the device limit: %zu KiB > %d KiB",
                           smem / 1024, MG_SMEM_LIMIT / 1024);
    d->smem = smem;
    d->threads = (unsigned)threads;
    d->gsh = d->g_eff <= d->bk ? ilog2(d->g_eff) : -1;
    return 0;
}

/* The grid of the gemv and wgmma kernels: (row blocks along m, column blocks along n, splits), so
 * that the row blocks that share a weight slice are neighbours. */
static int mg_grid_m_n_k(mg_desc *d, char *why, size_t why_size)
{
    d->grid[0] = (unsigned)((d->m + d->bm - 1) / d->bm);
    d->grid[1] = (unsigned)(d->n / d->bn);
    d->grid[2] = d->splitk == 0 ? 1u : (unsigned)d->splitk; /* 0: stream-K, mg_launch_grid */
    if (d->grid[1] > 65535)
        return family_fail(why, why_size, "tile shape: n / bn = %u blocks exceeds the grid limit",
                           d->grid[1]);
    return 0;
}

/* The warp-streaming kernel's geometry: bm = 8 XT rows, bn = 64 wn (one 64-column unit per warp),
 * bk = 16 U the batch a warp streams at once, stages the batches in flight (1 or 2 in registers,
 * 3 to 8 in the warp's cp.async ring). */
static const char *mg_gemv_shape(const mg_desc *d)
{
    if (d->bm % 8 != 0 || d->bm > 32)
        return "tile shape: the gemv kernel takes bm = 8, 16, 24, 32";
    if (d->wn < 1 || d->bn != 64 * d->wn || d->wm != 1)
        return "tile shape: the gemv kernel takes bn = 64 x wn, wm = 1";
    if (d->bk % 32 != 0 || d->bk > 256)
        return "tile shape: the gemv kernel takes bk = 32, 64, ..., 256";
    if (d->stages < 1 || d->stages > 8)
        return "tile shape: the gemv kernel takes stages = 1 to 8";
    return NULL;
}

static int mg_describe_gemv(mg_desc *d, char *why, size_t why_size)
{
    int64_t threads = d->wn * d->wk * 32;
    if (mg_check_blocking(d, threads, why, why_size) != 0)
        return -1;
    d->srw = d->g_eff <= d->bk ? d->bk / d->g_eff : 1;
    /* accumulators and partial sums: 16 fp32 per n8 tile of X (twice with sa, and 4 sums of X
     * with sa 2);
     * batches in registers: 4 per unit and scale row (one unit with the ring); ~40 for fragments
     * and addresses */
    int64_t xt = d->bm / 8, units = d->bk / 16, ring = d->stages >= 3;
    int64_t regs = xt * (16 + (d->sa ? 16 : 0) + (d->sa == 2 ? 4 : 0)) +
                   (ring ? 4 : d->stages * 4 * (units + d->srw * (1 + d->zp)));
    int64_t kb = d->k / d->bk, xstride = (kb + d->splitk - 1) / d->splitk * d->bk + 8;
    int64_t rows = d->m < d->bm ? d->m : d->bm, xs = (rows * xstride * 2 + 15) / 16 * 16;
    if (ring)
        xs += d->wn * d->wk * d->stages * (units * 512 + d->srw * 128 * (1 + d->zp));
    int64_t red = (d->wk - 1) * d->wn * xt * 16 * 32 * 4;
    if (mg_check_resources(d, regs, 40, 255, (size_t)(xs > red ? xs : red), threads, why,
                           why_size) != 0)
        return -1;
    return mg_grid_m_n_k(d, why, why_size);
}

/* Shared memory of the wgmma kernel: alignment slack, barriers and the ring of stages (X in
 * 128-byte swizzle atoms, the packed weight, scales and zero points, each stage rounded up to
 * 1 024 bytes), or with 2 splits (a cluster) the fp32 partial tile if larger; the formulas of
 * mg_wgmma_layout in mixed_gemm_wgmma.cu, which traps when given less. */
static size_t mg_wgmma_smem(const mg_desc *d)
{
    int64_t ks = d->bk / 16, sr = ks / 2 > 0 ? ks / 2 : 1;
    int64_t stage = ks * d->bm * 32 + ks * (d->bn / 64) * 512 + sr * d->bn * 2 * (1 + d->zp);
    stage = (stage + 1023) / 1024 * 1024;
    int64_t ring = d->stages * stage, part = d->splitk == 2 ? d->bm * (d->bn + 4) * 4 : 0;
    return (size_t)(1024 + 1024 + (ring > part ? ring : part));
}

/* The warp-specialized wgmma kernel's rings: `stages` slots of X (BM rows x bk, 128-byte swizzle
 * atoms) and wstages slots of packed weight, scales and zero points (rounded to 128 bytes), as
 * deep as the shared memory left by the X ring holds (at most 16), and at least as deep as the X
 * ring; the formulas of mg_ws_layout in mixed_gemm_wgmma.cu, which traps when given less.
 * Returns the bytes, 0 when not even that fits. */
static size_t mg_ws_smem(mg_desc *d)
{
    int64_t ks = d->bk / 16, sr = ks / 2 > 0 ? ks / 2 : 1;
    int64_t xb = ks * d->bm * 32, wb = ks * (d->bn / 64) * 512 + sr * d->bn * 2 * (1 + d->zp);
    wb = (wb + 127) / 128 * 128;
    int64_t left = MG_SMEM_LIMIT - MG_SMEM_STATIC - 2048 - d->stages * xb;
    d->wstages = left > 0 ? left / wb : 0;
    if (d->wstages > 16)
        d->wstages = 16;
    if (d->wstages < d->stages)
        return 0;
    int64_t ring = d->stages * xb + d->wstages * wb,
            part = d->splitk == 2 ? d->bm * (d->bn + 4) * 4 : 0;
    return (size_t)(2048 + (ring > part ? ring : part));
}

/* The registers a consumer thread of the warp-specialized wgmma kernel gets: what ptxas gives a
 * thread of a block of wn + 1 warpgroups, less the producer warpgroup's 40, spread over the wn
 * consumer warpgroups (mg_ws_regs in mixed_gemm_wgmma.cu); 1 consumer warpgroup keeps 248. */
static int64_t mg_ws_consumer_regs(int64_t wn)
{
    int64_t threads = 128 * (wn + 1), entry = 65536 / threads / 8 * 8;
    if (entry > 248)
        entry = 248;
    if (wn == 1)
        return entry;
    int64_t c = (entry * threads - 40 * 128) / (128 * wn) / 8 * 8;
    return c > 240 ? 240 : c;
}

/* The wgmma kernels' geometry: bm = the most rows per block (the MMA's N is mg_wgmma_rows), bn = 64
 * or 128 columns per warpgroup (wn of them), bk = 16 KS in whole 64-column swizzle atoms; the
 * warp-specialized one adds a producer warpgroup to wn = 1 or 2 consumers. */
static const char *mg_wgmma_shape(const mg_desc *d)
{
    const int ws = d->method == MG_WGMMA_WS;
    if (d->bm < 8 || d->bm > 256 || d->bm % 8 != 0)
        return "tile shape: the wgmma kernel takes bm a multiple of 8 up to 256";
    if (d->wn < 1 || (d->bn != 64 * d->wn && d->bn != 128 * d->wn && !(ws && d->bn == 256 * d->wn)))
        return "tile shape: the wgmma kernel takes bn = 64 x wn or 128 x wn (warp-specialized: "
               "also 256 x wn)";
    if (ws && d->wn > 2)
        return "tile shape: the warp-specialized wgmma kernel takes wn = 1 or 2";
    if (d->wm != 1 || d->wk != 1 || d->sa != 0)
        return "tile shape: the wgmma kernel takes wm = 1, wk = 1, sa = 0";
    if (d->bk % 64 != 0)
        return "tile shape: the wgmma kernel takes bk a multiple of 64";
    if (d->stages < 2)
        return "tile shape: stages must be >= 2";
    return NULL;
}

int64_t mg_wgmma_rows(int64_t m, int64_t bm)
{
    int64_t blocks = (m + bm - 1) / bm;
    return ((m + blocks - 1) / blocks + 7) / 8 * 8;
}

/* The wgmma kernels' description: the row tile follows m (mg_wgmma_rows; d->bm becomes the
 * kernel's), then registers, shared memory and the grid. */
static int mg_describe_wgmma(mg_desc *d, char *why, size_t why_size)
{
    const int ws = d->method == MG_WGMMA_WS;
    d->bm = mg_wgmma_rows(d->m, d->bm);
    if (d->splitk == 0 && (d->m + d->bm - 1) / d->bm > 64)
        return family_fail(why, why_size,
                           "tile shape: stream-K takes at most 64 row blocks (each group of the "
                           "persistent grid holds a block per row block), not %lld",
                           (long long)((d->m + d->bm - 1) / d->bm));
    int64_t threads = 128 * (d->wn + ws);
    if (mg_check_blocking(d, threads, why, why_size) != 0)
        return -1;
    /* bm / 2 fp32 accumulators per 64-column tile and ~30 more registers (what ptxas asks for)
     * within what a thread of a block of wn warpgroups can have; the warp-specialized kernel
     * also counts its two stages of A fragments (4 per k16 step and tile) against what a
     * consumer gets */
    int64_t mt = d->bn / (64 * d->wn), avail = 65536 / threads / 8 * 8;
    int64_t need = mt * d->bm / 2 + (ws ? 8 * (d->bk / 16) * mt : 0);
    if (ws)
        avail = mg_ws_consumer_regs(d->wn);
    size_t smem = ws ? mg_ws_smem(d) : mg_wgmma_smem(d);
    if (ws && smem == 0)
        return family_fail(why, why_size,
                           "shared memory over the device limit: the weight ring would be "
                           "shallower than %lld stages of X",
                           (long long)d->stages);
    if (mg_check_resources(d, need, 30, avail > 255 ? 255 : avail, smem, threads, why,
                           why_size) != 0)
        return -1;
    return mg_grid_m_n_k(d, why, why_size);
}

const char *mg_tile_shape(const mg_desc *d)
{
    if (d->splitk == 0 && d->method != MG_WGMMA_WS)
        return "tile shape: splitk = 0 (stream-K) is the warp-specialized wgmma kernel's";
    switch (d->method) {
    case MG_GEMV:
        return mg_gemv_shape(d);
    case MG_WGMMA:
    case MG_WGMMA_WS:
        return mg_wgmma_shape(d);
    case MG_FUSED:
        break;
    default:
        return NULL;
    }
    if (d->sa == 2)
        return "tile shape: sa = 2 is the gemv kernel's";
    if (d->bk % 64 != 0)
        return "tile shape: the staged kernel takes bk a multiple of 64";
    if (d->wm < 1 || d->bm % (16 * d->wm) != 0)
        return "tile shape: the staged kernel takes bm a multiple of 16 x wm";
    if (d->wn < 1 || d->bn % (64 * d->wn) != 0)
        return "tile shape: the staged kernel takes bn a multiple of 64 x wn";
    if (d->wk < 1 || (d->bk / 16) % d->wk != 0)
        return "tile shape: the staged kernel takes bk / 16 a multiple of wk";
    if (d->stages < 2)
        return "tile shape: stages must be >= 2";
    return NULL;
}

int mg_method_index(const char *method)
{
    for (size_t i = 0; i < sizeof mg_methods / sizeof mg_methods[0]; i++)
        if (strcmp(method, mg_methods[i].name) == 0)
            return (int)i;
    return -1;
}

/* Describes cfg; -1 with `why` (a category, a colon, the details) when it cannot run. About 100
 * lines: one check per constraint of the problem and of the staged kernel's tile space, each with
 * its reason, in the order the reasons are reported. */
int mg_describe(const tune_point *cfg, mg_desc *d, char *why, size_t why_size)
{
    memset(d, 0, sizeof *d);
    const char *method = point_str(cfg, "method", "");
    d->method = mg_method_index(method);
    if (d->method < 0)
        return family_fail(why, why_size, "unknown method '%s'", method);
    const char *dtype = point_str(cfg, "dtype", "float16");
    d->bf16 = strcmp(dtype, "bfloat16") == 0;
    if (!d->bf16 && strcmp(dtype, "float16") != 0)
        return family_fail(why, why_size, "unsupported dtype: '%s' (float16 or bfloat16)", dtype);
    d->tname = d->bf16 ? "bf16_t" : "half_t";
    d->zp = point_int(cfg, "zero_point", 0) != 0;
    d->m = point_int(cfg, "m", 0);
    d->n = point_int(cfg, "n", 0);
    d->k = point_int(cfg, "k", 0);
    d->group = point_int(cfg, "group", 128);
    if (d->m < 1 || d->n < 1 || d->k < 1)
        return family_fail(why, why_size, "bad shape: m, n and k must be >= 1");
    if (d->n % 64 != 0)
        return family_fail(why, why_size,
                           "layout: n = %lld is not a multiple of 64 (the packed unit)",
                           (long long)d->n);
    if (d->k % 64 != 0)
        return family_fail(why, why_size, "layout: k = %lld is not a multiple of 64",
                           (long long)d->k);
    d->g_eff = d->group == 0 ? d->k : d->group;
    if (d->group != 0 && (!is_pow2(d->group) || d->group < 32))
        return family_fail(why, why_size,
                           "group: %lld is not a power of two >= 32 (or 0: per column)",
                           (long long)d->group);
    if (d->k % d->g_eff != 0)
        return family_fail(why, why_size,
                           "group: k = %lld is not a multiple of the group size %lld",
                           (long long)d->k, (long long)d->g_eff);
    if ((d->m * d->k > INT32_MAX || d->m * d->n > INT32_MAX ||
         d->k * d->n > 16 * (int64_t)INT32_MAX))
        return family_fail(why, why_size, "bad shape: a matrix exceeds 2^31 elements");
    if (d->method == MG_MARLIN)
        return mg_marlin_shape(d, why, why_size);
    if (!MG_TILED(d->method))
        return 0;

    d->bm = point_int(cfg, "bm", 16);
    d->bn = point_int(cfg, "bn", 128);
    d->bk = point_int(cfg, "bk", 128);
    d->wm = point_int(cfg, "wm", 1);
    d->wn = point_int(cfg, "wn", 2);
    d->wk = point_int(cfg, "wk", 1);
    d->stages = point_int(cfg, "stages", 4);
    d->splitk = point_int(cfg, "splitk", 1);
    d->sa = point_int(cfg, "sa", 0);
    const char *shape = mg_tile_shape(d);
    if (shape)
        return family_fail(why, why_size, "%s", shape);
    if (d->method == MG_GEMV)
        return mg_describe_gemv(d, why, why_size);
    if (MG_IS_WGMMA(d->method))
        return mg_describe_wgmma(d, why, why_size);
    int64_t threads = d->wm * d->wn * d->wk * 32;
    if (mg_check_blocking(d, threads, why, why_size) != 0)
        return -1;
    /* accumulators: 32 fp32 registers per 16 x 64 warp tile (twice with sa), plus ~60 for
     * fragments and addresses */
    int64_t acc_regs = (d->bm / d->wm / 16) * (d->bn / d->wn / 64) * 32 * (d->sa ? 2 : 1);
    if (mg_check_resources(d, acc_regs, 60, 255, mg_smem_bytes(d), threads, why, why_size) != 0)
        return -1;
    d->grid[0] = (unsigned)(d->n / d->bn);
    d->grid[1] = (unsigned)((d->m + d->bm - 1) / d->bm);
    d->grid[2] = (unsigned)d->splitk;
    if (d->grid[1] > 65535)
        return family_fail(why, why_size, "tile shape: m / bm = %u blocks exceeds the grid limit",
                           d->grid[1]);
    return 0;
}

static void mg_fused_name(const mg_desc *d, char *buf, size_t size)
{
    if (MG_IS_WGMMA(d->method)) {
        /* the stages (wgmma_ws: X and weight), ZP, CL (2 splits: a cluster) and, for wgmma_ws,
         * SK (splitk 0: stream-K) */
        char st[64];
        const int cl = d->splitk == 2 ? 2 : 1;
        if (d->method == MG_WGMMA_WS)
            snprintf(st, sizeof st, "%lld, %lld, %d, %d, %d", (long long)d->stages,
                     (long long)d->wstages, d->zp, cl, d->splitk == 0);
        else
            snprintf(st, sizeof st, "%lld, %d, %d", (long long)d->stages, d->zp, cl);
        snprintf(buf, size, "%s<%s, %lld, %lld, %lld, %lld, %s>",
                 d->method == MG_WGMMA_WS ? "mg_wgmma_ws" : "mg_wgmma", d->tname, (long long)d->bm,
                 (long long)d->wn, (long long)(d->bn / (64 * d->wn)), (long long)(d->bk / 16), st);
        return;
    }
    if (d->method == MG_GEMV) {
        snprintf(buf, size, "mg_gemv<%s, %lld, %lld, %lld, %lld, %lld, %lld, %d, %d>", d->tname,
                 (long long)(d->bm / 8), (long long)d->wn, (long long)d->wk,
                 (long long)(d->bk / 16), (long long)d->stages, (long long)d->srw, d->zp,
                 (int)d->sa);
        return;
    }
    snprintf(buf, size, "mg_fused<%s, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %d, %d>", d->tname,
             (long long)d->bm, (long long)d->bn, (long long)d->bk, (long long)d->wm,
             (long long)d->wn, (long long)d->wk, (long long)d->stages, d->zp, d->sa != 0);
}

static void mg_ref(family_kernel_ref *refs, size_t *n, const char *source, const char *fmt,
                   const mg_desc *d)
{
    refs[*n].source = source;
    snprintf(refs[*n].name, sizeof refs[*n].name, fmt, d->tname, d->zp);
    (*n)++;
}

/* The kernel source of a tuned configuration's main kernel. */
static const char *mg_main_source(const mg_desc *d)
{
    return d->method == MG_GEMV     ? "mixed_gemm_gemv.cu"
           : MG_IS_WGMMA(d->method) ? "mixed_gemm_wgmma.cu"
                                    : "mixed_gemm.cu";
}

/* Helper kernels every shape needs (inputs, packing, reference, error). */
const char *const mg_shape_kernels[MG_N_SHAPE_KERNELS] = {
    "mg_fill_bytes",         "mg_fill_zeros", "mg_fill_scales<%s>", "mg_pack_w",
    "mg_pack_sz<%s>",        "mg_to_f32<%s>", "mg_error<%s>",       "mg_dequant_raw<%s, float>",
    "tune_fill_uniform<%s>",
};

/* The method's kernels first (mg_prepare takes them by their place: fp8's weight, then x), then
 * the shape's (mg_shape_kernels). */
int mg_kernels(const tune_family *fam, const tune_point *cfg, family_kernel_ref *refs,
                size_t max, char *why, size_t why_size)
{
    (void)fam;
    mg_desc d;
    if (mg_describe(cfg, &d, why, why_size) != 0)
        return -1;
    size_t n = 0, n_shape = MG_N_SHAPE_KERNELS;
    if (max < n_shape + 3)
        return family_fail(why, why_size, "too few kernel slots");
    /* the tuned methods' kernel */
    refs[0].row = MG_TILED(d.method) || d.method == MG_DEQUANT;
    if (MG_TILED(d.method)) {
        refs[n].source = mg_main_source(&d);
        mg_fused_name(&d, refs[n].name, sizeof refs[n].name);
        refs[n].arch = MG_IS_WGMMA(d.method) ? 90 : 0;
        n++;
    } else if (d.method == MG_DEQUANT) {
        mg_ref(refs, &n, MG_UTIL, "mg_dequant_packed<%s, %d>", &d);
    } else if (d.method == MG_CUBLAS) {
        refs[n].source = MG_UTIL;
        snprintf(refs[n].name, sizeof refs[n].name, "mg_dequant_raw<%s, %s>", d.tname, d.tname);
        n++;
    } else if (d.method == MG_STREAM) {
        mg_ref(refs, &n, MG_UTIL, MG_STREAM_KERNEL, &d);
    } else if (d.method == MG_MARLIN) {
        /* its kernels are the library's; a library that does not load is a reason to skip */
        if (!mg_marlin_open(why, why_size))
            return -1;
    } else if (d.method == MG_FP8) {
        mg_ref(refs, &n, MG_UTIL, "mg_weight_fp8<%s>", &d);
        mg_ref(refs, &n, MG_UTIL, "mg_x_fp8<%s>", &d);
    } else {
        mg_ref(refs, &n, MG_UTIL, "mg_unpack_w", &d);
    }
    for (size_t i = 0; i < n_shape; i++)
        mg_ref(refs, &n, strncmp(mg_shape_kernels[i], "tune_", 5) == 0 ? "common.cu" : MG_UTIL,
               mg_shape_kernels[i], &d);
    return (int)n;
}

/* ---- CPU packing (the reference of mg_pack_w / mg_pack_sz) ---- */

void mixed_gemm_packed_pos(int64_t i, int64_t j, int64_t n, size_t *word, int *shift)
{
    int64_t kk = i / 16, u = j / 64;
    int r = (int)(i % 16), c = (int)(j % 64);
    int tile = c / 8, g = c % 8, t = (r % 8) / 2, hi = r >= 8, odd = r & 1;
    *word = (size_t)(((kk * (n / 64) + u) * 32 + g * 4 + t) * 4 + tile / 2);
    *shift = 8 * (tile & 1) + 4 * hi + 16 * odd;
}

void mg_pack_nibbles(const uint8_t *q, int64_t k, int64_t n, uint32_t *out, mg_pos_fn pos)
{
    memset(out, 0, (size_t)(k * n / 2));
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < n; j++) {
            size_t w;
            int sh;
            pos(i, j, n, &w, &sh);
            out[w] |= (uint32_t)((q[(i * n + j) / 2] >> (4 * (j & 1))) & 0xf) << sh;
        }
}

void mixed_gemm_pack_cpu(const uint8_t *q, int64_t k, int64_t n, uint32_t *out)
{
    mg_pack_nibbles(q, k, n, out, mixed_gemm_packed_pos);
}

void mixed_gemm_unpack_cpu(const uint32_t *packed, int64_t k, int64_t n, uint8_t *q)
{
    memset(q, 0, (size_t)(k * n / 2));
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < n; j++) {
            size_t w;
            int sh;
            mixed_gemm_packed_pos(i, j, n, &w, &sh);
            q[(i * n + j) / 2] |= (uint8_t)(((packed[w] >> sh) & 0xf) << (4 * (j & 1)));
        }
}

void mixed_gemm_pack_scales_cpu(const uint16_t *s, int64_t groups, int64_t n, uint16_t *out)
{
    for (int64_t i = 0; i < groups * n; i++) {
        int64_t col = i % n, base = i - col % 64, c = col % 64;
        out[i] = s[base + 8 * (c % 8) + c / 8];
    }
}

_Static_assert(sizeof mg_shape_kernels / sizeof mg_shape_kernels[0] == MG_N_SHAPE_KERNELS,
               "MG_N_SHAPE_KERNELS");
