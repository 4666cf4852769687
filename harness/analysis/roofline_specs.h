/* roofline_specs.h - the GPU specs table (data/gpus.json): peak bandwidth and rates, achievable
 * fractions and launch overhead of known GPUs, matched by device name.
 *
 *   roofline_specs *specs = roofline_specs_load(NULL, &err);            // data/gpus.json
 *   const roofline_gpu *g = roofline_specs_match(specs, "NVIDIA H200");  // NULL: not in the table
 *   roofline_ceilings c;
 *   roofline_ceilings_from_gpu(g, &c);                                   // peak x achievable
 *   roofline_specs_free(specs);
 */
#ifndef TUNE_ROOFLINE_SPECS_H
#define TUNE_ROOFLINE_SPECS_H

#include <stddef.h>

#include "analysis/roofline.h"
#include "core/error.h"

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

/* Peak x achievable fraction; launch overhead from the table. */
void roofline_ceilings_from_gpu(const roofline_gpu *g, roofline_ceilings *c);

#endif
