/* dispatch_legal.c - the family's own rules in a dispatch rule (dispatch_impl.h): which of the
 * measured configurations the family keeps at a breakpoint value no run measured, and which of
 * them a segment hands out there.
 *
 * A family's tile rules (family.h, `prune`) say which parameter points a method tries at a shape:
 * mixed_gemm's row tile follows m, so the configuration of m = 32 (bm = 32) is not one it runs at
 * m = 33 (two row blocks where bm = 64 needs one). Each value between two measured ones takes,
 * among the measured configurations of the segment's method that the family keeps there and can
 * run (kernels()), the one nearest to the segment's configuration at the segment's nearest
 * measured value: the |log2| ratios of their parameters plus LEGAL_FEATURE_WEIGHT times those of
 * the sweep's derived search features (evaluated at each one's m), so that the schedule (row
 * blocks, blocks per wave, k per split) is carried over as well as the tile. The segment's own
 * configuration wins a tie. Runs of equal choices become segments of their own. The rules are
 * asked with the method's measured configurations as the sweep's points. A sweep with
 * "family_rules": false, or a family without rules, keeps every segment as it is.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/dispatch_impl.h"
#include "model/family.h"
#include "model/search.h"

/* Weight of a derived feature's |log2| ratio against a parameter's in the distance between a
 * segment's configuration and another one (legal_adapt). */
#define LEGAL_FEATURE_WEIGHT 2.0
/* Breakpoint values are visited in steps of max(1, |v| / LEGAL_EXACT): one by one below
 * 2 x LEGAL_EXACT in magnitude (a value skipped takes the choice of the one before it). */
#define LEGAL_EXACT 8192

typedef struct {
    size_t outer, method;
    int64_t v;
    unsigned char *kept; /* per configuration of the method (by its index there) */
} legal_entry;

struct dispatch_legal {
    const tune_family *fam;
    const char *op;
    size_t *of_method; /* per method: its configurations' count, then the indices */
    size_t **members;
    size_t *member_at;    /* per configuration: its index in members[its method] */
    unsigned char *tried; /* legal_adapt's scratch: per member of a method */
    double
        fc[SEARCH_MAX_DERIVED]; /* legal_adapt's: the features of fc_config at (fc_outer, fc_at) */
    size_t fc_config, fc_outer;
    int64_t fc_at;
    tune_point *points; /* per configuration: its parameters in d->params' order */
    size_t n_feat;      /* the sweep's derived search features: a configuration's schedule */
    const char *feat_names[SEARCH_MAX_DERIVED];
    expr *feat[SEARCH_MAX_DERIVED];
    legal_entry *memo; /* open addressing on (outer, method, v); kept NULL: free slot */
    size_t n_memo, cap_memo;
};

static size_t legal_hash(size_t o, size_t m, int64_t v, size_t cap)
{
    uint64_t h = (uint64_t)v * 0x9E3779B97F4A7C15u ^ (uint64_t)o * 0xC2B2AE3D27D4EB4Fu ^
                 (uint64_t)m * 0x165667B19E3779F9u;
    return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

/* The memo's slot of (o, m, v): its entry or the free slot where it goes. */
static legal_entry *legal_slot(legal_entry *memo, size_t cap, size_t o, size_t m, int64_t v)
{
    for (size_t i = legal_hash(o, m, v, cap);; i = (i + 1) & (cap - 1))
        if (!memo[i].kept || (memo[i].v == v && memo[i].outer == o && memo[i].method == m))
            return &memo[i];
}

/* Doubles the memo when it is half full. -1: out of memory. */
static int legal_grow(dispatch_legal *l)
{
    if (2 * (l->n_memo + 1) <= l->cap_memo)
        return 0;
    size_t cap = l->cap_memo ? 2 * l->cap_memo : 1024;
    legal_entry *m = calloc(cap, sizeof *m);
    if (!m)
        return -1;
    for (size_t i = 0; i < l->cap_memo; i++)
        if (l->memo[i].kept)
            *legal_slot(m, cap, l->memo[i].outer, l->memo[i].method, l->memo[i].v) = l->memo[i];
    free(l->memo);
    l->memo = m;
    l->cap_memo = cap;
    return 0;
}

static int sweep_family_rules(const json_t *meta)
{
    json_t *src = json_object_get(json_object_get(meta, "sweep"), "source");
    json_t *fr = json_object_get(src, "family_rules");
    return !json_is_false(fr);
}

void dispatch_legal_free(dispatch *d)
{
    dispatch_legal *l = d->legal;
    if (!l)
        return;
    for (size_t i = 0; i < l->cap_memo; i++)
        free(l->memo[i].kept);
    free(l->memo);
    for (size_t f = 0; f < l->n_feat; f++)
        expr_free(l->feat[f]);
    if (l->members)
        for (size_t m = 0; m < d->n_methods; m++)
            free(l->members[m]);
    free(l->members);
    free(l->of_method);
    free(l->member_at);
    free(l->tried);
    free(l->points);
    free(l);
    d->legal = NULL;
}

tune_status dispatch_legal_init(dispatch *d, tune_error *err)
{
    const tune_family *fam = d->family ? family_find(d->family) : NULL;
    if (!fam || !fam->prune || !sweep_family_rules(d->meta))
        return TUNE_OK;
    dispatch_legal *l = calloc(1, sizeof *l);
    if (!l)
        return tune_error_set(err, TUNE_ERR_NOMEM, "dispatch", "out of memory");
    d->legal = l;
    l->fam = fam;
    json_t *sw = json_object_get(d->meta, "sweep");
    l->op = json_string_value(json_object_get(sw, "op"));
    json_t *feats =
        json_object_get(json_object_get(json_object_get(sw, "source"), "search"), "features");
    const char *fname;
    json_t *ftext;
    json_object_foreach(feats, fname, ftext)
    {
        tune_error perr = {0};
        expr *e = json_is_string(ftext) && l->n_feat < SEARCH_MAX_DERIVED
                      ? expr_parse(json_string_value(ftext), &perr)
                      : NULL;
        if (!e)
            continue; /* the run's sweep was checked when it ran: an unreadable one adds nothing */
        l->feat_names[l->n_feat] = fname;
        l->feat[l->n_feat++] = e;
    }
    l->of_method = calloc(d->n_methods, sizeof *l->of_method);
    l->members = calloc(d->n_methods, sizeof *l->members);
    l->points = calloc(d->n_configs, sizeof *l->points);
    l->member_at = calloc(d->n_configs + 1, sizeof *l->member_at);
    l->tried = calloc(d->n_configs + 1, 1);
    l->fc_config = SIZE_MAX;
    if (!l->of_method || !l->members || !l->points || !l->member_at || !l->tried) {
        dispatch_legal_free(d);
        return tune_error_set(err, TUNE_ERR_NOMEM, "dispatch", "out of memory");
    }
    for (size_t c = 0; c < d->n_configs; c++) {
        for (size_t p = 0; p < d->n_params; p++) {
            expr_value v;
            if (point_get(&d->configs[c].params, d->params[p], &v) != 0)
                v = expr_int(0); /* a parameter the method lacks: absent from its points alike */
            point_set(&l->points[c], d->params[p], v);
        }
        l->of_method[d->configs[c].method]++;
    }
    for (size_t m = 0; m < d->n_methods; m++) {
        l->members[m] = malloc((l->of_method[m] + 1) * sizeof **l->members);
        if (!l->members[m]) {
            dispatch_legal_free(d);
            return tune_error_set(err, TUNE_ERR_NOMEM, "dispatch", "out of memory");
        }
        l->of_method[m] = 0;
    }
    for (size_t c = 0; c < d->n_configs; c++) {
        size_t m = d->configs[c].method;
        l->member_at[c] = l->of_method[m];
        l->members[m][l->of_method[m]++] = c;
    }
    return TUNE_OK;
}

/* The shape point of outer o at breakpoint value v, as the family's rules read it. */
static void legal_shape(const dispatch *d, size_t o, int64_t v, size_t method, tune_point *p)
{
    const dispatch_legal *l = d->legal;
    *p = d->shapes[d->outer_first[o]];
    point_set_int(p, d->axes[d->bp], v);
    if (l->op)
        point_set_str(p, "op", l->op);
    (void)family_set_dsize(l->fam, p); /* the run's dtype was checked when it ran */
    point_set_str(p, "method", d->methods[method]);
}

/* Per configuration of the method (its index in members[method]): kept at (o, v). NULL: out of
 * memory (every configuration then counts as kept). */
static const unsigned char *legal_kept(const dispatch *d, size_t o, size_t method, int64_t v)
{
    dispatch_legal *l = d->legal;
    if (l->cap_memo) {
        legal_entry *e = legal_slot(l->memo, l->cap_memo, o, method, v);
        if (e->kept)
            return e->kept;
    }
    size_t n = l->of_method[method];
    tune_point *pts = malloc((n + 1) * sizeof *pts);
    const char **why = calloc(n + 1, sizeof *why);
    unsigned char *kept = malloc(n + 1);
    if (!pts || !why || !kept || legal_grow(l) != 0) {
        free(pts), free(why), free(kept);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        pts[i] = l->points[l->members[method][i]];
    tune_point shape;
    legal_shape(d, o, v, method, &shape);
    l->fam->prune(l->fam, &shape, pts, n, why);
    for (size_t i = 0; i < n; i++)
        kept[i] = why[i] == NULL;
    free(pts), free(why);
    *legal_slot(l->memo, l->cap_memo, o, method, v) = (legal_entry){o, method, v, kept};
    l->n_memo++;
    return kept;
}

typedef struct {
    const dispatch *d;
    const tune_point *shape, *params;
    const double *done; /* the features evaluated so far */
    size_t n_done;
} feat_ctx;

static int feat_lookup(void *ctx, const char *name, expr_value *out)
{
    const feat_ctx *c = ctx;
    for (size_t f = 0; f < c->n_done; f++)
        if (strcmp(c->d->legal->feat_names[f], name) == 0) {
            *out = expr_float(c->done[f]);
            return 0;
        }
    return point_get(c->params, name, out) == 0 || point_get(c->shape, name, out) == 0 ? 0 : -1;
}

/* The derived features of configuration c at (o, v) into f[] (NAN where one cannot be evaluated,
 * e.g. a division by a split of 0). */
static void legal_features(const dispatch *d, size_t o, int64_t v, size_t c, double *f)
{
    const dispatch_legal *l = d->legal;
    tune_point shape;
    legal_shape(d, o, v, d->configs[c].method, &shape);
    feat_ctx ctx = {d, &shape, &l->points[c], f, 0};
    for (size_t i = 0; i < l->n_feat; i++) {
        expr_value x;
        tune_error err = {0};
        f[i] = expr_eval(l->feat[i], feat_lookup, &ctx, &x, &err) == TUNE_OK
                   ? expr_value_as_double(x)
                   : NAN;
        ctx.n_done = i + 1;
    }
}

static double log2_ratio(double a, double b)
{
    if (a == b)
        return 0;
    return a > 0 && b > 0 && isfinite(a) && isfinite(b) ? fabs(log2(a / b)) : 1;
}

/* How far configuration x at value v is from c at its measured value: the |log2| ratios of their
 * parameters, and LEGAL_FEATURE_WEIGHT times those of their derived features (fc: c's at its
 * measured value), so that what carries a configuration over to another m is its schedule
 * (row blocks, blocks per wave, k per split) as much as its parameter values. The features are
 * evaluated only while the parameters alone stay below `bound` (INFINITY: always). */
static double legal_distance(const dispatch *d, size_t o, int64_t v, size_t c, size_t x,
                             const double *fc, double bound)
{
    const tune_point *pc = &d->legal->points[c], *px = &d->legal->points[x];
    double dist = 0, fx[SEARCH_MAX_DERIVED];
    for (size_t p = 0; p < pc->n; p++)
        if (!expr_value_equal(pc->vals[p], px->vals[p]))
            dist +=
                log2_ratio(expr_value_as_double(pc->vals[p]), expr_value_as_double(px->vals[p]));
    if (d->legal->n_feat == 0 || dist >= bound)
        return dist;
    legal_features(d, o, v, x, fx);
    for (size_t f = 0; f < d->legal->n_feat; f++)
        if (!isnan(fc[f]) || !isnan(fx[f]))
            dist += LEGAL_FEATURE_WEIGHT * log2_ratio(fc[f], fx[f]);
    return dist;
}

/* Whether the family can run configuration x at (o, v): its kernels() accepts it (a family
 * without the hook: yes). */
static int legal_runs(const dispatch *d, size_t o, int64_t v, size_t x)
{
    const tune_family *fam = d->legal->fam;
    if (!fam->kernels)
        return 1;
    tune_point cfg;
    legal_shape(d, o, v, d->configs[x].method, &cfg);
    const tune_point *p = &d->legal->points[x];
    for (size_t i = 0; i < p->n; i++)
        point_set(&cfg, p->names[i], p->vals[i]);
    family_kernel_ref refs[FAMILY_MAX_KERNELS];
    char why[256];
    return fam->kernels(fam, &cfg, refs, FAMILY_MAX_KERNELS, why, sizeof why) >= 0;
}

/* The configuration outer o takes at breakpoint value v for a segment of configuration c chosen
 * at the measured value `at` (v itself where the segment has none): c where it was measured ok at
 * v among the shapes used, else the configuration of its method the family keeps at v nearest to
 * c (legal_distance; c when the family keeps none). */
static size_t legal_adapt(const dispatch *d, const unsigned char *use, size_t o, int64_t v,
                          int64_t at, size_t c)
{
    for (size_t s = d->outer_first[o]; s < d->outer_first[o + 1]; s++)
        if (d->bpv[s] == v && (!use || use[s]) && isfinite(T(d, s, c)))
            return c;
    dispatch_legal *l = d->legal;
    size_t m = d->configs[c].method, n = l->of_method[m];
    const unsigned char *kept = legal_kept(d, o, m, v);
    if (!kept)
        return c;
    if (l->n_feat && (l->fc_config != c || l->fc_outer != o || l->fc_at != at)) {
        legal_features(d, o, at, c, l->fc); /* the same for a segment's values in a row */
        l->fc_config = c, l->fc_outer = o, l->fc_at = at;
    }
    /* the nearest that the family also can run (kernels()), c first: its distance bounds the
     * others' */
    size_t result = c;
    for (;;) {
        size_t best = SIZE_MAX;
        double best_dist = INFINITY;
        for (size_t j = 0; j <= n; j++) {
            size_t i = j == 0 ? l->member_at[c] : j - 1;
            if ((j > 0 && i == l->member_at[c]) || !kept[i] || l->tried[i])
                continue;
            double dist = legal_distance(d, o, v, c, l->members[m][i], l->fc, best_dist);
            if (best == SIZE_MAX || dist < best_dist)
                best_dist = dist, best = i;
        }
        if (best == SIZE_MAX)
            break;
        if (legal_runs(d, o, v, l->members[m][best])) {
            result = l->members[m][best];
            break;
        }
        l->tried[best] = 1;
    }
    memset(l->tried, 0, n);
    return result;
}

typedef struct {
    int64_t *from;
    size_t *config, *lo, *hi;
    size_t n, cap, first; /* first: the current outer shape's first segment */
} seg_buf;

/* *p reallocated to size bytes (unchanged on failure: -1). */
static int grow(void **p, size_t size)
{
    void *q = realloc(*p, size);
    if (!q)
        return -1;
    *p = q;
    return 0;
}

/* Appends a segment, or extends the outer shape's last one when it has the same configuration. */
static int seg_push(seg_buf *b, int64_t from, size_t config, size_t lo, size_t hi)
{
    if (b->n > b->first && b->config[b->n - 1] == config) {
        if (b->lo[b->n - 1] == DISPATCH_NONE)
            b->lo[b->n - 1] = lo;
        if (hi != DISPATCH_NONE)
            b->hi[b->n - 1] = hi;
        return 0;
    }
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        if (grow((void **)&b->from, cap * sizeof *b->from) != 0 ||
            grow((void **)&b->config, cap * sizeof *b->config) != 0 ||
            grow((void **)&b->lo, cap * sizeof *b->lo) != 0 ||
            grow((void **)&b->hi, cap * sizeof *b->hi) != 0)
            return -1;
        b->cap = cap;
    }
    b->from[b->n] = from;
    b->config[b->n] = config;
    b->lo[b->n] = lo;
    b->hi[b->n] = hi;
    b->n++;
    return 0;
}

/* The measured shapes of outer o (among use) with values in [a, b]: their first and last, or
 * DISPATCH_NONE twice. */
static void legal_measured(const dispatch *d, const unsigned char *use, size_t o, int64_t a,
                           int64_t b, size_t *lo, size_t *hi)
{
    *lo = *hi = DISPATCH_NONE;
    for (size_t s = d->outer_first[o]; s < d->outer_first[o + 1]; s++)
        if ((!use || use[s]) && d->bpv[s] >= a && d->bpv[s] <= b) {
            if (*lo == DISPATCH_NONE)
                *lo = s;
            *hi = s;
        }
}

/* The measured value of segment k of r nearest to v (v when it has none). */
static int64_t legal_anchor(const dispatch *d, const unsigned char *use, const dispatch_rule *r,
                            size_t k, int64_t v)
{
    int64_t best = v;
    uint64_t gap = UINT64_MAX;
    for (size_t s = r->lo[k]; s != DISPATCH_NONE && s <= r->hi[k]; s++) {
        if (use && !use[s])
            continue;
        uint64_t g = d->bpv[s] > v ? (uint64_t)(d->bpv[s] - v) : (uint64_t)(v - d->bpv[s]);
        if (g < gap)
            gap = g, best = d->bpv[s];
    }
    return best;
}

/* Splits outer o's segments of r where the family's rules change the choice (see the top). */
static int legal_outer(const dispatch *d, const unsigned char *use, const dispatch_rule *r,
                       size_t o, seg_buf *out)
{
    size_t k0 = r->first[o], k1 = r->first[o + 1];
    int64_t lo_all = INT64_MAX, hi_all = INT64_MIN; /* the values any outer shape measured */
    for (size_t s = 0; s < d->n_shapes; s++) {
        lo_all = d->bpv[s] < lo_all ? d->bpv[s] : lo_all;
        hi_all = d->bpv[s] > hi_all ? d->bpv[s] : hi_all;
    }
    for (size_t k = k0; k < k1; k++) {
        int64_t a = k == k0 && lo_all < r->from[k] ? lo_all : r->from[k];
        int64_t b = k + 1 < k1 ? r->from[k + 1] - 1 : hi_all > r->from[k] ? hi_all : r->from[k];
        size_t cur = DISPATCH_NONE;
        int64_t cur_from = a;
        for (int64_t v = a;;) {
            size_t x = a <= b
                           ? legal_adapt(d, use, o, v, legal_anchor(d, use, r, k, v), r->config[k])
                           : r->config[k];
            if (x != cur) {
                if (cur != DISPATCH_NONE) {
                    size_t lo, hi;
                    legal_measured(d, use, o, cur_from, v - 1, &lo, &hi);
                    if (seg_push(out, cur_from, cur, lo, hi) != 0)
                        return -1;
                }
                cur = x;
                cur_from = v;
            }
            if (a > b || v >= b)
                break;
            /* a run's axis values far apart (rows are input) cost a bounded number of steps */
            uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v, step = mag / LEGAL_EXACT;
            step = step ? step : 1;
            v = (uint64_t)b - (uint64_t)v > step ? v + (int64_t)step : b;
        }
        size_t lo, hi;
        legal_measured(d, use, o, cur_from, k + 1 < k1 ? b : INT64_MAX, &lo, &hi);
        if (seg_push(out, cur_from, cur, lo, hi) != 0)
            return -1;
    }
    return 0;
}

tune_status dispatch_legal_apply(const dispatch *d, const unsigned char *use, size_t only,
                                 dispatch_rule *r, tune_error *err)
{
    if (!d->legal)
        return TUNE_OK;
    seg_buf b = {0};
    size_t *first = malloc((d->n_outers + 1) * sizeof *first);
    int bad = !first;
    for (size_t o = 0; o < d->n_outers && !bad; o++) {
        first[o] = b.first = b.n;
        if (only == DISPATCH_NONE || o == only) {
            bad = legal_outer(d, use, r, o, &b) != 0;
            continue;
        }
        for (size_t k = r->first[o]; k < r->first[o + 1] && !bad; k++)
            bad = seg_push(&b, r->from[k], r->config[k], r->lo[k], r->hi[k]) != 0;
    }
    if (bad) {
        free(first), free(b.from), free(b.config), free(b.lo), free(b.hi);
        return tune_error_set(err, TUNE_ERR_NOMEM, "dispatch", "out of memory");
    }
    first[d->n_outers] = b.n;
    free(r->first), free(r->from), free(r->config), free(r->lo), free(r->hi);
    r->first = first;
    r->from = b.from;
    r->config = b.config;
    r->lo = b.lo;
    r->hi = b.hi;
    r->n_seg = b.n;
    return TUNE_OK;
}
