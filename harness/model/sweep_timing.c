/* sweep_timing.c - part of the sweep module (model/sweep.h): the "timing" and "report" objects. */
#include "model/sweep.h"
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/jsonloc.h"
#include "model/sweep_impl.h"

static const char *const sweep_timing_keys[] = {
    "warmup", "reps",     "flush_l2", "fresh_indices", "stop",       "mode",
    "batch",  "rel_stderr", "min_reps", "max_reps",      "min_time_s", "max_time_s", NULL};
/* In the order of sweep_timing_stop and sweep_timing_mode. */
static const char *const sweep_timing_stops[] = {"fixed", "adaptive", NULL};
static const char *const sweep_timing_modes[] = {"cold", "hot", "graph", NULL};
/* Keys that only stop "adaptive" reads. */
static const char *const sweep_timing_adaptive_keys[] = {"rel_stderr", "min_reps",   "max_reps",
                                                         "min_time_s", "max_time_s", NULL};
#define SWEEP_TIMING_MAX_BATCH 1000
#define SWEEP_TIMING_MAX_REPS 100000 /* every sample keeps a pair of CUDA events */
static const char *const sweep_report_keys[] = {"rows", "cols", NULL};

/* ---- timing and report ---- */

static int sweep_timing_int(const sweep_ctx *cx, json_t *obj, const char *key, int64_t min,
                            int64_t max, int *out)
{
    char p[SWEEP_PATH_SIZE];
    json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    sweep_path_key(p, "$.timing", key);
    if (!json_is_integer(v))
        return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "expected an integer for timing.%s, got %s", key, sweep_json_kind(v));
    int64_t x = (int64_t)json_integer_value(v);
    if (x < min)
        return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "expected an integer >= %" PRId64 " for timing.%s, got %" PRId64, min,
                          key, x);
    if (x > max)
        return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "expected an integer <= %" PRId64 " for timing.%s, got %" PRId64, max,
                          key, x);
    *out = (int)x;
    return 0;
}

/* A number (integer or real) in (lo, hi) or [lo, hi), per lo_open. */
static int sweep_timing_num(const sweep_ctx *cx, json_t *obj, const char *key, double lo,
                            int lo_open, double hi, double *out)
{
    char p[SWEEP_PATH_SIZE];
    json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    sweep_path_key(p, "$.timing", key);
    if (!json_is_number(v))
        return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "expected a number for timing.%s, got %s", key, sweep_json_kind(v));
    double x = json_number_value(v);
    if (!(lo_open ? x > lo : x >= lo) || !(x < hi))
        return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "expected a number in %s%g, %g) for timing.%s, got %g",
                          lo_open ? "(" : "[", lo, hi, key, x);
    *out = x;
    return 0;
}

static int sweep_timing_bool(const sweep_ctx *cx, json_t *obj, const char *key, int *out)
{
    char p[SWEEP_PATH_SIZE];
    json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return sweep_fail(cx, TUNE_ERR_INVALID, sweep_path_key(p, "$.timing", key), JSONLOC_VALUE,
                          "expected a boolean for timing.%s, got %s", key, sweep_json_kind(v));
    *out = json_is_true(v);
    return 0;
}

/* One of choices (NULL-terminated) into *out as its index. */
static int sweep_timing_choice(const sweep_ctx *cx, json_t *obj, const char *key,
                               const char *const *choices, int *out)
{
    char p[SWEEP_PATH_SIZE], list[SWEEP_LIST_SIZE];
    json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    sweep_path_key(p, "$.timing", key);
    if (json_is_string(v))
        for (int i = 0; choices[i]; i++)
            if (strcmp(choices[i], json_string_value(v)) == 0) {
                *out = i;
                return 0;
            }
    sweep_join_list(list, sizeof list, choices);
    if (!json_is_string(v))
        return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "expected one of %s for timing.%s, got %s", list, key,
                          sweep_json_kind(v));
    return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                      "expected one of %s for timing.%s, got '%s'", list, key,
                      json_string_value(v));
}

/* Keys that the chosen stop and mode do not read, and combinations that contradict each other,
 * are errors rather than silently ignored settings. */
static int sweep_timing_consistent(const sweep_ctx *cx, json_t *v, const sweep_timing *t)
{
    char p[SWEEP_PATH_SIZE];
    const char *mode = sweep_timing_modes[t->mode];
    if (t->stop == SWEEP_TIMING_STOP_FIXED) {
        for (size_t i = 0; sweep_timing_adaptive_keys[i]; i++)
            if (json_object_get(v, sweep_timing_adaptive_keys[i]))
                return sweep_fail(cx, TUNE_ERR_INVALID,
                                  sweep_path_key(p, "$.timing", sweep_timing_adaptive_keys[i]),
                                  JSONLOC_KEY,
                                  "timing.%s applies to stop 'adaptive' only (stop is 'fixed'); "
                                  "add \"stop\": \"adaptive\" or remove it",
                                  sweep_timing_adaptive_keys[i]);
    } else if (json_object_get(v, "reps")) {
        return sweep_fail(cx, TUNE_ERR_INVALID, sweep_path_key(p, "$.timing", "reps"), JSONLOC_KEY,
                          "timing.reps applies to stop 'fixed' only; stop 'adaptive' takes "
                          "min_reps and max_reps");
    }
    if (t->stop == SWEEP_TIMING_STOP_ADAPTIVE && t->min_reps > t->max_reps)
        return sweep_fail(cx, TUNE_ERR_INVALID,
                          sweep_path_key(p, "$.timing",
                                         json_object_get(v, "min_reps") ? "min_reps"
                                                                        : "max_reps"),
                          JSONLOC_VALUE, "timing.min_reps (%d) exceeds timing.max_reps (%d)",
                          t->min_reps, t->max_reps);
    if (t->stop == SWEEP_TIMING_STOP_ADAPTIVE && t->min_time_s > t->max_time_s)
        return sweep_fail(cx, TUNE_ERR_INVALID,
                          sweep_path_key(p, "$.timing",
                                         json_object_get(v, "min_time_s") ? "min_time_s"
                                                                          : "max_time_s"),
                          JSONLOC_VALUE,
                          "timing.min_time_s (%g) exceeds timing.max_time_s (%g): the time-out "
                          "would always end the measurement first",
                          t->min_time_s, t->max_time_s);
    if (json_object_get(v, "batch") && t->mode != SWEEP_TIMING_MODE_GRAPH)
        return sweep_fail(cx, TUNE_ERR_INVALID, sweep_path_key(p, "$.timing", "batch"),
                          JSONLOC_KEY, "timing.batch applies to mode 'graph' only (mode is '%s')",
                          mode);
    json_t *fl = json_object_get(v, "flush_l2");
    if (fl && json_object_get(v, "mode")) {
        if (json_is_true(fl) && t->mode == SWEEP_TIMING_MODE_HOT)
            return sweep_fail(cx, TUNE_ERR_INVALID, sweep_path_key(p, "$.timing", "flush_l2"),
                              JSONLOC_VALUE,
                              "flush_l2: true contradicts mode 'hot' (hot never flushes the L2); "
                              "remove flush_l2");
        if (json_is_true(fl) && t->mode == SWEEP_TIMING_MODE_GRAPH)
            return sweep_fail(cx, TUNE_ERR_INVALID, sweep_path_key(p, "$.timing", "flush_l2"),
                              JSONLOC_VALUE,
                              "flush_l2: true contradicts mode 'graph' (a replay runs its batch "
                              "of launches back to back, so graph mode is hot); remove flush_l2");
        if (!json_is_true(fl) && t->mode == SWEEP_TIMING_MODE_COLD)
            return sweep_fail(cx, TUNE_ERR_INVALID, sweep_path_key(p, "$.timing", "flush_l2"),
                              JSONLOC_VALUE,
                              "flush_l2: false contradicts mode 'cold' (cold flushes the L2 "
                              "before every rep); use \"mode\": \"hot\"");
    }
    return 0;
}

int sweep_parse_timing(const sweep_ctx *cx, json_t *root, sweep *sw)
{
    sweep_timing t = {.warmup = 10,
                      .reps = 100,
                      .flush_l2 = 1,
                      .fresh_indices = 1,
                      .stop = SWEEP_TIMING_STOP_FIXED,
                      .mode = SWEEP_TIMING_MODE_COLD,
                      .batch = 0,
                      .rel_stderr = 0.005,
                      .min_reps = 10,
                      .max_reps = 10000,
                      .min_time_s = 0.005,
                      .max_time_s = 1.0};
    json_t *v = json_object_get(root, "timing");
    sw->timing = t;
    if (!v)
        return 0;
    int stop = (int)t.stop, mode = (int)t.mode;
    if (sweep_expect_object(cx, v, "$.timing") != 0 ||
        sweep_check_keys(cx, v, "$.timing", sweep_timing_keys) != 0 ||
        sweep_timing_int(cx, v, "warmup", 0, INT_MAX, &t.warmup) != 0 ||
        sweep_timing_int(cx, v, "reps", 1, INT_MAX, &t.reps) != 0 ||
        sweep_timing_bool(cx, v, "flush_l2", &t.flush_l2) != 0 ||
        sweep_timing_bool(cx, v, "fresh_indices", &t.fresh_indices) != 0 ||
        sweep_timing_choice(cx, v, "stop", sweep_timing_stops, &stop) != 0 ||
        sweep_timing_choice(cx, v, "mode", sweep_timing_modes, &mode) != 0 ||
        sweep_timing_int(cx, v, "batch", 0, SWEEP_TIMING_MAX_BATCH, &t.batch) != 0 ||
        sweep_timing_num(cx, v, "rel_stderr", 0, 1, 1, &t.rel_stderr) != 0 ||
        sweep_timing_int(cx, v, "min_reps", 2, SWEEP_TIMING_MAX_REPS, &t.min_reps) != 0 ||
        sweep_timing_int(cx, v, "max_reps", 2, SWEEP_TIMING_MAX_REPS, &t.max_reps) != 0 ||
        sweep_timing_num(cx, v, "min_time_s", 0, 0, 3600, &t.min_time_s) != 0 ||
        sweep_timing_num(cx, v, "max_time_s", 0, 1, 3600, &t.max_time_s) != 0)
        return -1;
    t.stop = (sweep_timing_stop)stop;
    /* The old boolean: "flush_l2": false alone means hot. */
    if (!json_object_get(v, "mode") && !t.flush_l2)
        mode = SWEEP_TIMING_MODE_HOT;
    t.mode = (sweep_timing_mode)mode;
    if (sweep_timing_consistent(cx, v, &t) != 0)
        return -1;
    t.flush_l2 = t.mode == SWEEP_TIMING_MODE_COLD;
    sw->timing = t;
    return 0;
}

static int sweep_report_has(const sweep *sw, const char *name)
{
    for (size_t i = 0; i < sw->n_report_rows; i++)
        if (strcmp(sw->report_rows[i], name) == 0)
            return 1;
    for (size_t i = 0; i < sw->n_report_cols; i++)
        if (strcmp(sw->report_cols[i], name) == 0)
            return 1;
    return 0;
}

/* report.rows or report.cols: distinct problem axes, none used twice in the report. */
static int sweep_report_list(const sweep_ctx *cx, json_t *obj, sweep *sw, const char *key,
                             char ***out, size_t *n_out)
{
    char path[SWEEP_PATH_SIZE], p[SWEEP_PATH_SIZE], list[SWEEP_LIST_SIZE];
    json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    sweep_path_key(path, "$.report", key);
    if (!json_is_array(v))
        return sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "expected an array of problem axes, got %s", sweep_json_kind(v));
    size_t n = json_array_size(v);
    if (!(*out = calloc(n ? n : 1, sizeof **out)))
        return sweep_nomem(cx);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(v, i);
        sweep_path_index(p, path, i);
        if (!json_is_string(e))
            return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE, "expected a string, got %s",
                              sweep_json_kind(e));
        const char *a = json_string_value(e);
        if (!sweep_find_axis(sw->fop->axes, sw->fop->n_axes, a))
            return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                              "unknown problem axis '%s' for op %s (expected one of: %s)", a,
                              sw->op,
                              sweep_join_names(list, sizeof list, sw->fop->axes,
                                               sizeof sw->fop->axes[0], sw->fop->n_axes));
        if (sweep_report_has(sw, a))
            return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                              "problem axis '%s' appears twice in the report", a);
        if (!((*out)[i] = sweep_strdup(cx, a)))
            return -1;
        (*n_out)++;
    }
    return 0;
}

int sweep_parse_report(const sweep_ctx *cx, json_t *root, sweep *sw)
{
    json_t *v = json_object_get(root, "report");
    if (!v)
        return 0;
    if (sweep_expect_object(cx, v, "$.report") != 0 ||
        sweep_check_keys(cx, v, "$.report", sweep_report_keys) != 0)
        return -1;
    if (sweep_report_list(cx, v, sw, "rows", &sw->report_rows, &sw->n_report_rows) != 0)
        return -1;
    return sweep_report_list(cx, v, sw, "cols", &sw->report_cols, &sw->n_report_cols);
}

