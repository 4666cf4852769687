/* search_forest.c - the surrogate of the model-guided search: a random forest of regression trees
 * (Breiman 2001) over binned features. Each feature's values are binned once (its distinct values,
 * or quantiles when there are more than SEARCH_FOREST_BINS - 1), so that a node's best split is a
 * scan of a histogram: a tree costs O(samples x features tried x depth), a round over thousands
 * of observations a few milliseconds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/search_impl.h"

enum { FOREST_MAX_DEPTH = 24 };

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

void search_forest_init(search_forest *f, size_t n_features)
{
    memset(f, 0, sizeof *f);
    f->n_features = n_features;
}

void search_forest_release(search_forest *f)
{
    for (size_t j = 0; j < f->n_features; j++)
        free(f->edges[j]);
    free(f->nodes);
    free(f->roots);
    memset(f, 0, sizeof *f);
}

int search_forest_bin(search_forest *f, const double *x, size_t n, size_t stride)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return -1;
    for (size_t j = 0; j < f->n_features; j++) {
        size_t m = 0, d = 0;
        for (size_t i = 0; i < n; i++)
            if (!isnan(x[i * stride + j]))
                v[m++] = x[i * stride + j];
        qsort(v, m, sizeof *v, cmp_double);
        for (size_t i = 0; i < m; i++)
            if (d == 0 || v[i] != v[d - 1])
                v[d++] = v[i];
        size_t nb = d < SEARCH_FOREST_BINS - 1 ? d : SEARCH_FOREST_BINS - 1;
        free(f->edges[j]);
        if (!(f->edges[j] = malloc((nb ? nb : 1) * sizeof *f->edges[j]))) {
            free(v);
            return -1;
        }
        for (size_t b = 0; b < nb; b++) /* lower edges: every value, or quantiles of them */
            f->edges[j][b] = v[nb == d ? b : b * d / nb];
        f->n_edges[j] = nb;
    }
    free(v);
    return 0;
}

/* 0 for NAN, else 1 + the index of the last edge <= x (values below every edge: 1). */
static uint8_t forest_code(const search_forest *f, size_t j, double x)
{
    if (isnan(x))
        return 0;
    size_t lo = 0, hi = f->n_edges[j];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->edges[j][mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (uint8_t)(lo ? lo : 1);
}

void search_forest_code(const search_forest *f, const double *x, uint8_t *codes)
{
    for (size_t j = 0; j < f->n_features; j++)
        codes[j] = forest_code(f, j, x[j]);
}

typedef struct {
    search_forest *f;
    const uint8_t *codes; /* n x n_features */
    const double *y;
    size_t *idx;          /* the samples of the tree (distinct), partitioned by the nodes */
    double *w;            /* per sample: its bootstrap count */
    size_t features[SEARCH_MAX_FEATURES], n_active, mtry;
    uint64_t rng;
} forest_build;

static long forest_push(search_forest *f, search_forest_node node)
{
    if (search_grow((void **)&f->nodes, &f->cap_nodes, f->n_nodes + 1, sizeof *f->nodes, 1024))
        return -1;
    f->nodes[f->n_nodes] = node;
    return (long)f->n_nodes++;
}

typedef struct {
    double gain;
    int feature;
    int thr;
} forest_split;

/* The best split of idx[0..n) on feature j: the threshold maximising the decrease of the sum of
 * squares, each side weighing at least 1. */
static void forest_best_on(const forest_build *b, const size_t *idx, size_t n, size_t j,
                           double w_all, double s_all, forest_split *best)
{
    double hw[SEARCH_FOREST_BINS] = {0}, hs[SEARCH_FOREST_BINS] = {0};
    size_t nf = b->f->n_features;
    for (size_t i = 0; i < n; i++) {
        size_t k = idx[i];
        uint8_t c = b->codes[k * nf + j];
        hw[c] += b->w[k];
        hs[c] += b->w[k] * b->y[k];
    }
    double wl = 0, sl = 0, base = s_all * s_all / w_all;
    for (size_t c = 0; c + 1 <= b->f->n_edges[j]; c++) {
        wl += hw[c];
        sl += hs[c];
        double wr = w_all - wl;
        if (wl < 1 || wr < 1 || hw[c] == 0)
            continue;
        double sr = s_all - sl, gain = sl * sl / wl + sr * sr / wr - base;
        if (gain > best->gain + 1e-12) {
            best->gain = gain;
            best->feature = (int)j;
            best->thr = (int)c;
        }
    }
}

static long forest_grow(forest_build *b, size_t *idx, size_t n, int depth)
{
    double w = 0, s = 0, ss = 0;
    for (size_t i = 0; i < n; i++) {
        w += b->w[idx[i]];
        s += b->w[idx[i]] * b->y[idx[i]];
        ss += b->w[idx[i]] * b->y[idx[i]] * b->y[idx[i]];
    }
    search_forest_node leaf = {-1, 0, 0, 0, (float)(w > 0 ? s / w : 0)};
    forest_split best = {0, -1, 0};
    if (depth < FOREST_MAX_DEPTH && w >= 2 && ss - s * s / w > 1e-12 * w) {
        /* mtry features drawn without replacement among the active ones */
        size_t pool[SEARCH_MAX_FEATURES];
        memcpy(pool, b->features, b->n_active * sizeof *pool);
        for (size_t t = 0; t < b->mtry && t < b->n_active; t++) {
            size_t r = t + (size_t)(search_rng_next(&b->rng) % (b->n_active - t));
            size_t j = pool[r];
            pool[r] = pool[t];
            pool[t] = j;
            forest_best_on(b, idx, n, j, w, s, &best);
        }
    }
    if (best.feature < 0)
        return forest_push(b->f, leaf);
    size_t nf = b->f->n_features, m = 0;
    for (size_t i = 0; i < n; i++)
        if (b->codes[idx[i] * nf + (size_t)best.feature] <= best.thr) {
            size_t t = idx[m];
            idx[m++] = idx[i];
            idx[i] = t;
        }
    long self = forest_push(b->f, leaf);
    if (self < 0)
        return -1;
    long l = forest_grow(b, idx, m, depth + 1);
    long r = l < 0 ? -1 : forest_grow(b, idx + m, n - m, depth + 1);
    if (r < 0)
        return -1;
    search_forest_node *node = &b->f->nodes[self];
    node->feature = best.feature;
    node->thr = (uint8_t)best.thr;
    node->left = (uint32_t)l;
    node->right = (uint32_t)r;
    return self;
}

int search_forest_fit(search_forest *f, const uint8_t *codes, const double *y, size_t n,
                      size_t n_trees, uint64_t seed)
{
    f->n_nodes = 0;
    f->n_trees = 0;
    free(f->roots);
    f->roots = malloc((n_trees ? n_trees : 1) * sizeof *f->roots);
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    double *w = malloc((n ? n : 1) * sizeof *w);
    forest_build b = {f, codes, y, idx, w, {0}, 0, 0, seed};
    int rc = f->roots && idx && w ? 0 : -1;
    for (size_t j = 0; j < f->n_features; j++)
        if (f->n_edges[j] > 1)
            b.features[b.n_active++] = j;
    b.mtry = (b.n_active + 1) / 2;
    for (size_t t = 0; rc == 0 && t < n_trees && n > 0; t++) {
        memset(w, 0, n * sizeof *w);
        for (size_t i = 0; i < n; i++) /* a bootstrap sample, as counts */
            w[search_rng_next(&b.rng) % n] += 1;
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (w[i] > 0)
                idx[m++] = i;
        long root = forest_grow(&b, idx, m, 0);
        if (root < 0)
            rc = -1;
        else
            f->roots[f->n_trees++] = (size_t)root;
    }
    free(idx);
    free(w);
    return rc;
}

void search_forest_predict(const search_forest *f, const uint8_t *codes, double *mean,
                           double *sd)
{
    double s = 0, ss = 0;
    for (size_t t = 0; t < f->n_trees; t++) {
        const search_forest_node *node = &f->nodes[f->roots[t]];
        while (node->feature >= 0)
            node = &f->nodes[codes[node->feature] <= node->thr ? node->left : node->right];
        s += node->value;
        ss += (double)node->value * node->value;
    }
    double k = f->n_trees ? (double)f->n_trees : 1;
    *mean = s / k;
    double var = ss / k - *mean * *mean;
    *sd = var > 0 ? sqrt(var) : 0;
}
