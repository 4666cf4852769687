/* tune ingest and tune history: runs into the results store, and their trends out of it
 * (docs/history.md).
 *
 *   tune ingest RUN_DIR... [--db FILE] [--date YYYY-MM-DD] [--quiet]
 *   tune history [--db FILE] [--sweep NAME] [--since DATE] [--run DIR] [--window N] [--threshold PCT]
 *                [--mads K] [--consecutive N] [--min-runs N] [--segment-on KEYS] [--all] [--json]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "analysis/history.h"
#include "cli.h"
#include "store/db.h"

int tune_cmd_ingest(int argc, char **argv);
int tune_cmd_history(int argc, char **argv);

static const char ingest_usage[] =
    "usage: tune ingest RUN_DIR... [--db FILE] [--date YYYY-MM-DD] [--quiet]\n"
    "Adds finished runs (plain or gzipped rows, merged shards included) to the results store,\n"
    "each in one transaction: the store holds a run whole or not at all. A run already held is\n"
    "not added again; the run folders are only read. A shard of a sharded run is refused: ingest\n"
    "its merge. --db FILE: the store (default $TUNE_DB, else results/history.sqlite), created\n"
    "when absent; one host writes a store (SQLite's locking is not safe on network file\n"
    "systems). --date: the night the runs belong to (default: each run's start date, UTC).\n"
    "exit status: 0 every run is in the store; 1 a run was refused or the store failed (the\n"
    "others are still added); 2 usage.\n";

static const char history_usage[] =
    "usage: tune history [--db FILE] [--sweep NAME] [--since YYYY-MM-DD] [--run DIR] [--window N]\n"
    "                    [--threshold PCT] [--mads K] [--consecutive N] [--min-runs N]\n"
    "                    [--segment-on KEYS] [--all] [--json]\n"
    "Per sweep, GPU model, shape and method, the series of best times and winning\n"
    "configurations over the store's runs, and a verdict on the newest run: regression,\n"
    "improvement, same, unstable (the window's own spread is wider than the threshold),\n"
    "insufficient (too few comparable runs) or missing (no ok row any more). A run is judged\n"
    "against the median of the previous --window comparable runs (default 7, at least\n"
    "--min-runs 3) and against the level its segment started at; it exceeds when it is beyond\n"
    "--threshold percent (default 3) and --mads robust deviations (default 2) of either; a\n"
    "regression is --consecutive runs in a row that exceed (default 2). A change of the keys in\n"
    "--segment-on (default sweep,driver,runtime,tool,kernels; 'none') starts a new segment:\n"
    "annotated, never flagged. The store is only read. Markdown on stdout (--all: every\n"
    "series, not only those that are not the same), or the whole history as JSON (--json).\n"
    "--run DIR judges the run ingested from DIR as the newest of its group (sweep and GPU\n"
    "model), leaving out the runs after it and the other groups.\n"
    "exit status: 0 no regression; 1 a regression or a missing series in a newest run, or the\n"
    "store refused; 2 usage.\n";

static int usage_error(const char *cmd, const char *usage, const char *fmt, const char *a)
{
    fprintf(stderr, "tune %s: ", cmd);
    fprintf(stderr, fmt, a);
    fprintf(stderr, "\n%s", usage);
    return CLI_EXIT_USAGE;
}

static int fail(const char *cmd, const tune_error *err)
{
    char buf[4096];
    fprintf(stderr, "tune %s: %s\n", cmd, tune_error_text(err, buf, sizeof buf));
    return CLI_EXIT_FAILURE;
}

int tune_cmd_ingest(int argc, char **argv)
{
    const char *dbp = NULL, *night = NULL;
    int quiet = 0, n_dirs = 0;
    char **dirs = calloc((size_t)argc + 1, sizeof *dirs);
    if (!dirs)
        return CLI_EXIT_FAILURE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(ingest_usage, stdout);
            free(dirs);
            return CLI_EXIT_OK;
        }
        if (!strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (!strcmp(a, "--db") || !strcmp(a, "--date")) {
            if (i + 1 >= argc) {
                free(dirs);
                return usage_error("ingest", ingest_usage, "option %s needs a value", a);
            }
            const char *v = argv[++i];
            int is_db = !strcmp(a, "--db");
            if (is_db ? cli_path("ingest", a, v) != 0 : !db_valid_night(v)) {
                if (!is_db)
                    fprintf(stderr, "tune ingest: --date expects a date YYYY-MM-DD, got '%s'\n", v);
                free(dirs);
                return CLI_EXIT_USAGE;
            }
            *(is_db ? &dbp : &night) = v;
        } else if (a[0] == '-') {
            free(dirs);
            return usage_error("ingest", ingest_usage, "unknown option %s", a);
        } else {
            dirs[n_dirs++] = argv[i];
        }
    }
    if (n_dirs == 0) {
        free(dirs);
        return usage_error("ingest", ingest_usage, "name at least one run folder%s", "");
    }
    char path[4096];
    db_default_path(dbp, NULL, path, sizeof path);
    tune_error err = {0};
    db *d = db_open(path, &err);
    if (!d) {
        free(dirs);
        return fail("ingest", &err);
    }
    int rc = CLI_EXIT_OK;
    for (int i = 0; i < n_dirs; i++) {
        db_ingest_result r;
        tune_error_clear(&err);
        if (db_ingest(d, dirs[i], night, &r, &err) != TUNE_OK) {
            rc = fail("ingest", &err);
            continue;
        }
        if (!quiet)
            printf("%s: %s (night %s, %zu rows, run %lld in %s)\n", dirs[i],
                   r.added ? "added" : "already in the store", r.night, r.n_rows, r.run_id, path);
    }
    db_close(d);
    free(dirs);
    return rc;
}

/* One valued option of tune history (a known name a, its value v) checked and stored into o, or
 * *dbp; CLI_EXIT_OK, or CLI_EXIT_USAGE after the message. */
static int history_value(const char *a, const char *v, history_options *o, const char **dbp)
{
    long long n;
    double x;
    if (!strcmp(a, "--db")) {
        if (cli_path("history", a, v) != 0)
            return CLI_EXIT_USAGE;
        *dbp = v;
    } else if (!strcmp(a, "--run")) {
        if (cli_path("history", a, v) != 0)
            return CLI_EXIT_USAGE;
        o->run = v;
    } else if (!strcmp(a, "--sweep")) {
        if (!*v)
            return usage_error("history", history_usage, "--sweep expects a name%s", "");
        o->sweep = v;
    } else if (!strcmp(a, "--since")) {
        if (!db_valid_night(v)) {
            fprintf(stderr, "tune history: --since expects a date YYYY-MM-DD, got '%s'\n", v);
            return CLI_EXIT_USAGE;
        }
        o->since = v;
    } else if (!strcmp(a, "--window")) {
        if (cli_int("history", a, v, 1, 64, &n) != 0)
            return CLI_EXIT_USAGE;
        o->window = (size_t)n;
    } else if (!strcmp(a, "--min-runs")) {
        if (cli_int("history", a, v, 1, 64, &n) != 0)
            return CLI_EXIT_USAGE;
        o->min_runs = (size_t)n;
    } else if (!strcmp(a, "--consecutive")) {
        if (cli_int("history", a, v, 1, 64, &n) != 0)
            return CLI_EXIT_USAGE;
        o->consecutive = (size_t)n;
    } else if (!strcmp(a, "--threshold")) {
        if (cli_double("history", a, v, 0, 1000, 1, "percent", &x) != 0)
            return CLI_EXIT_USAGE;
        o->threshold_pct = x;
    } else if (!strcmp(a, "--mads")) {
        if (cli_double("history", a, v, 0, 1000, 0, NULL, &x) != 0)
            return CLI_EXIT_USAGE;
        o->k_mad = x;
    } else if (history_parse_segment_on(v, &o->segment_on) != 0) {
        fprintf(stderr,
                "tune history: --segment-on expects keys of sweep, driver, runtime, tool, "
                "kernels (comma-separated) or none, got '%s'\n",
                v);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

int tune_cmd_history(int argc, char **argv)
{
    history_options o;
    history_options_init(&o);
    const char *dbp = NULL;
    int json = 0, all = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(history_usage, stdout);
            return CLI_EXIT_OK;
        }
        if (!strcmp(a, "--json")) {
            json = 1;
            continue;
        }
        if (!strcmp(a, "--all")) {
            all = 1;
            continue;
        }
        if (a[0] != '-')
            return usage_error("history", history_usage,
                               "takes no folders, got '%s' (tune ingest adds runs to the store)",
                               a);
        static const char *const valued[] = {"--db", "--sweep", "--since", "--run", "--window",
                                             "--threshold", "--mads", "--consecutive",
                                             "--min-runs", "--segment-on"};
        int known = 0;
        for (size_t k = 0; k < sizeof valued / sizeof *valued; k++)
            known |= !strcmp(a, valued[k]);
        if (!known)
            return usage_error("history", history_usage, "unknown option %s", a);
        if (i + 1 >= argc)
            return usage_error("history", history_usage, "option %s needs a value", a);
        int rc = history_value(a, argv[++i], &o, &dbp);
        if (rc != CLI_EXIT_OK)
            return rc;
    }
    if (o.min_runs > o.window) {
        fprintf(stderr, "tune history: --min-runs (%zu) must not exceed --window (%zu)\n",
                o.min_runs, o.window);
        return CLI_EXIT_USAGE;
    }
    char path[4096];
    o.db = db_default_path(dbp, NULL, path, sizeof path);
    tune_error err = {0};
    json_t *h = NULL;
    if (history_build(&o, &h, &err) != TUNE_OK)
        return fail("history", &err);
    if (json)
        json_dumpf(h, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(9)), fputc('\n', stdout);
    else
        history_write_markdown(h, all, stdout);
    size_t flagged = history_n_flagged(h);
    json_decref(h);
    if (flagged)
        fprintf(stderr, "tune history: %zu series flagged in the newest runs\n", flagged);
    return flagged ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}
