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
#include "model/family.h"
#include "store/meta.h"
#include "analysis/compare_impl.h"

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

/* ---- the rule ---- */

const char *compare_verdict_str(compare_verdict v)
{
    return (unsigned)v < COMPARE_N_VERDICTS ? verdict_names[v] : "?";
}

int compare_verdict_is_regression(compare_verdict v)
{
    return v == COMPARE_REGRESSION || v == COMPARE_BROKEN;
}

int compare_timed(const result_row *row)
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

double compare_cost(const compare *c, const result_row *row)
{
    return row ? results_row_cost(row, c->objective) : NAN;
}

/* The relative noise of the row's cost (compare.h: Objective): its time's, sqrt(2) x under edp. */
static double compare_cost_noise(const compare *c, const result_row *row)
{
    double n = compare_row_noise(row);
    return c->objective == OBJECTIVE_EDP ? sqrt(2.0) * n : n;
}

/* The verdict of a pair of rows (either may be NULL) by their cost; fills change and noises. */
static compare_verdict compare_rows(const compare *c, const result_row *b, const result_row *n,
                                    double threshold, double *change, double *noise_b,
                                    double *noise_n)
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
    *noise_b = compare_cost_noise(c, b);
    *noise_n = compare_cost_noise(c, n);
    double cb = compare_cost(c, b), cn = compare_cost(c, n);
    if (!isfinite(cb) || !isfinite(cn))
        return COMPARE_UNKNOWN; /* not timed, or (energy, edp) without energy */
    *change = (cn - cb) / cb;
    return compare_change_verdict(*change, *noise_b, *noise_n, threshold);
}

void compare_options_init(compare_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->threshold = 0.05;
}

/* ---- keys and ordering ---- */

char *compare_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* The parameters of a side's rows that their family no longer has (a knob removed since the
 * run, which its rows still carry) and that take one value over the side's rows: they never told
 * two of its configurations apart, so the keys leave them out and the run matches later runs
 * configuration by configuration. A removed knob the run varied stays in the keys: which of its
 * values the family runs today is unknown. Names borrowed from the rows. */
typedef struct {
    const char *names[TUNE_MAX_AXES];
    size_t n;
} compare_retired;

static int compare_family_has(const tune_family *fam, const char *name)
{
    for (size_t i = 0; i < fam->n_params; i++)
        if (strcmp(fam->params[i].name, name) == 0)
            return 1;
    return 0;
}

static void compare_find_retired(const result_row *rows, size_t n,
                                 const tune_family *(*find_family)(const char *),
                                 compare_retired *out)
{
    expr_value first[TUNE_MAX_AXES];
    int varies[TUNE_MAX_AXES];
    size_t nc = 0;
    out->n = 0;
    for (size_t r = 0; find_family && r < n; r++) {
        const tune_family *fam = rows[r].family ? find_family(rows[r].family) : NULL;
        for (size_t j = 0; fam && fam->n_params && j < rows[r].n_params; j++) {
            const char *name = rows[r].param_names[j];
            expr_value v;
            if (!name || compare_family_has(fam, name) || point_get(&rows[r].values, name, &v))
                continue;
            size_t k = 0;
            while (k < nc && strcmp(out->names[k], name) != 0)
                k++;
            if (k == nc && nc < TUNE_MAX_AXES) {
                out->names[nc] = name;
                first[nc] = v;
                varies[nc++] = 0;
            } else if (k < nc && !expr_value_equal(first[k], v)) {
                varies[k] = 1;
            }
        }
    }
    for (size_t k = 0; k < nc; k++)
        if (!varies[k])
            out->names[out->n++] = out->names[k];
}

/* A tuned row's values with the defaults of the family's parameters that its sweep did not have
 * (a knob the family gained after the run: its rows ran the default), so that runs before and
 * after the knob match configuration by configuration, and without the side's retired
 * parameters (compare_find_retired). Integer and boolean defaults only; a baseline row (no
 * parameter values) and a parameter the sweep had are left as they are. */
static void compare_row_values(const result_row *row,
                               const tune_family *(*find_family)(const char *),
                               const compare_retired *retired, tune_point *out)
{
    *out = row->values;
    const tune_family *fam = row->family && find_family ? find_family(row->family) : NULL;
    if (!fam || row->values.n <= row->n_axes)
        return;
    if (retired && retired->n) {
        out->n = 0;
        for (size_t i = 0; i < row->values.n; i++) {
            size_t k = 0;
            while (k < retired->n && strcmp(retired->names[k], row->values.names[i]) != 0)
                k++;
            if (k == retired->n)
                point_set(out, row->values.names[i], row->values.vals[i]);
        }
    }
    for (size_t i = 0; i < fam->n_params; i++) {
        const family_axis *ax = &fam->params[i];
        int had = point_get(&row->values, ax->name, NULL) == 0;
        for (size_t j = 0; !had && j < row->n_params; j++)
            had = row->param_names[j] && strcmp(row->param_names[j], ax->name) == 0;
        if (had || !ax->dflt || ax->kind == FAMILY_AXIS_STR)
            continue;
        if (ax->kind == FAMILY_AXIS_BOOL)
            point_set_int(out, ax->name, strcmp(ax->dflt, "true") == 0);
        else
            point_set_int(out, ax->name, strtoll(ax->dflt, NULL, 10));
    }
}

/* "op\x1fmethod\x1fname=Tvalue..." with the values sorted by name (T: the value's type), the
 * problem axes only when shape_only (core/point.h: point_append_sorted); a tuned row's values
 * with the defaults of parameters its sweep lacked and without the retired ones
 * (compare_row_values). New string or NULL. */
static char *compare_row_key(const result_row *row, int shape_only,
                             const tune_family *(*find_family)(const char *),
                             const compare_retired *retired)
{
    tune_point vals;
    compare_row_values(row, find_family, retired, &vals);
    size_t n = shape_only ? row->n_axes : vals.n;
    const char *op = row->op ? row->op : "", *method = shape_only ? "" : row->method;
    size_t len = strlen(op) + strlen(method) + 3;
    for (size_t i = 0; i < n && i < vals.n; i++)
        len += strlen(vals.names[i]) + 260;
    char *key = malloc(len);
    if (!key)
        return NULL;
    size_t at = (size_t)snprintf(key, len, "%s\x1f%s", op, method);
    point_append_sorted(&vals, n, '\x1f', 1, key, len, at);
    return key;
}

static int compare_entry_cmp(const void *pa, const void *pb)
{
    const compare_entry *a = pa, *b = pb;
    int c = strcmp(a->key, b->key);
    return c ? c : (a->order > b->order) - (a->order < b->order);
}

/* Compares two rows on the names a->values.names[from..to): a value b lacks sorts after. */
static int compare_values_on(const result_row *a, const result_row *b, size_t from, size_t to)
{
    for (size_t i = from; i < to && i < a->values.n; i++) {
        expr_value y;
        if (point_get(&b->values, a->values.names[i], &y) != 0)
            return -1;
        int c = expr_value_order(a->values.vals[i], y);
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

const result_row *compare_config_row(const compare_config *cfg)
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
static tune_status compare_side_entries(const result_row *rows, size_t n,
                                        const tune_family *(*find_family)(const char *),
                                        compare_entry **out, size_t *n_out, size_t *n_dups,
                                        tune_error *err)
{
    compare_entry *e = calloc(n ? n : 1, sizeof *e);
    if (!e)
        return tune_error_set(err, TUNE_ERR_NOMEM, "", "out of memory");
    compare_retired retired;
    compare_find_retired(rows, n, find_family, &retired);
    for (size_t i = 0; i < n; i++) {
        e[i].row = &rows[i];
        e[i].order = i;
        if (!(e[i].key = compare_row_key(&rows[i], 0, find_family, &retired))) {
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
    const result_row *first = c->base_rows.n ? &c->base_rows.rows[0] : &c->new_rows.rows[0];
    for (size_t i = 0; i < first->n_axes && c->n_names < COMPARE_MAX_NAMES; i++)
        c->names[c->n_names++] = first->values.names[i];
    c->n_axes = c->n_names;
    const result_row *sides[2] = {c->base_rows.rows, c->new_rows.rows};
    size_t counts[2] = {c->base_rows.n, c->new_rows.n};
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
                } else if (!c->varies[k] && expr_value_order(seen[k], row->values.vals[i]) != 0) {
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
const char *compare_params_text(const compare *c, const result_row *row, char *buf,
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
    tune_status st = compare_side_entries(c->base_rows.rows, c->base_rows.n, c->find_family, &be,
                                          &nb, &c->counts.duplicates_base, err);
    if (st == TUNE_OK)
        st = compare_side_entries(c->new_rows.rows, c->new_rows.n, c->find_family, &ne, &nn,
                                  &c->counts.duplicates_new, err);
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
        cfg->verdict = compare_rows(c, cfg->base_row, cfg->new_row, c->threshold, &cfg->change,
                                    &cfg->noise_base, &cfg->noise_new);
        c->counts.configs[cfg->verdict]++;
        if (cfg->verdict == COMPARE_UNKNOWN && compare_timed(cfg->base_row) &&
            compare_timed(cfg->new_row) && isnan(cfg->change))
            c->counts.unranked_configs++; /* timed in both: the objective's energy is missing */
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

int compare_is_tuned(const result_row *row)
{
    return row->values.n > row->n_axes;
}

/* The cheaper of best and row under c's objective (a tuned row with a cost only). */
static const result_row *compare_cheaper(const compare *c, const result_row *best,
                                         const result_row *row)
{
    if (!row || !compare_is_tuned(row) || !isfinite(compare_cost(c, row)))
        return best;
    return !best || compare_cost(c, row) < compare_cost(c, best) ? row : best;
}

/* What the shape's configurations [from, to) have on each side: any row, any timed tuned row. */
static void compare_shape_sides(const compare *c, size_t from, size_t to, int any[2],
                                int timed[2])
{
    any[0] = any[1] = timed[0] = timed[1] = 0;
    for (size_t i = from; i < to; i++) {
        const result_row *rows[2] = {c->configs[i].base_row, c->configs[i].new_row};
        for (int k = 0; k < 2; k++) {
            any[k] |= rows[k] != NULL;
            timed[k] |= rows[k] && compare_is_tuned(rows[k]) && compare_timed(rows[k]);
        }
    }
}

static void compare_judge_shape(compare *c, compare_shape *s, size_t from, size_t to)
{
    size_t best_b = (size_t)-1, best_n = (size_t)-1;
    for (size_t i = from; i < to; i++) {
        const compare_config *cfg = &c->configs[i];
        if (compare_cheaper(c, s->best_base, cfg->base_row) != s->best_base) {
            s->best_base = cfg->base_row;
            best_b = i;
        }
        if (compare_cheaper(c, s->best_new, cfg->new_row) != s->best_new) {
            s->best_new = cfg->new_row;
            best_n = i;
        }
    }
    int any[2], timed[2];
    compare_shape_sides(c, from, to, any, timed);
    /* ok rows on both sides, but one side's lack the objective's energy: no best to compare */
    s->unranked = timed[0] && timed[1] && (!s->best_base || !s->best_new);
    s->old_winner_loss = NAN;
    if (!any[0] || !any[1]) {
        s->verdict = any[0] ? COMPARE_ONLY_BASE : COMPARE_ONLY_NEW;
        s->change = s->noise_base = s->noise_new = NAN;
    } else if (s->unranked) {
        s->verdict = COMPARE_UNKNOWN;
        s->change = s->noise_base = s->noise_new = NAN;
    } else if (s->best_base || s->best_new) {
        s->verdict = compare_rows(c, s->best_base, s->best_new, c->threshold, &s->change,
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
        if (s->winner_changed && isfinite(compare_cost(c, s->old_winner_new))) {
            s->old_winner_loss =
                compare_cost(c, s->old_winner_new) / compare_cost(c, s->best_new) - 1;
            double nb, nn;
            double ch;
            compare_verdict v =
                compare_rows(c, s->best_new, s->old_winner_new, INFINITY, &ch, &nb, &nn);
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
        c->counts.unranked_shapes += (size_t)s->unranked;
        from = to;
    }
    return TUNE_OK;
}

/* ---- construction ---- */

/* Under energy or edp, each side must have rows with energy per call: refused, not compared by
 * time instead, when one has none. */
static tune_status compare_check_energy(const compare *c, tune_error *err)
{
    if (!objective_needs_energy(c->objective))
        return TUNE_OK;
    for (int side = 0; side < 2; side++) {
        const result_row *rows = side ? c->new_rows.rows : c->base_rows.rows;
        size_t n = side ? c->new_rows.n : c->base_rows.n, with = 0;
        for (size_t i = 0; i < n; i++)
            with += (size_t)isfinite(compare_cost(c, &rows[i]));
        if (!with)
            return tune_error_set(err, TUNE_ERR_INVALID, side ? c->new_dirs[0] : c->base_dirs[0],
                                  "%s has no ok row with energy per call (energy_j), so it cannot "
                                  "be compared by %s: measure it with --energy, or compare by "
                                  "time",
                                  side ? "NEW" : "BASE", objective_name(c->objective));
    }
    return TUNE_OK;
}

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
    c->objective = opt->objective;
    c->find_family = opt->find_family;
    c->base_dirs = compare_copy_dirs(base_dirs, n_base);
    c->new_dirs = compare_copy_dirs(new_dirs, n_new);
    c->n_base_dirs = n_base;
    c->n_new_dirs = n_new;
    tune_status st = TUNE_OK;
    if (!c->base_dirs || !c->new_dirs)
        st = tune_error_set(err, TUNE_ERR_NOMEM, "", "out of memory");
    /* each side's meta.json checked (as `tune report` does), each side of one sweep */
    if (st == TUNE_OK)
        st = meta_check_folders(base_dirs, n_base, NULL, err);
    if (st == TUNE_OK)
        st = meta_check_folders(new_dirs, n_new, NULL, err);
    if (st == TUNE_OK)
        st = compare_env(c, opt, err);
    if (st == TUNE_OK)
        st = results_read_dirs(base_dirs, n_base, &c->base_rows, err);
    if (st == TUNE_OK)
        st = results_read_dirs(new_dirs, n_new, &c->new_rows, err);
    if (st == TUNE_OK && (!c->base_rows.n || !c->new_rows.n))
        st = tune_error_set(err, TUNE_ERR_INVALID, c->base_rows.n ? new_dirs[0] : base_dirs[0],
                            "no result rows");
    if (st == TUNE_OK)
        st = compare_check_energy(c, err);
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
    results_rows_free(&c->base_rows);
    results_rows_free(&c->new_rows);
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
const char *compare_search(const compare *c, int new_side)
{
    const char *s = new_side ? c->search_new : c->search_base;
    return s[0] ? s : NULL;
}

double compare_threshold(const compare *c)
{
    return c->threshold;
}
tune_objective compare_objective(const compare *c)
{
    return c->objective;
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
