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
#include "analysis/fit_impl.h"


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
    size_t j = ok ? fit_value_index(d, v) : FIT_NONE;
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
            n = fit_unique_i64(c2s, n);
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
        se->best_cost = d->best_cost[s];
        se->rule_cost = se->efficiency = NAN;
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
        size_t j = se->evaluated ? fit_value_index(d, se->rule_value) : FIT_NONE;
        if (j != FIT_NONE && isfinite(d->cost[s * d->n_values + j])) {
            se->feasible = 1;
            se->rule_cost = d->cost[s * d->n_values + j];
            se->efficiency = se->best_cost / se->rule_cost;
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
