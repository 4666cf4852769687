#include "device/compile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nvrtc.h>

#include "core/clock.h"
#include "core/hash.h"
#include "core/infile.h"
#include "core/outfile.h"
#include "device/compile_src.h"

#define CACHE_MAGIC "TUNEC2\n"

int compile_nvrtc_version(void)
{
    int major = 0, minor = 0;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
        return 0;
    return major * 1000 + minor * 10;
}

/* NVRTC's options for opt's architecture; suffix "a" selects its architecture-specific variant
 * (sm_90a: wgmma, setmaxnreg). */
static size_t build_options(const compile_options *opt, const char *suffix, char opts[][64],
                            const char **ptrs)
{
    size_t n = 0;
    snprintf(opts[n++], 64, "--gpu-architecture=sm_%d%s", opt->arch, suffix);
    snprintf(opts[n++], 64, "-std=c++17");
    snprintf(opts[n++], 64, "-lineinfo");
    for (size_t i = 0; i < n; i++)
        ptrs[i] = opts[i];
    return n;
}

static void cache_path(char *buf, size_t size, const char *dir, hash128 key)
{
    snprintf(buf, size, "%s/%016llx%016llx.bin", dir, (unsigned long long)key.a,
             (unsigned long long)key.b);
}

/* Cache entry (all integers little-endian as written by this machine):
 *
 *   magic "TUNEC2\n" | u32 format version | u32 status | u64 key.a | u64 key.b |
 *   u32 lowered-name length | u64 payload length | lowered name | payload | u64 checksum
 *
 * The payload is the cubin, or the log of a failed compile. The checksum is FNV-1a/64 over
 * everything before it, so a flipped bit anywhere (the status included: a cached compile error
 * must never become a "cubin"), a truncated or extended file, or an entry copied under another
 * key's name is a miss: the kernel is compiled again and the entry rewritten (temporary file and
 * rename). */
#define CACHE_VERSION 2u
#define CACHE_HEADER_SIZE (7 + 4 + 4 + 8 + 8 + 4 + 8)
/* A cubin is at most a few MiB; a bigger entry is not one of ours. */
#define CACHE_MAX_ENTRY ((size_t)256 << 20)

static void put_u32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, 4);
}
static void put_u64(unsigned char *p, uint64_t v)
{
    memcpy(p, &v, 8);
}
static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static void cache_header(unsigned char *h, uint32_t status, hash128 key, uint32_t llen,
                         uint64_t plen)
{
    memcpy(h, CACHE_MAGIC, 7);
    put_u32(h + 7, CACHE_VERSION);
    put_u32(h + 11, status);
    put_u64(h + 15, key.a);
    put_u64(h + 23, key.b);
    put_u32(h + 31, llen);
    put_u64(h + 35, plen);
}

/* 0 and the job's results when the entry at path is whole, ours and for this key; -1 (a miss)
 * otherwise: absent, not a regular file, too large, damaged, truncated, foreign. */
static int cache_read(const char *path, hash128 key, compile_job *job)
{
    size_t size;
    char *text = NULL;
    if (infile_read(path, CACHE_MAX_ENTRY, &text, &size, NULL) != TUNE_OK)
        return -1;
    const unsigned char *buf = (const unsigned char *)text;
    int ok = size >= CACHE_HEADER_SIZE + 8 && memcmp(buf, CACHE_MAGIC, 7) == 0 &&
             get_u32(buf + 7) == CACHE_VERSION && get_u64(buf + 15) == key.a &&
             get_u64(buf + 23) == key.b;
    uint32_t status = ok ? get_u32(buf + 11) : 0, llen = ok ? get_u32(buf + 31) : 0;
    uint64_t plen = ok ? get_u64(buf + 35) : 0;
    /* lengths checked one at a time, so that no sum can wrap */
    ok = ok && llen <= size && plen <= size &&
         size == (size_t)CACHE_HEADER_SIZE + llen + plen + 8 &&
         get_u64(buf + size - 8) == hash_fnv1a(HASH_FNV_OFFSET, buf, size - 8) &&
         (status == (uint32_t)TUNE_OK ? llen > 0 && plen > 0
                                      : status == (uint32_t)TUNE_ERR_NVRTC && llen == 0);
    char *lowered = NULL, *payload = NULL;
    if (ok) {
        lowered = llen ? strndup((const char *)buf + CACHE_HEADER_SIZE, llen) : NULL;
        payload = malloc(plen + 1);
        ok = payload && (!llen || lowered);
    }
    if (!ok) {
        free(lowered);
        free(payload);
        free(text);
        return -1;
    }
    memcpy(payload, buf + CACHE_HEADER_SIZE + llen, plen);
    payload[plen] = '\0';
    job->status = (tune_status)status;
    job->lowered = lowered;
    if (job->status == TUNE_OK) {
        job->cubin = payload;
        job->cubin_size = plen;
    } else {
        job->log = payload;
    }
    job->from_cache = 1;
    free(text);
    return 0;
}

static int write_all(FILE *f, const void *p, size_t n)
{
    return n == 0 || fwrite(p, 1, n, f) == n;
}

/* Writes the entry atomically (core/outfile.h: a temporary file beside path, renamed over it; a
 * stop by SIGTERM or SIGINT waits for the rename, and the temporary file of a compile child
 * killed mid-write is removed as stale). */
static void cache_write(const char *path, hash128 key, const compile_job *job)
{
    if (job->status != TUNE_OK && job->status != TUNE_ERR_NVRTC)
        return; /* a missing source or no memory is not a result to keep */
    outfile *o = outfile_open(path, NULL);
    if (!o)
        return; /* the cache is an optimisation: a read-only cache folder is not an error */
    FILE *f = outfile_stream(o);
    uint32_t status = (uint32_t)job->status;
    uint32_t llen = job->status == TUNE_OK && job->lowered ? (uint32_t)strlen(job->lowered) : 0;
    const void *payload = job->status == TUNE_OK ? job->cubin : job->log;
    uint64_t plen = job->status == TUNE_OK ? job->cubin_size : (job->log ? strlen(job->log) : 0);
    unsigned char h[CACHE_HEADER_SIZE], sum[8];
    cache_header(h, status, key, llen, plen);
    uint64_t check = hash_fnv1a(HASH_FNV_OFFSET, h, sizeof h);
    check = hash_fnv1a(check, job->lowered, llen);
    check = hash_fnv1a(check, payload, plen);
    put_u64(sum, check);
    int ok = write_all(f, h, sizeof h) && write_all(f, job->lowered, llen) &&
             write_all(f, payload, plen) && write_all(f, sum, sizeof sum);
    /* the cache is a convenience: a failed commit removes its temporary file, and the kernel is
     * compiled again next time */
    if (ok)
        tune_status_ignore(outfile_commit(o, NULL));
    else
        outfile_abort(o);
}

static char *nvrtc_log(nvrtcProgram prog)
{
    size_t n = 0;
    if (nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n <= 1)
        return NULL;
    char *log = malloc(n);
    if (log && nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS) {
        free(log);
        return NULL;
    }
    return log;
}

static void set_job_log(compile_job *job, tune_status st, const char *fmt, const char *arg)
{
    job->status = st;
    size_t n = strlen(fmt) + strlen(arg) + 1;
    job->log = malloc(n);
    if (job->log)
        snprintf(job->log, n, fmt, arg);
}

/* The harness's options (arch: its own or the arch-specific one) and then the unit's. */
static const char **job_options(const compile_env *env, const char *arch, const compile_unit *u,
                                size_t *n)
{
    *n = env->n_base + u->n_opts;
    const char **opts = malloc(*n * sizeof *opts);
    if (!opts)
        return NULL;
    opts[0] = arch;
    for (size_t i = 1; i < env->n_base; i++)
        opts[i] = env->base_opts[i];
    for (size_t i = 0; i < u->n_opts; i++)
        opts[env->n_base + i] = u->opts[i];
    return opts;
}

static void compile_one(compile_job *job, const compile_unit *u, const compile_env *env,
                        const char *arch)
{
    size_t n_opts;
    const char **opts = job_options(env, arch, u, &n_opts);
    if (!opts) {
        set_job_log(job, TUNE_ERR_NOMEM, "%s", "out of memory");
        return;
    }
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, u->text, job->source, (int)u->n_headers,
                                       (const char *const *)u->header_texts,
                                       (const char *const *)u->header_names);
    if (r != NVRTC_SUCCESS) {
        set_job_log(job, TUNE_ERR_NVRTC, "nvrtcCreateProgram: %s", nvrtcGetErrorString(r));
        free(opts);
        return;
    }
    r = nvrtcAddNameExpression(prog, job->name);
    if (r == NVRTC_SUCCESS)
        r = nvrtcCompileProgram(prog, (int)n_opts, opts);
    free(opts);
    job->log = nvrtc_log(prog);
    const char *lowered = NULL;
    size_t size = 0;
    if (r == NVRTC_SUCCESS)
        r = nvrtcGetLoweredName(prog, job->name, &lowered);
    if (r == NVRTC_SUCCESS)
        r = nvrtcGetCUBINSize(prog, &size);
    if (r == NVRTC_SUCCESS) {
        job->lowered = strdup(lowered);
        job->cubin = malloc(size);
        job->cubin_size = size;
        r = nvrtcGetCUBIN(prog, job->cubin);
    }
    if (r != NVRTC_SUCCESS) {
        job->status = TUNE_ERR_NVRTC;
        if (!job->log)
            set_job_log(job, TUNE_ERR_NVRTC, "%s", nvrtcGetErrorString(r));
        free(job->cubin);
        job->cubin = NULL;
        job->cubin_size = 0;
    } else {
        job->status = TUNE_OK;
    }
    nvrtcDestroyProgram(&prog);
}

/* The distinct (source, options) pairs of the jobs, loaded once before the parallel region
 * (threads share them read-only); job_unit[i]: job i's. */
static tune_status load_units(const compile_job *jobs, size_t n, const compile_env *env,
                              compile_unit *units, size_t *n_units, size_t *job_unit,
                              tune_error *err)
{
    tune_status st = TUNE_OK;
    *n_units = 0;
    for (size_t i = 0; st == TUNE_OK && i < n; i++) {
        size_t u = 0;
        while (u < *n_units && (strcmp(units[u].source, jobs[i].source) != 0 ||
                                strcmp(units[u].options, jobs[i].options) != 0))
            u++;
        if (u == *n_units) {
            units[u].source = jobs[i].source;
            units[u].options = jobs[i].options;
            (*n_units)++;
            st = compile_unit_load(&units[u], units, u, env, err);
        }
        job_unit[i] = u;
    }
    return st;
}

/* The cache key of job (of unit u): the unit's key, the name expression, and the sm_NNa
 * target for an architecture-specific job. */
static hash128 job_key(const compile_unit *u, const compile_job *job, const char *arch_a)
{
    hash128 key = u->key;
    hash128_str(&key, job->name);
    if (job->arch_specific)
        hash128_str(&key, arch_a);
    return key;
}

/* Job job of unit u: from the cache, or compiled (and cached); a unit's failure is the job's. */
static void run_job(compile_job *job, const compile_unit *u, const compile_env *env,
                    const char *arch_a, const compile_options *opt)
{
    double t0 = clock_now();
    job->from_cache = 0;
    if (u->status != TUNE_OK) {
        set_job_log(job, u->status, "%s", u->reason ? u->reason : "");
        return;
    }
    hash128 key = job_key(u, job, arch_a);
    char path[PATH_MAX];
    if (opt->cache_dir) {
        cache_path(path, sizeof path, opt->cache_dir, key);
        if (cache_read(path, key, job) == 0)
            return;
    }
    compile_one(job, u, env, job->arch_specific ? arch_a : env->base_opts[0]);
    job->seconds = clock_now() - t0;
    if (opt->cache_dir)
        cache_write(path, key, job);
}

/* What compile_run and compile_hash_keys share: the jobs' sources read into units (one per
 * source and options, with their headers and keys) and the options of each target. */
typedef struct {
    compile_unit *units;
    size_t *job_unit, n_units;
    char base[8][64], arch_a[8][64];
    const char *base_ptrs[8], *arch_a_ptrs[8];
    compile_env env;
} compile_prep;

static tune_status prep_open(compile_prep *cp, const compile_job *jobs, size_t n,
                             const compile_options *opt, tune_error *err)
{
    memset(cp, 0, sizeof *cp);
    cp->units = calloc(n + 1, sizeof *cp->units);
    cp->job_unit = calloc(n + 1, sizeof *cp->job_unit);
    tune_status st = (cp->units && cp->job_unit)
                         ? TUNE_OK
                         : tune_error_set(err, TUNE_ERR_NOMEM, "compile", "out of memory");
    cp->env = (compile_env){.kernels_dir = opt->kernels_dir,
                            .base_opts = cp->base_ptrs,
                            .n_base = build_options(opt, "", cp->base, cp->base_ptrs)};
    build_options(opt, "a", cp->arch_a, cp->arch_a_ptrs); /* for the jobs with arch_specific */
    compile_env_toolkit(&cp->env);
    cp->env.nvrtc_version = compile_nvrtc_version();
    if (st == TUNE_OK && cp->env.nvrtc_version == 0)
        st = tune_error_set(err, TUNE_ERR_NVRTC, "nvrtc", "NVRTC cannot be loaded");
    if (st == TUNE_OK)
        st = load_units(jobs, n, &cp->env, cp->units, &cp->n_units, cp->job_unit, err);
    return st;
}

static void prep_close(compile_prep *cp)
{
    for (size_t u = 0; u < cp->n_units; u++)
        compile_unit_free(&cp->units[u]);
    free(cp->units);
    free(cp->job_unit);
}

tune_status compile_run(compile_job *jobs, size_t n, const compile_options *opt, tune_error *err)
{
    compile_prep cp;
    tune_status st = prep_open(&cp, jobs, n, opt, err);
    compile_unit *units = cp.units;
    const size_t *job_unit = cp.job_unit;
    const compile_env *penv = &cp.env;
    if (st == TUNE_OK && opt->cache_dir) {
        /* the cache is a convenience: a folder that cannot be made only leaves it unwritten */
        tune_status_ignore(outfile_mkdirs(opt->cache_dir, NULL));
        outfile_remove_stale_temps(opt->cache_dir); /* what a killed compile left half-written */
    }
    size_t done = 0, cached = 0;
    if (st == TUNE_OK && opt->threads == 1) {
        /* no OpenMP region at all: a process that has run one cannot fork a child that runs
         * another (libgomp's threads are not copied, and the child's region waits for them) */
        for (size_t i = 0; i < n; i++) {
            run_job(&jobs[i], &units[job_unit[i]], penv, cp.arch_a[0], opt);
            cached += (size_t)jobs[i].from_cache;
            if (opt->job_done)
                opt->job_done(opt->progress_ctx, i);
            if (opt->progress)
                opt->progress(opt->progress_ctx, ++done, cached);
        }
    } else if (st == TUNE_OK) {
        if (opt->threads > 0)
            omp_set_num_threads(opt->threads);
#pragma omp parallel for schedule(dynamic, 1)
        for (size_t i = 0; i < n; i++) {
            run_job(&jobs[i], &units[job_unit[i]], penv, cp.arch_a[0], opt);
#pragma omp critical(compile_progress)
            {
                done++;
                cached += (size_t)jobs[i].from_cache;
                if (opt->job_done)
                    opt->job_done(opt->progress_ctx, i);
                if (opt->progress)
                    opt->progress(opt->progress_ctx, done, cached);
            }
        }
    }
    prep_close(&cp);
    return st;
}

tune_status compile_hash_keys(const compile_job *jobs, size_t n, const compile_options *opt,
                              uint64_t *hash, tune_error *err)
{
    compile_prep cp;
    tune_status st = prep_open(&cp, jobs, n, opt, err);
    uint64_t h = HASH_FNV_OFFSET;
    for (size_t i = 0; st == TUNE_OK && i < n; i++) {
        const compile_unit *u = &cp.units[cp.job_unit[i]];
        hash128 key = job_key(u, &jobs[i], cp.arch_a[0]); /* as run_job makes it */
        h = hash_fnv1a_str(h, jobs[i].source);
        h = hash_fnv1a_str(h, jobs[i].name);
        h = hash_fnv1a_str(h, jobs[i].options);
        h = hash_fnv1a(h, &key.a, sizeof key.a);
        h = hash_fnv1a(h, &key.b, sizeof key.b);
        h = hash_fnv1a(h, &u->status, sizeof u->status);
    }
    prep_close(&cp);
    *hash = h;
    return st;
}

void compile_job_clear(compile_job *job)
{
    if (!job)
        return;
    free(job->log);
    free(job->cubin);
    free(job->lowered);
    job->log = NULL;
    job->cubin = NULL;
    job->lowered = NULL;
    job->cubin_size = 0;
}

const char *compile_find_kernels_dir(char *buf, size_t size)
{
    return tune_find_dir("TUNE_KERNELS_DIR", "kernels_src", buf, size);
}

const char *compile_default_cache_dir(char *buf, size_t size)
{
    const char *env = getenv("TUNE_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (env && *env)
        snprintf(buf, size, "%s", env);
    else if (xdg && *xdg)
        snprintf(buf, size, "%s/tune", xdg);
    else
        snprintf(buf, size, "%s/.cache/tune", home && *home ? home : "/tmp");
    return buf;
}
