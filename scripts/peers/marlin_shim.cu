/* marlin_shim.cu - tune's fixed C entry point into Marlin (IST-DASLab/marlin), the fp16 x int4
 * GEMM that the mixed_gemm family measures as its baseline `marlin` (docs/mixed_gemm.md,
 * "Baselines"). scripts/peers/marlin.sh compiles this file beside Marlin's own
 * marlin/marlin_cuda_kernel.cu into one shared library; the family loads it when TUNE_MARLIN_LIB
 * names it and resolves the one symbol below. Marlin's code is not part of tune.
 *
 * The ABI (version 1, in the symbol's name; harness/families/mixed_gemm_marlin.c calls it):
 *   int tune_marlin_mul_v1(x, w, y, s, m, n, k, workspace, groupsize, device, stream, sms, max_par)
 * x: m x k fp16 row-major; w: the weight in Marlin's format (k / 16 rows of 2 n words); y: m x n
 * fp16 row-major; s: the scales in Marlin's order ((k / groupsize) x n fp16); workspace: n / 128 *
 * max_par ints, zero before the first call (Marlin leaves them zero); groupsize: 128, or -1 for
 * one group per column; stream: a cudaStream_t of the caller's. Returns 0 once the work is
 * enqueued on the stream; Marlin's own refusal (1: the shape does not fit its tiles, 2: no kernel
 * for the tiles and group); or -e for the CUDA error e that selecting the device or the launch
 * raised (cudaError_t values, which tune's runtime names). Marlin chooses its tiles by m, except
 * where its compiler is known to get one kernel wrong (below).
 */
#include <cuda_runtime.h>

/* Marlin's host function (marlin/marlin_cuda_kernel.cu), declared as it is defined there; thread_k
 * and thread_n -1 let it choose its tiles by m, as its Python front end does. */
int marlin_cuda(const void *A, const void *B, void *C, void *s, int prob_m, int prob_n, int prob_k,
                void *workspace, int groupsize, int dev, cudaStream_t stream, int thread_k,
                int thread_n, int sms, int max_par);

/* Marlin's tiles for m <= 16 with groups of 128 are 128 x 128 (its kernel Marlin<256, 1, 8, 8, 4,
 * 8>), whose sm_90 machine code ptxas 13 gets wrong: the kernel's weight copies
 * (cp.async.cg.shared.global.L2::cache_hint) read as their L2 cache policy a uniform register
 * that no instruction writes, and the GPU stops it with an illegal instruction
 * (https://github.com/IST-DASLab/marlin/issues/44 for ptxas 13.1; seen with 13.0 too). Its sm_80
 * code and its other kernels are right. Built with TUNE_MARLIN_SM90_SMALL_TILES (marlin.sh sets it
 * for nvcc 13 and later), the shim asks Marlin on a device of compute capability 9 for its other
 * small-batch tiles there, 64 x 256 (Marlin<256, 1, 16, 4, 4, 8>, which Marlin's own test.py runs at
 * m <= 16 too); elsewhere Marlin chooses, as its Python front end lets it. */
#ifndef TUNE_MARLIN_SM90_SMALL_TILES
#define TUNE_MARLIN_SM90_SMALL_TILES 0
#endif

extern "C" __attribute__((visibility("default"))) int
tune_marlin_mul_v1(const void *x, const void *w, void *y, const void *s, int m, int n, int k,
                   void *workspace, int groupsize, int device, void *stream, int sms, int max_par)
{
    /* this library has a CUDA runtime of its own (nvcc links it statically): bind it to the
     * caller's device, whose primary context the caller's runtime uses too */
    cudaError_t e = cudaSetDevice(device);
    if (e != cudaSuccess)
        return -(int)e;
    int thread_k = -1, thread_n = -1;
    if (TUNE_MARLIN_SM90_SMALL_TILES && m <= 16 && groupsize != -1) {
        /* the device's major compute capability, asked once per device (tune's ordinals are
         * 0 to 1023, and cudaSetDevice above took this one), not on every launch */
        static int major[1024];
        if (device < 0 || device >= 1024)
            return -(int)cudaErrorInvalidDevice;
        if (!major[device] &&
            (e = cudaDeviceGetAttribute(&major[device], cudaDevAttrComputeCapabilityMajor,
                                        device)) != cudaSuccess)
            return -(int)e;
        if (major[device] == 9)
            thread_k = 64, thread_n = 256;
    }
    int rc = marlin_cuda(x, w, y, const_cast<void *>(s), m, n, k, workspace, groupsize, device,
                         static_cast<cudaStream_t>(stream), thread_k, thread_n, sms, max_par);
    e = cudaGetLastError(); /* a launch that failed (Marlin does not look) */
    return e != cudaSuccess ? -(int)e : rc;
}
