/* roofline_report.h - the prediction-error report of `tune roofline`: per results folder, model
 * and method, how far the measured rows are from their roofline times.
 *
 *   roofline_report *r = roofline_report_new();
 *   roofline_report_add(r, "calibrated", "run1", "NVIDIA H200", &c, rows, n, pred, bound, &err);
 *   roofline_report_write_markdown(r, stdout);
 *   roofline_report_free(r);
 */
#ifndef TUNE_ROOFLINE_REPORT_H
#define TUNE_ROOFLINE_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "analysis/roofline.h"
#include "analysis/roofline_model.h"
#include "core/error.h"
#include "store/results.h"

typedef struct roofline_report roofline_report;

roofline_report *roofline_report_new(void);
void roofline_report_free(roofline_report *r);
/* Adds the rows of one results folder (source: its name) on one device, predicted by one model
 * (model: a label such as "calibrated" or "datasheet"). For every method of the rows, two groups:
 * all rows with status ok, and the best (fastest ok) row of each shape (problem-axis values).
 * pred and bound are those of roofline_predict_rows. Strings are copied; rows are only read
 * during the call. */
tune_status roofline_report_add(roofline_report *r, const char *model, const char *source,
                                const char *device, const roofline_ceilings *c,
                                const result_row *rows, size_t n, const double *pred,
                                const roofline_bound *bound, tune_error *err);

/* Adds the same groups for the additive time model (roofline_model.h): pred[i] its time for row
 * i, terms[i] its terms (the dominant one is counted per group). op: "family op" of the rows. */
tune_status roofline_report_add_model(roofline_report *r, const char *model, const char *source,
                                      const char *device, const char *op,
                                      const roofline_ceilings *c, const result_row *rows,
                                      size_t n, const double *pred, const roofline_terms *terms,
                                      tune_error *err);

typedef struct {
    const char *model, *source, *device, *method;
    const char *selection; /* "all" or "best" */
    const char *op;        /* "family op" (time model groups); "" otherwise */
    int additive;          /* 1: the time model (n_bound counts roofline_term); 0: the roofline */
    roofline_error err;
    size_t n_bound[5];       /* rows by bound (roofline_bound) or dominant term (roofline_term) */
    const char *worst_shape; /* "g=256 k=64 ..." of the worst row; borrowed from the report */
    double worst_pred, worst_meas;
} roofline_report_group;

size_t roofline_report_n_groups(const roofline_report *r);
const roofline_report_group *roofline_report_group_at(const roofline_report *r, size_t i);

/* Per source, a heading "## <source> (<device>)" and a Markdown table: model, method (selection),
 * rows, geo-mean and worst error, the worst row with its times, mean % of roofline, rows by bound;
 * then the time model's table ("### time model: <op>"): the same with % of model and the rows by
 * dominant term. */
void roofline_report_write_markdown(const roofline_report *r, FILE *f);
/* roofline.json: {"models": [{"model", "source", "device", "ceilings": {...}}], "groups": [...],
 * "rows": [{"model", "source", "index", "roofline_time", "ratio", "bound"}]} for every row with
 * status ok (index: 0-based line of the row in the source's raw.jsonl). extra_json (may be NULL:
 * the text of a JSON object) gives the first members. */
tune_status roofline_report_write_json(const roofline_report *r, const char *path,
                                       const char *extra_json, tune_error *err);

#endif
