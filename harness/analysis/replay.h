/* replay.h - a search strategy (model/search.h) replayed against a measured exhaustive run: the
 * run's rows are the oracle, so a strategy is scored without a GPU (`tune replay`,
 * docs/search.md).
 *
 *   replay_options o;
 *   replay_options_init(&o);                          // random and model, 20 seeds, 5/10/25 %
 *   const char *dirs[] = {"results/w4a16/20261123T080659Z"};
 *   replay *r = replay_run(dirs, 1, &o, &err);        // NULL with err naming the file
 *   replay_write_table(r, stdout);
 *   replay_write_files(r, "results/replay/x", argc, argv, &err); // replay.md .csv .json, meta.json
 *   replay_free(r);
 *
 * Each folder is replayed on its own (one sweep). Its candidates are the rows of tuned methods
 * (rows with parameters, as report.h tells them from baselines) that the family did not skip; a
 * candidate's value is its median time when its status is ok, NAN otherwise (a failure still
 * costs an evaluation). The search is driven as a run drives it: every candidate of every shape
 * added (features: the problem axes, "method", the parameters), then rounds of search_next and
 * search_observe until it proposes nothing. A strategy's budget is the run's (the folder's
 * candidates in all, shared out by the strategy) or, named "model/shape", each shape's. Per
 * strategy and seed (1..seeds) it runs once with
 * the whole of every shape as its budget (the order in which it evaluates: evaluations needed to
 * come within 1 % and 3 % of the shape's best), and once per budget (the fraction of the best
 * reached with that budget: best time / best time found, in (0, 1]). Shapes where no candidate
 * ran ok are counted and left out of the figures. Derived features (search_add_feature) are the
 * options' or the folder's own (its meta.json), so that the replay searches as a run would. Priors (the candidates of other folders, with
 * their values) and rules are given to every search, after its candidates.
 */
#ifndef TUNE_REPLAY_H
#define TUNE_REPLAY_H

#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "model/search.h"

#define REPLAY_MAX_STRATEGIES 6
#define REPLAY_MAX_BUDGETS 8

typedef struct {
    search_strategy strategies[REPLAY_MAX_STRATEGIES];
    search_scope scopes[REPLAY_MAX_STRATEGIES]; /* per strategy: the budget's scope */
    size_t n_strategies;            /* default: random, model (the run's budget) */
    size_t seeds;                   /* seeds 1..seeds; default 20 */
    double budgets[REPLAY_MAX_BUDGETS]; /* fractions in (0, 1]; default 0.05, 0.10, 0.25 */
    size_t n_budgets;
    /* warm starts (docs/search.md), borrowed: results folders whose rows every search gets as
     * priors (search_observe_prior), and rules "param=expr" (search_add_rule) */
    const char *const *prior_dirs;
    size_t n_prior_dirs;
    const char *const *rules;
    size_t n_rules;
    /* derived features (docs/search.md), borrowed: "name=expr", in order. features_set: these
     * (none when n_features is 0) for every folder; otherwise each folder's own, from its
     * meta.json (the search block's "features", else its sweep's search.features), as a run or
     * a resume of the folder's sweep would use */
    const char *const *features;
    size_t n_features;
    int features_set;
} replay_options;

typedef struct replay replay;

void replay_options_init(replay_options *o);
/* "random,model,model/shape" into o's strategies (no repeats; "/shape": budgets per shape, else
 * the run's); 0 or -1. */
int replay_parse_strategies(const char *text, replay_options *o);
/* "5,10,25" (percentages in (0, 100], no repeats) into o's budgets; 0 or -1. */
int replay_parse_budgets(const char *text, replay_options *o);

/* Replays every folder (dirs borrowed for the call). NULL with err set: a folder without
 * raw.jsonl or without tuned rows, a malformed row (file:line), a meta.json refused, a rule that
 * is not "param=expr" over a parameter. */
replay *replay_run(const char *const *dirs, size_t n_dirs, const replay_options *o,
                   tune_error *err);
void replay_free(replay *r);

/* The figures of folder i and strategy j (index into the options' strategies), medians over the
 * shapes of the medians over the seeds; NAN when no shape counts. */
typedef struct {
    double evals_1pct, evals_3pct;         /* evaluations to within 1 % / 3 % of the best */
    double evals_1pct_frac, evals_3pct_frac; /* the same as fractions of the shape's candidates */
    double at_budget[REPLAY_MAX_BUDGETS];  /* fraction of the best reached at each budget */
    /* share of the shapes where the strategy's mean over seeds at the budget is at least random's
     * (NAN when random is not replayed) */
    double vs_random[REPLAY_MAX_BUDGETS];
    size_t rounds[REPLAY_MAX_BUDGETS]; /* the most rounds a search with the budget took */
    /* shapes within 3 % of their best with the budget: at the median seed, at the worst seed */
    double within3_median[REPLAY_MAX_BUDGETS];
    size_t within3_worst[REPLAY_MAX_BUDGETS];
    /* evaluations of the whole run with the budget, the most over the seeds, as a fraction of
     * the folder's candidates */
    double evaluated[REPLAY_MAX_BUDGETS];
    /* the cost of a run with the budget against the folder's (exhaustive) run, medians over the
     * seeds: the GPU time of the rows measured (each row's (warmup + reps) x median x batch, the
     * baselines' included) over every row's, the configurations measured (baselines included)
     * over every row not skipped, and the kernels of the candidates measured over the kernels
     * of every candidate (a row's "kernel") */
    double gpu_time[REPLAY_MAX_BUDGETS], configs[REPLAY_MAX_BUDGETS];
    double kernels[REPLAY_MAX_BUDGETS];
} replay_summary;

/* "model" or "model/shape" (the strategy k of the options, with its scope) into buf. */
const char *replay_strategy_name(const replay_options *o, size_t k, char *buf, size_t size);

size_t replay_n_folders(const replay *r);
/* The shapes of folder i that count (a candidate ran ok), and the candidates of all its shapes. */
size_t replay_n_shapes(const replay *r, size_t folder);
size_t replay_n_candidates(const replay *r, size_t folder);
void replay_summarize(const replay *r, size_t folder, size_t strategy, replay_summary *out);

/* The summary tables (Markdown) of every folder. */
void replay_write_table(const replay *r, FILE *f);
/* out/replay.md (the tables and one row per shape), replay.csv, replay.json and meta.json, each
 * written atomically; out is created. argv is recorded in meta.json. Refused (TUNE_ERR_INVALID)
 * when out is one of the folders replayed or inside one. */
tune_status replay_write_files(const replay *r, const char *out, int argc, char **argv,
                               tune_error *err);

#endif
