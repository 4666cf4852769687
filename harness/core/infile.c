#include "core/infile.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *file_kind(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a plain file";
}

/* An open descriptor on a regular file of at most max_bytes into *fd (its size in *size). Blocking
 * mode is restored after the checks, so reads behave normally. */
static tune_status open_checked(const char *path, size_t max_bytes, int *fd, size_t *size,
                                tune_error *err)
{
    *fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (*fd < 0)
        return tune_error_set(err, TUNE_ERR_IO, path, "cannot open: %s", strerror(errno));
    struct stat sb;
    tune_status st = TUNE_OK;
    if (fstat(*fd, &sb) != 0)
        st = tune_error_set(err, TUNE_ERR_IO, path, "cannot read: %s", strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = tune_error_set(err, TUNE_ERR_IO, path, "not a regular file (%s)",
                            file_kind(sb.st_mode));
    else if ((unsigned long long)sb.st_size > (unsigned long long)max_bytes)
        st = tune_error_set(err, TUNE_ERR_INVALID, path, "too large: %lld bytes, at most %zu",
                            (long long)sb.st_size, max_bytes);
    if (st != TUNE_OK) {
        close(*fd);
        *fd = -1;
        return st;
    }
    int flags = fcntl(*fd, F_GETFL);
    if (flags >= 0)
        (void)fcntl(*fd, F_SETFL, flags & ~O_NONBLOCK);
    *size = (size_t)sb.st_size;
    return TUNE_OK;
}

tune_status infile_read(const char *path, size_t max_bytes, char **data, size_t *len,
                        tune_error *err)
{
    *data = NULL;
    if (len)
        *len = 0;
    size_t size = 0;
    int fd;
    tune_status st = open_checked(path, max_bytes, &fd, &size, err);
    if (st != TUNE_OK)
        return st;
    /* one byte more than the size seen, to notice a file that grew since fstat */
    size_t cap = size + 2, got = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return tune_error_set(err, TUNE_ERR_NOMEM, path, "out of host memory (%zu bytes)", cap);
    }
    for (;;) {
        if (got + 1 == cap) {
            if (got >= max_bytes + 1 || cap > ((size_t)-1) / 2) {
                free(buf);
                close(fd);
                return tune_error_set(err, TUNE_ERR_INVALID, path,
                                      "too large: more than %zu bytes", max_bytes);
            }
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                close(fd);
                return tune_error_set(err, TUNE_ERR_NOMEM, path, "out of host memory");
            }
            buf = bigger;
            cap *= 2;
        }
        ssize_t k = read(fd, buf + got, cap - 1 - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return tune_error_set(err, TUNE_ERR_IO, path, "cannot read: %s", strerror(e));
        }
        if (k == 0)
            break;
        got += (size_t)k;
    }
    close(fd);
    if (got > max_bytes) {
        free(buf);
        return tune_error_set(err, TUNE_ERR_INVALID, path, "too large: more than %zu bytes",
                              max_bytes);
    }
    buf[got] = '\0';
    *data = buf;
    if (len)
        *len = got;
    return TUNE_OK;
}

tune_status infile_read_text(const char *path, size_t max_bytes, char **data, size_t *len,
                             tune_error *err)
{
    size_t n = 0;
    tune_status st = infile_read(path, max_bytes, data, &n, err);
    if (len)
        *len = n;
    const char *nul = st == TUNE_OK ? memchr(*data, '\0', n) : NULL;
    if (!nul)
        return st;
    size_t line = 1, col = 1;
    for (const char *p = *data; p < nul; p++, col++)
        if (*p == '\n')
            line++, col = 0;
    free(*data);
    *data = NULL;
    if (len)
        *len = 0;
    char where[4200];
    snprintf(where, sizeof where, "%.4000s:%zu:%zu", path, line, col);
    return tune_error_set(err, TUNE_ERR_INVALID, where,
                          "a NUL byte: a text file holds none (a damaged file?)");
}

FILE *infile_open(const char *path, size_t max_bytes, tune_error *err)
{
    size_t size;
    int fd;
    if (open_checked(path, max_bytes, &fd, &size, err) != TUNE_OK)
        return NULL;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        tune_error_set(err, TUNE_ERR_IO, path, "cannot read: %s", strerror(errno));
        close(fd);
    }
    return f;
}

int infile_open_fd(const char *path, size_t max_bytes, tune_error *err)
{
    size_t size;
    int fd;
    return open_checked(path, max_bytes, &fd, &size, err) == TUNE_OK ? fd : -1;
}

const char *infile_special(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode))
        return NULL;
    return file_kind(sb.st_mode);
}

int infile_is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int infile_is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}
