/* fit_data.c - part of the fit module (analysis/fit.h). */
#include "analysis/fit.h"
#include <ctype.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/expr.h"
#include "analysis/fit_impl.h"

/* ---- Building the table ---- */

typedef struct {
    const result_row *row;
    const fit_data *d;
} row_ref;

static int compare_shapes(const void *pa, const void *pb)
{
    const row_ref *a = pa, *b = pb;
    for (size_t i = 0; i < a->d->n_axes; i++) {
        expr_value x, y;
        point_get(&a->row->values, a->d->axes[i], &x);
        point_get(&b->row->values, a->d->axes[i], &y);
        int c = expr_value_order(x, y);
        if (c)
            return c;
    }
    return 0;
}

static int compare_i64(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

/* Sorts and removes duplicates; returns the new count. */
size_t fit_unique_i64(int64_t *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, compare_i64);
    size_t m = 1;
    for (size_t i = 1; i < n; i++)
        if (v[i] != v[m - 1])
            v[m++] = v[i];
    return m;
}

static int param_value(const result_row *r, const char *param, int64_t *out)
{
    expr_value v;
    if (point_get(&r->values, param, &v) != 0)
        return 1; /* absent: a baseline */
    if (v.type == EXPR_INT) {
        *out = v.i;
        return 0;
    }
    if (v.type == EXPR_FLOAT && v.f == floor(v.f) && fabs(v.f) < 9e18) {
        *out = (int64_t)v.f;
        return 0;
    }
    return -1;
}

size_t fit_value_index(const fit_data *d, int64_t v)
{
    size_t lo = 0, hi = d->n_values;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->values[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < d->n_values && d->values[lo] == v ? lo : FIT_NONE;
}

/* The row's cost under d's objective (fit.h); NAN when the row does not count. */
static double row_cost(const fit_data *d, const result_row *r)
{
    return results_row_cost(r, d->objective);
}

static int row_counts(const fit_data *d, const result_row *r)
{
    return isfinite(row_cost(d, r));
}

void fit_data_free(fit_data *d)
{
    if (!d)
        return;
    free(d->param);
    free(d->method);
    free(d->shapes);
    free(d->ax);
    free(d->values);
    free(d->cost);
    free(d->lr);
    free(d->best_cost);
    free(d->best_value);
    for (size_t f = 0; f < d->n_feat; f++)
        free(d->feat_vals[f]);
    free(d);
}

static fit_data *build_fail(fit_data *d, row_ref *refs, tune_error *err, tune_status code,
                            const char *msg, const char *name)
{
    tune_error_set(err, code, "fit", msg, name);
    free(refs);
    fit_data_free(d);
    return NULL;
}

/* The rows of the method (all when NULL) with an integer value of param into refs, sorted by
 * shape; *n_ok counts those that have a cost, d->n_unranked those ok and timed without one (no
 * energy under energy or edp). Sets the problem axes from the first. */
static tune_status collect_rows(fit_data *d, const result_row *rows, size_t n, const char *param,
                                const char *method, row_ref *refs, size_t *n_refs, size_t *n_ok,
                                tune_error *err)
{
    const result_row *first = NULL;
    *n_refs = *n_ok = 0;
    for (size_t i = 0; i < n; i++) {
        const result_row *r = &rows[i];
        if (method && (!r->method || strcmp(r->method, method) != 0))
            continue;
        int64_t v;
        int pv = param_value(r, param, &v);
        if (pv > 0)
            continue;
        if (pv < 0)
            return tune_error_set(err, TUNE_ERR_INVALID, "fit",
                                  "parameter '%s' has a value that is not an integer", param);
        if (!first) {
            first = r;
            d->n_axes = r->n_axes;
            for (size_t a = 0; a < r->n_axes; a++)
                d->axes[a] = r->values.names[a];
        }
        if (r->n_axes != d->n_axes)
            return tune_error_set(err, TUNE_ERR_INVALID, "fit", "rows have different problem axes");
        for (size_t a = 0; a < d->n_axes; a++)
            if (point_get(&r->values, d->axes[a], NULL) != 0)
                return tune_error_set(err, TUNE_ERR_INVALID, "fit",
                                      "a row lacks the problem axis '%s'", d->axes[a]);
        refs[(*n_refs)++] = (row_ref){r, d};
        *n_ok += (size_t)row_counts(d, r);
        if (!row_counts(d, r) && isfinite(results_row_cost(r, OBJECTIVE_TIME)))
            d->n_unranked++;
    }
    if (*n_ok == 0 && d->n_unranked)
        return tune_error_set(err, TUNE_ERR_INVALID, "fit",
                              "no row with the parameter '%s' can be ranked by %s: its %zu ok "
                              "rows have no energy per call (energy_j); measure it with --energy, "
                              "or fit by time",
                              param, objective_name(d->objective), d->n_unranked);
    if (*n_ok == 0)
        return tune_error_set(err, TUNE_ERR_INVALID, "fit",
                              "no ok row has the parameter '%s'%s%s%s", param,
                              method ? " (method " : "", method ? method : "", method ? ")" : "");
    qsort(refs, *n_refs, sizeof *refs, compare_shapes);
    return TUNE_OK;
}

/* The shape of refs[i..end) (one run of equal axis values): its best cost per value, the best
 * value, the log-ratios; counted as unmeasured when none of its rows has a cost. */
static void add_shape(fit_data *d, const row_ref *refs, size_t i, size_t end, const char *param)
{
    size_t V = d->n_values, s = d->n_shapes;
    double *t = &d->cost[s * V];
    for (size_t j = 0; j < V; j++)
        t[j] = INFINITY;
    size_t ok = 0;
    for (size_t k = i; k < end; k++) {
        const result_row *r = refs[k].row;
        int64_t v;
        if (!row_counts(d, r) || param_value(r, param, &v) != 0)
            continue;
        size_t j = fit_value_index(d, v);
        if (row_cost(d, r) < t[j])
            t[j] = row_cost(d, r);
        ok++;
    }
    if (!ok) {
        d->n_unmeasured++;
        return;
    }
    tune_point *p = &d->shapes[s];
    for (size_t a = 0; a < d->n_axes; a++) {
        expr_value v;
        point_get(&refs[i].row->values, d->axes[a], &v);
        point_set(p, d->axes[a], v);
        d->ax[s * d->n_axes + a] = v.type == EXPR_INT ? v.i : 0;
    }
    size_t bj = 0;
    for (size_t j = 1; j < V; j++)
        if (t[j] < t[bj])
            bj = j;
    d->best_cost[s] = t[bj];
    d->best_value[s] = d->values[bj];
    for (size_t j = 0; j < V; j++)
        d->lr[s * V + j] = isfinite(t[j]) ? log(t[bj] / t[j]) : NAN;
    d->n_shapes++;
}

/* Axes: integer? varying? The features are the integer axes that vary, with their values. */
static tune_status find_features(fit_data *d, tune_error *err)
{
    for (size_t a = 0; a < d->n_axes; a++) {
        d->axis_int[a] = 1;
        for (size_t s = 0; s < d->n_shapes; s++) {
            if (d->shapes[s].vals[a].type != EXPR_INT)
                d->axis_int[a] = 0;
            if (s && expr_value_order(d->shapes[s].vals[a], d->shapes[0].vals[a]) != 0)
                d->axis_varies[a] = 1;
        }
        if (!d->axis_int[a] || !d->axis_varies[a])
            continue;
        size_t f = d->n_feat;
        int64_t *vals = malloc(d->n_shapes * sizeof *vals);
        if (!vals)
            return tune_error_set(err, TUNE_ERR_NOMEM, "fit", "out of memory");
        for (size_t s = 0; s < d->n_shapes; s++)
            vals[s] = d->ax[s * d->n_axes + a];
        d->feat_axis[f] = a;
        d->feat_vals[f] = vals;
        d->n_feat_vals[f] = fit_unique_i64(vals, d->n_shapes);
        d->n_feat++;
    }
    return TUNE_OK;
}

fit_data *fit_data_build(const result_row *rows, size_t n, const char *param, const char *method,
                         tune_objective obj, tune_error *err)
{
    fit_data *d = calloc(1, sizeof *d);
    row_ref *refs = calloc(n + 1, sizeof *refs);
    if (!d || !refs || !(d->param = strdup(param)) || (method && !(d->method = strdup(method))))
        return build_fail(d, refs, err, TUNE_ERR_NOMEM, "out of memory%s", "");
    d->objective = obj;
    size_t n_refs = 0, n_ok = 0;
    if (collect_rows(d, rows, n, param, method, refs, &n_refs, &n_ok, err) != TUNE_OK) {
        free(refs);
        fit_data_free(d);
        return NULL;
    }
    /* values */
    d->values = malloc(n_ok * sizeof *d->values);
    if (!d->values)
        return build_fail(d, refs, err, TUNE_ERR_NOMEM, "out of memory%s", "");
    for (size_t i = 0; i < n_refs; i++)
        if (row_counts(d, refs[i].row))
            param_value(refs[i].row, param, &d->values[d->n_values++]);
    d->n_values = fit_unique_i64(d->values, d->n_values);

    /* shapes: runs of equal axis values holding at least one ok row */
    size_t n_groups = 0;
    for (size_t i = 0; i < n_refs; i++)
        if (i == 0 || compare_shapes(&refs[i - 1], &refs[i]) != 0)
            n_groups++;
    size_t V = d->n_values;
    d->shapes = calloc(n_groups, sizeof *d->shapes);
    d->ax = calloc(n_groups * d->n_axes + 1, sizeof *d->ax);
    d->cost = malloc(n_groups * V * sizeof *d->cost);
    d->lr = malloc(n_groups * V * sizeof *d->lr);
    d->best_cost = malloc(n_groups * sizeof *d->best_cost);
    d->best_value = malloc(n_groups * sizeof *d->best_value);
    if (!d->shapes || !d->ax || !d->cost || !d->lr || !d->best_cost || !d->best_value)
        return build_fail(d, refs, err, TUNE_ERR_NOMEM, "out of memory%s", "");
    for (size_t i = 0, end; i < n_refs; i = end) {
        for (end = i + 1; end < n_refs && compare_shapes(&refs[i], &refs[end]) == 0; end++)
            ;
        add_shape(d, refs, i, end, param);
    }
    free(refs);
    if (find_features(d, err) != TUNE_OK) {
        fit_data_free(d);
        return NULL;
    }
    return d;
}

const char *fit_data_param(const fit_data *d) { return d->param; }
const char *fit_data_method(const fit_data *d) { return d->method; }
size_t fit_data_n_shapes(const fit_data *d) { return d->n_shapes; }
size_t fit_data_n_unmeasured(const fit_data *d) { return d->n_unmeasured; }
size_t fit_data_n_unranked(const fit_data *d) { return d->n_unranked; }
tune_objective fit_data_objective(const fit_data *d) { return d->objective; }
size_t fit_data_n_axes(const fit_data *d) { return d->n_axes; }
const char *fit_data_axis(const fit_data *d, size_t i) { return i < d->n_axes ? d->axes[i] : NULL; }
const tune_point *fit_data_shape(const fit_data *d, size_t i) { return &d->shapes[i]; }
int64_t fit_data_best_value(const fit_data *d, size_t s) { return d->best_value[s]; }
double fit_data_best_cost(const fit_data *d, size_t s) { return d->best_cost[s]; }

double fit_data_cost(const fit_data *d, size_t s, int64_t value)
{
    size_t j = fit_value_index(d, value);
    return j == FIT_NONE ? INFINITY : d->cost[s * d->n_values + j];
}

const char *fit_data_shape_name(const fit_data *d, size_t s, char *buf, size_t size)
{
    int any = 0;
    for (size_t a = 0; a < d->n_axes; a++)
        any |= d->axis_varies[a];
    size_t len = 0;
    buf[0] = '\0';
    for (size_t a = 0; a < d->n_axes && len < size; a++) {
        if (any && !d->axis_varies[a])
            continue;
        char v[64];
        int w = snprintf(buf + len, size - len, "%s%s=%s", len ? " " : "", d->axes[a],
                         expr_value_format(d->shapes[s].vals[a], v, sizeof v));
        if (w < 0)
            break;
        len += (size_t)w;
    }
    return buf;
}

