/* test_npy.c - NumPy .npy files (core/npy.h): the header read (versions 1 and 2, descr, shape),
 * the data checked against it, and each malformed file refused with its reason. */
#include <criterion/criterion.h>
#include <sys/stat.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/npy.h"
#include "util_cpu.h"

TestSuite(npy, .init = make_tmpdir, .fini = remove_tmpdir);

/* Writes a .npy file: magic, version, the header padded to 64 bytes, then data bytes. */
static void write_npy(const char *name, int version, const char *header, const void *data,
                      size_t bytes, char *path, size_t size)
{
    snprintf(path, size, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    size_t pre = version == 1 ? 10 : 12, len = strlen(header) + 1;
    size_t hlen = (pre + len + 63) / 64 * 64 - pre;
    fwrite("\x93NUMPY", 1, 6, f);
    unsigned char v[6] = {(unsigned char)version, 0, (unsigned char)(hlen & 0xff),
                          (unsigned char)(hlen >> 8), 0, 0};
    fwrite(v, 1, pre - 6, f);
    fputs(header, f);
    for (size_t i = len; i < hlen; i++)
        fputc(' ', f);
    fputc('\n', f);
    fwrite(data, 1, bytes, f);
    fclose(f);
}

Test(npy, reads_header_and_data)
{
    float vals[6] = {1, 2, 3, 4, 5, 6};
    char path[512], descr[16];
    size_t n = 0;
    void *data = NULL;
    tune_error err = {0};
    for (int version = 1; version <= 2; version++) {
        write_npy("a.npy", version, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                  vals, sizeof vals, path, sizeof path);
        cr_assert_eq(npy_read(path, 1 << 20, descr, sizeof descr, &n, &data, &err), TUNE_OK,
                     "version %d: %s", version, err.message);
        cr_expect_str_eq(descr, "<f4");
        cr_expect_eq(n, 6);
        cr_expect_eq(memcmp(data, vals, sizeof vals), 0);
        free(data);
    }
    /* a scalar: shape () holds one element */
    write_npy("s.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (), }", vals, 4,
              path, sizeof path);
    cr_assert_eq(npy_read(path, 1 << 20, descr, sizeof descr, &n, &data, &err), TUNE_OK, "%s",
                 err.message);
    cr_expect_eq(n, 1);
    free(data);
}

Test(npy, malformed_files_are_refused)
{
    float vals[8] = {0}; /* room for the case with one element too many */
    char path[512], descr[16];
    size_t n = 0;
    void *data = NULL;
    const struct {
        const char *header;
        size_t bytes;
        const char *why;
    } cases[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20, "is not 6 elements"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 28, "is not 6 elements"},
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24, "Fortran-order"},
        {"{'descr': '<U4', 'fortran_order': False, 'shape': (2, 3), }", 24, "plain number type"},
        {"{'descr': '<f4', 'shape': (2, 3), }", 24, "not a .npy header"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", 24, "tuple of integers"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tune_error err = {0};
        write_npy("bad.npy", 1, cases[i].header, vals, cases[i].bytes, path, sizeof path);
        cr_expect_neq(npy_read(path, 1 << 20, descr, sizeof descr, &n, &data, &err), TUNE_OK,
                      "case %zu", i);
        cr_expect(strstr(err.message, cases[i].why), "case %zu: %s", i, err.message);
        cr_expect_str_eq(err.where, path);
        cr_expect_null(data);
    }
    tune_error err = {0};
    write_npy("big.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", vals,
              24, path, sizeof path);
    cr_expect_neq(npy_read(path, 16, descr, sizeof descr, &n, &data, &err), TUNE_OK);
    cr_expect(strstr(err.message, "more than 16 bytes"), "%s", err.message);
    FILE *f = fopen(path, "wb");
    fputs("PK\x03\x04 not numpy", f);
    fclose(f);
    err = (tune_error){0}; /* the first error is kept: a fresh record */
    cr_expect_neq(npy_read(path, 1 << 20, descr, sizeof descr, &n, &data, &err), TUNE_OK);
    cr_expect(strstr(err.message, "not a .npy file"), "%s", err.message);
}

/* An .npy input or reference that is a FIFO or a device is refused, never waited on or read. */
Test(npy, a_fifo_or_a_device_is_refused, .timeout = 20)
{
    char path[4096], descr[32];
    snprintf(path, sizeof path, "%s/pipe.npy", tmpdir);
    cr_assert_eq(mkfifo(path, 0644), 0);
    const char *paths[] = {path, "/dev/zero"};
    for (int i = 0; i < 2; i++) {
        size_t count = 0;
        void *data = NULL;
        tune_error err = {0};
        cr_expect_eq(npy_read(paths[i], 1 << 20, descr, sizeof descr, &count, &data, &err),
                     TUNE_ERR_IO, "%s", paths[i]);
        cr_expect_null(data);
        cr_expect(strstr(err.message, "not a regular file") != NULL, "%s", err.message);
        cr_expect_str_eq(err.where, paths[i]);
    }
}
