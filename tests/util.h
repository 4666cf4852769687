/* util.h - helpers shared by the Criterion test files (header-only: each test file is its own
 * executable). */
#ifndef TUNE_TESTS_UTIL_H
#define TUNE_TESTS_UTIL_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu.h"

/* Skips the calling test, with the reason, when no GPU is usable; else selects GPU 0. */
static inline void require_gpu(void)
{
    static char reason[2048];
    tune_error err = {0};
    int n = 0;
    if (gpu_count(&n, &err) != TUNE_OK) {
        snprintf(reason, sizeof reason, "%s", err.message);
        cr_skip_test("skipped: %s", reason);
    }
    cr_assert_eq(gpu_select(0, &err), TUNE_OK, "%s", err.message);
}

/* A fresh temporary folder per test (a suite's .init / .fini): tmpdir. */
static char tmpdir[64];

static inline void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tune_test.XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static inline void remove_tmpdir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    cr_expect_eq(system(cmd), 0);
}

/* Writes text to tmpdir/name; the full path goes to path. */
static inline void write_file(const char *name, const char *text, char *path, size_t size)
{
    snprintf(path, size, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

#endif
