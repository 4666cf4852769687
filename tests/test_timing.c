/* test_timing.c - the measurement loop on the GPU with a family-like launch (common.cu's
 * tune_fill_indices or tune_read_probe): fixed mode writes exactly reps samples, adaptive stopping
 * converges or stops at max_reps or the time-out, graph mode gives per-launch times near hot
 * mode's, hot mode is not slower than cold, a capture the launch refuses falls back to hot. Every
 * GPU test skips with the reason when no GPU is usable. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "device/compile.h"
#include "model/family.h"
#include "device/gpu.h"
#include "util.h"
#include "core/stats.h"
#include "device/monitor.h"
#include "device/timing.h"


/* ---- a family-like test fixture ---- */

typedef enum { TT_FILL, TT_READ } tt_kind;

typedef struct {
    cudaStream_t stream;
    void *fill, *read; /* kernels */
    void *buf, *sink;
    size_t bytes;
    tt_kind kind;
    unsigned long long n;
    int refuse_capture; /* the launch fails while the stream is capturing */
    unsigned n_before;  /* before_rep calls */
    timing *t;
    int lock_fd;
} tt_env;

static tt_env env;

static tune_status tt_launch(void *state, tune_error *err)
{
    tt_env *e = state;
    if (e->refuse_capture) {
        enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
        cudaStreamIsCapturing(e->stream, &cs);
        if (cs != cudaStreamCaptureStatusNone)
            return tune_error_set(err, TUNE_ERR_UNSUPPORTED, "tt_launch",
                                  "refuses to be captured (as a library might)");
    }
    if (e->kind == TT_FILL) {
        unsigned long long seed = 7;
        int range = 1000;
        void *args[] = {&e->buf, &e->n, &seed, &range};
        return gpu_launch(e->fill, 528, 256, 0, e->stream, args, err);
    }
    void *args[] = {&e->buf, &e->n, &e->sink};
    return gpu_launch(e->read, 1024, 512, 0, e->stream, args, err);
}

static tune_status tt_before_rep(void *state, unsigned rep, tune_error *err)
{
    (void)rep;
    (void)err;
    ((tt_env *)state)->n_before++;
    return TUNE_OK;
}

static const tune_family tt_family = {
    .name = "timing_test", .before_rep = tt_before_rep, .launch = tt_launch};

/* Criterion runs tests in parallel processes; timings taken while another test uses the GPU mean
 * nothing, so the GPU tests take turns through a file lock (released when the process exits). */
static void tt_setup(void)
{
    require_gpu();
    tune_error err = {0};
    gpu_info gi;
    cr_assert_eq(gpu_query(0, &gi, &err), TUNE_OK, "%s", err.message);
    memset(&env, 0, sizeof env);
    env.lock_fd = open("/tmp/tune-test-timing.lock", O_RDWR | O_CREAT, 0666);
    cr_assert_geq(env.lock_fd, 0);
    cr_assert_eq(flock(env.lock_fd, LOCK_EX), 0);
    cr_assert_eq(cudaStreamCreateWithFlags(&env.stream, cudaStreamNonBlocking), cudaSuccess);
    env.fill = test_get_kernel(NULL, "common.cu", "tune_fill_indices");
    env.read = test_get_kernel(NULL, "common.cu", "tune_read_probe");
    env.bytes = (size_t)64 << 20;
    cr_assert_eq(gpu_malloc(&env.buf, env.bytes, &err), TUNE_OK, "%s", err.message);
    cr_assert_eq(gpu_malloc(&env.sink, 1 << 20, &err), TUNE_OK, "%s", err.message);
    cr_assert_eq(cudaMemset(env.buf, 0x5a, env.bytes), cudaSuccess);
    env.t = timing_init(env.stream, gi.l2_bytes, env.read, &err);
    cr_assert_not_null(env.t, "%s", err.message);
}

static void tt_teardown(void)
{
    if (!env.t)
        return;
    timing_free(env.t);
    gpu_free(env.buf);
    gpu_free(env.sink);
    cudaStreamDestroy(env.stream);
    close(env.lock_fd);
    memset(&env, 0, sizeof env);
}

/* The fill kernel over `bytes` of ints, or the read probe over `bytes`. */
static void tt_use(tt_kind kind, size_t bytes)
{
    env.kind = kind;
    env.n = kind == TT_FILL ? bytes / 4 : bytes / 16;
}

static sweep_timing fixed(sweep_timing_mode mode, int warmup, int reps)
{
    return (sweep_timing){.warmup = warmup,
                          .reps = reps,
                          .flush_l2 = mode == SWEEP_TIMING_MODE_COLD,
                          .fresh_indices = 1,
                          .stop = SWEEP_TIMING_STOP_FIXED,
                          .mode = mode,
                          .rel_stderr = 0.005,
                          .min_reps = 10,
                          .max_reps = 10000,
                          .min_time_s = 0.005,
                          .max_time_s = 1.0};
}

static sweep_timing adaptive(sweep_timing_mode mode, double rel, int max_reps, double max_time)
{
    sweep_timing st = fixed(mode, 5, 100);
    st.stop = SWEEP_TIMING_STOP_ADAPTIVE;
    st.rel_stderr = rel;
    st.max_reps = max_reps;
    st.max_time_s = max_time;
    st.min_time_s = 0.001;
    return st;
}

/* Measures; returns the median (seconds) and fills info. */
static double measure(const sweep_timing *st, timing_info *info)
{
    tune_error err = {0};
    size_t cap = timing_max_samples(st);
    double *s = malloc(cap * sizeof *s);
    cr_assert_not_null(s);
    cr_assert_eq(timing_measure(env.t, &tt_family, &env, st, s, info, &err), TUNE_OK, "%s: %s",
                 err.where, err.message);
    cr_assert_leq(info->n, cap);
    for (size_t i = 0; i < info->n; i++)
        cr_assert(s[i] > 0 && isfinite(s[i]), "sample %zu = %g", i, s[i]);
    stats_summary sum;
    stats_summarize(s, info->n, &sum);
    free(s);
    cr_log_info("%s %s: n %zu, batch %d, median %.3f us, rel stderr %.4f, stop %s, wall %.3f s%s%s",
                st->stop == SWEEP_TIMING_STOP_FIXED ? "fixed" : "adaptive", info->mode, info->n,
                info->batch, sum.median * 1e6, info->rel_stderr, info->stop_reason, info->wall_s,
                info->note ? ", note: " : "", info->note ? info->note : "");
    return sum.median;
}

/* ---- CPU ---- */

Test(timing, max_samples)
{
    sweep_timing st = fixed(SWEEP_TIMING_MODE_COLD, 10, 37);
    cr_expect_eq(timing_max_samples(&st), 37);
    st.stop = SWEEP_TIMING_STOP_ADAPTIVE;
    st.max_reps = 1234;
    cr_expect_eq(timing_max_samples(&st), 1234);
}

/* ---- GPU ---- */

TestSuite(timing_gpu, .init = tt_setup, .fini = tt_teardown, .timeout = 120);

Test(timing_gpu, fixed_gives_exactly_reps_samples)
{
    tt_use(TT_FILL, (size_t)1 << 20);
    static const sweep_timing_mode modes[] = {SWEEP_TIMING_MODE_COLD, SWEEP_TIMING_MODE_HOT,
                                              SWEEP_TIMING_MODE_GRAPH};
    for (size_t m = 0; m < 3; m++) {
        timing_info info;
        sweep_timing st = fixed(modes[m], 3, 37);
        env.n_before = 0;
        measure(&st, &info);
        cr_expect_eq(info.n, 37, "mode %zu", m);
        cr_expect_str_eq(info.stop_reason, "fixed");
        if (modes[m] == SWEEP_TIMING_MODE_COLD) {
            cr_expect_str_eq(info.mode, "cold");
            cr_expect_eq(info.batch, 1);
            cr_expect_eq(env.n_before, 3 + 37, "before_rep once per rep, warmup included");
        } else if (modes[m] == SWEEP_TIMING_MODE_HOT) {
            cr_expect_str_eq(info.mode, "hot");
        }
    }
    /* Without info, into a buffer of exactly timing_max_samples (reps) samples. */
    sweep_timing st = fixed(SWEEP_TIMING_MODE_COLD, 1, 5);
    double s[5] = {0};
    tune_error err = {0};
    cr_assert_eq(timing_max_samples(&st), 5);
    cr_expect_eq(timing_measure(env.t, &tt_family, &env, &st, s, NULL, &err), TUNE_OK, "%s",
                 err.message);
    for (size_t i = 0; i < 5; i++)
        cr_expect(s[i] > 0 && isfinite(s[i]), "sample %zu = %g", i, s[i]);
}

Test(timing_gpu, adaptive_converges_on_a_steady_kernel)
{
    tt_use(TT_FILL, (size_t)16 << 20);
    timing_info info;
    sweep_timing st = adaptive(SWEEP_TIMING_MODE_COLD, 0.01, 10000, 5.0);
    measure(&st, &info);
    cr_expect_str_eq(info.stop_reason, "converged");
    cr_expect_geq(info.n, 10);
    cr_expect_lt(info.n, 10000);
    cr_expect_lt(info.rel_stderr, 0.01);
}

Test(timing_gpu, adaptive_stops_at_max_reps)
{
    tt_use(TT_FILL, (size_t)1 << 20);
    timing_info info;
    sweep_timing st = adaptive(SWEEP_TIMING_MODE_HOT, 1e-12, 55, 30.0); /* cannot converge */
    measure(&st, &info);
    cr_expect_str_eq(info.stop_reason, "max_reps");
    cr_expect_eq(info.n, 55);
}

Test(timing_gpu, adaptive_stops_at_the_time_out)
{
    tt_use(TT_FILL, (size_t)1 << 20);
    timing_info info;
    sweep_timing st = adaptive(SWEEP_TIMING_MODE_COLD, 1e-12, 100000, 0.05);
    measure(&st, &info);
    cr_expect_str_eq(info.stop_reason, "timeout");
    cr_expect_lt(info.n, 100000);
    cr_expect_geq(info.n, 10);
    cr_expect_geq(info.wall_s, 0.05);
    cr_expect_lt(info.wall_s, 1.0, "the time-out is checked every few reps");
}

Test(timing_gpu, graph_per_launch_time_is_close_to_hot)
{
    tt_use(TT_FILL, (size_t)12 << 20); /* a few microseconds */
    timing_info hot, graph;
    sweep_timing st = fixed(SWEEP_TIMING_MODE_HOT, 10, 200);
    double t_hot = measure(&st, &hot);
    st.mode = SWEEP_TIMING_MODE_GRAPH;
    double t_graph = measure(&st, &graph);
    cr_expect_str_eq(graph.mode, "graph", "%s", graph.note ? graph.note : "");
    cr_expect_null(graph.note);
    cr_expect_geq(graph.batch, 2, "a few-microsecond kernel needs many launches per replay");
    cr_expect_leq(graph.batch, 1000);
    cr_expect_leq(t_graph * graph.batch, 5e-3, "one replay stays near the 200 us target");
    cr_expect(t_graph < 2 * t_hot && t_hot < 2 * t_graph, "graph %.3f us vs hot %.3f us",
              t_graph * 1e6, t_hot * 1e6);
    st.batch = 7;
    measure(&st, &graph);
    cr_expect_eq(graph.batch, 7, "an explicit batch is kept");
}

Test(timing_gpu, graph_falls_back_to_hot_when_capture_is_refused)
{
    tt_use(TT_FILL, (size_t)1 << 20);
    env.refuse_capture = 1;
    timing_info info;
    sweep_timing st = fixed(SWEEP_TIMING_MODE_GRAPH, 2, 20);
    measure(&st, &info);
    cr_expect_str_eq(info.mode, "hot");
    cr_expect_eq(info.batch, 1);
    cr_expect_eq(info.n, 20);
    cr_assert_not_null(info.note);
    cr_expect(strstr(info.note, "refuses to be captured") != NULL, "%s", info.note);
    /* the stream is usable afterwards */
    env.refuse_capture = 0;
    measure(&st, &info);
    cr_expect_str_eq(info.mode, "graph");
}

Test(timing_gpu, hot_is_not_slower_than_cold)
{
    timing_info hot, cold;
    /* 64 MiB: about the L2 size, so hot gains little; it must not lose (1 % for noise). */
    tt_use(TT_READ, (size_t)64 << 20);
    sweep_timing st = fixed(SWEEP_TIMING_MODE_COLD, 10, 200);
    double t_cold = measure(&st, &cold);
    st.mode = SWEEP_TIMING_MODE_HOT;
    double t_hot = measure(&st, &hot);
    cr_expect_leq(t_hot, t_cold * 1.01, "64 MiB: hot %.3f us, cold %.3f us", t_hot * 1e6,
                  t_cold * 1e6);
    /* 16 MiB fits in the L2: hot reads it from there. */
    tt_use(TT_READ, (size_t)16 << 20);
    st.mode = SWEEP_TIMING_MODE_COLD;
    t_cold = measure(&st, &cold);
    st.mode = SWEEP_TIMING_MODE_HOT;
    t_hot = measure(&st, &hot);
    cr_expect_lt(t_hot, t_cold * 0.9, "16 MiB: hot %.3f us, cold %.3f us", t_hot * 1e6,
                 t_cold * 1e6);
}

static int tt_energy_read(void *ctx, double *joules)
{
    return monitor_energy(ctx, joules);
}

/* The energy of one hot read of `bytes` (joules per call), with what the window measured. */
static double tt_energy(monitor *m, double period, size_t bytes, timing_energy_info *ei)
{
    tt_use(TT_READ, bytes);
    sweep_timing st = fixed(SWEEP_TIMING_MODE_HOT, 3, 20);
    timing_info info;
    double call_s = measure(&st, &info);
    timing_energy_counter c = {tt_energy_read, m, period};
    tune_error err = {0};
    env.n_before = 0;
    cr_assert_eq(timing_energy(env.t, &tt_family, &env, &st, call_s, &c, ei, &err), TUNE_OK, "%s",
                 err.message);
    cr_expect_eq(env.n_before, 0, "the energy window draws no fresh inputs");
    return ei->joules;
}

/* Energy is measured: a read of 16x the bytes costs more energy per call, the window lasts the
 * rule's time, and the power it implies is a GPU's. Skips when NVML has no energy counter. */
Test(timing_gpu, energy_per_call_is_measured)
{
    tune_error err = {0};
    gpu_info gi;
    cr_assert_eq(gpu_query(0, &gi, &err), TUNE_OK, "%s", err.message);
    monitor *m = monitor_open(gi.pci_bus_id);
    double period = 0, j;
    if (monitor_energy(m, &j) != 0 || monitor_energy_period(m, 2.0, &period) != 0) {
        monitor_close(m);
        cr_skip_test("NVML has no energy counter on this device");
    }
    timing_energy_info small, big;
    double e_small = tt_energy(m, period, (size_t)4 << 20, &small);
    double e_big = tt_energy(m, period, (size_t)64 << 20, &big);
    fprintf(stderr,
            "energy: counter period %.1f ms; read 4 MiB: %.3g J/call (%zu calls, %.3f s, %.0f W); "
            "read 64 MiB: %.3g J/call (%zu calls, %.3f s, %.0f W)\n",
            period * 1e3, e_small, small.calls, small.window_s, small.power_w, e_big, big.calls,
            big.window_s, big.power_w);
    double want = fmax(TIMING_ENERGY_PERIODS * period, TIMING_ENERGY_MIN_S);
    for (int k = 0; k < 2; k++) {
        const timing_energy_info *ei = k ? &big : &small;
        cr_expect(ei->joules > 0 && isfinite(ei->joules), "%s", ei->note ? ei->note : "");
        cr_expect(ei->window_s >= 0.9 * want, "window %.3f s, rule %.3f s", ei->window_s, want);
        cr_expect(ei->power_w > 10 && ei->power_w < 2000, "%.0f W", ei->power_w);
    }
    cr_expect(e_big > 2 * e_small, "16x the bytes: %.3g J vs %.3g J", e_big, e_small);
    /* no counter: not measured, and said why */
    timing_energy_info none;
    sweep_timing st = fixed(SWEEP_TIMING_MODE_HOT, 0, 1);
    cr_expect_eq(timing_energy(env.t, &tt_family, &env, &st, 1e-5, NULL, &none, &err), TUNE_OK);
    cr_expect(isnan(none.joules));
    cr_expect_str_eq(none.note, "no NVML energy counter on this device");
    monitor_close(m);
}
