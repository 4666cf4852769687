#include "store/calibration.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/infile.h"
#include "core/outfile.h"
#include "store/folder.h"

void roofline_calibration_init(roofline_calibration *c)
{
    memset(c, 0, sizeof *c);
    c->read_bw = c->copy_bw = c->launch_s = c->latency_s = c->floor_s = c->gather_elem_s = NAN;
    c->gather_elem_t_s = c->gather_elem_t_dram_s = c->sector_bw = c->fetch_bytes = NAN;
    for (int i = 0; i < 4; i++)
        c->fetch_times[i] = NAN;
    for (int p = 0; p < ROOFLINE_N_PRECISIONS; p++)
        c->gemm_rate[p] = NAN;
}

const char *roofline_device_slug(const char *device, char *buf, size_t size)
{
    size_t n = 0;
    int dash = 0;
    for (const char *p = device ? device : ""; *p && n + 1 < size; p++) {
        if (isalnum((unsigned char)*p)) {
            if (dash && n > 0 && n + 2 < size)
                buf[n++] = '-';
            buf[n++] = (char)tolower((unsigned char)*p);
            dash = 0;
        } else {
            dash = 1;
        }
    }
    if (size)
        buf[n < size ? n : size - 1] = '\0';
    return buf;
}

const char *roofline_calibration_path(const char *results_root, const char *device, char *buf,
                                      size_t size)
{
    char slug[256];
    snprintf(buf, size, "%s/calibration/%s.json", results_root ? results_root : "results",
             roofline_device_slug(device, slug, sizeof slug));
    return buf;
}

static json_t *ceiling_json(double value, const char *unit, const char *method)
{
    if (!isfinite(value))
        return NULL;
    return json_pack("{s:f, s:s, s:s}", "value", value, "unit", unit, "method", method);
}

static void set_if(json_t *obj, const char *key, json_t *v)
{
    if (v)
        json_object_set_new(obj, key, v);
}

/* The method of a gather-element ceiling: gm_gather<half_t, 1, trans> (what it is) over the
 * calibration's g, k and n from k_pre = kp, the source as given. */
static void gather_method(char *buf, size_t size, int trans, const char *what, int kp,
                          const char *source, int reps)
{
    snprintf(buf, size,
             "gather_matmul.cu gm_gather<half_t, 1, %d> (%s) of g = %d, k = %d, n = %d from "
             "k_pre = %d %s, 65536 blocks of 256 threads; median time of %d reps, L2 flushed, "
             "CUDA events, / (g k n) elements",
             trans, what, CALIBRATION_GATHER_G, CALIBRATION_GATHER_K, CALIBRATION_GATHER_N, kp,
             source, reps);
}

/* The GEMM rates of a calibration, one member per measured precision. */
static json_t *gemm_json(const roofline_calibration *c)
{
    char method[512];
    json_t *gemm = json_object();
    static const char *const what[ROOFLINE_N_PRECISIONS] = {
        "fp32 in and out, CUBLAS_COMPUTE_32F (no TF32)",
        "fp32 in and out, CUBLAS_COMPUTE_32F_FAST_TF32",
        "fp16 in and out, fp32 accumulation (CUBLAS_COMPUTE_32F)",
        "bf16 in and out, fp32 accumulation (CUBLAS_COMPUTE_32F)",
        "fp8",
        "int8"};
    for (int p = 0; p < ROOFLINE_N_PRECISIONS; p++) {
        snprintf(method, sizeof method,
                 "cublasGemmEx %d x %d x %d, %s, uniform random data; 2 m n k / median of %d reps, "
                 "L2 flushed, CUDA events",
                 c->gemm_n, c->gemm_n, c->gemm_n, what[p], c->reps);
        set_if(gemm, roofline_precision_str((roofline_precision)p),
               ceiling_json(c->gemm_rate[p], "FLOP/s", method));
    }
    return gemm;
}

/* The three gather-element ceilings (row-major B, transposed B, transposed B the L2 cannot hold)
 * into ceil. */
static void gather_ceilings(json_t *ceil, const roofline_calibration *c)
{
    char method[512];
    gather_method(method, sizeof method, 0,
                  "the gather baseline's element-wise gather: 64-bit element number divided into "
                  "g, t, j; index load; 2-byte load and store",
                  CALIBRATION_GATHER_KP, "rows (a source the L2 holds)", c->reps);
    set_if(ceil, "gather_element", ceiling_json(c->gather_elem_s, "s", method));
    gather_method(method, sizeof method, 1,
                  "the gather baseline's kernel with B transposed: a warp's 32 elements in 32 rows "
                  "of 2 k_pre bytes",
                  CALIBRATION_GATHER_KP, "(a source the L2 holds)", c->reps);
    set_if(ceil, "gather_element_transposed", ceiling_json(c->gather_elem_t_s, "s", method));
    char source[128];
    snprintf(source, sizeof source,
             "(a %zu-byte source that the L2 cannot hold: its warp loads wait for DRAM)",
             (size_t)CALIBRATION_GATHER_G * CALIBRATION_GATHER_KP_DRAM * CALIBRATION_GATHER_N * 2);
    gather_method(method, sizeof method, 1, "the gather baseline's kernel with B transposed",
                  CALIBRATION_GATHER_KP_DRAM, source, c->reps);
    set_if(ceil, "gather_element_transposed_dram",
           ceiling_json(c->gather_elem_t_dram_s, "s", method));
}

/* The "ceilings" object of a calibration file: every measured ceiling with its unit and method. */
static json_t *ceilings_json(const roofline_calibration *c)
{
    char method[512];
    json_t *ceil = json_object();
    snprintf(method, sizeof method,
             "common.cu tune_read_probe reading %zu bytes once; bytes / median of %d reps, L2 "
             "flushed, CUDA events",
             c->read_bytes, c->reps);
    set_if(ceil, "read_bw", ceiling_json(c->read_bw, "B/s", method));
    snprintf(method, sizeof method,
             "cudaMemcpyAsync device to device of %zu bytes; (read + written bytes) / median of %d "
             "reps, L2 flushed, CUDA events",
             c->copy_bytes, c->reps);
    set_if(ceil, "copy_bw", ceiling_json(c->copy_bw, "B/s", method));
    json_object_set_new(ceil, "gemm", gemm_json(c));
    set_if(ceil, "launch_overhead",
           ceiling_json(c->launch_s, "s",
                        "common.cu tune_fill_indices of one element, one block; median event-timed "
                        "duration with the L2 flushed before, as every result row is timed"));
    set_if(ceil, "dram_latency",
           ceiling_json(c->latency_s, "s",
                        "common.cu tune_chase_probe: one thread, dependent loads at random "
                        "addresses of a 4 GiB buffer, L2 flushed; (median time of 257 loads - "
                        "median time of 1) / 256"));
    snprintf(method, sizeof method,
             "common.cu tune_read_probe's grid (SMs x 16 blocks of 512 threads) reading %zu bytes; "
             "median time of %d reps, L2 flushed, CUDA events, less bytes / read_bw",
             (size_t)CALIBRATION_FLOOR_BYTES, c->reps);
    set_if(ceil, "grid_floor", ceiling_json(c->floor_s, "s", method));
    gather_ceilings(ceil, c);
    snprintf(method, sizeof method,
             "common.cu tune_sector_probe: SMs x %d blocks of %d threads, %d independent 4-byte "
             "loads in flight per thread, each at a uniformly random 32-byte-aligned sector of a "
             "%zu-byte buffer; 32 bytes x loads / median of %d reps, L2 flushed, CUDA events",
             CALIBRATION_SECTOR_BLOCKS_PER_SM, CALIBRATION_SECTOR_THREADS,
             CALIBRATION_SECTOR_UNROLL, c->read_bytes, c->reps);
    set_if(ceil, "random_sector_bw", ceiling_json(c->sector_bw, "B/s", method));
    char hint[48] = "";
    if (c->fetch_hint > 0)
        snprintf(hint, sizeof hint, "; cudaLimitMaxL2FetchGranularity %d", c->fetch_hint);
    snprintf(method, sizeof method,
             "common.cu tune_stride_probe: one 4-byte word in every 32, 64, 128 and 256 bytes of a "
             "%zu-byte buffer, SMs x %d blocks of %d threads, 8 loads in flight per thread; median "
             "of %d reps each (%.2f, %.2f, %.2f, %.2f us), L2 flushed, CUDA events; the largest "
             "stride whose time is at least %.1f of the previous stride's (DRAM moves the same "
             "bytes)%s",
             c->read_bytes, CALIBRATION_STRIDE_BLOCKS_PER_SM, CALIBRATION_STRIDE_THREADS, c->reps,
             c->fetch_times[0] * 1e6, c->fetch_times[1] * 1e6, c->fetch_times[2] * 1e6,
             c->fetch_times[3] * 1e6, CALIBRATION_FETCH_SAME, hint);
    set_if(ceil, "dram_fetch", ceiling_json(c->fetch_bytes, "B", method));
    return ceil;
}

tune_status roofline_calibration_save(const char *path, const roofline_calibration *c,
                                      tune_error *err)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        tune_status st = outfile_mkdirs(dir, err);
        if (st != TUNE_OK)
            return st;
    }
    json_t *root = json_object();
    json_object_set_new(root, "schema_version", json_integer(1));
    json_object_set_new(root, "kind", json_string("tune calibration"));
    json_object_set_new(root, "device",
                        json_pack("{s:s, s:s, s:s, s:i, s:I}", "name", c->device, "pci_bus_id",
                                  c->pci_bus_id, "compute_capability", c->compute_capability,
                                  "sm_count", c->sm_count, "l2_bytes", (json_int_t)c->l2_bytes));
    json_object_set_new(root, "date", json_string(c->date));
    json_object_set_new(root, "tool",
                        json_pack("{s:s, s:s, s:s}", "name", "tune", "version", c->tool_version,
                                  "git_rev", c->tool_rev));
    json_object_set_new(root, "host", json_string(c->host));
    json_object_set_new(root, "versions",
                        json_pack("{s:i, s:i, s:i, s:s}", "driver_cuda", c->driver_version,
                                  "runtime", c->runtime_version, "nvrtc", c->nvrtc_version,
                                  "cublas", c->cublas_version));
    json_object_set_new(root, "ceilings", ceilings_json(c));
    json_object_set_new(root, "measurement",
                        json_pack("{s:I, s:I, s:i, s:i}", "read_bytes", (json_int_t)c->read_bytes,
                                  "copy_bytes", (json_int_t)c->copy_bytes, "gemm_n", c->gemm_n,
                                  "reps", c->reps));
    tune_status st = folder_write_json(path, root, err);
    json_decref(root);
    return st;
}

static void copy_str(char *dst, size_t size, json_t *v)
{
    snprintf(dst, size, "%s", json_is_string(v) ? json_string_value(v) : "");
}

static double ceiling_value(json_t *obj, const char *key)
{
    json_t *v = json_object_get(json_object_get(obj, key), "value");
    return json_is_number(v) && json_number_value(v) > 0 ? json_number_value(v) : NAN;
}

tune_status roofline_calibration_load(const char *path, roofline_calibration *c, tune_error *err)
{
    roofline_calibration_init(c);
    json_error_t je;
    char *text = NULL;
    size_t len = 0;
    tune_status rs = infile_read_text(path, INFILE_MAX_JSON, &text, &len, err);
    if (rs != TUNE_OK)
        return rs; /* a FIFO or a device refused, never waited on */
    json_t *root = json_loadb(text, len, 0, &je);
    free(text);
    if (!root) {
        char where[PATH_MAX + 32];
        snprintf(where, sizeof where, "%s:%d:%d", path, je.line, je.column);
        return tune_error_set(err, je.line > 0 ? TUNE_ERR_PARSE : TUNE_ERR_IO, where, "%s",
                              je.text);
    }
    tune_status st = TUNE_OK;
    json_t *dev = json_object_get(root, "device");
    json_t *ceil = json_object_get(root, "ceilings");
    if (!json_is_string(json_object_get(dev, "name"))) {
        st = tune_error_set(err, TUNE_ERR_INVALID, path, "missing $.device.name");
        goto done;
    }
    copy_str(c->device, sizeof c->device, json_object_get(dev, "name"));
    copy_str(c->pci_bus_id, sizeof c->pci_bus_id, json_object_get(dev, "pci_bus_id"));
    copy_str(c->compute_capability, sizeof c->compute_capability,
             json_object_get(dev, "compute_capability"));
    c->sm_count = (int)json_integer_value(json_object_get(dev, "sm_count"));
    c->l2_bytes = (size_t)json_integer_value(json_object_get(dev, "l2_bytes"));
    copy_str(c->date, sizeof c->date, json_object_get(root, "date"));
    copy_str(c->host, sizeof c->host, json_object_get(root, "host"));
    json_t *tool = json_object_get(root, "tool");
    copy_str(c->tool_version, sizeof c->tool_version, json_object_get(tool, "version"));
    copy_str(c->tool_rev, sizeof c->tool_rev, json_object_get(tool, "git_rev"));
    json_t *ver = json_object_get(root, "versions");
    c->driver_version = (int)json_integer_value(json_object_get(ver, "driver_cuda"));
    c->runtime_version = (int)json_integer_value(json_object_get(ver, "runtime"));
    c->nvrtc_version = (int)json_integer_value(json_object_get(ver, "nvrtc"));
    copy_str(c->cublas_version, sizeof c->cublas_version, json_object_get(ver, "cublas"));
    c->read_bw = ceiling_value(ceil, "read_bw");
    c->copy_bw = ceiling_value(ceil, "copy_bw");
    c->launch_s = ceiling_value(ceil, "launch_overhead");
    c->latency_s = ceiling_value(ceil, "dram_latency");
    c->floor_s = ceiling_value(ceil, "grid_floor");
    c->gather_elem_s = ceiling_value(ceil, "gather_element");
    c->gather_elem_t_s = ceiling_value(ceil, "gather_element_transposed");
    c->gather_elem_t_dram_s = ceiling_value(ceil, "gather_element_transposed_dram");
    c->sector_bw = ceiling_value(ceil, "random_sector_bw");
    c->fetch_bytes = ceiling_value(ceil, "dram_fetch");
    if (isfinite(c->fetch_bytes) && c->fetch_bytes != 32 && c->fetch_bytes != 64 &&
        c->fetch_bytes != 128) {
        st = tune_error_set(err, TUNE_ERR_INVALID, path,
                            "$.ceilings.dram_fetch.value: expected 32, 64 or 128 (bytes), got %g",
                            c->fetch_bytes);
        goto done;
    }
    for (int p = 0; p < ROOFLINE_N_PRECISIONS; p++)
        c->gemm_rate[p] = ceiling_value(json_object_get(ceil, "gemm"),
                                        roofline_precision_str((roofline_precision)p));
    if (!isfinite(c->read_bw))
        st = tune_error_set(err, TUNE_ERR_INVALID, path,
                            "missing $.ceilings.read_bw.value (a positive number)");
    json_t *meas = json_object_get(root, "measurement");
    c->read_bytes = (size_t)json_integer_value(json_object_get(meas, "read_bytes"));
    c->copy_bytes = (size_t)json_integer_value(json_object_get(meas, "copy_bytes"));
    c->gemm_n = (int)json_integer_value(json_object_get(meas, "gemm_n"));
    c->reps = (int)json_integer_value(json_object_get(meas, "reps"));
done:
    json_decref(root);
    return st;
}
