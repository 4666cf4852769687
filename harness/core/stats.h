/* stats.h - summary statistics of timing samples.
 *
 *   double t[100]; ...
 *   stats_summary s;
 *   stats_summarize(t, 100, &s);   // t is left unchanged
 *   printf("%g +- %g\n", s.median, s.std_err);
 */
#ifndef TUNE_STATS_H
#define TUNE_STATS_H

#include <stddef.h>

typedef struct {
    size_t n;
    double median, mean, min, max;
    double stdev;   /* sample standard deviation (n - 1); 0 when n < 2 */
    double std_err; /* stdev / sqrt(n) */
    double p10, p90; /* percentiles, linear interpolation between order statistics */
} stats_summary;

/* Summarises x[0..n) without modifying it. n == 0 gives a zeroed summary with NAN fields.
 * Returns 0, or -1 on allocation failure. */
int stats_summarize(const double *x, size_t n, stats_summary *out);

/* Percentile q in [0, 1] of sorted[0..n) (linear interpolation); NAN when n == 0. */
double stats_percentile_sorted(const double *sorted, size_t n, double q);

/* Relative spread (p90 - p10) / median; NAN when the median is 0 or n == 0. */
double stats_rel_spread(const stats_summary *s);

#endif
