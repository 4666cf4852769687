/* util_cpu.h - helpers shared by the Criterion test files, CPU only (the tests that link tune_cpu
 * alone include this one; util.h adds the GPU helpers). */
#ifndef TUNE_TESTS_UTIL_CPU_H
#define TUNE_TESTS_UTIL_CPU_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

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

/* Writes text gzipped (as gzip -9n would) to tmpdir/name; the full path goes to path. */
static inline void write_gz(const char *name, const char *text, char *path, size_t size)
{
    snprintf(path, size, "%s/%s", tmpdir, name);
    gzFile f = gzopen(path, "wb9");
    cr_assert_not_null(f);
    cr_assert_eq(gzwrite(f, text, (unsigned)strlen(text)), (int)strlen(text));
    cr_assert_eq(gzclose(f), Z_OK);
}

/* The size of the file at path (cr_assert: it exists). */
static inline long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

/* Keeps the first keep bytes of path (a truncated copy). */
static inline void truncate_file(const char *path, long keep)
{
    cr_assert_eq(truncate(path, keep), 0, "%s", path);
}

/* Flips every bit of the byte at offset at of path (from the end when at < 0). */
static inline void flip_byte(const char *path, long at)
{
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fseek(f, at, at < 0 ? SEEK_END : SEEK_SET), 0);
    long where = ftell(f);
    int c = fgetc(f);
    cr_assert_neq(c, EOF);
    fseek(f, where, SEEK_SET);
    fputc(c ^ 0xff, f);
    fclose(f);
}

#endif
