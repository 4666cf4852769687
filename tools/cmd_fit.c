/* tune fit: fit a heuristic for one parameter over the problem axes, or evaluate a given rule.
 *
 *   tune fit RESULTS_DIR... --param chunk [--target 0.98] [--method custom] [--out DIR]
 *            [--header FILE] [--objective time|energy|edp] [--no-loo] [--quiet]
 *   tune fit RESULTS_DIR... --param chunk --rule "min(64, 8192 / k)" [--out DIR] [--header FILE]
 *
 * Fitting prints a Markdown summary and writes DIR/heuristics.json and DIR/heuristic_<param>.h
 * (DIR defaults to the first results folder; --header FILE replaces the header's path). With
 * --rule it only evaluates the rule; it writes DIR/heuristic_eval_<param>.json only when --out is
 * given, and a header only with --header.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/fit.h"
#include "core/outfile.h"
#include "cli.h"

int tune_cmd_fit(int argc, char **argv);

static const char fit_usage[] =
    "usage: tune fit RESULTS_DIR... --param NAME [--target 0.98] [--method NAME] [--out DIR]\n"
    "                [--header FILE] [--objective time|energy|edp] [--no-loo] [--quiet]\n"
    "       tune fit RESULTS_DIR... --param NAME --rule EXPR [--method NAME] [--out DIR]\n"
    "                [--header FILE] [--objective time|energy|edp]\n"
    "Fits the simplest rule for the parameter over the problem axes whose efficiency (geometric\n"
    "mean over shapes of best cost / cost of the rule's value) reaches the target, or evaluates\n"
    "the rule given with --rule. The cost is the objective's: the median time (default), the\n"
    "energy per call or the energy-delay product (rows without energy cannot be ranked by\n"
    "energy). Prints the tables; writes heuristics.json and heuristic_NAME.h into --out DIR\n"
    "when given (the results folders read are never written).\n";

typedef struct {
    const char *dirs[256];
    size_t n_dirs;
    const char *param, *method, *rule, *out, *header;
    double target;
    tune_objective objective;
    int no_loo, quiet;
} fit_cli;

static int fit_parse(int argc, char **argv, fit_cli *c)
{
    memset(c, 0, sizeof *c);
    c->target = 0.98;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(fit_usage, stdout);
            return 1;
        }
        if (strcmp(a, "--no-loo") == 0) {
            c->no_loo = 1;
            continue;
        }
        if (strcmp(a, "--quiet") == 0) {
            c->quiet = 1;
            continue;
        }
        if (a[0] != '-') {
            if (c->n_dirs == sizeof c->dirs / sizeof c->dirs[0])
                return fprintf(stderr, "tune fit: too many results folders\n"), -1;
            c->dirs[c->n_dirs++] = a;
            continue;
        }
        static const char *const with_value[] = {"--param",  "--method", "--rule",   "--out",
                                                 "--header", "--target", "--objective"};
        int known = 0;
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++)
            known |= strcmp(a, with_value[k]) == 0;
        if (!known)
            return fprintf(stderr, "tune fit: unknown option %s\n%s", a, fit_usage), -1;
        if (!val)
            return fprintf(stderr, "tune fit: option %s needs a value\n%s", a, fit_usage), -1;
        i++;
        if (strcmp(a, "--param") == 0) {
            c->param = val;
        } else if (strcmp(a, "--method") == 0) {
            c->method = val;
        } else if (strcmp(a, "--rule") == 0) {
            c->rule = val;
        } else if (strcmp(a, "--out") == 0 || strcmp(a, "--header") == 0) {
            if (cli_path("fit", a, val) != 0)
                return -1;
            *(a[2] == 'o' ? &c->out : &c->header) = val;
        } else if (strcmp(a, "--objective") == 0) {
            if (objective_parse(val, &c->objective) != 0)
                return fprintf(stderr,
                               "tune fit: --objective: expected time, energy or edp, got '%s'\n",
                               val),
                       -1;
        } else if (strcmp(a, "--target") == 0) {
            if (cli_double("fit", a, val, 0, 1, 1, NULL, &c->target) != 0)
                return -1;
        } else {
            return fprintf(stderr, "tune fit: unknown option %s\n%s", a, fit_usage), -1;
        }
    }
    if (!c->n_dirs)
        return fprintf(stderr, "tune fit: name at least one results folder\n%s", fit_usage), -1;
    if (!c->param)
        return fprintf(stderr, "tune fit: --param is required\n%s", fit_usage), -1;
    if ((c->out && cli_out_apart("fit", "--out", c->out, c->dirs, c->n_dirs, 0) != 0) ||
        (c->header && cli_out_apart("fit", "--header", c->header, c->dirs, c->n_dirs, 1) != 0))
        return -1;
    return 0;
}

static int fit_fail(const tune_error *err)
{
    char buf[4096];
    fprintf(stderr, "tune fit: %s\n", tune_error_text(err, buf, sizeof buf));
    return EXIT_FAILURE;
}

/* The files of a fit (heuristics.json and the header) are written together or not at all. */
static tune_status write_json(json_t *j, const char *path, outfile_set *set, tune_error *err)
{
    tune_status st = outfile_set_json(set, path, j, JSON_INDENT(2) | JSON_PRESERVE_ORDER, err);
    json_decref(j);
    return st;
}

static tune_status write_header_file(const fit_data *d, const char *rule, const char *comment,
                                     const char *path, outfile_set *set, tune_error *err)
{
    FILE *f = outfile_set_open(set, path, err);
    return f ? fit_write_header(d, rule, comment, f, err) : TUNE_ERR_IO;
}

/* Commits the set when st is TUNE_OK, else drops it. */
static tune_status finish_set(outfile_set *set, tune_status st, tune_error *err)
{
    if (st == TUNE_OK)
        return outfile_set_commit(set, err);
    outfile_set_abort(set);
    return st;
}

/* "results/a, results/b" */
static void join_dirs(const fit_cli *c, char *buf, size_t size)
{
    buf[0] = '\0';
    for (size_t i = 0; i < c->n_dirs; i++)
        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", i ? ", " : "", c->dirs[i]);
}

static tune_status fit_command(const fit_cli *c, const fit_data *d, tune_error *err)
{
    /* a reader: the results folders are never written; files go to --out (and --header) only */
    const char *dir = c->out;
    char path[PATH_MAX] = "", header[PATH_MAX] = "", sources[2048], comment[4096];
    join_dirs(c, sources, sizeof sources);
    tune_status st = dir ? outfile_mkdirs(dir, err) : TUNE_OK;
    if (st != TUNE_OK)
        return st;
    fit_options opt = {c->target, c->no_loo};
    fit_result r;
    if ((st = fit_run(d, &opt, &r, err)) != TUNE_OK)
        return st;
    if (r.chosen == FIT_NONE) {
        if (!c->quiet)
            fit_write_markdown(d, &r, stdout);
        fit_result_release(&r);
        return tune_error_set(err, TUNE_ERR_INVALID, "fit", "no rule could be fitted");
    }
    const fit_candidate *ch = &r.candidates[r.chosen];
    outfile_set *set = outfile_set_new();
    if (!set)
        st = tune_error_set(err, TUNE_ERR_NOMEM, "fit", "out of memory");
    if (st == TUNE_OK && dir) {
        snprintf(path, sizeof path, "%s/heuristics.json", dir);
        st = write_json(fit_result_to_json(d, &r, c->dirs, c->n_dirs), path, set, err);
    }
    if (c->header)
        snprintf(header, sizeof header, "%s", c->header);
    else if (dir)
        snprintf(header, sizeof header, "%s/heuristic_%s.h", dir, fit_data_param(d));
    char eff[32], loo[32];
    snprintf(eff, sizeof eff, "%.1f %%", 100.0 * ch->eval.efficiency);
    snprintf(loo, sizeof loo, "%.1f %%", 100.0 * ch->loo);
    snprintf(comment, sizeof comment,
             "Fitted on %s (method %s, %zu shapes), family %s.\n"
             "Efficiency %s (geometric mean of best %s / %s of the rule's %s), "
             "leave-one-shape-out %s, %zu infeasible shapes.",
             sources, fit_data_method(d) ? fit_data_method(d) : "any tuned", fit_data_n_shapes(d),
             fit_family_str(ch->family), eff, objective_name(fit_data_objective(d)),
             objective_name(fit_data_objective(d)), fit_data_param(d), loo,
             ch->eval.n_infeasible);
    if (st == TUNE_OK && header[0])
        st = write_header_file(d, ch->eval.rule, comment, header, set, err);
    st = finish_set(set, st, err);
    /* printed after the files: a reader that closes stdout early (| head) costs no file */
    if (st == TUNE_OK && !c->quiet) {
        fit_write_markdown(d, &r, stdout);
        if (path[0] || header[0])
            printf("\nWrote %s%s%s.\n", path, path[0] && header[0] ? " and " : "", header);
    }
    fit_result_release(&r);
    return st;
}

static tune_status eval_command(const fit_cli *c, const fit_data *d, tune_error *err)
{
    fit_eval ev;
    tune_status st = fit_evaluate(d, c->rule, &ev, err);
    if (st != TUNE_OK)
        return st;
    outfile_set *set = outfile_set_new();
    if (!set)
        st = tune_error_set(err, TUNE_ERR_NOMEM, "fit", "out of memory");
    if (st == TUNE_OK && c->out) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/heuristic_eval_%s.json", c->out, fit_data_param(d));
        st = outfile_mkdirs(c->out, err);
        if (st == TUNE_OK)
            st = write_json(fit_eval_to_json(d, &ev, c->dirs, c->n_dirs), path, set, err);
    }
    if (st == TUNE_OK && c->header) {
        char sources[2048], comment[4096];
        join_dirs(c, sources, sizeof sources);
        snprintf(comment, sizeof comment,
                 "Given rule evaluated on %s: efficiency %.1f %% by %s over %zu shapes, %zu "
                 "infeasible.",
                 sources, 100.0 * ev.efficiency, objective_name(fit_data_objective(d)),
                 ev.n_feasible, ev.n_infeasible);
        st = write_header_file(d, ev.rule, comment, c->header, set, err);
    }
    st = finish_set(set, st, err);
    if (st == TUNE_OK && !c->quiet)
        fit_eval_write_markdown(d, &ev, stdout);
    fit_eval_release(&ev);
    return st;
}

int tune_cmd_fit(int argc, char **argv)
{
    fit_cli c;
    int rc = fit_parse(argc, argv, &c);
    if (rc)
        return rc > 0 ? EXIT_SUCCESS : 2;
    tune_error err = {0};
    results_rows rows;
    if (fit_read_results(c.dirs, c.n_dirs, &rows, &err) != TUNE_OK)
        return fit_fail(&err);
    fit_data *d = fit_data_build(rows.rows, rows.n, c.param, c.method, c.objective, &err);
    tune_status st = d ? (c.rule ? eval_command(&c, d, &err) : fit_command(&c, d, &err))
                       : err.code;
    fit_data_free(d);
    results_rows_free(&rows);
    return st == TUNE_OK ? EXIT_SUCCESS : fit_fail(&err);
}
