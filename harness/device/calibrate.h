/* calibrate.h - the device's ceilings measured (a GPU is needed): read and copy bandwidth, cuBLAS
 * GEMM rates, launch overhead; written as a calibration file (store/calibration.h) by
 * `tune calibrate`, and the read bandwidth every GPU run measures.
 *
 *   calibrate_options opt = {.device = 0};
 *   roofline_calibration cal;
 *   if (calibrate_device(&opt, &cal, &err) == TUNE_OK)
 *       roofline_calibration_save(path, &cal, &err);
 */
#ifndef TUNE_CALIBRATE_H
#define TUNE_CALIBRATE_H

#include <stddef.h>
#include <stdio.h>

#include "core/error.h"
#include "device/timing.h"
#include "store/calibration.h"

/* Read-only bandwidth: `bytes` read once by common.cu's tune_read_probe (read_probe: its kernel
 * handle; sm_count * 16 blocks of 512 threads), timed by tm (L2 flushed, 3 warmup reps): bytes /
 * median of reps. What run.c measures as read_bw (4 GiB, 20 reps). */
TUNE_MUST_CHECK tune_status calibrate_read_bw(timing *tm, void *stream, void *read_probe,
                                              int sm_count, size_t bytes, int reps, double *bw,
                                              tune_error *err);

typedef struct {
    int device;
    const char *kernels_dir; /* NULL: compile_find_kernels_dir */
    const char *cache_dir;   /* kernel cache; NULL: none */
    size_t read_bytes;       /* 0: 4 GiB */
    size_t copy_bytes;       /* 0: 4 GiB (8 GiB allocated) */
    int gemm_n;              /* 0: 8192 */
    int reps;  /* every measurement's reps; 0: read 20, copy 10, GEMM 10, launch 100 */
    FILE *log; /* progress lines; NULL: none */
} calibrate_options;

/* Measures the ceilings of a device: read bandwidth, device-to-device copy bandwidth, cuBLAS GEMM
 * rates (fp16 and bf16 with fp32 accumulation, tf32, fp32), the launch overhead (event-timed
 * tune_fill_indices of one element, L2 flushed like every row), one dependent DRAM round trip
 * (tune_chase_probe, the time model's chain term), the seconds per element of an element-wise
 * gather (the gather baseline's gm_gather, the issue term) with B row-major and transposed (the
 * transposed one also over a 1 GiB source that the L2 cannot hold), and
 * the rate of random 32-byte sectors read from every SM (tune_sector_probe over read_bytes, the
 * re-fetch term), and fills cal with provenance.
 * TUNE_ERR_NO_GPU (one sentence, from gpu_query) without a GPU. */
TUNE_MUST_CHECK tune_status calibrate_device(const calibrate_options *opt,
                                             roofline_calibration *cal, tune_error *err);

#endif
