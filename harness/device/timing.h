/* timing.h - the measurement engine (docs/timing.md): warmup, fresh inputs outside the timed region,
 * CUDA events around the launch only, and the sweep's "timing" choices: stop fixed (warmup + reps)
 * or adaptive (until the relative standard error of the mean is under a target), mode cold (L2
 * flushed before every rep), hot (no flush) or graph (a CUDA graph of `batch` launches per
 * replay, time / batch).
 *
 *   timing *t = timing_init(stream, l2_bytes, read_kernel, &err);
 *   timing_set_cublas(t, cublas);                 // optional: lets graph mode capture cuBLAS
 *   double *samples = malloc(timing_max_samples(&sw->timing) * sizeof *samples);
 *   timing_info info;
 *   timing_measure(t, fam, state, &sw->timing, samples, &info, &err);
 *   stats_summarize(samples, info.n, &summary);   // seconds per launch
 *   timing_free(t);
 *
 * Cold: the flush (a memset of a buffer twice the L2 size, then a read of another such buffer with
 * read_kernel, common.cu's tune_read_probe, so that the memset's dirty lines are written back
 * before the timed region) also keeps the stream busy while the host enqueues the timed launch, so
 * launch latency stays out of the number. read_kernel NULL: memset only. Hot and graph: the stream
 * is held by a host function while a group of reps is enqueued, then released, so the reps run
 * back to back from a full queue (nvbench's blocking-kernel idea without device code).
 *
 * One engine (timing.c) measures everything: the work of a rep (fresh inputs, then the timed
 * launch), a mode (cold, hot, graph: what a rep enqueues around the work), a stopping criterion
 * (fixed, adaptive: after each group of samples, stop or go on, as nvbench's
 * stopping_criterion_base) and a schedule. Two schedules: grouped (one untimed launch first,
 * groups of 10 reps synchronised between, held in hot and graph modes) for stop adaptive and the
 * hot and graph modes; simple (warmup and reps in one pass, one synchronisation) for fixed cold
 * measurements, whose numbers predate the grouped schedule and must not move, for
 * timing_run_fn and for timing_interleaved.
 */
#ifndef TUNE_TIMING_H
#define TUNE_TIMING_H

#include <stddef.h>

#include "core/error.h"
#include "model/family.h"
#include "model/sweep.h"

typedef struct timing timing;

/* What one measurement did. The strings are static, except note (see below). */
typedef struct {
    size_t n;                /* samples written */
    const char *stop_reason; /* "fixed", "converged", "max_reps" or "timeout" */
    const char *mode;        /* mode measured: "cold", "hot" or "graph"; "hot" after a graph
                                fallback (then note says why) */
    int batch;               /* launches per sample: the graph's batch, 1 otherwise */
    double rel_stderr;       /* stderr / mean of the n samples; NAN when n < 2 */
    double wall_s;           /* host wall time of the whole measurement (warmup, capture) */
    const char *note;        /* why graph mode fell back to hot, or NULL; borrowed from t, valid
                                until its next timing_measure */
} timing_info;

/* New measurement context on stream (a cudaStream_t, borrowed). NULL with err set. */
TUNE_MUST_CHECK timing *timing_init(void *stream, size_t l2_bytes, void *read_kernel,
                                    tune_error *err);
void timing_free(timing *t);

/* The cuBLAS handle (borrowed, bound to the same stream) the family's launch uses, if any. Graph
 * mode then gives it a workspace of its own (owned by t) while capturing, as cuBLAS asks for
 * graph-safe capture, and resets it to the default pool afterwards, so other timings are
 * unchanged. Optional: without it, a capture that cuBLAS refuses falls back to hot mode. */
void timing_set_cublas(timing *t, void *cublas);

/* How many samples timing_measure can write for st: reps (stop fixed) or max_reps (adaptive). */
size_t timing_max_samples(const sweep_timing *st);

/* Measures the prepared configuration as st says: writes info->n samples (seconds per launch)
 * into samples, which holds timing_max_samples(st). info may be NULL. A family error (launch,
 * before_rep) or a CUDA error is returned as such; a graph capture that fails is not an error
 * (hot mode, with info->note). */
TUNE_MUST_CHECK tune_status timing_measure(timing *t, const tune_family *fam, void *state,
                                           const sweep_timing *st, double *samples,
                                           timing_info *info, tune_error *err);

/* Times fn(ctx) (which enqueues work on the stream) in fixed cold mode (flush != 0) or with no
 * flush, without per-rep hooks; writes reps samples. */
TUNE_MUST_CHECK tune_status timing_run_fn(timing *t, tune_status (*fn)(void *ctx, tune_error *err),
                                          void *ctx, int warmup, int reps, int flush,
                                          double *samples, tune_error *err);

/* Re-times n configurations interleaved (A B C A B C ...), `rounds` samples each, so that drift
 * (clocks, temperature, other tenants) hits them alike: for each, fam->prepare(cfgs[c]), fresh
 * inputs, the flush (when flush), then the timed launch. samples[c * rounds + r] in seconds. */
TUNE_MUST_CHECK tune_status timing_interleaved(timing *t, const tune_family *fam, void *state,
                                               const tune_point *const *cfgs, size_t n, int rounds,
                                               int flush, double *samples, tune_error *err);

/* A counter of the energy the device has used, read by the host (device/monitor.h:
 * monitor_energy), and its update period (monitor_energy_period). */
typedef struct {
    int (*read)(void *ctx, double *joules); /* 0, or -1 when it cannot be read */
    void *ctx;
    double period_s; /* > 0; otherwise the device has no usable counter */
} timing_energy_counter;

/* What one energy measurement found. */
typedef struct {
    double joules;    /* per call; NAN when not measured, and then note says why */
    double power_w;   /* the counter's mean power over the window; NAN when not measured */
    double window_s;  /* GPU time of the window's calls (CUDA events) */
    size_t calls;     /* calls in the window */
    const char *note; /* static, or NULL */
} timing_energy_info;

/* Reps of the window: at least TIMING_ENERGY_PERIODS updates of the counter, and at least
 * TIMING_ENERGY_MIN_S, so that the counter's resolution costs under a few percent. */
#define TIMING_ENERGY_PERIODS 20
#define TIMING_ENERGY_MIN_S 0.1

/* The energy of one call of the prepared configuration (docs/timing.md#energy), measured apart
 * from timing_measure's reps, which it leaves untouched: the host waits for the counter to
 * change, launches the work back to back (hot mode; graph mode replays the sweep's batch) for a
 * window of max(TIMING_ENERGY_PERIODS x c->period_s, TIMING_ENERGY_MIN_S) seconds, waits for
 * the stream and for the counter's next change, and divides the energy counted between the two
 * changes by the calls made. call_s (the measured time of a call, s) sizes the groups of reps. A
 * counter that is absent or does not change is not an error: info->joules NAN with a note. */
TUNE_MUST_CHECK tune_status timing_energy(timing *t, const tune_family *fam, void *state,
                                          const sweep_timing *st, double call_s,
                                          const timing_energy_counter *c, timing_energy_info *info,
                                          tune_error *err);

#endif
