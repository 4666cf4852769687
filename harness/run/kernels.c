/* kernels.c - the run's kernel table: the distinct instantiations its configurations need,
 * compiled once (cached on disk), loaded on first use. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/hash.h"
#include "core/interrupt.h"
#include "core/outfile.h"
#include "core/progress.h"
#include "run/internal.h"

/* Whether k is the instantiation ref names: source, name and options. */
static int run_kernel_is(const run_kernel *k, const family_kernel_ref *ref)
{
    return strcmp(k->job.source, ref->source) == 0 && strcmp(k->job.name, ref->name) == 0 &&
           strcmp(k->job.options, ref->options) == 0;
}

static uint64_t run_kernel_hash(const char *source, const char *name, const char *options)
{
    return hash_fnv1a_str(hash_fnv1a_str(hash_fnv1a_str(HASH_FNV_OFFSET, source), name), options);
}

/* Rebuilds the open-addressed index of the kernel table (slot: kernel index + 1) at cap slots, a
 * power of two. 0, or -1 when out of memory (the old index kept). */
static int run_kernel_rehash(run_ctx *rc, size_t cap)
{
    size_t *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < rc->n_kernels; i++) {
        const compile_job *job = &rc->kernels[i].job;
        size_t j = (size_t)run_kernel_hash(job->source, job->name, job->options) & (cap - 1);
        while (slots[j])
            j = (j + 1) & (cap - 1);
        slots[j] = i + 1;
    }
    free(rc->kernel_slots);
    rc->kernel_slots = slots;
    rc->cap_kernel_slots = cap;
    return 0;
}

/* The index of the kernel ref names, added when new: a hash lookup, so that a space whose every
 * configuration is its own kernel (a million of them) is listed in linear time. */
size_t run_kernel_index(run_ctx *rc, const family_kernel_ref *ref)
{
    if (2 * (rc->n_kernels + 1) > rc->cap_kernel_slots &&
        run_kernel_rehash(rc, rc->cap_kernel_slots ? 2 * rc->cap_kernel_slots : 128) != 0)
        return SIZE_MAX;
    size_t mask = rc->cap_kernel_slots - 1,
           j = (size_t)run_kernel_hash(ref->source, ref->name, ref->options) & mask;
    for (; rc->kernel_slots[j]; j = (j + 1) & mask)
        if (run_kernel_is(&rc->kernels[rc->kernel_slots[j] - 1], ref))
            return rc->kernel_slots[j] - 1;
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
    snprintf(k->job.options, sizeof k->job.options, "%s", ref->options);
    k->job.arch_specific = ref->arch != 0;
    rc->kernel_slots[j] = rc->n_kernels + 1;
    return rc->n_kernels++;
}

/* Asks the family which kernels each configuration needs. */
tune_status run_plan_configs(run_ctx *rc)
{
    size_t n = space_n_configs(rc->sp);
    rc->plans = calloc(n ? n : 1, sizeof *rc->plans);
    if (!rc->plans)
        return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    for (size_t i = 0; i < n; i++) {
        tune_point p;
        space_config_point(rc->sp, i, &p);
        family_kernel_ref refs[FAMILY_MAX_KERNELS];
        memset(refs, 0, sizeof refs);
        char why[512] = "";
        int nr =
            rc->sw->family->kernels(rc->sw->family, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why);
        if (nr < 0) {
            rc->plans[i].skip = strdup(why);
            continue;
        }
        for (int r = 0; r < nr && !rc->plans[i].skip; r++)
            if (refs[r].arch && refs[r].arch != rc->arch) {
                snprintf(why, sizeof why, "architecture: %s needs sm_%da, the target is sm_%d",
                         refs[r].name, refs[r].arch, rc->arch);
                rc->plans[i].skip = strdup(why);
            }
        if (rc->plans[i].skip)
            continue;
        rc->plans[i].n_refs = nr;
        rc->plans[i].row_ref = -1;
        for (int r = 0; r < nr; r++) {
            if (refs[r].row && rc->plans[i].row_ref < 0)
                rc->plans[i].row_ref = r;
            size_t ki = run_kernel_index(rc, &refs[r]);
            if (ki == SIZE_MAX)
                return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
            rc->plans[i].refs[r] = ki;
        }
    }
    return TUNE_OK;
}

/* What compile_all's callbacks see: the progress line, and (a compile child that streams) the
 * pipe to tell the coordinator of each kernel finished, with the kernels' indices. */
typedef struct {
    progress pr;
    int fd;            /* -1: no streaming */
    const size_t *idx; /* NULL: job i is kernel i */
} compile_ctx;

static void compile_progress(void *ctx, size_t done, size_t cached)
{
    progress_update(&((compile_ctx *)ctx)->pr, done, cached, clock_now());
}

static void compile_job_done(void *ctx, size_t i)
{
    const compile_ctx *cc = ctx;
    if (cc->fd >= 0)
        worker_send(cc->fd, "J %zu", cc->idx ? cc->idx[i] : i);
}

/* Compiles the kernels idx[0..n) (idx NULL: every kernel) into the cache and reads them back;
 * threads as compile_options.threads (1: the coordinator's cache reads, without OpenMP);
 * stream_fd >= 0: each kernel finished is told on it ("J <kernel index>"). quiet: no progress
 * line. */
static tune_status compile_jobs(run_ctx *rc, int arch, const char *cache_dir, const size_t *idx,
                                size_t n, int threads, int stream_fd, int quiet, run_summary *sum)
{
    char kdir[4096];
    const char *kernels_dir = rc->opt->kernels_dir;
    if (!kernels_dir && !(kernels_dir = compile_find_kernels_dir(kdir, sizeof kdir)))
        return tune_error_set(rc->err, TUNE_ERR_IO, "kernels_src",
                              "cannot find the kernel sources (set TUNE_KERNELS_DIR)");
    compile_job *jobs = calloc(n ? n : 1, sizeof *jobs);
    if (!jobs)
        return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    for (size_t i = 0; i < n; i++)
        jobs[i] = rc->kernels[idx ? idx[i] : i].job;
    compile_ctx cc = {.fd = stream_fd, .idx = idx};
    double t0 = clock_now();
    progress_init(&cc.pr, rc->opt->quiet || quiet ? NULL : stderr, "compiling kernels", n,
                  isatty(STDERR_FILENO), t0);
    compile_options copt = {kernels_dir, cache_dir,       arch, threads, compile_progress,
                            &cc,         compile_job_done};
    tune_status st = compile_run(jobs, n, &copt, rc->err);
    sum->compile_seconds = clock_now() - t0;
    progress_end(&cc.pr, clock_now());
    for (size_t i = 0; i < n; i++) {
        rc->kernels[idx ? idx[i] : i].job = jobs[i];
        sum->n_cached += (size_t)jobs[i].from_cache;
        sum->n_kernel_errors += jobs[i].status != TUNE_OK;
    }
    sum->n_kernels = n;
    free(jobs);
    return st;
}

static tune_status compile_all(run_ctx *rc, int arch, const char *cache_dir, const size_t *idx,
                               size_t n, int threads, run_summary *sum)
{
    return compile_jobs(rc, arch, cache_dir, idx, n, threads, -1, 0, sum);
}

void run_remove_cache_dir(const char *dir)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        char path[PATH_MAX];
        if (e->d_name[0] != '.' &&
            (size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < sizeof path)
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
struct run_compile_async {
    run_ctx *rc;
    int arch;
    const char *cache_dir;
    size_t *idx; /* NULL: every kernel */
    size_t n;
    int threads; /* the child's OpenMP threads; 0: the default */
    int stream;  /* the child tells each kernel finished (run_compile_pump) */
    worker *w;
    /* what run_compile_pump read of the child's lines */
    unsigned char *read; /* per job: its cubin read here already */
    run_summary child;   /* the child's counts ("K" line) */
    int got, ended;
    char fail[4096]; /* its "F" line */
};

static int compile_child_body(void *ctx, int fd)
{
    run_compile_async *c = ctx;
    run_summary sum;
    memset(&sum, 0, sizeof sum);
    tune_error e = {0};
    c->rc->err = &e;
    if (compile_jobs(c->rc, c->arch, c->cache_dir, c->idx, c->n, c->threads, c->stream ? fd : -1, 0,
                     &sum) != TUNE_OK) {
        worker_send(fd, "F %d %s%s%s", (int)e.code, e.where, e.where[0] ? ": " : "", e.message);
        return 1;
    }
    worker_send(fd, "K %zu %zu %zu %.17g", sum.n_kernels, sum.n_cached, sum.n_kernel_errors,
                sum.compile_seconds);
    return 0;
}

static run_compile_async *compile_start(run_ctx *rc, int arch, const char *cache_dir,
                                        const size_t *idx, size_t n, int threads, int stream)
{
    run_compile_async *c = calloc(1, sizeof *c);
    if (!c || (idx && !(c->idx = malloc((n ? n : 1) * sizeof *idx))) ||
        !(c->read = calloc(n ? n : 1, 1))) {
        if (c)
            free(c->idx);
        free(c);
        tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
        return NULL;
    }
    c->stream = stream;
    if (idx)
        memcpy(c->idx, idx, n * sizeof *idx);
    c->rc = rc;
    c->arch = arch;
    c->cache_dir = cache_dir;
    c->n = n;
    c->threads = threads;
    /* a stop (SIGTERM) kills the child, maybe mid-write: its temporary file is then removed */
    if (cache_dir)
        interrupt_cleanup_push(outfile_remove_stale_temps, cache_dir);
    if (!(c->w = worker_start(compile_child_body, c, rc->err))) {
        if (cache_dir)
            interrupt_cleanup_remove(outfile_remove_stale_temps, cache_dir);
        free(c->idx);
        free(c->read);
        free(c);
        return NULL;
    }
    return c;
}

/* One line of the compile child: a kernel finished (its cubin read from the cache, with no
 * OpenMP here: a later child is forked from this process), the counts, or a failure. */
static void compile_line(run_compile_async *c, const char *line)
{
    size_t k;
    if (line[0] == 'K') {
        c->got = sscanf(line, "K %zu %zu %zu %lg", &c->child.n_kernels, &c->child.n_cached,
                        &c->child.n_kernel_errors, &c->child.compile_seconds) == 4;
    } else if (line[0] == 'F') {
        snprintf(c->fail, sizeof c->fail, "%s", line + 2);
    } else if (line[0] == 'J' && sscanf(line, "J %zu", &k) == 1) {
        for (size_t i = 0; i < c->n; i++)
            if ((c->idx ? c->idx[i] : i) == k && !c->read[i]) {
                c->read[i] = 2; /* told: read with the others told (run_compile_pump) */
                break;
            }
    }
}

static tune_status read_cached(run_ctx *rc, int arch, const char *cache_dir, const size_t *idx,
                               size_t n)
{
    run_summary part;
    memset(&part, 0, sizeof part);
    tune_error *keep = rc->err, quiet = {0};
    rc->err = &quiet;
    tune_status st = compile_jobs(rc, arch, cache_dir, idx, n, 1, -1, 1, &part);
    rc->err = keep;
    return st;
}

void run_read_cached_kernels(run_ctx *rc, const size_t *idx, size_t n)
{
    read_cached(rc, rc->arch, rc->cache_dir, idx, n); /* a kernel not read keeps no cubin */
}

int run_compile_pump(run_ctx *rc, run_compile_async *c, double timeout_s)
{
    char line[4096];
    int r;
    while (!c->ended && (r = worker_read_line(c->w, line, sizeof line, timeout_s)) != -1) {
        if (r == 0)
            c->ended = 1;
        else
            compile_line(c, line);
        timeout_s = 0;
    }
    /* the kernels told, read together (a read prepares every source and header once); one
     * that cannot be read now is read again at the end (compile_finish) */
    size_t *told = malloc((c->n ? c->n : 1) * sizeof *told), m = 0;
    for (size_t i = 0; told && i < c->n; i++)
        if (c->read[i] == 2)
            told[m++] = c->idx ? c->idx[i] : i;
    if (m > 0 && read_cached(rc, c->arch, c->cache_dir, told, m) == TUNE_OK)
        for (size_t i = 0; i < c->n; i++)
            c->read[i] = c->read[i] == 2 ? 1 : c->read[i];
    for (size_t i = 0; i < c->n; i++)
        c->read[i] = c->read[i] == 2 ? 0 : c->read[i];
    free(told);
    return c->ended;
}

worker *run_compile_worker(const run_compile_async *c)
{
    return c->ended ? NULL : c->w;
}

int run_compile_is_read(const run_compile_async *c, size_t k)
{
    for (size_t i = 0; i < c->n; i++)
        if ((c->idx ? c->idx[i] : i) == k)
            return c->read[i] == 1;
    return 0;
}

static tune_status compile_finish(run_ctx *rc, run_compile_async *c, run_summary *sum)
{
    char how[256];
    while (!run_compile_pump(rc, c, 3600))
        ;
    int code = worker_wait(c->w, how, sizeof how);
    if (c->cache_dir)
        interrupt_cleanup_remove(outfile_remove_stale_temps, c->cache_dir);
    tune_status st = TUNE_OK;
    if (c->fail[0])
        tune_error_set(rc->err, TUNE_ERR_NVRTC, "compile", "%s", c->fail);
    if (!c->got || code != 0)
        st = tune_error_set(rc->err, TUNE_ERR_NVRTC, "compile", "the compile process ended: %s",
                            how);
    /* cache reads only, and no OpenMP here: a later round's compile child is forked from this
     * process (compile.h); the kernels run_compile_pump read are not read again */
    size_t *rest = malloc((c->n ? c->n : 1) * sizeof *rest), m = 0;
    if (!rest && st == TUNE_OK)
        st = tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    for (size_t i = 0; rest && i < c->n; i++)
        if (!c->read[i])
            rest[m++] = c->idx ? c->idx[i] : i;
    if (st == TUNE_OK && m > 0)
        st = compile_all(rc, c->arch, c->cache_dir, rest, m, 1, sum);
    free(rest);
    sum->n_kernels = c->n;
    sum->n_cached = c->child.n_cached;
    sum->n_kernel_errors = c->child.n_kernel_errors;
    sum->compile_seconds = c->child.compile_seconds;
    free(c->idx);
    free(c->read);
    free(c);
    return st;
}

static tune_status compile_isolated(run_ctx *rc, int arch, const char *cache_dir, const size_t *idx,
                                    size_t n, run_summary *sum)
{
    run_compile_async *c = compile_start(rc, arch, cache_dir, idx, n, 0, 0);
    return c ? compile_finish(rc, c, sum) : (rc->err ? rc->err->code : TUNE_ERR_IO);
}

tune_status run_compile(run_ctx *rc, int arch, run_summary *sum)
{
    return run_compile_some(rc, arch, NULL, rc->n_kernels, sum);
}

tune_status run_compile_some(run_ctx *rc, int arch, const size_t *idx, size_t n, run_summary *sum)
{
    const run_options *opt = rc->opt;
    /* a GPU run needs the cache to carry the child's cubins: a private one under --no-cache */
    char tmp_cache[] = "/tmp/tune-kcache-XXXXXX";
    const char *cache = opt->cache_dir;
    if (!opt->compile_only && !cache && !(cache = mkdtemp(tmp_cache)))
        return tune_error_set(rc->err, TUNE_ERR_IO, "/tmp", "cannot create a kernel cache folder");
    if (cache == tmp_cache) /* removed at a stop (SIGTERM) too */
        interrupt_cleanup_push(run_remove_cache_dir, tmp_cache);
    tune_status st = opt->compile_only ? compile_all(rc, arch, cache, idx, n, 0, sum)
                                       : compile_isolated(rc, arch, cache, idx, n, sum);
    if (cache == tmp_cache) {
        interrupt_cleanup_remove(run_remove_cache_dir, tmp_cache);
        run_remove_cache_dir(tmp_cache);
    }
    if (st != TUNE_OK)
        return st;
    if (!opt->quiet)
        fprintf(stderr,
                "tune: %s: %zu configs (%zu pruned), %zu kernels for sm_%d: %zu from cache, %zu "
                "compile errors, %.1f s\n",
                rc->sw->name, space_n_configs(rc->sp), sum->n_pruned, sum->n_kernels, arch,
                sum->n_cached, sum->n_kernel_errors, sum->compile_seconds);
    for (size_t i = 0; !opt->quiet && i < n; i++) {
        const compile_job *j = &rc->kernels[idx ? idx[i] : i].job;
        if (j->status != TUNE_OK)
            fprintf(stderr, "tune: %s: %s failed to compile:\n%s\n", j->source, j->name,
                    j->log ? j->log : "");
    }
    return TUNE_OK;
}

run_compile_async *run_compile_start(run_ctx *rc, const size_t *idx, size_t n,
                                     const char *cache_dir, int threads)
{
    return compile_start(rc, rc->arch, cache_dir, idx, n, threads, 0);
}

run_compile_async *run_compile_stream(run_ctx *rc, const size_t *idx, size_t n,
                                      const char *cache_dir, int threads)
{
    return compile_start(rc, rc->arch, cache_dir, idx, n, threads, 1);
}

tune_status run_compile_finish(run_ctx *rc, run_compile_async *c, run_summary *sum)
{
    run_summary part;
    memset(&part, 0, sizeof part);
    size_t n = c->n, *idx = malloc((n ? n : 1) * sizeof *idx);
    if (!idx)
        return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    memcpy(idx, c->idx, n * sizeof *idx);
    tune_status st = compile_finish(rc, c, &part);
    sum->n_kernels += part.n_kernels;
    sum->n_cached += part.n_cached;
    sum->n_kernel_errors += part.n_kernel_errors;
    sum->compile_seconds += part.compile_seconds;
    for (size_t i = 0; st == TUNE_OK && i < n; i++) {
        rc->compiled[idx[i]] = 1;
        const compile_job *j = &rc->kernels[idx[i]].job;
        if (j->status != TUNE_OK && !rc->opt->quiet)
            fprintf(stderr, "tune: %s: %s failed to compile:\n%s\n", j->source, j->name,
                    j->log ? j->log : "");
    }
    free(idx);
    return st;
}

tune_status run_compile_subset(run_ctx *rc, const size_t *idx, size_t n, const char *cache_dir,
                               run_summary *sum)
{
    if (n == 0)
        return TUNE_OK;
    run_compile_async *c = run_compile_start(rc, idx, n, cache_dir, 0);
    return c ? run_compile_finish(rc, c, sum) : (rc->err ? rc->err->code : TUNE_ERR_IO);
}

tune_status run_kernels_key_hash(run_ctx *rc, uint64_t *hash)
{
    char kdir[4096];
    const char *kernels_dir = rc->opt->kernels_dir;
    if (!kernels_dir && !(kernels_dir = compile_find_kernels_dir(kdir, sizeof kdir)))
        return tune_error_set(rc->err, TUNE_ERR_IO, "kernels_src",
                              "cannot find the kernel sources (set TUNE_KERNELS_DIR)");
    compile_job *jobs = calloc(rc->n_kernels ? rc->n_kernels : 1, sizeof *jobs);
    if (!jobs)
        return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    for (size_t i = 0; i < rc->n_kernels; i++) { /* the requests only: no result is copied */
        snprintf(jobs[i].source, sizeof jobs[i].source, "%s", rc->kernels[i].job.source);
        snprintf(jobs[i].name, sizeof jobs[i].name, "%s", rc->kernels[i].job.name);
        snprintf(jobs[i].options, sizeof jobs[i].options, "%s", rc->kernels[i].job.options);
        jobs[i].arch_specific = rc->kernels[i].job.arch_specific;
    }
    compile_options copt = {.kernels_dir = kernels_dir, .arch = rc->arch};
    tune_status st = compile_hash_keys(jobs, rc->n_kernels, &copt, hash, rc->err);
    free(jobs);
    return st;
}

void *run_lookup_kernel(void *kctx, const family_kernel_ref *ref)
{
    run_ctx *rc = kctx;
    for (size_t i = 0; i < rc->n_kernels; i++) {
        run_kernel *k = &rc->kernels[i];
        if (!run_kernel_is(k, ref))
            continue;
        if (k->job.status != TUNE_OK || !k->job.cubin) /* failed, or not compiled (searched) */
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

uint64_t run_kernels_hash(const run_ctx *rc)
{
    uint64_t h = HASH_FNV_OFFSET;
    for (size_t i = 0; i < rc->n_kernels; i++) {
        h = hash_fnv1a_str(h, rc->kernels[i].job.source);
        h = hash_fnv1a_str(h, rc->kernels[i].job.name);
        h = hash_fnv1a_str(h, rc->kernels[i].job.options);
        if (rc->kernels[i].job.cubin)
            h = hash_fnv1a(h, rc->kernels[i].job.cubin, rc->kernels[i].job.cubin_size);
    }
    return h;
}

void run_ctx_free(run_ctx *rc)
{
    run_search_free(rc);
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
    free(rc->kernel_slots);
    if (!rc->sp_borrowed)
        space_free(rc->sp);
}
