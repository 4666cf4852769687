/* search_gain.c - the model's informed rounds under the run's budget (docs/search.md): each
 * evaluation of the round goes where it is most likely to bring a shape within GAIN_MARGIN of
 * its best, per second of measuring.
 *
 * A candidate's chance is the probability of improvement (Kushner 1964; Jones 2001) with a
 * margin: that its time is below the shape's best success / (1 + GAIN_MARGIN), its log time
 * taken as normal around the shape's level plus the forest's mean, with the trees' spread and
 * GAIN_SIGMA0 (what the trees cannot see: noise, the forest's own error) as its deviation. The
 * shape's level is the mean over its successes of log time less the forest's mean, so that a
 * shape with one success is placed as well as one with many (a shape with no success yet: the
 * bar is its best predicted mean). Chances are kept as logs, so that far below 1e-300 they
 * still rank. The round is filled greedily: the
 * next evaluation is the open candidate of highest chance x (the chance that the shape's picks
 * so far all miss) / the candidate's relative cost (search_pool_costs), as in expected improvement
 * per second (Snoek, Larochelle and Adams, "Practical Bayesian Optimization of Machine Learning
 * Algorithms", NIPS 2012).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "model/search_impl.h"

/* Constants chosen on the replays of w4a16 and sparq_h200 and the tests (docs/search.md): a
 * margin of 1 % (against 3 %: the synthetic test's optimum within 1 % in 28 of 40 runs, not 30);
 * a cost power of 0.85 (0.8: sparq 15 / 15 of 36 within 3 % at 10 %, w4a16 86 / 85 of 90 at 20 %
 * in 23.8 % of the exhaustive GPU time, but model >= random on 0.88 of the committed H200 run's
 * shapes at 10 %, not 0.9; 0.7: w4a16 in 25.1 %; 0.5: 28.8 %). */
#define GAIN_MARGIN 0.01 /* a pick's success: 1 % below the shape's best */
#define GAIN_SIGMA0 0.05 /* log time: the deviation the trees' spread does not show */

#define GAIN_SIGMA_NEW 0.2 /* log time: more where the shape has no success of the method */
/* A chance is divided by the cost to this power: 1 starves the costly shapes (their unmeasured
 * methods), 0 ignores what a shape costs (docs/search.md). */
#define GAIN_COST_POWER 0.85
/* The last round first gives each shape of relative cost (search_pool_costs) at most this its
 * candidate of best predicted mean: what the round ends with is exploited, not explored. */
#define GAIN_EXPLOIT_COST 1.5
enum { GAIN_METHODS = 32 };

static int gain_has(const double *seen, size_t n, double m)
{
    if (n == SIZE_MAX)
        return 1;
    for (size_t k = 0; k < n; k++)
        if (seen[k] == m || (isnan(seen[k]) && isnan(m)))
            return 1;
    return 0;
}

/* log Phi(z), the standard normal's distribution function, without underflow. */
static double gain_log_phi(double z)
{
    if (z > -30)
        return log(0.5 * erfc(-z / sqrt(2.0)));
    return -0.5 * z * z - log(-z) - 0.5 * log(2 * M_PI); /* the tail's first term */
}

typedef struct {
    double chance, tie, cost; /* chance: its log */
    size_t cand;
} gain_pick;

static int cmp_gain(const void *pa, const void *pb)
{
    const gain_pick *a = pa, *b = pb;
    if (a->chance != b->chance)
        return a->chance > b->chance ? -1 : 1;
    return (a->tie > b->tie) - (a->tie < b->tie);
}

/* Per shape its best success's log time (INFINITY: none) and its level (0: none). */
static void gain_levels(const search *s, const double *mean, double *best, double *level)
{
    for (size_t i = 0; i < s->n_shapes; i++) {
        const search_shape *sh = &s->shapes[i];
        double sum = 0, lo = INFINITY;
        size_t n = 0;
        for (size_t k = 0; k < sh->n_cands; k++) {
            const search_cand *c = &s->cands[sh->cands[k]];
            if (!c->evaluated || !(c->value > 0))
                continue;
            double y = log(c->value);
            lo = y < lo ? y : lo;
            sum += y - mean[sh->cands[k]];
            n++;
        }
        best[i] = lo;
        level[i] = n ? sum / (double)n : 0;
    }
}

/* The methods (values of feature fm) of shape i's successes into seen (at most GAIN_METHODS:
 * beyond, every method counts as seen); how many. */
static size_t gain_seen(const search *s, size_t i, size_t fm, double *seen)
{
    const search_shape *sh = &s->shapes[i];
    size_t n = 0;
    for (size_t k = 0; fm < s->n_features && k < sh->n_cands; k++) {
        const search_cand *c = &s->cands[sh->cands[k]];
        if (!c->evaluated || !(c->value > 0) || gain_has(seen, n, c->x[fm]))
            continue;
        if (n == GAIN_METHODS)
            return SIZE_MAX;
        seen[n++] = c->x[fm];
    }
    return n;
}

/* The open candidates of every shape into g, each shape's from head[i] to end[i], by chance. */
static size_t gain_chances(const search *s, const double *mean, const double *sd,
                           const uint8_t *matches, const double *cost, double t_med, gain_pick *g,
                           size_t *head, size_t *end)
{
    size_t n = 0, ns = s->n_shapes;
    double *best = malloc((ns + 1) * sizeof *best), *level = malloc((ns + 1) * sizeof *level);
    if (!best || !level) {
        free(best), free(level);
        return 0;
    }
    gain_levels(s, mean, best, level);
    size_t fm = search_feature_index(s, "method");
    for (size_t i = 0; i < ns; i++) {
        const search_shape *sh = &s->shapes[i];
        int first = sh->n_evaluated + sh->n_pending == 0;
        double seen[GAIN_METHODS];
        size_t n_seen = gain_seen(s, i, fm, seen);
        /* the bar: the best success less the margin, at the shape's level; with no success yet,
         * the best predicted mean (its candidate's chance is one half) */
        double bar = INFINITY;
        for (size_t k = 0; !isfinite(best[i]) && k < sh->n_cands; k++)
            if (!s->cands[sh->cands[k]].evaluated && mean[sh->cands[k]] < bar)
                bar = mean[sh->cands[k]];
        if (isfinite(best[i]))
            bar = best[i] - log1p(GAIN_MARGIN) - level[i];
        head[i] = n;
        for (size_t k = 0; k < sh->n_cands; k++) {
            size_t ci = sh->cands[k];
            const search_cand *c = &s->cands[ci];
            if (c->evaluated || c->proposed)
                continue;
            double extra =
                fm < s->n_features && !gain_has(seen, n_seen, c->x[fm]) ? GAIN_SIGMA_NEW : 0;
            double dev = sqrt(sd[ci] * sd[ci] + GAIN_SIGMA0 * GAIN_SIGMA0 + extra * extra);
            double z = (bar - mean[ci]) / dev;
            uint64_t h = s->opt.seed ^ (0xd1b54a32d192ed03ull * (uint64_t)(c->id + 1));
            g[n].chance = gain_log_phi(z) + (first ? matches[ci] : 0); /* a rule's first */
            g[n].tie = search_rng_uniform(&h);
            double t = exp(level[i] + mean[ci]); /* the candidate's predicted time */
            g[n].cost = isfinite(best[i]) && t_med > 0 ? (t + t_med) / (2 * t_med) : cost[i];
            g[n++].cand = ci;
        }
        end[i] = n;
        qsort(g + head[i], n - head[i], sizeof *g, cmp_gain);
    }
    free(best), free(level);
    return n;
}

size_t search_gain_pick(search *s, size_t *ids, size_t size, const double *mean, const double *sd,
                        const uint8_t *matches, const double *cost, double t_med)
{
    size_t ns = s->n_shapes, out = 0;
    gain_pick *g = malloc((s->n_cands ? s->n_cands : 1) * sizeof *g);
    size_t *head = malloc((ns + 1) * sizeof *head), *end = malloc((ns + 1) * sizeof *end);
    double *miss = malloc((ns + 1) * sizeof *miss);
    if (g && head && end && miss)
        gain_chances(s, mean, sd, matches, cost, t_med, g, head, end);
    for (size_t i = 0; g && head && end && miss && i < ns; i++)
        miss[i] = 0; /* the log of the chance that the shape's picks so far all miss */
    size_t left = search_budget_total(s) - s->n_observed - s->n_pending;
    int ok = g && head && end && miss;
    for (size_t i = 0; ok && size >= left && i < ns && out < size; i++) {
        if (head[i] == end[i] || cost[i] > GAIN_EXPLOIT_COST)
            continue;
        size_t lo = head[i];
        for (size_t k = head[i]; k < end[i]; k++)
            if (mean[g[k].cand] < mean[g[lo].cand])
                lo = k;
        gain_pick t = g[lo];
        for (size_t k = lo; k > head[i]; k--)
            g[k] = g[k - 1];
        g[head[i]] = t;
        const gain_pick *p = &g[head[i]++];
        miss[i] += p->chance < 0 ? log1p(-exp(p->chance)) : -INFINITY;
        s->cands[p->cand].proposed = 1;
        ids[out++] = s->cands[p->cand].id;
    }
    while (ok && out < size) {
        size_t top = ns;
        double q = -INFINITY;
        for (size_t i = 0; i < ns; i++) {
            if (head[i] == end[i])
                continue;
            double v = g[head[i]].chance + miss[i] - GAIN_COST_POWER * log(g[head[i]].cost);
            if (top == ns || v > q)
                q = v, top = i;
        }
        if (top == ns)
            break;
        const gain_pick *p = &g[head[top]++];
        miss[top] += p->chance < 0 ? log1p(-exp(p->chance)) : -INFINITY;
        s->cands[p->cand].proposed = 1;
        ids[out++] = s->cands[p->cand].id;
    }
    free(g), free(head), free(end), free(miss);
    return out;
}
