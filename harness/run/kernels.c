/* kernels.c - the run's kernels (the table is plan.c's): compiled once (cached on disk), loaded
 * on first use. */
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
#include "run/search_ctx.h"

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
    read_cached(rc, rc->arch, rc->search->cache_dir, idx, n); /* a kernel not read: no cubin */
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

/* For every kernel, the first configuration planned that needs it (SIZE_MAX: none) and how many
 * do: one pass over the plans (a searched run's: the configurations it proposed). NULL when out
 * of memory. */
static size_t *kernel_users(const run_ctx *rc)
{
    size_t *first = malloc(2 * (rc->n_kernels ? rc->n_kernels : 1) * sizeof *first);
    if (!first)
        return NULL;
    size_t *uses = first + rc->n_kernels;
    for (size_t k = 0; k < rc->n_kernels; k++) {
        first[k] = SIZE_MAX;
        uses[k] = 0;
    }
    for (size_t i = 0; i < rc->n_plans; i++) { /* the configurations planned (plan.c) */
        const run_plan *pl = &rc->plans[i];
        for (int r = 0; !pl->skip && r < pl->n_refs; r++) {
            size_t k = pl->refs[r];
            int again = 0; /* a kernel listed twice by one configuration counts once */
            for (int q = 0; q < r; q++)
                again |= pl->refs[q] == k;
            first[k] = first[k] == SIZE_MAX || pl->ci < first[k] ? pl->ci : first[k];
            uses[k] += !again;
        }
    }
    return first;
}

/* " (configuration tile=16 work=4, and 3 more)": the sweep's parameters at configuration ci, and
 * how many others need the same kernel, into buf; "" when ci is SIZE_MAX. */
static void kernel_configs(const run_ctx *rc, size_t ci, size_t uses, char *buf, size_t size)
{
    buf[0] = '\0';
    if (ci == SIZE_MAX)
        return;
    tune_point p, q = {0};
    space_config_point(rc->sp, ci, &p);
    for (size_t a = 0; a < rc->sw->n_params; a++) {
        expr_value v;
        if (point_get(&p, rc->sw->params[a].name, &v) == 0)
            point_set(&q, rc->sw->params[a].name, v);
    }
    char vals[512], more[64] = "";
    point_format(&q, vals, sizeof vals);
    if (uses > 1)
        snprintf(more, sizeof more, ", and %zu more", uses - 1);
    snprintf(buf, size, " (configuration %s%s)", q.n ? vals : "without parameters", more);
}

/* Whether kernel k is printed: it failed to compile, or (--warnings) NVRTC warned. */
static int kernel_reported(const run_ctx *rc, size_t k)
{
    const compile_job *j = &rc->kernels[k].job;
    const char *log = j->log ? j->log : "";
    int warned = log[strspn(log, " \t\r\n")] != '\0';
    return j->status != TUNE_OK || (warned && rc->opt->warnings);
}

/* Prints the kernels idx[0..n) (idx NULL: every kernel) that failed to compile, with the
 * configuration that needs them and NVRTC's log; with --warnings, the log of those that compiled
 * with one. */
static void report_compiled(const run_ctx *rc, const size_t *idx, size_t n)
{
    size_t i = 0;
    while (!rc->opt->quiet && i < n && !kernel_reported(rc, idx ? idx[i] : i))
        i++;
    if (i == n || rc->opt->quiet)
        return;
    size_t *first = kernel_users(rc);
    for (; i < n; i++) {
        size_t k = idx ? idx[i] : i;
        if (!kernel_reported(rc, k))
            continue;
        const compile_job *j = &rc->kernels[k].job;
        const char *log = j->log ? j->log : "";
        char cfg[640] = "";
        if (first)
            kernel_configs(rc, first[k], first[rc->n_kernels + k], cfg, sizeof cfg);
        size_t len = strlen(log);
        while (len > 0 && strchr(" \t\r\n", log[len - 1]))
            len--;
        fprintf(stderr, "tune: %s: %s%s %s:\n%.*s\n", j->source, j->name, cfg,
                j->status == TUNE_OK ? "compiled with warnings" : "failed to compile", (int)len,
                log);
    }
    free(first);
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
    report_compiled(rc, idx, n);
    return TUNE_OK;
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
    for (size_t i = 0; st == TUNE_OK && i < n; i++)
        rc->search->compiled[idx[i]] = 1;
    if (st == TUNE_OK)
        report_compiled(rc, idx, n);
    free(idx);
    return st;
}

tune_status run_compile_subset(run_ctx *rc, const size_t *idx, size_t n, const char *cache_dir,
                               run_summary *sum)
{
    if (n == 0)
        return TUNE_OK;
    run_compile_async *c = compile_start(rc, rc->arch, cache_dir, idx, n, 0, 0);
    return c ? run_compile_finish(rc, c, sum) : (rc->err ? rc->err->code : TUNE_ERR_IO);
}

void *run_lookup_kernel(void *kctx, const family_kernel_ref *ref)
{
    run_ctx *rc = kctx;
    size_t i = run_kernel_find(rc, ref);
    if (i == SIZE_MAX)
        return NULL;
    run_kernel *k = &rc->kernels[i];
    if (k->job.status != TUNE_OK || !k->job.cubin) /* failed, or not compiled (searched) */
        return NULL;
    if (!k->lib) {
        k->lib = gpu_library_load(k->job.cubin, rc->err);
        if (k->lib)
            k->kernel = gpu_library_kernel(k->lib, k->job.lowered, rc->err);
    }
    return k->kernel;
}

int run_lookup_global(void *kctx, const family_kernel_ref *ref, const char *name, void **ptr,
                      size_t *bytes, tune_error *err)
{
    run_ctx *rc = kctx;
    size_t i = run_kernel_find(rc, ref);
    run_kernel *k = i == SIZE_MAX ? NULL : &rc->kernels[i];
    if (!k || !run_lookup_kernel(kctx, ref) || !k->lib) {
        tune_error_set(err, TUNE_ERR_CUDA, ref->source, "kernel %s is not loaded", ref->name);
        return -1;
    }
    return gpu_library_global(k->lib, name, ptr, bytes, err);
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
    run_plans_free(rc);
    for (size_t i = 0; i < rc->n_kernels; i++) {
        gpu_library_free(rc->kernels[i].lib);
        compile_job_clear(&rc->kernels[i].job);
    }
    free(rc->kernels);
    if (!rc->sp_borrowed)
        space_free(rc->sp);
}
