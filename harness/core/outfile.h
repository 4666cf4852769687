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
 */
#ifndef TUNE_OUTFILE_H
#define TUNE_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "core/error.h"

typedef struct outfile outfile;

/* A new temporary file "<path>.tmp.<pid>.<n>" beside path (mode 0644 less the umask), or NULL
 * with err set (where = path). */
outfile *outfile_open(const char *path, tune_error *err);
/* The stream to write to (borrowed). Write errors are remembered and reported by the commit. */
FILE *outfile_stream(outfile *o);
/* Flushes, fsyncs and closes the temporary file, renames it onto path; frees o. On any failure
 * the temporary file is removed, path is untouched, and err says "cannot write: <reason>". */
tune_status outfile_commit(outfile *o, tune_error *err);
/* Drops the temporary file; frees o. NULL: no-op. */
void outfile_abort(outfile *o);

/* len bytes of data as the whole of path, atomically. */
tune_status outfile_write(const char *path, const void *data, size_t len, tune_error *err);
/* json (dumped with flags, then a newline) as the whole of path, atomically. */
tune_status outfile_write_json(const char *path, const json_t *json, size_t flags,
                               tune_error *err);

/* 1 when the folder out is dir, or a folder inside it, once made (mkdir -p): out's existing part
 * resolved through links (realpath), the rest by name, then out and each folder above it
 * compared with dir by identity (st_dev, st_ino), so a link to dir, another spelling of it or a
 * bind mount of it counts; 0 otherwise, and when dir is not a folder. What a command that reads
 * folders checks its --out against: the folders read are never written. */
int outfile_dir_within(const char *out, const char *dir);

#endif
