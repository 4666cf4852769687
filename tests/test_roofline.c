#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/gpu.h"
#include "analysis/roofline_calibration.h"
#include "analysis/roofline_report.h"
#include "device/calibrate.h"
#include "util.h"

TestSuite(roofline, .init = make_tmpdir, .fini = remove_tmpdir);


static int close_to(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* ---- the specs table ---- */

Test(roofline, specs_table_loads_and_every_entry_is_complete)
{
    tune_error err = {0};
    roofline_specs *s = roofline_specs_load(NULL, &err);
    cr_assert_not_null(s, "%s: %s", err.where, err.message);
    cr_assert_eq(roofline_specs_count(s), 8);
    for (size_t i = 0; i < roofline_specs_count(s); i++) {
        const roofline_gpu *g = roofline_specs_at(s, i);
        cr_assert(g->name && *g->name);
        cr_assert_gt(g->n_match, 0, "%s", g->name);
        cr_assert_gt(g->mem_bw, 1e11, "%s", g->name);
        cr_assert_gt(g->flops[ROOFLINE_FP32], 1e12, "%s", g->name);
        for (int p = 0; p < ROOFLINE_N_PRECISIONS; p++)
            cr_assert(isnan(g->flops[p]) || g->flops[p] >= g->flops[ROOFLINE_FP32], "%s %s",
                      g->name, roofline_precision_str((roofline_precision)p));
        /* fp16 and bf16 tensor rates are both given on every GPU of the table */
        cr_assert(isfinite(g->flops[ROOFLINE_FP16]) && isfinite(g->flops[ROOFLINE_BF16]) &&
                      isfinite(g->flops[ROOFLINE_TF32]) && isfinite(g->flops[ROOFLINE_INT8]),
                  "%s", g->name);
        cr_assert_gt(g->sm_count, 0, "%s", g->name);
        cr_assert_gt(g->l2_bytes, (size_t)1 << 20, "%s", g->name);
        cr_assert(g->frac_memory > 0.5 && g->frac_memory <= 1, "%s", g->name);
        cr_assert(g->frac_matmul > 0.5 && g->frac_matmul <= 1, "%s", g->name);
        cr_assert(g->launch_s > 0 && g->launch_s < 1e-4);
        const char *src[] = {g->source_mem_bw, g->source_flops, g->source_sm_count, g->source_l2,
                             g->source_achievable};
        for (size_t k = 0; k < 5; k++)
            cr_assert(src[k] && strlen(src[k]) > 10, "%s: source %zu", g->name, k);
    }
    roofline_specs_free(s);
}

Test(roofline, specs_default_path_found)
{
    tune_error err = {0};
    char dir[4096];
    cr_assert_not_null(roofline_find_data_dir(dir, sizeof dir));
    roofline_specs *s = roofline_specs_load(NULL, &err);
    cr_assert_not_null(s, "%s", err.message);
    roofline_specs_free(s);
    roofline_specs_free(NULL);
}

typedef struct {
    char device[64];
    char expect[64]; /* entry name, "" for no match */
} match_case;

ParameterizedTestParameters(roofline, name_matching)
{
    static match_case cases[] = {
        {"NVIDIA H200", "NVIDIA H200 SXM 141GB"},
        {"NVIDIA H200  ", "NVIDIA H200 SXM 141GB"},
        {"nvidia h200", "NVIDIA H200 SXM 141GB"},
        {"NVIDIA H200 NVL", ""},
        {"NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB"},
        {"NVIDIA H100 PCIe", "NVIDIA H100 PCIe 80GB"},
        {"NVIDIA H100 NVL", ""},
        {"NVIDIA A100-SXM4-40GB", "NVIDIA A100 SXM4 40GB"},
        {"NVIDIA A100-SXM4-80GB", "NVIDIA A100 SXM4 80GB"},
        {"NVIDIA A100 80GB PCIe", ""},
        {"NVIDIA A10G", "NVIDIA A10G"},
        {"NVIDIA A10", ""},
        {"NVIDIA L4", "NVIDIA L4"},
        {"NVIDIA L40S", ""},
        {"NVIDIA B200", "NVIDIA B200"},
        {"Tesla T4", ""},
    };
    return cr_make_param_array(match_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(match_case *c, roofline, name_matching)
{
    tune_error err = {0};
    roofline_specs *s = roofline_specs_load(NULL, &err);
    cr_assert_not_null(s);
    const roofline_gpu *g = roofline_specs_match(s, c->device);
    if (!c->expect[0])
        cr_expect_null(g, "'%s' matched %s", c->device, g ? g->name : "");
    else {
        cr_assert_not_null(g, "'%s' matched nothing", c->device);
        cr_expect_str_eq(g->name, c->expect);
    }
    roofline_specs_free(s);
}

typedef struct {
    char file[32];
    char text[512];
    tune_status code;
    char where[64];   /* expected substring of err.where */
    char message[64]; /* expected substring of err.message */
} invalid_case;

#define GPU_OK                                                                                     \
    "\"name\": \"X\", \"match\": [\"X\"], \"sm_count\": 1, \"l2_bytes\": 1e6, "                    \
    "\"flops\": {\"fp32\": 1e12, \"tf32\": null, \"fp16\": 2e12, \"bf16\": 2e12, \"fp8\": null, "  \
    "\"int8\": null}, "                                                                            \
    "\"source\": {\"mem_bw\": \"a\", \"flops\": \"b\", \"sm_count\": \"c\", \"l2_bytes\": \"d\", " \
    "\"achievable\": \"e\"}"

ParameterizedTestParameters(roofline, invalid_specs)
{
    static invalid_case cases[] = {
        {"missing_bw.json",
         "{\"launch_overhead_s\": 2e-6, \"gpus\": [{" GPU_OK
         ", \"achievable\": {\"memory\": 0.9, \"matmul\": 0.8}}]}",
         TUNE_ERR_INVALID, ":1:38: $.gpus[0]", "missing \"mem_bw\""},
        {"fraction.json",
         "{\"launch_overhead_s\": 2e-6, \"gpus\": [{" GPU_OK
         ", \"mem_bw\": 1e12,\n \"achievable\": {\"memory\": 1.5, \"matmul\": 0.8}}]}",
         TUNE_ERR_INVALID, ":2:27: $.gpus[0].achievable.memory", "at most 1"},
        {"fp32_null.json",
         "{\"launch_overhead_s\": 2e-6, \"gpus\": [{\"name\": \"X\", \"match\": [\"X\"], "
         "\"mem_bw\": 1, \"flops\": {\"fp32\": null}}]}",
         TUNE_ERR_INVALID, "$.gpus[0].flops.fp32", "expected a positive number"},
        {"no_gpus.json", "{\"launch_overhead_s\": 2e-6, \"gpus\": []}", TUNE_ERR_INVALID, "$.gpus",
         "non-empty array"},
        {"syntax.json", "{\"gpus\": [}", TUNE_ERR_PARSE, "syntax.json:1:", ""},
    };
    return cr_make_param_array(invalid_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(invalid_case *c, roofline, invalid_specs)
{
    char path[256];
    write_file(c->file, c->text, path, sizeof path);
    tune_error err = {0};
    roofline_specs *s = roofline_specs_load(path, &err);
    cr_expect_null(s);
    cr_expect_eq(err.code, c->code, "%s: %s", err.where, err.message);
    cr_expect(strstr(err.where, c->where) != NULL, "where: %s", err.where);
    cr_expect(strstr(err.message, c->message) != NULL, "message: %s", err.message);
    roofline_specs_free(s);
}

Test(roofline, precision_names)
{
    roofline_precision p;
    cr_assert_eq(roofline_precision_parse("float16", &p), 0);
    cr_expect_eq(p, ROOFLINE_FP16);
    cr_assert_eq(roofline_precision_parse("bfloat16", &p), 0);
    cr_expect_eq(p, ROOFLINE_BF16);
    cr_assert_eq(roofline_precision_parse("float8_e4m3fn", &p), 0);
    cr_expect_eq(p, ROOFLINE_FP8);
    cr_expect_eq(roofline_precision_parse("int4", &p), -1);
    for (int i = 0; i < ROOFLINE_N_PRECISIONS; i++) {
        cr_assert_eq(roofline_precision_parse(roofline_precision_str((roofline_precision)i), &p),
                     0);
        cr_expect_eq(p, (roofline_precision)i);
    }
}

/* ---- the model ---- */

static roofline_ceilings hand_ceilings(void)
{
    roofline_ceilings c;
    c.read_bw = 2e12;
    c.copy_bw = 1e12;
    for (int p = 0; p < ROOFLINE_N_PRECISIONS; p++)
        c.rate[p] = NAN;
    c.rate[ROOFLINE_FP16] = 1e15;
    c.rate[ROOFLINE_FP32] = 5e13;
    c.launch_s = 2e-6;
    c.latency_s = c.floor_s = c.gather_elem_s = NAN;
    c.sm_count = 132;
    c.l2_bytes = 62914560;
    c.origin = ROOFLINE_FROM_CALIBRATION;
    return c;
}

Test(roofline, time_memory_bound)
{
    roofline_ceilings c = hand_ceilings();
    roofline_bound b;
    /* 4 GB at max(read, copy) = 2 TB/s: 2 ms; 1 GFLOP at 1 PFLOP/s: 1 us */
    cr_expect(close_to(roofline_time(&c, 4e9, 1e9, ROOFLINE_FP16, &b), 2e-3));
    cr_expect_eq(b, ROOFLINE_BOUND_MEMORY);
}

Test(roofline, time_compute_bound)
{
    roofline_ceilings c = hand_ceilings();
    roofline_bound b;
    /* 2 * 8192^3 FLOP fp16 at 1 PFLOP/s = 1.0995 ms; 3 * 8192^2 * 2 bytes at 2 TB/s = 0.2 ms */
    double flops = 2.0 * 8192.0 * 8192.0 * 8192.0, bytes = 3.0 * 8192.0 * 8192.0 * 2.0;
    cr_expect(close_to(roofline_time(&c, bytes, flops, ROOFLINE_FP16, &b), flops / 1e15));
    cr_expect_eq(b, ROOFLINE_BOUND_COMPUTE);
    /* the same in fp32 at 50 TFLOP/s */
    cr_expect(close_to(roofline_time(&c, bytes, flops, ROOFLINE_FP32, &b), flops / 5e13));
}

Test(roofline, time_launch_bound)
{
    roofline_ceilings c = hand_ceilings();
    roofline_bound b;
    cr_expect(close_to(roofline_time(&c, 1e3, 1e3, ROOFLINE_FP16, &b), 2e-6));
    cr_expect_eq(b, ROOFLINE_BOUND_LAUNCH);
}

Test(roofline, time_unknown_terms_left_out)
{
    roofline_ceilings c = hand_ceilings();
    roofline_bound b;
    /* no fp8 rate: the compute term is left out, memory remains */
    cr_expect(close_to(roofline_time(&c, 2e9, 1e15, ROOFLINE_FP8, &b), 1e-3));
    cr_expect_eq(b, ROOFLINE_BOUND_MEMORY);
    /* unknown FLOPs */
    cr_expect(close_to(roofline_time(&c, 2e9, NAN, ROOFLINE_FP16, &b), 1e-3));
    c.launch_s = NAN;
    cr_expect(isnan(roofline_time(&c, NAN, NAN, ROOFLINE_FP16, &b)));
}

Test(roofline, ceilings_from_specs_and_calibration)
{
    tune_error err = {0};
    roofline_specs *s = roofline_specs_load(NULL, &err);
    cr_assert_not_null(s);
    const roofline_gpu *g = roofline_specs_match(s, "NVIDIA H200");
    cr_assert_not_null(g);
    roofline_ceilings c;
    roofline_ceilings_from_gpu(g, &c);
    cr_expect(close_to(c.read_bw, g->mem_bw * g->frac_memory));
    cr_expect(close_to(c.rate[ROOFLINE_BF16], g->flops[ROOFLINE_BF16] * g->frac_matmul));
    cr_expect(close_to(c.launch_s, g->launch_s));
    /* the device facts traffic models read */
    cr_expect_eq(c.sm_count, 132);
    cr_expect(close_to(c.l2_bytes, 62914560));
    cr_expect_eq(c.origin, ROOFLINE_FROM_SPECS);

    roofline_calibration cal;
    roofline_calibration_init(&cal);
    cal.read_bw = 4.5e12;
    cal.gemm_rate[ROOFLINE_FP16] = 7e14;
    roofline_ceilings_from_calibration(&cal, g, &c);
    cr_expect(close_to(c.read_bw, 4.5e12));
    cr_expect(close_to(c.rate[ROOFLINE_FP16], 7e14));
    /* gaps come from peak x achievable */
    cr_expect(close_to(c.copy_bw, g->mem_bw * g->frac_memory));
    cr_expect(close_to(c.rate[ROOFLINE_FP8], g->flops[ROOFLINE_FP8] * g->frac_matmul));
    cr_expect_eq(c.origin, ROOFLINE_FROM_CALIBRATION);
    cr_expect_eq(c.sm_count, 132, "a calibration without its device's facts: the table's");
    roofline_ceilings_from_calibration(&cal, NULL, &c);
    cr_expect(isnan(c.copy_bw));
    cr_expect(c.sm_count == 0 && c.l2_bytes == 0, "unknown");
    cal.sm_count = 114;
    cal.l2_bytes = 52428800;
    roofline_ceilings_from_calibration(&cal, g, &c);
    cr_expect_eq(c.sm_count, 114, "the calibrated device's own");
    cr_expect(close_to(c.l2_bytes, 52428800));
    roofline_specs_free(s);
}

/* A device's ceilings by name: its calibration file under the results root (gaps from the
 * table), else the table's, else none; each with where they came from. */
Test(roofline, ceilings_found_by_device_name)
{
    roofline_calibration cal;
    roofline_calibration_init(&cal);
    snprintf(cal.device, sizeof cal.device, "NVIDIA H200");
    snprintf(cal.date, sizeof cal.date, "2026-11-22T05:00:00Z");
    cal.read_bw = 4.5e12;
    char path[512], source[512], want[1024];
    roofline_calibration_path(tmpdir, cal.device, path, sizeof path);
    tune_error err = {0};
    cr_assert_eq(roofline_calibration_save(path, &cal, &err), TUNE_OK, "%s", err.message);
    roofline_ceilings c;
    cr_assert_eq(roofline_ceilings_find(tmpdir, "NVIDIA H200", &c, source, sizeof source), 1);
    cr_expect_eq(c.origin, ROOFLINE_FROM_CALIBRATION);
    cr_expect(close_to(c.read_bw, 4.5e12));
    cr_expect_eq(c.sm_count, 132, "the gaps from the specs table");
    snprintf(want, sizeof want, "calibration %s (2026-11-22T05:00:00Z)", path);
    cr_expect_str_eq(source, want);
    cr_assert_eq(roofline_ceilings_find(tmpdir, "NVIDIA H100 80GB HBM3", &c, NULL, 0), 1,
                 "no calibration: the specs table's");
    cr_expect_eq(c.origin, ROOFLINE_FROM_SPECS);
    cr_assert_eq(roofline_ceilings_find(tmpdir, "NVIDIA H100 80GB HBM3", &c, source, sizeof source),
                 1);
    cr_expect(strncmp(source, "specs table: ", 13) == 0 &&
                  strstr(source, ", peak x achievable") != NULL,
              "%s", source);
    cr_expect_eq(roofline_ceilings_find(tmpdir, "Some GPU 9000", &c, source, sizeof source), 0);
    cr_expect_str_eq(source, "none: device not in the specs table");
    write_file("calibration/nvidia-l4.json", "{not json", path, sizeof path);
    cr_expect_eq(roofline_ceilings_find(tmpdir, "NVIDIA L4", &c, NULL, 0), 1);
    cr_expect_eq(c.origin, ROOFLINE_FROM_SPECS, "an unreadable calibration file counts as none");
}

/* ---- calibration files ---- */

Test(roofline, slug_and_path)
{
    char buf[256];
    cr_expect_str_eq(roofline_device_slug("NVIDIA H200", buf, sizeof buf), "nvidia-h200");
    cr_expect_str_eq(roofline_device_slug("NVIDIA A100-SXM4-80GB", buf, sizeof buf),
                     "nvidia-a100-sxm4-80gb");
    cr_expect_str_eq(roofline_device_slug("  odd__Name (x) ", buf, sizeof buf), "odd-name-x");
    cr_expect_str_eq(roofline_calibration_path("results", "NVIDIA H200", buf, sizeof buf),
                     "results/calibration/nvidia-h200.json");
}

Test(roofline, calibration_round_trip)
{
    roofline_calibration a, b;
    roofline_calibration_init(&a);
    snprintf(a.device, sizeof a.device, "NVIDIA H200");
    snprintf(a.date, sizeof a.date, "2026-11-22T05:00:00Z");
    snprintf(a.tool_version, sizeof a.tool_version, "0.1.0");
    snprintf(a.tool_rev, sizeof a.tool_rev, "abc123");
    snprintf(a.pci_bus_id, sizeof a.pci_bus_id, "0000:00:06.0");
    snprintf(a.compute_capability, sizeof a.compute_capability, "9.0");
    snprintf(a.cublas_version, sizeof a.cublas_version, "13.1.0");
    snprintf(a.host, sizeof a.host, "vm");
    a.read_bw = 4491215381656.54;
    a.copy_bw = 4.1e12;
    a.gemm_rate[ROOFLINE_FP16] = 7.1e14;
    a.gemm_rate[ROOFLINE_BF16] = 7.2e14;
    a.gemm_rate[ROOFLINE_FP32] = 5.1e13;
    a.launch_s = 2.5e-6;
    a.latency_s = 3.58e-7;
    a.floor_s = 5.1e-6;
    a.gather_elem_s = 4.2e-12;
    a.gather_elem_t_s = 7.1e-12;
    a.gather_elem_t_dram_s = 8.3e-12;
    a.sector_bw = 1.9e12;
    a.fetch_bytes = 64;
    a.fetch_hint = 64;
    a.read_bytes = a.copy_bytes = (size_t)4 << 30;
    a.gemm_n = 8192;
    a.reps = 20;
    a.sm_count = 132;
    a.l2_bytes = 62914560;
    a.driver_version = a.runtime_version = a.nvrtc_version = 13000;
    char path[512];
    snprintf(path, sizeof path, "%s/calibration/nvidia-h200.json", tmpdir);
    tune_error err = {0};
    cr_assert_eq(roofline_calibration_save(path, &a, &err), TUNE_OK, "%s", err.message);
    cr_assert_eq(roofline_calibration_load(path, &b, &err), TUNE_OK, "%s", err.message);
    cr_expect_str_eq(b.device, a.device);
    cr_expect_str_eq(b.date, a.date);
    cr_expect_str_eq(b.tool_version, a.tool_version);
    cr_expect_str_eq(b.tool_rev, a.tool_rev);
    cr_expect_str_eq(b.pci_bus_id, a.pci_bus_id);
    cr_expect_str_eq(b.compute_capability, a.compute_capability);
    cr_expect_str_eq(b.cublas_version, a.cublas_version);
    cr_expect_str_eq(b.host, a.host);
    cr_expect(close_to(b.read_bw, a.read_bw));
    cr_expect(close_to(b.copy_bw, a.copy_bw));
    cr_expect(close_to(b.launch_s, a.launch_s));
    cr_expect(close_to(b.latency_s, a.latency_s));
    cr_expect(close_to(b.floor_s, a.floor_s));
    roofline_ceilings c;
    roofline_ceilings_from_calibration(&b, NULL, &c);
    cr_expect(close_to(c.latency_s, a.latency_s) && close_to(c.floor_s, a.floor_s));
    cr_expect(close_to(b.gather_elem_s, a.gather_elem_s) &&
              close_to(c.gather_elem_s, a.gather_elem_s));
    cr_expect(close_to(b.gather_elem_t_s, a.gather_elem_t_s) &&
              close_to(c.gather_elem_t_s, a.gather_elem_t_s));
    cr_expect(close_to(b.gather_elem_t_dram_s, a.gather_elem_t_dram_s) &&
              close_to(c.gather_elem_t_dram_s, a.gather_elem_t_dram_s));
    cr_expect(close_to(b.sector_bw, a.sector_bw) && close_to(c.sector_bw, a.sector_bw));
    cr_expect_eq(b.fetch_bytes, 64);
    cr_expect_eq(c.fetch_bytes, 64);
    for (int p = 0; p < ROOFLINE_N_PRECISIONS; p++)
        cr_expect(isnan(a.gemm_rate[p]) ? isnan(b.gemm_rate[p])
                                        : close_to(b.gemm_rate[p], a.gemm_rate[p]),
                  "%s", roofline_precision_str((roofline_precision)p));
    cr_expect_eq(b.read_bytes, a.read_bytes);
    cr_expect_eq(b.copy_bytes, a.copy_bytes);
    cr_expect_eq(b.gemm_n, a.gemm_n);
    cr_expect_eq(b.reps, a.reps);
    cr_expect_eq(b.sm_count, a.sm_count);
    cr_expect_eq(b.l2_bytes, a.l2_bytes);
    cr_expect_eq(b.driver_version, a.driver_version);
    cr_expect_eq(b.nvrtc_version, a.nvrtc_version);
}

Test(roofline, calibration_without_read_bw_is_invalid)
{
    char path[256];
    write_file("bad.json", "{\"device\": {\"name\": \"NVIDIA H200\"}, \"ceilings\": {}}", path,
               sizeof path);
    roofline_calibration c;
    tune_error err = {0};
    cr_expect_eq(roofline_calibration_load(path, &c, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "read_bw") != NULL, "%s", err.message);
    tune_error err2 = {0};
    snprintf(path, sizeof path, "%s/absent.json", tmpdir);
    cr_expect_eq(roofline_calibration_load(path, &c, &err2), TUNE_ERR_IO);
}

/* Saves c as tmpdir/calibration/name (its path into out) and reads the file back into text. */
static void save_calibration_text(const roofline_calibration *c, const char *name, char *out,
                                  size_t out_size, char *text, size_t text_size)
{
    tune_error err = {0};
    snprintf(out, out_size, "%s/calibration/%s", tmpdir, name);
    cr_assert_eq(roofline_calibration_save(out, c, &err), TUNE_OK, "%s", err.message);
    FILE *fp = fopen(out, "r");
    cr_assert_not_null(fp);
    size_t n = fread(text, 1, text_size - 1, fp);
    fclose(fp);
    text[n] = '\0';
}

/* A file written before the random-sector rate and the transposed gather probe: it loads, the
 * two are NAN (the time model then prices those sectors at the read bandwidth and those elements
 * at the row-major probe's time), and saving it writes neither. */
Test(roofline, calibration_without_the_newer_ceilings)
{
    char path[256];
    write_file("old.json",
               "{\"schema_version\": 1, \"device\": {\"name\": \"NVIDIA H200\", \"sm_count\": 132},"
               " \"ceilings\": {\"read_bw\": {\"value\": 4.49e12},"
               " \"gather_element\": {\"value\": 4.2e-12}}}",
               path, sizeof path);
    roofline_calibration a, b;
    tune_error err = {0};
    cr_assert_eq(roofline_calibration_load(path, &a, &err), TUNE_OK, "%s", err.message);
    cr_expect(close_to(a.gather_elem_s, 4.2e-12));
    cr_expect(isnan(a.gather_elem_t_s) && isnan(a.sector_bw) && isnan(a.gather_elem_t_dram_s));
    cr_expect(isnan(a.fetch_bytes));
    roofline_ceilings c;
    roofline_ceilings_from_calibration(&a, NULL, &c);
    cr_expect(isnan(c.gather_elem_t_s) && isnan(c.sector_bw) && isnan(c.gather_elem_t_dram_s));
    cr_expect(close_to(c.gather_elem_s, 4.2e-12));
    char out[512], text[8192];
    save_calibration_text(&a, "old-saved.json", out, sizeof out, text, sizeof text);
    cr_expect_null(strstr(text, "random_sector_bw"), "not measured, not written");
    cr_expect_null(strstr(text, "dram_fetch"), "not measured, not written");
    cr_expect_null(strstr(text, "gather_element_transposed"), "not measured, not written");
    cr_assert_eq(roofline_calibration_load(out, &b, &err), TUNE_OK, "%s", err.message);
    cr_expect(isnan(b.gather_elem_t_s) && isnan(b.sector_bw));
    /* the specs table has neither: measured only */
    roofline_specs *s = roofline_specs_load(NULL, &err);
    cr_assert_not_null(s);
    roofline_ceilings_from_gpu(roofline_specs_match(s, "NVIDIA H200"), &c);
    cr_expect(isnan(c.gather_elem_t_s) && isnan(c.sector_bw) && isnan(c.gather_elem_t_dram_s));
    cr_expect(isnan(c.fetch_bytes));
    roofline_specs_free(s);
}

/* A file with the L2-resident transposed gather probe but not the DRAM-resident one (the
 * calibrations of 2026-11-26): it loads with the first, the second NAN (the time model then
 * prices every transposed element at the first), and saving it writes the first alone. */
Test(roofline, calibration_without_the_dram_gather_probe)
{
    char path[256];
    write_file("no-dram.json",
               "{\"schema_version\": 1, \"device\": {\"name\": \"NVIDIA H200\"},"
               " \"ceilings\": {\"read_bw\": {\"value\": 4.49e12},"
               " \"gather_element\": {\"value\": 4.2e-12},"
               " \"gather_element_transposed\": {\"value\": 4.8e-12}}}",
               path, sizeof path);
    roofline_calibration a, b;
    tune_error err = {0};
    cr_assert_eq(roofline_calibration_load(path, &a, &err), TUNE_OK, "%s", err.message);
    cr_expect(close_to(a.gather_elem_t_s, 4.8e-12) && isnan(a.gather_elem_t_dram_s));
    roofline_ceilings c;
    roofline_ceilings_from_calibration(&a, NULL, &c);
    cr_expect(close_to(c.gather_elem_t_s, 4.8e-12) && isnan(c.gather_elem_t_dram_s));
    char out[512], text[8192];
    save_calibration_text(&a, "no-dram-saved.json", out, sizeof out, text, sizeof text);
    cr_expect_not_null(strstr(text, "\"gather_element_transposed\""), "measured, written");
    cr_expect_null(strstr(text, "gather_element_transposed_dram"), "not measured, not written");
    cr_assert_eq(roofline_calibration_load(out, &b, &err), TUNE_OK, "%s", err.message);
    cr_expect(close_to(b.gather_elem_t_s, 4.8e-12) && isnan(b.gather_elem_t_dram_s));
}

/* The DRAM fetch granularity is 32, 64 or 128 bytes: any other value is an error naming the
 * field. */
Test(roofline, calibration_fetch_granularity_is_checked)
{
    char path[256];
    write_file("fetch48.json",
               "{\"schema_version\": 1, \"device\": {\"name\": \"NVIDIA H200\"},"
               " \"ceilings\": {\"read_bw\": {\"value\": 4.49e12},"
               " \"dram_fetch\": {\"value\": 48}}}",
               path, sizeof path);
    roofline_calibration c;
    tune_error err = {0};
    cr_expect_eq(roofline_calibration_load(path, &c, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "$.ceilings.dram_fetch.value") != NULL, "%s", err.message);
    write_file("fetch128.json",
               "{\"schema_version\": 1, \"device\": {\"name\": \"NVIDIA H200\"},"
               " \"ceilings\": {\"read_bw\": {\"value\": 4.49e12},"
               " \"dram_fetch\": {\"value\": 128}}}",
               path, sizeof path);
    tune_error err2 = {0};
    cr_expect_eq(roofline_calibration_load(path, &c, &err2), TUNE_OK, "%s", err2.message);
    cr_expect_eq(c.fetch_bytes, 128);
}

/* The DRAM-resident gather probe's source is several times every L2 of the specs table, and
 * with Bg and the indices `tune calibrate` allocates at most 8 GiB for it. */
Test(roofline, dram_gather_probe_size)
{
    const double src =
        (double)CALIBRATION_GATHER_G * CALIBRATION_GATHER_KP_DRAM * CALIBRATION_GATHER_N * 2;
    const double dst =
        (double)CALIBRATION_GATHER_G * CALIBRATION_GATHER_K * CALIBRATION_GATHER_N * 2;
    const double idx = (double)CALIBRATION_GATHER_G * CALIBRATION_GATHER_K * 4;
    cr_expect(src >= 1073741824.0, "source %.0f bytes", src);
    cr_expect(src + dst + idx <= 8589934592.0, "%.0f bytes allocated", src + dst + idx);
    tune_error err = {0};
    roofline_specs *s = roofline_specs_load(NULL, &err);
    cr_assert_not_null(s, "%s", err.message);
    static const char *const devices[] = {"NVIDIA H100 80GB HBM3", "NVIDIA H200",
                                          "NVIDIA A100-SXM4-80GB", "NVIDIA L4"};
    for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++) {
        const roofline_gpu *g = roofline_specs_match(s, devices[i]);
        cr_assert_not_null(g, "%s", devices[i]);
        cr_expect(src >= 4.0 * (double)g->l2_bytes, "%s: L2 %zu bytes", devices[i],
                  (size_t)g->l2_bytes);
    }
    /* the L2-resident probe's source, for contrast, fits the H200's */
    const roofline_gpu *h200 = roofline_specs_match(s, "NVIDIA H200");
    cr_expect((double)CALIBRATION_GATHER_G * CALIBRATION_GATHER_KP * CALIBRATION_GATHER_N * 2 <
              (double)h200->l2_bytes);
    roofline_specs_free(s);
}

/* ---- prediction error ---- */

Test(roofline, error_gmean_and_worst)
{
    const double pred[] = {1, 2, 4, NAN, 1};
    const double meas[] = {2, 2, 1, 1, 0};
    roofline_error e;
    roofline_error_compute(pred, meas, 5, &e);
    cr_expect_eq(e.n, 3);
    /* errors 2, 1, 4: geometric mean 2, worst 4 (index 2) */
    cr_expect(close_to(e.gmean_error, 2.0));
    cr_expect(close_to(e.worst_error, 4.0));
    cr_expect_eq(e.worst, 2);
    /* ratios 1/2, 1, 4: geometric mean 2^(1/3) */
    cr_expect(close_to(e.gmean_ratio, cbrt(2.0)));
    roofline_error_compute(pred, meas, 0, &e);
    cr_expect_eq(e.n, 0);
    cr_expect(isnan(e.gmean_error));
}

static const char *chunk_param[] = {"chunk"};

static void fixture_row(result_row *r, const char *method, int64_t g, int64_t chunk, double bytes,
                        double time, result_status status)
{
    result_row_init(r);
    r->sweep = "fixture";
    r->family = "gather_matmul";
    r->op = "bmv";
    r->method = (char *)method;
    point_set_int(&r->values, "g", g);
    point_set_str(&r->values, "dtype", "float16");
    r->n_axes = 2;
    r->n_params = 1;
    r->param_names[0] = chunk_param[0];
    if (chunk > 0)
        point_set_int(&r->values, "chunk", chunk);
    r->status = status;
    r->bytes = bytes;
    r->flops = bytes; /* far below the fp16 rate */
    r->time.n = 1;
    r->time.median = time;
    r->device = "NVIDIA H200";
}

Test(roofline, report_on_a_fixture)
{
    /* memory bound at 1 TB/s: prediction = bytes / 1e12 */
    roofline_ceilings c = hand_ceilings();
    c.read_bw = c.copy_bw = 1e12;
    c.launch_s = NAN;
    result_row rows[7];
    fixture_row(&rows[0], "custom", 1, 1, 1e6, 2e-6, RESULT_OK);      /* error 2 */
    fixture_row(&rows[1], "custom", 1, 2, 1e6, 1e-6, RESULT_OK);      /* error 1, best of g=1 */
    fixture_row(&rows[2], "custom", 2, 1, 2e6, 8e-6, RESULT_OK);      /* error 4, worst */
    fixture_row(&rows[3], "custom", 2, 2, 2e6, 4e-6, RESULT_OK);      /* error 2, best of g=2 */
    fixture_row(&rows[4], "custom", 2, 4, 2e6, 1e-9, RESULT_INVALID); /* left out */
    fixture_row(&rows[5], "slice", 1, 0, 1e6, 1e-6, RESULT_OK);       /* error 1 */
    fixture_row(&rows[6], "slice", 2, 0, 2e6, 2e-6, RESULT_OK);       /* error 1 */
    double pred[7];
    roofline_bound bound[7];
    roofline_predict_rows(&c, rows, 7, "dtype", pred, bound);
    cr_expect(close_to(pred[2], 2e-6));
    cr_expect_eq(bound[2], ROOFLINE_BOUND_MEMORY);
    cr_expect_eq(roofline_row_precision(&rows[0], "dtype"), ROOFLINE_FP16);

    roofline_report *r = roofline_report_new();
    tune_error err = {0};
    cr_assert_eq(roofline_report_add(r, "calibrated", "fixture_dir", "NVIDIA H200", &c, rows, 7,
                                     pred, bound, &err),
                 TUNE_OK);
    cr_assert_eq(roofline_report_n_groups(r), 4);
    const roofline_report_group *all = roofline_report_group_at(r, 0);
    const roofline_report_group *best = roofline_report_group_at(r, 1);
    const roofline_report_group *slice = roofline_report_group_at(r, 2);
    cr_expect_str_eq(all->method, "custom");
    cr_expect_str_eq(all->selection, "all");
    cr_expect_eq(all->err.n, 4);
    cr_expect(close_to(all->err.gmean_error, 2.0)); /* (2 * 1 * 4 * 2)^(1/4) */
    cr_expect(close_to(all->err.worst_error, 4.0));
    cr_expect_eq(all->err.worst, 2);
    cr_expect(strstr(all->worst_shape, "g=2") != NULL, "%s", all->worst_shape);
    cr_expect(close_to(all->worst_pred, 2e-6));
    cr_expect(close_to(all->worst_meas, 8e-6));
    cr_expect_eq(all->n_bound[ROOFLINE_BOUND_MEMORY], 4);
    cr_expect_str_eq(best->selection, "best");
    cr_expect_eq(best->err.n, 2);
    cr_expect(close_to(best->err.gmean_error, sqrt(2.0)));
    cr_expect(close_to(best->err.worst_error, 2.0));
    cr_expect_eq(best->err.worst, 3);
    cr_expect_str_eq(slice->method, "slice");
    cr_expect_eq(slice->err.n, 2);
    cr_expect(close_to(slice->err.gmean_error, 1.0));

    char path[256], md[256];
    snprintf(path, sizeof path, "%s/roofline.json", tmpdir);
    cr_assert_eq(roofline_report_write_json(r, path, "{\"schema_version\": 1}", &err), TUNE_OK,
                 "%s", err.message);
    json_t *j = json_load_file(path, 0, NULL);
    cr_assert_not_null(j);
    cr_expect_eq(json_integer_value(json_object_get(j, "schema_version")), 1);
    cr_expect_eq(json_array_size(json_object_get(j, "groups")), 4);
    cr_expect_eq(json_array_size(json_object_get(j, "rows")), 6); /* the ok rows */
    json_t *g0 = json_array_get(json_object_get(j, "groups"), 0);
    cr_expect(close_to(json_number_value(json_object_get(g0, "gmean_error")), 2.0));
    json_t *r2 = json_array_get(json_object_get(j, "rows"), 2);
    cr_expect_eq(json_integer_value(json_object_get(r2, "index")), 2);
    cr_expect(close_to(json_number_value(json_object_get(r2, "ratio")), 0.25));
    cr_expect_str_eq(json_string_value(json_object_get(r2, "bound")), "memory");
    /* the device facts beside the ceilings */
    json_t *ceil = json_object_get(json_array_get(json_object_get(j, "models"), 0), "ceilings");
    cr_expect_eq(json_integer_value(json_object_get(ceil, "sm_count")), 132);
    cr_expect(close_to(json_number_value(json_object_get(ceil, "l2_bytes")), 62914560));
    cr_expect(json_is_null(json_object_get(ceil, "dram_latency_s")));
    json_decref(j);

    snprintf(md, sizeof md, "%s/roofline.md", tmpdir);
    FILE *f = fopen(md, "w");
    cr_assert_not_null(f);
    roofline_report_write_markdown(r, f);
    fclose(f);
    f = fopen(md, "r");
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    cr_expect(strstr(text, "## fixture_dir (NVIDIA H200)") != NULL, "%s", text);
    cr_expect(strstr(text, "| calibrated | custom (all) | 4 | 2.00x | 4.00x |") != NULL, "%s",
              text);
    roofline_report_free(r);
    roofline_report_free(NULL);
}

/* ---- calibrate without a GPU ---- */

Test(roofline, calibrate_without_gpu_says_so)
{
    int n = 0;
    tune_error probe = {0};
    if (gpu_count(&n, &probe) == TUNE_OK && n > 0)
        cr_skip_test("a GPU is present: the no-GPU path cannot be exercised here");
    calibrate_options opt = {0};
    roofline_calibration cal;
    tune_error err = {0};
    cr_expect_eq(calibrate_device(&opt, &cal, &err), TUNE_ERR_NO_GPU);
    cr_expect_eq(err.code, TUNE_ERR_NO_GPU);
    cr_expect_gt(strlen(err.message), 10);
    cr_expect_null(strchr(err.message, '\n'), "one sentence: %s", err.message);
    cr_expect(isnan(cal.read_bw));
}

/* ---- calibrate on a GPU ---- */

/* Every probe runs and gives a ceiling of the right sign, on small buffers (the gather probes
 * keep their fixed sizes, 1.5 GiB at most). */
Test(roofline, calibrate_measures_every_ceiling)
{
    require_gpu();
    calibrate_options opt = {.cache_dir = "/tmp/tune-test-cache",
                             .read_bytes = (size_t)64 << 20,
                             .copy_bytes = (size_t)64 << 20,
                             .gemm_n = 512,
                             .reps = 3};
    roofline_calibration cal;
    tune_error err = {0};
    cr_assert_eq(calibrate_device(&opt, &cal, &err), TUNE_OK, "%s", err.message);
    cr_expect_gt(strlen(cal.device), 0);
    cr_expect(cal.read_bw > 0 && cal.copy_bw > 0, "%g %g", cal.read_bw, cal.copy_bw);
    for (int p = ROOFLINE_FP32; p <= ROOFLINE_BF16; p++)
        cr_expect_gt(cal.gemm_rate[p], 0, "%s", roofline_precision_str((roofline_precision)p));
    cr_expect(isnan(cal.gemm_rate[ROOFLINE_FP8]) && isnan(cal.gemm_rate[ROOFLINE_INT8]),
              "not measured");
    cr_expect(cal.launch_s > 0 && cal.latency_s > 0, "%g %g", cal.launch_s, cal.latency_s);
    cr_expect(isfinite(cal.floor_s));
    cr_expect(cal.gather_elem_s > 0 && cal.gather_elem_t_s > 0 && cal.gather_elem_t_dram_s > 0);
    cr_expect_gt(cal.sector_bw, 0);
    cr_expect(cal.fetch_bytes == 32 || cal.fetch_bytes == 64 || cal.fetch_bytes == 128, "%g",
              cal.fetch_bytes);
    for (int i = 0; i < 4; i++)
        cr_expect_gt(cal.fetch_times[i], 0, "stride %d", 32 << i);
    cr_expect(cal.reps == 3 && cal.read_bytes == (size_t)64 << 20 && cal.gemm_n == 512);
}
