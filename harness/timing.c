#include "timing.h"

#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "gpu.h"

struct timing {
    cudaStream_t stream;
    void *flush, *clean; /* written, then read: see flush_l2 */
    size_t flush_bytes;
    void *read_kernel;
    cudaEvent_t *start, *stop;
    int n_events;
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

tune_status timing_run(timing *t, const tune_family *fam, void *state, const sweep_timing *st,
                       double *samples, tune_error *err)
{
    family_call fc = {fam, state, st->fresh_indices};
    return loop(t, &fc, family_launch, &fc, st->warmup, st->reps, st->flush_l2, samples, err);
}

tune_status timing_run_fn(timing *t, tune_status (*fn)(void *ctx, tune_error *err), void *ctx,
                          int warmup, int reps, int flush, double *samples, tune_error *err)
{
    return loop(t, NULL, fn, ctx, warmup, reps, flush, samples, err);
}
