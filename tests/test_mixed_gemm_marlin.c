/* Tests of the mixed_gemm family's Marlin baseline (harness/families/mixed_gemm_marlin.c). CPU:
 * the weight and scale packing equals Marlin's format computed step by step from its definition
 * (IST-DASLab/marlin, marlin/__init__.py: _get_perms and Layer.pack), and each word holds the
 * mma.m16n8k16 B fragments Marlin's dequantization expects; shapes Marlin cannot run, a run
 * without TUNE_MARLIN_LIB and a TUNE_MARLIN_LIB that is missing, not a regular file, not a
 * library or a library without the entry point each give skipped rows with their reason (a
 * compile-only run with rows: no GPU). GPU (skipped with the reason without a GPU or without
 * TUNE_MARLIN_LIB, a library built by scripts/peers/marlin.sh): the method passes the family's
 * check against the fp32 reference on odd m, grouped and per-column scales. */
#define _GNU_SOURCE /* dladdr */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "families/mixed_gemm.h"
#include "model/family.h"
#include "run/run.h"
#include "store/results.h"
#include "util.h"

extern const tune_family mixed_gemm_family;

static uint64_t rng = 0x2545f4914f6cdd1dull;
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

/* _get_perms' weight permutation, built as the Python builds it: per lane i, the values of
 * its two B fragments' rows in each of four tiles, then every 8 reordered by `interleave`. */
static void marlin_perm(int perm[1024])
{
    int pre[1024], n = 0;
    for (int i = 0; i < 32; i++) {
        int perm1[8], m = 0, col = i / 4;
        for (int block = 0; block < 2; block++) {
            const int rows[4] = {2 * (i % 4), 2 * (i % 4) + 1, 2 * (i % 4 + 4),
                                 2 * (i % 4 + 4) + 1};
            for (int r = 0; r < 4; r++)
                perm1[m++] = 16 * rows[r] + col + 8 * block;
        }
        for (int j = 0; j < 4; j++)
            for (int t = 0; t < 8; t++)
                pre[n++] = perm1[t] + 256 * j;
    }
    const int interleave[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    for (int b = 0; b < 128; b++)
        for (int u = 0; u < 8; u++)
            perm[8 * b + u] = pre[8 * b + interleave[u]];
}

/* Layer.pack on raw q (k x n), step by step: 16 x 16 tiles laid out as rows of k / 16, each
 * 1024 values of a row permuted, 8 values per word (the first in the low nibble). */
static void marlin_pack_by_definition(const uint8_t *q, int64_t k, int64_t n, uint32_t *out)
{
    int perm[1024];
    marlin_perm(perm);
    int64_t len = 16 * n;
    uint8_t *res = malloc((size_t)len), *res2 = malloc((size_t)len);
    for (int64_t kt = 0; kt < k / 16; kt++) {
        /* w.reshape((k/16, 16, n/16, 16)).permute((0, 2, 1, 3)).reshape((k/16, 16 n)) */
        for (int64_t nt = 0; nt < n / 16; nt++)
            for (int r = 0; r < 16; r++)
                for (int c = 0; c < 16; c++)
                    res[nt * 256 + r * 16 + c] = nibble(q, n, kt * 16 + r, nt * 16 + c);
        /* res.reshape((-1, 1024))[:, perm] */
        for (int64_t e = 0; e < len; e++)
            res2[e] = res[e - e % 1024 + perm[e % 1024]];
        /* q |= res[:, i::8] << 4 i */
        for (int64_t w = 0; w < len / 8; w++) {
            uint32_t v = 0;
            for (int i = 0; i < 8; i++)
                v |= (uint32_t)res2[8 * w + i] << (4 * i);
            out[kt * (len / 8) + w] = v;
        }
    }
    free(res);
    free(res2);
}

Test(marlin, permutation_is_a_permutation)
{
    int perm[1024], seen[1024] = {0};
    marlin_perm(perm);
    for (int i = 0; i < 1024; i++) {
        cr_assert(perm[i] >= 0 && perm[i] < 1024);
        seen[perm[i]]++;
    }
    for (int i = 0; i < 1024; i++)
        cr_assert_eq(seen[i], 1, "value %d appears %d times", i, seen[i]);
}

/* k = 128, n = 256 (one k16 row of 16 tiles per 16 rows; every nibble), then 256 x 512. */
Test(marlin, weight_packing_follows_layer_pack)
{
    const int64_t shapes[2][2] = {{128, 256}, {256, 512}};
    for (int sh = 0; sh < 2; sh++) {
        int64_t k = shapes[sh][0], n = shapes[sh][1];
        size_t bytes = (size_t)(k * n / 2);
        uint8_t *q = malloc(bytes);
        uint32_t *got = malloc(bytes), *want = malloc(bytes);
        for (size_t i = 0; i < bytes; i++)
            q[i] = (uint8_t)rnd32();
        mixed_gemm_marlin_pack_cpu(q, k, n, got);
        marlin_pack_by_definition(q, k, n, want);
        size_t bad = 0, first = SIZE_MAX;
        for (size_t w = 0; w < bytes / 4; w++)
            for (int i = 0; i < 8; i++)
                if (((got[w] >> (4 * i)) & 0xf) != ((want[w] >> (4 * i)) & 0xf)) {
                    bad++;
                    first = first == SIZE_MAX ? w : first;
                }
        cr_expect_eq(bad, 0, "k = %lld, n = %lld: %zu of %zu nibbles differ (first in word %zu)",
                     (long long)k, (long long)n, bad, bytes * 2, first);
        free(q);
        free(got);
        free(want);
    }
}

/* What Marlin's kernel takes from word 4 L + t of a 64-column chunk of a k16 row (lane L, g =
 * L / 4, tq = L % 4, tile t): its dequantization turns the nibble pairs (0, 4), (1, 5) into
 * the B fragment registers b0, b1 of columns g of the tile (b0: rows 2 tq, 2 tq + 1; b1: rows
 * 2 tq + 8, 2 tq + 9; PTX ISA, mma.m16n8k16), then (2, 6), (3, 7) for columns 8 + g. */
Test(marlin, words_hold_the_mma_fragments)
{
    const int64_t k = 64, n = 256;
    uint8_t *q = malloc(k * n / 2);
    uint32_t *p = malloc(k * n / 2);
    for (int64_t i = 0; i < k * n / 2; i++)
        q[i] = (uint8_t)rnd32();
    mixed_gemm_marlin_pack_cpu(q, k, n, p);
    int64_t checked = 0;
    for (int64_t kt = 0; kt < k / 16; kt++)
        for (int64_t chunk = 0; chunk < n / 64; chunk++)
            for (int lane = 0; lane < 32; lane++)
                for (int t = 0; t < 4; t++) {
                    uint32_t w = p[kt * 2 * n + chunk * 128 + 4 * lane + t];
                    int g = lane / 4, tq = lane % 4;
                    for (int h = 0; h < 2; h++)
                        for (int b = 0; b < 2; b++)
                            for (int o = 0; o < 2; o++) {
                                int64_t row = kt * 16 + 2 * tq + o + 8 * b;
                                int64_t col = chunk * 64 + t * 16 + g + 8 * h;
                                int nib = 2 * h + b + 4 * o;
                                cr_assert_eq((w >> (4 * nib)) & 0xf, nibble(q, n, row, col),
                                             "row %lld col %lld", (long long)row, (long long)col);
                                checked++;
                            }
                }
    cr_expect_eq(checked, k * n);
    free(q);
    free(p);
}

/* _scale_perm (groups > 1) and _scale_perm_single (one group per column), built as the Python
 * builds them, applied to every 64 (32) values of the scales. */
Test(marlin, scale_permutations_follow_layer_pack)
{
    int perm[64], single[32], a = 0, b = 0;
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            perm[a++] = i + 8 * j;
    const int offs[8] = {0, 1, 8, 9, 16, 17, 24, 25};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 8; j++)
            single[b++] = 2 * i + offs[j];
    const int64_t n = 256;
    uint16_t s[2 * 256], got[2 * 256];
    for (int i = 0; i < 2 * n; i++)
        s[i] = (uint16_t)(1000 + i);
    mixed_gemm_marlin_pack_scales_cpu(s, 2, n, got); /* k = 256, group 128 */
    for (int64_t o = 0; o < 2 * n; o++)
        cr_assert_eq(got[o], s[o - o % 64 + perm[o % 64]], "grouped: value %lld", (long long)o);
    mixed_gemm_marlin_pack_scales_cpu(s, 1, n, got); /* one group: k = 128 with group 128 too */
    for (int64_t o = 0; o < n; o++)
        cr_assert_eq(got[o], s[o - o % 32 + single[o % 32]], "per column: value %lld",
                     (long long)o);
}

static void marlin_point(tune_point *p, int64_t m, int64_t n, int64_t k, int64_t group, int zp,
                         const char *dtype)
{
    memset(p, 0, sizeof *p);
    point_set_str(p, "op", "w4a16");
    point_set_str(p, "method", "marlin");
    point_set_int(p, "m", m);
    point_set_int(p, "n", n);
    point_set_int(p, "k", k);
    point_set_int(p, "group", group);
    point_set_int(p, "zero_point", zp);
    point_set_str(p, "dtype", dtype);
    point_set_int(p, "dsize", 2);
}

static void expect_refused(const tune_point *p, const char *want)
{
    family_kernel_ref refs[FAMILY_MAX_KERNELS];
    char why[512] = "";
    cr_expect_lt(
        mixed_gemm_family.kernels(&mixed_gemm_family, p, refs, FAMILY_MAX_KERNELS, why, sizeof why),
        0, "expected '%s'", want);
    cr_expect_str_eq(why, want);
}

Test(marlin, refuses_shapes_it_cannot_run)
{
    tune_point p;
    marlin_point(&p, 4, 512, 1024, 128, 0, "bfloat16");
    expect_refused(&p, "marlin: dtype bfloat16 (Marlin multiplies float16)");
    marlin_point(&p, 4, 512, 1024, 128, 1, "float16");
    expect_refused(&p, "marlin: zero points (Marlin's weights are symmetric, z = 8)");
    marlin_point(&p, 4, 512, 1024, 64, 0, "float16");
    expect_refused(&p, "marlin: group 64 (Marlin takes 128 or one group per column)");
    marlin_point(&p, 4, 512, 1024, 256, 0, "float16");
    expect_refused(&p, "marlin: group 256 (Marlin takes 128 or one group per column)");
    marlin_point(&p, 4, 512, 1088, 0, 0, "float16");
    expect_refused(&p, "marlin: k = 1088 is not a multiple of 128");
    marlin_point(&p, 4, 320, 1024, 128, 0, "float16");
    expect_refused(&p, "marlin: n = 320 is not a multiple of 256");
}

#define NOT_SET "marlin: TUNE_MARLIN_LIB is not set (a library built by scripts/peers/marlin.sh)"

/* Shapes Marlin runs (odd m, per column, one group of 128) reach the library's check. */
Test(marlin, without_the_library_every_runnable_shape_says_so)
{
    unsetenv("TUNE_MARLIN_LIB");
    tune_point p;
    const int64_t shapes[][4] = {{1, 512, 1024, 128}, {33, 256, 128, 128}, {300, 768, 384, 0}};
    for (size_t i = 0; i < 3; i++) {
        marlin_point(&p, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], 0, "float16");
        expect_refused(&p, NOT_SET);
    }
    setenv("TUNE_MARLIN_LIB", "", 1);
    expect_refused(&p, NOT_SET);
}

TestSuite(marlin_rows, .init = make_tmpdir, .fini = remove_tmpdir);

/* The rows of a compile-only run (no GPU) of a sweep of the marlin method on three shapes: m = 1
 * and 33 in float16 (runnable), m = 1 in bfloat16 (not), with TUNE_MARLIN_LIB = lib (NULL: unset).
 * Returns the rows by shape: [0] m = 1 fp16, [1] m = 33 fp16, [2] bf16. */
static void marlin_rows(const char *lib, results_rows *rows, const result_row *by_shape[3])
{
    char sweep_path[PATH_MAX], out[PATH_MAX + 8], rows_path[PATH_MAX + 32];
    if (lib)
        setenv("TUNE_MARLIN_LIB", lib, 1);
    else
        unsetenv("TUNE_MARLIN_LIB");
    write_file("marlin.json",
               "{\"name\": \"marlin_rows\", \"family\": \"mixed_gemm\", \"op\": \"w4a16\",\n"
               " \"problem\": {\"m\": [1, 33], \"k\": 1024, \"n\": 512, \"group\": 128,\n"
               "             \"zero_point\": false, \"dtype\": [\"float16\", \"bfloat16\"]},\n"
               " \"skip_if\": \"dtype == \\\"bfloat16\\\" && m == 33\",\n"
               " \"methods\": [\"marlin\"]}\n",
               sweep_path, sizeof sweep_path);
    static int runs; /* a folder per run: a run never writes into another's */
    snprintf(out, sizeof out, "%s/run%d", tmpdir, runs++);
    tune_error err = {0};
    sweep *sw = test_load_sweep(sweep_path);
    run_options opt;
    run_options_init(&opt);
    opt.compile_only = opt.compile_rows = 1;
    opt.quiet = 1;
    opt.arch = 90;
    opt.out_dir = out;
    run_summary sum;
    cr_assert_eq(run_sweep(sw, &opt, &sum, &err), TUNE_OK, "%s", err.message);
    sweep_free(sw);
    cr_expect_eq(sum.n_kernels, 0, "marlin compiles nothing of tune's: %zu kernels", sum.n_kernels);
    snprintf(rows_path, sizeof rows_path, "%s/raw.jsonl", out);
    cr_assert_eq(results_read(rows_path, rows, &err), TUNE_OK, "%s", err.message);
    cr_assert_eq(rows->n, 3, "%zu rows", rows->n);
    memset(by_shape, 0, 3 * sizeof *by_shape);
    for (size_t i = 0; i < rows->n; i++) {
        const result_row *r = &rows->rows[i];
        cr_assert_str_eq(r->method, "marlin");
        int bf16 = strcmp(point_str(&r->values, "dtype", ""), "bfloat16") == 0;
        by_shape[bf16 ? 2 : point_int(&r->values, "m", 0) == 33] = r;
    }
    for (int s = 0; s < 3; s++)
        cr_assert_not_null(by_shape[s], "shape %d has no row", s);
    cr_expect_str_eq(by_shape[2]->reason, "marlin: dtype bfloat16 (Marlin multiplies float16)");
    cr_expect_eq(by_shape[2]->status, RESULT_SKIPPED);
}

/* Both runnable rows are skipped with why; want_in: texts the reason must hold. */
static void expect_skipped(const result_row *const by_shape[3], const char *const *want_in,
                           size_t n_want)
{
    for (int s = 0; s < 2; s++) {
        const result_row *r = by_shape[s];
        cr_expect_eq(r->status, RESULT_SKIPPED, "shape %d: status %d", s, (int)r->status);
        cr_assert_not_null(r->reason);
        for (size_t i = 0; i < n_want; i++)
            cr_expect(strstr(r->reason, want_in[i]) != NULL, "shape %d: '%s' not in '%s'", s,
                      want_in[i], r->reason);
    }
}

/* The head of the reason a library that does not load gives (dlerror()'s text follows). */
static const char *cannot_load(const char *lib, char *buf, size_t size)
{
    snprintf(buf, size, "marlin: cannot load TUNE_MARLIN_LIB=%s: ", lib);
    return buf;
}

Test(marlin_rows, unset_gives_skipped_rows_with_the_reason)
{
    results_rows rows;
    const result_row *by_shape[3];
    marlin_rows(NULL, &rows, by_shape);
    for (int s = 0; s < 2; s++)
        cr_expect_str_eq(by_shape[s]->reason, NOT_SET);
    const char *want[] = {NOT_SET};
    expect_skipped(by_shape, want, 1);
    results_rows_free(&rows);
}

Test(marlin_rows, a_missing_library_is_named)
{
    results_rows rows;
    const result_row *by_shape[3];
    char lib[PATH_MAX];
    snprintf(lib, sizeof lib, "%s/no/libtune_marlin.so", tmpdir);
    marlin_rows(lib, &rows, by_shape);
    char head[PATH_MAX + 64];
    const char *want[] = {cannot_load(lib, head, sizeof head), "No such file or directory"};
    expect_skipped(by_shape, want, 2);
    results_rows_free(&rows);
}

Test(marlin_rows, a_file_that_is_not_a_library_is_named)
{
    results_rows rows;
    const result_row *by_shape[3];
    char lib[PATH_MAX], head[PATH_MAX + 64];
    /* longer than an ELF header (64 bytes), so that its first bytes are what is wrong */
    write_file("libtune_marlin.so",
               "This is a text file, not a shared library: its first four bytes are not an ELF "
               "file's magic number.\n",
               lib, sizeof lib);
    marlin_rows(lib, &rows, by_shape);
    const char *want[] = {cannot_load(lib, head, sizeof head), "invalid ELF header"};
    expect_skipped(by_shape, want, 2);
    results_rows_free(&rows);

    write_file("empty.so", "", lib, sizeof lib); /* too short for a header */
    marlin_rows(lib, &rows, by_shape);
    const char *want2[] = {cannot_load(lib, head, sizeof head)};
    expect_skipped(by_shape, want2, 1);
    results_rows_free(&rows);

    marlin_rows(tmpdir, &rows, by_shape); /* a folder: refused before dlopen */
    snprintf(head, sizeof head, "marlin: TUNE_MARLIN_LIB=%s is not a regular file", tmpdir);
    const char *want3[] = {head};
    expect_skipped(by_shape, want3, 1);
    results_rows_free(&rows);
}

/* A shared library that loads but has no tune_marlin_mul_v1: zlib's, which this test links. */
Test(marlin_rows, a_library_without_the_entry_point_is_named)
{
    Dl_info info;
    cr_assert_neq(dladdr((void *)zlibVersion, &info), 0);
    cr_assert_not_null(info.dli_fname);
    results_rows rows;
    const result_row *by_shape[3];
    marlin_rows(info.dli_fname, &rows, by_shape);
    char head[PATH_MAX + 64];
    snprintf(head, sizeof head, "marlin: TUNE_MARLIN_LIB=%s has no tune_marlin_mul_v1 (",
             info.dli_fname);
    const char *want[] = {head, "undefined symbol", "scripts/peers/marlin.sh"};
    expect_skipped(by_shape, want, 3);
    results_rows_free(&rows);
}

/* ---- GPU ---- */

/* Odd m (one launch of 1, 17 and 64 rows; two launches at m = 100, of 64 and 36 rows; 257),
 * grouped scales, one group per column, and k = 128 with group 128 (one group: per column too). */
Test(marlin_gpu, validates_against_the_reference, .timeout = 600)
{
    require_gpu();
    const char *lib = getenv("TUNE_MARLIN_LIB");
    if (!lib || !*lib)
        cr_skip_test("skipped: TUNE_MARLIN_LIB is not set (build the library with "
                     "scripts/peers/marlin.sh)");
    const tune_family *fam = &mixed_gemm_family;
    test_family_env t;
    test_family_env_init(&t);
    const family_env env = t.env;
    const int64_t ms[] = {1, 17, 64, 100, 257};
    const int64_t kng[][3] = {{1024, 512, 128}, {1024, 768, 0}, {128, 256, 128}};
    for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
        for (size_t s = 0; s < sizeof kng / sizeof kng[0]; s++) {
            tune_point shape, p;
            tune_error err = {0};
            marlin_point(&shape, ms[mi], kng[s][1], kng[s][0], kng[s][2], 0, "float16");
            point_set_str(&shape, "method", "cublas");
            void *state = fam->shape_init(&env, &shape, &err);
            cr_assert_not_null(state, "%s", err.message);
            marlin_point(&p, ms[mi], kng[s][1], kng[s][0], kng[s][2], 0, "float16");
            double e = NAN, tol = 0;
            cr_assert_eq(fam->prepare(state, &p, &err), TUNE_OK, "%s", err.message);
            cr_assert_eq(fam->check(state, &e, &tol, &err), TUNE_OK, "%s", err.message);
            cr_expect_leq(e, tol, "m = %lld k = %lld n = %lld group %lld: error %g > %g",
                          (long long)ms[mi], (long long)kng[s][0], (long long)kng[s][1],
                          (long long)kng[s][2], e, tol);
            cr_expect_gt(e, 0, "m = %lld: an error of exactly 0 (the reference itself?)",
                         (long long)ms[mi]);
            fam->shape_free(state);
        }
    test_family_env_free(&t);
}
