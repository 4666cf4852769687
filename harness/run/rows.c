/* rows.c - a configuration's row: what is known before it runs, why it cannot run, and its
 * validation and measurement. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/roofline_calibration.h"
#include "analysis/roofline_model.h"
#include "core/stats.h"
#include "run/internal.h"

void run_row_fill(const run_ctx *rc, size_t ci, const tune_point *p, result_row *row,
                  const char *device)
{
    const sweep *sw = rc->sw;
    const space_config *c = space_config_at(rc->sp, ci);
    result_row_init(row);
    row->sweep = sw->name;
    row->family = sw->family_name;
    row->op = sw->op;
    row->method = sw->methods[c->method];
    for (size_t a = 0; a < sw->n_problem; a++) {
        expr_value v;
        if (point_get(p, sw->problem[a].name, &v) == 0)
            point_set(&row->values, sw->problem[a].name, v);
    }
    row->n_axes = row->values.n;
    row->n_params = sw->n_params;
    for (size_t a = 0; a < sw->n_params; a++) {
        row->param_names[a] = sw->params[a].name;
        expr_value v;
        if (c->param != SPACE_NO_PARAM && point_get(p, sw->params[a].name, &v) == 0)
            point_set(&row->values, sw->params[a].name, v);
    }
    row->device = (char *)device;
    expr_value v;
    if (expr_eval(sw->bytes, point_lookup, (void *)p, &v, NULL) == TUNE_OK)
        row->bytes = expr_value_as_double(v);
    if (expr_eval(sw->flops, point_lookup, (void *)p, &v, NULL) == TUNE_OK)
        row->flops = expr_value_as_double(v);
    const run_plan *pl = run_plan_find(rc, ci);
    if (pl && pl->n_refs > 0 && pl->row_ref >= 0 && c->param != SPACE_NO_PARAM)
        row->kernel = rc->kernels[pl->refs[pl->row_ref]].job.name;
}

int run_row_unrunnable(const run_ctx *rc, size_t ci, result_row *row)
{
    const run_plan *pl = run_plan_find(rc, ci);
    if (!pl) { /* every configuration measured or written is planned first: never expected */
        row->status = RESULT_SKIPPED;
        row->reason = "not planned (an internal error of tune)";
        return 1;
    }
    if (pl->skip) {
        row->status = RESULT_SKIPPED;
        row->reason = pl->skip;
        return 1;
    }
    for (int r = 0; r < pl->n_refs; r++) {
        const compile_job *j = &rc->kernels[pl->refs[r]].job;
        if (j->status != TUNE_OK) {
            row->status = RESULT_COMPILE_ERROR;
            row->reason = j->log ? j->log : "compile error";
            return 1;
        }
    }
    return 0;
}

/* The measured part of an ok row: statistics, how it was timed, rates, roofline, NVML. */
static void row_measured(run_ctx *rc, const double *samples, const timing_info *ti, result_row *row,
                         char *reason, size_t reason_size)
{
    stats_summarize(samples, ti->n, &row->time);
    row->timing_mode = (char *)ti->mode; /* static strings */
    row->stop_reason = (char *)ti->stop_reason;
    row->batch = ti->batch;
    if (ti->note) { /* why graph mode fell back to hot: kept in the reason */
        snprintf(reason, reason_size, "%s", ti->note);
        row->reason = reason;
    }
    row->status = RESULT_OK;
    row->bandwidth = row->bytes / row->time.median;
    row->flop_rate = row->flops / row->time.median;
    row->read_bw = rc->read_bw;
    row->pct_read_bw = 100.0 * row->bandwidth / rc->read_bw;
    if (rc->have_ceil) {
        roofline_precision prec = roofline_row_precision(row, rc->sw->family->dtype_axis);
        row->roofline_time = roofline_time(&rc->ceil, row->bytes, row->flops, prec, NULL);
        row->roofline_fraction = row->roofline_time / row->time.median;
        roofline_model_fill_row(rc->sw->family, &rc->ceil, row);
    }
    monitor_sample ms;
    if (monitor_read(rc->mon, &ms) == 0) {
        row->clock_sm_mhz = ms.sm_mhz;
        row->clock_mem_mhz = ms.mem_mhz;
        row->temperature_c = ms.temperature_c;
        row->power_w = ms.power_w;
        row->throttle_reasons = ms.throttle_reasons;
    }
}

int run_measures_energy(const run_ctx *rc)
{
    return rc->opt->energy || objective_needs_energy(rc->opt->objective);
}

void run_energy_probe(run_ctx *rc)
{
    double period = 0;
    rc->energy_period_s = 0;
    if (run_measures_energy(rc))
        rc->energy_period_s = monitor_energy_period(rc->mon, 2.0, &period) == 0 ? period : -1;
}

static int row_energy_read(void *ctx, double *joules)
{
    return monitor_energy(ctx, joules);
}

/* The energy of an ok row's call, measured after its timing (timing.h: timing_energy); a CUDA
 * error here fails the row as its timing would. */
static tune_status row_energy(run_ctx *rc, void *state, timing *tm, result_row *row,
                              tune_error *e)
{
    timing_energy_counter c = {row_energy_read, rc->mon, rc->energy_period_s};
    timing_energy_info ei;
    tune_status st = timing_energy(tm, rc->sw->family, state, &rc->sw->timing, row->time.median,
                                   &c, &ei, e);
    if (st == TUNE_OK) {
        row->energy_j = ei.joules;
        row->energy_note = (char *)ei.note; /* static */
    }
    return st;
}

void run_row_measure(run_ctx *rc, void *state, timing *tm, const tune_point *p, result_row *row,
                     char *reason, size_t reason_size)
{
    const tune_family *fam = rc->sw->family;
    tune_error e = {0};
    double err_val, tol;
    tune_status st = fam->prepare(state, p, &e);
    if (st == TUNE_OK)
        st = fam->check(state, &err_val, &tol, &e);
    if (st != TUNE_OK) {
        row->status =
            st == TUNE_ERR_UNSUPPORTED || st == TUNE_ERR_OOM ? RESULT_SKIPPED : RESULT_LAUNCH_ERROR;
        char text[2048];
        snprintf(reason, reason_size, "%s%s", st == TUNE_ERR_OOM ? "out of memory: " : "",
                 tune_error_text(&e, text, sizeof text));
        row->reason = reason;
        return;
    }
    row->error = err_val;
    row->tolerance = tol;
    if (!(err_val <= tol)) {
        row->status = RESULT_INVALID;
        snprintf(reason, reason_size, "normalised error %.3g exceeds tolerance %.3g", err_val, tol);
        row->reason = reason;
        return;
    }
    double *samples = malloc(timing_max_samples(&rc->sw->timing) * sizeof *samples);
    timing_info ti;
    /* A measurement during which NVML reported a slowdown (power cap, thermal, hardware slowdown)
     * is flagged; with --retake-throttled N it is taken again, up to N times. */
    int throttled = 0;
    for (int attempt = 0; samples; attempt++) {
        monitor_sample before, after;
        int seen = monitor_read(rc->mon, &before) == 0;
        st = timing_measure(tm, fam, state, &rc->sw->timing, samples, &ti, &e);
        seen = seen && monitor_read(rc->mon, &after) == 0;
        throttled = seen && monitor_throttled(&before, &after);
        if (st != TUNE_OK || !throttled || attempt >= rc->opt->retake_throttled)
            break;
    }
    if (!samples)
        st = TUNE_ERR_NOMEM;
    row->throttled = throttled;
    if (st != TUNE_OK) {
        row->status = RESULT_LAUNCH_ERROR;
        row->reason = (char *)tune_error_text(&e, reason, reason_size);
    } else {
        row_measured(rc, samples, &ti, row, reason, reason_size);
        if (run_measures_energy(rc) && row_energy(rc, state, tm, row, &e) != TUNE_OK) {
            row->status = RESULT_LAUNCH_ERROR;
            row->reason = (char *)tune_error_text(&e, reason, reason_size);
        }
    }
    free(samples);
}

/* Ceilings for the rows' roofline times: the device's calibration file (results root's
 * calibration/<device>.json, from `tune calibrate`) when there is one, else the specs table's
 * peak x achievable, into *c (when found: 1) and where they come from into rc->ceil_source. */
static int find_ceilings(run_ctx *rc, roofline_ceilings *c)
{
    return roofline_ceilings_find(rc->opt->out_root, rc->gi.name, c, rc->ceil_source,
                                  sizeof rc->ceil_source);
}

/* The ceilings of the rows (in a worker); the read bandwidth measured by this run replaces the
 * file's or the table's. */
void run_load_ceilings(run_ctx *rc, double read_bw)
{
    rc->have_ceil = find_ceilings(rc, &rc->ceil);
    if (rc->have_ceil) {
        rc->ceil.read_bw = read_bw;
        if (rc->ceil.copy_bw > read_bw)
            rc->ceil.copy_bw = read_bw;
    }
}

/* Where the workers' ceilings will come from, for meta.json (the coordinator, before the
 * workers start: they load the same file). */
void run_note_ceilings(run_ctx *rc)
{
    roofline_ceilings c;
    find_ceilings(rc, &c);
}
