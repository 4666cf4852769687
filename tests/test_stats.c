#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>

#include "core/stats.h"

#define EPS 1e-12

typedef struct {
    double x[8];
    size_t n;
    double median, mean, min, max, stdev, std_err, p10, p90;
} stats_case;

/* Expected values computed by hand: sorted samples, pos = q * (n - 1), interpolate. */
static stats_case cases[] = {
    /* odd: sorted 1 2 3; ss = 2, stdev = sqrt(2 / 2) */
    {{3, 1, 2}, 3, 2.0, 2.0, 1, 3, 1.0, 0.57735026918962573, 1.2, 2.8},
    /* even: sorted 1 2 3 4; ss = 5, stdev = sqrt(5 / 3); p10 pos 0.3, p90 pos 2.7 */
    {{4, 1, 3, 2}, 4, 2.5, 2.5, 1, 4, 1.2909944487358056, 0.6454972243679028, 1.3, 3.7},
    /* n = 1: no spread */
    {{5}, 1, 5, 5, 5, 5, 0, 0, 5, 5},
    /* duplicates and an outlier: sorted 1 1 1 1 11; mean 3, ss = 4 * 4 + 64 = 80 */
    {{1, 11, 1, 1, 1}, 5, 1, 3, 1, 11, 4.4721359549995796, 2.0, 1, 7},
};

ParameterizedTestParameters(stats, summarize)
{
    return cr_make_param_array(stats_case, cases, 4);
}

ParameterizedTest(stats_case *c, stats, summarize)
{
    double copy[8];
    memcpy(copy, c->x, sizeof copy);
    stats_summary s;
    cr_assert_eq(stats_summarize(c->x, c->n, &s), 0);
    cr_expect_eq(s.n, c->n);
    cr_expect_float_eq(s.median, c->median, EPS);
    cr_expect_float_eq(s.mean, c->mean, EPS);
    cr_expect_float_eq(s.min, c->min, EPS);
    cr_expect_float_eq(s.max, c->max, EPS);
    cr_expect_float_eq(s.stdev, c->stdev, EPS);
    cr_expect_float_eq(s.std_err, c->std_err, EPS);
    cr_expect_float_eq(s.p10, c->p10, EPS);
    cr_expect_float_eq(s.p90, c->p90, EPS);
    cr_expect_arr_eq(copy, c->x, sizeof copy, "input must be left unchanged");
}

Test(stats, empty_gives_nan_fields)
{
    stats_summary s;
    s.n = 99;
    cr_assert_eq(stats_summarize(NULL, 0, &s), 0);
    cr_expect_eq(s.n, 0);
    cr_expect(isnan(s.median) && isnan(s.mean) && isnan(s.min) && isnan(s.max));
    cr_expect(isnan(s.stdev) && isnan(s.std_err) && isnan(s.p10) && isnan(s.p90));
    cr_expect(isnan(stats_rel_spread(&s)));
}

Test(stats, percentile_edges)
{
    double s[] = {10, 20, 30, 40, 50};
    cr_expect_float_eq(stats_percentile_sorted(s, 5, 0.0), 10, EPS);
    cr_expect_float_eq(stats_percentile_sorted(s, 5, 1.0), 50, EPS);
    cr_expect_float_eq(stats_percentile_sorted(s, 5, 0.5), 30, EPS);
    cr_expect_float_eq(stats_percentile_sorted(s, 5, 0.25), 20, EPS);
    cr_expect_float_eq(stats_percentile_sorted(s, 5, 0.99), 49.6, 1e-9);
    cr_expect_float_eq(stats_percentile_sorted(s, 1, 0.7), 10, EPS);
    cr_expect(isnan(stats_percentile_sorted(s, 0, 0.5)));
}

Test(stats, rel_spread)
{
    double x[] = {3, 1, 2};
    stats_summary s;
    stats_summarize(x, 3, &s);
    cr_expect_float_eq(stats_rel_spread(&s), (2.8 - 1.2) / 2.0, EPS);
    double z[] = {0, 0, 0};
    stats_summarize(z, 3, &s);
    cr_expect(isnan(stats_rel_spread(&s)));
}
