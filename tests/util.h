/* util.h - helpers shared by the Criterion test files that use the device layer (header-only:
 * each test file is its own executable); the CPU-only ones are in util_cpu.h, included here. */
#ifndef TUNE_TESTS_UTIL_H
#define TUNE_TESTS_UTIL_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "device/compile.h"
#include "model/family.h"
#include "model/sweep.h"
#include "device/gpu.h"
#include "store/results.h"
#include "util_cpu.h"

/* The sweep at path, or the test fails with the error. */
static inline sweep *test_load_sweep(const char *path)
{
    tune_error err = {0};
    char buf[4096];
    sweep *sw = sweep_load(path, &err);
    cr_assert_not_null(sw, "%s", tune_error_text(&err, buf, sizeof buf));
    return sw;
}

static inline int test_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted identities of the rows of dir/raw.jsonl, one per line (new), and their number: two
 * runs that measured the same configurations give the same text. */
static inline char *test_row_identities(const char *dir, size_t *n)
{
    char path[600], id[4096];
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    results_rows rows;
    tune_error err = {0};
    cr_assert_eq(results_read(path, &rows, &err), TUNE_OK, "%s", err.message);
    *n = rows.n;
    char **ids = calloc(*n + 1, sizeof *ids);
    size_t len = 1;
    for (size_t i = 0; i < *n; i++) {
        ids[i] = strdup(results_row_identity(&rows.rows[i], id, sizeof id));
        len += strlen(ids[i]) + 1;
    }
    qsort(ids, *n, sizeof *ids, test_cmp_str);
    char *all = calloc(len, 1);
    for (size_t i = 0; i < *n; i++) {
        strcat(strcat(all, ids[i]), "\n");
        free(ids[i]);
    }
    free(ids);
    results_rows_free(&rows);
    return all;
}

/* Skips the calling test, with the reason, when no GPU is usable; else selects GPU 0. */
static inline void require_gpu(void)
{
    static char reason[2048];
    tune_error err = {0};
    int n = 0;
    if (gpu_count(&n, &err) != TUNE_OK) {
        snprintf(reason, sizeof reason, "%s", err.message);
        cr_skip_test("skipped: %s", reason);
    }
    cr_assert_eq(gpu_select(0, &err), TUNE_OK, "%s", err.message);
}

/* require_gpu without initialising CUDA in this process: the run forks its workers, and a child
 * of a process that has initialised CUDA cannot use the GPU. The probe runs in a child. */
static inline void require_gpu_in_child(void)
{
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        tune_error err = {0};
        int n = 0;
        close(fd[0]);
        if (gpu_count(&n, &err) != TUNE_OK || n == 0) {
            ssize_t w = write(fd[1], err.message, strlen(err.message));
            _exit(w < 0 ? 2 : 1);
        }
        _exit(0);
    }
    close(fd[1]);
    static char reason[2048];
    ssize_t r = read(fd[0], reason, sizeof reason - 1);
    reason[r > 0 ? r : 0] = '\0';
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        cr_skip_test("skipped: %s", reason[0] ? reason : "no usable GPU");
}

/* A family_env.kernel for the GPU tests: compiles (source, name) with NVRTC for the current
 * device on first use (cached in /tmp/tune-test-cache) and returns the loaded kernel. */
typedef struct {
    compile_job job;
    gpu_library *lib;
    void *kernel;
} test_kernel;

static test_kernel test_kernels[1024];
static size_t test_n_kernels;

static inline void *test_get_kernel_ref(void *ctx, const family_kernel_ref *ref)
{
    (void)ctx;
    const char *source = ref->source, *name = ref->name;
    for (size_t i = 0; i < test_n_kernels; i++)
        if (strcmp(test_kernels[i].job.source, source) == 0 &&
            strcmp(test_kernels[i].job.name, name) == 0 &&
            strcmp(test_kernels[i].job.options, ref->options) == 0)
            return test_kernels[i].kernel;
    cr_assert_lt(test_n_kernels, sizeof test_kernels / sizeof test_kernels[0]);
    test_kernel *t = &test_kernels[test_n_kernels++];
    memset(t, 0, sizeof *t);
    snprintf(t->job.source, sizeof t->job.source, "%s", source);
    snprintf(t->job.name, sizeof t->job.name, "%s", name);
    snprintf(t->job.options, sizeof t->job.options, "%s", ref->options);
    char kdir[4096];
    cr_assert_not_null(compile_find_kernels_dir(kdir, sizeof kdir));
    int major = 9, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
    compile_options opt = {.kernels_dir = kdir, .cache_dir = "/tmp/tune-test-cache",
                           .arch = major * 10 + minor};
    /* on sm_90 everything is compiled for sm_90a, which the wgmma kernels need */
    t->job.arch_specific = major * 10 + minor == 90;
    tune_error err = {0};
    cr_assert_eq(compile_run(&t->job, 1, &opt, &err), TUNE_OK, "%s", err.message);
    cr_assert_eq(t->job.status, TUNE_OK, "%s failed to compile: %s", name, t->job.log);
    t->lib = gpu_library_load(t->job.cubin, &err);
    cr_assert_not_null(t->lib, "%s", err.message);
    t->kernel = gpu_library_kernel(t->lib, t->job.lowered, &err);
    cr_assert_not_null(t->kernel, "%s", err.message);
    return t->kernel;
}

/* test_get_kernel_ref for a shipped kernel without options. */
static inline void *test_get_kernel(void *ctx, const char *source, const char *name)
{
    family_kernel_ref ref;
    memset(&ref, 0, sizeof ref);
    ref.source = source;
    snprintf(ref.name, sizeof ref.name, "%s", name);
    return test_get_kernel_ref(ctx, &ref);
}

/* A family_env on a new stream and cuBLAS handle (kernels through test_get_kernel); undone by
 * test_family_env_free. */
typedef struct {
    family_env env;
    cudaStream_t stream;
    cublasHandle_t cublas;
} test_family_env;

static inline void test_family_env_init(test_family_env *t)
{
    cr_assert_eq(cudaStreamCreate(&t->stream), cudaSuccess);
    cr_assert_eq(cublasCreate(&t->cublas), CUBLAS_STATUS_SUCCESS);
    cublasSetStream(t->cublas, t->stream);
    family_env env = {0, t->stream, t->cublas, 50u << 20, 42, test_get_kernel_ref, NULL, NULL,
                      NULL};
    t->env = env;
}

static inline void test_family_env_free(test_family_env *t)
{
    cublasDestroy(t->cublas);
    cudaStreamDestroy(t->stream);
}

#endif
