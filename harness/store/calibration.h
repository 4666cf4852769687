/* calibration.h - calibration files (results/calibration/<slug>.json): the ceilings
 * `tune calibrate` measured on a device (device/calibrate.h), with their provenance, written and
 * read here alone; analysis/roofline_calibration.h turns one into the roofline's ceilings.
 *
 *   roofline_calibration cal;
 *   char path[PATH_MAX];
 *   roofline_calibration_path("results", "NVIDIA H200", path, sizeof path); // .../nvidia-h200.json
 *   if (roofline_calibration_load(path, &cal, &err) == TUNE_OK)
 *       printf("%.0f GB/s\n", cal.read_bw / 1e9);
 */
#ifndef TUNE_CALIBRATION_H
#define TUNE_CALIBRATION_H

#include <stddef.h>

#include "core/error.h"
#include "core/precision.h"

typedef struct {
    char device[256];
    char date[32]; /* ISO 8601 UTC */
    char tool_version[32], tool_rev[64];
    double read_bw;                          /* B/s, read-only probe */
    double copy_bw;                          /* B/s, (read + written bytes) / time */
    double gemm_rate[ROOFLINE_N_PRECISIONS]; /* FLOP/s of cuBLAS GEMMs; NAN: not measured */
    double launch_s;                         /* event-timed minimal kernel; NAN: not measured */
    double latency_s; /* one dependent DRAM round trip (pointer chase); NAN: not measured */
    double floor_s;   /* the read probe's grid over a small buffer, less its transfer; NAN: not
                         measured */
    double gather_elem_s; /* seconds per element of the gather baseline's kernel (gm_gather), an element-wise gather
                             over a source the L2 holds; NAN: not measured */
    double gather_elem_t_s; /* the same with B transposed (gm_gather<half_t, 1, 1>: a warp's 32
                               elements in 32 rows); NAN: not measured (files before it) */
    double gather_elem_t_dram_s; /* the same transposed gather over a source the L2 cannot hold
                                    (its warp loads wait for DRAM); NAN: not measured (files
                                    before it) */
    double sector_bw;   /* B/s of random, independent 32-byte sectors read from every SM (32 bytes
                           counted a load); NAN: not measured (files before it) */
    double fetch_bytes; /* the L2's DRAM fetch granularity in bytes (32, 64 or 128), from the
                           stride probe; NAN: not measured (files before it) */
    double fetch_times[4]; /* the stride probe's median seconds at strides 32 to 256 (method) */
    int fetch_hint;        /* cudaLimitMaxL2FetchGranularity when measured; 0: unknown */
    /* provenance */
    size_t read_bytes, copy_bytes; /* buffer sizes */
    int gemm_n;                    /* m = n = k */
    int reps;                      /* timed reps of each bandwidth and GEMM measurement */
    char pci_bus_id[32], compute_capability[16], cublas_version[32], host[256];
    int sm_count;
    size_t l2_bytes;
    int driver_version, runtime_version, nvrtc_version;
} roofline_calibration;

/* Bytes the grid floor's read probe reads (8 MiB). */
#define CALIBRATION_FLOOR_BYTES (8u << 20)
/* The gather probe's shape: g x k x n 2-byte elements (2^28) gathered from k_pre rows of n per g
 * (a 32 MiB source, which the L2 holds once the first rep's reads have brought it in). */
#define CALIBRATION_GATHER_G 2048
#define CALIBRATION_GATHER_K 1024
#define CALIBRATION_GATHER_KP 64
#define CALIBRATION_GATHER_N 128
/* The DRAM-resident transposed gather probe: the same g, k and n from k_pre = 2048 rows per g (a
 * 1 GiB source, 17 times the H200's L2; 1.5 GiB allocated with Bg). Each of a g's n rows of B^T
 * is 128 sectors that its k = 1024 random picks touch 8 times each, so one warp load in 8 brings
 * its 32 sectors from DRAM, as step 1's k = 64 picks over 8 sectors do. */
#define CALIBRATION_GATHER_KP_DRAM 2048
/* The random-sector probe: SMs x 8 blocks of 256 threads (one wave), 8 independent loads in
 * flight per thread, about 2^27 loads (4 GiB counted) over the read probe's buffer. */
#define CALIBRATION_SECTOR_LOADS (1ull << 27)
#define CALIBRATION_SECTOR_BLOCKS_PER_SM 8
#define CALIBRATION_SECTOR_THREADS 256
#define CALIBRATION_SECTOR_UNROLL 8
/* The stride probe (DRAM fetch granularity): SMs x 8 blocks of 256 threads over the read probe's
 * buffer; a stride is as costly as the previous one (DRAM moves the same bytes) when its time is
 * at least 0.8 of the previous one's (moving half the bytes would give about 0.5). */
#define CALIBRATION_STRIDE_BLOCKS_PER_SM 8
#define CALIBRATION_STRIDE_THREADS 256
#define CALIBRATION_FETCH_SAME 0.8

/* Every number NAN, every string empty. */
void roofline_calibration_init(roofline_calibration *c);
/* Reads a calibration file. Requires device.name and a positive ceilings.read_bw; other ceilings
 * may be missing (NAN): a file written before a ceiling existed loads without it. */
tune_status roofline_calibration_load(const char *path, roofline_calibration *c, tune_error *err);
/* Writes it (parent folders created, atomically through path.tmp). */
tune_status roofline_calibration_save(const char *path, const roofline_calibration *c,
                                      tune_error *err);

/* "NVIDIA H200" -> "nvidia-h200": lower case, runs of other characters as one '-'. Returns buf. */
const char *roofline_device_slug(const char *device, char *buf, size_t size);
/* "<results_root>/calibration/<slug>.json" into buf; returns buf. */
const char *roofline_calibration_path(const char *results_root, const char *device, char *buf,
                                      size_t size);

#endif
