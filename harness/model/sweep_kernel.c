/* sweep_kernel.c - the "kernel" section of a sweep file whose family is "kernel": a kernel
 * declared by the user (model/kernel_decl.h). Parsed into a kernel_decl; the family is then
 * built from it (sweep_declared_family): the op's axes are the sweep's problem keys, the
 * parameters its params keys, the methods the tuned kernel, the reference and the baselines. */
#include <float.h>
#include <unistd.h>
#include <math.h>

#include "core/infile.h"
#include "model/sweep_kernel_impl.h"

static const char *const kernel_keys[] = {"source",    "entry",     "defines", "include_dirs",
                                          "options",   "args",      "grid",    "block",
                                          "shared",    "reference", "check",   "baselines",
                                          "constants", "launches",  NULL};
static const char *const launch_keys[] = {"source", "entry", "defines", "grid", "block",
                                          "shared", "args",  NULL};
static const char *const reference_keys[] = {"source", "entry", "defines",    "grid", "block",
                                             "shared", "args",  "per_config", NULL};
static const char *const check_keys[] = {"outputs", "tolerance", "atol", "rtol", NULL};

int sweep_kd_ident_ok(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return 0;
    for (s++; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return 0;
    return 1;
}

/* Checks that every name e reads is a problem axis or (with_params) a parameter. */
static int kd_check_names(const sweep_kd_scope *sc, const expr *e, int with_params,
                          const char *path)
{
    const char *used[SWEEP_MAX_EXPR_NAMES];
    size_t n = expr_names(e, used, SWEEP_MAX_EXPR_NAMES);
    for (size_t i = 0; i < n && i < SWEEP_MAX_EXPR_NAMES; i++) {
        if (sweep_find_axis(sc->axes, sc->n_axes, used[i]))
            continue;
        if (sweep_find_axis(sc->params, sc->n_params, used[i])) {
            if (with_params)
                continue;
            return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                              "'%s' is a parameter: the reference and the baselines run once "
                              "per shape and may read only problem axes (a reference with "
                              "\"per_config\": true may: it then runs per configuration)",
                              used[i]);
        }
        char list[SWEEP_LIST_SIZE];
        sweep_join_names(list, sizeof list, sc->axes, sizeof sc->axes[0], sc->n_axes);
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "unknown name '%s' (expected a problem axis (%s)%s)", used[i], list,
                          with_params ? " or a parameter" : "");
    }
    return 0;
}

/* An expression: a JSON string, or an integer (a constant). */
expr *sweep_kd_expr(const sweep_kd_scope *sc, json_t *v, int with_params, const char *path)
{
    char text[64];
    const char *src = text;
    if (json_is_integer(v))
        snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_string(v))
        src = json_string_value(v);
    else {
        sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                   "expected an expression (a string such as \"n / 256\") or an integer, got %s",
                   sweep_json_kind(v));
        return NULL;
    }
    tune_error e = {0};
    expr *x = expr_parse(src, &e);
    if (!x) {
        sweep_fail(sc->cx, TUNE_ERR_PARSE, path, JSONLOC_VALUE, "cannot parse \"%s\": %s: %s",
                   src, e.where, e.message);
        return NULL;
    }
    if (kd_check_names(sc, x, with_params, path) != 0) {
        expr_free(x);
        return NULL;
    }
    return x;
}

/* A template "text {expr} text" into t. */
int sweep_kd_template(const sweep_kd_scope *sc, json_t *v, int with_params, const char *path,
                      kdecl_template *t)
{
    if (!json_is_string(v))
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "expected a string, got %s", sweep_json_kind(v));
    const char *s = json_string_value(v);
    size_t len = strlen(s), cap = len / 2 + 2;
    t->text = calloc(cap, sizeof *t->text);
    t->exprs = calloc(cap, sizeof *t->exprs);
    char *buf = malloc(len + 1);
    if (!t->text || !t->exprs || !buf) {
        free(buf);
        return sweep_nomem(sc->cx);
    }
    size_t bl = 0;
    for (size_t i = 0; i <= len; i++) {
        if (s[i] == '}' && s[i + 1] == '}') {
            buf[bl++] = '}';
            i++;
        } else if (s[i] == '{' && s[i + 1] == '{') {
            buf[bl++] = '{';
            i++;
        } else if (s[i] == '}') {
            free(buf);
            return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                              "unmatched '}' at offset %zu of \"%s\" (write }} for a brace)", i,
                              s);
        } else if (s[i] == '{' || s[i] == '\0') {
            buf[bl] = '\0';
            t->text[t->n] = strdup(buf);
            bl = 0;
            if (!t->text[t->n++]) {
                free(buf);
                return sweep_nomem(sc->cx);
            }
            if (s[i] == '\0')
                break;
            const char *end = strchr(s + i, '}');
            if (!end) {
                free(buf);
                return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                                  "unmatched '{' at offset %zu of \"%s\"", i, s);
            }
            json_t *piece = json_stringn(s + i + 1, (size_t)(end - s - i - 1));
            t->exprs[t->n - 1] = piece ? sweep_kd_expr(sc, piece, with_params, path) : NULL;
            json_decref(piece);
            if (!t->exprs[t->n - 1]) {
                free(buf);
                return piece ? -1 : sweep_nomem(sc->cx);
            }
            i = (size_t)(end - s);
        } else {
            buf[bl++] = s[i];
        }
    }
    free(buf);
    return 0;
}

/* A file the sweep names that cannot be read: named as written, with the sweep's folder. */
static int kd_unreadable(const sweep_kd_scope *sc, const char *path, const char *rel,
                         const char *what)
{
    int e = errno;
    const char *slash = strrchr(sc->cx->label, '/');
    int n = slash ? (int)(slash - sc->cx->label) : 1;
    return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                      "cannot read %s%s (relative to %.*s, the sweep file's folder): %s", what,
                      rel, n, slash ? sc->cx->label : ".", strerror(e));
}

/* x, an expression of a count or a launch dimension at path: when it reads no name (a constant),
 * an integer of at least `least`, never a string. 0, or -1 after the error (x stays the
 * caller's). */
int sweep_kd_number(const sweep_kd_scope *sc, expr *x, long long least, const char *what,
                    const char *path)
{
    const char *names[1];
    expr_value v;
    tune_error e = {0};
    if (!x || expr_names(x, names, 1) != 0 || expr_eval(x, NULL, NULL, &v, &e) != TUNE_OK)
        return 0; /* it reads the shape or a parameter: checked when a configuration is made */
    if (v.type == EXPR_STR)
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "expected %s (a number), got the string \"%s\"", what, v.s);
    double n = v.type == EXPR_INT ? (double)v.i : v.f;
    if (!(n >= (double)least) || (v.type == EXPR_FLOAT && n != (double)(long long)n))
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "expected %s, an integer >= %lld, got %g", what, least, n);
    return 0;
}

/* "grid" or "block": an expression or an array of 1-3 of them. */
static int kd_dims(const sweep_kd_scope *sc, json_t *obj, const char *key, int with_params,
                   const char *parent, expr **out, int *n_out)
{
    char p[SWEEP_PATH_SIZE], pi[SWEEP_PATH_SIZE];
    json_t *v = json_object_get(obj, key);
    sweep_path_key(p, parent, key);
    if (!v)
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, parent, JSONLOC_VALUE,
                          "missing required key '%s' (an expression or an array of 1 to 3)", key);
    if (!json_is_array(v)) {
        *n_out = 1;
        if (!(out[0] = sweep_kd_expr(sc, v, with_params, p)))
            return -1;
        return sweep_kd_number(sc, out[0], 1, "a launch dimension", p);
    }
    size_t n = json_array_size(v);
    if (n < 1 || n > 3)
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "expected 1 to 3 dimensions (x, y, z), got %zu", n);
    for (size_t i = 0; i < n; i++) {
        if (!(out[i] =
                  sweep_kd_expr(sc, json_array_get(v, i), with_params, sweep_path_index(pi, p, i))))
            return -1;
        if (sweep_kd_number(sc, out[i], 1, "a launch dimension", pi) != 0)
            return -1;
    }
    *n_out = (int)n;
    return 0;
}

/* A define's value is text, "{expr}" holes aside: "TILE": "tile" with tile a parameter or a
 * problem axis gives the macro the word tile, not its value, which compiles (if at all) to
 * something else than meant. Refused, with the spelling that was meant. */
static int kd_define_is_a_name(const sweep_kd_scope *sc, json_t *val, const char *path)
{
    const char *s = json_is_string(val) ? json_string_value(val) : "";
    int param = sweep_find_axis(sc->params, sc->n_params, s) != NULL;
    if (!param && !sweep_find_axis(sc->axes, sc->n_axes, s))
        return 0;
    return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                      "\"%s\" is the macro's text, the word %s, not the %s's value: write "
                      "\"{%s}\" for its value",
                      s, s, param ? "parameter" : "problem axis", s);
}

static int kd_defines(const sweep_kd_scope *sc, json_t *v, int with_params, const char *path,
                      kdecl_kernel *k)
{
    if (sweep_expect_object(sc->cx, v, path) != 0)
        return -1;
    size_t n = json_object_size(v);
    k->define_names = calloc(n + 1, sizeof *k->define_names);
    k->define_values = calloc(n + 1, sizeof *k->define_values);
    if (!k->define_names || !k->define_values)
        return sweep_nomem(sc->cx);
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val) {
        char p[SWEEP_PATH_SIZE];
        sweep_path_key(p, path, key);
        if (!sweep_kd_ident_ok(key))
            return sweep_fail(sc->cx, TUNE_ERR_INVALID, p, JSONLOC_KEY,
                              "expected a macro name [A-Za-z_][A-Za-z0-9_]*, got '%s'", key);
        if (kd_define_is_a_name(sc, val, p) != 0)
            return -1;
        json_t *str = json_is_integer(val) ? json_sprintf("%" JSON_INTEGER_FORMAT,
                                                          json_integer_value(val))
                                           : json_incref(val);
        int rc = sweep_kd_template(sc, str, with_params, p, &k->define_values[k->n_defines]);
        json_decref(str);
        if (!(k->define_names[k->n_defines++] = sweep_strdup(sc->cx, key)) || rc != 0)
            return -1;
    }
    return 0;
}

/* The index of the argument named name, -1 when none. */
static int kd_find_arg(const kernel_decl *d, const char *name)
{
    for (size_t i = 0; i < d->n_args; i++)
        if (strcmp(d->args[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* A kernel's "args" (v at path): the names of the declared arguments it receives, in its order. */
static int kd_kernel_args(const sweep_kd_scope *sc, const kernel_decl *d, json_t *v,
                          const char *path, kdecl_kernel *k)
{
    char pi[SWEEP_PATH_SIZE];
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > 64)
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "expected an array of 1 to 64 argument names (of \"args\" of the "
                          "kernel section), in the kernel's order");
    if (!(k->argv = calloc(json_array_size(v), sizeof *k->argv)))
        return sweep_nomem(sc->cx);
    for (size_t i = 0; i < json_array_size(v); i++) {
        json_t *n = json_array_get(v, i);
        int a = json_is_string(n) ? kd_find_arg(d, json_string_value(n)) : -1;
        if (a < 0)
            return sweep_fail(sc->cx, TUNE_ERR_INVALID, sweep_path_index(pi, path, i),
                              JSONLOC_VALUE, "expected the name of an argument of $.kernel.args");
        k->argv[k->argc++] = (size_t)a;
    }
    return 0;
}

/* The "source" of obj (at path) as an absolute path into *out (new), readable and a regular file;
 * dflt_source when obj has none. */
static int kd_source(const sweep_kd_scope *sc, const kernel_decl *d, json_t *obj, const char *path,
                     const char *dflt_source, char **out)
{
    char p[SWEEP_PATH_SIZE];
    json_t *src = json_object_get(obj, "source");
    if (src && !json_is_string(src))
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, sweep_path_key(p, path, "source"),
                          JSONLOC_VALUE, "expected a file name, got %s", sweep_json_kind(src));
    if (!src && !dflt_source)
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "missing required key 'source' (the .cu file, relative to the sweep "
                          "file)");
    char *source = *out = src ? kdecl_path(d, json_string_value(src)) : strdup(dflt_source);
    if (!source)
        return sweep_nomem(sc->cx);
    sweep_path_key(p, path, "source");
    if (src && sc->cx->check_files && access(source, R_OK) != 0)
        return kd_unreadable(sc, p, json_string_value(src), "");
    if (src && sc->cx->check_files && !infile_is_file(source))
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "expected a kernel source file, and %s (relative to the sweep "
                          "file's folder) is %s",
                          json_string_value(src),
                          infile_is_dir(source) ? "a folder" : "not a regular file");
    if (strlen(source) >= KDECL_MAX_PATH)
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "the path %s is too long", source);
    return 0;
}

/* A kernel to launch (the tuned one or one of its launches, the reference, a baseline): its own
 * source (default: dflt_source), entry, defines, launch geometry and arguments (default: all). */
static int kd_kernel(const sweep_kd_scope *sc, kernel_decl *d, json_t *obj, int with_params,
                     const char *path, const char *const *keys, const char *dflt_source,
                     kdecl_kernel *k)
{
    char p[SWEEP_PATH_SIZE];
    if (sweep_expect_object(sc->cx, obj, path) != 0 ||
        sweep_check_keys(sc->cx, obj, path, keys) != 0 ||
        kd_source(sc, d, obj, path, dflt_source, &k->source) != 0)
        return -1;
    json_t *entry = json_object_get(obj, "entry");
    if (!entry)
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "missing required key 'entry' (the kernel's name, e.g. "
                          "\"matmul<{tile}>\")");
    if (sweep_kd_template(sc, entry, with_params, sweep_path_key(p, path, "entry"), &k->entry) != 0)
        return -1;
    json_t *defs = json_object_get(obj, "defines");
    if (defs && kd_defines(sc, defs, with_params, sweep_path_key(p, path, "defines"), k) != 0)
        return -1;
    if (kd_dims(sc, obj, "grid", with_params, path, k->grid, &k->grid_dims) != 0 ||
        kd_dims(sc, obj, "block", with_params, path, k->block, &k->block_dims) != 0)
        return -1;
    json_t *sh = json_object_get(obj, "shared");
    json_t *zero = json_integer(0);
    k->shared = sweep_kd_expr(sc, sh ? sh : zero, with_params, sweep_path_key(p, path, "shared"));
    json_decref(zero);
    if (!k->shared)
        return -1;
    json_t *args = keys != kernel_keys ? json_object_get(obj, "args") : NULL;
    return args ? kd_kernel_args(sc, d, args, sweep_path_key(p, path, "args"), k) : 0;
}

/* The tuned method: the section's own entry, defines, grid, block and shared, or "launches",
 * the kernels of a sequence timed as one call (each with its own of those and its "args"). */
static int kd_main(const sweep_kd_scope *sc, kernel_decl *d, json_t *k)
{
    static const char *const own[] = {"entry", "defines", "grid", "block", "shared", NULL};
    char p[SWEEP_PATH_SIZE], pi[SWEEP_PATH_SIZE];
    json_t *v = json_object_get(k, "launches");
    if (!v)
        return kd_kernel(sc, d, k, 1, "$.kernel", kernel_keys, NULL, &d->main);
    for (size_t i = 0; own[i]; i++)
        if (json_object_get(k, own[i]))
            return sweep_fail(sc->cx, TUNE_ERR_INVALID, sweep_path_key(p, "$.kernel", own[i]),
                              JSONLOC_KEY,
                              "with \"launches\", each launch gives its own entry, defines, "
                              "grid, block and shared");
    sweep_path_key(p, "$.kernel", "launches");
    if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > KDECL_MAX_LAUNCHES)
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "expected an array of 1 to %d launches (each with entry, grid, block "
                          "and args)",
                          KDECL_MAX_LAUNCHES);
    char *top = NULL;
    if (kd_source(sc, d, k, "$.kernel", NULL, &top) != 0) {
        free(top);
        return -1;
    }
    size_t n = json_array_size(v);
    int rc = (d->after = calloc(n, sizeof *d->after)) ? 0 : sweep_nomem(sc->cx);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        kdecl_kernel *l = i == 0 ? &d->main : &d->after[d->n_after++];
        rc = kd_kernel(sc, d, json_array_get(v, i), 1, sweep_path_index(pi, p, i), launch_keys,
                       top, l);
    }
    free(top);
    return rc;
}

/* ---- reference, check, baselines ---- */

/* The default bound on the normalised error for outputs of type t. */
static double kd_default_tolerance(kdecl_type t)
{
    switch (t) {
    case KDECL_F64: return 1e-12;
    case KDECL_F32: return 1e-5;
    case KDECL_F16: return 2e-3;
    case KDECL_BF16: return 1.6e-2;
    default: return 0; /* integers: exact */
    }
}

static int kd_check(const sweep_kd_scope *sc, kernel_decl *d, json_t *v, const char *path)
{
    char p[SWEEP_PATH_SIZE], pi[SWEEP_PATH_SIZE];
    if (v && (sweep_expect_object(sc->cx, v, path) != 0 ||
              sweep_check_keys(sc->cx, v, path, check_keys) != 0))
        return -1;
    json_t *outs = v ? json_object_get(v, "outputs") : NULL;
    if (!(d->outputs = calloc(d->n_args + 1, sizeof *d->outputs)))
        return sweep_nomem(sc->cx);
    sweep_path_key(p, path, "outputs");
    if (outs && (!json_is_array(outs) || json_array_size(outs) == 0))
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "expected a non-empty array of output buffer names");
    for (size_t i = 0; outs && i < json_array_size(outs); i++) {
        json_t *o = json_array_get(outs, i);
        int a = json_is_string(o) ? kd_find_arg(d, json_string_value(o)) : -1;
        if (a < 0 || !d->args[a].is_buffer || d->args[a].role == KDECL_IN ||
            d->args[a].role == KDECL_SCRATCH)
            return sweep_fail(sc->cx, TUNE_ERR_INVALID, sweep_path_index(pi, p, i), JSONLOC_VALUE,
                              "expected the name of an \"out\" or \"inout\" buffer");
        for (size_t j = 0; j < d->n_outputs; j++)
            if (d->outputs[j] == (size_t)a)
                return sweep_fail(sc->cx, TUNE_ERR_INVALID, sweep_path_index(pi, p, i),
                                  JSONLOC_VALUE, "duplicate output '%s'", d->args[a].name);
        d->outputs[d->n_outputs++] = (size_t)a;
    }
    for (size_t a = 0; !outs && a < d->n_args; a++)
        if (d->args[a].is_buffer &&
            (d->args[a].role == KDECL_OUT || d->args[a].role == KDECL_INOUT))
            d->outputs[d->n_outputs++] = a;
    if (d->n_outputs == 0)
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, "$.kernel.args", JSONLOC_VALUE,
                          "no buffer has \"role\": \"out\" or \"inout\": nothing to check");
    d->tolerance = 1;
    for (size_t j = 0; j < d->n_outputs; j++) {
        double t = kd_default_tolerance(d->args[d->outputs[j]].type);
        d->tolerance = t < d->tolerance ? t : d->tolerance;
    }
    json_t *tol = v ? json_object_get(v, "tolerance") : NULL;
    json_t *atol = v ? json_object_get(v, "atol") : NULL, *rtol = v ? json_object_get(v, "rtol") : NULL;
    if (tol && (atol || rtol))
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "give either \"tolerance\" (normalised error) or \"atol\"/\"rtol\"");
    const char *keys[] = {"tolerance", "atol", "rtol"};
    json_t *vals[] = {tol, atol, rtol};
    double *dst[] = {&d->tolerance, &d->atol, &d->rtol};
    for (int i = 0; i < 3; i++) {
        if (!vals[i])
            continue;
        if (!json_is_number(vals[i]) || !(json_number_value(vals[i]) >= 0) ||
            !isfinite(json_number_value(vals[i])))
            return sweep_fail(sc->cx, TUNE_ERR_INVALID, sweep_path_key(p, path, keys[i]),
                              JSONLOC_VALUE, "expected a finite number >= 0");
        *dst[i] = json_number_value(vals[i]);
    }
    d->use_atol = atol || rtol;
    return 0;
}

/* "reference": a kernel, or {"npy": {output: file}} with one file per compared output. */
static int kd_reference(const sweep_kd_scope *sc, kernel_decl *d, json_t *v, const char *path)
{
    char p[SWEEP_PATH_SIZE], po[SWEEP_PATH_SIZE];
    if (!v)
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, "$.kernel", JSONLOC_VALUE,
                          "missing required key 'reference' (a kernel that computes the right "
                          "answer, or {\"npy\": {\"<output>\": \"file.npy\"}}): it is what "
                          "'invalid' means");
    json_t *npy = json_is_object(v) ? json_object_get(v, "npy") : NULL;
    if (!npy) {
        json_t *pc = json_object_get(v, "per_config");
        if (pc && !json_is_boolean(pc))
            return sweep_fail(sc->cx, TUNE_ERR_INVALID, sweep_path_key(p, path, "per_config"),
                              JSONLOC_VALUE, "expected true or false, got %s", sweep_json_kind(pc));
        d->ref_is_kernel = 1;
        d->ref_per_config = json_is_true(pc);
        return kd_kernel(sc, d, v, d->ref_per_config, path, reference_keys, d->main.source,
                         &d->ref);
    }
    static const char *const npy_keys[] = {"npy", NULL};
    sweep_path_key(p, path, "npy");
    if (sweep_check_keys(sc->cx, v, path, npy_keys) != 0 || sweep_expect_object(sc->cx, npy, p))
        return -1;
    if (!(d->ref_npy = calloc(d->n_outputs, sizeof *d->ref_npy)))
        return sweep_nomem(sc->cx);
    const char *key;
    json_t *file;
    json_object_foreach(npy, key, file) {
        size_t j = 0;
        while (j < d->n_outputs && strcmp(d->args[d->outputs[j]].name, key) != 0)
            j++;
        if (j == d->n_outputs)
            return sweep_fail(sc->cx, TUNE_ERR_INVALID, sweep_path_key(po, p, key), JSONLOC_KEY,
                              "'%s' is not a checked output", key);
        if (sweep_kd_template(sc, file, 0, sweep_path_key(po, p, key), &d->ref_npy[j]) != 0)
            return -1;
    }
    for (size_t j = 0; j < d->n_outputs; j++)
        if (!d->ref_npy[j].n)
            return sweep_fail(sc->cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                              "no file for output '%s'", d->args[d->outputs[j]].name);
    return 0;
}

static int kd_baselines(const sweep_kd_scope *sc, kernel_decl *d, json_t *v, const char *path)
{
    if (!v)
        return 0;
    if (sweep_expect_object(sc->cx, v, path) != 0)
        return -1;
    size_t n = json_object_size(v);
    d->baseline_names = calloc(n + 1, sizeof *d->baseline_names);
    d->baselines = calloc(n + 1, sizeof *d->baselines);
    if (!d->baseline_names || !d->baselines)
        return sweep_nomem(sc->cx);
    const char *key;
    json_t *b;
    json_object_foreach(v, key, b) {
        char p[SWEEP_PATH_SIZE];
        sweep_path_key(p, path, key);
        if (!sweep_kd_ident_ok(key) || strcmp(key, KDECL_TUNED) == 0 ||
            strcmp(key, KDECL_REFERENCE) == 0)
            return sweep_fail(sc->cx, TUNE_ERR_INVALID, p, JSONLOC_KEY,
                              "expected a method name [A-Za-z_][A-Za-z0-9_]* other than '%s' and "
                              "'%s', got '%s'",
                              KDECL_TUNED, KDECL_REFERENCE, key);
        if (!(d->baseline_names[d->n_baselines] = sweep_strdup(sc->cx, key)) ||
            kd_kernel(sc, d, b, 0, p, launch_keys, d->main.source,
                      &d->baselines[d->n_baselines++]) != 0)
            return -1;
    }
    return 0;
}

/* "include_dirs" and "options" into d->options, one per line. */
static int kd_options(const sweep_kd_scope *sc, kernel_decl *d, json_t *k)
{
    static const char *const keys[] = {"include_dirs", "options"};
    size_t cap = 1, used = 0;
    for (int i = 0; i < 2; i++) {
        json_t *v = json_object_get(k, keys[i]);
        char p[SWEEP_PATH_SIZE], pi[SWEEP_PATH_SIZE];
        sweep_path_key(p, "$.kernel", keys[i]);
        if (v && !json_is_array(v))
            return sweep_fail(sc->cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                              "expected an array of strings, got %s", sweep_json_kind(v));
        for (size_t j = 0; v && j < json_array_size(v); j++) {
            json_t *e = json_array_get(v, j);
            const char *s = json_is_string(e) ? json_string_value(e) : NULL;
            sweep_path_index(pi, p, j);
            if (!s || !*s || strchr(s, '\n'))
                return sweep_fail(sc->cx, TUNE_ERR_INVALID, pi, JSONLOC_VALUE,
                                  "expected a non-empty string without newlines");
            char *dir = i == 0 ? kdecl_path(d, s) : NULL;
            if (i == 0 && !dir)
                return sweep_nomem(sc->cx);
            if (i == 0 && sc->cx->check_files && access(dir, R_OK | X_OK) != 0) {
                free(dir);
                return kd_unreadable(sc, pi, s, "the folder ");
            }
            const char *text = i == 0 ? dir : s;
            size_t need = used + strlen(text) + 4;
            char *o = need > cap ? realloc(d->options, cap = 2 * need) : d->options;
            if (!o) {
                free(dir);
                return sweep_nomem(sc->cx);
            }
            d->options = o;
            used += (size_t)sprintf(d->options + used, "%s%s%s", used ? "\n" : "",
                                    i == 0 ? "-I" : "", text);
            free(dir);
        }
    }
    if (used >= KDECL_MAX_PATH / 2)
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, "$.kernel", JSONLOC_VALUE,
                          "include_dirs and options take %zu characters; at most %d", used,
                          KDECL_MAX_PATH / 2 - 1);
    return 0;
}

/* ---- the family ---- */

static family_axis_kind kd_axis_kind(json_t *v)
{
    if (json_is_array(v) && json_array_size(v) > 0)
        v = json_array_get(v, 0);
    if (json_is_string(v))
        return FAMILY_AXIS_STR;
    if (json_is_boolean(v))
        return FAMILY_AXIS_BOOL;
    return FAMILY_AXIS_INT;
}

/* The axes of a "problem" or "params" object: every key, its kind from its values, unbounded. */
static int kd_axes(const sweep_ctx *cx, json_t *obj, const char *path, family_axis **out,
                   size_t *n_out, const family_axis *other, size_t n_other)
{
    static const char *const reserved[] = {"op", "method", "dsize", NULL};
    size_t n = json_is_object(obj) ? json_object_size(obj) : 0;
    if (!(*out = calloc(n + 1, sizeof **out)))
        return sweep_nomem(cx);
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        char p[SWEEP_PATH_SIZE];
        sweep_path_key(p, path, key);
        if (!sweep_kd_ident_ok(key) || sweep_in_list(reserved, key))
            return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_KEY,
                              "expected a name [A-Za-z_][A-Za-z0-9_]* other than op, method and "
                              "dsize (expressions read it), got '%s'",
                              key);
        if (sweep_find_axis(other, n_other, key))
            return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_KEY,
                              "'%s' is both a problem axis and a parameter", key);
        family_axis *a = &(*out)[(*n_out)++];
        if (!(a->name = sweep_strdup(cx, key)))
            return -1;
        a->kind = kd_axis_kind(v);
        a->min = INT64_MIN;
        a->max = INT64_MAX;
        a->help = "declared in the sweep file";
    }
    return 0;
}

/* The first parameter e reads, or NULL. */
static const char *kd_param_read(const expr *e, const family_axis *params, size_t n_params)
{
    const char *names[SWEEP_MAX_EXPR_NAMES];
    size_t nn = expr_names(e, names, SWEEP_MAX_EXPR_NAMES);
    for (size_t j = 0; j < nn && j < SWEEP_MAX_EXPR_NAMES; j++)
        if (sweep_find_axis(params, n_params, names[j]))
            return names[j];
    return NULL;
}

/* "<size> * (<count>) + ..." over the buffers (inout twice); NULL when a count reads a parameter
 * (then the sweep must give "bytes"). */
static char *kd_bytes_model(const kernel_decl *d, const sweep_kd_scope *sc)
{
    size_t cap = 64, used = 0;
    char *s = malloc(cap);
    for (size_t i = 0; s && i < d->n_args; i++) {
        const kdecl_arg *a = &d->args[i];
        if (!a->is_buffer || a->role == KDECL_SCRATCH)
            continue;
        if (kd_param_read(a->count, sc->params, sc->n_params)) {
            free(s);
            return NULL;
        }
        char *c = expr_to_string(a->count);
        size_t need = used + (c ? strlen(c) : 0) + 48;
        char *ns = need > cap ? realloc(s, cap = 2 * need) : s;
        if (!c || !ns) {
            free(c);
            free(ns ? ns : s);
            return NULL;
        }
        s = ns;
        used += (size_t)sprintf(s + used, "%s%zu * (%s)", used ? " + " : "",
                                kdecl_type_size(a->type) * (a->role == KDECL_INOUT ? 2 : 1), c);
        free(c);
    }
    if (s && used == 0)
        strcpy(s, "0");
    return s;
}

static int kd_family(const sweep_ctx *cx, sweep *sw, kdecl_family *kf, const sweep_kd_scope *sc)
{
    const tune_family *gpu = family_find(KDECL_FAMILY);
    kernel_decl *d = &kf->decl;
    size_t nm = 1 + (size_t)d->ref_is_kernel + d->n_baselines;
    if (!gpu)
        return sweep_fail(cx, TUNE_ERR_INVALID, "$.family", JSONLOC_VALUE,
                          "internal: the declared-kernel family is not registered");
    if (!(kf->methods = calloc(nm, sizeof *kf->methods)))
        return sweep_nomem(cx);
    kf->methods[0] = (family_method){KDECL_TUNED, 1, "the declared kernel", FAMILY_ROLE_TUNED};
    size_t m = 1;
    if (d->ref_is_kernel)
        kf->methods[m++] = (family_method){KDECL_REFERENCE, 0, "the reference kernel",
                                           FAMILY_ROLE_REFERENCE};
    for (size_t i = 0; i < d->n_baselines; i++)
        kf->methods[m++] = (family_method){d->baseline_names[i], 0, "a declared baseline",
                                           FAMILY_ROLE_BASELINE};
    kf->bytes = kd_bytes_model(d, sc);
    kf->op = (family_op){sw->op, kf->axes, kf->n_axes, kf->bytes ? kf->bytes : "0", "0",
                         "a kernel declared in the sweep file"};
    kf->n_methods = nm;
    kf->fam = kdecl_family_make(kf, gpu);
    sw->family = &kf->fam;
    sw->fop = &kf->op;
    return 0;
}

static char *kd_dirname(const char *label)
{
    const char *slash = strrchr(label, '/');
    size_t n = slash ? (size_t)(slash - label) : 0;
    char cwd[PATH_MAX] = ".";
    if (label[0] != '/' && !getcwd(cwd, sizeof cwd))
        snprintf(cwd, sizeof cwd, ".");
    size_t size = strlen(cwd) + n + 3;
    char *buf = malloc(size);
    if (!buf)
        return NULL;
    if (label[0] == '/')
        snprintf(buf, size, "%.*s", (int)(n ? n : 1), label);
    else
        snprintf(buf, size, "%s%s%.*s", cwd, n ? "/" : "", (int)n, label);
    return buf;
}

int sweep_parse_declared(const sweep_ctx *cx, json_t *root, sweep *sw)
{
    char p[SWEEP_PATH_SIZE];
    kdecl_family *kf = calloc(1, sizeof *kf);
    if (!kf)
        return sweep_nomem(cx);
    sw->declared = kf;
    kernel_decl *d = &kf->decl;
    json_t *op = json_object_get(root, "op"), *k = json_object_get(root, "kernel");
    json_t *problem = json_object_get(root, "problem"), *params = json_object_get(root, "params");
    if (!op || !json_is_string(op) || !sweep_kd_ident_ok(json_string_value(op)))
        return sweep_fail(cx, TUNE_ERR_INVALID, op ? "$.op" : "$", JSONLOC_VALUE,
                          "expected \"op\": a name [A-Za-z_][A-Za-z0-9_]* for what the kernel "
                          "computes");
    if (!(sw->op = sweep_strdup(cx, json_string_value(op))))
        return -1;
    if (!k)
        return sweep_fail(cx, TUNE_ERR_INVALID, "$", JSONLOC_VALUE,
                          "missing required key 'kernel' (the declared kernel: source, entry, "
                          "args, grid, block, reference)");
    if (!json_is_object(problem) || json_object_size(problem) == 0)
        return sweep_fail(cx, TUNE_ERR_INVALID, problem ? "$.problem" : "$", JSONLOC_VALUE,
                          "a declared kernel needs \"problem\": an object of problem axes");
    if (kd_axes(cx, problem, "$.problem", &kf->axes, &kf->n_axes, NULL, 0) != 0 ||
        (params && kd_axes(cx, params, "$.params", &kf->params, &kf->n_params, kf->axes,
                           kf->n_axes) != 0) ||
        (!params && !(kf->params = calloc(1, sizeof *kf->params))))
        return kf->params ? -1 : sweep_nomem(cx);
    sweep_kd_scope sc = {cx, sw, kf->axes, kf->params, kf->n_axes, kf->n_params};
    if (!(d->dir = kd_dirname(cx->label)))
        return sweep_nomem(cx);
    if (sweep_expect_object(cx, k, "$.kernel") != 0 ||
        sweep_check_keys(cx, k, "$.kernel", kernel_keys) != 0 || kd_options(&sc, d, k) != 0 ||
        sweep_kd_args(&sc, d, json_object_get(k, "args"), "$.kernel.args") != 0 ||
        kd_main(&sc, d, k) != 0 ||
        sweep_kd_constants(&sc, d, json_object_get(k, "constants"), "$.kernel.constants") != 0 ||
        kd_check(&sc, d, json_object_get(k, "check"), sweep_path_key(p, "$.kernel", "check")) ||
        kd_reference(&sc, d, json_object_get(k, "reference"), "$.kernel.reference") != 0 ||
        kd_baselines(&sc, d, json_object_get(k, "baselines"), "$.kernel.baselines") != 0)
        return -1;
    return kd_family(cx, sw, kf, &sc);
}

/* The first argument that reads a parameter among those method m (not the tuned one) receives,
 * or -1: such a method, which runs without parameters, could not size or set it. */
static int kd_param_arg(const kdecl_family *kf, const char *m)
{
    const kernel_decl *d = &kf->decl;
    const kdecl_kernel *k = kdecl_method_kernel(d, m);
    for (size_t j = 0; k && j < (k->argv ? k->argc : d->n_args); j++) {
        const kdecl_arg *a = &d->args[k->argv ? k->argv[j] : j];
        if (kd_param_read(a->is_buffer ? a->count : a->value, kf->params, kf->n_params))
            return (int)(k->argv ? k->argv[j] : j);
    }
    return -1;
}

/* "methods" omitted: every method the section declares (kernel, the reference when it is a
 * kernel, the baselines, in that order) but those that could not run: one that receives an
 * argument reading a parameter; and with a reference that has "per_config", all but kernel (the
 * reference needs a configuration to check against). */
int sweep_default_declared_methods(const sweep_ctx *cx, sweep *sw)
{
    const kdecl_family *kf = sw->declared;
    if (!(sw->methods = calloc(kf->n_methods, sizeof *sw->methods)))
        return sweep_nomem(cx);
    for (size_t m = 0; m < kf->n_methods; m++) {
        const char *name = kf->methods[m].name;
        if (m > 0 && (kd_param_arg(kf, name) >= 0 || kf->decl.ref_per_config))
            continue;
        if (!(sw->methods[sw->n_methods] = sweep_strdup(cx, name)))
            return -1;
        sw->n_methods++;
    }
    return 0;
}

/* After the methods: arguments that read parameters cannot be sized for the methods that run
 * without them, nor can those be checked against a reference that reads parameters; a sweep
 * whose buffers read parameters gives its own "bytes" (scratch buffers aside). */
int sweep_check_declared(const sweep_ctx *cx, json_t *root, const sweep *sw)
{
    const kdecl_family *kf = sw->declared;
    const kernel_decl *d = &kf->decl;
    char p[SWEEP_PATH_SIZE], pa[SWEEP_PATH_SIZE];
    for (size_t m = 0; m < sw->n_methods; m++) {
        if (strcmp(sw->methods[m], KDECL_TUNED) == 0)
            continue;
        if (d->ref_per_config)
            return sweep_fail(cx, TUNE_ERR_INVALID, "$.kernel.reference.per_config",
                              JSONLOC_VALUE,
                              "the reference reads parameters, so only \"kernel\" has a "
                              "configuration to check against it: drop '%s' from \"methods\"",
                              sw->methods[m]);
        int i = kd_param_arg(kf, sw->methods[m]);
        if (i < 0)
            continue;
        const kdecl_arg *a = &d->args[i];
        sweep_path_key(p, sweep_path_index(pa, "$.kernel.args", (size_t)i),
                       a->is_buffer ? "count" : "value");
        return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "reads parameter '%s', but method '%s' runs without parameters: with "
                          "baselines or the reference as methods, arguments may read only "
                          "problem axes",
                          kd_param_read(a->is_buffer ? a->count : a->value, kf->params,
                                        kf->n_params),
                          sw->methods[m]);
    }
    for (size_t i = 0; i < d->n_args; i++) {
        const kdecl_arg *a = &d->args[i];
        const char *param = a->is_buffer && a->role != KDECL_SCRATCH
                                ? kd_param_read(a->count, kf->params, kf->n_params)
                                : NULL;
        sweep_path_key(p, sweep_path_index(pa, "$.kernel.args", i), "count");
        if (param && !json_object_get(root, "bytes"))
            return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                              "reads parameter '%s': give \"bytes\" (the bytes one launch "
                              "moves, over problem axes), which tune cannot derive from "
                              "the buffers",
                              param);
    }
    return 0;
}
