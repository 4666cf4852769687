/* compare_context.c - part of the compare module (analysis/compare.h). */
#include "analysis/compare.h"
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "analysis/fit.h"
#include "core/infile.h"
#include "store/meta.h"
#include "analysis/compare_impl.h"
#include "analysis/compare_impl.h"

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
        char *text = NULL;
        size_t len = 0;
        json_t *h = infile_read_text(path, INFILE_MAX_JSON, &text, &len, NULL) == TUNE_OK
                        ? json_loadb(text, len, 0, NULL)
                        : NULL;
        free(text);
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
        for (size_t r = 0; r < c->base_rows.n && !varies; r++) {
            expr_value v;
            const result_row *row = &c->base_rows.rows[r];
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
    tune_objective obj = c->objective;
    fit_data *db = fit_data_build(c->base_rows.rows, c->base_rows.n, h->param, NULL, obj, &e);
    fit_data *dn =
        db ? fit_data_build(c->new_rows.rows, c->new_rows.n, h->param, NULL, obj, &e) : NULL;
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

tune_status compare_heuristics(compare *c, const compare_options *opt, tune_error *err)
{
    char *params[COMPARE_MAX_NAMES];
    size_t n = 0;
    if (opt->n_params) {
        for (size_t i = 0; i < opt->n_params && n < COMPARE_MAX_NAMES; i++) {
            const char *p = opt->params[i];
            if (!compare_has_param(c->base_rows.rows, c->base_rows.n, p) &&
                !compare_has_param(c->new_rows.rows, c->new_rows.n, p)) {
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
    char *search = new_side ? c->search_new : c->search_base;
    for (size_t d = 0; st == TUNE_OK && d < n_dirs; d++) {
        metas[d] = meta_load(dirs[d], NULL);
        c->meta_missing |= metas[d] == NULL;
        if (!search[0] && !meta_search_settings(metas[d], search, sizeof c->search_base))
            search[0] = '\0';
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

tune_status compare_env(compare *c, const compare_options *opt, tune_error *err)
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
        /* a searched run hashes its kernels' compile keys, an exhaustive one their cubins: the
         * two hashes say nothing of each other */
        if (strcmp(it->key, "kernels") == 0 && !c->search_base[0] != !c->search_new[0])
            it->checked = 0;
        it->allowed |= opt->allow_all;
        it->differs = strcmp(it->base_value, it->new_value) != 0;
        if (it->differs && it->checked) {
            c->counts.env_differences++;
            c->counts.env_refused += (size_t)!it->allowed;
        }
    }
    return TUNE_OK;
}

