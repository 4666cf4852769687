/* family.h - the kernel-family interface. A family is a struct of function pointers plus its own
 * state, registered by name; the harness core knows nothing about gathers or GEMMs.
 *
 *   const tune_family *fam = family_find("gather_matmul");
 *   const family_op *op = family_find_op(fam, "gather_inner_bmv");
 *
 * A family declares its ops (each with its problem axes and default byte/FLOP models written in the
 * expression language), its tuning parameters, and its methods (the tuned kernel and baselines).
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

/* The traffic model of one method of an op (docs/roofline.md, "Traffic models"): what the
 * additive time model launches * floor + chain * latency + max(dram / read bandwidth, flops /
 * rate) (+ an issue-bound step, below) needs. Expressions over the problem axes and dsize, like
 * the byte model, and the device facts (family_traffic_device: sm_count and l2_bytes where the
 * caller knows them, for a fixed kernel's waves and the L2's capacity; fetch_bytes, the L2's DRAM
 * fetch granularity); sectors() and distinct() (core/expr.h) round to 32-byte sectors (or to a
 * unit) and count repeated rows once. */
typedef struct {
    const char *op;       /* the op it models; NULL: every op of the family */
    const char *method;   /* the method it models; NULL: every method without a model of its own */
    const char *dram;     /* bytes moved between DRAM and the L2, read + written */
    const char *launches; /* kernels launched (each pays the launch floor); NULL: "1" */
    const char *chain;    /* dependent DRAM round trips beyond the first load, which the floor
                             includes (a gather's row load waits for its index: 1); NULL: "0" */
    const char *flops;    /* FLOPs of the compute term; NULL: the row's own (the op's model) */
    const char *precision; /* the compute term's precision ("fp8"); NULL: the row's dtype */
    const char *help;      /* what the model counts (docs) */
    /* Optional: a kernel of the method that copies one element per thread and loop iteration
     * (the gather baseline's gm_gather), bound by its instructions: `issue` elements at the
     * measured seconds per element, or its own DRAM bytes `issue_dram` (part of dram) when
     * those take longer. NULL: no such step ("0"). */
    const char *issue;
    const char *issue_dram;
} family_traffic;

/* Optional, beside a traffic model (same op and method, matched as family_find_traffic matches):
 * the parts of its counts that move in an access pattern with a ceiling of its own. Expressions
 * as in family_traffic; NULL: "0". */
typedef struct {
    const char *op;
    const char *method;
    /* Of issue, the elements whose warp loads touch 32 different rows (a transposed source), at
     * the seconds per element measured on that pattern. */
    const char *issue_scattered;
    /* Of dram, the bytes read as random, independent 32-byte sectors (re-fetches of sectors the
     * L2 evicted), at the measured random-sector rate rather than the read bandwidth; counted in
     * issue_dram first when the method has an issue step. */
    const char *dram_random;
    /* Of issue_scattered, the elements gathered from a source that the L2 cannot hold (its
     * bytes above l2_bytes), whose warp loads wait for DRAM: at the seconds per element measured
     * on such a source. */
    const char *issue_scattered_dram;
} family_traffic_pattern;

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
} family_env;

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
    /* Optional: traffic models per op and method (NULL, 0: none; the time model then counts a
     * row's `bytes` as DRAM traffic, one launch, no chain). */
    const family_traffic *traffic;
    size_t n_traffic;
    /* Optional: the parts of those models' counts with a ceiling of their own (NULL, 0: none). */
    const family_traffic_pattern *traffic_patterns;
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
/* The traffic model of a method of an op: the entry naming both, else the op's entry for every
 * method (method NULL), else NULL. Entries with op NULL match every op. */
const family_traffic *family_find_traffic(const tune_family *fam, const char *op,
                                          const char *method);
/* The traffic pattern of a method of an op, found as family_find_traffic finds a model; NULL:
 * none. */
const family_traffic_pattern *family_find_traffic_pattern(const tune_family *fam, const char *op,
                                                          const char *method);

/* A traffic model's values at one point. */
typedef struct {
    double dram, launches, chain, flops;
    double issue, issue_dram; /* elements of the issue-bound step and its DRAM bytes (0: none) */
    double issue_scattered;   /* of issue, the elements of the scattered pattern (0: none) */
    double dram_random;       /* of dram, the bytes of random sectors (0: none) */
    double issue_scattered_dram; /* of issue_scattered, those from a source the L2 cannot hold */
} family_traffic_value;

/* Sets the device facts a traffic model may read into p: `sm_count` and `l2_bytes` when known
 * (> 0), and `fetch_bytes`, the L2's DRAM fetch granularity (32, 64 or 128; anything else, NAN
 * included, gives the 32-byte sector). 0, or -1 when p is full. */
int family_traffic_device(tune_point *p, int sm_count, double l2_bytes, double fetch_bytes);

/* Evaluates t at p (the problem axes and dsize); flops: the value when t->flops is NULL. An
 * expression that cannot be evaluated, or a value that is not a finite number >= 0, is an error
 * naming the method, the field and the expression. */
tune_status family_traffic_eval(const family_traffic *t, const tune_point *p, double flops,
                                family_traffic_value *out, tune_error *err);
/* Evaluates pattern t at p into out's issue_scattered, dram_random and issue_scattered_dram
 * (after family_traffic_eval, which sets them to 0); errors as family_traffic_eval's. */
tune_status family_traffic_pattern_eval(const family_traffic_pattern *t, const tune_point *p,
                                        family_traffic_value *out, tune_error *err);

/* What the time model divides by; NAN (or a value that is not finite) leaves its term out. */
typedef struct {
    double floor_s;   /* seconds per launch */
    double latency_s; /* seconds per dependent DRAM round trip */
    double bw;        /* DRAM bytes per second */
    double rate;      /* FLOPs per second at the compute term's precision */
    double elem_s;    /* seconds per element of an element-wise gather (the issue term) */
    double elem_scattered_s; /* the same gather from a transposed source (32 rows per warp load);
                                NAN: elem_s stands in */
    double sector_bw;        /* bytes per second of random 32-byte sectors, counting 32 bytes a
                                load; NAN: bw stands in */
    double elem_scattered_dram_s; /* the transposed gather over a source the L2 cannot hold;
                                     NAN (or 0): elem_scattered_s stands in */
} family_time_ceilings;

/* The additive time model of v (docs/roofline.md, "The time model"), written once for its two
 * users: the roofline model with measured ceilings (analysis/roofline_model.h) and sharding's
 * cost model with nominal ones (model/shard.h):
 *   launches x floor_s + chain x latency_s + max((dram - issue_dram) / bw, flops / rate)
 *     + max(issue x elem_s, issue_dram / bw)
 * (the issue-bound step runs in series with the rest; without one, or without elem_s, the model
 * is the three-term one over all of dram), where the issue_scattered elements cost
 * elem_scattered_s rather than elem_s (those of them in issue_scattered_dram
 * elem_scattered_dram_s) and the dram_random bytes (of issue_dram first) move at sector_bw rather
 * than bw; each of those ceilings, when NAN, falls back to the one it refines. Returns NAN when
 * neither dram / bw nor flops / rate is known. terms (optional) gets the seconds of the floor,
 * chain, transfer (every byte's transfer that no issue time hides), compute and issue terms in that
 * order, 0 for a term left out. */
double family_traffic_time(const family_traffic_value *v, const family_time_ceilings *c,
                           double terms[5]);

#endif
