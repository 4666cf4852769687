/* util_cpu.h - helpers shared by the Criterion test files, CPU only (the tests that link tune_cpu
 * alone include this one; util.h adds the GPU helpers). */
#ifndef TUNE_TESTS_UTIL_CPU_H
#define TUNE_TESTS_UTIL_CPU_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
