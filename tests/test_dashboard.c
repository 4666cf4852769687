/* test_dashboard.c - the static site of `tune dashboard` (analysis/dashboard.h) from the
 * hand-made history tests/data/history/history.json (two groups; in "sparq on NVIDIA H200" a
 * driver change at run 13, a regression of custom on g=1024 k=64 n=16384 at the newest run, a
 * series without a point at run 16): the files and their data, HTML escaping of hostile names,
 * best.md links, the folder replaced only when it is a dashboard, no temporary folder left
 * behind, and malformed trees refused with their JSON path. The pages in a browser:
 * tests/test_dashboard_browser.sh. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/dashboard.h"
#include "core/infile.h"
#include "util_child.h"
#include "util_cpu.h"

#define FIXTURE "tests/data/history/history.json"
#define H200 "sparq--NVIDIA_H200"

TestSuite(dashboard, .init = make_tmpdir, .fini = remove_tmpdir);

static json_t *load_fixture(void)
{
    json_error_t je;
    json_t *h = json_load_file(FIXTURE, 0, &je);
    cr_assert_not_null(h, "%s:%d: %s", FIXTURE, je.line, je.text);
    return h;
}

/* The text of dir/name (cr_assert: it exists); free() it. */
static char *slurp(const char *dir, const char *name)
{
    char path[512], *text = NULL;
    tune_error err = {0};
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(infile_read(path, INFILE_MAX_JSON, &text, NULL, &err), TUNE_OK, "%s: %s",
                 err.where, err.message);
    return text;
}

/* The entries of dir whose names start with prefix. */
static size_t count_prefixed(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d)
        closedir(d);
    return n;
}

static size_t count_occurrences(const char *text, const char *what)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

/* The group model of a data file (the JSON between "window.TUNE_DATA = " and ";"). */
static json_t *load_data(const char *dir, const char *slug)
{
    char name[128];
    snprintf(name, sizeof name, "data/%s.js", slug);
    char *text = slurp(dir, name);
    const char *head = "window.TUNE_DATA = ";
    cr_assert_eq(strncmp(text, head, strlen(head)), 0, "%.40s", text);
    size_t len = strlen(text);
    cr_assert(len > strlen(head) + 2 && strcmp(text + len - 2, ";\n") == 0);
    json_error_t je;
    json_t *m = json_loadb(text + strlen(head), len - strlen(head) - 2, 0, &je);
    cr_assert_not_null(m, "%s: %s", name, je.text);
    free(text);
    return m;
}

static void write_site(const json_t *h, const char *out)
{
    tune_error err = {0};
    cr_assert_eq(dashboard_write(h, out, &err), TUNE_OK, "%s: %s", err.where, err.message);
}

Test(dashboard, writes_the_site)
{
    json_t *h = load_fixture();
    char out[256];
    snprintf(out, sizeof out, "%s/site", tmpdir);
    write_site(h, out);
    const char *files[] = {"index.html",       H200 ".html",   "sparq--NVIDIA_H100_80GB_HBM3.html",
                           "data/" H200 ".js", "dashboard.js", "dashboard.css",
                           DASHBOARD_MARKER};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", out, files[i]);
        cr_expect(infile_is_file(path), "%s is missing", path);
    }
    char *index = slurp(out, "index.html");
    cr_expect(strstr(index, "<tr class=\"regression\"><td><a href=\"" H200 ".html\">sparq</a>"),
              "the group with a regression is highlighted and linked:\n%s", index);
    cr_expect(strstr(index, "<td>2026-11-25</td>"), "the newest night");
    cr_expect_eq(count_occurrences(index, "<tr class=\"regression\">"), 1);
    char *page = slurp(out, H200 ".html");
    cr_expect(strstr(page, "<script src=\"data/" H200 ".js\"></script>"));
    cr_expect(strstr(page, "<tr class=\"segment-start\"><td>2026-11-20</td>"),
              "the run of the driver change starts a segment");
    cr_expect(strstr(page, "driver 570.86 → 580.159.04"));
    cr_expect_eq(count_occurrences(page, "<div class=\"chart\""), 2, "a chart per shape");
    cr_expect(strstr(page, "<li class=\"regression\"><a href=\"#s0\">g=1024 k=64 n=16384</a>"));
    cr_expect_eq(count_occurrences(page, "best.md</a>"), 0, "no run has a best.md");
    char *js = slurp(out, "dashboard.js");
    cr_expect(strstr(js, "IntersectionObserver"), "the embedded script is web/dashboard.js");
    free(js), free(page), free(index);

    json_t *m = load_data(out, H200);
    json_t *shapes = json_object_get(m, "shapes");
    cr_assert_eq(json_array_size(shapes), 2);
    json_t *s0 = json_object_get(json_array_get(shapes, 0), "series");
    json_t *custom = json_array_get(s0, 0), *torch = json_array_get(s0, 1);
    cr_expect_str_eq(json_string_value(json_object_get(custom, "v")), "nnnnnssr");
    cr_expect_str_eq(json_string_value(json_object_get(custom, "status")), "regression");
    cr_expect_float_eq(json_real_value(json_array_get(json_object_get(custom, "t"), 7)), 12.85,
                       1e-9, "times in microseconds");
    cr_expect(json_is_null(json_array_get(json_object_get(custom, "lo"), 0)));
    json_t *w = json_object_get(custom, "w"), *winners = json_object_get(m, "winners");
    cr_assert_eq(json_array_size(w), 8);
    cr_expect_str_eq(json_string_value(
                         json_array_get(winners, (size_t)json_integer_value(json_array_get(w, 7)))),
                     "chunk=128 threads=256");
    cr_expect_null(json_object_get(torch, "w"), "a method without parameters has no winners");
    json_t *sparse = json_object_get(json_array_get(shapes, 1), "series");
    json_t *x = json_object_get(json_array_get(sparse, 0), "x");
    cr_expect_eq(json_array_size(x), 7);
    cr_expect_eq(json_integer_value(json_array_get(x, 5)), 6, "run 16 (index 5) has no point");
    json_t *runs = json_object_get(m, "runs");
    cr_expect_eq(json_array_size(json_object_get(json_array_get(runs, 2), "changes")), 1);
    cr_expect_null(json_object_get(json_array_get(runs, 0), "source_dir"));
    json_decref(m);
    json_decref(h);
}

Test(dashboard, escapes_hostile_names)
{
    json_t *h = load_fixture();
    json_t *g = json_array_get(json_object_get(h, "groups"), 0);
    const char *sweep = "<script>alert(\"x\")</script>&'",
               *shape = "</script><img src=x onerror=alert(1)>";
    json_object_set_new(g, "sweep", json_string(sweep));
    json_t *s0 = json_array_get(json_object_get(g, "series"), 0);
    json_object_set_new(s0, "shape", json_string(shape));
    json_object_set_new(json_object_get(s0, "verdict"), "reason", json_string("a<b && c>d"));
    char out[256];
    snprintf(out, sizeof out, "%s/site", tmpdir);
    write_site(h, out);
    DIR *d = opendir(out);
    cr_assert_not_null(d);
    char slug[256] = "";
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        cr_expect_eq(strspn(e->d_name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                       "0123456789_.-"),
                     strlen(e->d_name), "file name %s", e->d_name);
        if (strstr(e->d_name, "NVIDIA_H200.html"))
            snprintf(slug, sizeof slug, "%.*s", (int)(strlen(e->d_name) - 5), e->d_name);
    }
    closedir(d);
    cr_assert(slug[0], "the group page of the hostile sweep");
    cr_expect_neq(slug[0], '.', "no hidden file");
    char name[300];
    snprintf(name, sizeof name, "%s.html", slug);
    const char *pages[] = {"index.html", name};
    for (size_t i = 0; i < 2; i++) {
        char *text = slurp(out, pages[i]);
        cr_expect_null(strstr(text, "<script>alert"), "%s: the sweep's name as markup", pages[i]);
        cr_expect_null(strstr(text, "<img"), "%s", pages[i]);
        cr_expect(strstr(text, "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;"),
                  "%s: the sweep's name escaped", pages[i]);
        if (i == 1) {
            cr_expect(strstr(text, "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"));
            cr_expect(strstr(text, "a&lt;b &amp;&amp; c&gt;d"));
        }
        free(text);
    }
    snprintf(name, sizeof name, "data/%s.js", slug);
    char *data = slurp(out, name);
    cr_expect_null(strstr(data, "</"), "no string can close a script tag");
    free(data);
    json_t *m = load_data(out, slug);
    cr_expect_str_eq(json_string_value(json_object_get(m, "sweep")), sweep, "the data keeps it");
    json_decref(m);
    json_decref(h);
}

Test(dashboard, links_best_md_relatively)
{
    json_t *h = load_fixture();
    char run[256], best[300], out[256];
    snprintf(run, sizeof run, "%s/run a#1", tmpdir);
    snprintf(best, sizeof best, "%s/best.md", run);
    cr_assert_eq(mkdir(run, 0755), 0);
    FILE *f = fopen(best, "w");
    cr_assert_not_null(f);
    fputs("# Best\n", f);
    fclose(f);
    json_t *r0 =
        json_array_get(json_object_get(json_array_get(json_object_get(h, "groups"), 0), "runs"), 0);
    json_object_set_new(r0, "source_dir", json_string(run));
    snprintf(out, sizeof out, "%s/nested", tmpdir);
    cr_assert_eq(mkdir(out, 0755), 0);
    snprintf(out, sizeof out, "%s/nested/site/", tmpdir); /* a trailing slash is the folder */
    write_site(h, out);
    char *page = slurp(out, H200 ".html");
    cr_expect(strstr(page, "<a href=\"../../run%20a%231/best.md\">best.md</a>"), "%s",
              strstr(page, "<section class=\"runs\">"));
    cr_expect_eq(count_occurrences(page, "best.md</a>"), 1);
    free(page);
    json_decref(h);
}

Test(dashboard, replaces_only_a_dashboard)
{
    json_t *h = load_fixture();
    char out[256], path[512];
    tune_error err = {0};
    snprintf(out, sizeof out, "%s/site", tmpdir);
    cr_assert_eq(mkdir(out, 0755), 0);
    write_site(h, out); /* an empty folder is taken */
    snprintf(path, sizeof path, "%s/stale.html", out);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fclose(f);
    write_site(h, out); /* a dashboard is replaced whole */
    cr_expect_not(infile_is_file(path), "the old site is gone");
    snprintf(path, sizeof path, "%s/index.html", out);
    cr_expect(infile_is_file(path));

    char other[256], keep[300], link[256];
    snprintf(other, sizeof other, "%s/notes", tmpdir);
    snprintf(keep, sizeof keep, "%s/keep.txt", other);
    cr_assert_eq(mkdir(other, 0755), 0);
    f = fopen(keep, "w");
    cr_assert_not_null(f);
    fclose(f);
    cr_expect_eq(dashboard_write(h, other, &err), TUNE_ERR_IO);
    cr_expect_str_eq(err.where, other);
    cr_expect(strstr(err.message, "neither empty nor a dashboard"), "%s", err.message);
    cr_expect(infile_is_file(keep));

    snprintf(link, sizeof link, "%s/link", tmpdir); /* a link to a dashboard is not followed */
    cr_assert_eq(symlink(out, link), 0);
    tune_error_clear(&err);
    cr_expect_eq(dashboard_write(h, link, &err), TUNE_ERR_IO);
    cr_expect(strstr(err.message, "symbolic link"), "%s", err.message);
    tune_error_clear(&err);
    cr_expect_eq(dashboard_write(h, keep, &err), TUNE_ERR_IO);
    cr_expect(strstr(err.message, "not a folder"), "%s", err.message);
    cr_expect_eq(count_prefixed(tmpdir, "site.tmp."), 0);
    cr_expect_eq(count_prefixed(tmpdir, "notes.tmp."), 0);
    cr_expect_eq(count_prefixed(tmpdir, "link.tmp."), 0);
    json_decref(h);
}

static tune_status write_fixture(void *ctx, tune_error *err)
{
    json_t *h = load_fixture();
    tune_status st = dashboard_write(h, ctx, err);
    json_decref(h);
    return st;
}

Test(dashboard, failed_write_leaves_no_temporary_folder)
{
    char out[256], msg[4096];
    snprintf(out, sizeof out, "%s/site", tmpdir);
    /* files of at most 4 KiB: dashboard.js does not fit */
    cr_assert_eq(test_run_size_limited(4096, write_fixture, out, msg, sizeof msg), 1, "%s", msg);
    cr_expect(strstr(msg, "/site.tmp.") && strstr(msg, "cannot write"),
              "the error names the file: %s", msg);
    cr_expect_eq(count_prefixed(tmpdir, "site"), 0, "neither the site nor its temporary folder");
    cr_assert_eq(test_run_size_limited(1 << 20, write_fixture, out, msg, sizeof msg), 0, "%s", msg);
    cr_expect_eq(count_prefixed(tmpdir, "site.tmp."), 0);
    cr_expect_eq(count_prefixed(tmpdir, "site"), 1);
}

/* A malformed history: a change at a path ("groups.0.runs.1.night"; the value as JSON text, NULL
 * to delete the key: ""), the error's where and the start of its message. */
typedef struct { /* arrays, not pointers: Criterion copies the cases into each test's process */
    char path[64], value[32], where[64], message[64];
} bad_case;

ParameterizedTestParameters(dashboard, refuses_malformed_trees)
{
    static bad_case cases[] = {
        {"tune_history", "2", "$.tune_history", "expected version 1, got 2"},
        {"groups", "{}", "$.groups", "expected an array, got an object"},
        {"rule.window", "\"7\"", "$.rule.window", "expected an integer, got a string"},
        {"rule.segment_on", "[\"driver\", 3]", "$.rule.segment_on[1]", "expected a string"},
        {"groups.1", "[]", "$.groups[1]", "expected an object, got an array"},
        {"groups.0.runs.1.night", "", "$.groups[0].runs[1].night", "missing"},
        {"groups.0.runs.1.id", "11", "$.groups[0].runs[1]", "run id 11 appears twice"},
        {"groups.0.runs.2.changes", "[null]", "$.groups[0].runs[2].changes[0]",
         "expected a string, got null"},
        {"groups.0.newest.run", "99", "$.groups[0].newest", "run 99 is not a run of the group"},
        {"groups.0.newest.counts.same", "1.5", "$.groups[0].newest.counts.same",
         "expected an integer, got a number"},
        {"groups.0.series.0.points.2.time", "\"fast\"", "$.groups[0].series[0].points[2].time",
         "expected a number, got a string"},
        {"groups.0.series.0.points.2.time", "-1e-5", "$.groups[0].series[0].points[2]",
         "time -1e-05 is not a positive time"},
        {"groups.0.series.0.points.2.run", "99", "$.groups[0].series[0].points[2]",
         "run 99 is not a run of the group"},
        {"groups.0.series.0.points.2.run", "11", "$.groups[0].series[0].points[2]",
         "run 11 out of order"},
        {"groups.0.series.0.points.6.lo", "true", "$.groups[0].series[0].points[6].lo",
         "expected a number or null, got true"},
        {"groups.0.series.0.points.6.verdict", "\"worse\"",
         "$.groups[0].series[0].points[6].verdict", "expected regression, improvement"},
        {"groups.0.series.3.verdict.status", "\"REGRESSION\"",
         "$.groups[0].series[3].verdict.status", "expected regression, improvement"},
        {"groups.0.series.3.verdict", "", "$.groups[0].series[3].verdict", "missing"},
        {"groups.0.series.3.points", "null", "$.groups[0].series[3].points",
         "expected an array, got null"},
    };
    return cr_make_param_array(bad_case, cases, sizeof cases / sizeof cases[0]);
}

/* Sets (or deletes) the member at a dotted path of root. */
static void mutate(json_t *root, const char *path, const char *value)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *node = root;
    char *save = NULL, *key = strtok_r(buf, ".", &save);
    for (char *next; (next = strtok_r(NULL, ".", &save)) != NULL; key = next) {
        node = json_is_array(node) ? json_array_get(node, strtoul(key, NULL, 10))
                                   : json_object_get(node, key);
        cr_assert_not_null(node, "%s: no %s", path, key);
    }
    json_t *v = value[0] ? json_loads(value, JSON_DECODE_ANY, NULL) : NULL;
    cr_assert(!value[0] || v, "%s", value);
    if (json_is_array(node))
        cr_assert_eq(json_array_set_new(node, strtoul(key, NULL, 10), v), 0);
    else if (v)
        cr_assert_eq(json_object_set_new(node, key, v), 0);
    else
        cr_assert_eq(json_object_del(node, key), 0);
}

ParameterizedTest(bad_case *bc, dashboard, refuses_malformed_trees)
{
    json_t *h = load_fixture();
    mutate(h, bc->path, bc->value);
    char out[256];
    snprintf(out, sizeof out, "%s/site", tmpdir);
    tune_error err = {0};
    cr_expect_eq(dashboard_write(h, out, &err), TUNE_ERR_INVALID, "%s", bc->path);
    cr_expect_str_eq(err.where, bc->where);
    cr_expect_eq(strncmp(err.message, bc->message, strlen(bc->message)), 0, "%s: got '%s'",
                 bc->where, err.message);
    cr_expect_eq(count_prefixed(tmpdir, "site"), 0, "nothing written");
    json_decref(h);
}

Test(dashboard, refuses_a_tree_that_is_not_an_object)
{
    json_t *a = json_array();
    char out[256];
    snprintf(out, sizeof out, "%s/site", tmpdir);
    tune_error err = {0};
    cr_expect_eq(dashboard_write(a, out, &err), TUNE_ERR_INVALID);
    cr_expect_str_eq(err.where, "$");
    cr_expect_str_eq(err.message, "expected an object, got an array");
    cr_expect_eq(dashboard_write(NULL, out, NULL), TUNE_ERR_INVALID);
    json_decref(a);
}
