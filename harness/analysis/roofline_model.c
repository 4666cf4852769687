#include "analysis/roofline_model.h"

#include <math.h>
#include <string.h>

#include "core/expr.h"
#include "core/point.h"
#include "model/traffic.h"

const char *roofline_term_str(roofline_term t)
{
    switch (t) {
    case ROOFLINE_TERM_FLOOR:
        return "floor";
    case ROOFLINE_TERM_CHAIN:
        return "chain";
    case ROOFLINE_TERM_TRANSFER:
        return "transfer";
    case ROOFLINE_TERM_COMPUTE:
        return "compute";
    case ROOFLINE_TERM_ISSUE:
        return "issue";
    }
    return "?";
}

tune_status roofline_traffic_eval(const tune_family *fam, const result_row *row,
                                  const roofline_ceilings *dev, roofline_traffic *out,
                                  tune_error *err)
{
    const char *method = row->method ? row->method : "";
    const traffic_model *t =
        fam ? traffic_find(fam->traffic, fam->n_traffic, row->op, method) : NULL;
    out->flops = row->flops;
    out->has_precision = 0;
    out->precision = ROOFLINE_FP32;
    out->modelled = t != NULL;
    out->issue = out->issue_dram = out->issue_scattered = out->dram_random = 0;
    out->issue_scattered_dram = 0;
    if (!t) {
        out->dram = row->bytes;
        out->launches = 1;
        out->chain = 0;
        return TUNE_OK;
    }
    tune_point p;
    memset(&p, 0, sizeof p);
    for (size_t a = 0; a < row->n_axes && a < row->values.n; a++)
        point_set(&p, row->values.names[a], row->values.vals[a]);
    (void)family_set_dsize(fam, &p); /* an unknown dtype: no dsize, as the model then reads */
    traffic_set_device(&p, dev ? dev->sm_count : 0, dev ? dev->l2_bytes : 0,
                          dev ? dev->fetch_bytes : NAN);
    traffic_value v = {0};
    tune_status st = traffic_eval(t, &p, row->flops, &v, err);
    const traffic_pattern *pat =
        traffic_find_pattern(fam->traffic_patterns, fam->n_traffic_patterns, row->op, method);
    if (st == TUNE_OK && pat)
        st = traffic_pattern_eval(pat, &p, &v, err);
    out->dram = v.dram;
    out->launches = v.launches;
    out->chain = v.chain;
    out->flops = v.flops;
    out->issue = v.issue;
    out->issue_dram = v.issue_dram;
    out->issue_scattered = v.issue_scattered;
    out->dram_random = v.dram_random;
    out->issue_scattered_dram = v.issue_scattered_dram;
    if (st == TUNE_OK && t->precision) {
        out->has_precision = 1;
        if (roofline_precision_parse(t->precision, &out->precision) != 0)
            st = tune_error_set(err, TUNE_ERR_INVALID, "traffic model",
                                "%s: unknown precision '%s'", method, t->precision);
    }
    return st;
}

static double known(double x)
{
    return isfinite(x) && x > 0 ? x : NAN;
}

double roofline_model_time(const roofline_ceilings *c, const roofline_traffic *t,
                           roofline_precision p, roofline_terms *terms)
{
    _Static_assert(ROOFLINE_TERM_FLOOR == 0 && ROOFLINE_TERM_CHAIN == 1 &&
                       ROOFLINE_TERM_TRANSFER == 2 && ROOFLINE_TERM_COMPUTE == 3 &&
                       ROOFLINE_TERM_ISSUE == 4 && ROOFLINE_N_TERMS == 5,
                   "roofline_term follows traffic_time's order of terms");
    if (t->has_precision)
        p = t->precision;
    const traffic_ceilings fc = {
        .floor_s = isfinite(known(c->floor_s)) ? c->floor_s : known(c->launch_s),
        .latency_s = known(c->latency_s),
        .bw = known(c->read_bw),
        .rate = (unsigned)p < ROOFLINE_N_PRECISIONS ? known(c->rate[p]) : NAN,
        .elem_s = known(c->gather_elem_s),
        .elem_scattered_s = known(c->gather_elem_t_s),
        .sector_bw = known(c->sector_bw),
        .elem_scattered_dram_s = known(c->gather_elem_t_dram_s)};
    const traffic_value v = {.dram = t->dram,
                                    .launches = t->launches,
                                    .chain = t->chain,
                                    .flops = t->flops,
                                    .issue = t->issue,
                                    .issue_dram = t->issue_dram,
                                    .issue_scattered = t->issue_scattered,
                                    .dram_random = t->dram_random,
                                    .issue_scattered_dram = t->issue_scattered_dram};
    double v5[ROOFLINE_N_TERMS];
    roofline_terms m = {0};
    m.total = traffic_time(&v, &fc, v5);
    m.floor = v5[0];
    m.chain = v5[1];
    m.transfer = v5[2];
    m.compute = v5[3];
    m.issue = v5[4];
    for (int i = 1; i < ROOFLINE_N_TERMS; i++)
        if (v5[i] > v5[m.dominant])
            m.dominant = (roofline_term)i;
    if (terms)
        *terms = m;
    return m.total;
}

double roofline_pct_read_bw(const roofline_traffic *t, double time_s, double read_bw)
{
    if (!(isfinite(t->dram) && known(time_s) > 0 && known(read_bw) > 0))
        return NAN;
    return 100.0 * t->dram / time_s / read_bw;
}

void roofline_model_fill_row(const tune_family *fam, const roofline_ceilings *c, result_row *row)
{
    roofline_traffic t;
    if (roofline_traffic_eval(fam, row, c, &t, NULL) != TUNE_OK)
        return;
    row->model_time =
        roofline_model_time(c, &t, roofline_row_precision(row, fam ? fam->dtype_axis : "dtype"),
                            NULL);
    if (!t.modelled)
        return;
    row->dram_bytes = t.dram;
    row->pct_read_bw = roofline_pct_read_bw(&t, row->time.median, row->read_bw);
}
