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
/* Adds the comparison of n elements of y with the reference r to acc. */
void kd_compare(kdecl_type t, const void *y, const void *r, size_t n, const kernel_decl *d,
                kd_error *acc);

#endif
