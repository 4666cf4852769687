#include "device/worker.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"

struct worker {
    pid_t pid;
    int fd;        /* read end */
    char buf[8192]; /* bytes read but not yet returned */
    size_t len;
};

worker *worker_start(worker_fn fn, void *ctx, tune_error *err)
{
    int p[2];
    worker *w = calloc(1, sizeof *w);
    if (!w || pipe(p) != 0) {
        free(w);
        tune_error_set(err, TUNE_ERR_IO, "worker", "cannot create a pipe: %s", strerror(errno));
        return NULL;
    }
    fflush(NULL); /* nothing buffered is written twice */
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        free(w);
        tune_error_set(err, TUNE_ERR_IO, "worker", "cannot fork: %s", strerror(errno));
        return NULL;
    }
    if (pid == 0) {
        /* a worker never outlives its coordinator (kill -9 of tune must not leave a worker
         * writing rows or holding the GPU and the folder's lock) */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        close(p[0]);
        signal(SIGPIPE, SIG_IGN);
        int status = fn(ctx, p[1]);
        fflush(NULL);
        _exit(status);
    }
    close(p[1]);
    w->pid = pid;
    w->fd = p[0];
    return w;
}

void worker_send(int fd, const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof line - 1 ? (size_t)n : sizeof line - 2;
    for (size_t i = 0; i < len; i++)
        if (line[i] == '\n')
            line[i] = ' '; /* one message, one line */
    line[len++] = '\n';
    for (size_t off = 0; off < len;) { /* a pipe write of <= PIPE_BUF bytes is atomic */
        ssize_t k = write(fd, line + off, len - off);
        if (k <= 0 && errno != EINTR)
            return;
        off += k > 0 ? (size_t)k : 0;
    }
}

int worker_read_line(worker *w, char *out, size_t size, double timeout_s)
{
    double deadline = clock_now() + timeout_s;
    for (;;) {
        char *nl = memchr(w->buf, '\n', w->len);
        if (nl) {
            size_t n = (size_t)(nl - w->buf);
            snprintf(out, size, "%.*s", (int)n, w->buf);
            memmove(w->buf, nl + 1, w->len - n - 1);
            w->len -= n + 1;
            return 1;
        }
        if (w->len == sizeof w->buf) { /* an over-long line: return it cut */
            snprintf(out, size, "%.*s", (int)w->len, w->buf);
            w->len = 0;
            return 1;
        }
        double left = deadline - clock_now();
        if (left <= 0)
            return -1;
        struct pollfd pfd = {w->fd, POLLIN, 0};
        int r = poll(&pfd, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            return -1;
        ssize_t k = read(w->fd, w->buf + w->len, sizeof w->buf - w->len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (w->len > 0) { /* a last line without its newline */
                snprintf(out, size, "%.*s", (int)w->len, w->buf);
                w->len = 0;
                return 1;
            }
            return 0;
        }
        w->len += (size_t)k;
    }
}

void worker_kill(worker *w)
{
    if (w && w->pid > 0)
        kill(w->pid, SIGKILL);
}

int worker_wait(worker *w, char *how, size_t size)
{
    int status = 0, code = -1;
    if (!w)
        return -1;
    close(w->fd);
    while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status)) {
        code = WEXITSTATUS(status);
        snprintf(how, size, "exit status %d", code);
    } else if (WIFSIGNALED(status)) {
        code = 128 + WTERMSIG(status);
        snprintf(how, size, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    } else {
        snprintf(how, size, "ended with wait status %d", status);
    }
    free(w);
    return code;
}
