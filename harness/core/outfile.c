#define _GNU_SOURCE /* fopencookie */
#include "core/outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/interrupt.h"

struct outfile {
    FILE *f;
    int fd;
    int error; /* the first write's errno, 0 when none failed */
    char path[PATH_MAX];
    char tmp[PATH_MAX + 48];
};

/* The stream's write function (fopencookie): keeps the first failure's errno, which stdio would
 * otherwise lose by the time the caller looks. */
static ssize_t cookie_write(void *cookie, const char *buf, size_t size)
{
    outfile *o = cookie;
    size_t done = 0;
    while (done < size) {
        ssize_t k = write(o->fd, buf + done, size - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (!o->error)
                o->error = k < 0 ? errno : EIO;
            return done ? (ssize_t)done : -1;
        }
        done += (size_t)k;
    }
    return (ssize_t)done;
}

outfile *outfile_open(const char *path, tune_error *err)
{
    outfile *o = calloc(1, sizeof *o);
    if (!o) {
        tune_error_set(err, TUNE_ERR_NOMEM, path, "out of host memory");
        return NULL;
    }
    if ((size_t)snprintf(o->path, sizeof o->path, "%s", path) >= sizeof o->path) {
        free(o);
        tune_error_set(err, TUNE_ERR_IO, path, "cannot write: path too long");
        return NULL;
    }
    /* from the temporary file's creation to its rename or removal: a stop (SIGTERM) waits */
    interrupt_enter();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    unsigned n = (unsigned)ts.tv_nsec;
    o->fd = -1;
    for (int tries = 0; o->fd < 0 && tries < 100; tries++, n++) {
        snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%d.%u", path, (int)getpid(), n);
        o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (o->fd < 0 && errno != EEXIST)
            break;
    }
    if (o->fd < 0) {
        tune_error_set(err, TUNE_ERR_IO, path, "cannot write: %s", strerror(errno));
        free(o);
        interrupt_leave();
        return NULL;
    }
    cookie_io_functions_t io = {.write = cookie_write};
    o->f = fopencookie(o, "w", io);
    if (!o->f) {
        tune_error_set(err, TUNE_ERR_IO, path, "cannot write: %s", strerror(errno));
        close(o->fd);
        unlink(o->tmp);
        free(o);
        interrupt_leave();
        return NULL;
    }
    return o;
}

FILE *outfile_stream(outfile *o)
{
    return o->f;
}

void outfile_abort(outfile *o)
{
    if (!o)
        return;
    fclose(o->f);
    close(o->fd);
    unlink(o->tmp);
    free(o);
    interrupt_leave();
}

/* fsync of the folder holding path, so the rename itself survives a crash (best effort). */
static void sync_parent(const char *path)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        dir[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* Flushes, fsyncs and closes o's temporary file: 0, or the first errno. */
static int outfile_finish(outfile *o)
{
    int e = 0;
    if (fflush(o->f) != 0 || ferror(o->f))
        e = o->error ? o->error : (errno ? errno : EIO);
    if (fclose(o->f) != 0 && !e)
        e = o->error ? o->error : EIO;
    if (!e && o->error)
        e = o->error;
    if (!e && fsync(o->fd) != 0 && errno != EINVAL && errno != EROFS)
        e = errno;
    if (close(o->fd) != 0 && !e)
        e = errno;
    return e;
}

tune_status outfile_commit(outfile *o, tune_error *err)
{
    int e = outfile_finish(o);
    if (!e && rename(o->tmp, o->path) != 0)
        e = errno;
    tune_status st = TUNE_OK;
    if (e) {
        unlink(o->tmp);
        st = tune_error_set(err, TUNE_ERR_IO, o->path, "cannot write: %s", strerror(e));
    } else {
        sync_parent(o->path);
    }
    free(o);
    interrupt_leave();
    return st;
}

tune_status outfile_write(const char *path, const void *data, size_t len, tune_error *err)
{
    outfile *o = outfile_open(path, err);
    if (!o)
        return err ? err->code : TUNE_ERR_IO;
    if (len)
        (void)fwrite(data, 1, len, o->f);
    return outfile_commit(o, err);
}

tune_status outfile_write_json(const char *path, const json_t *json, size_t flags,
                               tune_error *err)
{
    if (!json)
        return tune_error_set(err, TUNE_ERR_IO, path, "cannot write: no JSON to write (out of memory?)");
    outfile *o = outfile_open(path, err);
    if (!o)
        return err ? err->code : TUNE_ERR_IO;
    if (json_dumpf(json, o->f, flags) != 0 || fputc('\n', o->f) == EOF)
        if (!o->error)
            o->error = EIO;
    return outfile_commit(o, err);
}

/* The real path of path in out: realpath of the longest part that exists, then the components
 * that do not exist yet, "." and ".." among them resolved by name (mkdir -p makes them plain
 * folders, so "new/.." is the folder new is made in). -1 when nothing of it resolves. */
static int outfile_resolve(const char *path, char *out, size_t size)
{
    char cur[PATH_MAX], rest[PATH_MAX] = "";
    if (!realpath(path[0] == '/' ? "/" : ".", cur))
        return -1;
    char copy[PATH_MAX];
    if ((size_t)snprintf(copy, sizeof copy, "%s", path) >= sizeof copy)
        return -1;
    for (char *save = NULL, *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (strcmp(c, ".") == 0)
            continue;
        if (rest[0]) { /* below a component that does not exist: by name */
            if (strcmp(c, "..") == 0) {
                char *slash = strrchr(rest, '/');
                *slash = '\0';
            } else if (strlen(rest) + strlen(c) + 2 < sizeof rest) {
                strcat(rest, "/");
                strcat(rest, c);
            } else {
                return -1;
            }
            continue;
        }
        char next[2 * PATH_MAX + 2], real[PATH_MAX];
        snprintf(next, sizeof next, "%s/%s", strcmp(cur, "/") == 0 ? "" : cur, c);
        if (realpath(next, real)) {
            snprintf(cur, sizeof cur, "%s", real);
        } else if (strcmp(c, "..") == 0) {
            return -1; /* cur exists, so its parent does: not reached */
        } else {
            snprintf(rest, sizeof rest, "/%s", c);
        }
    }
    if ((size_t)snprintf(out, size, "%s%s", strcmp(cur, "/") == 0 && rest[0] ? "" : cur, rest) >=
        size)
        return -1;
    return 0;
}

int outfile_dir_within(const char *out, const char *dir)
{
    char o[PATH_MAX];
    struct stat d;
    if (stat(dir, &d) != 0 || !S_ISDIR(d.st_mode) || outfile_resolve(out, o, sizeof o) != 0)
        return 0;
    /* out and every folder above it, compared by identity (st_dev, st_ino): a link, a bind mount
     * or another spelling of dir is dir */
    for (;;) {
        struct stat s;
        if (stat(o, &s) == 0 && s.st_dev == d.st_dev && s.st_ino == d.st_ino)
            return 1;
        char *slash = strrchr(o, '/');
        if (!slash || slash == o) {
            if (strcmp(o, "/") == 0)
                return 0;
            o[1] = '\0';
            continue;
        }
        *slash = '\0';
    }
}

#define OUTFILE_SET_MAX 8

struct outfile_set {
    outfile *files[OUTFILE_SET_MAX];
    size_t n;
};

outfile_set *outfile_set_new(void)
{
    return calloc(1, sizeof(outfile_set));
}

FILE *outfile_set_open(outfile_set *s, const char *path, tune_error *err)
{
    if (s->n == OUTFILE_SET_MAX) {
        tune_error_set(err, TUNE_ERR_INVALID, path, "cannot write: more than %d files in a set",
                       OUTFILE_SET_MAX);
        return NULL;
    }
    outfile *o = outfile_open(path, err);
    if (!o)
        return NULL;
    s->files[s->n++] = o;
    return o->f;
}

void outfile_set_abort(outfile_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        outfile_abort(s->files[i]);
    free(s);
}

/* "a, b and c" of the paths files[from, to) into buf. */
static void outfile_names(outfile *const *files, size_t from, size_t to, char *buf, size_t size)
{
    buf[0] = '\0';
    for (size_t i = from; i < to; i++) {
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, "%s%s", i == from ? "" : i + 1 == to ? " and " : ", ",
                 files[i]->path);
    }
}

tune_status outfile_set_commit(outfile_set *s, tune_error *err)
{
    int e = 0;
    size_t bad = 0;
    for (size_t i = 0; i < s->n; i++) {
        int fe = outfile_finish(s->files[i]);
        if (fe && !e) {
            e = fe;
            bad = i;
        }
    }
    char names[4096];
    tune_status st = TUNE_OK;
    if (e) { /* nothing renamed: every target is as it was */
        outfile_names(s->files, 0, s->n, names, sizeof names);
        st = tune_error_set(err, TUNE_ERR_IO, s->files[bad]->path,
                            "cannot write: %s; none of %s was replaced", strerror(e), names);
        for (size_t i = 0; i < s->n; i++)
            unlink(s->files[i]->tmp);
    } else {
        for (size_t i = 0; i < s->n; i++) {
            if (rename(s->files[i]->tmp, s->files[i]->path) == 0) {
                sync_parent(s->files[i]->path);
                continue;
            }
            e = errno; /* the new set is partly in place: say which files are stale */
            char done[4096], stale[4096];
            outfile_names(s->files, 0, i, done, sizeof done);
            outfile_names(s->files, i, s->n, stale, sizeof stale);
            st = tune_error_set(err, TUNE_ERR_IO, s->files[i]->path,
                                "cannot write: %s; %s%s%s not replaced and may be stale (from "
                                "an earlier write)",
                                strerror(e), done, i ? " replaced, " : "", stale);
            for (size_t k = i; k < s->n; k++)
                unlink(s->files[k]->tmp);
            break;
        }
    }
    for (size_t i = 0; i < s->n; i++) {
        free(s->files[i]);
        interrupt_leave(); /* each file's outfile_open */
    }
    free(s);
    return st;
}

tune_status outfile_set_json(outfile_set *s, const char *path, const json_t *json, size_t flags,
                             tune_error *err)
{
    if (!json)
        return tune_error_set(err, TUNE_ERR_NOMEM, path,
                              "cannot write: no JSON to write (out of memory?)");
    FILE *f = outfile_set_open(s, path, err);
    if (!f)
        return err ? err->code : TUNE_ERR_IO;
    outfile *o = s->files[s->n - 1];
    if ((json_dumpf(json, f, flags) != 0 || fputc('\n', f) == EOF) && !o->error)
        o->error = EIO;
    return TUNE_OK;
}

/* 1 when name is a temporary file of outfile_open, "<name>.tmp.<pid>.<n>" (digits only), whose
 * process is gone. */
static int outfile_is_stale_temp(const char *name)
{
    const char *t = strstr(name, ".tmp.");
    for (const char *next; t && (next = strstr(t + 1, ".tmp.")) != NULL;)
        t = next; /* the last ".tmp." */
    if (!t || t == name)
        return 0;
    char *end;
    errno = 0;
    long pid = strtol(t + 5, &end, 10);
    if (end == t + 5 || *end != '.' || errno || pid <= 0 || pid > INT_MAX || t[5] == '-')
        return 0;
    const char *n = end + 1;
    if (!*n || strspn(n, "0123456789") != strlen(n))
        return 0;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

void outfile_remove_stale_temps(const char *dir)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        if (!outfile_is_stale_temp(e->d_name))
            continue;
        char path[PATH_MAX + 256];
        struct stat sb;
        snprintf(path, sizeof path, "%.4000s/%.255s", dir, e->d_name);
        if (lstat(path, &sb) == 0 && (S_ISREG(sb.st_mode) || S_ISLNK(sb.st_mode)))
            (void)unlink(path);
    }
    if (d)
        closedir(d);
}

/* ---- folders ---- */

static int mkdir_one(const char *path)
{
    struct stat st;
    if (mkdir(path, 0777) == 0)
        return 0;
    if (errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return 0;
    if (errno == EEXIST)
        errno = ENOTDIR;
    return -1;
}

tune_status outfile_mkdirs(const char *dir, tune_error *err)
{
    if (!dir || !dir[0])
        return tune_error_set(err, TUNE_ERR_INVALID, "", "empty directory name");
    char *p = strdup(dir);
    if (!p)
        return tune_error_set(err, TUNE_ERR_NOMEM, dir, "out of memory");
    int rc = 0;
    for (char *s = p + 1; *s && rc == 0; s++) {
        if (*s != '/' || s[-1] == '/')
            continue;
        *s = '\0';
        rc = mkdir_one(p);
        *s = '/';
    }
    if (rc == 0)
        rc = mkdir_one(p);
    tune_status st = TUNE_OK;
    if (rc != 0)
        st = tune_error_set(err, TUNE_ERR_IO, dir, "cannot create directory: %s", strerror(errno));
    free(p);
    return st;
}
