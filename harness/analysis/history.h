/* history.h - the store's runs over time: per sweep, GPU model, shape and method, the series of
 * best times and winning configurations, each run judged against a window of earlier comparable
 * runs (docs/history.md).
 *
 *   history_options o;
 *   history_options_init(&o);                 // window 7, threshold 3 %, 2 robust deviations, 2 in a row
 *   o.db = "results/history.sqlite";
 *   json_t *h = NULL;
 *   if (history_build(&o, &h, &err) == TUNE_OK) {
 *       history_write_markdown(h, 0, stdout);
 *       int failed = history_n_flagged(h) > 0;
 *       json_decref(h);
 *   }
 *
 * Groups: runs of one sweep on one GPU model, in night order. A run whose environment differs
 * from the previous run's in a key of segment_on (the sweep file, the driver, the CUDA runtime,
 * tune's revision, the kernels' sources) starts a new segment: it is annotated with what changed
 * and judged only against runs of its own segment, never flagged across the change.
 *
 * The rule, for the value x of a series in a run (its best time) and the values before it in the
 * segment:
 *   window  = the previous `window` values; fewer than `min_runs`: insufficient
 *   b, s    = the window's median and robust deviation (1.4826 x its median absolute deviation)
 *   r, s_r  = the same of the segment's first `window` values (the level the segment started at)
 *   exceeds = x - b > max(threshold x b, k_mad x s)  or  x - r > max(threshold x r, k_mad x s_r)
 *             (improvements alike, downward)
 *   regression (improvement): this and the `consecutive` - 1 values before it exceed upward
 *   (downward); else unstable when 2 s > threshold x b (the window's own spread is wider than
 *   the threshold); else same.
 * A series with a best in the window and none in the newest run is `missing` (it failed).
 */
#ifndef TUNE_HISTORY_H
#define TUNE_HISTORY_H

#include <stdio.h>

#include <jansson.h>

#include "core/error.h"

typedef enum {
    HISTORY_SAME = 0,
    HISTORY_REGRESSION,
    HISTORY_IMPROVEMENT,
    HISTORY_UNSTABLE,
    HISTORY_INSUFFICIENT,
    HISTORY_MISSING,
    HISTORY_N_VERDICTS
} history_verdict;

/* "same", "regression", "improvement", "unstable", "insufficient", "missing". */
const char *history_verdict_str(history_verdict v);

/* The environment keys that start a segment (segment_on bits). */
enum {
    HISTORY_SEG_SWEEP = 1,   /* the sweep file's hash */
    HISTORY_SEG_DRIVER = 2,  /* the driver's version */
    HISTORY_SEG_RUNTIME = 4, /* the CUDA runtime */
    HISTORY_SEG_TOOL = 8,    /* tune's git revision */
    HISTORY_SEG_KERNELS = 16 /* the kernels' sources (meta.json key.kernels_hash) */
};
#define HISTORY_SEG_DEFAULT 31

typedef struct {
    const char *db;    /* the store */
    const char *sweep; /* only this sweep; NULL: every sweep */
    const char *since; /* only nights >= since (YYYY-MM-DD); NULL: all */
    const char *run;   /* a run folder: only its group, judged as the newest (the runs after it
                          left out); NULL: every group's newest */
    size_t window, min_runs, consecutive;
    double threshold_pct, k_mad;
    unsigned segment_on;
} history_options;

/* Defaults: window 7, min_runs 3, consecutive 2, threshold 3 %, k_mad 2, every segment key
 * (docs/history.md says how they were chosen). */
void history_options_init(history_options *o);
/* "sweep,driver,runtime,tool,kernels" (any of them, comma-separated; "none") into *out; 0, or -1
 * for an unknown key. */
int history_parse_segment_on(const char *s, unsigned *out);

/* The verdict on one value of a series. */
typedef struct {
    history_verdict verdict;
    int exceeds;         /* +1 / -1 / 0: the value alone exceeds the band upward / downward */
    double baseline;     /* the window's median (NAN when insufficient) */
    double lo, hi;       /* the band a value stays in to be the same */
    double change_pct;   /* (x - baseline) / baseline x 100 */
    double drift_pct;    /* (x - segment's level) / level x 100 */
    double spread_pct;   /* the window's robust deviation / baseline x 100 */
    size_t n_window;
} history_judgement;

/* The rule on one series: each value of x[0..n) (in run order) judged in turn, as history does,
 * into out[0..n); new_seg[i] non-zero where a segment starts at value i (NULL: one segment):
 * values before it are not compared with, and a run of exceeding values restarts there. */
void history_judge_series(const double *x, const unsigned char *new_seg, size_t n,
                          const history_options *o, history_judgement *out);

/* The history of the store o->db: a new tree (docs/history.md's JSON: tune_history, store,
 * generated, rule, groups[] {sweep, device, runs[], newest {run, counts}, series[] {shape, method,
 * points[] {run, time, winner, verdict, baseline, lo, hi, change_pct}, verdict {status,
 * change_pct, baseline, reason}}}). The store is only read. */
tune_status history_build(const history_options *o, json_t **out, tune_error *err);

/* The newest runs' verdicts as markdown: per group a summary line and a table of the series
 * judged other than same or insufficient, flagged ones first (all: every series). */
void history_write_markdown(const json_t *h, int all, FILE *f);

/* Series flagged in the groups' newest runs: regressions and missing. */
size_t history_n_flagged(const json_t *h);

#endif
