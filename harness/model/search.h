/* search.h - which configurations of a sweep to measure: all of them (exhaustive), a random
 * sample under a budget, or a sample guided by a surrogate model (docs/search.md). CPU only: the
 * run (run/) and the replay against a measured results folder (analysis/) drive it the same way,
 * so that what the replay proves holds for the run.
 *
 *   search_options o;
 *   search_options_init(&o);
 *   o.strategy = SEARCH_RANDOM;
 *   o.budget_fraction = 0.10;                       // 10 % of the run's candidates in all
 *   const char *features[] = {"k", "n", "m", "method", "bm", "bn"};
 *   search *s = search_new(&o, features, 6, &err);
 *   for each candidate (a tuned configuration the family can run):
 *       search_add(s, shape, id, &point);           // features read from the point by name
 *   search_observe_prior(s, shape, &old, seconds);  // optional warm starts (model strategy):
 *   search_add_rule(s, "bn", rule);                 //   earlier results, fitted rules
 *   size_t ids[4096], n;
 *   while ((n = search_next(s, ids, 4096)) > 0)     // one round: some candidates of every shape
 *       for (i < n) search_observe(s, ids[i], seconds_or_NAN);
 *   search_free(s);
 *
 * A candidate is identified by the caller's id (a configuration index; unique). The budget is
 * the run's (SEARCH_SCOPE_RUN, the default: the evaluations of all shapes together, which the
 * strategy distributes over the shapes) or each shape's (SEARCH_SCOPE_SHAPE). A round proposes
 * not yet evaluated candidates of the shapes whose budget is not spent (per shape at most
 * `batch`, or under the run's budget the strategy's share of the round); every proposed id must
 * be observed before the next round. An observation counts against the budget whether or not the
 * id was proposed (a resumed run observes its earlier rows first), and a failed evaluation (NAN:
 * invalid, crashed, launch error) counts too. The proposals depend only on the options (seed
 * included), the candidates in the order they were added and the observations: the same inputs
 * give the same rounds.
 */
#ifndef TUNE_SEARCH_H
#define TUNE_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/expr.h"
#include "core/point.h"

typedef enum {
    SEARCH_EXHAUSTIVE, /* every candidate, in the order added (the default) */
    SEARCH_RANDOM,     /* a uniform random order per shape */
    SEARCH_MODEL       /* a surrogate model over the features picks each round */
} search_strategy;

typedef enum {
    SEARCH_SCOPE_RUN,  /* the budget is the run's, distributed over its shapes (the default) */
    SEARCH_SCOPE_SHAPE /* the budget is each shape's */
} search_scope;

#define SEARCH_MAX_DERIVED 16
#define SEARCH_MAX_FEATURES (TUNE_MAX_AXES + SEARCH_MAX_DERIVED)

typedef struct {
    search_strategy strategy;
    search_scope scope;
    double budget_fraction; /* (0, 1]: of the run's candidates, at most floor(fraction x them)
                               (at least 1); per shape: ceil(fraction x its candidates); 0: unset */
    size_t budget_count;    /* > 0: at most this many (the run's, or each shape's); 0: unset.
                               Both unset: all; both set: the smaller */
    size_t batch;           /* proposals per shape per round; 0: the strategy's default */
    uint64_t seed;
} search_options;

typedef struct search search;

void search_options_init(search_options *o);
/* "exhaustive", "random", "model". */
const char *search_strategy_name(search_strategy s);
/* 0 and *out for a known name, -1 otherwise. */
int search_strategy_parse(const char *text, search_strategy *out);
/* A budget as written in a sweep or on the command line: "10%" (a fraction of the run's
 * candidates, (0, 100] %) or "400" (a count of evaluations, >= 1), the run's; with "/shape"
 * ("10%/shape", "4/shape") each shape's. 0 with *fraction or *count set (the other 0) and *scope,
 * -1 when it is neither. */
int search_budget_parse(const char *text, double *fraction, size_t *count, search_scope *scope);
/* "10%", "12", "10%/shape" or "4/shape" into buf (the form search_budget_parse reads); "all" when
 * unset. Returns buf. */
const char *search_budget_format(const search_options *o, char *buf, size_t size);

/* New search over the named features (at most SEARCH_MAX_FEATURES; names borrowed), or NULL with
 * err set. */
TUNE_MUST_CHECK search *search_new(const search_options *o, const char *const *features,
                                   size_t n_features, tune_error *err);
void search_free(search *s);

/* Adds a derived feature (docs/search.md: "features"): name (copied; not a feature already) and
 * an expression (copied) over the names of the points given to search_add and
 * search_observe_prior, and over the derived features added before it, as a sweep's expressions
 * read them (core/expr.h). Its value is a feature like the others (a string: the index of the
 * string); NAN where it fails to evaluate (an unknown name, a division by zero). Before the first
 * search_add or search_observe_prior; at most SEARCH_MAX_DERIVED, and SEARCH_MAX_FEATURES features
 * in all. 0, or -1 when refused or out of memory. */
int search_add_feature(search *s, const char *name, const expr *e);
/* The features: the caller's, then the derived. */
size_t search_n_features(const search *s);

/* Adds candidate id of shape `shape` (any index; shapes need not be dense). A feature missing
 * from p is NAN; a string feature is the index of that string among the strings seen so far for
 * the feature. 0, or -1 when out of memory or id was added before. */
int search_add(search *s, size_t shape, size_t id, const tune_point *p);
/* The evaluation of candidate id: its time in seconds (> 0), or NAN when it failed. An id that is
 * not a candidate, or observed before, is ignored. */
void search_observe(search *s, size_t id, double seconds);
/* A measurement of a point that is not a candidate (a warm start: an earlier run of the sweep,
 * another GPU): it informs the model and costs no budget. 0, or -1 when out of memory. */
int search_observe_prior(search *s, size_t shape, const tune_point *p, double seconds);
/* A fitted rule (analysis/fit.h: an integer expression over the problem axes, `tune fit`) for the
 * feature param, as a prior of the model strategy: in a shape's first round (nothing of it
 * evaluated), the candidates whose param equals the rule's value on their features are proposed
 * first. The rule reads features by name (a string feature as its string); a candidate on which
 * it fails to evaluate does not match. The rule is copied. 0, or -1 when param is not a feature
 * or out of memory. The exhaustive and random strategies ignore rules. */
int search_add_rule(search *s, const char *param, const expr *rule);

/* The next round into ids (at most cap): returns how many, 0 when every shape's budget is spent
 * or its candidates evaluated. */
size_t search_next(search *s, size_t *ids, size_t cap);

/* 1 when the round search_next just proposed is the last: once its proposals are observed, every
 * budget is spent or every candidate evaluated. */
int search_round_is_last(const search *s);

/* Per shape: candidates added, evaluations allowed, evaluations observed. Under the run's budget a
 * shape's allowance is what the strategy gave it so far (observed, and proposed in the round not
 * yet observed): at the end, its evaluations. */
size_t search_n_candidates(const search *s, size_t shape);
size_t search_budget(const search *s, size_t shape);
size_t search_n_evaluated(const search *s, size_t shape);
/* The run: evaluations allowed (the run's budget; under budgets per shape their sum), candidates
 * added, evaluations observed. */
size_t search_budget_total(const search *s);
/* This search is shard `mine` of a run of n_shards, shard i holding n_of[i] of its candidates: a
 * count under the run's budget becomes this shard's share of it, in proportion to the candidates
 * by largest remainders (Hamilton; ties to the lower shard), so that the shares add up to the count
 * (but none above its candidates); a percentage, and budgets per shape, are unchanged. */
void search_share_budget(search *s, const size_t *n_of, size_t n_shards, size_t mine);
size_t search_n_candidates_total(const search *s);
size_t search_n_evaluated_total(const search *s);

#endif
