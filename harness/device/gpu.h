/* gpu.h - the CUDA runtime behind one checking macro: device discovery, kernels loaded from NVRTC
 * cubins, launches, memory.
 *
 *   gpu_info info;
 *   if (gpu_query(0, &info, &err) != TUNE_OK) { puts(err.message); }  // one sentence without a GPU
 *   gpu_library *lib = gpu_library_load(cubin, &err);
 *   void *kernel = gpu_library_kernel(lib, lowered_name, &err);
 *   gpu_launch(kernel, grid, block, 0, stream, args, &err);
 *
 * The runtime is linked statically and loads the driver itself, so binaries start on a machine
 * without a driver; every call then fails with TUNE_ERR_NO_GPU.
 */
#ifndef TUNE_GPU_H
#define TUNE_GPU_H

#include <stddef.h>

#include "core/error.h"
#include "core/gpu_info.h"

/* Number of devices; TUNE_ERR_NO_GPU with one sentence when there is none or no driver. */
TUNE_MUST_CHECK tune_status gpu_count(int *n, tune_error *err);
TUNE_MUST_CHECK tune_status gpu_query(int ordinal, gpu_info *info, tune_error *err);
/* Sets the current device and creates its context. */
TUNE_MUST_CHECK tune_status gpu_select(int ordinal, tune_error *err);

typedef struct gpu_library gpu_library;
/* New library from a cubin image (copied by the runtime). */
TUNE_MUST_CHECK gpu_library *gpu_library_load(const void *cubin, tune_error *err);
/* Borrowed kernel handle (a cudaKernel_t) for a lowered name. */
void *gpu_library_kernel(gpu_library *lib, const char *lowered, tune_error *err);
void gpu_library_free(gpu_library *lib);
/* The device address and size of the module-scope symbol name (a __constant__ or __device__
 * variable) of lib: 1, or 0 when lib has none of that name, or -1 with err. */
int gpu_library_global(gpu_library *lib, const char *name, void **ptr, size_t *bytes,
                       tune_error *err);

/* Launches kernel with a 1-D grid; checks the launch. */
TUNE_MUST_CHECK tune_status gpu_launch(void *kernel, unsigned grid, unsigned block, size_t smem,
                                       void *stream, void **args, tune_error *err);

/* Launches kernel with a 3-D grid; dynamic shared memory above the 48 KiB default is opted into
 * (cudaFuncAttributeMaxDynamicSharedMemorySize) first. */
TUNE_MUST_CHECK tune_status gpu_launch_grid(void *kernel, const unsigned grid[3], unsigned block,
                                            size_t smem, void *stream, void **args,
                                            tune_error *err);
/* A launch with a three-dimensional grid and block. */
TUNE_MUST_CHECK tune_status gpu_launch_dims(void *kernel, const unsigned grid[3],
                                            const unsigned block[3], size_t smem, void *stream,
                                            void **args, tune_error *err);
/* 1 when the process's CUDA context is broken by a sticky error (illegal address, trap, ...):
 * nothing more can run in this process. Clears non-sticky errors. */
int gpu_context_broken(void);

/* "13.0.2": the cuBLAS library's version (no handle needed). Returns buf. */
const char *gpu_cublas_version(char *buf, size_t size);

/* cudaMalloc; TUNE_ERR_OOM when it does not fit. */
TUNE_MUST_CHECK tune_status gpu_malloc(void **p, size_t bytes, tune_error *err);
void gpu_free(void *p);

/* Records a CUDA runtime failure (text of the call, file:line, the runtime's message) and clears
 * the runtime's last error. Returns the status (TUNE_ERR_OOM for memory allocation failures). */
tune_status gpu_fail(tune_error *err, int cuda_status, const char *call, const char *file, int line);

/* Evaluates a cudaError_t expression; on failure records it and jumps to label. */
#define GPU_CHECK(call, err, st, label)                                                            \
    do {                                                                                           \
        int gpu_check_rc_ = (int)(call);                                                           \
        if (gpu_check_rc_ != 0) {                                                                  \
            (st) = gpu_fail((err), gpu_check_rc_, #call, __FILE__, __LINE__);                      \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

#endif
