/* The dashboard's pages, written from the checked models (dashboard_impl.h). Every text that
 * comes from the history goes through dash_html_escape; the charts are drawn by dashboard.js
 * from data/<slug>.js into the placeholders written here. */
#include "analysis/dashboard_impl.h"

#include <string.h>

void dash_html_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

static const char *str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

static long long num(const json_t *obj, const char *key)
{
    return (long long)json_integer_value(json_object_get(obj, key));
}

/* A checked verdict status is a word of [a-z]: it serves as a class name as it is. */
static const char *const statuses[] = {"regression", "improvement", "same", "unstable",
                                       "insufficient", "missing"};

static void escaped_cell(FILE *f, const char *s)
{
    fputs("<td>", f);
    dash_html_escape(f, s);
    fputs("</td>", f);
}

static void page_head(FILE *f, const char *title_a, const char *title_b, const char *body_class)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
          f);
    dash_html_escape(f, title_a);
    if (title_b) {
        fputs(" on ", f);
        dash_html_escape(f, title_b);
        fputs(" · tune", f);
    }
    fprintf(f,
            "</title>\n<link rel=\"stylesheet\" href=\"dashboard.css\">\n</head>\n"
            "<body class=\"%s\">\n",
            body_class);
}

/* "Generated ... from STORE. A change counts ..." */
static void site_meta(FILE *f, const json_t *site)
{
    const json_t *r = json_object_get(site, "rule");
    fputs("<p class=\"meta\">Generated ", f);
    dash_html_escape(f, str(site, "generated"));
    fputs(" from <code>", f);
    dash_html_escape(f, str(site, "store"));
    fprintf(f,
            "</code>. The newest run of a series is compared with the median of up to %lld runs "
            "before it in its segment (at least %lld): a change beyond %g %% and %g robust "
            "deviations, %lld time%s in a row, is a regression or an improvement. A new segment "
            "starts when one of ",
            num(r, "window"), num(r, "min_runs"),
            json_number_value(json_object_get(r, "threshold_pct")),
            json_number_value(json_object_get(r, "k_mad")), num(r, "consecutive"),
            num(r, "consecutive") == 1 ? "" : "s");
    size_t i;
    const json_t *on;
    json_array_foreach(json_object_get(r, "segment_on"), i, on)
    {
        fputs(i ? ", " : "", f);
        dash_html_escape(f, json_string_value(on));
    }
    fputs(" changes.</p>\n", f);
}

void dash_write_index(FILE *f, const json_t *site, const dash_group *groups, size_t n)
{
    page_head(f, "tune: nightly trends", NULL, "index");
    fputs("<header><h1>Nightly trends</h1>\n", f);
    site_meta(f, site);
    fputs("</header>\n<main>\n", f);
    if (!n)
        fputs("<p>The store holds no runs.</p>\n", f);
    else
        fputs("<table class=\"groups\">\n<thead><tr><th>Sweep</th><th>GPU</th><th>Runs</th>"
              "<th>Newest night</th><th>Regressions</th><th>Improvements</th><th>Same</th>"
              "<th>Unstable</th><th>Insufficient</th><th>Missing</th></tr></thead>\n<tbody>\n",
              f);
    for (size_t i = 0; i < n; i++) {
        const json_t *m = groups[i].model, *newest = json_object_get(m, "newest"),
                     *counts = json_object_get(newest, "counts");
        fprintf(f, "<tr%s><td><a href=\"%s.html\">",
                num(counts, "regression") || num(counts, "missing") ? " class=\"regression\"" : "",
                groups[i].slug);
        dash_html_escape(f, str(m, "sweep"));
        fputs("</a></td>", f);
        escaped_cell(f, str(m, "device"));
        fprintf(f, "<td class=\"n\">%zu</td>", json_array_size(json_object_get(m, "runs")));
        escaped_cell(f, str(newest, "night"));
        for (size_t k = 0; k < 6; k++) {
            long long c = num(counts, statuses[k]);
            fprintf(f, "<td class=\"n%s%s\">%lld</td>", c ? " " : "", c ? statuses[k] : "", c);
        }
        fputs("</tr>\n", f);
    }
    if (n)
        fputs("</tbody>\n</table>\n", f);
    fputs("</main>\n</body>\n</html>\n", f);
}

/* "+6.1 %" or "-" for null */
static void pct_text(FILE *f, const json_t *v)
{
    if (json_is_number(v))
        fprintf(f, "%+.1f %%", json_number_value(v));
    else
        fputs("&ndash;", f);
}

/* The newest verdict of every series of a shape, one row per method. */
static void shape_section(FILE *f, const json_t *shape, size_t index)
{
    fprintf(f, "<section class=\"shape\" id=\"s%zu\">\n<h2>", index);
    dash_html_escape(f, str(shape, "shape"));
    fputs("</h2>\n<table class=\"verdicts\"><thead><tr><th>Method</th><th>Verdict</th>"
          "<th>Change</th><th>Baseline</th><th>Why</th></tr></thead>\n<tbody>\n",
          f);
    size_t i;
    const json_t *s;
    json_array_foreach(json_object_get(shape, "series"), i, s)
    {
        const json_t *base = json_object_get(s, "baseline");
        fprintf(f, "<tr class=\"%s\">", str(s, "status"));
        escaped_cell(f, str(s, "method"));
        fprintf(f, "<td>%s</td><td class=\"n\">", str(s, "status"));
        pct_text(f, json_object_get(s, "change_pct"));
        if (json_is_number(base))
            fprintf(f, "</td><td class=\"n\">%.2f µs</td>", json_number_value(base));
        else
            fputs("</td><td class=\"n\">&ndash;</td>", f);
        escaped_cell(f, str(s, "reason"));
        fputs("</tr>\n", f);
    }
    fprintf(f,
            "</tbody></table>\n<div class=\"chart\" data-shape=\"%zu\"></div>\n"
            "<div class=\"winners\" data-shape=\"%zu\"></div>\n</section>\n",
            index, index);
}

/* The shapes whose newest verdict is a regression or an improvement, linked to their section. */
static void flagged_list(FILE *f, const json_t *shapes)
{
    size_t i, j, n = 0;
    const json_t *shape, *s;
    json_array_foreach(shapes, i, shape) json_array_foreach(json_object_get(shape, "series"), j, s)
    {
        const char *st = str(s, "status");
        if (strcmp(st, "regression") != 0 && strcmp(st, "improvement") != 0)
            continue;
        fprintf(f, "%s<li class=\"%s\"><a href=\"#s%zu\">", n++ ? "" : "<ul class=\"flagged\">\n",
                st, i);
        dash_html_escape(f, str(shape, "shape"));
        fputs("</a> ", f);
        dash_html_escape(f, str(s, "method"));
        fputs(": ", f);
        pct_text(f, json_object_get(s, "change_pct"));
        fprintf(f, " (%s)</li>\n", st);
    }
    if (n)
        fputs("</ul>\n", f);
}

/* One row per run, oldest first; the first run of a segment says what changed. */
static void runs_table(FILE *f, const json_t *runs)
{
    fputs("<section class=\"runs\">\n<h2>Runs</h2>\n<table class=\"runs\"><thead><tr>"
          "<th>Night</th><th>Run</th><th>Start</th><th>Host</th><th>Driver</th>"
          "<th>CUDA runtime</th><th>tune</th><th>Kernels</th><th>Changes</th><th>Report</th>"
          "</tr></thead>\n<tbody>\n",
          f);
    size_t i, j;
    const json_t *r, *c;
    json_array_foreach(runs, i, r)
    {
        const json_t *changes = json_object_get(r, "changes");
        long long rt = num(r, "runtime");
        fprintf(f, "<tr%s>", json_array_size(changes) ? " class=\"segment-start\"" : "");
        escaped_cell(f, str(r, "night"));
        fprintf(f, "<td class=\"n\">%lld</td>", num(r, "id"));
        escaped_cell(f, str(r, "start"));
        escaped_cell(f, str(r, "host"));
        escaped_cell(f, str(r, "driver"));
        fprintf(f, "<td>%lld.%lld</td>", rt / 1000, rt % 1000 / 10);
        escaped_cell(f, str(r, "tool_rev"));
        escaped_cell(f, str(r, "kernels_hash"));
        fputs("<td>", f);
        json_array_foreach(changes, j, c)
        {
            fputs(j ? "; " : "", f);
            dash_html_escape(f, json_string_value(c));
        }
        fputs("</td><td>", f);
        if (json_is_string(json_object_get(r, "best"))) {
            fputs("<a href=\"", f);
            dash_html_escape(f, str(r, "best"));
            fputs("\">best.md</a>", f);
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</tbody></table>\n</section>\n", f);
}

void dash_write_group(FILE *f, const json_t *site, const dash_group *g)
{
    const json_t *m = g->model, *newest = json_object_get(m, "newest"),
                 *counts = json_object_get(newest, "counts"),
                 *shapes = json_object_get(m, "shapes");
    page_head(f, str(m, "sweep"), str(m, "device"), "group");
    fputs("<header>\n<nav><a href=\"index.html\">&larr; All sweeps and GPUs</a></nav>\n<h1>", f);
    dash_html_escape(f, str(m, "sweep"));
    fputs(" <small>on</small> ", f);
    dash_html_escape(f, str(m, "device"));
    fprintf(f, "</h1>\n<p class=\"counts\">%zu runs; newest ",
            json_array_size(json_object_get(m, "runs")));
    dash_html_escape(f, str(newest, "night"));
    fprintf(f, " (run %lld):", num(newest, "run"));
    for (size_t k = 0; k < 6; k++)
        fprintf(f, " <span class=\"badge %s\">%lld %s</span>", statuses[k],
                num(counts, statuses[k]), statuses[k]);
    fputs("</p>\n", f);
    flagged_list(f, shapes);
    site_meta(f, site);
    fputs("</header>\n<main>\n<noscript><p>The charts are drawn by JavaScript.</p></noscript>\n",
          f);
    size_t i;
    const json_t *shape;
    json_array_foreach(shapes, i, shape) shape_section(f, shape, i);
    runs_table(f, json_object_get(m, "runs"));
    fprintf(f,
            "</main>\n<div id=\"tip\" hidden></div>\n<script src=\"data/%s.js\"></script>\n"
            "<script src=\"dashboard.js\"></script>\n</body>\n</html>\n",
            g->slug);
}
