/* replay_output.c - the replay's figures summarised, printed and written. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "analysis/replay_impl.h"
#include "core/clock.h"
#include "core/outfile.h"
#include "store/folder.h"
#include "store/meta.h"
#include "tune_git_rev.h"

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

double replay_median(double *v, size_t n)
{
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void replay_shape_figures(const replay *r, const replay_folder *F, size_t shape, size_t strategy,
                          double *e1, double *e3, double *median_at, double *mean_at)
{
    size_t S = r->opt.seeds, B = r->opt.n_budgets;
    double *v = malloc(S * sizeof *v), *w = malloc(S * sizeof *w);
    if (!v || !w) {
        free(v), free(w);
        *e1 = *e3 = NAN;
        for (size_t b = 0; b < B; b++)
            median_at[b] = mean_at[b] = NAN;
        return;
    }
    for (size_t k = 0; k < S; k++) {
        v[k] = F->evals_1pct[replay_slot(r, shape, strategy, k)];
        w[k] = F->evals_3pct[replay_slot(r, shape, strategy, k)];
    }
    *e1 = replay_median(v, S);
    *e3 = replay_median(w, S);
    for (size_t b = 0; b < B; b++) {
        double sum = 0;
        for (size_t k = 0; k < S; k++) {
            v[k] = F->at_budget[replay_slot(r, shape, strategy, k) * B + b];
            sum += v[k];
        }
        mean_at[b] = sum / (double)S;
        median_at[b] = replay_median(v, S);
    }
    free(v), free(w);
}

/* The strategy's name with its scope (one of REPLAY_MAX_STRATEGIES buffers, one per strategy). */
static const char *sname(const replay *r, size_t k)
{
    static char names[REPLAY_MAX_STRATEGIES][32];
    return replay_strategy_name(&r->opt, k, names[k], sizeof names[k]);
}

size_t replay_n_folders(const replay *r) { return r->n_folders; }
size_t replay_n_shapes(const replay *r, size_t folder) { return r->folders[folder].n_counted; }
size_t replay_n_candidates(const replay *r, size_t folder) { return r->folders[folder].n_cands; }

static size_t random_index(const replay *r)
{
    for (size_t k = 0; k < r->opt.n_strategies; k++)
        if (r->opt.strategies[k] == SEARCH_RANDOM)
            return k;
    return SIZE_MAX;
}

/* Shapes within 3 % of their best per seed with each budget (median and worst seed), and the
 * most evaluations of a run with the budget. */
static void summarize_seeds(const replay *r, const replay_folder *F, size_t strategy,
                            replay_summary *out)
{
    size_t S = r->opt.seeds, B = r->opt.n_budgets;
    double *w = malloc(S * sizeof *w);
    for (size_t b = 0; w && b < B; b++) {
        for (size_t k = 0; k < S; k++)
            w[k] = F->all_cost > 0 ? F->run_cost[(strategy * S + k) * (B + 1) + b] / F->all_cost
                                   : NAN;
        out->gpu_time[b] = replay_median(w, S);
        for (size_t k = 0; k < S; k++)
            w[k] = F->n_measured ? (double)(F->n_base + F->evaluated[(strategy * S + k) * (B + 1) +
                                                                     b]) /
                                       (double)F->n_measured
                                 : NAN;
        out->configs[b] = replay_median(w, S);
        for (size_t k = 0; k < S; k++)
            w[k] = F->n_kernels ? (double)F->run_kernels[(strategy * S + k) * (B + 1) + b] /
                                      (double)F->n_kernels
                                : NAN;
        out->kernels[b] = replay_median(w, S);
        out->within3_worst[b] = SIZE_MAX;
        out->evaluated[b] = 0;
        for (size_t k = 0; k < S; k++) {
            size_t in = 0, run = (strategy * S + k) * (B + 1) + b;
            for (size_t s = 0; s < F->n_shapes; s++)
                in += !isnan(F->shapes[s].best) &&
                      F->at_budget[replay_slot(r, s, strategy, k) * B + b] >= 1 / 1.03 - 1e-12;
            w[k] = (double)in;
            out->within3_worst[b] = in < out->within3_worst[b] ? in : out->within3_worst[b];
            double e = F->n_cands ? (double)F->evaluated[run] / (double)F->n_cands : NAN;
            out->evaluated[b] = e > out->evaluated[b] ? e : out->evaluated[b];
        }
        out->within3_median[b] = replay_median(w, S);
    }
    free(w);
}

void replay_summarize(const replay *r, size_t folder, size_t strategy, replay_summary *out)
{
    const replay_folder *F = &r->folders[folder];
    size_t n = F->n_shapes ? F->n_shapes : 1, B = r->opt.n_budgets, m = 0, rnd = random_index(r);
    double *e1 = malloc(n * sizeof *e1), *e3 = malloc(n * sizeof *e3);
    double *f1 = malloc(n * sizeof *f1), *f3 = malloc(n * sizeof *f3);
    double *at = malloc(n * B * sizeof *at);
    size_t wins[REPLAY_MAX_BUDGETS] = {0};
    memset(out, 0, sizeof *out);
    for (size_t s = 0; e1 && e3 && f1 && f3 && at && s < F->n_shapes; s++) {
        if (isnan(F->shapes[s].best))
            continue;
        double med[REPLAY_MAX_BUDGETS], mean[REPLAY_MAX_BUDGETS], x1, x3;
        double rmed[REPLAY_MAX_BUDGETS], rmean[REPLAY_MAX_BUDGETS];
        replay_shape_figures(r, F, s, strategy, &e1[m], &e3[m], med, mean);
        f1[m] = e1[m] / (double)F->shapes[s].n_cands;
        f3[m] = e3[m] / (double)F->shapes[s].n_cands;
        if (rnd != SIZE_MAX)
            replay_shape_figures(r, F, s, rnd, &x1, &x3, rmed, rmean);
        for (size_t b = 0; b < B; b++) {
            at[b * n + m] = med[b];
            wins[b] += rnd != SIZE_MAX && mean[b] >= rmean[b] - 1e-12;
        }
        m++;
    }
    out->evals_1pct = replay_median(e1, e1 ? m : 0);
    out->evals_3pct = replay_median(e3, e3 ? m : 0);
    out->evals_1pct_frac = replay_median(f1, f1 ? m : 0);
    out->evals_3pct_frac = replay_median(f3, f3 ? m : 0);
    for (size_t b = 0; b < B; b++)
        for (size_t k = 0; k < r->opt.seeds; k++) {
            size_t v = F->rounds[(strategy * r->opt.seeds + k) * (B + 1) + b];
            out->rounds[b] = v > out->rounds[b] ? v : out->rounds[b];
        }
    for (size_t b = 0; b < B; b++) {
        out->at_budget[b] = at ? replay_median(at + b * n, m) : NAN;
        out->vs_random[b] = rnd == SIZE_MAX || m == 0 ? NAN : (double)wins[b] / (double)m;
    }
    free(e1), free(e3), free(f1), free(f3), free(at);
    summarize_seeds(r, F, strategy, out);
}

static const char *folder_title(const replay_folder *F)
{
    return F->sweep ? F->sweep : F->dir;
}

/* Folder i's shapes within 3 % per seed, and the evaluations, per budget. */
static void write_folder_within(const replay *r, size_t i, FILE *f)
{
    const replay_folder *F = &r->folders[i];
    size_t B = r->opt.n_budgets;
    fprintf(f, "| strategy |");
    for (size_t b = 0; b < B; b++)
        fprintf(f, " shapes within 3 %% at %.4g %%: median / worst seed |", 100 * r->opt.budgets[b]);
    for (size_t b = 0; b < B; b++)
        fprintf(f, " evaluations at %.4g %% |", 100 * r->opt.budgets[b]);
    fprintf(f, "\n|---|");
    for (size_t b = 0; b < 2 * B; b++)
        fprintf(f, "---:|");
    fprintf(f, "\n");
    for (size_t k = 0; k < r->opt.n_strategies; k++) {
        replay_summary sm;
        replay_summarize(r, i, k, &sm);
        fprintf(f, "| %s |", sname(r, k));
        for (size_t b = 0; b < B; b++)
            fprintf(f, " %.1f / %zu of %zu |", sm.within3_median[b], sm.within3_worst[b],
                    F->n_counted);
        for (size_t b = 0; b < B; b++)
            fprintf(f, " %.1f %% |", 100 * sm.evaluated[b]);
        fprintf(f, "\n");
    }
    fprintf(f, "\nCost against the exhaustive run (medians over the seeds; the baselines' rows "
               "included): GPU time of the rows measured / configurations measured / kernels of "
               "the candidates measured.\n\n| strategy |");
    for (size_t b = 0; b < B; b++)
        fprintf(f, " at %.4g %% |", 100 * r->opt.budgets[b]);
    fprintf(f, "\n|---|");
    for (size_t b = 0; b < B; b++)
        fprintf(f, "---:|");
    fprintf(f, "\n");
    for (size_t k = 0; k < r->opt.n_strategies; k++) {
        replay_summary sm;
        replay_summarize(r, i, k, &sm);
        fprintf(f, "| %s |", sname(r, k));
        for (size_t b = 0; b < B; b++)
            fprintf(f, " %.1f / %.1f / %.1f %% |", 100 * sm.gpu_time[b], 100 * sm.configs[b],
                    100 * sm.kernels[b]);
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
}

/* The summary table of folder i. */
static void write_folder_table(const replay *r, size_t i, FILE *f)
{
    const replay_folder *F = &r->folders[i];
    size_t lo = SIZE_MAX, hi = 0;
    for (size_t s = 0; s < F->n_shapes; s++) {
        lo = F->shapes[s].n_cands < lo ? F->shapes[s].n_cands : lo;
        hi = F->shapes[s].n_cands > hi ? F->shapes[s].n_cands : hi;
    }
    fprintf(f, "## %s (%s)\n\n", folder_title(F), F->dir);
    fprintf(f, "%zu shapes (%zu without a configuration that ran ok, left out), %zu candidates "
               "(%zu to %zu per shape), device %s, %zu seeds.\n\n",
            F->n_shapes, F->n_shapes - F->n_counted, F->n_cands, lo == SIZE_MAX ? 0 : lo, hi,
            F->device ? F->device : "unknown", r->opt.seeds);
    for (size_t p = 0; p < r->n_priors; p++)
        fprintf(f, "%s%s%s", p ? ", " : "Priors (every search's warm start): ", r->priors[p].dir,
                p + 1 == r->n_priors ? ".\n\n" : "");
    for (size_t k = 0; k < r->n_rules; k++)
        fprintf(f, "%s`%s`%s", k ? ", " : "Rules (preferred in each shape's first round): ",
                r->rules[k].text, k + 1 == r->n_rules ? ".\n\n" : "");
    for (size_t k = 0; k < F->n_derived; k++)
        fprintf(f, "%s`%s`%s", k ? ", " : "Derived features: ", F->derived[k].text,
                k + 1 == F->n_derived ? ".\n\n" : "");
    fprintf(f, "| strategy | evaluations to 1 %% | evaluations to 3 %% |");
    for (size_t b = 0; b < r->opt.n_budgets; b++)
        fprintf(f, " best at %.4g %% |", 100 * r->opt.budgets[b]);
    for (size_t b = 0; b < r->opt.n_budgets && random_index(r) != SIZE_MAX; b++)
        fprintf(f, " >= random at %.4g %% |", 100 * r->opt.budgets[b]);
    fprintf(f, " rounds at");
    for (size_t b = 0; b < r->opt.n_budgets; b++)
        fprintf(f, "%s%.4g", b ? "/" : " ", 100 * r->opt.budgets[b]);
    fprintf(f, " %% |\n|---|---:|---:|");
    for (size_t b = 0; b < r->opt.n_budgets * (random_index(r) != SIZE_MAX ? 2 : 1) + 1; b++)
        fprintf(f, "---:|");
    fprintf(f, "\n");
    for (size_t k = 0; k < r->opt.n_strategies; k++) {
        replay_summary sm;
        replay_summarize(r, i, k, &sm);
        fprintf(f, "| %s | %.1f (%.1f %%) | %.1f (%.1f %%) |",
                sname(r, k), sm.evals_1pct,
                100 * sm.evals_1pct_frac, sm.evals_3pct, 100 * sm.evals_3pct_frac);
        for (size_t b = 0; b < r->opt.n_budgets; b++)
            fprintf(f, " %.1f %% |", 100 * sm.at_budget[b]);
        for (size_t b = 0; b < r->opt.n_budgets && random_index(r) != SIZE_MAX; b++)
            fprintf(f, " %.0f %% |", 100 * sm.vs_random[b]);
        for (size_t b = 0; b < r->opt.n_budgets; b++)
            fprintf(f, "%s%zu", b ? "/" : " ", sm.rounds[b]);
        fprintf(f, " |\n");
    }
    fprintf(f, "\n");
    write_folder_within(r, i, f);
}

void replay_write_table(const replay *r, FILE *f)
{
    for (size_t i = 0; i < r->n_folders; i++)
        write_folder_table(r, i, f);
}

static const char legend[] =
    "Evaluations to 1 % (3 %): per shape, the median over the seeds of the evaluations a search "
    "with the whole shape as its budget needed until its best time was within 1 % (3 %) of the "
    "shape's best; then the median over the shapes, as a count and as a share of the shape's "
    "candidates. Best at B %: per shape, the median over the seeds of best time / best time found "
    "by a search with a budget of B % of the shape's candidates; then the median over the shapes. "
    ">= random at B %: the share of the shapes where the strategy's mean over the seeds of that "
    "fraction is at least random search's. Rounds: the most rounds a search with the budget took "
    "(over the seeds); in a run each round starts the GPU workers.\n\n";

static void write_md_shapes(const replay *r, const replay_folder *F, FILE *f)
{
    size_t B = r->opt.n_budgets;
    fprintf(f, "### %s: per shape\n\n| shape | candidates | best (us) |", folder_title(F));
    for (size_t k = 0; k < r->opt.n_strategies; k++) {
        const char *name = sname(r, k);
        fprintf(f, " %s: to 1 %% | %s: to 3 %% |", name, name);
        for (size_t b = 0; b < B; b++)
            fprintf(f, " %s: at %.4g %% |", name, 100 * r->opt.budgets[b]);
    }
    fprintf(f, "\n|---|---:|---:|");
    for (size_t k = 0; k < r->opt.n_strategies * (2 + B); k++)
        fprintf(f, "---:|");
    fprintf(f, "\n");
    for (size_t s = 0; s < F->n_shapes; s++) {
        const replay_shape *sh = &F->shapes[s];
        fprintf(f, "| %s | %zu | ", sh->name, sh->n_cands);
        if (isnan(sh->best)) {
            fprintf(f, "none ran ok |\n");
            continue;
        }
        fprintf(f, "%.2f |", sh->best * 1e6);
        for (size_t k = 0; k < r->opt.n_strategies; k++) {
            double e1, e3, med[REPLAY_MAX_BUDGETS], mean[REPLAY_MAX_BUDGETS];
            replay_shape_figures(r, F, s, k, &e1, &e3, med, mean);
            fprintf(f, " %.1f | %.1f |", e1, e3);
            for (size_t b = 0; b < B; b++)
                fprintf(f, " %.1f %% |", 100 * med[b]);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
}

static tune_status write_md(const replay *r, const char *path, outfile_set *set,
                            tune_error *err)
{
    FILE *f = outfile_set_open(set, path, err);
    if (!f)
        return TUNE_ERR_IO;
    fprintf(f, "# Search replay\n\n");
    fputs(legend, f);
    replay_write_table(r, f);
    for (size_t i = 0; i < r->n_folders; i++)
        write_md_shapes(r, &r->folders[i], f);
    return TUNE_OK;
}

/* replay.csv: per folder, shape, strategy and seed, the full run's evaluations where the best so
 * far improved, and its last: the ratio best so far / best holds until the next row. */
static tune_status write_csv(const replay *r, const char *path, outfile_set *set,
                             tune_error *err)
{
    FILE *f = outfile_set_open(set, path, err);
    if (!f)
        return TUNE_ERR_IO;
    fprintf(f, "sweep,folder,shape,candidates,strategy,seed,evaluations,best_ratio\n");
    for (size_t i = 0; i < r->n_folders; i++) {
        const replay_folder *F = &r->folders[i];
        for (size_t s = 0; s < F->n_shapes; s++) {
            const replay_shape *sh = &F->shapes[s];
            for (size_t k = 0; !isnan(sh->best) && k < r->opt.n_strategies; k++)
                for (size_t seed = 0; seed < r->opt.seeds; seed++) {
                    const uint32_t *ord =
                        F->order + (k * r->opt.seeds + seed) * F->n_cands + F->offset[s];
                    double best = INFINITY;
                    for (size_t e = 0; e < sh->n_cands; e++) {
                        double v = F->values[ord[e]];
                        int better = !isnan(v) && v < best;
                        if (better)
                            best = v;
                        if (better || e + 1 == sh->n_cands)
                            fprintf(f, "%s,%s,\"%s\",%zu,%s,%zu,%zu,%.6g\n", folder_title(F),
                                    F->dir, sh->name, sh->n_cands,
                                    sname(r, k), seed + 1, e + 1,
                                    isfinite(best) ? best / sh->best : INFINITY);
                    }
                }
        }
    }
    return TUNE_OK;
}

static json_t *budgets_json(const replay *r, const double *v)
{
    json_t *a = json_array();
    for (size_t b = 0; b < r->opt.n_budgets; b++)
        json_array_append_new(a, outfile_json_number(v[b]));
    return a;
}

static json_t *summary_json(const replay *r, size_t i, size_t k)
{
    replay_summary sm;
    replay_summarize(r, i, k, &sm);
    double rounds[REPLAY_MAX_BUDGETS];
    for (size_t b = 0; b < r->opt.n_budgets; b++)
        rounds[b] = (double)sm.rounds[b];
    double med[REPLAY_MAX_BUDGETS], worst[REPLAY_MAX_BUDGETS];
    for (size_t b = 0; b < r->opt.n_budgets; b++) {
        med[b] = sm.within3_median[b];
        worst[b] = (double)sm.within3_worst[b];
    }
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
                     "gpu_time_fraction", budgets_json(r, sm.gpu_time), "configs_fraction",
                     budgets_json(r, sm.configs), "kernels_fraction", budgets_json(r, sm.kernels),
                     "shapes_within_3pct_median_seed", budgets_json(r, med),
                     "shapes_within_3pct_worst_seed", budgets_json(r, worst),
                     "evaluated_fraction_max", budgets_json(r, sm.evaluated), "rounds_at_budget",
                     budgets_json(r, rounds), "evals_1pct", outfile_json_number(sm.evals_1pct),
                     "evals_3pct", outfile_json_number(sm.evals_3pct), "evals_1pct_fraction",
                     outfile_json_number(sm.evals_1pct_frac), "evals_3pct_fraction",
                     outfile_json_number(sm.evals_3pct_frac), "best_at_budget",
                     budgets_json(r, sm.at_budget), "at_least_random_share",
                     budgets_json(r, sm.vs_random));
}

static json_t *shape_json(const replay *r, const replay_folder *F, size_t s)
{
    const replay_shape *sh = &F->shapes[s];
    json_t *strat = json_object();
    for (size_t k = 0; !isnan(sh->best) && k < r->opt.n_strategies; k++) {
        double e1, e3, med[REPLAY_MAX_BUDGETS], mean[REPLAY_MAX_BUDGETS];
        replay_shape_figures(r, F, s, k, &e1, &e3, med, mean);
        json_object_set_new(strat, sname(r, k),
                            json_pack("{s:o, s:o, s:o, s:o}", "evals_1pct", outfile_json_number(e1),
                                      "evals_3pct", outfile_json_number(e3), "best_at_budget_median",
                                      budgets_json(r, med), "best_at_budget_mean",
                                      budgets_json(r, mean)));
    }
    return json_pack("{s:s, s:I, s:o, s:o}", "shape", sh->name, "candidates",
                     (json_int_t)sh->n_cands, "best_s", outfile_json_number(sh->best), "strategies",
                     strat);
}

static json_t *replay_json(const replay *r)
{
    json_t *folders = json_array();
    for (size_t i = 0; i < r->n_folders; i++) {
        const replay_folder *F = &r->folders[i];
        json_t *summary = json_object(), *shapes = json_array();
        for (size_t k = 0; k < r->opt.n_strategies; k++)
            json_object_set_new(summary, sname(r, k),
                                summary_json(r, i, k));
        for (size_t s = 0; s < F->n_shapes; s++)
            json_array_append_new(shapes, shape_json(r, F, s));
        json_array_append_new(
            folders, json_pack("{s:s, s:s?, s:s?, s:I, s:I, s:I, s:o, s:o}", "folder", F->dir,
                               "sweep", F->sweep, "device", F->device, "shapes",
                               (json_int_t)F->n_shapes, "shapes_counted",
                               (json_int_t)F->n_counted, "candidates", (json_int_t)F->n_cands,
                               "summary", summary, "per_shape", shapes));
    }
    json_t *strategies = json_array();
    for (size_t k = 0; k < r->opt.n_strategies; k++)
        json_array_append_new(strategies, json_string(sname(r, k)));
    double pct[REPLAY_MAX_BUDGETS];
    for (size_t b = 0; b < r->opt.n_budgets; b++)
        pct[b] = 100 * r->opt.budgets[b];
    return json_pack("{s:o, s:I, s:o, s:o}", "strategies", strategies, "seeds",
                     (json_int_t)r->opt.seeds, "budgets_pct", budgets_json(r, pct), "folders",
                     folders);
}

static json_t *meta_json(const replay *r, int argc, char **argv)
{
    char now[32];
    clock_utc(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ");
    json_t *args = json_array(), *folders = json_array(), *strategies = json_array();
    for (int i = 0; i < argc; i++)
        json_array_append_new(args, json_string(argv[i]));
    for (size_t i = 0; i < r->n_folders; i++) {
        const replay_folder *F = &r->folders[i];
        json_t *feats = json_object();
        for (size_t d = 0; d < F->n_derived; d++) {
            char *e = expr_to_string(F->derived[d].e);
            json_object_set_new(feats, F->derived[d].name, e ? json_string(e) : json_null());
            free(e);
        }
        json_array_append_new(folders, json_pack("{s:s, s:s?, s:s?, s:s?, s:o}", "folder",
                                                 F->dir, "sweep", F->sweep, "device", F->device,
                                                 "git_rev", F->git_rev, "features", feats));
    }
    for (size_t k = 0; k < r->opt.n_strategies; k++)
        json_array_append_new(strategies, json_string(sname(r, k)));
    json_t *priors = json_array(), *rules = json_array();
    for (size_t i = 0; i < r->n_priors; i++) {
        const replay_folder *P = &r->priors[i];
        json_array_append_new(priors, json_pack("{s:s, s:s?, s:s?, s:s?}", "folder", P->dir,
                                                "sweep", P->sweep, "device", P->device,
                                                "git_rev", P->git_rev));
    }
    for (size_t i = 0; i < r->n_rules; i++)
        json_array_append_new(rules, json_string(r->rules[i].text));
    double pct[REPLAY_MAX_BUDGETS];
    for (size_t b = 0; b < r->opt.n_budgets; b++)
        pct[b] = 100 * r->opt.budgets[b];
    return json_pack("{s:o, s:s, s:o, s:o, s:o, s:[I, I], s:o, s:o, s:o}", "tool",
                     meta_tool_json(), "created", now, "argv", args, "replayed", folders, "strategies", strategies, "seeds",
                     (json_int_t)1, (json_int_t)r->opt.seeds, "budgets_pct", budgets_json(r, pct),
                     "priors", priors, "rules", rules);
}

tune_status replay_write_files(const replay *r, const char *out, int argc, char **argv,
                               tune_error *err)
{
    char path[PATH_MAX];
    for (size_t i = 0; i < r->n_folders; i++) {
        if (outfile_dir_within(out, r->folders[i].dir))
            return tune_error_set(err, TUNE_ERR_INVALID, out,
                                  "is inside %s, a folder replayed (read-only): choose another "
                                  "--out", r->folders[i].dir);
    }
    tune_status st = outfile_mkdirs(out, err);
    outfile_set *set = st == TUNE_OK ? outfile_set_new() : NULL; /* the four files or none */
    if (st == TUNE_OK && !set)
        st = tune_error_set(err, TUNE_ERR_NOMEM, out, "out of host memory");
    snprintf(path, sizeof path, "%s/replay.md", out);
    if (st == TUNE_OK)
        st = write_md(r, path, set, err);
    snprintf(path, sizeof path, "%s/replay.csv", out);
    if (st == TUNE_OK)
        st = write_csv(r, path, set, err);
    json_t *j = st == TUNE_OK ? replay_json(r) : NULL;
    snprintf(path, sizeof path, "%s/replay.json", out);
    if (st == TUNE_OK)
        st = outfile_set_json(set, path, j, JSON_INDENT(2) | JSON_PRESERVE_ORDER, err);
    json_decref(j);
    j = st == TUNE_OK ? meta_json(r, argc, argv) : NULL;
    snprintf(path, sizeof path, "%s/meta.json", out);
    if (st == TUNE_OK)
        st = outfile_set_json(set, path, j, JSON_INDENT(2) | JSON_PRESERVE_ORDER, err);
    json_decref(j);
    if (st == TUNE_OK)
        return outfile_set_commit(set, err);
    outfile_set_abort(set);
    return st;
}
