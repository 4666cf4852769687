#include "device/timing.h"

#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "core/clock.h"
#include "device/gpu.h"

#define TIMING_CHUNK 10              /* reps per convergence check (and per held group) */
#define TIMING_GRAPH_TARGET_S 200e-6 /* automatic batch: one replay takes at least this */
#define TIMING_GRAPH_MAX_BATCH 1000
#define TIMING_HOLD_LIMIT_S 0.5 /* a hold never lasts longer, whatever the host does */
#define TIMING_CUBLAS_WORKSPACE ((size_t)32 << 20) /* cuBLAS's recommendation for Hopper */
#define TIMING_ENERGY_GROUP_S 2e-3   /* an energy window's reps are enqueued this much at a time */
#define TIMING_ENERGY_MAX_GROUP 100000
#define TIMING_ENERGY_EDGE_PERIODS 4 /* a counter that does not change in 4 periods is stuck */

/* A host function that keeps the stream waiting until the host has enqueued a group of reps. */
typedef struct {
    atomic_int released;
} timing_hold;

struct timing {
    cudaStream_t stream;
    void *flush, *clean; /* written, then read: see flush_l2 */
    size_t flush_bytes;
    void *read_kernel;
    cudaEvent_t *start, *stop;
    int n_events;
    void *cublas;    /* borrowed, optional */
    void *cublas_ws; /* graph captures' cuBLAS workspace */
    timing_hold holds[2]; /* two groups in flight at most */
    char note[512];
};

timing *timing_init(void *stream, size_t l2_bytes, void *read_kernel, tune_error *err)
{
    timing *t = calloc(1, sizeof *t);
    if (!t) {
        tune_error_set(err, TUNE_ERR_NOMEM, "timing_init", "out of memory");
        return NULL;
    }
    t->stream = (cudaStream_t)stream;
    t->read_kernel = read_kernel;
    t->flush_bytes = 2 * (l2_bytes ? l2_bytes : (64u << 20));
    if (gpu_malloc(&t->flush, t->flush_bytes, err) != TUNE_OK ||
        (read_kernel && gpu_malloc(&t->clean, t->flush_bytes, err) != TUNE_OK) ||
        (read_kernel && cudaMemset(t->clean, 0x3c, t->flush_bytes) != cudaSuccess)) {
        timing_free(t);
        return NULL;
    }
    return t;
}

void timing_free(timing *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n_events; i++) {
        cudaEventDestroy(t->start[i]);
        cudaEventDestroy(t->stop[i]);
    }
    free(t->start);
    free(t->stop);
    gpu_free(t->flush);
    gpu_free(t->clean);
    gpu_free(t->cublas_ws);
    free(t);
}

static tune_status ensure_events(timing *t, int n, tune_error *err)
{
    tune_status st = TUNE_OK;
    if (n <= t->n_events)
        return TUNE_OK;
    cudaEvent_t *a = realloc(t->start, (size_t)n * sizeof *a);
    if (a)
        t->start = a;
    cudaEvent_t *b = realloc(t->stop, (size_t)n * sizeof *b);
    if (b)
        t->stop = b;
    if (!a || !b)
        return tune_error_set(err, TUNE_ERR_NOMEM, "timing", "out of memory");
    for (; t->n_events < n; t->n_events++) {
        GPU_CHECK(cudaEventCreate(&t->start[t->n_events]), err, st, done);
        GPU_CHECK(cudaEventCreate(&t->stop[t->n_events]), err, st, done);
    }
done:
    return st;
}

/* Evicts the L2: writes a buffer twice its size, then reads another one of that size, so that the
 * write-backs of the lines the memset dirtied happen here and not inside the timed region (they
 * would cost the timed kernel up to L2-size / bandwidth, ~14 us on an H200). The L2 is left full of
 * clean lines that the timed kernel never reads. */
static tune_status flush_l2(timing *t, int rep, tune_error *err)
{
    tune_status st = TUNE_OK;
    GPU_CHECK(cudaMemsetAsync(t->flush, rep & 0xff, t->flush_bytes, t->stream), err, st, done);
    if (t->read_kernel) {
        unsigned long long words = t->flush_bytes / 16;
        void *sink = t->flush; /* written only if an impossible value is read: never */
        void *args[] = {&t->clean, &words, &sink};
        st = gpu_launch(t->read_kernel, 1024, 512, 0, t->stream, args, err);
    }
done:
    return st;
}

void timing_set_cublas(timing *t, void *cublas)
{
    if (t)
        t->cublas = cublas;
}

size_t timing_max_samples(const sweep_timing *st)
{
    return (size_t)(st->stop == SWEEP_TIMING_STOP_ADAPTIVE ? st->max_reps : st->reps);
}

static void CUDART_CB hold_wait(void *arg)
{
    timing_hold *h = arg;
    double t0 = clock_now();
    while (!atomic_load_explicit(&h->released, memory_order_acquire) &&
           clock_now() - t0 < TIMING_HOLD_LIMIT_S)
        ;
}


/* ---- what is measured: the work of one rep ---- */

/* One rep's work: fresh inputs outside the timed region (optional), then the timed launch. */
typedef struct {
    tune_status (*before_rep)(void *ctx, unsigned rep, tune_error *err); /* NULL: none */
    tune_status (*launch)(void *ctx, tune_error *err);
    void *ctx;
} timing_work;

typedef struct {
    const tune_family *fam;
    void *state;
    const tune_point *const *cfgs; /* interleaved: the configurations, prepared in turn */
    size_t n_cfgs;
} family_call;

static tune_status family_launch(void *ctx, tune_error *err)
{
    const family_call *fc = ctx;
    return fc->fam->launch(fc->state, err);
}

static tune_status family_before_rep(void *ctx, unsigned rep, tune_error *err)
{
    const family_call *fc = ctx;
    return fc->fam->before_rep(fc->state, rep, err);
}

/* Interleaved: rep i prepares configuration i mod n, then regenerates its inputs. */
static tune_status interleaved_before_rep(void *ctx, unsigned rep, tune_error *err)
{
    const family_call *fc = ctx;
    tune_status st = fc->fam->prepare(fc->state, fc->cfgs[rep % fc->n_cfgs], err);
    if (st == TUNE_OK && fc->fam->before_rep)
        st = fc->fam->before_rep(fc->state, rep, err);
    return st;
}

/* ---- the engine ---- */

typedef struct timing_engine timing_engine;

/* A measurement mode: what a timed rep enqueues around the work. */
typedef struct timing_mode_i {
    const char *name; /* "cold", "hot", "graph" */
    int flush;        /* the L2 is flushed before every rep */
    int held;         /* grouped reps wait behind a hold (cold needs none: each rep's flush outlasts
                         the host's enqueueing of the next one) */
    /* Optional: set up after the first launch; returns the mode measured (graph falls back to
     * hot when it cannot capture). */
    const struct timing_mode_i *(*setup)(timing_engine *e, tune_status *st, tune_error *err);
    tune_status (*launch)(timing_engine *e, tune_error *err); /* the timed part of a rep */
} timing_mode_i;

/* A stopping criterion (nvbench's stopping_criterion_base): after each group of samples is
 * read, the reason to stop, or NULL to go on. */
typedef struct {
    const char *(*check)(void *ctx, const double *samples, size_t n, size_t cap, double sum_s,
                         double elapsed_s);
    void *ctx;
} timing_stop;

/* How reps are enqueued and synchronised. */
typedef struct {
    int first_launch;   /* one untimed, unheld rep and a synchronisation before the rest */
    int chunk;          /* warmup and timed reps in groups of chunk, synchronised between; the
                           next group is enqueued before waiting for the current one. 0: every
                           rep in one pass, one synchronisation at the end */
    int drain_on_error; /* synchronise the stream after a failure */
} timing_schedule;

/* The grouped schedule of stop adaptive and of the hot and graph modes. */
static const timing_schedule schedule_grouped = {1, TIMING_CHUNK, 1};
/* The first loop of tune, kept for fixed cold measurements (their numbers must not move), the
 * calibrator's timings and the interleaved re-timing: warmup and reps in one pass, each rep's
 * inputs, flush, events and launch, then one synchronisation. */
static const timing_schedule schedule_simple = {0, 0, 0};

/* One measurement in progress. */
struct timing_engine {
    timing *t;
    const timing_work *w;
    const timing_mode_i *mode; /* as measured (graph falls back to hot) */
    int holds;                 /* the schedule holds grouped reps in held modes */
    cudaGraphExec_t exec;      /* graph mode */
    int want_batch;            /* graph mode: launches per replay asked for; <= 0: automatic */
    int batch;                 /* launches per sample */
    unsigned rep; /* counts every rep, warmup included: before_rep's and the flush's argument */
};

static tune_status work_launch(timing_engine *e, tune_error *err)
{
    return e->w->launch(e->w->ctx, err);
}

/* Enqueues one rep; ev >= 0: timed between start[ev] and stop[ev]. untimed_plain: the work's own
 * launch, whatever the mode (the first launch, before graph mode is set up). */
static tune_status engine_rep(timing_engine *e, int ev, int plain, tune_error *err)
{
    tune_status st = TUNE_OK;
    timing *t = e->t;
    if (e->w->before_rep && (st = e->w->before_rep(e->w->ctx, e->rep, err)) != TUNE_OK)
        return st;
    if (e->mode->flush && (st = flush_l2(t, (int)e->rep, err)) != TUNE_OK)
        return st;
    e->rep++;
    if (ev >= 0)
        GPU_CHECK(cudaEventRecord(t->start[ev], t->stream), err, st, done);
    if ((st = plain ? work_launch(e, err) : e->mode->launch(e, err)) != TUNE_OK)
        return st;
    if (ev >= 0)
        GPU_CHECK(cudaEventRecord(t->stop[ev], t->stream), err, st, done);
done:
    return st;
}

/* Enqueues count reps (timed on events first.. when first >= 0), behind a hold in held modes
 * (released once all are enqueued, so they run back to back). */
static tune_status engine_group(timing_engine *e, int first, int count, timing_hold *h,
                                tune_error *err)
{
    tune_status st = TUNE_OK;
    int held = e->holds && e->mode->held;
    if (held) {
        atomic_store_explicit(&h->released, 0, memory_order_release);
        GPU_CHECK(cudaLaunchHostFunc(e->t->stream, hold_wait, h), err, st, done);
    }
    for (int i = 0; i < count && st == TUNE_OK; i++)
        st = engine_rep(e, first >= 0 ? first + i : -1, 0, err);
done:
    if (held)
        atomic_store_explicit(&h->released, 1, memory_order_release);
    return st;
}

/* Median-free estimate of one launch's time, hot: TIMING_CHUNK launches back to back between one
 * pair of events. */
static tune_status estimate_launch(timing_engine *e, double *seconds, tune_error *err)
{
    tune_status st = TUNE_OK;
    timing *t = e->t;
    float ms = 0;
    if ((st = ensure_events(t, 1, err)) != TUNE_OK)
        return st;
    timing_hold *h = &t->holds[0];
    atomic_store_explicit(&h->released, 0, memory_order_release);
    GPU_CHECK(cudaLaunchHostFunc(t->stream, hold_wait, h), err, st, release);
    GPU_CHECK(cudaEventRecord(t->start[0], t->stream), err, st, release);
    for (int i = 0; i < TIMING_CHUNK && st == TUNE_OK; i++)
        st = work_launch(e, err);
    if (st != TUNE_OK)
        goto release;
    GPU_CHECK(cudaEventRecord(t->stop[0], t->stream), err, st, release);
release:
    atomic_store_explicit(&h->released, 1, memory_order_release);
    if (st != TUNE_OK)
        return st;
    GPU_CHECK(cudaStreamSynchronize(t->stream), err, st, done);
    GPU_CHECK(cudaEventElapsedTime(&ms, t->start[0], t->stop[0]), err, st, done);
    *seconds = (double)ms * 1e-3 / TIMING_CHUNK;
done:
    return st;
}

/* Captures e->batch launches into e->exec. A failure is not an error: e->exec stays NULL and
 * t->note says why. */
static void engine_capture(timing_engine *e)
{
    timing *t = e->t;
    cudaGraph_t graph = NULL;
    cublasHandle_t h = t->cublas;
    cudaStream_t h_stream = NULL;
    tune_error le = {0};
    char text[1024];
    cudaError_t rc;
    if (h) {
        /* cuBLAS calls in a capture need a workspace set with cublasSetWorkspace to be graph-safe
         * (cuBLAS docs, "CUDA Graphs Support"); cublasSetStream resets the handle to its default
         * pool afterwards, so measurements outside graphs are unchanged. */
        if (!t->cublas_ws && gpu_malloc(&t->cublas_ws, TIMING_CUBLAS_WORKSPACE, &le) != TUNE_OK) {
            snprintf(t->note, sizeof t->note, "graph capture not tried: cuBLAS workspace: %s",
                     tune_error_text(&le, text, sizeof text));
            return;
        }
        if (cublasGetStream(h, &h_stream) != CUBLAS_STATUS_SUCCESS ||
            cublasSetWorkspace(h, t->cublas_ws, TIMING_CUBLAS_WORKSPACE) != CUBLAS_STATUS_SUCCESS) {
            snprintf(t->note, sizeof t->note, "graph capture not tried: cublasSetWorkspace failed");
            return;
        }
    }
    if ((rc = cudaStreamBeginCapture(t->stream, cudaStreamCaptureModeThreadLocal)) != cudaSuccess) {
        snprintf(t->note, sizeof t->note, "graph capture failed: cudaStreamBeginCapture: %s",
                 cudaGetErrorString(rc));
        goto restore;
    }
    tune_status st = TUNE_OK;
    for (int i = 0; i < e->batch && st == TUNE_OK; i++)
        st = work_launch(e, &le);
    rc = cudaStreamEndCapture(t->stream, &graph); /* always: leaves capture mode */
    if (st != TUNE_OK) {
        snprintf(t->note, sizeof t->note, "graph capture failed: the launch: %s",
                 tune_error_text(&le, text, sizeof text));
    } else if (rc != cudaSuccess || !graph) {
        snprintf(t->note, sizeof t->note, "graph capture failed: cudaStreamEndCapture: %s",
                 cudaGetErrorString(rc));
    } else if ((rc = cudaGraphInstantiate(&e->exec, graph, 0)) != cudaSuccess) {
        e->exec = NULL;
        snprintf(t->note, sizeof t->note, "graph capture failed: cudaGraphInstantiate: %s",
                 cudaGetErrorString(rc));
    }
    if (graph)
        cudaGraphDestroy(graph);
restore:
    (void)cudaGetLastError(); /* a refused capture leaves nothing sticky; clear the last error */
    if (h)
        cublasSetStream(h, h_stream);
}

/* The samples of events [from, to) into samples; adds their sum to *sum. */
static tune_status engine_read(timing_engine *e, size_t from, size_t to, double *samples,
                               double *sum, tune_error *err)
{
    tune_status st = TUNE_OK;
    for (size_t i = from; i < to; i++) {
        float ms = 0;
        GPU_CHECK(cudaEventElapsedTime(&ms, e->t->start[i], e->t->stop[i]), err, st, done);
        samples[i] = (double)ms * 1e-3 / e->batch;
        *sum += samples[i];
    }
done:
    return st;
}

static double rel_stderr_of(const double *x, size_t n)
{
    if (n < 2)
        return NAN;
    double mean = 0, ss = 0;
    for (size_t i = 0; i < n; i++)
        mean += x[i];
    mean /= (double)n;
    for (size_t i = 0; i < n; i++)
        ss += (x[i] - mean) * (x[i] - mean);
    return sqrt(ss / (double)(n - 1) / (double)n) / mean;
}


/* Graph mode's setup: the batch (given, or enough launches for TIMING_GRAPH_TARGET_S per
 * replay), then the capture; hot mode when the capture fails (t->note says why). */
static const timing_mode_i *graph_setup(timing_engine *e, tune_status *st, tune_error *err);

static tune_status graph_launch(timing_engine *e, tune_error *err)
{
    tune_status st = TUNE_OK;
    GPU_CHECK(cudaGraphLaunch(e->exec, e->t->stream), err, st, done);
done:
    return st;
}

static const timing_mode_i mode_cold = {"cold", 1, 0, NULL, work_launch};
static const timing_mode_i mode_hot = {"hot", 0, 1, NULL, work_launch};
static const timing_mode_i mode_graph = {"graph", 0, 1, graph_setup, graph_launch};

static const timing_mode_i *graph_setup(timing_engine *e, tune_status *st, tune_error *err)
{
    e->batch = e->want_batch;
    if (e->batch <= 0) {
        double one = 0;
        if (e->w->before_rep && (*st = e->w->before_rep(e->w->ctx, e->rep++, err)) != TUNE_OK)
            return &mode_graph;
        if ((*st = estimate_launch(e, &one, err)) != TUNE_OK)
            return &mode_graph;
        double b = one > 0 ? ceil(TIMING_GRAPH_TARGET_S / one) : TIMING_GRAPH_MAX_BATCH;
        e->batch = b < 1 ? 1 : b > TIMING_GRAPH_MAX_BATCH ? TIMING_GRAPH_MAX_BATCH : (int)b;
    }
    engine_capture(e);
    if (e->exec)
        return &mode_graph;
    e->batch = 1;
    return &mode_hot;
}

static const timing_mode_i *const timing_modes[] = {
    [SWEEP_TIMING_MODE_COLD] = &mode_cold,
    [SWEEP_TIMING_MODE_HOT] = &mode_hot,
    [SWEEP_TIMING_MODE_GRAPH] = &mode_graph,
};

/* ---- stopping criteria ---- */

static const char *stop_fixed(void *ctx, const double *samples, size_t n, size_t cap,
                              double sum_s, double elapsed_s)
{
    (void)ctx, (void)samples, (void)sum_s, (void)elapsed_s;
    return n >= cap ? "fixed" : NULL;
}

/* Until the relative standard error is under st->rel_stderr, with at least min_reps samples and
 * min_time_s of GPU time; at most max_reps (cap) samples and max_time_s of host time. */
static const char *stop_adaptive(void *ctx, const double *samples, size_t n, size_t cap,
                                 double sum_s, double elapsed_s)
{
    const sweep_timing *st = ctx;
    if (n >= (size_t)st->min_reps && sum_s >= st->min_time_s &&
        rel_stderr_of(samples, n) < st->rel_stderr)
        return "converged";
    if (n >= cap)
        return "max_reps";
    if (elapsed_s >= st->max_time_s)
        return "timeout";
    return NULL;
}

/* ---- the measurement ---- */

/* Warmup, then timed groups until the stopping criterion says so. Samples (seconds per launch)
 * into samples[0 .. info->n). */
static tune_status engine_measure(timing_engine *e, const timing_schedule *sch, int warmup,
                                  const timing_stop *stop, size_t cap, double *samples,
                                  timing_info *info, double t0, tune_error *err)
{
    timing *t = e->t;
    tune_status s = TUNE_OK;
    int chunk = sch->chunk > 0 ? sch->chunk : (int)(cap > (size_t)warmup ? cap : (size_t)warmup);
    /* Warmup (replays in graph mode); grouped: synchronised so the timed groups start fresh. */
    for (int done = 0; done < warmup && s == TUNE_OK; done += chunk) {
        int n = warmup - done < chunk ? warmup - done : chunk;
        s = engine_group(e, -1, n, &t->holds[0], err);
        if (s == TUNE_OK && sch->chunk > 0)
            GPU_CHECK(cudaStreamSynchronize(t->stream), err, s, out);
    }
    if (s != TUNE_OK)
        goto out;
    size_t a = 0, a_end = cap < (size_t)chunk ? cap : (size_t)chunk, b_end;
    double sum = 0;
    /* Events are created as groups need them (a few per group, while the GPU is busy). */
    if ((s = ensure_events(t, (int)a_end, err)) != TUNE_OK ||
        (s = engine_group(e, 0, (int)a_end, &t->holds[0], err)) != TUNE_OK)
        goto out;
    for (int k = 0;; k++) {
        b_end = cap - a_end < (size_t)chunk ? cap : a_end + (size_t)chunk;
        if (b_end > a_end &&
            ((s = ensure_events(t, (int)b_end, err)) != TUNE_OK ||
             (s = engine_group(e, (int)a_end, (int)(b_end - a_end), &t->holds[(k + 1) & 1],
                               err)) != TUNE_OK))
            goto out;
        if (sch->chunk > 0)
            GPU_CHECK(cudaEventSynchronize(t->stop[a_end - 1]), err, s, out);
        else
            GPU_CHECK(cudaStreamSynchronize(t->stream), err, s, out);
        if ((s = engine_read(e, a, a_end, samples, &sum, err)) != TUNE_OK)
            goto out;
        const char *why = stop->check(stop->ctx, samples, a_end, cap, sum, clock_now() - t0);
        if (why) {
            info->n = a_end;
            info->stop_reason = why;
            break;
        }
        a = a_end;
        a_end = b_end;
    }
    /* Lets a group enqueued past the decision finish; its samples are not used. */
    if (sch->chunk > 0)
        GPU_CHECK(cudaStreamSynchronize(t->stream), err, s, out);
    info->rel_stderr = rel_stderr_of(samples, info->n);
out:
    return s;
}

/* The one measurement engine: `work` measured in `mode` on the schedule, until `stop`.
 * Notes why graph mode fell back to hot in info->note. */
static tune_status engine_run(timing *t, const timing_work *work, const timing_mode_i *mode,
                              int want_batch, const timing_schedule *sch, int warmup,
                              const timing_stop *stop, size_t cap, double *samples,
                              timing_info *info, tune_error *err)
{
    double t0 = clock_now();
    *info = (timing_info){0, "fixed", mode->name, 1, NAN, 0, NULL};
    t->note[0] = '\0';
    timing_engine e = {t, work, mode, sch->chunk > 0, NULL, want_batch, 1, 0};
    tune_status s = TUNE_OK;
    if (cap > (size_t)INT_MAX)
        return tune_error_set(err, TUNE_ERR_INVALID, "timing", "too many reps: %zu", cap);
    if (!sch->first_launch && (s = ensure_events(t, (int)cap, err)) != TUNE_OK)
        goto out;
    if (sch->first_launch) {
        /* One launch, not held, then synchronise: the first launch of a kernel may load it
         * (CUDA's lazy loading) or let a library initialise, which can wait for the stream, and
         * so would stall behind a hold until it times out. */
        if ((s = engine_rep(&e, -1, 1, err)) != TUNE_OK)
            goto out;
        GPU_CHECK(cudaStreamSynchronize(t->stream), err, s, out);
    }
    if (mode->setup) {
        e.mode = mode->setup(&e, &s, err);
        if (s != TUNE_OK)
            goto out;
        if (e.mode != mode)
            info->note = t->note;
    }
    info->mode = e.mode->name;
    info->batch = e.batch;
    s = engine_measure(&e, sch, warmup, stop, cap, samples, info, t0, err);
out:
    if (s != TUNE_OK) {
        info->n = 0;
        /* Never leave work of this configuration in the stream for the next one. */
        if (sch->drain_on_error && cudaStreamSynchronize(t->stream) != cudaSuccess)
            (void)cudaGetLastError();
    }
    if (e.exec)
        cudaGraphExecDestroy(e.exec);
    info->wall_s = clock_now() - t0;
    return s;
}

tune_status timing_measure(timing *t, const tune_family *fam, void *state, const sweep_timing *st,
                           double *samples, timing_info *info, tune_error *err)
{
    timing_info dummy;
    family_call fc = {fam, state, NULL, 0};
    timing_work work = {(st->fresh_indices || fam->restores_inputs) && fam->before_rep
                            ? family_before_rep
                            : NULL,
                        family_launch, &fc};
    int adaptive = st->stop == SWEEP_TIMING_STOP_ADAPTIVE;
    timing_stop stop = {adaptive ? stop_adaptive : stop_fixed, (void *)st};
    /* Fixed cold keeps the simple schedule, so that its numbers do not change. */
    const timing_schedule *sch =
        !adaptive && st->mode == SWEEP_TIMING_MODE_COLD ? &schedule_simple : &schedule_grouped;
    return engine_run(t, &work, timing_modes[st->mode], st->batch, sch, st->warmup, &stop,
                      timing_max_samples(st), samples, info ? info : &dummy, err);
}

tune_status timing_run_fn(timing *t, tune_status (*fn)(void *ctx, tune_error *err), void *ctx,
                          int warmup, int reps, int flush, double *samples, tune_error *err)
{
    timing_info info;
    timing_work work = {NULL, fn, ctx};
    timing_stop stop = {stop_fixed, NULL};
    return engine_run(t, &work, flush ? &mode_cold : &mode_hot, 1, &schedule_simple, warmup,
                      &stop, (size_t)reps, samples, &info, err);
}

tune_status timing_interleaved(timing *t, const tune_family *fam, void *state,
                               const tune_point *const *cfgs, size_t n, int rounds, int flush,
                               double *samples, tune_error *err)
{
    size_t cap = n * (size_t)rounds;
    double *by_rep = malloc((cap ? cap : 1) * sizeof *by_rep);
    if (!by_rep)
        return tune_error_set(err, TUNE_ERR_NOMEM, "timing", "out of memory");
    family_call fc = {fam, state, cfgs, n};
    timing_work work = {interleaved_before_rep, family_launch, &fc};
    timing_stop stop = {stop_fixed, NULL};
    timing_info info;
    tune_status st = engine_run(t, &work, flush ? &mode_cold : &mode_hot, 1, &schedule_simple, 0,
                                &stop, cap, by_rep, &info, err);
    for (size_t r = 0; st == TUNE_OK && r < (size_t)rounds; r++) /* rep r * n + c: A B C A B C */
        for (size_t c = 0; c < n; c++)
            samples[c * (size_t)rounds + r] = by_rep[r * n + c];
    free(by_rep);
    return st;
}

/* ---- energy ---- */

/* Polls the counter until it changes, at most limit_s: 0 with the new value and the host time
 * of the change, -1 when it cannot be read or does not change. */
static int energy_edge(const timing_energy_counter *c, double limit_s, double *joules,
                       double *when)
{
    double first, now, t0 = clock_now();
    if (c->read(c->ctx, &first) != 0)
        return -1;
    do {
        if (c->read(c->ctx, &now) != 0)
            return -1;
        if (now != first) {
            *joules = now;
            *when = clock_now();
            return 0;
        }
    } while (clock_now() - t0 < limit_s);
    return -1;
}

/* Groups of `group` reps back to back from one counter change to the first change after the
 * window and the stream's end. */
static tune_status energy_window(timing_engine *e, const timing_energy_counter *c, double window,
                                 int group, timing_energy_info *info, tune_error *err)
{
    timing *t = e->t;
    double e0, e1, h0, h1, limit = TIMING_ENERGY_EDGE_PERIODS * c->period_s;
    size_t reps = 0;
    float ms = 0;
    tune_status s = TUNE_OK;
    if (energy_edge(c, limit, &e0, &h0) != 0) {
        info->note = "the NVML energy counter did not change";
        return TUNE_OK;
    }
    GPU_CHECK(cudaEventRecord(t->start[0], t->stream), err, s, done);
    for (int k = 0;; k++) {
        if ((s = engine_group(e, -1, group, &t->holds[k & 1], err)) != TUNE_OK)
            goto done;
        reps += (size_t)group;
        GPU_CHECK(cudaEventRecord(t->stop[k & 1], t->stream), err, s, done);
        if (k > 0) /* one group runs while the next is enqueued */
            GPU_CHECK(cudaEventSynchronize(t->stop[(k - 1) & 1]), err, s, done);
        if (clock_now() - h0 >= window)
            break;
    }
    GPU_CHECK(cudaEventRecord(t->start[1], t->stream), err, s, done);
    GPU_CHECK(cudaStreamSynchronize(t->stream), err, s, done);
    GPU_CHECK(cudaEventElapsedTime(&ms, t->start[0], t->start[1]), err, s, done);
    if (energy_edge(c, limit, &e1, &h1) != 0) {
        info->note = "the NVML energy counter did not change";
        return TUNE_OK;
    }
    info->calls = reps * (size_t)e->batch;
    info->window_s = (double)ms * 1e-3;
    info->joules = (e1 - e0) / (double)info->calls;
    info->power_w = (e1 - e0) / (h1 - h0);
done:
    return s;
}

tune_status timing_energy(timing *t, const tune_family *fam, void *state, const sweep_timing *st,
                          double call_s, const timing_energy_counter *c, timing_energy_info *info,
                          tune_error *err)
{
    *info = (timing_energy_info){NAN, NAN, 0, 0, NULL};
    if (!c || !c->read || !(c->period_s > 0)) {
        info->note = "no NVML energy counter on this device";
        return TUNE_OK;
    }
    double window = TIMING_ENERGY_PERIODS * c->period_s;
    if (window < TIMING_ENERGY_MIN_S)
        window = TIMING_ENERGY_MIN_S;
    family_call fc = {fam, state, NULL, 0};
    timing_work work = {NULL, family_launch, &fc};
    const timing_mode_i *mode = st->mode == SWEEP_TIMING_MODE_GRAPH ? &mode_graph : &mode_hot;
    timing_engine e = {t, &work, mode, 1, NULL, st->batch, 1, 0};
    t->note[0] = '\0';
    tune_status s = ensure_events(t, 2, err);
    if (s == TUNE_OK) /* not held: see engine_run */
        s = engine_rep(&e, -1, 1, err);
    if (s == TUNE_OK)
        GPU_CHECK(cudaStreamSynchronize(t->stream), err, s, done);
    if (s == TUNE_OK && mode->setup)
        e.mode = mode->setup(&e, &s, err);
    double per = (call_s > 0 && isfinite(call_s) ? call_s : 1e-6) * e.batch;
    double g = ceil(TIMING_ENERGY_GROUP_S / per);
    int group = g < 1 ? 1 : g > TIMING_ENERGY_MAX_GROUP ? TIMING_ENERGY_MAX_GROUP : (int)g;
    if (s == TUNE_OK)
        s = energy_window(&e, c, window, group, info, err);
done:
    if (s != TUNE_OK && cudaStreamSynchronize(t->stream) != cudaSuccess)
        (void)cudaGetLastError();
    if (e.exec)
        cudaGraphExecDestroy(e.exec);
    return s;
}
