/* search.c - the candidates, budgets and rounds of a search; the exhaustive and random orders.
 * The model-guided strategy picks a shape's candidates through search_model_pick
 * (search_model.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/search_impl.h"

void search_options_init(search_options *o)
{
    memset(o, 0, sizeof *o);
    o->strategy = SEARCH_EXHAUSTIVE;
    o->scope = SEARCH_SCOPE_RUN;
    o->seed = 1;
}

static const char *const strategy_names[] = {"exhaustive", "random", "model"};

const char *search_strategy_name(search_strategy s)
{
    return (unsigned)s < sizeof strategy_names / sizeof *strategy_names ? strategy_names[s] : "?";
}

int search_strategy_parse(const char *text, search_strategy *out)
{
    for (size_t i = 0; text && i < sizeof strategy_names / sizeof *strategy_names; i++)
        if (strcmp(text, strategy_names[i]) == 0) {
            *out = (search_strategy)i;
            return 0;
        }
    return -1;
}

int search_budget_parse(const char *text, double *fraction, size_t *count, search_scope *scope)
{
    char *end = NULL, num[64];
    if (!text || !*text || *text == '-' || *text == '+' || *text == ' ')
        return -1;
    size_t len = strlen(text), suffix = strlen("/shape");
    int per_shape = len > suffix && strcmp(text + len - suffix, "/shape") == 0;
    if (per_shape)
        len -= suffix;
    if (len >= sizeof num)
        return -1;
    memcpy(num, text, len);
    num[len] = '\0';
    double v = strtod(num, &end);
    if (end == num || !isfinite(v))
        return -1;
    if (*end == '%' && end[1] == '\0') {
        if (!(v > 0 && v <= 100))
            return -1;
        *fraction = v / 100.0;
        *count = 0;
    } else {
        if (*end != '\0' || v < 1 || v != floor(v) || v > 1e15 || strpbrk(num, ".eE"))
            return -1;
        *count = (size_t)v;
        *fraction = 0;
    }
    *scope = per_shape ? SEARCH_SCOPE_SHAPE : SEARCH_SCOPE_RUN;
    return 0;
}

const char *search_budget_format(const search_options *o, char *buf, size_t size)
{
    const char *per = o->scope == SEARCH_SCOPE_SHAPE ? "/shape" : "";
    if (o->budget_fraction > 0 && o->budget_count > 0)
        snprintf(buf, size, "min(%.15g%%, %zu)%s", o->budget_fraction * 100, o->budget_count, per);
    else if (o->budget_fraction > 0)
        snprintf(buf, size, "%.15g%%%s", o->budget_fraction * 100, per);
    else if (o->budget_count > 0)
        snprintf(buf, size, "%zu%s", o->budget_count, per);
    else
        snprintf(buf, size, "all");
    return buf;
}

uint64_t search_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double search_rng_uniform(uint64_t *state)
{
    return (double)(search_rng_next(state) >> 11) * 0x1.0p-53;
}

search *search_new(const search_options *o, const char *const *features, size_t n_features,
                   tune_error *err)
{
    if (n_features > SEARCH_MAX_FEATURES) {
        tune_error_set(err, TUNE_ERR_INVALID, "search", "%zu features: at most %d", n_features,
                       SEARCH_MAX_FEATURES);
        return NULL;
    }
    if (o->budget_fraction < 0 || o->budget_fraction > 1) {
        tune_error_set(err, TUNE_ERR_INVALID, "search", "budget fraction %g: expected (0, 1]",
                       o->budget_fraction);
        return NULL;
    }
    search *s = calloc(1, sizeof *s);
    if (!s) {
        tune_error_set(err, TUNE_ERR_NOMEM, "search", "out of memory");
        return NULL;
    }
    s->opt = *o;
    s->n_features = n_features;
    for (size_t f = 0; f < n_features; f++)
        s->features[f] = features[f];
    return s;
}

void search_free(search *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_shapes; i++) {
        free(s->shapes[i].cands);
        free(s->shapes[i].order);
    }
    free(s->shapes);
    free(s->cands);
    free(s->slots);
    free(s->priors);
    for (size_t f = 0; f < s->n_features; f++) {
        for (size_t j = 0; j < s->n_strings[f]; j++)
            free(s->strings[f][j]);
        free(s->strings[f]);
    }
    for (size_t d = 0; d < s->n_derived; d++) {
        free(s->derived[d].name);
        expr_free(s->derived[d].e);
    }
    search_model_free(s->model);
    search_rules_free(s);
    free(s);
}

/* The code of value v of feature f: a number, a string's index among the feature's strings (added
 * when new), or NAN. -1: out of memory. */
static int feature_code(search *s, size_t f, expr_value v, double *out)
{
    if (v.type != EXPR_STR) {
        *out = expr_value_as_double(v);
        if (!isfinite(*out))
            *out = NAN;
        return 0;
    }
    for (size_t j = 0; j < s->n_strings[f]; j++)
        if (strcmp(s->strings[f][j], v.s) == 0) {
            *out = (double)j;
            return 0;
        }
    char **ns = realloc(s->strings[f], (s->n_strings[f] + 1) * sizeof *ns);
    if (!ns)
        return -1;
    s->strings[f] = ns;
    if (!(ns[s->n_strings[f]] = strdup(v.s)))
        return -1;
    *out = (double)s->n_strings[f]++;
    return 0;
}

/* A derived feature's lookup: the derived features before it (by name), then the point's. */
typedef struct {
    const search *s;
    const tune_point *p;
    const expr_value *vals; /* the derived features' values so far */
    const int *ok;
    size_t n;
} derived_ctx;

static int derived_lookup(void *ctx, const char *name, expr_value *out)
{
    const derived_ctx *c = ctx;
    for (size_t d = 0; d < c->n; d++)
        if (strcmp(c->s->derived[d].name, name) == 0) {
            if (!c->ok[d])
                return -1;
            *out = c->vals[d];
            return 0;
        }
    return point_get(c->p, name, out);
}

int search_point_features(search *s, const tune_point *p, double *x)
{
    size_t nb = s->n_features - s->n_derived;
    for (size_t f = 0; f < nb; f++) {
        expr_value v;
        x[f] = NAN;
        if (point_get(p, s->features[f], &v) == 0 && feature_code(s, f, v, &x[f]) != 0)
            return -1;
    }
    expr_value vals[SEARCH_MAX_DERIVED];
    int ok[SEARCH_MAX_DERIVED];
    for (size_t d = 0; d < s->n_derived; d++) {
        derived_ctx c = {s, p, vals, ok, d};
        ok[d] = expr_eval(s->derived[d].e, derived_lookup, &c, &vals[d], NULL) == TUNE_OK;
        x[nb + d] = NAN;
        if (ok[d] && feature_code(s, nb + d, vals[d], &x[nb + d]) != 0)
            return -1;
    }
    return 0;
}

int search_add_feature(search *s, const char *name, const expr *e)
{
    if (!name || !*name || !e || s->n_cands > 0 || s->n_priors > 0 ||
        s->n_derived == SEARCH_MAX_DERIVED || s->n_features == SEARCH_MAX_FEATURES ||
        search_feature_index(s, name) != SEARCH_MAX_FEATURES)
        return -1;
    char *text = expr_to_string(e);
    expr *copy = text ? expr_parse(text, NULL) : NULL;
    char *nm = strdup(name);
    free(text);
    if (!copy || !nm) {
        expr_free(copy);
        free(nm);
        return -1;
    }
    s->derived[s->n_derived].name = nm;
    s->derived[s->n_derived++].e = copy;
    s->features[s->n_features++] = nm;
    return 0;
}

size_t search_n_features(const search *s)
{
    return s->n_features;
}

/* The shape record of index shape, created (with the ones below it) when new. */
static search_shape *shape_at(search *s, size_t shape)
{
    if (shape >= s->n_shapes) {
        size_t n = shape + 1;
        search_shape *ns = realloc(s->shapes, n * sizeof *ns);
        if (!ns)
            return NULL;
        memset(ns + s->n_shapes, 0, (n - s->n_shapes) * sizeof *ns);
        s->shapes = ns;
        s->n_shapes = n;
    }
    return &s->shapes[shape];
}

/* The slot of id in the open-addressing table (its candidate index + 1, or 0 where it would go). */
static size_t *slot_of(const search *s, size_t id)
{
    size_t mask = s->cap_slots - 1, h = (size_t)((uint64_t)id * 0x9e3779b97f4a7c15ull >> 7);
    for (size_t i = h & mask;; i = (i + 1) & mask)
        if (s->slots[i] == 0 || s->cands[s->slots[i] - 1].id == id)
            return &s->slots[i];
}

static int grow_slots(search *s)
{
    size_t cap = s->cap_slots ? 2 * s->cap_slots : 1024;
    size_t *old = s->slots, old_cap = s->cap_slots;
    if (!(s->slots = calloc(cap, sizeof *s->slots))) {
        s->slots = old;
        return -1;
    }
    s->cap_slots = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i])
            *slot_of(s, s->cands[old[i] - 1].id) = old[i];
    free(old);
    return 0;
}

search_cand *search_find(const search *s, size_t id)
{
    if (!s->cap_slots)
        return NULL;
    size_t v = *slot_of(s, id);
    return v ? &s->cands[v - 1] : NULL;
}

int search_grow(void **arr, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? 2 * *cap : first;
    while (nc < need)
        nc *= 2;
    void *na = realloc(*arr, nc * elem);
    if (!na)
        return -1;
    *arr = na;
    *cap = nc;
    return 0;
}

static int push(size_t **arr, size_t *n, size_t *cap, size_t v)
{
    if (search_grow((void **)arr, cap, *n + 1, sizeof **arr, 16))
        return -1;
    (*arr)[(*n)++] = v;
    return 0;
}

int search_add(search *s, size_t shape, size_t id, const tune_point *p)
{
    if (search_find(s, id))
        return -1;
    if (2 * (s->n_cands + 1) > s->cap_slots && grow_slots(s) != 0)
        return -1;
    if (search_grow((void **)&s->cands, &s->cap_cands, s->n_cands + 1, sizeof *s->cands, 256))
        return -1;
    search_shape *sh = shape_at(s, shape);
    if (!sh)
        return -1;
    search_cand *c = &s->cands[s->n_cands];
    memset(c, 0, sizeof *c);
    c->id = id;
    c->shape = shape;
    c->value = NAN;
    if (search_point_features(s, p, c->x) != 0 ||
        push(&sh->cands, &sh->n_cands, &sh->cap_cands, s->n_cands) != 0)
        return -1;
    *slot_of(s, id) = ++s->n_cands;
    s->started = 0; /* orders are drawn again over the new set */
    return 0;
}

void search_observe(search *s, size_t id, double seconds)
{
    search_cand *c = search_find(s, id);
    if (!c || c->evaluated)
        return;
    c->evaluated = 1;
    c->value = seconds > 0 ? seconds : NAN;
    s->shapes[c->shape].n_evaluated++;
    s->n_observed++;
    if (c->proposed && s->shapes[c->shape].n_pending > 0) {
        s->shapes[c->shape].n_pending--;
        s->n_pending--;
    }
}

int search_observe_prior(search *s, size_t shape, const tune_point *p, double seconds)
{
    if (search_grow((void **)&s->priors, &s->cap_priors, s->n_priors + 1, sizeof *s->priors, 256))
        return -1;
    search_prior *pr = &s->priors[s->n_priors];
    pr->shape = shape;
    pr->value = seconds > 0 ? seconds : NAN;
    if (search_point_features(s, p, pr->x) != 0)
        return -1;
    s->n_priors++;
    return 0;
}

size_t search_n_candidates(const search *s, size_t shape)
{
    return shape < s->n_shapes ? s->shapes[shape].n_cands : 0;
}

size_t search_budget(const search *s, size_t shape)
{
    if (s->opt.scope == SEARCH_SCOPE_RUN)
        return shape < s->n_shapes ? s->shapes[shape].n_evaluated + s->shapes[shape].n_pending : 0;
    return search_budget_of(&s->opt, search_n_candidates(s, shape), 1);
}

void search_share_budget(search *s, const size_t *n_of, size_t n_shards, size_t mine)
{
    size_t all = 0, count = s->opt.budget_count;
    for (size_t i = 0; i < n_shards; i++)
        all += n_of[i];
    if (s->opt.scope != SEARCH_SCOPE_RUN || count == 0 || mine >= n_shards || all == 0 ||
        n_of[mine] >= all)
        return;
    if (count >= all) {
        s->opt.budget_count = n_of[mine];
        return;
    }
    /* shard i's quota count x n_of[i] / all: its floor, and one more to the count - (sum of
     * floors) shards of largest remainder (ties to the lower shard), in exact integers */
    typedef unsigned __int128 u128;
    size_t floors = 0, ahead = 0;
    u128 rem_mine = (u128)count * n_of[mine] % all;
    for (size_t i = 0; i < n_shards; i++) {
        floors += (size_t)((u128)count * n_of[i] / all);
        u128 r = (u128)count * n_of[i] % all;
        ahead += i != mine && (r > rem_mine || (r == rem_mine && i < mine));
    }
    s->opt.budget_count = (size_t)((u128)count * n_of[mine] / all) + (ahead < count - floors);
}

size_t search_budget_of(const search_options *o, size_t n, int round_up)
{
    size_t b = n;
    if (o->budget_fraction > 0) {
        double x = o->budget_fraction * (double)n;
        double f = round_up ? ceil(x - 1e-9) : floor(x + 1e-9);
        b = f < 1 && n > 0 ? 1 : (size_t)f;
    }
    if (o->budget_count > 0 && o->budget_count < b)
        b = o->budget_count;
    return b < n ? b : n;
}

size_t search_n_evaluated(const search *s, size_t shape)
{
    return shape < s->n_shapes ? s->shapes[shape].n_evaluated : 0;
}

/* The order of the exhaustive and random strategies: every candidate of the shape, the random
 * one shuffled by a generator seeded from the seed and the shape. */
static int draw_order(search *s, search_shape *sh, size_t shape)
{
    free(sh->order);
    if (!(sh->order = malloc((sh->n_cands ? sh->n_cands : 1) * sizeof *sh->order)))
        return -1;
    if (sh->n_cands) /* a shape of another shard has none (and no array) */
        memcpy(sh->order, sh->cands, sh->n_cands * sizeof *sh->order);
    if (s->opt.strategy == SEARCH_RANDOM) {
        uint64_t rng = s->opt.seed ^ (0xd1b54a32d192ed03ull * (uint64_t)(shape + 1));
        for (size_t i = sh->n_cands; i > 1; i--) {
            size_t j = (size_t)(search_rng_next(&rng) % i), t = sh->order[i - 1];
            sh->order[i - 1] = sh->order[j];
            sh->order[j] = t;
        }
    }
    return 0;
}

size_t search_default_batch(const search *s, size_t shape)
{
    if (s->opt.batch > 0)
        return s->opt.batch;
    if (s->opt.strategy == SEARCH_MODEL)
        return search_model_batch(s, shape);
    /* exhaustive and random: one round (under the run's budget, all a shape has at most) */
    size_t b =
        s->opt.scope == SEARCH_SCOPE_RUN ? search_n_candidates(s, shape) : search_budget(s, shape);
    return b ? b : 1;
}

size_t search_next(search *s, size_t *ids, size_t cap)
{
    size_t n = 0;
    if (!s->started) {
        for (size_t i = 0; i < s->n_shapes; i++)
            if (s->opt.strategy != SEARCH_MODEL && draw_order(s, &s->shapes[i], i) != 0)
                return 0;
        s->started = 1;
    }
    if (s->opt.scope == SEARCH_SCOPE_RUN) {
        n = search_pool_next(s, ids, cap);
        search_mark_pending(s, ids, n);
        s->round++;
        return n;
    }
    for (size_t i = 0; i < s->n_shapes && n < cap; i++) {
        search_shape *sh = &s->shapes[i];
        size_t budget = search_budget(s, i);
        if (sh->n_evaluated >= budget)
            continue;
        size_t want = budget - sh->n_evaluated, batch = search_default_batch(s, i);
        if (want > batch)
            want = batch;
        if (want > cap - n)
            want = cap - n;
        if (s->opt.strategy == SEARCH_MODEL) {
            n += search_model_pick(s, i, want, ids + n);
            continue;
        }
        for (size_t k = 0; k < sh->n_cands && want > 0; k++) {
            search_cand *c = &s->cands[sh->order[k]];
            if (!c->evaluated && !c->proposed) {
                c->proposed = 1;
                ids[n++] = c->id;
                want--;
            }
        }
    }
    search_mark_pending(s, ids, n);
    s->round++;
    return n;
}

void search_mark_pending(search *s, const size_t *ids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        search_cand *c = search_find(s, ids[i]);
        if (c && !c->evaluated) {
            s->shapes[c->shape].n_pending++;
            s->n_pending++;
        }
    }
}

int search_round_is_last(const search *s)
{
    if (s->opt.scope == SEARCH_SCOPE_RUN)
        return s->n_observed + s->n_pending >= search_budget_total(s) ||
               s->n_observed + s->n_pending >= s->n_cands;
    for (size_t i = 0; i < s->n_shapes; i++)
        if (s->shapes[i].n_evaluated + s->shapes[i].n_pending < search_budget(s, i))
            return 0;
    return 1;
}

size_t search_n_candidates_total(const search *s)
{
    return s->n_cands;
}

size_t search_n_evaluated_total(const search *s)
{
    return s->n_observed;
}
