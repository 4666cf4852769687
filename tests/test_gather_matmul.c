/* GPU tests of the gather_matmul family: every op, dtype and layout against a CPU reference on
 * random inputs with awkward sizes; the baselines through the family's own check. Each test skips
 * with the reason when no GPU is usable. CPU test: every variant of every sweep compiles. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "core/half.h"
#include "device/compile.h"
#include "model/family.h"
#include "device/gpu.h"
#include "util.h"

extern const tune_family gather_matmul_family;

typedef struct {
    const char *op;
    int64_t g, kp, k, n; /* kp: k_pre for inner ops, n_pre for the outer op */
} gm_case;

/* odd g, k not a power of two, k = 1, n not a multiple of chunk, k beyond one staging tile */
static const gm_case cases[] = {
    {"gather_inner_matrix_only_bmv", 3, 37, 1, 5},
    {"gather_inner_matrix_only_bmv", 5, 100, 33, 130},
    {"gather_inner_matrix_only_bmv", 2, 3000, 1100, 72},
    {"gather_inner_bmv", 3, 37, 1, 5},
    {"gather_inner_bmv", 7, 128, 24, 200},
    {"gather_inner_bmv", 2, 2000, 1500, 40},
    {"gather_outer_bmv", 3, 37, 1, 5},
    {"gather_outer_bmv", 5, 300, 33, 130},
    {"gather_outer_bmv", 2, 500, 1100, 17},
};
static const char *const dtypes[] = {"float16", "bfloat16", "float32"};
static const int64_t chunks[] = {1, 3, 16, 64, 128};
static const int64_t threads[] = {32, 256};
static const int64_t denses[] = {0, 1};
/* 3: gm_rows_async for the inner ops with row-major B, gm_cols_async for the outer op with
 * transposed B (the awkward k of the outer cases: one element, 33 (fp32 only: 4-byte copies), and
 * 1100, two k tiles), gm_dense_async with dense (the awkward k_pre of the inner cases: 37, fp32
 * only, a row's 32 lanes covering it in two steps, the last one partial; 100, 8-byte copies; 2000
 * and 3000, eight and twelve steps of 16 bytes) */
static const int64_t stages[] = {0, 3};
/* gm_dense_reg with dense and stages 0: R rows per batch (1: no transposing butterfly; 2 and 4 with
 * chunks 3 and 16 on 32 threads: a last batch past the group's rows; k_pre 37: two steps per row,
 * the second partial; k_pre 100: lanes past k_pre); the inner cases with k_pre 2000 and 3000 are
 * refused (more than 32 weights per lane). gm_cols_reg (the outer op's reg_rows) is checked by
 * cols_reg_kernels_match_cpu on its own cases and these outer ones: here it would add 120 kernels
 * to the 966 this test compiles, past the 1024 that tests/util.h holds per test. */
static const int64_t reg_rows[] = {0, 1, 2, 4, 8};

/* ---- host data ---- */

static uint64_t rng_state = 0x1234567u;
static double rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* Random values exactly representable in dtype; returns the device copy, fills vals (doubles). */
static void *device_values(const char *dtype, size_t n, double *vals)
{
    size_t ds = tune_dtype_size(dtype);
    unsigned char *host = malloc(n * ds);
    for (size_t i = 0; i < n; i++) {
        float f = (float)(2.0 * rnd() - 1.0);
        if (fabsf(f) < 1e-3f)
            f = 0.5f;
        if (ds == 4) {
            memcpy(host + 4 * i, &f, 4);
            vals[i] = f;
        } else if (strcmp(dtype, "bfloat16") == 0) {
            uint16_t h = bf16_from_f32(f);
            memcpy(host + 2 * i, &h, 2);
            vals[i] = bf16_to_f32(h);
        } else {
            uint16_t h = half_from_f32(f);
            memcpy(host + 2 * i, &h, 2);
            vals[i] = half_to_f32(h);
        }
    }
    void *d = NULL;
    cr_assert_eq(cudaMalloc(&d, n * ds), cudaSuccess);
    cr_assert_eq(cudaMemcpy(d, host, n * ds, cudaMemcpyHostToDevice), cudaSuccess);
    free(host);
    return d;
}

static double host_value(const char *dtype, const void *buf, size_t i)
{
    if (tune_dtype_size(dtype) == 4)
        return ((const float *)buf)[i];
    uint16_t h = ((const uint16_t *)buf)[i];
    return strcmp(dtype, "bfloat16") == 0 ? bf16_to_f32(h) : half_to_f32(h);
}

/* CPU reference in double, straight from the op definitions of docs/gather_matmul.md. */
static void cpu_reference(const gm_case *c, int trans, const double *A, const double *B,
                          const int *I, double *out)
{
    int op = strcmp(c->op, "gather_inner_bmv") == 0 ? 0 : strcmp(c->op, "gather_outer_bmv") == 0 ? 2 : 1;
    for (int64_t gi = 0; gi < c->g; gi++)
        for (int64_t j = 0; j < c->n; j++) {
            double s = 0;
            for (int64_t t = 0; t < c->k; t++) {
                if (op == 2) {
                    int64_t col = I[gi * c->n + j];
                    double b = trans ? B[(gi * c->kp + col) * c->k + t] : B[(gi * c->k + t) * c->kp + col];
                    s += A[gi * c->k + t] * b;
                } else {
                    int64_t r = I[gi * c->k + t];
                    double a = op == 0 ? A[gi * c->kp + r] : A[gi * c->k + t];
                    double b = trans ? B[(gi * c->n + j) * c->kp + r] : B[(gi * c->kp + r) * c->n + j];
                    s += a * b;
                }
            }
            out[gi * c->n + j] = s;
        }
}

typedef struct {
    void *A, *B, *out;
    int *I;
    double *hA, *hB, *ref;
    size_t n_out;
} case_data;

static void case_setup(const gm_case *c, const char *dtype, int trans, case_data *d)
{
    int op2 = strcmp(c->op, "gather_outer_bmv") == 0;
    size_t n_a = (size_t)(c->g * (strcmp(c->op, "gather_inner_bmv") == 0 ? c->kp : c->k));
    size_t n_b = (size_t)(op2 ? c->g * c->k * c->kp : c->g * c->kp * c->n);
    size_t n_i = (size_t)(c->g * (op2 ? c->n : c->k));
    d->n_out = (size_t)(c->g * c->n);
    d->hA = malloc(n_a * sizeof(double));
    d->hB = malloc(n_b * sizeof(double));
    d->ref = malloc(d->n_out * sizeof(double));
    int *hI = malloc(n_i * sizeof(int));
    for (size_t i = 0; i < n_i; i++)
        hI[i] = (int)(rnd() * (double)c->kp);
    d->A = device_values(dtype, n_a, d->hA);
    d->B = device_values(dtype, n_b, d->hB);
    cr_assert_eq(cudaMalloc((void **)&d->I, n_i * sizeof(int)), cudaSuccess);
    cr_assert_eq(cudaMemcpy(d->I, hI, n_i * sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);
    cr_assert_eq(cudaMalloc(&d->out, d->n_out * sizeof(float)), cudaSuccess);
    cpu_reference(c, trans, d->hA, d->hB, hI, d->ref);
    free(hI);
}

static void case_free(case_data *d)
{
    cudaFree(d->A);
    cudaFree(d->B);
    cudaFree(d->I);
    cudaFree(d->out);
    free(d->hA);
    free(d->hB);
    free(d->ref);
}

/* ||out - ref|| / ||ref|| with out read back from the device in dtype (or fp32 for as_f32). */
static double case_error(const case_data *d, const char *dtype, int as_f32)
{
    size_t ds = as_f32 ? 4 : tune_dtype_size(dtype);
    unsigned char *h = malloc(d->n_out * ds);
    cr_assert_eq(cudaMemcpy(h, d->out, d->n_out * ds, cudaMemcpyDeviceToHost), cudaSuccess);
    double num = 0, den = 0;
    for (size_t i = 0; i < d->n_out; i++) {
        double o = host_value(as_f32 ? "float32" : dtype, h, i);
        if (!isfinite(o)) {
            free(h);
            return INFINITY;
        }
        num += (o - d->ref[i]) * (o - d->ref[i]);
        den += d->ref[i] * d->ref[i];
    }
    free(h);
    return sqrt(num / den);
}

static double tolerance(const char *dtype)
{
    return tune_dtype_size(dtype) == 4 ? 1e-5 : strcmp(dtype, "bfloat16") == 0 ? 1.6e-2 : 2e-3;
}

static void case_point(const gm_case *c, const char *dtype, int trans, const char *method,
                       int64_t chunk, int64_t thr, tune_point *p)
{
    memset(p, 0, sizeof *p);
    int op2 = strcmp(c->op, "gather_outer_bmv") == 0;
    point_set_str(p, "op", c->op);
    point_set_str(p, "method", method);
    point_set_str(p, "dtype", dtype);
    point_set_int(p, "transpose_B", trans);
    point_set_int(p, "g", c->g);
    point_set_int(p, "k", c->k);
    point_set_int(p, "n", c->n);
    point_set_int(p, op2 ? "n_pre" : "k_pre", c->kp);
    point_set_int(p, "chunk", chunk);
    point_set_int(p, "threads", thr);
}

static void launch_kernel(void *kernel, const gm_case *c, case_data *d, unsigned grid, unsigned block,
                          size_t smem)
{
    int g = (int)c->g, k = (int)c->k, kp = (int)c->kp, n = (int)c->n;
    void *args[] = {&d->A, &d->B, &d->I, &d->out, &g, &k, &kp, &n};
    tune_error err = {0};
    cr_assert_eq(cudaMemset(d->out, 0xff, d->n_out * 4), cudaSuccess);
    cr_assert_eq(gpu_launch(kernel, grid, block, smem, NULL, args, &err), TUNE_OK, "%s", err.message);
    cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess, "kernel faulted");
}

Test(gather_matmul_gpu, reference_kernel_matches_cpu)
{
    require_gpu();
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (size_t di = 0; di < 3; di++)
            for (int trans = 0; trans < 2; trans++) {
                const gm_case *c = &cases[ci];
                case_data d;
                case_setup(c, dtypes[di], trans, &d);
                tune_point p;
                case_point(c, dtypes[di], trans, "custom", 64, 256, &p);
                family_kernel_ref refs[FAMILY_MAX_KERNELS];
                char why[256];
                int nr = gather_matmul_family.kernels(&gather_matmul_family, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why);
                cr_assert_geq(nr, 2, "%s", why);
                void *k = test_get_kernel(NULL, refs[1].source, refs[1].name); /* gm_reference */
                launch_kernel(k, c, &d, (unsigned)((d.n_out + 255) / 256), 256, 0);
                double e = case_error(&d, dtypes[di], 1);
                cr_expect_leq(e, 1e-6, "%s %s trans=%d g=%lld k=%lld n=%lld: error %g", c->op,
                              dtypes[di], trans, (long long)c->g, (long long)c->k,
                              (long long)c->n, e);
                case_free(&d);
            }
}

Test(gather_matmul_gpu, custom_kernels_match_cpu, .timeout = 600)
{
    require_gpu();
    size_t checked = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (size_t di = 0; di < 3; di++)
            for (int trans = 0; trans < 2; trans++) {
                const gm_case *c = &cases[ci];
                case_data d;
                case_setup(c, dtypes[di], trans, &d);
                for (size_t hi = 0; hi < 5; hi++)
                    for (size_t ti = 0; ti < 8 * 5; ti++) {
                        tune_point p;
                        case_point(c, dtypes[di], trans, "custom", chunks[hi], threads[ti % 2], &p);
                        point_set_int(&p, "dense", denses[ti / 2 % 2]);
                        point_set_int(&p, "stages", stages[ti / 4 % 2]);
                        point_set_int(&p, "reg_rows", reg_rows[ti / 8]);
                        if (reg_rows[ti / 8] && (!denses[ti / 2 % 2] || stages[ti / 4 % 2]))
                            continue; /* gm_dense_reg only: gm_cols_reg has its own test */
                        family_kernel_ref refs[FAMILY_MAX_KERNELS];
                        char why[256];
                        if (gather_matmul_family.kernels(&gather_matmul_family, &p, refs, FAMILY_MAX_KERNELS, why,
                                                         sizeof why) < 0)
                            continue; /* e.g. chunk too wide for 32 threads: a skipped config */
                        void *k = test_get_kernel(NULL, refs[0].source, refs[0].name);
                        int64_t grid = c->g * ((c->n + chunks[hi] - 1) / chunks[hi]);
                        size_t smem = denses[ti / 2 % 2] ? (size_t)c->kp * sizeof(float) : 0;
                        launch_kernel(k, c, &d, (unsigned)grid, (unsigned)threads[ti % 2], smem);
                        double e = case_error(&d, dtypes[di], 0);
                        cr_expect_leq(e, tolerance(dtypes[di]), "%s %s: error %g", refs[0].name,
                                      c->op, e);
                        checked++;
                    }
                case_free(&d);
            }
    cr_expect_gt(checked, 400, "only %zu kernel configurations ran", checked);
}

/* gm_dense_reg (transposed B, dense, reg_rows) beyond the shared cases: k_pre 1000 and 520 (four
 * and three steps of 32 lanes per row, the last partial), k_pre 8 and 32 (one or two lanes per row
 * in fp16 and fp32: more rows per batch than lanes, R > GS), k_pre 128 as in SparQ step 1 with n
 * not a multiple of the chunk; duplicate indices (k > k_pre) add up in w. */
static const gm_case reg_cases[] = {
    {"gather_inner_bmv", 3, 1000, 50, 77},  {"gather_inner_matrix_only_bmv", 2, 520, 300, 1000},
    {"gather_inner_bmv", 5, 8, 20, 3001},   {"gather_inner_matrix_only_bmv", 4, 32, 70, 999},
    {"gather_inner_bmv", 2, 128, 64, 4100},
};

/* gm_cols_reg (outer op, transposed B, reg_rows): the outer cases of cases[] (k 1: groups of one
 * lane, each keeping all R sums; k 33: one element per lane, two steps of 32 lanes, the second
 * partial; k 1100 is refused: more than 32 weights per lane), k 128 as in SparQ step 2 (16 lanes of
 * 8 halves, 32 of 4 floats) with n_pre 64 < n (every index repeated), k 300 (4 elements per lane,
 * three steps of 32 lanes, the last partial), k 8 (one or two lanes per row: R > GS), k 200 (fp16:
 * lanes past k; fp32: two steps), k 520 (three or five steps); n not a multiple of the chunk,
 * n > n_pre (repeated indices). */
static const gm_case cols_reg_cases[] = {
    {"gather_outer_bmv", 3, 37, 1, 5},        {"gather_outer_bmv", 5, 300, 33, 130},
    {"gather_outer_bmv", 2, 500, 1100, 17},   {"gather_outer_bmv", 3, 64, 128, 77},
    {"gather_outer_bmv", 2, 1000, 300, 1000}, {"gather_outer_bmv", 5, 3000, 8, 3001},
    {"gather_outer_bmv", 4, 500, 200, 999},   {"gather_outer_bmv", 2, 300, 520, 4100},
};

/* Every reg_rows kernel the family accepts for cs[] (transposed B; dense for the inner ops) at the
 * given chunks, 32 and 256 threads and R = 1, 2, 4, 8, against the CPU reference. */
static size_t check_reg_kernels(const gm_case *cs, size_t n_cs, int dense, const int64_t *chunks3)
{
    static const int64_t reg_threads[] = {32, 256}, rows[] = {1, 2, 4, 8};
    size_t checked = 0;
    for (size_t ci = 0; ci < n_cs; ci++)
        for (size_t di = 0; di < 3; di++) {
            const gm_case *c = &cs[ci];
            case_data d;
            case_setup(c, dtypes[di], 1, &d);
            for (size_t hi = 0; hi < 3; hi++)
                for (size_t ti = 0; ti < 2; ti++)
                    for (size_t ri = 0; ri < 4; ri++) {
                        tune_point p;
                        case_point(c, dtypes[di], 1, "custom", chunks3[hi], reg_threads[ti], &p);
                        point_set_int(&p, "dense", dense);
                        point_set_int(&p, "reg_rows", rows[ri]);
                        family_kernel_ref refs[FAMILY_MAX_KERNELS];
                        char why[256];
                        if (gather_matmul_family.kernels(&gather_matmul_family, &p, refs,
                                                         FAMILY_MAX_KERNELS, why, sizeof why) < 0)
                            continue; /* more rows per batch than per lane, or registers */
                        void *k = test_get_kernel(NULL, refs[0].source, refs[0].name);
                        int64_t grid = c->g * ((c->n + chunks3[hi] - 1) / chunks3[hi]);
                        launch_kernel(k, c, &d, (unsigned)grid, (unsigned)reg_threads[ti],
                                      dense ? (size_t)c->kp * sizeof(float) : 0);
                        double e = case_error(&d, dtypes[di], 0);
                        cr_expect_leq(e, tolerance(dtypes[di]),
                                      "%s %s kp=%lld k=%lld n=%lld: error %g", refs[0].name, c->op,
                                      (long long)c->kp, (long long)c->k, (long long)c->n, e);
                        checked++;
                    }
            case_free(&d);
        }
    return checked;
}

Test(gather_matmul_gpu, dense_reg_kernels_match_cpu, .timeout = 600)
{
    require_gpu();
    static const int64_t reg_chunks[] = {3, 64, 2048};
    size_t checked =
        check_reg_kernels(reg_cases, sizeof reg_cases / sizeof reg_cases[0], 1, reg_chunks);
    cr_expect_gt(checked, 100, "only %zu kernel configurations ran", checked);
}

/* chunk 512: the sweep's largest, up to 32 batches of R columns per group at 32 threads */
Test(gather_matmul_gpu, cols_reg_kernels_match_cpu, .timeout = 600)
{
    require_gpu();
    static const int64_t reg_chunks[] = {3, 64, 512};
    size_t checked = check_reg_kernels(
        cols_reg_cases, sizeof cols_reg_cases / sizeof cols_reg_cases[0], 0, reg_chunks);
    cr_expect_gt(checked, 100, "only %zu kernel configurations ran", checked);
}

/* The family's own check of a configuration point (cases[] at chunk 16, 256 threads); with
 * reg_rows, the points with that many rows per batch (and dense as given) that the family
 * accepts. */
static void run_family_check_rows(const char *method, int dense, int64_t rows)
{
    const tune_family *fam = &gather_matmul_family;
    test_family_env t;
    test_family_env_init(&t);
    const family_env env = t.env;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (size_t di = 0; di < 3; di++)
            for (int trans = 0; trans < 2; trans++) {
                tune_point p;
                case_point(&cases[ci], dtypes[di], trans, method, 16, 256, &p);
                if (rows) {
                    point_set_int(&p, "dense", dense);
                    point_set_int(&p, "reg_rows", rows);
                }
                family_kernel_ref refs[FAMILY_MAX_KERNELS];
                char why[256];
                int nr = fam->kernels(fam, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why);
                if (nr < 0)
                    continue; /* slice needs k <= k_pre; dense, transposed B; reg_rows */
                for (int r = 0; r < nr; r++)
                    test_get_kernel(NULL, refs[r].source, refs[r].name);
                tune_error err = {0};
                void *state = fam->shape_init(&env, &p, &err);
                cr_assert_not_null(state, "%s", err.message);
                double e, tol;
                cr_assert_eq(fam->prepare(state, &p, &err), TUNE_OK, "%s", err.message);
                cr_assert_eq(fam->check(state, &e, &tol, &err), TUNE_OK, "%s", err.message);
                cr_expect_leq(e, tol, "%s %s %s trans=%d: error %g > %g", method, cases[ci].op,
                              dtypes[di], trans, e, tol);
                fam->shape_free(state);
            }
    test_family_env_free(&t);
}

static void run_family_check(const char *method)
{
    run_family_check_rows(method, 0, 0);
}

Test(gather_matmul_gpu, gather_baseline_passes_check) { require_gpu(); run_family_check("gather"); }
Test(gather_matmul_gpu, slice_baseline_passes_check) { require_gpu(); run_family_check("slice"); }
Test(gather_matmul_gpu, custom_passes_family_check) { require_gpu(); run_family_check("custom"); }
Test(gather_matmul_gpu, dense_reg_passes_family_check)
{
    require_gpu();
    run_family_check_rows("custom", 1, 1);
    run_family_check_rows("custom", 1, 2);
}
Test(gather_matmul_gpu, cols_reg_passes_family_check)
{
    require_gpu();
    run_family_check_rows("custom", 0, 1);
    run_family_check_rows("custom", 0, 2);
}

/* CPU: the family refuses configurations it cannot run, with a reason. */
Test(gather_matmul, refuses_impossible_configs)
{
    tune_point p;
    family_kernel_ref refs[FAMILY_MAX_KERNELS];
    char why[256] = "";
    case_point(&cases[1], "float16", 0, "custom", 4096, 32, &p);
    cr_expect_lt(gather_matmul_family.kernels(&gather_matmul_family, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0);
    cr_expect(strstr(why, "exceeds threads") != NULL, "why: %s", why);
    case_point(&cases[2], "float16", 0, "slice", 16, 256, &p);
    point_set_int(&p, "k", 5000);
    cr_expect_lt(gather_matmul_family.kernels(&gather_matmul_family, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0);
    cr_expect(strstr(why, "slice needs k <= k_pre") != NULL, "why: %s", why);
    case_point(&cases[1], "float16", 0, "custom", 64, 100, &p);
    cr_expect_lt(gather_matmul_family.kernels(&gather_matmul_family, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0);
    cr_expect(strstr(why, "multiple of 32") != NULL, "why: %s", why);
}

/* CPU: vector width follows n and chunk (16-byte loads when both allow). */
Test(gather_matmul, instantiation_names)
{
    tune_point p;
    family_kernel_ref refs[FAMILY_MAX_KERNELS];
    char why[256];
    gm_case c = {"gather_inner_matrix_only_bmv", 256, 1024, 64, 128};
    case_point(&c, "float16", 0, "custom", 128, 256, &p);
    cr_assert_gt(gather_matmul_family.kernels(&gather_matmul_family, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0);
    cr_expect_str_eq(refs[0].name, "gm_rows<half_t, 1, 128, 8, 256, 4, 1>");
    c.n = 130;
    case_point(&c, "float32", 0, "custom", 128, 256, &p);
    cr_assert_gt(gather_matmul_family.kernels(&gather_matmul_family, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0);
    cr_expect_str_eq(refs[0].name, "gm_rows<float, 1, 128, 2, 256, 4, 1>");
    gm_case o = {"gather_outer_bmv", 32, 4096, 128, 256};
    case_point(&o, "bfloat16", 1, "custom", 16, 256, &p);
    cr_assert_gt(gather_matmul_family.kernels(&gather_matmul_family, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0);
    cr_expect_str_eq(refs[0].name, "gm_cols<bf16_t, 2, 16, 8, 16, 256>");
}

/* A configuration the family must refuse, and a fragment of the reason it must give. */
typedef struct {
    gm_case c;
    const char *dtype;
    int trans, dense;
    int64_t chunk, threads, stages, rows;
    const char *why;
} gm_refusal;

static void expect_refusals(const gm_refusal *r, size_t n)
{
    const tune_family *fam = &gather_matmul_family;
    family_kernel_ref refs[FAMILY_MAX_KERNELS];
    tune_point p;
    char why[256];
    for (size_t i = 0; i < n; i++) {
        case_point(&r[i].c, r[i].dtype, r[i].trans, "custom", r[i].chunk, r[i].threads, &p);
        point_set_int(&p, "dense", r[i].dense);
        point_set_int(&p, "stages", r[i].stages);
        point_set_int(&p, "reg_rows", r[i].rows);
        why[0] = '\0';
        cr_expect_lt(fam->kernels(fam, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0,
                     "case %zu", i);
        cr_expect(strstr(why, r[i].why) != NULL, "case %zu: why: %s", i, why);
    }
}

/* A register kernel's configuration (transposed B, stages 0, reg_rows) and the name it compiles. */
typedef struct {
    gm_case c;
    const char *dtype;
    int64_t chunk, threads, rows;
    const char *name;
} gm_named;

static void expect_reg_names(const gm_named *c, size_t n, int dense)
{
    const tune_family *fam = &gather_matmul_family;
    family_kernel_ref refs[FAMILY_MAX_KERNELS];
    tune_point p;
    char why[256] = "";
    for (size_t i = 0; i < n; i++) {
        case_point(&c[i].c, c[i].dtype, 1, "custom", c[i].chunk, c[i].threads, &p);
        if (dense)
            point_set_int(&p, "dense", 1);
        point_set_int(&p, "reg_rows", c[i].rows);
        cr_assert_gt(fam->kernels(fam, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0,
                     "case %zu: %s", i, why);
        cr_expect_str_eq(refs[0].name, c[i].name, "case %zu", i);
    }
}

/* CPU: `stages` on the outer op with transposed B selects gm_cols_async (SparQ step 2's pipeline),
 * and the family refuses what it cannot run, with the reason. */
Test(gather_matmul, cols_async_names_and_pruning)
{
    const tune_family *fam = &gather_matmul_family;
    tune_point p;
    family_kernel_ref refs[FAMILY_MAX_KERNELS];
    char why[256] = "";
    gm_case o = {"gather_outer_bmv", 32, 4096, 128, 256};
    case_point(&o, "bfloat16", 1, "custom", 128, 256, &p);
    point_set_int(&p, "stages", 4);
    cr_assert_gt(fam->kernels(fam, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0, "%s", why);
    cr_expect_str_eq(refs[0].name, "gm_cols_async<bf16_t, 128, 8, 16, 256, 4>");
    /* no limit on columns per group: 512 columns over 16 groups (gm_cols stops at 8 x 8 values) */
    case_point(&o, "float16", 1, "custom", 512, 256, &p);
    point_set_int(&p, "stages", 8);
    cr_assert_gt(fam->kernels(fam, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0, "%s", why);
    cr_expect_str_eq(refs[0].name, "gm_cols_async<half_t, 512, 8, 16, 256, 8>");
    point_set_int(&p, "stages", 0);
    cr_expect_lt(fam->kernels(fam, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0);
    cr_expect(strstr(why, "more than 64 values in flight") != NULL, "why: %s", why);

    const gm_refusal refused[] = {
        {o, "float16", 0, 0, 64, 256, 4, 0, "stages applies only to the inner ops with row-major B, the outer op with transposed B and dense"},
        {{"gather_inner_bmv", 7, 128, 24, 200}, "float16", 1, 0, 64, 256, 4, 0, "stages applies only"},
        {o, "float16", 1, 0, 64, 256, 1, 0, "stages must be 0 (no pipeline) or >= 2"},
        {o, "float16", 1, 0, 16, 256, 8, 0, "stages (8) exceeds the 1 copies per thread of a k tile"},
        {o, "float16", 1, 0, 512, 1024, 4, 0, "bytes of shared memory exceed 48 KiB"},
        {{"gather_outer_bmv", 5, 300, 33, 130}, "bfloat16", 1, 0, 128, 32, 2, 0, "copies of at least 4 bytes (k a multiple of 2)"},
    };
    expect_refusals(refused, sizeof refused / sizeof refused[0]);
}

/* CPU: `stages` with `dense` selects gm_dense_async (SparQ step 1's pipeline); gm_dense (stages 0)
 * is unchanged, and the family refuses what the pipeline cannot run, with the reason. */
Test(gather_matmul, dense_async_names_and_pruning)
{
    const tune_family *fam = &gather_matmul_family;
    tune_point p;
    family_kernel_ref refs[FAMILY_MAX_KERNELS];
    char why[256] = "";
    gm_case s1 = {"gather_inner_bmv", 256, 128, 32, 4096}; /* SparQ step 1: k_pre = 128 */
    case_point(&s1, "float16", 1, "custom", 64, 256, &p);
    point_set_int(&p, "dense", 1);
    cr_assert_gt(fam->kernels(fam, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0, "%s", why);
    cr_expect_str_eq(refs[0].name, "gm_dense<half_t, 0, 64, 8, 16, 256>");
    point_set_int(&p, "stages", 4);
    cr_assert_gt(fam->kernels(fam, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0, "%s", why);
    cr_expect_str_eq(refs[0].name, "gm_dense_async<half_t, 0, 64, 8, 16, 256, 4>");
    /* one copy per thread: stages 2 issues it before the scatter */
    case_point(&s1, "float16", 1, "custom", 16, 256, &p);
    point_set_int(&p, "dense", 1);
    point_set_int(&p, "stages", 2);
    cr_assert_gt(fam->kernels(fam, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0, "%s", why);
    cr_expect_str_eq(refs[0].name, "gm_dense_async<half_t, 0, 16, 8, 16, 256, 2>");
    /* no limit on columns per group: 512 columns over 16 groups (gm_dense stops at 8 x 8 values) */
    case_point(&s1, "bfloat16", 1, "custom", 512, 256, &p);
    point_set_int(&p, "dense", 1);
    point_set_int(&p, "stages", 8);
    cr_assert_gt(fam->kernels(fam, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0, "%s", why);
    cr_expect_str_eq(refs[0].name, "gm_dense_async<bf16_t, 0, 512, 8, 16, 256, 8>");
    point_set_int(&p, "stages", 0);
    cr_expect_lt(fam->kernels(fam, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0);
    cr_expect(strstr(why, "more than 64 values in flight") != NULL, "why: %s", why);

    const gm_refusal refused[] = {
        {s1, "float16", 1, 0, 64, 256, 4, 0, "stages applies only to the inner ops with row-major B, the outer op with transposed B and dense"},
        {s1, "float16", 0, 1, 64, 256, 4, 0, "dense applies only to the inner ops with transposed B"},
        {s1, "float16", 1, 1, 64, 256, 1, 0, "stages must be 0 (no pipeline) or >= 2"},
        {s1, "float16", 1, 1, 16, 256, 3, 0, "stages (3) exceeds the 1 copies per thread + 1: stages 2 already issues them all"},
        {s1, "float16", 1, 1, 512, 1024, 4, 0, "bytes of shared memory exceed 48 KiB"},
        {{"gather_inner_bmv", 3, 37, 1, 5}, "bfloat16", 1, 1, 64, 256, 2, 0, "copies of at least 4 bytes (k_pre a multiple of 2)"},
    };
    expect_refusals(refused, sizeof refused / sizeof refused[0]);
}

/* CPU: `reg_rows` with `dense` (stages 0) selects gm_dense_reg, whose name carries the rows per
 * batch and the steps per row; gm_dense and gm_dense_async (reg_rows 0) are unchanged, and the
 * family refuses what it cannot run, with the reason. */
Test(gather_matmul, dense_reg_names_and_pruning)
{
    const tune_family *fam = &gather_matmul_family;
    tune_point p;
    family_kernel_ref refs[FAMILY_MAX_KERNELS];
    char why[256] = "";
    gm_case s1 = {"gather_inner_bmv", 256, 128, 32, 4096}; /* SparQ step 1: k_pre = 128 */
    gm_case k37 = {"gather_inner_bmv", 3, 37, 1, 5};
    gm_case k1000 = {"gather_inner_matrix_only_bmv", 3, 1000, 50, 77};
    gm_case k8 = {"gather_inner_bmv", 5, 8, 20, 3001};
    gm_case k520 = {"gather_inner_matrix_only_bmv", 2, 520, 300, 1000};
    gm_case k2000 = {"gather_inner_bmv", 2, 2000, 1500, 40};
    gm_case outer = {"gather_outer_bmv", 32, 4096, 128, 256};
    const gm_named named[] = {
        /* 16 lanes of 8 halves per row, one step; 16 groups of 256 threads */
        {s1, "float16", 64, 256, 4, "gm_dense_reg<half_t, 0, 64, 8, 16, 256, 4, 1>"},
        {s1, "float16", 256, 256, 8, "gm_dense_reg<half_t, 0, 256, 8, 16, 256, 8, 1>"},
        {s1, "float16", 32, 256, 2, "gm_dense_reg<half_t, 0, 32, 8, 16, 256, 2, 1>"},
        /* fp32: 32 lanes of 4 floats per row */
        {s1, "float32", 128, 256, 4, "gm_dense_reg<float, 0, 128, 4, 32, 256, 4, 1>"},
        /* k_pre 37: one element per lane, two steps of 32 lanes */
        {k37, "bfloat16", 3, 32, 2, "gm_dense_reg<bf16_t, 0, 3, 1, 32, 32, 2, 2>"},
        /* k_pre 1000 (fp16): 125 lanes of 8 halves in four steps of 32 */
        {k1000, "float16", 64, 256, 2, "gm_dense_reg<half_t, 1, 64, 8, 32, 256, 2, 4>"},
        /* k_pre 8: one lane per row, more rows per batch than lanes */
        {k8, "float16", 2048, 256, 8, "gm_dense_reg<half_t, 0, 2048, 8, 1, 256, 8, 1>"},
    };
    expect_reg_names(named, sizeof named / sizeof named[0], 1);
    /* reg_rows 0 leaves gm_dense and gm_dense_async as they were */
    case_point(&s1, "float16", 1, "custom", 64, 256, &p);
    point_set_int(&p, "dense", 1);
    point_set_int(&p, "reg_rows", 0);
    cr_assert_gt(fam->kernels(fam, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0, "%s", why);
    cr_expect_str_eq(refs[0].name, "gm_dense<half_t, 0, 64, 8, 16, 256>");
    point_set_int(&p, "stages", 2);
    cr_assert_gt(fam->kernels(fam, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0, "%s", why);
    cr_expect_str_eq(refs[0].name, "gm_dense_async<half_t, 0, 64, 8, 16, 256, 2>");

    const gm_refusal refused[] = {
        {s1, "float16", 1, 0, 64, 256, 0, 4, "reg_rows applies only to dense (gm_dense_reg)"},
        {s1, "float16", 0, 1, 64, 256, 0, 4, "dense applies only to the inner ops with transposed"},
        {outer, "float16", 0, 0, 64, 256, 0, 2, "reg_rows applies only to dense"},
        {s1, "float16", 1, 1, 64, 256, 2, 4,
         "reg_rows loads B into registers, stages through shared memory: give one of them"},
        {s1, "float16", 1, 1, 256, 256, 0, 3, "reg_rows (3) must be a power of two"},
        {s1, "float16", 1, 1, 64, 256, 0, 8,
         "reg_rows (8) exceeds the 4 rows per lane (chunk 64 over 16 groups of 16 lanes)"},
        {k520, "float16", 1, 1, 2048, 256, 0, 4,
         "reg_rows: 192 bytes of B per thread in registers exceed 128"},
        {k2000, "float16", 1, 1, 64, 32, 0, 1,
         "reg_rows: 64 weights per lane (k_pre 2000 over 32 lanes of 8 elements) exceed 32"},
    };
    expect_refusals(refused, sizeof refused / sizeof refused[0]);
}

/* CPU: `reg_rows` on the outer op with transposed B (stages 0, no dense) selects gm_cols_reg, whose
 * name carries the rows per batch and the steps per row; gm_cols and gm_cols_async (reg_rows 0)
 * are unchanged, and the family refuses what it cannot run, with the reason. */
Test(gather_matmul, cols_reg_names_and_pruning)
{
    const tune_family *fam = &gather_matmul_family;
    tune_point p;
    family_kernel_ref refs[FAMILY_MAX_KERNELS];
    char why[256] = "";
    gm_case s2 = {"gather_outer_bmv", 1024, 4096, 128, 512}; /* SparQ step 2: k = 128 */
    gm_case k33 = {"gather_outer_bmv", 5, 300, 33, 130};
    gm_case k300 = {"gather_outer_bmv", 2, 1000, 300, 1000};
    gm_case k8 = {"gather_outer_bmv", 5, 3000, 8, 3001};
    gm_case k1 = {"gather_outer_bmv", 3, 37, 1, 5};
    gm_case k1100 = {"gather_outer_bmv", 2, 500, 1100, 17};
    const gm_named named[] = {
        /* 16 lanes of 8 halves per row, one step; 16 groups of 256 threads */
        {s2, "float16", 256, 256, 8, "gm_cols_reg<half_t, 256, 8, 16, 256, 8, 1>"},
        {s2, "float16", 512, 256, 8, "gm_cols_reg<half_t, 512, 8, 16, 256, 8, 1>"},
        {s2, "bfloat16", 64, 256, 4, "gm_cols_reg<bf16_t, 64, 8, 16, 256, 4, 1>"},
        {s2, "float16", 32, 256, 2, "gm_cols_reg<half_t, 32, 8, 16, 256, 2, 1>"},
        /* fp32: 32 lanes of 4 floats per row */
        {s2, "float32", 128, 256, 4, "gm_cols_reg<float, 128, 4, 32, 256, 4, 1>"},
        /* k 33: one element per lane, two steps of 32 lanes */
        {k33, "bfloat16", 3, 32, 2, "gm_cols_reg<bf16_t, 3, 1, 32, 32, 2, 2>"},
        /* k 300 (fp16): 75 lanes of 4 halves in three steps of 32 */
        {k300, "float16", 64, 256, 4, "gm_cols_reg<half_t, 64, 4, 32, 256, 4, 3>"},
        /* k 8: one lane per row, more rows per batch than lanes */
        {k8, "float16", 2048, 256, 8, "gm_cols_reg<half_t, 2048, 8, 1, 256, 8, 1>"},
        /* k 1: one element, groups of one lane */
        {k1, "float32", 64, 32, 2, "gm_cols_reg<float, 64, 1, 1, 32, 2, 1>"},
    };
    expect_reg_names(named, sizeof named / sizeof named[0], 0);
    /* reg_rows 0 leaves gm_cols and gm_cols_async as they were */
    case_point(&s2, "float16", 1, "custom", 128, 256, &p);
    point_set_int(&p, "reg_rows", 0);
    cr_assert_gt(fam->kernels(fam, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0, "%s", why);
    cr_expect_str_eq(refs[0].name, "gm_cols<half_t, 2, 128, 8, 16, 256>");
    point_set_int(&p, "stages", 4);
    cr_assert_gt(fam->kernels(fam, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why), 0, "%s", why);
    cr_expect_str_eq(refs[0].name, "gm_cols_async<half_t, 128, 8, 16, 256, 4>");

    const gm_refusal refused[] = {
        {s2, "float16", 0, 0, 64, 256, 0, 4,
         "reg_rows applies only to dense (gm_dense_reg) and to the outer op with transposed B "
         "(gm_cols_reg)"},
        {s2, "float16", 1, 1, 64, 256, 0, 4, "dense applies only to the inner ops with transposed"},
        {s2, "float16", 1, 0, 256, 256, 4, 8,
         "reg_rows loads B into registers, stages through shared memory: give one of them"},
        {s2, "float16", 1, 0, 256, 256, 0, 6, "reg_rows (6) must be a power of two"},
        {s2, "float16", 1, 0, 64, 256, 0, 8,
         "reg_rows (8) exceeds the 4 rows per lane (chunk 64 over 16 groups of 16 lanes)"},
        {k300, "float32", 1, 0, 512, 256, 0, 4,
         "reg_rows: 192 bytes of B per thread in registers exceed 128"},
        {k1100, "float16", 1, 0, 64, 32, 0, 1,
         "reg_rows: 36 weights per lane (k 1100 over 32 lanes of 4 elements) exceed 32"},
    };
    expect_refusals(refused, sizeof refused / sizeof refused[0]);
}
