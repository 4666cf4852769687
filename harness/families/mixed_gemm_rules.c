/* mixed_gemm_rules.c - which tiles the mixed-input GEMM family tries at a shape
 * (docs/mixed_gemm.md, "Which tiles are tried"): the family's prune hook. Each rule is a function
 * of the shape (m, n, k) and the tile, with a one-sentence reason; a sweep lists the tile values,
 * the rules choose among them per shape, so that an m or a (k, n) no sweep has shipped gets the
 * tiles that fit it. What a configuration needs to run at all (registers, shared memory, tiles that
 * divide the problem) stays in mg_describe: those are `skipped` rows with their reason. CPU only.
 */
#include <stdint.h>
#include <string.h>

#include "mixed_gemm_impl.h"

/* Multiprocessors of the H100 SXM and the H200, the GPUs the sweeps are tuned on. */
#define MG_SMS 132
/* Fewest k tiles (bk) a split keeps: with one, a block's loads cannot overlap its MMAs and the
 * partial tile costs as much as the split saves. */
#define MG_MIN_K_TILES 2

enum { P_BM, P_BN, P_BK, P_WM, P_WN, P_WK, P_STAGES, P_SPLITK, P_SA, P_N };
static const char *const mg_rule_params[P_N] = {"bm", "bn",     "bk",     "wm", "wn",
                                                "wk", "stages", "splitk", "sa"};
/* The defaults of mg_params, for a parameter a sweep's points lack (never in a parsed sweep). */
static const int64_t mg_rule_dflt[P_N] = {16, 128, 128, 1, 2, 1, 4, 1, 0};

/* dequant reads no tile parameter: the point earlier runs recorded for it (the staged kernel's
 * 128 x 128 x 64 tile, 2 x 2 warps, 3 stages), so that its rows keep one identity. */
static const int64_t mg_dequant_point[P_N] = {128, 128, 64, 2, 2, 1, 3, 1, 0};

/* The rules' reasons (static: the space counts configurations per reason). */
#define R_DEQUANT                                                                                  \
    "dequant: no tile parameters, one point per shape (128 x 128 x 64, 2 x 2 warps, 3 stages, "    \
    "else the sweep's first)"
#define R_DEQUANT_M                                                                                \
    "dequant: m < 128, where writing and re-reading a 16-bit copy of the weight (8x the packed "   \
    "bytes) costs more than the fused kernels take in all"
#define R_GEMV_M                                                                                   \
    "gemv: m > 16, past two X tiles its accumulators crowd the weight batches out of the "         \
    "registers, and wgmma dequantizes each weight once per block instead"
#define R_WGMMA_M                                                                                  \
    "wgmma kernels: m <= 8, one 8-row X tile per 64-row dequantized weight operand, the "          \
    "weight stream gemv is built for"
#define R_ROW_COVER_SMALL                                                                          \
    "row tile: a tile that covers m exists, and a smaller one streams and dequantizes the "        \
    "weight once more per extra row block"
#define R_ROW_COVER_LARGE                                                                          \
    "row tile: a smaller tile also covers m, and a larger one only adds padded rows"
#define R_ROW_BLOCKS                                                                               \
    "row tile: m is above the largest tile, and a larger tile pads no more rows or this one "      \
    "needs more than twice its row blocks (each one dequantizes the whole weight again)"
#define R_ROWS_SAME                                                                                \
    "row tile: a smaller bm gives the same row blocks, hence the same kernel (m is spread evenly " \
    "over them)"
#define R_ROWS_MORE                                                                                \
    "row tile: more row blocks than the largest bm gives (each dequantizes the weight again), "    \
    "tried only from m = 128 (the tensor pipe, not the weight stream, is the limit), at most "     \
    "twice as many, and where the fewest leave the last wave of 132 blocks under half full"
#define R_SPLIT_NONE                                                                               \
    "split-K: none, while the tile grid fills fewer than half of the 132 multiprocessors"
#define R_SPLIT_FULL                                                                               \
    "split-K: the tile grid alone fills a wave of 132 blocks or more, its last one at least "      \
    "half full"
#define R_SPLIT_WAVES                                                                              \
    "split-K: deeper than 2 where half as many splits already give two waves of blocks"
#define R_SPLIT_DEPTH "split-K: fewer than 2 k tiles (bk) per split"
#define R_STREAMK                                                                                  \
    "split-K: stream-K (0) only where the tile grid ends in a partial wave of 132 blocks (whole "  \
    "waves leave no multiprocessor idle, and stream-K would only add partial tiles)"
#define R_GEMV_WARPS                                                                               \
    "gemv: 4 to 8 warps per block (fewer keep too few loads in flight, more measured slower)"
#define R_GEMV_BATCH                                                                               \
    "gemv: bk >= 128, a batch of at least 8 units per warp (fewer leave too few bytes in flight)"
#define R_GEMV_STAGES                                                                              \
    "gemv: stages 1 or 3 (two batches in registers and rings deeper than 3 measured slower)"
#define R_WGMMA_WN                                                                                 \
    "wgmma: wn >= 2 warpgroups (one per block leaves the multiprocessor one warpgroup to hide "    \
    "its dequantization; wgmma_ws is the kernel for that)"
#define R_WGMMA_BK                                                                                 \
    "wgmma: bk <= 128 (two stages of bk = 256 A fragments are what wgmma_ws's consumers hold, "    \
    "not the wgmma kernel's threads)"

/* The smallest tile of the method's row tiles (tiles[0..n), ascending) that covers m, or 0. */
static int64_t mg_cover(const int64_t *tiles, size_t n, int64_t m)
{
    for (size_t i = 0; i < n; i++)
        if (tiles[i] >= m)
            return tiles[i];
    return 0;
}

/* The row-tile rule: with a tile that covers m, that one alone (one row block: the weight is
 * streamed and dequantized once, with the fewest padded rows); above the largest tile, the
 * largest, and a smaller one where it pads fewer rows than every larger one with at most twice
 * the largest's row blocks. NULL: kept. */
static const char *mg_rule_rows(int64_t m, int64_t bm, const int64_t *tiles, size_t n)
{
    if (n == 0)
        return NULL;
    int64_t cover = mg_cover(tiles, n, m);
    if (cover)
        return bm < cover ? R_ROW_COVER_SMALL : bm > cover ? R_ROW_COVER_LARGE : NULL;
    int64_t top = tiles[n - 1], fewest = (m + top - 1) / top, rows = (m + bm - 1) / bm;
    if (rows > 2 * fewest)
        return R_ROW_BLOCKS;
    for (size_t i = 0; i < n; i++)
        if (tiles[i] > bm && (m + tiles[i] - 1) / tiles[i] * tiles[i] <= rows * bm)
            return R_ROW_BLOCKS;
    return NULL;
}

/* Whether a grid of this many blocks leaves multiprocessors idle: under one wave, or a last wave
 * under half full. */
static int mg_underfilled(int64_t grid)
{
    return grid < MG_SMS || (grid % MG_SMS != 0 && grid % MG_SMS < MG_SMS / 2);
}

/* The wgmma kernels' row-tile rule. Their row tile follows m (mg_wgmma_rows: m spread evenly over
 * ceil(m / bm) blocks), so bm chooses a number of row blocks and pads at most 7 rows per block:
 * the fewest row blocks (the largest bm) stream and dequantize the weight the fewest times; more,
 * up to twice as many, only where the MMAs rather than the weight stream set the time (m >= 128)
 * and the fewest leave multiprocessors idle. One bm per number of row blocks. NULL: kept. */
static const char *mg_rule_rows_wgmma(const mg_desc *d, const int64_t *tiles, size_t n)
{
    if (n == 0)
        return NULL;
    int64_t blocks = (d->m + d->bm - 1) / d->bm, fewest = (d->m + tiles[n - 1] - 1) / tiles[n - 1];
    for (size_t i = 0; i < n && tiles[i] < d->bm; i++)
        if ((d->m + tiles[i] - 1) / tiles[i] == blocks)
            return R_ROWS_SAME;
    if (blocks == fewest)
        return NULL;
    if (d->m < 128 || blocks > 2 * fewest || !mg_underfilled(fewest * (d->n / d->bn)))
        return R_ROWS_MORE;
    return NULL;
}

/* The split-K rules: stream-K where the grid ends in a partial wave; a split only where the tile
 * grid leaves multiprocessors idle (under one wave, or a last wave under half full), none where it
 * leaves most of them idle, no deeper than two waves need, and never so deep that a split has
 * almost no k left. */
static const char *mg_rule_split(const mg_desc *d)
{
    int64_t grid = (d->m + d->bm - 1) / d->bm * (d->n / d->bn);
    if (d->splitk == 0)
        return grid % MG_SMS == 0 ? R_STREAMK : NULL;
    if (d->splitk == 1)
        return grid < MG_SMS / 2 ? R_SPLIT_NONE : NULL;
    if (!mg_underfilled(grid))
        return R_SPLIT_FULL;
    if (d->splitk > 2 && grid * (d->splitk / 2) >= 2 * MG_SMS)
        return R_SPLIT_WAVES;
    if (d->k / (d->splitk * d->bk) < MG_MIN_K_TILES)
        return R_SPLIT_DEPTH;
    return NULL;
}

/* The rules of one configuration of a tiled method (d: the shape and the tile; tiles: the
 * method's row tiles among the sweep's bm values). NULL: kept. */
static const char *mg_rule(const mg_desc *d, const int64_t *tiles, size_t n_tiles)
{
    const char *r = mg_tile_shape(d);
    if (r)
        return r;
    switch (d->method) {
    case MG_GEMV:
        if (d->m > 16)
            return R_GEMV_M;
        if (d->wn * d->wk < 4 || d->wn * d->wk > 8)
            return R_GEMV_WARPS;
        if (d->bk < 128)
            return R_GEMV_BATCH;
        if (d->stages != 1 && d->stages != 3)
            return R_GEMV_STAGES;
        break;
    case MG_WGMMA:
        if (d->m <= 8)
            return R_WGMMA_M;
        if (d->wn < 2)
            return R_WGMMA_WN;
        if (d->bk > 128)
            return R_WGMMA_BK;
        break;
    case MG_WGMMA_WS:
        if (d->m <= 8)
            return R_WGMMA_M;
        break;
    default:
        break;
    }
    if (MG_IS_WGMMA(d->method))
        r = mg_rule_rows_wgmma(d, tiles, n_tiles);
    else
        r = mg_rule_rows(d->m, d->bm, tiles, n_tiles);
    if (r)
        return r;
    return mg_rule_split(d);
}

/* Whether bm is one of the method's row tiles (the structural part of mg_tile_shape). */
static int mg_row_tile(int method, int64_t bm)
{
    switch (method) {
    case MG_GEMV:
        return bm % 8 == 0 && bm <= 32;
    case MG_WGMMA:
    case MG_WGMMA_WS:
        return bm % 8 == 0 && bm >= 8 && bm <= 256;
    default:
        return bm % 16 == 0;
    }
}

void mg_prune(const tune_family *fam, const tune_point *shape, const tune_point *params, size_t n,
              const char **why)
{
    (void)fam;
    if (n == 0)
        return;
    mg_desc d;
    memset(&d, 0, sizeof d);
    d.method = mg_method_index(point_str(shape, "method", ""));
    if (!MG_TILED(d.method) && d.method != MG_DEQUANT)
        return;
    d.m = point_int(shape, "m", 0);
    d.n = point_int(shape, "n", 0);
    d.k = point_int(shape, "k", 0);
    if (d.m < 1 || d.n < 64 || d.k < 64)
        return; /* mg_describe says what is wrong with the shape */
    /* where each parameter sits in the points (all alike), -1 when absent */
    int at[P_N];
    for (int p = 0; p < P_N; p++) {
        at[p] = -1;
        for (size_t i = 0; i < params[0].n; i++)
            if (strcmp(params[0].names[i], mg_rule_params[p]) == 0)
                at[p] = (int)i;
    }
    int64_t v[P_N];
#define MG_VALUES(j)                                                                               \
    for (int p = 0; p < P_N; p++)                                                                  \
        v[p] = at[p] >= 0 && params[j].vals[at[p]].type == EXPR_INT ? params[j].vals[at[p]].i      \
                                                                    : mg_rule_dflt[p];
    if (d.m < 128 && d.method == MG_DEQUANT) {
        for (size_t j = 0; j < n; j++)
            why[j] = R_DEQUANT_M;
        return;
    }
    if (d.method == MG_DEQUANT) {
        size_t keep = 0;
        for (size_t j = 0; j < n; j++) {
            MG_VALUES(j);
            int same = 1;
            for (int p = 0; p < P_N; p++)
                same &= v[p] == mg_dequant_point[p];
            if (same) {
                keep = j;
                break;
            }
        }
        for (size_t j = 0; j < n; j++)
            why[j] = j == keep ? NULL : R_DEQUANT;
        return;
    }
    /* the method's row tiles among the sweep's bm values, ascending */
    int64_t tiles[64];
    size_t n_tiles = 0;
    for (size_t j = 0; j < n && at[P_BM] >= 0; j++) {
        int64_t bm = params[j].vals[at[P_BM]].i;
        size_t i = 0;
        while (i < n_tiles && tiles[i] < bm)
            i++;
        if ((i < n_tiles && tiles[i] == bm) || n_tiles == 64 || !mg_row_tile(d.method, bm))
            continue;
        memmove(tiles + i + 1, tiles + i, (n_tiles - i) * sizeof *tiles);
        tiles[i] = bm;
        n_tiles++;
    }
    for (size_t j = 0; j < n; j++) {
        MG_VALUES(j);
        d.bm = v[P_BM];
        d.bn = v[P_BN];
        d.bk = v[P_BK];
        d.wm = v[P_WM];
        d.wn = v[P_WN];
        d.wk = v[P_WK];
        d.stages = v[P_STAGES];
        d.splitk = v[P_SPLITK];
        d.sa = v[P_SA];
        why[j] = mg_rule(&d, tiles, n_tiles);
    }
#undef MG_VALUES
}
