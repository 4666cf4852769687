/* search_pool.c - the run's budget (SEARCH_SCOPE_RUN, docs/search.md): the evaluations of every
 * shape come from one pool, and each round the strategy shares the round's evaluations among the
 * shapes.
 *
 * Rounds: a round has at most the sum over the shapes of their batches (search_default_batch:
 * the model's 3.4 % of each shape's candidates, so that 10 % takes 3 rounds; random and
 * exhaustive: everything in one round), and what is left of the budget is spread evenly over the
 * rounds it needs. Exhaustive and random share a round in proportion to the candidates a shape
 * has left (each shape at least one while the round allows), in their orders. The model:
 *   - with nothing known (no forest yet), one candidate of each shape (pool_blind), so that at
 *     most a few per cent of the time goes to measuring blind;
 *   - then informed rounds (search_gain.c): the round's evaluations go, over all the shapes, to
 *     the candidates most likely to beat their shape's best by 1 % per unit of cost
 *     (search_pool_costs: a shape that costs more gets fewer). When one round of batches would
 *     spend the whole budget (a space far larger than its budget), the budget takes
 *     POOL_FAR_ROUNDS rounds in all, so that each chooses from what the one before measured.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"
#include "model/search_impl.h"

#define POOL_BLIND_SHARE 0.34 /* of the budget spent with nothing known, at most */
#define POOL_FAR_ROUNDS 6     /* rounds of a budget far smaller than one round of batches */

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
    /* and once the model has data, the rest in POOL_FAR_ROUNDS rounds in all rather than one: each
     * round then chooses from the measurements of the one before (1 744 of 2 000 evaluations in
     * a single informed round of a 1.2 M-configuration space left 98 of its 256 shapes more than
     * 5 % apart between two seeds, H200) */
    if (!blind && s->opt.strategy == SEARCH_MODEL && per >= total && s->round < POOL_FAR_ROUNDS &&
        rounds < POOL_FAR_ROUNDS - s->round)
        rounds = POOL_FAR_ROUNDS - s->round;
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
    int first; /* 1: before every other (a rule's match in a shape's first round) */
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
 * place among those of its method in a random order), sorted by method; their number. */
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

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* Per shape into r[] the relative cost of an evaluation: (t + t_med) / (2 t_med), where t is the
 * geometric mean of the shape's successes' times and t_med the median of t over the shapes that
 * have one; t_med stands for what an evaluation costs whatever its kernel's time (a worker's
 * setup, the launch, the row: on the H200, about 60 timed runs of the median w4a16 shape). 1 for
 * a shape with no success yet, and for all while nothing is known. -1: out of memory. */
int search_pool_costs(const search *s, double *r, double *t_med)
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
    if (t_med)
        *t_med = med;
    for (size_t i = 0; i < ns; i++)
        r[i] = t[i] > 0 && med > 0 ? (t[i] + med) / (2 * med) : 1;
    free(t), free(sorted);
    return 0;
}

/* Nothing known: one candidate of each shape while the round lasts (shapes in order), a rule's
 * match first, else one drawn at random from the shape's method number (shape + seed) mod its
 * methods, so that over the shapes every method is measured at every size: the forest learns
 * the methods from all the shapes together, and a shape's other methods wait for its informed
 * rounds. */
static size_t pool_blind(search *s, size_t *ids, size_t size, const uint8_t *matches, pool_pick *p)
{
    size_t fm = search_feature_index(s, "method"), n = 0;
    for (size_t i = 0; i < s->n_shapes && n < size; i++) {
        size_t k = shape_picks(s, i, fm, p), methods = 0;
        for (size_t j = 0; j < k; j++)
            methods += p[j].rank == 0;
        size_t want = methods ? (size_t)((i + s->opt.seed) % methods) : 0;
        for (size_t j = 0, m = 0; j < k; m += j + 1 < k && p[j + 1].rank == 0, j++) {
            p[j].first = matches[p[j].cand];
            p[j].key = (m == want && p[j].rank == 0) - (double)p[j].rank;
        }
        qsort(p, k, sizeof *p, cmp_pick);
        if (k > 0) {
            s->cands[p[0].cand].proposed = 1;
            ids[n++] = s->cands[p[0].cand].id;
        }
    }
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
    size_t size = pool_round_size(s, !has_forest), n = 0;
    size = size < cap ? size : cap;
    pool_pick *p = malloc((s->n_cands ? s->n_cands : 1) * sizeof *p);
    double *cost = malloc((s->n_shapes + 1) * sizeof *cost), t_med = 0;
    if (p && cost && size > 0)
        n = has_forest ? (search_pool_costs(s, cost, &t_med) == 0
                              ? search_gain_pick(s, ids, size, mean, sd, matches, cost, t_med)
                              : 0)
                       : pool_blind(s, ids, size, matches, p);
    free(p), free(cost);
    return n;
}
