#include "model/family.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const tune_family *registered[FAMILY_MAX + 1];
static size_t n_registered;

int family_register(const tune_family *fam)
{
    for (size_t i = 0; i < n_registered; i++) {
        if (registered[i] == fam)
            return 0;
        if (strcmp(registered[i]->name, fam->name) == 0)
            return -1;
    }
    if (n_registered == FAMILY_MAX)
        return -1;
    registered[n_registered++] = fam;
    return 0;
}

const tune_family *const *family_all(void) { return registered; }

const tune_family *family_find(const char *name)
{
    const tune_family *const *families = family_all();
    for (size_t i = 0; name && families[i]; i++)
        if (strcmp(families[i]->name, name) == 0)
            return families[i];
    return NULL;
}

int family_set_dsize(const tune_family *fam, tune_point *p)
{
    const char *axis = fam ? fam->dtype_axis : NULL, *dtype = axis ? point_str(p, axis, NULL) : NULL;
    if (!dtype)
        return 0;
    size_t dsize = tune_dtype_size(dtype);
    if (dsize == 0)
        return -1;
    point_set_int(p, "dsize", (int64_t)dsize);
    return 0;
}

const family_op *family_find_op(const tune_family *fam, const char *op)
{
    for (size_t i = 0; fam && op && i < fam->n_ops; i++)
        if (strcmp(fam->ops[i].name, op) == 0)
            return &fam->ops[i];
    return NULL;
}

const family_method *family_find_method(const tune_family *fam, const char *method)
{
    for (size_t i = 0; fam && method && i < fam->n_methods; i++)
        if (strcmp(fam->methods[i].name, method) == 0)
            return &fam->methods[i];
    return NULL;
}

int family_fail(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return -1;
}

void *family_kernel(const family_env *env, const family_kernel_ref *ref, tune_error *err)
{
    void *k = env->kernel(env->kctx, ref);
    if (!k)
        tune_error_set(err, TUNE_ERR_CUDA, ref->source, "kernel %s is not loaded", ref->name);
    return k;
}

void *family_kernel_named(const family_env *env, const char *source, const char *name,
                          tune_error *err)
{
    family_kernel_ref ref;
    memset(&ref, 0, sizeof ref);
    ref.source = source;
    snprintf(ref.name, sizeof ref.name, "%s", name);
    return family_kernel(env, &ref, err);
}

void *family_kernel_at(const tune_family *fam, const family_env *env, const tune_point *cfg,
                       size_t i, tune_error *err)
{
    family_kernel_ref refs[FAMILY_MAX_KERNELS];
    char why[512] = "";
    memset(refs, 0, sizeof refs);
    int n = fam->kernels(fam, cfg, refs, FAMILY_MAX_KERNELS, why, sizeof why);
    if (n < 0) {
        tune_error_set(err, TUNE_ERR_UNSUPPORTED, fam->name, "%s", why);
        return NULL;
    }
    if (i >= (size_t)n) {
        tune_error_set(err, TUNE_ERR_INVALID, fam->name, "kernel %zu of %d listed", i, n);
        return NULL;
    }
    return family_kernel(env, &refs[i], err);
}

int family_global_at(const tune_family *fam, const family_env *env, const tune_point *cfg,
                     size_t i, const char *name, void **ptr, size_t *bytes, tune_error *err)
{
    family_kernel_ref refs[FAMILY_MAX_KERNELS];
    char why[512] = "";
    memset(refs, 0, sizeof refs);
    int n = fam->kernels(fam, cfg, refs, FAMILY_MAX_KERNELS, why, sizeof why);
    if (n < 0 || i >= (size_t)n || !env->global) {
        tune_error_set(err, TUNE_ERR_INVALID, fam->name, "no kernel %zu to look up '%s' in%s%s", i,
                       name, why[0] ? ": " : "", why);
        return -1;
    }
    return env->global(env->kctx, &refs[i], name, ptr, bytes, err);
}
