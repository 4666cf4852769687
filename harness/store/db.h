/* db.h - the results store: finished runs kept whole in one SQLite file, for `tune history` and
 * `tune dashboard` (docs/history.md).
 *
 *   tune_error err = {0};
 *   db *d = db_open("results/history.sqlite", &err);       // created and migrated as needed
 *   db_ingest_result r;
 *   db_ingest(d, "results/sparq/20261122T101500Z", NULL, &r, &err);
 *   db_close(d);
 *
 * The file is opened in WAL mode with foreign keys on and a busy timeout (DB_BUSY_TIMEOUT_MS), so
 * that concurrent writers on one host wait for each other instead of failing. A run is added in
 * one transaction: the store holds it whole or not at all, also when the process is killed
 * midway. A run already held (the same identity and contents) is not added twice; the same run
 * with other contents is refused. SQLite's locking is not safe on network file systems: one host
 * writes a store.
 *
 * Tables (schema DB_SCHEMA_VERSION; the SQL is kept to what PostgreSQL also has): store_info
 * (key, value: schema_version), runs (one per run: identity, everything meta.json says, the
 * night it belongs to, the folder it came from), series (sweep, shape, method), configs (a
 * series' parameter set), rows (run x config: status and measurements, energy_j included), retimes (the re-timing
 * verdicts), bests (run x series: the best ok time and its configuration).
 */
#ifndef TUNE_DB_H
#define TUNE_DB_H

#include <stddef.h>

#include "core/error.h"

/* The newest store schema this tune reads and writes. 2: the bests table; 3: the rows' energy. */
#define DB_SCHEMA_VERSION 3
/* How long a writer waits for another's lock before failing (ms). */
#define DB_BUSY_TIMEOUT_MS 600000

typedef struct db db;

/* The store at path, created when absent and migrated to DB_SCHEMA_VERSION; a store of a newer
 * schema is refused. New handle or NULL with err set (where = path). */
TUNE_MUST_CHECK db *db_open(const char *path, tune_error *err);
/* The store at path for reading only: no file is created and nothing migrated (a store of an
 * older schema is refused, asking for an ingest to migrate it). NULL with err set. */
TUNE_MUST_CHECK db *db_open_readonly(const char *path, tune_error *err);
void db_close(db *d); /* NULL: nothing */

/* The store's path: --db when given, else $TUNE_DB when set and not empty, else
 * <root>/history.sqlite (root: the results root, "results" when NULL). Into buf; buf. */
const char *db_default_path(const char *given, const char *root, char *buf, size_t size);

typedef struct {
    long long run_id;
    int added;       /* 1: added now; 0: the store already held it */
    size_t n_rows;   /* rows of the run (deduplicated) */
    char night[16];  /* the night it belongs to */
} db_ingest_result;

/* Adds the finished run of dir (meta.json with its end, raw.jsonl or raw.jsonl.gz, retime.jsonl
 * when present) in one transaction. night ("YYYY-MM-DD") labels it; NULL: its start's UTC date.
 * Refused: a folder without meta.json or end (unfinished), a shard of a sharded run (its merge is
 * added), a compile-only run, rows or meta.json newer than this tune reads, and every malformed
 * input (errors name the file and line). The folder is only read. */
TUNE_MUST_CHECK tune_status db_ingest(db *d, const char *dir, const char *night,
                                      db_ingest_result *res, tune_error *err);

/* 1 when s is a date YYYY-MM-DD that exists (a night's label). */
int db_valid_night(const char *s);

/* ---- readers (analysis/history.c) ---- */

/* A run as history groups and segments them. Strings are new, freed by db_runs_free. */
typedef struct {
    long long id;
    char *sweep, *sweep_hash, *device, *driver, *tool_rev, *kernels_hash, *host, *night, *start,
        *source_dir;
    long long runtime;
} db_run;

/* Runs of the store (of sweep only when not NULL; of nights >= since when not NULL), ordered by
 * sweep, device, night, start. *runs is new. */
TUNE_MUST_CHECK tune_status db_runs(db *d, const char *sweep, const char *since, db_run **runs,
                                    size_t *n, tune_error *err);
void db_runs_free(db_run *runs, size_t n);
void db_run_clear(db_run *r); /* frees r's strings */
/* The id of the run ingested from folder dir (the latest ingested, when several nights were
 * imported from it) into *id; TUNE_ERR_INVALID naming dir when the store holds none. */
TUNE_MUST_CHECK tune_status db_run_of_dir(db *d, const char *dir, long long *id, tune_error *err);

/* One run's best of one series. */
typedef struct {
    long long run_id, series_id;
    double time;  /* seconds */
    char *winner; /* the configuration's parameters ("bm=64 bn=128"; "" without parameters) */
} db_best;

/* A series: what a shape and method's bests over runs make. */
typedef struct {
    long long id;
    char *sweep, *shape, *method;
} db_series;

/* The bests of runs run_ids[0..n_runs) (and the series they belong to), ordered by series. */
TUNE_MUST_CHECK tune_status db_bests(db *d, const long long *run_ids, size_t n_runs,
                                     db_best **bests, size_t *n_bests, db_series **series,
                                     size_t *n_series, tune_error *err);
void db_bests_free(db_best *b, size_t n, db_series *s, size_t n_series);

#endif
