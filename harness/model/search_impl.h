/* search_impl.h - what the files of the search module share (model/search.h is the interface):
 *   search.c        candidates, budgets, rounds; the exhaustive and random orders
 *   search_pool.c   the run's budget (SEARCH_SCOPE_RUN): rounds and the shares of the shapes
 *   search_gain.c   the model's informed rounds under the run's budget: chance per cost
 *   search_model.c  the model-guided strategy: the training set, the acquisition rule, rules
 *   search_forest.c the surrogate: a random forest of regression trees over binned features
 */
#ifndef TUNE_SEARCH_IMPL_H
#define TUNE_SEARCH_IMPL_H

#include "core/expr.h"
#include "model/search.h"

typedef struct {
    size_t id, shape;
    double x[SEARCH_MAX_FEATURES];
    double value; /* seconds; NAN: failed or not evaluated */
    int evaluated, proposed;
} search_cand;

typedef struct {
    size_t shape;
    double x[SEARCH_MAX_FEATURES];
    double value;
} search_prior;

typedef struct {
    size_t *cands; /* indices into search.cands, in the order added */
    size_t n_cands, cap_cands;
    size_t *order; /* exhaustive and random: the order proposed */
    size_t n_evaluated;
    size_t n_pending; /* proposed, not observed yet */
} search_shape;

typedef struct search_model search_model;

typedef struct {
    size_t feature; /* the parameter the rule sets */
    expr *rule;     /* owned */
} search_rule;

typedef struct {
    char *name; /* owned; s->features points to it */
    expr *e;    /* owned */
} search_derived;

struct search {
    search_options opt;
    const char *features[SEARCH_MAX_FEATURES]; /* the caller's (borrowed), then the derived */
    size_t n_features;
    search_derived derived[SEARCH_MAX_DERIVED]; /* search_add_feature, in order */
    size_t n_derived;
    char **strings[SEARCH_MAX_FEATURES]; /* per feature: the strings seen, in order */
    size_t n_strings[SEARCH_MAX_FEATURES];
    search_cand *cands;
    size_t n_cands, cap_cands;
    size_t *slots, cap_slots; /* id -> candidate index + 1 (open addressing) */
    search_shape *shapes;
    size_t n_shapes;
    search_prior *priors;
    size_t n_priors, cap_priors;
    size_t n_observed, n_pending, round;
    int started;
    search_model *model; /* SEARCH_MODEL's state; NULL until its first round */
    search_rule *rules;  /* search_add_rule: preferred in a shape's first round (model) */
    size_t n_rules;
};

/* search.c */
uint64_t search_rng_next(uint64_t *state);  /* splitmix64 */
double search_rng_uniform(uint64_t *state); /* [0, 1) */
search_cand *search_find(const search *s, size_t id);
/* Grows *arr (elements of elem bytes, *cap of them) to hold need, doubling from first. 0, or -1
 * when out of memory (*arr unchanged). */
int search_grow(void **arr, size_t *cap, size_t need, size_t elem, size_t first);
int search_point_features(search *s, const tune_point *p, double *x);
size_t search_default_batch(const search *s, size_t shape);
/* What o's budget allows of n candidates: the fraction's share (rounded up for a shape's own
 * budget, down for the run's; at least one), capped by the count and by n. */
size_t search_budget_of(const search_options *o, size_t n, int round_up);
/* Counts the proposals ids[0..n) as pending (proposed, not observed). */
void search_mark_pending(search *s, const size_t *ids, size_t n);

/* search_pool.c */
/* A round under the run's budget: its proposals into ids (at most cap), marked proposed. */
size_t search_pool_next(search *s, size_t *ids, size_t cap);

/* Per shape into r[] the relative cost of an evaluation (1: the median shape's; 1 for all while
 * nothing is known), and into *t_med (when not NULL) the median shape's time (0: none known).
 * -1: out of memory. */
int search_pool_costs(const search *s, double *r, double *t_med);

/* search_gain.c */
/* An informed round under the run's budget: up to size open candidates, those most likely to
 * beat their shape's best by 1 % per unit of cost[] (per shape), marked proposed, into
 * ids; mean, sd and matches as search_model_view gives them. Returns how many. */
size_t search_gain_pick(search *s, size_t *ids, size_t size, const double *mean, const double *sd,
                        const uint8_t *matches, const double *cost, double t_med);

/* search_model.c */
/* The default proposals per round of the model-guided strategy for the shape. */
size_t search_model_batch(const search *s, size_t shape);
/* Up to want not evaluated, not proposed candidates of the shape, chosen by the model and marked
 * proposed, into ids; returns how many. */
size_t search_model_pick(search *s, size_t shape, size_t want, size_t *ids);
void search_model_free(search_model *m);
/* The model's view for a round under the run's budget (search_pool.c), refreshed: per candidate
 * the forest's mean and spread and the rules it agrees with; 0
 * with *has_forest 0 when nothing is known yet, -1 when out of memory. */
int search_model_view(search *s, const double **mean, const double **sd, const uint8_t **matches,
                      int *has_forest);
/* The index of the feature called name, or SEARCH_MAX_FEATURES. */
size_t search_feature_index(const search *s, const char *name);
/* Frees s->rules. */
void search_rules_free(search *s);

/* search_forest.c: a random forest over features binned into codes (0: NAN). */
#define SEARCH_FOREST_BINS 64
typedef struct {
    int feature; /* -1: a leaf */
    uint8_t thr; /* left when the code <= thr */
    uint32_t left, right;
    float value; /* a leaf's mean */
} search_forest_node;

typedef struct {
    size_t n_features;
    double *edges[SEARCH_MAX_FEATURES]; /* per feature: the lower edges of its bins, ascending */
    size_t n_edges[SEARCH_MAX_FEATURES];
    search_forest_node *nodes;
    size_t n_nodes, cap_nodes;
    size_t *roots, n_trees;
} search_forest;

void search_forest_init(search_forest *f, size_t n_features);
void search_forest_release(search_forest *f);
/* The bins of every feature from the rows x[i * stride + j], i < n. 0 or -1 (out of memory). */
int search_forest_bin(search_forest *f, const double *x, size_t n, size_t stride);
/* The codes of one row (n_features of them). */
void search_forest_code(const search_forest *f, const double *x, uint8_t *codes);
/* Grows n_trees trees on bootstrap samples of (codes[i * n_features ...], y[i]), i < n, trying
 * half the features that vary at each node; the same seed grows the same forest. 0 or -1. */
int search_forest_fit(search_forest *f, const uint8_t *codes, const double *y, size_t n,
                      size_t n_trees, uint64_t seed);
/* The mean and the standard deviation over the trees of one row's predictions. */
void search_forest_predict(const search_forest *f, const uint8_t *codes, double *mean, double *sd);

#endif
