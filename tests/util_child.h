/* util_child.h - runs a write in a child process whose files may not grow past a size limit, as on
 * a full disk (SIGXFSZ ignored, so the write fails with EFBIG instead of killing the child): for
 * the tests of atomic writes and whole-line appends. */
#ifndef TUNE_TESTS_UTIL_CHILD_H
#define TUNE_TESTS_UTIL_CHILD_H

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"

typedef tune_status (*test_child_fn)(void *ctx, tune_error *err);

/* Runs fn(ctx, &err) in a child limited to files of `limit` bytes; its error ("where: message")
 * comes back in msg. Returns the child's exit status: 0 when fn succeeded, 1 when it failed, -1
 * when the child did not exit normally. */
static inline int test_run_size_limited(rlim_t limit, test_child_fn fn, void *ctx, char *msg,
                                        size_t size)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(p[0]);
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {limit, limit};
        setrlimit(RLIMIT_FSIZE, &rl);
        tune_error err = {0};
        tune_status st = fn(ctx, &err);
        char buf[3000];
        int len = snprintf(buf, sizeof buf, "%s: %s", err.where, err.message);
        if (write(p[1], buf, (size_t)len) != len)
            _exit(3);
        _exit(st == TUNE_OK ? 0 : 1);
    }
    close(p[1]);
    ssize_t k = read(p[0], msg, size - 1);
    msg[k > 0 ? k : 0] = '\0';
    close(p[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

#endif
