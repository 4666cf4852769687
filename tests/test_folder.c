/* test_folder.c - the results folder's file operations (store/folder.h): naming, the lock, the
 * partial last line, counting rows, atomic JSON writes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "store/folder.h"
#include "util_cpu.h"

TestSuite(folder, .init = make_tmpdir, .fini = remove_tmpdir);

Test(folder, make_and_latest)
{
    char dir[4096], given[4096], latest[4096];
    tune_error err = {0};
    cr_assert_eq(folder_make(NULL, tmpdir, "sw", dir, sizeof dir, &err), TUNE_OK, "%s",
                 err.message);
    cr_expect_eq(access(dir, F_OK), 0);
    cr_expect_eq(strncmp(dir + strlen(tmpdir), "/sw/", 4), 0, "%s", dir);
    snprintf(given, sizeof given, "%s/sw/99999999T000000Z", tmpdir);
    cr_assert_eq(folder_make(given, "ignored", "sw", dir, sizeof dir, &err), TUNE_OK);
    cr_expect_str_eq(dir, given);
    cr_assert_eq(folder_latest(tmpdir, "sw", latest, sizeof latest, &err), TUNE_OK);
    cr_expect_str_eq(latest, given, "names are UTC times: the largest is the latest");
    tune_error e2 = {0};
    cr_expect_eq(folder_latest(tmpdir, "other", latest, sizeof latest, &e2), TUNE_ERR_IO);
    cr_expect(strstr(e2.message, "no earlier run of sweep 'other'") != NULL, "%s", e2.message);
}

Test(folder, lock_is_exclusive)
{
    tune_error err = {0};
    int fd = folder_lock(tmpdir, &err);
    cr_assert_geq(fd, 0, "%s", err.message);
    tune_error e2 = {0};
    cr_expect_lt(folder_lock(tmpdir, &e2), 0);
    cr_expect(strstr(e2.message, "another tune run") != NULL, "%s", e2.message);
    folder_unlock(tmpdir, fd);
    int again = folder_lock(tmpdir, &err);
    cr_expect_geq(again, 0, "free once unlocked");
    folder_unlock(tmpdir, again);
}

Test(folder, partial_line_and_count)
{
    char path[4096];
    write_file("raw.jsonl", "{\"a\": 1}\n{\"a\": 2}\n{\"a\"", path, sizeof path);
    cr_expect_eq(folder_count_rows(tmpdir), 2);
    folder_trim_partial_line(path);
    FILE *f = fopen(path, "r");
    char buf[256] = "";
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    cr_expect_str_eq(buf, "{\"a\": 1}\n{\"a\": 2}\n");
    char other[4096];
    snprintf(other, sizeof other, "%s/none", tmpdir);
    cr_expect_eq(folder_count_rows(other), 0);
}

Test(folder, write_json_atomically)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/x.json", tmpdir);
    json_t *j = json_pack("{s:i, s:s}", "b", 1, "a", "x");
    tune_error err = {0};
    cr_assert_eq(folder_write_json(path, j, &err), TUNE_OK);
    json_decref(j);
    json_t *back = json_load_file(path, 0, NULL);
    cr_assert_not_null(back);
    cr_expect_eq(json_integer_value(json_object_get(back, "b")), 1);
    json_decref(back);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    cr_expect_neq(access(tmp, F_OK), 0, "no temporary file left");
    cr_expect_eq(folder_write_json(path, NULL, &err), TUNE_ERR_IO);
}

/* Runs started in the same second get folders of their own, sorted in the order made. */
Test(folder, new_folders_are_unique_and_sorted)
{
    char dirs[4][4096];
    tune_error err = {0};
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(folder_make(NULL, tmpdir, "sw", dirs[i], sizeof dirs[i], &err), TUNE_OK,
                     "%s", err.message);
    for (size_t i = 1; i < 4; i++)
        cr_expect_lt(strcmp(dirs[i - 1], dirs[i]), 0, "%s before %s", dirs[i - 1], dirs[i]);
    char latest[4096];
    cr_assert_eq(folder_latest(tmpdir, "sw", latest, sizeof latest, &err), TUNE_OK);
    cr_expect_str_eq(latest, dirs[3], "the last made is the latest");
}
