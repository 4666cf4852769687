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

typedef struct {
    const tune_family *fam;
    void *state;
    int fresh;
} family_call;

static tune_status loop(timing *t, const family_call *fc, tune_status (*fn)(void *, tune_error *),
                        void *ctx, int warmup, int reps, int flush, double *samples,
                        tune_error *err)
{
    tune_status st = ensure_events(t, reps, err);
    if (st != TUNE_OK)
        return st;
    for (int i = 0; i < warmup + reps; i++) {
        if (fc && fc->fresh && fc->fam->before_rep &&
            (st = fc->fam->before_rep(fc->state, (unsigned)i, err)) != TUNE_OK)
            return st;
        if (flush && (st = flush_l2(t, i, err)) != TUNE_OK)
            return st;
        if (i >= warmup)
            GPU_CHECK(cudaEventRecord(t->start[i - warmup], t->stream), err, st, done);
        if ((st = fn(ctx, err)) != TUNE_OK)
            return st;
        if (i >= warmup)
            GPU_CHECK(cudaEventRecord(t->stop[i - warmup], t->stream), err, st, done);
    }
    GPU_CHECK(cudaStreamSynchronize(t->stream), err, st, done);
    for (int i = 0; i < reps; i++) {
        float ms = 0;
        GPU_CHECK(cudaEventElapsedTime(&ms, t->start[i], t->stop[i]), err, st, done);
        samples[i] = (double)ms * 1e-3;
    }
done:
    return st;
}

static tune_status family_launch(void *ctx, tune_error *err)
{
    const family_call *fc = ctx;
    return fc->fam->launch(fc->state, err);
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

/* One measurement in progress: what a rep enqueues. */
typedef struct {
    timing *t;
    const family_call *fc;
    sweep_timing_mode mode; /* as measured (graph falls back to hot) */
    cudaGraphExec_t exec;   /* graph mode */
    int batch;
    unsigned rep; /* counts every rep, warmup included: before_rep's and the flush's argument */
} timing_engine;

/* Enqueues one rep; ev >= 0: timed between start[ev] and stop[ev]. */
static tune_status engine_rep(timing_engine *e, int ev, tune_error *err)
{
    tune_status st = TUNE_OK;
    timing *t = e->t;
    const family_call *fc = e->fc;
    if (fc->fresh && fc->fam->before_rep &&
        (st = fc->fam->before_rep(fc->state, e->rep, err)) != TUNE_OK)
        return st;
    if (e->mode == SWEEP_TIMING_MODE_COLD && (st = flush_l2(t, (int)e->rep, err)) != TUNE_OK)
        return st;
    e->rep++;
    if (ev >= 0)
        GPU_CHECK(cudaEventRecord(t->start[ev], t->stream), err, st, done);
    if (e->mode == SWEEP_TIMING_MODE_GRAPH)
        GPU_CHECK(cudaGraphLaunch(e->exec, t->stream), err, st, done);
    else if ((st = family_launch((void *)fc, err)) != TUNE_OK)
        return st;
    if (ev >= 0)
        GPU_CHECK(cudaEventRecord(t->stop[ev], t->stream), err, st, done);
done:
    return st;
}

/* Enqueues count reps (timed on events first.. when first >= 0). Hot and graph: behind a hold,
 * released once all are enqueued, so they run back to back. Cold needs none: each rep's flush
 * outlasts the host's enqueueing of the next one. */
static tune_status engine_group(timing_engine *e, int first, int count, timing_hold *h,
                                tune_error *err)
{
    tune_status st = TUNE_OK;
    int held = e->mode != SWEEP_TIMING_MODE_COLD;
    if (held) {
        atomic_store_explicit(&h->released, 0, memory_order_release);
        GPU_CHECK(cudaLaunchHostFunc(e->t->stream, hold_wait, h), err, st, done);
    }
    for (int i = 0; i < count && st == TUNE_OK; i++)
        st = engine_rep(e, first >= 0 ? first + i : -1, err);
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
        st = family_launch((void *)e->fc, err);
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
        st = family_launch((void *)e->fc, &le);
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

static const char *const timing_mode_names[] = {"cold", "hot", "graph"};

tune_status timing_measure(timing *t, const tune_family *fam, void *state, const sweep_timing *st,
                           double *samples, timing_info *info, tune_error *err)
{
    double t0 = clock_now();
    timing_info dummy;
    if (!info)
        info = &dummy;
    *info = (timing_info){0, "fixed", timing_mode_names[st->mode], 1, NAN, 0, NULL};
    t->note[0] = '\0';
    family_call fc = {fam, state, st->fresh_indices};
    int adaptive = st->stop == SWEEP_TIMING_STOP_ADAPTIVE;
    size_t cap = timing_max_samples(st);

    /* Fixed cold: the original loop, so that its numbers do not change. */
    if (!adaptive && st->mode == SWEEP_TIMING_MODE_COLD) {
        tune_status s = loop(t, &fc, family_launch, &fc, st->warmup, st->reps, 1, samples, err);
        info->n = s == TUNE_OK ? cap : 0;
        info->rel_stderr = rel_stderr_of(samples, info->n);
        info->wall_s = clock_now() - t0;
        return s;
    }

    timing_engine e = {t, &fc, st->mode, NULL, 1, 0};
    tune_status s = TUNE_OK;
    if (cap > (size_t)INT_MAX)
        return tune_error_set(err, TUNE_ERR_INVALID, "timing", "too many reps: %zu", cap);

    /* One launch, not held, then synchronise: the first launch of a kernel may load it (CUDA's
     * lazy loading) or let a library initialise, which can wait for the stream, and so would
     * stall behind a hold until it times out. */
    e.mode = st->mode == SWEEP_TIMING_MODE_COLD ? SWEEP_TIMING_MODE_COLD : SWEEP_TIMING_MODE_HOT;
    s = engine_rep(&e, -1, err);
    e.mode = st->mode;
    if (s != TUNE_OK)
        goto out;
    GPU_CHECK(cudaStreamSynchronize(t->stream), err, s, out);

    if (e.mode == SWEEP_TIMING_MODE_GRAPH) {
        e.batch = st->batch;
        if (e.batch <= 0) {
            double one = 0;
            if (fc.fresh && fam->before_rep &&
                (s = fam->before_rep(state, e.rep++, err)) != TUNE_OK)
                goto out;
            if ((s = estimate_launch(&e, &one, err)) != TUNE_OK)
                goto out;
            double b = one > 0 ? ceil(TIMING_GRAPH_TARGET_S / one) : TIMING_GRAPH_MAX_BATCH;
            e.batch = b < 1 ? 1 : b > TIMING_GRAPH_MAX_BATCH ? TIMING_GRAPH_MAX_BATCH : (int)b;
        }
        engine_capture(&e);
        if (!e.exec) {
            e.mode = SWEEP_TIMING_MODE_HOT;
            e.batch = 1;
            info->note = t->note;
        }
    }
    info->mode = timing_mode_names[e.mode];
    info->batch = e.batch;

    /* Warmup (replays in graph mode), then synchronise so the timed groups start fresh. */
    for (int done = 0; done < st->warmup && s == TUNE_OK; done += TIMING_CHUNK) {
        int n = st->warmup - done < TIMING_CHUNK ? st->warmup - done : TIMING_CHUNK;
        s = engine_group(&e, -1, n, &t->holds[0], err);
        if (s == TUNE_OK)
            GPU_CHECK(cudaStreamSynchronize(t->stream), err, s, out);
    }
    if (s != TUNE_OK)
        goto out;

    /* Groups of TIMING_CHUNK reps; the next group is enqueued before waiting for the current one,
     * so the GPU never waits for the host's decision. */
    size_t a = 0, a_end = cap < TIMING_CHUNK ? cap : TIMING_CHUNK, b_end;
    double sum = 0;
    int k = 0;
    /* Events are created as groups need them (a few per group, while the GPU is busy). */
    if ((s = ensure_events(t, (int)a_end, err)) != TUNE_OK ||
        (s = engine_group(&e, 0, (int)a_end, &t->holds[0], err)) != TUNE_OK)
        goto out;
    for (;; k++) {
        b_end = cap - a_end < TIMING_CHUNK ? cap : a_end + TIMING_CHUNK;
        if (b_end > a_end &&
            ((s = ensure_events(t, (int)b_end, err)) != TUNE_OK ||
             (s = engine_group(&e, (int)a_end, (int)(b_end - a_end), &t->holds[(k + 1) & 1],
                               err)) != TUNE_OK))
            goto out;
        GPU_CHECK(cudaEventSynchronize(t->stop[a_end - 1]), err, s, out);
        if ((s = engine_read(&e, a, a_end, samples, &sum, err)) != TUNE_OK)
            goto out;
        size_t n = a_end;
        const char *why = NULL;
        if (!adaptive) {
            why = n >= cap ? "fixed" : NULL;
        } else {
            if (n >= (size_t)st->min_reps && sum >= st->min_time_s &&
                rel_stderr_of(samples, n) < st->rel_stderr)
                why = "converged";
            else if (n >= cap)
                why = "max_reps";
            else if (clock_now() - t0 >= st->max_time_s)
                why = "timeout";
        }
        if (why) {
            info->n = n;
            info->stop_reason = why;
            break;
        }
        a = a_end;
        a_end = b_end;
    }
    /* Lets a group enqueued past the decision finish; its samples are not used. */
    GPU_CHECK(cudaStreamSynchronize(t->stream), err, s, out);
    info->rel_stderr = rel_stderr_of(samples, info->n);
out:
    if (s != TUNE_OK) {
        info->n = 0;
        /* Never leave work of this configuration in the stream for the next one. */
        if (cudaStreamSynchronize(t->stream) != cudaSuccess)
            (void)cudaGetLastError();
    }
    if (e.exec)
        cudaGraphExecDestroy(e.exec);
    info->wall_s = clock_now() - t0;
    return s;
}

tune_status timing_run(timing *t, const tune_family *fam, void *state, const sweep_timing *st,
                       double *samples, tune_error *err)
{
    if (st->stop != SWEEP_TIMING_STOP_FIXED)
        return tune_error_set(err, TUNE_ERR_UNSUPPORTED, "timing_run",
                              "stop 'adaptive' writes up to max_reps samples: use timing_measure");
    return timing_measure(t, fam, state, st, samples, NULL, err);
}

tune_status timing_run_fn(timing *t, tune_status (*fn)(void *ctx, tune_error *err), void *ctx,
                          int warmup, int reps, int flush, double *samples, tune_error *err)
{
    return loop(t, NULL, fn, ctx, warmup, reps, flush, samples, err);
}

tune_status timing_interleaved(timing *t, const tune_family *fam, void *state,
                               const tune_point *const *cfgs, size_t n, int rounds, int flush,
                               double *samples, tune_error *err)
{
    tune_status st = ensure_events(t, (int)n * rounds, err);
    if (st != TUNE_OK)
        return st;
    int ev = 0;
    for (int r = 0; r < rounds; r++)
        for (size_t c = 0; c < n; c++, ev++) {
            if ((st = fam->prepare(state, cfgs[c], err)) != TUNE_OK ||
                (fam->before_rep && (st = fam->before_rep(state, (unsigned)ev, err)) != TUNE_OK) ||
                (flush && (st = flush_l2(t, ev, err)) != TUNE_OK))
                return st;
            GPU_CHECK(cudaEventRecord(t->start[ev], t->stream), err, st, done);
            if ((st = fam->launch(state, err)) != TUNE_OK)
                return st;
            GPU_CHECK(cudaEventRecord(t->stop[ev], t->stream), err, st, done);
        }
    GPU_CHECK(cudaStreamSynchronize(t->stream), err, st, done);
    for (int r = 0; r < rounds; r++)
        for (size_t c = 0; c < n; c++) {
            float ms = 0;
            int e = r * (int)n + (int)c;
            GPU_CHECK(cudaEventElapsedTime(&ms, t->start[e], t->stop[e]), err, st, done);
            samples[c * (size_t)rounds + (size_t)r] = (double)ms * 1e-3;
        }
done:
    return st;
}
