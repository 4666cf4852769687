/* roofline.h - the roofline model: the time no kernel can beat, from a row's bytes and FLOPs and
 * the device's ceilings, and how far measured times are from it (docs/roofline.md). The ceilings
 * come from the specs table (roofline_specs.h) or a calibration file (store/calibration.h, measured
 * by device/calibrate.h; roofline_calibration.h); roofline_report.h is `tune roofline`'s report.
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
#include "core/precision.h"
#include "store/results.h"

typedef enum {
    ROOFLINE_BOUND_MEMORY,
    ROOFLINE_BOUND_COMPUTE,
    ROOFLINE_BOUND_LAUNCH
} roofline_bound;
const char *roofline_bound_str(roofline_bound b); /* "memory", "compute", "launch" */

typedef enum { ROOFLINE_FROM_SPECS, ROOFLINE_FROM_CALIBRATION } roofline_origin;

typedef struct {
    double read_bw, copy_bw;            /* B/s */
    double rate[ROOFLINE_N_PRECISIONS]; /* FLOP/s; NAN: unknown (the compute term is left out) */
    double launch_s;                    /* NAN or 0: no launch term */
    double latency_s; /* one dependent DRAM round trip (the time model's chain term); NAN: none */
    double floor_s;   /* a grid-filling kernel that reads almost nothing: the time model's floor
                         per launch (NAN: launch_s stands in) */
    double gather_elem_s; /* seconds per element of an element-wise gather (the time model's
                             issue term); NAN: none */
    double gather_elem_t_s; /* the same gather from a transposed source, 32 rows per warp load
                               (the issue term of a scattered step); NAN: gather_elem_s stands in */
    double gather_elem_t_dram_s; /* the same transposed gather over a source the L2 cannot hold
                                    (a scattered step whose source exceeds the L2); NAN:
                                    gather_elem_t_s stands in */
    double sector_bw;   /* bytes per second of random 32-byte sectors read from every SM (the
                           time model's random re-fetches); NAN: read_bw stands in */
    double fetch_bytes; /* the L2's DRAM fetch granularity (32, 64 or 128 bytes), which traffic
                           models read as `fetch_bytes`; NAN: the 32-byte sector stands in */
    /* Device facts that traffic models may read as `sm_count` and `l2_bytes` (a kernel's waves,
     * the L2's capacity): from the calibration's device, else the specs table; 0: unknown. */
    int sm_count;
    double l2_bytes;
    roofline_origin origin;
} roofline_ceilings;


/* max(bytes / max(read_bw, copy_bw), flops / rate[p], launch_s) in seconds; NAN terms are left out
 * (NAN when all are). bound (may be NULL) names the largest term. */
double roofline_time(const roofline_ceilings *c, double bytes, double flops, roofline_precision p,
                     roofline_bound *bound);

/* Precision of a result row: the value of its dtype axis (the family's dtype_axis, model/family.h;
 * NULL: none) when it parses, else ROOFLINE_FP32. */
roofline_precision roofline_row_precision(const result_row *row, const char *dtype_axis);
/* Roofline time of every row into pred[i] (NAN for rows without bytes and FLOPs), the bound into
 * bound[i] (may be NULL); dtype_axis as for roofline_row_precision. */
void roofline_predict_rows(const roofline_ceilings *c, const result_row *rows, size_t n,
                           const char *dtype_axis, double *pred, roofline_bound *bound);

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

#endif
