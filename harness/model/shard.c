#include "model/shard.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/expr.h"
#include "core/hash.h"
#include "model/family.h"
#include "model/traffic.h"
#include "core/point.h"

/* ---- I/N ---- */

tune_status shard_parse(const char *text, shard_spec *out, tune_error *err)
{
    const char *p = text ? text : "";
    unsigned long long v[2] = {0, 0};
    for (int part = 0; part < 2; part++) {
        const char *start = p;
        while (*p >= '0' && *p <= '9' && p - start < 6)
            v[part] = v[part] * 10 + (unsigned long long)(*p++ - '0');
        if (p == start || (part == 0 && *p++ != '/') || (part == 1 && *p != '\0'))
            return tune_error_set(err, TUNE_ERR_INVALID, "--shard",
                                  "expected I/N, the shard I of N counted from 0 (0/4, 1/4, 2/4, "
                                  "3/4), got '%s'",
                                  text ? text : "");
    }
    if (v[1] < 1 || v[1] > SHARD_MAX)
        return tune_error_set(err, TUNE_ERR_INVALID, "--shard",
                              "the number of shards must be 1 to %d, got '%s'", SHARD_MAX, text);
    if (v[0] >= v[1])
        return tune_error_set(err, TUNE_ERR_INVALID, "--shard",
                              "shards are counted from 0: I/N needs 0 <= I < N (the last of %llu "
                              "is %llu/%llu), got '%s'",
                              v[1], v[1] - 1, v[1], text);
    out->index = (size_t)v[0];
    out->count = (size_t)v[1];
    return TUNE_OK;
}

/* ---- the plan ---- */

/* The nominal GPU of the cost model (shard.h). Only ratios matter for the balance; the values are
 * close to what the SparQ sweeps cost on an H200 (docs/sharding.md). */
#define SHARD_BW 2e12          /* B/s an average configuration moves */
#define SHARD_RATE 2e14        /* FLOP/s */
#define SHARD_KERNEL_MIN 5e-6  /* s: launch and the shortest kernel; the time model's floor */
#define SHARD_LATENCY 0.4e-6   /* s: one dependent DRAM round trip (the time model's chain) */
#define SHARD_SM_COUNT 132     /* the device facts traffic models read: an H200's SMs */
#define SHARD_L2 62914560      /* and its L2 (60 MiB) */
#define SHARD_FETCH 64         /* and its L2's DRAM fetch granularity (bytes) */
#define SHARD_REP_COLD 40e-6   /* s per rep: L2 flush, fresh indices, events */
#define SHARD_REP_HOT 10e-6    /* s per rep without the flush */
#define SHARD_CONFIG 5e-3      /* s per configuration: prepare, check, NVML, row */
#define SHARD_SHAPE 50e-3      /* s per shape: allocate and fill the inputs */

struct shard_plan {
    size_t n_shards, n_configs;
    size_t *owner;         /* per configuration */
    uint64_t *config_us;   /* per configuration */
    uint64_t *shard_us;    /* per shard */
    size_t *shard_configs; /* per shard */
    uint64_t total_us;
    char hash[17];
};

typedef struct {
    uint64_t us;
    size_t index;
} shard_load;

static int load_cmp_desc(const void *a, const void *b)
{
    const shard_load *x = a, *y = b;
    if (x->us != y->us)
        return x->us > y->us ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Estimated kernel seconds of configuration p: with the family's traffic model for its method
 * (model/traffic.h), the additive time model (traffic_time) launches x floor + chain x
 * latency + max(dram / bandwidth, flops / rate) on the nominal GPU (its SM count and L2 size
 * too, for models that read them); without one, the roofline
 * max(bytes / bandwidth, flops / rate, floor) of the sweep's byte and FLOP models. */
static double kernel_seconds(const sweep *sw, const tune_point *p)
{
    expr_value v;
    double bytes = 0, flops = 0;
    if (expr_eval(sw->bytes, point_lookup, (void *)p, &v, NULL) == TUNE_OK)
        bytes = expr_value_as_double(v);
    if (expr_eval(sw->flops, point_lookup, (void *)p, &v, NULL) == TUNE_OK)
        flops = expr_value_as_double(v);
    const tune_family *fam = sw->family;
    const traffic_model *tr =
        fam ? traffic_find(fam->traffic, fam->n_traffic, sw->op, point_str(p, "method", NULL))
            : NULL;
    traffic_value tv;
    static const traffic_ceilings nominal = {
        SHARD_KERNEL_MIN, SHARD_LATENCY, SHARD_BW, SHARD_RATE, NAN, NAN, NAN, NAN};
    tune_point dev = *p; /* p with the nominal device facts */
    if (tr && traffic_set_device(&dev, SHARD_SM_COUNT, SHARD_L2, SHARD_FETCH) == 0 &&
        traffic_eval(tr, &dev, isfinite(flops) ? flops : 0, &tv, NULL) == TUNE_OK)
        return traffic_time(&tv, &nominal, NULL);
    double t = SHARD_KERNEL_MIN;
    if (isfinite(bytes) && bytes / SHARD_BW > t)
        t = bytes / SHARD_BW;
    if (isfinite(flops) && flops / SHARD_RATE > t)
        t = flops / SHARD_RATE;
    return t;
}

/* Estimated seconds of one configuration; *rep gets the seconds of one of its reps. */
static double config_seconds(const sweep *sw, const tune_point *p, double *rep)
{
    double t = kernel_seconds(sw, p);
    const sweep_timing *tt = &sw->timing;
    *rep = t + (tt->mode == SWEEP_TIMING_MODE_COLD ? SHARD_REP_COLD : SHARD_REP_HOT);
    double timed;
    if (tt->stop == SWEEP_TIMING_STOP_ADAPTIVE) {
        double n = fmax((double)tt->min_reps, ceil(tt->min_time_s / t));
        timed = fmin(fmin(n, (double)tt->max_reps) * *rep, tt->max_time_s);
    } else {
        timed = (double)tt->reps * *rep;
    }
    return (double)tt->warmup * *rep + timed + SHARD_CONFIG;
}

static uint64_t to_us(double s)
{
    return s > 0 ? (uint64_t)llround(s * 1e6) : 0;
}

/* The plan hash's separator convention: a string's bytes, then 0xff. */
static uint64_t plan_hash_str(uint64_t h, const char *s)
{
    return hash_fnv1a(hash_fnv1a(h, s, strlen(s)), "\xff", 1);
}

shard_plan *shard_plan_build(const sweep *sw, const space *sp, size_t n_shards, tune_error *err)
{
    if (n_shards < 1 || n_shards > SHARD_MAX) {
        tune_error_set(err, TUNE_ERR_INVALID, "shard", "the number of shards must be 1 to %d",
                       SHARD_MAX);
        return NULL;
    }
    size_t n = space_n_configs(sp), n_shapes = space_n_shapes(sp);
    shard_plan *p = calloc(1, sizeof *p);
    shard_load *shapes = calloc(n_shapes ? n_shapes : 1, sizeof *shapes);
    double *rep_sum = calloc(n_shapes ? n_shapes : 1, sizeof *rep_sum);
    size_t *n_tuned = calloc(n_shapes ? n_shapes : 1, sizeof *n_tuned);
    size_t *shape_owner = calloc(n_shapes ? n_shapes : 1, sizeof *shape_owner);
    if (p) {
        p->n_shards = n_shards;
        p->n_configs = n;
        p->owner = calloc(n ? n : 1, sizeof *p->owner);
        p->config_us = calloc(n ? n : 1, sizeof *p->config_us);
        p->shard_us = calloc(n_shards, sizeof *p->shard_us);
        p->shard_configs = calloc(n_shards, sizeof *p->shard_configs);
    }
    if (!p || !shapes || !rep_sum || !n_tuned || !shape_owner || !p->owner || !p->config_us ||
        !p->shard_us || !p->shard_configs) {
        tune_error_set(err, TUNE_ERR_NOMEM, "shard", "out of memory");
        shard_plan_free(p);
        p = NULL;
        goto done;
    }
    for (size_t s = 0; s < n_shapes; s++)
        shapes[s] = (shard_load){to_us(SHARD_SHAPE), s};
    for (size_t i = 0; i < n; i++) {
        const space_config *c = space_config_at(sp, i);
        tune_point pt;
        space_config_point(sp, i, &pt);
        family_kernel_ref refs[FAMILY_MAX_KERNELS];
        char why[512];
        double rep = 0;
        /* a configuration the family cannot run is a `skipped` row at once */
        if (sw->family->kernels(sw->family, &pt, refs, FAMILY_MAX_KERNELS, why, sizeof why) >= 0)
            p->config_us[i] = to_us(config_seconds(sw, &pt, &rep));
        shapes[c->shape].us += p->config_us[i];
        if (c->param != SPACE_NO_PARAM && rep > 0) {
            rep_sum[c->shape] += rep;
            n_tuned[c->shape]++;
        }
    }
    for (size_t s = 0; s < n_shapes; s++)
        if (n_tuned[s] >= 2) {
            double k = n_tuned[s] < SWEEP_RETIME_TOP ? (double)n_tuned[s] : SWEEP_RETIME_TOP;
            shapes[s].us += to_us(k * SWEEP_RETIME_ROUNDS * rep_sum[s] / (double)n_tuned[s]);
        }
    for (size_t s = 0; s < n_shapes; s++)
        p->total_us += shapes[s].us;
    /* LPT over a stable order: the largest shape first, each to the least loaded shard */
    qsort(shapes, n_shapes, sizeof *shapes, load_cmp_desc);
    for (size_t k = 0; k < n_shapes; k++) {
        size_t best = 0;
        for (size_t j = 1; j < n_shards; j++)
            if (p->shard_us[j] < p->shard_us[best])
                best = j;
        p->shard_us[best] += shapes[k].us;
        shape_owner[shapes[k].index] = best;
    }
    uint64_t h = HASH_FNV_OFFSET;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s|%s|%s|%zu", sw->name, sw->family_name, sw->op, n_shards);
    h = plan_hash_str(h, buf);
    for (size_t i = 0; i < n; i++) {
        p->owner[i] = shape_owner[space_config_at(sp, i)->shape];
        p->shard_configs[p->owner[i]]++;
        h = plan_hash_str(h, space_config_identity(sw, sp, i, buf, sizeof buf));
        snprintf(buf, sizeof buf, "%zu", p->owner[i]);
        h = plan_hash_str(h, buf);
    }
    hash_hex(h, p->hash);
done:
    free(shapes);
    free(rep_sum);
    free(n_tuned);
    free(shape_owner);
    return p;
}

void shard_plan_free(shard_plan *p)
{
    if (!p)
        return;
    free(p->owner);
    free(p->config_us);
    free(p->shard_us);
    free(p->shard_configs);
    free(p);
}

size_t shard_plan_count(const shard_plan *p)
{
    return p->n_shards;
}

size_t shard_plan_owner(const shard_plan *p, size_t config)
{
    return config < p->n_configs ? p->owner[config] : SIZE_MAX;
}

size_t shard_plan_n_configs(const shard_plan *p, size_t shard)
{
    return shard < p->n_shards ? p->shard_configs[shard] : 0;
}

double shard_plan_config_cost(const shard_plan *p, size_t config)
{
    return config < p->n_configs ? 1e-6 * (double)p->config_us[config] : 0;
}

double shard_plan_cost(const shard_plan *p, size_t shard)
{
    return shard < p->n_shards ? 1e-6 * (double)p->shard_us[shard] : 0;
}

double shard_plan_total_cost(const shard_plan *p)
{
    return 1e-6 * (double)p->total_us;
}

const char *shard_plan_hash(const shard_plan *p)
{
    return p->hash;
}
