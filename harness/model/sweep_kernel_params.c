/* sweep_kernel_params.c - part of the sweep module (model/sweep.h): every parameter of a declared
 * kernel must reach the kernel or the space. A parameter that no define, template hole or
 * expression reads compiles and times the same kernel once per value: the space grows by that
 * factor with nothing to learn. */
#include "model/sweep_kernel_impl.h"

/* Marks in read[] the parameters e reads. */
static void kp_mark(const sweep *sw, const expr *e, unsigned char *read)
{
    const char *names[SWEEP_MAX_EXPR_NAMES];
    size_t n = e ? expr_names(e, names, SWEEP_MAX_EXPR_NAMES) : 0;
    for (size_t i = 0; i < n && i < SWEEP_MAX_EXPR_NAMES; i++)
        for (size_t j = 0; j < sw->n_params; j++)
            if (strcmp(names[i], sw->params[j].name) == 0)
                read[j] = 1;
}

static void kp_mark_template(const sweep *sw, const kdecl_template *t, unsigned char *read)
{
    for (size_t i = 0; t->exprs && i < t->n; i++)
        kp_mark(sw, t->exprs[i], read);
}

/* The tuned kernel's entry, defines, launch geometry and arguments; the sweep's skip_if, bytes,
 * flops and search features. */
static void kp_mark_all(const sweep *sw, unsigned char *read)
{
    const kernel_decl *d = &sw->declared->decl;
    const kdecl_kernel *k = &d->main;
    kp_mark_template(sw, &k->entry, read);
    for (size_t i = 0; i < k->n_defines; i++)
        kp_mark_template(sw, &k->define_values[i], read);
    for (int i = 0; i < k->grid_dims; i++)
        kp_mark(sw, k->grid[i], read);
    for (int i = 0; i < k->block_dims; i++)
        kp_mark(sw, k->block[i], read);
    kp_mark(sw, k->shared, read);
    for (size_t i = 0; i < d->n_args; i++) {
        const kdecl_arg *a = &d->args[i];
        kp_mark(sw, a->is_buffer ? a->count : a->value, read);
        kp_mark(sw, a->init.lo, read);
        kp_mark(sw, a->init.hi, read);
        if (a->init.kind == KDECL_INIT_NPY)
            kp_mark_template(sw, &a->init.npy, read);
    }
    for (size_t i = 0; i < sw->n_skip_if; i++)
        kp_mark(sw, sw->skip_if[i], read);
    kp_mark(sw, sw->bytes, read);
    kp_mark(sw, sw->flops, read);
    for (size_t i = 0; i < sw->search.n_features; i++)
        kp_mark(sw, sw->search.features[i], read);
}

int sweep_check_declared_params(const sweep_ctx *cx, const sweep *sw)
{
    unsigned char *read = calloc(sw->n_params + 1, 1);
    if (!read)
        return sweep_nomem(cx);
    kp_mark_all(sw, read);
    double all = 1, unread = 1;
    size_t first = SIZE_MAX;
    for (size_t j = 0; j < sw->n_params; j++) {
        all *= (double)sw->params[j].n;
        if (!read[j] && sw->params[j].n > 1) { /* one value multiplies nothing */
            unread *= (double)sw->params[j].n;
            first = first == SIZE_MAX ? j : first;
        }
    }
    free(read);
    if (first == SIZE_MAX)
        return 0;
    char p[SWEEP_PATH_SIZE];
    sweep_path_key(p, "$.params", sw->params[first].name);
    return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_KEY,
                      "no define, template hole ({%s}) or expression (grid, block, shared, args, "
                      "skip_if, bytes, flops) reads parameter '%s': its %zu values make %.0f "
                      "parameter points of which only %.0f differ; give it to the kernel "
                      "(\"defines\": {\"NAME\": \"{%s}\"}) or drop it",
                      sw->params[first].name, sw->params[first].name, sw->params[first].n, all,
                      all / unread, sw->params[first].name);
}
