/* kernel_decl.h - a kernel family declared in a sweep file: "family": "kernel" and a "kernel"
 * section name a .cu file, its entry point, arguments, launch geometry, reference and baselines
 * (docs/sweep-format.md, docs/own-kernel.md). The sweep module parses the section into a
 * kernel_decl and builds the family from it (kdecl_family); the family's GPU side
 * (families/declared.c) reads the declaration through tune_family.data.
 *
 *   "kernel": {
 *     "source": "matmul.cu",                   relative to the sweep file
 *     "entry": "matmul<{tile}>",               name expression; {expr} is replaced by its value
 *     "defines": {"TILE": "{tile}"},           -D macros, values with {expr}
 *     "include_dirs": ["../cutlass/include"],  "options": ["-use_fast_math"],
 *     "args": [{"name": "A", "type": "float32", "count": "m * k", "init": {"normal": [0, 1]},
 *               "redraw": true},                 drawn again before every timed rep
 *              {"name": "C", "type": "float32", "count": "m * n", "role": "out"},
 *              {"name": "m", "type": "int32", "value": "m"}],
 *     "grid": ["n / tile", "m / tile"], "block": ["tile", "tile"], "shared": "0",
 *     "reference": {"entry": "matmul_naive", "grid": ..., "block": ...} | {"npy": {"C": "c.npy"}},
 *     "check": {"outputs": ["C"], "tolerance": 1e-5} | {"atol": 1e-3, "rtol": 1e-3},
 *     "baselines": {"naive": {"entry": "matmul_naive", "grid": ..., "block": ...}},
 *     "constants": [{"name": "d_filter", "type": "float32", "count": "fw * fh",
 *                    "init": {"uniform": [0, 1]}}]       __constant__ symbols filled from the host
 *   }
 * A method of several launches: "launches": [{"entry", "grid", "block", "args": ["x", "part"]},
 * ...] instead of the tuned kernel's entry, defines, grid, block and shared; each launch names
 * the arguments it receives; buffers with "role": "scratch" carry values between them.
 * Methods: "kernel" (tuned: the parameters apply), "reference" (when the reference is a kernel)
 * and one per baseline; the reference and the baselines read problem axes only, unless the
 * reference has "per_config": true (it then runs per configuration and is no method).
 */
#ifndef TUNE_KERNEL_DECL_H
#define TUNE_KERNEL_DECL_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/expr.h"
#include "core/point.h"
#include "model/family.h"

#define KDECL_FAMILY "kernel"     /* the family name of declared kernels */
#define KDECL_TUNED "kernel"      /* the tuned method */
#define KDECL_REFERENCE "reference" /* the reference kernel as a timed method */
#define KDECL_MAX_PATH 1024         /* compile_job.source */

typedef enum {
    KDECL_F32, KDECL_F64, KDECL_F16, KDECL_BF16,
    KDECL_I8, KDECL_U8, KDECL_I16, KDECL_U16, KDECL_I32, KDECL_U32, KDECL_I64, KDECL_U64,
    KDECL_N_TYPES
} kdecl_type;

size_t kdecl_type_size(kdecl_type t);
const char *kdecl_type_name(kdecl_type t); /* "float32" */
int kdecl_type_is_float(kdecl_type t);
/* The type named s ("float32", "half" ...); -1 when unknown. */
int kdecl_type_parse(const char *s);
/* "float32, float64, ..." for messages. */
const char *kdecl_type_list(void);
/* A CUDA vector type ("float4", "half2", "int2"...): its lane type, and *lanes; -1 when s is none.
 * A buffer of count vectors is declared as count * lanes elements of the lane type: random inits
 * fill every lane, the check compares lane by lane, a .npy file holds count * lanes values. */
int kdecl_vector_parse(const char *s, int *lanes);
/* The .npy descr of t after its byte-order character ("f4"; bfloat16: "V2"). */
const char *kdecl_type_npy(kdecl_type t);

/* A string with {expr} holes ("matmul<{tile}, {2 * warps}>"); "{{" and "}}" are braces. */
typedef struct {
    size_t n;
    char **text; /* n literal pieces (may be ""), each followed by exprs[i] when exprs[i] */
    expr **exprs;
} kdecl_template;

/* The text of t at p: integers in decimal, floats as %.17g, strings as they are. -1 with err. */
int kdecl_render(const kdecl_template *t, const tune_point *p, char *buf, size_t size,
                 tune_error *err);

typedef enum {
    KDECL_INIT_ZERO,        /* outputs: zeros (poisoned before each check) */
    KDECL_INIT_NORMAL,      /* a = mean, b = standard deviation */
    KDECL_INIT_UNIFORM,     /* [a, b) */
    KDECL_INIT_INTEGERS,    /* lo..hi inclusive (expressions) */
    KDECL_INIT_PERMUTATION, /* the first count values of a random permutation of 0..hi-1 */
    KDECL_INIT_CONSTANT,    /* a */
    KDECL_INIT_NPY          /* a .npy file (path template, relative to the sweep file) */
} kdecl_init_kind;

typedef struct {
    kdecl_init_kind kind;
    double a, b;
    expr *lo, *hi;
    kdecl_template npy;
} kdecl_init;

/* scratch: a buffer the launches of a method pass between them: zeros at allocation, never
 * restored, poisoned or checked, and left out of the default byte model. */
typedef enum { KDECL_IN, KDECL_OUT, KDECL_INOUT, KDECL_SCRATCH } kdecl_role;

typedef struct {
    char *name;
    kdecl_type type;
    int is_buffer;
    expr *count; /* buffers: elements */
    kdecl_role role;
    kdecl_init init;
    int redraw;  /* random inputs: drawn again before every timed rep (the check sees the first) */
    expr *value; /* scalars */
} kdecl_arg;

/* A kernel to launch: the tuned one, the reference or a baseline. */
typedef struct {
    char *source; /* absolute path */
    kdecl_template entry;
    size_t n_defines;
    char **define_names;
    kdecl_template *define_values;
    int grid_dims, block_dims;
    expr *grid[3], *block[3];
    expr *shared; /* bytes of dynamic shared memory */
    size_t *argv; /* the arguments it receives (indices into kernel_decl.args); NULL: all */
    size_t argc;
} kdecl_kernel;

#define KDECL_MAX_LAUNCHES 8    /* launches of one method ("launches") */
#define KDECL_MAX_CONSTANTS 16  /* __constant__ symbols filled from the host ("constants") */
#define KDECL_CONSTANT_BYTES 65536 /* the constant memory a kernel can address */

typedef struct {
    char *dir;     /* the sweep file's folder (absolute) */
    char *options; /* "-I<dir>\n...\n<option>": include folders and options, shared by all */
    kdecl_kernel main;           /* the tuned method's (first) launch */
    kdecl_kernel *after;         /* "launches": the tuned method's launches after main, in order */
    size_t n_after;
    kdecl_arg *args;
    size_t n_args;
    kdecl_arg *consts;           /* "constants": __constant__ symbols (count, type, init) */
    size_t n_consts;
    int ref_is_kernel;
    int ref_per_config;          /* the reference reads parameters: it runs per configuration */
    kdecl_kernel ref;            /* when ref_is_kernel */
    kdecl_template *ref_npy;     /* otherwise: per compared output (n_outputs) */
    size_t *outputs;             /* indices into args of the compared buffers */
    size_t n_outputs;
    int use_atol;                /* check: |y - r| <= atol + rtol |r| instead of the norm */
    double tolerance, atol, rtol;
    size_t n_baselines;
    char **baseline_names;
    kdecl_kernel *baselines;
} kernel_decl;

/* The family a sweep declares: the sweep's op, axes, parameters and methods and the declaration,
 * and fam, the tune_family built from them and the registered "kernel" family's GPU side
 * (kdecl_family_make). */
typedef struct kdecl_family {
    tune_family fam;
    family_op op;
    family_axis *axes, *params; /* names owned */
    size_t n_axes, n_params;
    family_method *methods;
    size_t n_methods;
    char *bytes; /* the default byte model, derived from the buffers; NULL: none */
    kernel_decl decl;
} kdecl_family;

/* The device fill of random inputs (kernels_src/common.cu): its name for buffers of type t; and
 * whether an init is done on the device (normal, uniform, integers: large buffers are filled
 * in place) or on the host (permutation, constant, npy). */
#define KDECL_FILL_SOURCE "common.cu"
const char *kdecl_fill_kernel(kdecl_type t);
int kdecl_init_on_device(const kdecl_init *in);
/* 1 when buffer a needs the device fill: its first values drawn there, or drawn again
 * ("redraw"). */
int kdecl_arg_uses_fill(const kdecl_arg *a);

/* tune_family.kernels of a declared family: the method's launches first, in order (the first is
 * the row's), then the reference kernel (when there is one), then the fill kernels of the random
 * inputs. */
int kdecl_family_kernels(const tune_family *fam, const tune_point *cfg, family_kernel_ref *refs,
                         size_t max, char *why, size_t why_size);
void kdecl_family_free(kdecl_family *kf);
/* The tune_family of kf, every field set here: the description from kf (its one op, its
 * parameters and methods, no dtype axis, no traffic model; the declaration as data), the CPU side
 * kdecl_family_kernels and kdecl_family_prune, which read the declaration, and the GPU side from
 * gpu, the registered "kernel" family (families/declared.c): its name, help, needs_cublas,
 * restores_inputs and GPU functions. The result borrows kf's arrays and gpu's strings. */
tune_family kdecl_family_make(const kdecl_family *kf, const tune_family *gpu);
/* tune_family.prune of a declared family: leaves out the configurations whose launch breaks a
 * limit every CUDA device has (threads per block, block and grid dimensions), with the limit as
 * the reason, before they are compiled. */
void kdecl_family_prune(const tune_family *fam, const tune_point *shape, const tune_point *params,
                        size_t n, const char **why);

/* A file the sweep names (rel) as an absolute path: rel itself when it starts with '/', else
 * relative to d->dir, the sweep file's folder. New (free it); NULL when out of memory. */
TUNE_MUST_CHECK char *kdecl_path(const kernel_decl *d, const char *rel);

/* The kernel a method launches (first): main, the reference or a baseline; NULL when unknown. */
const kdecl_kernel *kdecl_method_kernel(const kernel_decl *d, const char *method);
/* Launch i of a method's sequence (0: kdecl_method_kernel's), NULL past its end; and their
 * number (the tuned method: 1 + n_after; the others: 1; 0 for an unknown method). */
const kdecl_kernel *kdecl_method_launch(const kernel_decl *d, const char *method, size_t i);
size_t kdecl_method_n_launches(const kernel_decl *d, const char *method);
/* 1 when a launch of method receives args[arg] (a launch without "args" receives them all): the
 * buffers and scalars a method does not receive are neither sized nor evaluated for it, so that a
 * scratch buffer sized by a parameter does not stop the reference. */
int kdecl_method_receives(const kernel_decl *d, const char *method, size_t arg);
/* The bytes constant c takes at p (count x element size), or -1 with err when its count cannot
 * be evaluated or exceeds KDECL_CONSTANT_BYTES. */
long long kdecl_const_bytes(const kdecl_arg *c, const tune_point *p, tune_error *err);
/* The instantiation k needs at p: source, rendered entry, options (shared ones and -D macros). */
int kdecl_kernel_ref(const kernel_decl *d, const kdecl_kernel *k, const tune_point *p,
                     family_kernel_ref *ref, char *why, size_t why_size);

#endif
