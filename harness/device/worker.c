#include "device/worker.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/interrupt.h"

struct worker {
    pid_t pid;
    int fd;         /* read end */
    int out;        /* a duplex worker: the parent's end of the child's inbox; -1 otherwise */
    char buf[8192]; /* bytes read but not yet returned */
    size_t len;
};

struct worker_inbox {
    int fd;
    char buf[8192];
    size_t len;
};

/* fork with the message pipe (and, with dfn, the inbox socket pair); fn or dfn runs in the
 * child. */
static worker *start(worker_fn fn, worker_duplex_fn dfn, void *ctx, tune_error *err)
{
    int p[2], q[2] = {-1, -1};
    worker *w = calloc(1, sizeof *w);
    if (!w || pipe(p) != 0) {
        free(w);
        tune_error_set(err, TUNE_ERR_IO, "worker", "cannot create a pipe: %s", strerror(errno));
        return NULL;
    }
    if (dfn && socketpair(AF_UNIX, SOCK_STREAM, 0, q) != 0) {
        close(p[0]);
        close(p[1]);
        free(w);
        tune_error_set(err, TUNE_ERR_IO, "worker", "cannot create a socket pair: %s",
                       strerror(errno));
        return NULL;
    }
    fflush(NULL); /* nothing buffered is written twice */
    pid_t parent = getpid();
    interrupt_enter(); /* a stop (SIGTERM) kills every child: none is forked unseen */
    pid_t pid = fork();
    if (pid > 0)
        interrupt_child_add(pid);
    interrupt_leave();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        if (dfn) {
            close(q[0]);
            close(q[1]);
        }
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
        int status;
        if (dfn) {
            close(q[0]);
            worker_inbox *in = calloc(1, sizeof *in);
            if (!in)
                _exit(1);
            in->fd = q[1];
            status = dfn(ctx, p[1], in);
            free(in);
        } else {
            status = fn(ctx, p[1]);
        }
        fflush(NULL);
        _exit(status);
    }
    close(p[1]);
    if (dfn)
        close(q[1]);
    w->pid = pid;
    w->fd = p[0];
    w->out = dfn ? q[0] : -1;
    return w;
}

worker *worker_start(worker_fn fn, void *ctx, tune_error *err)
{
    return start(fn, NULL, ctx, err);
}

worker *worker_start_duplex(worker_duplex_fn fn, void *ctx, tune_error *err)
{
    return start(NULL, fn, ctx, err);
}

int worker_tell(worker *w, const char *fmt, ...)
{
    if (!w || w->out < 0)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *line = n >= 0 ? malloc((size_t)n + 2) : NULL;
    if (!line)
        return -1;
    va_start(ap, fmt);
    vsnprintf(line, (size_t)n + 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n;
    for (size_t i = 0; i < len; i++)
        if (line[i] == '\n')
            line[i] = ' ';
    line[len++] = '\n';
    int rc = 0;
    for (size_t off = 0; off < len && rc == 0;) {
        ssize_t k = send(w->out, line + off, len - off, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            rc = -1;
        else
            off += (size_t)k;
    }
    free(line);
    return rc;
}

int worker_recv(worker_inbox *in, char *out, size_t size)
{
    for (;;) {
        char *nl = memchr(in->buf, '\n', in->len);
        if (nl || in->len == sizeof in->buf) { /* a line, or an over-long one cut */
            size_t n = nl ? (size_t)(nl - in->buf) : in->len;
            snprintf(out, size, "%.*s", (int)n, in->buf);
            size_t used = nl ? n + 1 : n;
            memmove(in->buf, in->buf + used, in->len - used);
            in->len -= used;
            return 1;
        }
        ssize_t k = read(in->fd, in->buf + in->len, sizeof in->buf - in->len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return 0;
        in->len += (size_t)k;
    }
}

int worker_poll(worker *const *ws, size_t n, double timeout_s)
{
    struct pollfd pfd[64];
    size_t idx[64], m = 0;
    for (size_t i = 0; i < n; i++)
        if (ws[i] && memchr(ws[i]->buf, '\n', ws[i]->len))
            return (int)i; /* a line already read */
    for (size_t i = 0; i < n && m < 64; i++)
        if (ws[i]) {
            pfd[m] = (struct pollfd){ws[i]->fd, POLLIN, 0};
            idx[m++] = i;
        }
    double deadline = clock_now() + timeout_s;
    for (;;) {
        double left = deadline - clock_now();
        int r = poll(pfd, (nfds_t)m, left > 0 ? (int)(left * 1000) + 1 : 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        for (size_t k = 0; k < m; k++)
            if (pfd[k].revents)
                return (int)idx[k];
        return -1;
    }
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
        double left = deadline - clock_now(); /* past it: what is there now, without waiting */
        struct pollfd pfd = {w->fd, POLLIN, 0};
        int r = poll(&pfd, 1, left > 0 ? (int)(left * 1000) + 1 : 0);
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
    if (w->out >= 0)
        close(w->out);
    /* waited for, then no longer the stop's to kill, then reaped: its pid is never reused
     * while a stop could still kill it */
    siginfo_t info;
    while (waitid(P_PID, (id_t)w->pid, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR)
        ;
    interrupt_child_remove(w->pid);
    while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status)) {
        code = WEXITSTATUS(status);
        snprintf(how, size, "exit status %d", code);
    } else if (WIFSIGNALED(status)) {
        code = 128 + WTERMSIG(status);
        snprintf(how, size, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    } else {
        snprintf(how, size, "ended with wait status %d", status);
    }
    free(w);
    return code;
}
