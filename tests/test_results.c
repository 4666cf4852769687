#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/outfile.h"
#include "store/results.h"
#include "util_cpu.h"

#define FIXTURE "tests/data/results/raw.jsonl"

TestSuite(results, .init = make_tmpdir, .fini = remove_tmpdir);


static char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    static char buf[16384];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static const char *params[] = {"chunk"};

/* A tuned row: axes g (int), dtype (string), parameter chunk. */
static void fill_tuned(result_row *r, int64_t g, int64_t chunk)
{
    result_row_init(r);
    r->sweep = "sparq";
    r->family = "gather_matmul";
    r->op = "bmv";
    r->method = "custom";
    point_set_int(&r->values, "g", g);
    point_set_str(&r->values, "dtype", "float16");
    r->n_axes = 2;
    point_set_int(&r->values, "chunk", chunk);
    r->param_names[0] = params[0];
    r->n_params = 1;
    double t[] = {3e-6, 1e-6, 2e-6};
    stats_summarize(t, 3, &r->time);
    r->bytes = 1e6;
    r->bandwidth = 5e11;
    r->kernel = "k<16>";
    r->device = "H200";
    r->timestamp = "2026-11-22T10:15:00Z";
}

static void write_rows(const result_row *rows, size_t n)
{
    tune_error err = {0};
    results_writer *w = results_open(tmpdir, &err);
    cr_assert_not_null(w, "%s", err.message);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(results_write_row(w, &rows[i], &err), TUNE_OK, "%s", err.message);
    results_close(w);
}

Test(results, round_trip)
{
    result_row in[2];
    fill_tuned(&in[0], 256, 16);
    fill_tuned(&in[1], 1024, 0);
    in[0].clock_sm_mhz = 1980;
    in[0].temperature_c = 41;
    in[0].power_w = 312.5;
    in[0].throttle_reasons = 4;
    in[0].throttled = 1;
    in[1].method = "cublas"; /* a baseline: no parameter value */
    in[1].values.n = 2;
    in[1].status = RESULT_CRASHED;
    in[1].reason = "illegal \"address\"\n";
    stats_summarize(NULL, 0, &in[1].time);
    write_rows(in, 2);

    char path[128];
    snprintf(path, sizeof path, "%s/raw.jsonl", tmpdir);
    results_rows read;
    tune_error err = {0};
    cr_assert_eq(results_read(path, &read, &err), TUNE_OK, "%s", err.message);
    const result_row *out = read.rows;
    size_t n = read.n;
    cr_assert_eq(n, 2);

    cr_expect_str_eq(out[0].sweep, "sparq");
    cr_expect_str_eq(out[0].method, "custom");
    cr_expect_eq(out[0].n_axes, 2);
    cr_expect_eq(out[0].n_params, 1);
    cr_expect_str_eq(out[0].param_names[0], "chunk");
    cr_expect_eq(out[0].values.n, 3);
    cr_expect_eq(point_int(&out[0].values, "g", -1), 256);
    cr_expect_str_eq(point_str(&out[0].values, "dtype", ""), "float16");
    cr_expect_eq(point_int(&out[0].values, "chunk", -1), 16);
    cr_expect_eq(out[0].status, RESULT_OK);
    cr_expect_null(out[0].reason);
    cr_expect_eq(out[0].time.n, 3);
    cr_expect_float_eq(out[0].time.median, 2e-6, 1e-18);
    cr_expect_float_eq(out[0].time.stdev, 1e-6, 1e-18);
    cr_expect_float_eq(out[0].bandwidth, 5e11, 1e-3);
    cr_expect(isnan(out[0].flops));
    cr_expect(isnan(out[0].error));
    cr_expect_str_eq(out[0].kernel, "k<16>");
    cr_expect_str_eq(out[0].timestamp, "2026-11-22T10:15:00Z");
    cr_expect_float_eq(out[0].clock_sm_mhz, 1980, 1e-9);
    cr_expect(isnan(out[0].clock_mem_mhz), "not measured reads back as NAN");
    cr_expect_float_eq(out[0].temperature_c, 41, 1e-9);
    cr_expect_float_eq(out[0].power_w, 312.5, 1e-9);
    cr_expect_eq(out[0].throttle_reasons, 4);
    cr_expect_eq(out[0].throttled, 1);
    cr_expect_eq(out[1].throttled, 0);
    cr_expect_eq(out[1].throttle_reasons, -1);

    cr_expect_str_eq(out[1].method, "cublas");
    cr_expect_eq(out[1].values.n, 2, "a baseline reads back without its parameter");
    cr_expect_eq(out[1].n_params, 1);
    cr_expect_eq(out[1].status, RESULT_CRASHED);
    cr_expect_str_eq(out[1].reason, "illegal \"address\"\n");
    cr_expect_eq(out[1].time.n, 0);
    cr_expect(isnan(out[1].time.median));
    results_rows_free(&read);
    cr_expect(!read.rows && !read.n, "freed: empty");
    results_rows_free(&read);
    results_rows_free(NULL);
}

Test(results, json_layout)
{
    result_row r[2];
    fill_tuned(&r[0], 256, 16);
    fill_tuned(&r[1], 256, 0);
    r[1].values.n = 2;
    write_rows(r, 2);
    char path[128];
    snprintf(path, sizeof path, "%s/raw.jsonl", tmpdir);
    const char *text = read_text(path);
    const char *head = "{\"sweep\":\"sparq\",\"family\":\"gather_matmul\",\"op\":\"bmv\","
                       "\"method\":\"custom\",\"g\":256,\"dtype\":\"float16\",\"chunk\":16,"
                       "\"axes\":[\"g\",\"dtype\"],\"params\":[\"chunk\"],\"status\":\"ok\","
                       "\"reason\":null,";
    cr_expect(strncmp(text, head, strlen(head)) == 0, "got %s", text);
    cr_expect_not_null(strstr(text, "\"flops\":null,"));
    cr_expect_not_null(strstr(text, "\"time_n\":3,"));
    const char *second = strchr(text, '\n');
    cr_assert_not_null(second);
    cr_expect_not_null(strstr(second, "\"chunk\":null,"), "baseline parameters are null");
    cr_expect_eq(strchr(second + 1, '\n')[1], '\0', "exactly one line per row");
}

Test(results, append_across_writers)
{
    result_row r;
    fill_tuned(&r, 256, 16);
    write_rows(&r, 1);
    write_rows(&r, 1);
    char path[128];
    snprintf(path, sizeof path, "%s/raw.jsonl", tmpdir);
    results_rows out;
    cr_assert_eq(results_read(path, &out, NULL), TUNE_OK);
    cr_expect_eq(out.n, 2);
    results_rows_free(&out);
}

Test(results, reserved_name_rejected)
{
    result_row r;
    fill_tuned(&r, 256, 16);
    r.param_names[0] = "status";
    r.values.names[2] = "status";
    tune_error err = {0};
    results_writer *w = results_open(tmpdir, &err);
    cr_assert_not_null(w);
    cr_expect_eq(results_write_row(w, &r, &err), TUNE_ERR_INVALID);
    cr_expect_not_null(strstr(err.message, "'status'"), "%s", err.message);
    results_close(w);
}

Test(results, read_fixture)
{
    results_rows read;
    tune_error err = {0};
    cr_assert_eq(results_read(FIXTURE, &read, &err), TUNE_OK, "%s", err.message);
    const result_row *rows = read.rows;
    cr_expect_eq(read.n, 21);
    cr_expect_eq(rows[1].status, RESULT_INVALID);
    cr_expect_eq(point_int(&rows[1].values, "chunk", -1), 32);
    cr_expect_eq(rows[3].values.n, 5, "gather is a baseline");
    cr_expect_eq(rows[7].status, RESULT_COMPILE_ERROR);
    cr_expect(isnan(rows[7].time.median));
    cr_expect_float_eq(rows[0].bytes, 16777216.0, 0.0);
    results_rows_free(&read);
}

struct bad_case {
    const char *text;
    tune_status code;
    const char *where_suffix;
    const char *message;
};

#define GOOD "{\"method\":\"m\",\"g\":1,\"axes\":[\"g\"],\"params\":[],\"status\":\"ok\"}\n"

Test(results, bad_lines_name_the_line)
{
    struct bad_case cases[] = {
        {GOOD GOOD "{\"method\":\"m\",\"g\":1,\n", TUNE_ERR_PARSE, ":3", "column"},
        {GOOD "{\"method\":\"m\",\"g\":1,\"axes\":[\"g\"],\"params\":[]}\n", TUNE_ERR_INVALID, ":2",
         "missing key 'status'"},
        {GOOD "\n" GOOD "{\"method\":\"m\",\"axes\":[\"g\"],\"params\":[],\"status\":\"ok\"}\n",
         TUNE_ERR_INVALID, ":4", "missing key 'g'"},
        {"{\"method\":\"m\",\"g\":1,\"axes\":[\"g\"],\"params\":[],\"status\":\"fast\"}\n",
         TUNE_ERR_INVALID, ":1", "key 'status'"},
        {"[1, 2]\n", TUNE_ERR_INVALID, ":1", "expected a JSON object"},
        {"{\"method\":\"m\",\"g\":1,\"axes\":[\"g\"],\"params\":[],\"status\":\"ok\","
         "\"time_median\":\"fast\"}\n",
         TUNE_ERR_INVALID, ":1", "key 'time_median'"},
        {"{\"g\":1,\"axes\":[\"g\"],\"params\":[],\"status\":\"ok\"}\n", TUNE_ERR_INVALID, ":1",
         "missing key 'method'"},
    };
    /* each case plain, then gzipped: the same error at the same line of raw.jsonl.gz */
    for (size_t k = 0; k < 2 * sizeof cases / sizeof *cases; k++) {
        size_t i = k % (sizeof cases / sizeof *cases), gz = k >= sizeof cases / sizeof *cases;
        char path[128], name[32];
        snprintf(name, sizeof name, "bad%zu.jsonl%s", i, gz ? ".gz" : "");
        if (gz)
            write_gz(name, cases[i].text, path, sizeof path);
        else
            write_file(name, cases[i].text, path, sizeof path);
        results_rows rows = {(void *)1, 7};
        tune_error err = {0};
        cr_expect_eq(results_read(path, &rows, &err), cases[i].code, "case %zu", i);
        cr_expect_null(rows.rows);
        cr_expect_eq(rows.n, 0);
        size_t wl = strlen(err.where), sl = strlen(cases[i].where_suffix);
        cr_expect(wl > sl && strcmp(err.where + wl - sl, cases[i].where_suffix) == 0 &&
                      strncmp(err.where, path, strlen(path)) == 0 && wl == strlen(path) + sl,
                  "case %zu: where '%s'", i, err.where);
        cr_expect_not_null(strstr(err.message, cases[i].message), "case %zu: message '%s'", i,
                           err.message);
    }
}

/* The fixture's rows in tmpdir/name/raw.jsonl, or gzipped in raw.jsonl.gz; the folder into dir. */
static void fixture_folder(const char *name, int gz, char *dir, size_t size)
{
    snprintf(dir, size, "%s/%s", tmpdir, name);
    cr_assert_eq(outfile_mkdirs(dir, NULL), TUNE_OK);
    char file[256], path[512];
    snprintf(file, sizeof file, "%s/raw.jsonl%s", name, gz ? ".gz" : "");
    if (gz)
        write_gz(file, read_text(FIXTURE), path, sizeof path);
    else
        write_file(file, read_text(FIXTURE), path, sizeof path);
}

Test(results, a_gzipped_folder_reads_the_rows_of_its_plain_twin)
{
    char plain[256], gz[256], path[512];
    fixture_folder("plain", 0, plain, sizeof plain);
    fixture_folder("gz", 1, gz, sizeof gz);
    tune_error err = {0};
    cr_assert_eq(results_locate(gz, path, sizeof path, &err), TUNE_OK);
    cr_expect(strstr(path, "/gz/raw.jsonl.gz") != NULL, "%s", path);
    results_rows ra, rb;
    const char *pd[] = {plain}, *gd[] = {gz};
    cr_assert_eq(results_read_dirs(pd, 1, &ra, &err), TUNE_OK, "%s", err.message);
    cr_assert_eq(results_read_dirs(gd, 1, &rb, &err), TUNE_OK, "%s", err.message);
    const result_row *a = ra.rows, *b = rb.rows;
    size_t na = ra.n, nb = rb.n;
    cr_assert_eq(na, 21);
    cr_assert_eq(nb, na);
    for (size_t i = 0; i < na; i++) {
        char ia[4096], ib[4096];
        cr_expect_str_eq(results_row_identity(&b[i], ib, sizeof ib),
                         results_row_identity(&a[i], ia, sizeof ia), "row %zu", i);
        cr_expect_eq(b[i].status, a[i].status, "row %zu", i);
        cr_expect(b[i].time.median == a[i].time.median ||
                      (isnan(b[i].time.median) && isnan(a[i].time.median)),
                  "row %zu", i);
    }
    results_rows_free(&ra);
    results_rows_free(&rb);
}

Test(results, both_files_are_ambiguous)
{
    char dir[256], path[512];
    fixture_folder("both", 1, dir, sizeof dir);
    write_file("both/raw.jsonl", read_text(FIXTURE), path, sizeof path);
    results_rows rows = {(void *)1, 3};
    tune_error err = {0};
    const char *dirs[] = {dir};
    cr_expect_eq(results_read_dirs(dirs, 1, &rows, &err), TUNE_ERR_INVALID);
    cr_expect_null(rows.rows);
    cr_expect_eq(rows.n, 0);
    cr_expect_str_eq(err.where, dir);
    cr_expect(strstr(err.message, "both raw.jsonl and raw.jsonl.gz") != NULL, "%s", err.message);
    cr_expect(strstr(err.message, "ambiguous") != NULL, "%s", err.message);
}

Test(results, a_truncated_or_corrupt_gz_is_one_error_naming_it)
{
    char dir[256], path[512];
    fixture_folder("cut", 1, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/raw.jsonl.gz", dir);
    truncate_file(path, file_size(path) * 2 / 3);
    results_rows rows = {(void *)1, 3};
    tune_error err = {0};
    const char *dirs[] = {dir};
    cr_expect_eq(results_read_dirs(dirs, 1, &rows, &err), TUNE_ERR_INVALID);
    cr_expect_null(rows.rows);
    cr_expect_eq(rows.n, 0);
    cr_expect_str_eq(err.where, path);
    cr_expect(strncmp(err.message, "truncated gzip file: the compressed data ends early (in line ",
                      61) == 0, "%s", err.message);
    /* a byte of the compressed data flipped: garbage rows, or a bad stream, or a bad checksum;
     * whichever shows first, the error says the file is corrupt */
    for (long at = 40; at < file_size(path) - 8; at += 97) {
        fixture_folder("flip", 1, dir, sizeof dir);
        snprintf(path, sizeof path, "%s/raw.jsonl.gz", dir);
        flip_byte(path, at);
        tune_error e = {0};
        const char *d[] = {dir};
        cr_expect_eq(results_read_dirs(d, 1, &rows, &e), TUNE_ERR_INVALID, "byte %ld", at);
        cr_expect_str_eq(e.where, path, "byte %ld", at);
        cr_expect(strncmp(e.message, "corrupt gzip file: ", 19) == 0, "byte %ld: %s", at,
                  e.message);
        results_rows_free(&rows);
    }
}

Test(results, missing_file)
{
    results_rows rows;
    tune_error err = {0};
    cr_expect_eq(results_read("/nonexistent/raw.jsonl", &rows, &err), TUNE_ERR_IO);
    cr_expect_str_eq(err.where, "/nonexistent/raw.jsonl");
}

Test(results, mkdirs)
{
    char dir[200], file[160];
    snprintf(dir, sizeof dir, "%s/a//b/c/", tmpdir);
    cr_expect_eq(outfile_mkdirs(dir, NULL), TUNE_OK);
    cr_expect_eq(outfile_mkdirs(dir, NULL), TUNE_OK, "existing directories are fine");
    snprintf(dir, sizeof dir, "%s/a/b/c", tmpdir);
    struct stat st;
    cr_expect(stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
    write_file("f", "x", file, sizeof file);
    snprintf(dir, sizeof dir, "%s/d", file);
    tune_error err = {0};
    cr_expect_eq(outfile_mkdirs(dir, &err), TUNE_ERR_IO);
    cr_expect_eq(outfile_mkdirs(file, NULL), TUNE_ERR_IO, "a file is not a directory");
    cr_expect_eq(outfile_mkdirs("", NULL), TUNE_ERR_INVALID);
}

Test(results, status_names)
{
    for (int s = RESULT_OK; s <= RESULT_SKIPPED; s++) {
        result_status back;
        cr_expect_eq(result_status_parse(result_status_str((result_status)s), &back), 0);
        cr_expect_eq(back, s);
    }
    cr_expect_str_eq(result_status_str(RESULT_COMPILE_ERROR), "compile_error");
    result_status back;
    cr_expect_eq(result_status_parse("nope", &back), -1);
}

/* The rows file <prefix><i>.jsonl with text is refused at its line 2 with a message holding msg. */
static void expect_refused_at_line_2(const char *prefix, size_t i, const char *text,
                                     const char *msg)
{
    char path[128], name[32], where[160];
    snprintf(name, sizeof name, "%s%zu.jsonl", prefix, i);
    write_file(name, text, path, sizeof path);
    results_rows rows;
    tune_error err = {0};
    cr_expect_eq(results_read(path, &rows, &err), TUNE_ERR_INVALID, "%s: case %zu", prefix, i);
    snprintf(where, sizeof where, "%s:2", path);
    cr_expect_str_eq(err.where, where);
    cr_expect_not_null(strstr(err.message, msg), "%s: case %zu: %s", prefix, i, err.message);
}

/* Times are never negative, an ok row's median never zero: a damaged row would win every table. */
Test(results, bad_times_name_the_line)
{
    const char *texts[] = {
        GOOD "{\"method\":\"m\",\"g\":1,\"axes\":[\"g\"],\"params\":[],\"status\":\"ok\","
             "\"time_median\":-1e-6}\n",
        GOOD "{\"method\":\"m\",\"g\":1,\"axes\":[\"g\"],\"params\":[],\"status\":\"ok\","
             "\"time_median\":1e-6,\"time_min\":-2}\n",
        GOOD "{\"method\":\"m\",\"g\":1,\"axes\":[\"g\"],\"params\":[],\"status\":\"ok\","
             "\"time_median\":0}\n",
    };
    const char *msgs[] = {"key 'time_median': expected a time in seconds >= 0",
                          "key 'time_min': expected a time in seconds >= 0",
                          "key 'time_median': an ok row needs a time in seconds > 0"};
    for (size_t i = 0; i < 3; i++)
        expect_refused_at_line_2("time", i, texts[i], msgs[i]);
}

/* Rows carry their format ("schema"); a row of a newer format is refused before its other keys
 * are read (they may mean something else there), naming the file and line; rows without one
 * (written before it was recorded) are format 1. */
Test(results, row_schema)
{
    result_row r;
    fill_tuned(&r, 256, 16);
    write_rows(&r, 1);
    char path[128];
    snprintf(path, sizeof path, "%s/raw.jsonl", tmpdir);
    char want[32];
    snprintf(want, sizeof want, ",\"schema\":%d}\n", RESULTS_ROW_SCHEMA);
    cr_expect_not_null(strstr(read_text(path), want), "the writer records the row format");
    const char *texts[] = {
        GOOD "{\"method\":\"m\",\"g\":1,\"axes\":[\"g\"],\"params\":[],\"status\":\"ok\","
             "\"time_median\":1e-6,\"schema\":3}\n",
        GOOD "{\"schema\":99,\"method\":\"m\",\"g\":1,\"axes\":[\"g\"],\"params\":[],"
             "\"status\":\"ok\",\"time_median\":-1e-6,\"renamed\":1}\n",
        GOOD "{\"method\":\"m\",\"g\":1,\"axes\":[\"g\"],\"params\":[],\"status\":\"ok\","
             "\"time_median\":1e-6,\"schema\":\"1\"}\n",
    };
    const char *msgs[] = {"key 'schema': row format 3 is newer than this tune reads (2)",
                          "key 'schema': row format 99 is newer than this tune reads (2)",
                          "key 'schema': expected an integer >= 1"};
    for (size_t i = 0; i < 3; i++)
        expect_refused_at_line_2("schema", i, texts[i], msgs[i]);
    /* format 1, given or not */
    write_file("schema_ok.jsonl",
               GOOD "{\"method\":\"m\",\"g\":1,\"axes\":[\"g\"],\"params\":[],\"status\":\"ok\","
                    "\"time_median\":1e-6,\"schema\":1}\n",
               path, sizeof path);
    results_rows rows;
    tune_error err = {0};
    cr_expect_eq(results_read(path, &rows, &err), TUNE_OK, "%s", err.message);
    cr_expect_eq(rows.n, 2);
    results_rows_free(&rows);
}

/* Format 2's energy: written when measured, or with its note when a run measured energy but the
 * row has none; read back; absent (format 1) reads as NAN; a damaged value names the line. */
Test(results, energy_round_trip)
{
    result_row in[3];
    fill_tuned(&in[0], 256, 16);
    in[0].energy_j = 2.5e-3;
    fill_tuned(&in[1], 256, 32);
    in[1].energy_note = "NVML has no energy counter on this device";
    fill_tuned(&in[2], 256, 64);
    write_rows(in, 3);
    char path[128];
    snprintf(path, sizeof path, "%s/raw.jsonl", tmpdir);
    const char *text = read_text(path);
    cr_expect_not_null(strstr(text, "\"energy_j\":0.0025"));
    cr_expect_not_null(strstr(text, ",\"energy_note\":null"));
    cr_expect_not_null(strstr(text, "\"energy_j\":null,\"energy_note\":\"NVML has no"));
    results_rows read;
    tune_error err = {0};
    cr_assert_eq(results_read(path, &read, &err), TUNE_OK, "%s", err.message);
    cr_assert_eq(read.n, 3);
    const result_row *rows = read.rows;
    cr_expect_float_eq(rows[0].energy_j, 2.5e-3, 1e-12);
    cr_expect_null(rows[0].energy_note);
    cr_expect(isnan(rows[1].energy_j));
    cr_expect_str_eq(rows[1].energy_note, "NVML has no energy counter on this device");
    cr_expect(isnan(rows[2].energy_j), "a row of a run without energy has none");
    cr_expect_float_eq(results_row_cost(&rows[0], OBJECTIVE_EDP), 2.5e-3 * 2e-6, 1e-15);
    cr_expect(isnan(results_row_cost(&rows[1], OBJECTIVE_ENERGY)));
    cr_expect_float_eq(results_row_cost(&rows[1], OBJECTIVE_TIME), 2e-6, 1e-15);
    results_rows_free(&read);
    const char *bad[] = {
        GOOD "{\"method\":\"m\",\"g\":1,\"axes\":[\"g\"],\"params\":[],\"status\":\"ok\","
             "\"time_median\":1e-6,\"energy_j\":-1,\"schema\":2}\n",
        GOOD "{\"method\":\"m\",\"g\":1,\"axes\":[\"g\"],\"params\":[],\"status\":\"ok\","
             "\"time_median\":1e-6,\"energy_j\":\"1 mJ\",\"schema\":2}\n",
    };
    expect_refused_at_line_2("energy", 0, bad[0], "key 'energy_j': expected joules per call > 0");
    expect_refused_at_line_2("energy", 1, bad[1], "energy_j");
}

/* The objectives' names, and what each needs of a call. */
Test(results, objective_costs)
{
    tune_objective o = OBJECTIVE_TIME;
    const char *names[] = {"time", "energy", "edp"};
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(objective_parse(names[i], &o), 0);
        cr_expect_eq((int)o, i);
        cr_expect_str_eq(objective_name(o), names[i]);
    }
    cr_expect_eq(objective_parse("power", &o), -1);
    cr_expect_eq(objective_parse(NULL, &o), -1);
    cr_expect_eq(o, OBJECTIVE_EDP, "unchanged by a refused name");
    cr_expect_float_eq(objective_cost(OBJECTIVE_TIME, 2e-6, NAN), 2e-6, 1e-18);
    cr_expect(isnan(objective_cost(OBJECTIVE_ENERGY, 2e-6, NAN)));
    cr_expect(isnan(objective_cost(OBJECTIVE_EDP, NAN, 1e-3)));
    cr_expect(isnan(objective_cost(OBJECTIVE_ENERGY, 2e-6, 0)), "zero energy is not a measure");
    cr_expect_float_eq(objective_cost(OBJECTIVE_EDP, 2e-6, 1e-3), 2e-9, 1e-21);
    cr_expect(objective_needs_energy(OBJECTIVE_EDP) && !objective_needs_energy(OBJECTIVE_TIME));
}

/* A configuration measured twice counts once: the last row is kept. */
Test(results, dedup_keeps_the_last_row)
{
    char path[128];
    write_file("dup.jsonl",
               "{\"method\":\"m\",\"g\":1,\"axes\":[\"g\"],\"params\":[],\"status\":\"crashed\"}\n"
               "{\"method\":\"m\",\"g\":2,\"axes\":[\"g\"],\"params\":[],\"status\":\"ok\"}\n"
               "{\"method\":\"m\",\"g\":1,\"axes\":[\"g\"],\"params\":[],\"status\":\"ok\"}\n",
               path, sizeof path);
    results_rows rows;
    size_t dropped;
    tune_error err = {0};
    cr_assert_eq(results_read(path, &rows, &err), TUNE_OK, "%s", err.message);
    cr_assert_eq(results_rows_dedup(&rows, &dropped, &err), TUNE_OK);
    cr_expect_eq(rows.n, 2);
    cr_expect_eq(dropped, 1);
    cr_expect_eq(rows.rows[0].status, RESULT_OK);
    cr_expect_eq(rows.rows[1].status, RESULT_OK, "g=1's last row (ok) is kept, after g=2");
    results_rows_free(&rows);
}

/* A FIFO or a device as raw.jsonl is refused at once (it would hang or eat all memory). */
Test(results, not_a_regular_file, .timeout = 10)
{
    tune_error err = {0};
    results_rows rows;
    cr_expect_eq(results_read("/dev/zero", &rows, &err), TUNE_ERR_IO);
    cr_expect_str_eq(err.message, "not a regular file (a character device)");
}

/* results_read's status must be used (core/error.h: TUNE_MUST_CHECK): a caller that drops it
 * does not compile with -Werror, one that checks it does. */
Test(results, a_dropped_status_does_not_compile)
{
    static const char *const bodies[] = {
        "results_rows r; results_read(\"x\", &r, NULL);",
        "results_rows r; if (results_read(\"x\", &r, NULL) == TUNE_OK) results_rows_free(&r);",
    };
    for (int i = 0; i < 2; i++) {
        char src[256], cmd[1024];
        snprintf(src, sizeof src, "%s/must_check%d.c", tmpdir, i);
        FILE *f = fopen(src, "w");
        cr_assert_not_null(f);
        fprintf(f, "#include \"store/results.h\"\nvoid f(void);\nvoid f(void) { %s }\n", bodies[i]);
        fclose(f);
        snprintf(cmd, sizeof cmd,
                 "cc -std=gnu17 -Werror -c -o /dev/null -I'%s/harness' '%s' 2>/dev/null",
                 TUNE_SOURCE_DIR, src);
        cr_expect_eq(system(cmd) == 0, i == 1, "%s", bodies[i]);
    }
}
