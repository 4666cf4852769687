/* report_impl.h - what the files of the report module share (not for other modules). */
#ifndef TUNE_REPORT_IMPL_H
#define TUNE_REPORT_IMPL_H

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/report.h"

#define REPORT_N_STATUS ((size_t)RESULT_COMPILED + 1)
#define REPORT_CELL 64

typedef struct {
    expr_value key[TUNE_MAX_AXES]; /* in report axis order; strings borrowed from the rows */
    size_t n_keys;
    const result_row *best;  /* NULL when no tuned row ran ok */
    const result_row **base; /* per baseline: its fastest ok row or NULL (in report->base_store) */
    int retime; /* REPORT_RETIME_* */
} report_shape;

/* A shape's re-timing: none, its winner decided by the interleaved re-timing, a statistical tie */
enum { REPORT_RETIME_NONE = 0, REPORT_RETIME_WIN, REPORT_RETIME_TIE };

typedef struct {
    const char *name; /* borrowed from a row */
    size_t counts[REPORT_N_STATUS];
    int tuned; /* some row of the method has parameters */
} report_method;

typedef enum { REPORT_RAW, REPORT_F0, REPORT_F1, REPORT_F2, REPORT_SPEEDUP } report_style;

typedef struct {
    char title[160];
    size_t field;
    report_style style;
    int marks_ties; /* names the configuration: a tie's cell is marked "*" */
} report_table;

/* One value of a shape's CSV/JSON line. */
typedef struct {
    enum { REPORT_NONE, REPORT_VALUE, REPORT_NUM } kind;
    expr_value v;
    double d;
} report_cell;

/* Skipped configurations of one reason category: the reason up to its first ':' ("tile does
 * not divide the problem", "shared memory over the device limit", ...). */
typedef struct {
    char category[64];
    size_t count;
} report_skip;

struct report {
    char *title;
    size_t n_axes, n_params;
    const char *axes[TUNE_MAX_AXES];   /* borrowed from the first row */
    const char *params[TUNE_MAX_AXES]; /* borrowed from the rows */
    report_method *methods;
    size_t n_methods, n_tuned;
    size_t *baselines; /* indices into methods */
    size_t n_baselines;
    report_shape *shapes;
    size_t n_shapes;
    const result_row **base_store;
    size_t row_axes[TUNE_MAX_AXES], n_row_axes;
    size_t col_axes[TUNE_MAX_AXES], n_col_axes;
    size_t group_axes[TUNE_MAX_AXES], n_group_axes;
    size_t fixed_axes[TUNE_MAX_AXES], n_fixed_axes;
    char **fields; /* CSV / JSON column names, owned */
    size_t n_fields;
    report_table *tables;
    size_t n_tables;
    int has_retime; /* the CSV / JSON "retime" column (the last field) */
    report_skip *skips; /* skipped rows by reason category */
    size_t n_skips;
    json_t *search;        /* a searched run's meta.json block (a copy with its "line"); NULL */
    char search_line[256]; /* "searched: random, budget 10 %: ..." or "" */
    tune_objective objective; /* what each shape's best is ranked by */
};
/* report_markdown.c: a searched run's candidates measured per shape. */
void report_write_search(const report *r, FILE *f);
/* Compares two shapes on the axes idx[0..n). */
int report_cmp_on(const report_shape *a, const report_shape *b, const size_t *idx, size_t n);
/* Field f (a CSV / JSON column) of shape s. */
report_cell report_field(const report *r, const report_shape *s, size_t f);

#endif
