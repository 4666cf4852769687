#include "store/folder.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/clock.h"
#include "core/infile.h"
#include "core/interrupt.h"
#include "core/outfile.h"
#include "store/results.h"

tune_status folder_make(const char *out_dir, const char *root, const char *sweep, char *dir,
                        size_t size, tune_error *err)
{
    if (out_dir) {
        if ((size_t)snprintf(dir, size, "%s", out_dir) >= size)
            return tune_error_set(err, TUNE_ERR_IO, out_dir, "path too long");
        return outfile_mkdirs(dir, err);
    }
    char parent[PATH_MAX], stamp[32];
    if ((size_t)snprintf(parent, sizeof parent, "%s/%s", root, sweep) >= sizeof parent)
        return tune_error_set(err, TUNE_ERR_IO, root, "path too long");
    tune_status st = outfile_mkdirs(parent, err);
    if (st != TUNE_OK)
        return st;
    clock_utc(stamp, sizeof stamp, CLOCK_UTC_DIR);
    /* A new folder is made with mkdir, which fails when the name exists: runs started in the
     * same second get <stamp>, <stamp>-001, <stamp>-002, ..., which sort in the order made and
     * before the next second's <stamp>. */
    for (int k = 0; k < 1000; k++) {
        int len = k ? snprintf(dir, size, "%s/%s-%03d", parent, stamp, k)
                    : snprintf(dir, size, "%s/%s", parent, stamp);
        if (len < 0 || (size_t)len >= size)
            return tune_error_set(err, TUNE_ERR_IO, parent, "path too long");
        if (mkdir(dir, 0755) == 0)
            return TUNE_OK;
        if (errno != EEXIST)
            return tune_error_set(err, TUNE_ERR_IO, dir, "cannot create the folder: %s",
                                  strerror(errno));
    }
    return tune_error_set(err, TUNE_ERR_IO, parent,
                          "cannot create a new run folder: 1000 runs started in second %s", stamp);
}

const char *folder_holds_run(const char *dir)
{
    static const char *const names[] = {"meta.json",    "raw.jsonl",       "raw.jsonl.gz",
                                        "retime.jsonl", "retime.jsonl.gz", "shards"};
    char path[PATH_MAX + 32];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (access(path, F_OK) == 0)
            return names[i];
    }
    return NULL;
}

/* A resumed run appends to dir's plain JSONL files: one gzipped by hand is refused. */
static tune_status folder_check_plain(const char *dir, tune_error *err)
{
    static const char *const names[] = {"raw.jsonl", "retime.jsonl"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/%s.gz", dir, names[i]);
        if (access(path, F_OK) == 0)
            return tune_error_set(err, TUNE_ERR_IO, path,
                                  "a resumed run appends to a plain %s, and this one is gzipped: "
                                  "gunzip it first (gunzip %s)",
                                  names[i], path);
    }
    return TUNE_OK;
}

tune_status folder_open_run(const folder_run_spec *spec, char *dir, size_t size, int *lock_fd,
                            tune_error *err)
{
    *lock_fd = -1;
    tune_status st;
    if (spec->resume && !spec->out_dir)
        st = folder_latest(spec->root, spec->sweep, dir, size, err);
    else
        st = folder_make(spec->out_dir, spec->root, spec->sweep, dir, size, err);
    if (st != TUNE_OK)
        return st;
    if ((*lock_fd = folder_lock(dir, err)) < 0)
        return TUNE_ERR_IO;
    const char *held = spec->resume ? NULL : folder_holds_run(dir);
    if (spec->resume && (st = folder_check_plain(dir, err)) != TUNE_OK) {
        folder_unlock(dir, *lock_fd);
        *lock_fd = -1;
        return st;
    }
    if (held) {
        folder_unlock(dir, *lock_fd);
        *lock_fd = -1;
        return tune_error_set(err, TUNE_ERR_IO, dir,
                              "this folder already holds a run (%s); tune never mixes two runs in "
                              "one folder: add --resume to continue that run, or name a new "
                              "folder with --out",
                              held);
    }
    return TUNE_OK;
}

tune_status folder_latest(const char *root, const char *sweep, char *dir, size_t size,
                          tune_error *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", root, sweep);
    DIR *d = opendir(path);
    char best[256] = "";
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, best) <= 0)
            continue;
        /* a run is a folder of its own (not a link, not a file) that holds a run */
        char sub[4064];
        struct stat sb;
        snprintf(sub, sizeof sub, "%.3800s/%.255s", path, e->d_name);
        if (lstat(sub, &sb) == 0 && S_ISDIR(sb.st_mode) && folder_holds_run(sub))
            snprintf(best, sizeof best, "%s", e->d_name);
    }
    if (d)
        closedir(d);
    if (!best[0])
        return tune_error_set(err, TUNE_ERR_IO, path, "no earlier run of sweep '%s' to resume",
                              sweep);
    if ((size_t)snprintf(dir, size, "%.3800s/%.200s", path, best) >= size)
        return tune_error_set(err, TUNE_ERR_IO, path, "path too long");
    return TUNE_OK;
}

int folder_open_file(const char *path, int flags, const char *what, tune_error *err)
{
    int fd = open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0644);
    struct stat sb;
    if (fd < 0 && errno == ELOOP) {
        tune_error_set(err, TUNE_ERR_IO, path,
                       "is a symbolic link: tune writes %s of a results folder only as a file "
                       "of its own, never through a link (remove the link)",
                       what);
        return -1;
    }
    if (fd < 0) {
        tune_error_set(err, TUNE_ERR_IO, path, "cannot open %s: %s", what, strerror(errno));
        return -1;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        tune_error_set(err, TUNE_ERR_IO, path, "cannot open %s: not a regular file", what);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

void folder_remove_stale_temps(const char *dir)
{
    outfile_remove_stale_temps(dir);
}

/* What a stop (core/interrupt.h: SIGTERM, SIGINT) leaves of a folder it was writing, once its
 * children are dead: no temporary file, no row cut short, no lock file; the same for its shards'
 * folders (--gpus). The folder then resumes like any interrupted run. */
static void folder_stop_cleanup(const char *dir)
{
    static const char *const appended[] = {"raw.jsonl", "retime.jsonl"};
    char path[PATH_MAX + 64];
    outfile_remove_stale_temps(dir);
    for (size_t i = 0; i < sizeof appended / sizeof appended[0]; i++) {
        snprintf(path, sizeof path, "%.4000s/%s", dir, appended[i]);
        if (access(path, F_OK) == 0)
            /* best effort: the process is stopping, and a resume trims the line again */
            tune_status_ignore(folder_trim_partial_line(path, NULL));
    }
    snprintf(path, sizeof path, "%.4000s/shards", dir);
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        char sub[PATH_MAX + 320];
        struct stat sb;
        snprintf(sub, sizeof sub, "%.3700s/%.255s", path, e->d_name);
        if (e->d_name[0] != '.' && lstat(sub, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            folder_stop_cleanup(sub); /* its lock too: its coordinator (a child) is dead */
        }
    }
    if (d)
        closedir(d);
    snprintf(path, sizeof path, "%.4000s/lock", dir);
    unlink(path); /* the process ends next, releasing the lock */
}

int folder_lock(const char *dir, tune_error *err)
{
    char path[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/lock", dir);
    int fd = folder_open_file(path, O_RDWR | O_CREAT, "the lock file", err);
    if (fd < 0)
        return -1;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = "";
        ssize_t k = pread(fd, pid, sizeof pid - 1, 0);
        pid[k > 0 ? k : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        close(fd);
        tune_error_set(err, TUNE_ERR_IO, dir,
                       "another tune run (pid %s) is writing this results folder; wait for it or "
                       "use another folder",
                       pid[0] ? pid : "?");
        return -1;
    }
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len)
        (void)0; /* the pid is informative only */
    folder_remove_stale_temps(dir); /* what a killed writer left, now that no one writes here */
    interrupt_cleanup_push(folder_stop_cleanup, dir);
    return fd;
}

void folder_unlock(const char *dir, int fd)
{
    if (fd < 0)
        return;
    interrupt_cleanup_remove(folder_stop_cleanup, dir);
    char lock[PATH_MAX + 8];
    snprintf(lock, sizeof lock, "%.4000s/lock", dir);
    unlink(
        lock); /* still held: a run starting now fails to lock the old file, or makes a new one */
    close(fd);
}

tune_status folder_trim_partial_line(const char *path, tune_error *err)
{
    int fd = folder_open_file(path, O_RDWR, "the rows", err);
    if (fd < 0)
        return TUNE_ERR_IO;
    off_t size = lseek(fd, 0, SEEK_END), keep = size;
    char c;
    while (keep > 0 && pread(fd, &c, 1, keep - 1) == 1 && c != '\n')
        keep--;
    if (keep < size && ftruncate(fd, keep) != 0)
        (void)0;
    close(fd);
    return TUNE_OK;
}

tune_status folder_append_line(int fd, const char *path, const char *what, const char *line,
                               size_t len, tune_error *err)
{
    interrupt_enter(); /* a stop (SIGTERM) waits for the whole line */
    off_t before = lseek(fd, 0, SEEK_END);
    size_t done = 0;
    int e = 0;
    while (done < len && !e) {
        ssize_t k = write(fd, line + done, len - done);
        if (k > 0)
            done += (size_t)k;
        else if (k == 0 || errno != EINTR)
            e = k == 0 ? EIO : errno;
    }
    if (e && before >= 0 && ftruncate(fd, before) != 0)
        (void)0; /* the resume trims a partial last line anyway */
    interrupt_leave();
    if (!e)
        return TUNE_OK;
    return tune_error_set(err, TUNE_ERR_IO, path, "cannot append %s: %s", what, strerror(e));
}

size_t folder_count_rows(const char *dir)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    FILE *f = infile_open(path, INFILE_MAX_ROWS, NULL); /* never a FIFO */
    size_t n = 0;
    char buf[65536];
    for (size_t k; f && (k = fread(buf, 1, sizeof buf, f)) > 0;)
        for (size_t i = 0; i < k; i++)
            n += buf[i] == '\n';
    if (f)
        fclose(f);
    return n;
}

tune_status folder_write_json(const char *path, const json_t *json, tune_error *err)
{
    return outfile_write_json(path, json, JSON_INDENT(2) | JSON_PRESERVE_ORDER, err);
}

tune_status folder_locate(const char *dir, const char *name, char *path, size_t size,
                          tune_error *err)
{
    char gz[PATH_MAX + 64];
    int len = snprintf(path, size, "%s/%s", dir, name);
    if (len < 0 || (size_t)len >= size || (size_t)len + 3 >= sizeof gz)
        return tune_error_set(err, TUNE_ERR_IO, dir, "path too long");
    snprintf(gz, sizeof gz, "%s.gz", path);
    int has_plain = access(path, F_OK) == 0, has_gz = access(gz, F_OK) == 0;
    if (has_plain && has_gz)
        return tune_error_set(err, TUNE_ERR_INVALID, dir,
                              "holds both %s and %s.gz: which one holds the rows is ambiguous; "
                              "keep one of them",
                              name, name);
    if (has_gz && (size_t)len + 3 >= size)
        return tune_error_set(err, TUNE_ERR_IO, dir, "path too long");
    if (has_gz)
        snprintf(path, size, "%s", gz);
    return TUNE_OK;
}

/* Text is read in chunks of FOLDER_CHUNK bytes into a buffer that holds at most one line and two
 * chunks: memory stays below max_line + 2 FOLDER_CHUNK whatever the file holds. */
#define FOLDER_CHUNK ((size_t)1 << 16)

struct folder_lines {
    char *path;
    int fd;
    int gzip; /* the name ends in .gz: its members are inflated here (zlib's inflate) */
    z_stream zs;
    int zs_ready;      /* inflateInit2 done */
    int member;        /* the gzip member being read, from 1 */
    int member_done;   /* the last member ended (Z_STREAM_END): another may follow */
    int in_eof;        /* the file has no more bytes */
    unsigned char *zin; /* compressed input, FOLDER_CHUNK bytes */
    size_t raw_total;   /* bytes read from the file */
    size_t max_bytes, max_line;
    char *buf;
    size_t cap, start, end; /* the text not yet returned: buf[start, end) */
    size_t total;           /* bytes of text read (decompressed) */
    size_t lineno;
    int eof;
};

static int folder_is_gz(const char *path)
{
    size_t n = strlen(path);
    return n > 3 && strcmp(path + n - 3, ".gz") == 0;
}

folder_lines *folder_lines_open(const char *path, size_t max_bytes, size_t max_line,
                                tune_error *err)
{
    int fd = infile_open_fd(path, max_bytes, err); /* a regular file: never a FIFO, a device */
    if (fd < 0)
        return NULL;
    folder_lines *in = calloc(1, sizeof *in);
    if (!in || !(in->path = strdup(path))) {
        free(in);
        close(fd);
        tune_error_set(err, TUNE_ERR_NOMEM, path, "out of host memory");
        return NULL;
    }
    in->fd = fd;
    in->gzip = folder_is_gz(path);
    /* a .gz that is not gzip is refused, and so is a plain name's gzip data, which a resumed
     * run could then append plain lines to: the first two bytes decide */
    unsigned char magic[2] = {0, 0};
    int is_gzip = pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    const char *bad = NULL;
    if (in->gzip && !is_gzip)
        bad = "not gzip data (empty, or another format): a file named .gz must be gzipped";
    else if (!in->gzip && is_gzip)
        bad = "holds gzip data: a gzipped file is read only under a name ending in .gz";
    if (bad) {
        tune_error_set(err, TUNE_ERR_INVALID, path, "%s", bad);
        folder_lines_close(in);
        return NULL;
    }
    in->max_bytes = max_bytes;
    in->max_line = max_line;
    in->member = 1;
    if (in->gzip) {
        if (!(in->zin = malloc(FOLDER_CHUNK)) || inflateInit2(&in->zs, 15 + 16) != Z_OK) {
            tune_error_set(err, TUNE_ERR_NOMEM, path, "out of host memory");
            folder_lines_close(in);
            return NULL;
        }
        in->zs_ready = 1;
    }
    return in;
}

/* The damage of a .gz: where = the file, the message says what and where in the text. */
static tune_status folder_gz_damage(const folder_lines *in, const char *what, tune_error *err)
{
    char member[48] = "";
    if (in->member > 1)
        snprintf(member, sizeof member, ", gzip member %d", in->member);
    return tune_error_set(err, TUNE_ERR_INVALID, in->path, "%s (in line %zu of the text%s)", what,
                          in->lineno + 1, member);
}

/* Up to cap bytes of text into dst: the file's bytes, or those its gzip members inflate to (every
 * member, in order: a gzip file may be several concatenated; bytes after a member that do not
 * make a whole valid member are damage, never ignored). The count, 0 at a clean end, -1 with
 * err set. */
static long folder_fill(folder_lines *in, char *dst, size_t cap, tune_error *err)
{
    for (;;) {
        if (in->gzip ? in->zs.avail_in == 0 && !in->in_eof : 1) {
            unsigned char *to = in->gzip ? in->zin : (unsigned char *)dst;
            ssize_t k = read(in->fd, to, in->gzip ? FOLDER_CHUNK : cap);
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0)
                return tune_error_set(err, TUNE_ERR_IO, in->path, "cannot read: %s",
                                      strerror(errno)),
                       -1;
            in->raw_total += (size_t)k;
            if (in->raw_total > in->max_bytes)
                return tune_error_set(err, TUNE_ERR_INVALID, in->path,
                                      "too large: more than %zu bytes", in->max_bytes),
                       -1;
            if (!in->gzip)
                return (long)k;
            in->in_eof = k == 0;
            in->zs.next_in = in->zin;
            in->zs.avail_in = (uInt)k;
        }
        if (in->member_done) { /* between members: the end, or the next member's header */
            if (in->zs.avail_in == 0)
                return 0; /* in_eof: the file ended after a whole member */
            inflateReset(&in->zs);
            in->member_done = 0;
            in->member++;
        }
        if (in->zs.avail_in == 0 && in->in_eof)
            return folder_gz_damage(in, "truncated gzip file: the compressed data ends early",
                                    err),
                   -1;
        in->zs.next_out = (unsigned char *)dst;
        in->zs.avail_out = (uInt)cap;
        int ret = inflate(&in->zs, Z_NO_FLUSH);
        long made = (long)(cap - in->zs.avail_out);
        if (ret == Z_STREAM_END)
            in->member_done = 1;
        else if (ret == Z_MEM_ERROR)
            return tune_error_set(err, TUNE_ERR_NOMEM, in->path, "out of host memory"), -1;
        else if (ret != Z_OK && ret != Z_BUF_ERROR) {
            char what[256];
            snprintf(what, sizeof what, "corrupt gzip file: %s",
                     in->zs.msg ? in->zs.msg : "invalid compressed data");
            return folder_gz_damage(in, what, err), -1;
        }
        if (made)
            return made;
    }
}

tune_status folder_lines_next(folder_lines *in, char **line, size_t *len, size_t *lineno,
                              tune_error *err)
{
    *line = NULL;
    char where[PATH_MAX + 32];
    for (;;) {
        size_t have = in->end - in->start;
        char *text = have ? in->buf + in->start : in->buf;
        char *nl = have ? memchr(text, '\n', have) : NULL;
        if (nl || (in->eof && have)) { /* a line, or the last one without its newline */
            size_t n = nl ? (size_t)(nl - text) : have;
            if (n > in->max_line)
                break;
            const char *nul = memchr(text, '\0', n);
            if (nul) { /* a reader would see the line end there and lose the rest */
                snprintf(where, sizeof where, "%s:%zu", in->path, in->lineno + 1);
                return tune_error_set(err, TUNE_ERR_INVALID, where,
                                      "a NUL byte at column %zu: a line of text holds none "
                                      "(a damaged file?)",
                                      (size_t)(nul - text) + 1);
            }
            text[n] = '\0'; /* the buffer keeps a byte after the text for it */
            in->start += nl ? n + 1 : n;
            in->lineno++;
            *line = text;
            if (len)
                *len = n;
            if (lineno)
                *lineno = in->lineno;
            return TUNE_OK;
        }
        if (in->eof)
            return TUNE_OK;
        if (have > in->max_line)
            break;
        if (have && in->start)
            memmove(in->buf, text, have);
        in->start = 0;
        in->end = have;
        if (in->cap - in->end < FOLDER_CHUNK + 1) {
            /* doubled, up to what the longest line and a chunk need */
            size_t cap = in->end + FOLDER_CHUNK + 1, most = in->max_line + 2 * FOLDER_CHUNK + 2;
            cap = cap < 2 * in->cap ? 2 * in->cap : cap;
            cap = cap > most && most >= in->end + FOLDER_CHUNK + 1 ? most : cap;
            char *bigger = realloc(in->buf, cap);
            if (!bigger)
                return tune_error_set(err, TUNE_ERR_NOMEM, in->path, "out of host memory");
            in->buf = bigger;
            in->cap = cap;
        }
        long k = folder_fill(in, in->buf + in->end, FOLDER_CHUNK, err);
        if (k < 0)
            return err ? err->code : TUNE_ERR_INVALID;
        in->eof = k == 0;
        in->end += (size_t)k;
        in->total += (size_t)k;
        if (in->total > in->max_bytes)
            return tune_error_set(err, TUNE_ERR_INVALID, in->path,
                                  "too large: more than %zu bytes%s", in->max_bytes,
                                  in->gzip ? " decompressed" : "");
    }
    snprintf(where, sizeof where, "%s:%zu", in->path, in->lineno + 1);
    return tune_error_set(err, TUNE_ERR_INVALID, where, "a line over %zu bytes", in->max_line);
}

tune_status folder_lines_verify(folder_lines *in, tune_error *err)
{
    if (!in->gzip)
        return TUNE_OK;
    char scratch[8192];
    while (!in->eof) {
        long k = folder_fill(in, scratch, sizeof scratch, err);
        if (k < 0)
            return err ? err->code : TUNE_ERR_INVALID;
        in->eof = k == 0;
        in->total += (size_t)k;
        if (in->total > in->max_bytes)
            return TUNE_OK; /* too large is no sign of corruption */
    }
    return TUNE_OK;
}

void folder_lines_close(folder_lines *in)
{
    if (!in)
        return;
    if (in->zs_ready)
        inflateEnd(&in->zs);
    if (in->fd >= 0)
        close(in->fd);
    free(in->zin);
    free(in->buf);
    free(in->path);
    free(in);
}

