/* compare.h - two runs compared: per configuration, per shape, best-config drift, heuristic drift,
 * and the environment each was measured in.
 *
 *   compare_options opt;
 *   compare_options_init(&opt);              // threshold 5 %, heuristics of heuristics.json
 *   const char *base[] = {"results/sparq/20261122T053942Z"};
 *   const char *now[] = {"results/sparq_resumed/20261122T054225Z"};
 *   compare *c = compare_dirs(base, 1, now, 1, &opt, &err);
 *   if (c && compare_env_refused(c)) { char buf[1024]; puts(compare_env_text(c, 1, buf, 1024)); }
 *   compare_write_markdown(c, stdout);
 *   compare_write_files(c, "results/sparq_resumed/20261122T054225Z", &err); // compare.md, .json
 *   int failed = compare_n_regressions(c) > 0;
 *   compare_free(c);
 *
 * BASE and NEW are each one or more results folders (raw.jsonl, meta.json, heuristics.json); the
 * folders of a side are merged like results_read_dirs (a configuration measured twice keeps its
 * last row, and the duplicates are counted).
 *
 * Rule (docs/compare.md): a configuration is matched by op, method, every problem axis and every
 * parameter. When it ran ok in both runs, change = (median NEW - median BASE) / median BASE, and
 * each row's noise is its relative spread, stdev / median (from p10 and p90 when the row has no
 * stdev: (p90 - p10) / 2.563 / median, the normal distribution's ratio). The change is
 * significant when |change| > max(noise BASE, noise NEW): beyond the spread of both runs (one
 * run's noise when only one is known; neither: COMPARE_UNKNOWN). A significant slowdown beyond
 * the threshold is a regression, and so is a configuration that ran ok in BASE and not in NEW
 * (invalid, crashed, timeout, any other status). Shapes are compared the same way on their best
 * configuration (the fastest ok row of a tuned method, as report.h chooses it).
 * Heuristic drift: for each parameter, a rule is fitted (fit.h, default target) on BASE and on
 * NEW; the BASE rule is evaluated on NEW's data. It is a regression when the BASE rule's
 * efficiency on NEW is below its efficiency on BASE times (1 - threshold).
 *
 * Objective (compare_options.objective, core/objective.h): under energy or edp each "median" above
 * is the row's cost (store/results.h: results_row_cost: energy per call, or energy x time), so
 * "faster" and "slower" read "cheaper" and "dearer", a shape's best is its cheapest row and the
 * rules are fitted on that cost. A row's energy is one reading over a window of many calls
 * (docs/timing.md#energy), with no spread of its own: its noise is the row's time noise (the
 * calls' own variation), and sqrt(2) x that under edp (two measures of that noise multiplied).
 * Rows ok in both runs without energy in one of them cannot be compared by energy: COMPARE_UNKNOWN,
 * counted as unranked (compare_counts); a side without any row with energy is refused.
 */
#ifndef TUNE_COMPARE_H
#define TUNE_COMPARE_H

#include <stdio.h>

#include "core/error.h"
#include "core/objective.h"
#include "store/results.h"

typedef enum {
    COMPARE_SAME = 0,   /* ok in both, the change within the spread of both rows; or compiled
                         * in both (compile-only runs: status compiled) */
    COMPARE_FASTER,     /* ok in both, NEW significantly faster */
    COMPARE_SLOWER,     /* ok in both, NEW significantly slower, by at most the threshold */
    COMPARE_REGRESSION, /* ok in both, NEW significantly slower by more than the threshold */
    COMPARE_UNKNOWN, /* ok in both, neither row has a spread; or ok in one, compiled in the other */
    COMPARE_BROKEN,  /* ok (or compiled) in BASE, any other status in NEW: a regression */
    COMPARE_FIXED,   /* neither ok nor compiled in BASE, one of them in NEW */
    COMPARE_FAILING, /* neither ok nor compiled in either run */
    COMPARE_ONLY_BASE, /* no row in NEW */
    COMPARE_ONLY_NEW,  /* no row in BASE */
    COMPARE_N_VERDICTS
} compare_verdict;

/* "same", "faster", "slower", "regression", "unknown", "broken", "fixed", "failing",
 * "only_base", "only_new". Never NULL. */
const char *compare_verdict_str(compare_verdict v);
/* COMPARE_REGRESSION and COMPARE_BROKEN. */
int compare_verdict_is_regression(compare_verdict v);

/* A row's relative spread (see the rule above); NAN when the row is not ok, was not timed or
 * has no spread. */
double compare_row_noise(const result_row *row);
/* The verdict of two ok rows: change and noises as in the rule above (a NAN noise is unknown),
 * threshold a fraction (0.05 for 5 %). */
compare_verdict compare_change_verdict(double change, double noise_base, double noise_new,
                                       double threshold);

typedef struct {
    double threshold;          /* a regression's least slowdown, fraction; default 0.05 */
    const char *const *params; /* parameters whose heuristics are compared; NULL: see below */
    size_t n_params;
    /* Environment keys (compare_env_key_names) allowed to differ; allow_all allows every key. */
    const char *const *allow;
    size_t n_allow;
    int allow_all;
    /* The family registry (model/family.h: family_find) or NULL: with it, a tuned row whose sweep
     * lacked a parameter its family has now is matched as if it had the parameter's default (a
     * knob added after the run: its rows ran the default), and a parameter its family no longer
     * has is left out of the match when it takes one value over the row's side (a knob removed
     * since the run, which never told two of its configurations apart). */
    const struct tune_family *(*find_family)(const char *name);
    tune_objective objective; /* what a change is of (see the header); default time */
} compare_options;

/* threshold 0.05, nothing allowed to differ, params NULL: the parameters named by heuristics.json
 * in the folders of either side, else every integer parameter with more than one measured value
 * in BASE's ok rows. */
void compare_options_init(compare_options *opt);

typedef struct compare compare;

/* Reads both sides (raw.jsonl required; meta.json and heuristics.json optional) and compares
 * them. New comparison or NULL with err set: TUNE_ERR_IO / TUNE_ERR_PARSE / TUNE_ERR_INVALID from
 * reading, TUNE_ERR_INVALID when no configuration of NEW matches one of BASE, an allowed key is
 * not an environment key, a parameter named in opt->params is in neither side's rows, or the
 * objective needs energy and a side has no ok row with energy per call (the message says so). A
 * differing environment is not an error: see compare_env_refused. opt may be NULL. */
compare *compare_dirs(const char *const *base_dirs, size_t n_base, const char *const *new_dirs,
                      size_t n_new, const compare_options *opt, tune_error *err);
void compare_free(compare *c);

typedef struct {
    const result_row *base_row, *new_row; /* borrowed from the comparison; NULL when absent */
    double change;                        /* of the cost; NAN unless ok with a cost in both */
    double noise_base, noise_new;         /* NAN when unknown */
    compare_verdict verdict;
} compare_config;

typedef struct {
    const result_row *best_base, *best_new; /* cheapest ok tuned rows; NULL when none */
    const result_row *any_row;              /* a row of the shape, for its axis values */
    double change, noise_base, noise_new;   /* of the best rows, as for configurations */
    compare_verdict verdict;
    int winner_changed; /* both runs have a best, and they are different configurations */
    int unranked; /* ok tuned rows on both sides, but one side has none with the objective's cost */
    /* BASE's winner as measured in NEW (NULL when NEW has no such row), and how much dearer it is
     * than NEW's winner there: cost / NEW's best - 1 (NAN unless it has a cost). The loss is
     * significant when it exceeds the spread of both NEW rows. */
    const result_row *old_winner_new;
    double old_winner_loss;
    int loss_significant;
} compare_shape;

typedef struct {
    char *param;                /* new */
    char *base_rule, *new_rule; /* new; NULL when no rule could be fitted (note says why) */
    double base_eff;            /* BASE's rule on BASE */
    double base_eff_new;        /* BASE's rule on NEW (NAN when infeasible everywhere) */
    double new_eff;             /* NEW's rule on NEW */
    size_t base_infeasible_new; /* NEW shapes where BASE's rule picks an unmeasured value */
    int changed;                /* the two rules differ */
    int regression;
    char note[512]; /* empty, or why there is no comparison */
} compare_heuristic;

typedef struct {
    const char *key;              /* "gpu", "pci_bus_id", ... (static) */
    const char *label;            /* "GPU", "PCI bus id", ... (static) */
    char *base_value, *new_value; /* new; "absent" without meta.json or the key; the values of
                                   * several folders of a side joined with ", " */
    int checked; /* a difference refuses the comparison unless allowed; else informational */
    int differs, allowed;
} compare_env_item;

/* Keys of the environment in order, NULL-terminated (static). */
const char *const *compare_env_key_names(void);

typedef struct {
    size_t configs[COMPARE_N_VERDICTS]; /* configurations by verdict */
    size_t improved;                    /* COMPARE_FASTER beyond the threshold */
    size_t shapes[COMPARE_N_VERDICTS];
    size_t winners_changed, winner_losses; /* losses: significant ones */
    size_t heuristics_changed, heuristic_regressions;
    size_t duplicates_base, duplicates_new;
    size_t env_differences, env_refused;
    /* configurations ok in both and shapes (compare_shape.unranked) that the objective cannot
     * rank: one side lacks energy per call */
    size_t unranked_configs, unranked_shapes;
} compare_counts;

size_t compare_n_configs(const compare *c);
const compare_config *compare_config_at(const compare *c, size_t i); /* sorted by shape, method */
size_t compare_n_shapes(const compare *c);
const compare_shape *compare_shape_at(const compare *c, size_t i);
size_t compare_n_heuristics(const compare *c);
const compare_heuristic *compare_heuristic_at(const compare *c, size_t i);
size_t compare_n_env(const compare *c);
const compare_env_item *compare_env_at(const compare *c, size_t i);
const compare_counts *compare_get_counts(const compare *c);
double compare_threshold(const compare *c);
tune_objective compare_objective(const compare *c);

/* A side's search settings ("random, budget 10%, seed 7, batch default"; store/meta.h), NULL
 * when that side is not searched. When either side is searched, a configuration measured in one
 * run only (only_base, only_new) is no mismatch: it is counted, not listed, and the kernels' hash
 * is not checked between a searched and an exhaustive run (they hash different things). */
const char *compare_search(const compare *c, int new_side);

/* Regressions: configurations, shapes and heuristics. */
size_t compare_n_regressions(const compare *c);
/* Checked environment keys that differ and are not allowed. */
size_t compare_env_refused(const compare *c);
/* "driver (580.159.04 vs 575.57.08), GPU (NVIDIA H200 vs NVIDIA H100)": the refused keys
 * (refused_only) or every differing key, into buf; "" when none. Returns buf. */
const char *compare_env_text(const compare *c, int refused_only, char *buf, size_t size);

/* "g=256 k_pre=1024 k=64 custom chunk=64 threads=256": the shape's axes that vary, the method and
 * the parameters that vary (the others are named once in the summary). Returns buf. */
const char *compare_config_name(const compare *c, const compare_config *cfg, char *buf,
                                size_t size);
const char *compare_shape_name(const compare *c, const compare_shape *s, char *buf, size_t size);

void compare_write_markdown(const compare *c, FILE *f);
/* {"base": [dirs], "new": [dirs], "threshold", "rule", "regression": bool, "counts", "environment",
 * "configs": [...], "shapes": [...], "heuristics": [...]}: docs/compare.md. New reference. */
struct json_t *compare_to_json(const compare *c);
/* Writes dir/compare.md and dir/compare.json (dir is created). */
tune_status compare_write_files(const compare *c, const char *dir, tune_error *err);

#endif
