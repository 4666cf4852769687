/* db.c - the results store (db.h): SQLite, one transaction per run. */
#include "store/db.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "core/hash.h"
#include "core/infile.h"
#include "store/folder.h"
#include "store/meta.h"
#include "store/results.h"
#include "store/retime.h"

struct db {
    sqlite3 *h;
    char path[4096];
};

/* ---- schema ---- */

/* migrations[i] takes a store from schema i to i + 1; a new store runs them all. Portable SQL:
 * every statement here also runs on PostgreSQL (INTEGER PRIMARY KEY becomes an identity column
 * there). */
static const char *const migrations[DB_SCHEMA_VERSION] = {
    /* 0 -> 1 */
    "CREATE TABLE store_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE runs ("
    " id INTEGER PRIMARY KEY, uid TEXT NOT NULL UNIQUE, digest TEXT NOT NULL,"
    " sweep TEXT NOT NULL, sweep_hash TEXT, sweep_file TEXT, family TEXT, op TEXT,"
    " device TEXT NOT NULL, device_uuid TEXT, pci_bus_id TEXT, compute_capability TEXT,"
    " driver TEXT, driver_cuda INTEGER, runtime INTEGER, nvrtc INTEGER, cublas TEXT,"
    " tool_version TEXT, tool_rev TEXT, kernels_hash TEXT, host TEXT, seed TEXT,"
    " start_time TEXT NOT NULL, end_time TEXT NOT NULL, night TEXT NOT NULL,"
    " source_dir TEXT NOT NULL, ingested_at TEXT NOT NULL, n_rows INTEGER NOT NULL,"
    " searched INTEGER NOT NULL, meta TEXT NOT NULL);"
    "CREATE INDEX runs_by_sweep ON runs (sweep, device, night, start_time);"
    "CREATE TABLE series (id INTEGER PRIMARY KEY, sweep TEXT NOT NULL, shape TEXT NOT NULL,"
    " method TEXT NOT NULL, UNIQUE (sweep, shape, method));"
    "CREATE TABLE configs (id INTEGER PRIMARY KEY,"
    " series_id INTEGER NOT NULL REFERENCES series (id), params TEXT NOT NULL, kernel TEXT,"
    " UNIQUE (series_id, params));"
    "CREATE TABLE results ("
    " run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,"
    " config_id INTEGER NOT NULL REFERENCES configs (id), status TEXT NOT NULL, reason TEXT,"
    " time_median REAL, time_mean REAL, time_min REAL, time_max REAL, time_stdev REAL,"
    " time_stderr REAL, time_p10 REAL, time_p90 REAL, time_n INTEGER, bytes REAL, flops REAL,"
    " error REAL, tolerance REAL, dram_bytes REAL, model_time REAL, roofline_time REAL,"
    " clock_sm_mhz REAL, clock_mem_mhz REAL, temperature_c REAL, power_w REAL,"
    " throttle_reasons INTEGER, throttled INTEGER, timing_mode TEXT, stop_reason TEXT,"
    " batch INTEGER, PRIMARY KEY (run_id, config_id));"
    "CREATE TABLE retimes ("
    " run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,"
    " series_id INTEGER NOT NULL REFERENCES series (id),"
    " winner_id INTEGER NOT NULL REFERENCES configs (id),"
    " runner_up TEXT, margin REAL, tie INTEGER NOT NULL, PRIMARY KEY (run_id, series_id));",
    /* 1 -> 2: each run's best per series, kept at ingest so that history reads one value per run
     * and series instead of every row */
    "CREATE TABLE bests ("
    " run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,"
    " series_id INTEGER NOT NULL REFERENCES series (id),"
    " config_id INTEGER NOT NULL REFERENCES configs (id), time REAL NOT NULL,"
    " PRIMARY KEY (run_id, series_id));"
    "INSERT INTO bests (run_id, series_id, config_id, time) SELECT run_id, series_id, config_id,"
    " time_median FROM (SELECT r.run_id, c.series_id, r.config_id, r.time_median,"
    " ROW_NUMBER() OVER (PARTITION BY r.run_id, c.series_id ORDER BY"
    " CASE WHEN t.winner_id = r.config_id THEN 0 ELSE 1 END, r.time_median, r.config_id) AS k"
    " FROM results r JOIN configs c ON c.id = r.config_id"
    " LEFT JOIN retimes t ON t.run_id = r.run_id AND t.series_id = c.series_id"
    " WHERE r.status = 'ok' AND r.time_median IS NOT NULL) b WHERE k = 1;",
    /* 2 -> 3: the energy of a call (rows of format 2 from runs with --energy); NULL elsewhere */
    "ALTER TABLE results ADD COLUMN energy_j REAL;"
    "ALTER TABLE results ADD COLUMN energy_note TEXT;"};

/* The bests of one run (the migration's rule: the re-timing's winner, else the fastest ok row). */
static const char sql_bests[] =
    "INSERT INTO bests (run_id, series_id, config_id, time) SELECT run_id, series_id, config_id,"
    " time_median FROM (SELECT r.run_id, c.series_id, r.config_id, r.time_median,"
    " ROW_NUMBER() OVER (PARTITION BY c.series_id ORDER BY"
    " CASE WHEN t.winner_id = r.config_id THEN 0 ELSE 1 END, r.time_median, r.config_id) AS k"
    " FROM results r JOIN configs c ON c.id = r.config_id"
    " LEFT JOIN retimes t ON t.run_id = r.run_id AND t.series_id = c.series_id"
    " WHERE r.run_id = ?1 AND r.status = 'ok' AND r.time_median IS NOT NULL) b WHERE k = 1";

static tune_status db_fail(const db *d, tune_error *err, const char *what)
{
    return tune_error_set(err, TUNE_ERR_IO, d->path, "%s: %s", what, sqlite3_errmsg(d->h));
}

static int exec(db *d, const char *sql, tune_error *err)
{
    char *msg = NULL;
    if (sqlite3_exec(d->h, sql, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    tune_error_set(err, TUNE_ERR_IO, d->path, "%s", msg ? msg : sqlite3_errmsg(d->h));
    sqlite3_free(msg);
    return -1;
}

/* sql run until it is not refused as busy or locked, for at most DB_BUSY_TIMEOUT_MS: SQLite does
 * not call the busy handler for every lock it meets while opening (switching a new file to WAL
 * takes an exclusive lock; so does recovering another process's WAL), so writers that open one
 * store at once would otherwise fail with "database is locked". Returns SQLite's result code. */
static int exec_busy(db *d, const char *sql)
{
    for (long waited_ms = 0;; waited_ms += 5) {
        int rc = sqlite3_exec(d->h, sql, NULL, NULL, NULL);
        if (((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) ||
            waited_ms >= DB_BUSY_TIMEOUT_MS)
            return rc;
        sqlite3_sleep(5);
    }
}

/* The store's schema version: 0 for an empty file; -1 (err set) for a file that holds tables
 * but no store_info, or a version that is not a number. */
static long long schema_version(db *d, tune_error *err)
{
    sqlite3_stmt *st = NULL;
    long long v = -1;
    if (sqlite3_prepare_v2(d->h, "SELECT count(*) FROM sqlite_master WHERE type = 'table'", -1,
                           &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        db_fail(d, err, "not a tune results store (it cannot be read as SQLite)");
        sqlite3_finalize(st);
        return -1;
    }
    long long tables = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (tables == 0)
        return 0;
    if (sqlite3_prepare_v2(d->h, "SELECT value FROM store_info WHERE key = 'schema_version'", -1,
                           &st, NULL) != SQLITE_OK) {
        tune_error_set(err, TUNE_ERR_INVALID, d->path,
                       "not a tune results store: an SQLite file without a store_info table");
        sqlite3_finalize(st);
        return -1;
    }
    if (sqlite3_step(st) == SQLITE_ROW) {
        const char *s = (const char *)sqlite3_column_text(st, 0);
        char *end = NULL;
        errno = 0;
        v = s ? strtoll(s, &end, 10) : -1;
        if (!s || *end || errno || v < 1)
            v = -1;
    }
    sqlite3_finalize(st);
    if (v < 1)
        tune_error_set(err, TUNE_ERR_INVALID, d->path,
                       "store_info.schema_version: expected a positive integer");
    return v;
}

/* Migrates d to DB_SCHEMA_VERSION inside one write transaction (BEGIN IMMEDIATE: two processes
 * creating one store wait for each other; the second finds it made). */
static tune_status migrate(db *d, tune_error *err)
{
    if (exec_busy(d, "BEGIN IMMEDIATE") != SQLITE_OK)
        return db_fail(d, err, "starting the migration's transaction");
    long long v = schema_version(d, err);
    tune_status st = TUNE_OK;
    if (v < 0)
        st = TUNE_ERR_INVALID;
    else if (v > DB_SCHEMA_VERSION)
        st = tune_error_set(err, TUNE_ERR_INVALID, d->path,
                            "store schema %lld is newer than this tune's (%d): use a newer tune",
                            v, DB_SCHEMA_VERSION);
    for (long long i = v; st == TUNE_OK && i < DB_SCHEMA_VERSION; i++) {
        char sql[160];
        snprintf(sql, sizeof sql,
                 "INSERT INTO store_info (key, value) VALUES ('schema_version', '%lld')"
                 " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                 i + 1);
        if (exec(d, migrations[i], err) || exec(d, sql, err))
            st = TUNE_ERR_IO;
    }
    if (st == TUNE_OK && exec(d, "COMMIT", err))
        st = TUNE_ERR_IO;
    if (st != TUNE_OK)
        sqlite3_exec(d->h, "ROLLBACK", NULL, NULL, NULL);
    return st;
}

static db *open_store(const char *path, int readonly, tune_error *err)
{
    struct stat sb;
    if (!path || !*path) {
        tune_error_set(err, TUNE_ERR_INVALID, "store", "the store's path is empty");
        return NULL;
    }
    if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        tune_error_set(err, TUNE_ERR_INVALID, path, "the store must be a regular file (%s)",
                       S_ISLNK(sb.st_mode) ? "a symbolic link is not followed"
                       : S_ISDIR(sb.st_mode) ? "it is a folder"
                                             : "it is a FIFO, socket or device");
        return NULL;
    }
    if (readonly && access(path, F_OK) != 0) {
        tune_error_set(err, TUNE_ERR_IO, path, "no results store here (tune ingest makes one)");
        return NULL;
    }
    db *d = calloc(1, sizeof *d);
    if (!d) {
        tune_error_set(err, TUNE_ERR_NOMEM, path, "out of memory");
        return NULL;
    }
    snprintf(d->path, sizeof d->path, "%s", path);
    int flags = SQLITE_OPEN_NOFOLLOW |
                (readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    if (sqlite3_open_v2(path, &d->h, flags, NULL) != SQLITE_OK) {
        db_fail(d, err, "cannot open the store");
        db_close(d);
        return NULL;
    }
    sqlite3_busy_timeout(d->h, DB_BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(d->h, 1);
    /* the first statements read the file: one that is not SQLite fails here */
    int rc = exec_busy(d, "PRAGMA foreign_keys = ON");
    if (rc == SQLITE_OK && !readonly)
        rc = exec_busy(d, "PRAGMA journal_mode = WAL");
    if (rc == SQLITE_OK && !readonly)
        rc = exec_busy(d, "PRAGMA synchronous = FULL");
    if (rc != SQLITE_OK) {
        db_fail(d, err,
                (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED
                    ? "the store stayed locked by another process for the whole busy timeout"
                    : "not a tune results store (it cannot be opened as SQLite)");
        db_close(d);
        return NULL;
    }
    if (!readonly) {
        if (migrate(d, err) != TUNE_OK) {
            db_close(d);
            return NULL;
        }
        return d;
    }
    long long v = schema_version(d, err);
    if (v >= 0 && v != DB_SCHEMA_VERSION) {
        if (v > DB_SCHEMA_VERSION)
            tune_error_set(err, TUNE_ERR_INVALID, path,
                           "store schema %lld is newer than this tune's (%d): use a newer tune", v,
                           DB_SCHEMA_VERSION);
        else
            tune_error_set(err, TUNE_ERR_INVALID, path,
                           "store schema %lld is older than this tune's (%d): `tune ingest` with "
                           "this tune migrates it",
                           v, DB_SCHEMA_VERSION);
        v = -1;
    }
    if (v < 0) {
        db_close(d);
        return NULL;
    }
    return d;
}

db *db_open(const char *path, tune_error *err) { return open_store(path, 0, err); }
db *db_open_readonly(const char *path, tune_error *err) { return open_store(path, 1, err); }

void db_close(db *d)
{
    if (!d)
        return;
    sqlite3_close_v2(d->h);
    free(d);
}

const char *db_default_path(const char *given, const char *root, char *buf, size_t size)
{
    const char *env = getenv("TUNE_DB");
    if (given)
        snprintf(buf, size, "%s", given);
    else if (env && *env)
        snprintf(buf, size, "%s", env);
    else
        snprintf(buf, size, "%s/history.sqlite", root && *root ? root : "results");
    return buf;
}

/* ---- ingest ---- */

static const char *jstr(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int jint(const json_t *o, const char *a, const char *b, long long *out)
{
    const json_t *v = json_object_get(json_object_get(o, a), b);
    if (!json_is_integer(v))
        return 0;
    *out = json_integer_value(v);
    return 1;
}

/* Adds the text of a file to the digest, line by line, read as every reader reads it (a gzipped
 * file as its text: the same run plain or gzipped is the same run); an absent file adds a
 * marker. */
static tune_status digest_file(uint64_t *h, const char *path, tune_error *err)
{
    if (access(path, F_OK) != 0) {
        *h = hash_fnv1a_str(*h, "-");
        return TUNE_OK;
    }
    folder_lines *in = folder_lines_open(path, INFILE_MAX_ROWS, (size_t)64 << 20, err);
    if (!in)
        return err ? err->code : TUNE_ERR_IO;
    char *line;
    size_t len, lineno;
    tune_status st;
    while ((st = folder_lines_next(in, &line, &len, &lineno, err)) == TUNE_OK && line) {
        *h = hash_fnv1a(*h, line, len);
        *h = hash_fnv1a(*h, "\n", 1);
    }
    if (st == TUNE_OK)
        st = folder_lines_verify(in, err);
    folder_lines_close(in);
    *h = hash_fnv1a_str(*h, "");
    return st;
}

int db_valid_night(const char *s)
{
    int y, m, dd;
    char tail;
    if (!s || strlen(s) != 10 || sscanf(s, "%4d-%2d-%2d%c", &y, &m, &dd, &tail) != 3 ||
        s[4] != '-' || s[7] != '-')
        return 0;
    static const int days[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return y >= 1970 && m >= 1 && m <= 12 && dd >= 1 && dd <= days[m - 1] &&
           !(m == 2 && dd == 29 && (y % 4 || (y % 100 == 0 && y % 400)));
}

/* A prepared statement's parameters, bound by position from 1. */
static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s, i);
}

static void bind_real(sqlite3_stmt *s, int i, double v)
{
    if (isfinite(v))
        sqlite3_bind_double(s, i, v);
    else
        sqlite3_bind_null(s, i);
}

static void bind_int(sqlite3_stmt *s, int i, long long v, int known)
{
    if (known)
        sqlite3_bind_int64(s, i, v);
    else
        sqlite3_bind_null(s, i);
}

typedef struct {
    sqlite3_stmt *series_ins, *series_get, *config_ins, *config_get, *row_ins, *retime_ins;
} stmts;

static void stmts_free(stmts *s)
{
    sqlite3_finalize(s->series_ins);
    sqlite3_finalize(s->series_get);
    sqlite3_finalize(s->config_ins);
    sqlite3_finalize(s->config_get);
    sqlite3_finalize(s->row_ins);
    sqlite3_finalize(s->retime_ins);
}

static int stmts_prepare(db *d, stmts *s)
{
    return sqlite3_prepare_v2(d->h,
                              "INSERT INTO series (sweep, shape, method) VALUES (?1, ?2, ?3)"
                              " ON CONFLICT (sweep, shape, method) DO NOTHING",
                              -1, &s->series_ins, NULL) != SQLITE_OK ||
           sqlite3_prepare_v2(d->h,
                              "SELECT id FROM series WHERE sweep = ?1 AND shape = ?2 AND "
                              "method = ?3",
                              -1, &s->series_get, NULL) != SQLITE_OK ||
           sqlite3_prepare_v2(d->h,
                              "INSERT INTO configs (series_id, params, kernel) VALUES (?1, ?2, ?3)"
                              " ON CONFLICT (series_id, params) DO NOTHING",
                              -1, &s->config_ins, NULL) != SQLITE_OK ||
           sqlite3_prepare_v2(d->h, "SELECT id FROM configs WHERE series_id = ?1 AND params = ?2",
                              -1, &s->config_get, NULL) != SQLITE_OK ||
           sqlite3_prepare_v2(
               d->h,
               "INSERT INTO results (run_id, config_id, status, reason, time_median, time_mean,"
               " time_min, time_max, time_stdev, time_stderr, time_p10, time_p90, time_n, bytes,"
               " flops, error, tolerance, dram_bytes, model_time, roofline_time, clock_sm_mhz,"
               " clock_mem_mhz, temperature_c, power_w, throttle_reasons, throttled, timing_mode,"
               " stop_reason, batch, energy_j, energy_note) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,"
               " ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23,"
               " ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31)",
               -1, &s->row_ins, NULL) != SQLITE_OK ||
           sqlite3_prepare_v2(d->h,
                              "INSERT INTO retimes (run_id, series_id, winner_id, runner_up,"
                              " margin, tie) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                              -1, &s->retime_ins, NULL) != SQLITE_OK;
}

/* Runs an insert-if-absent then its select (both bound alike by the caller); the id or -1. */
static long long upsert(sqlite3_stmt *ins, sqlite3_stmt *get)
{
    long long id = -1;
    if (sqlite3_step(ins) == SQLITE_DONE && sqlite3_step(get) == SQLITE_ROW)
        id = sqlite3_column_int64(get, 0);
    sqlite3_reset(ins);
    sqlite3_reset(get);
    return id;
}

/* The row's shape (problem axes) and parameters as "name=value ..." text. */
static void row_texts(const result_row *r, char *shape, size_t shape_size, char *params,
                      size_t params_size)
{
    tune_point s = {0}, p = {0};
    for (size_t i = 0; i < r->values.n; i++) {
        tune_point *t = i < r->n_axes ? &s : &p;
        t->names[t->n] = r->values.names[i];
        t->vals[t->n++] = r->values.vals[i];
    }
    point_format(&s, shape, shape_size);
    point_format(&p, params, params_size);
}

typedef struct {
    char *id;
    long long config_id, series_id;
} id_entry;

static int id_cmp(const void *a, const void *b)
{
    return strcmp(((const id_entry *)a)->id, ((const id_entry *)b)->id);
}

/* Inserts rows and re-timing verdicts of run run_id. */
static tune_status insert_rows(db *d, long long run_id, const char *sweep, result_row *rows,
                               size_t n, const retime_verdict *rv, size_t n_rv, tune_error *err)
{
    stmts s = {0};
    tune_status st = TUNE_OK;
    id_entry *ids = calloc(n ? n : 1, sizeof *ids);
    if (!ids)
        return tune_error_set(err, TUNE_ERR_NOMEM, d->path, "out of memory");
    if (stmts_prepare(d, &s)) {
        st = db_fail(d, err, "preparing the ingest");
        goto done;
    }
    for (size_t i = 0; i < n && st == TUNE_OK; i++) {
        const result_row *r = &rows[i];
        char shape[2048], params[2048], idbuf[4096];
        row_texts(r, shape, sizeof shape, params, sizeof params);
        for (sqlite3_stmt *q = s.series_ins; q; q = q == s.series_ins ? s.series_get : NULL) {
            bind_text(q, 1, sweep);
            bind_text(q, 2, shape);
            bind_text(q, 3, r->method);
        }
        long long series = upsert(s.series_ins, s.series_get);
        for (sqlite3_stmt *q = s.config_ins; q; q = q == s.config_ins ? s.config_get : NULL) {
            sqlite3_bind_int64(q, 1, series);
            bind_text(q, 2, params);
        }
        bind_text(s.config_ins, 3, r->kernel);
        long long config = series < 0 ? -1 : upsert(s.config_ins, s.config_get);
        if (config < 0) {
            st = db_fail(d, err, "adding a configuration");
            break;
        }
        ids[i] = (id_entry){strdup(results_row_identity(r, idbuf, sizeof idbuf)), config, series};
        sqlite3_stmt *q = s.row_ins;
        sqlite3_bind_int64(q, 1, run_id);
        sqlite3_bind_int64(q, 2, config);
        bind_text(q, 3, result_status_str(r->status));
        bind_text(q, 4, r->reason);
        const stats_summary *t = &r->time;
        int timed = t->n > 0;
        double tv[] = {t->median, t->mean, t->min, t->max, t->stdev, t->std_err, t->p10,
                       t->p90};
        for (int k = 0; k < 8; k++)
            bind_real(q, 5 + k, timed ? tv[k] : NAN);
        bind_int(q, 13, (long long)t->n, timed);
        double v[] = {r->bytes,         r->flops,         r->error,        r->tolerance,
                      r->dram_bytes,    r->model_time,    r->roofline_time, r->clock_sm_mhz,
                      r->clock_mem_mhz, r->temperature_c, r->power_w};
        for (int k = 0; k < 11; k++)
            bind_real(q, 14 + k, v[k] >= 0 || k < 7 ? v[k] : NAN);
        bind_int(q, 25, r->throttle_reasons, r->throttle_reasons >= 0);
        bind_int(q, 26, r->throttled, timed);
        bind_text(q, 27, r->timing_mode);
        bind_text(q, 28, r->stop_reason);
        bind_int(q, 29, r->batch, r->batch > 0);
        bind_real(q, 30, r->energy_j);
        bind_text(q, 31, r->energy_note);
        if (!ids[i].id)
            st = tune_error_set(err, TUNE_ERR_NOMEM, d->path, "out of memory");
        else if (sqlite3_step(q) != SQLITE_DONE)
            st = db_fail(d, err, "adding a row");
        sqlite3_reset(q);
    }
    if (st == TUNE_OK)
        qsort(ids, n, sizeof *ids, id_cmp);
    for (size_t i = 0; i < n_rv && st == TUNE_OK; i++) {
        id_entry key = {(char *)rv[i].winner_id, 0, 0};
        const id_entry *e = n ? bsearch(&key, ids, n, sizeof *ids, id_cmp) : NULL;
        if (!e) /* a verdict on a configuration without a row: not a winner the store can name */
            continue;
        sqlite3_stmt *q = s.retime_ins;
        sqlite3_bind_int64(q, 1, run_id);
        sqlite3_bind_int64(q, 2, e->series_id);
        sqlite3_bind_int64(q, 3, e->config_id);
        bind_text(q, 4, rv[i].runner_up);
        bind_real(q, 5, rv[i].margin);
        sqlite3_bind_int(q, 6, rv[i].tie);
        int rc = sqlite3_step(q);
        sqlite3_reset(q);
        /* two verdicts on one series (a resumed run re-timed a shape): the first stands */
        if (rc != SQLITE_DONE && rc != SQLITE_CONSTRAINT_PRIMARYKEY)
            st = db_fail(d, err, "adding a re-timing verdict");
    }
done:
    for (size_t i = 0; i < n; i++)
        free(ids[i].id);
    free(ids);
    stmts_free(&s);
    return st;
}

/* The checks of a folder to ingest: meta.json (tune's own check), finished, one GPU run. */
static json_t *ingest_meta(const char *dir, tune_error *err)
{
    json_t *meta = NULL;
    const char *dirs[] = {dir};
    char path[4096];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    if (!infile_is_dir(dir)) {
        tune_error_set(err, TUNE_ERR_IO, dir, "not a folder");
        return NULL;
    }
    if (access(path, F_OK) != 0) {
        tune_error_set(err, TUNE_ERR_INVALID, dir,
                       "no meta.json: not a finished run of tune (a run writes it at its end)");
        return NULL;
    }
    if (meta_check_folders(dirs, 1, &meta, err) != TUNE_OK)
        return NULL;
    const json_t *shard = json_object_get(meta, "shard");
    const char *why = NULL;
    if (!jstr(meta, "end", NULL))
        why = "the run has not finished (meta.json has no end): ingest it once it has";
    else if (json_object_get(meta, "compile_only"))
        why = "a compile-only run (--compile-only) has no timings to keep";
    else if (shard && !json_object_get(shard, "merged"))
        why = "a shard of a sharded run: ingest the merged folder (tune merge) instead";
    else if (!meta_sweep_name(meta))
        why = "$.sweep.name: expected a string";
    else if (!meta_device_name(meta))
        why = "$.device.name: expected a string (the GPU the run measured)";
    else if (!jstr(meta, "start", NULL))
        why = "$.start: expected the run's start time";
    if (why) {
        tune_error_set(err, TUNE_ERR_INVALID, path, "%s", why);
        json_decref(meta);
        return NULL;
    }
    return meta;
}

/* A folder being ingested: its meta.json, rows and re-timing verdicts, the files they came from,
 * and the run's identity and digest (hex). */
typedef struct {
    json_t *meta;
    const char *start; /* meta.json's start (borrowed) */
    results_rows rows; /* owned */
    size_t n_rv;
    retime_verdict *rv;
    char rows_path[4096], retime_path[4096], meta_path[4096];
    char uid[17], digest[17];
} ingest_folder;

/* The night a run counts for into res->night: night when given (a date YYYY-MM-DD), else the UTC
 * date of the run's start. */
static tune_status ingest_night(const char *dir, const char *night, const char *start,
                                db_ingest_result *res, tune_error *err)
{
    if (night && !db_valid_night(night))
        return tune_error_set(err, TUNE_ERR_INVALID, dir, "the night '%s' is not a date YYYY-MM-DD",
                              night);
    snprintf(res->night, sizeof res->night, "%.10s", night ? night : start);
    if (!db_valid_night(res->night))
        return tune_error_set(err, TUNE_ERR_INVALID, dir,
                              "meta.json: $.start: expected an ISO 8601 UTC time, got '%s'", start);
    return TUNE_OK;
}

/* The folder's rows (deduplicated) and re-timing verdicts: at least one row, every row of the
 * sweep meta.json names. */
static tune_status ingest_rows(const char *dir, ingest_folder *f, tune_error *err)
{
    size_t dropped = 0;
    if (results_locate(dir, f->rows_path, sizeof f->rows_path, err) != TUNE_OK ||
        folder_locate(dir, "retime.jsonl", f->retime_path, sizeof f->retime_path, err) != TUNE_OK ||
        results_read(f->rows_path, &f->rows, err) != TUNE_OK ||
        results_rows_dedup(&f->rows, &dropped, err) != TUNE_OK ||
        retime_read(dir, &f->rv, &f->n_rv, err) != TUNE_OK)
        return err ? err->code : TUNE_ERR_INVALID;
    if (f->rows.n == 0)
        return tune_error_set(err, TUNE_ERR_INVALID, f->rows_path, "no rows: nothing to keep");
    const char *sweep = meta_sweep_name(f->meta);
    for (size_t i = 0; i < f->rows.n; i++)
        if (!f->rows.rows[i].sweep || strcmp(f->rows.rows[i].sweep, sweep) != 0)
            return tune_error_set(err, TUNE_ERR_INVALID, f->rows_path,
                                  "a row of sweep '%s' in a run of sweep '%s'",
                                  f->rows.rows[i].sweep ? f->rows.rows[i].sweep : "(none)", sweep);
    return TUNE_OK;
}

/* f->uid, what names the run (its night included, so that one folder imported as two nights is
 * two runs), and f->digest, what it holds (meta.json, the rows, the verdicts). */
static tune_status ingest_identity(ingest_folder *f, const char *night, tune_error *err)
{
    const json_t *meta = f->meta;
    uint64_t uid = HASH_FNV_OFFSET, dig = HASH_FNV_OFFSET;
    const char *idf[] = {meta_sweep_name(meta),
                         meta_sweep_hash(meta),
                         jstr(meta, "host", "hostname"),
                         meta_device_name(meta),
                         jstr(meta, "device", "pci_bus_id"),
                         jstr(meta, "device", "uuid"),
                         f->start,
                         night};
    for (size_t i = 0; i < sizeof idf / sizeof *idf; i++)
        uid = hash_fnv1a_str(uid, idf[i] ? idf[i] : "");
    char *key = json_dumps(json_object_get(meta, "key"), JSON_SORT_KEYS | JSON_COMPACT);
    uid = hash_fnv1a_str(uid, key ? key : "");
    free(key);
    if (digest_file(&dig, f->meta_path, err) || digest_file(&dig, f->rows_path, err) ||
        digest_file(&dig, f->retime_path, err))
        return TUNE_ERR_IO;
    hash_hex(uid, f->uid);
    hash_hex(dig, f->digest);
    return TUNE_OK;
}

/* *held = 1 and res->run_id when the store already holds the run (its uid) with the same
 * contents; an error when with other contents; *held = 0 when not at all. */
static tune_status ingest_held(db *d, const char *dir, const ingest_folder *f,
                               db_ingest_result *res, int *held, tune_error *err)
{
    sqlite3_stmt *q = NULL;
    tune_status st = TUNE_OK;
    *held = 0;
    if (sqlite3_prepare_v2(d->h, "SELECT id, digest, source_dir FROM runs WHERE uid = ?1", -1, &q,
                           NULL) != SQLITE_OK)
        return db_fail(d, err, "reading the runs");
    bind_text(q, 1, f->uid);
    if (sqlite3_step(q) == SQLITE_ROW) {
        const char *digest = (const char *)sqlite3_column_text(q, 1);
        *held = 1;
        res->run_id = sqlite3_column_int64(q, 0);
        if (!digest || strcmp(digest, f->digest) != 0)
            st = tune_error_set(err, TUNE_ERR_INVALID, dir,
                                "the store %s already holds this run (night %s, ingested from %s) "
                                "with other contents: a folder's run is kept as it was first "
                                "ingested",
                                d->path, res->night, (const char *)sqlite3_column_text(q, 2));
    }
    sqlite3_finalize(q);
    return st;
}

/* The run's row in the runs table (meta.json kept whole, the source folder's absolute path, the
 * time of ingestion): res->run_id. */
static tune_status insert_run(db *d, const char *dir, const ingest_folder *f, db_ingest_result *res,
                              tune_error *err)
{
    const json_t *meta = f->meta;
    char abs_dir[4096], now[32], *meta_text = NULL;
    if (!realpath(dir, abs_dir))
        snprintf(abs_dir, sizeof abs_dir, "%s", dir);
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm);
    size_t meta_len = 0;
    if (infile_read(f->meta_path, INFILE_MAX_JSON, &meta_text, &meta_len, err) != TUNE_OK) {
        free(meta_text);
        return TUNE_ERR_IO;
    }
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(
            d->h,
            "INSERT INTO runs (uid, digest, sweep, sweep_hash, sweep_file, family, op, device,"
            " device_uuid, pci_bus_id, compute_capability, driver, driver_cuda, runtime, nvrtc,"
            " cublas, tool_version, tool_rev, kernels_hash, host, seed, start_time, end_time,"
            " night, source_dir, ingested_at, n_rows, searched, meta) VALUES (?1, ?2, ?3, ?4, ?5,"
            " ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22,"
            " ?23, ?24, ?25, ?26, ?27, ?28, ?29) RETURNING id",
            -1, &q, NULL) != SQLITE_OK) {
        free(meta_text);
        return db_fail(d, err, "adding the run");
    }
    long long ll = 0;
    char seed[32] = "";
    const json_t *js = json_object_get(meta, "seed");
    if (json_is_integer(js))
        snprintf(seed, sizeof seed, "%lld", (long long)json_integer_value(js));
    const char *texts[] = {f->uid,
                           f->digest,
                           meta_sweep_name(meta),
                           meta_sweep_hash(meta),
                           jstr(meta, "sweep", "file"),
                           meta_sweep_family(meta),
                           meta_sweep_op(meta),
                           meta_device_name(meta),
                           jstr(meta, "device", "uuid"),
                           jstr(meta, "device", "pci_bus_id"),
                           jstr(meta, "device", "compute_capability"),
                           jstr(meta, "versions", "driver")};
    for (int i = 0; i < 12; i++)
        bind_text(q, 1 + i, texts[i]);
    bind_int(q, 13, ll, jint(meta, "versions", "driver_cuda", &ll));
    bind_int(q, 14, ll, jint(meta, "versions", "runtime", &ll));
    bind_int(q, 15, ll, jint(meta, "versions", "nvrtc", &ll));
    bind_text(q, 16, jstr(meta, "versions", "cublas"));
    bind_text(q, 17, jstr(meta, "tool", "version"));
    bind_text(q, 18, meta_tool_git_rev(meta));
    bind_text(q, 19, jstr(meta, "key", "kernels_hash"));
    bind_text(q, 20, jstr(meta, "host", "hostname"));
    bind_text(q, 21, *seed ? seed : NULL);
    bind_text(q, 22, f->start);
    bind_text(q, 23, jstr(meta, "end", NULL));
    bind_text(q, 24, res->night);
    bind_text(q, 25, abs_dir);
    bind_text(q, 26, now);
    sqlite3_bind_int64(q, 27, (long long)f->rows.n);
    sqlite3_bind_int(q, 28, meta_search_block(meta) != NULL);
    sqlite3_bind_text(q, 29, meta_text, (int)meta_len, SQLITE_STATIC);
    tune_status st = TUNE_OK;
    if (sqlite3_step(q) != SQLITE_ROW)
        st = db_fail(d, err, "adding the run");
    else
        res->run_id = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    free(meta_text);
    return st;
}

/* The run's best configurations (sql_bests), kept for the history's readers. */
static tune_status insert_bests(db *d, long long run_id, tune_error *err)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(d->h, sql_bests, -1, &q, NULL) != SQLITE_OK)
        return db_fail(d, err, "keeping the run's bests");
    sqlite3_bind_int64(q, 1, run_id);
    int rc = sqlite3_step(q);
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? TUNE_OK : db_fail(d, err, "keeping the run's bests");
}

tune_status db_ingest(db *d, const char *dir, const char *night, db_ingest_result *res,
                      tune_error *err)
{
    memset(res, 0, sizeof *res);
    ingest_folder f = {.meta = ingest_meta(dir, err)};
    if (!f.meta)
        return err ? err->code : TUNE_ERR_INVALID;
    f.start = jstr(f.meta, "start", NULL);
    snprintf(f.meta_path, sizeof f.meta_path, "%s/meta.json", dir);
    int held = 0;
    tune_status st = ingest_night(dir, night, f.start, res, err);
    if (st == TUNE_OK)
        st = ingest_rows(dir, &f, err);
    if (st == TUNE_OK)
        st = ingest_identity(&f, res->night, err);
    if (st != TUNE_OK)
        goto done;
    if (exec_busy(d, "BEGIN IMMEDIATE") != SQLITE_OK) {
        st = db_fail(d, err, "starting the run's transaction");
        goto done;
    }
    if ((st = ingest_held(d, dir, &f, res, &held, err)) != TUNE_OK)
        goto rollback;
    if (held) {
        res->n_rows = f.rows.n;
        exec(d, "COMMIT", NULL);
        goto done;
    }
    if ((st = insert_run(d, dir, &f, res, err)) != TUNE_OK)
        goto rollback;
    if (insert_rows(d, res->run_id, meta_sweep_name(f.meta), f.rows.rows, f.rows.n, f.rv, f.n_rv, err) !=
        TUNE_OK) {
        st = err ? err->code : TUNE_ERR_IO;
        goto rollback;
    }
    if ((st = insert_bests(d, res->run_id, err)) != TUNE_OK)
        goto rollback;
    if (exec(d, "COMMIT", err)) {
        st = TUNE_ERR_IO;
        goto rollback;
    }
    res->added = 1;
    res->n_rows = f.rows.n;
    goto done;
rollback:
    sqlite3_exec(d->h, "ROLLBACK", NULL, NULL, NULL);
done:
    free(f.rv);
    results_rows_free(&f.rows);
    json_decref(f.meta);
    return st;
}

/* ---- readers ---- */

/* Room for one more element of size elem in *items (n used, *cap allocated, doubled from first);
 * 0, or -1 with err set when memory runs out. */
static int grow(void *items, size_t n, size_t *cap, size_t first, size_t elem, const db *d,
                tune_error *err)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? 2 * *cap : first;
    void *g = realloc(*(void **)items, c * elem);
    if (!g) {
        tune_error_set(err, TUNE_ERR_NOMEM, d->path, "out of memory");
        return -1;
    }
    *(void **)items = g;
    *cap = c;
    return 0;
}

static char *col_dup(sqlite3_stmt *q, int i)
{
    const char *s = (const char *)sqlite3_column_text(q, i);
    return strdup(s ? s : "");
}

tune_status db_runs(db *d, const char *sweep, const char *since, db_run **runs, size_t *n,
                    tune_error *err)
{
    sqlite3_stmt *q = NULL;
    *runs = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(d->h,
                           "SELECT id, sweep, sweep_hash, device, driver, tool_rev, kernels_hash,"
                           " host, night, start_time, source_dir, runtime FROM runs"
                           " WHERE (?1 IS NULL OR sweep = ?1) AND (?2 IS NULL OR night >= ?2)"
                           " ORDER BY sweep, device, night, start_time, id",
                           -1, &q, NULL) != SQLITE_OK)
        return db_fail(d, err, "reading the runs");
    bind_text(q, 1, sweep);
    bind_text(q, 2, since);
    size_t cap = 0;
    tune_status st = TUNE_OK;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (grow(runs, *n, &cap, 64, sizeof **runs, d, err)) {
            st = TUNE_ERR_NOMEM;
            break;
        }
        db_run *r = &(*runs)[(*n)++];
        r->id = sqlite3_column_int64(q, 0);
        char **f[] = {&r->sweep, &r->sweep_hash, &r->device, &r->driver, &r->tool_rev,
                      &r->kernels_hash, &r->host, &r->night, &r->start, &r->source_dir};
        for (int i = 0; i < 10; i++)
            *f[i] = col_dup(q, 1 + i);
        r->runtime = sqlite3_column_type(q, 11) == SQLITE_NULL ? 0 : sqlite3_column_int64(q, 11);
    }
    if (st == TUNE_OK && rc != SQLITE_DONE)
        st = db_fail(d, err, "reading the runs");
    sqlite3_finalize(q);
    if (st != TUNE_OK) {
        db_runs_free(*runs, *n);
        *runs = NULL;
        *n = 0;
    }
    return st;
}

tune_status db_run_of_dir(db *d, const char *dir, long long *id, tune_error *err)
{
    char abs_dir[4096];
    if (!realpath(dir, abs_dir))
        return tune_error_set(err, TUNE_ERR_IO, dir, "cannot resolve the folder: %s",
                              strerror(errno));
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(d->h,
                           "SELECT id FROM runs WHERE source_dir = ?1 ORDER BY night DESC,"
                           " id DESC",
                           -1, &q, NULL) != SQLITE_OK)
        return db_fail(d, err, "reading the runs");
    bind_text(q, 1, abs_dir);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        *id = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    if (rc == SQLITE_ROW)
        return TUNE_OK;
    if (rc != SQLITE_DONE)
        return db_fail(d, err, "reading the runs");
    return tune_error_set(err, TUNE_ERR_INVALID, dir, "the store %s holds no run of this folder "
                          "(tune ingest adds it)", d->path);
}

void db_run_clear(db_run *r)
{
    char *f[] = {r->sweep, r->sweep_hash, r->device, r->driver, r->tool_rev,
                 r->kernels_hash, r->host, r->night, r->start, r->source_dir};
    for (int k = 0; k < 10; k++)
        free(f[k]);
    memset(r, 0, sizeof *r);
}

void db_runs_free(db_run *runs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        db_run_clear(&runs[i]);
    free(runs);
}

tune_status db_bests(db *d, const long long *run_ids, size_t n_runs, db_best **bests,
                     size_t *n_bests, db_series **series, size_t *n_series, tune_error *err)
{
    *bests = NULL;
    *series = NULL;
    *n_bests = *n_series = 0;
    tune_status st = TUNE_OK;
    /* the runs go into a temporary table: one query over all of them, whatever their number */
    if (exec(d, "CREATE TEMP TABLE IF NOT EXISTS pick (run_id INTEGER PRIMARY KEY);"
                "DELETE FROM temp.pick",
             err))
        return TUNE_ERR_IO;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(d->h, "INSERT INTO temp.pick (run_id) VALUES (?1)", -1, &q, NULL) !=
        SQLITE_OK)
        return db_fail(d, err, "reading the bests");
    exec(d, "BEGIN", NULL);
    for (size_t i = 0; i < n_runs; i++) {
        sqlite3_bind_int64(q, 1, run_ids[i]);
        sqlite3_step(q);
        sqlite3_reset(q);
    }
    exec(d, "COMMIT", NULL);
    sqlite3_finalize(q);
    if (sqlite3_prepare_v2(d->h,
                           "SELECT b.run_id, b.series_id, b.time, c.params, s.sweep, s.shape,"
                           " s.method FROM bests b JOIN temp.pick p ON p.run_id = b.run_id"
                           " JOIN configs c ON c.id = b.config_id"
                           " JOIN series s ON s.id = b.series_id"
                           " ORDER BY b.series_id, b.run_id",
                           -1, &q, NULL) != SQLITE_OK)
        return db_fail(d, err, "reading the bests");
    size_t cap = 0, scap = 0;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        long long sid = sqlite3_column_int64(q, 1);
        int new_series = *n_series == 0 || (*series)[*n_series - 1].id != sid;
        if (grow(bests, *n_bests, &cap, 1024, sizeof **bests, d, err) ||
            (new_series && grow(series, *n_series, &scap, 256, sizeof **series, d, err))) {
            st = TUNE_ERR_NOMEM;
            break;
        }
        if (new_series) {
            (*series)[(*n_series)++] = (db_series){sid, col_dup(q, 4), col_dup(q, 5),
                                                   col_dup(q, 6)};
        }
        (*bests)[(*n_bests)++] = (db_best){sqlite3_column_int64(q, 0), sid,
                                           sqlite3_column_double(q, 2), col_dup(q, 3)};
    }
    if (st == TUNE_OK && rc != SQLITE_DONE)
        st = db_fail(d, err, "reading the bests");
    sqlite3_finalize(q);
    if (st != TUNE_OK) {
        db_bests_free(*bests, *n_bests, *series, *n_series);
        *bests = NULL;
        *series = NULL;
        *n_bests = *n_series = 0;
    }
    return st;
}

void db_bests_free(db_best *b, size_t n, db_series *s, size_t n_series)
{
    for (size_t i = 0; i < n; i++)
        free(b[i].winner);
    for (size_t i = 0; i < n_series; i++) {
        free(s[i].sweep);
        free(s[i].shape);
        free(s[i].method);
    }
    free(b);
    free(s);
}
