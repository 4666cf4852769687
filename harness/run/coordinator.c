/* coordinator.c - runs workers (worker_loop.c) until every configuration has a row: a worker
 * that crashes or hangs costs its current configuration a `crashed` or `timeout` row, and a new
 * worker goes on with the next. Compile-only runs write their rows here, without workers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "run/internal.h"

typedef struct {
    const run_ctx *rc;
    run_summary *sum;
    double t0;
    size_t done, total, failed;
    double last_print;
    int tty;
} run_progress;

static void progress_print(run_progress *pr, int final)
{
    double now = clock_now();
    if (!final && now - pr->last_print < (pr->tty ? 0.2 : 10.0))
        return;
    pr->last_print = now;
    double el = now - pr->t0;
    double eta = pr->done ? el / (double)pr->done * (double)(pr->total - pr->done) : 0;
    fprintf(stderr, "%s[%zu/%zu] failed %zu, elapsed %.0fs, ETA %.0fs%s", pr->tty ? "\r" : "",
            pr->done, pr->total, pr->failed, el, eta, pr->tty && !final ? "   " : "\n");
    fflush(stderr);
}

static void progress_count(run_progress *pr, result_status st)
{
    meta_count_status(pr->sum, st);
    pr->done++;
    pr->failed += st != RESULT_OK && st != RESULT_SKIPPED;
    if (!pr->rc->opt->quiet)
        progress_print(pr, 0);
}

/* Writes the row of a configuration whose worker died (crashed) or hung (timeout). */
tune_status run_write_lost_row(run_ctx *rc, size_t ci, result_status status, const char *reason)
{
    tune_point p;
    result_row row;
    char stamp[32];
    space_config_point(rc->sp, ci, &p);
    run_row_fill(rc, ci, &p, &row, rc->gi.name);
    row.status = status;
    row.reason = (char *)reason;
    clock_utc(stamp, sizeof stamp, CLOCK_UTC_ISO);
    row.timestamp = stamp;
    results_writer *w = results_open(rc->out_dir, rc->err);
    if (!w)
        return rc->err ? rc->err->code : TUNE_ERR_IO;
    tune_status st = results_write_row(w, &row, rc->err);
    results_close(w);
    return st;
}

/* What one worker did, read from its messages until it ended (r == 0) or fell silent (r < 0). */
typedef struct {
    size_t current; /* the configuration it was on, SIZE_MAX between configurations */
    int retiming;   /* between a shape's last row and the next configuration */
    int r;
    char crash[4096], fatal[4096];
} worker_outcome;

static void read_worker(run_ctx *rc, worker *w, run_progress *pr, double watchdog, size_t *left,
                        worker_outcome *o)
{
    size_t n = space_n_configs(rc->sp);
    double timeout = watchdog + 60; /* start-up: context, read bandwidth */
    char line[4096];
    o->current = SIZE_MAX;
    o->retiming = 0;
    o->crash[0] = o->fatal[0] = '\0';
    while ((o->r = worker_read_line(w, line, sizeof line, timeout)) == 1) {
        size_t i = 0;
        int code = 0, off = 0;
        if (line[0] == 'T') {
            o->retiming = 1;
        } else if (line[0] == 'B' && sscanf(line, "B %zu", &i) == 1 && i < n) {
            o->current = i;
            o->retiming = 0;
            timeout = watchdog;
        } else if (line[0] == 'E' &&
                   sscanf(line, "E %zu %d", &i, &code) == 2 && i < n) {
            rc->done[i] = 1;
            (*left)--;
            progress_count(pr, (result_status)code);
            o->current = SIZE_MAX;
        } else if (line[0] == 'C' && sscanf(line, "C %zu %n", &i, &off) == 1) {
            snprintf(o->crash, sizeof o->crash, "%s", line + off);
        } else if (line[0] == 'R') {
            rc->read_bw = pr->sum->read_bw = strtod(line + 2, NULL);
        } else if (line[0] == 'F') {
            snprintf(o->fatal, sizeof o->fatal, "%s", line + 2);
        }
    }
}

double run_watchdog_s(const run_options *opt)
{
    return opt->watchdog_s > 0 ? opt->watchdog_s : RUN_WATCHDOG_DEFAULT_S;
}

tune_status run_coordinate(run_ctx *rc, run_summary *sum)
{
    size_t n = space_n_configs(rc->sp), left = 0;
    for (size_t i = 0; i < n; i++)
        left += !rc->done[i];
    run_progress pr = {rc, sum, clock_now(), 0, left, 0, 0, isatty(2)};
    const double watchdog = run_watchdog_s(rc->opt);
    tune_status st = TUNE_OK;
    while (left > 0 && st == TUNE_OK) {
        worker *w = worker_start(run_worker_body, rc, rc->err);
        if (!w)
            return rc->err ? rc->err->code : TUNE_ERR_IO;
        rc->worker_starts++;
        worker_outcome o;
        char how[256];
        read_worker(rc, w, &pr, watchdog, &left, &o);
        if (o.r < 0)
            worker_kill(w);
        int code = worker_wait(w, how, sizeof how);
        if (!o.fatal[0] && o.current == SIZE_MAX && code != 0 && o.retiming) {
            /* the re-timing of measured configurations failed: nothing is lost, go on */
            if (!rc->opt->quiet)
                fprintf(stderr,
                        "tune: the interleaved re-timing of a shape ended the worker (%s)\n", how);
            continue;
        }
        if (o.fatal[0] || (o.current == SIZE_MAX && code != 0)) {
            char *msg = o.fatal[0] ? o.fatal : how;
            int status = (int)strtol(msg, &msg, 10);
            return tune_error_set(rc->err,
                                  status == TUNE_ERR_NO_GPU ? TUNE_ERR_NO_GPU : TUNE_ERR_CUDA,
                                  "worker", "%s", o.fatal[0] ? msg + 1 : how);
        }
        if (o.current != SIZE_MAX) {
            char reason[4352];
            if (o.r < 0)
                snprintf(reason, sizeof reason, "no progress for %.0f s (watchdog): worker killed",
                         watchdog);
            else
                snprintf(reason, sizeof reason, "%s (worker %s)",
                         o.crash[0] ? o.crash : "worker died", how);
            result_status rs = o.r < 0 ? RESULT_TIMEOUT : RESULT_CRASHED;
            st = run_write_lost_row(rc, o.current, rs, reason);
            rc->done[o.current] = 1;
            left--;
            progress_count(&pr, rs);
            if (!rc->opt->quiet)
                fprintf(stderr, "%stune: configuration %zu %s: %s\n", pr.tty ? "\n" : "", o.current,
                        result_status_str(rs), reason);
        }
    }
    if (!rc->opt->quiet)
        progress_print(&pr, 1);
    return st;
}

/* A compile-only run's rows (--compile-only): compiled, compile_error with the NVRTC log, or
 * skipped when the family cannot run the configuration; nothing measured. */
tune_status run_write_compile_rows(run_ctx *rc, run_summary *sum)
{
    results_writer *w = results_open(rc->out_dir, rc->err);
    if (!w)
        return rc->err ? rc->err->code : TUNE_ERR_IO;
    tune_status st = TUNE_OK;
    for (size_t ci = 0; ci < space_n_configs(rc->sp) && st == TUNE_OK; ci++) {
        if (rc->done[ci])
            continue;
        tune_point p;
        result_row row;
        char stamp[32];
        space_config_point(rc->sp, ci, &p);
        run_row_fill(rc, ci, &p, &row, NULL);
        if (!run_row_unrunnable(rc, ci, &row))
            row.status = RESULT_COMPILED;
        clock_utc(stamp, sizeof stamp, CLOCK_UTC_ISO);
        row.timestamp = stamp;
        st = results_write_row(w, &row, rc->err);
        if (st == TUNE_OK) {
            rc->done[ci] = 1;
            meta_count_status(sum, row.status);
        }
    }
    results_close(w);
    return st;
}
