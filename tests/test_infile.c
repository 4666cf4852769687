/* test_infile.c - untrusted input files (core/infile.h): regular files only, of bounded size. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/infile.h"
#include "util_cpu.h"

TestSuite(infile, .init = make_tmpdir, .fini = remove_tmpdir);

Test(infile, reads_a_regular_file_whole)
{
    char path[256], *data = NULL;
    size_t len = 0;
    tune_error err = {0};
    write_file("a.json", "{\"a\": 1}\n", path, sizeof path);
    cr_assert_eq(infile_read(path, 100, &data, &len, &err), TUNE_OK, "%s", err.message);
    cr_expect_eq(len, 9);
    cr_expect_str_eq(data, "{\"a\": 1}\n");
    free(data);
    write_file("empty", "", path, sizeof path);
    cr_assert_eq(infile_read(path, 100, &data, NULL, &err), TUNE_OK);
    cr_expect_str_eq(data, "");
    free(data);
}

Test(infile, refuses_a_fifo_without_blocking, .timeout = 10)
{
    char path[256], *data = (char *)1;
    snprintf(path, sizeof path, "%s/fifo", tmpdir);
    cr_assert_eq(mkfifo(path, 0600), 0);
    tune_error err = {0};
    cr_expect_eq(infile_read(path, 100, &data, NULL, &err), TUNE_ERR_IO);
    cr_expect_null(data);
    cr_expect_str_eq(err.where, path);
    cr_expect_str_eq(err.message, "not a regular file (a FIFO)");
    tune_error e2 = {0};
    cr_expect_null(infile_open(path, 100, &e2));
    cr_expect_str_eq(e2.message, "not a regular file (a FIFO)");
}

Test(infile, refuses_devices_and_directories, .timeout = 10)
{
    char *data;
    tune_error err = {0};
    cr_expect_eq(infile_read("/dev/zero", 1 << 20, &data, NULL, &err), TUNE_ERR_IO);
    cr_expect_str_eq(err.message, "not a regular file (a character device)");
    tune_error e2 = {0};
    cr_expect_eq(infile_read(tmpdir, 1 << 20, &data, NULL, &e2), TUNE_ERR_IO);
    cr_expect_str_eq(e2.message, "not a regular file (a directory)");
}

Test(infile, refuses_too_large_and_missing)
{
    char path[256], *data;
    write_file("big", "0123456789", path, sizeof path);
    tune_error err = {0};
    cr_expect_eq(infile_read(path, 9, &data, NULL, &err), TUNE_ERR_INVALID);
    cr_expect_str_eq(err.message, "too large: 10 bytes, at most 9");
    tune_error e2 = {0};
    cr_expect_eq(infile_read(path, 10, &data, NULL, &e2), TUNE_OK, "%s", e2.message);
    free(data);
    tune_error e3 = {0};
    snprintf(path, sizeof path, "%s/none", tmpdir);
    cr_expect_eq(infile_read(path, 10, &data, NULL, &e3), TUNE_ERR_IO);
    cr_expect_str_eq(e3.message, "cannot open: No such file or directory");
    FILE *f = infile_open(path, 10, NULL);
    cr_expect_null(f);
}

/* A NUL byte in a text file (a sweep, meta.json, a kernel source) would end the text there for
 * every C-string reader, dropping the rest unseen: infile_read_text refuses it at line:column. */
Test(infile, a_nul_byte_in_a_text_file_is_refused)
{
    char path[4096], where[4200];
    snprintf(path, sizeof path, "%s/nul.json", tmpdir);
    FILE *f = fopen(path, "wb");
    static const char text[] = "{\"a\": 1,\n \"b\": 2}\0{\"c\": 3}\n";
    fwrite(text, 1, sizeof text - 1, f);
    fclose(f);
    char *data = (char *)1;
    size_t len = 99;
    tune_error err = {0};
    cr_expect_eq(infile_read_text(path, 1000, &data, &len, &err), TUNE_ERR_INVALID);
    cr_expect_null(data);
    snprintf(where, sizeof where, "%s:2:9", path);
    cr_expect_str_eq(err.where, where);
    cr_expect_str_eq(err.message, "a NUL byte: a text file holds none (a damaged file?)");
    cr_expect_eq(infile_read(path, 1000, &data, &len, &err), TUNE_OK, "binary reads take it");
    cr_expect_eq(len, sizeof text - 1);
    free(data);
}
