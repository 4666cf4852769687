/* search_session.c - a searched run's measuring session: one worker measures every round, told
 * each shape's configurations as soon as the kernels they need are compiled, and keeps the
 * shapes' inputs between rounds (worker_loop.c: run_session_body).
 *
 * A round: the kernels it needs that are not compiled yet go to a compile child in the order the
 * round first needs them (the read probe first), which tells each one as it is finished; the
 * worker (started at the first round, while the first kernels compile) is told, whenever it is
 * idle, every shape of the round whose configurations have all their kernels: the kernels read
 * since it started ("K"), the configurations ("C"), go ("G 1" in the last round: each shape
 * re-timed after its rows). So the compile of a round and its measurement overlap, and a worker
 * starts once per run instead of once or twice per round. A worker that crashes or hangs costs
 * its configuration a row, as in run_coordinate, and the next one (started when there is
 * something to measure) goes on with the rest. How things are timed does not change. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "run/internal.h"
#include "run/search_ctx.h"

struct run_session {
    worker *w;            /* the measuring worker; NULL: none running */
    size_t probe;         /* the read probe's kernel: every worker times with it */
    unsigned char *known; /* per kernel: the worker has its cubin */
    size_t n_known;       /* known's entries */
    size_t plans_told;    /* the coordinator's plans that the worker has (session_tell_plans) */
    unsigned char *sent;  /* per configuration: told to the worker running */
    int busy;             /* a batch or a re-timing is running */
    int fresh;            /* the worker has not begun a configuration yet (start-up timeout) */
    int stop;             /* "D stop": the time limit ended its batch */
    size_t current;       /* the configuration it is on (B), SIZE_MAX between */
    int retiming;         /* after "T", before the next "B" or "D" */
    char crash[4096], fatal[4096];
    double last_line; /* when it last said something (the watchdog's start) */
};

run_session *run_session_new(run_ctx *rc)
{
    run_session *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    family_kernel_ref probe = {.source = "common.cu", .name = "tune_read_probe"};
    s->probe = run_kernel_index(rc, &probe); /* listed by run_search_prepare: found, not added */
    s->known = calloc(rc->n_kernels + 1, 1);
    s->n_known = rc->n_kernels + 1;
    s->sent = calloc(space_n_configs(rc->sp) + 1, 1);
    if (!s->known || !s->sent) {
        free(s->known), free(s->sent), free(s);
        return NULL;
    }
    s->current = SIZE_MAX;
    return s;
}

/* known as large as the kernel table (new entries 0). 0, or -1 out of memory. */
static int session_known_fit(const run_ctx *rc, run_session *s)
{
    if (s->n_known > rc->n_kernels)
        return 0;
    unsigned char *k = realloc(s->known, rc->n_kernels + 1);
    if (!k)
        return -1;
    memset(k + s->n_known, 0, rc->n_kernels + 1 - s->n_known);
    s->known = k;
    s->n_known = rc->n_kernels + 1;
    return 0;
}

/* Starts the worker: it has every plan made and kernel read so far (forked with them). */
static tune_status session_start(run_ctx *rc, run_session *s)
{
    if (session_known_fit(rc, s) != 0)
        return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    worker_duplex_fn body = rc->search->session_body ? rc->search->session_body : run_session_body;
    s->w = worker_start_duplex(body, rc, rc->err);
    if (!s->w)
        return rc->err ? rc->err->code : TUNE_ERR_IO;
    rc->worker_starts++;
    s->plans_told = rc->n_plans;
    for (size_t k = 0; k < rc->n_kernels; k++)
        s->known[k] = rc->kernels[k].job.cubin != NULL || rc->kernels[k].job.status != TUNE_OK;
    memset(s->sent, 0, space_n_configs(rc->sp));
    s->busy = s->stop = s->retiming = 0;
    s->fresh = 1;
    s->current = SIZE_MAX;
    s->crash[0] = s->fatal[0] = '\0';
    return TUNE_OK;
}

/* Tells the worker the configurations planned since it started, in their order ("P <kernels
 * after them> ci ..."): it plans them too, so that its kernel table has the same indices (plan.c).
 * 0 or -1 (it has ended). */
static int session_tell_plans(run_ctx *rc, run_session *s)
{
    char line[4096];
    size_t len = 0;
    for (size_t i = s->plans_told; i < rc->n_plans; i++) {
        len += (size_t)snprintf(line + len, sizeof line - len, " %zu", rc->plans[i].ci);
        if (i + 1 == rc->n_plans || len > sizeof line - 64) {
            if (worker_tell(s->w, "P %zu%s", rc->plans[i].kernels_after, line) != 0)
                return -1;
            len = 0;
        }
    }
    s->plans_told = rc->n_plans;
    return 0;
}

/* Tells the worker the plans made and the kernels compiled since it started. 0 or -1 (it has
 * ended). */
static int session_tell_kernels(run_ctx *rc, run_session *s)
{
    char line[4096];
    size_t len = 0;
    if (session_known_fit(rc, s) != 0 || session_tell_plans(rc, s) != 0)
        return -1;
    for (size_t k = 0; k <= rc->n_kernels; k++) {
        int add = k < rc->n_kernels && !s->known[k] && rc->search->compiled[k] == 1;
        if (add) {
            len += (size_t)snprintf(line + len, sizeof line - len, "%s%zu", len ? " " : "K ", k);
            s->known[k] = 1;
        }
        if (len && (k == rc->n_kernels || len > sizeof line - 64)) {
            if (worker_tell(s->w, "%s", line) != 0)
                return -1;
            len = 0;
        }
    }
    return 0;
}

/* 1 when configuration ci can be measured now: the kernels it needs are read (compiled, or
 * failed: its row says so). */
static int session_ready(const run_ctx *rc, size_t ci)
{
    const run_plan *pl = run_plan_find(rc, ci);
    for (int r = 0; pl && r < pl->n_refs; r++)
        if (rc->search->compiled[pl->refs[r]] != 1)
            return 0;
    return 1;
}

/* Tells the idle worker every shape of the round (all) with configurations to measure whose
 * configurations are all ready, and go. 1 told, 0 nothing ready, -1 the worker has ended. */
static int session_dispatch(run_ctx *rc, run_session *s, const unsigned char *all, int last)
{
    size_t nc = space_n_configs(rc->sp), ns = space_n_shapes(rc->sp);
    if (s->probe < rc->n_kernels && rc->search->compiled[s->probe] != 1 &&
        !rc->kernels[s->probe].job.cubin)
        return 0; /* the worker's timing needs it first */
    unsigned char *blocked = calloc(ns + 1, 1), *want = calloc(ns + 1, 1);
    if (!blocked || !want) {
        free(blocked), free(want);
        return 0;
    }
    for (size_t ci = 0; ci < nc; ci++) {
        if (!all[ci] || rc->done[ci] || s->sent[ci])
            continue;
        size_t sh = space_config_at(rc->sp, ci)->shape;
        want[sh] = 1;
        blocked[sh] |= !session_ready(rc, ci);
    }
    char line[4096];
    size_t len = 0, told = 0;
    int rc_ = session_tell_kernels(rc, s);
    for (size_t ci = 0; rc_ == 0 && ci <= nc; ci++) {
        if (ci < nc && all[ci] && !rc->done[ci] && !s->sent[ci]) {
            size_t sh = space_config_at(rc->sp, ci)->shape;
            if (want[sh] && !blocked[sh]) {
                len +=
                    (size_t)snprintf(line + len, sizeof line - len, "%s%zu", len ? " " : "C ", ci);
                s->sent[ci] = 1;
                told++;
            }
        }
        if (len && (ci == nc || len > sizeof line - 64)) {
            rc_ = worker_tell(s->w, "%s", line);
            len = 0;
        }
    }
    free(blocked), free(want);
    if (rc_ == 0 && told)
        rc_ = worker_tell(s->w, "G %d", last ? 1 : 0);
    if (rc_ != 0)
        return -1;
    if (told) {
        s->busy = 1;
        s->last_line = clock_now();
    }
    return told > 0;
}

/* Writes the row of a configuration whose worker died (crashed) or hung (timeout), and counts it.
 */
static tune_status session_lost_row(run_ctx *rc, run_summary *sum, size_t ci, result_status status,
                                    const char *reason)
{
    tune_status st = run_write_lost_row(rc, ci, status, reason);
    meta_count_status(sum, status);
    rc->done[ci] = 1;
    run_search_observe(rc, ci, status, NAN, NAN);
    if (!rc->opt->quiet)
        fprintf(stderr, "tune: configuration %zu %s: %s\n", ci, result_status_str(status), reason);
    return st;
}

/* The worker ended (r == 0) or fell silent past the watchdog (r < 0): the configuration it was on
 * gets its row (crashed or timeout) and the next worker goes on; a worker that could not start
 * or failed between configurations (not re-timing) ends the run, as in run_coordinate. */
static tune_status session_lost(run_ctx *rc, run_summary *sum, run_session *s, int r,
                                double watchdog)
{
    char how[256];
    if (r < 0)
        worker_kill(s->w);
    int code = worker_wait(s->w, how, sizeof how);
    s->w = NULL;
    s->busy = 0;
    tune_status st = TUNE_OK;
    if (s->current != SIZE_MAX && !s->fatal[0]) {
        char reason[sizeof s->crash + 300];
        if (r < 0)
            snprintf(reason, sizeof reason, "no progress for %.0f s (watchdog): worker killed",
                     watchdog);
        else
            snprintf(reason, sizeof reason, "%s (worker %s)",
                     s->crash[0] ? s->crash : "worker died", how);
        st = session_lost_row(rc, sum, s->current, r < 0 ? RESULT_TIMEOUT : RESULT_CRASHED, reason);
    } else if (s->retiming && !s->fatal[0]) {
        if (!rc->opt->quiet) /* nothing measured is lost */
            fprintf(stderr, "tune: the interleaved re-timing of a shape ended the worker (%s)\n",
                    how);
    } else if (s->fatal[0] || code != 0 || r < 0) {
        char *msg = s->fatal[0] ? s->fatal : how;
        int status = (int)strtol(msg, &msg, 10);
        st = tune_error_set(rc->err, status == TUNE_ERR_NO_GPU ? TUNE_ERR_NO_GPU : TUNE_ERR_CUDA,
                            "worker", "%s", s->fatal[0] ? msg + 1 : how);
    }
    s->current = SIZE_MAX;
    s->retiming = 0;
    return st;
}

/* One line of the worker. */
static void session_line(run_ctx *rc, run_summary *sum, run_session *s, const char *line)
{
    size_t n = space_n_configs(rc->sp), i = 0, shape = 0;
    int code = 0, off = 0;
    double median = NAN, cost = NAN;
    s->last_line = clock_now();
    if (line[0] == 'T') {
        s->retiming = 1;
        s->fresh = 0;
        if (sscanf(line, "T %zu", &shape) == 1 && shape < space_n_shapes(rc->sp))
            rc->search->retimed[shape] = 1;
    } else if (line[0] == 'B' && sscanf(line, "B %zu", &i) == 1 && i < n) {
        s->current = i;
        s->retiming = 0;
        s->fresh = 0;
    } else if (line[0] == 'E' &&
               sscanf(line, "E %zu %d %lg %lg", &i, &code, &median, &cost) >= 2 && i < n) {
        rc->done[i] = 1;
        meta_count_status(sum, (result_status)code);
        s->current = SIZE_MAX;
        run_search_observe(rc, i, (result_status)code, median, cost);
    } else if (line[0] == 'D') {
        s->busy = 0;
        s->retiming = 0;
        s->current = SIZE_MAX;
        s->stop = strcmp(line, "D stop") == 0;
    } else if (line[0] == 'C' && sscanf(line, "C %zu %n", &i, &off) == 1) {
        snprintf(s->crash, sizeof s->crash, "%s", line + off);
    } else if (line[0] == 'R') {
        rc->read_bw = sum->read_bw = strtod(line + 2, NULL);
    } else if (line[0] == 'F') {
        snprintf(s->fatal, sizeof s->fatal, "%s", line + 2);
    }
}

/* Waits up to timeout_s for the worker or the compile child c (NULL: none) and handles what
 * came; st on a lost worker. */
static tune_status session_wait(run_ctx *rc, run_summary *sum, run_session *s, run_compile_async *c,
                                double timeout_s)
{
    double watchdog = run_watchdog_s(rc->opt);
    double limit = s->fresh ? watchdog + 60 : watchdog; /* start-up: context, read bandwidth */
    if (s->w && s->busy) {
        double left = s->last_line + limit - clock_now();
        timeout_s = left < timeout_s ? (left > 0 ? left : 0) : timeout_s;
    }
    worker *ws[2] = {s->w, c ? run_compile_worker(c) : NULL};
    int k = worker_poll(ws, 2, timeout_s);
    if (k == 1) {
        run_compile_pump(rc, c, 0);
        return TUNE_OK;
    }
    if (k == 0) {
        char line[4096];
        int r = worker_read_line(s->w, line, sizeof line, 1.0);
        if (r == 1) {
            session_line(rc, sum, s, line);
            return TUNE_OK;
        }
        if (r == 0)
            return session_lost(rc, sum, s, 0, watchdog);
        return TUNE_OK; /* half a line: the rest comes */
    }
    if (s->w && s->busy && clock_now() - s->last_line > limit)
        return session_lost(rc, sum, s, -1, watchdog);
    return TUNE_OK;
}

/* The kernels of mask's configurations without a row that are not compiled, the read probe's
 * first, then in the order the configurations first need them; their number. */
static size_t session_kernels(run_ctx *rc, const unsigned char *mask, size_t *idx)
{
    unsigned char *want = calloc(rc->n_kernels + 1, 1);
    size_t n = 0;
    if (!want)
        return 0;
    family_kernel_ref probe = {.source = "common.cu", .name = "tune_read_probe"};
    size_t k = run_kernel_index(rc, &probe); /* listed by run_search_prepare: found, not added */
    if (k < rc->n_kernels && !rc->search->compiled[k]) {
        want[k] = 1;
        idx[n++] = k;
    }
    for (size_t ci = 0; ci < space_n_configs(rc->sp); ci++) {
        const run_plan *pl = mask[ci] && !rc->done[ci] ? run_plan_find(rc, ci) : NULL;
        for (int r = 0; pl && r < pl->n_refs; r++) {
            size_t ki = pl->refs[r];
            if (!rc->search->compiled[ki] && !want[ki]) {
                want[ki] = 1;
                idx[n++] = ki;
            }
        }
    }
    free(want);
    return n;
}

tune_status run_session_round(run_ctx *rc, run_summary *sum, run_session *s, int last,
                              run_session_stats *stats)
{
    size_t nc = space_n_configs(rc->sp), nk = rc->n_kernels ? rc->n_kernels : 1;
    unsigned char *all = malloc(nc ? nc : 1);
    size_t *idx = malloc(nk * sizeof *idx);
    double t0 = clock_now();
    if (!all || !idx) {
        free(all), free(idx);
        return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    }
    memcpy(all, rc->search->todo, nc);
    size_t n = session_kernels(rc, all, idx), measured = 0;
    for (size_t ci = 0; ci < nc; ci++)
        measured += all[ci] && !rc->done[ci];
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    run_compile_async *c = NULL;
    tune_status st = TUNE_OK;
    if (n > 0 &&
        !(c = run_compile_stream(rc, idx, n, rc->search->cache_dir, cpus > 3 ? (int)cpus - 2 : 1)))
        st = rc->err ? rc->err->code : TUNE_ERR_IO;
    run_summary part;
    memset(&part, 0, sizeof part);
    for (;;) {
        if (st != TUNE_OK)
            break;
        for (size_t i = 0; c && i < n; i++) /* what the compile child has told so far */
            if (!rc->search->compiled[idx[i]] && run_compile_is_read(c, idx[i]))
                rc->search->compiled[idx[i]] = 1;
        if (c && !run_compile_worker(c)) { /* it has ended: the rest read, c freed */
            st = run_compile_finish(rc, c, &part);
            c = NULL;
            continue;
        }
        size_t left = 0;
        for (size_t ci = 0; ci < nc; ci++)
            left += all[ci] && !rc->done[ci];
        int past = run_search_past_deadline(rc);
        if (!s->busy && (left == 0 || past || s->stop))
            break;
        if (!s->busy && !s->w && (st = session_start(rc, s)) != TUNE_OK)
            break;
        if (!s->busy) {
            size_t skipped = 0; /* told, and its batch done, but no row: never expected */
            for (size_t ci = 0; ci < nc; ci++)
                skipped += all[ci] && s->sent[ci] && !rc->done[ci];
            if (skipped) {
                st = tune_error_set(rc->err, TUNE_ERR_INVALID, "worker",
                                    "%zu configurations told to the worker have no row", skipped);
                break;
            }
            int r = session_dispatch(rc, s, all, last);
            if (r < 0) { /* the worker ended while idle: read why */
                st = session_wait(rc, sum, s, NULL, 5.0);
                continue;
            }
        }
        st = session_wait(rc, sum, s, c, 1.0);
    }
    s->stop = 0;
    if (c) { /* the round ended first (an error, the time limit): wait for the child */
        tune_status cst = run_compile_finish(rc, c, &part);
        st = st == TUNE_OK ? cst : st;
    }
    sum->n_cached += part.n_cached;
    sum->n_kernel_errors += part.n_kernel_errors;
    sum->compile_seconds += part.compile_seconds;
    if (stats) {
        stats->configs = measured;
        stats->kernels = n;
        stats->compile_s = part.compile_seconds;
        stats->wall_s = clock_now() - t0;
    }
    free(all);
    free(idx);
    return st;
}

tune_status run_session_retime(run_ctx *rc, run_summary *sum, run_session *s,
                               const unsigned char *shapes)
{
    tune_status st = TUNE_OK;
    for (size_t sh = 0; st == TUNE_OK && sh < space_n_shapes(rc->sp); sh++) {
        if (!shapes[sh])
            continue;
        if (!s->w && (st = session_start(rc, s)) != TUNE_OK)
            break;
        if (session_tell_kernels(rc, s) != 0 || worker_tell(s->w, "T %zu", sh) != 0) {
            st = session_wait(rc, sum, s, NULL, 5.0); /* it ended: why */
            break;
        }
        s->busy = 1;
        s->retiming = 1;
        s->last_line = clock_now();
        while (st == TUNE_OK && s->busy && s->w)
            st = session_wait(rc, sum, s, NULL, 1.0);
        if (!s->w) /* the re-timing ended it: the winners stand on their first measurement */
            break;
    }
    return st;
}

void run_session_free(run_ctx *rc, run_summary *sum, run_session *s)
{
    if (!s)
        return;
    if (s->w && worker_tell(s->w, "Q") == 0) {
        char line[4096];
        int r;
        while ((r = worker_read_line(s->w, line, sizeof line, 30)) == 1)
            session_line(rc, sum, s, line);
        if (r < 0)
            worker_kill(s->w);
    }
    if (s->w) {
        char how[256];
        worker_wait(s->w, how, sizeof how);
    }
    free(s->known);
    free(s->sent);
    free(s);
}
