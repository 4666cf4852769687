/* NVRTC compilation (CPU only): every variant of every sweep in sweeps/ compiles for sm_90; the
 * cache answers a second run; keys change with the architecture; compile errors keep their log. */
#include <criterion/criterion.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/compile.h"
#include "run/run.h"
#include "model/sweep.h"

static char cache_dir[256];
static char kernels_dir[4096];

static void setup(void)
{
    snprintf(cache_dir, sizeof cache_dir, "/tmp/tune-test-compile-%d", (int)getpid());
    cr_assert_not_null(compile_find_kernels_dir(kernels_dir, sizeof kernels_dir));
}

static void teardown(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
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
