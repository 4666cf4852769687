/* retime.c - a shape's fastest tuned configurations re-timed interleaved (A B C A B C ...), so
 * that drift hits them alike; the verdict goes to retime.jsonl (store/retime.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"
#include "run/internal.h"
#include "store/retime.h"

static int candidate_cmp(const void *a, const void *b)
{
    double x = ((const run_candidate *)a)->median, y = ((const run_candidate *)b)->median;
    return x < y ? -1 : x > y;
}

/* The configuration's parameters (the sweep's, in order). */
static void params_point(const run_ctx *rc, const tune_point *p, tune_point *out)
{
    memset(out, 0, sizeof *out);
    for (size_t a = 0; a < rc->sw->n_params; a++) {
        expr_value v;
        if (point_get(p, rc->sw->params[a].name, &v) == 0)
            point_set(out, rc->sw->params[a].name, v);
    }
}

/* The winner, its margin over the runner-up, and "tie" when that margin is within twice the
 * combined standard error of the two medians. A re-timing that fails to measure costs nothing
 * measured (TUNE_OK); a verdict that cannot be appended is an error (err). */
tune_status run_retime_shape(run_ctx *rc, void *state, timing *tm, run_candidate *cands, size_t n,
                             tune_error *err)
{
    enum { TOP = SWEEP_RETIME_TOP, ROUNDS = SWEEP_RETIME_ROUNDS };
    if (n < 2)
        return TUNE_OK;
    qsort(cands, n, sizeof *cands, candidate_cmp);
    size_t k = n < TOP ? n : TOP;
    tune_point pts[TOP];
    const tune_point *cfgs[TOP];
    for (size_t c = 0; c < k; c++) {
        space_config_point(rc->sp, cands[c].ci, &pts[c]);
        cfgs[c] = &pts[c];
    }
    double samples[TOP * ROUNDS];
    tune_error e = {0};
    if (timing_interleaved(tm, rc->sw->family, state, cfgs, k, ROUNDS, rc->sw->timing.flush_l2,
                           samples, &e) != TUNE_OK)
        return TUNE_OK; /* a retime that fails costs nothing measured */
    stats_summary st[TOP];
    size_t win = 0, second = SIZE_MAX;
    for (size_t c = 0; c < k; c++) {
        stats_summarize(samples + c * ROUNDS, ROUNDS, &st[c]);
        if (st[c].median < st[win].median)
            win = c;
    }
    for (size_t c = 0; c < k; c++)
        if (c != win && (second == SIZE_MAX || st[c].median < st[second].median))
            second = c;
    /* standard error of a median ~ 1.2533 sigma / sqrt(n) */
    double se_w = 1.2533 * st[win].stdev / sqrt((double)ROUNDS);
    double se_s = 1.2533 * st[second].stdev / sqrt((double)ROUNDS);
    double diff = st[second].median - st[win].median;

    retime_record r = {.rounds = ROUNDS, .n = k, .winner = win, .runner_up = second};
    const space_config *c0 = space_config_at(rc->sp, cands[0].ci);
    const tune_point *sp = space_shape(rc->sp, c0->shape);
    for (size_t a = 0; a < rc->sw->n_problem; a++) {
        expr_value v;
        if (point_get(sp, rc->sw->problem[a].name, &v) == 0)
            point_set(&r.shape, rc->sw->problem[a].name, v);
    }
    r.method = rc->sw->methods[c0->method];
    for (size_t c = 0; c < k; c++) {
        params_point(rc, cfgs[c], &r.cand[c].params);
        r.cand[c].first_median = cands[c].median;
        r.cand[c].median = st[c].median;
        r.cand[c].stderr_s = 1.2533 * st[c].stdev / sqrt((double)ROUNDS);
    }
    r.margin = diff / st[win].median;
    r.tie = diff < 2.0 * sqrt(se_w * se_w + se_s * se_s);
    return retime_append(rc->out_dir, &r, err);
}
