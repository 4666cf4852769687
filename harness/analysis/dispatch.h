/* dispatch.h - a dispatch rule: the whole configuration (method and every parameter value) for any
 * problem shape, built from measured runs, with its efficiency in-sample and left out.
 *
 *   results_rows rows; json_t *meta;
 *   dispatch_read(dirs, n_dirs, &rows, &meta, &err);       // checked, one sweep, deduplicated
 *   dispatch_options opt = {.tolerance = 0.01};            // the tuned methods, the axis found
 *   dispatch *d = dispatch_build(rows.rows, rows.n, meta, &opt, &err); // rows, meta outlive d
 *   size_t c = dispatch_lookup(d, &shape);                 // any shape, measured or not
 *   printf("%s\n", dispatch_config_method(d, c));          // "wgmma_ws"
 *   dispatch_write_markdown(d, stdout);
 *   dispatch_write_header(d, "comment", f, &err);          // static inline tune_dispatch_<name>()
 *   dispatch_free(d);
 *
 * The rule (docs/heuristics.md, "Dispatch rules"):
 *   - a shape is one combination of problem-axis values; one integer axis is the breakpoint axis
 *     (opt.axis, else the integer axis with the most distinct values, the first on a tie); the
 *     other axes make the outer shape. Only ok rows with a median time of the methods the rule may
 *     pick count; a configuration is a method and its parameter values.
 *   - per measured outer shape, a table of segments over the breakpoint axis: from each measured
 *     value, a configuration that was measured ok there and is within the tolerance of the best
 *     (time <= best * (1 + tolerance)). Consecutive measured values share a segment while one
 *     configuration is within tolerance on all of them (greedy from the smallest value: the
 *     fewest segments); among those, the configuration ok at the measured values on either side
 *     of the segment is preferred, then the one ok at the same values on most other outer shapes,
 *     then the fastest (sum of log ratios), then the first by identity. A break between two
 *     measured values a < b lies at their geometric midpoint: values >= ceil(sqrt(a * b)) take
 *     the upper segment (the arithmetic midpoint when a value is below 1). Values below the first
 *     measured one take the first segment, above the last the last.
 *   - a family with its own tile rules (family.h, `prune`; not a sweep with "family_rules": false):
 *     a value no run measured, between the smallest and the largest measured anywhere, takes the
 *     measured configuration of its segment's method that the family keeps and can run there,
 *     nearest to the segment's at its nearest measured value, in parameters and in the sweep's
 *     derived search features (its schedule) (dispatch_legal.c); the family must be registered.
 *   - an outer shape never measured takes the table of the nearest measured one: squared
 *     distance of log2(max(value, 1)) over the numeric axes that vary, 10^6 per string axis that
 *     differs; an exact match first, then the first nearest.
 *   - efficiency: geometric mean over shapes of best(s) / time(s, rule(s)); a choice not measured
 *     ok at s is a miss, counted and never scored. In-sample; leave-one-out over the breakpoint
 *     axis (each measured value of an outer shape with at least two, dropped and the rule rebuilt);
 *     leave-one-outer-out (each outer shape dropped whole: its shapes take the fallback). A
 *     target is met when there is no miss and the efficiency reaches it.
 */
#ifndef TUNE_DISPATCH_H
#define TUNE_DISPATCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "core/error.h"
#include "core/point.h"
#include "store/results.h"

#define DISPATCH_NONE ((size_t)-1)
#define DISPATCH_TARGET_LOO_AXIS 0.95  /* leave-one-out over the breakpoint axis */
#define DISPATCH_TARGET_LOO_OUTER 0.90 /* an outer shape never measured */

typedef struct dispatch dispatch;

typedef struct {
    const char *const *methods; /* the methods the rule may pick; NULL: the tuned ones */
    size_t n_methods;
    const char *axis;  /* the breakpoint axis; NULL: found */
    double tolerance;  /* e.g. 0.01 */
    const char *name;  /* the header's function is tune_dispatch_<name>; NULL: the sweep's name */
} dispatch_options;

/* Reads dirs[i]'s rows after their meta.json (store/meta.h: meta_check_folders: checked, one
 * sweep) and keeps the last row of each configuration (results_rows_dedup), as `tune report`
 * does. *rows is new (results_rows_free), *meta dirs[0]'s meta.json (new; NULL when absent). */
tune_status dispatch_read(const char *const *dirs, size_t n_dirs, results_rows *rows,
                          json_t **meta, tune_error *err);

/* Builds and evaluates the rule. rows and meta (may be NULL: roles then come from the rows: a
 * method whose rows have parameters is tuned) are borrowed and must outlive the rule. NULL with
 * err set (TUNE_ERR_INVALID) when: rows of two sweeps or with different problem axes; a method of
 * opt->methods not in the sweep or auxiliary; an --axis that is no integer problem axis; no ok
 * row of the methods; a parameter value that is not an integer; a name that is no C identifier. */
dispatch *dispatch_build(const result_row *rows, size_t n, const json_t *meta,
                         const dispatch_options *opt, tune_error *err);
void dispatch_free(dispatch *d);

/* The configuration the rule picks for a shape (its problem-axis values; other names ignored). */
size_t dispatch_lookup(const dispatch *d, const tune_point *shape);
const char *dispatch_config_method(const dispatch *d, size_t config);
/* The configuration's parameter values (borrowed; none for a baseline). */
const tune_point *dispatch_config_params(const dispatch *d, size_t config);

/* The measured shapes (with an ok row of the methods), sorted by outer shape then breakpoint. */
size_t dispatch_n_shapes(const dispatch *d);
const tune_point *dispatch_shape(const dispatch *d, size_t i);
const char *dispatch_axis(const dispatch *d); /* the breakpoint axis */

typedef struct {
    double efficiency; /* geometric mean over the scored shapes; NAN when none */
    size_t n;          /* shapes scored (misses excluded) */
    size_t misses;     /* choices not measured ok at the shape */
    double target;     /* 0 for in-sample */
    int meets_target;  /* no miss and efficiency >= target */
} dispatch_score;

typedef enum { DISPATCH_IN_SAMPLE, DISPATCH_LOO_AXIS, DISPATCH_LOO_OUTER } dispatch_eval;
dispatch_score dispatch_get_score(const dispatch *d, dispatch_eval which);

/* dispatch.json's object (new reference): name, sources, sweep, device, axes, breakpoint axis,
 * arguments, params, methods, tolerance, configs, the tables, the evaluation and per shape the
 * choices and times. sources may be NULL. */
json_t *dispatch_to_json(const dispatch *d, const char *const *sources, size_t n_sources);
/* dispatch.md: the evaluation, the configurations, the tables, the shapes. */
void dispatch_write_markdown(const dispatch *d, const char *const *sources, size_t n_sources,
                             FILE *f);
/* A self-contained C99 header: an enum of the methods, a struct of the configuration and
 * `static inline int tune_dispatch_<name>(<axes that vary, in axis order>, config *out)` that
 * fills *out and returns the method's enum value. comment (may be NULL, may hold newlines) is
 * its provenance. TUNE_ERR_INVALID when a parameter value does not fit an int. */
tune_status dispatch_write_header(const dispatch *d, const char *comment, FILE *f,
                                  tune_error *err);

#endif
