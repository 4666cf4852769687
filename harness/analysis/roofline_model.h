/* roofline_model.h - the additive time model that explains a row's time, beside the roofline that
 * bounds it (docs/roofline.md, "The time model"):
 *
 *   model time = launches x floor + chain x latency + max(dram / read bandwidth, flops / rate)
 *                (+ issue x seconds per element, for a method with an issue-bound step)
 *
 * (random 32-byte sectors among dram at the random-sector rate, elements of a transposed source
 * at that pattern's seconds per element, when the calibration measured them)
 *
 * where dram, launches, chain and issue come from the op's traffic model for the row's method
 * (model/traffic.h traffic_model: sector-granular bytes, repeated rows counted once), floor is the
 * launch overhead, latency one dependent DRAM round trip and the seconds per element those of an
 * element-wise gather, all measured by `tune calibrate`.
 *
 *   roofline_traffic t;
 *   if (roofline_traffic_eval(family_find(row.family), &row, &ceilings, &t, &err) == TUNE_OK) {
 *       roofline_terms m;
 *       double s = roofline_model_time(&ceilings, &t, ROOFLINE_FP16, &m);   // seconds
 *       printf("%s-dominated\n", roofline_term_str(m.dominant));
 *   }
 */
#ifndef TUNE_ROOFLINE_MODEL_H
#define TUNE_ROOFLINE_MODEL_H

#include "analysis/roofline.h"
#include "core/error.h"
#include "model/family.h"
#include "store/results.h"

/* A row's traffic under its op's model. */
typedef struct {
    double dram;                  /* bytes between DRAM and the L2 (read + written) */
    double launches;              /* kernels launched */
    double chain;                 /* dependent DRAM round trips */
    double flops;                 /* FLOPs of the compute term (NAN: none) */
    int has_precision;            /* 1: the model names the compute term's precision */
    roofline_precision precision; /* when has_precision */
    int modelled; /* 1: from a traffic model; 0: the row's own bytes, one launch, no chain */
    double issue;      /* elements of an issue-bound step (0: none) */
    double issue_dram; /* that step's DRAM bytes, part of dram */
    double issue_scattered; /* of issue, the elements of a transposed source's pattern */
    double dram_random;     /* of dram, the bytes of random 32-byte sectors */
    double issue_scattered_dram; /* of issue_scattered, those from a source the L2 cannot hold */
} roofline_traffic;

/* Evaluates the traffic model of row's op and method (traffic_find) at the row's
 * problem-axis values, dsize (the element size of the family's dtype_axis value) and the device
 * facts of dev (may be NULL; model/traffic.h traffic_set_device): `sm_count` and `l2_bytes`
 * when known (> 0), `fetch_bytes` (the 32-byte sector when dev has none). Without a model (fam
 * NULL or no entry) the row's own bytes count as DRAM traffic with one launch and no chain. An
 * expression that cannot be evaluated (one that reads a device fact dev does not give, for
 * example), or a value that is not a finite number >= 0, is an error naming the method, the
 * field and the expression. */
tune_status roofline_traffic_eval(const tune_family *fam, const result_row *row,
                                  const roofline_ceilings *dev, roofline_traffic *out,
                                  tune_error *err);

typedef enum {
    ROOFLINE_TERM_FLOOR,    /* launches x launch overhead */
    ROOFLINE_TERM_CHAIN,    /* chain x DRAM latency */
    ROOFLINE_TERM_TRANSFER, /* dram / read bandwidth */
    ROOFLINE_TERM_COMPUTE,  /* flops / rate */
    ROOFLINE_TERM_ISSUE     /* issue x seconds per element */
} roofline_term;
#define ROOFLINE_N_TERMS 5
/* "floor", "chain", "transfer", "compute", "issue" */
const char *roofline_term_str(roofline_term t);

typedef struct {
    double floor, chain, transfer, compute, issue; /* seconds; 0 when the term has no input */
    double total; /* floor + chain + max(transfer, compute) + issue (traffic_time) */
    roofline_term dominant; /* the largest of the five */
} roofline_terms;

/* The model time in seconds (NAN when neither transfer nor compute is known); terms may be NULL.
 * A ceiling that is unknown (NAN) leaves its term out. p: the row's precision, unless the traffic
 * model names its own. */
double roofline_model_time(const roofline_ceilings *c, const roofline_traffic *t,
                           roofline_precision p, roofline_terms *terms);

/* The time model's fields of an ok row timed on a device with ceilings c: model_time, and, when
 * the op has a traffic model, dram_bytes and pct_read_bw (on the modelled DRAM traffic, against
 * row->read_bw; the sweep's own bytes may count rows the L2 serves). A model that cannot be
 * evaluated leaves them as they are. `tune run` fills them as it measures a row, `tune report`
 * for rows measured before they existed. fam: the row's family (NULL: unknown). */
void roofline_model_fill_row(const tune_family *fam, const roofline_ceilings *c, result_row *row);

/* 100 x (dram / time) / read bandwidth: the share of the measured read bandwidth a row reached on
 * its modelled DRAM traffic; NAN when unknown. */
double roofline_pct_read_bw(const roofline_traffic *t, double time_s, double read_bw);

#endif
