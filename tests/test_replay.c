#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/replay.h"
#include "store/results.h"
#include "util_cpu.h"

/* tests/data/replay/run: the rows of an H200 run of sweeps/w4a16.json of 2026-11-23 (H200_RUN)
 * with k = n = 4096 and m in 1, 16, 64, 1024 (4 shapes), one wgmma row at m = 64 turned invalid.
 * H200_RUN: that run's rows, every one, with the keys replay reads (tests/data/runs/README.md). */
#define FIXTURE "tests/data/replay/run"
#define H200_RUN "tests/data/runs/w4a16_h200"

TestSuite(replay, .init = make_tmpdir, .fini = remove_tmpdir);

static replay *run_fixture(const char *strategies, const char *budgets, size_t seeds)
{
    replay_options o;
    replay_options_init(&o);
    cr_assert_eq(replay_parse_strategies(strategies, &o), 0);
    cr_assert_eq(replay_parse_budgets(budgets, &o), 0);
    o.seeds = seeds;
    const char *dirs[] = {FIXTURE};
    tune_error err = {0};
    replay *r = replay_run(dirs, 1, &o, &err);
    cr_assert_not_null(r, "%s: %s", err.where, err.message);
    return r;
}

Test(replay, parse_options)
{
    replay_options o;
    replay_options_init(&o);
    cr_expect_eq(o.n_strategies, 2);
    cr_expect_eq(o.seeds, 20);
    cr_expect_eq(o.n_budgets, 3);
    cr_expect_eq(replay_parse_strategies("model", &o), 0);
    cr_expect_eq(o.n_strategies, 1);
    cr_expect_eq(o.strategies[0], SEARCH_MODEL);
    cr_expect_eq(o.scopes[0], SEARCH_SCOPE_RUN);
    cr_expect_eq(replay_parse_strategies("random,model,model/shape", &o), 0);
    cr_expect_eq(o.n_strategies, 3);
    cr_expect_eq(o.strategies[2], SEARCH_MODEL);
    cr_expect_eq(o.scopes[2], SEARCH_SCOPE_SHAPE);
    char name[32];
    cr_expect_str_eq(replay_strategy_name(&o, 2, name, sizeof name), "model/shape");
    cr_expect_str_eq(replay_strategy_name(&o, 1, name, sizeof name), "model");
    const char *bad_s[] = {"",      "model,", ",model", "model,model", "bayes", "random,,model",
                           "model/run", "model/shape,model/shape"};
    for (size_t i = 0; i < sizeof bad_s / sizeof *bad_s; i++)
        cr_expect_eq(replay_parse_strategies(bad_s[i], &o), -1, "'%s'", bad_s[i]);
    cr_expect_eq(replay_parse_budgets("2.5,100", &o), 0);
    cr_expect_eq(o.n_budgets, 2);
    cr_expect_float_eq(o.budgets[0], 0.025, 1e-12);
    const char *bad_b[] = {"", "0", "101", "5,5", "5,", "x", "-5", "1,2,3,4,5,6,7,8,9"};
    for (size_t i = 0; i < sizeof bad_b / sizeof *bad_b; i++)
        cr_expect_eq(replay_parse_budgets(bad_b[i], &o), -1, "'%s'", bad_b[i]);
}

/* Per shape of the fixture, in the order of first appearance: candidates, and the position
 * (1-based) in row order of the first candidate within 1 % of the best. */
static size_t fixture_shapes(size_t *cands, size_t *first_1pct)
{
    results_rows read;
    size_t n_shapes = 0, pos[8] = {0};
    int64_t ms[8];
    double best[8];
    tune_error err = {0};
    cr_assert_eq(results_read(FIXTURE "/raw.jsonl.gz", &read, &err), TUNE_OK, "%s", err.message);
    const result_row *rows = read.rows;
    size_t n = read.n;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n; i++) {
            if (rows[i].values.n == rows[i].n_axes || rows[i].status == RESULT_SKIPPED)
                continue;
            int64_t m = point_int(&rows[i].values, "m", -1);
            size_t s = 0;
            while (s < n_shapes && ms[s] != m)
                s++;
            if (s == n_shapes) {
                cr_assert_lt(n_shapes, 8);
                ms[s] = m, best[s] = INFINITY, cands[s] = 0, first_1pct[s] = 0;
                n_shapes++;
            }
            double t = rows[i].status == RESULT_OK ? rows[i].time.median : NAN;
            if (pass == 0) {
                cands[s]++;
                best[s] = t < best[s] ? t : best[s];
            } else if (++pos[s] && !first_1pct[s] && t <= best[s] * 1.01) {
                first_1pct[s] = pos[s];
            }
        }
    results_rows_free(&read);
    return n_shapes;
}

Test(replay, fixture_figures_match_the_rows)
{
    size_t cands[8], first[8];
    size_t n_shapes = fixture_shapes(cands, first);
    cr_assert_eq(n_shapes, 4);
    replay *r = run_fixture("exhaustive,random,model", "10,100", 3);
    cr_expect_eq(replay_n_shapes(r, 0), 4);
    size_t total = 0;
    for (size_t s = 0; s < 4; s++)
        total += cands[s];
    cr_expect_eq(replay_n_candidates(r, 0), total);
    cr_expect_eq(total, 342);
    for (size_t k = 0; k < 3; k++) {
        replay_summary sm;
        replay_summarize(r, 0, k, &sm);
        cr_expect_float_eq(sm.at_budget[1], 1.0, 1e-12, "a 100 %% budget finds the best");
        cr_expect_gt(sm.at_budget[0], 0.5);
        cr_expect_leq(sm.at_budget[0], 1.0);
    }
    char out[256];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    char *argv[] = {"tune", "replay", FIXTURE};
    tune_error err = {0};
    cr_assert_eq(replay_write_files(r, out, 3, argv, &err), TUNE_OK, "%s", err.message);
    char path[512];
    snprintf(path, sizeof path, "%s/replay.json", out);
    json_t *j = json_load_file(path, 0, NULL);
    cr_assert_not_null(j);
    json_t *shapes = json_object_get(json_array_get(json_object_get(j, "folders"), 0), "per_shape");
    cr_assert_eq(json_array_size(shapes), 4);
    for (size_t s = 0; s < 4; s++) {
        json_t *sh = json_array_get(shapes, s);
        cr_expect_eq(json_integer_value(json_object_get(sh, "candidates")), (json_int_t)cands[s]);
        /* the exhaustive order is the rows' order: its evaluations to 1 % are the position of
         * the first row within 1 % of the best */
        json_t *ex = json_object_get(json_object_get(sh, "strategies"), "exhaustive");
        cr_expect_float_eq(json_number_value(json_object_get(ex, "evals_1pct")), (double)first[s],
                           1e-9, "shape %zu", s);
    }
    json_decref(j);
    replay_free(r);
}

Test(replay, files_written_and_meta)
{
    replay *r = run_fixture("random,model", "5,10", 2);
    char out[256], path[512];
    snprintf(out, sizeof out, "%s/a/b", tmpdir);
    char *argv[] = {"tune", "replay", FIXTURE, "--out", out};
    tune_error err = {0};
    cr_assert_eq(replay_write_files(r, out, 5, argv, &err), TUNE_OK, "%s", err.message);
    const char *files[] = {"replay.md", "replay.csv", "replay.json", "meta.json"};
    for (size_t i = 0; i < 4; i++) {
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", out, files[i]);
        cr_expect_eq(stat(path, &sb), 0, "%s", path);
    }
    snprintf(path, sizeof path, "%s/meta.json", out);
    json_t *m = json_load_file(path, 0, NULL);
    cr_assert_not_null(m);
    json_t *f0 = json_array_get(json_object_get(m, "replayed"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(f0, "folder")), FIXTURE);
    cr_expect_str_eq(json_string_value(json_object_get(f0, "device")), "NVIDIA H200");
    cr_expect_str_eq(json_string_value(json_object_get(f0, "git_rev")), "5017994233c4");
    cr_expect_eq(json_array_size(json_object_get(m, "strategies")), 2);
    json_decref(m);
    /* the csv: the last row of each (shape, strategy, seed) is the whole shape, at the best */
    snprintf(path, sizeof path, "%s/replay.csv", out);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    char line[1024];
    cr_assert_not_null(fgets(line, sizeof line, f));
    cr_expect_str_eq(line, "sweep,folder,shape,candidates,strategy,seed,evaluations,best_ratio\n");
    size_t finals = 0;
    while (fgets(line, sizeof line, f)) {
        char shape[64], strategy[16];
        size_t cands, seed, evals;
        double ratio;
        cr_assert_eq(sscanf(line, "w4a16," FIXTURE ",\"%63[^\"]\",%zu,%15[^,],%zu,%zu,%lf", shape,
                            &cands, strategy, &seed, &evals, &ratio),
                     6, "%s", line);
        cr_expect_geq(ratio, 1.0);
        if (evals == cands) {
            finals++;
            cr_expect_float_eq(ratio, 1.0, 1e-12, "%s", line);
        }
    }
    fclose(f);
    cr_expect_eq(finals, 4 * 2 * 2);
    replay_free(r);
}

Test(replay, out_inside_a_replayed_folder_is_refused)
{
    replay *r = run_fixture("random", "10", 1);
    tune_error err = {0};
    cr_expect_eq(replay_write_files(r, FIXTURE "/sub/out", 0, NULL, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "folder replayed"), "%s", err.message);
    tune_error err2 = {0};
    cr_expect_eq(replay_write_files(r, "./" FIXTURE, 0, NULL, &err2), TUNE_ERR_INVALID);
    struct stat sb;
    cr_expect_neq(stat(FIXTURE "/sub", &sb), 0, "nothing created inside");
    cr_expect_neq(stat(FIXTURE "/replay.md", &sb), 0, "nothing written inside");
    replay_free(r);
}

/* Warm starts: the fixture as its own prior teaches the model every time, so it comes within 1 %
 * of each shape's best in one or two evaluations (random search: about 30) and reaches the best
 * with 5 %; a rule on a parameter that is not one, or that does not parse, is refused. */
Test(replay, priors_and_rules)
{
    replay_options o;
    replay_options_init(&o);
    cr_assert_eq(replay_parse_strategies("model", &o), 0);
    cr_assert_eq(replay_parse_budgets("5", &o), 0);
    o.seeds = 3;
    const char *dirs[] = {FIXTURE}, *rules[] = {"bn=256"}, *bad[] = {"nope=1"}, *syntax[] = {"bn=1+"};
    o.prior_dirs = dirs;
    o.n_prior_dirs = 1;
    tune_error err = {0};
    replay *r = replay_run(dirs, 1, &o, &err);
    cr_assert_not_null(r, "%s", err.message);
    replay_summary sm;
    replay_summarize(r, 0, 0, &sm);
    cr_expect_leq(sm.evals_1pct, 2.0, "evaluations to 1 %%: %.1f", sm.evals_1pct);
    cr_expect_float_eq(sm.at_budget[0], 1.0, 1e-12);
    replay_free(r);
    o.n_prior_dirs = 0;
    o.rules = rules;
    o.n_rules = 1;
    r = replay_run(dirs, 1, &o, &err);
    cr_assert_not_null(r, "%s", err.message);
    replay_free(r);
    o.rules = bad;
    cr_expect_null(replay_run(dirs, 1, &o, &err));
    cr_expect(strstr(err.message, "nope is not a parameter"), "%s", err.message);
    tune_error err2 = {0};
    o.rules = syntax;
    cr_expect_null(replay_run(dirs, 1, &o, &err2));
    cr_expect(strstr(err2.message, "rule 'bn=1+'"), "%s", err2.message);
}

static void expect_refused(const char *dir, const char *where, const char *what)
{
    replay_options o;
    replay_options_init(&o);
    o.seeds = 1;
    const char *dirs[] = {dir};
    tune_error err = {0};
    replay *r = replay_run(dirs, 1, &o, &err);
    cr_expect_null(r);
    cr_expect(strstr(err.where, where), "where '%s', expected '%s'", err.where, where);
    cr_expect(strstr(err.message, what), "message '%s', expected '%s'", err.message, what);
    replay_free(r);
}

Test(replay, bad_input_names_the_file)
{
    char path[512], dir[256];
    expect_refused(tmpdir, "raw.jsonl", "no raw.jsonl");
    snprintf(dir, sizeof dir, "%s/bad", tmpdir);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"method\": \"gemv\", \"status\": \"ok\"\n", f);
    fclose(f);
    expect_refused(dir, "raw.jsonl", "");
    snprintf(dir, sizeof dir, "%s/baselines", tmpdir);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    f = fopen(path, "w");
    fputs("{\"method\":\"cublas\",\"m\":1,\"bm\":null,\"axes\":[\"m\"],\"params\":[\"bm\"],"
          "\"status\":\"ok\",\"time_median\":1e-5,\"time_n\":5}\n",
          f);
    fclose(f);
    expect_refused(dir, "raw.jsonl", "no row of a tuned method");
}

/* The fixture (committed gzipped, raw.jsonl.gz) replays exactly as its plain twin. */
Test(replay, a_gzipped_folder_replays_as_its_plain_twin)
{
    char dir[256], path[512], cmd[1024];
    snprintf(dir, sizeof dir, "%s/plain", tmpdir);
    cr_assert_eq(mkdir(dir, 0755), 0);
    char *meta = tune_read_file(FIXTURE "/meta.json", NULL, NULL);
    cr_assert(meta);
    write_file("plain/meta.json", meta, path, sizeof path);
    free(meta);
    snprintf(cmd, sizeof cmd, "gunzip -c %s/raw.jsonl.gz > '%s/raw.jsonl'", FIXTURE, dir);
    cr_assert_eq(system(cmd), 0);
    replay_options o;
    replay_options_init(&o);
    cr_assert_eq(replay_parse_strategies("random,model", &o), 0);
    cr_assert_eq(replay_parse_budgets("10,100", &o), 0);
    o.seeds = 3;
    const char *plain_dirs[] = {dir}, *gz_dirs[] = {FIXTURE};
    tune_error err = {0};
    replay *a = replay_run(plain_dirs, 1, &o, &err);
    cr_assert_not_null(a, "%s: %s", err.where, err.message);
    replay *b = replay_run(gz_dirs, 1, &o, &err);
    cr_assert_not_null(b, "%s: %s", err.where, err.message);
    cr_expect_eq(replay_n_shapes(b, 0), 4);
    cr_expect_eq(replay_n_candidates(b, 0), replay_n_candidates(a, 0));
    for (size_t k = 0; k < 2; k++) {
        replay_summary sa, sb;
        replay_summarize(a, 0, k, &sa);
        replay_summarize(b, 0, k, &sb);
        cr_expect_eq(sb.evals_1pct_frac, sa.evals_1pct_frac, "strategy %zu", k);
        for (size_t j = 0; j < 2; j++) {
            cr_expect_eq(sb.at_budget[j], sa.at_budget[j], "strategy %zu budget %zu", k, j);
            cr_expect_eq(sb.rounds[j], sa.rounds[j], "strategy %zu budget %zu", k, j);
        }
    }
    replay_free(a);
    replay_free(b);
    /* a copy of the fixture truncated: one error naming the .gz */
    snprintf(cmd, sizeof cmd, "cp -r %s '%s/gz'", FIXTURE, tmpdir);
    cr_assert_eq(system(cmd), 0);
    snprintf(path, sizeof path, "%s/gz/raw.jsonl.gz", tmpdir);
    snprintf(dir, sizeof dir, "%s/gz", tmpdir);
    truncate_file(path, file_size(path) / 2);
    tune_error_clear(&err);
    const char *cut_dirs[] = {dir};
    cr_expect_null(replay_run(cut_dirs, 1, &o, &err));
    cr_expect_str_eq(err.where, path);
    cr_expect(strncmp(err.message, "truncated gzip file: the compressed data ends early (in line ",
                      61) == 0, "%s", err.message);
}

/* The committed H200 run of sweeps/w4a16.json (60 shapes), 5 seeds: the figures its rows imply
 * (committed gzipped: raw.jsonl.gz). */
Test(replay, committed_h200_run, .timeout = 120)
{
    replay_options o;
    replay_options_init(&o);
    cr_assert_eq(replay_parse_budgets("10,100", &o), 0);
    o.seeds = 5;
    const char *dirs[] = {H200_RUN};
    tune_error err = {0};
    replay *r = replay_run(dirs, 1, &o, &err);
    cr_assert_not_null(r, "%s: %s", err.where, err.message);
    cr_expect_eq(replay_n_shapes(r, 0), 60);
    cr_expect_eq(replay_n_candidates(r, 0), 3672);
    replay_summary rnd, model;
    replay_summarize(r, 0, 0, &rnd);
    replay_summarize(r, 0, 1, &model);
    cr_expect_float_eq(rnd.at_budget[1], 1.0, 1e-12);
    cr_expect_float_eq(model.at_budget[1], 1.0, 1e-12);
    cr_expect_geq(model.at_budget[0], 0.98, "model at 10 %%: %.4f", model.at_budget[0]);
    cr_expect_lt(rnd.at_budget[0], model.at_budget[0]);
    cr_expect_geq(model.vs_random[0], 0.9, "model >= random on %.2f", model.vs_random[0]);
    cr_expect_lt(model.evals_1pct_frac, rnd.evals_1pct_frac);
    cr_expect_eq(rnd.rounds[0], 1, "random proposes a shape's budget in one round");
    cr_expect_geq(model.rounds[0], 3);
    cr_expect_leq(model.rounds[0], 5, "10 %% in %zu rounds", model.rounds[0]);
    replay_free(r);
}

/* Derived features: the options' (--feature), checked against the folder's features; the cost of
 * each budget against the exhaustive run; recorded in meta.json. */
Test(replay, derived_features_and_cost)
{
    replay_options o;
    replay_options_init(&o);
    cr_assert_eq(replay_parse_strategies("random,model", &o), 0);
    cr_assert_eq(replay_parse_budgets("10,100", &o), 0);
    o.seeds = 2;
    const char *dirs[] = {FIXTURE};
    const char *feats[] = {"blocks=(m + bm - 1) / bm * ((n + bn - 1) / bn) * splitk",
                           "per_split=k / splitk / blocks"};
    o.features = feats;
    o.n_features = 2;
    o.features_set = 1;
    tune_error err = {0};
    replay *r = replay_run(dirs, 1, &o, &err);
    cr_assert_not_null(r, "%s", err.message);
    replay_summary sm;
    replay_summarize(r, 0, 1, &sm);
    /* at 100 % every configuration is measured: the exhaustive run's cost */
    cr_expect_float_eq(sm.gpu_time[1], 1.0, 1e-9);
    cr_expect_float_eq(sm.configs[1], 1.0, 1e-9);
    cr_expect_float_eq(sm.kernels[1], 1.0, 1e-9);
    cr_expect_gt(sm.gpu_time[0], 0);
    cr_expect_lt(sm.gpu_time[0], 1.0);
    cr_expect_lt(sm.configs[0], 1.0);
    char out[512];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    char *argv[] = {"replay", FIXTURE};
    cr_assert_eq(replay_write_files(r, out, 2, argv, &err), TUNE_OK, "%s", err.message);
    replay_free(r);
    char path[600];
    snprintf(path, sizeof path, "%s/meta.json", out);
    json_t *meta = json_load_file(path, 0, NULL);
    cr_assert_not_null(meta);
    json_t *f = json_object_get(json_array_get(json_object_get(meta, "replayed"), 0), "features");
    cr_expect_eq(json_object_size(f), 2);
    cr_expect_str_eq(json_string_value(json_object_get(f, "per_split")), "k / splitk / blocks");
    json_decref(meta);
    /* an unknown name, a later feature read before it, a name taken: refused, named */
    const char *bad[][2] = {{"x=q * 2", "unknown name 'q'"},
                            {"y=blocks2 + 1", "unknown name 'blocks2'"},
                            {"bm=m", "'bm' is a feature already"},
                            {"z=m +", "feature 'z=m +'"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tune_error e = {0};
        const char *one[] = {bad[i][0], "blocks2=m"};
        o.features = one;
        o.n_features = 2;
        cr_expect_null(replay_run(dirs, 1, &o, &e));
        cr_expect(strstr(e.message, bad[i][1]), "%s: %s", bad[i][0], e.message);
    }
}
