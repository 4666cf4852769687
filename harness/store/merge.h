/* merge.h - the results folders of the shards of one sweep run (each written with --shard I/N)
 * merged into one (docs/sharding.md).
 *
 *   const char *dirs[] = {"run/shards/0", "run/shards/1"};
 *   merge_options mo = {.argc = argc, .argv = argv};
 *   run_summary sum;
 *   if (merge_shards("run", dirs, 2, &mo, &sum, &err) != TUNE_OK) ...  // run/raw.jsonl, meta.json
 *
 * The best-config tables of the merged folder are the report's (analysis/report.h); run_merge
 * (run/run.h) merges and writes them.
 */
#ifndef TUNE_MERGE_H
#define TUNE_MERGE_H

#include <stddef.h>

#include "core/error.h"
#include "store/meta.h"

typedef struct {
    int quiet; /* no tables on stdout (run_merge) */
    int argc;  /* the merge's command line, for meta.json */
    char **argv;
} merge_options;

/* Merges into out_dir: raw.jsonl (every shard's rows, in shard order, lines as written; a
 * shard's raw.jsonl.gz is read as well), retime.jsonl (the same), meta.json (the first shard's, with a summary of the merged rows and a "shards"
 * list: each shard's folder, host, device, times and counts). Refused, with every problem listed,
 * unless the folders come from the same sweep, plan and key (kernels, toolkit, driver, device
 * name, seed; the PCI bus id may differ) and the same search settings (store/meta.h:
 * meta_search_settings), every shard is there exactly once and complete (a searched shard:
 * finished, with a row for what it measured only), and no configuration has two rows. out_dir may not be one of dirs; its raw.jsonl, retime.jsonl and
 * meta.json are replaced (a raw.jsonl.gz or retime.jsonl.gz there is refused: the merge writes
 * plain files). sum (may be NULL) gets the counts of the merged rows. */
TUNE_MUST_CHECK tune_status merge_shards(const char *out_dir, const char *const *dirs,
                                         size_t n_dirs, const merge_options *opt, run_summary *sum,
                                         tune_error *err);

#endif
