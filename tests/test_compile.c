/* NVRTC compilation (CPU only): every variant of every sweep in sweeps/ compiles for sm_90; the
 * cache answers a second run; keys change with the architecture; compile errors keep their log. */
#include <criterion/criterion.h>
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
    compile_options opt = {kernels_dir, cache_dir, 90, 0};
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
    compile_options opt = {kernels_dir, cache_dir, 90, 0};
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
    compile_options opt = {kernels_dir, NULL, 90, 0};
    tune_error err = {0};
    cr_expect_eq(compile_run(&j, 1, &opt, &err), TUNE_ERR_IO);
    cr_expect(strstr(err.where, "no_such_file.cu") != NULL, "where: %s", err.where);
}
