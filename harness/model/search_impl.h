/* search_impl.h - what the files of the search module share (model/search.h is the interface):
 *   search.c        candidates, budgets, rounds; the exhaustive and random orders
 *   search_model.c  the model-guided strategy: the surrogate and its acquisition rule
 */
#ifndef TUNE_SEARCH_IMPL_H
#define TUNE_SEARCH_IMPL_H

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
} search_shape;

typedef struct search_model search_model;

struct search {
    search_options opt;
    const char *features[SEARCH_MAX_FEATURES];
    size_t n_features;
    char **strings[SEARCH_MAX_FEATURES]; /* per feature: the strings seen, in order */
    size_t n_strings[SEARCH_MAX_FEATURES];
    search_cand *cands;
    size_t n_cands, cap_cands;
    size_t *slots, cap_slots; /* id -> candidate index + 1 (open addressing) */
    search_shape *shapes;
    size_t n_shapes;
    search_prior *priors;
    size_t n_priors, cap_priors;
    size_t n_observed, round;
    int started;
    search_model *model; /* SEARCH_MODEL's state; NULL until its first round */
};

/* search.c */
uint64_t search_rng_next(uint64_t *state);      /* splitmix64 */
double search_rng_uniform(uint64_t *state);     /* [0, 1) */
search_cand *search_find(const search *s, size_t id);
int search_point_features(search *s, const tune_point *p, double *x);
size_t search_default_batch(const search *s, size_t shape);

/* search_model.c */
/* The default proposals per round of the model-guided strategy for the shape. */
size_t search_model_batch(const search *s, size_t shape);
/* Up to want not evaluated, not proposed candidates of the shape, chosen by the model and marked
 * proposed, into ids; returns how many. */
size_t search_model_pick(search *s, size_t shape, size_t want, size_t *ids);
void search_model_free(search_model *m);

#endif
