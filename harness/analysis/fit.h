/* fit.h - heuristics for one tuning parameter over the problem axes, fitted on result rows.
 *
 *   fit_data *d = fit_data_build(rows, n, "chunk", "custom", OBJECTIVE_TIME, &err);  // rows outlive d
 *   fit_result r;
 *   fit_run(d, NULL, &r, &err);                  // every family's best rule, the chosen one
 *   fit_write_markdown(d, &r, stdout);
 *   const fit_candidate *c = &r.candidates[r.chosen];
 *   printf("%s: %.1f %%\n", c->eval.rule, 100 * c->eval.efficiency);  // "min(64, 8192 / k)"
 *   fit_write_header(d, c->eval.rule, "fitted on results/sparq/...", f, &err);
 *   fit_result_release(&r);
 *
 *   fit_eval ev;                                 // a given rule, e.g. fitted on another GPU
 *   fit_evaluate(d, "min(64, 8192 / k)", &ev, &err);
 *   fit_eval_release(&ev);
 *   fit_data_free(d);
 *
 * Definitions (docs/heuristics.md has the whole method):
 *   - a shape is one combination of problem-axis values; the tuned rows are the rows that have the
 *     parameter (of `method` when given); only tuned rows with status ok and a cost count.
 *   - a row's cost is what the objective minimises (core/objective.h, store/results.h:
 *     results_row_cost): its median time (OBJECTIVE_TIME), its energy per call or the
 *     energy-delay product. Under energy and edp an ok row without energy_j has no cost: it is
 *     left out and counted (fit_data_n_unranked), never ranked by its time instead.
 *   - best(s) = the smallest cost of shape s; cost(s, v) = the smallest cost of the rows of s
 *     whose parameter is v (the other parameters at their best for v). A value v is measured on s
 *     when such a row exists.
 *   - a rule is an integer expression of the sweep expression language over the problem axes; on
 *     shape s it picks rule(s). It is infeasible on s when rule(s) was not measured there (or the
 *     expression fails there: division by zero, floor_pow2 of 0). Infeasible shapes are counted
 *     and listed, never scored: efficiencies are over the feasible shapes.
 *   - efficiency = geometric mean over feasible shapes of best(s) / cost(s, rule(s)), in (0, 1].
 *   - leave-one-shape-out (LOO) efficiency of a family: for each shape s, fit the family on the
 *     other shapes and score the fitted rule on s; geometric mean over the left-out shapes where it
 *     is feasible (the others are counted).
 * Fitting ranks rules first by the number of infeasible shapes, then by efficiency; the chosen
 * rule is the best rule of the first family (simplest first) that is feasible on every shape and
 * reaches the target efficiency, or else the best rule of all families.
 */
#ifndef TUNE_FIT_H
#define TUNE_FIT_H

#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "core/objective.h"
#include "store/results.h"

#define FIT_NONE ((size_t)-1)

/* Rule families, simplest first. A family's best rule is printed in its simplest form: a
 * threshold whose two sides agree is a constant, a tree without a second split a threshold. */
typedef enum {
    FIT_FAMILY_CONSTANT,  /* c */
    FIT_FAMILY_INVERSE,   /* min(c1, c2 / axis), max(c1, c2 / axis) */
    FIT_FAMILY_LINEAR,    /* min/max(c1, c2 * axis), min/max(c1, axis / c2) */
    FIT_FAMILY_POW2,      /* floor_pow2(...) and ceil_pow2(...) of the two families above */
    FIT_FAMILY_THRESHOLD, /* (axis >= t) * a + (axis < t) * b */
    FIT_FAMILY_TREE,      /* two levels of thresholds */
    FIT_N_FAMILIES
} fit_family;

/* "constant", "min/max(c1, c2 / axis)", ... Never NULL. */
const char *fit_family_str(fit_family f);

typedef struct fit_data fit_data;

/* New table of the tuned rows of param: shapes, measured values, their costs under obj. method
 * NULL means every method whose rows have the parameter. rows are borrowed and must outlive the
 * table. NULL with err set (TUNE_ERR_INVALID) when no ok row has the parameter (or none has the
 * energy obj needs: the message says so), a value of the parameter is not an integer, or rows
 * disagree on the problem axes. */
fit_data *fit_data_build(const result_row *rows, size_t n, const char *param, const char *method,
                         tune_objective obj, tune_error *err);
void fit_data_free(fit_data *d);

const char *fit_data_param(const fit_data *d);
const char *fit_data_method(const fit_data *d);    /* NULL when not restricted */
size_t fit_data_n_shapes(const fit_data *d);       /* shapes with at least one ok tuned row */
size_t fit_data_n_unmeasured(const fit_data *d);   /* shapes whose tuned rows all failed */
/* ok tuned rows left out because they lack what the objective needs (energy_j) */
size_t fit_data_n_unranked(const fit_data *d);
tune_objective fit_data_objective(const fit_data *d);
size_t fit_data_n_axes(const fit_data *d);
const char *fit_data_axis(const fit_data *d, size_t i);
/* Shape i's problem-axis values (borrowed), sorted like report.h sorts shapes. */
const tune_point *fit_data_shape(const fit_data *d, size_t i);
/* "g=256 k=64": the axes that vary across shapes (all axes when none does) into buf. */
const char *fit_data_shape_name(const fit_data *d, size_t i, char *buf, size_t size);
int64_t fit_data_best_value(const fit_data *d, size_t shape);
/* best(shape) and cost(shape, value) in the objective's unit (objective_unit: s, J, J*s);
 * INFINITY when value was not measured on the shape. */
double fit_data_best_cost(const fit_data *d, size_t shape);
double fit_data_cost(const fit_data *d, size_t shape, int64_t value);

typedef struct {
    int64_t best_value;
    double best_cost;   /* in the objective's unit (s, J or J*s) */
    int evaluated;      /* 0 when the expression failed on this shape (then infeasible) */
    int64_t rule_value; /* when evaluated */
    int feasible;       /* rule_value was measured on this shape */
    double rule_cost;   /* likewise; NAN when infeasible */
    double efficiency;  /* best_cost / rule_cost; NAN when infeasible */
} fit_shape_eval;

typedef struct {
    char *rule;          /* canonical text (expr_to_string); new */
    double efficiency;   /* geometric mean over feasible shapes; NAN when none is */
    size_t n_feasible, n_infeasible;
    size_t worst;        /* shape of the lowest efficiency; FIT_NONE when none is feasible */
    double worst_efficiency;
    fit_shape_eval *shapes; /* one per shape of the data; new */
    size_t n_shapes;
} fit_eval;

/* Scores the rule text on every shape. TUNE_ERR_PARSE for bad syntax, TUNE_ERR_INVALID when the
 * rule reads a name that is not a problem axis or gives a string. Evaluation errors on a shape
 * make that shape infeasible. out is filled (release it) only on TUNE_OK. */
tune_status fit_evaluate(const fit_data *d, const char *rule, fit_eval *out, tune_error *err);
void fit_eval_release(fit_eval *ev);

typedef struct {
    double target; /* efficiency the chosen rule must reach; <= 0 means 0.98 */
    int no_loo;    /* skip the leave-one-shape-out fits */
} fit_options;

typedef struct {
    fit_family family;
    fit_eval eval;        /* eval.rule NULL when the family has no rule (no usable axis) */
    double loo;           /* NAN when not computed or no left-out shape was feasible */
    size_t loo_n;         /* left-out shapes scored */
    size_t loo_infeasible;
    int meets_target;     /* feasible everywhere and efficiency >= target */
} fit_candidate;

typedef struct {
    double target;
    fit_candidate candidates[FIT_N_FAMILIES];
    size_t chosen; /* index into candidates; FIT_NONE when no family has a rule */
} fit_result;

/* Fits every family. opt may be NULL. out is filled (release it) only on TUNE_OK. */
tune_status fit_run(const fit_data *d, const fit_options *opt, fit_result *out, tune_error *err);
void fit_result_release(fit_result *r);

/* Markdown: the candidates table, the chosen rule and its per-shape table. */
void fit_write_markdown(const fit_data *d, const fit_result *r, FILE *f);
/* Markdown: the rule's summary, its infeasible shapes and per-shape table. */
void fit_eval_write_markdown(const fit_data *d, const fit_eval *ev, FILE *f);

/* heuristics.json's object (new reference): param, method, objective, target, sources, axes,
 * n_shapes, the chosen rule with its family, efficiency, worst shape, LOO, "candidates" and
 * "shapes" (per shape: its axes, best value, rule value, the two costs, efficiency). The costs'
 * keys say the objective and unit: "best_time_us" and "rule_time_us" (time), "best_energy_uj"
 * and "rule_energy_uj" (energy), "best_edp_uj_us" and "rule_edp_uj_us" (edp). sources may be
 * NULL. */
struct json_t *fit_result_to_json(const fit_data *d, const fit_result *r,
                                  const char *const *sources, size_t n_sources);
/* The same for one evaluated rule: param, rule, efficiency, worst, infeasible, shapes. */
struct json_t *fit_eval_to_json(const fit_data *d, const fit_eval *ev, const char *const *sources,
                                size_t n_sources);

/* Writes a C header defining `static inline int tune_pick_<param>(int64_t axis, ...)` (the axes
 * the rule reads, in problem-axis order) that computes the rule with C integer arithmetic;
 * comment (may be NULL, may hold newlines) says where the rule comes from. TUNE_ERR_INVALID when
 * the rule reads a non-integer axis or uses floats, strings, log2, or min/max of more than two
 * arguments. */
tune_status fit_write_header(const fit_data *d, const char *rule, const char *comment, FILE *f,
                             tune_error *err);

/* Reads and concatenates dirs[i]/raw.jsonl, after their meta.json (store/meta.h:
 * meta_check_folders: checked, one sweep). *rows is new (results_rows_free); empty on error. */
tune_status fit_read_results(const char *const *dirs, size_t n_dirs, results_rows *rows,
                             tune_error *err);

#endif
