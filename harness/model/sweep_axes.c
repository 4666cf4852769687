/* sweep_axes.c - the "problem" and "params" objects of a sweep file: every axis's values (a
 * scalar, an array, a range or pow2 generator, or the family's default), checked against the
 * family's description of the axis. */
#include "model/sweep_impl.h"

static const char *const sweep_gen_keys[] = {"range", "pow2", NULL};

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
    sweep_ctx dcx = {r.ax->dflt, cx->label, cx->err, cx->check_files};
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

int sweep_parse_problem_params(const sweep_ctx *cx, json_t *root, sweep *sw)
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

