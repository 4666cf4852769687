#include "core/point.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long point_find(const tune_point *p, const char *name)
{
    for (size_t k = 0; k < p->n; k++)
        if (strcmp(p->names[k], name) == 0)
            return (long)k;
    return -1;
}

int point_set(tune_point *p, const char *name, expr_value v)
{
    if (!p || !name)
        return -1;
    long k = point_find(p, name);
    if (k >= 0) {
        p->vals[k] = v;
        return 0;
    }
    if (p->n >= TUNE_MAX_AXES)
        return -1;
    p->names[p->n] = name;
    p->vals[p->n] = v;
    p->n++;
    return 0;
}

int point_set_int(tune_point *p, const char *name, int64_t v)
{
    return point_set(p, name, expr_int(v));
}

int point_set_str(tune_point *p, const char *name, const char *s)
{
    return point_set(p, name, expr_str(s));
}

int point_get(const tune_point *p, const char *name, expr_value *out)
{
    if (!p || !name)
        return -1;
    long k = point_find(p, name);
    if (k < 0)
        return -1;
    if (out)
        *out = p->vals[k];
    return 0;
}

int64_t point_int(const tune_point *p, const char *name, int64_t dflt)
{
    expr_value v;
    return point_get(p, name, &v) == 0 && v.type == EXPR_INT ? v.i : dflt;
}

const char *point_str(const tune_point *p, const char *name, const char *dflt)
{
    expr_value v;
    return point_get(p, name, &v) == 0 && v.type == EXPR_STR ? v.s : dflt;
}

int point_lookup(void *ctx, const char *name, expr_value *out)
{
    return point_get(ctx, name, out);
}

int point_merge(tune_point *dst, const tune_point *src)
{
    if (!dst || !src)
        return -1;
    for (size_t k = 0; k < src->n; k++)
        if (point_set(dst, src->names[k], src->vals[k]))
            return -1;
    return 0;
}

const char *point_format(const tune_point *p, char *buf, size_t size)
{
    if (!buf || size == 0)
        return buf;
    buf[0] = '\0';
    size_t len = 0;
    for (size_t k = 0; p && k < p->n && len < size; k++) {
        char num[64];
        expr_value v = p->vals[k];
        const char *text =
            v.type == EXPR_STR ? (v.s ? v.s : "") : expr_value_format(v, num, sizeof num);
        int n = snprintf(buf + len, size - len, "%s%s=%s", k ? " " : "", p->names[k], text);
        if (n < 0)
            break;
        len += (size_t)n;
    }
    return buf;
}

size_t tune_dtype_size(const char *dtype)
{
    static const struct {
        const char *name;
        size_t size;
    } sizes[] = {
        {"float16", 2}, {"bfloat16", 2}, {"float32", 4}, {"int32", 4}, {"float64", 8},
    };
    for (size_t k = 0; dtype && k < sizeof sizes / sizeof sizes[0]; k++)
        if (strcmp(dtype, sizes[k].name) == 0)
            return sizes[k].size;
    return 0;
}

typedef struct {
    const char *name;
    expr_value v;
} point_pair;

static int pair_cmp(const void *a, const void *b)
{
    return strcmp(((const point_pair *)a)->name, ((const point_pair *)b)->name);
}

size_t point_append_sorted(const tune_point *p, size_t n, char sep, int typed, char *buf,
                           size_t size, size_t len)
{
    point_pair pairs[TUNE_MAX_AXES];
    n = n < p->n ? n : p->n;
    n = n < TUNE_MAX_AXES ? n : TUNE_MAX_AXES;
    for (size_t i = 0; i < n; i++)
        pairs[i] = (point_pair){p->names[i], p->vals[i]};
    qsort(pairs, n, sizeof *pairs, pair_cmp);
    for (size_t i = 0; i < n && len < size; i++) {
        char v[256];
        const char *text = expr_value_format(pairs[i].v, v, sizeof v);
        if (typed)
            len += (size_t)snprintf(buf + len, size - len, "%c%s=%c%s", sep, pairs[i].name,
                                    "ifs"[pairs[i].v.type], text);
        else
            len += (size_t)snprintf(buf + len, size - len, "%c%s=%s", sep, pairs[i].name, text);
    }
    return len;
}

const char *point_identity(const char *method, const tune_point *p, char *buf, size_t size)
{
    size_t len = (size_t)snprintf(buf, size, "%s", method ? method : "");
    point_append_sorted(p, p->n, '|', 0, buf, size, len);
    return buf;
}
