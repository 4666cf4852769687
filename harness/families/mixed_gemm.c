/* mixed_gemm.c - the mixed-input GEMM family (docs/mixed_gemm.md):
 * Y[m,n] = X[m,k] . dequant(W)[k,n], int4 W with per-group scales (and optionally zero points),
 * fp16/bf16 X and Y, fp32 accumulation.
 *
 * Methods: `fused` (tuned: kernels_src/mixed_gemm.cu over its tile space), `gemv` (tuned: the
 * warp-streaming kernel of kernels_src/mixed_gemm_gemv.cu for small m), `wgmma` and `wgmma_ws`
 * (tuned: the warpgroup-MMA kernels of kernels_src/mixed_gemm_wgmma.cu), `dequant` (tuned: the
 * packed weight dequantized to T, then cuBLAS; it has no tile parameters, so a sweep measures it
 * at one parameter point), and the baselines `cublas` (cuBLAS GEMM in T on the weight dequantized
 * beforehand), `fp8` (cuBLASLt e4m3 GEMM, per-tensor scales, inputs converted beforehand) and
 * `pack` (the packing of the weight, scales and zero points into the fused kernel's layout, timed
 * on its own: it happens once per weight, never inside a timed GEMM) and `stream` (one read of
 * the packed weight, scales and zero points: the floor of any W4A16 kernel on the shape), and
 * `marlin` (Marlin, IST-DASLab/marlin, from the library TUNE_MARLIN_LIB names, loaded by
 * mixed_gemm_marlin.c, on the weight and scales packed on the host into its format).
 * This file is the GPU side; the description of a configuration is mixed_gemm_space.c's.
 */
#include "model/family.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h> /* CUtensorMap and its encoder's signature (called through the runtime) */
#include <cuda_runtime_api.h>

#include "device/gpu.h"
#include "mixed_gemm.h"
#include "mixed_gemm_impl.h"

extern const tune_family mixed_gemm_family;

#define MG_LT_WORKSPACE ((size_t)32 << 20)

typedef struct {
    family_env env;
    mg_desc shape; /* the shape's description (method fields unused) */
    mg_desc cur;   /* the prepared configuration */
    size_t n_q, n_sz, n_x, n_y, n_w;
    unsigned char *q, *zr; /* raw weight nibbles, raw zero points (NULL: symmetric) */
    void *s;               /* raw scales (T) */
    void *wp, *sp, *zp;    /* packed weight, permuted scales, MAGIC + z (T) */
    void *x, *y;           /* X and Y (T) */
    float *ref;            /* fp32 reference of Y */
    double *sums;          /* error reduction */
    void *wd;              /* dequantized weight (T), cublas and dequant methods */
    int wd_raw;            /* wd holds the raw dequantization (cublas), not the dequant path's */
    void *w8, *x8;         /* fp8 inputs */
    float fp8_alpha;
    float *ws; /* split-K partials */
    size_t ws_bytes;
    int *counters;
    size_t n_counters;
    unsigned *xor_out;   /* the stream method's XOR words, one per block */
    mg_marlin_fn marlin; /* the marlin baseline's entry point (TUNE_MARLIN_LIB) */
    void *mw, *ms;       /* its weight and scales in Marlin's format */
    int *mws;            /* its workspace, zeroed once (Marlin leaves it zeroed) */
    int sms;             /* multiprocessors of the device (queried once per shape) */
    cublasLtHandle_t lt;
    void *lt_ws;
    cublasLtMatmulDesc_t lt_op;
    cublasLtMatrixLayout_t lt_a, lt_b, lt_c;
    cublasLtMatmulAlgo_t lt_algo;
    int lt_ready;
    void *k_fill_bytes, *k_fill_zeros, *k_fill_scales, *k_pack_w, *k_pack_sz, *k_to_f32, *k_error,
        *k_deq_f32, *k_fill_x;
    void *k_main;                /* the prepared configuration's kernel */
    unsigned long long xmap[16]; /* the wgmma methods' tensor map of X (a CUtensorMap) */
    unsigned long long wmap[16]; /* the warp-specialized one's of the packed weight, */
    unsigned long long smap[16]; /* of the scales */
    unsigned long long zmap[16]; /* and of the zero points */
} mg_state;

/* The stream method's grid: MG_STREAM_BLOCKS_PER_SM blocks of 256 threads per multiprocessor. */
static size_t mg_stream_blocks(const mg_state *s)
{
    return (size_t)s->sms * MG_STREAM_BLOCKS_PER_SM;
}

static void *mg_kernel(mg_state *s, const char *source, const char *fmt, const mg_desc *d,
                       tune_error *err)
{
    char name[256];
    snprintf(name, sizeof name, fmt, d->tname, d->zp);
    return family_kernel_named(&s->env, source, name, err);
}

static unsigned mg_grid(size_t n)
{
    size_t g = n / 256 + 1;
    return (unsigned)(g < 8192 ? g : 8192);
}

static tune_status mg_run1(mg_state *s, void *kernel, size_t n, void **args, tune_error *err)
{
    return gpu_launch(kernel, mg_grid(n), 256, 0, s->env.stream, args, err);
}

static tune_status mg_cublas_fail(tune_error *err, const char *call, cublasStatus_t rc)
{
    return tune_error_set(err, TUNE_ERR_CUBLAS, call, "%s (%s)", cublasGetStatusString(rc),
                          cublasGetStatusName(rc));
}

static void mg_lt_free(mg_state *s)
{
    if (s->lt_a)
        cublasLtMatrixLayoutDestroy(s->lt_a);
    if (s->lt_b)
        cublasLtMatrixLayoutDestroy(s->lt_b);
    if (s->lt_c)
        cublasLtMatrixLayoutDestroy(s->lt_c);
    if (s->lt_op)
        cublasLtMatmulDescDestroy(s->lt_op);
    if (s->lt)
        cublasLtDestroy(s->lt);
    s->lt_a = s->lt_b = s->lt_c = NULL;
    s->lt_op = NULL;
    s->lt = NULL;
    s->lt_ready = 0;
}

static void mg_shape_free(void *state)
{
    mg_state *s = state;
    if (!s)
        return;
    mg_lt_free(s);
    void *bufs[] = {s->q,        s->zr,    s->s,       s->wp, s->sp, s->zp, s->x,
                    s->y,        s->ref,   s->sums,    s->wd, s->w8, s->x8, s->ws,
                    s->counters, s->lt_ws, s->xor_out, s->mw, s->ms, s->mws};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        gpu_free(bufs[i]);
    free(s);
}

/* Packs the weight, the scales and the zero points into the fused layout. */
static tune_status mg_pack(mg_state *s, tune_error *err)
{
    long long k = s->shape.k, n = s->shape.n, groups = s->shape.k / s->shape.g_eff;
    void *a1[] = {&s->q, &s->wp, &k, &n};
    tune_status st = mg_run1(s, s->k_pack_w, s->n_q / 4, a1, err);
    void *a2[] = {&s->s, &s->zr, &s->sp, &s->zp, &groups, &n};
    return st ? st : mg_run1(s, s->k_pack_sz, s->n_sz, a2, err);
}

/* The fp32 reference Y = X . dequant(W): cuBLAS fp32 (pedantic: no TF32) on fp32 copies. */
static tune_status mg_reference(mg_state *s, tune_error *err)
{
    const mg_desc *d = &s->shape;
    float *wf = NULL, *xf = NULL;
    tune_status st;
    long long k = d->k, n = d->n, group = d->g_eff, nx = (long long)s->n_x;
    if ((st = gpu_malloc((void **)&wf, (size_t)(k * n) * 4, err)) ||
        (st = gpu_malloc((void **)&xf, s->n_x * 4, err)))
        goto done;
    void *a1[] = {&s->q, &s->s, &s->zr, &wf, &k, &n, &group};
    void *a2[] = {&s->x, &xf, &nx};
    if ((st = mg_run1(s, s->k_deq_f32, (size_t)(k * n), a1, err)) ||
        (st = mg_run1(s, s->k_to_f32, s->n_x, a2, err)))
        goto done;
    const float one = 1.f, zero = 0.f;
    cublasStatus_t rc =
        cublasGemmEx((cublasHandle_t)s->env.cublas, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)d->m,
                     (int)k, &one, wf, CUDA_R_32F, (int)n, xf, CUDA_R_32F, (int)k, &zero, s->ref,
                     CUDA_R_32F, (int)n, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT);
    if (rc != CUBLAS_STATUS_SUCCESS) {
        st = mg_cublas_fail(err, "cublasGemmEx (fp32 reference)", rc);
        goto done;
    }
    GPU_CHECK(cudaStreamSynchronize((cudaStream_t)s->env.stream), err, st, done);
done:
    gpu_free(wf);
    gpu_free(xf);
    return st;
}

static void *mg_shape_init(const family_env *env, const tune_point *shape, tune_error *err)
{
    mg_state *s = calloc(1, sizeof *s);
    char why[256];
    tune_point p = *shape;
    point_set_str(&p, "method", "cublas");
    if (!s) {
        tune_error_set(err, TUNE_ERR_NOMEM, "mixed_gemm", "out of memory");
        return NULL;
    }
    s->env = *env;
    int rc = cudaDeviceGetAttribute(&s->sms, cudaDevAttrMultiProcessorCount, env->device);
    if (rc != cudaSuccess) {
        gpu_fail(err, rc, "cudaDeviceGetAttribute", __FILE__, __LINE__);
        goto fail;
    }
    if (mg_describe(&p, &s->shape, why, sizeof why) != 0) {
        tune_error_set(err, TUNE_ERR_UNSUPPORTED, "mixed_gemm", "%s", why);
        goto fail;
    }
    const mg_desc *d = &s->shape;
    s->n_q = (size_t)(d->k * d->n / 2);
    s->n_sz = (size_t)(d->k / d->g_eff * d->n);
    s->n_x = (size_t)(d->m * d->k);
    s->n_y = (size_t)(d->m * d->n);
    s->n_w = (size_t)(d->k * d->n);
    const char *u = MG_UTIL;
    if (!(s->k_fill_bytes = mg_kernel(s, u, mg_shape_kernels[0], d, err)) ||
        !(s->k_fill_zeros = mg_kernel(s, u, mg_shape_kernels[1], d, err)) ||
        !(s->k_fill_scales = mg_kernel(s, u, mg_shape_kernels[2], d, err)) ||
        !(s->k_pack_w = mg_kernel(s, u, mg_shape_kernels[3], d, err)) ||
        !(s->k_pack_sz = mg_kernel(s, u, mg_shape_kernels[4], d, err)) ||
        !(s->k_to_f32 = mg_kernel(s, u, mg_shape_kernels[5], d, err)) ||
        !(s->k_error = mg_kernel(s, u, mg_shape_kernels[6], d, err)) ||
        !(s->k_deq_f32 = mg_kernel(s, u, mg_shape_kernels[7], d, err)) ||
        !(s->k_fill_x = mg_kernel(s, "common.cu", mg_shape_kernels[8], d, err)))
        goto fail;
    if (gpu_malloc((void **)&s->q, s->n_q, err) || gpu_malloc(&s->s, s->n_sz * 2, err) ||
        (d->zp && gpu_malloc((void **)&s->zr, s->n_sz, err)) || gpu_malloc(&s->wp, s->n_q, err) ||
        gpu_malloc(&s->sp, s->n_sz * 2, err) || (d->zp && gpu_malloc(&s->zp, s->n_sz * 2, err)) ||
        gpu_malloc(&s->x, s->n_x * 2, err) || gpu_malloc(&s->y, s->n_y * 2, err) ||
        gpu_malloc((void **)&s->ref, s->n_y * 4, err) ||
        gpu_malloc((void **)&s->sums, 3 * sizeof(double), err))
        goto fail;
    long long nq = (long long)s->n_q, nsz = (long long)s->n_sz;
    unsigned long long sq = env->seed ^ 0x9a17ull, ss = env->seed ^ 0x5ca1eull,
                       sz = env->seed ^ 0x2e40ull, sx = env->seed ^ 0xa11ceull;
    unsigned long long nx = s->n_x;
    float lo = 0.004f; /* scales in [0.004, 0.008): |Y| ~ 1 for k = 8192 */
    void *a1[] = {&s->q, &nq, &sq};
    void *a2[] = {&s->s, &nsz, &ss, &lo};
    void *a3[] = {&s->zr, &nsz, &sz};
    void *a4[] = {&s->x, &nx, &sx};
    if (mg_run1(s, s->k_fill_bytes, s->n_q, a1, err) ||
        mg_run1(s, s->k_fill_scales, s->n_sz, a2, err) ||
        (d->zp && mg_run1(s, s->k_fill_zeros, s->n_sz, a3, err)) ||
        mg_run1(s, s->k_fill_x, s->n_x, a4, err) || mg_pack(s, err) || mg_reference(s, err))
        goto fail;
    return s;
fail:
    mg_shape_free(s);
    return NULL;
}

static tune_status mg_grow(void **p, size_t *have, size_t want, tune_error *err)
{
    if (*have >= want)
        return TUNE_OK;
    gpu_free(*p);
    *p = NULL;
    *have = 0;
    tune_status st = gpu_malloc(p, want, err);
    if (st == TUNE_OK)
        *have = want;
    return st;
}

/* cuBLASLt fp8 e4m3 GEMM: D (n x m, column-major = Y row-major) = alpha . W8^T (n x k) . X8. */
static tune_status mg_lt_setup(mg_state *s, tune_error *err)
{
    const mg_desc *d = &s->shape;
    cublasStatus_t rc;
    const char *call = "cublasLtCreate";
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cudaDataType_t yt = d->bf16 ? CUDA_R_16BF : CUDA_R_16F;
    if ((rc = cublasLtCreate(&s->lt)) != CUBLAS_STATUS_SUCCESS)
        goto fail;
    call = "cublasLtMatmulDescCreate";
    if ((rc = cublasLtMatmulDescCreate(&s->lt_op, CUBLAS_COMPUTE_32F, CUDA_R_32F)) ||
        (rc = cublasLtMatmulDescSetAttribute(s->lt_op, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                             sizeof ta)) ||
        (rc =
             cublasLtMatmulDescSetAttribute(s->lt_op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb)))
        goto fail;
    call = "cublasLtMatrixLayoutCreate";
    if ((rc = cublasLtMatrixLayoutCreate(&s->lt_a, CUDA_R_8F_E4M3, (uint64_t)d->k, (uint64_t)d->n,
                                         d->k)) ||
        (rc = cublasLtMatrixLayoutCreate(&s->lt_b, CUDA_R_8F_E4M3, (uint64_t)d->k, (uint64_t)d->m,
                                         d->k)) ||
        (rc = cublasLtMatrixLayoutCreate(&s->lt_c, yt, (uint64_t)d->n, (uint64_t)d->m, d->n)))
        goto fail;
    cublasLtMatmulPreference_t pref = NULL;
    size_t wsb = MG_LT_WORKSPACE;
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    call = "cublasLtMatmulAlgoGetHeuristic";
    if ((rc = cublasLtMatmulPreferenceCreate(&pref)) == CUBLAS_STATUS_SUCCESS &&
        (rc = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &wsb, sizeof wsb)) == CUBLAS_STATUS_SUCCESS)
        rc = cublasLtMatmulAlgoGetHeuristic(s->lt, s->lt_op, s->lt_a, s->lt_b, s->lt_c, s->lt_c,
                                            pref, 1, &res, &found);
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (rc != CUBLAS_STATUS_SUCCESS)
        goto fail;
    if (found < 1) {
        mg_lt_free(s);
        return tune_error_set(err, TUNE_ERR_UNSUPPORTED, "cublasLtMatmulAlgoGetHeuristic",
                              "no fp8 algorithm for m = %lld, n = %lld, k = %lld", (long long)d->m,
                              (long long)d->n, (long long)d->k);
    }
    s->lt_algo = res.algo;
    tune_status st = gpu_malloc(&s->lt_ws, MG_LT_WORKSPACE, err);
    if (st != TUNE_OK)
        return st;
    s->lt_ready = 1;
    return TUNE_OK;
fail:
    mg_lt_free(s);
    return mg_cublas_fail(err, call, rc);
}

/* The split-K workspace (splitk fp32 partial tiles of Y) and one zeroed counter per tile; for
 * stream-K (splitk 0) one fp32 tile per block of the persistent grid (one per multiprocessor) and
 * a zeroed flag per block. */
static tune_status mg_prepare_split(mg_state *s, const mg_desc *d, tune_error *err)
{
    tune_status st = TUNE_OK;
    size_t tiles = (size_t)d->grid[0] * d->grid[1];
    size_t bytes = (size_t)d->splitk * s->n_y * 4;
    if (d->splitk == 0) {
        tiles = (size_t)s->sms;
        bytes = (size_t)s->sms * (size_t)(d->bm * d->bn) * 4;
    }
    if ((st = mg_grow((void **)&s->ws, &s->ws_bytes, bytes, err)))
        return st;
    if (tiles > s->n_counters) {
        gpu_free(s->counters);
        s->counters = NULL;
        s->n_counters = 0;
        if ((st = gpu_malloc((void **)&s->counters, tiles * sizeof(int), err)))
            return st;
        s->n_counters = tiles;
        GPU_CHECK(cudaMemsetAsync(s->counters, 0, tiles * sizeof(int), (cudaStream_t)s->env.stream),
                  err, st, done);
    }
done:
    return st;
}

typedef CUresult (*mg_encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                 const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                 const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

/* The tensor-map encoder: a driver function, reached through the runtime so that tune does not
 * link the driver. */
static mg_encode_fn mg_encoder(tune_error *err)
{
    static mg_encode_fn encode;
    enum cudaDriverEntryPointQueryResult q;
    if (!encode && (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void **)&encode,
                                                     12000, cudaEnableDefault, &q) != cudaSuccess ||
                    q != cudaDriverEntryPointSuccess || !encode)) {
        encode = NULL;
        tune_error_set(err, TUNE_ERR_CUDA, "mixed_gemm",
                       "the driver has no cuTensorMapEncodeTiled (TMA)");
    }
    return encode;
}

/* One tensor map into out (a CUtensorMap's 128 bytes): rank 2 or 3, dim[] and box[] from the
 * innermost dimension, stride[] the bytes between the outer dimensions' elements; what names the
 * tensor in the error. */
static tune_status mg_encode_map(void *out, CUtensorMapDataType type, cuuint32_t rank, void *base,
                                 const cuuint64_t *dim, const cuuint64_t *stride,
                                 const cuuint32_t *box, CUtensorMapSwizzle swizzle,
                                 const char *what, tune_error *err)
{
    mg_encode_fn encode = mg_encoder(err);
    if (!encode)
        return TUNE_ERR_CUDA;
    const cuuint32_t estride[3] = {1, 1, 1};
    CUtensorMap map;
    _Static_assert(sizeof map == 16 * sizeof(unsigned long long), "CUtensorMap is 128 bytes");
    CUresult rc =
        encode(&map, type, rank, base, dim, stride, box, estride, CU_TENSOR_MAP_INTERLEAVE_NONE,
               swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (rc != CUDA_SUCCESS)
        return tune_error_set(err, TUNE_ERR_CUDA, "mixed_gemm",
                              "cuTensorMapEncodeTiled failed (error %d) for %s: %llu x %llu%s, "
                              "box %u x %u%s",
                              (int)rc, what, (unsigned long long)dim[rank - 1],
                              (unsigned long long)dim[rank - 2], rank == 3 ? " x 64" : "",
                              box[rank - 1], box[rank - 2], rank == 3 ? " x 64" : "");
    memcpy(out, &map, sizeof map);
    return TUNE_OK;
}

/* The wgmma kernels' tensor maps. X (m rows of k elements): boxes of 64 columns x bm rows with the
 * 128-byte swizzle their MMAs read, rows past m filled with zeros. For the warp-specialized
 * kernel, the packed weight (k / 16 rows of n / 64 units of 64 eight-byte words): boxes of one
 * stage, bk / 16 rows x bn / 64 units, unswizzled, so that a stage is one copy; and the scales
 * and zero points (k / G rows of n / 64 chunks of 64 values): boxes of a stage's rows of bn
 * columns. */
static tune_status mg_prepare_maps(mg_state *s, const mg_desc *d, tune_error *err)
{
    const cuuint64_t xdim[2] = {(cuuint64_t)d->k, (cuuint64_t)d->m},
                     xstride[1] = {(cuuint64_t)d->k * 2};
    const cuuint32_t xbox[2] = {64, (cuuint32_t)d->bm};
    tune_status st = mg_encode_map(s->xmap, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, s->x, xdim, xstride,
                                   xbox, CU_TENSOR_MAP_SWIZZLE_128B, "X", err);
    if (st != TUNE_OK || d->method != MG_WGMMA_WS)
        return st;
    const cuuint64_t wdim[3] = {64, (cuuint64_t)d->n / 64, (cuuint64_t)d->k / 16},
                     wstride[2] = {512, (cuuint64_t)d->n / 64 * 512};
    const cuuint32_t wbox[3] = {64, (cuuint32_t)(d->bn / 64), (cuuint32_t)(d->bk / 16)};
    if ((st = mg_encode_map(s->wmap, CU_TENSOR_MAP_DATA_TYPE_UINT64, 3, s->wp, wdim, wstride, wbox,
                            CU_TENSOR_MAP_SWIZZLE_NONE, "the packed weight", err)))
        return st;
    const cuuint64_t sdim[3] = {64, (cuuint64_t)d->n / 64, (cuuint64_t)(d->k / d->g_eff)},
                     sstride[2] = {128, (cuuint64_t)d->n * 2};
    const cuuint32_t sbox[3] = {64, (cuuint32_t)(d->bn / 64),
                                (cuuint32_t)(d->gsh >= 0 ? d->bk >> d->gsh : 1)};
    if ((st = mg_encode_map(s->smap, CU_TENSOR_MAP_DATA_TYPE_UINT16, 3, s->sp, sdim, sstride, sbox,
                            CU_TENSOR_MAP_SWIZZLE_NONE, "the scales", err)))
        return st;
    return d->zp ? mg_encode_map(s->zmap, CU_TENSOR_MAP_DATA_TYPE_UINT16, 3, s->zp, sdim, sstride,
                                 sbox, CU_TENSOR_MAP_SWIZZLE_NONE, "the zero points", err)
                 : TUNE_OK;
}

/* The fp8 baseline's inputs (converted once, outside the timing) and its cuBLASLt plan. */
static tune_status mg_prepare_fp8(mg_state *s, const tune_point *cfg, tune_error *err)
{
    tune_status st = TUNE_OK;
    long long k = s->shape.k, n = s->shape.n, group = s->shape.g_eff;
    if (!s->w8) {
        /* per-tensor scales: |W| <= 15 * 0.008 and |X| < 1 map onto e4m3's 448 */
        float wscale = 15.f * 0.008f / 448.f, xscale = 1.f / 448.f;
        float inv_w = 1.f / wscale, inv_x = 1.f / xscale;
        long long pairs = (long long)s->n_x / 2;
        void *kw = family_kernel_at(&mixed_gemm_family, &s->env, cfg, 0, err);
        void *kx = family_kernel_at(&mixed_gemm_family, &s->env, cfg, 1, err);
        if (!kw || !kx)
            return TUNE_ERR_CUDA;
        if ((st = gpu_malloc(&s->w8, s->n_w, err)) || (st = gpu_malloc(&s->x8, s->n_x, err)))
            return st;
        void *a1[] = {&s->q, &s->s, &s->zr, &s->w8, &k, &n, &group, &inv_w};
        void *a2[] = {&s->x, &s->x8, &pairs, &inv_x};
        if ((st = mg_run1(s, kw, s->n_w / 2, a1, err)) ||
            (st = mg_run1(s, kx, s->n_x / 2, a2, err)))
            return st;
        s->fp8_alpha = wscale * xscale;
    }
    return s->lt_ready ? TUNE_OK : mg_lt_setup(s, err);
}

/* The marlin baseline: its library's entry point, and once per shape, outside the timing, the
 * weight and scales packed on the host into Marlin's format (mixed_gemm_marlin.c) and uploaded, and
 * its workspace zeroed. */
static tune_status mg_prepare_marlin(mg_state *s, tune_error *err)
{
    char why[1024];
    tune_status st = TUNE_OK;
    const mg_desc *d = &s->shape;
    cudaStream_t str = (cudaStream_t)s->env.stream;
    if (!s->marlin && !(s->marlin = mg_marlin_open(why, sizeof why)))
        return tune_error_set(err, TUNE_ERR_UNSUPPORTED, "mixed_gemm", "%s", why);
    if (s->mw)
        return TUNE_OK;
    size_t n_ws = (size_t)(d->n / 128 * MG_MARLIN_MAX_PAR) * sizeof(int);
    uint8_t *hq = malloc(s->n_q);
    uint32_t *hw = malloc(s->n_q);
    uint16_t *hs = malloc(s->n_sz * 2), *hsp = malloc(s->n_sz * 2);
    void *mw = NULL, *ms = NULL, *mws = NULL;
    if (!hq || !hw || !hs || !hsp) {
        st = tune_error_set(err, TUNE_ERR_NOMEM, "mg_prepare_marlin", "out of host memory");
        goto out;
    }
    GPU_CHECK(cudaMemcpyAsync(hq, s->q, s->n_q, cudaMemcpyDeviceToHost, str), err, st, out);
    GPU_CHECK(cudaMemcpyAsync(hs, s->s, s->n_sz * 2, cudaMemcpyDeviceToHost, str), err, st, out);
    GPU_CHECK(cudaStreamSynchronize(str), err, st, out);
    mixed_gemm_marlin_pack_cpu(hq, d->k, d->n, hw);
    mixed_gemm_marlin_pack_scales_cpu(hs, d->k / d->g_eff, d->n, hsp);
    if ((st = gpu_malloc(&mw, s->n_q, err)) || (st = gpu_malloc(&ms, s->n_sz * 2, err)) ||
        (st = gpu_malloc(&mws, n_ws, err)))
        goto out;
    GPU_CHECK(cudaMemcpyAsync(mw, hw, s->n_q, cudaMemcpyHostToDevice, str), err, st, out);
    GPU_CHECK(cudaMemcpyAsync(ms, hsp, s->n_sz * 2, cudaMemcpyHostToDevice, str), err, st, out);
    GPU_CHECK(cudaMemsetAsync(mws, 0, n_ws, str), err, st, out);
    GPU_CHECK(cudaStreamSynchronize(str), err, st, out);
    s->mw = mw, s->ms = ms, s->mws = mws;
    mw = ms = mws = NULL;
out:
    gpu_free(mw);
    gpu_free(ms);
    gpu_free(mws);
    free(hq);
    free(hw);
    free(hs);
    free(hsp);
    return st;
}

/* Marlin's call on the prepared shape: its refusal (1, 2) is a configuration it cannot run, a
 * negative value the CUDA error of its launch. */
static tune_status mg_launch_marlin(mg_state *s, tune_error *err)
{
    const mg_desc *d = &s->shape;
    int m = (int)d->m, n = (int)d->n, k = (int)d->k;
    int group = d->g_eff == d->k ? -1 : (int)d->g_eff; /* -1: one group per column */
    int rc = s->marlin(s->x, s->mw, s->y, s->ms, m, n, k, s->mws, group, s->env.device,
                       s->env.stream, s->sms, MG_MARLIN_MAX_PAR);
    if (rc < 0)
        return gpu_fail(err, -rc, MG_MARLIN_SYMBOL " (" MG_MARLIN_ENV ")", __FILE__, __LINE__);
    if (rc > 0)
        return tune_error_set(err, TUNE_ERR_UNSUPPORTED, "mixed_gemm",
                              "marlin: Marlin refused m = %d, n = %d, k = %d, group %d (code %d: "
                              "%s)",
                              m, n, k, group, rc,
                              rc == 1   ? "the shape does not fit its tiles"
                              : rc == 2 ? "no kernel for its tiles and group"
                                        : "unknown");
    return TUNE_OK;
}

static tune_status mg_prepare(void *state, const tune_point *cfg, tune_error *err)
{
    mg_state *s = state;
    char why[256];
    tune_point p = *cfg;
    if (mg_describe(&p, &s->cur, why, sizeof why) != 0)
        return tune_error_set(err, TUNE_ERR_UNSUPPORTED, "mixed_gemm", "%s", why);
    const mg_desc *d = &s->cur;
    tune_status st = TUNE_OK;
    long long k = s->shape.k, n = s->shape.n, group = s->shape.g_eff;
    s->k_main = NULL;
    if (MG_TILED(d->method)) {
        if (!(s->k_main = family_kernel_at(&mixed_gemm_family, &s->env, cfg, 0, err)))
            return TUNE_ERR_CUDA;
        if (MG_IS_WGMMA(d->method) && (st = mg_prepare_maps(s, d, err)))
            return st;
        /* the wgmma kernels' 2 splits add up in a cluster, without the workspace */
        if (MG_IS_WGMMA(d->method) && d->splitk == 2)
            return TUNE_OK;
        return d->splitk != 1 ? mg_prepare_split(s, d, err) : TUNE_OK;
    }
    switch (d->method) {
    case MG_DEQUANT:
    case MG_CUBLAS:
        if (!s->wd && (st = gpu_malloc(&s->wd, s->n_w * 2, err)))
            return st;
        if (d->method == MG_DEQUANT) {
            s->k_main = family_kernel_at(&mixed_gemm_family, &s->env, cfg, 0, err);
            s->wd_raw = 0;
            return s->k_main ? TUNE_OK : TUNE_ERR_CUDA;
        }
        if (!s->wd_raw) { /* the weight cuBLAS multiplies, dequantized once, outside the timing */
            void *kd = family_kernel_at(&mixed_gemm_family, &s->env, cfg, 0, err);
            void *a[] = {&s->q, &s->s, &s->zr, &s->wd, &k, &n, &group};
            if (!kd || (st = mg_run1(s, kd, s->n_w, a, err)))
                return kd ? st : TUNE_ERR_CUDA;
            s->wd_raw = 1;
        }
        return TUNE_OK;
    case MG_FP8:
        return mg_prepare_fp8(s, cfg, err);
    case MG_STREAM:
        if (!(s->k_main = family_kernel_at(&mixed_gemm_family, &s->env, cfg, 0, err)))
            return TUNE_ERR_CUDA;
        if (!s->xor_out &&
            (st = gpu_malloc((void **)&s->xor_out, mg_stream_blocks(s) * sizeof(unsigned), err)))
            return st;
        break;
    case MG_MARLIN:
        return mg_prepare_marlin(s, err);
    case MG_PACK:
        break;
    }
    return st;
}

static tune_status mg_gemm_t(mg_state *s, const void *w, tune_error *err)
{
    const mg_desc *d = &s->shape;
    const float one = 1.f, zero = 0.f;
    cudaDataType t = d->bf16 ? CUDA_R_16BF : CUDA_R_16F;
    cublasStatus_t rc =
        cublasGemmEx((cublasHandle_t)s->env.cublas, CUBLAS_OP_N, CUBLAS_OP_N, (int)d->n, (int)d->m,
                     (int)d->k, &one, w, t, (int)d->n, s->x, t, (int)d->k, &zero, s->y, t,
                     (int)d->n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    return rc == CUBLAS_STATUS_SUCCESS ? TUNE_OK : mg_cublas_fail(err, "cublasGemmEx", rc);
}

/* The grid a tiled kernel is launched with: the configuration's, except that wgmma_ws with
 * stream-K (splitk 0) gets one block per multiprocessor, and wgmma_ws without splits a persistent
 * grid when its tiles outnumber the multiprocessors (it holds one block per multiprocessor): one
 * block per multiprocessor, each taking the tiles b, b + grid, ... in turn, so that a block's
 * producer loads its next tile while its consumers store the last one instead of a new block
 * starting cold after each wave. MG_WS_PERSISTENT 0 (a build flag, for A/B measurements) keeps one
 * block per tile. */
#ifndef MG_WS_PERSISTENT
#define MG_WS_PERSISTENT 1
#endif
static const unsigned *mg_launch_grid(const mg_state *s, const mg_desc *d, unsigned grid[3])
{
    unsigned long long tiles = (unsigned long long)d->grid[0] * d->grid[1];
    if (d->method == MG_WGMMA_WS && d->splitk == 0) { /* stream-K: one block per multiprocessor */
        grid[0] = (unsigned)s->sms, grid[1] = 1, grid[2] = 1;
        return grid;
    }
    if (!MG_WS_PERSISTENT || d->method != MG_WGMMA_WS || d->grid[2] != 1 || s->sms <= 0 ||
        tiles <= (unsigned long long)s->sms)
        return d->grid;
    grid[0] = (unsigned)s->sms, grid[1] = 1, grid[2] = 1;
    return grid;
}

static tune_status mg_launch(void *state, tune_error *err)
{
    mg_state *s = state;
    const mg_desc *d = &s->cur;
    int m = (int)d->m, n = (int)d->n, k = (int)d->k, group = (int)d->g_eff, gsh = d->gsh;
    long long kl = d->k, nl = d->n;
    if (MG_TILED(d->method)) {
        /* the wgmma kernels take X's tensor map in place of X, the warp-specialized one the
         * weight's too, before the weight */
        void *x = MG_IS_WGMMA(d->method) ? (void *)s->xmap : (void *)&s->x;
        void *args[] = {x,      s->wmap,      s->smap, s->zmap, &s->wp, &s->sp, &s->zp, &s->y,
                        &s->ws, &s->counters, &m,      &n,      &k,     &group, &gsh};
        void **a = args;
        unsigned grid[3];
        if (d->method != MG_WGMMA_WS) { /* no maps of the weight, scales and zero points */
            args[3] = x;
            a = args + 3;
        }
        return gpu_launch_grid(s->k_main, mg_launch_grid(s, d, grid), d->threads, d->smem,
                               s->env.stream, a, err);
    }
    switch (d->method) {
    case MG_STREAM: {
        long long nw = (long long)s->n_q / 16, ns = (long long)s->n_sz * 2 / 16,
                  nz = s->zp ? ns : 0;
        void *args[] = {&s->wp, &nw, &s->sp, &ns, &s->zp, &nz, &s->xor_out};
        return gpu_launch(s->k_main, (unsigned)mg_stream_blocks(s), 256, 0, s->env.stream, args,
                          err);
    }
    case MG_DEQUANT: {
        void *args[] = {&s->wp, &s->sp, &s->zp, &s->wd, &kl, &nl, &group};
        size_t units = (size_t)(d->k / 16 * d->n / 64);
        unsigned grid = (unsigned)((units + 7) / 8 < 132 * 16 ? (units + 7) / 8 : 132 * 16);
        tune_status st = gpu_launch(s->k_main, grid, 256, 0, s->env.stream, args, err);
        return st ? st : mg_gemm_t(s, s->wd, err);
    }
    case MG_CUBLAS:
        return mg_gemm_t(s, s->wd, err);
    case MG_MARLIN:
        return mg_launch_marlin(s, err);
    case MG_FP8: {
        const float beta = 0.f;
        cublasStatus_t rc = cublasLtMatmul(
            s->lt, s->lt_op, &s->fp8_alpha, s->w8, s->lt_a, s->x8, s->lt_b, &beta, s->y, s->lt_c,
            s->y, s->lt_c, &s->lt_algo, s->lt_ws, MG_LT_WORKSPACE, (cudaStream_t)s->env.stream);
        return rc == CUBLAS_STATUS_SUCCESS ? TUNE_OK : mg_cublas_fail(err, "cublasLtMatmul", rc);
    }
    default:
        return mg_pack(s, err);
    }
}

/* The packing's check: unpack on the GPU and compare with the raw weight; compare the permuted
 * scales with the raw ones on the host. *error = fraction of mismatching bytes (tolerance 0). */
static tune_status mg_check_pack(mg_state *s, double *error, tune_error *err)
{
    tune_status st;
    unsigned char *back = NULL, *hq = NULL, *hback = NULL;
    uint16_t *hs = NULL, *hsp = NULL, *hs2 = NULL;
    long long k = s->shape.k, n = s->shape.n;
    GPU_CHECK(cudaMemsetAsync(s->wp, 0, s->n_q, (cudaStream_t)s->env.stream), err, st, done);
    if ((st = mg_pack(s, err)) || (st = gpu_malloc((void **)&back, s->n_q, err)))
        goto done;
    void *kun = mg_kernel(s, MG_UTIL, "mg_unpack_w", &s->shape, err);
    void *a[] = {&s->wp, &back, &k, &n};
    if (!kun) {
        st = TUNE_ERR_CUDA;
        goto done;
    }
    if ((st = mg_run1(s, kun, s->n_q, a, err)))
        goto done;
    hq = malloc(s->n_q);
    hback = malloc(s->n_q);
    hs = malloc(s->n_sz * 2);
    hsp = malloc(s->n_sz * 2);
    hs2 = malloc(s->n_sz * 2);
    if (!hq || !hback || !hs || !hsp || !hs2) {
        st = tune_error_set(err, TUNE_ERR_NOMEM, "mg_check_pack", "out of host memory");
        goto done;
    }
    cudaStream_t str = (cudaStream_t)s->env.stream;
    GPU_CHECK(cudaMemcpyAsync(hq, s->q, s->n_q, cudaMemcpyDeviceToHost, str), err, st, done);
    GPU_CHECK(cudaMemcpyAsync(hback, back, s->n_q, cudaMemcpyDeviceToHost, str), err, st, done);
    GPU_CHECK(cudaMemcpyAsync(hs, s->s, s->n_sz * 2, cudaMemcpyDeviceToHost, str), err, st, done);
    GPU_CHECK(cudaMemcpyAsync(hsp, s->sp, s->n_sz * 2, cudaMemcpyDeviceToHost, str), err, st, done);
    GPU_CHECK(cudaStreamSynchronize(str), err, st, done);
    size_t bad = 0;
    for (size_t i = 0; i < s->n_q; i++)
        bad += hq[i] != hback[i];
    mixed_gemm_pack_scales_cpu(hs, (int64_t)(s->n_sz / (size_t)n), n, hs2);
    for (size_t i = 0; i < s->n_sz; i++)
        bad += hsp[i] != hs2[i];
    *error = (double)bad / (double)(s->n_q + s->n_sz);
done:
    gpu_free(back);
    free(hq);
    free(hback);
    free(hs);
    free(hsp);
    free(hs2);
    return st;
}

/* XOR of the 32-bit words of n bytes (a multiple of 4) of device memory p, on the host. */
static tune_status mg_host_xor(const void *p, size_t n, cudaStream_t str, unsigned *out,
                               tune_error *err)
{
    tune_status st = TUNE_OK;
    uint32_t *h = malloc(n ? n : 1);
    if (!h)
        return tune_error_set(err, TUNE_ERR_NOMEM, "mg_host_xor", "out of host memory");
    GPU_CHECK(cudaMemcpyAsync(h, p, n, cudaMemcpyDeviceToHost, str), err, st, done);
    GPU_CHECK(cudaStreamSynchronize(str), err, st, done);
    for (size_t i = 0; i < n / 4; i++)
        *out ^= h[i];
done:
    free(h);
    return st;
}

/* The stream method's check: its XOR of everything it read against the host's. *error = 0 when
 * they agree, 1 when not (tolerance 0). */
static tune_status mg_check_stream(mg_state *s, double *error, tune_error *err)
{
    tune_status st = TUNE_OK;
    cudaStream_t str = (cudaStream_t)s->env.stream;
    unsigned want = 0, got = 0;
    size_t blocks = mg_stream_blocks(s);
    GPU_CHECK(cudaMemsetAsync(s->xor_out, 0xa5, blocks * sizeof(unsigned), str), err, st, done);
    if ((st = mg_launch(s, err)) ||
        (st = mg_host_xor(s->xor_out, blocks * sizeof(unsigned), str, &got, err)))
        goto done;
    if ((st = mg_host_xor(s->wp, s->n_q, str, &want, err)) ||
        (st = mg_host_xor(s->sp, s->n_sz * 2, str, &want, err)) ||
        (s->zp && (st = mg_host_xor(s->zp, s->n_sz * 2, str, &want, err))))
        goto done;
    *error = got == want ? 0.0 : 1.0;
done:
    return st;
}

static tune_status mg_check(void *state, double *error, double *tolerance, tune_error *err)
{
    mg_state *s = state;
    const mg_desc *d = &s->cur;
    tune_status st = TUNE_OK;
    double h[3];
    long long ny = (long long)s->n_y;
    cudaStream_t str = (cudaStream_t)s->env.stream;
    *error = NAN;
    if (d->method == MG_PACK) {
        *tolerance = 0;
        return mg_check_pack(s, error, err);
    }
    if (d->method == MG_STREAM) {
        *tolerance = 0;
        return mg_check_stream(s, error, err);
    }
    /* fp8 rounds X and W to 3 mantissa bits: its normalised error is ~3e-2 by construction */
    *tolerance = d->method == MG_FP8 ? 0.1 : d->bf16 ? 1.6e-2 : 2e-3;
    /* poison: all-ones bits are NaN in fp16 and bf16, so an unwritten element fails */
    GPU_CHECK(cudaMemsetAsync(s->y, 0xff, s->n_y * 2, str), err, st, done);
    if ((st = mg_launch(s, err)))
        goto done;
    GPU_CHECK(cudaMemsetAsync(s->sums, 0, 3 * sizeof(double), str), err, st, done);
    void *a[] = {&s->y, &s->ref, &ny, &s->sums};
    if ((st = mg_run1(s, s->k_error, s->n_y, a, err)))
        goto done;
    GPU_CHECK(cudaMemcpyAsync(h, s->sums, sizeof h, cudaMemcpyDeviceToHost, str), err, st, done);
    GPU_CHECK(cudaStreamSynchronize(str), err, st, done);
    *error = h[2] > 0 ? INFINITY : h[1] > 0 ? sqrt(h[0] / h[1]) : sqrt(h[0]);
done:
    return st;
}

const tune_family mixed_gemm_family = {
    .name = "mixed_gemm",
    .help = "mixed-input GEMM: int4 weights x fp16/bf16 activations, group scales",
    .ops = mg_ops,
    .n_ops = MG_N_OPS,
    .params = mg_params,
    .n_params = MG_N_PARAMS,
    .methods = mg_methods,
    .n_methods = MG_N_METHODS,
    .dtype_axis = "dtype",
    .needs_cublas = 1,
    .traffic = mg_traffic,
    .n_traffic = MG_N_TRAFFIC,
    .kernels = mg_kernels,
    .prune = mg_prune,
    .shape_init = mg_shape_init,
    .shape_free = mg_shape_free,
    .prepare = mg_prepare,
    .launch = mg_launch,
    .check = mg_check,
};
