/* report_markdown.c - part of the report module (analysis/report.h). */
#include "analysis/report.h"
#include "analysis/report_impl.h"
#include "store/meta.h"
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Markdown ---- */

/* A table of text: (nr + 1) x (nc + 1) cells; row 0 is the header, column 0 the labels. */
typedef struct {
    size_t nr, nc;
    char (*cell)[REPORT_CELL];
} report_text;

static char *report_text_at(report_text *t, size_t i, size_t j)
{
    return t->cell[i * (t->nc + 1) + j];
}

static int report_text_init(report_text *t, size_t nr, size_t nc)
{
    t->nr = nr;
    t->nc = nc;
    t->cell = calloc((nr + 1) * (nc + 1), sizeof *t->cell);
    return t->cell ? 0 : -1;
}

static void report_text_write_rule(const size_t *width, size_t ncols, FILE *f)
{
    for (size_t j = 0; j < ncols; j++) {
        fputs(j ? "" : "|:", f);
        for (size_t k = 0; k < width[j] + 1; k++)
            fputc('-', f);
        fputs(j ? ":|" : "|", f);
    }
    fputc('\n', f);
}

/* Column 0 left-aligned, the others right-aligned, padded so that the text reads as a table. */
static void report_text_write(report_text *t, FILE *f)
{
    size_t ncols = t->nc + 1, *width = calloc(ncols, sizeof *width);
    if (!width)
        return;
    for (size_t j = 0; j < ncols; j++) {
        width[j] = 3;
        for (size_t i = 0; i <= t->nr; i++)
            if (strlen(report_text_at(t, i, j)) > width[j])
                width[j] = strlen(report_text_at(t, i, j));
    }
    for (size_t i = 0; i <= t->nr; i++) {
        for (size_t j = 0; j < ncols; j++)
            fprintf(f, j ? " %*s |" : "| %-*s |", (int)width[j], report_text_at(t, i, j));
        fputc('\n', f);
        if (i == 0)
            report_text_write_rule(width, ncols, f);
    }
    free(width);
}

/* "1024/64": values of s on the axes idx[0..n), or fallback when n == 0. */
static void report_format_key(const report_shape *s, const size_t *idx, size_t n,
                              const char *fallback, char *buf, size_t size)
{
    snprintf(buf, size, "%s", n ? "" : fallback);
    for (size_t i = 0; i < n; i++) {
        char v[REPORT_CELL];
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, "%s%s", i ? "/" : "",
                 expr_value_format(s->key[idx[i]], v, sizeof v));
    }
}

/* "k_pre=1024, k=64" */
static void report_format_named(const report *r, const report_shape *s, const size_t *idx, size_t n,
                                char *buf, size_t size)
{
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        char v[REPORT_CELL];
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, "%s%s=%s", i ? ", " : "", r->axes[idx[i]],
                 expr_value_format(s->key[idx[i]], v, sizeof v));
    }
}

/* Appends "k_pre/k" (the names of axes idx[0..n)) to buf. */
static void report_append_names(const report *r, const size_t *idx, size_t n, char *buf,
                                size_t size)
{
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, "%s%s", i ? "/" : "", r->axes[idx[i]]);
    }
}

/* The cell of shape s in table t; 1 when it is marked as a statistical tie. */
static int report_format_cell(const report *r, const report_shape *s, const report_table *t,
                              char *buf, size_t size)
{
    buf[0] = '\0';
    if (!s)
        return 0;
    report_cell c = report_field(r, s, t->field);
    if (c.kind == REPORT_VALUE && t->marks_ties && s->retime == REPORT_RETIME_TIE) {
        char v[REPORT_CELL];
        snprintf(buf, size, "%s*", expr_value_format(c.v, v, sizeof v));
        return 1;
    }
    if (c.kind == REPORT_VALUE)
        expr_value_format(c.v, buf, size);
    else if (c.kind == REPORT_NUM && t->style == REPORT_SPEEDUP)
        snprintf(buf, size, "%.2fx", c.d);
    else if (c.kind == REPORT_NUM)
        snprintf(buf, size, "%.*f", t->style == REPORT_F0 ? 0 : t->style == REPORT_F1 ? 1 : 2, c.d);
    return 0;
}

/* Shapes of one group, their distinct row and column keys (representative shapes, sorted) and
 * the grid of shapes (NULL where there is no data). */
typedef struct {
    const report_shape **rows, **cols, **grid;
    size_t nr, nc;
} report_pivot;

/* Inserts s into the sorted list of distinct keys on idx[0..n) unless present; returns index. */
static size_t report_insert_key(const report_shape **list, size_t *len, const report_shape *s,
                                const size_t *idx, size_t n)
{
    size_t i = 0;
    int c = 1;
    while (i < *len && (c = report_cmp_on(list[i], s, idx, n)) < 0)
        i++;
    if (i < *len && c == 0)
        return i;
    memmove(&list[i + 1], &list[i], (*len - i) * sizeof *list);
    list[i] = s;
    (*len)++;
    return i;
}

static size_t report_find_key(const report_shape **list, size_t len, const report_shape *s,
                              const size_t *idx, size_t n)
{
    size_t i = 0;
    while (i < len && report_cmp_on(list[i], s, idx, n) != 0)
        i++;
    return i;
}

static int report_in_group(const report *r, const report_shape *s, const report_shape *group)
{
    return report_cmp_on(s, group, r->group_axes, r->n_group_axes) == 0;
}

static int report_pivot_init(const report *r, const report_shape *group, report_pivot *p)
{
    memset(p, 0, sizeof *p);
    p->rows = calloc(r->n_shapes, sizeof *p->rows);
    p->cols = calloc(r->n_shapes, sizeof *p->cols);
    if (!p->rows || !p->cols)
        return -1;
    for (size_t s = 0; s < r->n_shapes; s++) {
        if (!report_in_group(r, &r->shapes[s], group))
            continue;
        report_insert_key(p->rows, &p->nr, &r->shapes[s], r->row_axes, r->n_row_axes);
        report_insert_key(p->cols, &p->nc, &r->shapes[s], r->col_axes, r->n_col_axes);
    }
    p->grid = calloc(p->nr * p->nc, sizeof *p->grid);
    if (!p->grid)
        return -1;
    for (size_t s = 0; s < r->n_shapes; s++) {
        if (!report_in_group(r, &r->shapes[s], group))
            continue;
        size_t i = report_find_key(p->rows, p->nr, &r->shapes[s], r->row_axes, r->n_row_axes);
        size_t j = report_find_key(p->cols, p->nc, &r->shapes[s], r->col_axes, r->n_col_axes);
        p->grid[i * p->nc + j] = &r->shapes[s];
    }
    return 0;
}

static void report_pivot_free(report_pivot *p)
{
    free(p->rows);
    free(p->cols);
    free(p->grid);
}

/* "g \ k_pre/k", or just the row axes when there are no column axes. */
static void report_write_corner(const report *r, char *buf, size_t size)
{
    buf[0] = '\0';
    report_append_names(r, r->row_axes, r->n_row_axes, buf, size);
    if (r->n_col_axes) {
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, "%s\\ ", r->n_row_axes ? " " : "");
        report_append_names(r, r->col_axes, r->n_col_axes, buf, size);
    }
}

static void report_write_pivot(const report *r, const report_pivot *p, const report_table *t,
                               FILE *f)
{
    report_text text;
    size_t ties = 0;
    if (report_text_init(&text, p->nr, p->nc) != 0)
        return;
    report_write_corner(r, report_text_at(&text, 0, 0), REPORT_CELL);
    for (size_t j = 0; j < p->nc; j++)
        report_format_key(p->cols[j], r->col_axes, r->n_col_axes, "value",
                          report_text_at(&text, 0, j + 1), REPORT_CELL);
    for (size_t i = 0; i < p->nr; i++) {
        report_format_key(p->rows[i], r->row_axes, r->n_row_axes, "all",
                          report_text_at(&text, i + 1, 0), REPORT_CELL);
        for (size_t j = 0; j < p->nc; j++)
            ties += (size_t)report_format_cell(r, p->grid[i * p->nc + j], t,
                                               report_text_at(&text, i + 1, j + 1), REPORT_CELL);
    }
    report_text_write(&text, f);
    free(text.cell);
    if (ties)
        fputs(
            "\nA value marked * is a statistical tie: the interleaved re-timing chose it, and its "
            "runner-up is within twice the combined standard error of the two medians.\n",
            f);
}

static void report_write_heading(FILE *f, int level, const char *text)
{
    fprintf(f, "%.*s %s\n\n", level, "######", text);
}

static void report_write_group(const report *r, const report_shape *group, int level, FILE *f)
{
    report_pivot p;
    if (report_pivot_init(r, group, &p) == 0) {
        for (size_t t = 0; t < r->n_tables; t++) {
            report_write_heading(f, level, r->tables[t].title);
            report_write_pivot(r, &p, &r->tables[t], f);
            fputc('\n', f);
        }
    }
    report_pivot_free(&p);
}

static void report_write_groups(const report *r, int level, FILE *f)
{
    const report_shape **groups = calloc(r->n_shapes + 1, sizeof *groups);
    size_t n_groups = 0;
    if (!groups)
        return;
    for (size_t s = 0; s < r->n_shapes; s++)
        report_insert_key(groups, &n_groups, &r->shapes[s], r->group_axes, r->n_group_axes);
    for (size_t g = 0; g < n_groups; g++) {
        if (r->n_group_axes) {
            char heading[512];
            report_format_named(r, groups[g], r->group_axes, r->n_group_axes, heading,
                                sizeof heading);
            report_write_heading(f, level, heading);
        }
        report_write_group(r, groups[g], level + (r->n_group_axes > 0), f);
    }
    free(groups);
}

static void report_write_missing(const report *r, FILE *f)
{
    size_t shown = 0;
    for (size_t s = 0; s < r->n_shapes; s++) {
        if (r->shapes[s].best || r->n_tuned == 0)
            continue;
        char buf[512];
        size_t all[TUNE_MAX_AXES];
        for (size_t a = 0; a < r->n_axes; a++)
            all[a] = a;
        report_format_named(r, &r->shapes[s], all, r->n_axes, buf, sizeof buf);
        fprintf(f, "%s %s\n", shown++ ? "-" : "No tuned configuration ran ok for:\n\n-", buf);
    }
    if (shown)
        fputc('\n', f);
}

static void report_write_counts(const report *r, int level, FILE *f)
{
    size_t cols[REPORT_N_STATUS], nc = 0;
    for (size_t st = 0; st < REPORT_N_STATUS; st++)
        for (size_t m = 0; m < r->n_methods; m++)
            if (r->methods[m].counts[st]) {
                cols[nc++] = st;
                break;
            }
    report_text t;
    if (report_text_init(&t, r->n_methods + 1, nc + 1) != 0)
        return;
    snprintf(report_text_at(&t, 0, 0), REPORT_CELL, "method");
    for (size_t j = 0; j < nc; j++)
        snprintf(report_text_at(&t, 0, j + 1), REPORT_CELL, "%s",
                 result_status_str((result_status)cols[j]));
    snprintf(report_text_at(&t, 0, nc + 1), REPORT_CELL, "total");
    snprintf(report_text_at(&t, r->n_methods + 1, 0), REPORT_CELL, "total");
    size_t col_total[REPORT_N_STATUS + 1] = {0};
    for (size_t m = 0; m < r->n_methods; m++) {
        size_t row_total = 0;
        snprintf(report_text_at(&t, m + 1, 0), REPORT_CELL, "%s", r->methods[m].name);
        for (size_t j = 0; j < nc; j++) {
            size_t c = r->methods[m].counts[cols[j]];
            snprintf(report_text_at(&t, m + 1, j + 1), REPORT_CELL, "%zu", c);
            row_total += c;
            col_total[j] += c;
        }
        snprintf(report_text_at(&t, m + 1, nc + 1), REPORT_CELL, "%zu", row_total);
        col_total[nc] += row_total;
    }
    for (size_t j = 0; j <= nc; j++)
        snprintf(report_text_at(&t, r->n_methods + 1, j + 1), REPORT_CELL, "%zu", col_total[j]);
    report_write_heading(f, level, "Runs by status");
    report_text_write(&t, f);
    free(t.cell);
    if (r->n_skips == 0 || report_text_init(&t, r->n_skips, 1) != 0)
        return;
    snprintf(report_text_at(&t, 0, 0), REPORT_CELL, "reason");
    snprintf(report_text_at(&t, 0, 1), REPORT_CELL, "skipped");
    for (size_t i = 0; i < r->n_skips; i++) {
        snprintf(report_text_at(&t, i + 1, 0), REPORT_CELL, "%s", r->skips[i].category);
        snprintf(report_text_at(&t, i + 1, 1), REPORT_CELL, "%zu", r->skips[i].count);
    }
    fputc('\n', f);
    report_write_heading(f, level, "Skipped configurations by reason");
    report_text_write(&t, f);
    free(t.cell);
}

void report_write_markdown(const report *r, FILE *f)
{
    int level = 2; /* the same with or without a title, so that readers can rely on it */
    if (r->title)
        report_write_heading(f, 1, r->title);
    if (r->search_line[0])
        fprintf(f, "%c%s.\n\n", r->search_line[0] - 32, r->search_line + 1);
    if (r->objective == OBJECTIVE_ENERGY)
        fprintf(f, "Ranked by energy: each shape's best is the configuration with the least "
                   "energy per call.\n\n");
    else if (r->objective == OBJECTIVE_EDP)
        fprintf(f, "Ranked by energy-delay product: each shape's best is the configuration with "
                   "the least energy per call x time.\n\n");
    if (r->n_shapes == 0)
        fputs("No results.\n\n", f);
    if (r->n_fixed_axes && r->n_shapes) {
        char buf[1024];
        report_format_named(r, &r->shapes[0], r->fixed_axes, r->n_fixed_axes, buf, sizeof buf);
        fprintf(f, "All shapes have %s.\n\n", buf);
    }
    if (r->n_shapes)
        report_write_groups(r, level, f);
    report_write_missing(r, f);
    report_write_counts(r, level, f);
    report_write_search(r, f);
}

void report_write_search(const report *r, FILE *f)
{
    const json_t *shapes = json_object_get(r->search, "shapes");
    if (!json_array_size(shapes))
        return;
    const json_t *c = json_object_get(r->search, "configs");
    const char *scope = json_string_value(json_object_get(r->search, "scope"));
    int run_scope = scope && strcmp(scope, "run") == 0;
    char run_line[256];
    snprintf(run_line, sizeof run_line,
             " The budget is the run's: %lld evaluations in all, shared out over the shapes by "
             "the strategy (a shape's budget below is its share).",
             (long long)json_integer_value(json_object_get(r->search, "budget_evaluations")));
    fprintf(
        f,
        "\n## Search: candidates measured per shape\n\n%s, seed %s, %lld round(s)%s: %lld "
        "of %lld candidates (tuned configurations the family can run) and %lld baselines "
        "measured; configurations not measured have no row.%s\n\n"
        "| shape | measured | budget | candidates |\n|---|--:|--:|--:|\n",
        json_string_value(json_object_get(r->search, "strategy")),
        json_string_value(json_object_get(r->search, "seed")),
        (long long)json_integer_value(json_object_get(r->search, "rounds")),
        json_is_true(json_object_get(r->search, "time_limit_hit")) ? ", stopped by the time limit"
                                                                   : "",
        (long long)json_integer_value(json_object_get(c, "evaluated")),
        (long long)json_integer_value(json_object_get(c, "candidates")),
        (long long)json_integer_value(json_object_get(c, "baselines")), run_scope ? run_line : "");
    size_t i;
    json_t *s;
    json_array_foreach(shapes, i, s)
    {
        char name[512];
        meta_object_text(json_object_get(s, "shape"), name, sizeof name);
        fprintf(f, "| %s | %lld | %lld | %lld |\n", name,
                (long long)json_integer_value(json_object_get(s, "evaluated")),
                (long long)json_integer_value(json_object_get(s, "budget")),
                (long long)json_integer_value(json_object_get(s, "candidates")));
    }
}
