/* Tests of the mixed_gemm family. CPU: the packed layout round-trips and puts every nibble where
 * the m16n8k16 B fragment wants it; configurations that cannot run are refused with a reason in
 * the right category; one instantiation of every template path compiles with NVRTC. GPU (skipped
 * with the reason when no GPU is usable): the GPU packing equals the CPU packing, the reference's
 * dequantization equals the CPU's, and every kernel variant class and baseline passes the family's
 * own check on awkward sizes (m = 1, 3, 17, 33, 257), both zero-point modes, fp16 and bf16. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "device/compile.h"
#include "families/mixed_gemm.h"
#include "model/family.h"
#include "model/space.h"
#include "device/gpu.h"
#include "util.h"

extern const tune_family mixed_gemm_family;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static uint8_t nibble(const uint8_t *q, int64_t n, int64_t i, int64_t j)
{
    return (q[(i * n + j) / 2] >> (4 * (j & 1))) & 0xf;
}

Test(mixed_gemm, packing_round_trips)
{
    const int64_t k = 96, n = 192;
    uint8_t *q = malloc(k * n / 2), *back = malloc(k * n / 2);
    uint32_t *p = malloc(k * n / 2);
    for (int64_t i = 0; i < k * n / 2; i++)
        q[i] = (uint8_t)rnd32();
    mixed_gemm_pack_cpu(q, k, n, p);
    mixed_gemm_unpack_cpu(p, k, n, back);
    cr_expect_eq(memcmp(q, back, k * n / 2), 0, "unpack(pack(q)) != q");
    /* a different q packs differently (the test can fail) */
    q[7] ^= 0x10;
    uint32_t *p2 = malloc(k * n / 2);
    mixed_gemm_pack_cpu(q, k, n, p2);
    cr_expect_neq(memcmp(p, p2, k * n / 2), 0);
    free(q);
    free(back);
    free(p);
    free(p2);
}

/* What a lane extracts for tile t of a unit, as the kernels do: register b0 = pair at bit offset
 * 8 (t & 1), b1 = pair at 8 (t & 1) + 4 of word t / 2, each pair = (bits 0..3, bits 16..19). The
 * PTX m16n8k16 B fragment: b0 holds B[2 tq][g], B[2 tq + 1][g]; b1 holds B[2 tq + 8][g],
 * B[2 tq + 9][g], with g = lane / 4, tq = lane % 4. */
Test(mixed_gemm, packed_layout_matches_the_mma_fragment)
{
    const int64_t k = 32, n = 128;
    uint8_t *q = malloc(k * n / 2);
    uint32_t *p = malloc(k * n / 2);
    for (int64_t i = 0; i < k * n / 2; i++)
        q[i] = (uint8_t)rnd32();
    mixed_gemm_pack_cpu(q, k, n, p);
    int checked = 0;
    for (int64_t kk = 0; kk < k / 16; kk++)
        for (int64_t u = 0; u < n / 64; u++)
            for (int lane = 0; lane < 32; lane++) {
                const uint32_t *w = p + ((kk * (n / 64) + u) * 32 + lane) * 4;
                int g = lane / 4, tq = lane % 4;
                for (int t = 0; t < 8; t++) {
                    uint32_t word = w[t / 2] >> (8 * (t & 1));
                    int64_t col = u * 64 + t * 8 + g, r0 = kk * 16 + 2 * tq;
                    cr_assert_eq(word & 0xf, nibble(q, n, r0, col));
                    cr_assert_eq((word >> 16) & 0xf, nibble(q, n, r0 + 1, col));
                    cr_assert_eq((word >> 4) & 0xf, nibble(q, n, r0 + 8, col));
                    cr_assert_eq((word >> 20) & 0xf, nibble(q, n, r0 + 9, col));
                    checked += 4;
                }
            }
    cr_expect_eq(checked, k * n);
    free(q);
    free(p);
}

Test(mixed_gemm, scale_permutation_gives_each_lane_its_columns)
{
    const int64_t groups = 2, n = 128;
    uint16_t s[2 * 128], ps[2 * 128];
    for (int i = 0; i < groups * n; i++)
        s[i] = (uint16_t)i;
    mixed_gemm_pack_scales_cpu(s, groups, n, ps);
    /* lane g's 8 contiguous values are the scales of columns 8t + g, t = 0..7 */
    for (int64_t row = 0; row < groups; row++)
        for (int64_t u = 0; u < n / 64; u++)
            for (int g = 0; g < 8; g++)
                for (int t = 0; t < 8; t++)
                    cr_assert_eq(ps[row * n + u * 64 + g * 8 + t], s[row * n + u * 64 + t * 8 + g]);
}

static void mg_point(tune_point *p, const char *method, int64_t m, int64_t n, int64_t k,
                     int64_t group, int zp, const char *dtype)
{
    memset(p, 0, sizeof *p);
    point_set_str(p, "op", "w4a16");
    point_set_str(p, "method", method);
    point_set_int(p, "m", m);
    point_set_int(p, "n", n);
    point_set_int(p, "k", k);
    point_set_int(p, "group", group);
    point_set_int(p, "zero_point", zp);
    point_set_str(p, "dtype", dtype);
    point_set_int(p, "dsize", 2);
}

static void mg_tile(tune_point *p, int64_t bm, int64_t bn, int64_t bk, int64_t wm, int64_t wn,
                    int64_t wk, int64_t stages, int64_t splitk)
{
    point_set_int(p, "bm", bm);
    point_set_int(p, "bn", bn);
    point_set_int(p, "bk", bk);
    point_set_int(p, "wm", wm);
    point_set_int(p, "wn", wn);
    point_set_int(p, "wk", wk);
    point_set_int(p, "stages", stages);
    point_set_int(p, "splitk", splitk);
}

static void expect_refused(const tune_point *p, const char *category)
{
    family_kernel_ref refs[FAMILY_MAX_KERNELS];
    char why[256] = "";
    cr_expect_lt(mixed_gemm_family.kernels(&mixed_gemm_family, p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0,
                 "expected '%s' to refuse", category);
    cr_expect(strncmp(why, category, strlen(category)) == 0, "want '%s...', got '%s'", category, why);
}

/* p is accepted, and its main kernel is `name` in `source` (NULL: not checked). */
static void expect_kernel(const tune_point *p, const char *source, const char *name)
{
    family_kernel_ref refs[FAMILY_MAX_KERNELS];
    char why[256] = "";
    cr_assert_gt(mixed_gemm_family.kernels(&mixed_gemm_family, p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0, "%s", why);
    if (source)
        cr_expect_str_eq(refs[0].source, source);
    cr_expect_str_eq(refs[0].name, name);
}

Test(mixed_gemm, refuses_what_cannot_run_with_a_reason)
{
    tune_point p;
    mg_point(&p, "fused", 17, 512, 1024, 128, 0, "float16");
    mg_tile(&p, 16, 128, 128, 1, 2, 1, 4, 1);
    expect_kernel(&p, NULL, "mg_fused<half_t, 16, 128, 128, 1, 2, 1, 4, 0, 0>");

    mg_point(&p, "fused", 17, 640, 1024, 128, 0, "float16"); /* 640 % 256 */
    mg_tile(&p, 16, 256, 128, 1, 2, 1, 4, 1);
    expect_refused(&p, "tile does not divide the problem");
    mg_point(&p, "fused", 17, 512, 1024, 128, 0, "float16");
    mg_tile(&p, 128, 256, 256, 2, 2, 1, 6, 1);
    expect_refused(&p, "too many registers"); /* 64 x 128 warp tile: 256 accumulators */
    mg_tile(&p, 64, 128, 256, 2, 2, 1, 8, 1);
    expect_refused(&p, "shared memory over the device limit");
    mg_point(&p, "fused", 17, 512, 1536, 128, 0, "float16");
    mg_tile(&p, 16, 128, 192, 1, 2, 1, 3, 1);
    expect_refused(&p, "group and bk do not nest"); /* 128-row groups in 192-row stages */
}

Test(mixed_gemm, refuses_bad_shapes_and_splits)
{
    tune_point p;
    mg_point(&p, "cublas", 4, 512, 1000, 128, 0, "float16");
    expect_refused(&p, "layout"); /* k % 64 */
    mg_point(&p, "cublas", 4, 512, 1088, 128, 0, "float16");
    expect_refused(&p, "group: k = 1088 is not a multiple of the group size 128");
    mg_point(&p, "cublas", 4, 500, 1024, 128, 0, "float16");
    expect_refused(&p, "layout: n = 500");
    mg_point(&p, "cublas", 4, 512, 1024, 48, 0, "float16");
    expect_refused(&p, "group: 48 is not a power of two");
    mg_point(&p, "fused", 4, 512, 1024, 128, 0, "float16");
    mg_tile(&p, 16, 128, 128, 1, 2, 1, 4, 16);
    expect_refused(&p, "split-K deeper than the k tiles");
    mg_point(&p, "fused", 4, 512, 1024, 128, 0, "float32");
    expect_refused(&p, "unsupported dtype");
}

/* The warp-streaming kernel's name and its own refusals; the stream method's kernel. */
Test(mixed_gemm, gemv_kernel_and_stream)
{
    tune_point p;
    mg_point(&p, "fused", 3, 512, 1024, 128, 0, "float16");
    mg_tile(&p, 16, 128, 128, 1, 2, 1, 4, 1);
    point_set_int(&p, "sa", 2);
    expect_refused(&p, "tile shape: sa = 2 is the gemv kernel's");
    /* two group rows per batch of 256 */
    mg_point(&p, "gemv", 3, 512, 1024, 128, 1, "float16");
    mg_tile(&p, 8, 128, 256, 1, 2, 4, 2, 2);
    point_set_int(&p, "sa", 2);
    expect_kernel(&p, "mixed_gemm_gemv.cu", "mg_gemv<half_t, 1, 2, 4, 16, 2, 2, 1, 2>");
    mg_tile(&p, 40, 128, 256, 1, 2, 4, 2, 2);
    expect_refused(&p, "tile shape: the gemv kernel takes bm = 8, 16, 24, 32");
    mg_tile(&p, 8, 128, 512, 1, 2, 4, 2, 1);
    expect_refused(&p, "tile shape: the gemv kernel takes bk = 32, 64, ..., 256");
    mg_tile(&p, 8, 128, 256, 1, 2, 4, 9, 2);
    expect_refused(&p, "tile shape: the gemv kernel takes stages = 1 to 8");
    mg_tile(&p, 32, 128, 256, 1, 2, 4, 2, 2); /* 4 X tiles and two batches of 16 units */
    point_set_int(&p, "sa", 2);
    expect_refused(&p, "too many registers");
    mg_point(&p, "gemv", 4, 512, 8192, 128, 1, "float16"); /* 8 warps' rings of 8 x 8 KiB */
    mg_tile(&p, 8, 128, 256, 1, 2, 4, 8, 1);
    point_set_int(&p, "sa", 2);
    expect_refused(&p, "shared memory over the device limit");
    mg_point(&p, "stream", 3, 512, 1024, 128, 0, "float16");
    expect_kernel(&p, NULL, "mg_stream<8>");
}

/* The group/bk rule in both directions: groups of 32 inside stages of 128 nest; groups of 128
 * across stages of 64 nest too (one scale row per stage); per-column groups always nest. */
Test(mixed_gemm, group_and_stage_depth)
{
    tune_point p;
    family_kernel_ref refs[FAMILY_MAX_KERNELS];
    char why[256];
    const int64_t groups[] = {32, 64, 128, 0};
    for (size_t i = 0; i < 4; i++) {
        mg_point(&p, "fused", 3, 256, 1024, groups[i], 1, "bfloat16");
        mg_tile(&p, 16, 128, 64, 1, 2, 1, 3, 1);
        cr_expect_gt(mixed_gemm_family.kernels(&mixed_gemm_family, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0,
                     "group %lld: %s", (long long)groups[i], why);
    }
}

/* The warp-specialized kernel's weight ring fills the shared memory the X ring leaves, less room
 * for the kernels' static shared memory: bm 8, bn 512, bk 64, 5 X stages with zero points would
 * reach 227 KiB exactly with 11 weight stages (and not launch: the split-K finish's flag is
 * static), so it gets 10. */
Test(mixed_gemm, ws_ring_leaves_room_for_static_shared_memory)
{
    tune_point p;
    mg_point(&p, "wgmma_ws", 8, 4096, 4096, 128, 1, "float16");
    mg_tile(&p, 8, 512, 64, 1, 2, 1, 5, 1);
    expect_kernel(&p, "mixed_gemm_wgmma.cu", "mg_wgmma_ws<half_t, 8, 2, 4, 4, 5, 10, 1, 1, 0>");
}

/* The wgmma kernels' row tile follows m: bm is the most rows per block, and m is spread evenly
 * over ceil(m / bm) row blocks, rounded up to 8 (the MMA's N step). Odd m gets tiles that are not
 * powers of two, the shipped powers of two keep theirs, a bm that is no multiple of 8 is refused. */
Test(mixed_gemm, wgmma_row_tile_follows_m)
{
    static const struct {
        int64_t m, bm, rows;
    } cases[] = {{300, 256, 152},  {300, 128, 104},  {600, 256, 200}, {2000, 256, 256},
                 {3000, 256, 256}, {2050, 256, 232}, {256, 256, 256}, {256, 128, 128},
                 {33, 64, 40},     {37, 64, 40},     {130, 256, 136}, {16, 16, 16},
                 {9, 152, 16},     {1, 8, 8}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tune_point p;
        char want[128];
        mg_point(&p, "wgmma_ws", cases[i].m, 4096, 4096, 128, 0, "float16");
        mg_tile(&p, cases[i].bm, 128, 128, 1, 2, 1, 3, 1);
        snprintf(want, sizeof want, "mg_wgmma_ws<half_t, %lld, 2, 1, 8, 3, ",
                 (long long)cases[i].rows);
        family_kernel_ref refs[FAMILY_MAX_KERNELS];
        char why[256] = "";
        cr_assert_gt(mixed_gemm_family.kernels(&mixed_gemm_family, &p, refs, FAMILY_MAX_KERNELS,
                                               why, sizeof why),
                     0, "%s", why);
        cr_expect(strncmp(refs[0].name, want, strlen(want)) == 0,
                  "m = %lld, bm = %lld: %s, want %s...", (long long)cases[i].m,
                  (long long)cases[i].bm, refs[0].name, want);
    }
    tune_point p;
    mg_point(&p, "wgmma_ws", 300, 4096, 4096, 128, 0, "float16");
    mg_tile(&p, 100, 128, 128, 1, 2, 1, 3, 1);
    expect_refused(&p, "tile shape");
}

/* Stream-K (splitk 0) is the warp-specialized wgmma kernel's (SK = 1 in its name), with at most 64
 * row blocks (a group of the persistent grid holds a block per row block); other methods refuse
 * it. */
Test(mixed_gemm, stream_k_is_wgmma_ws_only)
{
    tune_point p;
    mg_point(&p, "wgmma_ws", 600, 4096, 4096, 128, 0, "float16");
    mg_tile(&p, 256, 128, 128, 1, 2, 1, 3, 0);
    expect_kernel(&p, "mixed_gemm_wgmma.cu", "mg_wgmma_ws<half_t, 200, 2, 1, 8, 3, 8, 0, 1, 1>");
    mg_point(&p, "wgmma_ws", 8200, 4096, 4096, 128, 0, "float16");
    mg_tile(&p, 128, 128, 128, 1, 2, 1, 3, 0);
    expect_refused(&p, "tile shape: stream-K takes at most 64 row blocks");
    mg_point(&p, "wgmma", 600, 4096, 4096, 128, 0, "float16");
    mg_tile(&p, 128, 256, 128, 1, 2, 1, 3, 0);
    expect_refused(&p, "tile shape: splitk = 0 (stream-K)");
    mg_point(&p, "fused", 600, 4096, 4096, 128, 0, "float16");
    mg_tile(&p, 64, 128, 64, 2, 2, 1, 3, 0);
    expect_refused(&p, "tile shape: splitk = 0 (stream-K)");
}

/* ---- the family's tile rules (mixed_gemm_rules.c; docs/mixed_gemm.md, "Which tiles are tried") ---- */

/* sweeps/w4a16.json's tile axes and methods over other shapes, the family's rules on (or off). */
static sweep *rules_sweep(const char *problem, int family_rules)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"name\": \"rules\", \"family\": \"mixed_gemm\", \"op\": \"w4a16\", \"problem\": %s,"
             " \"params\": {\"bm\": [8, 16, 32, 64, 128, 256], \"bn\": [128, 256, 512],"
             " \"bk\": [64, 128, 256], \"wm\": [1, 2], \"wn\": [1, 2, 4], \"wk\": [1, 2],"
             " \"stages\": [1, 3, 4], \"splitk\": [1, 2, 4, 8], \"sa\": [0, 2]}, \"methods\": [\"gemv\", \"wgmma\", \"wgmma_ws\", \"dequant\","
             " \"stream\"], \"family_rules\": %s}",
             problem, family_rules ? "true" : "false");
    tune_error err = {0};
    char buf[4096];
    sweep *sw = sweep_parse(text, "rules.json", &err);
    cr_assert_not_null(sw, "%s", tune_error_text(&err, buf, sizeof buf));
    return sw;
}

static space *rules_space(const sweep *sw)
{
    tune_error err = {0};
    char buf[4096];
    space *sp = space_build(sw, &err);
    cr_assert_not_null(sp, "%s", tune_error_text(&err, buf, sizeof buf));
    return sp;
}

/* m = 33 and 300 (odd, not a shipped tile), 2000, and a (k, n) of a real model layer (5120 x
 * 13824) that no sweep shipped: each method that should run there has candidates, and one of
 * them runs (kernels() accepts it); gemv only for m <= 16, the wgmma kernels above m = 8,
 * dequant (one point) from m = 128; no row tile above twice m rounded up to 8, the one tile that
 * covers m where one does (below m = 128), and above the largest tile, 256 (and 128 where the
 * grid of 256-row tiles leaves the last wave under half full). */
Test(mixed_gemm_rules, odd_m_and_a_new_shape_get_candidates)
{
    sweep *sw = rules_sweep("{\"m\": [1, 12, 33, 300, 2000], \"k\": 5120, \"n\": 13824}", 1);
    space *sp = rules_space(sw);
    const int64_t ms[] = {1, 12, 33, 300, 2000};
    const char *methods[] = {"gemv", "wgmma", "wgmma_ws", "dequant"};
    size_t count[5][4] = {{0}}, runs[5][4] = {{0}}, stream[5] = {0};
    int64_t bms[5][4] = {{0}}; /* bit i: bm = 8 << i seen */
    for (size_t c = 0; c < space_n_configs(sp); c++) {
        tune_point p;
        space_config_point(sp, c, &p);
        int64_t m = point_int(&p, "m", 0), bm = point_int(&p, "bm", 0);
        size_t s = 0, meth = 0;
        while (s < 5 && ms[s] != m)
            s++;
        cr_assert_lt(s, 5);
        const char *method = point_str(&p, "method", "");
        if (strcmp(method, "stream") == 0) {
            stream[s]++;
            continue;
        }
        while (meth < 4 && strcmp(methods[meth], method) != 0)
            meth++;
        cr_assert_lt(meth, 4, "%s", method);
        count[s][meth]++;
        if (meth < 3) {
            int64_t bound = 2 * ((m + 7) / 8 * 8);
            cr_expect(m > 256 || bm <= bound, "%s m = %lld: bm = %lld > %lld", method,
                      (long long)m, (long long)bm, (long long)bound);
            for (int i = 0; i < 6; i++)
                if (bm == (8 << i))
                    bms[s][meth] |= 1 << i;
        }
        family_kernel_ref refs[FAMILY_MAX_KERNELS];
        char why[256];
        memset(refs, 0, sizeof refs);
        if (mixed_gemm_family.kernels(&mixed_gemm_family, &p, refs, FAMILY_MAX_KERNELS, why,
                                      sizeof why) > 0)
            runs[s][meth]++;
    }
    for (size_t s = 0; s < 5; s++) {
        int64_t m = ms[s];
        int want[4] = {m <= 16, m > 8, m > 8, m >= 128};
        cr_expect_eq(stream[s], 1, "m = %lld: the stream floor", (long long)m);
        for (size_t meth = 0; meth < 4; meth++) {
            cr_expect_eq(count[s][meth] > 0, want[meth], "m = %lld: %zu %s configurations",
                         (long long)m, count[s][meth], methods[meth]);
            cr_expect_eq(runs[s][meth] > 0, want[meth], "m = %lld: %zu runnable %s",
                         (long long)m, runs[s][meth], methods[meth]);
        }
        cr_expect_eq(count[s][3], (size_t)(m >= 128), "dequant: one point per shape");
    }
    /* the row tiles: bit i is bm = 8 << i */
    cr_expect_eq(bms[0][0], 1 << 0, "m = 1, gemv: bm 8 alone");
    cr_expect_eq(bms[1][0], 1 << 1, "m = 12, gemv: bm 16 alone");
    cr_expect_eq(bms[1][1], 1 << 1, "m = 12, wgmma: bm 16 alone");
    cr_expect_eq(bms[2][1], 1 << 3, "m = 33, wgmma: bm 64 alone");
    cr_expect_eq(bms[2][2], 1 << 3, "m = 33, wgmma_ws: bm 64 alone");
    cr_expect_eq(bms[3][1], (1 << 4) | (1 << 5), "m = 300, wgmma: bm 128 and 256");
    cr_expect_eq(bms[3][2], (1 << 4) | (1 << 5), "m = 300, wgmma_ws: bm 128 and 256");
    /* 8 row blocks of 250 rows; 16 of 125 only with bn = 256, where 8 x 54 tiles leave the last
     * wave of 132 blocks a quarter full */
    cr_expect_eq(bms[4][2], (1 << 4) | (1 << 5), "m = 2000, wgmma_ws: bm 128 and 256");
    space_free(sp);
    sweep_free(sw);
}

/* Every configuration the rules leave out is counted under a reason (a category, a colon, why),
 * and "family_rules": false gives every point back to skip_if alone. */
Test(mixed_gemm_rules, every_pruned_configuration_has_a_reason)
{
    const char *problem = "{\"m\": [1, 33, 300], \"k\": 4096, \"n\": [4096, 11008]}";
    sweep *sw = rules_sweep(problem, 1);
    space *sp = rules_space(sw);
    size_t sum = 0;
    for (size_t r = 0; r < space_n_family_rules(sp); r++) {
        size_t count = 0;
        const char *rule = space_family_rule(sp, r, &count);
        cr_assert_not_null(rule);
        cr_expect_gt(count, 0);
        const char *colon = strchr(rule, ':');
        cr_expect(colon && colon > rule && strlen(colon) > 10, "a reason: '%s'", rule);
        sum += count;
    }
    cr_expect_gt(space_n_pruned_family(sp), 0);
    cr_expect_eq(sum, space_n_pruned_family(sp));
    cr_expect_eq(space_n_pruned(sp), space_n_pruned_family(sp), "no skip_if: the rules alone");
    size_t n_points = space_n_params(sp), shapes = space_n_shapes(sp);
    cr_expect_eq(space_n_configs(sp) + space_n_pruned(sp), shapes * (4 * n_points + 1));

    /* the hook itself: why[i] is NULL exactly for the points the space keeps */
    const char **why = calloc(n_points, sizeof *why);
    tune_point shape = *space_shape(sp, 2); /* m = 33, n = 4096 */
    point_set_str(&shape, "method", "wgmma_ws");
    mixed_gemm_family.prune(&mixed_gemm_family, &shape, space_param(sp, 0), n_points, why);
    size_t kept = 0, in_space = 0;
    for (size_t i = 0; i < n_points; i++)
        kept += why[i] == NULL;
    for (size_t c = 0; c < space_n_configs(sp); c++) {
        const space_config *cf = space_config_at(sp, c);
        in_space += cf->shape == 2 && strcmp(sw->methods[cf->method], "wgmma_ws") == 0;
    }
    cr_expect_gt(kept, 0);
    cr_expect_eq(kept, in_space);
    free(why);
    space_free(sp);
    sweep_free(sw);

    sw = rules_sweep(problem, 0);
    sp = rules_space(sw);
    cr_expect_eq(space_n_pruned(sp), 0);
    cr_expect_eq(space_n_family_rules(sp), 0);
    cr_expect_eq(space_n_configs(sp), shapes * (4 * n_points + 1));
    space_free(sp);
    sweep_free(sw);
}

/* The rules do not throw winners away: every (shape, method) winner of the H200 run of 2026-11-26,
 * made before the family's rules (results/w4a16/20261126T180506Z, since replaced and in the git
 * history; tests/data/mixed_gemm/w4a16_winners.tsv, its extract), is a configuration of
 * sweeps/w4a16.json. */
Test(mixed_gemm_rules, reference_winners_stay_in_the_space)
{
    sweep *sw = test_load_sweep("sweeps/w4a16.json");
    space *sp = rules_space(sw);
    size_t n = space_n_configs(sp);
    char **ids = calloc(n, sizeof *ids);
    for (size_t c = 0; c < n; c++) {
        char id[1024];
        ids[c] = strdup(space_config_identity(sw, sp, c, id, sizeof id));
    }
    qsort(ids, n, sizeof *ids, test_cmp_str);
    FILE *f = fopen("tests/data/mixed_gemm/w4a16_winners.tsv", "r");
    cr_assert_not_null(f);
    static const char *const names[] = {"bm", "bn",     "bk",     "wm", "wn",
                                        "wk", "stages", "splitk", "sa"};
    char line[512];
    size_t winners = 0, missing = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        long long m, nn, k, v[9];
        char method[32];
        int got = sscanf(line, "%lld %lld %lld %31s %lld %lld %lld %lld %lld %lld %lld %lld %lld",
                         &m, &nn, &k, method, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
                         &v[7], &v[8]);
        cr_assert_eq(got, 13, "bad line: %s", line);
        tune_point p = {0};
        point_set_int(&p, "m", m);
        point_set_int(&p, "n", nn);
        point_set_int(&p, "k", k);
        point_set_int(&p, "group", 128);
        point_set_int(&p, "zero_point", 0);
        point_set_str(&p, "dtype", "float16");
        for (int i = 0; i < 9; i++)
            point_set_int(&p, names[i], v[i]);
        char id[1024];
        const char *key = point_identity(method, &p, id, sizeof id);
        winners++;
        if (!bsearch(&key, ids, n, sizeof *ids, test_cmp_str)) {
            missing++;
            cr_expect_fail("a winner is not in the space: %s", key);
        }
    }
    fclose(f);
    cr_expect_eq(winners, 132, "the extract has %zu winners", winners);
    cr_expect_eq(missing, 0);
    for (size_t c = 0; c < n; c++)
        free(ids[c]);
    free(ids);
    space_free(sp);
    sweep_free(sw);
}

/* ---- NVRTC: one instantiation of every template path (CPU, no GPU needed) ---- */

static const char *kernel_dir(void)
{
    static char dir[4096];
    cr_assert_not_null(compile_find_kernels_dir(dir, sizeof dir));
    return dir;
}

/* The configurations the compile and GPU tests share: every variant class. */
typedef struct {
    const char *method;
    int64_t bm, bn, bk, wm, wn, wk, stages, splitk, sa;
} mg_variant;

static const mg_variant variants[] = {
    {"fused", 16, 128, 128, 1, 2, 1, 3, 1, 0}, /* staged, small m */
    {"fused", 16, 128, 128, 1, 1, 4, 2, 3, 0}, /* warps along k, split-K */
    {"fused", 64, 128, 64, 2, 2, 1, 4, 1, 0},  /* staged, larger tiles */
    {"fused", 64, 256, 64, 2, 4, 2, 3, 2, 0},  /* 8 warps, k warps, split-K */
    {"fused", 16, 128, 128, 1, 2, 1, 3, 1, 1}, /* scale on the accumulator */
    {"fused", 32, 128, 64, 2, 1, 2, 3, 3, 1},  /* ... k warps, split-K, 2 n units */
    {"gemv", 8, 64, 256, 1, 1, 4, 1, 1, 2},    /* gemv: 2 groups per batch */
    {"gemv", 16, 128, 128, 1, 2, 4, 2, 3, 1},  /* 2 X tiles, 2 batches, split-K */
    {"gemv", 24, 64, 64, 1, 1, 2, 2, 2, 2},    /* 3 X tiles, groups across batches */
    {"gemv", 8, 128, 256, 1, 2, 2, 4, 2, 2},   /* a ring of 4, 2 groups per slot */
    {"gemv", 16, 64, 64, 1, 1, 4, 3, 1, 1},    /* a ring of 3, groups across slots */
    {"gemv", 8, 128, 128, 1, 2, 2, 1, 4, 0},   /* every weight dequantized */
    {"gemv", 24, 64, 256, 1, 1, 4, 4, 1, 0},   /* ... from a ring, 3 X tiles */
    {"wgmma", 8, 64, 64, 1, 1, 1, 2, 1, 0},     /* wgmma: N = 8, one warpgroup */
    {"wgmma", 32, 128, 128, 1, 2, 1, 3, 2, 0},  /* 2 warpgroups, split-K (a cluster of 2) */
    {"wgmma", 128, 256, 64, 1, 2, 1, 4, 1, 0},  /* N = 128, 2 tiles per warpgroup */
    {"wgmma", 256, 128, 64, 1, 2, 1, 2, 3, 0},  /* N = 256, 2 warpgroups, 3 splits */
    {"wgmma_ws", 16, 128, 64, 1, 1, 1, 2, 1, 0},  /* producer + 1 consumer, 2 tiles */
    {"wgmma_ws", 64, 256, 128, 1, 2, 1, 4, 2, 0}, /* 2 consumers, a cluster of 2 */
    {"wgmma_ws", 128, 256, 64, 1, 2, 1, 3, 3, 0}, /* N = 128, 2 tiles, 3 splits */
    {"wgmma_ws", 32, 256, 64, 1, 1, 1, 4, 1, 0},  /* 4 tiles per consumer */
    {"stream", 16, 128, 128, 1, 2, 1, 3, 1, 0},
    {"dequant", 16, 128, 128, 1, 2, 1, 3, 1, 0},
    {"cublas", 16, 128, 128, 1, 2, 1, 3, 1, 0},
    {"fp8", 16, 128, 128, 1, 2, 1, 3, 1, 0},
    {"pack", 16, 128, 128, 1, 2, 1, 3, 1, 0},
};

Test(mixed_gemm_compile, every_template_path_compiles, .timeout = 1200)
{
#if defined(__SANITIZE_ADDRESS__)
    /* This test checks the kernel sources, which NVRTC compiles in this process: under ASan every
     * NVRTC allocation is intercepted and the test takes 6x as long (347 s against 60 s) while
     * checking no more host code than test_compile does. The normal build runs it. */
    cr_skip_test("skipped under the sanitizers: it checks the kernel sources with NVRTC, which the "
                 "normal build's run of this test covers (test_compile covers the host path here)");
#endif
    compile_job jobs[256];
    size_t n_jobs = 0;
    const char *dtypes[] = {"float16", "bfloat16"};
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++)
        for (int d = 0; d < 2; d++)
            for (int zp = 0; zp < 2; zp++) {
                tune_point p;
                family_kernel_ref refs[FAMILY_MAX_KERNELS];
                char why[256];
                const mg_variant *x = &variants[v];
                mg_point(&p, x->method, 33, 256, 1024, 128, zp, dtypes[d]);
                mg_tile(&p, x->bm, x->bn, x->bk, x->wm, x->wn, x->wk, x->stages, x->splitk);
                point_set_int(&p, "sa", x->sa);
                int nr = mixed_gemm_family.kernels(&mixed_gemm_family, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why);
                cr_assert_gt(nr, 0, "variant %zu: %s", v, why);
                for (int r = 0; r < nr; r++) {
                    int seen = 0;
                    for (size_t j = 0; j < n_jobs; j++)
                        seen |= strcmp(jobs[j].source, refs[r].source) == 0 &&
                                strcmp(jobs[j].name, refs[r].name) == 0;
                    if (seen)
                        continue;
                    cr_assert_lt(n_jobs, 256);
                    memset(&jobs[n_jobs], 0, sizeof jobs[n_jobs]);
                    snprintf(jobs[n_jobs].source, sizeof jobs[n_jobs].source, "%s", refs[r].source);
                    snprintf(jobs[n_jobs].name, sizeof jobs[n_jobs].name, "%s", refs[r].name);
                    jobs[n_jobs].arch_specific = refs[r].arch != 0;
                    n_jobs++;
                }
            }
    compile_options opt = {.kernels_dir = kernel_dir(), .cache_dir = NULL, .arch = 90};
    tune_error err = {0};
    cr_assert_eq(compile_run(jobs, n_jobs, &opt, &err), TUNE_OK, "%s", err.message);
    for (size_t j = 0; j < n_jobs; j++) {
        cr_expect_eq(jobs[j].status, TUNE_OK, "%s failed:\n%s", jobs[j].name,
                     jobs[j].log ? jobs[j].log : "");
        compile_job_clear(&jobs[j]);
    }
    cr_expect_gt(n_jobs, 30, "%zu kernels", n_jobs);
}

/* ---- GPU ---- */


Test(mixed_gemm_gpu, gpu_packing_equals_cpu_packing)
{
    require_gpu();
    long long k = 256, n = 320;
    size_t bytes = (size_t)(k * n / 2);
    uint8_t *q = malloc(bytes);
    uint32_t *want = malloc(bytes), *got = malloc(bytes);
    for (size_t i = 0; i < bytes; i++)
        q[i] = (uint8_t)rnd32();
    mixed_gemm_pack_cpu(q, k, n, want);
    void *dq = NULL, *dp = NULL;
    tune_error err = {0};
    cr_assert_eq(gpu_malloc(&dq, bytes, &err), TUNE_OK);
    cr_assert_eq(gpu_malloc(&dp, bytes, &err), TUNE_OK);
    cr_assert_eq(cudaMemcpy(dq, q, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    void *args[] = {&dq, &dp, &k, &n};
    cr_assert_eq(gpu_launch(test_get_kernel(NULL, "mixed_gemm_util.cu", "mg_pack_w"), 64, 256, 0, NULL,
                            args, &err),
                 TUNE_OK, "%s", err.message);
    cr_assert_eq(cudaMemcpy(got, dp, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    cr_expect_eq(memcmp(want, got, bytes), 0, "GPU packing differs from the CPU packing");
    gpu_free(dq);
    gpu_free(dp);
    free(q);
    free(want);
    free(got);
}

static void run_family_checks(const char *dtype, int zp)
{
    const tune_family *fam = &mixed_gemm_family;
    test_family_env t;
    test_family_env_init(&t);
    const family_env env = t.env;
    const int64_t ms[] = {1, 3, 17, 33, 257};
    const int64_t groups[] = {32, 128, 0};
    for (size_t mi = 0; mi < 5; mi++)
        for (size_t gi = 0; gi < 3; gi++) {
            tune_point shape;
            mg_point(&shape, "cublas", ms[mi], 512, 1024, groups[gi], zp, dtype);
            tune_error err = {0};
            void *state = fam->shape_init(&env, &shape, &err);
            cr_assert_not_null(state, "%s", err.message);
            for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
                const mg_variant *x = &variants[v];
                tune_point p;
                mg_point(&p, x->method, ms[mi], 512, 1024, groups[gi], zp, dtype);
                mg_tile(&p, x->bm, x->bn, x->bk, x->wm, x->wn, x->wk, x->stages, x->splitk);
                point_set_int(&p, "sa", x->sa);
                double e, tol;
                cr_assert_eq(fam->prepare(state, &p, &err), TUNE_OK, "%s", err.message);
                cr_assert_eq(fam->check(state, &e, &tol, &err), TUNE_OK, "%s", err.message);
                cr_expect_leq(e, tol, "%s variant %zu m=%lld group=%lld zp=%d %s: error %g > %g",
                              x->method, v, (long long)ms[mi], (long long)groups[gi], zp, dtype, e,
                              tol);
            }
            fam->shape_free(state);
        }
    test_family_env_free(&t);
}

Test(mixed_gemm_gpu, fp16_symmetric, .timeout = 900) { require_gpu(); run_family_checks("float16", 0); }
Test(mixed_gemm_gpu, fp16_zero_points, .timeout = 900) { require_gpu(); run_family_checks("float16", 1); }
Test(mixed_gemm_gpu, bf16_symmetric, .timeout = 900) { require_gpu(); run_family_checks("bfloat16", 0); }
Test(mixed_gemm_gpu, bf16_zero_points, .timeout = 900) { require_gpu(); run_family_checks("bfloat16", 1); }

/* wgmma_ws without splits and with more tiles than multiprocessors runs on a persistent grid: 272
 * tiles (17 row blocks of 16, the last one row, x 16 column blocks) on one block per
 * multiprocessor, each taking 2 or 3 tiles whose rings run on across them; then the same shape with
 * two splits (one block per tile, a cluster of 2), whose result must agree. */
Test(mixed_gemm_gpu, wgmma_ws_persistent_grid, .timeout = 300)
{
    require_gpu();
    const tune_family *fam = &mixed_gemm_family;
    test_family_env t;
    test_family_env_init(&t);
    const family_env env = t.env;
    const char *dtypes[] = {"float16", "bfloat16"};
    for (int d = 0; d < 2; d++)
        for (int zp = 0; zp < 2; zp++)
            for (int64_t splitk = 1; splitk <= 2; splitk++) {
                tune_point shape, p;
                tune_error err = {0};
                mg_point(&shape, "cublas", 257, 2048, 1024, 32, zp, dtypes[d]);
                void *state = fam->shape_init(&env, &shape, &err);
                cr_assert_not_null(state, "%s", err.message);
                mg_point(&p, "wgmma_ws", 257, 2048, 1024, 32, zp, dtypes[d]);
                mg_tile(&p, 16, 128, 128, 1, 2, 1, 3, splitk);
                double e, tol;
                cr_assert_eq(fam->prepare(state, &p, &err), TUNE_OK, "%s", err.message);
                cr_assert_eq(fam->check(state, &e, &tol, &err), TUNE_OK, "%s", err.message);
                cr_expect_leq(e, tol, "%s zp=%d splitk=%lld: error %g > %g", dtypes[d], zp,
                              (long long)splitk, e, tol);
                fam->shape_free(state);
            }
    test_family_env_free(&t);
}
