/* compare.c - two runs compared: matching, significance, shapes, heuristics, environment, outputs.
 */
#include "analysis/compare.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/fit.h"
#include "store/meta.h"

/* Markdown lists at most this many lines per table; compare.json has every one. */
#define COMPARE_MD_LIMIT 20
#define COMPARE_MAX_NAMES (2 * TUNE_MAX_AXES)
/* (p90 - p10) / stdev of a normal distribution: 2 * 1.2816 */
#define COMPARE_P10_P90_SIGMAS 2.5631

/* The environment items are meta.json's (store/meta.h). */
#define COMPARE_N_ENV META_N_ENV

static const char *const env_key_names[] = {
    "gpu",  "pci_bus_id", "driver", "cuda_driver", "cuda_runtime", "nvrtc", "cublas", "kernels",
    "arch", "tool",       "sweep",  "timing",      "host",         "seed",  NULL};

static const char *const verdict_names[COMPARE_N_VERDICTS] = {
    [COMPARE_SAME] = "same",           [COMPARE_FASTER] = "faster",
    [COMPARE_SLOWER] = "slower",       [COMPARE_REGRESSION] = "regression",
    [COMPARE_UNKNOWN] = "unknown",     [COMPARE_BROKEN] = "broken",
    [COMPARE_FIXED] = "fixed",         [COMPARE_FAILING] = "failing",
    [COMPARE_ONLY_BASE] = "only_base", [COMPARE_ONLY_NEW] = "only_new",
};

/* A side's rows with their matching keys. */
typedef struct {
    char *key;             /* op, method, every value; new */
    const result_row *row; /* borrowed from the side's rows */
    size_t order;          /* position in the side's rows: the last duplicate wins */
} compare_entry;

struct compare {
    char **base_dirs, **new_dirs; /* copies */
    size_t n_base_dirs, n_new_dirs;
    result_row *base_rows, *new_rows; /* owned */
    size_t n_base_rows, n_new_rows;
    double threshold;
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
    double change_median, change_min, change_max; /* over the configurations ok in both */
    compare_counts counts;
};

/* ---- the rule ---- */

const char *compare_verdict_str(compare_verdict v)
{
    return (unsigned)v < COMPARE_N_VERDICTS ? verdict_names[v] : "?";
}

int compare_verdict_is_regression(compare_verdict v)
{
    return v == COMPARE_REGRESSION || v == COMPARE_BROKEN;
}

static int compare_timed(const result_row *row)
{
    return row && row->status == RESULT_OK && row->time.n > 0 && isfinite(row->time.median) &&
           row->time.median > 0;
}

double compare_row_noise(const result_row *row)
{
    if (!compare_timed(row) || row->time.n < 2)
        return NAN;
    if (isfinite(row->time.stdev) && row->time.stdev >= 0)
        return row->time.stdev / row->time.median;
    if (isfinite(row->time.p10) && isfinite(row->time.p90) && row->time.p90 >= row->time.p10)
        return (row->time.p90 - row->time.p10) / COMPARE_P10_P90_SIGMAS / row->time.median;
    return NAN;
}

compare_verdict compare_change_verdict(double change, double noise_base, double noise_new,
                                       double threshold)
{
    double noise = isnan(noise_base)  ? noise_new
                   : isnan(noise_new) ? noise_base
                                      : fmax(noise_base, noise_new);
    if (isnan(change) || isnan(noise))
        return COMPARE_UNKNOWN;
    if (fabs(change) <= noise)
        return COMPARE_SAME;
    if (change < 0)
        return COMPARE_FASTER;
    return change > threshold ? COMPARE_REGRESSION : COMPARE_SLOWER;
}

/* The verdict of a pair of rows (either may be NULL); fills change and noises. */
static compare_verdict compare_rows(const result_row *b, const result_row *n, double threshold,
                                    double *change, double *noise_b, double *noise_n)
{
    *change = *noise_b = *noise_n = NAN;
    if (!b || !n)
        return b ? COMPARE_ONLY_BASE : COMPARE_ONLY_NEW;
    /* a compile-only run's "compiled" is its success; nothing was timed */
    int bgood = b->status == RESULT_OK || b->status == RESULT_COMPILED;
    int ngood = n->status == RESULT_OK || n->status == RESULT_COMPILED;
    if (bgood && !ngood)
        return COMPARE_BROKEN;
    if (!bgood)
        return ngood ? COMPARE_FIXED : COMPARE_FAILING;
    if (b->status == RESULT_COMPILED && n->status == RESULT_COMPILED)
        return COMPARE_SAME;
    if (b->status != n->status)
        return COMPARE_UNKNOWN; /* ok in one run, only compiled in the other */
    *noise_b = compare_row_noise(b);
    *noise_n = compare_row_noise(n);
    if (!compare_timed(b) || !compare_timed(n))
        return COMPARE_UNKNOWN;
    *change = (n->time.median - b->time.median) / b->time.median;
    return compare_change_verdict(*change, *noise_b, *noise_n, threshold);
}

void compare_options_init(compare_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->threshold = 0.05;
}

/* ---- keys and ordering ---- */

static char *compare_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

typedef struct {
    const char *name;
    char text[160];
} compare_pair;

static int compare_pair_cmp(const void *pa, const void *pb)
{
    return strcmp(((const compare_pair *)pa)->name, ((const compare_pair *)pb)->name);
}

/* "op\x1fmethod\x1fname=Tvalue..." with the values sorted by name (T: the value's type), the
 * problem axes only when shape_only. New string or NULL. */
static char *compare_row_key(const result_row *row, int shape_only)
{
    compare_pair pairs[TUNE_MAX_AXES];
    size_t n = shape_only ? row->n_axes : row->values.n, len = 0;
    for (size_t i = 0; i < n && i < TUNE_MAX_AXES; i++) {
        char v[128];
        expr_value x = row->values.vals[i];
        pairs[i].name = row->values.names[i];
        snprintf(pairs[i].text, sizeof pairs[i].text, "%c%s", "ifs"[x.type],
                 expr_value_format(x, v, sizeof v));
    }
    qsort(pairs, n, sizeof *pairs, compare_pair_cmp);
    const char *op = row->op ? row->op : "", *method = shape_only ? "" : row->method;
    len = strlen(op) + strlen(method) + 3;
    for (size_t i = 0; i < n; i++)
        len += strlen(pairs[i].name) + strlen(pairs[i].text) + 2;
    char *key = malloc(len);
    if (!key)
        return NULL;
    size_t at = (size_t)snprintf(key, len, "%s\x1f%s", op, method);
    for (size_t i = 0; i < n; i++)
        at += (size_t)snprintf(key + at, len - at, "\x1f%s=%s", pairs[i].name, pairs[i].text);
    return key;
}

static int compare_entry_cmp(const void *pa, const void *pb)
{
    const compare_entry *a = pa, *b = pb;
    int c = strcmp(a->key, b->key);
    return c ? c : (a->order > b->order) - (a->order < b->order);
}

/* Numbers by value before strings by content. */
static int compare_value_cmp(expr_value a, expr_value b)
{
    int as = a.type == EXPR_STR, bs = b.type == EXPR_STR;
    if (as || bs)
        return as != bs ? as - bs : strcmp(a.s ? a.s : "", b.s ? b.s : "");
    if (a.type == EXPR_INT && b.type == EXPR_INT)
        return (a.i > b.i) - (a.i < b.i);
    double x = expr_value_as_double(a), y = expr_value_as_double(b);
    return (x > y) - (x < y);
}

/* Compares two rows on the names a->values.names[from..to): a value b lacks sorts after. */
static int compare_values_on(const result_row *a, const result_row *b, size_t from, size_t to)
{
    for (size_t i = from; i < to && i < a->values.n; i++) {
        expr_value y;
        if (point_get(&b->values, a->values.names[i], &y) != 0)
            return -1;
        int c = compare_value_cmp(a->values.vals[i], y);
        if (c)
            return c;
    }
    return 0;
}

static int compare_shape_cmp(const result_row *a, const result_row *b)
{
    int c = strcmp(a->op ? a->op : "", b->op ? b->op : "");
    if (c)
        return c;
    if (a->n_axes != b->n_axes)
        return (a->n_axes > b->n_axes) - (a->n_axes < b->n_axes);
    return compare_values_on(a, b, 0, a->n_axes);
}

static const result_row *compare_config_row(const compare_config *cfg)
{
    return cfg->base_row ? cfg->base_row : cfg->new_row;
}

/* Display order: op and shape, method, parameters (baselines' missing ones last). */
static int compare_config_cmp(const void *pa, const void *pb)
{
    const result_row *a = compare_config_row(pa), *b = compare_config_row(pb);
    int c = compare_shape_cmp(a, b);
    if (!c)
        c = strcmp(a->method, b->method);
    if (!c)
        c = (a->values.n < b->values.n) - (a->values.n > b->values.n);
    if (!c)
        c = compare_values_on(a, b, a->n_axes, a->values.n);
    return c;
}

/* ---- reading a side ---- */

static void compare_entries_free(compare_entry *e, size_t n)
{
    for (size_t i = 0; e && i < n; i++)
        free(e[i].key);
    free(e);
}

/* Keys of a side's rows, sorted, the last of each duplicate kept; *n_dups counts the others. */
static tune_status compare_side_entries(const result_row *rows, size_t n, compare_entry **out,
                                        size_t *n_out, size_t *n_dups, tune_error *err)
{
    compare_entry *e = calloc(n ? n : 1, sizeof *e);
    if (!e)
        return tune_error_set(err, TUNE_ERR_NOMEM, "", "out of memory");
    for (size_t i = 0; i < n; i++) {
        e[i].row = &rows[i];
        e[i].order = i;
        if (!(e[i].key = compare_row_key(&rows[i], 0))) {
            compare_entries_free(e, n);
            return tune_error_set(err, TUNE_ERR_NOMEM, "", "out of memory");
        }
    }
    qsort(e, n, sizeof *e, compare_entry_cmp);
    size_t k = 0;
    *n_dups = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 1 < n && strcmp(e[i].key, e[i + 1].key) == 0) {
            free(e[i].key); /* a later row of the same configuration follows */
            (*n_dups)++;
            continue;
        }
        e[k++] = e[i];
    }
    *out = e;
    *n_out = k;
    return TUNE_OK;
}

/* ---- names and what varies ---- */

static size_t compare_name_index(const compare *c, const char *name)
{
    for (size_t i = 0; i < c->n_names; i++)
        if (strcmp(c->names[i], name) == 0)
            return i;
    return (size_t)-1;
}

static void compare_collect_names(compare *c)
{
    const result_row *first = c->n_base_rows ? &c->base_rows[0] : &c->new_rows[0];
    for (size_t i = 0; i < first->n_axes && c->n_names < COMPARE_MAX_NAMES; i++)
        c->names[c->n_names++] = first->values.names[i];
    c->n_axes = c->n_names;
    const result_row *sides[2] = {c->base_rows, c->new_rows};
    size_t counts[2] = {c->n_base_rows, c->n_new_rows};
    expr_value *seen = c->first;
    int *have = c->has_first;
    for (int s = 0; s < 2; s++)
        for (size_t r = 0; r < counts[s]; r++) {
            const result_row *row = &sides[s][r];
            for (size_t j = 0; j < row->n_params; j++)
                if (compare_name_index(c, row->param_names[j]) == (size_t)-1 &&
                    c->n_names < COMPARE_MAX_NAMES)
                    c->names[c->n_names++] = row->param_names[j];
            for (size_t i = 0; i < row->values.n; i++) {
                size_t k = compare_name_index(c, row->values.names[i]);
                if (k == (size_t)-1)
                    continue;
                if (!have[k]) {
                    have[k] = 1;
                    seen[k] = row->values.vals[i];
                } else if (!c->varies[k] && compare_value_cmp(seen[k], row->values.vals[i]) != 0) {
                    c->varies[k] = 1;
                }
            }
        }
}

/* Appends " name=value" for the names [from, to) that vary (every one when all_when_none and
 * none of them varies) and that the row has. */
static size_t compare_append_values(const compare *c, const result_row *row, size_t from, size_t to,
                                    int all_when_none, char *buf, size_t size, size_t len)
{
    int any = 0;
    for (size_t i = from; i < to; i++)
        any |= c->varies[i];
    for (size_t i = from; i < to; i++) {
        expr_value v;
        char text[128];
        if ((!c->varies[i] && (any || !all_when_none)) || point_get(&row->values, c->names[i], &v))
            continue;
        len += (size_t)snprintf(buf + (len < size ? len : size), len < size ? size - len : 0,
                                "%s%s=%s", len ? " " : "", c->names[i],
                                expr_value_format(v, text, sizeof text));
    }
    return len;
}

const char *compare_config_name(const compare *c, const compare_config *cfg, char *buf, size_t size)
{
    const result_row *row = compare_config_row(cfg);
    buf[0] = '\0';
    size_t len = compare_append_values(c, row, 0, c->n_axes, 1, buf, size, 0);
    len += (size_t)snprintf(buf + (len < size ? len : size), len < size ? size - len : 0, "%s%s",
                            len ? " " : "", row->method);
    compare_append_values(c, row, c->n_axes, c->n_names, 0, buf, size, len);
    return buf;
}

const char *compare_shape_name(const compare *c, const compare_shape *s, char *buf, size_t size)
{
    buf[0] = '\0';
    compare_append_values(c, s->any_row, 0, c->n_axes, 1, buf, size, 0);
    return buf;
}

/* "chunk=64 threads=256" (the parameters that vary) of a row, or its method for a baseline. */
static const char *compare_params_text(const compare *c, const result_row *row, char *buf,
                                       size_t size)
{
    buf[0] = '\0';
    size_t len = compare_append_values(c, row, c->n_axes, c->n_names, 0, buf, size, 0);
    if (!len)
        snprintf(buf, size, "%s", row->method);
    return buf;
}

/* ---- matching ---- */

static tune_status compare_match(compare *c, tune_error *err)
{
    compare_entry *be = NULL, *ne = NULL;
    size_t nb = 0, nn = 0;
    tune_status st = compare_side_entries(c->base_rows, c->n_base_rows, &be, &nb,
                                          &c->counts.duplicates_base, err);
    if (st == TUNE_OK)
        st = compare_side_entries(c->new_rows, c->n_new_rows, &ne, &nn, &c->counts.duplicates_new,
                                  err);
    if (st == TUNE_OK) {
        c->configs = calloc(nb + nn + 1, sizeof *c->configs);
        c->config_keys = calloc(nb + nn + 1, sizeof *c->config_keys);
        if (!c->configs || !c->config_keys)
            st = tune_error_set(err, TUNE_ERR_NOMEM, "", "out of memory");
    }
    size_t i = 0, j = 0;
    while (st == TUNE_OK && (i < nb || j < nn)) {
        int cmp = i == nb ? 1 : j == nn ? -1 : strcmp(be[i].key, ne[j].key);
        compare_config *cfg = &c->configs[c->n_configs];
        char **key = &c->config_keys[c->n_configs++];
        if (cmp <= 0) {
            cfg->base_row = be[i].row;
            *key = be[i].key;
            be[i++].key = NULL;
        }
        if (cmp >= 0) {
            cfg->new_row = ne[j].row;
            if (*key)
                free(ne[j].key);
            else
                *key = ne[j].key;
            ne[j++].key = NULL;
        }
    }
    compare_entries_free(be, nb);
    compare_entries_free(ne, nn);
    return st;
}

/* Sorts configs (and their keys alongside) into display order. */
static tune_status compare_sort_configs(compare *c, tune_error *err)
{
    typedef struct {
        compare_config cfg;
        char *key;
    } keyed;
    keyed *k = malloc((c->n_configs + 1) * sizeof *k);
    if (!k)
        return tune_error_set(err, TUNE_ERR_NOMEM, "", "out of memory");
    for (size_t i = 0; i < c->n_configs; i++) {
        k[i].cfg = c->configs[i];
        k[i].key = c->config_keys[i];
    }
    /* compare_config_cmp reads only the leading compare_config of each element */
    qsort(k, c->n_configs, sizeof *k, compare_config_cmp);
    for (size_t i = 0; i < c->n_configs; i++) {
        c->configs[i] = k[i].cfg;
        c->config_keys[i] = k[i].key;
    }
    free(k);
    return TUNE_OK;
}

static void compare_judge_configs(compare *c)
{
    double *changes = malloc((c->n_configs + 1) * sizeof *changes);
    size_t n_changes = 0;
    for (size_t i = 0; i < c->n_configs; i++) {
        compare_config *cfg = &c->configs[i];
        cfg->verdict = compare_rows(cfg->base_row, cfg->new_row, c->threshold, &cfg->change,
                                    &cfg->noise_base, &cfg->noise_new);
        c->counts.configs[cfg->verdict]++;
        if (cfg->verdict == COMPARE_FASTER && -cfg->change > c->threshold)
            c->counts.improved++;
        if (changes && !isnan(cfg->change))
            changes[n_changes++] = cfg->change;
    }
    c->change_median = c->change_min = c->change_max = NAN;
    if (n_changes) {
        double *sorted = changes;
        for (size_t i = 1; i < n_changes; i++) /* insertion sort: a few thousand values */
            for (size_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
                double t = sorted[j];
                sorted[j] = sorted[j - 1];
                sorted[j - 1] = t;
            }
        c->change_median = stats_percentile_sorted(sorted, n_changes, 0.5);
        c->change_min = sorted[0];
        c->change_max = sorted[n_changes - 1];
    }
    free(changes);
}

/* ---- shapes ---- */

static int compare_is_tuned(const result_row *row)
{
    return row->values.n > row->n_axes;
}

static const result_row *compare_faster(const result_row *best, const result_row *row)
{
    if (!row || !compare_is_tuned(row) || !compare_timed(row))
        return best;
    return !best || row->time.median < best->time.median ? row : best;
}

static void compare_judge_shape(compare *c, compare_shape *s, size_t from, size_t to)
{
    size_t best_b = (size_t)-1, best_n = (size_t)-1;
    for (size_t i = from; i < to; i++) {
        const compare_config *cfg = &c->configs[i];
        if (compare_faster(s->best_base, cfg->base_row) != s->best_base) {
            s->best_base = cfg->base_row;
            best_b = i;
        }
        if (compare_faster(s->best_new, cfg->new_row) != s->best_new) {
            s->best_new = cfg->new_row;
            best_n = i;
        }
    }
    int any_base = 0, any_new = 0;
    for (size_t i = from; i < to; i++) {
        any_base |= c->configs[i].base_row != NULL;
        any_new |= c->configs[i].new_row != NULL;
    }
    s->old_winner_loss = NAN;
    if (!any_base || !any_new) {
        s->verdict = any_base ? COMPARE_ONLY_BASE : COMPARE_ONLY_NEW;
        s->change = s->noise_base = s->noise_new = NAN;
    } else if (s->best_base || s->best_new) {
        s->verdict = compare_rows(s->best_base, s->best_new, c->threshold, &s->change,
                                  &s->noise_base, &s->noise_new);
        if (!s->best_new)
            s->verdict = COMPARE_BROKEN;
        else if (!s->best_base)
            s->verdict = COMPARE_FIXED;
    } else {
        s->verdict = COMPARE_FAILING;
        s->change = s->noise_base = s->noise_new = NAN;
    }
    if (s->best_base && s->best_new) {
        s->winner_changed = best_b != best_n;
        s->old_winner_new = c->configs[best_b].new_row;
        if (s->winner_changed && compare_timed(s->old_winner_new)) {
            s->old_winner_loss = s->old_winner_new->time.median / s->best_new->time.median - 1;
            double nb, nn;
            double ch;
            compare_verdict v =
                compare_rows(s->best_new, s->old_winner_new, INFINITY, &ch, &nb, &nn);
            s->loss_significant = v == COMPARE_SLOWER;
        } else if (!s->winner_changed) {
            s->old_winner_loss = 0;
        }
    }
}

static tune_status compare_build_shapes(compare *c, tune_error *err)
{
    c->shapes = calloc(c->n_configs + 1, sizeof *c->shapes);
    if (!c->shapes)
        return tune_error_set(err, TUNE_ERR_NOMEM, "", "out of memory");
    for (size_t from = 0; from < c->n_configs;) {
        const result_row *row = compare_config_row(&c->configs[from]);
        size_t to = from + 1;
        while (to < c->n_configs &&
               compare_shape_cmp(row, compare_config_row(&c->configs[to])) == 0)
            to++;
        compare_shape *s = &c->shapes[c->n_shapes++];
        s->any_row = row;
        compare_judge_shape(c, s, from, to);
        c->counts.shapes[s->verdict]++;
        c->counts.winners_changed += (size_t)s->winner_changed;
        c->counts.winner_losses += (size_t)s->loss_significant;
        from = to;
    }
    return TUNE_OK;
}

/* ---- heuristics ---- */

static int compare_has_param(const result_row *rows, size_t n, const char *param)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < rows[i].n_params; j++)
            if (strcmp(rows[i].param_names[j], param) == 0)
                return 1;
    return 0;
}

static int compare_list_has(char **list, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], s) == 0)
            return 1;
    return 0;
}

/* Adds heuristics.json's "param" of each folder to list (new strings). */
static void compare_params_from_files(char **dirs, size_t n_dirs, char **list, size_t *n,
                                      size_t max)
{
    for (size_t d = 0; d < n_dirs; d++) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/heuristics.json", dirs[d]);
        json_t *h = json_load_file(path, 0, NULL);
        const char *p = json_string_value(json_object_get(h, "param"));
        if (p && *n < max && !compare_list_has(list, *n, p) && (list[*n] = compare_strdup(p)))
            (*n)++;
        json_decref(h);
    }
}

/* Integer parameters with more than one value among BASE's ok tuned rows (new strings). */
static void compare_params_varying(const compare *c, char **list, size_t *n, size_t max)
{
    for (size_t k = c->n_axes; k < c->n_names && *n < max; k++) {
        int have = 0, varies = 0;
        int64_t first = 0;
        for (size_t r = 0; r < c->n_base_rows && !varies; r++) {
            expr_value v;
            const result_row *row = &c->base_rows[r];
            if (row->status != RESULT_OK || point_get(&row->values, c->names[k], &v) ||
                v.type != EXPR_INT)
                continue;
            if (!have)
                first = v.i;
            varies = have && v.i != first;
            have = 1;
        }
        if (varies && (list[*n] = compare_strdup(c->names[k])))
            (*n)++;
    }
}

static const char *compare_chosen_rule(const fit_result *r, double *eff)
{
    if (r->chosen == FIT_NONE)
        return NULL;
    *eff = r->candidates[r->chosen].eval.efficiency;
    return r->candidates[r->chosen].eval.rule;
}

static void compare_fit_one(compare *c, compare_heuristic *h)
{
    tune_error e = {0};
    char text[2300];
    h->base_eff = h->base_eff_new = h->new_eff = NAN;
    fit_data *db = fit_data_build(c->base_rows, c->n_base_rows, h->param, NULL, &e);
    fit_data *dn = db ? fit_data_build(c->new_rows, c->n_new_rows, h->param, NULL, &e) : NULL;
    fit_options fo = {0, 1}; /* fit's default target; leave-one-out is not needed here */
    fit_result rb, rn;
    int have_b = 0, have_n = 0;
    if (dn && fit_run(db, &fo, &rb, &e) == TUNE_OK)
        have_b = 1;
    if (have_b && fit_run(dn, &fo, &rn, &e) == TUNE_OK)
        have_n = 1;
    if (have_n) {
        const char *br = compare_chosen_rule(&rb, &h->base_eff);
        const char *nr = compare_chosen_rule(&rn, &h->new_eff);
        h->base_rule = br ? compare_strdup(br) : NULL;
        h->new_rule = nr ? compare_strdup(nr) : NULL;
        fit_eval ev;
        if (!br || !nr) {
            snprintf(h->note, sizeof h->note, "no rule could be fitted on %s", br ? "NEW" : "BASE");
        } else if (fit_evaluate(dn, br, &ev, &e) == TUNE_OK) {
            h->base_eff_new = ev.efficiency;
            h->base_infeasible_new = ev.n_infeasible;
            fit_eval_release(&ev);
            h->changed = strcmp(br, nr) != 0;
            h->regression =
                isfinite(h->base_eff) && !(h->base_eff_new >= h->base_eff * (1 - c->threshold));
        }
    }
    if (e.code != TUNE_OK)
        snprintf(h->note, sizeof h->note, "%s", tune_error_text(&e, text, sizeof text));
    if (have_b)
        fit_result_release(&rb);
    if (have_n)
        fit_result_release(&rn);
    fit_data_free(db);
    fit_data_free(dn);
}

static tune_status compare_heuristics(compare *c, const compare_options *opt, tune_error *err)
{
    char *params[COMPARE_MAX_NAMES];
    size_t n = 0;
    if (opt->n_params) {
        for (size_t i = 0; i < opt->n_params && n < COMPARE_MAX_NAMES; i++) {
            const char *p = opt->params[i];
            if (!compare_has_param(c->base_rows, c->n_base_rows, p) &&
                !compare_has_param(c->new_rows, c->n_new_rows, p)) {
                for (size_t k = 0; k < n; k++)
                    free(params[k]);
                return tune_error_set(err, TUNE_ERR_INVALID, "",
                                      "parameter '%s' is in neither run's rows", p);
            }
            if (!compare_list_has(params, n, p) && (params[n] = compare_strdup(p)))
                n++;
        }
    } else {
        compare_params_from_files(c->base_dirs, c->n_base_dirs, params, &n, COMPARE_MAX_NAMES);
        compare_params_from_files(c->new_dirs, c->n_new_dirs, params, &n, COMPARE_MAX_NAMES);
        if (!n)
            compare_params_varying(c, params, &n, COMPARE_MAX_NAMES);
    }
    c->heuristics = calloc(n + 1, sizeof *c->heuristics);
    if (!c->heuristics) {
        for (size_t k = 0; k < n; k++)
            free(params[k]);
        return tune_error_set(err, TUNE_ERR_NOMEM, "", "out of memory");
    }
    for (size_t k = 0; k < n; k++) {
        compare_heuristic *h = &c->heuristics[c->n_heuristics++];
        h->param = params[k];
        compare_fit_one(c, h);
        c->counts.heuristics_changed += (size_t)h->changed;
        c->counts.heuristic_regressions += (size_t)h->regression;
    }
    return TUNE_OK;
}

/* ---- environment ---- */

/* The distinct values of one key over a side's folders, joined with ", "; new string. */
static char *compare_env_join(char **texts, size_t n)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(texts[i]) + 2;
    char *out = malloc(len);
    if (!out)
        return NULL;
    size_t at = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(texts[i], texts[j]) == 0;
        if (!seen)
            at += (size_t)snprintf(out + at, len - at, "%s%s", at ? ", " : "", texts[i]);
    }
    return out;
}

/* Fills one side's values of every key from its folders' meta.json. */
static tune_status compare_env_side(compare *c, char **dirs, size_t n_dirs, int new_side,
                                    tune_error *err)
{
    json_t **metas = calloc(n_dirs, sizeof *metas);
    char **texts = calloc(n_dirs, sizeof *texts);
    tune_status st =
        metas && texts ? TUNE_OK : tune_error_set(err, TUNE_ERR_NOMEM, "", "out of memory");
    for (size_t d = 0; st == TUNE_OK && d < n_dirs; d++) {
        metas[d] = meta_load(dirs[d], NULL);
        c->meta_missing |= metas[d] == NULL;
    }
    for (size_t k = 0; st == TUNE_OK && k < COMPARE_N_ENV; k++) {
        for (size_t d = 0; d < n_dirs; d++) {
            texts[d] = meta_env_text(metas[d], k);
            if (!texts[d])
                st = tune_error_set(err, TUNE_ERR_NOMEM, "", "out of memory");
        }
        char *joined = st == TUNE_OK ? compare_env_join(texts, n_dirs) : NULL;
        if (st == TUNE_OK && !joined)
            st = tune_error_set(err, TUNE_ERR_NOMEM, "", "out of memory");
        *(new_side ? &c->env[k].new_value : &c->env[k].base_value) = joined;
        for (size_t d = 0; d < n_dirs; d++) {
            free(texts[d]);
            texts[d] = NULL;
        }
    }
    for (size_t d = 0; metas && d < n_dirs; d++)
        json_decref(metas[d]);
    free(metas);
    free(texts);
    return st;
}

static tune_status compare_env(compare *c, const compare_options *opt, tune_error *err)
{
    for (size_t a = 0; a < opt->n_allow; a++) {
        size_t k = 0;
        while (k < COMPARE_N_ENV && strcmp(meta_env_items[k].key, opt->allow[a]) != 0)
            k++;
        if (k == COMPARE_N_ENV)
            return tune_error_set(err, TUNE_ERR_INVALID, "",
                                  "'%s' is not an environment key (gpu, pci_bus_id, driver, "
                                  "cuda_driver, cuda_runtime, nvrtc, cublas, kernels, arch, "
                                  "tool, sweep, timing)",
                                  opt->allow[a]);
        c->env[k].allowed = 1;
    }
    tune_status st = compare_env_side(c, c->base_dirs, c->n_base_dirs, 0, err);
    if (st == TUNE_OK)
        st = compare_env_side(c, c->new_dirs, c->n_new_dirs, 1, err);
    if (st != TUNE_OK)
        return st;
    for (size_t k = 0; k < COMPARE_N_ENV; k++) {
        compare_env_item *it = &c->env[k];
        it->key = meta_env_items[k].key;
        it->label = meta_env_items[k].label;
        it->checked = meta_env_items[k].checked;
        it->allowed |= opt->allow_all;
        it->differs = strcmp(it->base_value, it->new_value) != 0;
        if (it->differs && it->checked) {
            c->counts.env_differences++;
            c->counts.env_refused += (size_t)!it->allowed;
        }
    }
    return TUNE_OK;
}

/* ---- construction ---- */

static char **compare_copy_dirs(const char *const *dirs, size_t n)
{
    char **out = calloc(n + 1, sizeof *out);
    for (size_t i = 0; out && i < n; i++)
        if (!(out[i] = compare_strdup(dirs[i]))) {
            for (size_t k = 0; k < i; k++)
                free(out[k]);
            free(out);
            return NULL;
        }
    return out;
}

compare *compare_dirs(const char *const *base_dirs, size_t n_base, const char *const *new_dirs,
                      size_t n_new, const compare_options *opt_in, tune_error *err)
{
    compare_options dflt;
    compare_options_init(&dflt);
    const compare_options *opt = opt_in ? opt_in : &dflt;
    if (!n_base || !n_new) {
        tune_error_set(err, TUNE_ERR_INVALID, "", "name at least one folder on each side");
        return NULL;
    }
    compare *c = calloc(1, sizeof *c);
    if (!c) {
        tune_error_set(err, TUNE_ERR_NOMEM, "", "out of memory");
        return NULL;
    }
    c->threshold = opt->threshold >= 0 ? opt->threshold : 0.05;
    c->base_dirs = compare_copy_dirs(base_dirs, n_base);
    c->new_dirs = compare_copy_dirs(new_dirs, n_new);
    c->n_base_dirs = n_base;
    c->n_new_dirs = n_new;
    tune_status st = TUNE_OK;
    if (!c->base_dirs || !c->new_dirs)
        st = tune_error_set(err, TUNE_ERR_NOMEM, "", "out of memory");
    if (st == TUNE_OK)
        st = compare_env(c, opt, err);
    if (st == TUNE_OK)
        st = results_read_dirs(base_dirs, n_base, &c->base_rows, &c->n_base_rows, err);
    if (st == TUNE_OK)
        st = results_read_dirs(new_dirs, n_new, &c->new_rows, &c->n_new_rows, err);
    if (st == TUNE_OK && (!c->n_base_rows || !c->n_new_rows))
        st = tune_error_set(err, TUNE_ERR_INVALID, c->n_base_rows ? new_dirs[0] : base_dirs[0],
                            "no result rows");
    if (st == TUNE_OK) {
        compare_collect_names(c);
        st = compare_match(c, err);
    }
    if (st == TUNE_OK) {
        compare_judge_configs(c);
        if (c->n_configs ==
            c->counts.configs[COMPARE_ONLY_BASE] + c->counts.configs[COMPARE_ONLY_NEW])
            st = tune_error_set(err, TUNE_ERR_INVALID, "",
                                "no configuration of NEW matches one of BASE (different sweeps?)");
    }
    if (st == TUNE_OK)
        st = compare_sort_configs(c, err);
    if (st == TUNE_OK)
        st = compare_build_shapes(c, err);
    if (st == TUNE_OK)
        st = compare_heuristics(c, opt, err);
    if (st != TUNE_OK) {
        compare_free(c);
        return NULL;
    }
    return c;
}

void compare_free(compare *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_base_dirs && c->base_dirs; i++)
        free(c->base_dirs[i]);
    for (size_t i = 0; i < c->n_new_dirs && c->new_dirs; i++)
        free(c->new_dirs[i]);
    free(c->base_dirs);
    free(c->new_dirs);
    for (size_t i = 0; c->config_keys && i < c->n_configs; i++)
        free(c->config_keys[i]);
    free(c->config_keys);
    free(c->configs);
    free(c->shapes);
    for (size_t i = 0; i < c->n_heuristics; i++) {
        free(c->heuristics[i].param);
        free(c->heuristics[i].base_rule);
        free(c->heuristics[i].new_rule);
    }
    free(c->heuristics);
    for (size_t k = 0; k < COMPARE_N_ENV; k++) {
        free(c->env[k].base_value);
        free(c->env[k].new_value);
    }
    results_rows_free(c->base_rows, c->n_base_rows);
    results_rows_free(c->new_rows, c->n_new_rows);
    free(c);
}

/* ---- accessors ---- */

const char *const *compare_env_key_names(void)
{
    return env_key_names;
}
size_t compare_n_configs(const compare *c)
{
    return c->n_configs;
}
size_t compare_n_shapes(const compare *c)
{
    return c->n_shapes;
}
size_t compare_n_heuristics(const compare *c)
{
    return c->n_heuristics;
}
size_t compare_n_env(const compare *c)
{
    (void)c;
    return COMPARE_N_ENV;
}
const compare_counts *compare_get_counts(const compare *c)
{
    return &c->counts;
}
double compare_threshold(const compare *c)
{
    return c->threshold;
}
size_t compare_env_refused(const compare *c)
{
    return c->counts.env_refused;
}

const compare_config *compare_config_at(const compare *c, size_t i)
{
    return i < c->n_configs ? &c->configs[i] : NULL;
}

const compare_shape *compare_shape_at(const compare *c, size_t i)
{
    return i < c->n_shapes ? &c->shapes[i] : NULL;
}

const compare_heuristic *compare_heuristic_at(const compare *c, size_t i)
{
    return i < c->n_heuristics ? &c->heuristics[i] : NULL;
}

const compare_env_item *compare_env_at(const compare *c, size_t i)
{
    return i < COMPARE_N_ENV ? &c->env[i] : NULL;
}

size_t compare_n_regressions(const compare *c)
{
    const compare_counts *k = &c->counts;
    return k->configs[COMPARE_REGRESSION] + k->configs[COMPARE_BROKEN] +
           k->shapes[COMPARE_REGRESSION] + k->shapes[COMPARE_BROKEN] + k->heuristic_regressions;
}

const char *compare_env_text(const compare *c, int refused_only, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < COMPARE_N_ENV; k++) {
        const compare_env_item *it = &c->env[k];
        if (!it->differs || !it->checked || (refused_only && it->allowed))
            continue;
        len += (size_t)snprintf(buf + (len < size ? len : size), len < size ? size - len : 0,
                                "%s%s (%s vs %s)", len ? ", " : "", it->label, it->base_value,
                                it->new_value);
    }
    return buf;
}

/* ---- Markdown ---- */

static const char *compare_pct(double x, int sign, char *buf, size_t size)
{
    if (isnan(x))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, sign ? "%+.1f %%" : "%.1f %%", 100.0 * x);
    return buf;
}

/* "12.34 us", or the status (with the start of the reason) when not ok, "-" when absent. */
static const char *compare_time_text(const result_row *row, char *buf, size_t size)
{
    if (!row)
        snprintf(buf, size, "-");
    else if (row->status != RESULT_OK)
        snprintf(buf, size, "%s%s%.60s", result_status_str(row->status), row->reason ? ": " : "",
                 row->reason ? row->reason : "");
    else if (compare_timed(row))
        snprintf(buf, size, "%.2f us", row->time.median * 1e6);
    else
        snprintf(buf, size, "ok, not timed");
    /* a reason may hold newlines or pipes (compiler logs): keep the table intact */
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '|')
            *p = ' ';
    return buf;
}

static void compare_config_line(const compare *c, const compare_config *cfg, FILE *f)
{
    char name[1024], tb[128], tn[128], ch[32], nb[32], nn[32];
    fprintf(f, "| %s | %s | %s | %s | %s | %s |\n", compare_config_name(c, cfg, name, sizeof name),
            compare_time_text(cfg->base_row, tb, sizeof tb),
            compare_time_text(cfg->new_row, tn, sizeof tn),
            compare_pct(cfg->change, 1, ch, sizeof ch),
            compare_pct(cfg->noise_base, 0, nb, sizeof nb),
            compare_pct(cfg->noise_new, 0, nn, sizeof nn));
}

static const char *const config_header =
    "| configuration | BASE | NEW | change | noise BASE | noise NEW |\n|:--|--:|--:|--:|--:|--:|\n";

typedef int (*compare_pick)(const compare_config *cfg);

static int pick_regression(const compare_config *cfg)
{
    return compare_verdict_is_regression(cfg->verdict);
}

static int pick_significant(const compare_config *cfg)
{
    return cfg->verdict == COMPARE_SLOWER || cfg->verdict == COMPARE_FASTER;
}

static int pick_other(const compare_config *cfg)
{
    return cfg->verdict == COMPARE_FIXED || cfg->verdict == COMPARE_UNKNOWN ||
           (cfg->verdict == COMPARE_FAILING && cfg->base_row->status != cfg->new_row->status) ||
           cfg->verdict == COMPARE_ONLY_BASE || cfg->verdict == COMPARE_ONLY_NEW;
}

/* Configurations picked, the largest |change| first (no change: in display order, first). */
static size_t compare_collect(const compare *c, compare_pick pick, size_t *idx)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n_configs; i++)
        if (pick(&c->configs[i]))
            idx[n++] = i;
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0; j--) {
            double a = fabs(c->configs[idx[j - 1]].change), b = fabs(c->configs[idx[j]].change);
            if (!(isnan(a) ? 0 : isnan(b) ? 1 : a < b))
                break;
            size_t t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    return n;
}

static void compare_config_table(const compare *c, const char *title, compare_pick pick, FILE *f)
{
    size_t *idx = malloc((c->n_configs + 1) * sizeof *idx);
    if (!idx)
        return;
    size_t n = compare_collect(c, pick, idx);
    if (n) {
        fprintf(f, "\n### %s (%zu)\n\n%s", title, n, config_header);
        for (size_t i = 0; i < n && i < COMPARE_MD_LIMIT; i++)
            compare_config_line(c, &c->configs[idx[i]], f);
        if (n > COMPARE_MD_LIMIT)
            fprintf(f, "\n... and %zu more in compare.json.\n", n - COMPARE_MD_LIMIT);
    }
    free(idx);
}

static void compare_write_env(const compare *c, FILE *f)
{
    fprintf(f, "## Environment\n\n");
    if (c->counts.env_differences == 0)
        fprintf(f, "Both runs were measured on the same GPU, driver, CUDA, NVRTC and cuBLAS, "
                   "with the same kernel sources, tune revision, sweep and timing settings.\n\n");
    else
        fprintf(f, "**The runs differ in %zu checked key%s**%s.\n\n", c->counts.env_differences,
                c->counts.env_differences == 1 ? "" : "s",
                c->counts.env_refused ? " (not allowed: the comparison is refused)"
                                      : " (allowed with --allow-mismatch)");
    if (c->meta_missing)
        fprintf(f,
                "A folder has no readable meta.json: its environment is unknown (\"absent\").\n\n");
    fprintf(f, "| | BASE | NEW | |\n|:--|:--|:--|:--|\n");
    for (size_t k = 0; k < COMPARE_N_ENV; k++) {
        const compare_env_item *it = &c->env[k];
        const char *mark = !it->differs   ? ""
                           : !it->checked ? "differs (not checked)"
                           : it->allowed  ? "**differs** (allowed)"
                                          : "**differs**";
        char b[256], n[256];
        snprintf(b, sizeof b, "%.250s", it->base_value);
        snprintf(n, sizeof n, "%.250s", it->new_value);
        fprintf(f, "| %s | %s | %s | %s |\n", it->label, b, n, mark);
    }
}

/* The problem axes and the parameters that have one value throughout, named once. */
static void compare_write_constants(const compare *c, FILE *f)
{
    const char *lead[2] = {"Every shape has ", "Every tuned configuration has "};
    for (int params = 0; params < 2; params++) {
        int any = 0;
        for (size_t i = params ? c->n_axes : 0; i < (params ? c->n_names : c->n_axes); i++) {
            char text[128];
            if (c->varies[i] || !c->has_first[i])
                continue;
            fprintf(f, "%s%s=%s", any ? ", " : lead[params], c->names[i],
                    expr_value_format(c->first[i], text, sizeof text));
            any = 1;
        }
        if (any)
            fprintf(f, ".\n");
    }
}

static void compare_write_configs(const compare *c, FILE *f)
{
    const compare_counts *k = &c->counts;
    char a[32], b[32], m[32];
    fprintf(f, "## Configurations\n\n");
    fprintf(f, "| matched | same | faster | slower | regression | unknown noise | broken | fixed | "
               "not ok in both | only in BASE | only in NEW |\n"
               "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    size_t matched = c->n_configs - k->configs[COMPARE_ONLY_BASE] - k->configs[COMPARE_ONLY_NEW];
    fprintf(f, "| %zu | %zu | %zu | %zu | %zu | %zu | %zu | %zu | %zu | %zu | %zu |\n\n", matched,
            k->configs[COMPARE_SAME], k->configs[COMPARE_FASTER], k->configs[COMPARE_SLOWER],
            k->configs[COMPARE_REGRESSION], k->configs[COMPARE_UNKNOWN], k->configs[COMPARE_BROKEN],
            k->configs[COMPARE_FIXED], k->configs[COMPARE_FAILING], k->configs[COMPARE_ONLY_BASE],
            k->configs[COMPARE_ONLY_NEW]);
    if (!isnan(c->change_median))
        fprintf(f,
                "Change of the median times, configurations ok in both: median %s, from %s to "
                "%s; %zu significantly faster by more than the threshold.\n",
                compare_pct(c->change_median, 1, m, sizeof m),
                compare_pct(c->change_min, 1, a, sizeof a),
                compare_pct(c->change_max, 1, b, sizeof b), k->improved);
    if (k->duplicates_base || k->duplicates_new)
        fprintf(f, "\nMeasured more than once (the last row kept): %zu in BASE, %zu in NEW.\n",
                k->duplicates_base, k->duplicates_new);
    compare_config_table(c, "Regressions", pick_regression, f);
    compare_config_table(c, "Significant changes within the threshold", pick_significant, f);
    compare_config_table(c, "Status changes, unknown noise, unmatched configurations", pick_other,
                         f);
}

static void compare_write_shapes(const compare *c, FILE *f)
{
    const compare_counts *k = &c->counts;
    fprintf(f, "\n## Shapes (best configuration of each)\n\n");
    fprintf(f,
            "%zu shapes: same %zu, faster %zu, slower %zu, regression %zu, broken %zu, "
            "fixed %zu. The winner changed on %zu; the old winner is significantly slower "
            "than the new one, in NEW's numbers, on %zu.\n\n",
            c->n_shapes, k->shapes[COMPARE_SAME], k->shapes[COMPARE_FASTER],
            k->shapes[COMPARE_SLOWER], k->shapes[COMPARE_REGRESSION], k->shapes[COMPARE_BROKEN],
            k->shapes[COMPARE_FIXED], k->winners_changed, k->winner_losses);
    fprintf(f, "| shape | BASE best | NEW best | change | verdict | BASE winner | NEW winner | "
               "BASE winner in NEW |\n|:--|--:|--:|--:|:--|:--|:--|--:|\n");
    for (size_t i = 0; i < c->n_shapes; i++) {
        const compare_shape *s = &c->shapes[i];
        char name[512], tb[128], tn[128], ch[32], wb[256] = "-", wn[256] = "-", loss[160] = "";
        if (s->best_base)
            compare_params_text(c, s->best_base, wb, sizeof wb);
        if (s->best_new && s->winner_changed)
            compare_params_text(c, s->best_new, wn, sizeof wn);
        else if (s->best_new)
            snprintf(wn, sizeof wn, "same");
        if (s->winner_changed && compare_timed(s->old_winner_new)) {
            char p[32];
            snprintf(loss, sizeof loss, "%s%s", compare_pct(s->old_winner_loss, 1, p, sizeof p),
                     s->loss_significant ? "" : " (within noise)");
        } else if (s->winner_changed) {
            compare_time_text(s->old_winner_new, loss, sizeof loss);
        }
        fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s |\n",
                compare_shape_name(c, s, name, sizeof name),
                s->best_base ? compare_time_text(s->best_base, tb, sizeof tb) : "-",
                s->best_new ? compare_time_text(s->best_new, tn, sizeof tn) : "-",
                compare_pct(s->change, 1, ch, sizeof ch), compare_verdict_str(s->verdict), wb, wn,
                loss);
    }
}

static void compare_write_heuristics(const compare *c, FILE *f)
{
    fprintf(f, "\n## Heuristics\n\n");
    if (!c->n_heuristics) {
        fprintf(f, "No tuned integer parameter to fit.\n");
        return;
    }
    fprintf(f,
            "Rules fitted by `tune fit` (target 98 %%) on each run; BASE's rule also evaluated on "
            "NEW's data. A regression: BASE's rule on NEW below its efficiency on BASE by more "
            "than the threshold (relative).\n\n");
    fprintf(f,
            "| parameter | BASE rule | NEW rule | BASE rule on BASE | BASE rule on NEW | NEW rule "
            "on NEW | verdict |\n|:--|:--|:--|--:|--:|--:|:--|\n");
    for (size_t i = 0; i < c->n_heuristics; i++) {
        const compare_heuristic *h = &c->heuristics[i];
        char a[32], b[64], n[32];
        compare_pct(h->base_eff_new, 0, b, sizeof b);
        if (h->base_infeasible_new)
            snprintf(b + strlen(b), sizeof b - strlen(b), " (%zu infeasible)",
                     h->base_infeasible_new);
        fprintf(f, "| %s | `%s` | `%s` | %s | %s | %s | %s |\n", h->param,
                h->base_rule ? h->base_rule : "-", h->new_rule ? h->new_rule : "-",
                compare_pct(h->base_eff, 0, a, sizeof a), b,
                compare_pct(h->new_eff, 0, n, sizeof n),
                h->note[0]      ? "not compared"
                : h->regression ? "**regression**"
                : h->changed    ? "rule changed"
                                : "same rule");
    }
    for (size_t i = 0; i < c->n_heuristics; i++)
        if (c->heuristics[i].note[0])
            fprintf(f, "\n%s: %s\n", c->heuristics[i].param, c->heuristics[i].note);
}

static void compare_write_dirs(const char *label, char **dirs, size_t n, FILE *f)
{
    fprintf(f, "- %s: ", label);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s`%s`", i ? ", " : "", dirs[i]);
    fprintf(f, "\n");
}

void compare_write_markdown(const compare *c, FILE *f)
{
    const compare_counts *k = &c->counts;
    char thr[32];
    compare_pct(c->threshold, 0, thr, sizeof thr);
    fprintf(f, "# Comparison of two runs\n\n");
    compare_write_dirs("BASE", c->base_dirs, c->n_base_dirs, f);
    compare_write_dirs("NEW", c->new_dirs, c->n_new_dirs, f);
    fprintf(f, "- threshold: %s\n\n", thr);
    size_t n = compare_n_regressions(c);
    if (!n)
        fprintf(f, "**No regression beyond %s.**\n\n", thr);
    else
        fprintf(f,
                "**%zu regression%s**: %zu configuration%s slower by more than %s, %zu that "
                "ran ok in BASE and failed in NEW, %zu shape%s, %zu heuristic%s.\n\n",
                n, n == 1 ? "" : "s", k->configs[COMPARE_REGRESSION],
                k->configs[COMPARE_REGRESSION] == 1 ? "" : "s", thr, k->configs[COMPARE_BROKEN],
                k->shapes[COMPARE_REGRESSION] + k->shapes[COMPARE_BROKEN],
                k->shapes[COMPARE_REGRESSION] + k->shapes[COMPARE_BROKEN] == 1 ? "" : "s",
                k->heuristic_regressions, k->heuristic_regressions == 1 ? "" : "s");
    fprintf(f,
            "A change counts only when |NEW - BASE| / BASE of the median times exceeds the "
            "noise (stdev / median) of both rows; a regression is a change that counts and is "
            "slower by more than %s, or a configuration or shape that ran ok in BASE and not "
            "in NEW (docs/compare.md).\n\n",
            thr);
    compare_write_env(c, f);
    fprintf(f, "\n");
    compare_write_constants(c, f);
    fprintf(f, "\n");
    compare_write_configs(c, f);
    compare_write_shapes(c, f);
    compare_write_heuristics(c, f);
}

/* ---- JSON ---- */

static json_t *compare_num(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *compare_value_json(expr_value v)
{
    switch (v.type) {
    case EXPR_INT:
        return json_integer(v.i);
    case EXPR_FLOAT:
        return compare_num(v.f);
    case EXPR_STR:
        return json_string(v.s ? v.s : "");
    }
    return json_null();
}

/* {axis: value} of the shape, or {param: value} of the parameters (null for a baseline). */
static json_t *compare_values_json(const result_row *row, int params)
{
    if (params && !compare_is_tuned(row))
        return json_null();
    json_t *o = json_object();
    size_t from = params ? row->n_axes : 0, to = params ? row->values.n : row->n_axes;
    for (size_t i = from; i < to; i++)
        json_object_set_new(o, row->values.names[i], compare_value_json(row->values.vals[i]));
    return o;
}

static json_t *compare_us(const result_row *row)
{
    return compare_timed(row) ? json_real(row->time.median * 1e6) : json_null();
}

static json_t *compare_status_json(const result_row *row)
{
    return row ? json_string(result_status_str(row->status)) : json_null();
}

static json_t *compare_config_json(const compare_config *cfg)
{
    const result_row *row = compare_config_row(cfg);
    json_t *o = json_object();
    json_object_set_new(o, "op", row->op ? json_string(row->op) : json_null());
    json_object_set_new(o, "method", json_string(row->method));
    json_object_set_new(o, "shape", compare_values_json(row, 0));
    json_object_set_new(o, "params", compare_values_json(row, 1));
    json_object_set_new(o, "verdict", json_string(compare_verdict_str(cfg->verdict)));
    json_object_set_new(o, "status_base", compare_status_json(cfg->base_row));
    json_object_set_new(o, "status_new", compare_status_json(cfg->new_row));
    json_object_set_new(o, "time_base_us", compare_us(cfg->base_row));
    json_object_set_new(o, "time_new_us", compare_us(cfg->new_row));
    json_object_set_new(o, "change", compare_num(cfg->change));
    json_object_set_new(o, "noise_base", compare_num(cfg->noise_base));
    json_object_set_new(o, "noise_new", compare_num(cfg->noise_new));
    const char *reason = cfg->new_row && cfg->new_row->reason ? cfg->new_row->reason : NULL;
    json_object_set_new(o, "reason_new", reason ? json_string(reason) : json_null());
    return o;
}

static json_t *compare_best_json(const result_row *row)
{
    if (!row)
        return json_null();
    return json_pack("{s:s, s:o, s:o, s:o}", "method", row->method, "params",
                     compare_values_json(row, 1), "time_us", compare_us(row), "noise",
                     compare_num(compare_row_noise(row)));
}

static json_t *compare_shape_json(const compare_shape *s)
{
    json_t *o = json_object();
    const result_row *row = s->any_row;
    json_object_set_new(o, "op", row->op ? json_string(row->op) : json_null());
    json_object_set_new(o, "shape", compare_values_json(row, 0));
    json_object_set_new(o, "verdict", json_string(compare_verdict_str(s->verdict)));
    json_object_set_new(o, "best_base", compare_best_json(s->best_base));
    json_object_set_new(o, "best_new", compare_best_json(s->best_new));
    json_object_set_new(o, "change", compare_num(s->change));
    json_object_set_new(o, "noise_base", compare_num(s->noise_base));
    json_object_set_new(o, "noise_new", compare_num(s->noise_new));
    json_object_set_new(o, "winner_changed", json_boolean(s->winner_changed));
    json_object_set_new(o, "old_winner_status_new", compare_status_json(s->old_winner_new));
    json_object_set_new(o, "old_winner_time_new_us", compare_us(s->old_winner_new));
    json_object_set_new(o, "old_winner_loss", compare_num(s->old_winner_loss));
    json_object_set_new(o, "loss_significant", json_boolean(s->loss_significant));
    return o;
}

static json_t *compare_str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *compare_heuristic_json(const compare_heuristic *h)
{
    json_t *o = json_object();
    json_object_set_new(o, "param", json_string(h->param));
    json_object_set_new(o, "base_rule", compare_str_or_null(h->base_rule));
    json_object_set_new(o, "new_rule", compare_str_or_null(h->new_rule));
    json_object_set_new(o, "base_efficiency", compare_num(h->base_eff));
    json_object_set_new(o, "base_efficiency_on_new", compare_num(h->base_eff_new));
    json_object_set_new(o, "new_efficiency", compare_num(h->new_eff));
    json_object_set_new(o, "base_infeasible_on_new",
                        json_integer((json_int_t)h->base_infeasible_new));
    json_object_set_new(o, "changed", json_boolean(h->changed));
    json_object_set_new(o, "regression", json_boolean(h->regression));
    json_object_set_new(o, "note", h->note[0] ? json_string(h->note) : json_null());
    return o;
}

static json_t *compare_verdict_counts(const size_t *counts)
{
    json_t *o = json_object();
    for (size_t v = 0; v < COMPARE_N_VERDICTS; v++)
        json_object_set_new(o, verdict_names[v], json_integer((json_int_t)counts[v]));
    return o;
}

static json_t *compare_dirs_json(char **dirs, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(dirs[i]));
    return a;
}

json_t *compare_to_json(const compare *c)
{
    const compare_counts *k = &c->counts;
    json_t *o = json_object();
    json_object_set_new(o, "base", compare_dirs_json(c->base_dirs, c->n_base_dirs));
    json_object_set_new(o, "new", compare_dirs_json(c->new_dirs, c->n_new_dirs));
    json_object_set_new(o, "threshold", json_real(c->threshold));
    json_object_set_new(o, "rule",
                        json_string("significant: |change| > max(noise_base, noise_new), "
                                    "noise = stdev / median; regression: significant "
                                    "and change > threshold, or ok -> not ok"));
    json_object_set_new(o, "regression", json_boolean(compare_n_regressions(c) > 0));
    json_object_set_new(o, "regressions", json_integer((json_int_t)compare_n_regressions(c)));
    json_t *counts = json_object();
    json_object_set_new(counts, "configs", compare_verdict_counts(k->configs));
    json_object_set_new(counts, "improved", json_integer((json_int_t)k->improved));
    json_object_set_new(counts, "shapes", compare_verdict_counts(k->shapes));
    json_object_set_new(counts, "winners_changed", json_integer((json_int_t)k->winners_changed));
    json_object_set_new(counts, "winner_losses", json_integer((json_int_t)k->winner_losses));
    json_object_set_new(counts, "heuristics_changed",
                        json_integer((json_int_t)k->heuristics_changed));
    json_object_set_new(counts, "heuristic_regressions",
                        json_integer((json_int_t)k->heuristic_regressions));
    json_object_set_new(counts, "duplicates_base", json_integer((json_int_t)k->duplicates_base));
    json_object_set_new(counts, "duplicates_new", json_integer((json_int_t)k->duplicates_new));
    json_object_set_new(counts, "change_median", compare_num(c->change_median));
    json_object_set_new(counts, "change_min", compare_num(c->change_min));
    json_object_set_new(counts, "change_max", compare_num(c->change_max));
    json_object_set_new(o, "counts", counts);
    json_t *env = json_object(), *items = json_array();
    json_object_set_new(env, "differences", json_integer((json_int_t)k->env_differences));
    json_object_set_new(env, "refused", json_integer((json_int_t)k->env_refused));
    for (size_t i = 0; i < COMPARE_N_ENV; i++) {
        const compare_env_item *it = &c->env[i];
        json_array_append_new(items, json_pack("{s:s, s:s, s:s, s:s, s:b, s:b, s:b}", "key",
                                               it->key, "label", it->label, "base", it->base_value,
                                               "new", it->new_value, "checked", it->checked,
                                               "differs", it->differs, "allowed", it->allowed));
    }
    json_object_set_new(env, "items", items);
    json_object_set_new(o, "environment", env);
    json_t *configs = json_array(), *shapes = json_array(), *heur = json_array();
    for (size_t i = 0; i < c->n_configs; i++)
        json_array_append_new(configs, compare_config_json(&c->configs[i]));
    for (size_t i = 0; i < c->n_shapes; i++)
        json_array_append_new(shapes, compare_shape_json(&c->shapes[i]));
    for (size_t i = 0; i < c->n_heuristics; i++)
        json_array_append_new(heur, compare_heuristic_json(&c->heuristics[i]));
    json_object_set_new(o, "configs", configs);
    json_object_set_new(o, "shapes", shapes);
    json_object_set_new(o, "heuristics", heur);
    return o;
}

tune_status compare_write_files(const compare *c, const char *dir, tune_error *err)
{
    char path[PATH_MAX + 32];
    tune_status st = results_mkdirs(dir, err);
    if (st != TUNE_OK)
        return st;
    snprintf(path, sizeof path, "%s/compare.md", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return tune_error_set(err, TUNE_ERR_IO, path, "cannot write: %s", strerror(errno));
    compare_write_markdown(c, f);
    if (fclose(f) != 0)
        return tune_error_set(err, TUNE_ERR_IO, path, "cannot write: %s", strerror(errno));
    snprintf(path, sizeof path, "%s/compare.json", dir);
    json_t *j = compare_to_json(c);
    int rc = j ? json_dump_file(j, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : -1;
    json_decref(j);
    if (rc != 0)
        return tune_error_set(err, TUNE_ERR_IO, path, "cannot write the file");
    return TUNE_OK;
}
