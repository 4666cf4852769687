#define _GNU_SOURCE /* renameat2 */
#include "analysis/dashboard.h"
#include "analysis/dashboard_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/hash.h"
#include "core/outfile.h"

#define DASH_PATH 512 /* a JSON path */

/* A JSON path written into p (DASH_PATH bytes); a path cut short still names where it starts. */
__attribute__((format(printf, 2, 3))) static void jpath(char *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p, DASH_PATH, fmt, ap);
    va_end(ap);
}

/* ---- the history tree, checked and reshaped into the groups' models ---- */

static const char *type_name(const json_t *j)
{
    static const char *names[] = {"an object", "an array", "a string", "an integer",
                                  "a number",  "true",     "false",    "null"};
    return names[json_typeof(j)];
}

/* The member key of obj (at JSON path `path`) when present and of the kind wanted, else NULL
 * with err (where = path.key). kind: 's' string, 'n' number, 'i' integer, 'a' array, 'o' object;
 * the capital letter also accepts null. Borrowed. */
static json_t *member(const json_t *obj, const char *path, const char *key, char kind,
                      tune_error *err)
{
    static const char *wanted[] = {['s'] = "a string",
                                   ['n'] = "a number",
                                   ['i'] = "an integer",
                                   ['a'] = "an array",
                                   ['o'] = "an object"};
    char where[DASH_PATH];
    jpath(where, "%s.%s", path, key);
    json_t *v = json_object_get(obj, key);
    if (!v) {
        tune_error_set(err, TUNE_ERR_INVALID, where, "missing");
        return NULL;
    }
    int nullable = kind >= 'A' && kind <= 'Z';
    char k = nullable ? (char)(kind - 'A' + 'a') : kind;
    if (nullable && json_is_null(v))
        return v;
    int ok = k == 's'   ? json_is_string(v)
             : k == 'n' ? json_is_number(v)
             : k == 'i' ? json_is_integer(v)
             : k == 'a' ? json_is_array(v)
                        : json_is_object(v);
    if (!ok) {
        tune_error_set(err, TUNE_ERR_INVALID, where, "expected %s%s, got %s", wanted[(int)k],
                       nullable ? " or null" : "", type_name(v));
        return NULL;
    }
    return v;
}

typedef struct {
    const char *key;
    char kind;
} field;

/* Every field of obj checked; those before n_copy copied (new references) into dst when dst is
 * not NULL. 0, or -1 with err set. */
static int check_fields(const json_t *obj, const char *path, const field *f, size_t n,
                        size_t n_copy, json_t *dst, tune_error *err)
{
    if (!json_is_object(obj))
        return tune_error_set(err, TUNE_ERR_INVALID, path, "expected an object, got %s",
                              type_name(obj)),
               -1;
    for (size_t i = 0; i < n; i++) {
        json_t *v = member(obj, path, f[i].key, f[i].kind, err);
        if (!v)
            return -1;
        if (dst && i < n_copy && json_object_set(dst, f[i].key, v) != 0)
            return tune_error_set(err, TUNE_ERR_NOMEM, path, "out of host memory"), -1;
    }
    return 0;
}

/* 0 when every element of the array a (at path) is a string, else -1 with err. */
static int check_strings(const json_t *a, const char *path, tune_error *err)
{
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) if (!json_is_string(v))
    {
        char where[DASH_PATH];
        jpath(where, "%s[%zu]", path, i);
        return tune_error_set(err, TUNE_ERR_INVALID, where, "expected a string, got %s",
                              type_name(v)),
               -1;
    }
    return 0;
}

/* The letter of a verdict (r i s u n m), or 0 with err when v names none. */
static char verdict_letter(const json_t *v, const char *where, tune_error *err)
{
    static const char *names[] = {"regression", "improvement", "same",
                                  "unstable",   "insufficient", "missing"};
    for (size_t i = 0; i < 6; i++)
        if (strcmp(json_string_value(v), names[i]) == 0)
            return "risunm"[i];
    tune_error_set(err, TUNE_ERR_INVALID, where,
                   "expected regression, improvement, same, unstable, insufficient or missing, "
                   "got '%s'",
                   json_string_value(v));
    return 0;
}

/* Seconds as microseconds; null stays null. New. */
static json_t *micros(const json_t *v)
{
    return json_is_null(v) ? json_null() : json_real(json_number_value(v) * 1e6);
}

/* The site's header: {"generated", "store", "rule"}, checked, new in *site. */
static tune_status check_site(const json_t *h, json_t **site, tune_error *err)
{
    static const field top[] = {
        {"generated", 's'}, {"store", 's'}, {"rule", 'o'}, {"tune_history", 'i'}, {"groups", 'a'}};
    static const field rule[] = {{"window", 'i'}, {"min_runs", 'i'},    {"threshold_pct", 'n'},
                                 {"k_mad", 'n'},  {"consecutive", 'i'}, {"segment_on", 'a'}};
    if (!(*site = json_object()))
        return tune_error_set(err, TUNE_ERR_NOMEM, "$", "out of host memory");
    if (check_fields(h, "$", top, 5, 3, *site, err) != 0)
        return TUNE_ERR_INVALID;
    if (json_integer_value(json_object_get(h, "tune_history")) != 1)
        return tune_error_set(err, TUNE_ERR_INVALID, "$.tune_history",
                              "expected version 1, got %lld",
                              (long long)json_integer_value(json_object_get(h, "tune_history")));
    const json_t *r = json_object_get(h, "rule");
    if (check_fields(r, "$.rule", rule, 6, 0, NULL, err) != 0 ||
        check_strings(json_object_get(r, "segment_on"), "$.rule.segment_on", err) != 0)
        return TUNE_ERR_INVALID;
    return TUNE_OK;
}

/* A relative href from the folder `from` to the file `to`, both absolute and canonical, with
 * every byte but [A-Za-z0-9-._~/] percent-encoded. */
static void relative_href(const char *from, const char *to, char *out, size_t size)
{
    size_t k = 0; /* the length of the folders both share */
    for (size_t i = 0;; i++) {
        if (!from[i] && to[i] == '/') {
            k = i;
            break;
        }
        if (from[i] != to[i] || !from[i])
            break;
        if (from[i] == '/')
            k = i;
    }
    size_t len = 0;
    out[0] = '\0';
    for (const char *p = from + k; *p; p++)
        if (*p == '/' && len + 4 < size)
            len += (size_t)snprintf(out + len, size - len, "../");
    for (const unsigned char *p = (const unsigned char *)to + k + 1; *p && len + 4 < size; p++) {
        int keep = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                   (*p >= '0' && *p <= '9') || strchr("-._~/", *p);
        len += (size_t)snprintf(out + len, size - len, keep ? "%c" : "%%%02X", *p);
    }
}

/* The href of source_dir/best.md from the site at out_abs when the file exists, else null. New. */
static json_t *best_href(const char *out_abs, const char *source_dir)
{
    char path[PATH_MAX + 16], real[PATH_MAX], href[3 * PATH_MAX];
    struct stat sb;
    if (snprintf(path, sizeof path, "%s/best.md", source_dir) >= (int)sizeof path ||
        !realpath(path, real) || stat(real, &sb) != 0 || !S_ISREG(sb.st_mode))
        return json_null();
    relative_href(out_abs, real, href, sizeof href);
    return json_string(href);
}

/* A run's index among the ids, looked for from `from` on (points come in run order), else -1. */
static long run_index(const json_int_t *ids, size_t n, json_int_t id, size_t from)
{
    for (size_t i = from; i < n; i++)
        if (ids[i] == id)
            return (long)i;
    return -1;
}

/* The runs of group g into model["runs"], their ids into *ids (new, n_runs of them). */
static tune_status build_runs(const json_t *g, const char *path, const char *out_abs, json_t *model,
                              json_int_t **ids, tune_error *err)
{
    static const field f[] = {{"id", 'i'},       {"night", 's'},        {"start", 's'},
                              {"host", 's'},     {"driver", 's'},       {"runtime", 'i'},
                              {"tool_rev", 's'}, {"kernels_hash", 's'}, {"segment", 'i'},
                              {"changes", 'a'},  {"sweep_hash", 's'},   {"source_dir", 's'}};
    const json_t *runs = member(g, path, "runs", 'a', err);
    json_t *out = json_array();
    if (!runs || !out || json_object_set_new(model, "runs", out) != 0)
        return runs ? tune_error_set(err, TUNE_ERR_NOMEM, path, "out of host memory")
                    : TUNE_ERR_INVALID;
    *ids = calloc(json_array_size(runs) + 1, sizeof **ids);
    if (!*ids)
        return tune_error_set(err, TUNE_ERR_NOMEM, path, "out of host memory");
    size_t i;
    const json_t *r;
    json_array_foreach(runs, i, r)
    {
        char rp[DASH_PATH], cp[DASH_PATH];
        jpath(rp, "%s.runs[%zu]", path, i);
        jpath(cp, "%s.changes", rp);
        json_t *m = json_object();
        if (!m || json_array_append_new(out, m) != 0)
            return tune_error_set(err, TUNE_ERR_NOMEM, rp, "out of host memory");
        if (check_fields(r, rp, f, 12, 10, m, err) != 0 ||
            check_strings(json_object_get(r, "changes"), cp, err) != 0)
            return TUNE_ERR_INVALID;
        (*ids)[i] = json_integer_value(json_object_get(r, "id"));
        if (run_index(*ids, i, (*ids)[i], 0) >= 0)
            return tune_error_set(err, TUNE_ERR_INVALID, rp, "run id %lld appears twice",
                                  (long long)(*ids)[i]);
        const char *src = json_string_value(json_object_get(r, "source_dir"));
        if (json_object_set_new(m, "best", best_href(out_abs, src)) != 0)
            return tune_error_set(err, TUNE_ERR_NOMEM, rp, "out of host memory");
    }
    return TUNE_OK;
}

/* Point p (at path pp) appended to the columns col (x t lo hi pct w) and its verdict's letter
 * into *letter; *at is the least run index it may have (points come oldest first). */
static tune_status add_point(const json_t *p, const char *pp, const json_int_t *ids, size_t n_runs,
                             size_t *at, json_t **col, json_t *winners, json_t *winner_ix,
                             char *letter, tune_error *err)
{
    static const field f[] = {{"run", 'i'}, {"time", 'n'}, {"winner", 's'},   {"verdict", 's'},
                              {"lo", 'N'},  {"hi", 'N'},   {"baseline", 'N'}, {"change_pct", 'N'}};
    if (check_fields(p, pp, f, 8, 0, NULL, err) != 0)
        return TUNE_ERR_INVALID;
    json_int_t id = json_integer_value(json_object_get(p, "run"));
    long ix = run_index(ids, n_runs, id, *at);
    if (ix < 0)
        return tune_error_set(err, TUNE_ERR_INVALID, pp,
                              run_index(ids, n_runs, id, 0) >= 0
                                  ? "run %lld out of order (points come oldest first)"
                                  : "run %lld is not a run of the group",
                              (long long)id);
    double time = json_number_value(json_object_get(p, "time"));
    if (!(time > 0))
        return tune_error_set(err, TUNE_ERR_INVALID, pp, "time %g is not a positive time", time);
    *at = (size_t)ix + 1;
    char vp[DASH_PATH];
    jpath(vp, "%s.verdict", pp);
    if (!(*letter = verdict_letter(json_object_get(p, "verdict"), vp, err)))
        return TUNE_ERR_INVALID;
    const char *win = json_string_value(json_object_get(p, "winner"));
    json_t *wix = json_object_get(winner_ix, win);
    if (!wix && (json_object_set_new(winner_ix, win,
                                     wix = json_integer((json_int_t)json_array_size(winners))) ||
                 json_array_append_new(winners, json_string(win))))
        return tune_error_set(err, TUNE_ERR_NOMEM, pp, "out of host memory");
    json_t *vals[6] = {json_integer(ix),
                       json_real(time * 1e6),
                       micros(json_object_get(p, "lo")),
                       micros(json_object_get(p, "hi")),
                       json_incref(json_object_get(p, "change_pct")),
                       json_incref(wix)};
    int ok = 1;
    for (size_t c = 0; c < 6; c++)
        ok &= json_array_append_new(col[c], vals[c]) == 0;
    return ok ? TUNE_OK : tune_error_set(err, TUNE_ERR_NOMEM, pp, "out of host memory");
}

/* The points of series s (at path) as columns of ms, the series' model; "w" only when a point
 * has a winner (a method with parameters). */
static tune_status build_points(const json_t *s, const char *path, const json_int_t *ids,
                                size_t n_runs, json_t *ms, json_t *winners, json_t *winner_ix,
                                tune_error *err)
{
    static const char *names[] = {"x", "t", "lo", "hi", "pct", "w"};
    const json_t *pts = member(s, path, "points", 'a', err);
    if (!pts)
        return TUNE_ERR_INVALID;
    size_t n = json_array_size(pts), at = 0, i;
    char *letters = calloc(n + 1, 1);
    json_t *col[6];
    tune_status st = letters ? TUNE_OK : TUNE_ERR_NOMEM;
    for (size_t c = 0; c < 6; c++)
        if (json_object_set_new(ms, names[c], col[c] = json_array()) != 0)
            st = TUNE_ERR_NOMEM;
    if (st != TUNE_OK) {
        free(letters);
        return tune_error_set(err, st, path, "out of host memory");
    }
    const json_t *p;
    json_array_foreach(pts, i, p)
    {
        char pp[DASH_PATH];
        jpath(pp, "%s.points[%zu]", path, i);
        st = add_point(p, pp, ids, n_runs, &at, col, winners, winner_ix, &letters[i], err);
        if (st != TUNE_OK)
            break;
    }
    int any_winner = 0;
    json_t *w;
    json_array_foreach(col[5], i, w) any_winner |=
        json_string_value(json_array_get(winners, (size_t)json_integer_value(w)))[0] != '\0';
    if (st == TUNE_OK && ((!any_winner && json_object_del(ms, "w") != 0) ||
                          json_object_set_new(ms, "v", json_string(letters)) != 0))
        st = tune_error_set(err, TUNE_ERR_NOMEM, path, "out of host memory");
    free(letters);
    return st;
}

/* Series s (at path sp) into its shape's entry of shapes (a new entry for a new shape). */
static tune_status add_series(const json_t *s, const char *sp, const json_int_t *ids, size_t n_runs,
                              json_t *shapes, json_t *shape_ix, json_t *winners, json_t *winner_ix,
                              tune_error *err)
{
    static const field f[] = {{"shape", 's'}, {"method", 's'}, {"verdict", 'o'}};
    static const field vf[] = {
        {"status", 's'}, {"change_pct", 'N'}, {"reason", 's'}, {"baseline", 'N'}};
    char vp[DASH_PATH], stp[DASH_PATH];
    jpath(vp, "%s.verdict", sp);
    jpath(stp, "%s.status", vp);
    json_t *ms = json_object();
    const json_t *v = json_object_get(s, "verdict");
    tune_status st = TUNE_OK;
    if (!ms)
        return tune_error_set(err, TUNE_ERR_NOMEM, sp, "out of host memory");
    if (check_fields(s, sp, f, 3, 2, ms, err) != 0 || check_fields(v, vp, vf, 4, 3, ms, err) != 0 ||
        !verdict_letter(json_object_get(v, "status"), stp, err))
        st = TUNE_ERR_INVALID;
    else if (json_object_set_new(ms, "baseline", micros(json_object_get(v, "baseline"))) != 0)
        st = tune_error_set(err, TUNE_ERR_NOMEM, sp, "out of host memory");
    if (st == TUNE_OK)
        st = build_points(s, sp, ids, n_runs, ms, winners, winner_ix, err);
    const char *shape = json_string_value(json_object_get(s, "shape"));
    json_t *ix = st == TUNE_OK ? json_object_get(shape_ix, shape) : NULL;
    if (st == TUNE_OK && !ix &&
        (json_object_set_new(shape_ix, shape,
                             ix = json_integer((json_int_t)json_array_size(shapes))) != 0 ||
         json_array_append_new(shapes, json_pack("{s:s, s:[]}", "shape", shape, "series")) != 0))
        st = tune_error_set(err, TUNE_ERR_NOMEM, sp, "out of host memory");
    json_t *entry = st == TUNE_OK ? json_array_get(shapes, (size_t)json_integer_value(ix)) : NULL;
    if (st == TUNE_OK && json_array_append(json_object_get(entry, "series"), ms) != 0)
        st = tune_error_set(err, TUNE_ERR_NOMEM, sp, "out of host memory");
    json_decref(ms);
    return st;
}

/* The series of group g into model["shapes"] (grouped by shape, in order of first appearance)
 * and model["winners"]. */
static tune_status build_series(const json_t *g, const char *path, const json_int_t *ids,
                                size_t n_runs, json_t *model, tune_error *err)
{
    const json_t *series = member(g, path, "series", 'a', err);
    if (!series)
        return TUNE_ERR_INVALID;
    json_t *shapes = json_array(), *winners = json_array(), *shape_ix = json_object(),
           *winner_ix = json_object();
    tune_status st = TUNE_OK;
    if (json_object_set_new(model, "shapes", shapes) != 0 ||
        json_object_set_new(model, "winners", winners) != 0 || !shape_ix || !winner_ix)
        st = tune_error_set(err, TUNE_ERR_NOMEM, path, "out of host memory");
    size_t i;
    const json_t *s;
    json_array_foreach(series, i, s)
    {
        char sp[DASH_PATH];
        jpath(sp, "%s.series[%zu]", path, i);
        if (st == TUNE_OK)
            st = add_series(s, sp, ids, n_runs, shapes, shape_ix, winners, winner_ix, err);
    }
    json_decref(shape_ix);
    json_decref(winner_ix);
    return st;
}

/* slug: sweep--device kept to [A-Za-z0-9_.-] (other bytes as '_', no leading '.'); a long one
 * cut and made distinct by a hash; one taken by an earlier group gets "-2", "-3", ... */
static void make_slug(const char *sweep, const char *device, const dash_group *prev, size_t n,
                      char *slug)
{
    char raw[80];
    size_t len = 0;
    int cut = 0;
    for (const char *parts[] = {sweep, "--", device}, **p = parts; p < parts + 3; p++)
        for (const char *c = *p; *c; c++) {
            if (len == 64) {
                cut = 1;
                break;
            }
            int keep = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                       (*c >= '0' && *c <= '9') || strchr("_.-", *c);
            raw[len] = keep && !(len == 0 && *c == '.') ? *c : '_';
            len++;
        }
    raw[len] = '\0';
    if (cut) {
        char hex[17];
        hash_hex(hash_fnv1a_str(hash_fnv1a_str(HASH_FNV_OFFSET, sweep), device), hex);
        snprintf(raw + len, sizeof raw - len, "-%.8s", hex);
    }
    snprintf(slug, DASH_SLUG_MAX, "%s", raw);
    for (int k = 2;; k++) {
        size_t i = 0;
        while (i < n && strcmp(prev[i].slug, slug) != 0)
            i++;
        if (i == n)
            return;
        snprintf(slug, DASH_SLUG_MAX, "%s-%d", raw, k);
    }
}

/* Group i of the tree into groups[i]: its slug and model. */
static tune_status build_group(const json_t *g, size_t i, const char *out_abs, dash_group *groups,
                               tune_error *err)
{
    static const field f[] = {{"sweep", 's'}, {"device", 's'}, {"newest", 'o'}};
    static const field nf[] = {{"run", 'i'}, {"counts", 'o'}};
    static const field cf[] = {{"regression", 'i'},
                               {"improvement", 'i'},
                               {"same", 'i'},
                               {"unstable", 'i'},
                               {"insufficient", 'i'},
                               {"missing", 'i'}};
    char path[DASH_PATH], np[DASH_PATH], cp[DASH_PATH];
    jpath(path, "$.groups[%zu]", i);
    jpath(np, "%s.newest", path);
    jpath(cp, "%s.counts", np);
    dash_group *dg = &groups[i];
    json_int_t *ids = NULL;
    if (!(dg->model = json_object()))
        return tune_error_set(err, TUNE_ERR_NOMEM, path, "out of host memory");
    const json_t *newest = json_object_get(g, "newest");
    if (check_fields(g, path, f, 3, 2, dg->model, err) != 0 ||
        check_fields(newest, np, nf, 2, 0, NULL, err) != 0 ||
        check_fields(json_object_get(newest, "counts"), cp, cf, 5, 0, NULL, err) != 0)
        return TUNE_ERR_INVALID;
    tune_status st = build_runs(g, path, out_abs, dg->model, &ids, err);
    size_t n_runs = json_array_size(json_object_get(dg->model, "runs"));
    if (st == TUNE_OK)
        st = build_series(g, path, ids, n_runs, dg->model, err);
    long nix = st == TUNE_OK
                   ? run_index(ids, n_runs, json_integer_value(json_object_get(newest, "run")), 0)
                   : 0;
    free(ids);
    if (st != TUNE_OK)
        return st;
    if (nix < 0)
        return tune_error_set(err, TUNE_ERR_INVALID, np, "run %lld is not a run of the group",
                              (long long)json_integer_value(json_object_get(newest, "run")));
    json_t *night =
        json_object_get(json_array_get(json_object_get(dg->model, "runs"), (size_t)nix), "night");
    if (json_object_set_new(dg->model, "newest",
                            json_pack("{s:O, s:O, s:O}", "run", json_object_get(newest, "run"),
                                      "night", night, "counts",
                                      json_object_get(newest, "counts"))) != 0)
        return tune_error_set(err, TUNE_ERR_NOMEM, path, "out of host memory");
    make_slug(json_string_value(json_object_get(g, "sweep")),
              json_string_value(json_object_get(g, "device")), groups, i, dg->slug);
    return TUNE_OK;
}

/* ---- the folder ---- */

/* Removes the file, link or folder name under dirfd, never following a link. 0 or -1 (errno). */
static int remove_tree(int dirfd, const char *name, int depth)
{
    if (unlinkat(dirfd, name, 0) == 0)
        return 0;
    if ((errno != EISDIR && errno != EPERM) || depth > 32)
        return -1;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int rc = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            rc |= remove_tree(fd, e->d_name, depth + 1);
    closedir(d);
    return rc != 0 ? -1 : unlinkat(dirfd, name, AT_REMOVEDIR);
}

/* What stands at path: 0 nothing, 1 an empty folder or a dashboard (replaceable), -1 anything
 * else (err set, where = shown). */
static int inspect_target(const char *path, const char *shown, tune_error *err)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return errno == ENOENT ? 0
                               : (tune_error_set(err, TUNE_ERR_IO, shown, "cannot inspect: %s",
                                                 strerror(errno)),
                                  -1);
    if (S_ISLNK(sb.st_mode))
        return tune_error_set(err, TUNE_ERR_IO, shown,
                              "is a symbolic link: a dashboard is not written through one"),
               -1;
    if (!S_ISDIR(sb.st_mode))
        return tune_error_set(err, TUNE_ERR_IO, shown, "exists and is not a folder: not replaced"),
               -1;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return tune_error_set(err, TUNE_ERR_IO, shown, "cannot read: %s", strerror(e)), -1;
    }
    int marker =
        fstatat(fd, DASHBOARD_MARKER, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode);
    int empty = 1;
    for (struct dirent *e; empty && (e = readdir(d)) != NULL;)
        empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
    closedir(d);
    if (marker || empty)
        return 1;
    return tune_error_set(err, TUNE_ERR_IO, shown,
                          "is neither empty nor a dashboard (it has no " DASHBOARD_MARKER
                          "): not replaced"),
           -1;
}

/* The finished site tmp takes the place of out: a rename when out is absent, else a swap
 * (RENAME_EXCHANGE) after which the old site, now at tmp, is checked once more and removed. */
static tune_status swap_in(const char *tmp, const char *out, tune_error *err)
{
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, out, RENAME_NOREPLACE) == 0)
        return TUNE_OK;
    if (errno == EEXIST && renameat2(AT_FDCWD, tmp, AT_FDCWD, out, RENAME_EXCHANGE) == 0) {
        if (inspect_target(tmp, out, err) < 0) { /* out changed since it was inspected */
            (void)renameat2(AT_FDCWD, tmp, AT_FDCWD, out, RENAME_EXCHANGE);
            return err ? err->code : TUNE_ERR_IO;
        }
    } else if (errno == EINVAL || errno == ENOSYS) { /* a file system without renameat2's flags */
        char old[PATH_MAX + 16];
        snprintf(old, sizeof old, "%s.old.XXXXXX", out);
        if (!mkdtemp(old))
            return tune_error_set(err, TUNE_ERR_IO, old, "cannot create: %s", strerror(errno));
        int had = rename(out, old) == 0;
        if (rename(tmp, out) != 0) {
            int e = errno;
            if (had)
                (void)rename(old, out);
            (void)rmdir(old);
            return tune_error_set(err, TUNE_ERR_IO, out, "cannot replace: %s", strerror(e));
        }
        if (!had)
            (void)rmdir(old);
        else if (remove_tree(AT_FDCWD, old, 0) != 0)
            return tune_error_set(err, TUNE_ERR_IO, old, "written, but the old site stays here: %s",
                                  strerror(errno));
        return TUNE_OK;
    } else {
        return tune_error_set(err, TUNE_ERR_IO, out, "cannot replace: %s", strerror(errno));
    }
    if (remove_tree(AT_FDCWD, tmp, 0) != 0)
        return tune_error_set(err, TUNE_ERR_IO, tmp, "written, but the old site stays here: %s",
                              strerror(errno));
    return TUNE_OK;
}

/* out_dir without trailing slashes into out; its absolute form (the parent resolved) into abs. */
static tune_status resolve_out(const char *out_dir, char *out, char *abs, tune_error *err)
{
    size_t len = strlen(out_dir);
    while (len > 1 && out_dir[len - 1] == '/')
        len--;
    if (len >= PATH_MAX - 32)
        return tune_error_set(err, TUNE_ERR_IO, out_dir, "path too long");
    snprintf(out, PATH_MAX, "%.*s", (int)len, out_dir);
    char *slash = strrchr(out, '/'), parent[PATH_MAX], real[PATH_MAX];
    const char *base = slash ? slash + 1 : out;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return tune_error_set(err, TUNE_ERR_INVALID, out_dir,
                              "name the dashboard's own folder (not '.', '..' or '/')");
    snprintf(parent, sizeof parent, "%.*s", slash ? (int)(slash == out ? 1 : slash - out) : 1,
             slash ? out : ".");
    if (!realpath(parent, real))
        return tune_error_set(err, TUNE_ERR_IO, parent, "cannot resolve the folder: %s",
                              strerror(errno));
    if (snprintf(abs, PATH_MAX, "%s/%s", strcmp(real, "/") == 0 ? "" : real, base) >= PATH_MAX)
        return tune_error_set(err, TUNE_ERR_IO, out_dir, "path too long");
    return TUNE_OK;
}

/* The data file of a group: `window.TUNE_DATA = {...};`, "/" escaped (so no "</script>"). */
static tune_status write_data(const char *path, const json_t *model, tune_error *err)
{
    outfile *o = outfile_open(path, err);
    if (!o)
        return err ? err->code : TUNE_ERR_IO;
    FILE *f = outfile_stream(o);
    fputs("window.TUNE_DATA = ", f);
    if (json_dumpf(model, f,
                   JSON_COMPACT | JSON_ENSURE_ASCII | JSON_ESCAPE_SLASH | JSON_REAL_PRECISION(6)) !=
        0) {
        outfile_abort(o);
        return tune_error_set(err, TUNE_ERR_NOMEM, path, "cannot write: out of host memory");
    }
    fputs(";\n", f);
    return outfile_commit(o, err);
}

static tune_status write_page(const char *path, const json_t *site, const dash_group *groups,
                              size_t n, int index, tune_error *err)
{
    outfile *o = outfile_open(path, err);
    if (!o)
        return err ? err->code : TUNE_ERR_IO;
    if (index)
        dash_write_index(outfile_stream(o), site, groups, n);
    else
        dash_write_group(outfile_stream(o), site, groups);
    return outfile_commit(o, err);
}

/* Every file of the site into the folder dir. */
static tune_status write_site(const char *dir, const json_t *site, const dash_group *groups,
                              size_t n, tune_error *err)
{
    char p[PATH_MAX + 2 * DASH_SLUG_MAX];
    tune_status st = TUNE_OK;
    snprintf(p, sizeof p, "%s/data", dir);
    if (mkdir(p, 0755) != 0)
        return tune_error_set(err, TUNE_ERR_IO, p, "cannot create: %s", strerror(errno));
    snprintf(p, sizeof p, "%s/dashboard.js", dir);
    st = outfile_write(p, tune_web_dashboard_js, tune_web_dashboard_js_len, err);
    snprintf(p, sizeof p, "%s/dashboard.css", dir);
    if (st == TUNE_OK)
        st = outfile_write(p, tune_web_dashboard_css, tune_web_dashboard_css_len, err);
    for (size_t i = 0; i < n && st == TUNE_OK; i++) {
        snprintf(p, sizeof p, "%s/data/%s.js", dir, groups[i].slug);
        st = write_data(p, groups[i].model, err);
        snprintf(p, sizeof p, "%s/%s.html", dir, groups[i].slug);
        if (st == TUNE_OK)
            st = write_page(p, site, groups + i, 1, 0, err);
    }
    snprintf(p, sizeof p, "%s/index.html", dir);
    if (st == TUNE_OK)
        st = write_page(p, site, groups, n, 1, err);
    snprintf(p, sizeof p, "%s/" DASHBOARD_MARKER, dir);
    static const char marker[] = "A site written by tune dashboard; it replaces this folder.\n";
    return st == TUNE_OK ? outfile_write(p, marker, sizeof marker - 1, err) : st;
}

static void dashboard_free(dash_group *groups, size_t n, json_t *site)
{
    for (size_t i = 0; groups && i < n; i++)
        json_decref(groups[i].model);
    free(groups);
    json_decref(site);
}

tune_status dashboard_write(const json_t *history, const char *out_dir, tune_error *err)
{
    char out[PATH_MAX], abs[PATH_MAX], tmp[PATH_MAX + 16];
    if (!history || !out_dir)
        return tune_error_set(err, TUNE_ERR_INVALID, "dashboard", "no history or no folder");
    tune_status st = resolve_out(out_dir, out, abs, err);
    json_t *site = NULL;
    const json_t *gs = json_object_get(history, "groups");
    size_t n = 0, n_groups = json_array_size(gs);
    dash_group *groups = calloc(n_groups + 1, sizeof *groups);
    if (st == TUNE_OK && !groups)
        st = tune_error_set(err, TUNE_ERR_NOMEM, out_dir, "out of host memory");
    if (st == TUNE_OK)
        st = check_site(history, &site, err);
    for (; st == TUNE_OK && n < n_groups; n++)
        st = build_group(json_array_get(gs, n), n, abs, groups, err);
    if (st == TUNE_OK && inspect_target(out, out_dir, err) < 0)
        st = TUNE_ERR_IO;
    if (st == TUNE_OK) {
        int made = -1;
        for (unsigned k = (unsigned)getpid() * 2654435761u, tries = 0; made != 0 && tries < 100;
             tries++, k += 7919) {
            snprintf(tmp, sizeof tmp, "%s.tmp.%08x", out, k);
            if ((made = mkdir(tmp, 0755)) != 0 && errno != EEXIST)
                break;
        }
        if (made != 0)
            return dashboard_free(groups, n_groups, site),
                   tune_error_set(err, TUNE_ERR_IO, tmp, "cannot create: %s", strerror(errno));
        if (st == TUNE_OK && (st = write_site(tmp, site, groups, n, err)) == TUNE_OK)
            st = swap_in(tmp, out, err);
        if (st != TUNE_OK) /* the new site, or the old one left by a failed removal */
            (void)remove_tree(AT_FDCWD, tmp, 0);
    }
    dashboard_free(groups, n_groups, site);
    return st;
}
