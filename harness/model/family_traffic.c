/* family_traffic.c - the traffic models' lookup and evaluation and the time model's formula, apart
 * from family.c so that the CPU library's users (the roofline model, sharding) need not link the
 * family registry that family_find reads. */
#include "model/family.h"

#include <math.h>
#include <string.h>

#include "core/expr.h"

const family_traffic *family_find_traffic(const tune_family *fam, const char *op,
                                          const char *method)
{
    const family_traffic *any = NULL;
    for (size_t i = 0; fam && op && i < fam->n_traffic; i++) {
        const family_traffic *t = &fam->traffic[i];
        if (t->op && strcmp(t->op, op) != 0)
            continue;
        if (!t->method)
            any = any ? any : t;
        else if (method && strcmp(t->method, method) == 0)
            return t;
    }
    return any;
}

/* One field of a traffic model at point p; text NULL gives dflt. */
static tune_status eval_field(const char *method, const char *field, const char *text,
                              double dflt, const tune_point *p, double *out, tune_error *err)
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

tune_status family_traffic_eval(const family_traffic *t, const tune_point *p, double flops,
                                family_traffic_value *out, tune_error *err)
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
    return st;
}

double family_traffic_time(const family_traffic_value *v, const family_time_ceilings *c,
                           double terms[5])
{
    double transfer = isfinite(v->dram) && v->dram >= 0 ? v->dram / c->bw : NAN;
    double compute = isfinite(v->flops) && v->flops >= 0 ? v->flops / c->rate : NAN;
    /* the issue-bound step: its elements at elem_s, or its own bytes when those take longer */
    double issue = v->issue > 0 && isfinite(c->elem_s) ? v->issue * c->elem_s : 0;
    double step_dram = isfinite(transfer) && v->issue_dram > 0 && issue > 0
                           ? fmin(v->issue_dram, v->dram) / c->bw
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
