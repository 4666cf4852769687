/* sweep.c - sweep files: JSON text -> validated sweep structs. The Jansson tree never leaves this
 * file: every value is copied into the sweep, and the tree is released before returning.
 *
 * Errors point into the text: Jansson's own line:column for syntax errors, jsonloc_find for every
 * semantic error (the key for unknown keys, the value otherwise), followed by the JSON path. */
#include "model/sweep.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonloc.h"
#include "model/sweep_impl.h"


static const char *const sweep_top_keys[] = {"name",    "description", "family", "op",
                                             "problem", "params",      "methods", "skip_if",
                                             "bytes",   "flops",       "timing",  "report",
                                             NULL};
static const char *const sweep_gen_keys[] = {"range", "pow2", NULL};

int sweep_fail(const sweep_ctx *cx, tune_status code, const char *path, jsonloc_which which,
               const char *fmt, ...)
{
    char where[sizeof(((tune_error *)0)->where)];
    char msg[sizeof(((tune_error *)0)->message)];
    int line, col;
    if (jsonloc_find(cx->text, path, which, &line, &col) == 0)
        snprintf(where, sizeof where, "%s:%d:%d: %s", cx->label, line, col, path);
    else
        snprintf(where, sizeof where, "%s: %s", cx->label, path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tune_error_set(cx->err, code, where, "%s", msg);
    return -1;
}

int sweep_nomem(const sweep_ctx *cx)
{
    tune_error_set(cx->err, TUNE_ERR_NOMEM, cx->label, "out of host memory");
    return -1;
}

/* New copy of s, or NULL with the error recorded. */
char *sweep_strdup(const sweep_ctx *cx, const char *s)
{
    char *d = strdup(s);
    if (!d)
        sweep_nomem(cx);
    return d;
}

const char *sweep_json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a float";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "an unknown value";
}

/* parent + ".key" (or ["key"]) into buf; returns buf. */
const char *sweep_path_key(char *buf, const char *parent, const char *key)
{
    snprintf(buf, SWEEP_PATH_SIZE, "%s", parent);
    return jsonloc_path_key(buf, SWEEP_PATH_SIZE, key);
}

const char *sweep_path_index(char *buf, const char *parent, size_t index)
{
    snprintf(buf, SWEEP_PATH_SIZE, "%s", parent);
    return jsonloc_path_index(buf, SWEEP_PATH_SIZE, index);
}

/* "a, b, c" from n records whose first member is `const char *name`, stride bytes apart. */
const char *sweep_join_names(char *buf, size_t size, const void *base, size_t stride,
                             size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < size; i++) {
        const char *name = *(const char *const *)(const void *)((const char *)base + i * stride);
        int w = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return buf;
}

const char *sweep_join_list(char *buf, size_t size, const char *const *names)
{
    size_t n = 0;
    while (names[n])
        n++;
    return sweep_join_names(buf, size, names, sizeof names[0], n);
}

static int sweep_in_list(const char *const *list, const char *s)
{
    for (size_t i = 0; list[i]; i++)
        if (strcmp(list[i], s) == 0)
            return 1;
    return 0;
}

/* Every key of obj must be in allowed: otherwise an error at the first unknown key. */
int sweep_check_keys(const sweep_ctx *cx, json_t *obj, const char *path,
                     const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        if (sweep_in_list(allowed, key))
            continue;
        char p[SWEEP_PATH_SIZE], list[SWEEP_LIST_SIZE];
        return sweep_fail(cx, TUNE_ERR_INVALID, sweep_path_key(p, path, key), JSONLOC_KEY,
                          "unknown key '%s' (expected one of: %s)", key,
                          sweep_join_list(list, sizeof list, allowed));
    }
    return 0;
}

int sweep_expect_object(const sweep_ctx *cx, json_t *v, const char *path)
{
    if (json_is_object(v))
        return 0;
    return sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE, "expected an object, got %s",
                      sweep_json_kind(v));
}

/* Copies the string at obj[key] into *out. Absent: an error when required, else *out stays NULL. */
static int sweep_get_string(const sweep_ctx *cx, json_t *obj, const char *key, int required,
                            char **out)
{
    char p[SWEEP_PATH_SIZE];
    json_t *v = json_object_get(obj, key);
    if (!v) {
        if (!required)
            return 0;
        return sweep_fail(cx, TUNE_ERR_INVALID, "$", JSONLOC_VALUE,
                          "missing required key '%s'", key);
    }
    if (!json_is_string(v))
        return sweep_fail(cx, TUNE_ERR_INVALID, sweep_path_key(p, "$", key), JSONLOC_VALUE,
                          "expected a string, got %s", sweep_json_kind(v));
    *out = sweep_strdup(cx, json_string_value(v));
    return *out ? 0 : -1;
}

/* ---- axis values ---- */

/* Describes an axis in messages: "parameter 'chunk'" or "problem axis 'g'". */
typedef struct {
    const family_axis *ax;
    const char *what;
} sweep_axis_ref;

static const char *sweep_kind_text(family_axis_kind kind)
{
    switch (kind) {
    case FAMILY_AXIS_INT: return "an integer";
    case FAMILY_AXIS_STR: return "a string";
    case FAMILY_AXIS_BOOL: return "a boolean";
    }
    return "a value";
}

/* An integer of the axis within its bounds. */
static int sweep_axis_int(const sweep_ctx *cx, sweep_axis_ref r, json_t *v, const char *path,
                          int64_t *out)
{
    if (!json_is_integer(v))
        return sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "expected an integer for %s '%s', got %s", r.what, r.ax->name,
                          sweep_json_kind(v));
    int64_t x = (int64_t)json_integer_value(v);
    if (x < r.ax->min)
        return sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "expected an integer >= %" PRId64 " for %s '%s', got %" PRId64,
                          r.ax->min, r.what, r.ax->name, x);
    if (x > r.ax->max)
        return sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "expected an integer <= %" PRId64 " for %s '%s', got %" PRId64,
                          r.ax->max, r.what, r.ax->name, x);
    *out = x;
    return 0;
}

/* One scalar of the axis: an integer (booleans as 0/1) into *i or a borrowed string into *s. */
static int sweep_axis_scalar(const sweep_ctx *cx, sweep_axis_ref r, json_t *v, const char *path,
                             int64_t *i, const char **s)
{
    const family_axis *ax = r.ax;
    switch (ax->kind) {
    case FAMILY_AXIS_INT: return sweep_axis_int(cx, r, v, path, i);
    case FAMILY_AXIS_BOOL:
        if (!json_is_boolean(v))
            break;
        *i = json_is_true(v) ? 1 : 0;
        return 0;
    case FAMILY_AXIS_STR:
        if (!json_is_string(v))
            break;
        *s = json_string_value(v);
        if (ax->choices && !sweep_in_list(ax->choices, *s)) {
            char list[SWEEP_LIST_SIZE];
            return sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                              "expected one of %s for %s '%s', got '%s'",
                              sweep_join_list(list, sizeof list, ax->choices), r.what, ax->name,
                              *s);
        }
        return 0;
    }
    return sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE, "expected %s for %s '%s', got %s",
                      sweep_kind_text(ax->kind), r.what, ax->name, sweep_json_kind(v));
}

static int sweep_axis_alloc(const sweep_ctx *cx, sweep_axis *out, size_t n)
{
    if (out->is_str)
        out->strs = calloc(n, sizeof *out->strs);
    else
        out->ints = calloc(n, sizeof *out->ints);
    if (!out->strs && !out->ints)
        return sweep_nomem(cx);
    return 0;
}

/* Appends one scalar; a value already in the axis is an error. */
static int sweep_axis_push(const sweep_ctx *cx, sweep_axis_ref r, sweep_axis *out, json_t *v,
                           const char *path)
{
    int64_t x = 0;
    const char *s = NULL;
    if (sweep_axis_scalar(cx, r, v, path, &x, &s) != 0)
        return -1;
    for (size_t j = 0; j < out->n; j++) {
        if (out->is_str ? strcmp(out->strs[j], s) == 0 : out->ints[j] == x) {
            if (out->is_str)
                return sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                                  "duplicate value '%s' in axis '%s'", s, r.ax->name);
            return sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                              "duplicate value %" PRId64 " in axis '%s'", x, r.ax->name);
        }
    }
    if (out->is_str) {
        if (!(out->strs[out->n] = sweep_strdup(cx, s)))
            return -1;
    } else {
        out->ints[out->n] = x;
    }
    out->n++;
    return 0;
}

static int sweep_axis_array(const sweep_ctx *cx, sweep_axis_ref r, json_t *v, const char *path,
                            sweep_axis *out)
{
    size_t n = json_array_size(v);
    if (n == 0)
        return sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE, "axis '%s' is empty",
                          r.ax->name);
    if (sweep_axis_alloc(cx, out, n) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char p[SWEEP_PATH_SIZE];
        if (sweep_axis_push(cx, r, out, json_array_get(v, i), sweep_path_index(p, path, i)) != 0)
            return -1;
    }
    return 0;
}

/* The integer bounds of a {"range"|"pow2": [...]} generator: n_min..n_max elements, each an
 * integer of the axis except the step (index 2), which must be >= 1. */
static int sweep_gen_bounds(const sweep_ctx *cx, sweep_axis_ref r, json_t *arr, const char *path,
                            size_t n_min, size_t n_max, int64_t *vals)
{
    size_t n = json_array_size(arr);
    const char *form = n_max == 3 ? "[lo, hi] or [lo, hi, step]" : "[lo, hi]";
    if (!json_is_array(arr))
        return sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE, "expected %s, got %s", form,
                          sweep_json_kind(arr));
    if (n < n_min || n > n_max)
        return sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "expected %s, got an array of %zu elements", form, n);
    for (size_t i = 0; i < n; i++) {
        char p[SWEEP_PATH_SIZE];
        json_t *e = json_array_get(arr, i);
        sweep_path_index(p, path, i);
        if (i < 2) {
            if (sweep_axis_int(cx, r, e, p, &vals[i]) != 0)
                return -1;
        } else if (!json_is_integer(e) || json_integer_value(e) < 1) {
            if (!json_is_integer(e))
                return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                                  "expected an integer step, got %s", sweep_json_kind(e));
            return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                              "expected a step >= 1, got %" PRId64,
                              (int64_t)json_integer_value(e));
        } else {
            vals[i] = (int64_t)json_integer_value(e);
        }
    }
    return 0;
}

/* The values of a generator whose bounds were checked: lo <= hi, step >= 1, lo >= 1 for pow2. */
static int sweep_gen_fill(const sweep_ctx *cx, sweep_axis *out, int64_t lo, int64_t hi,
                          int64_t step, int pow2, uint64_t count)
{
    if (pow2)
        for (int64_t x = lo; x <= hi / 2; x *= 2)
            count++; /* x <= hi / 2 keeps 2x <= hi: no overflow */
    if (sweep_axis_alloc(cx, out, (size_t)count) != 0)
        return -1;
    for (uint64_t i = 0; i < count; i++)
        out->ints[i] = pow2 ? lo << i : (int64_t)((uint64_t)lo + i * (uint64_t)step);
    out->n = (size_t)count;
    return 0;
}

static int sweep_is_pow2(int64_t x) { return x >= 1 && (x & (x - 1)) == 0; }

/* {"range": [lo, hi(, step)]} or {"pow2": [lo, hi]}. */
static int sweep_axis_gen(const sweep_ctx *cx, sweep_axis_ref r, json_t *v, const char *path,
                          sweep_axis *out)
{
    char p[SWEEP_PATH_SIZE], list[SWEEP_LIST_SIZE];
    if (r.ax->kind != FAMILY_AXIS_INT)
        return sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "expected %s or an array of them for %s '%s', got an object",
                          sweep_kind_text(r.ax->kind), r.what, r.ax->name);
    if (sweep_check_keys(cx, v, path, sweep_gen_keys) != 0)
        return -1;
    if (json_object_size(v) != 1)
        return sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "expected an object with exactly one of: %s",
                          sweep_join_list(list, sizeof list, sweep_gen_keys));
    int pow2 = json_object_get(v, "pow2") != NULL;
    const char *key = pow2 ? "pow2" : "range";
    int64_t b[3] = {0, 0, 1};
    sweep_path_key(p, path, key);
    if (sweep_gen_bounds(cx, r, json_object_get(v, key), p, 2, pow2 ? 2 : 3, b) != 0)
        return -1;
    if (pow2 && !sweep_is_pow2(b[0])) {
        char lo[SWEEP_PATH_SIZE];
        return sweep_fail(cx, TUNE_ERR_INVALID, sweep_path_index(lo, p, 0), JSONLOC_VALUE,
                          "expected a power of two as the first bound of pow2, got %" PRId64,
                          b[0]);
    }
    if (b[0] > b[1])
        return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "%s [%" PRId64 ", %" PRId64 "] of axis '%s' is empty (lo > hi)", key,
                          b[0], b[1], r.ax->name);
    uint64_t count = pow2 ? 1 : ((uint64_t)b[1] - (uint64_t)b[0]) / (uint64_t)b[2] + 1;
    if (count > SWEEP_MAX_AXIS_VALUES)
        return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "range of axis '%s' has %" PRIu64 " values (at most %d)", r.ax->name,
                          count, SWEEP_MAX_AXIS_VALUES);
    return sweep_gen_fill(cx, out, b[0], b[1], b[2], pow2, count);
}

/* VALUES of one axis (see sweep.h) into out, which takes a copy of the axis name. */
static int sweep_parse_axis(const sweep_ctx *cx, sweep_axis_ref r, json_t *v, const char *path,
                            sweep_axis *out)
{
    out->is_str = r.ax->kind == FAMILY_AXIS_STR;
    if (!(out->name = sweep_strdup(cx, r.ax->name)))
        return -1;
    if (json_is_array(v))
        return sweep_axis_array(cx, r, v, path, out);
    if (json_is_object(v))
        return sweep_axis_gen(cx, r, v, path, out);
    if (sweep_axis_alloc(cx, out, 1) != 0)
        return -1;
    return sweep_axis_push(cx, r, out, v, path);
}

/* The family's default (JSON text) for an axis the sweep leaves out. */
static int sweep_default_axis(const sweep_ctx *cx, sweep_axis_ref r, sweep_axis *out)
{
    json_error_t jerr;
    json_t *v = json_loads(r.ax->dflt, JSON_DECODE_ANY, &jerr);
    if (!v) {
        tune_error_set(cx->err, TUNE_ERR_INVALID, cx->label,
                       "internal: default '%s' of %s '%s' is not JSON: %s", r.ax->dflt, r.what,
                       r.ax->name, jerr.text);
        return -1;
    }
    sweep_ctx dcx = {r.ax->dflt, cx->label, cx->err};
    int rc = sweep_parse_axis(&dcx, r, v, "$", out);
    json_decref(v);
    return rc;
}

const family_axis *sweep_find_axis(const family_axis *axes, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(axes[i].name, name) == 0)
            return &axes[i];
    return NULL;
}

/* "problem" or "params": every key must be one of axes; every axis gets values (given or
 * default). unknown_fmt formats the unknown-key message from the key, the owner and the list. */
typedef struct {
    const char *key;   /* "problem" or "params" */
    const char *what;  /* "problem axis" or "parameter" */
    const char *owner; /* "op gather_inner_bmv" or "family gather_matmul" */
} sweep_axes_kind;

static int sweep_parse_axes(const sweep_ctx *cx, json_t *root, sweep_axes_kind k,
                            const family_axis *axes, size_t n, sweep_axis **out, size_t *n_out)
{
    char path[SWEEP_PATH_SIZE], p[SWEEP_PATH_SIZE], list[SWEEP_LIST_SIZE];
    json_t *obj = json_object_get(root, k.key);
    sweep_path_key(path, "$", k.key);
    if (obj && sweep_expect_object(cx, obj, path) != 0)
        return -1;
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        if (!sweep_find_axis(axes, n, key))
            return sweep_fail(cx, TUNE_ERR_INVALID, sweep_path_key(p, path, key), JSONLOC_KEY,
                              "unknown %s '%s' for %s (expected one of: %s)", k.what, key,
                              k.owner,
                              sweep_join_names(list, sizeof list, axes, sizeof axes[0], n));
    }
    if (!(*out = calloc(n ? n : 1, sizeof **out)))
        return sweep_nomem(cx);
    *n_out = n;
    for (size_t i = 0; i < n; i++) {
        sweep_axis_ref r = {&axes[i], k.what};
        json_t *given = obj ? json_object_get(obj, axes[i].name) : NULL;
        int rc;
        if (given)
            rc = sweep_parse_axis(cx, r, given, sweep_path_key(p, path, axes[i].name), &(*out)[i]);
        else if (axes[i].dflt)
            rc = sweep_default_axis(cx, r, &(*out)[i]);
        else
            rc = sweep_fail(cx, TUNE_ERR_INVALID, obj ? path : "$", JSONLOC_VALUE,
                            "missing required %s '%s' for %s", k.what, axes[i].name, k.owner);
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* ---- top-level fields ---- */

static int sweep_name_ok(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++) {
        char c = *s;
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '.' || c == '-';
        if (!ok)
            return 0;
    }
    return 1;
}

static int sweep_parse_ident(const sweep_ctx *cx, json_t *root, sweep *sw)
{
    if (sweep_get_string(cx, root, "name", 1, &sw->name) != 0)
        return -1;
    if (!sweep_name_ok(sw->name))
        return sweep_fail(cx, TUNE_ERR_INVALID, "$.name", JSONLOC_VALUE,
                          "expected a name matching [A-Za-z0-9_.-]+, got '%s'", sw->name);
    return sweep_get_string(cx, root, "description", 0, &sw->description);
}

static int sweep_parse_family(const sweep_ctx *cx, json_t *root, sweep *sw)
{
    char list[SWEEP_LIST_SIZE];
    if (sweep_get_string(cx, root, "family", 1, &sw->family_name) != 0)
        return -1;
    if (!(sw->family = family_find(sw->family_name))) {
        const tune_family *const *all = family_all();
        const char *names[64];
        size_t n = 0;
        for (; all[n] && n < 64; n++)
            names[n] = all[n]->name;
        sweep_join_names(list, sizeof list, names, sizeof names[0], n);
        return sweep_fail(cx, TUNE_ERR_INVALID, "$.family", JSONLOC_VALUE,
                          "unknown family '%s' (expected one of: %s)", sw->family_name, list);
    }
    if (sweep_get_string(cx, root, "op", 1, &sw->op) != 0)
        return -1;
    const tune_family *f = sw->family;
    if (!(sw->fop = family_find_op(f, sw->op)))
        return sweep_fail(cx, TUNE_ERR_INVALID, "$.op", JSONLOC_VALUE,
                          "unknown op '%s' for family %s (expected one of: %s)", sw->op, f->name,
                          sweep_join_names(list, sizeof list, f->ops, sizeof f->ops[0], f->n_ops));
    return 0;
}

static int sweep_parse_problem_params(const sweep_ctx *cx, json_t *root, sweep *sw)
{
    char owner[SWEEP_PATH_SIZE];
    snprintf(owner, sizeof owner, "op %s", sw->op);
    sweep_axes_kind prob = {"problem", "problem axis", owner};
    if (sweep_parse_axes(cx, root, prob, sw->fop->axes, sw->fop->n_axes, &sw->problem,
                         &sw->n_problem) != 0)
        return -1;
    snprintf(owner, sizeof owner, "family %s", sw->family->name);
    sweep_axes_kind par = {"params", "parameter", owner};
    return sweep_parse_axes(cx, root, par, sw->family->params, sw->family->n_params, &sw->params,
                            &sw->n_params);
}

static int sweep_parse_methods(const sweep_ctx *cx, json_t *root, sweep *sw)
{
    char p[SWEEP_PATH_SIZE], list[SWEEP_LIST_SIZE];
    const tune_family *f = sw->family;
    json_t *v = json_object_get(root, "methods");
    if (!v)
        return sweep_fail(cx, TUNE_ERR_INVALID, "$", JSONLOC_VALUE,
                          "missing required key 'methods'");
    if (!json_is_array(v) || json_array_size(v) == 0)
        return sweep_fail(cx, TUNE_ERR_INVALID, "$.methods", JSONLOC_VALUE,
                          "expected a non-empty array of methods, got %s",
                          json_is_array(v) ? "an empty array" : sweep_json_kind(v));
    size_t n = json_array_size(v);
    if (!(sw->methods = calloc(n, sizeof *sw->methods)))
        return sweep_nomem(cx);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(v, i);
        sweep_path_index(p, "$.methods", i);
        if (!json_is_string(e))
            return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE, "expected a string, got %s",
                              sweep_json_kind(e));
        const char *m = json_string_value(e);
        if (!family_find_method(f, m))
            return sweep_fail(
                cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                "unknown method '%s' for family %s (expected one of: %s)", m, f->name,
                sweep_join_names(list, sizeof list, f->methods, sizeof f->methods[0],
                                 f->n_methods));
        for (size_t j = 0; j < sw->n_methods; j++)
            if (strcmp(sw->methods[j], m) == 0)
                return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                                  "duplicate method '%s'", m);
        if (!(sw->methods[sw->n_methods] = sweep_strdup(cx, m)))
            return -1;
        sw->n_methods++;
    }
    return 0;
}

/* ---- expressions ---- */

static int sweep_has_dsize(const sweep *sw)
{
    const char *axis = sw->family->dtype_axis;
    return axis && sweep_find_axis(sw->fop->axes, sw->fop->n_axes, axis) != NULL;
}

/* Names an expression may read, in order: problem axes, then (constraints only) parameters,
 * then dsize, op, method. Fills up to max borrowed names; returns the count. */
static size_t sweep_expr_scope(const sweep *sw, int model, const char **names, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < sw->fop->n_axes && n < max; i++)
        names[n++] = sw->fop->axes[i].name;
    for (size_t i = 0; !model && i < sw->family->n_params && n < max; i++)
        names[n++] = sw->family->params[i].name;
    if (sweep_has_dsize(sw) && n < max)
        names[n++] = "dsize";
    if (!model && n + 2 <= max) {
        names[n++] = "op";
        names[n++] = "method";
    }
    return n;
}

/* Every name e reads must be in scope. what names the field ("skip_if", "bytes"). */
static int sweep_check_names(const sweep_ctx *cx, const sweep *sw, const expr *e, int model,
                             const char *what, const char *path)
{
    const char *used[SWEEP_MAX_EXPR_NAMES], *scope[TUNE_MAX_AXES + 8];
    size_t n_used = expr_names(e, used, SWEEP_MAX_EXPR_NAMES);
    size_t n_scope = sweep_expr_scope(sw, model, scope, sizeof scope / sizeof scope[0]);
    if (n_used > SWEEP_MAX_EXPR_NAMES)
        n_used = SWEEP_MAX_EXPR_NAMES;
    for (size_t i = 0; i < n_used; i++) {
        size_t j = 0;
        while (j < n_scope && strcmp(scope[j], used[i]) != 0)
            j++;
        if (j < n_scope)
            continue;
        char list[SWEEP_LIST_SIZE];
        sweep_join_names(list, sizeof list, scope, sizeof scope[0], n_scope);
        if (model && (sweep_find_axis(sw->family->params, sw->family->n_params, used[i]) ||
                      strcmp(used[i], "op") == 0 || strcmp(used[i], "method") == 0))
            return sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                              "%s may read only problem axes and dsize, not '%s' (expected one "
                              "of: %s)",
                              what, used[i], list);
        return sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "unknown name '%s' in %s (expected one of: %s)", used[i], what, list);
    }
    return 0;
}

/* New expression from the string at path, checked against the sweep's names. */
static expr *sweep_parse_expr(const sweep_ctx *cx, const sweep *sw, const char *src, int model,
                              const char *what, const char *path)
{
    tune_error e = {0};
    expr *x = expr_parse(src, &e);
    if (!x) {
        sweep_fail(cx, e.code ? e.code : TUNE_ERR_PARSE, path, JSONLOC_VALUE,
                   "cannot parse %s \"%s\": %s%s%s", what, src, e.where, e.where[0] ? ": " : "",
                   e.message);
        return NULL;
    }
    if (sweep_check_names(cx, sw, x, model, what, path) != 0) {
        expr_free(x);
        return NULL;
    }
    return x;
}

static int sweep_add_skip(const sweep_ctx *cx, sweep *sw, json_t *e, const char *path)
{
    if (!json_is_string(e))
        return sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE, "expected a string, got %s",
                          sweep_json_kind(e));
    const char *src = json_string_value(e);
    expr *x = sweep_parse_expr(cx, sw, src, 0, "skip_if", path);
    if (!x)
        return -1;
    sw->skip_if[sw->n_skip_if] = x;
    if (!(sw->skip_if_src[sw->n_skip_if++] = sweep_strdup(cx, src)))
        return -1;
    return 0;
}

static int sweep_parse_skip_if(const sweep_ctx *cx, json_t *root, sweep *sw)
{
    json_t *v = json_object_get(root, "skip_if");
    if (!v)
        return 0;
    if (!json_is_string(v) && !json_is_array(v))
        return sweep_fail(cx, TUNE_ERR_INVALID, "$.skip_if", JSONLOC_VALUE,
                          "expected a string or an array of strings, got %s", sweep_json_kind(v));
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    sw->skip_if = calloc(n ? n : 1, sizeof *sw->skip_if);
    sw->skip_if_src = calloc(n ? n : 1, sizeof *sw->skip_if_src);
    if (!sw->skip_if || !sw->skip_if_src)
        return sweep_nomem(cx);
    if (json_is_string(v))
        return sweep_add_skip(cx, sw, v, "$.skip_if");
    for (size_t i = 0; i < n; i++) {
        char p[SWEEP_PATH_SIZE];
        if (sweep_add_skip(cx, sw, json_array_get(v, i), sweep_path_index(p, "$.skip_if", i)) != 0)
            return -1;
    }
    return 0;
}

/* "bytes" or "flops": the sweep's expression or the op's default model. */
static int sweep_parse_model(const sweep_ctx *cx, json_t *root, sweep *sw, const char *key,
                             const char *dflt, expr **out, char **out_src)
{
    char path[SWEEP_PATH_SIZE];
    json_t *v = json_object_get(root, key);
    sweep_path_key(path, "$", key);
    if (v && !json_is_string(v))
        return sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE, "expected a string, got %s",
                          sweep_json_kind(v));
    if (v) {
        *out = sweep_parse_expr(cx, sw, json_string_value(v), 1, key, path);
    } else {
        tune_error e = {0};
        if (!(*out = expr_parse(dflt, &e)))
            tune_error_set(cx->err, TUNE_ERR_INVALID, cx->label,
                           "internal: default %s model \"%s\" of op %s: %s: %s", key, dflt,
                           sw->op, e.where, e.message);
    }
    if (!*out)
        return -1;
    *out_src = sweep_strdup(cx, v ? json_string_value(v) : dflt);
    return *out_src ? 0 : -1;
}

/* ---- entry points ---- */

static int sweep_parse_root(const sweep_ctx *cx, json_t *root, sweep *sw)
{
    if (sweep_expect_object(cx, root, "$") != 0 ||
        sweep_check_keys(cx, root, "$", sweep_top_keys) != 0 ||
        sweep_parse_ident(cx, root, sw) != 0 || sweep_parse_family(cx, root, sw) != 0 ||
        sweep_parse_problem_params(cx, root, sw) != 0 || sweep_parse_methods(cx, root, sw) != 0 ||
        sweep_parse_skip_if(cx, root, sw) != 0 ||
        sweep_parse_model(cx, root, sw, "bytes", sw->fop->bytes, &sw->bytes, &sw->bytes_src) != 0 ||
        sweep_parse_model(cx, root, sw, "flops", sw->fop->flops, &sw->flops, &sw->flops_src) != 0 ||
        sweep_parse_timing(cx, root, sw) != 0)
        return -1;
    return sweep_parse_report(cx, root, sw);
}

sweep *sweep_parse(const char *text, const char *label, tune_error *err)
{
    sweep_ctx cx = {text, label ? label : "<sweep>", err};
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    if (!root) {
        char where[sizeof(((tune_error *)0)->where)];
        snprintf(where, sizeof where, "%s:%d:%d", cx.label, jerr.line, jerr.column);
        tune_error_set(err, TUNE_ERR_PARSE, where, "%s", jerr.text);
        return NULL;
    }
    sweep *sw = calloc(1, sizeof *sw);
    int rc = sw ? 0 : sweep_nomem(&cx);
    if (rc == 0 && !(sw->file = sweep_strdup(&cx, cx.label)))
        rc = -1;
    if (rc == 0)
        rc = sweep_parse_root(&cx, root, sw);
    json_decref(root);
    if (rc != 0) {
        sweep_free(sw);
        return NULL;
    }
    return sw;
}

sweep *sweep_load(const char *path, tune_error *err)
{
    char *text = tune_read_file(path, NULL, err);
    if (!text)
        return NULL;
    sweep *sw = sweep_parse(text, path, err);
    free(text);
    return sw;
}

static void sweep_free_strs(char **s, size_t n)
{
    for (size_t i = 0; s && i < n; i++)
        free(s[i]);
    free(s);
}

static void sweep_free_axes(sweep_axis *a, size_t n)
{
    for (size_t i = 0; a && i < n; i++) {
        free(a[i].name);
        free(a[i].ints);
        sweep_free_strs(a[i].strs, a[i].n);
    }
    free(a);
}

void sweep_free(sweep *sw)
{
    if (!sw)
        return;
    free(sw->file);
    free(sw->name);
    free(sw->description);
    free(sw->family_name);
    free(sw->op);
    sweep_free_axes(sw->problem, sw->n_problem);
    sweep_free_axes(sw->params, sw->n_params);
    sweep_free_strs(sw->methods, sw->n_methods);
    for (size_t i = 0; sw->skip_if && i < sw->n_skip_if; i++)
        expr_free(sw->skip_if[i]);
    free(sw->skip_if);
    sweep_free_strs(sw->skip_if_src, sw->n_skip_if);
    expr_free(sw->bytes);
    free(sw->bytes_src);
    expr_free(sw->flops);
    free(sw->flops_src);
    sweep_free_strs(sw->report_rows, sw->n_report_rows);
    sweep_free_strs(sw->report_cols, sw->n_report_cols);
    free(sw);
}
