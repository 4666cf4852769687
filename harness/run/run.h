/* run.h - one sweep end to end: enumerate, compile (parallel, cached), then per shape allocate,
 * validate and time every configuration, append result rows, print the best-config tables.
 *
 *   run_options opt; run_options_init(&opt);
 *   opt.out_root = "results";
 *   run_summary sum;
 *   if (run_sweep(sw, &opt, &sum, &err) != TUNE_OK) ...
 *
 * Without a GPU, run_sweep fails with TUNE_ERR_NO_GPU (one sentence) unless opt.compile_only is
 * set, which compiles every variant for opt.arch and measures nothing; with opt.compile_rows too,
 * it also writes a results folder with one row per configuration (status compiled, compile_error
 * or skipped), which can be sharded, resumed and merged like a measured run.
 *
 * A searched run (the sweep's "search" section or opt's search members, docs/search.md) measures
 * the baselines and, per shape, the candidates a strategy proposes within a budget, round by
 * round, compiling each round's kernels before it is measured (run/search.c).
 *
 * Sharding (model/shard.h, docs/sharding.md): opt.shard_count = n runs only shard opt.shard_index
 * of n; opt.gpus = "all" or "0,2" runs one coordinator per GPU, each on its shard, into <run
 * folder>/shards/<i>/, and merges them into the run folder.
 */
#ifndef TUNE_RUN_H
#define TUNE_RUN_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/objective.h"
#include "model/space.h"
#include "model/sweep.h"
#include "store/merge.h"
#include "store/meta.h"

typedef struct {
    const char *out_root;    /* results root, default "results" */
    const char *out_dir;     /* explicit run folder (overrides out_root/<sweep>/<run id>) */
    const char *cache_dir;   /* kernel cache folder; NULL: no cache */
    const char *kernels_dir; /* kernel sources; NULL: compile_find_kernels_dir */
    int device;              /* CUDA ordinal */
    int arch;                /* compile-only target (x10); 0: 90 */
    int compile_only;
    int quiet;         /* no progress line, no tables */
    int warnings;      /* print NVRTC's log of the kernels that compiled with warnings too */
    uint64_t seed;     /* random inputs */
    double read_bw;    /* > 0: the device's read bandwidth in B/s, not measured */
    int resume;        /* continue the latest run of the sweep (or out_dir): only what is missing */
    double watchdog_s; /* a configuration making no progress this long is killed; 0: 20 s (run_watchdog_s) */
    int retake_throttled; /* re-measure a configuration NVML saw throttled, up to this many times */
    int energy;           /* --energy: each ok row's energy per call (timing.h: timing_energy) */
    /* --objective: what the search and the tables rank by; energy and edp measure energy */
    tune_objective objective;
    size_t shard_index, shard_count; /* shard_count > 0: only shard shard_index (0-based) of n */
    int compile_rows; /* with compile_only: write a results folder, a row per configuration */
    const char *gpus; /* "all" or a list "0,1,3": one coordinator per GPU, then merge */
    /* optional: the sweep's space, already built by the caller (borrowed; its enumeration of a
     * large sweep takes seconds); NULL: run_sweep builds it */
    const space *space;
    /* The search (docs/search.md): each set member overrides the sweep's "search" section. */
    const char *search;          /* --search: "exhaustive", "random" or "model"; NULL: the sweep's */
    const char *budget;          /* --budget: "10%" or a count; NULL: the sweep's */
    double time_limit_s;         /* --time-limit: > 0 seconds; 0: the sweep's */
    int search_seed_set;         /* --search-seed given: search_seed replaces the sweep's */
    uint64_t search_seed;
    const char *const *warm_start; /* --warm-start DIR (repeatable): replace the sweep's list */
    size_t n_warm_start;
    int argc;
    char **argv;
} run_options;

void run_options_init(run_options *opt);
/* The search in force: the sweep's "search" section with opt's overrides (warm_start borrowed
 * from sw or opt). TUNE_ERR_INVALID for a strategy or budget text that does not parse, or warm
 * starts for a run that is not searched. */
TUNE_MUST_CHECK tune_status run_search_settings(const sweep *sw, const run_options *opt,
                                                sweep_search *out, tune_error *err);
/* What a searched run of sw will measure (`tune validate`): the tuned configurations the family
 * can run (candidates), the baselines (always measured), and the configurations the budget
 * measures (baselines + per shape min(budget, candidates)). */
TUNE_MUST_CHECK tune_status run_search_estimate(const sweep *sw, const space *sp,
                                                const sweep_search *set, size_t *candidates,
                                                size_t *baselines, size_t *measured,
                                                tune_error *err);
TUNE_MUST_CHECK tune_status run_sweep(const sweep *sw, const run_options *opt, run_summary *sum,
                                      tune_error *err);

/* Merges the shards' results folders into out_dir (store/merge.h: merge_shards) and writes its
 * best-config tables (analysis/report.h: report_rebuild), printed unless opt->quiet or no row is
 * ok. */
tune_status run_merge(const char *out_dir, const char *const *dirs, size_t n_dirs,
                      const merge_options *opt, run_summary *sum, tune_error *err);

#endif
