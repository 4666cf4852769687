/* compile.h - NVRTC compilation of kernel template instantiations, in parallel (OpenMP), with an
 * on-disk cache keyed by source text (headers included), name expression, options, NVRTC version
 * and architecture, so that a second run compiles nothing.
 *
 *   compile_job jobs[2] = {{.source = "gather_matmul.cu", .name = "gm_rows<half_t, 1, 64, 8, 256>"},
 *                          {.source = "common.cu", .name = "tune_fill_indices"}};
 *   compile_options opt = {.kernels_dir = dir, .cache_dir = "~/.cache/tune", .arch = 90};
 *   compile_run(jobs, 2, &opt, &err);
 *   if (jobs[0].status == TUNE_OK) use jobs[0].cubin, jobs[0].lowered
 *   compile_job_clear(&jobs[0]); ...
 *
 * A source is a file name under kernels_dir (the shipped kernels: device code only, whose
 * `#include "x.cuh"` lines name headers of that folder, handed to NVRTC by name), or an absolute
 * path (a kernel declared in a sweep file): its folder is an include folder (-I) of the job, and
 * NVRTC reads its headers itself. A job's options (one per line: -D macros, -I folders, other
 * NVRTC options) follow the harness's own (--gpu-architecture=sm_NN[a], -std=c++17, -lineinfo);
 * an option that sets the architecture is refused. The toolkit's include folder (and its cccl/
 * folder: cub, thrust, cuda/std, cuda/pipeline) is an include folder of every job, found with no
 * setting (compile_toolkit_include_dir).
 *
 * Cache key: the source text and name; the headers that its `#include "..."` and `#include <...>`
 * lines name, recursively, found beside the including file or in the source's folder or the
 * options' -I folders (a header in none of them is the toolkit's: the NVRTC version and the
 * toolkit folder's path stand for it); the options; the NVRTC version; the architecture; the name
 * expression. Editing any of those headers recompiles. A `#pragma unroll NAME` line of the source
 * whose NAME is a -D macro of the job with an integer value gets the value in NAME's place (0
 * removes the pragma: the compiler chooses), since macros do not expand inside a pragma; the key
 * hashes the text so rewritten.
 *
 * A kernel that fails to compile is not an error of compile_run: its job has status
 * TUNE_ERR_NVRTC and the log; an absolute-path source that cannot be read is the job's
 * TUNE_ERR_IO ("cannot read PATH: reason"), a refused option its TUNE_ERR_INVALID.
 */
#ifndef TUNE_COMPILE_H
#define TUNE_COMPILE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef struct {
    const char *kernels_dir; /* folder of the kernel sources */
    const char *cache_dir;   /* NULL: no cache */
    int arch;                /* compute capability x10: 90 -> sm_90 */
    int threads;             /* OpenMP threads; 0: the default; 1: no OpenMP region (a process
                                that forks a compiling child later must not have run one) */
    /* optional: called after each job (one call at a time) with the jobs finished so far and
     * how many of them came from the cache */
    void (*progress)(void *ctx, size_t done, size_t cached);
    void *progress_ctx;
    /* optional: called when job i is finished (compiled, failed or read from the cache), one
     * call at a time, before progress; with progress_ctx */
    void (*job_done)(void *ctx, size_t i);
} compile_options;

typedef struct {
    /* request */
    char source[1024]; /* a file name under kernels_dir, or an absolute path (a kernel declared in a
                          sweep file: its folder is an include folder of the job) */
    char name[256];
    /* extra NVRTC options, one per line ("-DTILE=16\n-I/opt/cutlass/include\n-use_fast_math"):
     * part of the cache key; "" for none */
    char options[1024];
    int arch_specific; /* 1: compile for sm_XXa (wgmma and other architecture-specific features) */
    /* result */
    tune_status status; /* TUNE_OK; TUNE_ERR_NVRTC: compile error (log); TUNE_ERR_IO: an absolute
                           source cannot be read; TUNE_ERR_INVALID: an option refused (log) */
    char *log;          /* new: NVRTC log (warnings too), or the reason; may be NULL */
    void *cubin;        /* new */
    size_t cubin_size;
    char *lowered; /* new: mangled name to look the kernel up in the cubin */
    int from_cache;
    double seconds; /* wall time of this job (0 for a cache hit) */
} compile_job;

/* Compiles every job (skipping none: deduplicate before). Fails as a whole only when a source
 * under the kernels folder (or one of its headers) cannot be read, NVRTC cannot start, or memory
 * runs out. */
TUNE_MUST_CHECK tune_status compile_run(compile_job *jobs, size_t n, const compile_options *opt,
                                        tune_error *err);
/* The cache keys of the jobs (what compile_run would look up: sources, headers, options, NVRTC
 * version, architecture, name expressions), folded into one FNV-1a hash in job order, without
 * compiling anything: the run key of a searched run, which compiles only what it measures. Fails
 * as compile_run does when a shipped source cannot be read or NVRTC cannot be loaded. */
TUNE_MUST_CHECK tune_status compile_hash_keys(const compile_job *jobs, size_t n,
                                              const compile_options *opt, uint64_t *hash,
                                              tune_error *err);
/* options (one per line, as compile_job.options) without their macro definitions ("-DNAME=1",
 * "--define-macro=NAME"): what the files a job reads depend on (its include folders and
 * --pre-include files), and so the part of its cache key beside the source's and headers' text
 * that no macro's value changes (the header scan reads every #include line, whatever #if says,
 * and one that names a macro makes it cover whole folders). A line that a bare "-I" or
 * "--pre-include" takes as its argument is kept. Into out (size bytes, truncated); returns out.
 * A searched run's key hashes the units of these (run/plan.c), not one per kernel. */
const char *compile_options_files(const char *options, char *out, size_t size);
/* Frees a job's results (not the job itself). */
void compile_job_clear(compile_job *job);

/* NVRTC version as major * 1000 + minor * 10 (e.g. 13000), 0 if unavailable. */
int compile_nvrtc_version(void);

/* tune_find_dir("TUNE_KERNELS_DIR", "kernels_src", ...) (core/error.h): the kernel sources. */
const char *compile_find_kernels_dir(char *buf, size_t size);
/* The CUDA toolkit's include folder, the first that holds cuda_fp16.h of: $CUDA_HOME/include,
 * $CUDA_PATH/include, the folders CMake found when tune was built, /usr/local/cuda/include. NULL
 * when none does (then only the job's own -I folders are searched). */
const char *compile_toolkit_include_dir(char *buf, size_t size);
/* Default cache folder: $TUNE_CACHE_DIR, else $XDG_CACHE_HOME/tune, else ~/.cache/tune. */
const char *compile_default_cache_dir(char *buf, size_t size);

#endif
