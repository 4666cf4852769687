#include "store/retime.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

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

void retime_append(const char *dir, const retime_record *r)
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
    FILE *f = line ? fopen(path, "a") : NULL;
    if (f) {
        fprintf(f, "%s\n", line);
        fclose(f);
    }
    free(line);
    json_decref(rec);
}

static void params_text(const json_t *params, char *buf, size_t size)
{
    const char *k;
    json_t *v;
    size_t len = 0;
    buf[0] = '\0';
    json_object_foreach((json_t *)params, k, v)
    {
        char val[64];
        if (json_is_string(v))
            snprintf(val, sizeof val, "%s", json_string_value(v));
        else
            snprintf(val, sizeof val, "%lld", (long long)json_integer_value(v));
        len += (size_t)snprintf(buf + len, len < size ? size - len : 0, "%s%s=%s", len ? " " : "",
                                k, val);
    }
}

tune_status retime_read(const char *dir, retime_verdict **v, size_t *n)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/retime.jsonl", dir);
    *v = NULL;
    *n = 0;
    FILE *in = fopen(path, "r");
    if (!in)
        return TUNE_ERR_IO;
    char line[16384];
    size_t cap = 0;
    tune_status st = TUNE_OK;
    while (st == TUNE_OK && fgets(line, sizeof line, in)) {
        json_t *r = json_loads(line, 0, NULL);
        if (!r)
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            retime_verdict *nv = realloc(*v, cap * sizeof *nv);
            if (!nv)
                st = TUNE_ERR_NOMEM;
            else
                *v = nv;
        }
        if (st == TUNE_OK) {
            retime_verdict *d = &(*v)[(*n)++];
            params_text(json_object_get(r, "shape"), d->shape, sizeof d->shape);
            params_text(json_object_get(r, "winner"), d->winner, sizeof d->winner);
            params_text(json_object_get(r, "runner_up"), d->runner_up, sizeof d->runner_up);
            d->tie = json_is_true(json_object_get(r, "tie"));
            d->margin = json_real_value(json_object_get(r, "margin"));
        }
        json_decref(r);
    }
    fclose(in);
    return st;
}
