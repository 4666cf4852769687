#include "analysis/roofline.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/point.h"
#include "core/stats.h"

const char *roofline_bound_str(roofline_bound b)
{
    switch (b) {
    case ROOFLINE_BOUND_MEMORY:
        return "memory";
    case ROOFLINE_BOUND_COMPUTE:
        return "compute";
    case ROOFLINE_BOUND_LAUNCH:
        return "launch";
    }
    return "?";
}

static double positive_or_nan(double x)
{
    return isfinite(x) && x > 0 ? x : NAN;
}

double roofline_time(const roofline_ceilings *c, double bytes, double flops, roofline_precision p,
                     roofline_bound *bound)
{
    double bw = fmax(positive_or_nan(c->read_bw), positive_or_nan(c->copy_bw)); /* fmax skips NAN */
    double rate = (unsigned)p < ROOFLINE_N_PRECISIONS ? positive_or_nan(c->rate[p]) : NAN;
    double terms[3] = {isfinite(bytes) && bytes >= 0 ? bytes / bw : NAN,
                       isfinite(flops) && flops >= 0 ? flops / rate : NAN,
                       positive_or_nan(c->launch_s)};
    double t = NAN;
    roofline_bound b = ROOFLINE_BOUND_MEMORY;
    for (int i = 0; i < 3; i++)
        if (isfinite(terms[i]) && (isnan(t) || terms[i] > t)) {
            t = terms[i];
            b = (roofline_bound)i;
        }
    if (bound)
        *bound = b;
    return t;
}

roofline_precision roofline_row_precision(const result_row *row, const char *dtype_axis)
{
    roofline_precision p = ROOFLINE_FP32;
    const char *dtype = dtype_axis ? point_str(&row->values, dtype_axis, NULL) : NULL;
    if (dtype && roofline_precision_parse(dtype, &p) == 0)
        return p;
    return ROOFLINE_FP32;
}

void roofline_predict_rows(const roofline_ceilings *c, const result_row *rows, size_t n,
                           const char *dtype_axis, double *pred, roofline_bound *bound)
{
    for (size_t i = 0; i < n; i++) {
        roofline_bound b = ROOFLINE_BOUND_MEMORY;
        double bytes = rows[i].bytes, flops = rows[i].flops;
        pred[i] = isfinite(bytes) || isfinite(flops)
                      ? roofline_time(c, bytes, flops, roofline_row_precision(&rows[i], dtype_axis), &b)
                      : NAN;
        if (bound)
            bound[i] = b;
    }
}

void roofline_error_compute(const double *pred, const double *meas, size_t n, roofline_error *out)
{
    memset(out, 0, sizeof *out);
    double sum_log_err = 0, sum_log_ratio = 0;
    out->worst_error = NAN;
    for (size_t i = 0; i < n; i++) {
        if (!(isfinite(pred[i]) && pred[i] > 0 && isfinite(meas[i]) && meas[i] > 0))
            continue;
        double lr = log(pred[i] / meas[i]);
        double e = exp(fabs(lr));
        sum_log_ratio += lr;
        sum_log_err += fabs(lr);
        if (out->n == 0 || e > out->worst_error) {
            out->worst_error = e;
            out->worst = i;
        }
        out->n++;
    }
    out->gmean_error = out->n ? exp(sum_log_err / (double)out->n) : NAN;
    out->gmean_ratio = out->n ? exp(sum_log_ratio / (double)out->n) : NAN;
}

