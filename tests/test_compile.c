/* NVRTC compilation (CPU only): every variant of every sweep in sweeps/ compiles for sm_90; the
 * cache answers a second run; keys change with the architecture; compile errors keep their log.
 * Kernels declared outside kernels_src/ (an absolute path): their folder's headers, -D macros,
 * -I folders, the toolkit's headers with no setting, a refused -arch, and a key that changes when
 * a header they include does. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <sys/stat.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/compile.h"
#include "device/compile_src.h"
#include "run/run.h"
#include "model/sweep.h"

static char cache_dir[256];
static char src_dir[256]; /* kernels declared outside kernels_src/ */
static char kernels_dir[4096];

static void setup(void)
{
    snprintf(cache_dir, sizeof cache_dir, "/tmp/tune-test-compile-%d", (int)getpid());
    snprintf(src_dir, sizeof src_dir, "/tmp/tune-test-compile-src-%d", (int)getpid());
    cr_assert_not_null(compile_find_kernels_dir(kernels_dir, sizeof kernels_dir));
}

static void teardown(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", cache_dir, src_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", cache_dir);
}

TestSuite(compile, .init = setup, .fini = teardown, .timeout = 1200);

static size_t compile_sweep(const char *path, run_summary *sum)
{
    tune_error err = {0};
    sweep *sw = sweep_load(path, &err);
    cr_assert_not_null(sw, "%s: %s", err.where, err.message);
    run_options opt;
    run_options_init(&opt);
    opt.compile_only = 1;
    opt.quiet = 1;
    opt.arch = 90;
    opt.cache_dir = cache_dir;
    opt.kernels_dir = kernels_dir;
    cr_assert_eq(run_sweep(sw, &opt, sum, &err), TUNE_OK, "%s", err.message);
    sweep_free(sw);
    return sum->n_kernels;
}

Test(compile, every_variant_of_every_sweep_compiles)
{
    const char *sweeps[] = {"sweeps/sparq.json", "sweeps/sparq_step1.json",
                            "sweeps/sparq_step2.json"};
    for (size_t i = 0; i < sizeof sweeps / sizeof sweeps[0]; i++) {
        run_summary sum;
        size_t n = compile_sweep(sweeps[i], &sum);
        cr_expect_gt(n, 3, "%s: %zu kernels", sweeps[i], n);
        cr_expect_eq(sum.n_kernel_errors, 0, "%s: %zu kernels failed", sweeps[i],
                     sum.n_kernel_errors);
        /* second run: everything from the cache */
        run_summary again;
        compile_sweep(sweeps[i], &again);
        cr_expect_eq(again.n_cached, again.n_kernels, "%s: %zu of %zu from cache", sweeps[i],
                     again.n_cached, again.n_kernels);
    }
}

Test(compile, cache_key_includes_architecture)
{
    compile_job a = {.source = "common.cu", .name = "tune_fill_indices"};
    compile_options opt = {.kernels_dir = kernels_dir, .cache_dir = cache_dir, .arch = 90};
    tune_error err = {0};
    cr_assert_eq(compile_run(&a, 1, &opt, &err), TUNE_OK, "%s", err.message);
    cr_assert_eq(a.status, TUNE_OK, "%s", a.log);
    cr_expect_eq(a.from_cache, 0);
    cr_expect_gt(a.cubin_size, 0);
    cr_expect_not_null(a.lowered);
    compile_job b = {.source = "common.cu", .name = "tune_fill_indices"};
    opt.arch = 80;
    cr_assert_eq(compile_run(&b, 1, &opt, &err), TUNE_OK);
    cr_expect_eq(b.from_cache, 0, "sm_80 must not reuse the sm_90 cubin");
    compile_job c = {.source = "common.cu", .name = "tune_fill_indices"};
    opt.arch = 90;
    cr_assert_eq(compile_run(&c, 1, &opt, &err), TUNE_OK);
    cr_expect_eq(c.from_cache, 1);
    cr_expect_eq(c.cubin_size, a.cubin_size);
    cr_expect(memcmp(c.cubin, a.cubin, a.cubin_size) == 0);
    compile_job_clear(&a);
    compile_job_clear(&b);
    compile_job_clear(&c);
}

Test(compile, compile_error_keeps_the_log)
{
    /* a template argument the kernel's static_assert rejects: CHUNK not a multiple of VEC */
    compile_job j = {.source = "gather_matmul.cu", .name = "gm_rows<half_t, 1, 12, 8, 256, 4, 1>"};
    compile_options opt = {.kernels_dir = kernels_dir, .cache_dir = cache_dir, .arch = 90};
    tune_error err = {0};
    cr_assert_eq(compile_run(&j, 1, &opt, &err), TUNE_OK);
    cr_expect_eq(j.status, TUNE_ERR_NVRTC);
    cr_assert_not_null(j.log);
    cr_expect(strstr(j.log, "CHUNK must be a multiple of VEC") != NULL, "log: %s", j.log);
    cr_expect_null(j.cubin);
    compile_job_clear(&j);
    /* the failure is cached too: a second run compiles nothing and keeps the log */
    compile_job k = {.source = "gather_matmul.cu", .name = "gm_rows<half_t, 1, 12, 8, 256, 4, 1>"};
    cr_assert_eq(compile_run(&k, 1, &opt, &err), TUNE_OK);
    cr_expect_eq(k.from_cache, 1);
    cr_expect_eq(k.status, TUNE_ERR_NVRTC);
    cr_expect(k.log && strstr(k.log, "CHUNK must be a multiple of VEC") != NULL);
    compile_job_clear(&k);
}

/* compile_options.job_done: each job told once, by its index, when its result is in (what a
 * searched run's compile child tells the coordinator, kernel by kernel), with OpenMP and without. */
typedef struct {
    compile_job *jobs;
    int seen[3];
    int ready[3]; /* its status or cubin was set when told */
    size_t progress_calls;
} done_log;

static void record_done(void *ctx, size_t i)
{
    done_log *d = ctx;
    cr_assert_lt(i, 3);
    d->seen[i]++;
    d->ready[i] = d->jobs[i].cubin != NULL || d->jobs[i].status != TUNE_OK;
}

static void record_progress(void *ctx, size_t done, size_t cached)
{
    (void)done;
    (void)cached;
    ((done_log *)ctx)->progress_calls++;
}

Test(compile, each_finished_job_is_told)
{
    for (int threads = 0; threads <= 1; threads++) {
        compile_job jobs[3] = {
            {.source = "common.cu", .name = "tune_fill_indices"},
            {.source = "gather_matmul.cu", .name = "gm_rows<half_t, 1, 12, 8, 256, 4, 1>"},
            {.source = "common.cu", .name = "tune_read_probe"},
        };
        done_log d = {.jobs = jobs};
        compile_options opt = {.kernels_dir = kernels_dir, .cache_dir = cache_dir, .arch = 90,
                               .threads = threads, .progress = record_progress,
                               .progress_ctx = &d, .job_done = record_done};
        tune_error err = {0};
        cr_assert_eq(compile_run(jobs, 3, &opt, &err), TUNE_OK, "%s", err.message);
        for (size_t i = 0; i < 3; i++) {
            cr_expect_eq(d.seen[i], 1, "threads %d: job %zu told %d times", threads, i, d.seen[i]);
            cr_expect(d.ready[i], "threads %d: job %zu told before its result", threads, i);
            compile_job_clear(&jobs[i]);
        }
        cr_expect_eq(d.progress_calls, 3);
    }
}

Test(compile, missing_source_is_an_error)
{
    compile_job j = {.source = "no_such_file.cu", .name = "k"};
    compile_options opt = {.kernels_dir = kernels_dir, .cache_dir = NULL, .arch = 90};
    tune_error err = {0};
    cr_expect_eq(compile_run(&j, 1, &opt, &err), TUNE_ERR_IO);
    cr_expect(strstr(err.where, "no_such_file.cu") != NULL, "where: %s", err.where);
}

/* The only entry of the (fresh) cache folder, read whole into *data. */
static char *cache_entry(char *path, size_t size, size_t *len)
{
    char pattern[300];
    snprintf(pattern, sizeof pattern, "%s/*.bin", cache_dir);
    glob_t g;
    cr_assert_eq(glob(pattern, 0, NULL, &g), 0, "no entry in %s", cache_dir);
    cr_assert_eq(g.gl_pathc, 1, "%zu entries", g.gl_pathc);
    snprintf(path, size, "%s", g.gl_pathv[0]);
    globfree(&g);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    char *data = malloc(1 << 24);
    *len = fread(data, 1, 1 << 24, f);
    fclose(f);
    return data;
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* Compiles job name once more; returns from_cache and checks the result is the real one. */
static int recompile(const char *source, const char *name, tune_status want)
{
    compile_job j = {0};
    snprintf(j.source, sizeof j.source, "%s", source);
    snprintf(j.name, sizeof j.name, "%s", name);
    compile_options opt = {.kernels_dir = kernels_dir, .cache_dir = cache_dir, .arch = 90};
    tune_error err = {0};
    cr_assert_eq(compile_run(&j, 1, &opt, &err), TUNE_OK, "%s", err.message);
    cr_expect_eq(j.status, want, "%s: status %d", name, j.status);
    if (want == TUNE_OK)
        cr_expect(j.cubin && j.cubin_size > 0 && j.lowered);
    else
        cr_expect(j.log && strstr(j.log, "CHUNK must be a multiple of VEC"), "log: %s", j.log);
    int hit = j.from_cache;
    compile_job_clear(&j);
    return hit;
}

/* A damaged, truncated, extended or foreign cache entry is never loaded: it is a miss, the kernel
 * is compiled again and the entry rewritten whole. A cached compile error whose bytes were
 * changed (the status word above all) must not come back as a cubin, nor a cubin as an error. */
typedef struct {
    const char *source, *name;
    tune_status status;
} cache_case;

Test(compile, damaged_cache_entries_are_recompiled)
{
    static const cache_case cases[] = {
        {"gather_matmul.cu", "gm_rows<half_t, 1, 12, 8, 256, 4, 1>", TUNE_ERR_NVRTC},
        {"common.cu", "tune_fill_indices", TUNE_OK},
    };
    for (size_t c = 0; c < 2; c++) {
        const cache_case *cc = &cases[c];
        cr_expect_eq(recompile(cc->source, cc->name, cc->status), 0);
        char path[512];
        size_t len;
        char *good = cache_entry(path, sizeof path, &len);
        cr_assert_gt(len, 64);
        char *bad = malloc(len + 1);
        /* one byte changed: every header byte, then spots in the body and the checksum */
        size_t spots[64 + 4];
        size_t n_spots = 0;
        for (size_t i = 0; i < 64; i++)
            spots[n_spots++] = i;
        spots[n_spots++] = len / 2;
        spots[n_spots++] = len - 9;
        spots[n_spots++] = len - 8;
        spots[n_spots++] = len - 1;
        for (size_t s = 0; s < n_spots; s++) {
            memcpy(bad, good, len);
            bad[spots[s]] ^= (char)(s % 2 ? 0x01 : 0x80);
            write_bytes(path, bad, len);
            cr_expect_eq(recompile(cc->source, cc->name, cc->status), 0,
                         "%s: byte %zu changed, loaded from the cache", cc->name, spots[s]);
        }
        /* truncated, emptied, extended */
        size_t cuts[] = {len - 1, len - 8, len / 2, 7, 0};
        for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
            write_bytes(path, good, cuts[k]);
            cr_expect_eq(recompile(cc->source, cc->name, cc->status), 0,
                         "%s: cut to %zu bytes, loaded", cc->name, cuts[k]);
        }
        memcpy(bad, good, len);
        bad[len] = 0;
        write_bytes(path, bad, len + 1);
        cr_expect_eq(recompile(cc->source, cc->name, cc->status), 0, "%s: extended", cc->name);
        /* the entry was rewritten whole: the next run hits, and the bytes are the good ones */
        cr_expect_eq(recompile(cc->source, cc->name, cc->status), 1, "%s: not rewritten", cc->name);
        size_t again_len;
        char *again = cache_entry(path, sizeof path, &again_len);
        cr_expect(again_len == len && memcmp(again, good, len) == 0, "%s: rewritten differently",
                  cc->name);
        free(again);
        free(bad);
        free(good);
        unlink(path);
    }
}

/* An entry copied under another key's file name (another kernel's) is foreign: a miss. */
Test(compile, foreign_cache_entry_is_recompiled)
{
    char a_path[512], b_path[512];
    size_t a_len, b_len;
    cr_expect_eq(recompile("common.cu", "tune_fill_indices", TUNE_OK), 0);
    char *a = cache_entry(a_path, sizeof a_path, &a_len);
    unlink(a_path);
    cr_expect_eq(recompile("gather_matmul.cu", "gm_rows<half_t, 1, 12, 8, 256, 4, 1>",
                           TUNE_ERR_NVRTC),
                 0);
    char *b = cache_entry(b_path, sizeof b_path, &b_len);
    write_bytes(b_path, a, a_len); /* the cubin entry under the compile error's name */
    cr_expect_eq(recompile("gather_matmul.cu", "gm_rows<half_t, 1, 12, 8, 256, 4, 1>",
                           TUNE_ERR_NVRTC),
                 0, "a foreign entry was loaded");
    free(a);
    free(b);
}

/* ---- kernels declared outside kernels_src/: absolute paths, options, the toolkit's headers ---- */

/* Writes text to src_dir/name (folders made as needed); path (when not NULL) = its full path. */
static void put_file(const char *name, const char *text, char *path, size_t size)
{
    char full[512], cmd[600];
    snprintf(full, sizeof full, "%s/%s", src_dir, name);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", full);
    cr_assert_eq(system(cmd), 0);
    write_bytes(full, text, strlen(text));
    if (path)
        snprintf(path, size, "%s", full);
}

static compile_job abs_job(const char *path, const char *name, const char *options)
{
    compile_job j = {0};
    snprintf(j.source, sizeof j.source, "%s", path);
    snprintf(j.name, sizeof j.name, "%s", name);
    snprintf(j.options, sizeof j.options, "%s", options);
    return j;
}

/* compile_run over jobs with the test's cache, sm_90; the run itself must succeed. */
static void run_jobs(compile_job *jobs, size_t n)
{
    compile_options opt = {.kernels_dir = kernels_dir, .cache_dir = cache_dir, .arch = 90};
    tune_error err = {0};
    cr_assert_eq(compile_run(jobs, n, &opt, &err), TUNE_OK, "%s: %s", err.where, err.message);
}

static size_t cache_entries(void)
{
    char pattern[300];
    snprintf(pattern, sizeof pattern, "%s/*.bin", cache_dir);
    glob_t g;
    size_t n = glob(pattern, 0, NULL, &g) == 0 ? g.gl_pathc : 0;
    globfree(&g);
    return n;
}

/* A kernel in its own folder: a local header beside it ("tile.h", which includes "detail/off.h"),
 * a library header in an -I folder (<lib.h>); TILE from a -D option. */
static const char *const TILE_KERNEL =
    "#include \"tile.h\"\n"
    "#include <lib.h>\n"
    "template <int N> __global__ void tiled(float *x)\n"
    "{\n"
    "    x[threadIdx.x] = (float)(TILE * N + tile_offset() + lib_value());\n"
    "}\n";

static void put_tile_kernel(char *path, size_t size, char *opts, size_t opts_size)
{
    put_file("user/tiled.cu", TILE_KERNEL, path, size);
    put_file("user/tile.h", "#include \"detail/off.h\"\n", NULL, 0);
    put_file("user/detail/off.h", "__device__ int tile_offset() { return 1; }\n", NULL, 0);
    put_file("lib/include/lib.h", "__device__ int lib_value() { return 7; }\n", NULL, 0);
    snprintf(opts, opts_size, "-I%s/lib/include", src_dir);
}

Test(compile, absolute_source_with_local_header_compiles)
{
    char path[512], inc[512], opts[1024];
    put_tile_kernel(path, sizeof path, inc, sizeof inc);
    snprintf(opts, sizeof opts, "-DTILE=16\n%s\n", inc);
    compile_job j = abs_job(path, "tiled<2>", opts);
    run_jobs(&j, 1);
    cr_expect_eq(j.status, TUNE_OK, "log: %s", j.log);
    cr_expect(j.cubin && j.cubin_size > 0 && j.lowered);
    compile_job_clear(&j);
}

Test(compile, macros_select_code)
{
    char path[512], inc[512], o16[1024], o32[1024];
    put_tile_kernel(path, sizeof path, inc, sizeof inc);
    snprintf(o16, sizeof o16, "%s\n-DTILE=16", inc);
    snprintf(o32, sizeof o32, "%s\n\n  -DTILE=32  \n", inc); /* empty lines, white space */
    compile_job jobs[3] = {abs_job(path, "tiled<2>", o16), abs_job(path, "tiled<2>", o32),
                           abs_job(path, "tiled<2>", inc)};
    run_jobs(jobs, 3);
    cr_assert_eq(jobs[0].status, TUNE_OK, "log: %s", jobs[0].log);
    cr_assert_eq(jobs[1].status, TUNE_OK, "log: %s", jobs[1].log);
    cr_expect(jobs[0].cubin_size != jobs[1].cubin_size ||
                  memcmp(jobs[0].cubin, jobs[1].cubin, jobs[0].cubin_size) != 0,
              "-DTILE=16 and -DTILE=32 gave the same cubin");
    cr_expect_eq(cache_entries(), 3, "three keys: %zu cache entries", cache_entries());
    /* without the macro: the compile error names it */
    cr_expect_eq(jobs[2].status, TUNE_ERR_NVRTC);
    cr_expect(jobs[2].log && strstr(jobs[2].log, "TILE") && strstr(jobs[2].log, "undefined"),
              "log: %s", jobs[2].log);
    for (size_t i = 0; i < 3; i++)
        compile_job_clear(&jobs[i]);
}

/* The probes `tune calibrate` runs (device/calibrate.c) compile for sm_90 without a GPU.
 * gm_gather<half_t, 1, 1> is both transposed gather probes: over the L2-resident source and over
 * the DRAM-resident one (the same kernel, another k_pre). */
Test(compile, calibrate_probes_compile)
{
    static const char *const probes[][2] = {
        {"common.cu", "tune_read_probe"},           {"common.cu", "tune_chase_probe"},
        {"common.cu", "tune_sector_probe"},         {"gather_matmul.cu", "gm_gather<half_t, 1, 0>"},
        {"gather_matmul.cu", "gm_gather<half_t, 1, 1>"}, {"common.cu", "tune_stride_probe"}};
    enum { N = sizeof probes / sizeof probes[0] };
    compile_job jobs[N];
    for (size_t i = 0; i < N; i++)
        jobs[i] = abs_job(probes[i][0], probes[i][1], "");
    run_jobs(jobs, N);
    for (size_t i = 0; i < N; i++) {
        cr_expect_eq(jobs[i].status, TUNE_OK, "%s: %s", probes[i][1], jobs[i].log);
        compile_job_clear(&jobs[i]);
    }
}

/* The toolkit's headers, found with no setting: one tiny kernel each. */
typedef struct {
    const char *header, *body;
} header_case;

Test(compile, toolkit_headers_compile)
{
    static const header_case cases[] = {
        {"cuda_fp16.h", "x[0] = __half2float(__float2half(1.5f));"},
        {"cuda_bf16.h", "x[0] = __bfloat162float(__float2bfloat16(1.5f));"},
        {"cuda/std/cstdint", "x[0] = (float)cuda::std::numeric_limits<cuda::std::int32_t>::max();"},
        {"cub/block/block_reduce.cuh",
         "using R = cub::BlockReduce<float, 128>;\n"
         "    __shared__ typename R::TempStorage t;\n"
         "    float s = R(t).Sum(x[threadIdx.x]);\n"
         "    if (threadIdx.x == 0) x[0] = s;"},
        {"cuda/pipeline",
         "__shared__ float s[128];\n"
         "    auto pipe = cuda::make_pipeline();\n"
         "    pipe.producer_acquire();\n"
         "    cuda::memcpy_async(&s[threadIdx.x], &x[threadIdx.x], sizeof(float), pipe);\n"
         "    pipe.producer_commit();\n"
         "    pipe.consumer_wait();\n"
         "    x[threadIdx.x] = s[threadIdx.x] * 2.0f;\n"
         "    pipe.consumer_release();"},
        {"mma.h",
         "nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> c;\n"
         "    nvcuda::wmma::fill_fragment(c, 0.0f);\n"
         "    nvcuda::wmma::store_matrix_sync(x, c, 16, nvcuda::wmma::mem_row_major);"},
        {"cuda/barrier",
         "#pragma nv_diag_suppress static_var_with_dynamic_init\n"
         "    __shared__ cuda::barrier<cuda::thread_scope_block> bar;\n"
         "    if (threadIdx.x == 0) init(&bar, blockDim.x);\n"
         "    __syncthreads();\n"
         "    bar.arrive_and_wait();\n"
         "    x[threadIdx.x] = 1.0f;"},
    };
    enum { N = sizeof cases / sizeof cases[0] };
    char dir[512];
    cr_expect_not_null(compile_toolkit_include_dir(dir, sizeof dir),
                       "no toolkit include folder (CUDA_HOME, CUDA_PATH, CMake's, /usr/local/cuda)");
    compile_job jobs[N];
    for (size_t i = 0; i < N; i++) {
        char name[64], text[2048], path[512];
        snprintf(name, sizeof name, "hdr%zu.cu", i);
        snprintf(text, sizeof text,
                 "#include <%s>\n"
                 "#include <cuda/std/limits>\n"
                 "extern \"C\" __global__ void k(float *x)\n{\n    %s\n}\n",
                 cases[i].header, cases[i].body);
        put_file(name, text, path, sizeof path);
        jobs[i] = abs_job(path, "k", "");
    }
    run_jobs(jobs, N);
    for (size_t i = 0; i < N; i++) {
        cr_expect_eq(jobs[i].status, TUNE_OK, "#include <%s> (toolkit folder %s): %s",
                     cases[i].header, dir, jobs[i].log ? jobs[i].log : "(no log)");
        compile_job_clear(&jobs[i]);
    }
}

Test(compile, missing_absolute_source_is_the_jobs_error)
{
    char path[512];
    snprintf(path, sizeof path, "%s/no/such/kernel.cu", src_dir);
    compile_job jobs[2] = {abs_job(path, "k", ""), {.source = "common.cu",
                                                    .name = "tune_fill_indices"}};
    run_jobs(jobs, 2);
    cr_expect_eq(jobs[0].status, TUNE_ERR_IO);
    cr_assert_not_null(jobs[0].log);
    cr_expect(strstr(jobs[0].log, "cannot read ") && strstr(jobs[0].log, path) &&
                  strstr(jobs[0].log, "No such file"),
              "log: %s", jobs[0].log);
    cr_expect_eq(jobs[1].status, TUNE_OK, "the other job: %s", jobs[1].log);
    cr_expect_eq(cache_entries(), 1, "a missing source is not cached");
    compile_job_clear(&jobs[0]);
    compile_job_clear(&jobs[1]);
}

Test(compile, architecture_options_are_refused)
{
    char path[512];
    put_file("k.cu", "extern \"C\" __global__ void k(float *x) { x[0] = 1.0f; }\n", path,
             sizeof path);
    const char *refused[] = {"-arch=sm_80", "-DX=1\n-arch sm_80", "--gpu-architecture=sm_100a",
                             "-arch\nsm_80", "--gpu-architecture compute_90"};
    enum { N = sizeof refused / sizeof refused[0] };
    compile_job jobs[N + 1];
    for (size_t i = 0; i < N; i++)
        jobs[i] = abs_job(path, "k", refused[i]);
    jobs[N] = abs_job(path, "k", "-DX=1\n-use_fast_math"); /* others pass */
    run_jobs(jobs, N + 1);
    for (size_t i = 0; i < N; i++) {
        cr_expect_eq(jobs[i].status, TUNE_ERR_INVALID, "\"%s\" accepted", refused[i]);
        cr_expect(jobs[i].log && strstr(jobs[i].log, "refused") &&
                      strstr(jobs[i].log, "architecture"),
                  "\"%s\": %s", refused[i], jobs[i].log);
        cr_expect_null(jobs[i].cubin);
        compile_job_clear(&jobs[i]);
    }
    cr_expect_eq(jobs[N].status, TUNE_OK, "%s", jobs[N].log);
    compile_job_clear(&jobs[N]);
}

/* Runs the tile kernel with -DTILE=16; returns from_cache. */
static int tile_run(const char *path, const char *inc)
{
    char opts[1024];
    snprintf(opts, sizeof opts, "-DTILE=16\n%s", inc);
    compile_job jobs[2] = {abs_job(path, "tiled<1>", opts), abs_job(path, "tiled<2>", opts)};
    run_jobs(jobs, 2);
    cr_expect_eq(jobs[0].status, TUNE_OK, "%s", jobs[0].log);
    cr_expect_eq(jobs[1].status, TUNE_OK, "%s", jobs[1].log);
    cr_expect_eq(jobs[0].from_cache, jobs[1].from_cache);
    int hit = jobs[0].from_cache;
    compile_job_clear(&jobs[0]);
    compile_job_clear(&jobs[1]);
    return hit;
}

/* The key covers every header the source includes from its folder or an -I folder: a second run
 * hits; editing one (the source's text unchanged) misses, then hits again. */
Test(compile, editing_an_included_header_recompiles)
{
    char path[512], inc[512];
    put_tile_kernel(path, sizeof path, inc, sizeof inc);
    cr_expect_eq(tile_run(path, inc), 0, "first run: a hit");
    cr_expect_eq(tile_run(path, inc), 1, "second run: not from the cache");
    const char *edits[][2] = {
        {"user/tile.h", "#include \"detail/off.h\"\n// edited\n"},
        {"user/detail/off.h", "__device__ int tile_offset() { return 2; }\n"}, /* two levels */
        {"lib/include/lib.h", "__device__ int lib_value() { return 8; }\n"},   /* an -I folder */
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        put_file(edits[i][0], edits[i][1], NULL, 0);
        cr_expect_eq(tile_run(path, inc), 0, "%s edited: loaded from the cache", edits[i][0]);
        cr_expect_eq(tile_run(path, inc), 1, "%s edited, second run: not from the cache",
                     edits[i][0]);
    }
}

/* The key of one job on the kernels of folder dir (no compile). */
static uint64_t shipped_key(const char *dir, const char *source, const char *name)
{
    compile_job j = {0};
    snprintf(j.source, sizeof j.source, "%s", source);
    snprintf(j.name, sizeof j.name, "%s", name);
    compile_options opt = {.kernels_dir = dir, .cache_dir = cache_dir, .arch = 90};
    tune_error err = {0};
    uint64_t h = 0;
    cr_assert_eq(compile_hash_keys(&j, 1, &opt, &h, &err), TUNE_OK, "%s: %s", err.where,
                 err.message);
    return h;
}

/* A shipped source's key covers the headers of the kernels folder that it includes, directly or
 * through another header: editing ptx.cuh (a copy of the folder's) changes the keys of
 * gather_matmul.cu (which includes it) and of mixed_gemm_wgmma.cu (through mixed_gemm.cuh), and
 * not common.cu's (which does not include it). */
Test(compile, editing_a_shipped_header_changes_its_includers_keys)
{
    static const char *const jobs[][2] = {
        {"gather_matmul.cu", "gm_rows<half_t, 1, 64, 8, 256, 4, 1>"},
        {"mixed_gemm_wgmma.cu", "mg_wgmma<half_t, 64, 2, 1, 4, 3, 0, 1>"},
        {"common.cu", "tune_fill_indices"},
    };
    char dir[300], cmd[9000], path[400];
    snprintf(dir, sizeof dir, "%s/kernels", src_dir);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s'/*.cu '%s'/*.cuh '%s'", dir, kernels_dir,
             kernels_dir, dir);
    cr_assert_eq(system(cmd), 0);
    uint64_t before[3], after[3];
    for (size_t i = 0; i < 3; i++)
        before[i] = shipped_key(dir, jobs[i][0], jobs[i][1]);
    snprintf(path, sizeof path, "%s/ptx.cuh", dir);
    FILE *f = fopen(path, "a");
    cr_assert_not_null(f);
    fputs("// edited\n", f);
    fclose(f);
    for (size_t i = 0; i < 3; i++)
        after[i] = shipped_key(dir, jobs[i][0], jobs[i][1]);
    cr_expect_neq(before[0], after[0], "gather_matmul.cu includes ptx.cuh: its key changes");
    cr_expect_neq(before[1], after[1], "mixed_gemm_wgmma.cu includes it through mixed_gemm.cuh");
    cr_expect_eq(before[2], after[2], "common.cu does not include it: its key stays");
}

/* Headers that include each other are hashed once each (the scan ends). */
Test(compile, include_cycle_ends)
{
    char path[512];
    put_file("cyc/a.h", "#pragma once\n#include \"b.h\"\n__device__ int fa() { return 1; }\n",
             NULL, 0);
    put_file("cyc/b.h", "#pragma once\n#include \"a.h\"\n", NULL, 0);
    put_file("cyc/k.cu", "#include \"a.h\"\nextern \"C\" __global__ void k(int *x) { x[0] = fa(); }\n",
             path, sizeof path);
    compile_job j = abs_job(path, "k", "");
    run_jobs(&j, 1);
    cr_expect_eq(j.status, TUNE_OK, "%s", j.log);
    compile_job_clear(&j);
}

/* $CUDA_HOME first, then $CUDA_PATH, each only where include/cuda_fp16.h is; then the build's. */
Test(compile, toolkit_folder_from_the_environment)
{
    char fake[512], buf[512], want[600];
    put_file("toolkit/include/cuda_fp16.h", "", fake, sizeof fake);
    snprintf(fake, sizeof fake, "%s/toolkit", src_dir);
    snprintf(want, sizeof want, "%s/include", fake);
    setenv("CUDA_HOME", fake, 1);
    setenv("CUDA_PATH", "/nonexistent", 1);
    cr_expect_str_eq(compile_toolkit_include_dir(buf, sizeof buf), want);
    setenv("CUDA_HOME", src_dir, 1); /* no include/cuda_fp16.h there */
    setenv("CUDA_PATH", fake, 1);
    cr_expect_str_eq(compile_toolkit_include_dir(buf, sizeof buf), want);
    unsetenv("CUDA_HOME");
    unsetenv("CUDA_PATH");
    const char *found = compile_toolkit_include_dir(buf, sizeof buf);
    cr_expect(found && strcmp(found, want) != 0, "without a setting: %s", found ? found : "none");
}

/* Every spelling of an include folder NVRTC takes is searched by the key's scan too. */
Test(compile, include_folder_spellings_are_scanned)
{
    char path[512], inc[512];
    put_tile_kernel(path, sizeof path, inc, sizeof inc);
    const char *forms[] = {"-I %s/lib/include", "-I\n%s/lib/include", "-I=%s/lib/include",
                           "--include-path=%s/lib/include"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char opts[600], lib[64];
        snprintf(opts, sizeof opts, forms[i], src_dir);
        cr_expect_eq(tile_run(path, opts), 0, "\"%s\": first run from the cache", forms[i]);
        cr_expect_eq(tile_run(path, opts), 1, "\"%s\": second run compiled", forms[i]);
        snprintf(lib, sizeof lib, "__device__ int lib_value() { return %zu; }\n", 20 + i);
        put_file("lib/include/lib.h", lib, NULL, 0);
        cr_expect_eq(tile_run(path, opts), 0, "\"%s\": lib.h edited, loaded from the cache",
                     forms[i]);
    }
}

/* Runs job k of path with opts; returns from_cache (the job must compile). */
static int one_run(const char *path, const char *opts, int *value_line)
{
    (void)value_line;
    compile_job j = abs_job(path, "k", opts);
    run_jobs(&j, 1);
    cr_expect_eq(j.status, TUNE_OK, "%s", j.log);
    int hit = j.from_cache;
    compile_job_clear(&j);
    return hit;
}

/* Headers the key's scan cannot name from an #include line still key the cache: one named by a
 * macro (#include HEADER: every file of the search folders is hashed), one given as an option
 * (--pre-include, -include=, -include NAME) and one reached by #include_next. Editing any of them
 * recompiles; an unchanged second run hits. */
Test(compile, headers_the_scan_cannot_name_key_the_cache)
{
    char path[512], inc[600];
    snprintf(inc, sizeof inc, "-I%s/hidden/inc", src_dir);
    put_file("hidden/inc/v.h", "#define V 1\n", NULL, 0);
    put_file("hidden/inc/deep/w.h", "#define W 1\n", NULL, 0);
    put_file("hidden/macro.cu",
             "#define HEADER \"v.h\"\n#define DEEP <deep/w.h>\n#include HEADER\n#include DEEP\n"
             "extern \"C\" __global__ void k(int *x) { x[0] = V + W; }\n",
             path, sizeof path);
    cr_expect_eq(one_run(path, inc, NULL), 0);
    cr_expect_eq(one_run(path, inc, NULL), 1, "unchanged: a hit");
    put_file("hidden/inc/v.h", "#define V 2\n", NULL, 0);
    cr_expect_eq(one_run(path, inc, NULL), 0, "a header named by a macro edited: compiled");
    put_file("hidden/inc/deep/w.h", "#define W 2\n", NULL, 0);
    cr_expect_eq(one_run(path, inc, NULL), 0, "a header in a subfolder, by a macro: compiled");
    cr_expect_eq(one_run(path, inc, NULL), 1);

    char pre[3][700];
    snprintf(pre[0], sizeof pre[0], "%s\n--pre-include=p.h", inc);
    snprintf(pre[1], sizeof pre[1], "%s\n-include=p.h", inc);
    snprintf(pre[2], sizeof pre[2], "%s\n-include\np.h", inc);
    put_file("hidden/pre.cu", "extern \"C\" __global__ void k(int *x) { x[0] = P; }\n", path,
             sizeof path);
    for (int i = 0; i < 3; i++) {
        char text[64];
        snprintf(text, sizeof text, "#define P %d\n", 10 + i);
        put_file("hidden/inc/p.h", text, NULL, 0);
        cr_expect_eq(one_run(path, pre[i], NULL), 0, "%s: compiled", pre[i]);
        cr_expect_eq(one_run(path, pre[i], NULL), 1, "%s: then a hit", pre[i]);
        snprintf(text, sizeof text, "#define P %d\n", 20 + i);
        put_file("hidden/inc/p.h", text, NULL, 0);
        cr_expect_eq(one_run(path, pre[i], NULL), 0, "%s: the pre-included file edited", pre[i]);
    }

    char two[1300];
    snprintf(two, sizeof two, "-I%s/hidden/a\n-I%s/hidden/b", src_dir, src_dir);
    put_file("hidden/a/n.h", "#include_next <n.h>\n", NULL, 0);
    put_file("hidden/b/n.h", "#define N 1\n", NULL, 0);
    put_file("hidden/next.cu", "#include <n.h>\nextern \"C\" __global__ void k(int *x) { x[0] = N; }\n",
             path, sizeof path);
    cr_expect_eq(one_run(path, two, NULL), 0);
    cr_expect_eq(one_run(path, two, NULL), 1);
    put_file("hidden/b/n.h", "#define N 2\n", NULL, 0);
    cr_expect_eq(one_run(path, two, NULL), 0, "a header reached by #include_next edited");
}

/* A header NVRTC would open that is a FIFO (named by an #include, a --pre-include or found by a
 * macro include's folder scan) is the kernel's error, named: NVRTC never waits on it. */
Test(compile, a_fifo_header_is_refused_not_waited_on, .timeout = 60)
{
    char path[512], fifo[512], opts[700];
    put_file("fifo/ok.h", "#define OK 1\n", NULL, 0);
    snprintf(fifo, sizeof fifo, "%s/fifo/pipe.h", src_dir);
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    const char *sources[] = {
        "#include \"pipe.h\"\nextern \"C\" __global__ void k(int *x) { x[0] = 1; }\n",
        "#define H \"ok.h\"\n#include H\nextern \"C\" __global__ void k(int *x) { x[0] = OK; }\n",
        "extern \"C\" __global__ void k(int *x) { x[0] = 1; }\n"};
    const char *options[] = {"", "", "--pre-include=pipe.h"};
    for (int i = 0; i < 3; i++) {
        put_file("fifo/k.cu", sources[i], path, sizeof path);
        snprintf(opts, sizeof opts, "%s", options[i]);
        compile_job j = abs_job(path, "k", opts);
        run_jobs(&j, 1);
        cr_expect_eq(j.status, TUNE_ERR_IO, "%d: %s", i, j.log ? j.log : "");
        cr_expect(j.log && strstr(j.log, "pipe.h, is not a regular file (a FIFO)"), "%d: %s", i,
                  j.log ? j.log : "");
        compile_job_clear(&j);
    }
}

/* The options without their macro definitions: what decides the files a job reads. */
Test(compile, options_files_drop_macro_definitions_only)
{
    static const char *const cases[][2] = {
        {"-DA=1\n-Ifoo\n-DB=2", "-Ifoo"},
        {" -DA=1 \n--define-macro=X\n--pre-include=h.cuh", "--pre-include=h.cuh"},
        {"-I\n-DX", "-I\n-DX"},      /* a bare -I takes the next line: a folder named -DX */
        {"-D\nA=1\n-DB", "-D\nA=1"}, /* a bare -D keeps its argument */
        {"-use_fast_math\n\n-DT=4", "-use_fast_math"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[1024];
        cr_expect_str_eq(compile_options_files(cases[i][0], out, sizeof out), cases[i][1],
                         "case %zu", i);
    }
}

/* The options of a searched compile-only run with rows into dir. */
static void searched_options(run_options *opt, const char *dir, const char *search,
                             const char *budget)
{
    run_options_init(opt);
    opt->compile_only = opt->compile_rows = 1;
    opt->quiet = 1;
    opt->arch = 90;
    opt->cache_dir = cache_dir;
    opt->kernels_dir = kernels_dir;
    opt->out_dir = dir;
    opt->search = search;
    opt->budget = budget;
}

/* A searched compile-only run, with rows, of tests/data/search/convolution_small.json (18 800
 * configurations in 4 shapes, each its own kernel, with the model's three-round rule): the
 * first round's configurations (seed) alone are planned and compiled; meta.json of dir. */
static json_t *compile_searched(const char *dir, const char *seed, run_summary *sum)
{
    tune_error err = {0};
    sweep *sw = sweep_load("tests/data/search/convolution_small.json", &err);
    cr_assert_not_null(sw, "%s: %s", err.where, err.message);
    run_options opt;
    searched_options(&opt, dir, "model", "4");
    opt.search_seed_set = 1;
    opt.search_seed = strtoull(seed, NULL, 10);
    cr_assert_eq(run_sweep(sw, &opt, sum, &err), TUNE_OK, "%s", err.message);
    sweep_free(sw);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    json_t *m = json_load_file(path, 0, NULL);
    cr_assert_not_null(m, "%s", path);
    return m;
}

static const char *meta_str(const json_t *m, const char *a, const char *b)
{
    const char *s = json_string_value(json_object_get(json_object_get(m, a), b));
    return s ? s : "";
}

static json_int_t search_kernels(const json_t *m, const char *what)
{
    return json_integer_value(
        json_object_get(json_object_get(json_object_get(m, "search"), "kernels"), what));
}

Test(compile, a_searched_sweep_compiles_at_most_its_budget)
{
    /* per configuration its kernel and its shape's reference; once, the input fill and the read
     * probe */
    char dir[2][300];
    json_t *m[2];
    run_summary sum[2];
    for (int i = 0; i < 2; i++) {
        snprintf(dir[i], sizeof dir[i], "%s/searched-%d", cache_dir, i);
        m[i] = compile_searched(dir[i], i ? "2" : "1", &sum[i]);
        cr_expect_eq(sum[i].n_configs, 18800, "the space: %zu configurations", sum[i].n_configs);
        cr_expect(sum[i].n_kernels >= 3 && sum[i].n_kernels <= 2 * 4 + 2,
                  "model, budget 4: %zu kernels compiled", sum[i].n_kernels);
        cr_expect_eq(sum[i].n_kernel_errors, 0, "%zu kernels failed", sum[i].n_kernel_errors);
        size_t rows = sum[i].n_compiled + sum[i].n_compile_error + sum[i].n_skipped;
        cr_expect(rows >= 1 && rows <= 4, "rows for the first round alone: %zu", rows);
        /* the space's kernels counted, not planned: one per configuration, 4 references, the
         * fill and the probe */
        cr_expect_eq(search_kernels(m[i], "space"), 18800 + 4 + 2);
        cr_expect_eq(search_kernels(m[i], "compiled"), (json_int_t)sum[i].n_kernels);
    }
    /* the key: of the sources, options and space, not of what a seed proposed */
    cr_expect_str_eq(meta_str(m[0], "key", "kernels_hash"), meta_str(m[1], "key", "kernels_hash"));
    cr_expect_str_neq(meta_str(m[0], "key", "search"), meta_str(m[1], "key", "search"));
    json_decref(m[0]);
    json_decref(m[1]);
}

/* `#pragma unroll NAME` with NAME a -D macro: the text NVRTC gets carries the value (a macro does
 * not expand inside a pragma); 0 removes the pragma; a comment after it stays; another macro
 * value, another name or another pragma are left as written. */
Test(compile, unroll_pragma_takes_the_macro_value)
{
    char *opts[] = {"-DTILE=8", "-D UNROLL=4", "-DOFF=0", "-DEXPR=(2*2)", NULL};
    char *text = strdup("#pragma unroll UNROLL\n"
                        "  #  pragma   unroll (UNROLL) // four\n"
                        "#pragma unroll OFF /* none */\n"
                        "#pragma unroll EXPR\n"
                        "#pragma unroll OTHER\n"
                        "#pragma unrolled UNROLL\n"
                        "#pragma unroll UNROLL + 1\n"
                        "int x = UNROLL;");
    cr_assert_not_null(text);
    cr_assert_eq(compile_unroll_rewrite(&text, opts, 4), TUNE_OK);
    cr_expect_str_eq(text, "#pragma unroll 4\n"
                           "  #  pragma   unroll 4 // four\n"
                           "/* none */\n"
                           "#pragma unroll EXPR\n"
                           "#pragma unroll OTHER\n"
                           "#pragma unrolled UNROLL\n"
                           "#pragma unroll UNROLL + 1\n"
                           "int x = UNROLL;");
    free(text);
}

static const char *const UNROLL_KERNEL =
    "extern \"C\" __global__ void unrolled(float *x, int n)\n"
    "{\n"
    "    float acc = 0.0f;\n"
    "#pragma unroll UNROLL\n"
    "    for (int i = 0; i < n; i++)\n"
    "        acc = acc * x[i] + 1.0f;\n"
    "    x[threadIdx.x] = acc;\n"
    "}\n";

/* NVRTC compiles each factor to other code (1: no unrolling; 8; 0: the compiler's choice), each
 * with its own cache entry; 0 without the warning NVRTC gives for `#pragma unroll 0` (its log
 * quotes the pragma's line). */
Test(compile, unroll_factor_from_a_macro_compiles)
{
    char path[512];
    put_file("unroll/unroll.cu", UNROLL_KERNEL, path, sizeof path);
    compile_job jobs[3] = {abs_job(path, "unrolled", "-DUNROLL=1"),
                           abs_job(path, "unrolled", "-DUNROLL=8"),
                           abs_job(path, "unrolled", "-DUNROLL=0")};
    run_jobs(jobs, 3);
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(jobs[i].status, TUNE_OK, "job %zu: %s", i, jobs[i].log);
        cr_expect(!jobs[i].log || !strstr(jobs[i].log, "UNROLL"), "job %zu: %s", i,
                  jobs[i].log);
    }
    cr_expect(jobs[0].cubin_size != jobs[1].cubin_size ||
                  memcmp(jobs[0].cubin, jobs[1].cubin, jobs[0].cubin_size) != 0,
              "UNROLL=1 and UNROLL=8 gave the same cubin");
    cr_expect_eq(cache_entries(), 3, "three keys: %zu cache entries", cache_entries());
    for (size_t i = 0; i < 3; i++)
        compile_job_clear(&jobs[i]);
}

/* A count is the run's budget in all: each shard of a random search measures its share (on the
 * 4-shape convolution space, 2 shards of 2 shapes: 6 of 12 each), not the whole count again. */
Test(compile, a_shard_measures_its_share_of_a_count_budget)
{
    size_t rows[2];
    for (size_t shard = 0; shard < 2; shard++) {
        tune_error err = {0};
        sweep *sw = sweep_load("tests/data/search/convolution_small.json", &err);
        cr_assert_not_null(sw, "%s: %s", err.where, err.message);
        run_options opt;
        char dir[300];
        snprintf(dir, sizeof dir, "%s/shard-%zu", cache_dir, shard);
        searched_options(&opt, dir, "random", "12");
        opt.shard_index = shard;
        opt.shard_count = 2;
        run_summary sum;
        cr_assert_eq(run_sweep(sw, &opt, &sum, &err), TUNE_OK, "%s", err.message);
        sweep_free(sw);
        rows[shard] = sum.n_compiled + sum.n_compile_error + sum.n_skipped;
    }
    cr_expect_eq(rows[0] + rows[1], 12, "shards measured %zu + %zu of a budget of 12", rows[0],
                 rows[1]);
    cr_expect(rows[0] >= 5 && rows[0] <= 7, "shard 0: %zu of 12", rows[0]);
}
