/* test_retime.c - retime.jsonl (store/retime.h): a record written and read back as the report
 * shows it, with the winner's configuration identity; a damaged line is an error naming the file
 * and line; a FIFO is refused; no file is no verdict; an append that hits the file size limit is
 * an error and leaves whole lines. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/retime.h"
#include "util_child.h"
#include "util_cpu.h"

TestSuite(retime, .init = make_tmpdir, .fini = remove_tmpdir);

static void sample_record(retime_record *r)
{
    memset(r, 0, sizeof *r);
    r->method = "custom";
    r->rounds = 30;
    r->n = 2;
    r->winner = 1;
    r->runner_up = 0;
    r->margin = 0.0123;
    r->tie = 1;
    point_set_int(&r->shape, "g", 256);
    point_set_str(&r->shape, "dtype", "float16");
    point_set_int(&r->cand[0].params, "chunk", 64);
    point_set_int(&r->cand[1].params, "chunk", 128);
    r->cand[0].median = 2e-6;
    r->cand[1].median = 1.9e-6;
}

Test(retime, round_trip)
{
    retime_record r;
    sample_record(&r);
    tune_error err = {0};
    cr_assert_eq(retime_append(tmpdir, &r, &err), TUNE_OK);
    r.tie = 0;
    cr_assert_eq(retime_append(tmpdir, &r, &err), TUNE_OK);
    retime_verdict *v = NULL;
    size_t n = 0;
    cr_assert_eq(retime_read(tmpdir, &v, &n, &err), TUNE_OK, "%s", err.message);
    cr_assert_eq(n, 2);
    cr_expect_str_eq(v[0].shape, "g=256 dtype=float16");
    cr_expect_str_eq(v[0].winner, "chunk=128");
    cr_expect_str_eq(v[0].runner_up, "chunk=64");
    cr_expect_str_eq(v[0].method, "custom");
    /* point_identity: the method, then name=value sorted by name */
    cr_expect_str_eq(v[0].winner_id, "custom|chunk=128|dtype=float16|g=256");
    cr_expect_float_eq(v[0].margin, 0.0123, 1e-12);
    cr_expect_eq(v[0].tie, 1);
    cr_expect_eq(v[1].tie, 0);
    free(v);
}

/* A gzipped retime.jsonl.gz reads as the plain file; both are ambiguous; a damaged line of the
 * .gz is named by file and line. */
Test(retime, gzipped_verdicts)
{
    retime_record r;
    sample_record(&r);
    tune_error err = {0};
    cr_assert_eq(retime_append(tmpdir, &r, &err), TUNE_OK);
    char cmd[512], gz[512];
    snprintf(cmd, sizeof cmd, "gzip -9n '%s/retime.jsonl'", tmpdir);
    cr_assert_eq(system(cmd), 0);
    retime_verdict *v = NULL;
    size_t n = 0;
    cr_assert_eq(retime_read(tmpdir, &v, &n, &err), TUNE_OK, "%s", err.message);
    cr_assert_eq(n, 1);
    cr_expect_str_eq(v[0].winner_id, "custom|chunk=128|dtype=float16|g=256");
    free(v);
    cr_assert_eq(retime_append(tmpdir, &r, &err), TUNE_OK); /* a plain file beside it */
    cr_expect_eq(retime_read(tmpdir, &v, &n, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "both retime.jsonl and retime.jsonl.gz") != NULL, "%s",
              err.message);
    cr_expect_null(v);
    snprintf(cmd, sizeof cmd, "%s/retime.jsonl", tmpdir);
    cr_assert_eq(unlink(cmd), 0);
    write_gz("retime.jsonl.gz", "{\"shape\": {}}\n[1, 2]\n", gz, sizeof gz);
    tune_error_clear(&err);
    cr_expect_eq(retime_read(tmpdir, &v, &n, &err), TUNE_ERR_INVALID);
    char where[600];
    snprintf(where, sizeof where, "%s:1", gz);
    cr_expect_str_eq(err.where, where);
}

/* Each damaged line: one error naming the file, the line and the key. */
Test(retime, damaged_line_names_file_and_line)
{
    static const struct {
        const char *line, *want;
    } cases[] = {
        {"not json\n", "retime.jsonl:2"},
        {"{\"shape\": {\"g\": 1}, \"method\": \"custom\", \"winner\": {\"chunk\": 1.5}, "
         "\"runner_up\": {}, \"margin\": 0.1, \"tie\": true}\n",
         "key 'winner': expected integer or string values"},
        {"{\"shape\": {\"g\": 1}, \"method\": \"custom\", \"winner\": {}, \"runner_up\": {}, "
         "\"margin\": 0.1, \"tie\": 1}\n",
         "key 'tie': expected true or false"},
        {"[1, 2]\n", "expected a JSON object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[256];
        retime_record r;
        sample_record(&r);
        snprintf(path, sizeof path, "%s/retime.jsonl", tmpdir);
        unlink(path);
        tune_error err = {0};
        cr_assert_eq(retime_append(tmpdir, &r, &err), TUNE_OK);
        FILE *f = fopen(path, "a");
        fputs(cases[i].line, f);
        fclose(f);
        retime_verdict *v = NULL;
        size_t n = 7;
        cr_expect_eq(retime_read(tmpdir, &v, &n, &err), TUNE_ERR_INVALID, "case %zu", i);
        char text[3000];
        snprintf(text, sizeof text, "%s: %s", err.where, err.message);
        cr_expect(strstr(text, "retime.jsonl:2") != NULL, "case %zu: %s", i, text);
        cr_expect(strstr(text, cases[i].want) != NULL, "case %zu: %s", i, text);
        cr_expect_eq(n, 0);
        cr_expect_null(v);
    }
}

Test(retime, fifo_is_refused)
{
    char path[256];
    snprintf(path, sizeof path, "%s/retime.jsonl", tmpdir);
    cr_assert_eq(mkfifo(path, 0600), 0);
    retime_verdict *v = NULL;
    size_t n = 0;
    tune_error err = {0};
    cr_expect_eq(retime_read(tmpdir, &v, &n, &err), TUNE_ERR_IO);
    cr_expect(strstr(err.message, "not a regular file") != NULL, "%s", err.message);
}

Test(retime, no_file)
{
    retime_verdict *v = NULL;
    size_t n = 7;
    tune_error err = {0};
    cr_expect_eq(retime_read(tmpdir, &v, &n, &err), TUNE_OK);
    cr_expect_eq(n, 0);
    cr_expect_null(v);
}

/* Appends the same verdict until an append fails (at most 20): the work of a size-limited child. */
static tune_status append_verdicts(void *ctx, tune_error *err)
{
    (void)ctx;
    retime_record r;
    sample_record(&r);
    tune_status st = TUNE_OK;
    for (int i = 0; i < 20 && st == TUNE_OK; i++)
        st = retime_append(tmpdir, &r, err);
    return st;
}

/* In a child limited to files of 600 bytes, verdicts are appended until one fails: the failure is
 * reported and the file keeps whole lines only. */
Test(retime, append_over_the_size_limit_fails_and_keeps_whole_lines)
{
    char msg[1200] = "";
    int rc = test_run_size_limited(600, append_verdicts, NULL, msg, sizeof msg);
    cr_assert(rc == 1, "the append must fail: %s", msg);
    cr_expect(strstr(msg, "retime.jsonl: cannot append a verdict: File too large") != NULL, "%s",
              msg);
    retime_verdict *v = NULL;
    size_t n = 0;
    tune_error err = {0};
    cr_expect_eq(retime_read(tmpdir, &v, &n, &err), TUNE_OK, "%s: %s", err.where, err.message);
    cr_expect_geq(n, 1);
    free(v);
}
