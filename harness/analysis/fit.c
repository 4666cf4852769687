/* fit.c - heuristic fitting: shapes x values time table, rule families, search, outputs. */
#include "analysis/fit.h"

#include <ctype.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/expr.h"

struct fit_data {
    char *param, *method; /* copies */
    size_t n_axes;
    const char *axes[TUNE_MAX_AXES]; /* borrowed from the rows */
    int axis_int[TUNE_MAX_AXES];     /* every shape has an integer value */
    int axis_varies[TUNE_MAX_AXES];
    size_t n_shapes, n_unmeasured;
    tune_point *shapes;
    int64_t *ax; /* n_shapes x n_axes: integer axis values (0 for other types) */
    size_t n_values;
    int64_t *values;   /* sorted distinct measured values of the parameter */
    double *time;      /* n_shapes x n_values; INFINITY when not measured */
    double *lr;        /* log(best / time), NAN when not measured */
    double *best_time; /* per shape */
    int64_t *best_value;
    /* features: integer axes that vary, usable by the rule families */
    size_t n_feat;
    size_t feat_axis[TUNE_MAX_AXES];
    int64_t *feat_vals[TUNE_MAX_AXES]; /* sorted distinct values */
    size_t n_feat_vals[TUNE_MAX_AXES];
};

static const char *const family_names[FIT_N_FAMILIES] = {
    [FIT_FAMILY_CONSTANT] = "constant",
    [FIT_FAMILY_INVERSE] = "min/max(c1, c2 / axis)",
    [FIT_FAMILY_LINEAR] = "min/max(c1, c2 * axis)",
    [FIT_FAMILY_POW2] = "floor/ceil_pow2 of min/max",
    [FIT_FAMILY_THRESHOLD] = "threshold",
    [FIT_FAMILY_TREE] = "tree (depth 2)",
};

const char *fit_family_str(fit_family f)
{
    return (unsigned)f < FIT_N_FAMILIES ? family_names[f] : "?";
}

/* ---- Building the table ---- */

static int compare_values(expr_value a, expr_value b)
{
    int sa = a.type == EXPR_STR, sb = b.type == EXPR_STR;
    if (sa != sb)
        return sa - sb; /* numbers before strings */
    if (sa)
        return strcmp(a.s ? a.s : "", b.s ? b.s : "");
    if (a.type == EXPR_INT && b.type == EXPR_INT)
        return (a.i > b.i) - (a.i < b.i);
    double x = expr_value_as_double(a), y = expr_value_as_double(b);
    return (x > y) - (x < y);
}

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
        int c = compare_values(x, y);
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
static size_t unique_i64(int64_t *v, size_t n)
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

static size_t value_index(const fit_data *d, int64_t v)
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

static int row_counts(const result_row *r)
{
    return r->status == RESULT_OK && r->time.n > 0 && isfinite(r->time.median) &&
           r->time.median > 0;
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
    free(d->time);
    free(d->lr);
    free(d->best_time);
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

fit_data *fit_data_build(const result_row *rows, size_t n, const char *param, const char *method,
                         tune_error *err)
{
    fit_data *d = calloc(1, sizeof *d);
    row_ref *refs = calloc(n + 1, sizeof *refs);
    if (!d || !refs || !(d->param = strdup(param)) || (method && !(d->method = strdup(method))))
        return build_fail(d, refs, err, TUNE_ERR_NOMEM, "out of memory%s", "");
    size_t n_refs = 0, n_ok = 0;
    const result_row *first = NULL;
    for (size_t i = 0; i < n; i++) {
        const result_row *r = &rows[i];
        if (method && (!r->method || strcmp(r->method, method) != 0))
            continue;
        int64_t v;
        int pv = param_value(r, param, &v);
        if (pv > 0)
            continue;
        if (pv < 0)
            return build_fail(d, refs, err, TUNE_ERR_INVALID,
                              "parameter '%s' has a value that is not an integer", param);
        if (!first) {
            first = r;
            d->n_axes = r->n_axes;
            for (size_t a = 0; a < r->n_axes; a++)
                d->axes[a] = r->values.names[a];
        }
        if (r->n_axes != d->n_axes)
            return build_fail(d, refs, err, TUNE_ERR_INVALID,
                              "rows have different problem axes%s", "");
        for (size_t a = 0; a < d->n_axes; a++)
            if (point_get(&r->values, d->axes[a], NULL) != 0)
                return build_fail(d, refs, err, TUNE_ERR_INVALID,
                                  "a row lacks the problem axis '%s'", d->axes[a]);
        refs[n_refs++] = (row_ref){r, d};
        n_ok += (size_t)row_counts(r);
    }
    if (n_ok == 0) {
        tune_error_set(err, TUNE_ERR_INVALID, "fit", "no ok row has the parameter '%s'%s%s%s",
                       param, method ? " (method " : "", method ? method : "", method ? ")" : "");
        free(refs);
        fit_data_free(d);
        return NULL;
    }
    qsort(refs, n_refs, sizeof *refs, compare_shapes);

    /* values */
    d->values = malloc(n_ok * sizeof *d->values);
    if (!d->values)
        return build_fail(d, refs, err, TUNE_ERR_NOMEM, "out of memory%s", "");
    for (size_t i = 0; i < n_refs; i++)
        if (row_counts(refs[i].row))
            param_value(refs[i].row, param, &d->values[d->n_values++]);
    d->n_values = unique_i64(d->values, d->n_values);

    /* shapes: runs of equal axis values holding at least one ok row */
    size_t n_groups = 0;
    for (size_t i = 0; i < n_refs; i++)
        if (i == 0 || compare_shapes(&refs[i - 1], &refs[i]) != 0)
            n_groups++;
    size_t V = d->n_values;
    d->shapes = calloc(n_groups, sizeof *d->shapes);
    d->ax = calloc(n_groups * d->n_axes + 1, sizeof *d->ax);
    d->time = malloc(n_groups * V * sizeof *d->time);
    d->lr = malloc(n_groups * V * sizeof *d->lr);
    d->best_time = malloc(n_groups * sizeof *d->best_time);
    d->best_value = malloc(n_groups * sizeof *d->best_value);
    if (!d->shapes || !d->ax || !d->time || !d->lr || !d->best_time || !d->best_value)
        return build_fail(d, refs, err, TUNE_ERR_NOMEM, "out of memory%s", "");
    for (size_t i = 0, end; i < n_refs; i = end) {
        for (end = i + 1; end < n_refs && compare_shapes(&refs[i], &refs[end]) == 0; end++)
            ;
        size_t s = d->n_shapes;
        double *t = &d->time[s * V];
        for (size_t j = 0; j < V; j++)
            t[j] = INFINITY;
        size_t ok = 0;
        for (size_t k = i; k < end; k++) {
            const result_row *r = refs[k].row;
            int64_t v;
            if (!row_counts(r) || param_value(r, param, &v) != 0)
                continue;
            size_t j = value_index(d, v);
            if (r->time.median < t[j])
                t[j] = r->time.median;
            ok++;
        }
        if (!ok) {
            d->n_unmeasured++;
            continue;
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
        d->best_time[s] = t[bj];
        d->best_value[s] = d->values[bj];
        for (size_t j = 0; j < V; j++)
            d->lr[s * V + j] = isfinite(t[j]) ? log(t[bj] / t[j]) : NAN;
        d->n_shapes++;
    }
    free(refs);

    /* axes: integer? varying? features */
    for (size_t a = 0; a < d->n_axes; a++) {
        d->axis_int[a] = 1;
        for (size_t s = 0; s < d->n_shapes; s++) {
            if (d->shapes[s].vals[a].type != EXPR_INT)
                d->axis_int[a] = 0;
            if (s && compare_values(d->shapes[s].vals[a], d->shapes[0].vals[a]) != 0)
                d->axis_varies[a] = 1;
        }
        if (!d->axis_int[a] || !d->axis_varies[a])
            continue;
        size_t f = d->n_feat;
        int64_t *vals = malloc(d->n_shapes * sizeof *vals);
        if (!vals) {
            tune_error_set(err, TUNE_ERR_NOMEM, "fit", "out of memory");
            fit_data_free(d);
            return NULL;
        }
        for (size_t s = 0; s < d->n_shapes; s++)
            vals[s] = d->ax[s * d->n_axes + a];
        d->feat_axis[f] = a;
        d->feat_vals[f] = vals;
        d->n_feat_vals[f] = unique_i64(vals, d->n_shapes);
        d->n_feat++;
    }
    return d;
}

const char *fit_data_param(const fit_data *d) { return d->param; }
const char *fit_data_method(const fit_data *d) { return d->method; }
size_t fit_data_n_shapes(const fit_data *d) { return d->n_shapes; }
size_t fit_data_n_unmeasured(const fit_data *d) { return d->n_unmeasured; }
size_t fit_data_n_axes(const fit_data *d) { return d->n_axes; }
const char *fit_data_axis(const fit_data *d, size_t i) { return i < d->n_axes ? d->axes[i] : NULL; }
const tune_point *fit_data_shape(const fit_data *d, size_t i) { return &d->shapes[i]; }
int64_t fit_data_best_value(const fit_data *d, size_t s) { return d->best_value[s]; }
double fit_data_best_time(const fit_data *d, size_t s) { return d->best_time[s]; }

double fit_data_time(const fit_data *d, size_t s, int64_t value)
{
    size_t j = value_index(d, value);
    return j == FIT_NONE ? INFINITY : d->time[s * d->n_values + j];
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

/* ---- Rules the search enumerates ---- */

typedef enum { TERM_DIV, TERM_MUL, TERM_DIVBY } term_kind; /* c2 / a, c2 * a, a / c2 */
typedef enum { WRAP_NONE, WRAP_FLOOR, WRAP_CEIL } wrap_kind;
typedef enum { RULE_CONST, RULE_MINMAX, RULE_SPLIT } rule_kind;

typedef struct {
    int split;       /* 0: a leaf of value hi */
    size_t axis;     /* data axis index */
    int64_t t, hi, lo; /* axis >= t ? hi : lo */
} rule_side;

typedef struct {
    rule_kind kind;
    int64_t c; /* RULE_CONST */
    /* RULE_MINMAX: [wrap](min|max(c1, term)) */
    int is_max;
    wrap_kind wrap;
    term_kind term;
    size_t axis;
    int64_t c1, c2;
    /* RULE_SPLIT: axis >= t ? side[0] : side[1] */
    int64_t t;
    rule_side side[2];
} rule;

static int pow2_wrap(wrap_kind w, int64_t x, int64_t *out)
{
    if (x < 1)
        return -1;
    int64_t f = INT64_C(1) << (63 - __builtin_clzll((unsigned long long)x));
    if (w == WRAP_FLOOR || f == x)
        *out = f;
    else if (f > INT64_MAX / 2)
        return -1;
    else
        *out = f * 2;
    return 0;
}

/* rule(s) with the expression language's integer semantics; -1 where it fails. */
static int rule_eval(const fit_data *d, const rule *r, size_t s, int64_t *out)
{
    const int64_t *ax = &d->ax[s * d->n_axes];
    switch (r->kind) {
    case RULE_CONST:
        *out = r->c;
        return 0;
    case RULE_SPLIT: {
        const rule_side *sd = &r->side[ax[r->axis] >= r->t ? 0 : 1];
        *out = !sd->split || ax[sd->axis] >= sd->t ? sd->hi : sd->lo;
        return 0;
    }
    case RULE_MINMAX:
        break;
    }
    int64_t a = ax[r->axis], term;
    if (r->term == TERM_MUL) {
        if (__builtin_mul_overflow(r->c2, a, &term))
            return -1;
    } else if (r->term == TERM_DIV) {
        if (a == 0 || (r->c2 == INT64_MIN && a == -1))
            return -1;
        term = r->c2 / a;
    } else {
        if (r->c2 == 0)
            return -1;
        term = a / r->c2;
    }
    int64_t v = r->is_max ? (term > r->c1 ? term : r->c1) : (term < r->c1 ? term : r->c1);
    if (r->wrap != WRAP_NONE)
        return pow2_wrap(r->wrap, v, out);
    *out = v;
    return 0;
}

/* "(axis >= t) * hi + (axis < t) * lo" without the terms whose value is "0". */
static void split_text(const char *axis, int64_t t, const char *hi, const char *lo, char *buf,
                       size_t size)
{
    int has_hi = strcmp(hi, "0") != 0, has_lo = strcmp(lo, "0") != 0;
    buf[0] = '\0';
    if (has_hi)
        snprintf(buf, size, "(%s >= %" PRId64 ") * (%s)", axis, t, hi);
    if (has_lo)
        snprintf(buf + strlen(buf), size - strlen(buf), "%s(%s < %" PRId64 ") * (%s)",
                 has_hi ? " + " : "", axis, t, lo);
    if (!has_hi && !has_lo)
        snprintf(buf, size, "0");
}

static void side_text(const fit_data *d, const rule_side *sd, char *buf, size_t size)
{
    char hi[32], lo[32];
    snprintf(hi, sizeof hi, "%" PRId64, sd->hi);
    snprintf(lo, sizeof lo, "%" PRId64, sd->lo);
    if (!sd->split)
        snprintf(buf, size, "%s", hi);
    else
        split_text(d->axes[sd->axis], sd->t, hi, lo, buf, size);
}

/* Text of the rule in the expression language (canonicalised later by expr_to_string). */
static void rule_text(const fit_data *d, const rule *r, char *buf, size_t size)
{
    if (r->kind == RULE_CONST) {
        snprintf(buf, size, "%" PRId64, r->c);
        return;
    }
    if (r->kind == RULE_SPLIT) {
        char hi[256], lo[256];
        side_text(d, &r->side[0], hi, sizeof hi);
        side_text(d, &r->side[1], lo, sizeof lo);
        split_text(d->axes[r->axis], r->t, hi, lo, buf, size);
        return;
    }
    char term[128];
    const char *name = d->axes[r->axis];
    if (r->term == TERM_DIV)
        snprintf(term, sizeof term, "%" PRId64 " / %s", r->c2, name);
    else if (r->term == TERM_DIVBY)
        snprintf(term, sizeof term, "%s / %" PRId64, name, r->c2);
    else if (r->c2 == 1)
        snprintf(term, sizeof term, "%s", name);
    else
        snprintf(term, sizeof term, "%" PRId64 " * %s", r->c2, name);
    const char *wrap = r->wrap == WRAP_FLOOR ? "floor_pow2(" : r->wrap == WRAP_CEIL ? "ceil_pow2(" : "";
    snprintf(buf, size, "%s%s(%" PRId64 ", %s)%s", wrap, r->is_max ? "max" : "min", r->c1, term,
             r->wrap != WRAP_NONE ? ")" : "");
}

/* ---- Scores ---- */

typedef struct {
    size_t bad;    /* infeasible shapes */
    size_t n;      /* feasible shapes */
    double logsum; /* sum of log(best / time) over the feasible ones */
} score;

static int score_better(score a, score b)
{
    if (a.bad != b.bad)
        return a.bad < b.bad;
    return a.logsum > b.logsum + 1e-9 * (1.0 + fabs(b.logsum));
}

static score score_add(score a, score b)
{
    return (score){a.bad + b.bad, a.n + b.n, a.logsum + b.logsum};
}

static void score_value(const fit_data *d, size_t s, int ok, int64_t v, score *sc)
{
    size_t j = ok ? value_index(d, v) : FIT_NONE;
    double lr = j == FIT_NONE ? NAN : d->lr[s * d->n_values + j];
    if (isnan(lr)) {
        sc->bad++;
    } else {
        sc->n++;
        sc->logsum += lr;
    }
}

static score rule_score(const fit_data *d, const rule *r, const unsigned char *mask)
{
    score sc = {0, 0, 0.0};
    for (size_t s = 0; s < d->n_shapes; s++) {
        if (!mask[s])
            continue;
        int64_t v = 0;
        int ok = rule_eval(d, r, s, &v) == 0;
        score_value(d, s, ok, v, &sc);
    }
    return sc;
}

/* Best single value on the shapes of mask; 0 when mask is empty. */
static int best_leaf(const fit_data *d, const unsigned char *mask, int64_t *value, score *best)
{
    int found = 0;
    size_t count = 0;
    for (size_t s = 0; s < d->n_shapes; s++)
        count += mask[s];
    if (!count)
        return 0;
    for (size_t j = 0; j < d->n_values; j++) {
        score sc = {0, 0, 0.0};
        for (size_t s = 0; s < d->n_shapes; s++)
            if (mask[s])
                score_value(d, s, 1, d->values[j], &sc);
        if (!found || score_better(sc, *best)) {
            *best = sc;
            *value = d->values[j];
            found = 1;
        }
    }
    return found;
}

/* Scratch masks of the split searches. */
typedef struct {
    unsigned char *m[4];
} masks;

static void split_mask(const fit_data *d, const unsigned char *mask, size_t axis, int64_t t,
                       unsigned char *hi, unsigned char *lo)
{
    for (size_t s = 0; s < d->n_shapes; s++) {
        int ge = d->ax[s * d->n_axes + axis] >= t;
        hi[s] = (unsigned char)(mask[s] && ge);
        lo[s] = (unsigned char)(mask[s] && !ge);
    }
}

/* Best leaf, or best one-split subtree when allow_split and it strictly improves. */
static int best_side(const fit_data *d, const unsigned char *mask, int allow_split,
                     unsigned char *hi, unsigned char *lo, rule_side *out, score *best)
{
    if (!best_leaf(d, mask, &out->hi, best))
        return 0;
    out->split = 0;
    if (!allow_split)
        return 1;
    for (size_t f = 0; f < d->n_feat; f++) {
        for (size_t k = 1; k < d->n_feat_vals[f]; k++) {
            rule_side c = {1, d->feat_axis[f], d->feat_vals[f][k], 0, 0};
            split_mask(d, mask, c.axis, c.t, hi, lo);
            score sh, sl;
            if (!best_leaf(d, hi, &c.hi, &sh) || !best_leaf(d, lo, &c.lo, &sl) || c.hi == c.lo)
                continue;
            score sc = score_add(sh, sl);
            if (score_better(sc, *best)) {
                *best = sc;
                *out = c;
            }
        }
    }
    return 1;
}

static void consider(const fit_data *d, const rule *r, const unsigned char *mask, rule *best,
                     score *bs, int *found)
{
    score sc = rule_score(d, r, mask);
    if (!*found || score_better(sc, *bs)) {
        *best = *r;
        *bs = sc;
        *found = 1;
    }
}

static int fit_minmax(const fit_data *d, const unsigned char *mask, fit_family fam, rule *best,
                      score *bs)
{
    int found = 0;
    size_t V = d->n_values;
    wrap_kind w0 = fam == FIT_FAMILY_POW2 ? WRAP_FLOOR : WRAP_NONE;
    wrap_kind w1 = fam == FIT_FAMILY_POW2 ? WRAP_CEIL : WRAP_NONE;
    term_kind t0 = fam == FIT_FAMILY_LINEAR ? TERM_MUL : TERM_DIV;
    term_kind t1 = fam == FIT_FAMILY_INVERSE ? TERM_DIV : TERM_DIVBY;
    for (size_t f = 0; f < d->n_feat; f++) {
        size_t A = d->n_feat_vals[f];
        const int64_t *av = d->feat_vals[f];
        int64_t *c2s = malloc((V * A + 1) * sizeof *c2s);
        if (!c2s)
            return -1;
        for (unsigned term = t0; term <= t1; term++) {
            /* constants so that the term gives a measured value at a value of the axis */
            size_t n = 0;
            for (size_t j = 0; j < V; j++) {
                for (size_t k = 0; k < A; k++) {
                    int64_t v = d->values[j], a = av[k], c;
                    if (term == TERM_DIV && !__builtin_mul_overflow(v, a, &c) && c > 0)
                        c2s[n++] = c;
                    else if (term == TERM_MUL && v > 0 && a > 0 && v % a == 0)
                        c2s[n++] = v / a;
                    else if (term == TERM_DIVBY && v > 0 && a > 0 && a % v == 0 && a / v > 1)
                        c2s[n++] = a / v;
                }
            }
            n = unique_i64(c2s, n);
            for (unsigned w = w0; w <= w1; w++)
                for (int is_max = 0; is_max < 2; is_max++)
                    for (size_t j = 0; j < V; j++)
                        for (size_t k = 0; k < n; k++) {
                            rule r = {.kind = RULE_MINMAX, .is_max = is_max, .wrap = w,
                                      .term = term, .axis = d->feat_axis[f],
                                      .c1 = d->values[j], .c2 = c2s[k]};
                            consider(d, &r, mask, best, bs, &found);
                        }
        }
        free(c2s);
    }
    return found;
}

/* Best rule of the family on the shapes of mask: 1 found, 0 none, -1 out of memory. */
static int fit_family_on(const fit_data *d, fit_family fam, const unsigned char *mask, masks *mk,
                         rule *best, score *bs)
{
    if (fam == FIT_FAMILY_INVERSE || fam == FIT_FAMILY_LINEAR || fam == FIT_FAMILY_POW2)
        return fit_minmax(d, mask, fam, best, bs);
    rule r = {.kind = RULE_CONST};
    if (!best_leaf(d, mask, &r.c, bs))
        return 0;
    *best = r;
    if (fam == FIT_FAMILY_CONSTANT)
        return 1;
    /* threshold: both sides leaves; tree: each side a leaf or one more split. A split must
     * strictly improve on the simpler rule, which is kept otherwise. */
    int tree = fam == FIT_FAMILY_TREE;
    for (int pass = 0; pass <= tree; pass++) {
        for (size_t f = 0; f < d->n_feat; f++) {
            for (size_t k = 1; k < d->n_feat_vals[f]; k++) {
                rule c = {.kind = RULE_SPLIT, .axis = d->feat_axis[f], .t = d->feat_vals[f][k]};
                split_mask(d, mask, c.axis, c.t, mk->m[0], mk->m[1]);
                score sh, sl;
                if (!best_side(d, mk->m[0], pass, mk->m[2], mk->m[3], &c.side[0], &sh) ||
                    !best_side(d, mk->m[1], pass, mk->m[2], mk->m[3], &c.side[1], &sl))
                    continue;
                if (!c.side[0].split && !c.side[1].split && c.side[0].hi == c.side[1].hi)
                    continue;
                score sc = score_add(sh, sl);
                if (score_better(sc, *bs)) {
                    *best = c;
                    *bs = sc;
                }
            }
        }
    }
    return 1;
}

/* ---- Evaluation through the expression language ---- */

tune_status fit_evaluate(const fit_data *d, const char *text, fit_eval *out, tune_error *err)
{
    memset(out, 0, sizeof *out);
    tune_error perr = {0};
    expr *e = expr_parse(text, &perr);
    if (!e)
        return tune_error_set(err, perr.code, perr.where, "rule '%s': %s", text, perr.message);
    const char *names[TUNE_MAX_AXES];
    size_t n_names = expr_names(e, names, TUNE_MAX_AXES);
    for (size_t i = 0; i < n_names && i < TUNE_MAX_AXES; i++) {
        size_t a = 0;
        while (a < d->n_axes && strcmp(d->axes[a], names[i]) != 0)
            a++;
        if (a == d->n_axes) {
            char list[1024] = "";
            for (size_t b = 0; b < d->n_axes; b++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", b ? ", " : "",
                         d->axes[b]);
            tune_error_set(err, TUNE_ERR_INVALID, "fit",
                           "rule '%s' reads '%s', which is not a problem axis (%s)", text, names[i],
                           list);
            expr_free(e);
            return TUNE_ERR_INVALID;
        }
    }
    out->rule = expr_to_string(e);
    out->shapes = calloc(d->n_shapes + 1, sizeof *out->shapes);
    if (!out->rule || !out->shapes) {
        expr_free(e);
        fit_eval_release(out);
        return tune_error_set(err, TUNE_ERR_NOMEM, "fit", "out of memory");
    }
    out->n_shapes = d->n_shapes;
    out->worst = FIT_NONE;
    double logsum = 0.0;
    for (size_t s = 0; s < d->n_shapes; s++) {
        fit_shape_eval *se = &out->shapes[s];
        se->best_value = d->best_value[s];
        se->best_time = d->best_time[s];
        se->rule_time = se->efficiency = NAN;
        expr_value v;
        if (expr_eval(e, point_lookup, (void *)&d->shapes[s], &v, NULL) == TUNE_OK) {
            if (v.type == EXPR_STR) {
                expr_free(e);
                fit_eval_release(out);
                return tune_error_set(err, TUNE_ERR_INVALID, "fit",
                                      "rule '%s' gives a string, not a value of %s", text,
                                      d->param);
            }
            if (v.type == EXPR_INT) {
                se->evaluated = 1;
                se->rule_value = v.i;
            } else if (v.f == floor(v.f) && fabs(v.f) < 9e18) {
                se->evaluated = 1;
                se->rule_value = (int64_t)v.f;
            }
        }
        size_t j = se->evaluated ? value_index(d, se->rule_value) : FIT_NONE;
        if (j != FIT_NONE && isfinite(d->time[s * d->n_values + j])) {
            se->feasible = 1;
            se->rule_time = d->time[s * d->n_values + j];
            se->efficiency = se->best_time / se->rule_time;
            logsum += log(se->efficiency);
            out->n_feasible++;
            if (out->worst == FIT_NONE || se->efficiency < out->worst_efficiency) {
                out->worst = s;
                out->worst_efficiency = se->efficiency;
            }
        } else {
            out->n_infeasible++;
        }
    }
    expr_free(e);
    out->efficiency = out->n_feasible ? exp(logsum / (double)out->n_feasible) : NAN;
    if (out->worst == FIT_NONE)
        out->worst_efficiency = NAN;
    return TUNE_OK;
}

void fit_eval_release(fit_eval *ev)
{
    if (!ev)
        return;
    free(ev->rule);
    free(ev->shapes);
    memset(ev, 0, sizeof *ev);
}

/* ---- Fitting ---- */

void fit_result_release(fit_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < FIT_N_FAMILIES; i++)
        fit_eval_release(&r->candidates[i].eval);
    memset(r, 0, sizeof *r);
}

static tune_status fit_one_family(const fit_data *d, fit_family fam, const fit_options *opt,
                                  unsigned char *mask, masks *mk, fit_candidate *c,
                                  tune_error *err)
{
    size_t S = d->n_shapes;
    c->family = fam;
    c->loo = NAN;
    memset(mask, 1, S);
    rule best;
    score bs;
    int found = fit_family_on(d, fam, mask, mk, &best, &bs);
    if (found < 0)
        return tune_error_set(err, TUNE_ERR_NOMEM, "fit", "out of memory");
    if (!found)
        return TUNE_OK;
    char text[1024];
    rule_text(d, &best, text, sizeof text);
    tune_status st = fit_evaluate(d, text, &c->eval, err);
    if (st != TUNE_OK)
        return st;
    /* The search's own evaluation must agree with the expression language's. */
    for (size_t s = 0; s < S; s++) {
        int64_t v = 0;
        int ok = rule_eval(d, &best, s, &v) == 0;
        const fit_shape_eval *se = &c->eval.shapes[s];
        if (ok != se->evaluated || (ok && v != se->rule_value))
            return tune_error_set(err, TUNE_ERR_EVAL, "fit",
                                  "internal: rule '%s' evaluates differently on shape %zu", text, s);
    }
    if (opt->no_loo || S < 2)
        return TUNE_OK;
    double logsum = 0.0;
    for (size_t out = 0; out < S; out++) {
        memset(mask, 1, S);
        mask[out] = 0;
        rule r;
        score sc;
        found = fit_family_on(d, fam, mask, mk, &r, &sc);
        if (found < 0)
            return tune_error_set(err, TUNE_ERR_NOMEM, "fit", "out of memory");
        int64_t v = 0;
        score one = {0, 0, 0.0};
        int ok = found && rule_eval(d, &r, out, &v) == 0;
        score_value(d, out, ok, v, &one);
        if (one.n) {
            c->loo_n++;
            logsum += one.logsum;
        } else {
            c->loo_infeasible++;
        }
    }
    if (c->loo_n)
        c->loo = exp(logsum / (double)c->loo_n);
    return TUNE_OK;
}

tune_status fit_run(const fit_data *d, const fit_options *opt, fit_result *out, tune_error *err)
{
    fit_options defaults = {0.98, 0};
    if (!opt)
        opt = &defaults;
    memset(out, 0, sizeof *out);
    out->target = opt->target > 0 ? opt->target : 0.98;
    out->chosen = FIT_NONE;
    size_t S = d->n_shapes;
    unsigned char *buf = malloc(5 * (S + 1));
    if (!buf)
        return tune_error_set(err, TUNE_ERR_NOMEM, "fit", "out of memory");
    masks mk = {{buf + (S + 1), buf + 2 * (S + 1), buf + 3 * (S + 1), buf + 4 * (S + 1)}};
    tune_status st = TUNE_OK;
    for (size_t f = 0; f < FIT_N_FAMILIES && st == TUNE_OK; f++)
        st = fit_one_family(d, (fit_family)f, opt, buf, &mk, &out->candidates[f], err);
    free(buf);
    if (st != TUNE_OK) {
        fit_result_release(out);
        return st;
    }
    size_t best_any = FIT_NONE;
    for (size_t f = 0; f < FIT_N_FAMILIES; f++) {
        fit_candidate *c = &out->candidates[f];
        if (!c->eval.rule)
            continue;
        c->meets_target = c->eval.n_infeasible == 0 && c->eval.efficiency >= out->target - 1e-12;
        if (c->meets_target && out->chosen == FIT_NONE)
            out->chosen = f;
        const fit_eval *b = best_any == FIT_NONE ? NULL : &out->candidates[best_any].eval;
        if (!b || c->eval.n_infeasible < b->n_infeasible ||
            (c->eval.n_infeasible == b->n_infeasible && c->eval.efficiency > b->efficiency + 1e-12))
            best_any = f;
    }
    if (out->chosen == FIT_NONE)
        out->chosen = best_any;
    return TUNE_OK;
}

/* ---- Markdown ---- */

static const char *pct(double x, char *buf, size_t size)
{
    if (isnan(x))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%.1f %%", 100.0 * x);
    return buf;
}

static void write_shape_table(const fit_data *d, const fit_eval *ev, FILE *f)
{
    fprintf(f, "| shape | best %s | rule %s | best (us) | rule (us) | efficiency |\n", d->param,
            d->param);
    fprintf(f, "|:--|--:|--:|--:|--:|--:|\n");
    for (size_t s = 0; s < ev->n_shapes; s++) {
        const fit_shape_eval *se = &ev->shapes[s];
        char name[512], p[32], rv[64], rt[64];
        if (se->evaluated)
            snprintf(rv, sizeof rv, "%" PRId64, se->rule_value);
        else
            snprintf(rv, sizeof rv, "error");
        if (se->feasible)
            snprintf(rt, sizeof rt, "%.2f", se->rule_time * 1e6);
        else
            snprintf(rt, sizeof rt, "not measured");
        fprintf(f, "| %s | %" PRId64 " | %s | %.2f | %s | %s |\n",
                fit_data_shape_name(d, s, name, sizeof name), se->best_value, rv,
                se->best_time * 1e6, rt, pct(se->efficiency, p, sizeof p));
    }
}

static void write_summary(const fit_data *d, const fit_eval *ev, FILE *f)
{
    char p[32], w[32], name[512];
    fprintf(f, "Efficiency %s over %zu of %zu shapes", pct(ev->efficiency, p, sizeof p),
            ev->n_feasible, ev->n_shapes);
    if (ev->worst != FIT_NONE)
        fprintf(f, "; worst %s at %s", pct(ev->worst_efficiency, w, sizeof w),
                fit_data_shape_name(d, ev->worst, name, sizeof name));
    fprintf(f, "; %zu infeasible shape%s", ev->n_infeasible, ev->n_infeasible == 1 ? "" : "s");
    if (ev->n_infeasible) {
        fprintf(f, " (the rule's %s was not measured there):", d->param);
        for (size_t s = 0, k = 0; s < ev->n_shapes; s++) {
            if (ev->shapes[s].feasible)
                continue;
            char v[64];
            if (ev->shapes[s].evaluated)
                snprintf(v, sizeof v, "%" PRId64, ev->shapes[s].rule_value);
            else
                snprintf(v, sizeof v, "error");
            fprintf(f, "%s %s (%s)", k++ ? "," : "", fit_data_shape_name(d, s, name, sizeof name),
                    v);
        }
    }
    fprintf(f, ".\n");
}

static void write_data_line(const fit_data *d, FILE *f)
{
    fprintf(f, "%zu shapes", d->n_shapes);
    if (d->n_unmeasured)
        fprintf(f, " (and %zu without an ok row, left out)", d->n_unmeasured);
    fprintf(f, ", %zu measured values of %s:", d->n_values, d->param);
    for (size_t j = 0; j < d->n_values; j++)
        fprintf(f, " %" PRId64, d->values[j]);
    fprintf(f, ".\n\n");
}

void fit_eval_write_markdown(const fit_data *d, const fit_eval *ev, FILE *f)
{
    fprintf(f, "## Rule for %s: `%s`\n\n", d->param, ev->rule);
    write_data_line(d, f);
    write_summary(d, ev, f);
    fprintf(f, "\n");
    write_shape_table(d, ev, f);
}

void fit_write_markdown(const fit_data *d, const fit_result *r, FILE *f)
{
    char p[32];
    fprintf(f, "## Heuristic for %s (%s%s%starget %s)\n\n", d->param, d->method ? "method " : "",
            d->method ? d->method : "", d->method ? ", " : "", pct(r->target, p, sizeof p));
    write_data_line(d, f);
    fprintf(f, "| family | best rule | efficiency | worst | worst shape | LOO | infeasible |\n");
    fprintf(f, "|:--|:--|--:|--:|:--|--:|--:|\n");
    for (size_t i = 0; i < FIT_N_FAMILIES; i++) {
        const fit_candidate *c = &r->candidates[i];
        if (!c->eval.rule) {
            fprintf(f, "| %s | - | - | - | - | - | - |\n", fit_family_str((fit_family)i));
            continue;
        }
        char e[32], w[32], l[32], name[512] = "-";
        if (c->eval.worst != FIT_NONE)
            fit_data_shape_name(d, c->eval.worst, name, sizeof name);
        fprintf(f, "| %s%s | `%s` | %s | %s | %s | %s", fit_family_str((fit_family)i),
                i == r->chosen ? " (chosen)" : "", c->eval.rule,
                pct(c->eval.efficiency, e, sizeof e), pct(c->eval.worst_efficiency, w, sizeof w),
                name, pct(c->loo, l, sizeof l));
        if (c->loo_infeasible)
            fprintf(f, " (%zu left-out shapes infeasible)", c->loo_infeasible);
        fprintf(f, " | %zu |\n", c->eval.n_infeasible);
    }
    if (r->chosen == FIT_NONE) {
        fprintf(f, "\nNo rule.\n");
        return;
    }
    const fit_candidate *c = &r->candidates[r->chosen];
    char l[32];
    fprintf(f, "\nChosen (%s): `%s`%s; leave-one-shape-out %s.\n",
            fit_family_str(c->family), c->eval.rule,
            c->meets_target ? "" : " (no family reaches the target: the most efficient rule)",
            pct(c->loo, l, sizeof l));
    write_summary(d, &c->eval, f);
    fprintf(f, "\n");
    write_shape_table(d, &c->eval, f);
}

/* ---- JSON ---- */

static json_t *num_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *value_json(expr_value v)
{
    switch (v.type) {
    case EXPR_INT:
        return json_integer(v.i);
    case EXPR_FLOAT:
        return num_or_null(v.f);
    case EXPR_STR:
        return json_string(v.s ? v.s : "");
    }
    return json_null();
}

static json_t *shape_json(const fit_data *d, size_t s)
{
    json_t *o = json_object();
    for (size_t a = 0; a < d->n_axes; a++)
        json_object_set_new(o, d->axes[a], value_json(d->shapes[s].vals[a]));
    return o;
}

static json_t *eval_fields(const fit_data *d, const fit_eval *ev, json_t *o, int with_shapes)
{
    char name[512];
    json_object_set_new(o, "rule", json_string(ev->rule));
    json_object_set_new(o, "efficiency", num_or_null(ev->efficiency));
    json_object_set_new(o, "n_feasible", json_integer((json_int_t)ev->n_feasible));
    json_object_set_new(o, "n_infeasible", json_integer((json_int_t)ev->n_infeasible));
    json_t *inf = json_array();
    for (size_t s = 0; s < ev->n_shapes; s++)
        if (!ev->shapes[s].feasible)
            json_array_append_new(inf, json_string(fit_data_shape_name(d, s, name, sizeof name)));
    json_object_set_new(o, "infeasible_shapes", inf);
    if (ev->worst != FIT_NONE) {
        json_object_set_new(o, "worst_shape",
                            json_string(fit_data_shape_name(d, ev->worst, name, sizeof name)));
        json_object_set_new(o, "worst_efficiency", num_or_null(ev->worst_efficiency));
    } else {
        json_object_set_new(o, "worst_shape", json_null());
        json_object_set_new(o, "worst_efficiency", json_null());
    }
    if (!with_shapes)
        return o;
    json_t *shapes = json_array();
    for (size_t s = 0; s < ev->n_shapes; s++) {
        const fit_shape_eval *se = &ev->shapes[s];
        json_t *sh = json_object();
        json_object_set_new(sh, "shape", json_string(fit_data_shape_name(d, s, name, sizeof name)));
        json_object_set_new(sh, "axes", shape_json(d, s));
        json_object_set_new(sh, "best_value", json_integer(se->best_value));
        json_object_set_new(sh, "rule_value",
                            se->evaluated ? json_integer(se->rule_value) : json_null());
        json_object_set_new(sh, "feasible", json_boolean(se->feasible));
        json_object_set_new(sh, "best_time_us", num_or_null(se->best_time * 1e6));
        json_object_set_new(sh, "rule_time_us", num_or_null(se->rule_time * 1e6));
        json_object_set_new(sh, "efficiency", num_or_null(se->efficiency));
        json_array_append_new(shapes, sh);
    }
    json_object_set_new(o, "shapes", shapes);
    return o;
}

static json_t *head_json(const fit_data *d, const char *const *sources, size_t n_sources)
{
    json_t *o = json_object();
    json_object_set_new(o, "param", json_string(d->param));
    json_object_set_new(o, "method", d->method ? json_string(d->method) : json_null());
    json_t *src = json_array();
    for (size_t i = 0; sources && i < n_sources; i++)
        json_array_append_new(src, json_string(sources[i]));
    json_object_set_new(o, "sources", src);
    json_t *axes = json_array();
    for (size_t a = 0; a < d->n_axes; a++)
        json_array_append_new(axes, json_string(d->axes[a]));
    json_object_set_new(o, "axes", axes);
    json_object_set_new(o, "n_shapes", json_integer((json_int_t)d->n_shapes));
    json_object_set_new(o, "n_unmeasured_shapes", json_integer((json_int_t)d->n_unmeasured));
    json_t *vals = json_array();
    for (size_t j = 0; j < d->n_values; j++)
        json_array_append_new(vals, json_integer(d->values[j]));
    json_object_set_new(o, "values", vals);
    return o;
}

json_t *fit_eval_to_json(const fit_data *d, const fit_eval *ev, const char *const *sources,
                         size_t n_sources)
{
    return eval_fields(d, ev, head_json(d, sources, n_sources), 1);
}

static void loo_fields(const fit_candidate *c, json_t *o)
{
    json_object_set_new(o, "loo", num_or_null(c->loo));
    json_object_set_new(o, "loo_n", json_integer((json_int_t)c->loo_n));
    json_object_set_new(o, "loo_infeasible", json_integer((json_int_t)c->loo_infeasible));
    json_object_set_new(o, "meets_target", json_boolean(c->meets_target));
}

json_t *fit_result_to_json(const fit_data *d, const fit_result *r, const char *const *sources,
                           size_t n_sources)
{
    json_t *o = head_json(d, sources, n_sources);
    json_object_set_new(o, "target", json_real(r->target));
    json_t *cands = json_array();
    for (size_t i = 0; i < FIT_N_FAMILIES; i++) {
        const fit_candidate *c = &r->candidates[i];
        if (!c->eval.rule)
            continue;
        json_t *co = json_object();
        json_object_set_new(co, "family", json_string(fit_family_str(c->family)));
        eval_fields(d, &c->eval, co, 0);
        loo_fields(c, co);
        json_array_append_new(cands, co);
    }
    if (r->chosen != FIT_NONE) {
        const fit_candidate *c = &r->candidates[r->chosen];
        json_object_set_new(o, "family", json_string(fit_family_str(c->family)));
        eval_fields(d, &c->eval, o, 1);
        loo_fields(c, o);
    } else {
        json_object_set_new(o, "rule", json_null());
    }
    json_object_set_new(o, "candidates", cands);
    return o;
}

/* ---- C header ---- */

static const char header_helpers[] =
    "#ifndef TUNE_PICK_HELPERS_\n"
    "#define TUNE_PICK_HELPERS_\n"
    "static inline int64_t tune_pick_min_(int64_t a, int64_t b) { return a < b ? a : b; }\n"
    "static inline int64_t tune_pick_max_(int64_t a, int64_t b) { return a > b ? a : b; }\n"
    "static inline int64_t tune_pick_abs_(int64_t a) { return a < 0 ? -a : a; }\n"
    "/* x >= 1 */\n"
    "static inline int64_t tune_pick_floor_pow2_(int64_t x)\n"
    "{\n"
    "    int64_t p = 1;\n"
    "    while (p <= x / 2)\n"
    "        p *= 2;\n"
    "    return p;\n"
    "}\n"
    "static inline int64_t tune_pick_ceil_pow2_(int64_t x)\n"
    "{\n"
    "    int64_t p = tune_pick_floor_pow2_(x);\n"
    "    return p == x ? p : 2 * p;\n"
    "}\n"
    "#endif\n";

/* Number of top-level arguments of the call whose '(' is at text[open]; 0 when unbalanced. */
static size_t call_arity(const char *text, size_t open)
{
    int depth = 0;
    size_t args = 1;
    for (size_t i = open; text[i]; i++) {
        if (text[i] == '(')
            depth++;
        else if (text[i] == ')' && --depth == 0)
            return args;
        else if (text[i] == ',' && depth == 1)
            args++;
    }
    return 0;
}

/* C text of a canonical rule: identical operators, helper functions instead of min/max/...;
 * marks the axes it reads in used[]. */
static tune_status rule_to_c(const fit_data *d, const char *text, char *out, size_t size,
                             int *used, tune_error *err)
{
    static const char *const fns[] = {"min", "max", "abs", "floor_pow2", "ceil_pow2"};
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; text[i];) {
        char word[256];
        const char *piece = word;
        size_t adv = 1;
        if (isalpha((unsigned char)text[i]) || text[i] == '_') {
            size_t n = 0;
            while (isalnum((unsigned char)text[i + n]) || text[i + n] == '_')
                n++;
            if (n >= sizeof word)
                return tune_error_set(err, TUNE_ERR_INVALID, "fit", "name too long in '%s'", text);
            memcpy(word, text + i, n);
            word[n] = '\0';
            adv = n;
            if (text[i + n] == '(') {
                size_t k = 0;
                while (k < sizeof fns / sizeof fns[0] && strcmp(fns[k], word) != 0)
                    k++;
                if (k == sizeof fns / sizeof fns[0])
                    return tune_error_set(err, TUNE_ERR_INVALID, "fit",
                                          "the C header cannot compute %s() of rule '%s'", word,
                                          text);
                if (k < 2 && call_arity(text, i + n) != 2)
                    return tune_error_set(err, TUNE_ERR_INVALID, "fit",
                                          "the C header supports %s() of two arguments only "
                                          "(rule '%s')",
                                          word, text);
                snprintf(word, sizeof word, "tune_pick_%s_", fns[k]);
            } else {
                size_t a = 0;
                while (a < d->n_axes && strcmp(d->axes[a], word) != 0)
                    a++;
                if (a == d->n_axes || !d->axis_int[a])
                    return tune_error_set(err, TUNE_ERR_INVALID, "fit",
                                          "the C header needs integer axes; rule '%s' reads '%s'",
                                          text, word);
                used[a] = 1;
            }
        } else if (isdigit((unsigned char)text[i])) {
            size_t n = 0;
            while (isalnum((unsigned char)text[i + n]) || text[i + n] == '.')
                n++;
            if (n >= sizeof word || memchr(text + i, '.', n) || memchr(text + i, 'e', n) ||
                memchr(text + i, 'E', n))
                return tune_error_set(err, TUNE_ERR_INVALID, "fit",
                                      "the C header needs integer arithmetic; rule '%s'", text);
            memcpy(word, text + i, n);
            word[n] = '\0';
            adv = n;
        } else if (text[i] == '"') {
            return tune_error_set(err, TUNE_ERR_INVALID, "fit",
                                  "the C header cannot compare strings; rule '%s'", text);
        } else {
            word[0] = text[i];
            word[1] = '\0';
        }
        int w = snprintf(out + len, size - len, "%s", piece);
        if (w < 0 || (size_t)w >= size - len)
            return tune_error_set(err, TUNE_ERR_INVALID, "fit", "rule too long: '%s'", text);
        len += (size_t)w;
        i += adv;
    }
    return TUNE_OK;
}

tune_status fit_write_header(const fit_data *d, const char *rule_in, const char *comment, FILE *f,
                             tune_error *err)
{
    tune_error perr = {0};
    expr *e = expr_parse(rule_in, &perr);
    if (!e)
        return tune_error_set(err, perr.code, perr.where, "rule '%s': %s", rule_in, perr.message);
    char *text = expr_to_string(e);
    expr_free(e);
    if (!text)
        return tune_error_set(err, TUNE_ERR_NOMEM, "fit", "out of memory");
    char body[4096];
    int used[TUNE_MAX_AXES] = {0};
    tune_status st = rule_to_c(d, text, body, sizeof body, used, err);
    if (st != TUNE_OK) {
        free(text);
        return st;
    }
    char guard[256];
    snprintf(guard, sizeof guard, "TUNE_PICK_%s_H", d->param);
    for (char *p = guard; *p; p++)
        *p = isalnum((unsigned char)*p) ? (char)toupper((unsigned char)*p) : '_';
    fprintf(f, "/* tune_pick_%s: the %s for a problem shape, from `tune fit`.\n", d->param,
            d->param);
    fprintf(f, " * Rule: %s\n", text);
    if (comment) {
        for (const char *p = comment; *p;) {
            size_t n = strcspn(p, "\n");
            fprintf(f, " * %.*s\n", (int)n, p);
            p += n + (p[n] == '\n');
        }
    }
    fprintf(f, " */\n#ifndef %s\n#define %s\n\n#include <stdint.h>\n\n%s\n", guard, guard,
            header_helpers);
    fprintf(f, "static inline int tune_pick_%s(", d->param);
    int any = 0;
    for (size_t a = 0; a < d->n_axes; a++)
        if (used[a])
            fprintf(f, "%sint64_t %s", any++ ? ", " : "", d->axes[a]);
    fprintf(f, "%s)\n{\n    return (int)(%s);\n}\n\n#endif\n", any ? "" : "void", body);
    free(text);
    return ferror(f) ? tune_error_set(err, TUNE_ERR_IO, "fit", "cannot write the header")
                     : TUNE_OK;
}

/* ---- Reading ---- */

tune_status fit_read_results(const char *const *dirs, size_t n_dirs, result_row **rows_out,
                             size_t *n_out, tune_error *err)
{
    return results_read_dirs(dirs, n_dirs, rows_out, n_out, err);
}
