/* test_meta.c - meta.json (store/meta.h): status counts, the run key and the resume check, the
 * readers (report axes, device, environment items, shard fields). CPU only: meta.json trees are
 * written here by hand. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/meta.h"
#include "util_cpu.h"

TestSuite(meta, .init = make_tmpdir, .fini = remove_tmpdir);

Test(meta, count_status)
{
    run_summary s;
    memset(&s, 0, sizeof s);
    result_status all[] = {
        RESULT_OK,      RESULT_OK,      RESULT_INVALID, RESULT_COMPILE_ERROR, RESULT_LAUNCH_ERROR,
        RESULT_CRASHED, RESULT_TIMEOUT, RESULT_SKIPPED, RESULT_COMPILED};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        meta_count_status(&s, all[i]);
    cr_expect_eq(s.n_ok, 2);
    cr_expect_eq(s.n_invalid + s.n_compile_error + s.n_launch_error + s.n_crashed + s.n_timeout +
                     s.n_skipped + s.n_compiled,
                 7);
    cr_expect_eq(s.n_launch_error, 1);
}

static void write_meta(const json_t *key, int merged)
{
    json_t *m = json_pack("{s:i, s:s, s:O, s:{s:f}}", "schema_version", 1, "start",
                          "2026-11-22T10:00:00Z", "key", key, "read_bw", "bytes_per_second", 4e12);
    if (merged)
        json_object_set_new(m, "shard", json_pack("{s:b}", "merged", 1));
    tune_error err = {0};
    cr_assert_eq(meta_write(tmpdir, m, &err), TUNE_OK, "%s", err.message);
    json_decref(m);
}

Test(meta, key_and_resume)
{
    meta_key_info ki = {0x1234, 12080, "sm_90", NULL, NULL, 7, NULL, NULL};
    json_t *key = meta_key_build(&ki);
    cr_assert_not_null(key);
    cr_expect_str_eq(json_string_value(json_object_get(key, "kernels_hash")), "0000000000001234");
    cr_expect_str_eq(json_string_value(json_object_get(key, "arch")), "sm_90");
    write_meta(key, 0);
    tune_error err = {0};
    cr_expect_eq(meta_check_resume(tmpdir, key, 0, &err), TUNE_OK, "%s", err.message);
    char start[32] = "unchanged";
    double bw = 0;
    meta_resume_info(tmpdir, start, sizeof start, &bw);
    cr_expect_str_eq(start, "2026-11-22T10:00:00Z");
    cr_expect_float_eq(bw, 4e12, 1);
    ki.seed = 8;
    json_t *other = meta_key_build(&ki);
    cr_expect_eq(meta_check_resume(tmpdir, other, 0, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "seed was 7, now 8") != NULL, "%s", err.message);
    write_meta(key, 1);
    tune_error e2 = {0};
    cr_expect_eq(meta_check_resume(tmpdir, key, 0, &e2), TUNE_ERR_INVALID);
    cr_expect(strstr(e2.message, "merged shards") != NULL, "%s", e2.message);
    json_decref(key);
    json_decref(other);
}

Test(meta, readers)
{
    json_t *m =
        json_loads("{\"sweep\": {\"name\": \"sparq\"}, \"device\": {\"name\": \"NVIDIA H200\"},"
                   " \"report\": {\"rows\": [\"g\"], \"cols\": [\"k_pre\", \"k\"]},"
                   " \"versions\": {\"nvrtc\": 13000}, \"timing\": {\"reps\": 100},"
                   " \"shard\": {\"index\": 1, \"count\": 4, \"configs\": 10,"
                   " \"total_configs\": 40, \"plan\": \"abc\"}}",
                   0, NULL);
    cr_assert_not_null(m);
    cr_expect_str_eq(meta_sweep_name(m), "sparq");
    cr_expect_str_eq(meta_device_name(m), "NVIDIA H200");
    const char *rows[4], *cols[4], *title = NULL;
    size_t nr = 0, nc = 0;
    meta_report_axes(m, rows, &nr, cols, &nc, 4, &title);
    cr_expect_eq(nr, 1);
    cr_expect_eq(nc, 2);
    cr_expect_str_eq(cols[1], "k");
    cr_expect_str_eq(title, "sparq");
    for (size_t i = 0; i < META_N_ENV; i++) {
        char *t = meta_env_text(m, i);
        const char *k = meta_env_items[i].key;
        if (strcmp(k, "gpu") == 0)
            cr_expect_str_eq(t, "NVIDIA H200");
        else if (strcmp(k, "nvrtc") == 0)
            cr_expect_str_eq(t, "13000");
        else if (strcmp(k, "timing") == 0)
            cr_expect_str_eq(t, "{\"reps\":100}");
        else if (strcmp(k, "cublas") == 0)
            cr_expect_str_eq(t, "absent");
        free(t);
    }
    meta_shard sh;
    const char *why = NULL;
    cr_expect_eq(meta_shard_read(m, &sh, &why), 0);
    cr_expect_eq(sh.index, 1);
    cr_expect_eq(sh.total_configs, 40);
    cr_expect_str_eq(sh.plan, "abc");
    json_object_del(json_object_get(m, "shard"), "plan");
    json_object_set_new(json_object_get(m, "shard"), "index", json_integer(9));
    cr_expect_eq(meta_shard_read(m, &sh, &why), -1);
    cr_expect_str_eq(why, "incomplete");
    json_decref(m);
}

/* meta.json's fields are checked when read, errors with the file and the JSON path. */
Test(meta, check_names_the_json_path)
{
    const char *texts[] = {"{\"report\": {\"rows\": [\"g\", 1]}}",
                           "{\"schema_version\": 99}", "{\"report\": []}", "[1]"};
    const char *wants[] = {"m.json: $.report.rows: [1]: expected a string (an axis name)",
                           "m.json: $.schema_version: version 99 is newer than this tune reads "
                           "(2): use a newer tune",
                           "m.json: $.report: expected an object", "m.json: expected a JSON object"};
    for (size_t i = 0; i < 4; i++) {
        json_t *m = json_loads(texts[i], 0, NULL);
        tune_error err = {0};
        cr_expect_eq(meta_check(m, "m.json", 8, &err), TUNE_ERR_INVALID, "case %zu", i);
        char buf[3000];
        cr_expect_str_eq(tune_error_text(&err, buf, sizeof buf), wants[i]);
        const char *rows[8], *cols[8], *title;
        size_t nr, nc;
        meta_report_axes(m, rows, &nr, cols, &nc, 8, &title); /* never a non-string */
        for (size_t k = 0; k < nr; k++)
            cr_expect_not_null(rows[k]);
        json_decref(m);
    }
    json_t *ok = json_loads("{\"schema_version\": 1, \"report\": {\"rows\": [\"g\"]}}", 0, NULL);
    cr_expect_eq(meta_check(ok, "m.json", 8, NULL), TUNE_OK);
    json_decref(ok);
}
