#include "device/gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

struct gpu_library {
    cudaLibrary_t lib;
};

static const char *no_gpu_sentence(cudaError_t rc)
{
    switch (rc) {
    case cudaErrorInsufficientDriver:
        return "no NVIDIA driver is loaded on this machine, so GPU commands cannot run "
               "(validate, compile and report work without one)";
    case cudaErrorNoDevice:
        return "no CUDA GPU is visible on this machine, so GPU commands cannot run "
               "(validate, compile and report work without one)";
    default:
        return NULL;
    }
}

tune_status gpu_fail(tune_error *err, int cuda_status, const char *call, const char *file, int line)
{
    cudaError_t rc = (cudaError_t)cuda_status;
    (void)cudaGetLastError();
    const char *sentence = no_gpu_sentence(rc);
    if (sentence)
        return tune_error_set(err, TUNE_ERR_NO_GPU, "", "%s", sentence);
    char where[256];
    snprintf(where, sizeof where, "%s:%d", file, line);
    tune_status st = rc == cudaErrorMemoryAllocation ? TUNE_ERR_OOM : TUNE_ERR_CUDA;
    return tune_error_set(err, st, where, "%s failed: %s (%s)", call, cudaGetErrorString(rc),
                          cudaGetErrorName(rc));
}

tune_status gpu_count(int *n, tune_error *err)
{
    tune_status st = TUNE_OK;
    *n = 0;
    GPU_CHECK(cudaGetDeviceCount(n), err, st, done);
    if (*n == 0)
        st = gpu_fail(err, cudaErrorNoDevice, "cudaGetDeviceCount", __FILE__, __LINE__);
done:
    return st;
}

static int attr(enum cudaDeviceAttr a, int dev)
{
    int v = 0;
    if (cudaDeviceGetAttribute(&v, a, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return v;
}

tune_status gpu_query(int ordinal, gpu_info *info, tune_error *err)
{
    tune_status st = TUNE_OK;
    int n;
    memset(info, 0, sizeof *info);
    if ((st = gpu_count(&n, err)) != TUNE_OK)
        return st;
    if (ordinal < 0 || ordinal >= n)
        return tune_error_set(err, TUNE_ERR_NO_GPU, "", "GPU %d does not exist (%d visible)",
                              ordinal, n);
    struct cudaDeviceProp p;
    GPU_CHECK(cudaGetDeviceProperties(&p, ordinal), err, st, done);
    info->ordinal = ordinal;
    snprintf(info->name, sizeof info->name, "%s", p.name);
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->sm_count = p.multiProcessorCount;
    info->l2_bytes = (size_t)p.l2CacheSize;
    info->global_mem = p.totalGlobalMem;
    info->mem_bus_bits = p.memoryBusWidth;
    const unsigned char *u = (const unsigned char *)p.uuid.bytes;
    snprintf(info->uuid, sizeof info->uuid,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
             u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
             u[15]);
    info->sm_clock_khz = attr(cudaDevAttrClockRate, ordinal);
    info->mem_clock_khz = attr(cudaDevAttrMemoryClockRate, ordinal);
    if (cudaDeviceGetPCIBusId(info->pci_bus_id, (int)sizeof info->pci_bus_id, ordinal) !=
        cudaSuccess)
        (void)cudaGetLastError();
    GPU_CHECK(cudaDriverGetVersion(&info->driver_version), err, st, done);
    GPU_CHECK(cudaRuntimeGetVersion(&info->runtime_version), err, st, done);
done:
    return st;
}

tune_status gpu_select(int ordinal, tune_error *err)
{
    tune_status st = TUNE_OK;
    GPU_CHECK(cudaSetDevice(ordinal), err, st, done);
    GPU_CHECK(cudaFree(NULL), err, st, done);
done:
    return st;
}

gpu_library *gpu_library_load(const void *cubin, tune_error *err)
{
    tune_status st = TUNE_OK;
    gpu_library *lib = calloc(1, sizeof *lib);
    if (!lib) {
        tune_error_set(err, TUNE_ERR_NOMEM, "gpu_library_load", "out of memory");
        return NULL;
    }
    GPU_CHECK(cudaLibraryLoadData(&lib->lib, cubin, NULL, NULL, 0, NULL, NULL, 0), err, st, fail);
    return lib;
fail:
    (void)st;
    free(lib);
    return NULL;
}

void *gpu_library_kernel(gpu_library *lib, const char *lowered, tune_error *err)
{
    tune_status st = TUNE_OK;
    cudaKernel_t k = NULL;
    GPU_CHECK(cudaLibraryGetKernel(&k, lib->lib, lowered), err, st, done);
done:
    (void)st;
    return (void *)k;
}

/* The kernels (and dynamic shared memory) whose shared-memory opt-in gpu_launch_dims settled
 * last: the timing loop launches one kernel, or a sequence of a few, many times. Forgotten when a
 * library is unloaded, so that a new kernel at a reused address is asked again. */
#define GPU_SMEM_READY 8
static _Thread_local struct {
    const void *kernel;
    size_t smem;
} gpu_smem_ready[GPU_SMEM_READY];
static _Thread_local unsigned gpu_smem_next; /* the entry the next kernel replaces */

static int gpu_smem_settled(const void *kernel, size_t smem)
{
    for (int i = 0; i < GPU_SMEM_READY; i++)
        if (gpu_smem_ready[i].kernel == kernel && gpu_smem_ready[i].smem == smem)
            return 1;
    return 0;
}

int gpu_library_global(gpu_library *lib, const char *name, void **ptr, size_t *bytes,
                       tune_error *err)
{
    cudaError_t rc = cudaLibraryGetGlobal(ptr, bytes, lib->lib, name);
    if (rc == cudaErrorSymbolNotFound || rc == cudaErrorInvalidSymbol) {
        (void)cudaGetLastError();
        return 0;
    }
    if (rc != cudaSuccess) {
        gpu_fail(err, (int)rc, "cudaLibraryGetGlobal", __FILE__, __LINE__);
        return -1;
    }
    return 1;
}

void gpu_library_free(gpu_library *lib)
{
    if (!lib)
        return;
    if (cudaLibraryUnload(lib->lib) != cudaSuccess)
        (void)cudaGetLastError();
    memset(gpu_smem_ready, 0, sizeof gpu_smem_ready);
    free(lib);
}

tune_status gpu_launch(void *kernel, unsigned grid, unsigned block, size_t smem, void *stream,
                       void **args, tune_error *err)
{
    tune_status st = TUNE_OK;
    dim3 g = {grid, 1, 1}, b = {block, 1, 1};
    GPU_CHECK(cudaLaunchKernel((const void *)kernel, g, b, args, smem, (cudaStream_t)stream), err,
              st, done);
    GPU_CHECK(cudaGetLastError(), err, st, done);
done:
    return st;
}

tune_status gpu_launch_grid(void *kernel, const unsigned grid[3], unsigned block, size_t smem,
                            void *stream, void **args, tune_error *err)
{
    const unsigned b[3] = {block, 1, 1};
    return gpu_launch_dims(kernel, grid, b, smem, stream, args, err);
}

tune_status gpu_launch_dims(void *kernel, const unsigned grid[3], const unsigned block[3],
                            size_t smem, void *stream, void **args, tune_error *err)
{
    tune_status st = TUNE_OK;
    dim3 g = {grid[0], grid[1], grid[2]}, b = {block[0], block[1], block[2]};
    /* Past 48 KiB of shared memory a block needs the opt-in, and the kernel's static shared
     * memory counts too: a kernel with 48 KiB of dynamic and 4 bytes of static shared memory is
     * refused without it (an "invalid argument" at launch). Asked once per kernel and size, not
     * at every launch of the timing loop (gpu_smem_ready). */
    if (smem > 0 && !gpu_smem_settled(kernel, smem)) {
        struct cudaFuncAttributes fa;
        GPU_CHECK(cudaFuncGetAttributes(&fa, (const void *)kernel), err, st, done);
        if (smem + fa.sharedSizeBytes > 48 * 1024)
            GPU_CHECK(cudaFuncSetAttribute((const void *)kernel,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                      err, st, done);
        for (int i = 0; i < GPU_SMEM_READY; i++) /* the attribute now holds this size only */
            if (gpu_smem_ready[i].kernel == kernel)
                gpu_smem_ready[i].kernel = NULL;
        gpu_smem_ready[gpu_smem_next].kernel = kernel;
        gpu_smem_ready[gpu_smem_next].smem = smem;
        gpu_smem_next = (gpu_smem_next + 1) % GPU_SMEM_READY;
    }
    GPU_CHECK(cudaLaunchKernel((const void *)kernel, g, b, args, smem, (cudaStream_t)stream), err,
              st, done);
    GPU_CHECK(cudaGetLastError(), err, st, done);
done:
    return st;
}

tune_status gpu_malloc(void **p, size_t bytes, tune_error *err)
{
    tune_status st = TUNE_OK;
    *p = NULL;
    GPU_CHECK(cudaMalloc(p, bytes ? bytes : 1), err, st, done);
done:
    return st;
}

void gpu_free(void *p)
{
    if (p && cudaFree(p) != cudaSuccess)
        (void)cudaGetLastError();
}

int gpu_context_broken(void)
{
    (void)cudaGetLastError();
    cudaError_t rc = cudaDeviceSynchronize();
    (void)cudaGetLastError();
    return rc != cudaSuccess;
}

const char *gpu_cublas_version(char *buf, size_t size)
{
    int major = 0, minor = 0, patch = 0;
    cublasGetProperty(MAJOR_VERSION, &major);
    cublasGetProperty(MINOR_VERSION, &minor);
    cublasGetProperty(PATCH_LEVEL, &patch);
    snprintf(buf, size, "%d.%d.%d", major, minor, patch);
    return buf;
}
