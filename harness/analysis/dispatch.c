/* dispatch.c - a dispatch rule built from measured rows, and its evaluation (analysis/dispatch.h;
 * the files it writes: dispatch_output.c). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/dispatch_impl.h"
#include "store/meta.h"


tune_status dispatch_read(const char *const *dirs, size_t n_dirs, results_rows *rows,
                          json_t **meta, tune_error *err)
{
    size_t dropped = 0;
    *rows = (results_rows){0};
    tune_status st = meta_check_folders(dirs, n_dirs, meta, err);
    if (st == TUNE_OK)
        st = results_read_dirs(dirs, n_dirs, rows, err);
    if (st == TUNE_OK)
        st = results_rows_dedup(rows, &dropped, err);
    if (st != TUNE_OK) {
        results_rows_free(rows);
        json_decref(*meta);
        *meta = NULL;
    }
    return st;
}

static int row_ok(const result_row *r)
{
    return r->status == RESULT_OK && r->time.n > 0 && isfinite(r->time.median) &&
           r->time.median > 0;
}

/* ---- the table of times ---- */

typedef struct {
    const result_row *row;
    const dispatch *d;
    size_t shape, config;
    char *id; /* the configuration's identity (ok rows) */
} row_ref;

/* Rows by outer shape (the axes but the breakpoint one, in axis order), then breakpoint value. */
static int compare_shapes(const void *pa, const void *pb)
{
    const row_ref *a = pa, *b = pb;
    const dispatch *d = a->d;
    for (size_t k = 0; k <= d->n_axes; k++) {
        size_t i = k < d->n_axes ? k : d->bp;
        if (k == d->bp)
            continue;
        int c = expr_value_order(a->row->values.vals[i], b->row->values.vals[i]);
        if (c)
            return c;
    }
    return 0;
}

static int compare_ids(const void *pa, const void *pb)
{
    return strcmp((*(row_ref *const *)pa)->id, (*(row_ref *const *)pb)->id);
}

/* "a, b, c" of names into buf. */
static const char *join(const char *const *names, size_t n, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && len < size; i++) {
        int w = snprintf(buf + len, size - len, "%s%s", i ? ", " : "", names[i]);
        len += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

/* The sweep's methods and roles: meta.json's record, else from the rows (a method whose rows
 * carry parameters is tuned, the others are baselines). */
static size_t sweep_methods(const result_row *rows, size_t n, const json_t *meta,
                            const char **names, const char **roles)
{
    size_t k = 0;
    for (const char *m; k < DISPATCH_MAX_METHODS && (m = meta_sweep_method(meta, k, &roles[k]));)
        names[k++] = m;
    if (k)
        return k;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < k && strcmp(names[j], rows[i].method) != 0)
            j++;
        if (j == k && k == DISPATCH_MAX_METHODS)
            continue;
        if (j == k) {
            names[k] = rows[i].method;
            roles[k++] = "baseline";
        }
        if (rows[i].values.n > rows[i].n_axes)
            roles[j] = "tuned";
    }
    return k;
}

static tune_status pick_methods(dispatch *d, const result_row *rows, size_t n,
                                const json_t *meta, const dispatch_options *opt, tune_error *err)
{
    const char *names[DISPATCH_MAX_METHODS], *roles[DISPATCH_MAX_METHODS];
    char list[1024];
    size_t k = sweep_methods(rows, n, meta, names, roles);
    for (size_t i = 0; i < opt->n_methods; i++) {
        size_t j = 0;
        while (j < k && strcmp(names[j], opt->methods[i]) != 0)
            j++;
        if (j == k)
            return tune_error_set(err, TUNE_ERR_INVALID, "dispatch",
                                  "--methods: '%s' is not a method of the sweep (%s)",
                                  opt->methods[i], join(names, k, list, sizeof list));
        if (strcmp(roles[j], "auxiliary") == 0)
            return tune_error_set(err, TUNE_ERR_INVALID, "dispatch",
                                  "--methods: '%s' is an auxiliary method, not a kernel of the "
                                  "family: a rule cannot pick it", opt->methods[i]);
    }
    for (size_t j = 0; j < k; j++) {
        int want = !opt->methods && strcmp(roles[j], "tuned") == 0;
        for (size_t i = 0; i < opt->n_methods; i++)
            want |= strcmp(names[j], opt->methods[i]) == 0;
        if (want) {
            d->methods[d->n_methods] = names[j];
            d->roles[d->n_methods++] = roles[j];
        }
    }
    if (!d->n_methods)
        return tune_error_set(err, TUNE_ERR_INVALID, "dispatch",
                              "the sweep has no tuned method: name the methods with --methods");
    return TUNE_OK;
}

static size_t method_index(const dispatch *d, const char *m)
{
    for (size_t j = 0; j < d->n_methods; j++)
        if (strcmp(d->methods[j], m) == 0)
            return j;
    return DISPATCH_NONE;
}

static int compare_i64(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

/* The breakpoint axis: opt->axis, else the integer axis with the most distinct values among the
 * ok rows refs[0..n) (the first on a tie). */
static tune_status pick_axis(dispatch *d, const row_ref *refs, size_t n, const char *axis,
                             tune_error *err)
{
    char list[1024];
    int64_t *v = malloc(n * sizeof *v);
    if (!v)
        return tune_error_set(err, TUNE_ERR_NOMEM, "dispatch", "out of memory");
    size_t best = DISPATCH_NONE, best_n = 0;
    tune_status st = TUNE_OK;
    for (size_t a = 0; a < d->n_axes; a++) {
        if (axis && strcmp(axis, d->axes[a]) != 0)
            continue;
        size_t m = 0, distinct = 0;
        while (m < n && refs[m].row->values.vals[a].type == EXPR_INT) {
            v[m] = refs[m].row->values.vals[a].i;
            m++;
        }
        if (m < n) {
            if (axis)
                st = tune_error_set(err, TUNE_ERR_INVALID, "dispatch",
                                    "--axis '%s' is not an integer axis", axis);
            continue;
        }
        qsort(v, n, sizeof *v, compare_i64);
        for (size_t i = 0; i < n; i++)
            distinct += i == 0 || v[i] != v[i - 1];
        if (best == DISPATCH_NONE || distinct > best_n) {
            best = a;
            best_n = distinct;
        }
    }
    free(v);
    if (st == TUNE_OK && best == DISPATCH_NONE)
        st = axis ? tune_error_set(err, TUNE_ERR_INVALID, "dispatch",
                                   "--axis '%s' is not a problem axis (%s)", axis,
                                   join(d->axes, d->n_axes, list, sizeof list))
                  : tune_error_set(err, TUNE_ERR_INVALID, "dispatch",
                                   "no integer problem axis to place breakpoints on");
    d->bp = best;
    return st;
}

/* Checks the rows (one sweep, the same axes), fills the axes, and the methods' rows into refs
 * (*n_refs; ok rows first, *n_ok of them). */
static tune_status collect_rows(dispatch *d, const result_row *rows, size_t n, row_ref *refs,
                                size_t *n_refs, size_t *n_ok, tune_error *err)
{
    char list[1024];
    *n_refs = *n_ok = 0;
    for (size_t i = 0; i < n; i++) {
        const result_row *r = &rows[i], *f = &rows[0];
        if (r->sweep && f->sweep && strcmp(r->sweep, f->sweep) != 0)
            return tune_error_set(err, TUNE_ERR_INVALID, "dispatch",
                                  "rows of two sweeps (%s, %s): a rule is built from one sweep",
                                  f->sweep, r->sweep);
        int same = r->n_axes == f->n_axes;
        for (size_t a = 0; same && a < r->n_axes; a++)
            same = strcmp(r->values.names[a], f->values.names[a]) == 0;
        if (!same)
            return tune_error_set(err, TUNE_ERR_INVALID, "dispatch",
                                  "rows have different problem axes");
    }
    d->sweep = rows[0].sweep;
    d->family = rows[0].family;
    d->n_axes = rows[0].n_axes;
    for (size_t a = 0; a < d->n_axes; a++)
        d->axes[a] = rows[0].values.names[a];
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n; i++)
            if (method_index(d, rows[i].method) != DISPATCH_NONE && row_ok(&rows[i]) == !pass)
                refs[(*n_refs)++] = (row_ref){&rows[i], d, 0, 0, NULL};
    while (*n_ok < *n_refs && row_ok(refs[*n_ok].row))
        (*n_ok)++;
    if (!*n_ok)
        return tune_error_set(err, TUNE_ERR_INVALID, "dispatch", "no ok row of the methods %s",
                              join(d->methods, d->n_methods, list, sizeof list));
    return TUNE_OK;
}

/* The configurations of the ok rows refs[0..n), sorted by identity; each ref's config. */
static tune_status collect_configs(dispatch *d, row_ref *refs, size_t n, tune_error *err)
{
    row_ref **by_id = malloc(n * sizeof *by_id);
    d->configs = calloc(n, sizeof *d->configs);
    if (!by_id || !d->configs) {
        free(by_id);
        return tune_error_set(err, TUNE_ERR_NOMEM, "dispatch", "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        const result_row *r = refs[i].row;
        tune_point p = {0};
        for (size_t k = r->n_axes; k < r->values.n; k++) {
            if (r->values.vals[k].type != EXPR_INT) {
                free(by_id);
                return tune_error_set(err, TUNE_ERR_INVALID, "dispatch",
                                      "parameter '%s' has a value that is not an integer",
                                      r->values.names[k]);
            }
            point_set(&p, r->values.names[k], r->values.vals[k]);
        }
        char id[4096];
        if (!(refs[i].id = strdup(point_identity(r->method, &p, id, sizeof id)))) {
            free(by_id);
            return tune_error_set(err, TUNE_ERR_NOMEM, "dispatch", "out of memory");
        }
        by_id[i] = &refs[i];
    }
    qsort(by_id, n, sizeof *by_id, compare_ids);
    for (size_t i = 0; i < n; i++) {
        row_ref *ref = by_id[i];
        if (i == 0 || strcmp(ref->id, d->configs[d->n_configs - 1].id) != 0) {
            dispatch_cfg *c = &d->configs[d->n_configs++];
            c->id = ref->id;
            ref->id = NULL; /* owned by the configuration now */
            c->method = method_index(d, ref->row->method);
            for (size_t k = ref->row->n_axes; k < ref->row->values.n; k++)
                point_set(&c->params, ref->row->values.names[k], ref->row->values.vals[k]);
        }
        ref->config = d->n_configs - 1;
    }
    free(by_id);
    /* the parameters any configuration has, in the sweep's order */
    const result_row *f = refs[0].row;
    for (size_t k = 0; k < f->n_params; k++)
        for (size_t c = 0; c < d->n_configs; c++)
            if (point_get(&d->configs[c].params, f->param_names[k], NULL) == 0) {
                d->params[d->n_params++] = f->param_names[k];
                break;
            }
    return TUNE_OK;
}

/* Shapes (runs of equal axis values among the sorted refs that hold an ok row), outer shapes,
 * the times and the best per shape. */
static tune_status collect_shapes(dispatch *d, row_ref *refs, size_t n_refs, tune_error *err)
{
    size_t S = 0, C = d->n_configs;
    d->shapes = calloc(n_refs, sizeof *d->shapes);
    d->bpv = calloc(n_refs, sizeof *d->bpv);
    d->outer_of = calloc(n_refs, sizeof *d->outer_of);
    d->outer_first = calloc(n_refs + 1, sizeof *d->outer_first);
    if (!d->shapes || !d->bpv || !d->outer_of || !d->outer_first)
        return tune_error_set(err, TUNE_ERR_NOMEM, "dispatch", "out of memory");
    for (size_t i = 0, end; i < n_refs; i = end) {
        int ok = 0;
        for (end = i; end < n_refs && compare_shapes(&refs[i], &refs[end]) == 0; end++) {
            ok |= row_ok(refs[end].row);
            refs[end].shape = S;
        }
        if (!ok) {
            d->n_unmeasured++;
            continue;
        }
        const result_row *r = refs[i].row;
        for (size_t a = 0; a < d->n_axes; a++)
            point_set(&d->shapes[S], d->axes[a], r->values.vals[a]);
        d->bpv[S] = r->values.vals[d->bp].i;
        int same_outer = S > 0;
        for (size_t a = 0; same_outer && a < d->n_axes; a++)
            same_outer = a == d->bp ||
                         expr_value_order(d->shapes[S].vals[a], d->shapes[S - 1].vals[a]) == 0;
        if (!same_outer)
            d->outer_first[d->n_outers++] = S;
        d->outer_of[S++] = d->n_outers - 1;
    }
    d->n_shapes = S;
    d->outer_first[d->n_outers] = S;
    for (size_t a = 0; a < d->n_axes; a++)
        for (size_t s = 1; s < S; s++)
            d->varies[a] |= expr_value_order(d->shapes[s].vals[a], d->shapes[0].vals[a]) != 0;
    d->time = malloc(S * C * sizeof *d->time);
    d->best = malloc(S * sizeof *d->best);
    d->best_config = malloc(S * sizeof *d->best_config);
    if (!d->time || !d->best || !d->best_config)
        return tune_error_set(err, TUNE_ERR_NOMEM, "dispatch", "out of memory");
    for (size_t i = 0; i < S * C; i++)
        d->time[i] = INFINITY;
    for (size_t i = 0; i < n_refs; i++)
        if (row_ok(refs[i].row) && refs[i].row->time.median < T(d, refs[i].shape, refs[i].config))
            T(d, refs[i].shape, refs[i].config) = refs[i].row->time.median;
    for (size_t s = 0; s < S; s++) {
        d->best_config[s] = 0;
        for (size_t c = 1; c < C; c++)
            if (T(d, s, c) < T(d, s, d->best_config[s]))
                d->best_config[s] = c;
        d->best[s] = T(d, s, d->best_config[s]);
    }
    return TUNE_OK;
}

/* ---- the rule ---- */

/* The first value of the upper side of a break between measured values a < b: the smallest
 * integer above their geometric midpoint (the midpoint itself goes to the lower side; the
 * arithmetic midpoint when a < 1). */
static int64_t midpoint(int64_t a, int64_t b)
{
    if (a < 1)
        return a + (b - a) / 2 + 1;
    double ab = (double)a * (double)b; /* exact while a * b < 2^53 */
    int64_t x = (int64_t)sqrt(ab) + 1;
    while (x > a + 1 && (double)(x - 1) * (double)(x - 1) > ab)
        x--;
    while (x < b && (double)x * (double)x <= ab)
        x++;
    return x;
}

static int within(const dispatch *d, size_t s, size_t c)
{
    return T(d, s, c) <= d->best[s] * (1 + d->tolerance);
}

/* The configuration of the segment js[i..end] among those within tolerance on all of it (in):
 * ok at the measured values on either side first, then ok at the segment's values on most other
 * outer shapes, then the fastest, then the first. */
static size_t pick_config(const dispatch *d, const unsigned char *use, const size_t *js,
                          size_t len, size_t i, size_t end, const unsigned char *in)
{
    size_t best = DISPATCH_NONE, best_nb = 0, best_port = 0;
    double best_l = 0;
    size_t o = d->outer_of[js[i]];
    int64_t lo = d->bpv[js[i]], hi = d->bpv[js[end]];
    for (size_t c = 0; c < d->n_configs; c++) {
        if (!in[c])
            continue;
        size_t nb = (size_t)(i > 0 && isfinite(T(d, js[i - 1], c))) +
                    (size_t)(end + 1 < len && isfinite(T(d, js[end + 1], c)));
        size_t port = 0;
        for (size_t s = 0; s < d->n_shapes; s++)
            port += (!use || use[s]) && d->outer_of[s] != o && d->bpv[s] >= lo &&
                    d->bpv[s] <= hi && isfinite(T(d, s, c));
        double l = 0;
        for (size_t j = i; j <= end; j++)
            l += log(d->best[js[j]] / T(d, js[j], c));
        if (best == DISPATCH_NONE || nb > best_nb ||
            (nb == best_nb && (port > best_port || (port == best_port && l > best_l)))) {
            best = c;
            best_nb = nb;
            best_port = port;
            best_l = l;
        }
    }
    return best;
}

/* Where the run starting at measured shape b begins, after the run of configuration ca ending at
 * measured shape a (cb: the new run's configuration). Values between them take ca below the
 * geometric midpoint and cb from it, unless only one of the two is ok at both a and b (that one
 * takes the whole gap), or neither is and another configuration is: the one ok at both with the
 * best efficiency on them takes the gap as a segment of its own, pushed onto r. */
static int64_t place_break(const dispatch *d, dispatch_rule *r, size_t a, size_t b, size_t ca,
                           size_t cb)
{
    int64_t ma = d->bpv[a], mb = d->bpv[b];
    int a_ok = isfinite(T(d, b, ca)), b_ok = isfinite(T(d, a, cb));
    if (a_ok != b_ok)
        return a_ok ? mb : ma + 1;
    size_t g = DISPATCH_NONE;
    double best = -INFINITY;
    for (size_t c = 0; !a_ok && mb > ma + 1 && c < d->n_configs; c++) {
        double l = log(d->best[a] / T(d, a, c)) + log(d->best[b] / T(d, b, c));
        if (l > best) { /* -inf where c is not ok at both */
            best = l;
            g = c;
        }
    }
    if (g == DISPATCH_NONE)
        return midpoint(ma, mb);
    size_t k = r->n_seg++;
    r->from[k] = ma + 1;
    r->config[k] = g;
    r->lo[k] = r->hi[k] = DISPATCH_NONE;
    return mb;
}

static void rule_release(dispatch_rule *r)
{
    free(r->first);
    free(r->from);
    free(r->config);
    free(r->lo);
    free(r->hi);
    memset(r, 0, sizeof *r);
}

/* The rule built on the shapes s with use[s] (all when use is NULL); the family's rules are
 * applied to the table of outer shape `only` alone (DISPATCH_NONE: to every table), the only one
 * a left-out value is looked up in. */
static tune_status rule_build(const dispatch *d, const unsigned char *use, size_t only,
                              dispatch_rule *r, tune_error *err)
{
    size_t S = d->n_shapes, C = d->n_configs;
    memset(r, 0, sizeof *r);
    r->first = calloc(d->n_outers + 1, sizeof *r->first);
    r->from = malloc(2 * S * sizeof *r->from); /* a run per measured value, a gap between two */
    r->config = malloc(2 * S * sizeof *r->config);
    r->lo = malloc(2 * S * sizeof *r->lo);
    r->hi = malloc(2 * S * sizeof *r->hi);
    size_t *js = malloc(S * sizeof *js);
    unsigned char *in = malloc(C);
    if (!r->first || !r->from || !r->config || !r->lo || !r->hi || !js || !in) {
        free(js);
        free(in);
        rule_release(r);
        return tune_error_set(err, TUNE_ERR_NOMEM, "dispatch", "out of memory");
    }
    for (size_t o = 0; o < d->n_outers; o++) {
        r->first[o] = r->n_seg;
        size_t len = 0;
        for (size_t s = d->outer_first[o]; s < d->outer_first[o + 1]; s++)
            if (!use || use[s])
                js[len++] = s;
        for (size_t i = 0, end; i < len; i = end + 1) {
            /* greedy: the longest run from js[i] that one configuration covers within tolerance */
            for (size_t c = 0; c < C; c++)
                in[c] = (unsigned char)within(d, js[i], c);
            for (end = i; end + 1 < len; end++) {
                size_t keep = 0;
                for (size_t c = 0; c < C; c++)
                    keep += in[c] && within(d, js[end + 1], c);
                if (!keep)
                    break;
                for (size_t c = 0; c < C; c++)
                    in[c] = in[c] && within(d, js[end + 1], c);
            }
            size_t cfg = pick_config(d, use, js, len, i, end, in);
            int64_t from = i == 0 ? d->bpv[js[0]]
                                  : place_break(d, r, js[i - 1], js[i], r->config[r->n_seg - 1], cfg);
            size_t k = r->n_seg++;
            r->from[k] = from;
            r->config[k] = cfg;
            r->lo[k] = js[i];
            r->hi[k] = js[end];
        }
    }
    r->first[d->n_outers] = r->n_seg;
    free(js);
    free(in);
    tune_status st = dispatch_legal_apply(d, use, only, r, err);
    if (st != TUNE_OK)
        rule_release(r);
    return st;
}

static double feature(expr_value v)
{
    double x = expr_value_as_double(v);
    return log2(x > 1 ? x : 1.0);
}

size_t dispatch_rule_lookup(const dispatch *d, const dispatch_rule *r, const tune_point *q)
{
    size_t best = DISPATCH_NONE;
    double best_dist = INFINITY;
    for (size_t o = 0; o < d->n_outers; o++) {
        if (r->first[o] == r->first[o + 1])
            continue;
        const tune_point *p = &d->shapes[d->outer_first[o]];
        double dist = 0;
        int exact = 1;
        for (size_t a = 0; a < d->n_axes; a++) {
            if (a == d->bp || !d->varies[a])
                continue;
            expr_value x = expr_int(0), y = p->vals[a];
            point_get(q, d->axes[a], &x);
            int eq = expr_value_equal(x, y);
            exact &= eq;
            if (x.type == EXPR_STR || y.type == EXPR_STR) {
                dist += eq ? 0 : DISPATCH_STRING_PENALTY;
            } else {
                double t = feature(x) - feature(y);
                dist += t * t;
            }
        }
        if (exact) {
            best = o;
            break;
        }
        if (dist < best_dist) {
            best_dist = dist;
            best = o;
        }
    }
    if (best == DISPATCH_NONE)
        return DISPATCH_NONE;
    int64_t v = point_int(q, d->axes[d->bp], 0);
    size_t s = r->first[best];
    while (s + 1 < r->first[best + 1] && v >= r->from[s + 1])
        s++;
    return r->config[s];
}

/* ---- evaluation ---- */

static void score(dispatch *d, dispatch_eval w, double target)
{
    double sum = 0;
    size_t n = 0, misses = 0;
    for (size_t s = 0; s < d->n_shapes; s++) {
        size_t c = d->choice[w][s];
        if (c == DISPATCH_NONE)
            continue;
        if (isfinite(T(d, s, c))) {
            sum += log(d->best[s] / T(d, s, c));
            n++;
        } else {
            misses++;
        }
    }
    dispatch_score *sc = &d->score[w];
    sc->efficiency = n ? exp(sum / (double)n) : NAN;
    sc->n = n;
    sc->misses = misses;
    sc->target = target;
    sc->meets_target = n > 0 && misses == 0 && sc->efficiency >= target - 1e-12;
}

/* In-sample, leave one breakpoint value out, leave one outer shape out. */
static tune_status evaluate(dispatch *d, tune_error *err)
{
    size_t S = d->n_shapes;
    unsigned char *use = malloc(S);
    for (int w = 0; w < 3; w++)
        d->choice[w] = malloc(S * sizeof *d->choice[w]);
    if (!use || !d->choice[0] || !d->choice[1] || !d->choice[2]) {
        free(use);
        return tune_error_set(err, TUNE_ERR_NOMEM, "dispatch", "out of memory");
    }
    tune_status st = TUNE_OK;
    for (size_t s = 0; s < S; s++) {
        d->choice[DISPATCH_IN_SAMPLE][s] = dispatch_rule_lookup(d, &d->rule, &d->shapes[s]);
        d->choice[DISPATCH_LOO_AXIS][s] = d->choice[DISPATCH_LOO_OUTER][s] = DISPATCH_NONE;
    }
    dispatch_rule r;
    for (size_t s = 0; s < S && st == TUNE_OK; s++) {
        size_t o = d->outer_of[s];
        if (d->outer_first[o + 1] - d->outer_first[o] < 2)
            continue; /* its only value: that is leaving the outer shape out */
        memset(use, 1, S);
        use[s] = 0;
        if ((st = rule_build(d, use, o, &r, err)) == TUNE_OK)
            d->choice[DISPATCH_LOO_AXIS][s] = dispatch_rule_lookup(d, &r, &d->shapes[s]);
        rule_release(&r);
    }
    for (size_t o = 0; o < d->n_outers && d->n_outers > 1 && st == TUNE_OK; o++) {
        memset(use, 1, S);
        memset(use + d->outer_first[o], 0, d->outer_first[o + 1] - d->outer_first[o]);
        if ((st = rule_build(d, use, DISPATCH_NONE, &r, err)) == TUNE_OK)
            for (size_t s = d->outer_first[o]; s < d->outer_first[o + 1]; s++)
                d->choice[DISPATCH_LOO_OUTER][s] = dispatch_rule_lookup(d, &r, &d->shapes[s]);
        rule_release(&r);
    }
    free(use);
    score(d, DISPATCH_IN_SAMPLE, 0);
    score(d, DISPATCH_LOO_AXIS, DISPATCH_TARGET_LOO_AXIS);
    score(d, DISPATCH_LOO_OUTER, DISPATCH_TARGET_LOO_OUTER);
    return st;
}

/* ---- the object ---- */

void dispatch_free(dispatch *d)
{
    if (!d)
        return;
    for (size_t c = 0; c < d->n_configs; c++)
        free(d->configs[c].id);
    free(d->configs);
    free(d->shapes);
    free(d->bpv);
    free(d->outer_first);
    free(d->outer_of);
    free(d->time);
    free(d->best);
    free(d->best_config);
    rule_release(&d->rule);
    dispatch_legal_free(d);
    for (int w = 0; w < 3; w++)
        free(d->choice[w]);
    free(d);
}

/* name as a C identifier: other characters become '_', a leading digit gets one before it. */
static void set_name(dispatch *d, const char *name)
{
    size_t len = 0;
    if (isdigit((unsigned char)name[0]))
        d->name[len++] = '_';
    for (; *name && len + 1 < sizeof d->name; name++)
        d->name[len++] = isalnum((unsigned char)*name) ? *name : '_';
    d->name[len] = '\0';
}

dispatch *dispatch_build(const result_row *rows, size_t n, const json_t *meta,
                         const dispatch_options *opt, tune_error *err)
{
    dispatch_options none = {NULL, 0, NULL, 0.01, NULL};
    opt = opt ? opt : &none;
    dispatch *d = calloc(1, sizeof *d);
    row_ref *refs = calloc(n + 1, sizeof *refs);
    size_t n_refs = 0, n_ok = 0;
    tune_status st = d && refs ? TUNE_OK
                               : tune_error_set(err, TUNE_ERR_NOMEM, "dispatch", "out of memory");
    if (st == TUNE_OK && n == 0)
        st = tune_error_set(err, TUNE_ERR_INVALID, "dispatch", "no rows to build a rule from");
    if (st == TUNE_OK) {
        d->meta = meta;
        d->tolerance = opt->tolerance;
        st = pick_methods(d, rows, n, meta, opt, err);
    }
    if (st == TUNE_OK)
        st = collect_rows(d, rows, n, refs, &n_refs, &n_ok, err);
    if (st == TUNE_OK)
        st = pick_axis(d, refs, n_ok, opt->axis, err);
    if (st == TUNE_OK)
        st = collect_configs(d, refs, n_ok, err);
    if (st == TUNE_OK) {
        /* the failed rows too: a shape whose rows all failed is counted, not measured */
        qsort(refs, n_refs, sizeof *refs, compare_shapes);
        st = collect_shapes(d, refs, n_refs, err);
    }
    for (size_t i = 0; i < n_refs; i++)
        free(refs[i].id);
    free(refs);
    if (st == TUNE_OK) {
        set_name(d, opt->name ? opt->name : d->sweep ? d->sweep : "rule");
        st = dispatch_legal_init(d, err);
    }
    if (st == TUNE_OK) {
        st = rule_build(d, NULL, DISPATCH_NONE, &d->rule, err);
    }
    if (st == TUNE_OK)
        st = evaluate(d, err);
    if (st != TUNE_OK) {
        dispatch_free(d);
        return NULL;
    }
    return d;
}

size_t dispatch_lookup(const dispatch *d, const tune_point *shape)
{
    return dispatch_rule_lookup(d, &d->rule, shape);
}

const char *dispatch_config_method(const dispatch *d, size_t c)
{
    return c < d->n_configs ? d->methods[d->configs[c].method] : NULL;
}

const tune_point *dispatch_config_params(const dispatch *d, size_t c)
{
    return c < d->n_configs ? &d->configs[c].params : NULL;
}

size_t dispatch_n_shapes(const dispatch *d) { return d->n_shapes; }
const tune_point *dispatch_shape(const dispatch *d, size_t i) { return &d->shapes[i]; }
const char *dispatch_axis(const dispatch *d) { return d->axes[d->bp]; }
dispatch_score dispatch_get_score(const dispatch *d, dispatch_eval w) { return d->score[w]; }
