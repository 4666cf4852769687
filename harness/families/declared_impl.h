/* declared_impl.h - what the files of the declared-kernel family share (families/declared.c, the
 * GPU side; declared_data.c, the host side of its buffers). */
#ifndef TUNE_DECLARED_IMPL_H
#define TUNE_DECLARED_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "model/kernel_decl.h"

/* The comparison's running sums: normalised error (num, den) or atol/rtol (worst ratio). */
typedef struct {
    double num, den, worst;
} kd_error;

/* Element i of a buffer of type t, as a double; and stored from one. */
double kd_load(kdecl_type t, const void *base, size_t i);
void kd_store(kdecl_type t, void *base, size_t i, double v);
/* The host-side initial values (constant, permutation, npy) of argument ai (count elements) at
 * p into dst, seeded by seed (the buffer's own: --seed and its name, declared.c). */
tune_status kd_fill_host(const kernel_decl *d, size_t ai, const tune_point *p, size_t count,
                         uint64_t seed, void *dst, tune_error *err);
/* The same for any argument or constant a of d: constant, permutation, npy, and the random
 * inits (normal, uniform, integers) drawn on the host, as constants' are. */
tune_status kd_fill_host_arg(const kernel_decl *d, const kdecl_arg *a, const tune_point *p,
                             size_t count, uint64_t seed, void *dst, tune_error *err);
/* A .npy file (template rendered at p, relative to the sweep's folder) of exactly count
 * elements of type into dst. */
tune_status kd_read_npy(const kernel_decl *d, const kdecl_template *file, const tune_point *p,
                        kdecl_type type, size_t count, const char *what, void *dst,
                        tune_error *err);
/* e at p: an integer >= lo, or TUNE_ERR_UNSUPPORTED with the reason (what names it): a
 * configuration the expression cannot be evaluated for is skipped. */
tune_status kd_eval_int(const expr *e, const tune_point *p, const char *what, int64_t lo,
                        int64_t *out, tune_error *err);
/* The inclusive bounds of an "integers" init at p. */
tune_status kd_init_bounds(const kdecl_arg *a, const tune_point *p, double *lo, double *hi,
                           tune_error *err);
/* The n of a "permutation" init at p: an integer of at least count (the buffer's elements) and
 * at most 2^31. */
tune_status kd_perm_size(const kdecl_arg *a, const tune_point *p, size_t count, int64_t *n,
                         tune_error *err);
/* The values of a declared kernel's __constant__ symbols ("constants"), made once per shape on
 * the host (declared_const.c). */
typedef struct {
    unsigned char *host[KDECL_MAX_CONSTANTS];
    size_t bytes[KDECL_MAX_CONSTANTS];
    int ready;
} kd_consts;

/* The constants' values at p (a shape: they read only problem axes), seeded by seed and each
 * one's name; kept until kd_consts_clear. A count out of range is TUNE_ERR_UNSUPPORTED. */
tune_status kd_consts_make(const kernel_decl *d, const tune_point *p, uint64_t seed, kd_consts *cv,
                           tune_error *err);
void kd_consts_clear(kd_consts *cv);
/* Copies the values into the module of kernel i of the family's list at cfg, for each constant
 * whose symbol that module holds (found[c] set to 1), zeroing the symbol's bytes past the
 * declared ones; enqueued on env->stream. A symbol smaller than its declaration is
 * TUNE_ERR_UNSUPPORTED naming both sizes. */
tune_status kd_consts_copy(const kernel_decl *d, const family_env *env, const tune_point *cfg,
                           size_t i, const kd_consts *cv, unsigned char *found, tune_error *err);

/* Adds the comparison of n elements of y with the reference r to acc. */
void kd_compare(kdecl_type t, const void *y, const void *r, size_t n, const kernel_decl *d,
                kd_error *acc);

#endif
