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

typedef struct {
    const sweep *sw;
    const run_options *opt;
    space *sp;
    int sp_borrowed; /* sp is run_options.space: not freed here */
    run_plan *plans; /* the configurations planned, in the order they were (plan.c) */
    size_t n_plans, cap_plans;
    run_index plan_index; /* by configuration */
    run_kernel *kernels;
    size_t n_kernels, cap_kernels;
    run_index kernel_index;        /* by source, name and options */
    struct run_key_scan *key_scan; /* a searched run's key, hashed by run_search_prepare */
    tune_error *err;
    double t0;              /* start of the run (monotonic seconds) */
    monitor *mon;           /* NVML, NULL when absent */
    double energy_period_s; /* the energy counter's update period; 0: energy not measured */
    roofline_ceilings ceil; /* for every row's roofline time */
    int have_ceil;
    char ceil_source[512];
    gpu_info gi;            /* the device (queried in a child process) */
    double read_bw;         /* B/s: given, or measured by the first worker */
    unsigned char *done;    /* per configuration: a row exists (this run or a resumed one) */
    char out_dir[PATH_MAX]; /* the run's folder */
    int lock_fd;            /* its lock, held until the tables are written; -1: none */
    shard_plan *plan;       /* --shard: the sweep's shards; NULL: the whole sweep */
    int arch;               /* what the kernels were compiled for, x10 (90: sm_90) */
    /* A searched run (search.c); all NULL / 0 in an exhaustive one. */
    const sweep_search *search; /* the settings in force (the sweep's, the command line's) */
    unsigned char *todo;        /* per configuration: measure it in this round */
    double *medians;            /* per configuration: its ok row's median (s), NAN otherwise */
    unsigned char *resumed;     /* per configuration: its row came from the resumed folder */
    double *resumed_cost;       /* per resumed configuration: its row's cost under the run's
                                   objective (results_row_cost), what the search observes */
    unsigned char *compiled;    /* per kernel (cap_kernels): compiled (or read from the cache) */
    unsigned char *retime_todo; /* per shape: re-time it after the rows (the last pass) */
    unsigned char *retimed;     /* per shape: re-timed (coordinator side, from "T s") */
    int retime_at_end;          /* workers re-time a shape after its last row of the round */
    unsigned char *retime_hold; /* per shape (NULL: none): more of its rows come in a later
                                   worker of the round, which re-times it */
    double deadline;            /* > 0: workers stop between configurations once past it */
    const char *cache_dir;      /* the searched run's kernel cache (private under --no-cache) */
    /* the row's median (s) and its cost under the run's objective (NAN unless ok) */
    void (*on_row)(void *ctx, size_t ci, result_status st, double median, double cost);
    void *on_row_ctx;
    struct run_search_state *ss; /* search.c's state, for meta.json */
    size_t worker_starts;        /* measuring workers started (run_coordinate, searched runs) */
    /* the session's worker (search_session.c); NULL: run_session_body. A test's stand-in that
     * speaks its protocol without a GPU */
    worker_duplex_fn session_body;
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
/* A searched run's key: one configuration's kernels refs[0..n) (n < 0: none) added. 0, or -1
 * out of memory. */
int run_key_add(run_ctx *rc, const family_kernel_ref *refs, int n);
/* The distinct kernels of the space: counted by run_key_add (by 64-bit fingerprint) in a
 * searched run, the table's size otherwise. */
size_t run_key_kernels(const run_ctx *rc);
/* A searched run's kernels_hash: what run_key_add saw (each kernel's source, name, options and
 * architecture) and the compile cache key of each distinct unit (source, options that decide the
 * files read), which need no cubin. */
tune_status run_kernels_key_hash(run_ctx *rc, uint64_t *hash);
/* Frees the plans, the indices and the key's state. */
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
/* The same in two steps, so that the coordinator can measure while the child compiles: the
 * child (threads: its OpenMP threads, 0 the default) started, or NULL with rc->err set (idx is
 * copied); then waited for, its cubins read, the counts added to sum, c freed. */
typedef struct run_compile_async run_compile_async;
run_compile_async *run_compile_start(run_ctx *rc, const size_t *idx, size_t n,
                                     const char *cache_dir, int threads);
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
tune_status run_coordinate(run_ctx *rc, run_summary *sum);
tune_status run_write_compile_rows(run_ctx *rc, run_summary *sum);

/* probe.c */
tune_status run_probe_device(const run_options *opt, gpu_info *gi, tune_error *err);
tune_status run_probe_count(int *n, tune_error *err);
/* The driver's version: NVML's (mon may be NULL), else /proc/driver/nvidia/version's first
 * line; "" when neither. */
void run_driver_version(monitor *mon, char *buf, size_t size);

/* search_session.c: a searched run's measuring session (one worker for every round) */
typedef struct run_session run_session;
typedef struct {
    size_t configs, kernels;  /* the round's configurations, the kernels it compiled */
    double compile_s, wall_s; /* the compile child's seconds, the round's */
} run_session_stats;
run_session *run_session_new(run_ctx *rc); /* NULL: out of memory */
/* Measures the configurations of rc->todo (those without a row), compiling the kernels they need
 * meanwhile; last: each shape re-timed after its rows. stats (optional) filled. */
tune_status run_session_round(run_ctx *rc, run_summary *sum, run_session *s, int last,
                              run_session_stats *stats);
/* Re-times the shapes marked in shapes[] (their kernels compiled), one at a time. A worker that
 * the re-timing ends ends the pass: the winners stand on their first measurement. */
tune_status run_session_retime(run_ctx *rc, run_summary *sum, run_session *s,
                               const unsigned char *shapes);
/* Workers started so far. */
size_t run_session_starts(const run_session *s);
/* Ends the worker (what it still says is read) and frees s. */
void run_session_free(run_ctx *rc, run_summary *sum, run_session *s);

/* search.c */
/* Whether the run is searched, and its search state set up (the settings merged, arrays). */
tune_status run_search_prepare(run_ctx *rc, sweep_search *settings);
/* A compile-only run of a searched sweep: what the search proposes before any measurement (the
 * whole budget for random and exhaustive, the first round for the model, whose later rounds
 * follow the measurements) marked in rc->todo with the baselines, and only their kernels
 * compiled. */
tune_status run_search_compile_first(run_ctx *rc, int arch, run_summary *sum);
/* The rounds of a searched run, then the re-timing of each shape's fastest candidates. */
tune_status run_search(run_ctx *rc, run_summary *sum);
/* The key's text of the search settings ("random budget=10% seed=7 batch=4", then
 * " objective=energy" when the objective is not time), into buf. */
const char *run_search_key(const run_ctx *rc, char *buf, size_t size);
/* meta.json's "search" block of this run (new), NULL for an exhaustive run. */
json_t *run_search_meta(const run_ctx *rc);
void run_search_free(run_ctx *rc);

/* multi.c */
tune_status run_gpus(const sweep *sw, const run_options *opt, run_summary *sum, tune_error *err);

#endif
