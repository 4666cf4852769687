/* tune dispatch: a rule that picks the whole configuration (method and every parameter) for any
 * problem shape, built from measured runs, with its efficiency in-sample and left out.
 *
 *   tune dispatch RESULTS_DIR... [--out DIR] [--methods A,B] [--name FN] [--axis NAME]
 *                 [--tolerance 0.01]
 *
 * Prints dispatch.md; with --out writes DIR/dispatch.json, DIR/dispatch.h and DIR/dispatch.md
 * (never into a folder read).
 */
#include <ctype.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/dispatch.h"
#include "core/outfile.h"
#include "store/folder.h"
#include "cli.h"

int tune_cmd_dispatch(int argc, char **argv);

static const char dispatch_usage[] =
    "usage: tune dispatch RESULTS_DIR... [--out DIR] [--methods A,B] [--name FN] [--axis NAME]\n"
    "                     [--tolerance 0.01]\n"
    "Builds a rule that returns the whole configuration (method and every parameter) for any\n"
    "problem shape: per measured outer shape a table of breakpoints on one axis (--axis; by\n"
    "default the integer axis with the most distinct values), the nearest measured table for an\n"
    "outer shape never measured. Configurations within --tolerance of the best are merged. It may\n"
    "pick the methods of --methods (default: the tuned ones; never an auxiliary method). Prints\n"
    "the rule and its efficiency in-sample, leaving one breakpoint value out and leaving one\n"
    "outer shape out; --out DIR gets dispatch.json, dispatch.h (static inline\n"
    "tune_dispatch_FN(), FN the sweep's name by default) and dispatch.md.\n";

#define MAX_DIRS 256
#define MAX_METHODS 64

typedef struct {
    const char *dirs[MAX_DIRS];
    size_t n_dirs;
    const char *out, *name, *axis;
    char methods_buf[1024];
    const char *methods[MAX_METHODS];
    size_t n_methods;
    int has_methods;
    double tolerance;
} dispatch_cli;

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "tune dispatch: %s%s\n%s", msg, arg, dispatch_usage);
    return -1;
}

static int is_identifier(const char *s)
{
    if (!*s || isdigit((unsigned char)*s) || strlen(s) > 100)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return 0;
    return 1;
}

/* "a,b,c" into c->methods; -1 on an empty item. */
static int split_methods(dispatch_cli *c, const char *val)
{
    snprintf(c->methods_buf, sizeof c->methods_buf, "%s", val);
    char *p = c->methods_buf;
    c->has_methods = 1;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (!*p || c->n_methods == MAX_METHODS)
            return -1;
        c->methods[c->n_methods++] = p;
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

static int dispatch_parse(int argc, char **argv, dispatch_cli *c)
{
    memset(c, 0, sizeof *c);
    c->tolerance = 0.01;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(dispatch_usage, stdout);
            return 1;
        }
        if (a[0] != '-') {
            if (c->n_dirs == MAX_DIRS)
                return usage_error("too many results folders", "");
            c->dirs[c->n_dirs++] = a;
            continue;
        }
        static const char *const with_value[] = {"--out", "--methods", "--name", "--axis",
                                                 "--tolerance"};
        int known = 0;
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++)
            known |= strcmp(a, with_value[k]) == 0;
        if (!known)
            return usage_error("unknown option ", a);
        if (!val) {
            fprintf(stderr, "tune dispatch: option %s needs a value\n%s", a, dispatch_usage);
            return -1;
        }
        i++;
        if (strcmp(a, "--out") == 0) {
            if (cli_path("dispatch", a, val) != 0)
                return -1;
            c->out = val;
        } else if (strcmp(a, "--methods") == 0) {
            if (split_methods(c, val) != 0) {
                fprintf(stderr, "tune dispatch: --methods expects a comma-separated list of "
                                "methods, got '%s'\n", val);
                return -1;
            }
        } else if (strcmp(a, "--name") == 0) {
            if (!is_identifier(val)) {
                fprintf(stderr, "tune dispatch: --name expects a C identifier, got '%s'\n", val);
                return -1;
            }
            c->name = val;
        } else if (strcmp(a, "--axis") == 0) {
            if (!*val)
                return usage_error("--axis expects a problem axis, got ''", "");
            c->axis = val;
        } else if (cli_double("dispatch", a, val, 0, 1, 0, NULL, &c->tolerance) != 0) {
            return -1;
        }
    }
    if (!c->n_dirs)
        return usage_error("name at least one results folder", "");
    /* the folders read are never written */
    if (c->out && cli_out_apart("dispatch", "--out", c->out, (const char *const *)c->dirs,
                                c->n_dirs, 0) != 0)
        return -1;
    return 0;
}

static tune_status write_header_file(const dispatch *d, const char *comment, const char *path,
                                     tune_error *err)
{
    outfile *o = outfile_open(path, err);
    if (!o)
        return TUNE_ERR_IO;
    tune_status st = dispatch_write_header(d, comment, outfile_stream(o), err);
    if (st != TUNE_OK) {
        outfile_abort(o);
        return st;
    }
    return outfile_commit(o, err);
}

static tune_status write_files(const dispatch_cli *c, const dispatch *d, tune_error *err)
{
    char path[PATH_MAX], comment[4096];
    size_t len = (size_t)snprintf(comment, sizeof comment, "Built on");
    for (size_t i = 0; i < c->n_dirs && len < sizeof comment; i++)
        len += (size_t)snprintf(comment + len, sizeof comment - len, "%s %s", i ? "," : "",
                                c->dirs[i]);
    tune_status st = outfile_mkdirs(c->out, err);
    json_t *j = st == TUNE_OK ? dispatch_to_json(d, c->dirs, c->n_dirs) : NULL;
    if (st == TUNE_OK && !j)
        st = tune_error_set(err, TUNE_ERR_NOMEM, "dispatch", "out of memory");
    snprintf(path, sizeof path, "%s/dispatch.json", c->out);
    if (st == TUNE_OK)
        st = outfile_write_json(path, j, JSON_INDENT(2) | JSON_PRESERVE_ORDER, err);
    json_decref(j);
    snprintf(path, sizeof path, "%s/dispatch.h", c->out);
    if (st == TUNE_OK)
        st = write_header_file(d, comment, path, err);
    snprintf(path, sizeof path, "%s/dispatch.md", c->out);
    outfile *o = st == TUNE_OK ? outfile_open(path, err) : NULL;
    if (o) {
        dispatch_write_markdown(d, c->dirs, c->n_dirs, outfile_stream(o));
        st = outfile_commit(o, err);
    } else if (st == TUNE_OK) {
        st = TUNE_ERR_IO;
    }
    return st;
}

int tune_cmd_dispatch(int argc, char **argv)
{
    dispatch_cli c;
    int rc = dispatch_parse(argc, argv, &c);
    if (rc)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    tune_error err = {0};
    results_rows rows = {0};
    json_t *meta = NULL;
    dispatch *d = NULL;
    dispatch_options opt = {c.has_methods ? c.methods : NULL, c.n_methods, c.axis, c.tolerance,
                            c.name};
    tune_status st = dispatch_read(c.dirs, c.n_dirs, &rows, &meta, &err);
    if (st == TUNE_OK && !(d = dispatch_build(rows.rows, rows.n, meta, &opt, &err)))
        st = err.code;
    if (st == TUNE_OK && c.out)
        st = write_files(&c, d, &err);
    /* printed after the files: a reader that closes stdout early (| head) costs no file */
    if (st == TUNE_OK) {
        dispatch_write_markdown(d, c.dirs, c.n_dirs, stdout);
        if (c.out)
            printf("\nWrote %s/dispatch.json, %s/dispatch.h and %s/dispatch.md.\n", c.out, c.out,
                   c.out);
    }
    dispatch_free(d);
    results_rows_free(&rows);
    json_decref(meta);
    if (st == TUNE_OK)
        return CLI_EXIT_OK;
    char buf[4096];
    fprintf(stderr, "tune dispatch: %s\n", tune_error_text(&err, buf, sizeof buf));
    return CLI_EXIT_FAILURE;
}
