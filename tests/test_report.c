#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/report.h"
#include "core/outfile.h"
#include "store/meta.h"
#include "util_child.h"

#define FIXTURE "tests/data/results/raw.jsonl"

/* The fixture has five shapes (n=128, dtype=float16 throughout), sorted:
 *   0: g=256  k_pre=1024 k=64   best chunk 64 at 8 us; chunk 32 is faster but invalid
 *   1: g=256  k_pre=1024 k=128  custom timed out: no best; baselines ran
 *   2: g=256  k_pre=4096 k=64   best chunk 16; chunk 128 failed to compile
 *   3: g=1024 k_pre=1024 k=64   best chunk 64 at 30 us; slice 69.3 us -> 2.31x
 *   4: g=1024 k_pre=4096 k=128  best chunk 16; slice crashed */
static results_rows fixture;
static report *rep;

static void load_fixture(void)
{
    tune_error err = {0};
    cr_assert_eq(results_read(FIXTURE, &fixture, &err), TUNE_OK, "%s: %s", err.where,
                 err.message);
    rep = report_build(fixture.rows, fixture.n, NULL, &err);
    cr_assert_not_null(rep, "%s", err.message);
}

static void free_fixture(void)
{
    report_free(rep);
    results_rows_free(&fixture);
}

TestSuite(report, .init = load_fixture, .fini = free_fixture);

/* Output of a writer as a new string. */
static char *capture(void (*write)(const report *, FILE *), const report *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    write(r, f);
    fclose(f);
    return buf;
}

static void expect_contains(const char *text, const char *needle)
{
    cr_expect_not_null(strstr(text, needle), "missing:\n%s\nin:\n%s", needle, text);
}

Test(report, best_per_shape)
{
    cr_assert_eq(report_n_shapes(rep), 5);
    int64_t chunks[] = {64, -1, 16, 64, 16};
    for (size_t s = 0; s < 5; s++) {
        const result_row *best = report_best(rep, s);
        if (chunks[s] < 0) {
            cr_expect_null(best, "shape %zu", s);
            continue;
        }
        cr_assert_not_null(best, "shape %zu", s);
        cr_expect_eq(best->status, RESULT_OK);
        cr_expect_str_eq(best->method, "custom");
        cr_expect_eq(point_int(&best->values, "chunk", -1), chunks[s], "shape %zu", s);
    }
    cr_expect_eq(point_int(&report_best(rep, 3)->values, "g", -1), 1024);
    cr_expect_null(report_best(rep, 5));
}

Test(report, invalid_never_wins)
{
    const result_row *best = report_best(rep, 0);
    cr_assert_not_null(best);
    cr_expect_float_eq(best->time.median, 8e-6, 1e-15);
    /* The invalid row alone: no best at all. */
    size_t invalid = 1;
    cr_assert_eq(fixture.rows[invalid].status, RESULT_INVALID);
    report *r = report_build(&fixture.rows[invalid], 1, NULL, NULL);
    cr_assert_not_null(r);
    cr_expect_eq(report_n_shapes(r), 1);
    cr_expect_null(report_best(r, 0));
    report_free(r);
}

Test(report, markdown_pivots)
{
    char *md = capture(report_write_markdown, rep);
    expect_contains(md, "All shapes have n=128, dtype=float16.\n");
    expect_contains(md, "## Best chunk\n\n"
                        "| g \\ k_pre/k | 1024/64 | 1024/128 | 4096/64 | 4096/128 |\n"
                        "|:------------|--------:|---------:|--------:|---------:|\n"
                        "| 256         |      64 |          |      16 |          |\n"
                        "| 1024        |      64 |          |         |       16 |\n");
    expect_contains(md, "| 256         |    2097 |          |    2517 |          |\n");
    expect_contains(md, "| 1024        |    79.9 |          |         |     63.9 |\n");
    expect_contains(md, "| 256         |    8.00 |          |   10.00 |          |\n");
    expect_contains(md, "## Speedup over slice\n\n");
    expect_contains(md, "| 1024        |   2.31x |          |         |          |\n");
    expect_contains(md, "- g=256, k_pre=1024, k=128, n=128, dtype=float16\n");
    cr_expect_null(strstr(md, "Best method"), "only one tuned method");
    free(md);
}

Test(report, status_counts)
{
    char *md = capture(report_write_markdown, rep);
    expect_contains(md, "| method |  ok | invalid | compile_error | crashed | timeout | total |\n");
    expect_contains(md, "| custom |   8 |       1 |             1 |       0 |       1 |    11 |\n");
    expect_contains(md, "| slice  |   4 |       0 |             0 |       1 |       0 |     5 |\n");
    expect_contains(md, "| total  |  17 |       1 |             1 |       1 |       1 |    21 |\n");
    free(md);

    json_t *j = report_to_json(rep);
    cr_assert_not_null(j);
    json_t *counts = json_object_get(j, "status_counts");
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(counts, "custom"), "ok")), 8);
    cr_expect_eq(
        json_integer_value(json_object_get(json_object_get(counts, "custom"), "compile_error")), 1);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(counts, "slice"), "crashed")),
                 1);
    cr_expect_null(json_object_get(json_object_get(counts, "gather"), "crashed"));
    json_decref(j);
}

Test(report, csv_lines)
{
    char *csv = capture(report_write_csv, rep);
    size_t lines = 0;
    for (const char *c = csv; *c; c++)
        lines += *c == '\n';
    cr_expect_eq(lines, 1 + 5);
    const char *header = "g,k_pre,k,n,dtype,method,chunk,best_time_us,bandwidth_gb_s,pct_read_bw,"
                         "tflop_s,pct_roofline,pct_model,energy_uj,time_us_gather,speedup_gather,time_us_slice,speedup_slice\n";
    cr_expect(strncmp(csv, header, strlen(header)) == 0, "%s", csv);
    expect_contains(csv, "\n256,1024,64,128,float16,custom,64,8,2097.15,49.9322,,,,,20,2.5,16,2\n");
    expect_contains(csv, "\n256,1024,128,128,float16,,,,,,,,,,9,,7,\n");
    expect_contains(csv, "\n1024,4096,128,128,float16,custom,16,50,2684.35,63.9132,,,,,60,1.2,,\n");
    free(csv);
}

Test(report, json_shapes)
{
    json_t *j = report_to_json(rep);
    cr_assert_not_null(j);
    json_t *shapes = json_object_get(j, "shapes");
    cr_assert_eq(json_array_size(shapes), 5);
    json_t *s0 = json_array_get(shapes, 0);
    cr_expect_eq(json_integer_value(json_object_get(s0, "chunk")), 64);
    cr_expect_str_eq(json_string_value(json_object_get(s0, "dtype")), "float16");
    cr_expect_float_eq(json_real_value(json_object_get(s0, "speedup_gather")), 2.5, 1e-9);
    cr_expect(json_is_null(json_object_get(json_array_get(shapes, 1), "best_time_us")));
    cr_expect(json_is_null(json_object_get(json_array_get(shapes, 4), "speedup_slice")));
    cr_expect_eq(json_array_size(json_object_get(j, "baselines")), 2);
    json_decref(j);
}

Test(report, explicit_layout_groups_other_axes)
{
    const char *r_axes[] = {"g"}, *c_axes[] = {"k"};
    report_spec spec = {.rows = r_axes, .n_rows = 1, .cols = c_axes, .n_cols = 1, .title = "sparq"};
    tune_error err = {0};
    report *r = report_build(fixture.rows, fixture.n, &spec, &err);
    cr_assert_not_null(r, "%s", err.message);
    char *md = capture(report_write_markdown, r);
    cr_expect(strncmp(md, "# sparq\n\n", 9) == 0, "%s", md);
    const char *a = strstr(md, "## k_pre=1024\n"), *b = strstr(md, "## k_pre=4096\n");
    cr_assert(a && b && a < b, "%s", md);
    expect_contains(a, "### Best chunk\n\n| g \\ k |  64 | 128 |\n");
    expect_contains(b, "| 256   |  16 |     |\n| 1024  |     |  16 |\n");
    free(md);
    report_free(r);
}

Test(report, bad_spec)
{
    const char *bad[] = {"m"}, *twice[] = {"g"};
    report_spec spec = {.rows = bad, .n_rows = 1};
    tune_error err = {0};
    cr_expect_null(report_build(fixture.rows, fixture.n, &spec, &err));
    cr_expect_eq(err.code, TUNE_ERR_INVALID);
    expect_contains(err.message, "'m'");
    report_spec spec2 = {.rows = twice, .n_rows = 1, .cols = twice, .n_cols = 1};
    tune_error err2 = {0};
    cr_expect_null(report_build(fixture.rows, fixture.n, &spec2, &err2));
    expect_contains(err2.message, "twice");
}

Test(report, write_files)
{
    char dir[] = "/tmp/test_report.XXXXXX", sub[64], path[128];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(sub, sizeof sub, "%s/out/nested", dir);
    tune_error err = {0};
    cr_assert_eq(report_write_files(rep, sub, &err), TUNE_OK, "%s", err.message);
    const char *names[] = {"best.md", "best.csv", "best.json"};
    for (size_t i = 0; i < 3; i++) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", sub, names[i]);
        cr_expect(stat(path, &st) == 0 && st.st_size > 100, "%s", path);
    }
    json_error_t jerr;
    json_t *j = json_load_file(path, 0, &jerr);
    cr_expect_not_null(j, "%s", jerr.text);
    json_decref(j);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    for (int c; (c = fgetc(f)) != EOF;)
        fputc(c, m);
    fclose(f);
    fclose(m);
    return buf;
}

/* Writes the report's files into the folder ctx: the work of a size-limited child. */
static tune_status write_tables(void *ctx, tune_error *err)
{
    return report_write_files(rep, ctx, err);
}

/* A write that fails half-way (a file size limit, as on a full disk) keeps the previous tables
 * whole and names the file it could not write. */
Test(report, failed_write_keeps_previous_files)
{
    char dir[] = "/tmp/test_report.XXXXXX", path[3][128];
    cr_assert_not_null(mkdtemp(dir));
    tune_error err = {0};
    const char *names[] = {"best.md", "best.csv", "best.json"};
    char *before[3];
    for (int i = 0; i < 3; i++) { /* an earlier report's tables */
        snprintf(path[i], sizeof path[i], "%s/%s", dir, names[i]);
        cr_assert_eq(outfile_write(path[i], "earlier\n", 8, &err), TUNE_OK, "%s", err.message);
        before[i] = slurp(path[i]);
    }
    char msg[3000];
    /* a limit that one table passes and another does not: the set is written whole or not at all */
    int failed = 0;
    for (int limit = 64; limit <= (1 << 20); limit *= 2, failed++) {
        int rc = test_run_size_limited(limit, write_tables, dir, msg, sizeof msg);
        if (rc == 0)
            break;
        cr_expect(strstr(msg, ": cannot write: File too large; none of ") != NULL, "%s", msg);
        for (int i = 0; i < 3; i++) {
            char *after = slurp(path[i]);
            cr_expect_str_eq(after, before[i], "%s survives a failed write intact (limit %d)",
                             names[i], limit);
            free(after);
        }
    }
    cr_expect_gt(failed, 1, "the tables' sizes differ: some limits fail one table and not another");
    for (int i = 0; i < 3; i++) {
        free(before[i]);
        char *after = slurp(path[i]);
        cr_expect_neq(strcmp(after, "earlier\n"), 0, "%s: the new table once the limit allows",
                      names[i]);
        free(after);
    }
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

/* Rows made in memory: a string axis that varies, two tuned methods, no baseline. */
static const char *params[] = {"tile"};

static result_row make_row(const char *method, int64_t m, const char *dtype, int64_t tile,
                           result_status status, double us)
{
    result_row r;
    result_row_init(&r);
    r.method = (char *)method;
    point_set_int(&r.values, "m", m);
    point_set_str(&r.values, "dtype", dtype);
    r.n_axes = 2;
    point_set_int(&r.values, "tile", tile);
    r.param_names[0] = params[0];
    r.n_params = 1;
    r.status = status;
    double t[] = {us * 1e-6};
    stats_summarize(t, 1, &r.time);
    return r;
}

Test(report_mem, string_axis_and_two_tuned_methods)
{
    result_row in[] = {
        make_row("a", 1, "float16", 64, RESULT_OK, 5.0),
        make_row("b", 1, "float16", 32, RESULT_OK, 4.0),
        make_row("a", 1, "bfloat16", 64, RESULT_OK, 3.0),
        make_row("b", 2, "bfloat16", 32, RESULT_LAUNCH_ERROR, 1.0),
        make_row("a", 2, "bfloat16", 128, RESULT_OK, 7.0),
    };
    const char *r_axes[] = {"m"};
    report_spec spec = {.rows = r_axes, .n_rows = 1};
    report *r = report_build(in, 5, &spec, NULL);
    cr_assert_not_null(r);
    cr_assert_eq(report_n_shapes(r), 3);
    cr_expect_str_eq(point_str(&report_best(r, 0)->values, "dtype", ""), "bfloat16");
    cr_expect_str_eq(report_best(r, 1)->method, "b");
    cr_expect_str_eq(report_best(r, 2)->method, "a", "a launch error never wins");
    cr_expect_eq(point_int(&report_best(r, 2)->values, "tile", 0), 128);
    char *md = capture(report_write_markdown, r);
    const char *bf = strstr(md, "## dtype=bfloat16\n"), *fp = strstr(md, "## dtype=float16\n");
    cr_assert(bf && fp && bf < fp, "%s", md);
    expect_contains(bf, "### Best method\n\n| m   | value |\n|:----|------:|\n| 1   |     a |\n"
                        "| 2   |     a |\n");
    expect_contains(fp, "### Best tile\n\n| m   | value |\n|:----|------:|\n| 1   |    32 |\n");
    cr_expect_null(strstr(md, "Speedup"), "no baseline");
    free(md);
    report_free(r);
}

Test(report_mem, mismatched_axes_and_empty_input)
{
    result_row in[] = {
        make_row("a", 1, "float16", 64, RESULT_OK, 5.0),
        make_row("a", 2, "float16", 64, RESULT_OK, 5.0),
    };
    in[1].values.names[1] = "type";
    tune_error err = {0};
    cr_expect_null(report_build(in, 2, NULL, &err));
    cr_expect_eq(err.code, TUNE_ERR_INVALID);
    expect_contains(err.message, "row 1");

    report *r = report_build(NULL, 0, NULL, NULL);
    cr_assert_not_null(r);
    cr_expect_eq(report_n_shapes(r), 0);
    char *md = capture(report_write_markdown, r);
    expect_contains(md, "No results.");
    free(md);
    report_free(r);
}

/* Skipped configurations are counted by the category of their reason (the text before ':'). */
Test(report_mem, skipped_by_reason)
{
    result_row in[] = {
        make_row("a", 1, "float16", 64, RESULT_OK, 5.0),
        make_row("a", 1, "float16", 32, RESULT_SKIPPED, 0),
        make_row("a", 2, "float16", 32, RESULT_SKIPPED, 0),
        make_row("a", 2, "float16", 16, RESULT_SKIPPED, 0),
        make_row("a", 2, "float16", 64, RESULT_OK, 4.0),
    };
    in[1].reason = "tile does not divide the problem: n = 100, bn = 32";
    in[2].reason = "tile does not divide the problem: n = 200, bn = 32";
    in[3].reason = "shared memory over the device limit: 300 KiB > 227 KiB";
    const char *r_axes[] = {"m"};
    report_spec spec = {.rows = r_axes, .n_rows = 1};
    report *r = report_build(in, 5, &spec, NULL);
    cr_assert_not_null(r);
    char *md = capture(report_write_markdown, r);
    expect_contains(md, "## Skipped configurations by reason\n\n");
    expect_contains(md, "| tile does not divide the problem    |       2 |\n");
    expect_contains(md, "| shared memory over the device limit |       1 |\n");
    free(md);
    report_free(r);
}

/* ---- the interleaved re-timing decides the winners (report_folders, `tune report DIR --out`) */

static void copy_file(const char *from, const char *to)
{
    char *text = slurp(from);
    FILE *f = fopen(to, "w");
    cr_assert_not_null(f, "%s", to);
    fputs(text, f);
    fclose(f);
    free(text);
}

/* A verdict of retime.jsonl for shape (g, k_pre, k) of the fixture: winner chunk win_chunk. */
static void put_verdict(FILE *f, int g, int k_pre, int k, int win_chunk, int other, int tie)
{
    fprintf(f,
            "{\"shape\":{\"g\":%d,\"k_pre\":%d,\"k\":%d,\"n\":128,\"dtype\":\"float16\"},"
            "\"method\":\"custom\",\"rounds\":30,\"candidates\":[],\"winner\":{\"chunk\":%d},"
            "\"runner_up\":{\"chunk\":%d},\"margin\":0.01,\"tie\":%s}\n",
            g, k_pre, k, win_chunk, other, tie ? "true" : "false");
}

/* The fixture's rows with a retime.jsonl whose winners differ from the fastest medians in two
 * shapes (one a tie): every table, best.csv and best.json name the re-timed winner, and the tie
 * is marked with its legend. */
Test(report, retimed_winner_in_every_table)
{
    char dir[] = "/tmp/test_report.XXXXXX", path[256], out[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    copy_file(FIXTURE, path);
    snprintf(path, sizeof path, "%s/retime.jsonl", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    put_verdict(f, 256, 1024, 64, 16, 64, 1);  /* raw best: chunk 64 (8 us); tie */
    put_verdict(f, 256, 4096, 64, 16, 64, 0);  /* raw best: chunk 16 too */
    put_verdict(f, 1024, 1024, 64, 16, 64, 0); /* raw best: chunk 64 (30 us); a win */
    fclose(f);
    snprintf(out, sizeof out, "%s/out", dir);
    const char *dirs[] = {dir};
    tune_error err = {0};
    cr_assert_eq(report_rebuild(dirs, 1, NULL, NULL, out, 1, &err), TUNE_OK, "%s: %s", err.where,
                 err.message);
    snprintf(path, sizeof path, "%s/best.md", out);
    char *md = slurp(path);
    expect_contains(md, "## Best chunk\n\n"
                        "| g \\ k_pre/k | 1024/64 | 1024/128 | 4096/64 | 4096/128 |\n"
                        "|:------------|--------:|---------:|--------:|---------:|\n"
                        "| 256         |     16* |          |      16 |          |\n"
                        "| 1024        |      16 |          |         |       16 |\n\n"
                        "A value marked * is a statistical tie");
    expect_contains(md, "## Best time (us)\n\n");
    expect_contains(md, "| 256         |   12.00 |          |   10.00 |          |\n");
    expect_contains(md, "| 1024        |   40.00 |          |         |    50.00 |\n");
    expect_contains(md, "## Speedup over slice\n\n");
    expect_contains(md, "| 1024        |   1.73x |          |         |          |\n");
    expect_contains(md, "| g=256 k_pre=1024 k=64 n=128 dtype=float16 | chunk=16 | chunk=64 |");
    free(md);
    snprintf(path, sizeof path, "%s/best.csv", out);
    char *csv = slurp(path);
    expect_contains(csv, ",speedup_slice,retime\n");
    expect_contains(csv, "256,1024,64,128,float16,custom,16,12,");
    expect_contains(csv, ",tie\n");
    expect_contains(csv, "1024,1024,64,128,float16,custom,16,40,");
    free(csv);
    snprintf(path, sizeof path, "%s/best.json", out);
    json_t *j = json_load_file(path, 0, NULL);
    cr_assert_not_null(j);
    json_t *s0 = json_array_get(json_object_get(j, "shapes"), 0);
    cr_expect_eq(json_integer_value(json_object_get(s0, "chunk")), 16);
    cr_expect_str_eq(json_string_value(json_object_get(s0, "retime")), "tie");
    json_t *s1 = json_array_get(json_object_get(j, "shapes"), 1);
    cr_expect(json_is_null(json_object_get(s1, "retime")), "a shape not re-timed");
    json_decref(j);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

/* A searched run's tables say so: the line under the title, the candidates measured per shape at
 * the end of best.md, and the search block (with its line) in best.json. */
Test(report, searched_run)
{
    tune_point shape = {0};
    point_set_int(&shape, "g", 256);
    point_set_int(&shape, "k", 64);
    const tune_point *shapes[] = {&shape};
    size_t cands[] = {8}, budget[] = {3}, evaluated[] = {3};
    meta_search ms = {.strategy = "random", .budget = "10%", .seed = 7, .finished = 1,
                      .rounds = 2, .space = 6725, .baselines = 240, .candidates = 3672,
                      .evaluated = 392, .n_shapes = 1, .shapes = shapes,
                      .shape_candidates = cands, .shape_budget = budget,
                      .shape_evaluated = evaluated};
    json_t *meta = json_pack("{s:o}", "search", meta_search_json(&ms));
    tune_error err = {0};
    report_spec spec = {.title = "w4a16", .meta = meta};
    report *r = report_build(fixture.rows, fixture.n, &spec, &err);
    cr_assert_not_null(r, "%s", err.message);
    char *md = capture(report_write_markdown, r);
    expect_contains(md, "# w4a16\n\nSearched: random, budget 10 %: 632 of 6 725 configurations "
                        "measured.\n");
    expect_contains(md, "## Search: candidates measured per shape\n");
    expect_contains(md, "random, seed 7, 2 round(s): 392 of 3672 candidates");
    expect_contains(md, "| g=256 k=64 | 3 | 3 | 8 |\n");
    json_t *j = report_to_json(r);
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(j, "search"), "line")),
                     "searched: random, budget 10 %: 632 of 6 725 configurations measured");
    char *plain = capture(report_write_markdown, rep);
    cr_expect_null(strstr(plain, "earched"), "an exhaustive run's tables say nothing of it");
    free(plain);
    json_decref(j);
    free(md);
    report_free(r);
    json_decref(meta);
}

/* Each objective picks its own best: tile 32 is fastest, tile 64 uses the least energy, tile 128
 * has the least energy x time; a row without energy never wins an energy ranking. */
Test(report_mem, ranks_by_objective)
{
    result_row in[] = {
        make_row("a", 1, "float16", 32, RESULT_OK, 2.0),  make_row("a", 1, "float16", 64, RESULT_OK, 6.0),
        make_row("a", 1, "float16", 128, RESULT_OK, 3.0), make_row("a", 1, "float16", 256, RESULT_OK, 1.0),
    };
    in[0].energy_j = 4e-3; /* edp 8e-9 */
    in[1].energy_j = 1e-3; /* edp 6e-9 */
    in[2].energy_j = 1.5e-3; /* edp 4.5e-9 */
    /* in[3]: the fastest of all, but no energy */
    const char *r_axes[] = {"m"};
    const struct {
        tune_objective obj;
        int64_t tile;
        const char *line;
    } cases[] = {
        {OBJECTIVE_TIME, 256, NULL},
        {OBJECTIVE_ENERGY, 64, "Ranked by energy: each shape's best is the configuration with the "
                               "least energy per call.\n"},
        {OBJECTIVE_EDP, 128, "Ranked by energy-delay product"},
    };
    for (size_t k = 0; k < 3; k++) {
        report_spec spec = {.rows = r_axes, .n_rows = 1, .objective = cases[k].obj};
        report *r = report_build(in, 4, &spec, NULL);
        cr_assert_not_null(r);
        cr_expect_eq(point_int(&report_best(r, 0)->values, "tile", 0), cases[k].tile, "%s",
                     objective_name(cases[k].obj));
        char *md = capture(report_write_markdown, r);
        if (cases[k].line) {
            expect_contains(md, cases[k].line);
            expect_contains(md, "## Energy per call (uJ)\n");
        } else {
            cr_expect_null(strstr(md, "Ranked by"), "time says nothing: %s", md);
        }
        free(md);
        report_free(r);
    }
}
