/* shard.h - a sweep split over several processes (GPUs of a host, hosts, Slurm array tasks): a
 * deterministic share of the configurations for each, balanced by estimated cost
 * (docs/sharding.md). The shards' results folders are merged by store/merge.h.
 *
 *   shard_spec s;
 *   if (shard_parse("1/4", &s, &err) != TUNE_OK) ...        // shard 1 of 4, 0-based: 0/4 .. 3/4
 *   shard_plan *p = shard_plan_build(sw, sp, s.count, &err);
 *   for (size_t i = 0; i < space_n_configs(sp); i++)
 *       if (shard_plan_owner(p, i) == s.index) ... configuration i is this shard's ...
 *   shard_plan_free(p);
 *
 * The unit of assignment is a shape: every method and parameter point of one shape goes to the
 * same shard, so a shape's inputs are set up once, its baselines are timed on the same GPU as its
 * candidates, and the interleaved re-timing of its three fastest candidates sees all of them.
 * A sweep with fewer shapes than shards leaves some shards empty.
 *
 * Cost model (estimated seconds on a nominal GPU, the same on every host so that every shard
 * computes the same plan): per configuration, (warmup + reps) x (kernel time + per-rep overhead)
 * + a fixed cost (prepare, check against the reference, row); the kernel time is the additive
 * time model launches x 5 us + chain x 0.4 us + max(dram / 2 TB/s, flops / 200 TFLOP/s) of the
 * family's traffic model for the method (model/family.h), or, for a method without one,
 * max(bytes / 2 TB/s, flops / 200 TFLOP/s, 5 us) from the sweep's byte and FLOP models; the
 * per-rep overhead is 40 us in cold mode (L2 flush, fresh indices), 10 us otherwise; adaptive
 * timing counts max(min_reps, min_time_s / kernel time) reps, at most max_reps and max_time_s.
 * A configuration the family cannot run (skipped) costs nothing. Per shape: a fixed setup cost
 * and the re-timing (3 candidates x 30 rounds). Costs are whole microseconds.
 *
 * Assignment: greedy LPT (longest processing time first): shapes by cost, largest first (ties:
 * lower shape index first), each to the shard with the least cost so far (ties: lower shard
 * index). Every shard is then within the largest shape's cost of the ideal total / n.
 */
#ifndef TUNE_SHARD_H
#define TUNE_SHARD_H

#include <stddef.h>

#include "core/error.h"
#include "model/space.h"
#include "model/sweep.h"

#define SHARD_MAX 4096

typedef struct {
    size_t index; /* 0 .. count - 1 */
    size_t count; /* >= 1 */
} shard_spec;

/* Parses "I/N" (0 <= I < N <= SHARD_MAX, decimal, nothing else). TUNE_ERR_INVALID with a message
 * that shows the expected form otherwise. */
TUNE_MUST_CHECK tune_status shard_parse(const char *text, shard_spec *out, tune_error *err);

typedef struct shard_plan shard_plan;

/* New plan of n_shards shards over the space's configurations (sp must have been built from sw;
 * both must outlive the plan). */
TUNE_MUST_CHECK shard_plan *shard_plan_build(const sweep *sw, const space *sp, size_t n_shards,
                                             tune_error *err);
void shard_plan_free(shard_plan *p);

size_t shard_plan_count(const shard_plan *p);
/* The shard that runs configuration i. */
size_t shard_plan_owner(const shard_plan *p, size_t config);
/* Configurations of one shard. */
size_t shard_plan_n_configs(const shard_plan *p, size_t shard);
/* Estimated cost in seconds: of one configuration (its share of the shape's setup excluded), of
 * one shard (shapes' setup and re-timing included), of the whole sweep. */
double shard_plan_config_cost(const shard_plan *p, size_t config);
double shard_plan_cost(const shard_plan *p, size_t shard);
double shard_plan_total_cost(const shard_plan *p);
/* 16 hex digits identifying the sweep's configurations and their assignment: equal plans give
 * equal hashes on every host. Borrowed. */
const char *shard_plan_hash(const shard_plan *p);

#endif
