/* dispatch_legal.c - the family's own rules in a dispatch rule (dispatch_impl.h): which of the
 * measured configurations the family keeps at a breakpoint value no run measured, and the
 * nearest kept one where a segment's configuration is not.
 *
 * A family's tile rules (family.h, `prune`) say which parameter points a method tries at a shape:
 * mixed_gemm's row tile follows m, so the configuration of m = 32 (bm = 32) is not one it runs at
 * m = 33 (two row blocks where bm = 64 needs one). A segment of a table must not hand out such a
 * configuration between its measured values: each value between two measured ones takes the
 * segment's configuration if the family keeps it there, else the kept configuration of the same
 * method nearest to it (fewest parameters changed, then the smallest sum of |log2| ratios, then
 * the first by identity), and runs of equal choices become segments of their own.
 * Only the measured configurations are candidates, so every choice is one a run has timed; the
 * rules are asked with the method's measured configurations as the sweep's points. A sweep with
 * "family_rules": false, or a family without rules, keeps every segment as it is.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/dispatch_impl.h"
#include "model/family.h"

#define T(d, s, c) ((d)->time[(s) * (d)->n_configs + (c)])

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
    tune_point *points; /* per configuration: its parameters in d->params' order */
    legal_entry *memo;  /* open addressing on (outer, method, v); kept NULL: free slot */
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
    if (l->members)
        for (size_t m = 0; m < d->n_methods; m++)
            free(l->members[m]);
    free(l->members);
    free(l->of_method);
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
    l->of_method = calloc(d->n_methods, sizeof *l->of_method);
    l->members = calloc(d->n_methods, sizeof *l->members);
    l->points = calloc(d->n_configs, sizeof *l->points);
    if (!l->of_method || !l->members || !l->points) {
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
    const char *axis = l->fam->dtype_axis, *dtype = axis ? point_str(p, axis, NULL) : NULL;
    size_t dsize = dtype ? tune_dtype_size(dtype) : 0;
    if (dsize)
        point_set_int(p, "dsize", (int64_t)dsize);
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

/* How far configuration b is from a: parameters changed (times 1000) plus the sum of |log2| of the
 * ratios of the numeric ones. */
static double legal_distance(const dispatch *d, size_t a, size_t b)
{
    const tune_point *pa = &d->legal->points[a], *pb = &d->legal->points[b];
    double dist = 0;
    for (size_t p = 0; p < pa->n; p++) {
        if (expr_value_equal(pa->vals[p], pb->vals[p]))
            continue;
        double x = expr_value_as_double(pa->vals[p]), y = expr_value_as_double(pb->vals[p]);
        dist += 1000 + (x > 0 && y > 0 ? fabs(log2(x / y)) : 1);
    }
    return dist;
}

/* The configuration outer o takes at breakpoint value v for a segment of configuration c: c where
 * it was measured ok there or the family keeps it, else the nearest kept one of its method (c
 * when none is). */
static size_t legal_adapt(const dispatch *d, size_t o, int64_t v, size_t c)
{
    for (size_t s = d->outer_first[o]; s < d->outer_first[o + 1]; s++)
        if (d->bpv[s] == v && isfinite(T(d, s, c)))
            return c;
    const dispatch_legal *l = d->legal;
    size_t m = d->configs[c].method, n = l->of_method[m];
    const unsigned char *kept = legal_kept(d, o, m, v);
    if (!kept)
        return c;
    size_t best = c;
    double best_dist = INFINITY;
    for (size_t i = 0; i < n; i++) {
        size_t x = l->members[m][i];
        if (!kept[i])
            continue;
        if (x == c)
            return c;
        double dist = legal_distance(d, c, x);
        if (dist < best_dist)
            best_dist = dist, best = x;
    }
    return best;
}

typedef struct {
    int64_t *from;
    size_t *config, *lo, *hi;
    size_t n, cap, first; /* first: the current outer shape's first segment */
} seg_buf;

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
        int64_t *f = realloc(b->from, cap * sizeof *f);
        if (f)
            b->from = f;
        size_t *c = realloc(b->config, cap * sizeof *c);
        if (c)
            b->config = c;
        size_t *x = realloc(b->lo, cap * sizeof *x);
        if (x)
            b->lo = x;
        size_t *y = realloc(b->hi, cap * sizeof *y);
        if (y)
            b->hi = y;
        if (!f || !c || !x || !y)
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
        for (int64_t v = a; v <= b || cur == DISPATCH_NONE; v++) {
            size_t x = v <= b ? legal_adapt(d, o, v, r->config[k]) : r->config[k];
            if (x == cur)
                continue;
            if (cur != DISPATCH_NONE) {
                size_t lo, hi;
                legal_measured(d, use, o, cur_from, v - 1, &lo, &hi);
                if (seg_push(out, cur_from, cur, lo, hi) != 0)
                    return -1;
            }
            cur = x;
            cur_from = v;
            if (v > b)
                break;
        }
        size_t lo, hi;
        legal_measured(d, use, o, cur_from, k + 1 < k1 ? b : INT64_MAX, &lo, &hi);
        if (seg_push(out, cur_from, cur, lo, hi) != 0)
            return -1;
    }
    return 0;
}

tune_status dispatch_legal_apply(const dispatch *d, const unsigned char *use, dispatch_rule *r,
                                 tune_error *err)
{
    if (!d->legal)
        return TUNE_OK;
    seg_buf b = {0};
    size_t *first = malloc((d->n_outers + 1) * sizeof *first);
    int bad = !first;
    for (size_t o = 0; o < d->n_outers && !bad; o++) {
        first[o] = b.first = b.n;
        bad = legal_outer(d, use, r, o, &b) != 0;
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
