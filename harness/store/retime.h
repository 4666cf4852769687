/* retime.h - retime.jsonl: one line per shape whose fastest tuned configurations were re-timed
 * interleaved (A B C A B C ...), with the verdict.
 *
 *   retime_record r = {.shape = shape, .method = "custom", .rounds = 30, .n = 3, ...};
 *   if (retime_append(dir, &r, &err) != TUNE_OK) ...   // a whole line or nothing
 *
 *   retime_verdict *v; size_t n;
 *   if (retime_read(dir, &v, &n, &err) == TUNE_OK) { ... free(v); }   // n == 0: no file
 *
 * A line: {"shape": {axis: value, ...}, "method", "rounds", "candidates": [{"params": {...},
 * "first_median", "median", "stderr"}, ...], "winner": {params}, "runner_up": {params},
 * "margin": (runner-up - winner) / winner, "tie": the margin is within twice the combined
 * standard error of the two medians}.
 */
#ifndef TUNE_RETIME_H
#define TUNE_RETIME_H

#include <stddef.h>

#include "core/error.h"
#include "core/point.h"
#include "model/sweep.h"

typedef struct {
    tune_point params; /* the configuration's parameters (borrowed names and strings) */
    double first_median, median, stderr_s;
} retime_candidate;

typedef struct {
    tune_point shape; /* problem axes (borrowed) */
    const char *method;
    int rounds;
    size_t n; /* candidates, 2 .. SWEEP_RETIME_TOP */
    retime_candidate cand[SWEEP_RETIME_TOP];
    size_t winner, runner_up; /* indices into cand */
    double margin;
    int tie;
} retime_record;

/* Appends r to dir/retime.jsonl as one whole line (store/folder.h: folder_append_line): a line
 * that cannot be written is cut back and reported (TUNE_ERR_IO naming the file and why). */
TUNE_MUST_CHECK tune_status retime_append(const char *dir, const retime_record *r, tune_error *err);

/* A line read back, as the report shows it: "name=value" lists separated by spaces. */
typedef struct {
    char shape[512], winner[256], runner_up[256];
    char method[64];
    /* the winner's configuration identity (core/point.h: point_identity of the method over the
     * shape and the winner's parameters): equal to results_row_identity of its row */
    char winner_id[2048];
    double margin;
    int tie;
} retime_verdict;

/* The verdicts of dir/retime.jsonl (or of dir/retime.jsonl.gz, gzipped by hand: folder_locate),
 * in file order. *v is new (free it); TUNE_OK with *n == 0 and *v == NULL when dir has neither.
 * The file is read through store/folder.h's folder_lines (a regular file of bounded size, lines
 * of at most 1 MiB); a line that is not a verdict is an error naming the file and line
 * ("run/retime.jsonl:3: key 'tie': expected true or false"). */
TUNE_MUST_CHECK tune_status retime_read(const char *dir, retime_verdict **v, size_t *n,
                                        tune_error *err);

#endif
