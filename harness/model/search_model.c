/* search_model.c - the model-guided strategy (docs/search.md).
 *
 * Each round, a random forest (search_forest.c) is fitted on every observation of every shape and
 * every prior: the features are the caller's (problem axes and parameters alike, so what one
 * shape taught ranks the candidates of another), the target the log of the time less the mean
 * log time of its shape's successful observations (the shape's scale removed; priors are centred
 * within their own shape apart from the candidates'). A failed evaluation is taught as slower than
 * the slowest success seen, so that its neighbours are avoided. A shape's batch is the candidates
 * of lowest confidence bound, mean - KAPPA x the spread of the trees' predictions (exploration
 * where the trees disagree), and the mean alone in a shape's last round. With nothing observed
 * yet (no forest), the order is a random one drawn from the seed, and a shape keeps one
 * evaluation of its budget for an informed round; rules (search_add_rule) put the candidates that
 * agree with them first in a shape's first round.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/search_impl.h"

enum { MODEL_TREES = 32 };
#define MODEL_KAPPA 0.5
#define MODEL_BATCH_FRACTION 0.034 /* of a shape's candidates per round: 10 % in 3 rounds */
#define MODEL_FAIL_PENALTY 1.0     /* log time above the slowest success: e times slower */

struct search_model {
    search_forest forest;
    size_t n_coded, n_priors_coded, n_rules_matched; /* what the codes and matches are of */
    uint8_t *codes, *prior_codes;                   /* n x n_features */
    double *mean, *sd;                              /* per candidate: the forest's prediction */
    uint8_t *matches;                               /* per candidate: rules it agrees with */
    size_t fit_observed, fit_priors;
    int fitted, has_forest;
};

typedef struct {
    double key, tie;
    int matches;
    size_t cand;
} model_pick;

size_t search_model_batch(const search *s, size_t shape)
{
    double b = ceil(MODEL_BATCH_FRACTION * (double)search_n_candidates(s, shape) - 1e-9);
    return b < 1 ? 1 : (size_t)b;
}

void search_model_free(search_model *m)
{
    if (!m)
        return;
    search_forest_release(&m->forest);
    free(m->codes);
    free(m->prior_codes);
    free(m->mean);
    free(m->sd);
    free(m->matches);
    free(m);
}

void search_rules_free(search *s)
{
    for (size_t i = 0; i < s->n_rules; i++)
        expr_free(s->rules[i].rule);
    free(s->rules);
    s->rules = NULL;
    s->n_rules = 0;
}

size_t search_feature_index(const search *s, const char *name)
{
    for (size_t f = 0; f < s->n_features; f++)
        if (strcmp(s->features[f], name) == 0)
            return f;
    return SEARCH_MAX_FEATURES;
}

int search_add_rule(search *s, const char *param, const expr *rule)
{
    size_t f = search_feature_index(s, param);
    if (f == SEARCH_MAX_FEATURES || !rule)
        return -1;
    char *text = expr_to_string(rule);
    expr *copy = text ? expr_parse(text, NULL) : NULL;
    free(text);
    search_rule *nr = copy ? realloc(s->rules, (s->n_rules + 1) * sizeof *nr) : NULL;
    if (!nr) {
        expr_free(copy);
        return -1;
    }
    s->rules = nr;
    s->rules[s->n_rules].feature = f;
    s->rules[s->n_rules++].rule = copy;
    return 0;
}

typedef struct {
    const search *s;
    const double *x;
} rule_ctx;

/* A feature of the candidate by name: its string for a string feature, else its number. */
static int rule_lookup(void *ctx, const char *name, expr_value *out)
{
    const rule_ctx *c = ctx;
    size_t f = search_feature_index(c->s, name);
    if (f == SEARCH_MAX_FEATURES || isnan(c->x[f]))
        return -1;
    double v = c->x[f];
    if (c->s->n_strings[f] > 0 && v >= 0 && v < (double)c->s->n_strings[f] && v == floor(v))
        *out = expr_str(c->s->strings[f][(size_t)v]);
    else if (v == floor(v) && fabs(v) < 9e15)
        *out = expr_int((int64_t)v);
    else
        *out = expr_float(v);
    return 0;
}

static uint8_t rule_matches(const search *s, const double *x)
{
    unsigned n = 0;
    for (size_t r = 0; r < s->n_rules; r++) {
        rule_ctx c = {s, x};
        expr_value v;
        if (isnan(x[s->rules[r].feature]) ||
            expr_eval(s->rules[r].rule, rule_lookup, &c, &v, NULL) != TUNE_OK)
            continue;
        n += v.type != EXPR_STR && expr_value_as_double(v) == x[s->rules[r].feature];
    }
    return (uint8_t)(n < 255 ? n : 255);
}

/* The bins over candidates and priors, every row's codes, the rules' matches. */
static int model_code(search *s, search_model *m)
{
    size_t nf = s->n_features, n = s->n_cands + s->n_priors;
    double *x = malloc((n ? n : 1) * (nf ? nf : 1) * sizeof *x);
    uint8_t *codes = malloc((s->n_cands ? s->n_cands : 1) * (nf ? nf : 1));
    uint8_t *pcodes = malloc((s->n_priors ? s->n_priors : 1) * (nf ? nf : 1));
    uint8_t *matches = malloc(s->n_cands ? s->n_cands : 1);
    double *mean = calloc(s->n_cands ? s->n_cands : 1, sizeof *mean);
    double *sd = calloc(s->n_cands ? s->n_cands : 1, sizeof *sd);
    int rc = x && codes && pcodes && matches && mean && sd ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++)
        memcpy(x + i * nf, i < s->n_cands ? s->cands[i].x : s->priors[i - s->n_cands].x,
               nf * sizeof *x);
    if (rc == 0)
        rc = search_forest_bin(&m->forest, x, n, nf);
    for (size_t i = 0; rc == 0 && i < n; i++)
        search_forest_code(&m->forest, x + i * nf,
                           i < s->n_cands ? codes + i * nf : pcodes + (i - s->n_cands) * nf);
    for (size_t i = 0; rc == 0 && i < s->n_cands; i++)
        matches[i] = rule_matches(s, s->cands[i].x);
    free(x);
    if (rc != 0) {
        free(codes), free(pcodes), free(matches), free(mean), free(sd);
        return -1;
    }
    free(m->codes), free(m->prior_codes), free(m->matches), free(m->mean), free(m->sd);
    m->codes = codes;
    m->prior_codes = pcodes;
    m->matches = matches;
    m->mean = mean;
    m->sd = sd;
    m->n_coded = s->n_cands;
    m->n_priors_coded = s->n_priors;
    m->n_rules_matched = s->n_rules;
    m->fitted = 0;
    return 0;
}

typedef struct {
    size_t shape, i;
} model_group;

static int cmp_group(const void *pa, const void *pb)
{
    const model_group *a = pa, *b = pb;
    return a->shape != b->shape ? (a->shape > b->shape) - (a->shape < b->shape)
                                : (a->i > b->i) - (a->i < b->i);
}

/* Centres the priors' y[i] (rows at or above s->n_cands) within their shapes. -1: out of memory. */
static int model_centre_priors(const search *s, const size_t *rows, size_t n, double *y)
{
    size_t np = 0;
    model_group *g = malloc((n ? n : 1) * sizeof *g);
    if (!g)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (rows[i] >= s->n_cands)
            g[np++] = (model_group){s->priors[rows[i] - s->n_cands].shape, i};
    qsort(g, np, sizeof *g, cmp_group);
    for (size_t a = 0, b; a < np; a = b) {
        double sum = 0;
        size_t k = 0;
        for (b = a; b < np && g[b].shape == g[a].shape; b++)
            if (!isnan(y[g[b].i]))
                sum += y[g[b].i], k++;
        for (size_t j = a; j < b && k > 0; j++)
            y[g[j].i] = k < 2 && !isnan(y[g[j].i]) ? INFINITY : y[g[j].i] - sum / (double)k;
    }
    free(g);
    return 0;
}

/* The training targets y[i] of the n rows in `rows` (candidates below s->n_cands, then priors):
 * the log time less the mean log time of the shape's successes; failures above the slowest
 * success. The lone success of a shape says nothing of how it compares within its shape (its
 * target would be 0 whatever it is): INFINITY, left out of the training. -1: out of memory. */
static int model_targets(const search *s, const size_t *rows, size_t n, double *y)
{
    double *sum = calloc(s->n_shapes + 1, sizeof *sum), max_y = -INFINITY;
    size_t *cnt = calloc(s->n_shapes + 1, sizeof *cnt);
    int rc = sum && cnt ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        size_t r = rows[i];
        double v = r < s->n_cands ? s->cands[r].value : s->priors[r - s->n_cands].value;
        y[i] = v > 0 ? log(v) : NAN;
        if (r < s->n_cands && !isnan(y[i])) {
            sum[s->cands[r].shape] += y[i];
            cnt[s->cands[r].shape]++;
        }
    }
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (rows[i] < s->n_cands && !isnan(y[i])) {
            size_t sh = s->cands[rows[i]].shape;
            y[i] = cnt[sh] < 2 ? INFINITY : y[i] - sum[sh] / (double)cnt[sh];
        }
    if (rc == 0)
        rc = model_centre_priors(s, rows, n, y);
    for (size_t i = 0; i < n; i++)
        if (isfinite(y[i]) && y[i] > max_y)
            max_y = y[i];
    for (size_t i = 0; i < n; i++)
        if (isnan(y[i]))
            y[i] = (isfinite(max_y) ? max_y : 0) + MODEL_FAIL_PENALTY;
    free(sum);
    free(cnt);
    return rc;
}

/* Fits the forest on every observation and prior, and predicts every candidate. */
static int model_fit(search *s, search_model *m)
{
    size_t nf = s->n_features, n = 0;
    size_t *rows = malloc((s->n_cands + s->n_priors + 1) * sizeof *rows);
    double *y = malloc((s->n_cands + s->n_priors + 1) * sizeof *y);
    uint8_t *codes = malloc((s->n_cands + s->n_priors + 1) * (nf ? nf : 1));
    int rc = rows && y && codes ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < s->n_cands + s->n_priors; i++)
        if (i >= s->n_cands || s->cands[i].evaluated) {
            memcpy(codes + n * nf,
                   i < s->n_cands ? m->codes + i * nf : m->prior_codes + (i - s->n_cands) * nf, nf);
            rows[n++] = i;
        }
    if (rc == 0)
        rc = model_targets(s, rows, n, y);
    size_t kept = 0; /* lone successes left out, unless nothing else is known */
    for (size_t i = 0; rc == 0 && i < n; i++)
        kept += isfinite(y[i]);
    for (size_t i = 0, k = 0; rc == 0 && i < n; i++)
        if (isfinite(y[i]) || kept == 0) {
            memmove(codes + k * nf, codes + i * nf, nf);
            y[k++] = isfinite(y[i]) ? y[i] : 0;
        }
    n = kept ? kept : n;
    m->has_forest = 0;
    if (rc == 0 && n > 0) {
        uint64_t seed = s->opt.seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(s->round + 1));
        rc = search_forest_fit(&m->forest, codes, y, n, MODEL_TREES, seed);
        m->has_forest = rc == 0;
    }
    for (size_t i = 0; m->has_forest && i < s->n_cands; i++) /* the evaluated too: a shape's level */
        search_forest_predict(&m->forest, m->codes + i * nf, &m->mean[i], &m->sd[i]);
    free(rows);
    free(y);
    free(codes);
    if (rc == 0) {
        m->fitted = 1;
        m->fit_observed = s->n_observed;
        m->fit_priors = s->n_priors;
    }
    return rc;
}

static int model_refresh(search *s)
{
    search_model *m = s->model;
    if (!m) {
        if (!(m = s->model = calloc(1, sizeof *m)))
            return -1;
        search_forest_init(&m->forest, s->n_features);
    }
    if ((m->n_coded != s->n_cands || m->n_priors_coded != s->n_priors ||
         m->n_rules_matched != s->n_rules || !m->codes) &&
        model_code(s, m) != 0)
        return -1;
    if (m->fitted && m->fit_observed == s->n_observed && m->fit_priors == s->n_priors)
        return 0;
    return model_fit(s, m);
}

int search_model_view(search *s, const double **mean, const double **sd,
                      const uint8_t **matches, int *has_forest)
{
    if (model_refresh(s) != 0)
        return -1;
    *mean = s->model->mean;
    *sd = s->model->sd;
    *matches = s->model->matches;
    *has_forest = s->model->has_forest;
    return 0;
}

/* With nothing known, a shape keeps one evaluation for a round the model informs, unless no
 * shape could then propose (the search would end). */
static int model_hold_blind(const search *s)
{
    for (size_t i = 0; i < s->n_shapes; i++)
        if (search_budget(s, i) >= s->shapes[i].n_evaluated + 2)
            return 1;
    return 0;
}

static int cmp_pick(const void *pa, const void *pb)
{
    const model_pick *a = pa, *b = pb;
    if (a->matches != b->matches)
        return a->matches > b->matches ? -1 : 1;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return (a->tie > b->tie) - (a->tie < b->tie);
}

size_t search_model_pick(search *s, size_t shape, size_t want, size_t *ids)
{
    if (shape >= s->n_shapes || want == 0 || model_refresh(s) != 0)
        return 0;
    search_model *m = s->model;
    search_shape *sh = &s->shapes[shape];
    model_pick *p = malloc((sh->n_cands ? sh->n_cands : 1) * sizeof *p);
    if (!p)
        return 0;
    int first = 1;
    size_t n = 0, budget = search_budget(s, shape);
    if (!m->has_forest && model_hold_blind(s))
        want = budget - sh->n_evaluated - 1 < want ? budget - sh->n_evaluated - 1 : want;
    for (size_t k = 0; k < sh->n_cands; k++)
        first &= !s->cands[sh->cands[k]].evaluated && !s->cands[sh->cands[k]].proposed;
    /* the last round of the shape exploits: the mean alone */
    double kappa = budget - sh->n_evaluated <= want ? 0 : MODEL_KAPPA;
    for (size_t k = 0; k < sh->n_cands; k++) {
        size_t ci = sh->cands[k];
        const search_cand *c = &s->cands[ci];
        if (c->evaluated || c->proposed)
            continue;
        uint64_t h = s->opt.seed ^ (0xd1b54a32d192ed03ull * (uint64_t)(c->id + 1));
        p[n].tie = search_rng_uniform(&h);
        p[n].key = m->has_forest ? m->mean[ci] - kappa * m->sd[ci] : 0;
        p[n].matches = first ? m->matches[ci] : 0;
        p[n++].cand = ci;
    }
    qsort(p, n, sizeof *p, cmp_pick);
    size_t out = 0;
    for (; out < want && out < n; out++) {
        s->cands[p[out].cand].proposed = 1;
        ids[out] = s->cands[p[out].cand].id;
    }
    free(p);
    return out;
}
