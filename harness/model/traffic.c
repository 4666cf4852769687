/* traffic.c - the traffic models' lookup and evaluation and the time model's formula. */
#include "model/traffic.h"

#include <math.h>
#include <string.h>

#include "core/expr.h"

/* How an entry for (e_op, e_method) matches (op, method): 2 names both, 1 is the op's entry for
 * every method, 0 does not match. */
static int entry_match(const char *e_op, const char *e_method, const char *op, const char *method)
{
    if (!op || (e_op && strcmp(e_op, op) != 0))
        return 0;
    if (!e_method)
        return 1;
    return method && strcmp(e_method, method) == 0 ? 2 : 0;
}

int traffic_set_device(tune_point *p, int sm_count, double l2_bytes, double fetch_bytes)
{
    if (sm_count > 0 && point_set_int(p, "sm_count", sm_count) != 0)
        return -1;
    if (l2_bytes > 0 && point_set_int(p, "l2_bytes", (int64_t)l2_bytes) != 0)
        return -1;
    int fetch = fetch_bytes == 64 || fetch_bytes == 128 ? (int)fetch_bytes : 32;
    return point_set_int(p, "fetch_bytes", fetch);
}

const traffic_model *traffic_find(const traffic_model *models, size_t n, const char *op,
                                  const char *method)
{
    const traffic_model *any = NULL;
    for (size_t i = 0; models && i < n; i++) {
        int m = entry_match(models[i].op, models[i].method, op, method);
        if (m == 2)
            return &models[i];
        if (m == 1 && !any)
            any = &models[i];
    }
    return any;
}

const traffic_pattern *traffic_find_pattern(const traffic_pattern *patterns, size_t n,
                                            const char *op, const char *method)
{
    const traffic_pattern *any = NULL;
    for (size_t i = 0; patterns && i < n; i++) {
        int m = entry_match(patterns[i].op, patterns[i].method, op, method);
        if (m == 2)
            return &patterns[i];
        if (m == 1 && !any)
            any = &patterns[i];
    }
    return any;
}

/* One field of a traffic model at point p; text NULL gives dflt. */
static tune_status eval_field(const char *method, const char *field, const char *text, double dflt,
                              const tune_point *p, double *out, tune_error *err)
{
    if (!text) {
        *out = dflt;
        return TUNE_OK;
    }
    tune_error e = {0};
    expr *x = expr_parse(text, &e);
    expr_value v;
    tune_status st = x ? expr_eval(x, point_lookup, (void *)p, &v, &e) : e.code;
    expr_free(x);
    if (st != TUNE_OK)
        return tune_error_set(err, st, "traffic model", "%s: %s \"%s\": %s", method, field, text,
                              e.message);
    *out = expr_value_as_double(v);
    if (!(isfinite(*out) && *out >= 0))
        return tune_error_set(err, TUNE_ERR_EVAL, "traffic model",
                              "%s: %s \"%s\" is %g: expected a finite number >= 0", method, field,
                              text, *out);
    return TUNE_OK;
}

tune_status traffic_eval(const traffic_model *t, const tune_point *p, double flops,
                         traffic_value *out, tune_error *err)
{
    const char *method = t->method ? t->method : "every method";
    tune_status st = eval_field(method, "dram", t->dram, NAN, p, &out->dram, err);
    if (st == TUNE_OK)
        st = eval_field(method, "launches", t->launches, 1, p, &out->launches, err);
    if (st == TUNE_OK)
        st = eval_field(method, "chain", t->chain, 0, p, &out->chain, err);
    if (st == TUNE_OK)
        st = eval_field(method, "flops", t->flops, flops, p, &out->flops, err);
    if (st == TUNE_OK)
        st = eval_field(method, "issue", t->issue, 0, p, &out->issue, err);
    if (st == TUNE_OK)
        st = eval_field(method, "issue_dram", t->issue_dram, 0, p, &out->issue_dram, err);
    out->issue_scattered = out->dram_random = out->issue_scattered_dram = 0;
    return st;
}

tune_status traffic_pattern_eval(const traffic_pattern *t, const tune_point *p, traffic_value *out,
                                 tune_error *err)
{
    const char *method = t->method ? t->method : "every method";
    tune_status st =
        eval_field(method, "issue_scattered", t->issue_scattered, 0, p, &out->issue_scattered, err);
    if (st == TUNE_OK)
        st = eval_field(method, "dram_random", t->dram_random, 0, p, &out->dram_random, err);
    if (st == TUNE_OK)
        st = eval_field(method, "issue_scattered_dram", t->issue_scattered_dram, 0, p,
                        &out->issue_scattered_dram, err);
    return st;
}

/* Seconds to move `bytes`, `random` of them (at most all) as random sectors. */
static double move_time(double bytes, double random, const traffic_ceilings *c)
{
    double r = fmin(random > 0 ? random : 0, bytes);
    double sector_bw = isfinite(c->sector_bw) && c->sector_bw > 0 ? c->sector_bw : c->bw;
    return r > 0 ? (bytes - r) / c->bw + r / sector_bw : bytes / c->bw;
}

/* Seconds of the issue-bound step's instructions: 0 without one or without elem_s. */
static double issue_time(const traffic_value *v, const traffic_ceilings *c)
{
    if (!(v->issue > 0 && isfinite(c->elem_s)))
        return 0;
    double scattered = fmin(v->issue_scattered > 0 ? v->issue_scattered : 0, v->issue);
    double from_dram = fmin(v->issue_scattered_dram > 0 ? v->issue_scattered_dram : 0, scattered);
    double elem_scattered_s =
        isfinite(c->elem_scattered_s) && c->elem_scattered_s > 0 ? c->elem_scattered_s : c->elem_s;
    double elem_dram_s = isfinite(c->elem_scattered_dram_s) && c->elem_scattered_dram_s > 0
                             ? c->elem_scattered_dram_s
                             : elem_scattered_s;
    return (v->issue - scattered) * c->elem_s + (scattered - from_dram) * elem_scattered_s +
           from_dram * elem_dram_s;
}

double traffic_time(const traffic_value *v, const traffic_ceilings *c, double terms[5])
{
    double transfer =
        isfinite(v->dram) && v->dram >= 0 ? move_time(v->dram, v->dram_random, c) : NAN;
    double compute = isfinite(v->flops) && v->flops >= 0 ? v->flops / c->rate : NAN;
    /* the issue-bound step: its elements at elem_s, or its own bytes (the random sectors among
     * them first) when those take longer */
    double issue = issue_time(v, c);
    double step_dram = isfinite(transfer) && v->issue_dram > 0 && issue > 0
                           ? move_time(fmin(v->issue_dram, v->dram), v->dram_random, c)
                           : 0;
    double rest = isfinite(transfer) ? transfer - step_dram : 0;
    double hidden = fmin(step_dram, issue); /* transfer under the step's issue time */
    const double t[5] = {isfinite(c->floor_s) ? v->launches * c->floor_s : 0,
                         isfinite(c->latency_s) ? v->chain * c->latency_s : 0,
                         isfinite(transfer) ? transfer - hidden : 0,
                         isfinite(compute) ? compute : 0, issue};
    if (terms)
        memcpy(terms, t, sizeof t);
    return isfinite(transfer) || isfinite(compute)
               ? t[0] + t[1] + fmax(rest, t[3]) + fmax(issue, step_dram)
               : NAN;
}
