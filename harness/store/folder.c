#include "store/folder.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/outfile.h"
#include "store/results.h"

tune_status folder_make(const char *out_dir, const char *root, const char *sweep, char *dir,
                        size_t size, tune_error *err)
{
    if (out_dir) {
        if ((size_t)snprintf(dir, size, "%s", out_dir) >= size)
            return tune_error_set(err, TUNE_ERR_IO, out_dir, "path too long");
        return results_mkdirs(dir, err);
    }
    char parent[PATH_MAX], stamp[32];
    if ((size_t)snprintf(parent, sizeof parent, "%s/%s", root, sweep) >= sizeof parent)
        return tune_error_set(err, TUNE_ERR_IO, root, "path too long");
    tune_status st = results_mkdirs(parent, err);
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
    static const char *const names[] = {"meta.json", "raw.jsonl", "retime.jsonl", "shards"};
    char path[PATH_MAX + 32];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (access(path, F_OK) == 0)
            return names[i];
    }
    return NULL;
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
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.' && strcmp(e->d_name, best) > 0)
            snprintf(best, sizeof best, "%s", e->d_name);
    if (d)
        closedir(d);
    if (!best[0])
        return tune_error_set(err, TUNE_ERR_IO, path, "no earlier run of sweep '%s' to resume",
                              sweep);
    if ((size_t)snprintf(dir, size, "%.3800s/%.200s", path, best) >= size)
        return tune_error_set(err, TUNE_ERR_IO, path, "path too long");
    return TUNE_OK;
}

int folder_lock(const char *dir, tune_error *err)
{
    char path[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        tune_error_set(err, TUNE_ERR_IO, path, "cannot open the lock file: %s", strerror(errno));
        return -1;
    }
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
    return fd;
}

void folder_unlock(const char *dir, int fd)
{
    if (fd < 0)
        return;
    char lock[PATH_MAX + 8];
    snprintf(lock, sizeof lock, "%.4000s/lock", dir);
    unlink(
        lock); /* still held: a run starting now fails to lock the old file, or makes a new one */
    close(fd);
}

void folder_trim_partial_line(const char *path)
{
    int fd = open(path, O_RDWR);
    if (fd < 0)
        return;
    off_t size = lseek(fd, 0, SEEK_END), keep = size;
    char c;
    while (keep > 0 && pread(fd, &c, 1, keep - 1) == 1 && c != '\n')
        keep--;
    if (keep < size && ftruncate(fd, keep) != 0)
        (void)0;
    close(fd);
}

tune_status folder_append_line(int fd, const char *path, const char *what, const char *line,
                               size_t len, tune_error *err)
{
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
    if (!e)
        return TUNE_OK;
    if (before >= 0 && ftruncate(fd, before) != 0)
        (void)0; /* the resume trims a partial last line anyway */
    return tune_error_set(err, TUNE_ERR_IO, path, "cannot append %s: %s", what, strerror(e));
}

size_t folder_count_rows(const char *dir)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    FILE *f = fopen(path, "r");
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
