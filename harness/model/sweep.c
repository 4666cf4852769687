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

#include "core/infile.h"
#include "core/jsonloc.h"
#include "model/kernel_decl.h"
#include "model/sweep_impl.h"


static const char *const sweep_top_keys[] = {"name",    "description", "family", "op",
                                             "problem", "params",      "methods", "skip_if",
                                             "bytes",   "flops",       "timing",  "report",
                                             "kernel",  "search",      "family_rules",
                                             NULL};

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

int sweep_in_list(const char *const *list, const char *s)
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

/* ---- top-level fields ---- */

/* A single safe path component: the name becomes a folder under the results root. */
static int sweep_name_ok(const char *s)
{
    if (!*s || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
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
                          "expected a name matching [A-Za-z0-9_.-]+ other than '.' and '..' (it "
                          "names a folder of the results), got '%s'",
                          sw->name);
    return sweep_get_string(cx, root, "description", 0, &sw->description);
}

static int sweep_parse_family(const sweep_ctx *cx, json_t *root, sweep *sw)
{
    char list[SWEEP_LIST_SIZE];
    if (sweep_get_string(cx, root, "family", 1, &sw->family_name) != 0)
        return -1;
    if (strcmp(sw->family_name, KDECL_FAMILY) == 0)
        return sweep_parse_declared(cx, root, sw);
    if (json_object_get(root, "kernel"))
        return sweep_fail(cx, TUNE_ERR_INVALID, "$.kernel", JSONLOC_KEY,
                          "a \"kernel\" section declares a kernel of its own: it needs "
                          "\"family\": \"%s\", not \"%s\"",
                          KDECL_FAMILY, sw->family_name);
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

static int sweep_parse_methods(const sweep_ctx *cx, json_t *root, sweep *sw)
{
    char p[SWEEP_PATH_SIZE], list[SWEEP_LIST_SIZE];
    const tune_family *f = sw->family;
    json_t *v = json_object_get(root, "methods");
    if (!v && sw->declared)
        return sweep_default_declared_methods(cx, sw);
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

/* The first name e reads that is not in scope, or NULL. */
static const char *sweep_unknown_name(const expr *e, const char *const *scope, size_t n_scope)
{
    const char *used[SWEEP_MAX_EXPR_NAMES];
    size_t n_used = expr_names(e, used, SWEEP_MAX_EXPR_NAMES);
    for (size_t i = 0; i < n_used && i < SWEEP_MAX_EXPR_NAMES; i++) {
        size_t j = 0;
        while (j < n_scope && strcmp(scope[j], used[i]) != 0)
            j++;
        if (j == n_scope)
            return used[i];
    }
    return NULL;
}

/* Every name e reads must be in scope. what names the field ("skip_if", "bytes"). */
static int sweep_check_names(const sweep_ctx *cx, const sweep *sw, const expr *e, int model,
                             const char *what, const char *path)
{
    const char *scope[TUNE_MAX_AXES + 8];
    size_t n_scope = sweep_expr_scope(sw, model, scope, sizeof scope / sizeof scope[0]);
    const char *name = sweep_unknown_name(e, scope, n_scope);
    if (!name)
        return 0;
    char list[SWEEP_LIST_SIZE];
    sweep_join_names(list, sizeof list, scope, sizeof scope[0], n_scope);
    if (model && (sweep_find_axis(sw->family->params, sw->family->n_params, name) ||
                  strcmp(name, "op") == 0 || strcmp(name, "method") == 0))
        return sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "%s may read only problem axes and dsize, not '%s' (expected one "
                          "of: %s)",
                          what, name, list);
    return sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                      "unknown name '%s' in %s (expected one of: %s)", name, what, list);
}

/* New expression from the string at path, or NULL with the parse error located at path. */
static expr *sweep_parse_expr_text(const sweep_ctx *cx, const char *src, const char *what,
                                   const char *path)
{
    tune_error e = {0};
    expr *x = expr_parse(src, &e);
    if (!x)
        sweep_fail(cx, e.code ? e.code : TUNE_ERR_PARSE, path, JSONLOC_VALUE,
                   "cannot parse %s \"%s\": %s%s%s", what, src, e.where, e.where[0] ? ": " : "",
                   e.message);
    return x;
}

/* New expression from the string at path, checked against the sweep's names. */
static expr *sweep_parse_expr(const sweep_ctx *cx, const sweep *sw, const char *src, int model,
                              const char *what, const char *path)
{
    expr *x = sweep_parse_expr_text(cx, src, what, path);
    if (x && sweep_check_names(cx, sw, x, model, what, path) != 0) {
        expr_free(x);
        return NULL;
    }
    return x;
}

expr *sweep_parse_expr_in(const sweep_ctx *cx, const char *src, const char *const *scope,
                          size_t n_scope, const char *what, const char *path)
{
    expr *x = sweep_parse_expr_text(cx, src, what, path);
    const char *name = x ? sweep_unknown_name(x, scope, n_scope) : NULL;
    if (name) {
        char list[SWEEP_LIST_SIZE];
        sweep_join_names(list, sizeof list, scope, sizeof scope[0], n_scope);
        sweep_fail(cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                   "unknown name '%s' in %s (expected one of: %s)", name, what, list);
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

/* "family_rules": a boolean, true when absent. */
static int sweep_parse_family_rules(const sweep_ctx *cx, json_t *root, sweep *sw)
{
    json_t *v = json_object_get(root, "family_rules");
    sw->family_rules = 1;
    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return sweep_fail(cx, TUNE_ERR_INVALID, "$.family_rules", JSONLOC_VALUE,
                          "expected true or false, got %s", sweep_json_kind(v));
    sw->family_rules = json_is_true(v);
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
        (sw->declared && sweep_check_declared(cx, root, sw) != 0) ||
        sweep_parse_skip_if(cx, root, sw) != 0 || sweep_parse_family_rules(cx, root, sw) != 0 ||
        sweep_parse_model(cx, root, sw, "bytes", sw->fop->bytes, &sw->bytes, &sw->bytes_src) != 0 ||
        sweep_parse_model(cx, root, sw, "flops", sw->fop->flops, &sw->flops, &sw->flops_src) != 0 ||
        sweep_parse_timing(cx, root, sw) != 0 || sweep_parse_report(cx, root, sw) != 0)
        return -1;
    if (sweep_parse_search(cx, root, sw) != 0)
        return -1;
    return sw->declared ? sweep_check_declared_params(cx, sw) : 0;
}

/* A key given twice in one object is an error at the second one: Jansson would keep the last
 * silently, and the first would look like the one in force. */
static int sweep_check_duplicates(const sweep_ctx *cx)
{
    char path[SWEEP_PATH_SIZE], where[sizeof(((tune_error *)0)->where)];
    int line, col, first_line, first_col;
    int rc = jsonloc_find_duplicate(cx->text, path, sizeof path, &line, &col, &first_line,
                                    &first_col);
    if (rc == 0)
        return 0;
    if (rc < 0)
        return sweep_nomem(cx); /* Jansson parsed the text: only memory can fail */
    snprintf(where, sizeof where, "%s:%d:%d: %s", cx->label, line, col, path);
    tune_error_set(cx->err, TUNE_ERR_INVALID, where,
                   "duplicate key (first given at %d:%d); each key may appear once", first_line,
                   first_col);
    return -1;
}

/* check_files: the files a declared kernel names must be readable (a sweep file being loaded;
 * not the copy of one that meta.json keeps). */
static sweep *sweep_parse_text(const char *text, const char *label, int check_files,
                               tune_error *err)
{
    sweep_ctx cx = {text, label ? label : "<sweep>", err, check_files};
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    if (!root) {
        char where[sizeof(((tune_error *)0)->where)];
        snprintf(where, sizeof where, "%s:%d:%d", cx.label, jerr.line, jerr.column);
        tune_error_set(err, TUNE_ERR_PARSE, where, "%s", jerr.text);
        return NULL;
    }
    if (sweep_check_duplicates(&cx) != 0) {
        json_decref(root);
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

sweep *sweep_parse(const char *text, const char *label, tune_error *err)
{
    return sweep_parse_text(text, label, 0, err);
}

sweep *sweep_load(const char *path, tune_error *err)
{
    char *text = NULL;
    size_t len = 0;
    if (infile_read_text(path, SWEEP_MAX_FILE_BYTES, &text, &len, err) != TUNE_OK)
        return NULL; /* a NUL byte too, at its line:column */
    sweep *sw = sweep_parse_text(text, path, 1, err);
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
    kdecl_family_free(sw->declared);
    sweep_free_strs(sw->search.warm_start, sw->search.n_warm_start);
    for (size_t i = 0; sw->search.features && i < sw->search.n_features; i++)
        expr_free(sw->search.features[i]);
    free(sw->search.features);
    sweep_free_strs(sw->search.feature_names, sw->search.n_features);
    sweep_free_strs(sw->search.feature_src, sw->search.n_features);
    free(sw);
}
