/* infile.h - reading an untrusted input file whole: a regular file of bounded size.
 *
 *   char *text; size_t len;
 *   if (infile_read("run/meta.json", INFILE_MAX_META, &text, &len, &err) != TUNE_OK) ...
 *   ... text[len] == '\0' ...
 *   free(text);
 *
 * The file is opened with O_NONBLOCK (a FIFO or a device never blocks the open), checked with
 * fstat to be a regular file (a FIFO, a directory, /dev/zero are refused before any read) of at
 * most max_bytes, then read whole; a file that grows past max_bytes while being read is refused
 * too. Errors (where = the path): TUNE_ERR_IO "cannot open: <strerror>", "not a regular file
 * (<kind>)", "cannot read: <strerror>"; TUNE_ERR_INVALID "too large: N bytes, at most M";
 * TUNE_ERR_NOMEM.
 */
#ifndef TUNE_INFILE_H
#define TUNE_INFILE_H

#include <stddef.h>
#include <stdio.h>

#include "core/error.h"

/* Bounds of the inputs tune reads (bytes). */
#define INFILE_MAX_JSON ((size_t)64 << 20)   /* meta.json, sweeps, specs, calibrations */
#define INFILE_MAX_ROWS ((size_t)4 << 30)    /* raw.jsonl, retime.jsonl */

/* What path is when it exists and is neither a regular file nor a directory ("a FIFO", "a
 * character device", "a socket", ...: something an open could wait on), following links; NULL
 * otherwise (static strings). */
const char *infile_special(const char *path);
/* 1 when path names a directory (infile_is_dir) or a regular file (infile_is_file), following
 * links; 0 otherwise. */
int infile_is_dir(const char *path);
int infile_is_file(const char *path);

/* New NUL-terminated contents of path into *data (free() it) and its length into *len (len may
 * be NULL); on failure *data is NULL and err is set. */
TUNE_MUST_CHECK tune_status infile_read(const char *path, size_t max_bytes, char **data,
                                        size_t *len, tune_error *err);

/* infile_read for a text file (JSON, a kernel source): a NUL byte in it, which every reader of C
 * strings would take for the end and drop the rest after, is an error at "PATH:LINE:COL" ("a NUL
 * byte: a text file holds none"). */
TUNE_MUST_CHECK tune_status infile_read_text(const char *path, size_t max_bytes, char **data,
                                             size_t *len, tune_error *err);

/* An open stream on path for line-by-line reading, after the same checks (regular file, at most
 * max_bytes); the caller fclose()s it. NULL with err set on failure. */
FILE *infile_open(const char *path, size_t max_bytes, tune_error *err);
/* The same as a descriptor (for a reader of its own, such as zlib's); the caller close()s it. -1
 * with err set on failure. */
int infile_open_fd(const char *path, size_t max_bytes, tune_error *err);

#endif
