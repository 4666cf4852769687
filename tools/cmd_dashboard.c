/* tune dashboard: the nightly trends of the history store as a static site (docs/dashboard.md).
 *
 *   tune dashboard --out DIR [--db FILE] [--sweep NAME] [--since DATE] [--window N]
 *                  [--threshold PCT] [--quiet]
 *
 * The history is built as `tune history` builds it (analysis/history.h), then written by
 * dashboard_write (analysis/dashboard.h). Exit status: 0 written, 1 the store or the folder
 * refused, 2 usage.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/dashboard.h"
#include "analysis/history.h"
#include "cli.h"

int tune_cmd_dashboard(int argc, char **argv);

static const char dashboard_usage[] =
    "usage: tune dashboard --out DIR [--db FILE] [--sweep NAME] [--since DATE] [--window N]\n"
    "                      [--threshold PCT] [--quiet]\n"
    "Writes the nightly trends of the history store as a static site into DIR: index.html (a\n"
    "row per sweep and GPU: the newest night, its regressions and improvements) and a page per\n"
    "sweep and GPU with a trend chart per shape, the winners per night and links to each run's\n"
    "best.md. The pages open from the file system and fetch nothing from the network. DIR is\n"
    "replaced whole, and only when it is empty or an earlier dashboard.\n"
    "  --out DIR               the site's folder (required)\n"
    "  --db FILE               the history store (default $TUNE_DB, else results/history.sqlite)\n"
    "  --sweep NAME            only this sweep\n"
    "  --since DATE            only the runs of nights from DATE (YYYY-MM-DD) on\n"
    "  --window N              runs in a series' baseline, 1 to 1000 (as tune history)\n"
    "  --threshold PCT         least change of a regression or an improvement, in percent\n"
    "  --quiet                 nothing on stdout\n"
    "exit status: 0 written, 1 the store or the folder refused, 2 usage error\n";

typedef struct {
    history_options opt;
    const char *out;
    int quiet;
} dashboard_cli;

/* YYYY-MM-DD, digits where digits go. */
static int is_date(const char *s)
{
    if (strlen(s) != 10 || s[4] != '-' || s[7] != '-')
        return 0;
    for (int i = 0; i < 10; i++)
        if (i != 4 && i != 7 && (s[i] < '0' || s[i] > '9'))
            return 0;
    return 1;
}

/* One option with its value into c; 0, or -1 after a message. */
static int dashboard_option(dashboard_cli *c, const char *a, const char *val)
{
    long long n;
    if (strcmp(a, "--out") == 0) {
        c->out = val;
        return cli_path("dashboard", a, val);
    }
    if (strcmp(a, "--db") == 0) {
        c->opt.db = val;
        return cli_path("dashboard", a, val);
    }
    if (strcmp(a, "--sweep") == 0) {
        if (!val[0])
            return fprintf(stderr, "tune dashboard: --sweep expects a sweep's name, got ''\n"), -1;
        c->opt.sweep = val;
        return 0;
    }
    if (strcmp(a, "--since") == 0) {
        if (!is_date(val))
            return fprintf(stderr, "tune dashboard: --since expects a date YYYY-MM-DD, got '%s'\n",
                           val),
                   -1;
        c->opt.since = val;
        return 0;
    }
    if (strcmp(a, "--window") == 0) {
        if (cli_int("dashboard", a, val, 1, 1000, &n) != 0)
            return -1;
        c->opt.window = (int)n;
        return 0;
    }
    if (strcmp(a, "--threshold") == 0)
        return cli_percent("dashboard", a, val, &c->opt.threshold_pct);
    fprintf(stderr, "tune dashboard: unknown option %s\n%s", a, dashboard_usage);
    return -1;
}

/* 0: parsed; 1: --help printed; -1: a usage error printed. */
static int dashboard_parse(int argc, char **argv, dashboard_cli *c)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            return fputs(dashboard_usage, stdout), 1;
        if (strcmp(a, "--quiet") == 0) {
            c->quiet = 1;
            continue;
        }
        if (a[0] != '-')
            return fprintf(stderr, "tune dashboard: unexpected argument '%s'\n%s", a,
                           dashboard_usage),
                   -1;
        static const char *const valued[] = {"--out", "--db", "--sweep", "--since", "--window",
                                             "--threshold"};
        int known = 0;
        for (size_t k = 0; k < sizeof valued / sizeof *valued; k++)
            known |= strcmp(a, valued[k]) == 0;
        if (!known)
            return fprintf(stderr, "tune dashboard: unknown option %s\n%s", a, dashboard_usage),
                   -1;
        if (i + 1 >= argc)
            return fprintf(stderr, "tune dashboard: option %s needs a value\n%s", a,
                           dashboard_usage),
                   -1;
        if (dashboard_option(c, a, argv[++i]) != 0)
            return -1;
    }
    if (!c->out)
        return fprintf(stderr, "tune dashboard: name the site's folder with --out DIR\n%s",
                       dashboard_usage),
               -1;
    return 0;
}

int tune_cmd_dashboard(int argc, char **argv)
{
    dashboard_cli c;
    memset(&c, 0, sizeof c);
    history_options_init(&c.opt);
    int rc = dashboard_parse(argc, argv, &c);
    if (rc)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    json_t *h = NULL;
    tune_error err = {0};
    char buf[4096];
    if (history_build(&c.opt, &h, &err) != TUNE_OK || dashboard_write(h, c.out, &err) != TUNE_OK) {
        json_decref(h);
        fprintf(stderr, "tune dashboard: %s\n", tune_error_text(&err, buf, sizeof buf));
        return CLI_EXIT_FAILURE;
    }
    if (!c.quiet)
        printf("Wrote %s/index.html: %zu sweep and GPU pages.\n", c.out,
               json_array_size(json_object_get(h, "groups")));
    json_decref(h);
    return CLI_EXIT_OK;
}
