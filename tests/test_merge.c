/* test_merge.c - merging compile-only shard folders (store/merge.h, run_merge): equal to a single
 * run, and refused when a shard is missing, given twice, incomplete, from another plan or with a
 * configuration twice; an empty shard; --gpus in compile-only mode; a kernel declared in a sweep
 * file sharded and merged. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/outfile.h"
#include "device/compile.h"
#include "model/sweep.h"
#include "run/run.h"
#include "store/folder.h"
#include "store/merge.h"
#include "util.h"

/* ---- compile-only runs and merge ---- */

/* Fault family (tiny kernels, one of them fails to compile): 4 shapes x 2 faults x 2 blocks. */
static const char small_sweep[] =
    "{\"name\": \"small\", \"family\": \"fault_test\", \"op\": \"scale\","
    " \"problem\": {\"n\": [1000, 3000, 200000, 5000000]},"
    " \"params\": {\"fault\": [\"none\", \"compile_error\"], \"block\": [128, 256]},"
    " \"methods\": [\"custom\"], \"report\": {\"rows\": [\"n\"], \"cols\": []}}";

static char sweep_path[256], cache[256], kernels[4096];

/* A compile-only run of the small sweep into out (NULL: a new folder under root); its status. */
static tune_status try_run(const char *out, const char *root, size_t index, size_t count,
                           int resume, char *out_dir, tune_error *err)
{
    char buf[4096];
    sweep *sw = sweep_load(sweep_path, err);
    cr_assert_not_null(sw, "%s", tune_error_text(err, buf, sizeof buf));
    run_options opt;
    run_options_init(&opt);
    opt.compile_only = opt.compile_rows = 1;
    opt.quiet = 1;
    opt.cache_dir = cache;
    opt.kernels_dir = kernels;
    opt.out_dir = out;
    if (root)
        opt.out_root = root;
    opt.shard_index = index;
    opt.shard_count = count;
    opt.resume = resume;
    run_summary sum;
    tune_status st = run_sweep(sw, &opt, &sum, err);
    if (out_dir)
        snprintf(out_dir, 512, "%.500s", sum.out_dir);
    sweep_free(sw);
    return st;
}

static void run_shard(const char *out, size_t index, size_t count, int resume)
{
    tune_error err = {0};
    char buf[4096];
    cr_assert_eq(try_run(out, NULL, index, count, resume, NULL, &err), TUNE_OK, "%s",
                 tune_error_text(&err, buf, sizeof buf));
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

/* Runs the n shards of the small sweep into s0, s1, ... (paths in d, pointers in dirs). */
static void run_shards(char d[][512], const char **dirs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "s%zu", i);
        dirs[i] = path_in(d[i], sizeof d[i], name);
        run_shard(d[i], i, n, 0);
    }
}

/* Sorted "identity status kernel" lines of a folder's rows. */
static char **row_set(const char *dir, size_t *n)
{
    char path[512], id[4096];
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    results_rows read;
    tune_error err = {0};
    cr_assert_eq(results_read(path, &read, &err), TUNE_OK, "%s", err.message);
    const result_row *rows = read.rows;
    *n = read.n;
    char **set = calloc(*n + 1, sizeof *set);
    for (size_t i = 0; i < *n; i++) {
        char line[4200];
        snprintf(line, sizeof line, "%s %s %s", results_row_identity(&rows[i], id, sizeof id),
                 result_status_str(rows[i].status), rows[i].kernel ? rows[i].kernel : "-");
        set[i] = strdup(line);
    }
    results_rows_free(&read);
    qsort(set, *n, sizeof *set, (int (*)(const void *, const void *))strcmp);
    return set;
}

static void row_set_free(char **set, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(set[i]);
    free(set);
}

/* The number of rows in a folder. */
static size_t row_count(const char *dir)
{
    size_t n;
    char **set = row_set(dir, &n);
    row_set_free(set, n);
    return n;
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

/* The sweep run whole into "single" and as n shards into s0, s1, ... (paths in d, pointers in
 * dirs), the shards merged into "merged" (its path in m): the merged rows are the single run's. */
static void merge_like_single(char d[][512], const char **dirs, size_t n, char m[512])
{
    char single[512];
    run_shard(path_in(single, sizeof single, "single"), 0, 1, 0);
    run_shards(d, dirs, n);
    tune_error err = {0};
    cr_assert_eq(merge("merged", dirs, n, &err), TUNE_OK, "%s", err.message);
    expect_same_rows(single, path_in(m, 512, "merged"));
}

TestSuite(shard_run, .init = setup_merge, .fini = remove_tmpdir, .timeout = 600);

Test(shard_run, merged_shards_equal_a_single_run)
{
    char single[512], d[3][512], m[512];
    const char *dirs[3];
    merge_like_single(d, dirs, 3, m);
    path_in(single, sizeof single, "single");
    tune_error err = {0};
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
    run_shards(d, dirs, 3);
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
    cr_expect(strstr(err.message, "or inside it") != NULL, "%s", err.message);
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
    run_shards(d, dirs, 2);
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

/* text with its first "block":128 or "block":256 made "block":512, a value the sweep has not. */
static void block_512(char *text)
{
    char *at = strstr(text, "\"block\":128");
    if (!at)
        at = strstr(text, "\"block\":256");
    cr_assert_not_null(at, "%s", text);
    memcpy(at + 8, "512", 3);
}

static int exists_in(const char *dir, const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* A shard folder holds only rows of its own share of the plan: a row of a configuration outside
 * the sweep, or of another shard's, is refused with its file and line, and nothing is written. */
Test(shard_run, row_outside_its_shard_plan)
{
    char d[2][512], m[512], want[700];
    const char *dirs[2];
    run_shards(d, dirs, 2);
    path_in(m, sizeof m, "m");
    /* shard 0's last row made a configuration the sweep does not have (block 512) */
    char *last0 = drop_lines(dirs[0], 1);
    char *changed = strdup(last0);
    block_512(changed);
    append(dirs[0], changed);
    tune_error err = {0};
    cr_expect_eq(merge("m", dirs, 2, &err), TUNE_ERR_INVALID);
    snprintf(want, sizeof want, "%s/raw.jsonl:8: configuration ", dirs[0]);
    cr_expect(strstr(err.message, want) != NULL, "%s", err.message);
    cr_expect(strstr(err.message, "block=512") && strstr(err.message, "is not in the sweep's plan"),
              "%s", err.message);
    cr_expect(!exists_in(m, "raw.jsonl") && !exists_in(m, "meta.json"), "nothing is written");
    tune_error_clear(&err);
    /* the last rows of the two shards swapped: every configuration once, each in the wrong shard */
    free(drop_lines(dirs[0], 1));
    char *last1 = drop_lines(dirs[1], 1);
    append(dirs[0], last1);
    append(dirs[1], last0);
    cr_expect_eq(merge("m", dirs, 2, &err), TUNE_ERR_INVALID);
    snprintf(want, sizeof want, "%s/raw.jsonl:8: configuration ", dirs[1]);
    cr_expect(strstr(err.message, want) != NULL, "%s", err.message);
    cr_expect(strstr(err.message, "is shard 0/2's, not shard 1/2's") != NULL, "%s", err.message);
    cr_expect(strstr(err.message, "is shard 1/2's, not shard 0/2's") != NULL, "%s", err.message);
    cr_expect(!exists_in(m, "raw.jsonl") && !exists_in(m, "meta.json"), "nothing is written");
    tune_error_clear(&err);
    /* put back: the merge goes through */
    free(drop_lines(dirs[0], 1));
    free(drop_lines(dirs[1], 1));
    append(dirs[0], last0);
    append(dirs[1], last1);
    cr_expect_eq(merge("m", dirs, 2, &err), TUNE_OK, "%s", err.message);
    free(last0);
    free(last1);
    free(changed);
}

/* --resume with another sweep file (the same kernels, another skip_if) is refused: the rows of
 * the folder were measured for the sweep recorded in its meta.json (sweep.hash). */
Test(shard_run, resume_with_another_sweep_file_is_refused)
{
    char out[512], buf[4096];
    tune_error err = {0};
    path_in(out, sizeof out, "run");
    cr_assert_eq(try_run(out, NULL, 0, 0, 0, NULL, &err), TUNE_OK, "%s",
                 tune_error_text(&err, buf, sizeof buf));
    /* the same file resumes */
    cr_assert_eq(try_run(out, NULL, 0, 0, 1, NULL, &err), TUNE_OK, "%s",
                 tune_error_text(&err, buf, sizeof buf));
    static const char *const other[] = {
        /* another skip_if */
        "{\"name\": \"small\", \"family\": \"fault_test\", \"op\": \"scale\","
        " \"problem\": {\"n\": [1000, 3000, 200000, 5000000]},"
        " \"params\": {\"fault\": [\"none\", \"compile_error\"], \"block\": [128, 256]},"
        " \"skip_if\": [\"n > 1000000 && block == 128\"],"
        " \"methods\": [\"custom\"], \"report\": {\"rows\": [\"n\"], \"cols\": []}}",
        /* other parameter values */
        "{\"name\": \"small\", \"family\": \"fault_test\", \"op\": \"scale\","
        " \"problem\": {\"n\": [1000, 3000, 200000, 5000000]},"
        " \"params\": {\"fault\": [\"none\", \"compile_error\"], \"block\": [128]},"
        " \"methods\": [\"custom\"], \"report\": {\"rows\": [\"n\"], \"cols\": []}}",
    };
    char path[256];
    size_t rows_before = folder_count_rows(out);
    for (size_t i = 0; i < 2; i++) {
        write_file("small.json", other[i], path, sizeof path);
        tune_error_clear(&err);
        cr_expect_eq(try_run(out, NULL, 0, 0, 1, NULL, &err), TUNE_ERR_INVALID, "case %zu", i);
        cr_expect(strstr(err.message, "cannot resume: this folder holds a run of another sweep "
                                      "file") != NULL,
                  "case %zu: %s", i, err.message);
        cr_expect_eq(folder_count_rows(out), rows_before, "case %zu: no row written", i);
    }
    write_file("small.json", small_sweep, path, sizeof path);
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
    run_shards(d, dirs, 5);
    cr_expect_eq(row_count(d[4]), 0);
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

/* A kernel declared in a sweep file shards, runs compile-only (no GPU) and merges as a shipped
 * family does: 4 shapes x 10 configurations of sweeps/examples/matmul over 3 shards. */
Test(shard_run, declared_kernel_shards_merge_like_a_single_run)
{
    char cwd[200], d[3][512], m[512];
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    snprintf(sweep_path, sizeof sweep_path, "%s/sweeps/examples/matmul/matmul.json", cwd);
    const char *dirs[3];
    merge_like_single(d, dirs, 3, m);
    size_t n, compiled = 0, matmul = 0;
    char **set = row_set(m, &n);
    cr_expect_eq(n, 40);
    for (size_t i = 0; i < n; i++) {
        compiled += strstr(set[i], " compiled ") != NULL;
        matmul += strstr(set[i], " matmul_tiled") != NULL; /* the tuned rows name the entry */
        free(set[i]);
    }
    free(set);
    cr_expect_eq(compiled, 40);
    cr_expect_eq(matmul, 36); /* and 4 rows of the baseline "naive", one per shape */
    for (size_t i = 0; i < 3; i++) /* every shard got a shape (4 shapes, 3 shards) */
        cr_expect_gt(row_count(d[i]), 0, "shard %zu is empty", i);
}

/* --out onto a folder that holds a run, without --resume, is refused and changes nothing; runs
 * started together without --out get folders of their own. */
Test(shard_run, out_onto_a_run_is_refused)
{
    char r[512], path[600];
    path_in(r, sizeof r, "r");
    run_shard(r, 0, 0, 0);
    snprintf(path, sizeof path, "%s/meta.json", r);
    char *meta = tune_read_file(path, NULL, NULL);
    size_t rows = folder_count_rows(r);
    tune_error err = {0};
    cr_expect_eq(try_run(r, NULL, 0, 0, 0, NULL, &err), TUNE_ERR_IO);
    cr_expect_str_eq(err.where, r);
    cr_expect(strstr(err.message, "already holds a run (meta.json)") != NULL, "%s", err.message);
    cr_expect(strstr(err.message, "--resume") != NULL, "%s", err.message);
    cr_expect_eq(folder_count_rows(r), rows, "no row appended");
    char *after = tune_read_file(path, NULL, NULL);
    cr_expect_str_eq(after, meta, "meta.json not replaced");
    free(after);
    free(meta);
    /* a folder with only other files (a log) is fine, and --resume continues the run */
    char l[512];
    path_in(l, sizeof l, "logged");
    cr_assert_eq(outfile_mkdirs(l, NULL), TUNE_OK);
    char logf[600];
    snprintf(logf, sizeof logf, "%s/nightly.log", l);
    FILE *f = fopen(logf, "w");
    fclose(f);
    tune_error_clear(&err);
    cr_expect_eq(try_run(l, NULL, 0, 0, 0, NULL, &err), TUNE_OK, "%s", err.message);
    tune_error_clear(&err);
    cr_expect_eq(try_run(r, NULL, 0, 0, 1, NULL, &err), TUNE_OK, "%s", err.message);
    cr_expect_eq(folder_count_rows(r), rows, "resumed: nothing left to run");
    /* three runs without --out: three folders */
    char dirs[3][512], root[512];
    path_in(root, sizeof root, "root");
    for (size_t i = 0; i < 3; i++) {
        tune_error_clear(&err);
        cr_assert_eq(try_run(NULL, root, 0, 0, 0, dirs[i], &err), TUNE_OK, "%s", err.message);
    }
    cr_expect_str_neq(dirs[0], dirs[1]);
    cr_expect_str_neq(dirs[1], dirs[2]);
    cr_expect_lt(strcmp(dirs[0], dirs[1]), 0, "%s, %s", dirs[0], dirs[1]);
    cr_expect_lt(strcmp(dirs[1], dirs[2]), 0, "%s, %s", dirs[1], dirs[2]);
}

/* tune merge writes into a new folder, or over an earlier merge of the same shards; never over
 * an ordinary run or a merge of other shards. */
Test(shard_run, merge_never_replaces_a_run)
{
    char d[3][512], r[512], m[512], path[600];
    const char *dirs[3];
    run_shards(d, dirs, 3);
    path_in(r, sizeof r, "r");
    run_shard(r, 0, 0, 0);
    snprintf(path, sizeof path, "%s/meta.json", r);
    char *meta = tune_read_file(path, NULL, NULL);
    tune_error err = {0};
    merge_options mo = {1, 0, NULL};
    cr_expect_eq(run_merge(r, dirs, 3, &mo, NULL, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "which is not an earlier merge of these shards") != NULL, "%s",
              err.message);
    char *after = tune_read_file(path, NULL, NULL);
    cr_expect_str_eq(after, meta, "the run's meta.json is untouched");
    free(after);
    free(meta);
    tune_error_clear(&err);
    cr_expect_eq(merge("m", dirs, 3, &err), TUNE_OK, "%s", err.message);
    tune_error_clear(&err);
    cr_expect_eq(merge("m", dirs, 3, &err), TUNE_OK, "merged again: %s", err.message);
    /* shards of another plan */
    char e[2][512];
    const char *two[2];
    for (size_t i = 0; i < 2; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%zu", i);
        two[i] = path_in(e[i], sizeof e[i], name);
        run_shard(e[i], i, 2, 0);
    }
    tune_error_clear(&err);
    cr_expect_eq(merge("m", two, 2, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "already holds a merge of other shards") != NULL, "%s",
              err.message);
    path_in(m, sizeof m, "m");
    (void)m;
}

/* ---- searched shards ---- */

/* Makes a compile-only shard folder look like a searched shard: its meta.json gets a search block
 * (budget text, finished or not) and its raw.jsonl keeps its first `keep` rows. */
static void make_searched(const char *dir, const char *budget, int finished, size_t keep)
{
    json_t *m = meta_load(dir, NULL);
    cr_assert_not_null(m);
    tune_point shape = {0};
    point_set_int(&shape, "n", 1000);
    const tune_point *shapes[] = {&shape};
    size_t cands[] = {4}, budgets[] = {2}, evaluated[] = {keep};
    meta_search ms = {.strategy = "random", .budget = budget, .seed = 7, .finished = finished,
                      .rounds = 1, .space = 4, .candidates = 4, .evaluated = keep,
                      .kernels = 3, .kernels_compiled = 2, .n_shapes = 1, .shapes = shapes,
                      .shape_candidates = cands, .shape_budget = budgets,
                      .shape_evaluated = evaluated};
    json_object_set_new(m, "search", meta_search_json(&ms));
    tune_error err = {0};
    cr_assert_eq(meta_write(dir, m, &err), TUNE_OK, "%s", err.message);
    json_decref(m);
    char path[600];
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    char *text = tune_read_file(path, NULL, NULL), *cut = text;
    cr_assert_not_null(text);
    for (size_t i = 0; i < keep && cut && *cut; i++)
        cut = strchr(cut, '\n') + 1;
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fwrite(text, 1, (size_t)(cut - text), f);
    fclose(f);
    free(text);
}

/* Searched shards, each with a row for what it measured only, merge when finished and of the
 * same search settings: the merged search block sums them. An unfinished shard and shards of
 * other settings (or an exhaustive one with a searched one) are refused, naming both. */
Test(shard_run, searched_shards)
{
    char d[2][512];
    const char *dirs[2];
    run_shards(d, dirs, 2);
    make_searched(d[0], "50%", 1, 2);
    tune_error err = {0};
    cr_expect_eq(merge("m0", dirs, 2, &err), TUNE_ERR_INVALID, "exhaustive with searched");
    cr_expect(strstr(err.message, "were searched differently") != NULL &&
                  strstr(err.message, "s1: exhaustive (not searched)): the shards of one run "
                                      "share their search settings") != NULL,
              "%s", err.message);
    make_searched(d[1], "25%", 1, 1);
    tune_error_clear(&err);
    cr_expect_eq(merge("m1", dirs, 2, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "s1: random, budget 25%, seed 7, batch default)") != NULL,
              "%s", err.message);
    make_searched(d[1], "50%", 0, 1);
    tune_error_clear(&err);
    cr_expect_eq(merge("m2", dirs, 2, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "is not finished: resume it") != NULL, "%s", err.message);
    make_searched(d[1], "50%", 1, 1);
    tune_error_clear(&err);
    cr_assert_eq(merge("m3", dirs, 2, &err), TUNE_OK, "%s", err.message);
    char m[512];
    cr_expect_eq(row_count(path_in(m, sizeof m, "m3")), 3);
    json_t *meta = meta_load(m, NULL);
    const json_t *s = meta_search_block(meta);
    cr_assert_not_null(s);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(s, "configs"), "evaluated")),
                 3);
    cr_expect_eq(json_array_size(json_object_get(s, "shapes")), 2);
    cr_expect(json_is_true(json_object_get(s, "finished")));
    char line[256];
    cr_expect_eq(meta_search_line(meta, line, sizeof line), 0);
    cr_expect_str_eq(line, "searched: random, budget 50 %: 3 of 16 configurations measured");
    json_decref(meta);
}

/* A shard whose rows were gzipped by hand (raw.jsonl.gz) merges to the same plain raw.jsonl; it
 * cannot be resumed (a resume appends to a plain raw.jsonl: gunzip first), a shard holding both
 * files is ambiguous, and a merge refuses an OUT holding a raw.jsonl.gz. */
Test(shard_run, gzipped_shards_merge)
{
    char d[2][512], m[512], g[512], cmd[2048], path[600];
    const char *dirs[2];
    merge_like_single(d, dirs, 2, m);
    snprintf(cmd, sizeof cmd, "gzip -9n '%s/raw.jsonl'", d[1]);
    cr_assert_eq(system(cmd), 0);
    tune_error err = {0};
    cr_assert_eq(merge("merged_gz", dirs, 2, &err), TUNE_OK, "%s", err.message);
    path_in(g, sizeof g, "merged_gz");
    snprintf(cmd, sizeof cmd, "cmp -s '%s/raw.jsonl' '%s/raw.jsonl'", m, g);
    cr_expect_eq(system(cmd), 0, "the merged raw.jsonl is the one merged from plain shards");
    snprintf(path, sizeof path, "%s/raw.jsonl.gz", g);
    cr_expect_neq(access(path, F_OK), 0, "a merge writes plain files");
    /* resuming the gzipped shard is refused, and starts no plain raw.jsonl beside it */
    cr_expect_eq(try_run(d[1], NULL, 1, 2, 1, NULL, &err), TUNE_ERR_IO);
    cr_expect(strstr(err.message, "gunzip it first") != NULL, "%s", err.message);
    snprintf(path, sizeof path, "%s/raw.jsonl", d[1]);
    cr_expect_neq(access(path, F_OK), 0, "no second rows file");
    /* OUT holding a raw.jsonl.gz */
    snprintf(cmd, sizeof cmd, "cp '%s/raw.jsonl.gz' '%s/'", d[1], g);
    cr_assert_eq(system(cmd), 0);
    tune_error_clear(&err);
    cr_expect_eq(merge("merged_gz", dirs, 2, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "holds raw.jsonl.gz, and a merge writes a plain raw.jsonl") !=
                  NULL,
              "%s", err.message);
    /* a shard with both files */
    snprintf(cmd, sizeof cmd, "gunzip -k '%s/raw.jsonl.gz'", d[1]);
    cr_assert_eq(system(cmd), 0);
    tune_error_clear(&err);
    cr_expect_eq(merge("merged_both", dirs, 2, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "holds both raw.jsonl and raw.jsonl.gz") != NULL, "%s",
              err.message);
}
