/* folder.h - a results folder: its name, its lock, and the file operations the store shares.
 *
 *   char dir[PATH_MAX];
 *   folder_make(NULL, "results", "sparq", dir, sizeof dir, &err);  // results/sparq/<UTC time>
 *   int lock = folder_lock(dir, &err);                               // -1: another run has it
 *   ...
 *   folder_unlock(dir, lock);
 *
 * A folder holds raw.jsonl (results.h), meta.json (meta.h), retime.jsonl (retime.h), best.md,
 * best.csv, best.json (analysis/report.h), and for --gpus a shards/<i>/ folder per GPU.
 *
 * The JSONL files of a committed run may be gzipped by hand (raw.jsonl.gz, retime.jsonl.gz):
 * every reader takes them through folder_locate and folder_lines, which gunzip them as they go;
 * a run, a resume and a merge write plain files only.
 *
 *   char path[PATH_MAX];
 *   folder_locate(dir, "raw.jsonl", path, sizeof path, &err);   // dir/raw.jsonl or .gz
 *   folder_lines *in = folder_lines_open(path, INFILE_MAX_ROWS, 1 << 20, &err);
 *   char *line; size_t len, lineno;
 *   while (folder_lines_next(in, &line, &len, &lineno, &err) == TUNE_OK && line) ...
 *   folder_lines_close(in);
 */
#ifndef TUNE_FOLDER_H
#define TUNE_FOLDER_H

#include <stddef.h>

#include <jansson.h>

#include "core/error.h"

/* The run folder: out_dir when given (created, mkdir -p), else a new folder
 * <root>/<sweep>/<UTC time>, made with an exclusive mkdir: a name already taken (another run
 * started in the same second) gets a suffix -001, -002, ..., so names are unique and sort in the
 * order the runs started. */
TUNE_MUST_CHECK tune_status folder_make(const char *out_dir, const char *root, const char *sweep,
                                        char *dir, size_t size, tune_error *err);
/* What makes dir a run's folder ("meta.json", "raw.jsonl", "raw.jsonl.gz", "retime.jsonl",
 * "retime.jsonl.gz", "shards"; static), or NULL when it holds none of them (absent, empty, or
 * other files only). */
const char *folder_holds_run(const char *dir);

/* Where a run goes. */
typedef struct {
    const char *out_dir; /* --out, or NULL */
    const char *root;    /* --results */
    const char *sweep;   /* the sweep's name */
    int resume;          /* --resume: the latest run of the sweep, or out_dir */
} folder_run_spec;

/* The run's folder, made or found (folder_make, folder_latest) into dir and locked (*lock_fd,
 * held until folder_unlock: for the whole run, tables included). Without resume a folder that
 * already holds a run is refused, naming it: two runs never share a folder. A resume into a
 * folder whose raw.jsonl or retime.jsonl is gzipped is refused too (gunzip it first): a run
 * appends to the plain file and never starts a second one beside the .gz. */
TUNE_MUST_CHECK tune_status folder_open_run(const folder_run_spec *spec, char *dir, size_t size,
                                            int *lock_fd, tune_error *err);
/* The latest run folder of the sweep under root (names are UTC times): the greatest name among
 * its folders that hold a run (folder_holds_run); files, links and empty folders are not runs. */
TUNE_MUST_CHECK tune_status folder_latest(const char *root, const char *sweep, char *dir,
                                          size_t size, tune_error *err);

/* Holds an exclusive lock on dir/lock for the process's life (and its children's); fails when
 * another run holds it. Returns the descriptor, or -1. Once held, the stale temporary files of
 * dir are removed (folder_remove_stale_temps). */
int folder_lock(const char *dir, tune_error *err);
/* Removes the temporary files that a writer killed mid-write left in dir: names of the form
 * core/outfile.h gives them, "<name>.tmp.<pid>.<n>" (digits), whose process no longer exists.
 * Nothing else is touched (another name, a live writer's file, a folder). */
void folder_remove_stale_temps(const char *dir);
/* Removes dir/lock and releases it (fd < 0: nothing). */
void folder_unlock(const char *dir, int fd);

/* Cuts a last line that a killed run left without its newline, so appending stays valid JSONL.
 * The file is opened as folder_open_file does (a link is an error). */
TUNE_MUST_CHECK tune_status folder_trim_partial_line(const char *path, tune_error *err);
/* A file of a results folder that tune writes in place (the lock, raw.jsonl and retime.jsonl
 * appended, a shard's log.txt), opened with flags (O_RDWR, O_WRONLY | O_APPEND, | O_CREAT) and
 * never through a link: O_NOFOLLOW, and anything but a regular file refused. The descriptor
 * (blocking, close-on-exec), or -1 with err naming path: "is a symbolic link: ...", "cannot open
 * WHAT: ...". Files replaced whole go through core/outfile.h, whose rename replaces a link. */
int folder_open_file(const char *path, int flags, const char *what, tune_error *err);
/* Lines of dir/raw.jsonl (0 when absent). */
size_t folder_count_rows(const char *dir);
/* Appends line (len bytes, ending with '\n') to the file open on fd (O_APPEND) with write(2), a
 * whole line or nothing: a failed append (full disk, size limit) is cut back so the file stays
 * JSONL, and err names path and says why ("cannot append <what>: <strerror>"). Shared by raw.jsonl and retime.jsonl. */
TUNE_MUST_CHECK tune_status folder_append_line(int fd, const char *path, const char *what,
                                               const char *line, size_t len, tune_error *err);
/* Where a reader finds dir's file name ("raw.jsonl", "retime.jsonl"): dir/name, or dir/name.gz
 * when only that exists; dir/name when neither does (opening it then says so). TUNE_ERR_INVALID
 * (where = dir) when both exist: which of them holds the rows is ambiguous. */
TUNE_MUST_CHECK tune_status folder_locate(const char *dir, const char *name, char *path,
                                          size_t size, tune_error *err);

/* A JSONL file read line by line, plain or gzip (a path ending in ".gz"), from untrusted input:
 * the file is checked like infile_open (a regular file of at most max_bytes), its text (the
 * decompressed text of a .gz) may not exceed max_bytes either, and no line max_line: a gzip bomb
 * is refused, never held in memory ("too large: more than N bytes decompressed"). A .gz that is not
 * gzip, is corrupt or ends early fails with one error naming the file and the line of the text
 * it falls in ("corrupt gzip file: <zlib's reason> (in line N of the text, gzip member M)"); every
 * member of a multi-member .gz is read, and bytes after a member that make no valid member are
 * such an error. A plain file holding gzip data is refused (its name must end in .gz). A line
 * holding a NUL byte is an error at "PATH:LINE" ("a NUL byte at column C ..."). */
typedef struct folder_lines folder_lines;

/* New reader, or NULL with err set (where = path). */
TUNE_MUST_CHECK folder_lines *folder_lines_open(const char *path, size_t max_bytes, size_t max_line,
                                                tune_error *err);
/* The next line into *line (borrowed until the next call; NUL-terminated, its '\n' removed), *len
 * and *lineno (counted from 1; either may be NULL); *line NULL at the end. On failure err says
 * "PATH:LINE" "a line over N bytes", or PATH and what is wrong with the file. */
TUNE_MUST_CHECK tune_status folder_lines_next(folder_lines *in, char **line, size_t *len,
                                              size_t *lineno, tune_error *err);
/* Reads a .gz to its end, its lines unread: the gzip error (corrupt data, a bad checksum, a
 * truncation) into err, or TUNE_OK (a plain file: always). A reader whose line failed to parse
 * asks it, since corrupt compressed data most often shows first as a line of garbage. */
TUNE_MUST_CHECK tune_status folder_lines_verify(folder_lines *in, tune_error *err);
/* Closes the reader; NULL is a no-op. */
void folder_lines_close(folder_lines *in);

/* Writes json to path through path.tmp, renamed: readers see the old file or the new one. */
TUNE_MUST_CHECK tune_status folder_write_json(const char *path, const json_t *json,
                                              tune_error *err);


#endif
