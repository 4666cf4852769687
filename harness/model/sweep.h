/* sweep.h - sweep files: parse, validate against the family, free.
 *
 *   tune_error err = {0};
 *   sweep *sw = sweep_load("sweeps/sparq.json", &err);
 *   if (!sw) { ... err.where is "sweeps/sparq.json:7:21: $.params.chunk.pow2[0]" ... }
 *   sweep_free(sw);
 *
 * Format (docs/sweep-format.md):
 * {
 *   "name": "sparq",                       required, [A-Za-z0-9_.-]+
 *   "description": "...",                  optional
 *   "family": "gather_matmul",             required, a registered family
 *   "op": "gather_inner_matrix_only_bmv",  required, an op of the family
 *   "problem": { "<axis>": VALUES, ... },  the op's problem axes; missing ones take their default
 *   "params":  { "<param>": VALUES, ... }, the family's parameters; missing ones their default
 *   "methods": ["custom", "gather"],       required, non-empty, distinct methods of the family
 *   "skip_if": "expr" | ["expr", ...],     optional constraints: a config is pruned when one is true
 *   "family_rules": true,                  optional (default true): the family's own tile rules
 *                                          prune too (model/family.h: prune)
 *   "bytes": "expr", "flops": "expr",      optional, override the op's models
 *   "timing": { "warmup": 10, "reps": 100, "mode": "cold", "fresh_indices": true },
 *             or { "stop": "adaptive", "rel_stderr": 0.005, "min_reps": 10, "max_reps": 10000,
 *                  "min_time_s": 0.005, "max_time_s": 1.0, "mode": "graph", "batch": 0 }
 *   "report": { "rows": ["g"], "cols": ["k_pre", "k"] },
 *   "search": { "strategy": "random", "budget": "10%", "time_limit_s": 600, "seed": 7,
 *               "batch": 4, "warm_start": ["results/x/20261123T080659Z"],
 *               "features": { "blocks": "(m + bm - 1) / bm * splitk" } }   optional
 * }
 * VALUES: a scalar (int, string, bool), a non-empty array of scalars of one type,
 * {"range": [lo, hi]} or {"range": [lo, hi, step]} (inclusive, step > 0), or
 * {"pow2": [lo, hi]} (lo a power of two; lo, 2lo, 4lo, ... <= hi). Booleans are stored as 0/1.
 * Every error (unknown key, wrong type, empty axis, unknown op or method, value out of the
 * family's range, duplicate value, bad expression or unknown name in one) is TUNE_ERR_PARSE or
 * TUNE_ERR_INVALID with where = "<file>:<line>:<col>: <json path>" and a message that says what
 * was expected.
 */
#ifndef TUNE_SWEEP_H
#define TUNE_SWEEP_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/expr.h"
#include "model/family.h"
#include "model/search.h"

typedef struct {
    char *name;
    int is_str; /* strings (e.g. dtype) or integers (booleans as 0/1) */
    size_t n;
    int64_t *ints; /* when !is_str */
    char **strs;   /* when is_str */
} sweep_axis;

typedef enum {
    SWEEP_TIMING_STOP_FIXED,   /* warmup + reps, exactly (default) */
    SWEEP_TIMING_STOP_ADAPTIVE /* until the relative standard error is under rel_stderr */
} sweep_timing_stop;

typedef enum {
    SWEEP_TIMING_MODE_COLD, /* L2 flushed before every rep (default) */
    SWEEP_TIMING_MODE_HOT,  /* no flush: inputs stay in L2 from the previous rep */
    SWEEP_TIMING_MODE_GRAPH /* hot, `batch` launches per CUDA-graph replay, time / batch */
} sweep_timing_mode;

/* "timing" (docs/sweep-format.md, docs/timing.md). */
typedef struct {
    int warmup;        /* >= 0, default 10 (graph mode: replays) */
    int reps;          /* >= 1, default 100; stop fixed only */
    int flush_l2;      /* mode == COLD; kept for old sweeps and readers ("flush_l2": false = hot) */
    int fresh_indices; /* default 1; graph mode: once per replay, not per launch */
    sweep_timing_stop stop;
    sweep_timing_mode mode;
    int batch;         /* graph mode: launches per replay, 1..1000; 0 = automatic (default) */
    /* stop adaptive only (defaults otherwise, unused): */
    double rel_stderr; /* target stderr / mean, (0, 1), default 0.005 */
    int min_reps;      /* >= 2, default 10 */
    int max_reps;      /* >= min_reps, default 10000 */
    double min_time_s; /* minimum total measured GPU time, >= 0, default 0.005 */
    double max_time_s; /* time-out (host wall time of the measurement), > 0, default 1.0 */
} sweep_timing;

/* After a shape's configurations are measured, its SWEEP_RETIME_TOP fastest tuned configurations
 * are re-timed interleaved over SWEEP_RETIME_ROUNDS rounds (docs/timing.md); the shard plan
 * counts what that costs. */
#define SWEEP_RETIME_TOP 3
#define SWEEP_RETIME_ROUNDS 30

/* "search" (docs/sweep-format.md, docs/search.md): which configurations a run measures. Absent:
 * exhaustive, every configuration (given == 0). The command line overrides each member
 * (run_options). */
typedef struct {
    int given;              /* the sweep has a "search" section */
    search_options opt;     /* strategy, budget (fraction or count), batch, seed */
    double time_limit_s;    /* > 0: no round starts after this many seconds of the run; 0: none */
    char **warm_start;      /* earlier results folders (their rows inform the search) */
    size_t n_warm_start;
    /* "features": derived features of the model (search_add_feature), in the order given:
     * names, their expressions' texts as written, the expressions (all owned by the sweep) */
    char **feature_names, **feature_src;
    expr **features;
    size_t n_features;
} sweep_search;

typedef struct {
    char *file; /* path it was loaded from (or the label given to sweep_parse) */
    char *name;
    char *description; /* may be NULL */
    char *family_name;
    char *op;
    const tune_family *family; /* borrowed, static; or the declared family (below) */
    const family_op *fop;      /* borrowed, static; or the declared op */
    sweep_axis *problem;       /* every axis of the op, in the op's order */
    size_t n_problem;
    sweep_axis *params; /* every parameter of the family, in the family's order */
    size_t n_params;
    char **methods;
    size_t n_methods;
    expr **skip_if;
    char **skip_if_src;
    size_t n_skip_if;
    int family_rules; /* 1 (default): the family's prune hook applies; 0: skip_if alone */
    expr *bytes; /* never NULL: the sweep's or the op's default */
    char *bytes_src;
    expr *flops; /* never NULL */
    char *flops_src;
    sweep_timing timing;
    char **report_rows; /* problem-axis names; may be empty */
    size_t n_report_rows;
    char **report_cols;
    size_t n_report_cols;
    /* "family": "kernel": the family the "kernel" section declares (model/kernel_decl.h),
     * owned; family and fop point into it. NULL for a shipped family. */
    struct kdecl_family *declared;
    sweep_search search;
} sweep;

/* New sweep from a file, or NULL with err set. */
TUNE_MUST_CHECK sweep *sweep_load(const char *path, tune_error *err);
/* New JSON object {method: role} of the sweep's methods, the roles of model/family.h
 * ("tuned", "reference", "baseline", "auxiliary"): meta.json's sweep.methods. */
struct json_t;
TUNE_MUST_CHECK struct json_t *sweep_methods_json(const sweep *sw);
/* New sweep from JSON text; label names the source in errors. */
TUNE_MUST_CHECK sweep *sweep_parse(const char *text, const char *label, tune_error *err);
void sweep_free(sweep *sw);
/* 1 when s asks for a searched run (a strategy other than exhaustive, a budget or a time limit);
 * 0: every configuration is measured, as without a "search" section. */
int sweep_search_on(const sweep_search *s);
/* The features of a searched run's candidates (model/search.h: search_new), one rule for the run
 * and anything that replays its rows (a row names the same axes in the same order): every problem
 * axis of sw, "method", every parameter; into names[SEARCH_MAX_FEATURES] (borrowed from sw), their
 * number. */
size_t sweep_search_features(const sweep *sw, const char **names);

#endif
