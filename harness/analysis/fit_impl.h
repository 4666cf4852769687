/* fit_impl.h - what the files of the fit module share (not for other modules). */
#ifndef TUNE_FIT_IMPL_H
#define TUNE_FIT_IMPL_H

#include <ctype.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/fit.h"
#include "core/expr.h"

struct fit_data {
    char *param, *method; /* copies */
    tune_objective objective; /* what a row's cost is (fit.h) */
    size_t n_unranked;        /* ok tuned rows without a cost under the objective (no energy) */
    size_t n_axes;
    const char *axes[TUNE_MAX_AXES]; /* borrowed from the rows */
    int axis_int[TUNE_MAX_AXES];     /* every shape has an integer value */
    int axis_varies[TUNE_MAX_AXES];
    size_t n_shapes, n_unmeasured;
    tune_point *shapes;
    int64_t *ax; /* n_shapes x n_axes: integer axis values (0 for other types) */
    size_t n_values;
    int64_t *values;   /* sorted distinct measured values of the parameter */
    double *cost;      /* n_shapes x n_values: the best cost of the value; INFINITY: not measured */
    double *lr;        /* log(best / time), NAN when not measured */
    double *best_cost; /* per shape */
    int64_t *best_value;
    /* features: integer axes that vary, usable by the rule families */
    size_t n_feat;
    size_t feat_axis[TUNE_MAX_AXES];
    int64_t *feat_vals[TUNE_MAX_AXES]; /* sorted distinct values */
    size_t n_feat_vals[TUNE_MAX_AXES];
};
/* fit_data.c: sorts v[0..n) and removes duplicates; returns the new count. */
size_t fit_unique_i64(int64_t *v, size_t n);
/* fit_output.c: the unit a cost is printed in ("us", "uJ", "uJ*us"), its scale from the
 * objective's SI unit, and the JSON key's suffix ("time_us", "energy_uj", "edp_uj_us"). */
typedef struct {
    const char *unit;
    double scale;
    const char *key;
} fit_cost_unit;
fit_cost_unit fit_cost_unit_of(tune_objective obj);
/* The index of value v among d's values, or FIT_NONE. */
size_t fit_value_index(const fit_data *d, int64_t v);

#endif
