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
    meta_key_info ki = {0x1234, 12080, "sm_90", NULL, NULL, 7, NULL, NULL, 0};
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

/* A run that measures energy has "energy": true in its key: resumed without it, or a time run
 * resumed with it, is refused (its rows would be mixed: some with energy, some without). */
Test(meta, energy_in_the_key)
{
    meta_key_info ki = {0x1234, 12080, "sm_90", NULL, NULL, 7, NULL, NULL, 0};
    json_t *plain = meta_key_build(&ki);
    cr_expect_null(json_object_get(plain, "energy"), "a time run's key is as before");
    ki.energy = 1;
    json_t *energy = meta_key_build(&ki);
    cr_expect(json_is_true(json_object_get(energy, "energy")));
    write_meta(plain, 0);
    tune_error err = {0};
    cr_expect_eq(meta_check_resume(tmpdir, energy, 0, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "energy was absent, now true") != NULL, "%s", err.message);
    write_meta(energy, 0);
    tune_error e2 = {0};
    cr_expect_eq(meta_check_resume(tmpdir, plain, 0, &e2), TUNE_ERR_INVALID);
    cr_expect(strstr(e2.message, "energy was true, now absent") != NULL, "%s", e2.message);
    tune_error e3 = {0};
    cr_expect_eq(meta_check_resume(tmpdir, energy, 0, &e3), TUNE_OK, "%s", e3.message);
    json_decref(plain);
    json_decref(energy);
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

/* A searched run's key holds its settings: resumed as another search, or as an exhaustive run
 * (whose key has no "search"), it is refused with the difference named. */
Test(meta, searched_key_and_resume)
{
    meta_key_info ki = {0x1234, 12080, "sm_90", NULL, NULL, 7, NULL,
                        "random budget=10% seed=7 batch=0", 0};
    json_t *key = meta_key_build(&ki);
    cr_assert_not_null(key);
    cr_expect_str_eq(json_string_value(json_object_get(key, "search")),
                     "random budget=10% seed=7 batch=0");
    write_meta(key, 0);
    tune_error err = {0};
    cr_expect_eq(meta_check_resume(tmpdir, key, 0, &err), TUNE_OK, "%s", err.message);
    ki.search = "model budget=10% seed=7 batch=0";
    json_t *model = meta_key_build(&ki);
    cr_expect_eq(meta_check_resume(tmpdir, model, 0, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "search was \"random budget=10% seed=7 batch=0\", now \"model") !=
                  NULL,
              "%s", err.message);
    /* derived features (run/search.c writes them into the key): other features, another search */
    ki.search = "random budget=10% seed=7 batch=0 features=blocks=m / bm";
    json_t *feats = meta_key_build(&ki);
    tune_error e3 = {0};
    cr_expect_eq(meta_check_resume(tmpdir, feats, 0, &e3), TUNE_ERR_INVALID);
    cr_expect(strstr(e3.message, "now \"random budget=10% seed=7 batch=0 features=blocks=m / bm\"") !=
                  NULL,
              "%s", e3.message);
    json_decref(feats);
    ki.search = NULL;
    json_t *plain = meta_key_build(&ki);
    cr_expect_null(json_object_get(plain, "search"), "an exhaustive key is as before");
    tune_error e2 = {0};
    cr_expect_eq(meta_check_resume(tmpdir, plain, 0, &e2), TUNE_ERR_INVALID);
    cr_expect(strstr(e2.message, "search was \"random budget=10% seed=7 batch=0\", now absent") !=
                  NULL,
              "%s", e2.message);
    json_decref(key);
    json_decref(model);
    json_decref(plain);
}

/* The search block: built, its settings and report line read back; finished needs the end. */
Test(meta, search_block)
{
    tune_point a = {0}, b = {0};
    point_set_int(&a, "m", 1);
    point_set_str(&b, "dtype", "float16");
    const tune_point *shapes[] = {&a, &b};
    size_t cands[] = {100, 20}, budget[] = {10, 2}, evaluated[] = {10, 2};
    const char *warm[] = {"results/x/1"};
    meta_search ms = {.strategy = "random", .budget = "10%", .seed = 7, .batch = 4,
                      .time_limit_s = 600, .finished = 1, .rounds = 3, .warm_start = warm,
                      .n_warm_start = 1, .prior_rows = 55, .space = 6725, .baselines = 240,
                      .candidates = 120, .evaluated = 12, .kernels = 312,
                      .kernels_compiled = 40, .n_shapes = 2, .shapes = shapes,
                      .shape_candidates = cands, .shape_budget = budget,
                      .shape_evaluated = evaluated};
    json_t *s = meta_search_json(&ms);
    cr_assert_not_null(s);
    json_t *m = json_pack("{s:o}", "search", s);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(s, "configs"), "measured")),
                 252);
    cr_expect_str_eq(json_string_value(json_object_get(s, "seed")), "7");
    json_t *sh = json_object_get(json_array_get(json_object_get(s, "shapes"), 1), "shape");
    cr_expect_str_eq(json_string_value(json_object_get(sh, "dtype")), "float16");
    char buf[512];
    cr_expect_eq(meta_search_settings(m, buf, sizeof buf), 1);
    cr_expect_str_eq(buf, "random, budget 10%, seed 7, batch 4, warm start results/x/1");
    cr_expect_eq(meta_search_line(m, buf, sizeof buf), 0);
    cr_expect_str_eq(buf, "searched: random, budget 10 %: 252 of 6 725 configurations measured");
    cr_expect_eq(meta_search_finished(m), 0, "no end yet");
    json_object_set_new(m, "end", json_string("2026-11-23T12:00:00Z"));
    cr_expect_eq(meta_search_finished(m), 1);
    json_t *plain = json_object();
    cr_expect_eq(meta_search_settings(plain, buf, sizeof buf), 0);
    cr_expect_str_eq(buf, "exhaustive (not searched)");
    cr_expect_eq(meta_search_line(plain, buf, sizeof buf), -1);
    cr_expect_str_eq(buf, "");
    json_decref(m);
    json_decref(plain);
    /* the run's budget: said in the block and in best.md's line; /shape: per shape */
    ms.budget = "10%";
    ms.scope = "run";
    ms.budget_evaluations = 12;
    m = json_pack("{s:o}", "search", meta_search_json(&ms));
    s = json_object_get(m, "search");
    cr_expect_str_eq(json_string_value(json_object_get(s, "scope")), "run");
    cr_expect_eq(json_integer_value(json_object_get(s, "budget_evaluations")), 12);
    cr_expect_eq(meta_search_line(m, buf, sizeof buf), 0);
    cr_expect_str_eq(buf, "searched: random, budget 10 % of the run: 252 of 6 725 configurations "
                          "measured");
    json_decref(m);
    ms.budget = "4/shape";
    ms.scope = "shape";
    m = json_pack("{s:o}", "search", meta_search_json(&ms));
    cr_expect_eq(meta_search_line(m, buf, sizeof buf), 0);
    cr_expect_str_eq(buf, "searched: random, budget 4 per shape: 252 of 6 725 configurations "
                          "measured");
    cr_expect_eq(meta_search_settings(m, buf, sizeof buf), 1);
    cr_expect_str_eq(buf, "random, budget 4/shape, seed 7, batch 4, warm start results/x/1");
    json_decref(m);
}
