/* fit_output.c - part of the fit module (analysis/fit.h). */
#include "analysis/fit_impl.h"
#include "store/meta.h"
#include "core/outfile.h"

fit_cost_unit fit_cost_unit_of(tune_objective obj)
{
    static const char *const keys[] = {"time_us", "energy_uj", "edp_uj_us"};
    fit_cost_unit u = {NULL, 0, keys[0]};
    u.scale = objective_print_scale(obj, &u.unit);
    if ((unsigned)obj <= OBJECTIVE_EDP)
        u.key = keys[obj];
    return u;
}

/* ---- Markdown ---- */

static const char *pct(double x, char *buf, size_t size)
{
    if (isnan(x))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%.1f %%", 100.0 * x);
    return buf;
}

static void write_shape_table(const fit_data *d, const fit_eval *ev, FILE *f)
{
    fit_cost_unit u = fit_cost_unit_of(d->objective);
    fprintf(f, "| shape | best %s | rule %s | best (%s) | rule (%s) | efficiency |\n", d->param,
            d->param, u.unit, u.unit);
    fprintf(f, "|:--|--:|--:|--:|--:|--:|\n");
    for (size_t s = 0; s < ev->n_shapes; s++) {
        const fit_shape_eval *se = &ev->shapes[s];
        char name[512], p[32], rv[64], rt[64];
        if (se->evaluated)
            snprintf(rv, sizeof rv, "%" PRId64, se->rule_value);
        else
            snprintf(rv, sizeof rv, "error");
        if (se->feasible)
            snprintf(rt, sizeof rt, "%.2f", se->rule_cost * u.scale);
        else
            snprintf(rt, sizeof rt, "not measured");
        fprintf(f, "| %s | %" PRId64 " | %s | %.2f | %s | %s |\n",
                fit_data_shape_name(d, s, name, sizeof name), se->best_value, rv,
                se->best_cost * u.scale, rt, pct(se->efficiency, p, sizeof p));
    }
}

static void write_summary(const fit_data *d, const fit_eval *ev, FILE *f)
{
    char p[32], w[32], name[512];
    fprintf(f, "Efficiency %s over %zu of %zu shapes", pct(ev->efficiency, p, sizeof p),
            ev->n_feasible, ev->n_shapes);
    if (ev->worst != FIT_NONE)
        fprintf(f, "; worst %s at %s", pct(ev->worst_efficiency, w, sizeof w),
                fit_data_shape_name(d, ev->worst, name, sizeof name));
    fprintf(f, "; %zu infeasible shape%s", ev->n_infeasible, ev->n_infeasible == 1 ? "" : "s");
    if (ev->n_infeasible) {
        fprintf(f, " (the rule's %s was not measured there):", d->param);
        for (size_t s = 0, k = 0; s < ev->n_shapes; s++) {
            if (ev->shapes[s].feasible)
                continue;
            char v[64];
            if (ev->shapes[s].evaluated)
                snprintf(v, sizeof v, "%" PRId64, ev->shapes[s].rule_value);
            else
                snprintf(v, sizeof v, "error");
            fprintf(f, "%s %s (%s)", k++ ? "," : "", fit_data_shape_name(d, s, name, sizeof name),
                    v);
        }
    }
    fprintf(f, ".\n");
}

static void write_data_line(const fit_data *d, FILE *f)
{
    if (d->objective != OBJECTIVE_TIME)
        fprintf(f, "Ranked by %s (%s per call): best and efficiency compare that cost.%s\n\n",
                objective_name(d->objective), objective_unit(d->objective),
                d->n_unranked ? " Rows without energy per call cannot be ranked so and are left "
                                "out." : "");
    fprintf(f, "%zu shapes", d->n_shapes);
    if (d->n_unmeasured)
        fprintf(f, " (and %zu without an ok row%s, left out)", d->n_unmeasured,
                d->objective == OBJECTIVE_TIME ? "" : " with energy");
    if (d->n_unranked)
        fprintf(f, ", %zu ok row%s without energy left out", d->n_unranked,
                d->n_unranked == 1 ? "" : "s");
    fprintf(f, ", %zu measured values of %s:", d->n_values, d->param);
    for (size_t j = 0; j < d->n_values; j++)
        fprintf(f, " %" PRId64, d->values[j]);
    fprintf(f, ".\n\n");
}

void fit_eval_write_markdown(const fit_data *d, const fit_eval *ev, FILE *f)
{
    fprintf(f, "## Rule for %s: `%s`\n\n", d->param, ev->rule);
    write_data_line(d, f);
    write_summary(d, ev, f);
    fprintf(f, "\n");
    write_shape_table(d, ev, f);
}

void fit_write_markdown(const fit_data *d, const fit_result *r, FILE *f)
{
    char p[32];
    fprintf(f, "## Heuristic for %s (%s%s%starget %s)\n\n", d->param, d->method ? "method " : "",
            d->method ? d->method : "", d->method ? ", " : "", pct(r->target, p, sizeof p));
    write_data_line(d, f);
    fprintf(f, "| family | best rule | efficiency | worst | worst shape | LOO | infeasible |\n");
    fprintf(f, "|:--|:--|--:|--:|:--|--:|--:|\n");
    for (size_t i = 0; i < FIT_N_FAMILIES; i++) {
        const fit_candidate *c = &r->candidates[i];
        if (!c->eval.rule) {
            fprintf(f, "| %s | - | - | - | - | - | - |\n", fit_family_str((fit_family)i));
            continue;
        }
        char e[32], w[32], l[32], name[512] = "-";
        if (c->eval.worst != FIT_NONE)
            fit_data_shape_name(d, c->eval.worst, name, sizeof name);
        fprintf(f, "| %s%s | `%s` | %s | %s | %s | %s", fit_family_str((fit_family)i),
                i == r->chosen ? " (chosen)" : "", c->eval.rule,
                pct(c->eval.efficiency, e, sizeof e), pct(c->eval.worst_efficiency, w, sizeof w),
                name, pct(c->loo, l, sizeof l));
        if (c->loo_infeasible)
            fprintf(f, " (%zu left-out shapes infeasible)", c->loo_infeasible);
        fprintf(f, " | %zu |\n", c->eval.n_infeasible);
    }
    if (r->chosen == FIT_NONE) {
        fprintf(f, "\nNo rule.\n");
        return;
    }
    const fit_candidate *c = &r->candidates[r->chosen];
    char l[32];
    fprintf(f, "\nChosen (%s): `%s`%s; leave-one-shape-out %s.\n",
            fit_family_str(c->family), c->eval.rule,
            c->meets_target ? "" : " (no family reaches the target: the most efficient rule)",
            pct(c->loo, l, sizeof l));
    write_summary(d, &c->eval, f);
    fprintf(f, "\n");
    write_shape_table(d, &c->eval, f);
}

/* ---- JSON ---- */

static json_t *shape_json(const fit_data *d, size_t s)
{
    json_t *o = json_object();
    for (size_t a = 0; a < d->n_axes; a++)
        json_object_set_new(o, d->axes[a], outfile_json_value(d->shapes[s].vals[a]));
    return o;
}

static json_t *eval_fields(const fit_data *d, const fit_eval *ev, json_t *o, int with_shapes)
{
    char name[512];
    json_object_set_new(o, "rule", json_string(ev->rule));
    json_object_set_new(o, "efficiency", outfile_json_number(ev->efficiency));
    json_object_set_new(o, "n_feasible", json_integer((json_int_t)ev->n_feasible));
    json_object_set_new(o, "n_infeasible", json_integer((json_int_t)ev->n_infeasible));
    json_t *inf = json_array();
    for (size_t s = 0; s < ev->n_shapes; s++)
        if (!ev->shapes[s].feasible)
            json_array_append_new(inf, json_string(fit_data_shape_name(d, s, name, sizeof name)));
    json_object_set_new(o, "infeasible_shapes", inf);
    if (ev->worst != FIT_NONE) {
        json_object_set_new(o, "worst_shape",
                            json_string(fit_data_shape_name(d, ev->worst, name, sizeof name)));
        json_object_set_new(o, "worst_efficiency", outfile_json_number(ev->worst_efficiency));
    } else {
        json_object_set_new(o, "worst_shape", json_null());
        json_object_set_new(o, "worst_efficiency", json_null());
    }
    if (!with_shapes)
        return o;
    fit_cost_unit u = fit_cost_unit_of(d->objective);
    json_t *shapes = json_array();
    for (size_t s = 0; s < ev->n_shapes; s++) {
        const fit_shape_eval *se = &ev->shapes[s];
        json_t *sh = json_object();
        json_object_set_new(sh, "shape", json_string(fit_data_shape_name(d, s, name, sizeof name)));
        json_object_set_new(sh, "axes", shape_json(d, s));
        json_object_set_new(sh, "best_value", json_integer(se->best_value));
        json_object_set_new(sh, "rule_value",
                            se->evaluated ? json_integer(se->rule_value) : json_null());
        json_object_set_new(sh, "feasible", json_boolean(se->feasible));
        char key[32];
        snprintf(key, sizeof key, "best_%s", u.key);
        json_object_set_new(sh, key, outfile_json_number(se->best_cost * u.scale));
        snprintf(key, sizeof key, "rule_%s", u.key);
        json_object_set_new(sh, key, outfile_json_number(se->rule_cost * u.scale));
        json_object_set_new(sh, "efficiency", outfile_json_number(se->efficiency));
        json_array_append_new(shapes, sh);
    }
    json_object_set_new(o, "shapes", shapes);
    return o;
}

static json_t *head_json(const fit_data *d, const char *const *sources, size_t n_sources)
{
    json_t *o = json_object();
    json_object_set_new(o, "param", json_string(d->param));
    json_object_set_new(o, "method", d->method ? json_string(d->method) : json_null());
    json_object_set_new(o, "objective", json_string(objective_name(d->objective)));
    json_t *src = json_array();
    for (size_t i = 0; sources && i < n_sources; i++)
        json_array_append_new(src, json_string(sources[i]));
    json_object_set_new(o, "sources", src);
    json_t *axes = json_array();
    for (size_t a = 0; a < d->n_axes; a++)
        json_array_append_new(axes, json_string(d->axes[a]));
    json_object_set_new(o, "axes", axes);
    json_object_set_new(o, "n_shapes", json_integer((json_int_t)d->n_shapes));
    json_object_set_new(o, "n_unmeasured_shapes", json_integer((json_int_t)d->n_unmeasured));
    json_object_set_new(o, "n_unranked_rows", json_integer((json_int_t)d->n_unranked));
    json_t *vals = json_array();
    for (size_t j = 0; j < d->n_values; j++)
        json_array_append_new(vals, json_integer(d->values[j]));
    json_object_set_new(o, "values", vals);
    return o;
}

json_t *fit_eval_to_json(const fit_data *d, const fit_eval *ev, const char *const *sources,
                         size_t n_sources)
{
    return eval_fields(d, ev, head_json(d, sources, n_sources), 1);
}

static void loo_fields(const fit_candidate *c, json_t *o)
{
    json_object_set_new(o, "loo", outfile_json_number(c->loo));
    json_object_set_new(o, "loo_n", json_integer((json_int_t)c->loo_n));
    json_object_set_new(o, "loo_infeasible", json_integer((json_int_t)c->loo_infeasible));
    json_object_set_new(o, "meets_target", json_boolean(c->meets_target));
}

json_t *fit_result_to_json(const fit_data *d, const fit_result *r, const char *const *sources,
                           size_t n_sources)
{
    json_t *o = head_json(d, sources, n_sources);
    json_object_set_new(o, "target", json_real(r->target));
    json_t *cands = json_array();
    for (size_t i = 0; i < FIT_N_FAMILIES; i++) {
        const fit_candidate *c = &r->candidates[i];
        if (!c->eval.rule)
            continue;
        json_t *co = json_object();
        json_object_set_new(co, "family", json_string(fit_family_str(c->family)));
        eval_fields(d, &c->eval, co, 0);
        loo_fields(c, co);
        json_array_append_new(cands, co);
    }
    if (r->chosen != FIT_NONE) {
        const fit_candidate *c = &r->candidates[r->chosen];
        json_object_set_new(o, "family", json_string(fit_family_str(c->family)));
        eval_fields(d, &c->eval, o, 1);
        loo_fields(c, o);
    } else {
        json_object_set_new(o, "rule", json_null());
    }
    json_object_set_new(o, "candidates", cands);
    return o;
}

/* ---- C header ---- */

static const char header_helpers[] =
    "#ifndef TUNE_PICK_HELPERS_\n"
    "#define TUNE_PICK_HELPERS_\n"
    "static inline int64_t tune_pick_min_(int64_t a, int64_t b) { return a < b ? a : b; }\n"
    "static inline int64_t tune_pick_max_(int64_t a, int64_t b) { return a > b ? a : b; }\n"
    "static inline int64_t tune_pick_abs_(int64_t a) { return a < 0 ? -a : a; }\n"
    "/* x >= 1 */\n"
    "static inline int64_t tune_pick_floor_pow2_(int64_t x)\n"
    "{\n"
    "    int64_t p = 1;\n"
    "    while (p <= x / 2)\n"
    "        p *= 2;\n"
    "    return p;\n"
    "}\n"
    "static inline int64_t tune_pick_ceil_pow2_(int64_t x)\n"
    "{\n"
    "    int64_t p = tune_pick_floor_pow2_(x);\n"
    "    return p == x ? p : 2 * p;\n"
    "}\n"
    "#endif\n";

/* Number of top-level arguments of the call whose '(' is at text[open]; 0 when unbalanced. */
static size_t call_arity(const char *text, size_t open)
{
    int depth = 0;
    size_t args = 1;
    for (size_t i = open; text[i]; i++) {
        if (text[i] == '(')
            depth++;
        else if (text[i] == ')' && --depth == 0)
            return args;
        else if (text[i] == ',' && depth == 1)
            args++;
    }
    return 0;
}

/* C text of a canonical rule: identical operators, helper functions instead of min/max/...;
 * marks the axes it reads in used[]. */
static tune_status rule_to_c(const fit_data *d, const char *text, char *out, size_t size,
                             int *used, tune_error *err)
{
    static const char *const fns[] = {"min", "max", "abs", "floor_pow2", "ceil_pow2"};
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; text[i];) {
        char word[256];
        const char *piece = word;
        size_t adv = 1;
        if (isalpha((unsigned char)text[i]) || text[i] == '_') {
            size_t n = 0;
            while (isalnum((unsigned char)text[i + n]) || text[i + n] == '_')
                n++;
            if (n >= sizeof word)
                return tune_error_set(err, TUNE_ERR_INVALID, "fit", "name too long in '%s'", text);
            memcpy(word, text + i, n);
            word[n] = '\0';
            adv = n;
            if (text[i + n] == '(') {
                size_t k = 0;
                while (k < sizeof fns / sizeof fns[0] && strcmp(fns[k], word) != 0)
                    k++;
                if (k == sizeof fns / sizeof fns[0])
                    return tune_error_set(err, TUNE_ERR_INVALID, "fit",
                                          "the C header cannot compute %s() of rule '%s'", word,
                                          text);
                if (k < 2 && call_arity(text, i + n) != 2)
                    return tune_error_set(err, TUNE_ERR_INVALID, "fit",
                                          "the C header supports %s() of two arguments only "
                                          "(rule '%s')",
                                          word, text);
                snprintf(word, sizeof word, "tune_pick_%s_", fns[k]);
            } else {
                size_t a = 0;
                while (a < d->n_axes && strcmp(d->axes[a], word) != 0)
                    a++;
                if (a == d->n_axes || !d->axis_int[a])
                    return tune_error_set(err, TUNE_ERR_INVALID, "fit",
                                          "the C header needs integer axes; rule '%s' reads '%s'",
                                          text, word);
                used[a] = 1;
            }
        } else if (isdigit((unsigned char)text[i])) {
            size_t n = 0;
            while (isalnum((unsigned char)text[i + n]) || text[i + n] == '.')
                n++;
            if (n >= sizeof word || memchr(text + i, '.', n) || memchr(text + i, 'e', n) ||
                memchr(text + i, 'E', n))
                return tune_error_set(err, TUNE_ERR_INVALID, "fit",
                                      "the C header needs integer arithmetic; rule '%s'", text);
            memcpy(word, text + i, n);
            word[n] = '\0';
            adv = n;
        } else if (text[i] == '"') {
            return tune_error_set(err, TUNE_ERR_INVALID, "fit",
                                  "the C header cannot compare strings; rule '%s'", text);
        } else {
            word[0] = text[i];
            word[1] = '\0';
        }
        int w = snprintf(out + len, size - len, "%s", piece);
        if (w < 0 || (size_t)w >= size - len)
            return tune_error_set(err, TUNE_ERR_INVALID, "fit", "rule too long: '%s'", text);
        len += (size_t)w;
        i += adv;
    }
    return TUNE_OK;
}

tune_status fit_write_header(const fit_data *d, const char *rule_in, const char *comment, FILE *f,
                             tune_error *err)
{
    tune_error perr = {0};
    expr *e = expr_parse(rule_in, &perr);
    if (!e)
        return tune_error_set(err, perr.code, perr.where, "rule '%s': %s", rule_in, perr.message);
    char *text = expr_to_string(e);
    expr_free(e);
    if (!text)
        return tune_error_set(err, TUNE_ERR_NOMEM, "fit", "out of memory");
    char body[4096];
    int used[TUNE_MAX_AXES] = {0};
    tune_status st = rule_to_c(d, text, body, sizeof body, used, err);
    if (st != TUNE_OK) {
        free(text);
        return st;
    }
    char guard[256];
    snprintf(guard, sizeof guard, "TUNE_PICK_%s_H", d->param);
    for (char *p = guard; *p; p++)
        *p = isalnum((unsigned char)*p) ? (char)toupper((unsigned char)*p) : '_';
    fprintf(f, "/* tune_pick_%s: the %s for a problem shape, from `tune fit`.\n", d->param,
            d->param);
    fprintf(f, " * Rule: %s\n", text);
    if (comment) {
        for (const char *p = comment; *p;) {
            size_t n = strcspn(p, "\n");
            fprintf(f, " * %.*s\n", (int)n, p);
            p += n + (p[n] == '\n');
        }
    }
    fprintf(f, " */\n#ifndef %s\n#define %s\n\n#include <stdint.h>\n\n%s\n", guard, guard,
            header_helpers);
    fprintf(f, "static inline int tune_pick_%s(", d->param);
    int any = 0;
    for (size_t a = 0; a < d->n_axes; a++)
        if (used[a])
            fprintf(f, "%sint64_t %s", any++ ? ", " : "", d->axes[a]);
    fprintf(f, "%s)\n{\n    return (int)(%s);\n}\n\n#endif\n", any ? "" : "void", body);
    free(text);
    return ferror(f) ? tune_error_set(err, TUNE_ERR_IO, "fit", "cannot write the header")
                     : TUNE_OK;
}

/* ---- Reading ---- */

tune_status fit_read_results(const char *const *dirs, size_t n_dirs, results_rows *rows,
                             tune_error *err)
{
    /* meta.json checked and the folders of one sweep, as `tune report` does */
    *rows = (results_rows){0};
    tune_status st = meta_check_folders(dirs, n_dirs, NULL, err);
    return st == TUNE_OK ? results_read_dirs(dirs, n_dirs, rows, err) : st;
}
