/* replay_impl.h - what the files of the replay share (analysis/replay.h is the interface):
 *   replay.c         the folders read, the searches driven, the figures of each run
 *   replay_output.c  the summaries, the table, replay.md, replay.csv, replay.json, meta.json
 */
#ifndef TUNE_REPLAY_IMPL_H
#define TUNE_REPLAY_IMPL_H

#include <stdint.h>

#include "analysis/replay.h"
#include "core/expr.h"
#include "store/results.h"

typedef struct {
    char *key;      /* every problem axis: "m=1 n=4096 k=4096 ..." (owned) */
    char name[256]; /* the problem axes that vary across the folder's shapes: "m=1 k=4096" */
    size_t *cands;  /* candidate indices of the folder, in row order */
    size_t n_cands;
    double best; /* the smallest ok time; NAN: none ran ok (the shape does not count) */
} replay_shape;

typedef struct {
    char *text; /* "name=expr" (owned) */
    char *name; /* owned */
    expr *e;    /* owned */
} replay_feature;

typedef struct {
    char *dir, *sweep, *device, *git_rev; /* owned; NULL when meta.json does not say */
    replay_feature *derived; /* the derived features searched with (owned) */
    size_t n_derived;
    int warmup; /* meta.json's timing.warmup (0 when it does not say) */
    double *cost;       /* per candidate: its GPU time, (warmup + reps) x median x batch */
    uint32_t *kernel_of; /* per candidate: the index of its kernel among the candidates' */
    size_t n_kernels;
    double base_cost, all_cost; /* the rows that are no candidate (baselines), every row */
    size_t n_base, n_measured;  /* rows no candidate and not skipped; rows not skipped */
    /* per strategy x seed x (n_budgets + 1): GPU time, kernels of the candidates evaluated */
    double *run_cost;
    uint32_t *run_kernels;
    results_rows rows;
    const char *features[SEARCH_MAX_FEATURES]; /* borrowed from rows */
    size_t n_features, n_axes;
    tune_point *points; /* per candidate: its row's values and "method" */
    double *values;     /* per candidate: median seconds, NAN when not ok */
    size_t *shape_of;   /* per candidate */
    size_t n_cands;
    replay_shape *shapes;
    size_t n_shapes, n_counted;
    /* per shape x strategy x seed (index replay_slot): the full runs' evaluations to within 1 %
     * and 3 % of the best (0: never), and per budget the fraction of the best reached */
    uint32_t *evals_1pct, *evals_3pct;
    double *at_budget; /* slot x n_budgets */
    uint32_t *rounds;  /* per strategy x seed x (n_budgets + 1, the full run last): rounds run */
    uint32_t *evaluated; /* the same: evaluations of the whole run */
    /* per strategy x seed: the full run's candidates in the order evaluated, per shape, the
     * shapes one after the other (shape i's from offset[i]) */
    uint32_t *order;
    size_t *offset; /* per shape: where its candidates start in a run's order */
} replay_folder;

typedef struct {
    char *text;     /* "param=expr" as given (owned) */
    char *param;    /* owned */
    expr *rule;     /* owned */
} replay_rule;

struct replay {
    replay_options opt; /* prior_dirs and rules point into the copies below */
    replay_folder *folders, *priors;
    size_t n_folders, n_priors;
    replay_rule *rules;
    size_t n_rules;
};

static inline size_t replay_slot(const replay *r, size_t shape, size_t strategy, size_t seed)
{
    return (shape * r->opt.n_strategies + strategy) * r->opt.seeds + seed;
}

/* replay_output.c */
/* The median of v[0..n) (sorted in place); NAN when n is 0. */
double replay_median(double *v, size_t n);
/* Shape i's figures for one strategy, over the seeds: medians of the evaluations to 1 % and 3 %,
 * per budget the median and the mean of the fraction of the best. */
void replay_shape_figures(const replay *r, const replay_folder *F, size_t shape, size_t strategy,
                          double *e1, double *e3, double *median_at, double *mean_at);

#endif
