/* meta.h - meta.json, a results folder's provenance and summary: built, written, read, checked
 * and merged here, and nowhere else (readers use the accessors below, not JSON paths).
 *
 *   meta_info mi = {.sw = sw, .argc = argc, .argv = argv, .device = &gi, .start = start, ...};
 *   json_t *meta = meta_build(&mi, &sum);
 *   meta_write(dir, meta, &err);                  // dir/meta.json, through a temporary file
 *   json_decref(meta);
 *
 *   json_t *m = meta_load(dir, NULL);             // NULL when absent or unreadable
 *   const char *gpu = meta_device_name(m);
 *   json_decref(m);
 *
 * Layout (schema_version 1), keys in this order: schema_version, tool {name, version, git_rev},
 * argv, host {hostname, system, release, machine}, sweep {file, name, family, op, bytes, flops},
 * timing {warmup, reps, flush_l2, fresh_indices, stop, mode, batch[, rel_stderr, min_reps,
 * max_reps, min_time_s, max_time_s]}, report {rows, cols}, device {...} and versions {driver_cuda,
 * runtime, nvrtc, cublas[, driver]} (GPU runs), compile_only {arch}, shard {index, count,
 * configs, total_configs, plan, estimated_seconds, total_estimated_seconds}, key (the run key),
 * search (a searched run's block: meta_search_json), nvml, roofline_ceilings, seed, read_bw
 * {bytes_per_second, source}, start[, end], summary {configs, pruned, ok, invalid, compile_error,
 * launch_error, crashed, timeout, skipped, kernels, kernels_cached, kernel_errors, compile_seconds,
 * wall_seconds[, compiled]}. A merged run (merge.h) has shard {merged, count, plan, total_configs}
 * and a shards list.
 *
 * The run key says what must not change between a run and its resumption: the kernels' hash,
 * NVRTC, and the architecture (compile-only) or the driver, device and PCI bus id; the seed; the
 * shard and plan of a shard; a searched run's settings ("search"). A searched run, which compiles
 * only what it measures, hashes the kernels' compile cache keys instead of their cubins, and its
 * meta.json has a "search" block (after "key"; meta_search.c).
 */
#ifndef TUNE_META_H
#define TUNE_META_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/error.h"
#include "core/gpu_info.h"
#include "model/sweep.h"
#include "store/results.h"

/* A run's counts: meta.json's summary. */
typedef struct {
    size_t n_configs, n_pruned;
    size_t n_ok, n_invalid, n_compile_error, n_launch_error, n_skipped, n_crashed, n_timeout;
    size_t n_compiled; /* compile-only rows (opt.compile_rows) */
    size_t n_kernels, n_cached, n_kernel_errors;
    double compile_seconds, wall_seconds;
    double read_bw; /* B/s used for percentages */
    char out_dir[PATH_MAX];
} run_summary;

/* Counts one row of status st in s. */
void meta_count_status(run_summary *s, result_status st);

/* A shard's place in its plan (model/shard.h). */
typedef struct {
    size_t index, count, configs, total_configs;
    const char *plan; /* the plan's hash */
    double estimated_seconds, total_estimated_seconds;
} meta_shard;

/* A searched run (docs/search.md): meta.json's "search" block. Borrowed for the call. */
typedef struct {
    const char *strategy;      /* "random", ... */
    const char *budget;        /* "10%", "12", "10%/shape", "4/shape", "all" */
    const char *scope;         /* "run" (the budget is the run's) or "shape" */
    size_t budget_evaluations; /* the evaluations the budget allows in all */
    uint64_t seed;
    size_t batch;        /* proposals per shape per round; 0: the strategy's default */
    double time_limit_s; /* 0: none */
    int time_limit_hit;  /* a round was not started, or a worker stopped, for it */
    int finished;        /* no round is left: the search is complete (or timed out) */
    size_t rounds;
    const char *const *warm_start;    /* folders */
    size_t n_warm_start, prior_rows;  /* rows of them observed */
    size_t space;                     /* configurations of the run (a shard's: its own) */
    size_t baselines;                 /* baseline configurations (always measured) */
    size_t candidates, evaluated;     /* tuned configurations the family can run; measured */
    size_t kernels, kernels_compiled; /* instantiations of the space; compiled by the run */
    size_t n_shapes;                  /* per shape (with candidates): */
    const tune_point *const *shapes;  /* its problem axes */
    const size_t *shape_candidates, *shape_budget, *shape_evaluated;
} meta_search;

/* meta.json's "search" block: {strategy, budget, scope, budget_evaluations, seed, batch,
 * time_limit_s, time_limit_hit, finished, rounds, warm_start: [dirs], prior_rows, configs: {space,
 * measured, baselines, candidates, evaluated}, kernels: {space, compiled}, shapes: [{shape: {axis:
 * value}, candidates, budget, evaluated}]}. New. */
TUNE_MUST_CHECK json_t *meta_search_json(const meta_search *ms);
/* The "search" block of meta (borrowed), NULL for an exhaustive run. */
const json_t *meta_search_block(const json_t *meta);
/* The settings a merge and resume compare: "random, budget 10%, seed 7, batch 4[, warm start
 * a,b]" or "exhaustive (not searched)" into buf. Returns 1 for a searched run, 0 otherwise. */
int meta_search_settings(const json_t *meta, char *buf, size_t size);
/* "searched: random, budget 10 %: 672 of 6 725 configurations measured" into buf (the report's
 * line); 0, or -1 for an exhaustive run (buf empty). */
int meta_search_line(const json_t *meta, char *buf, size_t size);
/* An object of integers, strings and numbers (a shape, a configuration's parameters) as
 * "k=4096 n=4096 m=16" into buf, truncated to size; buf. */
const char *meta_object_text(const json_t *o, char *buf, size_t size);
/* 1 when a searched run's folder is finished: meta.json has its end and search.finished. */
int meta_search_finished(const json_t *meta);
/* The sweep's family and op (borrowed), NULL when absent. */
const char *meta_sweep_family(const json_t *meta);
const char *meta_sweep_op(const json_t *meta);

/* Everything meta.json records besides the summary. Borrowed for the call. */
typedef struct {
    const sweep *sw;
    int argc;
    char **argv;
    const gpu_info *device; /* NULL: compile-only (no device, no versions) */
    int nvrtc_version;
    const char *cublas_version; /* "13.0.2" */
    const char *driver;         /* the driver's version text; NULL or "": unknown */
    const char *compile_arch;   /* compile-only runs: "sm_90"; NULL otherwise */
    const meta_shard *shard;    /* NULL: not a shard */
    const json_t *key;          /* the run key (meta_key_build); NULL: none */
    const json_t *search;       /* a searched run's block (meta_search_json); NULL: exhaustive */
    int nvml;                   /* NVML was available */
    const char *ceilings;       /* where the rows' roofline ceilings came from */
    uint64_t seed;
    const char *read_bw_source; /* "given", "measured (...)", "none (compile-only)" */
    const char *start, *end;    /* UTC times; end NULL while the run is not finished */
} meta_info;

/* New meta.json tree. */
TUNE_MUST_CHECK json_t *meta_build(const meta_info *mi, const run_summary *sum);

/* The "tool" object every file tune writes carries: {"name": "tune", "version", "git_rev"} of this
 * build (a new reference). */
TUNE_MUST_CHECK json_t *meta_tool_json(void);
/* Writes dir/meta.json (through dir/meta.json.tmp, renamed). */
TUNE_MUST_CHECK tune_status meta_write(const char *dir, const json_t *meta, tune_error *err);
/* New tree of dir/meta.json, or NULL (je, may be NULL, says why). */
TUNE_MUST_CHECK json_t *meta_load(const char *dir, json_error_t *je);

/* What the run key is built from. Borrowed for the call. */
typedef struct {
    uint64_t kernels_hash;
    int nvrtc_version;
    const char *compile_arch; /* compile-only runs: "sm_90"; the device fields are then unused */
    const gpu_info *device;
    const char *driver;
    uint64_t seed;
    const meta_shard *shard; /* NULL: not a shard */
    const char *search;      /* a searched run's settings ("random budget=10% seed=7 batch=4");
                                NULL: exhaustive (the key has no "search") */
    int energy; /* 1: the rows carry energy per call (the key has "energy": true; a resume that
                   measures it, or not, unlike the run is refused: its rows would be mixed) */
} meta_key_info;

/* New run key. */
TUNE_MUST_CHECK json_t *meta_key_build(const meta_key_info *ki);

/* Resuming dir: its start time into start (unchanged when unknown) and its read bandwidth
 * (0 when unknown). */
void meta_resume_info(const char *dir, char *start, size_t start_size, double *read_bw);
/* Refuses to resume dir unless its key equals key (every difference listed). A shard may move to
 * another GPU (sharded != 0): key's pci_bus_id then lists every PCI bus id it ran on. A folder of
 * merged shards is never resumed. */
TUNE_MUST_CHECK tune_status meta_check_resume(const char *dir, json_t *key, int sharded,
                                              tune_error *err);

/* ---- readers ---- */

/* The newest meta.json schema this tune reads and writes. */
#define META_SCHEMA_VERSION 2 /* 2: sweep.source (the sweep file as an object), sweep.hash */
/* The sweep file's JSON (new, NULL when it cannot be read) and the FNV-1a hash of its bytes into
 * hex ("" when it cannot be read). */
TUNE_MUST_CHECK json_t *meta_sweep_source(const char *file, char hex[17]);
/* meta.json's sweep.hash (borrowed), NULL in folders written before schema 2. */
const char *meta_sweep_hash(const json_t *meta);
/* The fields the readers use, checked: an object, schema_version not newer than this tune's,
 * report.rows / report.cols arrays of at most max_axes strings. Errors name path and the JSON
 * path ("run/meta.json: $.report.rows: [1]: expected a string (an axis name)"). */
TUNE_MUST_CHECK tune_status meta_check(const json_t *meta, const char *path, size_t max_axes,
                                       tune_error *err);
/* The readers' check of the folders they combine: each folder's meta.json, when it has one,
 * loaded (through core/infile.h) and checked (meta_check, axes at most TUNE_MAX_AXES), and all of
 * one sweep (name and sweep.hash): rows of different sweeps are never combined. dirs[0]'s
 * meta.json into *first (new; NULL when absent; first may be NULL). Errors name the file. */
TUNE_MUST_CHECK tune_status meta_check_folders(const char *const *dirs, size_t n_dirs,
                                               json_t **first, tune_error *err);
/* The sweep's name, or NULL. Borrowed from meta. */
const char *meta_sweep_name(const json_t *meta);
/* The sweep's i-th method (sweep.methods, in the sweep's order) and its role ("tuned",
 * "reference", "baseline", "auxiliary": model/family.h), borrowed; NULL past the last method or
 * in folders written before the roles were recorded. */
const char *meta_sweep_method(const json_t *meta, size_t i, const char **role);
/* The device's name (device.name), or NULL. Borrowed. */
const char *meta_device_name(const json_t *meta);
/* The git revision of the tune that wrote it (tool.git_rev), or NULL. Borrowed. */
const char *meta_tool_git_rev(const json_t *meta);
/* The report's axes (report.rows and report.cols, at most max each, borrowed) and the title (the
 * sweep's name). */
void meta_report_axes(const json_t *meta, const char **rows, size_t *n_rows, const char **cols,
                      size_t *n_cols, size_t max, const char **title);

/* The environment of a run, as `tune compare` shows it: each item's key ("gpu", "driver", ...),
 * label, whether a difference is checked, and its value as text. */
typedef struct {
    const char *key, *label;
    int checked;
} meta_env_item;

#define META_N_ENV 14
extern const meta_env_item meta_env_items[META_N_ENV];
/* The text of item i in meta (strings as they are, numbers, compact JSON; "absent"). New string,
 * NULL when out of memory. */
TUNE_MUST_CHECK char *meta_env_text(const json_t *meta, size_t i);

/* ---- merging shards (merge.h) ---- */

/* The shard fields of a shard's meta.json: 0, or -1 with why ("not a shard", "incomplete"). */
int meta_shard_read(const json_t *meta, meta_shard *out, const char **why);
/* 1 when meta is that of merged shards, with their plan's hash (borrowed) and shard count. */
int meta_merged_plan(const json_t *meta, const char **plan, size_t *count);
/* meta.json's summary.pruned, 0 when absent. */
size_t meta_pruned(const json_t *meta);
/* Adds to problems (through report(ctx, text)) every key member that differs between two shards
 * of one run (the shard and PCI bus id may differ). */
void meta_compare_keys(const json_t *a, const json_t *b, const char *a_name, const char *b_name,
                       void (*report)(void *ctx, const char *text), void *ctx);
/* 1 when a and b were measured with the same family, op, byte/FLOP models and timing settings. */
int meta_same_settings(const json_t *a, const json_t *b);

/* One shard of a merge. */
typedef struct {
    const json_t *meta;
    const char *dir;
    size_t index, n_rows;
} meta_part;

/* meta.json of a merged run: the first part's, with argv, the merged rows' summary (sum, whose
 * wall and compile seconds it sets) and every shard's provenance. New. */
TUNE_MUST_CHECK json_t *meta_merged(const meta_part *parts, size_t n, int argc, char **argv,
                                    run_summary *sum);
/* A merge of searched shards: m's "search" block (the first shard's) made the merged one: counts
 * and shapes summed over the parts, rounds the most, time_limit_hit and finished over all. */
void meta_search_merge(json_t *m, const meta_part *parts, size_t n);

#endif
