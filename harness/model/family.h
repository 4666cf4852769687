/* family.h - the kernel-family interface. A family is a struct of function pointers plus its own
 * state, registered by name; the harness core knows nothing about gathers or GEMMs.
 *
 *   const tune_family *fam = family_find("gather_matmul");
 *   const family_op *op = family_find_op(fam, "gather_inner_bmv");
 *
 * A family declares its ops (each with its problem axes and default byte/FLOP models written in the
 * expression language), its tuning parameters, its methods (the tuned kernel and baselines) and,
 * optionally, traffic models per op and method (model/traffic.h, which also holds the time model).
 * CPU side: which kernel instantiations a configuration needs (compiled by the harness with NVRTC
 * from kernels_src/). GPU side: allocate and fill one shape's inputs, prepare one configuration,
 * regenerate per-rep inputs outside the timed region, launch the timed work, check against the
 * reference.
 *
 * Configuration points (tune_point) hold every problem axis, every parameter (tuned methods only),
 * "op" and "method" (strings) and "dsize" (the element size of the family's dtype_axis, when it
 * has one).
 *
 * The contract, besides the signatures below: kernels() lists every instantiation a
 * configuration needs, and marks (row = 1) the one its row names; the harness compiles the union
 * of the lists and loads them on first use (env->kernel). The harness creates a cuBLAS handle only
 * for families with needs_cublas. A program registers the families it offers (family_register)
 * before it reads a sweep: tune's main the built-in ones, the tests those and the fault-injection
 * family (families/families.h).
 */
#ifndef TUNE_FAMILY_H
#define TUNE_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/point.h"

typedef enum { FAMILY_AXIS_INT, FAMILY_AXIS_STR, FAMILY_AXIS_BOOL } family_axis_kind;

typedef struct {
    const char *name;
    family_axis_kind kind;
    int64_t min, max;           /* inclusive bounds for INT axes */
    const char *const *choices; /* NULL-terminated allowed values for STR axes */
    const char *dflt;           /* default as JSON text ("0", "false", "\"float16\""); NULL: required */
    const char *help;
} family_axis;

typedef struct {
    const char *name;
    const family_axis *axes; /* problem axes of this op */
    size_t n_axes;
    const char *bytes; /* default byte model (expression over axes and dsize) */
    const char *flops; /* default FLOP model */
    const char *help;
} family_op;

/* What a method is for, so that reports and plots need no table of method names: the tuned
 * kernels; the reference that speedups are measured against (at most one per family); other
 * baselines worth comparing with; auxiliary steps that are timed but are not the operation (weight
 * packing, a bound such as one read of the inputs), never drawn as a competitor. */
typedef enum {
    FAMILY_ROLE_TUNED,
    FAMILY_ROLE_REFERENCE,
    FAMILY_ROLE_BASELINE,
    FAMILY_ROLE_AUXILIARY
} family_method_role;

typedef struct {
    const char *name;
    int tuned; /* 1: uses the parameter axes; 0: a baseline, run once per shape */
    const char *help;
    family_method_role role; /* FAMILY_ROLE_TUNED exactly when tuned */
} family_method;

/* "tuned", "reference", "baseline", "auxiliary" (meta.json's sweep.methods). Inline, so that
 * the CPU library's users need not link the family registry. */
static inline const char *family_method_role_str(family_method_role role)
{
    static const char *const names[] = {"tuned", "reference", "baseline", "auxiliary"};
    return (unsigned)role < 4 ? names[role] : "baseline";
}

#define FAMILY_MAX_KERNELS 16

typedef struct {
    const char *source; /* file name under kernels_src/, e.g. "gather_matmul.cu", or an absolute
                           path (a kernel declared in a sweep file) */
    char name[256];     /* name expression: "gm_rows<half_t, 0, 128, 8, 256>" */
    char options[1024]; /* extra NVRTC options, one per line ("-DTILE=16"); "" for none; part of
                           the instantiation's identity (source, name, options) */
    int row;            /* 1: the kernel a tuned configuration's row names (raw.jsonl "kernel");
                           at most one per list; the harness zeroes the list before kernels() */
    int arch;           /* 0: any architecture (compiled for the target's); 90: only sm_90a, the
                           architecture-specific features (wgmma): a configuration that needs it
                           on another target is skipped with the reason */
} family_kernel_ref;

/* What the harness gives a family on the GPU. */
typedef struct {
    int device;      /* CUDA ordinal */
    void *stream;    /* cudaStream_t */
    void *cublas;    /* cublasHandle_t bound to stream */
    size_t l2_bytes; /* device L2 size */
    uint64_t seed;   /* random seed of the run */
    /* Returns the loaded kernel (a cudaKernel_t) for a ref the family listed (source, name and
     * options identify it), or NULL. */
    void *(*kernel)(void *kctx, const family_kernel_ref *ref);
    void *kctx;
    const struct tune_family *family; /* the family itself (a declared family reads its data) */
    /* Looks up the module-scope symbol name (a __constant__ variable) in the module of a ref the
     * family listed: 1 with its device address and bytes, 0 when that module has none, -1 when
     * the kernel is not loaded (err set). */
    int (*global)(void *kctx, const family_kernel_ref *ref, const char *name, void **ptr,
                  size_t *bytes, tune_error *err);
} family_env;

/* A family's traffic models and patterns (model/traffic.h), which only their users include. */
struct traffic_model;
struct traffic_pattern;

typedef struct tune_family {
    const char *name;
    const char *help;
    const family_op *ops;
    size_t n_ops;
    const family_axis *params;
    size_t n_params;
    const family_method *methods;
    size_t n_methods;
    /* The problem axis whose value, a dtype name ("float16"), gives the points' "dsize" (its
     * element size, for the byte models) and the rows' roofline precision; NULL: none. */
    const char *dtype_axis;
    /* 1: the family's GPU side uses env->cublas; the harness creates a cuBLAS handle only for
     * such families (env->cublas is NULL otherwise). */
    int needs_cublas;
    /* 1: before_rep restores inputs that the kernel overwrites (in-place kernels) or draws
     * inputs the sweep asks to redraw (a declared buffer's "redraw"), so it runs before every
     * rep whatever "fresh_indices" says. */
    int restores_inputs;
    /* A family declared in a sweep file (model/kernel_decl.h): its declaration, which its
     * functions read through fam (kernels) or env->family (the GPU side); NULL for the shipped
     * families. */
    const void *data;
    /* Optional: traffic models per op and method (model/traffic.h; NULL, 0: none; the time model
     * then counts a row's `bytes` as DRAM traffic, one launch, no chain). */
    const struct traffic_model *traffic;
    size_t n_traffic;
    /* Optional: the parts of those models' counts with a ceiling of their own (NULL, 0: none). */
    const struct traffic_pattern *traffic_patterns;
    size_t n_traffic_patterns;

    /* CPU. Kernel instantiations cfg needs (method included): fills refs, returns their count,
     * or -1 with `why` when the configuration cannot run (recorded as skipped). fam is the
     * family itself (a declared family reads its data). */
    int (*kernels)(const struct tune_family *fam, const tune_point *cfg, family_kernel_ref *refs,
                   size_t max, char *why, size_t why_size);
    /* CPU, optional (NULL: every point is tried). The family's own tile rules: which of the
     * sweep's parameter points a tuned method tries at one shape. shape: the problem values,
     * "op", "dsize" and "method"; params[0..n): the sweep's parameter points (the same names in
     * the same order in each). Sets why[i] to NULL to keep point i, else to a static string, the
     * rule that leaves it out (not a configuration of the method, or one that cannot win at
     * this shape). The space counts what it leaves out as pruned, as it counts skip_if's, unless
     * the sweep says "family_rules": false. */
    void (*prune)(const struct tune_family *fam, const tune_point *shape, const tune_point *params,
                  size_t n, const char **why);

    /* GPU. Allocates and fills one shape's inputs (random, never zeros). NULL with err set;
     * TUNE_ERR_OOM means the shape does not fit. */
    void *(*shape_init)(const family_env *env, const tune_point *shape, tune_error *err);
    void (*shape_free)(void *state);
    /* Selects the configuration (method + parameters) for the calls below. */
    tune_status (*prepare)(void *state, const tune_point *cfg, tune_error *err);
    /* Regenerates per-rep inputs (fresh indices) outside the timed region. Optional (NULL).
     * Called only with "fresh_indices" unless restores_inputs is set. */
    tune_status (*before_rep)(void *state, unsigned rep, tune_error *err);
    /* Enqueues the timed work on env->stream. */
    tune_status (*launch)(void *state, tune_error *err);
    /* Poisons the output, runs the configuration once, compares with the reference:
     * *error = normalised error, *tolerance = the bound it must stay under. */
    tune_status (*check)(void *state, double *error, double *tolerance, tune_error *err);
} tune_family;

/* Helpers every family shares. family_fail formats why (a configuration the family cannot run,
 * in kernels()) and returns -1. family_kernel returns the loaded kernel ref names through
 * env->kernel, or NULL with err set ("kernel NAME is not loaded"); family_kernel_named does so
 * for a shipped kernel without options. */
int family_fail(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void *family_kernel(const family_env *env, const family_kernel_ref *ref, tune_error *err);
void *family_kernel_named(const family_env *env, const char *source, const char *name,
                          tune_error *err);
/* The i-th kernel of the list fam->kernels(cfg) gives, loaded (through family_kernel): how a
 * family's shape_init and prepare take their kernels, so that each name is written once, where
 * kernels() lists it. NULL with err set. */
void *family_kernel_at(const tune_family *fam, const family_env *env, const tune_point *cfg,
                       size_t i, tune_error *err);

/* The symbol name in the module of the i-th kernel of fam->kernels(cfg) (through env->global):
 * 1 with its address and bytes, 0 when that module has none, -1 with err. */
int family_global_at(const tune_family *fam, const family_env *env, const tune_point *cfg,
                     size_t i, const char *name, void **ptr, size_t *bytes, tune_error *err);

/* The registry (as ggml's backends register themselves): a program registers each family it
 * offers before it reads a sweep, and before it starts threads (the registry takes no lock).
 * Returns 0; registering a family again is a no-op; -1 when FAMILY_MAX are registered or another
 * family has its name. */
#define FAMILY_MAX 16
int family_register(const tune_family *fam);
/* The registered families in the order registered, NULL-terminated. */
const tune_family *const *family_all(void);
const tune_family *family_find(const char *name);
const family_op *family_find_op(const tune_family *fam, const char *op);
const family_method *family_find_method(const tune_family *fam, const char *method);
/* Sets p's "dsize", the element size of its value of fam's dtype_axis. 0 also when fam has no
 * dtype axis or p no value of it (nothing set); -1 when the dtype has no known size. */
int family_set_dsize(const tune_family *fam, tune_point *p);

#endif
