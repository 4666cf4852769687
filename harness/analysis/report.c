#include "analysis/report.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "analysis/report_impl.h"
#include "core/hash.h"
#include "store/meta.h"


/* ---- values and shapes ---- */

static double report_num(expr_value v)
{
    return v.type == EXPR_INT ? (double)v.i : v.f;
}

/* Numbers (by value) before strings (by content). */
static int report_cmp_value(expr_value a, expr_value b)
{
    int as = a.type == EXPR_STR, bs = b.type == EXPR_STR;
    if (as || bs)
        return as != bs ? as - bs : strcmp(a.s, b.s);
    if (a.type == EXPR_INT && b.type == EXPR_INT)
        return (a.i > b.i) - (a.i < b.i);
    double x = report_num(a), y = report_num(b);
    return (x > y) - (x < y);
}

/* Compares two shapes on the axes idx[0..n). */
int report_cmp_on(const report_shape *a, const report_shape *b, const size_t *idx, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int c = report_cmp_value(a->key[idx[i]], b->key[idx[i]]);
        if (c)
            return c;
    }
    return 0;
}

static int report_cmp_shape(const void *pa, const void *pb)
{
    const report_shape *a = pa, *b = pb;
    for (size_t i = 0; i < a->n_keys; i++) {
        int c = report_cmp_value(a->key[i], b->key[i]);
        if (c)
            return c;
    }
    return 0;
}

static int report_is_tuned_row(const report *r, const result_row *row)
{
    return row->values.n > r->n_axes;
}

static int report_time_ok(const result_row *row)
{
    return row->status == RESULT_OK && row->time.n > 0 && isfinite(row->time.median);
}

static tune_status report_row_key(const report *r, const result_row *row, size_t i, report_shape *s,
                                  tune_error *err)
{
    memset(s, 0, sizeof *s);
    s->n_keys = r->n_axes;
    if (row->n_axes != r->n_axes)
        goto differ;
    for (size_t a = 0; a < r->n_axes; a++)
        if (point_get(&row->values, r->axes[a], &s->key[a]) != 0)
            goto differ;
    return TUNE_OK;
differ:
    return tune_error_set(err, TUNE_ERR_INVALID, "report",
                          "row %zu (method %s) has other problem axes than the first row", i,
                          row->method ? row->method : "?");
}

/* ---- building ---- */

static size_t report_method_index(report *r, const char *name)
{
    for (size_t m = 0; m < r->n_methods; m++)
        if (strcmp(r->methods[m].name, name) == 0)
            return m;
    report_method *m = &r->methods[r->n_methods];
    memset(m, 0, sizeof *m);
    m->name = name;
    return r->n_methods++;
}

static void report_add_param(report *r, const char *name)
{
    for (size_t j = 0; j < r->n_params; j++)
        if (strcmp(r->params[j], name) == 0)
            return;
    if (r->n_params < TUNE_MAX_AXES)
        r->params[r->n_params++] = name;
}

static tune_status report_count_skip(report *r, const char *reason)
{
    char cat[64];
    size_t len = strcspn(reason ? reason : "", ":");
    snprintf(cat, sizeof cat, "%.*s", (int)(len < sizeof cat - 1 ? len : sizeof cat - 1),
             reason && *reason ? reason : "no reason given");
    for (size_t i = 0; i < r->n_skips; i++)
        if (strcmp(r->skips[i].category, cat) == 0) {
            r->skips[i].count++;
            return TUNE_OK;
        }
    report_skip *grown = realloc(r->skips, (r->n_skips + 1) * sizeof *grown);
    if (!grown)
        return TUNE_ERR_NOMEM;
    r->skips = grown;
    snprintf(r->skips[r->n_skips].category, sizeof r->skips[0].category, "%s", cat);
    r->skips[r->n_skips++].count = 1;
    return TUNE_OK;
}

static tune_status report_collect_methods(report *r, const result_row *rows, size_t n)
{
    r->methods = calloc(n ? n : 1, sizeof *r->methods);
    r->baselines = calloc(n ? n : 1, sizeof *r->baselines);
    if (!r->methods || !r->baselines)
        return TUNE_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        report_method *m =
            &r->methods[report_method_index(r, rows[i].method ? rows[i].method : "?")];
        if ((size_t)rows[i].status < REPORT_N_STATUS)
            m->counts[rows[i].status]++;
        if (rows[i].status == RESULT_SKIPPED && report_count_skip(r, rows[i].reason) != TUNE_OK)
            return TUNE_ERR_NOMEM;
        m->tuned |= report_is_tuned_row(r, &rows[i]);
        for (size_t j = 0; j < rows[i].n_params; j++)
            report_add_param(r, rows[i].param_names[j]);
    }
    for (size_t m = 0; m < r->n_methods; m++) {
        if (r->methods[m].tuned)
            r->n_tuned++;
        else
            r->baselines[r->n_baselines++] = m;
    }
    return TUNE_OK;
}

/* A hash of a shape's key that equal keys (report_cmp_shape) share: numbers by their value as a
 * double (an integer and a float that compare equal hash alike), strings by their text. */
static uint64_t report_hash_shape(const report_shape *s)
{
    uint64_t h = HASH_FNV_OFFSET;
    for (size_t i = 0; i < s->n_keys; i++) {
        if (s->key[i].type == EXPR_STR) {
            h = hash_fnv1a_str(h, s->key[i].s);
        } else {
            double x = report_num(s->key[i]);
            x = x == 0 ? 0 : x; /* -0.0 and 0.0 compare equal */
            h = hash_fnv1a(h, &x, sizeof x);
        }
        h = hash_fnv1a(h, "|", 1);
    }
    return h;
}

/* The distinct shapes of the rows, sorted: one pass with an open-addressing hash table of the
 * shapes seen (linear in the rows; comparing each row with every shape was quadratic). */
static tune_status report_collect_shapes(report *r, const result_row *rows, size_t n,
                                         tune_error *err)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    r->shapes = calloc(n ? n : 1, sizeof *r->shapes);
    size_t *slot = malloc(cap * sizeof *slot); /* shape index + 1; 0: empty */
    if (!r->shapes || !slot) {
        free(slot);
        return tune_error_set(err, TUNE_ERR_NOMEM, "report", "out of memory");
    }
    memset(slot, 0, cap * sizeof *slot);
    for (size_t i = 0; i < n; i++) {
        report_shape key;
        tune_status st = report_row_key(r, &rows[i], i, &key, err);
        if (st != TUNE_OK) {
            free(slot);
            return st;
        }
        size_t at = (size_t)report_hash_shape(&key) & (cap - 1);
        while (slot[at] && report_cmp_shape(&key, &r->shapes[slot[at] - 1]) != 0)
            at = (at + 1) & (cap - 1);
        if (!slot[at]) {
            r->shapes[r->n_shapes++] = key;
            slot[at] = r->n_shapes;
        }
    }
    free(slot);
    qsort(r->shapes, r->n_shapes, sizeof *r->shapes, report_cmp_shape);
    return TUNE_OK;
}

static size_t report_baseline_index(const report *r, const char *method)
{
    for (size_t b = 0; b < r->n_baselines; b++)
        if (strcmp(r->methods[r->baselines[b]].name, method) == 0)
            return b;
    return r->n_baselines;
}

/* Keeps in *slot the better of *slot and row under obj; a row without obj's measure never wins. */
static void report_keep_better(tune_objective obj, const result_row **slot, const result_row *row)
{
    double c = results_row_cost(row, obj);
    if (report_time_ok(row) && isfinite(c) && (!*slot || c < results_row_cost(*slot, obj)))
        *slot = row;
}

static tune_status report_pick_best(report *r, const result_row *rows, size_t n)
{
    size_t nb = r->n_baselines ? r->n_baselines : 1;
    r->base_store = calloc(r->n_shapes * nb + 1, sizeof *r->base_store);
    if (!r->base_store)
        return TUNE_ERR_NOMEM;
    for (size_t s = 0; s < r->n_shapes; s++)
        r->shapes[s].base = &r->base_store[s * nb];
    for (size_t i = 0; i < n; i++) {
        report_shape key;
        report_row_key(r, &rows[i], i, &key, NULL);
        report_shape *s = bsearch(&key, r->shapes, r->n_shapes, sizeof key, report_cmp_shape);
        if (report_is_tuned_row(r, &rows[i])) {
            report_keep_better(r->objective, &s->best, &rows[i]);
            continue;
        }
        size_t b = report_baseline_index(r, rows[i].method ? rows[i].method : "?");
        if (b < r->n_baselines)
            report_keep_better(OBJECTIVE_TIME, &s->base[b], &rows[i]); /* speedups: time */
    }
    return TUNE_OK;
}

/* The re-timing decides: a shape with a verdict takes the verdict's winner as its best, when the
 * winner has an ok row (its identity, results_row_identity, is the verdict's winner_id). */
static void report_apply_retime(report *r, const result_row *rows, size_t n,
                                const report_spec *spec)
{
    if (!spec || !spec->n_retime || r->objective != OBJECTIVE_TIME) /* a verdict on time */
        return;
    r->has_retime = 1;
    for (size_t i = 0; i < n; i++) {
        if (!report_is_tuned_row(r, &rows[i]) || !report_time_ok(&rows[i]))
            continue;
        char id[sizeof spec->retime[0].winner_id];
        results_row_identity(&rows[i], id, sizeof id);
        for (size_t k = 0; k < spec->n_retime; k++) {
            if (strcmp(spec->retime[k].winner_id, id) != 0)
                continue;
            report_shape key;
            report_row_key(r, &rows[i], i, &key, NULL);
            report_shape *s = bsearch(&key, r->shapes, r->n_shapes, sizeof key, report_cmp_shape);
            s->best = &rows[i];
            s->retime = spec->retime[k].tie ? REPORT_RETIME_TIE : REPORT_RETIME_WIN;
            break;
        }
    }
}

/* ---- layout ---- */

static int report_axis_varies(const report *r, size_t a)
{
    for (size_t s = 1; s < r->n_shapes; s++)
        if (report_cmp_value(r->shapes[s].key[a], r->shapes[0].key[a]) != 0)
            return 1;
    return 0;
}

static tune_status report_use_axes(report *r, const char *const *names, size_t n, size_t *out,
                                   size_t *n_out, int *used, tune_error *err)
{
    for (size_t i = 0; i < n; i++) {
        size_t a = 0;
        while (a < r->n_axes && strcmp(r->axes[a], names[i]) != 0)
            a++;
        if (a == r->n_axes)
            return tune_error_set(err, TUNE_ERR_INVALID, "report",
                                  "'%s' is not a problem axis of these results", names[i]);
        if (used[a])
            return tune_error_set(err, TUNE_ERR_INVALID, "report",
                                  "axis '%s' is named twice in the table layout", names[i]);
        used[a] = 1;
        out[(*n_out)++] = a;
    }
    return TUNE_OK;
}

static tune_status report_layout(report *r, const report_spec *spec, tune_error *err)
{
    int used[TUNE_MAX_AXES] = {0};
    if (spec && (spec->n_rows || spec->n_cols)) {
        tune_status st =
            report_use_axes(r, spec->rows, spec->n_rows, r->row_axes, &r->n_row_axes, used, err);
        if (st == TUNE_OK)
            st = report_use_axes(r, spec->cols, spec->n_cols, r->col_axes, &r->n_col_axes, used,
                                 err);
        if (st != TUNE_OK)
            return st;
    }
    int automatic = !spec || (!spec->n_rows && !spec->n_cols);
    for (size_t a = 0; a < r->n_axes; a++) {
        if (used[a])
            continue;
        int varies = report_axis_varies(r, a);
        if (!varies)
            r->fixed_axes[r->n_fixed_axes++] = a;
        else if (!automatic)
            r->group_axes[r->n_group_axes++] = a;
        else if (r->n_row_axes == 0)
            r->row_axes[r->n_row_axes++] = a;
        else
            r->col_axes[r->n_col_axes++] = a;
    }
    return TUNE_OK;
}

/* ---- fields (CSV / JSON columns) and tables ---- */

/* Field layout: axes, "method", parameters, best_time_us, bandwidth_gb_s, pct_read_bw, tflop_s,
 * pct_roofline, pct_model, energy_uj, then time_us_<baseline> and speedup_<baseline> for every
 * baseline. */
#define REPORT_N_BEST_FIELDS 7
static size_t report_field_method(const report *r)
{
    return r->n_axes;
}
static size_t report_field_param(const report *r, size_t j)
{
    return r->n_axes + 1 + j;
}
static size_t report_field_time(const report *r)
{
    return r->n_axes + 1 + r->n_params;
}
static size_t report_field_baseline(const report *r, size_t b)
{
    return report_field_time(r) + REPORT_N_BEST_FIELDS + 2 * b;
}

static tune_status report_make_fields(report *r)
{
    r->n_fields = report_field_baseline(r, r->n_baselines) + (size_t)r->has_retime;
    r->fields = calloc(r->n_fields, sizeof *r->fields);
    if (!r->fields)
        return TUNE_ERR_NOMEM;
    size_t t = report_field_time(r);
    for (size_t f = 0; f < r->n_fields; f++) {
        char buf[256];
        if (f < r->n_axes)
            snprintf(buf, sizeof buf, "%s", r->axes[f]);
        else if (f == report_field_method(r))
            snprintf(buf, sizeof buf, "method");
        else if (f < t)
            snprintf(buf, sizeof buf, "%s", r->params[f - r->n_axes - 1]);
        else if (f == report_field_baseline(r, r->n_baselines))
            snprintf(buf, sizeof buf, "retime");
        else if (f < t + REPORT_N_BEST_FIELDS)
            snprintf(buf, sizeof buf, "%s",
                     (const char *[]){"best_time_us", "bandwidth_gb_s", "pct_read_bw", "tflop_s",
                                      "pct_roofline", "pct_model", "energy_uj"}[f - t]);
        else
            snprintf(buf, sizeof buf, "%s_%s",
                     (f - t - REPORT_N_BEST_FIELDS) % 2 ? "speedup" : "time_us",
                     r->methods[r->baselines[(f - t - REPORT_N_BEST_FIELDS) / 2]].name);
        if (!(r->fields[f] = strdup(buf)))
            return TUNE_ERR_NOMEM;
    }
    return TUNE_OK;
}

static report_cell report_num_cell(double d)
{
    report_cell c = {isfinite(d) ? REPORT_NUM : REPORT_NONE, expr_int(0), d};
    return c;
}

static report_cell report_baseline_cell(const report_shape *s, size_t k)
{
    const result_row *base = s->base[k / 2];
    if (!base)
        return report_num_cell(NAN);
    if (k % 2 == 0)
        return report_num_cell(base->time.median * 1e6);
    return report_num_cell(s->best ? base->time.median / s->best->time.median : NAN);
}

report_cell report_field(const report *r, const report_shape *s, size_t f)
{
    report_cell c = {REPORT_NONE, expr_int(0), NAN};
    size_t t = report_field_time(r);
    if (f < r->n_axes) {
        c.kind = REPORT_VALUE;
        c.v = s->key[f];
    } else if (f == report_field_baseline(r, r->n_baselines)) {
        c.kind = s->retime ? REPORT_VALUE : REPORT_NONE;
        c.v = expr_str(s->retime == REPORT_RETIME_TIE ? "tie" : "win");
    } else if (f >= t + REPORT_N_BEST_FIELDS) {
        c = report_baseline_cell(s, f - t - REPORT_N_BEST_FIELDS);
    } else if (!s->best) {
        return c;
    } else if (f == report_field_method(r)) {
        c.kind = REPORT_VALUE;
        c.v = expr_str(s->best->method);
    } else if (f < t) {
        c.kind = point_get(&s->best->values, r->params[f - r->n_axes - 1], &c.v) == 0 ? REPORT_VALUE
                                                                                      : REPORT_NONE;
    } else {
        double d[] = {s->best->time.median * 1e6, s->best->bandwidth / 1e9, s->best->pct_read_bw,
                      s->best->flop_rate / 1e12, 100.0 * s->best->roofline_fraction,
                      100.0 * s->best->model_time / s->best->time.median,
                      s->best->energy_j * 1e6};
        c = report_num_cell(d[f - t]);
    }
    return c;
}

static void report_add_table(report *r, size_t field, report_style style, const char *fmt,
                             const char *name)
{
    report_table *t = &r->tables[r->n_tables++];
    snprintf(t->title, sizeof t->title, fmt, name);
    t->field = field;
    t->style = style;
    t->marks_ties = 0;
}

/* 1 when some shape has a number in field f (e.g. rows measured before roofline times existed
 * have none). */
static int report_any_finite(const report *r, size_t f)
{
    for (size_t i = 0; i < r->n_shapes; i++)
        if (report_field(r, &r->shapes[i], f).kind == REPORT_NUM)
            return 1;
    return 0;
}

/* 1 when parameter `name` takes more than one value over the rows (a "Best" table for a parameter
 * the sweep kept fixed says nothing; its value stays in the CSV and JSON). */
static int report_param_varies(const result_row *rows, size_t n, const char *name)
{
    expr_value first = {0}, v;
    int seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (point_get(&rows[i].values, name, &v) != 0)
            continue;
        if (seen && !expr_value_equal(first, v))
            return 1;
        first = v;
        seen = 1;
    }
    return 0;
}

static tune_status report_make_tables(report *r, const result_row *rows, size_t n)
{
    r->tables = calloc(r->n_params + r->n_baselines + 8, sizeof *r->tables);
    if (!r->tables)
        return TUNE_ERR_NOMEM;
    for (size_t j = 0; j < r->n_params; j++)
        if (report_param_varies(rows, n, r->params[j]))
            report_add_table(r, report_field_param(r, j), REPORT_RAW, "Best %s", r->params[j]);
    if (r->n_tuned > 1)
        report_add_table(r, report_field_method(r), REPORT_RAW, "Best %s", "method");
    for (size_t k = 0; k < r->n_tables; k++)
        r->tables[k].marks_ties = 1; /* the tables so far name the best configuration */
    size_t t = report_field_time(r);
    report_add_table(r, t + 1, REPORT_F0, "%s", "Achieved bandwidth (GB/s)");
    report_add_table(r, t + 2, REPORT_F1, "%s", "% of measured read bandwidth");
    if (report_any_finite(r, t + 3))
        report_add_table(r, t + 3, REPORT_F1, "%s", "TFLOP/s");
    if (report_any_finite(r, t + 4))
        report_add_table(r, t + 4, REPORT_F1, "%s", "% of roofline (roofline time / time)");
    if (report_any_finite(r, t + 5))
        report_add_table(r, t + 5, REPORT_F1, "%s", "% of model (model time / time)");
    report_add_table(r, t, REPORT_F2, "%s", "Best time (us)");
    if (report_any_finite(r, t + 6))
        report_add_table(r, t + 6, REPORT_F2, "%s", "Energy per call (uJ)");
    for (size_t b = 0; b < r->n_baselines; b++)
        report_add_table(r, report_field_baseline(r, b) + 1, REPORT_SPEEDUP, "Speedup over %s",
                         r->methods[r->baselines[b]].name);
    return TUNE_OK;
}

static tune_status report_build_parts(report *r, const result_row *rows, size_t n,
                                      const report_spec *spec, tune_error *err)
{
    if (n > 0) {
        r->n_axes = rows[0].n_axes;
        for (size_t a = 0; a < r->n_axes; a++)
            r->axes[a] = rows[0].values.names[a];
    }
    if (report_collect_methods(r, rows, n) != TUNE_OK)
        return tune_error_set(err, TUNE_ERR_NOMEM, "report", "out of memory");
    tune_status st = report_collect_shapes(r, rows, n, err);
    if (st != TUNE_OK)
        return st;
    r->objective = spec ? spec->objective : OBJECTIVE_TIME;
    if (report_pick_best(r, rows, n) == TUNE_OK)
        report_apply_retime(r, rows, n, spec);
    if (!r->base_store || report_make_fields(r) != TUNE_OK ||
        report_make_tables(r, rows, n) != TUNE_OK)
        return tune_error_set(err, TUNE_ERR_NOMEM, "report", "out of memory");
    return report_layout(r, spec, err);
}

report *report_build(const result_row *rows, size_t n, const report_spec *spec, tune_error *err)
{
    report *r = calloc(1, sizeof *r);
    if (!r) {
        tune_error_set(err, TUNE_ERR_NOMEM, "report", "out of memory");
        return NULL;
    }
    if (spec && spec->title && !(r->title = strdup(spec->title))) {
        tune_error_set(err, TUNE_ERR_NOMEM, "report", "out of memory");
        report_free(r);
        return NULL;
    }
    if (report_build_parts(r, rows, n, spec, err) != TUNE_OK) {
        report_free(r);
        return NULL;
    }
    if (spec && spec->meta && meta_search_line(spec->meta, r->search_line,
                                               sizeof r->search_line) == 0) {
        r->search = json_deep_copy(meta_search_block(spec->meta));
        json_object_set_new(r->search, "line", json_string(r->search_line));
    }
    return r;
}

void report_free(report *r)
{
    if (!r)
        return;
    for (size_t f = 0; r->fields && f < r->n_fields; f++)
        free(r->fields[f]);
    free(r->fields);
    free(r->tables);
    free(r->base_store);
    free(r->shapes);
    free(r->baselines);
    free(r->skips);
    free(r->methods);
    free(r->title);
    json_decref(r->search);
    free(r);
}

size_t report_n_shapes(const report *r)
{
    return r->n_shapes;
}

const result_row *report_best(const report *r, size_t shape)
{
    return shape < r->n_shapes ? r->shapes[shape].best : NULL;
}

/* ---- CSV and JSON ---- */

static void report_csv_text(const char *s, FILE *f)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void report_write_csv(const report *r, FILE *f)
{
    for (size_t i = 0; i < r->n_fields; i++) {
        fputs(i ? "," : "", f);
        report_csv_text(r->fields[i], f);
    }
    fputc('\n', f);
    for (size_t s = 0; s < r->n_shapes; s++) {
        for (size_t i = 0; i < r->n_fields; i++) {
            report_cell c = report_field(r, &r->shapes[s], i);
            char buf[256];
            fputs(i ? "," : "", f);
            if (c.kind == REPORT_VALUE)
                report_csv_text(expr_value_format(c.v, buf, sizeof buf), f);
            else if (c.kind == REPORT_NUM)
                fprintf(f, "%.6g", c.d);
        }
        fputc('\n', f);
    }
}

static json_t *report_json_cell(report_cell c)
{
    if (c.kind == REPORT_NUM)
        return json_real(c.d);
    if (c.kind == REPORT_NONE)
        return json_null();
    if (c.v.type == EXPR_INT)
        return json_integer((json_int_t)c.v.i);
    if (c.v.type == EXPR_FLOAT)
        return isfinite(c.v.f) ? json_real(c.v.f) : json_null();
    return json_string(c.v.s);
}

static json_t *report_json_names(const char *const *names, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, json_string(names[i]));
    return a;
}

static json_t *report_json_counts(const report *r)
{
    json_t *o = json_object();
    for (size_t m = 0; o && m < r->n_methods; m++) {
        json_t *c = json_object();
        for (size_t st = 0; c && st < REPORT_N_STATUS; st++)
            if (r->methods[m].counts[st])
                json_object_set_new(c, result_status_str((result_status)st),
                                    json_integer((json_int_t)r->methods[m].counts[st]));
        json_object_set_new(o, r->methods[m].name, c);
    }
    return o;
}

json_t *report_to_json(const report *r)
{
    json_t *root = json_object(), *shapes = json_array();
    const char *baselines[TUNE_MAX_AXES];
    size_t nb = r->n_baselines < TUNE_MAX_AXES ? r->n_baselines : TUNE_MAX_AXES;
    for (size_t b = 0; b < nb; b++)
        baselines[b] = r->methods[r->baselines[b]].name;
    for (size_t s = 0; shapes && s < r->n_shapes; s++) {
        json_t *o = json_object();
        for (size_t i = 0; o && i < r->n_fields; i++)
            json_object_set_new(o, r->fields[i],
                                report_json_cell(report_field(r, &r->shapes[s], i)));
        json_array_append_new(shapes, o);
    }
    if (!root || !shapes) {
        json_decref(root);
        json_decref(shapes);
        return NULL;
    }
    json_object_set_new(root, "axes", report_json_names(r->axes, r->n_axes));
    json_object_set_new(root, "params", report_json_names(r->params, r->n_params));
    json_object_set_new(root, "baselines", report_json_names(baselines, nb));
    json_object_set_new(root, "shapes", shapes);
    json_object_set_new(root, "status_counts", report_json_counts(r));
    if (r->search)
        json_object_set(root, "search", r->search);
    return root;
}
