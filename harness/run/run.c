#include "run/run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <jansson.h>

#include "device/compile.h"
#include "device/gpu.h"
#include "device/monitor.h"
#include "analysis/report.h"
#include "store/results.h"
#include "analysis/roofline.h"
#include "model/shard.h"
#include "model/space.h"
#include "core/stats.h"
#include "device/timing.h"
#include "tune_git_rev.h"
#include "device/worker.h"

/* One distinct kernel instantiation: compiled once, loaded on first use. */
typedef struct {
    compile_job job;
    gpu_library *lib;
    void *kernel;
} run_kernel;

/* What the CPU side knows of each configuration before the GPU sees it. */
typedef struct {
    int n_refs;
    size_t refs[FAMILY_MAX_KERNELS]; /* indices into kernels */
    char *skip;                      /* family says it cannot run: reason */
} run_plan;

typedef struct {
    const sweep *sw;
    const run_options *opt;
    space *sp;
    run_plan *plans;
    run_kernel *kernels;
    size_t n_kernels, cap_kernels;
    tune_error *err;
    double t0;    /* start of the run (monotonic seconds) */
    monitor *mon; /* NVML, NULL when absent */
    roofline_ceilings ceil; /* for every row's roofline time */
    int have_ceil;
    char ceil_source[512];
    gpu_info gi;            /* the device (queried in a child process) */
    double read_bw;         /* B/s: given, or measured by the first worker */
    unsigned char *done;    /* per configuration: a row exists (this run or a resumed one) */
    char out_dir[PATH_MAX]; /* the run's folder */
    shard_plan *plan;       /* --shard: the sweep's shards; NULL: the whole sweep */
    char arch_name[16];     /* "sm_90": what the kernels were compiled for */
} run_ctx;

/* 64-bit FNV-1a, for the run key. */
typedef struct {
    uint64_t v;
} hash_state;

static hash_state hash_init(void) { return (hash_state){0xcbf29ce484222325ull}; }

static void hash_bytes_add(hash_state *h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h->v = (h->v ^ p[i]) * 0x100000001b3ull;
}

static void hash_add(hash_state *h, const char *s) { hash_bytes_add(h, s, strlen(s) + 1); }

void run_options_init(run_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->out_root = "results";
    opt->seed = 0x5eed;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void utc_stamp(char *buf, size_t size, const char *fmt)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, size, fmt, &tm);
}

static size_t kernel_index(run_ctx *rc, const family_kernel_ref *ref)
{
    for (size_t i = 0; i < rc->n_kernels; i++)
        if (strcmp(rc->kernels[i].job.source, ref->source) == 0 &&
            strcmp(rc->kernels[i].job.name, ref->name) == 0)
            return i;
    if (rc->n_kernels == rc->cap_kernels) {
        size_t cap = rc->cap_kernels ? 2 * rc->cap_kernels : 64;
        run_kernel *nk = realloc(rc->kernels, cap * sizeof *nk);
        if (!nk)
            return SIZE_MAX;
        rc->kernels = nk;
        rc->cap_kernels = cap;
    }
    run_kernel *k = &rc->kernels[rc->n_kernels];
    memset(k, 0, sizeof *k);
    snprintf(k->job.source, sizeof k->job.source, "%s", ref->source);
    snprintf(k->job.name, sizeof k->job.name, "%s", ref->name);
    return rc->n_kernels++;
}

/* Asks the family which kernels each configuration needs. */
static tune_status plan_configs(run_ctx *rc)
{
    size_t n = space_n_configs(rc->sp);
    rc->plans = calloc(n ? n : 1, sizeof *rc->plans);
    if (!rc->plans)
        return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    for (size_t i = 0; i < n; i++) {
        tune_point p;
        space_config_point(rc->sp, i, &p);
        family_kernel_ref refs[FAMILY_MAX_KERNELS];
        char why[512] = "";
        int nr = rc->sw->family->kernels(&p, refs, FAMILY_MAX_KERNELS, why, sizeof why);
        if (nr < 0) {
            rc->plans[i].skip = strdup(why);
            continue;
        }
        rc->plans[i].n_refs = nr;
        for (int r = 0; r < nr; r++) {
            size_t ki = kernel_index(rc, &refs[r]);
            if (ki == SIZE_MAX)
                return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
            rc->plans[i].refs[r] = ki;
        }
    }
    return TUNE_OK;
}

static tune_status compile_all(run_ctx *rc, int arch, const char *cache_dir, run_summary *sum)
{
    char kdir[4096];
    const char *kernels_dir = rc->opt->kernels_dir;
    if (!kernels_dir && !(kernels_dir = compile_find_kernels_dir(kdir, sizeof kdir)))
        return tune_error_set(rc->err, TUNE_ERR_IO, "kernels_src",
                              "cannot find the kernel sources (set TUNE_KERNELS_DIR)");
    compile_job *jobs = calloc(rc->n_kernels ? rc->n_kernels : 1, sizeof *jobs);
    if (!jobs)
        return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    for (size_t i = 0; i < rc->n_kernels; i++)
        jobs[i] = rc->kernels[i].job;
    compile_options copt = {kernels_dir, cache_dir, arch, 0};
    double t0 = now_seconds();
    tune_status st = compile_run(jobs, rc->n_kernels, &copt, rc->err);
    sum->compile_seconds = now_seconds() - t0;
    for (size_t i = 0; i < rc->n_kernels; i++) {
        rc->kernels[i].job = jobs[i];
        sum->n_cached += (size_t)jobs[i].from_cache;
        sum->n_kernel_errors += jobs[i].status != TUNE_OK;
    }
    sum->n_kernels = rc->n_kernels;
    free(jobs);
    return st;
}

/* Removes a private kernel cache folder (its files, then itself). */
static void remove_cache_dir(const char *dir)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        char path[PATH_MAX];
        if (e->d_name[0] != '.' && (size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < sizeof path)
            unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* NVRTC, once it has compiled, leaves this process unable to hand CUDA to a forked worker (the
 * worker's first CUDA call fails with "initialization error"; seen on the H200 machine with CUDA
 * 13.0). So a GPU run compiles in a child process that fills the kernel cache, and this process
 * then only reads the cache. The child reports its counts: "K kernels cached errors seconds". */
typedef struct {
    run_ctx *rc;
    int arch;
    const char *cache_dir;
} compile_child_ctx;

static int compile_child_body(void *ctx, int fd)
{
    compile_child_ctx *c = ctx;
    run_summary sum;
    memset(&sum, 0, sizeof sum);
    tune_error e = {0};
    c->rc->err = &e;
    if (compile_all(c->rc, c->arch, c->cache_dir, &sum) != TUNE_OK) {
        worker_send(fd, "F %d %s%s%s", (int)e.code, e.where, e.where[0] ? ": " : "", e.message);
        return 1;
    }
    worker_send(fd, "K %zu %zu %zu %.17g", sum.n_kernels, sum.n_cached, sum.n_kernel_errors,
                sum.compile_seconds);
    return 0;
}

static tune_status compile_isolated(run_ctx *rc, int arch, const char *cache_dir, run_summary *sum)
{
    compile_child_ctx c = {rc, arch, cache_dir};
    worker *w = worker_start(compile_child_body, &c, rc->err);
    if (!w)
        return rc->err ? rc->err->code : TUNE_ERR_IO;
    char line[4096], how[256];
    run_summary child;
    memset(&child, 0, sizeof child);
    int got = 0;
    while (worker_read_line(w, line, sizeof line, 3600) == 1) {
        if (line[0] == 'K')
            got = sscanf(line, "K %zu %zu %zu %lg", &child.n_kernels, &child.n_cached,
                         &child.n_kernel_errors, &child.compile_seconds) == 4;
        else if (line[0] == 'F')
            tune_error_set(rc->err, TUNE_ERR_NVRTC, "compile", "%s", line + 2);
    }
    int code = worker_wait(w, how, sizeof how);
    if (!got || code != 0)
        return tune_error_set(rc->err, TUNE_ERR_NVRTC, "compile", "the compile process ended: %s",
                              how);
    tune_status st = compile_all(rc, arch, cache_dir, sum); /* cache reads only */
    sum->n_cached = child.n_cached;
    sum->compile_seconds = child.compile_seconds;
    return st;
}

static void *lookup_kernel(void *kctx, const char *source, const char *name)
{
    run_ctx *rc = kctx;
    for (size_t i = 0; i < rc->n_kernels; i++) {
        run_kernel *k = &rc->kernels[i];
        if (strcmp(k->job.source, source) != 0 || strcmp(k->job.name, name) != 0)
            continue;
        if (k->job.status != TUNE_OK)
            return NULL;
        if (!k->lib) {
            k->lib = gpu_library_load(k->job.cubin, rc->err);
            if (k->lib)
                k->kernel = gpu_library_kernel(k->lib, k->job.lowered, rc->err);
        }
        return k->kernel;
    }
    return NULL;
}

static void free_ctx(run_ctx *rc)
{
    shard_plan_free(rc->plan);
    free(rc->done);
    for (size_t i = 0; rc->plans && i < space_n_configs(rc->sp); i++)
        free(rc->plans[i].skip);
    free(rc->plans);
    for (size_t i = 0; i < rc->n_kernels; i++) {
        gpu_library_free(rc->kernels[i].lib);
        compile_job_clear(&rc->kernels[i].job);
    }
    free(rc->kernels);
    space_free(rc->sp);
}

/* ---- meta.json ---- */

static json_t *device_json(const gpu_info *gi)
{
    char cc[16];
    snprintf(cc, sizeof cc, "%d.%d", gi->cc_major, gi->cc_minor);
    return json_pack("{s:s, s:i, s:s, s:s, s:i, s:I, s:I, s:i, s:i, s:i}", "name", gi->name,
                     "ordinal", gi->ordinal, "pci_bus_id", gi->pci_bus_id, "compute_capability", cc,
                     "sm_count", gi->sm_count, "l2_bytes", (json_int_t)gi->l2_bytes, "memory_bytes",
                     (json_int_t)gi->global_mem, "sm_clock_max_khz", gi->sm_clock_khz,
                     "mem_clock_max_khz", gi->mem_clock_khz, "mem_bus_bits", gi->mem_bus_bits);
}

/* First line of /proc/driver/nvidia/version ("NVRM version: ... 580.159.04 ..."), if any. */
static const char *driver_version_text(char *buf, size_t size)
{
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f)
        return NULL;
    const char *line = fgets(buf, (int)size, f);
    fclose(f);
    if (line)
        buf[strcspn(buf, "\n")] = '\0';
    return line;
}

static json_t *strings_json(char *const *s, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(s[i]));
    return a;
}

static json_t *meta_build(const run_ctx *rc, const gpu_info *gi, const run_summary *sum,
                          const char *start, const char *end, json_t *key)
{
    const sweep *sw = rc->sw;
    json_t *m = json_object();
    json_object_set_new(m, "schema_version", json_integer(1));
    json_object_set_new(m, "tool", json_pack("{s:s, s:s, s:s}", "name", "tune", "version",
                                             TUNE_VERSION, "git_rev", TUNE_GIT_REV));
    json_t *argv = json_array();
    for (int i = 0; i < rc->opt->argc; i++)
        json_array_append_new(argv, json_string(rc->opt->argv[i]));
    json_object_set_new(m, "argv", argv);
    struct utsname un;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    if (uname(&un) == 0)
        json_object_set_new(m, "host", json_pack("{s:s, s:s, s:s, s:s}", "hostname", host, "system",
                                                 un.sysname, "release", un.release, "machine",
                                                 un.machine));
    json_object_set_new(m, "sweep",
                        json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "file", sw->file, "name",
                                  sw->name, "family", sw->family_name, "op", sw->op, "bytes",
                                  sw->bytes_src, "flops", sw->flops_src));
    const sweep_timing *tt = &sw->timing;
    json_t *timing_j = json_pack(
        "{s:i, s:i, s:b, s:b, s:s, s:s, s:i}", "warmup", tt->warmup, "reps", tt->reps, "flush_l2",
        tt->flush_l2, "fresh_indices", tt->fresh_indices, "stop",
        tt->stop == SWEEP_TIMING_STOP_ADAPTIVE ? "adaptive" : "fixed", "mode",
        tt->mode == SWEEP_TIMING_MODE_HOT     ? "hot"
        : tt->mode == SWEEP_TIMING_MODE_GRAPH ? "graph"
                                              : "cold",
        "batch", tt->batch);
    if (tt->stop == SWEEP_TIMING_STOP_ADAPTIVE)
        json_object_update_new(timing_j,
                               json_pack("{s:f, s:i, s:i, s:f, s:f}", "rel_stderr", tt->rel_stderr,
                                         "min_reps", tt->min_reps, "max_reps", tt->max_reps,
                                         "min_time_s", tt->min_time_s, "max_time_s",
                                         tt->max_time_s));
    json_object_set_new(m, "timing", timing_j);
    json_object_set_new(m, "report",
                        json_pack("{s:o, s:o}", "rows",
                                  strings_json(sw->report_rows, sw->n_report_rows), "cols",
                                  strings_json(sw->report_cols, sw->n_report_cols)));
    if (gi) {
        json_object_set_new(m, "device", device_json(gi));
        int major = 0, minor = 0, patch = 0;
        cublasGetProperty(MAJOR_VERSION, &major);
        cublasGetProperty(MINOR_VERSION, &minor);
        cublasGetProperty(PATCH_LEVEL, &patch);
        char cb[32];
        snprintf(cb, sizeof cb, "%d.%d.%d", major, minor, patch);
        json_object_set_new(m, "versions",
                            json_pack("{s:i, s:i, s:i, s:s}", "driver_cuda", gi->driver_version,
                                      "runtime", gi->runtime_version, "nvrtc",
                                      compile_nvrtc_version(), "cublas", cb));
        char drv[256];
        if (monitor_driver_version(rc->mon, drv, sizeof drv) || driver_version_text(drv, sizeof drv))
            json_object_set_new(json_object_get(m, "versions"), "driver", json_string(drv));
    }
    if (rc->opt->compile_only)
        json_object_set_new(m, "compile_only", json_pack("{s:s}", "arch", rc->arch_name));
    if (rc->plan) {
        size_t si = rc->opt->shard_index;
        json_object_set_new(
            m, "shard",
            json_pack("{s:I, s:I, s:I, s:I, s:s, s:f, s:f}", "index", (json_int_t)si, "count",
                      (json_int_t)shard_plan_count(rc->plan), "configs",
                      (json_int_t)shard_plan_n_configs(rc->plan, si), "total_configs",
                      (json_int_t)space_n_configs(rc->sp), "plan", shard_plan_hash(rc->plan),
                      "estimated_seconds", shard_plan_cost(rc->plan, si),
                      "total_estimated_seconds", shard_plan_total_cost(rc->plan)));
    }
    if (key)
        json_object_set(m, "key", key);
    json_object_set_new(m, "nvml", json_boolean(rc->mon != NULL));
    json_object_set_new(m, "roofline_ceilings", json_string(rc->ceil_source));
    json_object_set_new(m, "seed", json_integer((json_int_t)rc->opt->seed));
    json_object_set_new(m, "read_bw",
                        json_pack("{s:f, s:s}", "bytes_per_second", sum->read_bw, "source",
                                  rc->opt->compile_only ? "none (compile-only)"
                                  : rc->opt->read_bw > 0 ? "given" : "measured (read-only probe, 4 GiB, median of 20)"));
    json_object_set_new(m, "start", json_string(start));
    if (end)
        json_object_set_new(m, "end", json_string(end));
    json_object_set_new(
        m, "summary",
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f}", "configs",
                  (json_int_t)sum->n_configs, "pruned", (json_int_t)sum->n_pruned, "ok",
                  (json_int_t)sum->n_ok, "invalid", (json_int_t)sum->n_invalid, "compile_error",
                  (json_int_t)sum->n_compile_error, "launch_error", (json_int_t)sum->n_launch_error, "crashed", (json_int_t)sum->n_crashed,
                  "timeout", (json_int_t)sum->n_timeout,
                  "skipped", (json_int_t)sum->n_skipped, "kernels", (json_int_t)sum->n_kernels,
                  "kernels_cached", (json_int_t)sum->n_cached, "kernel_errors",
                  (json_int_t)sum->n_kernel_errors, "compile_seconds", sum->compile_seconds,
                  "wall_seconds", sum->wall_seconds));
    if (rc->opt->compile_only)
        json_object_set_new(json_object_get(m, "summary"), "compiled",
                            json_integer((json_int_t)sum->n_compiled));
    return m;
}

static tune_status meta_write(const char *dir, json_t *meta, tune_error *err)
{
    char path[PATH_MAX + 16], tmp[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (json_dump_file(meta, tmp, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0 ||
        rename(tmp, path) != 0)
        return tune_error_set(err, TUNE_ERR_IO, path, "cannot write");
    return TUNE_OK;
}

/* ---- rows ---- */

typedef struct {
    const run_ctx *rc;
    run_summary *sum;
    double t0;
    size_t done, total, failed;
    double last_print;
    int tty;
} run_progress;

static void fill_row(const run_ctx *rc, size_t ci, const tune_point *p, result_row *row,
                     const char *device)
{
    const sweep *sw = rc->sw;
    const space_config *c = space_config_at(rc->sp, ci);
    result_row_init(row);
    row->sweep = sw->name;
    row->family = sw->family_name;
    row->op = sw->op;
    row->method = sw->methods[c->method];
    for (size_t a = 0; a < sw->n_problem; a++) {
        expr_value v;
        if (point_get(p, sw->problem[a].name, &v) == 0)
            point_set(&row->values, sw->problem[a].name, v);
    }
    row->n_axes = row->values.n;
    row->n_params = sw->n_params;
    for (size_t a = 0; a < sw->n_params; a++) {
        row->param_names[a] = sw->params[a].name;
        expr_value v;
        if (c->param != SPACE_NO_PARAM && point_get(p, sw->params[a].name, &v) == 0)
            point_set(&row->values, sw->params[a].name, v);
    }
    row->device = (char *)device;
    expr_value v;
    if (expr_eval(sw->bytes, point_lookup, (void *)p, &v, NULL) == TUNE_OK)
        row->bytes = expr_value_as_double(v);
    if (expr_eval(sw->flops, point_lookup, (void *)p, &v, NULL) == TUNE_OK)
        row->flops = expr_value_as_double(v);
}

/* Identity of a row's configuration: "method|name=value|..." over axes then parameters. Two rows
 * of one sweep have equal identities exactly when they measure the same configuration. */
static const char *row_identity(const result_row *row, char *buf, size_t size)
{
    size_t len = (size_t)snprintf(buf, size, "%s", row->method ? row->method : "");
    for (size_t i = 0; i < row->values.n && len < size; i++) {
        char v[256];
        len += (size_t)snprintf(buf + len, size - len, "|%s=%s", row->values.names[i],
                                expr_value_format(row->values.vals[i], v, sizeof v));
    }
    return buf;
}

static void progress_print(run_progress *pr, int final)
{
    double now = now_seconds();
    if (!final && now - pr->last_print < (pr->tty ? 0.2 : 10.0))
        return;
    pr->last_print = now;
    double el = now - pr->t0;
    double eta = pr->done ? el / (double)pr->done * (double)(pr->total - pr->done) : 0;
    fprintf(stderr, "%s[%zu/%zu] failed %zu, elapsed %.0fs, ETA %.0fs%s", pr->tty ? "\r" : "",
            pr->done, pr->total, pr->failed, el, eta, pr->tty && !final ? "   " : "\n");
    fflush(stderr);
}

static void count_status(run_summary *s, result_status st)
{
    switch (st) {
    case RESULT_OK: s->n_ok++; break;
    case RESULT_INVALID: s->n_invalid++; break;
    case RESULT_COMPILE_ERROR: s->n_compile_error++; break;
    case RESULT_SKIPPED: s->n_skipped++; break;
    case RESULT_CRASHED: s->n_crashed++; break;
    case RESULT_TIMEOUT: s->n_timeout++; break;
    case RESULT_COMPILED: s->n_compiled++; break;
    default: s->n_launch_error++; break;
    }
}

static void progress_count(run_progress *pr, result_status st)
{
    count_status(pr->sum, st);
    pr->done++;
    pr->failed += st != RESULT_OK && st != RESULT_SKIPPED;
    if (!pr->rc->opt->quiet)
        progress_print(pr, 0);
}

/* Status and reason of a configuration whose kernels failed to compile, or -1. */
static int compile_failure(const run_ctx *rc, size_t ci, char **reason)
{
    const run_plan *pl = &rc->plans[ci];
    for (int r = 0; r < pl->n_refs; r++) {
        const compile_job *j = &rc->kernels[pl->refs[r]].job;
        if (j->status != TUNE_OK) {
            *reason = j->log;
            return RESULT_COMPILE_ERROR;
        }
    }
    return -1;
}

/* Validates and times configuration ci on the shape's state; fills the row. */
static void measure_config(run_ctx *rc, void *state, timing *tm, const tune_point *p,
                           double read_bw, result_row *row, char *reason, size_t reason_size)
{
    const tune_family *fam = rc->sw->family;
    tune_error e = {0};
    double err_val, tol;
    tune_status st = fam->prepare(state, p, &e);
    if (st == TUNE_OK)
        st = fam->check(state, &err_val, &tol, &e);
    if (st != TUNE_OK) {
        row->status = st == TUNE_ERR_UNSUPPORTED || st == TUNE_ERR_OOM ? RESULT_SKIPPED
                                                                        : RESULT_LAUNCH_ERROR;
        char text[2048];
        snprintf(reason, reason_size, "%s%s", st == TUNE_ERR_OOM ? "out of memory: " : "",
                 tune_error_text(&e, text, sizeof text));
        row->reason = reason;
        return;
    }
    row->error = err_val;
    row->tolerance = tol;
    if (!(err_val <= tol)) {
        row->status = RESULT_INVALID;
        snprintf(reason, reason_size, "normalised error %.3g exceeds tolerance %.3g", err_val, tol);
        row->reason = reason;
        return;
    }
    double *samples = malloc(timing_max_samples(&rc->sw->timing) * sizeof *samples);
    timing_info ti;
    /* A measurement during which NVML reported a slowdown (power cap, thermal, hardware slowdown)
     * is flagged; with --retake-throttled N it is taken again, up to N times. */
    int throttled = 0;
    for (int attempt = 0; samples; attempt++) {
        monitor_sample before, after;
        int seen = monitor_read(rc->mon, &before) == 0;
        st = timing_measure(tm, fam, state, &rc->sw->timing, samples, &ti, &e);
        seen = seen && monitor_read(rc->mon, &after) == 0;
        throttled = seen && monitor_throttled(&before, &after);
        if (st != TUNE_OK || !throttled || attempt >= rc->opt->retake_throttled)
            break;
    }
    if (!samples)
        st = TUNE_ERR_NOMEM;
    row->throttled = throttled;
    if (st != TUNE_OK) {
        row->status = RESULT_LAUNCH_ERROR;
        row->reason = (char *)tune_error_text(&e, reason, reason_size);
    } else {
        stats_summarize(samples, ti.n, &row->time);
        row->timing_mode = (char *)ti.mode; /* static strings */
        row->stop_reason = (char *)ti.stop_reason;
        row->batch = ti.batch;
        if (ti.note) { /* why graph mode fell back to hot: kept in the reason */
            snprintf(reason, reason_size, "%s", ti.note);
            row->reason = reason;
        }
        row->status = RESULT_OK;
        row->bandwidth = row->bytes / row->time.median;
        row->flop_rate = row->flops / row->time.median;
        row->read_bw = read_bw;
        row->pct_read_bw = 100.0 * row->bandwidth / read_bw;
        if (rc->have_ceil) {
            row->roofline_time = roofline_time(&rc->ceil, row->bytes, row->flops,
                                               roofline_row_precision(row), NULL);
            row->roofline_fraction = row->roofline_time / row->time.median;
        }
        monitor_sample ms;
        if (monitor_read(rc->mon, &ms) == 0) {
            row->clock_sm_mhz = ms.sm_mhz;
            row->clock_mem_mhz = ms.mem_mhz;
            row->temperature_c = ms.temperature_c;
            row->power_w = ms.power_w;
            row->throttle_reasons = ms.throttle_reasons;
        }
    }
    free(samples);
}

static tune_status make_run_dir(const run_ctx *rc, char *dir, size_t size)
{
    if (rc->opt->out_dir) {
        snprintf(dir, size, "%s", rc->opt->out_dir);
    } else {
        char stamp[32];
        utc_stamp(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ");
        snprintf(dir, size, "%s/%s/%s", rc->opt->out_root, rc->sw->name, stamp);
    }
    return results_mkdirs(dir, rc->err);
}

static tune_status print_and_write_report(const sweep *sw, const char *dir, int quiet,
                                          tune_error *err);

/* Ceilings for the rows' roofline times: the device's calibration file (results root's
 * calibration/<device>.json, from `tune calibrate`) when there is one, else the specs table's
 * peak x achievable; the read bandwidth measured by this run replaces either's. */
static void load_ceilings(run_ctx *rc, const gpu_info *gi, double read_bw)
{
    tune_error e = {0};
    roofline_specs *specs = roofline_specs_load(NULL, &e);
    const roofline_gpu *g = specs ? roofline_specs_match(specs, gi->name) : NULL;
    char path[PATH_MAX];
    roofline_calibration cal;
    roofline_calibration_init(&cal);
    roofline_calibration_path(rc->opt->out_root, gi->name, path, sizeof path);
    if (roofline_calibration_load(path, &cal, NULL) == TUNE_OK) {
        roofline_ceilings_from_calibration(&cal, g, &rc->ceil);
        snprintf(rc->ceil_source, sizeof rc->ceil_source, "calibration %.400s (%.30s)", path,
                 cal.date);
        rc->have_ceil = 1;
    } else if (g) {
        roofline_ceilings_from_gpu(g, &rc->ceil);
        snprintf(rc->ceil_source, sizeof rc->ceil_source, "specs table: %s, peak x achievable",
                 g->name);
        rc->have_ceil = 1;
    } else {
        snprintf(rc->ceil_source, sizeof rc->ceil_source, "none: %.400s",
                 specs ? "device not in the specs table" : e.message);
    }
    if (rc->have_ceil) {
        rc->ceil.read_bw = read_bw;
        if (rc->ceil.copy_bw > read_bw)
            rc->ceil.copy_bw = read_bw;
    }
    roofline_specs_free(specs);
}

/* ---- interleaved re-timing of each shape's top candidates ---- */

typedef struct {
    size_t ci;
    double median;
} run_candidate;

static int candidate_cmp(const void *a, const void *b)
{
    double x = ((const run_candidate *)a)->median, y = ((const run_candidate *)b)->median;
    return x < y ? -1 : x > y;
}

static json_t *params_json(const run_ctx *rc, const tune_point *p)
{
    json_t *o = json_object();
    for (size_t a = 0; a < rc->sw->n_params; a++) {
        expr_value v;
        if (point_get(p, rc->sw->params[a].name, &v) == 0)
            json_object_set_new(o, rc->sw->params[a].name,
                                v.type == EXPR_STR ? json_string(v.s) : json_integer(v.i));
    }
    return o;
}

#define RETIME_TOP 3
#define RETIME_ROUNDS 30

/* Re-times the shape's fastest RETIME_TOP configurations interleaved and appends the verdict to
 * retime.jsonl: the winner, its margin over the runner-up, and "tie" when that margin is within
 * twice the combined standard error of the two medians. */
static void retime_shape(run_ctx *rc, void *state, timing *tm, run_candidate *cands, size_t n)
{
    if (n < 2)
        return;
    qsort(cands, n, sizeof *cands, candidate_cmp);
    size_t k = n < RETIME_TOP ? n : RETIME_TOP;
    tune_point pts[RETIME_TOP];
    const tune_point *cfgs[RETIME_TOP];
    for (size_t c = 0; c < k; c++) {
        space_config_point(rc->sp, cands[c].ci, &pts[c]);
        cfgs[c] = &pts[c];
    }
    double samples[RETIME_TOP * RETIME_ROUNDS];
    tune_error e = {0};
    if (timing_interleaved(tm, rc->sw->family, state, cfgs, k, RETIME_ROUNDS,
                           rc->sw->timing.flush_l2, samples, &e) != TUNE_OK)
        return; /* a retime that fails costs nothing measured */
    stats_summary st[RETIME_TOP];
    size_t win = 0, second = SIZE_MAX;
    for (size_t c = 0; c < k; c++) {
        stats_summarize(samples + c * RETIME_ROUNDS, RETIME_ROUNDS, &st[c]);
        if (st[c].median < st[win].median)
            win = c;
    }
    for (size_t c = 0; c < k; c++)
        if (c != win && (second == SIZE_MAX || st[c].median < st[second].median))
            second = c;
    /* standard error of a median ~ 1.2533 sigma / sqrt(n) */
    double se_w = 1.2533 * st[win].stdev / sqrt((double)RETIME_ROUNDS);
    double se_s = 1.2533 * st[second].stdev / sqrt((double)RETIME_ROUNDS);
    double diff = st[second].median - st[win].median;
    int tie = diff < 2.0 * sqrt(se_w * se_w + se_s * se_s);

    json_t *shape = json_object();
    const tune_point *sp = space_shape(rc->sp, space_config_at(rc->sp, cands[0].ci)->shape);
    for (size_t a = 0; a < rc->sw->n_problem; a++) {
        expr_value v;
        if (point_get(sp, rc->sw->problem[a].name, &v) == 0)
            json_object_set_new(shape, rc->sw->problem[a].name,
                                v.type == EXPR_STR ? json_string(v.s) : json_integer(v.i));
    }
    json_t *list = json_array();
    for (size_t c = 0; c < k; c++)
        json_array_append_new(
            list, json_pack("{s:o, s:f, s:f, s:f}", "params", params_json(rc, cfgs[c]),
                            "first_median", cands[c].median, "median", st[c].median, "stderr",
                            1.2533 * st[c].stdev / sqrt((double)RETIME_ROUNDS)));
    json_t *rec = json_pack("{s:o, s:s, s:i, s:o, s:O, s:O, s:f, s:b}", "shape", shape, "method",
                            rc->sw->methods[space_config_at(rc->sp, cands[0].ci)->method], "rounds",
                            RETIME_ROUNDS, "candidates", list, "winner",
                            json_object_get(json_array_get(list, win), "params"), "runner_up",
                            json_object_get(json_array_get(list, second), "params"), "margin",
                            diff / st[win].median, "tie", tie);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/retime.jsonl", rc->out_dir);
    char *line = rec ? json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    FILE *f = line ? fopen(path, "a") : NULL;
    if (f) {
        fprintf(f, "%s\n", line);
        fclose(f);
    }
    free(line);
    json_decref(rec);
}

/* ---- the worker: a child process that owns the GPU (crash isolation) ----
 *
 * Messages to the coordinator, one per line:
 *   R <bytes/s>          the read bandwidth it measured
 *   B <i>                configuration i begins (the watchdog starts)
 *   E <i> <status>       configuration i's row is written
 *   C <i> <text>         configuration i broke the CUDA context (sticky error); the worker exits
 *   F <code> <text>      the worker cannot start (no GPU, out of memory for its buffers, ...)
 */

enum { WORKER_EXIT_STICKY = 3, WORKER_EXIT_FATAL = 4 };

/* The row of configuration ci, measured on the shape's state (NULL when the shape could not be
 * set up: shape_err says why). Returns 1 when the CUDA context broke (the row is not valid). */
static int worker_config(run_ctx *rc, void *state, const tune_error *shape_err, timing *tm,
                         size_t ci, result_row *row, char *reason, size_t reason_size)
{
    tune_point p;
    space_config_point(rc->sp, ci, &p);
    fill_row(rc, ci, &p, row, rc->gi.name);
    const run_plan *pl = &rc->plans[ci];
    char *log = NULL;
    if (pl->n_refs > 0 && space_config_at(rc->sp, ci)->param != SPACE_NO_PARAM)
        row->kernel = rc->kernels[pl->refs[0]].job.name;
    if (pl->skip) {
        row->status = RESULT_SKIPPED;
        row->reason = pl->skip;
    } else if (compile_failure(rc, ci, &log) >= 0) {
        row->status = RESULT_COMPILE_ERROR;
        row->reason = log ? log : "compile error";
    } else if (!state) {
        char text[2048];
        row->status = shape_err->code == TUNE_ERR_OOM || shape_err->code == TUNE_ERR_UNSUPPORTED
                          ? RESULT_SKIPPED
                          : RESULT_LAUNCH_ERROR;
        snprintf(reason, reason_size, "%s%s", shape_err->code == TUNE_ERR_OOM ? "out of memory: " : "",
                 tune_error_text(shape_err, text, sizeof text));
        row->reason = reason;
    } else {
        measure_config(rc, state, tm, &p, rc->read_bw, row, reason, reason_size);
    }
    return row->status == RESULT_LAUNCH_ERROR && gpu_context_broken();
}

static int worker_body(void *ctx, int fd)
{
    run_ctx *rc = ctx;
    tune_error e = {0};
    tune_status st = TUNE_OK;
    cudaStream_t stream = NULL;
    cublasHandle_t cublas = NULL;
    timing *tm = NULL;
    results_writer *w = NULL;
    rc->err = &e; /* the child's own error record */
    if ((st = gpu_select(rc->gi.ordinal, &e)) != TUNE_OK)
        goto fatal;
    GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), &e, st, fatal);
    if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(cublas, stream) != CUBLAS_STATUS_SUCCESS) {
        st = tune_error_set(&e, TUNE_ERR_CUBLAS, "cublasCreate", "cannot create a handle");
        goto fatal;
    }
    void *probe = lookup_kernel(rc, "common.cu", "tune_read_probe");
    if (!(tm = timing_init(stream, rc->gi.l2_bytes, probe, &e))) {
        st = e.code;
        goto fatal;
    }
    timing_set_cublas(tm, cublas);
    if (rc->read_bw <= 0) {
        if ((st = roofline_measure_read_bw(tm, stream, probe, rc->gi.sm_count, (size_t)4 << 30, 20,
                                           &rc->read_bw, &e)) != TUNE_OK)
            goto fatal;
        worker_send(fd, "R %.17g", rc->read_bw);
    }
    load_ceilings(rc, &rc->gi, rc->read_bw);
    rc->mon = monitor_open(rc->gi.pci_bus_id);
    if (!(w = results_open(rc->out_dir, &e))) {
        st = e.code;
        goto fatal;
    }

    family_env env = {rc->gi.ordinal, stream, cublas, rc->gi.l2_bytes, rc->opt->seed, lookup_kernel, rc};
    const tune_family *fam = rc->sw->family;
    void *state = NULL;
    size_t shape = SIZE_MAX, n_cand = 0;
    tune_error shape_err = {0};
    run_candidate *cands = calloc(space_n_configs(rc->sp) + 1, sizeof *cands);
    if (!cands) {
        st = tune_error_set(&e, TUNE_ERR_NOMEM, "worker", "out of memory");
        goto fatal;
    }
    for (size_t ci = 0; ci < space_n_configs(rc->sp); ci++) {
        if (rc->done[ci])
            continue;
        worker_send(fd, "B %zu", ci);
        size_t si = space_config_at(rc->sp, ci)->shape;
        if (si != shape) {
            if (state && n_cand >= 2) {
                worker_send(fd, "T");
                retime_shape(rc, state, tm, cands, n_cand);
            }
            n_cand = 0;
            fam->shape_free(state);
            tune_error_clear(&shape_err);
            state = fam->shape_init(&env, space_shape(rc->sp, si), &shape_err);
            shape = si;
        }
        result_row row;
        char reason[4096], stamp[32];
        if (worker_config(rc, state, &shape_err, tm, ci, &row, reason, sizeof reason)) {
            worker_send(fd, "C %zu %s", ci, row.reason ? row.reason : "CUDA context broken");
            return WORKER_EXIT_STICKY; /* the process exits: the driver frees the context */
        }
        utc_stamp(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ");
        row.timestamp = stamp;
        if (results_write_row(w, &row, &e) != TUNE_OK) {
            st = e.code;
            goto fatal;
        }
        worker_send(fd, "E %zu %d", ci, (int)row.status);
        if (row.status == RESULT_OK && space_config_at(rc->sp, ci)->param != SPACE_NO_PARAM)
            cands[n_cand++] = (run_candidate){ci, row.time.median};
    }
    if (state && n_cand >= 2) {
        worker_send(fd, "T");
        retime_shape(rc, state, tm, cands, n_cand);
    }
    free(cands);
    fam->shape_free(state);
    results_close(w);
    monitor_close(rc->mon);
    timing_free(tm);
    cublasDestroy(cublas);
    cudaStreamDestroy(stream);
    return 0;
fatal:
    worker_send(fd, "F %d %s%s%s", (int)st, e.where, e.where[0] ? ": " : "", e.message);
    return WORKER_EXIT_FATAL;
}

/* ---- the coordinator ---- */

/* Writes the row of a configuration whose worker died (crashed) or hung (timeout). */
static tune_status write_lost_row(run_ctx *rc, size_t ci, result_status status, const char *reason)
{
    tune_point p;
    result_row row;
    char stamp[32];
    space_config_point(rc->sp, ci, &p);
    fill_row(rc, ci, &p, &row, rc->gi.name);
    const run_plan *pl = &rc->plans[ci];
    if (pl->n_refs > 0 && space_config_at(rc->sp, ci)->param != SPACE_NO_PARAM)
        row.kernel = rc->kernels[pl->refs[0]].job.name;
    row.status = status;
    row.reason = (char *)reason;
    utc_stamp(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ");
    row.timestamp = stamp;
    results_writer *w = results_open(rc->out_dir, rc->err);
    if (!w)
        return rc->err ? rc->err->code : TUNE_ERR_IO;
    tune_status st = results_write_row(w, &row, rc->err);
    results_close(w);
    return st;
}

/* Runs workers until every configuration has a row: a worker that crashes or hangs costs its
 * current configuration a `crashed` or `timeout` row, and a new worker goes on with the next. */
static tune_status coordinate(run_ctx *rc, run_summary *sum)
{
    size_t n = space_n_configs(rc->sp), left = 0;
    for (size_t i = 0; i < n; i++)
        left += !rc->done[i];
    run_progress pr = {rc, sum, now_seconds(), 0, left, 0, 0, isatty(2)};
    const double watchdog = rc->opt->watchdog_s > 0 ? rc->opt->watchdog_s : 20.0;
    tune_status st = TUNE_OK;
    while (left > 0 && st == TUNE_OK) {
        worker *w = worker_start(worker_body, rc, rc->err);
        if (!w)
            return rc->err ? rc->err->code : TUNE_ERR_IO;
        size_t current = SIZE_MAX;
        int retiming = 0; /* between a shape's last row and the next configuration */
        double timeout = watchdog + 60; /* start-up: context, read bandwidth */
        char line[4096], crash[4096] = "", fatal[4096] = "", how[256];
        int r;
        while ((r = worker_read_line(w, line, sizeof line, timeout)) == 1) {
            size_t i = 0;
            int code = 0, off = 0;
            if (line[0] == 'T') {
                retiming = 1;
            } else if (line[0] == 'B' && sscanf(line, "B %zu", &i) == 1 && i < n) {
                current = i;
                retiming = 0;
                timeout = watchdog;
            } else if (line[0] == 'E' && sscanf(line, "E %zu %d", &i, &code) == 2 && i < n) {
                rc->done[i] = 1;
                left--;
                progress_count(&pr, (result_status)code);
                current = SIZE_MAX;
            } else if (line[0] == 'C' && sscanf(line, "C %zu %n", &i, &off) == 1) {
                snprintf(crash, sizeof crash, "%s", line + off);
            } else if (line[0] == 'R') {
                rc->read_bw = sum->read_bw = strtod(line + 2, NULL);
            } else if (line[0] == 'F') {
                snprintf(fatal, sizeof fatal, "%s", line + 2);
            }
        }
        if (r < 0)
            worker_kill(w);
        int code = worker_wait(w, how, sizeof how);
        if (!fatal[0] && current == SIZE_MAX && code != 0 && retiming) {
            /* the re-timing of measured configurations failed: nothing is lost, go on */
            if (!rc->opt->quiet)
                fprintf(stderr, "tune: the interleaved re-timing of a shape ended the worker (%s)\n",
                        how);
            continue;
        }
        if (fatal[0] || (current == SIZE_MAX && code != 0)) {
            char *msg = fatal[0] ? fatal : how;
            int status = (int)strtol(msg, &msg, 10);
            return tune_error_set(rc->err, status == TUNE_ERR_NO_GPU ? TUNE_ERR_NO_GPU : TUNE_ERR_CUDA,
                                  "worker", "%s", fatal[0] ? msg + 1 : how);
        }
        if (current != SIZE_MAX) {
            char reason[4352];
            if (r < 0)
                snprintf(reason, sizeof reason, "no progress for %.0f s (watchdog): worker killed",
                         watchdog);
            else
                snprintf(reason, sizeof reason, "%s (worker %s)", crash[0] ? crash : "worker died",
                         how);
            result_status rs = r < 0 ? RESULT_TIMEOUT : RESULT_CRASHED;
            st = write_lost_row(rc, current, rs, reason);
            rc->done[current] = 1;
            left--;
            progress_count(&pr, rs);
            if (!rc->opt->quiet)
                fprintf(stderr, "%stune: configuration %zu %s: %s\n", pr.tty ? "\n" : "", current,
                        result_status_str(rs), reason);
        }
    }
    if (!rc->opt->quiet)
        progress_print(&pr, 1);
    return st;
}

/* A compile-only run's rows (--compile-only): compiled, compile_error with the NVRTC log, or
 * skipped when the family cannot run the configuration; nothing measured. */
static tune_status write_compile_rows(run_ctx *rc, run_summary *sum)
{
    results_writer *w = results_open(rc->out_dir, rc->err);
    if (!w)
        return rc->err ? rc->err->code : TUNE_ERR_IO;
    tune_status st = TUNE_OK;
    for (size_t ci = 0; ci < space_n_configs(rc->sp) && st == TUNE_OK; ci++) {
        if (rc->done[ci])
            continue;
        tune_point p;
        result_row row;
        char stamp[32];
        space_config_point(rc->sp, ci, &p);
        fill_row(rc, ci, &p, &row, NULL);
        const run_plan *pl = &rc->plans[ci];
        char *log = NULL;
        if (pl->n_refs > 0 && space_config_at(rc->sp, ci)->param != SPACE_NO_PARAM)
            row.kernel = rc->kernels[pl->refs[0]].job.name;
        if (pl->skip) {
            row.status = RESULT_SKIPPED;
            row.reason = pl->skip;
        } else if (compile_failure(rc, ci, &log) >= 0) {
            row.status = RESULT_COMPILE_ERROR;
            row.reason = log ? log : "compile error";
        } else {
            row.status = RESULT_COMPILED;
        }
        utc_stamp(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ");
        row.timestamp = stamp;
        st = results_write_row(w, &row, rc->err);
        if (st == TUNE_OK) {
            rc->done[ci] = 1;
            count_status(sum, row.status);
        }
    }
    results_close(w);
    return st;
}

/* ---- the device, queried without touching CUDA in this process ---- */

static int probe_body(void *ctx, int fd)
{
    const run_options *opt = ctx;
    gpu_info gi;
    tune_error e = {0};
    if (gpu_query(opt->device, &gi, &e) != TUNE_OK) {
        worker_send(fd, "F %d %s", (int)e.code, e.message);
        return 1;
    }
    char hex[2 * sizeof gi + 1];
    const unsigned char *b = (const unsigned char *)&gi;
    for (size_t i = 0; i < sizeof gi; i++)
        snprintf(hex + 2 * i, 3, "%02x", b[i]);
    worker_send(fd, "G %s", hex);
    return 0;
}

/* The end of a probe child: st is TUNE_OK when its answer line (r == 1: line) was understood;
 * otherwise the line is its failure ("F <code> <message>", kept in err) or the child is killed.
 * Waits for the child. */
static tune_status probe_finish(worker *w, int r, const char *line, tune_status st,
                                const char *what, tune_error *err)
{
    char how[256];
    if (st != TUNE_OK && r == 1 && line[0] == 'F') {
        char *msg;
        st = (tune_status)strtol(line + 2, &msg, 10);
        tune_error_set(err, st, "", "%s", msg + (*msg == ' '));
    } else if (st != TUNE_OK) {
        worker_kill(w);
    }
    worker_wait(w, how, sizeof how);
    if (st != TUNE_OK && (!err || err->code == TUNE_OK))
        tune_error_set(err, TUNE_ERR_CUDA, what, "the device query ended: %s", how);
    return st;
}

static tune_status probe_device(const run_options *opt, gpu_info *gi, tune_error *err)
{
    worker *w = worker_start(probe_body, (void *)opt, err);
    if (!w)
        return err ? err->code : TUNE_ERR_IO;
    char line[4096];
    tune_status st = TUNE_ERR_NO_GPU;
    int r = worker_read_line(w, line, sizeof line, 120);
    if (r == 1 && line[0] == 'G' && strlen(line + 2) == 2 * sizeof *gi) {
        unsigned char *b = (unsigned char *)gi;
        for (size_t i = 0; i < sizeof *gi; i++) {
            unsigned v;
            sscanf(line + 2 + 2 * i, "%2x", &v);
            b[i] = (unsigned char)v;
        }
        st = TUNE_OK;
    }
    return probe_finish(w, r, line, st, "device query", err);
}

/* ---- the results folder: lock, resume ---- */

/* Holds an exclusive lock on dir/lock for the process's life (and its workers'); fails when
 * another run holds it. Returns the descriptor, or -1. */
static int lock_run_dir(const char *dir, tune_error *err)
{
    char path[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        tune_error_set(err, TUNE_ERR_IO, path, "cannot open the lock file: %s", strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = "";
        ssize_t k = pread(fd, pid, sizeof pid - 1, 0);
        pid[k > 0 ? k : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        close(fd);
        tune_error_set(err, TUNE_ERR_IO, dir,
                       "another tune run (pid %s) is writing this results folder; wait for it or "
                       "use another folder",
                       pid[0] ? pid : "?");
        return -1;
    }
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len)
        (void)0; /* the pid is informative only */
    return fd;
}

/* The latest run folder of the sweep under the results root (names are UTC times). */
static tune_status latest_run_dir(const run_ctx *rc, char *dir, size_t size)
{
    char root[PATH_MAX];
    snprintf(root, sizeof root, "%s/%s", rc->opt->out_root, rc->sw->name);
    DIR *d = opendir(root);
    char best[256] = "";
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.' && strcmp(e->d_name, best) > 0)
            snprintf(best, sizeof best, "%s", e->d_name);
    if (d)
        closedir(d);
    if (!best[0])
        return tune_error_set(rc->err, TUNE_ERR_IO, root, "no earlier run of sweep '%s' to resume",
                              rc->sw->name);
    if ((size_t)snprintf(dir, size, "%.3800s/%.200s", root, best) >= size)
        return tune_error_set(rc->err, TUNE_ERR_IO, root, "path too long");
    return TUNE_OK;
}

/* Cuts a last line that a killed run left without its newline, so appending stays valid JSONL. */
static void trim_partial_line(const char *path)
{
    int fd = open(path, O_RDWR);
    if (fd < 0)
        return;
    off_t size = lseek(fd, 0, SEEK_END), keep = size;
    char c;
    while (keep > 0 && pread(fd, &c, 1, keep - 1) == 1 && c != '\n')
        keep--;
    if (keep < size && ftruncate(fd, keep) != 0)
        (void)0;
    close(fd);
}

/* Marks the configurations that already have a row in dir/raw.jsonl (any status: a crashed
 * configuration is not run again). Returns the number found through *n_found. */
static tune_status load_done(run_ctx *rc, run_summary *sum, size_t *n_found)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/raw.jsonl", rc->out_dir);
    *n_found = 0;
    if (access(path, F_OK) != 0)
        return TUNE_OK;
    trim_partial_line(path);
    result_row *rows = NULL;
    size_t n_rows = 0, n = space_n_configs(rc->sp);
    tune_status st = results_read(path, &rows, &n_rows, rc->err);
    if (st != TUNE_OK)
        return st;
    char **ids = calloc(n ? n : 1, sizeof *ids);
    for (size_t i = 0; ids && i < n; i++) {
        tune_point p;
        result_row row;
        char buf[4096];
        space_config_point(rc->sp, i, &p);
        fill_row(rc, i, &p, &row, NULL);
        ids[i] = strdup(row_identity(&row, buf, sizeof buf));
    }
    for (size_t r = 0; ids && r < n_rows; r++) {
        char buf[4096];
        row_identity(&rows[r], buf, sizeof buf);
        for (size_t i = 0; i < n; i++)
            if (!rc->done[i] && ids[i] && strcmp(ids[i], buf) == 0) {
                rc->done[i] = 1;
                count_status(sum, rows[r].status);
                (*n_found)++;
                break;
            }
    }
    for (size_t i = 0; ids && i < n; i++)
        free(ids[i]);
    free(ids);
    results_rows_free(rows, n_rows);
    return TUNE_OK;
}

/* The key of a run's results: what must not change between a run and its resumption. */
static json_t *run_key(const run_ctx *rc)
{
    hash_state h = hash_init();
    for (size_t i = 0; i < rc->n_kernels; i++) {
        hash_add(&h, rc->kernels[i].job.source);
        hash_add(&h, rc->kernels[i].job.name);
        if (rc->kernels[i].job.cubin)
            hash_bytes_add(&h, rc->kernels[i].job.cubin, rc->kernels[i].job.cubin_size);
    }
    char kh[40];
    snprintf(kh, sizeof kh, "%016llx", (unsigned long long)h.v);
    char drv[256] = "";
    json_t *key;
    if (rc->opt->compile_only) {
        key = json_pack("{s:s, s:i, s:s, s:I}", "kernels_hash", kh, "nvrtc",
                        compile_nvrtc_version(), "arch", rc->arch_name, "seed",
                        (json_int_t)rc->opt->seed);
    } else {
        if (!monitor_driver_version(rc->mon, drv, sizeof drv))
            driver_version_text(drv, sizeof drv);
        key = json_pack("{s:s, s:i, s:i, s:s, s:s, s:s, s:I}", "kernels_hash", kh, "nvrtc",
                        compile_nvrtc_version(), "cuda_driver", rc->gi.driver_version, "driver",
                        drv, "device", rc->gi.name, "pci_bus_id", rc->gi.pci_bus_id, "seed",
                        (json_int_t)rc->opt->seed);
    }
    if (key && rc->plan) { /* a shard resumes only as the same shard of the same plan */
        char sh[64];
        snprintf(sh, sizeof sh, "%zu/%zu %s", rc->opt->shard_index, shard_plan_count(rc->plan),
                 shard_plan_hash(rc->plan));
        json_object_set_new(key, "shard", json_string(sh));
    }
    return key;
}

/* A shard (--shard) may resume on another GPU of the same model, as shards of one run run on
 * several: a requeued Slurm task lands where a GPU is free. Its key then lists every PCI bus id
 * the shard ran on. Returns 1 when key's pci_bus_id was updated that way. */
static int shard_pci_moved(const run_ctx *rc, const json_t *old, json_t *key)
{
    const char *was = json_string_value(json_object_get(old, "pci_bus_id"));
    const char *now = json_string_value(json_object_get(key, "pci_bus_id"));
    if (!rc->plan || !was || !now)
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

/* Compares the key of the run being resumed (its meta.json) with this one's. */
static tune_status check_resume_key(const run_ctx *rc, json_t *key)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/meta.json", rc->out_dir);
    json_t *meta = json_load_file(path, 0, NULL);
    json_t *old = meta ? json_object_get(meta, "key") : NULL;
    char diff[2048] = "";
    if (json_is_true(json_object_get(json_object_get(meta, "shard"), "merged"))) {
        json_decref(meta);
        return tune_error_set(rc->err, TUNE_ERR_INVALID, rc->out_dir,
                              "cannot resume: this folder holds merged shards; resume the run "
                              "with the same --gpus, or each shard folder with its --shard I/N");
    }
    const char *k;
    json_t *v;
    json_object_foreach(key, k, v)
    {
        json_t *o = old ? json_object_get(old, k) : NULL;
        if (strcmp(k, "pci_bus_id") == 0 && shard_pci_moved(rc, old, key))
            continue;
        if (!o || !json_equal(o, v)) {
            char *a = o ? json_dumps(o, JSON_ENCODE_ANY) : NULL, *b = json_dumps(v, JSON_ENCODE_ANY);
            size_t len = strlen(diff);
            snprintf(diff + len, sizeof diff - len, "%s%s was %s, now %s", len ? "; " : "", k,
                     a ? a : "absent", b ? b : "?");
            free(a);
            free(b);
        }
    }
    json_decref(meta);
    if (diff[0])
        return tune_error_set(rc->err, TUNE_ERR_INVALID, rc->out_dir,
                              "cannot resume: the results were measured with something else (%s); "
                              "start a new run instead",
                              diff);
    return TUNE_OK;
}

static tune_status run_gpu(run_ctx *rc, run_summary *sum)
{
    tune_status st = TUNE_OK;
    json_t *meta = NULL, *key = NULL;
    char start[32], end[32];
    int lock_fd = -1;
    size_t n = space_n_configs(rc->sp), n_found = 0;
    utc_stamp(start, sizeof start, "%Y-%m-%dT%H:%M:%SZ");
    rc->read_bw = rc->opt->read_bw;
    rc->done = calloc(n ? n : 1, 1);
    if (!rc->done)
        return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    for (size_t i = 0; rc->plan && i < n; i++) /* other shards' configurations: not ours to run */
        rc->done[i] = shard_plan_owner(rc->plan, i) != rc->opt->shard_index;
    if (rc->opt->resume && !rc->opt->out_dir)
        st = latest_run_dir(rc, rc->out_dir, sizeof rc->out_dir);
    else
        st = make_run_dir(rc, rc->out_dir, sizeof rc->out_dir);
    if (st != TUNE_OK || (st = results_mkdirs(rc->out_dir, rc->err)) != TUNE_OK)
        return st;
    snprintf(sum->out_dir, sizeof sum->out_dir, "%s", rc->out_dir);
    if ((lock_fd = lock_run_dir(rc->out_dir, rc->err)) < 0)
        return rc->err ? rc->err->code : TUNE_ERR_IO;
    key = run_key(rc);
    if (rc->opt->resume) {
        char path[PATH_MAX + 16];
        snprintf(path, sizeof path, "%s/meta.json", rc->out_dir);
        json_t *old = json_load_file(path, 0, NULL);
        if (old) {
            json_t *s0 = json_object_get(old, "start");
            if (json_is_string(s0))
                snprintf(start, sizeof start, "%s", json_string_value(s0));
            json_t *bw = json_object_get(json_object_get(old, "read_bw"), "bytes_per_second");
            if (rc->read_bw <= 0 && json_is_number(bw) && json_number_value(bw) > 0)
                rc->read_bw = json_number_value(bw); /* keep the percentages comparable */
        }
        json_decref(old);
        if ((st = check_resume_key(rc, key)) != TUNE_OK ||
            (st = load_done(rc, sum, &n_found)) != TUNE_OK)
            goto done;
        if (!rc->opt->quiet)
            fprintf(stderr, "tune: resuming %s: %zu of %zu configurations already have a row\n",
                    rc->out_dir, n_found, n);
    }
    sum->read_bw = rc->read_bw;
    meta = meta_build(rc, rc->opt->compile_only ? NULL : &rc->gi, sum, start, NULL, key);
    if ((st = meta_write(rc->out_dir, meta, rc->err)) != TUNE_OK)
        goto done;
    if (!rc->opt->quiet) {
        char shard[64] = "";
        if (rc->plan)
            snprintf(shard, sizeof shard, " (shard %zu/%zu)", rc->opt->shard_index,
                     shard_plan_count(rc->plan));
        fprintf(stderr, "tune: %s%s on %s, results in %s\n", rc->sw->name, shard,
                rc->opt->compile_only ? "no GPU (compile-only)" : rc->gi.name, rc->out_dir);
    }
    results_writer *created = results_open(rc->out_dir, rc->err); /* an empty shard has a file */
    if (!created) {
        st = rc->err ? rc->err->code : TUNE_ERR_IO;
        goto done;
    }
    results_close(created);
    st = rc->opt->compile_only ? write_compile_rows(rc, sum) : coordinate(rc, sum);
done:
    if (meta) {
        utc_stamp(end, sizeof end, "%Y-%m-%dT%H:%M:%SZ");
        sum->wall_seconds = now_seconds() - rc->t0;
        sum->read_bw = rc->read_bw;
        json_decref(meta);
        meta = meta_build(rc, rc->opt->compile_only ? NULL : &rc->gi, sum, start, st == TUNE_OK ? end : NULL, key);
        tune_status mst = meta_write(rc->out_dir, meta, rc->err);
        json_decref(meta);
        if (st == TUNE_OK)
            st = mst;
    }
    json_decref(key);
    if (lock_fd >= 0) {
        char lock[PATH_MAX + 8];
        snprintf(lock, sizeof lock, "%.4000s/lock", rc->out_dir);
        unlink(lock); /* still held: a run starting now fails to lock the old file, or makes a new one */
        close(lock_fd);
    }
    return st;
}

/* ---- one coordinator per GPU (--gpus), merged at the end ---- */

static int count_body(void *ctx, int fd)
{
    (void)ctx;
    int n = 0;
    tune_error e = {0};
    if (gpu_count(&n, &e) != TUNE_OK) {
        worker_send(fd, "F %d %s", (int)e.code, e.message);
        return 1;
    }
    worker_send(fd, "N %d", n);
    return 0;
}

/* The number of CUDA devices, counted in a child process (this one never initialises CUDA). */
static tune_status probe_count(int *n, tune_error *err)
{
    worker *w = worker_start(count_body, NULL, err);
    if (!w)
        return err ? err->code : TUNE_ERR_IO;
    char line[4096];
    int r = worker_read_line(w, line, sizeof line, 120);
    tune_status st = r == 1 && sscanf(line, "N %d", n) == 1 ? TUNE_OK : TUNE_ERR_NO_GPU;
    return probe_finish(w, r, line, st, "device count", err);
}

/* The devices of --gpus: "all" (every device a child process sees) or a list "0,1,3". */
static tune_status parse_gpus(const run_options *opt, int *devs, size_t max, size_t *n,
                              tune_error *err)
{
    *n = 0;
    if (strcmp(opt->gpus, "all") == 0) {
        int count = 0;
        tune_status st = probe_count(&count, err);
        if (st != TUNE_OK)
            return st;
        for (int d = 0; d < count && *n < max; d++)
            devs[(*n)++] = d;
        return TUNE_OK;
    }
    for (const char *p = opt->gpus; *p;) {
        char *end;
        long d = strtol(p, &end, 10);
        if (end == p || d < 0 || d > 1023 || (*end != ',' && *end != '\0') || *n == max)
            return tune_error_set(err, TUNE_ERR_INVALID, "--gpus",
                                  "expected 'all' or a list of device ordinals like 0,1,3, got "
                                  "'%s'",
                                  opt->gpus);
        for (size_t i = 0; i < *n; i++)
            if (devs[i] == (int)d)
                return tune_error_set(err, TUNE_ERR_INVALID, "--gpus", "GPU %ld is listed twice",
                                      d);
        devs[(*n)++] = (int)d;
        p = *end ? end + 1 : end;
    }
    if (*n == 0)
        return tune_error_set(err, TUNE_ERR_INVALID, "--gpus", "no GPU listed");
    return TUNE_OK;
}

typedef struct {
    const sweep *sw;
    run_options opt; /* the shard's: --shard i/n --device d --out <run>/shards/<i> */
    char dir[PATH_MAX];
    worker *w;
    int code;          /* exit status, -1 while running */
    char failure[2048];
} gpu_shard;

/* A shard's coordinator, in a child process: run_sweep with its output in <dir>/log.txt. */
static int gpu_shard_body(void *ctx, int fd)
{
    gpu_shard *g = ctx;
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/log.txt", g->dir);
    int lf = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (lf >= 0) {
        dup2(lf, 1);
        dup2(lf, 2);
        close(lf);
    }
    run_summary sum;
    tune_error e = {0};
    if (run_sweep(g->sw, &g->opt, &sum, &e) != TUNE_OK) {
        char buf[2600];
        tune_error_text(&e, buf, sizeof buf);
        fprintf(stderr, "tune: %s\n", buf);
        worker_send(fd, "F %d %s", (int)e.code, buf);
        return e.code == TUNE_ERR_NO_GPU ? 3 : 1;
    }
    return 0;
}

static size_t count_lines(const char *dir)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    FILE *f = fopen(path, "r");
    size_t n = 0;
    char buf[65536];
    for (size_t k; f && (k = fread(buf, 1, sizeof buf, f)) > 0;)
        for (size_t i = 0; i < k; i++)
            n += buf[i] == '\n';
    if (f)
        fclose(f);
    return n;
}

static tune_status run_gpus(const sweep *sw, const run_options *opt, run_summary *sum,
                            tune_error *err)
{
    memset(sum, 0, sizeof *sum);
    int devs[SHARD_MAX];
    size_t n = 0;
    tune_status st = parse_gpus(opt, devs, SHARD_MAX, &n, err);
    if (st != TUNE_OK)
        return st;
    run_ctx rc = {.sw = sw, .opt = opt, .err = err, .t0 = now_seconds()};
    if (!(rc.sp = space_build(sw, err)))
        return err ? err->code : TUNE_ERR_INVALID;
    gpu_shard *g = calloc(n, sizeof *g);
    const char **dirs = calloc(n, sizeof *dirs);
    int lock_fd = -1;
    if (!g || !dirs) {
        st = tune_error_set(err, TUNE_ERR_NOMEM, "run", "out of memory");
        goto done;
    }
    if (!(rc.plan = shard_plan_build(sw, rc.sp, n, err))) {
        st = err ? err->code : TUNE_ERR_NOMEM;
        goto done;
    }
    if (opt->resume && !opt->out_dir)
        st = latest_run_dir(&rc, rc.out_dir, sizeof rc.out_dir);
    else
        st = make_run_dir(&rc, rc.out_dir, sizeof rc.out_dir);
    if (st != TUNE_OK || (st = results_mkdirs(rc.out_dir, err)) != TUNE_OK)
        goto done;
    if ((lock_fd = lock_run_dir(rc.out_dir, err)) < 0) {
        st = err ? err->code : TUNE_ERR_IO;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        char meta[PATH_MAX + 16];
        snprintf(g[i].dir, sizeof g[i].dir, "%.4000s/shards/%zu", rc.out_dir, i);
        snprintf(meta, sizeof meta, "%s/meta.json", g[i].dir);
        if ((st = results_mkdirs(g[i].dir, err)) != TUNE_OK)
            goto done;
        g[i].sw = sw;
        g[i].opt = *opt;
        g[i].opt.gpus = NULL;
        g[i].opt.shard_index = i;
        g[i].opt.shard_count = n;
        g[i].opt.device = devs[i];
        g[i].opt.out_dir = g[i].dir;
        g[i].opt.quiet = 0; /* into its log.txt */
        g[i].opt.resume = opt->resume && access(meta, F_OK) == 0;
        g[i].code = -1;
        dirs[i] = g[i].dir;
    }
    if (!opt->quiet) {
        fprintf(stderr, "tune: %s on %zu GPUs, results in %s\n", sw->name, n, rc.out_dir);
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, "tune:   GPU %d: shard %zu/%zu, %zu configurations, estimated %.1f s "
                    "(log: %s/log.txt)\n", devs[i], i, n, shard_plan_n_configs(rc.plan, i),
                    shard_plan_cost(rc.plan, i), g[i].dir);
    }
    for (size_t i = 0; i < n; i++)
        if (!(g[i].w = worker_start(gpu_shard_body, &g[i], err))) {
            st = err ? err->code : TUNE_ERR_IO;
            for (size_t j = 0; j < i; j++) { /* all or none */
                worker_kill(g[j].w);
                worker_wait(g[j].w, g[j].failure, sizeof g[j].failure);
            }
            goto done;
        }
    size_t running = n;
    int tty = isatty(2);
    double last = 0;
    while (running > 0) {
        for (size_t i = 0; i < n; i++) {
            if (g[i].code >= 0)
                continue;
            char line[4096];
            int r;
            while ((r = worker_read_line(g[i].w, line, sizeof line, 0.05)) == 1)
                if (line[0] == 'F')
                    snprintf(g[i].failure, sizeof g[i].failure, "%.2000s", line + 2);
            if (r == 0) {
                char how[256];
                g[i].code = worker_wait(g[i].w, how, sizeof how);
                g[i].w = NULL;
                if (g[i].code != 0 && !g[i].failure[0])
                    snprintf(g[i].failure, sizeof g[i].failure, "0 the shard's process ended: %s",
                             how);
                running--;
            }
        }
        double now = now_seconds();
        if (!opt->quiet && (running == 0 || now - last >= (tty ? 1.0 : 30.0))) {
            last = now;
            size_t done_rows = 0;
            char parts[1024] = "";
            for (size_t i = 0, len = 0; i < n; i++) {
                size_t k = count_lines(g[i].dir);
                done_rows += k;
                len += (size_t)snprintf(parts + len, len < sizeof parts ? sizeof parts - len : 0,
                                        "%sGPU %d %zu/%zu", i ? ", " : "", devs[i], k,
                                        shard_plan_n_configs(rc.plan, i));
            }
            fprintf(stderr, "%s[%zu/%zu] %s, elapsed %.0fs%s", tty ? "\r" : "", done_rows,
                    space_n_configs(rc.sp), parts, now - rc.t0, tty && running ? "   " : "\n");
        }
    }
    char failed[1536] = "";
    tune_status code = TUNE_OK;
    for (size_t i = 0, len = 0; i < n; i++) {
        if (g[i].code == 0)
            continue;
        char *msg;
        tune_status c = (tune_status)strtol(g[i].failure, &msg, 10);
        c = c == TUNE_OK ? TUNE_ERR_CUDA : c; /* it died without a word */
        code = code == TUNE_OK || code == TUNE_ERR_NO_GPU ? c : code;
        len += (size_t)snprintf(failed + len, len < sizeof failed ? sizeof failed - len : 0,
                                "%sGPU %d (shard %zu/%zu) failed: %.300s (log: %.300s/log.txt)",
                                len ? "; " : "", devs[i], i, n, msg + (*msg == ' '), g[i].dir);
    }
    if (code != TUNE_OK) {
        st = tune_error_set(err, code == TUNE_ERR_NO_GPU ? TUNE_ERR_NO_GPU : TUNE_ERR_CUDA, "--gpus",
                            "%s; the rows measured are kept: run again with --resume%s%s", failed,
                            opt->out_dir ? " --out " : "", opt->out_dir ? opt->out_dir : "");
        goto done;
    }
    shard_merge_options mo = {opt->quiet, opt->argc, opt->argv};
    st = shard_merge(rc.out_dir, dirs, n, &mo, sum, err);
    sum->wall_seconds = now_seconds() - rc.t0;
done:
    if (lock_fd >= 0) {
        char lock[PATH_MAX + 8];
        snprintf(lock, sizeof lock, "%.4000s/lock", rc.out_dir);
        unlink(lock);
        close(lock_fd);
    }
    snprintf(sum->out_dir, sizeof sum->out_dir, "%s", rc.out_dir);
    free(g);
    free(dirs);
    free_ctx(&rc);
    return st;
}

tune_status run_sweep(const sweep *sw, const run_options *opt, run_summary *sum, tune_error *err)
{
    if (opt->gpus)
        return run_gpus(sw, opt, sum, err);
    run_ctx rc = {.sw = sw, .opt = opt, .err = err, .t0 = now_seconds()};
    memset(sum, 0, sizeof *sum);
    tune_status st = TUNE_OK;
    int arch = opt->arch ? opt->arch : 90;
    /* This process never initialises CUDA: workers (child processes) own the GPU. */
    if (!opt->compile_only) {
        if ((st = probe_device(opt, &rc.gi, err)) != TUNE_OK)
            return st;
        arch = rc.gi.cc_major * 10 + rc.gi.cc_minor;
    }
    if (!(rc.sp = space_build(sw, err)))
        return err ? err->code : TUNE_ERR_INVALID;
    sum->n_configs = space_n_configs(rc.sp);
    sum->n_pruned = space_n_pruned(rc.sp);
    snprintf(rc.arch_name, sizeof rc.arch_name, "sm_%d", arch);
    if (opt->shard_count > 0) {
        if (opt->shard_index >= opt->shard_count) {
            st = tune_error_set(err, TUNE_ERR_INVALID, "--shard",
                                "shard %zu/%zu: shards are counted from 0 to %zu", opt->shard_index,
                                opt->shard_count, opt->shard_count - 1);
            goto done;
        }
        if (!(rc.plan = shard_plan_build(sw, rc.sp, opt->shard_count, err))) {
            st = err ? err->code : TUNE_ERR_NOMEM;
            goto done;
        }
        sum->n_configs = shard_plan_n_configs(rc.plan, opt->shard_index);
    }
    family_kernel_ref probe = {"common.cu", "tune_read_probe"};
    if ((st = plan_configs(&rc)) != TUNE_OK || (!opt->compile_only && kernel_index(&rc, &probe) == SIZE_MAX))
        goto done;
    /* a GPU run needs the cache to carry the child's cubins: a private one under --no-cache */
    char tmp_cache[] = "/tmp/tune-kcache-XXXXXX";
    const char *cache = opt->cache_dir;
    if (!opt->compile_only && !cache && !(cache = mkdtemp(tmp_cache))) {
        st = tune_error_set(err, TUNE_ERR_IO, "/tmp", "cannot create a kernel cache folder");
        goto done;
    }
    st = opt->compile_only ? compile_all(&rc, arch, cache, sum)
                           : compile_isolated(&rc, arch, cache, sum);
    if (cache == tmp_cache)
        remove_cache_dir(tmp_cache);
    if (st != TUNE_OK)
        goto done;
    if (!opt->quiet)
        fprintf(stderr,
                "tune: %s: %zu configs (%zu pruned), %zu kernels for sm_%d: %zu from cache, %zu "
                "compile errors, %.1f s\n",
                sw->name, space_n_configs(rc.sp), sum->n_pruned, sum->n_kernels, arch, sum->n_cached,
                sum->n_kernel_errors, sum->compile_seconds);
    for (size_t i = 0; !opt->quiet && i < rc.n_kernels; i++)
        if (rc.kernels[i].job.status != TUNE_OK)
            fprintf(stderr, "tune: %s: %s failed to compile:\n%s\n", rc.kernels[i].job.source,
                    rc.kernels[i].job.name, rc.kernels[i].job.log ? rc.kernels[i].job.log : "");
    if (opt->compile_only && !opt->compile_rows)
        goto done;
    if (!opt->compile_only)
        rc.mon = monitor_open(rc.gi.pci_bus_id);
    st = run_gpu(&rc, sum);
    monitor_close(rc.mon);
    /* a compile-only run's tables hold only the status counts: written, not printed; a shard
     * of a sweep with fewer shapes than shards may have no rows, and no tables */
    if (st == TUNE_OK && sum->n_configs > 0)
        st = print_and_write_report(sw, sum->out_dir, opt->quiet || opt->compile_only, err);
    else if (st == TUNE_OK && !opt->quiet)
        fprintf(stderr, "tune: shard %zu/%zu has no configurations (more shards than shapes)\n",
                opt->shard_index, opt->shard_count);
done:
    sum->wall_seconds = now_seconds() - rc.t0;
    free_ctx(&rc);
    return st;
}

/* ---- reports ---- */

static tune_status report_dirs(const char *const *dirs, size_t n_dirs, const report_spec *spec,
                               int quiet, tune_error *err)
{
    result_row *all = NULL;
    size_t n_all = 0;
    tune_status st = results_read_dirs(dirs, n_dirs, &all, &n_all, err);
    report *r = st == TUNE_OK ? report_build(all, n_all, spec, err) : NULL;
    if (st == TUNE_OK && !r)
        st = err ? err->code : TUNE_ERR_INVALID;
    if (r) {
        if (!quiet)
            report_write_markdown(r, stdout);
        st = report_write_files(r, dirs[0], err);
        report_free(r);
    }
    results_rows_free(all, n_all);
    return st;
}

static void params_text(const json_t *params, char *buf, size_t size)
{
    const char *k;
    json_t *v;
    size_t len = 0;
    buf[0] = '\0';
    json_object_foreach((json_t *)params, k, v)
    {
        char val[64];
        if (json_is_string(v))
            snprintf(val, sizeof val, "%s", json_string_value(v));
        else
            snprintf(val, sizeof val, "%lld", (long long)json_integer_value(v));
        len += (size_t)snprintf(buf + len, len < size ? size - len : 0, "%s%s=%s", len ? " " : "",
                                k, val);
    }
}

/* The interleaved re-timing's verdicts (retime.jsonl) as a Markdown table appended to best.md
 * (and printed): per shape, the winner, the runner-up, the margin and "tie" when the margin is
 * within the noise. */
static void append_retime_table(const char *dir, int quiet)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/retime.jsonl", dir);
    FILE *in = fopen(path, "r");
    if (!in)
        return;
    snprintf(path, sizeof path, "%s/best.md", dir);
    FILE *outs[2] = {fopen(path, "a"), quiet ? NULL : stdout};
    for (int o = 0; o < 2; o++)
        if (outs[o])
            fprintf(outs[o],
                    "\n## Winners re-timed interleaved (%d rounds, A B C A B C ...)\n\n"
                    "| shape | winner | runner-up | margin | verdict |\n|---|---|---|---|---|\n",
                    RETIME_ROUNDS);
    char line[16384];
    size_t n = 0, ties = 0;
    while (fgets(line, sizeof line, in)) {
        json_t *r = json_loads(line, 0, NULL);
        if (!r)
            continue;
        char shape[512], win[256], run[256];
        params_text(json_object_get(r, "shape"), shape, sizeof shape);
        params_text(json_object_get(r, "winner"), win, sizeof win);
        params_text(json_object_get(r, "runner_up"), run, sizeof run);
        int tie = json_is_true(json_object_get(r, "tie"));
        double margin = json_real_value(json_object_get(r, "margin"));
        for (int o = 0; o < 2; o++)
            if (outs[o])
                fprintf(outs[o], "| %s | %s | %s | %.2f %% | %s |\n", shape, win, run,
                        100 * margin, tie ? "tie" : "win");
        n++;
        ties += tie;
        json_decref(r);
    }
    for (int o = 0; o < 2; o++)
        if (outs[o])
            fprintf(outs[o],
                    "\n%zu shapes re-timed, %zu ties: a tie means the runner-up is within twice the "
                    "combined standard error of the two medians.\n",
                    n, ties);
    fclose(in);
    if (outs[0])
        fclose(outs[0]);
}

static tune_status print_and_write_report(const sweep *sw, const char *dir, int quiet,
                                          tune_error *err)
{
    report_spec spec = {(const char *const *)sw->report_rows, sw->n_report_rows,
                        (const char *const *)sw->report_cols, sw->n_report_cols, sw->name};
    tune_status st = report_dirs(&dir, 1, &spec, quiet, err);
    if (st == TUNE_OK)
        append_retime_table(dir, quiet);
    return st;
}

/* Splits a comma-separated list into names (pointing into buf, which it modifies). */
static size_t split_names(char *buf, const char **names, size_t max)
{
    size_t n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && n < max;
         t = strtok_r(NULL, ",", &save))
        names[n++] = t;
    return n;
}

tune_status run_report(const char *const *dirs, size_t n_dirs, const char *rows_csv,
                       const char *cols_csv, int quiet, tune_error *err)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/meta.json", dirs[0]);
    json_error_t je;
    json_t *meta = json_load_file(path, 0, &je);
    const char *rows[TUNE_MAX_AXES], *cols[TUNE_MAX_AXES];
    report_spec spec = {rows, 0, cols, 0, NULL};
    json_t *rep = meta ? json_object_get(meta, "report") : NULL;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(rep, "rows"), i, v) if (spec.n_rows < TUNE_MAX_AXES)
        rows[spec.n_rows++] = json_string_value(v);
    json_array_foreach(json_object_get(rep, "cols"), i, v) if (spec.n_cols < TUNE_MAX_AXES)
        cols[spec.n_cols++] = json_string_value(v);
    spec.title = json_string_value(json_object_get(json_object_get(meta, "sweep"), "name"));
    char rows_buf[1024], cols_buf[1024];
    if (rows_csv || cols_csv) {
        snprintf(rows_buf, sizeof rows_buf, "%s", rows_csv ? rows_csv : "");
        snprintf(cols_buf, sizeof cols_buf, "%s", cols_csv ? cols_csv : "");
        spec.n_rows = split_names(rows_buf, rows, TUNE_MAX_AXES);
        spec.n_cols = split_names(cols_buf, cols, TUNE_MAX_AXES);
    }
    tune_status st = report_dirs(dirs, n_dirs, &spec, quiet, err);
    if (st == TUNE_OK && n_dirs == 1)
        append_retime_table(dirs[0], quiet);
    json_decref(meta);
    return st;
}
