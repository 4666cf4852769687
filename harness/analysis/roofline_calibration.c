#include "analysis/roofline_calibration.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>

void roofline_ceilings_from_calibration(const roofline_calibration *cal, const roofline_gpu *g,
                                        roofline_ceilings *c)
{
    roofline_ceilings spec;
    if (g)
        roofline_ceilings_from_gpu(g, &spec);
    else {
        spec.read_bw = spec.copy_bw = spec.launch_s = spec.latency_s = spec.floor_s =
            spec.gather_elem_s = spec.gather_elem_t_s = spec.gather_elem_t_dram_s = spec.sector_bw =
                spec.fetch_bytes = NAN;
        for (int p = 0; p < ROOFLINE_N_PRECISIONS; p++)
            spec.rate[p] = NAN;
        spec.sm_count = 0;
        spec.l2_bytes = 0;
    }
    c->read_bw = isfinite(cal->read_bw) ? cal->read_bw : spec.read_bw;
    c->copy_bw = isfinite(cal->copy_bw) ? cal->copy_bw : spec.copy_bw;
    c->launch_s = isfinite(cal->launch_s) ? cal->launch_s : spec.launch_s;
    c->latency_s = isfinite(cal->latency_s) ? cal->latency_s : spec.latency_s;
    c->floor_s = isfinite(cal->floor_s) ? cal->floor_s : spec.floor_s;
    c->gather_elem_s = isfinite(cal->gather_elem_s) ? cal->gather_elem_s : spec.gather_elem_s;
    c->gather_elem_t_s =
        isfinite(cal->gather_elem_t_s) ? cal->gather_elem_t_s : spec.gather_elem_t_s;
    c->gather_elem_t_dram_s =
        isfinite(cal->gather_elem_t_dram_s) ? cal->gather_elem_t_dram_s : spec.gather_elem_t_dram_s;
    c->sector_bw = isfinite(cal->sector_bw) ? cal->sector_bw : spec.sector_bw;
    c->fetch_bytes = isfinite(cal->fetch_bytes) ? cal->fetch_bytes : spec.fetch_bytes;
    c->sm_count = cal->sm_count > 0 ? cal->sm_count : spec.sm_count;
    c->l2_bytes = cal->l2_bytes > 0 ? (double)cal->l2_bytes : spec.l2_bytes;
    for (int p = 0; p < ROOFLINE_N_PRECISIONS; p++)
        c->rate[p] = isfinite(cal->gemm_rate[p]) ? cal->gemm_rate[p] : spec.rate[p];
    c->origin = ROOFLINE_FROM_CALIBRATION;
}

int roofline_ceilings_find(const char *results_root, const char *device, roofline_ceilings *c,
                           char *source, size_t source_size)
{
    tune_error e = {0};
    roofline_specs *specs = roofline_specs_load(NULL, &e);
    const roofline_gpu *g = specs ? roofline_specs_match(specs, device) : NULL;
    char path[PATH_MAX + 64], where[512];
    roofline_calibration cal;
    roofline_calibration_path(results_root, device, path, sizeof path);
    int found = 1;
    if (roofline_calibration_load(path, &cal, NULL) == TUNE_OK) {
        roofline_ceilings_from_calibration(&cal, g, c);
        snprintf(where, sizeof where, "calibration %.400s (%.30s)", path, cal.date);
    } else if (g) {
        roofline_ceilings_from_gpu(g, c);
        snprintf(where, sizeof where, "specs table: %s, peak x achievable", g->name);
    } else {
        found = 0;
        snprintf(where, sizeof where, "none: %.400s",
                 specs ? "device not in the specs table" : e.message);
    }
    if (source)
        snprintf(source, source_size, "%s", where);
    roofline_specs_free(specs);
    return found;
}
