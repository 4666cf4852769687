/* test_db.c - the results store (store/db.h): ingest whole or not at all, once, refusals with the
 * file named, migrations, concurrent writers, a writer killed midway. */
#include <criterion/criterion.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/db.h"
#include "util_cpu.h"
#include "util_store.h"

TestSuite(db, .init = make_tmpdir, .fini = remove_tmpdir);

static char store[128];

static db *open_store(void)
{
    snprintf(store, sizeof store, "%s/history.sqlite", tmpdir);
    tune_error err = {0};
    db *d = db_open(store, &err);
    cr_assert_not_null(d, "%s: %s", err.where, err.message);
    return d;
}

static long long count(const char *sql)
{
    sqlite3 *h;
    cr_assert_eq(sqlite3_open_v2(store, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q;
    cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &q, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
    cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
    long long n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(h);
    return n;
}

/* PRAGMA integrity_check's answer (static). */
static const char *integrity(void)
{
    static char text[256];
    sqlite3 *h;
    sqlite3_stmt *q;
    cr_assert_eq(sqlite3_open_v2(store, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &q, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
    snprintf(text, sizeof text, "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    sqlite3_close(h);
    return text;
}

static void run_dir(const char *name, char *dir, size_t size)
{
    snprintf(dir, size, "%s/%s", tmpdir, name);
}

/* The toy run written into tmpdir/r1 (its path into dir) and ingested into a new store (*res:
 * the ingest's answer); the open store. */
static db *store_with_toy(char *dir, size_t size, db_ingest_result *res)
{
    run_dir("r1", dir, size);
    toy_run r = toy_defaults();
    toy_write(dir, &r);
    db *d = open_store();
    tune_error err = {0};
    cr_assert_eq(db_ingest(d, dir, NULL, res, &err), TUNE_OK, "%s", err.message);
    return d;
}

Test(db, ingest_once_whole)
{
    char dir[256];
    db_ingest_result res;
    tune_error err = {0};
    db *d = store_with_toy(dir, sizeof dir, &res);
    cr_expect_eq(res.added, 1);
    cr_expect_eq(res.n_rows, 12);
    cr_expect_str_eq(res.night, "2026-01-01");
    /* again: there once */
    cr_assert_eq(db_ingest(d, dir, NULL, &res, &err), TUNE_OK, "%s", err.message);
    cr_expect_eq(res.added, 0);
    /* the same folder as another night is another run */
    cr_assert_eq(db_ingest(d, dir, "2026-01-05", &res, &err), TUNE_OK, "%s", err.message);
    cr_expect_eq(res.added, 1);
    db_close(d);
    cr_expect_eq(count("SELECT count(*) FROM runs"), 2);
    cr_expect_eq(count("SELECT count(*) FROM results"), 24);
    cr_expect_eq(count("SELECT count(*) FROM series"), 6); /* 3 shapes x (custom, base) */
    cr_expect_eq(count("SELECT count(*) FROM bests"), 12);
    /* the best of shape 0 is chunk=16 (1e-5) */
    cr_expect_eq(count("SELECT count(*) FROM bests b JOIN configs c ON c.id = b.config_id "
                       "WHERE c.params = 'chunk=16'"),
                 6);
    cr_expect_eq(count("SELECT count(*) FROM runs WHERE device_uuid = 'GPU-1' AND driver = "
                       "'580.1' AND kernels_hash = 'k1' AND host = 'node1'"),
                 2);
}

Test(db, changed_contents_refused)
{
    char dir[256];
    db_ingest_result res;
    tune_error err = {0};
    db *d = store_with_toy(dir, sizeof dir, &res);
    toy_run r = toy_defaults();
    r.n_shapes = 4; /* the same run (identity), other rows */
    toy_write(dir, &r);
    cr_assert_eq(db_ingest(d, dir, NULL, &res, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "other contents"), "%s", err.message);
    db_close(d);
    cr_expect_eq(count("SELECT count(*) FROM results"), 12);
}

Test(db, gzipped_rows_and_folder_untouched)
{
    char dir[256], cmd[1024];
    db_ingest_result res;
    tune_error err = {0};
    db *d = store_with_toy(dir, sizeof dir, &res);
    snprintf(cmd, sizeof cmd, "gzip -9n '%s/raw.jsonl' && ls -l --time-style=full-iso '%s' > '%s/before'",
             dir, dir, tmpdir);
    cr_assert_eq(system(cmd), 0);
    /* the same run gzipped is the same run */
    cr_assert_eq(db_ingest(d, dir, NULL, &res, &err), TUNE_OK, "%s", err.message);
    cr_expect_eq(res.added, 0);
    cr_expect_eq(res.n_rows, 12);
    /* gzipped, as another night: read from the .gz */
    cr_assert_eq(db_ingest(d, dir, "2026-01-02", &res, &err), TUNE_OK, "%s", err.message);
    cr_expect_eq(res.added, 1);
    db_close(d);
    snprintf(cmd, sizeof cmd, "ls -l --time-style=full-iso '%s' | cmp -s - '%s/before'", dir, tmpdir);
    cr_expect_eq(system(cmd), 0, "the run folder changed");
    cr_expect_eq(count("SELECT count(*) FROM results"), 24);
}

static void expect_refused(const char *dir, const char *night, const char *what)
{
    db *d = open_store();
    db_ingest_result res;
    tune_error err = {0};
    cr_expect_neq(db_ingest(d, dir, night, &res, &err), TUNE_OK, "accepted: %s", what);
    cr_expect(strstr(err.message, what) || strstr(err.where, what), "'%s' not in %s: %s", what,
              err.where, err.message);
    db_close(d);
    cr_expect_eq(count("SELECT count(*) FROM runs"), 0);
    cr_expect_eq(count("SELECT count(*) FROM results"), 0);
}

Test(db, refusals_name_the_file)
{
    char dir[256], path[300];
    toy_run r = toy_defaults();
    run_dir("unfinished", dir, sizeof dir);
    r.end = 0;
    toy_write(dir, &r);
    expect_refused(dir, NULL, "has not finished");
    r = toy_defaults();
    r.extra_meta = ", \"shard\": {\"index\": 0, \"count\": 2}";
    run_dir("shard", dir, sizeof dir);
    toy_write(dir, &r);
    expect_refused(dir, NULL, "ingest the merged folder");
    r.extra_meta = ", \"compile_only\": {\"arch\": \"sm_90\"}";
    run_dir("compile", dir, sizeof dir);
    toy_write(dir, &r);
    expect_refused(dir, NULL, "compile-only");
    r.extra_meta = "";
    run_dir("nometa", dir, sizeof dir);
    toy_write(dir, &r);
    snprintf(path, sizeof path, "%s/meta.json", dir);
    unlink(path);
    expect_refused(dir, NULL, "no meta.json");
    run_dir("badnight", dir, sizeof dir);
    toy_write(dir, &r);
    expect_refused(dir, "2026-02-30", "2026-02-30");
    /* a row of a newer format: file and line */
    run_dir("newer", dir, sizeof dir);
    toy_write(dir, &r);
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    FILE *f = fopen(path, "a");
    fputs("{\"sweep\":\"toy\",\"method\":\"custom\",\"n\":1,\"chunk\":1,\"axes\":[\"n\"],"
          "\"params\":[\"chunk\"],\"status\":\"ok\",\"schema\":9}\n",
          f);
    fclose(f);
    expect_refused(dir, NULL, "raw.jsonl:13");
    /* a malformed line */
    run_dir("broken", dir, sizeof dir);
    toy_write(dir, &r);
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    f = fopen(path, "a");
    fputs("{\"sweep\": \n", f);
    fclose(f);
    expect_refused(dir, NULL, "raw.jsonl:13");
    /* meta.json of a newer schema */
    run_dir("newmeta", dir, sizeof dir);
    toy_write(dir, &r);
    snprintf(path, sizeof path, "%s/meta.json", dir);
    f = fopen(path, "w");
    fputs("{\"schema_version\": 99}\n", f);
    fclose(f);
    expect_refused(dir, NULL, "meta.json");
}

Test(db, stores_refused)
{
    char path[256];
    tune_error err = {0};
    snprintf(path, sizeof path, "%s/folder", tmpdir);
    mkdir(path, 0755);
    cr_expect_null(db_open(path, &err));
    cr_expect(strstr(err.message, "regular file"), "%s", err.message);
    char target[256];
    write_file("target", "precious\n", target, sizeof target);
    snprintf(path, sizeof path, "%s/link.sqlite", tmpdir);
    cr_assert_eq(symlink(target, path), 0);
    tune_error_clear(&err);
    cr_expect_null(db_open(path, &err));
    cr_expect(strstr(err.message, "symbolic link"), "%s", err.message);
    write_file("text.sqlite", "this is not a database, just a long enough text file to be read as one\n",
               path, sizeof path);
    tune_error_clear(&err);
    cr_expect_null(db_open(path, &err));
    cr_expect(strstr(err.message, "not a tune results store"), "%s", err.message);
    /* an SQLite file of someone else's */
    snprintf(path, sizeof path, "%s/other.sqlite", tmpdir);
    sqlite3 *h;
    cr_assert_eq(sqlite3_open(path, &h), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(h, "CREATE TABLE t (x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    tune_error_clear(&err);
    cr_expect_null(db_open(path, &err));
    cr_expect(strstr(err.message, "store_info"), "%s", err.message);
    /* a store of a newer schema */
    db_close(open_store());
    cr_assert_eq(sqlite3_open(store, &h), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(h, "UPDATE store_info SET value = '99'", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    tune_error_clear(&err);
    cr_expect_null(db_open(store, &err));
    cr_expect(strstr(err.message, "newer"), "%s", err.message);
    tune_error_clear(&err);
    cr_expect_null(db_open_readonly(store, &err));
    /* reading never makes a store */
    snprintf(path, sizeof path, "%s/absent.sqlite", tmpdir);
    tune_error_clear(&err);
    cr_expect_null(db_open_readonly(path, &err));
    cr_expect_neq(access(path, F_OK), 0);
    FILE *f = fopen(target, "r");
    char text[32] = "";
    cr_assert(fgets(text, sizeof text, f));
    fclose(f);
    cr_expect_str_eq(text, "precious\n");
}

/* The store made an older schema by sql, which a reader then refuses as older. */
#define DROP_ENERGY                                                                                \
    "ALTER TABLE results DROP COLUMN energy_j; ALTER TABLE results DROP COLUMN energy_note; "
static void downgrade(const char *sql)
{
    sqlite3 *h;
    tune_error err = {0};
    cr_assert_eq(sqlite3_open(store, &h), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
    sqlite3_close(h);
    cr_expect_null(db_open_readonly(store, &err));
    cr_expect(strstr(err.message, "older"), "%s", err.message);
}

Test(db, migrates_v1)
{
    char dir[256];
    db_ingest_result res;
    db_close(store_with_toy(dir, sizeof dir, &res));
    /* schema 1 is schema 2 without the bests, schema 2 schema 3 without the energy */
    downgrade("DROP TABLE bests; " DROP_ENERGY "UPDATE store_info SET value = '1'");
    db_close(open_store());
    cr_expect_eq(count("SELECT value FROM store_info WHERE key = 'schema_version'"),
                 DB_SCHEMA_VERSION);
    cr_expect_eq(count("SELECT count(*) FROM bests"), 6);
    cr_expect_eq(count("SELECT count(*) FROM bests b JOIN configs c ON c.id = b.config_id "
                       "WHERE c.params = 'chunk=16'"),
                 3);
}

static double toy_energy(int i, int j, void *ctx)
{
    (void)ctx;
    return 1e-3 * (1 + i) * (3 - j);
}

Test(db, migrates_v2_energy)
{
    char dir[256];
    db_ingest_result res;
    tune_error err = {0};
    db_close(store_with_toy(dir, sizeof dir, &res));
    /* schema 2 is schema 3 without the energy columns */
    downgrade(DROP_ENERGY "UPDATE store_info SET value = '2'");
    db *d = open_store();
    cr_expect_eq(count("SELECT value FROM store_info WHERE key = 'schema_version'"),
                 DB_SCHEMA_VERSION);
    /* the rows stored before keep their times, with no energy */
    cr_expect_eq(count("SELECT count(*) FROM results WHERE time_median IS NOT NULL"), 12);
    cr_expect_eq(count("SELECT count(*) FROM results WHERE energy_j IS NOT NULL"), 0);
    /* a run whose rows carry energy keeps it */
    char dir2[256];
    run_dir("r2", dir2, sizeof dir2);
    toy_run r = toy_defaults();
    r.start = "2026-01-02T02:00:00Z";
    r.energy = toy_energy;
    toy_write(dir2, &r);
    cr_assert_eq(db_ingest(d, dir2, NULL, &res, &err), TUNE_OK, "%s", err.message);
    db_close(d);
    cr_expect_eq(count("SELECT count(*) FROM results WHERE energy_j IS NOT NULL"), 9);
    cr_expect_eq(count("SELECT round(energy_j * 1e6) FROM results r JOIN configs c ON "
                       "c.id = r.config_id JOIN series s ON s.id = c.series_id WHERE "
                       "energy_j IS NOT NULL AND c.params = 'chunk=16' AND s.shape = 'n=256'"),
                 6000);
}

/* A child process that ingests dir into the store and exits 0, or 1 after saying why. */
static pid_t fork_ingest(const char *dir)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        tune_error err = {0};
        db *d = db_open(store, &err);
        db_ingest_result res;
        int ok = d && db_ingest(d, dir, NULL, &res, &err) == TUNE_OK;
        if (!ok)
            fprintf(stderr, "ingest of %s: %s: %s\n", dir, err.where, err.message);
        db_close(d);
        _exit(ok ? 0 : 1);
    }
    return pid;
}

/* 8 writers at once, two per run: every run lands once, none fails. */
Test(db, concurrent_writers)
{
    char dirs[4][256];
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", i);
        run_dir(name, dirs[i], sizeof dirs[i]);
        toy_run r = toy_defaults();
        r.n_shapes = 200;
        char start[32];
        snprintf(start, sizeof start, "2026-01-0%dT02:00:00Z", i + 1);
        r.start = start;
        toy_write(dirs[i], &r);
    }
    snprintf(store, sizeof store, "%s/history.sqlite", tmpdir);
    pid_t pids[8];
    for (int k = 0; k < 8; k++) {
        pids[k] = fork_ingest(dirs[k % 4]);
    }
    for (int k = 0; k < 8; k++) {
        int status;
        waitpid(pids[k], &status, 0);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d failed", k);
    }
    cr_expect_eq(count("SELECT count(*) FROM runs"), 4);
    cr_expect_eq(count("SELECT count(*) FROM results"), 4 * 200 * 4);
}

/* SIGKILL at several moments of an ingest: the store then holds the run whole or not at all. */
Test(db, killed_ingest_whole_or_nothing, .timeout = 120)
{
    char dir[256];
    run_dir("big", dir, sizeof dir);
    toy_run r = toy_defaults();
    r.n_shapes = 3000;
    r.n_configs = 4;
    toy_write(dir, &r);
    /* how long a whole ingest takes here: the kills land from its start to past its end */
    db *d0 = open_store();
    db_ingest_result res0;
    tune_error err0 = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(db_ingest(d0, dir, NULL, &res0, &err0), TUNE_OK, "%s", err0.message);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    db_close(d0);
    double whole_s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    int whole = 0, none = 0;
    for (int k = 0; k < 12; k++) {
        unlink(store);
        char aux[160];
        snprintf(aux, sizeof aux, "%s-wal", store);
        unlink(aux);
        snprintf(aux, sizeof aux, "%s-shm", store);
        unlink(aux);
        pid_t pid = fork_ingest(dir);
        double at = whole_s * 1.3 * k / 11.0; /* 0 .. 1.3 x the ingest's time */
        struct timespec ts = {(time_t)at, (long)((at - (double)(time_t)at) * 1e9)};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        db_close(open_store()); /* opens, recovers */
        long long runs = count("SELECT count(*) FROM runs");
        long long rows = count("SELECT count(*) FROM results");
        long long n_rows = runs ? count("SELECT n_rows FROM runs") : 0;
        cr_expect(runs == 0 || runs == 1, "%lld runs", runs);
        cr_expect_eq(rows, n_rows, "%lld rows, the run says %lld", rows, n_rows);
        cr_expect_eq(rows, runs * 3000 * 5);
        cr_expect_str_eq(integrity(), "ok");
        whole += runs == 1;
        none += runs == 0;
    }
    /* where each kill lands depends on timing: the test reports how many runs were whole, and
     * fails only when the store was not whole-or-nothing */
    cr_log_info("killed ingests (a whole one takes %.2f s): %d whole, %d none", whole_s, whole,
                none);
}

Test(db, default_path)
{
    char buf[256];
    setenv("TUNE_DB", "/x/env.sqlite", 1);
    cr_expect_str_eq(db_default_path("given.sqlite", "r", buf, sizeof buf), "given.sqlite");
    cr_expect_str_eq(db_default_path(NULL, "r", buf, sizeof buf), "/x/env.sqlite");
    setenv("TUNE_DB", "", 1);
    cr_expect_str_eq(db_default_path(NULL, "r", buf, sizeof buf), "r/history.sqlite");
    unsetenv("TUNE_DB");
    cr_expect_str_eq(db_default_path(NULL, NULL, buf, sizeof buf), "results/history.sqlite");
}

Test(db, nights)
{
    cr_expect(db_valid_night("2024-02-29"));
    cr_expect_not(db_valid_night("2026-02-29"));
    cr_expect_not(db_valid_night("2026-99-99"));
    cr_expect_not(db_valid_night("2026-1-01"));
    cr_expect_not(db_valid_night("2026-01-01x"));
    cr_expect_not(db_valid_night(""));
}
