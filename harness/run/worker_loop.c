/* worker_loop.c - the worker: a child process that owns the GPU (crash isolation) and writes the
 * rows of the configurations not yet done, shape by shape.
 *
 * Messages to the coordinator, one per line:
 *   R <bytes/s>          the read bandwidth it measured
 *   B <i>                configuration i begins (the watchdog starts)
 *   E <i> <status> <s> <c>  configuration i's row is written: its median in seconds and its
 *                        cost under the run's objective (core/objective.h), nan unless ok
 *   T <shape>            the shape's fastest configurations are being re-timed
 *   C <i> <text>         configuration i broke the CUDA context (sticky error); the worker exits
 *   F <code> <text>      the worker cannot start (no GPU, out of memory for its buffers, ...)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "core/clock.h"
#include "device/calibrate.h"
#include "run/internal.h"
#include "run/search_ctx.h"

enum { WORKER_EXIT_STICKY = 3, WORKER_EXIT_FATAL = 4 };

/* The row of configuration ci, measured on the shape's state (NULL when the shape could not be
 * set up: shape_err says why). Returns 1 when the CUDA context broke (the row is not valid). */
static int worker_config(run_ctx *rc, void *state, const tune_error *shape_err, timing *tm,
                         size_t ci, result_row *row, char *reason, size_t reason_size)
{
    tune_point p;
    space_config_point(rc->sp, ci, &p);
    run_row_fill(rc, ci, &p, row, rc->gi.name);
    if (run_row_unrunnable(rc, ci, row)) {
        /* status and reason set */
    } else if (!state) {
        char text[2048];
        row->status = shape_err->code == TUNE_ERR_OOM || shape_err->code == TUNE_ERR_UNSUPPORTED
                          ? RESULT_SKIPPED
                          : RESULT_LAUNCH_ERROR;
        snprintf(reason, reason_size, "%s%s",
                 shape_err->code == TUNE_ERR_OOM ? "out of memory: " : "",
                 tune_error_text(shape_err, text, sizeof text));
        row->reason = reason;
    } else {
        run_row_measure(rc, state, tm, &p, row, reason, reason_size);
    }
    return row->status == RESULT_LAUNCH_ERROR && gpu_context_broken();
}

/* The worker's GPU resources. */
typedef struct {
    cudaStream_t stream;
    cublasHandle_t cublas;
    timing *tm;
    results_writer *w;
} worker_gpu;

/* Selects the device, creates the stream and cuBLAS. */
static tune_status worker_setup_device(run_ctx *rc, worker_gpu *g, tune_error *e)
{
    tune_status st = TUNE_OK;
    if ((st = gpu_select(rc->gi.ordinal, e)) != TUNE_OK)
        return st;
    GPU_CHECK(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking), e, st, fail);
    if (rc->sw->family->needs_cublas &&
        (cublasCreate(&g->cublas) != CUBLAS_STATUS_SUCCESS ||
         cublasSetStream(g->cublas, g->stream) != CUBLAS_STATUS_SUCCESS))
        return tune_error_set(e, TUNE_ERR_CUBLAS, "cublasCreate", "cannot create a handle");
fail:
    return st;
}

/* Then the timing context (the read probe compiled), the read bandwidth when it is not known
 * (sent to the coordinator), the ceilings, NVML and the rows file. */
static tune_status worker_setup_timing(run_ctx *rc, worker_gpu *g, int fd, tune_error *e)
{
    tune_status st = TUNE_OK;
    family_kernel_ref probe_ref = {.source = "common.cu", .name = "tune_read_probe"};
    void *probe = run_lookup_kernel(rc, &probe_ref);
    if (!(g->tm = timing_init(g->stream, rc->gi.l2_bytes, probe, e)))
        return e->code;
    timing_set_cublas(g->tm, g->cublas);
    if (rc->read_bw <= 0) {
        if ((st = calibrate_read_bw(g->tm, g->stream, probe, rc->gi.sm_count, (size_t)4 << 30, 20,
                                    &rc->read_bw, e)) != TUNE_OK)
            return st;
        worker_send(fd, "R %.17g", rc->read_bw);
    }
    run_load_ceilings(rc, rc->read_bw);
    rc->mon = monitor_open(rc->gi.pci_bus_id);
    run_energy_probe(rc);
    if (!(g->w = results_open(rc->out_dir, e)))
        return e->code;
    return st;
}

static tune_status worker_setup(run_ctx *rc, worker_gpu *g, int fd, tune_error *e)
{
    tune_status st = worker_setup_device(rc, g, e);
    return st == TUNE_OK ? worker_setup_timing(rc, g, fd, e) : st;
}

/* Ends a shape: its fastest candidates re-timed (the coordinator told first). An error: the
 * verdict could not be appended to retime.jsonl. */
static tune_status worker_shape_end(run_ctx *rc, int fd, size_t shape, void *state, timing *tm,
                                    run_candidate *cands, size_t n_cand, tune_error *e)
{
    if (!state || n_cand < 2)
        return TUNE_OK;
    worker_send(fd, "T %zu", shape);
    return run_retime_shape(rc, state, tm, cands, n_cand, e);
}

/* A searched run's candidates of a shape: its tuned configurations with an ok row, this round's
 * and the earlier ones' (rc->search->medians). */
static size_t searched_candidates(const run_ctx *rc, size_t shape, run_candidate *cands)
{
    size_t n = 0;
    for (size_t ci = 0; ci < space_n_configs(rc->sp); ci++) {
        const space_config *c = space_config_at(rc->sp, ci);
        if (c->shape == shape && c->param != SPACE_NO_PARAM && rc->search->medians[ci] > 0)
            cands[n++] = (run_candidate){ci, rc->search->medians[ci]};
    }
    return n;
}

/* Measures configuration ci and writes its row. 1: the CUDA context broke (the worker must exit);
 * -1: the row could not be written (e); 0 otherwise, *median set (NAN unless ok). */
static int worker_row(run_ctx *rc, int fd, void *state, const tune_error *shape_err, timing *tm,
                      results_writer *w, size_t ci, double *median, tune_error *e)
{
    result_row row;
    char reason[4096], stamp[32];
    if (worker_config(rc, state, shape_err, tm, ci, &row, reason, sizeof reason)) {
        worker_send(fd, "C %zu %s", ci, row.reason ? row.reason : "CUDA context broken");
        return 1;
    }
    clock_utc(stamp, sizeof stamp, CLOCK_UTC_ISO);
    row.timestamp = stamp;
    if (results_write_row(w, &row, e) != TUNE_OK)
        return -1;
    *median = row.status == RESULT_OK ? row.time.median : NAN;
    /* the search observes the row's cost under the run's objective */
    worker_send(fd, "E %zu %d %.17g %.17g", ci, (int)row.status, *median,
                results_row_cost(&row, rc->opt->objective));
    return 0;
}

/* ---- the worker of a searched run's session (search_session.c) ---- */

/* The shapes' states a session worker keeps between batches, so that a shape's inputs are set up
 * once per worker, not once per round, while the device keeps a quarter of its memory free: past
 * that, the states used least recently are freed first. */
typedef struct {
    void **state;
    unsigned long *used; /* per shape: when it was last used (0: no state) */
    unsigned long clock;
    size_t n;
} session_states;

static void states_evict(session_states *ss, const tune_family *fam, size_t keep)
{
    for (;;) {
        size_t free_b = 0, total = 0;
        if (cudaMemGetInfo(&free_b, &total) != cudaSuccess || free_b >= total / 4)
            return;
        size_t lru = ss->n;
        for (size_t s = 0; s < ss->n; s++)
            if (s != keep && ss->used[s] && (lru == ss->n || ss->used[s] < ss->used[lru]))
                lru = s;
        if (lru == ss->n)
            return;
        fam->shape_free(ss->state[lru]);
        ss->state[lru] = NULL;
        ss->used[lru] = 0;
    }
}

/* Shape s's state: kept, or set up (NULL with err when it cannot be; after an out-of-memory the
 * other states are freed and it is tried once more). */
static void *states_get(session_states *ss, run_ctx *rc, const family_env *env, size_t s,
                        tune_error *err)
{
    const tune_family *fam = rc->sw->family;
    if (ss->used[s]) {
        ss->used[s] = ++ss->clock;
        return ss->state[s];
    }
    void *state = fam->shape_init(env, space_shape(rc->sp, s), err);
    if (!state && err->code == TUNE_ERR_OOM) {
        for (size_t k = 0; k < ss->n; k++)
            if (ss->used[k]) {
                fam->shape_free(ss->state[k]);
                ss->state[k] = NULL;
                ss->used[k] = 0;
            }
        tune_error_clear(err);
        state = fam->shape_init(env, space_shape(rc->sp, s), err);
    }
    if (state) {
        ss->state[s] = state;
        ss->used[s] = ++ss->clock;
        states_evict(ss, fam, s);
    }
    return state;
}

/* "K k k ...": the kernels compiled since this worker started, read from the cache. */
static void session_kernels(run_ctx *rc, const char *line)
{
    const char *p = line + 1;
    size_t *idx = malloc((rc->n_kernels ? rc->n_kernels : 1) * sizeof *idx), n = 0;
    char *end;
    for (unsigned long long k; idx && (k = strtoull(p, &end, 10), end != p); p = end)
        if (k < rc->n_kernels && n < rc->n_kernels)
            idx[n++] = (size_t)k;
    if (idx && n)
        run_read_cached_kernels(rc, idx, n);
    free(idx);
}

tune_status run_session_plans(run_ctx *rc, const char *line)
{
    const char *p = line + 1;
    char *end;
    unsigned long long n = strtoull(p, &end, 10);
    if (end == p)
        return tune_error_set(rc->err, TUNE_ERR_INVALID, "worker", "a P line without a count");
    for (p = end;; p = end) {
        unsigned long long ci = strtoull(p, &end, 10);
        if (end == p)
            break;
        if (ci >= space_n_configs(rc->sp) || !run_plan_config(rc, (size_t)ci))
            return tune_error_set(rc->err, TUNE_ERR_INVALID, "worker",
                                  "configuration %llu cannot be planned", ci);
    }
    if (rc->n_kernels != n)
        return tune_error_set(rc->err, TUNE_ERR_INVALID, "worker",
                              "the kernel table differs from the coordinator's (%zu kernels, "
                              "%llu expected)",
                              rc->n_kernels, n);
    return TUNE_OK;
}

/* "C ci ci ...": configurations added to the batch (marked in todo). */
static void session_configs(run_ctx *rc, const char *line)
{
    const char *p = line + 1;
    char *end;
    for (unsigned long long ci; (ci = strtoull(p, &end, 10), end != p); p = end)
        if (ci < space_n_configs(rc->sp))
            rc->search->todo[ci] = 1;
}

/* The lines that only inform the worker: P (plans), K (kernels), C (configurations). 1 when
 * line is one of them (*st: a P line's status), 0 otherwise. */
static int session_note(run_ctx *rc, const char *line, tune_status *st)
{
    if (line[0] == 'P')
        *st = run_session_plans(rc, line);
    else if (line[0] == 'K')
        session_kernels(rc, line);
    else if (line[0] == 'C')
        session_configs(rc, line);
    else
        return 0;
    return 1;
}

/* "T s": shape s's candidates re-timed (when it has two), then "D". */
static tune_status session_retime(run_ctx *rc, int fd, size_t shape, session_states *ss,
                                  family_env *env, timing *tm, run_candidate *cands, tune_error *e)
{
    size_t n = searched_candidates(rc, shape, cands);
    tune_error shape_err = {0};
    void *state = n >= 2 ? states_get(ss, rc, env, shape, &shape_err) : NULL;
    tune_status st = worker_shape_end(rc, fd, shape, state, tm, cands, n, e);
    if (st == TUNE_OK)
        worker_send(fd, "D");
    return st;
}

/* The session's shapes freed, then its timing (ready: set up), cuBLAS and stream. */
static void session_end(run_ctx *rc, session_states *ss, worker_gpu *g, int ready)
{
    for (size_t s = 0; s < ss->n; s++)
        if (ss->used[s])
            rc->sw->family->shape_free(ss->state[s]);
    free(ss->state);
    free(ss->used);
    if (ready) {
        results_close(g->w);
        monitor_close(rc->mon);
        timing_free(g->tm);
    }
    if (g->cublas)
        cublasDestroy(g->cublas);
    if (g->stream)
        cudaStreamDestroy(g->stream);
}

int run_session_body(void *ctx, int fd, worker_inbox *in)
{
    run_ctx *rc = ctx;
    tune_error e = {0};
    worker_gpu g = {0};
    session_states ss = {0};
    int ready = 0, stopped = 0;
    rc->err = &e; /* the child's own error record */
    size_t ns = space_n_shapes(rc->sp), nc = space_n_configs(rc->sp);
    run_candidate *cands = calloc(nc + 1, sizeof *cands);
    ss.n = ns;
    ss.state = calloc(ns + 1, sizeof *ss.state);
    ss.used = calloc(ns + 1, sizeof *ss.used);
    /* the context, stream and cuBLAS while the first kernels compile */
    tune_status st = cands && ss.state && ss.used
                         ? worker_setup_device(rc, &g, &e)
                         : tune_error_set(&e, TUNE_ERR_NOMEM, "worker", "out of memory");
    if (st != TUNE_OK)
        goto fatal;
    memset(rc->search->todo, 0, nc);
    family_env env = {0};
    char line[8192];
    while (worker_recv(in, line, sizeof line) == 1) {
        if (line[0] == 'Q')
            break;
        if (session_note(rc, line, &st)) {
            if (st != TUNE_OK)
                goto fatal;
            continue;
        }
        if (line[0] != 'G' && line[0] != 'T')
            continue;
        if (!ready) { /* the first batch: the read probe is compiled by now */
            if ((st = worker_setup_timing(rc, &g, fd, &e)) != TUNE_OK)
                goto fatal;
            env = (family_env){rc->gi.ordinal, g.stream,          g.cublas, rc->gi.l2_bytes,
                               rc->opt->seed,  run_lookup_kernel, rc,       rc->sw->family,
                               run_lookup_global};
            ready = 1;
        }
        size_t shape = SIZE_MAX;
        if (line[0] == 'T' && sscanf(line, "T %zu", &shape) == 1 && shape < ns) {
            if ((st = session_retime(rc, fd, shape, &ss, &env, g.tm, cands, &e)) != TUNE_OK)
                goto fatal;
            continue;
        }
        int retime = line[0] == 'G' && line[1] == ' ' && line[2] == '1';
        void *state = NULL;
        tune_error shape_err = {0};
        stopped = 0;
        for (size_t ci = 0; ci < nc; ci++) {
            if (!rc->search->todo[ci] || rc->done[ci])
                continue;
            if (run_search_past_deadline(rc)) {
                stopped = 1; /* the run's time limit: between configurations */
                break;
            }
            size_t si = space_config_at(rc->sp, ci)->shape;
            if (si != shape && retime && shape != SIZE_MAX && state &&
                (st = worker_shape_end(rc, fd, shape, state, g.tm, cands,
                                       searched_candidates(rc, shape, cands), &e)) != TUNE_OK)
                goto fatal;
            worker_send(fd, "B %zu", ci); /* before the shape's set-up, as run_worker_body */
            if (si != shape) {
                tune_error_clear(&shape_err);
                state = states_get(&ss, rc, &env, si, &shape_err);
                shape = si;
            }
            double median = NAN;
            int r = worker_row(rc, fd, state, &shape_err, g.tm, g.w, ci, &median, &e);
            if (r > 0)
                return WORKER_EXIT_STICKY; /* the process exits: the driver frees the context */
            if (r < 0) {
                st = e.code;
                goto fatal;
            }
            rc->done[ci] = 1;
            if (median > 0 && space_config_at(rc->sp, ci)->param != SPACE_NO_PARAM)
                rc->search->medians[ci] = median; /* this child's copy: its re-timing reads it */
        }
        if (!stopped && retime && shape != SIZE_MAX && state &&
            (st = worker_shape_end(rc, fd, shape, state, g.tm, cands,
                                   searched_candidates(rc, shape, cands), &e)) != TUNE_OK)
            goto fatal;
        memset(rc->search->todo, 0, nc);
        worker_send(fd, stopped ? "D stop" : "D");
    }
    session_end(rc, &ss, &g, ready);
    free(cands);
    return 0;
fatal:
    worker_send(fd, "F %d %s%s%s", (int)st, e.where, e.where[0] ? ": " : "", e.message);
    return WORKER_EXIT_FATAL;
}

int run_worker_body(void *ctx, int fd)
{
    run_ctx *rc = ctx;
    tune_error e = {0};
    worker_gpu g = {0};
    rc->err = &e; /* the child's own error record */
    tune_status st = worker_setup(rc, &g, fd, &e);
    if (st != TUNE_OK)
        goto fatal;
    family_env env = {rc->gi.ordinal, g.stream,          g.cublas, rc->gi.l2_bytes,
                      rc->opt->seed,  run_lookup_kernel, rc,       rc->sw->family,
                      run_lookup_global};
    const tune_family *fam = rc->sw->family;
    void *state = NULL;
    size_t shape = SIZE_MAX, n_cand = 0;
    tune_error shape_err = {0};
    run_candidate *cands = calloc(space_n_configs(rc->sp) + 1, sizeof *cands);
    if (!cands) {
        st = tune_error_set(&e, TUNE_ERR_NOMEM, "worker", "out of memory");
        goto fatal;
    }
    for (size_t ci = 0; ci < space_n_configs(rc->sp); ci++) {
        if (rc->done[ci])
            continue;
        worker_send(fd, "B %zu", ci);
        size_t si = space_config_at(rc->sp, ci)->shape;
        if (si != shape) {
            if ((st = worker_shape_end(rc, fd, shape, state, g.tm, cands, n_cand, &e)) != TUNE_OK)
                goto fatal;
            n_cand = 0;
            fam->shape_free(state);
            tune_error_clear(&shape_err);
            state = fam->shape_init(&env, space_shape(rc->sp, si), &shape_err);
            shape = si;
        }
        double median = NAN;
        int r = worker_row(rc, fd, state, &shape_err, g.tm, g.w, ci, &median, &e);
        if (r > 0)
            return WORKER_EXIT_STICKY; /* the process exits: the driver frees the context */
        if (r < 0) {
            st = e.code;
            goto fatal;
        }
        if (median > 0 && space_config_at(rc->sp, ci)->param != SPACE_NO_PARAM)
            cands[n_cand++] = (run_candidate){ci, median};
    }
    if ((st = worker_shape_end(rc, fd, shape, state, g.tm, cands, n_cand, &e)) != TUNE_OK)
        goto fatal;
    fam->shape_free(state);
    free(cands);
    results_close(g.w);
    monitor_close(rc->mon);
    timing_free(g.tm);
    if (g.cublas)
        cublasDestroy(g.cublas);
    cudaStreamDestroy(g.stream);
    return 0;
fatal:
    worker_send(fd, "F %d %s%s%s", (int)st, e.where, e.where[0] ? ": " : "", e.message);
    return WORKER_EXIT_FATAL;
}
