/* kernel_decl_limits.c - the launch limits every CUDA device shares, applied to a declared
 * kernel's configurations before anything is compiled (the family's prune hook, model/family.h):
 * at most 1024 threads per block, block dimensions of at most (1024, 1024, 64), grid dimensions of
 * at most (2^31 - 1, 65535, 65535) (the CUDA C++ Programming Guide, "Features and Technical
 * Specifications", every compute capability since 3.0). What depends on the device or the
 * compiled kernel (registers, __launch_bounds__, shared memory) is checked at run time
 * (families/declared.c). */
#include "model/kernel_decl.h"

#include <string.h>

static const char *const why_threads =
    "more than 1024 threads per block (every CUDA device's limit)";
static const char *const why_block = "a block dimension over its limit (x, y <= 1024, z <= 64)";
static const char *const why_grid_x = "grid dimension x over its limit (2^31 - 1)";
static const char *const why_grid_yz = "grid dimension y or z over its limit (65535)";

/* The integer value of e at p; 0 when it cannot be evaluated (the run reports that). */
static int kl_int(const expr *e, const tune_point *p, int64_t *out)
{
    expr_value v;
    if (!e || expr_eval(e, point_lookup, (void *)p, &v, NULL) != TUNE_OK)
        return 0;
    if (v.type == EXPR_INT)
        *out = v.i;
    else if (v.type == EXPR_FLOAT && v.f == v.f && v.f < 9.2e18 && v.f > -9.2e18)
        *out = (int64_t)v.f;
    else
        return 0;
    return 1;
}

/* The limit k's launch at p breaks, or NULL. */
static const char *kl_check(const kdecl_kernel *k, const tune_point *p)
{
    static const int64_t bmax[3] = {1024, 1024, 64}, gmax[3] = {2147483647, 65535, 65535};
    int64_t threads = 1, v;
    for (int i = 0; i < k->block_dims; i++) {
        if (!kl_int(k->block[i], p, &v) || v < 1)
            return NULL;
        if (v > bmax[i])
            return why_block;
        threads *= v;
    }
    if (threads > 1024)
        return why_threads;
    for (int i = 0; i < k->grid_dims; i++)
        if (kl_int(k->grid[i], p, &v) && v > gmax[i])
            return i == 0 ? why_grid_x : why_grid_yz;
    return NULL;
}

void kdecl_family_prune(const tune_family *fam, const tune_point *shape, const tune_point *params,
                        size_t n, const char **why)
{
    const kernel_decl *d = fam->data;
    const kdecl_kernel *k = kdecl_method_kernel(d, point_str(shape, "method", ""));
    for (size_t j = 0; k && j < n; j++) {
        tune_point p = *shape; /* parameters and problem axes have distinct names */
        if (p.n + params[j].n > TUNE_MAX_AXES)
            continue;
        memcpy(p.names + p.n, params[j].names, params[j].n * sizeof *p.names);
        memcpy(p.vals + p.n, params[j].vals, params[j].n * sizeof *p.vals);
        p.n += params[j].n;
        why[j] = kl_check(k, &p);
    }
}
