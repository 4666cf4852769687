#include "core/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int stats_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double stats_percentile_sorted(const double *sorted, size_t n, double q)
{
    if (n == 0)
        return NAN;
    if (q <= 0.0)
        return sorted[0];
    if (q >= 1.0)
        return sorted[n - 1];
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    if (lo + 1 >= n)
        return sorted[n - 1];
    double frac = pos - (double)lo;
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

static void stats_set_empty(stats_summary *out)
{
    memset(out, 0, sizeof *out);
    out->median = out->mean = out->min = out->max = NAN;
    out->stdev = out->std_err = out->p10 = out->p90 = NAN;
}

static void stats_moments(const double *x, size_t n, stats_summary *out)
{
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    out->mean = sum / (double)n;
    double ss = 0.0;
    for (size_t i = 0; i < n; i++)
        ss += (x[i] - out->mean) * (x[i] - out->mean);
    out->stdev = n < 2 ? 0.0 : sqrt(ss / (double)(n - 1));
    out->std_err = out->stdev / sqrt((double)n);
}

int stats_summarize(const double *x, size_t n, stats_summary *out)
{
    stats_set_empty(out);
    if (n == 0)
        return 0;
    double *s = malloc(n * sizeof *s);
    if (!s)
        return -1;
    memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, stats_cmp_double);
    out->n = n;
    out->min = s[0];
    out->max = s[n - 1];
    out->median = stats_percentile_sorted(s, n, 0.5);
    out->p10 = stats_percentile_sorted(s, n, 0.1);
    out->p90 = stats_percentile_sorted(s, n, 0.9);
    free(s);
    stats_moments(x, n, out);
    return 0;
}

double stats_rel_spread(const stats_summary *s)
{
    if (s->n == 0 || s->median == 0.0)
        return NAN;
    return (s->p90 - s->p10) / s->median;
}
