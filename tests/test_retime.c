/* test_retime.c - retime.jsonl (store/retime.h): a record written and read back as the report
 * shows it; lines that do not parse are left out; no file is TUNE_ERR_IO. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/retime.h"
#include "util_cpu.h"

TestSuite(retime, .init = make_tmpdir, .fini = remove_tmpdir);

Test(retime, round_trip)
{
    retime_record r = {.method = "custom",
                       .rounds = 30,
                       .n = 2,
                       .winner = 1,
                       .runner_up = 0,
                       .margin = 0.0123,
                       .tie = 1};
    point_set_int(&r.shape, "g", 256);
    point_set_str(&r.shape, "dtype", "float16");
    point_set_int(&r.cand[0].params, "chunk", 64);
    point_set_int(&r.cand[1].params, "chunk", 128);
    r.cand[0].median = 2e-6;
    r.cand[1].median = 1.9e-6;
    retime_append(tmpdir, &r);
    char path[4096];
    snprintf(path, sizeof path, "%s/retime.jsonl", tmpdir);
    FILE *f = fopen(path, "a");
    fputs("not json\n", f);
    fclose(f);
    r.tie = 0;
    retime_append(tmpdir, &r);
    retime_verdict *v = NULL;
    size_t n = 0;
    cr_assert_eq(retime_read(tmpdir, &v, &n), TUNE_OK);
    cr_assert_eq(n, 2);
    cr_expect_str_eq(v[0].shape, "g=256 dtype=float16");
    cr_expect_str_eq(v[0].winner, "chunk=128");
    cr_expect_str_eq(v[0].runner_up, "chunk=64");
    cr_expect_float_eq(v[0].margin, 0.0123, 1e-12);
    cr_expect_eq(v[0].tie, 1);
    cr_expect_eq(v[1].tie, 0);
    free(v);
}

Test(retime, no_file)
{
    retime_verdict *v = NULL;
    size_t n = 7;
    cr_expect_eq(retime_read(tmpdir, &v, &n), TUNE_ERR_IO);
    cr_expect_eq(n, 0);
    cr_expect_null(v);
}
