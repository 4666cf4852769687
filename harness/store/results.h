/* results.h - result rows: one JSON object per line of raw.jsonl, written flushed, read back.
 *
 *   results_writer *w = results_open("results/sparq/20261122T101500Z", &err);
 *   result_row row = {...};
 *   results_write_row(w, &row, &err);
 *   results_close(w);
 *
 *   results_rows rows;
 *   results_read("results/sparq/20261122T101500Z/raw.jsonl", &rows, &err);
 *   report_build(rows.rows, rows.n, ...);   // the rows are views into the set
 *   results_rows_free(&rows);
 *
 * Rows are written to raw.jsonl only; they are read from raw.jsonl or from raw.jsonl.gz (a
 * committed run gzipped by hand), alike: results_locate finds a folder's file, and a folder
 * holding both is refused as ambiguous.
 *
 * A row's JSON object (pandas.read_json(path, lines=True) reads it): "sweep", "family", "op",
 * "method", every problem axis and parameter as its own key (parameters null for baselines),
 * "axes" and "params" (the lists of their names), "status", "reason" (null when ok), "kernel",
 * "time_median", "time_mean", "time_min", "time_max", "time_stdev", "time_stderr", "time_p10",
 * "time_p90", "time_n" (seconds), "bytes", "flops", "bandwidth" (B/s), "flop_rate" (FLOP/s),
 * "pct_read_bw" (0..100 of the measured read bandwidth), "read_bw" (that bandwidth, B/s),
 * "error", "tolerance", "roofline_time", "roofline_fraction", "dram_bytes", "model_time",
 * "timing_mode", "stop_reason",
 * "batch", "clock_sm_mhz", "clock_mem_mhz", "temperature_c", "power_w",
 * "throttle_reasons" (NVML, read right after the timed reps), "throttled" (a slowdown reason was
 * seen before or after the timed reps), "device", "timestamp" (ISO 8601
 * UTC), "schema" (the row format, RESULTS_ROW_SCHEMA; rows written before it was recorded have
 * none and are format 1). Absent measurements are null. Format 2 adds "energy_j" (joules per
 * call, NVML's energy counter, timing.h: timing_energy) and "energy_note" (why a run that measured
 * energy has none for the row), written only when the run measured energy (--energy): rows of
 * format 1 read with energy_j NAN.
 * Keys come in that order; an axis or parameter named like one of the other keys is an error.
 * Reading requires "method", "status", "axes", "params" and every listed axis; other keys may be
 * missing (read as NULL / NAN). A row whose "schema" is newer than RESULTS_ROW_SCHEMA is refused
 * (file:line), before any other key is read: a newer format may give a key another meaning.
 */
#ifndef TUNE_RESULTS_H
#define TUNE_RESULTS_H

#include <stddef.h>

#include "core/error.h"
#include "core/objective.h"
#include "core/point.h"
#include "core/stats.h"

/* The row format this tune writes and the newest it reads. A change that older readers would
 * misread (a key renamed, a unit changed) bumps it. */
#define RESULTS_ROW_SCHEMA 2

typedef enum {
    RESULT_OK = 0,
    RESULT_INVALID,       /* wrong answer against the reference */
    RESULT_COMPILE_ERROR, /* NVRTC failed; reason holds the log */
    RESULT_LAUNCH_ERROR,  /* the launch or a CUDA call around it failed */
    RESULT_CRASHED,       /* sticky device error */
    RESULT_TIMEOUT,       /* watchdog */
    RESULT_SKIPPED,       /* not run: reason says why (out of memory, unsupported) */
    RESULT_COMPILED       /* compile-only run (--compile-only): compiled, not run */
} result_status;

const char *result_status_str(result_status s); /* "ok", "invalid", "compile_error", ... */
int result_status_parse(const char *s, result_status *out); /* 0 or -1 */

typedef struct {
    char *sweep, *family, *op, *method;
    /* values: problem axes first (n_axes of them), then parameters (n_params). A parameter of a
     * baseline row is absent from values (and null in JSON). A row borrows its names and strings:
     * from the caller that fills it to write it, or from the results_rows it was read into. */
    tune_point values;
    size_t n_axes;
    const char *param_names[TUNE_MAX_AXES]; /* all parameter names of the sweep */
    size_t n_params;
    result_status status;
    char *reason; /* NULL when ok */
    char *kernel; /* instantiation or baseline description; may be NULL */
    stats_summary time; /* seconds; time.n == 0 when not measured */
    double bytes, flops, bandwidth, flop_rate, pct_read_bw, read_bw; /* NAN when unknown */
    double error, tolerance;                                       /* NAN when not checked */
    /* roofline time max(bytes / bandwidth, flops / rate, launch) of the run's ceilings (s), and
     * roofline_time / time.median: the fraction of the roofline reached; NAN when unknown */
    double roofline_time, roofline_fraction;
    /* the op's traffic model for the row's method (docs/roofline.md): modelled DRAM bytes, and
     * the additive time model's time (s); NAN when unknown (rows of older runs) */
    double dram_bytes, model_time;
    /* how it was timed (timing.h): mode "cold" | "hot" | "graph", stop "fixed" | "converged" |
     * "max_reps" | "timeout", launches per sample; NULL / 0 when not measured */
    char *timing_mode, *stop_reason;
    int batch;
    /* GPU state read through NVML right after the timed reps: NAN (-1) when unknown */
    double clock_sm_mhz, clock_mem_mhz, temperature_c, power_w;
    long long throttle_reasons;
    int throttled; /* NVML saw a slowdown reason before or after the timed reps (monitor.h) */
    /* joules per call, measured apart from the timed reps (timing.h: timing_energy); NAN when not
     * measured, and then energy_note says why when the run measured energy (else NULL) */
    double energy_j;
    char *energy_note;
    char *device;
    char *timestamp;
} result_row;

/* Rows read back (results_read, results_read_dirs): the set owns the array and every row's names
 * and strings, which its rows borrow; results_rows_free releases them all. */
typedef struct {
    result_row *rows;
    size_t n;
} results_rows;

/* A row with every double NAN and every pointer NULL. */
void result_row_init(result_row *row);

typedef struct results_writer results_writer;

/* Creates dir (and parents) and opens dir/raw.jsonl for appending. New writer or NULL. */
TUNE_MUST_CHECK results_writer *results_open(const char *dir, tune_error *err);
/* Appends one line and flushes it to the OS. TUNE_ERR_INVALID when a value's name is a result
 * key or neither a listed axis nor a parameter. */
TUNE_MUST_CHECK tune_status results_write_row(results_writer *w, const result_row *row,
                                              tune_error *err);
void results_close(results_writer *w);

/* The rows file of the results folder dir into path: dir/raw.jsonl, or dir/raw.jsonl.gz when
 * only that exists (dir/raw.jsonl when neither does); TUNE_ERR_INVALID when both exist
 * (folder_locate). */
TUNE_MUST_CHECK tune_status results_locate(const char *dir, char *path, size_t size,
                                           tune_error *err);
/* Reads every row of a raw.jsonl, or of a gzipped one when path ends in ".gz" (store/folder.h:
 * folder_lines: bounded, a corrupt or truncated file refused naming it); errors name the file and
 * line. *out is new (free with results_rows_free); empty on error. */
TUNE_MUST_CHECK tune_status results_read(const char *path, results_rows *out, tune_error *err);
/* Frees what rows holds and leaves it empty; NULL is a no-op. */
void results_rows_free(results_rows *rows);
/* Reads and concatenates the rows (results_locate) of several results folders (a merged view).
 * *out is new (free with results_rows_free); empty on error. */
TUNE_MUST_CHECK tune_status results_read_dirs(const char *const *dirs, size_t n_dirs,
                                              results_rows *out, tune_error *err);

/* The identity of the row's configuration (core/point.h: point_identity): equal for a row read back and for
 * the configuration of the space it measured. Returns buf. */
const char *results_row_identity(const result_row *row, char *buf, size_t size);

/* The row's cost under obj (core/objective.h) from its median time and energy: NAN when the row is
 * not ok, not timed, or lacks what obj needs. */
double results_row_cost(const result_row *row, tune_objective obj);


/* Keeps the last row of each configuration (results_row_identity) in rows, in order; the others
 * are released and counted in *n_dropped (a row measured twice counts once). */
TUNE_MUST_CHECK tune_status results_rows_dedup(results_rows *rows, size_t *n_dropped,
                                               tune_error *err);

#endif
