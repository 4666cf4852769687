#include "store/retime.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "core/infile.h"
#include "store/folder.h"
#include "store/meta.h"

static json_t *point_json(const tune_point *p)
{
    json_t *o = json_object();
    for (size_t a = 0; a < p->n; a++) {
        expr_value v = p->vals[a];
        json_object_set_new(o, p->names[a],
                            v.type == EXPR_STR ? json_string(v.s) : json_integer(v.i));
    }
    return o;
}

tune_status retime_append(const char *dir, const retime_record *r, tune_error *err)
{
    json_t *list = json_array();
    for (size_t c = 0; c < r->n; c++)
        json_array_append_new(list, json_pack("{s:o, s:f, s:f, s:f}", "params",
                                              point_json(&r->cand[c].params), "first_median",
                                              r->cand[c].first_median, "median", r->cand[c].median,
                                              "stderr", r->cand[c].stderr_s));
    json_t *rec =
        json_pack("{s:o, s:s, s:i, s:o, s:O, s:O, s:f, s:b}", "shape", point_json(&r->shape),
                  "method", r->method, "rounds", r->rounds, "candidates", list, "winner",
                  json_object_get(json_array_get(list, r->winner), "params"), "runner_up",
                  json_object_get(json_array_get(list, r->runner_up), "params"), "margin",
                  r->margin, "tie", r->tie);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/retime.jsonl", dir);
    char *line = rec ? json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(rec);
    if (!line)
        return tune_error_set(err, TUNE_ERR_NOMEM, path, "cannot serialise the verdict");
    size_t len = strlen(line);
    line[len] = '\n'; /* json_dumps' NUL, replaced: the line is written as len + 1 bytes */
    int fd = folder_open_file(path, O_WRONLY | O_APPEND | O_CREAT, "the verdicts", err);
    tune_status st = fd < 0 ? TUNE_ERR_IO
                            : folder_append_line(fd, path, "a verdict", line, len + 1, err);
    if (fd >= 0 && close(fd) != 0 && st == TUNE_OK)
        st = tune_error_set(err, TUNE_ERR_IO, path, "cannot append a verdict: %s", strerror(errno));
    free(line);
    return st;
}

/* An object of integers and strings (a shape or a configuration's parameters) at key of r, added
 * to p (names and strings borrowed from r); NULL, or what is wrong. */
static const char *retime_point(const json_t *r, const char *key, tune_point *p)
{
    json_t *o = json_object_get(r, key), *v;
    const char *k;
    if (!json_is_object(o))
        return "expected an object";
    json_object_foreach(o, k, v)
    {
        if (!json_is_integer(v) && !json_is_string(v))
            return "expected integer or string values";
        expr_value x = json_is_string(v) ? expr_str(json_string_value(v))
                                         : expr_int((int64_t)json_integer_value(v));
        if (point_set(p, k, x) != 0)
            return "too many axes";
    }
    return NULL;
}

/* One line into d; NULL, or what is wrong with it (into why, naming the key). */
static const char *retime_parse_line(const char *line, size_t len, retime_verdict *d, char *why,
                                     size_t size)
{
    json_error_t je;
    json_t *r = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    const char *bad = NULL, *key = NULL;
    tune_point id = {0}, runner = {0};
    if (!r) {
        snprintf(why, size, "%s", je.text);
        return why;
    }
    json_t *method = json_object_get(r, "method"), *margin = json_object_get(r, "margin");
    if (!json_is_object(r))
        bad = "expected a JSON object";
    else if ((bad = retime_point(r, "shape", &id)))
        key = "shape";
    else if ((bad = retime_point(r, "winner", &id)))
        key = "winner";
    else if ((bad = retime_point(r, "runner_up", &runner)))
        key = "runner_up";
    else if (!json_is_string(method) || json_string_length(method) >= sizeof d->method)
        key = "method", bad = "expected a method name";
    else if (!json_is_number(margin))
        key = "margin", bad = "expected a number";
    else if (!json_is_boolean(json_object_get(r, "tie")))
        key = "tie", bad = "expected true or false";
    if (bad) {
        if (key)
            snprintf(why, size, "key '%s': %s", key, bad);
        else
            snprintf(why, size, "%s", bad);
        json_decref(r);
        return why;
    }
    memset(d, 0, sizeof *d);
    meta_object_text(json_object_get(r, "shape"), d->shape, sizeof d->shape);
    meta_object_text(json_object_get(r, "winner"), d->winner, sizeof d->winner);
    meta_object_text(json_object_get(r, "runner_up"), d->runner_up, sizeof d->runner_up);
    snprintf(d->method, sizeof d->method, "%s", json_string_value(method));
    point_identity(d->method, &id, d->winner_id, sizeof d->winner_id);
    d->tie = json_is_true(json_object_get(r, "tie"));
    d->margin = json_number_value(margin);
    json_decref(r);
    return NULL;
}

#define RETIME_MAX_LINE ((size_t)1 << 20)

static const char *retime_where(char *buf, size_t size, const char *path, size_t line)
{
    snprintf(buf, size, "%s:%zu", path, line);
    return buf;
}

tune_status retime_read(const char *dir, retime_verdict **v, size_t *n, tune_error *err)
{
    char path[PATH_MAX + 16];
    *v = NULL;
    *n = 0;
    tune_status st = folder_locate(dir, "retime.jsonl", path, sizeof path, err);
    if (st != TUNE_OK)
        return st;
    if (access(path, F_OK) != 0 && errno == ENOENT)
        return TUNE_OK;
    tune_error local = {0};
    if (!err)
        err = &local;
    folder_lines *in = folder_lines_open(path, INFILE_MAX_ROWS, RETIME_MAX_LINE, err);
    if (!in)
        return err->code;
    char *line, why[512], where[PATH_MAX + 40];
    size_t cap = 0, lineno = 0, len = 0;
    while ((st = folder_lines_next(in, &line, &len, &lineno, err)) == TUNE_OK && line) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            retime_verdict *nv = realloc(*v, cap * sizeof *nv);
            if (!nv) {
                st = tune_error_set(err, TUNE_ERR_NOMEM, path, "out of memory");
                break;
            }
            *v = nv;
        }
        if (retime_parse_line(line, len, &(*v)[*n], why, sizeof why)) {
            st = tune_error_set(err, TUNE_ERR_INVALID,
                                retime_where(where, sizeof where, path, lineno), "%s", why);
            break;
        }
        (*n)++;
    }
    folder_lines_close(in);
    if (st != TUNE_OK) {
        free(*v);
        *v = NULL;
        *n = 0;
    }
    return st;
}
