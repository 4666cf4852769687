/* session.c - one sweep run end to end (run_sweep): probe the device, enumerate, compile, then in
 * the results folder (locked; resumed when asked) write meta.json, the rows and the report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/report.h"
#include "core/clock.h"
#include "run/internal.h"
#include "run/search_ctx.h"
#include "store/folder.h"
#include "store/merge.h"
#include "store/retime.h"

void run_options_init(run_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->out_root = "results";
    opt->seed = 0x5eed;
}

/* A resumed searched run: the shapes whose verdict retime.jsonl already holds (its winner's
 * identity among ids, the configurations' identities) are not re-timed again. */
static tune_status mark_retimed(run_ctx *rc, const char *const *ids)
{
    retime_verdict *v = NULL;
    size_t nv = 0;
    tune_status st = retime_read(rc->out_dir, &v, &nv, rc->err);
    for (size_t k = 0; st == TUNE_OK && k < nv; k++)
        for (size_t i = 0; i < space_n_configs(rc->sp); i++)
            if (ids[i] && strcmp(ids[i], v[k].winner_id) == 0) {
                rc->search->retimed[space_config_at(rc->sp, i)->shape] = 1;
                break;
            }
    free(v);
    return st;
}

/* Marks the configurations that already have a row in dir/raw.jsonl (any status: a crashed
 * configuration is not run again). Returns the number found through *n_found. */
static tune_status load_done(run_ctx *rc, run_summary *sum, size_t *n_found)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/raw.jsonl", rc->out_dir);
    *n_found = 0;
    if (access(path, F_OK) != 0)
        return TUNE_OK;
    results_rows rows = {0};
    size_t n = space_n_configs(rc->sp);
    tune_status st = folder_trim_partial_line(path, rc->err);
    if (st == TUNE_OK)
        st = results_read(path, &rows, rc->err);
    if (st != TUNE_OK)
        return st;
    char **ids = calloc(n ? n : 1, sizeof *ids);
    for (size_t i = 0; ids && i < n; i++) {
        char buf[4096];
        ids[i] = strdup(space_config_identity(rc->sw, rc->sp, i, buf, sizeof buf));
    }
    for (size_t r = 0; ids && r < rows.n; r++) {
        char buf[4096];
        results_row_identity(&rows.rows[r], buf, sizeof buf);
        for (size_t i = 0; i < n; i++)
            if (!rc->done[i] && ids[i] && strcmp(ids[i], buf) == 0) {
                rc->done[i] = 1;
                meta_count_status(sum, rows.rows[r].status);
                (*n_found)++;
                if (rc->search) { /* a searched run observes it first (run/search.c) */
                    rc->search->resumed[i] = 1;
                    rc->search->resumed_cost[i] = results_row_cost(&rows.rows[r], rc->opt->objective);
                    if (rows.rows[r].status == RESULT_OK && rows.rows[r].time.median > 0 &&
                        space_config_at(rc->sp, i)->param != SPACE_NO_PARAM)
                        rc->search->medians[i] = rows.rows[r].time.median;
                }
                break;
            }
    }
    if (ids && rc->search)
        st = mark_retimed(rc, (const char *const *)ids);
    for (size_t i = 0; ids && i < n; i++)
        free(ids[i]);
    free(ids);
    results_rows_free(&rows);
    return st;
}

/* This shard's place in the plan (rc->plan must be set). */
static meta_shard shard_of(const run_ctx *rc)
{
    size_t si = rc->opt->shard_index;
    return (meta_shard){si,
                        shard_plan_count(rc->plan),
                        shard_plan_n_configs(rc->plan, si),
                        space_n_configs(rc->sp),
                        shard_plan_hash(rc->plan),
                        shard_plan_cost(rc->plan, si),
                        shard_plan_total_cost(rc->plan)};
}

/* The key of a run's results: what must not change between a run and its resumption. New. */
static json_t *run_key(run_ctx *rc)
{
    char drv[256] = "", arch[16], search[4096];
    uint64_t kh = 0;
    if (rc->search && run_kernels_key_hash(rc, &kh) != TUNE_OK)
        return NULL; /* rc->err says why */
    if (!rc->opt->compile_only)
        run_driver_version(rc->mon, drv, sizeof drv);
    snprintf(arch, sizeof arch, "sm_%d", rc->arch);
    meta_shard sh = rc->plan ? shard_of(rc) : (meta_shard){0};
    meta_key_info ki = {rc->search ? kh : run_kernels_hash(rc),
                        compile_nvrtc_version(),
                        rc->opt->compile_only ? arch : NULL,
                        &rc->gi,
                        drv,
                        rc->opt->seed,
                        rc->plan ? &sh : NULL,
                        rc->search ? run_search_key(rc, search, sizeof search) : NULL,
                        run_measures_energy(rc)};
    return meta_key_build(&ki);
}

/* meta.json of this run (end NULL: not finished). New. */
static json_t *run_meta(const run_ctx *rc, const run_summary *sum, const char *start,
                        const char *end, const json_t *key)
{
    const run_options *opt = rc->opt;
    char cb[32] = "", drv[256] = "", arch[16];
    if (!opt->compile_only) {
        gpu_cublas_version(cb, sizeof cb);
        run_driver_version(rc->mon, drv, sizeof drv);
    }
    snprintf(arch, sizeof arch, "sm_%d", rc->arch);
    meta_shard sh = rc->plan ? shard_of(rc) : (meta_shard){0};
    json_t *search = run_search_meta(rc);
    meta_info mi = {
        .sw = rc->sw,
        .argc = opt->argc,
        .argv = opt->argv,
        .device = opt->compile_only ? NULL : &rc->gi,
        .nvrtc_version = compile_nvrtc_version(),
        .cublas_version = cb,
        .driver = drv,
        .compile_arch = opt->compile_only ? arch : NULL,
        .shard = rc->plan ? &sh : NULL,
        .key = key,
        .search = search,
        .nvml = rc->mon != NULL,
        .ceilings = rc->ceil_source,
        .seed = opt->seed,
        .read_bw_source = opt->compile_only  ? "none (compile-only)"
                          : opt->read_bw > 0 ? "given"
                                             : "measured (read-only probe, 4 GiB, median of 20)",
        .start = start,
        .end = end,
    };
    json_t *m = meta_build(&mi, sum);
    json_decref(search);
    return m;
}

/* The results folder: the latest run's (--resume without --out) or a new one; locked. */
static tune_status open_folder(run_ctx *rc, const run_options *opt, int *lock_fd)
{
    folder_run_spec spec = {opt->out_dir, opt->out_root, rc->sw->name, opt->resume};
    return folder_open_run(&spec, rc->out_dir, sizeof rc->out_dir, lock_fd, rc->err);
}

/* --resume: the earlier run's start and read bandwidth, its key checked, its rows marked done. */
static tune_status resume(run_ctx *rc, run_summary *sum, json_t *key, char *start,
                          size_t start_size)
{
    size_t n_found = 0;
    double old_bw = 0;
    meta_resume_info(rc->out_dir, start, start_size, &old_bw);
    if (rc->read_bw <= 0 && old_bw > 0)
        rc->read_bw = old_bw; /* keep the percentages comparable */
    tune_status st = meta_check_resume(rc->out_dir, key, rc->plan != NULL, rc->err);
    /* the kernels may be the same for another sweep: the sweep itself must be too */
    json_t *old = st == TUNE_OK ? meta_load(rc->out_dir, NULL) : NULL;
    const char *old_hash = meta_sweep_hash(old);
    char hex[17];
    json_decref(meta_sweep_source(rc->sw->file, hex));
    if (old_hash && hex[0] && strcmp(old_hash, hex) != 0)
        st = tune_error_set(rc->err, TUNE_ERR_INVALID, rc->out_dir,
                            "cannot resume: this folder holds a run of another sweep file (hash "
                            "%s, %s is %s); resume with the sweep it was run with",
                            old_hash, rc->sw->file, hex);
    json_decref(old);
    if (st == TUNE_OK)
        st = load_done(rc, sum, &n_found);
    if (st == TUNE_OK && !rc->opt->quiet)
        fprintf(stderr, "tune: resuming %s: %zu of %zu configurations already have a row\n",
                rc->out_dir, n_found, space_n_configs(rc->sp));
    return st;
}

/* The rows of the run in its folder: meta.json at the start (an interrupted run has its
 * provenance) and at the end (with the summary), the rows in between. */
static tune_status run_rows(run_ctx *rc, run_summary *sum)
{
    tune_status st = TUNE_OK;
    json_t *meta = NULL, *key = NULL;
    char start[32], end[32];
    size_t n = space_n_configs(rc->sp);
    clock_utc(start, sizeof start, CLOCK_UTC_ISO);
    rc->read_bw = rc->opt->read_bw;
    rc->done = calloc(n ? n : 1, 1);
    if (!rc->done)
        return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    for (size_t i = 0; rc->plan && i < n; i++) /* other shards' configurations: not ours to run */
        rc->done[i] = shard_plan_owner(rc->plan, i) != rc->opt->shard_index;
    /* a searched compile-only run: its first round's rows */
    for (size_t i = 0; rc->opt->compile_only && rc->search && i < n; i++)
        rc->done[i] |= !rc->search->todo[i];
    if ((st = open_folder(rc, rc->opt, &rc->lock_fd)) != TUNE_OK)
        return st;
    snprintf(sum->out_dir, sizeof sum->out_dir, "%s", rc->out_dir);
    if (!(key = run_key(rc))) {
        st = rc->err && rc->err->code ? rc->err->code : TUNE_ERR_NOMEM;
        goto done;
    }
    /* --out DIR --resume of a folder that holds no run yet (one stopped while it compiled, before
     * its folder had a file): nothing to resume, the run starts there */
    if (rc->opt->resume && folder_holds_run(rc->out_dir) &&
        (st = resume(rc, sum, key, start, sizeof start)) != TUNE_OK)
        goto done;
    sum->read_bw = rc->read_bw;
    if (!rc->opt->compile_only)
        run_note_ceilings(rc);
    meta = run_meta(rc, sum, start, NULL, key);
    if ((st = meta_write(rc->out_dir, meta, rc->err)) != TUNE_OK)
        goto done;
    if (!rc->opt->quiet) {
        char shard[64] = "";
        if (rc->plan)
            snprintf(shard, sizeof shard, " (shard %zu/%zu)", rc->opt->shard_index,
                     shard_plan_count(rc->plan));
        fprintf(stderr, "tune: %s%s on %s, results in %s\n", rc->sw->name, shard,
                rc->opt->compile_only ? "no GPU (compile-only)" : rc->gi.name, rc->out_dir);
    }
    results_writer *created = results_open(rc->out_dir, rc->err); /* an empty shard has a file */
    if (!created) {
        st = rc->err ? rc->err->code : TUNE_ERR_IO;
        goto done;
    }
    results_close(created);
    st = rc->opt->compile_only ? run_write_compile_rows(rc, sum)
         : rc->search          ? run_search(rc, sum)
                               : run_coordinate(rc, sum);
done:
    if (meta) {
        clock_utc(end, sizeof end, CLOCK_UTC_ISO);
        sum->wall_seconds = clock_now() - rc->t0;
        sum->read_bw = rc->read_bw;
        json_decref(meta);
        meta = run_meta(rc, sum, start, st == TUNE_OK ? end : NULL, key);
        tune_status mst = meta_write(rc->out_dir, meta, rc->err);
        json_decref(meta);
        if (st == TUNE_OK)
            st = mst;
    }
    json_decref(key);
    return st; /* the folder stays locked until run_sweep has written the tables */
}

/* --shard I/N: the plan, and this shard's configuration count. */
static tune_status plan_shard(run_ctx *rc, run_summary *sum)
{
    const run_options *opt = rc->opt;
    if (opt->shard_index >= opt->shard_count)
        return tune_error_set(rc->err, TUNE_ERR_INVALID, "--shard",
                              "shard %zu/%zu: shards are counted from 0 to %zu", opt->shard_index,
                              opt->shard_count, opt->shard_count - 1);
    if (!(rc->plan = shard_plan_build(rc->sw, rc->sp, opt->shard_count, rc->err)))
        return rc->err ? rc->err->code : TUNE_ERR_NOMEM;
    sum->n_configs = shard_plan_n_configs(rc->plan, opt->shard_index);
    return TUNE_OK;
}

tune_status run_sweep(const sweep *sw, const run_options *opt, run_summary *sum, tune_error *err)
{
    if (opt->gpus)
        return run_gpus(sw, opt, sum, err);
    run_ctx rc = {.sw = sw, .opt = opt, .err = err, .t0 = clock_now(), .lock_fd = -1};
    memset(sum, 0, sizeof *sum);
    tune_status st = TUNE_OK;
    int arch = opt->arch ? opt->arch : 90;
    /* This process never initialises CUDA: workers (child processes) own the GPU. */
    if (!opt->compile_only) {
        if ((st = run_probe_device(opt, &rc.gi, err)) != TUNE_OK)
            return st;
        arch = rc.gi.cc_major * 10 + rc.gi.cc_minor;
    }
    rc.sp_borrowed = opt->space != NULL;
    if (!(rc.sp = rc.sp_borrowed ? (space *)opt->space : space_build(sw, err)))
        return err ? err->code : TUNE_ERR_INVALID;
    sum->n_configs = space_n_configs(rc.sp);
    sum->n_pruned = space_n_pruned(rc.sp);
    rc.arch = arch;
    if (opt->shard_count > 0 && (st = plan_shard(&rc, sum)) != TUNE_OK)
        goto done;
    sweep_search set;
    if ((st = run_search_settings(sw, opt, &set, err)) != TUNE_OK)
        goto done;
    if (sweep_search_on(&set)) { /* plans and compiles round by round (search.c) */
        st = run_search_prepare(&rc, &set);
        if (st == TUNE_OK && opt->compile_only)
            st = run_search_compile_first(&rc, arch, sum);
    } else { /* every configuration planned and compiled now */
        family_kernel_ref probe = {.source = "common.cu", .name = "tune_read_probe"};
        st = run_plan_configs(&rc, NULL);
        if (st == TUNE_OK && !opt->compile_only && run_kernel_index(&rc, &probe) == SIZE_MAX)
            st = tune_error_set(err, TUNE_ERR_NOMEM, "run", "out of memory");
        if (st == TUNE_OK)
            st = run_compile(&rc, arch, sum);
    }
    if (st != TUNE_OK)
        goto done;
    if (opt->compile_only && !opt->compile_rows)
        goto done;
    if (!opt->compile_only)
        rc.mon = monitor_open(rc.gi.pci_bus_id);
    run_energy_probe(&rc);
    st = run_rows(&rc, sum);
    monitor_close(rc.mon);
    /* a compile-only run's tables hold only the status counts: written, not printed; a shard
     * of a sweep with fewer shapes than shards may have no rows, and no tables */
    if (st == TUNE_OK && sum->n_configs > 0) {
        report_spec spec = {.rows = (const char *const *)sw->report_rows,
                            .n_rows = sw->n_report_rows,
                            .cols = (const char *const *)sw->report_cols,
                            .n_cols = sw->n_report_cols,
                            .title = sw->name,
                            .objective = opt->objective};
        const char *dir = sum->out_dir;
        st = report_folders(&dir, 1, &spec, dir, opt->quiet || opt->compile_only, err);
    } else if (st == TUNE_OK && !opt->quiet) {
        fprintf(stderr, "tune: shard %zu/%zu has no configurations (more shards than shapes)\n",
                opt->shard_index, opt->shard_count);
    }
done:
    sum->wall_seconds = clock_now() - rc.t0;
    folder_unlock(rc.out_dir, rc.lock_fd); /* held for the whole run: rows, meta.json, tables */
    run_ctx_free(&rc);
    return st;
}

tune_status run_merge(const char *out_dir, const char *const *dirs, size_t n_dirs,
                      const merge_options *opt, run_summary *sum, tune_error *err)
{
    run_summary local;
    if (!sum)
        sum = &local;
    tune_status st = merge_shards(out_dir, dirs, n_dirs, opt, sum, err);
    /* a compile-only run's tables hold only the status counts: written, not printed */
    if (st == TUNE_OK)
        st = report_rebuild(&out_dir, 1, NULL, NULL, out_dir,
                            (opt ? opt->quiet : 0) || sum->n_ok == 0, err);
    return st;
}
