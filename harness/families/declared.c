/* declared.c - the GPU side of a kernel family declared in a sweep file (model/kernel_decl.h):
 * buffers allocated and filled per shape (again when a configuration's sizes differ), inout
 * buffers restored before every rep and every check, the launches of a method (one, or a
 * sequence timed as one call) with the declared geometry (a launch the device cannot make is a
 * skipped row), __constant__ symbols filled after their modules load (declared_const.c), and the
 * check against the reference kernel (once per shape, or per configuration when it reads
 * parameters) or .npy files. The sweep copies this family and fills in its op, axes and
 * methods. */
#include "families/declared_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/hash.h"
#include "device/gpu.h"

typedef struct {
    void *ptr;       /* device */
    void *pristine;  /* inout, redraw: the initial values, restored before each check (and, for
                        inout buffers not redrawn, before each rep) */
    void *fill;      /* device fills and redraw: the device fill kernel of the buffer's type */
    int fill_kind;   /* ... and its arguments at the prepared configuration (kd_fill_args) */
    double fill_lo, fill_hi;
    uint64_t seed; /* the first draw's seed: --seed and the buffer's name */
    size_t count, bytes;
    unsigned char *ref; /* host: the reference output (checked buffers) */
    uint64_t scalar; /* scalars: the value, as the kernel's type */
} kd_buf;

/* One launch: a kernel with its geometry and arguments at a configuration. */
typedef struct {
    void *kernel;
    unsigned grid[3], block[3];
    size_t smem;
    void *argp[64]; /* what the kernel receives: the addresses of its arguments' values */
} kd_launch_t;

typedef struct {
    family_env env;
    const kernel_decl *d;
    kd_buf *bufs;
    int allocated, ref_done;
    int smem_optin; /* the device's shared memory per block, opted in */
    void **args;
    kd_launch_t cur[KDECL_MAX_LAUNCHES]; /* the prepared configuration's launches, in order */
    size_t n_cur;
    kd_consts consts; /* the __constant__ symbols' values of the shape */
    tune_point cfg;
} kd_state;

static const kernel_decl *kd_decl(const family_env *env)
{
    return env->family ? env->family->data : NULL;
}

static void kd_free_buffers(kd_state *s)
{
    for (size_t i = 0; s->bufs && i < s->d->n_args; i++) {
        gpu_free(s->bufs[i].ptr);
        gpu_free(s->bufs[i].pristine);
        free(s->bufs[i].ref);
        s->bufs[i].ptr = s->bufs[i].pristine = s->bufs[i].fill = NULL;
        s->bufs[i].ref = NULL;
        s->bufs[i].count = s->bufs[i].bytes = 0;
    }
    s->allocated = s->ref_done = 0;
}

static void kd_shape_free(void *state)
{
    kd_state *s = state;
    if (!s)
        return;
    kd_free_buffers(s);
    kd_consts_clear(&s->consts);
    free(s->bufs);
    free(s->args);
    free(s);
}

/* The device fill's kind and bounds for argument a at p (kernels_src/common.cu): 0 uniform,
 * 1 normal, 2 integers, 3 a permutation (drawn on the host at first, on the device when
 * redrawn). */
static tune_status kd_fill_args(const kdecl_arg *a, const tune_point *p, size_t count, int *kind,
                                double *lo, double *hi, tune_error *err)
{
    *lo = a->init.a;
    *hi = a->init.b;
    *kind = a->init.kind == KDECL_INIT_UNIFORM   ? 0
            : a->init.kind == KDECL_INIT_NORMAL  ? 1
            : a->init.kind == KDECL_INIT_INTEGERS ? 2
                                                  : 3;
    if (*kind == 2)
        return kd_init_bounds(a, p, lo, hi, err);
    if (*kind < 3)
        return TUNE_OK;
    int64_t n = 0;
    tune_status st = kd_perm_size(a, p, count, &n, err);
    *hi = (double)n;
    return st;
}

/* Buffer i's fill arguments at p, kept for its draws (the first one, and the redraws before
 * every rep, which then only launch). */
static tune_status kd_draw_setup(kd_state *s, size_t i, const tune_point *p, tune_error *err)
{
    kd_buf *b = &s->bufs[i];
    return kd_fill_args(&s->d->args[i], p, b->count, &b->fill_kind, &b->fill_lo, &b->fill_hi, err);
}

/* Random values of buffer i generated in place with seed, enqueued on the stream (a buffer of
 * many gigabytes takes milliseconds); no synchronisation, so it may run before a timed rep. */
static tune_status kd_draw(kd_state *s, size_t i, uint64_t seed, tune_error *err)
{
    kd_buf *b = &s->bufs[i];
    unsigned long long n = b->count, sd = seed;
    void *args[] = {&b->ptr, &n, &sd, &b->fill_kind, &b->fill_lo, &b->fill_hi};
    size_t blocks = n / 256 + 1;
    return gpu_launch(b->fill, (unsigned)(blocks < 65536 ? blocks : 65536), 256, 0, s->env.stream,
                      args, err);
}

/* The first draw of a buffer's random values (seeded by --seed and its name, so every
 * configuration of a shape sees the same inputs); the pristine copy copied from it. */
static tune_status kd_fill_device(kd_state *s, size_t i, const tune_point *p, tune_error *err)
{
    const kdecl_arg *a = &s->d->args[i];
    kd_buf *b = &s->bufs[i];
    tune_status st = kd_draw_setup(s, i, p, err);
    if (st == TUNE_OK)
        st = kd_draw(s, i, b->seed, err);
    if (st != TUNE_OK)
        return st;
    if (b->pristine &&
        cudaMemcpyAsync(b->pristine, b->ptr, b->bytes, cudaMemcpyDeviceToDevice,
                        (cudaStream_t)s->env.stream) != cudaSuccess)
        return tune_error_set(err, TUNE_ERR_CUDA, a->name, "cannot copy the initial values");
    return cudaStreamSynchronize((cudaStream_t)s->env.stream) == cudaSuccess
               ? TUNE_OK
               : tune_error_set(err, TUNE_ERR_CUDA, a->name, "the fill failed");
}

/* One buffer allocated and filled (host-generated values copied once). */
static tune_status kd_alloc_one(kd_state *s, size_t i, const tune_point *p, size_t count,
                                tune_error *err)
{
    const kdecl_arg *a = &s->d->args[i];
    kd_buf *b = &s->bufs[i];
    size_t size = kdecl_type_size(a->type);
    if (count > SIZE_MAX / size)
        return tune_error_set(err, TUNE_ERR_OOM, a->name, "%zu elements overflow", count);
    b->count = count;
    b->bytes = count * size;
    tune_status st = gpu_malloc(&b->ptr, b->bytes, err);
    if (st == TUNE_OK && (a->role == KDECL_INOUT || a->redraw))
        st = gpu_malloc(&b->pristine, b->bytes, err);
    if (st != TUNE_OK)
        return TUNE_ERR_OOM;
    b->seed = hash_fnv1a_str(s->env.seed ^ 0x5eed, a->name);
    /* looked up now: before a rep, the timing may hold the stream while a load could wait */
    if (kdecl_arg_uses_fill(a) && !(b->fill = family_kernel_named(&s->env, KDECL_FILL_SOURCE,
                                                                  kdecl_fill_kernel(a->type), err)))
        return err ? err->code : TUNE_ERR_CUDA;
    if (a->role == KDECL_OUT || a->role == KDECL_SCRATCH)
        return cudaMemset(b->ptr, 0, b->bytes) == cudaSuccess
                   ? TUNE_OK
                   : tune_error_set(err, TUNE_ERR_CUDA, a->name, "cudaMemset failed");
    if (kdecl_init_on_device(&a->init))
        return kd_fill_device(s, i, p, err);
    void *host = malloc(b->bytes ? b->bytes : 1);
    if (!host)
        return tune_error_set(err, TUNE_ERR_NOMEM, a->name, "out of host memory");
    st = kd_fill_host(s->d, i, p, count, b->seed, host, err);
    if (st == TUNE_OK &&
        (cudaMemcpy(b->ptr, host, b->bytes, cudaMemcpyHostToDevice) != cudaSuccess ||
         (b->pristine &&
          cudaMemcpy(b->pristine, host, b->bytes, cudaMemcpyHostToDevice) != cudaSuccess)))
        st = tune_error_set(err, TUNE_ERR_CUDA, a->name, "cudaMemcpy failed");
    free(host);
    return st;
}

/* The buffers p needs: allocated and filled unless the current ones have the same sizes. */
static tune_status kd_buffers(kd_state *s, const tune_point *p, tune_error *err)
{
    const kernel_decl *d = s->d;
    const char *method = point_str(p, "method", "");
    size_t counts[64];
    int same = s->allocated;
    if (d->n_args > 64)
        return tune_error_set(err, TUNE_ERR_UNSUPPORTED, "kernel", "more than 64 arguments");
    for (size_t i = 0; i < d->n_args; i++) {
        int64_t c = 0; /* a buffer the method does not receive: none */
        tune_status st;
        if (d->args[i].is_buffer && kdecl_method_receives(d, method, i) &&
            (st = kd_eval_int(d->args[i].count, p, d->args[i].name, 1, &c, err)) != TUNE_OK)
            return st;
        counts[i] = (size_t)c;
        same = same && counts[i] == s->bufs[i].count;
    }
    if (same)
        return TUNE_OK;
    kd_free_buffers(s);
    for (size_t i = 0; i < d->n_args; i++) {
        tune_status st = d->args[i].is_buffer ? kd_alloc_one(s, i, p, counts[i], err) : TUNE_OK;
        if (st != TUNE_OK) {
            kd_free_buffers(s);
            return st;
        }
        s->args[i] = d->args[i].is_buffer ? (void *)&s->bufs[i].ptr : (void *)&s->bufs[i].scalar;
    }
    s->allocated = 1;
    return TUNE_OK;
}

static void *kd_shape_init(const family_env *env, const tune_point *shape, tune_error *err)
{
    kd_state *s = calloc(1, sizeof *s);
    const kernel_decl *d = kd_decl(env);
    if (!s || !d) {
        free(s);
        tune_error_set(err, d ? TUNE_ERR_NOMEM : TUNE_ERR_INVALID, "kernel",
                       d ? "out of host memory" : "the family has no declaration");
        return NULL;
    }
    s->env = *env;
    s->d = d;
    if (cudaDeviceGetAttribute(&s->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                               env->device) != cudaSuccess) {
        free(s);
        tune_error_set(err, TUNE_ERR_CUDA, "kernel", "cannot query the device's shared memory");
        return NULL;
    }
    s->bufs = calloc(d->n_args + 1, sizeof *s->bufs);
    s->args = calloc(d->n_args + 1, sizeof *s->args);
    if (!s->bufs || !s->args) {
        kd_shape_free(s);
        tune_error_set(err, TUNE_ERR_NOMEM, "kernel", "out of host memory");
        return NULL;
    }
    (void)shape; /* buffers are sized in prepare: their counts may read parameters */
    return s;
}

/* The scalars' values at p, stored as the kernel's types. A value that changes (a scalar that
 * reads a parameter) makes the reference outputs stale: they are computed again. */
static tune_status kd_scalars(kd_state *s, const tune_point *p, tune_error *err)
{
    const char *method = point_str(p, "method", "");
    for (size_t i = 0; i < s->d->n_args; i++) {
        const kdecl_arg *a = &s->d->args[i];
        if (a->is_buffer || !kdecl_method_receives(s->d, method, i))
            continue;
        expr_value v;
        if (expr_eval(a->value, point_lookup, (void *)p, &v, err) != TUNE_OK)
            return TUNE_ERR_UNSUPPORTED;
        if (v.type == EXPR_STR)
            return tune_error_set(err, TUNE_ERR_UNSUPPORTED, a->name, "a string is not a %s",
                                  kdecl_type_name(a->type));
        uint64_t x = 0;
        kd_store(a->type, &x, 0, expr_value_as_double(v));
        if (v.type == EXPR_INT && !kdecl_type_is_float(a->type))
            memcpy(&x, &v.i, kdecl_type_size(a->type)); /* exact (little endian) */
        if (x != s->bufs[i].scalar)
            s->ref_done = 0;
        s->bufs[i].scalar = x;
    }
    return TUNE_OK;
}

/* One dimension of a grid or block at p, within its limit. */
static tune_status kd_dim(const expr *e, const tune_point *p, const char *what, int i,
                          int64_t limit, unsigned *out, tune_error *err)
{
    int64_t v = 0;
    tune_status st = kd_eval_int(e, p, what, 1, &v, err);
    if (st != TUNE_OK)
        return st;
    if (v > limit)
        return tune_error_set(err, TUNE_ERR_UNSUPPORTED, what,
                              "%s dimension %d is %lld; the limit is %lld", what, i, (long long)v,
                              (long long)limit);
    *out = (unsigned)v;
    return TUNE_OK;
}

/* k's launch at p (kernel already set in l), checked against the device and the kernel; the
 * addresses of the arguments it receives. */
static tune_status kd_geometry(const kd_state *s, const kdecl_kernel *k, const tune_point *p,
                               kd_launch_t *l, tune_error *err)
{
    for (size_t j = 0; j < (k->argv ? k->argc : s->d->n_args) && j < 64; j++)
        l->argp[j] = s->args[k->argv ? k->argv[j] : j];
    static const int64_t gmax[3] = {2147483647, 65535, 65535}, bmax[3] = {1024, 1024, 64};
    int64_t v = 0, threads = 1;
    tune_status st;
    for (int i = 0; i < 3; i++) {
        l->grid[i] = l->block[i] = 1;
        if ((i < k->grid_dims &&
             (st = kd_dim(k->grid[i], p, "grid", i, gmax[i], &l->grid[i], err)) != TUNE_OK) ||
            (i < k->block_dims &&
             (st = kd_dim(k->block[i], p, "block", i, bmax[i], &l->block[i], err)) != TUNE_OK))
            return st;
        threads *= l->block[i];
    }
    if ((st = kd_eval_int(k->shared, p, "shared", 0, &v, err)) != TUNE_OK)
        return st;
    l->smem = (size_t)v;
    struct cudaFuncAttributes fa;
    if (cudaFuncGetAttributes(&fa, (const void *)l->kernel) != cudaSuccess)
        return tune_error_set(err, TUNE_ERR_CUDA, "kernel", "cannot query the kernel's limits");
    if (threads > fa.maxThreadsPerBlock)
        return tune_error_set(err, TUNE_ERR_UNSUPPORTED, "block",
                              "%lld threads per block; this kernel allows %d (%d registers per "
                              "thread)",
                              (long long)threads, fa.maxThreadsPerBlock, fa.numRegs);
    if (l->smem + fa.sharedSizeBytes > (size_t)s->smem_optin)
        return tune_error_set(err, TUNE_ERR_UNSUPPORTED, "shared",
                              "%zu bytes of dynamic and %zu of static shared memory; the device "
                              "allows %d per block",
                              l->smem, (size_t)fa.sharedSizeBytes, s->smem_optin);
    return TUNE_OK;
}

/* Launch i of a sequence failed: its index and entry named in the reason. */
static tune_status kd_launch_failed(const kdecl_kernel *k, size_t i, size_t n, const tune_point *p,
                                    tune_status st, tune_error *err)
{
    char entry[256], msg[sizeof err->message + 320];
    if (!err || n < 2)
        return st;
    if (kdecl_render(&k->entry, p, entry, sizeof entry, NULL) != 0)
        snprintf(entry, sizeof entry, "?");
    snprintf(msg, sizeof msg, "launch %zu of %zu (%s): %s", i + 1, n, entry, err->message);
    snprintf(err->message, sizeof err->message, "%.*s", (int)sizeof err->message - 1, msg);
    return st;
}

/* The constants' values copied into the modules of the method's launches, each of which must
 * find a module that holds its symbol. */
static tune_status kd_constants(kd_state *s, const tune_point *cfg, size_t n, tune_error *err)
{
    unsigned char found[KDECL_MAX_CONSTANTS] = {0};
    tune_status st = kd_consts_make(s->d, cfg, s->env.seed, &s->consts, err);
    for (size_t i = 0; st == TUNE_OK && i < n; i++)
        st = kd_consts_copy(s->d, &s->env, cfg, i, &s->consts, found, err);
    for (size_t c = 0; st == TUNE_OK && c < s->d->n_consts; c++)
        if (!found[c] && strcmp(point_str(cfg, "method", ""), KDECL_TUNED) == 0)
            st = tune_error_set(err, TUNE_ERR_UNSUPPORTED, s->d->consts[c].name,
                                "constant '%s': no kernel of the method holds a __constant__ "
                                "symbol of that name (declared at namespace scope, not static)",
                                s->d->consts[c].name);
    return st;
}

static tune_status kd_prepare(void *state, const tune_point *cfg, tune_error *err)
{
    kd_state *s = state;
    const char *method = point_str(cfg, "method", "");
    size_t n = kdecl_method_n_launches(s->d, method);
    tune_status st;
    if (n == 0)
        return tune_error_set(err, TUNE_ERR_INVALID, "kernel", "unknown method");
    if ((st = kd_buffers(s, cfg, err)) != TUNE_OK || (st = kd_scalars(s, cfg, err)) != TUNE_OK)
        return st;
    for (size_t i = 0; i < s->d->n_args; i++) /* the redraws' bounds may read parameters */
        if (s->d->args[i].redraw && (st = kd_draw_setup(s, i, cfg, err)) != TUNE_OK)
            return st;
    s->n_cur = 0;
    for (size_t i = 0; i < n; i++) {
        const kdecl_kernel *k = kdecl_method_launch(s->d, method, i);
        kd_launch_t *l = &s->cur[i];
        if (!(l->kernel = family_kernel_at(s->env.family, &s->env, cfg, i, err)))
            return kd_launch_failed(k, i, n, cfg, err ? err->code : TUNE_ERR_CUDA, err);
        if ((st = kd_geometry(s, k, cfg, l, err)) != TUNE_OK)
            return kd_launch_failed(k, i, n, cfg, st, err);
    }
    s->n_cur = n;
    s->cfg = *cfg;
    if (s->d->ref_per_config)
        s->ref_done = 0; /* the reference reads parameters: it runs for every configuration */
    return s->d->n_consts ? kd_constants(s, cfg, n, err) : TUNE_OK;
}

/* Buffer i back to its initial values, when it keeps a pristine copy (enqueued only). */
static tune_status kd_restore_one(kd_state *s, size_t i, tune_error *err)
{
    const kd_buf *b = &s->bufs[i];
    if (b->pristine && cudaMemcpyAsync(b->ptr, b->pristine, b->bytes, cudaMemcpyDeviceToDevice,
                                       (cudaStream_t)s->env.stream) != cudaSuccess)
        return tune_error_set(err, TUNE_ERR_CUDA, s->d->args[i].name, "cannot restore");
    return TUNE_OK;
}

/* The inout and redrawn buffers back to their initial values: what the reference and every
 * check see. */
static tune_status kd_restore(kd_state *s, tune_error *err)
{
    tune_status st = TUNE_OK;
    for (size_t i = 0; st == TUNE_OK && i < s->d->n_args; i++)
        st = kd_restore_one(s, i, err);
    return st;
}

/* Before every timed rep (warmup included; outside the timed region): buffers with "redraw" get
 * draw rep + 1 of their values (seeds in a fixed sequence, as the gather family's fresh indices),
 * the other inout buffers their initial values. Enqueued only: the timing may hold the stream. */
static tune_status kd_before_rep(void *state, unsigned rep, tune_error *err)
{
    kd_state *s = state;
    tune_status st = TUNE_OK;
    for (size_t i = 0; st == TUNE_OK && i < s->d->n_args; i++)
        st = s->d->args[i].redraw
                 ? kd_draw(s, i, s->bufs[i].seed + 0x9e3779b97f4a7c15ull * ((uint64_t)rep + 1), err)
                 : kd_restore_one(s, i, err);
    return st;
}

/* Enqueues launches l[0..n) in order: a method of several launches is one call. */
static tune_status kd_launch_all(kd_state *s, kd_launch_t *l, size_t n, tune_error *err)
{
    tune_status st = TUNE_OK;
    for (size_t i = 0; st == TUNE_OK && i < n; i++)
        st = gpu_launch_dims(l[i].kernel, l[i].grid, l[i].block, l[i].smem, s->env.stream,
                             l[i].argp, err);
    return st;
}

static tune_status kd_launch(void *state, tune_error *err)
{
    kd_state *s = state;
    return kd_launch_all(s, s->cur, s->n_cur, err);
}

/* Restores the inputs, poisons the checked outputs, launches l[0..n), waits. */
static tune_status kd_run_once(kd_state *s, kd_launch_t *l, size_t n, tune_error *err)
{
    tune_status st = kd_restore(s, err);
    for (size_t j = 0; st == TUNE_OK && j < s->d->n_outputs; j++) {
        kd_buf *b = &s->bufs[s->d->outputs[j]];
        if (s->d->args[s->d->outputs[j]].role == KDECL_OUT &&
            cudaMemsetAsync(b->ptr, 0xff, b->bytes, (cudaStream_t)s->env.stream) != cudaSuccess)
            st = tune_error_set(err, TUNE_ERR_CUDA, "check", "cannot poison the outputs");
    }
    if (st == TUNE_OK)
        st = kd_launch_all(s, l, n, err);
    if (st == TUNE_OK && cudaStreamSynchronize((cudaStream_t)s->env.stream) != cudaSuccess)
        st = gpu_fail(err, (int)cudaGetLastError(), "kernel", __FILE__, __LINE__);
    return st;
}

/* The reference outputs of the shape: the reference kernel run once on the same inputs (with
 * its own geometry), or the .npy files. */
static tune_status kd_reference(kd_state *s, tune_error *err)
{
    const kernel_decl *d = s->d;
    tune_status st = TUNE_OK;
    for (size_t j = 0; j < d->n_outputs; j++) {
        kd_buf *b = &s->bufs[d->outputs[j]];
        free(b->ref);
        if (!(b->ref = malloc(b->bytes ? b->bytes : 1)))
            return tune_error_set(err, TUNE_ERR_NOMEM, "check", "out of host memory");
        if (!d->ref_is_kernel &&
            (st = kd_read_npy(d, &d->ref_npy[j], &s->cfg, d->args[d->outputs[j]].type, b->count,
                              d->args[d->outputs[j]].name, b->ref, err)) != TUNE_OK)
            return st == TUNE_ERR_IO || st == TUNE_ERR_INVALID ? TUNE_ERR_UNSUPPORTED : st;
    }
    if (d->ref_is_kernel) {
        kd_launch_t ref = {0};
        unsigned char found[KDECL_MAX_CONSTANTS] = {0};
        if (!(ref.kernel = family_kernel_at(s->env.family, &s->env, &s->cfg, s->n_cur, err)))
            return err ? err->code : TUNE_ERR_CUDA;
        if ((st = kd_geometry(s, &d->ref, &s->cfg, &ref, err)) != TUNE_OK ||
            (d->n_consts && (st = kd_consts_copy(d, &s->env, &s->cfg, s->n_cur, &s->consts, found,
                                                 err)) != TUNE_OK) ||
            (st = kd_run_once(s, &ref, 1, err)) != TUNE_OK)
            return st;
        for (size_t j = 0; j < d->n_outputs; j++) {
            kd_buf *b = &s->bufs[d->outputs[j]];
            if (cudaMemcpy(b->ref, b->ptr, b->bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
                return tune_error_set(err, TUNE_ERR_CUDA, "reference", "cannot read its output");
        }
    }
    s->ref_done = 1;
    return TUNE_OK;
}

static tune_status kd_check(void *state, double *error, double *tolerance, tune_error *err)
{
    kd_state *s = state;
    const kernel_decl *d = s->d;
    tune_status st = TUNE_OK;
    *error = NAN;
    *tolerance = d->use_atol ? 1.0 : d->tolerance;
    if (!s->ref_done && (st = kd_reference(s, err)) != TUNE_OK)
        return st;
    if ((st = kd_run_once(s, s->cur, s->n_cur, err)) != TUNE_OK)
        return st;
    kd_error acc = {0, 0, 0};
    for (size_t j = 0; st == TUNE_OK && j < d->n_outputs; j++) {
        kd_buf *b = &s->bufs[d->outputs[j]];
        void *host = malloc(b->bytes ? b->bytes : 1);
        if (!host)
            return tune_error_set(err, TUNE_ERR_NOMEM, "check", "out of host memory");
        if (cudaMemcpy(host, b->ptr, b->bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
            st = tune_error_set(err, TUNE_ERR_CUDA, "check", "cannot read the output");
        else
            kd_compare(d->args[d->outputs[j]].type, host, b->ref, b->count, d, &acc);
        free(host);
    }
    if (st != TUNE_OK)
        return st;
    if (d->use_atol)
        *error = acc.worst;
    else
        *error = acc.den > 0 ? sqrt(acc.num / acc.den) : acc.num > 0 ? INFINITY : 0;
    return TUNE_OK;
}

/* The GPU side of every declared family, registered as "kernel": a sweep's family takes its
 * name, help, flags and GPU functions from it (model/kernel_decl.h: kdecl_family_make). */
const tune_family declared_family = {
    .name = KDECL_FAMILY,
    .help = "a kernel declared in the sweep file (\"kernel\" section; docs/own-kernel.md)",
    .shape_init = kd_shape_init,
    .shape_free = kd_shape_free,
    .prepare = kd_prepare,
    .before_rep = kd_before_rep,
    .restores_inputs = 1,
    .launch = kd_launch,
    .check = kd_check,
};
