/* declared_data.c - the host side of a declared kernel's buffers: initial values generated
 * (seeded, so every configuration of a shape sees the same inputs) or read from .npy files,
 * element conversions, and the comparison with the reference. Random normal, uniform and
 * integer values are generated on the device (declared.c, kernels_src/common.cu). */
#include "families/declared_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "core/npy.h"

static uint64_t kd_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void kd_store(kdecl_type t, void *base, size_t i, double v)
{
    unsigned char *p = (unsigned char *)base + i * kdecl_type_size(t);
    switch (t) {
    case KDECL_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
    case KDECL_F64: memcpy(p, &v, 8); break;
    case KDECL_F16: { uint16_t h = half_from_f32((float)v); memcpy(p, &h, 2); break; }
    case KDECL_BF16: { uint16_t h = bf16_from_f32((float)v); memcpy(p, &h, 2); break; }
    case KDECL_I8: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
    case KDECL_U8: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); break; }
    case KDECL_I16: { int16_t x = (int16_t)v; memcpy(p, &x, 2); break; }
    case KDECL_U16: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case KDECL_I32: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
    case KDECL_U32: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    case KDECL_I64: { int64_t x = (int64_t)v; memcpy(p, &x, 8); break; }
    case KDECL_U64: { uint64_t x = (uint64_t)v; memcpy(p, &x, 8); break; }
    default: break;
    }
}

double kd_load(kdecl_type t, const void *base, size_t i)
{
    const unsigned char *p = (const unsigned char *)base + i * kdecl_type_size(t);
    union { float f; double d; uint16_t h; int8_t i8; uint8_t u8; int16_t i16; uint16_t u16;
            int32_t i32; uint32_t u32; int64_t i64; uint64_t u64; } u;
    memcpy(&u, p, kdecl_type_size(t));
    switch (t) {
    case KDECL_F32: return u.f;
    case KDECL_F64: return u.d;
    case KDECL_F16: return half_to_f32(u.h);
    case KDECL_BF16: return bf16_to_f32(u.h);
    case KDECL_I8: return u.i8;
    case KDECL_U8: return u.u8;
    case KDECL_I16: return u.i16;
    case KDECL_U16: return u.u16;
    case KDECL_I32: return u.i32;
    case KDECL_U32: return u.u32;
    case KDECL_I64: return (double)u.i64;
    case KDECL_U64: return (double)u.u64;
    default: return NAN;
    }
}

/* The .npy descr a buffer of type t accepts. */
static int kd_npy_matches(kdecl_type t, const char *descr)
{
    return (descr[0] == '<' || descr[0] == '|' || descr[0] == '=') &&
           strcmp(descr + 1, kdecl_type_npy(t)) == 0;
}

tune_status kd_read_npy(const kernel_decl *d, const kdecl_template *file, const tune_point *p,
                        kdecl_type type, size_t count, const char *what, void *dst,
                        tune_error *err)
{
    char rel[1024], descr[16];
    if (kdecl_render(file, p, rel, sizeof rel, err) != 0)
        return err ? err->code : TUNE_ERR_EVAL;
    char *path = kdecl_path(d, rel);
    if (!path)
        return tune_error_set(err, TUNE_ERR_NOMEM, what, "out of host memory");
    size_t n = 0;
    void *data = NULL;
    tune_status st = npy_read(path, count * kdecl_type_size(type) + 1, descr, sizeof descr, &n,
                              &data, err);
    if (st == TUNE_OK && (!kd_npy_matches(type, descr) || n != count))
        st = tune_error_set(err, TUNE_ERR_INVALID, path,
                            "holds %zu elements of dtype '%s'; %s needs %zu of %s (little-endian, "
                            "C order)",
                            n, descr, what, count, kdecl_type_name(type));
    else if (st == TUNE_OK)
        memcpy(dst, data, count * kdecl_type_size(type));
    free(data);
    free(path);
    return st;
}

tune_status kd_eval_int(const expr *e, const tune_point *p, const char *what, int64_t lo,
                        int64_t *out, tune_error *err)
{
    expr_value v;
    if (expr_eval(e, point_lookup, (void *)p, &v, err) != TUNE_OK)
        return TUNE_ERR_UNSUPPORTED; /* an expression the configuration cannot evaluate */
    if (v.type != EXPR_INT || v.i < lo)
        return tune_error_set(err, TUNE_ERR_UNSUPPORTED, what,
                              "evaluates to %s, expected an integer >= %lld",
                              v.type == EXPR_INT ? "a smaller integer" : "a non-integer",
                              (long long)lo);
    *out = v.i;
    return TUNE_OK;
}

tune_status kd_init_bounds(const kdecl_arg *a, const tune_point *p, double *lo, double *hi,
                           tune_error *err)
{
    int64_t l = 0, h = 0;
    tune_status st;
    if ((st = kd_eval_int(a->init.lo, p, a->name, INT64_MIN, &l, err)) != TUNE_OK ||
        (st = kd_eval_int(a->init.hi, p, a->name, INT64_MIN, &h, err)) != TUNE_OK)
        return st;
    if (h < l || h - l > ((int64_t)1 << 52))
        return tune_error_set(err, TUNE_ERR_UNSUPPORTED, a->name,
                              "integers in [%lld, %lld]: an empty or too wide range", (long long)l,
                              (long long)h);
    *lo = (double)l;
    *hi = (double)h;
    return TUNE_OK;
}

tune_status kd_perm_size(const kdecl_arg *a, const tune_point *p, size_t count, int64_t *n,
                         tune_error *err)
{
    tune_status st = kd_eval_int(a->init.hi, p, a->name, 0, n, err);
    if (st == TUNE_OK && (*n < (int64_t)count || *n > (int64_t)1 << 31))
        st = tune_error_set(err, TUNE_ERR_UNSUPPORTED, a->name,
                            "a permutation of %lld values cannot fill %zu elements", (long long)*n,
                            count);
    return st;
}

static tune_status kd_permutation(const kdecl_arg *a, const tune_point *p, size_t count,
                                  uint64_t *rng, void *dst, tune_error *err)
{
    int64_t n = 0;
    tune_status st = kd_perm_size(a, p, count, &n, err);
    if (st != TUNE_OK)
        return st;
    int64_t *perm = malloc((size_t)(n ? n : 1) * sizeof *perm);
    if (!perm)
        return tune_error_set(err, TUNE_ERR_NOMEM, a->name, "out of host memory");
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    for (size_t i = 0; i < count; i++) { /* the first count steps of a Fisher-Yates shuffle */
        size_t j = i + (size_t)(kd_next(rng) % (uint64_t)(n - (int64_t)i));
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
        kd_store(a->type, dst, i, (double)perm[i]);
    }
    free(perm);
    return TUNE_OK;
}

/* Random values of a on the host (constants: at most 64 KiB; buffers draw theirs on the device):
 * uniform in [low, high), normal (Box-Muller), integers in [low, high]. */
static tune_status kd_random_host(const kdecl_arg *a, const tune_point *p, size_t count,
                                  uint64_t *rng, void *dst, tune_error *err)
{
    double lo = a->init.a, hi = a->init.b;
    tune_status st =
        a->init.kind == KDECL_INIT_INTEGERS ? kd_init_bounds(a, p, &lo, &hi, err) : TUNE_OK;
    for (size_t i = 0; st == TUNE_OK && i < count; i++) {
        double u = (double)(kd_next(rng) >> 11) * 0x1p-53, v;
        if (a->init.kind == KDECL_INIT_UNIFORM) {
            v = lo + (hi - lo) * u;
        } else if (a->init.kind == KDECL_INIT_NORMAL) {
            double u2 = (double)(kd_next(rng) >> 11) * 0x1p-53;
            v = lo + hi * sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * u2);
        } else {
            v = lo + (double)(kd_next(rng) % (uint64_t)(hi - lo + 1));
        }
        kd_store(a->type, dst, i, v);
    }
    return st;
}

tune_status kd_fill_host(const kernel_decl *d, size_t ai, const tune_point *p, size_t count,
                         uint64_t seed, void *dst, tune_error *err)
{
    return kd_fill_host_arg(d, &d->args[ai], p, count, seed, dst, err);
}

tune_status kd_fill_host_arg(const kernel_decl *d, const kdecl_arg *a, const tune_point *p,
                             size_t count, uint64_t seed, void *dst, tune_error *err)
{
    uint64_t rng = seed;
    switch (a->init.kind) {
    case KDECL_INIT_CONSTANT:
        for (size_t i = 0; i < count; i++)
            kd_store(a->type, dst, i, a->init.a);
        return TUNE_OK;
    case KDECL_INIT_PERMUTATION: return kd_permutation(a, p, count, &rng, dst, err);
    case KDECL_INIT_NPY:
        return kd_read_npy(d, &a->init.npy, p, a->type, count, a->name, dst, err);
    case KDECL_INIT_NORMAL:
    case KDECL_INIT_UNIFORM:
    case KDECL_INIT_INTEGERS: return kd_random_host(a, p, count, &rng, dst, err);
    default: /* outputs are zeroed (declared.c) */
        return tune_error_set(err, TUNE_ERR_INVALID, a->name, "internal: not an init");
    }
}

/* Elements [i0, i0 + n) of a buffer of type t as doubles: one loop per type (the checks of a
 * sweep convert millions of elements per configuration), half precision through a table. */
static void kd_to_double(kdecl_type t, const void *base, size_t i0, size_t n, double *dst)
{
    static float f16[65536];
    static int f16_ready;
    if (t == KDECL_F16 && !f16_ready) { /* written once; every writer writes the same values */
        for (unsigned h = 0; h < 65536; h++)
            f16[h] = half_to_f32((uint16_t)h);
        f16_ready = 1;
    }
    const unsigned char *p = (const unsigned char *)base + i0 * kdecl_type_size(t);
    switch (t) {
    case KDECL_F32:
        for (size_t i = 0; i < n; i++)
            dst[i] = ((const float *)(const void *)p)[i];
        return;
    case KDECL_F16:
        for (size_t i = 0; i < n; i++)
            dst[i] = f16[((const uint16_t *)(const void *)p)[i]];
        return;
    default:
        for (size_t i = 0; i < n; i++)
            dst[i] = kd_load(t, base, i0 + i);
    }
}

void kd_compare(kdecl_type t, const void *y, const void *r, size_t n, const kernel_decl *d,
                kd_error *acc)
{
    enum { CHUNK = 4096 };
    double yc[CHUNK], rc[CHUNK];
    for (size_t i0 = 0; i0 < n; i0 += CHUNK) {
        size_t m = n - i0 < CHUNK ? n - i0 : CHUNK;
        kd_to_double(t, y, i0, m, yc);
        kd_to_double(t, r, i0, m, rc);
        for (size_t i = 0; i < m; i++) {
            double yi = yc[i], ri = rc[i], diff = fabs(yi - ri);
            if (!isfinite(yi) && !(isnan(yi) && isnan(ri)) && yi != ri)
                diff = INFINITY;
            if (d->use_atol) {
                double bound = d->atol + d->rtol * fabs(ri);
                double q = diff == 0 ? 0 : bound > 0 ? diff / bound : INFINITY;
                acc->worst = q > acc->worst || isnan(q) ? q : acc->worst;
            } else {
                acc->num += diff * diff;
                acc->den += isfinite(ri) ? ri * ri : 0;
            }
        }
    }
}
