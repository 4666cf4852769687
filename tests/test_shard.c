/* test_shard.c - sharding (CPU only): --shard parsing, the plan (deterministic, every configuration
 * in exactly one shard, whole shapes, balanced by estimated cost on the shipped sweeps), and
 * merging compile-only shard folders: equal to a single run, and refused when a shard is missing,
 * given twice, incomplete, from another plan or with a configuration twice. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/compile.h"
#include "run/run.h"
#include "model/shard.h"
#include "model/space.h"
#include "model/sweep.h"
#include "util.h"

TestSuite(shard, .timeout = 600);

/* ---- parsing ---- */

typedef struct {
    char text[32];
    char expect[32]; /* part of the message; empty: valid */
    size_t index, count;
} parse_case;

/* Criterion copies the parameters into the test's process: arrays, not pointers */
static parse_case parse_cases[] = {
    {"0/1", "", 0, 1},
    {"3/4", "", 3, 4},
    {"0/4096", "", 0, 4096},
    {"4/4", "counted from 0", 0, 0},
    {"7/3", "the last of 3 is 2/3", 0, 0},
    {"1/0", "must be 1 to 4096", 0, 0},
    {"0/4097", "must be 1 to 4096", 0, 0},
    {"-1/3", "expected I/N", 0, 0},
    {"1", "expected I/N", 0, 0},
    {"1/", "expected I/N", 0, 0},
    {"/3", "expected I/N", 0, 0},
    {"a/b", "expected I/N", 0, 0},
    {"1/3x", "expected I/N", 0, 0},
    {"1 /3", "expected I/N", 0, 0},
    {"", "expected I/N", 0, 0},
    {"99999999999999999999/3", "expected I/N", 0, 0},
};

ParameterizedTestParameters(shard, parse)
{
    return cr_make_param_array(parse_case, parse_cases, sizeof parse_cases / sizeof parse_cases[0]);
}

ParameterizedTest(parse_case *c, shard, parse)
{
    shard_spec s = {99, 99};
    tune_error err = {0};
    tune_status st = shard_parse(c->text, &s, &err);
    if (!c->expect[0]) {
        cr_assert_eq(st, TUNE_OK, "%s: %s", c->text, err.message);
        cr_expect_eq(s.index, c->index);
        cr_expect_eq(s.count, c->count);
    } else {
        cr_assert_eq(st, TUNE_ERR_INVALID, "'%s' should be refused", c->text);
        cr_expect(strstr(err.message, c->expect) != NULL, "'%s': message '%s' lacks '%s'", c->text,
                  err.message, c->expect);
        cr_expect(strstr(err.message, c->text) != NULL, "the message names the value: %s",
                  err.message);
    }
}

/* ---- the plan ---- */

typedef struct {
    sweep *sw;
    space *sp;
} loaded;

static loaded load(const char *path)
{
    tune_error err = {0};
    char buf[4096];
    loaded l = {sweep_load(path, &err), NULL};
    cr_assert_not_null(l.sw, "%s", tune_error_text(&err, buf, sizeof buf));
    l.sp = space_build(l.sw, &err);
    cr_assert_not_null(l.sp, "%s", tune_error_text(&err, buf, sizeof buf));
    return l;
}

static void unload(loaded l)
{
    space_free(l.sp);
    sweep_free(l.sw);
}

static shard_plan *plan(loaded l, size_t n)
{
    tune_error err = {0};
    shard_plan *p = shard_plan_build(l.sw, l.sp, n, &err);
    cr_assert_not_null(p, "%s", err.message);
    return p;
}

static const char *const shipped[] = {"sweeps/sparq.json", "sweeps/sparq_step1.json",
                                      "sweeps/sparq_step2.json"};

Test(shard, deterministic)
{
    for (size_t f = 0; f < 3; f++) {
        for (size_t n = 1; n <= 8; n++) {
            /* two independent loads, as two hosts would do */
            loaded a = load(shipped[f]), b = load(shipped[f]);
            shard_plan *pa = plan(a, n), *pb = plan(b, n);
            cr_assert_str_eq(shard_plan_hash(pa), shard_plan_hash(pb));
            for (size_t i = 0; i < space_n_configs(a.sp); i++)
                cr_assert_eq(shard_plan_owner(pa, i), shard_plan_owner(pb, i),
                             "%s n=%zu config %zu", shipped[f], n, i);
            shard_plan_free(pa);
            shard_plan_free(pb);
            unload(a);
            unload(b);
        }
    }
}

Test(shard, every_config_in_exactly_one_shard_whole_shapes)
{
    for (size_t f = 0; f < 3; f++) {
        loaded l = load(shipped[f]);
        size_t n_configs = space_n_configs(l.sp), n_shapes = space_n_shapes(l.sp);
        size_t *shape_owner = malloc(n_shapes * sizeof *shape_owner);
        for (size_t n = 1; n <= 16; n++) {
            shard_plan *p = plan(l, n);
            cr_assert_eq(shard_plan_count(p), n);
            size_t *count = calloc(n, sizeof *count);
            for (size_t s = 0; s < n_shapes; s++)
                shape_owner[s] = SIZE_MAX;
            for (size_t i = 0; i < n_configs; i++) {
                size_t o = shard_plan_owner(p, i), s = space_config_at(l.sp, i)->shape;
                cr_assert_lt(o, n);
                count[o]++;
                if (shape_owner[s] == SIZE_MAX)
                    shape_owner[s] = o;
                cr_assert_eq(shape_owner[s], o, "%s: shape %zu split over shards", shipped[f], s);
            }
            size_t total = 0;
            double cost = 0;
            for (size_t k = 0; k < n; k++) {
                cr_expect_eq(count[k], shard_plan_n_configs(p, k));
                total += shard_plan_n_configs(p, k);
                cost += shard_plan_cost(p, k);
            }
            cr_expect_eq(total, n_configs);
            cr_expect_float_eq(cost, shard_plan_total_cost(p), 1e-6 * cost);
            cr_expect_eq(shard_plan_owner(p, n_configs), SIZE_MAX);
            free(count);
            shard_plan_free(p);
        }
        free(shape_owner);
        unload(l);
    }
}

/* The plan hash changes with the number of shards and with the sweep. */
Test(shard, hash_names_the_plan)
{
    loaded a = load("sweeps/sparq.json"), b = load("sweeps/sparq_step1.json");
    shard_plan *a2 = plan(a, 2), *a3 = plan(a, 3), *b2 = plan(b, 2);
    cr_expect_str_neq(shard_plan_hash(a2), shard_plan_hash(a3));
    cr_expect_str_neq(shard_plan_hash(a2), shard_plan_hash(b2));
    cr_expect_eq(strlen(shard_plan_hash(a2)), 16);
    shard_plan_free(a2);
    shard_plan_free(a3);
    shard_plan_free(b2);
    unload(a);
    unload(b);
}

/* LPT: no shard exceeds the mean by more than the largest shape; on the shipped sweeps (36-60
 * shapes) every shard is within 5 % of the mean for 2 to 4 shards and within 15 % for 8. */
Test(shard, balanced_by_cost)
{
    for (size_t f = 0; f < 3; f++) {
        loaded l = load(shipped[f]);
        shard_plan *one = plan(l, 1);
        size_t n_shapes = space_n_shapes(l.sp);
        /* cost of each shape = the cost of the one shard it forms alone... bound it through the
         * configurations: the largest shape's cost is at least its configurations' */
        double *shape = calloc(n_shapes, sizeof *shape), largest = 0;
        for (size_t i = 0; i < space_n_configs(l.sp); i++)
            shape[space_config_at(l.sp, i)->shape] += shard_plan_config_cost(one, i);
        for (size_t s = 0; s < n_shapes; s++)
            largest = shape[s] > largest ? shape[s] : largest;
        double total = shard_plan_total_cost(one);
        cr_assert_gt(total, 0);
        for (size_t n = 2; n <= 8; n++) {
            shard_plan *p = plan(l, n);
            double mean = total / (double)n, max = 0, min = total;
            for (size_t k = 0; k < n; k++) {
                max = shard_plan_cost(p, k) > max ? shard_plan_cost(p, k) : max;
                min = shard_plan_cost(p, k) < min ? shard_plan_cost(p, k) : min;
            }
            /* a shape's setup and re-timing come on top of its configurations: 2x is ample */
            cr_expect_leq(max, mean + 2 * largest, "%s n=%zu", shipped[f], n);
            cr_expect_leq(max, mean * (n <= 4 ? 1.05 : 1.15), "%s n=%zu: max %.2f s, mean %.2f s",
                          shipped[f], n, max, mean);
            cr_expect_gt(min, 0, "%s n=%zu: an empty shard", shipped[f], n);
            shard_plan_free(p);
        }
        free(shape);
        shard_plan_free(one);
        unload(l);
    }
}

/* Balanced by cost, not by count: on sparq.json the shard with the large shapes holds fewer
 * configurations (646 and 722 of 1368 in two shards). */
Test(shard, cost_not_count)
{
    loaded l = load("sweeps/sparq.json");
    shard_plan *p = plan(l, 2);
    size_t lo = SIZE_MAX, hi = 0;
    for (size_t k = 0; k < 2; k++) {
        size_t c = shard_plan_n_configs(p, k);
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
    }
    cr_expect_gt(hi, lo, "equal counts: %zu", lo);
    /* a big shape costs more than a small one */
    double small = 0, big = 0;
    for (size_t i = 0; i < space_n_configs(l.sp); i++) {
        const tune_point *s = space_shape(l.sp, space_config_at(l.sp, i)->shape);
        if (point_int(s, "g", 0) == 256 && point_int(s, "k", 0) == 64)
            small += shard_plan_config_cost(p, i);
        if (point_int(s, "g", 0) == 4096 && point_int(s, "k", 0) == 512)
            big += shard_plan_config_cost(p, i);
    }
    cr_expect_gt(big, 3 * small, "big %.3f s, small %.3f s", big, small);
    shard_plan_free(p);
    unload(l);
}

Test(shard, more_shards_than_shapes_leave_some_empty)
{
    loaded l = load("sweeps/testing/faults.json"); /* 2 shapes */
    shard_plan *p = plan(l, 3);
    cr_expect_eq(shard_plan_n_configs(p, 0) + shard_plan_n_configs(p, 1) +
                     shard_plan_n_configs(p, 2),
                 space_n_configs(l.sp));
    cr_expect_eq(shard_plan_n_configs(p, 2), 0);
    cr_expect_eq(shard_plan_cost(p, 2), 0);
    shard_plan_free(p);
    tune_error err = {0};
    cr_expect_null(shard_plan_build(l.sw, l.sp, 0, &err));
    cr_expect_eq(err.code, TUNE_ERR_INVALID);
    unload(l);
}

/* ---- compile-only runs and merge ---- */

/* Fault family (tiny kernels, one of them fails to compile): 4 shapes x 2 faults x 2 blocks. */
static const char small_sweep[] =
    "{\"name\": \"small\", \"family\": \"fault_test\", \"op\": \"scale\","
    " \"problem\": {\"n\": [1000, 3000, 200000, 5000000]},"
    " \"params\": {\"fault\": [\"none\", \"compile_error\"], \"block\": [128, 256]},"
    " \"methods\": [\"custom\"], \"report\": {\"rows\": [\"n\"], \"cols\": []}}";

static char sweep_path[256], cache[256], kernels[4096];

static void run_shard(const char *out, size_t index, size_t count, int resume)
{
    tune_error err = {0};
    char buf[4096];
    sweep *sw = sweep_load(sweep_path, &err);
    cr_assert_not_null(sw, "%s", tune_error_text(&err, buf, sizeof buf));
    run_options opt;
    run_options_init(&opt);
    opt.compile_only = opt.compile_rows = 1;
    opt.quiet = 1;
    opt.cache_dir = cache;
    opt.kernels_dir = kernels;
    opt.out_dir = out;
    opt.shard_index = index;
    opt.shard_count = count;
    opt.resume = resume;
    run_summary sum;
    cr_assert_eq(run_sweep(sw, &opt, &sum, &err), TUNE_OK, "%s",
                 tune_error_text(&err, buf, sizeof buf));
    sweep_free(sw);
}

static void setup_merge(void)
{
    make_tmpdir();
    write_file("small.json", small_sweep, sweep_path, sizeof sweep_path);
    snprintf(cache, sizeof cache, "%s/cache", tmpdir);
    cr_assert_not_null(compile_find_kernels_dir(kernels, sizeof kernels));
}

static const char *path_in(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", tmpdir, name);
    return buf;
}

/* Sorted "identity status" lines of a folder's rows. */
static char **row_set(const char *dir, size_t *n)
{
    char path[512], id[4096];
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    result_row *rows;
    tune_error err = {0};
    cr_assert_eq(results_read(path, &rows, n, &err), TUNE_OK, "%s", err.message);
    char **set = calloc(*n + 1, sizeof *set);
    for (size_t i = 0; i < *n; i++) {
        char line[4200];
        snprintf(line, sizeof line, "%s %s %s", results_row_identity(&rows[i], id, sizeof id),
                 result_status_str(rows[i].status), rows[i].kernel ? rows[i].kernel : "-");
        set[i] = strdup(line);
    }
    results_rows_free(rows, *n);
    qsort(set, *n, sizeof *set, (int (*)(const void *, const void *))strcmp);
    return set;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void expect_same_rows(const char *a, const char *b)
{
    size_t na, nb;
    char **sa = row_set(a, &na), **sb = row_set(b, &nb);
    qsort(sa, na, sizeof *sa, cmp_str);
    qsort(sb, nb, sizeof *sb, cmp_str);
    cr_assert_eq(na, nb, "%s has %zu rows, %s %zu", a, na, b, nb);
    for (size_t i = 0; i < na; i++) {
        cr_expect_str_eq(sa[i], sb[i]);
        free(sa[i]);
        free(sb[i]);
    }
    free(sa);
    free(sb);
}

static tune_status merge(const char *out, const char **dirs, size_t n, tune_error *err)
{
    char o[512];
    merge_options mo = {1, 0, NULL};
    return run_merge(path_in(o, sizeof o, out), dirs, n, &mo, NULL, err);
}

TestSuite(shard_run, .init = setup_merge, .fini = remove_tmpdir, .timeout = 600);

Test(shard_run, merged_shards_equal_a_single_run)
{
    char single[512], d[3][512], m[512];
    run_shard(path_in(single, sizeof single, "single"), 0, 1, 0);
    const char *dirs[3];
    for (size_t i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "s%zu", i);
        dirs[i] = path_in(d[i], sizeof d[i], name);
        run_shard(d[i], i, 3, 0);
    }
    tune_error err = {0};
    cr_assert_eq(merge("merged", dirs, 3, &err), TUNE_OK, "%s", err.message);
    expect_same_rows(single, path_in(m, sizeof m, "merged"));
    size_t n;
    char **set = row_set(m, &n);
    cr_expect_eq(n, 16);
    size_t compiled = 0, errors = 0;
    for (size_t i = 0; i < n; i++) {
        compiled += strstr(set[i], " compiled ") != NULL;
        errors += strstr(set[i], " compile_error ") != NULL;
        free(set[i]);
    }
    free(set);
    cr_expect_eq(compiled, 8);
    cr_expect_eq(errors, 8);
    /* meta.json: merged, with each shard's provenance; the tables are there */
    char path[600];
    snprintf(path, sizeof path, "%s/meta.json", m);
    char *meta = tune_read_file(path, NULL, NULL);
    cr_assert_not_null(meta);
    cr_expect(strstr(meta, "\"merged\": true") != NULL);
    cr_expect(strstr(meta, "\"shards\"") != NULL);
    cr_expect(strstr(meta, "\"compiled\": 8") != NULL, "%s", meta);
    free(meta);
    snprintf(path, sizeof path, "%s/best.md", m);
    cr_expect_eq(access(path, F_OK), 0);
    /* merging again replaces the merged folder's files */
    cr_assert_eq(merge("merged", dirs, 3, &err), TUNE_OK, "%s", err.message);
    expect_same_rows(single, m);
    /* a merged folder is not a shard */
    const char *again[] = {m};
    cr_expect_eq(merge("merged2", again, 1, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "not a shard") != NULL, "%s", err.message);
}

Test(shard_run, missing_and_twice)
{
    char d[3][512];
    const char *dirs[3];
    for (size_t i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "s%zu", i);
        dirs[i] = path_in(d[i], sizeof d[i], name);
        run_shard(d[i], i, 3, 0);
    }
    tune_error err = {0};
    const char *two[] = {dirs[0], dirs[2]};
    cr_expect_eq(merge("m", two, 2, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "missing shards: 1/3") != NULL, "%s", err.message);
    tune_error_clear(&err);
    const char *dup[] = {dirs[0], dirs[1], dirs[2], dirs[1]};
    cr_expect_eq(merge("m", dup, 4, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "shard 1/3 is given twice") != NULL, "%s", err.message);
    tune_error_clear(&err);
    const char *self[] = {dirs[0], dirs[1], dirs[2]};
    merge_options mo = {1, 0, NULL};
    cr_expect_eq(run_merge(dirs[1], self, 3, &mo, NULL, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "is also a shard folder") != NULL, "%s", err.message);
    /* one shard measured with other timing settings */
    char path[600];
    snprintf(path, sizeof path, "%s/meta.json", dirs[2]);
    char *meta = tune_read_file(path, NULL, NULL);
    cr_assert_not_null(meta);
    char *reps = strstr(meta, "\"reps\": 100");
    cr_assert_not_null(reps, "%s", meta);
    reps[9] = '2'; /* 100 -> 120 */
    FILE *f = fopen(path, "w");
    fputs(meta, f);
    fclose(f);
    free(meta);
    tune_error_clear(&err);
    cr_expect_eq(merge("m", self, 3, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "other timing settings") != NULL, "%s", err.message);
}

/* Drops the last k lines of dir/raw.jsonl; returns them (new). */
static char *drop_lines(const char *dir, size_t k)
{
    char path[600];
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    size_t size;
    char *text = tune_read_file(path, &size, NULL);
    cr_assert_not_null(text);
    size_t cut = size;
    for (size_t i = 0; i < k; i++) {
        cr_assert_gt(cut, 0);
        cut--; /* the newline */
        while (cut > 0 && text[cut - 1] != '\n')
            cut--;
    }
    cr_assert_eq(truncate(path, (off_t)cut), 0);
    char *tail = strdup(text + cut);
    free(text);
    return tail;
}

static void append(const char *dir, const char *text)
{
    char path[600];
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    FILE *f = fopen(path, "a");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

/* Cuts a last line left without its newline, as a resume does. */
static void cut_partial(const char *dir)
{
    char path[600];
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    size_t size;
    char *text = tune_read_file(path, &size, NULL);
    cr_assert_not_null(text);
    size_t cut = size;
    while (cut > 0 && text[cut - 1] != '\n')
        cut--;
    cr_assert_eq(truncate(path, (off_t)cut), 0);
    free(text);
}

Test(shard_run, incomplete_duplicated_and_resumed)
{
    char d[2][512], single[512], m[512];
    const char *dirs[2];
    run_shard(path_in(single, sizeof single, "single"), 0, 1, 0);
    for (size_t i = 0; i < 2; i++) {
        char name[16];
        snprintf(name, sizeof name, "s%zu", i);
        dirs[i] = path_in(d[i], sizeof d[i], name);
        run_shard(d[i], i, 2, 0);
    }
    /* an interrupted shard: three rows short, the last of them half written */
    char *tail = drop_lines(dirs[1], 3);
    char half[64];
    snprintf(half, sizeof half, "%.40s", tail);
    append(dirs[1], half);
    tune_error err = {0};
    cr_expect_eq(merge("m", dirs, 2, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "shard 1/2") != NULL, "%s", err.message);
    tune_error_clear(&err);
    cut_partial(dirs[1]);
    cr_expect_eq(merge("m", dirs, 2, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "shard 1/2") && strstr(err.message, "is incomplete: 5 of its 8"),
              "%s", err.message);
    cr_expect(strstr(err.message, "--resume") != NULL, "%s", err.message);
    tune_error_clear(&err);
    /* a configuration twice: shard 0's last row appended to shard 1 */
    char *last = drop_lines(dirs[0], 1);
    append(dirs[0], last);
    append(dirs[1], last);
    cr_expect_eq(merge("m", dirs, 2, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "has two rows") != NULL, "%s", err.message);
    tune_error_clear(&err);
    /* without the intruder, the shard resumed: complete, and equal to the single run */
    free(drop_lines(dirs[1], 1));
    run_shard(dirs[1], 1, 2, 1);
    cr_assert_eq(merge("m", dirs, 2, &err), TUNE_OK, "%s", err.message);
    expect_same_rows(single, path_in(m, sizeof m, "m"));
    free(tail);
    free(last);
}

Test(shard_run, other_plan_and_resume_as_another_shard)
{
    char a[512], b[512], c[512];
    run_shard(path_in(a, sizeof a, "a"), 0, 2, 0);
    run_shard(path_in(b, sizeof b, "b"), 1, 3, 0);
    tune_error err = {0};
    const char *dirs[] = {a, b};
    cr_expect_eq(merge("m", dirs, 2, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "is a shard of 3") != NULL, "%s", err.message);
    /* a shard folder resumes only as the same shard */
    tune_error_clear(&err);
    sweep *sw = sweep_load(sweep_path, &err);
    cr_assert_not_null(sw);
    run_options opt;
    run_options_init(&opt);
    opt.compile_only = opt.compile_rows = 1;
    opt.quiet = 1;
    opt.cache_dir = cache;
    opt.kernels_dir = kernels;
    opt.out_dir = a;
    opt.shard_index = 1;
    opt.shard_count = 2;
    opt.resume = 1;
    run_summary sum;
    cr_expect_eq(run_sweep(sw, &opt, &sum, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "shard") != NULL, "%s", err.message);
    /* an index out of range through the API */
    tune_error_clear(&err);
    opt.out_dir = path_in(c, sizeof c, "c");
    opt.resume = 0;
    opt.shard_index = 2;
    cr_expect_eq(run_sweep(sw, &opt, &sum, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "counted from 0") != NULL, "%s", err.message);
    sweep_free(sw);
}

/* 4 shapes in 5 shards: the last is empty, writes no rows, and merges like the others. */
Test(shard_run, empty_shard)
{
    char single[512], d[5][512];
    const char *dirs[5];
    run_shard(path_in(single, sizeof single, "single"), 0, 1, 0);
    for (size_t i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof name, "s%zu", i);
        dirs[i] = path_in(d[i], sizeof d[i], name);
        run_shard(d[i], i, 5, 0);
    }
    size_t n;
    char **set = row_set(d[4], &n);
    cr_expect_eq(n, 0);
    free(set);
    tune_error err = {0};
    char m[512];
    cr_assert_eq(merge("m", dirs, 5, &err), TUNE_OK, "%s", err.message);
    expect_same_rows(single, path_in(m, sizeof m, "m"));
}

/* --gpus with an explicit list and --compile-only: one coordinator per "GPU" into shards/<i>,
 * merged into the run folder; no GPU needed. */
Test(shard_run, gpus_compile_only)
{
    char single[512], out[512];
    tune_error err = {0};
    char buf[4096];
    sweep *sw = sweep_load(sweep_path, &err);
    cr_assert_not_null(sw);
    run_options opt;
    run_options_init(&opt);
    opt.compile_only = opt.compile_rows = 1;
    opt.quiet = 1;
    opt.cache_dir = cache;
    opt.kernels_dir = kernels;
    opt.out_dir = path_in(out, sizeof out, "multi");
    opt.gpus = "0,1";
    run_summary sum;
    cr_assert_eq(run_sweep(sw, &opt, &sum, &err), TUNE_OK, "%s",
                 tune_error_text(&err, buf, sizeof buf));
    cr_expect_eq(sum.n_configs, 16);
    cr_expect_eq(sum.n_compiled, 8);
    cr_expect_eq(sum.n_compile_error, 8);
    /* after the fork: GNU OpenMP, once used (NVRTC compiles in parallel), does not survive one */
    run_shard(path_in(single, sizeof single, "single"), 0, 1, 0);
    expect_same_rows(single, out);
    char path[600];
    snprintf(path, sizeof path, "%s/shards/1/meta.json", out);
    cr_expect_eq(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/shards/0/log.txt", out);
    cr_expect_eq(access(path, F_OK), 0);
    /* bad lists */
    opt.gpus = "0,0";
    tune_error_clear(&err);
    cr_expect_eq(run_sweep(sw, &opt, &sum, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "listed twice") != NULL, "%s", err.message);
    opt.gpus = "0,x";
    tune_error_clear(&err);
    cr_expect_eq(run_sweep(sw, &opt, &sum, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "expected 'all'") != NULL, "%s", err.message);
    sweep_free(sw);
}
