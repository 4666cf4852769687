/* compare_impl.h - what the files of the compare module share (not for other modules). */
#ifndef TUNE_COMPARE_IMPL_H
#define TUNE_COMPARE_IMPL_H

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/compare.h"
#include "analysis/fit.h"
#include "store/meta.h"

/* Markdown lists at most this many lines per table; compare.json has every one. */
#define COMPARE_MD_LIMIT 20
#define COMPARE_MAX_NAMES (2 * TUNE_MAX_AXES)
/* (p90 - p10) / stdev of a normal distribution: 2 * 1.2816 */
#define COMPARE_P10_P90_SIGMAS 2.5631

/* The environment items are meta.json's (store/meta.h). */
#define COMPARE_N_ENV META_N_ENV

typedef struct {
    char *key;             /* op, method, every value; new */
    const result_row *row; /* borrowed from the side's rows */
    size_t order;          /* position in the side's rows: the last duplicate wins */
} compare_entry;

struct compare {
    char **base_dirs, **new_dirs; /* copies */
    size_t n_base_dirs, n_new_dirs;
    results_rows base_rows, new_rows;
    double threshold;
    tune_objective objective; /* compare_options' */
    const struct tune_family *(*find_family)(const char *name); /* compare_options' */
    /* problem axes (from the first row), then every parameter; varies: more than one value */
    const char *names[COMPARE_MAX_NAMES]; /* borrowed from the rows */
    size_t n_names, n_axes;
    int varies[COMPARE_MAX_NAMES];
    expr_value first[COMPARE_MAX_NAMES]; /* a value of each name (strings borrowed from rows) */
    int has_first[COMPARE_MAX_NAMES];
    compare_config *configs;
    char **config_keys; /* per config: its matching key (new) */
    size_t n_configs;
    compare_shape *shapes;
    size_t n_shapes;
    compare_heuristic *heuristics;
    size_t n_heuristics;
    compare_env_item env[COMPARE_N_ENV];
    int meta_missing;                             /* some folder has no readable meta.json */
    /* each side's search settings (store/meta.h: meta_search_settings), "" when not searched:
     * a configuration measured in one run only is then no mismatch */
    char search_base[512], search_new[512];
    double change_median, change_min, change_max; /* over the configurations ok in both */
    compare_counts counts;
};

/* 1 when the row was timed (ok, samples, a positive median). */
int compare_timed(const result_row *row);
/* The row's cost under c's objective; NAN when it has none (not ok, not timed, no energy). */
double compare_cost(const compare *c, const result_row *row);
/* The row of a configuration: its BASE row, else its NEW row. */
const result_row *compare_config_row(const compare_config *cfg);
/* 1 when the row has parameters (a tuned method). */
int compare_is_tuned(const result_row *row);
/* "name=value ..." of the row's parameters that vary into buf; returns buf. */
const char *compare_params_text(const compare *c, const result_row *row, char *buf, size_t size);
/* A copy of s (new), or NULL when out of memory. */
char *compare_strdup(const char *s);
/* compare_context.c: the heuristics (fit.h) of both sides; the environment (meta.json) of both
 * sides, with the differences opt allows. */
tune_status compare_heuristics(compare *c, const compare_options *opt, tune_error *err);
tune_status compare_env(compare *c, const compare_options *opt, tune_error *err);

#endif
