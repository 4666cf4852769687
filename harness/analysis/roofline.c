#include "analysis/roofline.h"

#include <ctype.h>
#include <fnmatch.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <jansson.h>

#include "device/compile.h"
#include "device/gpu.h"
#include "core/jsonloc.h"
#include "core/point.h"
#include "core/stats.h"
#include "tune_git_rev.h"

static const char *const precision_names[ROOFLINE_N_PRECISIONS] = {"fp32", "tf32", "fp16",
                                                                   "bf16", "fp8",  "int8"};

const char *roofline_precision_str(roofline_precision p)
{
    return (unsigned)p < ROOFLINE_N_PRECISIONS ? precision_names[p] : "?";
}

int roofline_precision_parse(const char *s, roofline_precision *out)
{
    static const struct {
        const char *name;
        roofline_precision p;
    } aliases[] = {
        {"fp32", ROOFLINE_FP32},         {"float32", ROOFLINE_FP32},
        {"float", ROOFLINE_FP32},        {"tf32", ROOFLINE_TF32},
        {"fp16", ROOFLINE_FP16},         {"float16", ROOFLINE_FP16},
        {"half", ROOFLINE_FP16},         {"bf16", ROOFLINE_BF16},
        {"bfloat16", ROOFLINE_BF16},     {"fp8", ROOFLINE_FP8},
        {"float8_e4m3fn", ROOFLINE_FP8}, {"float8_e4m3", ROOFLINE_FP8},
        {"float8_e5m2", ROOFLINE_FP8},   {"e4m3", ROOFLINE_FP8},
        {"e5m2", ROOFLINE_FP8},          {"int8", ROOFLINE_INT8},
    };
    for (size_t i = 0; s && i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(s, aliases[i].name) == 0) {
            *out = aliases[i].p;
            return 0;
        }
    return -1;
}

const char *roofline_bound_str(roofline_bound b)
{
    switch (b) {
    case ROOFLINE_BOUND_MEMORY:
        return "memory";
    case ROOFLINE_BOUND_COMPUTE:
        return "compute";
    case ROOFLINE_BOUND_LAUNCH:
        return "launch";
    }
    return "?";
}

/* ---- specs table ---- */

struct roofline_specs {
    json_t *root; /* owns every string the entries borrow */
    roofline_gpu *gpus;
    size_t n;
};

typedef struct {
    const char *file, *text;
    tune_error *err;
} specs_ctx;

static tune_status specs_fail(const specs_ctx *cx, const char *path, const char *fmt,
                              const char *what)
{
    int line = 0, col = 0;
    char where[512];
    if (jsonloc_find(cx->text, path, JSONLOC_VALUE, &line, &col) == 0 ||
        jsonloc_find(cx->text, path, JSONLOC_KEY, &line, &col) == 0)
        snprintf(where, sizeof where, "%s:%d:%d: %s", cx->file, line, col, path);
    else
        snprintf(where, sizeof where, "%s: %s", cx->file, path);
    return tune_error_set(cx->err, TUNE_ERR_INVALID, where, fmt, what);
}

/* A member that must be a positive number (or null when null_ok); NAN for null. */
static int get_positive(const specs_ctx *cx, json_t *obj, const char *base, const char *key,
                        int null_ok, double *out)
{
    char path[256];
    snprintf(path, sizeof path, "%s", base);
    jsonloc_path_key(path, sizeof path, key);
    json_t *v = json_object_get(obj, key);
    if (!v)
        return specs_fail(cx, base, "missing \"%s\"", key), -1;
    if (json_is_null(v) && null_ok) {
        *out = NAN;
        return 0;
    }
    if (!json_is_number(v) || !(json_number_value(v) > 0))
        return specs_fail(cx, path, "expected a positive number%s", null_ok ? " or null" : ""), -1;
    *out = json_number_value(v);
    return 0;
}

static int get_string(const specs_ctx *cx, json_t *obj, const char *base, const char *key,
                      const char **out)
{
    char path[256];
    snprintf(path, sizeof path, "%s", base);
    jsonloc_path_key(path, sizeof path, key);
    json_t *v = json_object_get(obj, key);
    if (!v)
        return specs_fail(cx, base, "missing \"%s\"", key), -1;
    if (!json_is_string(v) || !*json_string_value(v))
        return specs_fail(cx, path, "expected a non-empty string%s", ""), -1;
    *out = json_string_value(v);
    return 0;
}

static int parse_gpu(const specs_ctx *cx, json_t *e, const char *base, double launch_s,
                     roofline_gpu *g)
{
    char path[256];
    if (!json_is_object(e))
        return specs_fail(cx, base, "expected an object%s", ""), -1;
    g->launch_s = launch_s;
    if (get_string(cx, e, base, "name", &g->name) != 0)
        return -1;
    json_t *m = json_object_get(e, "match");
    snprintf(path, sizeof path, "%s.match", base);
    if (!json_is_array(m) || json_array_size(m) == 0 || json_array_size(m) > ROOFLINE_MAX_PATTERNS)
        return specs_fail(cx, m ? path : base,
                          "expected \"match\": an array of 1 to 8 name patterns%s", ""),
               -1;
    size_t i;
    json_t *v;
    json_array_foreach(m, i, v)
    {
        if (!json_is_string(v) || !*json_string_value(v)) {
            jsonloc_path_index(path, sizeof path, i);
            return specs_fail(cx, path, "expected a non-empty string%s", ""), -1;
        }
        g->match[g->n_match++] = json_string_value(v);
    }
    if (get_positive(cx, e, base, "mem_bw", 0, &g->mem_bw) != 0)
        return -1;
    json_t *f = json_object_get(e, "flops");
    snprintf(path, sizeof path, "%s.flops", base);
    if (!json_is_object(f))
        return specs_fail(cx, f ? path : base,
                          "expected \"flops\": an object of rates per precision%s", ""),
               -1;
    for (int p = 0; p < ROOFLINE_N_PRECISIONS; p++)
        if (get_positive(cx, f, path, precision_names[p], p != ROOFLINE_FP32, &g->flops[p]) != 0)
            return -1;
    double sm, l2;
    if (get_positive(cx, e, base, "sm_count", 0, &sm) != 0 ||
        get_positive(cx, e, base, "l2_bytes", 0, &l2) != 0)
        return -1;
    g->sm_count = (int)sm;
    g->l2_bytes = (size_t)l2;
    json_t *a = json_object_get(e, "achievable");
    snprintf(path, sizeof path, "%s.achievable", base);
    if (!json_is_object(a))
        return specs_fail(cx, a ? path : base,
                          "expected \"achievable\": {\"memory\", \"matmul\"}%s", ""),
               -1;
    if (get_positive(cx, a, path, "memory", 0, &g->frac_memory) != 0 ||
        get_positive(cx, a, path, "matmul", 0, &g->frac_matmul) != 0)
        return -1;
    if (g->frac_memory > 1 || g->frac_matmul > 1) {
        jsonloc_path_key(path, sizeof path, g->frac_memory > 1 ? "memory" : "matmul");
        return specs_fail(cx, path, "an achievable fraction is at most 1%s", ""), -1;
    }
    json_t *s = json_object_get(e, "source");
    snprintf(path, sizeof path, "%s.source", base);
    if (!json_is_object(s))
        return specs_fail(cx, s ? path : base,
                          "expected \"source\": an object citing each figure%s", ""),
               -1;
    if (get_string(cx, s, path, "mem_bw", &g->source_mem_bw) != 0 ||
        get_string(cx, s, path, "flops", &g->source_flops) != 0 ||
        get_string(cx, s, path, "sm_count", &g->source_sm_count) != 0 ||
        get_string(cx, s, path, "l2_bytes", &g->source_l2) != 0 ||
        get_string(cx, s, path, "achievable", &g->source_achievable) != 0)
        return -1;
    return 0;
}


roofline_specs *roofline_specs_load(const char *path, tune_error *err)
{
    char dir[PATH_MAX], dflt[PATH_MAX + 16];
    if (!path) {
        if (!roofline_find_data_dir(dir, sizeof dir)) {
            tune_error_set(err, TUNE_ERR_IO, "data/gpus.json",
                           "cannot find the data folder (set TUNE_DATA_DIR)");
            return NULL;
        }
        snprintf(dflt, sizeof dflt, "%s/gpus.json", dir);
        path = dflt;
    }
    char *text = tune_read_file(path, NULL, NULL);
    if (!text) {
        tune_error_set(err, TUNE_ERR_IO, path, "cannot read");
        return NULL;
    }
    roofline_specs *s = calloc(1, sizeof *s);
    json_error_t je;
    specs_ctx cx = {path, text, err};
    if (!s) {
        tune_error_set(err, TUNE_ERR_NOMEM, path, "out of memory");
        goto fail;
    }
    if (!(s->root = json_loads(text, JSON_REJECT_DUPLICATES, &je))) {
        char where[PATH_MAX + 32];
        snprintf(where, sizeof where, "%s:%d:%d", path, je.line, je.column);
        tune_error_set(err, TUNE_ERR_PARSE, where, "%s", je.text);
        goto fail;
    }
    double launch_s = 0;
    if (!json_is_object(s->root)) {
        specs_fail(&cx, "$", "expected an object%s", "");
        goto fail;
    }
    if (get_positive(&cx, s->root, "$", "launch_overhead_s", 0, &launch_s) != 0)
        goto fail;
    json_t *gpus = json_object_get(s->root, "gpus");
    if (!json_is_array(gpus) || json_array_size(gpus) == 0) {
        specs_fail(&cx, gpus ? "$.gpus" : "$", "expected \"gpus\": a non-empty array%s", "");
        goto fail;
    }
    s->gpus = calloc(json_array_size(gpus), sizeof *s->gpus);
    if (!s->gpus) {
        tune_error_set(err, TUNE_ERR_NOMEM, path, "out of memory");
        goto fail;
    }
    size_t i;
    json_t *e;
    json_array_foreach(gpus, i, e)
    {
        char base[64];
        snprintf(base, sizeof base, "$.gpus[%zu]", i);
        if (parse_gpu(&cx, e, base, launch_s, &s->gpus[i]) != 0)
            goto fail;
        s->n++;
    }
    free(text);
    return s;
fail:
    free(text);
    roofline_specs_free(s);
    return NULL;
}

void roofline_specs_free(roofline_specs *s)
{
    if (!s)
        return;
    json_decref(s->root);
    free(s->gpus);
    free(s);
}

size_t roofline_specs_count(const roofline_specs *s)
{
    return s ? s->n : 0;
}

const roofline_gpu *roofline_specs_at(const roofline_specs *s, size_t i)
{
    return s && i < s->n ? &s->gpus[i] : NULL;
}

static void lower_copy(char *dst, size_t size, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < size; i++)
        dst[i] = (char)tolower((unsigned char)src[i]);
    dst[i] = '\0';
    while (i > 0 && isspace((unsigned char)dst[i - 1]))
        dst[--i] = '\0';
}

const roofline_gpu *roofline_specs_match(const roofline_specs *s, const char *device_name)
{
    if (!s || !device_name)
        return NULL;
    char name[256], pat[256];
    lower_copy(name, sizeof name, device_name);
    for (size_t i = 0; i < s->n; i++)
        for (size_t k = 0; k < s->gpus[i].n_match; k++) {
            lower_copy(pat, sizeof pat, s->gpus[i].match[k]);
            if (fnmatch(pat, name, 0) == 0)
                return &s->gpus[i];
        }
    return NULL;
}

const char *roofline_find_data_dir(char *buf, size_t size)
{
    return compile_find_dir("TUNE_DATA_DIR", "data", buf, size);
}

/* ---- calibration files ---- */

void roofline_calibration_init(roofline_calibration *c)
{
    memset(c, 0, sizeof *c);
    c->read_bw = c->copy_bw = c->launch_s = NAN;
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

tune_status roofline_calibration_save(const char *path, const roofline_calibration *c,
                                      tune_error *err)
{
    char dir[PATH_MAX], tmp[PATH_MAX + 8], method[512];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        tune_status st = results_mkdirs(dir, err);
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
        set_if(gemm, precision_names[p], ceiling_json(c->gemm_rate[p], "FLOP/s", method));
    }
    json_object_set_new(ceil, "gemm", gemm);
    set_if(ceil, "launch_overhead",
           ceiling_json(c->launch_s, "s",
                        "common.cu tune_fill_indices of one element, one block; median event-timed "
                        "duration with the L2 flushed before, as every result row is timed"));
    json_object_set_new(root, "ceilings", ceil);
    json_object_set_new(root, "measurement",
                        json_pack("{s:I, s:I, s:i, s:i}", "read_bytes", (json_int_t)c->read_bytes,
                                  "copy_bytes", (json_int_t)c->copy_bytes, "gemm_n", c->gemm_n,
                                  "reps", c->reps));
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int rc = json_dump_file(root, tmp, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (rc != 0 || rename(tmp, path) != 0)
        return tune_error_set(err, TUNE_ERR_IO, path, "cannot write");
    return TUNE_OK;
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
    json_t *root = json_load_file(path, 0, &je);
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
    for (int p = 0; p < ROOFLINE_N_PRECISIONS; p++)
        c->gemm_rate[p] = ceiling_value(json_object_get(ceil, "gemm"), precision_names[p]);
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

/* ---- the model ---- */

void roofline_ceilings_from_gpu(const roofline_gpu *g, roofline_ceilings *c)
{
    c->read_bw = c->copy_bw = g->mem_bw * g->frac_memory;
    for (int p = 0; p < ROOFLINE_N_PRECISIONS; p++)
        c->rate[p] = g->flops[p] * g->frac_matmul;
    c->launch_s = g->launch_s;
    c->origin = ROOFLINE_FROM_SPECS;
}

void roofline_ceilings_from_calibration(const roofline_calibration *cal, const roofline_gpu *g,
                                        roofline_ceilings *c)
{
    roofline_ceilings spec;
    if (g)
        roofline_ceilings_from_gpu(g, &spec);
    else {
        spec.read_bw = spec.copy_bw = spec.launch_s = NAN;
        for (int p = 0; p < ROOFLINE_N_PRECISIONS; p++)
            spec.rate[p] = NAN;
    }
    c->read_bw = isfinite(cal->read_bw) ? cal->read_bw : spec.read_bw;
    c->copy_bw = isfinite(cal->copy_bw) ? cal->copy_bw : spec.copy_bw;
    c->launch_s = isfinite(cal->launch_s) ? cal->launch_s : spec.launch_s;
    for (int p = 0; p < ROOFLINE_N_PRECISIONS; p++)
        c->rate[p] = isfinite(cal->gemm_rate[p]) ? cal->gemm_rate[p] : spec.rate[p];
    c->origin = ROOFLINE_FROM_CALIBRATION;
}

static double positive_or_nan(double x)
{
    return isfinite(x) && x > 0 ? x : NAN;
}

double roofline_time(const roofline_ceilings *c, double bytes, double flops, roofline_precision p,
                     roofline_bound *bound)
{
    double bw = fmax(positive_or_nan(c->read_bw), positive_or_nan(c->copy_bw)); /* fmax skips NAN */
    double rate = (unsigned)p < ROOFLINE_N_PRECISIONS ? positive_or_nan(c->rate[p]) : NAN;
    double terms[3] = {isfinite(bytes) && bytes >= 0 ? bytes / bw : NAN,
                       isfinite(flops) && flops >= 0 ? flops / rate : NAN,
                       positive_or_nan(c->launch_s)};
    double t = NAN;
    roofline_bound b = ROOFLINE_BOUND_MEMORY;
    for (int i = 0; i < 3; i++)
        if (isfinite(terms[i]) && (isnan(t) || terms[i] > t)) {
            t = terms[i];
            b = (roofline_bound)i;
        }
    if (bound)
        *bound = b;
    return t;
}

roofline_precision roofline_row_precision(const result_row *row)
{
    roofline_precision p = ROOFLINE_FP32;
    const char *dtype = point_str(&row->values, "dtype", NULL);
    if (dtype && roofline_precision_parse(dtype, &p) == 0)
        return p;
    return ROOFLINE_FP32;
}

void roofline_predict_rows(const roofline_ceilings *c, const result_row *rows, size_t n,
                           double *pred, roofline_bound *bound)
{
    for (size_t i = 0; i < n; i++) {
        roofline_bound b = ROOFLINE_BOUND_MEMORY;
        double bytes = rows[i].bytes, flops = rows[i].flops;
        pred[i] = isfinite(bytes) || isfinite(flops)
                      ? roofline_time(c, bytes, flops, roofline_row_precision(&rows[i]), &b)
                      : NAN;
        if (bound)
            bound[i] = b;
    }
}

void roofline_error_compute(const double *pred, const double *meas, size_t n, roofline_error *out)
{
    memset(out, 0, sizeof *out);
    double sum_log_err = 0, sum_log_ratio = 0;
    out->worst_error = NAN;
    for (size_t i = 0; i < n; i++) {
        if (!(isfinite(pred[i]) && pred[i] > 0 && isfinite(meas[i]) && meas[i] > 0))
            continue;
        double lr = log(pred[i] / meas[i]);
        double e = exp(fabs(lr));
        sum_log_ratio += lr;
        sum_log_err += fabs(lr);
        if (out->n == 0 || e > out->worst_error) {
            out->worst_error = e;
            out->worst = i;
        }
        out->n++;
    }
    out->gmean_error = out->n ? exp(sum_log_err / (double)out->n) : NAN;
    out->gmean_ratio = out->n ? exp(sum_log_ratio / (double)out->n) : NAN;
}

/* ---- report ---- */

typedef struct {
    roofline_report_group g;
    char *model, *source, *device, *method, *worst_shape;
} report_group;

typedef struct {
    char *model, *source, *device;
    roofline_ceilings c;
} report_model;

typedef struct {
    size_t model; /* index into models */
    size_t index; /* line of the row in its source (0-based) */
    double pred, ratio;
    roofline_bound bound;
} report_row;

struct roofline_report {
    report_group *groups;
    size_t n_groups, cap_groups;
    report_model *models;
    size_t n_models;
    report_row *rows;
    size_t n_rows, cap_rows;
};

roofline_report *roofline_report_new(void)
{
    return calloc(1, sizeof(roofline_report));
}

void roofline_report_free(roofline_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_groups; i++) {
        free(r->groups[i].model);
        free(r->groups[i].source);
        free(r->groups[i].device);
        free(r->groups[i].method);
        free(r->groups[i].worst_shape);
    }
    for (size_t i = 0; i < r->n_models; i++) {
        free(r->models[i].model);
        free(r->models[i].source);
        free(r->models[i].device);
    }
    free(r->groups);
    free(r->models);
    free(r->rows);
    free(r);
}

size_t roofline_report_n_groups(const roofline_report *r)
{
    return r ? r->n_groups : 0;
}

const roofline_report_group *roofline_report_group_at(const roofline_report *r, size_t i)
{
    return r && i < r->n_groups ? &r->groups[i].g : NULL;
}

static int row_usable(const result_row *row, double pred)
{
    return row->status == RESULT_OK && row->time.n > 0 && isfinite(row->time.median) &&
           row->time.median > 0 && isfinite(pred) && pred > 0;
}

/* The problem-axis values of a row (its first n_axes values). */
static void shape_of(const result_row *row, tune_point *p)
{
    memset(p, 0, sizeof *p);
    for (size_t a = 0; a < row->n_axes && a < row->values.n; a++)
        point_set(p, row->values.names[a], row->values.vals[a]);
}

static int same_shape(const result_row *a, const result_row *b)
{
    if (a->n_axes != b->n_axes)
        return 0;
    for (size_t i = 0; i < a->n_axes; i++) {
        expr_value v;
        if (point_get(&b->values, a->values.names[i], &v) != 0)
            return 0;
        const expr_value *u = &a->values.vals[i];
        if (u->type != v.type)
            return 0;
        if (u->type == EXPR_STR ? strcmp(u->s, v.s) != 0
                                : expr_value_as_double(*u) != expr_value_as_double(v))
            return 0;
    }
    return 1;
}

static char *dup_str(const char *s)
{
    return strdup(s ? s : "");
}

static tune_status add_group(roofline_report *r, const char *model, const char *source,
                             const char *device, const char *method, const char *selection,
                             const result_row *rows, const size_t *idx, size_t m,
                             const double *pred, const roofline_bound *bound, tune_error *err)
{
    if (r->n_groups == r->cap_groups) {
        size_t cap = r->cap_groups ? 2 * r->cap_groups : 16;
        report_group *ng = realloc(r->groups, cap * sizeof *ng);
        if (!ng)
            return tune_error_set(err, TUNE_ERR_NOMEM, "roofline", "out of memory");
        r->groups = ng;
        r->cap_groups = cap;
    }
    double *p = malloc((m ? m : 1) * sizeof *p), *t = malloc((m ? m : 1) * sizeof *t);
    if (!p || !t) {
        free(p);
        free(t);
        return tune_error_set(err, TUNE_ERR_NOMEM, "roofline", "out of memory");
    }
    report_group *g = &r->groups[r->n_groups];
    memset(g, 0, sizeof *g);
    for (size_t k = 0; k < m; k++) {
        p[k] = pred[idx[k]];
        t[k] = rows[idx[k]].time.median;
        g->g.n_bound[bound ? bound[idx[k]] : ROOFLINE_BOUND_MEMORY]++;
    }
    roofline_error_compute(p, t, m, &g->g.err);
    g->model = dup_str(model);
    g->source = dup_str(source);
    g->device = dup_str(device);
    g->method = dup_str(method);
    char buf[1024] = "";
    if (g->g.err.n) {
        const result_row *w = &rows[idx[g->g.err.worst]];
        tune_point sp;
        shape_of(w, &sp);
        point_format(&sp, buf, sizeof buf);
        if (w->kernel && strlen(buf) + strlen(w->kernel) + 4 < sizeof buf)
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), " (%s)", w->kernel);
        g->g.worst_pred = p[g->g.err.worst];
        g->g.worst_meas = t[g->g.err.worst];
        g->g.err.worst = idx[g->g.err.worst];
    }
    g->worst_shape = dup_str(buf);
    free(p);
    free(t);
    if (!g->model || !g->source || !g->device || !g->method || !g->worst_shape) {
        free(g->model);
        free(g->source);
        free(g->device);
        free(g->method);
        free(g->worst_shape);
        return tune_error_set(err, TUNE_ERR_NOMEM, "roofline", "out of memory");
    }
    g->g.model = g->model;
    g->g.source = g->source;
    g->g.device = g->device;
    g->g.method = g->method;
    g->g.selection = selection;
    g->g.worst_shape = g->worst_shape;
    r->n_groups++;
    return TUNE_OK;
}

tune_status roofline_report_add(roofline_report *r, const char *model, const char *source,
                                const char *device, const roofline_ceilings *c,
                                const result_row *rows, size_t n, const double *pred,
                                const roofline_bound *bound, tune_error *err)
{
    tune_status st = TUNE_OK;
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    size_t *best = malloc((n ? n : 1) * sizeof *best);
    report_model *nm = realloc(r->models, (r->n_models + 1) * sizeof *nm);
    if (nm)
        r->models = nm;
    if (r->n_rows + n > r->cap_rows) {
        size_t cap = r->n_rows + n + 64;
        report_row *nr = realloc(r->rows, cap * sizeof *nr);
        if (nr) {
            r->rows = nr;
            r->cap_rows = cap;
        }
    }
    if (!idx || !best || !nm || r->n_rows + n > r->cap_rows) {
        st = tune_error_set(err, TUNE_ERR_NOMEM, "roofline", "out of memory");
        goto done;
    }
    size_t mi = r->n_models;
    r->models[mi].model = dup_str(model);
    r->models[mi].source = dup_str(source);
    r->models[mi].device = dup_str(device);
    r->models[mi].c = *c;
    r->n_models++;
    for (size_t i = 0; i < n; i++) {
        if (!row_usable(&rows[i], pred[i]))
            continue;
        report_row *rr = &r->rows[r->n_rows++];
        rr->model = mi;
        rr->index = i;
        rr->pred = pred[i];
        rr->ratio = pred[i] / rows[i].time.median;
        rr->bound = bound ? bound[i] : ROOFLINE_BOUND_MEMORY;
    }
    /* Methods in order of first appearance. */
    for (size_t i = 0; i < n && st == TUNE_OK; i++) {
        const char *method = rows[i].method ? rows[i].method : "";
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(rows[j].method ? rows[j].method : "", method) == 0;
        if (seen)
            continue;
        size_t m = 0, nb = 0;
        for (size_t j = i; j < n; j++)
            if (strcmp(rows[j].method ? rows[j].method : "", method) == 0 &&
                row_usable(&rows[j], pred[j]))
                idx[m++] = j;
        /* best: the fastest usable row of each shape */
        for (size_t k = 0; k < m; k++) {
            size_t b = 0;
            while (b < nb && !same_shape(&rows[best[b]], &rows[idx[k]]))
                b++;
            if (b == nb)
                best[nb++] = idx[k];
            else if (rows[idx[k]].time.median < rows[best[b]].time.median)
                best[b] = idx[k];
        }
        st = add_group(r, model, source, device, method, "all", rows, idx, m, pred, bound, err);
        if (st == TUNE_OK)
            st = add_group(r, model, source, device, method, "best", rows, best, nb, pred, bound,
                           err);
    }
done:
    free(idx);
    free(best);
    return st;
}

void roofline_report_write_markdown(const roofline_report *r, FILE *f)
{
    for (size_t i = 0; i < r->n_groups; i++) {
        const roofline_report_group *g = &r->groups[i].g;
        if (i == 0 || strcmp(g->source, r->groups[i - 1].g.source) != 0 ||
            strcmp(g->device, r->groups[i - 1].g.device) != 0) {
            fprintf(f, "%s## %s (%s)\n\n", i ? "\n" : "", g->source, g->device);
            fprintf(f,
                    "| model | method | rows | geo-mean error | worst error | worst row | roofline "
                    "/ measured (us) | %% of roofline | memory / compute / launch bound |\n");
            fprintf(f, "|---|---|---|---|---|---|---|---|---|\n");
        }
        if (!g->err.n) {
            fprintf(f, "| %s | %s (%s) | 0 | | | | | | |\n", g->model, g->method, g->selection);
            continue;
        }
        fprintf(
            f,
            "| %s | %s (%s) | %zu | %.2fx | %.2fx | %s | %.2f / %.2f | %.1f | %zu / %zu / %zu |\n",
            g->model, g->method, g->selection, g->err.n, g->err.gmean_error, g->err.worst_error,
            g->worst_shape, g->worst_pred * 1e6, g->worst_meas * 1e6, 100.0 * g->err.gmean_ratio,
            g->n_bound[0], g->n_bound[1], g->n_bound[2]);
    }
}

static json_t *num_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *ceilings_json(const roofline_ceilings *c)
{
    json_t *rates = json_object();
    for (int p = 0; p < ROOFLINE_N_PRECISIONS; p++)
        json_object_set_new(rates, precision_names[p], num_or_null(c->rate[p]));
    return json_pack("{s:s, s:o, s:o, s:o, s:o}", "origin",
                     c->origin == ROOFLINE_FROM_CALIBRATION ? "calibration" : "specs x achievable",
                     "read_bw", num_or_null(c->read_bw), "copy_bw", num_or_null(c->copy_bw), "rate",
                     rates, "launch_overhead_s", num_or_null(c->launch_s));
}

tune_status roofline_report_write_json(const roofline_report *r, const char *path,
                                       const char *extra_json, tune_error *err)
{
    json_t *root = extra_json ? json_loads(extra_json, 0, NULL) : NULL;
    if (!json_is_object(root)) {
        json_decref(root);
        root = json_object();
    }
    json_t *models = json_array(), *groups = json_array(), *rows = json_array();
    for (size_t i = 0; i < r->n_models; i++)
        json_array_append_new(models, json_pack("{s:s, s:s, s:s, s:o}", "model", r->models[i].model,
                                                "source", r->models[i].source, "device",
                                                r->models[i].device, "ceilings",
                                                ceilings_json(&r->models[i].c)));
    for (size_t i = 0; i < r->n_groups; i++) {
        const roofline_report_group *g = &r->groups[i].g;
        json_array_append_new(
            groups,
            json_pack(
                "{s:s, s:s, s:s, s:s, s:s, s:I, s:o, s:o, s:o, s:s, s:o, s:o, s:{s:I, s:I, s:I}}",
                "model", g->model, "source", g->source, "device", g->device, "method", g->method,
                "selection", g->selection, "n", (json_int_t)g->err.n, "gmean_error",
                num_or_null(g->err.gmean_error), "worst_error", num_or_null(g->err.worst_error),
                "gmean_fraction_of_roofline", num_or_null(g->err.gmean_ratio), "worst_shape",
                g->worst_shape, "worst_roofline_time", num_or_null(g->worst_pred),
                "worst_measured_time", num_or_null(g->worst_meas), "bound", "memory",
                (json_int_t)g->n_bound[0], "compute", (json_int_t)g->n_bound[1], "launch",
                (json_int_t)g->n_bound[2]));
    }
    for (size_t i = 0; i < r->n_rows; i++) {
        const report_row *rr = &r->rows[i];
        json_array_append_new(
            rows, json_pack("{s:s, s:s, s:I, s:f, s:f, s:s}", "model", r->models[rr->model].model,
                            "source", r->models[rr->model].source, "index", (json_int_t)rr->index,
                            "roofline_time", rr->pred, "ratio", rr->ratio, "bound",
                            roofline_bound_str(rr->bound)));
    }
    json_object_set_new(root, "models", models);
    json_object_set_new(root, "groups", groups);
    json_object_set_new(root, "rows", rows);
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int rc = json_dump_file(root, tmp, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (rc != 0 || rename(tmp, path) != 0)
        return tune_error_set(err, TUNE_ERR_IO, path, "cannot write");
    return TUNE_OK;
}

/* ---- measurements ---- */

typedef struct {
    void *kernel, *buf, *sink;
    unsigned long long words;
    unsigned grid;
    void *stream;
} probe_ctx;

static tune_status probe_launch(void *ctx, tune_error *err)
{
    probe_ctx *p = ctx;
    void *args[] = {&p->buf, &p->words, &p->sink};
    return gpu_launch(p->kernel, p->grid, 512, 0, p->stream, args, err);
}

static double median_of(double *samples, int reps)
{
    stats_summary s;
    stats_summarize(samples, (size_t)reps, &s);
    return s.median;
}

tune_status roofline_measure_read_bw(timing *tm, void *stream, void *read_probe, int sm_count,
                                     size_t bytes, int reps, double *bw, tune_error *err)
{
    unsigned grid = (unsigned)(sm_count > 0 ? sm_count : 132) * 16;
    probe_ctx p = {read_probe, NULL, NULL, bytes / 16, grid, stream};
    tune_status st = TUNE_OK;
    double *samples = malloc((size_t)(reps > 0 ? reps : 1) * sizeof *samples);
    if (!read_probe || reps <= 0 || !samples) {
        free(samples);
        return tune_error_set(err, !samples ? TUNE_ERR_NOMEM : TUNE_ERR_INVALID,
                              "roofline_measure_read_bw", "needs tune_read_probe and reps > 0");
    }
    if ((st = gpu_malloc(&p.buf, bytes, err)) != TUNE_OK ||
        (st = gpu_malloc(&p.sink, grid * sizeof(unsigned), err)) != TUNE_OK)
        goto done;
    GPU_CHECK(cudaMemsetAsync(p.buf, 0x5a, bytes, (cudaStream_t)stream), err, st, done);
    if ((st = timing_run_fn(tm, probe_launch, &p, 3, reps, 1, samples, err)) != TUNE_OK)
        goto done;
    *bw = (double)(p.words * 16) / median_of(samples, reps);
done:
    gpu_free(p.buf);
    gpu_free(p.sink);
    free(samples);
    return st;
}

typedef struct {
    void *dst, *src;
    size_t bytes;
    void *stream;
} copy_ctx;

static tune_status copy_launch(void *ctx, tune_error *err)
{
    copy_ctx *c = ctx;
    tune_status st = TUNE_OK;
    GPU_CHECK(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice,
                              (cudaStream_t)c->stream),
              err, st, done);
done:
    return st;
}

static tune_status measure_copy_bw(timing *tm, void *stream, size_t bytes, int reps, double *bw,
                                   tune_error *err)
{
    copy_ctx c = {NULL, NULL, bytes, stream};
    tune_status st = TUNE_OK;
    double *samples = malloc((size_t)reps * sizeof *samples);
    if (!samples)
        return tune_error_set(err, TUNE_ERR_NOMEM, "roofline", "out of memory");
    if ((st = gpu_malloc(&c.src, bytes, err)) != TUNE_OK ||
        (st = gpu_malloc(&c.dst, bytes, err)) != TUNE_OK)
        goto done;
    GPU_CHECK(cudaMemsetAsync(c.src, 0x5a, bytes, (cudaStream_t)stream), err, st, done);
    if ((st = timing_run_fn(tm, copy_launch, &c, 2, reps, 1, samples, err)) != TUNE_OK)
        goto done;
    *bw = 2.0 * (double)bytes / median_of(samples, reps);
done:
    gpu_free(c.src);
    gpu_free(c.dst);
    free(samples);
    return st;
}

typedef struct {
    void *kernel, *buf;
    void *stream;
} tiny_ctx;

static tune_status tiny_launch(void *ctx, tune_error *err)
{
    tiny_ctx *t = ctx;
    unsigned long long n = 1, seed = 1;
    int range = 1;
    void *args[] = {&t->buf, &n, &seed, &range};
    return gpu_launch(t->kernel, 1, 32, 0, t->stream, args, err);
}

static tune_status measure_launch(timing *tm, void *stream, void *fill_indices, int reps,
                                  double *seconds, tune_error *err)
{
    tiny_ctx t = {fill_indices, NULL, stream};
    tune_status st = TUNE_OK;
    double *samples = malloc((size_t)reps * sizeof *samples);
    if (!samples)
        return tune_error_set(err, TUNE_ERR_NOMEM, "roofline", "out of memory");
    if ((st = gpu_malloc(&t.buf, 256, err)) == TUNE_OK &&
        (st = timing_run_fn(tm, tiny_launch, &t, 10, reps, 1, samples, err)) == TUNE_OK)
        *seconds = median_of(samples, reps);
    gpu_free(t.buf);
    free(samples);
    return st;
}

typedef struct {
    cublasHandle_t h;
    void *a, *b, *c;
    int n;
    cudaDataType_t type;
    cublasComputeType_t compute;
} gemm_ctx;

static tune_status gemm_launch(void *ctx, tune_error *err)
{
    gemm_ctx *g = ctx;
    const float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t cs = cublasGemmEx(g->h, CUBLAS_OP_N, CUBLAS_OP_N, g->n, g->n, g->n, &alpha, g->a,
                                     g->type, g->n, g->b, g->type, g->n, &beta, g->c, g->type, g->n,
                                     g->compute, CUBLAS_GEMM_DEFAULT);
    if (cs != CUBLAS_STATUS_SUCCESS)
        return tune_error_set(err, TUNE_ERR_CUBLAS, "cublasGemmEx", "%s",
                              cublasGetStatusString(cs));
    return TUNE_OK;
}

static tune_status fill_uniform(void *kernel, void *p, size_t n, unsigned long long seed,
                                void *stream, tune_error *err)
{
    unsigned long long nn = n;
    void *args[] = {&p, &nn, &seed};
    return gpu_launch(kernel, 1024, 256, 0, stream, args, err);
}

static tune_status measure_gemm(timing *tm, void *stream, cublasHandle_t h, void *fill,
                                roofline_precision prec, int n, int reps, double *rate,
                                tune_error *err)
{
    gemm_ctx g = {h, NULL, NULL, NULL, n, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    size_t elem = 4;
    if (prec == ROOFLINE_TF32)
        g.compute = CUBLAS_COMPUTE_32F_FAST_TF32;
    else if (prec == ROOFLINE_FP16)
        g.type = CUDA_R_16F, elem = 2;
    else if (prec == ROOFLINE_BF16)
        g.type = CUDA_R_16BF, elem = 2;
    size_t count = (size_t)n * (size_t)n, bytes = count * elem;
    tune_status st = TUNE_OK;
    double *samples = malloc((size_t)reps * sizeof *samples);
    if (!samples)
        return tune_error_set(err, TUNE_ERR_NOMEM, "roofline", "out of memory");
    if ((st = gpu_malloc(&g.a, bytes, err)) != TUNE_OK ||
        (st = gpu_malloc(&g.b, bytes, err)) != TUNE_OK ||
        (st = gpu_malloc(&g.c, bytes, err)) != TUNE_OK ||
        (st = fill_uniform(fill, g.a, count, 0x5eed, stream, err)) != TUNE_OK ||
        (st = fill_uniform(fill, g.b, count, 0x5eee, stream, err)) != TUNE_OK ||
        (st = fill_uniform(fill, g.c, count, 0x5eef, stream, err)) != TUNE_OK)
        goto done;
    if ((st = timing_run_fn(tm, gemm_launch, &g, 3, reps, 1, samples, err)) != TUNE_OK)
        goto done;
    *rate = 2.0 * (double)n * (double)n * (double)n / median_of(samples, reps);
done:
    gpu_free(g.a);
    gpu_free(g.b);
    gpu_free(g.c);
    free(samples);
    return st;
}

enum { K_READ, K_INDICES, K_FILL_F32, K_FILL_F16, K_FILL_BF16, K_COUNT };

static void logf_(FILE *log, const char *fmt, double value, const char *unit)
{
    if (log) {
        fprintf(log, fmt, value, unit);
        fflush(log);
    }
}

tune_status roofline_calibrate(const roofline_calibrate_options *opt, roofline_calibration *cal,
                               tune_error *err)
{
    static const char *const names[K_COUNT] = {
        "tune_read_probe", "tune_fill_indices", "tune_fill_uniform<float>",
        "tune_fill_uniform<half_t>", "tune_fill_uniform<bf16_t>"};
    roofline_calibrate_options o = *opt;
    if (!o.read_bytes)
        o.read_bytes = (size_t)4 << 30;
    if (!o.copy_bytes)
        o.copy_bytes = (size_t)4 << 30;
    if (!o.gemm_n)
        o.gemm_n = 8192;
    roofline_calibration_init(cal);
    gpu_info gi;
    tune_status st;
    if ((st = gpu_query(o.device, &gi, err)) != TUNE_OK ||
        (st = gpu_select(o.device, err)) != TUNE_OK)
        return st;

    compile_job jobs[K_COUNT];
    gpu_library *libs[K_COUNT] = {0};
    void *kern[K_COUNT] = {0};
    cudaStream_t stream = NULL;
    cublasHandle_t cublas = NULL;
    timing *tm = NULL;
    memset(jobs, 0, sizeof jobs);
    for (int k = 0; k < K_COUNT; k++) {
        snprintf(jobs[k].source, sizeof jobs[k].source, "common.cu");
        snprintf(jobs[k].name, sizeof jobs[k].name, "%s", names[k]);
    }
    char kdir[PATH_MAX];
    const char *kernels_dir =
        o.kernels_dir ? o.kernels_dir : compile_find_kernels_dir(kdir, sizeof kdir);
    if (!kernels_dir)
        return tune_error_set(err, TUNE_ERR_IO, "kernels_src",
                              "cannot find the kernel sources (set TUNE_KERNELS_DIR)");
    compile_options copt = {kernels_dir, o.cache_dir, gi.cc_major * 10 + gi.cc_minor, 0};
    if ((st = compile_run(jobs, K_COUNT, &copt, err)) != TUNE_OK)
        goto done;
    for (int k = 0; k < K_COUNT; k++) {
        if (jobs[k].status != TUNE_OK) {
            st = tune_error_set(err, jobs[k].status, names[k], "does not compile: %s",
                                jobs[k].log ? jobs[k].log : "");
            goto done;
        }
        if (!(libs[k] = gpu_library_load(jobs[k].cubin, err)) ||
            !(kern[k] = gpu_library_kernel(libs[k], jobs[k].lowered, err))) {
            st = err ? err->code : TUNE_ERR_CUDA;
            goto done;
        }
    }
    GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), err, st, done);
    if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(cublas, stream) != CUBLAS_STATUS_SUCCESS) {
        st = tune_error_set(err, TUNE_ERR_CUBLAS, "cublasCreate", "cannot create a handle");
        goto done;
    }
    if (!(tm = timing_init(stream, gi.l2_bytes, kern[K_READ], err))) {
        st = err ? err->code : TUNE_ERR_CUDA;
        goto done;
    }
    int reps = o.reps > 0 ? o.reps : 20;
    cal->reps = reps;
    cal->read_bytes = o.read_bytes;
    cal->copy_bytes = o.copy_bytes;
    cal->gemm_n = o.gemm_n;
    if ((st = roofline_measure_read_bw(tm, stream, kern[K_READ], gi.sm_count, o.read_bytes, reps,
                                       &cal->read_bw, err)) != TUNE_OK)
        goto done;
    logf_(o.log, "read bandwidth      %8.1f %s\n", cal->read_bw / 1e9, "GB/s");
    int few = o.reps > 0 ? o.reps : 10;
    if ((st = measure_copy_bw(tm, stream, o.copy_bytes, few, &cal->copy_bw, err)) != TUNE_OK)
        goto done;
    logf_(o.log, "copy bandwidth      %8.1f %s (read + written)\n", cal->copy_bw / 1e9, "GB/s");
    const struct {
        roofline_precision p;
        int fill;
    } gemms[] = {{ROOFLINE_FP16, K_FILL_F16},
                 {ROOFLINE_BF16, K_FILL_BF16},
                 {ROOFLINE_TF32, K_FILL_F32},
                 {ROOFLINE_FP32, K_FILL_F32}};
    for (size_t i = 0; i < sizeof gemms / sizeof gemms[0]; i++) {
        roofline_precision p = gemms[i].p;
        if ((st = measure_gemm(tm, stream, cublas, kern[gemms[i].fill], p, o.gemm_n, few,
                               &cal->gemm_rate[p], err)) != TUNE_OK)
            goto done;
        if (o.log) {
            fprintf(o.log, "GEMM %-4s           %8.1f TFLOP/s\n", precision_names[p],
                    cal->gemm_rate[p] / 1e12);
            fflush(o.log);
        }
    }
    if ((st = measure_launch(tm, stream, kern[K_INDICES], o.reps > 0 ? o.reps : 100, &cal->launch_s,
                             err)) != TUNE_OK)
        goto done;
    logf_(o.log, "launch overhead     %8.2f %s\n", cal->launch_s * 1e6, "us");

    snprintf(cal->device, sizeof cal->device, "%s", gi.name);
    snprintf(cal->pci_bus_id, sizeof cal->pci_bus_id, "%s", gi.pci_bus_id);
    snprintf(cal->compute_capability, sizeof cal->compute_capability, "%d.%d", gi.cc_major,
             gi.cc_minor);
    cal->sm_count = gi.sm_count;
    cal->l2_bytes = gi.l2_bytes;
    cal->driver_version = gi.driver_version;
    cal->runtime_version = gi.runtime_version;
    cal->nvrtc_version = compile_nvrtc_version();
    int major = 0, minor = 0, patch = 0;
    cublasGetProperty(MAJOR_VERSION, &major);
    cublasGetProperty(MINOR_VERSION, &minor);
    cublasGetProperty(PATCH_LEVEL, &patch);
    snprintf(cal->cublas_version, sizeof cal->cublas_version, "%d.%d.%d", major, minor, patch);
    snprintf(cal->tool_version, sizeof cal->tool_version, "%s", TUNE_VERSION);
    snprintf(cal->tool_rev, sizeof cal->tool_rev, "%s", TUNE_GIT_REV);
    gethostname(cal->host, sizeof cal->host - 1);
    time_t now = time(NULL);
    struct tm utc;
    gmtime_r(&now, &utc);
    strftime(cal->date, sizeof cal->date, "%Y-%m-%dT%H:%M:%SZ", &utc);
done:
    timing_free(tm);
    if (cublas)
        cublasDestroy(cublas);
    if (stream)
        cudaStreamDestroy(stream);
    for (int k = 0; k < K_COUNT; k++) {
        gpu_library_free(libs[k]);
        compile_job_clear(&jobs[k]);
    }
    return st;
}
