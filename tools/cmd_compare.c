/* tune compare: compare a run with a baseline; the exit status says whether it regressed.
 *
 *   tune compare BASE NEW [--threshold PCT] [--allow-mismatch[=KEY,...]] [--out DIR]
 *                [--param NAME]... [--objective time|energy|edp] [--quiet]
 *   tune compare --base DIR... --new DIR... [options]
 *
 * Prints a Markdown summary and writes DIR/compare.md and DIR/compare.json (DIR defaults to the
 * first NEW folder). Exit status: 0 no regression, 1 regressions beyond the threshold, 2 usage or
 * input error, or the runs' environments differ and that was not allowed (docs/compare.md).
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/compare.h"
#include "model/family.h"
#include "cli.h"

int tune_cmd_compare(int argc, char **argv);

static const char compare_usage[] =
    "usage: tune compare BASE NEW [--threshold PCT] [--allow-mismatch[=KEY,...]] [--out DIR]\n"
    "                    [--param NAME]... [--objective time|energy|edp] [--quiet]\n"
    "       tune compare --base DIR... --new DIR... [options]\n"
    "Compares the results folders NEW with BASE (several folders of a side are merged): every\n"
    "configuration, the best configuration of every shape, the winners and the fitted rules.\n"
    "A change counts when it exceeds the noise (stdev / median) of both runs' rows; a regression\n"
    "is a change that counts and is slower by more than the threshold (default 5 %), or a\n"
    "configuration that ran ok in BASE and not in NEW.\n"
    "  --threshold PCT         least slowdown of a regression, in percent (default 5)\n"
    "  --allow-mismatch        compare runs measured on different GPUs, drivers, CUDA, NVRTC or\n"
    "                          cuBLAS versions, kernel sources, tune revisions, sweeps or timing\n"
    "  --allow-mismatch=KEYS   only these may differ: gpu, pci_bus_id, driver, cuda_driver,\n"
    "                          cuda_runtime, nvrtc, cublas, kernels, arch, tool, sweep,\n"
    "                          timing\n"
    "  --param NAME            parameters whose fitted rules are compared (repeat, or a,b);\n"
    "                          default: heuristics.json's, else every varying integer parameter\n"
    "  --objective OBJ         compare the median time (default), the energy per call or the\n"
    "                          energy-delay product (edp): a regression in energy is one; rows\n"
    "                          without energy cannot be compared by energy (docs/compare.md)\n"
    "  --out DIR               write compare.md and compare.json there (default: stdout only;\n"
    "                          the folders compared are never written)\n"
    "  --quiet                 no summary on stdout\n"
    "exit status: 0 no regression, 1 regressions, 2 usage or input error, or a refused mismatch\n";

#define COMPARE_CLI_MAX 256

typedef struct {
    const char *base[COMPARE_CLI_MAX], *now[COMPARE_CLI_MAX];
    size_t n_base, n_now;
    const char *params[COMPARE_CLI_MAX], *allow[COMPARE_CLI_MAX];
    char *lists[COMPARE_CLI_MAX]; /* copies of comma-separated values, split in place */
    size_t n_params, n_allow, n_lists;
    const char *out;
    double threshold;
    tune_objective objective;
    int allow_all, quiet;
} compare_cli;

/* Splits a copy of "a,b" into names appended to out; -1 when full or out of memory. */
static int compare_split(compare_cli *c, const char *val, const char **out, size_t *n)
{
    if (c->n_lists == COMPARE_CLI_MAX)
        return -1;
    char *copy = strdup(val);
    if (!copy)
        return -1;
    c->lists[c->n_lists++] = copy;
    for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n == COMPARE_CLI_MAX)
            return -1;
        out[(*n)++] = t;
    }
    return 0;
}

/* The value val of option a (--threshold, --param, --out, --objective) into c; -1 after saying
 * why it is refused. */
static int compare_option_value(compare_cli *c, const char *a, const char *val)
{
    if (strcmp(a, "--threshold") == 0)
        return cli_percent("compare", a, val, &c->threshold);
    if (strcmp(a, "--param") == 0) {
        if (compare_split(c, val, c->params, &c->n_params) != 0)
            return fprintf(stderr, "tune compare: too many parameters\n"), -1;
        return 0;
    }
    if (strcmp(a, "--objective") == 0) {
        if (objective_parse(val, &c->objective) != 0)
            return fprintf(stderr,
                           "tune compare: --objective: expected time, energy or edp, got '%s'\n",
                           val),
                   -1;
        return 0;
    }
    if (cli_path("compare", a, val) != 0) /* --out */
        return -1;
    c->out = val;
    return 0;
}

/* The command line into c: folders, flags, then the options with a value. */
static int compare_parse(int argc, char **argv, compare_cli *c)
{
    const char *pos[COMPARE_CLI_MAX];
    size_t n_pos = 0;
    int side = 0; /* 0: positional, 1: --base, 2: --new */
    c->threshold = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(compare_usage, stdout);
            return 1;
        }
        if (a[0] != '-') {
            const char **dst = side == 1 ? c->base : side == 2 ? c->now : pos;
            size_t *n = side == 1 ? &c->n_base : side == 2 ? &c->n_now : &n_pos;
            if (*n == COMPARE_CLI_MAX)
                return fprintf(stderr, "tune compare: too many results folders\n"), -1;
            dst[(*n)++] = a;
            continue;
        }
        if (strcmp(a, "--base") == 0 || strcmp(a, "--new") == 0) {
            side = a[2] == 'b' ? 1 : 2;
            continue;
        }
        if (strcmp(a, "--quiet") == 0) {
            c->quiet = 1;
            continue;
        }
        if (strcmp(a, "--allow-mismatch") == 0) {
            c->allow_all = 1;
            continue;
        }
        if (strncmp(a, "--allow-mismatch=", 17) == 0) {
            if (compare_split(c, a + 17, c->allow, &c->n_allow) != 0)
                return fprintf(stderr, "tune compare: too many keys in %s\n", a), -1;
            continue;
        }
        if (strcmp(a, "--threshold") != 0 && strcmp(a, "--param") != 0 &&
            strcmp(a, "--out") != 0 && strcmp(a, "--objective") != 0)
            return fprintf(stderr, "tune compare: unknown option %s\n%s", a, compare_usage), -1;
        if (!val)
            return fprintf(stderr, "tune compare: option %s needs a value\n%s", a, compare_usage),
                   -1;
        i++;
        if (compare_option_value(c, a, val) != 0)
            return -1;
        side = 0;
    }
    if (n_pos && (c->n_base || c->n_now))
        return fprintf(stderr,
                       "tune compare: name the folders either as BASE NEW or with --base "
                       "and --new, not both\n%s",
                       compare_usage),
               -1;
    if (n_pos) {
        if (n_pos != 2)
            return fprintf(stderr,
                           "tune compare: expected two results folders, BASE and NEW, got "
                           "%zu (several per side: --base DIR... --new DIR...)\n%s",
                           n_pos, compare_usage),
                   -1;
        c->base[c->n_base++] = pos[0];
        c->now[c->n_now++] = pos[1];
    }
    if (!c->n_base || !c->n_now)
        return fprintf(stderr, "tune compare: name a BASE and a NEW results folder\n%s",
                       compare_usage),
               -1;
    if (c->out && (cli_out_apart("compare", "--out", c->out, c->base, c->n_base, 0) != 0 ||
                   cli_out_apart("compare", "--out", c->out, c->now, c->n_now, 0) != 0))
        return -1;
    return 0;
}

int tune_cmd_compare(int argc, char **argv)
{
    compare_cli c;
    memset(&c, 0, sizeof c);
    int rc = compare_parse(argc, argv, &c);
    if (rc) {
        for (size_t i = 0; i < c.n_lists; i++)
            free(c.lists[i]);
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    }
    compare_options opt;
    compare_options_init(&opt);
    opt.find_family = family_find; /* a knob added since BASE ran: its rows ran the default */
    opt.threshold = c.threshold / 100.0;
    opt.params = c.params;
    opt.n_params = c.n_params;
    opt.allow = c.allow;
    opt.n_allow = c.n_allow;
    opt.allow_all = c.allow_all;
    opt.objective = c.objective;
    tune_error err = {0};
    char buf[4096];
    compare *cmp = compare_dirs(c.base, c.n_base, c.now, c.n_now, &opt, &err);
    if (!cmp) {
        fprintf(stderr, "tune compare: %s\n", tune_error_text(&err, buf, sizeof buf));
        rc = CLI_EXIT_USAGE;
    } else if (compare_env_refused(cmp)) {
        fprintf(stderr,
                "tune compare: not compared: BASE and NEW differ in %s; --allow-mismatch compares "
                "them anyway\n",
                compare_env_text(cmp, 1, buf, sizeof buf));
        rc = CLI_EXIT_USAGE;
    } else {
        /* the files first: a reader that closes stdout early (| head) costs no file */
        const char *dir = c.out;
        if (dir && compare_write_files(cmp, dir, &err) != TUNE_OK) {
            fprintf(stderr, "tune compare: %s\n", tune_error_text(&err, buf, sizeof buf));
            rc = CLI_EXIT_USAGE;
        } else {
            if (!c.quiet)
                compare_write_markdown(cmp, stdout);
            size_t n = compare_n_regressions(cmp);
            char wrote[8192] = "";
            if (dir)
                snprintf(wrote, sizeof wrote, "; wrote %s/compare.md and %s/compare.json", dir,
                         dir);
            fprintf(stderr, "tune compare: %zu regression%s beyond %g %%%s\n", n,
                    n == 1 ? "" : "s", c.threshold, wrote);
            rc = n ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
        }
    }
    compare_free(cmp);
    for (size_t i = 0; i < c.n_lists; i++)
        free(c.lists[i]);
    return rc;
}
