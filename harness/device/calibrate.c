#include "device/calibrate.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "core/clock.h"
#include "core/stats.h"
#include "device/compile.h"
#include "device/gpu.h"
#include "tune_git_rev.h"

enum { PROBE_MAX_BUFFERS = 3 };

/* One calibration probe, as nvbench's l2flush is one helper that every measurement reuses: the
 * device buffers it needs, how they are filled, and the launch that is timed. probe_run does the
 * rest. A probe's own parameters are in ctx; its launch receives the probe. */
typedef struct probe probe;
struct probe {
    size_t bytes[PROBE_MAX_BUFFERS]; /* each buffer's size; 0: none */
    int fill[PROBE_MAX_BUFFERS];     /* the byte each buffer is set to; 0: left as allocated */
    /* Optional: what fills the buffers further (a fill kernel), after the bytes above. */
    tune_status (*setup)(const probe *p, tune_error *err);
    tune_status (*launch)(void *p, tune_error *err); /* one rep (p: this probe) */
    void *kernel;                                    /* the launch's kernel; NULL: none */
    unsigned grid;                                   /* its blocks */
    void *ctx;                                       /* the probe's own parameters */
    void *stream;
    int warmup;
    void *buf[PROBE_MAX_BUFFERS]; /* set by probe_run while it runs */
    int variant;                  /* set by probe_run: the variant being timed */
};

/* Runs a probe, every ceiling's measurement: its buffers allocated in order and filled (the
 * bytes, then setup); then, for each of `variants` variants (p->variant = 0, 1, ...: the launch
 * reads the variant's parameters), reps runs of p->launch timed with the L2 flushed after
 * p->warmup runs, their median seconds into medians[variant]; the buffers freed on every path. */
static tune_status probe_run(timing *tm, probe *p, int variants, int reps, double *medians,
                             tune_error *err)
{
    tune_status st = TUNE_OK;
    double *samples = NULL;
    memset(p->buf, 0, sizeof p->buf);
    for (int v = 0; v < variants; v++)
        medians[v] = 0.0; /* set on every path: callers read them only on TUNE_OK */
    for (int i = 0; i < PROBE_MAX_BUFFERS; i++)
        if (p->bytes[i] && (st = gpu_malloc(&p->buf[i], p->bytes[i], err)) != TUNE_OK)
            goto done;
    for (int i = 0; i < PROBE_MAX_BUFFERS; i++)
        if (p->fill[i])
            GPU_CHECK(cudaMemsetAsync(p->buf[i], p->fill[i], p->bytes[i], (cudaStream_t)p->stream),
                      err, st, done);
    if (p->setup && (st = p->setup(p, err)) != TUNE_OK)
        goto done;
    if (!(samples = malloc((size_t)reps * sizeof *samples))) {
        st = tune_error_set(err, TUNE_ERR_NOMEM, "roofline", "out of memory");
        goto done;
    }
    for (p->variant = 0; p->variant < variants; p->variant++) {
        if ((st = timing_run_fn(tm, p->launch, p, p->warmup, reps, 1, samples, err)) != TUNE_OK)
            goto done;
        stats_summary sum;
        stats_summarize(samples, (size_t)reps, &sum);
        medians[p->variant] = sum.median;
    }
done:
    free(samples);
    for (int i = 0; i < PROBE_MAX_BUFFERS; i++) {
        gpu_free(p->buf[i]);
        p->buf[i] = NULL;
    }
    return st;
}

/* The probes that read a buffer (the read, chase, sector and stride probes): a source of `bytes`
 * of 0x5a and a sink of sink_bytes. */
static void probe_reads(probe *p, size_t bytes, size_t sink_bytes)
{
    p->bytes[0] = bytes;
    p->fill[0] = 0x5a;
    p->bytes[1] = sink_bytes;
}

static unsigned probe_grid(int sm_count, unsigned blocks_per_sm)
{
    return (unsigned)(sm_count > 0 ? sm_count : 132) * blocks_per_sm;
}

static tune_status read_launch(void *ctx, tune_error *err)
{
    probe *p = ctx;
    unsigned long long *words = p->ctx;
    void *args[] = {&p->buf[0], words, &p->buf[1]};
    return gpu_launch(p->kernel, p->grid, 512, 0, p->stream, args, err);
}

tune_status calibrate_read_bw(timing *tm, void *stream, void *read_probe, int sm_count,
                              size_t bytes, int reps, double *bw, tune_error *err)
{
    unsigned long long words = bytes / 16;
    probe p = {.launch = read_launch,
               .kernel = read_probe,
               .grid = probe_grid(sm_count, 16),
               .ctx = &words,
               .stream = stream,
               .warmup = 3};
    double t;
    if (!read_probe || reps <= 0)
        return tune_error_set(err, TUNE_ERR_INVALID, "calibrate_read_bw",
                              "needs tune_read_probe and reps > 0");
    probe_reads(&p, bytes, p.grid * sizeof(unsigned));
    tune_status st = probe_run(tm, &p, 1, reps, &t, err);
    if (st == TUNE_OK)
        *bw = (double)(words * 16) / t;
    return st;
}

/* buf[1] = buf[0], device to device. */
static tune_status copy_launch(void *ctx, tune_error *err)
{
    probe *p = ctx;
    tune_status st = TUNE_OK;
    GPU_CHECK(cudaMemcpyAsync(p->buf[1], p->buf[0], p->bytes[0], cudaMemcpyDeviceToDevice,
                              (cudaStream_t)p->stream),
              err, st, done);
done:
    return st;
}

static tune_status measure_copy_bw(timing *tm, void *stream, size_t bytes, int reps, double *bw,
                                   tune_error *err)
{
    probe p = {.bytes = {bytes, bytes},
               .fill = {0x5a},
               .launch = copy_launch,
               .stream = stream,
               .warmup = 2};
    double t;
    tune_status st = probe_run(tm, &p, 1, reps, &t, err);
    if (st == TUNE_OK)
        *bw = 2.0 * (double)bytes / t;
    return st;
}

static tune_status tiny_launch(void *ctx, tune_error *err)
{
    probe *p = ctx;
    unsigned long long n = 1, seed = 1;
    int range = 1;
    void *args[] = {&p->buf[0], &n, &seed, &range};
    return gpu_launch(p->kernel, 1, 32, 0, p->stream, args, err);
}

static tune_status measure_launch(timing *tm, void *stream, void *fill_indices, int reps,
                                  double *seconds, tune_error *err)
{
    probe p = {.bytes = {256},
               .launch = tiny_launch,
               .kernel = fill_indices,
               .stream = stream,
               .warmup = 10};
    return probe_run(tm, &p, 1, reps, seconds, err);
}

typedef struct {
    cublasHandle_t h;
    void *fill; /* tune_fill_uniform of the type */
    int n;
    cudaDataType_t type;
    cublasComputeType_t compute;
} gemm_ctx;

/* C = A B, n x n x n (buffers A, B, C). */
static tune_status gemm_launch(void *ctx, tune_error *err)
{
    probe *p = ctx;
    gemm_ctx *g = p->ctx;
    const float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t cs = cublasGemmEx(g->h, CUBLAS_OP_N, CUBLAS_OP_N, g->n, g->n, g->n, &alpha,
                                     p->buf[0], g->type, g->n, p->buf[1], g->type, g->n, &beta,
                                     p->buf[2], g->type, g->n, g->compute, CUBLAS_GEMM_DEFAULT);
    if (cs != CUBLAS_STATUS_SUCCESS)
        return tune_error_set(err, TUNE_ERR_CUBLAS, "cublasGemmEx", "%s",
                              cublasGetStatusString(cs));
    return TUNE_OK;
}

static tune_status fill_uniform(void *kernel, void *p, size_t n, unsigned long long seed,
                                void *stream, tune_error *err)
{
    unsigned long long nn = n;
    void *args[] = {&p, &nn, &seed};
    return gpu_launch(kernel, 1024, 256, 0, stream, args, err);
}

/* A, B and C uniform random, each with its seed. */
static tune_status gemm_setup(const probe *p, tune_error *err)
{
    const gemm_ctx *g = p->ctx;
    size_t count = (size_t)g->n * (size_t)g->n;
    tune_status st;
    if ((st = fill_uniform(g->fill, p->buf[0], count, 0x5eed, p->stream, err)) != TUNE_OK ||
        (st = fill_uniform(g->fill, p->buf[1], count, 0x5eee, p->stream, err)) != TUNE_OK)
        return st;
    return fill_uniform(g->fill, p->buf[2], count, 0x5eef, p->stream, err);
}

static tune_status measure_gemm(timing *tm, void *stream, cublasHandle_t h, void *fill,
                                roofline_precision prec, int n, int reps, double *rate,
                                tune_error *err)
{
    gemm_ctx g = {h, fill, n, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    size_t elem = 4;
    if (prec == ROOFLINE_TF32)
        g.compute = CUBLAS_COMPUTE_32F_FAST_TF32;
    else if (prec == ROOFLINE_FP16)
        g.type = CUDA_R_16F, elem = 2;
    else if (prec == ROOFLINE_BF16)
        g.type = CUDA_R_16BF, elem = 2;
    size_t bytes = (size_t)n * (size_t)n * elem;
    probe p = {.bytes = {bytes, bytes, bytes},
               .setup = gemm_setup,
               .launch = gemm_launch,
               .ctx = &g,
               .stream = stream,
               .warmup = 3};
    double t;
    tune_status st = probe_run(tm, &p, 1, reps, &t, err);
    if (st == TUNE_OK)
        *rate = 2.0 * (double)n * (double)n * (double)n / t;
    return st;
}

typedef struct {
    unsigned long long mask;
    int steps[2]; /* dependent loads of each variant */
} chase_ctx;

static tune_status chase_launch(void *ctx, tune_error *err)
{
    probe *p = ctx;
    chase_ctx *c = p->ctx;
    void *args[] = {&p->buf[0], &c->mask, &c->steps[p->variant], &p->buf[1]};
    return gpu_launch(p->kernel, 1, 1, 0, p->stream, args, err);
}

/* One dependent DRAM round trip: tune_chase_probe's median time with 257 dependent loads less its
 * median with 1, over 256, on the largest power of two of words in `bytes`, L2 flushed before
 * each rep. */
static tune_status measure_latency(timing *tm, void *stream, void *chase, size_t bytes, int reps,
                                   double *seconds, tune_error *err)
{
    unsigned long long words = 1;
    while (words * 2 <= bytes / 4)
        words *= 2;
    chase_ctx c = {words - 1, {1, 257}};
    probe p = {.launch = chase_launch, .kernel = chase, .ctx = &c, .stream = stream, .warmup = 3};
    double t[2];
    probe_reads(&p, (size_t)words * 4, 256);
    tune_status st = probe_run(tm, &p, 2, reps, t, err);
    if (st == TUNE_OK)
        *seconds = (t[1] - t[0]) / 256.0;
    return st;
}

typedef struct {
    void *fill_indices;
    int g, k, kp, n;
} gather_ctx;

/* gm_gather of B (buffer 0) at the indices (buffer 2) into buffer 1. */
static tune_status gather_launch(void *ctx, tune_error *err)
{
    probe *p = ctx;
    gather_ctx *c = p->ctx;
    void *none = NULL; /* gm_gather's A and A[I]: OP 1 gathers B alone */
    void *args[] = {&none, &p->buf[0], &p->buf[2], &none, &p->buf[1], &c->g, &c->k, &c->kp, &c->n};
    return gpu_launch(p->kernel, 65536, 256, 0, p->stream, args, err);
}

/* g x k random row indices in [0, kp). */
static tune_status gather_setup(const probe *p, tune_error *err)
{
    const gather_ctx *c = p->ctx;
    void *idx = p->buf[2];
    unsigned long long nn = (unsigned long long)c->g * (unsigned long long)c->k, seed = 0x6a7e5ull;
    int range = c->kp;
    void *fargs[] = {&idx, &nn, &seed, &range};
    return gpu_launch(c->fill_indices, 4096, 256, 0, p->stream, fargs, err);
}

/* Seconds per element of an element-wise gather: the gather baseline's own kernel
 * (gather_matmul.cu, gm_gather<half_t, 1, TRANS>: B[I] materialised; TRANS = 1 reads B
 * transposed, a warp's 32 elements in 32 rows) over CALIBRATION_GATHER_G, _K and _N (2^28
 * elements, random row indices in [0, kp)) from kp rows per g: CALIBRATION_GATHER_KP (a 32 MiB
 * source that the L2 holds) or CALIBRATION_GATHER_KP_DRAM (1 GiB, which it cannot), with the
 * launch geometry of the gather baseline (65536 blocks of 256 threads); median time / elements.
 * The source holds g x kp x n elements in either layout. */
static tune_status measure_gather(timing *tm, void *stream, void *kernel, void *fill_indices,
                                  int kp, int reps, double *seconds, tune_error *err)
{
    gather_ctx c = {fill_indices, CALIBRATION_GATHER_G, CALIBRATION_GATHER_K, kp,
                    CALIBRATION_GATHER_N};
    size_t n_src = (size_t)c.g * (size_t)c.kp * (size_t)c.n;
    size_t n_dst = (size_t)c.g * (size_t)c.k * (size_t)c.n, n_idx = (size_t)c.g * (size_t)c.k;
    probe p = {.bytes = {n_src * 2, n_dst * 2, n_idx * sizeof(int)},
               .fill = {0x3c},
               .setup = gather_setup,
               .launch = gather_launch,
               .kernel = kernel,
               .ctx = &c,
               .stream = stream,
               .warmup = 3};
    double t;
    tune_status st = probe_run(tm, &p, 1, reps, &t, err);
    if (st == TUNE_OK)
        *seconds = t / (double)n_dst;
    return st;
}

typedef struct {
    unsigned sectors;
    int iters;
    unsigned long long seed;
} sector_ctx;

static tune_status sector_launch(void *ctx, tune_error *err)
{
    probe *p = ctx;
    sector_ctx *c = p->ctx;
    void *args[] = {&p->buf[0], &c->sectors, &c->iters, &c->seed, &p->buf[1]};
    return gpu_launch(p->kernel, p->grid, CALIBRATION_SECTOR_THREADS, 0, p->stream, args, err);
}

/* Random-sector read rate: tune_sector_probe on SMs x CALIBRATION_SECTOR_BLOCKS_PER_SM blocks
 * (one wave), each thread CALIBRATION_SECTOR_UNROLL loads per iteration over the sectors of a
 * `bytes` buffer (several times the L2: nearly every load misses), about
 * CALIBRATION_SECTOR_LOADS loads in all; 32 bytes x loads / median time. */
static tune_status measure_sectors(timing *tm, void *stream, void *kernel, int sm_count,
                                   size_t bytes, int reps, double *bw, tune_error *err)
{
    unsigned grid = probe_grid(sm_count, CALIBRATION_SECTOR_BLOCKS_PER_SM);
    unsigned long long per_iter =
        (unsigned long long)grid * CALIBRATION_SECTOR_THREADS * CALIBRATION_SECTOR_UNROLL;
    size_t sectors = bytes / 32 < 0xffffffffu ? bytes / 32 : 0xffffffffu;
    sector_ctx c = {
        (unsigned)sectors,
        (int)(CALIBRATION_SECTOR_LOADS / per_iter > 0 ? CALIBRATION_SECTOR_LOADS / per_iter : 1),
        0x5ec7011ull};
    probe p = {.launch = sector_launch,
               .kernel = kernel,
               .grid = grid,
               .ctx = &c,
               .stream = stream,
               .warmup = 3};
    double t;
    if (sectors == 0)
        return tune_error_set(err, TUNE_ERR_INVALID, "measure_sectors", "needs 32 bytes or more");
    probe_reads(&p, sectors * 32, grid * sizeof(unsigned));
    tune_status st = probe_run(tm, &p, 1, reps, &t, err);
    if (st == TUNE_OK)
        *bw = 32.0 * (double)per_iter * (double)c.iters / t;
    return st;
}

typedef struct {
    unsigned long long loads[4];
    int stride_words[4]; /* of each variant: strides 32, 64, 128 and 256 bytes */
} stride_ctx;

static tune_status stride_launch(void *ctx, tune_error *err)
{
    probe *p = ctx;
    stride_ctx *c = p->ctx;
    void *args[] = {&p->buf[0], &c->loads[p->variant], &c->stride_words[p->variant], &p->buf[1]};
    return gpu_launch(p->kernel, p->grid, CALIBRATION_STRIDE_THREADS, 0, p->stream, args, err);
}

/* The L2's DRAM fetch granularity: tune_stride_probe reads one sector in every 32, 64, 128 and 256
 * bytes of a `bytes` buffer (several times the L2). While the stride is at most the granularity,
 * DRAM moves the whole span and the time stays that of stride 32; past it, the time falls with
 * the stride. The granularity is the largest stride whose time is at least
 * CALIBRATION_FETCH_SAME of the previous one's (32, 64 or 128 bytes); times[] gets the 4 median
 * times (seconds). */
static tune_status measure_fetch(timing *tm, void *stream, void *kernel, int sm_count, size_t bytes,
                                 int reps, double *fetch, double times[4], tune_error *err)
{
    stride_ctx c;
    for (int i = 0; i < 4; i++) {
        int stride = 32 << i;
        c.stride_words[i] = stride / 4;
        c.loads[i] = bytes / (size_t)stride;
    }
    probe p = {.launch = stride_launch,
               .kernel = kernel,
               .grid = probe_grid(sm_count, CALIBRATION_STRIDE_BLOCKS_PER_SM),
               .ctx = &c,
               .stream = stream,
               .warmup = 3};
    if (bytes < 256)
        return tune_error_set(err, TUNE_ERR_INVALID, "measure_fetch", "needs 256 bytes or more");
    probe_reads(&p, bytes, p.grid * sizeof(unsigned));
    tune_status st = probe_run(tm, &p, 4, reps, times, err);
    if (st != TUNE_OK)
        return st;
    *fetch = 32;
    for (int i = 1; i < 3 && times[i] >= CALIBRATION_FETCH_SAME * times[i - 1]; i++)
        *fetch = 32 << i;
    return TUNE_OK;
}

enum {
    K_READ,
    K_INDICES,
    K_FILL_F32,
    K_FILL_F16,
    K_FILL_BF16,
    K_CHASE,
    K_GATHER,
    K_GATHER_T,
    K_SECTOR,
    K_STRIDE,
    K_COUNT
};

static void logf_(FILE *log, const char *fmt, double value, const char *unit)
{
    if (log) {
        fprintf(log, fmt, value, unit);
        fflush(log);
    }
}

/* The calibrator's kernels, compiled for the device and loaded. */
typedef struct {
    compile_job jobs[K_COUNT];
    gpu_library *libs[K_COUNT];
    void *kern[K_COUNT];
} calibrate_kernels;

static tune_status load_kernels(const calibrate_options *o, const gpu_info *gi,
                                calibrate_kernels *k, tune_error *err)
{
    static const char *const names[K_COUNT] = {
        "tune_read_probe", "tune_fill_indices", "tune_fill_uniform<float>",
        "tune_fill_uniform<half_t>", "tune_fill_uniform<bf16_t>", "tune_chase_probe",
        "gm_gather<half_t, 1, 0>", "gm_gather<half_t, 1, 1>", "tune_sector_probe",
        "tune_stride_probe"};
    tune_status st;
    for (int i = 0; i < K_COUNT; i++) {
        snprintf(k->jobs[i].source, sizeof k->jobs[i].source, "%s",
                 i == K_GATHER || i == K_GATHER_T ? "gather_matmul.cu" : "common.cu");
        snprintf(k->jobs[i].name, sizeof k->jobs[i].name, "%s", names[i]);
    }
    char kdir[PATH_MAX];
    const char *kernels_dir =
        o->kernels_dir ? o->kernels_dir : compile_find_kernels_dir(kdir, sizeof kdir);
    if (!kernels_dir)
        return tune_error_set(err, TUNE_ERR_IO, "kernels_src",
                              "cannot find the kernel sources (set TUNE_KERNELS_DIR)");
    compile_options copt = {.kernels_dir = kernels_dir, .cache_dir = o->cache_dir,
                            .arch = gi->cc_major * 10 + gi->cc_minor};
    if ((st = compile_run(k->jobs, K_COUNT, &copt, err)) != TUNE_OK)
        return st;
    for (int i = 0; i < K_COUNT; i++) {
        if (k->jobs[i].status != TUNE_OK)
            return tune_error_set(err, k->jobs[i].status, names[i], "does not compile: %s",
                                  k->jobs[i].log ? k->jobs[i].log : "");
        if (!(k->libs[i] = gpu_library_load(k->jobs[i].cubin, err)) ||
            !(k->kern[i] = gpu_library_kernel(k->libs[i], k->jobs[i].lowered, err)))
            return err ? err->code : TUNE_ERR_CUDA;
    }
    return TUNE_OK;
}

/* Every measurement: read and copy bandwidth, the GEMM rates, the launch overhead, the DRAM
 * latency, the grid floor, the gather element (row-major and transposed B, and transposed B that
 * the L2 cannot hold), the random-sector rate, the DRAM fetch granularity. */
static tune_status measure_all(const calibrate_options *o, const gpu_info *gi,
                               const calibrate_kernels *k, timing *tm, cudaStream_t stream,
                               cublasHandle_t cublas, roofline_calibration *cal, tune_error *err)
{
    tune_status st;
    int reps = o->reps > 0 ? o->reps : 20;
    cal->reps = reps;
    cal->read_bytes = o->read_bytes;
    cal->copy_bytes = o->copy_bytes;
    cal->gemm_n = o->gemm_n;
    if ((st = calibrate_read_bw(tm, stream, k->kern[K_READ], gi->sm_count, o->read_bytes, reps,
                                &cal->read_bw, err)) != TUNE_OK)
        return st;
    logf_(o->log, "read bandwidth      %8.1f %s\n", cal->read_bw / 1e9, "GB/s");
    int few = o->reps > 0 ? o->reps : 10;
    if ((st = measure_copy_bw(tm, stream, o->copy_bytes, few, &cal->copy_bw, err)) != TUNE_OK)
        return st;
    logf_(o->log, "copy bandwidth      %8.1f %s (read + written)\n", cal->copy_bw / 1e9, "GB/s");
    const struct {
        roofline_precision p;
        int fill;
    } gemms[] = {{ROOFLINE_FP16, K_FILL_F16},
                 {ROOFLINE_BF16, K_FILL_BF16},
                 {ROOFLINE_TF32, K_FILL_F32},
                 {ROOFLINE_FP32, K_FILL_F32}};
    for (size_t i = 0; i < sizeof gemms / sizeof gemms[0]; i++) {
        roofline_precision p = gemms[i].p;
        if ((st = measure_gemm(tm, stream, cublas, k->kern[gemms[i].fill], p, o->gemm_n, few,
                               &cal->gemm_rate[p], err)) != TUNE_OK)
            return st;
        if (o->log) {
            fprintf(o->log, "GEMM %-4s           %8.1f TFLOP/s\n", roofline_precision_str(p),
                    cal->gemm_rate[p] / 1e12);
            fflush(o->log);
        }
    }
    if ((st = measure_launch(tm, stream, k->kern[K_INDICES], o->reps > 0 ? o->reps : 100,
                             &cal->launch_s, err)) != TUNE_OK)
        return st;
    logf_(o->log, "launch overhead     %8.2f %s\n", cal->launch_s * 1e6, "us");
    if ((st = measure_latency(tm, stream, k->kern[K_CHASE], o->read_bytes,
                              o->reps > 0 ? o->reps : 100, &cal->latency_s, err)) != TUNE_OK)
        return st;
    logf_(o->log, "DRAM latency        %8.3f %s\n", cal->latency_s * 1e6, "us");
    /* the time model's floor: a grid-filling kernel that moves little, less its transfer */
    double small_bw;
    if ((st = calibrate_read_bw(tm, stream, k->kern[K_READ], gi->sm_count, CALIBRATION_FLOOR_BYTES,
                                o->reps > 0 ? o->reps : 100, &small_bw, err)) != TUNE_OK)
        return st;
    cal->floor_s = CALIBRATION_FLOOR_BYTES / small_bw - CALIBRATION_FLOOR_BYTES / cal->read_bw;
    logf_(o->log, "grid floor          %8.2f %s\n", cal->floor_s * 1e6, "us");
    if ((st = measure_gather(tm, stream, k->kern[K_GATHER], k->kern[K_INDICES],
                             CALIBRATION_GATHER_KP, reps, &cal->gather_elem_s, err)) != TUNE_OK)
        return st;
    logf_(o->log, "gather element      %8.3f %s\n", cal->gather_elem_s * 1e12, "ps");
    if ((st = measure_gather(tm, stream, k->kern[K_GATHER_T], k->kern[K_INDICES],
                             CALIBRATION_GATHER_KP, reps, &cal->gather_elem_t_s, err)) != TUNE_OK)
        return st;
    logf_(o->log, "gather element (Bt) %8.3f %s\n", cal->gather_elem_t_s * 1e12, "ps");
    if ((st = measure_gather(tm, stream, k->kern[K_GATHER_T], k->kern[K_INDICES],
                             CALIBRATION_GATHER_KP_DRAM, reps, &cal->gather_elem_t_dram_s, err)) !=
        TUNE_OK)
        return st;
    logf_(o->log, "gather Bt from DRAM %8.3f %s (a 1 GiB source the L2 cannot hold)\n",
          cal->gather_elem_t_dram_s * 1e12, "ps");
    if ((st = measure_sectors(tm, stream, k->kern[K_SECTOR], gi->sm_count, o->read_bytes, reps,
                              &cal->sector_bw, err)) != TUNE_OK)
        return st;
    logf_(o->log, "random sectors      %8.1f %s (32 B a load)\n", cal->sector_bw / 1e9, "GB/s");
    if ((st = measure_fetch(tm, stream, k->kern[K_STRIDE], gi->sm_count, o->read_bytes, reps,
                            &cal->fetch_bytes, cal->fetch_times, err)) != TUNE_OK)
        return st;
    size_t hint = 0;
    if (cudaDeviceGetLimit(&hint, cudaLimitMaxL2FetchGranularity) == cudaSuccess)
        cal->fetch_hint = (int)hint;
    else
        cudaGetLastError(); /* not supported: no hint recorded */
    if (o->log) {
        fprintf(o->log,
                "DRAM fetch          %8.0f B (one sector in 32 / 64 / 128 / 256 B: %.1f / %.1f / "
                "%.1f / %.1f us; the driver's hint %d B)\n",
                cal->fetch_bytes, cal->fetch_times[0] * 1e6, cal->fetch_times[1] * 1e6,
                cal->fetch_times[2] * 1e6, cal->fetch_times[3] * 1e6, cal->fetch_hint);
        fflush(o->log);
    }
    return TUNE_OK;
}

/* The calibration's provenance: device, versions, tool, host, date. */
static void fill_provenance(const gpu_info *gi, roofline_calibration *cal)
{
    snprintf(cal->device, sizeof cal->device, "%s", gi->name);
    snprintf(cal->pci_bus_id, sizeof cal->pci_bus_id, "%s", gi->pci_bus_id);
    snprintf(cal->compute_capability, sizeof cal->compute_capability, "%d.%d", gi->cc_major,
             gi->cc_minor);
    cal->sm_count = gi->sm_count;
    cal->l2_bytes = gi->l2_bytes;
    cal->driver_version = gi->driver_version;
    cal->runtime_version = gi->runtime_version;
    cal->nvrtc_version = compile_nvrtc_version();
    gpu_cublas_version(cal->cublas_version, sizeof cal->cublas_version);
    snprintf(cal->tool_version, sizeof cal->tool_version, "%s", TUNE_VERSION);
    snprintf(cal->tool_rev, sizeof cal->tool_rev, "%s", TUNE_GIT_REV);
    gethostname(cal->host, sizeof cal->host - 1);
    clock_utc(cal->date, sizeof cal->date, CLOCK_UTC_ISO);
}

tune_status calibrate_device(const calibrate_options *opt, roofline_calibration *cal,
                             tune_error *err)
{
    calibrate_options o = *opt;
    if (!o.read_bytes)
        o.read_bytes = (size_t)4 << 30;
    if (!o.copy_bytes)
        o.copy_bytes = (size_t)4 << 30;
    if (!o.gemm_n)
        o.gemm_n = 8192;
    roofline_calibration_init(cal);
    gpu_info gi;
    tune_status st;
    if ((st = gpu_query(o.device, &gi, err)) != TUNE_OK ||
        (st = gpu_select(o.device, err)) != TUNE_OK)
        return st;
    calibrate_kernels k;
    memset(&k, 0, sizeof k);
    cudaStream_t stream = NULL;
    cublasHandle_t cublas = NULL;
    timing *tm = NULL;
    if ((st = load_kernels(&o, &gi, &k, err)) != TUNE_OK)
        goto done;
    GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), err, st, done);
    if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(cublas, stream) != CUBLAS_STATUS_SUCCESS) {
        st = tune_error_set(err, TUNE_ERR_CUBLAS, "cublasCreate", "cannot create a handle");
        goto done;
    }
    if (!(tm = timing_init(stream, gi.l2_bytes, k.kern[K_READ], err))) {
        st = err ? err->code : TUNE_ERR_CUDA;
        goto done;
    }
    if ((st = measure_all(&o, &gi, &k, tm, stream, cublas, cal, err)) == TUNE_OK)
        fill_provenance(&gi, cal);
done:
    timing_free(tm);
    if (cublas)
        cublasDestroy(cublas);
    if (stream)
        cudaStreamDestroy(stream);
    for (int i = 0; i < K_COUNT; i++) {
        gpu_library_free(k.libs[i]);
        compile_job_clear(&k.jobs[i]);
    }
    return st;
}
