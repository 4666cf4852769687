/* timing.h - the measurement loop of DESIGN.md 4: fixed warmup and reps, fresh inputs outside the
 * timed region, L2 flushed before every rep, CUDA events around the launch only.
 *
 *   timing *t = timing_init(stream, l2_bytes, &err);
 *   double samples[100];
 *   timing_run(t, fam, state, &sw->timing, samples, &err);   // seconds, one per rep
 *   timing_free(t);
 *
 * The flush (a memset of a buffer twice the L2 size, then a read of another such buffer with
 * read_kernel, common.cu's tune_read_probe, so that the memset's dirty lines are written back
 * before the timed region) also keeps the stream busy while the host enqueues the timed launch, so
 * launch latency stays out of the number. read_kernel NULL: memset only.
 */
#ifndef TUNE_TIMING_H
#define TUNE_TIMING_H

#include "error.h"
#include "family.h"
#include "sweep.h"

typedef struct timing timing;

timing *timing_init(void *stream, size_t l2_bytes, void *read_kernel, tune_error *err);
void timing_free(timing *t);

/* Runs st->warmup + st->reps iterations of the prepared configuration; writes st->reps samples
 * (seconds). */
tune_status timing_run(timing *t, const tune_family *fam, void *state, const sweep_timing *st,
                       double *samples, tune_error *err);

/* Times fn(ctx) (which enqueues work on the stream) like timing_run, without per-rep hooks. */
tune_status timing_run_fn(timing *t, tune_status (*fn)(void *ctx, tune_error *err), void *ctx,
                          int warmup, int reps, int flush, double *samples, tune_error *err);

#endif
