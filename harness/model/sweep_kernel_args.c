/* sweep_kernel_args.c - part of the sweep module (model/sweep.h): the "args" array of a declared
 * kernel's "kernel" section (model/kernel_decl.h): buffers (type, count, role, init, redraw) and
 * scalars, in the kernel's order. */
#include "model/sweep_kernel_impl.h"

static const char *const buffer_keys[] = {"name", "type", "count", "role", "init", "redraw", NULL};
static const char *const scalar_keys[] = {"name", "type", "value", NULL};
static const char *const init_keys[] = {"normal",   "uniform", "integers", "permutation",
                                        "constant", "npy",     NULL};

static int kd_pair(const sweep_kd_scope *sc, json_t *v, const char *path, const char *what,
                   double *a, double *b)
{
    if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_number(json_array_get(v, 0)) ||
        !json_is_number(json_array_get(v, 1)))
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "expected [%s] (two numbers), got %s", what, sweep_json_kind(v));
    *a = json_number_value(json_array_get(v, 0));
    *b = json_number_value(json_array_get(v, 1));
    return 0;
}

static int kd_init(const sweep_kd_scope *sc, json_t *v, const kdecl_arg *a, const char *path,
                   kdecl_init *in)
{
    char p[SWEEP_PATH_SIZE], pi[SWEEP_PATH_SIZE];
    if (sweep_expect_object(sc->cx, v, path) != 0 ||
        sweep_check_keys(sc->cx, v, path, init_keys) != 0)
        return -1;
    if (json_object_size(v) != 1)
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "expected one of: normal, uniform, integers, permutation, constant, "
                          "npy");
    const char *key = json_object_iter_key(json_object_iter(v));
    json_t *x = json_object_get(v, key);
    sweep_path_key(p, path, key);
    if (strcmp(key, "normal") == 0 || strcmp(key, "uniform") == 0) {
        in->kind = key[0] == 'n' ? KDECL_INIT_NORMAL : KDECL_INIT_UNIFORM;
        if (kd_pair(sc, x, p, key[0] == 'n' ? "mean, standard deviation" : "low, high", &in->a,
                    &in->b) != 0)
            return -1;
        if (!(in->b >= (key[0] == 'n' ? 0 : in->a)))
            return sweep_fail(sc->cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                              key[0] == 'n' ? "expected a standard deviation >= 0"
                                            : "expected low <= high");
    } else if (strcmp(key, "integers") == 0) {
        in->kind = KDECL_INIT_INTEGERS;
        if (!json_is_array(x) || json_array_size(x) != 2)
            return sweep_fail(sc->cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                              "expected [low, high] (inclusive; integers or expressions)");
        if (!(in->lo = sweep_kd_expr(sc, json_array_get(x, 0), 1, sweep_path_index(pi, p, 0))) ||
            !(in->hi = sweep_kd_expr(sc, json_array_get(x, 1), 1, sweep_path_index(pi, p, 1))))
            return -1;
    } else if (strcmp(key, "permutation") == 0) {
        in->kind = KDECL_INIT_PERMUTATION;
        if (!(in->hi = sweep_kd_expr(sc, x, 1, p)))
            return -1;
    } else if (strcmp(key, "constant") == 0) {
        in->kind = KDECL_INIT_CONSTANT;
        if (!json_is_number(x))
            return sweep_fail(sc->cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                              "expected a number, got %s", sweep_json_kind(x));
        in->a = json_number_value(x);
    } else {
        in->kind = KDECL_INIT_NPY;
        if (sweep_kd_template(sc, x, 1, p, &in->npy) != 0)
            return -1;
    }
    if (!kdecl_type_is_float(a->type) &&
        (in->kind == KDECL_INIT_NORMAL || in->kind == KDECL_INIT_UNIFORM))
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, p, JSONLOC_KEY,
                          "buffer '%s' holds %s: use \"integers\", \"permutation\" or "
                          "\"constant\"",
                          a->name, kdecl_type_name(a->type));
    return 0;
}

static int kd_role(const sweep_kd_scope *sc, json_t *v, const char *path, kdecl_role *out)
{
    const char *s = json_is_string(v) ? json_string_value(v) : "";
    if (strcmp(s, "in") == 0)
        *out = KDECL_IN;
    else if (strcmp(s, "out") == 0)
        *out = KDECL_OUT;
    else if (strcmp(s, "inout") == 0)
        *out = KDECL_INOUT;
    else
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "expected \"in\", \"out\" or \"inout\"");
    return 0;
}

/* "redraw": true draws a random input again before every timed rep (declared.c): only buffers
 * the kernel reads whose values are random. */
static int kd_redraw(const sweep_kd_scope *sc, json_t *v, kdecl_arg *a, const char *path)
{
    static const char *const fixed[] = {[KDECL_INIT_CONSTANT] = "a constant",
                                        [KDECL_INIT_NPY] = "read from a .npy file"};
    if (!json_is_boolean(v))
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "expected true or false, got %s", sweep_json_kind(v));
    a->redraw = json_is_true(v);
    if (a->redraw && a->role == KDECL_OUT)
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_KEY,
                          "output buffer '%s' is written by the kernel, not drawn: \"redraw\" "
                          "applies to \"in\" and \"inout\" buffers with a random init",
                          a->name);
    if (a->redraw && (a->init.kind == KDECL_INIT_CONSTANT || a->init.kind == KDECL_INIT_NPY))
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_KEY,
                          "buffer '%s' is %s: \"redraw\" needs a random init (normal, "
                          "uniform, integers or permutation)",
                          a->name, fixed[a->init.kind]);
    return 0;
}

/* A buffer of vectors: count vectors of `lanes` lanes are count * lanes elements of the lane type
 * (kdecl_vector_parse), which the fills, the check, .npy files and the byte model then count. */
static int kd_lanes(const sweep_kd_scope *sc, kdecl_arg *a, int lanes, const char *path)
{
    char *c = expr_to_string(a->count);
    char *text = c ? malloc(strlen(c) + 32) : NULL;
    if (!text) {
        free(c);
        return sweep_nomem(sc->cx);
    }
    sprintf(text, "(%s) * %d", c, lanes);
    free(c);
    json_t *s = json_string(text);
    free(text);
    expr *x = s ? sweep_kd_expr(sc, s, 1, path) : NULL;
    json_decref(s);
    if (!x)
        return s ? -1 : sweep_nomem(sc->cx);
    expr_free(a->count);
    a->count = x;
    return 0;
}

/* One argument: a buffer (has "count") or a scalar (has "value"). */
static int kd_arg(const sweep_kd_scope *sc, kernel_decl *d, json_t *v, const char *path,
                  kdecl_arg *a)
{
    char p[SWEEP_PATH_SIZE];
    if (sweep_expect_object(sc->cx, v, path) != 0)
        return -1;
    json_t *name = json_object_get(v, "name"), *type = json_object_get(v, "type");
    a->is_buffer = json_object_get(v, "count") != NULL;
    if (sweep_check_keys(sc->cx, v, path, a->is_buffer ? buffer_keys : scalar_keys) != 0)
        return -1;
    if (!name || !json_is_string(name) || !sweep_kd_ident_ok(json_string_value(name)))
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, name ? sweep_path_key(p, path, "name") : path,
                          JSONLOC_VALUE, "expected \"name\": an identifier [A-Za-z_][A-Za-z0-9_]*");
    if (!(a->name = sweep_strdup(sc->cx, json_string_value(name))))
        return -1;
    for (size_t i = 0; i + 1 < d->n_args; i++) /* a is the last one */
        if (strcmp(d->args[i].name, a->name) == 0)
            return sweep_fail(sc->cx, TUNE_ERR_INVALID, sweep_path_key(p, path, "name"),
                              JSONLOC_VALUE, "duplicate argument '%s'", a->name);
    int t = type && json_is_string(type) ? kdecl_type_parse(json_string_value(type)) : -1;
    int lanes = 1;
    if (t < 0 && type && json_is_string(type))
        t = kdecl_vector_parse(json_string_value(type), &lanes);
    if (t < 0)
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, type ? sweep_path_key(p, path, "type") : path,
                          JSONLOC_VALUE, "expected \"type\": one of %s", kdecl_type_list());
    a->type = (kdecl_type)t;
    if (!a->is_buffer && lanes > 1)
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, sweep_path_key(p, path, "type"), JSONLOC_VALUE,
                          "%s is a vector type, which buffers may hold: pass a scalar argument "
                          "lane by lane",
                          json_string_value(type));
    if (!a->is_buffer) {
        json_t *val = json_object_get(v, "value");
        if (!val)
            return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                              "expected \"count\" (a buffer) or \"value\" (a scalar)");
        return (a->value = sweep_kd_expr(sc, val, 1, sweep_path_key(p, path, "value"))) ? 0 : -1;
    }
    if (!(a->count = sweep_kd_expr(sc, json_object_get(v, "count"), 1,
                                   sweep_path_key(p, path, "count"))) ||
        sweep_kd_number(sc, a->count, 0, "an element count", p) != 0 ||
        (lanes > 1 && kd_lanes(sc, a, lanes, p) != 0))
        return -1;
    json_t *role = json_object_get(v, "role"), *init = json_object_get(v, "init");
    a->role = KDECL_IN;
    if (role && kd_role(sc, role, sweep_path_key(p, path, "role"), &a->role) != 0)
        return -1;
    if (init && a->role == KDECL_OUT)
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, sweep_path_key(p, path, "init"), JSONLOC_KEY,
                          "an output buffer has no initial values (it is poisoned before each "
                          "check): make it \"inout\" or drop \"init\"");
    if (!init && a->role != KDECL_OUT)
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "input buffer '%s' needs \"init\" (normal, uniform, integers, "
                          "permutation, constant or npy)",
                          a->name);
    if (init && kd_init(sc, init, a, sweep_path_key(p, path, "init"), &a->init) != 0)
        return -1;
    json_t *redraw = json_object_get(v, "redraw");
    return redraw ? kd_redraw(sc, redraw, a, sweep_path_key(p, path, "redraw")) : 0;
}

int sweep_kd_args(const sweep_kd_scope *sc, kernel_decl *d, json_t *v, const char *path)
{
    if (!v)
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, "$.kernel", JSONLOC_VALUE,
                          "missing required key 'args' (the kernel's arguments, in order)");
    if (!json_is_array(v) || json_array_size(v) == 0)
        return sweep_fail(sc->cx, TUNE_ERR_INVALID, path, JSONLOC_VALUE,
                          "expected a non-empty array of arguments");
    if (!(d->args = calloc(json_array_size(v), sizeof *d->args)))
        return sweep_nomem(sc->cx);
    for (size_t i = 0; i < json_array_size(v); i++) {
        char p[SWEEP_PATH_SIZE];
        kdecl_arg *a = &d->args[d->n_args++]; /* counted first: freed if it fails half-parsed */
        if (kd_arg(sc, d, json_array_get(v, i), sweep_path_index(p, path, i), a) != 0)
            return -1;
    }
    return 0;
}
