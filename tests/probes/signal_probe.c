/* signal_probe.c - an LD_PRELOAD shim for tests/test_interrupt.sh: tune signals itself in the
 * middle of a write, and the write then takes its time, so that a stop that does not wait for it
 * leaves the half-written file behind.
 *
 *   SIGNAL_PROBE_CALL   rename: at a rename(2) onto a path ending with SIGNAL_PROBE_MATCH (a
 *                       cache entry ".bin", "/best.md"): the signal, 300 ms, then the rename;
 *                       write: at a write(2) to a file whose path ends with SIGNAL_PROBE_MATCH
 *                       ("/raw.jsonl"): half the bytes, the signal, 300 ms, and the half written
 *                       returned (the caller writes the rest)
 *   SIGNAL_PROBE_AT     which matching call (1: the first)
 *   SIGNAL_PROBE_SIG    the signal's number (15: SIGTERM, 2: SIGINT)
 *   SIGNAL_PROBE_OUT    a file that gets "fired" when the signal is sent
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static int counter;

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* 1 when this matching call is the one to fire at (once, whatever the thread). */
static int probe_due(const char *call, const char *path)
{
    const char *want = getenv("SIGNAL_PROBE_CALL"), *match = getenv("SIGNAL_PROBE_MATCH"),
               *at = getenv("SIGNAL_PROBE_AT");
    if (!want || !match || !at || strcmp(want, call) != 0 || !ends_with(path, match))
        return 0;
    return __atomic_add_fetch(&counter, 1, __ATOMIC_SEQ_CST) == atoi(at);
}

static void probe_fire(void)
{
    const char *out = getenv("SIGNAL_PROBE_OUT"), *sig = getenv("SIGNAL_PROBE_SIG");
    if (out) {
        FILE *f = fopen(out, "w");
        if (f) {
            fputs("fired\n", f);
            fclose(f);
        }
    }
    kill(getpid(), sig ? atoi(sig) : SIGTERM);
    usleep(300 * 1000);
}

int rename(const char *from, const char *to)
{
    int (*real)(const char *, const char *) =
        (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
    if (probe_due("rename", to))
        probe_fire();
    return real(from, to);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    ssize_t (*real)(int, const void *, size_t) =
        (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    const char *want = getenv("SIGNAL_PROBE_CALL");
    if (n < 2 || !want || strcmp(want, "write") != 0)
        return real(fd, buf, n);
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t k = readlink(link, path, sizeof path - 1);
    if (k <= 0)
        return real(fd, buf, n);
    path[k] = '\0';
    if (!probe_due("write", path))
        return real(fd, buf, n);
    ssize_t half = real(fd, buf, n / 2);
    probe_fire();
    return half;
}
