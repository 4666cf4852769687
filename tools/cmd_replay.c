/* tune replay: a search strategy replayed against measured exhaustive runs (docs/search.md).
 *
 *   tune replay RESULTS_DIR... [--strategy random,model] [--seeds 20] [--budgets 5,10,25]
 *               [--prior DIR]... [--rule PARAM=EXPR]... [--feature NAME=EXPR]...
 *               [--features none] [--out DIR] [--quiet]
 *
 * Prints the summary table of each folder; --out DIR also gets replay.md, replay.csv,
 * replay.json and meta.json (never inside a folder replayed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/replay.h"
#include "core/expr.h"
#include "cli.h"

int tune_cmd_replay(int argc, char **argv);

static const char replay_usage[] =
    "usage: tune replay RESULTS_DIR... [--strategy random,model] [--seeds 20]\n"
    "                   [--budgets 5,10,25] [--prior DIR]... [--rule PARAM=EXPR]...\n"
    "                   [--feature NAME=EXPR]... [--features none] [--out DIR] [--quiet]\n"
    "Replays search strategies (exhaustive, random, model) against measured exhaustive runs, no\n"
    "GPU needed: per shape and over seeds 1..N, the evaluations each strategy needs to come within\n"
    "1 % and 3 % of the shape's best time, and the fraction of the best it reaches with budgets of\n"
    "the given percentages of each shape's candidates. Prints a table per folder; --out DIR also\n"
    "gets replay.md, replay.csv, replay.json and meta.json (never inside a folder replayed).\n"
    "--prior DIR gives every search the rows of another results folder as a warm start (another\n"
    "GPU, an earlier run); --rule PARAM=EXPR a fitted rule (tune fit) preferred in each shape's\n"
    "first round. Both guide the model strategy only. The model's derived features are each\n"
    "folder's (its meta.json: the run's search block, else its sweep's search.features), or\n"
    "those of --feature NAME=EXPR (repeatable, in order), or none with --features none.\n";

typedef struct {
    const char *dirs[64];
    size_t n_dirs;
    const char *out;
    const char *priors[16], *rules[16], *features[SEARCH_MAX_DERIVED];
    int quiet;
    replay_options opt;
} replay_cli;

static int replay_bad(const char *opt, const char *what, const char *val)
{
    fprintf(stderr, "tune replay: %s expects %s, got '%s'\n", opt, what, val);
    return -1;
}

static int replay_option(replay_cli *c, const char *a, const char *val)
{
    long long n;
    if (strcmp(a, "--strategy") == 0)
        return replay_parse_strategies(val, &c->opt) == 0
                   ? 0
                   : replay_bad(a, "a list of exhaustive, random, model (no repeats)", val);
    if (strcmp(a, "--budgets") == 0)
        return replay_parse_budgets(val, &c->opt) == 0
                   ? 0
                   : replay_bad(a, "a list of percentages in (0, 100] (at most 8, no repeats)",
                                val);
    if (strcmp(a, "--seeds") == 0) {
        if (cli_int("replay", a, val, 1, 10000, &n) != 0)
            return -1;
        c->opt.seeds = (size_t)n;
        return 0;
    }
    if (strcmp(a, "--prior") == 0 || strcmp(a, "--rule") == 0) {
        int prior = a[2] == 'p';
        size_t *n = prior ? &c->opt.n_prior_dirs : &c->opt.n_rules;
        if (*n == 16)
            return fprintf(stderr, "tune replay: at most 16 of %s\n", a), -1;
        if (prior && cli_path("replay", a, val) != 0)
            return -1;
        if (!prior && (!strchr(val, '=') || val[0] == '='))
            return replay_bad(a, "PARAM=EXPR", val);
        (prior ? c->priors : c->rules)[(*n)++] = val;
        return 0;
    }
    if (strcmp(a, "--feature") == 0) {
        if (c->opt.n_features == SEARCH_MAX_DERIVED)
            return fprintf(stderr, "tune replay: at most %d of --feature\n", SEARCH_MAX_DERIVED),
                   -1;
        const char *eq = strchr(val, '=');
        char name[64];
        snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - val) : 0, val);
        tune_error pe = {0};
        expr *e = eq && eq[1] != '=' ? expr_parse(eq + 1, &pe) : NULL;
        int ok = e && eq > val && (size_t)(eq - val) < sizeof name &&
                 strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") ==
                     strlen(name) &&
                 !(name[0] >= '0' && name[0] <= '9');
        expr_free(e);
        if (!ok) {
            if (pe.message[0])
                fprintf(stderr, "tune replay: --feature '%s': %s%s%s\n", val, pe.where,
                        pe.where[0] ? ": " : "", pe.message);
            return replay_bad(a, "NAME=EXPR (a name, then an expression: tiles_n=(n + bn - 1) / bn)",
                              val);
        }
        c->opt.features_set = 1;
        c->features[c->opt.n_features++] = val;
        return 0;
    }
    if (strcmp(a, "--features") == 0) {
        if (strcmp(val, "none") != 0)
            return replay_bad(a, "none (--feature NAME=EXPR gives them)", val);
        c->opt.features_set = 1;
        return 0;
    }
    if (strcmp(a, "--out") == 0) {
        c->out = val;
        return cli_path("replay", a, val);
    }
    fprintf(stderr, "tune replay: unknown option %s\n%s", a, replay_usage);
    return -1;
}

static int replay_parse(int argc, char **argv, replay_cli *c)
{
    memset(c, 0, sizeof *c);
    replay_options_init(&c->opt);
    c->opt.prior_dirs = c->priors;
    c->opt.rules = c->rules;
    c->opt.features = c->features;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(replay_usage, stdout);
            return 1;
        }
        if (strcmp(a, "--quiet") == 0) {
            c->quiet = 1;
            continue;
        }
        if (a[0] != '-') {
            if (c->n_dirs == sizeof c->dirs / sizeof c->dirs[0])
                return fprintf(stderr, "tune replay: too many results folders\n"), -1;
            c->dirs[c->n_dirs++] = a;
            continue;
        }
        if (i + 1 >= argc) {
            if (strcmp(a, "--strategy") && strcmp(a, "--seeds") && strcmp(a, "--budgets") &&
                strcmp(a, "--out") && strcmp(a, "--prior") && strcmp(a, "--rule") &&
                strcmp(a, "--feature") && strcmp(a, "--features"))
                return fprintf(stderr, "tune replay: unknown option %s\n%s", a, replay_usage), -1;
            return fprintf(stderr, "tune replay: option %s needs a value\n%s", a, replay_usage),
                   -1;
        }
        if (replay_option(c, a, argv[++i]) != 0)
            return -1;
    }
    if (!c->n_dirs)
        return fprintf(stderr, "tune replay: name at least one results folder\n%s", replay_usage),
               -1;
    if (c->out && (cli_out_apart("replay", "--out", c->out, c->dirs, c->n_dirs, 0) != 0 ||
                   cli_out_apart("replay", "--out", c->out, c->priors, c->opt.n_prior_dirs, 0) != 0))
        return -1;
    return 0;
}

int tune_cmd_replay(int argc, char **argv)
{
    replay_cli c;
    int rc = replay_parse(argc, argv, &c);
    if (rc)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    tune_error err = {0};
    char buf[4096];
    replay *r = replay_run(c.dirs, c.n_dirs, &c.opt, &err);
    tune_status st = r ? TUNE_OK : err.code;
    if (st == TUNE_OK && c.out)
        st = replay_write_files(r, c.out, argc, argv, &err);
    if (st == TUNE_OK && !c.quiet) {
        replay_write_table(r, stdout);
        if (c.out)
            printf("Wrote %s/replay.md, replay.csv, replay.json and meta.json.\n", c.out);
    }
    replay_free(r);
    if (st != TUNE_OK) {
        fprintf(stderr, "tune replay: %s\n", tune_error_text(&err, buf, sizeof buf));
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}
