/* roofline_calibration.h - the roofline's ceilings from a calibration file (store/calibration.h:
 * what `tune calibrate` measured on a device), the gaps filled from the specs table.
 *
 *   roofline_calibration cal;
 *   if (roofline_calibration_load("results/calibration/nvidia-h200.json", &cal, &err) == TUNE_OK)
 *       roofline_ceilings_from_calibration(&cal, g, &c);                // measured; gaps from g
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

#endif
