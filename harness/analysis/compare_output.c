/* compare_output.c - part of the compare module (analysis/compare.h). */
#include "analysis/compare_impl.h"
#include "core/outfile.h"

/* ---- Markdown ---- */

static const char *compare_pct(double x, int sign, char *buf, size_t size)
{
    if (isnan(x))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, sign ? "%+.1f %%" : "%.1f %%", 100.0 * x);
    return buf;
}

/* The row's cost: "12.34 us" (time), "5.67 uJ" (energy), "3.21 uJ*us" (edp); or the status
 * (with the start of the reason) when not ok, "-" when absent. */
static const char *compare_time_text(const compare *c, const result_row *row, char *buf,
                                     size_t size)
{
    const char *unit;
    double scale = objective_print_scale(c->objective, &unit);
    if (!row)
        snprintf(buf, size, "-");
    else if (row->status != RESULT_OK)
        snprintf(buf, size, "%s%s%.60s", result_status_str(row->status), row->reason ? ": " : "",
                 row->reason ? row->reason : "");
    else if (isfinite(compare_cost(c, row)))
        snprintf(buf, size, "%.2f %s", compare_cost(c, row) * scale, unit);
    else if (compare_timed(row))
        snprintf(buf, size, "ok, no energy");
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
            compare_time_text(c, cfg->base_row, tb, sizeof tb),
            compare_time_text(c, cfg->new_row, tn, sizeof tn),
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
    int searched = compare_search(c, 0) || compare_search(c, 1);
    for (size_t i = 0; i < c->n_configs; i++) {
        compare_verdict v = c->configs[i].verdict;
        if (searched && (v == COMPARE_ONLY_BASE || v == COMPARE_ONLY_NEW))
            continue; /* not measured by a search: no mismatch */
        if (pick(&c->configs[i]))
            idx[n++] = i;
    }
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
    if (k->unranked_configs)
        fprintf(f,
                "%zu configurations ok in both runs have no energy per call in one of them: they "
                "cannot be compared by %s (unknown).\n\n",
                k->unranked_configs, objective_name(c->objective));
    if (!isnan(c->change_median))
        fprintf(f,
                "Change of the %s, configurations ok in both: median %s, from %s to "
                "%s; %zu significantly %s by more than the threshold.\n",
                c->objective == OBJECTIVE_TIME ? "median times" : objective_name(c->objective),
                compare_pct(c->change_median, 1, m, sizeof m),
                compare_pct(c->change_min, 1, a, sizeof a),
                compare_pct(c->change_max, 1, b, sizeof b), k->improved,
                c->objective == OBJECTIVE_TIME ? "faster" : "cheaper");
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
    if (k->unranked_shapes)
        fprintf(f,
                "%zu shapes have ok rows in both runs but no energy per call in one of them: "
                "their best cannot be chosen by %s (unknown).\n\n",
                k->unranked_shapes, objective_name(c->objective));
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
        if (s->winner_changed && isfinite(compare_cost(c, s->old_winner_new))) {
            char p[32];
            snprintf(loss, sizeof loss, "%s%s", compare_pct(s->old_winner_loss, 1, p, sizeof p),
                     s->loss_significant ? "" : " (within noise)");
        } else if (s->winner_changed) {
            compare_time_text(c, s->old_winner_new, loss, sizeof loss);
        }
        fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s |\n",
                compare_shape_name(c, s, name, sizeof name),
                s->best_base ? compare_time_text(c, s->best_base, tb, sizeof tb) : "-",
                s->best_new ? compare_time_text(c, s->best_new, tn, sizeof tn) : "-",
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
    fprintf(f, "- threshold: %s\n", thr);
    if (c->objective != OBJECTIVE_TIME)
        fprintf(f, "- objective: %s (%s per call): each change below is of that cost, \"faster\" "
                   "is cheaper and \"slower\" dearer\n",
                objective_name(c->objective), objective_unit(c->objective));
    fprintf(f, "\n");
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
            "A change counts only when |NEW - BASE| / BASE of the %s exceeds the "
            "noise (stdev / median) of both rows; a regression is a change that counts and is "
            "slower by more than %s, or a configuration or shape that ran ok in BASE and not "
            "in NEW (docs/compare.md).\n\n",
            (const char *[]){"median times", "energies per call",
                             "energy-delay products"}[c->objective],
            thr);
    if (compare_search(c, 0) || compare_search(c, 1))
        fprintf(f,
                "Searched runs (BASE: %s; NEW: %s): a configuration measured in one run only is "
                "no mismatch (counted as only in BASE / NEW, not listed); winners per shape are "
                "compared as usual.\n\n",
                compare_search(c, 0) ? compare_search(c, 0) : "exhaustive",
                compare_search(c, 1) ? compare_search(c, 1) : "exhaustive");
    compare_write_env(c, f);
    fprintf(f, "\n");
    compare_write_constants(c, f);
    fprintf(f, "\n");
    compare_write_configs(c, f);
    compare_write_shapes(c, f);
    compare_write_heuristics(c, f);
}

/* ---- JSON ---- */

/* {axis: value} of the shape, or {param: value} of the parameters (null for a baseline). */
static json_t *compare_values_json(const result_row *row, int params)
{
    if (params && !compare_is_tuned(row))
        return json_null();
    json_t *o = json_object();
    size_t from = params ? row->n_axes : 0, to = params ? row->values.n : row->n_axes;
    for (size_t i = from; i < to; i++)
        json_object_set_new(o, row->values.names[i], outfile_json_value(row->values.vals[i]));
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

/* The row's cost in the objective's unit (objective_unit), null without one. */
static json_t *compare_cost_json(const compare *c, const result_row *row)
{
    return outfile_json_number(compare_cost(c, row));
}

static json_t *compare_config_json(const compare *c, const compare_config *cfg)
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
    json_object_set_new(o, "cost_base", compare_cost_json(c, cfg->base_row));
    json_object_set_new(o, "cost_new", compare_cost_json(c, cfg->new_row));
    json_object_set_new(o, "change", outfile_json_number(cfg->change));
    json_object_set_new(o, "noise_base", outfile_json_number(cfg->noise_base));
    json_object_set_new(o, "noise_new", outfile_json_number(cfg->noise_new));
    const char *reason = cfg->new_row && cfg->new_row->reason ? cfg->new_row->reason : NULL;
    json_object_set_new(o, "reason_new", reason ? json_string(reason) : json_null());
    return o;
}

static json_t *compare_best_json(const compare *c, const result_row *row)
{
    if (!row)
        return json_null();
    return json_pack("{s:s, s:o, s:o, s:o, s:o}", "method", row->method, "params",
                     compare_values_json(row, 1), "time_us", compare_us(row), "cost",
                     compare_cost_json(c, row), "noise",
                     outfile_json_number(compare_row_noise(row)));
}

static json_t *compare_shape_json(const compare *c, const compare_shape *s)
{
    json_t *o = json_object();
    const result_row *row = s->any_row;
    json_object_set_new(o, "op", row->op ? json_string(row->op) : json_null());
    json_object_set_new(o, "shape", compare_values_json(row, 0));
    json_object_set_new(o, "verdict", json_string(compare_verdict_str(s->verdict)));
    json_object_set_new(o, "best_base", compare_best_json(c, s->best_base));
    json_object_set_new(o, "best_new", compare_best_json(c, s->best_new));
    json_object_set_new(o, "unranked", json_boolean(s->unranked));
    json_object_set_new(o, "change", outfile_json_number(s->change));
    json_object_set_new(o, "noise_base", outfile_json_number(s->noise_base));
    json_object_set_new(o, "noise_new", outfile_json_number(s->noise_new));
    json_object_set_new(o, "winner_changed", json_boolean(s->winner_changed));
    json_object_set_new(o, "old_winner_status_new", compare_status_json(s->old_winner_new));
    json_object_set_new(o, "old_winner_time_new_us", compare_us(s->old_winner_new));
    json_object_set_new(o, "old_winner_loss", outfile_json_number(s->old_winner_loss));
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
    json_object_set_new(o, "base_efficiency", outfile_json_number(h->base_eff));
    json_object_set_new(o, "base_efficiency_on_new", outfile_json_number(h->base_eff_new));
    json_object_set_new(o, "new_efficiency", outfile_json_number(h->new_eff));
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
        json_object_set_new(o, compare_verdict_str((compare_verdict)v), json_integer((json_int_t)counts[v]));
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
    json_object_set_new(o, "objective", json_string(objective_name(c->objective)));
    json_object_set_new(o, "cost_unit", json_string(objective_unit(c->objective)));
    json_object_set_new(o, "search",
                        json_pack("{s:s?, s:s?}", "base", compare_search(c, 0), "new",
                                  compare_search(c, 1)));
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
    json_object_set_new(counts, "unranked_configs", json_integer((json_int_t)k->unranked_configs));
    json_object_set_new(counts, "unranked_shapes", json_integer((json_int_t)k->unranked_shapes));
    json_object_set_new(counts, "change_median", outfile_json_number(c->change_median));
    json_object_set_new(counts, "change_min", outfile_json_number(c->change_min));
    json_object_set_new(counts, "change_max", outfile_json_number(c->change_max));
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
        json_array_append_new(configs, compare_config_json(c, &c->configs[i]));
    for (size_t i = 0; i < c->n_shapes; i++)
        json_array_append_new(shapes, compare_shape_json(c, &c->shapes[i]));
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
    tune_status st = outfile_mkdirs(dir, err);
    if (st != TUNE_OK)
        return st;
    outfile_set *set = outfile_set_new(); /* both files or neither */
    if (!set)
        return tune_error_set(err, TUNE_ERR_NOMEM, dir, "out of host memory");
    snprintf(path, sizeof path, "%s/compare.md", dir);
    FILE *f = outfile_set_open(set, path, err);
    if (!f) {
        outfile_set_abort(set);
        return TUNE_ERR_IO;
    }
    compare_write_markdown(c, f);
    snprintf(path, sizeof path, "%s/compare.json", dir);
    json_t *j = compare_to_json(c);
    st = outfile_set_json(set, path, j, JSON_INDENT(1) | JSON_PRESERVE_ORDER, err);
    json_decref(j);
    if (st != TUNE_OK) {
        outfile_set_abort(set);
        return st;
    }
    return outfile_set_commit(set, err);
}
