/* roofline_calibration.h - the roofline's ceilings from a calibration file (store/calibration.h:
 * what `tune calibrate` measured on a device), the gaps filled from the specs table; and the one
 * lookup of a device's ceilings by name that a run and `tune report` share.
 *
 *   roofline_ceilings c;
 *   char source[512];
 *   if (roofline_ceilings_find("results", "NVIDIA H200", &c, source, sizeof source))
 *       printf("%s: %.0f GB/s\n", source, c.read_bw / 1e9); // "calibration results/... (date)"
 */
#ifndef TUNE_ROOFLINE_CALIBRATION_H
#define TUNE_ROOFLINE_CALIBRATION_H

#include <stddef.h>

#include "analysis/roofline.h"
#include "analysis/roofline_specs.h"
#include "core/error.h"
#include "store/calibration.h"

/* The measured ceilings; what the calibration lacks (NAN) comes from g (peak x achievable) when g
 * is not NULL. */
void roofline_ceilings_from_calibration(const roofline_calibration *cal, const roofline_gpu *g,
                                        roofline_ceilings *c);

/* The ceilings of a device by name: its calibration file under results_root
 * (calibration/<slug>.json; NULL: "results"), the gaps filled from its entry in the specs table
 * (data/gpus.json), else that entry's peak x achievable; c->origin says which. A calibration file
 * that cannot be read counts as none. 1 and *c when found, else 0. source (NULL: not wanted) gets
 * where they come from, as meta.json records it: "calibration PATH (DATE)", "specs table: NAME,
 * peak x achievable" or "none: WHY". */
int roofline_ceilings_find(const char *results_root, const char *device, roofline_ceilings *c,
                           char *source, size_t source_size);

#endif
