#include "store/results.h"

#include "core/outfile.h"
#include "core/infile.h"
#include "store/folder.h"

#include <limits.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>


static const char *const results_status_names[] = {
    "ok", "invalid", "compile_error", "launch_error", "crashed", "timeout", "skipped", "compiled",
};
/* A row is one JSON document: a line is bounded like a JSON file (a gzip bomb's one endless line
 * is refused after that many bytes, never held whole). */
#define RESULTS_MAX_LINE INFILE_MAX_JSON

#define RESULTS_N_STATUS (sizeof results_status_names / sizeof *results_status_names)

/* Keys of every row; a problem axis or parameter must not take one of these names. */
static const char *const results_reserved[] = {
    "sweep",       "family",      "op",          "method",    "axes",      "params",   "status",
    "reason",      "kernel",      "time_median", "time_mean", "time_min",  "time_max", "time_stdev",
    "time_stderr", "time_p10",    "time_p90",    "time_n",    "bytes",     "flops",    "bandwidth",
    "flop_rate",   "pct_read_bw", "read_bw",     "error",     "tolerance", "device",   "timestamp",
    "clock_sm_mhz", "clock_mem_mhz", "temperature_c", "power_w", "throttle_reasons",
    "roofline_time", "roofline_fraction", "timing_mode", "stop_reason", "batch", "throttled",
    "schema", "dram_bytes", "model_time", "energy_j", "energy_note",
};

const char *result_status_str(result_status s)
{
    return (size_t)s < RESULTS_N_STATUS ? results_status_names[s] : "unknown";
}

int result_status_parse(const char *s, result_status *out)
{
    for (size_t i = 0; s && i < RESULTS_N_STATUS; i++) {
        if (strcmp(s, results_status_names[i]) == 0) {
            *out = (result_status)i;
            return 0;
        }
    }
    return -1;
}

void result_row_init(result_row *row)
{
    memset(row, 0, sizeof *row);
    stats_summarize(NULL, 0, &row->time);
    row->bytes = row->flops = row->bandwidth = row->flop_rate = NAN;
    row->pct_read_bw = row->read_bw = row->error = row->tolerance = NAN;
    row->clock_sm_mhz = row->clock_mem_mhz = row->temperature_c = row->power_w = NAN;
    row->roofline_time = row->roofline_fraction = NAN;
    row->dram_bytes = row->model_time = row->energy_j = NAN;
    row->throttle_reasons = -1;
}

double results_row_cost(const result_row *row, tune_objective obj)
{
    if (row->status != RESULT_OK || row->time.n == 0)
        return NAN;
    return objective_cost(obj, row->time.median, row->energy_j);
}

/* ---- row -> JSON ---- */

/* Adds v (a new reference, may be NULL after a failed allocation) to o; counts failures. */
static void results_put(json_t *o, const char *key, json_t *v, int *failed)
{
    if (!v || json_object_set_new(o, key, v) != 0)
        *failed = 1;
}

/* A JSON string; bytes that are not valid UTF-8 (a compiler log may hold some) become '?'. */
static json_t *results_json_str(const char *s)
{
    if (!s)
        return json_null();
    json_t *j = json_string(s);
    if (j)
        return j;
    char *copy = strdup(s);
    if (!copy)
        return NULL;
    for (char *c = copy; *c; c++)
        if ((unsigned char)*c >= 0x80)
            *c = '?';
    j = json_string(copy);
    free(copy);
    return j;
}

/* As outfile_json_value, but a missing string is null (a row's NULL text field). */
static json_t *results_json_value(expr_value v)
{
    return v.type == EXPR_STR ? results_json_str(v.s) : outfile_json_value(v);
}

static int results_is_reserved(const char *name)
{
    for (size_t i = 0; i < sizeof results_reserved / sizeof *results_reserved; i++)
        if (strcmp(name, results_reserved[i]) == 0)
            return 1;
    return 0;
}

static int results_is_param(const result_row *row, const char *name)
{
    for (size_t j = 0; j < row->n_params; j++)
        if (strcmp(row->param_names[j], name) == 0)
            return 1;
    return 0;
}

static tune_status results_check_names(const result_row *row, tune_error *err)
{
    if (row->n_axes > row->values.n || row->n_params > TUNE_MAX_AXES)
        return tune_error_set(err, TUNE_ERR_INVALID, "results",
                              "inconsistent row: %zu axes, %zu values, %zu parameters", row->n_axes,
                              row->values.n, row->n_params);
    for (size_t i = 0; i < row->values.n + row->n_params; i++) {
        const char *name =
            i < row->values.n ? row->values.names[i] : row->param_names[i - row->values.n];
        if (results_is_reserved(name))
            return tune_error_set(err, TUNE_ERR_INVALID, "results",
                                  "axis or parameter '%s' has the name of a result key", name);
        if (i >= row->n_axes && i < row->values.n && !results_is_param(row, name))
            return tune_error_set(err, TUNE_ERR_INVALID, "results",
                                  "value '%s' is neither a problem axis nor a parameter", name);
    }
    return TUNE_OK;
}

static void results_put_names(json_t *o, const result_row *row, int *failed)
{
    json_t *axes = json_array(), *params = json_array();
    for (size_t i = 0; axes && i < row->n_axes; i++)
        if (json_array_append_new(axes, json_string(row->values.names[i])) != 0)
            *failed = 1;
    for (size_t j = 0; params && j < row->n_params; j++)
        if (json_array_append_new(params, json_string(row->param_names[j])) != 0)
            *failed = 1;
    results_put(o, "axes", axes, failed);
    results_put(o, "params", params, failed);
}

static void results_put_values(json_t *o, const result_row *row, int *failed)
{
    for (size_t i = 0; i < row->n_axes; i++)
        results_put(o, row->values.names[i], results_json_value(row->values.vals[i]), failed);
    for (size_t j = 0; j < row->n_params; j++) {
        expr_value v;
        json_t *jv = point_get(&row->values, row->param_names[j], &v) == 0 ? results_json_value(v)
                                                                           : json_null();
        results_put(o, row->param_names[j], jv, failed);
    }
}

static void results_put_time(json_t *o, const stats_summary *t, int *failed)
{
    int m = t->n > 0;
    results_put(o, "time_median", outfile_json_number(m ? t->median : NAN), failed);
    results_put(o, "time_mean", outfile_json_number(m ? t->mean : NAN), failed);
    results_put(o, "time_min", outfile_json_number(m ? t->min : NAN), failed);
    results_put(o, "time_max", outfile_json_number(m ? t->max : NAN), failed);
    results_put(o, "time_stdev", outfile_json_number(m ? t->stdev : NAN), failed);
    results_put(o, "time_stderr", outfile_json_number(m ? t->std_err : NAN), failed);
    results_put(o, "time_p10", outfile_json_number(m ? t->p10 : NAN), failed);
    results_put(o, "time_p90", outfile_json_number(m ? t->p90 : NAN), failed);
    results_put(o, "time_n", json_integer((json_int_t)t->n), failed);
}

static void results_put_measures(json_t *o, const result_row *row, int *failed)
{
    results_put(o, "bytes", outfile_json_number(row->bytes), failed);
    results_put(o, "flops", outfile_json_number(row->flops), failed);
    results_put(o, "bandwidth", outfile_json_number(row->bandwidth), failed);
    results_put(o, "flop_rate", outfile_json_number(row->flop_rate), failed);
    results_put(o, "pct_read_bw", outfile_json_number(row->pct_read_bw), failed);
    results_put(o, "read_bw", outfile_json_number(row->read_bw), failed);
    results_put(o, "error", outfile_json_number(row->error), failed);
    results_put(o, "tolerance", outfile_json_number(row->tolerance), failed);
    results_put(o, "roofline_time", outfile_json_number(row->roofline_time), failed);
    results_put(o, "roofline_fraction", outfile_json_number(row->roofline_fraction), failed);
    if (isfinite(row->dram_bytes) || isfinite(row->model_time)) {
        results_put(o, "dram_bytes", outfile_json_number(row->dram_bytes), failed);
        results_put(o, "model_time", outfile_json_number(row->model_time), failed);
    }
    results_put(o, "clock_sm_mhz", outfile_json_number(row->clock_sm_mhz), failed);
    results_put(o, "clock_mem_mhz", outfile_json_number(row->clock_mem_mhz), failed);
    results_put(o, "temperature_c", outfile_json_number(row->temperature_c), failed);
    results_put(o, "power_w", outfile_json_number(row->power_w), failed);
    results_put(o, "throttle_reasons",
                row->throttle_reasons >= 0 ? json_integer(row->throttle_reasons) : json_null(),
                failed);
    results_put(o, "throttled", json_boolean(row->throttled), failed);
    if (isfinite(row->energy_j) || row->energy_note) {
        results_put(o, "energy_j", outfile_json_number(row->energy_j), failed);
        results_put(o, "energy_note", results_json_str(row->energy_note), failed);
    }
    results_put(o, "timing_mode", results_json_str(row->timing_mode), failed);
    results_put(o, "stop_reason", results_json_str(row->stop_reason), failed);
    results_put(o, "batch", row->batch > 0 ? json_integer(row->batch) : json_null(), failed);
}

/* New JSON object for row, keys in the documented order; NULL with err set. */
static json_t *results_row_to_json(const result_row *row, tune_error *err)
{
    if (results_check_names(row, err) != TUNE_OK)
        return NULL;
    json_t *o = json_object();
    int failed = !o;
    if (failed)
        goto done;
    results_put(o, "sweep", results_json_str(row->sweep), &failed);
    results_put(o, "family", results_json_str(row->family), &failed);
    results_put(o, "op", results_json_str(row->op), &failed);
    results_put(o, "method", results_json_str(row->method), &failed);
    results_put_values(o, row, &failed);
    results_put_names(o, row, &failed);
    results_put(o, "status", json_string(result_status_str(row->status)), &failed);
    results_put(o, "reason", results_json_str(row->reason), &failed);
    results_put(o, "kernel", results_json_str(row->kernel), &failed);
    results_put_time(o, &row->time, &failed);
    results_put_measures(o, row, &failed);
    results_put(o, "device", results_json_str(row->device), &failed);
    results_put(o, "timestamp", results_json_str(row->timestamp), &failed);
    results_put(o, "schema", json_integer(RESULTS_ROW_SCHEMA), &failed);
done:
    if (failed) {
        json_decref(o);
        tune_error_set(err, TUNE_ERR_NOMEM, "results", "cannot build the JSON row");
        return NULL;
    }
    return o;
}

/* ---- writer ---- */

struct results_writer {
    FILE *f;
    char *path;
};

results_writer *results_open(const char *dir, tune_error *err)
{
    if (outfile_mkdirs(dir, err) != TUNE_OK)
        return NULL;
    results_writer *w = calloc(1, sizeof *w);
    size_t len = strlen(dir) + sizeof "/raw.jsonl";
    if (!w || !(w->path = malloc(len))) {
        free(w);
        tune_error_set(err, TUNE_ERR_NOMEM, dir, "out of memory");
        return NULL;
    }
    snprintf(w->path, len, "%s/raw.jsonl", dir);
    int fd = folder_open_file(w->path, O_WRONLY | O_APPEND | O_CREAT, "the rows", err);
    w->f = fd >= 0 ? fdopen(fd, "a") : NULL;
    if (!w->f) {
        if (fd >= 0) {
            tune_error_set(err, TUNE_ERR_IO, w->path, "cannot open for appending: %s",
                           strerror(errno));
            close(fd);
        }
        free(w->path);
        free(w);
        return NULL;
    }
    return w;
}

tune_status results_write_row(results_writer *w, const result_row *row, tune_error *err)
{
    json_t *o = results_row_to_json(row, err);
    if (!o)
        return err ? err->code : TUNE_ERR_INVALID;
    char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!text)
        return tune_error_set(err, TUNE_ERR_NOMEM, w->path, "cannot serialise the row");
    size_t len = strlen(text);
    /* a whole line or nothing: written with write(2) on the O_APPEND descriptor (no stdio
     * buffer to keep a partial row) */
    text[len] = '\n'; /* json_dumps' NUL, replaced: the line is written as len + 1 bytes */
    tune_status st = folder_append_line(fileno(w->f), w->path, "a row", text, len + 1, err);
    free(text);
    return st;
}

void results_close(results_writer *w)
{
    if (!w)
        return;
    fclose(w->f);
    free(w->path);
    free(w);
}

/* ---- JSON -> row ---- */

/* *out = new copy of the string at key, NULL when absent or null. */
static tune_status results_get_str(const json_t *o, const char *key, char **out, const char *where,
                                   tune_error *err)
{
    const json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return TUNE_OK;
    if (!json_is_string(v))
        return tune_error_set(err, TUNE_ERR_INVALID, where, "key '%s': expected a string or null",
                              key);
    *out = strdup(json_string_value(v));
    return *out ? TUNE_OK : tune_error_set(err, TUNE_ERR_NOMEM, where, "out of memory");
}

static tune_status results_get_num(const json_t *o, const char *key, double *out, const char *where,
                                   tune_error *err)
{
    const json_t *v = json_object_get(o, key);
    *out = NAN;
    if (!v || json_is_null(v))
        return TUNE_OK;
    if (!json_is_number(v))
        return tune_error_set(err, TUNE_ERR_INVALID, where, "key '%s': expected a number or null",
                              key);
    *out = json_number_value(v);
    return TUNE_OK;
}

static tune_status results_get_names(const json_t *o, const char *key, const char **names,
                                     size_t *n, const char *where, tune_error *err)
{
    const json_t *a = json_object_get(o, key);
    if (!a)
        return tune_error_set(err, TUNE_ERR_INVALID, where, "missing key '%s'", key);
    if (!json_is_array(a) || json_array_size(a) > TUNE_MAX_AXES)
        return tune_error_set(err, TUNE_ERR_INVALID, where,
                              "key '%s': expected an array of at most %d names", key,
                              TUNE_MAX_AXES);
    for (*n = 0; *n < json_array_size(a); (*n)++) {
        const json_t *s = json_array_get(a, *n);
        if (!json_is_string(s))
            return tune_error_set(err, TUNE_ERR_INVALID, where,
                                  "key '%s': item %zu is not a string", key, *n);
        if (!(names[*n] = strdup(json_string_value(s))))
            return tune_error_set(err, TUNE_ERR_NOMEM, where, "out of memory");
    }
    return TUNE_OK;
}

/* Appends the value at name to row->values (owned copies). A null or absent value is skipped
 * unless required. */
static tune_status results_get_value(const json_t *o, const char *name, int required,
                                     result_row *row, const char *where, tune_error *err)
{
    const json_t *v = json_object_get(o, name);
    if (!v && required)
        return tune_error_set(err, TUNE_ERR_INVALID, where, "missing key '%s'", name);
    if (!v || json_is_null(v)) {
        if (required)
            return tune_error_set(err, TUNE_ERR_INVALID, where, "problem axis '%s' is null", name);
        return TUNE_OK;
    }
    expr_value ev;
    if (json_is_integer(v))
        ev = expr_int((int64_t)json_integer_value(v));
    else if (json_is_real(v))
        ev = expr_float(json_real_value(v));
    else if (json_is_string(v))
        ev = expr_str(strdup(json_string_value(v)));
    else
        return tune_error_set(err, TUNE_ERR_INVALID, where,
                              "key '%s': expected an integer, a number or a string", name);
    const char *copy = strdup(name);
    if (!copy || (ev.type == EXPR_STR && !ev.s)) {
        free((void *)copy);
        free((void *)ev.s);
        return tune_error_set(err, TUNE_ERR_NOMEM, where, "out of memory");
    }
    row->values.names[row->values.n] = copy;
    row->values.vals[row->values.n++] = ev;
    return TUNE_OK;
}

static tune_status results_get_point(const json_t *o, result_row *row, const char *where,
                                     tune_error *err)
{
    const char *axes[TUNE_MAX_AXES] = {0};
    size_t n_axes = 0;
    tune_status st = results_get_names(o, "axes", axes, &n_axes, where, err);
    if (st == TUNE_OK)
        st = results_get_names(o, "params", row->param_names, &row->n_params, where, err);
    if (st == TUNE_OK && n_axes + row->n_params > TUNE_MAX_AXES)
        st = tune_error_set(err, TUNE_ERR_INVALID, where, "more than %d axes and parameters",
                            TUNE_MAX_AXES);
    for (size_t i = 0; st == TUNE_OK && i < n_axes; i++)
        st = results_get_value(o, axes[i], 1, row, where, err);
    row->n_axes = row->values.n;
    for (size_t j = 0; st == TUNE_OK && j < row->n_params; j++)
        st = results_get_value(o, row->param_names[j], 0, row, where, err);
    for (size_t i = 0; i < TUNE_MAX_AXES; i++)
        free((void *)axes[i]);
    return st;
}

static tune_status results_get_status(const json_t *o, result_row *row, const char *where,
                                      tune_error *err)
{
    const json_t *v = json_object_get(o, "status");
    if (!v)
        return tune_error_set(err, TUNE_ERR_INVALID, where, "missing key 'status'");
    if (!json_is_string(v) || result_status_parse(json_string_value(v), &row->status) != 0)
        return tune_error_set(err, TUNE_ERR_INVALID, where,
                              "key 'status': expected one of ok, invalid, compile_error, "
                              "launch_error, crashed, timeout, skipped, compiled");
    return TUNE_OK;
}

static tune_status results_get_time(const json_t *o, stats_summary *t, const char *where,
                                    tune_error *err)
{
    const json_t *n = json_object_get(o, "time_n");
    if (n && !json_is_null(n) && (!json_is_integer(n) || json_integer_value(n) < 0))
        return tune_error_set(err, TUNE_ERR_INVALID, where,
                              "key 'time_n': expected a non-negative integer");
    t->n = n && json_is_integer(n) ? (size_t)json_integer_value(n) : 0;
    tune_status st = results_get_num(o, "time_median", &t->median, where, err);
    if (st == TUNE_OK)
        st = results_get_num(o, "time_mean", &t->mean, where, err);
    if (st == TUNE_OK)
        st = results_get_num(o, "time_min", &t->min, where, err);
    if (st == TUNE_OK)
        st = results_get_num(o, "time_max", &t->max, where, err);
    if (st == TUNE_OK)
        st = results_get_num(o, "time_stdev", &t->stdev, where, err);
    if (st == TUNE_OK)
        st = results_get_num(o, "time_stderr", &t->std_err, where, err);
    if (st == TUNE_OK)
        st = results_get_num(o, "time_p10", &t->p10, where, err);
    if (st == TUNE_OK)
        st = results_get_num(o, "time_p90", &t->p90, where, err);
    return st;
}

/* Times are seconds: never negative; an ok row has a positive median (a damaged row would
 * otherwise win every table). */
static tune_status results_check_time(const stats_summary *t, result_status status,
                                      const char *where, tune_error *err)
{
    const struct {
        const char *key;
        double v;
    } ts[] = {{"time_median", t->median}, {"time_mean", t->mean}, {"time_min", t->min},
              {"time_max", t->max},       {"time_stdev", t->stdev}, {"time_stderr", t->std_err},
              {"time_p10", t->p10},       {"time_p90", t->p90}};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        if (!isnan(ts[i].v) && !(ts[i].v >= 0 && isfinite(ts[i].v)))
            return tune_error_set(err, TUNE_ERR_INVALID, where,
                                  "key '%s': expected a time in seconds >= 0, got %g", ts[i].key,
                                  ts[i].v);
    /* an ok row without a median (null) is read, and never wins a table (report_time_ok) */
    if (status == RESULT_OK && !isnan(t->median) && !(t->median > 0))
        return tune_error_set(err, TUNE_ERR_INVALID, where,
                              "key 'time_median': an ok row needs a time in seconds > 0");
    return TUNE_OK;
}

static tune_status results_get_measures(const json_t *o, result_row *row, const char *where,
                                        tune_error *err)
{
    struct {
        const char *key;
        double *dst;
    } nums[] = {
        {"bytes", &row->bytes},
        {"flops", &row->flops},
        {"bandwidth", &row->bandwidth},
        {"flop_rate", &row->flop_rate},
        {"pct_read_bw", &row->pct_read_bw},
        {"read_bw", &row->read_bw},
        {"error", &row->error},
        {"tolerance", &row->tolerance},
        {"roofline_time", &row->roofline_time},
        {"roofline_fraction", &row->roofline_fraction},
        {"dram_bytes", &row->dram_bytes},
        {"model_time", &row->model_time},
        {"clock_sm_mhz", &row->clock_sm_mhz},
        {"clock_mem_mhz", &row->clock_mem_mhz},
        {"temperature_c", &row->temperature_c},
        {"power_w", &row->power_w},
        {"energy_j", &row->energy_j},
    };
    tune_status st = TUNE_OK;
    for (size_t i = 0; st == TUNE_OK && i < sizeof nums / sizeof *nums; i++)
        st = results_get_num(o, nums[i].key, nums[i].dst, where, err);
    if (st == TUNE_OK && !isnan(row->energy_j) && !(row->energy_j > 0 && isfinite(row->energy_j)))
        st = tune_error_set(err, TUNE_ERR_INVALID, where,
                            "key 'energy_j': expected joules per call > 0 or null, got %g",
                            row->energy_j);
    double batch;
    if (st == TUNE_OK && (st = results_get_num(o, "batch", &batch, where, err)) == TUNE_OK)
        row->batch = isnan(batch) ? 0 : (int)batch;
    row->throttled = json_is_true(json_object_get(o, "throttled"));
    double throttle;
    if (st == TUNE_OK && (st = results_get_num(o, "throttle_reasons", &throttle, where, err)) == TUNE_OK)
        row->throttle_reasons = isnan(throttle) ? -1 : (long long)throttle;
    return st;
}

static tune_status results_get_strings(const json_t *o, result_row *row, const char *where,
                                       tune_error *err)
{
    struct {
        const char *key;
        char **dst;
    } strs[] = {
        {"sweep", &row->sweep},   {"family", &row->family},       {"op", &row->op},
        {"method", &row->method}, {"reason", &row->reason},       {"kernel", &row->kernel},
        {"device", &row->device}, {"timestamp", &row->timestamp},
        {"timing_mode", &row->timing_mode}, {"stop_reason", &row->stop_reason},
        {"energy_note", &row->energy_note},
    };
    tune_status st = TUNE_OK;
    for (size_t i = 0; st == TUNE_OK && i < sizeof strs / sizeof *strs; i++)
        st = results_get_str(o, strs[i].key, strs[i].dst, where, err);
    if (st == TUNE_OK && !row->method)
        st = tune_error_set(err, TUNE_ERR_INVALID, where, "missing key 'method'");
    return st;
}

/* Fills row (initialised; its strings new, for the set that holds it) from o; on error the row
 * holds what was read so far. */
static tune_status results_row_from_json(const json_t *o, result_row *row, const char *where,
                                         tune_error *err)
{
    if (!json_is_object(o))
        return tune_error_set(err, TUNE_ERR_INVALID, where, "expected a JSON object");
    /* first: the other keys of a newer format may mean something else */
    json_t *schema = json_object_get(o, "schema");
    if (schema && (!json_is_integer(schema) || json_integer_value(schema) < 1))
        return tune_error_set(err, TUNE_ERR_INVALID, where, "key 'schema': expected an integer >= 1");
    if (schema && json_integer_value(schema) > RESULTS_ROW_SCHEMA)
        return tune_error_set(err, TUNE_ERR_INVALID, where,
                              "key 'schema': row format %lld is newer than this tune reads (%d): "
                              "use a newer tune",
                              (long long)json_integer_value(schema), RESULTS_ROW_SCHEMA);
    tune_status st = results_get_strings(o, row, where, err);
    if (st == TUNE_OK)
        st = results_get_status(o, row, where, err);
    if (st == TUNE_OK)
        st = results_get_point(o, row, where, err);
    if (st == TUNE_OK)
        st = results_get_time(o, &row->time, where, err);
    if (st == TUNE_OK)
        st = results_check_time(&row->time, row->status, where, err);
    if (st == TUNE_OK)
        st = results_get_measures(o, row, where, err);
    return st;
}

static int results_is_blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
            return 0;
    return 1;
}

/* Parses one line into a new slot of rows (grown as needed). */
static tune_status results_read_line(char *line, const char *where, results_rows *rows,
                                     size_t *cap, tune_error *err)
{
    /* One physical line, so that Jansson's column is the column in the file. */
    line[strcspn(line, "\r\n")] = '\0';
    json_error_t jerr;
    json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, &jerr);
    if (!o)
        return tune_error_set(err, TUNE_ERR_PARSE, where, "%s (column %d)", jerr.text, jerr.column);
    if (rows->n == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        result_row *r = realloc(rows->rows, c * sizeof *r);
        if (!r) {
            json_decref(o);
            return tune_error_set(err, TUNE_ERR_NOMEM, where, "out of memory");
        }
        rows->rows = r;
        *cap = c;
    }
    result_row *row = &rows->rows[rows->n++];
    result_row_init(row);
    tune_status st = results_row_from_json(o, row, where, err);
    json_decref(o);
    return st;
}

tune_status results_read(const char *path, results_rows *out, tune_error *err)
{
    *out = (results_rows){0};
    /* a regular file (never a FIFO, a device), plain or gzip, of bounded size and lines */
    tune_error e = {0};
    folder_lines *in = folder_lines_open(path, INFILE_MAX_ROWS, RESULTS_MAX_LINE, &e);
    if (!in)
        return tune_error_set(err, e.code, e.where, "%s", e.message);
    char *line = NULL, where[512];
    size_t lineno = 0, cap = 0;
    tune_status st;
    while ((st = folder_lines_next(in, &line, NULL, &lineno, &e)) == TUNE_OK && line) {
        if (results_is_blank(line))
            continue;
        snprintf(where, sizeof where, "%s:%zu", path, lineno);
        if ((st = results_read_line(line, where, out, &cap, &e)) != TUNE_OK)
            break;
    }
    tune_error gz = {0}; /* a row of garbage in a .gz: say rather that the file is corrupt */
    if (st != TUNE_OK && line && folder_lines_verify(in, &gz) != TUNE_OK)
        e = gz;
    folder_lines_close(in);
    if (st != TUNE_OK) {
        results_rows_free(out);
        return tune_error_set(err, e.code, e.where, "%s", e.message);
    }
    return TUNE_OK;
}

tune_status results_locate(const char *dir, char *path, size_t size, tune_error *err)
{
    return folder_locate(dir, "raw.jsonl", path, size, err);
}

static void results_row_release(result_row *row)
{
    char *strs[] = {row->sweep,  row->family, row->op,          row->method,     row->reason,
                    row->kernel, row->device, row->timestamp, row->timing_mode, row->stop_reason,
                    row->energy_note};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
        free(strs[i]);
    for (size_t i = 0; i < row->values.n; i++) {
        free((void *)row->values.names[i]);
        if (row->values.vals[i].type == EXPR_STR)
            free((void *)row->values.vals[i].s);
    }
    for (size_t j = 0; j < row->n_params; j++)
        free((void *)row->param_names[j]);
}

void results_rows_free(results_rows *rows)
{
    if (!rows)
        return;
    for (size_t i = 0; rows->rows && i < rows->n; i++)
        results_row_release(&rows->rows[i]);
    free(rows->rows);
    *rows = (results_rows){0};
}

tune_status results_read_dirs(const char *const *dirs, size_t n_dirs, results_rows *out,
                              tune_error *err)
{
    results_rows all = {0};
    tune_status st = TUNE_OK;
    for (size_t d = 0; d < n_dirs && st == TUNE_OK; d++) {
        char path[PATH_MAX + 16];
        results_rows one;
        if ((st = results_locate(dirs[d], path, sizeof path, err)) != TUNE_OK ||
            (st = results_read(path, &one, err)) != TUNE_OK)
            break;
        result_row *grown = realloc(all.rows, (all.n + one.n + 1) * sizeof *all.rows);
        if (!grown) {
            results_rows_free(&one);
            st = tune_error_set(err, TUNE_ERR_NOMEM, "results", "out of memory");
            break;
        }
        all.rows = grown;
        if (one.n) /* an empty raw.jsonl has no rows: NULL */
            memcpy(all.rows + all.n, one.rows, one.n * sizeof *one.rows);
        all.n += one.n;
        free(one.rows); /* the rows' contents now belong to all */
    }
    if (st != TUNE_OK)
        results_rows_free(&all);
    *out = all;
    return st;
}

const char *results_row_identity(const result_row *row, char *buf, size_t size)
{
    return point_identity(row->method, &row->values, buf, size);
}

typedef struct {
    char *id;
    size_t index;
} results_id;

static int results_id_cmp(const void *a, const void *b)
{
    const results_id *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    return c ? c : (x->index < y->index ? -1 : x->index > y->index);
}

tune_status results_rows_dedup(results_rows *set, size_t *n_dropped, tune_error *err)
{
    result_row *rows = set->rows;
    size_t *n = &set->n;
    *n_dropped = 0;
    if (*n < 2)
        return TUNE_OK;
    results_id *ids = calloc(*n, sizeof *ids);
    char *drop = calloc(*n, 1);
    tune_status st = ids && drop ? TUNE_OK : tune_error_set(err, TUNE_ERR_NOMEM, "results",
                                                            "out of memory");
    for (size_t i = 0; st == TUNE_OK && i < *n; i++) {
        char buf[4096];
        ids[i] = (results_id){strdup(results_row_identity(&rows[i], buf, sizeof buf)), i};
        if (!ids[i].id)
            st = tune_error_set(err, TUNE_ERR_NOMEM, "results", "out of memory");
    }
    if (st == TUNE_OK) {
        qsort(ids, *n, sizeof *ids, results_id_cmp);
        for (size_t i = 0; i + 1 < *n; i++) /* an identity's rows, in file order: keep the last */
            if (strcmp(ids[i].id, ids[i + 1].id) == 0)
                drop[ids[i].index] = 1;
        size_t k = 0;
        for (size_t i = 0; i < *n; i++) {
            if (drop[i]) {
                results_row_release(&rows[i]);
                (*n_dropped)++;
            } else {
                rows[k++] = rows[i];
            }
        }
        *n = k;
    }
    for (size_t i = 0; ids && i < *n + *n_dropped; i++)
        free(ids[i].id);
    free(ids);
    free(drop);
    return st;
}
