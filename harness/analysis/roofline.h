/* roofline.h - the roofline model: the time no kernel can beat, from a row's bytes and FLOPs and
 * the device's ceilings, and how far measured times are from it (docs/roofline.md).
 *
 *   roofline_specs *specs = roofline_specs_load(NULL, &err);            // data/gpus.json
 *   const roofline_gpu *g = roofline_specs_match(specs, "NVIDIA H200");  // NULL: not in the table
 *   roofline_ceilings c;
 *   roofline_ceilings_from_gpu(g, &c);                                   // peak x achievable
 *   roofline_calibration cal;
 *   if (roofline_calibration_load("results/calibration/nvidia-h200.json", &cal, &err) == TUNE_OK)
 *       roofline_ceilings_from_calibration(&cal, g, &c);                // measured; gaps from g
 *   roofline_bound b;
 *   double t = roofline_time(&c, bytes, flops, ROOFLINE_FP16, &b);      // seconds
 *   roofline_specs_free(specs);
 *
 * roofline time = max(bytes / bandwidth, flops / rate(precision), launch overhead), where the
 * bandwidth is the larger of the read and copy bandwidths (rows count read + written bytes, and a
 * roofline is a bound no row may beat). The prediction error of a row is
 * max(roofline / measured, measured / roofline) >= 1; over rows: their geometric mean and the
 * worst.
 */
#ifndef TUNE_ROOFLINE_H
#define TUNE_ROOFLINE_H

#include <stddef.h>
#include <stdio.h>

#include "core/error.h"
#include "store/results.h"
#include "device/timing.h"

typedef enum {
    ROOFLINE_FP32 = 0, /* CUDA cores (cuBLAS SGEMM without TF32) */
    ROOFLINE_TF32,
    ROOFLINE_FP16, /* tensor cores; the fp16 and bf16 rates are with fp32 accumulation */
    ROOFLINE_BF16,
    ROOFLINE_FP8,
    ROOFLINE_INT8,
    ROOFLINE_N_PRECISIONS
} roofline_precision;

/* "fp32", "tf32", "fp16", "bf16", "fp8", "int8". */
const char *roofline_precision_str(roofline_precision p);
/* Those names and dtype names: "float32", "float16", "half", "bfloat16", "float8_e4m3fn", ...
 * 0 and *out, or -1 when unknown. */
int roofline_precision_parse(const char *s, roofline_precision *out);

typedef enum {
    ROOFLINE_BOUND_MEMORY,
    ROOFLINE_BOUND_COMPUTE,
    ROOFLINE_BOUND_LAUNCH
} roofline_bound;
const char *roofline_bound_str(roofline_bound b); /* "memory", "compute", "launch" */

/* ---- the specs table (data/gpus.json) ---- */

enum { ROOFLINE_MAX_PATTERNS = 8 };

/* One GPU of the table. Strings are borrowed from the table. */
typedef struct {
    const char *name;
    const char *match[ROOFLINE_MAX_PATTERNS]; /* globs over device names, case-insensitive */
    size_t n_match;
    double mem_bw;                       /* B/s */
    double flops[ROOFLINE_N_PRECISIONS]; /* dense peak, FLOP/s (OP/s for int8); NAN: none */
    int sm_count;
    size_t l2_bytes;
    double frac_memory, frac_matmul; /* achievable fractions of peak */
    double launch_s;                 /* the table's launch overhead */
    const char *source_mem_bw, *source_flops, *source_sm_count, *source_l2, *source_achievable;
} roofline_gpu;

typedef struct roofline_specs roofline_specs;

/* New table from path (NULL: roofline_find_data_dir()/gpus.json), or NULL with err set: a missing
 * or wrongly typed field of any entry is an error naming file:line:col and the JSON path. */
roofline_specs *roofline_specs_load(const char *path, tune_error *err);
void roofline_specs_free(roofline_specs *s);
size_t roofline_specs_count(const roofline_specs *s);
const roofline_gpu *roofline_specs_at(const roofline_specs *s, size_t i); /* borrowed */
/* First entry (in table order) with a pattern matching the device name (trailing blanks ignored),
 * or NULL. Borrowed. */
const roofline_gpu *roofline_specs_match(const roofline_specs *s, const char *device_name);

/* Folder of the data files: $TUNE_DATA_DIR, else <exe dir>/../data, <exe dir>/../../data, ./data,
 * then the source tree's. Writes into buf; returns buf or NULL when none exists. */
const char *roofline_find_data_dir(char *buf, size_t size);

/* ---- calibration files (results/calibration/<slug>.json) ---- */

typedef struct {
    char device[256];
    char date[32]; /* ISO 8601 UTC */
    char tool_version[32], tool_rev[64];
    double read_bw;                          /* B/s, read-only probe */
    double copy_bw;                          /* B/s, (read + written bytes) / time */
    double gemm_rate[ROOFLINE_N_PRECISIONS]; /* FLOP/s of cuBLAS GEMMs; NAN: not measured */
    double launch_s;                         /* event-timed minimal kernel; NAN: not measured */
    /* provenance */
    size_t read_bytes, copy_bytes; /* buffer sizes */
    int gemm_n;                    /* m = n = k */
    int reps;                      /* timed reps of each bandwidth and GEMM measurement */
    char pci_bus_id[32], compute_capability[16], cublas_version[32], host[256];
    int sm_count;
    size_t l2_bytes;
    int driver_version, runtime_version, nvrtc_version;
} roofline_calibration;

/* Every number NAN, every string empty. */
void roofline_calibration_init(roofline_calibration *c);
/* Reads a calibration file. Requires device.name and a positive ceilings.read_bw; other ceilings
 * may be missing (NAN). */
tune_status roofline_calibration_load(const char *path, roofline_calibration *c, tune_error *err);
/* Writes it (parent folders created, atomically through path.tmp). */
tune_status roofline_calibration_save(const char *path, const roofline_calibration *c,
                                      tune_error *err);

/* "NVIDIA H200" -> "nvidia-h200": lower case, runs of other characters as one '-'. Returns buf. */
const char *roofline_device_slug(const char *device, char *buf, size_t size);
/* "<results_root>/calibration/<slug>.json" into buf; returns buf. */
const char *roofline_calibration_path(const char *results_root, const char *device, char *buf,
                                      size_t size);

/* ---- the model ---- */

typedef enum { ROOFLINE_FROM_SPECS, ROOFLINE_FROM_CALIBRATION } roofline_origin;

typedef struct {
    double read_bw, copy_bw;            /* B/s */
    double rate[ROOFLINE_N_PRECISIONS]; /* FLOP/s; NAN: unknown (the compute term is left out) */
    double launch_s;                    /* NAN or 0: no launch term */
    roofline_origin origin;
} roofline_ceilings;

/* Peak x achievable fraction; launch overhead from the table. */
void roofline_ceilings_from_gpu(const roofline_gpu *g, roofline_ceilings *c);
/* The measured ceilings; what the calibration lacks (NAN) comes from g (peak x achievable) when g
 * is not NULL. */
void roofline_ceilings_from_calibration(const roofline_calibration *cal, const roofline_gpu *g,
                                        roofline_ceilings *c);

/* max(bytes / max(read_bw, copy_bw), flops / rate[p], launch_s) in seconds; NAN terms are left out
 * (NAN when all are). bound (may be NULL) names the largest term. */
double roofline_time(const roofline_ceilings *c, double bytes, double flops, roofline_precision p,
                     roofline_bound *bound);

/* Precision of a result row: its "dtype" value when it parses, else ROOFLINE_FP32. */
roofline_precision roofline_row_precision(const result_row *row);
/* Roofline time of every row into pred[i] (NAN for rows without bytes and FLOPs), the bound into
 * bound[i] (may be NULL). */
void roofline_predict_rows(const roofline_ceilings *c, const result_row *rows, size_t n,
                           double *pred, roofline_bound *bound);

/* Prediction error over n (prediction, measurement) pairs; pairs with a non-positive or non-finite
 * value are left out. */
typedef struct {
    size_t n;
    double gmean_error; /* geometric mean of max(pred / meas, meas / pred); NAN when n == 0 */
    double worst_error;
    size_t worst;       /* index of the worst pair in the input */
    double gmean_ratio; /* geometric mean of pred / meas: the mean fraction of the roofline */
} roofline_error;

void roofline_error_compute(const double *pred, const double *meas, size_t n, roofline_error *out);

/* ---- the prediction-error report of `tune roofline` ---- */

typedef struct roofline_report roofline_report;

roofline_report *roofline_report_new(void);
void roofline_report_free(roofline_report *r);
/* Adds the rows of one results folder (source: its name) on one device, predicted by one model
 * (model: a label such as "calibrated" or "datasheet"). For every method of the rows, two groups:
 * all rows with status ok, and the best (fastest ok) row of each shape (problem-axis values).
 * pred and bound are those of roofline_predict_rows. Strings are copied; rows are only read
 * during the call. */
tune_status roofline_report_add(roofline_report *r, const char *model, const char *source,
                                const char *device, const roofline_ceilings *c,
                                const result_row *rows, size_t n, const double *pred,
                                const roofline_bound *bound, tune_error *err);

typedef struct {
    const char *model, *source, *device, *method;
    const char *selection; /* "all" or "best" */
    roofline_error err;
    size_t n_bound[3];       /* rows by bound */
    const char *worst_shape; /* "g=256 k=64 ..." of the worst row; borrowed from the report */
    double worst_pred, worst_meas;
} roofline_report_group;

size_t roofline_report_n_groups(const roofline_report *r);
const roofline_report_group *roofline_report_group_at(const roofline_report *r, size_t i);

/* Per source, a heading "## <source> (<device>)" and a Markdown table: model, method (selection),
 * rows, geo-mean and worst error, the worst row with its times, mean % of roofline, rows by bound.
 */
void roofline_report_write_markdown(const roofline_report *r, FILE *f);
/* roofline.json: {"models": [{"model", "source", "device", "ceilings": {...}}], "groups": [...],
 * "rows": [{"model", "source", "index", "roofline_time", "ratio", "bound"}]} for every row with
 * status ok (index: 0-based line of the row in the source's raw.jsonl). extra_json (may be NULL:
 * the text of a JSON object) gives the first members. */
tune_status roofline_report_write_json(const roofline_report *r, const char *path,
                                       const char *extra_json, tune_error *err);

/* ---- measuring the ceilings (a GPU is needed) ---- */

/* Read-only bandwidth: `bytes` read once by common.cu's tune_read_probe (read_probe: its kernel
 * handle; sm_count * 16 blocks of 512 threads), timed by tm (L2 flushed, 3 warmup reps): bytes /
 * median of reps. What run.c measures as read_bw (4 GiB, 20 reps). */
tune_status roofline_measure_read_bw(timing *tm, void *stream, void *read_probe, int sm_count,
                                     size_t bytes, int reps, double *bw, tune_error *err);

typedef struct {
    int device;
    const char *kernels_dir; /* NULL: compile_find_kernels_dir */
    const char *cache_dir;   /* kernel cache; NULL: none */
    size_t read_bytes;       /* 0: 4 GiB */
    size_t copy_bytes;       /* 0: 4 GiB (8 GiB allocated) */
    int gemm_n;              /* 0: 8192 */
    int reps;  /* every measurement's reps; 0: read 20, copy 10, GEMM 10, launch 100 */
    FILE *log; /* progress lines; NULL: none */
} roofline_calibrate_options;

/* Measures the ceilings of a device: read bandwidth, device-to-device copy bandwidth, cuBLAS GEMM
 * rates (fp16 and bf16 with fp32 accumulation, tf32, fp32), and the launch overhead (event-timed
 * tune_fill_indices of one element, L2 flushed like every row), and fills cal with provenance.
 * TUNE_ERR_NO_GPU (one sentence, from gpu_query) without a GPU. */
tune_status roofline_calibrate(const roofline_calibrate_options *opt, roofline_calibration *cal,
                               tune_error *err);

#endif
