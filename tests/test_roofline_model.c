/* The traffic models of the shipped families and the additive time model, against cases computed
 * by hand (docs/roofline.md, "Traffic models"). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <string.h>

#include "analysis/roofline_model.h"
#include "core/point.h"
#include "model/traffic.h"

/* Names and string values the rows borrow (points do not copy them). */
static char arena[256][32];
static size_t n_arena;

static const char *keep(const char *s)
{
    cr_assert_lt(n_arena, 256);
    snprintf(arena[n_arena], sizeof arena[0], "%s", s);
    return arena[n_arena++];
}

/* A row of family/op/method with the given problem axes ("g=1 k_pre=4 ..."; integers, or strings
 * for dtype and indices). */
static result_row make_row(const char *family, const char *op, const char *method, const char *axes)
{
    result_row r;
    result_row_init(&r);
    r.family = (char *)family;
    r.op = (char *)op;
    r.method = (char *)method;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", axes);
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
        char *eq = strchr(tok, '=');
        cr_assert_not_null(eq, "axis '%s'", tok);
        *eq = '\0';
        char *end;
        long long v = strtoll(eq + 1, &end, 10);
        if (*end)
            point_set_str(&r.values, keep(tok), keep(eq + 1));
        else
            point_set_int(&r.values, keep(tok), v);
    }
    r.n_axes = r.values.n;
    r.bytes = 1234;
    r.flops = 5678;
    return r;
}

typedef struct {
    char family[32], op[40], method[16], axes[160];
    double dram, launches, chain;
} traffic_case;

/* distinct(n, d) = n (1 - (1 - 1/n)^d); fp16 (dsize 2); sectors of 32 bytes. */
static traffic_case traffic_cases[] = {
    /* step 3, row-major: indices sectors(8) = 32, A sectors(4) = 32, distinct(4, 2) = 1.75 rows of
     * sectors(256) = 256 bytes = 448, output 256 */
    {"gather_matmul", "gather_inner_matrix_only_bmv", "custom",
     "g=1 k_pre=4 k=2 n=128 dtype=float16 transpose_B=0 indices=random", 768, 1, 1},
    /* identity indices: the 2 rows themselves */
    {"gather_matmul", "gather_inner_matrix_only_bmv", "custom",
     "g=1 k_pre=4 k=2 n=128 dtype=float16 transpose_B=0 indices=identity", 832, 1, 1},
    /* g scales everything */
    {"gather_matmul", "gather_inner_matrix_only_bmv", "custom",
     "g=3 k_pre=4 k=2 n=128 dtype=float16 transpose_B=0 indices=random", 3 * 768, 1, 1},
    /* transposed B (g, n, k_pre): each of n = 4 rows of 8 sectors loses 32 distinct(8, 16) =
     * 225.7748257 bytes to 16 picks; indices sectors(64) = 64, A 32, output sectors(8) = 32 */
    {"gather_matmul", "gather_inner_matrix_only_bmv", "custom",
     "g=1 k_pre=128 k=16 n=4 dtype=float16 transpose_B=1 indices=random", 1031.0993028902, 1, 1},
    /* the gather baseline: the same reads, Bg (2 x 128 fp16) written and read again, 2 launches;
     * its 256 elements are 2 blocks, one wave: 2 round trips less the floor's */
    {"gather_matmul", "gather_inner_matrix_only_bmv", "gather",
     "g=1 k_pre=4 k=2 n=128 dtype=float16 transpose_B=0 indices=random", 1792, 2, 1},
    /* slice: the first k = 3 rows of 8 fp16, sectors(48) = 64, A 32, output 32; per g */
    {"gather_matmul", "gather_inner_matrix_only_bmv", "slice",
     "g=2 k_pre=64 k=3 n=8 dtype=float16 transpose_B=0 indices=random", 256, 1, 0},
    /* transposed slice: the first 16 fp16 of each of n = 4 rows, 32 bytes, move a 128-byte line
     * each (512); A sectors(32) = 32, output 32 */
    {"gather_matmul", "gather_inner_matrix_only_bmv", "slice",
     "g=1 k_pre=128 k=16 n=4 dtype=float16 transpose_B=1 indices=random", 576, 1, 0},
    /* step 1: A gathered too: 32 distinct(sectors(8) / 32 = 1, 2) = 32; B 448, indices 32,
     * output 256 */
    {"gather_matmul", "gather_inner_bmv", "custom",
     "g=1 k_pre=4 k=2 n=128 dtype=float16 transpose_B=0 indices=random", 768, 1, 1},
    /* step 2, row-major B (g, k, n_pre): each of k = 2 rows of 4 sectors loses
     * 32 distinct(4, 3) = 74 bytes to 3 picks; indices sectors(12) = 32, A 32, output 32 */
    {"gather_matmul", "gather_outer_bmv", "custom",
     "g=1 k=2 n_pre=64 n=3 dtype=float16 transpose_B=0 indices=random", 244, 1, 1},
    /* step 2, transposed (g, n_pre, k): distinct(4, 2) = 1.75 rows of sectors(256) = 448 */
    {"gather_matmul", "gather_outer_bmv", "custom",
     "g=1 k=128 n_pre=4 n=2 dtype=float16 transpose_B=1 indices=random", 32 + 448 + 256 + 32, 1, 1},
    /* mixed GEMM: cuBLAS on the 16-bit weight: 64 x 64 x 2 + X 128 + Y 128 */
    {"mixed_gemm", "w4a16", "cublas", "m=1 n=64 k=64 group=32 zero_point=0 dtype=float16", 8448, 1,
     0},
    /* fp8: weight 4096 + X 64 + Y (fp16) 128 */
    {"mixed_gemm", "w4a16", "fp8", "m=1 n=64 k=64 group=32 zero_point=0 dtype=float16", 4288, 1, 0},
    /* stream: packed weight 2048 + scales 64/32 x 64 x 2 = 256 (zero points: twice) */
    {"mixed_gemm", "w4a16", "stream", "m=8 n=64 k=64 group=32 zero_point=0 dtype=float16", 2304, 1,
     0},
    {"mixed_gemm", "w4a16", "stream", "m=8 n=64 k=64 group=32 zero_point=1 dtype=float16", 2560, 1,
     0},
    /* a tuned kernel: the op's bytes, 2304 + X 8 x 64 x 2 + Y 8 x 64 x 2 */
    {"mixed_gemm", "w4a16", "wgmma", "m=8 n=64 k=64 group=32 zero_point=0 dtype=float16", 4352, 1,
     0},
    /* dequant: 2304 read, 8192 written and read again, X and Y: 2 launches */
    {"mixed_gemm", "w4a16", "dequant", "m=8 n=64 k=64 group=32 zero_point=0 dtype=float16",
     2304 + 2 * 8192 + 2048, 2, 0},
    /* marlin: the op's bytes (packed weight 16384 + scales 512, X, Y); one launch up to m = 64
     * and for whole 64-row blocks, a second for the rows left (m = 100: 64 + 36), a third past
     * 1024 rows (m = 1100: 1024 + 64 + 12) */
    {"mixed_gemm", "w4a16", "marlin", "m=64 n=256 k=128 group=128 zero_point=0 dtype=float16",
     16896 + 64 * 128 * 2 + 64 * 256 * 2, 1, 0},
    {"mixed_gemm", "w4a16", "marlin", "m=100 n=256 k=128 group=128 zero_point=0 dtype=float16",
     16896 + 100 * 128 * 2 + 100 * 256 * 2, 2, 0},
    {"mixed_gemm", "w4a16", "marlin", "m=1100 n=256 k=128 group=128 zero_point=0 dtype=float16",
     16896 + 1100 * 128 * 2 + 1100 * 256 * 2, 3, 0},
};

ParameterizedTestParameters(roofline_model, traffic)
{
    return cr_make_param_array(traffic_case, traffic_cases,
                               sizeof traffic_cases / sizeof traffic_cases[0]);
}

/* The device facts traffic models may read: an H200's 132 SMs and 60 MiB of L2. */
static roofline_ceilings h200_device(void)
{
    roofline_ceilings d;
    memset(&d, 0, sizeof d);
    d.sm_count = 132;
    d.l2_bytes = 62914560;
    return d;
}

ParameterizedTest(traffic_case *c, roofline_model, traffic)
{
    result_row r = make_row(c->family, c->op, c->method, c->axes);
    const tune_family *f = family_find(c->family);
    cr_assert_not_null(f, "%s", c->family);
    roofline_traffic t;
    tune_error err = {0};
    const roofline_ceilings dev = h200_device();
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, &err), TUNE_OK, "%s: %s", c->axes,
                 err.message);
    cr_expect(t.modelled);
    cr_expect(fabs(t.dram - c->dram) <= 1e-9 * c->dram, "%s %s %s: dram %.10g, want %.10g", c->op,
              c->method, c->axes, t.dram, c->dram);
    cr_expect_eq(t.launches, c->launches, "%s %s: launches %g", c->op, c->method, t.launches);
    cr_expect_eq(t.chain, c->chain, "%s %s: chain %g", c->op, c->method, t.chain);
}

Test(roofline_model, repeated_rows_count_once)
{
    /* 512 random rows of 1024: distinct(1024, 512) = 403.06 rows are fetched, not 512 */
    result_row r = make_row("gather_matmul", "gather_inner_matrix_only_bmv", "custom",
                            "g=1 k_pre=1024 k=512 n=128 dtype=float16 transpose_B=0 "
                            "indices=random");
    roofline_traffic t;
    cr_assert_eq(roofline_traffic_eval(family_find("gather_matmul"), &r, NULL, &t, NULL), TUNE_OK);
    double rows = (t.dram - 2048 - 1024 - 256) / 256; /* indices, A, output */
    cr_expect(fabs(rows - 403.0643173783) < 1e-6, "rows %.10g", rows);
}

Test(roofline_model, mixed_gemm_compute_terms)
{
    result_row r =
        make_row("mixed_gemm", "w4a16", "fp8", "m=8 n=64 k=64 group=32 zero_point=0 dtype=float16");
    roofline_traffic t;
    const tune_family *f = family_find("mixed_gemm");
    cr_assert_eq(roofline_traffic_eval(f, &r, NULL, &t, NULL), TUNE_OK);
    cr_expect(t.has_precision);
    cr_expect_eq(t.precision, ROOFLINE_FP8);
    cr_expect_eq(t.flops, 5678, "the row's FLOPs");
    r.method = "stream";
    cr_assert_eq(roofline_traffic_eval(f, &r, NULL, &t, NULL), TUNE_OK);
    cr_expect_eq(t.flops, 0, "a stream of the weight computes nothing");
    cr_expect(!t.has_precision);
}

Test(roofline_model, no_model_uses_the_rows_bytes)
{
    result_row r = make_row("declared", "my_op", "custom", "n=4");
    roofline_traffic t;
    cr_assert_eq(roofline_traffic_eval(NULL, &r, NULL, &t, NULL), TUNE_OK);
    cr_expect(!t.modelled);
    cr_expect_eq(t.dram, 1234);
    cr_expect_eq(t.launches, 1);
    cr_expect_eq(t.chain, 0);
}

static const traffic_model bad_traffic[] = {
    {"op1", "custom", "n / zero", NULL, NULL, NULL, NULL, "", NULL, NULL},
    {"op1", "neg", "0 - n", NULL, NULL, NULL, NULL, "", NULL, NULL},
    {"op1", "prec", "n", NULL, NULL, NULL, "fp7", "", NULL, NULL},
    {"op1", "pat", "n", NULL, NULL, NULL, NULL, "", "n", "n"},
    {"op1", "pat_dram", "n", NULL, NULL, NULL, NULL, "", "n", "n"},
};
static const traffic_pattern bad_patterns[] = {
    {"op1", "pat", "n", "n / zero", NULL},
    {"op1", "pat_dram", "n", NULL, "n * (n > l2_bytes)"},
};

Test(roofline_model, model_errors_name_the_method_and_field)
{
    tune_family f = {.name = "t",
                     .traffic = bad_traffic,
                     .n_traffic = 5,
                     .traffic_patterns = bad_patterns,
                     .n_traffic_patterns = 2};
    result_row r = make_row("t", "op1", "custom", "n=4 zero=0");
    roofline_traffic t;
    tune_error err = {0};
    cr_expect_eq(roofline_traffic_eval(&f, &r, NULL, &t, &err), TUNE_ERR_EVAL);
    cr_expect(strstr(err.message, "custom: dram \"n / zero\": ") == err.message, "%s", err.message);
    cr_expect(strstr(err.message, "division by zero"), "%s", err.message);
    memset(&err, 0, sizeof err);
    r.method = "neg";
    cr_expect_eq(roofline_traffic_eval(&f, &r, NULL, &t, &err), TUNE_ERR_EVAL);
    cr_expect_str_eq(err.message, "neg: dram \"0 - n\" is -4: expected a finite number >= 0");
    memset(&err, 0, sizeof err);
    r.method = "prec";
    cr_expect_eq(roofline_traffic_eval(&f, &r, NULL, &t, &err), TUNE_ERR_INVALID);
    cr_expect_str_eq(err.message, "prec: unknown precision 'fp7'");
    memset(&err, 0, sizeof err);
    r.method = "pat";
    cr_expect_eq(roofline_traffic_eval(&f, &r, NULL, &t, &err), TUNE_ERR_EVAL);
    cr_expect(strstr(err.message, "pat: dram_random \"n / zero\": ") == err.message, "%s",
              err.message);
    memset(&err, 0, sizeof err);
    r.method = "pat_dram"; /* a device fact the caller does not give (dev NULL) */
    cr_expect_eq(roofline_traffic_eval(&f, &r, NULL, &t, &err), TUNE_ERR_EVAL);
    cr_expect(strstr(err.message, "pat_dram: issue_scattered_dram \"n * (n > l2_bytes)\": ") ==
                  err.message,
              "%s", err.message);
    memset(&err, 0, sizeof err);
    r.method = "other"; /* no entry for it, none for every method: the row's bytes */
    cr_expect_eq(roofline_traffic_eval(&f, &r, NULL, &t, &err), TUNE_OK);
    cr_expect(!t.modelled);
}

static roofline_ceilings ceilings(void)
{
    roofline_ceilings c;
    memset(&c, 0, sizeof c);
    c.read_bw = 1e12;
    c.copy_bw = 0.9e12;
    c.launch_s = 4e-6;
    c.latency_s = 1e-6;
    for (int p = 0; p < ROOFLINE_N_PRECISIONS; p++)
        c.rate[p] = NAN;
    c.rate[ROOFLINE_FP16] = 1e15;
    c.rate[ROOFLINE_FP8] = 2e15;
    return c;
}

Test(roofline_model, additive_time)
{
    roofline_ceilings c = ceilings();
    /* 4 us floor + 2 x 1 us chain + max(3e6 B / 1e12 B/s, 1e9 / 1e15) = 9 us, floor dominant */
    roofline_traffic t = {3e6, 1, 2, 1e9, 0, ROOFLINE_FP32, 1, 0, 0, 0, 0, 0};
    roofline_terms m;
    cr_expect_float_eq(roofline_model_time(&c, &t, ROOFLINE_FP16, &m), 9e-6, 1e-15);
    cr_expect_float_eq(m.floor, 4e-6, 1e-15);
    cr_expect_float_eq(m.chain, 2e-6, 1e-15);
    cr_expect_float_eq(m.transfer, 3e-6, 1e-15);
    cr_expect_float_eq(m.compute, 1e-6, 1e-15);
    cr_expect_eq(m.dominant, ROOFLINE_TERM_FLOOR);
    /* 2e10 FLOPs at 1e15: 20 us of compute, above the transfer: 4 + 2 + 20 */
    t.flops = 2e10;
    cr_expect_float_eq(roofline_model_time(&c, &t, ROOFLINE_FP16, &m), 26e-6, 1e-15);
    cr_expect_eq(m.dominant, ROOFLINE_TERM_COMPUTE);
    /* the model's own precision (fp8, 2e15) replaces the row's */
    t.has_precision = 1;
    t.precision = ROOFLINE_FP8;
    cr_expect_float_eq(roofline_model_time(&c, &t, ROOFLINE_FP16, &m), 16e-6, 1e-15);
    /* 2 launches, 5e7 bytes: 8 + 2 + 50 us, transfer dominant */
    roofline_traffic big = {5e7, 2, 2, NAN, 0, ROOFLINE_FP32, 1, 0, 0, 0, 0, 0};
    cr_expect_float_eq(roofline_model_time(&c, &big, ROOFLINE_FP16, &m), 60e-6, 1e-15);
    cr_expect_eq(m.dominant, ROOFLINE_TERM_TRANSFER);
    cr_expect_str_eq(roofline_term_str(m.dominant), "transfer");
}

Test(roofline_model, grid_floor_replaces_the_launch_overhead)
{
    roofline_ceilings c = ceilings();
    c.floor_s = 5e-6; /* measured: a grid-filling kernel costs more than a one-block one */
    roofline_traffic t = {3e6, 2, 1, NAN, 0, ROOFLINE_FP32, 1, 0, 0, 0, 0, 0};
    roofline_terms m;
    /* 2 launches x 5 us + 1 x 1 us + 3 us */
    cr_expect_float_eq(roofline_model_time(&c, &t, ROOFLINE_FP16, &m), 14e-6, 1e-15);
    cr_expect_float_eq(m.floor, 10e-6, 1e-15);
}

Test(roofline_model, unknown_ceilings_leave_terms_out)
{
    roofline_ceilings c = ceilings();
    c.latency_s = NAN; /* a calibration without the DRAM latency */
    roofline_traffic t = {3e6, 1, 2, NAN, 0, ROOFLINE_FP32, 1, 0, 0, 0, 0, 0};
    roofline_terms m;
    cr_expect_float_eq(roofline_model_time(&c, &t, ROOFLINE_FP16, &m), 7e-6, 1e-15);
    cr_expect_eq(m.chain, 0);
    roofline_traffic none = {NAN, 1, 0, NAN, 0, ROOFLINE_FP32, 1, 0, 0, 0, 0, 0};
    cr_expect(isnan(roofline_model_time(&c, &none, ROOFLINE_FP16, NULL)));
}

/* The gather baseline's issue-bound step: g k n elements; its bytes are the custom kernel's
 * reads and Bg written once (the GEMM reads Bg and A and writes the output after it). */
Test(roofline_model, gather_issue_step)
{
    /* step 3, g=1 k_pre=4 k=2 n=128: indices 32 + 1.75 rows x 256 = 448 + Bg 512 written */
    result_row r = make_row("gather_matmul", "gather_inner_matrix_only_bmv", "gather",
                            "g=1 k_pre=4 k=2 n=128 dtype=float16 transpose_B=0 indices=random");
    roofline_traffic t;
    const roofline_ceilings dev = h200_device();
    cr_assert_eq(roofline_traffic_eval(family_find("gather_matmul"), &r, &dev, &t, NULL), TUNE_OK);
    cr_expect_eq(t.issue, 256);
    cr_expect_float_eq(t.issue_dram, 32 + 448 + 512, 1e-9);
    /* step 1 (A gathered too): + A's picked sector 32 read and A[I] (2 fp16) written */
    r = make_row("gather_matmul", "gather_inner_bmv", "gather",
                 "g=1 k_pre=4 k=2 n=128 dtype=float16 transpose_B=0 indices=random");
    cr_assert_eq(roofline_traffic_eval(family_find("gather_matmul"), &r, &dev, &t, NULL), TUNE_OK);
    cr_expect_float_eq(t.issue_dram, 32 + 32 + 448 + 512 + 4, 1e-9);
    /* step 2, transposed: indices sectors(8) = 32, 1.75 rows of sectors(256), Bg 2 x 128 x 2 */
    r = make_row("gather_matmul", "gather_outer_bmv", "gather",
                 "g=1 k=128 n_pre=4 n=2 dtype=float16 transpose_B=1 indices=random");
    cr_assert_eq(roofline_traffic_eval(family_find("gather_matmul"), &r, &dev, &t, NULL), TUNE_OK);
    cr_expect_eq(t.issue, 256);
    cr_expect_float_eq(t.issue_dram, 32 + 448 + 512, 1e-9);
    /* the other methods have none */
    r = make_row("gather_matmul", "gather_outer_bmv", "custom",
                 "g=1 k=128 n_pre=4 n=2 dtype=float16 transpose_B=1 indices=random");
    cr_assert_eq(roofline_traffic_eval(family_find("gather_matmul"), &r, &dev, &t, NULL), TUNE_OK);
    cr_expect(t.issue == 0 && t.issue_dram == 0);
}

/* The gather kernel's launch geometry (at most 65536 blocks of 256 threads, 8 blocks per SM):
 * two dependent round trips per wave of blocks, less the first load's, which the floor holds. */
Test(roofline_model, gather_chain_per_wave)
{
    const tune_family *f = family_find("gather_matmul");
    const roofline_ceilings dev = h200_device(); /* 132 x 8 = 1056 blocks per wave */
    roofline_traffic t;
    /* g k n = 1024 x 128 x 128 = 2^24 elements: 2^24 / 256 + 1 blocks, capped at 65536;
     * 62 x 1056 = 65472 < 65536: 63 waves, 2 x 63 - 1 = 125 round trips */
    result_row r = make_row("gather_matmul", "gather_inner_matrix_only_bmv", "gather",
                            "g=1024 k_pre=1024 k=128 n=128 dtype=float16 transpose_B=0 "
                            "indices=random");
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect_eq(t.chain, 125);
    /* 2^23 elements: 32769 blocks; 31 x 1056 = 32736 < 32769: 32 waves, 63 */
    r = make_row("gather_matmul", "gather_inner_bmv", "gather",
                 "g=512 k_pre=1024 k=128 n=128 dtype=float16 transpose_B=0 indices=random");
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect_eq(t.chain, 63);
    /* 2 SMs (16 blocks per wave): 4 x 8 x 256 = 8192 elements, 33 blocks, 3 waves: 5 */
    roofline_ceilings small = dev;
    small.sm_count = 2;
    r = make_row("gather_matmul", "gather_outer_bmv", "gather",
                 "g=4 k=8 n_pre=512 n=256 dtype=float16 transpose_B=1 indices=random");
    cr_assert_eq(roofline_traffic_eval(f, &r, &small, &t, NULL), TUNE_OK);
    cr_expect_eq(t.chain, 5);
    /* the other methods do not depend on the device */
    r.method = "custom";
    cr_assert_eq(roofline_traffic_eval(f, &r, NULL, &t, NULL), TUNE_OK);
    cr_expect_eq(t.chain, 1);
    /* without the device's SM count the gather model cannot be evaluated, and says so */
    r.method = "gather";
    tune_error err = {0};
    cr_expect_eq(roofline_traffic_eval(f, &r, NULL, &t, &err), TUNE_ERR_EVAL);
    cr_expect(strstr(err.message, "gather: chain \"") == err.message, "%s", err.message);
    cr_expect(strstr(err.message, "sm_count"), "%s", err.message);
}

/* With B transposed, the gather kernel's rows in flight (the g's of every pass of its grid, those
 * of a wave of resident threads per pass), with half of the Bg they write, against half the L2:
 * each re-touched sector misses with probability 1 - share / in flight and is fetched again. */
Test(roofline_model, gather_l2_refetch)
{
    const tune_family *f = family_find("gather_matmul");
    roofline_traffic t;
    /* one SM (2048 resident threads), an L2 of 8192 bytes (a share of 4096). g=1 k_pre=128 k=16
     * n=16: 256 elements, one pass; a wave holds 2048 / 256 = 8 g's. Each of the 16 rows of B^T
     * loses 32 distinct(8, 16) = 225.7748257 bytes: 3612.397212 per g, with half its 512 bytes
     * of Bg 3868.397212, 30947.17769 in flight; miss 1 - 4096 / 30947.17769 = 0.8676454428 of
     * the 16 x 16 x 32 - 3612.397212 = 4579.602788 bytes touched again: 3973.471489 fetched
     * again. dram: indices sectors(64) 64 + 3612.397212 + 3973.471489 + Bg written and read
     * 1024 + A 32 + output 32 */
    roofline_ceilings dev = {0};
    dev.sm_count = 1;
    dev.l2_bytes = 8192;
    result_row r = make_row("gather_matmul", "gather_inner_matrix_only_bmv", "gather",
                            "g=1 k_pre=128 k=16 n=16 dtype=float16 transpose_B=1 indices=random");
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect(fabs(t.dram - 8737.868701) < 1e-5, "dram %.10g", t.dram);
    /* the gather step's own bytes: the same reads, Bg written once (512) */
    cr_expect(fabs(t.issue_dram - 8161.868701) < 1e-5, "issue_dram %.10g", t.issue_dram);
    /* an L2 that holds them: no sector fetched twice */
    dev.l2_bytes = 2 * 30948;
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect(fabs(t.dram - (64 + 3612.397212 + 1024 + 32 + 32)) < 1e-5, "dram %.10g", t.dram);
    /* a share of 29000 bytes holds the 28899.17769 bytes of rows in flight but not the 2048 of
     * Bg written beside them: miss 1 - 29000 / 30947.17769 = 0.06291939477 of 4579.602788 */
    dev.l2_bytes = 2 * 29000;
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect(fabs(t.dram - (64 + 3612.397212 + 288.1458357 + 1024 + 32 + 32)) < 1e-5,
              "dram %.10g", t.dram);
    /* identity indices (each sector's picks follow each other) and row-major B: none either */
    dev.l2_bytes = 8192;
    r = make_row("gather_matmul", "gather_inner_matrix_only_bmv", "gather",
                 "g=1 k_pre=128 k=16 n=16 dtype=float16 transpose_B=1 indices=identity");
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect_float_eq(t.dram, 64 + 16 * 32 + 1024 + 32 + 32, 1e-9);
    /* an H200, step 1 at g=3 k_pre=128 k=16 n=524288: 2^24 + 2^23 elements, 2 passes of the
     * grid, a wave's 270336 threads within one g (k n = 2^23): 2 g's in flight of
     * 524288 x 225.7748257 = 118371031.8 bytes of rows and 16777216 / 2 of Bg, 253519279.7,
     * against 31457280: miss 0.8759176026 of 16 x 524288 x 32 - 118371031.8 bytes: 131444070.7
     * fetched again per g. Per g: indices 64,
     * A's picked sectors (a row of 128) 225.7748257, B 118371031.8 + 131444070.7, Bg and A[I]
     * written and read 2 (16 x 524288 + 16) 2 = 33554496, output sectors(2^20) = 1048576 */
    dev = h200_device();
    r = make_row("gather_matmul", "gather_inner_bmv", "gather",
                 "g=3 k_pre=128 k=16 n=524288 dtype=float16 transpose_B=1 indices=random");
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    double per_g =
        64 + 225.7748257225603 + 118371031.8284297 + 131444070.6600218 + 33554496 + 1048576;
    cr_expect(fabs(t.dram - 3 * per_g) < 1e-3, "dram %.10g, want %.10g", t.dram, 3 * per_g);
}

/* With the L2 fetching 64 bytes from DRAM for every miss (an H200's default), a gathered part
 * of a row costs the 64-byte units its picks touch: fp16, distinct(n, d) = n (1 - (1 - 1/n)^d). */
Test(roofline_model, fetch_granularity)
{
    const tune_family *f = family_find("gather_matmul");
    roofline_traffic t;
    roofline_ceilings dev = h200_device();
    dev.fetch_bytes = 64;
    /* step 1, B transposed: a 256-byte row is 4 units, 16 picks touch 4 (1 - (3/4)^16) =
     * 3.959909617 of them: 253.4342155 bytes, for A's row and each of the n = 4 rows of B^T;
     * indices sectors(64, 64) = 64, output sectors(8) = 32 (written: 32-byte sectors) */
    result_row r = make_row("gather_matmul", "gather_inner_bmv", "custom",
                            "g=1 k_pre=128 k=16 n=4 dtype=float16 transpose_B=1 indices=random");
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect(fabs(t.dram - 1363.17107743) < 1e-6, "dram %.12g", t.dram);
    /* 32-byte sectors without a measured granularity: 8 sectors, 32 distinct(8, 16) = 225.7748257
     */
    dev.fetch_bytes = NAN;
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect(fabs(t.dram - (64 + 5 * 225.7748257226 + 32)) < 1e-6, "dram %.12g", t.dram);
    /* 128-byte units: 2 per row, 128 x 2 (1 - 2^-16) = 255.9960938 */
    dev.fetch_bytes = 128;
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect(fabs(t.dram - (128 + 5 * 255.99609375 + 32)) < 1e-6, "dram %.12g", t.dram);
    /* step 3, row-major B: whole rows of 256 bytes (1.75 of them), indices sectors(8, 64) = 64,
     * A sectors(4, 64) = 64, output 256 */
    dev.fetch_bytes = 64;
    r = make_row("gather_matmul", "gather_inner_matrix_only_bmv", "custom",
                 "g=1 k_pre=4 k=2 n=128 dtype=float16 transpose_B=0 indices=random");
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect(fabs(t.dram - 832) < 1e-9, "dram %.12g", t.dram);
    /* step 2, row-major B: each of k = 2 rows of 64 fp16 (2 units) loses 64 distinct(2, 3) = 112
     * bytes to 3 picks; indices 64, A 64, output 32 */
    r = make_row("gather_matmul", "gather_outer_bmv", "custom",
                 "g=1 k=2 n_pre=64 n=3 dtype=float16 transpose_B=0 indices=random");
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect(fabs(t.dram - (64 + 224 + 64 + 32)) < 1e-9, "dram %.12g", t.dram);
    /* the gather baseline's L2 re-fetches (the case of gather_l2_refetch): what the L2 holds of a
     * g's rows is what it fetched, 16 x 253.4342155 = 4054.947448 bytes, with half its 512
     * bytes of Bg 4310.947448, 34487.57958 in flight; miss 1 - 4096 / 34487.57958 = 0.8812326046
     * of the sectors touched again, counted in 32-byte sectors as the random-sector rate is:
     * 16 x 16 x 32 - 16 x 225.7748257 = 4579.602788 -> 4035.695293. dram: indices 64, rows,
     * re-fetches, Bg written and read 1024, A sectors(32, 64) = 64, output 32 */
    dev.sm_count = 1;
    dev.l2_bytes = 8192;
    r = make_row("gather_matmul", "gather_inner_matrix_only_bmv", "gather",
                 "g=1 k_pre=128 k=16 n=16 dtype=float16 transpose_B=1 indices=random");
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect(fabs(t.dram - 9274.642741) < 1e-5, "dram %.12g", t.dram);
}

Test(roofline_model, issue_term)
{
    roofline_ceilings c = ceilings();
    c.gather_elem_s = 1e-12;
    /* 2 launches x 4 us + 1 us chain; 5e7 bytes of which the step's 3e7 run under its 1e8
     * elements x 1 ps = 100 us: 8 + 1 + 2e7 / 1e12 (20 us) + max(100, 30) = 129 us */
    roofline_traffic t = {5e7, 2, 1, NAN, 0, ROOFLINE_FP32, 1, 1e8, 3e7, 0, 0, 0};
    roofline_terms m;
    cr_expect_float_eq(roofline_model_time(&c, &t, ROOFLINE_FP16, &m), 129e-6, 1e-15);
    cr_expect_float_eq(m.issue, 100e-6, 1e-15);
    cr_expect_float_eq(m.transfer, 20e-6, 1e-15);
    cr_expect_eq(m.dominant, ROOFLINE_TERM_ISSUE);
    cr_expect_str_eq(roofline_term_str(m.dominant), "issue");
    /* 0.1 ps per element: the step's 30 us of bytes take longer than its 10 us of issue:
     * 8 + 1 + 20 + 30 = 59 us, the same as with no issue term; 40 us of transfer not hidden */
    c.gather_elem_s = 1e-13;
    cr_expect_float_eq(roofline_model_time(&c, &t, ROOFLINE_FP16, &m), 59e-6, 1e-15);
    cr_expect_float_eq(m.transfer, 40e-6, 1e-15);
    cr_expect_eq(m.dominant, ROOFLINE_TERM_TRANSFER);
    /* a calibration without the gather probe: the three-term model over all 5e7 bytes */
    c.gather_elem_s = NAN;
    cr_expect_float_eq(roofline_model_time(&c, &t, ROOFLINE_FP16, &m), 59e-6, 1e-15);
    cr_expect_eq(m.issue, 0);
    cr_expect_float_eq(m.transfer, 50e-6, 1e-15);
}

/* The issue step's scattered elements at the transposed probe's seconds per element, random
 * sectors at the random-sector rate (those of the step first); either ceiling missing: the
 * other one, as before they were measured. */
Test(roofline_model, scattered_elements_and_random_sectors)
{
    roofline_ceilings c = ceilings();
    c.gather_elem_s = 1e-12;
    c.gather_elem_t_s = 3e-12;
    c.sector_bw = 0.25e12;
    /* 1e8 elements, 4e7 of them scattered: 6e7 x 1 ps + 4e7 x 3 ps = 180 us. The step's 3e7
     * bytes, 1e7 of them random: 20 + 40 = 60 us; all 5e7: 40 + 40 = 80 us, 20 us outside the
     * step. 2 x 4 + 1 + 20 + max(180, 60) = 209 us */
    roofline_traffic t = {5e7, 2, 1, NAN, 0, ROOFLINE_FP32, 1, 1e8, 3e7, 4e7, 1e7, 0};
    roofline_terms m;
    cr_expect_float_eq(roofline_model_time(&c, &t, ROOFLINE_FP16, &m), 209e-6, 1e-15);
    cr_expect_float_eq(m.issue, 180e-6, 1e-15);
    cr_expect_float_eq(m.transfer, 20e-6, 1e-15);
    cr_expect_eq(m.dominant, ROOFLINE_TERM_ISSUE);
    /* 0.1 and 0.2 ps: 6 + 8 = 14 us of issue under the step's 60 us of bytes: 8 + 1 + 20 + 60 =
     * 89 us; 80 - 14 = 66 us of transfer not hidden */
    c.gather_elem_s = 1e-13;
    c.gather_elem_t_s = 2e-13;
    cr_expect_float_eq(roofline_model_time(&c, &t, ROOFLINE_FP16, &m), 89e-6, 1e-15);
    cr_expect_float_eq(m.transfer, 66e-6, 1e-15);
    cr_expect_eq(m.dominant, ROOFLINE_TERM_TRANSFER);
    /* 4e7 random bytes, more than the step's 3e7: the step's all random, 120 us; the other 2e7
     * bytes, 1e7 random, 10 + 40 = 50 us: 8 + 1 + 50 + max(180, 120) = 239 us */
    c.gather_elem_s = 1e-12;
    c.gather_elem_t_s = 3e-12;
    t.dram_random = 4e7;
    cr_expect_float_eq(roofline_model_time(&c, &t, ROOFLINE_FP16, &m), 239e-6, 1e-15);
    cr_expect_float_eq(m.transfer, 170e-6 - 120e-6, 1e-15);
    /* a calibration without the two ceilings: 1e8 x 1 ps, every byte at the read bandwidth, as
     * in issue_term: 129 us */
    t.dram_random = 1e7;
    c.gather_elem_t_s = NAN;
    c.sector_bw = NAN;
    cr_expect_float_eq(roofline_model_time(&c, &t, ROOFLINE_FP16, &m), 129e-6, 1e-15);
    cr_expect_float_eq(m.issue, 100e-6, 1e-15);
    /* the three-term model without the issue step: random sectors still at their rate,
     * 4e7 / 1e12 + 1e7 / 0.25e12 = 80 us: 8 + 1 + 80 */
    c.gather_elem_s = NAN;
    c.sector_bw = 0.25e12;
    cr_expect_float_eq(roofline_model_time(&c, &t, ROOFLINE_FP16, &m), 89e-6, 1e-15);
    cr_expect_eq(m.issue, 0);
}

/* The scattered elements gathered from a source the L2 cannot hold at the DRAM-resident probe's
 * seconds per element; without that ceiling, at the L2-resident probe's as before. */
Test(roofline_model, scattered_elements_from_dram)
{
    roofline_ceilings c = ceilings();
    c.gather_elem_s = 1e-12;
    c.gather_elem_t_s = 3e-12;
    c.gather_elem_t_dram_s = 5e-12;
    /* 1e8 elements, 4e7 scattered, 1e7 of those from DRAM: 6e7 x 1 + 3e7 x 3 + 1e7 x 5 ps =
     * 200 us; the step's 3e7 bytes 30 us, 20 us of bytes outside it: 2 x 4 + 1 + 20 + 200 */
    roofline_traffic t = {5e7, 2, 1, NAN, 0, ROOFLINE_FP32, 1, 1e8, 3e7, 4e7, 0, 1e7};
    roofline_terms m;
    cr_expect_float_eq(roofline_model_time(&c, &t, ROOFLINE_FP16, &m), 229e-6, 1e-15);
    cr_expect_float_eq(m.issue, 200e-6, 1e-15);
    cr_expect_eq(m.dominant, ROOFLINE_TERM_ISSUE);
    /* more from DRAM than scattered: all 4e7 at 5 ps, 60 + 200 = 260 us: 289 us */
    t.issue_scattered_dram = 5e7;
    cr_expect_float_eq(roofline_model_time(&c, &t, ROOFLINE_FP16, &m), 289e-6, 1e-15);
    /* none from DRAM: 60 + 120 = 180 us, the L2-resident probe's price: 209 us */
    t.issue_scattered_dram = 0;
    cr_expect_float_eq(roofline_model_time(&c, &t, ROOFLINE_FP16, &m), 209e-6, 1e-15);
    /* a calibration without the DRAM-resident probe: today's 209 us, whatever the count */
    t.issue_scattered_dram = 1e7;
    c.gather_elem_t_dram_s = NAN;
    cr_expect_float_eq(roofline_model_time(&c, &t, ROOFLINE_FP16, &m), 209e-6, 1e-15);
    cr_expect_float_eq(m.issue, 180e-6, 1e-15);
}

/* The gather baseline's transposed elements from DRAM exactly when the step's B (g x k_pre x n,
 * or g x k x n_pre, elements of dsize bytes) is larger than the device's L2, end to end. */
Test(roofline_model, gather_scattered_dram_threshold)
{
    const tune_family *f = family_find("gather_matmul");
    roofline_traffic t;
    roofline_ceilings dev = {0};
    dev.sm_count = 1;
    /* step 3, g = 1, k_pre = 128, n = 16: B is 4096 bytes; not larger than a 4096-byte L2 */
    result_row r = make_row("gather_matmul", "gather_inner_matrix_only_bmv", "gather",
                            "g=1 k_pre=128 k=16 n=16 dtype=float16 transpose_B=1 indices=random");
    dev.l2_bytes = 4096;
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect(t.issue_scattered == 256 && t.issue_scattered_dram == 0);
    dev.l2_bytes = 4095;
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect(t.issue_scattered == 256 && t.issue_scattered_dram == 256);
    /* row-major B: no scattered elements, none from DRAM */
    r = make_row("gather_matmul", "gather_inner_bmv", "gather",
                 "g=1 k_pre=128 k=16 n=16 dtype=float16 transpose_B=0 indices=random");
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect(t.issue_scattered == 0 && t.issue_scattered_dram == 0);
    /* step 1 at g = 3, k_pre = 128, n = 524288 on an H200: B is 384 MiB, over its 60 MiB */
    dev = h200_device();
    r = make_row("gather_matmul", "gather_inner_bmv", "gather",
                 "g=3 k_pre=128 k=16 n=524288 dtype=float16 transpose_B=1 indices=random");
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect_eq(t.issue_scattered_dram, 3.0 * 16 * 524288);
    /* step 1 at g = 32, k_pre = 128, n = 4096: B is 32 MiB, which the H200's L2 holds */
    r = make_row("gather_matmul", "gather_inner_bmv", "gather",
                 "g=32 k_pre=128 k=16 n=4096 dtype=float16 transpose_B=1 indices=random");
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect(t.issue_scattered == 32.0 * 16 * 4096 && t.issue_scattered_dram == 0);
    /* step 2, g = 1, k = 128, n_pre = 4, n = 2: B is 1024 bytes. Traffic (test traffic's case):
     * dram 32 + 448 + 1024 + 256 + 32 = 1792 B, the step's 32 + 448 + 512 = 992 B; 256
     * elements, 2 blocks: one wave, chain 1, two launches */
    r = make_row("gather_matmul", "gather_outer_bmv", "gather",
                 "g=1 k=128 n_pre=4 n=2 dtype=float16 transpose_B=1 indices=random");
    dev.sm_count = 1;
    dev.l2_bytes = 1024;
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect(t.dram == 1792 && t.issue_dram == 992 && t.chain == 1 && t.launches == 2);
    cr_expect(t.issue_scattered == 256 && t.issue_scattered_dram == 0);
    roofline_ceilings c = ceilings();
    c.sm_count = dev.sm_count;
    c.l2_bytes = dev.l2_bytes;
    c.gather_elem_s = 1e-12;
    c.gather_elem_t_s = 3e-12;
    c.gather_elem_t_dram_s = 5e-12;
    /* what the step gathers fits: 2 x 4 + 1 us + 0.8 ns outside the step + max(256 x 3 ps, 0.992 ns) = 9001.792 ns */
    roofline_terms m;
    cr_expect_float_eq(roofline_model_time(&c, &t, ROOFLINE_FP16, &m), 9001.792e-9, 1e-16);
    /* the step gathers distinct(4, 2) = 1.75 rows of 128 elements: 448 bytes; a 400-byte L2 cannot
     * hold them: the elements from DRAM, max(256 x 5 ps, 0.992 ns) = 1.28 ns: 9002.08 ns */
    dev.l2_bytes = 448;
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect_eq(t.issue_scattered_dram, 0, "448 bytes fit a 448-byte L2");
    dev.l2_bytes = 400;
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect_eq(t.issue_scattered_dram, 256);
    cr_expect_float_eq(roofline_model_time(&c, &t, ROOFLINE_FP16, &m), 9002.08e-9, 1e-16);
    cr_expect_float_eq(m.issue, 1.28e-9, 1e-18);
    /* without the DRAM-resident probe: 256 x 3 ps under the step's bytes, 9001.792 ns */
    c.gather_elem_t_dram_s = NAN;
    cr_expect_float_eq(roofline_model_time(&c, &t, ROOFLINE_FP16, &m), 9001.792e-9, 1e-16);
}

/* The gather baseline's patterns: with B transposed every element scattered, and (inner ops,
 * random indices) the L2 re-fetches as random sectors; none for row-major B or other methods. */
Test(roofline_model, gather_patterns)
{
    const tune_family *f = family_find("gather_matmul");
    roofline_traffic t;
    /* gather_l2_refetch's case: 3973.471489 bytes fetched again, 16 x 16 = 256 elements */
    roofline_ceilings dev = {0};
    dev.sm_count = 1;
    dev.l2_bytes = 8192;
    result_row r = make_row("gather_matmul", "gather_inner_matrix_only_bmv", "gather",
                            "g=1 k_pre=128 k=16 n=16 dtype=float16 transpose_B=1 indices=random");
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect_eq(t.issue_scattered, 256);
    cr_expect(fabs(t.dram_random - 3973.471489) < 1e-5, "dram_random %.10g", t.dram_random);
    /* an L2 that holds the rows and Bg's half: nothing fetched again */
    dev.l2_bytes = 2 * 30948;
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect(t.issue_scattered == 256 && t.dram_random == 0);
    /* step 1 at g=3 k_pre=128 k=16 n=524288 on an H200 (gather_l2_refetch): 3 x 131444070.7 */
    dev = h200_device();
    r = make_row("gather_matmul", "gather_inner_bmv", "gather",
                 "g=3 k_pre=128 k=16 n=524288 dtype=float16 transpose_B=1 indices=random");
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect_eq(t.issue_scattered, 3.0 * 16 * 524288);
    cr_expect(fabs(t.dram_random - 3 * 131444070.6600218) < 1e-3, "dram_random %.10g",
              t.dram_random);
    /* row-major B: the calibrated pattern, no re-fetches */
    r = make_row("gather_matmul", "gather_inner_bmv", "gather",
                 "g=3 k_pre=128 k=16 n=524288 dtype=float16 transpose_B=0 indices=random");
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect(t.issue_scattered == 0 && t.dram_random == 0);
    /* step 2 transposed: each element one of 32 gathered rows of B^T per warp; no re-fetches */
    r = make_row("gather_matmul", "gather_outer_bmv", "gather",
                 "g=1 k=128 n_pre=4 n=2 dtype=float16 transpose_B=1 indices=random");
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect(t.issue_scattered == 256 && t.dram_random == 0);
    /* the other methods have none */
    r.method = "custom";
    cr_assert_eq(roofline_traffic_eval(f, &r, &dev, &t, NULL), TUNE_OK);
    cr_expect(t.issue_scattered == 0 && t.dram_random == 0);
}

Test(roofline_model, pct_read_bw)
{
    roofline_traffic t = {4.5e6, 1, 0, NAN, 0, ROOFLINE_FP32, 1, 0, 0, 0, 0, 0};
    cr_expect_float_eq(roofline_pct_read_bw(&t, 2e-6, 4.5e12), 50.0, 1e-12);
    cr_expect(isnan(roofline_pct_read_bw(&t, 0, 4.5e12)));
    cr_expect(isnan(roofline_pct_read_bw(&t, 2e-6, NAN)));
}
