/* shard.h - a sweep split over several processes (GPUs of a host, hosts, Slurm array tasks): a
 * deterministic share of the configurations for each, balanced by estimated cost; and the merge of
 * the shards' results folders into one (docs/sharding.md).
 *
 *   shard_spec s;
 *   if (shard_parse("1/4", &s, &err) != TUNE_OK) ...        // shard 1 of 4, 0-based: 0/4 .. 3/4
 *   shard_plan *p = shard_plan_build(sw, sp, s.count, &err);
 *   for (size_t i = 0; i < space_n_configs(sp); i++)
 *       if (shard_plan_owner(p, i) == s.index) ... configuration i is this shard's ...
 *   shard_plan_free(p);
 *
 *   const char *dirs[] = {"run/shards/0", "run/shards/1"};
 *   shard_merge("run", dirs, 2, &mopt, &sum, &err);   // run/raw.jsonl, meta.json, best.*
 *
 * The unit of assignment is a shape: every method and parameter point of one shape goes to the
 * same shard, so a shape's inputs are set up once, its baselines are timed on the same GPU as its
 * candidates, and the interleaved re-timing of its three fastest candidates sees all of them.
 * A sweep with fewer shapes than shards leaves some shards empty.
 *
 * Cost model (estimated seconds on a nominal GPU, the same on every host so that every shard
 * computes the same plan): per configuration, (warmup + reps) x (kernel time + per-rep overhead)
 * + a fixed cost (prepare, check against the reference, row); the kernel time is
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
#include "store/results.h"
#include "run/run.h"
#include "model/space.h"
#include "model/sweep.h"

#define SHARD_MAX 4096

typedef struct {
    size_t index; /* 0 .. count - 1 */
    size_t count; /* >= 1 */
} shard_spec;

/* Parses "I/N" (0 <= I < N <= SHARD_MAX, decimal, nothing else). TUNE_ERR_INVALID with a message
 * that shows the expected form otherwise. */
tune_status shard_parse(const char *text, shard_spec *out, tune_error *err);

typedef struct shard_plan shard_plan;

/* New plan of n_shards shards over the space's configurations (sp must have been built from sw;
 * both must outlive the plan). */
shard_plan *shard_plan_build(const sweep *sw, const space *sp, size_t n_shards, tune_error *err);
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

/* Identity of a configuration, the same for a row read back and for a configuration of the
 * space: "method|name=value|..." with the problem axes and parameters sorted by name. */
const char *shard_row_identity(const result_row *row, char *buf, size_t size);
const char *shard_config_identity(const sweep *sw, const space *sp, size_t config, char *buf,
                                  size_t size);

typedef struct {
    int quiet; /* no tables on stdout */
    int argc;  /* the merge's command line, for meta.json */
    char **argv;
} shard_merge_options;

/* Merges the results folders of the shards of one sweep run (each written with --shard I/N)
 * into out_dir: raw.jsonl (every shard's rows, in shard order, lines as written), retime.jsonl,
 * meta.json (the first shard's, with a summary of the merged rows and a "shards" list: each
 * shard's folder, host, device, times and counts), then the best-config tables (run_report).
 * Refused, with every problem listed, unless the folders come from the same sweep, plan and key
 * (kernels, toolkit, driver, device name, seed; the PCI bus id may differ), every shard is there
 * exactly once and complete, and no configuration has two rows. out_dir may not be one of dirs;
 * its raw.jsonl, retime.jsonl and meta.json are replaced. sum (may be NULL) gets the counts of
 * the merged rows. */
tune_status shard_merge(const char *out_dir, const char *const *dirs, size_t n_dirs,
                        const shard_merge_options *opt, run_summary *sum, tune_error *err);

#endif
