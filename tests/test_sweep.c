/* test_sweep.c - sweep parsing and validation: unit cases plus the data-driven corpus
 * (every tests/data/valid/ sweep must load; tests/data/invalid/<name>.json must fail with the exact text
 * in <name>.expected). Run from the repository root (ctest does). */
#include <criterion/criterion.h>
#include <sys/stat.h>
#include <unistd.h>
#include <criterion/parameterized.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/point.h"
#include "model/sweep.h"
#include "model/family.h"
#include <jansson.h>

#define MIN_INVALID_CASES 25

static const char *const seed_text =
    "{\n"
    "  \"name\": \"sparq\",\n"
    "  \"family\": \"gather_matmul\",\n"
    "  \"op\": \"gather_inner_matrix_only_bmv\",\n"
    "  \"problem\": { \"g\": [256, 1024, 4096], \"k_pre\": [1024, 4096, 16384],\n"
    "               \"k\": [64, 128, 256, 512], \"n\": [128], \"dtype\": [\"float16\"] },\n"
    "  \"params\":  { \"chunk\": { \"pow2\": [1, 128] } },\n"
    "  \"methods\": [\"custom\", \"gather\", \"slice\"],\n"
    "  \"skip_if\": \"g >= 2048 && k_pre >= 16384\"\n"
    "}\n";

/* New contents of a file (NUL-terminated), trailing newlines removed; NULL if unreadable. */
static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = calloc(1, 65536);
    size_t n = fread(buf, 1, 65535, f);
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    return buf;
}

static const sweep_axis *axis(const sweep_axis *axes, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(axes[i].name, name) == 0)
            return &axes[i];
    return NULL;
}

static void expect_ints(const sweep_axis *a, const int64_t *want, size_t n)
{
    cr_assert_not_null(a);
    cr_assert_eq(a->is_str, 0, "axis %s should hold integers", a->name);
    cr_assert_eq(a->n, n, "axis %s: %zu values, want %zu", a->name, a->n, n);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(a->ints[i], want[i], "axis %s[%zu] = %lld, want %lld", a->name, i,
                     (long long)a->ints[i], (long long)want[i]);
}

/* Error text of parsing text (inline cases). */
static const char *parse_error(const char *text, char *buf, size_t size)
{
    tune_error err = {0};
    sweep *sw = sweep_parse(text, "inline.json", &err);
    cr_assert_null(sw, "expected a parse failure for: %s", text);
    return tune_error_text(&err, buf, size);
}

Test(sweep, seed_values)
{
    tune_error err = {0};
    sweep *sw = sweep_parse(seed_text, "seed.json", &err);
    char buf[4096];
    cr_assert_not_null(sw, "%s", tune_error_text(&err, buf, sizeof buf));
    cr_expect_str_eq(sw->file, "seed.json");
    cr_expect_str_eq(sw->name, "sparq");
    cr_expect_null(sw->description);
    cr_expect_str_eq(sw->family_name, "gather_matmul");
    cr_expect_str_eq(sw->op, "gather_inner_matrix_only_bmv");
    cr_expect_eq(sw->family, family_find("gather_matmul"));
    cr_expect_eq(sw->fop, family_find_op(sw->family, "gather_inner_matrix_only_bmv"));

    const char *order[] = {"g", "k_pre", "k", "n", "dtype", "transpose_B"};
    cr_assert_eq(sw->n_problem, 7);
    for (size_t i = 0; i < 6; i++)
        cr_expect_str_eq(sw->problem[i].name, order[i]);
    expect_ints(&sw->problem[0], (const int64_t[]){256, 1024, 4096}, 3);
    expect_ints(&sw->problem[1], (const int64_t[]){1024, 4096, 16384}, 3);
    expect_ints(&sw->problem[2], (const int64_t[]){64, 128, 256, 512}, 4);
    expect_ints(&sw->problem[3], (const int64_t[]){128}, 1);
    cr_assert(sw->problem[4].is_str);
    cr_assert_eq(sw->problem[4].n, 1);
    cr_expect_str_eq(sw->problem[4].strs[0], "float16");
    expect_ints(&sw->problem[5], (const int64_t[]){0}, 1); /* default false */
    cr_assert(sw->problem[6].is_str);
    cr_expect_str_eq(sw->problem[6].strs[0], "random"); /* default */

    cr_assert_eq(sw->n_params, 7);
    expect_ints(axis(sw->params, 7, "chunk"), (const int64_t[]){1, 2, 4, 8, 16, 32, 64, 128}, 8);
    expect_ints(axis(sw->params, 7, "threads"), (const int64_t[]){256}, 1); /* default */
    expect_ints(axis(sw->params, 7, "unroll"), (const int64_t[]){4}, 1);    /* default */
    expect_ints(axis(sw->params, 7, "full_occupancy"), (const int64_t[]){0}, 1);
    expect_ints(axis(sw->params, 7, "stages"), (const int64_t[]){0}, 1);
    expect_ints(axis(sw->params, 7, "dense"), (const int64_t[]){0}, 1);
    expect_ints(axis(sw->params, 7, "reg_rows"), (const int64_t[]){0}, 1);

    cr_assert_eq(sw->n_methods, 3);
    cr_expect_str_eq(sw->methods[0], "custom");
    cr_expect_str_eq(sw->methods[2], "slice");
    cr_assert_eq(sw->n_skip_if, 1);
    cr_expect_str_eq(sw->skip_if_src[0], "g >= 2048 && k_pre >= 16384");
    cr_expect_str_eq(sw->bytes_src, sw->fop->bytes);
    cr_expect_str_eq(sw->flops_src, sw->fop->flops);
    cr_expect_eq(sw->timing.warmup, 10);
    cr_expect_eq(sw->timing.reps, 100);
    cr_expect_eq(sw->timing.flush_l2, 1);
    cr_expect_eq(sw->timing.fresh_indices, 1);
    cr_expect_eq(sw->n_report_rows, 0);
    cr_expect_eq(sw->n_report_cols, 0);
    sweep_free(sw);
}

Test(sweep, seed_byte_model_evaluates)
{
    sweep *sw = sweep_parse(seed_text, "seed.json", NULL);
    cr_assert_not_null(sw);
    tune_point p = {0};
    point_set_int(&p, "g", 256);
    point_set_int(&p, "k", 64);
    point_set_int(&p, "n", 128);
    point_set_int(&p, "dsize", 2);
    expr_value v;
    cr_assert_eq(expr_eval(sw->bytes, point_lookup, &p, &v, NULL), TUNE_OK);
    cr_expect_eq(v.i, 256 * (2 * 64 + 64 * 128 + 128) * 2);
    cr_assert_eq(expr_eval(sw->flops, point_lookup, &p, &v, NULL), TUNE_OK);
    cr_expect_eq(v.i, 2 * 256 * 64 * 128);
    sweep_free(sw);
}

Test(sweep, ranges_scalars_and_overrides)
{
    tune_error err = {0};
    sweep *sw = sweep_load("tests/data/valid/outer_ranges.json", &err);
    char buf[4096];
    cr_assert_not_null(sw, "%s", tune_error_text(&err, buf, sizeof buf));
    cr_expect_str_eq(sw->name, "outer-ranges.v2");
    expect_ints(axis(sw->problem, sw->n_problem, "g"), (const int64_t[]){32, 64, 96, 128}, 4);
    expect_ints(axis(sw->problem, sw->n_problem, "k"), (const int64_t[]){128}, 1);
    expect_ints(axis(sw->problem, sw->n_problem, "n_pre"),
                (const int64_t[]){1024, 2048, 4096, 8192, 16384, 32768, 65536}, 7);
    expect_ints(axis(sw->problem, sw->n_problem, "transpose_B"), (const int64_t[]){0, 1}, 2);
    expect_ints(axis(sw->params, sw->n_params, "threads"),
                (const int64_t[]){64, 128, 256, 512, 1024}, 5);
    const sweep_axis *dt = axis(sw->problem, sw->n_problem, "dtype");
    cr_assert_eq(dt->n, 3);
    cr_expect_str_eq(dt->strs[2], "float32");
    cr_expect_str_eq(sw->methods[0], "slice");
    cr_expect_eq(sw->n_skip_if, 3);
    cr_expect_str_eq(sw->bytes_src, "g * (k + k * n + 2 * n) * dsize");
    cr_expect_eq(sw->timing.warmup, 0);
    cr_expect_eq(sw->timing.reps, 1);
    cr_expect_eq(sw->timing.flush_l2, 0);
    cr_expect_eq(sw->timing.fresh_indices, 0);
    cr_assert_eq(sw->n_report_rows, 2);
    cr_expect_str_eq(sw->report_rows[1], "dtype");
    cr_assert_eq(sw->n_report_cols, 1);
    cr_expect_str_eq(sw->report_cols[0], "n");
    sweep_free(sw);
}

Test(sweep, scalar_values_and_defaults)
{
    sweep *sw = sweep_load("tests/data/valid/minimal.json", NULL);
    cr_assert_not_null(sw);
    expect_ints(axis(sw->problem, sw->n_problem, "g"), (const int64_t[]){32}, 1);
    expect_ints(axis(sw->params, sw->n_params, "chunk"), (const int64_t[]){64}, 1);
    const sweep_axis *dt = axis(sw->problem, sw->n_problem, "dtype");
    cr_assert_eq(dt->n, 1);
    cr_expect_str_eq(dt->strs[0], "float16");
    cr_expect_eq(sw->n_skip_if, 0);
    sweep_free(sw);
}

Test(sweep, range_is_inclusive_and_stepped)
{
    const char *text = "{\"name\": \"r\", \"family\": \"gather_matmul\", \"op\": \"gather_inner_bmv\","
                       " \"problem\": {\"g\": {\"range\": [1, 10, 4]}, \"k_pre\": {\"range\": [5, 7]},"
                       " \"k\": 1, \"n\": 1}, \"methods\": [\"slice\"]}";
    sweep *sw = sweep_parse(text, "r.json", NULL);
    cr_assert_not_null(sw);
    expect_ints(&sw->problem[0], (const int64_t[]){1, 5, 9}, 3);
    expect_ints(&sw->problem[1], (const int64_t[]){5, 6, 7}, 3);
    sweep_free(sw);
}

Test(sweep, error_codes)
{
    tune_error err = {0};
    cr_expect_null(sweep_parse("{\"name\": ", "x.json", &err));
    cr_expect_eq(err.code, TUNE_ERR_PARSE);
    tune_error_clear(&err);
    cr_expect_null(sweep_parse("{\"name\": \"x\", \"bogus\": 1}", "x.json", &err));
    cr_expect_eq(err.code, TUNE_ERR_INVALID);
    tune_error_clear(&err);
    cr_expect_null(sweep_load("tests/data/no/such/file.json", &err));
    cr_expect_eq(err.code, TUNE_ERR_IO);
    cr_expect_str_eq(err.where, "tests/data/no/such/file.json");
    cr_expect_null(sweep_parse("[", "x.json", NULL)); /* a NULL error record is allowed */
    sweep_free(NULL);
}

Test(sweep, inline_errors_name_the_position)
{
    char buf[4096];
    cr_expect_str_eq(parse_error("{\"name\": \"x\",\n \"family\": 7}", buf, sizeof buf),
                     "inline.json:2:12: $.family: expected a string, got an integer");
    cr_expect_str_eq(parse_error("{\"name\": \"\"}", buf, sizeof buf),
                     "inline.json:1:10: $.name: expected a name matching [A-Za-z0-9_.-]+ other "
                     "than '.' and '..' (it names a folder of the results), got ''");
    cr_expect_str_eq(parse_error("{\"name\": \"x\", \"family\": \"gather_matmul\", \"op\": "
                                 "\"gather_inner_bmv\", \"problem\": {\"g\": {}}}",
                                 buf, sizeof buf),
                     "inline.json:1:85: $.problem.g: expected an object with exactly one of: "
                     "range, pow2");
    cr_expect_str_eq(parse_error("{\"name\": \"x\", \"family\": \"gather_matmul\", \"op\": "
                                 "\"gather_inner_bmv\", \"problem\": {\"g\": 1, \"k_pre\": 1, \"k\": 1, \"n\": 1, "
                                 "\"dtype\": {\"range\": [1, 2]}}}",
                                 buf, sizeof buf),
                     "inline.json:1:125: $.problem.dtype: expected a string or an array of them "
                     "for problem axis 'dtype', got an object");
}

/* ---- data-driven corpus ---- */

typedef struct {
    char *path; /* cr_malloc'd: shared with the test processes */
} corpus_case;

static void corpus_free(struct criterion_test_params *crp)
{
    corpus_case *cases = crp->params;
    for (size_t i = 0; i < crp->length; i++)
        cr_free(cases[i].path);
    cr_free(cases);
}

static struct criterion_test_params corpus_cases(const char *pattern)
{
    glob_t g;
    size_t n = 0;
    if (glob(pattern, 0, NULL, &g) == 0)
        n = g.gl_pathc;
    corpus_case *cases = cr_malloc(sizeof *cases * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        cases[i].path = cr_malloc(strlen(g.gl_pathv[i]) + 1);
        strcpy(cases[i].path, g.gl_pathv[i]);
    }
    if (n)
        globfree(&g);
    return cr_make_param_array(corpus_case, cases, n, corpus_free);
}

ParameterizedTestParameters(corpus, valid) { return corpus_cases("tests/data/valid/*.json"); }

ParameterizedTest(corpus_case *c, corpus, valid)
{
    tune_error err = {0};
    char buf[4096];
    sweep *sw = sweep_load(c->path, &err);
    cr_assert_not_null(sw, "%s: %s", c->path, tune_error_text(&err, buf, sizeof buf));
    cr_expect_eq(sw->n_problem, sw->fop->n_axes);
    cr_expect_eq(sw->n_params, sw->family->n_params);
    cr_expect_gt(sw->n_methods, 0);
    cr_expect_not_null(sw->bytes);
    cr_expect_not_null(sw->flops);
    sweep_free(sw);
}

ParameterizedTestParameters(corpus, invalid) { return corpus_cases("tests/data/invalid/*.json"); }

ParameterizedTest(corpus_case *c, corpus, invalid)
{
    char expected_path[1024], buf[4096];
    size_t len = strlen(c->path) - strlen(".json");
    snprintf(expected_path, sizeof expected_path, "%.*s.expected", (int)len, c->path);
    char *expected = read_text(expected_path);
    cr_assert_not_null(expected, "missing %s", expected_path);
    tune_error err = {0};
    sweep *sw = sweep_load(c->path, &err);
    cr_assert_null(sw, "%s loaded but must fail", c->path);
    cr_expect(err.code == TUNE_ERR_PARSE || err.code == TUNE_ERR_INVALID, "%s: code %s", c->path,
              tune_status_str(err.code));
    cr_expect_str_eq(tune_error_text(&err, buf, sizeof buf), expected, "%s", c->path);
    free(expected);
}

static size_t count_matches(const char *pattern)
{
    glob_t g;
    size_t n = 0;
    if (glob(pattern, 0, NULL, &g) == 0) {
        n = g.gl_pathc;
        globfree(&g);
    }
    return n;
}

Test(corpus, invalid_cases_are_complete)
{
    size_t n_json = count_matches("tests/data/invalid/*.json");
    cr_expect_geq(n_json, MIN_INVALID_CASES, "only %zu invalid cases (run from the repo root)",
                  n_json);
    cr_expect_eq(count_matches("tests/data/invalid/*.expected"), n_json,
                 "every invalid case needs exactly one .expected file");
    cr_expect_geq(count_matches("tests/data/valid/*.json"), 1);
}

/* Every sweep file the repository carries loads: the shipped sweeps, the examples and the
 * correctness and A/B sweeps of sweeps/testing/. */
Test(corpus, shipped_sweeps_load)
{
    static const char *const patterns[] = {"sweeps/*.json", "sweeps/examples/*/*.json",
                                           "sweeps/testing/*.json"};
    for (size_t p = 0; p < sizeof patterns / sizeof *patterns; p++) {
        glob_t g;
        cr_assert_eq(glob(patterns[p], 0, NULL, &g), 0, "no %s (run from the repo root)",
                     patterns[p]);
        for (size_t i = 0; i < g.gl_pathc; i++) {
            tune_error err = {0};
            char buf[4096];
            sweep *sw = sweep_load(g.gl_pathv[i], &err);
            cr_expect_not_null(sw, "%s", tune_error_text(&err, buf, sizeof buf));
            sweep_free(sw);
        }
        globfree(&g);
    }
}

/* ---- timing keys ---- */

static sweep *timing_sweep(const char *timing, tune_error *err)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"name\": \"t\", \"family\": \"gather_matmul\", \"op\": \"gather_inner_bmv\","
             " \"problem\": {\"g\": 1, \"k_pre\": 1, \"k\": 1, \"n\": 1}, \"methods\": [\"slice\"]"
             "%s%s}",
             timing ? ", \"timing\": " : "", timing ? timing : "");
    return sweep_parse(text, "t.json", err);
}

Test(sweep_timing, defaults_are_fixed_cold)
{
    sweep *sw = timing_sweep(NULL, NULL);
    cr_assert_not_null(sw);
    const sweep_timing *t = &sw->timing;
    cr_expect_eq(t->stop, SWEEP_TIMING_STOP_FIXED);
    cr_expect_eq(t->mode, SWEEP_TIMING_MODE_COLD);
    cr_expect_eq(t->warmup, 10);
    cr_expect_eq(t->reps, 100);
    cr_expect_eq(t->flush_l2, 1);
    cr_expect_eq(t->fresh_indices, 1);
    cr_expect_eq(t->batch, 0);
    cr_expect_float_eq(t->rel_stderr, 0.005, 1e-12);
    cr_expect_eq(t->min_reps, 10);
    cr_expect_eq(t->max_reps, 10000);
    cr_expect_float_eq(t->min_time_s, 0.005, 1e-12);
    cr_expect_float_eq(t->max_time_s, 1.0, 1e-12);
    sweep_free(sw);
}

Test(sweep_timing, adaptive_graph_values)
{
    sweep *sw = timing_sweep("{\"stop\": \"adaptive\", \"rel_stderr\": 0.02, \"min_reps\": 5,"
                             " \"max_reps\": 500, \"min_time_s\": 0, \"max_time_s\": 3,"
                             " \"mode\": \"graph\", \"batch\": 64}",
                             NULL);
    cr_assert_not_null(sw);
    const sweep_timing *t = &sw->timing;
    cr_expect_eq(t->stop, SWEEP_TIMING_STOP_ADAPTIVE);
    cr_expect_eq(t->mode, SWEEP_TIMING_MODE_GRAPH);
    cr_expect_eq(t->flush_l2, 0, "graph mode is hot");
    cr_expect_eq(t->batch, 64);
    cr_expect_float_eq(t->rel_stderr, 0.02, 1e-12);
    cr_expect_eq(t->min_reps, 5);
    cr_expect_eq(t->max_reps, 500);
    cr_expect_float_eq(t->min_time_s, 0.0, 1e-12);
    cr_expect_float_eq(t->max_time_s, 3.0, 1e-12);
    sweep_free(sw);
}

Test(sweep_timing, flush_l2_is_the_mode)
{
    static const struct {
        const char *timing;
        sweep_timing_mode mode;
        int flush;
    } cases[] = {
        {"{\"flush_l2\": false}", SWEEP_TIMING_MODE_HOT, 0},
        {"{\"flush_l2\": true}", SWEEP_TIMING_MODE_COLD, 1},
        {"{\"flush_l2\": false, \"mode\": \"hot\"}", SWEEP_TIMING_MODE_HOT, 0},
        {"{\"flush_l2\": false, \"mode\": \"graph\"}", SWEEP_TIMING_MODE_GRAPH, 0},
        {"{\"flush_l2\": true, \"mode\": \"cold\"}", SWEEP_TIMING_MODE_COLD, 1},
        {"{\"mode\": \"hot\"}", SWEEP_TIMING_MODE_HOT, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tune_error err = {0};
        sweep *sw = timing_sweep(cases[i].timing, &err);
        cr_assert_not_null(sw, "%s: %s %s", cases[i].timing, err.where, err.message);
        cr_expect_eq(sw->timing.mode, cases[i].mode, "%s", cases[i].timing);
        cr_expect_eq(sw->timing.flush_l2, cases[i].flush, "%s", cases[i].timing);
        sweep_free(sw);
    }
}

Test(sweep_timing, max_reps_alone_may_not_undercut_min_reps)
{
    tune_error err = {0};
    cr_expect_null(timing_sweep("{\"stop\": \"adaptive\", \"max_reps\": 5}", &err));
    cr_expect_eq(err.code, TUNE_ERR_INVALID);
    cr_expect_str_eq(err.where, "t.json:1:182: $.timing.max_reps");
    cr_expect_str_eq(err.message, "timing.min_reps (10) exceeds timing.max_reps (5)");
}

/* A sweep is a regular file of bounded size: a FIFO is refused at once (it would block the read
 * forever), /dev/zero before it is read (it would fill the memory), and so is a folder. */
Test(sweep, load_refuses_what_is_not_a_regular_file, .timeout = 10)
{
    char fifo[64];
    snprintf(fifo, sizeof fifo, "/tmp/tune-test-sweep-fifo-%d", (int)getpid());
    unlink(fifo);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    const char *paths[] = {fifo, "/dev/zero", "/dev/null", "tests/data"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        tune_error err = {0};
        char buf[4096];
        cr_expect_null(sweep_load(paths[i], &err), "%s loaded", paths[i]);
        cr_expect_str_eq(err.where, paths[i]);
        cr_expect(strstr(tune_error_text(&err, buf, sizeof buf), "not a regular file"), "%s: %s",
                  paths[i], buf);
    }
    unlink(fifo);
}

Test(sweep, load_refuses_a_nul_byte)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/tune-test-sweep-nul-%d.json", (int)getpid());
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fwrite("{\"name\": \"x\"}\0garbage", 1, 22, f);
    fclose(f);
    tune_error err = {0};
    cr_expect_null(sweep_load(path, &err));
    cr_expect(strstr(err.message, "a NUL byte"), "%s", err.message);
    char where[80];
    snprintf(where, sizeof where, "%s:1:14", path);
    cr_expect_str_eq(err.where, where);
    unlink(path);
}

/* Every family says what each method is for: tuned exactly when it uses the parameters, at most
 * one reference; meta.json carries the sweep's methods with their roles. */
Test(sweep, method_roles)
{
    for (const tune_family *const *f = family_all(); *f; f++) {
        size_t refs = 0;
        for (size_t i = 0; i < (*f)->n_methods; i++) {
            const family_method *m = &(*f)->methods[i];
            cr_expect_eq(m->role == FAMILY_ROLE_TUNED, m->tuned != 0, "%s/%s", (*f)->name, m->name);
            refs += m->role == FAMILY_ROLE_REFERENCE;
        }
        cr_expect_leq(refs, 1, "%s: %zu references", (*f)->name, refs);
    }
    tune_error err = {0};
    sweep *sw = sweep_parse("{\"name\": \"r\", \"family\": \"gather_matmul\", \"op\": "
                            "\"gather_inner_bmv\", \"problem\": {\"g\": 1, \"k_pre\": 128, "
                            "\"k\": 16, \"n\": 64}, \"methods\": [\"slice\", \"custom\", "
                            "\"gather\"]}",
                            "r.json", &err);
    cr_assert_not_null(sw, "%s", err.message);
    json_t *j = sweep_methods_json(sw);
    char *text = json_dumps(j, JSON_COMPACT);
    cr_expect_str_eq(text,
                     "{\"slice\":\"baseline\",\"custom\":\"tuned\",\"gather\":\"reference\"}");
    free(text);
    json_decref(j);
    sweep_free(sw);
}

/* ---- search ---- */

/* The seed sweep with a "search" section (NULL: none). */
static sweep *search_sweep(const char *search, tune_error *err)
{
    char text[4096];
    size_t len = strlen(seed_text);
    memcpy(text, seed_text, len - 3); /* up to the last value, before "\n}\n" */
    if (search)
        snprintf(text + len - 3, sizeof text - (len - 3), ",\n  \"search\": %s\n}\n", search);
    else
        snprintf(text + len - 3, sizeof text - (len - 3), "\n}\n");
    return sweep_parse(text, "inline.json", err);
}

Test(sweep_search, absent_is_exhaustive)
{
    tune_error err = {0};
    sweep *sw = search_sweep(NULL, &err);
    cr_assert_not_null(sw, "%s", err.message);
    cr_expect_eq(sw->search.given, 0);
    cr_expect_eq(sw->search.opt.strategy, SEARCH_EXHAUSTIVE);
    cr_expect_eq(sweep_search_on(&sw->search), 0);
    sweep_free(sw);
    sw = search_sweep("{\"strategy\": \"exhaustive\"}", &err);
    cr_assert_not_null(sw, "%s", err.message);
    cr_expect_eq(sw->search.given, 1);
    cr_expect_eq(sweep_search_on(&sw->search), 0, "exhaustive without a budget: every config");
    sweep_free(sw);
}

Test(sweep_search, every_member)
{
    tune_error err = {0};
    sweep *sw = search_sweep("{\"strategy\": \"random\", \"budget\": \"10%\", \"time_limit_s\": 600,"
                             " \"seed\": 7, \"batch\": 4, \"warm_start\": [\"results/a\", \"b\"]}",
                             &err);
    cr_assert_not_null(sw, "%s", err.message);
    const sweep_search *s = &sw->search;
    cr_expect_eq(s->opt.strategy, SEARCH_RANDOM);
    cr_expect_float_eq(s->opt.budget_fraction, 0.10, 1e-12);
    cr_expect_eq(s->opt.budget_count, 0);
    cr_expect_float_eq(s->time_limit_s, 600, 1e-12);
    cr_expect_eq(s->opt.seed, 7);
    cr_expect_eq(s->opt.batch, 4);
    cr_assert_eq(s->n_warm_start, 2);
    cr_expect_str_eq(s->warm_start[0], "results/a");
    cr_expect_str_eq(s->warm_start[1], "b");
    cr_expect_eq(sweep_search_on(s), 1);
    sweep_free(sw);
}

Test(sweep_search, budget_as_count_and_one_warm_start)
{
    tune_error err = {0};
    const char *cases[] = {"{\"strategy\": \"model\", \"budget\": 12, \"warm_start\": \"r\"}",
                           "{\"strategy\": \"model\", \"budget\": \"12\", \"warm_start\": \"r\"}"};
    for (size_t i = 0; i < 2; i++) {
        sweep *sw = search_sweep(cases[i], &err);
        cr_assert_not_null(sw, "%s", err.message);
        cr_expect_eq(sw->search.opt.strategy, SEARCH_MODEL);
        cr_expect_eq(sw->search.opt.budget_count, 12);
        cr_expect_eq(sw->search.opt.budget_fraction, 0);
        cr_expect_eq(sw->search.n_warm_start, 1);
        cr_expect_eq(sw->search.opt.seed, 1, "the default seed");
        sweep_free(sw);
    }
    /* a budget alone makes an exhaustive run a searched one (the first N in order) */
    sweep *sw = search_sweep("{\"budget\": 3, \"time_limit_s\": 0.5}", &err);
    cr_assert_not_null(sw, "%s", err.message);
    cr_expect_eq(sweep_search_on(&sw->search), 1);
    cr_expect_float_eq(sw->search.time_limit_s, 0.5, 1e-12);
    sweep_free(sw);
}

Test(sweep_search, errors_name_the_place)
{
    char buf[4096];
    tune_error err = {0};
    cr_expect_null(search_sweep("{\"strategy\": \"random\", \"budget\": \"-5%\"}", &err));
    cr_expect_str_eq(tune_error_text(&err, buf, sizeof buf),
                     "inline.json:10:46: $.search.budget: expected a count (an integer >= 1) or "
                     "a percentage of the run's candidates in (0, 100] such as \"10%\", each shape's "
                     "with /shape (\"10%/shape\"), got "
                     "'-5%'");
    tune_error_clear(&err);
    cr_expect_null(search_sweep("{\"strategy\": \"random\", \"time_limit_s\": \"10\"}", &err));
    cr_expect(strstr(tune_error_text(&err, buf, sizeof buf), "$.search.time_limit_s: expected a "
                                                             "number of seconds") != NULL,
              "%s", buf);
}

/* The candidates' features: every problem axis and parameter (as a row names them), and the
 * method after the axes. */
Test(sweep_search, features)
{
    tune_error err = {0};
    sweep *sw = search_sweep(NULL, &err);
    cr_assert_not_null(sw, "%s", err.message);
    const char *names[SEARCH_MAX_FEATURES];
    size_t n = sweep_search_features(sw, names);
    cr_assert_eq(n, sw->n_problem + 1 + sw->n_params);
    for (size_t a = 0; a < sw->n_problem; a++)
        cr_expect_str_eq(names[a], sw->problem[a].name);
    cr_expect_str_eq(names[sw->n_problem], "method");
    cr_expect_str_eq(names[sw->n_problem + 1], "chunk");
    sweep_free(sw);
}

/* Derived features: in the order given, each reading the axes, method, parameters and the
 * features before it; they change nothing but the model's inputs (not a searched run by
 * themselves). */
Test(sweep_search, derived_features)
{
    tune_error err = {0};
    char buf[1024];
    sweep *sw = search_sweep("{\"features\": {\"chunks\": \"(k + chunk - 1) / chunk\", "
                             "\"work\": \"chunks * g\", \"gather\": \"method == \\\"gather\\\"\"}}",
                             &err);
    cr_assert_not_null(sw, "%s", tune_error_text(&err, buf, sizeof buf));
    cr_assert_eq(sw->search.n_features, 3);
    cr_expect_str_eq(sw->search.feature_names[0], "chunks");
    cr_expect_str_eq(sw->search.feature_names[1], "work");
    cr_expect_str_eq(sw->search.feature_names[2], "gather");
    cr_expect_str_eq(sw->search.feature_src[1], "chunks * g");
    cr_expect_eq(sweep_search_on(&sw->search), 0, "features alone do not search");
    /* evaluated on a candidate's point as the search does */
    search_options o;
    search_options_init(&o);
    const char *names[SEARCH_MAX_FEATURES];
    search *s = search_new(&o, names, sweep_search_features(sw, names), NULL);
    cr_assert_not_null(s);
    for (size_t i = 0; i < sw->search.n_features; i++)
        cr_assert_eq(search_add_feature(s, sw->search.feature_names[i], sw->search.features[i]), 0);
    cr_expect_eq(search_n_features(s), sw->n_problem + 1 + sw->n_params + 3);
    search_free(s);
    sweep_free(sw);
    /* a later feature may not be read by an earlier one */
    cr_assert_null(search_sweep("{\"features\": {\"work\": \"chunks * g\", \"chunks\": \"k\"}}",
                                &err));
    cr_expect(strstr(tune_error_text(&err, buf, sizeof buf),
                     "$.search.features.work: unknown name 'chunks' in search feature 'work'"),
              "%s", buf);
    err = (tune_error){0};
    cr_assert_null(search_sweep("{\"features\": {\"a\": \"k\", \"b\": \"a\", \"a2\": \"b\", "
                                "\"dtype\": \"k\"}}",
                                &err));
    cr_expect(strstr(tune_error_text(&err, buf, sizeof buf),
                     "feature 'dtype' is already a problem axis, method or parameter"),
              "%s", buf);
    err = (tune_error){0};
    cr_assert_null(search_sweep("{\"features\": {}}", &err));
    cr_expect(strstr(tune_error_text(&err, buf, sizeof buf), "expected 1 to 16 derived features"),
              "%s", buf);
}
