/* outfile.h - every file tune writes, written atomically: a temporary file in the same folder,
 * flushed and fsync'd, then renamed over the target. Readers see the old file or the new one,
 * never a partial one; a failed write (full disk, size limit, read-only folder) leaves the old
 * file in place and an error naming the file written and why (strerror).
 *
 *   outfile *o = outfile_open("run/best.md", &err);
 *   if (!o) return err.code;
 *   fprintf(outfile_stream(o), "# Best\n");
 *   return outfile_commit(o, &err);   // or outfile_abort(o) to drop it
 *
 *   outfile_write_json("run/meta.json", meta, JSON_INDENT(2), &err);
 *
 * Appended files (raw.jsonl rows) are not written through here: they grow by whole lines.
 *
 * From outfile_open to the commit or abort the thread is inside interrupt_enter (interrupt.h):
 * SIGTERM or SIGINT stops tune only once the file is renamed or removed.
 */
#ifndef TUNE_OUTFILE_H
#define TUNE_OUTFILE_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "core/error.h"
#include "core/expr.h"

typedef struct outfile outfile;

/* A new temporary file "<path>.tmp.<pid>.<n>" beside path (mode 0644 less the umask), or NULL
 * with err set (where = path). */
TUNE_MUST_CHECK outfile *outfile_open(const char *path, tune_error *err);
/* The stream to write to (borrowed). Write errors are remembered and reported by the commit. */
FILE *outfile_stream(outfile *o);
/* Flushes, fsyncs and closes the temporary file, renames it onto path; frees o. On any failure
 * the temporary file is removed, path is untouched, and err says "cannot write: <reason>". */
TUNE_MUST_CHECK tune_status outfile_commit(outfile *o, tune_error *err);
/* Drops the temporary file; frees o. NULL: no-op. */
void outfile_abort(outfile *o);

/* len bytes of data as the whole of path, atomically. */
TUNE_MUST_CHECK tune_status outfile_write(const char *path, const void *data, size_t len,
                                          tune_error *err);
/* json (dumped with flags, then a newline) as the whole of path, atomically. */
TUNE_MUST_CHECK tune_status outfile_write_json(const char *path, const json_t *json, size_t flags,
                                               tune_error *err);

/* A set of files written together (best.md, best.csv and best.json): each is written to its own
 * temporary file, and none replaces its target until every one of them is written, flushed and
 * fsync'd. A failed write (full disk, size limit) leaves every target as it was and says so
 * ("cannot write: <reason>; none of A, B and C was replaced"); a rename that fails once others
 * are done (rare: the folder removed, read-only) names the files replaced and those stale.
 *
 *   outfile_set *s = outfile_set_new();
 *   FILE *md = outfile_set_open(s, "out/best.md", &err), *csv = ...;
 *   ... if (!md || !csv) { outfile_set_abort(s); return err.code; }
 *   return outfile_set_commit(s, &err);
 */
typedef struct outfile_set outfile_set;

/* New empty set, or NULL (out of memory). */
TUNE_MUST_CHECK outfile_set *outfile_set_new(void);
/* A temporary file for path in the set (at most 8 files); its stream (borrowed), or NULL with err
 * set. */
FILE *outfile_set_open(outfile_set *s, const char *path, tune_error *err);
/* json (dumped with flags, then a newline) as path's file in the set. */
TUNE_MUST_CHECK tune_status outfile_set_json(outfile_set *s, const char *path, const json_t *json,
                                             size_t flags, tune_error *err);
/* Writes every file of the set, all or none (above); frees s. */
TUNE_MUST_CHECK tune_status outfile_set_commit(outfile_set *s, tune_error *err);
/* Drops every temporary file of the set; frees s. NULL: no-op. */
void outfile_set_abort(outfile_set *s);

/* Removes the temporary files that a writer killed mid-write left in dir: names of the form
 * outfile_open gives them, "<name>.tmp.<pid>.<n>" (digits), whose process no longer exists.
 * Nothing else is touched (another name, a live writer's file, a folder). */
void outfile_remove_stale_temps(const char *dir);

/* x as a JSON real, or null where it is not finite (JSON has no NaN or infinity). */
static inline json_t *outfile_json_number(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

/* A value (a problem axis's, a parameter's) as JSON: an integer, a real (null where not finite)
 * or a string. */
static inline json_t *outfile_json_value(expr_value v)
{
    switch (v.type) {
    case EXPR_INT:
        return json_integer((json_int_t)v.i);
    case EXPR_FLOAT:
        return outfile_json_number(v.f);
    case EXPR_STR:
        return json_string(v.s ? v.s : "");
    }
    return json_null();
}

/* Creates dir and the folders above it that do not exist (mkdir -p); a file in the way is an
 * error (ENOTDIR). */
TUNE_MUST_CHECK tune_status outfile_mkdirs(const char *dir, tune_error *err);

/* 1 when the folder out is dir, or a folder inside it, once made (mkdir -p): out's existing part
 * resolved through links (realpath), the rest by name, then out and each folder above it
 * compared with dir by identity (st_dev, st_ino), so a link to dir, another spelling of it or a
 * bind mount of it counts; 0 otherwise, and when dir is not a folder. What a command that reads
 * folders checks its --out against: the folders read are never written. */
int outfile_dir_within(const char *out, const char *dir);

#endif
