/* test_history.c - the window rule (analysis/history.h) on series, and the history of stores of
 * toy runs: segments annotated not flagged, a step flagged on its second night, missing series,
 * one run judged with --run. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/history.h"
#include "core/infile.h"
#include "store/db.h"
#include "util_cpu.h"
#include "util_store.h"

TestSuite(history, .init = make_tmpdir, .fini = remove_tmpdir);

static history_options opts(void)
{
    history_options o;
    history_options_init(&o);
    return o;
}

/* Judges every value of x[0..n) in turn, a new segment starting at value seg (0: one segment);
 * the last verdict, its judgement in *last. */
static history_verdict judge_all(const double *x, size_t n, size_t seg, const history_options *o,
                                 history_judgement *last)
{
    unsigned char new_seg[256] = {0};
    history_judgement js[256];
    cr_assert_leq(n, 256);
    new_seg[seg] = seg > 0;
    history_judge_series(x, new_seg, n, o, js);
    *last = js[n - 1];
    return last->verdict;
}

Test(history, rule_insufficient_same_step)
{
    history_options o = opts();
    history_judgement j;
    double flat[] = {1.00, 1.01, 0.99, 1.00};
    cr_expect_eq(judge_all(flat, 3, 0, &o, &j), HISTORY_INSUFFICIENT); /* 2 before it */
    cr_expect_eq(judge_all(flat, 4, 0, &o, &j), HISTORY_SAME);
    cr_expect_float_eq(j.baseline, 1.00, 1e-12);
    /* a 5 % step: exceeds on its first night, flagged on its second (consecutive 2) */
    double step[] = {1.00, 1.01, 0.99, 1.00, 1.005, 0.995, 1.05, 1.052};
    cr_expect_eq(judge_all(step, 7, 0, &o, &j), HISTORY_SAME);
    cr_expect_eq(j.exceeds, 1);
    cr_expect_eq(judge_all(step, 8, 0, &o, &j), HISTORY_REGRESSION);
    cr_expect_float_eq(j.change_pct, 5.2, 0.01);
    o.consecutive = 1;
    cr_expect_eq(judge_all(step, 7, 0, &o, &j), HISTORY_REGRESSION);
    /* a step down */
    double down[] = {1.00, 1.01, 0.99, 1.00, 0.94, 0.95};
    o = opts();
    cr_expect_eq(judge_all(down, 6, 0, &o, &j), HISTORY_IMPROVEMENT);
    /* below the threshold: the same, however quiet the window */
    double small[] = {1.0, 1.0, 1.0, 1.0, 1.02, 1.02};
    cr_expect_eq(judge_all(small, 6, 0, &o, &j), HISTORY_SAME);
}

Test(history, rule_outlier_and_noise)
{
    history_options o = opts();
    history_judgement j;
    /* one outlier night is not a regression (two in a row are needed) */
    double spike[] = {1.0, 1.01, 0.99, 1.0, 1.2, 1.0};
    cr_expect_eq(judge_all(spike, 5, 0, &o, &j), HISTORY_SAME);
    cr_expect_eq(judge_all(spike, 6, 0, &o, &j), HISTORY_SAME);
    /* a window whose own spread is wider than the threshold: unstable */
    double noisy[] = {1.0, 1.08, 0.93, 1.05, 0.96, 1.02};
    cr_expect_eq(judge_all(noisy, 6, 0, &o, &j), HISTORY_UNSTABLE);
    cr_expect_gt(j.spread_pct, 1.5);
}

Test(history, rule_drift_caught_by_the_segment_level)
{
    history_options o = opts();
    history_judgement j;
    double x[64];
    size_t first = 0;
    for (size_t i = 0; i < 64; i++)
        x[i] = i < 10 ? 1.0 : 1.0 + 0.01 * (double)(i - 9); /* 1 % a night from night 10 */
    for (size_t n = 1; n <= 64 && !first; n++)
        if (judge_all(x, n, 0, &o, &j) == HISTORY_REGRESSION)
            first = n - 1;
    cr_assert_gt(first, 0, "never flagged");
    cr_expect_lt(x[first], 1.10, "flagged at +%.0f %%", (x[first] - 1) * 100);
    /* the window alone never sees it: its median trails by a few nights */
    cr_expect_lt(x[first] - 1.0, 0.06);
}

Test(history, rule_segment_start)
{
    history_options o = opts();
    history_judgement j;
    double x[] = {1.0, 1.0, 1.0, 1.0, 1.5, 1.5};
    /* values 4.. are a new segment: nothing to compare with */
    cr_expect_eq(judge_all(x, 5, 4, &o, &j), HISTORY_INSUFFICIENT);
    cr_expect_eq(judge_all(x, 6, 4, &o, &j), HISTORY_INSUFFICIENT);
}

Test(history, segment_keys)
{
    unsigned on;
    cr_expect_eq(history_parse_segment_on("driver,kernels", &on), 0);
    cr_expect_eq(on, HISTORY_SEG_DRIVER | HISTORY_SEG_KERNELS);
    cr_expect_eq(history_parse_segment_on("none", &on), 0);
    cr_expect_eq(on, 0u);
    cr_expect_eq(history_parse_segment_on("driver,", &on), -1);
    cr_expect_eq(history_parse_segment_on("gpu", &on), -1);
    cr_expect_eq(history_parse_segment_on("", &on), -1);
}

/* ---- stores of toy runs ---- */

typedef struct {
    double factor[3]; /* per shape */
} night_times;

static double toy_time(int i, int j, void *ctx)
{
    const night_times *t = ctx;
    return 1e-5 * (1 + i) * (1 + j) * t->factor[i];
}

static char store[128];

/* Ingests nights 0..n-1: night k's shape 1 scaled by f1[k]; the driver changes at night
 * driver_at (-1: never); shape 2's tuned rows fail from night fail_at (-1: never). */
static void make_nights(int n, const double *f1, int driver_at, int fail_at)
{
    snprintf(store, sizeof store, "%s/history.sqlite", tmpdir);
    tune_error err = {0};
    db *d = db_open(store, &err);
    cr_assert_not_null(d, "%s", err.message);
    for (int k = 0; k < n; k++) {
        char dir[256], start[32];
        snprintf(dir, sizeof dir, "%s/n%02d", tmpdir, k);
        snprintf(start, sizeof start, "2026-01-%02dT02:00:00Z", k + 1);
        night_times t = {{1.0 + 0.002 * (k % 3), f1[k], 1.0 - 0.002 * (k % 2)}};
        toy_run r = toy_defaults();
        r.start = start;
        r.time = toy_time;
        r.ctx = &t;
        r.driver = driver_at >= 0 && k >= driver_at ? "590.2" : "580.1";
        r.skip_shape = fail_at >= 0 && k >= fail_at ? 2 : -1;
        toy_write(dir, &r);
        db_ingest_result res;
        cr_assert_eq(db_ingest(d, dir, NULL, &res, &err), TUNE_OK, "%s", err.message);
    }
    db_close(d);
}

static const json_t *series_of(const json_t *h, const char *shape, const char *method)
{
    const json_t *g = json_array_get(json_object_get(h, "groups"), 0), *s;
    size_t i;
    json_array_foreach(json_object_get(g, "series"), i, s)
    {
        if (!strcmp(json_string_value(json_object_get(s, "shape")), shape) &&
            !strcmp(json_string_value(json_object_get(s, "method")), method))
            return s;
    }
    return NULL;
}

static const char *status_of(const json_t *s)
{
    return json_string_value(json_object_get(json_object_get(s, "verdict"), "status"));
}

Test(history, store_step_flagged)
{
    double f1[10] = {1, 1.01, 0.99, 1, 1.005, 1, 0.995, 1, 1.06, 1.06};
    make_nights(10, f1, -1, -1);
    history_options o = opts();
    o.db = store;
    json_t *h = NULL;
    tune_error err = {0};
    cr_assert_eq(history_build(&o, &h, &err), TUNE_OK, "%s", err.message);
    const json_t *s = series_of(h, "n=256", "custom");
    cr_assert_not_null(s);
    cr_expect_str_eq(status_of(s), "regression");
    cr_expect_eq(json_array_size(json_object_get(s, "points")), 10);
    const json_t *p8 = json_array_get(json_object_get(s, "points"), 8);
    cr_expect_str_eq(json_string_value(json_object_get(p8, "verdict")), "same");
    cr_expect_str_eq(json_string_value(json_object_get(p8, "winner")), "chunk=16");
    cr_expect_str_eq(status_of(series_of(h, "n=128", "custom")), "same");
    cr_expect_str_eq(status_of(series_of(h, "n=128", "base")), "same");
    cr_expect_eq(history_n_flagged(h), 1);
    /* markdown names it */
    char path[256];
    snprintf(path, sizeof path, "%s/h.md", tmpdir);
    FILE *f = fopen(path, "w");
    history_write_markdown(h, 0, f);
    fclose(f);
    char *md = NULL;
    size_t len;
    cr_assert_eq(infile_read(path, 1 << 20, &md, &len, &err), TUNE_OK);
    cr_expect(strstr(md, "| n=256 | custom | regression |"), "%s", md);
    cr_expect_null(strstr(md, "| n=128 |"), "%s", md);
    free(md);
    json_decref(h);
    /* judged as of night 8 (--run): the step's first night is not yet a regression */
    char dir[256];
    snprintf(dir, sizeof dir, "%s/n08", tmpdir);
    o.run = dir;
    cr_assert_eq(history_build(&o, &h, &err), TUNE_OK, "%s", err.message);
    cr_expect_eq(json_array_size(json_object_get(
                     json_array_get(json_object_get(h, "groups"), 0), "runs")),
                 9);
    cr_expect_str_eq(status_of(series_of(h, "n=256", "custom")), "same");
    json_decref(h);
}

Test(history, store_driver_change_annotated)
{
    double f1[10] = {1, 1.01, 0.99, 1, 1.005, 1, 0.995, 1, 1.10, 1.10};
    make_nights(10, f1, 8, -1);
    history_options o = opts();
    o.db = store;
    json_t *h = NULL;
    tune_error err = {0};
    cr_assert_eq(history_build(&o, &h, &err), TUNE_OK, "%s", err.message);
    const json_t *g = json_array_get(json_object_get(h, "groups"), 0);
    const json_t *r8 = json_array_get(json_object_get(g, "runs"), 8);
    cr_expect_str_eq(json_string_value(json_array_get(json_object_get(r8, "changes"), 0)),
                     "driver 580.1 \u2192 590.2");
    const json_t *s = series_of(h, "n=256", "custom");
    cr_expect_str_eq(status_of(s), "insufficient");
    cr_expect_eq(history_n_flagged(h), 0);
    json_decref(h);
    /* without the driver among the segment keys, the same step is a regression */
    o.segment_on = HISTORY_SEG_KERNELS;
    cr_assert_eq(history_build(&o, &h, &err), TUNE_OK, "%s", err.message);
    cr_expect_str_eq(status_of(series_of(h, "n=256", "custom")), "regression");
    json_decref(h);
}

Test(history, store_missing_series)
{
    double f1[6] = {1, 1, 1, 1, 1, 1};
    make_nights(6, f1, -1, 5);
    history_options o = opts();
    o.db = store;
    json_t *h = NULL;
    tune_error err = {0};
    cr_assert_eq(history_build(&o, &h, &err), TUNE_OK, "%s", err.message);
    cr_expect_str_eq(status_of(series_of(h, "n=384", "custom")), "missing");
    cr_expect_eq(history_n_flagged(h), 1);
    json_decref(h);
}

Test(history, store_errors)
{
    history_options o = opts();
    char path[256];
    snprintf(path, sizeof path, "%s/absent.sqlite", tmpdir);
    o.db = path;
    json_t *h = NULL;
    tune_error err = {0};
    cr_expect_neq(history_build(&o, &h, &err), TUNE_OK);
    cr_expect_null(h);
    cr_expect(strstr(err.message, "no results store"), "%s", err.message);
    double f1[3] = {1, 1, 1};
    make_nights(3, f1, -1, -1);
    o.db = store;
    o.run = tmpdir; /* a folder the store holds no run of */
    tune_error_clear(&err);
    cr_expect_neq(history_build(&o, &h, &err), TUNE_OK);
    cr_expect(strstr(err.message, "holds no run of this folder"), "%s", err.message);
    o.run = NULL;
    o.since = "2026-13-01";
    tune_error_clear(&err);
    cr_expect_neq(history_build(&o, &h, &err), TUNE_OK);
}
