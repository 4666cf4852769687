#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/dispatch.h"
#include "model/family.h"
#include "util_cpu.h"

/* The CLI is not part of the harness library: test it from its source. */
#include "../tools/cli.c"
#include "../tools/cmd_dispatch.c"

/* tests/data/dispatch/run (its meta.json says how it was made): axes m, n; configurations
 * A = fast tile 8 split 1, B = fast tile 32 split 2, C = slow tile 8 split 1; times in us:
 *
 *   n = 64    m=1  m=4    m=16 m=64        n = 256   m=1  m=4  m=16      m=64
 *   A         10   10.05  30   100         A         10   10   30        100
 *   B         20   10     12   40          B         20   20   invalid   40
 *   C         15   15     20   60          C         15   15   20        60
 *
 * plus ref (reference, 50 everywhere) and aux (auxiliary, 1 everywhere). */
#define RUN_DIR "tests/data/dispatch/run"

typedef struct {
    results_rows rows;
    json_t *meta;
    dispatch *d;
} built;

static built build_in(const char *dir, const dispatch_options *opt, tune_error *err)
{
    built b = {0};
    const char *dirs[] = {dir};
    cr_assert_eq(dispatch_read(dirs, 1, &b.rows, &b.meta, err), TUNE_OK, "%s",
                 err->message);
    b.d = dispatch_build(b.rows.rows, b.rows.n, b.meta, opt, err);
    return b;
}

static built build(double tolerance, const char *const *methods, size_t n_methods)
{
    tune_error err = {0};
    dispatch_options opt = {methods, n_methods, NULL, tolerance, NULL};
    built b = build_in(RUN_DIR, &opt, &err);
    cr_assert_not_null(b.d, "%s", err.message);
    return b;
}

static void release(built *b)
{
    dispatch_free(b->d);
    results_rows_free(&b->rows);
    json_decref(b->meta);
}

/* "fast/8/1": the method, tile and split the rule picks at (m, n); "ref/-1/-1" for a baseline. */
static const char *pick(const dispatch *d, int64_t m, int64_t n, char *buf, size_t size)
{
    tune_point q = {0};
    point_set_int(&q, "m", m);
    point_set_int(&q, "n", n);
    size_t c = dispatch_lookup(d, &q);
    cr_assert_neq(c, DISPATCH_NONE);
    const tune_point *p = dispatch_config_params(d, c);
    snprintf(buf, size, "%s/%lld/%lld", dispatch_config_method(d, c),
             (long long)point_int(p, "tile", -1), (long long)point_int(p, "split", -1));
    return buf;
}

#define EXPECT_PICK(d, m, n, want)                                                                \
    do {                                                                                          \
        char b_[64];                                                                              \
        cr_expect_str_eq(pick(d, m, n, b_, sizeof b_), want, "m=%d n=%d", m, n);                  \
    } while (0)

static double geomean(const double *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += log(x[i]);
    return exp(s / (double)n);
}

Test(dispatch, breakpoints_at_geometric_midpoints)
{
    built b = build(0.01, NULL, 0);
    cr_expect_str_eq(dispatch_axis(b.d), "m"); /* 4 distinct values against 2 */
    /* n = 64: A on m = 1, 4, B on 16, 64; the midpoint of 4 and 16 is 8, which stays below */
    EXPECT_PICK(b.d, 0, 64, "fast/8/1");
    EXPECT_PICK(b.d, 1, 64, "fast/8/1");
    EXPECT_PICK(b.d, 8, 64, "fast/8/1");
    EXPECT_PICK(b.d, 9, 64, "fast/32/2");
    EXPECT_PICK(b.d, 64, 64, "fast/32/2");
    EXPECT_PICK(b.d, 100000, 64, "fast/32/2");
    release(&b);
}

Test(dispatch, merges_within_tolerance)
{
    /* at m = 4, n = 64, B (10 us) is best and A (10.05) within 1 %: A's segment covers m = 1, 4 */
    built b = build(0.01, NULL, 0);
    EXPECT_PICK(b.d, 4, 64, "fast/8/1");
    dispatch_score in = dispatch_get_score(b.d, DISPATCH_IN_SAMPLE);
    cr_expect_float_eq(in.efficiency, pow(10 / 10.05, 1.0 / 8), 1e-12);
    cr_expect_eq(in.n, 8);
    cr_expect_eq(in.misses, 0);
    json_t *j = dispatch_to_json(b.d, NULL, 0);
    cr_expect_eq(json_integer_value(json_object_get(j, "n_segments")), 5);
    json_decref(j);
    release(&b);

    /* without tolerance, B from m = 3 (the midpoint of 1 and 4 is 2) */
    b = build(0, NULL, 0);
    EXPECT_PICK(b.d, 2, 64, "fast/8/1");
    EXPECT_PICK(b.d, 3, 64, "fast/32/2");
    EXPECT_PICK(b.d, 4, 64, "fast/32/2");
    cr_expect_float_eq(dispatch_get_score(b.d, DISPATCH_IN_SAMPLE).efficiency, 1.0, 1e-12);
    release(&b);
}

Test(dispatch, never_picks_a_configuration_not_ok_at_the_shape)
{
    built b = build(0.01, NULL, 0);
    /* B is invalid at m = 16, n = 256 (its row the fastest there): C takes m = 16 and, since B
     * is not ok at 16 and C is ok at 64, the whole gap up to 64; aux, the fastest everywhere, is
     * auxiliary and never picked */
    EXPECT_PICK(b.d, 16, 256, "slow/8/1");
    EXPECT_PICK(b.d, 9, 256, "slow/8/1");
    EXPECT_PICK(b.d, 63, 256, "slow/8/1");
    EXPECT_PICK(b.d, 64, 256, "fast/32/2");
    EXPECT_PICK(b.d, 8, 256, "fast/8/1");
    release(&b);
}

Test(dispatch, falls_back_to_the_nearest_outer_shape)
{
    built b = build(0.01, NULL, 0);
    EXPECT_PICK(b.d, 16, 100, "fast/32/2");    /* log2: 6.64, nearer 6 (n = 64) */
    EXPECT_PICK(b.d, 16, 200, "slow/8/1");     /* 7.64, nearer 8 (n = 256) */
    EXPECT_PICK(b.d, 16, 128, "fast/32/2");    /* 7: as near both, the first */
    EXPECT_PICK(b.d, 16, 1 << 20, "slow/8/1"); /* beyond the last */
    EXPECT_PICK(b.d, 64, 1 << 20, "fast/32/2");
    release(&b);
}

Test(dispatch, leave_one_out_by_hand)
{
    built b = build(0.01, NULL, 0);
    /* one m left out: n = 64: m=1 takes B (20 vs 10), m=4 A (10.05 vs 10), m=16 A at the midpoint
     * 16 of 4 and 64 (30 vs 12), m=64 B; n = 256: m=1 A, m=4 A, m=16 A (30 vs 20), m=64 C (60 vs
     * 40) */
    const double axis[] = {0.5, 10 / 10.05, 0.4, 1, 1, 1, 20 / 30.0, 40 / 60.0};
    dispatch_score sc = dispatch_get_score(b.d, DISPATCH_LOO_AXIS);
    cr_expect_float_eq(sc.efficiency, geomean(axis, 8), 1e-12);
    cr_expect_eq(sc.n, 8);
    cr_expect_eq(sc.misses, 0);
    cr_expect_float_eq(sc.target, DISPATCH_TARGET_LOO_AXIS, 1e-12);
    cr_expect_not(sc.meets_target);
    /* one n left out: n = 64 takes n = 256's table (A, A, C: 20 vs 12, B); n = 256 takes n = 64's,
     * whose B at m = 16 was not ok there: a miss */
    const double outer[] = {1, 10 / 10.05, 12 / 20.0, 1, 1, 1, 1};
    sc = dispatch_get_score(b.d, DISPATCH_LOO_OUTER);
    cr_expect_float_eq(sc.efficiency, geomean(outer, 7), 1e-12);
    cr_expect_eq(sc.n, 7);
    cr_expect_eq(sc.misses, 1);
    cr_expect_gt(sc.efficiency, DISPATCH_TARGET_LOO_OUTER);
    cr_expect_not(sc.meets_target, "a miss fails the target whatever the efficiency");
    /* the same in the JSON, per shape */
    json_t *j = dispatch_to_json(b.d, NULL, 0);
    json_t *s = json_array_get(json_object_get(j, "shapes"), 6); /* m=16 n=256 */
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(s, "shape"), "m")), 16);
    cr_expect(json_is_true(json_object_get(json_object_get(s, "loo_outer"), "miss")));
    cr_expect_float_eq(json_real_value(json_object_get(json_object_get(s, "loo_axis"),
                                                       "efficiency")), 20 / 30.0, 1e-12);
    json_decref(j);
    release(&b);
}

Test(dispatch, methods_chosen)
{
    const char *ref[] = {"ref"}, *with_ref[] = {"fast", "ref", "slow"};
    built b = build(0.01, ref, 1);
    EXPECT_PICK(b.d, 16, 64, "ref/-1/-1");
    EXPECT_PICK(b.d, 1, 256, "ref/-1/-1");
    release(&b);
    b = build(0.01, with_ref, 3); /* ref is never within 1 % of the best */
    EXPECT_PICK(b.d, 16, 256, "slow/8/1");
    EXPECT_PICK(b.d, 1, 64, "fast/8/1");
    release(&b);
}

static void expect_refused(const char *dir, const dispatch_options *opt, const char *message)
{
    tune_error err = {0};
    built b = build_in(dir, opt, &err);
    cr_expect_null(b.d);
    cr_expect_str_eq(err.message, message);
    release(&b);
}

Test(dispatch, refusals)
{
    dispatch_options opt = {NULL, 0, NULL, 0.01, NULL};
    expect_refused("tests/data/dispatch/failed", &opt, "no ok row of the methods fast, slow");
    expect_refused("tests/data/dispatch/mixed", &opt,
                   "rows of two sweeps (toy, other): a rule is built from one sweep");
    opt.axis = "q";
    expect_refused(RUN_DIR, &opt, "--axis 'q' is not a problem axis (m, n)");
    opt.axis = NULL;
    const char *aux[] = {"fast", "aux"}, *nope[] = {"nope"};
    opt.methods = aux;
    opt.n_methods = 2;
    expect_refused(RUN_DIR, &opt, "--methods: 'aux' is an auxiliary method, not a kernel of the "
                                  "family: a rule cannot pick it");
    opt.methods = nope;
    opt.n_methods = 1;
    expect_refused(RUN_DIR, &opt, "--methods: 'nope' is not a method of the sweep (fast, slow, "
                                  "ref, aux)");
    /* folders of two sweeps are refused before any row is read */
    const char *dirs[] = {RUN_DIR, "tests/data/replay/run"};
    results_rows rows;
    json_t *meta = NULL;
    tune_error err = {0};
    cr_expect_eq(dispatch_read(dirs, 2, &rows, &meta, &err), TUNE_ERR_INVALID);
    cr_expect_not_null(strstr(err.message, "sweep"), "%s", err.message);
    cr_expect(!rows.rows && !rows.n);
    cr_expect_null(meta);
}

/* ---- the C header ---- */

/* Writes dispatch.json and dispatch.h of b into tmpdir, compiles a program that prints the
 * header's choice at every measured shape and at points never measured, and checks it against
 * the JSON (measured shapes) and dispatch_lookup (all). */
static void check_header(const built *b, const char *tag)
{
    tune_error err = {0};
    char hpath[256], jpath[256], cpath[256], bin[256], out[256], cmd[2048];
    snprintf(hpath, sizeof hpath, "%s/dispatch_%s.h", tmpdir, tag);
    snprintf(jpath, sizeof jpath, "%s/dispatch_%s.json", tmpdir, tag);
    snprintf(cpath, sizeof cpath, "%s/main_%s.c", tmpdir, tag);
    snprintf(bin, sizeof bin, "%s/main_%s", tmpdir, tag);
    snprintf(out, sizeof out, "%s/out_%s.txt", tmpdir, tag);
    FILE *f = fopen(hpath, "w");
    cr_assert_not_null(f);
    cr_assert_eq(dispatch_write_header(b->d, "test\nprovenance", f, &err), TUNE_OK, "%s",
                 err.message);
    fclose(f);
    json_t *j = dispatch_to_json(b->d, NULL, 0);
    cr_assert_eq(json_dump_file(j, jpath, 0), 0);

    static const int64_t ms[] = {0, 1, 2, 3, 4, 8, 9, 15, 16, 17, 63, 64, 65, 1000};
    static const int64_t ns[] = {64, 256, 1, 100, 128, 200, 1 << 20};
    f = fopen(cpath, "w");
    cr_assert_not_null(f);
    fprintf(f, "#include <stdio.h>\n#include \"dispatch_%s.h\"\nint main(void)\n{\n"
               "    tune_dispatch_toy_config c;\n    int id;\n", tag);
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        for (size_t k = 0; k < sizeof ms / sizeof ms[0]; k++)
            fprintf(f, "    id = tune_dispatch_toy(%lld, %lld, &c);\n"
                       "    printf(\"%%d %%s/%%d/%%d\\n\", id, c.method, c.tile, c.split);\n",
                    (long long)ms[k], (long long)ns[i]);
    fprintf(f, "    return 0;\n}\n");
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "cc -std=c99 -Wall -Wextra -Wconversion -Wpedantic -Werror -o '%s' '%s' -lm && "
             "'%s' > '%s'", bin, cpath, bin, out);
    cr_assert_eq(system(cmd), 0, "%s", cmd);

    f = fopen(out, "r");
    cr_assert_not_null(f);
    json_t *shapes = json_object_get(j, "shapes"), *configs = json_object_get(j, "configs");
    size_t checked = 0;
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        for (size_t k = 0; k < sizeof ms / sizeof ms[0]; k++) {
            int id;
            char got[64], want[64];
            cr_assert_eq(fscanf(f, "%d %63s", &id, got), 2);
            cr_expect_str_eq(got, pick(b->d, ms[k], ns[i], want, sizeof want), "m=%lld n=%lld",
                             (long long)ms[k], (long long)ns[i]);
            json_t *s;
            size_t si;
            json_array_foreach(shapes, si, s)
            {
                json_t *sh = json_object_get(s, "shape");
                if (json_integer_value(json_object_get(sh, "m")) != ms[k] ||
                    json_integer_value(json_object_get(sh, "n")) != ns[i])
                    continue;
                json_t *c = json_array_get(configs, (size_t)json_integer_value(
                                                        json_object_get(s, "config")));
                json_t *p = json_object_get(c, "params");
                json_t *tile = json_object_get(p, "tile"), *split = json_object_get(p, "split");
                snprintf(want, sizeof want, "%s/%lld/%lld",
                         json_string_value(json_object_get(c, "method")),
                         tile ? (long long)json_integer_value(tile) : -1LL,
                         split ? (long long)json_integer_value(split) : -1LL);
                cr_expect_str_eq(got, want, "JSON at m=%lld n=%lld", (long long)ms[k],
                                 (long long)ns[i]);
                checked++;
            }
        }
    cr_expect_eq(checked, 8, "every measured shape checked against the JSON");
    fclose(f);
    json_decref(j);
}

Test(dispatch, header_compiles_and_agrees, .init = make_tmpdir, .fini = remove_tmpdir)
{
    built b = build(0.01, NULL, 0);
    check_header(&b, "tuned");
    char *text = NULL;
    size_t len = 0;
    tune_error err = {0};
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(dispatch_write_header(b.d, NULL, f, &err), TUNE_OK);
    fclose(f);
    cr_expect_not_null(strstr(text, "static inline int tune_dispatch_toy(long m, long n, "
                                    "tune_dispatch_toy_config *td_out)\n"), "%s", text);
    cr_expect_not_null(strstr(text, "    TUNE_DISPATCH_TOY_FAST = 0,\n    TUNE_DISPATCH_TOY_SLOW = 1,"
                                    "\n"), "%s", text);
    free(text);
    release(&b);
    const char *ref[] = {"ref", "slow"}; /* a baseline: its parameters are -1 */
    b = build(0.01, ref, 2);
    check_header(&b, "ref");
    release(&b);
}

/* ---- the command ---- */

Test(dispatch, command_writes_three_files, .init = make_tmpdir, .fini = remove_tmpdir)
{
    char out[128], path[256];
    snprintf(out, sizeof out, "%s/rule", tmpdir);
    char *argv[] = {"dispatch", RUN_DIR, "--out", out, "--name", "toy_rule", NULL};
    FILE *saved = stdout;
    stdout = fopen("/dev/null", "w");
    int rc = tune_cmd_dispatch(6, argv);
    fclose(stdout);
    stdout = saved;
    cr_assert_eq(rc, 0);
    const char *files[] = {"dispatch.json", "dispatch.h", "dispatch.md"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", out, files[i]);
        cr_expect_gt(file_size(path), 100, "%s", path);
    }
    snprintf(path, sizeof path, "%s/dispatch.json", out);
    json_t *j = json_load_file(path, 0, NULL);
    cr_assert_not_null(j);
    cr_expect_str_eq(json_string_value(json_object_get(j, "function")), "tune_dispatch_toy_rule");
    cr_expect_str_eq(json_string_value(json_array_get(json_object_get(j, "sources"), 0)), RUN_DIR);
    json_decref(j);

    /* never into a folder read */
    char inside[] = RUN_DIR "/rule";
    char *argv2[] = {"dispatch", RUN_DIR, "--out", inside, NULL};
    cr_expect_eq(tune_cmd_dispatch(4, argv2), 2); /* a usage error, as every reader's --out */
    struct stat sb;
    cr_expect_neq(stat(inside, &sb), 0, "nothing written inside the folder read");
}

/* tests/data/dispatch/rows: rows of a family "tiles" whose rules keep, at each m, the smallest row
 * tile bm among the points that covers m (the largest above them all), as mixed_gemm's do; each
 * tile was measured at the m it covers (bm = m at m = 16, 32, 64). Between two measured m the
 * geometric midpoint would hand m = 17..22 the bm = 16 tile and m = 33..45 the bm = 32 one, tiles
 * the family does not run there: its rules move those values to the tile it keeps. */
static void tiles_prune(const tune_family *fam, const tune_point *shape, const tune_point *params,
                        size_t n, const char **why)
{
    (void)fam;
    int64_t m = point_int(shape, "m", 0), cover = 0, top = 0;
    cr_assert_str_eq(point_str(shape, "method", ""), "wgmma_ws");
    cr_assert_str_eq(point_str(shape, "op", ""), "toy");
    for (size_t i = 0; i < n; i++) {
        int64_t bm = point_int(&params[i], "bm", 0);
        top = bm > top ? bm : top;
        if (bm >= m && (cover == 0 || bm < cover))
            cover = bm;
    }
    for (size_t i = 0; i < n; i++)
        why[i] = point_int(&params[i], "bm", 0) == (cover ? cover : top) ? NULL : "not the tile";
}

static const tune_family tiles_family = {.name = "tiles", .prune = tiles_prune};

/* The rule of the "tiles" rows in dir (k = n = 4096): the bm it picks at each m[i] is want[i]. */
static void expect_tiles(const char *dir, const int64_t *m, const int64_t *want, size_t n,
                         dispatch_score *loo)
{
    tune_error err = {0};
    dispatch_options opt = {NULL, 0, NULL, 0.01, NULL};
    cr_assert_eq(family_register(&tiles_family), 0);
    built b = build_in(dir, &opt, &err);
    cr_assert_not_null(b.d, "%s", err.message);
    for (size_t i = 0; i < n; i++) {
        tune_point q = {0};
        point_set_int(&q, "k", 4096);
        point_set_int(&q, "n", 4096);
        point_set_int(&q, "m", m[i]);
        size_t c = dispatch_lookup(b.d, &q);
        cr_assert_neq(c, DISPATCH_NONE);
        cr_expect_eq(point_int(dispatch_config_params(b.d, c), "bm", -1), want[i], "m = %lld",
                     (long long)m[i]);
    }
    *loo = dispatch_get_score(b.d, DISPATCH_LOO_AXIS);
    release(&b);
}

Test(dispatch, values_between_measured_ones_take_a_tile_the_family_keeps)
{
    static const int64_t m[] = {1, 16, 17, 22, 23, 32, 33, 45, 46, 64, 100, 4096};
    static const int64_t want[] = {16, 16, 32, 32, 32, 32, 64, 64, 64, 64, 64, 64};
    dispatch_score s;
    expect_tiles("tests/data/dispatch/rows", m, want, sizeof m / sizeof *m, &s);
    /* left out, m = 32 takes bm = 32, measured there: no neighbour's tile, but the one the family
     * keeps there; m = 16 likewise; m = 64 takes m = 32's bm = 32 (below the midpoint), measured
     * at 64 too */
    cr_expect_eq(s.misses, 0, "%zu misses", s.misses);
    cr_expect_eq(s.n, 3, "%zu scored", s.n);
}

/* tests/data/dispatch/schedule: a family "blocks" whose rules keep every point, and a sweep whose
 * search feature blocks = ceil(m / bm) x splitk describes a configuration's schedule. Between
 * m = 256 (best: A, bm 128 split 2, 4 blocks) and m = 600 (best: B, bm 256 split 1), the values
 * that take m = 256's segment carry its schedule over, not its parameters: from m = 257, where A
 * needs 6 blocks, C (bm 256 split 2) keeps the 4. */
static void keep_all(const tune_family *fam, const tune_point *shape, const tune_point *params,
                     size_t n, const char **why)
{
    (void)fam, (void)shape, (void)params;
    for (size_t i = 0; i < n; i++)
        why[i] = NULL;
}

static const tune_family blocks_family = {.name = "blocks", .prune = keep_all};

Test(dispatch, values_between_measured_ones_keep_the_schedule)
{
    tune_error err = {0};
    dispatch_options opt = {NULL, 0, NULL, 0.01, NULL};
    cr_assert_eq(family_register(&blocks_family), 0);
    built b = build_in("tests/data/dispatch/schedule", &opt, &err);
    cr_assert_not_null(b.d, "%s", err.message);
    static const int64_t m[] = {200, 256, 257, 300, 391, 392, 600, 1000};
    static const int64_t want_bm[] = {128, 128, 256, 256, 256, 256, 256, 256};
    static const int64_t want_split[] = {2, 2, 2, 2, 2, 1, 1, 1};
    for (size_t i = 0; i < sizeof m / sizeof *m; i++) {
        tune_point q = {0};
        point_set_int(&q, "m", m[i]);
        size_t c = dispatch_lookup(b.d, &q);
        cr_assert_neq(c, DISPATCH_NONE);
        const tune_point *p = dispatch_config_params(b.d, c);
        cr_expect_eq(point_int(p, "bm", -1), want_bm[i], "m = %lld: bm", (long long)m[i]);
        cr_expect_eq(point_int(p, "splitk", -1), want_split[i], "m = %lld: splitk",
                     (long long)m[i]);
    }
    release(&b);
}

/* Rows are input: breakpoint values 10^15 apart (tests/data/dispatch/wide) are visited in steps
 * that grow with the value, not one by one, so the rule is built in bounded time; the values
 * beyond every tile take the largest. */
Test(dispatch, values_far_apart_are_visited_in_bounded_steps, .timeout = 60)
{
    static const int64_t m[] = {16, 20, 32, 33, 1000000, 1000000000000000};
    static const int64_t want[] = {16, 32, 32, 64, 64, 64};
    dispatch_score s;
    expect_tiles("tests/data/dispatch/wide", m, want, sizeof m / sizeof *m, &s);
}
