/* traffic.h - the traffic models of a family's ops and methods (docs/roofline.md, "Traffic
 * models") and the additive time model over them: what a kernel moves and launches, evaluated at
 * a point, and the seconds that takes under a set of ceilings. A family lists its models in
 * tune_family.traffic (model/family.h); the roofline model (analysis/roofline_model.h) and
 * sharding's cost model (model/shard.h) evaluate them.
 *
 *   const traffic_model *t = traffic_find(fam->traffic, fam->n_traffic, op, method);
 *   traffic_value v;
 *   traffic_set_device(&p, sm_count, l2_bytes, fetch_bytes);
 *   if (t && traffic_eval(t, &p, flops, &v, &err) == TUNE_OK)
 *       seconds = traffic_time(&v, &ceilings, NULL);
 */
#ifndef TUNE_TRAFFIC_H
#define TUNE_TRAFFIC_H

#include <stddef.h>

#include "core/error.h"
#include "core/point.h"

/* The traffic model of one method of an op: what the additive time model launches * floor +
 * chain * latency + max(dram / read bandwidth, flops / rate) (+ an issue-bound step, below) needs.
 * Expressions over the problem axes and dsize, like the byte model, and the device facts
 * (traffic_set_device: sm_count and l2_bytes where the caller knows them, for a fixed kernel's
 * waves and the L2's capacity; fetch_bytes, the L2's DRAM fetch granularity); sectors() and
 * distinct() (core/expr.h) round to 32-byte sectors (or to a unit) and count repeated rows once. */
typedef struct traffic_model {
    const char *op;        /* the op it models; NULL: every op of the family */
    const char *method;    /* the method it models; NULL: every method without a model of its own */
    const char *dram;      /* bytes moved between DRAM and the L2, read + written */
    const char *launches;  /* kernels launched (each pays the launch floor); NULL: "1" */
    const char *chain;     /* dependent DRAM round trips beyond the first load, which the floor
                              includes (a gather's row load waits for its index: 1); NULL: "0" */
    const char *flops;     /* FLOPs of the compute term; NULL: the row's own (the op's model) */
    const char *precision; /* the compute term's precision ("fp8"); NULL: the row's dtype */
    const char *help;      /* what the model counts (docs) */
    /* Optional: a kernel of the method that copies one element per thread and loop iteration
     * (the gather baseline's gm_gather), bound by its instructions: `issue` elements at the
     * measured seconds per element, or its own DRAM bytes `issue_dram` (part of dram) when
     * those take longer. NULL: no such step ("0"). */
    const char *issue;
    const char *issue_dram;
} traffic_model;

/* Optional, beside a traffic model (same op and method, matched as traffic_find matches): the
 * parts of its counts that move in an access pattern with a ceiling of its own. Expressions as in
 * traffic_model; NULL: "0". */
typedef struct traffic_pattern {
    const char *op;
    const char *method;
    /* Of issue, the elements whose warp loads touch 32 different rows (a transposed source), at
     * the seconds per element measured on that pattern. */
    const char *issue_scattered;
    /* Of dram, the bytes read as random, independent 32-byte sectors (re-fetches of sectors the
     * L2 evicted), at the measured random-sector rate rather than the read bandwidth; counted in
     * issue_dram first when the method has an issue step. */
    const char *dram_random;
    /* Of issue_scattered, the elements gathered from a source that the L2 cannot hold (its
     * bytes above l2_bytes), whose warp loads wait for DRAM: at the seconds per element measured
     * on such a source. */
    const char *issue_scattered_dram;
} traffic_pattern;

/* The model of a method of an op among models[0..n): the entry naming both, else the op's entry
 * for every method (method NULL), else NULL (models may be NULL when n is 0). Entries with op NULL
 * match every op. Borrowed from models. */
const traffic_model *traffic_find(const traffic_model *models, size_t n, const char *op,
                                  const char *method);
/* The pattern of a method of an op among patterns[0..n), found as traffic_find finds a model;
 * NULL: none. */
const traffic_pattern *traffic_find_pattern(const traffic_pattern *patterns, size_t n,
                                            const char *op, const char *method);

/* A traffic model's values at one point. */
typedef struct {
    double dram, launches, chain, flops;
    double issue, issue_dram;    /* elements of the issue-bound step and its DRAM bytes (0: none) */
    double issue_scattered;      /* of issue, the elements of the scattered pattern (0: none) */
    double dram_random;          /* of dram, the bytes of random sectors (0: none) */
    double issue_scattered_dram; /* of issue_scattered, those from a source the L2 cannot hold */
} traffic_value;

/* Sets the device facts a traffic model may read into p: `sm_count` and `l2_bytes` when known
 * (> 0), and `fetch_bytes`, the L2's DRAM fetch granularity (32, 64 or 128; anything else, NAN
 * included, gives the 32-byte sector). 0, or -1 when p is full. */
int traffic_set_device(tune_point *p, int sm_count, double l2_bytes, double fetch_bytes);

/* Evaluates t at p (the problem axes and dsize); flops: the value when t->flops is NULL. An
 * expression that cannot be evaluated, or a value that is not a finite number >= 0, is an error
 * naming the method, the field and the expression. */
TUNE_MUST_CHECK tune_status traffic_eval(const traffic_model *t, const tune_point *p, double flops,
                                         traffic_value *out, tune_error *err);
/* Evaluates pattern t at p into out's issue_scattered, dram_random and issue_scattered_dram
 * (after traffic_eval, which sets them to 0); errors as traffic_eval's. */
TUNE_MUST_CHECK tune_status traffic_pattern_eval(const traffic_pattern *t, const tune_point *p,
                                                 traffic_value *out, tune_error *err);

/* What the time model divides by; NAN (or a value that is not finite) leaves its term out. */
typedef struct {
    double floor_s;          /* seconds per launch */
    double latency_s;        /* seconds per dependent DRAM round trip */
    double bw;               /* DRAM bytes per second */
    double rate;             /* FLOPs per second at the compute term's precision */
    double elem_s;           /* seconds per element of an element-wise gather (the issue term) */
    double elem_scattered_s; /* the same gather from a transposed source (32 rows per warp load);
                                NAN: elem_s stands in */
    double sector_bw;        /* bytes per second of random 32-byte sectors, counting 32 bytes a
                                load; NAN: bw stands in */
    double elem_scattered_dram_s; /* the transposed gather over a source the L2 cannot hold;
                                     NAN (or 0): elem_scattered_s stands in */
} traffic_ceilings;

/* The additive time model of v (docs/roofline.md, "The time model"), written once for its two
 * users: the roofline model with measured ceilings (analysis/roofline_model.h) and sharding's
 * cost model with nominal ones (model/shard.h):
 *   launches x floor_s + chain x latency_s + max((dram - issue_dram) / bw, flops / rate)
 *     + max(issue x elem_s, issue_dram / bw)
 * (the issue-bound step runs in series with the rest; without one, or without elem_s, the model
 * is the three-term one over all of dram), where the issue_scattered elements cost
 * elem_scattered_s rather than elem_s (those of them in issue_scattered_dram
 * elem_scattered_dram_s) and the dram_random bytes (of issue_dram first) move at sector_bw rather
 * than bw; each of those ceilings, when NAN, falls back to the one it refines. Returns NAN when
 * neither dram / bw nor flops / rate is known. terms (optional) gets the seconds of the floor,
 * chain, transfer (every byte's transfer that no issue time hides), compute and issue terms in that
 * order, 0 for a term left out. */
double traffic_time(const traffic_value *v, const traffic_ceilings *c, double terms[5]);

#endif
