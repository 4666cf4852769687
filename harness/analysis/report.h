/* report.h - best-config tables from result rows: the SparQ benchmarks' pivots and more.
 *
 *   report_spec spec = {.rows = (const char *[]){"g"}, .n_rows = 1,
 *                       .cols = (const char *[]){"k_pre", "k"}, .n_cols = 2};
 *   report *r = report_build(rows, n, &spec, &err);
 *   report_write_markdown(r, stdout);
 *   report_write_csv(r, f);  json_t *j = report_to_json(r);
 *   report_free(r);
 *
 * A shape is one combination of problem-axis values. For each shape the best configuration is the
 * row of a tuned method (one whose row has parameters) with status ok and the smallest median
 * time (or energy, or energy-delay product: spec->objective); rows of other statuses never win. Baselines are the methods whose rows have no parameter.
 * Tables (each a pivot: one line per combination of `rows` values, one column per combination of
 * `cols` values; axes with a single value in the data may be left out of both):
 *   - "Best <param>" for every parameter of the tuned method;
 *   - "Achieved bandwidth (GB/s)" of the best configuration;
 *   - "% of measured read bandwidth" of the best configuration (on the modelled DRAM traffic when
 *     the row has it, docs/roofline.md);
 *   - "% of roofline" and "% of model" (the additive time model's time / time) when rows have
 *     them;
 *   - "Best time (us)", and "Energy per call (uJ)" when rows have it;
 *   - "Speedup over <baseline>" (baseline median time / best median time) for every baseline;
 *   - a count of rows by status and method.
 * When spec->rows and spec->cols are both empty: rows = the first problem axis with more than one
 * value, cols = the other axes with more than one value.
 *
 * Markdown layout: a column header joins the column axes' values with '/' ("1024/64") and the
 * corner cell names the axes ("g \ k_pre/k"); empty cells have no data. Axes that vary but are
 * neither rows nor cols (only with an explicit spec) give one set of tables per combination of
 * their values, under a heading such as "## dtype=float16"; axes with one value are named once
 * ("All shapes have n=128."). Units: GB/s without decimals, % with one, us with two, "2.31x".
 * CSV and JSON share their columns: every problem axis, "method" (of the best row), every
 * parameter, "best_time_us", "bandwidth_gb_s", "pct_read_bw", "tflop_s", "pct_roofline",
 * "pct_model", "energy_uj", then "time_us_<baseline>" and
 * "speedup_<baseline>" per baseline; empty (CSV) or null (JSON) without data. JSON:
 * {"axes": [...], "params": [...], "baselines": [...], "shapes": [{...}, ...],
 *  "status_counts": {"<method>": {"<status>": count, ...}, ...}}.
 */
#ifndef TUNE_REPORT_H
#define TUNE_REPORT_H

#include <stdio.h>

#include "core/error.h"
#include "store/results.h"
#include "store/retime.h"

typedef struct {
    const char *const *rows;
    size_t n_rows;
    const char *const *cols;
    size_t n_cols;
    const char *title; /* optional heading, e.g. the sweep name */
    /* optional: the interleaved re-timing's verdicts (store/retime.h), borrowed for the build. A
     * shape with a verdict whose winner has an ok row takes that row as its best (every table,
     * CSV and JSON follow it); a tie is marked "*" in the tables that name the configuration
     * ("Best <param>", "Best method"), with a legend line under each, and the CSV / JSON get a
     * last column "retime": "win", "tie" or empty (null) for a shape not re-timed. */
    const retime_verdict *retime;
    size_t n_retime;
    /* Optional: completes the rows read by report_folders before the tables are built (`tune
     * report` fills the time model's fields of rows measured before they existed); the rows are
     * the report's copy in memory, never the folder's file. */
    void (*fill)(void *ctx, result_row *rows, size_t n);
    void *fill_ctx;
    /* Optional: the folder's meta.json (borrowed for the build; report_folders reads it for one
     * folder). A searched run's (store/meta.h: meta_search_line) best.md says so under the title
     * ("searched: random, budget 10 %: 632 of 6 725 configurations measured") and ends with the
     * candidates measured per shape; best.json gets its "search" block with that "line". */
    const struct json_t *meta;
    /* What each shape's best minimises (core/objective.h; default time): a row without the
     * objective's measure (no energy) never wins; baselines stay the fastest of their method,
     * the re-timing's verdicts (on time) apply to time only, and best.md says the objective
     * under the title when it is not time. */
    tune_objective objective;
} report_spec;

typedef struct report report;

/* New report, or NULL with err set (TUNE_ERR_INVALID: a spec axis that is not a problem axis or
 * is named twice, rows with different problem axes). rows are borrowed: they must outlive the
 * report, which points into them. spec may be NULL; it is not kept. */
report *report_build(const result_row *rows, size_t n, const report_spec *spec, tune_error *err);
void report_free(report *r);

/* Number of shapes (sorted by problem-axis values in axis order; numbers by value, strings after
 * numbers), and for shape i: its best row (NULL when nothing ran ok; borrowed from the
 * rows passed to report_build, so valid only while they are). */
size_t report_n_shapes(const report *r);
const result_row *report_best(const report *r, size_t shape);

void report_write_markdown(const report *r, FILE *f);
void report_write_csv(const report *r, FILE *f);     /* a header line, then one line per shape */
struct json_t *report_to_json(const report *r);      /* new reference */

/* Writes best.md, best.csv and best.json into dir. */
tune_status report_write_files(const report *r, const char *dir, tune_error *err);

/* The tables of the rows of results folders (several: merged) written into out_dir (when not
 * NULL) as best.md, best.csv and best.json, then printed as Markdown unless quiet; the folders
 * read are never written (a run passes its own folder as out_dir). With one folder, best.md (and
 * the printout) ends with the verdicts of its retime.jsonl (store/retime.h), when it has one: a
 * table of the winner, runner-up, margin and "tie" or "win" per shape. */
tune_status report_folders(const char *const *dirs, size_t n_dirs, const report_spec *spec,
                           const char *out_dir, int quiet, tune_error *err);
/* `tune report`: report_folders with the axes of dirs[0]'s meta.json (the sweep's), or rows /
 * cols: comma-separated problem axes of the pivots. */
tune_status report_rebuild(const char *const *dirs, size_t n_dirs, const char *rows,
                           const char *cols, const char *out_dir, int quiet, tune_error *err);
/* report_rebuild with spec's fill hook (report_spec.fill), ranked by objective. */
tune_status report_rebuild_filled(const char *const *dirs, size_t n_dirs, const char *rows,
                                  const char *cols, const char *out_dir, int quiet,
                                  tune_objective objective,
                                  void (*fill)(void *ctx, result_row *rows, size_t n),
                                  void *fill_ctx, tune_error *err);

#endif
