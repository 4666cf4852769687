/* compile_src.h - private to compile.c: what one distinct (source, options) pair of a compile_run
 * hands NVRTC and the part of the cache key it makes.
 *
 * A shipped source (a file name under kernels_dir) is read with the `#include "x.cuh"` headers of
 * that folder, which are handed to NVRTC by name. An absolute-path source is read alone; its
 * folder becomes an include folder and NVRTC reads its headers itself. Either way the key covers
 * the text of every header that an `#include "..."` or `#include <...>` line (recursively) names
 * and that is found in the source's folder or in an include folder of the job's options, every
 * same-named header an #include_next can reach, and the --pre-include files of the options; an
 * #include through a macro makes it cover every file of those folders (bounded: past the bound
 * the unit is refused). The toolkit's headers are covered by the NVRTC version and the toolkit
 * folder's path.
 */
#ifndef TUNE_COMPILE_SRC_H
#define TUNE_COMPILE_SRC_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/hash.h"

#define COMPILE_MAX_HEADERS 8
/* kernel sources and headers are regular files of at most this many bytes */
#define COMPILE_MAX_SOURCE ((size_t)16 << 20)

/* What every job of a run shares: read before the units are loaded. */
typedef struct {
    const char *kernels_dir;
    const char *const *base_opts; /* the harness's own (architecture first) */
    size_t n_base;
    char toolkit[2][PATH_MAX + 16]; /* -I options of the toolkit's include folders; "" where absent */
    int nvrtc_version;
} compile_env;

/* One distinct (source, options) pair of the jobs. */
typedef struct {
    const char *source, *options; /* the first job's that names them (borrowed) */
    char *text;
    size_t n_headers; /* shipped sources: the headers handed to NVRTC by name */
    char *header_names[COMPILE_MAX_HEADERS];
    char *header_texts[COMPILE_MAX_HEADERS];
    char **opts; /* NVRTC options after the harness's own: include folders, the job's options */
    size_t n_opts;
    char *inc_dirs; /* the folders searched for headers, one per line (the key's scan) */
    hash128 tree;   /* the scanned headers' hash (shared by units with the same source and dirs) */
    hash128 key;    /* everything but the name expression and the arch-specific suffix */
    tune_status status; /* TUNE_OK, or the jobs' status: TUNE_ERR_IO, TUNE_ERR_INVALID */
    char *reason;       /* the jobs' log when status is not TUNE_OK */
} compile_unit;

/* Fills env's toolkit include options; see compile_toolkit_include_dir (compile.h). */
void compile_env_toolkit(compile_env *env);
/* Loads u (source and options set) and computes its key; prev are the units loaded before it (a
 * unit with the same source and include folders lends its header hash). A source that cannot be
 * read or a refused option is the unit's status; the run fails (err set) only when a shipped
 * source or its headers cannot be read, or on no memory. */
TUNE_MUST_CHECK tune_status compile_unit_load(compile_unit *u, const compile_unit *prev,
                                              size_t n_prev, const compile_env *env,
                                              tune_error *err);
void compile_unit_free(compile_unit *u);
/* `#pragma unroll NAME` lines of *text whose NAME is a macro that opts (the unit's options)
 * define as a decimal integer: NAME replaced by the value, or the pragma removed for 0 (NVRTC does
 * not expand macros inside a pragma). *text is replaced when a line changes (the old one freed);
 * TUNE_ERR_NOMEM leaves it as it was. */
TUNE_MUST_CHECK tune_status compile_unroll_rewrite(char **text, char *const *opts, size_t n_opts);

#endif
