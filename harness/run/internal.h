/* internal.h - what the files of the run layer share (not for other layers): the context of one
 * sweep run and the functions of its parts.
 *
 *   plan.c         which instantiations each configuration needs (planned on first use), the
 *                  kernel table, a searched run's key
 *   kernels.c      compiling the kernels (in a child process for GPU runs), loading them on
 *                  first use
 *   rows.c         a configuration's row: filled, validated and timed, or why it was not
 *   retime.c       the interleaved re-timing of a shape's fastest configurations
 *   worker_loop.c  the worker: a child process that owns the GPU and writes rows
 *   coordinator.c  runs workers until every configuration has a row; compile-only rows
 *   search.c       a searched run: candidates, rounds (compile, measure, observe), the re-timing
 *                  of each shape's fastest candidates at the end, warm starts
 *   search_session.c  a searched run's measuring session: one worker for every round, told each
 *                  shape as its kernels are compiled
 *   probe.c        the device queried and counted in child processes
 *   session.c      one run end to end: folder, lock, resume, meta.json, report (run_sweep)
 *   multi.c        one coordinator per GPU (--gpus), merged at the end
 *
 * What only a searched run has (its per-configuration, per-kernel and per-shape state, its key,
 * its deadline) and the functions of search.c and search_session.c are in run/search_ctx.h.
 */
#ifndef TUNE_RUN_INTERNAL_H
#define TUNE_RUN_INTERNAL_H

#include <limits.h>
#include <stdint.h>

#include "analysis/roofline.h"
#include "device/compile.h"
#include "device/gpu.h"
#include "device/monitor.h"
#include "device/timing.h"
#include "device/worker.h"
#include "model/shard.h"
#include "model/space.h"
#include "run/run.h"
#include "store/meta.h"
#include "store/results.h"

/* One distinct kernel instantiation: compiled once, loaded on first use. */
typedef struct {
    compile_job job;
    gpu_library *lib;
    void *kernel;
} run_kernel;

/* What the CPU side knows of a configuration before the GPU sees it (plan.c). */
typedef struct {
    size_t ci;            /* the configuration */
    size_t kernels_after; /* the kernel table's size once it was planned */
    int n_refs;
    size_t refs[FAMILY_MAX_KERNELS]; /* indices into kernels */
    int row_ref;                     /* the refs index of the kernel its row names, or -1 */
    char *skip;                      /* family says it cannot run: reason */
} run_plan;

/* An open-addressed hash index of a table: slot = item index + 1, 0 empty; cap a power of two. */
typedef struct {
    size_t *slots, cap;
} run_index;

/* A searched run's part of the context (run/search_ctx.h); NULL in an exhaustive run. */
typedef struct run_search_ctx run_search_ctx;

/* The context of one sweep run: the coordinator's, and each worker's copy (a forked child). */
typedef struct {
    /* what is run: the sweep and the options, its space and this shard of it */
    const sweep *sw;
    const run_options *opt;
    space *sp;
    int sp_borrowed;  /* sp is run_options.space: not freed here */
    shard_plan *plan; /* --shard: the sweep's shards; NULL: the whole sweep */
    int arch;         /* what the kernels were compiled for, x10 (90: sm_90) */
    tune_error *err;  /* the run's error record (a child process points it at its own) */
    /* the configurations planned and their kernels (plan.c, kernels.c) */
    run_plan *plans; /* the configurations planned, in the order they were (plan.c) */
    size_t n_plans, cap_plans;
    run_index plan_index; /* by configuration */
    run_kernel *kernels;
    size_t n_kernels, cap_kernels;
    run_index kernel_index; /* by source, name and options */
    /* the device and what the rows are measured against */
    gpu_info gi;            /* the device (queried in a child process) */
    monitor *mon;           /* NVML, NULL when absent */
    double energy_period_s; /* the energy counter's update period; 0: energy not measured */
    double read_bw;         /* B/s: given, or measured by the first worker */
    roofline_ceilings ceil; /* for every row's roofline time */
    int have_ceil;
    char ceil_source[512];
    /* the output */
    char out_dir[PATH_MAX]; /* the run's folder */
    int lock_fd;            /* its lock, held until the tables are written; -1: none */
    /* progress */
    double t0;            /* start of the run (monotonic seconds) */
    unsigned char *done;  /* per configuration: a row exists (this run or a resumed one) */
    size_t worker_starts; /* measuring workers started (meta.json's search timeline) */
    /* a searched run's part (run/search_ctx.h); NULL: an exhaustive run */
    run_search_ctx *search;
} run_ctx;

/* plan.c */
/* The index of the kernel ref names, added when new; SIZE_MAX: out of memory. */
size_t run_kernel_index(run_ctx *rc, const family_kernel_ref *ref);
/* The index of the kernel ref names, SIZE_MAX when the table has none. */
size_t run_kernel_find(const run_ctx *rc, const family_kernel_ref *ref);
/* The family's kernels for configuration ci into refs (FAMILY_MAX_KERNELS, zeroed first) and
 * their number, or -1 with why: the family refuses it, or a kernel needs another architecture. */
int run_config_refs(const run_ctx *rc, size_t ci, family_kernel_ref *refs, char *why,
                    size_t why_size);
/* The plan of configuration ci, made on first use (its kernels added to the table); NULL: out of
 * memory. Borrowed until the next plan is made. */
const run_plan *run_plan_config(run_ctx *rc, size_t ci);
/* The plan of ci if it is planned, else NULL. */
const run_plan *run_plan_find(const run_ctx *rc, size_t ci);
/* Plans the configurations of mask (NULL: every one), in their order. */
tune_status run_plan_configs(run_ctx *rc, const unsigned char *mask);
/* A searched run's key (rc->search's): one configuration's kernels refs[0..n) (n < 0: none)
 * added. 0, or -1 out of memory. */
int run_key_add(run_ctx *rc, const family_kernel_ref *refs, int n);
/* The distinct kernels of the space: counted by run_key_add (by 64-bit fingerprint) in a
 * searched run, the table's size otherwise. */
size_t run_key_kernels(const run_ctx *rc);
/* A searched run's kernels_hash: what run_key_add saw (each kernel's source, name, options and
 * architecture) and the compile cache key of each distinct unit (source, options that decide the
 * files read), which need no cubin. */
tune_status run_kernels_key_hash(run_ctx *rc, uint64_t *hash);
/* Frees a searched run's key state (run_key_add's). */
void run_key_free(run_ctx *rc);
/* Frees the plans and the indices. */
void run_plans_free(run_ctx *rc);

/* kernels.c */
/* Compiles every kernel (GPU runs: in a child process that fills the cache); prints the counts
 * unless quiet. */
tune_status run_compile(run_ctx *rc, int arch, run_summary *sum);
/* The same for the kernels idx[0..n) alone (idx NULL: the first n). */
tune_status run_compile_some(run_ctx *rc, int arch, const size_t *idx, size_t n, run_summary *sum);
/* family_env.kernel: the loaded kernel of (source, name), or NULL. */
void *run_lookup_kernel(void *kctx, const family_kernel_ref *ref);
/* family_env.global: a symbol of the module of a kernel of the table (loaded first). */
int run_lookup_global(void *kctx, const family_kernel_ref *ref, const char *name, void **ptr,
                      size_t *bytes, tune_error *err);
/* Compiles the kernels idx[0..n) (a searched run's round) in a child process into cache_dir,
 * then reads their cubins; adds the counts to sum. */
tune_status run_compile_subset(run_ctx *rc, const size_t *idx, size_t n, const char *cache_dir,
                               run_summary *sum);
/* A compile child (run_compile_stream below) waited for: its cubins read, the counts added to
 * sum, c freed. */
typedef struct run_compile_async run_compile_async;
tune_status run_compile_finish(run_ctx *rc, run_compile_async *c, run_summary *sum);
/* A child that tells each kernel as it is finished: run_compile_pump reads what it told within
 * timeout_s (each kernel's cubin read from the cache, rc->kernels updated; run_compile_is_read
 * says which) and returns 1 once the child has ended; poll run_compile_worker (NULL once ended)
 * with the other workers. run_compile_finish then reads the rest and frees c. */
run_compile_async *run_compile_stream(run_ctx *rc, const size_t *idx, size_t n,
                                      const char *cache_dir, int threads);
int run_compile_pump(run_ctx *rc, run_compile_async *c, double timeout_s);
worker *run_compile_worker(const run_compile_async *c);
int run_compile_is_read(const run_compile_async *c, size_t k);
/* The cubins of kernels idx[0..n) read from rc->cache_dir (compiled by a child since this process
 * was forked; no OpenMP, no progress line); a kernel not found keeps no cubin. */
void run_read_cached_kernels(run_ctx *rc, const size_t *idx, size_t n);
/* Removes a private kernel cache folder (its files, then itself). */
void run_remove_cache_dir(const char *dir);
/* FNV-1a over the kernels' sources, names and cubins: the run key's kernels_hash. */
uint64_t run_kernels_hash(const run_ctx *rc);
void run_ctx_free(run_ctx *rc);
/* Writes the row of a configuration whose worker died (crashed) or hung (timeout) (coordinator.c).
 */
tune_status run_write_lost_row(run_ctx *rc, size_t ci, result_status status, const char *reason);

/* rows.c */
/* Row of configuration ci (point p) with everything known before it runs: sweep, method, axes,
 * parameters, byte and FLOP models, the kernel it names, device (borrowed; may be NULL). */
void run_row_fill(const run_ctx *rc, size_t ci, const tune_point *p, result_row *row,
                  const char *device);
/* 1 with the row's status and reason when configuration ci cannot run: the family refused it
 * (skipped) or a kernel failed to compile; 0 otherwise. */
int run_row_unrunnable(const run_ctx *rc, size_t ci, result_row *row);
/* Validates and times the prepared configuration on the shape's state; fills the row. */
void run_row_measure(run_ctx *rc, void *state, timing *tm, const tune_point *p, result_row *row,
                     char *reason, size_t reason_size);
/* The rows' roofline ceilings: the device's calibration file, else the specs table. */
void run_load_ceilings(run_ctx *rc, double read_bw);
/* With --energy (or an objective that needs energy): the energy counter's update period into
 * rc->energy_period_s (-1 when the device has none); 0 otherwise. */
void run_energy_probe(run_ctx *rc);
/* Whether this run measures energy. */
int run_measures_energy(const run_ctx *rc);
/* rc->ceil_source alone (the coordinator: meta.json says which ceilings the rows use). */
void run_note_ceilings(run_ctx *rc);

/* retime.c */
typedef struct {
    size_t ci;
    double median;
} run_candidate;
/* Re-times the shape's fastest candidates interleaved; appends the verdict to retime.jsonl. */
tune_status run_retime_shape(run_ctx *rc, void *state, timing *tm, run_candidate *cands, size_t n,
                             tune_error *err);

/* worker_loop.c */
int run_worker_body(void *ctx, int fd);
/* The measuring worker of a searched run's session (search_session.c: its commands). */
int run_session_body(void *ctx, int fd, worker_inbox *in);
/* The session worker's "P n ci ci ...": the configurations the coordinator planned since this
 * worker was forked, planned here in the same order, so that the kernel indices of its "K" lines
 * name the same kernels here (plan.c); n, the coordinator's kernel count after them, checked.
 * TUNE_ERR_INVALID when the line is malformed or the tables differ. */
tune_status run_session_plans(run_ctx *rc, const char *line);

/* coordinator.c */
/* The seconds without progress after which a worker's configuration is killed: the option's,
 * else RUN_WATCHDOG_DEFAULT_S. */
#define RUN_WATCHDOG_DEFAULT_S 20.0
double run_watchdog_s(const run_options *opt);
/* An exhaustive run's measurement: workers until every configuration has a row (a searched run
 * measures in its session, search_session.c). */
tune_status run_coordinate(run_ctx *rc, run_summary *sum);
tune_status run_write_compile_rows(run_ctx *rc, run_summary *sum);

/* probe.c */
tune_status run_probe_device(const run_options *opt, gpu_info *gi, tune_error *err);
tune_status run_probe_count(int *n, tune_error *err);
/* The driver's version: NVML's (mon may be NULL), else /proc/driver/nvidia/version's first
 * line; "" when neither. */
void run_driver_version(monitor *mon, char *buf, size_t size);

/* multi.c */
tune_status run_gpus(const sweep *sw, const run_options *opt, run_summary *sum, tune_error *err);

#endif
