/* mixed_gemm_impl.h - what the two halves of the mixed-input GEMM family share (private): the
 * description of a configuration and its checks (mixed_gemm_space.c, CPU only) and the GPU side
 * (mixed_gemm.c: inputs, packing, prepare, launch, check).
 *
 *   mg_desc d;
 *   char why[256];
 *   if (mg_describe(cfg, &d, why, sizeof why) != 0) ... // why: "category: details"
 */
#ifndef TUNE_MIXED_GEMM_IMPL_H
#define TUNE_MIXED_GEMM_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "model/family.h"
#include "model/traffic.h"

#define MG_SMEM_LIMIT (227 * 1024) /* opt-in shared memory per block on sm_90 */
/* what the kernels' static shared memory may take of it (the split-K finish's flag): a kernel whose
 * dynamic shared memory reaches the limit exactly would not launch */
#define MG_SMEM_STATIC 64
#define MG_UTIL "mixed_gemm_util.cu"
#define MG_STREAM_KERNEL "mg_stream<8>"
#define MG_STREAM_BLOCKS_PER_SM 8
#define MG_N_OPS 1
#define MG_N_PARAMS 9
#define MG_N_METHODS 10
#define MG_N_SHAPE_KERNELS 9

enum {
    MG_FUSED,
    MG_DEQUANT,
    MG_CUBLAS,
    MG_FP8,
    MG_PACK,
    MG_STREAM,
    MG_WGMMA,
    MG_WGMMA_WS,
    MG_GEMV,
    MG_MARLIN
};

/* The warpgroup-MMA kernels (sm_90a, X through a tensor map). */
#define MG_IS_WGMMA(method) ((method) == MG_WGMMA || (method) == MG_WGMMA_WS)

/* The tuned methods whose kernel takes the fused kernels' arguments (mg_launch). */
#define MG_TILED(method) ((method) == MG_FUSED || (method) == MG_GEMV || MG_IS_WGMMA(method))

typedef struct {
    int method;
    int bf16; /* dtype bfloat16 (else float16) */
    const char *tname;
    int zp;
    int64_t m, n, k, group, g_eff; /* g_eff: rows per scale (k when group == 0) */
    /* fused kernel geometry */
    int64_t bm, bn, bk, wm, wn, wk, stages, splitk, sa; /* wgmma: bm = mg_wgmma_rows */
    int64_t wstages; /* wgmma_ws: depth of the weight ring (the host's choice) */
    int64_t srw;     /* gemv: group rows per batch of bk rows */
    int gsh;
    size_t smem;
    unsigned grid[3], threads;
} mg_desc;

extern const family_op mg_ops[MG_N_OPS];
enum { MG_N_TRAFFIC = 7 };
extern const traffic_model mg_traffic[MG_N_TRAFFIC]; /* per method (docs/roofline.md) */
extern const family_axis mg_params[MG_N_PARAMS];
extern const family_method mg_methods[MG_N_METHODS];
/* Helper kernels every shape needs (inputs, packing, reference, error), as name formats. */
extern const char *const mg_shape_kernels[MG_N_SHAPE_KERNELS];

/* The row tile of the wgmma kernels for m rows and a sweep's bm (the most rows per block): m spread
 * evenly over ceil(m / bm) row blocks, rounded up to 8 (wgmma's N step), so that a partial row
 * block does not cost a whole one (m = 300, bm = 256: 2 blocks of 152 rows). */
int64_t mg_wgmma_rows(int64_t m, int64_t bm);
/* Describes cfg into d; -1 with `why` (a category, a colon, the details) when it cannot run. */
int mg_describe(const tune_point *cfg, mg_desc *d, char *why, size_t why_size);
/* The index of a method's name in mg_methods (MG_FUSED ...), -1 when unknown. */
int mg_method_index(const char *method);
/* Why d's tile is not one of its method's (static, "tile shape: ..."), or NULL: the structural
 * rules of each kernel (d: method and tile parameters), shared by mg_describe and mg_prune. */
const char *mg_tile_shape(const mg_desc *d);
/* The family's `prune` (mixed_gemm_rules.c): which of a sweep's tiles each method tries at a
 * shape (docs/mixed_gemm.md, "Which tiles are tried"). */
void mg_prune(const tune_family *fam, const tune_point *shape, const tune_point *params, size_t n,
              const char **why);
/* The Marlin baseline (mixed_gemm_marlin.c): the environment variable that names its library
 * (scripts/peers/marlin.sh), the library's entry point (ABI version 1,
 * scripts/peers/marlin_shim.cu: 0 enqueued, 1 or 2 Marlin's refusal of the shape, -e the CUDA error
 * e), and the most 64-row problems Marlin solves in parallel (its workspace: n / 128 of them,
 * ints). */
/* Raw q (k x n nibbles, row-major, low nibble = even column) packed into out (k n / 8 words) by
 * a layout's position map: the family's (mixed_gemm_packed_pos) or Marlin's. */
typedef void (*mg_pos_fn)(int64_t i, int64_t j, int64_t n, size_t *word, int *shift);
void mg_pack_nibbles(const uint8_t *q, int64_t k, int64_t n, uint32_t *out, mg_pos_fn pos);
#define MG_MARLIN_ENV "TUNE_MARLIN_LIB"
#define MG_MARLIN_SYMBOL "tune_marlin_mul_v1"
#define MG_MARLIN_MAX_PAR 16
typedef int (*mg_marlin_fn)(const void *x, const void *w, void *y, const void *s, int m, int n,
                            int k, void *workspace, int groupsize, int device, void *stream,
                            int sms, int max_par);
/* Whether Marlin runs d's shape: 0, or -1 with `why` ("marlin: ..."). */
int mg_marlin_shape(const mg_desc *d, char *why, size_t why_size);
/* The entry point of the library TUNE_MARLIN_LIB names (loaded once, never unloaded), or NULL
 * with `why` ("marlin: ...", naming the file and dlerror()'s text). */
mg_marlin_fn mg_marlin_open(char *why, size_t why_size);
/* The family's `kernels`: the method's kernels first, then the shape's (mg_shape_kernels). */
int mg_kernels(const tune_family *fam, const tune_point *cfg, family_kernel_ref *refs, size_t max,
               char *why, size_t why_size);

#endif
