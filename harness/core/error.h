/* error.h - status codes and the caller-owned error record shared by every module.
 *
 *   tune_error err = {0};
 *   sweep *sw = sweep_load("sweeps/sparq.json", &err);
 *   if (!sw) { char buf[2048]; fprintf(stderr, "%s\n", tune_error_text(&err, buf, sizeof buf)); }
 *
 * Functions that can fail take an optional `tune_error *` (NULL allowed). The first error recorded
 * wins: later tune_error_set calls on a record that already holds an error change nothing.
 */
#ifndef TUNE_ERROR_H
#define TUNE_ERROR_H

#include <stddef.h>

typedef enum {
    TUNE_OK = 0,
    TUNE_ERR_IO,          /* a file cannot be read or written */
    TUNE_ERR_PARSE,       /* syntax error: JSON text or an expression */
    TUNE_ERR_INVALID,     /* well-formed input with a wrong key, type or value */
    TUNE_ERR_NOMEM,       /* host allocation failed */
    TUNE_ERR_NO_GPU,      /* no usable CUDA device or driver */
    TUNE_ERR_CUDA,        /* CUDA runtime error */
    TUNE_ERR_NVRTC,       /* NVRTC error (not a compile error of a kernel: that is a result) */
    TUNE_ERR_CUBLAS,      /* cuBLAS error */
    TUNE_ERR_OOM,         /* device out of memory */
    TUNE_ERR_UNSUPPORTED, /* a configuration the kernel or baseline cannot run */
    TUNE_ERR_EVAL         /* expression evaluation error (unknown name, division by zero, type) */
} tune_status;

/* Marks a function whose result the caller must use: a status to check, or a new object to keep
 * and release (as Jansson's JANSSON_ATTRS((warn_unused_result))). GCC warns even through a (void)
 * cast: where a status is ignored on purpose, pass it to tune_status_ignore and say why. */
#if defined(__GNUC__) || defined(__clang__)
#define TUNE_MUST_CHECK __attribute__((warn_unused_result))
#else
#define TUNE_MUST_CHECK
#endif

/* Drops a status that does not matter at the call (a best-effort step whose failure changes
 * nothing the caller reports); the call says why. */
static inline void tune_status_ignore(tune_status st) { (void)st; }

typedef struct {
    tune_status code;
    char where[512];    /* "file:line:col: $.json.path", "expr col 7", "gather_matmul.c:120" */
    char message[2048]; /* what was expected / what failed */
} tune_error;

/* Name of a status ("ok", "io", "parse", ...). Never NULL. */
const char *tune_status_str(tune_status s);

/* Records an error unless err is NULL or already holds one. Returns code, so that
 * `return tune_error_set(err, TUNE_ERR_INVALID, where, "...")` reads naturally. */
tune_status tune_error_set(tune_error *err, tune_status code, const char *where, const char *fmt,
                           ...) __attribute__((format(printf, 4, 5)));

void tune_error_clear(tune_error *err);

/* New NUL-terminated contents of a text file of at most INFILE_MAX_JSON bytes (its length in *size
 * when size is not NULL), or NULL with err set: core/infile.h's infile_read_text (a regular file:
 * a FIFO or a device is refused, never waited on). */
TUNE_MUST_CHECK char *tune_read_file(const char *path, size_t *size, tune_error *err);
/* A folder shipped with tune (name: "kernels_src", "data"): $<env>, else <exe dir>/../<name>,
 * <exe dir>/../../<name>, then the source tree's; never the working directory's (a folder of
 * that name where tune runs is not tune's). Writes into buf; returns buf or NULL when none
 * exists. */
const char *tune_find_dir(const char *env, const char *name, char *buf, size_t size);

/* "where: message" (or just the message when where is empty) into buf; returns buf. */
const char *tune_error_text(const tune_error *err, char *buf, size_t size);

#endif
