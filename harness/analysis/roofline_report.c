#include "analysis/roofline_report.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/outfile.h"
#include "core/point.h"


typedef struct {
    roofline_report_group g;
    char *model, *source, *device, *method, *worst_shape, *op;
} report_group;

typedef struct {
    char *model, *source, *device;
    roofline_ceilings c;
    int additive; /* 1: the time model's rows */
} report_model;

typedef struct {
    size_t model; /* index into models */
    size_t index; /* line of the row in its source (0-based) */
    double pred, ratio;
    int cls;      /* roofline_bound, or roofline_term for the time model */
} report_row;

struct roofline_report {
    report_group *groups;
    size_t n_groups, cap_groups;
    report_model *models;
    size_t n_models;
    report_row *rows;
    size_t n_rows, cap_rows;
};

roofline_report *roofline_report_new(void)
{
    return calloc(1, sizeof(roofline_report));
}

void roofline_report_free(roofline_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_groups; i++) {
        free(r->groups[i].model);
        free(r->groups[i].source);
        free(r->groups[i].device);
        free(r->groups[i].method);
        free(r->groups[i].worst_shape);
        free(r->groups[i].op);
    }
    for (size_t i = 0; i < r->n_models; i++) {
        free(r->models[i].model);
        free(r->models[i].source);
        free(r->models[i].device);
    }
    free(r->groups);
    free(r->models);
    free(r->rows);
    free(r);
}

size_t roofline_report_n_groups(const roofline_report *r)
{
    return r ? r->n_groups : 0;
}

const roofline_report_group *roofline_report_group_at(const roofline_report *r, size_t i)
{
    return r && i < r->n_groups ? &r->groups[i].g : NULL;
}

static int row_usable(const result_row *row, double pred)
{
    return row->status == RESULT_OK && row->time.n > 0 && isfinite(row->time.median) &&
           row->time.median > 0 && isfinite(pred) && pred > 0;
}

/* The problem-axis values of a row (its first n_axes values). */
static void shape_of(const result_row *row, tune_point *p)
{
    memset(p, 0, sizeof *p);
    for (size_t a = 0; a < row->n_axes && a < row->values.n; a++)
        point_set(p, row->values.names[a], row->values.vals[a]);
}

static int same_shape(const result_row *a, const result_row *b)
{
    if (a->n_axes != b->n_axes)
        return 0;
    for (size_t i = 0; i < a->n_axes; i++) {
        expr_value v;
        if (point_get(&b->values, a->values.names[i], &v) != 0)
            return 0;
        const expr_value *u = &a->values.vals[i];
        if (u->type != v.type)
            return 0;
        if (u->type == EXPR_STR ? strcmp(u->s, v.s) != 0
                                : expr_value_as_double(*u) != expr_value_as_double(v))
            return 0;
    }
    return 1;
}

static char *dup_str(const char *s)
{
    return strdup(s ? s : "");
}

/* What the groups of one roofline_report_add or roofline_report_add_model call share. */
typedef struct {
    const char *model, *source, *device, *op;
    const result_row *rows;
    const double *pred;
    const roofline_bound *bound; /* the roofline's, per row (NULL: every row memory-bound) */
    const roofline_terms *terms; /* the time model's, per row; NULL for the roofline */
} group_input;

/* Row i's class: its dominant term (roofline_term) for the time model, else its bound. */
static int row_class(const group_input *in, size_t i)
{
    if (in->terms)
        return (int)in->terms[i].dominant;
    return in->bound ? (int)in->bound[i] : ROOFLINE_BOUND_MEMORY;
}

static tune_status add_group(roofline_report *r, const group_input *in, const char *method,
                             const char *selection, const size_t *idx, size_t m, tune_error *err)
{
    const char *model = in->model, *source = in->source, *device = in->device;
    const result_row *rows = in->rows;
    const double *pred = in->pred;
    if (r->n_groups == r->cap_groups) {
        size_t cap = r->cap_groups ? 2 * r->cap_groups : 16;
        report_group *ng = realloc(r->groups, cap * sizeof *ng);
        if (!ng)
            return tune_error_set(err, TUNE_ERR_NOMEM, "roofline", "out of memory");
        r->groups = ng;
        r->cap_groups = cap;
    }
    double *p = malloc((m ? m : 1) * sizeof *p), *t = malloc((m ? m : 1) * sizeof *t);
    if (!p || !t) {
        free(p);
        free(t);
        return tune_error_set(err, TUNE_ERR_NOMEM, "roofline", "out of memory");
    }
    report_group *g = &r->groups[r->n_groups];
    memset(g, 0, sizeof *g);
    for (size_t k = 0; k < m; k++) {
        p[k] = pred[idx[k]];
        t[k] = rows[idx[k]].time.median;
        g->g.n_bound[(unsigned)row_class(in, idx[k]) % 5]++;
    }
    roofline_error_compute(p, t, m, &g->g.err);
    g->model = dup_str(model);
    g->source = dup_str(source);
    g->device = dup_str(device);
    g->method = dup_str(method);
    char buf[1024] = "";
    if (g->g.err.n) {
        const result_row *w = &rows[idx[g->g.err.worst]];
        tune_point sp;
        shape_of(w, &sp);
        point_format(&sp, buf, sizeof buf);
        if (w->kernel && strlen(buf) + strlen(w->kernel) + 4 < sizeof buf)
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), " (%s)", w->kernel);
        g->g.worst_pred = p[g->g.err.worst];
        g->g.worst_meas = t[g->g.err.worst];
        g->g.err.worst = idx[g->g.err.worst];
    }
    g->worst_shape = dup_str(buf);
    g->op = dup_str(in->op);
    free(p);
    free(t);
    if (!g->model || !g->source || !g->device || !g->method || !g->worst_shape || !g->op) {
        free(g->model);
        free(g->source);
        free(g->device);
        free(g->method);
        free(g->worst_shape);
        free(g->op);
        return tune_error_set(err, TUNE_ERR_NOMEM, "roofline", "out of memory");
    }
    g->g.model = g->model;
    g->g.source = g->source;
    g->g.device = g->device;
    g->g.method = g->method;
    g->g.selection = selection;
    g->g.worst_shape = g->worst_shape;
    g->g.op = g->op;
    g->g.additive = in->terms != NULL;
    r->n_groups++;
    return TUNE_OK;
}

/* The rows of in (their predictions and classes) and, per method, the groups "all" and "best". */
static tune_status add_input(roofline_report *r, const group_input *in,
                             const roofline_ceilings *c, size_t n, tune_error *err)
{
    const char *model = in->model, *source = in->source, *device = in->device;
    const result_row *rows = in->rows;
    const double *pred = in->pred;
    tune_status st = TUNE_OK;
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    size_t *best = malloc((n ? n : 1) * sizeof *best);
    report_model *nm = realloc(r->models, (r->n_models + 1) * sizeof *nm);
    if (nm)
        r->models = nm;
    if (r->n_rows + n > r->cap_rows) {
        size_t cap = r->n_rows + n + 64;
        report_row *nr = realloc(r->rows, cap * sizeof *nr);
        if (nr) {
            r->rows = nr;
            r->cap_rows = cap;
        }
    }
    if (!idx || !best || !nm || r->n_rows + n > r->cap_rows) {
        st = tune_error_set(err, TUNE_ERR_NOMEM, "roofline", "out of memory");
        goto done;
    }
    size_t mi = r->n_models;
    r->models[mi].model = dup_str(model);
    r->models[mi].source = dup_str(source);
    r->models[mi].device = dup_str(device);
    r->models[mi].c = *c;
    r->models[mi].additive = in->terms != NULL;
    r->n_models++;
    for (size_t i = 0; i < n; i++) {
        if (!row_usable(&rows[i], pred[i]))
            continue;
        report_row *rr = &r->rows[r->n_rows++];
        rr->model = mi;
        rr->index = i;
        rr->pred = pred[i];
        rr->ratio = pred[i] / rows[i].time.median;
        rr->cls = row_class(in, i);
    }
    /* Methods in order of first appearance. */
    for (size_t i = 0; i < n && st == TUNE_OK; i++) {
        const char *method = rows[i].method ? rows[i].method : "";
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(rows[j].method ? rows[j].method : "", method) == 0;
        if (seen)
            continue;
        size_t m = 0, nb = 0;
        for (size_t j = i; j < n; j++)
            if (strcmp(rows[j].method ? rows[j].method : "", method) == 0 &&
                row_usable(&rows[j], pred[j]))
                idx[m++] = j;
        /* best: the fastest usable row of each shape */
        for (size_t k = 0; k < m; k++) {
            size_t b = 0;
            while (b < nb && !same_shape(&rows[best[b]], &rows[idx[k]]))
                b++;
            if (b == nb)
                best[nb++] = idx[k];
            else if (rows[idx[k]].time.median < rows[best[b]].time.median)
                best[b] = idx[k];
        }
        st = add_group(r, in, method, "all", idx, m, err);
        if (st == TUNE_OK)
            st = add_group(r, in, method, "best", best, nb, err);
    }
done:
    free(idx);
    free(best);
    return st;
}

tune_status roofline_report_add(roofline_report *r, const char *model, const char *source,
                                const char *device, const roofline_ceilings *c,
                                const result_row *rows, size_t n, const double *pred,
                                const roofline_bound *bound, tune_error *err)
{
    group_input in = {model, source, device, "", rows, pred, bound, NULL};
    return add_input(r, &in, c, n, err);
}

tune_status roofline_report_add_model(roofline_report *r, const char *model, const char *source,
                                      const char *device, const char *op,
                                      const roofline_ceilings *c, const result_row *rows,
                                      size_t n, const double *pred, const roofline_terms *terms,
                                      tune_error *err)
{
    group_input in = {model, source, device, op ? op : "", rows, pred, NULL, terms};
    return add_input(r, &in, c, n, err);
}

static void markdown_group(const roofline_report_group *g, FILE *f)
{
    if (!g->err.n) {
        fprintf(f, "| %s | %s (%s) | 0 | | | | | | |\n", g->model, g->method, g->selection);
        return;
    }
    fprintf(f, "| %s | %s (%s) | %zu | %.2fx | %.2fx | %s | %.2f / %.2f | %.1f | ", g->model,
            g->method, g->selection, g->err.n, g->err.gmean_error, g->err.worst_error,
            g->worst_shape, g->worst_pred * 1e6, g->worst_meas * 1e6, 100.0 * g->err.gmean_ratio);
    if (g->additive)
        fprintf(f, "%zu / %zu / %zu / %zu / %zu |\n", g->n_bound[0], g->n_bound[1],
                g->n_bound[2], g->n_bound[3], g->n_bound[4]);
    else
        fprintf(f, "%zu / %zu / %zu |\n", g->n_bound[0], g->n_bound[1], g->n_bound[2]);
}

/* The heading of the table whose first group is g: the roofline's, or the time model's. */
static void markdown_heading(const roofline_report_group *g, FILE *f)
{
    if (g->additive)
        fprintf(f, "\n### time model: %s\n\n| model | method | rows | geo-mean error | "
                   "worst error | worst row | model / measured (us) | %% of model | "
                   "floor / chain / transfer / compute / issue dominant |\n"
                   "|---|---|---|---|---|---|---|---|---|\n",
                g->op);
    else
        fprintf(f, "| model | method | rows | geo-mean error | worst error | worst row | "
                   "roofline / measured (us) | %% of roofline | memory / compute / "
                   "launch bound |\n|---|---|---|---|---|---|---|---|---|\n");
}

/* The groups [lo, hi) of one source: the roofline's table, then the time model's. */
static void markdown_source(const roofline_report *r, size_t lo, size_t hi, FILE *f)
{
    const roofline_report_group *first = &r->groups[lo].g;
    fprintf(f, "%s## %s (%s)\n\n", lo ? "\n" : "", first->source, first->device);
    for (int additive = 0; additive < 2; additive++) {
        int any = 0;
        for (size_t i = lo; i < hi; i++) {
            const roofline_report_group *g = &r->groups[i].g;
            if (g->additive != additive)
                continue;
            if (!any++)
                markdown_heading(g, f);
            markdown_group(g, f);
        }
    }
}

void roofline_report_write_markdown(const roofline_report *r, FILE *f)
{
    size_t lo = 0;
    for (size_t i = 1; i <= r->n_groups; i++)
        if (i == r->n_groups || strcmp(r->groups[i].g.source, r->groups[lo].g.source) != 0 ||
            strcmp(r->groups[i].g.device, r->groups[lo].g.device) != 0) {
            markdown_source(r, lo, i, f);
            lo = i;
        }
}

static json_t *num_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *ceilings_json(const roofline_ceilings *c)
{
    json_t *rates = json_object();
    for (int p = 0; p < ROOFLINE_N_PRECISIONS; p++)
        json_object_set_new(rates, roofline_precision_str((roofline_precision)p), num_or_null(c->rate[p]));
    return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "origin",
                     c->origin == ROOFLINE_FROM_CALIBRATION ? "calibration" : "specs x achievable",
                     "read_bw", num_or_null(c->read_bw), "copy_bw", num_or_null(c->copy_bw), "rate",
                     rates, "launch_overhead_s", num_or_null(c->launch_s), "dram_latency_s",
                     num_or_null(c->latency_s), "grid_floor_s", num_or_null(c->floor_s),
                     "gather_element_s", num_or_null(c->gather_elem_s),
                     "gather_element_transposed_s", num_or_null(c->gather_elem_t_s),
                     "gather_element_transposed_dram_s", num_or_null(c->gather_elem_t_dram_s),
                     "random_sector_bw", num_or_null(c->sector_bw), "sm_count",
                     c->sm_count > 0 ? json_integer(c->sm_count) : json_null(), "l2_bytes",
                     num_or_null(c->l2_bytes > 0 ? c->l2_bytes : NAN), "fetch_bytes",
                     num_or_null(c->fetch_bytes));
}

/* One group: the roofline's ("bound": rows by bound) or the time model's ("op", "dominant": rows
 * by dominant term, "worst_model_time", "gmean_fraction_of_model"). */
static json_t *group_json(const roofline_report_group *g)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:o, s:o}", "model", g->model,
                          "kind", g->additive ? "time model" : "roofline", "source", g->source,
                          "device", g->device, "method", g->method, "selection", g->selection,
                          "n", (json_int_t)g->err.n, "gmean_error", num_or_null(g->err.gmean_error),
                          "worst_error", num_or_null(g->err.worst_error));
    if (g->additive) {
        json_object_set_new(o, "op", json_string(g->op));
        json_object_set_new(o, "gmean_fraction_of_model", num_or_null(g->err.gmean_ratio));
        json_object_set_new(o, "worst_shape", json_string(g->worst_shape));
        json_object_set_new(o, "worst_model_time", num_or_null(g->worst_pred));
        json_object_set_new(o, "worst_measured_time", num_or_null(g->worst_meas));
        json_object_set_new(o, "dominant",
                            json_pack("{s:I, s:I, s:I, s:I, s:I}", "floor",
                                      (json_int_t)g->n_bound[0], "chain",
                                      (json_int_t)g->n_bound[1], "transfer",
                                      (json_int_t)g->n_bound[2], "compute",
                                      (json_int_t)g->n_bound[3], "issue",
                                      (json_int_t)g->n_bound[4]));
        return o;
    }
    json_object_set_new(o, "gmean_fraction_of_roofline", num_or_null(g->err.gmean_ratio));
    json_object_set_new(o, "worst_shape", json_string(g->worst_shape));
    json_object_set_new(o, "worst_roofline_time", num_or_null(g->worst_pred));
    json_object_set_new(o, "worst_measured_time", num_or_null(g->worst_meas));
    json_object_set_new(o, "bound", json_pack("{s:I, s:I, s:I}", "memory",
                                              (json_int_t)g->n_bound[0], "compute",
                                              (json_int_t)g->n_bound[1], "launch",
                                              (json_int_t)g->n_bound[2]));
    return o;
}

tune_status roofline_report_write_json(const roofline_report *r, const char *path,
                                       const char *extra_json, tune_error *err)
{
    json_t *root = extra_json ? json_loads(extra_json, 0, NULL) : NULL;
    if (!json_is_object(root)) {
        json_decref(root);
        root = json_object();
    }
    json_t *models = json_array(), *groups = json_array(), *rows = json_array();
    for (size_t i = 0; i < r->n_models; i++)
        json_array_append_new(models, json_pack("{s:s, s:s, s:s, s:o}", "model", r->models[i].model,
                                                "source", r->models[i].source, "device",
                                                r->models[i].device, "ceilings",
                                                ceilings_json(&r->models[i].c)));
    for (size_t i = 0; i < r->n_groups; i++)
        json_array_append_new(groups, group_json(&r->groups[i].g));
    for (size_t i = 0; i < r->n_rows; i++) {
        const report_row *rr = &r->rows[i];
        const report_model *m = &r->models[rr->model];
        json_array_append_new(
            rows, json_pack("{s:s, s:s, s:I, s:f, s:f, s:s}", "model", m->model, "source",
                            m->source, "index", (json_int_t)rr->index,
                            m->additive ? "model_time" : "roofline_time", rr->pred, "ratio",
                            rr->ratio, m->additive ? "dominant" : "bound",
                            m->additive ? roofline_term_str((roofline_term)rr->cls)
                                        : roofline_bound_str((roofline_bound)rr->cls)));
    }
    json_object_set_new(root, "models", models);
    json_object_set_new(root, "groups", groups);
    json_object_set_new(root, "rows", rows);
    tune_status st = outfile_write_json(path, root, JSON_INDENT(1) | JSON_PRESERVE_ORDER, err);
    json_decref(root);
    return st;
}
