/* fault.c - the fault_test family: y = 2 x with an injected fault per configuration (out-of-bounds
 * write, trap, hang, compile error, wrong answer, misaligned access), so that a sweep can mix
 * faults with good configurations and check that every fault is recorded with its kind while the
 * good ones are measured (kernels_src/testing/faults.cu; sweeps/testing/faults.json). */
#include "model/family.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "device/gpu.h"

static const char *const fault_names[] = {"none",          "oob_write",    "trap",       "hang",
                                          "compile_error", "wrong_answer", "misaligned", NULL};

extern const tune_family fault_test_family;

static const family_axis fault_axes[] = {
    {"n", FAMILY_AXIS_INT, 1, 1LL << 32, NULL, "1048576", "elements of x and y (float32)"},
};

static const family_op fault_ops[] = {
    {"scale", fault_axes, 1, "8 * n", "n", "y = 2 x"},
};

static const family_axis fault_params[] = {
    {"fault", FAMILY_AXIS_STR, 0, 0, fault_names, "\"none\"", "the injected fault"},
    {"block", FAMILY_AXIS_INT, 32, 1024, NULL, "256", "threads per block"},
};

static const family_method fault_methods[] = {
    {"custom", 1, "the fault-injection kernel", FAMILY_ROLE_TUNED},
};

static int fault_index(const tune_point *cfg)
{
    const char *f = point_str(cfg, "fault", "none");
    for (int i = 0; fault_names[i]; i++)
        if (strcmp(fault_names[i], f) == 0)
            return i;
    return -1;
}

static int fault_kernels(const tune_family *fam, const tune_point *cfg, family_kernel_ref *refs,
                size_t max, char *why, size_t why_size)
{
    (void)fam;
    int f = fault_index(cfg);
    if (f < 0 || max < 2)
        return family_fail(why, why_size, "unknown fault '%s'", point_str(cfg, "fault", "?"));
    refs[0].source = "testing/faults.cu";
    refs[0].row = 1;
    snprintf(refs[0].name, sizeof refs[0].name, "fault_scale<%d>", f);
    refs[1].source = "common.cu";
    snprintf(refs[1].name, sizeof refs[1].name, "tune_fill_uniform<float>");
    return 2;
}

typedef struct {
    family_env env;
    unsigned long long n;
    float *x, *y;
    void *kernel;
    unsigned block;
} fault_state;

static void fault_shape_free(void *state)
{
    fault_state *s = state;
    if (!s)
        return;
    gpu_free(s->x);
    gpu_free(s->y);
    free(s);
}

static void *fault_shape_init(const family_env *env, const tune_point *shape, tune_error *err)
{
    fault_state *s = calloc(1, sizeof *s);
    if (!s) {
        tune_error_set(err, TUNE_ERR_NOMEM, "fault_test", "out of memory");
        return NULL;
    }
    s->env = *env;
    s->n = (unsigned long long)point_int(shape, "n", 1 << 20);
    /* the fill kernel is second in every configuration's list (fault_kernels) */
    void *fill = family_kernel_at(&fault_test_family, env, shape, 1, err);
    unsigned long long seed = env->seed;
    if (!fill)
        goto fail;
    if (gpu_malloc((void **)&s->x, s->n * sizeof(float), err) != TUNE_OK ||
        gpu_malloc((void **)&s->y, s->n * sizeof(float), err) != TUNE_OK)
        goto fail;
    void *args[] = {&s->x, &s->n, &seed};
    if (gpu_launch(fill, 1024, 256, 0, env->stream, args, err) != TUNE_OK)
        goto fail;
    return s;
fail:
    fault_shape_free(s);
    return NULL;
}

static tune_status fault_prepare(void *state, const tune_point *cfg, tune_error *err)
{
    fault_state *s = state;
    s->block = (unsigned)point_int(cfg, "block", 256);
    s->kernel = family_kernel_at(&fault_test_family, &s->env, cfg, 0, err);
    return s->kernel ? TUNE_OK : err ? err->code : TUNE_ERR_CUDA;
}

static tune_status fault_launch(void *state, tune_error *err)
{
    fault_state *s = state;
    void *args[] = {&s->x, &s->y, &s->n};
    return gpu_launch(s->kernel, (unsigned)((s->n + s->block - 1) / s->block), s->block, 0,
                      s->env.stream, args, err);
}

static tune_status fault_check(void *state, double *error, double *tolerance, tune_error *err)
{
    fault_state *s = state;
    tune_status st = TUNE_OK;
    float *hx = malloc(s->n * sizeof(float)), *hy = malloc(s->n * sizeof(float));
    *tolerance = 1e-6;
    *error = NAN;
    if (!hx || !hy) {
        st = tune_error_set(err, TUNE_ERR_NOMEM, "fault_check", "out of host memory");
        goto done;
    }
    GPU_CHECK(cudaMemsetAsync(s->y, 0xff, s->n * sizeof(float), (cudaStream_t)s->env.stream), err,
              st, done);
    if ((st = fault_launch(s, err)) != TUNE_OK)
        goto done;
    GPU_CHECK(cudaMemcpyAsync(hx, s->x, s->n * sizeof(float), cudaMemcpyDeviceToHost,
                              (cudaStream_t)s->env.stream),
              err, st, done);
    GPU_CHECK(cudaMemcpyAsync(hy, s->y, s->n * sizeof(float), cudaMemcpyDeviceToHost,
                              (cudaStream_t)s->env.stream),
              err, st, done);
    GPU_CHECK(cudaStreamSynchronize((cudaStream_t)s->env.stream), err, st, done);
    double num = 0, den = 0;
    for (unsigned long long i = 0; i < s->n; i++) {
        double r = 2.0 * hx[i], d = hy[i] - r;
        num += isfinite(d) ? d * d : INFINITY;
        den += r * r;
    }
    *error = sqrt(num / den);
done:
    free(hx);
    free(hy);
    return st;
}

const tune_family fault_test_family = {
    .name = "fault_test",
    .help = "fault injection: y = 2 x with an injected fault (testing crash isolation)",
    .ops = fault_ops,
    .n_ops = 1,
    .params = fault_params,
    .n_params = sizeof fault_params / sizeof fault_params[0],
    .methods = fault_methods,
    .n_methods = 1,
    .kernels = fault_kernels,
    .shape_init = fault_shape_init,
    .shape_free = fault_shape_free,
    .prepare = fault_prepare,
    .launch = fault_launch,
    .check = fault_check,
};
