#include "store/meta.h"

#include "core/infile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/hash.h"
#include "model/shard.h"
#include "store/folder.h"
#include "tune_git_rev.h"

void meta_count_status(run_summary *s, result_status st)
{
    switch (st) {
    case RESULT_OK:
        s->n_ok++;
        break;
    case RESULT_INVALID:
        s->n_invalid++;
        break;
    case RESULT_COMPILE_ERROR:
        s->n_compile_error++;
        break;
    case RESULT_SKIPPED:
        s->n_skipped++;
        break;
    case RESULT_CRASHED:
        s->n_crashed++;
        break;
    case RESULT_TIMEOUT:
        s->n_timeout++;
        break;
    case RESULT_COMPILED:
        s->n_compiled++;
        break;
    default:
        s->n_launch_error++;
        break;
    }
}

/* ---- building ---- */

static json_t *device_json(const gpu_info *gi)
{
    char cc[16];
    snprintf(cc, sizeof cc, "%d.%d", gi->cc_major, gi->cc_minor);
    return json_pack("{s:s, s:i, s:s, s:s, s:s, s:i, s:I, s:I, s:i, s:i, s:i}", "name", gi->name,
                     "ordinal", gi->ordinal, "pci_bus_id", gi->pci_bus_id, "uuid", gi->uuid,
                     "compute_capability", cc,
                     "sm_count", gi->sm_count, "l2_bytes", (json_int_t)gi->l2_bytes, "memory_bytes",
                     (json_int_t)gi->global_mem, "sm_clock_max_khz", gi->sm_clock_khz,
                     "mem_clock_max_khz", gi->mem_clock_khz, "mem_bus_bits", gi->mem_bus_bits);
}

static json_t *strings_json(char *const *s, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(s[i]));
    return a;
}

static json_t *argv_json(int argc, char **argv)
{
    json_t *a = json_array();
    for (int i = 0; i < argc; i++)
        json_array_append_new(a, json_string(argv[i]));
    return a;
}

static json_t *host_json(void)
{
    struct utsname un;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    if (uname(&un) != 0)
        return NULL;
    return json_pack("{s:s, s:s, s:s, s:s}", "hostname", host, "system", un.sysname, "release",
                     un.release, "machine", un.machine);
}

static json_t *timing_json(const sweep_timing *tt)
{
    json_t *timing_j =
        json_pack("{s:i, s:i, s:b, s:b, s:s, s:s, s:i}", "warmup", tt->warmup, "reps", tt->reps,
                  "flush_l2", tt->flush_l2, "fresh_indices", tt->fresh_indices, "stop",
                  tt->stop == SWEEP_TIMING_STOP_ADAPTIVE ? "adaptive" : "fixed", "mode",
                  tt->mode == SWEEP_TIMING_MODE_HOT     ? "hot"
                  : tt->mode == SWEEP_TIMING_MODE_GRAPH ? "graph"
                                                        : "cold",
                  "batch", tt->batch);
    if (tt->stop == SWEEP_TIMING_STOP_ADAPTIVE)
        json_object_update_new(timing_j, json_pack("{s:f, s:i, s:i, s:f, s:f}", "rel_stderr",
                                                   tt->rel_stderr, "min_reps", tt->min_reps,
                                                   "max_reps", tt->max_reps, "min_time_s",
                                                   tt->min_time_s, "max_time_s", tt->max_time_s));
    return timing_j;
}

static json_t *summary_json(const run_summary *sum, int compile_only)
{
    json_t *s = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f}", "configs",
        (json_int_t)sum->n_configs, "pruned", (json_int_t)sum->n_pruned, "ok",
        (json_int_t)sum->n_ok, "invalid", (json_int_t)sum->n_invalid, "compile_error",
        (json_int_t)sum->n_compile_error, "launch_error", (json_int_t)sum->n_launch_error,
        "crashed", (json_int_t)sum->n_crashed, "timeout", (json_int_t)sum->n_timeout, "skipped",
        (json_int_t)sum->n_skipped, "kernels", (json_int_t)sum->n_kernels, "kernels_cached",
        (json_int_t)sum->n_cached, "kernel_errors", (json_int_t)sum->n_kernel_errors,
        "compile_seconds", sum->compile_seconds, "wall_seconds", sum->wall_seconds);
    if (compile_only)
        json_object_set_new(s, "compiled", json_integer((json_int_t)sum->n_compiled));
    return s;
}

json_t *meta_sweep_source(const char *file, char hex[17])
{
    char *text = NULL;
    size_t len = 0;
    hex[0] = '\0';
    if (!file || infile_read_text(file, INFILE_MAX_JSON, &text, &len, NULL) != TUNE_OK)
        return NULL;
    hash_hex(hash_fnv1a(HASH_FNV_OFFSET, text, len), hex);
    json_t *j = json_loadb(text, len, 0, NULL);
    free(text);
    return j;
}

const char *meta_sweep_hash(const json_t *meta)
{
    return json_string_value(json_object_get(json_object_get(meta, "sweep"), "hash"));
}

json_t *meta_tool_json(void)
{
    return json_pack("{s:s, s:s, s:s}", "name", "tune", "version", TUNE_VERSION, "git_rev",
                     TUNE_GIT_REV);
}

json_t *meta_build(const meta_info *mi, const run_summary *sum)
{
    const sweep *sw = mi->sw;
    json_t *m = json_object();
    json_object_set_new(m, "schema_version", json_integer(META_SCHEMA_VERSION));
    json_object_set_new(m, "tool", meta_tool_json());
    json_object_set_new(m, "argv", argv_json(mi->argc, mi->argv));
    json_t *host = host_json();
    if (host)
        json_object_set_new(m, "host", host);
    json_object_set_new(m, "sweep",
                        json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "file", sw->file, "name",
                                  sw->name, "family", sw->family_name, "op", sw->op, "bytes",
                                  sw->bytes_src, "flops", sw->flops_src));
    /* the sweep as it was run: every axis, parameter, constraint and timing setting */
    char hex[17];
    json_t *src = meta_sweep_source(sw->file, hex);
    if (src) {
        json_t *o = json_object_get(m, "sweep");
        json_object_set_new(o, "hash", json_string(hex));
        json_object_set_new(o, "source", src);
    }
    /* the methods' roles (model/family.h), for plots and reports that know no method names */
    json_object_set_new(json_object_get(m, "sweep"), "methods", sweep_methods_json(sw));
    json_object_set_new(m, "timing", timing_json(&sw->timing));
    json_object_set_new(m, "report",
                        json_pack("{s:o, s:o}", "rows",
                                  strings_json(sw->report_rows, sw->n_report_rows), "cols",
                                  strings_json(sw->report_cols, sw->n_report_cols)));
    if (mi->device) {
        const gpu_info *gi = mi->device;
        json_object_set_new(m, "device", device_json(gi));
        json_object_set_new(m, "versions",
                            json_pack("{s:i, s:i, s:i, s:s}", "driver_cuda", gi->driver_version,
                                      "runtime", gi->runtime_version, "nvrtc", mi->nvrtc_version,
                                      "cublas", mi->cublas_version ? mi->cublas_version : ""));
        if (mi->driver && mi->driver[0])
            json_object_set_new(json_object_get(m, "versions"), "driver", json_string(mi->driver));
    }
    if (mi->compile_arch)
        json_object_set_new(m, "compile_only", json_pack("{s:s}", "arch", mi->compile_arch));
    if (mi->shard) {
        const meta_shard *s = mi->shard;
        json_object_set_new(
            m, "shard",
            json_pack("{s:I, s:I, s:I, s:I, s:s, s:f, s:f}", "index", (json_int_t)s->index, "count",
                      (json_int_t)s->count, "configs", (json_int_t)s->configs, "total_configs",
                      (json_int_t)s->total_configs, "plan", s->plan, "estimated_seconds",
                      s->estimated_seconds, "total_estimated_seconds", s->total_estimated_seconds));
    }
    if (mi->key)
        json_object_set(m, "key", (json_t *)mi->key);
    if (mi->search)
        json_object_set(m, "search", (json_t *)mi->search);
    json_object_set_new(m, "nvml", json_boolean(mi->nvml));
    json_object_set_new(m, "roofline_ceilings", json_string(mi->ceilings));
    json_object_set_new(m, "seed", json_integer((json_int_t)mi->seed));
    json_object_set_new(
        m, "read_bw",
        json_pack("{s:f, s:s}", "bytes_per_second", sum->read_bw, "source", mi->read_bw_source));
    json_object_set_new(m, "start", json_string(mi->start));
    if (mi->end)
        json_object_set_new(m, "end", json_string(mi->end));
    json_object_set_new(m, "summary", summary_json(sum, mi->compile_arch != NULL));
    return m;
}

tune_status meta_write(const char *dir, const json_t *meta, tune_error *err)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    return folder_write_json(path, meta, err);
}

json_t *meta_load(const char *dir, json_error_t *je)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    char *text = NULL;
    size_t len = 0;
    tune_error err = {0};
    if (infile_read_text(path, INFILE_MAX_JSON, &text, &len, &err) != TUNE_OK) {
        if (je)
            snprintf(je->text, sizeof je->text, "%.150s", err.message);
        return NULL;
    }
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, je);
    free(text);
    return j;
}

/* ---- the run key ---- */

json_t *meta_key_build(const meta_key_info *ki)
{
    char kh[17];
    hash_hex(ki->kernels_hash, kh);
    json_t *key;
    if (ki->compile_arch) {
        key = json_pack("{s:s, s:i, s:s, s:I}", "kernels_hash", kh, "nvrtc", ki->nvrtc_version,
                        "arch", ki->compile_arch, "seed", (json_int_t)ki->seed);
    } else {
        key = json_pack("{s:s, s:i, s:i, s:s, s:s, s:s, s:I}", "kernels_hash", kh, "nvrtc",
                        ki->nvrtc_version, "cuda_driver", ki->device->driver_version, "driver",
                        ki->driver ? ki->driver : "", "device", ki->device->name, "pci_bus_id",
                        ki->device->pci_bus_id, "seed", (json_int_t)ki->seed);
    }
    if (key && ki->search)
        json_object_set_new(key, "search", json_string(ki->search));
    if (key && ki->energy) /* absent when not: the keys of time runs are as before energy */
        json_object_set_new(key, "energy", json_true());
    if (key && ki->shard) { /* a shard resumes only as the same shard of the same plan */
        char sh[64];
        snprintf(sh, sizeof sh, "%zu/%zu %s", ki->shard->index, ki->shard->count, ki->shard->plan);
        json_object_set_new(key, "shard", json_string(sh));
    }
    return key;
}

void meta_resume_info(const char *dir, char *start, size_t start_size, double *read_bw)
{
    json_t *old = meta_load(dir, NULL);
    *read_bw = 0;
    if (!old)
        return;
    json_t *s0 = json_object_get(old, "start");
    if (json_is_string(s0))
        snprintf(start, start_size, "%s", json_string_value(s0));
    json_t *bw = json_object_get(json_object_get(old, "read_bw"), "bytes_per_second");
    if (json_is_number(bw) && json_number_value(bw) > 0)
        *read_bw = json_number_value(bw);
    json_decref(old);
}

/* A shard (--shard) may resume on another GPU of the same model, as shards of one run run on
 * several: a requeued Slurm task lands where a GPU is free. Its key then lists every PCI bus id
 * the shard ran on. Returns 1 when key's pci_bus_id was updated that way. */
static int shard_pci_moved(int sharded, const json_t *old, json_t *key)
{
    const char *was = json_string_value(json_object_get(old, "pci_bus_id"));
    const char *now = json_string_value(json_object_get(key, "pci_bus_id"));
    if (!sharded || !was || !now)
        return 0;
    if (!strstr(was, now)) {
        char both[1024];
        snprintf(both, sizeof both, "%s,%s", was, now);
        json_object_set_new(key, "pci_bus_id", json_string(both));
    } else {
        json_object_set_new(key, "pci_bus_id", json_string(was));
    }
    return 1;
}

tune_status meta_check_resume(const char *dir, json_t *key, int sharded, tune_error *err)
{
    json_t *meta = meta_load(dir, NULL);
    json_t *old = meta ? json_object_get(meta, "key") : NULL;
    char diff[2048] = "";
    if (json_is_true(json_object_get(json_object_get(meta, "shard"), "merged"))) {
        json_decref(meta);
        return tune_error_set(err, TUNE_ERR_INVALID, dir,
                              "cannot resume: this folder holds merged shards; resume the run "
                              "with the same --gpus, or each shard folder with its --shard I/N");
    }
    const char *k;
    json_t *v;
    json_object_foreach(key, k, v)
    {
        json_t *o = old ? json_object_get(old, k) : NULL;
        if (strcmp(k, "pci_bus_id") == 0 && shard_pci_moved(sharded, old, key))
            continue;
        if (!o || !json_equal(o, v)) {
            char *a = o ? json_dumps(o, JSON_ENCODE_ANY) : NULL,
                 *b = json_dumps(v, JSON_ENCODE_ANY);
            size_t len = strlen(diff);
            snprintf(diff + len, sizeof diff - len, "%s%s was %s, now %s", len ? "; " : "", k,
                     a ? a : "absent", b ? b : "?");
            free(a);
            free(b);
        }
    }
    json_object_foreach(old, k, v) if (!json_object_get(key, k))
    { /* e.g. a searched run resumed as an exhaustive one */
        char *a = json_dumps(v, JSON_ENCODE_ANY);
        size_t len = strlen(diff);
        snprintf(diff + len, sizeof diff - len, "%s%s was %s, now absent", len ? "; " : "", k,
                 a ? a : "?");
        free(a);
    }
    json_decref(meta);
    if (diff[0])
        return tune_error_set(err, TUNE_ERR_INVALID, dir,
                              "cannot resume: the results were measured with something else (%s); "
                              "start a new run instead",
                              diff);
    return TUNE_OK;
}

/* ---- readers ---- */

static const char *json_str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

const char *meta_sweep_name(const json_t *meta)
{
    return json_string_value(json_object_get(json_object_get(meta, "sweep"), "name"));
}

const char *meta_sweep_method(const json_t *meta, size_t i, const char **role)
{
    const char *name;
    json_t *v;
    size_t k = 0;
    json_object_foreach(json_object_get(json_object_get(meta, "sweep"), "methods"), name, v)
        if (k++ == i && json_is_string(v)) {
            *role = json_string_value(v);
            return name;
        }
    return NULL;
}

const char *meta_device_name(const json_t *meta)
{
    return json_string_value(json_object_get(json_object_get(meta, "device"), "name"));
}

const char *meta_tool_git_rev(const json_t *meta)
{
    return json_string_value(json_object_get(json_object_get(meta, "tool"), "git_rev"));
}

void meta_report_axes(const json_t *meta, const char **rows, size_t *n_rows, const char **cols,
                      size_t *n_cols, size_t max, const char **title)
{
    json_t *rep = meta ? json_object_get(meta, "report") : NULL;
    size_t i;
    json_t *v;
    *n_rows = *n_cols = 0;
    /* only strings: meta_check has refused a folder whose axes are not */
    json_array_foreach(json_object_get(rep, "rows"), i, v) if (*n_rows < max &&
                                                                json_is_string(v)) rows[(*n_rows)++] =
        json_string_value(v);
    json_array_foreach(json_object_get(rep, "cols"), i, v) if (*n_cols < max &&
                                                                json_is_string(v)) cols[(*n_cols)++] =
        json_string_value(v);
    *title = meta_sweep_name(meta);
}

/* An array of at most max strings at meta.report.<key>, or absent. */
static tune_status check_axes(const json_t *rep, const char *key, const char *path, size_t max,
                              tune_error *err)
{
    json_t *a = json_object_get(rep, key);
    char where[PATH_MAX + 64];
    if (!a)
        return TUNE_OK;
    snprintf(where, sizeof where, "%s: $.report.%s", path, key);
    if (!json_is_array(a) || json_array_size(a) > max)
        return tune_error_set(err, TUNE_ERR_INVALID, where, "expected an array of at most %zu "
                              "axis names", max);
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) if (!json_is_string(v)) return tune_error_set(
        err, TUNE_ERR_INVALID, where, "[%zu]: expected a string (an axis name)", i);
    return TUNE_OK;
}

tune_status meta_check(const json_t *meta, const char *path, size_t max_axes, tune_error *err)
{
    char where[PATH_MAX + 64];
    if (!json_is_object(meta))
        return tune_error_set(err, TUNE_ERR_INVALID, path, "expected a JSON object");
    json_t *sv = json_object_get(meta, "schema_version");
    snprintf(where, sizeof where, "%s: $.schema_version", path);
    if (sv && (!json_is_integer(sv) || json_integer_value(sv) < 1))
        return tune_error_set(err, TUNE_ERR_INVALID, where, "expected an integer >= 1");
    if (sv && json_integer_value(sv) > META_SCHEMA_VERSION)
        return tune_error_set(err, TUNE_ERR_INVALID, where,
                              "version %lld is newer than this tune reads (%d): use a newer tune",
                              (long long)json_integer_value(sv), META_SCHEMA_VERSION);
    json_t *sw = json_object_get(meta, "sweep");
    snprintf(where, sizeof where, "%s: $.sweep", path);
    if (sw && !json_is_object(sw) && !json_is_string(sw))
        return tune_error_set(err, TUNE_ERR_INVALID, where, "expected an object");
    json_t *rep = json_object_get(meta, "report");
    snprintf(where, sizeof where, "%s: $.report", path);
    if (rep && !json_is_object(rep))
        return tune_error_set(err, TUNE_ERR_INVALID, where, "expected an object");
    tune_status st = check_axes(rep, "rows", path, max_axes, err);
    return st == TUNE_OK ? check_axes(rep, "cols", path, max_axes, err) : st;
}

tune_status meta_check_folders(const char *const *dirs, size_t n_dirs, json_t **first,
                               tune_error *err)
{
    json_t *m0 = NULL;
    tune_status st = TUNE_OK;
    const char *name0 = NULL, *hash0 = NULL;
    for (size_t d = 0; d < n_dirs && st == TUNE_OK; d++) {
        char path[PATH_MAX + 16];
        snprintf(path, sizeof path, "%s/meta.json", dirs[d]);
        json_error_t je = {0};
        json_t *m = meta_load(dirs[d], &je);
        if (!m && access(path, F_OK) == 0)
            st = tune_error_set(err, TUNE_ERR_INVALID, path, "%s", je.text);
        if (st == TUNE_OK && m)
            st = meta_check(m, path, TUNE_MAX_AXES, err);
        const char *name = meta_sweep_name(m), *hash = meta_sweep_hash(m);
        if (st == TUNE_OK && d > 0 && m && m0 &&
            ((name && name0 && strcmp(name, name0) != 0) ||
             (hash && hash0 && strcmp(hash, hash0) != 0)))
            st = tune_error_set(err, TUNE_ERR_INVALID, dirs[d],
                                "a run of sweep '%s' (%s), %s is of sweep '%s' (%s): folders of "
                                "different sweeps are not merged into one result",
                                name ? name : "?", hash ? hash : "no hash", dirs[0],
                                name0 ? name0 : "?", hash0 ? hash0 : "no hash");
        if (d == 0) {
            m0 = m;
            name0 = name;
            hash0 = hash;
        } else {
            json_decref(m);
        }
    }
    if (st != TUNE_OK || !first)
        json_decref(m0);
    if (first)
        *first = st == TUNE_OK ? m0 : NULL;
    return st;
}

/* Where each environment item is: a path of keys, and where a compile-only run's meta.json has
 * it (its "key"). */
static const struct {
    const char *path[3], *alt[3];
} env_paths[META_N_ENV] = {
    {{"device", "name", NULL}, {"key", "device", NULL}},
    {{"device", "pci_bus_id", NULL}, {"key", "pci_bus_id", NULL}},
    {{"versions", "driver", NULL}, {"key", "driver", NULL}},
    {{"versions", "driver_cuda", NULL}, {"key", "cuda_driver", NULL}},
    {{"versions", "runtime", NULL}, {NULL}},
    {{"versions", "nvrtc", NULL}, {"key", "nvrtc", NULL}},
    {{"versions", "cublas", NULL}, {NULL}},
    {{"key", "kernels_hash", NULL}, {NULL}},
    {{"key", "arch", NULL}, {NULL}},
    {{"tool", "git_rev", NULL}, {NULL}},
    {{"sweep", "name", NULL}, {NULL}},
    {{"timing", NULL, NULL}, {NULL}},
    {{"host", "hostname", NULL}, {NULL}},
    {{"seed", NULL, NULL}, {NULL}},
};

const meta_env_item meta_env_items[META_N_ENV] = {
    {"gpu", "GPU", 1},
    {"pci_bus_id", "PCI bus id", 1},
    {"driver", "driver", 1},
    {"cuda_driver", "CUDA driver API", 1},
    {"cuda_runtime", "CUDA runtime", 1},
    {"nvrtc", "NVRTC", 1},
    {"cublas", "cuBLAS", 1},
    {"kernels", "kernel sources (hash)", 1},
    {"arch", "architecture (compile-only runs)", 1},
    {"tool", "tune revision", 1},
    {"sweep", "sweep", 1},
    {"timing", "timing settings", 1},
    {"host", "host", 0},
    {"seed", "seed", 0},
};

/* meta.json's value at path (NULL-terminated keys); NULL when absent or the path is empty. */
static const json_t *meta_get(const json_t *meta, const char *const *path)
{
    if (!path[0])
        return NULL;
    for (size_t p = 0; meta && p < 3 && path[p]; p++)
        meta = json_object_get(meta, path[p]);
    return meta;
}

char *meta_env_text(const json_t *meta, size_t i)
{
    const json_t *v = meta_get(meta, env_paths[i].path);
    if (!v)
        v = meta_get(meta, env_paths[i].alt);
    char buf[64];
    if (!v)
        return strdup("absent");
    if (json_is_string(v))
        return strdup(json_string_value(v));
    if (json_is_integer(v)) {
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        return strdup(buf);
    }
    if (json_is_real(v)) {
        snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
        return strdup(buf);
    }
    return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

/* ---- merging shards ---- */

static size_t json_size(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (size_t)json_integer_value(v)
                                                            : SIZE_MAX;
}

int meta_shard_read(const json_t *meta, meta_shard *out, const char **why)
{
    json_t *sh = json_object_get(meta, "shard");
    memset(out, 0, sizeof *out);
    if (!json_is_object(sh) || json_is_true(json_object_get(sh, "merged"))) {
        *why = "not a shard";
        return -1;
    }
    out->index = json_size(sh, "index");
    out->count = json_size(sh, "count");
    out->configs = json_size(sh, "configs");
    out->total_configs = json_size(sh, "total_configs");
    out->plan = json_str(sh, "plan");
    if (out->index == SIZE_MAX || out->count == SIZE_MAX || out->configs == SIZE_MAX ||
        out->total_configs == SIZE_MAX || out->index >= out->count) {
        *why = "incomplete";
        return -1;
    }
    /* bounds before anything loops over them: a damaged count must not hang the merge */
    if (out->count > SHARD_MAX || out->configs > out->total_configs || !out->plan) {
        *why = "damaged (shard.count over 4096, more configs than the sweep's, or no plan)";
        return -1;
    }
    return 0;
}

int meta_merged_plan(const json_t *meta, const char **plan, size_t *count)
{
    json_t *sh = json_object_get(meta, "shard");
    if (!json_is_object(sh) || !json_is_true(json_object_get(sh, "merged")))
        return 0;
    *plan = json_str(sh, "plan");
    *count = json_size(sh, "count");
    return *plan != NULL && *count != SIZE_MAX;
}

size_t meta_pruned(const json_t *meta)
{
    size_t n = json_size(json_object_get(meta, "summary"), "pruned");
    return n == SIZE_MAX ? 0 : n;
}

/* The key without what may differ between the shards of one run. */
static int key_ignored(const char *k)
{
    /* search: merge.c compares the search settings itself, with its own message */
    return strcmp(k, "shard") == 0 || strcmp(k, "pci_bus_id") == 0 || strcmp(k, "search") == 0;
}

void meta_compare_keys(const json_t *a, const json_t *b, const char *a_name, const char *b_name,
                       void (*report)(void *ctx, const char *text), void *ctx)
{
    json_t *ka = json_object_get(a, "key"), *kb = json_object_get(b, "key");
    const char *k;
    json_t *v;
    char text[2048];
    json_object_foreach(ka, k, v)
    {
        json_t *w = json_object_get(kb, k);
        if (key_ignored(k) || (w && json_equal(v, w)))
            continue;
        char *x = json_dumps(v, JSON_ENCODE_ANY), *y = w ? json_dumps(w, JSON_ENCODE_ANY) : NULL;
        snprintf(text, sizeof text, "%s was measured with key.%s %s, %s with %s", b_name, k,
                 y ? y : "absent", a_name, x ? x : "?");
        report(ctx, text);
        free(x);
        free(y);
    }
    json_object_foreach(kb, k, v) if (!key_ignored(k) && !json_object_get(ka, k))
    {
        snprintf(text, sizeof text, "%s has key.%s, %s has not", b_name, k, a_name);
        report(ctx, text);
    }
}

int meta_same_settings(const json_t *a, const json_t *b)
{
    const json_t *sa = json_object_get(a, "sweep"), *sb = json_object_get(b, "sweep");
    const char *keys[] = {"family", "op", "bytes", "flops"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(json_str(sa, keys[i]), json_str(sb, keys[i])) != 0)
            return 0;
    const json_t *ta = json_object_get(a, "timing"), *tb = json_object_get(b, "timing");
    return (!ta && !tb) || (ta && tb && json_equal((json_t *)ta, (json_t *)tb));
}

/* The merged summary: the rows' counts, the longest shard's wall and compile seconds, the sum of
 * the shards' seconds. */
static void merged_summary(json_t *m, double compile, double wall, double shard_seconds,
                           run_summary *sum)
{
    json_t *s = json_object_get(m, "summary");
    if (!json_is_object(s)) {
        s = json_object();
        json_object_set_new(m, "summary", s);
    }
    json_object_update_new(
        s,
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "configs", (json_int_t)sum->n_configs,
                  "ok", (json_int_t)sum->n_ok, "invalid", (json_int_t)sum->n_invalid,
                  "compile_error", (json_int_t)sum->n_compile_error, "launch_error",
                  (json_int_t)sum->n_launch_error, "crashed", (json_int_t)sum->n_crashed, "timeout",
                  (json_int_t)sum->n_timeout, "skipped", (json_int_t)sum->n_skipped));
    if (sum->n_compiled)
        json_object_set_new(s, "compiled", json_integer((json_int_t)sum->n_compiled));
    json_object_set_new(s, "compile_seconds", json_real(compile));
    json_object_set_new(s, "wall_seconds", json_real(wall));
    json_object_set_new(s, "shard_seconds", json_real(shard_seconds));
    sum->wall_seconds = wall;
    sum->compile_seconds = compile;
}

/* One entry of the merged meta.json's "shards" list. New. */
static json_t *shard_entry(const meta_part *p)
{
    const json_t *pm = p->meta;
    return json_pack("{s:I, s:s, s:I, s:O?, s:O?, s:s, s:s, s:O?, s:O?, s:O?, s:O?}", "index",
                     (json_int_t)p->index, "dir", p->dir, "rows", (json_int_t)p->n_rows, "host",
                     json_object_get(pm, "host"), "device", json_object_get(pm, "device"), "start",
                     json_str(pm, "start"), "end", json_str(pm, "end"), "read_bw",
                     json_object_get(pm, "read_bw"), "estimated_seconds",
                     json_object_get(json_object_get(pm, "shard"), "estimated_seconds"), "summary",
                     json_object_get(pm, "summary"), "argv", json_object_get(pm, "argv"));
}

json_t *meta_merged(const meta_part *parts, size_t n, int argc, char **argv, run_summary *sum)
{
    json_t *m = json_deep_copy(parts[0].meta);
    if (!m)
        return NULL;
    meta_shard first;
    const char *why;
    meta_shard_read(parts[0].meta, &first, &why);
    json_object_set_new(m, "argv", argv_json(argc, argv));
    json_object_set_new(m, "shard",
                        json_pack("{s:b, s:I, s:s, s:I}", "merged", 1, "count",
                                  (json_int_t)first.count, "plan", first.plan, "total_configs",
                                  (json_int_t)first.total_configs));
    json_t *key = json_object_get(m, "key");
    json_object_del(key, "shard");
    meta_search_merge(m, parts, n);
    char buses[1024] = "";
    json_t *list = json_array();
    const char *start = NULL, *end = NULL;
    int all_ended = 1;
    double wall = 0, shard_seconds = 0, compile = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *pm = parts[i].meta;
        const json_t *ps = json_object_get(pm, "summary");
        const char *bus = json_str(json_object_get(pm, "key"), "pci_bus_id");
        if (bus[0] && !strstr(buses, bus)) {
            size_t len = strlen(buses);
            snprintf(buses + len, sizeof buses - len, "%s%s", len ? "," : "", bus);
        }
        const char *s0 = json_str(pm, "start"), *s1 = json_str(pm, "end");
        if (s0[0] && (!start || strcmp(s0, start) < 0))
            start = s0;
        if (!s1[0])
            all_ended = 0;
        else if (!end || strcmp(s1, end) > 0)
            end = s1;
        double w = json_number_value(json_object_get(ps, "wall_seconds"));
        double c = json_number_value(json_object_get(ps, "compile_seconds"));
        wall = w > wall ? w : wall;
        compile = c > compile ? c : compile;
        shard_seconds += w;
        json_array_append_new(list, shard_entry(&parts[i]));
    }
    if (key && buses[0])
        json_object_set_new(key, "pci_bus_id", json_string(buses));
    json_object_set_new(m, "shards", list);
    if (start)
        json_object_set_new(m, "start", json_string(start));
    if (all_ended && end)
        json_object_set_new(m, "end", json_string(end));
    else
        json_object_del(m, "end");
    merged_summary(m, compile, wall, shard_seconds, sum);
    return m;
}
