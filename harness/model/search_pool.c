/* search_pool.c - the run's budget (SEARCH_SCOPE_RUN, docs/search.md): the evaluations of every
 * shape come from one pool, and each round the strategy shares the round's evaluations among the
 * shapes.
 *
 * Rounds: a round has at most the sum over the shapes of their batches (search_default_batch:
 * the model's 3.4 % of each shape's candidates, so that 10 % takes 3 rounds; random and
 * exhaustive: everything in one round), and what is left of the budget is spread evenly over the
 * rounds it needs. Exhaustive and random share a round in proportion to the candidates a shape
 * has left (each shape at least one while the round allows), in their orders. The model:
 *   - plans each shape's share of the run's budget: in proportion to its candidates, but at
 *     least one evaluation per method (the "method" feature) plus POOL_EXTRA, so that a shape of
 *     10 candidates over 3 methods gets 5 where 10 % would give it 1;
 *   - once a shape's cost is known (its successes' times), a shape that costs POOL_COSTLY times
 *     the median shape or more has its methods alone as its floor;
 *   - each round shares its evaluations in proportion to what the plans leave (Sainte-Lague);
 *   - with nothing known (no forest yet), a shape's share covers each of its methods once (drawn
 *     at random, rules first), and the round keeps the rest of the budget for informed rounds;
 *   - informed rounds take a shape's candidates of lowest confidence bound, as with budgets per
 *     shape (search_model.c), the forest fitted on every shape;
 *   - the last round is the floor: each shape first gets, for each of its methods, the
 *     candidate of best predicted mean when that mean is below the method's best success (or
 *     the method has none), then the best predicted means.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"
#include "model/search_impl.h"

/* Constants chosen on the replay of w4a16 (docs/search.md): shapes within 3 % of their best at a
 * 10 % budget, median / worst of 20 seeds, 39.5 / 27 with 1 extra evaluation, 39.5 / 33 with 2,
 * 41 / 28 with 3, 38 / 31 with 4; kappa 0.5 against 0 and 1: 39.5 / 33, 39 / 25, 38 / 23 (with 1
 * extra). */
#define POOL_EXTRA 2          /* a shape's plan: at least its methods and this many more */
#define POOL_KAPPA 0.5        /* informed rounds: mean - KAPPA x spread */
#define POOL_BLIND_SHARE 0.34 /* of the budget spent with nothing known, at most */
/* A shape is costly at this relative cost (pool_costs) or more. Chosen on the replay of w4a16
 * (docs/search.md, "A plan aware of cost"): at 10 %, shapes within 3 % (median / worst seed) and
 * GPU time: 8: 41.5 / 30, 24.3 %; 4: 40 / 30, 23.7 %; 16: 41.5 / 29, 27.0 % (count-based: 42 /
 * 33, 31.0 %). */
#define POOL_COSTLY 8.0

size_t search_budget_total(const search *s)
{
    if (s->opt.scope == SEARCH_SCOPE_SHAPE) {
        size_t b = 0;
        for (size_t i = 0; i < s->n_shapes; i++)
            b += search_budget(s, i);
        return b;
    }
    return search_budget_of(&s->opt, s->n_cands, 0);
}

/* Candidates of shape i neither evaluated nor proposed. */
static size_t open_of(const search *s, size_t i)
{
    const search_shape *sh = &s->shapes[i];
    return sh->n_cands - sh->n_evaluated - sh->n_pending;
}

/* Shares total among n shapes: each gets min(lo[i], cap[i]) first (while the total lasts, one
 * each in shape order, then a second, ...), then the rest one at a time to the shape of highest
 * w[i] / (out[i] + 1/2) below its cap (Sainte-Lague: in proportion to w[i], the first share
 * counted; ties to the lower index). out[] is added to. */
static void apportion(size_t total, const double *w, const size_t *lo, const size_t *cap, size_t n,
                      size_t *out)
{
    size_t given = 0;
    for (size_t level = 1, more = 1; more && given < total; level++) {
        more = 0;
        for (size_t i = 0; i < n && given < total; i++)
            if (out[i] < level && level <= lo[i] && out[i] < cap[i]) {
                out[i]++, given++;
                more = 1;
            }
    }
    for (; given < total; given++) {
        size_t best = n;
        double top = 0;
        for (size_t i = 0; i < n; i++) {
            double q = out[i] < cap[i] && w[i] > 0 ? w[i] / ((double)out[i] + 0.5) : 0;
            if (q > top)
                top = q, best = i;
        }
        if (best == n)
            break;
        out[best]++;
    }
}

/* How many evaluations this round has: what is left of the budget spread evenly over the rounds
 * it needs at the strategy's batches (two at least when nothing is known and the model can
 * learn). 0 when the budget is spent. */
static size_t pool_round_size(const search *s, int blind)
{
    size_t total = search_budget_total(s), used = s->n_observed + s->n_pending, per = 0;
    if (used >= total)
        return 0;
    for (size_t i = 0; i < s->n_shapes; i++) {
        size_t b = search_default_batch(s, i), o = open_of(s, i);
        per += b < o ? b : o;
    }
    size_t left = total - used;
    if (per == 0)
        return 0;
    size_t rounds = (left + per - 1) / per;
    if (blind && rounds < 2 && left >= 2)
        rounds = 2;
    /* a space far larger than its budget (one round of batches would spend it all): three rounds,
     * so that at most POOL_BLIND_SHARE of the budget is spent blind */
    if (blind && per >= left && left >= 3)
        rounds = 3;
    size_t size = (left + rounds - 1) / rounds;
    if (blind && size > (size_t)ceil(POOL_BLIND_SHARE * (double)total) && rounds > 2)
        size = (size_t)ceil(POOL_BLIND_SHARE * (double)total);
    return size;
}

/* Exhaustive and random: shares in proportion to what each shape has left, in their orders. */
static size_t pool_ordered(search *s, size_t *ids, size_t cap, size_t size)
{
    size_t ns = s->n_shapes, n = 0;
    double *w = calloc(ns + 1, sizeof *w);
    size_t *lo = calloc(ns + 1, sizeof *lo), *hi = calloc(ns + 1, sizeof *hi);
    size_t *share = calloc(ns + 1, sizeof *share);
    if (!w || !lo || !hi || !share) {
        free(w), free(lo), free(hi), free(share);
        return 0;
    }
    for (size_t i = 0; i < ns; i++) {
        size_t b = search_default_batch(s, i), o = open_of(s, i);
        hi[i] = b < o ? b : o;
        w[i] = (double)o;
        lo[i] = 1;
    }
    apportion(size < cap ? size : cap, w, lo, hi, ns, share);
    for (size_t i = 0; i < ns; i++) {
        search_shape *sh = &s->shapes[i];
        for (size_t k = 0; k < sh->n_cands && share[i] > 0; k++) {
            search_cand *c = &s->cands[sh->order[k]];
            if (!c->evaluated && !c->proposed) {
                c->proposed = 1;
                ids[n++] = c->id;
                share[i]--;
            }
        }
    }
    free(w), free(lo), free(hi), free(share);
    return n;
}

/* ---- the model ---- */

typedef struct {
    double key, tie, method;
    int first; /* 1: before every other (a rule's match in a shape's first round, a floor) */
    size_t cand, rank;
} pool_pick;

static int cmp_pick(const void *pa, const void *pb)
{
    const pool_pick *a = pa, *b = pb;
    if (a->first != b->first)
        return a->first > b->first ? -1 : 1;
    if (a->key != b->key)
        return a->key > b->key ? -1 : 1;
    return (a->tie > b->tie) - (a->tie < b->tie);
}

static int cmp_method(const void *pa, const void *pb)
{
    const pool_pick *a = pa, *b = pb;
    if (a->method != b->method)
        return a->method < b->method ? -1 : 1;
    return (a->tie > b->tie) - (a->tie < b->tie);
}

static double pool_tie(const search *s, size_t id)
{
    uint64_t h = s->opt.seed ^ (0xd1b54a32d192ed03ull * (uint64_t)(id + 1));
    return search_rng_uniform(&h);
}

/* Shape i's open candidates into p (method: the "method" feature, 0 without one; rank: the
 * place among those of its method in a random order); their number. */
static size_t shape_picks(const search *s, size_t i, size_t fm, pool_pick *p)
{
    const search_shape *sh = &s->shapes[i];
    size_t n = 0;
    for (size_t k = 0; k < sh->n_cands; k++) {
        const search_cand *c = &s->cands[sh->cands[k]];
        if (c->evaluated || c->proposed)
            continue;
        double m = fm < s->n_features ? c->x[fm] : 0;
        p[n++] = (pool_pick){0, pool_tie(s, c->id), isnan(m) ? -1 : m, 0, sh->cands[k], 0};
    }
    qsort(p, n, sizeof *p, cmp_method);
    for (size_t k = 0; k < n; k++)
        p[k].rank = k > 0 && p[k].method == p[k - 1].method ? p[k - 1].rank + 1 : 0;
    return n;
}

static size_t propose(search *s, const pool_pick *p, size_t n, size_t want, size_t *ids)
{
    size_t out = 0;
    for (size_t k = 0; k < n && out < want; k++) {
        s->cands[p[k].cand].proposed = 1;
        ids[out++] = s->cands[p[k].cand].id;
    }
    return out;
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* The methods of shape i (distinct values of the "method" feature; 1 without it). */
static size_t shape_methods(const search *s, size_t i, size_t fm, double *tmp)
{
    const search_shape *sh = &s->shapes[i];
    if (fm >= s->n_features || sh->n_cands == 0)
        return sh->n_cands ? 1 : 0;
    for (size_t k = 0; k < sh->n_cands; k++) {
        double m = s->cands[sh->cands[k]].x[fm];
        tmp[k] = isnan(m) ? -1 : m;
    }
    qsort(tmp, sh->n_cands, sizeof *tmp, cmp_double);
    size_t n = 1;
    for (size_t k = 1; k < sh->n_cands; k++)
        n += tmp[k] != tmp[k - 1];
    return n;
}

/* Per shape into r[] the relative cost of an evaluation: (t + t_med) / (2 t_med), where t is the
 * geometric mean of the shape's successes' times and t_med the median of t over the shapes that
 * have one; t_med stands for what an evaluation costs whatever its kernel's time (a worker's
 * setup, the launch, the row: on the H200, about 60 timed runs of the median w4a16 shape). 1 for
 * a shape with no success yet, and for all while nothing is known. -1: out of memory. */
static int pool_costs(const search *s, double *r)
{
    size_t ns = s->n_shapes, k = 0;
    double *t = calloc(ns + 1, sizeof *t), *sorted = calloc(ns + 1, sizeof *sorted);
    if (!t || !sorted) {
        free(t), free(sorted);
        return -1;
    }
    for (size_t i = 0; i < ns; i++) {
        const search_shape *sh = &s->shapes[i];
        double sum = 0;
        size_t n = 0;
        for (size_t j = 0; j < sh->n_cands; j++) {
            const search_cand *c = &s->cands[sh->cands[j]];
            if (c->evaluated && c->value > 0)
                sum += log(c->value), n++;
        }
        t[i] = n ? exp(sum / (double)n) : 0;
        if (n)
            sorted[k++] = t[i];
    }
    qsort(sorted, k, sizeof *sorted, cmp_double);
    double med = k ? stats_percentile_sorted(sorted, k, 0.5) : 0;
    for (size_t i = 0; i < ns; i++)
        r[i] = t[i] > 0 && med > 0 ? (t[i] + med) / (2 * med) : 1;
    free(t), free(sorted);
    return 0;
}

/* The plan: each shape's share of the run's budget, in proportion to its candidates, at least
 * its methods plus POOL_EXTRA (what it has, at most), and never below what it has used. A shape
 * whose evaluations cost POOL_COSTLY times the median or more (pool_costs, once it has a
 * success) has its methods alone as its floor: the extra evaluations buy more candidates of the
 * cheap shapes per second of measuring. Per shape into plan[], what is left of it (planned, not
 * used) into left[], its methods into methods[]. -1: out of memory. */
static int pool_plan(const search *s, size_t *plan, size_t *left, size_t *methods)
{
    size_t ns = s->n_shapes, fm = search_feature_index(s, "method");
    double *w = calloc(ns + 1, sizeof *w), *tmp = malloc((s->n_cands + 1) * sizeof *tmp);
    double *cost = calloc(ns + 1, sizeof *cost);
    size_t *lo = calloc(ns + 1, sizeof *lo), *hi = calloc(ns + 1, sizeof *hi);
    int rc = w && tmp && cost && lo && hi ? pool_costs(s, cost) : -1;
    for (size_t i = 0; rc == 0 && i < ns; i++) {
        size_t used = s->shapes[i].n_evaluated + s->shapes[i].n_pending;
        methods[i] = shape_methods(s, i, fm, tmp);
        lo[i] = methods[i] + (cost[i] < POOL_COSTLY ? POOL_EXTRA : 0);
        lo[i] = lo[i] > used ? lo[i] : used;
        hi[i] = s->shapes[i].n_cands;
        w[i] = (double)hi[i];
        plan[i] = 0;
    }
    if (rc == 0)
        apportion(search_budget_total(s), w, lo, hi, ns, plan);
    for (size_t i = 0; rc == 0 && i < ns; i++) {
        size_t used = s->shapes[i].n_evaluated + s->shapes[i].n_pending;
        left[i] = plan[i] > used ? plan[i] - used : 0;
        left[i] = left[i] < open_of(s, i) ? left[i] : open_of(s, i);
    }
    free(w), free(tmp), free(cost), free(lo), free(hi);
    return rc;
}

/* The round's share of each shape: in proportion to what is left of its plan, at least lo[i]. */
static void pool_shares(const search *s, size_t size, const size_t *left, const size_t *lo,
                        size_t *share)
{
    size_t ns = s->n_shapes, *cap = calloc(ns + 1, sizeof *cap);
    double *w = calloc(ns + 1, sizeof *w);
    for (size_t i = 0; cap && w && i < ns; i++) {
        w[i] = (double)left[i];
        cap[i] = left[i];
        share[i] = 0;
    }
    if (cap && w)
        apportion(size, w, lo, cap, ns, share);
    free(cap), free(w);
}

/* Nothing known: every method of every shape once (rules first), the rest of the round in
 * proportion to what the plan leaves each shape. */
static size_t pool_blind(search *s, size_t *ids, size_t size, const uint8_t *matches, pool_pick *p,
                         const size_t *left, const size_t *methods, size_t *share)
{
    size_t ns = s->n_shapes, fm = search_feature_index(s, "method"), n = 0;
    pool_shares(s, size, left, methods, share);
    for (size_t i = 0; i < ns; i++) {
        size_t k = shape_picks(s, i, fm, p);
        for (size_t j = 0; j < k; j++) {
            p[j].first = matches[p[j].cand];
            p[j].key = -(double)p[j].rank;
        }
        qsort(p, k, sizeof *p, cmp_pick);
        n += propose(s, p, k, share[i], ids + n);
    }
    return n;
}

/* The centred log time of the best success of method m in shape i (INFINITY: none). */
static double method_best(const search *s, size_t i, size_t fm, double m)
{
    const search_shape *sh = &s->shapes[i];
    double sum = 0, lo = INFINITY;
    size_t k = 0;
    for (size_t j = 0; j < sh->n_cands; j++) {
        const search_cand *c = &s->cands[sh->cands[j]];
        if (!c->evaluated || !(c->value > 0))
            continue;
        sum += log(c->value), k++;
        double cm = fm < s->n_features ? c->x[fm] : 0;
        if ((isnan(cm) ? -1 : cm) == m && log(c->value) < lo)
            lo = log(c->value);
    }
    return k < 2 ? (isfinite(lo) ? 0 : INFINITY) : lo - sum / (double)k;
}

/* The last round's floor: in the picks p[0..k) of shape i (sorted by method), the one of best
 * predicted mean of each method, when that mean is below the method's best success, first. */
static void pool_floor(const search *s, size_t i, size_t fm, pool_pick *p, size_t k,
                       const double *mean)
{
    for (size_t a = 0, b; a < k; a = b) {
        size_t lo = a;
        for (b = a; b < k && p[b].method == p[a].method; b++)
            if (mean[p[b].cand] < mean[p[lo].cand])
                lo = b;
        if (mean[p[lo].cand] < method_best(s, i, fm, p[a].method))
            p[lo].first = 256;
    }
}

/* An informed round: each shape's share of the round (what its plan leaves, in proportion) goes
 * to its candidates of lowest confidence bound, mean - POOL_KAPPA x spread. In the last round the
 * share is at least the shape's floor (pool_floor), which comes first, then the best means. */
static size_t pool_informed(search *s, size_t *ids, size_t size, const double *mean,
                            const double *sd, const uint8_t *matches, int last, pool_pick *p,
                            const size_t *left, size_t *share)
{
    size_t ns = s->n_shapes, fm = search_feature_index(s, "method"), n = 0;
    size_t *lo = calloc(ns + 1, sizeof *lo);
    if (!lo)
        return 0;
    double kappa = last ? 0 : POOL_KAPPA;
    for (size_t i = 0; last && i < ns; i++) {
        size_t k = shape_picks(s, i, fm, p);
        pool_floor(s, i, fm, p, k, mean);
        for (size_t j = 0; j < k; j++)
            lo[i] += p[j].first == 256;
    }
    pool_shares(s, size, left, lo, share);
    for (size_t i = 0; i < ns; i++) {
        size_t k = shape_picks(s, i, fm, p);
        int first = s->shapes[i].n_evaluated + s->shapes[i].n_pending == 0;
        for (size_t j = 0; j < k; j++) {
            p[j].first = first ? matches[p[j].cand] : 0;
            p[j].key = -(mean[p[j].cand] - kappa * sd[p[j].cand]);
        }
        if (last)
            pool_floor(s, i, fm, p, k, mean);
        qsort(p, k, sizeof *p, cmp_pick);
        n += propose(s, p, k, share[i], ids + n);
    }
    free(lo);
    return n;
}

size_t search_pool_next(search *s, size_t *ids, size_t cap)
{
    if (s->opt.strategy != SEARCH_MODEL)
        return pool_ordered(s, ids, cap, pool_round_size(s, 0));
    const double *mean, *sd;
    const uint8_t *matches;
    int has_forest = 0;
    if (search_model_view(s, &mean, &sd, &matches, &has_forest) != 0)
        return 0;
    size_t size = pool_round_size(s, !has_forest);
    size_t left = search_budget_total(s) - s->n_observed - s->n_pending;
    size_t ns = s->n_shapes + 1, n = 0;
    pool_pick *p = malloc((s->n_cands ? s->n_cands : 1) * sizeof *p);
    size_t *plan = malloc(ns * sizeof *plan), *rest = malloc(ns * sizeof *rest);
    size_t *methods = malloc(ns * sizeof *methods), *share = malloc(ns * sizeof *share);
    size = size < cap ? size : cap;
    if (p && plan && rest && methods && share && size > 0 && pool_plan(s, plan, rest, methods) == 0)
        n = has_forest
                ? pool_informed(s, ids, size, mean, sd, matches, size >= left, p, rest, share)
                : pool_blind(s, ids, size, matches, p, rest, methods, share);
    free(p), free(plan), free(rest), free(methods), free(share);
    return n;
}
