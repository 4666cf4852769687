#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/compare.h"
#include "core/infile.h"
#include "core/outfile.h"
#include "model/family.h"
#include "store/folder.h"
#include "store/meta.h"
#include "util_cpu.h"

/* tests/data/compare: a hand-made pair of runs (sweep "mini", g in {256, 1024}, k=64, chunk, and
 * the slice baseline), each row made for one verdict (times in us, noise = stdev / median):
 *   g=256  chunk=2    only in NEW
 *   g=256  chunk=4    only in BASE
 *   g=256  chunk=8    15 -> 16, one sample each: unknown noise
 *   g=256  chunk=16   10 -> 10.05 (NEW measured it twice; the first row, 50, is superseded): same
 *   g=256  chunk=32   6.3 -> 5.9, 1 %: faster by 6.3 %, NEW's winner
 *   g=256  chunk=64   6.0 -> 6.18, 1 %: slower by 3 % (within 5 %); BASE's winner
 *   g=256  chunk=128  compile_error -> 20: fixed
 *   g=256  slice      12 -> 14.4, 1 %: +20 %, a regression
 *   g=1024 chunk=16   30 (10 %) -> 32.7 (2 %): +9 % within BASE's noise: same
 *   g=1024 chunk=32   25 -> invalid: broken
 *   g=1024 chunk=64   20 -> 26, 1 %: +30 %, a regression, and the winner of both runs
 *   g=1024 chunk=128  timeout -> crashed: not ok in both
 *   g=1024 slice      50 -> 50.2: same
 * other_gpu: BASE's rows, measured (says meta.json) on an H100 with another driver. */
#define MINI "tests/data/compare"
/* two H200 runs of sweeps/sparq.json of 2026-11-22 (the second killed and resumed), whole: meta.json,
 * raw.jsonl.gz, retime.jsonl (and heuristics.json); tests/data/runs/README.md */
#define SPARQ "tests/data/runs/sparq_h200"
#define SPARQ_RESUMED "tests/data/runs/sparq_h200_resumed"

static compare *load(const char *base, const char *now, const compare_options *opt)
{
    tune_error err = {0};
    compare *c = compare_dirs(&base, 1, &now, 1, opt, &err);
    cr_assert_not_null(c, "%s: %s", err.where, err.message);
    return c;
}

/* The configuration named name (compare_config_name), or NULL. */
static const compare_config *find_config(const compare *c, const char *name)
{
    for (size_t i = 0; i < compare_n_configs(c); i++) {
        char buf[1024];
        if (strcmp(compare_config_name(c, compare_config_at(c, i), buf, sizeof buf), name) == 0)
            return compare_config_at(c, i);
    }
    return NULL;
}

static const compare_shape *find_shape(const compare *c, const char *name)
{
    for (size_t i = 0; i < compare_n_shapes(c); i++) {
        char buf[512];
        if (strcmp(compare_shape_name(c, compare_shape_at(c, i), buf, sizeof buf), name) == 0)
            return compare_shape_at(c, i);
    }
    return NULL;
}

static void expect_verdict(const compare *c, const char *name, compare_verdict v)
{
    const compare_config *cfg = find_config(c, name);
    cr_assert_not_null(cfg, "no configuration '%s'", name);
    cr_expect_eq(cfg->verdict, v, "%s: %s, expected %s", name, compare_verdict_str(cfg->verdict),
                 compare_verdict_str(v));
}

static char *markdown(const compare *c)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    compare_write_markdown(c, f);
    fclose(f);
    return buf;
}

static void expect_contains(const char *text, const char *needle)
{
    cr_expect_not_null(strstr(text, needle), "missing:\n%s\nin:\n%s", needle, text);
}

/* ---- the rule ---- */

typedef struct {
    double change, noise_base, noise_new, threshold;
    compare_verdict expected;
} verdict_case;

ParameterizedTestParameters(compare, change_verdict)
{
    static verdict_case cases[] = {
        /* within the larger noise: same (nvbench's min() rule would count it) */
        {0.01, 0.02, 0.005, 0.05, COMPARE_SAME},
        {0.06, 0.10, 0.02, 0.05, COMPARE_SAME},
        {-0.09, 0.01, 0.10, 0.05, COMPARE_SAME},
        {0.02, 0.02, 0.01, 0.0, COMPARE_SAME}, /* at the noise: not beyond it */
        {0.03, 0.01, 0.02, 0.05, COMPARE_SLOWER},
        {0.05, 0.01, 0.01, 0.05, COMPARE_SLOWER}, /* at the threshold: not beyond it */
        {0.06, 0.01, 0.02, 0.05, COMPARE_REGRESSION},
        {0.20, 0.01, 0.01, 0.25, COMPARE_SLOWER},
        {0.30, 0.01, 0.01, 0.25, COMPARE_REGRESSION},
        {0.01, 0.001, 0.002, 0.0, COMPARE_REGRESSION}, /* threshold 0: any counted slowdown */
        {-0.20, 0.01, 0.01, 0.05, COMPARE_FASTER},
        {0.06, NAN, 0.01, 0.05, COMPARE_REGRESSION}, /* one run's noise when only one is known */
        {0.06, 0.10, NAN, 0.05, COMPARE_SAME},
        {0.06, NAN, NAN, 0.05, COMPARE_UNKNOWN},
        {NAN, 0.01, 0.01, 0.05, COMPARE_UNKNOWN},
    };
    return cr_make_param_array(verdict_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(verdict_case *vc, compare, change_verdict)
{
    compare_verdict v =
        compare_change_verdict(vc->change, vc->noise_base, vc->noise_new, vc->threshold);
    cr_expect_eq(v, vc->expected, "change %g noise %g/%g threshold %g: %s, expected %s", vc->change,
                 vc->noise_base, vc->noise_new, vc->threshold, compare_verdict_str(v),
                 compare_verdict_str(vc->expected));
}

Test(compare, row_noise)
{
    result_row r;
    result_row_init(&r);
    r.status = RESULT_OK;
    r.time = (stats_summary){.n = 100, .median = 10e-6, .stdev = 0.5e-6, .p10 = 9e-6, .p90 = 11e-6};
    cr_expect_float_eq(compare_row_noise(&r), 0.05, 1e-12);
    r.time.stdev = NAN; /* from the 10th-90th percentile range, as sigmas of a normal */
    cr_expect_float_eq(compare_row_noise(&r), 2e-6 / 2.5631 / 10e-6, 1e-12);
    r.time.p90 = NAN;
    cr_expect(isnan(compare_row_noise(&r)));
    r.time.stdev = 0.5e-6;
    r.time.n = 1;
    cr_expect(isnan(compare_row_noise(&r)), "one sample has no spread");
    r.time.n = 100;
    r.status = RESULT_INVALID;
    cr_expect(isnan(compare_row_noise(&r)));
    cr_expect(isnan(compare_row_noise(NULL)));
    cr_expect(compare_verdict_is_regression(COMPARE_BROKEN));
    cr_expect(compare_verdict_is_regression(COMPARE_REGRESSION));
    cr_expect_not(compare_verdict_is_regression(COMPARE_SLOWER));
    cr_expect_str_eq(compare_verdict_str(COMPARE_ONLY_NEW), "only_new");
}

/* ---- the hand-made pair ---- */

TestSuite(compare_mini, .init = make_tmpdir, .fini = remove_tmpdir);

Test(compare_mini, every_verdict)
{
    compare *c = load(MINI "/base", MINI "/new", NULL);
    expect_verdict(c, "g=256 custom chunk=2", COMPARE_ONLY_NEW);
    expect_verdict(c, "g=256 custom chunk=4", COMPARE_ONLY_BASE);
    expect_verdict(c, "g=256 custom chunk=8", COMPARE_UNKNOWN);
    expect_verdict(c, "g=256 custom chunk=16", COMPARE_SAME);
    expect_verdict(c, "g=256 custom chunk=32", COMPARE_FASTER);
    expect_verdict(c, "g=256 custom chunk=64", COMPARE_SLOWER);
    expect_verdict(c, "g=256 custom chunk=128", COMPARE_FIXED);
    expect_verdict(c, "g=256 slice", COMPARE_REGRESSION);
    expect_verdict(c, "g=1024 custom chunk=16", COMPARE_SAME);
    expect_verdict(c, "g=1024 custom chunk=32", COMPARE_BROKEN);
    expect_verdict(c, "g=1024 custom chunk=64", COMPARE_REGRESSION);
    expect_verdict(c, "g=1024 custom chunk=128", COMPARE_FAILING);
    expect_verdict(c, "g=1024 slice", COMPARE_SAME);
    cr_expect_eq(compare_n_configs(c), 13);

    const compare_config *slice = find_config(c, "g=256 slice");
    cr_expect_float_eq(slice->change, 0.20, 1e-9);
    cr_expect_float_eq(slice->noise_base, 0.01, 1e-9);
    const compare_config *dup = find_config(c, "g=256 custom chunk=16");
    cr_expect_float_eq(dup->new_row->time.median, 10.05e-6, 1e-15, "the last row of a duplicate");

    const compare_counts *k = compare_get_counts(c);
    cr_expect_eq(k->duplicates_new, 1);
    cr_expect_eq(k->duplicates_base, 0);
    cr_expect_eq(k->configs[COMPARE_SAME], 3);
    cr_expect_eq(k->configs[COMPARE_REGRESSION], 2);
    cr_expect_eq(k->configs[COMPARE_BROKEN], 1);
    cr_expect_eq(k->improved, 1, "chunk=32 is faster by more than 5 %%");
    /* 2 slower + 1 broken configurations, 1 shape */
    cr_expect_eq(compare_n_regressions(c), 4);
    cr_expect_eq(compare_env_refused(c), 0);
    compare_free(c);
}

Test(compare_mini, shapes_and_winners)
{
    compare *c = load(MINI "/base", MINI "/new", NULL);
    cr_assert_eq(compare_n_shapes(c), 2);
    const compare_shape *s = find_shape(c, "g=256");
    cr_assert_not_null(s);
    cr_expect_eq(s->verdict, COMPARE_FASTER);
    cr_expect(s->winner_changed);
    cr_expect_eq(point_int(&s->best_base->values, "chunk", -1), 64);
    cr_expect_eq(point_int(&s->best_new->values, "chunk", -1), 32);
    cr_expect_float_eq(s->old_winner_loss, 6.18 / 5.9 - 1, 1e-9, "BASE's winner in NEW's numbers");
    cr_expect(s->loss_significant);

    s = find_shape(c, "g=1024");
    cr_assert_not_null(s);
    cr_expect_eq(s->verdict, COMPARE_REGRESSION);
    cr_expect_float_eq(s->change, 0.30, 1e-9);
    cr_expect_not(s->winner_changed);
    cr_expect_float_eq(s->old_winner_loss, 0, 1e-12);
    compare_free(c);
}

Test(compare_mini, heuristic_drift)
{
    compare *c = load(MINI "/base", MINI "/new", NULL);
    /* no heuristics.json: every integer parameter that varies, here chunk */
    cr_assert_eq(compare_n_heuristics(c), 1);
    const compare_heuristic *h = compare_heuristic_at(c, 0);
    cr_expect_str_eq(h->param, "chunk");
    cr_expect_str_eq(h->base_rule, "64");
    cr_expect_float_eq(h->base_eff, 1.0, 1e-12);
    /* 64 on NEW: 5.9 / 6.18 at g=256, 1 at g=1024 */
    cr_expect_float_eq(h->base_eff_new, sqrt(5.9 / 6.18), 1e-9);
    cr_expect(h->changed, "NEW's best chunk depends on g: %s", h->new_rule);
    cr_expect_not(h->regression, "97.7 %% is within 5 %% of 100 %%");
    cr_expect_eq(h->note[0], '\0', "%s", h->note);
    compare_free(c);

    /* with a 1 % threshold the old rule's loss is a regression */
    compare_options opt;
    compare_options_init(&opt);
    opt.threshold = 0.01;
    c = load(MINI "/base", MINI "/new", &opt);
    cr_expect(compare_heuristic_at(c, 0)->regression);
    cr_expect_eq(compare_get_counts(c)->heuristic_regressions, 1);
    compare_free(c);
}

Test(compare_mini, threshold)
{
    compare_options opt;
    compare_options_init(&opt);
    opt.threshold = 0.25; /* the slice's +20 % is now within the threshold, the +30 % not */
    compare *c = load(MINI "/base", MINI "/new", &opt);
    expect_verdict(c, "g=256 slice", COMPARE_SLOWER);
    expect_verdict(c, "g=1024 custom chunk=64", COMPARE_REGRESSION);
    cr_expect_eq(compare_n_regressions(c), 3);
    compare_free(c);

    opt.threshold = 0.35; /* no slowdown is a regression; the broken configuration still is */
    c = load(MINI "/base", MINI "/new", &opt);
    expect_verdict(c, "g=1024 custom chunk=64", COMPARE_SLOWER);
    cr_expect_eq(compare_n_regressions(c), 1);
    expect_verdict(c, "g=1024 custom chunk=32", COMPARE_BROKEN);
    compare_free(c);
}

Test(compare_mini, self_is_clean)
{
    compare *c = load(MINI "/base", MINI "/base", NULL);
    const compare_counts *k = compare_get_counts(c);
    cr_expect_eq(compare_n_regressions(c), 0);
    cr_expect_eq(k->configs[COMPARE_SAME], 9);
    cr_expect_eq(k->configs[COMPARE_UNKNOWN], 1);
    cr_expect_eq(k->configs[COMPARE_FAILING], 2);
    cr_expect_eq(k->winners_changed, 0);
    compare_free(c);
}

Test(compare_mini, markdown_and_json)
{
    compare *c = load(MINI "/base", MINI "/new", NULL);
    char *md = markdown(c);
    expect_contains(md, "**4 regressions**");
    expect_contains(md, "Every shape has k=64, n=128, dtype=float16.\n");
    expect_contains(md, "### Regressions (3)\n");
    expect_contains(md,
                    "| g=1024 custom chunk=64 | 20.00 us | 26.00 us | +30.0 % | 1.0 % | 1.0 % |\n");
    expect_contains(md, "| g=256 slice | 12.00 us | 14.40 us | +20.0 % | 1.0 % | 1.0 % |\n");
    expect_contains(md, "| g=1024 custom chunk=32 | 25.00 us | invalid: normalised error 0.5");
    expect_contains(md, "| g=1024 custom chunk=128 | timeout: no progress for 20 s | crashed: "
                        "illegal address |");
    expect_contains(md, "| g=256 | 6.00 us | 5.90 us | -1.7 % | faster | chunk=64 | chunk=32 | "
                        "+4.7 % |\n");
    expect_contains(md, "| chunk | `64` |");
    expect_contains(md, "Measured more than once (the last row kept): 0 in BASE, 1 in NEW.");
    free(md);

    cr_assert_eq(compare_write_files(c, tmpdir, NULL), TUNE_OK);
    char path[256];
    snprintf(path, sizeof path, "%s/compare.json", tmpdir);
    json_t *j = json_load_file(path, 0, NULL);
    cr_assert_not_null(j);
    cr_expect(json_is_true(json_object_get(j, "regression")));
    cr_expect_eq(json_integer_value(json_object_get(j, "regressions")), 4);
    cr_expect_eq(json_array_size(json_object_get(j, "configs")), 13);
    json_t *counts = json_object_get(json_object_get(j, "counts"), "configs");
    cr_expect_eq(json_integer_value(json_object_get(counts, "broken")), 1);
    size_t i;
    json_t *cfg;
    int found = 0;
    json_array_foreach(json_object_get(j, "configs"), i, cfg)
    {
        if (strcmp(json_string_value(json_object_get(cfg, "verdict")), "broken") != 0)
            continue;
        found = 1;
        cr_expect_eq(json_integer_value(json_object_get(json_object_get(cfg, "shape"), "g")), 1024);
        cr_expect_eq(json_integer_value(json_object_get(json_object_get(cfg, "params"), "chunk")),
                     32);
        cr_expect_str_eq(json_string_value(json_object_get(cfg, "status_new")), "invalid");
        cr_expect(json_is_null(json_object_get(cfg, "time_new_us")));
    }
    cr_expect(found);
    json_t *shape = json_array_get(json_object_get(j, "shapes"), 0);
    cr_expect(json_is_true(json_object_get(shape, "winner_changed")));
    json_t *h = json_array_get(json_object_get(j, "heuristics"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(h, "base_rule")), "64");
    json_decref(j);
    snprintf(path, sizeof path, "%s/compare.md", tmpdir);
    FILE *f = fopen(path, "r");
    cr_expect_not_null(f);
    if (f)
        fclose(f);
    compare_free(c);
}

/* Compile-only runs (status compiled, nothing timed), the second with other kernel sources: a
 * configuration that compiled and no longer does is broken. */
Test(compare_mini, compile_only_runs)
{
    compare *c = load(MINI "/compiled_base", MINI "/compiled_new", NULL);
    cr_expect_eq(compare_env_refused(c), 1);
    char buf[512];
    cr_expect_str_eq(compare_env_text(c, 1, buf, sizeof buf),
                     "kernel sources (hash) (e08eeb70892565f1 vs 0123456789abcdef)");
    for (size_t i = 0; i < compare_n_env(c); i++) {
        const compare_env_item *it = compare_env_at(c, i);
        if (strcmp(it->key, "nvrtc") == 0 || strcmp(it->key, "arch") == 0)
            cr_expect_str_eq(it->base_value, strcmp(it->key, "arch") ? "13000" : "sm_90",
                             "read from meta.json's key");
    }
    expect_verdict(c, "g=256 k=64 n=128 dtype=float16 custom chunk=16", COMPARE_SAME);
    expect_verdict(c, "g=256 k=64 n=128 dtype=float16 custom chunk=32", COMPARE_BROKEN);
    expect_verdict(c, "g=256 k=64 n=128 dtype=float16 custom chunk=64", COMPARE_FIXED);
    cr_expect_eq(compare_n_regressions(c), 1);
    cr_expect_eq(compare_n_shapes(c), 1);
    cr_expect_eq(compare_shape_at(c, 0)->verdict, COMPARE_FAILING, "no timed row in either run");
    cr_expect_eq(compare_n_heuristics(c), 0, "nothing ran ok: no rule to fit");
    compare_free(c);
}

/* ---- the environment ---- */

Test(compare_mini, mismatch_refused)
{
    compare *c = load(MINI "/base", MINI "/other_gpu", NULL);
    cr_expect_eq(compare_env_refused(c), 2);
    char buf[1024];
    cr_expect_str_eq(
        compare_env_text(c, 1, buf, sizeof buf),
        "GPU (NVIDIA H200 vs NVIDIA H100 80GB HBM3), driver (580.159.04 vs 575.57.08)");
    for (size_t i = 0; i < compare_n_env(c); i++) {
        const compare_env_item *it = compare_env_at(c, i);
        int should = strcmp(it->key, "gpu") == 0 || strcmp(it->key, "driver") == 0;
        cr_expect_eq(it->differs, should, "%s: %s vs %s", it->key, it->base_value, it->new_value);
    }
    compare_free(c);

    compare_options opt;
    compare_options_init(&opt);
    const char *gpu_only[] = {"gpu"};
    opt.allow = gpu_only;
    opt.n_allow = 1;
    c = load(MINI "/base", MINI "/other_gpu", &opt);
    cr_expect_eq(compare_env_refused(c), 1);
    cr_expect_str_eq(compare_env_text(c, 1, buf, sizeof buf), "driver (580.159.04 vs 575.57.08)");
    compare_free(c);

    opt.allow = NULL;
    opt.n_allow = 0;
    opt.allow_all = 1;
    c = load(MINI "/base", MINI "/other_gpu", &opt);
    cr_expect_eq(compare_env_refused(c), 0);
    cr_expect_eq(compare_get_counts(c)->env_differences, 2);
    cr_expect_eq(compare_n_regressions(c), 0, "the same rows");
    char *md = markdown(c);
    expect_contains(md, "**The runs differ in 2 checked keys** (allowed with --allow-mismatch).");
    expect_contains(md, "| GPU | NVIDIA H200 | NVIDIA H100 80GB HBM3 | **differs** (allowed) |\n");
    expect_contains(md, "| driver | 580.159.04 | 575.57.08 | **differs** (allowed) |\n");
    free(md);
    compare_free(c);
}

Test(compare_mini, several_folders_per_side)
{
    /* two folders on one side: the values of each key are joined */
    const char *base[] = {MINI "/base"}, *now[] = {MINI "/new", MINI "/other_gpu"};
    compare_options opt;
    compare_options_init(&opt);
    opt.allow_all = 1;
    tune_error err = {0};
    compare *c = compare_dirs(base, 1, now, 2, &opt, &err);
    cr_assert_not_null(c, "%s", err.message);
    const compare_env_item *gpu = compare_env_at(c, 0);
    cr_expect_str_eq(gpu->key, "gpu");
    cr_expect_str_eq(gpu->new_value, "NVIDIA H200, NVIDIA H100 80GB HBM3");
    /* other_gpu's rows come later and replace NEW's: BASE's rows again, nothing changed */
    cr_expect_eq(compare_get_counts(c)->duplicates_new, 1 + 11);
    cr_expect_eq(compare_n_regressions(c), 0);
    compare_free(c);
}

Test(compare_mini, errors)
{
    tune_error err = {0};
    const char *base[] = {MINI "/base"}, *missing[] = {MINI "/nope"};
    cr_expect_null(compare_dirs(base, 1, missing, 1, NULL, &err));
    cr_expect_eq(err.code, TUNE_ERR_IO);
    cr_expect_not_null(strstr(err.where, "nope/raw.jsonl"), "%s", err.where);

    tune_error_clear(&err);
    /* the rows of one shape of an H200 run of sweeps/sparq_step1.json */
    const char *sparq[] = {SPARQ}, *step1[] = {"tests/data/runs/sparq_step1_h200"};
    compare_options opt;
    compare_options_init(&opt);
    opt.allow_all = 1;
    cr_expect_null(compare_dirs(sparq, 1, step1, 1, &opt, &err));
    cr_expect_eq(err.code, TUNE_ERR_INVALID);
    cr_expect_not_null(strstr(err.message, "no configuration of NEW matches"), "%s", err.message);

    tune_error_clear(&err);
    const char *nope[] = {"nope"};
    opt.params = nope;
    opt.n_params = 1;
    cr_expect_null(compare_dirs(base, 1, base, 1, &opt, &err));
    cr_expect_not_null(strstr(err.message, "parameter 'nope' is in neither run"), "%s",
                       err.message);

    tune_error_clear(&err);
    compare_options_init(&opt);
    opt.allow = nope;
    opt.n_allow = 1;
    cr_expect_null(compare_dirs(base, 1, base, 1, &opt, &err));
    cr_expect_not_null(strstr(err.message, "'nope' is not an environment key"), "%s", err.message);

    tune_error_clear(&err);
    cr_expect_null(compare_dirs(base, 1, base, 0, NULL, &err));
    cr_expect_eq(err.code, TUNE_ERR_INVALID);
}

/* ---- the committed H200 runs ---- */

TestSuite(compare_h200, .init = make_tmpdir, .fini = remove_tmpdir);

Test(compare_h200, self)
{
    compare *c = load(SPARQ, SPARQ, NULL);
    const compare_counts *k = compare_get_counts(c);
    cr_expect_eq(k->configs[COMPARE_SAME], 1368);
    cr_expect_eq(compare_n_shapes(c), 36);
    cr_expect_eq(k->shapes[COMPARE_SAME], 36);
    cr_expect_eq(k->winners_changed, 0);
    cr_expect_eq(compare_n_regressions(c), 0);
    cr_expect_eq(compare_env_refused(c), 0);
    /* heuristics.json names chunk; the rule fitted on the same data is the same */
    cr_assert_eq(compare_n_heuristics(c), 1);
    const compare_heuristic *h = compare_heuristic_at(c, 0);
    cr_expect_str_eq(h->param, "chunk");
    cr_expect_str_eq(h->base_rule, "128");
    cr_expect_not(h->changed);
    cr_expect_float_eq(h->base_eff, h->base_eff_new, 1e-12);
    compare_free(c);
}

/* Two honest runs of the same sweep on the same H200 (the second killed and resumed): no
 * regression. 17 of the 1368 configurations change beyond both runs' noise, none by more than
 * +4.2 %; the winner changes on 6 shapes, each a tie within the noise. */
Test(compare_h200, honest_rerun)
{
    compare *c = load(SPARQ, SPARQ_RESUMED, NULL);
    const compare_counts *k = compare_get_counts(c);
    cr_expect_eq(compare_env_refused(c), 0);
    cr_expect_eq(compare_get_counts(c)->env_differences, 0);
    cr_expect_eq(compare_n_configs(c), 1368);
    cr_expect_eq(k->configs[COMPARE_ONLY_BASE] + k->configs[COMPARE_ONLY_NEW], 0);
    cr_expect_eq(compare_n_regressions(c), 0);
    cr_expect_eq(k->configs[COMPARE_BROKEN], 0);
    cr_expect_eq(k->configs[COMPARE_FASTER] + k->configs[COMPARE_SLOWER], 17);
    cr_expect_eq(k->configs[COMPARE_SLOWER], 3);
    cr_expect_eq(k->shapes[COMPARE_SAME], 36);
    cr_expect_eq(k->winners_changed, 6);
    cr_expect_eq(k->winner_losses, 0, "every changed winner is a tie within the noise");
    for (size_t i = 0; i < compare_n_configs(c); i++) {
        const compare_config *cfg = compare_config_at(c, i);
        cr_expect(!(cfg->change > 0.05), "+%.1f %%", 100 * cfg->change);
    }
    const compare_heuristic *h = compare_heuristic_at(c, 0);
    cr_assert_not_null(h);
    cr_expect_str_eq(h->base_rule, "128");
    cr_expect_str_eq(h->new_rule, "128");
    cr_expect_not(h->regression);
    compare_free(c);
}

/* The same pair the other way round (the resumed run as BASE): three configurations of one shape
 * are 5.1-6.5 % slower in the first run, beyond both runs' noise and the 5 % threshold. Their
 * samples are bimodal (modes near 25.5 and 27.3 us) and the median sits on a different mode in
 * each run: a genuine run-to-run difference, not a measurement error (docs/compare.md). The
 * shape's best configuration is within the noise. */
Test(compare_h200, honest_rerun_reversed)
{
    compare *c = load(SPARQ_RESUMED, SPARQ, NULL);
    const compare_counts *k = compare_get_counts(c);
    cr_expect_eq(k->configs[COMPARE_REGRESSION], 3);
    cr_expect_eq(k->configs[COMPARE_BROKEN], 0);
    const char *moved[] = {
        "g=1024 k_pre=4096 k=256 custom chunk=32 threads=128 unroll=1 stages=8",
        "g=1024 k_pre=4096 k=256 custom chunk=64 threads=256 unroll=1 stages=0",
        "g=1024 k_pre=4096 k=256 custom chunk=128 threads=256 unroll=1 stages=4",
    };
    for (size_t i = 0; i < 3; i++) {
        expect_verdict(c, moved[i], COMPARE_REGRESSION);
        const compare_config *cfg = find_config(c, moved[i]);
        cr_expect(cfg->change > 0.05 && cfg->change < 0.07, "%g", cfg->change);
    }
    cr_expect_eq(k->shapes[COMPARE_SAME], 36);
    cr_expect_eq(compare_n_regressions(c), 3);
    compare_free(c);
}

/* Scales the time fields of a row (a JSON object) by f; NAN: null, as in a row never timed. */
static void slow_down(json_t *row, double f)
{
    const char *keys[] = {"time_median", "time_mean",   "time_min", "time_max",
                          "time_stdev",  "time_stderr", "time_p10", "time_p90"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(row, keys[i]);
        cr_assert(json_is_number(v), "%s", keys[i]);
        json_object_set_new(row, keys[i],
                            isnan(f) ? json_null() : json_real(json_number_value(v) * f));
    }
    if (isnan(f))
        json_object_set_new(row, "time_n", json_integer(0));
}

static int row_is(const json_t *row, long g, long k_pre, long k, long chunk, long threads,
                  long unroll, long stages)
{
    long want[] = {g, k_pre, k, chunk, threads, unroll, stages};
    const char *keys[] = {"g", "k_pre", "k", "chunk", "threads", "unroll", "stages"};
    if (strcmp(json_string_value(json_object_get(row, "method")), "custom") != 0)
        return 0;
    for (size_t i = 0; i < 7; i++)
        if (json_integer_value(json_object_get(row, keys[i])) != want[i])
            return 0;
    return 1;
}

/* A copy of the committed run in tmpdir/injected with three configurations slowed by 20 %, one
 * shape's winner slowed by 30 % and one configuration turned invalid. */
static void make_injected(char *dir, size_t size)
{
    snprintf(dir, size, "%s/injected", tmpdir);
    cr_assert_eq(outfile_mkdirs(dir, NULL), TUNE_OK);
    char path[512];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    json_t *meta = json_load_file(SPARQ "/meta.json", 0, NULL);
    cr_assert_not_null(meta);
    cr_assert_eq(json_dump_file(meta, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER), 0);
    json_decref(meta);
    char src[512]; /* the committed rows are gzipped: raw.jsonl.gz */
    cr_assert_eq(results_locate(SPARQ, src, sizeof src, NULL), TUNE_OK);
    folder_lines *in = folder_lines_open(src, INFILE_MAX_ROWS, INFILE_MAX_JSON, NULL);
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    FILE *out = fopen(path, "w");
    cr_assert(in && out, "%s", src);
    char *line = NULL;
    int hits[5] = {0};
    while (folder_lines_next(in, &line, NULL, NULL, NULL) == TUNE_OK && line) {
        json_t *row = json_loads(line, 0, NULL);
        cr_assert_not_null(row);
        if (row_is(row, 256, 1024, 64, 1, 256, 1, 0) && ++hits[0])
            slow_down(row, 1.2);
        if (row_is(row, 4096, 1024, 128, 64, 128, 1, 0) && ++hits[1])
            slow_down(row, 1.2);
        if (row_is(row, 4096, 4096, 64, 8, 256, 1, 0) && ++hits[2])
            slow_down(row, 1.2);
        if (row_is(row, 1024, 4096, 512, 128, 128, 1, 4) && ++hits[3])
            slow_down(row, 1.3); /* the winner of that shape */
        if (row_is(row, 4096, 16384, 512, 128, 128, 1, 0) && ++hits[4]) {
            json_object_set_new(row, "status", json_string("invalid"));
            json_object_set_new(row, "reason", json_string("normalised error 0.31 > 0.002"));
            slow_down(row, NAN); /* never timed */
        }
        char *text = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
        fprintf(out, "%s\n", text);
        free(text);
        json_decref(row);
    }
    folder_lines_close(in);
    fclose(out);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(hits[i], 1, "injection %d matched %d rows", i, hits[i]);
}

Test(compare_h200, injected_regression)
{
    char dir[256];
    make_injected(dir, sizeof dir);
    compare *c = load(SPARQ, dir, NULL);
    const char *slowed[] = {
        "g=256 k_pre=1024 k=64 custom chunk=1 threads=256 unroll=1 stages=0",
        "g=4096 k_pre=1024 k=128 custom chunk=64 threads=128 unroll=1 stages=0",
        "g=4096 k_pre=4096 k=64 custom chunk=8 threads=256 unroll=1 stages=0",
        "g=1024 k_pre=4096 k=512 custom chunk=128 threads=128 unroll=1 stages=4",
    };
    for (size_t i = 0; i < 4; i++)
        expect_verdict(c, slowed[i], COMPARE_REGRESSION);
    expect_verdict(c, "g=4096 k_pre=16384 k=512 custom chunk=128 threads=128 unroll=1 stages=0",
                   COMPARE_BROKEN);
    const compare_counts *k = compare_get_counts(c);
    cr_expect_eq(k->configs[COMPARE_REGRESSION], 4, "nothing else flagged");
    cr_expect_eq(k->configs[COMPARE_BROKEN], 1);
    cr_expect_eq(k->configs[COMPARE_SAME], 1368 - 5);
    cr_expect_eq(compare_n_regressions(c), 5);

    /* the slowed winner: another configuration wins, the old one loses 30 % in NEW's numbers;
     * the shape's best time is the runner-up's, within the noise */
    const compare_shape *s = find_shape(c, "g=1024 k_pre=4096 k=512");
    cr_assert_not_null(s);
    cr_expect(s->winner_changed);
    cr_expect(s->loss_significant);
    cr_expect(s->old_winner_loss > 0.25 && s->old_winner_loss < 0.31, "%g", s->old_winner_loss);
    cr_expect_eq(s->verdict, COMPARE_SAME);
    cr_expect_eq(k->winners_changed, 1);

    char *md = markdown(c);
    expect_contains(md, "**5 regressions**: 4 configurations slower by more than 5.0 %, 1 that "
                        "ran ok in BASE and failed in NEW, 0 shapes, 0 heuristics.");
    expect_contains(md, "| g=1024 k_pre=4096 k=512 custom chunk=128 threads=128 unroll=1 stages=4 "
                        "| 37.39 us | 48.61 us | +30.0 % |");
    expect_contains(md, "| g=4096 k_pre=16384 k=512 custom chunk=128 threads=128 unroll=1 "
                        "stages=0 | 144.43 us | invalid: normalised error 0.31 > 0.002 |");
    free(md);
    compare_free(c);
}

/* A copy of the mini NEW run (tests/data/compare/new) made a searched one: its meta.json gets a
 * search block and another kernels hash (a searched run hashes compile keys, not cubins). */
static void make_searched_new(char *dir, size_t size)
{
    snprintf(dir, size, "%s/searched", tmpdir);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp -r " MINI "/new %s", dir);
    cr_assert_eq(system(cmd), 0);
    json_t *m = meta_load(dir, NULL);
    cr_assert_not_null(m);
    json_object_set_new(json_object_get(m, "key"), "kernels_hash", json_string("00000000deadbeef"));
    json_object_set_new(json_object_get(m, "key"), "search",
                        json_string("random budget=50% seed=7 batch=0"));
    meta_search ms = {.strategy = "random", .budget = "50%", .seed = 7, .finished = 1};
    json_object_set_new(m, "search", meta_search_json(&ms));
    tune_error err = {0};
    cr_assert_eq(meta_write(dir, m, &err), TUNE_OK, "%s", err.message);
    json_decref(m);
}

/* A searched NEW: configurations measured in one run only are counted, not listed as
 * mismatches; the kernels' hashes (cubins vs compile keys) are not checked between a searched
 * and an exhaustive run; the verdicts of the configurations both measured are unchanged. */
Test(compare_mini, searched_run)
{
    char dir[256];
    make_searched_new(dir, sizeof dir);
    compare *plain = load(MINI "/base", MINI "/new", NULL);
    compare *c = load(MINI "/base", dir, NULL);
    cr_expect_null(compare_search(c, 0));
    cr_expect_str_eq(compare_search(c, 1), "random, budget 50%, seed 7, batch default");
    cr_expect_eq(compare_env_refused(c), 0, "the kernels' hash is not compared");
    cr_expect_eq(compare_n_regressions(c), compare_n_regressions(plain));
    cr_expect_eq(compare_get_counts(c)->configs[COMPARE_ONLY_NEW], 1);
    cr_expect_eq(compare_get_counts(c)->configs[COMPARE_ONLY_BASE], 1);
    expect_verdict(c, "g=1024 custom chunk=64", COMPARE_REGRESSION);
    char *md = markdown(c), *md_plain = markdown(plain);
    expect_contains(md, "Searched runs (BASE: exhaustive; NEW: random, budget 50%, seed 7, batch "
                        "default): a configuration measured in one run only is no mismatch");
    expect_contains(md_plain, "| g=256 custom chunk=2 |");
    cr_expect_null(strstr(md, "| g=256 custom chunk=2 |"), "only in NEW, not listed:\n%s", md);
    cr_expect_null(strstr(md, "| g=256 custom chunk=4 |"), "only in BASE, not listed:\n%s", md);
    free(md);
    free(md_plain);
    /* both searched: the kernels' hashes are compared again */
    compare *both = load(dir, dir, NULL);
    cr_expect_eq(compare_env_refused(both), 0);
    compare_free(both);
    compare_free(c);
    compare_free(plain);
}

/* A family that gained a knob since BASE ran: "gained" (default 0), beside "chunk". */
static const family_axis gained_params[] = {
    {"chunk", FAMILY_AXIS_INT, 1, 1024, NULL, "1", "rows per block"},
    {"gained", FAMILY_AXIS_INT, 0, 8, NULL, "0", "a knob added after BASE ran"},
};
static const tune_family gained_family = {.name = "gather_matmul",
                                          .params = gained_params,
                                          .n_params = 2};
static const tune_family *find_gained(const char *name)
{
    return strcmp(name, "gather_matmul") == 0 ? &gained_family : NULL;
}

/* A copy of the mini run MINI/side as tmpdir/side-knob with the parameter `knob` in every row's
 * parameters: value in every tuned row, but other at chunk = at. */
static void make_knob_run(const char *side, const char *knob, long value, long at, long other,
                          char *dir, size_t size)
{
    snprintf(dir, size, "%s/%s-%s", tmpdir, side, knob);
    cr_assert_eq(outfile_mkdirs(dir, NULL), TUNE_OK);
    char path[512];
    snprintf(path, sizeof path, "%s/%s/meta.json", MINI, side);
    json_t *meta = json_load_file(path, 0, NULL);
    cr_assert_not_null(meta);
    snprintf(path, sizeof path, "%s/meta.json", dir);
    cr_assert_eq(json_dump_file(meta, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER), 0);
    json_decref(meta);
    snprintf(path, sizeof path, "%s/%s/raw.jsonl", MINI, side);
    FILE *in = fopen(path, "r");
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    FILE *out = fopen(path, "w");
    cr_assert(in && out);
    char line[8192];
    while (fgets(line, sizeof line, in)) {
        json_t *row = json_loads(line, 0, NULL);
        cr_assert_not_null(row);
        if (strcmp(json_string_value(json_object_get(row, "method")), "custom") == 0) {
            long chunk = (long)json_integer_value(json_object_get(row, "chunk"));
            json_object_set_new(row, knob, json_integer(chunk == at ? other : value));
        }
        json_array_append_new(json_object_get(row, "params"), json_string(knob));
        char *text = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
        fprintf(out, "%s\n", text);
        free(text);
        json_decref(row);
    }
    fclose(in);
    fclose(out);
}

/* With the family registry, BASE's rows (which lack the knob) match NEW's rows that ran its
 * default; NEW's row with another value stays NEW's alone. Without it, no tuned row matches. */
Test(compare_mini, a_knob_added_since_base_ran)
{
    char dir[512];
    make_knob_run("new", "gained", 0, 2, 1, dir, sizeof dir); /* "gained": 1 at chunk=2 */
    compare_options opt;
    compare_options_init(&opt);
    opt.find_family = find_gained;
    compare *c = load(MINI "/base", dir, &opt);
    cr_expect_eq(compare_n_configs(c), 13, "as against the mini NEW itself");
    /* a matched configuration is named after BASE's row */
    expect_verdict(c, "g=256 custom chunk=16", COMPARE_SAME);
    expect_verdict(c, "g=1024 custom chunk=64", COMPARE_REGRESSION);
    const compare_config *m = find_config(c, "g=256 custom chunk=32");
    cr_assert(m && m->base_row && m->new_row);
    cr_expect_eq(point_int(&m->new_row->values, "gained", -1), 0);
    expect_verdict(c, "g=256 custom chunk=2 gained=1", COMPARE_ONLY_NEW);
    expect_verdict(c, "g=256 slice", COMPARE_REGRESSION);
    compare_free(c);
    opt.find_family = NULL;
    c = load(MINI "/base", dir, &opt);
    const compare_counts *k = compare_get_counts(c);
    cr_expect_eq(k->configs[COMPARE_ONLY_BASE], 10, "every tuned row of BASE");
    compare_free(c);
}

/* A knob the family lost since BASE ran ("retired", not one of gained_family's): BASE's rows carry
 * it with one value, so it never told two of BASE's configurations apart and the keys leave it out:
 * BASE matches the mini NEW configuration by configuration. A BASE that varied it keeps it in the
 * keys (which value the family runs today is unknown): none of its tuned rows matches. */
Test(compare_mini, a_knob_removed_since_base_ran)
{
    char dir[512];
    compare_options opt;
    compare_options_init(&opt);
    opt.find_family = find_gained;
    make_knob_run("base", "retired", 7, 0, 7, dir, sizeof dir);
    compare *c = load(dir, MINI "/new", &opt);
    cr_expect_eq(compare_n_configs(c), 13, "as the mini BASE against the mini NEW");
    expect_verdict(c, "g=256 custom chunk=16", COMPARE_SAME);
    expect_verdict(c, "g=1024 custom chunk=64", COMPARE_REGRESSION);
    expect_verdict(c, "g=256 custom chunk=2", COMPARE_ONLY_NEW);
    compare_free(c);
    make_knob_run("base", "retired", 7, 16, 8, dir, sizeof dir);
    c = load(dir, MINI "/new", &opt);
    const compare_counts *k = compare_get_counts(c);
    cr_expect_eq(k->configs[COMPARE_ONLY_BASE], 10, "every tuned row of BASE");
    compare_free(c);
}

/* A copy of the mini run src as dir with energy per call on its rows: watts x the median time,
 * times factor for the row of (g, chunk), none on the rows of drop_chunk (0: none dropped). */
static void make_energy_run(const char *src, const char *dir, double watts, long g, long chunk,
                            double factor, long drop_chunk)
{
    char cmd[700], path[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s && cp -r %s %s", dir, src, dir);
    cr_assert_eq(system(cmd), 0);
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    char *text = tune_read_file(path, NULL, NULL);
    cr_assert_not_null(text);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *row = json_loads(line, 0, NULL);
        cr_assert_not_null(row);
        double t = json_number_value(json_object_get(row, "time_median"));
        long rg = (long)json_integer_value(json_object_get(row, "g"));
        long rc = (long)json_integer_value(json_object_get(row, "chunk"));
        double e = watts * t * (rg == g && rc == chunk ? factor : 1.0);
        if (e > 0 && !(drop_chunk && rc == drop_chunk))
            json_object_set_new(row, "energy_j", json_real(e));
        char *out = json_dumps(row, JSON_PRESERVE_ORDER | JSON_COMPACT);
        fprintf(f, "%s\n", out);
        free(out);
        json_decref(row);
    }
    fclose(f);
    free(text);
}

/* Ranked by energy, a change is one of energy: g=1024 chunk=64 (+30 % in time, the same energy)
 * is no regression and its shape the same, g=256 chunk=32 (faster, +20 % of energy) is one;
 * edp multiplies both (+30 %). Time, on the same folders, keeps its verdicts. */
Test(compare_mini, objective_energy_and_edp)
{
    char base[300], now[300];
    snprintf(base, sizeof base, "%s/energy_base", tmpdir);
    snprintf(now, sizeof now, "%s/energy_new", tmpdir);
    make_energy_run(MINI "/base", base, 100, 0, 0, 1, 0);
    make_energy_run(MINI "/new", now, 100, 1024, 64, 1 / 1.3, 0);
    compare *t = load(base, now, NULL);
    expect_verdict(t, "g=1024 custom chunk=64", COMPARE_REGRESSION);
    cr_expect_eq(find_shape(t, "g=1024")->verdict, COMPARE_REGRESSION);
    compare_free(t);
    compare_options opt;
    compare_options_init(&opt);
    opt.objective = OBJECTIVE_ENERGY;
    compare *e = load(base, now, &opt);
    cr_expect_eq(compare_objective(e), OBJECTIVE_ENERGY);
    expect_verdict(e, "g=1024 custom chunk=64", COMPARE_SAME);
    cr_expect_eq(find_shape(e, "g=1024")->verdict, COMPARE_SAME);
    expect_verdict(e, "g=256 slice", COMPARE_REGRESSION); /* +20 % in both */
    char *md = markdown(e);
    expect_contains(md, "- objective: energy (J per call)");
    expect_contains(md, "| g=1024 | 2000.00 uJ | 2000.00 uJ | -0.0 % | same |");
    expect_contains(md, "A change counts only when |NEW - BASE| / BASE of the energies per call "
                        "exceeds");
    free(md);
    json_t *j = compare_to_json(e);
    cr_expect_str_eq(json_string_value(json_object_get(j, "objective")), "energy");
    json_decref(j);
    compare_free(e);

    make_energy_run(MINI "/new", now, 100, 256, 32, 1.2 * 6.3 / 5.9, 0); /* 6.3 -> 5.9 us */
    e = load(base, now, &opt);
    const compare_config *cfg = find_config(e, "g=256 custom chunk=32");
    cr_assert_not_null(cfg);
    cr_expect_eq(cfg->verdict, COMPARE_REGRESSION);
    cr_expect_float_eq(cfg->change, 0.2, 1e-9);
    compare_free(e);
    opt.objective = OBJECTIVE_EDP; /* time x 5.9 / 6.3, energy x 1.2 */
    e = load(base, now, &opt);
    cfg = find_config(e, "g=256 custom chunk=32");
    cr_assert_not_null(cfg);
    cr_expect_float_eq(cfg->change, 1.2 * 5.9 / 6.3 - 1, 1e-9);
    cr_expect_eq(cfg->verdict, COMPARE_REGRESSION);
    compare_free(e);
}

/* Rows without energy cannot be compared by energy: unknown and counted, said in compare.md; a
 * side with none at all is refused, never compared by time instead. */
Test(compare_mini, objective_energy_without_energy)
{
    char base[300], now[300];
    snprintf(base, sizeof base, "%s/energy_base", tmpdir);
    snprintf(now, sizeof now, "%s/energy_new", tmpdir);
    make_energy_run(MINI "/base", base, 100, 0, 0, 1, 0);
    make_energy_run(MINI "/new", now, 100, 0, 0, 1, 64); /* no energy: both chunk=64 rows */
    compare_options opt;
    compare_options_init(&opt);
    opt.objective = OBJECTIVE_ENERGY;
    compare *c = load(base, now, &opt);
    expect_verdict(c, "g=1024 custom chunk=64", COMPARE_UNKNOWN);
    expect_verdict(c, "g=256 custom chunk=64", COMPARE_UNKNOWN);
    cr_expect_eq(compare_get_counts(c)->unranked_configs, 2);
    char *md = markdown(c);
    expect_contains(md, "2 configurations ok in both runs have no energy per call in one of "
                        "them: they cannot be compared by energy (unknown).");
    free(md);
    compare_free(c);

    tune_error err = {0};
    const char *b = base, *n = MINI "/new";
    cr_expect_null(compare_dirs(&b, 1, &n, 1, &opt, &err));
    expect_contains(err.message, "NEW has no ok row with energy per call (energy_j), so it "
                                 "cannot be compared by energy");
    opt.objective = OBJECTIVE_TIME;
    c = compare_dirs(&b, 1, &n, 1, &opt, &err);
    cr_expect_not_null(c, "by time, energy is not needed");
    compare_free(c);
}
