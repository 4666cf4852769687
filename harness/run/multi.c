/* multi.c - --gpus: one coordinator per GPU, each a child process running its shard of the sweep
 * into <run folder>/shards/<i>/, then the shards merged into the run folder. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/outfile.h"
#include "run/internal.h"
#include "store/folder.h"
#include "store/merge.h"

/* The devices of --gpus: "all" (every device a child process sees) or a list "0,1,3". */
static tune_status parse_gpus(const run_options *opt, int *devs, size_t max, size_t *n,
                              tune_error *err)
{
    *n = 0;
    if (strcmp(opt->gpus, "all") == 0) {
        int count = 0;
        tune_status st = run_probe_count(&count, err);
        if (st != TUNE_OK)
            return st;
        for (int d = 0; d < count && *n < max; d++)
            devs[(*n)++] = d;
        return TUNE_OK;
    }
    for (const char *p = opt->gpus; *p;) {
        char *end;
        long d = strtol(p, &end, 10);
        if (end == p || d < 0 || d > 1023 || (*end != ',' && *end != '\0') || *n == max)
            return tune_error_set(err, TUNE_ERR_INVALID, "--gpus",
                                  "expected 'all' or a list of device ordinals like 0,1,3, got "
                                  "'%s'",
                                  opt->gpus);
        for (size_t i = 0; i < *n; i++)
            if (devs[i] == (int)d)
                return tune_error_set(err, TUNE_ERR_INVALID, "--gpus", "GPU %ld is listed twice",
                                      d);
        devs[(*n)++] = (int)d;
        p = *end ? end + 1 : end;
    }
    if (*n == 0)
        return tune_error_set(err, TUNE_ERR_INVALID, "--gpus", "no GPU listed");
    return TUNE_OK;
}

typedef struct {
    const sweep *sw;
    run_options opt; /* the shard's: --shard i/n --device d --out <run>/shards/<i> */
    char dir[PATH_MAX];
    worker *w;
    int code; /* exit status, -1 while running */
    char failure[2048];
} gpu_shard;

/* A shard's coordinator, in a child process: run_sweep with its output in <dir>/log.txt. */
static int gpu_shard_body(void *ctx, int fd)
{
    gpu_shard *g = ctx;
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/log.txt", g->dir);
    int lf = folder_open_file(path, O_WRONLY | O_CREAT | O_APPEND, "the log", NULL);
    if (lf >= 0) {
        dup2(lf, 1);
        dup2(lf, 2);
        close(lf);
    }
    run_summary sum;
    tune_error e = {0};
    if (run_sweep(g->sw, &g->opt, &sum, &e) != TUNE_OK) {
        char buf[2600];
        tune_error_text(&e, buf, sizeof buf);
        fprintf(stderr, "tune: %s\n", buf);
        worker_send(fd, "F %d %s", (int)e.code, buf);
        return e.code == TUNE_ERR_NO_GPU ? 3 : 1;
    }
    return 0;
}

/* The shards' folders and options (shards/<i> of the run folder). */
static tune_status shards_setup(const run_ctx *rc, const int *devs, size_t n, gpu_shard *g,
                                const char **dirs, tune_error *err)
{
    const run_options *opt = rc->opt;
    for (size_t i = 0; i < n; i++) {
        char meta[PATH_MAX + 16];
        snprintf(g[i].dir, sizeof g[i].dir, "%.4000s/shards/%zu", rc->out_dir, i);
        snprintf(meta, sizeof meta, "%s/meta.json", g[i].dir);
        tune_status st = outfile_mkdirs(g[i].dir, err);
        if (st != TUNE_OK)
            return st;
        g[i].sw = rc->sw;
        g[i].opt = *opt;
        g[i].opt.gpus = NULL;
        g[i].opt.shard_index = i;
        g[i].opt.shard_count = n;
        g[i].opt.device = devs[i];
        g[i].opt.out_dir = g[i].dir;
        g[i].opt.quiet = 0; /* into its log.txt */
        g[i].opt.resume = opt->resume && access(meta, F_OK) == 0;
        g[i].code = -1;
        dirs[i] = g[i].dir;
    }
    if (!opt->quiet) {
        fprintf(stderr, "tune: %s on %zu GPUs, results in %s\n", rc->sw->name, n, rc->out_dir);
        for (size_t i = 0; i < n; i++)
            fprintf(stderr,
                    "tune:   GPU %d: shard %zu/%zu, %zu configurations, estimated %.1f s "
                    "(log: %s/log.txt)\n",
                    devs[i], i, n, shard_plan_n_configs(rc->plan, i), shard_plan_cost(rc->plan, i),
                    g[i].dir);
    }
    return TUNE_OK;
}

/* Starts every shard's process, or none. */
static tune_status shards_start(gpu_shard *g, size_t n, tune_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (!(g[i].w = worker_start(gpu_shard_body, &g[i], err))) {
            for (size_t j = 0; j < i; j++) { /* all or none */
                worker_kill(g[j].w);
                worker_wait(g[j].w, g[j].failure, sizeof g[j].failure);
            }
            return err ? err->code : TUNE_ERR_IO;
        }
    return TUNE_OK;
}

/* Waits for every shard's process, showing the rows written per GPU (unless quiet). */
static void shards_wait(const run_ctx *rc, const int *devs, gpu_shard *g, size_t n)
{
    size_t running = n;
    int tty = isatty(2);
    double last = 0;
    while (running > 0) {
        for (size_t i = 0; i < n; i++) {
            if (g[i].code >= 0)
                continue;
            char line[4096];
            int r;
            while ((r = worker_read_line(g[i].w, line, sizeof line, 0.05)) == 1)
                if (line[0] == 'F')
                    snprintf(g[i].failure, sizeof g[i].failure, "%.2000s", line + 2);
            if (r == 0) {
                char how[256];
                g[i].code = worker_wait(g[i].w, how, sizeof how);
                g[i].w = NULL;
                if (g[i].code != 0 && !g[i].failure[0])
                    snprintf(g[i].failure, sizeof g[i].failure, "0 the shard's process ended: %s",
                             how);
                running--;
            }
        }
        double now = clock_now();
        if (!rc->opt->quiet && (running == 0 || now - last >= (tty ? 1.0 : 30.0))) {
            last = now;
            size_t done_rows = 0;
            char parts[1024] = "";
            for (size_t i = 0, len = 0; i < n; i++) {
                size_t k = folder_count_rows(g[i].dir);
                done_rows += k;
                len += (size_t)snprintf(parts + len, len < sizeof parts ? sizeof parts - len : 0,
                                        "%sGPU %d %zu/%zu", i ? ", " : "", devs[i], k,
                                        shard_plan_n_configs(rc->plan, i));
            }
            fprintf(stderr, "%s[%zu/%zu] %s, elapsed %.0fs%s", tty ? "\r" : "", done_rows,
                    space_n_configs(rc->sp), parts, now - rc->t0, tty && running ? "   " : "\n");
        }
    }
}

/* TUNE_OK when every shard succeeded; else an error listing the failed ones. */
static tune_status shards_failures(const run_options *opt, const int *devs, const gpu_shard *g,
                                   size_t n, tune_error *err)
{
    char failed[1536] = "";
    tune_status code = TUNE_OK;
    for (size_t i = 0, len = 0; i < n; i++) {
        if (g[i].code == 0)
            continue;
        char *msg;
        tune_status c = (tune_status)strtol(g[i].failure, &msg, 10);
        c = c == TUNE_OK ? TUNE_ERR_CUDA : c; /* it died without a word */
        code = code == TUNE_OK || code == TUNE_ERR_NO_GPU ? c : code;
        len += (size_t)snprintf(failed + len, len < sizeof failed ? sizeof failed - len : 0,
                                "%sGPU %d (shard %zu/%zu) failed: %.300s (log: %.300s/log.txt)",
                                len ? "; " : "", devs[i], i, n, msg + (*msg == ' '), g[i].dir);
    }
    if (code == TUNE_OK)
        return TUNE_OK;
    return tune_error_set(err, code == TUNE_ERR_NO_GPU ? TUNE_ERR_NO_GPU : TUNE_ERR_CUDA, "--gpus",
                          "%s; the rows measured are kept: run again with --resume%s%s", failed,
                          opt->out_dir ? " --out " : "", opt->out_dir ? opt->out_dir : "");
}

tune_status run_gpus(const sweep *sw, const run_options *opt, run_summary *sum, tune_error *err)
{
    memset(sum, 0, sizeof *sum);
    int devs[SHARD_MAX];
    size_t n = 0;
    tune_status st = parse_gpus(opt, devs, SHARD_MAX, &n, err);
    if (st != TUNE_OK)
        return st;
    run_ctx rc = {.sw = sw, .opt = opt, .err = err, .t0 = clock_now()};
    rc.sp_borrowed = opt->space != NULL;
    if (!(rc.sp = rc.sp_borrowed ? (space *)opt->space : space_build(sw, err)))
        return err ? err->code : TUNE_ERR_INVALID;
    gpu_shard *g = calloc(n, sizeof *g);
    const char **dirs = calloc(n, sizeof *dirs);
    int lock_fd = -1;
    if (!g || !dirs) {
        st = tune_error_set(err, TUNE_ERR_NOMEM, "run", "out of memory");
        goto done;
    }
    if (!(rc.plan = shard_plan_build(sw, rc.sp, n, err))) {
        st = err ? err->code : TUNE_ERR_NOMEM;
        goto done;
    }
    folder_run_spec spec = {opt->out_dir, opt->out_root, sw->name, opt->resume};
    if ((st = folder_open_run(&spec, rc.out_dir, sizeof rc.out_dir, &lock_fd, err)) != TUNE_OK)
        goto done;
    if ((st = shards_setup(&rc, devs, n, g, dirs, err)) != TUNE_OK ||
        (st = shards_start(g, n, err)) != TUNE_OK)
        goto done;
    shards_wait(&rc, devs, g, n);
    if ((st = shards_failures(opt, devs, g, n, err)) != TUNE_OK)
        goto done;
    merge_options mo = {opt->quiet, opt->argc, opt->argv};
    st = run_merge(rc.out_dir, dirs, n, &mo, sum, err);
    sum->wall_seconds = clock_now() - rc.t0;
done:
    folder_unlock(rc.out_dir, lock_fd);
    snprintf(sum->out_dir, sizeof sum->out_dir, "%s", rc.out_dir);
    free(g);
    free(dirs);
    run_ctx_free(&rc);
    return st;
}
