/* retime.h - retime.jsonl: one line per shape whose fastest tuned configurations were re-timed
 * interleaved (A B C A B C ...), with the verdict.
 *
 *   retime_record r = {.shape = shape, .method = "custom", .rounds = 30, .n = 3, ...};
 *   retime_append(dir, &r);
 *
 *   retime_verdict *v; size_t n;
 *   if (retime_read(dir, &v, &n) == TUNE_OK) { ... free(v); }   // TUNE_ERR_IO: no file
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

/* Appends r to dir/retime.jsonl. A line that cannot be written is lost (the re-timing is a
 * check on measured rows, not a row). */
void retime_append(const char *dir, const retime_record *r);

/* A line read back, as the report shows it: "name=value" lists separated by spaces. */
typedef struct {
    char shape[512], winner[256], runner_up[256];
    double margin;
    int tie;
} retime_verdict;

/* The verdicts of dir/retime.jsonl, in file order; lines that do not parse are left out. *v is
 * new (free it). TUNE_ERR_IO when the file cannot be opened. */
tune_status retime_read(const char *dir, retime_verdict **v, size_t *n);

#endif
