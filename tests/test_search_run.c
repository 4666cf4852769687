/* test_search_run.c - searched runs (run/search.c) end to end through the tune binary: the run
 * measures exactly the configurations the search proposes (and the baselines), compiles only
 * their kernels, re-times each shape once after the last round, says so in meta.json and best.md;
 * a crashed configuration is a row and a failed observation; a run cut short and resumed measures
 * the same configurations; shards of a searched run merge. On a machine without a GPU the tests
 * that run the binary skip with the reason; the estimate of `tune validate` is checked anyway. */
#include <criterion/criterion.h>
#include <glob.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <signal.h>

#include "core/clock.h"
#include "model/search.h"
#include "model/space.h"
#include "model/sweep.h"
#include "run/internal.h"
#include "run/run.h"
#include "run/search_ctx.h"
#include "store/meta.h"
#include "store/results.h"
#include "store/retime.h"
#include "util.h"

#define SPARQ "tests/data/search/sparq_small.json"
#define FAULTS "tests/data/search/faults.json"

/* The tune binary with args (a sweep run: the tests' kernel cache; `merge ...`: none); its exit
 * status. */
static int run_tune(const char *args)
{
    char cmd[4096];
    const char *bin = getenv("TUNE_BIN");
    snprintf(cmd, sizeof cmd, "%s %s --quiet%s >/dev/null 2>&1", bin && *bin ? bin : TUNE_BIN,
             args, strncmp(args, "merge ", 6) == 0 ? "" : " --cache /tmp/tune-test-cache");
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}


/* What the run must measure, from model/search.h alone: the baselines and, every candidate
 * observed, the proposals of every round (sorted identities, one per line; new). */
static char *expected_identities(const char *path, uint64_t seed, size_t *n)
{
    sweep *sw = test_load_sweep(path);
    tune_error err = {0};
    space *sp = space_build(sw, &err);
    cr_assert_not_null(sp, "%s", err.message);
    search_options o = sw->search.opt;
    o.seed = seed;
    search *s = search_new(&o, NULL, 0, &err);
    cr_assert_not_null(s, "%s", err.message);
    size_t nc = space_n_configs(sp), k = 0, len = 1;
    char **ids = calloc(nc + 1, sizeof *ids), buf[4096];
    for (size_t ci = 0; ci < nc; ci++) {
        const space_config *c = space_config_at(sp, ci);
        if (c->param == SPACE_NO_PARAM) {
            ids[k++] = strdup(space_config_identity(sw, sp, ci, buf, sizeof buf));
            continue;
        }
        tune_point p;
        space_config_point(sp, ci, &p);
        cr_assert_eq(search_add(s, c->shape, ci, &p), 0);
    }
    size_t *round = calloc(nc + 1, sizeof *round), m;
    while ((m = search_next(s, round, nc)) > 0)
        for (size_t i = 0; i < m; i++) {
            search_observe(s, round[i], 1e-3);
            ids[k++] = strdup(space_config_identity(sw, sp, round[i], buf, sizeof buf));
        }
    qsort(ids, k, sizeof *ids, test_cmp_str);
    char *all = NULL;
    for (size_t i = 0; i < k; i++)
        len += strlen(ids[i]) + 1;
    all = calloc(len, 1);
    for (size_t i = 0; i < k; i++) {
        strcat(strcat(all, ids[i]), "\n");
        free(ids[i]);
    }
    *n = k;
    free(ids);
    free(round);
    search_free(s);
    space_free(sp);
    sweep_free(sw);
    return all;
}

static json_t *load_meta(const char *dir)
{
    json_error_t je;
    json_t *m = meta_load(dir, &je);
    cr_assert_not_null(m, "%s/meta.json: %s", dir, je.text);
    return m;
}

static json_int_t search_int(const json_t *meta, const char *group, const char *key)
{
    const json_t *s = meta_search_block(meta);
    cr_assert_not_null(s, "meta.json has no search block");
    const json_t *g = group ? json_object_get(s, group) : s;
    return json_integer_value(json_object_get(g, key));
}

static size_t count_verdicts(const char *dir)
{
    retime_verdict *v = NULL;
    size_t n = 0;
    tune_error err = {0};
    cr_assert_eq(retime_read(dir, &v, &n, &err), TUNE_OK, "%s", err.message);
    free(v);
    return n;
}

static void test_dir(char *dir, size_t size, const char *name)
{
    snprintf(dir, size, "/tmp/tune-test-search-%s-%d", name, (int)getpid());
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(search_run, validate_counts_the_budget)
{
    sweep *sw = test_load_sweep(SPARQ);
    tune_error err = {0};
    space *sp = space_build(sw, &err);
    run_options opt;
    run_options_init(&opt);
    sweep_search set;
    cr_assert_eq(run_search_settings(sw, &opt, &set, &err), TUNE_OK, "%s", err.message);
    size_t cands, base, measured;
    cr_assert_eq(run_search_estimate(sw, sp, &set, &cands, &base, &measured, &err), TUNE_OK);
    cr_expect_eq(cands, 16);
    cr_expect_eq(base, 4);
    cr_expect_eq(measured, 4 + 2 * 3);
    opt.budget = "50%";
    cr_assert_eq(run_search_settings(sw, &opt, &set, &err), TUNE_OK);
    cr_assert_eq(run_search_estimate(sw, sp, &set, &cands, &base, &measured, &err), TUNE_OK);
    cr_expect_eq(measured, 4 + 2 * 4);
    opt.search = "exhaustive";
    opt.budget = NULL;
    sweep_search plain = {0};
    search_options_init(&plain.opt);
    sweep *copy = test_load_sweep(SPARQ);
    copy->search.opt = plain.opt;
    copy->search.time_limit_s = 0;
    cr_assert_eq(run_search_settings(copy, &opt, &set, &err), TUNE_OK);
    cr_expect_eq(sweep_search_on(&set), 0, "exhaustive without a budget is today's run");
    const char *warm[] = {"results/x"};
    opt.warm_start = warm;
    opt.n_warm_start = 1;
    cr_expect_eq(run_search_settings(copy, &opt, &set, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "a warm start applies to a searched run") != NULL, "%s",
              err.message);
    space_free(sp);
    sweep_free(sw);
    sweep_free(copy);
}

/* A searched run measures the baselines and exactly what the search proposes, compiles fewer
 * kernels than the space has, re-times each shape once (not once per round), and says so. The
 * same seed measures the same configurations again. */
Test(search_run, measures_the_proposals_once_retimed, .timeout = 600)
{
    require_gpu_in_child();
    char dir[256], dir2[256], args[1024];
    test_dir(dir, sizeof dir, "sparq");
    test_dir(dir2, sizeof dir2, "sparq2");
    snprintf(args, sizeof args, "%s --out %s", SPARQ, dir);
    cr_assert_eq(run_tune(args), 0, "tune %s", args);
    size_t n = 0, n_exp = 0;
    char *got = test_row_identities(dir, &n), *want = expected_identities(SPARQ, 11, &n_exp);
    cr_expect_eq(n, 10);
    cr_expect_str_eq(got, want);
    json_t *m = load_meta(dir);
    cr_expect_eq(search_int(m, NULL, "rounds"), 2);
    cr_expect_eq(search_int(m, "configs", "candidates"), 16);
    cr_expect_eq(search_int(m, "configs", "evaluated"), 6);
    cr_expect_eq(search_int(m, "configs", "measured"), 10);
    cr_expect_lt(search_int(m, "kernels", "compiled"), search_int(m, "kernels", "space"));
    cr_expect(json_is_true(json_object_get(meta_search_block(m), "finished")));
    cr_expect_not_null(json_object_get(json_object_get(m, "key"), "search"));
    /* one worker measured every round; the timeline has a record per round */
    const json_t *tl = json_object_get(meta_search_block(m), "timeline");
    cr_expect_eq(json_integer_value(json_object_get(tl, "workers")), 1);
    const json_t *rounds = json_object_get(tl, "rounds");
    cr_expect_eq(json_array_size(rounds), 2);
    size_t measured = 0;
    for (size_t r = 0; r < json_array_size(rounds); r++)
        measured += (size_t)json_integer_value(
            json_object_get(json_array_get(rounds, r), "configurations"));
    cr_expect_eq(measured, 10, "the rounds' configurations are the rows");
    json_decref(m);
    cr_expect_eq(count_verdicts(dir), 2, "one verdict per shape, not per round");
    char path[600];
    snprintf(path, sizeof path, "%s/best.md", dir);
    char *md = tune_read_file(path, NULL, NULL);
    cr_assert_not_null(md);
    cr_expect(strstr(md, "Searched: random, budget 3 per shape: 10 of 20 configurations measured") != NULL,
              "%s", md);
    free(md);
    snprintf(args, sizeof args, "%s --out %s", SPARQ, dir2);
    cr_assert_eq(run_tune(args), 0);
    size_t n2 = 0;
    char *again = test_row_identities(dir2, &n2);
    cr_expect_str_eq(again, got, "the same seed measures the same configurations");
    free(again);
    free(got);
    free(want);
}

/* A crashed configuration is a row (crashed or launch_error), a failed observation, and the next
 * worker goes on: every candidate of a 100 % budget has a row. */
Test(search_run, crash_is_a_failed_observation, .timeout = 600)
{
    require_gpu_in_child();
    char dir[256], args[1024];
    test_dir(dir, sizeof dir, "faults");
    snprintf(args, sizeof args, "%s --out %s --watchdog 5", FAULTS, dir);
    cr_assert_eq(run_tune(args), 0, "tune %s", args);
    char path[600];
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    results_rows read;
    size_t ok = 0, lost = 0;
    tune_error err = {0};
    cr_assert_eq(results_read(path, &read, &err), TUNE_OK, "%s", err.message);
    const result_row *rows = read.rows;
    size_t n = read.n;
    cr_expect_eq(n, 6);
    for (size_t i = 0; i < n; i++) {
        const char *fault = point_str(&rows[i].values, "fault", "?");
        if (strcmp(fault, "none") == 0)
            ok += rows[i].status == RESULT_OK;
        else
            lost += rows[i].status == RESULT_CRASHED || rows[i].status == RESULT_LAUNCH_ERROR;
    }
    cr_expect_eq(ok, 2);
    cr_expect_eq(lost, 4);
    results_rows_free(&read);
    json_t *m = load_meta(dir);
    cr_expect_eq(search_int(m, "configs", "evaluated"), 6, "crashes count as observations");
    cr_expect_eq(search_int(m, NULL, "rounds"), 3);
    json_int_t workers = search_int(m, "timeline", "workers");
    cr_expect_geq(workers, 2, "a crash costs the worker: the next one goes on (%d)", (int)workers);
    json_decref(m);
    cr_expect_eq(count_verdicts(dir), 1);
}

/* A searched run cut short (its rows after the third gone, half a row left, no verdicts yet) and
 * resumed measures the same configurations as the whole run, each once; a resume as another
 * search (or by another objective) is refused. */
Test(search_run, resume_measures_the_same_configurations, .timeout = 600)
{
    require_gpu_in_child();
    char dir[256], args[1024], path[600];
    test_dir(dir, sizeof dir, "resume");
    snprintf(args, sizeof args, "%s --out %s", SPARQ, dir);
    cr_assert_eq(run_tune(args), 0);
    size_t n_full = 0, n_res = 0;
    char *full = test_row_identities(dir, &n_full);
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    char *text = tune_read_file(path, NULL, NULL);
    cr_assert_not_null(text);
    char *cut = text;
    for (int i = 0; i < 3; i++)
        cut = strchr(cut, '\n') + 1;
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fwrite(text, 1, (size_t)(cut - text), f);
    fputs("{\"sweep\":\"search_sparq_small\",\"fam", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/retime.jsonl", dir);
    unlink(path);
    snprintf(args, sizeof args, "%s --out %s --resume --search-seed 9", SPARQ, dir);
    cr_expect_neq(run_tune(args), 0, "a resume with another search seed is refused");
    snprintf(args, sizeof args, "%s --out %s --resume --search exhaustive", SPARQ, dir);
    cr_expect_neq(run_tune(args), 0, "a resume as another strategy is refused");
    snprintf(args, sizeof args, "%s --out %s --resume --objective energy", SPARQ, dir);
    cr_expect_neq(run_tune(args), 0, "a resume by another objective is refused");
    snprintf(args, sizeof args, "%s --out %s --resume", SPARQ, dir);
    cr_assert_eq(run_tune(args), 0);
    char *resumed = test_row_identities(dir, &n_res);
    cr_expect_eq(n_res, n_full);
    cr_expect_str_eq(resumed, full);
    cr_expect_eq(count_verdicts(dir), 2);
    free(text);
    free(full);
    free(resumed);
}

/* Two shards of a searched run, each searching its own shape, merge; a shard run with another
 * budget is refused by the merge; a warm start from the merged folder is accepted. */
Test(search_run, shards_merge_and_warm_start, .timeout = 600)
{
    require_gpu_in_child();
    char d0[256], d1[256], dx[256], out[256], warm[256], args[2048];
    test_dir(d0, sizeof d0, "shard0");
    test_dir(d1, sizeof d1, "shard1");
    test_dir(dx, sizeof dx, "shardx");
    test_dir(out, sizeof out, "merged");
    test_dir(warm, sizeof warm, "warm");
    snprintf(args, sizeof args, "%s --shard 0/2 --out %s", SPARQ, d0);
    cr_assert_eq(run_tune(args), 0);
    snprintf(args, sizeof args, "%s --shard 1/2 --out %s", SPARQ, d1);
    cr_assert_eq(run_tune(args), 0);
    snprintf(args, sizeof args, "%s --shard 1/2 --out %s --budget 2", SPARQ, dx);
    cr_assert_eq(run_tune(args), 0);
    snprintf(args, sizeof args, "merge %s %s %s", out, d0, dx);
    cr_expect_neq(run_tune(args), 0, "shards with other search settings are not merged");
    snprintf(args, sizeof args, "merge %s %s %s", out, d0, d1);
    cr_assert_eq(run_tune(args), 0);
    size_t n = 0, n_exp = 0;
    char *got = test_row_identities(out, &n), *want = expected_identities(SPARQ, 11, &n_exp);
    cr_expect_str_eq(got, want, "each shard searched its own shape as the whole run does");
    json_t *m = load_meta(out);
    cr_expect_eq(search_int(m, "configs", "evaluated"), 6);
    cr_expect_eq(search_int(m, "configs", "space"), 20);
    json_decref(m);
    snprintf(args, sizeof args, "%s --out %s --warm-start %s --budget 1", SPARQ, warm, out);
    cr_assert_eq(run_tune(args), 0);
    m = load_meta(warm);
    cr_expect_eq(search_int(m, NULL, "prior_rows"), 6);
    json_decref(m);
    snprintf(args, sizeof args, "%s --out %s-bad --warm-start tests/data/w4a16_legacy", SPARQ,
             warm);
    cr_expect_neq(run_tune(args), 0, "a warm start from another family and op is refused");
    free(got);
    free(want);
}

/* ---- the session's protocol, with a stand-in for the GPU worker (no GPU needed) ---- */

static char stand_in_marker[300]; /* exists once the stand-in has crashed (it crashes once) */
static int stand_in_crash;        /* crash at the first configuration of the second batch */

/* Speaks run_session_body's protocol: reads the kernels it is told (from the cache, as the
 * worker does), refuses a configuration whose kernels it has not been told (F), answers each
 * configuration with B and E (a median of 1 ms + 1 us per configuration index), re-times (T)
 * each shape of a "G 1" batch and each "T s", and ends each batch with D. */
static int stand_in_body(void *ctx, int fd, worker_inbox *in)
{
    run_ctx *rc = ctx;
    size_t nc = space_n_configs(rc->sp), batches = 0;
    unsigned char *todo = calloc(nc + 1, 1);
    size_t *idx = NULL;
    char line[8192], *end;
    while (todo && worker_recv(in, line, sizeof line) == 1) {
        const char *p = line + 1;
        size_t n = 0;
        if (line[0] == 'Q')
            break;
        if (line[0] == 'P' && run_session_plans(rc, line) != TUNE_OK) {
            worker_send(fd, "F %d %s", (int)rc->err->code, rc->err->message);
            return 4;
        }
        if (line[0] == 'K') {
            free(idx);
            if (!(idx = calloc(rc->n_kernels + 1, sizeof *idx)))
                break;
            for (unsigned long long k; (k = strtoull(p, &end, 10), end != p); p = end)
                if (k < rc->n_kernels)
                    idx[n++] = (size_t)k;
            run_read_cached_kernels(rc, idx, n);
        } else if (line[0] == 'C') {
            for (unsigned long long ci; (ci = strtoull(p, &end, 10), end != p); p = end)
                todo[ci < nc ? ci : 0] = 1;
        } else if (line[0] == 'T') {
            size_t s = 0;
            sscanf(line, "T %zu", &s);
            worker_send(fd, "T %zu", s);
            worker_send(fd, "D");
        } else if (line[0] == 'G') {
            int retime = line[2] == '1';
            size_t shape = SIZE_MAX;
            batches++;
            for (size_t ci = 0; ci < nc; ci++) {
                if (!todo[ci])
                    continue;
                const run_plan *pl = run_plan_find(rc, ci);
                if (!pl) {
                    worker_send(fd, "F %d configuration %zu told before its plan",
                                (int)TUNE_ERR_INVALID, ci);
                    return 4;
                }
                for (int r = 0; r < pl->n_refs; r++) {
                    const compile_job *j = &rc->kernels[pl->refs[r]].job;
                    if (!j->cubin && j->status == TUNE_OK) {
                        worker_send(fd, "F %d configuration %zu told before its kernel %s",
                                    (int)TUNE_ERR_INVALID, ci, j->name);
                        return 4;
                    }
                }
                size_t sh = space_config_at(rc->sp, ci)->shape;
                if (retime && shape != SIZE_MAX && sh != shape)
                    worker_send(fd, "T %zu", shape);
                shape = sh;
                worker_send(fd, "B %zu", ci);
                if (stand_in_crash && batches == 2 && access(stand_in_marker, F_OK) != 0) {
                    FILE *f = fopen(stand_in_marker, "w");
                    if (f)
                        fclose(f);
                    raise(SIGSEGV);
                }
                worker_send(fd, "E %zu %d %.17g", ci, (int)RESULT_OK, 1e-3 + 1e-6 * (double)ci);
            }
            if (retime && shape != SIZE_MAX)
                worker_send(fd, "T %zu", shape);
            memset(todo, 0, nc);
            worker_send(fd, "D");
        }
    }
    free(todo);
    free(idx);
    return 0;
}

/* A searched run of SPARQ measured by the stand-in: the run's context set up as run_sweep does
 * (no GPU: no probe), then run_search. Returns the timeline's workers; *lost gets the lost rows
 * (crashed) written by the coordinator, *done the configurations with a row. */
static size_t stand_in_run(const char *out, const char *cache, size_t *done, size_t *lost,
                           size_t *rounds_told)
{
    sweep *sw = test_load_sweep(SPARQ);
    tune_error err = {0};
    run_options opt;
    run_options_init(&opt);
    opt.quiet = 1;
    opt.arch = 90;
    opt.cache_dir = cache;
    run_ctx rc = {.sw = sw, .opt = &opt, .err = &err, .lock_fd = -1, .arch = 90};
    rc.sp = space_build(sw, &err);
    cr_assert_not_null(rc.sp, "%s", err.message);
    snprintf(rc.out_dir, sizeof rc.out_dir, "%s", out);
    snprintf(rc.gi.name, sizeof rc.gi.name, "stand-in");
    sweep_search set; /* planned as the rounds propose (plan.c), the worker told ("P") */
    cr_assert_eq(run_search_settings(sw, &opt, &set, &err), TUNE_OK, "%s", err.message);
    cr_assert_eq(run_search_prepare(&rc, &set), TUNE_OK, "%s", err.message);
    rc.search->session_body = stand_in_body;
    rc.done = calloc(space_n_configs(rc.sp) + 1, 1);
    rc.t0 = clock_now();
    run_summary sum;
    memset(&sum, 0, sizeof sum);
    cr_assert_eq(run_search(&rc, &sum), TUNE_OK, "%s", err.message);
    *done = 0;
    for (size_t ci = 0; ci < space_n_configs(rc.sp); ci++)
        *done += rc.done[ci];
    /* planned lazily: the configurations measured (the baselines, the proposals) alone */
    cr_expect_eq(rc.n_plans, *done, "%zu configurations planned, %zu measured", rc.n_plans, *done);
    cr_expect_lt(rc.n_plans, space_n_configs(rc.sp));
    for (size_t s = 0; s < space_n_shapes(rc.sp); s++)
        cr_expect(rc.search->retimed[s], "shape %zu re-timed", s);
    *lost = sum.n_crashed;
    json_t *m = run_search_meta(&rc);
    const json_t *tl = json_object_get(m, "timeline");
    size_t workers = (size_t)json_integer_value(json_object_get(tl, "workers"));
    *rounds_told = json_array_size(json_object_get(tl, "rounds"));
    size_t kernels = 0;
    for (size_t r = 0; r < *rounds_told; r++)
        kernels += (size_t)json_integer_value(
            json_object_get(json_array_get(json_object_get(tl, "rounds"), r), "kernels"));
    cr_expect_gt(kernels, 0, "the rounds compiled their kernels");
    cr_log_info("stand-in run: %zu workers, %zu kernels compiled, %zu rows", workers, kernels,
                (size_t)sum.n_crashed);
    cr_expect(json_is_true(json_object_get(m, "finished")));
    json_decref(m);
    free(rc.done);
    rc.done = NULL;
    run_ctx_free(&rc);
    sweep_free(sw);
    return workers;
}

/* The session, without a GPU: the compile child tells each kernel, the stand-in is told every
 * configuration only once its kernels are read, measures the baselines and every proposal once,
 * re-times each shape, and one worker does it all; a worker that crashes costs its configuration
 * a crashed row and the next worker goes on. */
Test(search_run, session_protocol_with_a_stand_in_worker, .timeout = 900)
{
    char dir[256], cache[256];
    size_t n_exp = 0, done = 0, lost = 0, rounds = 0;
    free(expected_identities(SPARQ, 11, &n_exp));
    test_dir(dir, sizeof dir, "stand-in");
    test_dir(cache, sizeof cache, "stand-in-cache"); /* cold: every kernel compiled, told */
    cr_expect_eq(stand_in_run(dir, cache, &done, &lost, &rounds), 1, "one worker for the run");
    cr_expect_eq(done, n_exp, "the baselines and every proposal, once");
    cr_expect_eq(lost, 0);
    cr_expect_eq(rounds, 2);
    test_dir(dir, sizeof dir, "stand-in-crash");
    snprintf(stand_in_marker, sizeof stand_in_marker, "%s.crashed", dir);
    unlink(stand_in_marker);
    stand_in_crash = 1;
    cr_expect_eq(stand_in_run(dir, cache, &done, &lost, &rounds), 2, "a crash costs one worker");
    stand_in_crash = 0;
    cr_expect_eq(access(stand_in_marker, F_OK), 0, "the stand-in crashed");
    cr_expect_eq(done, n_exp);
    cr_expect_eq(lost, 1, "the crashed configuration's row");
    unlink(stand_in_marker);
}

/* A context of SPARQ as run_search_prepare starts it (the read probe first), planning nothing. */
static void plan_ctx(run_ctx *rc, const sweep *sw, const run_options *opt, tune_error *err)
{
    *rc = (run_ctx){.sw = sw, .opt = opt, .err = err, .lock_fd = -1, .arch = 90};
    rc->sp = space_build(sw, err);
    cr_assert_not_null(rc->sp, "%s", err->message);
    family_kernel_ref probe = {.source = "common.cu", .name = "tune_read_probe"};
    cr_assert_eq(run_kernel_index(rc, &probe), 0);
}

/* The session worker follows the coordinator's plans ("P n ci ..."): planned in the same order,
 * its kernel indices name the same kernels; a table of another size, a configuration out of the
 * space or a line without its count is refused. */
Test(search_run, a_worker_plans_what_the_coordinator_planned)
{
    sweep *sw = test_load_sweep(SPARQ);
    tune_error err = {0}, werr = {0};
    run_options opt;
    run_options_init(&opt);
    run_ctx rc, w;
    plan_ctx(&rc, sw, &opt, &err);
    size_t nc = space_n_configs(rc.sp), a = nc - 1, b = nc / 2;
    cr_assert_not_null(run_plan_config(&rc, a));
    const run_plan *pb = run_plan_config(&rc, b);
    cr_assert_not_null(pb);
    cr_expect_eq(rc.n_plans, 2);
    cr_expect_eq(run_plan_config(&rc, a), &rc.plans[0], "planned once");
    char line[128];
    snprintf(line, sizeof line, "P %zu %zu %zu", pb->kernels_after, a, b);
    plan_ctx(&w, sw, &opt, &werr);
    cr_assert_eq(run_session_plans(&w, line), TUNE_OK, "%s", werr.message);
    cr_assert_eq(w.n_kernels, rc.n_kernels);
    for (size_t k = 0; k < rc.n_kernels; k++)
        cr_expect(strcmp(w.kernels[k].job.name, rc.kernels[k].job.name) == 0 &&
                      strcmp(w.kernels[k].job.options, rc.kernels[k].job.options) == 0,
                  "kernel %zu: %s here, %s in the coordinator", k, w.kernels[k].job.name,
                  rc.kernels[k].job.name);
    run_ctx_free(&w);
    /* a worker whose table would not have the coordinator's size is refused */
    plan_ctx(&w, sw, &opt, &werr);
    snprintf(line, sizeof line, "P %zu %zu", pb->kernels_after + 1, a);
    cr_expect_eq(run_session_plans(&w, line), TUNE_ERR_INVALID);
    cr_expect(strstr(werr.message, "differs from the coordinator's") != NULL, "%s", werr.message);
    run_ctx_free(&w);
    const char *bad[] = {"P", "P 3 999999999"};
    for (size_t i = 0; i < 2; i++) {
        tune_error e = {0};
        plan_ctx(&w, sw, &opt, &e);
        cr_expect_eq(run_session_plans(&w, bad[i]), TUNE_ERR_INVALID, "%s", bad[i]);
        run_ctx_free(&w);
    }
    run_ctx_free(&rc);
    sweep_free(sw);
}
