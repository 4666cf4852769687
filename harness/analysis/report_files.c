/* report_files.c - the report module's files: best.md, best.csv and best.json of a results
 * folder, best.md with the interleaved re-timing's verdicts; `tune report`. */
#include "analysis/report.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/outfile.h"
#include "store/meta.h"
#include "store/retime.h"

typedef enum { REPORT_MD, REPORT_CSV, REPORT_JSON } report_format;

/* The interleaved re-timing's verdicts as a Markdown table: per shape, the winner, the
 * runner-up, the margin and "tie" when the margin is within the noise. */
static void report_write_retime(const retime_verdict *v, size_t n, FILE *f)
{
    fprintf(f,
            "\n## Winners re-timed interleaved (%d rounds, A B C A B C ...)\n\n"
            "| shape | winner | runner-up | margin | verdict |\n|---|---|---|---|---|\n",
            SWEEP_RETIME_ROUNDS);
    size_t ties = 0;
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "| %s | %s | %s | %.2f %% | %s |\n", v[i].shape, v[i].winner, v[i].runner_up,
                100 * v[i].margin, v[i].tie ? "tie" : "win");
        ties += v[i].tie;
    }
    fprintf(f,
            "\n%zu shapes re-timed, %zu ties: a tie means the runner-up is within twice the "
            "combined standard error of the two medians.\n",
            n, ties);
}

/* The re-timing verdicts of one folder's best.md: retime != NULL when it has a retime.jsonl. */
typedef struct {
    const retime_verdict *v;
    size_t n;
} report_retime;

static tune_status report_write_one(const report *r, const char *dir, report_format fmt,
                                    const report_retime *retime, outfile_set *set,
                                    tune_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir,
             fmt == REPORT_MD    ? "best.md"
             : fmt == REPORT_CSV ? "best.csv"
                                 : "best.json");
    json_t *j = fmt == REPORT_JSON ? report_to_json(r) : NULL;
    if (fmt == REPORT_JSON && !j)
        return tune_error_set(err, TUNE_ERR_NOMEM, path, "cannot build the JSON report");
    FILE *f = outfile_set_open(set, path, err);
    if (!f) {
        json_decref(j);
        return TUNE_ERR_IO;
    }
    int bad = 0;
    if (fmt == REPORT_MD) {
        report_write_markdown(r, f);
        if (retime)
            report_write_retime(retime->v, retime->n, f);
    } else if (fmt == REPORT_CSV) {
        report_write_csv(r, f);
    } else {
        bad = json_dumpf(j, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0 || fputc('\n', f) == EOF;
    }
    json_decref(j);
    (void)bad; /* a failed write is remembered by the stream and reported by the commit */
    return TUNE_OK;
}

static tune_status report_write_all(const report *r, const char *dir, const report_retime *retime,
                                    tune_error *err)
{
    tune_status st = outfile_mkdirs(dir, err);
    outfile_set *set = st == TUNE_OK ? outfile_set_new() : NULL;
    if (st == TUNE_OK && !set)
        st = tune_error_set(err, TUNE_ERR_NOMEM, dir, "out of host memory");
    /* the three tables together or none: a failed write never leaves a mix of two reports */
    if (st == TUNE_OK)
        st = report_write_one(r, dir, REPORT_MD, retime, set, err);
    if (st == TUNE_OK)
        st = report_write_one(r, dir, REPORT_CSV, NULL, set, err);
    if (st == TUNE_OK)
        st = report_write_one(r, dir, REPORT_JSON, NULL, set, err);
    if (st == TUNE_OK)
        return outfile_set_commit(set, err);
    outfile_set_abort(set);
    return st;
}

tune_status report_write_files(const report *r, const char *dir, tune_error *err)
{
    return report_write_all(r, dir, NULL, err);
}

tune_status report_folders(const char *const *dirs, size_t n_dirs, const report_spec *spec,
                           const char *out_dir, int quiet, tune_error *err)
{
    results_rows all = {0};
    retime_verdict *v = NULL;
    report_retime retime = {NULL, 0};
    /* the verdicts of one folder decide its winners; over several folders (different runs) the
     * fastest median decides */
    tune_status st = n_dirs == 1 ? retime_read(dirs[0], &v, &retime.n, err) : TUNE_OK;
    int have_retime = st == TUNE_OK && retime.n > 0;
    retime.v = v;
    report_spec with = {0};
    if (spec)
        with = *spec;
    with.retime = v;
    with.n_retime = retime.n;
    json_t *meta = !with.meta && n_dirs == 1 ? meta_load(dirs[0], NULL) : NULL;
    if (meta) /* a searched run's tables say so */
        with.meta = meta;
    if (st == TUNE_OK)
        st = results_read_dirs(dirs, n_dirs, &all, err);
    size_t n_dup = 0; /* a configuration measured twice (a resumed run, a folder given twice) */
    if (st == TUNE_OK)
        st = results_rows_dedup(&all, &n_dup, err);
    if (st == TUNE_OK && n_dup && !quiet)
        fprintf(stderr, "tune: %zu duplicated rows (a configuration measured twice): the last "
                        "row of each is used\n", n_dup);
    if (st == TUNE_OK && spec && spec->fill)
        spec->fill(spec->fill_ctx, all.rows, all.n);
    report *r = st == TUNE_OK ? report_build(all.rows, all.n, &with, err) : NULL;
    if (st == TUNE_OK && !r)
        st = err ? err->code : TUNE_ERR_INVALID;
    if (r) {
        /* the files first: a reader that closes stdout early (| head) costs no file */
        if (out_dir)
            st = report_write_all(r, out_dir, have_retime ? &retime : NULL, err);
        if (st == TUNE_OK && !quiet) {
            report_write_markdown(r, stdout);
            if (have_retime)
                report_write_retime(retime.v, retime.n, stdout);
        }
        report_free(r);
    }
    free(v);
    json_decref(meta);
    results_rows_free(&all);
    return st;
}

/* Splits a comma-separated list into names (pointing into buf, which it modifies). */
static size_t split_names(char *buf, const char **names, size_t max)
{
    size_t n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && n < max;
         t = strtok_r(NULL, ",", &save))
        names[n++] = t;
    return n;
}

tune_status report_rebuild(const char *const *dirs, size_t n_dirs, const char *rows_csv,
                           const char *cols_csv, const char *out_dir, int quiet, tune_error *err)
{
    return report_rebuild_filled(dirs, n_dirs, rows_csv, cols_csv, out_dir, quiet,
                                 OBJECTIVE_TIME, NULL, NULL, err);
}

tune_status report_rebuild_filled(const char *const *dirs, size_t n_dirs, const char *rows_csv,
                                  const char *cols_csv, const char *out_dir, int quiet,
                                  tune_objective objective,
                                  void (*fill)(void *ctx, result_row *rows, size_t n),
                                  void *fill_ctx, tune_error *err)
{
    json_t *meta = NULL;
    tune_status cst = meta_check_folders(dirs, n_dirs, &meta, err);
    if (cst != TUNE_OK)
        return cst;
    const char *rows[TUNE_MAX_AXES], *cols[TUNE_MAX_AXES];
    report_spec spec = {
        .rows = rows, .cols = cols, .fill = fill, .fill_ctx = fill_ctx, .objective = objective};
    meta_report_axes(meta, rows, &spec.n_rows, cols, &spec.n_cols, TUNE_MAX_AXES, &spec.title);
    char rows_buf[1024], cols_buf[1024];
    if (rows_csv || cols_csv) {
        snprintf(rows_buf, sizeof rows_buf, "%s", rows_csv ? rows_csv : "");
        snprintf(cols_buf, sizeof cols_buf, "%s", cols_csv ? cols_csv : "");
        spec.n_rows = split_names(rows_buf, rows, TUNE_MAX_AXES);
        spec.n_cols = split_names(cols_buf, cols, TUNE_MAX_AXES);
    }
    tune_status st = report_folders(dirs, n_dirs, &spec, out_dir, quiet, err);
    json_decref(meta);
    return st;
}
